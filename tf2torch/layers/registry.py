"""One converter per Keras layer class, registered by decorator.

    @converter("Conv2D", wants="cf")
    def conv2d(ctx: Ctx) -> Converted: ...

A second registration of a class fails at import; a class with no converter fails with an error naming
the layer and its class, and why when it is one ``refused.py`` lists (a ``Lambda``, whose code is never run). Converter modules are imported
explicitly in ``convert/__init__.py`` (no ``import *``).
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import UnsupportedError
from ..spec import LayerSpec
from .base import Converted, Ctx, Registration
from .refused import reason

_REGISTRY: dict[str, Registration] = {}


def converter(*class_names: str, wants: str = "any", accepts_flat: bool = False,
              weights: tuple[str, ...] = ()) -> Callable[[Callable[[Ctx], Converted]], Callable[[Ctx], Converted]]:
    if wants not in ("cf", "keras", "any", "same"):
        raise ValueError(f"wants={wants!r}")

    def register(fn: Callable[[Ctx], Converted]) -> Callable[[Ctx], Converted]:
        for name in class_names:
            if reason(name) is not None:
                raise RuntimeError(f"Keras class {name!r} has a converter and is listed in refused.py")
            if name in _REGISTRY:
                raise RuntimeError(f"two converters for Keras class {name!r}: "
                                   f"{_REGISTRY[name].fn.__module__} and {fn.__module__}")
            _REGISTRY[name] = Registration(fn, wants, accepts_flat, weights)
        return fn

    return register


def lookup(layer: LayerSpec) -> Registration:
    refused = reason(layer.class_name)  # (Keras 2's TFOpLambda only *names* a TF function: layers/ops.py)
    if refused is not None:
        raise UnsupportedError(f"layer {layer.name!r} is a {layer.class_name}: {refused[0]}; {refused[1]}")
    reg = _REGISTRY.get(layer.class_name)
    if reg is None:
        raise UnsupportedError(
            f"layer {layer.name!r}: Keras class {layer.class_name!r} has no converter "
            f"(supported: {len(_REGISTRY)} classes, see `tf2torch layers`)")
    return reg


def supported() -> list[str]:
    return sorted(_REGISTRY)
