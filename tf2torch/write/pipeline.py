"""Produce tensors on worker threads and write them in order on another, with bounded memory.

Producing a tensor (read it, check its CRC32C, transpose it) and writing it (a copy into the page
cache) each keep a CPU busy for about as long, and both release the GIL (numpy copies, the crc32c
extension, ``os.write``). So up to ``PRODUCERS`` tensors are produced at once on worker threads while
a writer thread writes the finished ones in plan order. Plans are started only while the bytes of
started-but-unwritten tensors stay within ``PIPELINE_BYTES`` (a larger tensor starts alone), so peak
memory is about ``max(largest tensor, PIPELINE_BYTES)``, not the checkpoint.

Errors surface in the caller's thread, in plan order: a producer's error when its tensor's turn
comes, a write error (disk full) at the next step. Whatever way ``stream`` exits, it first stops the
writer after its current chunk and waits for running producers (a numpy copy cannot be interrupted),
so no thread touches the output once it returns; Ctrl-C works as usual, in the caller's thread.
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from .plan import TensorPlan, produce_checked

PIPELINE_BYTES = 64 << 20
PRODUCERS = min(2, os.cpu_count() or 1)


Write = Callable[[np.ndarray, Callable[[], bool]], None]


def stream(plans: Sequence[TensorPlan], write: Write,
           on_tensor: Callable[[TensorPlan, int], None] | None = None) -> None:
    """Produce each plan and call ``write(array, stopped)`` on the writer thread, in plan order.

    ``write`` should return early once ``stopped()`` is true (checked between chunks): the caller is
    unwinding. ``on_tensor(plan, plan.nbytes)`` is called on the caller's thread after each write.
    """
    writer = _Writer(write)
    pool = ThreadPoolExecutor(max_workers=PRODUCERS, thread_name_prefix="tf2torch-produce")
    started: deque[tuple[TensorPlan, Future[np.ndarray]]] = deque()
    waiting = deque(plans)
    try:
        while waiting or started:
            # Start what the budget allows; wait for room only when nothing else is under way.
            while waiting and writer.reserve(waiting[0].nbytes, block=not started):
                plan = waiting.popleft()
                started.append((plan, pool.submit(produce_checked, plan)))
            plan, future = started.popleft()
            array = future.result()
            del future  # (it holds the array too: once written, nothing here may keep it alive)
            writer.put(plan, array)
            del array
            _report(writer.take_written(), on_tensor)
        writer.finish()
        _report(writer.take_written(), on_tensor)
    finally:
        for _, future in started:
            future.cancel()
        pool.shutdown(wait=True)
        writer.stop()


def _report(done: list[TensorPlan], on_tensor: Callable[[TensorPlan, int], None] | None) -> None:
    if on_tensor is not None:
        for plan in done:
            on_tensor(plan, plan.nbytes)


class _Writer:
    """The writer thread, and the byte budget shared with the producers (``reserve``)."""

    def __init__(self, write: Write) -> None:
        self.write = write
        self.cond = threading.Condition()
        self.queue: deque[tuple[TensorPlan, np.ndarray]] = deque()
        self.reserved = 0  # bytes of tensors started and not yet written
        self.written: list[TensorPlan] = []  # not yet reported
        self.error: BaseException | None = None
        self.closing = self.aborted = False
        self.thread = threading.Thread(target=self._run, name="tf2torch-writer", daemon=True)
        self.thread.start()

    def reserve(self, nbytes: int, block: bool) -> bool:
        with self.cond:
            while self.reserved and self.reserved + nbytes > PIPELINE_BYTES and self.error is None:
                if not block:
                    return False
                self.cond.wait()
            self._check()
            self.reserved += nbytes
            return True

    def put(self, plan: TensorPlan, array: np.ndarray) -> None:
        with self.cond:
            self._check()
            self.queue.append((plan, array))
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
                    plan, array = self.queue[0]
                self.write(array, lambda: self.aborted)
                with self.cond:
                    self.queue.popleft()
                    self.reserved -= plan.nbytes
                    self.written.append(plan)
                    array = None  # type: ignore[assignment]  # freed before anyone hears of the room
                    self.cond.notify_all()
        except BaseException as exc:  # raised in the caller's thread at its next step
            with self.cond:
                self.error = exc
                self.cond.notify_all()
