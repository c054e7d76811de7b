"""Keras models and keras.applications through TF's TFLite converter, converted by tf2torch, compared
with the LiteRT interpreter's builtin kernels (no delegate) on a seeded input (float32 weights and float16 weights)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.conftest import require_tf
from tests.support.numerics import check, float64_drift
from tests.tflite.models import input_shapes, interpret, make_tflite
from tests.util import convert_in_memory, to_tf_layout, to_torch_layout

pytestmark = pytest.mark.tf

# keras.applications take ~30 s each in TF's converter on two shared cores: make test runs MobileNetV2 with
# float16 weights (its float32 form has the same operators, less DEQUANTIZE); TF2TORCH_SLOW=1 adds the rest.
SLOW = pytest.mark.skipif(os.environ.get("TF2TORCH_SLOW") != "1", reason="TF2TORCH_SLOW=1 runs it (~30 s)")
CASES = [("convs", False), ("dense_math", False), ("shapes", False), ("more_ops", False), ("elementwise", False),
         ("blocks", False), ("mobilenet_v2", True),
         pytest.param("mobilenet_v2", False, marks=[pytest.mark.slow, SLOW]),
         pytest.param("mobilenet_v3_small", False, marks=[pytest.mark.slow, SLOW])]
IDS = ["convs", "dense_math", "shapes", "more_ops", "elementwise", "blocks", "mobilenet_v2-fp16", "mobilenet_v2",
       "mobilenet_v3_small"]


@pytest.fixture(scope="session")
def tflite_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("tflite")


@pytest.mark.parametrize(("name", "fp16"), CASES, ids=IDS)
def test_against_interpreter(tflite_dir, name, fp16):
    compare(make_tflite(tflite_dir, name, fp16=fp16))


def compare(path):
    """Convert ``path`` and hold every output to the error rule against the interpreter; the Conversion."""
    model, result = convert_in_memory(path)
    counts = result.report.counts()
    assert counts["missing"] == 0 and counts["unexpected"] == 0 and counts["mismatched"] == 0, counts
    rng = np.random.default_rng(1)
    xs = [rng.normal(size=shape).astype(np.float32) for shape in input_shapes(path)]
    expected = interpret(path, xs)
    feed = [to_torch_layout(x) for x in xs]
    with torch.no_grad():
        out = model(*feed)
    outs = list(out) if isinstance(out, tuple) else [out]
    names = [o["name"] for o in result.report.interface["outputs"]]
    order = sorted(range(len(names)), key=lambda i: names[i])  # the interpreter's outputs by signature key
    for k, i in enumerate(order):
        # the control: float32 rounding of the converted model itself (attention softmaxes, deep nets)
        drift = float64_drift(model, feed, lambda o, i=i: o[i] if isinstance(o, tuple) else o)
        check(to_tf_layout(outs[i]), expected[k], f"{path.name} {names[i]}", drift)
    return result


def test_fp16_weights_become_float32(tflite_dir):
    """DEQUANTIZE of float16 weights: the parameters are their exact float32 values, and every float16
    tensor is accounted for as mapped."""
    from tf2torch import api

    path = make_tflite(tflite_dir, "convs", fp16=True, seed=3)
    result = compare(path)
    halves = {v.name: v for v in api.read(path).variables}
    assert halves and all(v.dtype.name == "float16" for v in halves.values())
    mapped = {e.key: e.source for e in result.report.entries if e.status == "mapped"}
    assert set(mapped.values()) == set(halves)  # every float16 weight, none left over
    for plan in result.plans:
        assert plan.dtype.name == "float32"
        if plan.key in mapped and plan.key.endswith("bias"):  # biases keep their layout: compare directly
            np.testing.assert_array_equal(plan.produce(), halves[mapped[plan.key]].read().astype(np.float32))


def test_integer_operators_not_emulated_refused(tflite_dir, tmp_path):
    """TF's own integer model with an operator whose integer kernel is not emulated (REDUCE_PROD in a 16x8 model:
    its int8 form is emulated, test_int8_prod.py, its int16 form not; the full-integer LSTM is emulated:
    test_int_lstm.py): exit 1, one line naming the operator kind and the --dequantize route, nothing written
    (tests/tflite/test_full_integer.py has the rest; test_int16.py the int16 and uint8 refusals; the elementwise
    model's ABS, MAXIMUM, RSQRT, SQUARED_DIFFERENCE, RESIZE_NEAREST_NEIGHBOR... are emulated: test_int8_math.py,
    test_int8_spatial.py)."""
    from tests.test_hostile import refuses_without_output

    path = make_tflite(tflite_dir, "reduce_prod", quantize="int16x8")
    refuses_without_output(tmp_path, path, "operator kind(s) whose integer form is not emulated",
                           "REDUCE_PROD (no int16 integer kernel emulated)", "--dequantize")


def test_buffers_stored_after_the_flatbuffer(tflite_dir, tmp_path):
    """Models over 2 GB keep their weights after the flatbuffer (Buffer.offset / size from the file's start):
    the fixture CNN rewritten that way (by TF's own schema code) converts to the same numbers."""
    require_tf()
    import flatbuffers
    from tensorflow.lite.python import schema_py_generated as schema

    from tf2torch.readers.tflite.reader import read_model

    source = Path(__file__).resolve().parents[2] / "fixtures" / "tflite" / "cnn.tflite"
    model = schema.ModelT.InitFromPackedBuf(bytearray(source.read_bytes()), 0)
    moved = [(b, bytes(np.asarray(b.data, np.uint8))) for b in model.buffers if b.data is not None and len(b.data)]
    for b, _ in moved:
        b.data, b.offset, b.size = None, 2, 1  # placeholders, so the packed size is the final one

    def pack() -> bytes:
        builder = flatbuffers.Builder(0)
        builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
        return bytes(builder.Output())

    head = pack()
    position, tail = -(-len(head) // 16) * 16, b""
    for b, data in moved:
        b.offset, b.size = position + len(tail), len(data)
        tail += data + bytes(-len(data) % 16)
    packed = pack()
    assert len(packed) == len(head)
    path = tmp_path / "external.tflite"
    path.write_bytes(packed + bytes(position - len(packed)) + tail)
    assert sum(b.external for b in read_model(path).buffers) == len(moved) > 0
    io = np.load(source.with_name("io.npz"))
    model_pt, _ = convert_in_memory(path)
    with torch.no_grad():
        out = model_pt(to_torch_layout(io["input"]))
    check(out, io["cnn"], "cnn.tflite with external buffers")
