"""Helper modules for keras-hub's Llama-style decoders (Llama, Mistral), inlined by source into generated
files: RMS norm, rotary embedding, grouped-query attention with Keras-shaped EinsumDense kernels."""

from __future__ import annotations

import math

import torch
from torch import nn


class KerasHubRMSNorm(nn.Module):
    """LlamaLayerNorm / MistralLayerNormalization: x * rsqrt(mean(x^2) + epsilon) * scale, in float32."""

    def __init__(self, dim, epsilon):
        super().__init__()
        self.epsilon = epsilon
        self.scale = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        y = x.float()
        y = y * torch.rsqrt(y.pow(2).mean(-1, keepdim=True) + self.epsilon)
        return (y * self.scale).to(x.dtype)


class KerasHubRotaryEmbedding(nn.Module):
    """keras-hub's rotary embedding over the last axis of (N, T, heads, dim) from position 0: inverse
    frequencies 1 / max_wavelength^(2i/dim) (Llama's form; ``reciprocal=False``: max_wavelength^(-2i/dim)
    divided by ``scaling_factor``, the base RotaryEmbedding's), angles repeated for the two halves;
    x * cos + rotate_half(x) * sin. ``smoothing``: Llama 3.1's (frequency_adjustment_factor,
    low_freq_factor, high_freq_factor, pretraining_sequence_length), see ``smooth``."""

    def __init__(self, max_wavelength=10000, scaling_factor=1.0, reciprocal=True, smoothing=None):
        super().__init__()
        self.max_wavelength, self.scaling_factor, self.reciprocal = max_wavelength, scaling_factor, reciprocal
        self.smoothing = smoothing

    def smooth(self, inverse):
        """LlamaRotaryEmbedding's float32 steps: wavelengths 2*pi/f above length/low_freq_factor divided by
        the adjustment factor, those between length/high_freq_factor and that bound blended linearly in
        length/wavelength between divided and unchanged, shorter ones unchanged."""
        factor, low, high, length = self.smoothing
        wavelength = 2 * math.pi / inverse
        inverse = torch.where(wavelength > length / low, inverse / factor, inverse)
        blend = (length / wavelength - low) / (high - low)
        # keras-hub blends the values after the division above (unchanged in the medium band it is used for)
        blended = (1 - blend) * (inverse / factor) + blend * inverse
        medium = (wavelength >= length / high) & (wavelength <= length / low)
        return torch.where(medium, blended, inverse)

    def forward(self, x):
        dim, steps = x.shape[-1], x.shape[1]
        exponent = torch.arange(0, dim, 2, dtype=torch.float32, device=x.device) / float(dim)
        if self.reciprocal:
            inverse = 1.0 / (self.max_wavelength ** exponent)
        else:
            inverse = (float(self.max_wavelength) ** -exponent) / self.scaling_factor
        if self.smoothing is not None:
            inverse = self.smooth(inverse)
        angles = torch.arange(steps, dtype=torch.float32, device=x.device)[:, None] * inverse[None, :]
        angles = torch.cat((angles, angles), dim=-1)[None, :, None, :]  # (1, T, 1, dim)
        first, second = x.chunk(2, dim=-1)
        return x * angles.cos().to(x.dtype) + torch.cat((-second, first), dim=-1) * angles.sin().to(x.dtype)


class KerasHubCausalMask:
    """Which keys each query of keras-hub's decoders sees: step i sees j <= i (and i < j + sliding_window
    with a window) among the keys the padding mask keeps (cast to int32, kept where > 0)."""

    @staticmethod
    def keep(x, padding_mask, sliding_window=None):
        steps = x.shape[1]
        i = torch.arange(steps, device=x.device)[:, None]
        j = torch.arange(steps, device=x.device)[None, :]
        keep = i >= j
        if sliding_window is not None:
            keep = keep & (i < j + sliding_window)
        keep = keep.unsqueeze(0)  # (1, T, T)
        if padding_mask is not None:
            keep = keep & (padding_mask.to(torch.int32).unsqueeze(1) > 0)
        return keep.unsqueeze(1)  # (N, 1, T, T): the same for every head


