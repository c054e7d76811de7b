"""Test helpers: convert in memory (no output directory) and build the generated model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import torch

from tests.support.layouts import to_tf_layout, to_torch_layout  # noqa: F401 - the tests import them from here
from tf2torch import api
from tf2torch.write.torch_pt import to_torch


def state_dict(plans) -> dict[str, torch.Tensor]:
    return {plan.key: to_torch(plan.produce(), plan.dtype) for plan in plans}


def load_source(source: str, path: Path | str = "model.py") -> dict[str, Any]:
    """Execute generated model source as the module ``path`` would be."""
    namespace: dict[str, Any] = {"__file__": str(path), "__name__": "generated_model"}
    exec(compile(source, str(path), "exec"), namespace)
    return namespace


def convert_in_memory(source: str | Path, **options: Any):
    """(model in eval mode with the converted weights loaded strictly, the Conversion)."""
    result = api.convert(source, None, dry_run=True, **options)
    namespace = load_source(result.model_source)
    model = namespace["build_model"]()
    model.load_state_dict(state_dict(result.plans), strict=True)
    return model.eval(), result


def max_abs(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)))) if np.size(a) else 0.0


def edit_keras_member(src: Path, dst: Path, member: str, edit: Any) -> Path:
    """A copy of the ``.keras`` archive ``src`` at ``dst`` with the JSON ``member`` replaced by ``edit(json)``."""
    import json
    import zipfile

    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            zout.writestr(info, json.dumps(edit(json.loads(data))).encode() if info.filename == member else data)
    return dst
