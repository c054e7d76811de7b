"""Float resizes of TF graphs and .tflite files on any grid and size (``tfgraph/ops_image.py`` makes them,
with the index and weight tables ``tfgraph/resize_grid.py`` computes as the kernels do): a bilinear resize
is ``TFResizeBilinear`` (runtime/resize.py), a nearest-neighbour one ``TFLitePixelGather`` (an index gather;
float or integer values alike). Tables arrive in the layer config and are held as buffers.
"""

from __future__ import annotations

import numpy as np

from ..map import layouts
from .base import Converted, Ctx, Module, Param, TensorInfo
from .common import apply_module
from .registry import converter

TF = "tf2torch>"
KERNELS = ("tf", "litert", "litert_2x2")


def _spatial(ctx: Ctx) -> tuple[int, int]:
    h, w = ctx.x.shape[:2] if ctx.x.rank == 4 else (None, None)
    if h is None or w is None:
        raise ctx.unsupported("resizing an image of unknown size", "convert with a fixed input size")
    return h, w


def _indices(ctx: Ctx, key: str, rows: int, bound: int) -> np.ndarray:
    """Config ``key``: ``rows`` lists (one if 0) of source indices in [0, bound)."""
    value = ctx.config.get(key)
    array = np.asarray(value if isinstance(value, list) else [], dtype=object)
    if array.ndim != (2 if rows else 1) or (rows and array.shape[0] != rows) or array.shape[-1] < 1 or \
            not all(isinstance(v, int) and not isinstance(v, bool) and 0 <= v < bound for v in array.reshape(-1)):
        raise ctx.unsupported(f"config {key}: expected {rows or 1} list(s) of source indices below {bound}")
    return array.astype(np.int64)


def _weights(ctx: Ctx, key: str, size: int) -> np.ndarray:
    value = ctx.config.get(key)
    array = np.asarray(value if isinstance(value, list) else [], dtype=object)
    if array.shape != (2, size) or not all(isinstance(v, (int, float)) and not isinstance(v, bool) and
                                           np.isfinite(v) for v in array.reshape(-1)):
        raise ctx.unsupported(f"config {key}: expected 2 lists of {size} weights")
    weights = array.astype(np.float64)
    if not np.array_equal(weights.astype(np.float32).astype(np.float64), weights):
        raise ctx.unsupported(f"config {key}: weights must be float32 values (the kernels' own)")
    return weights.astype(np.float32)


def _buffer(name: str, value: np.ndarray) -> Param:
    return Param("", name, layouts.IDENTITY, const=value)


@converter(TF + "ResizeBilinear", wants="cf")
def resize_bilinear(ctx: Ctx) -> Converted:
    h, w = _spatial(ctx)
    kernel = ctx.config.get("kernel")
    if kernel not in KERNELS:
        raise ctx.unsupported(f"config kernel {kernel!r}: expected one of {', '.join(KERNELS)}")
    rows, cols = _indices(ctx, "rows", 2, h), _indices(ctx, "cols", 2, w)
    params = (_buffer("rows", rows), _buffer("row_weights", _weights(ctx, "row_weights", rows.shape[1])),
              _buffer("cols", cols), _buffer("col_weights", _weights(ctx, "col_weights", cols.shape[1])))
    module = Module("TFResizeBilinear", (rows.shape[1], cols.shape[1]), (("kernel", kernel),))
    out = TensorInfo((rows.shape[1], cols.shape[1], ctx.x.shape[-1]), "cf")
    return Converted((apply_module(module),), (out,), params, helpers=(module.cls,))


@converter(TF + "ResizeNearest", wants="cf")
def resize_nearest(ctx: Ctx) -> Converted:
    h, w = _spatial(ctx)
    rows, cols = _indices(ctx, "rows", 0, h), _indices(ctx, "cols", 0, w)
    module = Module("TFLitePixelGather", (rows.shape[0], cols.shape[0]))
    out = TensorInfo((rows.shape[0], cols.shape[0], ctx.x.shape[-1]), "cf")
    return Converted((apply_module(module),), (out,), (_buffer("rows", rows), _buffer("cols", cols)),
                     helpers=(module.cls,))
