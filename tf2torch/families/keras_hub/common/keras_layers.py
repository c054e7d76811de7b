"""Keras layer calls with their configs as Keras 3 saves them (``kernel_size`` as a list, ``axis`` as
Keras normalises it), for builders of image models. Only the keys tf2torch's converters read are
written; the structural test checks each against the config keras-hub's own layer saves."""

from __future__ import annotations

from typing import Any

from ....errors import UnsupportedError
from .args import Args
from .functional import FunctionalGraph, Ref

CHANNELS_LAST = "channels_last"  # keras-hub builds image models in keras.config.image_data_format(): the default
# keras-hub's approximate GELU as a saved activation (BERT-style encoders and decoders, their task heads)
GELU_TANH = {"module": "builtins", "class_name": "function", "config": "keras_hub>gelu_approximate",
             "registered_name": "function"}


def _pair(v: int | tuple[int, int]) -> list[int]:
    return [v, v] if isinstance(v, int) else list(v)


def conv2d(g: FunctionalGraph, name: str, x: Ref, filters: int, kernel: int | tuple[int, int], strides: int = 1,
           padding: str = "valid", use_bias: bool = True, activation: str = "linear", dilation: int = 1,
           groups: int = 1) -> Ref:
    return g.layer("Conv2D", name, {
        "filters": filters, "kernel_size": _pair(kernel), "strides": _pair(strides), "padding": padding,
        "data_format": CHANNELS_LAST, "dilation_rate": _pair(dilation), "groups": groups,
        "activation": activation, "use_bias": use_bias}, x)


def batch_norm(g: FunctionalGraph, name: str, x: Ref, epsilon: float, momentum: float = 0.99) -> Ref:
    return g.layer("BatchNormalization", name, {"axis": -1, "momentum": momentum, "epsilon": epsilon,
                                                "center": True, "scale": True}, x)


def activation(g: FunctionalGraph, name: str, x: Ref, fn: Any = "relu") -> Ref:
    return g.layer("Activation", name, {"activation": fn}, x)


def pool2d(g: FunctionalGraph, kind: str, name: str, x: Ref, size: int, strides: int | None = None,
           padding: str = "valid") -> Ref:
    return g.layer(f"{kind}Pooling2D", name, {"pool_size": _pair(size), "padding": padding,
                                               "strides": _pair(size if strides is None else strides),
                                               "data_format": CHANNELS_LAST}, x)


def zero_pad2d(g: FunctionalGraph, name: str, x: Ref, pad: int) -> Ref:
    return g.layer("ZeroPadding2D", name, {"padding": [[pad, pad], [pad, pad]], "data_format": CHANNELS_LAST}, x)


def image_input(g: FunctionalGraph, name: str, shape: Any) -> Ref:
    if not isinstance(shape, list) or len(shape) != 3 or \
            any(s is not None and (isinstance(s, bool) or not isinstance(s, int) or s < 1) for s in shape):
        raise ValueError(f"image_shape should be [height, width, channels], found {shape!r}")
    return g.input(name, tuple(shape), "float32")


def positive_ints(args: Args, key: str) -> list[int]:
    value = args.raw(key)
    if not isinstance(value, list) or not value or any(isinstance(v, bool) or not isinstance(v, int) or v < 1
                                                        for v in value):
        raise args.fail(key, "a list of positive integers")
    return value


def channels_last_only(args: Args) -> None:
    """An image backbone saved with data_format channels_first: refused (its builders write channels-last)."""
    if args.str("data_format", CHANNELS_LAST) != CHANNELS_LAST:
        raise UnsupportedError(f"{args.where}: {args.class_name} saved with data_format channels_first; tf2torch "
                               "converts the channels-last form only (rebuild it under the default image data format)")


def image(args: Args, g: FunctionalGraph, name: str = "input_layer") -> Ref:
    shape = args.raw("image_shape", [None, None, 3])
    try:
        return image_input(g, name, shape)
    except ValueError:
        raise args.fail("image_shape", "[height, width, channels]") from None
