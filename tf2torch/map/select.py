"""Which source variables are candidates for the state_dict, and why the others are skipped."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..spec import Role, Variable
from .account import Entry
from .rules import NO_RULES, Rules

EMA_SUFFIX = "/ExponentialMovingAverage"  # tf.train.ExponentialMovingAverage names shadows <var>/ExponentialMovingAverage


def _skip(var: Variable, reason: str) -> Entry:
    return Entry("skipped", source=var.name, reason=reason, shape=var.shape, dtype=var.dtype.name)


def ema_weights(variables: Sequence[Variable]) -> dict[str, Variable]:
    """Weight name -> the weight reading its ExponentialMovingAverage shadow's data (same name, so it
    maps to the same key)."""
    shadows = {v.name[: -len(EMA_SUFFIX)]: v for v in variables if v.role is Role.EMA and v.name.endswith(EMA_SUFFIX)}
    return {v.name: replace(v, loader=shadows[v.name].loader, note=f"EMA shadow {shadows[v.name].name}")
            for v in variables if v.role is Role.WEIGHT and v.name in shadows}


def select(variables: tuple[Variable, ...], ema: bool = False, rules: Rules = NO_RULES) -> tuple[list[Variable], list[Entry]]:
    """Split variables into candidates and skipped entries (optimizer, bookkeeping, EMA policy, rules).

    With ``ema`` the ExponentialMovingAverage shadow of each weight replaces it: the candidate keeps the
    weight's name (so it maps to the same key) and reads the shadow's data.
    """
    shadowed = ema_weights(variables) if ema else {}
    chosen: list[Variable] = []
    skipped: list[Entry] = []
    for var in variables:
        if rules.skipped(var.name):
            skipped.append(_skip(var, f"skipped by the rules file {rules.source}"))
        elif var.role is Role.OPTIMIZER:
            skipped.append(_skip(var, var.note or "optimizer state"))
        elif var.role is Role.BOOKKEEPING:
            skipped.append(_skip(var, var.note or "bookkeeping"))
        elif var.role is Role.EMA:
            skipped.append(_skip(var, "EMA shadow, used in place of its variable (--ema)" if ema
                                 else "EMA shadow not selected (pass --ema to use the averaged weights)"))
        elif var.dtype.name == "string":
            skipped.append(_skip(var, "string tensor: a state_dict holds numbers only"))
        elif var.name in shadowed:
            chosen.append(shadowed[var.name])
        else:
            chosen.append(var)
    return chosen, skipped


def drop_copies(candidates: list[Variable]) -> tuple[list[Variable], list[Entry]]:
    """One tensor saved under several names (T5's shared embedding in three h5 groups, under
    ``shared/``, ``encoder/`` and ``decoder/``) is one source: variables whose names differ only in
    their first scope, of one shape and dtype, with equal values, count once (the first in sorted
    order stays; the others are skipped as copies). Equal values alone are no evidence (every fresh
    LayerNorm gamma is ones), so only such name groups are read, which costs nothing elsewhere."""
    import numpy as np

    groups: dict[tuple, list[Variable]] = {}
    for var in candidates:
        parts = var.name.split("/")
        if len(parts) > 1:
            groups.setdefault((var.shape, var.dtype.name, tuple(parts[1:])), []).append(var)
    dropped: dict[str, str] = {}
    for group in groups.values():
        if len(group) < 2 or len(group) > 8 or not group[0].nbytes:  # copies come in a few, not dozens
            continue
        group = sorted(group, key=lambda v: v.name)
        values = [v.read() for v in group]
        for i, var in enumerate(group[1:], 1):
            keeper = next((group[j] for j in range(i) if group[j].name not in dropped
                           and np.array_equal(values[j], values[i])), None)
            if keeper is not None:
                dropped[var.name] = keeper.name
    kept = [v for v in candidates if v.name not in dropped]
    skipped = [_skip(v, f"a copy of {dropped[v.name]!r} (the same values saved under another name)")
               for v in candidates if v.name in dropped]
    return kept, skipped


def copies_of(unused: list[Variable], used: list[Variable]) -> dict[str, str]:
    """Unused variables that are a used one saved twice: the same TF name, shape, dtype and values.

    A Keras 3 ``model.export()`` tracks each variable under ``variables/i`` and ``_all_variables/j``; the
    checkpoint holds both, and its signature reads one. The TF name alone is no proof (TF2 names need
    not be unique), so the values are compared too. Returns name -> the used variable's name."""
    import numpy as np

    by_tf_name: dict[tuple, list[Variable]] = {}
    for var in used:
        if var.tf_name:
            by_tf_name.setdefault((var.tf_name, var.shape, var.dtype.name), []).append(var)
    out = {}
    for var in unused:
        keepers = by_tf_name.get((var.tf_name, var.shape, var.dtype.name), []) if var.tf_name else []
        if len(keepers) > 8:  # one name on dozens of variables ("kernel"): no evidence worth the reads
            continue
        value = var.read() if keepers else None
        keeper = next((k for k in keepers if np.array_equal(k.read(), value)), None)
        if keeper is not None:
            out[var.name] = keeper.name
    return out
