"""keras-hub model families, one folder each (see docs/contributing.md, "A keras-hub family"):

    <family>/builder*.py     @builds("XBackbone"): the saved constructor arguments -> the Functional graph
    <family>/converters*.py  @converter("keras_hub>XLayer"): keras-hub's layers -> torch modules
    <family>/runtime*.py     the helper modules generated files carry (runtime library; never imported here)

``common/`` holds what the families share: the ``Args``/``builds`` registry and ``expand`` (``args.py``),
the Functional graph writer, Keras layer configs, shared converters and their runtime helpers.

Families are found by walking this package, never from a list: ``load("builder")`` imports every
``builder*`` module (the builders register themselves), ``load("converters")`` every ``converters*`` one.
``runtime*`` modules are skipped: they import torch, and reading a keras-hub file must not.
"""

from __future__ import annotations

from .discover import KINDS, load

__all__ = ["KINDS", "load"]
