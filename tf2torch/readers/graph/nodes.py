"""A ``GraphDef`` decoded into ``GraphNode`` value objects, attributes as plain Python values.

Messages (core/framework/graph.proto, node_def.proto, attr_value.proto, tensor_shape.proto)::

    GraphDef      node 1 (NodeDef), library 2 (FunctionDefLibrary), versions 4
    NodeDef       name 1, op 2, input 3 ("x", "x:1", "^control"), device 4, attr 5 (map: key 1, value 2)
    AttrValue     list 1, s 2, i 3, f 4, b 5, type 6, shape 7, tensor 8, placeholder 9, func 10
    ListValue     s 2, i 3 (packed), f 4 (packed), b 5, type 6, shape 7, tensor 8, func 9
    NameAttrList  name 1, attr 2

What an attribute becomes: ``s`` -> str, ``i`` -> int, ``f`` -> float, ``b`` -> bool, ``type`` ->
``DTypeAttr``, ``shape`` -> a tuple (None for an unknown size) or None for an unknown rank, ``tensor`` ->
a lazily decoded ``Variable``, ``func`` -> ``FuncAttr``, ``list`` -> a tuple of those.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ...errors import FormatError
from ...spec import GraphNode, TFGraph
from ..proto import Message
from .tensor import const_variable

MAX_NODES = 2_000_000  # far above real graphs (BERT-large: ~10^4); bounds what a forged file costs


@dataclass(frozen=True)
class DTypeAttr:
    enum: int  # tensorflow/core/framework/types.proto DataType

    @property
    def is_float(self) -> bool:
        return self.enum in (1, 2, 14, 19)  # float, double, bfloat16, half


@dataclass(frozen=True)
class FuncAttr:
    name: str  # a FunctionDef in the graph's library
    attrs: dict[str, Any]


def _text(data: bytes) -> str:
    # String attrs are ASCII names (padding, data_format, shared_name); anything else stays readable.
    return data.decode("utf-8", errors="backslashreplace")


def _shape(msg: Message) -> tuple[int | None, ...] | None:
    if msg.flag(3):  # unknown_rank
        return None
    return tuple(s if s >= 0 else None for s in (d.int64(1) for d in msg.messages(2, "dim")))


def _attr(value: Message, key: str, node: str, where: str, depth: int = 0) -> Any:
    at = f"{where}: node {node!r} attr {key!r}"
    if value.has(2):
        return _text(value.blob(2))
    if value.has(3):
        return value.int64(3)
    if value.has(4):
        return value.float32(4)
    if value.has(5):
        return value.flag(5)
    if value.has(6):
        return DTypeAttr(value.uint(6))
    if value.has(7):
        return _shape(value.message(7, "shape"))
    if value.has(8):
        return const_variable(value.message(8, "tensor"), node, at)
    if value.has(10):
        return _func(value.message(10, "func"), node, where, depth)
    if value.has(1):
        items = value.message(1, "list")
        return (tuple(_text(bytes(s)) for s in items.repeated_bytes(2)) + tuple(items.repeated_ints(3))
                + tuple(items.repeated_floats(4)) + tuple(bool(b) for b in items.repeated_uints(5))
                + tuple(DTypeAttr(t) for t in items.repeated_uints(6))
                + tuple(_shape(s) for s in items.messages(7, "shape"))
                + tuple(const_variable(t, node, at) for t in items.messages(8, "tensor"))
                + tuple(_func(f, node, where, depth) for f in items.messages(9, "func")))
    if value.has(9):
        return FuncAttr("$" + value.string(9), {})  # a placeholder inside a function's attrs
    return None


def _func(msg: Message, node: str, where: str, depth: int) -> FuncAttr:
    if depth > 8:  # attrs of attrs of functions: real graphs nest one level
        raise FormatError(f"{where}: node {node!r}: function attributes nested more than 8 deep; the file is forged")
    return FuncAttr(msg.string(1), _attrs(msg.messages(2, "attr"), node, where, depth + 1))


def _attrs(entries: list[Message], node: str, where: str, depth: int = 0) -> dict[str, Any]:
    out = {}
    for entry in entries:
        key = entry.string(1)
        out[key] = _attr(entry.message(2, "value"), key, node, where, depth)
    return out


class LazyAttrs(Mapping[str, Any]):
    """A node's attributes, decoded on first access. Most of a checkpoint's ``.meta`` graph (a BERT's
    initializers, savers, optimizer) is never looked at beyond its op and inputs: decoding every attribute
    of its ~10^4 nodes up front cost 0.7 s of a 1 GB conversion that then found no model in it. A forged
    attribute is still a ``FormatError``, raised when the node's attributes are first read (inside the
    conversion); one on a node the lowering never looks at cannot change what is converted."""

    __slots__ = ("_msg", "_node", "_where", "_decoded")

    def __init__(self, msg: Message, node: str, where: str) -> None:
        self._msg, self._node, self._where = msg, node, where
        self._decoded: dict[str, Any] | None = None

    def _all(self) -> dict[str, Any]:
        if self._decoded is None:
            self._decoded = _attrs(self._msg.messages(5, "attr"), self._node, self._where)
        return self._decoded

    def __getitem__(self, key: str) -> Any:
        return self._all()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    def __repr__(self) -> str:
        return repr(self._all())


def decode_node(msg: Message, where: str, lazy: bool = False) -> GraphNode:
    name, op = msg.string(1), msg.string(2)
    if not name or not op:
        raise FormatError(f"{where}: a node without a name or an op; the file is not a TF graph or is corrupt")
    inputs = tuple(i for i in msg.repeated_strings(3) if not i.startswith("^"))  # ^x: control only
    attrs = LazyAttrs(msg, name, where) if lazy else _attrs(msg.messages(5, "attr"), name, where)
    return GraphNode(name=name, op=op, inputs=inputs, attrs=attrs)


def op_defaults(op_defs: list[Message], where: str) -> dict[str, dict[str, Any]]:
    """Per op type, its attributes' registered defaults (``OpDef.attr``: name 1, default_value 3).

    Writers strip attributes equal to their default (a SavedModel's Conv2D keeps only T, padding and
    strides), so the defaults from the file's own stripped OpDefs fill them back in."""
    out: dict[str, dict[str, Any]] = {}
    for d in op_defs:
        op = d.string(1)
        out[op] = {a.string(1): _attr(a.message(3, "default"), a.string(1), op, where)
                   for a in d.messages(4, "attr") if a.has(3)}
    return out


