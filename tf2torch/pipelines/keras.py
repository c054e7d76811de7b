"""Keras → a generated PyTorch model: the classes of ``model.py``, write plans for its weights, the report.

The converters (``layers/``) turn each Keras layer into modules and say which variable fills which
parameter; here that becomes the plans and the report, and ``codegen.model_file`` renders the file.
A lowered TF graph (``pipelines.tf_graph``) comes through ``generated`` too.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..errors import UnsupportedError
from ..interface import interface_layout
from ..layers.assemble import generate, param_plan
from ..layers.base import TensorInfo
from ..layers.graph import Generated, Options
from ..map.account import Entry
from ..map.ledger import open_report, settle
from ..options import ConvertOptions
from ..spec import GraphSpec, LayerSpec, ModelSpec, Variable
from . import Outcome


def run(spec: ModelSpec, options: ConvertOptions) -> Outcome:
    """Generate the model of ``spec``'s Keras architecture."""
    # --input-shape stays in the generated model's layout: the converter translates it as it lays out the input
    return generated(spec, options, input_shape=options.input_shape)


def generated(spec: ModelSpec, options: ConvertOptions, *, input_shape: tuple[int, ...] | None,
              doc_notes: tuple[str, ...] = ()) -> Outcome:
    """The generated model of ``spec.graph`` (a Keras model, or a TF graph's lowered layers); ``doc_notes``:
    lines for model.py's docstring (and the report's notes), e.g. a quantized model's input scales."""
    from ..codegen import model_file  # codegen renders; keep the import next to its one use

    graph = spec.graph
    if graph is None:
        raise UnsupportedError(f"{spec.path}: holds no Keras architecture; pass --config model.json "
                               "(model.to_json()) or --model FILE.py:CALLABLE")
    gen_options = Options(channels_last=options.channels_last, blocks=not options.flat, input_shape=input_shape,
                          keras_version=graph.keras_version, keras_release=graph.keras_release,
                          scoped=graph.class_name in ("TFGraph", "TFLite"))  # a graph's modules nest by its scopes
    try:
        gen = generate(graph, gen_options)
    except UnsupportedError as exc:  # converters name the layer; the user also needs the file
        raise UnsupportedError(f"{spec.path}: {exc}") from None
    # Keras mode ignores the rules file's skips: the architecture, not a matcher, decides what is used.
    report, candidates = open_report(spec, "keras", ema=options.ema)
    plans = []
    used: set[str] = set()  # by name: --ema hands out copies of the variables that read the shadows
    for key, p in gen.params:
        plans.append(param_plan(key, p, options.out_dtype))
        if p.var is not None:
            used.add(p.var.name)
            report.add(Entry("mapped", source=p.var.name, key=key, layout=p.layout.describe, shape=p.var.shape,
                             out_shape=p.layout.out_shape(p.var.shape), dtype=p.var.dtype.name,
                             reason="by layer"))
        else:
            report.add(Entry("filled", key=key, out_shape=tuple(p.const.shape) if p.const is not None else (),
                             reason="constant: the Keras layer has no such weight (e.g. BatchNorm counter)"))
    owners = {w.name: layer.name for layer in _all_layers(graph.layers) for w in layer.weights}

    def verdict(var: Variable) -> tuple[str, str]:
        if var.name in owners:
            return "skipped", f"weight of {owners[var.name]!r} that the PyTorch module does not need"
        return "unexpected", "no layer of the architecture owns it"

    settle(report, candidates, used, verdict)
    report.notes += gen.notes + list(doc_notes)
    report.interface = _interface(graph, gen)
    source = model_file.render(gen, spec.path.name, options.weights_name, doc_notes)
    return Outcome(plans, report, source, gen.taps)


def _interface(graph: GraphSpec, gen: Generated) -> dict:
    """The model's inputs and outputs as report.json states them (verify reads them back)."""
    names = graph.output_names if len(graph.output_names) == len(gen.outputs) else ()
    interface = {
        "inputs": [_tensor_json(name, info) for name, info in gen.inputs],
        "outputs": [_tensor_json(names[i] if names else f"output_{i}", info) for i, info in enumerate(gen.outputs)],
        "keras_inputs": [ref.layer for ref in graph.inputs],
        "layers": gen.taps,
        "layer_layouts": gen.tap_layouts,  # "cf": channels moved to axis 1; "keras": axes as in Keras
    }
    if graph.tf_outputs:  # a lowered TF graph: which of its tensors verify feeds and compares
        interface.update(tf_inputs=list(graph.tf_inputs), tf_outputs=list(graph.tf_outputs))
    return interface


def _all_layers(layers: tuple[LayerSpec, ...] | list[LayerSpec]) -> Iterator[LayerSpec]:
    for layer in layers:
        yield layer
        if layer.graph is not None:
            yield from _all_layers(layer.graph.layers)


def _tensor_json(name: str, info: TensorInfo) -> dict:
    """How a model input/output crosses the interface: its Keras shape and the PyTorch layout."""
    return {"name": name, "keras_shape": list(info.shape), "layout": interface_layout(info.layout, info.rank)}

