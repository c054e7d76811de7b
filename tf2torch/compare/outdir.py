"""What ``verify`` needs from a ``tf2torch convert`` output directory: ``report.json`` and ``model.py``.

The report says how the conversion was made (``mode``), which source variable went to which
state_dict key (``entries``: the module of a key is hooked for TF1 graphs), and for generated models
the interface (input/output shapes and layouts) and ``layers``: Keras layer -> PyTorch module path.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import FormatError, UsageError

EMA_SUFFIX = "/ExponentialMovingAverage"


@dataclass(frozen=True)
class OutDir:
    path: Path
    mode: str  # "keras" (generated model) | "model" (the user's model, patched)
    source: str  # the source the conversion read
    interface: dict[str, Any] = field(default_factory=dict)
    layers: dict[str, str] = field(default_factory=dict)  # Keras layer -> module path
    key_of: dict[str, str] = field(default_factory=dict)  # source variable -> state_dict key (mapped)
    layouts: dict[str, str] = field(default_factory=dict)  # Keras layer -> its PyTorch output layout
    notes: tuple[str, ...] = ()  # the report's notes (a TFLite model converted with --dequantize says so)

    @property
    def model_file(self) -> Path:
        return self.path / "model.py"

    def module_of(self, variable: str) -> str | None:
        """The module path that owns the state_dict key a source variable was mapped to."""
        key = self.key_of.get(variable)
        return None if key is None else key.rpartition(".")[0]

    def ema_sources(self) -> dict[str, str]:
        """Variables whose EMA shadow was converted (``--ema``): variable -> shadow name."""
        return {src.removesuffix(EMA_SUFFIX): src for src in self.key_of if src.endswith(EMA_SUFFIX)}


def read_outdir(path: Path) -> OutDir:
    if not path.is_dir():
        raise UsageError(f"{path}: no such directory; pass the OUTDIR that `tf2torch convert -o OUTDIR` wrote")
    report_file = path / "report.json"
    if not report_file.is_file():
        raise UsageError(f"{path}: no report.json; is it an output directory of `tf2torch convert`?")
    try:
        data = json.loads(report_file.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FormatError(f"{report_file}: not valid JSON ({exc}); convert again") from None
    if not isinstance(data, dict):
        raise FormatError(f"{report_file}: expected a JSON object, found {type(data).__name__}; convert again")
    mode = data.get("mode")
    if isinstance(mode, str) and mode.startswith("hugging-face"):
        raise UsageError(f"{path}: a transformers repository (report.json mode {mode!r}); verify runs one against "
                         "the repository it came from (verify REPO OUT, REPO holding tf_model.h5); for an original "
                         "TF1 checkpoint, pass the config it was converted with: verify model.ckpt OUT --hf-config FILE")
    if mode == "bare" or not (path / "model.py").is_file():
        raise UsageError(f"{path}: holds a bare state_dict (no model.py), so there is no PyTorch model to run; "
                         "convert with --model FILE.py:CALLABLE (your model) or from a full Keras model")
    if mode not in ("keras", "model"):
        raise FormatError(f"{report_file}: mode {mode!r}: expected 'keras' or 'model'; convert again")
    interface = data.get("interface") if isinstance(data.get("interface"), dict) else {}
    layers = interface.get("layers") or data.get("taps") or {}
    key_of = {}
    for entry in data.get("entries", ()):
        if isinstance(entry, dict) and entry.get("status") == "mapped" and entry.get("source") and entry.get("key"):
            key_of[str(entry["source"])] = str(entry["key"])
    return OutDir(path=path, mode=mode, source=str(data.get("source", "")), interface=interface,
                  layers={str(k): str(v) for k, v in layers.items()} if isinstance(layers, dict) else {},
                  key_of=key_of, layouts=_str_map(interface.get("layer_layouts")),
                  notes=tuple(str(n) for n in data.get("notes") or () if isinstance(n, str)))


def _str_map(value: Any) -> dict[str, str]:
    return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}
