"""TF 1's all-uint8 models: the other operators TF 1's converter writes on uint8 — MAXIMUM / MINIMUM, PAD /
PADV2, HARD_SWISH, LEAKY_RELU, SUM, REDUCE_MAX / REDUCE_MIN, RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR, TILE,
MIRROR_PAD. MAXIMUM, MINIMUM, PAD, TILE, MIRROR_PAD, the nearest-neighbour resize and REDUCE_MAX / MIN compare or
move the stored uint8 values as they are (LiteRT's kernels do); HARD_SWISH and LEAKY_RELU run the int8 modules on
q - 128 with every zero point lowered by 128 (``tflite/ops_uint8_model.py``'s rule); SUM keeps the uint8 values
(its float32 arithmetic on the raw sum rounds otherwise on q - 128: ``runtime/lite_uint8.py``). Each measured
equal to LiteRT's uint8 kernels in tests/tflite/test_uint8_tf1.py.
"""

from __future__ import annotations

import numpy as np

from ..tfgraph.base import Const, Tensor, Value
from .base import LiteCtx, int_op, lookup_lite
from .int_spatial_math import mirror_indices, nearest_indices
from .ops_int import INT, int_pad
from .ops_int_math import reduce_config
from .ops_int_spatial import resize_grid
from .ops_math import same_rank
from .ops_uint8 import uint8_params
from .quant_math import hard_swish_params, leaky_relu_params

UINT8 = "tf2torch>LiteUint8"


def _io(ctx: LiteCtx) -> tuple[tuple[float, int], tuple[float, int]]:
    return uint8_params(ctx, ctx.operator.inputs[0]), uint8_params(ctx, ctx.operator.outputs[0])


@int_op("MAXIMUM", "MINIMUM", dtype="uint8")
def min_max(ctx: LiteCtx) -> tuple[Value, ...]:
    """The larger / smaller stored uint8 value (LiteRT's kernel compares them as they are): two tensors, or a
    tensor and a uint8 constant of the file (the layer's weight, in TF's shape)."""
    a, b = ctx.value(0), ctx.value(1)
    config: dict = {"maximum": ctx.op == "MAXIMUM"}
    if isinstance(a, Tensor) and isinstance(b, Tensor):
        if len(a.shape) != len(b.shape):
            a, b = same_rank(ctx, a), same_rank(ctx, b)
        shape = tuple(p if q in (1, None) else q for p, q in zip(a.shape, b.shape))
        shape = tuple(q if p == 1 else p for p, q in zip(shape, b.shape))
        return (ctx.layer(UINT8 + "MinMax", config, [a, b], shape, name=ctx.name),)
    first = isinstance(a, Const)
    x, c = (b, a) if first else (a, b)
    if not isinstance(x, Tensor) or not isinstance(c, Const) or c.var.dtype.name != "uint8":
        raise ctx.unsupported("uint8 operands that are not two tensors, or a tensor and a uint8 constant")
    if len(c.shape) > len(x.shape) or any(d not in (1, s) for d, s in zip(c.shape[::-1], x.shape[::-1])):
        raise ctx.unsupported(f"a constant of shape {list(c.shape)} against a tensor of shape {list(x.shape)}")
    config["constant_first"] = first
    return (ctx.layer(UINT8 + "MinMax", config, [x], x.shape, weights=[("constant", c)], name=ctx.name),)


@int_op("PAD", "PADV2", dtype="uint8")
def pad(ctx: LiteCtx) -> tuple[Value, ...]:
    """Padding a uint8 tensor with its zero point (the real 0), or PADV2's own uint8 constant: the int8 layer's
    ``F.pad``, which pads any integer type with the value given."""
    return int_pad(ctx, _io(ctx), "uint8")


@int_op("HARD_SWISH", dtype="uint8")
def hard_swish(ctx: LiteCtx) -> tuple[Value, ...]:
    x = ctx.tensor(0)
    (s_in, z_in), (s_out, z_out) = _io(ctx)
    out_m, out_e, rel_m, rel_e = hard_swish_params(s_in, s_out)
    if out_e > 0:  # LiteRT's Prepare requires a right shift on the output
        raise ctx.unsupported(f"an output multiplier exponent {out_e} (LiteRT refuses it too)")
    config = {"input_zero_point": z_in - 128, "output_zero_point": z_out - 128, "output_multiplier": out_m,
              "output_exponent": out_e, "reluish_multiplier": rel_m, "reluish_exponent": rel_e}
    return (ctx.layer(UINT8 + "HardSwish", config, [x], x.shape, name=ctx.name),)


@int_op("LEAKY_RELU", dtype="uint8")
def leaky_relu(ctx: LiteCtx) -> tuple[Value, ...]:
    x = ctx.tensor(0)
    (s_in, z_in), (s_out, z_out) = _io(ctx)
    identity, alpha = leaky_relu_params(s_in, s_out, float(ctx.option("alpha", 0.2)))
    config = {"input_zero_point": z_in - 128, "params": [list(identity), list(alpha)],
              "output_zero_point": z_out - 128}
    return (ctx.layer(UINT8 + "LeakyRelu", config, [x], x.shape, name=ctx.name),)


