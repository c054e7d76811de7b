"""TF 'SAME' and epsilon rewrites of a user's PyTorch model: ``plan_same``'s plans, translated.

The padding decision is ``same.plan_same``'s (the one generated code gets too); here a plan becomes a
rewrite ``apply.apply_rewrites`` carries out: a conv keeps its class and weights (its ``padding=``, a pad
before it, or run-time ``SamePad``); a pool is replaced by the modules ``same_torch.pool_specs`` spells.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from ..errors import UsageError
from ..runtime.apply import apply_rewrites, build_module
from .same import plan_same
from .same_torch import pool_specs
from .sources import per_dim, window_kind
from .trace import run_traced


@dataclass(frozen=True)
class Rewrite:
    kind: str
    path: str
    args: Any
    why: str
    dynamic: bool = False  # from the plan: padding computed at run time


@dataclass(frozen=True)
class _Window:
    """A module marked TF 'SAME': what ``plan_same`` needs to plan it."""

    path: str
    kind: str  # "conv", "max" or "avg"
    kernel: tuple[int, ...]
    stride: tuple[int, ...]
    dilation: tuple[int, ...]
    why: str


def _window(model: Any, path: str, why: str) -> _Window:
    module = model.get_submodule(path)
    kind = window_kind(module)
    if not kind:
        raise UsageError(f"{path}: marked TF 'SAME' but it is not a conv or pool module")
    n = int(kind[-2])
    k, s = per_dim(module.kernel_size, n), per_dim(module.stride or module.kernel_size, n)
    op = "max" if kind.startswith("MaxPool") else "avg" if kind.startswith("AvgPool") else "conv"
    d = per_dim(getattr(module, "dilation", 1), n) if op == "conv" else (1,) * n  # TF pools have none
    return _Window(path, op, k, s, d, why)


def plan_rewrites(model: Any, same: dict[str, str], input_shape: tuple[int, ...] | None,
                  eps: dict[str, tuple[float, str]]) -> list[Rewrite]:
    """Padding rewrites for the SAME modules (static where the size is known or does not matter),
    then the epsilon rewrites, each with the evidence it rests on."""
    windows = [_window(model, path, same[path]) for path in sorted(same)]
    sizes: dict[str, tuple[int, ...]] = {}
    if input_shape is not None and windows:  # the sizes each module sees: run once with run-time padding
        probe = copy.deepcopy(model)  # probe on a copy: the user's model object stays as built
        apply_rewrites(probe, [(r.kind, r.path, r.args) for r in (_rewrite(w, None, False) for w in windows)])
        trace = run_traced(probe, input_shape)
        if isinstance(trace, str):
            raise UsageError(f"--input-shape {list(input_shape)}: the model with TF padding failed: {trace}")
        sizes = {w.path: trace.in_shapes[w.path][-len(w.kernel):] for w in windows if trace.ran(w.path)}
    rewrites = [_rewrite(w, sizes.get(w.path), input_shape is not None) for w in windows]
    # a port that already computes what TF does needs no rewrite (stride 1, odd kernel: k // 2 each side)
    rewrites = [r for r in rewrites if not _already(model.get_submodule(r.path), r)]
    for path, (value, why) in sorted(eps.items()):
        old = float(model.get_submodule(path).eps)
        rewrites.append(Rewrite("eps", path, value, f"epsilon {value:g} (the model had {old:g}); {why}"))
    return rewrites


def _rewrite(w: _Window, size: tuple[int, ...] | None, sized: bool) -> Rewrite:
    """The rewrite that spells ``plan_same``'s plan for this module at this input size (``None``:
    unknown): static where the size is known or does not matter (stride 1), else at run time."""
    plan = plan_same(size, w.kernel, w.stride, w.dilation, w.kind)
    if plan.dynamic:  # no size, and it matters
        why = w.why + ("; not reached with --input-shape, padding at run time" if sized else "")
    else:
        why = f"{w.why}; " + ("any input size" if size is None else f"input {'x'.join(map(str, size))}")
    why += {"dynamic": "", "folded": f": symmetric padding {plan.padding}",
            "pad": f": asymmetric pad {plan.pad} (F.pad order)"}[plan.form]
    if w.kind != "conv":  # pools: replaced by what the plan spells (the same modules generated code gets)
        divisor = ", divided by the count of real elements" if plan.exclude_pad else ""
        return Rewrite("pool", w.path, pool_specs(plan, w.kernel, w.stride), f"{why}; {w.kind} pool{divisor}",
                       plan.dynamic)
    if plan.form == "folded":
        return Rewrite("padding", w.path, plan.padding, why)
    if plan.form == "pad":
        return Rewrite("pad", w.path, (plan.pad, plan.pad_value), why)
    return Rewrite("dynamic", w.path, (w.kernel, w.stride, w.dilation), why, True)


def _already(module: Any, r: Rewrite) -> bool:
    """The module as the port built it already computes what the rewrite would make it compute."""
    if r.kind == "padding":
        return per_dim(module.padding, len(r.args)) == tuple(r.args)
    if r.kind != "pool" or len(r.args) != 1 or not r.args[0][0].startswith("nn."):
        return False
    built, n = build_module(*r.args[0]), len(r.args[0][1][0])
    return type(module) is type(built) and all(
        per_dim(getattr(module, a, 1), n) == per_dim(getattr(built, a, 1), n) for a in _POOL_DIMS) and all(
        getattr(module, a, None) == getattr(built, a, None) for a in _POOL_FLAGS)


_POOL_DIMS = ("kernel_size", "stride", "padding", "dilation")
_POOL_FLAGS = ("ceil_mode", "count_include_pad", "divisor_override", "return_indices")
