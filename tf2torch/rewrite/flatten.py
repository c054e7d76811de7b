"""The Dense after a Flatten over NHWC, onto a user's model: found in the source (``ties.Flatten``),
checked on one forward pass, turned into the ``dense_after_flatten`` layout.

TF flattens (H, W, C); a PyTorch port usually flattens (C, H, W) with ``torch.flatten``, and some ports
permute to channels-last first. Which one the port does is read off the values of a seeded forward pass
(the Linear's input against the tied module's output), never assumed.
"""

from __future__ import annotations

from typing import Any

from ..map.rules import Rules
from .ties import Flatten, Ties
from .trace import run_traced


def flatten_order(flat: Any, before: Any) -> str:
    """Which flatten of ``before`` (N, C, *spatial) produced ``flat`` (N, features): "channels_first",
    "channels_last" or "" (neither: another op sits between them). Elementwise ReLU is allowed."""
    import torch

    orders = {"channels_first": before.flatten(1), "channels_last": before.movedim(1, -1).flatten(1)}
    found = [name for name, value in orders.items() for f in (lambda t: t, torch.relu)
             if value.shape == flat.shape and torch.equal(f(value), flat)]
    return found[0] if len(set(found)) == 1 else ""


def flatten_shape(trace: Any, module_of_op: dict[str, str], flat: Flatten) -> tuple[int, ...] | None:
    """(C, *spatial) of the tensor the Flatten read, from the forward pass, or None if unknown."""
    if flat.source_op == "":
        shape = trace.input_shape
    else:
        module = module_of_op.get(flat.source_op)
        shape = trace.out_shapes.get(module) if module else None
    return tuple(shape[1:]) if shape and len(shape) >= 2 else None


def flatten_layouts(model: Any, ties: Ties, module_of_op: dict[str, str], rules: Rules,
                    shape: tuple[int, ...]) -> tuple[dict[str, Any], list[str]]:
    """[layouts] entries for every Dense fed by a Flatten over NHWC, checked on the forward pass;
    notes; and failures (a Flatten whose order the forward pass does not show)."""
    from ..map import layouts

    todo = [f for f in ties.flattens if f.dense_key not in rules.layouts]
    if not todo:
        return {}, [], []
    sources = {module_of_op.get(f.source_op, "") for f in todo}
    watched = run_traced(model, shape, capture=frozenset({f.dense for f in todo} | sources - {""}), seed=0)
    if isinstance(watched, str):
        return {}, [], [f"{todo[0].dense!r}: {todo[0].what}, but {watched}; add a [layouts] rule"]
    found, notes, failures = {}, [], []
    for f in todo:
        fed = flatten_shape(watched, module_of_op, f)
        fix = (f"add a [layouts] rule \"{f.dense_key}\" = \"dense_after_flatten:H,W,C\" "
               "(or \"dense\" if the port flattens channels-last)")
        if fed is not None and len(fed) == 1:
            continue  # a Flatten of (N, features) changes nothing
        if fed is None or f.dense not in watched.captured:
            failures.append(f"{f.dense!r}: {f.what}, but the forward pass does not show what the Linear reads; {fix}")
            continue
        flat = watched.captured[f.dense][0]
        before = watched.captured[module_of_op[f.source_op]][1] if f.source_op else None
        if before is None:
            import torch

            before = torch.randn(shape, generator=torch.Generator().manual_seed(0))
        order = flatten_order(flat, before)
        if not order:
            failures.append(f"{f.dense!r}: {f.what}, but the Linear's input in the forward pass is not that "
                            f"output {list(fed)} flattened (another op in between?); {fix}")
            continue
        channels, spatial = fed[0], fed[1:]
        if order == "channels_first" and any(s > 1 for s in spatial):
            found[f.dense_key] = layouts.dense_after_flatten(tuple(spatial), channels)
            notes.append(f"{f.dense_key}: rows reordered for a channels-first flatten of (C, H, W) = {list(fed)} "
                         f"(evidence: {f.what}; the forward pass flattens channels-first)")
        elif order == "channels_last":
            notes.append(f"{f.dense_key}: plain Dense layout (evidence: {f.what}; the port flattens channels-last)")
    return found, notes, failures
