"""LiteRT's full-integer int8 kernels, emulated: int8 activations with a scale and zero point each, int8
weights (per channel), int32 biases and accumulators, fixed-point requantization.

Integer sums are taken in float64 (exact: every partial sum of int8 products is far below 2**53) and
rounded to int64; the requantization is LiteRT's own fixed-point arithmetic on int64 tensors
(tflite/kernels/internal/common.h): ``SaturatingRoundingDoublingHighMul`` (the product's high 32 bits,
doubled, rounded half away from zero) then a rounding right shift. The builtin (optimized) kernels round
that last shift half up in their vector loops (x86 builds run TFLite's NEON code through an SSE
translation, and NEON's rounding shift rounds half up: convolutions, depthwise convolutions, fully-connected
layers, MEAN's 4-D path), where ``RoundingDivideByPOT`` (the reference kernels', and the optimized kernels'
scalar loops) rounds half away from zero: ``upward`` chooses, as measured against the interpreter
(tests/tflite/test_full_integer.py).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from .lite_quantize import lite_affine_quantize


def lite_high_mul(x, multiplier):
    """``SaturatingRoundingDoublingHighMul(x, multiplier)`` on int64 tensors holding int32 values:
    (2 * x * m) / 2**32, rounded half away from zero (the saturating case, both INT32_MIN, cannot occur:
    multipliers are positive)."""
    ab = x * multiplier
    nudge = torch.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    return torch.div(ab + nudge, 1 << 31, rounding_mode="trunc")  # C's integer division truncates


def lite_shift_down(x, exponent, upward=False):
    """x / 2**exponent rounded: half away from zero (``RoundingDivideByPOT``) or half up (``upward``)."""
    power = torch.ones_like(x) << exponent
    if upward:
        return torch.div(x + (power >> 1), power, rounding_mode="floor")
    remainder = torch.remainder(x, power)  # x & mask in two's complement
    threshold = (power - 1 >> 1) + (x < 0).long()
    return torch.div(x, power, rounding_mode="floor") + (remainder > threshold).long()


def lite_requantize(acc, multiplier, shift, upward=False):
    """``MultiplyByQuantizedMultiplier(acc, multiplier, shift)``: acc * multiplier * 2**(shift - 31),
    rounded as LiteRT does (int64 tensors; ``multiplier`` / ``shift`` broadcast against ``acc``)."""
    left = shift.clamp(min=0)
    return lite_shift_down(lite_high_mul(acc << left, multiplier), (-shift).clamp(min=0), upward)


def lite_clamp_int8(x, low, high):
    return x.clamp(low, high).to(torch.int8)


class TFLiteQuantConv2d(nn.Module):
    """CONV_2D / DEPTHWISE_CONV_2D on int8 (LiteRT's ``ConvPerChannel``): acc = sum w * (x - input zero
    point) + bias (int32), then per output channel acc * multiplier * 2**(shift - 31) rounded, plus the
    output zero point, clamped to the fused activation's range. ``padding`` (left, right, top, bottom) is
    TF's, applied to x - zero point: LiteRT skips pixels outside the image, which contribute that 0."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=(0, 0, 0, 0), dilation=1, groups=1,
                 input_zero_point=0, output_zero_point=0, output_min=-128, output_max=127):
        super().__init__()
        self.stride, self.padding, self.dilation, self.groups = stride, tuple(padding), dilation, groups
        self.input_zero_point, self.output_zero_point = input_zero_point, output_zero_point
        self.output_min, self.output_max = output_min, output_max
        self.register_buffer("weight", torch.zeros(out_channels, in_channels // groups, *kernel_size, dtype=torch.int8))
        self.register_buffer("bias", torch.zeros(out_channels, dtype=torch.int32))
        self.register_buffer("multiplier", torch.zeros(out_channels, dtype=torch.int32))
        self.register_buffer("shift", torch.zeros(out_channels, dtype=torch.int32))

    def forward(self, x):
        centred = F.pad(x.double() - self.input_zero_point, self.padding)
        acc = F.conv2d(centred, self.weight.double(), None, self.stride, 0, self.dilation, self.groups)
        acc = acc.round().long() + self.bias.long()[:, None, None]
        out = lite_requantize(acc, self.multiplier.long()[:, None, None], self.shift.long()[:, None, None], True)
        return lite_clamp_int8(out + self.output_zero_point, self.output_min, self.output_max)


class TFLiteQuantLinear(nn.Module):
    """FULLY_CONNECTED on int8: acc = sum w * (x - input zero point) + bias, requantized per output (or once
    for all when the weights have one scale), plus the output zero point, clamped."""

    def __init__(self, in_features, out_features, channels=None, input_zero_point=0, output_zero_point=0,
                 output_min=-128, output_max=127):
        super().__init__()
        self.input_zero_point, self.output_zero_point = input_zero_point, output_zero_point
        self.output_min, self.output_max = output_min, output_max
        self.register_buffer("weight", torch.zeros(out_features, in_features, dtype=torch.int8))
        self.register_buffer("bias", torch.zeros(out_features, dtype=torch.int32))
        self.register_buffer("multiplier", torch.zeros(channels or out_features, dtype=torch.int32))
        self.register_buffer("shift", torch.zeros(channels or out_features, dtype=torch.int32))

    def forward(self, x):
        acc = (x.double() - self.input_zero_point) @ self.weight.double().T
        acc = acc.round().long() + self.bias.long()
        out = lite_requantize(acc, self.multiplier.long(), self.shift.long(), True)
        return lite_clamp_int8(out + self.output_zero_point, self.output_min, self.output_max)


class TFLiteQuantAdd(nn.Module):
    """ADD (or SUB, ``sign=-1``) of two int8 tensors (LiteRT's integer ``Add``): each operand, less its
    zero point, is shifted left by 20 bits and rescaled to twice the larger input scale; the sum is
    rescaled to the output, its zero point added, clamped. ``params``: (multiplier, shift) of input 1,
    input 2 and the output. With ``constant_shape``, input 2 is the int8 buffer ``constant`` (one value
    per channel: a folded batch norm's shift)."""

    def __init__(self, zero_points, params, output_zero_point=0, output_min=-128, output_max=127, sign=1,
                 constant_shape=None):
        super().__init__()
        self.zero_points, self.params, self.sign = tuple(zero_points), tuple(tuple(p) for p in params), sign
        self.output_zero_point, self.output_min, self.output_max = output_zero_point, output_min, output_max
        self.register_buffer("constant", torch.zeros(constant_shape, dtype=torch.int8) if constant_shape else None)

    def forward(self, a, b=None):
        b = self.constant if b is None else b
        (m1, s1), (m2, s2), (mo, so) = (tuple(torch.tensor(v) for v in p) for p in self.params)
        a = lite_requantize((a.long() - self.zero_points[0]) << 20, m1, s1)
        b = lite_requantize((b.long() - self.zero_points[1]) << 20, m2, s2)
        out = lite_requantize(a + self.sign * b, mo, so) + self.output_zero_point
        return lite_clamp_int8(out, self.output_min, self.output_max)


class TFLiteQuantMul(nn.Module):
    """MUL of two int8 tensors: (a - za) * (b - zb) requantized by in1 * in2 / out scale, plus the output
    zero point, clamped. With ``constant_shape``, b is the int8 buffer ``constant`` (a folded batch norm's
    per-channel scale)."""

    def __init__(self, zero_points, multiplier, shift, output_zero_point=0, output_min=-128, output_max=127,
                 constant_shape=None):
        super().__init__()
        self.zero_points, self.multiplier, self.shift = tuple(zero_points), multiplier, shift
        self.output_zero_point, self.output_min, self.output_max = output_zero_point, output_min, output_max
        self.register_buffer("constant", torch.zeros(constant_shape, dtype=torch.int8) if constant_shape else None)

    def forward(self, a, b=None):
        b = self.constant if b is None else b
        product = (a.long() - self.zero_points[0]) * (b.long() - self.zero_points[1])
        out = lite_requantize(product, torch.tensor(self.multiplier), torch.tensor(self.shift))
        return lite_clamp_int8(out + self.output_zero_point, self.output_min, self.output_max)


class TFLiteQuantMean(nn.Module):
    """MEAN of int8 over ``dims`` (LiteRT's ``QuantizedMeanOrSum``): the sum less count * input zero point,
    requantized by a multiplier that folds in 1 / count, plus the output zero point, clamped. With ``bias``
    (height and width of a 4-D (N, H, W, C) tensor, keepdim: the builtin kernel's own path), the raw sum
    requantized by input scale / (count * output scale), plus ``bias``, clamped; that kernel takes channels
    16 at a time in its vector loop, whose shift rounds half up, and the last C mod 16 in a scalar loop,
    which rounds half away from zero (one thread, the interpreter's default)."""

    def __init__(self, dims, input_zero_point, multiplier, shift, output_zero_point, keepdim=False, bias=None):
        super().__init__()
        self.dims, self.keepdim, self.bias = tuple(dims), keepdim, bias
        self.input_zero_point, self.multiplier, self.shift = input_zero_point, multiplier, shift
        self.output_zero_point = output_zero_point

    def forward(self, x):
        total = x.long().sum(dim=self.dims, keepdim=self.keepdim)
        if self.bias is not None:
            m, s = torch.tensor(self.multiplier), torch.tensor(self.shift)
            vector = (torch.arange(total.shape[-1]) < total.shape[-1] // 16 * 16)
            out = torch.where(vector, lite_requantize(total, m, s, True), lite_requantize(total, m, s)) + self.bias
            return lite_clamp_int8(out, -128, 127)
        count = 1
        for d in self.dims:
            count *= x.shape[d]
        total = total - self.input_zero_point * count
        out = lite_requantize(total, torch.tensor(self.multiplier), torch.tensor(self.shift))
        return lite_clamp_int8(out + self.output_zero_point, -128, 127)


class TFLiteQuantAvgPool2d(nn.Module):
    """AVERAGE_POOL_2D on int8 (same scale in and out): the sum of the window's pixels inside the image
    divided by their count, rounded half away from zero, clamped. ``padding``: (left, right, top, bottom)."""

    def __init__(self, kernel_size, stride, padding=(0, 0, 0, 0), output_min=-128, output_max=127):
        super().__init__()
        self.kernel_size, self.stride, self.padding = tuple(kernel_size), tuple(stride), tuple(padding)
        self.output_min, self.output_max = output_min, output_max

    def forward(self, x):
        ones = torch.ones_like(x[:1, :1], dtype=torch.float64)
        total = F.avg_pool2d(F.pad(x.double(), self.padding), self.kernel_size, self.stride, divisor_override=1)
        count = F.avg_pool2d(F.pad(ones, self.padding), self.kernel_size, self.stride, divisor_override=1)
        total, count = total.round().long(), count.round().long()
        half = torch.where(total > 0, count // 2, -(count // 2))
        out = torch.div(total + half, count, rounding_mode="trunc")
        return lite_clamp_int8(out, self.output_min, self.output_max)


class TFLiteQuantMaxPool2d(nn.Module):
    """MAX_POOL_2D on int8: the largest pixel of the window inside the image, clamped."""

    def __init__(self, kernel_size, stride, padding=(0, 0, 0, 0), output_min=-128, output_max=127):
        super().__init__()
        self.kernel_size, self.stride, self.padding = tuple(kernel_size), tuple(stride), tuple(padding)
        self.output_min, self.output_max = output_min, output_max

    def forward(self, x):
        padded = F.pad(x.double(), self.padding, value=-1e9)  # below every int8: never the maximum
        out = F.max_pool2d(padded, self.kernel_size, self.stride)
        return lite_clamp_int8(out.long(), self.output_min, self.output_max)


class TFLiteQuantize(nn.Module):
    """QUANTIZE float -> int8 (``lite_affine_quantize``: x times the float32 reciprocal of the scale rounded half
    to even, the last size mod 8 values in TFLite's order x / scale in double, halves away from zero), plus the
    zero point, clamped. ``channels_first`` / ``flat_from``: how this tensor's order differs from TFLite's."""

    def __init__(self, scale, zero_point, channels_first=False, flat_from=None):
        super().__init__()
        self.scale, self.zero_point, self.channels_first, self.flat_from = scale, zero_point, channels_first, flat_from

    def forward(self, x):
        q = lite_affine_quantize(x, self.scale, self.zero_point, -128, 127, self.channels_first, self.flat_from)
        return q.to(torch.int8)


class TFLiteDequantize(nn.Module):
    """DEQUANTIZE int8 -> float as LiteRT's builtin kernel computes it: q * scale + (-zero point * scale), each
    step rounded to float32 (not the once-rounded scale * (q - zero point): one ulp apart on half the values)."""

    def __init__(self, scale, zero_point):
        super().__init__()
        self.scale, self.zero_point = scale, zero_point

    def forward(self, q):
        scale = torch.tensor(self.scale, dtype=torch.float32)
        return q.float() * scale + (-self.zero_point) * scale
