"""Read-only memory maps of tensor bytes, and giving their pages back behind a sequential consumer.

Readers map each large tensor on its own (``map_file``): no byte is copied until a layout change needs
it, and the mapping goes away with the last array that uses it. Touched pages of a mapping count in
the process's resident set (RSS), so whoever walks a large mapped array front to back (the CRC check,
the transposer, the safetensors writer) takes ``Pages.of(array)`` and calls ``release(upto)`` for what
it has passed: peak memory stays one window, not the tensor.

``MADV_DONTNEED`` on a read-only *shared* file mapping only unmaps: the data stays in the file and in
the page cache, and touching it again maps it again. On anonymous or copy-on-write memory it would
erase data, hence the strict check in ``Pages.of``. Everything here is a hint: on systems without
``madvise`` nothing is released, and nothing fails.
"""

from __future__ import annotations

import mmap
from typing import BinaryIO

import numpy as np


class ReadOnlyMap(mmap.mmap):
    """A read-only shared mapping made by ``map_file``: the only kind ``Pages`` releases (besides
    ``np.memmap(mode="r")``)."""

    address = 0  # where the mapping starts in memory, set by map_file


def map_file(f: BinaryIO, offset: int, size: int) -> np.ndarray:
    """``size`` bytes of the open file ``f`` from ``offset``, mapped read-only, as a uint8 array.

    The caller checks that the file holds the range. If the file is truncated while the array is in
    use, touching the missing pages raises SIGBUS (as for any mapped file): the readers check sizes
    just before mapping, and TensorFlow never rewrites a checkpoint's data files in place.
    """
    start = offset - offset % mmap.ALLOCATIONGRANULARITY  # mmap offsets must be aligned
    mm = ReadOnlyMap(f.fileno(), size + offset - start, access=mmap.ACCESS_READ, offset=start)
    mm.address = np.frombuffer(mm, np.uint8, count=1).ctypes.data if len(mm) else 0
    return np.frombuffer(mm, np.uint8, count=size, offset=offset - start)


def _mapping(array: np.ndarray) -> tuple[mmap.mmap, int] | None:
    """The read-only file mapping under ``array`` and its start address, or None."""
    base: object = array
    while isinstance(base, np.ndarray):
        if isinstance(base, np.memmap) and isinstance(base.base, mmap.mmap):
            if base.mode != "r":
                return None
            # np.memmap maps from `offset` rounded down to the allocation granularity.
            return base.base, base.ctypes.data - base.offset % mmap.ALLOCATIONGRANULARITY
        base = base.base
    if isinstance(base, memoryview):
        base = base.obj
    if isinstance(base, ReadOnlyMap):
        return base, base.address
    return None


class Pages:
    """Drops the pages of a read-only file-mapped array that a front-to-back consumer has passed."""

    def __init__(self, mm: mmap.mmap, begin: int, nbytes: int) -> None:
        self.mm, self.begin, self.nbytes, self.done = mm, begin, nbytes, 0

    @classmethod
    def of(cls, array: np.ndarray, sequential: bool = True) -> Pages | None:
        """A releaser for ``array`` when it is a C-contiguous view of a read-only shared file mapping
        (``map_file`` or ``np.memmap(mode="r")``), else None. ``sequential`` also asks the kernel for
        aggressive readahead (a cold cache)."""
        if not hasattr(mmap, "MADV_DONTNEED") or not array.flags.c_contiguous or array.nbytes == 0:
            return None
        found = _mapping(array)
        if found is None:
            return None
        mm, address = found
        begin = array.ctypes.data - address
        if begin < 0 or begin + array.nbytes > len(mm):
            return None
        pages = cls(mm, begin, array.nbytes)
        if sequential:
            pages._advise(mmap.MADV_SEQUENTIAL, begin, begin + array.nbytes)
        return pages

    def release(self, upto: int) -> None:
        """Drop the whole pages among the first ``upto`` bytes of the array (those not dropped yet)."""
        upto = min(upto, self.nbytes)
        if upto > self.done:
            self._advise(mmap.MADV_DONTNEED, self.begin + self.done, self.begin + upto)
            self.done = upto

    def _advise(self, option: int, start: int, end: int) -> None:
        start -= start % mmap.PAGESIZE  # madvise wants a page-aligned start
        end -= end % mmap.PAGESIZE
        if end > start:
            try:
                self.mm.madvise(option, start, end - start)
            except (OSError, ValueError):
                pass  # a hint only: never fail because the kernel declined it
