"""Sparse constant tensors (schema v3 ``SparsityParameters``): read, checked, and expanded to dense.

TF's converter stores pruned weights this way under ``optimizations=[tf.lite.Optimize.EXPERIMENTAL_SPARSITY]``
(then a ``DENSIFY`` operator, or a sparse ``FULLY_CONNECTED`` / fp16 ``DEQUANTIZE`` input). The tensor's
``shape`` is the dense shape; its buffer holds only the stored values, in traversal order. The format is
TACO-like (schema.fbs, and LiteRT's ``FormatConverter::SparseToDense``, whose result this reproduces):

* ``traversal_order``: n + k levels; the first n a permutation of the n dense dimensions, the last k a
  permutation of the k block dimensions (n..n+k-1) that traverse one block;
* ``block_map``: which dense dimension each block dimension splits (a dimension of size d with blocks of
  b becomes d / b blocks of b);
* ``dim_metadata``: one entry *per level* (in traversal order, not per dimension): DENSE with its
  ``dense_size``, or SPARSE_CSR with ``array_segments`` / ``array_indices`` (an int32, uint16 or uint8
  vector each): the children of the parent at position p are ``indices[segments[p]:segments[p + 1]]``.

A leaf's position counts down the levels: a dense level's child i of parent p is at p * size + i, a
sparse level's child is at its position in ``array_indices``. LiteRT's kernel checks none of this (an
index past its dimension writes out of bounds); here every index, segment and count is checked, and the
stored values must be exactly the leaves, so a forged file is refused in one line.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ...errors import FormatError
from .flatbuf import Table

if TYPE_CHECKING:
    import numpy as np

SPARSITY = {"traversal_order": 0, "block_map": 1, "dim_metadata": 2}
DIM_METADATA = {"format": 0, "dense_size": 1, "segments_type": 2, "segments": 3, "indices_type": 4, "indices": 5}
INDEX_VECTORS = {1: "i", 2: "H", 3: "B"}  # SparseIndexVector: Int32Vector, Uint16Vector, Uint8Vector (values: slot 0)
DENSE, SPARSE_CSR = 0, 1  # DimensionType
# A dense tensor at most this many times its stored values (a fully pruned 99.9 % weight is ~1000x): the
# dense size is not bounded by the file as a dense constant's is, so a forged shape cannot ask for terabytes.
MAX_EXPANSION = 4096


@dataclass(frozen=True)
class Level:
    """One traversal level: DENSE (``size`` children per parent) or SPARSE_CSR (segments, indices)."""

    sparse: bool
    size: int  # dense_size (DENSE levels; 0 on SPARSE_CSR ones)
    segments: tuple[int, ...] = ()
    indices: tuple[int, ...] = ()


@dataclass(frozen=True)
class Sparsity:
    traversal_order: tuple[int, ...]
    block_map: tuple[int, ...]
    levels: tuple[Level, ...]


def read_sparsity(t: Table, where: str) -> Sparsity:
    """A tensor's ``SparsityParameters`` table, decoded (the meaning is checked against the shape later)."""
    levels = []
    for d in t.tables(SPARSITY["dim_metadata"], "dim_metadata"):
        fmt = int(d.scalar(DIM_METADATA["format"], "b"))
        if fmt not in (DENSE, SPARSE_CSR):
            raise FormatError(f"{where}: a sparsity level of format {fmt} (DENSE 0 or SPARSE_CSR 1); the file is corrupt")
        levels.append(Level(fmt == SPARSE_CSR, int(d.scalar(DIM_METADATA["dense_size"], "i")),
                            _index_vector(d, "segments", where) if fmt == SPARSE_CSR else (),
                            _index_vector(d, "indices", where) if fmt == SPARSE_CSR else ()))
    return Sparsity(tuple(int(v) for v in t.scalars(SPARSITY["traversal_order"], "i")),
                    tuple(int(v) for v in t.scalars(SPARSITY["block_map"], "i")), tuple(levels))


def _index_vector(d: Table, what: str, where: str) -> tuple[int, ...]:
    kind = int(d.scalar(DIM_METADATA[f"{what}_type"], "B"))
    if kind not in INDEX_VECTORS:
        raise FormatError(f"{where}: a SPARSE_CSR level's array_{what} of union type {kind} (1-3: int32, uint16, "
                          "uint8 vectors); the file is corrupt")
    table = d.table(DIM_METADATA[what], f"array_{what}")
    return tuple(int(v) for v in table.scalars(0, INDEX_VECTORS[kind])) if table is not None else ()


