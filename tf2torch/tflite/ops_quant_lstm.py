"""A dynamic-range (hybrid) UNIDIRECTIONAL_SEQUENCE_LSTM: int8 gate weights with one scale each on float
inputs, as the ``tf2torch>LiteHybridLSTM`` layer (``layers/lite_quant_lstm.py``), emulating LiteRT's
per-step quantization of the input and output-state rows (``runtime/lite_quant_lstm.py``).
``tflite/ops_rnn.py`` checks the LSTM's form (no peepholes, projection or layer norm) before calling here."""

from __future__ import annotations

from ..tfgraph.base import Const, Value
from .base import LiteCtx
from .quant import HINT, weight_scales

_IH = {g: 1 + k for k, g in enumerate("ifco")}  # inputs 1-4: input weights; 5-8: recurrent weights
_HH = {g: 5 + k for k, g in enumerate("ifco")}
_BIAS = {g: 12 + k for k, g in enumerate("ifco")}


def is_hybrid(ctx: LiteCtx) -> bool:
    value = ctx.value(1)
    return not ctx.dequantize and isinstance(value, Const) and value.var.dtype.name == "int8"


def hybrid_lstm(ctx: LiteCtx, config: dict) -> tuple[Value, ...]:
    """``config``: the float LSTM's (units, time_major, cell_clip)."""
    if not ctx.option("asymmetric_quantize_inputs", False):  # what TF's converter writes; the other: not measured
        raise ctx.unsupported("a hybrid LSTM with symmetric input quantization (not emulated)", HINT)
    if ctx.option("diagonal_recurrent_tensors", False):
        raise ctx.unsupported("a hybrid LSTM with diagonal recurrent weights (not emulated)", HINT)
    x = ctx.tensor(0)
    weights, scales = [], {"scale_ih": [], "scale_hh": []}
    for kind, table in (("ih", _IH), ("hh", _HH)):
        for gate, i in table.items():
            w = ctx.const(i, f"w_{kind}_{gate}")
            if w.var.dtype.name != "int8":
                raise ctx.unsupported(f"{w.var.dtype.name} and int8 gate weights mixed")
            scales[f"scale_{kind}"] += weight_scales(ctx.input_tensor(i), 1)
            weights.append((f"w_{kind}_{gate}", w))
    for gate, i in _BIAS.items():
        b = ctx.const(i, f"b_{gate}")
        if b.var.dtype.name != "float32":
            raise ctx.unsupported(f"a {b.var.dtype.name} gate bias (float32 in a hybrid LSTM)")
        weights.append((f"b_{gate}", b))
    units = config["units"]
    return (ctx.layer("tf2torch>LiteHybridLSTM", {**config, **scales}, [x], (*x.shape[:-1], units),
                      weights=weights, name=ctx.name),)
