"""The expression and statement nodes of a generated ``forward()`` and ``__init__``, and their one renderer.

Converters describe what a layer computes as nodes (``Call(Ref("torch.flatten"), (Hole("x"), Const(1)))``),
the graph walker fills their holes with the values it allocated, the passes (``lifetimes``, ``blocks``)
read and rewrite nodes, and ``render`` turns them into Python source once, when ``model.py`` is written
(as ``torch.fx`` keeps a graph and writes ``PythonCode`` last). No pass ever parses generated text.

Leaves are of four kinds, which is what the passes need to tell apart: ``Name`` (a local of the forward:
renamed and freed by ``lifetimes``), ``Self`` (a module or stored attribute: ``self.conv1``), ``Ref`` (a
global: ``torch.cat``, ``F.pad``, a helper class) and ``Const`` (a literal: the numbers a block kind takes
as constructor arguments). ``Hole`` is a converter's placeholder: ``x`` (the previous op's result), ``m``
(this op's module), ``s`` (a shared module), ``0``, ``1`` … (the layer's inputs).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, fields, replace
from typing import Any


class Expr:
    """Base of the expression nodes (frozen dataclasses, so a node can be shared and compared).

    Converters build nodes with Python's operators, as ``torch.fx`` proxies do: ``X * 0.5 + Y`` is
    ``BinOp("+", BinOp("*", X, Const(0.5)), Y)``; ``X.m("movedim", 1, -1)`` a method call; ``X[:, 0]`` an
    index. (``==`` stays a node comparison: ``compare(X, "==", 0)`` is the generated code's ``==``.)"""

    def m(self, name: str, *args: Any, **kwargs: Any) -> Call:
        """``self.name(*args, **kwargs)`` in the generated code."""
        return method(self, name, *args, **kwargs)

    def __getitem__(self, index: Any) -> Index:
        return Index(self, _index(index))

    def __add__(self, other: Any) -> BinOp:
        return BinOp("+", self, lit(other))

    def __radd__(self, other: Any) -> BinOp:
        return BinOp("+", lit(other), self)

    def __sub__(self, other: Any) -> BinOp:
        return BinOp("-", self, lit(other))

    def __rsub__(self, other: Any) -> BinOp:
        return BinOp("-", lit(other), self)

    def __mul__(self, other: Any) -> BinOp:
        return BinOp("*", self, lit(other))

    def __rmul__(self, other: Any) -> BinOp:
        return BinOp("*", lit(other), self)

    def __truediv__(self, other: Any) -> BinOp:
        return BinOp("/", self, lit(other))

    def __rtruediv__(self, other: Any) -> BinOp:
        return BinOp("/", lit(other), self)

    def __pow__(self, other: Any) -> BinOp:
        return BinOp("**", self, lit(other))

    def __rpow__(self, other: Any) -> BinOp:
        return BinOp("**", lit(other), self)

    def __matmul__(self, other: Any) -> BinOp:
        return BinOp("@", self, lit(other))

    def __neg__(self) -> Unary:
        return Unary("-", self)


@dataclass(frozen=True)
class Name(Expr):
    id: str


@dataclass(frozen=True)
class Self(Expr):
    path: str  # "conv1", "backbone.token_embedding"


@dataclass(frozen=True)
class Ref(Expr):
    path: str  # "torch.cat", "F.pad", "TFSamePad", "float"


@dataclass(frozen=True)
class Const(Expr):
    value: Any  # int, float, bool, None, str, or Ellipsis


@dataclass(frozen=True)
class Hole(Expr):
    key: str  # "x", "m", "s", "0", "1", ...


@dataclass(frozen=True)
class Attr(Expr):
    value: Expr
    attr: str


@dataclass(frozen=True)
class Call(Expr):
    func: Expr
    args: tuple[Expr, ...] = ()
    kwargs: tuple[tuple[str, Expr], ...] = ()


@dataclass(frozen=True)
class Starred(Expr):
    value: Expr


@dataclass(frozen=True)
class BinOp(Expr):
    op: str  # "+", "-", "*", "/", "//", "%", "**", "@", "&", "|", "^", "<<", ">>"
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Unary(Expr):
    op: str  # "-", "+", "~", "not"
    operand: Expr


@dataclass(frozen=True)
class Compare(Expr):
    left: Expr
    ops: tuple[str, ...]  # "==", "!=", "<", "<=", ">", ">=", "is", "is not", "in", "not in"
    comparators: tuple[Expr, ...]


@dataclass(frozen=True)
class BoolOp(Expr):
    op: str  # "and", "or"
    values: tuple[Expr, ...]


@dataclass(frozen=True)
class IfExp(Expr):
    test: Expr
    body: Expr
    orelse: Expr


@dataclass(frozen=True)
class Index(Expr):
    value: Expr
    index: Expr  # a Tuple for x[a, b]


@dataclass(frozen=True)
class Slice(Expr):
    lower: Expr | None = None
    upper: Expr | None = None
    step: Expr | None = None


@dataclass(frozen=True)
class Tuple(Expr):
    items: tuple[Expr, ...]


@dataclass(frozen=True)
class List(Expr):
    items: tuple[Expr, ...]


@dataclass(frozen=True)
class ListComp(Expr):
    """``[elt for var in iterable]``: a Stage's repeated constructor."""

    elt: Expr
    var: str
    iterable: Expr


@dataclass(frozen=True)
class Assign:
    """``a, b = value``: a forward line."""

    targets: tuple[str, ...]
    value: Expr


@dataclass(frozen=True)
class Delete:
    """``del a, b``: ``lifetimes`` frees intermediates so."""

    names: tuple[str, ...]


Stmt = Assign | Delete


# -- building ---------------------------------------------------------------------------------------

def lit(value: Any) -> Expr:
    """A literal as nodes: tuples and lists item by item, so each number is a leaf of its own."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, tuple):
        return Tuple(tuple(lit(v) for v in value))
    if isinstance(value, list):
        return List(tuple(lit(v) for v in value))
    if value is None or value is Ellipsis or isinstance(value, (bool, int, float, str)):
        return Const(value)
    raise TypeError(f"not a literal: {type(value).__name__}")


def _index(index: Any) -> Expr:
    """An index as nodes: Python's ``slice`` objects and ``...`` included (``X[:, 0]``, ``X[..., ::2]``)."""
    if isinstance(index, tuple):
        return Tuple(tuple(_index(i) for i in index))
    if isinstance(index, slice):
        return Slice(*(None if v is None else lit(v) for v in (index.start, index.stop, index.step)))
    return lit(index)


#: the holes of a converter's op: the previous op's result, its module, a shared module, the layer's inputs
X, M, S = Hole("x"), Hole("m"), Hole("s")


def arg(i: int) -> Hole:
    """The layer's ``i``-th input."""
    return Hole(str(i))


def call(func: str | Expr, *args: Any, **kwargs: Any) -> Call:
    """``call("torch.cat", ...)``: a call of a global (or of any node), literal arguments made nodes."""
    return Call(Ref(func) if isinstance(func, str) else func, tuple(lit(a) for a in args),
                tuple((k, lit(v)) for k, v in kwargs.items()))


def method(obj: Expr, name: str, *args: Any, **kwargs: Any) -> Call:
    """``obj.name(*args, **kwargs)``."""
    return call(Attr(obj, name), *args, **kwargs)


def compare(left: Any, op: str, right: Any) -> Compare:
    """``left op right`` (``compare(X, "!=", 0.0)``): Python's ``==`` on nodes compares the nodes themselves."""
    return Compare(lit(left), (op,), (lit(right),))


# -- walking and rewriting --------------------------------------------------------------------------

def children(node: Any) -> Iterator[Any]:
    """The direct sub-nodes of a node, in source order (tuples of kwargs yield their values)."""
    for f in fields(node):
        value = getattr(node, f.name)
        if isinstance(value, (Expr, Assign, Delete)):
            yield value
        elif isinstance(value, tuple):
            for item in value:
                if isinstance(item, Expr):
                    yield item
                elif isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], Expr):
                    yield item[1]


