"""Helper modules for keras-hub's T5 (inlined by source into generated files): its RMS layer norm, its
attention with bucketed relative position biases, and its encoder/decoder layer."""

from __future__ import annotations

import torch
from torch import nn


class KerasHubT5LayerNorm(nn.Module):
    """T5LayerNorm: weight * x * rsqrt(mean(x^2) + epsilon) (no mean subtracted, no bias)."""

    def __init__(self, dim, epsilon):
        super().__init__()
        self.epsilon = epsilon
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return self.weight * (x * torch.rsqrt(x.square().mean(-1, keepdim=True) + self.epsilon))


class KerasHubT5Attention(nn.Module):
    """T5MultiHeadAttention: bias-free projections, unscaled scores, plus a position bias: the learned
    (32 buckets, heads) relative bias (first layer only; the later layers get it passed on) or zeros,
    with (1 - mask) * -1e9 added where the layer computes it."""

    BUCKETS, MAX_DISTANCE = 32, 128

    def __init__(self, hidden, key_value_dim, num_heads, is_decoder, relative_bias=False):
        super().__init__()
        inner = num_heads * key_value_dim
        self.num_heads, self.key_value_dim, self.is_decoder = num_heads, key_value_dim, is_decoder
        self.query = nn.Linear(hidden, inner, bias=False)
        self.key = nn.Linear(hidden, inner, bias=False)
        self.value = nn.Linear(hidden, inner, bias=False)
        self.output = nn.Linear(inner, hidden, bias=False)
        self.relative_attention_bias = nn.Parameter(torch.zeros(self.BUCKETS, num_heads)) if relative_bias else None

    def bucket(self, relative):
        """T5's bucket of each (key - query) offset: exact below half the buckets, log-spaced above."""
        buckets, result = self.BUCKETS, torch.zeros_like(relative)
        if not self.is_decoder:  # bidirectional: half the buckets for keys after the query
            buckets //= 2
            result = result + (relative > 0).to(relative.dtype) * buckets
            relative = relative.abs()
        else:
            relative = -torch.clamp(relative, max=0)
        exact = buckets // 2
        # float32 throughout, as Keras computes it, then truncated to an integer
        large = exact + (torch.log(relative.float() / float(exact)) / torch.log(torch.tensor(self.MAX_DISTANCE / exact))
                         * (buckets - exact)).to(relative.dtype)
        large = torch.clamp(large, max=buckets - 1)
        return result + torch.where(relative < exact, relative, large)

    def position_bias(self, queries, keys, mask, dtype, device):
        if self.relative_attention_bias is None:
            bias = torch.zeros((1, self.num_heads, queries, keys), dtype=dtype, device=device)
        else:
            relative = torch.arange(keys, device=device)[None, :] - torch.arange(queries, device=device)[:, None]
            bias = self.relative_attention_bias[self.bucket(relative)].permute(2, 0, 1).unsqueeze(0)
        if mask is not None:
            bias = bias + (1.0 - mask.unsqueeze(1).to(bias.dtype)) * -1.0e9
        return bias

    def forward(self, x, mask=None, key_value_states=None, position_bias=None):
        source = x if key_value_states is None else key_value_states
        q = self.query(x).unflatten(-1, (self.num_heads, self.key_value_dim))
        k = self.key(source).unflatten(-1, (self.num_heads, self.key_value_dim))
        v = self.value(source).unflatten(-1, (self.num_heads, self.key_value_dim))
        scores = torch.einsum("bqnd,bknd->bnqk", q, k)
        if position_bias is None:
            position_bias = self.position_bias(x.shape[1], source.shape[1], mask, scores.dtype, x.device)
        weights = torch.softmax(scores + position_bias, dim=-1)
        return self.output(torch.einsum("bnqk,bknd->bqnd", weights, v).flatten(2)), position_bias


class KerasHubT5Layer(nn.Module):
    """T5TransformerLayer: pre-norm self-attention (causal in the decoder's first layer, whose position
    bias then carries the mask to the later layers), cross-attention in the decoder, and a (gated)
    feed-forward. Returns (x, position_bias) as keras-hub does."""

    def __init__(self, hidden, intermediate, key_value_dim, num_heads, epsilon, activation, is_decoder,
                 relative_bias=False, gated=True):
        super().__init__()
        self.is_decoder, self.gated = is_decoder, gated
        self.self_attention = KerasHubT5Attention(hidden, key_value_dim, num_heads, is_decoder, relative_bias)
        self.self_attention_layer_norm = KerasHubT5LayerNorm(hidden, epsilon)
        if is_decoder:
            self.cross_attention = KerasHubT5Attention(hidden, key_value_dim, num_heads, is_decoder)
            self.cross_attention_layer_norm = KerasHubT5LayerNorm(hidden, epsilon)
        self.input_projector = nn.Linear(hidden, intermediate, bias=False)
        self.gate_projector = nn.Linear(hidden, intermediate, bias=False) if gated else None
        self.output_projector = nn.Linear(intermediate, hidden, bias=False)
        self.layer_norm = KerasHubT5LayerNorm(hidden, epsilon)
        # by the name the converter passes (a literal, never a callable from the file)
        self.activation = nn.GELU(approximate="tanh") if activation == "gelu_tanh" else \
            {"relu": nn.ReLU, "gelu": nn.GELU, "silu": nn.SiLU, "tanh": nn.Tanh}[activation]()

    def forward(self, x, attention_mask=None, position_bias=None, encoder_hidden_states=None,
                encoder_attention_mask=None, use_causal_mask=False):
        if use_causal_mask and position_bias is None:
            steps = x.shape[1]
            causal = torch.ones(steps, steps, dtype=torch.bool, device=x.device).tril().unsqueeze(0)
            attention_mask = causal if attention_mask is None else causal & attention_mask.bool()
        y, position_bias = self.self_attention(self.self_attention_layer_norm(x), attention_mask,
                                               position_bias=position_bias)
        x = x + y
        if self.is_decoder:
            x = x + self.cross_attention(self.cross_attention_layer_norm(x), encoder_attention_mask,
                                         key_value_states=encoder_hidden_states)[0]
        y = self.layer_norm(x)
        h = self.activation(self.input_projector(y))
        if self.gated:
            h = h * self.gate_projector(y)
        return x + self.output_projector(h), position_bias
