"""Bidirectional over LSTM, GRU or SimpleRNN (or ``RNN`` over one of their cells, which computes the same:
``rnn_cell.one_cell``): one ``nn.LSTM(..., bidirectional=True)`` (its output already holds both directions,
time-aligned), or over masked steps one module per direction run by ``KerasMaskedRNN`` (torch's
bidirectional module cannot skip steps)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ..codegen import nodes as n
from ..spec import LayerSpec, Variable
from . import masks, rnn_cell
from .base import Converted, Ctx, Op, TensorInfo
from .common import cfg_str, name_of, weight_path
from .registry import converter
from .rnn import (
    MERGE_MODES,
    MERGE_REDUCE,
    TORCH_RNN_CLASS,
    RnnConfig,
    check_rnn_input,
    rnn_config,
    rnn_module,
    rnn_params,
    rnn_result,
    rnn_states,
)


def _inner(ctx: Ctx, key: str) -> tuple[str, Mapping[str, Any]]:
    entry = ctx.config.get(key)
    if not isinstance(entry, Mapping) or not isinstance(entry.get("config"), Mapping):
        raise ctx.unsupported(f"config {key!r} should be a layer entry with 'class_name' and 'config', "
                              f"found {str(entry)[:80]!r}")
    class_name = entry.get("class_name")
    if class_name == "RNN":  # RNN(LSTMCell(u)) is an LSTM(u), as rnn_cell.py converts it
        return rnn_cell.one_cell(ctx, entry["config"])
    if class_name not in TORCH_RNN_CLASS:
        raise ctx.unsupported(f"wraps a {class_name!r}; only LSTM, GRU, SimpleRNN and RNN over one of their "
                              "cells are supported")
    return class_name, entry["config"]


def _direction_names(forward: Mapping[str, Any], backward: Mapping[str, Any] | None) -> tuple[set[str], set[str]]:
    """Path segments naming each direction's weights.

    ``.keras`` files use the attribute names (``bidirectional/forward_layer/cell/vars/0``); ``.h5`` files
    the sublayer names: Keras 3 saves them in the config (``forward_lstm``; a given backward_layer keeps its
    own name), Keras 2 derives them from the saved layers' names (``forward_`` / ``backward_`` + name, a given
    backward_layer's too).
    """
    name = str(forward.get("name", ""))
    fw = {"forward_layer", name if name.startswith("forward_") else f"forward_{name}"}
    bw = {"backward_layer", f"backward_{name.removeprefix('forward_')}"}
    if backward is not None and isinstance(backward.get("name"), str):
        bw |= {backward["name"], f"backward_{backward['name']}"}
    return fw - bw, bw - fw


def _split(ctx: Ctx, fw: set[str], bw: set[str]) -> tuple[tuple[Variable, ...], tuple[Variable, ...]]:
    halves: tuple[list[Variable], list[Variable]] = ([], [])
    for var in ctx.layer.weights:
        segments = weight_path(var)[:-1]
        side = next((0 if s in fw else 1 for s in reversed(segments) if s in fw or s in bw), None)
        if side is None:
            raise ctx.unsupported(f"weight {var.name!r} belongs to neither direction (expected a path through "
                                  f"{' or '.join(sorted(fw | bw))})", "re-save the model")
        halves[side].append(var)
    return tuple(halves[0]), tuple(halves[1])


def _setting(config: Mapping[str, Any], key: str) -> object:
    value = config.get(key)
    return name_of(value) if key.endswith("activation") else value  # Keras 3 may nest activations


_SAME_KEYS = ("units", "activation", "recurrent_activation", "use_bias", "reset_after", "return_sequences",
              "return_state")


@converter("Bidirectional", wants="keras")
def bidirectional(ctx: Ctx) -> Converted:
    """One ``nn.LSTM(..., bidirectional=True)``: its output already holds both directions, time-aligned."""
    features = check_rnn_input(ctx)
    merge_mode = ctx.config.get("merge_mode", "concat")
    if merge_mode is not None:
        merge_mode = cfg_str(ctx, "merge_mode", "concat", MERGE_MODES)
    kind, forward = _inner(ctx, "layer")
    backward = None
    if ctx.config.get("backward_layer") is not None:
        back_kind, backward = _inner(ctx, "backward_layer")
        differs = [k for k in _SAME_KEYS if _setting(forward, k) != _setting(backward, k)]
        if back_kind != kind or differs:
            raise ctx.unsupported(f"the backward layer differs from the forward one ({back_kind} vs {kind}"
                                  f"{'; ' + ', '.join(differs) if differs else ''}); torch's bidirectional "
                                  "module runs the same cell both ways", "convert each direction separately")
    fw_weights, bw_weights = _split(ctx, *_direction_names(forward, backward))
    sub = {}
    directions = (("forward", forward, fw_weights), ("backward", backward or forward, bw_weights))
    for side, config, weights in directions:
        name = f"{ctx.layer.name}/{config.get('name', side)}"
        layer = LayerSpec(name, kind, config, ctx.layer.calls, weights)
        sub[side] = Ctx(layer, ctx.call, ctx.inputs, ctx.keras_version)
    rnn = rnn_config(sub["forward"])
    if rnn.go_backwards:
        raise ctx.unsupported("the wrapped layer has go_backwards=True (its directions swap)",
                              "wrap a layer with go_backwards=False")
    given = masks.call_mask(ctx)
    if given is not None and rnn.return_sequences and any(c.get("unroll") is True for c in (forward, backward or {})):
        # Bidirectional sets zero_output_for_mask with return_sequences; Keras's unrolled loop then zeroes the
        # backward layer's reversed outputs at the unreversed mask's steps (as rnn_cell.py refuses for RNN)
        raise ctx.unsupported("unroll=True with return_sequences under a mask (Keras zeroes the backward "
                              "direction's outputs at the unreversed mask's steps)",
                              "re-save the layer with unroll=False (the weights are the same)")
    if given is not None:
        return _masked_bidirectional(ctx, sub, rnn, features, given, merge_mode)
    params = rnn_params(sub["forward"], rnn, features) + rnn_params(sub["backward"], rnn, features, "_reverse")
    module = rnn_module(rnn, features, True)
    u, steps = rnn.units, ctx.x.shape[0]
    exprs: list[n.Expr]
    if rnn.return_sequences:  # torch's output[:, t] is (forward at t, backward at t): Keras re-reverses too
        seq = n.X[0]
        if merge_mode == "concat":
            exprs, shape = [seq], (steps, 2 * u)
        elif merge_mode is None:
            exprs, shape = [seq[..., :u], seq[..., u:]], (steps, u)
        else:
            exprs, shape = [seq.m("unflatten", -1, (2, u)).m(MERGE_REDUCE[merge_mode], -2)], (steps, u)
    else:  # the backward result is its state after the whole reversed sequence: h_n[1], not output[:, -1]
        h_n = n.X[1][0] if rnn.kind == "LSTM" else n.X[1]
        if merge_mode == "concat":
            exprs, shape = [n.call("torch.cat", n.call("tuple", h_n), dim=-1)], (2 * u,)
        elif merge_mode is None:
            exprs, shape = [h_n[0], h_n[1]], (u,)
        else:
            exprs, shape = [h_n.m(MERGE_REDUCE[merge_mode], 0)], (u,)
    infos = [TensorInfo(shape)] * len(exprs)
    if rnn.return_state:  # Keras: forward states, then backward states
        states = rnn_states(rnn, 0) + rnn_states(rnn, 1)
        exprs += states
        infos += [TensorInfo((u,))] * len(states)
    pick, outputs = rnn_result(exprs, infos)
    return Converted((Op(n.call(n.M, n.X), module), pick), outputs, params, notes=rnn.notes)



def _masked_bidirectional(ctx: Ctx, sub: dict[str, Ctx], rnn: RnnConfig, features: int, mask: n.Expr,
                          merge_mode: str | None) -> Converted:
    """Bidirectional over masked steps: each direction its own module run by ``KerasMaskedRNN`` (torch's
    bidirectional module cannot skip steps), the backward one over the reversed sequence and mask and its
    sequences reversed back, as Keras does; with return_sequences the masked steps output zeros (Keras
    sets zero_output_for_mask on both directions)."""
    zero = {"zero_masked": True} if rnn.return_sequences else {}
    run = "KerasMaskedRNN.run"
    forward = Op(n.Tuple((n.call(run, n.M, n.X, mask, **zero), n.X)), rnn_module(rnn, features, False), "forward")
    backward = Op(n.Tuple((n.X[0], n.call(run, n.M, n.X[1].m("flip", 1), mask.m("flip", 1), **zero))),
                  rnn_module(rnn, features, False), "backward")
    params = tuple(dataclasses.replace(p, suffix=side) for side in ("forward", "backward")
                   for p in rnn_params(sub[side], rnn, features))
    u, steps = rnn.units, ctx.x.shape[0]
    if rnn.return_sequences:
        fw, bw, shape = n.X[0][0], n.X[1][0].m("flip", 1), (steps, u)
    else:  # the last output of each run: the last unmasked step's
        fw, bw, shape = n.X[0][0][:, -1], n.X[1][0][:, -1], (u,)
    exprs: list[n.Expr]
    if merge_mode == "concat":
        exprs, infos = [n.call("torch.cat", (fw, bw), dim=-1)], [TensorInfo((*shape[:-1], 2 * u))]
    elif merge_mode is None:
        exprs, infos = [fw, bw], [TensorInfo(shape)] * 2
    else:
        exprs, infos = [n.call("torch.stack", (fw, bw)).m(MERGE_REDUCE[merge_mode], 0)], [TensorInfo(shape)]
    if rnn.return_state:  # Keras: forward states, then backward states; a run's state is (layers, N, H)
        for side in (n.X[0][1], n.X[1][1]):
            states = [side[0][0], side[1][0]] if rnn.kind == "LSTM" else [side[0]]
            exprs += states
            infos += [TensorInfo((u,))] * len(states)
    pick, outputs = rnn_result(exprs, infos)
    return Converted((forward, backward, pick), outputs, params, notes=rnn.notes, helpers=("KerasMaskedRNN",))
