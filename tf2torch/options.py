"""``ConvertOptions``: every choice a conversion takes, in one frozen object.

The CLI builds it from its click options (the option names are the field names), ``api.convert`` from
its keyword arguments, and every pipeline (``tf2torch.pipelines``) reads the same object. A new option is
one field here and one click option; nothing forwards it by hand.

It sits low in the layers (on ``errors`` and ``dtypes``, both light): the rules file it names is loaded
lazily, by the one property that needs ``tf2torch.map``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import dtypes
from .dtypes import DType
from .errors import UsageError

if TYPE_CHECKING:  # map is a higher layer: named for the type, imported where the rules are loaded
    from .map.rules import Rules

WEIGHT_FORMATS = {"safetensors": "model.safetensors", "pt": "model.pt"}
TF_PADDINGS = (None, "same", "none")


@dataclass(frozen=True)
class ConvertOptions:
    """The options of ``tf2torch.convert`` (the CLI's ``convert`` flags; the docstring of
    ``tf2torch.api.convert`` says what each does)."""

    model: str | None = None  # FILE.py:CALLABLE of the user's PyTorch model
    config: str | Path | None = None  # a Keras model.to_json() for a checkpoint / SavedModel
    rules: str | Path | None = None  # a TOML rules file
    weights_format: str = "safetensors"
    dtype: str | None = None
    ema: bool = False
    strict: bool = False
    keep_names: bool = False
    transpose: bool = True
    input_shape: tuple[int, ...] | None = None
    tf_padding: str | None = None
    channels_last: bool = False
    flat: bool = False
    force: bool = False
    dry_run: bool = False
    verify_crc: bool = True
    allow_missing: tuple[str, ...] = ()
    allow_unexpected: tuple[str, ...] = ()
    report_path: str | Path | None = None
    weights_only: bool = False
    graph_outputs: tuple[str, ...] = ()
    signature: str | None = None
    member: str | None = None  # a MediaPipe .task bundle's model to convert (default: every one, each in OUT/<name>)
    hf_class: str | None = None  # a transformers repo's PyTorch class (default: the config's, without 'TF')
    hf_config: str | Path | None = None  # an original TF1 checkpoint's model config: convert it to a transformers repo
    dequantize: bool = False  # a quantized .tflite model's float form (weights dequantized), not its integer emulation

    def __post_init__(self) -> None:
        # Callers pass lists as often as tuples; stored as tuples the object stays immutable and hashable.
        for name in ("allow_missing", "allow_unexpected", "graph_outputs", "input_shape"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))
        # Checked here, before any file is read: a typo fails at once, whatever the mode.
        if self.weights_format not in WEIGHT_FORMATS:
            raise UsageError(f"weights format {self.weights_format!r}: expected one of {', '.join(WEIGHT_FORMATS)}")
        if self.dtype is not None and not self.out_dtype.is_float:  # type: ignore[union-attr]
            raise UsageError(f"--dtype {self.dtype}: expected float32, float16, bfloat16 or float64")
        if self.tf_padding not in TF_PADDINGS:
            raise UsageError(f"--tf-padding {self.tf_padding!r}: expected 'same' or 'none'")

    @classmethod
    def names(cls) -> frozenset[str]:
        """The field names: what the CLI and ``api.convert`` may hand over."""
        return frozenset(f.name for f in fields(cls))

    @classmethod
    def build(cls, base: ConvertOptions | None = None, **changes: Any) -> ConvertOptions:
        """``base`` (default: all defaults) with ``changes``; an unknown name is a TypeError, as for any
        misspelled keyword argument."""
        unknown = sorted(set(changes) - cls.names())
        if unknown:
            raise TypeError(f"convert() got unexpected keyword argument(s): {', '.join(unknown)}")
        values = {f.name: getattr(base, f.name) for f in fields(cls)} if base is not None else {}
        return cls(**{**values, **changes})

    @property
    def weights_name(self) -> str:
        """The weights file's name in the output directory (the generated model.py loads it by name)."""
        return WEIGHT_FORMATS[self.weights_format]

    @property
    def out_dtype(self) -> DType | None:
        """The dtype float tensors are cast to; None keeps each tensor's own."""
        return dtypes.by_name(self.dtype) if self.dtype else None

    @cached_property
    def rule_set(self) -> Rules:
        """The rules file, loaded once (``api.convert`` touches it first, so a bad file fails early)."""
        from .map.rules import NO_RULES, load_rules

        return load_rules(Path(self.rules)) if self.rules else NO_RULES
