"""Tie what owns no weights to the user's modules: TF pools, and the Flatten before a Dense.

Convs, BatchNorms and Dense layers are tied to modules by their variables (the mapping). Pools and
flattens read none, so they are placed by structure instead: the source's ops in graph (or Keras
layer) order against the modules in the order one forward pass ran them (``trace.py``). A pool is tied
when it sits between the same two weight-tied neighbours on both sides and its kind, window and
stride agree; where two candidates could swap, only pools of one padding are tied (then the swap does
not matter) and otherwise nothing is. A Dense fed by a Flatten over NHWC is checked on values: the
Linear's input in the forward pass must be the tied module's output flattened channels-first (the
rows are then reordered) or channels-last (then they are not); anything else is refused.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from . import sources
from .sources import keras_layers, per_dim, window_kind

TF1_ANCHORS = ("Conv2D", "Conv3D", "DepthwiseConv2dNative", "Conv2DBackpropInput", "FusedBatchNorm",
               "FusedBatchNormV2", "FusedBatchNormV3", "BatchNormalization", "MatMul")
TF1_POOLS = {"MaxPool": "max", "AvgPool": "avg", "MaxPool3D": "max", "AvgPool3D": "avg"}
KERAS_POOLS = {f"{m}Pooling{n}D": mode for m, mode in (("Max", "max"), ("Average", "avg")) for n in (1, 2, 3)}


@dataclass(frozen=True)
class SourceOp:
    """A source op in source order: an anchor (tied to ``module`` by its variables) or a pool."""

    name: str
    what: str  # "Conv2D 'conv1/Conv2D'", for messages
    module: str = ""  # anchors: the module its variables went to
    mode: str = ""  # pools: "max" / "avg"
    kernel: tuple[int, ...] = ()
    stride: tuple[int, ...] = ()
    padding: str = ""  # "SAME" / "VALID"


@dataclass(frozen=True)
class Flatten:
    """A Dense (``dense``: its module) whose input is a Flatten of ``source_op``'s NHWC output."""

    dense: str
    dense_key: str
    source_op: str  # a SourceOp name, or "" for the model input
    what: str


@dataclass
class Ties:
    pools: dict[str, SourceOp] = field(default_factory=dict)  # module path -> the source pool
    untied: list[SourceOp] = field(default_factory=list)  # source pools no module could be tied to
    flattens: list[Flatten] = field(default_factory=list)


def _spatial(values: tuple[int, ...], data_format: str) -> tuple[int, ...]:
    return values[2:] if data_format.startswith("NC") else values[1:-1]


def source_ops(spec: Any, key_of_var: dict[str, str]) -> tuple[list[SourceOp], list[Flatten]]:
    """Anchors and pools of a TF1 graph or a Keras config, in source order; and its Flatten->Dense."""
    def module_of(variables) -> str:
        return sources.module_of(variables, key_of_var)

    ops: list[SourceOp] = []
    flattens: list[Flatten] = []
    for op in spec.ops:
        what = f"{op.op} {op.name!r}"
        if op.op in TF1_POOLS:
            ops.append(SourceOp(op.name, what, mode=TF1_POOLS[op.op], kernel=_spatial(op.ksize, op.data_format),
                                stride=_spatial(op.strides, op.data_format), padding=op.padding))
        elif op.op in TF1_ANCHORS and module_of(op.variables):
            ops.append(SourceOp(op.name, what, module=module_of(op.variables)))
        if op.op == "MatMul" and op.flatten_of and module_of(op.variables):
            kernel = next(key_of_var[v] for v in op.variables if v in key_of_var)
            source = "" if next((o.op for o in spec.ops if o.name == op.flatten_of), "") == "Placeholder" \
                else op.flatten_of
            flattens.append(Flatten(kernel.rpartition(".")[0], kernel, source,
                                    f"TF graph: {what} reads a Reshape of {op.flatten_of!r}'s NHWC output"))
    for layer in keras_layers(spec.graph):
        cfg, what = layer.config, f"Keras {layer.class_name} {layer.name!r}"
        if layer.class_name in KERAS_POOLS:
            n = int(layer.class_name[-2])
            kernel = per_dim(tuple(cfg["pool_size"]) if isinstance(cfg.get("pool_size"), list) else cfg.get("pool_size", 2), n)
            stride = cfg.get("strides") or kernel
            ops.append(SourceOp(layer.name, what, mode=KERAS_POOLS[layer.class_name], kernel=kernel,
                                stride=per_dim(tuple(stride) if isinstance(stride, list) else stride, n),
                                padding=str(cfg.get("padding", "valid")).upper()))
        elif module_of(w.name for w in layer.weights):
            ops.append(SourceOp(layer.name, what, module=module_of(w.name for w in layer.weights)))
    flattens += _keras_flattens(spec.graph, key_of_var)
    return ops, flattens


