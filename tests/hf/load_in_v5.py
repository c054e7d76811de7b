"""Load tf2torch's converted repositories with transformers 5 (no TF classes there) and print what happened.

Run in a venv with transformers 5 (``make hf5-venv``): ``python tests/hf/load_in_v5.py OUT [OUT ...]``,
each OUT a converted repository with ``inputs.npz`` and ``expected.npz`` (TF's outputs by field name)
beside it. One process loads them all: transformers 5 and torch are imported once. Prints one JSON
object: per OUT, the transformers version, ``from_pretrained``'s loading info and, per output, the
relative error against TF's and, where an error exceeds 1e-6, the model's own float64 drift
(``tests.support.numerics``, imported from the repository root; None when not measured), or the
exception raised. It judges nothing: the test that runs it does.
"""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch
import transformers

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: tests.support
from tests.support.numerics import BOUND, rel_error  # noqa: E402


def field(output: Any, name: str) -> Any:
    for part in name.split("."):
        output = output[part] if isinstance(output, dict) else getattr(output, part)
    return output


def run(model: Any, inputs: dict[str, np.ndarray], names: list[str], dtype: torch.dtype | None = None
        ) -> dict[str, np.ndarray]:
    feed = {k: torch.from_numpy(v) for k, v in inputs.items()}
    if dtype is not None:
        feed = {k: v.to(dtype) if v.is_floating_point() else v for k, v in feed.items()}
    with torch.no_grad():
        output = model(**feed)
    return {name: field(output, name).double().numpy() for name in names}


def compare(actual: np.ndarray, expected: np.ndarray, wide: np.ndarray | None) -> dict[str, Any]:
    if actual.shape != expected.shape:  # one output of another shape: said, and the others still compared
        return {"exception": f"shape {actual.shape}, TF's is {expected.shape}"}
    return {"error": rel_error(actual, expected), "drift": None if wide is None else rel_error(wide, actual)}


def load(out: Path) -> dict[str, Any]:
    try:
        architecture = json.loads((out / "config.json").read_text())["architectures"][0]
        model, info = getattr(transformers, architecture).from_pretrained(out, output_loading_info=True)
        model.eval()
        inputs = dict(np.load(out.parent / "inputs.npz"))
        expected = dict(np.load(out.parent / "expected.npz"))
        actual = run(model, inputs, list(expected))
        wide: dict[str, np.ndarray] = {}
        over = any(a.shape == expected[n].shape and not rel_error(a, expected[n]) <= BOUND for n, a in actual.items())
        if over:  # the float64 control costs a copy and a run: only where an error needs explaining
            try:
                wide = run(copy.deepcopy(model).double(), inputs, list(expected), torch.float64)
            except Exception:  # a class that cannot run in float64 (XGLM in 5.x): no control, 1e-6 holds
                wide = {}
        outputs = {name: compare(actual[name], expected[name], wide.get(name)) for name in expected}
        return {"class": architecture, "loading_info": {k: sorted(map(str, v)) for k, v in info.items()},
                "outputs": outputs}
    except Exception as exc:  # reported, not raised: the test prints every repo's outcome at once
        return {"exception": f"{type(exc).__name__}: {' '.join(str(exc).split())[:500]}"}


def main(outs: list[str]) -> None:
    result = {"transformers": transformers.__version__, "torch": torch.__version__,
              "repos": {out: load(Path(out)) for out in outs}}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main(sys.argv[1:])
