"""Nodes to Python source (``codegen/nodes.py``): the one place generated code becomes text, when
``model.py`` is written. Parentheses follow Python's precedence, so the text reads as a person would write it."""

from __future__ import annotations

import math
from typing import Any

from .nodes import (
    Attr,
    BinOp,
    BoolOp,
    Call,
    Compare,
    Const,
    Delete,
    Expr,
    Hole,
    IfExp,
    Index,
    List,
    ListComp,
    Name,
    Ref,
    Self,
    Slice,
    Starred,
    Stmt,
    Tuple,
    Unary,
)

# Python's precedence, loosest first: if-else 0, or 1, and 2, not 3, comparisons 4, then the binary operators
_BINARY = {"|": 5, "^": 6, "&": 7, "<<": 8, ">>": 8, "+": 9, "-": 9, "*": 10, "/": 10, "//": 10, "%": 10, "@": 10}
_UNARY, _POWER, _ATOM = 11, 12, 14  # ** binds tighter than unary minus on its left, looser on its right


def render(node: Expr | None) -> str:
    return _render(node)[0] if node is not None else ""


def _atom(node: Expr) -> str:
    text, level = _render(node)
    return text if level >= _ATOM else f"({text})"


def _at(node: Expr, least: int) -> str:
    text, level = _render(node)
    return text if level >= least else f"({text})"


def _render(node: Expr) -> tuple[str, int]:  # noqa: C901 - one case per node kind
    if isinstance(node, (Name, Ref)):
        return (node.id if isinstance(node, Name) else node.path), _ATOM
    if isinstance(node, Self):
        return f"self.{node.path}", _ATOM
    if isinstance(node, Const):
        return _const(node.value)
    if isinstance(node, Hole):
        return f"{{{node.key}}}", _ATOM
    if isinstance(node, Attr):
        return f"{_atom(node.value)}.{node.attr}", _ATOM
    if isinstance(node, Call):
        args = [render(a) for a in node.args] + [f"{k}={render(v)}" for k, v in node.kwargs]
        return f"{_atom(node.func)}({', '.join(args)})", _ATOM
    if isinstance(node, Starred):
        return f"*{_atom(node.value)}", _ATOM
    if isinstance(node, Index):
        index = node.index
        inner = ", ".join(render(i) for i in index.items) if isinstance(index, Tuple) and index.items else render(index)
        return f"{_atom(node.value)}[{inner}]", _ATOM
    if isinstance(node, Slice):
        text = f"{render(node.lower)}:{render(node.upper)}"
        return (f"{text}:{render(node.step)}" if node.step is not None else text), _ATOM
    if isinstance(node, Tuple):
        inner = ", ".join(render(i) for i in node.items)
        return (f"({inner},)" if len(node.items) == 1 else f"({inner})"), _ATOM
    if isinstance(node, List):
        return f"[{', '.join(render(i) for i in node.items)}]", _ATOM
    if isinstance(node, ListComp):
        return f"[{render(node.elt)} for {node.var} in {render(node.iterable)}]", _ATOM
    if isinstance(node, BinOp):
        if node.op == "**":
            return f"{_at(node.left, _POWER + 1)} ** {_at(node.right, _UNARY)}", _POWER
        level = _BINARY[node.op]
        return f"{_at(node.left, level)} {node.op} {_at(node.right, level + 1)}", level
    if isinstance(node, Unary):
        if node.op == "not":
            return f"not {_at(node.operand, 3)}", 3
        return f"{node.op}{_at(node.operand, _UNARY)}", _UNARY
    if isinstance(node, Compare):
        parts = [_at(node.left, 5)] + [f"{op} {_at(c, 5)}" for op, c in zip(node.ops, node.comparators, strict=True)]
        return " ".join(parts), 4
    if isinstance(node, BoolOp):
        level = 1 if node.op == "or" else 2
        return f" {node.op} ".join(_at(v, level + 1) for v in node.values), level
    if isinstance(node, IfExp):
        return f"{_at(node.body, 1)} if {_at(node.test, 1)} else {_at(node.orelse, 0)}", 0
    raise TypeError(f"cannot render {type(node).__name__}")


def _const(value: Any) -> tuple[str, int]:
    if value is Ellipsis:
        return "...", _ATOM
    if isinstance(value, float) and not math.isfinite(value):
        return ("float('nan')" if math.isnan(value) else "float('inf')" if value > 0 else "float('-inf')"), _ATOM
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value < 0:
        return repr(value), _UNARY  # "-1": a unary minus to the parser
    if value is None or isinstance(value, (bool, int, float, str)):
        return repr(value), _ATOM
    raise TypeError(f"not a literal: {type(value).__name__}")


def render_stmt(stmt: Stmt) -> str:
    if isinstance(stmt, Delete):
        return f"del {', '.join(stmt.names)}"
    return f"{', '.join(stmt.targets)} = {render(stmt.value)}"
