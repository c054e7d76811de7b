"""What every Hugging Face route shares once its source is read and its target class built: the weights
mapped onto the class (ties, transformers' own key lists), the contract, and OUT written as a repository.

Two routes use it: a repository's ``tf_model.h5`` (``hf.convert``) and an original TF1 checkpoint under a
naming convention (``hf.original.convert``). Only what they read, and the names they match by, differ.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..dtypes import DType
from ..errors import MappingError, OutputError
from ..map.account import Entry, Report
from ..map.match import TargetParam
from ..map.plan import onto_model
from ..map.rules import NO_RULES, Rules
from ..map.target import target_params
from ..plan import TensorPlan
from ..spec import ModelSpec
from . import target, ties, write
from .repo import Repo


def check_output(out: Path | None, *, dry_run: bool, force: bool) -> None:
    """Refuse a non-empty OUT before the long work (the writer checks again when it moves OUT into place)."""
    if out is not None and not dry_run and not force and out.is_dir() and any(out.iterdir()):
        raise OutputError(f"{out}: exists and is not empty; pass --force to replace it")


def map_onto(spec: ModelSpec, model: Any, *, dtype: DType | None, aliases: dict[str, str],
             rules: Rules = NO_RULES) -> tuple[list[TensorPlan], Report, list[str]]:
    """The zero-rules matcher from ``spec`` onto the class's state_dict, tied keys and the keys
    transformers accepts absent accounted for; plans in state_dict order (as save_pretrained writes).
    The third value: the output-embedding keys matched on their own (``ties``: OUT's config then says
    ``tie_word_embeddings: false``)."""
    all_targets = target_params(model)
    targets, tied = _untie(model, all_targets)

    def match(chosen: list[TargetParam]) -> tuple[list[TensorPlan], Report]:
        plans, report = onto_model(spec, chosen, dtype=dtype, aliases=aliases, rules=rules)
        _allow_ignored(model, report)
        return plans, report

    (plans, report), untied = ties.untie_output_embedding(model, all_targets, targets, tied, match(targets), match)
    targets += [t for t in all_targets if t.key in untied]
    tied = {k: v for k, v in tied.items() if k not in untied}
    report.mode = f"hugging-face {type(model).__name__}"
    for key, keep in sorted(tied.items()):
        report.add(Entry("missing", key=key, out_shape=keep.shape, reason="tied",
                         allowed=f"the same tensor as {keep.key!r}; transformers re-ties it on load"))
    order = {t.key: i for i, t in enumerate(targets)}
    plans.sort(key=lambda p: order.get(p.key, len(order)))
    return plans, report, untied


def enforce(report: Report, what: str, config_name: str, *, out: Path | None, report_path: str | Path | None,
            force: bool) -> None:
    """The contract: every key filled and every weight used, or MappingError (``what``: "SOURCE: CLASS from
    CONFIG does not take WEIGHTS") with the failed report beside OUT."""
    problems = report.problems(strict=False)
    if not problems:
        return
    where = _failed_report(report, out, report_path, force)
    hint = f" (does {config_name} belong to these weights?)" if report.by_status("mismatched") else ""
    raise MappingError(f"{what}{hint}: " + "; ".join(problems) + (f" (full report: {where})" if where else ""))


def emit(plans: list[TensorPlan], report: Report, found: Repo, config_out: dict[str, Any], card_line: str, *,
         out: Path | None, dry_run: bool, force: bool, report_path: str | Path | None,
         max_shard_size: int | None, progress: Callable[[TensorPlan, int], None] | None,
         title: str | None = None, untied: bool = False) -> Any:
    """OUT written as a transformers repository (or nothing, on a dry run); returns the ``Conversion``.

    ``config_out`` gains the stored dtype: "dtype" is what transformers >= 4.56 reads, "torch_dtype" what
    earlier ones read (later ones accept it); and, when the output embedding was matched on its own
    (``untied``), ``tie_word_embeddings: false``, the switch transformers reads, on the config and on a
    composite's text decoder config."""
    from ..pipelines import Conversion

    if report_path is not None:
        from ..write.output import write_report_file

        write_report_file(Path(report_path), report, failed=False, force=force)
    conversion = Conversion(report, plans, None, None if dry_run else out)
    if dry_run:
        return conversion
    stored = _stored_dtype(plans)
    assert out is not None
    if untied:
        config_out = {**config_out, "tie_word_embeddings": False}
        for part in ("text_config", "decoder"):
            if isinstance(config_out.get(part), dict):
                config_out[part] = {**config_out[part], "tie_word_embeddings": False}
    conversion.files = write.write_repo(out, found, plans, report, {**config_out, "dtype": stored,
                                                                    "torch_dtype": stored},
                                        card_line, force=force, title=title,
                                        max_shard_size=max_shard_size or write.MAX_SHARD_SIZE, progress=progress)
    return conversion


def tied_keys(model: Any) -> set[str]:
    """The keys ``map_onto`` leaves to transformers' re-tying (not matched: another key of the group is)."""
    return set(_untie(model, target_params(model))[1])


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
