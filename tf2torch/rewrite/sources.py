"""Where TF 'SAME' padding and BatchNorm epsilon come from, for a user's PyTorch model.

In order: the rules file's [padding] overrides, the Keras config (``padding: "same"`` of the layer whose
kernel a module received), the TF1 graph (``.meta``: the padding of the conv/pool op that reads the
module's kernel variable), and ``--tf-padding same`` (every conv/pool whose padding is the symmetric
guess (k-1)·d // 2). Pools own no variables, so only the last two can name them.
"""

from __future__ import annotations

from typing import Any

TF_DEFAULT_BN_EPSILON = 1e-3  # tf.keras / tf.compat.v1.layers / tf.contrib batch_norm default
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


def _keras_layers(graph) -> list:
    if graph is None:
        return []
    out = []
    for layer in graph.layers:
        out += _keras_layers(layer.graph) if layer.graph is not None else [layer]
    return out


def _keras_same(graph, key_of_var: dict[str, str]) -> dict[str, str]:
    """Keras sources: conv layers with padding "same" -> the module their kernel went to."""
    found: dict[str, str] = {}
    if graph is None:
        return found
    for layer in graph.layers:
        if layer.graph is not None:
            found.update(_keras_same(layer.graph, key_of_var))
        elif layer.config.get("padding") == "same":
            keys = [key_of_var[w.name] for w in layer.weights if w.name in key_of_var]
            if keys:
                found[keys[0].rpartition(".")[0]] = f"Keras config: {layer.class_name} {layer.name!r} padding 'same'"
    return found


def same_modules(model: Any, spec, key_of_var: dict[str, str], tf_padding: str | None,
                  overrides: dict[str, str]) -> dict[str, str]:
    """module path -> why it is a port of TF SAME."""
    found: dict[str, str] = _keras_same(spec.graph, key_of_var)
    spec_ops = spec.ops
    for op in spec_ops:
        if op.padding == "SAME":
            keys = [key_of_var[v] for v in op.variables if v in key_of_var]
            if keys:  # the module whose weight is the op's kernel variable
                found[keys[0].rpartition(".")[0]] = f"TF graph: {op.op} {op.name!r} padding SAME"
    for path, module in model.named_modules():
        kind = window_kind(module)
        if not kind or path in found or isinstance(module.padding, str):
            continue
        n = int(kind[-2])
        k, d = per_dim(module.kernel_size, n), per_dim(getattr(module, "dilation", 1), n)
        guess = tuple((ki - 1) * di // 2 for ki, di in zip(k, d))
        if tf_padding == "same" and per_dim(module.padding, n) == guess and any(guess):
            found[path] = "--tf-padding same: padding is the symmetric 'same' guess"
    for path, value in overrides.items():
        if value == "same":
            found[path] = "rules file [padding]"
        else:
            found.pop(path, None)
    return found


def bn_epsilons(model: Any, spec, key_of_var: dict[str, str]) -> dict[str, float]:
    """TF's epsilon for every BatchNorm that received weights: from the graph, else TF's default."""
    from_graph: dict[str, float] = {}
    for layer in _keras_layers(spec.graph):  # Keras sources: the layer's own epsilon
        eps = layer.config.get("epsilon")
        if layer.class_name == "BatchNormalization" and isinstance(eps, (int, float)) and not isinstance(eps, bool):
            for w in layer.weights:
                if w.name in key_of_var:
                    from_graph[key_of_var[w.name].rpartition(".")[0]] = float(eps)
    for op in spec.ops:
        if op.epsilon is not None:
            for var in op.variables:
                key = key_of_var.get(var)
                if key:  # the attr is a float32: its shortest repr (0.001, not 0.0010000000474974513)
                    from_graph[key.rpartition(".")[0]] = float(f"{op.epsilon:.7g}")
    mapped_modules = {k.rpartition(".")[0] for k in key_of_var.values()}
    result = {}
    for path, module in model.named_modules():
        if any(c.__name__.startswith("_BatchNorm") or c.__name__.startswith("BatchNorm") for c in type(module).__mro__) \
                and path in mapped_modules:
            result[path] = from_graph.get(path, TF_DEFAULT_BN_EPSILON)
    return result
