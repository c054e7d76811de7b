"""Keras-vs-PyTorch harness for the converter tests: randomise a Keras model, save it, convert it in
memory, run both on the same seeded inputs and compare.

Every weight is randomised (seeded numpy), BatchNorm statistics included, so a converter that drops
or misorders a weight, or reads mean for variance, shows up as a numeric difference.

Layouts: the generated model takes channels-first images (rank >= 4) and, for a rank-3 input whose
first consumer is a Conv1D/pool, channels-first sequences; its docstring states the input shapes
("Inputs: name: (N, 3, 32, 32)."), which is what ``torch_inputs`` follows.
"""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from tests.util import convert_in_memory

_INPUTS = re.compile(r"^Inputs: (.*)\.$", re.MULTILINE)


def randomise(model: Any, seed: int = 0) -> None:
    """Assign seeded random values to every float weight of a Keras 2 or Keras 3 model.

    Kernels get N(0, 1/fan_in) so activations stay O(1) through deep models; BatchNorm gamma and
    moving_variance are positive (uniform 0.5..1.5), beta / moving_mean / biases small normals.
    """
    rng = np.random.default_rng(seed)
    for w in model.weights:
        dtype = np.dtype(getattr(w.dtype, "name", w.dtype))
        if dtype.kind != "f":
            continue  # Normalization's int "count"
        name = getattr(w, "path", None) or w.name
        leaf = name.split(":")[0].rsplit("/", 1)[-1]
        shape = tuple(int(s) for s in w.shape)
        if leaf in ("moving_variance", "variance", "gamma"):
            value = rng.uniform(0.5, 1.5, shape)
        elif leaf in ("moving_mean", "beta", "bias", "mean"):
            value = rng.normal(0.0, 0.2, shape)
        elif leaf == "alpha":  # PReLU slopes
            value = rng.uniform(0.0, 0.5, shape)
        else:
            fan_in = int(np.prod(shape[:-1])) if len(shape) > 1 else 1
            if "depthwise" in leaf:  # (kh, kw, C, mult): each output sees one channel
                fan_in = int(np.prod(shape[:-2]))
            value = rng.normal(0.0, 1.0 / np.sqrt(max(fan_in, 1)), shape)
        w.assign(value.astype(dtype))
    for layer in _all_layers(model):
        # Normalization caches mean/variance as constants when built: assigning its variables does
        # not reach call() until finalize_state() (Keras runs it after loading a file, too).
        if hasattr(layer, "finalize_state"):
            layer.finalize_state()


def _all_layers(model: Any):
    for layer in getattr(model, "layers", []):
        yield layer
        yield from _all_layers(layer)


def inputs_for(model: Any, seed: int = 1, batch: int = 2, sizes: dict[int, tuple] | None = None) -> list[np.ndarray]:
    """One seeded N(0, 1) batch per model input; ``sizes`` fills unknown dims (input index -> shape)."""
    rng = np.random.default_rng(seed)
    out = []
    for i, tensor in enumerate(model.inputs):
        shape = (sizes or {}).get(i) or tuple(tensor.shape[1:])
        if any(s is None for s in shape):
            raise ValueError(f"input {i} has unknown dims {shape}: pass sizes=")
        out.append(rng.normal(size=(batch, *shape)).astype(np.float32))
    return out


def keras_outputs(model: Any, xs: list[np.ndarray]) -> list[np.ndarray]:
    out = model(xs if len(xs) > 1 else xs[0], training=False)
    if isinstance(out, dict):
        out = [out[k] for k in sorted(out)]
    return [np.asarray(o) for o in (out if isinstance(out, (list, tuple)) else [out])]


def _doc_shapes(source: str) -> list[tuple]:
    match = _INPUTS.search(source)
    if match is None:
        raise AssertionError("generated model docstring has no 'Inputs:' line")
    shapes = []
    for part in re.findall(r"\(N(?:, ([^)]*))?\)", match.group(1)):
        shapes.append(tuple(None if s.strip() == "?" else int(s) for s in part.split(",")) if part else ())
    return shapes


def _is_cf(keras_shape: tuple, torch_shape: tuple, rank_hint: str, channels_last: bool) -> bool:
    """Whether a tensor of Keras shape ``keras_shape`` appears channels-first as ``torch_shape``.

    Images (rank >= 4 with batch) are channels-first unless ``channels_last``; a sequence's layout
    depends on its first consumer, so it is read from the shapes (which must then differ).
    """
    if channels_last:
        return False
    moved = (keras_shape[-1], *keras_shape[:-1]) if keras_shape else keras_shape
    if len(keras_shape) >= 3 and len(torch_shape) == len(keras_shape):
        return not channels_last

    def same(a, b):
        return len(a) == len(b) and all(x is None or y is None or x == y for x, y in zip(a, b))

    as_is, as_cf = same(keras_shape, torch_shape), same(moved, torch_shape)
    if as_is and as_cf and len(keras_shape) >= 2 and moved != keras_shape:
        raise AssertionError(f"{rank_hint}: shape {keras_shape} is ambiguous (cf or not); make the sizes differ")
    if not (as_is or as_cf):
        raise AssertionError(f"{rank_hint}: torch shape {torch_shape} is neither {keras_shape} nor {moved}")
    return as_cf and not as_is


