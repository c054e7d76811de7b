"""Write one conversion's outputs into OUTDIR, all or nothing.

Everything goes into a staging directory next to OUTDIR (``write.atomic``) and appears under the final
name only when every file is complete: weights, ``model.py`` (when there is a model) and ``report.json``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..map.account import Report
from ..plan import TensorPlan
from .atomic import atomic_write_file, staged_output


def write_outputs(out_dir: Path, plans: list[TensorPlan], report: Report, model_source: str | None,
                  weights_format: str, taps: dict[str, str], *, force: bool = False,
                  progress: Callable[[TensorPlan, int], None] | None = None) -> list[str]:
    """Write the weights, model.py and report.json; returns the file names written."""
    weights_name = "model.safetensors" if weights_format == "safetensors" else "model.pt"
    files = [weights_name]
    report.outputs = {weights_name: "weights"}
    if model_source is not None:
        report.outputs["model.py"] = "model (build_model / load_model)"
        files.append("model.py")
    report.outputs["report.json"] = "this report"
    files.append("report.json")
    if taps:
        report.outputs["layers"] = "see 'taps' in report.json"
    metadata = {"format": "pt", "producer": "tf2torch", "source": report.source}
    expect = getattr(progress, "expect", None)  # e.g. tf2torch.progress.Progress: announce the totals
    if expect is not None:
        expect(sum(plan.nbytes for plan in plans), len(plans))
    with staged_output(out_dir, force=force) as staging:
        if weights_format == "safetensors":
            from .safetensors import write_safetensors

            write_safetensors(staging / weights_name, plans, metadata=metadata, on_tensor=progress)
        else:
            from .torch_pt import write_pt

            write_pt(staging / weights_name, plans, on_tensor=progress)
        if model_source is not None:
            (staging / "model.py").write_text(model_source, encoding="utf-8")
        data = report.to_json()
        if taps:
            data["taps"] = taps
        import json

        (staging / "report.json").write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return files


FAILED_SUFFIX = ".failed-report.json"


def failed_report_path(out_dir: Path) -> Path:
    """Where a failed conversion's report goes without --report: beside OUTDIR, never inside it (a
    failed run leaves no OUTDIR), named after it so that the next failed run replaces it."""
    return out_dir.parent / f"{out_dir.name}{FAILED_SUFFIX}"


def write_report_file(path: Path, report: Report, *, failed: bool, force: bool = False) -> None:
    """report.json alone (--report PATH, or a failed run's report), all or nothing. Our own
    ``*.failed-report.json`` is replaced; any other existing file only with ``force``."""
    import json

    data = {**report.to_json(), "failed": failed}
    replace = force or (path.name.endswith(FAILED_SUFFIX) and path.is_file())
    with atomic_write_file(path, force=replace) as staging:
        staging.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
