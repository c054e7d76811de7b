"""The coverage matrix of issue 25: every operator of its list, in every variant TF's converter makes
(float32, float16 weights, dynamic-range, full-integer int8; and, for two models, 16x8 — int16
activations — and full-integer with uint8 input / output), converted and compared with the LiteRT
interpreter's builtin kernels (no delegate), or refused by name.

Each hand-written model (tests/tflite/models.py, models_cov.py) is made into each variant by TF's own
converter; which operators the file holds, and on which tensors, is read from the file with tf2torch's
reader, never listed by hand. Each file is then converted and compared (float outputs under the error
rule, with the float64-drift control where the error needs it; int8 outputs in quantization steps,
>= 99 % within one step), or refused: a refusal must name, word for word, the operators it blames (or
refuse the int16 / uint8 activations they compute on), and never blames an operator whose integer kernel
of that type is registered (``tf2torch layers --tflite-int8-ops``, the int16 / uint8 registries). The
matrix is printed, one cell per operator and variant:

* the forms it was compared in, from files converted and compared: ``f`` float activations, ``hyb`` int8
  weights on float activations (a dynamic-range kernel), ``i8`` / ``i16`` / ``u8`` integer activations,
  ``w8`` int8 weights (DENSIFY), ``shp`` int32 shape arithmetic; an operator TF's converter keeps float
  between DEQUANTIZE and QUANTIZE in a full-integer model shows as ``f`` there;
* ``refused:<forms>``: forms found only in files refused naming it (the int8 kernels other work adds turn
  these into compared forms with no change here);
* ``known``: only in files refused for a cause listed in ``KNOWN``; ``slow``: only in models run with
  TF2TORCH_SLOW=1; ``-``: TF's converter wrote it in no file of that variant (QUANTIZE in a float model),
  or refused to make the file (16x8 has no ELU); ``blocked`` (16x8 and uint8 columns): an int8 operator
  in a file refused as a whole for its int16 / uint8 tensors (the full-integer column compares it).

Every operator of the list must be compared or refused in each variant where a file holds it, and
compared in float32 (DEQUANTIZE in float16, QUANTIZE and DEQUANTIZE in full-integer).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.support.numerics import BOUND, check, float64_drift, rel_error
from tests.tflite.models import input_shapes, interpret, make_tflite
from tests.util import convert_in_memory, to_tf_layout, to_torch_layout

pytestmark = pytest.mark.tf

# Issue 25, item 2 (DENSIFY, QUANTIZE and DEQUANTIZE included: they appear only in some variants).
ISSUE_OPS = ("CONV_2D", "DEPTHWISE_CONV_2D", "TRANSPOSE_CONV", "FULLY_CONNECTED", "AVERAGE_POOL_2D", "MAX_POOL_2D",
             "ADD", "SUB", "MUL", "DIV", "CONCATENATION", "RESHAPE", "SQUEEZE", "EXPAND_DIMS", "TRANSPOSE", "PAD",
             "PADV2", "MIRROR_PAD", "MEAN", "SUM", "REDUCE_MAX", "SOFTMAX", "LOG_SOFTMAX", "LOGISTIC", "TANH", "RELU",
             "RELU6", "RELU_N1_TO_1", "HARD_SWISH", "PRELU", "LEAKY_RELU", "GELU", "RESIZE_BILINEAR",
             "RESIZE_NEAREST_NEIGHBOR", "STRIDED_SLICE", "SLICE", "GATHER", "SPLIT", "SPLIT_V", "PACK", "UNPACK",
             "BATCH_MATMUL", "UNIDIRECTIONAL_SEQUENCE_LSTM", "DEPTH_TO_SPACE", "SHAPE", "DENSIFY", "DEQUANTIZE",
             "QUANTIZE")
VARIANTS = {"float32": {}, "float16": {"fp16": True}, "dynamic-range": {"quantize": "dynamic_range"},
            "full-integer": {"quantize": "full_integer"}, "16x8": {"quantize": "int16x8"},
            "uint8-io": {"quantize": "full_integer_uint8"}}
# (models.py's convs, dense_math, blocks and prelu_pad hold no operator of the list these lack, in any variant;
# test_models.py compares them in float32)
MODELS = ("shapes", "more_ops", "elementwise", "squeeze_dynamic", "hybrid", "int_ops", "v3_ops", "int_moves",
          "int_more", "int_spatial", "sparse", "lstm_wide", "tconv_wide", "cnn16", "mlp16")
ONLY = {"tconv_wide": ("dynamic-range",)}  # a model made for one variant's sake (its weights' size)
# 16x8 (int16 activations, int8 weights) and uint8 input / output: two of the full-integer models each
# (int16 and uint8 kernels are refused by name today, the int8 ones between uint8 ends too)
NARROW = {"16x8": ("int_ops", "int_moves", "cnn16", "mlp16"), "uint8-io": ("int_ops", "int_moves")}
ONLY.update({"cnn16": ("16x8",), "mlp16": ("16x8",)})  # models.py's 16x8 models: that column only
INTEGER = ("full-integer", "16x8", "uint8-io")
# TF's converter takes ~10 s per variant on a tf_keras LSTM: with TF2TORCH_SLOW=1 only (test_more_ops.py
# compares the float32 LSTM in make test); the matrix shows their operators as "slow" otherwise
SLOW_MODELS = frozenset() if os.environ.get("TF2TORCH_SLOW") == "1" else frozenset({"lstm_wide"})
SLOW_ONLY = frozenset({"UNIDIRECTIONAL_SEQUENCE_LSTM"})  # the operator only they hold
# Refusals that are not about an operator's integer kernel, each with its cause (checked in the message):
# - TF's converter feeds a sparse float16 weight to DEQUANTIZE, which LiteRT's kernel reads past its end
KNOWN = {("sparse", "float16"): "reads the sparse constant"}


def _variants(name: str, variant: str) -> tuple[str, ...]:
    """The variants ``name`` is made in (asked about ``variant``)."""
    if variant in NARROW and name not in NARROW[variant]:
        return ()
    return ONLY.get(name, (variant,))


@dataclass
class Outcome:
    """One file: its operators with their forms, and what became of it."""

    ops: dict[str, set[str]] = field(default_factory=dict)
    status: str = ""  # "compared", "refused", or "not made" (TF's converter failed)
    message: str = ""
    figures: list[str] = field(default_factory=list)


_CACHE: dict[tuple[str, str], Outcome] = {}
INTS = {"int8": "i8", "int16": "i16", "uint8": "u8"}  # integer activations, as the matrix writes them


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("coverage")


def outcome(folder: Path, name: str, variant: str) -> Outcome:
    if (name, variant) not in _CACHE:
        _CACHE[name, variant] = _run(folder, name, variant)
    return _CACHE[name, variant]


def _run(folder: Path, name: str, variant: str) -> Outcome:
    from tf2torch.errors import Tf2TorchError

    sub = folder / variant
    sub.mkdir(exist_ok=True)
    try:
        path = make_tflite(sub, name, seed=4, **VARIANTS[variant])
    except Exception as exc:  # TF's converter refuses the model in this variant: observed, not assumed
        return Outcome(status="not made", message=f"{type(exc).__name__}: {str(exc)[:200]}")
    result = Outcome(ops=_forms(path))
    try:
        model, conversion = convert_in_memory(path)
    except Tf2TorchError as exc:  # (a MappingError too: the contract not met)
        result.status, result.message = "refused", str(exc)
        return result
    counts = conversion.report.counts()
    assert counts["missing"] == counts["unexpected"] == counts["mismatched"] == 0, (name, variant, counts)
    result.status = "compared"
    result.figures = _compare(path, model, conversion, f"{name} {variant}")
    return result


def _forms(path: Path) -> dict[str, set[str]]:
    """Operator kind -> the kinds of tensors it computes on, read from the file (tf2torch's reader)."""
    from tf2torch.readers.tflite.reader import read_model

    model = read_model(path)
    graph = model.subgraphs[0]
    dense = {i for op in graph.operators if op.op == "DENSIFY" for i in op.outputs}  # constants, made dense
    out: dict[str, set[str]] = {}
    for op in graph.operators:
        tensors = [graph.tensors[i] for i in (*op.inputs, *op.outputs) if i >= 0]
        computed = {t.dtype for t in tensors if not model.has_data(t) and t.index not in dense}
        forms = set()
        if op.op == "DENSIFY":
            forms.add("w8" if graph.tensors[op.inputs[0]].dtype == "int8" else "f")  # int8 or float weights
        elif computed & set(INTS):
            forms |= {INTS[d] for d in computed & set(INTS)}
        elif computed & {"float32", "float16"}:
            forms.add("f")
            if any((model.has_data(t) or t.index in dense) and t.dtype == "int8" for t in tensors):
                forms.add("hyb")  # int8 weights on float activations: a dynamic-range operator
        else:
            forms.add("shp")
        out.setdefault(op.op, set()).update(forms)
    return out


def _compare(path: Path, model, conversion, label: str) -> list[str]:
    """Every output against the interpreter's builtin kernels; the figures printed and returned."""
    from tf2torch.readers.tflite.reader import read_model

    graph = read_model(path).subgraphs[0]
    rng = np.random.default_rng(11)
    xs = []
    for shape, index in zip(input_shapes(path), graph.inputs):
        t = graph.tensors[index]
        if t.dims and t.dims[0] is None:
            shape = (2, *shape[1:])  # an open batch: two items
        if t.dtype in ("int8", "uint8"):  # the representative distribution quantized; the whole range in item 2
            (scale,), (zero,) = t.quantization.scales, t.quantization.zero_points
            info = np.iinfo(t.dtype)
            v = rng.normal(size=shape) / scale
            q = np.clip(np.sign(v) * np.floor(np.abs(v) + 0.5) + zero, info.min, info.max)
            if shape[0] == 2:
                q[1] = rng.integers(info.min, info.max + 1, size=shape[1:])
            xs.append(q.astype(t.dtype))
        else:
            xs.append(rng.normal(size=shape).astype(np.float32))
    feed = [to_torch_layout(x) for x in xs]
    with torch.no_grad():
        out = model(*feed)
    outs = list(out) if isinstance(out, tuple) else [out]
    names = [o["name"] for o in conversion.report.interface["outputs"]]
    order = sorted(range(len(names)), key=lambda i: names[i])  # the interpreter's outputs, by signature key
    figures = []
    for k, (i, ref) in enumerate(zip(order, interpret(path, xs))):
        got = to_tf_layout(outs[i])
        if ref.dtype.kind in "iu":
            assert got.dtype == ref.dtype, (label, got.dtype, ref.dtype)
            steps = np.abs(got.astype(np.int64) - ref.astype(np.int64))
            exact, within = float(np.mean(steps == 0)), float(np.mean(steps <= 1))
            figures.append(f"output {k}: {exact:.1%} exact, {within:.1%} within one step, max {steps.max()}")
            print(f"{label} output {k} vs reference kernels: {figures[-1]} ({steps.size} values)")
            assert within >= 0.99, f"{label} output {k}: {within:.1%} within one step"
        else:  # the float64-drift control only where the error needs it (it costs a second model)
            drift = float64_drift(model, feed, lambda o, i=i: o[i] if isinstance(o, tuple) else o) \
                if rel_error(got, ref) > BOUND and all(x.dtype.kind == "f" for x in xs) else None
            error = check(got, ref, f"{label} output {k}", drift)
            figures.append(f"output {k}: {error:.1e}")
    return figures


def _blamed(message: str, ops: dict[str, set[str]], by_dtype: bool = True) -> set[str]:
    """The file's operators the refusal names, word for word (RELU is not blamed by RELU6), and, where it
    refuses int16 / uint8 activations (16x8 quantization: the LSTM's cell), the operators computing on them."""
    named = {op for op in ops if re.search(rf"(?<![A-Z0-9_]){op}(?![A-Z0-9_])", message)}
    for dtype, form in INTS.items() if by_dtype else ():
        if form != "i8" and f"{dtype} activations" in message:
            named |= {op for op, forms in ops.items() if form in forms}
    return named


@pytest.mark.parametrize("variant", list(VARIANTS))
@pytest.mark.parametrize("name", MODELS)
def test_file(folder, name, variant):
    """Each file converts and matches the interpreter, or is refused for operators whose integer
    kernel is not emulated, naming them (or for a known cause, KNOWN)."""
    from tf2torch.tflite.base import supported_int
    from tf2torch.tflite.lower import supported_int8_ops

    if name in SLOW_MODELS:
        pytest.skip("TF2TORCH_SLOW=1 runs it (TF's converter: ~10 s)")
    if variant not in _variants(name, variant):
        pytest.skip(f"{name} is not made in {variant}")
    result = outcome(folder, name, variant)
    print(f"{name} {variant}: {result.status} {' '.join(sorted(result.ops))} {result.message[:300]}")
    if result.status == "not made":  # TF's converter itself failed: allowed only for the integer variants
        assert variant in INTEGER, result.message
    elif result.status == "refused":
        if (name, variant) in KNOWN:
            assert KNOWN[name, variant] in result.message, result.message
            return
        blamed = _blamed(result.message, result.ops)
        assert blamed, f"the refusal names none of the file's operators: {result.message}"
        # only integer kernels may be missing: a float or hybrid operator tf2torch lists is never refused
        assert variant in INTEGER or variant == "dynamic-range", result.message
        named = _blamed(result.message, result.ops, by_dtype=False)
        emulated = {"full-integer": supported_int8_ops(), "16x8": supported_int("int16"),
                    "uint8-io": supported_int("uint8")}.get(variant, [])
        wrongly = named & set(emulated)
        assert not wrongly, f"refused for operators whose integer form is emulated: {sorted(wrongly)}: {result.message}"


def test_matrix(folder):
    """Every operator of the issue's list, per variant: compared, refused by name, or not written by TF's
    converter in that variant (observed); compared in float32. The matrix is printed."""
    cells: dict[str, dict[str, str]] = {}
    for variant in VARIANTS:
        for op in ISSUE_OPS:
            compared: set[str] = set()
            refused: set[str] = set()
            present = known = False
            for name in MODELS:
                if name in SLOW_MODELS or variant not in _variants(name, variant):
                    continue
                result = outcome(folder, name, variant)
                if op not in result.ops:
                    continue
                present = True
                if result.status == "compared":
                    compared |= result.ops[op]
                elif result.status == "refused" and (name, variant) in KNOWN:
                    known = True
                elif result.status == "refused" and op in _blamed(result.message, result.ops):
                    refused |= result.ops[op]
            cell = "+".join(sorted(compared))
            if refused - compared:  # refused by name in a form no other file compares
                cell += (" " if cell else "") + "refused:" + "+".join(sorted(refused - compared))
            # in the 16x8 / uint8 columns a file is refused for its int16 / uint8 tensors as a whole: an int8
            # operator inside is compared in the full-integer column, here it is "blocked"
            gap = "blocked" if variant in NARROW else "GAP"
            cells.setdefault(op, {})[variant] = (cell or ("known" if known else gap if present else
                                                          "slow" if op in SLOW_ONLY and SLOW_MODELS else "-"))
    width = max(map(len, ISSUE_OPS))
    print("\n" + " " * width + "".join(f"  {v:<15}" for v in VARIANTS))
    for op in ISSUE_OPS:
        print(f"{op:<{width}}" + "".join(f"  {cells[op][v]:<15}" for v in VARIANTS))
    gaps = [(op, v) for op in ISSUE_OPS for v in VARIANTS if cells[op][v] == "GAP"]
    assert not gaps, f"operators only in files refused for something else (add a model that isolates them): {gaps}"
    unconverted = [op for op in ISSUE_OPS if cells[op]["float32"] != "slow" and "f" not in
                   cells[op]["float32"].split(" ")[0].split("+") and op not in ("DEQUANTIZE", "QUANTIZE")]
    assert not unconverted, f"never compared in a float32 model: {unconverted}"
    for op, where in (("DEQUANTIZE", "float16"), ("QUANTIZE", "full-integer"), ("DEQUANTIZE", "full-integer"),
                      ("DENSIFY", "float32"), ("DENSIFY", "full-integer")):
        assert not cells[op][where].startswith(("refused", "known", "-", "GAP")), (op, where, cells[op][where])
