"""The IR converters return and the code generator renders: the value types of one generated class.

``TensorInfo`` describes a value flowing between layers (its Keras shape and the layout it has in the
generated model), ``Module`` a submodule built in ``__init__`` from literals, ``Op`` one step of the
forward pass, ``Param`` one state_dict entry. They sit below both the converters (``tf2torch/layers``,
``families/*/converters``) and the renderer (``codegen``), so neither imports the other's internals.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..map.layouts import Layout
from ..spec import Variable
from .nodes import Expr

if TYPE_CHECKING:  # a constant parameter's value; rendering needs no numpy
    import numpy as np

Shape = tuple[int | None, ...]


@dataclass(frozen=True)
class TensorInfo:
    shape: Shape  # Keras shape without batch
    layout: str = "keras"  # "keras" | "cf" | "cf_flat"
    flat_from: Shape = ()  # for "cf_flat": the Keras shape before the flatten (…spatial, C)
    mask: str = ""  # the local holding this tensor's Keras mask ((N, T) bool), when it has one (layers/masks.py)

    @property
    def rank(self) -> int:
        """Rank with the batch axis."""
        return len(self.shape) + 1


@dataclass(frozen=True)
class Module:
    """A submodule built in ``__init__``: ``cls(*args, **kwargs)`` with literal arguments only."""

    cls: str  # "nn.Conv2d", or a helper class inlined into the generated file ("TFSamePad")
    args: tuple[Any, ...] = ()
    kwargs: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class Op:
    """One step of the forward pass.

    ``expr`` is nodes (``codegen/nodes.py``) with holes: ``n.M`` is this op's module attribute, ``n.X``
    the previous op's result (or the first input), ``n.arg(0)``, ``n.arg(1)``… the layer's inputs, ``n.S``
    a shared module; literals from the layer's config go in as Python values
    (``Op(n.call("torch.flatten", n.X, 1))``), so no text is made before ``model.py`` is rendered.
    """

    expr: Expr
    module: Module | None = None
    suffix: str = ""  # attribute name suffix: "" for the layer's main module, "pad", "act", ...
    # ``n.S``: the module of another layer this op calls, by Keras layer names from this model down through
    # nested models (("bert_backbone", "token_embedding")): a layer Keras shares with a sublayer of this one
    shares: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.expr, Expr):  # a converter bug: text is never parsed back into nodes
            raise TypeError(f"Op.expr should be nodes (tf2torch/codegen/nodes.py), found {type(self.expr).__name__}")


@dataclass(frozen=True)
class Param:
    """A state_dict entry of one of the layer's modules: from a source variable or a constant."""

    suffix: str  # which module (Op.suffix)
    name: str  # parameter / buffer name inside that module ("weight", "running_mean", ...)
    layout: Layout
    var: Variable | None = None
    const: np.ndarray | None = None  # e.g. the zero recurrent bias torch's LSTM needs and Keras lacks
