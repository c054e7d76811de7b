"""Deliberately broken conversions: edits of a convert output that reproduce real porting bugs.

Each edit asserts that it changed something, so a change in the generated code fails here loudly
instead of silently testing an unbroken model.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import numpy as np


def copy_outdir(out_dir: Path, dest: Path) -> Path:
    shutil.copytree(out_dir, dest)
    return dest


def _edit(path: Path, pattern: str, replace: str, count: int = 1) -> None:
    text = path.read_text(encoding="utf-8")
    new, n = re.subn(pattern, replace, text)
    assert n == count, f"{path.name}: expected {count} match(es) of {pattern!r}, found {n}"
    path.write_text(new, encoding="utf-8")


def symmetric_padding(out_dir: Path, layer: str, padding: tuple[int, int] = (1, 1)) -> None:
    """Seed 000's bug in a generated model: drop TF's bottom/right ``<layer>_pad``, pad k // 2 on both sides."""
    model = out_dir / "model.py"
    _edit(model, rf"\n *self\.{layer}_pad = nn\.ZeroPad2d\([^\n]*\)", "")
    _edit(model, rf"(self\.{layer} = nn\.Conv2d\([^\n]*padding=)\(0, 0\)", rf"\g<1>{padding}")
    _edit(model, rf"self\.{layer}_pad\(([^()]*)\)", r"\1")


def bn_epsilon(out_dir: Path, layer: str, eps: float) -> None:
    """A generated model's BatchNorm with another epsilon (PyTorch's default instead of Keras's 1e-3)."""
    _edit(out_dir / "model.py", rf"(self\.{layer} = nn\.BatchNorm\dd\(\d+, eps=)[^,)]+", rf"\g<1>{eps!r}")


def drop_rewrite(out_dir: Path, kind: str, module: str) -> None:
    """A patched user model without one of tf2torch's rewrites (the user's model as they wrote it)."""
    _edit(out_dir / "model.py", rf"\n *\('{kind}', '{re.escape(module)}',[^\n]*", "")


def transpose_weight(out_dir: Path, key: str) -> None:
    """Rewrite one weight of model.safetensors transposed (a Dense kernel copied without its (in, out) swap)."""
    from safetensors.numpy import load_file, save_file

    path = out_dir / "model.safetensors"
    tensors = load_file(path)
    weight = tensors[key]
    assert weight.ndim == 2 and weight.shape[0] == weight.shape[1], f"{key}: {weight.shape} is not square"
    tensors[key] = np.ascontiguousarray(weight.T)
    save_file(tensors, path)
