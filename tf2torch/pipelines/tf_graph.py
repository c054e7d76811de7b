"""A TF graph (frozen .pb / .pbtxt, a checkpoint's .meta, a SavedModel signature) → layers → a generated model.

``tfgraph.lower`` walks the graph from its inputs to its outputs and names layers after its scopes; the
lowered ``ModelSpec`` then goes through the Keras mode's ``generated``. A checkpoint's graph may hold no
model at all (only variables, or a data pipeline feeding them): then its weights are all there is, and the
state_dict mode writes them, with a note saying so.
"""

from __future__ import annotations

from collections.abc import Callable

from .. import interface
from ..errors import UnsupportedError, UsageError
from ..options import ConvertOptions
from ..spec import Format, ModelSpec
from . import Outcome, state_dict


def run(spec: ModelSpec, options: ConvertOptions) -> Outcome:
    """The generated model of ``spec``'s TF graph, or its bare state_dict when the graph holds no model."""
    # A frozen graph is nothing but its model, and naming outputs or a signature asks for one; a
    # checkpoint's .meta or a SavedModel without signatures may hold none (then its weights are what it has).
    required = spec.format is Format.GRAPH_DEF or bool(options.graph_outputs) or options.signature is not None
    # Without a Placeholder nothing feeds a model (what tfgraph.outputs.model_inputs would find after decoding
    # the whole graph and importing the lowering: most of a large checkpoint's fixed cost).
    lowered = _lower(spec, options, required=required) if required or spec.graph_placeholders else None
    if lowered is None:
        outcome = state_dict.run(spec, options)
        outcome.report.notes.append("the graph has no model (no signature, no Placeholder feeding a weight): "
                                    "wrote a bare state_dict")
        return outcome
    # Imported here: the Keras converters cost ~0.4 s to import, which a checkpoint whose graph holds no model
    # (a bare state_dict: most of a 1 GB conversion's fixed cost) never needs.
    from . import keras

    # --input-shape stays in the generated model's layout: the converter translates it as it lays out the input
    return keras.generated(lowered, options, input_shape=options.input_shape)


def _lower(spec: ModelSpec, options: ConvertOptions, *, required: bool) -> ModelSpec | None:
    """A TF graph lowered to layers, its one input sized by ``--input-shape`` (see ``sized``)."""
    from ..tfgraph.lower import lower

    def lowered_as(tf_shape: tuple[int | None, ...] | None) -> ModelSpec | None:
        return lower(spec, options.graph_outputs, required=required, ema=options.ema, signature=options.signature,
                     input_shape=tf_shape)

    return sized(lowered_as, options)


def sized(lowered_as: Callable[[tuple[int | None, ...] | None], ModelSpec | None],
          options: ConvertOptions) -> ModelSpec | None:
    """A graph lowered by ``lowered_as`` with ``--input-shape`` (the generated model's layout) as its one
    input's shape, in TF's layout (a TFLite model's lowering shares this).

    The lowering takes the shape in TF's layout, which for a rank-3 input depends on what its first
    consumer wants (tf2torch.interface), known only in the lowered graph: lowered with the guess from the
    rank, then again with the other layout when the lowered graph decides otherwise. The converter makes
    the same decision from the same graph and translates the shape the same way."""
    input_shape, channels_last = options.input_shape, options.channels_last
    if input_shape is None:
        return lowered_as(None)
    from ..layers.graph_inputs import first_consumer_wants

    rank = len(input_shape)
    guess = interface.input_channels_first(rank, None, channels_last)
    ambiguous = rank == 3 and not channels_last
    error: Exception | None = None
    for cf in (guess, not guess) if ambiguous else (guess,):
        tf_shape = (None, *interface.keras_shape(tuple(input_shape), cf))
        try:
            lowered = lowered_as(tf_shape)
        except UnsupportedError as exc:  # e.g. the shape read in this layout contradicts the placeholder's
            error = exc
            continue
        if lowered is None or lowered.graph is None or len(lowered.graph.inputs) != 1:
            return lowered  # no model, or not one input (the converter refuses --input-shape then)
        name = lowered.graph.inputs[0].layer
        if interface.input_channels_first(rank, first_consumer_wants(lowered.graph).get(name), channels_last) == cf:
            return lowered
    if error is not None:
        raise error
    raise UsageError(f"--input-shape {','.join(map(str, input_shape))}: the lowered graph's first layer takes its "
                     "input channels-first in one reading of the shape and in TF's layout in the other; pass "
                     "--channels-last and the shape in TF's layout")
