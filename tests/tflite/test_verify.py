"""``tf2torch verify model.tflite OUT``: the LiteRT interpreter (builtin kernels, every tensor kept) against
the converted model, per weighted operator and per output; a corrupted weight in OUT is found and its
operator named; no interpreter is refused in one line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.conftest import require_tf
from tests.test_hostile import run_cli
from tf2torch.cli import EXIT_ERROR, EXIT_MISMATCH, EXIT_OK

pytestmark = pytest.mark.tf
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "tflite"


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    """The committed fixture CNN (TF's converter: a conv with a fused RELU, a batch norm as MUL / ADD, a
    depthwise conv, a (3, 1) stride-2 SAME conv, a Dense) and its OUT."""
    require_tf()
    out = tmp_path_factory.mktemp("verify_tflite") / "out"
    result = run_cli("convert", FIXTURES / "cnn.tflite", "-o", out)
    assert result.exit_code == EXIT_OK, result.stderr
    return FIXTURES / "cnn.tflite", out


def _verify(path, out, tmp_path):
    report = tmp_path / "verify.json"
    result = run_cli("verify", path, out, "--report", report)
    print(result.output)
    return result, json.loads(report.read_text())


def test_verify_matches(converted, tmp_path):
    path, out = converted
    result, data = _verify(path, out, tmp_path)
    assert result.exit_code == EXIT_OK, result.output + result.stderr
    layers = [r for r in data["rows"] if r["kind"] == "layer"]
    kinds = {r["name"].split()[0] for r in layers}
    assert {"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"} <= kinds, kinds
    assert all(r["status"] == "ok" for r in layers if r["torch"]), layers  # every hooked layer compared
    assert any("'relu'" in r["note"] for r in layers)  # the fused activation applied to the conv's output


def test_verify_names_the_corrupted_operator(converted, tmp_path):
    from safetensors.numpy import load_file, save_file

    path, out = converted
    bad = tmp_path / "bad"
    bad.mkdir()
    for f in out.iterdir():
        (bad / f.name).write_bytes(f.read_bytes())
    weights = load_file(str(out / "model.safetensors"))
    # the first depthwise conv's kernel: every operator after it diverges too, the first is named
    key = next(k for k in weights if k.endswith("dw1_1.weight"))
    weights[key] = weights[key] * 1.01
    save_file(weights, str(bad / "model.safetensors"))
    result, data = _verify(path, bad, tmp_path)
    module = key.rpartition(".")[0]
    assert result.exit_code == EXIT_MISMATCH, result.output + result.stderr
    assert data["first_diverging"] == f"DEPTHWISE_CONV_2D {module}", data["first_diverging"]
    assert f"DEPTHWISE_CONV_2D {module}" in result.output


def test_no_interpreter_refused_in_one_line(converted, tmp_path, monkeypatch):
    path, out = converted
    monkeypatch.setitem(sys.modules, "tensorflow", None)  # `import tensorflow` raises ImportError
    monkeypatch.setitem(sys.modules, "ai_edge_litert", None)
    monkeypatch.setitem(sys.modules, "ai_edge_litert.interpreter", None)
    result = run_cli("verify", path, out)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.exit_code == EXIT_ERROR and len(lines) == 1, result.stderr
    assert "ai-edge-litert" in lines[0] and "tf2torch[tf]" in lines[0], lines[0]
