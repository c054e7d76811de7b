"""MediaPipe's own models with custom operators, against a reference no single runtime can give: the
builtin operators run by LiteRT's interpreter (builtin kernels, no delegate), the custom ones by TensorFlow
(the formulations of test_custom_ops.py and test_custom_pool.py), stage by stage.

The custom operators are cut out of the file: their outputs become inputs of the model, their inputs
outputs. Operators are stored in execution order, so running the cut model with the custom outputs
known so far gives the next custom operator's inputs exactly; TF computes its outputs, and so on; a last
run gives the model's output.

Nothing is downloaded at test time: MediaPipe's hair segmentation model (780 KB, Apache-2.0) is committed in
``fixtures/tflite_real/`` (PROVENANCE.md: from google/mediapipe's history, removed in commit 4dc4b19dd; three
MaxPoolingWithArgmax2D, three MaxUnpooling2D, five Convolution2DTransposeBias; input 512x512x4, here uniform
in [-1, 1]). ``TF2TORCH_MEDIAPIPE_MODELS`` points the test at another folder of MediaPipe models.

(MediaPipe's selfie segmentation models, one Convolution2DTransposeBias after float16 weights, are not
listed: they amplify rounding so much that the float64 drift is no control there — LiteRT's own builtin
and reference kernels differ by up to 4e-5 on them.)
"""

from __future__ import annotations

import os
import struct
from pathlib import Path

import numpy as np
import pytest
import torch

from fixtures.tflite_custom import mediapipe_size
from tests.conftest import require_tf
from tests.support.numerics import check, float64_drift
from tests.tflite.test_custom_pool import _pool, _unpool
from tests.util import convert_in_memory, to_tf_layout, to_torch_layout

pytestmark = pytest.mark.tf
FOLDER = os.environ.get("TF2TORCH_MEDIAPIPE_MODELS") or str(Path(__file__).resolve().parents[2] / "fixtures" / "tflite_real")


def _custom(tf, name: str, options: bytes, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """What MediaPipe's kernel computes, by TensorFlow."""
    if name == "Convolution2DTransposeBias":
        padding, sw, sh = struct.unpack_from("<3i", options)
        x, weights, bias = inputs  # weights (O, H, W, I)
        size = [mediapipe_size(x.shape[1], weights.shape[1], sh, padding == 1),
                mediapipe_size(x.shape[2], weights.shape[2], sw, padding == 1)]
        y = tf.nn.conv2d_transpose(x, weights.transpose(1, 2, 0, 3), [x.shape[0], *size, weights.shape[0]], (sh, sw),
                                   "SAME" if padding == 1 else "VALID")
        return [tf.nn.bias_add(y, bias).numpy()]
    padding, sw, sh, fw, fh, activation = struct.unpack_from("<6i", options)
    if name == "MaxPoolingWithArgmax2D":
        assert activation == 0, activation  # (the shipped models have none)
        values, indices = _pool(tf, inputs[0], (fh, fw), (sh, sw), "SAME" if padding == 1 else "VALID")
        return [values.numpy(), indices.numpy()]
    assert name == "MaxUnpooling2D", name
    out, control, _ = _unpool(tf, inputs[0], inputs[1], (fh, fw), (sh, sw))
    assert np.array_equal(out, control)
    return [out]


def staged_reference(tf, path: Path, x: np.ndarray, kernels: str = "BUILTIN_WITHOUT_DEFAULT_DELEGATES") -> np.ndarray:
    """The model's first output for ``x``: builtins by LiteRT (``kernels``: an ``OpResolverType``, e.g.
    ``BUILTIN_REF`` for TFLite's own kernel-to-kernel spread), custom operators by ``_custom``."""
    import flatbuffers
    from tensorflow.lite.python import schema_py_generated as fb
    from tensorflow.lite.python.interpreter import Interpreter, OpResolverType

    model = fb.ModelT.InitFromPackedBuf(path.read_bytes(), 0)
    sub = model.subgraphs[0]
    codes = model.operatorCodes
    custom = [op for op in sub.operators if codes[op.opcodeIndex].customCode]

    def constant(i: int) -> np.ndarray | None:
        data = model.buffers[sub.tensors[i].buffer].data
        return None if data is None or not len(data) else \
            np.frombuffer(bytes(bytearray(data)), np.float32).reshape(sub.tensors[i].shape)

    fed = [i for op in custom for i in op.outputs]
    read = sorted({i for op in custom for i in op.inputs if constant(i) is None})
    model_in, model_out = list(sub.inputs), list(sub.outputs)
    sub.operators = [op for op in sub.operators if not codes[op.opcodeIndex].customCode]
    sub.inputs, sub.outputs, model.signatureDefs = model_in + fed, model_out + read, []
    builder = flatbuffers.Builder(1024)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    interpreter = Interpreter(model_content=bytes(builder.Output()),
                              experimental_op_resolver_type=getattr(OpResolverType, kernels))
    interpreter.allocate_tensors()
    known = {i: np.zeros(sub.tensors[i].shape, np.float32) for i in fed}

    def run() -> None:
        interpreter.set_tensor(model_in[0], x)
        for i, value in known.items():
            interpreter.set_tensor(i, value)
        interpreter.invoke()

    for op in custom:
        run()
        inputs = [constant(i) if constant(i) is not None else interpreter.get_tensor(i) for i in op.inputs]
        outputs = _custom(tf, codes[op.opcodeIndex].customCode.decode(), bytes(bytearray(op.customOptions)), inputs)
        known.update(zip(op.outputs, outputs))
    run()
    return interpreter.get_tensor(model_out[0])


def _input_shape(path: Path) -> tuple[int, ...]:
    from tensorflow.lite.python import schema_py_generated as fb

    sub = fb.ModelT.InitFromPackedBuf(path.read_bytes(), 0).subgraphs[0]
    return tuple(int(d) for d in sub.tensors[sub.inputs[0]].shape)


@pytest.mark.parametrize("name", ["hair_segmentation"])
def test_mediapipe_model(name):
    tf = require_tf()
    path = Path(FOLDER) / f"{name}.tflite"
    assert path.is_file(), f"{path}: the committed fixture is missing"
    model, result = convert_in_memory(path)
    assert result.report.counts()["unexpected"] == 0 and result.report.counts()["missing"] == 0
    x = np.random.default_rng(0).uniform(-1, 1, _input_shape(path)).astype(np.float32)
    expected = staged_reference(tf, path, x)
    feed = [to_torch_layout(x)]
    with torch.no_grad():
        out = model(*feed)
    check(to_tf_layout(out), expected, f"{name}.tflite (LiteRT builtins, TF for the custom operators)",
          float64_drift(model, feed))