def walk(node: Any) -> Iterator[Any]:
    """The node and every node below it, depth first, in source order."""
    yield node
    for child in children(node):
        yield from walk(child)


def transform(node: Any, fn: Callable[[Any], Any | None]) -> Any:
    """A copy of ``node`` with each sub-node for which ``fn`` returns a node replaced by it (top down:
    a replaced node's own children are not visited)."""
    done = fn(node)
    if done is not None:
        return done
    if not isinstance(node, (Expr, Assign, Delete)):
        return node
    changes = {}
    for f in fields(node):
        value = getattr(node, f.name)
        if isinstance(value, Expr):
            new = transform(value, fn)
        elif isinstance(value, tuple):
            new = tuple(transform(v, fn) if isinstance(v, Expr) else
                        (v[0], transform(v[1], fn)) if isinstance(v, tuple) and len(v) == 2 and isinstance(v[1], Expr)
                        else v for v in value)
        else:
            continue
        if new is not value and new != value:
            changes[f.name] = new
    return replace(node, **changes) if changes else node


def fill(node: Any, holes: dict[str, Expr]) -> Any:
    """A converter's nodes with the holes named in ``holes`` filled (others stay: ``holes()`` finds them)."""
    return transform(node, lambda h: holes.get(h.key) if isinstance(h, Hole) else None)


def rename(node: Any, mapping: dict[str, str]) -> Any:
    """Locals renamed (``Name`` only: attributes, globals and strings are never touched)."""
    if not mapping:
        return node
    if isinstance(node, Assign):
        node = Assign(tuple(mapping.get(t, t) for t in node.targets), node.value)
    elif isinstance(node, Delete):
        return Delete(tuple(mapping.get(t, t) for t in node.names))
    return transform(node, lambda n: Name(mapping[n.id]) if isinstance(n, Name) and n.id in mapping else None)


def reads(node: Any) -> list[str]:
    """The locals a node reads, in order, with repeats (a ``Delete`` reads nothing)."""
    if isinstance(node, Delete):
        return []
    return [n.id for n in walk(node) if isinstance(n, Name)]


def holes(node: Any) -> list[str]:
    return [n.key for n in walk(node) if isinstance(n, Hole)]


def self_call(node: Any) -> str | None:
    """The attribute path of ``self.a.b(...)``, else None."""
    return node.func.path if isinstance(node, Call) and isinstance(node.func, Self) else None


def constructor(node: Expr) -> str:
    """The class a constructor node builds: ``nn.Conv2d`` of ``nn.Conv2d(3, 8, ...)``."""
    return node.func.path if isinstance(node, Call) and isinstance(node.func, Ref) else ""


# -- rendering --------------------------------------------------------------------------------------

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
