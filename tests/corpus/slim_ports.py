"""PyTorch ports of TF-slim nets, written the way users write them: torchvision's names and module
layout (``layer1.0.conv1``, ``bn1``, ``downsample = Sequential(conv, bn)``, ``fc``), ``padding=k // 2``,
PyTorch's default BatchNorm epsilon — and slim's semantics (the stride on a block's last unit, in its
3x3 conv; a 1x1 max pool as the identity shortcut of a strided unit; logits as a 1x1 conv -> Linear)."""

import torch
import torch.nn as nn


class Bottleneck(nn.Module):
    def __init__(self, depth_in, depth, bottleneck, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(depth_in, bottleneck, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(bottleneck)
        self.conv2 = nn.Conv2d(bottleneck, bottleneck, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(bottleneck)
        self.conv3 = nn.Conv2d(bottleneck, depth, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(depth)
        self.relu = nn.ReLU()
        if depth != depth_in:
            self.downsample = nn.Sequential(nn.Conv2d(depth_in, depth, 1, stride=stride, bias=False),
                                            nn.BatchNorm2d(depth))
        else:
            self.downsample = nn.MaxPool2d(1, stride) if stride > 1 else nn.Identity()

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        return self.relu(out + self.downsample(x))


class ResNetV1(nn.Module):
    """slim ``resnet_v1`` with ``resnet_v1_block(name, base_depth, num_units, stride)`` blocks."""

    def __init__(self, blocks=((4, 2, 2), (8, 2, 1)), num_classes=5):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU()
        self.maxpool = nn.MaxPool2d(3, 2, padding=1)
        depth_in = 64
        for i, (base, units, stride) in enumerate(blocks, 1):
            layer = []
            for u in range(units):
                layer.append(Bottleneck(depth_in, base * 4, base, stride if u == units - 1 else 1))
                depth_in = base * 4
            setattr(self, f"layer{i}", nn.Sequential(*layer))
        self.n_layers = len(blocks)
        self.fc = nn.Linear(depth_in, num_classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        for i in range(1, self.n_layers + 1):
            x = getattr(self, f"layer{i}")(x)
        return self.fc(x.mean((2, 3)))


def resnet_v1_small():
    return ResNetV1()


class PreActBottleneck(nn.Module):
    """slim ``resnet_v2`` bottleneck: BN+ReLU first (``bn0``, slim's "preact"), convs 1 and 2 with BN,
    conv 3 and a projection shortcut with biases and no BN; the identity shortcut reads the raw input."""

    def __init__(self, depth_in, depth, bottleneck, stride):
        super().__init__()
        self.bn0 = nn.BatchNorm2d(depth_in)
        self.conv1 = nn.Conv2d(depth_in, bottleneck, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(bottleneck)
        self.conv2 = nn.Conv2d(bottleneck, bottleneck, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(bottleneck)
        self.conv3 = nn.Conv2d(bottleneck, depth, 1)
        self.project = depth != depth_in
        if self.project:
            self.downsample = nn.Conv2d(depth_in, depth, 1, stride=stride)
        else:
            self.downsample = nn.MaxPool2d(1, stride) if stride > 1 else nn.Identity()
        self.relu = nn.ReLU()

    def forward(self, x):
        pre = self.relu(self.bn0(x))
        shortcut = self.downsample(pre if self.project else x)
        out = self.relu(self.bn1(self.conv1(pre)))
        out = self.relu(self.bn2(self.conv2(out)))
        return shortcut + self.conv3(out)


class ResNetV2(nn.Module):
    """slim ``resnet_v2``: a root conv with biases and no BN, pre-activation units, ``postnorm``."""

    def __init__(self, blocks=((4, 2, 2), (8, 2, 1)), num_classes=5):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3)
        self.maxpool = nn.MaxPool2d(3, 2, padding=1)
        depth_in = 64
        for i, (base, units, stride) in enumerate(blocks, 1):
            layer = []
            for u in range(units):
                layer.append(PreActBottleneck(depth_in, base * 4, base, stride if u == units - 1 else 1))
                depth_in = base * 4
            setattr(self, f"layer{i}", nn.Sequential(*layer))
        self.n_layers = len(blocks)
        self.bn = nn.BatchNorm2d(depth_in)
        self.fc = nn.Linear(depth_in, num_classes)

    def forward(self, x):
        x = self.maxpool(self.conv1(x))
        for i in range(1, self.n_layers + 1):
            x = getattr(self, f"layer{i}")(x)
        return self.fc(torch.relu(self.bn(x)).mean((2, 3)))


def resnet_v2_small():
    return ResNetV2()


def _vgg_features(cfg):
    layers, channels = [], 3
    for v in cfg:
        if v == "M":
            layers.append(nn.MaxPool2d(2, 2))
        else:
            layers += [nn.Conv2d(channels, v, 3, padding=1), nn.ReLU()]
            channels = v
    return nn.Sequential(*layers)


class VGG16(nn.Module):
    """slim ``vgg_16`` in torchvision's layout (``features`` / ``classifier`` Sequentials), with slim's
    fully connected layers as the convs they are there (fc6 a 7x7 conv, fc7 and fc8 1x1)."""

    def __init__(self, num_classes=5):
        super().__init__()
        self.features = _vgg_features([64, 64, "M", 128, 128, "M", 256, 256, 256, "M", 512, 512, 512, "M",
                                       512, 512, 512, "M"])
        self.classifier = nn.Sequential(nn.Conv2d(512, 4096, 7), nn.ReLU(), nn.Dropout(),
                                        nn.Conv2d(4096, 4096, 1), nn.ReLU(), nn.Dropout(),
                                        nn.Conv2d(4096, num_classes, 1))

    def forward(self, x):
        return self.classifier(self.features(x)).flatten(1)


def vgg_16():
    return VGG16()
