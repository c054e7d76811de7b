"""Helper modules for keras-hub's layers (and Keras's ReversibleEmbedding), inlined by source into
generated files like ``runtime/keras_layers.py``'s: each depends only on torch / nn and on the helpers there."""

from __future__ import annotations

import torch
from torch import nn

from tf2torch.runtime.keras_layers import KerasMultiHeadAttention


class KerasReversibleEmbedding(nn.Embedding):
    """keras.layers.ReversibleEmbedding: an embedding of token ids; ``reverse()`` turns hidden states
    into vocabulary logits with the embedding transposed (or, with ``tie_weights=False``, a (dim, vocab)
    matrix of its own), soft-capped by tanh when ``logit_soft_cap`` is set."""

    def __init__(self, num_embeddings, embedding_dim, tie_weights=True, logit_soft_cap=None):
        super().__init__(num_embeddings, embedding_dim)
        self.reverse_embeddings = None if tie_weights else nn.Parameter(torch.zeros(embedding_dim, num_embeddings))
        self.logit_soft_cap = logit_soft_cap

    def forward(self, ids):
        return super().forward(ids.long())  # Keras casts ids; torch wants int64

    def reverse(self, x):
        logits = x @ (self.weight.t() if self.reverse_embeddings is None else self.reverse_embeddings)
        if self.logit_soft_cap is not None:
            logits = torch.tanh(logits / self.logit_soft_cap) * self.logit_soft_cap
        return logits


class KerasHubPositionEmbedding(nn.Module):
    """keras_hub.layers.PositionEmbedding: the first T of its learned (sequence_length, dim) rows,
    broadcast to the (N, T, dim) input (which only gives the shape)."""

    def __init__(self, sequence_length, dim):
        super().__init__()
        self.sequence_length = sequence_length
        self.position_embeddings = nn.Parameter(torch.zeros(sequence_length, dim))

    def forward(self, x):
        if x.shape[-2] > self.sequence_length:
            raise ValueError(f"{x.shape[-2]} steps, but the position embedding holds {self.sequence_length}")
        return self.position_embeddings[: x.shape[-2]].expand(x.shape)


class KerasHubTokenAndPositionEmbedding(nn.Module):
    """keras_hub.layers.TokenAndPositionEmbedding: token embedding + position embedding."""

    def __init__(self, vocabulary_size, sequence_length, dim, tie_weights=True):
        super().__init__()
        self.token_embedding = KerasReversibleEmbedding(vocabulary_size, dim, tie_weights)
        self.position_embedding = KerasHubPositionEmbedding(sequence_length, dim)

    def forward(self, ids):
        tokens = self.token_embedding(ids)
        return tokens + self.position_embedding(tokens)


class KerasHubTransformerEncoder(nn.Module):
    """keras_hub.layers.TransformerEncoder: self-attention then a two-layer feed-forward, each with a
    residual and a LayerNorm (after it, or before it with ``normalize_first``). ``padding_mask`` (N, T)
    masks keys as keras-hub does: cast to int32, kept where > 0 (``uniform_when_masked``: the layer has no
    dropout, so Keras runs its fused attention; see KerasMultiHeadAttention)."""

    def __init__(self, hidden, intermediate, num_heads, activation, epsilon, normalize_first=False, key_bias=True,
                 uniform_when_masked=False):
        super().__init__()
        head = hidden // num_heads
        self.normalize_first = normalize_first
        self.self_attention = KerasMultiHeadAttention(hidden, hidden, hidden, num_heads, head, head, hidden,
                                                      key_bias=key_bias, uniform_when_masked=uniform_when_masked)
        self.self_attention_norm = nn.LayerNorm(hidden, eps=epsilon)
        self.intermediate = nn.Linear(hidden, intermediate)
        # by the name the converter passes (a literal, never a callable from the file)
        self.activation = nn.GELU(approximate="tanh") if activation == "gelu_tanh" else \
            {"relu": nn.ReLU, "gelu": nn.GELU, "silu": nn.SiLU, "tanh": nn.Tanh}[activation]()
        self.output = nn.Linear(intermediate, hidden)
        self.feedforward_norm = nn.LayerNorm(hidden, eps=epsilon)

    def attention_mask(self, x, padding_mask):
        """Which keys each query sees: (N, 1, T) from the padding mask, or None."""
        return None if padding_mask is None else padding_mask.to(torch.int32).unsqueeze(1) > 0

    def pre(self, norm, x):
        """A sublayer's input: normalised first (normalize_first), else as it is."""
        return norm(x) if self.normalize_first else x

    def post(self, norm, x):
        """The residual sum: normalised after (the default), else as it is."""
        return x if self.normalize_first else norm(x)

    def self_attention_step(self, x, padding_mask):
        y = self.pre(self.self_attention_norm, x)
        mask = self.attention_mask(x, padding_mask)
        return self.post(self.self_attention_norm, x + self.self_attention(y, y, attention_mask=mask))

    def feedforward_step(self, x):
        y = self.pre(self.feedforward_norm, x)
        return self.post(self.feedforward_norm, x + self.output(self.activation(self.intermediate(y))))

    def forward(self, x, padding_mask=None):
        return self.feedforward_step(self.self_attention_step(x, padding_mask))


