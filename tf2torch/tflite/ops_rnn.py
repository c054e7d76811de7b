"""TFLite's recurrent operators: UNIDIRECTIONAL_SEQUENCE_LSTM, the fused LSTM TF's converter writes for a
Keras LSTM (``tf_keras`` with a fixed batch size), as the ``TFLiteLSTM`` helper layer.

Inputs (schema.fbs / lstm_shared.h): 0 the sequence; 1-4 input weights and 5-8 recurrent weights of the
input, forget, cell and output gates; 9-11 peepholes; 12-15 gate biases; 16-17 projection; 18-19 the
output and cell states (variable tensors: zeros, then carried over between invocations by LiteRT);
20-23 layer-norm coefficients. The converted model starts each call from zero states: LiteRT's first
invocation.
"""

from __future__ import annotations

import numpy as np

from ..tfgraph.base import Const, Value
from . import ops_quant_lstm
from .base import LiteCtx, lite_op

LSTM_WEIGHTS = {**{f"w_ih_{g}": 1 + k for k, g in enumerate("ifco")}, **{f"w_hh_{g}": 5 + k for k, g in enumerate("ifco")},
            **{f"b_{g}": 12 + k for k, g in enumerate("ifco")}}
_UNSUPPORTED = {9: "peephole", 10: "peephole", 11: "peephole", 16: "projection", 17: "projection",
                20: "layer normalisation", 21: "layer normalisation", 22: "layer normalisation",
                23: "layer normalisation"}


@lite_op("UNIDIRECTIONAL_SEQUENCE_LSTM")
def lstm(ctx: LiteCtx) -> tuple[Value, ...]:
    clip = check_form(ctx)
    states = _zero_states(ctx)
    x = ctx.tensor(0)
    weights = [(name, ctx.const(i, name)) for name, i in LSTM_WEIGHTS.items()]
    units = weights[0][1].shape[0]
    time_major = bool(ctx.option("time_major", False))
    config = {"units": units, "time_major": time_major, "cell_clip": clip}
    if ops_quant_lstm.is_hybrid(ctx):  # int8 gate weights on a float input (dynamic-range quantization)
        return ops_quant_lstm.hybrid_lstm(ctx, config)
    return (ctx.layer("tf2torch>LiteLSTM", config, [x], (*x.shape[:-1], units), weights=weights + states,
                      name=ctx.name),)


def check_form(ctx: LiteCtx) -> float:
    """Refuse every LSTM but the plain one TF's converter writes for a Keras LSTM; its cell clip."""
    inputs = ctx.operator.inputs
    if len(inputs) < 20 or inputs[1] < 0:
        raise ctx.unsupported(f"{len(inputs)} inputs{' without input-gate weights (CIFG)' if len(inputs) >= 20 else ''}"
                              "; tf2torch converts the plain LSTM TF's converter writes for a Keras LSTM")
    used = sorted({what for i, what in _UNSUPPORTED.items() if i < len(inputs) and inputs[i] >= 0})
    if used:
        raise ctx.unsupported(f"an LSTM with {', '.join(used)} weights is not converted")
    clip = float(ctx.option("cell_clip", 0.0))
    if ctx.option("fused_activation_function", "TANH") != "TANH" or clip < 0 or ctx.option("proj_clip", 0.0):
        raise ctx.unsupported(f"activation {ctx.option('fused_activation_function')}, cell_clip "
                              f"{clip}, proj_clip {ctx.option('proj_clip')} (tanh, no projection clipping)")
    return clip


def _zero_states(ctx: LiteCtx) -> list[tuple[str, Const]]:
    """The output and cell states (inputs 18, 19): variable tensors LiteRT zero-fills, so the converted model
    starts from zeros. With float16 weights TF's converter writes each state as a float16 constant of zeros
    DEQUANTIZEd into the variable tensor (the DEQUANTIZE's output is the variable): LiteRT's first
    invocation starts from those dequantized zeros, the same zero state. They are returned as the layer's
    weights its module does not need, so the report accounts for them (skipped); any other value there, or a
    state that is no variable, is a state passed in and refused."""
    inputs, out = ctx.operator.inputs, []
    for i, name in ((18, "output_state"), (19, "cell_state")):
        value = ctx.value(i)
        if not ctx.tensors[inputs[i]].is_variable:
            raise ctx.unsupported(f"its state input {i} is not a variable tensor (a state passed in)")
        if isinstance(value, Const):  # the float16 form: a constant through DEQUANTIZE into the variable
            if np.any(value.var.read() != 0):
                raise ctx.unsupported(f"its {name} (input {i}) starts from a non-zero constant (LiteRT's "
                                      "zero-initialised state expected; not emulated)")
            out.append((name, value))
    return out
