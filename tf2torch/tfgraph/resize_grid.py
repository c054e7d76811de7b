"""Where a float resize samples, computed as TF's and LiteRT's float kernels compute it: per output row (or
column) the source indices and interpolation weights, in float32 as the kernels do, so the tables the
runtime module holds are bit-equal to theirs.

Sources: tensorflow/core/util/image_resizer_state.h (``CalculateResizeScale``, ``HalfPixelScaler``,
``LegacyScaler``), core/kernels/image/resize_bilinear_op.cc (``compute_interpolation_weights``),
resize_nearest_neighbor_op.cc (``compute_indices``); tensorflow/lite/kernels/internal/reference/
resize_bilinear.h (``ComputeInterpolationValues``), resize_nearest_neighbor.h (``GetNearestNeighbor``) and
optimized/resize_bilinear.h (``ResizeBilinear``: the 2x2 special case and ``ResizeBilinearGeneric``).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

F32 = np.float32


def resize_scale(in_size: int, out_size: int, align_corners: bool) -> np.float32:
    """Both runtimes' scale: (in - 1) / (out - 1) corner-aligned (when out > 1), else in / out, a float32
    division of the sizes converted to float32."""
    if align_corners and out_size > 1:
        return F32(in_size - 1) / F32(out_size - 1)
    return F32(in_size) / F32(out_size)


def _source(i: int, scale: np.float32, half_pixel: bool) -> np.float32:
    # (i + 0.5f) * scale - 0.5f on the half-pixel grid, i * scale otherwise: each step rounded to float32
    # (measured equal to both kernels on x86: no fused multiply-add; tests/tfgraph/test_resize.py)
    return (F32(i) + F32(0.5)) * scale - F32(0.5) if half_pixel else F32(i) * scale


def nearest_indices(in_size: int, out_size: int, align_corners: bool, half_pixel: bool) -> list[int]:
    """The source index of each output position of a float nearest-neighbour resize (TF's ``compute_indices``
    and LiteRT's reference ``GetNearestNeighbor``, which LiteRT runs for float32: the same formula)."""
    scale = resize_scale(in_size, out_size, align_corners)
    out = []
    for i in range(out_size):
        # the half-pixel offset is added but 0.5 not taken off: the floor does that (TF's HalfPixelScalerForNN)
        v = float((F32(i) + F32(0.5)) * scale if half_pixel else F32(i) * scale)
        index = min(int(math.floor(v + 0.5) if align_corners else math.floor(v)), in_size - 1)  # roundf: half away
        out.append(max(index, 0))  # (only the half-pixel grid can go below 0; clamping the others is a no-op)
    return out


def tf_bilinear_axis(in_size: int, out_size: int, align_corners: bool,
                     half_pixel: bool) -> tuple[list[int], list[int], list[float]]:
    """TF's ``compute_interpolation_weights``: lower = max(floor(in), 0), upper = min(ceil(in), size - 1),
    lerp = in - floor(in) (from the unclamped floor: where in < 0 both indices are 0 and the lerp is moot)."""
    scale = resize_scale(in_size, out_size, align_corners)
    lower, upper, lerp = [], [], []
    for i in range(out_size):
        v = _source(i, scale, half_pixel)
        floor = np.floor(v)
        lower.append(max(int(floor), 0))
        upper.append(min(int(np.ceil(v)), in_size - 1))
        lerp.append(float(v - floor))
    return lower, upper, lerp


def litert_bilinear_axis(in_size: int, out_size: int, align_corners: bool,
                         half_pixel: bool) -> tuple[list[int], list[int], list[float], list[float]]:
    """LiteRT's ``ComputeInterpolationValues`` for float: the same indices, but the weights are 1 - (in - lower)
    and in - lower with the *clamped* lower index (so near a half-pixel border they leave [0, 1] and sum
    to 1 only approximately, as in the kernel)."""
    scale = resize_scale(in_size, out_size, align_corners)
    lower, upper, w_lower, w_upper = [], [], [], []
    for i in range(out_size):
        v = _source(i, scale, half_pixel)
        low = max(int(np.floor(v)), 0)
        lower.append(low)
        upper.append(min(int(np.ceil(v)), in_size - 1))
        d = v - F32(low)
        w_lower.append(float(F32(1) - d))
        w_upper.append(float(d))
    return lower, upper, w_lower, w_upper


def litert_uses_2x2(in_hw: tuple[int, int], out_hw: tuple[int, int], align_corners: bool, half_pixel: bool) -> bool:
    """LiteRT's optimized float kernel has its own path for an exact 2x upscale on the legacy grid."""
    return not align_corners and not half_pixel and out_hw == (2 * in_hw[0], 2 * in_hw[1])


def litert_2x2_axis(in_size: int) -> tuple[list[int], list[int], list[float]]:
    """``ResizeBilinear2x2`` along one axis: output 2i copies source i, 2i + 1 is the mean of i and
    min(i + 1, size - 1) (its weight 0.5 marks an averaged position, 0 a copied one)."""
    lower = [i for i in range(in_size) for _ in range(2)]
    upper = [min(i + 1, in_size - 1) if odd else i for i in range(in_size) for odd in (0, 1)]
    mean = [0.5 * odd for _ in range(in_size) for odd in (0, 1)]
    return lower, upper, mean


def repeat_factor(indices: list[int], in_size: int) -> int | None:
    """f when ``indices`` repeat each source index f times in order (an integer upscale), else None."""
    factor, rest = divmod(len(indices), in_size)
    return factor if not rest and indices == [i // factor for i in range(len(indices))] else None


def bilinear_tables(in_hw: tuple[int, int], out_hw: tuple[int, int], align_corners: bool, half_pixel: bool,
                    litert: bool) -> dict[str, Any]:
    """The ``tf2torch>ResizeBilinear`` layer config (runtime/resize.py's ``TFResizeBilinear``): which kernel,
    and per axis the lower / upper source indices and the two weights that kernel reads."""
    axes = tuple(zip(in_hw, out_hw))
    if litert and litert_uses_2x2(in_hw, out_hw, align_corners, half_pixel):
        kernel, tables = "litert_2x2", [litert_2x2_axis(i) for i, _ in axes]
        tables = [(low, up, [0.0] * len(mean), mean) for low, up, mean in tables]
    elif litert:
        kernel, tables = "litert", [litert_bilinear_axis(i, o, align_corners, half_pixel) for i, o in axes]
    else:  # TF reads only the lerp
        kernel, tables = "tf", [(low, up, [0.0] * len(lerp), lerp)
                                for low, up, lerp in (tf_bilinear_axis(i, o, align_corners, half_pixel) for i, o in axes)]
    (rl, ru, r0, r1), (cl, cu, c0, c1) = tables
    return {"kernel": kernel, "rows": [rl, ru], "row_weights": [r0, r1], "cols": [cl, cu], "col_weights": [c0, c1]}
