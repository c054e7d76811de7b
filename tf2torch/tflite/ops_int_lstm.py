"""The full-integer UNIDIRECTIONAL_SEQUENCE_LSTM (what TF's converter writes for a Keras LSTM with a
representative dataset: int8 input, output, output state and weights, int32 biases, an int16 cell state)
as the ``tf2torch>LiteQuantLSTM`` layer (``layers/lite_int_lstm.py``, ``runtime/lite_int_lstm.py``).

The parameters are LiteRT's ``PopulateQuantizedLstmParams8x8_16`` (unidirectional_sequence_lstm.cc),
computed the same way: without layer norm the gates' intermediate scale is 2**-12 (Q3.12), so each effective
scale is weight scale * input (or output-state) scale / 2**-12 in float32; the hidden scale is
2**-15 / s * 2**-15 in double, stored as float, with s, and the hidden zero point, from the operator's fifth
``intermediates`` tensor; the cell state's scale must be a power of two (its exponent); the cell clip is
cell_clip / cell scale in float32, truncated to int16. Peepholes, projection, layer norm and CIFG are
refused by ``ops_rnn.check_form``."""

from __future__ import annotations

import math

import numpy as np

from ..tfgraph.base import Value
from .base import LiteCtx, int_op
from .ops_int import qparams
from .ops_rnn import LSTM_WEIGHTS, check_form
from .quant_math import quantize_multiplier

_GATE_SCALE = np.float32(2.0**-12)  # Q3.12: the gates' intermediate scale when there is no layer norm


def _weight_scale(ctx: LiteCtx, i: int) -> np.float32:
    t = ctx.input_tensor(i)
    q = t.quantization
    if t.dtype != "int8" or len(q.scales) != 1 or any(q.zero_points):
        raise ctx.unsupported(f"gate weight {t.name!r}: {t.dtype} with {len(q.scales)} scale(s), zero points "
                              f"{list(q.zero_points)[:3]} (int8 with one scale and no zero point expected)")
    return np.float32(q.scales[0])


def _tensor(ctx: LiteCtx, index: int, dtype: str, what: str) -> None:
    t = ctx.tensors[index]
    if t.dtype != dtype:
        raise ctx.unsupported(f"its {what} is {t.dtype} (the integer LSTM emulated has {dtype})")


@int_op("UNIDIRECTIONAL_SEQUENCE_LSTM", dtype="int16")
def int_lstm(ctx: LiteCtx) -> tuple[Value, ...]:
    clip = check_form(ctx)
    inputs, op = ctx.operator.inputs, ctx.operator
    _tensor(ctx, inputs[0], "int8", "input")
    _tensor(ctx, op.outputs[0], "int8", "output")
    _tensor(ctx, inputs[18], "int8", "output state")
    _tensor(ctx, inputs[19], "int16", "cell state")
    for i, what in ((18, "output state"), (19, "cell state")):
        if not ctx.tensors[inputs[i]].is_variable:  # LiteRT's own state, reset to its zero point / 0
            raise ctx.unsupported(f"its {what} (input {i}) is not a variable tensor (a state passed in)")
    if len(op.intermediates) != 5:
        raise ctx.unsupported(f"{len(op.intermediates)} intermediate tensors (the integer kernel reads five)")
    s_in, z_in = qparams(ctx, inputs[0])
    s_state, z_state = qparams(ctx, inputs[18])
    s_hidden, z_hidden = qparams(ctx, op.intermediates[4])
    q_cell = ctx.tensors[inputs[19]].quantization
    cell_scale = float(q_cell.scales[0]) if len(q_cell.scales) == 1 else 0.0
    exponent = round(math.log2(cell_scale)) if cell_scale > 0 else 0
    # LiteRT accepts a scale within 1e-3 of a power of two in log2 (CheckedLog2) and then uses the power
    # itself; only exact powers are taken here. ApplyTanh's cell format Q(15 + exponent) needs 0..6 bits.
    if cell_scale <= 0 or cell_scale != 2.0**exponent or not 0 <= 15 + exponent <= 6 or any(q_cell.zero_points):
        raise ctx.unsupported(f"a cell state of scale {cell_scale!r}, zero points {list(q_cell.zero_points)} "
                              "(a power of two from 2**-15 to 2**-9 with zero point 0 expected)")
    multipliers, shifts = [], []
    for kind, scale in (("ih", np.float32(s_in)), ("hh", np.float32(s_state))):
        pairs = [quantize_multiplier(float(_weight_scale(ctx, LSTM_WEIGHTS[f"w_{kind}_{g}"]) * scale / _GATE_SCALE))
                 for g in "ifco"]
        multipliers.append([m for m, _ in pairs])
        shifts.append([s for _, s in pairs])
    hidden = quantize_multiplier(float(np.float32(2.0**-15 / float(np.float32(s_hidden)) * 2.0**-15)))
    x = ctx.tensor(0)
    weights = []
    for name, i in LSTM_WEIGHTS.items():
        w = ctx.const(i, name)
        want = "int32" if name.startswith("b_") else "int8"
        if w.var.dtype.name != want:
            raise ctx.unsupported(f"its {name} (input {i}) is {w.var.dtype.name} ({want} expected)")
        weights.append((name, w))
    units = weights[0][1].shape[0]
    config = {"units": units, "time_major": bool(ctx.option("time_major", False)), "cell_exponent": exponent,
              "cell_clip": int(np.int16(min(max(np.float32(clip) / np.float32(cell_scale), -32768.0), 32767.0)))
              if clip > 0 else 0,
              "zero_points": [z_in, z_state, z_hidden], "multipliers": multipliers, "shifts": shifts,
              "hidden": list(hidden)}
    return (ctx.layer("tf2torch>LiteQuantLSTM", config, [x], (*x.shape[:-1], units), weights=weights,
                      name=ctx.name),)