@int_op("SUM", "REDUCE_MAX", "REDUCE_MIN", dtype="uint8")
def reduce(ctx: LiteCtx) -> tuple[Value, ...]:
    x = ctx.tensor(0)
    config, shape = reduce_config(ctx, x, _io(ctx), "uint8")
    return (ctx.layer(UINT8 + "Reduce", config, [x], shape, name=ctx.name),)


def bilinear_float_tables(in_size: int, out_size: int, align: bool, half: bool) -> tuple[list[int], list[int], list[float]]:
    """LiteRT's uint8 RESIZE_BILINEAR along one axis (``ResizeBilinearGenericSmallChannel<uint8>`` with
    ``ComputeInterpolationValues``, float32): for each output position the lower and upper source index and the
    fraction (scaled position - lower index) its weights are made of at run time."""
    f32 = np.float32
    scale = f32(in_size - 1) / f32(out_size - 1) if align and out_size > 1 else f32(in_size) / f32(out_size)
    lower, upper, frac = [], [], []
    for y in range(out_size):
        scaled = (f32(y) + f32(0.5)) * scale - f32(0.5) if half else f32(y) * scale
        low = max(int(np.floor(scaled)), 0)
        lower.append(low)
        upper.append(min(int(np.ceil(scaled)), in_size - 1))
        frac.append(float(f32(scaled - f32(low))))
    return lower, upper, frac


@int_op("RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR", dtype="uint8")
def resize(ctx: LiteCtx) -> tuple[Value, ...]:
    """Resizes of uint8 images (LiteRT's kernels keep the input's scale): nearest neighbour as the int8 index
    gather (its 8-bit optimized path), bilinear in float32 as LiteRT's uint8 kernel (``runtime/lite_uint8.py``)."""
    x = ctx.tensor(0)
    if len(x.shape) != 4 or x.shape[1] is None or x.shape[2] is None:
        raise ctx.unsupported(f"a uint8 input of shape {list(x.shape)} (expected (N, H, W, C) of known H, W)",
                              "convert with --input-shape")
    (s_in, z_in), (s_out, z_out) = _io(ctx)
    if (s_in, z_in) != (s_out, z_out):
        raise ctx.unsupported("a uint8 resize whose output is quantized unlike its input (LiteRT's kernel copies "
                              "the values as they are)")
    shape, sizes, align, half = resize_grid(ctx, x)
    if ctx.op == "RESIZE_NEAREST_NEIGHBOR":
        rows, cols = (nearest_indices(a, b, align, half) for a, b in sizes)
        return (ctx.layer(INT + "Gather", {"rows": rows, "cols": cols}, [x], shape, name=ctx.name),)
    (r0, r1, rf), (c0, c1, cf) = (bilinear_float_tables(a, b, align, half) for a, b in sizes)
    config = {"rows": [r0, r1], "row_fractions": rf, "cols": [c0, c1], "col_fractions": cf}
    return (ctx.layer(UINT8 + "ResizeBilinear", config, [x], shape, name=ctx.name),)


def _same_quantization(ctx: LiteCtx, what: str) -> None:
    (s_in, z_in), (s_out, z_out) = _io(ctx)
    if (s_in, z_in) != (s_out, z_out):
        raise ctx.unsupported(f"a uint8 {what} whose output is quantized unlike its input (LiteRT's kernel copies "
                              "the values as they are)")


@int_op("TILE", dtype="uint8")
def tile(ctx: LiteCtx) -> tuple[Value, ...]:
    """Repeats uint8 values as they are: the float operator's converter (a ``tile`` of any dtype)."""
    _same_quantization(ctx, "tile")
    converter = lookup_lite("TILE")
    assert converter is not None
    return converter(ctx)


@int_op("MIRROR_PAD", dtype="uint8")
def mirror_pad(ctx: LiteCtx) -> tuple[Value, ...]:
    """Height and width of a uint8 image mirror-padded: the int8 index gather (``tflite/ops_int_spatial.py``'s
    geometry; LiteRT's kernel moves 8-bit values alike)."""
    x = ctx.tensor(0)
    _same_quantization(ctx, "mirror pad")
    mode = ctx.option("mode", "REFLECT")
    p = np.asarray(ctx.const(1, "paddings").array(), dtype=np.int64).reshape(-1)
    if len(x.shape) != 4 or x.shape[1] is None or x.shape[2] is None or mode not in ("REFLECT", "SYMMETRIC") or \
            p.size != 8 or p[[0, 1, 6, 7]].any() or (p < 0).any():
        raise ctx.unsupported(f"a {mode} mirror pad by {p.tolist()} of a uint8 tensor of shape {list(x.shape)} (the "
                              "height and width of an image of known size are emulated)")
    symmetric = mode == "SYMMETRIC"
    (top, bottom), (left, right) = p[2:4].tolist(), p[4:6].tolist()
    limit = 0 if symmetric else 1  # LiteRT: at most the size (SYMMETRIC), the size - 1 (REFLECT)
    if max(top, bottom) > x.shape[1] - limit or max(left, right) > x.shape[2] - limit:
        raise ctx.unsupported(f"a {mode} pad by {p.tolist()} wider than the image {list(x.shape)}")
    rows, cols = mirror_indices(x.shape[1], top, bottom, symmetric), mirror_indices(x.shape[2], left, right, symmetric)
    shape = (x.shape[0], len(rows), len(cols), x.shape[3])
    return (ctx.layer(INT + "Gather", {"rows": rows, "cols": cols}, [x], shape, name=ctx.name),)
