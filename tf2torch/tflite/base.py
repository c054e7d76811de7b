"""What a TFLite-operator converter sees: ``LiteCtx``, and the registry (``@lite_op``).

A TFLite operator is lowered the way a TF op is (``tfgraph/``), onto the same builder and the same
values (``Tensor``, ``Const``, ``ShapeVec``): most converters translate the operator into the TF op it
came from (``ctx.tf("Conv2D", ...)``, with the kernel read into TF's layout through the layout table)
and let that op's converter build the Keras-like layer, so SAME padding, the layouts and the accounting
are the TF-graph path's. What TFLite adds on top (a fused bias, a fused activation, a fixed output
shape) is handled here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..errors import UnsupportedError
from ..map.layouts import Layout
from ..readers.tflite.model import LiteOperator, LiteTensor
from ..spec import GraphNode, Variable
from ..tfgraph.base import Const, Missing, NodeCtx, Tensor, Value, lookup

if TYPE_CHECKING:
    import numpy as np

# A fused activation (the options' fused_activation_function) -> the Keras activation that computes it.
FUSED = {"NONE": None, "RELU": "relu", "RELU6": "relu6", "RELU_N1_TO_1": "hard_tanh", "TANH": "tanh"}


class LiteCtx:
    """One TFLite operator's lowering: its options, its input values, its output tensors' shapes."""

    def __init__(self, op: LiteOperator, tensors: Sequence[LiteTensor], inputs: Sequence[Value], builder: Any,
                 name: str, dequantize: bool = False) -> None:
        self.operator = op
        self.dequantize = dequantize  # --dequantize: quantized constants arrive as float32, activations are real
        self.tensors = tensors
        self.inputs = tuple(inputs)
        self.name = name  # its first output's readable name: what its layers and TF nodes are called
        self._builder = builder

    @property
    def op(self) -> str:
        return self.operator.op

    def option(self, key: str, default: Any = None) -> Any:
        return self.operator.options.get(key, default)

    def where(self) -> str:
        return f"operator {self.operator.index} ({self.operator.kind}, output {self.name!r})"

    def unsupported(self, what: str, fix: str = "") -> UnsupportedError:
        return UnsupportedError(f"{self.where()}: {what}" + (f"; {fix}" if fix else ""))

    def value(self, i: int) -> Value:
        return self.inputs[i] if i < len(self.inputs) else Missing("the operator has no such input")

    def tensor(self, i: int) -> Tensor:
        value = self.value(i)
        if not isinstance(value, Tensor):
            raise self.unsupported(f"input {i} should be a run-time tensor, found "
                                   f"{'a constant' if isinstance(value, Const) else getattr(value, 'why', 'none')}")
        return value

    def const(self, i: int, what: str) -> Const:
        value = self.value(i)
        if not isinstance(value, Const):
            raise self.unsupported(f"its {what} (input {i}) should be a constant",
                                   "tf2torch converts models whose weights and shapes are fixed")
        return value

    def optional(self, i: int) -> Const | None:
        """An optional constant input (a bias): None when omitted (index -1)."""
        if i >= len(self.operator.inputs) or self.operator.inputs[i] < 0:
            return None
        return self.const(i, "bias")

    def input_tensor(self, i: int) -> LiteTensor:
        """The TFLite tensor behind input ``i`` (its dtype and quantization)."""
        return self.tensors[self.operator.inputs[i]]

    def out_dims(self, k: int = 0) -> tuple[int | None, ...]:
        """Output ``k``'s shape as TFLite declares it, None where dynamic (a batch of -1)."""
        return self.tensors[self.operator.outputs[k]].dims

    def tf(self, op: str, inputs: Sequence[Value], attrs: dict[str, Any] | None = None) -> tuple[Value, ...]:
        """Lower the TF op ``op`` this operator stands for, with its converter from ``tfgraph/``."""
        converter = lookup(op)
        assert converter is not None, op  # every op named here has a converter (tests/tflite cover them)
        node = GraphNode(self.name, op, tuple(f"{self.name}:in{i}" for i in range(len(inputs))), attrs or {})
        return tuple(converter(NodeCtx(node, inputs, self._builder)))

    def layer(self, class_name: str, config: dict[str, Any], inputs: Sequence[Tensor], shape: tuple, *,
              weights: Sequence[tuple[str, Const]] = (), name: str = "") -> Tensor:
        """Add a layer of a Keras class directly (an operator no TF op stands for)."""
        node = GraphNode(self.name, self.op.lower(), ())
        return self._builder.add(NodeCtx(node, (), self._builder), class_name, config, inputs, shape, weights, {},
                                 name)

    def bias(self, x: Tensor, i: int) -> Tensor:
        """Input ``i`` (optional) as the bias of the conv / Dense layer that made ``x``."""
        bias = self.optional(i)
        if bias is None:
            return x
        node = GraphNode(self.name, "BiasAdd", ())
        if not NodeCtx(node, (), self._builder).fuse_bias(x, bias, own=True):
            raise self.unsupported(f"a bias of shape {list(bias.shape)} for {x.shape[-1]} output channels")
        return x

    def activation(self, x: Tensor) -> Tensor:
        """The operator's fused activation applied to ``x`` (its own layer, named after the operator)."""
        fused = self.option("fused_activation_function", "NONE")
        if fused not in FUSED:
            raise self.unsupported(f"fused activation {fused}")
        act = FUSED[fused]
        if act is None:
            return x
        return self.layer("Activation", {"activation": act}, [x], x.shape, name=f"{self.name}/{act}")

    def folded(self, array: np.ndarray) -> Const:
        """A constant made here (an axis TFLite keeps in its options, where TF's op takes an input)."""
        from .. import dtypes

        var = Variable(name=self.name, dtype=dtypes.from_numpy(array.dtype, self.where()), shape=array.shape,
                       nbytes=array.nbytes, loader=lambda: array)
        return Const(var)

    def reshaped(self, value: Const, shape: tuple[int, ...]) -> Const:
        """A weight seen with another shape of the same size (same variable, same values in order)."""
        var = value.var
        return Const(dataclasses.replace(var, shape=shape, loader=lambda: var.read().reshape(shape)),
                     weight=value.weight)

    def relayout(self, value: Const, layout: Layout) -> Const:
        """A weight read into another layout (the layout table's ``tflite_*`` entries): same variable,
        same name, so the report still accounts for it as itself. A view where the steps allow: the TF
        layout's own change to PyTorch's follows, and the two compose into one copy (an OHWI kernel is
        already OIHW for a 1x1 convolution), made by the writer band by band."""
        var = value.var
        shape = layout.out_shape(var.shape)
        new = dataclasses.replace(var, shape=shape, loader=lambda: layout.apply(var.read(), view=True))
        return Const(new, weight=value.weight)


