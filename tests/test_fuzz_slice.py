"""A seeded slice of ``make fuzz`` for ``make test``: ~3,000 cases over every target, zero disallowed.

The fuzzer runs in a fresh interpreter (``python -m tests.fuzz``): its workers are forked, and forking
this pytest process, which may hold TensorFlow's threads, could deadlock them. Counts are per target
(roughly inverse to a case's cost), so the whole slice stays well under a minute on two cores. A
failure message carries each disallowed case's replay command, reproducer directory and traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fuzz_targets import TARGETS

ROOT = Path(__file__).resolve().parents[1]
SEED = 1  # `make fuzz` runs seed 0: the slice covers other cases
SLICE = {"proto": 300, "table": 400, "bundle": 400, "objectgraph": 300, "metagraph": 150, "graphdef": 300,
         "pbtxt": 200, "tf2graph": 150, "keras_config": 400,
         "keras_h5": 150, "keras_zip": 150, "savedmodel": 80, "detect": 200, "slicekey": 200, "strings": 200,
         "convert": 150, "tflite": 300, "task": 150}


def test_slice_covers_every_target():
    assert set(SLICE) == set(TARGETS)


@pytest.fixture(scope="module")
def slice_run(tmp_path_factory) -> dict:
    report = tmp_path_factory.mktemp("fuzz") / "fuzz.json"
    counts = ",".join(f"{name}={n}" for name, n in SLICE.items())
    proc = subprocess.run(
        [sys.executable, "-m", "tests.fuzz", "--seed", str(SEED), "--counts", counts, "--json", str(report),
         "--timeout", "10"],
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), "TF_CPP_MIN_LOG_LEVEL": "3"},
        capture_output=True, text=True, timeout=600)
    assert report.is_file(), proc.stdout[-4000:] + proc.stderr[-4000:]
    data = json.loads(report.read_text())
    data["stdout"] = proc.stdout
    return data


@pytest.mark.parametrize("target", list(SLICE), ids=list(SLICE))
def test_no_disallowed_outcome(slice_run, target):
    counts = slice_run["results"][target]
    assert sum(counts.values()) == SLICE[target], counts
    failures = [f for f in slice_run["failures"] if f["target"] == target]
    assert not failures, "\n\n".join(
        f"case {f['case']} (replay: python -m tests.fuzz --seed {SEED} --target {target} --case {f['case']}; "
        f"reproducer {f['repro']}):\n{f['detail']}" for f in failures)
