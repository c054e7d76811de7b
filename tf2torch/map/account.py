"""Accounting: every source variable and every target key ends in exactly one sorted, readable place.

Source variables are *mapped*, *skipped* (with the reason: optimizer slot, global_step, EMA shadow not
selected, string, rules file) or *unexpected* (nothing took them). Target keys are *filled* (by a source
or by a documented default), *missing*, or *mismatched* (a source was found but its shape is wrong).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

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


@dataclass
class Report:
    source: str
    format: str
    mode: str  # "model" (user's PyTorch model), "keras" (generated model), "bare" (no target)
    entries: list[Entry] = field(default_factory=list)
    rewrites: list[dict[str, Any]] = field(default_factory=list)  # padding / epsilon rewrites
    notes: list[str] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)  # what was written, file name -> role
    interface: dict[str, Any] = field(default_factory=dict)  # model inputs/outputs: names, shapes, layouts

    def add(self, entry: Entry) -> None:
        if entry.status not in STATUSES:
            raise ValueError(entry.status)
        self.entries.append(entry)

    def by_status(self, status: str) -> list[Entry]:
        return sorted((e for e in self.entries if e.status == status), key=lambda e: (e.key or e.source, e.source))

    def counts(self) -> dict[str, int]:
        counted = Counter(e.status for e in self.entries)
        return {s: counted.get(s, 0) for s in STATUSES}

    def problems(self, strict: bool) -> list[str]:
        """One sorted, quoted line per problem class; shape mismatches always count, the rest with strict."""
        lines = []
        bad = self.by_status("mismatched")
        if bad:
            lines.append("shape mismatch: " + ", ".join(
                f"{e.source!r} -> {e.key!r} (got {list(e.shape)} -> {list(e.out_shape)})" for e in bad))
        if strict:
            for status in ("unexpected", "missing"):
                names = [repr(e.source or e.key) for e in self.by_status(status)]
                if names:
                    lines.append(f"{status}: {', '.join(names)}")
        return lines

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
                extra = "; ".join(x for x in (e.layout if e.layout != "unchanged" else "", e.reason) if x)
                lines.append(f"  {status:<10} {arrow}" + (f"  ({extra})" if extra else ""))
        for rw in self.rewrites if verbose else ():
            lines.append(f"  rewrite    {rw.get('module', '')}: {rw.get('what', '')}")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)
