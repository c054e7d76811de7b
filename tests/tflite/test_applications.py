"""keras.applications through TF's own TFLite converter in each variant (float32, float16 weights,
dynamic-range, full-integer int8 with a seeded representative dataset), converted by tf2torch and compared
with the interpreter's builtin kernels (no delegate): float outputs under the error rule (1e-6 relative,
or 4x the converted model's own float64 drift: ``tests/support/numerics.py``), int8 outputs in
quantization steps (the fraction exactly equal printed, >= 99 % within one step asserted), the XNNPACK
delegate's distance printed beside (not the yardstick).

Weights are ``weights=None``, every variable randomised by ``tests/support/weights.py`` (profile LAYERS:
kernels scaled by fan-in, BatchNorm variances in [0.5, 1.5], scales in [0.5, 1.5]: random statistics that
keep a deep net's activations O(1)). Classifiers return logits. TF's converter takes 13-65 s per file on
two loaded cores (EfficientNetB0 35-65 s, ResNet50 17-31 s, MobileNetV2 13-18 s; tf2torch 0.1-5.6 s), so
``make test`` runs one variant, MobileNetV2 full-integer (~15-20 s: its float16 and 96x96 int8 forms are in
test_models.py / test_full_integer.py), and TF2TORCH_SLOW=1 the other eleven (4-7 min).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.support.numerics import check, float64_drift, rel_error
from tests.tflite.models import interpret
from tests.util import convert_in_memory, to_tf_layout, to_torch_layout

pytestmark = pytest.mark.tf
SLOW = pytest.mark.skipif(os.environ.get("TF2TORCH_SLOW") != "1", reason="TF2TORCH_SLOW=1 runs it (10-60 s)")

# name -> (constructor keyword arguments, input size, pixel inputs in [0, 255]: EfficientNet rescales and
# normalises its input itself, so N(0, 1) inputs would arrive almost constant)
APPS = {"EfficientNetB0": ({}, 32, True), "ResNet50": ({}, 32, False), "MobileNetV2": ({"alpha": 0.35}, 32, False)}
VARIANTS = ("float32", "float16", "dynamic-range", "full-integer")
FAST = {("MobileNetV2", "full-integer")}
CASES = [pytest.param(app, variant, marks=[] if (app, variant) in FAST else [pytest.mark.slow, SLOW],
                      id=f"{app}-{variant}") for app in APPS for variant in VARIANTS]


def _inputs(rng: np.random.Generator, size: int, pixels: bool, batch: int) -> np.ndarray:
    shape = (batch, size, size, 3)
    return (rng.uniform(0, 255, shape) if pixels else rng.normal(size=shape)).astype(np.float32)


def make_app(folder: Path, app: str, variant: str, seed: int = 3) -> Path:
    """keras.applications ``app`` with randomised weights through TF's TFLite converter in ``variant``."""
    from tests.conftest import require_keras, require_tf
    from tests.support.weights import LAYERS, randomise_keras

    tf, keras = require_tf(), require_keras()
    kwargs, size, pixels = APPS[app]
    keras.utils.set_random_seed(seed)
    model = getattr(keras.applications, app)(input_shape=(size, size, 3), weights=None, classes=10,
                                             classifier_activation=None, **kwargs)
    randomise_keras(model, seed, LAYERS)
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    if variant != "float32":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if variant == "float16":
        converter.target_spec.supported_types = [tf.float16]
    if variant == "full-integer":
        rng = np.random.default_rng(seed)
        converter.representative_dataset = lambda: ([_inputs(rng, size, pixels, 1)] for _ in range(8))
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        converter.inference_input_type = converter.inference_output_type = tf.int8
    path = folder / f"{app}_{variant}.tflite"
    path.write_bytes(converter.convert())
    return path


@pytest.mark.parametrize(("app", "variant"), CASES)
def test_against_interpreter(tmp_path, app, variant):
    from tf2torch.readers.tflite.reader import read_model

    started = time.perf_counter()
    path = make_app(tmp_path, app, variant)
    made = time.perf_counter()
    model, result = convert_in_memory(path)
    counts = result.report.counts()
    assert counts["missing"] == counts["unexpected"] == counts["mismatched"] == 0, counts
    converted = time.perf_counter()
    _, size, pixels = APPS[app]
    x = _inputs(np.random.default_rng(17), size, pixels, 2)
    graph = read_model(path).subgraphs[0]
    t_in = graph.tensors[graph.inputs[0]]
    if variant == "full-integer":  # the input quantized with its scale and zero point, as LiteRT's QUANTIZE would
        (scale,), (zero,) = t_in.quantization.scales, t_in.quantization.zero_points
        v = x / scale
        x = np.clip(np.sign(v) * np.floor(np.abs(v) + 0.5) + zero, -128, 127).astype(np.int8)
    feed = [to_torch_layout(x)]
    with torch.no_grad():
        got = to_tf_layout(model(*feed))
    (ref,) = interpret(path, [x])
    (fast,) = interpret(path, [x], xnnpack=True)
    label = f"{app} ({APPS[app][1]}x{APPS[app][1]}) {variant}"
    if variant == "full-integer":
        assert got.dtype == ref.dtype == np.int8
        for against, other in (("reference kernels", ref), ("XNNPACK", fast)):
            steps = np.abs(got.astype(np.int64) - other.astype(np.int64))
            print(f"{label} vs {against}: {np.mean(steps == 0):.1%} exact, {np.mean(steps <= 1):.1%} within one "
                  f"step, max {steps.max()} steps ({steps.size} values)")
        steps = np.abs(got.astype(np.int64) - ref.astype(np.int64))
        assert np.mean(steps <= 1) >= 0.99
    else:
        drift = float64_drift(model, feed)
        check(got, ref, f"{label} vs reference kernels", drift)
        print(f"{label}: XNNPACK vs reference kernels {rel_error(fast, ref):.2e}")
    print(f"{label}: TF's converter {made - started:.1f} s, tf2torch {converted - made:.1f} s, "
          f"{len(graph.operators)} operators")
