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


# Dozens of variables under one key ("kernel" in a TF2 checkpoint, a gamma per block) are no evidence
# worth their reads: copies come in a few.
_MAX_SHARING = 8


def _evidence(var: Variable) -> list[tuple]:
    """The keys under which two variables may be one tensor saved twice, each with shape and dtype: the
    same TF name (a Keras 3 ``model.export()`` tracks each variable under ``variables/i`` and
    ``_all_variables/j``), or the same name under another first scope (T5's shared embedding in three h5
    groups, ``shared/``, ``encoder/`` and ``decoder/``)."""
    keys: list[tuple] = []
    if var.tf_name:
        keys.append(("tf", var.tf_name, var.shape, var.dtype.name))
    parts = var.name.split("/")
    if len(parts) > 1:
        keys.append(("scope", tuple(parts[1:]), var.shape, var.dtype.name))
    return keys


def _sharing(pool: Sequence[Variable]) -> dict[tuple, int]:
    counts: dict[tuple, int] = {}
    for var in pool:
        for key in _evidence(var):
            counts[key] = counts.get(key, 0) + 1
    return counts


def _index(by_key: dict[tuple, list[Variable]], var: Variable, sharing: dict[tuple, int]) -> None:
    for key in _evidence(var):
        if sharing[key] <= _MAX_SHARING:
            by_key.setdefault(key, []).append(var)


def _keeper(var: Variable, by_key: dict[tuple, list[Variable]]) -> Variable | None:
    """The indexed variable ``var`` is a copy of: a shared key and equal values (read only when paired)."""
    import numpy as np

    paired = [k for key in _evidence(var) for k in by_key.get(key, ()) if k.name != var.name]
    if not paired or not var.nbytes:  # empty tensors are all equal: no evidence
        return None
    value = var.read()
    return next((k for k in paired if np.array_equal(k.read(), value)), None)


def copies_of(unused: Sequence[Variable], keepers: Sequence[Variable]) -> dict[str, str]:
    """The one copy rule of every mode: which ``unused`` variables are one of ``keepers`` saved again,
    as name -> the keeper's name.

    A copy shares a key of ``_evidence`` with its keeper and holds equal values. Neither alone is proof:
    TF2 names need not be unique, and every fresh LayerNorm gamma is ones; so values are read only for
    variables a key already pairs, which costs nothing elsewhere."""
    sharing = _sharing((*unused, *keepers))
    by_key: dict[tuple, list[Variable]] = {}
    for var in keepers:
        _index(by_key, var, sharing)
    found = {}
    for var in unused:
        keeper = _keeper(var, by_key)
        if keeper is not None:
            found[var.name] = keeper.name
    return found


def drop_copies(candidates: list[Variable]) -> tuple[list[Variable], dict[str, str]]:
    """The candidates with each tensor once, for a matcher that must not see one tensor under two names,
    and the dropped ones (name -> the kept one). Nothing is used yet, so the first in sorted order keeps
    each tensor; the rule is ``copies_of``'s."""
    sharing = _sharing(candidates)
    by_key: dict[tuple, list[Variable]] = {}
    dropped: dict[str, str] = {}
    for var in sorted(candidates, key=lambda v: v.name):
        keeper = _keeper(var, by_key)
        if keeper is not None:
            dropped[var.name] = keeper.name
        else:
            _index(by_key, var, sharing)
    return [v for v in candidates if v.name not in dropped], dropped
