"""keras-hub's MaskedLMHead, tied to its Task's token embedding, as ``KerasHubMaskedLMHead``
(``families/keras_hub/tasks/runtime.py``).

keras-hub's MaskedLM tasks hand the head the backbone's ``token_embedding`` object; Keras saves that
layer's weights once, with the backbone, and none of it under the head. The Task's builder
(``families/keras_hub/tasks/builder_lm.py``) writes the head's ``token_embedding`` as the place of that layer in the
graph, ``{"shared": [backbone, layer]}``, or ``[backbone, layer, "token_embedding"]`` for the token embedding
inside a TokenAndPositionEmbedding (RoBERTa, DistilBERT); the generated head calls that module (``Op.shares``),
so the model has one embedding weight, as keras-hub's has.
"""

from __future__ import annotations

from typing import Any

from ....codegen import nodes as n
from ....layers.base import Converted, Ctx, Module, Op, TensorInfo
from ....layers.common import cfg_float, cfg_int, param
from ....layers.registry import converter
from ..common.converters import HUB, shared_module, sublayer_weights
from ..common.converters_encoder import activation_name, tensor_args


def _shared(ctx: Ctx) -> tuple[tuple[str, str], n.Expr]:
    """(the layer path ``Op.shares`` resolves, the module to call) of the tied embedding."""
    entry: Any = ctx.config.get("token_embedding")
    shared = shared_module(ctx, entry)
    if shared is None:
        # a head with its own embedding (or none: an output kernel) is a MaskedLMHead used outside keras-hub's
        # MaskedLM tasks, whose tied weights the Task builders place
        raise ctx.unsupported(f"token_embedding {str(entry)[:80]}: only the head of a keras-hub MaskedLM task "
                              "(tied to its backbone's token embedding) is supported")
    return shared


@converter(HUB + "MaskedLMHead", wants="keras")
def masked_lm_head(ctx: Ctx) -> Converted:
    args = tensor_args(ctx, ("inputs", "mask_positions"), set(), {}, ranks={"mask_positions": 2})
    if set(args) != {"inputs", "mask_positions"}:
        raise ctx.unsupported(f"expected an (N, T, D) input and mask_positions, found {sorted(args)}")
    shares, embedding = _shared(ctx)
    x, positions = ctx.inputs[args["inputs"]], ctx.inputs[args["mask_positions"]]
    output = ctx.config.get("activation")
    if output not in (None, "linear"):  # keras-hub's tasks return logits
        raise ctx.unsupported(f"activation {output!r}: only logits (activation None) are supported")
    vocabulary = cfg_int(ctx, "vocabulary_size")
    activation = activation_name(ctx, ctx.config.get("intermediate_activation", "relu"))
    epsilon = cfg_float(ctx, "layer_norm_epsilon", 1e-5)
    # keras-hub saves the head's own variables (the output bias) after its two sublayers'
    w = sublayer_weights(ctx, {"intermediate_dense": 2, "intermediate_layer_norm": 2, "": 1})
    kernel, dense_bias = w["intermediate_dense"]
    gamma, beta = w["intermediate_layer_norm"]
    (bias,) = w[""]
    # the Dense widens or narrows to the embedding's width (ALBERT's embedding is narrower than its encoder)
    hidden, features = kernel.shape
    if hidden != x.shape[-1] or tuple(bias.shape) != (vocabulary,) or tuple(gamma.shape) != (features,):
        raise ctx.unsupported(f"weights of shapes {kernel.shape}, {gamma.shape}, {bias.shape} for an input of "
                              f"{x.shape[-1]} features and vocabulary_size={vocabulary}")
    params = (param("", "dense.weight", kernel, "dense"), param("", "dense.bias", dense_bias),
              param("", "norm.weight", gamma), param("", "norm.bias", beta), param("", "bias", bias))
    module = Module("KerasHubMaskedLMHead", (hidden, features, vocabulary, activation, epsilon))
    call = n.call(n.M, n.arg(args["inputs"]), n.arg(args["mask_positions"]), embedding)
    return Converted((Op(call, module, shares=shares),), (TensorInfo((*positions.shape, vocabulary)),), params,
                     helpers=("KerasHubMaskedLMHead",))
