"""Integer-quantized TFLite models made by TF's own converter (seeded weights, a seeded representative
dataset), against the LiteRT interpreter's builtin kernels without delegates:

* dynamic-range ("hybrid") int8: the emulation of LiteRT's on-the-fly input quantization under the error
  rule, with the XNNPACK delegate's and the dequantized float model's distances printed beside it;
* full-integer int8: refused by default (tests/tflite/test_models.py), converted with ``--dequantize``
  into the float model, whose distance from integer inference is printed in quantization steps;
* files rewritten with TF's flatbuffer object API: symmetric input quantization (the option TF's converter
  leaves off), and a per-tensor hybrid convolution, which is refused by name.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from tests.support.numerics import check, float64_drift, rel_error
from tests.tflite.models import input_shapes, interpret, make_tflite
from tests.util import convert_in_memory, to_tf_layout, to_torch_layout

pytestmark = pytest.mark.tf
FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("quantized")
    return {"hybrid": make_tflite(folder, "hybrid", quantize="dynamic_range", seed=2),
            "full_integer": make_tflite(folder, "hybrid", quantize="full_integer", seed=2)}


def _run(model: torch.nn.Module, xs: list[np.ndarray]) -> list[np.ndarray]:
    with torch.no_grad():
        out = model(*[to_torch_layout(x) for x in xs])
    return [to_tf_layout(o) for o in (out if isinstance(out, tuple) else (out,))]


def _by_signature(result, outs: list[np.ndarray]) -> list[np.ndarray]:
    """The model's outputs in the interpreter's order (by signature key)."""
    names = [o["name"] for o in result.report.interface["outputs"]]
    return [outs[i] for i in sorted(range(len(names)), key=lambda i: names[i])]


def _inputs(path: Path, batch: int = 3) -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    return [rng.normal(size=(batch, *shape[1:])).astype(np.float32) for shape in input_shapes(path)]


def _hybrid_case(path: Path, label: str) -> None:
    model, result = convert_in_memory(path)
    counts = result.report.counts()
    assert counts["missing"] == counts["unexpected"] == counts["mismatched"] == 0, counts
    source = result.model_source
    assert "TFLiteHybridConv2d(" in source and "TFLiteHybridLinear(" in source
    int8 = [p for p in result.plans if p.dtype.name == "int8"]
    assert len(int8) == 6, [p.key for p in int8]  # 3 convs, 3 fully-connected: kept as the file's integers
    xs = _inputs(path)  # batch 3: each row / item quantized with its own scale
    expected = interpret(path, xs)
    xnnpack = interpret(path, xs, xnnpack=True)
    outs = _by_signature(result, _run(model, xs))
    dequantized, _ = convert_in_memory(path, dequantize=True)
    floats = _by_signature(result, _run(dequantized, xs))
    for k, (out, ref) in enumerate(zip(outs, expected)):
        drift = float64_drift(model, [to_torch_layout(x) for x in xs],
                              lambda o, k=k: _by_signature(result, list(o) if isinstance(o, tuple) else [o])[k])
        error = check(out, ref, f"{label} output {k} (emulation vs reference kernels)", drift)
        far = rel_error(floats[k], ref)
        print(f"{label} output {k}: XNNPACK vs reference kernels {rel_error(xnnpack[k], ref):.2e}; "
              f"the --dequantize float model vs reference kernels {far:.2e}")
        assert far > 10 * max(error, 1e-7)  # the emulation is what makes the difference: a control


def test_dynamic_range_matches_the_reference_kernels(files):
    """Asymmetric input quantization (what TF's converter writes), per-channel weights everywhere."""
    _hybrid_case(files["hybrid"], "hybrid (asymmetric inputs)")


def test_symmetric_input_quantization(files, tmp_path):
    """FULLY_CONNECTED's asymmetric_quantize_inputs turned off in the file: LiteRT then quantizes each row
    symmetrically (scale max|x| / 127), which the emulation follows."""
    def symmetric(model, schema) -> None:
        options = [op.builtinOptions for op in model.subgraphs[0].operators
                   if isinstance(op.builtinOptions, schema.FullyConnectedOptionsT)]
        assert len(options) == 3 and all(o.asymmetricQuantizeInputs for o in options)
        for o in options:
            o.asymmetricQuantizeInputs = False

    path = _rewritten(files["hybrid"], tmp_path / "symmetric.tflite", symmetric)
    _, result = convert_in_memory(path)
    assert "asymmetric=False" in result.model_source
    _hybrid_case(path, "hybrid (symmetric inputs)")


def test_per_tensor_hybrid_weights(files, tmp_path):
    """FULLY_CONNECTED weights with one scale for all outputs (older converters' form; the file rewritten):
    LiteRT folds that scale into each row's, which the emulation follows."""
    def one_scale(model, schema) -> None:
        graph = model.subgraphs[0]
        for op in graph.operators:
            if model.operatorCodes[op.opcodeIndex].builtinCode == schema.BuiltinOperator.FULLY_CONNECTED:
                q = graph.tensors[op.inputs[1]].quantization
                q.scale, q.zeroPoint, q.quantizedDimension = [float(max(q.scale))], [0], 0

    path = _rewritten(files["hybrid"], tmp_path / "per_tensor_fc.tflite", one_scale)
    _, result = convert_in_memory(path)
    assert result.model_source.count("per_channel=False") == 3
    _hybrid_case(path, "hybrid (per-tensor FC weights)")


def test_per_tensor_hybrid_conv_refused(files, tmp_path):
    """A hybrid CONV_2D with one weight scale: LiteRT's symmetric EvalHybrid path, not emulated: exit 1, one
    line naming the operator and why, nothing written."""
    from tests.test_hostile import refuses_without_output

    def one_scale(model, schema) -> None:
        graph = model.subgraphs[0]
        conv = next(op for op in graph.operators
                    if model.operatorCodes[op.opcodeIndex].builtinCode == schema.BuiltinOperator.CONV_2D)
        q = graph.tensors[conv.inputs[1]].quantization
        q.scale, q.zeroPoint = [float(max(q.scale))], [0]

    path = _rewritten(files["hybrid"], tmp_path / "per_tensor.tflite", one_scale)
    refuses_without_output(tmp_path, path, "CONV_2D (one weight scale for all channels)", "--dequantize")
    _, result = convert_in_memory(path, dequantize=True)  # the float model, its distance not measurable here
    assert any(n.startswith("--dequantize distance: not measured at conversion") and "CONV_2D" in n
               for n in result.report.notes), result.report.notes


def test_full_integer_dequantized(files, tmp_path):
    """--dequantize: the full-integer model's float form. Its inputs and outputs take real values; the
    interpreter gets the input quantized with its scale and zero point and its int8 outputs are dequantized;
    the distance is printed in output quantization steps (the integer model saturates at the ranges its
    representative dataset gave, the float model does not), with XNNPACK's beside it."""
    from tf2torch import api
    from tf2torch.errors import UsageError
    from tf2torch.readers.tflite.reader import read_model

    path = files["full_integer"]
    model, result = convert_in_memory(path, dequantize=True)
    counts = result.report.counts()
    assert counts["missing"] == counts["unexpected"] == counts["mismatched"] == 0, counts
    assert all(p.dtype.name == "float32" for p in result.plans)
    graph = read_model(path).subgraphs[0]
    t_in = graph.tensors[graph.inputs[0]]
    (scale,), (zero,) = t_in.quantization.scales, t_in.quantization.zero_points
    assert f"scale {scale!r}, zero point {zero}" in result.model_source  # model.py's docstring
    assert any(f"scale {scale!r}" in note for note in result.report.notes)
    # a probe like the representative dataset (seeded normal values), quantized as LiteRT's QUANTIZE would
    x = np.random.default_rng(5).normal(size=(2, *t_in.shape[1:]))
    q = np.clip(np.sign(x / scale) * np.floor(np.abs(x / scale) + 0.5) + zero, -128, 127).astype(np.int8)
    real = ((q.astype(np.float64) - zero) * scale).astype(np.float32)
    outs = _by_signature(result, _run(model, [real]))
    for xnnpack in (False, True):
        refs = interpret(path, [q], xnnpack=xnnpack)
        for k, (out, ref) in enumerate(zip(outs, refs)):
            t = graph.tensors[sorted(read_model(path).signatures[0].outputs.items())[k][1]]
            (s,), (z,) = t.quantization.scales, t.quantization.zero_points
            steps = np.abs(out.astype(np.float64) - (ref.astype(np.float64) - z) * s) / s
            print(f"full-integer output {k}, --dequantize vs {'XNNPACK' if xnnpack else 'reference kernels'}: "
                  f"max {steps.max():.1f} steps, {np.mean(steps <= 1):.1%} within 1 step, relative "
                  f"{rel_error(out, (ref.astype(np.float64) - z) * s):.2e}")
            assert np.median(steps) < 4  # the same function, a few rounding steps apart
    # the report states the distance from the emulation on its own probe (the emulation being LiteRT's
    # integers, this is the distance from integer inference)
    note = next(n for n in result.report.notes if n.startswith("--dequantize distance from integer inference"))
    print(note)
    relative = float(note.split("max |output| ")[1].split(",")[0])
    assert 0 < relative < 0.5, note
    with pytest.raises(UsageError, match="--dequantize applies to quantized .tflite"):
        api.convert(FIXTURES / "keras3" / "cnn.keras", None, dry_run=True, dequantize=True)


def _rewritten(source: Path, target: Path, edit) -> Path:
    """``source`` unpacked with TF's flatbuffer object API, changed by ``edit(model, schema)``, packed again."""
    import flatbuffers
    from tensorflow.lite.python import schema_py_generated as schema

    model = schema.ModelT.InitFromPackedBuf(bytearray(source.read_bytes()), 0)
    edit(model, schema)
    builder = flatbuffers.Builder(0)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    target.write_bytes(bytes(builder.Output()))
    return target


@pytest.mark.parametrize("kind", ["hybrid", "full_integer"])
def test_verify(files, tmp_path, kind):
    """``tf2torch verify`` of a quantized model: a dynamic-range model matches per weighted operator and per
    output (exit 0); a full-integer model converted with --dequantize is run with its input quantized and
    its int8 tensors dequantized, and the rows state the float model's distance from integer inference
    (beyond the default tolerance: exit 3, as any difference of numbers)."""
    import json

    from tests.test_hostile import run_cli
    from tf2torch.cli import EXIT_MISMATCH, EXIT_OK

    out, report = tmp_path / "out", tmp_path / "verify.json"
    args = ("--dequantize",) if kind == "full_integer" else ()
    assert run_cli("convert", files[kind], "-o", out, *args).exit_code == EXIT_OK
    result = run_cli("verify", files[kind], out, "--report", report)
    print(result.output)
    data = json.loads(report.read_text())
    layers = [r for r in data["rows"] if r["kind"] == "layer" and r["torch"]]
    assert {r["name"].split()[0] for r in layers} == {"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"}
    if kind == "hybrid":
        assert result.exit_code == EXIT_OK, result.output + result.stderr
        assert all(r["status"] == "ok" for r in layers), layers
    else:
        assert result.exit_code == EXIT_MISMATCH, result.output + result.stderr
        outputs = [r for r in data["rows"] if r["kind"] == "output"]
        # the same function a few quantization steps away: within half the output's range, not equal
        assert len(outputs) == 2 and all(0 < r["max_abs"] < 0.5 * r["ref_max"] for r in outputs), outputs


def test_dtype_cast_of_the_emulation_is_a_usage_error(files, tmp_path):
    """--dtype float16 would round the emulation's float32 scales: exit 2, nothing written; with
    --dequantize the float model is cast as asked."""
    from tests.test_hostile import run_cli

    result = run_cli("convert", files["hybrid"], "-o", tmp_path / "out", "--dtype", "float16")
    assert result.exit_code == 2 and "--dequantize --dtype float16" in result.stderr, result.stderr
    assert not (tmp_path / "out").exists()
    assert run_cli("convert", files["hybrid"], "-o", tmp_path / "half", "--dtype", "float16",
                   "--dequantize").exit_code == 0
