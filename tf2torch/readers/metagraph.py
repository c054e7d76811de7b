"""TF1 graphs (``PREFIX.meta``, or the MetaGraphDef in a TF1 ``saved_model.pb``): conv / pool / batch-norm
ops with their attributes and the variables they read, plus the order variables were created in.

Messages (tensorflow/core/protobuf/meta_graph.proto, core/framework/graph.proto, node_def.proto,
attr_value.proto, variable.proto)::

    MetaGraphDef   graph_def 2, collection_def 4 (map: key 1, value 2)
    GraphDef       node 1 (NodeDef)
    NodeDef        name 1, op 2, input 3 ("node", "node:1", "^control"), attr 5 (map: key 1, AttrValue 2)
    AttrValue      list 1 {s 2, i 3 packed}, s 2, i 3, f 4 (float), b 5
    CollectionDef  bytes_list 2 {value 1}; "variables" holds serialized VariableDef
    VariableDef    variable_name 1 ("part/part_0:0"), save_slice_info_def 4 {full_name 1}
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path

from ..errors import FormatError
from ..spec import OpSpec, TFGraph
from .graph import flow
from .graph.nodes import decode_graph
from .proto import Message, decode_utf8, read_varint

VARIABLE_OPS = frozenset({"VariableV2", "Variable", "VarHandleOp", "AutoReloadVariable"})
# Ops a variable's value flows through unchanged on its way to a consumer: ref reads (`var/read` is an
# Identity), resource reads, mixed-precision casts, while-loop entries.
PASS_THROUGH = frozenset({"Identity", "ReadVariableOp", "Cast", "Enter", "Snapshot"})
CONCAT_OPS = frozenset({"ConcatV2", "Concat"})  # how a partitioned variable is read whole
OPS = frozenset({
    "Conv2D", "Conv3D", "DepthwiseConv2dNative", "Conv2DBackpropInput", "MaxPool", "AvgPool",
    "MaxPool3D", "AvgPool3D", "FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3",
})
_POOLS = frozenset({"MaxPool", "AvgPool", "MaxPool3D", "AvgPool3D"})
# tf.gradients puts the backward pass under "gradients/" ("gradients_1/", "training/.../gradients/"):
# its Conv2D / Conv2DBackpropInput nodes are derivatives, not layers of the model.
_BACKWARD = re.compile(r"(^|/)gradients(_\d+)?/")
_MAX_DEPTH = 64  # read chains are a few ops long; a bound keeps forged graphs from recursing deeply
_BN_EPSILON = 0.0001  # FusedBatchNorm's registered default, used when a stripped graph omits it


@dataclass(frozen=True)
class MetaGraph:
    ops: tuple[OpSpec, ...]
    variable_order: tuple[str, ...]  # checkpoint names in graph (= creation) order, partitions merged
    # Some node is a Placeholder (or a function library could hold one): without any, no tensor can be fed,
    # so the graph holds no model to generate (a checkpoint's graph of variables, initialisers and a Saver).
    placeholders: bool = True


def read_file(path: Path, what: str) -> bytes:
    """A graph file's bytes, or one line naming it (graphs are decoded from memory: they are small)."""
    try:
        return path.read_bytes()
    except OSError as exc:
        raise FormatError(f"{path}: cannot read {what} ({exc.strerror}); check the path") from None


def node_name(ref: str) -> str:
    """The node an input refers to: ``^ctrl`` -> ``ctrl``, ``x:1`` -> ``x``."""
    return ref.lstrip("^").split(":", 1)[0]


