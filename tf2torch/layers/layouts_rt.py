"""Run-time tensor layouts: the expressions that move an activation between "keras", "cf", "cf_flat".

(Weights change layout once, at conversion, through ``map.layouts``; activations change layout in the
generated forward only where a layer needs another layout than its input has.)
"""

from __future__ import annotations

from ..codegen import nodes as n
from .base import TensorInfo


def normalise(info: TensorInfo) -> TensorInfo:
    """Rank <= 2 tensors have one layout only: call it "keras"."""
    if info.rank <= 2 and info.layout == "cf":
        return TensorInfo(info.shape, "keras")
    return info


def convert(expr: n.Expr, info: TensorInfo, want: str) -> tuple[n.Expr, TensorInfo]:
    """``expr`` wrapped so the tensor is in layout ``want`` ("keras" or "cf")."""
    info = normalise(info)
    if want == info.layout or (info.rank <= 2 and info.layout != "cf_flat"):
        return expr, info
    if info.layout == "cf_flat":
        *spatial, channels = info.flat_from
        keras = TensorInfo(info.shape, "keras")
        # channels-first flatten back to TF's order: unflatten to (C, *spatial), channels last, flatten.
        unflat = n.method(expr, "unflatten", 1, tuple(int(s) for s in (channels, *spatial)))  # type: ignore[arg-type]
        return n.method(n.method(unflat, "movedim", 1, -1), "flatten", 1), keras
    if want == "cf":
        return n.method(expr, "movedim", -1, 1), TensorInfo(info.shape, "cf")
    return n.method(expr, "movedim", 1, -1), TensorInfo(info.shape, "keras")
