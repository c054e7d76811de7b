"""A progress bar on stderr for long work: only on a terminal, only after a second, never in CI logs.

    with Progress(total=nbytes, tensors=count, label="converting") as bar:
        for plan in plans:
            ...
            bar.on_tensor(plan, plan.nbytes)     # or bar(plan, plan.nbytes): a writer callback

When the totals are only known later (``convert`` plans first, then writes), the writer announces
them with ``bar.expect(total_bytes, tensors)``; ``write_outputs`` does so for any callback that has
an ``expect`` method.
"""

from __future__ import annotations

import sys
import time
from typing import Any


class Progress:
    """Bytes and tensors done out of a known total; silent unless enabled and stderr is a TTY."""

    DELAY = 1.0  # seconds of work before a bar appears: short runs stay quiet
    INTERVAL = 0.1

    def __init__(self, total: int | None = None, unit: str = "B", label: str = "", enabled: bool = True,
                 tensors: int | None = None) -> None:
        self.total, self.unit, self.label, self.tensors = total, unit, label, tensors
        self.enabled = enabled and sys.stderr.isatty()
        self.done = 0
        self.count = 0
        self._start = self._last = 0.0
        self._shown = False

    def __enter__(self) -> Progress:
        self._start = time.monotonic()
        return self

    def __exit__(self, *exc: Any) -> None:
        if self._shown:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()

    def expect(self, total: int, tensors: int | None = None) -> None:
        """Announce the totals once they are known."""
        self.total, self.tensors = total, tensors

    def on_tensor(self, plan: Any, nbytes: int) -> None:
        """One tensor of ``nbytes`` done (written, or read and checked)."""
        self.count += 1
        self.advance(nbytes)

    __call__ = on_tensor  # so the bar itself can be passed as a writer's ``on_tensor`` callback

    def advance(self, n: int) -> None:
        self.done += n
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._start < self.DELAY or now - self._last < self.INTERVAL:
            return
        self._last, self._shown = now, True
        sys.stderr.write(f"\r{self.line(now - self._start)}\033[K")
        sys.stderr.flush()

    def line(self, elapsed: float) -> str:
        """The bar's text after ``elapsed`` seconds."""
        rate = self.done / max(elapsed, 1e-9)
        count = f"{self.count}/{self.tensors}" if self.tensors is not None else str(self.count)
        if self.total:
            frac = min(self.done / self.total, 1.0)
            text = (f"{self.label} [{'#' * int(frac * 30):<30}] {frac:6.1%} "
                    f"{_human(self.done)}/{_human(self.total)}")
        else:
            text = f"{self.label} {_human(self.done)}"
        return f"{text}  {count} tensors  {_human(rate)}/s"


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"
