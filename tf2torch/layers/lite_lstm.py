"""TFLite's fused LSTM (``UNIDIRECTIONAL_SEQUENCE_LSTM``, what TF's converter makes of a Keras LSTM) as the
helper ``TFLiteLSTM``: one parameter per TFLite tensor (per gate), so the report accounts for each."""

from __future__ import annotations

from ..codegen import nodes as n
from .base import Converted, Ctx, Module, Op, TensorInfo
from .common import bind, param
from .registry import converter

TF = "tf2torch>"
GATES = ("i", "f", "c", "o")  # TFLite's order: input, forget, cell, output (torch's i, f, g, o)
WEIGHTS = tuple(f"w_ih_{g}" for g in GATES) + tuple(f"w_hh_{g}" for g in GATES) + tuple(f"b_{g}" for g in GATES)
# A float16 file's zero states (float16 constants DEQUANTIZEd into the state variables; tflite/ops_rnn.py
# checks they are zeros): weights of the layer the module does not need, so the report lists them skipped.
STATES = ("output_state", "cell_state")


def lstm_weights(ctx: Ctx, units: int, extra: tuple[str, ...] = ()) -> dict:
    """A TFLite LSTM layer's twelve gate weights (float, hybrid or integer; and ``extra`` ones, unchecked),
    each checked against a (N, T, C) input with C known and ``units``."""
    if ctx.x.rank != 3 or ctx.x.shape[-1] is None:
        raise ctx.unsupported(f"expected a (N, T, C) input with C known, found {ctx.x.shape}")
    w = bind(ctx, [*WEIGHTS, *extra])
    for name in WEIGHTS:
        want = (units,) if name.startswith("b_") else (units, ctx.x.shape[-1] if "_ih_" in name else units)
        if tuple(w[name].shape) != want:
            raise ctx.unsupported(f"{name} of shape {list(w[name].shape)}, expected {list(want)}")
    return w


@converter(TF + "LiteLSTM", wants="keras", weights=WEIGHTS)
def lite_lstm(ctx: Ctx) -> Converted:
    units, time_major = ctx.config.get("units"), ctx.config.get("time_major", False)
    clip = ctx.config.get("cell_clip", 0.0)
    if not isinstance(clip, float) or clip < 0:
        raise ctx.unsupported(f"config cell_clip {clip!r}")
    if not isinstance(units, int):
        raise ctx.unsupported(f"config units {units!r}")
    w = lstm_weights(ctx, units, STATES * (len(ctx.layer.weights) == len(WEIGHTS) + len(STATES)))
    module = Module("TFLiteLSTM", (ctx.x.shape[-1], units), (("cell_clip", clip),) * (clip > 0)
                    + (("time_major", True),) * bool(time_major))
    out = (*ctx.x.shape[:-1], units)
    return Converted((Op(n.call(n.M, n.X), module),), (TensorInfo(out, "keras"),),
                     tuple(param("", name, w[name]) for name in WEIGHTS), helpers=("TFLiteLSTM",))
