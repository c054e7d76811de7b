"""16x8 TFLite models (int16 activations, int8 weights, int64 biases) and uint8 ends, made by TF's converter
(seeded weights, a seeded representative dataset), converted into an emulation of LiteRT's integer kernels
and compared with the interpreter's builtin kernels without delegates.

Two levels: the model's outputs (float: DEQUANTIZE of int16, so a difference is a whole number of output
steps), and each operator's module run on the interpreter's own int16 input to that operator (every tensor
kept), compared with the operator's int16 output: the kernel-by-kernel check that pinned the roundings
(CONV_2D's reduced 16-bit multiplier, FULLY_CONNECTED's single rounding, QUANTIZE's float32 reciprocal
rounded half to even: the probes include exact ties).
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.tflite.models import input_shapes, interpret, make_tflite
from tests.util import convert_in_memory, to_tf_layout, to_torch_layout

pytestmark = pytest.mark.tf


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("int16")


@pytest.fixture(scope="module")
def cnn16(folder) -> Path:
    return make_tflite(folder, "cnn16", quantize="int16x8", seed=4)


def _probes(path: Path, rng: np.random.Generator) -> list[np.ndarray]:
    """Float inputs: the representative distribution, twice as wide, and exact ties of the input's
    quantization (k + 1/2 steps), where QUANTIZE's rounding shows."""
    from tf2torch.readers.tflite.reader import read_model

    graph = read_model(path).subgraphs[0]
    first = next(op for op in graph.operators if op.op == "QUANTIZE")
    scale = np.float32(graph.tensors[first.outputs[0]].quantization.scales[0])
    xs = []
    for shape in input_shapes(path):
        x = (2 * rng.normal(size=(4, *shape[1:]))).astype(np.float32)
        ties = (rng.integers(-3000, 3000, size=x[:2].shape) + 0.5).astype(np.float32) * scale
        xs.append(np.concatenate([x, ties]).astype(np.float32))
    return xs


@pytest.mark.parametrize("name", ["cnn16", "mlp16"])
def test_16x8_outputs_match_the_reference_kernels(folder, cnn16, name):
    path = cnn16 if name == "cnn16" else make_tflite(folder, name, quantize="int16x8", seed=4)
    model, result = convert_in_memory(path)
    counts = result.report.counts()
    assert counts["missing"] == counts["unexpected"] == counts["mismatched"] == 0, counts
    assert "TFLiteQuant16Linear(" in result.model_source and "TFLiteQuant16Softmax(" in result.model_source
    from tf2torch.readers.tflite.reader import read_model

    lite = read_model(path)
    graph = lite.subgraphs[0]
    xs = _probes(path, np.random.default_rng(11))
    with torch.no_grad():
        out = model(*[to_torch_layout(x) for x in xs])
    outs = [to_tf_layout(o) for o in (out if isinstance(out, tuple) else (out,))]
    names = [o["name"] for o in result.report.interface["outputs"]]
    outs = [outs[i] for i in sorted(range(len(names)), key=lambda i: names[i])]  # the interpreter's order
    # each output is DEQUANTIZE(int16): its step is the int16 tensor's scale
    scales = {op.outputs[0]: graph.tensors[op.inputs[0]].quantization.scales[0] for op in graph.operators
              if op.op == "DEQUANTIZE"}
    keys = lite.signatures[0].outputs
    steps_of = [scales[keys[k]] for k in sorted(keys)]
    for k, (got, ref) in enumerate(zip(outs, interpret(path, xs))):
        step = steps_of[k]
        steps = np.abs(got.astype(np.float64) - ref.astype(np.float64)) / step
        exact, within = float(np.mean(steps == 0)), float(np.mean(steps <= 1 + 1e-9))
        print(f"{name} 16x8 output {k} vs reference kernels: {exact:.1%} exact, {within:.1%} within one step, "
              f"max {steps.max():.0f} steps ({steps.size} values)")
        assert within >= 0.99, f"{name} output {k}: {within:.1%} within one step"
        assert exact == 1.0, f"{name} output {k}: {exact:.1%} exact (every operator is exact: see the next test)"


