"""Weights of a composite keras-hub layer, by the sublayer that owns them.

A Keras 3 file saves a layer's sublayers under their attribute names, in a sorted walk
(``transformer_encoder/_self_attention_layer/query_dense/vars/0``); a composite layer's converter asks
for its sublayers by those names and gets each one's variables in creation order (vars/0, vars/1 …),
never by position in the flat list.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ....codegen import nodes as n
from ....layers.base import Ctx, Param
from ....layers.common import cfg_int, name_of, param
from ....map import layouts
from ....spec import Variable

HUB = "keras_hub>"


def sublayer_weights(ctx: Ctx, expected: Mapping[str, int]) -> dict[str, tuple[Variable, ...]]:
    """``{"sub/path": (vars/0, vars/1, …)}`` for each expected sublayer path and variable count."""
    paths = [(v.tf_name or v.name).split(":")[0].split("/") for v in ctx.layer.weights]
    if not paths or any(len(p) < 3 or p[-2] != "vars" or not p[-1].isdigit() for p in paths):
        found = ", ".join((v.tf_name or v.name) for v in ctx.layer.weights[:4]) or "none"
        raise ctx.unsupported(f"expected the weights of a Keras 3 .keras file (…/<sublayer>/vars/<i>), found {found}",
                              "save the model with model.save('x.keras')")
    root = _common_prefix([p[:-2] for p in paths])
    groups: dict[str, dict[int, Variable]] = {}
    for var, path in zip(ctx.layer.weights, paths, strict=True):
        groups.setdefault("/".join(path[root:-2]).replace("/_", "/").lstrip("_"), {})[int(path[-1])] = var
    found = {k: len(v) for k, v in groups.items()}
    if found != dict(expected) or any(sorted(v) != list(range(len(v))) for v in groups.values()):
        raise ctx.unsupported(f"expected weights {dict(sorted(expected.items()))}, found {dict(sorted(found.items()))}",
                              "the file does not match its own config")
    return {k: tuple(v[i] for i in range(len(v))) for k, v in groups.items()}


def _common_prefix(paths: list[list[str]]) -> int:
    if len(paths) == 1:
        return len(paths[0]) - 1  # one sublayer: its own group is the last component
    n = 0
    while all(len(p) > n and p[n] == paths[0][n] for p in paths):
        n += 1
    return n


# the torch attribute of the sublayer a composite embedding's helper holds it under (KerasHubTokenAndPositionEmbedding)
_SUBLAYERS = {"token_embedding": "token_embedding"}  # the sublayer's attribute in the shared module


def shared_module(ctx: Ctx, entry: Any) -> tuple[tuple[str, str], n.Expr] | None:
    """Where a Task builder placed a layer keras-hub shares with its backbone (``{"shared": [backbone, layer]}``,
    or ``[backbone, layer, "token_embedding"]`` inside a TokenAndPositionEmbedding): (the layer path
    ``Op.shares`` resolves, the module to call: the hole ``n.S`` or its sublayer), or None when ``entry``
    names no shared layer."""
    path = entry.get("shared") if isinstance(entry, Mapping) else None
    if path is None:
        return None
    if not isinstance(path, list) or len(path) not in (2, 3) or not all(isinstance(p, str) and p for p in path) \
            or (len(path) == 3 and path[2] not in _SUBLAYERS):
        raise ctx.unsupported(f"shared layer {str(path)[:80]}: expected [model, layer] or [model, layer, "
                              "'token_embedding']", "the file does not match its own config")
    return (path[0], path[1]), n.Attr(n.S, _SUBLAYERS[path[2]]) if len(path) == 3 else n.S


def conv_bn_params(conv: str, bn: str, kernel: Variable, norm: tuple[Variable, ...], kind: str = "conv2d"
                   ) -> list[Param]:
    """A bias-free conv's kernel and its BatchNorm's (gamma, beta, mean, variance) under the helper's attribute
    names (``conv``, ``bn``), with the BatchNorm's counter torch keeps and Keras has not."""
    gamma, beta, mean, variance = norm
    return [param("", f"{conv}.weight", kernel, kind), param("", f"{bn}.weight", gamma), param("", f"{bn}.bias", beta),
            param("", f"{bn}.running_mean", mean), param("", f"{bn}.running_var", variance),
            Param("", f"{bn}.num_batches_tracked", layouts.IDENTITY, const=np.zeros((), dtype=np.int64))]


# keras_hub_activation's names (the helpers build the activation by name); another one (softmax, the shrinks,
# exponential) is refused
ACTIVATIONS = ("relu", "relu6", "silu", "swish", "hard_silu", "hard_swish", "hard_sigmoid", "gelu", "tanh", "sigmoid",
               "elu", "selu", "celu", "softplus", "softsign", "mish", "hard_tanh", "log_sigmoid", "tanh_shrink",
               "leaky_relu", "linear", None)


def block_activation(ctx: Ctx, activation: Any) -> str | None:
    """The name keras_hub_activation builds (the helpers' table); another activation is refused."""
    name = name_of(activation)
    if name not in ACTIVATIONS:
        raise ctx.unsupported(f"activation {activation!r} is not supported")
    return name


def gated_decoder_shape(ctx: Ctx) -> tuple[int, int, int, int]:
    """(width, intermediate width, query heads, key/value heads) of a Llama-style gated decoder block (Llama,
    Mistral, Qwen 2, Qwen3), refusing what keras-hub never builds: another activation than silu, a query head
    count that is not a multiple of the key/value heads, an input of unknown width."""
    if ctx.config.get("activation", "silu") != "silu":
        raise ctx.unsupported(f"activation {ctx.config.get('activation')!r}; keras-hub builds these blocks with silu")
    hidden, inner = ctx.x.shape[-1], cfg_int(ctx, "intermediate_dim")
    q_heads, kv_heads = cfg_int(ctx, "num_query_heads"), cfg_int(ctx, "num_key_value_heads")
    if hidden is None or q_heads % kv_heads:
        raise ctx.unsupported(f"num_query_heads={q_heads} with num_key_value_heads={kv_heads} on width {hidden}")
    return hidden, inner, q_heads, kv_heads