# Keras layers that keep their input's layout and own no weights: a Flatten's input is looked for
# behind them (Conv -> ReLU -> Dropout -> Flatten -> Dense).
_KERAS_PASS = frozenset({"Activation", "ReLU", "LeakyReLU", "ELU", "PReLU", "Softmax", "Dropout", "SpatialDropout1D",
                         "SpatialDropout2D", "SpatialDropout3D", "GaussianNoise", "GaussianDropout", "AlphaDropout",
                         "ActivityRegularization"})


def _keras_flattens(graph: Any, key_of_var: dict[str, str]) -> list[Flatten]:
    """Dense layers whose input is a channels-last Flatten of a 4-D/5-D tensor, in a Keras config."""
    if graph is None:
        return []
    found = []
    by_name = {layer.name: layer for layer in graph.layers}

    def feeder(layer: Any) -> Any:
        inputs = layer.calls[0].inputs if layer.calls else ()
        return by_name.get(inputs[0].layer) if len(inputs) == 1 else None

    for layer in graph.layers:
        if layer.graph is not None:
            found += _keras_flattens(layer.graph, key_of_var)
        kernel = next((key_of_var[w.name] for w in layer.weights if w.name in key_of_var), "")
        flat = feeder(layer) if layer.class_name == "Dense" and kernel else None
        if flat is None or flat.class_name != "Flatten" or flat.config.get("data_format") == "channels_first":
            continue
        source, steps = feeder(flat), 0
        while source is not None and source.class_name in _KERAS_PASS and steps < 64:
            source, steps = feeder(source), steps + 1
        if source is None:
            continue
        name = "" if source.class_name == "InputLayer" else source.name
        found.append(Flatten(kernel.rpartition(".")[0], kernel, name,
                             f"Keras config: Dense {layer.name!r} reads Flatten {flat.name!r} of {source.name!r}"))
    return found


def _neighbours(seq: list[tuple[str, bool]]) -> dict[int, tuple[str, str]]:
    """For each pool position in ``seq`` ((id, is_anchor) items): its previous and next anchor."""
    out, prev = {}, ""
    pending: list[int] = []
    for i, (ident, anchor) in enumerate(seq):
        if anchor:
            for j in pending:
                out[j] = (out[j][0], ident)
            pending, prev = [], ident
        else:
            out[i] = (prev, "")
            pending.append(i)
    return out


def tie(model: Any, ops: list[SourceOp], flattens: list[Flatten], trace: Any) -> Ties:
    """Pools tied by position among weight-tied neighbours (see the module docstring)."""
    ties = Ties(flattens=list(flattens))
    pools = [op for op in ops if op.mode]
    if not pools:
        return ties
    if trace is None:
        ties.untied = pools
        return ties
    anchors = {op.module for op in ops if op.module and trace.ran(op.module)}
    modules = dict(model.named_modules())
    torch_seq = [(p, p in anchors) for p in trace.order
                 if p in anchors or window_kind(modules[p]).startswith(("MaxPool", "AvgPool"))]
    source_seq = [(op.module or op.name, bool(op.module)) for op in ops if not op.module or op.module in anchors]
    source_by_name = {op.name: op for op in pools}
    torch_places = _neighbours(torch_seq)
    source_places = _neighbours(source_seq)
    # Both neighbours first; then the previous one alone, then the next one alone (a branch created
    # in another order on the two sides: slim builds a unit's shortcut before its residual convs).
    for side in (slice(0, 2), slice(0, 1), slice(1, 2)):
        by_place: dict[tuple[str, ...], list[str]] = defaultdict(list)
        for i, place in torch_places.items():
            if torch_seq[i][0] not in ties.pools:
                by_place[place[side]].append(torch_seq[i][0])
        tied = {id(op) for op in ties.pools.values()}
        grouped: dict[tuple[str, ...], list[SourceOp]] = defaultdict(list)
        for i, place in source_places.items():
            op = source_by_name[source_seq[i][0]]
            if id(op) not in tied:
                grouped[place[side]].append(op)
        for place, group in grouped.items():
            candidates = by_place.get(place, [])
            for signature in {(p.mode, p.kernel, p.stride) for p in group}:
                same = [p for p in group if (p.mode, p.kernel, p.stride) == signature]
                fits = [c for c in candidates if _signature(modules[c]) == signature]
                if len(same) == len(fits) and len({p.padding for p in same}) == 1:
                    ties.pools.update(zip(fits, same))
    tied = {id(op) for op in ties.pools.values()}
    ties.untied = [op for op in pools if id(op) not in tied]
    return ties


def _signature(module: Any) -> tuple[str, tuple[int, ...], tuple[int, ...]]:
    kind = window_kind(module)
    n = int(kind[-2])
    mode = "max" if kind.startswith("MaxPool") else "avg"
    stride = module.stride if module.stride is not None else module.kernel_size
    return mode, per_dim(module.kernel_size, n), per_dim(stride, n)
