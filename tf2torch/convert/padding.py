"""Padding for window ops (conv, pools, transposed conv) in generated code, from ``rewrite.same``'s plans.

Symmetric SAME folds into the op's ``padding=``; asymmetric SAME with a known input size becomes an
explicit pad module before the op; an unknown size that matters becomes the run-time ``SamePad`` helper
(reported). The math lives in ``rewrite/same.py``; this module only picks module specs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..rewrite.same import same_output_size, tf_same_conv_padding, tf_same_transpose_padding
from .base import Ctx, Module, Op
from .common import apply_module, spatial


@dataclass(frozen=True)
class WindowPlan:
    padding: tuple[int, ...]  # the op's own symmetric padding=
    ops: tuple[Op, ...] = ()  # modules to run before the op
    notes: tuple[str, ...] = ()
    helpers: tuple[str, ...] = ()


def conv_out_size(size: int | None, k: int, s: int, d: int, mode: str) -> int | None:
    """Keras output length of a conv/pool along one dim ("same"/"causal": ceil(in/s); "valid": floor)."""
    if size is None:
        return None
    if mode in ("same", "causal"):
        return same_output_size(size, s) if size > 0 else 0
    return max((size - (k - 1) * d - 1) // s + 1, 0)


def window_plan(ctx: Ctx, kernel: tuple[int, ...], strides: tuple[int, ...], dilation: tuple[int, ...],
                mode: str, kind: str) -> WindowPlan:
    """Padding for a conv (``kind="conv"``, zeros) or a max pool (``kind="max"``, -inf)."""
    n = len(kernel)
    if mode == "valid":
        return WindowPlan((0,) * n)
    if mode == "causal":  # Conv1D only: Keras pads (k - 1) * d zeros on the left
        left = (kernel[0] - 1) * dilation[0]
        return WindowPlan((0,), (apply_module(Module("nn.ZeroPad1d", ((left, 0),)), "pad"),))
    plan = tf_same_conv_padding(spatial(ctx.x), kernel, strides, dilation)
    value = 0.0 if kind == "conv" else -math.inf
    if plan.dynamic:
        pad = Module("SamePad", (kernel, strides, dilation), (("value", value),))
        note = ("input size unknown: TF 'SAME' padding is computed at run time (SamePad); "
                "pass --input-shape for a static pad")
        return WindowPlan((0,) * n, (apply_module(pad, "pad"),), (note,), ("SamePad",))
    if plan.pad is None:
        return WindowPlan(plan.padding)
    cls = f"nn.ZeroPad{n}d" if kind == "conv" else f"nn.ConstantPad{n}d"
    args = (plan.pad,) if kind == "conv" else (plan.pad, value)
    note = f"TF 'SAME' is asymmetric here: explicit pad {plan.pad} (F.pad order) before the op"
    return WindowPlan((0,) * n, (apply_module(Module(cls, args), "pad"),), (note,))


@dataclass(frozen=True)
class TransposePlan:
    padding: tuple[int, ...]
    output_padding: tuple[int, ...]
    out_spatial: tuple[int | None, ...]
    ops: tuple[Op, ...] = ()  # modules to run after the op (a crop)
    notes: tuple[str, ...] = ()
    helpers: tuple[str, ...] = ()


def transpose_plan(ctx: Ctx, kernel: tuple[int, ...], strides: tuple[int, ...], dilation: tuple[int, ...],
                   mode: str) -> TransposePlan:
    n = len(kernel)
    sizes = spatial(ctx.x)
    if mode == "valid":
        out = tuple(None if s is None else (s - 1) * st + (k - 1) * d + 1
                    for s, k, st, d in zip(sizes, kernel, strides, dilation))
        return TransposePlan((0,) * n, (0,) * n, out)
    plan = tf_same_transpose_padding(kernel, strides, dilation)  # TF: out = in * stride, any in
    out = tuple(None if s is None else s * st for s, st in zip(sizes, strides))
    ops: tuple[Op, ...] = ()
    helpers: tuple[str, ...] = ()
    if plan.crop is not None:
        ops, helpers = (apply_module(Module("Crop", (plan.crop,)), "crop"),), ("Crop",)
    return TransposePlan(plan.padding, plan.output_padding, out, ops, helpers=helpers)


def avg_pool_ops(ctx: Ctx, kernel: tuple[int, ...], strides: tuple[int, ...], mode: str) -> tuple[Op, tuple[str, ...], tuple[str, ...]]:
    """The op for a Keras AveragePooling: TF divides by the count of real (unpadded) elements."""
    n = len(kernel)
    if mode == "valid":
        return apply_module(Module(f"nn.AvgPool{n}d", (kernel, strides))), (), ()
    plan = tf_same_conv_padding(spatial(ctx.x), kernel, strides)
    if plan.dynamic:
        note = "input size unknown: exact TF 'SAME' average pooling computed at run time (SameAvgPool)"
        return apply_module(Module("SameAvgPool", (kernel, strides))), (note,), ("SameAvgPool",)
    if plan.pad is None:  # symmetric: torch's count_include_pad=False divides by the real count, as TF
        module = Module(f"nn.AvgPool{n}d", (kernel, strides), (("padding", plan.padding),
                                                               ("count_include_pad", False)))
        return apply_module(module), (), ()
    note = f"TF 'SAME' average pool is asymmetric here: exact divisor via SameAvgPool, pad {plan.pad}"
    return apply_module(Module("SameAvgPool", (kernel, strides), (("pad", plan.pad),))), (note,), ("SameAvgPool",)
