"""The graph fixtures (``fixtures/graphs``, written by ``fixtures/make_fixtures.py graphs`` with TF): a
frozen GraphDef and a ``tf.Module`` SavedModel, converted with the CLI, run, and compared with the
outputs TF computed when it wrote them. No TensorFlow is needed to run these."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tests.test_hostile import run_cli
from tests.tfgraph.graphs import run_generated
from tf2torch import api

GRAPHS = Path(__file__).resolve().parents[2] / "fixtures" / "graphs"


def _rel(got: np.ndarray, expected: np.ndarray) -> float:
    assert got.shape == expected.shape, (got.shape, expected.shape)
    return float(np.abs(got - expected).max() / np.abs(expected).max())


def test_frozen_graph_fixture(tmp_path):
    out = tmp_path / "out"
    result = run_cli("convert", GRAPHS / "frozen.pb", "-o", out, "-q")
    assert result.exit_code == 0 and result.stdout == "" and result.stderr == "", result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["model.py", "model.safetensors", "report.json"]
    io = np.load(GRAPHS / "io.npz")
    rel = _rel(run_generated(api.convert(GRAPHS / "frozen.pb", None, dry_run=True), io["input"]), io["output"])
    print(f"fixtures/graphs/frozen.pb: max rel err vs TF {rel:.2e}")
    assert rel <= 1e-5


def test_text_graph_fixture():
    io = np.load(GRAPHS / "io.npz")
    rel = _rel(run_generated(api.convert(GRAPHS / "frozen.pbtxt", None, dry_run=True), io["input"]), io["output"])
    print(f"fixtures/graphs/frozen.pbtxt: max rel err vs TF {rel:.2e}")
    assert rel <= 1e-5


def test_module_savedmodel_fixture():
    io = np.load(GRAPHS / "module_io.npz")
    result = api.convert(GRAPHS / "module", None, dry_run=True)
    logits, pooled = run_generated(result, io["input"])  # outputs in key order: logits, pooled
    errors = _rel(logits, io["logits"]), _rel(pooled, io["pooled"])
    print(f"fixtures/graphs/module: max rel err vs TF logits {errors[0]:.2e}, pooled {errors[1]:.2e}")
    assert max(errors) <= 1e-5
    # sources are object paths (the tf.Module attributes); modules are named after the TF names
    assert {e.source for e in result.report.by_status("mapped")} == {"kernel", "dense"}
    assert "self.conv = nn.Conv2d(" in result.model_source and "self.fc = nn.Linear(" in result.model_source
