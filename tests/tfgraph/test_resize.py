"""Float resizes in a TF graph on every grid and size against TensorFlow's own kernels: one graph holding
ResizeBilinear / ResizeNearestNeighbor on TF1's legacy grid, align_corners and half-pixel centres (the
last through ``tf.image.resize`` too), for integer and non-integer upscales, downscales, 1-pixel inputs
and outputs and an unchanged size. Each resize's output is compared on its own, bit for bit (the tables and the
expression order are TF's; torch's bilinear mode is up to 7e-7 relative away, and would fail).
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import require_tf
from tests.support.numerics import rel_error
from tests.tfgraph.graphs import run_generated, save_graph
from tf2torch import api
from tf2torch.errors import UnsupportedError

pytestmark = pytest.mark.tf

# (input height, width) -> (output height, width): an integer upscale (x2, x3), a non-integer upscale
# with a downscale (5 -> 7, 9 -> 4), 1 -> 3 with 3 -> 1, the same size, an exact 2x (LiteRT's own path)
SIZES = (((4, 3), (8, 9)), ((5, 9), (7, 4)), ((1, 3), (3, 1)), ((3, 4), (3, 4)), ((4, 3), (8, 6)))
GRIDS = {"legacy": (False, False), "align_corners": (True, False), "half_pixel": (False, True)}
CASES = [(method, grid, src, dst) for method in ("bilinear", "nearest") for grid in GRIDS for src, dst in SIZES]


def _label(case) -> str:
    method, grid, (h, w), (oh, ow) = case
    return f"{method} {grid} {h}x{w}->{oh}x{ow}"


def _resizes(tf1, x, var):
    tf = require_tf()
    x = x * var("scale", (3,))  # a variable to save; one float32 product, exact on both sides (a conv's sum
    # order could differ by an ulp and hide the resizes' own rounding)
    outs = []
    for method, grid, (h, w), size in CASES:
        align, half = GRIDS[grid]
        y = x[:, :h, 9 - w:, :]  # a different corner per width, so the slices differ
        op = tf.raw_ops.ResizeBilinear if method == "bilinear" else tf.raw_ops.ResizeNearestNeighbor
        y = op(images=y, size=list(size), align_corners=align, half_pixel_centers=half)
        outs.append(tf1.reshape(y, [-1, size[0] * size[1] * 3]))
    for method in ("bilinear", "nearest"):  # TF2's tf.image.resize (half-pixel centres), 5x9 -> 7x4
        outs.append(tf1.reshape(tf.image.resize(x[:, :5, :, :], [7, 4], method=method), [-1, 7 * 4 * 3]))
    return tf1.concat(outs, axis=1, name="out")


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    saved = save_graph(tmp_path_factory.mktemp("resize"), _resizes, (9, 9, 3), seed=25)
    result = api.convert(saved.frozen, None, dry_run=True)
    return saved, run_generated(result, saved.x), result.model_source


def test_every_grid_and_size_matches_tf(converted):
    saved, out, _ = converted
    assert out.shape == saved.expected.shape
    start, worst = 0, 0.0
    labels = [_label(c) for c in CASES] + ["tf.image.resize bilinear 5x9->7x4", "tf.image.resize nearest 5x9->7x4"]
    sizes = [oh * ow * 3 for *_, (oh, ow) in CASES] + [7 * 4 * 3] * 2
    for label, size in zip(labels, sizes):
        got, want = out[:, start:start + size], saved.expected[:, start:start + size]
        start += size
        rel = rel_error(got, want)
        print(f"{label}: max abs {np.abs(got - want).max():.2e}, max rel {rel:.2e}, "
              f"bit-equal {np.array_equal(got, want)}")
        worst = max(worst, rel)
        np.testing.assert_array_equal(got, want, err_msg=label)  # bit-equal: torch's bilinear is 7e-7 away
    assert start == out.shape[1]
    print(f"worst of {len(labels)} resizes: {worst:.2e}")


def test_the_repeat_of_an_integer_factor_stays_an_upsample(converted):
    """A nearest-neighbour resize whose indices are a plain repeat keeps torch's nn.Upsample."""
    *_, source = converted
    assert "nn.Upsample" in source and "TFResizeBilinear" in source and "TFLitePixelGather" in source


def test_a_resize_to_a_size_computed_at_run_time_is_refused(tmp_path):
    def build(tf1, x, var):
        y = tf1.nn.conv2d(x, var("c/weights", (1, 1, 3, 2)), [1, 1, 1, 1], "SAME")
        size = tf1.stack([tf1.shape(y)[0], 6])  # the batch size as a height: known only at run time
        return tf1.image.resize_bilinear(y, size, name="out")
    graph = save_graph(tmp_path, build, (4, 4, 3))
    with pytest.raises(UnsupportedError, match="its size .* must be a constant"):
        api.convert(graph.frozen, None, dry_run=True)


def test_a_tf2_savedmodel_of_resizes_matches_tf(tmp_path):
    """tf.image.resize and tf.compat.v1's resizes inside a tf.function of a saved tf.Module (TF2's route:
    signatures, function library), each output bit-equal to TF's."""
    tf = require_tf()
    rng = np.random.default_rng(4)

    class Resizes(tf.Module):
        def __init__(self):
            super().__init__()
            self.scale = tf.Variable(rng.uniform(0.5, 1.5, (3,)).astype(np.float32), name="scale")

        @tf.function(input_signature=[tf.TensorSpec([None, 5, 9, 3], tf.float32, name="img")])
        def __call__(self, img):
            x = img * self.scale
            return {"a_bilinear": tf.image.resize(x, [7, 4]),  # half-pixel centres
                    "b_nearest": tf.image.resize(x, [11, 20], method="nearest"),
                    "c_aligned": tf.compat.v1.image.resize_bilinear(x, [3, 13], align_corners=True),
                    "d_legacy": tf.compat.v1.image.resize_nearest_neighbor(x, [2, 6])}

    module = Resizes()
    tf.saved_model.save(module, str(tmp_path / "export"), signatures=module.__call__)
    x = rng.normal(size=(2, 5, 9, 3)).astype(np.float32)
    expected = module(x)
    result = api.convert(tmp_path / "export", None, dry_run=True)
    got = run_generated(result, x)
    for g, key in zip(got, sorted(expected)):
        want = expected[key].numpy()
        print(f"SavedModel {key}: max abs {np.abs(g - want).max():.2e}, bit-equal {np.array_equal(g, want)}")
        np.testing.assert_array_equal(g, want, err_msg=key)
