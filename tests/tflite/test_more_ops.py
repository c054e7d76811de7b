"""TFLite operators TF's converter writes only for particular models: UNIDIRECTIONAL_SEQUENCE_LSTM (a tf_keras
LSTM of a fixed batch size), PRELU, PADV2 (a constant other than 0), SQUEEZE (open sizes), each compared
with the LiteRT interpreter's builtin kernels on a seeded input under the error rule."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.support.numerics import check, float64_drift
from tests.tflite.models import _interpreter, make_tflite
from tests.tflite.test_models import compare
from tests.util import convert_in_memory, to_tf_layout, to_torch_layout

pytestmark = pytest.mark.tf


@pytest.mark.parametrize("name", ["lstm", "prelu_pad"])
def test_against_interpreter(tmp_path, name):
    result = compare(make_tflite(tmp_path, name))
    source = result.model_source
    assert ("TFLiteLSTM(" in source) if name == "lstm" else ("nn.PReLU" in source and "value=0.5" in source)


def test_squeeze_with_open_sizes(tmp_path):
    path = make_tflite(tmp_path, "squeeze_dynamic")
    model, result = convert_in_memory(path)
    x = np.random.default_rng(1).normal(size=(2, 9, 1, 3)).astype(np.float32)  # a length the file leaves open
    interp = _interpreter(path)
    index = interp.get_input_details()[0]["index"]
    interp.resize_tensor_input(index, list(x.shape))
    interp.allocate_tensors()
    interp.set_tensor(index, x)
    interp.invoke()
    expected = interp.get_tensor(interp.get_output_details()[0]["index"])
    feed = [to_torch_layout(x)]  # an image-shaped input: channels-first in the converted model
    with torch.no_grad():
        out = model(*feed)
    check(to_tf_layout(out), expected, "squeeze_dynamic", float64_drift(model, feed))


def test_float16_lstm_starts_from_its_zero_states(tmp_path):
    """With float16 weights TF's converter writes the LSTM's output and cell states as float16 constants of
    zeros DEQUANTIZEd into the state variables: converted (the zero state LiteRT's first invocation starts
    from), both constants accounted for as skipped weights of the LSTM, compared with the interpreter."""
    path = make_tflite(tmp_path, "lstm", fp16=True)
    result = compare(path)
    skipped = [e for e in result.report.entries if e.status == "skipped"]
    print("float16 LSTM: skipped", [(e.source, e.shape, e.dtype) for e in skipped])
    assert len(skipped) == 2 and all(e.dtype == "float16" and "unidirectional_sequence_lstm" in e.reason
                                     for e in skipped)
    assert "TFLiteLSTM(" in result.model_source

    # the same file with a non-zero float16 cell state (a buffer of its own): not LiteRT's reset state, refused
    from tests.test_hostile import refuses_without_output
    from tests.tflite.test_quantized import _rewritten

    def ones(model, schema):
        graph = model.subgraphs[0]
        lstm = next(op for op in graph.operators if len(op.inputs) > 19)
        dequantize = next(op for op in graph.operators if list(op.outputs) == [lstm.inputs[19]])
        buffer = schema.BufferT()
        buffer.data = np.ones(graph.tensors[dequantize.inputs[0]].shape, np.float16).view(np.uint8).ravel()
        model.buffers.append(buffer)
        graph.tensors[dequantize.inputs[0]].buffer = len(model.buffers) - 1

    print(refuses_without_output(tmp_path, _rewritten(path, tmp_path / "cell_ones.tflite", ones),
                                 "UNIDIRECTIONAL_SEQUENCE_LSTM", "cell_state (input 19) starts from a non-zero"))
