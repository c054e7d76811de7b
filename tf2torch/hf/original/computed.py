"""Parameters a transformers class computes itself and no release stores: RoFormer's sinusoidal position
table (``RoFormerSinusoidalPositionalEmbedding``, a frozen ``nn.Parameter`` that ``_init_weights`` fills
from its shape alone). transformers 4.57's conversion script built the class on CPU (which ran that
initialisation) and then loaded the checkpoint, which never names it: the value is the class's own.

Here the model is on the meta device, so the owning module alone is copied to CPU storage and handed to
the class's own ``_init_weights``; the convention names which keys may be filled this way, so a weight
the checkpoint lacks by mistake is still reported missing, never initialised.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from ...dtypes import DType, by_name, cast
from ...map.account import Entry, Report
from ...plan import TensorPlan
from . import Convention


def fill(convention: Convention, model: Any, report: Report, dtype: DType | None) -> list[TensorPlan]:
    """Plans for the missing keys the convention says the class computes; their report entries become
    "filled", with the reason. Other missing keys are left as they are (the contract then fails)."""
    plans: list[TensorPlan] = []
    float32 = by_name("float32")  # the table as the class computes it; --dtype casts it like any weight
    out = dtype or float32
    for i, entry in enumerate(report.entries):
        why = next((w for pattern, w in convention.computed if re.search(pattern, entry.key)), None)
        if entry.status != "missing" or entry.allowed or why is None:
            continue
        value = _computed(model, entry.key)
        if tuple(value.shape) != tuple(entry.out_shape):  # the class's init disagrees with its own key
            continue
        plans.append(TensorPlan(key=entry.key, dtype=out, shape=tuple(value.shape),
                                produce=lambda v=value: cast(v, float32, out), source=""))
        report.entries[i] = Entry("filled", key=entry.key, out_shape=entry.out_shape, dtype=out.name,
                                  reason=f"{why}: computed by {type(model).__name__}._init_weights, as the "
                                         f"class does itself (the {convention.name} convention)")
    return plans


def _computed(model: Any, key: str) -> Any:
    import numpy as np
    import torch

    owner, _, leaf = key.rpartition(".")
    module = copy.deepcopy(model.get_submodule(owner)).to_empty(device="cpu")
    with torch.no_grad():
        model._init_weights(module)  # the class's own initialisation of this module, nothing else
    return np.ascontiguousarray(getattr(module, leaf).detach().to(torch.float32).numpy())
