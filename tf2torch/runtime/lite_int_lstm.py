"""LiteRT's full-integer UNIDIRECTIONAL_SEQUENCE_LSTM (int8 input, output and weights, int32 biases, an
int16 cell state), emulated: lstm_eval.cc ``EvalInteger8x8_16`` / ``LstmStepInteger8x8_16`` with the
portable helpers of portable_tensor_utils.cc (TF's x86 build runs those for every step here:
sse_tensor_utils.h routes them to the portable code, scalar loops, so every rounding is the reference one).

Per step and gate: the input's and the previous output state's int8 products with the gate's int8 weights,
each plus its precomputed bias (the file's bias and -zero point times the weight rows' sums), requantized
to Q3.12 int16 (``MultiplyByQuantizedMultiplier``, saturated after each of the two sums), then gemmlowp's
16-bit fixed-point sigmoid (i, f, o) or tanh (g) to Q0.15. The cell: c = f * c >> 15, plus i * g >>
(30 + cell exponent), both ``RoundingDivideByPOT``, saturated, clipped; the output: tanh of the cell
(as Q(15 + cell exponent)), times o, requantized to the hidden scale, plus its zero point, clamped to
int8. gemmlowp's sigmoid / tanh are exact functions of an int16, computed once into 65536-entry tables
by ``lite_fixed16_tables`` (the scalar int16 code of gemmlowp's fixedpoint.h, step by step).
"""

from __future__ import annotations

import torch
from torch import nn

from .lite_int import lite_requantize, lite_shift_down

INT_LSTM_GATES = ("i", "f", "c", "o")


def _fx_wrap(x):
    """C's narrowing of an int to int16 (wraps)."""
    return ((x + 32768) & 0xFFFF) - 32768


def _fx_rdpot(x, exponent):
    mask = (1 << exponent) - 1
    return (x >> exponent) + ((x & mask) > (mask >> 1) + (x < 0).long()).long()


def _fx_const(raw32):
    """``RescaleConstantInitializer``: gemmlowp's int32 constant rounding-shifted to 16 bits."""
    return int(_fx_rdpot(torch.tensor(raw32, dtype=torch.long), 16))


def _fx_mul(a, b):
    """The 16-bit ``SaturatingRoundingDoublingHighMul`` (C's division truncates toward zero)."""
    a, b = torch.as_tensor(a, dtype=torch.long), torch.as_tensor(b, dtype=torch.long)
    ab = a * b
    q = torch.div(ab + torch.where(ab >= 0, 1 << 14, 1 - (1 << 14)), 1 << 15, rounding_mode="trunc")
    return torch.where((a == b) & (a == -32768), 32767, q)


def _fx_pot(x, exponent):
    """``SaturatingRoundingMultiplyByPOT``: a saturating left shift, or a rounding right one."""
    if exponent > 0:
        return (x * (1 << exponent)).clamp(-32768, 32767)
    return _fx_rdpot(x, -exponent) if exponent < 0 else x


def _fx_exp_negative(a, bits):
    """``exp_on_negative_values`` of a Q``bits`` int16: Q0.15 (with its quarter-interval Taylor step)."""
    frac, quarter = 15 - bits, 1 << (13 - bits)
    amq = _fx_wrap((a & (quarter - 1)) - quarter)
    x = _fx_wrap(_fx_pot(amq, bits) + (1 << 12))  # Rescale<0>, then + 1/8
    x2 = _fx_mul(x, x)
    x3, x4 = _fx_mul(x2, x), _fx_mul(x2, x2)
    third, constant = _fx_const(715827883), _fx_const(1895147668)
    t = _fx_pot(_fx_wrap(_fx_mul(_fx_wrap(_fx_pot(x4, -2) + x3), third) + x2), -1)
    result = (constant + _fx_mul(constant, _fx_wrap(x + t))).clamp(-32768, 32767)  # AddSaturatingIf16Bit
    remainder = _fx_wrap(amq - a)
    for exponent, multiplier in ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308),
                                 (2, 39332535), (3, 720401), (4, 242)):
        if bits > exponent:
            hit = (remainder & (1 << (frac + exponent))) != 0
            result = torch.where(hit, _fx_mul(result, _fx_const(multiplier)), result)
    if bits > 5:
        result = torch.where(a < _fx_const(-(1 << (36 - bits))), 0, result)
    return torch.where(a == 0, 32767, result)


def _fx_newton(a):
    """The Newton-Raphson division of ``one_over_one_plus_x_for_x_in_0_1`` (and its tanh twin): Q2.13."""
    s = a + 32767
    half = torch.div(s + torch.where(s >= 0, 1, -1), 2, rounding_mode="trunc")  # RoundingHalfSum(a, One)
    x = _fx_wrap(_fx_const(1515870810) + _fx_mul(half, _fx_const(-1010580540)))
    for _ in range(3):
        x = _fx_wrap(x + _fx_pot(_fx_mul(x, _fx_wrap((1 << 13) - _fx_mul(half, x))), 2))
    return x


