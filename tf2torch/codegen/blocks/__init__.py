"""Repeated blocks of a Keras graph as one generated class per kind: found by names (``find``), merged
by code (``template``)."""
