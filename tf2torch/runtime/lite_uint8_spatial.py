"""LiteRT's uint8 RESIZE_BILINEAR (``ResizeBilinearGenericSmallChannel<uint8>``: float32 arithmetic, not the
int8 kernel's fixed point), emulated."""

from __future__ import annotations

import torch
from torch import nn


class TFLiteUint8ResizeBilinear(nn.Module):
    """RESIZE_BILINEAR on uint8: for each output the four neighbours (``rows`` / ``cols``: lower and upper
    source index) times float32 weights made of the fractions fy, fx as the kernel makes them ((1 - fy) * (1 -
    fx), (1 - fy) * fx, fy * (1 - fx), fy * fx), summed in that order in float32, plus 0.5, truncated (C's cast).
    """

    def __init__(self, rows, cols):
        super().__init__()
        for name, size in (("rows", rows), ("cols", cols)):
            self.register_buffer(name, torch.zeros(2, size, dtype=torch.int64))
            self.register_buffer(name[:-1] + "_fractions", torch.zeros(size, dtype=torch.float32))

    def forward(self, x):
        fy, fx = self.row_fractions[:, None], self.col_fractions[None, :]
        one = torch.ones((), dtype=torch.float32)
        weights = ((one - fy) * (one - fx), (one - fy) * fx, fy * (one - fx), fy * fx)
        v = x.float()  # uint8 values are exact in float32
        top, bottom = v.index_select(2, self.rows[0]), v.index_select(2, self.rows[1])
        total = top.index_select(3, self.cols[0]) * weights[0]
        total = total + top.index_select(3, self.cols[1]) * weights[1]
        total = total + bottom.index_select(3, self.cols[0]) * weights[2]
        total = total + bottom.index_select(3, self.cols[1]) * weights[3]
        return torch.trunc(total + 0.5).clamp(0, 255).to(torch.uint8)