def test_each_16x8_operator_on_the_interpreters_inputs(cnn16):
    """Every converted operator module, run on the int16 tensors the interpreter fed that operator, gives its
    int16 output exactly (CONV_2D, DEPTHWISE_CONV_2D, RELU, MUL / ADD with per-channel constants, pools, MUL /
    ADD / SUB of tensors, MEAN, FULLY_CONNECTED, SOFTMAX, QUANTIZE on ties)."""
    from tests.conftest import require_tf
    from tf2torch.readers.tflite.reader import read_model
    from tf2torch.tflite.lower import readable

    tf = require_tf()
    path = cnn16
    model, _ = convert_in_memory(path)
    lite = read_model(path)
    graph = lite.subgraphs[0]
    xs = _probes(path, np.random.default_rng(5))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        interp = tf.lite.Interpreter(model_path=str(path), experimental_preserve_all_tensors=True,
                                     experimental_op_resolver_type=tf.lite.experimental.OpResolverType
                                     .BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    detail = interp.get_input_details()[0]
    interp.resize_tensor_input(detail["index"], xs[0].shape)
    interp.allocate_tensors()
    interp.set_tensor(detail["index"], xs[0])
    interp.invoke()
    modules = {re.sub(r"\W", "_", name): m for name, m in model.named_modules() if name and not list(m.children())}
    arity = {}
    hooks = [m.register_forward_hook(lambda m, i, o, key=key: arity.setdefault(key, [tuple(t.shape) for t in i])
                                     and None) for key, m in modules.items()]
    with torch.no_grad():
        model(*[to_torch_layout(x) for x in xs])
    for h in hooks:
        h.remove()
    checked = set()
    for op in graph.operators:
        key = re.sub(r"\W", "_", readable(graph.tensors[op.outputs[0]].name))
        if key not in arity or op.op == "DEQUANTIZE":
            continue
        feeds = []
        runtime = [i for i in op.inputs if i >= 0 and not lite.has_data(graph.tensors[i])]
        if any(np.array(interp.get_tensor(i)).size != np.prod(shape) for shape, i in zip(arity[key], runtime)):
            continue  # a dilated conv (its module takes the input before SPACE_TO_BATCH_ND): the outputs test has it
        for shape, i in zip(arity[key], runtime):
            value = np.array(interp.get_tensor(i))
            if value.ndim == 4 and shape != value.shape:
                value = value.transpose(0, 3, 1, 2)  # the module takes channels-first
            feeds.append(torch.from_numpy(np.ascontiguousarray(value.reshape(shape))))
        with torch.no_grad():
            got = modules[key](*feeds).numpy()
        expected = np.array(interp.get_tensor(op.outputs[0]))
        if got.ndim == 4 and got.shape != expected.shape:
            got = got.transpose(0, 2, 3, 1)
        equal = float(np.mean(got.reshape(expected.shape) == expected))
        print(f"{op.op} {key}: {equal:.2%} of {expected.size} int16 values equal to the interpreter's")
        assert got.dtype == expected.dtype and equal == 1.0, (op.op, key, equal)
        checked.add(op.op)
    assert checked >= {"QUANTIZE", "CONV_2D", "DEPTHWISE_CONV_2D", "RELU", "MUL", "ADD", "SUB", "AVERAGE_POOL_2D",
                       "MAX_POOL_2D", "MEAN", "FULLY_CONNECTED", "SOFTMAX"}, checked


def test_uint8_input_and_output(folder):
    """A full-integer model converted with uint8 input and output (QUANTIZE uint8 -> int8 after the input,
    int8 -> uint8 before each output: LiteRT's requantize): the uint8 outputs equal the interpreter's."""
    path = make_tflite(folder, "int_ops", quantize="full_integer_uint8", seed=4)
    model, result = convert_in_memory(path)
    assert result.report.interface["inputs"][0]["quantization"]["dtype"] == "uint8"
    xs = [np.random.default_rng(2).integers(0, 256, size=(4, *shape[1:])).astype(np.uint8)
          for shape in input_shapes(path)]
    with torch.no_grad():
        out = model(*[to_torch_layout(x) for x in xs])
    outs = [to_tf_layout(o) for o in out]
    names = [o["name"] for o in result.report.interface["outputs"]]
    outs = [outs[i] for i in sorted(range(len(names)), key=lambda i: names[i])]
    for k, (got, ref) in enumerate(zip(outs, interpret(path, xs))):
        assert got.dtype == ref.dtype == np.uint8
        steps = np.abs(got.astype(np.int64) - ref.astype(np.int64))
        print(f"int_ops, uint8 input and output, output {k}: {np.mean(steps == 0):.1%} exact, "
              f"{np.mean(steps <= 1):.1%} within one step, max {steps.max()} steps ({steps.size} values)")
        np.testing.assert_array_equal(got, ref)


def test_int16_logistic_and_tanh_refused(folder, tmp_path):
    """LOGISTIC / TANH on int16 (LiteRT interpolates a fixed sigmoid table tf2torch does not reproduce): exit 1,
    one line naming both and the --dequantize route, nothing written."""
    from tests.test_hostile import refuses_without_output

    path = make_tflite(folder, "int_ops", quantize="int16x8", seed=4)
    refuses_without_output(tmp_path, path, "full-integer int16 model", "LOGISTIC (no int16 integer kernel emulated)",
                           "TANH", "--dequantize")


def test_verify_16x8_compares_int16_codes_and_names_a_broken_operator(cnn16, tmp_path):
    """``tf2torch verify`` of a 16x8 model (float input, int16 inside): each weighted operator's int16 output
    against the interpreter's, in steps (the first CONV_2D's fused RELU6 is the module's own clamp, not Keras's
    relu6 applied to int16 codes, which made it "diverge" by 2.3e4 while the outputs agreed). One depthwise
    multiplier off by one in OUT: exit 3, that operator named first."""
    import json

    from safetensors.numpy import load_file, save_file

    from tests.test_hostile import run_cli
    from tf2torch.cli import EXIT_MISMATCH, EXIT_OK

    out = tmp_path / "out"
    assert run_cli("convert", cnn16, "-o", out).exit_code == EXIT_OK
    report = tmp_path / "verify.json"
    result = run_cli("verify", cnn16, out, "--report", report)
    print(result.output)
    data = json.loads(report.read_text())
    compared = [r for r in data["rows"] if r["kind"] == "layer" and r["status"] != "skipped"]
    for r in compared:
        print(f"{r['name']}: max {r['max_abs']} steps, integer={r['integer']}")
    assert result.exit_code == EXIT_OK, result.output + result.stderr
    assert {r["name"].split()[0] for r in compared} >= {"CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"}
    assert all(r["status"] == "ok" and r["integer"] and r["max_abs"] == 0 for r in compared), compared
    assert not any("relu6" in r["note"] for r in compared), compared  # no Keras activation on int16 codes

    bad = tmp_path / "bad"
    bad.mkdir()
    for f in out.iterdir():
        (bad / f.name).write_bytes(f.read_bytes())
    weights = load_file(str(out / "model.safetensors"))
    depthwise = next(r for r in compared if r["name"].startswith("DEPTHWISE_CONV_2D"))
    key = f"{depthwise['torch']}.multiplier"
    weights[key] = weights[key] + np.int32(1 << 16)  # one step of the 16-bit multiplier LiteRT's kernel uses
    save_file(weights, str(bad / "model.safetensors"))
    result = run_cli("verify", cnn16, bad, "--report", tmp_path / "bad.json")
    print(result.output)
    broken = json.loads((tmp_path / "bad.json").read_text())
    assert result.exit_code == EXIT_MISMATCH, result.output + result.stderr
    assert broken["first_diverging"] == depthwise["name"], broken["first_diverging"]
    row = next(r for r in broken["rows"] if r["name"] == depthwise["name"])
    print(f"broken multiplier: {row['name']} max {row['max_abs']} steps ({row['note']})")
    assert row["status"] == "diverged" and row["max_abs"] >= 1
