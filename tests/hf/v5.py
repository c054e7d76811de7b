"""Run ``load_in_v5.py`` in ``.venv-hf5`` (transformers 5, no TF) over many converted repos at once, and
judge what it printed: no key missing, unexpected or mismatched, and every output within the rule of
``tests.support.numerics`` (1e-6, or 4x the model's own float64 drift).

transformers 5 cannot share a venv with 4.57 (the test extra's pin, needed to build the TF repos), so the
loading runs in a subprocess; one subprocess for all repos (its imports cost seconds, each repo ~0.1 s).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.numerics import BOUND, FACTOR

ROOT = Path(__file__).resolve().parents[2]
V5_PYTHON = ROOT / ".venv-hf5" / "bin" / "python"
SCRIPT = Path(__file__).with_name("load_in_v5.py")


def require_v5_venv() -> Path:
    if V5_PYTHON.is_file():
        return V5_PYTHON
    if os.environ.get("TF2TORCH_REQUIRE_TF") == "1":
        pytest.fail(f"TF2TORCH_REQUIRE_TF=1 but {V5_PYTHON} is missing; create it with: make hf5-venv")
    pytest.skip("no .venv-hf5 with transformers 5 (make hf5-venv)")


def load_all(outs: dict[str, Path]) -> dict[str, Any]:
    """``load_in_v5.py`` over every OUT in one transformers 5 process; its JSON, per case name."""
    python = require_v5_venv()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # only the v5 venv's packages
    env["OMP_NUM_THREADS"] = "1"  # tiny tensors: a second thread on a busy 2-core machine only spins
    done = subprocess.run([str(python), str(SCRIPT), *map(str, outs.values())], capture_output=True, text=True,
                          env=env, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["transformers"].startswith("5."), result["transformers"]
    return {"transformers": result["transformers"], **{name: result["repos"][str(out)] for name, out in outs.items()}}


def judge(name: str, got: dict[str, Any], version: str) -> list[str]:
    """Print the case's figures; the failures (empty when it passes)."""
    if "exception" in got:
        print(f"{name}: transformers {version}: {got['exception']}")
        return [f"{name}: {got['exception']}"]
    failures = []
    info = {k: v for k, v in got["loading_info"].items() if v}
    if info:
        failures.append(f"{name}: from_pretrained reports {info}")
    figures = []
    for output, numbers in got["outputs"].items():
        if "exception" in numbers:
            figures.append(f"{output} {numbers['exception']}")
            failures.append(f"{name}: {output}: {numbers['exception']}")
            continue
        error, drift = numbers["error"], numbers["drift"]  # drift None: not needed, or no float64 run
        bound = BOUND if drift is None else max(BOUND, FACTOR * drift)
        control = "no float64 control" if drift is None else f"float64 drift {drift:.1e}"
        figures.append(f"{output} {error:.1e}" + (f" ({control})" if error > BOUND else ""))
        if not error <= bound:  # not `>`: a NaN fails too
            failures.append(f"{name}: {output} error {error:.2e} > {bound:.1e} ({control})")
    if not got["outputs"]:
        failures.append(f"{name}: no output compared")
    print(f"{name}: transformers {version} {got['class']}: {', '.join(figures)}"
          + (f"; loading info {info}" if info else ""))
    return failures
