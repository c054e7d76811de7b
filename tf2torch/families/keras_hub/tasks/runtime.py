"""Helper modules for keras-hub Task heads, inlined by source into generated files like ``runtime/keras_layers.py``'s:
each depends only on torch / nn."""

from __future__ import annotations

import torch
from torch import nn


class KerasHubMaskedLMHead(nn.Module):
    """keras_hub.layers.MaskedLMHead tied to a token embedding: the hidden states at the mask positions,
    through a Dense (with its activation) and a LayerNorm, projected onto the vocabulary by the embedding's
    ``reverse()``, plus the head's own output bias. The embedding is passed in at each call: it is the
    backbone's own module (one weight, as in keras-hub), never a copy held here."""

    def __init__(self, hidden, features, vocabulary_size, activation, epsilon):
        super().__init__()
        self.dense = nn.Linear(hidden, features)
        # by the name the converter passes (a literal, never a callable from the file)
        self.activation = nn.GELU(approximate="tanh") if activation == "gelu_tanh" else \
            {"relu": nn.ReLU, "gelu": nn.GELU, "silu": nn.SiLU, "tanh": nn.Tanh}[activation]()
        self.norm = nn.LayerNorm(features, eps=epsilon)
        self.bias = nn.Parameter(torch.zeros(vocabulary_size))

    def forward(self, x, mask_positions, token_embedding):
        positions = mask_positions.long()
        # ops.take_along_axis wraps a negative position (TF backend: + the sequence length), as Python does
        positions = torch.where(positions < 0, positions + x.shape[1], positions)
        x = torch.take_along_dim(x, positions.unsqueeze(-1), dim=1)  # (N, M, 1) broadcast over the features
        x = self.norm(self.activation(self.dense(x)))
        return token_embedding.reverse(x) + self.bias
