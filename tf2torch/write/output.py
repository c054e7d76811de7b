"""Write one conversion's outputs into OUTDIR, all or nothing.

Everything goes into a staging directory next to OUTDIR (``write.atomic``) and appears under the final
name only when every file is complete: weights, ``model.py`` (when there is a model) and ``report.json``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..map.account import Report
from .atomic import staged_output
from .plan import TensorPlan


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
