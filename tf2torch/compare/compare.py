"""Per-layer statistics and the verdict.

Tolerance as in ``torch.testing.assert_close``: an element matches when ``|a - b| <= atol + rtol * |b|``,
``b`` being TensorFlow's value (the reference). Positions where both sides are NaN match; a NaN on
one side only does not. The maximum relative difference is taken over the elements where ``b != 0``
(it is undefined elsewhere; the absolute difference covers those elements).

Integer tensors on both sides (a quantized TFLite model's int8 / int16 / uint8 codes, indices) are
compared in their own units, steps, and only with ``atol``: a relative tolerance of an integer code,
offset by its zero point, means nothing, and ``rtol=1e-4`` of an int16 code near 32767 would pass three
steps of difference. At the default ``atol`` that means the same integers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from .result import Row

# A row whose values were compared and differ, or cannot be compared because their shapes differ.
DIVERGED = ("diverged", "shape")


@dataclass(frozen=True)
class Stats:
    max_abs: float
    max_rel: float
    ref_max: float  # max |b|: with atol and rtol, the largest difference any element may have
    ok: bool
    bad: int  # elements beyond tolerance


def stats(actual: np.ndarray, expected: np.ndarray, atol: float, rtol: float) -> Stats:
    """Compare ``actual`` (PyTorch, already in TF's layout) with ``expected`` (TensorFlow)."""
    a = np.asarray(actual, dtype=np.float64)
    b = np.asarray(expected, dtype=np.float64)
    if a.size == 0:
        return Stats(0.0, 0.0, 0.0, True, 0)
    both_nan = np.isnan(a) & np.isnan(b)
    with np.errstate(invalid="ignore", over="ignore"):
        diff = np.abs(a - b)
        diff[both_nan] = 0.0
        same_inf = np.isinf(a) & (a == b)  # inf - inf is nan, but equal infinities match
        diff[same_inf] = 0.0
        close = diff <= atol + rtol * np.abs(b)
        close |= both_nan | same_inf
        nonzero = (b != 0) & np.isfinite(b)
        rel = diff[nonzero] / np.abs(b[nonzero])
    finite_b = np.abs(b[np.isfinite(b)])
    return Stats(
        max_abs=float(np.max(np.where(np.isnan(diff), np.inf, diff))),
        max_rel=float(np.max(np.where(np.isnan(rel), np.inf, rel))) if rel.size else 0.0,
        ref_max=float(finite_b.max()) if finite_b.size else 0.0,
        ok=bool(close.all()),
        bad=int(close.size - np.count_nonzero(close)),
    )


def compare_row(name: str, kind: str, tf_name: str, torch_name: str, actual: np.ndarray | None,
                expected: np.ndarray | None, atol: float, rtol: float, note: str = "") -> Row:
    """One row of the table: the two tensors (``actual`` already moved to TF's layout) or why not."""
    if expected is None or actual is None:
        missing = "TensorFlow" if expected is None else "PyTorch"
        return Row(name, kind, tf_name, torch_name, (), None, None, None, "missing",
                   note or f"no {missing} value was captured")
    if tuple(actual.shape) != tuple(expected.shape):
        return Row(name, kind, tf_name, torch_name, tuple(expected.shape), None, None, None, "shape",
                   f"PyTorch {tuple(actual.shape)} vs TensorFlow {tuple(expected.shape)} (TF layout)"
                   + (f"; {note}" if note else ""))
    integer = is_integer(actual) and is_integer(expected)
    s = stats(actual, expected, atol, 0.0 if integer else rtol)
    if integer:
        note = "; ".join(x for x in (note, f"{np.dtype(expected.dtype).name} values compared in steps, "
                                          "atol only") if x)
    extra = (f"{s.bad} of {expected.size} elements beyond " + ("atol" if integer else "atol + rtol * |TF|")
             if not s.ok else "")
    return Row(name, kind, tf_name, torch_name, tuple(expected.shape), s.max_abs, s.max_rel, s.ref_max,
               "ok" if s.ok else "diverged", "; ".join(x for x in (note, extra) if x), integer=integer)


def is_integer(array: np.ndarray) -> bool:
    """An integer (or boolean) array: compared in steps, without rtol."""
    return np.asarray(array).dtype.kind in "iub"


def skipped_row(name: str, tf_name: str, torch_name: str, reason: str) -> Row:
    return Row(name, "layer", tf_name, torch_name, (), None, None, None, "skipped", reason)


def first_diverging(rows: Sequence[Row]) -> Row | None:
    """The first layer (in network order) that diverges; else the first output that does."""
    for kind in ("layer", "output"):
        for row in rows:
            if row.kind == kind and row.status in DIVERGED:
                return row
    return None


def verdict(rows: Sequence[Row]) -> bool:
    """A conversion matches when every final output is within tolerance.

    Layer rows locate a divergence; they do not decide the verdict (a layer whose difference never
    reaches an output, e.g. an unused branch, does not change what the model computes).
    """
    outputs = [r for r in rows if r.kind == "output"]
    return bool(outputs) and all(r.status == "ok" for r in outputs)
