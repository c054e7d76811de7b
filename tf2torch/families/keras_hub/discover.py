"""Finding a family's modules: every ``<family>/<kind>*.py`` of ``families/keras_hub`` is imported by name, so
adding a family is adding a folder (no list to edit). Imports nothing of tf2torch itself: the registries
(``common/args.py`` for builders, ``layers/registry.py`` for converters) call it when first asked."""

from __future__ import annotations

import importlib
import pkgutil
from functools import cache
from pathlib import Path

_FOLDER = str(Path(__file__).parent)  # tf2torch/families/keras_hub
_PACKAGE = __name__.rpartition(".")[0]

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
    for family in sorted(pkgutil.iter_modules([_FOLDER], _PACKAGE + "."), key=lambda m: m.name):
        if not family.ispkg:
            continue
        package = importlib.import_module(family.name)
        for module in sorted(pkgutil.iter_modules(package.__path__), key=lambda m: m.name):
            if module.name.startswith(kind):
                loaded.append(importlib.import_module(f"{family.name}.{module.name}").__name__)
    return tuple(loaded)
