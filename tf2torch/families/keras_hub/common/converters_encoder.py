"""keras-hub's TransformerEncoder and TransformerDecoder (and Whisper's subclasses) as the helpers
``KerasHubTransformerEncoder`` / ``KerasHubTransformerDecoder`` / ``KerasHubCrossAttentionDecoder`` (their
MultiHeadAttention is ``KerasMultiHeadAttention``), with the padding masks keras-hub's models pass."""

from __future__ import annotations

from typing import Any

from ....codegen import nodes as n
from ....layers.attention import check_masked_semantics
from ....layers.base import Converted, Ctx, Module, Op, TensorInfo
from ....layers.common import cfg_bool, cfg_float, cfg_int, param
from ....layers.registry import converter
from ....map import layouts
from ....spec import TensorRef
from .converters import HUB, sublayer_weights

# Keras activation (as saved) -> the name the helper builds it from.
_ACTIVATIONS = {"relu": "relu", "gelu": "gelu", "silu": "silu", "swish": "silu", "tanh": "tanh",
                "keras_hub>gelu_approximate": "gelu_tanh"}


def activation_name(ctx: Ctx, value: Any) -> str:
    name = value.get("config") if isinstance(value, dict) else value
    if not isinstance(name, str) or name not in _ACTIVATIONS:
        raise ctx.unsupported(f"activation {value!r} (supported: {', '.join(sorted(_ACTIVATIONS))})")
    return _ACTIVATIONS[name]


def padding_mask(ctx: Ctx, keyword: str, allowed: dict[str, Any]) -> bool:
    """Whether the block is called on one (N, T, D) tensor with a padding mask (by ``keyword``)."""
    args = tensor_args(ctx, ("inputs",), {keyword}, allowed)
    if set(args) - {"inputs", keyword} or "inputs" not in args:
        raise ctx.unsupported(f"expected an (N, T, D) input and optionally {keyword}, found {sorted(args)}")
    return keyword in args


def tensor_args(ctx: Ctx, positional: tuple[str, ...], keywords: set[str], allowed: dict[str, Any],
                ranks: dict[str, int] | None = None) -> dict[str, int]:
    """Which of ``ctx.inputs`` each tensor argument is: the positional ones by ``positional``, then the
    keyword tensors (the reader lists them after, by sorted name). Any other non-default argument is
    refused by name: the block would compute something else. Ranks (batch included) are checked: by
    ``ranks``, else 2 for a ``…mask`` and 3 (features known) for a sequence."""
    kwargs = ctx.call.kwargs
    tensors = sorted(k for k, v in kwargs.items() if isinstance(v, TensorRef))
    others = sorted(k for k, v in kwargs.items()
                    if k not in tensors and v is not None and allowed.get(k, None) != v and k != "training")
    unknown = [k for k in tensors if k not in keywords and k not in positional]
    if others or unknown:
        raise ctx.unsupported(f"called with {', '.join(others + unknown)}; supported: "
                              f"{', '.join([*positional, *sorted(keywords)])}")
    count = len(ctx.inputs) - len(tensors)
    if count > len(positional):
        raise ctx.unsupported(f"called with {len(ctx.inputs)} tensors")
    found = {name: i for i, name in enumerate(positional[:count])}
    found.update({name: count + i for i, name in enumerate(tensors)})
    for name, i in found.items():
        info, mask = ctx.inputs[i], name.endswith("mask")
        rank = (ranks or {}).get(name, 2 if mask else 3)
        if info.rank != rank or (not mask and rank == 3 and info.shape[-1] is None):
            raise ctx.unsupported(f"{name} of shape (N, {', '.join(map(str, info.shape))}); expected rank {rank}")
    return found


_ENCODERS = (HUB + "TransformerEncoder", HUB + "WhisperEncoder")
_DECODERS = (HUB + "TransformerDecoder", HUB + "WhisperDecoder")


def _attention(w: dict, ours: str, theirs: str) -> list:
    """One KerasMultiHeadAttention's state_dict entries from a Keras MultiHeadAttention's sublayers."""
    params = []
    for sub in ("query", "key", "value"):
        kernel, *bias = w[f"{theirs}/{sub}_dense"]
        params.append(param("", f"{ours}.{sub}.weight", kernel, "mha_in_kernel"))
        params += [param("", f"{ours}.{sub}.bias", b, "mha_in_bias") for b in bias]
    kernel, bias = w[f"{theirs}/output_dense"]
    return params + [param("", f"{ours}.attention_output.weight", kernel, "mha_out_kernel"),
                     param("", f"{ours}.attention_output.bias", bias, layouts.IDENTITY)]


