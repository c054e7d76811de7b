"""LiteRT's int8 kernels for math operators, emulated (the shared fixed-point arithmetic is
``runtime/lite_int.py``'s): lookup tables over one or two int8 inputs (ABS, RSQRT, SQRT, EXP, LOG, GELU; DIV,
SQUARED_DIFFERENCE: tables the converter computes with the kernel's own arithmetic,
``tflite/quant_tables.py``), MAXIMUM / MINIMUM, REDUCE_MAX / REDUCE_MIN / SUM, PRELU, LOG_SOFTMAX and
BATCH_MATMUL, each as LiteRT's builtin kernel computes it.

A second operand that is a constant of the file is the module's int8 buffer ``constant`` (in TF's
layout: these modules take their inputs in TF's axis order).
"""

from __future__ import annotations

import torch
from torch import nn

from .lite_int import lite_clamp_int8, lite_requantize


def _lite_math_constant(shape):
    return torch.zeros(shape, dtype=torch.int8) if shape is not None else None


def _lite_math_operands(module, a, b):
    """(first, second) operand: ``b`` given, or the module's constant on the side it was in the file."""
    if b is not None:
        return a, b
    return (module.constant, a) if module.constant_first else (a, module.constant)


class TFLiteQuantDomainLUT(nn.Module):
    """An int8 -> int8 table (as ``TFLiteQuantLUT``) for a function LiteRT refuses below ``valid_min``
    (RSQRT, SQRT of a negative value: the interpreter stops with an error, so does this module)."""

    def __init__(self, valid_min, what="RSQRT"):
        super().__init__()
        self.valid_min, self.what = valid_min, what
        self.register_buffer("table", torch.zeros(256, dtype=torch.int8))

    def forward(self, q):
        if bool((q < self.valid_min).any()):
            raise ValueError(f"{self.what} of an int8 value below {self.valid_min} (a negative real value): "
                             "LiteRT stops with an error there")
        return self.table[q.long() + 128]


class TFLiteQuantPairLUT(nn.Module):
    """An (int8, int8) -> int8 elementwise function (DIV, SQUARED_DIFFERENCE) as a 65,536-entry table, row
    a + 128, column b + 128, broadcasting like TFLite. ``refused``: divisor values LiteRT refuses (DIV: a
    raw 0, which the interpreter's check rejects, and the zero point, a real 0 whose result the kernel
    leaves undefined): the module raises there."""

    def __init__(self, refused=(), what="DIV", constant_shape=None, constant_first=False):
        super().__init__()
        self.refused, self.what, self.constant_first = tuple(refused), what, constant_first
        self.register_buffer("table", torch.zeros(65536, dtype=torch.int8))
        self.register_buffer("constant", _lite_math_constant(constant_shape))

    def forward(self, a, b=None):
        a, b = _lite_math_operands(self, a, b)
        if self.refused and bool(torch.isin(b, torch.tensor(self.refused, dtype=b.dtype)).any()):
            raise ValueError(f"{self.what} by an int8 value in {list(self.refused)} (0 or the divisor's zero "
                             "point): LiteRT refuses it or leaves the result undefined")
        return self.table[(a.long() + 128) * 256 + (b.long() + 128)]


class TFLiteQuantMinMax(nn.Module):
    """MAXIMUM / MINIMUM on int8: the larger / smaller stored integer (LiteRT's kernel compares the int8
    values as they are; TF's converter gives both inputs and the output one scale and zero point)."""

    def __init__(self, maximum=True, constant_shape=None, constant_first=False):
        super().__init__()
        self.maximum, self.constant_first = maximum, constant_first
        self.register_buffer("constant", _lite_math_constant(constant_shape))

    def forward(self, a, b=None):
        a, b = _lite_math_operands(self, a, b)
        return torch.maximum(a, b) if self.maximum else torch.minimum(a, b)


def lite_round_away(x):
    """C's ``round`` (halves away from zero) of float32 values, taken in float64 (exact)."""
    x = x.double()
    return torch.sign(x) * torch.floor(x.abs() + 0.5)


