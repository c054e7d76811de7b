"""Recurrent layers: LSTM, GRU and SimpleRNN, as ``nn.LSTM`` / ``nn.GRU`` / ``nn.RNN`` (Bidirectional, which
wraps them, is in ``bidirectional.py``).

The generated module is torch's own (``batch_first=True``); the forward picks Keras's outputs out of
torch's ``(output, h_n)`` / ``(output, (h_n, c_n))``. Keras LSTM gates (i, f, c, o) are torch's
(i, f, g, o); Keras GRU gates (z, r, h) become torch's (r, z, n) through the layout table. Keras has one
bias per LSTM / SimpleRNN cell, torch two (``bias_ih`` + ``bias_hh``): the second is a zero constant.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..codegen import nodes as n
from ..map import layouts
from ..spec import TensorRef, Variable
from . import masks
from .base import Converted, Ctx, Module, Op, Param, TensorInfo
from .common import bind, cfg_bool, cfg_int, name_of, param, weight_path
from .registry import converter

TORCH_RNN_CLASS = {"LSTM": "nn.LSTM", "GRU": "nn.GRU", "SimpleRNN": "nn.RNN"}
_GATES = {"LSTM": 4, "GRU": 3, "SimpleRNN": 1}
MERGE_MODES = ("concat", "sum", "mul", "ave")
# merge_mode as a reduction over the stacked directions (Keras: y + y_rev, y * y_rev, (y + y_rev) / 2).
MERGE_REDUCE = {"sum": "sum", "mul": "prod", "ave": "mean"}


@dataclass(frozen=True)
class RnnConfig:
    """One Keras recurrent layer, checked: what the torch module and the forward need."""

    kind: str  # "LSTM" | "GRU" | "SimpleRNN"
    units: int
    use_bias: bool
    return_sequences: bool
    return_state: bool
    go_backwards: bool
    nonlinearity: str  # SimpleRNN: "tanh" | "relu"
    notes: tuple[str, ...]

    @property
    def gates(self) -> tuple[int, ...] | None:
        return layouts.KERAS_GRU_GATES if self.kind == "GRU" else None


def _activation(ctx: Ctx, key: str, default: str, allowed: tuple[str, ...]) -> str:
    name = name_of(ctx.config.get(key, default))
    if name not in allowed:
        raise ctx.unsupported(f"{key}={name!r}: torch's {TORCH_RNN_CLASS[ctx.layer.class_name]} computes only "
                              f"{' or '.join(map(repr, allowed))}",
                              "port this layer by hand (a loop over a cell)")
    return name


def rnn_config(ctx: Ctx) -> RnnConfig:
    """Check one LSTM/GRU/SimpleRNN config against what torch's modules compute."""
    kind = ctx.layer.class_name
    units = cfg_int(ctx, "units")
    nonlinearity = _activation(ctx, "activation", "tanh", ("tanh", "relu") if kind == "SimpleRNN" else ("tanh",))
    if kind != "SimpleRNN":
        # tf_keras and Keras 3 default to sigmoid; Keras <= 2.2 defaulted to hard_sigmoid (always saved).
        _activation(ctx, "recurrent_activation", "sigmoid" if ctx.keras_version == 3 else "hard_sigmoid",
                    ("sigmoid",))
    if cfg_bool(ctx, "stateful", False):
        raise ctx.unsupported("stateful=True: Keras carries the state from one batch to the next",
                              "re-save the layer with stateful=False (the weights are the same) and pass states "
                              "explicitly in PyTorch")
    if cfg_bool(ctx, "time_major", False):
        raise ctx.unsupported("time_major=True (inputs (T, N, F)) is not supported",
                              "re-save the layer with time_major=False and transpose its input")
    use_bias = cfg_bool(ctx, "use_bias", True)
    if kind == "GRU":
        _check_reset_after(ctx, use_bias)
    notes = []
    for key in ("dropout", "recurrent_dropout"):
        if ctx.config.get(key):
            notes.append(f"{key}={ctx.config[key]} is training-only: not applied")
    # unroll=True only changes how Keras builds the loop, not the numbers: ignored.
    return RnnConfig(kind, units, use_bias, cfg_bool(ctx, "return_sequences", False),
                cfg_bool(ctx, "return_state", False), cfg_bool(ctx, "go_backwards", False), nonlinearity,
                tuple(notes))


def _check_reset_after(ctx: Ctx, use_bias: bool) -> None:
    """torch's GRU is Keras's reset_after=True (the reset gate multiplies ``h·U + b_hh``)."""
    saved = ctx.config.get("reset_after")
    bias = [w for w in ctx.layer.weights if weight_path(w)[-1].endswith("bias")]
    if saved is None and use_bias and bias:
        # Keras <= 2.2 wrote no reset_after and defaulted to False; its bias is then (3u,), not (2, 3u).
        saved = len(bias[0].shape) == 2
    reset_after = saved if saved is not None else ctx.keras_version == 3
    if not isinstance(reset_after, bool):
        raise ctx.unsupported(f"config 'reset_after' should be true or false, found {reset_after!r}")
    if not reset_after:
        raise ctx.unsupported("reset_after=False (the reset gate applied before the recurrent kernel) cannot be "
                              "expressed by torch's nn.GRU",
                              "retrain with reset_after=True, or port this layer by hand (a loop over a cell)")




