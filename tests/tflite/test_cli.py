"""The committed TFLite fixtures (fixtures/tflite: the Keras CNN through TF's converter, float32 and float16
weights, with the interpreter's outputs) at the command line and through the API, and hostile files: a
truncated file, forged offsets, operators nothing converts, quantized tensors. No TensorFlow needed."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import pytest

from tests.support.numerics import check, float64_drift
from tests.test_hostile import refuses_without_output, run_cli
from tests.util import convert_in_memory, to_torch_layout
from tf2torch import api
from tf2torch.errors import FormatError
from tf2torch.readers.tflite import schema as S
from tf2torch.readers.tflite.flatbuf import Table, root

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "tflite"


@pytest.mark.parametrize("name", ["cnn", "cnn_fp16"])
def test_fixture_matches_the_interpreter(name):
    import torch

    model, result = convert_in_memory(FIXTURES / f"{name}.tflite")
    io = np.load(FIXTURES / "io.npz")
    feed = [to_torch_layout(io["input"])]
    with torch.no_grad():
        out = model(*feed)
    check(out, io[name], f"{name}.tflite", float64_drift(model, feed))
    counts = result.report.counts()
    assert counts["mapped"] == 10 and counts["unexpected"] == 0 and counts["missing"] == 0, counts


def test_convert_writes_the_model(tmp_path):
    out = tmp_path / "out"
    result = run_cli("convert", FIXTURES / "cnn.tflite", "-o", out)
    assert result.exit_code == 0, result.stderr
    assert {p.name for p in out.iterdir()} >= {"model.py", "model.safetensors", "report.json"}
    report = json.loads((out / "report.json").read_text())
    assert report["interface"]["inputs"][0]["name"] == "image"  # the signature's name, channels first
    assert report["interface"]["inputs"][0]["layout"] == "channels_first"
    source = (out / "model.py").read_text()
    assert "nn.ZeroPad2d" in source or "padding=(1, 1)" in source  # SAME through the one SAME policy


def test_channels_last(tmp_path):
    result = run_cli("convert", FIXTURES / "cnn.tflite", "-o", tmp_path / "out", "--channels-last")
    assert result.exit_code == 0, result.stderr
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["interface"]["inputs"][0]["layout"] != "channels_first"


def test_layers_lists_tflite_ops():
    result = run_cli("layers", "--tflite-ops")
    ops = result.output.split()
    assert result.exit_code == 0 and {"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "DEQUANTIZE"} <= set(ops)
    assert "CUSTOM" not in ops


def test_inspect_lists_operators():
    result = run_cli("inspect", FIXTURES / "cnn_fp16.tflite")
    assert result.exit_code == 0 and "DEQUANTIZE 10" in result.output and "(tflite)" in result.output


def _tables(data: bytearray) -> tuple[Table, list[Table], list[Table]]:
    """The model's root, its operator codes and subgraph 0's tensors (this reader's own tables)."""
    top = root(memoryview(data), "test")
    graph = top.tables(S.MODEL["subgraphs"], "subgraphs")[0]
    return top, top.tables(S.MODEL["operator_codes"], "codes"), graph.tables(S.SUBGRAPH["tensors"], "tensors")


def _put(data: bytearray, table: Table, slot: int, fmt: str, value: int) -> None:
    at = table._field(slot)
    assert at, f"field {slot} absent"
    struct.pack_into("<" + fmt, data, at, value)


def _set_op(data: bytearray, code_table: Table, code: int) -> None:
    if code_table.has(S.OPERATOR_CODE["builtin_code"]):
        _put(data, code_table, S.OPERATOR_CODE["builtin_code"], "i", code)
    if code_table.has(S.OPERATOR_CODE["deprecated_builtin_code"]):
        _put(data, code_table, S.OPERATOR_CODE["deprecated_builtin_code"], "b", min(code, 127))


def test_truncated(tmp_path):
    data = (FIXTURES / "cnn.tflite").read_bytes()
    for size in (0, 7, 40, len(data) // 2, len(data) - 9):
        path = tmp_path / f"cut{size}.tflite"
        path.write_bytes(data[:size])
        refuses_without_output(tmp_path, path, str(path))
        with pytest.raises(FormatError):
            api.read(path)


def test_not_a_tflite_file(tmp_path):
    path = tmp_path / "model.tflite"
    path.write_bytes(b"\x10\x00\x00\x00ABCD" + bytes(64))
    refuses_without_output(tmp_path, path, "TFL3")


@pytest.mark.parametrize("where", ["root", "vtable", "buffer"])
def test_forged_offsets(tmp_path, where):
    data = bytearray((FIXTURES / "cnn.tflite").read_bytes())
    top, _, tensors = _tables(data)
    if where == "root":
        struct.pack_into("<I", data, 0, len(data) + 100)
    elif where == "vtable":
        struct.pack_into("<i", data, top.pos, -len(data))  # the vtable would lie past the end
    else:
        weight = next(t for t in tensors if t.scalar(S.TENSOR["buffer"], "I"))
        _put(data, weight, S.TENSOR["buffer"], "I", 10**6)  # a buffer index past the buffers
    path = tmp_path / "forged.tflite"
    path.write_bytes(bytes(data))
    refuses_without_output(tmp_path, path, "corrupt")


def test_unsupported_operators_named_all_at_once(tmp_path):
    data = bytearray((FIXTURES / "cnn.tflite").read_bytes())
    _, codes, _ = _tables(data)
    names = [S.BUILTIN_OPS[max(int(c.scalar(0, "b")), int(c.scalar(3, "i")))] for c in codes]
    _set_op(data, codes[names.index("CONV_2D")], S.BUILTIN_OPS.index("TOPK_V2"))
    _set_op(data, codes[names.index("MAX_POOL_2D")], S.BUILTIN_OPS.index("CUMSUM"))  # > 127: builtin_code only
    path = tmp_path / "ops.tflite"
    path.write_bytes(bytes(data))
    line = refuses_without_output(tmp_path, path, "2 TFLite operator type(s)", "TOPK_V2", "CUMSUM",
                                  "--tflite-ops")
    assert "conv1" in line  # the operators are named after their outputs


def test_quantized_tensors_refused_by_name(tmp_path):
    data = bytearray((FIXTURES / "cnn.tflite").read_bytes())
    _, _, tensors = _tables(data)
    # (a float32 type is the schema default, so not stored: the SHAPE op's int32 output carries the field)
    activation = next(t for t in tensors if t.string(S.TENSOR["name"]).endswith("flatten_1/Shape"))
    _put(data, activation, S.TENSOR["type"], "b", 9)  # int8
    path = tmp_path / "int8.tflite"
    path.write_bytes(bytes(data))
    refuses_without_output(tmp_path, path, "integer activation tensor(s) without quantization parameters",
                           "flatten_1/Shape", "int8")


def test_weights_only_is_a_usage_error(tmp_path):
    result = run_cli("convert", FIXTURES / "cnn.tflite", "-o", tmp_path / "out", "--weights-only")
    assert result.exit_code == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "--weights-only" in result.stderr and not (tmp_path / "out").exists()


def test_full_integer_fixture_matches_the_interpreter():
    """The fixture CNN in full-integer int8 (TF's converter, a seeded representative dataset): the emulation
    of LiteRT's integer kernels gives the interpreter's int8 output, every value (no TensorFlow needed)."""
    import torch

    model, result = convert_in_memory(FIXTURES / "cnn_int8.tflite")
    io = np.load(FIXTURES / "io.npz")
    with torch.no_grad():
        out = model(to_torch_layout(io["input_int8"]))
    assert out.dtype == torch.int8
    equal = float(np.mean(out.numpy() == io["cnn_int8"]))
    print(f"cnn_int8.tflite: {equal:.1%} of {io['cnn_int8'].size} int8 outputs equal to the interpreter's")
    assert equal == 1.0, (out.numpy(), io["cnn_int8"])
    counts = result.report.counts()
    assert counts["missing"] == 0 and counts["unexpected"] == 0, counts


def test_metadata_names_in_the_report():
    """The file's metadata entries' names reach report.json's notes (docs/tflite.md, "What is read")."""
    _, result = convert_in_memory(FIXTURES / "cnn.tflite")
    assert any(n.startswith("TFLite metadata: ") and "min_runtime_version" in n for n in result.report.notes)
