"""One converter per Keras layer class, registered by decorator.

    @converter("Conv2D", wants="cf")
    def conv2d(ctx: Ctx) -> Converted: ...

A second registration of a class fails at import; a class with no converter (or a ``Lambda``, whose code
is never run) fails with an error naming the layer and its class. Converter modules are imported
explicitly in ``convert/__init__.py`` (no ``import *``).
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import UnsupportedError
from ..spec import LayerSpec
from .base import Converted, Ctx, Registration

_REGISTRY: dict[str, Registration] = {}

# Layers that carry code instead of configuration: tf2torch never executes input files. (Keras 2's
# TFOpLambda only *names* a TF function; layers/ops.py converts a fixed list of those names.)
CODE_LAYERS = {"Lambda", "SlicingOpLambda"}


def converter(*class_names: str, wants: str = "any", accepts_flat: bool = False,
              weights: tuple[str, ...] = ()) -> Callable[[Callable[[Ctx], Converted]], Callable[[Ctx], Converted]]:
    if wants not in ("cf", "keras", "any", "same"):
        raise ValueError(f"wants={wants!r}")

    def register(fn: Callable[[Ctx], Converted]) -> Callable[[Ctx], Converted]:
        for name in class_names:
            if name in _REGISTRY:
                raise RuntimeError(f"two converters for Keras class {name!r}: "
                                   f"{_REGISTRY[name].fn.__module__} and {fn.__module__}")
            _REGISTRY[name] = Registration(fn, wants, accepts_flat, weights)
        return fn

    return register


def lookup(layer: LayerSpec) -> Registration:
    if layer.class_name in CODE_LAYERS:
        raise UnsupportedError(
            f"layer {layer.name!r} is a {layer.class_name}: it holds Python code, which tf2torch never runs; "
            "replace it with a built-in layer before saving, or port that part by hand")
    reg = _REGISTRY.get(layer.class_name)
    if reg is None:
        raise UnsupportedError(
            f"layer {layer.name!r}: Keras class {layer.class_name!r} has no converter "
            f"(supported: {len(_REGISTRY)} classes, see `tf2torch layers`)")
    return reg


def supported() -> list[str]:
    return sorted(_REGISTRY)
