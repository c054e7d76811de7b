"""Padding for window ops (conv, pools, transposed conv) in generated code, from ``rewrite.same``'s plans.

Symmetric SAME folds into the op's ``padding=``; asymmetric SAME with a known input size becomes an
explicit pad module before the op; an unknown size that matters becomes the run-time ``SamePad`` helper
(reported). The math lives in ``rewrite/same.py``; this module only picks module specs.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..rewrite.same import same_output_size, size_independent, tf_same_conv_padding, tf_same_transpose_padding
from .base import Ctx, Module, Op
from .common import apply_module, spatial

# Said of a layer whose static SAME padding is right only for the input size it was planned for (a
# stride > 1): the generated model then checks that size on every call (codegen.model_file), since at
# another size it would compute something else with no error.
SIZED_NOTE = "static TF 'SAME' padding planned for the model's input size"


def _sized(plan, kernel, strides, dilation=None) -> tuple[str, ...]:
    dilation = dilation or (1,) * len(kernel)
    depends = any(not size_independent(k, s, d) for k, s, d in zip(kernel, strides, dilation))
    return (SIZED_NOTE,) if depends and not plan.dynamic else ()


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
    """Padding for a conv (``kind="conv"``, zeros) or a max pool (``kind="max"``, -inf).

    A max pool whose padding must be computed at run time is not planned here (``pool_ops``)."""
    n = len(kernel)
    if mode == "valid":
        return WindowPlan((0,) * n)
    if mode == "causal":  # Conv1D only: Keras pads (k - 1) * d zeros on the left
        left = (kernel[0] - 1) * dilation[0]
        return WindowPlan((0,), (apply_module(Module("nn.ZeroPad1d", ((left, 0),)), "pad"),))
    plan = tf_same_conv_padding(spatial(ctx.x), kernel, strides, dilation)
    value = 0.0 if kind == "conv" else -math.inf
    if plan.dynamic:
        pad = Module("SamePad", (kernel, strides, dilation))
        note = ("input size unknown: TF 'SAME' padding is computed at run time (SamePad); "
                "pass --input-shape for a static pad")
        return WindowPlan((0,) * n, (apply_module(pad, "pad"),), (note,), ("SamePad",))
    sized = _sized(plan, kernel, strides, dilation)
    if plan.pad is None:
        return WindowPlan(plan.padding, notes=sized)
    cls = f"nn.ZeroPad{n}d" if kind == "conv" else f"nn.ConstantPad{n}d"
    args = (plan.pad,) if kind == "conv" else (plan.pad, value)
    note = f"TF 'SAME' is asymmetric here: explicit pad {plan.pad} (F.pad order) before the op"
    return WindowPlan((0,) * n, (apply_module(Module(cls, args), "pad"),), (note, *sized))


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


def pool_ops(ctx: Ctx, kernel: tuple[int, ...], strides: tuple[int, ...], mode: str,
             kind: str) -> tuple[tuple[Op, ...], tuple[str, ...], tuple[str, ...]]:
    """Ops for a Keras Max/AveragePooling (``kind`` "max" / "avg") and their notes and helpers.

    TF's SAME max pool pads with -inf; its SAME average pool divides by the count of *real* elements.
    """
    n = len(kernel)
    torch_cls = f"nn.MaxPool{n}d" if kind == "max" else f"nn.AvgPool{n}d"
    if mode == "valid":
        return (apply_module(Module(torch_cls, (kernel, strides))),), (), ()
    plan = tf_same_conv_padding(spatial(ctx.x), kernel, strides)
    if plan.dynamic:
        note = f"input size unknown: TF 'SAME' {kind} pooling computed at run time (SamePool)"
        return (apply_module(Module("SamePool", (kernel, strides, kind))),), (note,), ("SamePool",)
    sized = _sized(plan, kernel, strides)
    if plan.pad is None:  # symmetric: torch pads max pools with -inf; count_include_pad=False = TF's divisor
        extra = (("count_include_pad", False),) if kind == "avg" else ()
        kwargs = (("padding", plan.padding), *extra) if any(plan.padding) else ()
        return (apply_module(Module(torch_cls, (kernel, strides), kwargs)),), sized, ()
    note = f"TF 'SAME' {kind} pool is asymmetric here: pad {plan.pad} (F.pad order)"
    if kind == "max":
        pad = apply_module(Module(f"nn.ConstantPad{n}d", (plan.pad, -math.inf)), "pad")
        return (pad, apply_module(Module(torch_cls, (kernel, strides)))), (note, *sized), ()
    return ((apply_module(Module("SamePool", (kernel, strides, "avg"), (("pad", plan.pad),))),), (note, *sized),
            ("SamePool",))
