"""Helper modules for keras-hub's EfficientNet blocks (FusedMBConvBlock, MBConvBlock), inlined by source into
generated files like ``helpers.py``'s: each depends only on torch / nn."""

from __future__ import annotations

import torch
from torch import nn


class KerasHubEfficientNetSE(nn.Module):
    """The squeeze-and-excitation of keras-hub's EfficientNet blocks on (N, C, H, W): the spatial mean, a 1x1
    conv (with bias) to ``bottleneck`` channels and the block's activation, a 1x1 conv back and a sigmoid,
    then the input scaled by it."""

    def __init__(self, channels, bottleneck, activation):
        super().__init__()
        self.reduce = nn.Conv2d(channels, bottleneck, 1)
        self.expand = nn.Conv2d(bottleneck, channels, 1)
        # by the name the converter passes (a literal of its SE_ACTIVATIONS, never a callable from the file): each
        # Keras's function (swish = silu = x * sigmoid(x), hard_silu = x * relu6(x + 3) / 6, gelu the exact erf form)
        self.act = {"relu": nn.ReLU, "relu6": nn.ReLU6, "silu": nn.SiLU, "swish": nn.SiLU, "hard_silu": nn.Hardswish,
                    "hard_swish": nn.Hardswish, "gelu": nn.GELU, "tanh": nn.Tanh, "sigmoid": nn.Sigmoid,
                    "elu": nn.ELU, "mish": nn.Mish, "linear": nn.Identity}[activation]()

    def forward(self, x):
        scale = self.act(self.reduce(x.mean((2, 3), keepdim=True)))
        return x * torch.sigmoid(self.expand(scale))
