"""A progress bar on stderr for long work: only on a terminal, only after a second, never in CI logs."""

from __future__ import annotations

import sys
import time
from typing import Any


class Progress:
    """``with Progress(total, unit="B") as bar: bar.advance(n)``; silent unless stderr is a TTY."""

    DELAY = 1.0  # seconds of work before a bar appears: short runs stay quiet
    INTERVAL = 0.1

    def __init__(self, total: int | None = None, unit: str = "B", label: str = "", enabled: bool = True) -> None:
        self.total, self.unit, self.label = total, unit, label
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

    def on_tensor(self, plan: Any, nbytes: int) -> None:
        """Writer callback: one tensor of ``nbytes`` written."""
        if self.total is None and hasattr(plan, "total_bytes"):
            self.total = plan.total_bytes
        self.count += 1
        self.advance(nbytes)

    def advance(self, n: int) -> None:
        self.done += n
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._start < self.DELAY or now - self._last < self.INTERVAL:
            return
        self._last, self._shown = now, True
        rate = self.done / max(now - self._start, 1e-9)
        if self.total:
            frac = min(self.done / self.total, 1.0)
            bar = "#" * int(frac * 30)
            text = f"{self.label} [{bar:<30}] {frac:6.1%} {_human(self.done)}/{_human(self.total)}"
        else:
            text = f"{self.label} {_human(self.done)}"
        sys.stderr.write(f"\r{text}  {self.count} tensors  {_human(rate)}/s\033[K")
        sys.stderr.flush()


def _human(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"
