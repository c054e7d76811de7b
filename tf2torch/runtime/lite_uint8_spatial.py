"""LiteRT's uint8 kernels that compute in float32 on the raw uint8 values (not the int8 kernels' fixed point, and
not on q - 128, where float32 rounds otherwise), emulated: RESIZE_BILINEAR (``ResizeBilinearGenericSmallChannel
<uint8>``), LOG_SOFTMAX (the optimized kernel's table of expf), CONCATENATION's requantization
(``ConcatenationWithScaling``)."""

from __future__ import annotations

import torch
from torch import nn

from .lite_int import lite_requantize
from .lite_int_math import TFLiteQuantLogSoftmax, lite_round_away
from .lite_int_spatial import TFLiteQuantConvTranspose2d, lite_transpose_conv_sum


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


class TFLiteUint8LogSoftmax(TFLiteQuantLogSoftmax):
    """LOG_SOFTMAX on uint8: LiteRT's kernel is the int8 one's float arithmetic on the raw uint8 values (the
    table lookup ``255 - max + q`` never leaves 0..255), clamped to [0, 255]."""

    def _codes(self, q):
        return q.clamp(0, 255).to(torch.uint8)


class TFLiteUint8Requantize(nn.Module):
    """A uint8 CONCATENATION input quantized unlike the output (``ConcatenationWithScaling``): round(q * scale +
    bias) (float32, half away from zero) + output zero point, clamped to [0, 255]."""

    def __init__(self, scale, bias, output_zero_point):
        super().__init__()
        self.scale, self.bias, self.output_zero_point = scale, bias, output_zero_point

    def forward(self, q):
        value = q.float() * torch.tensor(self.scale, dtype=torch.float32) + torch.tensor(self.bias, dtype=torch.float32)
        return (lite_round_away(value).long() + self.output_zero_point).clamp(0, 255).to(torch.uint8)


class TFLiteUint8ConvTranspose2d(TFLiteQuantConvTranspose2d):
    """TRANSPOSE_CONV on uint8 (LiteRT's uint8 ``TransposeConvV2``): acc = the scatter sum of (w - weight zero
    point) * (x - input zero point) + bias, one multiplier for every channel, plus the output zero point, clamped
    to [0, 255] (or the fused activation's range). Its ``Quantize`` step runs over the output's flat (N, H, W, C)
    order: a vector loop 16 values at a time (final shift half up), the last size mod 16 values in a scalar loop
    (half away from zero) — measured (tests/tflite/test_uint8_tf1.py's ``ties``: half up everywhere misses 0.02 %,
    the int8 kernel's per-channel split 0.01 %) at batch 1, the only batch TF 1's fixed output shape allows."""

    def __init__(self, *args, weight_zero_point=0, **kwargs):
        super().__init__(*args, **kwargs)
        self.weight_zero_point = weight_zero_point
        self.weight = self.weight.to(torch.uint8)

    def forward(self, x):
        acc = lite_transpose_conv_sum(x.double() - self.input_zero_point, self.weight.double() - self.weight_zero_point,
                                      self.stride, self.padding, self.output_size)
        acc = acc.round().long() + self.bias.long()[:, None, None]
        m, s = self.multiplier.long()[:, None, None], self.shift.long()[:, None, None]
        # the Quantize step's position in the (N, H, W, C) flat order: the vector loop takes all but the last
        # size mod 16 values
        size = acc.numel()
        flat = torch.arange(size).reshape(acc.shape[0], *acc.shape[2:], acc.shape[1]).permute(0, 3, 1, 2)
        vector = flat < size // 16 * 16
        out = torch.where(vector, lite_requantize(acc, m, s, True), lite_requantize(acc, m, s))
        return (out + self.output_zero_point).clamp(self.output_min, self.output_max).to(torch.uint8)
