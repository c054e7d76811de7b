"""MediaPipe ``.task`` bundles: a zip built here from the committed fixtures (the Keras CNN through TF's
converter, float32 and float16 weights; one member stored, one deflated, plus a labels file), inspected,
converted whole (OUT/<name>/) and by ``--member``, each model held to the interpreter's outputs; hostile
zips refused in one line with nothing written. No TensorFlow needed."""

from __future__ import annotations

import json
import struct
import zipfile
from pathlib import Path

import numpy as np
import pytest

from tests.support.numerics import check
from tests.test_hostile import refuses_without_output, run_cli
from tests.util import load_source, to_torch_layout

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "tflite"


def _bundle(path: Path, members: dict[str, tuple[bytes, int]]) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        for name, (data, method) in members.items():
            zf.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), data, compress_type=method)
    return path


@pytest.fixture
def task(tmp_path):
    return _bundle(tmp_path / "cnns.task", {
        "cnn.tflite": ((FIXTURES / "cnn.tflite").read_bytes(), zipfile.ZIP_STORED),  # mapped in place
        "labels.txt": (b"a\nb\n", zipfile.ZIP_DEFLATED),
        "sub/cnn_fp16.tflite": ((FIXTURES / "cnn_fp16.tflite").read_bytes(), zipfile.ZIP_DEFLATED)})  # inflated


def _matches(out: Path, expected: str) -> None:
    import torch

    namespace = load_source((out / "model.py").read_text(), out / "model.py")
    model = namespace["load_model"]()
    io = np.load(FIXTURES / "io.npz")
    with torch.no_grad():
        got = model(to_torch_layout(io["input"]))
    check(got, io[expected], f"{out.name} from the bundle")


def test_inspect_lists_the_models(task):
    result = run_cli("inspect", task)
    print(result.output)
    assert result.exit_code == 0, result.stderr
    assert "2 TFLite models" in result.output and "model -> OUT/cnn_fp16" in result.output
    assert "labels.txt" in result.output and "DEQUANTIZE 10" in result.output  # the fp16 model's own summary
    data = json.loads(run_cli("inspect", task, "--json").output)
    assert sorted(data["models"]) == ["cnn", "cnn_fp16"]


def test_convert_every_model(task, tmp_path):
    out = tmp_path / "out"
    result = run_cli("convert", task, "-o", out)
    assert result.exit_code == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == ["cnn", "cnn_fp16"]
    _matches(out / "cnn", "cnn")
    _matches(out / "cnn_fp16", "cnn_fp16")


def test_convert_one_member(task, tmp_path):
    out = tmp_path / "out"
    result = run_cli("convert", task, "-o", out, "--member", "cnn_fp16")
    assert result.exit_code == 0, result.stderr
    assert (out / "model.py").is_file()
    _matches(out, "cnn_fp16")



def test_unknown_member_is_a_usage_error(task, tmp_path):
    result = run_cli("convert", task, "-o", tmp_path / "out", "--member", "nope")
    lines = result.stderr.strip().splitlines()
    assert result.exit_code == 2 and len(lines) == 1 and not (tmp_path / "out").exists(), result.stderr
    assert "no model 'nope'" in lines[0] and "sub/cnn_fp16.tflite" in lines[0], lines[0]


def test_member_is_a_usage_error_elsewhere(tmp_path):
    result = run_cli("convert", FIXTURES / "cnn.tflite", "-o", tmp_path / "out", "--member", "cnn")
    assert result.exit_code == 2 and "--member" in result.stderr and not (tmp_path / "out").exists()


def _cnn() -> bytes:
    return (FIXTURES / "cnn.tflite").read_bytes()


def _forge(path: Path, field: str, value: int) -> None:
    """Rewrite a field of the first central directory entry (a size no honest zip writer declares)."""
    data = bytearray(path.read_bytes())
    at = data.rfind(b"PK\x01\x02")
    offset = {"compress_size": 20, "file_size": 24}[field]
    struct.pack_into("<I", data, at + offset, value)
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("case", ["dotdot", "absolute", "bomb", "huge_stored", "truncated", "not_zip", "no_model",
                                  "corrupt_model"])
def test_hostile_bundles_refused(tmp_path, case):
    src = tmp_path / "src"
    src.mkdir()
    path = src / "bad.task"
    needle = {"dotdot": "not a relative path", "absolute": "not a relative path", "bomb": "zip bomb",
              "huge_stored": "corrupt", "truncated": "not a readable zip", "not_zip": "expected a MediaPipe task bundle",
              "no_model": "holds no TFLite model", "corrupt_model": "bad.task:m.tflite"}[case]
    if case == "dotdot":
        _bundle(path, {"../evil.tflite": (_cnn(), zipfile.ZIP_STORED)})
    elif case == "absolute":
        _bundle(path, {"/etc/evil.tflite": (_cnn(), zipfile.ZIP_STORED)})
    elif case == "bomb":  # 64 MB of zeros deflate to ~64 kB: a declared ratio beyond deflate's own limit is forged
        _bundle(path, {"m.tflite": (_cnn()[:8] + bytes(1 << 26), zipfile.ZIP_DEFLATED)})
        _forge(path, "compress_size", 1000)
    elif case == "huge_stored":
        _bundle(path, {"m.tflite": (_cnn(), zipfile.ZIP_STORED)})
        _forge(path, "compress_size", 1 << 30)
        _forge(path, "file_size", 1 << 30)
    elif case == "truncated":
        _bundle(path, {"m.tflite": (_cnn(), zipfile.ZIP_STORED)})
        path.write_bytes(path.read_bytes()[:-30])
    elif case == "not_zip":
        path.write_bytes(b"TFL3" + _cnn())
    elif case == "no_model":
        _bundle(path, {"labels.txt": (b"a\n", zipfile.ZIP_STORED)})
    else:  # a member that is a TFLite model with a forged root offset
        data = bytearray(_cnn())
        struct.pack_into("<I", data, 0, len(data) + 100)
        _bundle(path, {"m.tflite": (bytes(data), zipfile.ZIP_STORED)})
    line = refuses_without_output(tmp_path, path, needle)
    print(line)


def test_verify_of_a_bundle_is_a_usage_error(task, tmp_path):
    out = tmp_path / "out"
    assert run_cli("convert", task, "-o", out).exit_code == 0
    result = run_cli("verify", task, out / "cnn")
    assert result.exit_code == 2 and "verify runs one .tflite model" in result.stderr, result.stderr
