"""A user's PyTorch port of fixtures/tf1 (see make_fixtures.make_tf1), written the usual way:
symmetric k // 2 padding, PyTorch's BatchNorm epsilon, and a channels-first flatten before the Dense."""

import torch
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(3, 2, padding=1)
        self.dw = nn.Conv2d(8, 16, 3, padding=1, groups=8, bias=False)
        self.fc = nn.Linear(144, 10)

    def forward(self, x):
        x = self.pool(torch.relu(self.bn1(self.conv1(x))))
        return self.fc(torch.flatten(self.dw(x), 1))