def _name_and_op(node: memoryview, where: str) -> tuple[str, str] | None:
    """A NodeDef's name (1) and op (2) without decoding the rest (attrs are most of its bytes).

    TF writes fields in number order, so both come first; any other layout returns None and the
    node is parsed whole.
    """
    # Fast path: both fields with one-byte lengths (names under 128 bytes), as nearly every node has.
    if len(node) > 2 and node[0] == 0x0A and node[1] < 0x80:
        op_at = 2 + node[1]
        if len(node) > op_at + 1 and node[op_at] == 0x12 and node[op_at + 1] < 0x80:
            end = op_at + 2 + node[op_at + 1]
            if end <= len(node):
                try:
                    return bytes(node[2:op_at]).decode("utf-8"), bytes(node[op_at + 2:end]).decode("utf-8")
                except UnicodeDecodeError:
                    pass  # the slow path below reports it
    found: dict[int, str] = {}
    pos = 0
    while len(found) < 2 and pos < len(node):
        tag, pos = read_varint(node, pos, where)
        if tag not in (0x0A, 0x12) or tag in found:  # field 1 or 2, length-delimited
            return None
        size, pos = read_varint(node, pos, where)
        if size > len(node) - pos:
            return None
        found[tag] = decode_utf8(bytes(node[pos:pos + size]), f"{where} field {tag >> 3}")
        pos += size
    return (found[0x0A], found[0x12]) if len(found) == 2 else None


class NodeIndex:
    """Nodes are decoded on demand: a graph has thousands (initializers, savers, gradients), and only
    conv / pool / BN ops and the read chains behind them are ever looked at."""

    def __init__(self, meta: Message, where: str) -> None:
        self.where = where
        self.nodes: dict[str, memoryview] = {}
        self.ops: dict[str, str] = {}
        self.order: list[str] = []
        self._parsed: dict[str, Message] = {}
        for i, view in enumerate(meta.message(2, "graph_def").repeated_bytes(1)):
            node_where = f"{where} > graph_def > node[{i}]"
            quick = _name_and_op(view, node_where)
            if quick is None:
                full = Message(view, node_where)
                quick = full.string(1), full.string(2)
                self._parsed[quick[0]] = full
            elif quick[0] in self._parsed:
                del self._parsed[quick[0]]  # a later node of the same name replaces the earlier one
            name, op = quick
            self.nodes[name] = view
            self.ops[name] = op
            self.order.append(name)
        self.aliases = self._variable_aliases(meta)
        self._resolved: dict[str, str | None] = {}

    def node(self, name: str) -> Message:
        if name not in self._parsed:
            self._parsed[name] = Message(self.nodes[name], f"{self.where} > node {name!r}")
        return self._parsed[name]

    def _variable_aliases(self, meta: Message) -> dict[str, str]:
        """Variable node -> checkpoint name, from the "variables" collections (partition parts map to
        the full variable's name via save_slice_info_def)."""
        out = {}
        seen: set[bytes] = set()
        for entry in meta.messages(4, "collection_def"):
            if not entry.string(1).endswith("variables"):  # variables, trainable_variables, local_...
                continue
            for blob in entry.message(2, "collection").message(2, "bytes_list").repeated_bytes(1):
                key = bytes(blob)
                if key in seen:  # a trainable variable is listed in two collections
                    continue
                seen.add(key)
                var = Message(blob, f"{self.where} > VariableDef")
                full = var.message(4, "save_slice_info_def").string(1)
                out[node_name(var.string(1))] = full or node_name(var.string(1))
        return out

    def op(self, name: str) -> str:
        return self.ops[name]

    def attrs(self, name: str) -> dict[str, Message]:
        return {e.string(1): e.message(2, "attr value") for e in self.node(name).messages(5, "attr")}

    def variable_of(self, name: str, depth: int = 0) -> str | None:
        """The checkpoint name of the variable node ``name`` is read from, if any."""
        if name not in self._resolved:
            self._resolved[name] = None  # guards against cycles (while loops)
            self._resolved[name] = self._follow(name, depth)
        return self._resolved[name]

    def _follow(self, name: str, depth: int) -> str | None:
        if name not in self.nodes or depth > _MAX_DEPTH:
            return None
        op = self.op(name)
        if op in VARIABLE_OPS:
            if name in self.aliases:
                return self.aliases[name]
            shared = self.attrs(name).get("shared_name")
            return (shared.string(2) if shared is not None else "") or name
        inputs = [node_name(i) for i in self.node(name).repeated_strings(3) if not i.startswith("^")]
        if op in PASS_THROUGH and inputs:
            return self.variable_of(inputs[0], depth + 1)
        if op in CONCAT_OPS and len(inputs) > 2:
            parts = {self.variable_of(i, depth + 1) for i in (inputs[:-1] if op == "ConcatV2" else inputs[1:])}
            return parts.pop() if len(parts) == 1 else None  # all partitions of one variable
        return None

    def op_spec(self, name: str) -> OpSpec:
        op, attrs = self.op(name), self.attrs(name)
        spatial3d = op.endswith("3D")

        def ints(key: str) -> tuple[int, ...]:
            return tuple(attrs[key].message(1, "list").repeated_ints(3)) if key in attrs else ()

        def text(key: str, default: str) -> str:
            return attrs[key].string(2) if key in attrs else default

        strides = ints("strides")
        # Control inputs (^x) order execution; they are not operands, so they are not "read".
        inputs = [node_name(i) for i in self.node(name).repeated_strings(3) if not i.startswith("^")]
        variables = tuple(v for v in (self.variable_of(i) for i in inputs) if v is not None)
        return OpSpec(
            name=name,
            op=op,
            padding=text("padding", ""),
            strides=strides,
            # Omitted dilations (stripped default attrs, pools) mean 1 in every dimension.
            dilations=ints("dilations") or ((1,) * len(strides) if op not in _POOLS else ()),
            ksize=ints("ksize"),
            data_format=text("data_format", "NDHWC" if spatial3d else "NHWC"),
            epsilon=(attrs["epsilon"].float32(4) if "epsilon" in attrs else _BN_EPSILON)
            if op.startswith("FusedBatchNorm") else None,
            variables=variables,
        )

    def variable_order(self) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for name in self.order:
            if self.op(name) in VARIABLE_OPS:
                seen.setdefault(self.variable_of(name) or name, None)
        return tuple(seen)


