"""Sparse weights (``SparsityParameters``) and DENSIFY: TF's converter with ``EXPERIMENTAL_SPARSITY`` on a pruned
model (1x4 blocks zeroed) stores its conv filter sparse behind a DENSIFY and its fully-connected weights
block-sparse (float32: read by the FULLY_CONNECTED kernel itself) or sparse behind a DENSIFY (int8).

Checked: every sparse tensor expanded by tf2torch's reader is bit-equal to the Keras kernel it came from
(float32) and to the interpreter's own DENSIFY output (every variant); the converted models match the
interpreter; float16 weights with sparsity are refused (LiteRT's DEQUANTIZE reads the sparse float16
buffer as if dense: the interpreter itself returns NaN); forged sparsity metadata is refused in one line.
The committed fixtures (fixtures/tflite_sparse, made by fixtures/make_fixtures.py) run without TensorFlow.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.support.numerics import check
from tests.util import convert_in_memory, to_tf_layout, to_torch_layout

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "tflite_sparse"


@pytest.mark.parametrize("name", ["sparse", "sparse_int8"])
def test_committed_fixtures(name):
    """No TensorFlow: the float32 model within the error rule of the interpreter's output, the int8 one
    (float input and output, QUANTIZE / DEQUANTIZE at the ends) bit-equal."""
    from tf2torch.readers.tflite.reader import read_model

    path = FIXTURES / f"{name}.tflite"
    graph = read_model(path).subgraphs[0]
    sparse = [t for t in graph.tensors if t.sparse]
    assert len(sparse) == 2 and "DENSIFY" in {op.op for op in graph.operators}
    io = np.load(FIXTURES / "io.npz")
    model, result = convert_in_memory(path)
    counts = result.report.counts()
    assert counts["missing"] == counts["unexpected"] == counts["mismatched"] == 0, counts
    with torch.no_grad():
        out = to_tf_layout(model(to_torch_layout(io["input"])))
    if name == "sparse":
        check(out, io[name], f"{name}.tflite (committed interpreter output)")
    else:
        print(f"{name}.tflite: {np.mean(out == io[name]):.0%} of {out.size} values bit-equal to the interpreter's")
        np.testing.assert_array_equal(out, io[name])


def _forged(**change):
    """The fixture's block-sparse FC weight's sparsity with ``change`` applied (levels by index)."""
    from tf2torch.readers.tflite.reader import read_model

    model = read_model(FIXTURES / "sparse.tflite")
    t = next(t for t in model.subgraphs[0].tensors if t.sparse and t.sparsity.block_map)
    sp = t.sparsity
    levels = list(sp.levels)
    for k, fields in change.pop("levels", {}).items():
        levels[k] = dataclasses.replace(levels[k], **fields)
    buf = model.buffers[t.buffer]
    values = np.frombuffer(model.data[buf.start: buf.start + buf.size], np.float32)
    return values, t.shape, dataclasses.replace(sp, levels=tuple(levels), **change)


def _csr(values, shape, sp, **fields):
    return values, shape, dataclasses.replace(sp, levels=(sp.levels[0], dataclasses.replace(sp.levels[1], **fields),
                                                          sp.levels[2]))


@pytest.mark.parametrize(("case", "needle"), [
    ("index past its dimension", "an index outside"),
    ("segments decreasing", "segments are not increasing"),
    ("segment past the indices", "segments are not increasing"),
    ("one value too many", "describes"),
    ("block not dividing", "a block of 7"),
    ("traversal order", "traversal order"),
    ("block map", "block map"),
    ("dense size", "a DENSE sparsity level of size"),
    ("huge dense shape", "more than 4096x"),
    ("duplicate index", "two values at one position"),
])
def test_forged_sparsity_refused(case, needle):
    """Forged metadata on the fixture's block-sparse weight (what LiteRT's kernel would read out of bounds):
    one FormatError line, never an IndexError or a wrong tensor."""
    from tf2torch.errors import FormatError
    from tf2torch.readers.tflite.sparsity import densify

    values, shape, sp = _forged()
    seg, idx = list(sp.levels[1].segments), list(sp.levels[1].indices)
    forged = {
        "index past its dimension": lambda: _csr(values, shape, sp, indices=(*idx[:-1], shape[1] // 4)),
        "segments decreasing": lambda: _csr(values, shape, sp, segments=(seg[0], seg[2], seg[1], *seg[3:])),
        "segment past the indices": lambda: _csr(values, shape, sp, segments=(*seg[:-1], len(idx) + 1)),
        "one value too many": lambda: (np.concatenate([values, values[:1]]), shape, sp),
        "block not dividing": lambda: _forged(levels={2: {"size": 7}}),
        "traversal order": lambda: _forged(traversal_order=(0, 2, 1)),
        "block map": lambda: _forged(block_map=(2,)),
        "dense size": lambda: _forged(levels={0: {"size": shape[0] + 1}}),
        "huge dense shape": lambda: (values, (shape[0] * 8192, shape[1]), sp),
        "duplicate index": lambda: _csr(values, shape, sp, indices=(idx[1], *idx[1:])),
    }[case]
    v, s, forged_sp = forged()
    with pytest.raises(FormatError, match=needle) as info:
        densify(v, s, forged_sp, "sparse.tflite: tensor 'w'")
    assert "\n" not in str(info.value) and "the file is corrupt" in str(info.value)


# --- with TensorFlow: the converter's own files, in every variant ---------------------------------------

VARIANTS = {"float32": {}, "dynamic-range": {"quantize": "dynamic_range"}, "full-integer": {"quantize": "full_integer"}}


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    from tests.tflite.models import make_tflite

    folder = tmp_path_factory.mktemp("densify")
    return {v: make_tflite(folder, "sparse", seed=6, **kw) for v, kw in VARIANTS.items()}


@pytest.mark.tf
@pytest.mark.parametrize("variant", list(VARIANTS))
def test_expansion_is_the_interpreters(files, variant):
    """Every DENSIFY output of the interpreter (all tensors kept) is bit-equal to tf2torch's expansion of its
    input; in float32 every sparse tensor is also bit-equal to the pruned Keras kernel it stores."""
    import warnings

    from tests.conftest import require_keras, require_tf
    from tests.tflite import models_cov
    from tests.tflite.models import _randomise
    from tf2torch.readers.tflite.reader import read_model

    tf, keras = require_tf(), require_keras()
    path = files[variant]
    model = read_model(path)
    graph = model.subgraphs[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        interp = tf.lite.Interpreter(model_path=str(path), experimental_preserve_all_tensors=True,
                                     experimental_op_resolver_type=tf.lite.experimental.OpResolverType
                                     .BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    interp.allocate_tensors()
    detail = interp.get_input_details()[0]
    interp.set_tensor(detail["index"], np.zeros(detail["shape"], detail["dtype"]))
    interp.invoke()
    densify = [op for op in graph.operators if op.op == "DENSIFY"]
    assert densify
    for op in densify:
        ours, theirs = model.array(graph.tensors[op.inputs[0]]), interp.get_tensor(op.outputs[0])
        kept = float(np.mean(ours != 0))
        print(f"{variant} DENSIFY of {graph.tensors[op.inputs[0]].name.split(';')[0]!r} {ours.dtype}{list(ours.shape)}: "
              f"bit-equal to the interpreter's ({kept:.0%} non-zero)")
        assert ours.dtype == theirs.dtype and ours.tobytes() == theirs.tobytes()
    if variant != "float32":
        return
    keras.utils.set_random_seed(6)  # the model make_tflite converted: built, randomised and pruned alike
    source = models_cov.sparse(keras)
    _randomise(source, 6)
    models_cov.prune(source, 6)
    kernels = {}
    for w in source.weights:
        k = np.asarray(w.numpy())
        if k.ndim == 4:
            kernels[k.shape[3], *k.shape[:3]] = k.transpose(3, 0, 1, 2)  # HWIO -> TFLite's OHWI
        elif k.ndim == 2:
            kernels[k.shape[::-1]] = k.T  # (in, out) -> TFLite's (out, in)
    sparse = [t for t in graph.tensors if t.sparse]
    assert len(sparse) == 3
    for t in sparse:
        ours = model.array(t)
        kernel = kernels[t.shape].astype(np.float32)
        print(f"float32 sparse {t.name.split(';')[0]!r} {list(t.shape)}: {model.buffers[t.buffer].size // 4} stored "
              f"values, bit-equal to the Keras kernel where it is non-zero, +0.0 where it is zero")
        # the format stores no zero, so a pruned -0.0 comes back +0.0 (as LiteRT's DENSIFY writes it)
        nonzero = kernel != 0
        assert ours[nonzero].tobytes() == kernel[nonzero].tobytes() and not np.signbit(ours[~nonzero]).any()


@pytest.mark.tf
def test_float16_sparse_weights_refused(tmp_path):
    """float16 weights with sparsity: TF's converter feeds the sparse float16 constants to DEQUANTIZE, whose
    kernel reads the stored values as the dense tensor (past their end): the interpreter's own output is
    NaN here, so there is no result to match; refused in one line naming the operator, nothing written."""
    from tests.test_hostile import refuses_without_output
    from tests.tflite.models import input_shapes, interpret, make_tflite

    path = make_tflite(tmp_path, "sparse", seed=6, fp16=True)
    (shape,) = input_shapes(path)
    reference = interpret(path, [np.random.default_rng(0).normal(size=shape).astype(np.float32)])[0]
    print(f"the interpreter on the float16 sparse model: {int(np.isnan(reference).sum())} of {reference.size} "
          "outputs NaN")
    assert np.isnan(reference).any()  # the control: LiteRT computes no defined result for this file
    refuses_without_output(tmp_path, path, "(DEQUANTIZE) reads the sparse constant", "EXPERIMENTAL_SPARSITY")


@pytest.mark.tf
def test_forged_file_refused(tmp_path):
    """A sparse index forged in the file (TF's flatbuffer object API): convert exits 1, one line, the tensor
    named, nothing written."""
    from tests.test_hostile import refuses_without_output
    from tests.tflite.test_quantized import _rewritten

    def forge(model, schema) -> None:
        t = next(t for t in model.subgraphs[0].tensors if t.sparsity is not None and t.sparsity.blockMap is not None
                 and len(t.sparsity.blockMap))
        t.sparsity.dimMetadata[1].arrayIndices.values[-1] = 255  # (a uint8 or uint16 index) past its 60 blocks

    path = _rewritten(FIXTURES / "sparse.tflite", tmp_path / "forged.tflite", forge)
    refuses_without_output(tmp_path, path, "sparse tensor", "an index outside", "the file is corrupt")


@pytest.mark.tf
@pytest.mark.parametrize("name", ["sparse", "sparse_int8"])
def test_verify_names_the_weighted_operators(tmp_path, name):
    """``tf2torch verify`` follows a DENSIFY to the operator that reads the dense weights (the conv's row is
    CONV_2D, not the DENSIFY), as it follows a float16 DEQUANTIZE; exit 0."""
    import json

    from tests.test_hostile import run_cli
    from tf2torch.cli import EXIT_OK

    out, report = tmp_path / "out", tmp_path / "verify.json"
    assert run_cli("convert", FIXTURES / f"{name}.tflite", "-o", out).exit_code == EXIT_OK
    result = run_cli("verify", FIXTURES / f"{name}.tflite", out, "--report", report)
    print(result.output)
    assert result.exit_code == EXIT_OK, result.output + result.stderr
    layers = [r for r in json.loads(report.read_text())["rows"] if r["kind"] == "layer"]
    assert sorted(r["name"].split()[0] for r in layers) == ["CONV_2D", "FULLY_CONNECTED"], layers
    assert all(r["status"] == "ok" for r in layers), layers