class TFLiteQuantReduce(nn.Module):
    """REDUCE_MAX / REDUCE_MIN on int8 (``kind`` "max" / "min": the stored integers compared as they are)
    and SUM (optimized ``QuantizedMeanOrSum``): the int32 sum over ``dims`` as float32, times ``scale``
    (float32 input scale / output scale) plus ``bias`` (float32 -z_in * scale * count), rounded half away
    from zero, plus the output zero point, clamped."""

    def __init__(self, dims, kind, keepdim=False, scale=1.0, bias=0.0, output_zero_point=0):
        super().__init__()
        self.dims, self.kind, self.keepdim = tuple(dims), kind, keepdim
        self.scale, self.bias, self.output_zero_point = scale, bias, output_zero_point

    def forward(self, q):
        if self.kind == "max":
            return q.amax(dim=self.dims, keepdim=self.keepdim)
        if self.kind == "min":
            return q.amin(dim=self.dims, keepdim=self.keepdim)
        total = q.long().sum(dim=self.dims, keepdim=self.keepdim).float()
        value = total * torch.tensor(self.scale, dtype=torch.float32) + torch.tensor(self.bias, dtype=torch.float32)
        return lite_clamp_int8(lite_round_away(value).long() + self.output_zero_point, -128, 127)


class TFLiteQuantPrelu(nn.Module):
    """PRELU on int8 (reference ``Prelu``): x - z_in requantized by s_in / s_out where it is >= 0, the
    product (x - z_in) * (alpha - z_alpha) by s_in * s_alpha / s_out where negative, plus the output zero
    point, clamped. ``alpha``: the file's int8 slopes (TF's layout, broadcast against x); ``params``:
    (multiplier, shift) of both."""

    def __init__(self, input_zero_point, alpha_zero_point, params, output_zero_point, alpha_shape):
        super().__init__()
        self.input_zero_point, self.alpha_zero_point = input_zero_point, alpha_zero_point
        self.params, self.output_zero_point = tuple(tuple(p) for p in params), output_zero_point
        self.register_buffer("alpha", torch.zeros(alpha_shape, dtype=torch.int8))

    def forward(self, q):
        x = q.long() - self.input_zero_point
        (m1, s1), (m2, s2) = (tuple(torch.tensor(v) for v in p) for p in self.params)
        negative = lite_requantize(x * (self.alpha.long() - self.alpha_zero_point), m2, s2)
        out = torch.where(x >= 0, lite_requantize(x, m1, s1), negative)
        return lite_clamp_int8(out + self.output_zero_point, -128, 127)


class TFLiteQuantLogSoftmax(nn.Module):
    """LOG_SOFTMAX on int8 as LiteRT's optimized kernel (float arithmetic): ``table[255 - k]`` holds
    expf(-input_scale * k); per row, the float32 running sum of table[255 - max + q], its log; each output
    is rint(scale * q - (input_scale * max + log sum) / output_scale) + zero point (scale the float32
    input_scale / output_scale), clamped. ``dim``: TF's last axis."""

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
        return self._codes(torch.round(log_prob).long() + self.output_zero_point).movedim(-1, self.dim)  # rint

    def _codes(self, q):
        return lite_clamp_int8(q, -128, 127)  # (the uint8 form clamps to its own range)


class TFLiteQuantBatchMatMul(nn.Module):
    """BATCH_MATMUL on int8 (LiteRT's ``BatchMatMul<int8_t, int32_t>``): (a - z_a) @ (b - z_b), batch axes
    broadcast, ``adj_x`` / ``adj_y`` transposing the last two axes, the int32 sums requantized by
    s_a * s_b / s_out, plus the output zero point, clamped."""

    def __init__(self, zero_points, multiplier, shift, output_zero_point=0, adj_x=False, adj_y=False,
                 constant_shape=None, constant_first=False):
        super().__init__()
        self.zero_points, self.multiplier, self.shift = tuple(zero_points), multiplier, shift
        self.output_zero_point, self.adj_x, self.adj_y = output_zero_point, adj_x, adj_y
        self.constant_first = constant_first
        self.register_buffer("constant", _lite_math_constant(constant_shape))

    def forward(self, a, b=None):
        a, b = _lite_math_operands(self, a, b)
        a, b = a.double() - self.zero_points[0], b.double() - self.zero_points[1]
        if self.adj_x:
            a = a.transpose(-1, -2)
        if self.adj_y:
            b = b.transpose(-1, -2)
        acc = torch.matmul(a, b).round().long()  # exact: int8 products summed in float64
        out = lite_requantize(acc, torch.tensor(self.multiplier), torch.tensor(self.shift))
        return lite_clamp_int8(out + self.output_zero_point, -128, 127)
