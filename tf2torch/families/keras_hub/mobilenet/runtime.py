"""Helper modules for keras-hub's MobileNet layers, inlined by source into generated files like
``runtime/keras_layers.py``'s: each depends only on torch / nn. The blocks work on (N, C, H, W); their BatchNorms use
keras-hub's module constants (epsilon 1e-5, Keras momentum 0.9 = torch's 0.1), their absent parts are
nn.Identity (no weights) so ``fuse()`` finds every FUSIBLE name."""

from __future__ import annotations

from torch import nn

from tf2torch.families.keras_hub.common.runtime import keras_hub_activation


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


class KerasHubDepthwiseConvBlock(nn.Module):
    """DepthwiseConvBlock: one zero on each side (whatever the kernel size: keras-hub's), a depthwise conv,
    BatchNorm, ReLU, the squeeze-and-excitation when ``bottleneck`` (its width) is not 0, a 1x1 conv to
    ``filters``, BatchNorm, plus the input when ``residual``."""

    FUSIBLE = (("conv1", "bn1"), ("conv2", "bn2"))  # fuse() folds each BatchNorm into the conv before it
    INPLACE = ("act1",)  # its input is a BatchNorm's (or, fused, a conv's) output nothing else reads

    def __init__(self, channels, filters, kernel_size, stride, bottleneck, residual):
        super().__init__()
        self.residual = residual
        self.conv1 = nn.Conv2d(channels, channels, kernel_size, stride, 1, groups=channels, bias=False)
        self.bn1 = nn.BatchNorm2d(channels, eps=1e-5, momentum=0.1)
        self.act1 = nn.ReLU()
        self.se = KerasHubSqueezeExcite(channels, bottleneck) if bottleneck else nn.Identity()
        self.conv2 = nn.Conv2d(channels, filters, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(filters, eps=1e-5, momentum=0.1)

    def forward(self, x):
        y = self.bn2(self.conv2(self.se(self.act1(self.bn1(self.conv1(x))))))
        return y + x if self.residual else y


class KerasHubInvertedResidualBlock(nn.Module):
    """InvertedResidualBlock: a 1x1 conv to ``expanded`` channels, BatchNorm, the activation, a depthwise
    conv (``padding`` zeros each side, keras-hub's ZeroPadding2D), BatchNorm, the activation, the
    squeeze-and-excitation when ``bottleneck`` is not 0, a 1x1 conv to ``filters``, BatchNorm, plus the
    input when ``residual``."""

    FUSIBLE = (("conv1", "bn1"), ("conv2", "bn2"), ("conv3", "bn3"))
    INPLACE = ("act1", "act2")  # inputs: BatchNorm (or, fused, conv) outputs nothing else reads

    def __init__(self, channels, expanded, filters, kernel_size, stride, padding, activation, bottleneck, residual):
        super().__init__()
        self.residual = residual
        self.conv1 = nn.Conv2d(channels, expanded, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(expanded, eps=1e-5, momentum=0.1)
        self.act1 = keras_hub_activation(activation)
        self.conv2 = nn.Conv2d(expanded, expanded, kernel_size, stride, padding, groups=expanded, bias=False)
        self.bn2 = nn.BatchNorm2d(expanded, eps=1e-5, momentum=0.1)
        self.act2 = keras_hub_activation(activation)
        self.se = KerasHubSqueezeExcite(expanded, bottleneck) if bottleneck else nn.Identity()
        self.conv3 = nn.Conv2d(expanded, filters, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(filters, eps=1e-5, momentum=0.1)

    def forward(self, x):
        y = self.act2(self.bn2(self.conv2(self.act1(self.bn1(self.conv1(x))))))
        y = self.bn3(self.conv3(self.se(y)))
        return y + x if self.residual else y


class KerasHubConvBnActBlock(nn.Module):
    """ConvBnActBlock: a 1x1 conv to ``filters``, BatchNorm, the activation."""

    FUSIBLE = (("conv", "bn"),)
    INPLACE = ("act",)

    def __init__(self, channels, filters, activation):
        super().__init__()
        self.conv = nn.Conv2d(channels, filters, 1, bias=False)
        self.bn = nn.BatchNorm2d(filters, eps=1e-5, momentum=0.1)
        self.act = keras_hub_activation(activation)

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))
