"""``tf2torch convert model.ckpt --hf-config config.json -o OUT``: an original TF1 checkpoint (Google's,
OpenAI's, mesh-TF's names) into a transformers repository, as ``hf.convert`` writes one from tf_model.h5.

The class is ``--hf-class``, else the config's architecture, else the family's bare model; the family's
convention (``hf.original``) names each weight's key, skips by rule what the class has no place for (a
pretraining head, ELECTRA's other model) with a note, and the shared step (``hf.onto``) maps, checks the
contract and writes. Nothing is written unless every key is filled and every weight used or skipped.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from ... import __version__, dtypes
from ...errors import FormatError, UsageError
from ...map.account import Entry
from ...map.select import EMA_SUFFIX, ema_weights
from ...plan import TensorPlan
from ...readers.checkpoint import read_checkpoint
from ...spec import Format, ModelSpec
from .. import onto, target
from ..repo import Repo
from . import Convention, combine, computed, pick
from . import config as configs
from .apply import apply


def convert_checkpoint(source: str | Path, out_dir: str | Path | None, hf_config: str | Path, *,
                       hf_class: str | None = None, dtype: str | None = None, force: bool = False,
                       dry_run: bool = False, report_path: str | Path | None = None,
                       max_shard_size: int | None = None, verify_crc: bool = True,
                       progress: Callable[[TensorPlan, int], None] | None = None) -> Any:
    """Convert the checkpoint ``source`` with the model config ``hf_config`` into ``out_dir``."""
    if out_dir is None and not dry_run:
        raise UsageError("convert needs an output directory (-o OUTDIR) unless --dry-run")
    out = Path(out_dir) if out_dir is not None else None
    onto.check_output(out, dry_run=dry_run, force=force)
    where = Path(hf_config)
    raw = configs.read(where)
    spec = read_checkpoint(source, verify_crc=verify_crc)
    if spec.format is not Format.TF1_CHECKPOINT:
        raise FormatError(f"{spec.path}: a TF2 object-graph checkpoint; --hf-config reads original TF1 "
                          "checkpoints (Saver names such as bert/encoder/layer_0/...); convert a tf_model.h5 "
                          "repository instead, or use --model FILE.py:CALLABLE")
    transformers = target.import_transformers()
    chosen = target.class_name(raw, hf_class, where) if hf_class or raw.get("architectures") else None
    cls = target.model_class(transformers, chosen, where) if chosen else None
    model_type = configs.model_type(raw, where, getattr(cls, "config_class", None) and cls.config_class.model_type,
                                    [v.name for v in spec.variables])
    convention = pick(model_type, cls.__name__ if cls else "")
    assert convention is not None  # model_type() accepts only types a convention serves
    if cls is None:
        cls = target.model_class(transformers, convention.bare, where)
        convention = pick(model_type, cls.__name__) or convention
    spec, combined = combine.combine(combine.split(spec, convention), convention)
    spec, shadows = _ema(spec, convention)
    config = configs.build(transformers, cls, convention, raw, where)
    model = target.instantiate(cls, config, where)
    keys = list(model.state_dict().keys())
    applied = apply(convention, spec.variables, keys, getattr(cls, "base_model_prefix", ""), cls.__name__,
                    onto.tied_keys(model), config)
    kept = tuple(v for v in spec.variables if v.name not in applied.skipped)
    plans, report, untied = onto.map_onto(replace(spec, variables=kept), model, aliases=applied.aliases,
                                          rules=applied.rules, dtype=dtypes.by_name(dtype) if dtype else None)
    if convention.computed:  # what the class computes itself (RoFormer's sinusoid), in state_dict order
        order = {k: i for i, k in enumerate(keys)}
        plans = sorted(plans + computed.fill(convention, model, report, dtypes.by_name(dtype) if dtype else None),
                       key=lambda p: order.get(p.key, len(order)))
    combine.account(report, combined)  # each part of a combined tensor by its own name
    for var in spec.variables:
        if var.name in applied.skipped:
            report.add(Entry("skipped", source=var.name, shape=var.shape, dtype=var.dtype.name,
                             reason=applied.skipped[var.name]))
    for i, entry in enumerate(report.entries):  # the shadows read in place of their variables
        if entry.status == "skipped" and entry.source in shadows:
            report.entries[i] = replace(entry, reason=f"EMA shadow, read in place of {shadows[entry.source]!r} "
                                                      f"(the {convention.name} convention, as transformers' loader)")
    report.notes.append(f"names read by the {convention.name} convention (tf2torch.hf.original)")
    label = Path(str(spec.path)[: -len(".index")]).name
    onto.enforce(report, f"{source}: {cls.__name__} from {where.name} does not take {label}", where.name,
                 out=out, report_path=report_path, force=force)
    config_out = {**config.to_diff_dict(), "architectures": [cls.__name__]}
    line = (f"Converted to PyTorch ({cls.__name__}, model.safetensors) from the original TF1 checkpoint "
            f"({label}, {convention.name} names) by tf2torch {__version__}.")
    found = Repo(spec.path.parent, (spec.path,), None, ())
    return onto.emit(plans, report, found, config_out, line, out=out, dry_run=dry_run, force=force,
                     report_path=report_path, max_shard_size=max_shard_size, progress=progress,
                     title=f"{cls.__name__} ({label})", untied=bool(untied))


def _ema(spec: ModelSpec, convention: Convention) -> tuple[ModelSpec, dict[str, str]]:
    """``spec`` with the weights the convention reads from their EMA shadow doing so (same name, the shadow's
    data), and shadow name -> the weight it stands for."""
    if not convention.ema:
        return spec, {}
    shadowed = {n: v for n, v in ema_weights(spec.variables).items() if re.search(convention.ema, n)}
    variables = tuple(shadowed.get(v.name, v) for v in spec.variables)
    return replace(spec, variables=variables), {n + EMA_SUFFIX: n for n in shadowed}

