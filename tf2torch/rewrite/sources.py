"""Where TF 'SAME' padding and norm epsilons come from, for a user's PyTorch model: evidence only.

Padding, in order of precedence: the rules file's [padding], then what the source describes (the Keras
config of the layer whose kernel a module received; the TF1 graph's conv op that reads it; a pool tied
by position, ``ties.py``), and only for modules the source does not describe, ``--tf-padding same``.
Epsilon: the rules file's [epsilon], the Keras config, the graph; with none, the model keeps its own.
"""

from __future__ import annotations

from typing import Any

_WINDOW_KINDS = ("Conv1d", "Conv2d", "Conv3d", "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d", "AvgPool2d",
                 "AvgPool3d")


def per_dim(value: Any, n: int) -> tuple[int, ...]:
    """A torch module's int-or-tuple attribute (kernel_size, stride, padding) as an n-tuple."""
    return tuple(value) if isinstance(value, tuple) else (value,) * n


def window_kind(module: Any) -> str:
    for cls in type(module).__mro__:
        if cls.__module__.startswith("torch.nn.modules") and cls.__name__ in _WINDOW_KINDS:
            return cls.__name__
    return ""


def keras_layers(graph) -> list:
    """The leaf layers of a Keras graph, nested models flattened, in saved order."""
    if graph is None:
        return []
    out = []
    for layer in graph.layers:
        out += keras_layers(layer.graph) if layer.graph is not None else [layer]
    return out


def module_of(variables, key_of_var: dict[str, str]) -> str:
    """The module the first mapped of ``variables`` went to ("" if none was mapped)."""
    keys = [key_of_var[v] for v in variables if v in key_of_var]
    return keys[0].rpartition(".")[0] if keys else ""


def described_padding(spec, key_of_var: dict[str, str], ties) -> dict[str, tuple[str, str]]:
    """module path -> (TF padding "SAME"/"VALID", the evidence) for every window module the source
    describes: Keras conv/pool configs, TF graph conv ops (by the kernel they read), tied pools."""
    found: dict[str, tuple[str, str]] = {}
    for layer in keras_layers(spec.graph):
        padding = layer.config.get("padding")
        module = module_of((w.name for w in layer.weights), key_of_var)
        if module and padding in ("same", "valid"):
            found[module] = (padding.upper(), f"Keras config: {layer.class_name} {layer.name!r} padding {padding!r}")
    for op in spec.ops:
        module = module_of(op.variables, key_of_var)
        if module and op.padding in ("SAME", "VALID"):
            found[module] = (op.padding, f"TF graph: {op.op} {op.name!r} padding {op.padding}")
    for module, op in ties.pools.items():
        found[module] = (op.padding, f"{op.what} padding {op.padding}, tied by position in the forward pass")
    return found


def same_modules(model: Any, spec, key_of_var: dict[str, str], tf_padding: str | None,
                 overrides: dict[str, str], ties) -> tuple[dict[str, str], list[str]]:
    """module path -> why it is a port of TF SAME; and notes on what --tf-padding did and did not do.

    The source wins: ``--tf-padding same`` only fills conv/pool modules the source does not describe
    (TF-slim's ``conv2d_same`` pads explicitly, then runs a VALID conv: the port's symmetric padding is
    already right there), and the rules file's [padding] wins over both.
    """
    described = described_padding(spec, key_of_var, ties)
    # a 1x1 conv read by an nn.Linear (slim's logits) has no padding to carry over
    found = {m: why for m, (padding, why) in described.items()
             if padding == "SAME" and window_kind(model.get_submodule(m))}
    filled, kept = [], []
    for path, module in model.named_modules():
        kind = window_kind(module)
        if not kind or isinstance(module.padding, str) or tf_padding != "same":
            continue
        n = int(kind[-2])
        k, d = per_dim(module.kernel_size, n), per_dim(getattr(module, "dilation", 1), n)
        guess = tuple((ki - 1) * di // 2 for ki, di in zip(k, d))
        if per_dim(module.padding, n) != guess or not any(guess):
            continue
        if path in described:
            if described[path][0] == "VALID":
                kept.append(path)
        else:
            found[path] = "--tf-padding same: padding is the symmetric 'same' guess (the source does not describe it)"
            filled.append(path)
    for path, value in overrides.items():
        if value == "same":
            found[path] = "rules file [padding]"
        else:
            found.pop(path, None)
    notes = []
    if filled:
        notes.append(f"--tf-padding same applied to {len(filled)} module(s) the source does not describe: "
                     + ", ".join(filled))
    if kept:
        notes.append(f"--tf-padding same left {len(kept)} module(s) alone that the source says are VALID "
                     "(explicit pads before a VALID op, as TF-slim's conv2d_same): " + ", ".join(kept))
    return found, notes


def _is_norm(module: Any) -> bool:
    """A torch norm module with an ``eps`` (BatchNorm / InstanceNorm, LayerNorm, GroupNorm, RMSNorm)."""
    return any(cls.__module__.startswith("torch.nn.modules") and cls.__name__.startswith(
        ("_NormBase", "LayerNorm", "GroupNorm", "RMSNorm")) for cls in type(module).__mro__)


def norm_epsilons(model: Any, spec, key_of_var: dict[str, str], overrides: dict[str, float]
                  ) -> tuple[dict[str, tuple[float, str]], list[str]]:
    """Epsilon for every norm module that received weights, only from evidence: the rules file's
    [epsilon], the Keras layer's config, the graph's FusedBatchNorm ``epsilon`` attribute or the Const an
    unfused batch norm adds to its variance. Returns path -> (epsilon, evidence) where it differs from
    the module's own value, and a note per group of modules with no evidence (they keep their own)."""
    evidence: dict[str, tuple[float, str]] = {}
    for layer in keras_layers(spec.graph):
        eps = layer.config.get("epsilon")
        if layer.class_name in _KERAS_NORMS and isinstance(eps, (int, float)) and not isinstance(eps, bool):
            module = module_of((w.name for w in layer.weights), key_of_var)
            if module:
                evidence[module] = (float(eps), f"Keras config: {layer.class_name} {layer.name!r} epsilon {eps:g}")
    for op in spec.ops:
        module = module_of(op.variables, key_of_var) if op.epsilon is not None else ""
        if module:  # the attr is a float32: its shortest repr (0.001, not 0.0010000000474974513)
            eps = float(f"{op.epsilon:.7g}")
            evidence[module] = (eps, f"TF graph: {op.op} {op.name!r} epsilon {eps:g}")
    for path, eps in overrides.items():
        evidence[path] = (eps, f"rules file [epsilon] {eps:g}")
    mapped_modules = {k.rpartition(".")[0] for k in key_of_var.values()}
    result: dict[str, tuple[float, str]] = {}
    no_evidence: dict[float, list[str]] = {}
    for path, module in model.named_modules():
        if not _is_norm(module) or path not in mapped_modules:
            continue
        if path in evidence:
            if float(module.eps) != evidence[path][0]:
                result[path] = evidence[path]
        else:
            no_evidence.setdefault(float(module.eps), []).append(path)
    notes = [f"epsilon: no evidence in the source for {len(paths)} norm module(s) ({_few(paths)}); "
             f"kept the model's {eps:g} (a rules file [epsilon] section sets it)" for eps, paths in no_evidence.items()]
    return result, notes


_KERAS_NORMS = ("BatchNormalization", "LayerNormalization", "GroupNormalization", "SyncBatchNormalization")


def _few(items: list[str], n: int = 3) -> str:
    return ", ".join(items[:n]) + (f" and {len(items) - n} more" if len(items) > n else "")
