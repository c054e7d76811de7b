"""TFLite's dynamic-range LSTM (``tflite/ops_quant_lstm.py`` makes it) as the helper ``TFLiteHybridLSTM``
(``runtime/lite_quant_lstm.py``): the file's int8 gate weights kept as int8 buffers (one per TFLite tensor,
so the report accounts for each), their scales as float32 buffers, the float biases."""

from __future__ import annotations

import numpy as np

from ..codegen import nodes as n
from ..map import layouts
from .base import Converted, Ctx, Module, Op, Param, TensorInfo
from .common import param
from .lite_lstm import WEIGHTS, lstm_weights
from .registry import converter


def _scales(ctx: Ctx, key: str) -> Param:
    values = ctx.config.get(key)
    if not isinstance(values, list) or len(values) != 4 or not all(isinstance(v, float) and v > 0 for v in values):
        raise ctx.unsupported(f"config {key}={str(values)[:60]} (four positive scales, one per gate)")
    return Param("", key, layouts.IDENTITY, const=np.asarray(values, dtype=np.float32))


@converter("tf2torch>LiteHybridLSTM", wants="keras", weights=WEIGHTS)
def hybrid_lstm(ctx: Ctx) -> Converted:
    units, time_major, clip = ctx.config.get("units"), ctx.config.get("time_major", False), ctx.config.get("cell_clip")
    if not isinstance(clip, float) or clip < 0 or not isinstance(units, int):
        raise ctx.unsupported(f"config units={units!r}, cell_clip={clip!r}")
    w = lstm_weights(ctx, units)
    module = Module("TFLiteHybridLSTM", (ctx.x.shape[-1], units), (("cell_clip", clip),) * (clip > 0)
                    + (("time_major", True),) * bool(time_major))
    params = (*(param("", name, w[name]) for name in WEIGHTS), _scales(ctx, "scale_ih"), _scales(ctx, "scale_hh"))
    return Converted((Op(n.call(n.M, n.X), module),), (TensorInfo((*ctx.x.shape[:-1], units), "keras"),), params,
                     helpers=("TFLiteHybridLSTM",))