def lite_fixed16_tables(tanh_bits):
    """gemmlowp's ``logistic`` of Q3.12 and ``tanh`` of Q3.12 and of Q``tanh_bits``, for every int16
    (index raw + 32768): three int16 tables of Q0.15 values."""
    a = torch.arange(-32768, 32768, dtype=torch.long)
    positive = a > 0
    e = _fx_exp_negative(_fx_wrap(-torch.where(positive, a, _fx_wrap(-a))), 3)
    p = _fx_pot(_fx_newton(e), 1)  # Rescale<0>(ExactMulByPot<-1>(x))
    sigmoid = torch.where(a == 0, _fx_const(1 << 30), torch.where(positive, p, _fx_wrap(32767 - p)))

    def tanh(bits):
        negative = a < 0
        t = _fx_pot(_fx_wrap(_fx_newton(_fx_exp_negative(torch.where(negative, a, _fx_wrap(-a)), bits + 1))
                             - (1 << 13)), 2)
        return torch.where(a == 0, 0, torch.where(negative, _fx_wrap(-t), t))

    return sigmoid.to(torch.int16), tanh(3).to(torch.int16), tanh(tanh_bits).to(torch.int16)


class TFLiteQuantLSTM(nn.Module):
    """The full-integer LSTM from LiteRT's initial states (output state: its zero point; cell: 0). Buffers:
    the file's int8 weights per gate (``w_ih_<g>`` (units, inputs), ``w_hh_<g>`` (units, units)) and int32
    biases (``b_<g>``); ``multipliers`` / ``shifts``: (2, 4) int64, input and recurrent effective scales
    per gate; ``hidden``: the hidden scale's (multiplier, shift). Takes and returns int8 (N, T, C) /
    (N, T, units), or (T, N, ...) when ``time_major``."""

    def __init__(self, inputs, units, zero_points, hidden, cell_exponent, cell_clip=0, time_major=False):
        super().__init__()
        self.input_zp, self.state_zp, self.hidden_zp = zero_points
        self.cell_exponent, self.cell_clip, self.time_major = cell_exponent, cell_clip, time_major
        self.hidden_multiplier, self.hidden_shift = hidden
        for gate in INT_LSTM_GATES:
            self.register_buffer(f"w_ih_{gate}", torch.zeros(units, inputs, dtype=torch.int8))
            self.register_buffer(f"w_hh_{gate}", torch.zeros(units, units, dtype=torch.int8))
            self.register_buffer(f"b_{gate}", torch.zeros(units, dtype=torch.int32))
        self.register_buffer("multipliers", torch.zeros(2, 4, dtype=torch.int64))
        self.register_buffer("shifts", torch.zeros(2, 4, dtype=torch.int64))
        tables = lite_fixed16_tables(15 + cell_exponent)  # exact functions: rebuilt, not stored
        for name, table in zip(("sigmoid_table", "tanh_table", "cell_tanh_table"), tables, strict=True):
            self.register_buffer(name, table.long(), persistent=False)

    def _gate(self, k, gate, x, h):
        """Q3.12: each int8 product plus its precomputed bias, requantized and saturated to int16."""
        out = None
        for j, (rows, zp, kind) in enumerate(((x, self.input_zp, "ih"), (h, self.state_zp, "hh"))):
            w = getattr(self, f"w_{kind}_{gate}").double()
            bias = -zp * w.sum(dim=1)  # PrecomputeZeroPointTimesWeightWithBias (the file's bias: input side)
            if j == 0:
                bias = bias + getattr(self, f"b_{gate}").double()
            acc = torch.round(rows.double() @ w.T + bias).long()  # exact integers in float64
            acc = lite_requantize(acc, self.multipliers[j, k], self.shifts[j, k])
            out = (acc if out is None else acc + out).clamp(-32768, 32767)
        return out

    def forward(self, x):
        steps = (x if self.time_major else x.transpose(0, 1)).long()  # (T, N, C)
        units = self.w_hh_i.shape[0]
        h = torch.full((steps.shape[1], units), self.state_zp, dtype=torch.long)  # ResetVariableTensor: zp
        c = torch.zeros_like(h)
        outputs = []
        for t in range(steps.shape[0]):
            z = [self._gate(k, g, steps[t], h) + 32768 for k, g in enumerate(INT_LSTM_GATES)]
            i, f, o = (self.sigmoid_table[z[k]] for k in (0, 1, 3))
            g = self.tanh_table[z[2]]
            c = _fx_wrap(lite_shift_down(f * c, 15))  # CwiseMul(.., 15): RoundingDivideByPOT, int16 cast
            c = (c + _fx_wrap(lite_shift_down(i * g, 30 + self.cell_exponent))).clamp(-32768, 32767)
            if self.cell_clip > 0:
                c = c.clamp(-self.cell_clip, self.cell_clip)
            hidden = o * self.cell_tanh_table[c + 32768]
            hidden = lite_requantize(hidden, torch.tensor(self.hidden_multiplier), torch.tensor(self.hidden_shift))
            h = (hidden + self.hidden_zp).clamp(-128, 127)
            outputs.append(h)
        out = torch.stack(outputs).to(torch.int8)
        return out if self.time_major else out.transpose(0, 1)
