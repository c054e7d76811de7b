"""Free a generated ``forward()``'s intermediates as soon as their last use is past.

One local per Keras layer reads well but keeps every activation alive until ``forward`` returns: a
batch-8 MobileNetV2 call held 141-370 MiB at return against a largest activation of 7-12 MiB, and
the allocator's page faults made its latency vary 3x between processes. Two rewrites fix it while the
code still reads like the Keras graph:

* a value used once, by the very next line, flows through one chain name (``x = self.bn1(x)``), so
  rebinding the name drops the previous activation;
* any other local (a branch point: a ResNet shortcut, an Inception input) is ``del``-ed right after
  the line that reads it last.

Inputs are the caller's tensors (deleting the local would free nothing) and returned values live on.
The forward is nodes (``codegen/nodes.py``): only ``Name`` nodes are locals, so strings, attributes
(``self.conv1``) and globals are never renamed.
"""

from __future__ import annotations

from collections import defaultdict

from . import nodes as n
from . import visit


def _names(stmt: n.Stmt | n.Expr) -> tuple[list[str], set[str]]:
    """(assigned names, read names) of one statement (a return value assigns nothing)."""
    if isinstance(stmt, n.Assign):
        return list(stmt.targets), set(visit.reads(stmt.value))
    return [], set(visit.reads(stmt))  # ``del x`` ends a value; it does not read it


def free_early(lines: list[n.Stmt], inputs: list[str], returns: list[n.Expr]) -> tuple[list[n.Stmt], list[n.Expr]]:
    """The forward body and return values with intermediates released early (see the module doc)."""
    parsed = [_names(line) for line in lines]
    locals_ = {name for written, _ in parsed for name in written}
    uses: dict[str, list[int]] = defaultdict(list)
    for i, (_, read) in enumerate(parsed):
        for name in read & locals_:
            uses[name].append(i)
    returned = {name for r in returns for name in _names(r)[1] & locals_}
    taken = locals_ | set(inputs) | {name for _, read in parsed for name in read}
    chain = next(c for c in ("x", "h", "x_", "h_", "_x") if c not in taken)
    mapping: dict[str, str] = {}
    out: list[n.Stmt] = []
    for i, line in enumerate(lines):
        written, _ = parsed[i]
        line = visit.rename(line, mapping)
        if len(written) == 1 and written[0] not in returned and uses[written[0]] == [i + 1] \
                and len(parsed[i + 1][0]) >= 1:
            mapping[written[0]] = chain  # the only reader is the next line: no name of its own
            line = visit.rename(line, {written[0]: chain})
        else:
            for name in written:  # a later line may reuse a name the chain took: keep its own
                mapping.pop(name, None)
        out.append(line)
        dead = sorted(name for name in parsed[i][1] & locals_
                      if uses[name][-1] == i and name not in returned and mapping.get(name) != chain)
        dead += sorted(name for name in written if not uses[name] and name not in returned)  # an unused output
        if dead:
            out.append(n.Delete(tuple(dead)))
    return out, [visit.rename(r, mapping) for r in returns]


# Constructors whose output fusion may fold a following BatchNorm into, and the BatchNorms
_FOLDS_INTO = ("nn.Conv1d", "nn.Conv2d", "nn.Conv3d", "nn.Linear")
_NORMS = ("nn.BatchNorm1d", "nn.BatchNorm2d", "nn.BatchNorm3d")


