"""A Keras graph's inputs as the graph converter takes them: their Keras shapes (saved, or from
``--input-shape``) and their layouts in the generated model, decided by ``tf2torch.interface``.

``--input-shape`` is given in the generated model's layout, which depends on what the input's first
consumer wants (an LSTM takes a rank-3 input as Keras has it, a Conv1D channels first): it is translated
here, with the very decision that lays out the input, so the two cannot disagree.
"""

from __future__ import annotations

from ..errors import UnsupportedError, UsageError
from ..interface import input_channels_first, keras_shape
from ..spec import GraphSpec, LayerSpec
from . import layouts_rt
from .base import TensorInfo
from .registry import lookup

NESTED_MODEL_CLASSES = {"Functional", "Sequential", "Model"}


def input_shape(layer: LayerSpec) -> tuple[int | None, ...]:
    """Keras 2 writes ``batch_input_shape``, Keras 3 ``batch_shape``; both include the batch axis."""
    shape = layer.config.get("batch_shape") or layer.config.get("batch_input_shape")
    if not isinstance(shape, (list, tuple)) or len(shape) < 2 or not all(
            s is None or (isinstance(s, int) and not isinstance(s, bool) and s >= 0) for s in shape):
        raise UnsupportedError(f"input layer {layer.name!r}: expected a batch shape like [null, 224, 224, 3], "
                               f"found {shape!r}; pass --input-shape")
    return tuple(shape[1:])


def first_consumer_wants(graph: GraphSpec) -> dict[str, str]:
    """Input layer -> the layout its first reader wants ("cf", "keras", "any", "same"). pipelines/tf_graph.py
    reads it too, to translate --input-shape for a TF graph before lowering it."""
    wants: dict[str, str] = {}
    for layer in graph.layers:
        for call in layer.calls:
            for ref in call.inputs:
                if ref.layer not in wants and layer.graph is None and layer.class_name not in NESTED_MODEL_CLASSES:
                    try:
                        wants[ref.layer] = lookup(layer).wants
                    except UnsupportedError:
                        pass  # no converter: the conversion names the layer when it reaches it
    return wants


def input_infos(graph: GraphSpec, wants: dict[str, str], given: tuple[int, ...] | None,
                channels_last: bool) -> list[TensorInfo]:
    """Each model input's Keras shape and layout ("cf" / "keras"); ``given``: --input-shape, batch first,
    in the generated model's layout."""
    if given is not None and len(graph.inputs) != 1:
        raise UsageError("--input-shape applies to models with exactly one input")
    infos = []
    for ref in graph.inputs:
        layer = graph.layer(ref.layer)
        if given is None:
            shape = input_shape(layer)
            cf = input_channels_first(len(shape) + 1, wants.get(ref.layer), channels_last)
        else:  # the given rank and the first consumer decide, as for a model saved with that shape
            cf = input_channels_first(len(given), wants.get(ref.layer), channels_last)
            shape = keras_shape(given, cf)
            _check_given(layer, given, shape, cf)
        infos.append(layouts_rt.normalise(TensorInfo(shape, "cf" if cf else "keras")))
    return infos


def _check_given(layer: LayerSpec, given: tuple[int, ...], shape: tuple[int | None, ...], cf: bool) -> None:
    """--input-shape must fit the input's saved shape (where it has one): a size it contradicts would
    plan weights and padding for another model than the file's."""
    try:
        saved = input_shape(layer)
    except UnsupportedError:
        return  # no usable saved shape: the given one is all there is
    if len(saved) != len(shape) or any(s is not None and s != g for s, g in zip(saved, shape)):
        layout = "channels first" if cf else "in Keras layout, as its first layer takes it"
        raise UsageError(f"--input-shape {','.join(map(str, given))} is {tuple(shape)} per sample in Keras's "
                         f"layout (the generated model takes input {layer.name!r} {layout}), but the model's "
                         f"input is (None, {', '.join('None' if s is None else str(s) for s in saved)}); "
                         "give the shape in the generated model's layout")
