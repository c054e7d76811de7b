"""Test-written forward lines as the nodes the code generator's passes work on (``codegen/nodes.py``).

Tests state their cases in Python syntax, which reads best; here a bare name is a local (``Name``), a
dotted ``self.…`` path a module attribute (``Self``) and any other dotted name a global (``Ref``). Only
tests parse text into nodes: converters build nodes directly.
"""

from __future__ import annotations

import ast

from tf2torch.codegen import nodes as n
from tf2torch.codegen.render import render_stmt

_GLOBALS = {"torch", "F", "nn", "math", "float", "int", "range", "len"}
_BIN = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**",
        ast.MatMult: "@"}
_CMP = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}


def expr(text: str) -> n.Expr:
    return _node(ast.parse(text, mode="eval").body)


def _node(t: ast.AST) -> n.Expr:  # noqa: C901 - one case per syntax kind the tests write
    if isinstance(t, ast.Name):
        return n.Ref(t.id) if t.id in _GLOBALS else n.Name(t.id)
    if isinstance(t, ast.Attribute):
        if isinstance(t.value, ast.Name) and t.value.id == "self":
            return n.Self(t.attr)
        base = _node(t.value)
        if isinstance(base, (n.Ref, n.Self)):
            return type(base)(f"{base.path}.{t.attr}")
        return n.Attr(base, t.attr)
    if isinstance(t, ast.Constant):
        return n.Const(t.value)
    if isinstance(t, ast.Call):
        return n.Call(_node(t.func), tuple(_node(a) for a in t.args),
                      tuple((k.arg, _node(k.value)) for k in t.keywords if k.arg is not None))
    if isinstance(t, ast.Starred):
        return n.Starred(_node(t.value))
    if isinstance(t, ast.BinOp):
        return n.BinOp(_BIN[type(t.op)], _node(t.left), _node(t.right))
    if isinstance(t, ast.UnaryOp) and isinstance(t.op, ast.USub):
        return n.Unary("-", _node(t.operand))
    if isinstance(t, ast.Compare):
        return n.Compare(_node(t.left), tuple(_CMP[type(o)] for o in t.ops), tuple(_node(c) for c in t.comparators))
    if isinstance(t, ast.Subscript):
        return n.Index(_node(t.value), _node(t.slice))
    if isinstance(t, ast.Slice):
        return n.Slice(*(_node(x) if x is not None else None for x in (t.lower, t.upper, t.step)))
    if isinstance(t, (ast.Tuple, ast.List)):
        items = tuple(_node(e) for e in t.elts)
        return n.Tuple(items) if isinstance(t, ast.Tuple) else n.List(items)
    raise ValueError(f"test line: {type(t).__name__} is not supported")


def stmt(text: str) -> n.Stmt:
    """``a, b = expr`` or ``del a, b``."""
    if text.startswith("del "):
        return n.Delete(tuple(t.strip() for t in text[4:].split(",")))
    targets, value = text.split(" = ", 1)
    return n.Assign(tuple(t.strip() for t in targets.split(",")), expr(value))


def stmts(lines: list[str]) -> list[n.Stmt]:
    return [stmt(line) for line in lines]


def text(lines: list[n.Stmt]) -> list[str]:
    return [render_stmt(s) for s in lines]
