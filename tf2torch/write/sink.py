"""Where a streaming writer's bytes go: ``open_sink(path)`` gives ``write_at(data, offset)`` and ``close()``.

Two kinds, chosen when the file is opened:

* **direct** (Linux, a filesystem with ``O_DIRECT``): the bytes arrive in file order (the safetensors
  header, then every tensor back to back), so they are gathered into page-aligned chunks of CHUNK bytes
  and each full chunk is written straight from that buffer to the disk by an I/O thread, bypassing the
  page cache. The
  kernel neither copies the data into the cache (a ``write`` costs about as much CPU as producing the
  bytes) nor writes it back later: what is left for the final ``fsync`` is the metadata. On two cores this
  leaves the CPU to the transposes. The last chunk is padded to ALIGN and the file truncated to its size.
* **buffered** (everything else: tmpfs and other filesystems that refuse ``O_DIRECT``, macOS, Windows):
  ``pwrite`` in WRITE_BYTES calls, each written range handed to writeback at once.

Both turn an OS error into one line naming the file (disk full: free space or write elsewhere).
"""

from __future__ import annotations

import errno
import mmap
import os
import queue
import threading
from pathlib import Path
from types import TracebackType

from ..errors import OutputError

ALIGN = 4096  # O_DIRECT wants offsets, lengths and addresses aligned to the logical block size (512 or 4096)
CHUNK = 8 << 20  # bytes gathered before one direct write: large enough to keep the disk streaming
IN_FLIGHT = 2  # chunks handed to the I/O thread and not yet written
# Buffered writers copy at most this much into the page cache per write() call. Measured on Linux 6.18/ext4
# (2 vCPUs): 1 GB written in 16 MB calls costs 2-4 s of kernel time, in 64-256 KB calls 0.4-1 s (the page cache
# allocates folios as large as each write, and large ones are costly to find). benchmarks/write_size_bench.py.
WRITE_BYTES = 256 << 10


class Sink:
    """Writes bytes at offsets of one open file; ``close`` finishes it (or only closes it after an error)."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path, self.fd = path, fd

    def write_at(self, data: memoryview, at: int) -> None:
        raise NotImplementedError

    def finish(self) -> None:
        """Everything written has reached the file (the direct sink's last chunk)."""

    def __enter__(self) -> Sink:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        try:
            if kind is None:
                self.finish()
        finally:
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


class BufferedSink(Sink):
    def write_at(self, data: memoryview, at: int) -> None:
        for start in range(0, len(data), WRITE_BYTES):  # (small writes: see WRITE_BYTES)
            self._pwrite(data[start:start + WRITE_BYTES], at + start)
        _start_writeback(self.fd, at, len(data))


class DirectSink(Sink):
    """Gathers bytes written in file order into aligned chunks; an I/O thread writes whole chunks with O_DIRECT
    while the next one fills (IN_FLIGHT of them at a time: the disk never waits for a copy, and a busy one
    has a second request queued)."""

    def __init__(self, path: Path, fd: int) -> None:
        super().__init__(path, fd)
        self.buffers = [mmap.mmap(-1, CHUNK) for _ in range(IN_FLIGHT + 1)]  # anonymous maps are page-aligned
        self.free: queue.SimpleQueue[mmap.mmap] = queue.SimpleQueue()
        for spare in self.buffers[1:]:
            self.free.put(spare)
        self.full: queue.SimpleQueue[tuple[mmap.mmap, int, int] | None] = queue.SimpleQueue()
        self.buffer = self.buffers[0]  # the chunk being filled
        self.start = 0  # file offset of its first byte
        self.fill = 0  # bytes of it holding data
        self.error: BaseException | None = None  # the I/O thread's, raised in the caller at its next hand-over
        self.thread: threading.Thread | None = threading.Thread(target=self._run, name="tf2torch-direct-io",
                                                                daemon=True)
        self.thread.start()

    def write_at(self, data: memoryview, at: int) -> None:
        if at != self.start + self.fill:  # the streaming writers write in file order, with no gap
            raise AssertionError(f"{self.path}: direct writes must be sequential (at {at}, expected "
                                 f"{self.start + self.fill})")
        data = data.cast("B") if data.format != "B" or data.ndim != 1 else data
        while data:
            n = min(len(data), CHUNK - self.fill)
            self.buffer[self.fill:self.fill + n] = data[:n]
            self.fill += n
            data = data[n:]
            if self.fill == CHUNK:
                self._hand_over(CHUNK)

    def finish(self) -> None:
        size = self.start + self.fill
        padded = -(-self.fill // ALIGN) * ALIGN  # the last chunk, padded to a whole block ...
        if padded:
            self.buffer[self.fill:padded] = bytes(padded - self.fill)
            self._hand_over(padded)
        self._stop()
        if self.error is not None:
            raise self.error
        try:
            os.ftruncate(self.fd, size)  # ... and the padding cut off again
        except OSError as exc:
            raise OutputError(f"{self.path}: cannot set the file size ({exc.strerror or exc}); choose another "
                              "output location") from exc

    def _hand_over(self, length: int) -> None:
        self.full.put((self.buffer, self.start, length))
        self.buffer = self.free.get()  # waits while IN_FLIGHT chunks are being written
        self.start, self.fill = self.start + length, 0
        if self.error is not None:
            raise self.error

    def _run(self) -> None:
        while (item := self.full.get()) is not None:
            buffer, start, length = item
            try:
                if self.error is None:  # after a failure the rest is only handed back
                    self._pwrite(memoryview(buffer)[:length], start)
            except BaseException as exc:
                self.error = exc
            finally:
                self.free.put(buffer)

    def _stop(self) -> None:
        if self.thread is not None:  # every chunk handed over is written (or has failed) before the fd closes
            self.full.put(None)
            self.thread.join()
            self.thread = None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        try:
            if kind is None:
                self.finish()
        finally:
            self._stop()
            os.close(self.fd)
            for buffer in self.buffers:
                try:
                    buffer.close()
                except BufferError:
                    pass  # a view of it lives on in a traceback (a failed write): freed with the traceback


def open_sink(path: Path) -> Sink:
    """Create ``path`` (truncating it) for writing: direct where the filesystem allows it, else buffered."""
    direct = getattr(os, "O_DIRECT", 0)
    if direct and hasattr(os, "pwrite"):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | direct, 0o666)
        except OSError as exc:
            if exc.errno != errno.EINVAL:  # EINVAL: no direct I/O here (tmpfs); anything else is the path's fault
                raise _cannot_create(path, exc) from exc
        else:
            if _direct_works(fd):
                return DirectSink(path, fd)
            os.close(fd)
    try:
        return BufferedSink(path, os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0),
                                          0o666))
    except OSError as exc:
        raise _cannot_create(path, exc) from exc


def _direct_works(fd: int) -> bool:
    """Some filesystems accept O_DIRECT at open and refuse the writes (EINVAL): try one aligned block."""
    block = mmap.mmap(-1, ALIGN)
    try:
        os.pwrite(fd, block, 0)
        os.ftruncate(fd, 0)
        return True
    except OSError:
        return False  # the buffered sink tries again, and reports a real error (disk full) in one line
    finally:
        block.close()


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
