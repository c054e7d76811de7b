"""Keras layer converters. Each module registers its converters on import (explicit list, no ``*``)."""

from . import activation, applications, attention, conv, dense, merge, misc, norm, ops, pool, reshape, rnn  # noqa: F401  (registration)
