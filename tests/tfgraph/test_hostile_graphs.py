"""Forged graphs (built with TF's own protos from the graph fixtures): a function that calls itself, a
constant declaring a terabyte, attributes nested past any real graph. Each is one clear error."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from tests.conftest import require_tf
from tf2torch import api
from tf2torch.errors import FormatError, Tf2TorchError, UnsupportedError

GRAPHS = Path(__file__).resolve().parents[2] / "fixtures" / "graphs"


def test_a_function_that_calls_itself_is_refused(tmp_path):
    require_tf()
    from tensorflow.core.protobuf import saved_model_pb2

    root = shutil.copytree(GRAPHS / "module", tmp_path / "module")
    model = saved_model_pb2.SavedModel()
    model.ParseFromString((root / "saved_model.pb").read_bytes())
    library = model.meta_graphs[0].graph_def.library
    forged = 0
    for function in library.function:
        for node in function.node_def:
            if node.op in ("StatefulPartitionedCall", "PartitionedCall"):
                node.attr["f"].func.name = function.signature.name  # now it calls itself
                forged += 1
    assert forged
    (root / "saved_model.pb").write_bytes(model.SerializeToString())
    with pytest.raises(UnsupportedError, match="calls itself"):
        api.convert(root, None, dry_run=True)


def test_a_constant_declaring_a_terabyte_is_not_allocated(tmp_path):
    tf = require_tf()
    graph = tf.compat.v1.GraphDef()
    graph.ParseFromString((GRAPHS / "frozen.pb").read_bytes())
    const = next(n for n in graph.node if n.name == "conv/weights")
    tensor = const.attr["value"].tensor
    tensor.ClearField("tensor_content")
    del tensor.tensor_shape.dim[:]
    tensor.tensor_shape.dim.add().size = 1 << 38
    tensor.float_val.append(1.0)  # one value "filled" to 2^38 elements
    forged = tmp_path / "forged.pb"
    forged.write_bytes(graph.SerializeToString())
    start = time.perf_counter()
    spec = api.read(forged)
    weight = next(v for v in spec.variables if v.name == "conv/weights")
    with pytest.raises(FormatError, match="larger than tf2torch accepts"):
        weight.read()
    with pytest.raises(Tf2TorchError):  # the conv cannot use a 1-D filter either
        api.convert(forged, None, dry_run=True)
    assert time.perf_counter() - start < 30  # nothing of that size was ever made


def test_function_attributes_nested_past_any_real_graph(tmp_path):
    tf = require_tf()
    from tensorflow.core.framework import attr_value_pb2

    graph = tf.compat.v1.GraphDef()
    graph.ParseFromString((GRAPHS / "frozen.pb").read_bytes())
    value = attr_value_pb2.AttrValue()
    inner = value
    for _ in range(40):
        inner.func.name = "f"
        inner = inner.func.attr["nested"]
    graph.node[0].attr["_forged"].CopyFrom(value)
    forged = tmp_path / "forged.pb"
    forged.write_bytes(graph.SerializeToString())
    with pytest.raises(FormatError, match="nested more than 8 deep"):
        api.read(forged)


def test_a_meta_graphs_forged_attribute_fails_when_the_lowering_reads_it():
    """A checkpoint's .meta graph decodes attributes lazily (most of its nodes are never looked at): the
    forged attribute is still refused, as a FormatError, when the node's attributes are read."""
    tf = require_tf()
    from tensorflow.core.framework import attr_value_pb2, node_def_pb2

    from tf2torch.readers.graph.nodes import decode_node
    from tf2torch.readers.proto import Message

    node = node_def_pb2.NodeDef(name="x", op="Placeholder")
    value = attr_value_pb2.AttrValue()
    inner = value
    for _ in range(40):
        inner.func.name = "f"
        inner = inner.func.attr["nested"]
    node.attr["_forged"].CopyFrom(value)
    assert tf is not None
    decoded = decode_node(Message(node.SerializeToString(), "forged.meta"), "forged.meta", lazy=True)
    assert (decoded.name, decoded.op) == ("x", "Placeholder")
    with pytest.raises(FormatError, match="nested more than 8 deep"):
        dict(decoded.attrs)
