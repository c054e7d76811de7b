"""Index tables of LiteRT's int8 pixel-moving kernels, computed as they compute them: which source row or
column each output takes (RESIZE_NEAREST_NEIGHBOR, MIRROR_PAD), the bilinear resize's neighbours and
weights in 1/1024ths (RESIZE_BILINEAR), and TRANSPOSE_CONV's padding (tflite/kernels/internal/reference/
resize_nearest_neighbor.h, optimized_ops.h, reference/resize_bilinear.h, kernels/padding.h)."""

from __future__ import annotations

import math

import numpy as np


def _c_div(a: int, b: int) -> int:
    """C's integer division: truncates toward zero (Python's // floors)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def nearest_indices(in_size: int, out_size: int, align_corners: bool, half_pixel: bool) -> list[int]:
    """The source index of each output position of RESIZE_NEAREST_NEIGHBOR on 8-bit values."""
    if not align_corners and not half_pixel:
        # The optimized kernel's own path for TF1's grid: a 16.16 fixed-point scale, plus 1 (optimized_ops.h)
        scale = (in_size << 16) // out_size + 1
        return [min((y * scale) >> 16, in_size - 1) for y in range(out_size)]
    # The reference kernel (``GetNearestNeighbor``): float32 arithmetic, round() halves away from zero
    f32 = np.float32
    scale = f32(in_size - 1) / f32(out_size - 1) if align_corners and out_size > 1 else f32(in_size) / f32(out_size)
    offset = f32(0.5) if half_pixel else f32(0.0)
    out = []
    for y in range(out_size):
        v = float((f32(y) + offset) * scale)
        index = min(int(math.floor(v + 0.5) if align_corners else math.floor(v)), in_size - 1)
        out.append(max(0, index) if half_pixel else index)
    return out


def bilinear_tables(in_size: int, out_size: int, align_corners: bool,
                    half_pixel: bool) -> tuple[list[int], list[int], list[int], list[int]]:
    """``ResizeBilinearInteger`` along one axis: for each output position the lower and upper source index
    and their weights (in 1/1024ths; the lower one can exceed 1024 near the border, the two sum to 1024)."""
    scale = ((1 << 10) * in_size + out_size // 2) // out_size
    if align_corners and out_size > 1:
        scale = ((1 << 10) * (in_size - 1) + (out_size - 1) // 2) // (out_size - 1)
    lower, upper, w_lower, w_upper = [], [], [], []
    for y in range(out_size):
        scaled = y * scale + scale // 2 - (1 << 9) if half_pixel else y * scale
        low = max(_c_div(scaled, 1 << 10), 0)  # C division: -256 / 1024 is 0, not -1
        lower.append(low)
        upper.append(min(_c_div(scaled + (1 << 10) - 1, 1 << 10), in_size - 1))
        w_upper.append(scaled - (1 << 10) * low)
        w_lower.append((1 << 10) - w_upper[-1])
    return lower, upper, w_lower, w_upper


def mirror_indices(size: int, before: int, after: int, symmetric: bool) -> list[int]:
    """Source index of each position of an axis mirror-padded by (before, after): REFLECT leaves the edge out
    of the mirror (3 2 | 1 2 3 | 2 1), SYMMETRIC repeats it (2 1 | 1 2 3 | 3 2)."""
    out = []
    for i in range(-before, size + after):
        if i < 0:
            out.append(-i - 1 if symmetric else -i)
        elif i >= size:
            out.append(2 * size - 1 - i if symmetric else 2 * (size - 1) - i)
        else:
            out.append(i)
    return out


def transpose_padding(out_size: int, kernel: int, stride: int, same: bool) -> int:
    """TRANSPOSE_CONV's leading padding along one axis: LiteRT pads as for a convolution from the transposed
    conv's output (``ComputePaddingHeightWidth`` on its output size), and crops that many positions from
    the front of the scattered result (the odd one, if any, from the back)."""
    conv_out = (out_size + stride - 1) // stride if same else (out_size + stride - kernel) // stride
    return max((conv_out - 1) * stride + kernel - out_size, 0) // 2
