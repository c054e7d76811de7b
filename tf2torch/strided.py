"""Blocked copies of strided arrays into C order: ``permute``, ``contiguous`` and ``copy_into``.

A layout change is a strided *view* of the source (``a.transpose(axes)``): ``copy_into(dst, view)``
writes it in C order into ``dst``, the writer does so band by band into a small reused buffer, and
``permute``/``contiguous`` into a new array.

``np.copyto(dst, a.T)`` walks the source in output order: for a 2-D transpose every element read
lands in a different source row (a new cache line and, every few rows, a new page), so it runs at a
small fraction of memcpy speed. Here the copy is first simplified (size-1 axes dropped, axes that stay
neighbours in memory and in the output merged, which turns e.g. a depthwise (H, W, C, 1) -> (C, 1, H, W)
or a 1x1 conv into a plain 2-D transpose) and then done tile by tile: each tile reads a few
consecutive source rows front to back and writes whole cache lines of each output row.

A conv kernel (H, W, I, O) -> (O, I, H, W) simplifies to (S, I, O) -> (O, I, S) with S = H*W; no
single 2-D transpose does that, but a tile per input channel i, ``in[:, i, :]`` (S, O) -> ``out[:, i, :]``
(O, S), does it in one pass (two 2-D passes would move the data twice).

A plain 2-D transpose (dense kernels: most bytes of most checkpoints) goes through a small staging
buffer instead: a band of STAGE_ROWS source rows is copied tile by tile into a buffer whose rows are
padded by one cache line, and written out from there. Source rows are often a power-of-two bytes
apart (1024 float32 = 4 KiB), so the rows a tile reads all fall into the same cache set and evict each
other; the padded copy spreads them over the sets (about 1.5x faster on 1024 x 4096 float32).

Memory-mapped inputs (``tf2torch.pages``) copied whole are read front to back, so the pages already
copied are given back as the copy proceeds: a mapped source never becomes resident as a whole.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np
from numpy.lib.stride_tricks import as_strided

from . import blas
from .pages import Pages

# A tile spans TILE_ROWS source rows (16 sequential read streams, within what hardware prefetchers
# track) and up to TILE_COLS elements of each (one output row run of 16 elements is >= one 64-byte
# cache line for 4-byte dtypes). Measured best of 4..64 x 256..4096 on float32/float64/uint16.
TILE_ROWS = 16
TILE_COLS = 4096
# 2-D transposes: bands of STAGE_ROWS source rows, STAGE_COLS elements at a time (a 64 x 1024 float32
# tile is 256 KiB, within L2). Measured best of 16..256 x 256..4096 on float32 1024 x 4096 / 4096 x 1024.
STAGE_ROWS = 64
STAGE_COLS = 1024
BLAS_ROWS = 256  # source rows per OpenBLAS call: a mapped source's pages are given back between calls
_SMALL = 1 << 20  # bytes: a source spanning this little stays in cache, where numpy's strided copy is fastest
_RELEASE_STEP = 8 << 20  # bytes of a mapped source passed between two releases of its pages
_LONG_RUN = 64  # bytes: when both sides share a contiguous inner run this long, strided copy is fine


def permute(array: np.ndarray, axes: Sequence[int]) -> np.ndarray:
    """``np.transpose(array, axes)`` as a C-contiguous array.

    Always a new array (a plain ndarray, never a view of ``array``). Works on any strides (views,
    memmaps) and any dtype; bfloat16 stored as uint16 bits is just a 2-byte dtype.

    Example:
        >>> a = np.arange(6).reshape(2, 3)
        >>> permute(a, (1, 0)).tolist()
        [[0, 3], [1, 4], [2, 5]]
    """
    n = array.ndim
    given = tuple(int(a) for a in axes)
    axes = tuple(a + n if a < 0 else a for a in given)
    if sorted(axes) != list(range(n)):
        raise ValueError(f"axes {given} are not a permutation of the {n} axes of shape {array.shape}")
    return contiguous(array.transpose(axes))


def contiguous(array: np.ndarray) -> np.ndarray:
    """A new C-contiguous copy of ``array`` (any strides), made with the blocked copy.

    Example:
        >>> contiguous(np.arange(6).reshape(2, 3).T).flags.c_contiguous
        True
    """
    out = np.empty(array.shape, array.dtype)
    copy_into(out, array)
    return out


def copy_into(dst: np.ndarray, src: np.ndarray) -> None:
    """``dst[...] = src`` for a C-contiguous ``dst`` and an ``src`` of the same shape and dtype with any
    strides: a transposed view is copied tile by tile, never with the naive strided walk."""
    if dst.shape != src.shape or dst.dtype != src.dtype or not dst.flags.c_contiguous:
        raise ValueError(f"copy_into: dst {dst.shape} {dst.dtype} (C-contiguous: {dst.flags.c_contiguous}) "
                         f"does not fit src {src.shape} {src.dtype}")
    if src.size == 0:
        return
    # Small means the memory the source spans, not its size: a band of a transposed tensor is small,
    # but its rows lie across the whole tensor (a naive walk would miss the cache and TLB on each one).
    span = src.itemsize + sum((n - 1) * abs(st) for n, st in zip(src.shape, src.strides))
    if span < _SMALL or any(st <= 0 for st, n in zip(src.strides, src.shape) if n > 1):
        np.copyto(dst, src)  # in cache anyway, or reversed/broadcast strides: numpy's own walk
        return
    # The source's axes in memory order (outermost first) make `base`; src == base.transpose(axes).
    order = sorted(range(src.ndim), key=lambda a: -src.strides[a])
    base = src.transpose(order)
    axes = tuple(order.index(a) for a in range(src.ndim))
    shape, strides, perm = _simplify(base.shape, base.strides, axes)
    if perm == tuple(range(len(perm))):  # the same order in memory as in the output: a plain copy
        np.copyto(dst, src)
        return
    merged_src = as_strided(base, shape, strides, writeable=False)
    merged_dst = dst.reshape([shape[a] for a in perm])  # C-contiguous, so always a view
    # Merged axis 0 is the outermost in memory when the source is C-contiguous: tiles visited in
    # source order then pass its pages front to back.
    pages = Pages.of(base) if base.flags.c_contiguous else None
    inner_run = shape[-1] * src.itemsize if perm[-1] == len(perm) - 1 else 0
    if inner_run >= _LONG_RUN:
        np.copyto(merged_dst, merged_src.transpose(perm))
    elif perm == (1, 0):
        _staged_2d(merged_src, merged_dst, pages)
    else:
        _tiled_copy(merged_src, merged_dst, perm, pages)


def _simplify(shape: Sequence[int], strides: Sequence[int],
              axes: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """Drop size-1 axes and merge input axes i, i+1 that stay neighbours in the output and in memory.

    Returns the merged input shape and strides, and the permutation of the merged axes.
    """
    keep = [i for i in range(len(shape)) if shape[i] != 1]
    out_pos = {a: j for j, a in enumerate(a for a in axes if shape[a] != 1)}
    groups: list[list[int]] = []
    for i in keep:
        prev = groups[-1][-1] if groups else None
        if (prev is not None and out_pos[i] == out_pos[prev] + 1
                and strides[prev] == strides[i] * shape[i]):
            groups[-1].append(i)
        else:
            groups.append([i])
    m_shape = tuple(math.prod(shape[i] for i in g) for g in groups)
    m_strides = tuple(strides[g[-1]] for g in groups)
    m_perm = tuple(sorted(range(len(groups)), key=lambda k: out_pos[groups[k][0]]))
    return m_shape, m_strides, m_perm


def _release(pages: Pages, upto: int) -> None:
    """Give back the source pages passed, every _RELEASE_STEP bytes and at the end: each madvise
    also flushes the TLBs of the CPUs running this process's other threads (costly in a VM)."""
    if upto - pages.done >= _RELEASE_STEP or upto >= pages.nbytes:
        pages.release(upto)


