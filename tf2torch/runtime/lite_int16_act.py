"""LiteRT's int16 SOFTMAX (16x8 models), emulated: reference_ops::SoftmaxInt16, two 513-entry lookup tables
with linear interpolation, exp on [-10, 0] and 1 / (1 + x) on [0, 1], computed at conversion
(tflite/quant_math16.py) and held as buffers; every step below is LiteRT's integer arithmetic, on int64.
"""

from __future__ import annotations

import torch
from torch import nn

from .lite_int import lite_requantize


def lite_lut16(value, table):
    """LiteRT's 513-entry int16 table lookup with interpolation (``generic_int16_table_lookup``): index
    256 + (value >> 7), the low 7 bits interpolating towards the next entry, rounded half up."""
    index = 256 + (value >> 7)
    offset = value & 0x7F
    base = table[index]
    slope = table[index + 1] - base
    return base + ((slope * offset + 64) >> 7)


class TFLiteQuant16Softmax(nn.Module):
    """SOFTMAX on int16 (``SoftmaxInt16``) over ``dim``: each x - max(row) rescaled so that [-65535, 0] is
    [-10, 0] (input_multiplier, input_shift), recentred, exp looked up (Q0.15); the Q16.15 sum normalised
    by its leading zeros and 1 / sum looked up; each exp times that reciprocal, shifted back, in [0, 32767]."""

    def __init__(self, input_multiplier, input_shift, dim=-1):
        super().__init__()
        self.input_multiplier, self.input_shift, self.dim = input_multiplier, input_shift, dim
        self.register_buffer("exp_table", torch.zeros(513, dtype=torch.int16))
        self.register_buffer("reciprocal_table", torch.zeros(513, dtype=torch.int16))

    def forward(self, q):
        x = q.long().movedim(self.dim, -1)
        diff = x - x.amax(dim=-1, keepdim=True)
        scaled = lite_requantize(diff, torch.tensor(self.input_multiplier), torch.tensor(self.input_shift))
        exps = lite_lut16((scaled + 32767).clamp(-32768, 32767), self.exp_table.long())
        total = exps.sum(dim=-1, keepdim=True)  # Q16.15, positive: the row's maximum contributes ~32767
        headroom = 32 - torch.floor(torch.log2(total.double())).long() - 1  # leading zeros of a uint32
        shifted = ((total << (headroom - 1)) + (1 << 13)) >> 14
        reciprocal = lite_lut16((shifted - (1 << 15) - (1 << 16)).clamp(-32768, 32767), self.reciprocal_table.long())
        right = 31 - headroom
        out = (exps * reciprocal + (torch.ones_like(right) << (right - 1))) >> right
        return out.clamp(0, 32767).to(torch.int16).movedim(-1, self.dim)
