"""Render generated model classes to Python source: a value (text), written later by the writer.

The emitter only ever writes: identifiers allocated by a ``Namespace``, literals rendered by
``literal`` (numbers, booleans, None, tuples, and strings via ``repr``), expression templates written by
tf2torch's converters, and helper classes from tf2torch's own source. Nothing from an input file is
pasted in as code.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from .ir import Module
from .lifetimes import free_early, fusible, inplace_safe

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


def module_source(module: Module) -> str:
    if not _CLS.match(module.cls):
        raise ValueError(f"bad module class {module.cls!r}")
    args = [literal(a) for a in module.args]
    for key, value in module.kwargs:
        if not _IDENT.match(key):
            raise ValueError(f"bad keyword {key!r}")
        args.append(f"{key}={literal(value)}")
    return f"{module.cls}({', '.join(args)})"


@dataclass
class ClassDef:
    """One generated ``nn.Module`` class."""

    name: str
    doc: str
    modules: list[tuple[str, str]] = field(default_factory=list)  # (attribute, constructor source)
    inputs: list[str] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)  # forward body, already rendered
    returns: list[str] = field(default_factory=list)
    comments: dict[str, str] = field(default_factory=dict)  # attribute -> comment (rendered with repr)
    guards: list[str] = field(default_factory=list)  # forward's first lines: input checks (model_file)
    block: str = ""  # the Keras name prefixes of the blocks this class converts (codegen/blocks/)
    params: list[str] = field(default_factory=list)  # constructor arguments (a block class's widths, kernels ...)
    stored: list[str] = field(default_factory=list)  # arguments forward reads, kept as attributes

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
            out.append(f"        self.{attr} = {ctor}")
        out += ["", f"    def forward(self, {', '.join(self.inputs)}):"]
        out += [f"        {line}" for line in [*self.guards, *lines]]
        result = returns[0] if len(returns) == 1 else f"({', '.join(returns)})"
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

    def render(self) -> str:
        body = [h.rstrip() + "\n\n" for h in self.helpers] + [c.render() + "\n\n" for c in self.classes]
        body.append(self.footer.rstrip())
        text = "\n".join(body)
        # only the imports the file uses: an unused one (or a noqa for one) is lint noise in users' repos
        stdlib = [f"import {m}" for m in ("json", "math", "struct") if re.search(rf"\b{m}\.", text)]
        if re.search(r"\bPath\(", text):
            stdlib.append("from pathlib import Path")
        third = ["import torch"]
        if re.search(r"\bF\.", text):
            third.append("import torch.nn.functional as F")
        third.append("from torch import nn")
        header = [f'"""{_docstring(self.doc)}"""', ""] + (stdlib + [""] if stdlib else []) + third
        # two blank lines after the imports (PEP 8 / ruff I001 before a class or def)
        return "\n".join([*header, "", "", text]).rstrip() + "\n"


def _docstring(text: str) -> str:
    """Text safe inside a triple-quoted docstring (input-derived text is escaped, never closes it)."""
    return text.replace("\\", "\\\\").replace('"', '\\"')
