"""The expression and statement nodes of a generated ``forward()`` and ``__init__``, and their one renderer.

Converters describe what a layer computes as nodes (``Call(Ref("torch.flatten"), (Hole("x"), Const(1)))``),
the graph walker fills their holes with the values it allocated, the passes (``lifetimes``, ``blocks``)
read and rewrite nodes, and ``render.render`` turns them into Python source once, when ``model.py`` is written
(as ``torch.fx`` keeps a graph and writes ``PythonCode`` last). No pass ever parses generated text.

Leaves are of four kinds, which is what the passes need to tell apart: ``Name`` (a local of the forward:
renamed and freed by ``lifetimes``), ``Self`` (a module or stored attribute: ``self.conv1``), ``Ref`` (a
global: ``torch.cat``, ``F.pad``, a helper class) and ``Const`` (a literal: the numbers a block kind takes
as constructor arguments). ``Hole`` is a converter's placeholder: ``x`` (the previous op's result), ``m``
(this op's module), ``s`` (a shared module), ``0``, ``1`` … (the layer's inputs).
"""

from __future__ import annotations

from dataclasses import dataclass
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
