"""The command line: exit codes, one-line errors, quiet success, --json, no partial output."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from click.testing import CliRunner

from tf2torch.cli import EXIT_ERROR, EXIT_USAGE, main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture
def cli():
    runner = CliRunner()

    def invoke(*args):
        result = runner.invoke(main, [str(a) for a in args], catch_exceptions=False)
        assert "Traceback" not in result.output + result.stderr
        return result

    return invoke


def _one_line_error(result, *needles):
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("tf2torch: error:") or lines[0].startswith("Error:") or "Usage" in result.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.mark.parametrize("source", [
    "tf1/model.ckpt", "tf1_sharded/model.ckpt", "tf2/keras3/ckpt", "savedmodel/keras3", "keras3/cnn.keras",
    "keras3/cnn.h5", "keras3/cnn.weights.h5", "keras2/cnn.h5", "keras2/cnn_weights.h5", "wrn16_2",
], ids=lambda s: s.replace("/", "-"))
def test_inspect_every_fixture(cli, source):
    result = cli("inspect", FIXTURES / source)
    assert result.exit_code == 0, result.stderr
    assert any(line.startswith(f"{FIXTURES / source}") and "variables" in line for line in result.output.splitlines()) or "variables (" in result.output
    data = json.loads(cli("inspect", FIXTURES / source, "--json").output)
    assert data["totals"]["variables"] == len(data["variables"]) > 0


def test_inspect_reads_the_index_only(cli, tmp_path):
    """Inspect never touches tensor data: garbage data of the right size goes unnoticed (--check sees it)."""
    for f in (FIXTURES / "tf1").glob("model.ckpt.*"):
        shutil.copy(f, tmp_path)
    data = tmp_path / "model.ckpt.data-00000-of-00001"
    data.write_bytes(b"\xa5" * data.stat().st_size)
    result = cli("inspect", tmp_path / "model.ckpt.index")
    assert result.exit_code == 0 and "conv1/weights" in result.output
    assert cli("inspect", tmp_path / "model.ckpt.index", "--check").exit_code == EXIT_ERROR


def test_inspect_check_names_the_corrupt_tensor(cli, tmp_path):
    for f in (FIXTURES / "tf1").glob("model.ckpt.*"):
        shutil.copy(f, tmp_path)
    data = tmp_path / "model.ckpt.data-00000-of-00001"
    raw = bytearray(data.read_bytes())
    raw[len(raw) // 2] ^= 0xFF  # one flipped byte in the middle of the tensor data
    data.write_bytes(bytes(raw))
    result = cli("inspect", tmp_path / "model.ckpt", "--check")
    assert result.exit_code == EXIT_ERROR
    bad = [line for line in result.output.splitlines() if line.startswith("BAD ")]
    assert len(bad) == 1 and "CRC" in bad[0].upper()


def test_convert_is_quiet_and_writes_three_files(cli, tmp_path):
    out = tmp_path / "out"
    result = cli("convert", FIXTURES / "keras3/cnn.keras", "-o", out)
    assert result.exit_code == 0 and result.output == "" and result.stderr == ""
    assert sorted(p.name for p in out.iterdir()) == ["model.py", "model.safetensors", "report.json"]
    report = json.loads((out / "report.json").read_text())
    assert report["counts"]["mapped"] == 12 and report["counts"]["unexpected"] == 0


def test_existing_output_is_never_overwritten_without_force(cli, tmp_path):
    out = tmp_path / "out"
    assert cli("convert", FIXTURES / "keras3/cnn.keras", "-o", out).exit_code == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    result = cli("convert", FIXTURES / "keras2/cnn.h5", "-o", out)
    assert result.exit_code == EXIT_ERROR
    _one_line_error(result, "--force")
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    assert cli("convert", FIXTURES / "keras2/cnn.h5", "-o", out, "--force").exit_code == 0
    assert (out / "model.safetensors").read_bytes() != before["model.safetensors"]
    assert [p.name for p in tmp_path.iterdir()] == ["out"]  # no staging directory left behind


def test_dry_run_writes_nothing_and_prints_the_plan(cli, tmp_path):
    out = tmp_path / "out"
    result = cli("convert", FIXTURES / "tf1/model.ckpt", "-o", out, "--dry-run", "--weights-only")
    assert result.exit_code == 0 and not out.exists()
    assert "conv1/weights -> conv1.weight" in result.output and "(H, W, I, O) -> (O, I, H, W)" in result.output


def test_json_report(cli, tmp_path):
    result = cli("convert", FIXTURES / "tf1/model.ckpt", "-o", tmp_path / "o", "--json", "--weights-only")
    data = json.loads(result.output)
    assert data["mode"] == "bare" and data["counts"]["skipped"] > 0


def test_pt_format_loads_weights_only(cli, tmp_path):
    out = tmp_path / "out"
    assert cli("convert", FIXTURES / "keras3/cnn.keras", "-o", out, "--format", "pt").exit_code == 0
    state = torch.load(out / "model.pt", weights_only=True)
    assert "conv1.weight" in state and state["conv1.weight"].shape == (8, 3, 3, 3)


def test_generated_model_runs_from_the_output_directory(tmp_path):
    """model.py + weights in OUTDIR reproduce Keras, in a fresh interpreter that imports only torch."""
    out = tmp_path / "out"
    CliRunner().invoke(main, ["convert", str(FIXTURES / "keras3/cnn.keras"), "-o", str(out)])
    code = (
        "import sys, numpy as np, torch, model\n"
        "io = np.load(sys.argv[1])\n"
        "y = model.load_model()(torch.from_numpy(io['input']).permute(0, 3, 1, 2)).detach().numpy()\n"
        "print(float(np.abs(y - io['output']).max()))\n"
        "assert not any(m.split('.')[0] in ('tf2torch', 'tensorflow', 'keras') for m in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(FIXTURES / "keras3/io.npz")], cwd=out,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    diff = float(proc.stdout.strip())
    print(f"generated model vs Keras: max abs diff {diff:.2e}")
    assert diff <= 1e-5


def _text_h5(p):
    (p / "text.h5").write_text("hello")
    return p / "text.h5"


def _empty_dir(p):
    (p / "empty").mkdir()
    return p / "empty"


def _garbage_index(p):
    (p / "junk.index").write_bytes(b"\x00" * 100)
    return p / "junk"


@pytest.mark.parametrize("make, needle", [
    (lambda p: p / "missing.ckpt", "no such file"),
    (_text_h5, "HDF5"),
    (_empty_dir, "empty"),
    (_garbage_index, "junk.index"),
], ids=["missing", "text-named-h5", "empty-dir", "garbage-index"])
def test_bad_inputs_are_one_line_errors(cli, tmp_path, make, needle):
    result = cli("convert", make(tmp_path), "-o", tmp_path / "out")
    assert result.exit_code == EXIT_ERROR
    _one_line_error(result, needle)
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("args", [
    ["convert", "fixtures/keras3/cnn.keras"],
    ["convert", "fixtures/keras3/cnn.keras", "-o", "x", "--input-shape", "1,three"],
    ["convert", "fixtures/keras3/cnn.keras", "-o", "x", "--format", "npz"],
    ["frobnicate"],
], ids=["no-output", "bad-shape", "bad-format", "unknown-command"])
def test_usage_errors_exit_2(cli, args):
    assert cli(*args).exit_code == EXIT_USAGE


def test_python_m_entry_point_and_internal_errors_have_no_traceback(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "tf2torch", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0 and "convert" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "tf2torch", "convert", str(tmp_path / "nope"), "-o",
                           str(tmp_path / "o")], capture_output=True, text=True)
    assert proc.returncode == EXIT_ERROR and "Traceback" not in proc.stderr
    assert proc.stderr.count("\n") == 1


def test_input_layout_docstring_matches_interface(tmp_path):
    out = tmp_path / "o"
    CliRunner().invoke(main, ["convert", str(FIXTURES / "keras3/cnn.keras"), "-o", str(out)])
    report = json.loads((out / "report.json").read_text())
    assert report["interface"]["inputs"] == [{"name": "image", "keras_shape": [16, 16, 3], "layout": "channels_first"}]
    assert "image: (N, 3, 16, 16)" in (out / "model.py").read_text()
    assert np.load(FIXTURES / "keras3/io.npz")["input"].shape[1:] == (16, 16, 3)


def test_layers_lists_keras_classes_and_tf_ops(cli):
    """`tf2torch layers`: the Keras classes (not the internal ones lowered graphs use); --tf-ops: the
    TF op types a graph may hold, every one with a converter or read by the walk itself."""
    keras = cli("layers")
    assert keras.exit_code == 0
    names = keras.output.split()
    assert {"Conv2D", "EinsumDense", "GroupQueryAttention", "TimeDistributed"} <= set(names)
    assert not [n for n in names if n.startswith("tf2torch>")]
    ops = cli("layers", "--tf-ops")
    assert ops.exit_code == 0
    assert {"Conv2D", "FusedBatchNormV3", "StatefulPartitionedCall", "Einsum", "VarHandleOp"} <= set(ops.output.split())
    hub = cli("layers", "--keras-hub")
    assert hub.exit_code == 0
    assert {"BertBackbone", "GemmaBackbone", "ResNetBackbone"} <= set(hub.output.split())
    assert "keras_hub>TransformerEncoder" in names
