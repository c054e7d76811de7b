"""A user's PyTorch port of the tiny Keras CNN of test_bn_epsilon_evidence.py: PyTorch's own BatchNorm
epsilon (1e-5), k // 2 padding for the stride-1 'same' conv."""

import torch
import torch.nn as nn


class EpsNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(8)  # eps=1e-5, PyTorch's default
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        x = torch.relu(self.bn(self.conv(x)))
        return self.fc(x.mean(dim=(2, 3)))
