"""Where a streaming writer's bytes go: ``open_sink(path)`` gives ``write_at(data, offset)`` and ``close()``.

``pwrite`` in WRITE_BYTES calls, each written range handed to the kernel's writeback at once, so the fsync at
the end of a conversion waits for the last chunk rather than the whole file. An OS error becomes one line
naming the file (disk full: free space or write elsewhere).

Direct I/O (``O_DIRECT``: chunks written from aligned buffers, bypassing the page cache) was tried and measured
against this on the 2-core development VM (1 GB checkpoint, 7 interleaved rounds): 15 % less CPU, but no faster
(median 2.12 s against 1.95 s buffered, ``cp`` + ``sync`` 1.27 s): one synchronous request at a time moved
about 1.1 GB/s to this disk where the kernel's own writeback moved 1.4 GB/s; on fast NVMe the gap would widen.
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys
from pathlib import Path
from types import TracebackType

from ..errors import OutputError

# Writers copy at most this much into the page cache per write() call. Measured on Linux 6.18/ext4
# (2 vCPUs): 1 GB written in 16 MB calls costs 2-4 s of kernel time, in 64-256 KB calls 0.4-1 s (the page cache
# allocates folios as large as each write, and large ones are costly to find). benchmarks/write_size_bench.py.
WRITE_BYTES = 256 << 10
# Into a file allocated whole first (``Sink.reserve``) ext4 has no blocks left to reserve at write time, and
# larger calls get cheaper: 1 GiB in 1 MiB calls cost 0.19-0.25 s of CPU there, in 256 KiB calls into a plain
# file 0.25-0.38 s (write_size_bench.py, 3 rounds each). Not larger: 4 and 16 MiB calls were bimodal even so
# (0.2 s in some rounds, 0.7-1.0 s in others).
RESERVED_WRITE_BYTES = 1 << 20


class Sink:
    """Writes bytes at offsets of one open file (``with``: closed however the block ends)."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path, self.fd = path, fd
        self.write_bytes = WRITE_BYTES

    def reserve(self, size: int) -> None:
        """Allocate the file's ``size`` bytes on disk before writing them (Linux ``fallocate``; a hint elsewhere).

        Why: ext4 then maps each written page to a block already allocated, instead of reserving and
        accounting it page by page at write time (delayed allocation: ~10 % of a conversion's writer thread in
        a profile); and a full disk fails here, before any tensor is read, with the size needed. Not
        ``os.posix_fallocate``: where a filesystem cannot allocate, glibc emulates it by writing a byte into
        every block, which would write the file twice."""
        if _fallocate is None or size <= 0:
            return
        if _fallocate(self.fd, 0, 0, size) != 0:
            code = ctypes.get_errno()
            if code == errno.ENOSPC:
                raise OutputError(f"{self.path}: cannot allocate {size} bytes (no space left on the device); free "
                                  "disk space or choose another output location")
            return  # (EOPNOTSUPP and the like: this filesystem allocates as it writes, as without the call)
        self.write_bytes = RESERVED_WRITE_BYTES

    def write_at(self, data: memoryview, at: int) -> None:
        step = self.write_bytes  # (small writes: see WRITE_BYTES)
        for start in range(0, len(data), step):
            self._pwrite(data[start:start + step], at + start)
        _start_writeback(self.fd, at, len(data))

    def __enter__(self) -> Sink:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        os.close(self.fd)

    def _pwrite(self, data: memoryview, at: int) -> None:
        """Write all of ``data`` at ``at`` (a raw write may be partial); OS errors become one line."""
        try:
            while data:
                n = _pwrite(self.fd, data, at)
                if not n:
                    raise OSError(errno.ENOSPC, "no bytes written")
                data, at = data[n:], at + n
        except OSError as exc:
            raise OutputError(f"{self.path}: cannot write ({exc.strerror or exc}); free disk space or choose "
                              "another output location") from exc


def open_sink(path: Path) -> Sink:
    """Create ``path`` (truncating it) for writing."""
    try:
        return Sink(path, os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0),
                                          0o666))
    except OSError as exc:
        raise _cannot_create(path, exc) from exc


def _cannot_create(path: Path, exc: OSError) -> OutputError:
    return OutputError(f"{path}: cannot create ({exc.strerror or exc}); choose another output location")


def _start_writeback(fd: int, offset: int, size: int) -> None:
    """Ask the kernel to start writing ``size`` bytes at ``offset`` to disk now, without waiting.

    On Linux, POSIX_FADV_DONTNEED starts writeback of dirty pages in the range (and drops only pages
    that are already clean, so the data stays cached). Written this way, the fsync at the end of a
    conversion waits for the last chunk instead of the whole file. A hint only.
    """
    if hasattr(os, "posix_fadvise"):
        try:
            os.posix_fadvise(fd, offset, size, os.POSIX_FADV_DONTNEED)
        except OSError:
            pass


def _pwrite(fd: int, data: memoryview, at: int) -> int:
    if hasattr(os, "pwrite"):
        return os.pwrite(fd, data, at)
    os.lseek(fd, at, os.SEEK_SET)  # Windows has no pwrite; the one writer thread makes seek + write safe
    return os.write(fd, data)


def _libc_fallocate() -> ctypes._CFuncPtr | None:  # type: ignore[name-defined]
    if not sys.platform.startswith("linux"):
        return None
    try:
        function = ctypes.CDLL(None, use_errno=True).fallocate
    except (OSError, AttributeError):  # a libc without it (or no dynamic libc)
        return None
    function.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]  # fd, mode 0, offset, len
    function.restype = ctypes.c_int
    return function


_fallocate = _libc_fallocate()
