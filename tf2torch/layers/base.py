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

from ..codegen.ir import Module, Op, Param, Shape, TensorInfo  # the IR nodes converters return (re-exported)
from ..errors import UnsupportedError
from ..spec import LayerCall, LayerSpec

__all__ = ["Converted", "Ctx", "Module", "Op", "Param", "Registration", "Shape", "TensorInfo"]


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