def check_rnn_input(ctx: Ctx) -> int:
    extra = sorted(k for k, v in ctx.call.kwargs.items() if _has_ref(v) and k != "mask")
    if len(ctx.inputs) != 1 + isinstance(ctx.call.kwargs.get("mask"), TensorRef):
        raise ctx.unsupported(f"called with {len(ctx.inputs)} tensors ({', '.join(extra) or 'positional'}); "
                              "initial_state, constants and mask tensors are not supported",
                              "call the layer on its input only")
    if ctx.x.rank != 3 or ctx.x.shape[-1] is None:
        raise ctx.unsupported(f"expected an input of shape (N, T, F) with F known, found (N, "
                              f"{', '.join('?' if s is None else str(s) for s in ctx.x.shape)})")
    return ctx.x.shape[-1]


def _has_ref(value: object) -> bool:
    if isinstance(value, TensorRef):
        return True
    return isinstance(value, list) and any(_has_ref(v) for v in value)


def _check_shape(ctx: Ctx, var: Variable, name: str, expected: tuple[int, ...]) -> None:
    if tuple(var.shape) != expected:
        raise ctx.unsupported(f"weight {name!r} ({var.name}) has shape {tuple(var.shape)}, expected {expected} "
                              "from the config", "the file does not match its own config; re-save the model")


def rnn_params(ctx: Ctx, rnn: RnnConfig, features: int, direction: str = "") -> tuple[Param, ...]:
    """torch's weight_ih_l0{direction} … for one direction, from that direction's Keras weights."""
    w = bind(ctx, ["kernel", "recurrent_kernel"] + (["bias"] if rnn.use_bias else []))
    width = _GATES[rnn.kind] * rnn.units
    _check_shape(ctx, w["kernel"], "kernel", (features, width))
    _check_shape(ctx, w["recurrent_kernel"], "recurrent_kernel", (rnn.units, width))
    kernel = layouts.rnn_kernel(rnn.gates)
    params = [param("", f"weight_ih_l0{direction}", w["kernel"], kernel),
              param("", f"weight_hh_l0{direction}", w["recurrent_kernel"], kernel)]
    if not rnn.use_bias:
        return tuple(params)
    if rnn.kind == "GRU":  # reset_after: row 0 is the input bias, row 1 the recurrent bias
        _check_shape(ctx, w["bias"], "bias", (2, width))
        return (*params, param("", f"bias_ih_l0{direction}", w["bias"], layouts.rnn_bias(rnn.gates, row=0)),
                param("", f"bias_hh_l0{direction}", w["bias"], layouts.rnn_bias(rnn.gates, row=1)))
    _check_shape(ctx, w["bias"], "bias", (width,))
    zero = Param("", f"bias_hh_l0{direction}", layouts.IDENTITY, const=np.zeros(width, dtype=np.float32))
    return (*params, param("", f"bias_ih_l0{direction}", w["bias"], layouts.rnn_bias(rnn.gates)), zero)


def rnn_module(rnn: RnnConfig, features: int, bidirectional: bool) -> Module:
    kwargs: list[tuple[str, object]] = [("batch_first", True)]
    if rnn.nonlinearity != "tanh":
        kwargs.append(("nonlinearity", rnn.nonlinearity))
    if not rnn.use_bias:
        kwargs.append(("bias", False))
    if bidirectional:
        kwargs.append(("bidirectional", True))
    return Module(TORCH_RNN_CLASS[rnn.kind], (features, rnn.units), tuple(kwargs))


def rnn_states(rnn: RnnConfig, direction: int, result: n.Expr = n.X) -> list[n.Expr]:
    """Keras's state outputs of one direction: torch's h_n[direction] (and c_n[direction] for LSTM), from
    ``result``, the torch module's (output, state)."""
    if rnn.kind == "LSTM":
        return [result[1][0][direction], result[1][1][direction]]
    return [result[1][direction]]


def rnn_result(exprs: list[n.Expr], infos: list[TensorInfo]) -> tuple[Op, tuple[TensorInfo, ...]]:
    """One output: its expression; several: a tuple (the graph evaluates the module call once)."""
    return Op(exprs[0] if len(exprs) == 1 else n.Tuple(tuple(exprs))), tuple(infos)


@converter("LSTM", "GRU", "SimpleRNN", wants="keras", weights=("kernel", "recurrent_kernel", "bias"))
def recurrent(ctx: Ctx) -> Converted:
    features = check_rnn_input(ctx)
    rnn = rnn_config(ctx)
    steps = ctx.x.shape[0]
    # go_backwards: Keras runs over the reversed sequence and returns the outputs in that order.
    given = masks.call_mask(ctx)
    x = n.X.m("flip", 1) if rnn.go_backwards else n.X
    if given is not None:  # masked steps carry state and output, as Keras computes them (layers/masks.py)
        mask = given.m("flip", 1) if rnn.go_backwards else given
        call = Op(n.call("KerasMaskedRNN.run", n.M, x, mask), rnn_module(rnn, features, False))
    else:
        call = Op(n.call(n.M, x), rnn_module(rnn, features, False))
    exprs: list[n.Expr]
    if rnn.return_sequences:
        exprs, infos = [n.X[0]], [TensorInfo((steps, rnn.units))]
    else:
        exprs, infos = [n.X[0][:, -1]], [TensorInfo((rnn.units,))]
    if rnn.return_state:
        states = rnn_states(rnn, 0)
        exprs += states
        infos += [TensorInfo((rnn.units,))] * len(states)
    pick, outputs = rnn_result(exprs, infos)
    return Converted((call, pick), outputs, rnn_params(ctx, rnn, features), notes=rnn.notes,
                     helpers=("KerasMaskedRNN",) if given is not None else ())
