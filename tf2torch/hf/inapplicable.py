"""The ``convert`` options a Hugging Face route does not read, refused by name before any file is read.

Both routes (a transformers repository, ``convert_repo``; an original TF1 checkpoint with ``--hf-config``,
``convert_checkpoint``) write a transformers repository onto the class transformers defines, under the
strict contract, as ``model.safetensors``. They take ``--hf-class``, ``--dtype``, ``--force``, ``--dry-run``,
``--report`` (and the checkpoint route ``--no-verify-crc``); any other option would be silently ignored,
so it is a usage error (exit 2) that says why it means nothing here.
"""

from __future__ import annotations

from typing import Any

from ..errors import UsageError
from ..options import ConvertOptions

REPO, CHECKPOINT = "repo", "checkpoint"
WHAT = {REPO: "a transformers repository (config.json + tf_model.h5)",
        CHECKPOINT: "an original TF1 checkpoint with --hf-config"}
_ONTO_CLASS = "the weights go onto the transformers class the config names (pick another with --hf-class)"
_NO_GRAPH = "transformers defines the model: no graph or PyTorch code is generated"
_CONTRACT = "the transformers contract is fixed: every key filled, every weight used or skipped by rule"

# field: (the option as typed, its value when not given, why it does not apply)
OPTIONS: dict[str, tuple[str, Any, str]] = {
    "model": ("--model", None, _ONTO_CLASS + "; for your own model convert tf_model.h5 or the checkpoint itself"),
    "config": ("--config", None, "a Keras model JSON; " + _ONTO_CLASS),
    "rules": ("--rules", None, "names are matched by the transformers convention, with no rules"),
    "weights_format": ("--format", "safetensors", "a transformers repository holds model.safetensors"),
    "ema": ("--ema", False, "the checkpoint's own variables are what transformers' loaders read"),
    "strict": ("--strict", False, _CONTRACT),
    "allow_missing": ("--allow-missing", (), _CONTRACT),
    "allow_unexpected": ("--allow-unexpected", (), _CONTRACT),
    "keep_names": ("--keep-names", False, "keys are the transformers class's state_dict keys"),
    "transpose": ("--no-transpose", True, "layouts are the transformers class's"),
    "input_shape": ("--input-shape", None, _NO_GRAPH),
    "tf_padding": ("--tf-padding", None, _NO_GRAPH),
    "channels_last": ("--channels-last", False, _NO_GRAPH),
    "flat": ("--flat", False, _NO_GRAPH),
    "weights_only": ("--weights-only", False, "only weights are written already (the class is transformers')"),
    "graph_outputs": ("--graph-output", (), "no TF graph is read"),
    "signature": ("--signature", None, "no SavedModel is read"),
    "member": ("--member", None, "no MediaPipe .task bundle is read"),
    "dequantize": ("--dequantize", False, "no quantized TFLite model is read"),
    "verify_crc": ("--no-verify-crc", True, "h5 files carry no checksums"),
}
ROUTE_TAKES = {REPO: frozenset(), CHECKPOINT: frozenset({"verify_crc"})}


def check(options: ConvertOptions, route: str) -> None:
    """UsageError naming the first option given that ``route`` does not read (in the CLI's order)."""
    for field, (flag, unset, why) in OPTIONS.items():
        if field in ROUTE_TAKES[route] or getattr(options, field) == unset:
            continue
        raise UsageError(f"{flag} does not apply to {WHAT[route]}: {why}; drop {flag}")
