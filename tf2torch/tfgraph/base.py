"""What a TF-op converter sees and returns when a TF graph is lowered to layers.

A TF graph is lowered to the same ``GraphSpec`` a Keras file gives (``LayerSpec``s with Keras classes
and configs), so codegen, the SAME-padding plans, the layout table, the accounting and verify are the
ones the Keras path uses. A converter is a function ``(NodeCtx) -> tuple[Value, ...]`` (one value per
output of the TF node); its only effect is through ``ctx`` (``ctx.layer`` adds a layer, ``ctx.fuse_bias``
folds a bias into the layer before). No I/O, no torch, no TensorFlow.

Values flowing along the graph's edges:
- ``Tensor``: a runtime tensor, the output of a layer (``ref``), with its TF shape (batch axis included,
  None where unknown; NHWC for images, as in the graph);
- ``Const``: known before run time: a Const node, a variable (read lazily: only weights' shapes are
  looked at), or a folded result;
- ``ShapeVec``: a shape computed from a tensor's ``Shape`` (its batch size unknown until run time), the
  way ``tf.layers.flatten`` builds ``[batch, -1]``;
- ``Missing``: an output tf2torch does not compute (FusedBatchNorm's batch statistics), with why.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..errors import UnsupportedError
from ..spec import GraphNode, TensorRef, Variable

if TYPE_CHECKING:
    import numpy as np

TFShape = tuple[int | None, ...]
BATCH = "batch"  # a ShapeVec item: the run-time batch size
MERGED_OK = frozenset({"MatMul", "BatchMatMulV2", "BatchMatMulV3", "BatchMatMul", "Reshape", "BiasAdd"})


@dataclass(frozen=True)
class BatchTimes:
    """A ShapeVec item: the batch size times ``n`` (``prod(shape(x)[:2])`` of a (N, T, C) tensor)."""

    n: int


@dataclass(frozen=True)
class Tensor:
    ref: TensorRef
    shape: TFShape
    node: str  # the TF node that produced it (for counting its consumers)
    # The graph flattened the batch with the next axes ((N, T, C) -> (N*T, C), tf.tensordot's reshape):
    # ``ref`` still holds the unflattened tensor of this shape. Only MatMul and the Reshape back use it.
    merged: TFShape | None = None


@dataclass(frozen=True)
class Const:
    var: Variable
    weight: bool = False  # a model weight (a variable, or a frozen graph's weight Const): goes to the state_dict
    # How a value computed from other constants was made, ("rsqrt", c) or ("mul", a, b) with Const
    # operands; () for a leaf. Patterns over it (an unfused batch norm) recover the weights behind it.
    expr: tuple = ()

    @property
    def shape(self) -> tuple[int, ...]:
        return self.var.shape

    def array(self) -> np.ndarray:
        return self.var.read()


@dataclass(frozen=True)
class ShapeVec:
    items: tuple[int | str | BatchTimes | None, ...]  # ints, BATCH, BatchTimes, or None (unknown)


@dataclass(frozen=True)
class Missing:
    why: str


Value = Tensor | Const | ShapeVec | Missing


@dataclass
class PendingLayer:
    """A layer being built; frozen into a ``LayerSpec`` once the whole graph is lowered."""

    name: str
    class_name: str
    config: dict[str, Any]
    inputs: list[TensorRef]
    weights: list[tuple[str, Const]] = field(default_factory=list)  # (Keras weight name, value)
    kwargs: dict[str, Any] = field(default_factory=dict)
    node: str = ""  # the TF node it was made for
    node_named: bool = False  # named after its op (not its weights' scope)


class NodeCtx:
    """One TF node's lowering: its attributes, its input values, and the layer builder."""

    def __init__(self, node: GraphNode, inputs: Sequence[Value], builder: Any) -> None:
        self.node = node
        self.inputs = tuple(inputs)
        self._builder = builder

    @property
    def op(self) -> str:
        return self.node.op

    def attr(self, key: str, default: Any = None) -> Any:
        return self.node.attrs.get(key, default)

    def where(self) -> str:
        return f"op {self.node.name!r} ({self.node.op})"

    def unsupported(self, what: str, fix: str = "") -> UnsupportedError:
        return UnsupportedError(f"{self.where()}: {what}" + (f"; {fix}" if fix else ""))

    def tensor(self, i: int) -> Tensor:
        value = self.inputs[i] if i < len(self.inputs) else Missing("no such input")
        if isinstance(value, Tensor):
            if value.merged is not None and self.op not in MERGED_OK:
                raise self.unsupported(f"input {i} has its batch axis merged with others (a tensordot's reshape), "
                                       "which only a MatMul and the reshape back may read")
            return value
        if isinstance(value, Missing):
            raise self.unsupported(f"input {i} ({self.node.inputs[i] if i < len(self.node.inputs) else '?'}) "
                                   f"is not computed: {value.why}")
        raise self.unsupported(f"input {i} is a constant where a run-time tensor was expected",
                               "fold it away before export, or report the graph")

    def const(self, i: int, what: str) -> Const:
        value = self.inputs[i] if i < len(self.inputs) else None
        if not isinstance(value, Const):
            raise self.unsupported(f"its {what} (input {i}) must be a constant or a variable, found a "
                                   f"{type(value).__name__.lower() if value is not None else 'nothing'}",
                                   "tf2torch converts graphs whose weights and shapes are fixed")
        return value

    def layer(self, class_name: str, config: dict[str, Any], inputs: Sequence[Tensor], shape: TFShape, *,
              weights: Sequence[tuple[str, Const]] = (), kwargs: dict[str, Any] | None = None,
              name: str = "") -> Tensor:
        """Add a layer of a Keras class (its converter in ``layers/`` does the rest); its output tensor."""
        return self._builder.add(self, class_name, config, inputs, shape, weights, kwargs or {}, name)

    def fuse_bias(self, x: Tensor, bias: Const, own: bool = False) -> bool:
        """Give the conv / Dense layer that produced ``x`` this bias, when ``x`` feeds nothing else (or
        whatever reads it, when the bias is the op's ``own``)."""
        return self._builder.fuse_bias(x, bias, own)

    def derived(self, op: str, operands: Sequence[Const], compute: Callable[..., np.ndarray]) -> Const:
        """A constant computed from constants, remembering how (see ``Const.expr``). They are small
        (batch-norm vectors, scalars, shapes), so the value is computed now."""
        import numpy as np

        from .. import dtypes

        array = np.asarray(compute(*(c.array() for c in operands)))
        var = Variable(name=self.node.name, dtype=dtypes.from_numpy(array.dtype, self.where()), shape=array.shape,
                       nbytes=array.nbytes, loader=lambda: array)
        return Const(var, expr=(op, *operands))

    def reshaped(self, value: Const, shape: tuple[int, ...]) -> Const:
        """A weight seen through a reshape (a Keras 3 bias reshaped to (1, 1, 1, C) and squeezed back)
        stays that weight: same variable, same values in the same order."""
        import dataclasses

        var = dataclasses.replace(value.var, shape=tuple(shape), loader=lambda: value.array().reshape(shape))
        return Const(var, weight=value.weight, expr=value.expr)

    def scale_layer(self, x: Tensor, scale: Const) -> Tensor:
        """``x * scale`` by a per-channel constant: kept for the add that may complete a batch norm."""
        return self._builder.scale(self, x, scale)

    def complete_batch_norm(self, t: Tensor, shift: Const) -> Tensor | None:
        return self._builder.complete_batch_norm(t, shift)

    def folded(self, array: np.ndarray) -> Const:
        import numpy as np

        array = np.asarray(array)
        from .. import dtypes

        var = Variable(name=self.node.name, dtype=dtypes.from_numpy(array.dtype, self.where()), shape=array.shape,
                       nbytes=array.nbytes, loader=lambda: array)
        return Const(var)


def f32(value: float) -> float:
    """The shortest decimal with the same float32 value: graphs store epsilons as float32 (0.001 reads
    back 0.0010000000474974513); both are one float32, and 0.001 is what the model's author wrote."""
    import numpy as np

    return float(str(np.float32(value)))


Converter = Callable[[NodeCtx], tuple[Value, ...]]
_REGISTRY: dict[str, Converter] = {}


def tf_op(*ops: str, arity: int = 1) -> Callable[[Converter], Converter]:
    """Register a converter for TF op types (a second registration of one type fails at import);
    ``arity``: how many inputs the op has at least (checked before the converter runs)."""

    def register(fn: Converter) -> Converter:
        fn.arity = arity  # type: ignore[attr-defined]
        for op in ops:
            if op in _REGISTRY:
                raise RuntimeError(f"two converters for TF op {op!r}: {_REGISTRY[op].__module__} and {fn.__module__}")
            _REGISTRY[op] = fn
        return fn

    return register


def lookup(op: str) -> Converter | None:
    return _REGISTRY.get(op)


def supported() -> list[str]:
    return sorted(_REGISTRY)
