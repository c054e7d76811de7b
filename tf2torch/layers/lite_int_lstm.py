"""TFLite's full-integer LSTM (``tflite/ops_int_lstm.py`` makes it) as the helper ``TFLiteQuantLSTM``
(``runtime/lite_int_lstm.py``): the file's int8 gate weights and int32 biases as buffers (one per TFLite
tensor, so the report accounts for each), the effective scales' multipliers and shifts as int64 buffers."""

from __future__ import annotations

import numpy as np

from ..codegen import nodes as n
from ..map import layouts
from .base import Converted, Ctx, Module, Op, Param, TensorInfo
from .common import param
from .lite_int import config_int, config_ints
from .lite_lstm import WEIGHTS, lstm_weights
from .registry import converter


def _pairs(ctx: Ctx, key: str) -> Param:
    """Config ``key``: (2, 4) ints, input and recurrent side per gate (i, f, c, o)."""
    rows = ctx.config.get(key)
    if not isinstance(rows, list) or len(rows) != 2 or not all(
            isinstance(r, list) and len(r) == 4 and all(isinstance(v, int) and not isinstance(v, bool) for v in r)
            for r in rows):
        raise ctx.unsupported(f"config {key}={str(rows)[:80]} (two rows of four ints)")
    return Param("", key, layouts.IDENTITY, const=np.asarray(rows, dtype=np.int64))


@converter("tf2torch>LiteQuantLSTM", wants="keras", weights=WEIGHTS)
def int_lstm(ctx: Ctx) -> Converted:
    units, exponent, clip = config_int(ctx, "units"), config_int(ctx, "cell_exponent"), config_int(ctx, "cell_clip")
    zero_points, hidden = config_ints(ctx, "zero_points"), config_ints(ctx, "hidden")
    if len(zero_points) != 3 or len(hidden) != 2 or not 0 <= 15 + exponent <= 6 or not 0 <= clip <= 32767:
        raise ctx.unsupported(f"config zero_points={zero_points}, hidden={hidden}, cell_exponent={exponent}, "
                              f"cell_clip={clip}")
    w = lstm_weights(ctx, units)
    module = Module("TFLiteQuantLSTM", (ctx.x.shape[-1], units, tuple(zero_points), tuple(hidden), exponent),
                    (("cell_clip", clip),) * (clip > 0) + (("time_major", True),) * bool(ctx.config.get("time_major")))
    params = (*(param("", name, w[name]) for name in WEIGHTS), _pairs(ctx, "multipliers"), _pairs(ctx, "shifts"))
    return Converted((Op(n.call(n.M, n.X), module),), (TensorInfo((*ctx.x.shape[:-1], units), "keras"),), params,
                     helpers=("TFLiteQuantLSTM",))
