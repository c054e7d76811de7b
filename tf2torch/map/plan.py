"""From read variables to write plans: lazy tensor plans, mapping onto a user's model's keys, and the
layouts of a bare state_dict (whose orchestration is ``tf2torch.pipelines.state_dict``).

The mapping produces ``TensorPlan``s (lazy: a tensor is read and transformed only when the writer asks for it)
and a ``Report`` that accounts for every source variable and every target key.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .. import dtypes
from ..dtypes import DType
from ..errors import MappingError
from ..plan import TensorPlan
from ..spec import Format, ModelSpec, Variable
from . import layouts
from .account import Entry, Report
from .layouts import Layout
from .ledger import open_report, settle
from .match import TargetParam, layout_for, match
from .names import OUT_IN_KERNELS, split_tf
from .rules import NO_RULES, Rules
from .select import drop_copies


def plan_tensor(key: str, var: Variable, layout: Layout, dtype: DType | None = None) -> TensorPlan:
    """A lazy write plan: read ``var``, apply ``layout``, cast float tensors to ``dtype`` if given."""
    out = dtype if dtype is not None and var.dtype.is_float else var.dtype

    def produce() -> np.ndarray:
        # Without a cast the result may stay a strided view of the (memory-mapped) source: the
        # streaming writer copies it into C order one band at a time, never the whole tensor.
        return dtypes.cast(layout.apply(var.read(), view=out.name == var.dtype.name), var.dtype, out)

    try:
        shape = layout.out_shape(var.shape)
    except MappingError as exc:  # the weight's stored shape does not fit its layer (corrupt file)
        raise MappingError(f"{var.name!r} -> {key!r}: layout {layout.describe}: {exc}") from None
    return TensorPlan(key=key, dtype=out, shape=shape, produce=produce, source=var.name)


def mapped_entry(var: Variable, key: str, layout: Layout, how: str) -> Entry:
    return Entry("mapped", source=var.name, key=key, reason=how + (f"; {var.note}" if var.note else ""),
                 layout=layout.describe, shape=var.shape, out_shape=layout.out_shape(var.shape),
                 dtype=var.dtype.name)


def onto_model(spec: ModelSpec, targets: Sequence[TargetParam], *, rules: Rules = NO_RULES, ema: bool = False,
               dtype: DType | None = None, aliases: dict[str, str] | None = None) -> tuple[list[TensorPlan], Report]:
    """Map the checkpoint onto the state_dict keys of the user's model.

    ``aliases`` (source name -> name to match by) lets positional Keras 3 weights match by meaning."""
    report, candidates = open_report(spec, "model", ema=ema, rules=rules)
    seen, dropped = drop_copies(candidates)  # the matcher sees each tensor once
    # torch's BatchNorm counts batches; TF keeps no such counter, so it starts at 0 (only used when
    # momentum=None during training).
    counters = [t for t in targets if t.key.endswith(".num_batches_tracked")]
    alias = aliases or {}
    result = match(seen, [t for t in targets if t not in counters], rules,
                   name_of=lambda v: alias.get(v.name, v.name), source_order=source_order(spec))
    plans = []
    for m in result.matches:
        plans.append(plan_tensor(m.target.key, m.source, m.layout, dtype))
        report.add(mapped_entry(m.source, m.target.key, m.layout, f"matched by {m.how}"))
    for src, tgt, got in result.mismatched:
        try:
            applied = layout_for(tgt, src, rules).describe
        except Exception:  # the layout itself could not apply to this shape
            applied = "none applicable"
        report.add(Entry("mismatched", source=src.name, key=tgt.key, shape=src.shape, out_shape=got,
                         reason=f"the model expects {list(tgt.shape)}", dtype=src.dtype.name, layout=applied,
                         expected=tgt.shape, hint=mismatch_hint(src.shape, tgt.key, tgt.shape)))

    def verdict(var: Variable) -> tuple[str, str]:
        if var.name in dropped:  # its keeper nothing took: the keeper carries the complaint, once
            return "skipped", f"a copy of {dropped[var.name]!r} (the same tensor saved under another name)"
        return "unexpected", result.unmatched.get(var.name, "no state_dict key matches its name or shape")

    used = {m.source.name for m in result.matches} | {src.name for src, _, _ in result.mismatched}
    settle(report, candidates, used, verdict)
    for tgt in result.missing:
        report.add(Entry("missing", key=tgt.key, out_shape=tgt.shape, reason=f"no source variable for this {tgt.module_type or 'key'}"))
    mapped_modules = {m.target.key.rpartition(".")[0] for m in result.matches}
    gammas = _scale_free_gammas(result, candidates)
    for tgt in result.missing:
        if tgt.key in gammas:
            plans.append(_constant(tgt.key, tgt.shape, 1.0))
            report.entries.remove(next(e for e in report.entries if e.status == "missing" and e.key == tgt.key))
            report.add(Entry("filled", key=tgt.key, out_shape=tgt.shape, dtype="float32", reason=gammas[tgt.key]))
    for tgt in counters:
        module = tgt.key.rpartition(".")[0]
        if module in mapped_modules:
            plans.append(_zeros(tgt.key, tgt.shape))
            report.add(Entry("filled", key=tgt.key, out_shape=tgt.shape, dtype="int64",
                             reason="0: PyTorch's BatchNorm batch counter has no TF counterpart"))
        else:
            report.add(Entry("missing", key=tgt.key, out_shape=tgt.shape, reason="its BatchNorm has no source"))
    return plans, report


def _scale_free_gammas(result, candidates: list[Variable]) -> dict[str, str]:
    """BatchNorm weights to fill with ones: the module's mean and variance came from a TF batch norm
    scope that holds no gamma (built with scale=False, e.g. TF-slim's Inception: TF multiplies by 1)."""
    names = {v.name.split(":")[0] for v in candidates}
    found = {}
    missing = {t.key for t in result.missing}
    for m in result.matches:
        module, leaf = m.target.key.rpartition(".")[::2]
        scope, _, tf_leaf = m.source.name.split(":")[0].rpartition("/")
        if leaf == "running_var" and tf_leaf == "moving_variance" and f"{module}.weight" in missing \
                and "Norm" in m.target.module_type and f"{scope}/gamma" not in names:
            found[f"{module}.weight"] = f"1: the TF batch norm {scope!r} has no gamma (scale=False)"
    return found


def _constant(key: str, shape: tuple[int, ...], value: float) -> TensorPlan:
    float32 = dtypes.by_name("float32")
    return TensorPlan(key=key, dtype=float32, shape=shape, produce=lambda: np.full(shape, value, "<f4"), source="")


def _zeros(key: str, shape: tuple[int, ...]) -> TensorPlan:
    int64 = dtypes.by_name("int64")
    return TensorPlan(key=key, dtype=int64, shape=shape, produce=lambda: np.zeros(shape, "<i8"), source="")


def bare_layout(var: Variable, key: str, no_transpose: bool) -> Layout:
    """A layout for a variable with no target: by its role (renamed leaf) and rank."""
    if no_transpose:
        return layouts.IDENTITY
    leaf = key.rpartition(".")[2]
    if leaf == "weight" and len(var.shape) in (3, 4) and "depthwise" in split_tf(var.name)[-1].lower():
        return layouts.TABLE["depthwise1d" if len(var.shape) == 3 else "depthwise2d"]
    if leaf == "weight" and split_tf(var.name)[-1].lower() in ("embeddings", "embedding"):  # (vocab, dim) as is
        return layouts.IDENTITY
    if split_tf(var.name)[-1].lower() in OUT_IN_KERNELS:  # stored (out, in) already (Google BERT heads)
        return layouts.IDENTITY
    return layouts.get(layouts.guess_for_rank(len(var.shape), leaf))


def mismatch_hint(shape: tuple[int, ...], key: str, expected: tuple[int, ...]) -> str:
    """The likely fix for a shape mismatch: a table layout that gives the expected shape, else a pairing."""
    import math

    fitting = []
    for name, layout in layouts.TABLE.items():
        try:
            if layout.out_shape(shape) == tuple(expected):
                fitting.append(name)
        except MappingError:
            continue
    if fitting:
        return f"a [layouts] rule \"{key}\" = \"{fitting[0]}\" gives that shape"
    if math.prod(shape) == math.prod(expected):
        return ("the same number of elements in another arrangement: a [layouts] rule "
                f"(e.g. dense_after_flatten:H,W,C for \"{key}\" after a Flatten)")
    return "another variable belongs here, or the port is built with other sizes: a [pairs] rule or fix the port"


def source_order(spec: ModelSpec) -> tuple[str, ...] | None:
    """The variables' creation order, where the source records one: a TF1 graph's, or a Keras file's
    (its layers in model order, each layer's weights in build order). None otherwise."""
    if spec.variable_order:
        return spec.variable_order
    if spec.format in (Format.KERAS_H5, Format.KERAS_V3, Format.KERAS_WEIGHTS_H5):
        return tuple(v.name for v in spec.variables)
    return None
