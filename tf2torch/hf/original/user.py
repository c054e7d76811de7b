"""``tf2torch convert model.ckpt --model user.py:build``, where ``build`` returns a transformers class and the
checkpoint is an original release's (google-research BERT, OpenAI GPT-2, ...): the same conventions as
``--hf-config`` name the weights, so the user's file needs no rules file.

Applied only when the evidence is explicit on both sides: the checkpoint's names are one family's
signature (``detect``), and the model is a transformers class of that family (its ``config.model_type``).
Anything else maps as before, by the matcher's own evidence; the report's notes say which convention was
applied, if one was. As with ``--hf-config``, stacked variables are split, parts combined and what the class
computes itself filled by it; EMA shadows are not read by convention here (``--ema`` takes every shadow).
"""

from __future__ import annotations

from typing import Any

from ...map.account import Report
from ...options import ConvertOptions
from ...pipelines import Outcome
from ...pipelines import onto_model as pipeline
from ...plan import TensorPlan
from ...spec import ModelSpec
from . import combine, computed, detect, pick
from .apply import apply


def run(spec: ModelSpec, options: ConvertOptions) -> Outcome:
    """The ``onto_model`` mode, with the checkpoint's original convention naming its weights."""
    return pipeline.run(spec, options, naming=lambda model: naming(spec, model))


def naming(spec: ModelSpec, model: Any) -> pipeline.Naming | None:
    model_type = getattr(getattr(model, "config", None), "model_type", None)
    found = detect([v.name for v in spec.variables])
    if not isinstance(model_type, str) or not any(model_type in c.model_types for c in found):
        return None  # not a transformers class of the checkpoint's family: nothing to go by
    convention = pick(model_type, type(model).__name__)
    if convention is None:
        return None
    read, combined = combine.combine(combine.split(spec, convention), convention)
    keys = list(model.state_dict().keys())
    applied = apply(convention, read.variables, keys, getattr(model, "base_model_prefix", ""), type(model).__name__,
                    config=model.config)

    def settle(report: Report) -> list[TensorPlan]:
        combine.account(report, combined)  # each part of a combined tensor by its own name
        return computed.fill(convention, model, report, None) if convention.computed else []

    return pipeline.Naming(aliases=applied.aliases, pairs=applied.pairs, layouts=applied.layouts,
                           skipped=applied.skipped, variables=read.variables, settle=settle,
                           note=f"names read by the {convention.name} convention (tf2torch.hf.original), "
                                f"onto {type(model).__name__}: the checkpoint holds its names")
