"""MultiHeadAttention, as the inlined helper ``KerasMultiHeadAttention`` (four ``nn.Linear`` named after
Keras's sublayers: query, key, value, attention_output; the attention math in its forward)."""

from __future__ import annotations

from typing import Any

from ..codegen import nodes as n
from ..map import layouts
from ..spec import TensorRef, Variable
from .base import Converted, Ctx, Module, Op, Param, TensorInfo
from .common import cfg_bool, cfg_int, param, weight_path
from .registry import converter

_ROLES = ("query", "value", "key")  # call(query, value, key=None, ...): the positional order
# Keras sublayer -> our Linear. Keras 2 and legacy .h5 name the sublayers ("mha/query/kernel");
# Keras 3 .keras files use the attributes ("multi_head_attention/query_dense/vars/0"), sorted by name.
_SUBLAYERS = {"query": "query", "key": "key", "value": "value", "attention_output": "attention_output",
              "query_dense": "query", "key_dense": "key", "value_dense": "value",
              "output_dense": "attention_output"}
_MASKS = ("attention_mask", "query_mask", "value_mask", "key_mask")


def attention_roles(ctx: Ctx) -> dict[str, int]:
    """Which of ``ctx.inputs`` is the query, value and key.

    ``LayerCall.inputs`` lists the positional tensors, then the keyword tensors by sorted name. Keras 3
    writes ``mha(q, v)`` positionally; Keras 2 saves the first argument positionally and ``value``/``key``
    as keyword tensors (so its inputs read query, key, value).
    """
    kwargs = ctx.call.kwargs
    masks = [k for k in _MASKS if isinstance(kwargs.get(k), TensorRef)]
    if masks:
        raise ctx.unsupported(f"called with {', '.join(masks)}: attention masks are not supported",
                              "call the layer without a mask, or use use_causal_mask=True if that is the mask")
    keyword = sorted(k for k, v in kwargs.items() if isinstance(v, TensorRef))
    unknown = [k for k in keyword if k not in _ROLES]
    if unknown:
        raise ctx.unsupported(f"called with tensor argument(s) {', '.join(unknown)}, which are not supported")
    positional = len(ctx.inputs) - len(keyword)
    free = [r for r in _ROLES if r not in keyword]
    if positional < 0 or positional > len(free):
        raise ctx.unsupported(f"called with {len(ctx.inputs)} tensors; expected query, value and optionally key")
    roles = dict(zip(free[:positional], range(positional), strict=True))
    roles.update({k: positional + i for i, k in enumerate(keyword)})
    if "query" not in roles or "value" not in roles:
        raise ctx.unsupported(f"called without {'query' if 'query' not in roles else 'value'}")
    return roles


def check_masked_semantics(ctx: Ctx, what: str) -> None:
    """Refuse masked attention from files saved before Keras 3.10: fully masked rows (every padded
    query) got uniform weights there, zero weights since (uniform still in the fused path). tf2torch
    follows Keras >= 3.10 (checked against 3.15)."""
    if ctx.keras_version == 2 or ctx.keras_release is None or ctx.keras_release < (3, 10):
        saved = ".".join(map(str, ctx.keras_release)) if ctx.keras_release else "an unknown Keras version"
        raise ctx.unsupported(f"{what}, saved by {saved}: Keras computes padded positions differently before "
                              "3.10, and tf2torch follows Keras >= 3.10",
                              "re-save the model with Keras >= 3.10, or drop the mask")


def _keras_masks(ctx: Ctx, roles: dict[str, int]) -> dict[str, n.Expr]:
    """The Keras masks the inputs carry (from Embedding(mask_zero=True) or Masking), as Keras 3 passes them:
    the query's and the value's, and the key's when a key other than the value is given."""
    masked = {role: ctx.inputs[i].mask for role, i in roles.items() if ctx.inputs[i].mask}
    if not masked:
        return {}
    check_masked_semantics(ctx, "MultiHeadAttention on masked inputs (from mask_zero or Masking)")
    if roles.get("key") == roles["value"]:
        masked.pop("key", None)
    return {f"{role}_mask": n.Name(mask) for role, mask in masked.items()}  # the locals holding the masks