def densify(values: np.ndarray, shape: tuple[int, ...], sp: Sparsity, where: str) -> np.ndarray:
    """The dense tensor of ``shape`` the stored ``values`` (1-D, in traversal order) stand for; zeros
    elsewhere. Checked: every level against the shape, every index in range, the values exactly the leaves."""
    import numpy as np

    n, k = len(shape), len(sp.block_map)
    order, levels = sp.traversal_order, sp.levels
    if len(order) != n + k or len(levels) != n + k or sorted(order[:n]) != list(range(n)) or \
            sorted(order[n:]) != list(range(n, n + k)):
        raise FormatError(f"{where}: sparsity with traversal order {list(order)[:8]} and {len(levels)} levels for a "
                          f"rank-{n} tensor with {k} block dimension(s); the file is corrupt")
    if list(sp.block_map) != sorted(set(sp.block_map)) or any(not 0 <= b < n for b in sp.block_map):
        raise FormatError(f"{where}: sparsity block map {list(sp.block_map)} (increasing dimensions of the "
                          f"rank-{n} tensor); the file is corrupt")
    # Block b's size is the dense_size of the level traversal_order[n + b] names (LiteRT's
    # InitSparseToDenseConverter indexes dense_size by that value: equal to the block level's own
    # position whenever the block levels are in order, as TF's converter writes them).
    blocks = [levels[order[n + b]].size for b in range(k)]
    blocked = list(shape)
    for b, dim in enumerate(sp.block_map):
        if blocks[b] <= 0 or shape[dim] % blocks[b]:
            raise FormatError(f"{where}: a block of {blocks[b]} along dimension {dim} of size {shape[dim]}; "
                              "the file is corrupt")
        blocked[dim] //= blocks[b]
    extent = [blocked[d] if d < n else blocks[d - n] for d in order]  # each level's range of indices
    total = math.prod(shape)
    if total > MAX_EXPANSION * max(values.size, 1):
        raise FormatError(f"{where}: a sparse tensor of {values.size} stored values declares {total} dense "
                          f"elements (more than {MAX_EXPANSION}x); the file is corrupt")
    position = np.zeros(1, np.int64)  # each node's position at this level (the root: 0)
    coords: list[np.ndarray] = []  # each node's index at every level so far
    for level, size in zip(levels, extent):
        if not level.sparse:
            if level.size != size:
                raise FormatError(f"{where}: a DENSE sparsity level of size {level.size} where the shape gives "
                                  f"{size}; the file is corrupt")
            _bounded(len(position) * size, total, where)
            child = np.tile(np.arange(size, dtype=np.int64), len(position))
            parent = np.repeat(np.arange(len(position)), size)
            new_position = position[parent] * size + child
        else:
            segments = np.asarray(level.segments, np.int64)
            indices = np.asarray(level.indices, np.int64)
            if np.any(np.diff(segments) < 0) or (segments.size and (segments[0] < 0 or segments[-1] > indices.size)) \
                    or np.any((indices < 0) | (indices >= size)):
                raise FormatError(f"{where}: a SPARSE_CSR sparsity level whose segments are not increasing within "
                                  f"its {indices.size} indices, or an index outside 0..{size - 1}; the file is corrupt")
            # A parent with no segment pair (position + 1 past the segments) has no children, as in LiteRT.
            has = position + 1 < segments.size
            at = np.where(has, position, 0)
            counts = np.where(has, segments[at + 1] - segments[at], 0) if segments.size >= 2 else np.zeros_like(at)
            _bounded(int(counts.sum()), total, where)
            parent = np.repeat(np.arange(len(position)), counts)
            new_position = np.repeat(segments[at] if segments.size else at, counts) + \
                np.arange(int(counts.sum())) - np.repeat(np.cumsum(counts) - counts, counts)
            child = indices[new_position]
        coords = [c[parent] for c in coords] + [child]
        position = new_position
    if position.size != values.size:
        raise FormatError(f"{where}: the sparsity metadata describes {position.size} stored values, the buffer "
                          f"holds {values.size}; the file is corrupt")
    index = [np.zeros(position.size, np.int64) for _ in range(n)]
    for level, dim in enumerate(order):  # leaf coordinates: dense dimensions first, then blocks refine them
        if dim < n:
            index[dim] = coords[level]
    for level in range(n, n + k):
        b = order[level] - n
        dim = sp.block_map[b]
        index[dim] = index[dim] * blocks[b] + coords[level]
    flat = np.ravel_multi_index(tuple(index), shape) if n else np.zeros(position.size, np.int64)
    if np.unique(flat).size != flat.size:
        raise FormatError(f"{where}: the sparsity metadata stores two values at one position; the file is corrupt")
    out = np.zeros(total, values.dtype)
    out[flat] = values
    return out.reshape(shape)


def _bounded(nodes: int, total: int, where: str) -> None:
    """A level never has more nodes than the dense tensor has elements (checked before they are made)."""
    if nodes > total:
        raise FormatError(f"{where}: a sparsity level with {nodes} nodes in a tensor of {total} elements; "
                          "the file is corrupt")
