"""The accounting step every mode shares: select the candidates, then settle what the mode left unused.

A mode (``tf2torch.pipelines``) opens its report with ``open_report`` (optimizer slots, bookkeeping,
EMA policy and the rules file's skips become *skipped* entries), decides which candidates it uses (a
generated model's layers, a matcher, a bare renaming), records those, and hands the rest to ``settle``:
a copy of a used tensor is *skipped* by the one copy rule (``select.copies_of``), anything else gets the
status and reason the mode gives it. So every variable ends in exactly one entry, by the same rules,
whatever the mode.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from ..spec import ModelSpec, Variable
from .account import Entry, Report
from .rules import NO_RULES, Rules
from .select import copies_of, select

# Why a candidate nobody used is in the report: (status, reason); status "skipped" or "unexpected".
Verdict = Callable[[Variable], tuple[str, str]]


def open_report(spec: ModelSpec, mode: str, *, ema: bool = False,
                rules: Rules = NO_RULES) -> tuple[Report, list[Variable]]:
    """A report for ``spec`` in ``mode`` holding the skipped variables, and the candidates to use."""
    report = Report(source=str(spec.path), format=spec.format.value, mode=mode)
    candidates, skipped = select(spec.variables, ema=ema, rules=rules)
    for entry in skipped:
        report.add(entry)
    return report, candidates


def settle(report: Report, candidates: list[Variable], used: Collection[str], verdict: Verdict) -> None:
    """An entry for every candidate not in ``used`` (by name: with --ema a used candidate is a copy of
    the variable that reads its shadow): a copy of a used one is skipped, the rest as ``verdict`` says."""
    unused = [var for var in candidates if var.name not in used]
    copies = copies_of(unused, [var for var in candidates if var.name in used])
    for var in unused:
        if var.name in copies:
            status = "skipped"
            reason = f"a copy of {copies[var.name]!r} (the same tensor saved under another name)"
        else:
            status, reason = verdict(var)
        report.add(Entry(status, source=var.name, shape=var.shape, dtype=var.dtype.name, reason=reason))


def unexpected(reason: str) -> Verdict:
    """The verdict of a mode with nothing more to say: nothing took the variable."""
    return lambda var: ("unexpected", reason)