def torch_inputs(source: str, xs: list[np.ndarray], channels_last: bool = False) -> list[torch.Tensor]:
    shapes = _doc_shapes(source)
    assert len(shapes) == len(xs), (shapes, [x.shape for x in xs])
    out = []
    for i, (x, shape) in enumerate(zip(xs, shapes)):
        t = torch.from_numpy(np.ascontiguousarray(x))
        out.append(t.movedim(-1, 1) if _is_cf(x.shape[1:], shape, f"input {i}", channels_last) else t)
    return out


def run_torch(model: torch.nn.Module, source: str, xs: list[np.ndarray],
              channels_last: bool = False) -> list[torch.Tensor]:
    with torch.no_grad():
        out = model(*torch_inputs(source, xs, channels_last))
    return list(out) if isinstance(out, (list, tuple)) else [out]


def to_keras_layout(t: torch.Tensor, keras_out: np.ndarray, where: str, channels_last: bool) -> torch.Tensor:
    keras_shape, torch_shape = keras_out.shape[1:], tuple(t.shape[1:])
    return t.movedim(1, -1) if _is_cf(keras_shape, torch_shape, where, channels_last) else t


@dataclass
class Diff:
    max_abs: float
    max_rel: float  # max |t - k| / |k| over elements with k != 0 (as torch.testing reports it)
    scale: float  # max |k|

    def __str__(self) -> str:
        return f"max abs {self.max_abs:.3g}, max rel {self.max_rel:.3g} (output scale {self.scale:.3g})"


def diff(actual: torch.Tensor, expected: np.ndarray) -> Diff:
    a, e = actual.double().numpy(), np.asarray(expected, np.float64)
    d = np.abs(a - e)
    nz = e != 0
    rel = float(np.max(d[nz] / np.abs(e[nz]))) if nz.any() else 0.0
    return Diff(float(d.max()) if d.size else 0.0, rel, float(np.abs(e).max()) if e.size else 0.0)


def compare(torch_outs: list[torch.Tensor], keras_outs: list[np.ndarray], *, rtol: float, atol: float,
            label: str, channels_last: bool = False) -> list[Diff]:
    """assert_close per output (after moving channels-first outputs back), printing the diffs."""
    assert len(torch_outs) == len(keras_outs), f"{label}: {len(torch_outs)} outputs vs Keras {len(keras_outs)}"
    diffs = []
    for i, (t, k) in enumerate(zip(torch_outs, keras_outs)):
        t = to_keras_layout(t, k, f"{label} output {i}", channels_last)
        d = diff(t, k)
        print(f"{label} output {i}: {d}")
        torch.testing.assert_close(t, torch.from_numpy(np.array(k)), rtol=rtol, atol=atol)
        diffs.append(d)
    return diffs


def check_file(path: Path, keras_model: Any, xs: list[np.ndarray], *, rtol: float, atol: float,
               label: str, **options: Any) -> tuple[list[Diff], Any]:
    """Convert ``path`` in memory, run it on ``xs`` and compare with ``keras_model`` on the same."""
    model, conversion = convert_in_memory(path, **options)
    channels_last = bool(options.get("channels_last"))
    outs = run_torch(model, conversion.model_source, xs, channels_last)
    diffs = compare(outs, keras_outputs(keras_model, xs), rtol=rtol, atol=atol, label=label,
                    channels_last=channels_last)
    return diffs, conversion


# --- generated code quality ---------------------------------------------------------------------------

ROOT = Path(__file__).resolve().parents[2]
_ISOLATED = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("generated_model", sys.argv[1])
module = importlib.util.module_from_spec(spec)
spec.loader.exec_module(module)
model = module.build_model()
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("tf2torch", "tensorflow", "keras", "tf_keras"))
print("HEAVY", heavy)
print("PARAMS", sum(p.numel() for p in model.parameters()))
"""


def ruff_check(source: str, path: Path) -> None:
    """The generated file passes ``ruff check`` under the project's own rule set."""
    path.write_text(source, encoding="utf-8")
    ruff = Path(sys.executable).with_name("ruff")
    cmd = [str(ruff), "check", "--no-cache", "--config", str(ROOT / "pyproject.toml"), str(path)]
    result = subprocess.run(cmd, capture_output=True, text=True, cwd=path.parent)
    assert result.returncode == 0, f"ruff check failed on generated {path.name}:\n{result.stdout}{result.stderr}"


def import_isolated(source: str, path: Path) -> None:
    """``python -I`` imports the generated file and calls build_model() without tf2torch/TF/Keras."""
    path.write_text(source, encoding="utf-8")
    result = subprocess.run([sys.executable, "-I", "-c", _ISOLATED, str(path)], capture_output=True, text=True,
                            cwd=path.parent, timeout=300)
    assert result.returncode == 0, f"importing generated {path.name} failed:\n{result.stderr[-3000:]}"
    assert "HEAVY []" in result.stdout, f"generated {path.name} imported heavy modules: {result.stdout}"