class KerasHubLlamaDecoder(nn.Module):
    """keras-hub's Llama/Mistral/Qwen3 decoder block: x + attention(rms_norm(x)), then x + mlp(rms_norm(x)).

    Attention: EinsumDense projections (kernels in Keras's (hidden, heads, head_dim) shapes, no biases),
    rotary query and key (Qwen3, ``qk_norm_epsilon``: each head RMS-normalised first, with its own epsilon),
    each key/value head repeated
    for its query heads, scores scaled by
    1/sqrt(head_dim) after the product, causal (and, with ``sliding_window``, banded) and padding
    masks as keras-hub merges them. MLP: down(up(x) * silu(gate(x))). ``rope_smoothing``: Llama 3.1's
    rotary frequency smoothing (``KerasHubRotaryEmbedding``).
    """

    def __init__(self, hidden, intermediate, num_query_heads, num_key_value_heads, head_dim, epsilon,
                 max_wavelength=10000, scaling_factor=1.0, reciprocal=True, sliding_window=None, qk_norm_epsilon=None,
                 rope_smoothing=None):
        super().__init__()
        u, v, h, m = num_query_heads, num_key_value_heads, head_dim, hidden
        self.repeats, self.scale, self.sliding_window = u // v, 1.0 / head_dim ** 0.5, sliding_window
        self.query_kernel = nn.Parameter(torch.zeros(m, u, h))
        self.key_kernel = nn.Parameter(torch.zeros(m, v, h))
        self.value_kernel = nn.Parameter(torch.zeros(m, v, h))
        self.output_kernel = nn.Parameter(torch.zeros(u, h, m))
        self.rotary = KerasHubRotaryEmbedding(max_wavelength, scaling_factor, reciprocal, rope_smoothing)
        qk_norm = qk_norm_epsilon is not None
        self.query_norm = KerasHubRMSNorm(head_dim, qk_norm_epsilon) if qk_norm else nn.Identity()
        self.key_norm = KerasHubRMSNorm(head_dim, qk_norm_epsilon) if qk_norm else nn.Identity()
        self.self_attention_norm = KerasHubRMSNorm(hidden, epsilon)
        self.feedforward_norm = KerasHubRMSNorm(hidden, epsilon)
        self.gate = nn.Linear(hidden, intermediate, bias=False)
        self.up = nn.Linear(hidden, intermediate, bias=False)
        self.down = nn.Linear(intermediate, hidden, bias=False)

    def attend(self, x, keep):
        q = self.rotary(self.query_norm(torch.einsum("bqm,muh->bquh", x, self.query_kernel)))
        k = self.rotary(self.key_norm(torch.einsum("bkm,mvh->bkvh", x, self.key_kernel)))
        k = k.repeat_interleave(self.repeats, dim=2)
        v = torch.einsum("bkm,mvh->bkvh", x, self.value_kernel).repeat_interleave(self.repeats, dim=2)
        scores = torch.einsum("bquh,bkuh->buqk", q, k) * self.scale
        weights = torch.where(keep, torch.softmax(torch.where(keep, scores, -1.0e9), dim=-1), 0.0)
        return torch.einsum("bquh,uhm->bqm", torch.einsum("buqk,bkuh->bquh", weights, v), self.output_kernel)

    def forward(self, x, padding_mask=None):
        x = x + self.attend(self.self_attention_norm(x), KerasHubCausalMask.keep(x, padding_mask, self.sliding_window))
        y = self.feedforward_norm(x)
        return x + self.down(self.up(y) * nn.functional.silu(self.gate(y)))


class KerasHubGemmaRMSNorm(nn.Module):
    """keras-hub's Gemma RMSNormalization: x / sqrt(mean(x^2) + epsilon) * (1 + scale), in float32."""

    def __init__(self, dim, epsilon):
        super().__init__()
        self.epsilon = epsilon
        self.scale = nn.Parameter(torch.zeros(dim))

    def forward(self, x):
        y = x.float()
        y = y * (1.0 / torch.sqrt(y.square().mean(-1, keepdim=True) + self.epsilon))
        return (y * (1.0 + self.scale.float())).to(x.dtype)


