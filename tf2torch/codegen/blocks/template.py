"""Merge the generated classes of blocks of one kind into one class whose constructor takes what differs.

Two block classes are one kind when their code is the same node for node except for numbers: the same
attributes, module classes, forward lines. A number that differs between instances (a width, a kernel,
a stride, a reshape target) becomes a constructor argument, named after where it first appears
(``dwconv_kernel``); positions that hold the same value in every instance share one argument. Numbers the
forward reads are kept as attributes. The state_dict keys do not change: attribute names are the kind's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .. import nodes as n
from .. import visit
from ..emit import ClassDef
from ..namespace import GENERATED_GLOBALS, MODULE_ATTRIBUTES, Namespace, class_name

# Positional parameter names of the torch modules converters build (keywords name themselves).
_POSITIONAL = {
    **{f"nn.Conv{d}d": ("in", "out", "kernel", "stride", "padding") for d in (1, 2, 3)},
    **{f"nn.ConvTranspose{d}d": ("in", "out", "kernel", "stride", "padding") for d in (1, 2, 3)},
    **{f"nn.BatchNorm{d}d": ("features",) for d in (1, 2, 3)},
    **{f"nn.{kind}Pool{d}d": ("kernel", "stride", "padding") for kind in ("Max", "Avg") for d in (1, 2, 3)},
    **{f"nn.ZeroPad{d}d": ("padding",) for d in (1, 2, 3)},
    **{f"nn.ConstantPad{d}d": ("padding", "value") for d in (1, 2, 3)},
    "nn.Linear": ("in", "out"), "nn.LayerNorm": ("shape",), "nn.GroupNorm": ("groups", "channels"),
    "nn.Dropout": ("p",), "nn.Embedding": ("num", "dim"), "nn.PReLU": ("num",),
}
_ABBREVIATIONS = {"in_channels": "in", "out_channels": "out", "kernel_size": "kernel", "num_features": "features"}


@dataclass
class _Shape:
    """One class's code with its numbers taken out: ``skeleton`` is equal for blocks of one kind."""

    skeleton: tuple
    numbers: list[str]  # each number's literal (1 and 1.0 differ): module constructors first, then forward, returns
    values: list[int | float]
    where: list[tuple[int, int, int]]  # (part, item, k): the k-th number of that item


_NUMBER = n.Hole("#")  # a number in a skeleton (no converter makes a hole of that name)


def _is_number(node: Any) -> bool:
    return isinstance(node, n.Const) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool)


def _shape(cls: ClassDef) -> _Shape:
    parts = ([ctor for _, ctor in cls.modules], cls.lines, cls.returns)
    skeleton: list = [tuple(attr for attr, _ in cls.modules), tuple(cls.inputs),
                      tuple(sorted(cls.comments.items()))]
    numbers, values, where = [], [], []
    for p, items in enumerate(parts):
        for i, item in enumerate(items):
            skeleton.append(visit.transform(item, lambda node: _NUMBER if _is_number(node) else None))
            for k, node in enumerate(x for x in visit.walk(item) if _is_number(x)):
                numbers.append(repr(node.value))
                values.append(node.value)
                where.append((p, i, k))
    return _Shape(tuple(skeleton), numbers, values, where)


def _arg_names(ctor: n.Expr) -> list[str]:
    """For each number of a module constructor, the argument it is in (``stride`` for ``stride=(2, 2)``)."""
    if not isinstance(ctor, n.Call):
        return []
    positional = _POSITIONAL.get(visit.constructor(ctor), ())
    owners = [(positional[i] if i < len(positional) else f"arg{i}", a) for i, a in enumerate(ctor.args)]
    owners += [(_ABBREVIATIONS.get(k, k), v) for k, v in ctor.kwargs]
    return [name for name, node in owners for x in visit.walk(node) if _is_number(x)]


def _replace(item: Any, holes: dict[int, n.Expr]) -> Any:
    """``item`` with its ``k``-th number (counted in source order) replaced by ``holes[k]``."""
    count = iter(range(1 << 30))

    def fn(node: Any) -> n.Expr | None:
        if _is_number(node):
            k = next(count)
            return holes.get(k, node)
        return None
    return visit.transform(item, fn) if holes else item


def _kind_name(prefixes: list[str]) -> str:
    """``Block`` from ``block2a``, ``block3b`` ...; ``ConvBlock`` from ``conv2_block1`` ...: the instances'
    names with their numbering dropped."""
    words = [w for w in (re.sub(r"\d+[a-z]?$|\d+", "", w) for w in prefixes[0].split("_")) if w]
    name = class_name("_".join(words) or "block")
    return name if "Block" in name else f"{name}Block"  # ConvBlock, BlockSe, StageBlock


