"""LiteRT's dynamic-range ("hybrid") UNIDIRECTIONAL_SEQUENCE_LSTM, emulated: int8 gate weights with one scale
each, float biases, states and activations (lstm_eval.cc ``EvalHybrid`` / ``LstmStepHybrid``).

At each step LiteRT quantizes the input rows and the previous output state's rows to int8 on the fly
(``BatchQuantizeFloats``, asymmetric as TF's converter writes it; the quantizer TF's x86 build runs is
``lite_quantize_rows_neon``), starts each gate from its bias, adds the integer products scaled by row scale
times weight scale (float32: ``MatrixBatchVectorMultiplyAccumulate``), applies sigmoid / tanh, and updates
the cell (c = f * c, then c += g * i, clipped) and the output (o * tanh(c)) in float32. The integer parts
are exact here; sigmoid and tanh are torch's float32 functions (LiteRT's may differ in the last bit).
"""

from __future__ import annotations

import torch
from torch import nn

from .lite_quant_bmm import lite_quantize_rows_neon

HYBRID_LSTM_GATES = ("i", "f", "c", "o")


class TFLiteHybridLSTM(nn.Module):
    """The hybrid LSTM from zero states, as ``TFLiteLSTM`` but with the file's int8 weights per gate
    (``w_ih_<g>`` (units, inputs), ``w_hh_<g>`` (units, units)), their scales (``scale_ih``, ``scale_hh``:
    one per gate, float32) and float biases. Returns every step's output (N, T, units), or (T, N, units)
    when ``time_major``."""

    def __init__(self, inputs, units, cell_clip=0.0, time_major=False):
        super().__init__()
        self.cell_clip, self.time_major = cell_clip, time_major
        for gate in HYBRID_LSTM_GATES:
            self.register_buffer(f"w_ih_{gate}", torch.zeros(units, inputs, dtype=torch.int8))
            self.register_buffer(f"w_hh_{gate}", torch.zeros(units, units, dtype=torch.int8))
            self.register_buffer(f"b_{gate}", torch.zeros(units))
        self.register_buffer("scale_ih", torch.ones(4))
        self.register_buffer("scale_hh", torch.ones(4))

    @staticmethod
    def _product(rows, weight, weight_scale):
        """Each row quantized, times the int8 weight: float32 sums scaled by row scale * weight scale."""
        q, scale, zp = lite_quantize_rows_neon(rows)
        w = weight.double()
        acc = q @ w.T - zp * w.sum(dim=1)  # exact integers in float64
        return acc.float() * (scale * weight_scale)

    def forward(self, x):
        steps = x if self.time_major else x.transpose(0, 1)  # (T, N, C)
        units = self.w_hh_i.shape[0]
        h = c = steps.new_zeros((steps.shape[1], units))
        outputs = []
        for t in range(steps.shape[0]):
            gates = []
            for k, gate in enumerate(HYBRID_LSTM_GATES):
                z = getattr(self, f"b_{gate}") + self._product(steps[t].float(), getattr(self, f"w_ih_{gate}"),
                                                              self.scale_ih[k])
                z = z + self._product(h, getattr(self, f"w_hh_{gate}"), self.scale_hh[k])
                gates.append(torch.tanh(z) if gate == "c" else torch.sigmoid(z))
            i, f, g, o = gates
            c = f * c
            c = c + g * i
            if self.cell_clip > 0:
                c = c.clamp(-self.cell_clip, self.cell_clip)
            h = o * torch.tanh(c)
            outputs.append(h)
        out = torch.stack(outputs)
        return out if self.time_major else out.transpose(0, 1)
