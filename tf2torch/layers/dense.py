"""Dense and Embedding."""

from __future__ import annotations

from ..codegen import nodes as n
from ..map import layouts
from .base import Converted, Ctx, Module, Op, TensorInfo
from .common import activation_ops, apply_module, bind, cfg_bool, cfg_int, param
from .registry import converter


@converter("Dense", wants="keras", accepts_flat=True)
def dense(ctx: Ctx) -> Converted:
    use_bias = cfg_bool(ctx, "use_bias", True)
    w = bind(ctx, ["kernel", "bias"] if use_bias else ["kernel"])
    units = cfg_int(ctx, "units")
    x = ctx.x
    if x.layout == "cf_flat":
        # Fed by a channels-first Flatten: permute the kernel rows (HWC -> CHW order) once, here,
        # instead of permuting activations at every call.
        *spatial, channels = x.flat_from
        kernel = layouts.dense_after_flatten(tuple(spatial), channels)
        note = f"kernel rows reordered for a channels-first Flatten of {tuple(x.flat_from)}"
    else:
        kernel, note = layouts.get("dense"), ""
    out = TensorInfo((*x.shape[:-1], units), "keras")
    module = apply_module(Module("nn.Linear", (x.shape[-1], units), (("bias", use_bias),)))
    params = [param("", "weight", w["kernel"], kernel)]
    if use_bias:
        params.append(param("", "bias", w["bias"]))
    return Converted((module, *activation_ops(ctx, ctx.config.get("activation"), out)), (out,), tuple(params),
                     notes=(note,) if note else ())


@converter("Embedding", wants="keras")
def embedding(ctx: Ctx) -> Converted:
    w = bind(ctx, ["embeddings"])
    dim = cfg_int(ctx, "output_dim")
    vocab = cfg_int(ctx, "input_dim")
    # mask_zero: the mask (ids != 0) is made by the graph walker and read by the layers after it (masks.py)
    notes = ()
    out = TensorInfo((*ctx.x.shape, dim), "keras")
    op = Op(n.call(n.M, n.X.m("long")), Module("nn.Embedding", (vocab, dim)))  # Keras casts indices; torch needs int64
    return Converted((op,), (out,), (param("", "weight", w["embeddings"]),), notes=notes)
