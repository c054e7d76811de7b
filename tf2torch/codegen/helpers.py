"""Helper modules generated files may carry (inlined by source), for Keras layers torch lacks.

Each class depends only on ``torch`` / ``nn`` / ``F``, has buffers named like the Keras weights it
holds, and is tested here as real code before any generated file copies it.
"""

from __future__ import annotations

import torch
from torch import nn


class KerasNormalization(nn.Module):
    """keras.layers.Normalization: (x - mean) / max(sqrt(variance), 1e-7) along ``dim``."""

    def __init__(self, channels, dim):
        super().__init__()
        self.dim = int(dim)
        self.register_buffer("mean", torch.zeros(channels))
        self.register_buffer("variance", torch.ones(channels))

    def forward(self, x):
        shape = [1] * x.dim()
        shape[self.dim] = -1
        std = torch.clamp(torch.sqrt(self.variance.view(shape)), min=1e-7)
        return (x - self.mean.view(shape)) / std
