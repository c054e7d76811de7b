"""The weights onto the user's own PyTorch model (``--model FILE.py:CALLABLE``), patched where TF computes
otherwise ('SAME' padding, norm epsilons); model.py imports the user's file and applies the rewrites.

The matcher (``map.plan.onto_model``) pairs variables with state_dict keys; one watched forward pass
(``rewrite.trace``) ties the source's pools and Flattens to modules, which may give evidence-based
layouts (then the mapping runs again) and says which missing keys are harmless; ``rewrite.sources``
finds the evidence for each rewrite, and ``rewrite.patch`` renders the patched model.py.
"""

from __future__ import annotations

import dataclasses

from ..layers.assemble import match_names
from ..map.plan import onto_model
from ..map.target import build_user_model, parse_model_ref, target_params
from ..options import ConvertOptions
from ..rewrite.flatten import flatten_layouts
from ..rewrite.patch import render_patched, report_rewrites, untied_pools
from ..rewrite.patch_same import plan_rewrites
from ..rewrite.sources import norm_epsilons, same_modules
from ..rewrite.ties import source_ops, tie
from ..rewrite.trace import probe_shape, run_traced
from ..rewrite.usage import mark_harmless
from ..spec import ModelSpec
from . import Outcome


def run(spec: ModelSpec, options: ConvertOptions) -> Outcome:
    """Map ``spec`` onto the model ``options.model`` builds, and render the patched model.py."""
    rules, dtype = options.rule_set, options.out_dtype
    ref = parse_model_ref(options.model or "")
    model = build_user_model(ref)
    targets = target_params(model)
    # a Keras file's converters know which weight is which: matching by those names beats positional ones
    aliases = match_names(spec)
    plans, report = onto_model(spec, targets, rules=rules, ema=options.ema, dtype=dtype, aliases=aliases)
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
