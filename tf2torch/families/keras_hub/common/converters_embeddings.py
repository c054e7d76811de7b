"""ReversibleEmbedding (Keras >= 3.12; keras-hub's token embedding), keras-hub's PositionEmbedding and
TokenAndPositionEmbedding, as the helpers of ``families/keras_hub/common/runtime.py``."""

from __future__ import annotations

from ....codegen import nodes as n
from ....layers.base import Converted, Ctx, Module, Op, TensorInfo
from ....layers.common import apply_module, bind, cfg_bool, cfg_int, param
from ....layers.registry import converter
from ....readers.keras_calls import ARGS_KWARG
from .converters import HUB, shared_module, sublayer_weights


def _plain_call(ctx: Ctx, allowed: tuple[str, ...] = ()) -> None:
    extra = sorted(k for k, v in ctx.call.kwargs.items()
                   if k != ARGS_KWARG and k not in allowed and v not in (None, 0, False))
    if extra or len(ctx.inputs) != 1:
        raise ctx.unsupported(f"called with {', '.join(extra) or f'{len(ctx.inputs)} tensors'}; only a plain "
                              "call on one tensor is supported")


def _tied(ctx: Ctx) -> bool:
    """Whether the reverse projection is the embedding itself (else a second, (dim, vocab) weight)."""
    if ctx.config.get("quantization_config") is not None:
        raise ctx.unsupported("a quantized embedding", "convert the float model")
    if ctx.config.get("mask_zero") is True:
        raise ctx.unsupported("mask_zero=True (the mask it makes is not propagated through keras-hub layers)")
    return cfg_bool(ctx, "tie_weights", True)


@converter("ReversibleEmbedding", wants="keras")
def reversible_embedding(ctx: Ctx) -> Converted:
    """A call on token ids embeds them; ``reverse=True`` (a causal LM's logits) projects hidden states
    onto the vocabulary with the same module and weights."""
    reverse = ctx.call.kwargs.get("reverse") is True
    _plain_call(ctx, allowed=("reverse",))
    shared = shared_module(ctx, ctx.config)
    if shared is not None:  # a causal LM's reverse call of its backbone's embedding (families/keras_hub/tasks/builder.py)
        if not reverse:
            raise ctx.unsupported("a shared embedding called forwards", "the file does not match its own config")
        vocab = cfg_int(ctx, "input_dim")
        return Converted((Op(shared[1].m("reverse", n.X), shares=shared[0]),),
                         (TensorInfo((*ctx.x.shape[:-1], vocab)),))
    tie = _tied(ctx)
    vocab, dim = cfg_int(ctx, "input_dim"), cfg_int(ctx, "output_dim")
    cap = ctx.config.get("logit_soft_cap")
    if cap is not None and (isinstance(cap, bool) or not isinstance(cap, (int, float))):
        raise ctx.unsupported(f"config 'logit_soft_cap' should be a number, found {cap!r}")
    w = bind(ctx, ["embeddings"] if tie else ["embeddings", "reverse_embeddings"])
    params = [param("", "weight", w["embeddings"])]
    if not tie:  # used by reverse() only (a task's logits); kept so no weight is dropped
        params.append(param("", "reverse_embeddings", w["reverse_embeddings"]))
    kwargs = (*((("tie_weights", False),) if not tie else ()), *((("logit_soft_cap", float(cap)),) if cap else ()))
    module = Module("KerasReversibleEmbedding", (vocab, dim), kwargs)
    if reverse:
        if ctx.x.shape[-1] != dim:
            raise ctx.unsupported(f"reverse=True on a tensor of shape {ctx.x.shape}, expected a last axis of {dim}")
        return Converted((Op(n.M.m("reverse", n.X), module),), (TensorInfo((*ctx.x.shape[:-1], vocab)),), tuple(params),
                         helpers=("KerasReversibleEmbedding",))
    return Converted((apply_module(module),), (TensorInfo((*ctx.x.shape, dim)),), tuple(params),
                     helpers=("KerasReversibleEmbedding",))


@converter(HUB + "PositionEmbedding", wants="keras")
def position_embedding(ctx: Ctx) -> Converted:
    _plain_call(ctx)  # start_index / positions (cached decoding, serving) are refused by name
    length, dim = cfg_int(ctx, "sequence_length"), ctx.x.shape[-1]
    if ctx.x.rank != 3 or dim is None:
        raise ctx.unsupported(f"expected an (N, T, D) input with D known, found {ctx.x.shape}")
    w = bind(ctx, ["embeddings"])
    if tuple(w["embeddings"].shape) != (length, dim):
        raise ctx.unsupported(f"position embeddings of shape {w['embeddings'].shape}, expected {(length, dim)}")
    module = Module("KerasHubPositionEmbedding", (length, dim))
    return Converted((apply_module(module),), (ctx.x,), (param("", "position_embeddings", w["embeddings"]),),
                     helpers=("KerasHubPositionEmbedding",))


@converter(HUB + "TokenAndPositionEmbedding", wants="keras")
def token_and_position_embedding(ctx: Ctx) -> Converted:
    _plain_call(ctx)
    tie = _tied(ctx)
    vocab, length, dim = (cfg_int(ctx, k) for k in ("vocabulary_size", "sequence_length", "embedding_dim"))
    w = sublayer_weights(ctx, {"token_embedding": 1 if tie else 2, "position_embedding": 1})
    params = [param("", "token_embedding.weight", w["token_embedding"][0]),
              param("", "position_embedding.position_embeddings", w["position_embedding"][0])]
    if not tie:
        params.append(param("", "token_embedding.reverse_embeddings", w["token_embedding"][1]))
    module = Module("KerasHubTokenAndPositionEmbedding", (vocab, length, dim), () if tie else (("tie_weights", False),))
    return Converted((apply_module(module),), (TensorInfo((*ctx.x.shape, dim)),), tuple(params),
                     helpers=("KerasReversibleEmbedding", "KerasHubPositionEmbedding",
                              "KerasHubTokenAndPositionEmbedding"))
