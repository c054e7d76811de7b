"""Small helpers every converter uses: typed config access, weight binding, axes, activations."""

from __future__ import annotations

from typing import Any

from ..codegen import nodes as n
from ..map import layouts
from ..map.layouts import Layout
from ..spec import Variable
from .base import Ctx, Module, Op, Param, TensorInfo


def cfg_int(ctx: Ctx, key: str, default: int | None = None) -> int:
    value = ctx.config.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ctx.unsupported(f"config {key!r} should be an integer, found {value!r}")
    return value


def cfg_float(ctx: Ctx, key: str, default: float | None = None) -> float:
    value = ctx.config.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ctx.unsupported(f"config {key!r} should be a number, found {value!r}")
    return float(value)


def cfg_bool(ctx: Ctx, key: str, default: bool) -> bool:
    value = ctx.config.get(key, default)
    if not isinstance(value, bool):
        raise ctx.unsupported(f"config {key!r} should be true or false, found {value!r}")
    return value


def cfg_str(ctx: Ctx, key: str, default: str | None = None, choices: tuple[str, ...] = ()) -> str:
    value = ctx.config.get(key, default)
    if not isinstance(value, str) or (choices and value not in choices):
        expected = f"one of {', '.join(map(repr, choices))}" if choices else "a string"
        raise ctx.unsupported(f"config {key!r} should be {expected}, found {value!r}")
    return value


def cfg_ints(ctx: Ctx, key: str, n: int, default: Any = None) -> tuple[int, ...]:
    """An int or a list of ints, broadcast to ``n`` entries (kernel_size, strides, dilation_rate…)."""
    value = ctx.config.get(key, default)
    items = list(value) if isinstance(value, (list, tuple)) else [value] * n
    if len(items) != n or any(isinstance(v, bool) or not isinstance(v, int) for v in items):
        raise ctx.unsupported(f"config {key!r} should be {n} integer(s), found {value!r}")
    return tuple(items)


def channels_last(ctx: Ctx) -> None:
    """Refuse Keras ``data_format="channels_first"``: tf2torch converts channels-last models."""
    fmt = ctx.config.get("data_format") or "channels_last"
    if fmt != "channels_last":
        raise ctx.unsupported(f"data_format {fmt!r} is not supported", "save the model with channels_last")


def weight_path(var: Variable) -> list[str]:
    """A weight's name as its path segments: ``conv1/kernel:0`` -> ``["conv1", "kernel"]``.

    Only TF's output suffix (``:0``, at the very end) is dropped: a layer named after a TFLite model output
    keeps its colon (``StatefulPartitionedCall_1:4_int16/kernel``), and cutting at the first ``:`` left
    ``StatefulPartitionedCall_1`` as the leaf, so binding by Keras name failed.
    """
    name = var.tf_name or var.name
    head, colon, tail = name.rpartition(":")
    if colon and tail.isdigit() and "/" not in tail:
        name = head
    return name.split("/")


def _leaf(var: Variable) -> str:
    """``conv1/kernel:0`` -> ``kernel``; Keras 3 object paths name some weights ``_kernel``."""
    return weight_path(var)[-1].lstrip("_")


def bind(ctx: Ctx, names: list[str]) -> dict[str, Variable]:
    """The layer's saved weights by Keras name.

    Named weights (Keras 2 ``conv1/kernel:0``, checkpoint ``full_name``s) bind by name: exactly, or by
    the end of the Keras name (Keras 3 calls a DepthwiseConv2D's ``depthwise_kernel`` just ``kernel``).
    Numbered weights (Keras 3 ``vars/0``) bind by position: the order the layer created them in.
    """
    weights = ctx.layer.weights
    if len(weights) != len(names):
        found = ", ".join(w.tf_name or w.name for w in weights) or "none"
        raise ctx.unsupported(f"expected {len(names)} weights ({', '.join(names)}), found {len(weights)} ({found})",
                              "the file does not match its own config; re-save the model")
    leaves = [_leaf(w) for w in weights]
    bound: dict[str, Variable] = {}
    for name in names:
        hits = [w for w, leaf in zip(weights, leaves) if leaf == name] or \
               [w for w, leaf in zip(weights, leaves) if name.endswith("_" + leaf)]
        if len(hits) == 1 and all(hits[0] is not b for b in bound.values()):
            bound[name] = hits[0]
    if len(bound) == len(names):
        return bound
    if all(leaf.isdigit() for leaf in leaves):  # numbered (vars/0, vars/1, ...): creation order
        return dict(zip(names, weights, strict=True))
    found = ", ".join(w.tf_name or w.name for w in weights)
    raise ctx.unsupported(f"cannot tell which saved weight is which: expected {', '.join(names)}, found {found}",
                          "re-save the model with Keras, or report the file")


