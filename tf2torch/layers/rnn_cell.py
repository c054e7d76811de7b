"""``keras.layers.RNN`` over the built-in cells: ``RNN(LSTMCell(u))`` is an ``LSTM(u)`` (likewise GRUCell,
SimpleRNNCell), converted by the LSTM/GRU/SimpleRNN machinery of ``rnn.py``, and ``RNN(StackedRNNCells(
[c1, c2]))`` (which ``RNN([c1, c2])`` becomes) one torch module per cell, run in sequence.

A stack runs as layers in sequence: each cell reads the previous cell's output at the same step, so
running cell k over cell k-1's whole output sequence computes the same numbers. Under a mask every cell
keeps its state at a masked step, so what a later cell reads there is never used. The outputs are the
last cell's; the states (return_state) every cell's, in cell order, each cell's flattened (LSTM: h, c).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ..codegen import nodes as n
from ..readers.keras_config import qualified_class_name
from ..spec import LayerSpec, Variable
from . import masks
from .base import Converted, Ctx, Op, Param, TensorInfo
from .common import cfg_bool, weight_path
from .registry import converter
from .rnn import RnnConfig, check_rnn_input, rnn_config, rnn_module, rnn_params, rnn_result, rnn_states

_CELLS = {"LSTMCell": "LSTM", "GRUCell": "GRU", "SimpleRNNCell": "SimpleRNN"}
# Keras's saving_lib names a stacked cell's weights by its class in snake case, numbered per class.
_SNAKE = {"LSTMCell": "lstm_cell", "GRUCell": "gru_cell", "SimpleRNNCell": "simple_rnn_cell"}
# The RNN layer's own settings that rnn.py's checks read from an LSTM/GRU/SimpleRNN config.
_LAYER_KEYS = ("return_sequences", "return_state", "go_backwards", "stateful", "time_major")


def _entry(ctx: Ctx, entry: Any, what: str) -> tuple[str, Mapping[str, Any]]:
    if not isinstance(entry, Mapping) or not isinstance(entry.get("config"), Mapping):
        raise ctx.unsupported(f"{what} should be a layer entry with 'class_name' and 'config', "
                              f"found {str(entry)[:80]!r}")
    # a user's cell class (registered or from its own module) computes what its code says: refused by name
    return qualified_class_name(entry), entry["config"]


def _cells(ctx: Ctx, layer: Mapping[str, Any] | None = None) -> tuple[list[tuple[str, Mapping[str, Any]]], bool]:
    """The (class, config) of each cell of this RNN (or of the RNN config ``layer``), in order, and whether
    they are a StackedRNNCells."""
    layer = ctx.config if layer is None else layer
    class_name, config = _entry(ctx, layer.get("cell"), "config 'cell'")
    stacked = class_name == "StackedRNNCells"
    if stacked:
        if config.get("reverse_state_order"):  # tf_keras's deprecated option: states in reverse cell order
            raise ctx.unsupported("StackedRNNCells(reverse_state_order=True) is not supported",
                                  "re-save the stack without it")
        entries = config.get("cells")
        if not isinstance(entries, list) or not entries:
            raise ctx.unsupported(f"StackedRNNCells config 'cells' should be a non-empty list, found {entries!r}")
        cells = [_entry(ctx, e, "a StackedRNNCells cell") for e in entries]
    else:
        cells = [(class_name, config)]
    for name, _ in cells:
        if name not in _CELLS:
            raise ctx.unsupported(f"cell class {name!r} is not supported; only {', '.join(_CELLS)} and a "
                                  "StackedRNNCells of them", "port this layer by hand (a loop over the cell)")
    return cells, stacked


def _owner(var: Variable, keras_segments: dict[str, int], names: dict[str, int | None], count: int) -> int | None:
    """Which stacked cell a weight belongs to, from its path (None: no cell says it is its own)."""
    path = weight_path(var)
    if len(path) >= 4 and path[-4] == "cells" and path[-2] == "vars":  # .keras: cells/<class>_<k>/vars/<n>
        return keras_segments.get(path[-3])
    if len(path) >= 3 and path[-3] == "cells" and path[-2].isdigit():  # TF2 checkpoint: cells/<i>/<leaf>
        return int(path[-2]) if int(path[-2]) < count else None
    return names.get(path[-2]) if len(path) >= 2 else None  # .h5, full names: <stack>/<cell name>/<leaf>


def _split(ctx: Ctx, cells: list[tuple[str, Mapping[str, Any]]]) -> list[tuple[Variable, ...]]:
    """Each stacked cell's weights (``.h5`` names a cell by its config name, ``.keras`` by its class)."""
    keras_segments, per_class = {}, dict.fromkeys(_SNAKE.values(), 0)
    names: dict[str, int | None] = {}
    for i, (class_name, config) in enumerate(cells):
        base = _SNAKE[class_name]
        keras_segments[base if per_class[base] == 0 else f"{base}_{per_class[base]}"] = i
        per_class[base] += 1
        name = config.get("name")
        if isinstance(name, str):
            names[name] = None if name in names else i  # two cells of one name: neither can claim a weight
    groups: list[list[Variable]] = [[] for _ in cells]
    for var in ctx.layer.weights:
        owner = _owner(var, keras_segments, names, len(cells))
        if owner is None:
            raise ctx.unsupported(f"cannot tell which stacked cell weight {var.name!r} belongs to",
                                  "give the cells distinct names and re-save the model")
        groups[owner].append(var)
    return [tuple(g) for g in groups]


