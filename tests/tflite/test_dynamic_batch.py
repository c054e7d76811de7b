"""Dynamic batch: Keras models have a ``None`` batch, which TF's converter keeps as ``-1`` in the input's
``shape_signature`` (checked in each file). One converted model runs at batch 1 and at batch 4 against
the interpreter resized to each (its signature runner resizes the inputs): a float model whose Flatten
is computed from the run-time shape (SHAPE, STRIDED_SLICE, PACK, RESHAPE), a dynamic-range model (LiteRT
quantizes each batch item with its own scale) and a full-integer one."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from tests.support.numerics import check, float64_drift
from tests.tflite.models import input_shapes, interpret, make_tflite
from tests.util import convert_in_memory, to_tf_layout, to_torch_layout

pytestmark = pytest.mark.tf
CASES = {"dense_math": {}, "hybrid": {"quantize": "dynamic_range"}, "int_ops": {"quantize": "full_integer"}}


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("dynamic_batch")


@pytest.mark.parametrize("name", list(CASES))
def test_batch_1_and_4(folder, name):
    from tf2torch.readers.tflite.reader import read_model

    path = make_tflite(folder, name, seed=8, **CASES[name])
    graph = read_model(path).subgraphs[0]
    inputs = [graph.tensors[i] for i in graph.inputs]
    assert all(t.signature is not None and t.signature[0] == -1 for t in inputs)  # the file leaves the batch open
    model, result = convert_in_memory(path)
    names = [o["name"] for o in result.report.interface["outputs"]]
    order = sorted(range(len(names)), key=lambda i: names[i])  # the interpreter's outputs, by signature key
    rng = np.random.default_rng(8)
    for batch in (1, 4):
        xs = []
        for shape, t in zip(input_shapes(path), inputs):
            x = rng.normal(size=(batch, *shape[1:])) * (1 + np.arange(batch).reshape(-1, *[1] * (len(shape) - 1)))
            if t.dtype == "int8":  # each item at its own scale: quantized, saturating for the larger ones
                (scale,), (zero,) = t.quantization.scales, t.quantization.zero_points
                x = np.clip(np.round(x / scale) + zero, -128, 127)
            xs.append(x.astype(np.float32 if t.dtype == "float32" else np.int8))
        feed = [to_torch_layout(x) for x in xs]
        with torch.no_grad():
            out = model(*feed)
        outs = list(out) if isinstance(out, tuple) else [out]
        for k, (i, ref) in enumerate(zip(order, interpret(path, xs))):
            got = to_tf_layout(outs[i])
            assert got.shape == ref.shape and got.shape[0] == batch, (got.shape, ref.shape)
            if ref.dtype == np.int8:
                print(f"{name} batch {batch} output {k}: {np.mean(got == ref):.1%} of {ref.size} int8 values equal")
                np.testing.assert_array_equal(got, ref)
            else:
                drift = float64_drift(model, feed, lambda o, i=i: o[i] if isinstance(o, tuple) else o)
                check(got, ref, f"{name} batch {batch} output {k}", drift)