Converter = Callable[[LiteCtx], tuple[Value, ...]]
_REGISTRY: dict[str, Converter] = {}


def lite_op(*ops: str) -> Callable[[Converter], Converter]:
    """Register a converter for TFLite builtin operators (a second registration of one fails at import)."""

    def register(fn: Converter) -> Converter:
        for op in ops:
            if op in _REGISTRY:
                raise RuntimeError(f"two converters for TFLite op {op!r}: {_REGISTRY[op].__module__} and "
                                   f"{fn.__module__}")
            _REGISTRY[op] = fn
        return fn

    return register


def lookup_lite(op: str) -> Converter | None:
    return _REGISTRY.get(op)


_INT_REGISTRY: dict[tuple[str, str], Converter] = {}


def int_op(*ops: str, dtype: str = "int8") -> Callable[[Converter], Converter]:
    """Register the full-integer converter of TFLite builtin operators on ``dtype`` activations (int8; int16
    for 16x8 models, uint8)."""

    def register(fn: Converter) -> Converter:
        for op in ops:
            if (dtype, op) in _INT_REGISTRY:
                raise RuntimeError(f"two {dtype} integer converters for TFLite op {op!r}")
            _INT_REGISTRY[dtype, op] = fn
        return fn

    return register


def lookup_int(op: str, dtype: str = "int8") -> Converter | None:
    return _INT_REGISTRY.get((dtype, op))


def supported_int(dtype: str = "int8") -> list[str]:
    return sorted(op for kind, op in _INT_REGISTRY if kind == dtype)


def supported() -> list[str]:
    return sorted(_REGISTRY)
