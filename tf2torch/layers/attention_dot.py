"""keras.layers.Attention (Luong: dot product, or "concat" scores) and AdditiveAttention (Bahdanau),
on (N, T, D) query / value / key inputs; ``use_causal_mask`` carried over. Attention scores as a second
output and masks from an Embedding(mask_zero) are refused by name."""

from __future__ import annotations

from ..codegen import nodes as n
from ..map import layouts
from .base import Converted, Ctx, Module, Op, Param, TensorInfo
from .common import cfg_bool
from .registry import converter


@converter("Attention", "AdditiveAttention", wants="keras", weights=("scale", "concat_score_weight"))
def attention(ctx: Ctx) -> Converted:
    if len(ctx.inputs) not in (2, 3) or any(i.rank != 3 for i in ctx.inputs):
        raise ctx.unsupported(f"expected [query, value] or [query, value, key] of rank 3, found "
                              f"{[i.rank for i in ctx.inputs]}")
    if ctx.call.kwargs.get("return_attention_scores") is True:
        raise ctx.unsupported("return_attention_scores=True")
    if ctx.call.kwargs.get("mask") is not None:
        raise ctx.unsupported("a mask (masks are not propagated)")
    additive = ctx.layer.class_name == "AdditiveAttention"
    mode = "additive" if additive else ctx.config.get("score_mode", "dot")
    if mode not in ("dot", "concat", "additive"):
        raise ctx.unsupported(f"score_mode {mode!r}")
    use_scale = cfg_bool(ctx, "use_scale", True if additive else False)
    names = (["scale"] if use_scale else []) + (["concat_score_weight"] if mode == "concat" else [])
    weights = list(ctx.layer.weights)
    if len(weights) != len(names):
        raise ctx.unsupported(f"expected weights {names}, found {len(weights)}")
    dim = ctx.inputs[0].shape[-1]
    module = Module("KerasAttention", (mode, use_scale, dim if additive else None))
    params = tuple(Param("", name, layouts.IDENTITY, var=w) for name, w in zip(names, weights))
    kwargs: dict[str, n.Expr] = {"key": n.arg(2)} if len(ctx.inputs) == 3 else {}
    if ctx.call.kwargs.get("use_causal_mask") is True:
        kwargs["use_causal_mask"] = n.lit(True)
    out = TensorInfo((ctx.inputs[0].shape[0], ctx.inputs[1].shape[-1]), "keras")
    return Converted((Op(n.call(n.M, n.arg(0), n.arg(1), **kwargs), module),), (out,), params,
                     helpers=("KerasAttention",))
