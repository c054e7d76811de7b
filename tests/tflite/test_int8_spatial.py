"""The int8 operators that move pixels (RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR on every grid, MIRROR_PAD,
TILE, TRANSPOSE_CONV) in full-integer models made by TF's converter, against the interpreter's builtin kernels
without delegates (exact fractions printed, XNNPACK's beside them), and the dynamic-range (hybrid)
TRANSPOSE_CONV TF's converter writes for a Conv2DTranspose, under the error rule.

A U-Net-like decoder (UpSampling2D nearest and bilinear, Conv2DTranspose, Concatenate) is what TF's converter
turns into EXPAND_DIMS + TILE + RESHAPE (Keras 3's nearest upsampling), RESIZE_BILINEAR, TRANSPOSE_CONV (its
output shape from SHAPE / STRIDED_SLICE / PACK) and CONCATENATION, all on int8.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from tests.support.numerics import check, float64_drift, rel_error
from tests.tflite import models
from tests.tflite.models import input_shapes, interpret, make_tflite
from tests.util import convert_in_memory, to_tf_layout, to_torch_layout

pytestmark = pytest.mark.tf


def spatial(keras):
    """Every resize grid (TF2's half-pixel centres, align_corners, TF1's legacy grid), non-integer factors
    up (5x7 -> 9x13) and down (-> 3x4), MIRROR_PAD REFLECT and SYMMETRIC, TILE: each an output."""
    tf = models.require_tf()
    L, ops = keras.layers, keras.ops
    v1 = tf.compat.v1.image
    inp = keras.Input((5, 7, 4))
    x = L.Conv2D(6, 3, padding="same")(inp)
    resizes = [lambda t: tf.image.resize(t, (9, 13), method="bilinear"),
               lambda t: v1.resize_bilinear(t, (9, 13), align_corners=True),
               lambda t: v1.resize_bilinear(t, (9, 13)),
               lambda t: tf.image.resize(t, (3, 4), method="bilinear"),
               lambda t: tf.image.resize(t, (9, 13), method="nearest"),
               lambda t: v1.resize_nearest_neighbor(t, (9, 13), align_corners=True),
               lambda t: v1.resize_nearest_neighbor(t, (9, 13)),
               lambda t: v1.resize_nearest_neighbor(t, (3, 4)),
               lambda t: ops.pad(t, ((0, 0), (1, 2), (2, 1), (0, 0)), mode="reflect"),
               lambda t: ops.pad(t, ((0, 0), (2, 0), (3, 1), (0, 0)), mode="symmetric"),
               lambda t: ops.tile(t, (1, 2, 1, 3))]
    return keras.Model(inp, [L.Lambda(f)(x) for f in resizes])


def decoder(keras):
    """A U-Net-like decoder: UpSampling2D nearest and bilinear and a Conv2DTranspose (SAME, stride 2, fused
    RELU) concatenated with the skip connection; a VALID Conv2DTranspose with a kernel larger than its stride
    (12 channels: 8 in the requantization's vector loop, 4 in its scalar one; no activation, so negative
    halves are not clamped away), and one without bias whose stride exceeds its kernel. Kernels of >= 1024
    values, so dynamic-range quantization makes them int8."""
    L = keras.layers
    inp = keras.Input((12, 10, 3))
    e1 = L.Conv2D(8, 3, padding="same", activation="relu")(inp)
    e2 = L.Conv2D(16, 3, strides=2, padding="same", activation="relu")(e1)
    t1 = L.Conv2DTranspose(12, 3, strides=2, padding="same", activation="relu")(e2)
    t2 = L.Conv2DTranspose(12, 4, strides=2, padding="valid")(e2)
    t3 = L.Conv2DTranspose(16, 2, strides=3, padding="same", use_bias=False)(e2)
    x = L.Concatenate()([e1, L.UpSampling2D(2)(e2), L.UpSampling2D(2, interpolation="bilinear")(e2), t1])
    return keras.Model(inp, [L.Conv2D(4, 3, padding="same")(x), t1, t2, t3])


models.MODELS.update({"int8_spatial": spatial, "int8_decoder": decoder})


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("int8_spatial")
    return {"spatial": make_tflite(folder, "int8_spatial", quantize="full_integer", seed=5),
            "decoder": make_tflite(folder, "int8_decoder", quantize="full_integer", seed=5),
            "hybrid": make_tflite(folder, "int8_decoder", quantize="dynamic_range", seed=5)}


def _outputs(model, result, xs: list[np.ndarray]) -> list[np.ndarray]:
    """The converted model's outputs in the interpreter's order (by signature key)."""
    with torch.no_grad():
        out = model(*[to_torch_layout(x) for x in xs])
    outs = [to_tf_layout(o) for o in (out if isinstance(out, tuple) else (out,))]
    names = [o["name"] for o in result.report.interface["outputs"]]
    return [outs[i] for i in sorted(range(len(names)), key=lambda i: names[i])]


@pytest.mark.parametrize("name", ["spatial", "decoder"])
def test_full_integer_matches_the_reference_kernels(files, name):
    path = files[name]
    model, result = convert_in_memory(path)
    counts = result.report.counts()
    assert counts["missing"] == counts["unexpected"] == counts["mismatched"] == 0, counts
    wanted = {"spatial": ("TFLiteQuantResizeBilinear(", "TFLitePixelGather("),
              "decoder": ("TFLiteQuantConvTranspose2d(", "TFLiteQuantResizeBilinear(", ".tile(")}[name]
    assert all(w in result.model_source for w in wanted), wanted
    rng = np.random.default_rng(3)
    xs = [rng.integers(-128, 128, size=(3, *shape[1:])).astype(np.int8) for shape in input_shapes(path)]
    outs = _outputs(model, result, xs)
    for xnnpack in (False, True):
        for k, (got, ref) in enumerate(zip(outs, interpret(path, xs, xnnpack=xnnpack))):
            assert got.dtype == ref.dtype == np.int8 and got.shape == ref.shape, (got.dtype, got.shape, ref.shape)
            steps = np.abs(got.astype(np.int64) - ref.astype(np.int64))
            print(f"{name} output {k} vs {'XNNPACK' if xnnpack else 'reference kernels'}: {np.mean(steps == 0):.2%} "
                  f"exact, {np.mean(steps <= 1):.2%} within one step, max {steps.max()} steps ({steps.size} values)")
            if not xnnpack:
                np.testing.assert_array_equal(got, ref, err_msg=f"{name} output {k}")


def _interpreter(path: Path, x: np.ndarray):
    """The reference kernels run on ``x`` with every tensor kept."""
    import warnings

    from tests.conftest import require_tf

    tf = require_tf()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        interp = tf.lite.Interpreter(model_path=str(path), experimental_preserve_all_tensors=True,
                                     experimental_op_resolver_type=tf.lite.experimental.OpResolverType
                                     .BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    interp.resize_tensor_input(interp.get_input_details()[0]["index"], x.shape)
    interp.allocate_tensors()
    interp.set_tensor(interp.get_input_details()[0]["index"], x)
    interp.invoke()
    return interp


def test_rounding_is_the_builtin_kernels(files):
    """Which rounding the kernels take, measured per operator on the interpreter's own int8 input to it:
    TRANSPOSE_CONV's requantization rounds half up in the first C // 8 * 8 channels (the vector loop) and
    half away from zero in the rest; RESIZE_BILINEAR's final division by 2**20 rounds halves away from zero
    (not TFLITE_SINGLE_ROUNDING's floor of + 2**19). The emulation's rule must be exact; the other rules are
    printed, and each must differ somewhere, or the probe could not tell them apart."""
    from tests.util import load_source, state_dict
    from tf2torch.readers.tflite.reader import read_model

    path = files["decoder"]
    _, result = convert_in_memory(path)
    namespace = load_source(result.model_source)
    model = namespace["build_model"]()
    model.load_state_dict(state_dict(result.plans), strict=True)
    interp = _interpreter(path, np.random.default_rng(9).integers(-128, 128, (8, 12, 10, 3)).astype(np.int8))
    graph = read_model(path).subgraphs[0]

    def tensor(i: int) -> torch.Tensor:
        return torch.from_numpy(np.array(interp.get_tensor(i))).permute(0, 3, 1, 2)

    transposed = [op for op in graph.operators if op.op == "TRANSPOSE_CONV"]
    modules = {tuple(m.weight.shape): m for m in model.modules() if type(m).__name__ == "TFLiteQuantConvTranspose2d"}
    assert len(transposed) == len(modules) == 3
    requantize = namespace["lite_requantize"]
    rules = {"vector half up, scalar away from zero": requantize,
             "all half up": lambda a, m, s, upward=False: requantize(a, m, s, True),
             "all away from zero": lambda a, m, s, upward=False: requantize(a, m, s, False)}
    differs: dict[str, bool] = {}
    for op in transposed:
        o, kh, kw, i = graph.tensors[op.inputs[1]].shape
        module, expected = modules[(i, o, kh, kw)], tensor(op.outputs[0])
        for rule, fn in rules.items():
            namespace["lite_requantize"] = fn
            with torch.no_grad():
                equal = float((module(tensor(op.inputs[2])) == expected).double().mean())
            namespace["lite_requantize"] = requantize
            print(f"TRANSPOSE_CONV to {o} channels: rounding {rule}: {equal:.2%} of {expected.numel()} equal")
            if rule.startswith("vector"):
                assert equal == 1.0, rule
            else:
                differs[rule] = differs.get(rule, False) or equal < 1.0
    (op,) = [op for op in graph.operators if op.op == "RESIZE_BILINEAR"]
    (module,) = [m for m in model.modules() if type(m).__name__ == "TFLiteQuantResizeBilinear"]
    x, expected = tensor(op.inputs[0]), tensor(op.outputs[0]).long()
    with torch.no_grad():
        ours = module(x).long()
        total = namespace["lite_bilinear_sum"](x.long(), module.rows, module.row_weights, module.cols,
                                               module.col_weights)
    single = (total + (1 << 19)) >> 20
    for rule, got in (("halves away from zero", ours), ("single rounding", single)):
        print(f"RESIZE_BILINEAR: {rule}: {float((got == expected).double().mean()):.2%} of {expected.numel()} equal")
    assert torch.equal(ours, expected)
    differs["single rounding"] = not torch.equal(single, expected)
    assert all(differs.values()), differs


@pytest.mark.parametrize("scales", ["per channel", "one scale"])
def test_hybrid_transpose_conv(files, tmp_path, scales):
    """Dynamic-range quantization of the decoder: TF's converter keeps TRANSPOSE_CONV whole with int8
    per-channel weights on float input (no DEQUANTIZE), which LiteRT runs as ``HybridTransposeConv``: each
    batch item quantized asymmetrically, integer products scaled back. "one scale": the weights' scales
    rewritten in the file to one for all channels, which LiteRT's Prepare repeats per channel. Compared under
    the error rule, with the --dequantize float model's distance printed as the control (the emulation is
    what makes the difference)."""
    path = files["hybrid"]
    if scales == "one scale":
        def one_scale(model, schema) -> None:
            graph = model.subgraphs[0]
            for op in graph.operators:
                if model.operatorCodes[op.opcodeIndex].builtinCode == schema.BuiltinOperator.TRANSPOSE_CONV:
                    q = graph.tensors[op.inputs[1]].quantization
                    q.scale, q.zeroPoint = [float(max(q.scale))], [0]

        path = _rewritten(path, tmp_path / "one_scale.tflite", one_scale)
    model, result = convert_in_memory(path)
    counts = result.report.counts()
    assert counts["missing"] == counts["unexpected"] == counts["mismatched"] == 0, counts
    assert result.model_source.count("= TFLiteHybridConvTranspose2d(") == 3
    assert sum(p.dtype.name == "int8" for p in result.plans) >= 2
    xs = [np.random.default_rng(7).normal(size=(3, *shape[1:])).astype(np.float32) for shape in input_shapes(path)]
    outs, expected = _outputs(model, result, xs), interpret(path, xs)
    dequantized, _ = convert_in_memory(path, dequantize=True)
    floats = _outputs(dequantized, result, xs)
    for k, (out, ref) in enumerate(zip(outs, expected)):
        def read(o, k=k):
            return _outputs_from(result, o)[k]
        drift = float64_drift(model, [to_torch_layout(x) for x in xs], read)
        error = check(out, ref, f"hybrid decoder ({scales}) output {k} (emulation vs reference kernels)", drift)
        far = rel_error(floats[k], ref)
        print(f"hybrid decoder ({scales}) output {k}: the --dequantize float model vs reference kernels {far:.2e}")
        assert far > 10 * max(error, 1e-7)


def _outputs_from(result, out) -> list:
    outs = list(out) if isinstance(out, tuple) else [out]
    names = [o["name"] for o in result.report.interface["outputs"]]
    return [outs[i] for i in sorted(range(len(names)), key=lambda i: names[i])]


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


def test_what_stays_refused(files, tmp_path):
    """An int8 MIRROR_PAD whose output is quantized unlike its input (LiteRT's Prepare refuses it; the file
    rewritten) and a resize with both align_corners and half-pixel centres (LiteRT refuses that too): exit 1,
    one line naming the operator and the cause, nothing written."""
    from tests.test_hostile import refuses_without_output

    def code(model, schema, op) -> int:
        return model.operatorCodes[op.opcodeIndex].builtinCode

    def rescaled(model, schema) -> None:
        graph = model.subgraphs[0]
        op = next(op for op in graph.operators if code(model, schema, op) == schema.BuiltinOperator.MIRROR_PAD)
        graph.tensors[op.outputs[0]].quantization.scale = [2 * graph.tensors[op.outputs[0]].quantization.scale[0]]

    def both_grids(model, schema) -> None:
        graph = model.subgraphs[0]
        op = next(op for op in graph.operators if code(model, schema, op) == schema.BuiltinOperator.RESIZE_BILINEAR
                  and op.builtinOptions.halfPixelCenters)
        op.builtinOptions.alignCorners = True

    path = _rewritten(files["spatial"], tmp_path / "rescaled.tflite", rescaled)
    refuses_without_output(tmp_path, path, "MIRROR_PAD", "quantized unlike its input")
    path = _rewritten(files["spatial"], tmp_path / "both.tflite", both_grids)
    refuses_without_output(tmp_path, path, "RESIZE_BILINEAR", "align_corners=True, half_pixel_centers=True")
