"""A converter's expression template as nodes: ``"torch.flatten({x}, 1)"`` -> ``Call(Ref("torch.flatten"), ...)``.

Converters may write what a layer computes as a short template in Python's own syntax, with holes
``{x}`` (the previous op's result), ``{m}`` (this op's module), ``{s}`` (a shared module) and ``{0}``,
``{1}`` … (the layer's inputs); numbers, strings and tuples in it are literals the converter rendered
from the layer's config (``literal``/``repr``, never text from the input file). The template is turned
into nodes once, when the ``Op`` is made; everything after (the walker, the passes, the renderer) works
on the nodes. A name in a template is a global (``torch``, ``F``, a helper class): a converter never
names a local of the generated forward.
"""

from __future__ import annotations

import ast
import re
from functools import lru_cache

from . import nodes as n

_HOLE = re.compile(r"\{(x|m|s|\d+)\}")
_MARK = "__tf2torch_hole_"  # a hole while Python parses the template (no converter writes such a name)
_BIN = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**",
        ast.MatMult: "@", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.LShift: "<<", ast.RShift: ">>"}
_UN = {ast.USub: "-", ast.UAdd: "+", ast.Invert: "~", ast.Not: "not"}
_CMP = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Is: "is",
        ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in"}


@lru_cache(maxsize=4096)
def parse(template: str) -> n.Expr:
    """The nodes of one template (cached: converters make the same few templates for every layer)."""
    marked = _HOLE.sub(lambda m: f"{_MARK}{m.group(1)}", template)
    try:
        tree = ast.parse(marked, mode="eval").body
    except SyntaxError as e:  # a converter bug, not an input error
        raise ValueError(f"bad expression template {template!r}: {e.msg}") from None
    return _node(tree, template)


def _node(t: ast.AST, template: str) -> n.Expr:  # noqa: C901 - one case per syntax kind
    def sub(x: ast.AST) -> n.Expr:
        return _node(x, template)

    if isinstance(t, ast.Name):
        if t.id.startswith(_MARK):
            return n.Hole(t.id[len(_MARK):])
        return n.Ref(t.id)
    if isinstance(t, ast.Attribute):
        base = sub(t.value)
        return n.Ref(f"{base.path}.{t.attr}") if isinstance(base, n.Ref) else n.Attr(base, t.attr)
    if isinstance(t, ast.Constant):
        return n.Const(t.value)
    if isinstance(t, ast.Call):
        if any(k.arg is None for k in t.keywords):
            raise ValueError(f"expression template {template!r}: **keywords are not supported in templates")
        return n.Call(sub(t.func), tuple(sub(a) for a in t.args),
                      tuple((k.arg, sub(k.value)) for k in t.keywords if k.arg is not None))
    if isinstance(t, ast.Starred):
        return n.Starred(sub(t.value))
    if isinstance(t, ast.BinOp):
        return n.BinOp(_BIN[type(t.op)], sub(t.left), sub(t.right))
    if isinstance(t, ast.UnaryOp):
        return n.Unary(_UN[type(t.op)], sub(t.operand))
    if isinstance(t, ast.Compare):
        return n.Compare(sub(t.left), tuple(_CMP[type(o)] for o in t.ops), tuple(sub(c) for c in t.comparators))
    if isinstance(t, ast.BoolOp):
        return n.BoolOp("and" if isinstance(t.op, ast.And) else "or", tuple(sub(v) for v in t.values))
    if isinstance(t, ast.IfExp):
        return n.IfExp(sub(t.test), sub(t.body), sub(t.orelse))
    if isinstance(t, ast.Subscript):
        return n.Index(sub(t.value), sub(t.slice))
    if isinstance(t, ast.Slice):
        return n.Slice(*(sub(x) if x is not None else None for x in (t.lower, t.upper, t.step)))
    if isinstance(t, ast.Tuple):
        return n.Tuple(tuple(sub(e) for e in t.elts))
    if isinstance(t, ast.List):
        return n.List(tuple(sub(e) for e in t.elts))
    raise ValueError(f"expression template {template!r}: {type(t).__name__} is not supported in templates")
