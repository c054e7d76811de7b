"""A ``SamePlan`` (``same.py``) spelled as torch modules, by class name (no torch import here).

Generated code (``layers/padding.py``) turns these specs into module constructors in the model file;
patched user models (``runtime/apply.py``) build them with ``build_module``. Both take the same spec
for the same plan, so a Keras model and a user's port of it get the same modules:

===========  ===============================  =====================================  ======================
plan.form    conv                             max pool                               avg pool
===========  ===============================  =====================================  ======================
folded       the op's ``padding=p``           ``MaxPoolNd(padding=p)`` (torch pads   ``AvgPoolNd(padding=p,
                                              a max pool with -inf itself)           count_include_pad=False)``
pad          ``ZeroPadNd(pad)`` before it     ``ConstantPadNd(pad, -inf)``, then     ``SamePool("avg",
                                              ``MaxPoolNd``                          pad=pad)``
dynamic      ``SamePad`` before it            ``SamePool("max")``                    ``SamePool("avg")``
===========  ===============================  =====================================  ======================

Why the avg pool's "pad" row is not ``ZeroPadNd`` + ``AvgPoolNd``: the explicit zeros would be counted
in the divisor; ``SamePool`` divides by the count of real elements (see ``SamePlan.exclude_pad``).
"""

from __future__ import annotations

from typing import Any

from .same import SamePlan

#: (class name: ``nn.X`` for torch's own, else a helper of ``rewrite.modules``; args; kwargs pairs)
ModuleSpec = tuple[str, tuple[Any, ...], tuple[tuple[str, Any], ...]]


def conv_pad_spec(plan: SamePlan, kernel: tuple[int, ...], stride: tuple[int, ...],
                  dilation: tuple[int, ...]) -> ModuleSpec | None:
    """The module to run before a conv built with ``padding=plan.padding``; ``None``: nothing to run."""
    if plan.kind != "conv":
        raise ValueError(f"conv_pad_spec needs a conv plan, found a {plan.kind!r} pool plan")
    if plan.form == "dynamic":
        return "SamePad", (kernel, stride, dilation), ()
    if plan.form == "pad":
        return f"nn.ZeroPad{len(kernel)}d", (plan.pad,), ()
    return None


def pool_specs(plan: SamePlan, kernel: tuple[int, ...], stride: tuple[int, ...]) -> tuple[ModuleSpec, ...]:
    """The complete TF 'SAME' pool: one module, or a pad and the pool (run in that order)."""
    if plan.kind not in ("max", "avg"):
        raise ValueError(f"pool_specs needs a pool plan, found a {plan.kind!r} plan")
    n = len(kernel)
    torch_cls = f"nn.MaxPool{n}d" if plan.kind == "max" else f"nn.AvgPool{n}d"
    if plan.form == "dynamic":
        return (("SamePool", (kernel, stride, plan.kind), ()),)
    if plan.form == "folded":
        if not any(plan.padding):  # no padding: nothing to count or fill
            return ((torch_cls, (kernel, stride), ()),)
        # torch's own padding of a max pool is -inf (as TF's); an avg pool's divisor must exclude it
        divisor = (("count_include_pad", False),) if plan.exclude_pad else ()
        return ((torch_cls, (kernel, stride), (("padding", plan.padding), *divisor)),)
    if plan.exclude_pad:  # asymmetric average: SamePool counts only the real elements of each window
        return (("SamePool", (kernel, stride, "avg"), (("pad", plan.pad),)),)
    return (f"nn.ConstantPad{n}d", (plan.pad, plan.pad_value), ()), (torch_cls, (kernel, stride), ())
