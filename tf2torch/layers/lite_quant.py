"""TFLite's dynamic-range ("hybrid") int8 layers: FULLY_CONNECTED, CONV_2D and DEPTHWISE_CONV_2D with int8
weights on float activations, as the helpers ``TFLiteHybridLinear`` / ``TFLiteHybridConv2d``, which
emulate LiteRT's on-the-fly input quantization (``tf2torch/runtime/lite_quant.py``).

The int8 weight is the file's own tensor (read into torch's layout by the same layout-table entries as a
float kernel: a permutation, so the integers are kept); its per-channel scales come from the tensor's
quantization parameters, a constant buffer (``weight_scale``) of the module.
"""

from __future__ import annotations

import numpy as np

from ..map import layouts
from .base import Converted, Ctx, Module, Param, TensorInfo
from .common import apply_module, bind, cfg_bool, cfg_int, param
from .conv import conv_like
from .registry import converter

TF = "tf2torch>"


def _scales(ctx: Ctx, count: int) -> Param:
    """The weight's scales (one per output channel, or one for all) as a float32 buffer."""
    scales = ctx.config.get("weight_scale")
    if not isinstance(scales, list) or len(scales) not in (1, count) or \
            not all(isinstance(s, float) and s > 0 for s in scales):
        raise ctx.unsupported(f"weight scales {str(scales)[:60]} for {count} output channels")
    return Param("", "weight_scale", layouts.IDENTITY, const=np.asarray(scales, dtype=np.float32))


@converter(TF + "LiteHybridConv2D", TF + "LiteHybridDepthwiseConv2D", wants="cf")
def hybrid_conv(ctx: Ctx) -> Converted:
    use_bias = cfg_bool(ctx, "use_bias", True)
    w = bind(ctx, ["kernel", "bias"] if use_bias else ["kernel"])
    channels = ctx.x.shape[-1]
    if channels is None:
        raise ctx.unsupported("the number of input channels is unknown")
    if "Depthwise" in ctx.layer.class_name:
        out, groups, layout = channels * cfg_int(ctx, "depth_multiplier", 1), channels, "depthwise2d"
    else:
        out, groups, layout = cfg_int(ctx, "filters"), cfg_int(ctx, "groups", 1), "conv2d"
    if len(ctx.config.get("weight_scale") or ()) != out:
        raise ctx.unsupported("a hybrid convolution with one weight scale for all channels",
                              "LiteRT quantizes such inputs symmetrically (EvalHybrid); not emulated yet")
    bias = param("", "bias", w["bias"]) if use_bias else None
    return conv_like(ctx, 2, out, groups, param("", "weight", w["kernel"], layout), bias,
                      cls="TFLiteHybridConv2d", more=(_scales(ctx, out),))


@converter(TF + "LiteHybridDense", wants="keras", accepts_flat=True)
def hybrid_dense(ctx: Ctx) -> Converted:
    use_bias = cfg_bool(ctx, "use_bias", True)
    w = bind(ctx, ["kernel", "bias"] if use_bias else ["kernel"])
    units = cfg_int(ctx, "units")
    x = ctx.x
    kernel = layouts.get("dense")
    notes: tuple[str, ...] = ()
    if x.layout == "cf_flat":  # fed by a channels-first Flatten: the kernel's rows reordered, as for Dense
        *spatial, channels = x.flat_from
        kernel = layouts.dense_after_flatten(tuple(spatial), channels)
        notes = (f"kernel rows reordered for a channels-first Flatten of {tuple(x.flat_from)}",)
    scales = _scales(ctx, units)
    asymmetric = cfg_bool(ctx, "asymmetric", False)
    kwargs = (("bias", use_bias), ("asymmetric", asymmetric)) + ((("per_channel", False),) if
                                                                   scales.const.shape == (1,) else ())  # type: ignore[union-attr]
    module = apply_module(Module("TFLiteHybridLinear", (x.shape[-1], units), kwargs))
    params = [param("", "weight", w["kernel"], kernel), scales]
    if use_bias:
        params.append(param("", "bias", w["bias"]))
    return Converted((module,), (TensorInfo((*x.shape[:-1], units), "keras"),), tuple(params), notes=notes,
                     helpers=("TFLiteHybridLinear",))
