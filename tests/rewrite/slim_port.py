"""A user's PyTorch port of a small TF-slim ResNet-style net (see test_slim_same.py), written the way
people port slim: slim's ``conv2d_same`` (an explicit ``tf.pad`` then a VALID conv) becomes a conv with
symmetric ``padding=k // 2``, BatchNorm keeps PyTorch's default epsilon, torchvision-style names
(``conv1`` / ``bn1``) for slim's ``conv1`` / ``conv1/BatchNorm`` scopes."""

import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv2 = nn.Conv2d(8, 12, 3, padding=1)  # TF: "SAME", stride 1 (slim conv2d, biases, no BN)
        self.conv3 = nn.Conv2d(12, 16, 3, stride=2, padding=1, bias=False)  # TF: pad [1, 1] + "VALID"
        self.bn3 = nn.BatchNorm2d(16)

    def forward(self, x):
        x = torch.relu(self.conv2(x))
        return torch.relu(self.bn3(self.conv3(x)))


class SlimNet(nn.Module):
    def __init__(self, num_classes: int = 10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 7, stride=2, padding=3, bias=False)  # TF: pad [3, 3] + "VALID"
        self.bn1 = nn.BatchNorm2d(8)
        self.block1 = Block()
        self.logits = nn.Linear(16, num_classes)

    def forward(self, x):
        x = torch.relu(self.bn1(self.conv1(x)))
        x = self.block1(x)
        return self.logits(x.mean(dim=(2, 3)))
