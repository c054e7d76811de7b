"""Keras layer converters. Each module registers its converters on import (explicit list, no ``*``); keras-hub's
are in their families' folders, found by walking ``tf2torch/families/keras_hub`` (``load("converters")``)."""

from ..families.keras_hub import load as _load_keras_hub  # noqa: E402  (after the layers they import)
from . import (  # noqa: F401  (registration)
    activation,
    applications,
    attention,
    attention_dot,
    attention_gqa,
    bidirectional,
    conv,
    conv_lstm,
    dense,
    einsum,
    image,
    lite_int,
    lite_int16,
    lite_int_spatial,
    lite_lstm,
    lite_mediapipe,
    lite_quant,
    merge,
    misc,
    norm,
    ops,
    ops_array,
    ops_reduce,
    ops_split,
    pool,
    preprocessing,
    preprocessing_image,
    preprocessing_lookup,
    reshape,
    rnn,
    rnn_cell,
    tf_array,
    wrappers,
)

_load_keras_hub("converters")
