"""The one error metric of the tests and the project's rule for it.

Error: max |actual - expected| / max |expected| over a whole output (float64 arithmetic), so an output
whose entries cross zero is measured against its scale, not element by element.

The rule (issue 23): an error above ``BOUND`` is a bug until a control explains it. The control here is
the converted model's own float32 rounding, measured in the test: the same PyTorch model run in float64
(``float64_drift``). Two float32 programs computing the same function differ by about the sum of their
distances from the exact result, so a faithful conversion stays within a few times that drift, while a
wrong constant (an epsilon, a scale) moves the output by its own size, whatever the rounding: keras-hub
Qwen3's q/k epsilon was 1.3e-5 off against a drift of 2e-7.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

BOUND = 1e-6
# error <= FACTOR * drift explains an error by rounding: float32 Keras and float32 PyTorch each sit about
# one drift from the exact result, in directions that do not cancel
FACTOR = 4.0


def rel_error(actual: Any, expected: Any) -> float:
    a, e = np.asarray(_numpy(actual), np.float64), np.asarray(_numpy(expected), np.float64)
    if a.shape != e.shape:
        raise AssertionError(f"shape {a.shape} against the expected {e.shape}")
    scale = float(np.abs(e).max()) if e.size else 0.0
    diff = float(np.abs(a - e).max()) if e.size else 0.0
    return diff / scale if scale else diff


def float64_drift(model: Any, feed: Sequence[Any], read: Callable[[Any], Any] = lambda out: out) -> float:
    """How far ``read(model(*feed))`` moves when a copy of the model and its float inputs are float64."""
    import torch

    def run(m: Any, xs: Sequence[Any]) -> Any:
        with torch.no_grad():
            return read(m(*xs))

    wide = copy.deepcopy(model).double()
    inputs = [x.double() if torch.is_floating_point(x) else x for x in feed]
    return rel_error(run(wide, inputs), run(model, feed))


def check(actual: Any, expected: Any, label: str, drift: float | None = None) -> float:
    """Assert the rule and print the figures; ``drift``: the control (``float64_drift``) where the error
    may exceed ``BOUND``."""
    error = rel_error(actual, expected)
    bound = BOUND if drift is None else max(BOUND, FACTOR * drift)
    control = "" if drift is None else f", float64 drift {drift:.2e}"
    print(f"{label}: max relative error {error:.2e} (bound {bound:.1e}{control})")
    assert error <= bound, f"{label}: {error:.2e} > {bound:.1e}{control}"
    return error


def _numpy(value: Any) -> Any:
    detach = getattr(value, "detach", None)
    return detach().cpu().numpy() if detach is not None else value
