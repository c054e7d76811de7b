"""Padding for window ops (conv, pools, transposed conv) in generated code: translations of
``rewrite.same.plan_same``'s plans (spelled by ``rewrite.same_torch``) into module specs.

No SAME decision is made here: which form (folded / explicit pad / run time), the pad value, the avg
divisor and whether the input-size guard is needed all come from the plan. The notes are for the
report only; the guard reads ``sized`` (``codegen.model_file``), never a note's words.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..rewrite.same import SamePlan, plan_same, same_output_size
from ..rewrite.same_torch import conv_pad_spec, pool_specs
from ..rewrite.same_transpose import tf_same_transpose_padding
from .base import Ctx, Module, Op
from .common import apply_module, spatial

# For the report: a layer whose static SAME padding is right only for the input size it was planned for.
SIZED_NOTE = "static TF 'SAME' padding planned for the model's input size"


def _notes(plan: SamePlan) -> tuple[str, ...]:
    """The report's words for a plan (what it is, and why: the user can act on them)."""
    if plan.dynamic:
        return (("input size unknown: TF 'SAME' padding is computed at run time (SamePad); "
                 "pass --input-shape for a static pad") if plan.kind == "conv" else
                f"input size unknown: TF 'SAME' {plan.kind} pooling computed at run time (SamePool)",)
    notes: tuple[str, ...] = ()
    if plan.form == "pad":
        notes = (f"TF 'SAME' is asymmetric here: explicit pad {plan.pad} (F.pad order) before the op"
                 if plan.kind == "conv" else
                 f"TF 'SAME' {plan.kind} pool is asymmetric here: pad {plan.pad} (F.pad order)",)
    return (*notes, SIZED_NOTE) if plan.sized else notes


@dataclass(frozen=True)
class WindowPlan:
    padding: tuple[int, ...]  # the op's own symmetric padding=
    ops: tuple[Op, ...] = ()  # modules to run before the op (convs); the whole pool (pool_ops)
    notes: tuple[str, ...] = ()
    helpers: tuple[str, ...] = ()
    sized: bool = False  # from the plan: the generated model must check its input size


def conv_out_size(size: int | None, k: int, s: int, d: int, mode: str) -> int | None:
    """Keras output length of a conv/pool along one dim ("same"/"causal": ceil(in/s); "valid": floor)."""
    if size is None:
        return None
    if mode in ("same", "causal"):
        return same_output_size(size, s) if size > 0 else 0
    return max((size - (k - 1) * d - 1) // s + 1, 0)


def window_plan(ctx: Ctx, kernel: tuple[int, ...], strides: tuple[int, ...], dilation: tuple[int, ...],
                mode: str) -> WindowPlan:
    """Padding for a conv: its ``padding=`` and the modules to run before it."""
    n = len(kernel)
    if mode == "valid":
        return WindowPlan((0,) * n)
    if mode == "causal":  # Conv1D only: Keras pads (k - 1) * d zeros on the left
        left = (kernel[0] - 1) * dilation[0]
        return WindowPlan((0,), (apply_module(Module("nn.ZeroPad1d", ((left, 0),)), "pad"),))
    plan = plan_same(spatial(ctx.x), kernel, strides, dilation, "conv")
    spec = conv_pad_spec(plan, kernel, strides, dilation)
    ops = () if spec is None else (apply_module(Module(*spec), "pad"),)
    helpers = ("SamePad",) if plan.dynamic else ()
    return WindowPlan(plan.padding, ops, _notes(plan), helpers, plan.sized)


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


def pool_ops(ctx: Ctx, kernel: tuple[int, ...], strides: tuple[int, ...], mode: str, kind: str) -> WindowPlan:
    """The complete Keras Max/AveragePooling (``kind`` "max" / "avg") as ``ops``, with notes and helpers."""
    n = len(kernel)
    if mode == "valid":
        torch_cls = f"nn.MaxPool{n}d" if kind == "max" else f"nn.AvgPool{n}d"
        return WindowPlan((0,) * n, (apply_module(Module(torch_cls, (kernel, strides))),))
    plan = plan_same(spatial(ctx.x), kernel, strides, 1, kind)
    specs = pool_specs(plan, kernel, strides)
    # a pad before the pool gets the attribute suffix "pad"; the pool itself is the layer's main module
    ops = tuple(apply_module(Module(*spec), "pad" if i < len(specs) - 1 else "") for i, spec in enumerate(specs))
    helpers = tuple(dict.fromkeys(spec[0] for spec in specs if not spec[0].startswith("nn.")))
    return WindowPlan((0,) * n, ops, _notes(plan), helpers, plan.sized)
