"""Produce tensors on the caller's thread and write them on another, with bounded memory.

A safetensors header fixes every tensor's offset before any data exists. The caller's thread then
*produces* the tensors in order (``produce_checked``: map the source, check its CRC32C, take the
layout view) and hands their bytes to a writer thread, which ``pwrite``s each piece at its offset:

* a C-contiguous tensor goes as views of its own memory, PART_BYTES at a time; the pages of a
  memory-mapped source are dropped as each part is written (``tf2torch.pages``);
* a strided one (a transposed view) is copied into C order a band of rows at a time
  (``strided.copy_into``, blocked) into one of BUFFERS reused band buffers. Reused, because a
  fresh tensor-sized array costs page faults and zeroing (on a VM, first touches of memory are
  several times slower than a copy), and a band stays in cache for the kernel's copy.

Threads, because the work releases the GIL (``os.pwrite``, numpy copies, the crc32c extension): the
caller checks CRCs and hands out bands, COPIERS threads transpose bands (``pieces``: most of the CPU a
conversion spends), the writer thread writes (``write/sink.py``). One writer, because writes to one file serialise on its inode
lock: a second writer would spin on it, not write faster.

``pieces`` (the C-order bytes of one tensor, part by part or band by band) also feeds the ``.pt``
writer, which writes its zip records in order on the caller's thread.

Memory: queued parts stay within PIPELINE_BYTES (a larger part goes alone), plus BUFFERS bands.
Errors surface in the caller's thread: a write error (disk full) at the next hand-over, its own
errors and Ctrl-C as usual. Whatever way ``stream`` exits, it first stops the writer after its
current piece, so no thread touches the output once it returns.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from ..pages import Pages
from ..plan import TensorPlan, produce_checked
from ..strided import copy_into

PIPELINE_BYTES = 64 << 20  # bytes handed to the writer and not yet written
PART_BYTES = 4 << 20  # a contiguous tensor is handed over in parts of this size
BAND_BYTES = 4 << 20  # a strided tensor is copied in bands of about this size (stays in L3; fewer, larger tiles)
COPIERS = 2  # threads copying a strided tensor's bands (the transposes: most of a conversion's CPU)
BUFFERS = 4 + COPIERS  # band buffers: being copied, or queued for the writer

WriteAt = Callable[[memoryview, int], None]  # write all of these bytes at this file offset
Bytes = memoryview | Future[memoryview]  # a piece's bytes, or (``later``) the band copy that will make them


def stream(placed: Sequence[tuple[TensorPlan, int]], write_at: WriteAt,
           on_tensor: Callable[[TensorPlan, int], None] | None = None) -> None:
    """Produce each plan on this thread; ``write_at`` its bytes from its offset on a writer thread.

    ``placed`` pairs each plan with the file offset of its first byte. ``on_tensor(plan, plan.nbytes)``
    is called on this thread once a tensor is written, in the order of ``placed``.
    """
    writer = _Writer(write_at)
    copiers = ThreadPoolExecutor(COPIERS, thread_name_prefix="tf2torch-copier")
    try:
        for plan, offset in placed:
            writer.wait_for_room(min(plan.nbytes, PIPELINE_BYTES))  # before producing: memory stays bounded
            _hand_over(produce_checked(plan, contiguous=False), offset, writer, copiers)
            writer.put(_Part(memoryview(b""), 0, plan=plan))  # marks the tensor written, once it is
            _report(writer.take_written(), on_tensor)
        writer.finish()
        _report(writer.take_written(), on_tensor)
    finally:
        try:
            copiers.shutdown(wait=True, cancel_futures=True)  # no band copy outlives the stream (it may be failing)
        finally:
            writer.stop()  # even when a second Ctrl-C interrupts the wait above


def _hand_over(array: np.ndarray, offset: int, writer: _Writer, copiers: ThreadPoolExecutor) -> None:
    # later=True: bands go to the writer as futures, so this thread moves on to the next tensor (its CRC)
    # while the copiers still transpose this one; only the band buffers bound how far it runs ahead.
    for data, start, done in pieces(array, writer.buffer, writer.give_back, copiers, later=True):
        writer.put(_Part(data, offset + start, done))


def pieces(array: np.ndarray, take: Callable[[int], np.ndarray], give_back: Callable[[np.ndarray], None],
           copiers: ThreadPoolExecutor | None = None, later: bool = False,
           ) -> Iterator[tuple[Bytes, int, Callable[[], None] | None]]:
    """``array``'s bytes in C order, as ``(bytes, their offset in the tensor, done)`` pieces, in order.

    A C-contiguous array comes as views of its own memory, PART_BYTES at a time; ``done()`` drops
    the pages of a memory-mapped source up to the end of its piece (pieces are written in order). A strided
    one is copied a band of rows at a time into a buffer from ``take(nbytes)`` (at least that large), handed
    back by ``done()`` through ``give_back``; with ``copiers``, COPIERS bands are copied at once (numpy's
    copies release the GIL); with ``later`` too, a band comes as the Future of its bytes as soon as its
    copy is submitted (the consumer waits for it). Call ``done`` (when not None) once a piece is written.
    """
    if array.flags.c_contiguous:
        data = array.reshape(-1).view(np.uint8)
        pages = Pages.of(array)
        for start in range(0, data.nbytes, PART_BYTES):
            stop = min(start + PART_BYTES, data.nbytes)
            yield (memoryview(data[start:stop]), start,
                   (lambda upto=stop: pages.release(upto)) if pages is not None else None)
        return
    # Bands of whole rows; at least a cache line's worth of them, else each source line is read again.
    row_bytes = array.nbytes // array.shape[0]
    rows = max(1, BAND_BYTES // row_bytes, 64 // array.itemsize)

    def copied(buffer: np.ndarray, band: np.ndarray) -> np.ndarray:
        copy_into(buffer[:band.nbytes].view(array.dtype).reshape(band.shape), band)
        return buffer

    # Bands in flight (copied, not yet handed over) each hold a buffer; fewer than BUFFERS of them, so the
    # writer always holds one it will give back: taking the next buffer never waits on a band nobody hands over.
    ahead = max(1, min(COPIERS, BUFFERS - 1)) if copiers is not None else 1
    pending: deque[tuple[int, int, Future[np.ndarray] | np.ndarray]] = deque()
    for first in range(0, array.shape[0], rows):
        band = array[first:first + rows]
        buffer = take(band.nbytes)
        if later and copiers is not None:
            future = copiers.submit(lambda b=buffer, s=band: memoryview(copied(b, s)[:s.nbytes]))
            yield future, first * row_bytes, lambda b=buffer: give_back(b)
            continue
        pending.append((first, band.nbytes,
                        copiers.submit(copied, buffer, band) if copiers is not None else copied(buffer, band)))
        if len(pending) >= ahead:
            yield _band(pending.popleft(), row_bytes, give_back)
    while pending:
        yield _band(pending.popleft(), row_bytes, give_back)


def _band(entry: tuple[int, int, Future[np.ndarray] | np.ndarray], row_bytes: int,
          give_back: Callable[[np.ndarray], None]) -> tuple[memoryview, int, Callable[[], None]]:
    first, nbytes, copy = entry
    buffer = copy.result() if isinstance(copy, Future) else copy  # a copier's error is raised here
    return memoryview(buffer[:nbytes]), first * row_bytes, lambda: give_back(buffer)


def _report(done: list[TensorPlan], on_tensor: Callable[[TensorPlan, int], None] | None) -> None:
    if on_tensor is not None:
        for plan in done:
            on_tensor(plan, plan.nbytes)


@dataclass
class _Part:
    data: Bytes  # a Future: the writer waits for the copy
    offset: int
    done: Callable[[], None] | None = None  # called by the writer once written (drop pages, free a buffer)
    plan: TensorPlan | None = None  # set on the empty part that ends a tensor
    nbytes: int = 0  # counted against PIPELINE_BYTES (a band's Future: 0, its buffer is one of BUFFERS)

    def __post_init__(self) -> None:
        if not isinstance(self.data, Future):
            self.nbytes = len(self.data)


class _Writer:
    """The writer thread, its queue, and the band buffers it hands back. Fields are guarded by ``cond``."""

    def __init__(self, write_at: WriteAt) -> None:
        self.write_at = write_at
        self.cond = threading.Condition()
        self.queue: deque[_Part] = deque()
        self.queued = 0  # bytes in the queue
        self.free: list[np.ndarray] = []  # band buffers not in use
        self.buffers = 0  # band buffers allocated
        self.written: list[TensorPlan] = []  # not yet reported
        self.error: BaseException | None = None
        self.closing = self.aborted = False
        self.thread = threading.Thread(target=self._run, name="tf2torch-writer", daemon=True)
        self.thread.start()

    def wait_for_room(self, nbytes: int) -> None:
        """Wait until ``nbytes`` more fit in the queue's budget (or the queue is empty)."""
        with self.cond:
            while self.queue and self.queued + nbytes > PIPELINE_BYTES and self.error is None:
                self.cond.wait()
            self._check()

    def put(self, part: _Part) -> None:
        self.wait_for_room(part.nbytes)
        with self.cond:
            self.queue.append(part)
            self.queued += part.nbytes
            self.cond.notify_all()

    def buffer(self, nbytes: int) -> np.ndarray:
        """A free band buffer of at least ``nbytes``: reused once the writer is done with it."""
        with self.cond:
            while not self.free and self.buffers >= BUFFERS and self.error is None:
                self.cond.wait()
            self._check()
            if self.free and self.free[-1].nbytes >= nbytes:
                return self.free.pop()
            if self.free:
                self.free.pop()  # too small for this tensor's bands: replaced by a larger one
            else:
                self.buffers += 1
        return np.empty(nbytes, np.uint8)

    def give_back(self, buffer: np.ndarray) -> None:
        with self.cond:
            self.free.append(buffer)
            self.cond.notify_all()

    def take_written(self) -> list[TensorPlan]:
        with self.cond:
            self._check()
            done, self.written = self.written, []
            return done

    def finish(self) -> None:
        with self.cond:
            self.closing = True
            self.cond.notify_all()
        self.thread.join()
        self._check()

    def stop(self) -> None:
        with self.cond:
            self.closing = self.aborted = True
            self.cond.notify_all()
        self.thread.join()

    def _check(self) -> None:
        if self.error is not None:
            raise self.error

    def _run(self) -> None:
        try:
            while True:
                with self.cond:
                    while not self.queue and not self.closing:
                        self.cond.wait()
                    if self.aborted or not self.queue:
                        return
                    part = self.queue[0]
                data = part.data.result() if isinstance(part.data, Future) else part.data  # a copier's error: ours
                if data:
                    self.write_at(data, part.offset)
                if part.done is not None:
                    part.done()
                with self.cond:
                    self.queue.popleft()
                    self.queued -= part.nbytes
                    if part.plan is not None:
                        self.written.append(part.plan)
                    part = data = None  # type: ignore[assignment]  # (its memory is free before anyone hears of the room)
                    self.cond.notify_all()
        except BaseException as exc:  # raised in the caller's thread at its next step
            with self.cond:
                self.error = exc
                self.cond.notify_all()
