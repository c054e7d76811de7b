"""Patch a user's PyTorch model so it computes what TensorFlow computed: 'SAME' padding and BN epsilon.

Which modules need it comes from ``sources``; here the rewrites are planned (static pads when the input
size is known from ``--input-shape``, else run-time padding) and the patched ``model.py`` is rendered.
"""

from __future__ import annotations

import copy
import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..map.account import Report
from ..map.match import TargetParam
from ..map.plan import onto_model
from ..map.rules import Rules
from ..map.target import build_user_model, parse_model_ref, target_params
from . import apply as apply_module
from .apply import apply_rewrites
from .same import tf_same_conv_padding, torch_pad_order
from .sources import bn_epsilons, per_dim, same_modules, window_kind


@dataclass(frozen=True)
class Rewrite:
    kind: str
    path: str
    args: Any
    why: str


def _input_sizes(model: Any, paths: list[str], input_shape: tuple[int, ...]) -> dict[str, tuple[int, ...]]:
    """Run the (dynamically rewritten) model once and record each module's input spatial size."""
    import torch

    sizes: dict[str, tuple[int, ...]] = {}
    handles = []
    for path in paths:
        module = model.get_submodule(path)
        # a rewritten pool is a SamePool (tuple kernel_size); torch's own pools may keep an int
        n = len(module.kernel_size) if isinstance(module.kernel_size, tuple) else int(window_kind(module)[-2])

        def record(_module: Any, args: tuple, p: str = path, n: int = n) -> None:  # None: args unchanged
            sizes.setdefault(p, tuple(args[0].shape[-n:]))

        handles.append(module.register_forward_pre_hook(record))
    try:
        with torch.no_grad():
            model(torch.zeros(input_shape))
    except Exception as exc:
        raise UsageError(f"--input-shape {list(input_shape)}: running the model on it failed "
                         f"({type(exc).__name__}: {exc})") from None
    finally:
        for h in handles:
            h.remove()
    return sizes


def plan_rewrites(model: Any, spec, key_of_var: dict[str, str], tf_padding: str | None,
                  input_shape: tuple[int, ...] | None, overrides: dict[str, str],
                  bn_eps: dict[str, float]) -> list[Rewrite]:
    same = same_modules(model, spec, key_of_var, tf_padding, overrides)
    dynamic = []
    for path in sorted(same):
        module = model.get_submodule(path)
        kind = window_kind(module)
        if not kind:
            raise UsageError(f"{path}: marked TF 'SAME' but it is not a conv or pool module")
        n = int(kind[-2])
        k, s = per_dim(module.kernel_size, n), per_dim(module.stride, n)
        d = per_dim(getattr(module, "dilation", 1), n)
        if kind.startswith(("AvgPool", "MaxPool")):
            mode = "avg" if kind.startswith("AvgPool") else "max"
            dynamic.append(Rewrite("pool", path, (mode, k, s, None), same[path]))
        else:
            dynamic.append(Rewrite("dynamic", path, (k, s, d), same[path]))
    rewrites = dynamic
    if input_shape is not None and dynamic:
        probe = copy.deepcopy(model)  # probe on a copy: the user's model object stays as built
        apply_rewrites(probe, [(r.kind, r.path, r.args) for r in dynamic])
        sizes = _input_sizes(probe, [r.path for r in dynamic], input_shape)
        rewrites = [_static(r, sizes.get(r.path)) for r in dynamic]
        # a port that already pads as TF does needs no rewrite (stride 1, odd kernel: k // 2 each side)
        rewrites = [r for r in rewrites if not (r.kind == "padding" and per_dim(
            model.get_submodule(r.path).padding, len(r.args)) == tuple(r.args))]
    for path, eps in sorted(bn_eps.items()):
        rewrites.append(Rewrite("eps", path, eps, f"BatchNorm epsilon {eps:g} (PyTorch default 1e-5)"))
    return rewrites



def _static(r: Rewrite, size: tuple[int, ...] | None) -> Rewrite:
    """Turn a dynamic rewrite into its static form for a known input size (or keep it dynamic)."""
    if size is None:  # the module never ran for this input: keep run-time padding
        return Rewrite(r.kind, r.path, r.args, r.why + "; not reached with --input-shape, padding at run time")
    mode = r.args[0] if r.kind == "pool" else "conv"
    kernel, stride, dilation = (r.args[1], r.args[2], (1,) * len(r.args[1])) if r.kind == "pool" else r.args
    plan = tf_same_conv_padding(size, kernel, stride, dilation)
    where = f"input {'x'.join(map(str, size))}"
    if mode == "avg":  # TF's divisor counts only real elements: SamePool, even when symmetric
        pad = plan.pad if plan.pad is not None else torch_pad_order(tuple((p, p) for p in plan.padding))
        return Rewrite("pool", r.path, ("avg", kernel, stride, pad), f"{r.why}; {where}: exact average pool, pad {pad}")
    if plan.pad is None:
        return Rewrite("padding", r.path, plan.padding, f"{r.why}; {where}: symmetric padding {plan.padding}")
    value = float("-inf") if mode == "max" else 0.0
    return Rewrite("pad", r.path, (plan.pad, value), f"{r.why}; {where}: asymmetric pad {plan.pad} (F.pad order)")