@converter(*_ENCODERS, *_DECODERS, wants="keras")
def transformer_block(ctx: Ctx) -> Converted:
    """keras-hub's TransformerEncoder / TransformerDecoder and Whisper's subclasses of them (whose key
    projections have no bias). A decoder called with an encoder sequence has cross-attention."""
    decoder = ctx.layer.class_name in _DECODERS
    whisper = ctx.layer.class_name.startswith(HUB + "Whisper")
    if decoder:
        args = tensor_args(ctx, ("decoder_sequence", "encoder_sequence"), {"decoder_padding_mask"},
                           {"use_causal_mask": True})
        x_name, mask_name = "decoder_sequence", "decoder_padding_mask"
    else:
        args = tensor_args(ctx, ("inputs",), {"padding_mask"}, {"return_attention_scores": False})
        x_name, mask_name = "inputs", "padding_mask"
    if x_name not in args:
        raise ctx.unsupported(f"called without {x_name}")
    cross = "encoder_sequence" in args
    if mask_name in args:
        check_masked_semantics(ctx, f"{ctx.layer.class_name.removeprefix(HUB)} with a padding mask")
    x = ctx.inputs[args[x_name]]
    hidden, inner, heads = x.shape[-1], cfg_int(ctx, "intermediate_dim"), cfg_int(ctx, "num_heads")
    if hidden % heads:
        raise ctx.unsupported(f"hidden size {hidden} is not a multiple of num_heads={heads}")
    epsilon, first = cfg_float(ctx, "layer_norm_epsilon", 1e-5), cfg_bool(ctx, "normalize_first", False)
    act = activation_name(ctx, ctx.config.get("activation", "relu"))
    key_vars = 1 if whisper else 2
    attention = {"self_attention_layer"} | ({"cross_attention_layer"} if cross else set())
    expected = {f"{a}/{s}_dense": key_vars if s == "key" else 2 for a in attention
                for s in ("query", "key", "value", "output")}
    expected.update({f"{a}_norm": 2 for a in attention})
    expected.update({"feedforward_intermediate_dense": 2, "feedforward_output_dense": 2, "feedforward_layer_norm": 2})
    w = sublayer_weights(ctx, expected)
    params = _attention(w, "self_attention", "self_attention_layer")
    norms = [("self_attention_norm", "self_attention_layer_norm", "identity"),
             ("intermediate", "feedforward_intermediate_dense", "dense"),
             ("output", "feedforward_output_dense", "dense"), ("feedforward_norm", "feedforward_layer_norm", "identity")]
    if cross:
        params += _attention(w, "cross_attention", "cross_attention_layer")
        norms.append(("cross_attention_norm", "cross_attention_layer_norm", "identity"))
    for ours, theirs, kind in norms:
        weight, bias = w[theirs]
        params += [param("", f"{ours}.weight", weight, kind), param("", f"{ours}.bias", bias)]
    cls = "KerasHubCrossAttentionDecoder" if cross else "KerasHubTransformerDecoder" if decoder else \
        "KerasHubTransformerEncoder"
    # the attention layers take the block's dropout: none means Keras 3's fused attention (uniform masked rows)
    fused = not ctx.config.get("dropout")
    kwargs = (*((("normalize_first", True),) if first else ()), *((("key_bias", False),) if whisper else ()),
              *((("uniform_when_masked", True),) if fused else ()))
    module = Module(cls, (hidden, inner, heads, act, epsilon), kwargs)
    call = n.call(n.M, n.arg(args[x_name]), *([n.arg(args["encoder_sequence"])] if cross else []),
                  **({"padding_mask": n.arg(args[mask_name])} if mask_name in args else {}))
    helpers = ("KerasMultiHeadAttention", "KerasHubTransformerEncoder",
               *(("KerasHubTransformerDecoder",) if decoder else ()), *((cls,) if cross else ()))
    return Converted((Op(call, module),), (x,), tuple(params), helpers=helpers)


@converter("keras_hub.src.models.whisper.whisper_backbone>Padder", wants="keras")
def whisper_padder(ctx: Ctx) -> Converted:
    """Whisper's Padder: ops.pad(x, [[0, 0], [1, 1], [0, 0]]), one zero step before and after."""
    if ctx.x.rank != 3 or len(ctx.inputs) != 1:
        raise ctx.unsupported(f"expected an (N, T, D) input, found {[i.shape for i in ctx.inputs]}")
    steps = None if ctx.x.shape[0] is None else ctx.x.shape[0] + 2
    return Converted((Op(n.call("F.pad", n.X, [0, 0, 1, 1])),), (TensorInfo((steps, ctx.x.shape[1])),))
