"""Helper modules for TFLite operators torch has no module for (inlined by source into generated files).

Each depends only on ``torch`` / ``nn``; its parameters keep the TFLite operator's own tensors one for
one (one per gate), so every tensor of the file is one state_dict entry.
"""

from __future__ import annotations

import torch
from torch import nn


class TFLiteLSTM(nn.Module):
    """TFLite's UNIDIRECTIONAL_SEQUENCE_LSTM (float, no peepholes, projection or layer norm) from zero
    states: per step, gates i, f, o = sigmoid(W x + U h + b), g = tanh(W_c x + U_c h + b_c),
    c = f * c + i * g (clipped to +-cell_clip when it is > 0: TF's converter writes 10), h = o * tanh(c). Weights per gate as TFLite stores them, (units, inputs) and
    (units, units); joined into torch's (4 * units, ...) matrices once per call. Returns every step's h
    (N, T, units), or (T, N, units) when ``time_major``."""

    def __init__(self, inputs, units, cell_clip=0.0, time_major=False):
        super().__init__()
        self.cell_clip, self.time_major = cell_clip, time_major
        for gate in ("i", "f", "c", "o"):
            setattr(self, f"w_ih_{gate}", nn.Parameter(torch.zeros(units, inputs)))
            setattr(self, f"w_hh_{gate}", nn.Parameter(torch.zeros(units, units)))
            setattr(self, f"b_{gate}", nn.Parameter(torch.zeros(units)))

    def forward(self, x):
        w_ih = torch.cat([self.w_ih_i, self.w_ih_f, self.w_ih_c, self.w_ih_o])
        w_hh = torch.cat([self.w_hh_i, self.w_hh_f, self.w_hh_c, self.w_hh_o])
        b = torch.cat([self.b_i, self.b_f, self.b_c, self.b_o])
        steps = x if self.time_major else x.transpose(0, 1)  # (T, N, C)
        z_x = steps @ w_ih.T + b  # the input's share of every step at once
        h = c = z_x.new_zeros((z_x.shape[1], w_hh.shape[1]))
        outputs = []
        for t in range(z_x.shape[0]):
            i, f, g, o = (z_x[t] + h @ w_hh.T).chunk(4, dim=-1)
            c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
            if self.cell_clip > 0:
                c = c.clamp(-self.cell_clip, self.cell_clip)
            h = torch.sigmoid(o) * torch.tanh(c)
            outputs.append(h)
        out = torch.stack(outputs)
        return out if self.time_major else out.transpose(0, 1)
