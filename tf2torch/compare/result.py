"""What ``verify`` found: one row per compared tensor, the verdict, the first diverging layer.

``render()`` is the terminal table; ``to_json()`` the same as data (``--json`` / ``--report FILE``).
Non-finite numbers are written as the strings ``"inf"`` / ``"nan"`` so the JSON stays standard.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

STATUSES = ("ok", "diverged", "shape", "missing", "skipped")
ORIGINAL = "original checkpoint"  # source_kind's start when the reference is transformers' loader (run_original)


@dataclass(frozen=True)
class Row:
    name: str  # Keras layer name, or the PyTorch module path (TF1 graphs), or output_<i>
    kind: str  # "layer" | "output"
    tf: str  # Keras layer / TF tensor it was read from
    torch: str  # PyTorch module path (forward hook), or output_<i>
    shape: tuple[int, ...]  # in TensorFlow's layout
    max_abs: float | None
    max_rel: float | None
    ref_max: float | None  # max |TF value|: the tolerance is atol + rtol * |b| elementwise
    status: str  # one of STATUSES
    note: str = ""
    integer: bool = False  # integers on both sides (quantized codes): compared in steps, atol only

    def tolerance(self, atol: float, rtol: float) -> float | None:
        """The largest difference any element of this tensor may have (at its largest reference value)."""
        return None if self.ref_max is None else atol + (0.0 if self.integer else rtol) * self.ref_max

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "tf": self.tf, "torch": self.torch, "shape": list(self.shape),
                "max_abs": _num(self.max_abs), "max_rel": _num(self.max_rel), "ref_max": _num(self.ref_max),
                "status": self.status, "note": self.note, "integer": self.integer}


@dataclass
class VerifyResult:
    source: str
    out_dir: str
    source_kind: str  # "keras" | "tf1-graph" | "savedmodel" | "transformers TF<Class>" (a transformers repo) | ORIGINAL...
    mode: str  # the conversion's mode (report.json): "keras" | "model" | "hugging-face <Class>"
    atol: float
    rtol: float
    inputs: list[dict[str, Any]]  # name, shape (PyTorch layout), tf_shape, origin (seed / file)
    rows: list[Row]
    ok: bool
    first_diverging: str | None
    notes: list[str] = field(default_factory=list)

    @property
    def first_row(self) -> Row | None:
        return next((r for r in self.rows if r.name == self.first_diverging), None)

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": "match" if self.ok else "mismatch",
            "ok": self.ok,
            "first_diverging": self.first_diverging,
            "source": self.source,
            "out_dir": self.out_dir,
            "source_kind": self.source_kind,
            "mode": self.mode,
            "atol": self.atol,
            "rtol": self.rtol,
            "inputs": self.inputs,
            "rows": [r.to_json() for r in self.rows],
            "counts": {s: sum(r.status == s for r in self.rows) for s in STATUSES},
            "notes": self.notes,
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2) + "\n"

    def render(self) -> str:
        """The table in network order (layers, then the final outputs) and a one-line verdict."""
        shapes = ", ".join(f"{i['name']} {tuple(i['shape'])}" for i in self.inputs)
        # a .tflite runs in the interpreter; an original checkpoint's reference is transformers' loader's PyTorch model
        runtime = ("LiteRT" if self.source_kind == "tflite" else "PyTorch" if self.source_kind.startswith(ORIGINAL)
                   else "TensorFlow")
        lines = [f"{self.source} ({runtime}, {self.source_kind}) vs {self.out_dir} (PyTorch, {self.mode}); "
                 f"inputs: {shapes}; atol={self.atol:g} rtol={self.rtol:g}"]
        header = ("layer", "shape (TF layout)", "max abs", "max rel", "status")
        table = [header] + [(r.name, _shape(r.shape), _fmt(r.max_abs), _fmt(r.max_rel), _status(r, self))
                            for r in self.rows]
        widths = [max(len(row[i]) for row in table) for i in range(len(header))]
        rule = "  " + "  ".join("-" * w for w in widths)
        for n, row in enumerate(table):
            if n == 1 or (n > 1 and self.rows[n - 1].kind != self.rows[n - 2].kind):
                lines.append(rule)  # under the header, and between the layers and the outputs
            cells = [cell.rjust(w) if i in (2, 3) else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths))]
            lines.append(("  " + "  ".join(cells)).rstrip())
        notes = [f"  {r.name}: {r.note}" for r in self.rows  # every unusual row; of the diverged, the first
                 if r.note and (r.status not in ("ok", "diverged") or r.name == self.first_diverging)]
        lines += notes + [f"  note: {n}" for n in self.notes]
        lines.append(self.summary())
        return "\n".join(lines)

    def summary(self) -> str:
        outputs = [r for r in self.rows if r.kind == "output" and r.max_abs is not None]
        worst = max((r.max_abs for r in outputs), default=None)
        if self.ok:
            text = f"MATCH: the outputs agree within atol={self.atol:g}, rtol={self.rtol:g}"
            text += f" (max abs {_fmt(worst)})" if worst is not None else ""
            late = self.first_row
            if late is not None:
                text += f"; but layer {late.name!r} differs beyond tolerance ({late.status})"
            return text
        first = self.first_row
        if first is None:
            return "MISMATCH: no final output could be compared (see the rows above)"
        where = f"{first.name!r} ({first.tf} -> {first.torch})" if first.tf != first.name else repr(first.name)
        what = f"max abs {_fmt(first.max_abs)}, {first.note}" if first.status == "diverged" else first.note
        return f"MISMATCH: first diverging layer: {where}: {what}"


def _status(row: Row, result: VerifyResult) -> str:
    return f"{row.status.upper()}  <- first diverging" if row.name == result.first_diverging and \
        row.status != "ok" else row.status


def _shape(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ")" if shape else "-"


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.2e}"


def _num(value: float | None) -> float | str | None:
    if value is None or math.isfinite(value):
        return value
    return "nan" if math.isnan(value) else "inf"
