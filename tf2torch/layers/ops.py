"""TF operations recorded as layers: ``x + 1.0``, ``a / b``, ``keras.ops.sigmoid(x)`` in a functional
model are saved as op "layers" with no weights — Keras 3 names them by module
(``keras.src.ops.numpy>Add``, ``keras.src.ops.nn>Sigmoid``), Keras 2 as ``TFOpLambda`` layers whose
config names a TF function (``"function": "math.multiply"``). That name is looked up in the tables below,
never in TensorFlow: an unknown name is refused, nothing is executed.

Only elementwise ops are converted: their result does not depend on the layout, so they take their
inputs as they come (two tensors are brought to the first one's layout). Constant operands are
numbers only; anything else (lists, arrays, keyword operands) is refused with the layer's name.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from ..codegen import nodes as n
from ..readers.keras_calls import ARGS_KWARG
from ..spec import TensorRef
from .base import Converted, Ctx, Module, Op, TensorInfo
from .common import apply_module, torch_axis
from .registry import converter

NUMPY, NN = "keras.src.ops.numpy>", "keras.src.ops.nn>"


def _number(ctx: Ctx, value: Any) -> int | float:
    if isinstance(value, dict) and value.get("class_name") == "__tensor__" and isinstance(value.get("config"), dict) \
            and value["config"].get("dtype") in ("float32", "float64", "int32", "int64"):
        value = value["config"].get("value")  # a scalar constant Keras 3 saved as a tensor (x * ops.sqrt(d))
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        shown = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
        raise ctx.unsupported(f"constant operand {shown}: only numbers are supported",
                              "make the constant a scalar, or a layer's weight")
    return value


def operands(ctx: Ctx) -> list[n.Expr]:
    """The call's positional operands as nodes: the hole ``arg(i)`` for input ``i``, literals for numbers.

    A call whose positional arguments hold constants keeps them (tensors as ``TensorRef``) under
    ``ARGS_KWARG``; the tensors among them are ``ctx.inputs`` in the same order.
    """
    kwargs = {k: v for k, v in ctx.call.kwargs.items() if k != ARGS_KWARG}
    if kwargs:
        raise ctx.unsupported(f"keyword operands {sorted(kwargs)}: only positional operands are supported")
    args = ctx.call.kwargs.get(ARGS_KWARG)
    if args is None:
        return [n.arg(i) for i in range(len(ctx.inputs))]
    out, k = [], 0
    for arg in args:
        if isinstance(arg, TensorRef):
            out.append(n.arg(k))
            k += 1
        else:
            out.append(n.lit(_number(ctx, arg)))
    return out


def broadcast(ctx: Ctx) -> TensorInfo:
    """The output info: the input with the most known dims (same-rank size-1 dims broadcast)."""
    if len({i.rank for i in ctx.inputs}) > 1:
        # Keras right-aligns (…, C) against (N, H, W, C); in a channels-first layout that would pair
        # C with W. Refuse rather than compute something else.
        raise ctx.unsupported(f"operands of different ranks {[i.rank for i in ctx.inputs]}",
                              "reshape the smaller operand to the same rank before the op")
    return max(ctx.inputs, key=lambda i: (i.rank, sum(s is not None and s != 1 for s in i.shape)))


Binary = Callable[[Any, Any], n.Expr]  # two operands (nodes or numbers) -> the op's node
_BINARY: dict[str, Binary] = {
    "Add": operator.add, "Subtract": operator.sub, "Multiply": operator.mul, "TrueDivide": operator.truediv,
    "Divide": operator.truediv, "Power": operator.pow, "Maximum": lambda a, b: n.call("torch.maximum", a, b),
    "Minimum": lambda a, b: n.call("torch.minimum", a, b), "NotEqual": lambda a, b: n.compare(a, "!=", b),
    "Equal": lambda a, b: n.compare(a, "==", b)}


# Ops no Keras layer shares a name with: a Keras 3 .h5 (which drops an op's module) saves them under the
# bare name; an op's config never has "trainable", a layer's always does (_op_only checks it).
_H5_OPS = ("NotEqual", "Equal")


def _op_only(ctx: Ctx) -> None:
    if "trainable" in ctx.config:
        raise ctx.unsupported(f"a layer named like the op {ctx.layer.class_name!r} (it has a layer's config): "
                              "another class of that name", "save as .keras, or port the layer by hand")


@converter(*(NUMPY + name for name in _BINARY), *_H5_OPS, wants="same")
def binary(ctx: Ctx) -> Converted:
    if ">" not in ctx.layer.class_name:
        _op_only(ctx)
    ops = operands(ctx)
    if len(ops) != 2 or not ctx.inputs:
        raise ctx.unsupported(f"expected 2 operands with at least one tensor, found {len(ops)}")
    name = ctx.layer.class_name.split(">", 1)[-1]
    if name in ("Maximum", "Minimum") and len(ctx.inputs) == 1:
        bound = "min" if name == "Maximum" else "max"
        constant = ops[1] if ops[0] == n.arg(0) else ops[0]
        return Converted((Op(n.arg(0).m("clamp", **{bound: constant})),), (ctx.x,))
    return Converted((Op(_BINARY[name](*ops)),), (broadcast(ctx),))


_UNARY = {
    NUMPY + "Negative": -n.X, NUMPY + "Absolute": n.call("torch.abs", n.X), NUMPY + "Abs": n.call("torch.abs", n.X),
    NUMPY + "Exp": n.call("torch.exp", n.X), NUMPY + "Sqrt": n.call("torch.sqrt", n.X),
    NUMPY + "Square": n.call("torch.square", n.X), NUMPY + "Tanh": n.call("torch.tanh", n.X),
}
_UNARY_MODULES = {
    NN + "Relu": "nn.ReLU", NN + "Relu6": "nn.ReLU6", NN + "Sigmoid": "nn.Sigmoid", NN + "Silu": "nn.SiLU",
    NN + "HardSilu": "nn.Hardswish", NN + "HardSigmoid": "nn.Hardsigmoid",  # Keras 3: relu6(x + 3) / 6
}


@converter(*_UNARY, *_UNARY_MODULES, wants="any")
def unary(ctx: Ctx) -> Converted:
    if len(ctx.inputs) != 1 or len(operands(ctx)) != 1:
        raise ctx.unsupported("expected exactly one tensor operand")
    name = ctx.layer.class_name
    if name in _UNARY:
        return Converted((Op(_UNARY[name]),), (ctx.x,))
    return Converted((apply_module(Module(_UNARY_MODULES[name])),), (ctx.x,))


@converter(NN + "Gelu", wants="any")
def gelu(ctx: Ctx) -> Converted:
    # keras.ops.gelu defaults to approximate=True (tanh form), unlike Activation("gelu") (exact, erf).
    approximate = ctx.config.get("approximate", True)
    if not isinstance(approximate, bool):
        raise ctx.unsupported(f"config 'approximate' should be true or false, found {approximate!r}")
    kwargs = (("approximate", "tanh"),) if approximate else ()
    return Converted((apply_module(Module("nn.GELU", (), kwargs)),), (ctx.x,))


@converter(NN + "Softmax", NN + "LogSoftmax", wants="any")
def softmax(ctx: Ctx) -> Converted:
    axis = ctx.config.get("axis", -1)
    if isinstance(axis, bool) or not isinstance(axis, int):
        raise ctx.unsupported(f"softmax over axis {axis!r}; only a single axis is supported")
    cls = "nn.Softmax" if ctx.layer.class_name.endswith(">Softmax") else "nn.LogSoftmax"
    return Converted((apply_module(Module(cls, (), (("dim", torch_axis(axis, ctx.x)),))),), (ctx.x,))


# Keras 2 TFOpLambda: the TF symbol (config "function") -> an elementwise op over x and y.
_TF_BINARY: dict[str, Binary] = {
    "__operators__.add": operator.add, "math.add": operator.add, "math.subtract": operator.sub,
    "__operators__.sub": operator.sub, "math.multiply": operator.mul, "math.truediv": operator.truediv,
    "math.divide": operator.truediv, "math.pow": operator.pow,
    "math.maximum": _BINARY["Maximum"], "math.minimum": _BINARY["Minimum"],
}
_X0 = n.arg(0)
_TF_UNARY = {
    "nn.relu": n.call("torch.relu", _X0), "nn.relu6": n.call("torch.clamp", _X0, 0.0, 6.0),
    "math.sigmoid": n.call("torch.sigmoid", _X0), "nn.silu": n.call("F.silu", _X0), "nn.swish": n.call("F.silu", _X0),
    "math.tanh": n.call("torch.tanh", _X0), "math.exp": n.call("torch.exp", _X0),
    "math.sqrt": n.call("torch.sqrt", _X0), "math.square": n.call("torch.square", _X0),
    "math.negative": -_X0, "math.abs": n.call("torch.abs", _X0),
}


@converter("TFOpLambda", wants="same")
def tf_op_lambda(ctx: Ctx) -> Converted:
    function = ctx.config.get("function")
    if function in _TF_UNARY and len(ctx.inputs) == 1:
        return Converted((Op(_TF_UNARY[function]),), (ctx.x,))
    if function not in _TF_BINARY:
        raise ctx.unsupported(f"TF function {function!r} recorded by Keras 2 is not supported "
                              f"(supported: {', '.join(sorted([*_TF_BINARY, *_TF_UNARY]))})")
    y = ctx.call.kwargs.get("y")  # Keras 2 records the second operand as the keyword "y"
    if len(ctx.inputs) == 2:  # a tensor y: the reader lists keyword tensors after the positional one
        return Converted((Op(_TF_BINARY[function](n.arg(0), n.arg(1))),), (broadcast(ctx),))
    if len(ctx.inputs) != 1:
        raise ctx.unsupported(f"expected one or two tensor operands, found {len(ctx.inputs)}")
    constant = _number(ctx, y)
    if function in ("math.maximum", "math.minimum"):  # torch.maximum takes tensors only
        bound = "min" if function == "math.maximum" else "max"
        return Converted((Op(_X0.m("clamp", **{bound: constant})),), (ctx.x,))
    return Converted((Op(_TF_BINARY[function](_X0, constant)),), (ctx.x,))


@converter(NUMPY + "Any", NUMPY + "All", "Any", "All", wants="keras")
def any_all(ctx: Ctx) -> Converted:
    """keras.ops.any / all over an axis (what Keras 3 records for Masking's mask)."""
    if ">" not in ctx.layer.class_name:
        _op_only(ctx)
    axis, keep = ctx.config.get("axis"), bool(ctx.config.get("keepdims", False))
    if isinstance(axis, bool) or not isinstance(axis, int) or axis % ctx.x.rank == 0:
        raise ctx.unsupported(f"config 'axis' should be one non-batch axis, found {axis!r}")
    a = axis % ctx.x.rank
    fn = "any" if ctx.layer.class_name.endswith("Any") else "all"
    shape = tuple(1 if i + 1 == a else s for i, s in enumerate(ctx.x.shape)) if keep else \
        tuple(s for i, s in enumerate(ctx.x.shape) if i + 1 != a)
    return Converted((Op(n.X.m(fn, dim=a, keepdim=keep)),), (TensorInfo(shape, "keras"),))