def parse_meta_graph(blob: bytes, where: str) -> MetaGraph:
    """Ops (graph order: creation order, which is topological) and variable order of one
    serialized ``MetaGraphDef``."""
    meta = Message(blob, where)
    graph = NodeIndex(meta, where)
    forward = [n for n in graph.order if not _BACKWARD.search(n)]
    unfused = {op.name: op for op in flow.unfused_batch_norms(graph) if not _BACKWARD.search(op.name)}
    ops = []
    for name in forward:
        kind = graph.op(name)
        if kind in OPS or kind == "MatMul":
            spec = graph.op_spec(name)
            if kind in _POOLS or kind == "MatMul":
                spec = dataclasses.replace(spec, **flow.flow_fields(graph, name))
            ops.append(spec)
        elif kind == "Placeholder":
            ops.append(flow.placeholder(graph, name))
        elif name in unfused:
            ops.append(unfused[name])
    placeholders = "Placeholder" in graph.ops.values() or meta.message(2, "graph_def").has(2)  # 2: library
    return MetaGraph(tuple(ops), graph.variable_order(), placeholders)


def meta_graph_ops(path: Path | str) -> tuple[OpSpec, ...]:
    """Only the conv / pool / batch-norm ops of a ``.meta`` file (what a checkpoint's spec carries).

    A graph whose bytes never spell one of those op names (a transformer, an MLP) has none, so it is
    not decoded at all: a BERT ``.meta`` holds thousands of nodes and none of them matters here.
    """
    path = Path(path)
    blob = read_file(path, "the meta graph")
    if not any(op.encode() in blob for op in (*OPS, "MatMul", "Rsqrt")):
        return ()
    return parse_meta_graph(blob, str(path)).ops


def read_meta_tf_graph(path: Path | str) -> TFGraph:
    """The whole graph of a ``.meta`` file, every node decoded, variable nodes mapped to checkpoint names."""
    path = Path(path)
    blob = read_file(path, "the meta graph")
    meta = Message(blob, str(path))
    graph = NodeIndex(meta, str(path))
    variables = {name: graph.variable_of(name) or name for name in graph.order if graph.op(name) in VARIABLE_OPS}
    return decode_graph(meta.message(2, "graph_def"), str(path), variables, lazy=True)


def read_meta_graph(path: Path | str) -> MetaGraph:
    """Ops and variable creation order of a ``.meta`` file."""
    path = Path(path)
    blob = read_file(path, "the meta graph")
    return parse_meta_graph(blob, str(path))
