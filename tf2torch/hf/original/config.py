"""The ``--hf-config`` file: a transformers ``config.json``, or the release's own (``bert_config.json``,
``albert_config.json``, GPT-2's ``hparams.json``), which transformers' old conversion scripts read with
``<Model>Config.from_json_file``. A release's file names no ``model_type``: the family then comes from
``--hf-class``, or from the checkpoint's names (each convention's signature name)."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType
from typing import Any

from ...errors import UnsupportedError, UsageError
from ...readers.jsonsafe import load_json
from . import Convention, detect, model_types

# A transformers config.json's own bookkeeping, not constructor arguments
NOT_ARGUMENTS = ("model_type", "architectures", "transformers_version", "dtype", "torch_dtype")


def read(path: Path) -> dict[str, Any]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError(f"--hf-config {path}: cannot read it ({exc.strerror}); pass the model's config.json or "
                         "the release's bert_config.json-style file") from None
    raw = load_json(data, str(path), "a model config (transformers config.json or the release's own)")
    if not isinstance(raw, dict):
        raise UsageError(f"{path}: expected a JSON object (a model config), found {type(raw).__name__}; "
                         "pass the model's config.json")
    return raw


def model_type(raw: dict[str, Any], where: Path, class_type: str | None, names: list[str]) -> str:
    """The config's ``model_type``, else ``--hf-class``'s, else the one family whose names the checkpoint holds."""
    stated = raw.get("model_type") or class_type
    found = detect(names)
    if stated is not None:
        if not isinstance(stated, str) or stated not in model_types():
            raise UnsupportedError(f"{where}: model_type {stated!r}: no original-checkpoint convention for it "
                                   f"(known: {', '.join(model_types())}); convert with --model FILE.py:CALLABLE "
                                   "and a rules file instead")
        if class_type is not None and class_type != stated and raw.get("model_type"):
            raise UsageError(f"{where}: model_type {stated!r}, but --hf-class is a {class_type!r} class; pass a "
                             f"{stated} class, or the config of the model you mean")
        if len(found) == 1 and stated not in found[0].model_types:
            raise UsageError(f"{where}: model_type {stated!r}, but the checkpoint holds {found[0].name} names; pass "
                             "the config (or --hf-class) of that family")
        return stated
    if len(found) != 1:
        what = "no known family's names" if not found else "the names of " + " and ".join(c.name for c in found)
        raise UsageError(f"{where}: names no model_type and the checkpoint holds {what}; add \"model_type\" "
                         f"(one of {', '.join(model_types())}) to the config, or pass --hf-class")
    return found[0].model_types[0]


def build(transformers: ModuleType, cls: type, convention: Convention, raw: dict[str, Any], where: Path) -> Any:
    """The transformers config object: the release's keys renamed as the convention says, the rest passed
    to the class's config as its constructor arguments (``from_json_file`` does the same)."""
    renamed = dict(convention.config_keys)
    kwargs = {renamed.get(k, k): v for k, v in raw.items() if k not in NOT_ARGUMENTS}
    try:
        return cls.config_class(**kwargs)
    except Exception as exc:  # a value of the wrong type: one line, not transformers' traceback
        raise UsageError(f"{where}: {cls.config_class.__name__} refuses it ({type(exc).__name__}: "
                         f"{' '.join(str(exc).split())[:200]}); fix the config") from None
