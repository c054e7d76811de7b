"""LiteRT's 16x8 kernels (int16 activations, symmetric: zero point 0; int8 weights; int64 biases), emulated,
with the requantization and the ends (QUANTIZE, requantize) that uint8 models share with them.

The convolutions and fully-connected layers take int64 biases, for which LiteRT has only its reference
kernels (tflite/kernels/conv.cc: "there is no optimized kernel for int64 bias yet"): an int64 accumulator
and ``MultiplyByQuantizedMultiplier(int64_t x, ...)``, which rounds the Q31 multiplier to 16 bits first and
then shifts once, rounding half up (``lite_requantize_wide``). ADD / SUB / MUL / MEAN and the requantizing
ops use the int32 ``MultiplyByQuantizedMultiplier`` of runtime/lite_int.py (two roundings, halves away from
zero). Sums are taken in float64 (exact: every partial sum of int16 x int8 products is below 2**53).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from .lite_int import lite_requantize
from .lite_quantize import lite_affine_quantize

LITE_INT_TYPES = {"int8": (torch.int8, -128, 127), "uint8": (torch.uint8, 0, 255), "int16": (torch.int16, -32768, 32767)}


def lite_requantize_wide(acc, multiplier, shift):
    """``MultiplyByQuantizedMultiplier(int64_t acc, multiplier, shift)``: the multiplier's top 16 bits
    (rounded, saturated at 0x7FFF), then acc * m16 / 2**(15 - shift) rounded half up (one shift)."""
    reduced = torch.where(multiplier < 0x7FFF0000, (multiplier + (1 << 15)) >> 16, torch.full_like(multiplier, 0x7FFF))
    total = 15 - shift
    return (acc * reduced + (torch.ones_like(acc) << (total - 1))) >> total


def lite_requantize_single(acc, multiplier, shift):
    """acc * multiplier * 2**(shift - 31) with one rounding, half up: what LiteRT's 16x8 FULLY_CONNECTED gives
    (measured: tests/tflite/test_int16.py; the reduced 16-bit multiplier of the convolutions' is one step off
    on ~5-10 % of its outputs). int64 arithmetic: exact while |acc| < 2**32."""
    total = 31 - shift
    return (acc * multiplier + (torch.ones_like(acc) << (total - 1))) >> total


def lite_clamp_to(x, low, high, dtype):
    return x.clamp(low, high).to(LITE_INT_TYPES[dtype][0])


class TFLiteQuant16Conv2d(nn.Module):
    """CONV_2D / DEPTHWISE_CONV_2D on int16 (LiteRT's reference ``ConvPerChannel`` / ``DepthwiseConvPerChannel``
    for 16x8): acc = sum w * x + bias (int64), requantized per output channel, clamped. ``padding``
    (left, right, top, bottom) is TF's, zeros: LiteRT skips pixels outside the image (the zero point is 0)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=(0, 0, 0, 0), dilation=1, groups=1,
                 output_min=-32768, output_max=32767):
        super().__init__()
        self.stride, self.padding, self.dilation, self.groups = stride, tuple(padding), dilation, groups
        self.output_min, self.output_max = output_min, output_max
        self.register_buffer("weight", torch.zeros(out_channels, in_channels // groups, *kernel_size, dtype=torch.int8))
        self.register_buffer("bias", torch.zeros(out_channels, dtype=torch.int64))
        self.register_buffer("multiplier", torch.zeros(out_channels, dtype=torch.int32))
        self.register_buffer("shift", torch.zeros(out_channels, dtype=torch.int32))

    def forward(self, x):
        acc = F.conv2d(F.pad(x.double(), self.padding), self.weight.double(), None, self.stride, 0, self.dilation,
                       self.groups)
        acc = acc.round().long() + self.bias[:, None, None]
        out = lite_requantize_wide(acc, self.multiplier.long()[:, None, None], self.shift.long()[:, None, None])
        return lite_clamp_to(out, self.output_min, self.output_max, "int16")


class TFLiteQuant16Linear(nn.Module):
    """FULLY_CONNECTED on int16 (LiteRT's 16x8 ``FullyConnected``): acc = sum w * x + bias (int64), requantized
    per output (or once for all: ``channels=1``) with a single rounding, clamped."""

    def __init__(self, in_features, out_features, channels=None, output_min=-32768, output_max=32767):
        super().__init__()
        self.output_min, self.output_max = output_min, output_max
        self.register_buffer("weight", torch.zeros(out_features, in_features, dtype=torch.int8))
        self.register_buffer("bias", torch.zeros(out_features, dtype=torch.int64))
        self.register_buffer("multiplier", torch.zeros(channels or out_features, dtype=torch.int32))
        self.register_buffer("shift", torch.zeros(channels or out_features, dtype=torch.int32))

    def forward(self, x):
        acc = (x.double() @ self.weight.double().T).round().long() + self.bias
        out = lite_requantize_single(acc, self.multiplier.long(), self.shift.long())
        return lite_clamp_to(out, self.output_min, self.output_max, "int16")


class TFLiteQuant16Add(nn.Module):
    """ADD (SUB: ``sign=-1``) of two int16 tensors, LiteRT's general-scale path (``pot_scale_int16`` false):
    each operand shifted left by 15 bits and rescaled to twice the larger input scale, the sum rescaled to
    the output, clamped. ``params``: (multiplier, shift) of input 1, input 2 and the output. With
    ``constant_shape``, input 2 is the int16 buffer ``constant`` (one value, or one per channel)."""

    def __init__(self, params, output_min=-32768, output_max=32767, sign=1, constant_shape=None):
        super().__init__()
        self.params, self.sign = tuple(tuple(p) for p in params), sign
        self.output_min, self.output_max = output_min, output_max
        self.register_buffer("constant", torch.zeros(constant_shape, dtype=torch.int16) if constant_shape else None)

    def forward(self, a, b=None):
        b = self.constant if b is None else b
        (m1, s1), (m2, s2), (mo, so) = (tuple(torch.tensor(v) for v in p) for p in self.params)
        a = lite_requantize(a.long() << 15, m1, s1)
        b = lite_requantize(b.long() << 15, m2, s2)
        return lite_clamp_to(lite_requantize(a + self.sign * b, mo, so), self.output_min, self.output_max, "int16")


class TFLiteQuant16Mul(nn.Module):
    """MUL of two int16 tensors (LiteRT's ``MulElementwise``): a * b requantized by in1 * in2 / out scale, clamped.
    With ``constant_shape``, b is the int16 buffer ``constant`` (one value, or one per channel)."""

    def __init__(self, multiplier, shift, output_min=-32768, output_max=32767, constant_shape=None):
        super().__init__()
        self.multiplier, self.shift, self.output_min, self.output_max = multiplier, shift, output_min, output_max
        self.register_buffer("constant", torch.zeros(constant_shape, dtype=torch.int16) if constant_shape else None)

    def forward(self, a, b=None):
        b = self.constant if b is None else b
        out = lite_requantize(a.long() * b.long(), torch.tensor(self.multiplier), torch.tensor(self.shift))
        return lite_clamp_to(out, self.output_min, self.output_max, "int16")


class TFLiteQuant16Mean(nn.Module):
    """MEAN of int16 over ``dims`` (LiteRT's ``QuantizedMeanOrSum``): the sum requantized by a multiplier that
    folds in 1 / count, clamped to int16."""

    def __init__(self, dims, multiplier, shift, keepdim=False):
        super().__init__()
        self.dims, self.multiplier, self.shift, self.keepdim = tuple(dims), multiplier, shift, keepdim

    def forward(self, x):
        total = x.long().sum(dim=self.dims, keepdim=self.keepdim)
        return lite_clamp_to(lite_requantize(total, torch.tensor(self.multiplier), torch.tensor(self.shift)),
                             -32768, 32767, "int16")


class TFLiteQuant16Pool2d(nn.Module):
    """AVERAGE_POOL_2D / MAX_POOL_2D on int16 (same scale in and out): the window's pixels inside the image,
    their maximum, or their sum divided by their count rounded half away from zero; clamped."""

    def __init__(self, kernel_size, stride, padding=(0, 0, 0, 0), output_min=-32768, output_max=32767, max=False):
        super().__init__()
        self.kernel_size, self.stride, self.padding = tuple(kernel_size), tuple(stride), tuple(padding)
        self.output_min, self.output_max, self.max = output_min, output_max, max

    def forward(self, x):
        if self.max:
            out = F.max_pool2d(F.pad(x.double(), self.padding, value=-1e9), self.kernel_size, self.stride).long()
            return lite_clamp_to(out, self.output_min, self.output_max, "int16")
        ones = torch.ones_like(x[:1, :1], dtype=torch.float64)
        total = F.avg_pool2d(F.pad(x.double(), self.padding), self.kernel_size, self.stride, divisor_override=1)
        count = F.avg_pool2d(F.pad(ones, self.padding), self.kernel_size, self.stride, divisor_override=1)
        total, count = total.round().long(), count.round().long()
        half = torch.where(total > 0, count // 2, -(count // 2))
        out = torch.div(total + half, count, rounding_mode="trunc")  # C's division truncates
        return lite_clamp_to(out, self.output_min, self.output_max, "int16")


class TFLiteRequantize(nn.Module):
    """An integer tensor onto another scale, zero point or type (QUANTIZE int16 -> int16 / int8, uint8 <-> int8;
    RELU / RELU6 / RELU_N1_TO_1 on int16, whose bounds are the clamp): (q - input zero point) * multiplier *
    2**(shift - 31), rounded, plus the output zero point, clamped to [output_min, output_max] of ``dtype``."""

    def __init__(self, input_zero_point, multiplier, shift, output_zero_point, output_min, output_max, dtype):
        super().__init__()
        self.input_zero_point, self.multiplier, self.shift = input_zero_point, multiplier, shift
        self.output_zero_point, self.output_min, self.output_max, self.dtype = output_zero_point, output_min, output_max, dtype

    def forward(self, q):
        out = lite_requantize(q.long() - self.input_zero_point, torch.tensor(self.multiplier), torch.tensor(self.shift))
        return lite_clamp_to(out + self.output_zero_point, self.output_min, self.output_max, self.dtype)


class TFLiteQuantizeTo(nn.Module):
    """QUANTIZE float -> ``dtype`` (int16, uint8) as LiteRT's optimized ``AffineQuantize`` (``lite_affine_quantize``:
    the vector loop's float32 reciprocal rounded half to even, the scalar tail's division rounded half away from
    zero), plus the zero point, clamped to the type's range."""

    def __init__(self, scale, zero_point, dtype, channels_first=False, flat_from=None):
        super().__init__()
        self.scale, self.zero_point, self.dtype = scale, zero_point, dtype
        self.channels_first, self.flat_from = channels_first, flat_from

    def forward(self, x):
        _, low, high = LITE_INT_TYPES[self.dtype]
        q = lite_affine_quantize(x, self.scale, self.zero_point, low, high, self.channels_first, self.flat_from)
        return q.to(LITE_INT_TYPES[self.dtype][0])
