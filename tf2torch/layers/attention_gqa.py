"""GroupQueryAttention (Keras 3's grouped-query attention, as in Llama-style decoders), as the helper
``KerasGroupedQueryAttention``: its EinsumDense kernels kept in Keras's shapes, the math in its forward.
Weights bind by sublayer name (query/key/value/attention_output/gate), never by saved order."""

from __future__ import annotations

from ..codegen import nodes as n
from ..map import layouts
from ..spec import Variable
from .attention import attention_roles
from .base import Converted, Ctx, Module, Op, Param, TensorInfo
from .common import cfg_bool, cfg_int, weight_path
from .registry import converter

_SUBLAYERS = {"query": "query", "key": "key", "value": "value", "attention_output": "attention_output",
              "gate": "gate", "_query_dense": "query", "_key_dense": "key", "_value_dense": "value",
              "_output_dense": "attention_output", "_gate_dense": "gate"}


def _bind(ctx: Ctx, names: list[str], use_bias: bool) -> dict[str, Variable]:
    found: dict[str, Variable] = {}
    for var in ctx.layer.weights:
        path = weight_path(var)
        if len(path) >= 3 and path[-2] == "vars" and path[-1].isdigit():  # .keras: vars/0 kernel, vars/1 bias
            sub, leaf = path[-3], {"0": "kernel", "1": "bias"}.get(path[-1], "")
        else:
            sub, leaf = (path[-2] if len(path) >= 2 else ""), path[-1]
        key = f"{_SUBLAYERS.get(sub, '?')}_{leaf}"
        if sub not in _SUBLAYERS or leaf not in ("kernel", "bias") or key in found:
            raise ctx.unsupported(f"unexpected weight {var.name!r}", "re-save the model")
        found[key] = var
    wanted = [f"{name}_{leaf}" for name in names for leaf in (("kernel", "bias") if use_bias else ("kernel",))]
    if sorted(found) != sorted(wanted):
        raise ctx.unsupported(f"expected weights {wanted}, found {sorted(found)}", "the file does not match its config")
    return found


@converter("GroupQueryAttention", "GroupedQueryAttention", wants="keras")
def grouped_query_attention(ctx: Ctx) -> Converted:
    roles = attention_roles(ctx)
    if any(ctx.inputs[i].rank != 3 for i in roles.values()):
        raise ctx.unsupported("query, value and key should be (N, T, D)")
    if ctx.config.get("sliding_window") is not None:
        raise ctx.unsupported("sliding_window is not supported")
    if ctx.call.kwargs.get("return_attention_scores") is True:
        raise ctx.unsupported("return_attention_scores=True")
    heads, kv_heads, head_dim = (cfg_int(ctx, k) for k in ("num_query_heads", "num_key_value_heads", "head_dim"))
    use_bias, use_gate = cfg_bool(ctx, "use_bias", True), cfg_bool(ctx, "use_gate", False)
    if heads % kv_heads:
        raise ctx.unsupported(f"{heads} query heads are not a multiple of {kv_heads} key/value heads")
    names = ["query", "key", "value", "attention_output", *(["gate"] if use_gate else [])]
    w = _bind(ctx, names, use_bias)
    query = ctx.inputs[roles["query"]]
    feature = query.shape[-1]
    module = Module("KerasGroupedQueryAttention", (feature, heads, kv_heads, head_dim),
                    (("use_bias", use_bias), ("use_gate", use_gate)))
    params = tuple(Param("", key, layouts.IDENTITY, var=var) for key, var in sorted(w.items()))
    kwargs: dict[str, n.Expr] = {"key": n.arg(roles["key"])} if "key" in roles else {}
    if ctx.call.kwargs.get("use_causal_mask") is True:
        kwargs["use_causal_mask"] = n.lit(True)
    return Converted((Op(n.call(n.M, n.arg(roles["query"]), n.arg(roles["value"]), **kwargs), module),), (TensorInfo((query.shape[0], feature)),), params,
                     helpers=("KerasGroupedQueryAttention",))
