"""The point of the mode: transformers 5, which has no TF classes, loads what tf2torch wrote and computes
TensorFlow's numbers. transformers 5 cannot share a venv with 4.57 (the test extra's pin, needed to build
the TF repos), so ``load_in_v5.py`` runs in ``.venv-hf5`` (``make hf5-venv``; ``make test`` creates it).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.hf.conftest import CASES
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


@pytest.mark.tf
def test_transformers_5_loads_every_converted_repo_and_computes_tf_numbers(converted):
    python = require_v5_venv()
    outs = {name: converted(name) for name in sorted(CASES)}
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # only the v5 venv's packages
    done = subprocess.run([str(python), str(SCRIPT), *map(str, outs.values())], capture_output=True, text=True,
                          env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["transformers"].startswith("5."), result["transformers"]
    failures = []
    for name, out in outs.items():
        got = result["repos"][str(out)]
        if "exception" in got:
            failures.append(f"{name}: {got['exception']}")
            continue
        info = {k: v for k, v in got["loading_info"].items() if v}
        bound = max(BOUND, FACTOR * got["drift"])
        print(f"{name}: transformers {result['transformers']} {got['class']}: max relative error "
              f"{got['error']:.2e} (bound {bound:.1e}, float64 drift {got['drift']:.2e}); loading info {info}")
        if info:
            failures.append(f"{name}: from_pretrained reports {info}")
        if got["error"] > bound:
            failures.append(f"{name}: error {got['error']:.2e} > {bound:.1e}")
    assert not failures, "; ".join(failures)
