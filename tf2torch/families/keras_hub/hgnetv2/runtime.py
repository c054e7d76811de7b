"""Helper modules for keras-hub's HGNetV2 (inlined by source into generated files): its conv unit, light
block, stem, aggregation block, stage and encoder, on channels-first (N, C, H, W) tensors. Channel counts
follow the tensors as Keras builds them (a conv takes the channels it is given), not the ``in_channels``
arguments keras-hub only records."""

from __future__ import annotations

import torch
from torch import nn


class KerasHubHGNetV2LearnableAffineBlock(nn.Module):
    """HGNetV2LearnableAffineBlock: scale * x + bias with two learned scalars."""

    def __init__(self):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(()))
        self.bias = nn.Parameter(torch.zeros(()))

    def forward(self, x):
        return self.scale * x + self.bias


class KerasHubHGNetV2ConvLayer(nn.Module):
    """HGNetV2ConvLayer: zeros padded (kernel - 1) // 2 on every side (none for a 2x2 kernel), a bias-free
    conv, BatchNorm (epsilon 1e-5, Keras momentum 0.9 = torch's 0.1), the activation, then the learnable
    affine block when used."""

    FUSIBLE = (("conv", "bn"),)  # fuse() folds the BatchNorm into the conv

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, groups=1, activation="relu", lab=False):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size, stride, (kernel_size - 1) // 2, groups=groups,
                              bias=False)
        self.bn = nn.BatchNorm2d(out_channels, eps=1e-5, momentum=0.1)
        # by the name the converter passes (a literal, never a callable from the file)
        self.act = {"relu": nn.ReLU, "gelu": nn.GELU, "tanh": nn.Tanh, None: nn.Identity}[activation]()
        self.lab = KerasHubHGNetV2LearnableAffineBlock() if lab else None

    def forward(self, x):
        x = self.act(self.bn(self.conv(x)))
        return x if self.lab is None else self.lab(x)


class KerasHubHGNetV2ConvLayerLight(nn.Module):
    """HGNetV2ConvLayerLight: a 1x1 conv unit without activation, then a depthwise one with ReLU."""

    def __init__(self, in_channels, out_channels, kernel_size, lab=False):
        super().__init__()
        self.conv1 = KerasHubHGNetV2ConvLayer(in_channels, out_channels, 1, activation=None)
        self.conv2 = KerasHubHGNetV2ConvLayer(out_channels, out_channels, kernel_size, groups=out_channels, lab=lab)

    def forward(self, x):
        return self.conv2(self.conv1(x))


class KerasHubHGNetV2Embeddings(nn.Module):
    """HGNetV2Embeddings (the stem): stem1 (3x3, stride 2); one zero row below and one column to the right
    (ZeroPadding2D ((0, 1), (0, 1))); that padded map both through stem2a, the same padding again, stem2b
    (2x2 kernels, unpadded), and through a 2x2 stride-1 max pool (its zeros count: they are padding Keras
    added, not the pool's); both concatenated (pool first), stem3 (3x3, stride 2), stem4 (1x1)."""

    def __init__(self, in_channels, mid_channels, out_channels, activation, lab):
        super().__init__()
        unit = lambda i, o, k, s=1: KerasHubHGNetV2ConvLayer(i, o, k, s, activation=activation, lab=lab)  # noqa: E731
        self.stem1 = unit(in_channels, mid_channels, 3, 2)
        self.stem2a = unit(mid_channels, mid_channels // 2, 2)
        self.stem2b = unit(mid_channels // 2, mid_channels, 2)
        self.pool = nn.MaxPool2d(2, 1)
        self.stem3 = unit(2 * mid_channels, mid_channels, 3, 2)
        self.stem4 = unit(mid_channels, out_channels, 1)

    def forward(self, x):
        x = nn.functional.pad(self.stem1(x), (0, 1, 0, 1))  # (left, right, top, bottom)
        y = self.stem2b(nn.functional.pad(self.stem2a(x), (0, 1, 0, 1)))
        return self.stem4(self.stem3(torch.cat((self.pool(x), y), dim=1)))


class KerasHubHGNetV2BasicLayer(nn.Module):
    """HGNetV2BasicLayer: layer_num conv units (or light blocks) in a chain; the input and every unit's
    output concatenated, squeezed to out // 2 and excited to out channels by 1x1 ReLU units, plus the
    input when residual."""

    def __init__(self, in_channels, mid_channels, out_channels, layer_num, kernel_size, residual, light, lab):
        super().__init__()
        self.residual = residual
        self.layers = nn.ModuleList(
            KerasHubHGNetV2ConvLayerLight(in_channels if i == 0 else mid_channels, mid_channels, kernel_size, lab)
            if light else
            KerasHubHGNetV2ConvLayer(in_channels if i == 0 else mid_channels, mid_channels, kernel_size, lab=lab)
            for i in range(layer_num))
        self.squeeze = KerasHubHGNetV2ConvLayer(in_channels + layer_num * mid_channels, out_channels // 2, 1, lab=lab)
        self.excite = KerasHubHGNetV2ConvLayer(out_channels // 2, out_channels, 1, lab=lab)

    def forward(self, x):
        outputs = [x]
        for layer in self.layers:
            outputs.append(layer(outputs[-1]))
        y = self.excite(self.squeeze(torch.cat(outputs, dim=1)))
        return y + x if self.residual else y


class KerasHubHGNetV2Stage(nn.Module):
    """HGNetV2Stage: the downsample when asked (a 3x3 stride-2 conv unit with stage_in filters in stage_in
    groups, no activation, no affine block), then its basic layers (all but the first residual)."""

    def __init__(self, in_channels, stage_in, mid, out, blocks, layers, kernel, downsample, light, lab):
        super().__init__()
        self.downsample = KerasHubHGNetV2ConvLayer(in_channels, stage_in, 3, 2, stage_in, None) if downsample else None
        channels = stage_in if downsample else in_channels
        self.blocks = nn.Sequential(*(
            KerasHubHGNetV2BasicLayer(channels if i == 0 else out, mid, out, layers, kernel, i > 0, light, lab)
            for i in range(blocks)))

    def forward(self, x):
        return self.blocks(x if self.downsample is None else self.downsample(x))


class KerasHubHGNetV2Encoder(nn.Module):
    """HGNetV2Encoder: its stages in turn; ``stages`` holds (stage_in, mid, out, blocks, layers, kernel,
    downsample, light) per stage. Returns the input and every stage's output, as keras-hub does."""

    def __init__(self, in_channels, stages, lab):
        super().__init__()
        ins = [in_channels] + [stage[2] for stage in stages[:-1]]  # a stage passes on its out channels
        self.stages = nn.ModuleList(KerasHubHGNetV2Stage(i, *stage, lab) for i, stage in zip(ins, stages))

    def forward(self, x):
        states = [x]
        for stage in self.stages:
            states.append(stage(states[-1]))
        return tuple(states)
