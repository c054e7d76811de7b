"""Render generated model classes to Python source: a value (text), written later by the writer.

A class is held as nodes (``codegen/nodes.py``: module constructors, forward statements, return
values) until ``render``: the passes (``lifetimes``, ``blocks``) work on the nodes, and text is made here,
once. The emitter only ever writes identifiers allocated by a ``Namespace``, literals (numbers, booleans,
None, tuples, and strings via ``repr``), the nodes tf2torch's converters made, and helper classes from
tf2torch's own source. Nothing from an input file is pasted in as code.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from . import nodes as n
from . import visit
from .ir import Module
from .lifetimes import free_early, fusible, inplace_safe
from .render import render, render_stmt

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_CLS = re.compile(r"^(nn\.)?[A-Za-z_][A-Za-z0-9_]*$")


def literal(value: Any) -> str:
    """Python source for a literal value; refuses anything that is not plain data."""
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, int):
        return repr(int(value))
    if isinstance(value, float):
        if math.isnan(value):
            return "float('nan')"
        if math.isinf(value):
            return "float('inf')" if value > 0 else "float('-inf')"
        return repr(float(value))
    if isinstance(value, str):
        return repr(value)
    if isinstance(value, (tuple, list)):
        inner = ", ".join(literal(v) for v in value)
        return f"({inner},)" if len(value) == 1 else f"({inner})"
    raise TypeError(f"not a literal: {type(value).__name__}")


def module_node(module: Module) -> n.Call:
    """The constructor call of a converter's module, its arguments literals (checked: plain data only)."""
    if not _CLS.match(module.cls):
        raise ValueError(f"bad module class {module.cls!r}")
    for key, _ in module.kwargs:
        if not _IDENT.match(key):
            raise ValueError(f"bad keyword {key!r}")
    for value in (*module.args, *(v for _, v in module.kwargs)):
        literal(value)  # refuses anything that is not plain data
    return n.Call(n.Ref(module.cls), tuple(n.lit(a) for a in module.args),
                  tuple((k, n.lit(v)) for k, v in module.kwargs))


_WIDTH = 110  # the project's line length: a longer container or block constructor is wrapped


def _wraps(node: n.Expr) -> bool:
    """Containers of modules (``nn.Sequential(...)``, a Stack's list) and block classes built with keyword
    arguments only (``ConvBlock(conv1_in=32, ...)``) are wrapped; a converter's one module reads best on one line."""
    if isinstance(node, n.List):
        return True
    return isinstance(node, n.Call) and (any(isinstance(a, (n.Call, n.List, n.ListComp, n.Starred)) for a in node.args)
                                         or (not node.args and bool(node.kwargs)))


def wrapped(node: n.Expr, indent: int, used: int = 0) -> str:
    """``node`` rendered, a container or block constructor that does not fit in the line (``used``
    characters of it are taken after the ``indent``) broken over rows under ``indent``."""
    text = render(node)
    if indent + used + len(text) <= _WIDTH or not _wraps(node):
        return text
    if isinstance(node, n.Call) and (node.args or node.kwargs):
        head, items, close = f"{render(node.func)}(", [*node.args, *node.kwargs], ")"
    elif isinstance(node, n.List) and node.items:
        head, items, close = "[", list(node.items), "]"
    else:
        return text
    inner = indent + 4
    rendered = [f"{i[0]}={wrapped(i[1], inner, len(i[0]) + 1)}" if isinstance(i, tuple) else wrapped(i, inner)
                for i in items]
    rows, row = [], ""
    own_rows = all(isinstance(i, n.Call) for i in items)  # modules of a container: one per row
    for item in rendered:
        if row and (own_rows or "\n" in item or inner + len(row) + len(item) > _WIDTH):
            rows.append(row.rstrip())
            row = ""
        row += item + ", "
        if "\n" in item:  # a wrapped item ends its row
            rows.append(row.rstrip())
            row = ""
    if row:
        rows.append(row.rstrip())
    rows[-1] = rows[-1].rstrip(",")
    pad = " " * inner
    return head + "\n" + "\n".join(pad + r for r in rows) + close


