"""LiteRT's dynamic-range ("hybrid") BATCH_MATMUL, emulated: a float left-hand side, an int8 constant right-hand
side with one scale (``batch_matmul.cc`` ``EvalHybrid``).

LiteRT quantizes each row of the left-hand side (each vector the product contracts: ``BatchQuantizeFloats``,
asymmetric: ``asymmetric_quantize_inputs``, as TF's converter writes it), takes the
int32 dot products with the int8 weights, subtracts the row's zero point times the weights' column sums,
and scales each sum back with the row's scale times the weights' scale (a float32 product, then times the
sum as float32), per matrix of the batch.
"""

from __future__ import annotations

import torch
from torch import nn

from .lite_quant import lite_round


def lite_quantize_rows_neon(rows):
    """LiteRT's ``NeonAsymmetricQuantizeFloats`` (what TF's x86 build runs for the hybrid BATCH_MATMUL, through
    its NEON-to-SSE translation; measured) of each row of ``rows`` (R, K) float32: the range [min, max] with
    0 in it; the scale (max - min) / 255 with the subtraction in float32, the division in double, stored
    as float32; the zero point nudged as in ``lite_quantize_asymmetric``; q = zero point + round(x * (1 /
    scale)), the product float32, rounded in blocks of 8 as (int)(x + copysign(0.5, x)) in float32 (the
    vector loop) and half away from zero in the last K mod 8 columns (the scalar loop). Returns (q as
    float64, scale (R, 1) float32, zero point (R, 1) float64)."""
    rmin = rows.amin(dim=1, keepdim=True).clamp(max=0)
    rmax = rows.amax(dim=1, keepdim=True).clamp(min=0)
    flat = rmin == rmax
    scale = torch.where(flat, torch.ones_like(rmin, dtype=torch.float64), (rmax - rmin).double() / 255.0)
    lo, hi = rmin.double() / scale, rmax.double() / scale
    zp = torch.where(128.0 + lo.abs() < 127.0 + hi.abs(), -128.0 - lo, 127.0 - hi)
    zp = torch.where(flat, torch.zeros_like(zp), lite_round(zp).clamp(-128, 127))
    scale32 = scale.float()
    product = rows * (1.0 / scale32.double()).float()  # float32 products
    half = torch.where(product < 0, -0.5, 0.5).float()
    vector = torch.trunc(product + half).double()  # a float32 sum, then truncated
    block = rows.shape[1] // 8 * 8
    rounded = torch.cat([vector[:, :block], lite_round(product[:, block:])], dim=1)
    q = (rounded + zp).clamp(-128, 127)
    return torch.where(flat, torch.zeros_like(q), q), scale32, zp


class TFLiteHybridBatchMatMul(nn.Module):
    """x @ W for a float x (..., rows, depth) (``adj_x``: (..., depth, rows)) and the file's int8 ``weight``
    (..., depth, cols) (``adj_y``: (..., cols, depth)) with one float32 ``weight_scale``; batch axes
    broadcast. Each row of x is quantized to int8 on the fly (see the module docstring)."""

    def __init__(self, weight_shape, adj_x=False, adj_y=False):
        super().__init__()
        self.adj_x, self.adj_y = adj_x, adj_y
        self.register_buffer("weight", torch.zeros(weight_shape, dtype=torch.int8))
        self.register_buffer("weight_scale", torch.ones(1))

    def forward(self, x):
        x = x.transpose(-1, -2) if self.adj_x else x
        rows = x.reshape(-1, x.shape[-1]).float()
        w = self.weight.double()
        w = w.transpose(-1, -2) if self.adj_y else w  # (..., depth, cols)
        q, scale, zp = lite_quantize_rows_neon(rows)
        q, scale, zp = (v.reshape(*x.shape[:-1], v.shape[-1]) for v in (q, scale, zp))
        acc = torch.matmul(q, w) - zp * w.sum(dim=-2, keepdim=True)  # exact integers in float64
        return acc.float() * (scale * self.weight_scale)