def param(suffix: str, name: str, var: Variable, kind: str | Layout = "identity") -> Param:
    layout = kind if isinstance(kind, Layout) else layouts.get(kind)
    return Param(suffix=suffix, name=name, layout=layout, var=var)


def torch_axis(axis: int, info: TensorInfo) -> int:
    """The torch dim of Keras axis ``axis`` (which counts the batch axis) for a tensor in ``info.layout``."""
    rank = info.rank
    a = axis % rank
    if info.layout != "cf" or rank < 3:
        return a
    if a == rank - 1:
        return 1
    return a if a == 0 else a + 1


def spatial(info: TensorInfo) -> tuple[int | None, ...]:
    return tuple(info.shape[:-1])


def apply_module(module: Module, suffix: str = "") -> Op:
    return Op(n.call(n.M, n.X), module, suffix)


def name_of(activation: Any) -> str | None:
    """Keras 2 writes activations as "relu"; Keras 3 may write {"class_name": "function", "config": "relu"}."""
    if activation is None or isinstance(activation, str):
        return activation
    if isinstance(activation, dict):
        inner = activation.get("config")
        if isinstance(inner, str):
            return inner
        if isinstance(inner, dict) and isinstance(inner.get("name"), str):
            return inner["name"]
    return "<unrecognised>"


def activation_ops(ctx: Ctx, activation: Any, info: TensorInfo, suffix: str = "act") -> tuple[Op, ...]:
    """The ops for a Keras activation (a layer's ``activation=`` or an ``Activation`` layer)."""
    name = name_of(activation)
    if name in (None, "linear"):
        return ()
    simple = {
        "relu": "nn.ReLU", "relu6": "nn.ReLU6", "sigmoid": "nn.Sigmoid", "tanh": "nn.Tanh",
        "swish": "nn.SiLU", "silu": "nn.SiLU", "elu": "nn.ELU", "selu": "nn.SELU", "softplus": "nn.Softplus",
        "softsign": "nn.Softsign", "mish": "nn.Mish", "hard_swish": "nn.Hardswish",
        # Keras 3 saves Activation("hard_swish") under its canonical name "hard_silu": x * relu6(x + 3) / 6.
        "hard_silu": "nn.Hardswish", "hard_tanh": "nn.Hardtanh", "log_sigmoid": "nn.LogSigmoid",
        "tanh_shrink": "nn.Tanhshrink", "celu": "nn.CELU",
    }
    if name in simple:
        return (apply_module(Module(simple[name]), suffix),)
    if name == "gelu":  # keras.activations.gelu defaults to the exact (erf) form
        return (apply_module(Module("nn.GELU"), suffix),)
    if name == "hard_sigmoid":
        if ctx.keras_version == 2:  # Keras 2: clip(0.2 x + 0.5, 0, 1); Keras 3: relu6(x + 3) / 6
            return (Op(n.call("torch.clamp", 0.2 * n.X + 0.5, 0.0, 1.0)),)
        return (apply_module(Module("nn.Hardsigmoid"), suffix),)
    if name == "leaky_relu":  # keras.activations.leaky_relu default negative_slope=0.2
        return (apply_module(Module("nn.LeakyReLU", (0.2,)), suffix),)
    if name in ("softmax", "log_softmax"):
        cls = "nn.Softmax" if name == "softmax" else "nn.LogSoftmax"
        return (apply_module(Module(cls, kwargs=(("dim", torch_axis(-1, info)),)), suffix),)
    if name in ("soft_shrink", "hard_shrink"):  # keras.activations.*_shrink default threshold=0.5
        cls = "nn.Softshrink" if name == "soft_shrink" else "nn.Hardshrink"
        return (apply_module(Module(cls, (0.5,)), suffix),)
    if name == "exponential":
        return (Op(n.call("torch.exp", n.X)),)
    raise ctx.unsupported(f"activation {activation!r} is not supported")
