"""Keras layer converters. Each module registers its converters on import (explicit list, no ``*``)."""

from . import activation, conv, dense, merge, misc, norm, pool, reshape  # noqa: F401  (registration)
