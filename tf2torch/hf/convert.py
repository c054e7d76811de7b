"""``tf2torch convert REPO -o OUT``: map a transformers repository's TF weights onto its PyTorch class.

Order matters for the all-or-nothing promise: the input is scanned and refused first, the output location
checked, then everything is planned (no tensor read), the contract checked, and only then is OUT written.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from .. import __version__, dtypes
from ..errors import MappingError, OutputError, UsageError
from ..map.account import Entry, Report
from ..map.plan import onto_model
from ..map.target import target_params
from ..readers.jsonsafe import load_json
from ..write.plan import TensorPlan
from . import CONFIG, repo, target
from .write import MAX_SHARD_SIZE, write_repo


def convert_repo(source: str | Path, out_dir: str | Path | None, *, hf_class: str | None = None,
                 dtype: str | None = None, force: bool = False, dry_run: bool = False,
                 report_path: str | Path | None = None, max_shard_size: int = MAX_SHARD_SIZE,
                 progress: Callable[[TensorPlan, int], None] | None = None) -> Any:
    """Convert the repository ``source`` into ``out_dir``; returns an ``api.Conversion``."""
    from ..api import Conversion

    root = Path(source)
    if not root.is_dir() or not (root / CONFIG).is_file():
        raise UsageError(f"{source}: --hf-class needs a transformers repository directory (config.json + "
                         "tf_model.h5); pass the directory, or drop --hf-class")
    if out_dir is None and not dry_run:
        raise UsageError("convert needs an output directory (-o OUTDIR) unless --dry-run")
    out = Path(out_dir) if out_dir is not None else None
    if out is not None and not dry_run and not force and out.is_dir() and any(out.iterdir()):
        raise OutputError(f"{out}: exists and is not empty; pass --force to replace it")  # before the long work
    found = repo.scan(root)
    config = load_json((root / CONFIG).read_bytes(), str(root / CONFIG), "a transformers config")
    if not isinstance(config, dict):
        raise UsageError(f"{root / CONFIG}: expected a JSON object (a transformers config); fix or re-download it")
    transformers = target.import_transformers()
    cls = target.model_class(transformers, target.class_name(config, hf_class, root / CONFIG), root / CONFIG)
    spec = _read(found)
    model = target.build(cls, root)
    targets = target_params(model)
    out_dtype = dtypes.by_name(dtype) if dtype else None
    plans, report = onto_model(spec, targets, dtype=out_dtype)
    report.mode = f"hugging-face {cls.__name__}"
    plans = _settle_ties(model, plans, report)
    _allow_ignored(model, report)
    problems = report.problems(strict=False)
    if problems:
        where = _failed_report(report, out, report_path, force)
        hint = " (does config.json belong to these weights?)" if report.by_status("mismatched") else ""
        raise MappingError(f"{root}: {cls.__name__} from {CONFIG} does not take {found.weights_label}{hint}: "
                           + "; ".join(problems) + (f" (full report: {where})" if where else ""))
    order = {t.key: i for i, t in enumerate(targets)}  # save_pretrained writes in state_dict order
    plans.sort(key=lambda p: order.get(p.key, len(order)))
    if report_path is not None:
        from ..write.output import write_report_file

        write_report_file(Path(report_path), report, failed=False, force=force)
    conversion = Conversion(report, plans, None, None if dry_run else out)
    if dry_run:
        return conversion
    stored = _stored_dtype(plans)
    # "dtype" is what transformers >= 4.56 reads, "torch_dtype" what earlier ones read (later ones accept it)
    config_out = {**config, "architectures": [cls.__name__], "dtype": stored, "torch_dtype": stored}
    original = config.get("architectures") or ["(no architectures)"]
    line = (f"Converted to PyTorch ({cls.__name__}, model.safetensors) from the TensorFlow weights "
            f"({found.weights_label}, {original[0]}) by tf2torch {__version__}.")
    assert out is not None
    conversion.files = write_repo(out, found, plans, report, config_out, line, force=force,
                                  max_shard_size=max_shard_size, progress=progress)
    return conversion


def _read(found: repo.Repo) -> Any:
    if found.index is None:
        from ..readers.keras_h5 import read_keras_h5

        return read_keras_h5(found.weights[0])
    from .shards import read_shards

    return read_shards(found.index, found.weights)


def _settle_ties(model: Any, plans: list[TensorPlan], report: Report) -> list[TensorPlan]:
    """One key per tied group is written, the one transformers ties the others to (not in its
    ``_tied_weights_keys``): save_pretrained drops the others and from_pretrained re-ties them."""
    import numpy as np

    by_key = {p.key: p for p in plans}
    tied = target.tied_targets(model)
    for group in target.tie_groups(model):
        have = [k for k in group if k in by_key]
        if not have:
            continue  # nothing fills the group: its keys stay missing, and the contract fails
        keep = next((k for k in group if not target.matches_any(k, tied)), group[0])
        first = by_key[have[0]].produce()
        for other in have[1:]:
            if not np.array_equal(first, by_key[other].produce()):
                report.failures.append(f"{have[0]!r} and {other!r} are one tensor in {type(model).__name__} (tied), "
                                       "but the TF weights differ; set \"tie_word_embeddings\": false in config.json")
        entry = next(e for e in report.entries if e.status == "mapped" and e.key == have[0])
        report.entries.remove(entry)
        report.add(replace(entry, key=keep, reason=entry.reason + (f"; written as {keep!r}, the key its tied "
                                                                   f"group is saved under" if keep != have[0] else "")))
        plan = by_key.pop(have[0])
        by_key[keep] = replace(plan, key=keep)
        for key in group:
            if key == keep:
                continue
            for e in [e for e in report.entries if e.key == key and e.status in ("mapped", "missing")]:
                report.entries.remove(e)
                if e.status == "mapped":
                    by_key.pop(key, None)
                    report.add(Entry("skipped", source=e.source, shape=e.shape, dtype=e.dtype,
                                     reason=f"the same tensor as {keep!r} (tied), which is written"))
            report.add(Entry("missing", key=key, out_shape=by_key[keep].shape, reason="tied",
                             allowed=f"the same tensor as {keep!r}; transformers re-ties it on load"))
    return list(by_key.values())


def _allow_ignored(model: Any, report: Report) -> None:
    patterns = target.ignored_missing(model)
    for i, e in enumerate(report.entries):
        if e.status == "missing" and not e.allowed and target.matches_any(e.key, patterns):
            report.entries[i] = replace(e, allowed="transformers accepts it absent "
                                                   "(the class's _keys_to_ignore_on_load_missing)")


def _stored_dtype(plans: list[TensorPlan]) -> str:
    """The float dtype holding the most bytes (what save_pretrained records as the model's dtype)."""
    counts = Counter[str]()
    for plan in plans:
        if plan.dtype.is_float:
            counts[plan.dtype.name] += plan.nbytes
    return counts.most_common(1)[0][0] if counts else "float32"


def _failed_report(report: Report, out: Path | None, report_path: str | Path | None, force: bool) -> Path | None:
    """The failed conversion's report, beside OUT (never inside it) as the other modes do."""
    from ..write.output import failed_report_path, write_report_file

    if report_path is None and out is None:
        return None
    path = Path(report_path) if report_path is not None else failed_report_path(out)  # type: ignore[arg-type]
    try:
        write_report_file(path, report, failed=True, force=force)
    except OutputError:
        return None
    return path
