"""LiteRT's dynamic-range ("hybrid") int8 kernels, emulated: int8 weights, float activations.

A hybrid FULLY_CONNECTED / CONV_2D / DEPTHWISE_CONV_2D quantizes its float input on the fly (per batch row
for FULLY_CONNECTED, per batch item for the convolutions), multiplies integers with the int8 weights
(int32 accumulators: exact here, computed in float64, whose 53-bit mantissa holds every such sum), and
scales the sum back to float with the input's scale times the weight's (per output channel).
The rounding steps follow tflite/kernels/internal/reference/portable_tensor_utils.cc
(``SymmetricQuantizeFloats``, ``AsymmetricQuantizeFloats``): float32 arithmetic where LiteRT uses float,
float64 where it uses double, and ``std::round`` (halves away from zero), not torch's halves-to-even.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F


def lite_round(x):
    """C's ``std::round`` of float32 values: halves away from zero (``torch.round`` rounds them to even).
    Taken in float64, where ``|x| + 0.5`` is exact for every float32 below 2**52."""
    x = x.double()
    return torch.sign(x) * torch.floor(x.abs() + 0.5)


def lite_quantize_symmetric(rows):
    """LiteRT's ``SymmetricQuantizeFloats`` of each row of ``rows`` (R, K) float32: q in [-127, 127] with
    scale max|x| / 127 (a row of zeros: q 0, scale 1). Returns (q as float64, scale (R, 1) float32)."""
    rng = rows.abs().amax(dim=1, keepdim=True)
    zero = rng == 0
    safe = torch.where(zero, torch.ones_like(rng), rng)
    scale = torch.where(zero, torch.ones_like(rng), safe / 127)  # float32 division, as in C++
    inv = 127 / safe
    q = lite_round(rows * inv).clamp(-127, 127)
    return torch.where(zero, torch.zeros_like(q), q), scale


def lite_quantize_asymmetric(rows):
    """LiteRT's ``AsymmetricQuantizeFloats`` of each row of ``rows`` (R, K) float32: q in [-128, 127] with
    a zero point nudged onto the grid; the range always holds 0, so a zero pads to exactly the zero
    point. Returns (q as float64, scale (R, 1) float32, zero point (R, 1) float64)."""
    rmin = rows.amin(dim=1, keepdim=True).clamp(max=0).double()  # std::fmin(0, min), in double
    rmax = rows.amax(dim=1, keepdim=True).clamp(min=0).double()
    flat = rmin == rmax
    scale = torch.where(flat, torch.ones_like(rmin), (rmax - rmin) / 255.0)
    from_min, from_max = -128.0 - rmin / scale, 127.0 - rmax / scale
    zp = torch.where(128.0 + (rmin / scale).abs() < 127.0 + (rmax / scale).abs(), from_min, from_max)
    zp = lite_round(zp).clamp(-128, 127)  # <= qmin -> qmin, >= qmax -> qmax, else round: the same
    zp = torch.where(flat, torch.zeros_like(zp), zp)
    scale32 = scale.float()
    inv = (1.0 / scale32.double()).float()  # float scaling_factor_inv = 1.0 / *scaling_factor
    q = lite_round(zp.float() + rows * inv).clamp(-128, 127)  # int + float: a float32 sum
    return torch.where(flat, torch.zeros_like(q), q), scale32, zp


class TFLiteHybridLinear(nn.Module):
    """FULLY_CONNECTED with int8 weights on float input (LiteRT's ``EvalHybridDense``): each row of x is
    quantized to int8 (symmetric, or asymmetric when the model says ``asymmetric_quantize_inputs``), the
    int32 dot products with ``weight`` are scaled by ``row scale * weight_scale[o]`` and ``bias`` added.
    ``weight`` (out, in) int8 and ``weight_scale`` (out,) — one per output, or one for all — are the
    model's own; the fused activation follows as its own layer."""

    def __init__(self, in_features, out_features, bias=True, asymmetric=False, per_channel=True):
        super().__init__()
        self.asymmetric = asymmetric
        self.register_buffer("weight", torch.zeros(out_features, in_features, dtype=torch.int8))
        self.register_buffer("weight_scale", torch.ones(out_features if per_channel else 1))
        self.register_buffer("bias", torch.zeros(out_features) if bias else None)

    def forward(self, x):
        rows = x.reshape(-1, x.shape[-1]).float()
        w = self.weight.double()
        if self.asymmetric:
            q, scale, zp = lite_quantize_asymmetric(rows)
            acc = q @ w.T - zp * w.sum(dim=1)  # the zero point's share: LiteRT's row sums
        else:
            q, scale = lite_quantize_symmetric(rows)
            acc = q @ w.T
        y = acc.float() * (scale * self.weight_scale)
        if self.bias is not None:
            y = y + self.bias
        return y.reshape(*x.shape[:-1], y.shape[-1])


class TFLiteHybridConv2d(nn.Module):
    """CONV_2D / DEPTHWISE_CONV_2D with int8 per-channel weights on float input (LiteRT's
    ``EvalHybridPerChannel``): each batch item is quantized to int8 as a whole (asymmetric), convolved
    with ``weight`` in integers, scaled by ``item scale * weight_scale[o]``, ``bias`` added. Zero padding
    is exact: 0 quantizes to the zero point, whose share is subtracted. Arguments as ``nn.Conv2d``'s
    (``groups`` = in_channels: depthwise); ``weight`` (out, in / groups, kh, kw) int8."""

    def __init__(self, in_channels, out_channels, kernel_size, stride=1, padding=0, dilation=1, groups=1,
                 bias=True):
        super().__init__()
        kernel_size = tuple(kernel_size) if isinstance(kernel_size, (tuple, list)) else (kernel_size,) * 2
        self.stride, self.padding, self.dilation, self.groups = stride, padding, dilation, groups
        self.register_buffer("weight", torch.zeros(out_channels, in_channels // groups, *kernel_size,
                                                   dtype=torch.int8))
        self.register_buffer("weight_scale", torch.ones(out_channels))
        self.register_buffer("bias", torch.zeros(out_channels) if bias else None)

    def forward(self, x):
        q, scale, zp = lite_quantize_asymmetric(x.reshape(x.shape[0], -1).float())
        centred = (q - zp).reshape(x.shape)  # q - zero point: integers, 0 where x is 0
        acc = F.conv2d(centred, self.weight.double(), None, self.stride, self.padding, self.dilation, self.groups)
        y = acc.float() * (self.weight_scale[:, None, None] * scale[:, :, None, None])
        if self.bias is not None:
            y = y + self.bias[:, None, None]
        return y
