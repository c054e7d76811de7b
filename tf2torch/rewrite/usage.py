"""Which missing state_dict keys are harmless, on evidence from the model itself.

A key the source does not fill keeps the model's initial value. That is harmless only when the value
cannot reach an output: its module never runs in ``forward()`` (seed 000's ``sub_block1``), the key is
the same tensor as a key that is filled (tied weights), or it is a buffer the constructor computes the
same way on every build (an index table, not a random init). Everything else is an error.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..map.account import Report


def _tied(model: Any) -> dict[str, list[str]]:
    """key -> the other state_dict keys that are the same tensor (shared parameters)."""
    by_tensor: dict[int, list[str]] = {}
    for key, tensor in model.state_dict(keep_vars=True).items():
        by_tensor.setdefault(id(tensor), []).append(key)
    return {k: [o for o in keys if o != k] for keys in by_tensor.values() if len(keys) > 1 for k in keys}


def _constructed_buffers(model: Any, rebuild: Any, keys: list[str]) -> set[str]:
    """Buffers among ``keys`` whose value is the same in a second build under another seed."""
    import torch

    if not keys or rebuild is None:
        return set()
    with torch.random.fork_rng():
        torch.manual_seed(12345)
        other = rebuild().state_dict()
    mine = model.state_dict()
    return {k for k in keys if k in other and mine[k].shape == other[k].shape and torch.equal(mine[k], other[k])}


def mark_harmless(report: Report, model: Any, trace: Any, trace_failure: str, rebuild: Any = None) -> None:
    """Set ``allowed`` on the missing entries that are harmless, and say how usage was decided."""
    missing = report.by_status("missing")
    if not missing:
        return
    tied = _tied(model)
    filled = {e.key for e in report.entries if e.status in ("mapped", "filled")}
    buffers = {k for k, _ in model.named_buffers()}
    running = [e.key for e in missing if e.key in buffers and (trace is None or _ran(trace, e.key))]
    constructed = _constructed_buffers(model, rebuild, running)
    for entry in missing:
        module = entry.key.rpartition(".")[0]
        partner = [k for k in tied.get(entry.key, []) if k in filled]
        why = ""
        if partner:
            why = f"the same tensor as {partner[0]!r}, which is filled"
        elif entry.key in constructed:
            why = "a buffer the model's constructor computes (the same value on every build)"
        elif trace is not None and not _ran(trace, entry.key):
            why = f"its module {module!r} never runs in forward() (on input {list(trace.input_shape)})"
        if why:
            report.entries[report.entries.index(entry)] = replace(entry, allowed=why)
    if trace is None:
        report.notes.append(f"the model could not be run ({trace_failure}): every missing key counts as used; "
                            "pass --input-shape to find the keys forward() never reads")


def _ran(trace: Any, key: str) -> bool:
    module = key.rpartition(".")[0]
    # a parameter of the root module, or of a module that ran (a child of a module that ran is not
    # enough: a ModuleList's unused entries are children too)
    return module == "" or trace.ran(module)
