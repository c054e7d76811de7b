"""Helper modules for keras-hub's EfficientNet blocks (FusedMBConvBlock, MBConvBlock, CBABlock), inlined by source
into generated files like ``runtime/keras_layers.py``'s: each depends only on torch / nn (and ``keras_hub_activation`` of
``families/keras_hub/mobilenet/runtime.py``). The blocks work on (N, C, H, W) and take their BatchNorms' epsilon and
(torch) momentum from the block's config; their absent parts are nn.Identity (no weights) so ``fuse()`` finds
every FUSIBLE name. The Dropout before the residual add (drop-connect) is the identity at inference."""

from __future__ import annotations

import torch
from torch import nn

from tf2torch.families.keras_hub.common.runtime import keras_hub_activation


class KerasHubEfficientNetSE(nn.Module):
    """The squeeze-and-excitation of keras-hub's EfficientNet blocks on (N, C, H, W): the spatial mean, a 1x1
    conv (with bias) to ``bottleneck`` channels and the block's activation, a 1x1 conv back and a sigmoid,
    then the input scaled by it."""

    def __init__(self, channels, bottleneck, activation):
        super().__init__()
        self.reduce = nn.Conv2d(channels, bottleneck, 1)
        self.expand = nn.Conv2d(bottleneck, channels, 1)
        self.act = keras_hub_activation(activation)  # the block's (by name, never a callable from the file)

    def forward(self, x):
        scale = self.act(self.reduce(x.mean((2, 3), keepdim=True)))
        return x * torch.sigmoid(self.expand(scale))


class KerasHubFusedMBConvBlock(nn.Module):
    """FusedMBConvBlock: a k x k conv (``stride``, kernel // 2 zeros each side) to ``filters``, BatchNorm, the
    activation, the squeeze-and-excitation when ``bottleneck`` (its width) is not 0, a conv of
    ``projection_kernel`` (padded the same way) to ``out_channels``, BatchNorm, the projection activation
    (the converter passes it only where keras-hub applies it), plus the input when ``residual``."""

    FUSIBLE = (("conv1", "bn1"), ("output_conv", "bn2"))  # fuse() folds each BatchNorm into the conv before it
    INPLACE = ("act", "projection_act")  # inputs: BatchNorm (or, fused, conv) outputs nothing else reads

    def __init__(self, channels, filters, out_channels, kernel_size, stride, projection_kernel, activation, bottleneck,
                 projection_activation, residual, eps, momentum):
        super().__init__()
        self.residual = residual
        self.conv1 = nn.Conv2d(channels, filters, kernel_size, stride, kernel_size // 2, bias=False)
        self.bn1 = nn.BatchNorm2d(filters, eps=eps, momentum=momentum)
        self.act = keras_hub_activation(activation)
        self.se = KerasHubEfficientNetSE(filters, bottleneck, activation) if bottleneck else nn.Identity()
        self.output_conv = nn.Conv2d(filters, out_channels, projection_kernel, 1, projection_kernel // 2, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels, eps=eps, momentum=momentum)
        self.projection_act = keras_hub_activation(projection_activation)

    def forward(self, x):
        y = self.se(self.act(self.bn1(self.conv1(x))))
        y = self.projection_act(self.bn2(self.output_conv(y)))
        return y + x if self.residual else y


class KerasHubMBConvBlock(nn.Module):
    """MBConvBlock: when ``filters`` is not None a 1x1 conv to it, BatchNorm and the activation; a depthwise
    conv (TF "same": ``padding`` is the conv's own symmetric (h, w) padding, or an explicit (left, right, top,
    bottom) pad before it, or None: computed from the input's size at run time), BatchNorm, the activation,
    the squeeze-and-excitation when ``bottleneck`` is not 0, a conv of ``output_kernel`` (kernel // 2 zeros
    each side) to ``out_channels``, BatchNorm, plus the input when ``residual``."""

    FUSIBLE = (("conv1", "bn1"), ("depthwise", "bn2"), ("output_conv", "bn3"))
    INPLACE = ("act1", "act2")

    def __init__(self, channels, filters, out_channels, kernel_size, stride, padding, output_kernel, activation,
                 bottleneck, residual, eps, momentum):
        super().__init__()
        self.residual, self.kernel_size, self.stride, self.dynamic = residual, kernel_size, stride, padding is None
        expand = filters is not None
        filters = filters if expand else channels
        self.conv1 = nn.Conv2d(channels, filters, 1, bias=False) if expand else nn.Identity()
        self.bn1 = nn.BatchNorm2d(filters, eps=eps, momentum=momentum) if expand else nn.Identity()
        self.act1 = keras_hub_activation(activation) if expand else nn.Identity()
        explicit = padding is not None and len(padding) == 4
        self.pad = nn.ZeroPad2d(padding) if explicit else nn.Identity()
        self.depthwise = nn.Conv2d(filters, filters, kernel_size, stride, 0 if explicit or self.dynamic else padding,
                                   groups=filters, bias=False)
        self.bn2 = nn.BatchNorm2d(filters, eps=eps, momentum=momentum)
        self.act2 = keras_hub_activation(activation)
        self.se = KerasHubEfficientNetSE(filters, bottleneck, activation) if bottleneck else nn.Identity()
        self.output_conv = nn.Conv2d(filters, out_channels, output_kernel, 1, output_kernel // 2, bias=False)
        self.bn3 = nn.BatchNorm2d(out_channels, eps=eps, momentum=momentum)

    def same_pad(self, x):
        """TF "same" zeros for the input's size (as SamePad): the extra one at the end (bottom / right)."""
        k, s = self.kernel_size, self.stride
        th, tw = k - 1 - (x.shape[2] - 1) % s, k - 1 - (x.shape[3] - 1) % s
        if k < s:  # only then can they be negative (an unneeded max() would hinder torch.export)
            th, tw = max(th, 0), max(tw, 0)
        return nn.functional.pad(x, [tw // 2, tw - tw // 2, th // 2, th - th // 2])  # the last dim first

    def forward(self, x):
        y = self.act1(self.bn1(self.conv1(x)))
        y = self.depthwise(self.same_pad(y) if self.dynamic else self.pad(y))
        y = self.bn3(self.output_conv(self.se(self.act2(self.bn2(y)))))
        return y + x if self.residual else y


class KerasHubCBABlock(nn.Module):
    """CBABlock: a k x k conv (``stride``, kernel // 2 zeros each side), BatchNorm, the activation, plus the
    input when ``residual``."""

    FUSIBLE = (("conv1", "bn1"),)
    INPLACE = ("act",)

    def __init__(self, channels, out_channels, kernel_size, stride, activation, residual, eps, momentum):
        super().__init__()
        self.residual = residual
        self.conv1 = nn.Conv2d(channels, out_channels, kernel_size, stride, kernel_size // 2, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels, eps=eps, momentum=momentum)
        self.act = keras_hub_activation(activation)

    def forward(self, x):
        y = self.act(self.bn1(self.conv1(x)))
        return y + x if self.residual else y