def fusible(lines: list[n.Stmt], modules: dict[str, n.Expr]) -> list[tuple[str, str]]:
    """(conv-or-linear attribute, BatchNorm attribute) pairs where the BatchNorm's only input is the
    layer's output: ``x = self.conv(...)`` then ``y = self.bn(x)``, with ``x`` read by nothing else
    (it is the chain name of ``free_early``, or used once), or ``self.bn(self.conv(...))`` in one
    expression (a block's converter writes its modules so). Each module must be called once: folding
    a shared conv would change its other calls. ``modules`` maps attributes to their constructors."""
    parsed = [_names(line) for line in lines]
    pairs: list[tuple[str, str]] = []
    calls = [_module_call(line) for line in lines]
    producer: dict[str, int] = {}  # name -> the line that assigned its current value
    called: dict[str, int] = defaultdict(int)
    for j, line in enumerate(lines):
        uses: dict[str, int] = defaultdict(int)  # reads of each name in this line: ``self.bn(x) + x`` reads x twice
        for name in visit.reads(line):
            uses[name] += 1
        for node in visit.walk(line):
            outer = visit.self_call(node)
            if outer is None:
                continue
            called[outer] += 1
            args = node.args if not node.kwargs else ()
            if len(args) != 1:
                continue
            if isinstance(args[0], n.Name) and args[0].id in producer:  # x = self.conv(...) ... self.bn(x)
                i = producer[args[0].id]
                a = calls[i]
                if a and a[0] == [args[0].id] and _readers(parsed, i, args[0].id) == 1 and uses[args[0].id] == 1:
                    _consider(pairs, a[1], outer, modules)
            inner = visit.self_call(args[0])
            if inner is not None:  # self.bn(self.conv(...))
                _consider(pairs, inner, outer, modules)
        for name in parsed[j][0]:
            producer[name] = j
    return [(a, b) for a, b in pairs if called[a] == called[b] == 1]


def _consider(pairs: list[tuple[str, str]], layer: str, norm: str, modules: dict[str, n.Expr]) -> None:
    """Keep (layer, norm) when the layer is a conv or linear and the norm a BatchNorm."""
    if layer in modules and norm in modules and visit.constructor(modules[layer]) in _FOLDS_INTO \
            and visit.constructor(modules[norm]) in _NORMS and (layer, norm) not in pairs:
        pairs.append((layer, norm))


# Activations with an ``inplace`` switch, and the modules whose output is a tensor of its own (a fused
# BatchNorm becomes an Identity, but its input is then a conv output read by nothing else: fusible()).
_INPLACE = ("nn.ReLU", "nn.ReLU6", "nn.SiLU", "nn.Hardswish", "nn.Hardsigmoid", "nn.LeakyReLU", "nn.ELU",
            "nn.Hardtanh", "nn.Mish")
_FRESH = (*_FOLDS_INTO, *_NORMS, "nn.LayerNorm", "nn.GroupNorm")


def inplace_safe(lines: list[n.Stmt], modules: dict[str, n.Expr], inputs: list[str]) -> list[str]:
    """Activation attributes the inference form may run in place: each is called once, on a value that a
    conv / linear / norm module just produced and that nothing else reads, so overwriting it changes
    nothing another line sees."""
    parsed = [_names(line) for line in lines]
    calls = [_module_call(line) for line in lines]
    uses: dict[str, int] = {}
    for call in calls:
        if call:
            uses[call[1]] = uses.get(call[1], 0) + 1
    producer: dict[str, int] = {}
    safe = []
    for j, call in enumerate(calls):
        if call and call[1] in modules and visit.constructor(modules[call[1]]) in _INPLACE and uses[call[1]] == 1 \
                and len(call[2]) == 1:
            arg = call[2][0]
            source = calls[producer[arg.id]] if isinstance(arg, n.Name) and arg.id in producer else None
            if source and isinstance(arg, n.Name) and arg.id not in inputs and source[1] in modules \
                    and visit.constructor(modules[source[1]]) in _FRESH and _readers(parsed, producer[arg.id], arg.id) == 1:
                safe.append(call[1])
        for name in parsed[j][0]:
            producer[name] = j
    return safe


def _module_call(line: n.Stmt) -> tuple[list[str], str, tuple[n.Expr, ...]] | None:
    """(assigned names, module attribute, positional args) of ``x = self.attr(...)``, else None."""
    if not isinstance(line, n.Assign):
        return None
    attr = visit.self_call(line.value)
    if attr is None:
        return None
    return list(line.targets), attr, line.value.args  # type: ignore[attr-defined]


def _readers(parsed: list[tuple[list[str], set[str]]], i: int, name: str) -> int:
    """How many lines after ``i`` read the value ``name`` gets there (until it is assigned again)."""
    count = 0
    for written, read in parsed[i + 1:]:
        count += name in read
        if name in written:
            break
    return count
