"""What generating one model produced, before it is rendered into ``model.py``: its classes, the state_dict
entries with their sources, verify's taps, the report's notes, the helpers it calls and its interface."""

from __future__ import annotations

from dataclasses import dataclass, field

from .emit import ClassDef
from .ir import Param, TensorInfo


@dataclass
class Generated:
    classes: list[ClassDef] = field(default_factory=list)  # nested classes first, the model last
    params: list[tuple[str, Param]] = field(default_factory=list)  # (state_dict key, param)
    taps: dict[str, str] = field(default_factory=dict)  # Keras layer name -> module path (verify hooks)
    tap_layouts: dict[str, str] = field(default_factory=dict)  # Keras layer name -> its output's layout
    notes: list[str] = field(default_factory=list)
    helpers: list[str] = field(default_factory=list)
    sized: bool = False  # some layer's static TF 'SAME' padding holds only for the input size (model_file)
    inputs: list[tuple[str, TensorInfo]] = field(default_factory=list)
    outputs: list[TensorInfo] = field(default_factory=list)
