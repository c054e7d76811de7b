"""Keras layer converters. Each module registers its converters on import (explicit list, no ``*``)."""

from . import (  # noqa: F401  (registration)
    activation,
    applications,
    attention,
    attention_dot,
    attention_gqa,
    conv,
    dense,
    einsum,
    image,
    keras_hub,
    merge,
    misc,
    norm,
    ops,
    ops_array,
    pool,
    reshape,
    rnn,
    tf_array,
    wrappers,
)
