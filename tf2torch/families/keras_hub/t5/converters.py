"""keras-hub's T5TransformerLayer as ``KerasHubT5Layer`` (``families/keras_hub/t5/runtime.py``; its
T5LayerNorm converter is with the other RMS norms in ``llm.py``). A layer returns (x, position bias), and the
later layers take the first one's bias, as keras-hub passes it."""

from __future__ import annotations

from ....codegen import nodes as n
from ....layers.base import Converted, Ctx, Module, Op, TensorInfo
from ....layers.common import cfg_bool, cfg_float, cfg_int, param
from ....layers.registry import converter
from ..common.converters import HUB, sublayer_weights
from ..common.converters_encoder import activation_name, tensor_args

_KEYWORDS = ("attention_mask", "position_bias", "encoder_hidden_states", "encoder_attention_mask")


@converter(HUB + "T5TransformerLayer", wants="keras")
def t5_layer(ctx: Ctx) -> Converted:
    causal = ctx.call.kwargs.get("use_causal_mask", False)
    if not isinstance(causal, bool):
        raise ctx.unsupported(f"use_causal_mask={causal!r}")
    args = tensor_args(ctx, ("hidden_states",), set(_KEYWORDS), {"use_causal_mask": causal},
                       {"attention_mask": 3, "encoder_attention_mask": 3, "position_bias": 4})
    if "hidden_states" not in args:
        raise ctx.unsupported("called without hidden_states")
    decoder, relative = cfg_bool(ctx, "is_decoder", False), cfg_bool(ctx, "use_relative_attention_bias", False)
    if decoder != ("encoder_hidden_states" in args):
        raise ctx.unsupported("a decoder layer is called with the encoder's states, an encoder layer without")
    hidden, inner = cfg_int(ctx, "hidden_dim"), cfg_int(ctx, "intermediate_dim")
    kv_dim, heads = cfg_int(ctx, "key_value_dim"), cfg_int(ctx, "num_heads")
    gated, act = cfg_bool(ctx, "use_gated_activation", False), activation_name(ctx, ctx.config.get("activation", "relu"))
    attention = ("self_attention", "cross_attention") if decoder else ("self_attention",)
    projectors = ("query", "key", "value", "output")
    expected = {f"{a}/{p}_projector": 1 for a in attention for p in projectors}
    expected.update({f"{a}_layer_norm": 1 for a in attention})
    expected.update({"input_projector": 1, "output_projector": 1, "layer_norm": 1, **({"gate_projector": 1} if gated else {}),
                     **({"self_attention": 1} if relative else {})})
    w = sublayer_weights(ctx, expected)
    params = [param("", f"{a}.{p}.weight", w[f"{a}/{p}_projector"][0], "dense") for a in attention for p in projectors]
    params += [param("", f"{a}_layer_norm.weight", w[f"{a}_layer_norm"][0]) for a in attention]
    params += [param("", f"{p}.weight", w[p][0], "dense")
               for p in ("input_projector", "output_projector", *(("gate_projector",) if gated else ()))]
    params += [param("", "layer_norm.weight", w["layer_norm"][0])]
    if relative:
        params.append(param("", "self_attention.relative_attention_bias", w["self_attention"][0]))
    kwargs = (*((("relative_bias", True),) if relative else ()), *((("gated", False),) if not gated else ()))
    module = Module("KerasHubT5Layer", (hidden, inner, kv_dim, heads, cfg_float(ctx, "layer_norm_epsilon", 1e-6), act,
                                        decoder), kwargs)
    kwargs = {k: n.arg(args[k]) for k in _KEYWORDS if k in args}
    call = n.call(n.M, n.arg(args["hidden_states"]), **kwargs, **({"use_causal_mask": True} if causal else {}))
    steps = ctx.inputs[args["hidden_states"]].shape[0]
    keys = steps
    outputs = (ctx.inputs[args["hidden_states"]], TensorInfo((heads, steps, keys)))
    return Converted((Op(call, module),), outputs, tuple(params),
                     helpers=("KerasHubT5LayerNorm", "KerasHubT5Attention", "KerasHubT5Layer"))

