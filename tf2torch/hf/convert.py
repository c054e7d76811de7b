"""``tf2torch convert REPO -o OUT``: map a transformers repository's TF weights onto its PyTorch class.

Order matters for the all-or-nothing promise: the input is scanned and refused first, the output location
checked, then everything is planned (no tensor read), the contract checked, and only then is OUT written.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from .. import __version__, dtypes
from ..errors import MappingError, OutputError, UsageError
from ..map.account import Entry, Report
from ..map.match import TargetParam
from ..map.plan import onto_model
from ..map.target import target_params
from ..plan import TensorPlan
from ..readers.jsonsafe import load_json
from . import CONFIG, repo, target, ties, write


def convert_repo(source: str | Path, out_dir: str | Path | None, *, hf_class: str | None = None,
                 dtype: str | None = None, force: bool = False, dry_run: bool = False,
                 report_path: str | Path | None = None, max_shard_size: int | None = None,
                 progress: Callable[[TensorPlan, int], None] | None = None) -> Any:
    """Convert the repository ``source`` into ``out_dir``; returns a ``Conversion``.

    ``max_shard_size``: bytes per ``model-0000i-of-0000N.safetensors`` (default ``write.MAX_SHARD_SIZE``,
    read at call time so that tests can lower it)."""
    from ..pipelines import Conversion

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
    all_targets = target_params(model)
    targets, tied = _untie(model, all_targets)
    out_dtype = dtypes.by_name(dtype) if dtype else None

    def match(chosen: list[TargetParam]) -> tuple[list[TensorPlan], Report]:
        plans, report = onto_model(spec, chosen, dtype=out_dtype, aliases=_aliases(spec))
        _allow_ignored(model, report)
        return plans, report

    (plans, report), untied = ties.untie_output_embedding(model, all_targets, targets, tied, match(targets), match)
    targets += [t for t in all_targets if t.key in untied]
    tied = {k: v for k, v in tied.items() if k not in untied}
    report.mode = f"hugging-face {cls.__name__}"
    _tied_entries(report, tied)
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
    if untied:  # the switch transformers reads, on the config and on a composite's text decoder config
        config_out["tie_word_embeddings"] = False
        for part in ("text_config", "decoder"):
            if isinstance(config_out.get(part), dict):
                config_out[part] = {**config_out[part], "tie_word_embeddings": False}
    original = config.get("architectures") or ["(no architectures)"]
    line = (f"Converted to PyTorch ({cls.__name__}, model.safetensors) from the TensorFlow weights "
            f"({found.weights_label}, {original[0]}) by tf2torch {__version__}.")
    assert out is not None
    conversion.files = write.write_repo(out, found, plans, report, config_out, line, force=force,
                                        max_shard_size=max_shard_size or write.MAX_SHARD_SIZE, progress=progress)
    return conversion


def _read(found: repo.Repo) -> Any:
    if found.index is None:
        from ..readers.keras_h5 import read_keras_h5

        return read_keras_h5(found.weights[0])
    from .shards import read_shards

    return read_shards(found.index, found.weights)


def _aliases(spec: Any) -> dict[str, str]:
    """Names to match by: transformers' TF classes name a scope ``A___B`` where the PyTorch module is ``B``
    (``mlm___cls`` for BERT's ``cls`` head: its TF->PT loader replaces "/A___B/" by "/B/"); bounded as
    there, against pathological names."""
    return {v.name: re.sub(r"(^|/)[^/]*___([^/]*)(?=/)", r"\1\2", v.name) for v in spec.variables
            if "___" in v.name and v.name.count("___") <= 10 and len(v.name) <= 2048}


def _untie(model: Any, targets: list[TargetParam]) -> tuple[list[TargetParam], dict[str, TargetParam]]:
    """The targets to match, without the keys that are another key's tensor (tied embeddings, LM heads,
    a masked-LM decoder bias): one key per tied group is filled, the one transformers ties the others to
    (not in its ``_tied_weights_keys``), as save_pretrained writes it; from_pretrained re-ties the rest.
    Left in, two keys of one tensor would make the matcher's choice between them ambiguous."""
    tied = target.tied_targets(model)
    by_key = {t.key: t for t in targets}
    dropped: dict[str, TargetParam] = {}
    for group in target.tie_groups(model):
        keep = next((k for k in group if not target.matches_any(k, tied)), group[0])
        dropped |= {k: by_key[keep] for k in group if k != keep}
    return [t for t in targets if t.key not in dropped], dropped


def _tied_entries(report: Report, dropped: dict[str, TargetParam]) -> None:
    for key, keep in sorted(dropped.items()):
        report.add(Entry("missing", key=key, out_shape=keep.shape, reason="tied",
                         allowed=f"the same tensor as {keep.key!r}; transformers re-ties it on load"))


def _allow_ignored(model: Any, report: Report) -> None:
    """The class's own lists of keys its loader tolerates: absent ones (``_keys_to_ignore_on_load_missing``)
    and extra ones (``_keys_to_ignore_on_load_unexpected``: the pooler a TF head class builds and never
    uses, where the PyTorch class has none), matched as transformers matches them, on dotted names."""
    missing, unexpected = target.ignored_missing(model), target.ignored_unexpected(model)
    has_pooler = any("pooler" in name.split(".") for name, _ in model.named_modules())
    for i, e in enumerate(report.entries):
        if e.status == "unexpected" and not e.allowed and not has_pooler and "pooler" in e.source.split("/"):
            # transformers' TF heads build the base model's pooler and never run it, where the PyTorch
            # head builds its base with add_pooling_layer=False (MPNet's heads); its loader dropped them
            report.entries[i] = e = replace(e, allowed="a pooler the TF head builds and never runs; the "
                                                       "PyTorch class has none (not written)")
        if e.status == "missing" and not e.allowed and target.matches_any(e.key, missing):
            report.entries[i] = replace(e, allowed="transformers accepts it absent "
                                                   "(the class's _keys_to_ignore_on_load_missing)")
        dotted = e.source.removesuffix(":0").replace("/", ".")
        if e.status == "unexpected" and not e.allowed and target.matches_any(dotted, unexpected):
            report.entries[i] = replace(e, allowed="transformers drops it on load, not written "
                                                   "(the class's _keys_to_ignore_on_load_unexpected)")


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