class KerasHubTransformerDecoder(KerasHubTransformerEncoder):
    """keras_hub.layers.TransformerDecoder without cross-attention (GPT-2, OPT): the encoder block with
    causal self-attention; query step i sees key steps j <= i that the padding mask keeps."""

    def attention_mask(self, x, padding_mask):
        steps = x.shape[1]
        causal = torch.ones(steps, steps, dtype=torch.bool, device=x.device).tril().unsqueeze(0)  # (1, T, T)
        padded = super().attention_mask(x, padding_mask)
        return causal if padded is None else causal & padded


class KerasHubCrossAttentionDecoder(KerasHubTransformerDecoder):
    """keras_hub.layers.TransformerDecoder with cross-attention (Whisper's decoder): causal self-attention,
    then attention from the decoder steps to the encoder sequence, then the feed-forward, each with a
    residual and a LayerNorm (before it with ``normalize_first``, else after)."""

    def __init__(self, hidden, intermediate, num_heads, activation, epsilon, normalize_first=False, key_bias=True,
                 uniform_when_masked=False):
        super().__init__(hidden, intermediate, num_heads, activation, epsilon, normalize_first, key_bias,
                         uniform_when_masked)
        head = hidden // num_heads
        self.cross_attention = KerasMultiHeadAttention(hidden, hidden, hidden, num_heads, head, head, hidden,
                                                       key_bias=key_bias, uniform_when_masked=uniform_when_masked)
        self.cross_attention_norm = nn.LayerNorm(hidden, eps=epsilon)

    def forward(self, x, encoder_sequence, padding_mask=None):
        x = self.self_attention_step(x, padding_mask)
        y = self.pre(self.cross_attention_norm, x)
        x = self.post(self.cross_attention_norm, x + self.cross_attention(y, encoder_sequence))
        return self.feedforward_step(x)


def keras_hub_activation(name):
    """A keras-hub block's activation by the name the converter passes (a literal, never a callable from the
    file), as Keras 3 computes it: swish = silu = x * sigmoid(x), hard_silu = x * relu6(x + 3) / 6,
    hard_sigmoid = relu6(x + 3) / 6, gelu the exact erf form, leaky_relu's slope 0.2; None or "linear": the
    identity."""
    return {"relu": nn.ReLU, "relu6": nn.ReLU6, "silu": nn.SiLU, "swish": nn.SiLU, "hard_silu": nn.Hardswish,
            "hard_swish": nn.Hardswish, "hard_sigmoid": nn.Hardsigmoid, "gelu": nn.GELU, "tanh": nn.Tanh,
            "sigmoid": nn.Sigmoid, "elu": nn.ELU, "selu": nn.SELU, "celu": nn.CELU, "softplus": nn.Softplus,
            "softsign": nn.Softsign, "mish": nn.Mish, "hard_tanh": nn.Hardtanh, "log_sigmoid": nn.LogSigmoid,
            "tanh_shrink": nn.Tanhshrink, "leaky_relu": lambda: nn.LeakyReLU(0.2), "linear": nn.Identity,
            None: nn.Identity}[name]()
