"""What ``tf2torch inspect`` shows: variables (from the index only), layers, totals; and ``--check``."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import FormatError, Tf2TorchError
from .spec import ModelSpec, Variable


@dataclass
class Summary:
    source: str
    format: str
    variables: list[dict[str, Any]]
    layers: list[dict[str, Any]]
    totals: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    bad: list[dict[str, str]] = field(default_factory=list)  # --check: tensors that failed to read
    graph: dict[str, Any] = field(default_factory=dict)  # a TF graph: inputs, outputs, ops by type, unsupported

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "format": self.format, "variables": self.variables, "layers": self.layers,
                "totals": self.totals, "notes": self.notes, "bad": self.bad,
                **({"graph": self.graph} if self.graph else {})}


def _layers(spec: ModelSpec) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    if spec.graph is not None:
        def walk(graph, prefix: str) -> None:
            for layer in graph.layers:
                cfg = layer.config
                row = {"name": prefix + layer.name, "class": layer.class_name}
                for key in ("padding", "strides", "kernel_size", "pool_size", "dilation_rate", "activation"):
                    if key in cfg and isinstance(cfg[key], (str, int, list)):
                        row[key] = cfg[key]
                rows.append(row)
                if layer.graph is not None:
                    walk(layer.graph, prefix + layer.name + "/")
        walk(spec.graph, "")
    for op in spec.ops:
        row: dict[str, Any] = {"name": op.name, "class": op.op}
        if op.padding:
            row["padding"] = op.padding
        if op.strides:
            row["strides"] = list(op.strides)
        if op.ksize:
            row["ksize"] = list(op.ksize)
        if op.epsilon is not None:
            row["epsilon"] = op.epsilon
        if op.variables:
            row["variables"] = list(op.variables)
        if op.shape is not None:
            row["shape"] = ["?" if d is None else d for d in op.shape]
        if op.flatten_of:
            row["flatten_of"] = op.flatten_of  # a Dense fed by a Flatten over this op's NHWC output
        rows.append(row)
    return rows


def summarize(spec: ModelSpec) -> Summary:
    """A listing that reads the index / config only: no tensor data is touched."""
    variables = [{"name": v.name, "dtype": v.dtype.name, "shape": list(v.shape), "bytes": v.nbytes,
                  "role": v.role.value, **({"note": v.note} if v.note else {})} for v in spec.variables]
    roles = Counter(v.role.value for v in spec.variables)
    totals = {"variables": len(spec.variables), "bytes": sum(v.nbytes for v in spec.variables),
              "by_role": dict(sorted(roles.items())),
              "weight_bytes": sum(v.nbytes for v in spec.variables if v.role.value == "weight")}
    graph = {}
    if spec.tf_graph is not None and spec.format.value in ("graphdef", "savedmodel"):
        from .tfgraph.survey import survey  # (a .meta is only decoded to convert it: it may be large)

        try:
            graph = survey(spec.tf_graph())
        except Tf2TorchError as exc:  # the variables are still worth listing
            graph = {"error": str(exc)}
    if spec.tflite is not None:
        from .tflite.survey import survey as lite_survey

        graph = lite_survey(spec.tflite())
    return Summary(str(spec.path), spec.format.value, variables, _layers(spec), totals, list(spec.notes),
                   graph=graph)


def check(spec: ModelSpec, summary: Summary, on_variable: Callable[[Variable], None] | None = None) -> Summary:
    """Read every tensor (verifying CRC32C where the format has it); record each failure by name.

    ``on_variable`` is called after each variable is read (or found bad), for progress.
    """
    for var in spec.variables:
        try:
            var.read()
        except FormatError as exc:
            summary.bad.append({"name": var.name, "error": str(exc)})
        if on_variable is not None:
            on_variable(var)
    return summary


def render(summary: Summary) -> str:
    """A plain-text table: variables, then layers, then totals."""
    lines = []
    if summary.variables:
        width = min(max(len(v["name"]) for v in summary.variables), 70)
        lines.append(f"{'name':<{width}}  {'dtype':<8}  {'shape':<18}  {'bytes':>12}  role")
        for v in summary.variables:
            shape = "(" + ", ".join(map(str, v["shape"])) + ("," if len(v["shape"]) == 1 else "") + ")"
            lines.append(f"{v['name']:<{width}}  {v['dtype']:<8}  {shape:<18}  {v['bytes']:>12,}  {v['role']}")
    if summary.layers:
        lines.append("")
        lines.append("layers:")
        for layer in summary.layers:
            extra = ", ".join(f"{k}={v}" for k, v in layer.items() if k not in ("name", "class", "variables"))
            lines.append(f"  {layer['name']}  {layer['class']}" + (f"  ({extra})" if extra else ""))
    if summary.graph.get("error"):
        lines += ["", f"graph: not read ({summary.graph['error']})"]
    elif summary.graph:
        g = summary.graph
        lines.append("")
        lines.append(f"graph: {g['nodes']} nodes; inputs {', '.join(g['inputs']) or '(none found)'}; "
                     f"outputs {', '.join(g['outputs']) or '(none found)'}")
        for name, sig in g.get("signatures", {}).items():
            lines.append(f"  signature {name}: {', '.join(sig['inputs'])} -> {', '.join(sig['outputs'])}")
        lines.append("  ops: " + ", ".join(f"{op} {n}" for op, n in g["ops"].items()))
        if g.get("quantized"):
            shown = ', '.join(g['quantized'][:3]) + (', ...' if len(g['quantized']) > 3 else '')
            lines.append(f"  quantized tensors (not converted yet): {shown}")
        for op, names in g["unsupported"].items():
            lines.append(f"  unsupported: {op} ({len(names)}: {', '.join(names[:3])}{', ...' if len(names) > 3 else ''})")
    t = summary.totals
    roles = ", ".join(f"{n} {r}" for r, n in t["by_role"].items())
    lines.append("")
    lines.append(f"{summary.source} ({summary.format}): {t['variables']} variables ({roles}), "
                 f"{t['bytes']:,} bytes, {t['weight_bytes']:,} in weights")
    for note in summary.notes:
        lines.append(f"note: {note}")
    for bad in summary.bad:
        lines.append(f"BAD {bad['name']}: {bad['error']}")
    return "\n".join(lines)


def task_json(path: Path) -> dict[str, Any]:
    """A MediaPipe ``.task`` bundle: its members, and each model's summary (as ``inspect`` of a .tflite)."""
    from .readers.tflite.task import members, read_task

    listed = members(path)
    models = dict(read_task(path))
    return {"source": str(path), "format": "task",
            "members": [{"name": m.name, "bytes": m.size, "stored": m.stored, "model": m.model_name or None}
                        for m in listed],
            "models": {name: summarize(spec).to_json() for name, spec in models.items()}}


def render_task(path: Path) -> str:
    from .readers.tflite.task import members, read_task

    listed = members(path)
    models = dict(read_task(path))
    width = max(len(m.name) for m in listed)
    lines = [f"{path} (MediaPipe task bundle): {len(listed)} members, {len(models)} TFLite models",
             *(f"  {m.name:<{width}}  {m.size:>12,} bytes  {'stored' if m.stored else 'deflated':<8}  "
               f"{'model -> OUT/' + m.model_name if m.is_model else '-'}" for m in listed)]
    for name, spec in models.items():
        lines += ["", f"== {name}", render(summarize(spec))]
    return "\n".join(lines)
