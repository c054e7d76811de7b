"""Chained blocks of one kind as one ``nn.Sequential``: ``self.conv4_blocks = nn.Sequential(ConvBlock2(...), ...)``
and one forward line, instead of a line per block.

A chain is consecutive forward lines ``b = self.block_b(a)``, ``c = self.block_c(b)`` … calling instances of one
block class, each reading only the one before's output, which nothing else reads. The state_dict keys of
the chained blocks change (``conv4_block2.conv1.weight`` -> ``conv4_blocks.0.conv1.weight``): ``chain`` returns
the renames, which the caller applies to keys and verify's taps.
"""

from __future__ import annotations

import ast
import os
from typing import TYPE_CHECKING

from ..emit import ClassDef

if TYPE_CHECKING:
    from ...layers.graph import Generated

_MIN_CHAIN = 2


def _block_call(line: str, kinds: set[str], ctors: dict[str, str]) -> tuple[str, str, str] | None:
    """(output, attribute, input) of ``out = self.attr(arg)`` when ``attr`` is an instance of a block kind."""
    stmt = ast.parse(line).body[0]
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
            and isinstance(stmt.value, ast.Call) and len(stmt.value.args) == 1 and not stmt.value.keywords
            and isinstance(stmt.value.args[0], ast.Name)):
        return None
    func = stmt.value.func
    if not (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"):
        return None
    kind = ctors.get(func.attr, "").split("(", 1)[0]
    return (stmt.targets[0].id, func.attr, stmt.value.args[0].id) if kind in kinds else None


def _reads(source: str) -> list[str]:
    return [n.id for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]


def chain(cls: ClassDef, kinds: set[str]) -> dict[str, str]:
    """Rewrite ``cls`` so each chain of blocks is one ``nn.Sequential``; returns {old attribute: new path}."""
    ctors = dict(cls.modules)
    calls = [_block_call(line, kinds, ctors) for line in cls.lines]
    reads: dict[str, int] = {}
    for source in [*cls.lines, *cls.returns]:
        for name in _reads(source):
            reads[name] = reads.get(name, 0) + 1
    chains, i = [], 0
    while i < len(calls):
        j = i + 1
        while j < len(calls) and calls[i] and calls[j] and calls[j - 1] and calls[j][2] == calls[j - 1][0] \
                and reads[calls[j - 1][0]] == 1 and _kind(ctors[calls[j][1]]) == _kind(ctors[calls[i][1]]):
            j += 1
        if calls[i] and j - i >= _MIN_CHAIN:
            chains.append((i, j))
        i = j
    renames: dict[str, str] = {}
    taken = {attr for attr, _ in cls.modules}
    named = []
    for start, stop in chains:  # names in forward order: blocks, blocks2 …
        attrs = [calls[k][1] for k in range(start, stop)]  # type: ignore[index]
        named.append((start, stop, attrs, _name(attrs, taken)))
        taken.add(named[-1][-1])
    for start, stop, attrs, name in reversed(named):  # from the end: earlier line numbers stay valid
        for n, attr in enumerate(attrs):
            renames[attr] = f"{name}.{n}"
        items = ",\n            ".join(ctors[a].replace("\n", "\n    ") for a in attrs)
        first = next(k for k, (attr, _) in enumerate(cls.modules) if attr == attrs[0])
        cls.modules[first] = (name, f"nn.Sequential(\n            {items})")
        cls.modules = [m for m in cls.modules if m[0] not in attrs[1:]]
        out, arg = calls[stop - 1][0], calls[start][2]  # type: ignore[index]
        cls.lines[start:stop] = [f"{out} = self.{name}({arg})"]
    return renames


def _kind(ctor: str) -> str:
    return ctor.split("(", 1)[0]


def _name(attrs: list[str], taken: set[str]) -> str:
    """``conv4_blocks`` for conv4_block2 … conv4_block6, ``block6_blocks`` for block6b … block6d."""
    words = os.path.commonprefix([a.split("_") for a in attrs])  # whole words: block_10 … block_12 -> block
    common = "_".join(words) if words else os.path.commonprefix(attrs).rstrip("_")  # block4b, block4c -> block4
    base = f"{common}s" if common.endswith("block") else f"{common or 'block'}_blocks"
    name, n = base, 2
    while name in taken:
        name, n = f"{base}{n}", n + 1
    return name


def sequential(gen: Generated, kinds: set[str]) -> None:
    """``chain`` in every class that calls blocks, its renames applied to state_dict keys and taps."""
    prefixes = _prefixes(gen.classes)
    renames: dict[str, str] = {}
    for cls in gen.classes:
        if cls.name not in kinds and cls.name in prefixes:
            prefix = prefixes[cls.name]
            renames.update({f"{prefix}{old}.": f"{prefix}{new}." for old, new in chain(cls, kinds).items()})
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
            child = ctor.split("(", 1)[0]
            if child in by_name and child not in prefixes and ctor == f"{child}()":  # a nested model: made once
                prefixes[child] = f"{prefixes[cls.name]}{attr}."
                todo.append(by_name[child])
    return prefixes
