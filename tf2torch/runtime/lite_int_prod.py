"""LiteRT's full-integer int8 REDUCE_PROD (``reference_ops::QuantizedReduceProd``), emulated.

The product is rescaled at every step so it never overflows: p = x1 - z, then for each further element, in the
order the kernel reads them (row-major over the reduced axes), p = MultiplyByQuantizedMultiplier(p * (x - z),
multiplier, shift); the result is rescaled once more, plus the output zero point, clamped. The int64 form of
``MultiplyByQuantizedMultiplier`` (its multiplier rounded to 16 bits, one shift rounded half up:
``lite_requantize_wide``) and C's cast of each step to int32 (wrapping) are reproduced, so the order matters
and is kept.
"""

from __future__ import annotations

import torch
from torch import nn

from .lite_int16 import lite_requantize_wide


def lite_wrap_int32(x):
    """``static_cast<int32_t>`` of an int64 value: two's complement wrap-around."""
    return torch.remainder(x + (1 << 31), 1 << 32) - (1 << 31)


class TFLiteQuantProd(nn.Module):
    """REDUCE_PROD of int8 over ``dims`` (TF's axes, batch first): each step's product of (x - input zero point)
    rescaled by ``multiplier`` / ``shift`` (input scale / output scale ** (1 / count)), as LiteRT."""

    def __init__(self, dims, input_zero_point, multiplier, shift, output_zero_point, keepdim=False):
        super().__init__()
        self.dims, self.keepdim = tuple(dims), keepdim
        self.input_zero_point, self.multiplier, self.shift = input_zero_point, multiplier, shift
        self.output_zero_point = output_zero_point

    def forward(self, x):
        kept = [d for d in range(x.dim()) if d not in self.dims]
        # the reduced axes last, in their order, flattened: element k of the last axis is the kernel's k-th read
        rows = x.long().permute(*kept, *self.dims)
        rows = rows.reshape(*rows.shape[:len(kept)], -1) - self.input_zero_point
        m, s = torch.tensor(self.multiplier), torch.tensor(self.shift)
        product = rows[..., 0]
        for k in range(1, rows.shape[-1]):
            product = lite_wrap_int32(lite_requantize_wide(product * rows[..., k], m, s))
        out = lite_wrap_int32(lite_requantize_wide(product, m, s)) + self.output_zero_point
        if self.keepdim:
            for d in self.dims:
                out = out.unsqueeze(d)
        return out.clamp(-128, 127).to(torch.int8)
