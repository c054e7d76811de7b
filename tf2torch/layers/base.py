"""The layer model shared by every converter: what a converter gets and what it returns.

A converter is a pure function ``(Ctx) -> Converted``: from one call of a Keras layer (its config, its
weights, the shapes and layouts of its inputs) to the PyTorch modules it needs, the forward expression
that applies them, the state_dict entries (each a source variable plus a layout from the layout table)
and the shapes of its outputs. No I/O, no torch import, no globals.

Shapes are Keras shapes without the batch axis (channels last), ``None`` where unknown. A tensor in the
generated PyTorch model has a *layout*: "keras" (axes as in Keras), "cf" (channels moved to axis 1, the
PyTorch convention for conv/pool), or "cf_flat" (a channels-first tensor flattened: the following Dense
permutes its kernel rows instead of the model permuting activations).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import UnsupportedError
from ..map.layouts import Layout
from ..spec import LayerCall, LayerSpec, Variable

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

    ``expr`` is a template: ``{m}`` is this op's module attribute, ``{x}`` the previous op's result
    (or the first input), ``{0}``, ``{1}``… the layer's inputs. Templates are written by converters,
    never taken from the input file; only literals rendered by the emitter are substituted into them.
    """

    expr: str
    module: Module | None = None
    suffix: str = ""  # attribute name suffix: "" for the layer's main module, "pad", "act", ...
    # ``{s}``: the module of another layer this op calls, by Keras layer names from this model down through
    # nested models (("bert_backbone", "token_embedding")): a layer Keras shares with a sublayer of this one
    shares: tuple[str, ...] = ()


@dataclass(frozen=True)
class Param:
    """A state_dict entry of one of the layer's modules: from a source variable or a constant."""

    suffix: str  # which module (Op.suffix)
    name: str  # parameter / buffer name inside that module ("weight", "running_mean", ...)
    layout: Layout
    var: Variable | None = None
    const: np.ndarray | None = None  # e.g. the zero recurrent bias torch's LSTM needs and Keras lacks


@dataclass(frozen=True)
class Converted:
    ops: tuple[Op, ...]
    outputs: tuple[TensorInfo, ...]
    params: tuple[Param, ...] = ()
    notes: tuple[str, ...] = ()  # for the report: dynamic padding used, epsilon carried over, ...
    helpers: tuple[str, ...] = ()  # names of inlined helper classes the ops use
    sized: bool = False  # static TF 'SAME' padding planned for this input size: the model must check it


@dataclass(frozen=True)
class Ctx:
    """What a converter sees for one call of a layer."""

    layer: LayerSpec
    call: LayerCall
    inputs: tuple[TensorInfo, ...]
    keras_version: int = 3  # the config dialect: a few defaults differ (hard_sigmoid, GRU reset_after)
    keras_release: tuple[int, int] | None = None  # (major, minor) that saved the file, when it says

    @property
    def config(self) -> Mapping[str, Any]:
        return self.layer.config

    @property
    def x(self) -> TensorInfo:
        return self.inputs[0]

    def where(self) -> str:
        return f"layer {self.layer.name!r} ({self.layer.class_name})"

    def unsupported(self, what: str, fix: str = "") -> UnsupportedError:
        return UnsupportedError(f"{self.where()}: {what}" + (f"; {fix}" if fix else ""))


@dataclass(frozen=True)
class Registration:
    fn: Any  # (Ctx) -> Converted
    wants: str  # input layout: "cf", "keras", "any" (as given), "same" (all as the first input's)
    accepts_flat: bool = False  # takes a "cf_flat" input as is (Dense)
    weights: tuple[str, ...] = field(default=())  # documentation: the Keras weight names, in order
