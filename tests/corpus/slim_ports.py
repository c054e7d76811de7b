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


def _add_layers(net, unit, blocks, depth_in=64):
    """``layer1`` ... as nn.Sequentials of ``unit``s; slim strides a block's last unit. Returns the depth."""
    for i, (base, units, stride) in enumerate(blocks, 1):
        layer = []
        for u in range(units):
            layer.append(unit(depth_in, base * 4, base, stride if u == units - 1 else 1))
            depth_in = base * 4
        setattr(net, f"layer{i}", nn.Sequential(*layer))
    net.n_layers = len(blocks)
    return depth_in


class ResNetV1(nn.Module):
    """slim ``resnet_v1`` with ``resnet_v1_block(name, base_depth, num_units, stride)`` blocks."""

    def __init__(self, blocks=((4, 2, 2), (8, 2, 1)), num_classes=5):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU()
        self.maxpool = nn.MaxPool2d(3, 2, padding=1)
        depth_in = _add_layers(self, Bottleneck, blocks)
        self.fc = nn.Linear(depth_in, num_classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        for i in range(1, self.n_layers + 1):
            x = getattr(self, f"layer{i}")(x)
        return self.fc(x.mean((2, 3)))


SLIM_RESNET_50 = ((64, 3, 2), (128, 4, 2), (256, 6, 2), (512, 3, 1))  # resnet_v1_50 / resnet_v2_50 blocks


def resnet_v1_50():
    return ResNetV1(SLIM_RESNET_50)


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
        depth_in = _add_layers(self, PreActBottleneck, blocks)
        self.bn = nn.BatchNorm2d(depth_in)
        self.fc = nn.Linear(depth_in, num_classes)

    def forward(self, x):
        x = self.maxpool(self.conv1(x))
        for i in range(1, self.n_layers + 1):
            x = getattr(self, f"layer{i}")(x)
        return self.fc(torch.relu(self.bn(x)).mean((2, 3)))


def resnet_v2_50():
    return ResNetV2(SLIM_RESNET_50)


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


class BasicConv2d(nn.Module):
    """conv (no bias) + BatchNorm + ReLU, as torchvision's Inception3 names them."""

    def __init__(self, cin, cout, kernel, stride=1, padding=0):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, kernel, stride=stride, padding=padding, bias=False)
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x):
        return torch.relu(self.bn(self.conv(x)))


class Split(nn.Module):
    """Two convs on one input, concatenated (Inception-v3's 1x3 / 3x1 pairs)."""

    def __init__(self, a, b):
        super().__init__()
        self.a, self.b = a, b

    def forward(self, x):
        return torch.cat([self.a(x), self.b(x)], 1)


class Mixed(nn.Module):
    def __init__(self, branches):
        super().__init__()
        for i, branch in enumerate(branches):
            setattr(self, f"branch{i}", branch)
        self.n = len(branches)

    def forward(self, x):
        return torch.cat([getattr(self, f"branch{i}")(x) for i in range(self.n)], 1)


def _same(cin, cout, k):  # a stride-1 'SAME' conv of slim, ported as padding = k // 2
    k = (k, k) if isinstance(k, int) else k
    return BasicConv2d(cin, cout, k, padding=(k[0] // 2, k[1] // 2))


def _pool_branch(cin, cout):  # slim's Branch_3: a 3x3 stride-1 SAME average pool, then a 1x1 conv
    return nn.Sequential(nn.AvgPool2d(3, 1, padding=1), _same(cin, cout, 1))


def _mixed_5(cin, pool):
    return Mixed([_same(cin, 64, 1), nn.Sequential(_same(cin, 48, 1), _same(48, 64, 5)),
                  nn.Sequential(_same(cin, 64, 1), _same(64, 96, 3), _same(96, 96, 3)), _pool_branch(cin, pool)])


def _mixed_6(c7):
    return Mixed([_same(768, 192, 1),
                  nn.Sequential(_same(768, c7, 1), _same(c7, c7, (1, 7)), _same(c7, 192, (7, 1))),
                  nn.Sequential(_same(768, c7, 1), _same(c7, c7, (7, 1)), _same(c7, c7, (1, 7)), _same(c7, c7, (7, 1)),
                                _same(c7, 192, (1, 7))), _pool_branch(768, 192)])


def _mixed_7(cin):
    return Mixed([_same(cin, 320, 1), nn.Sequential(_same(cin, 384, 1), Split(_same(384, 384, (1, 3)), _same(384, 384, (3, 1)))),
                  nn.Sequential(_same(cin, 448, 1), _same(448, 384, 3), Split(_same(384, 384, (1, 3)), _same(384, 384, (3, 1)))),
                  _pool_branch(cin, 192)])


class InceptionV3(nn.Module):
    """slim ``inception_v3`` (no aux logits) with torchvision's module names: ``Conv2d_1a_3x3``,
    ``Mixed_5b`` ... ``Mixed_7c``, each Mixed's branches in slim's order, ``fc`` a 1x1 conv's Linear."""

    def __init__(self, num_classes=5):
        super().__init__()
        self.Conv2d_1a_3x3 = BasicConv2d(3, 32, 3, stride=2)
        self.Conv2d_2a_3x3 = BasicConv2d(32, 32, 3)
        self.Conv2d_2b_3x3 = BasicConv2d(32, 64, 3, padding=1)
        self.maxpool1 = nn.MaxPool2d(3, 2)
        self.Conv2d_3b_1x1 = BasicConv2d(64, 80, 1)
        self.Conv2d_4a_3x3 = BasicConv2d(80, 192, 3)
        self.maxpool2 = nn.MaxPool2d(3, 2)
        self.Mixed_5b, self.Mixed_5c, self.Mixed_5d = _mixed_5(192, 32), _mixed_5(256, 64), _mixed_5(288, 64)
        self.Mixed_6a = Mixed([BasicConv2d(288, 384, 3, stride=2),
                               nn.Sequential(_same(288, 64, 1), _same(64, 96, 3), BasicConv2d(96, 96, 3, stride=2)),
                               nn.MaxPool2d(3, 2)])
        self.Mixed_6b, self.Mixed_6c, self.Mixed_6d, self.Mixed_6e = _mixed_6(128), _mixed_6(160), _mixed_6(160), _mixed_6(192)
        self.Mixed_7a = Mixed([nn.Sequential(_same(768, 192, 1), BasicConv2d(192, 320, 3, stride=2)),
                               nn.Sequential(_same(768, 192, 1), _same(192, 192, (1, 7)), _same(192, 192, (7, 1)),
                                             BasicConv2d(192, 192, 3, stride=2)),
                               nn.MaxPool2d(3, 2)])
        self.Mixed_7b, self.Mixed_7c = _mixed_7(1280), _mixed_7(2048)
        self.fc = nn.Linear(2048, num_classes)

    def forward(self, x):
        x = self.maxpool1(self.Conv2d_2b_3x3(self.Conv2d_2a_3x3(self.Conv2d_1a_3x3(x))))
        x = self.maxpool2(self.Conv2d_4a_3x3(self.Conv2d_3b_1x1(x)))
        for name in ("5b", "5c", "5d", "6a", "6b", "6c", "6d", "6e", "7a", "7b", "7c"):
            x = getattr(self, f"Mixed_{name}")(x)
        return self.fc(x.mean((2, 3)))


def inception_v3():
    return InceptionV3()
