"""LiteRT's uint8 kernels that compute in float32 on the raw uint8 values (not the int8 kernels' fixed point, and
not on q - 128, where float32 rounds otherwise), emulated: RESIZE_BILINEAR (``ResizeBilinearGenericSmallChannel
<uint8>``), LOG_SOFTMAX (the optimized kernel's table of expf), CONCATENATION's requantization
(``ConcatenationWithScaling``)."""

from __future__ import annotations

import torch
from torch import nn

from .lite_int_math import lite_round_away


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


class TFLiteUint8LogSoftmax(nn.Module):
    """LOG_SOFTMAX on uint8 (as ``TFLiteQuantLogSoftmax`` on int8, on the raw uint8 values): per row, the
    float32 running sum of table[255 - max + q], its log; each output rint(scale * q - (input_scale * max + log
    sum) / output_scale) + zero point, clamped to [0, 255]. ``dim``: TF's last axis."""

    def __init__(self, input_scale, output_scale, output_zero_point, dim=-1):
        super().__init__()
        self.input_scale, self.output_scale, self.output_zero_point, self.dim = (
            input_scale, output_scale, output_zero_point, dim)
        self.register_buffer("table", torch.zeros(256))

    def forward(self, q):
        q = q.long().movedim(self.dim, -1)
        top = q.amax(dim=-1, keepdim=True)
        total = self.table[255 - top + q].cumsum(dim=-1)[..., -1:]  # float32, in LiteRT's order
        log_sum = torch.log(total.double()).float()  # logf, correctly rounded
        s_in, s_out = (torch.tensor(v, dtype=torch.float32) for v in (self.input_scale, self.output_scale))
        precomputed = (s_in * top.float() + log_sum) / s_out
        log_prob = (s_in / s_out) * q.float() - precomputed
        out = (torch.round(log_prob).long() + self.output_zero_point).clamp(0, 255)  # rint: half to even
        return out.to(torch.uint8).movedim(-1, self.dim)


class TFLiteUint8Requantize(nn.Module):
    """A uint8 CONCATENATION input quantized unlike the output (``ConcatenationWithScaling``): round(q * scale +
    bias) (float32, half away from zero) + output zero point, clamped to [0, 255]."""

    def __init__(self, scale, bias, output_zero_point):
        super().__init__()
        self.scale, self.bias, self.output_zero_point = scale, bias, output_zero_point

    def forward(self, q):
        value = q.float() * torch.tensor(self.scale, dtype=torch.float32) + torch.tensor(self.bias, dtype=torch.float32)
        return (lite_round_away(value).long() + self.output_zero_point).clamp(0, 255).to(torch.uint8)
