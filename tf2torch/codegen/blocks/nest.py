"""Nest each planned run of layers (``find.plan``) as a graph of its own: one layer of class
``BLOCK_CLASS`` in its graph's place, whose graph the walker converts as it converts a nested model.

Inside, a layer's attribute and locals are named by ``local_name`` (the block's prefix dropped), so blocks
of one kind generate the same code and ``template`` can merge them; the Keras names stay the layers' own
(verify's taps, messages).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ...spec import GraphSpec, LayerCall, LayerSpec, TensorRef
from .. import namespace

if TYPE_CHECKING:
    from .find import Run

BLOCK_CLASS = "tf2torch.Block"  # class_name of the layer standing for a nested block


def snake(class_name: str) -> str:
    """Keras's default layer name for a class (``ReLU`` -> ``re_lu``, ``keras.src.ops.numpy>Add`` -> ``add``)."""
    cls = re.split(r"[>.]", class_name)[-1]  # Keras 3 op layers: "keras.src.ops.numpy>Add"
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", cls)).lower()


def local_name(layer: LayerSpec, prefix: str) -> str:
    """A layer's name inside its block: the prefix dropped, leading numbers moved to the end
    (ResNet's ``conv2_block1_1_conv`` -> ``conv1``, ``conv2_block1_0_bn`` -> ``bn0``); a layer named by
    Keras, or named the prefix itself (MobileNet's ``conv_dw_1``), by its class (``depthwise_conv2d``)."""
    name = layer.name
    if not name.startswith(prefix + "_"):
        return snake(layer.class_name) if name == prefix else re.sub(r"_\d+$", "", name)
    words = name[len(prefix) + 1:].split("_")
    numbers = []
    while len(words) > 1 and words[0].isdigit():
        numbers.append(words.pop(0))
    return "_".join(words) + "".join(numbers)


def nest(graph: GraphSpec, runs: list[Run]) -> GraphSpec:
    """``graph`` with each run replaced by one layer (class ``BLOCK_CLASS``) holding the run as a graph."""
    if not runs:
        return graph
    moved: dict[tuple[str, int, int], TensorRef] = {}  # an inner layer's output -> the block's output
    blocks: dict[int, LayerSpec] = {}
    inside = {i for r in runs for i in range(r.start, r.stop)}
    for run in runs:
        block = graph.layers[run.start:run.stop]
        names = {layer.name for layer in block}
        external: list[TensorRef] = []
        for layer in block:
            for ref in layer.calls[0].inputs:
                if ref.layer not in names and ref not in external:
                    external.append(ref)
        spaces = namespace.Namespace(names)  # an input named like a layer inside would take its values
        inputs = [spaces.create("x" if len(external) == 1 else f"x{j}") for j in range(len(external))]
        rename = {(r.layer, r.node, r.index): TensorRef(inputs[j]) for j, r in enumerate(external)}
        inner = tuple(_rewired(layer, rename) for layer in block)
        outside = [ref for i, layer in enumerate(graph.layers) if not run.start <= i < run.stop
                   for call in layer.calls for ref in call.inputs] + list(graph.outputs)
        position = {layer.name: i for i, layer in enumerate(block)}
        outputs = sorted({ref for ref in outside if ref.layer in names},
                         key=lambda ref: (position[ref.layer], ref.node, ref.index))
        for j, ref in enumerate(outputs):
            moved[(ref.layer, ref.node, ref.index)] = TensorRef(run.prefix, 0, j)
        sub = GraphSpec(name=run.prefix, class_name=BLOCK_CLASS,
                        layers=tuple(LayerSpec(name, "InputLayer", {"batch_shape": None}) for name in inputs) + inner,
                        inputs=tuple(TensorRef(name) for name in inputs), outputs=tuple(outputs),
                        keras_version=graph.keras_version, keras_release=graph.keras_release)
        blocks[run.start] = LayerSpec(run.prefix, BLOCK_CLASS, {"name": run.prefix},
                                      calls=(LayerCall(tuple(external)),), graph=sub)
    layers = []
    for i, layer in enumerate(graph.layers):
        if i in blocks:  # its inputs may be another block's outputs
            layers.append(_rewired(blocks[i], moved))
        if i not in inside:
            layers.append(_rewired(layer, moved))
    return GraphSpec(name=graph.name, class_name=graph.class_name, layers=tuple(layers),
                     inputs=graph.inputs, outputs=tuple(moved.get((r.layer, r.node, r.index), r) for r in graph.outputs),
                     keras_version=graph.keras_version, keras_release=graph.keras_release,
                     tf_inputs=graph.tf_inputs, tf_outputs=graph.tf_outputs, output_names=graph.output_names)


def _rewired(layer: LayerSpec, rename: dict[tuple[str, int, int], TensorRef]) -> LayerSpec:
    if not any((r.layer, r.node, r.index) in rename for call in layer.calls for r in call.inputs):
        return layer
    calls = tuple(LayerCall(tuple(rename.get((r.layer, r.node, r.index), r) for r in call.inputs), call.kwargs)
                  for call in layer.calls)
    return LayerSpec(layer.name, layer.class_name, layer.config, calls, layer.weights, layer.graph, layer.assets)
