"""Tied weights: one tensor under several state_dict keys in PyTorch, sometimes two variables in TF.

The PyTorch class is matched with one key per tied group (``onto._untie``). Some TF classes keep
the output embedding as a variable of its own instead of reading the input embedding (transformers'
TF XGLM, Speech2Text, MobileBERT's MLM decoder, BLIP's text decoder: a Dense ``lm_head`` or an
``add_weight`` decoder). Such a repo's LM head is its own tensor; tied, the PyTorch model would compute
with the input embedding's numbers instead. When that variable is all that stays unmatched, the output
embedding is matched on its own and the config written with ``tie_word_embeddings: false`` (the switch
transformers 4 and 5 both read to leave that one tie undone), so the repo computes what TF computed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..map.account import Entry, Report
from ..map.match import TargetParam
from ..plan import TensorPlan

Plan = tuple[list[TensorPlan], Report]


def output_embedding_keys(model: Any, dropped: dict[str, TargetParam]) -> list[str]:
    """The dropped tied keys of the output embedding module (``get_output_embeddings()``): its weight,
    and its bias where that is tied too (MobileBERT's decoder bias is the head's bias)."""
    heads = []
    for _, module in model.named_modules():  # a composite (BLIP) answers None; its text decoder has one
        try:
            head = module.get_output_embeddings() if hasattr(module, "get_output_embeddings") else None
        except Exception:  # some classes raise instead of returning None
            head = None
        if head is not None:
            heads.append(head)
    modules = dict(model.named_modules())
    return [key for key in dropped if any(modules.get(key.rpartition(".")[0]) is head for head in heads)]


def untie_output_embedding(model: Any, all_targets: list[TargetParam], targets: list[TargetParam],
                           dropped: dict[str, TargetParam], first: Plan,
                           match: Callable[[list[TargetParam]], Plan]) -> tuple[Plan, list[str]]:
    """``first`` (the tied matching) unless it leaves TF variables unused and matching the output
    embedding on its own uses them all; then that matching and the keys untied."""
    plans, report = first
    if not [e for e in report.by_status("unexpected") if not e.allowed]:
        return first, []
    keys = output_embedding_keys(model, dropped)
    if not keys:
        return first, []
    extra = [t for t in all_targets if t.key in keys]
    plans2, report2 = match(targets + extra)
    mapped = {e.key for e in report2.by_status("mapped")}
    left = [e for e in report2.by_status("unexpected") if not e.allowed]
    if len(left) >= len([e for e in report.by_status("unexpected") if not e.allowed]) or not mapped & set(keys):
        return first, []
    # a key of the head that TF keeps tied (the bias) matches no variable of its own: it is written as
    # the tensor it is tied to, since transformers leaves the whole head untied under that switch
    for key in sorted(set(keys) - mapped):
        keeper = next((p for p in plans2 if p.key == dropped[key].key), None)
        if keeper is None:
            return first, []
        plans2.append(replace(keeper, key=key))
        report2.entries[:] = [e for e in report2.entries if not (e.status == "missing" and e.key == key)]
        report2.add(Entry("filled", key=key, out_shape=keeper.shape, dtype=keeper.dtype.name,
                          reason=f"a copy of {keeper.key!r}, tied to it in TF; written since the head is untied"))
    report2.notes.append(f"untied {', '.join(keys)}: the TF model keeps its output embedding as a variable of "
                         "its own; config.json says tie_word_embeddings: false")
    return (plans2, report2), keys
