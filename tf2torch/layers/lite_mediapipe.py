"""MediaPipe's pooling custom operators (``tflite/ops_custom.py``) as the helpers of
``runtime/mediapipe_pool.py``: ``MediaPipeMaxPoolArgmax`` (two outputs: values, window positions) and
``MediaPipeMaxUnpool`` (values, positions). Both compute on channels-first tensors and size themselves from
their input at run time, as the kernels do, so no padding is planned here."""

from __future__ import annotations

from ..codegen import nodes as n
from .base import Converted, Ctx, Module, Op, TensorInfo
from .common import cfg_bool, cfg_ints
from .registry import converter

TF = "tf2torch>"


def _bound(ctx: Ctx, key: str) -> float | None:
    value = ctx.config.get(key)
    if value is not None and (isinstance(value, bool) or not isinstance(value, float)):
        raise ctx.unsupported(f"config {key!r} should be a number or null, found {value!r}")
    return value


def _spatial(ctx: Ctx, i: int) -> tuple[int | None, int | None, int | None]:
    info = ctx.inputs[i]
    if info.rank != 4:
        raise ctx.unsupported(f"input {i} of shape {info.shape}: expected (H, W, C)")
    h, w, c = info.shape
    return h, w, c


@converter(TF + "MediaPipeMaxPoolArgmax", wants="cf")
def max_pool_argmax(ctx: Ctx) -> Converted:
    kernel, strides = cfg_ints(ctx, "kernel", 2), cfg_ints(ctx, "strides", 2)
    same, low, high = cfg_bool(ctx, "same", False), _bound(ctx, "low"), _bound(ctx, "high")
    h, w, c = _spatial(ctx, 0)
    sizes = [None if size is None else (size + s - 1) // s if same else (size - k + s) // s
             for size, k, s in zip((h, w), kernel, strides)]
    clamp = tuple((key, v) for key, v in (("low", low), ("high", high)) if v is not None)
    module = Module("MediaPipeMaxPoolArgmax", (kernel, strides), (("same", same), *clamp))
    out = TensorInfo((*sizes, c), "cf")
    return Converted((Op(n.call(n.M, n.X), module),), (out, out), helpers=("MediaPipeMaxPoolArgmax",))


@converter(TF + "MediaPipeMaxUnpool", wants="cf")
def max_unpool(ctx: Ctx) -> Converted:
    kernel, strides = cfg_ints(ctx, "kernel", 2), cfg_ints(ctx, "strides", 2)
    h, w, c = _spatial(ctx, 0)
    if len(ctx.inputs) != 2 or ctx.inputs[1].shape != ctx.x.shape or h is None or w is None:
        raise ctx.unsupported(f"inputs of shapes {[i.shape for i in ctx.inputs]}: expected values and indices "
                              "of one known shape")
    module = Module("MediaPipeMaxUnpool", (kernel, strides))
    out = TensorInfo((h * kernel[0], w * kernel[1], c), "cf")
    return Converted((Op(n.call(n.M, n.arg(0), n.arg(1)), module),), (out,), helpers=("MediaPipeMaxUnpool",))