def _bind(ctx: Ctx, use_bias: bool) -> dict[tuple[str, str], Variable]:
    """The weights by (our Linear, "kernel" | "bias"), from sublayer names, never from saved order."""
    found: dict[tuple[str, str], Variable] = {}
    for var in ctx.layer.weights:
        path = weight_path(var)
        if len(path) >= 3 and path[-2] == "vars" and path[-1].isdigit():  # .keras: vars/0 kernel, vars/1 bias
            sub, leaf = path[-3], {"0": "kernel", "1": "bias"}.get(path[-1], path[-1])
        else:
            sub, leaf = (path[-2] if len(path) >= 2 else ""), path[-1]
        if sub not in _SUBLAYERS or leaf not in ("kernel", "bias") or (_SUBLAYERS[sub], leaf) in found:
            raise ctx.unsupported(f"unexpected weight {var.name!r} (expected query/key/value/attention_output "
                                  "kernels and biases)", "re-save the model")
        found[(_SUBLAYERS[sub], leaf)] = var
    wanted = [(s, leaf) for s in ("query", "key", "value", "attention_output")
              for leaf in (("kernel", "bias") if use_bias else ("kernel",))]
    missing = [f"{s}/{leaf}" for s, leaf in wanted if (s, leaf) not in found]
    if missing or len(found) != len(wanted):
        raise ctx.unsupported(f"expected {len(wanted)} weights, found {len(found)} (missing: "
                              f"{', '.join(missing) or 'none'})", "the file does not match its own config")
    return found


def _output_dim(ctx: Ctx, query_dim: int) -> int:
    value: Any = ctx.config.get("output_shape")
    if value is None:
        return query_dim
    if isinstance(value, (list, tuple)) and len(value) == 1:
        value = value[0]
    if isinstance(value, bool) or not isinstance(value, int):
        raise ctx.unsupported(f"output_shape={ctx.config.get('output_shape')!r}; "
                              "only one output size (attention over the last axis) is supported")
    return value


def _check_config(ctx: Ctx) -> None:
    axes = ctx.config.get("attention_axes")
    if axes not in (None, 1, -2, [1], [-2]):
        raise ctx.unsupported(f"attention_axes={axes!r}; only attention over the sequence axis (1) is supported")
    if ctx.config.get("use_gate"):
        raise ctx.unsupported("use_gate=True is not supported")
    if ctx.config.get("sliding_window") is not None:
        raise ctx.unsupported("sliding_window is not supported")


@converter("MultiHeadAttention", wants="keras")
def multi_head_attention(ctx: Ctx) -> Converted:
    _check_config(ctx)
    roles = attention_roles(ctx)
    for role, i in roles.items():
        info = ctx.inputs[i]
        if info.rank != 3 or info.shape[-1] is None:
            raise ctx.unsupported(f"{role} should have shape (N, T, D) with D known, found rank {info.rank} "
                                  f"{info.shape}")
    heads, key_dim = cfg_int(ctx, "num_heads"), cfg_int(ctx, "key_dim")
    value_dim = key_dim if ctx.config.get("value_dim") is None else cfg_int(ctx, "value_dim")
    use_bias = cfg_bool(ctx, "use_bias", True)
    query, value = ctx.inputs[roles["query"]], ctx.inputs[roles["value"]]
    key = ctx.inputs[roles.get("key", roles["value"])]
    out_dim = _output_dim(ctx, query.shape[-1])
    scores = ctx.call.kwargs.get("return_attention_scores", False) is True
    causal = ctx.call.kwargs.get("use_causal_mask", False) is True

    w = _bind(ctx, use_bias)
    params: list[Param] = []
    for sub in ("query", "key", "value"):
        params.append(param("", f"{sub}.weight", w[(sub, "kernel")], "mha_in_kernel"))
        if use_bias:
            params.append(param("", f"{sub}.bias", w[(sub, "bias")], "mha_in_bias"))
    params.append(param("", "attention_output.weight", w[("attention_output", "kernel")], "mha_out_kernel"))
    if use_bias:
        params.append(param("", "attention_output.bias", w[("attention_output", "bias")], layouts.IDENTITY))

    # Keras 3 runs a layer without dropout through its fused attention, whose fully masked rows are uniform
    fused = not scores and not ctx.config.get("dropout")
    keras_masks = _keras_masks(ctx, roles)
    module = Module("KerasMultiHeadAttention", (query.shape[-1], key.shape[-1], value.shape[-1]), (
        ("num_heads", heads), ("key_dim", key_dim), ("value_dim", value_dim), ("output_dim", out_dim),
        *((("use_bias", False),) if not use_bias else ()),
        *((("uniform_when_masked", True),) if fused and keras_masks else ())))
    kwargs: dict[str, n.Expr] = {"key": n.arg(roles["key"])} if "key" in roles else {}
    if causal:
        kwargs["use_causal_mask"] = n.lit(True)
    kwargs.update(keras_masks)
    if scores:
        kwargs["return_attention_scores"] = n.lit(True)
    outputs = [TensorInfo((query.shape[0], out_dim))]
    if scores:
        outputs.append(TensorInfo((heads, query.shape[0], key.shape[0])))
    return Converted((Op(n.call(n.M, n.arg(roles["query"]), n.arg(roles["value"]), **kwargs), module),), tuple(outputs), tuple(params),
                     helpers=("KerasMultiHeadAttention",))