class KerasHubGemmaDecoder(nn.Module):
    """keras-hub's GemmaDecoderBlock: x + attention(norm(x)), then x + ffw(norm(x)), optional post-norms.

    Attention: EinsumDense kernels in Keras's shapes (query (heads, hidden, head_dim), key/value (kv_heads,
    hidden, head_dim), output (heads, head_dim, hidden)); rotary query and key (max wavelength 10000,
    the base RotaryEmbedding's frequencies; Gemma then interleaves the two halves of both, which leaves
    every query-key product unchanged and is left out); the query scaled before the product; query
    head n reads key/value head n // (heads / kv_heads); logits soft-capped by tanh when
    ``logit_soft_cap`` is set; causal, sliding-window and padding masks as keras-hub merges them.
    FFW: linear(gelu_tanh(gate(x)) * gate_2(x)).
    """

    def __init__(self, hidden, intermediate, num_query_heads, num_key_value_heads, head_dim, epsilon,
                 query_scale, logit_soft_cap=None, sliding_window=None, post_attention_norm=False,
                 post_ffw_norm=False):
        super().__init__()
        n, k, h, d, f = num_query_heads, num_key_value_heads, head_dim, hidden, intermediate // 2
        self.repeats, self.query_scale = n // k, query_scale
        self.logit_soft_cap, self.sliding_window = logit_soft_cap, sliding_window
        self.query_kernel = nn.Parameter(torch.zeros(n, d, h))
        self.key_kernel = nn.Parameter(torch.zeros(k, d, h))
        self.value_kernel = nn.Parameter(torch.zeros(k, d, h))
        self.output_kernel = nn.Parameter(torch.zeros(n, h, d))
        self.rotary = KerasHubRotaryEmbedding(10000.0, 1.0, reciprocal=False)
        self.pre_attention_norm = KerasHubGemmaRMSNorm(d, epsilon)
        self.post_attention_norm = KerasHubGemmaRMSNorm(d, epsilon) if post_attention_norm else nn.Identity()
        self.pre_ffw_norm = KerasHubGemmaRMSNorm(d, epsilon)
        self.post_ffw_norm = KerasHubGemmaRMSNorm(d, epsilon) if post_ffw_norm else nn.Identity()
        self.gate_kernel = nn.Parameter(torch.zeros(d, f))
        self.gate_2_kernel = nn.Parameter(torch.zeros(d, f))
        self.linear_kernel = nn.Parameter(torch.zeros(f, d))

    def attend(self, x, keep):
        q = self.rotary(torch.einsum("btd,ndh->btnh", x, self.query_kernel)) * self.query_scale
        k = self.rotary(torch.einsum("bsd,kdh->bskh", x, self.key_kernel)).repeat_interleave(self.repeats, dim=2)
        v = torch.einsum("bsd,kdh->bskh", x, self.value_kernel).repeat_interleave(self.repeats, dim=2)
        logits = torch.einsum("btnh,bsnh->bnts", q, k)
        if self.logit_soft_cap is not None:
            logits = torch.tanh(logits / self.logit_soft_cap) * self.logit_soft_cap
        weights = torch.where(keep, torch.softmax(torch.where(keep, logits, -1.0e9), dim=-1), 0.0)
        return torch.einsum("btnh,nhd->btd", torch.einsum("bnts,bsnh->btnh", weights, v), self.output_kernel)

    def forward(self, x, padding_mask=None):
        y = self.pre_attention_norm(x)
        x = x + self.post_attention_norm(self.attend(y, KerasHubCausalMask.keep(y, padding_mask, self.sliding_window)))
        y = self.pre_ffw_norm(x)
        gated = nn.functional.gelu(y @ self.gate_kernel, approximate="tanh") * (y @ self.gate_2_kernel)
        return x + self.post_ffw_norm(gated @ self.linear_kernel)