def convert_onto_model(spec, model_ref: str, *, rules: Rules, ema: bool, dtype, input_shape, tf_padding,
                       weights_name: str):
    """Map the checkpoint onto the user's model and build the patched model.py."""
    if tf_padding not in (None, "same", "none"):
        raise UsageError(f"--tf-padding {tf_padding!r}: expected 'same' or 'none'")
    ref = parse_model_ref(model_ref)
    model = build_user_model(ref)
    targets: list[TargetParam] = target_params(model)
    from ..layers.assemble import match_names

    plans, report = onto_model(spec, targets, rules=rules, ema=ema, dtype=dtype, aliases=match_names(spec))
    key_of_var = {e.source: e.key for e in report.entries if e.status == "mapped"}
    eps = bn_epsilons(model, spec, key_of_var)
    rewrites = plan_rewrites(model, spec, key_of_var, tf_padding, input_shape, rules.padding, eps)
    _report_rewrites(report, rewrites, spec, input_shape)
    missing = tuple(e.key for e in report.by_status("missing"))
    source = render_patched(ref.path, ref.attr, rewrites, weights_name, missing)
    return plans, report, source


def _report_rewrites(report: Report, rewrites: list[Rewrite], spec, input_shape) -> None:
    for r in rewrites:
        report.rewrites.append({"module": r.path, "kind": r.kind, "args": _jsonable(r.args), "what": r.why})
    if any(r.kind == "dynamic" or (r.kind == "pool" and r.args[3] is None) for r in rewrites):
        report.notes.append("some SAME padding is computed at run time (no --input-shape given, or not reached)")
    if not spec.ops and not any(r.kind != "eps" for r in rewrites):
        report.notes.append("no TF graph (.meta) and no --tf-padding: no padding rewrites were made")


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return str(value)
    return value


# What the added code needs: (name, import statement, what the name must be bound to).
_NEEDED = (
    ("json", "import json", "json"), ("struct", "import struct", "struct"),
    ("Path", "from pathlib import Path", "pathlib.Path"), ("torch", "import torch", "torch"),
    ("F", "import torch.nn.functional as F", "torch.nn.functional"), ("nn", "from torch import nn", "torch.nn"),
)


def _missing_imports(user_source: str) -> list[str]:
    """Imports the added code needs that the user's file does not already make (no re-imports, so
    the patched file lints like the user's own); each carries noqa E402: it follows the user's code."""
    import ast

    bound: dict[str, str] = {}
    for node in ast.parse(user_source).body:
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                bound[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    lines = [f"{stmt}  # noqa: E402" for name, stmt, target in _NEEDED if bound.get(name) != target]
    return [*lines, ""] if lines else []


def render_patched(path: Path, attr: str, rewrites: list[Rewrite], weights_name: str, missing: tuple[str, ...]) -> str:
    """The user's file, then the rewrites and build_model/load_model, runnable without tf2torch."""
    from ..codegen.emit import literal
    from ..codegen.model_file import footer
    from . import modules

    user = path.read_text(encoding="utf-8")
    apply_src = inspect.getsource(apply_module)
    apply_src = apply_src[apply_src.index("class TFPadBefore"):]
    table = ",\n".join(f"    ({literal(r.kind)}, {literal(r.path)}, {literal(r.args)}),  # {literal(r.why)}"
                       for r in rewrites)
    tail = [
        "",
        "",
        "# " + "-" * 96,
        "# Added by tf2torch: TensorFlow 'SAME' padding and BatchNorm epsilon, so this model computes what",
        "# the TensorFlow model computed. The state_dict keys are unchanged. Runs without tf2torch.",
        "# " + "-" * 96,
        *_missing_imports(user),
        f"_tf2torch_user_callable = {attr}  # taken before any name below can shadow it",
        "",
        "",
        modules.inline_source("SamePad", "SamePool"),
        "",
        "",
        apply_src.rstrip(),
        "",
        "",
        f"TF2TORCH_REWRITES = (\n{table}\n)" if rewrites else "TF2TORCH_REWRITES = ()",
        "",
        "",
        "def _tf2torch_model():\n    return apply_rewrites(_tf2torch_user_callable(), TF2TORCH_REWRITES)",
        "",
        "",
        footer("_tf2torch_model", weights_name, "The user's model with tf2torch's rewrites applied.", missing),
    ]
    return user.rstrip() + "\n" + "\n".join(tail) + "\n"