def merge_defaults(node: GraphNode, defaults: dict[str, dict[str, Any]]) -> GraphNode:
    missing = {k: v for k, v in defaults.get(node.op, {}).items() if k not in node.attrs and v is not None}
    return GraphNode(node.name, node.op, node.inputs, {**missing, **node.attrs}) if missing else node


def decode_graph(graph_def: Message, where: str, variables: dict[str, str] | None = None,
                 defaults: dict[str, dict[str, Any]] | None = None, lazy: bool = False) -> TFGraph:
    """``lazy``: attributes decoded when first read (``LazyAttrs``), for a checkpoint's ``.meta`` graph,
    read only to find a model beside the weights; a graph that *is* the model is checked whole, at once."""
    views = graph_def.repeated_bytes(1)
    if len(views) > MAX_NODES:
        raise FormatError(f"{where}: {len(views)} nodes, more than tf2torch reads ({MAX_NODES})")
    nodes = tuple(decode_node(Message(v, f"{where} > node[{i}]"), f"{where} > node[{i}]", lazy)
                  for i, v in enumerate(views))
    if defaults:
        nodes = tuple(merge_defaults(n, defaults) for n in nodes)
    return TFGraph(where=where, nodes=nodes, variables=variables or {})


def tensor_name(ref: str) -> tuple[str, int]:
    """``"x:1"`` -> ``("x", 1)``; ``"x"`` -> ``("x", 0)``. (In a FunctionDef ``"x:out:0"`` names an
    output argument; readers of function bodies rewrite those first.)"""
    node, _, index = ref.partition(":")
    return node, int(index) if index.isdigit() else 0
