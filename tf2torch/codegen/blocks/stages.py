"""Chained blocks of one class as one container: ``self.conv4_blocks = nn.Sequential(ConvBlock2(...), ...)``
and one forward line, instead of a line per block; blocks that take more than the chained tensor (keras-hub's
``transformer_layer_3(x, padding_mask=padding_mask)``) go in a ``…Stack``, an ``nn.ModuleList`` whose
forward hands every block those arguments.

A chain is consecutive forward lines ``b = self.block_b(a, …)``, ``c = self.block_c(b, …)`` … calling modules of
one generated or helper class with the same other arguments, each reading only the one before's output,
which nothing else reads, and each module called nowhere else. The state_dict keys of the chained blocks
change (``conv4_block2.conv1.weight`` -> ``conv4_blocks.0.conv1.weight``): ``chain`` returns the renames,
which the caller applies to keys and verify's taps.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import nodes as n
from .. import visit
from ..emit import ClassDef, literal
from ..namespace import Namespace

if TYPE_CHECKING:
    from ..generated import Generated

_MIN_CHAIN = 2
_PLURAL = ("block", "layer", "unit", "cell", "stage")  # conv4_block2 … -> conv4_blocks


@dataclass(frozen=True)
class _Call:
    """``out = self.attr(arg, *extra, **keywords)``: the forward line of one module call."""

    out: str
    attr: str
    arg: str
    extra: tuple[str, ...] = ()  # other positional arguments (local names)
    keywords: tuple[tuple[str, str], ...] = ()  # (keyword, local name)


def _module_call(line: n.Stmt, ctors: dict[str, n.Expr]) -> _Call | None:
    if not (isinstance(line, n.Assign) and len(line.targets) == 1 and isinstance(line.value, n.Call)
            and isinstance(line.value.func, n.Self) and "." not in line.value.func.path
            and line.value.args and isinstance(line.value.args[0], n.Name)):
        return None
    call, attr = line.value, line.value.func.path
    if visit.constructor(ctors.get(attr, n.Const(None))).startswith("nn.") or attr not in ctors \
            or not all(isinstance(a, n.Name) for a in call.args) or not all(isinstance(v, n.Name) for _, v in call.kwargs):
        return None  # torch's own modules stay as they are; chained modules take plain names
    names = [a.id for a in call.args]  # type: ignore[attr-defined]
    return _Call(line.targets[0], attr, names[0], tuple(names[1:]), tuple((k, v.id) for k, v in call.kwargs))  # type: ignore[attr-defined]


@dataclass
class StackDef(ClassDef):
    """A generated ``nn.ModuleList`` whose forward applies its modules in turn, each with the same other
    arguments."""

    others: tuple[str, ...] = ()  # forward's arguments after the chained tensor
    call: str = ""  # one module's call in the loop

    def render(self) -> str:
        return "\n".join([f"class {self.name}(nn.ModuleList):", f"    {literal(self.doc)}", "",
                          f"    def forward({', '.join(['self', 'x', *self.others])}):",
                          "        for layer in self:", f"            x = {self.call}", "        return x"])


def chain(cls: ClassDef, once: set[str], stacks: dict[tuple, StackDef], taken_classes: set[str]) -> dict[str, str]:
    """Rewrite ``cls`` so each chain of blocks is one container; returns {old attribute: new path}.
    ``once``: the attributes no other line of any class names; ``stacks``: the Stack classes made so far."""
    ctors = dict(cls.modules)
    calls = [_module_call(line, ctors) if _calls_once(line, once) else None for line in cls.lines]
    reads: dict[str, int] = {}
    for source in [*cls.lines, *cls.returns]:
        for name in visit.reads(source):
            reads[name] = reads.get(name, 0) + 1
    chains, i = [], 0
    while i < len(calls):
        j = i + 1
        first = calls[i]
        while first and j < len(calls) and (c := calls[j]) is not None and (prev := calls[j - 1]) is not None \
                and c.arg == prev.out and reads[prev.out] == 1 and (c.extra, c.keywords) == (first.extra, first.keywords) \
                and _kind(ctors[c.attr]) == _kind(ctors[first.attr]):
            j += 1
        if first and j - i >= _MIN_CHAIN:
            chains.append((i, j))
        i = j
    renames: dict[str, str] = {}
    taken = {attr for attr, _ in cls.modules}
    named = []
    for start, stop in chains:  # names in forward order: blocks, blocks2 …
        attrs = [calls[k].attr for k in range(start, stop)]  # type: ignore[union-attr]
        named.append((start, stop, attrs, _name(attrs, taken)))
        taken.add(named[-1][-1])
    for start, stop, attrs, name in reversed(named):  # from the end: earlier line numbers stay valid
        for k, attr in enumerate(attrs):
            renames[attr] = f"{name}.{k}"
        first, last = calls[start], calls[stop - 1]
        assert first is not None and last is not None
        same = len({ctors[a] for a in attrs}) == 1
        items: tuple[n.Expr, ...] = (n.ListComp(ctors[attrs[0]], "_", n.call("range", len(attrs))),) if same \
            else tuple(ctors[a] for a in attrs)
        if first.extra or first.keywords:
            stack = _stack(_kind(ctors[first.attr]), first, stacks, taken_classes)
            ctor: n.Expr = n.Call(n.Ref(stack.name), items if same else (n.List(items),))
            args = [first.arg, *first.extra, *(v for _, v in first.keywords)]
        else:
            ctor = n.Call(n.Ref("nn.Sequential"), (n.Starred(items[0]),) if same else items)
            args = [first.arg]
        position = next(k for k, (attr, _) in enumerate(cls.modules) if attr == attrs[0])
        cls.modules[position] = (name, ctor)
        cls.modules = [m for m in cls.modules if m[0] not in attrs[1:]]
        cls.lines[start:stop] = [n.Assign((last.out,), n.Call(n.Self(name), tuple(n.Name(a) for a in args)))]
    return renames


def _calls_once(line: n.Stmt, once: set[str]) -> bool:
    """The line calls a module that no other line names."""
    return isinstance(line, n.Assign) and visit.self_call(line.value) in once


def _stack(kind: str, call: _Call, stacks: dict[tuple, StackDef], taken: set[str]) -> StackDef:
    """The Stack class for blocks of ``kind`` called with ``call``'s other arguments (one per signature)."""
    key = (kind, len(call.extra), tuple(k for k, _ in call.keywords))
    if key not in stacks:
        names = Namespace({"x", "layer"})
        extra = [names.create(v, "arg") for v in call.extra]
        keywords = [(k, names.create(k, "arg")) for k, _ in call.keywords]
        base, count = f"{kind}Stack", 2
        name = base
        while name in taken:
            name, count = f"{base}{count}", count + 1
        taken.add(name)
        stacks[key] = StackDef(name=name, doc=f"{kind} modules applied in turn, each to the one before's output.",
                               others=(*extra, *(p for _, p in keywords)),
                               call=f"layer({', '.join(['x', *extra, *(f'{k}={p}' for k, p in keywords)])})")
    return stacks[key]


