"""Helper modules for keras-hub's MobileNet layers, inlined by source into generated files like
``helpers.py``'s: each depends only on torch / nn."""

from __future__ import annotations

from torch import nn


class KerasHubSqueezeExcite(nn.Module):
    """keras-hub's mobilenet SqueezeAndExcite2D as its blocks build it, on (N, C, H, W): the spatial mean,
    a 1x1 conv to ``bottleneck`` channels, ReLU, a 1x1 conv back, then the input gated by the hard
    sigmoid (Keras 3's: relu6(x + 3) / 6, torch's Hardsigmoid)."""

    def __init__(self, channels, bottleneck):
        super().__init__()
        self.conv_reduce = nn.Conv2d(channels, bottleneck, 1)
        self.conv_expand = nn.Conv2d(bottleneck, channels, 1)

    def forward(self, x):
        scale = nn.functional.relu(self.conv_reduce(x.mean((2, 3), keepdim=True)))
        return x * nn.functional.hardsigmoid(self.conv_expand(scale))
