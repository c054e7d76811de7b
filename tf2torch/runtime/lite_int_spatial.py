"""LiteRT's int8 kernels that move pixels, emulated: nearest-neighbour resizes and mirror padding (rows and
columns picked by index), the bilinear resize's own fixed-point interpolation, and TRANSPOSE_CONV in int8
(full-integer) and in its dynamic-range (hybrid) form.

The index tables and interpolation weights are computed at conversion (``tflite/int_spatial_math.py``) and
held as buffers; integer sums are taken in float64 (exact: far below 2**53) as in ``runtime/lite_int.py``.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from .lite_int import lite_clamp_int8, lite_requantize
from .lite_quant import lite_quantize_asymmetric


class TFLitePixelGather(nn.Module):
    """Rows then columns of an (N, C, H, W) tensor picked by index: a nearest-neighbour resize or a mirror
    padding of int8 values, which LiteRT copies as they are (its int8 kernels keep the input's scale)."""

    def __init__(self, rows, cols):
        super().__init__()
        self.register_buffer("rows", torch.zeros(rows, dtype=torch.int64))
        self.register_buffer("cols", torch.zeros(cols, dtype=torch.int64))

    def forward(self, x):
        return x.index_select(2, self.rows).index_select(3, self.cols)


def lite_bilinear_sum(v, rows, row_weights, cols, col_weights):
    """Each output's four neighbours times their weights (int64): rows first, then columns, which is the
    kernel's sum of four products regrouped (integers: exact either way)."""
    r = v.index_select(2, rows[0]) * row_weights[0][:, None] + v.index_select(2, rows[1]) * row_weights[1][:, None]
    return r.index_select(3, cols[0]) * col_weights[0] + r.index_select(3, cols[1]) * col_weights[1]


class TFLiteQuantResizeBilinear(nn.Module):
    """RESIZE_BILINEAR on int8 (LiteRT's ``ResizeBilinearInteger``): each output is the four neighbours
    weighted in 1/1024ths per axis (``rows`` / ``cols``: the lower and upper source index, ``row_weights`` /
    ``col_weights``: their weights), the sum (in 2**-20) divided by 2**20 rounding halves away from zero."""

    def __init__(self, rows, cols):
        super().__init__()
        for name, size in (("rows", rows), ("cols", cols)):
            self.register_buffer(name, torch.zeros(2, size, dtype=torch.int64))
            self.register_buffer(name[:-1] + "_weights", torch.zeros(2, size, dtype=torch.int64))

    def forward(self, x):
        total = lite_bilinear_sum(x.long(), self.rows, self.row_weights, self.cols, self.col_weights)
        half = torch.where(total > 0, 1 << 19, -(1 << 19))  # (TFLITE_SINGLE_ROUNDING builds add 2**19 and floor)
        return lite_clamp_int8(torch.div(total + half, 1 << 20, rounding_mode="trunc"), -128, 127)


def lite_transpose_conv_sum(x, weight, stride, padding, output_size):
    """The scatter sums of a transposed convolution, in float64, on TFLite's output grid: each input pixel
    lands at (i * stride - padding + kernel offset); pixels outside [0, output_size) are dropped, positions
    nothing reaches are 0. ``weight`` (in, out, kh, kw); ``padding`` (top, left)."""
    full = F.conv_transpose2d(x, weight, None, stride)
    (top, left), (height, width) = padding, output_size
    grow = (0, max(0, left + width - full.shape[3]), 0, max(0, top + height - full.shape[2]))
    return F.pad(full, grow)[:, :, top:top + height, left:left + width]


class TFLiteQuantConvTranspose2d(nn.Module):
    """TRANSPOSE_CONV on int8 (LiteRT's optimized ``TransposeConvV2``): acc = the scatter sum of w * (x - input
    zero point) + bias, requantized per output channel, plus the output zero point, clamped to the fused
    activation's range. Its ``Quantize`` step takes channels 8 at a time in a vector loop, whose final shift
    rounds half up, and the last C mod 8 channels in a scalar loop (half away from zero) (measured:
    tests/tflite/test_int8_spatial.py)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_size, input_zero_point=0,
                 output_zero_point=0, output_min=-128, output_max=127):
        super().__init__()
        self.stride, self.padding, self.output_size = tuple(stride), tuple(padding), tuple(output_size)
        self.input_zero_point, self.output_zero_point = input_zero_point, output_zero_point
        self.output_min, self.output_max = output_min, output_max
        self.register_buffer("weight", torch.zeros(in_channels, out_channels, *kernel_size, dtype=torch.int8))
        self.register_buffer("bias", torch.zeros(out_channels, dtype=torch.int32))
        self.register_buffer("multiplier", torch.zeros(out_channels, dtype=torch.int32))
        self.register_buffer("shift", torch.zeros(out_channels, dtype=torch.int32))

    def forward(self, x):
        acc = lite_transpose_conv_sum(x.double() - self.input_zero_point, self.weight.double(), self.stride,
                                      self.padding, self.output_size)
        acc = acc.round().long() + self.bias.long()[:, None, None]
        m, s = self.multiplier.long()[:, None, None], self.shift.long()[:, None, None]
        channels = acc.shape[1]
        vector = (torch.arange(channels) < channels // 8 * 8)[:, None, None]
        out = torch.where(vector, lite_requantize(acc, m, s, True), lite_requantize(acc, m, s))
        return lite_clamp_int8(out + self.output_zero_point, self.output_min, self.output_max)


class TFLiteHybridConvTranspose2d(nn.Module):
    """TRANSPOSE_CONV with int8 weights on float input (LiteRT's ``HybridTransposeConv``): each batch item is
    quantized to int8 as a whole (asymmetric), the integer scatter sums of (q - zero point) * w are scaled by
    ``item scale * weight_scale[o]``, ``bias`` added. LiteRT adds each product to a float32 sum one by one;
    the exact integer sum scaled once differs from it by float32 rounding only."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, padding, output_size, bias=True):
        super().__init__()
        self.stride, self.padding, self.output_size = tuple(stride), tuple(padding), tuple(output_size)
        self.register_buffer("weight", torch.zeros(in_channels, out_channels, *kernel_size, dtype=torch.int8))
        self.register_buffer("weight_scale", torch.ones(out_channels))
        self.register_buffer("bias", torch.zeros(out_channels) if bias else None)

    def forward(self, x):
        q, scale, zp = lite_quantize_asymmetric(x.reshape(x.shape[0], -1).float())
        centred = (q - zp).reshape(x.shape)
        acc = lite_transpose_conv_sum(centred, self.weight.double(), self.stride, self.padding, self.output_size)
        y = acc.float() * (self.weight_scale[:, None, None] * scale[:, :, None, None])
        if self.bias is not None:
            y = y + self.bias[:, None, None]
        return y
