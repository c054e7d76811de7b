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

import importlib
import pkgutil
from functools import cache

KINDS = ("builder", "converters")


@cache
def load(kind: str) -> tuple[str, ...]:
    """Import every ``<family>/<kind>*.py`` module of this package, in name order; their decorators register
    them. Returns the module names (cached: each kind is walked once per process)."""
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, found {kind!r}")
    if kind == "converters":  # converters import tf2torch.layers, whose __init__ loads them: let it go first
        importlib.import_module("tf2torch.layers")
    loaded = []
    for family in sorted(pkgutil.iter_modules(__path__, __name__ + "."), key=lambda m: m.name):
        if not family.ispkg:
            continue
        package = importlib.import_module(family.name)
        for module in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
            if module.name.startswith(kind):
                loaded.append(importlib.import_module(f"{family.name}.{module.name}").__name__)
    return tuple(loaded)
