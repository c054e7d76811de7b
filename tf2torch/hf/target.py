"""The transformers PyTorch class a repository converts to, built without weights.

The class is the config's first architecture without its ``TF`` prefix (what ``save_pretrained`` of a TF
model wrote before transformers 4.x named them without it), or ``--hf-class``. It is built inside a
``torch.device("meta")`` context: parameters have shapes but no storage, so building a 7B model costs no
memory and initialises nothing; the object serves only its state_dict keys, shapes and tied tensors.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from ..errors import MissingDependencyError, UnsupportedError, UsageError

EXTRA = "pip install tf2torch[hf]"
# Prefixes of transformers' other frameworks' classes; the PyTorch class is the rest of the name
FRAMEWORK_PREFIXES = ("TF", "Flax")


def import_transformers() -> ModuleType:
    """transformers, imported with its TensorFlow integration off: 4.x imports TF at import when it is
    installed, and conversion must never import TensorFlow. USE_TF is read once, at transformers' import;
    the caller's environment is restored after it."""
    loaded = sys.modules.get("transformers")
    if loaded is not None:
        return loaded
    saved = {name: os.environ.get(name) for name in ("USE_TF", "USE_FLAX")}
    os.environ.update(USE_TF="0", USE_FLAX="0")
    try:
        import transformers
    except ImportError as exc:
        raise MissingDependencyError(f"converting a Hugging Face repository needs transformers ({exc}); "
                                     f"install it: {EXTRA}") from None
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return transformers


def class_name(config: dict[str, Any], hf_class: str | None, where: Path) -> str:
    """The PyTorch class name: ``--hf-class``, else the config's first architecture, framework prefix dropped."""
    if hf_class is not None:
        name = hf_class
    else:
        archs = config.get("architectures")
        if not isinstance(archs, list) or not archs or not isinstance(archs[0], str):
            raise UsageError(f"{where}: names no architectures; pass --hf-class with the transformers class to "
                             "build, e.g. --hf-class BertForSequenceClassification")
        name = archs[0]
    for prefix in FRAMEWORK_PREFIXES:
        if name.startswith(prefix) and name[len(prefix):][:1].isupper():
            return name[len(prefix):]
    return name


def model_class(transformers: ModuleType, name: str, where: Path) -> type:
    """The transformers PyTorch model class of that name, or UnsupportedError naming the fix."""
    try:
        cls = getattr(transformers, name, None)
    except Exception as exc:  # transformers' lazy module raises when the class's own imports fail
        raise UnsupportedError(f"{where}: transformers cannot import {name!r} ({type(exc).__name__}: {exc}); "
                               "install what it names, or pass another --hf-class") from None
    if not (isinstance(cls, type) and issubclass(cls, transformers.PreTrainedModel)):
        raise UnsupportedError(f"{where}: architecture {name!r}: transformers {transformers.__version__} has no "
                               "PyTorch model class of that name; upgrade transformers, or pass --hf-class with "
                               "the PyTorch class to build (e.g. BertModel)")
    return cls


def build(cls: type, root: Path) -> Any:
    """The model from the repository's config, on the meta device (no storage, no initialisation cost)."""
    try:
        config = cls.config_class.from_pretrained(str(root), local_files_only=True)
    except Exception as exc:  # a config that does not fit the class: one line, not transformers' traceback
        raise _unbuildable(cls, root / "config.json", exc) from None
    return instantiate(cls, config, root / "config.json")


def instantiate(cls: type, config: Any, where: Path) -> Any:
    """``cls(config)`` on the meta device, in eval mode; a config that does not fit the class is one line."""
    import torch

    try:
        with torch.device("meta"):
            model = cls(config)
    except Exception as exc:
        raise _unbuildable(cls, where, exc) from None
    return model.eval()


def _unbuildable(cls: type, where: Path, exc: Exception) -> UnsupportedError:
    return UnsupportedError(f"{where}: building {cls.__name__} from it raised {type(exc).__name__}: "
                            f"{' '.join(str(exc).split())[:300]}; fix the config or pass another --hf-class")


def tie_groups(model: Any) -> list[list[str]]:
    """The state_dict keys that are one tensor (tied embeddings and LM heads), in state_dict order."""
    by_tensor: dict[int, list[str]] = {}
    for key, tensor in model.state_dict(keep_vars=True).items():
        by_tensor.setdefault(id(tensor), []).append(key)
    return [keys for keys in by_tensor.values() if len(keys) > 1]


def tied_targets(model: Any) -> list[str]:
    """transformers' own list of the keys that are re-tied on load (``_tied_weights_keys``): a list of
    suffixes or patterns in 4.x, a dict {tied key: source key} in 5.x."""
    keys = getattr(model, "_tied_weights_keys", None) or []
    return list(keys.keys() if isinstance(keys, dict) else keys)


def matches_any(key: str, patterns: list[str]) -> bool:
    """transformers' rule for its key lists: a suffix of the key or a regex found in it."""
    for pattern in patterns:
        if key == pattern or key.endswith("." + pattern):
            return True
        try:
            if re.search(pattern, key):
                return True
        except re.error:
            continue
    return False


def ignored_missing(model: Any) -> list[str]:
    """Keys transformers accepts as absent from a checkpoint (``_keys_to_ignore_on_load_missing``)."""
    return list(getattr(model, "_keys_to_ignore_on_load_missing", None) or [])


def ignored_unexpected(model: Any) -> list[str]:
    """Checkpoint keys transformers drops on load without a warning (``_keys_to_ignore_on_load_unexpected``)."""
    return list(getattr(model, "_keys_to_ignore_on_load_unexpected", None) or [])