@dataclass
class ClassDef:
    """One generated ``nn.Module`` class."""

    name: str
    doc: str
    modules: list[tuple[str, n.Expr]] = field(default_factory=list)  # (attribute, constructor call)
    inputs: list[str] = field(default_factory=list)
    lines: list[n.Stmt] = field(default_factory=list)  # forward body
    returns: list[n.Expr] = field(default_factory=list)
    comments: dict[str, str] = field(default_factory=dict)  # attribute -> comment (rendered with repr)
    guards: list[str] = field(default_factory=list)  # forward's first lines: input checks (model_file's own text)
    block: str = ""  # the Keras name prefixes of the blocks this class converts (codegen/blocks/)
    params: list[str] = field(default_factory=list)  # constructor arguments (a block class's widths, kernels ...)
    stored: list[str] = field(default_factory=list)  # arguments forward reads, kept as attributes

    def globals(self) -> set[str]:
        """The global names (``torch.cat``, ``F.pad``, a helper class) its modules and forward refer to."""
        items = [*(ctor for _, ctor in self.modules), *self.lines, *self.returns]
        return {node.path for item in items for node in visit.walk(item) if isinstance(node, n.Ref)}

    def render(self) -> str:
        out = [f"class {self.name}(nn.Module):", f"    {literal(self.doc)}", "",
               f"    def __init__({', '.join(['self', *self.params])}):", "        super().__init__()"]
        out += [f"        self.{name} = {name}" for name in self.stored]
        lines, returns = free_early(self.lines, self.inputs, self.returns)
        pairs = fusible(lines, dict(self.modules))
        if pairs:  # fuse() folds these BatchNorms into the layer before them (the inference form)
            out[2:2] = ["", f"    FUSIBLE = {literal(tuple(pairs))}"]
        inplace = inplace_safe(lines, dict(self.modules), self.inputs)
        if inplace:  # fuse() runs these activations in place: nothing else reads what they overwrite
            out[2:2] = ["", f"    INPLACE = {literal(tuple(inplace))}"]
        containers: set[str] = set()
        for attr, ctor in self.modules:
            parts = attr.split(".")
            for depth in range(1, len(parts)):  # scopes of a dotted path: plain containers, made once
                scope = ".".join(parts[:depth])
                if scope not in containers:
                    containers.add(scope)
                    out.append(f"        self.{scope} = nn.Module()")
            comment = self.comments.get(attr)
            if comment:
                out.append(f"        # {literal(comment)}")
            out.append(f"        self.{attr} = {wrapped(ctor, 8, len(attr) + 8)}")
        out += ["", f"    def forward(self, {', '.join(self.inputs)}):"]
        out += [f"        {line}" for line in [*self.guards, *(render_stmt(s) for s in lines)]]
        result = render(returns[0] if len(returns) == 1 else n.Tuple(tuple(returns)))
        out.append(f"        return {result}")
        return "\n".join(out)


@dataclass
class GeneratedFile:
    """The whole ``model.py``: header, inlined helpers, classes, and the build/load functions."""

    doc: str
    helpers: list[str]  # helper class sources (tf2torch's own code)
    classes: list[ClassDef]
    main: str  # the top-level class name
    weights_name: str  # default weights file next to model.py
    footer: str  # build_model / load_model source (from codegen.loader)
    uses: frozenset[str] = frozenset()  # the global names the file refers to (the imports are chosen from them)

    def render(self) -> str:
        body = [h.rstrip() + "\n\n" for h in self.helpers] + [c.render() + "\n\n" for c in self.classes]
        body.append(self.footer.rstrip())
        text = "\n".join(body)
        # only the imports the file uses: an unused one (or a noqa for one) is lint noise in users' repos
        stdlib = [f"import {m}" for m in ("json", "math", "struct") if m in self.uses]
        if "Path" in self.uses:
            stdlib.append("from pathlib import Path")
        third = ["import torch"]
        if "F" in self.uses:
            third.append("import torch.nn.functional as F")
        third.append("from torch import nn")
        header = [f'"""{_docstring(self.doc)}"""', ""] + (stdlib + [""] if stdlib else []) + third
        # two blank lines after the imports (PEP 8 / ruff I001 before a class or def)
        return "\n".join([*header, "", "", text]).rstrip() + "\n"


def _docstring(text: str) -> str:
    """Text safe inside a triple-quoted docstring (input-derived text is escaped, never closes it)."""
    return text.replace("\\", "\\\\").replace('"', '\\"')
