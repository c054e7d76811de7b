"""keras-hub's TransformerEncoder and TransformerDecoder (without cross-attention) as the helpers
``KerasHubTransformerEncoder`` / ``KerasHubTransformerDecoder`` (their MultiHeadAttention is
``KerasMultiHeadAttention``), with the padding mask keras-hub's models call them with."""

from __future__ import annotations

from typing import Any

from ...map import layouts
from ...spec import TensorRef
from ..base import Converted, Ctx, Module, Op
from ..common import cfg_bool, cfg_float, cfg_int, param
from ..registry import converter
from .common import HUB, sublayer_weights

# Keras activation (as saved) -> the name the helper builds it from.
_ACTIVATIONS = {"relu": "relu", "gelu": "gelu", "silu": "silu", "swish": "silu", "tanh": "tanh",
                "keras_hub>gelu_approximate": "gelu_tanh"}


def activation_name(ctx: Ctx, value: Any) -> str:
    name = value.get("config") if isinstance(value, dict) else value
    if not isinstance(name, str) or name not in _ACTIVATIONS:
        raise ctx.unsupported(f"activation {value!r} (supported: {', '.join(sorted(_ACTIVATIONS))})")
    return _ACTIVATIONS[name]


def padding_mask(ctx: Ctx, keyword: str, allowed: dict[str, Any]) -> bool:
    kwargs = ctx.call.kwargs
    others = sorted(k for k, v in kwargs.items() if k != keyword and allowed.get(k, None) != v and v is not None)
    if others:
        raise ctx.unsupported(f"called with {', '.join(others)}; only {keyword} is supported")
    masked = isinstance(kwargs.get(keyword), TensorRef)
    if len(ctx.inputs) != 1 + masked or ctx.x.rank != 3 or ctx.x.shape[-1] is None:
        raise ctx.unsupported(f"expected an (N, T, D) input and optionally a padding mask, found "
                              f"{[i.shape for i in ctx.inputs]}")
    if masked and ctx.inputs[1].rank != 2:
        raise ctx.unsupported(f"padding_mask should be (N, T), found rank {ctx.inputs[1].rank}")
    return masked


@converter(HUB + "TransformerEncoder", HUB + "TransformerDecoder", wants="keras")
def transformer_block(ctx: Ctx) -> Converted:
    decoder = ctx.layer.class_name == HUB + "TransformerDecoder"
    # A decoder called with an encoder sequence has cross-attention (its weights would also be there).
    masked = padding_mask(ctx, "decoder_padding_mask", {"use_causal_mask": True}) if decoder else \
        padding_mask(ctx, "padding_mask", {"return_attention_scores": False})
    hidden, inner, heads = ctx.x.shape[-1], cfg_int(ctx, "intermediate_dim"), cfg_int(ctx, "num_heads")
    if hidden % heads:
        raise ctx.unsupported(f"hidden size {hidden} is not a multiple of num_heads={heads}")
    epsilon, first = cfg_float(ctx, "layer_norm_epsilon", 1e-5), cfg_bool(ctx, "normalize_first", False)
    act = activation_name(ctx, ctx.config.get("activation", "relu"))
    w = sublayer_weights(ctx, {f"self_attention_layer/{s}_dense": 2 for s in ("query", "key", "value", "output")} | {
        "self_attention_layer_norm": 2, "feedforward_intermediate_dense": 2, "feedforward_output_dense": 2,
        "feedforward_layer_norm": 2})
    params = []
    for sub in ("query", "key", "value"):
        kernel, bias = w[f"self_attention_layer/{sub}_dense"]
        params += [param("", f"self_attention.{sub}.weight", kernel, "mha_in_kernel"),
                   param("", f"self_attention.{sub}.bias", bias, "mha_in_bias")]
    kernel, bias = w["self_attention_layer/output_dense"]
    params += [param("", "self_attention.attention_output.weight", kernel, "mha_out_kernel"),
               param("", "self_attention.attention_output.bias", bias, layouts.IDENTITY)]
    for ours, theirs, kind in (("self_attention_norm", "self_attention_layer_norm", "norm"),
                               ("intermediate", "feedforward_intermediate_dense", "dense"),
                               ("output", "feedforward_output_dense", "dense"),
                               ("feedforward_norm", "feedforward_layer_norm", "norm")):
        first_var, second = w[theirs]
        params += [param("", f"{ours}.weight", first_var, "dense" if kind == "dense" else "identity"),
                   param("", f"{ours}.bias", second)]
    cls = "KerasHubTransformerDecoder" if decoder else "KerasHubTransformerEncoder"
    module = Module(cls, (hidden, inner, heads, act, epsilon), (("normalize_first", True),) if first else ())
    call = "{m}({0}, padding_mask={1})" if masked else "{m}({0})"
    helpers = ("KerasMultiHeadAttention", "KerasHubTransformerEncoder", *((cls,) if decoder else ()))
    return Converted((Op(call, module),), (ctx.x,), tuple(params), helpers=helpers)
