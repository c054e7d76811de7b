"""TF1 meta graphs: conv/pool/BN ops, their attributes, the variables they read, creation order."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.readers.conftest import LEAD_CHECKPOINTS
from tests.readers.tablebuilder import field, varint
from tf2torch.errors import FormatError
from tf2torch.readers.checkpoint import read_checkpoint
from tf2torch.readers.metagraph import parse_meta_graph, read_meta_graph
from tf2torch.spec import OpSpec

EXPECTED = [
    OpSpec("x", "Placeholder", shape=(2, 8, 8, 3), dtype="float32"),
    OpSpec("Conv2D", "Conv2D", "SAME", (1, 2, 2, 1), (1, 1, 1, 1), (), "NHWC", None, ("conv/kernel",)),
    OpSpec("DepthwiseConv2dNative", "DepthwiseConv2dNative", "SAME", (1, 1, 1, 1), (1, 1, 1, 1), (), "NHWC", None,
           ("dw/depthwise_kernel",)),
    OpSpec("FusedBatchNormV3", "FusedBatchNormV3", "", (), (), (), "NHWC", pytest.approx(1e-3),
           ("bn/gamma", "bn/beta", "bn/moving_mean", "bn/moving_variance")),
    OpSpec("dilated", "Conv2D", "SAME", (1, 1, 1, 1), (1, 2, 2, 1), (), "NHWC", None, ("dilated/kernel",)),
    OpSpec("partitioned_conv", "Conv2D", "VALID", (1, 1, 1, 1), (1, 1, 1, 1), (), "NHWC", None, ("pconv/kernel",)),
    OpSpec("nchw_pool", "AvgPool", "VALID", (1, 1, 2, 2), (), (1, 1, 2, 2), "NCHW", None, ()),
    # pools carry what feeds them (through activations and adds, not through a Transpose)
    OpSpec("MaxPool2d", "MaxPool", "SAME", (1, 1, 1, 1), (), (1, 3, 3, 1), "NHWC", None, (),
           upstream=("FusedBatchNormV3",)),
    OpSpec("AvgPool2D", "AvgPool", "VALID", (1, 2, 2, 1), (), (1, 2, 2, 1), "NHWC", None, (), upstream=("MaxPool2d",)),
    OpSpec("conv2d_transpose", "Conv2DBackpropInput", "SAME", (1, 2, 2, 1), (1, 1, 1, 1), (), "NHWC", None, ("up/kernel",)),
    OpSpec("v", "Placeholder", shape=(1, 4, 4, 4, 2), dtype="float32"),
    OpSpec("Conv3D", "Conv3D", "SAME", (1, 1, 1, 1, 1), (1, 1, 1, 1, 1), (), "NDHWC", None, ("conv3d/kernel",)),
    OpSpec("MaxPool3D", "MaxPool3D", "VALID", (1, 2, 2, 2, 1), (), (1, 2, 2, 2, 1), "NDHWC", None, (), upstream=("Conv3D",)),
    OpSpec("AvgPool3D", "AvgPool3D", "SAME", (1, 1, 1, 1, 1), (), (1, 1, 1, 1, 1), "NDHWC", None, (),
           upstream=("MaxPool3D",)),
]


@pytest.fixture(scope="module")
def meta(tf1_checkpoint):
    return read_meta_graph(f"{tf1_checkpoint}.meta")


def test_forward_ops_only_in_graph_order(meta):
    """Backward-pass convs (under gradients/) are not layers and are left out."""
    assert [o.name for o in meta.ops] == [o.name for o in EXPECTED]


@pytest.mark.parametrize("expected", EXPECTED, ids=[o.name for o in EXPECTED])
def test_op_attributes_and_variables(meta, expected):
    assert next(o for o in meta.ops if o.name == expected.name) == expected


def test_variable_creation_order(meta):
    order = meta.variable_order
    assert order[:12] == ("conv/kernel", "dw/depthwise_kernel", "bn/gamma", "bn/beta", "bn/moving_mean",
                          "bn/moving_variance", "dilated/kernel", "pconv/kernel", "up/kernel", "conv3d/kernel",
                          "part", "half")
    assert order.index("global_step") < order.index("beta1_power") < order.index("conv/kernel/Adam")
    assert len(order) == len(set(order))  # partitions merged under the full name


# ---- synthetic graphs: control inputs, output indices, shared names, cycles, stripped defaults ----

def node(name: str, op: str, inputs: tuple[str, ...] = (), **attrs: bytes) -> bytes:
    out = field(1, name.encode()) + field(2, op.encode()) + b"".join(field(3, i.encode()) for i in inputs)
    return out + b"".join(field(5, field(1, k.encode()) + field(2, v)) for k, v in attrs.items())


def ints(*values: int) -> bytes:
    return field(1, field(3, b"".join(varint(v) for v in values)))  # AttrValue.list.i, packed


def graph(*nodes: bytes) -> bytes:
    return field(2, b"".join(field(1, n) for n in nodes))


def test_synthetic_graph_edges():
    blob = graph(
        node("w", "VariableV2"), node("w/read", "Identity", ("w",)),
        node("v", "VarHandleOp", shared_name=field(2, b"shared/v")), node("r", "ReadVariableOp", ("v",)),
        node("cast", "Cast", ("r:0",)),
        node("a", "Identity", ("b",)), node("b", "Identity", ("a",)),  # a cycle: resolves to nothing
        node("conv", "Conv2D", ("x:0", "w/read:0", "^v"), strides=ints(1, 1, 1, 1), padding=field(2, b"VALID")),
        node("conv2", "Conv2D", ("cast", "a"), strides=ints(1, 2, 2, 1), padding=field(2, b"EXPLICIT")),
        node("bn", "FusedBatchNorm", ("x", "w", "r", "r:1", "^w")),
        node("gradients/conv_grad/Conv2D", "Conv2D", ("x", "w")),
    )
    meta = parse_meta_graph(blob, "synthetic.meta")
    conv, conv2, bn = meta.ops
    assert conv.variables == ("w",) and conv.padding == "VALID" and conv.dilations == (1, 1, 1, 1)
    assert conv2.variables == ("shared/v",) and conv2.strides == (1, 2, 2, 1)
    assert bn.variables == ("w", "shared/v", "shared/v") and bn.epsilon == pytest.approx(1e-4)  # default
    assert meta.variable_order == ("w", "shared/v")


def test_garbage_meta(tmp_path: Path):
    path = tmp_path / "model.meta"
    path.write_bytes(b"\xff" * 64)
    with pytest.raises(FormatError, match=r"model\.meta"):
        read_meta_graph(path)


def test_missing_meta(tmp_path: Path):
    with pytest.raises(FormatError, match="cannot read the meta graph"):
        read_meta_graph(tmp_path / "nope.meta")


LEAD_METAS = [p for p in LEAD_CHECKPOINTS if Path(f"{p}.meta").is_file()]


@pytest.mark.skipif(not LEAD_METAS, reason="fixtures/ holds no .meta files (run make fixtures)")
@pytest.mark.parametrize("prefix", LEAD_METAS, ids=[p.parent.name for p in LEAD_METAS])
def test_lead_fixture_ops_read_stored_variables(prefix):
    spec = read_checkpoint(prefix)
    assert spec.ops and all(v in spec.names() for op in spec.ops for v in op.variables)
    assert all(op.op not in ("Conv2D", "DepthwiseConv2dNative") or op.variables for op in spec.ops)
