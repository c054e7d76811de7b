"""Keras-vs-PyTorch harness for the converter tests: randomise a Keras model, save it, convert it in
memory, run both on the same seeded inputs and compare.

Every weight is randomised (seeded numpy), BatchNorm statistics included, so a converter that drops
or misorders a weight, or reads mean for variance, shows up as a numeric difference.

Layouts: the generated model takes channels-first images (rank >= 4) and, for a rank-3 input whose
first consumer is a Conv1D/pool, channels-first sequences (Keras layout throughout with
``channels_last=True``); the conversion report's ``interface`` states each input's and output's layout,
which the harness follows and checks against the shapes.
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from tests.support.layouts import as_interface, to_keras_layout
from tests.support.numerics import check, float64_drift
from tests.support.weights import LAYERS, randomise_keras
from tests.util import convert_in_memory


def randomise(model: Any, seed: int = 0) -> None:
    """Seeded random values for every float weight of a Keras 2 or Keras 3 model (``tests/support/weights``:
    kernels N(0, 1/fan_in) so deep models stay O(1), BatchNorm gamma and variances in 0.5..1.5)."""
    randomise_keras(model, seed, LAYERS)


def inputs_for(model: Any, seed: int = 1, batch: int = 2,
               sizes: dict[int, tuple] | None = None) -> list[np.ndarray]:
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


def _layouts(conversion: Any, side: str) -> list[str]:
    """The generated model's interface layouts ("channels_first" / "keras"), as the report states them."""
    return [entry["layout"] for entry in conversion.report.interface[side]]


def run_torch(model: torch.nn.Module, conversion: Any, xs: list[np.ndarray]) -> list[torch.Tensor]:
    layouts = _layouts(conversion, "inputs")
    assert len(layouts) == len(xs), (layouts, [x.shape for x in xs])
    with torch.no_grad():
        out = model(*(as_interface(x, layout) for x, layout in zip(xs, layouts)))
    return list(out) if isinstance(out, (list, tuple)) else [out]


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


def compare(torch_outs: list[torch.Tensor], keras_outs: list[np.ndarray], layouts: list[str], *, rtol: float,
            atol: float, label: str) -> list[Diff]:
    """assert_close per output (after moving channels-first outputs back), printing the diffs."""
    assert len(torch_outs) == len(keras_outs), f"{label}: {len(torch_outs)} outputs, Keras {len(keras_outs)}"
    diffs = []
    for i, (t, k, layout) in enumerate(zip(torch_outs, keras_outs, layouts, strict=True)):
        t = to_keras_layout(t, k, layout, f"{label} output {i}")
        d = diff(t, k)
        print(f"{label} output {i}: {d}")
        torch.testing.assert_close(t, torch.from_numpy(np.array(k)), rtol=rtol, atol=atol)
        diffs.append(d)
    return diffs


def check_controlled(model: torch.nn.Module, conversion: Any, xs: list[np.ndarray], expected: list[np.ndarray],
                     label: str, outs: list[torch.Tensor] | None = None) -> None:
    """The project's rule (tests/support/numerics.py) per output: within 1e-6 relative, or within a few times
    the converted model's own float32 rounding (its float64 drift on the same inputs). ``outs``: the model's
    outputs on ``xs`` when the caller has them already."""
    feed = [as_interface(x, layout) for x, layout in zip(xs, _layouts(conversion, "inputs"), strict=True)]
    outs = run_torch(model, conversion, xs) if outs is None else outs
    for i, (t, k, layout) in enumerate(zip(outs, expected, _layouts(conversion, "outputs"), strict=True)):
        drift = float64_drift(model, feed, lambda out, i=i: out[i] if isinstance(out, (list, tuple)) else out)
        check(to_keras_layout(t, k, layout, f"{label} output {i}"), k, f"{label} output {i}", drift)


def check_file(path: Path, keras_model: Any, xs: list[np.ndarray], *, rtol: float, atol: float,
               label: str, controlled: bool = False, **options: Any) -> tuple[list[Diff], Any]:
    """Convert ``path`` in memory, run it on ``xs`` and compare with ``keras_model`` on the same: element-wise
    (``rtol``/``atol``) and by the project's rule (tests/support/numerics.py), 1e-6 relative over each output, or
    with ``controlled`` within a few times the model's own float64 drift (``check_controlled``: deep nets)."""
    model, conversion = convert_in_memory(path, **options)
    diffs = check_converted(model, conversion, keras_outputs(keras_model, xs), xs, rtol=rtol, atol=atol,
                            label=label, controlled=controlled)
    if options.get("channels_last"):
        assert set(_layouts(conversion, "inputs") + _layouts(conversion, "outputs")) == {"keras"}
    return diffs, conversion


def check_converted(model: torch.nn.Module, conversion: Any, expected: list[np.ndarray], xs: list[np.ndarray], *,
                    rtol: float, atol: float, label: str, controlled: bool = False) -> list[Diff]:
    """``check_file`` for a model converted already, against Keras's ``expected`` outputs on ``xs``."""
    outs = run_torch(model, conversion, xs)
    diffs = compare(outs, expected, _layouts(conversion, "outputs"), rtol=rtol, atol=atol, label=label)
    if controlled:
        check_controlled(model, conversion, xs, expected, label, outs)
    else:
        for i, (t, k, layout) in enumerate(zip(outs, expected, _layouts(conversion, "outputs"), strict=True)):
            check(to_keras_layout(t, k, layout, f"{label} output {i}"), k, f"{label} output {i}")
    return diffs


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
    assert result.returncode == 0, f"ruff failed on {path.name}:\n{result.stdout}{result.stderr}"


def import_isolated(source: str, path: Path) -> None:
    """``python -I`` imports the generated file and calls build_model() without tf2torch/TF/Keras."""
    path.write_text(source, encoding="utf-8")
    result = subprocess.run([sys.executable, "-I", "-c", _ISOLATED, str(path)], capture_output=True,
                            text=True, cwd=path.parent, timeout=300)
    assert result.returncode == 0, f"importing generated {path.name} failed:\n{result.stderr[-3000:]}"
    assert "HEAVY []" in result.stdout, f"generated {path.name} imported heavy modules: {result.stdout}"


# --- keras.ops models with a sequence input and an image input ----------------------------------------

def save_seq_image(keras: Any, path: Path, seq: Any, image: Any, outputs: list) -> tuple[Path, dict, list]:
    """Save ``Model([seq, image], outputs)`` and run the reloaded file on seeded N(0, 1) inputs:
    (path, inputs by name, Keras's outputs)."""
    keras.Model([seq, image], outputs).save(path)
    rng = np.random.default_rng(0)
    x = {t.name: rng.normal(size=(2, *t.shape[1:])).astype("float32") for t in (seq, image)}
    expected = [np.asarray(o) for o in keras.saving.load_model(path)([x[seq.name], x[image.name]])]
    return path, x, expected


def check_seq_image(path: Path, x: dict, expected: list, names: list[str]) -> None:
    """The converted model on the same inputs (the image channels-first) matches each output to 1e-6."""
    from tests.util import to_tf_layout, to_torch_layout

    model, _ = convert_in_memory(path)
    with torch.no_grad():
        got = model(torch.from_numpy(x["seq"]), to_torch_layout(x["image"]))
    for name, g, e in zip(names, got, expected, strict=True):
        error = float(np.abs(to_tf_layout(g) - e).max()) if e.size else 0.0
        print(f"{name}: shape {tuple(e.shape)}, max abs error {error:.2e}")
        assert to_tf_layout(g).shape == e.shape and error <= 1e-6
