"""LiteRT's full-integer int8 activations, emulated (the arithmetic they share is ``runtime/lite_int.py``'s):
table lookups (LOGISTIC, TANH), requantization (int8 -> int8 QUANTIZE), SOFTMAX, HARD_SWISH (gemmlowp's 16-bit
fixed point) and LEAKY_RELU, each as LiteRT's builtin kernel computes it.
"""

from __future__ import annotations

import torch
from torch import nn

from .lite_int import lite_clamp_int8, lite_requantize, lite_shift_down


class TFLiteQuantLUT(nn.Module):
    """An int8 -> int8 function as LiteRT's optimized kernels compute it: a 256-entry table made from
    the float function (LOGISTIC, TANH), indexed by q + 128."""

    def __init__(self):
        super().__init__()
        self.register_buffer("table", torch.zeros(256, dtype=torch.int8))

    def forward(self, q):
        return self.table[q.long() + 128]


class TFLiteQuantRescale(nn.Module):
    """An int8 tensor onto another scale and zero point (RELU / RELU6 / RELU_N1_TO_1, whose bounds are the
    clamp, and QUANTIZE int8 -> int8): (q - input zero point) * multiplier * 2**(shift - 31), rounded,
    plus the output zero point, clamped to [output_min, output_max]."""

    def __init__(self, input_zero_point, multiplier, shift, output_zero_point, output_min=-128, output_max=127):
        super().__init__()
        self.input_zero_point, self.multiplier, self.shift = input_zero_point, multiplier, shift
        self.output_zero_point, self.output_min, self.output_max = output_zero_point, output_min, output_max

    def forward(self, q):
        out = lite_requantize(q.long() - self.input_zero_point, torch.tensor(self.multiplier), torch.tensor(self.shift))
        return lite_clamp_int8(out + self.output_zero_point, self.output_min, self.output_max)


class TFLiteQuantSoftmax(nn.Module):
    """SOFTMAX on int8 over the last axis, as LiteRT's optimized kernel: ``table[255 - k]`` holds
    expf(-input_scale * beta * k) (float32); each row sums table[255 - max + q] in order (float32), and each
    output is round(table[...] / (sum * output_scale)) + output zero point, clamped. ``dim``: the axis."""

    def __init__(self, output_scale, output_zero_point, dim=-1):
        super().__init__()
        self.output_scale, self.output_zero_point, self.dim = output_scale, output_zero_point, dim
        self.register_buffer("table", torch.zeros(256))

    def forward(self, q):
        q = q.long().movedim(self.dim, -1)
        exps = self.table[255 - q.amax(dim=-1, keepdim=True) + q]
        total = exps.cumsum(dim=-1)[..., -1:]  # a running float32 sum, in LiteRT's order
        inverse = 1.0 / (total * self.output_scale)
        scaled = (exps * inverse).double()
        rounded = torch.sign(scaled) * torch.floor(scaled.abs() + 0.5)
        out = lite_clamp_int8(rounded.long() + self.output_zero_point, -128, 127)
        return out.movedim(-1, self.dim)


def lite_high_mul16(a, b, rounding=True):
    """gemmlowp's ``SaturatingRoundingDoublingHighMul`` on int16 values (``rounding=False``: TFLite's
    ``SaturatingDoublingHighMul``, truncating): (2 * a * b) / 2**16, saturated at -32768 * -32768."""
    ab = a * b
    if rounding:
        ab = ab + torch.where(ab >= 0, 1 << 14, 1 - (1 << 14))
    out = torch.div(ab, 1 << 15, rounding_mode="trunc")
    return torch.where((a == -32768) & (b == -32768), 32767, out)


class TFLiteQuantHardSwish(nn.Module):
    """HARD_SWISH on int8 (LiteRT's ``HardSwish``, 16-bit fixed point): x on a "high-res" scale (x 2**7),
    times the output multiplier; a "relu-ish" factor, x rescaled so that 3.0 is 32768, saturated, mapped
    from [-1, 1] to [0, 1]; their product (truncating), shifted to the output scale, plus the zero point."""

    def __init__(self, input_zero_point, output_zero_point, output_multiplier, output_exponent, reluish_multiplier,
                 reluish_exponent):
        super().__init__()
        self.input_zero_point, self.output_zero_point = input_zero_point, output_zero_point
        self.output_multiplier, self.output_exponent = output_multiplier, output_exponent
        self.reluish_multiplier, self.reluish_exponent = reluish_multiplier, reluish_exponent

    def forward(self, q):
        hires = (q.long() - self.input_zero_point) * 128
        preshift = lite_high_mul16(hires, torch.tensor(self.output_multiplier))
        reluish = hires
        if self.reluish_exponent > 0:  # saturating left shifts around the multiply, as LiteRT's
            reluish = (reluish << (self.reluish_exponent - 1)).clamp(-32768, 32767)
        reluish = lite_high_mul16(reluish, torch.tensor(self.reluish_multiplier))
        if self.reluish_exponent > 0:
            reluish = (reluish << 1).clamp(-32768, 32767)
        if self.reluish_exponent < 0:
            reluish = lite_shift_down(reluish, torch.tensor(-self.reluish_exponent))
        reluish = (reluish + (1 << 15)) >> 1
        out = lite_high_mul16(reluish, preshift, rounding=False)
        out = lite_shift_down(out, torch.tensor(-self.output_exponent)) + self.output_zero_point
        return lite_clamp_int8(out, -128, 127)


class TFLiteQuantLeakyRelu(nn.Module):
    """LEAKY_RELU on int8: x - zero point requantized by input / output scale where it is >= 0, by
    alpha * input / output scale where negative, plus the output zero point, clamped. ``params``:
    (multiplier, shift) of the identity and of alpha."""

    def __init__(self, input_zero_point, params, output_zero_point):
        super().__init__()
        self.input_zero_point, self.params = input_zero_point, tuple(tuple(p) for p in params)
        self.output_zero_point = output_zero_point

    def forward(self, q):
        x = q.long() - self.input_zero_point
        (mi, si), (ma, sa) = (tuple(torch.tensor(v) for v in p) for p in self.params)
        out = torch.where(x >= 0, lite_requantize(x, mi, si), lite_requantize(x, ma, sa))
        return lite_clamp_int8(out + self.output_zero_point, -128, 127)
