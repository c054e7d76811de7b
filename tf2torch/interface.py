"""The interface-layout rule: which inputs and outputs of a generated model are channels-first, and
how a shape or array moves between the generated model's layout and TensorFlow's.

One rule, used wherever the two sides of a conversion meet: the graph converter (layers/graph.py),
the report's interface (pipelines/keras.py), the generated docstring (codegen/model_file.py), the
``--input-shape`` translation (pipelines/tf_graph.py) and verify's inputs and outputs (compare/). A
second copy of it with another rank threshold is how a rank-3 input came to be transposed for an LSTM
that takes it as it is: keep the decisions here.

The rule:

* rank <= 2 tensors (batch, features) have one layout only: "keras".
* with ``--channels-last`` everything is in Keras layout.
* an input of rank >= 4 (an image, a volume) is channels-first; a rank-3 input is channels-first only
  when its first consumer wants channels-first (Conv1D, pooling), else Keras layout (LSTM, attention).
* an output of rank >= 4 is channels-first; a rank-3 output stays as the model computed it (a Conv1D
  ends channels-first, an LSTM's sequences in Keras layout).

Pure Python on purpose: ``import tf2torch`` and the everyday commands must load neither numpy nor torch
(tests/test_lazy_imports.py); arrays move with ``array.transpose(to_tf_axes(...))``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

CHANNELS_FIRST, KERAS = "channels_first", "keras"  # as report.json's interface and verify name them

T = TypeVar("T")


def input_channels_first(rank: int, first_consumer_wants: str | None, channels_last: bool) -> bool:
    """Whether a model input (``rank`` with the batch axis) is channels-first in the generated model.

    ``first_consumer_wants``: the layout the first layer reading the input wants ("cf", "keras", "any",
    "same"), or None when unknown (a user's own PyTorch model): then only images are channels-first.
    """
    if channels_last or rank < 3:
        return False
    return rank >= 4 or first_consumer_wants == "cf"


def output_channels_first(rank: int, layout: str, channels_last: bool) -> bool:
    """Whether a model output (``rank`` with the batch axis, computed in TensorInfo ``layout``: "cf",
    "keras" or "cf_flat") is returned channels-first by the generated model.

    A rank-3 output is returned in the layout it was computed in: moving it would cost a copy and
    make the output of a sequence model differ from its Keras twin for no reason.
    """
    if channels_last or rank < 3 or layout == "cf_flat":
        return False
    return rank >= 4 or layout == "cf"


def layout_name(channels_first: bool) -> str:
    return CHANNELS_FIRST if channels_first else KERAS


def interface_layout(info_layout: str, rank: int) -> str:
    """The interface layout of a tensor the converter holds in TensorInfo ``info_layout`` (a model
    input, or an output after the converter moved it as ``output_channels_first`` says)."""
    return layout_name(info_layout == "cf" and rank >= 3)


def moves_axes(layout: str, rank: int) -> bool:
    """Whether a tensor of ``rank`` in interface ``layout`` has its axes ordered differently in TF."""
    return layout == CHANNELS_FIRST and rank >= 3


def to_tf_axes(rank: int, layout: str) -> tuple[int, ...]:
    """The permutation taking the generated model's axes to TF's: (N, C, *spatial) -> (N, *spatial, C)."""
    if not moves_axes(layout, rank):
        return tuple(range(rank))
    return (0, *range(2, rank), 1)


def to_torch_axes(rank: int, layout: str) -> tuple[int, ...]:
    """The inverse of ``to_tf_axes``: (N, *spatial, C) -> (N, C, *spatial)."""
    if not moves_axes(layout, rank):
        return tuple(range(rank))
    return (0, rank - 1, *range(1, rank - 1))


def to_tf_shape(shape: Sequence[T], layout: str) -> tuple[T, ...]:
    """A shape with the batch axis, from the generated model's layout to TF's."""
    return tuple(shape[i] for i in to_tf_axes(len(shape), layout))


def to_torch_shape(shape: Sequence[T], layout: str) -> tuple[T, ...]:
    """A shape with the batch axis, from TF's layout to the generated model's."""
    return tuple(shape[i] for i in to_torch_axes(len(shape), layout))


def keras_shape(torch_shape: Sequence[T], channels_first: bool) -> tuple[T, ...]:
    """``--input-shape`` (batch first, in the generated model's layout) as a Keras shape without batch."""
    return to_tf_shape(torch_shape, layout_name(channels_first))[1:]


def torch_shape(keras: Sequence[T], layout: str) -> tuple[T | None, ...]:
    """A Keras shape without batch as the generated model's shape without batch (for its docstring)."""
    return to_torch_shape((None, *keras), layout)[1:]
