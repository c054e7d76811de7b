"""Test-written forward lines as the nodes the code generator's passes work on (``codegen/nodes.py``).

Tests state their cases in Python syntax, which reads best; here a bare name is a local (``Name``), a
dotted ``self.…`` path a module attribute (``Self``) and any other dotted name a global (``Ref``).
"""

from __future__ import annotations

from tf2torch.codegen import nodes as n
from tf2torch.codegen.templates import parse

_GLOBALS = {"torch", "F", "nn", "math", "float", "int", "range", "len"}


def expr(text: str) -> n.Expr:
    def fn(node: object) -> n.Expr | None:
        if isinstance(node, n.Ref):
            if node.path.startswith("self."):
                return n.Self(node.path[len("self."):])
            if "." not in node.path and node.path not in _GLOBALS:
                return n.Name(node.path)
        return None
    return n.transform(parse(text), fn)


def stmt(text: str) -> n.Stmt:
    """``a, b = expr`` or ``del a, b``."""
    if text.startswith("del "):
        return n.Delete(tuple(t.strip() for t in text[4:].split(",")))
    targets, value = text.split(" = ", 1)
    return n.Assign(tuple(t.strip() for t in targets.split(",")), expr(value))


def stmts(lines: list[str]) -> list[n.Stmt]:
    return [stmt(line) for line in lines]


def text(lines: list[n.Stmt]) -> list[str]:
    return [n.render_stmt(s) for s in lines]
