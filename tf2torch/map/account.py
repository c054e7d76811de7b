"""Accounting: every source variable and every target key ends in exactly one sorted, readable place.

Source variables are *mapped*, *skipped* (with the reason: optimizer slot, global_step, EMA shadow not
selected, string, rules file) or *unexpected* (nothing took them). Target keys are *filled* (by a source
or by a documented default), *missing*, or *mismatched* (a source was found but its shape is wrong).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from ..errors import UsageError

STATUSES = ("mapped", "filled", "skipped", "unexpected", "missing", "mismatched")


@dataclass(frozen=True)
class Entry:
    status: str  # one of STATUSES
    source: str = ""  # source variable name ("" for target-only entries)
    key: str = ""  # state_dict key ("" when there is none)
    reason: str = ""  # how it was matched, or why it was skipped / is missing
    layout: str = ""  # the layout change applied (layouts.Layout.describe)
    shape: tuple[int, ...] = ()  # source shape
    out_shape: tuple[int, ...] = ()  # shape written / expected by the target
    dtype: str = ""
    # Why a missing key or an unexpected variable does not fail the conversion: its module never
    # runs in forward(), it is tied to a filled tensor, an --allow-* pattern ... ("" = it fails).
    allowed: str = ""
    expected: tuple[int, ...] = ()  # mismatched: the shape the target model expects
    hint: str = ""  # mismatched: the likely fix


@dataclass
class Report:
    source: str
    format: str
    mode: str  # "model" (user's PyTorch model), "keras" (generated model), "bare" (no target)
    entries: list[Entry] = field(default_factory=list)
    rewrites: list[dict[str, Any]] = field(default_factory=list)  # padding / epsilon rewrites
    notes: list[str] = field(default_factory=list)
    # Contract failures that belong to no single entry (a TF pool tied to no module, a Flatten whose
    # order the forward pass does not show): each fails the conversion, strict or not.
    failures: list[str] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)  # what was written, file name -> role
    interface: dict[str, Any] = field(default_factory=dict)  # model inputs/outputs: names, shapes, layouts

    def add(self, entry: Entry) -> None:
        if entry.status not in STATUSES:
            raise ValueError(entry.status)
        self.entries.append(entry)

    def allow(self, status: str, patterns: tuple[str, ...], flag: str) -> None:
        """Accept the ``status`` entries ("missing" keys, "unexpected" sources) that a regex of
        ``patterns`` finds in their key / source name (``--allow-missing`` / ``--allow-unexpected``)."""
        for pattern in patterns:
            try:
                regex = re.compile(pattern)
            except re.error as exc:
                raise UsageError(f"{flag} {pattern!r}: not a valid regex ({exc})") from None
            for i, entry in enumerate(self.entries):
                name = entry.key if status == "missing" else entry.source
                if entry.status == status and not entry.allowed and regex.search(name):
                    self.entries[i] = replace(entry, allowed=f"{flag} {pattern!r}")

    def by_status(self, status: str) -> list[Entry]:
        return sorted((e for e in self.entries if e.status == status), key=lambda e: (e.key or e.source, e.source))

    def counts(self) -> dict[str, int]:
        counted = Counter(e.status for e in self.entries)
        return {s: counted.get(s, 0) for s in STATUSES}

    def problems(self, strict: bool, shown: int = 5) -> list[str]:
        """The trust contract, one clause per problem class: shape mismatches, missing keys and
        unexpected variables fail unless ``allowed`` (``strict``: even then). At most ``shown`` names a
        class on the terminal; report.json has them all."""
        lines = []
        bad = self.by_status("mismatched")
        if bad:
            lines.append(f"{len(bad)} shape mismatch(es): " + _few([_mismatch(e) for e in bad], shown))
        for status, what, fix in _CONTRACT:
            failing = [e for e in self.by_status(status) if strict or not e.allowed]
            if failing:
                names = [f"{e.key!r} {list(e.out_shape)}" if status == "missing" else f"{e.source!r} {list(e.shape)}"
                         for e in failing]
                lines.append(f"{len(failing)} {what}: {_few(names, shown)} ({fix})")
        return lines + self.failures

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "format": self.format,
            "mode": self.mode,
            "counts": self.counts(),
            "entries": [
                {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(e).items()}
                for status in STATUSES for e in self.by_status(status)
            ],
            "rewrites": self.rewrites,
            "notes": self.notes,
            "failures": self.failures,
            "outputs": self.outputs,
            "interface": self.interface,
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2, sort_keys=False) + "\n"

    def render(self, verbose: bool = False) -> str:
        """Terminal text: the counts, then every entry that needs attention (all of them if verbose)."""
        counts = self.counts()
        lines = [f"{self.source} ({self.format}, {self.mode}): "
                 + ", ".join(f"{n} {s}" for s, n in counts.items() if n)]
        show = STATUSES if verbose else ("unexpected", "missing", "mismatched")
        for status in show:
            entries = self.by_status(status)
            if not verbose and len(entries) > 10:  # keep the terminal readable; report.json has them all
                lines.append(f"  {status:<10} {len(entries)} entries, the first 10 (all in report.json):")
                entries = entries[:10]
            for e in entries:
                arrow = f"{e.source} -> {e.key}" if e.source and e.key else (e.source or e.key)
                extra = "; ".join(x for x in (e.layout if e.layout != "unchanged" else "", e.reason,
                                              f"allowed: {e.allowed}" if e.allowed else "") if x)
                lines.append(f"  {status:<10} {arrow}" + (f"  ({extra})" if extra else ""))
        for rw in self.rewrites if verbose else ():
            lines.append(f"  rewrite    {rw.get('module', '')}: {rw.get('what', '')}")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


# The entries the contract fails on unless allowed by name: what they are, and the fix.
_CONTRACT = (
    ("missing", "state_dict key(s) with no source that the model uses",
     "map them with a rules file (--suggest-rules proposes one), or accept their initial values with "
     "--allow-missing PATTERN"),
    ("unexpected", "source variable(s) nothing took",
     "pair them with a rules file (--suggest-rules proposes one), or leave them out with a [skip] rule or "
     "--allow-unexpected PATTERN"),
)


def _few(items: list[str], shown: int) -> str:
    more = len(items) - shown
    return "; ".join(items[:shown]) + (f"; and {more} more (see report.json)" if more > 0 else "")


def _mismatch(e: Entry) -> str:
    """Source, its shape, the layout applied, what the model expects, and the likely fix."""
    return (f"{e.source!r} {list(e.shape)} -> {e.key!r}: layout {e.layout or 'unchanged'} gives "
            f"{list(e.out_shape)}, the model expects {list(e.expected)}" + (f" ({e.hint})" if e.hint else ""))
