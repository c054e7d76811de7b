"""A Keras model end to end: generated classes, write plans for its weights, and the report."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .. import dtypes
from ..dtypes import DType
from ..errors import UnsupportedError
from ..interface import interface_layout
from ..map.account import Entry, Report
from ..map.plan import plan_tensor
from ..map.select import copies_of, select
from ..spec import GraphSpec, ModelSpec
from ..write.plan import TensorPlan
from .base import Param, TensorInfo
from .graph import Generated, GraphConverter, Options


@dataclass
class KerasConversion:
    plans: list[TensorPlan]
    report: Report
    source: str  # model.py text
    taps: dict[str, str]  # Keras layer -> module path, for verify


def _const_plan(key: str, value: np.ndarray) -> TensorPlan:
    value = np.array(value, order="C")  # not ascontiguousarray: that makes a 0-d array (1,)
    dtype = dtypes.from_numpy(value.dtype, key)
    return TensorPlan(key=key, dtype=dtype, shape=tuple(value.shape), produce=lambda: value, source="")


def _all_layers(graph: GraphSpec):
    for layer in graph.layers:
        yield layer
        if layer.graph is not None:
            yield from _all_layers(layer.graph)


def convert_keras(spec: ModelSpec, options: Options, *, weights_name: str, ema: bool = False,
                  dtype: DType | None = None) -> KerasConversion:
    from ..codegen import model_file  # codegen renders; keep the import next to its one use

    graph = spec.graph
    if graph is None:
        raise UnsupportedError(f"{spec.path}: holds no Keras architecture; pass --config model.json "
                               "(model.to_json()) or --model FILE.py:CALLABLE")
    options.keras_version = graph.keras_version
    options.keras_release = graph.keras_release
    options.scoped = graph.class_name == "TFGraph"  # a TF graph's modules nest by its scopes
    try:
        gen = generate(graph, options)
    except UnsupportedError as exc:  # converters name the layer; the user also needs the file
        raise UnsupportedError(f"{spec.path}: {exc}") from None
    report = Report(source=str(spec.path), format=spec.format.value, mode="keras")
    plans: list[TensorPlan] = []
    used: set[str] = set()  # by name: --ema hands out copies of the variables that read the shadows
    for key, p in gen.params:
        plans.append(_param_plan(key, p, dtype))
        if p.var is not None:
            used.add(p.var.name)
            report.add(Entry("mapped", source=p.var.name, key=key, layout=p.layout.describe, shape=p.var.shape,
                             out_shape=p.layout.out_shape(p.var.shape), dtype=p.var.dtype.name,
                             reason="by layer"))
        else:
            report.add(Entry("filled", key=key, out_shape=tuple(p.const.shape) if p.const is not None else (),
                             reason="constant: the Keras layer has no such weight (e.g. BatchNorm counter)"))
    layer_weights = {w.name: layer.name for layer in _all_layers(graph) for w in layer.weights}
    candidates, skipped = select(spec.variables, ema=ema)
    for entry in skipped:
        report.add(entry)
    unused = [var for var in candidates if var.name not in used]
    copies = copies_of(unused, [var for var in candidates if var.name in used])
    for var in unused:
        owner = layer_weights.get(var.name)
        if var.name in copies:
            report.add(Entry("skipped", source=var.name, shape=var.shape, dtype=var.dtype.name,
                             reason=f"a copy of {copies[var.name]!r} (the same variable saved twice)"))
        elif owner is not None:
            report.add(Entry("skipped", source=var.name, shape=var.shape, dtype=var.dtype.name,
                             reason=f"weight of {owner!r} that the PyTorch module does not need"))
        else:
            report.add(Entry("unexpected", source=var.name, shape=var.shape, dtype=var.dtype.name,
                             reason="no layer of the architecture owns it"))
    report.notes += gen.notes
    names = graph.output_names if len(graph.output_names) == len(gen.outputs) else ()
    report.interface = {
        "inputs": [_tensor_json(name, info) for name, info in gen.inputs],
        "outputs": [_tensor_json(names[i] if names else f"output_{i}", info) for i, info in enumerate(gen.outputs)],
        "keras_inputs": [ref.layer for ref in graph.inputs],
        "layers": gen.taps,
        "layer_layouts": gen.tap_layouts,  # "cf": channels moved to axis 1; "keras": axes as in Keras
    }
    if graph.tf_outputs:  # a lowered TF graph: which of its tensors verify feeds and compares
        report.interface.update(tf_inputs=list(graph.tf_inputs), tf_outputs=list(graph.tf_outputs))
    source = model_file.render(gen, spec.path.name, weights_name)
    return KerasConversion(plans, report, source, gen.taps)


def generate(graph: GraphSpec, options: Options) -> Generated:
    """The generated classes of ``graph``, each kind of repeated block as one class (codegen/blocks/).

    A block whose generated code matches no other block's is converted flat on a second pass: a class
    used once reads worse than its layers inline."""
    from ..codegen.blocks import find, stages, template

    if not options.blocks or options.scoped:  # a TF graph's modules already nest by its scopes
        return GraphConverter(options).convert(graph)
    exclude: frozenset[str] = frozenset()
    try:
        while True:
            converter = GraphConverter(options)
            gen = converter.convert(find.nest_all(graph, exclude), original=graph)
            gen.classes, lonely = template.merge(gen.classes, set(gen.helpers))
            if not lonely or exclude.issuperset(lonely):
                stages.sequential(gen, {c.name for c in gen.classes if c.block})
                return gen
            exclude |= frozenset(lonely)
    except UnsupportedError as exc:  # a block the walker cannot take: the same numbers, one module per layer
        gen = GraphConverter(options).convert(graph)  # (when this fails too, its error is the one to report)
        gen.notes.append(f"repeated blocks left flat: {exc}")
        return gen


def _tensor_json(name: str, info: TensorInfo) -> dict:
    """How a model input/output crosses the interface: its Keras shape and the PyTorch layout."""
    return {"name": name, "keras_shape": list(info.shape), "layout": interface_layout(info.layout, info.rank)}


def match_names(spec: ModelSpec) -> dict[str, str]:
    """Source name -> a name that says what the weight is (``layers/conv2d/vars/0`` -> ``conv1/weight``).

    For matching a Keras file onto a user's own PyTorch model: the converters know which Keras weight is
    which; their generated keys (layer name + torch parameter) are what the name matcher understands.
    Empty when the architecture cannot be converted (then the file's own names are all there is).
    """
    if spec.graph is None:
        return {}
    try:  # flat: block stages renumber layers (conv2_block2 -> conv2_blocks.0), which would mislead a matcher
        gen = GraphConverter(Options(keras_version=spec.graph.keras_version, blocks=False)).convert(spec.graph)
    except UnsupportedError:
        return {}
    return {p.var.name: key.replace(".", "/") for key, p in gen.params if p.var is not None}


def _param_plan(key: str, p: Param, dtype: DType | None) -> TensorPlan:
    if p.var is not None:
        return plan_tensor(key, p.var, p.layout, dtype)
    if p.const is None:
        raise ValueError(f"{key}: a Param needs a var or a const")
    const = p.const
    if dtype is not None and const.dtype.kind == "f":
        const = dtypes.cast(const.astype(np.float32), dtypes.by_name("float32"), dtype)
    return _const_plan(key, const)
