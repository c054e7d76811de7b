"""The weights onto the user's own PyTorch model (``--model FILE.py:CALLABLE``), patched where TF computes
otherwise ('SAME' padding, norm epsilons); model.py imports the user's file and applies the rewrites.

The matcher (``map.plan.onto_model``) pairs variables with state_dict keys; one watched forward pass
(``rewrite.trace``) ties the source's pools and Flattens to modules, which may give evidence-based
layouts (then the mapping runs again) and says which missing keys are harmless; ``rewrite.sources``
finds the evidence for each rewrite, and ``rewrite.patch`` renders the patched model.py.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..layers.assemble import match_names
from ..map.account import Entry, Report
from ..map.layouts import Layout
from ..map.plan import onto_model
from ..map.target import build_user_model, parse_model_ref, target_params
from ..options import ConvertOptions
from ..plan import TensorPlan
from ..rewrite.flatten import flatten_layouts
from ..rewrite.patch import render_patched, report_rewrites, untied_pools
from ..rewrite.patch_same import plan_rewrites
from ..rewrite.sources import norm_epsilons, same_modules
from ..rewrite.ties import source_ops, tie
from ..rewrite.trace import probe_shape, run_traced
from ..rewrite.usage import mark_harmless
from ..spec import ModelSpec, Variable
from . import Outcome


@dataclass(frozen=True)
class Naming:
    """Names a caller knows for the source's variables on this model (an original TF1 checkpoint's
    convention onto a transformers class, ``hf.original.user``): taken before the matcher's own evidence."""

    aliases: dict[str, str]  # variable -> the name to match it by (the key it stands for)
    pairs: dict[str, str]  # variable -> the model's key, exactly
    layouts: dict[str, Layout]  # key -> a layout its module type does not say
    skipped: dict[str, str]  # variable -> why it is no weight of this model (by the convention's rule)
    note: str  # for the report: which convention named them
    # the source's variables as the caller reads them (stacked ones split, parts combined), None = as stored
    variables: tuple[Variable, ...] | None = None
    # after each mapping: the report's entries put in the caller's terms, and the plans it adds for keys it
    # fills itself (what the class computes); None = nothing to do
    settle: Callable[[Report], list[TensorPlan]] | None = None


def run(spec: ModelSpec, options: ConvertOptions, naming: Callable[[Any], Naming | None] | None = None) -> Outcome:
    """Map ``spec`` onto the model ``options.model`` builds, and render the patched model.py; ``naming``
    (given the built model) may name the variables first."""
    rules, dtype = options.rule_set, options.out_dtype
    ref = parse_model_ref(options.model or "")
    model = build_user_model(ref)
    targets = target_params(model)
    # a Keras file's converters know which weight is which: matching by those names beats positional ones
    aliases = match_names(spec)
    named = naming(model) if naming is not None else None
    if named is not None:  # the rules file's own pairs and layouts still win
        aliases = {**aliases, **named.aliases}
        rules = dataclasses.replace(rules, pairs={**named.pairs, **rules.pairs},
                                    layouts={**named.layouts, **rules.layouts})
        variables = spec.variables if named.variables is None else named.variables
        skipped = [v for v in variables if v.name in named.skipped]
        spec = dataclasses.replace(spec, variables=tuple(v for v in variables if v.name not in named.skipped))
    plans, report = onto_model(spec, targets, rules=rules, ema=options.ema, dtype=dtype, aliases=aliases)
    if named is not None:
        plans += _add_named(report, named, skipped)
    key_of_var = {e.source: e.key for e in report.entries if e.status == "mapped"}
    shape, shape_from = probe_shape(spec, options.input_shape)
    # on the model itself, not a copy: a deep copy of a multi-GB port would double the memory; the run is
    # eval() and no_grad, and the object only serves names and shapes afterwards (weights come from the source)
    trace = run_traced(model, shape) if shape is not None else None
    failure = shape_from if trace is None else trace if isinstance(trace, str) else ""
    trace = None if isinstance(trace, str) else trace
    ops, flattens = source_ops(spec, key_of_var)
    ties = tie(model, ops, flattens, trace)
    module_of_op = {op.name: op.module for op in ops if op.module} | {op.name: m for m, op in ties.pools.items()}
    notes: list[str] = []
    failures: list[str] = []
    if trace is not None:
        extra, notes, failures = flatten_layouts(model, ties, module_of_op, rules, shape)
        if extra:  # map again with the evidence-based layouts (the user's [layouts] still win)
            rules = dataclasses.replace(rules, layouts={**extra, **rules.layouts})
            plans, report = onto_model(spec, targets, rules=rules, ema=options.ema, dtype=dtype, aliases=aliases)
            if named is not None:
                plans += _add_named(report, named, skipped)
    else:
        failures += [f"{f.dense!r}: {f.what}, but the model could not be run to see its input ({failure}); "
                     f"pass --input-shape or add a [layouts] rule \"{f.dense_key}\" = \"dense_after_flatten:H,W,C\""
                     for f in ties.flattens if f.dense_key not in rules.layouts]
    failures += untied_pools(model, ties, rules.padding, failure)
    report.failures += failures
    mark_harmless(report, model, trace, failure, rebuild=lambda: build_user_model(ref))
    same, padding_notes = same_modules(model, spec, key_of_var, options.tf_padding, rules.padding, ties)
    eps, eps_notes = norm_epsilons(model, spec, key_of_var, rules.epsilon)
    rewrites = plan_rewrites(model, same, options.input_shape, eps)
    report.notes += notes + padding_notes + eps_notes
    report_rewrites(report, rewrites, spec, options.tf_padding)
    missing = tuple(e.key for e in report.by_status("missing"))
    source = render_patched(ref.path, ref.attr, rewrites, options.weights_name, missing)
    return Outcome(plans, report, source)


def _add_named(report: Report, named: Naming, skipped: list[Variable]) -> list[TensorPlan]:
    """The caller's entries (skipped by its rule, its own accounting) and the plans it adds."""
    extra = named.settle(report) if named.settle is not None else []
    for var in skipped:
        report.add(Entry("skipped", source=var.name, shape=var.shape, dtype=var.dtype.name,
                         reason=named.skipped[var.name]))
    report.notes.append(named.note)
    return extra
