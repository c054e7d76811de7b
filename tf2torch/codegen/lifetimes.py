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
Names are replaced token by token, so strings and attributes (``self.conv1``) are never touched.
"""

from __future__ import annotations

import ast
import io
import tokenize
from collections import defaultdict


def _names(line: str) -> tuple[list[str], set[str]]:
    """(assigned names, read names) of one ``targets = expr`` statement."""
    tree = ast.parse(line)
    written: list[str] = []
    read: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign):
            for target in stmt.targets:
                written += [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]
            read |= {n.id for n in ast.walk(stmt.value) if isinstance(n, ast.Name)}
        elif isinstance(stmt, ast.Delete):
            continue  # ``del x`` ends a value; it does not read it
        else:
            read |= {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)}
    return written, read


def _rename(line: str, mapping: dict[str, str]) -> str:
    """Replace NAME tokens (not attributes, not strings) by ``mapping``."""
    if not mapping:
        return line
    out, pos, previous = [], 0, ""
    for tok in tokenize.generate_tokens(io.StringIO(line).readline):
        if tok.type == tokenize.NAME and tok.string in mapping and previous != ".":
            start, end = tok.start[1], tok.end[1]
            out += [line[pos:start], mapping[tok.string]]
            pos = end
        if tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.ENDMARKER):
            previous = tok.string
    return "".join(out) + line[pos:]


def free_early(lines: list[str], inputs: list[str], returns: list[str]) -> tuple[list[str], list[str]]:
    """The forward body and return expressions with intermediates released early (see the module doc)."""
    parsed = [_names(line) for line in lines]
    locals_ = {n for written, _ in parsed for n in written}
    uses: dict[str, list[int]] = defaultdict(list)
    for i, (_, read) in enumerate(parsed):
        for name in read & locals_:
            uses[name].append(i)
    returned = {n for r in returns for n in _names(r)[1] & locals_}
    taken = locals_ | set(inputs) | {n for _, read in parsed for n in read}
    chain = next(c for c in ("x", "h", "x_", "h_", "_x") if c not in taken)
    mapping: dict[str, str] = {}
    out: list[str] = []
    for i, line in enumerate(lines):
        written, _ = parsed[i]
        line = _rename(line, mapping)
        if len(written) == 1 and written[0] not in returned and uses[written[0]] == [i + 1] \
                and len(parsed[i + 1][0]) >= 1:
            mapping[written[0]] = chain  # the only reader is the next line: no name of its own
            line = _rename(line, {written[0]: chain})
        else:
            for name in written:  # a later line may reuse a name the chain took: keep its own
                mapping.pop(name, None)
        out.append(line)
        dead = sorted(n for n in parsed[i][1] & locals_
                      if uses[n][-1] == i and n not in returned and mapping.get(n) != chain)
        dead += sorted(n for n in written if not uses[n] and n not in returned)  # an unused output
        if dead:
            out.append(f"del {', '.join(dead)}")
    return out, [_rename(r, mapping) for r in returns]


def fusible(lines: list[str], modules: dict[str, str]) -> list[tuple[str, str]]:
    """(conv-or-linear attribute, BatchNorm attribute) pairs where the BatchNorm's only input is the
    layer's output: ``x = self.conv(...)`` then ``y = self.bn(x)``, with ``x`` read by nothing else
    (it is the chain name of ``free_early``, or used once), or ``self.bn(self.conv(...))`` in one
    expression (a block's converter writes its modules so). Each module must be called once: folding
    a shared conv would change its other calls. ``modules`` maps attributes to their constructor source."""
    parsed = [_names(line) for line in lines]
    pairs: list[tuple[str, str]] = []
    calls = [_module_call(line) for line in lines]
    producer: dict[str, int] = {}  # name -> the line that assigned its current value
    called: dict[str, int] = defaultdict(int)
    for j, line in enumerate(lines):
        nodes = list(ast.walk(ast.parse(line)))
        uses = defaultdict(int)  # reads of each name in this line: ``self.bn(x) + x`` reads x twice
        for node in nodes:
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                uses[node.id] += 1
        for node in nodes:
            outer = _self_call(node)
            if outer is None:
                continue
            called[outer] += 1
            args = node.args if isinstance(node, ast.Call) and not node.keywords else []
            if len(args) != 1:
                continue
            if isinstance(args[0], ast.Name) and args[0].id in producer:  # x = self.conv(...) ... self.bn(x)
                i = producer[args[0].id]
                a = calls[i]
                if a and a[0] == [args[0].id] and _readers(parsed, i, args[0].id) == 1 and uses[args[0].id] == 1:
                    _consider(pairs, a[1], outer, modules)
            inner = _self_call(args[0])
            if inner is not None:  # self.bn(self.conv(...))
                _consider(pairs, inner, outer, modules)
        for name in parsed[j][0]:
            producer[name] = j
    return [(a, b) for a, b in pairs if called[a] == called[b] == 1]


def _self_call(node: ast.AST) -> str | None:
    """The attribute path of ``self.a.b(...)``, else None."""
    if not isinstance(node, ast.Call):
        return None
    func, path = node.func, []
    while isinstance(func, ast.Attribute):
        path.insert(0, func.attr)
        func = func.value
    return ".".join(path) if path and isinstance(func, ast.Name) and func.id == "self" else None


def _consider(pairs: list[tuple[str, str]], layer: str, norm: str, modules: dict[str, str]) -> None:
    """Keep (layer, norm) when the layer is a conv or linear and the norm a BatchNorm."""
    ctor_a, ctor_b = modules.get(layer, ""), modules.get(norm, "")
    if ctor_a.startswith(("nn.Conv1d(", "nn.Conv2d(", "nn.Conv3d(", "nn.Linear(")) \
            and ctor_b.startswith("nn.BatchNorm") and (layer, norm) not in pairs:
        pairs.append((layer, norm))


# Activations with an ``inplace`` switch, and the modules whose output is a tensor of its own (a fused
# BatchNorm becomes an Identity, but its input is then a conv output read by nothing else: fusible()).
_INPLACE = ("nn.ReLU(", "nn.ReLU6(", "nn.SiLU(", "nn.Hardswish(", "nn.Hardsigmoid(", "nn.LeakyReLU(", "nn.ELU(",
            "nn.Hardtanh(", "nn.Mish(")
_FRESH = ("nn.Conv1d(", "nn.Conv2d(", "nn.Conv3d(", "nn.Linear(", "nn.BatchNorm", "nn.LayerNorm(", "nn.GroupNorm(")


def inplace_safe(lines: list[str], modules: dict[str, str], inputs: list[str]) -> list[str]:
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
        if call and modules.get(call[1], "").startswith(_INPLACE) and uses[call[1]] == 1 and len(call[2]) == 1:
            arg = call[2][0]
            source = calls[producer[arg.id]] if isinstance(arg, ast.Name) and arg.id in producer else None
            if source and arg.id not in inputs and modules.get(source[1], "").startswith(_FRESH) \
                    and _readers(parsed, producer[arg.id], arg.id) == 1:
                safe.append(call[1])
        for name in parsed[j][0]:
            producer[name] = j
    return safe


def _module_call(line: str) -> tuple[list[str], str, list[ast.expr]] | None:
    """(assigned names, module attribute, positional args) of ``x = self.attr(...)``, else None."""
    stmt = ast.parse(line).body[0]
    if not isinstance(stmt, ast.Assign) or not isinstance(stmt.value, ast.Call):
        return None
    func, path = stmt.value.func, []
    while isinstance(func, ast.Attribute):
        path.insert(0, func.attr)
        func = func.value
    if not (path and isinstance(func, ast.Name) and func.id == "self"):
        return None
    return [n.id for t in stmt.targets for n in ast.walk(t) if isinstance(n, ast.Name)], ".".join(path), stmt.value.args


def _readers(parsed: list[tuple[list[str], set[str]]], i: int, name: str) -> int:
    """How many lines after ``i`` read the value ``name`` gets there (until it is assigned again)."""
    count = 0
    for written, read in parsed[i + 1:]:
        count += name in read
        if name in written:
            break
    return count