def _cell_ctx(ctx: Ctx, class_name: str, config: Mapping[str, Any], weights: tuple[Variable, ...]) -> Ctx:
    """The cell as the LSTM / GRU / SimpleRNN layer it computes, with the RNN layer's settings."""
    merged = {**config, **{k: ctx.config[k] for k in _LAYER_KEYS if k in ctx.config}}
    name = f"{ctx.layer.name}/{config.get('name', class_name)}"
    layer = LayerSpec(name, _CELLS[class_name], merged, ctx.layer.calls, weights)
    return Ctx(layer, ctx.call, ctx.inputs, ctx.keras_version, ctx.keras_release)


def one_cell(ctx: Ctx, layer: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
    """The RNN config ``layer`` (Bidirectional's wrapped layer) over one cell, or a StackedRNNCells of one, as
    the LSTM / GRU / SimpleRNN config it computes: the cell's settings, the RNN's name and settings."""
    cells, _ = _cells(ctx, layer)
    if len(cells) != 1:  # each direction would be a chain of modules: not converted
        raise ctx.unsupported(f"wraps an RNN over a StackedRNNCells of {len(cells)} cells; only one cell is "
                              "supported there", "port this layer by hand (each direction a chain of cells)")
    class_name, cell = cells[0]
    keys = (*_LAYER_KEYS, "name", "unroll")
    return _CELLS[class_name], {**cell, **{k: layer[k] for k in keys if k in layer}}


@converter("RNN", wants="keras")
def rnn_layer(ctx: Ctx) -> Converted:
    features = check_rnn_input(ctx)
    cells, stacked = _cells(ctx)
    weights = _split(ctx, cells) if stacked else [ctx.layer.weights]
    subs = [_cell_ctx(ctx, c, config, w) for (c, config), w in zip(cells, weights, strict=True)]
    rnns: list[RnnConfig] = [rnn_config(sub) for sub in subs]
    zero_masked = cfg_bool(ctx, "zero_output_for_mask", False)
    given = masks.call_mask(ctx)
    first = rnns[0]
    if (given is not None and zero_masked and first.go_backwards and first.return_sequences
            and cfg_bool(ctx, "unroll", False)):
        # Keras's unrolled loop zeroes the reversed outputs with the unreversed mask (its while loop does not)
        raise ctx.unsupported("unroll=True with go_backwards, zero_output_for_mask and return_sequences under a "
                              "mask (Keras zeroes the reversed sequence at the unreversed mask's steps)",
                              "re-save the layer with unroll=False (the weights are the same)")
    # go_backwards: the stack runs over the reversed sequence and returns its outputs in that order.
    x = n.X.m("flip", 1) if first.go_backwards else n.X
    mask = given.m("flip", 1) if given is not None and first.go_backwards else given
    one = len(rnns) == 1
    ops: list[Op] = []
    params: list[Param] = []
    sizes = [features] + [r.units for r in rnns[:-1]]  # each cell reads the previous cell's output
    for k, (sub, rnn, size) in enumerate(zip(subs, rnns, sizes, strict=True)):
        zero = {"zero_masked": True} if zero_masked and k == len(rnns) - 1 else {}
        inp = x if k == 0 else n.X[-1][0]  # cell k reads cell k-1's output sequence
        call = n.call("KerasMaskedRNN.run", n.M, inp, mask, **zero) if given is not None else n.call(n.M, inp)
        suffix = "" if one else f"cell{k}"
        # a stack threads a tuple of every cell's torch result (output, state) through its ops
        expr = call if one else n.Tuple((call,)) if k == 0 else n.Tuple((n.Starred(n.X), call))
        ops.append(Op(expr, rnn_module(rnn, size, False), suffix))
        params += [p if one else dataclasses.replace(p, suffix=suffix) for p in rnn_params(sub, rnn, size)]
    result = [n.X if one else n.X[k] for k in range(len(rnns))]
    last, steps = rnns[-1], ctx.x.shape[0]
    exprs: list[n.Expr]
    if last.return_sequences:
        exprs, infos = [result[-1][0]], [TensorInfo((steps, last.units))]
    else:  # the last step's (under a mask: the last unmasked step's; zeros with zero_output_for_mask if masked)
        exprs, infos = [result[-1][0][:, -1]], [TensorInfo((last.units,))]
    if last.return_state:  # every cell's states, in cell order, as Keras flattens a stack's nested states
        for rnn, ref in zip(rnns, result, strict=True):
            states = rnn_states(rnn, 0, ref)
            exprs += states
            infos += [TensorInfo((rnn.units,))] * len(states)
    pick, outputs = rnn_result(exprs, infos)
    notes = tuple(note for rnn in rnns for note in rnn.notes)
    return Converted((*ops, pick), outputs, tuple(params), notes=notes,
                     helpers=("KerasMaskedRNN",) if given is not None else ())
