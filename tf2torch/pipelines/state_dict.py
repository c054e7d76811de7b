"""No architecture to follow → a bare state_dict: dotted scopes, renamed leaves, layouts by role and rank.

What a checkpoint without a graph (or a model file with ``--weights-only``) can honestly give: every
weight under a predictable key, in PyTorch's layout where its role says which, and no model.py. The names
come from ``map.names``, the layouts from ``map.plan.bare_layout``; the rules file's renames, pairs and
layouts win over both.
"""

from __future__ import annotations

from ..errors import UnsupportedError
from ..map.ledger import open_report, settle
from ..map.names import bare_key
from ..map.plan import bare_layout, mapped_entry, plan_tensor
from ..options import ConvertOptions
from ..spec import ModelSpec, Variable
from . import Outcome


def run(spec: ModelSpec, options: ConvertOptions) -> Outcome:
    """The state_dict of ``spec``'s variables; refused for a model file tf2torch would have to drop the
    model of (``spec.unconverted`` says why), unless ``--weights-only`` asks for exactly that."""
    if spec.unconverted and not options.weights_only:  # never a silent bare state_dict for a model file
        raise UnsupportedError(spec.unconverted)
    rules = options.rule_set
    report, candidates = open_report(spec, "bare", ema=options.ema, rules=rules)
    taken: dict[str, str] = {}  # key -> the variable that has it
    plans = []
    for var in candidates:
        key = rules.pairs.get(var.name) or bare_key(rules.rename(var.name), options.keep_names)
        if key in taken:
            continue  # settled below: a copy of the variable that has the key, or unexpected
        taken[key] = var.name
        layout = rules.layouts.get(key) or bare_layout(var, key, not options.transpose)
        plans.append(plan_tensor(key, var, layout, options.out_dtype))
        how = "kept name" if options.keep_names else "renamed by vocabulary"
        if not layout.is_identity:
            how += f"; layout chosen by role and rank {len(var.shape)}"
        report.add(mapped_entry(var, key, layout, how))

    def verdict(var: Variable) -> tuple[str, str]:
        key = rules.pairs.get(var.name) or bare_key(rules.rename(var.name), options.keep_names)
        return "unexpected", f"its key {key!r} is already taken by {taken[key]!r}; add a [pairs] rule"

    settle(report, candidates, set(taken.values()), verdict)
    return Outcome(plans, report)