def _kind(ctor: n.Expr) -> str:
    return visit.constructor(ctor)


def _name(attrs: list[str], taken: set[str]) -> str:
    """``conv4_blocks`` for conv4_block2 … conv4_block6, ``block6_blocks`` for block6b … block6d,
    ``transformer_layers`` for transformer_layer_0 …"""
    words = os.path.commonprefix([a.split("_") for a in attrs])  # whole words: block_10 … block_12 -> block
    common = "_".join(words) if words else os.path.commonprefix(attrs).rstrip("_")  # block4b, block4c -> block4
    base = f"{common}s" if common.split("_")[-1] in _PLURAL else f"{common or 'block'}_blocks"
    name, count = base, 2
    while name in taken:
        name, count = f"{base}{count}", count + 1
    return name


def sequential(gen: Generated, kinds: set[str]) -> None:
    """``chain`` in every class but the block kinds, its renames applied to state_dict keys and taps."""
    prefixes = _prefixes(gen.classes)
    named = [part for c in gen.classes for line in [*c.lines, *c.returns] for node in visit.walk(line)
             for part in (node.path.split(".") if isinstance(node, n.Self) else [node.attr] if isinstance(node, n.Attr)
                          else [])]
    once = {a for a in set(named) if named.count(a) == 1}  # a module another line reaches is left in place
    stacks: dict[tuple, StackDef] = {}
    taken = {c.name for c in gen.classes} | set(gen.helpers)
    renames: dict[str, str] = {}
    for cls in list(gen.classes):
        if cls.name not in kinds and cls.name in prefixes:
            prefix = prefixes[cls.name]
            moved = chain(cls, once, stacks, taken)
            renames.update({f"{prefix}{old}.": f"{prefix}{new}." for old, new in moved.items()})
    gen.classes[-1:-1] = list(stacks.values())  # before the model (any order would do: built at call time)
    if not renames:
        return
    gen.params = [(_renamed(key, renames), p) for key, p in gen.params]
    gen.taps = {layer: _renamed(path + ".", renames)[:-1] for layer, path in gen.taps.items()}


def _renamed(key: str, renames: dict[str, str]) -> str:
    for old, new in renames.items():
        if key.startswith(old):
            return new + key[len(old):]
    return key


def _prefixes(classes: list[ClassDef]) -> dict[str, str]:
    """Each generated class's module path from the model (``""`` for the model, ``backbone.`` ...)."""
    by_name = {c.name: c for c in classes}
    prefixes = {classes[-1].name: ""}
    todo = [classes[-1]]
    while todo:
        cls = todo.pop()
        for attr, ctor in cls.modules:
            child = visit.constructor(ctor)
            if child in by_name and child not in prefixes and ctor == n.Call(n.Ref(child)):  # a nested model: made once
                prefixes[child] = f"{prefixes[cls.name]}{attr}."
                todo.append(by_name[child])
    return prefixes
