"""A user's PyTorch port of the fixtures' small CNN, written the usual way: ``padding=k // 2`` everywhere
(TF's 'SAME' at stride 2 pads only bottom/right), PyTorch's BatchNorm epsilon, activations as calls."""

import torch
import torch.nn as nn


class SmallCnn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.pool1 = nn.MaxPool2d(2)
        self.dw1 = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.conv2 = nn.Conv2d(8, 12, (3, 1), stride=2, padding=(1, 0))
        self.logits = nn.Linear(48, 10)

    def forward(self, x):
        x = self.pool1(self.bn1(torch.relu(self.conv1(x))))
        x = self.conv2(self.dw1(x))
        return self.logits(torch.flatten(x.permute(0, 2, 3, 1), 1))  # Keras flattens NHWC
