"""Helper module for keras-hub's Qwen (inlined by source into generated files): Llama's decoder block
(``families/keras_hub/llm/runtime.py``) with biased query/key/value projections and Qwen's float32 steps."""

from __future__ import annotations

import torch
from torch import nn

from tf2torch.families.keras_hub.llm.runtime import KerasHubCausalMask, KerasHubLlamaDecoder


class KerasHubQwenDecoder(KerasHubLlamaDecoder):
    """keras-hub's QwenTransformerDecoder: x + attention(rms_norm(x)), then x + mlp(rms_norm(x)).

    As ``KerasHubLlamaDecoder`` with head_dim = hidden // num_query_heads, the base RotaryEmbedding's
    frequencies (max_wavelength^(-2i/dim) / scaling_factor) and biases (per head, as EinsumDense's
    ``bias_axes``) added to the query, key and value projections before the rotation; the softmax and
    the gate's SiLU in float32, as keras-hub computes them (the same numbers in a float32 model).
    """

    def __init__(self, hidden, intermediate, num_query_heads, num_key_value_heads, epsilon, max_wavelength=10000,
                 scaling_factor=1.0, sliding_window=None):
        head_dim = hidden // num_query_heads
        super().__init__(hidden, intermediate, num_query_heads, num_key_value_heads, head_dim, epsilon,
                         max_wavelength, scaling_factor, reciprocal=False, sliding_window=sliding_window)
        self.query_bias = nn.Parameter(torch.zeros(num_query_heads, head_dim))
        self.key_bias = nn.Parameter(torch.zeros(num_key_value_heads, head_dim))
        self.value_bias = nn.Parameter(torch.zeros(num_key_value_heads, head_dim))

    def attend(self, x, keep):
        q = self.rotary(torch.einsum("bqm,muh->bquh", x, self.query_kernel) + self.query_bias)
        k = self.rotary(torch.einsum("bkm,mvh->bkvh", x, self.key_kernel) + self.key_bias)
        k = k.repeat_interleave(self.repeats, dim=2)
        v = torch.einsum("bkm,mvh->bkvh", x, self.value_kernel) + self.value_bias
        v = v.repeat_interleave(self.repeats, dim=2)
        scores = torch.einsum("bquh,bkuh->buqk", q, k) * self.scale
        weights = torch.softmax(torch.where(keep, scores, -1.0e9).float(), dim=-1)
        weights = torch.where(keep, weights, 0.0).to(x.dtype)
        return torch.einsum("bquh,uhm->bqm", torch.einsum("buqk,bkuh->bquh", weights, v), self.output_kernel)

    def forward(self, x, padding_mask=None):
        x = x + self.attend(self.self_attention_norm(x), KerasHubCausalMask.keep(x, padding_mask, self.sliding_window))
        y = self.feedforward_norm(x)
        gate = nn.functional.silu(self.gate(y).float()).to(y.dtype)
        return x + self.down(self.up(y) * gate)