def merge(classes: list[ClassDef], helpers: set[str]) -> tuple[list[ClassDef], list[str]]:
    """``classes`` with each kind of block (two or more instances) as one class, its parents' constructor
    calls rewritten; and the prefixes of blocks whose kind has one instance (better left flat). ``helpers``:
    the inlined helper classes' names (a kind is never named like one)."""
    shapes = {id(c): _shape(c) for c in classes if c.block}
    kinds: dict[tuple, list[ClassDef]] = {}
    for c in classes:
        if c.block:
            kinds.setdefault(shapes[id(c)].skeleton, []).append(c)
    lonely = [group[0].block for group in kinds.values() if len(group) == 1]
    # the instances' own classes go: their names are free again (block_2's class "Block2" …)
    taken = {c.name for c in classes if not c.block} | set(GENERATED_GLOBALS) | helpers
    calls: dict[str, n.Call] = {}  # instance class name -> constructor call of its kind
    merged: dict[str, ClassDef] = {}  # first instance's name -> the kind's class
    for group in kinds.values():
        if len(group) < 2:
            continue
        template, args = _template(group, [shapes[id(c)] for c in group], taken)
        merged[group[0].name] = template
        for c, values in zip(group, args, strict=True):
            calls[c.name] = _call(template.name, values)
    out = []
    for c in classes:
        if c.name in merged:
            out.append(merged[c.name])
        elif c.name not in calls:
            c.modules = [(attr, calls.get(visit.constructor(ctor), ctor) if ctor == n.Call(n.Ref(visit.constructor(ctor)))
                          else ctor) for attr, ctor in c.modules]
            out.append(c)
    return out, lonely


def _template(group: list[ClassDef], shapes: list[_Shape], taken: set[str]) -> tuple[ClassDef, list[list]]:
    first = group[0]
    varying = [k for k in range(len(shapes[0].numbers)) if len({s.numbers[k] for s in shapes}) > 1]
    params = Namespace(MODULE_ATTRIBUTES | {attr for attr, _ in first.modules})  # stored ones are attributes
    by_vector: dict[tuple[str, ...], str] = {}
    first_at: dict[tuple[str, ...], int] = {}  # vector -> the index of its first number
    hole: dict[int, str] = {}  # number index -> argument name
    arg_names = [_arg_names(ctor) for _, ctor in first.modules]
    ordered: list[str] = []
    for k in varying:
        vector = tuple(s.numbers[k] for s in shapes)
        if vector not in by_vector:
            part, item, _ = shapes[0].where[k]
            if part == 0:
                index = sum(1 for p, i, _ in shapes[0].where[:k] if (p, i) == (0, item))
                owner = arg_names[item][index] if index < len(arg_names[item]) else "value"
                base = f"{first.modules[item][0]}_{owner}".replace(".", "_")
            else:
                base = "value"
            by_vector[vector] = params.create(base, "value")
            first_at[vector] = k
            ordered.append(vector)  # type: ignore[arg-type]
        hole[k] = by_vector[vector]
    stored: list[str] = []
    per_item: dict[tuple[int, int], dict[int, n.Expr]] = {}
    for k, name in hole.items():
        part, item, _ = shapes[0].where[k]
        index = sum(1 for p, i, _ in shapes[0].where[:k] if (p, i) == (part, item))
        per_item.setdefault((part, item), {})[index] = n.Name(name) if part == 0 else n.Self(name)
        if part and name not in stored:
            stored.append(name)
    modules = [(attr, _replace(ctor, per_item.get((0, i), {}))) for i, (attr, ctor) in enumerate(first.modules)]
    lines = [_replace(line, per_item.get((1, i), {})) for i, line in enumerate(first.lines)]
    returns = [_replace(r, per_item.get((2, i), {})) for i, r in enumerate(first.returns)]
    listed = ", ".join(f"{c.block}_*" for c in group)
    base, count = _kind_name([c.block for c in group]), 1
    while (base if count == 1 else f"{base}{count}") in taken:  # a second kind of one family: ConvBlock2
        count += 1
    name = base if count == 1 else f"{base}{count}"
    taken.add(name)
    cls = ClassDef(name=name,
                   doc=f"Keras layers {listed} (one block each), converted by tf2torch.",
                   modules=modules, inputs=list(first.inputs), lines=lines, returns=returns,
                   comments=dict(first.comments), block=", ".join(c.block for c in group), params=[by_vector[v] for v in ordered],
                   stored=[p for p in (by_vector[v] for v in ordered) if p in stored])
    values = [[(by_vector[v], shape.values[first_at[v]]) for v in ordered] for shape in shapes]
    return cls, values


def _call(name: str, values: list[tuple[str, int | float]]) -> n.Call:
    """``Kind(a=1, b=2)`` (the emitter wraps it when long)."""
    return n.Call(n.Ref(name), (), tuple((k, n.Const(v)) for k, v in values))