def _staged_2d(src: np.ndarray, dst: np.ndarray, pages: Pages | None) -> None:
    """``dst[...] = src.T`` for 2-D arrays, band by band: OpenBLAS's transpose where ``blas`` has it
    (float32/64, about twice as fast), else numpy through a padded staging buffer."""
    rows, cols = src.shape
    if blas.can_transpose(src, dst):  # this dtype, layout and thread
        for r in range(0, rows, BLAS_ROWS):
            blas.transpose_2d(src[r:r + BLAS_ROWS], dst[:, r:r + BLAS_ROWS])
            if pages is not None:
                _release(pages, min(r + BLAS_ROWS, rows) * src.strides[0])
        return
    pad = max(1, 64 // src.itemsize)  # one cache line
    stage = np.empty((STAGE_ROWS, STAGE_COLS + pad), src.dtype)
    for r in range(0, rows, STAGE_ROWS):
        band = src[r:r + STAGE_ROWS]
        n = band.shape[0]
        for c in range(0, cols, STAGE_COLS):
            tile = stage[:n, :min(STAGE_COLS, cols - c)]
            np.copyto(tile, band[:, c:c + STAGE_COLS])
            dst[c:c + STAGE_COLS, r:r + n] = tile.T
        if pages is not None:
            _release(pages, (r + n) * src.strides[0])


def _tiled_copy(src: np.ndarray, dst: np.ndarray, perm: tuple[int, ...], pages: Pages | None = None) -> None:
    """``dst[...] = src.transpose(perm)``, tile by tile, visiting ``src`` in memory order.

    The tiled pair of axes: ``p`` is the innermost input axis that is not also innermost in the
    output, ``q`` the input axis that is innermost in the output (after any shared inner run).
    ``q`` gets TILE_ROWS, ``p`` TILE_COLS, a shared inner run stays whole, every other axis one index.
    """
    n = src.ndim
    shared = perm[-1] == n - 1  # an inner axis contiguous on both sides (short, else no tiling)
    p = n - 2 if shared else n - 1
    q = perm[-2] if shared else perm[-1]
    steps = [1] * n
    steps[p], steps[q] = TILE_COLS, TILE_ROWS
    if shared:
        steps[n - 1] = src.shape[n - 1]
    # itertools.product varies the last axis fastest: tiles are visited in input memory order.
    starts = [range(0, size, step) for size, step in zip(src.shape, steps)]
    for first in starts[0]:
        for rest in itertools.product(*starts[1:]):
            box = tuple(slice(o, o + s) for o, s in zip((first, *rest), steps))
            dst[tuple(box[a] for a in perm)] = src[box].transpose(perm)
        if pages is not None:
            _release(pages, min(first + steps[0], src.shape[0]) * src.strides[0])
