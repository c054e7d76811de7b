"""A convention applied to one checkpoint and one class: the key each weight is named for, what is skipped
by rule (and why), and the layouts the class's module types do not say.

The convention names keys of the family's full model (``bert.encoder...``, ``cls.predictions.bias``). A
class holds them as they are (``BertForPreTraining``), without the base model's prefix (``BertModel``:
``encoder...``), or with it where the convention names the bare model's keys (GPT-2's ``h.0`` in
``GPT2LMHeadModel`` is ``transformer.h.0``). A weight under one of the convention's heads that the class
lacks altogether (``cls.predictions`` for ``BertModel``) is skipped by rule, with a note; any other
weight the class has no key for is left to the matcher, which reports it, and the conversion fails.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

from ...errors import MappingError
from ...map import layouts
from ...map.rules import Rules
from ...spec import Role, Variable
from . import Convention


@dataclass
class Applied:
    pairs: dict[str, str] = field(default_factory=dict)  # variable name -> the class's key it names
    aliases: dict[str, str] = field(default_factory=dict)  # variable name -> a key the class lacks
    skipped: dict[str, str] = field(default_factory=dict)  # variable name -> why (by the convention)
    layouts: dict[str, layouts.Layout] = field(default_factory=dict)  # key -> the convention's layout
    rules: Rules = field(default_factory=Rules)  # those layouts, as the matcher takes them


def apply(convention: Convention, variables: tuple[Variable, ...], keys: list[str], prefix: str,
          class_name: str, tied: Collection[str] = (), config: Any = None) -> Applied:
    """``keys``: the class's state_dict keys; ``prefix``: its ``base_model_prefix``; ``tied``: the keys
    left to transformers' re-tying (a weight named for one is a weight too many: the matcher reports it);
    ``config``: the model's config, for a convention whose names depend on it (``indexed``)."""
    have = set(keys)
    out = Applied()
    first = convention.indexed(config) if convention.indexed is not None and config is not None else ()
    for var in variables:
        if var.role is not Role.WEIGHT:  # optimizer slots, global_step: the shared selection skips them
            continue
        why = convention.skip_reason(var.name)
        if why is not None:
            out.skipped[var.name] = f"{why} (the {convention.name} convention)"
            continue
        key = _adapt(convention.key_of(var.name, first), have, prefix)
        head = None if key in have else _absent_head(convention, key, keys, prefix)
        if head is not None:
            out.skipped[var.name] = (f"{head[1]} ({head[0]!r}): {class_name} has none; skipped by the "
                                     f"{convention.name} convention (pass --hf-class with a class that has it)")
            continue
        if key in have and key not in tied:  # the exact key: paired, so no name vocabulary stands between them (TAPAS'
            out.pairs[var.name] = key  # top-level "output_weights" is that key, not a ".weight")
        else:  # no such key: the matcher reports it (or a tied group's other key takes it), never guessed
            out.aliases[var.name] = key
        layout = _layout(convention, key, var.shape)
        if layout is not None:
            out.layouts[key] = layout
    out.rules = Rules(pairs=out.pairs, layouts=out.layouts, source=f"the {convention.name} convention")
    return out


def _layout(convention: Convention, key: str, shape: tuple[int, ...]) -> layouts.Layout | None:
    """The convention's layout for ``key``, if one applies to a weight of this shape (BigBird's 3-D
    attention kernels take one, a 2-D kernel under the same name keeps the module type's)."""
    for pattern, kind in convention.layouts:
        if re.search(pattern, key):
            layout = layouts.get(kind)
            try:
                layout.out_shape(shape)
            except MappingError:
                continue
            return layout
    return None


def _adapt(key: str, have: set[str], prefix: str) -> str:
    if key in have or not prefix:
        return key
    if key.startswith(prefix + ".") and key[len(prefix) + 1:] in have:
        return key[len(prefix) + 1:]
    if f"{prefix}.{key}" in have:
        return f"{prefix}.{key}"
    return key


def _absent_head(convention: Convention, key: str, keys: list[str], prefix: str) -> tuple[str, str] | None:
    for head, what in convention.heads:
        if key == head or key.startswith(head + "."):
            forms = (head, f"{prefix}.{head}") if prefix else (head,)
            if not any(k == f or k.startswith(f + ".") for k in keys for f in forms):
                return head, what
    return None
