"""Float RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR in .tflite files made by TF's converter (float32 and
float16 weights) against the interpreter's builtin kernels without delegates, on every grid (TF1's legacy
grid, align_corners, half-pixel centres) and size: integer and non-integer upscales, downscales, 1-pixel
inputs and outputs, an unchanged size and the exact 2x upscale LiteRT's optimized kernel treats apart.
XNNPACK's distance is printed beside (it computes its own way; not the reference).

One model holds every resize (each flattened into one concatenated output), so one conversion covers them.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.support.numerics import rel_error
from tests.tflite import models
from tests.tflite.models import interpret, make_tflite
from tests.util import convert_in_memory, to_tf_layout, to_torch_layout

pytestmark = pytest.mark.tf

# (input height, width) -> (output height, width), as tests/tfgraph/test_resize.py
SIZES = (((4, 3), (8, 9)), ((5, 9), (7, 4)), ((1, 3), (3, 1)), ((3, 4), (3, 4)), ((4, 3), (8, 6)))
GRIDS = {"legacy": (False, False), "align_corners": (True, False), "half_pixel": (False, True)}
CASES = [(method, grid, src, dst) for method in ("bilinear", "nearest") for grid in GRIDS for src, dst in SIZES]
CHANNELS = 5  # LiteRT's vector loops take 4 channels at a time: 5 leaves a scalar tail


def resizes(keras):
    tf = models.require_tf()
    L = keras.layers
    x = keras.Input((9, 9, CHANNELS))

    def resize(t, method, grid, src, dst):
        (h, w), (align, half) = src, GRIDS[grid]
        op = tf.raw_ops.ResizeBilinear if method == "bilinear" else tf.raw_ops.ResizeNearestNeighbor
        y = op(images=t[:, :h, 9 - w:, :], size=list(dst), align_corners=align, half_pixel_centers=half)
        return tf.reshape(y, (-1, dst[0] * dst[1] * CHANNELS))

    flat = [L.Lambda(lambda t, c=case: resize(t, *c))(x) for case in CASES]
    # a conv beside, so the float16 file has weights to store (not before the resizes: its own float32
    # rounding, ~1e-7, would hide theirs)
    return keras.Model(x, [L.Concatenate()(flat), L.Conv2D(2, 3)(x)])


models.MODELS.update({"float_resizes": resizes})


@pytest.fixture(scope="module", params=["float32", "float16"])
def converted(request, tmp_path_factory):
    path = make_tflite(tmp_path_factory.mktemp("resize"), "float_resizes", fp16=request.param == "float16", seed=25)
    model, result = convert_in_memory(path)
    counts = result.report.counts()
    assert counts["missing"] == counts["unexpected"] == counts["mismatched"] == 0, counts
    x = np.random.default_rng(7).normal(size=(2, 9, 9, CHANNELS)).astype(np.float32) * 4
    with torch.no_grad():
        outs = [to_tf_layout(o) for o in model(to_torch_layout(x))]
    names = [o["name"] for o in result.report.interface["outputs"]]  # the interpreter's order: by name
    order = sorted(range(len(names)), key=lambda i: names[i])
    return request.param, path, x, [outs[i] for i in order], result.model_source, (model, order)


def _split(out: np.ndarray) -> list[np.ndarray]:
    bounds = np.cumsum([0] + [oh * ow * CHANNELS for *_, (oh, ow) in CASES])
    assert bounds[-1] == out.shape[1]
    return [out[:, a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def test_every_grid_and_size_matches_the_builtin_kernels(converted):
    kind, path, x, (got, conv), source, _ = converted
    assert "TFResizeBilinear(" in source and "TFLitePixelGather(" in source
    (ref, ref_conv), xnn = interpret(path, [x]), interpret(path, [x], xnnpack=True)[0]
    assert got.shape == ref.shape and conv.shape == ref_conv.shape, (got.shape, ref.shape)
    print(f"{kind} conv beside: max rel {rel_error(conv, ref_conv):.2e}")
    assert rel_error(conv, ref_conv) <= 1e-6
    worst = 0.0
    for (method, grid, (h, w), (oh, ow)), g, r, q in zip(CASES, _split(got), _split(ref), _split(xnn)):
        rel = rel_error(g, r)
        worst = max(worst, rel)
        print(f"{kind} {method} {grid} {h}x{w}->{oh}x{ow}: max abs {np.abs(g - r).max():.2e}, max rel {rel:.2e}, "
              f"bit-equal {np.array_equal(g, r)}; XNNPACK vs reference kernels {rel_error(q, r):.2e}")
        # bit-equal, not a tolerance: the wrong expression order is only ~1e-7 away (the control below)
        np.testing.assert_array_equal(g, r, err_msg=f"{method} {grid} {h}x{w}->{oh}x{ow}")
    print(f"{kind}: worst of {len(CASES)} resizes {worst:.2e}")


def test_the_kernels_expression_order_is_what_makes_it_exact(converted):
    """Control: the same tables summed in TF's order (top + (bottom - top) * y_lerp, with LiteRT's weights'
    lerps) instead of LiteRT's moves the bilinear outputs off the interpreter's (by ~1e-7, under the usual
    tolerance: hence the bit-equality asserted above), so that equality comes from following the kernel,
    not from the test's inputs."""
    kind, path, x, _, _, (model, order) = converted
    if kind != "float32":
        pytest.skip("one control is enough")
    swapped = [m for m in model.modules() if type(m).__name__ == "TFResizeBilinear" and m.kernel == "litert"]
    assert swapped
    for m in swapped:
        m.kernel = "tf"
    try:
        with torch.no_grad():
            outs = [to_tf_layout(o) for o in model(to_torch_layout(x))]
    finally:
        for m in swapped:
            m.kernel = "litert"
    ref = interpret(path, [x])[0]
    moved = [(case, rel_error(g, r)) for case, g, r in zip(CASES, _split(outs[order[0]]), _split(ref))
             if case[0] == "bilinear" and not np.array_equal(g, r)]
    for (_, grid, (h, w), (oh, ow)), rel in moved:
        print(f"TF's expression order on LiteRT's {grid} {h}x{w}->{oh}x{ow}: max rel {rel:.2e}")
    assert moved
