"""Helper modules for keras-hub's layers (and Keras's ReversibleEmbedding), inlined by source into
generated files like ``helpers.py``'s: each depends only on torch / nn and on the helpers there."""

from __future__ import annotations

import torch
from torch import nn

from .helpers import KerasMultiHeadAttention


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


class KerasHubViTPatchingAndEmbedding(nn.Module):
    """keras-hub's ViTPatchingAndEmbedding (and DeiTEmbeddings, ``distillation_token=True``): a
    patch-strided conv, patches in row-major order, the class token (then DeiT's distillation token)
    first, plus learned position embeddings (DeiT keeps them as (1, positions, hidden))."""

    def __init__(self, channels, hidden, patch_size, num_positions, use_class_token=True, use_patch_bias=True,
                 distillation_token=False):
        super().__init__()
        self.patch_embedding = nn.Conv2d(channels, hidden, patch_size, stride=patch_size, bias=use_patch_bias)
        self.class_token = nn.Parameter(torch.zeros(1, 1, hidden)) if use_class_token else None
        self.distillation_token = nn.Parameter(torch.zeros(1, 1, hidden)) if distillation_token else None
        shape = (1, num_positions, hidden) if distillation_token else (num_positions, hidden)
        self.position_embedding = nn.Parameter(torch.zeros(shape))

    def forward(self, images):
        x = self.patch_embedding(images).flatten(2).transpose(1, 2)  # (N, patches, hidden)
        tokens = [t.expand(x.shape[0], -1, -1) for t in (self.class_token, self.distillation_token) if t is not None]
        return torch.cat((*tokens, x), dim=1) + self.position_embedding


class KerasHubViTBlock(nn.Module):
    """keras-hub's ViTEncoderBlock: x + attention(ln_1(x)), then x + mlp(ln_2(x)) with an exact-GELU MLP."""

    def __init__(self, hidden, num_heads, mlp_dim, epsilon, use_mha_bias=True, use_mlp_bias=True):
        super().__init__()
        head = hidden // num_heads
        self.ln_1 = nn.LayerNorm(hidden, eps=epsilon)
        self.mha = KerasMultiHeadAttention(hidden, hidden, hidden, num_heads, head, head, hidden, use_mha_bias)
        self.ln_2 = nn.LayerNorm(hidden, eps=epsilon)
        self.dense_1 = nn.Linear(hidden, mlp_dim, bias=use_mlp_bias)
        self.dense_2 = nn.Linear(mlp_dim, hidden, bias=use_mlp_bias)

    def forward(self, x):
        y = self.ln_1(x)
        x = x + self.mha(y, y)
        return x + self.dense_2(nn.functional.gelu(self.dense_1(self.ln_2(x))))


class KerasHubViTEncoder(nn.Module):
    """keras-hub's ViTEncoder: its blocks in turn, then a LayerNorm."""

    def __init__(self, num_layers, hidden, num_heads, mlp_dim, epsilon, use_mha_bias=True, use_mlp_bias=True):
        super().__init__()
        self.blocks = nn.ModuleList(KerasHubViTBlock(hidden, num_heads, mlp_dim, epsilon, use_mha_bias, use_mlp_bias)
                                    for _ in range(num_layers))
        self.ln = nn.LayerNorm(hidden, eps=epsilon)

    def forward(self, x):
        for block in self.blocks:
            x = block(x)
        return self.ln(x)


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


class KerasHubDeiTEncoder(KerasHubViTEncoder):
    """keras-hub's DeiTEncoder: the ViT encoder's math, returning as DeiT does (hidden states, and the
    empty hidden-state and attention-score stacks it returns unless asked for them)."""

    def __init__(self, num_layers, hidden, num_heads, mlp_dim, epsilon, use_mha_bias=True):
        super().__init__(num_layers, hidden, num_heads, mlp_dim, epsilon, use_mha_bias)
        self.num_heads = num_heads

    def forward(self, x):
        steps = x.shape[1]
        y = super().forward(x)
        return y, y.new_zeros((0, steps, y.shape[-1])), y.new_zeros((0, self.num_heads, steps, steps))


class KerasHubMiTPatchEmbedding(nn.Module):
    """keras-hub's OverlappingPatchingAndEmbedding: a conv over the zero-padded image (patch_size // 2 on each
    side), its patches in row-major order, a LayerNorm: (N, C, H, W) -> (N, H' * W', dim)."""

    def __init__(self, channels, dim, patch_size, stride):
        super().__init__()
        self.proj = nn.Conv2d(channels, dim, patch_size, stride=stride, padding=patch_size // 2)
        self.norm = nn.LayerNorm(dim, eps=1e-5)

    def forward(self, images):
        return self.norm(self.proj(images).flatten(2).transpose(1, 2))


class KerasHubMiTBlock(nn.Module):
    """keras-hub's HierarchicalTransformerEncoder on (N, H * W, dim) of a square image: x + attention(norm1(x)),
    then x + mix_ffn(norm2(x)). The attention's keys and values come from the image reduced by a
    sr_ratio-strided conv and a LayerNorm (sr_ratio > 1); scores are scaled after the product; the
    Mix-FFN is fc1, a 3x3 depthwise conv over the image, tanh GELU, fc2."""

    def __init__(self, dim, num_heads, sr_ratio, epsilon):
        super().__init__()
        self.num_heads, self.scale = num_heads, (dim // num_heads) ** -0.5
        self.norm1, self.norm2 = nn.LayerNorm(dim, eps=epsilon), nn.LayerNorm(dim, eps=epsilon)
        self.q, self.k, self.v, self.proj = (nn.Linear(dim, dim) for _ in range(4))
        self.sr = nn.Conv2d(dim, dim, sr_ratio, stride=sr_ratio) if sr_ratio > 1 else None
        self.sr_norm = nn.LayerNorm(dim, eps=1e-5) if sr_ratio > 1 else None
        self.fc1, self.fc2 = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)
        self.dwconv = nn.Conv2d(4 * dim, 4 * dim, 3, padding=1, groups=4 * dim)

    @staticmethod
    def image(x):
        side = int(x.shape[1] ** 0.5)  # keras-hub takes the sequence as a square image
        return x.transpose(1, 2).unflatten(2, (side, side))  # (N, C, H, W)

    def attention(self, x):
        heads = lambda t: t.unflatten(-1, (self.num_heads, -1)).transpose(1, 2)  # noqa: E731
        source = x
        if self.sr is not None:
            source = self.sr_norm(self.sr(self.image(x)).flatten(2).transpose(1, 2))
        weights = torch.softmax((heads(self.q(x)) @ heads(self.k(source)).transpose(-1, -2)) * self.scale, dim=-1)
        return self.proj((weights @ heads(self.v(source))).transpose(1, 2).flatten(2))

    def forward(self, x):
        x = x + self.attention(self.norm1(x))
        y = self.dwconv(self.image(self.fc1(self.norm2(x)))).flatten(2).transpose(1, 2)
        return x + self.fc2(nn.functional.gelu(y, approximate="tanh"))
