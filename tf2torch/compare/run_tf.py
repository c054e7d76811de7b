"""The TensorFlow side for Keras files: the original model, and every compared layer's output.

Keras-3 files load with Keras 3, Keras-2 files (``keras_version`` 2.x in the file) with ``tf_keras``;
always ``compile=False`` and in safe mode: tf2torch never runs Python code stored in a model file.
(``tf_keras`` checks safe mode for legacy ``.h5`` Lambda layers only inside a ``SafeModeScope``; its
``load_model`` does not open one for ``.h5``, so we do.) Models with Lambda layers are refused before
loading: nothing tf2torch writes can stand in for them anyway.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import UnsupportedError, UsageError
from ..spec import GraphSpec
from .inputs import AUTO, InputSpec
from .outdir import OutDir
from .reference import ACTIVATIONS, Probe, TFRun, import_tf, to_numpy

# Keras layers whose PyTorch module keeps Keras's axes (features last) even for rank >= 3 tensors.
FEATURES_LAST = frozenset({
    "Dense", "EinsumDense", "Embedding", "LayerNormalization", "UnitNormalization", "LSTM", "GRU",
    "SimpleRNN", "Bidirectional", "MultiHeadAttention", "Attention", "AdditiveAttention",
})


def _lambda_layers(graph: GraphSpec) -> list[str]:
    found = []
    for layer in graph.layers:
        if layer.class_name == "Lambda":
            found.append(layer.name)
        if layer.graph is not None:
            found += _lambda_layers(layer.graph)
    return found


def load_keras(path: Path, graph: GraphSpec) -> Any:
    lambdas = _lambda_layers(graph)
    if lambdas:
        raise UnsupportedError(f"{path}: Lambda layers ({', '.join(lambdas[:5])}) hold Python code that would "
                               "have to run to load the model; tf2torch never runs code from a model file")
    import_tf()
    try:
        if graph.keras_version == 2:
            import tf_keras
            from tf_keras.src.saving.serialization_lib import SafeModeScope

            with SafeModeScope(True):
                return tf_keras.models.load_model(str(path), compile=False, safe_mode=True)
        import keras

        if not keras.__version__.startswith("3"):
            raise UsageError(f"{path} was written by Keras 3, but `keras` here is {keras.__version__}; "
                             "install Keras 3 (pip install 'tf2torch[tf]')")
        return keras.saving.load_model(str(path), compile=False, safe_mode=True)
    except ImportError as exc:
        raise UsageError(f"{path}: loading it needs {'tf_keras' if graph.keras_version == 2 else 'keras'} "
                         f"({exc}); install it with: pip install 'tf2torch[tf]'") from None
    except (ValueError, TypeError, OSError) as exc:
        raise UnsupportedError(f"{path}: Keras could not load it ({type(exc).__name__}: {exc})") from exc


class KerasReference:
    """A Keras model and a second model over the same graph that also returns the probed layers."""

    kind = "keras"

    def __init__(self, path: Path, graph: GraphSpec, outdir: OutDir) -> None:
        self.model = load_keras(path, graph)
        self.outdir = outdir
        self.graph = graph
        self.probes = self._probes()

    def input_specs(self) -> list[InputSpec]:
        iface = self.outdir.interface.get("inputs") or []
        specs = []
        for i, tensor in enumerate(self.model.inputs):
            name = str(getattr(tensor, "name", f"input_{i}")).split(":")[0]
            names = self.outdir.interface.get("keras_inputs") or []
            name = names[i] if i < len(names) else name
            info = iface[i] if i < len(iface) and isinstance(iface[i], dict) else {}
            dtype = getattr(tensor.dtype, "name", tensor.dtype)
            specs.append(InputSpec(name=name, tf_shape=tuple(tensor.shape), layout=info.get("layout", AUTO),
                                   dtype=str(dtype), aliases=(str(info["name"]),) if info.get("name") else ()))
        return specs

    def _probes(self) -> list[Probe]:
        order = [layer.name for layer in self.model.layers]
        if self.outdir.mode == "keras":
            tapped = self.outdir.layers
            pairs = [(name, tapped[name]) for name in order if name in tapped]
            for name, path in tapped.items():  # inside nested models: listed just before the nested model
                if name not in order:
                    at = next((i for i, (_, outer) in enumerate(pairs) if path.startswith(outer + ".")), len(pairs))
                    pairs.insert(at, (name, path))
        else:
            pairs = _pairs_from_entries(self.graph, self.outdir, order)
        self.tensors = _tensors_in_graph(self.model, [self.model.get_layer(n) for n, _ in pairs if n in order])
        probes = []
        for name, module in pairs:
            if name not in order:
                probes.append(Probe(name, name, module, skip="inside a nested model: compared through its outer layer"))
                continue
            layer = self.model.get_layer(name)
            # the converter recorded each layer's output layout; older reports: guess by layer class
            recorded = self.outdir.layouts.get(name)
            prefer = recorded if recorded in ("cf", "keras") else (
                "keras" if type(layer).__name__ in FEATURES_LAST else "cf")
            activation = self._fused_activation(layer)
            skip = ""
            if self.tensors.get(name) is None:
                skip = "its output is not reachable from the model's inputs in Keras"
            elif isinstance(self.tensors[name], (dict, list, tuple)):  # a nested model returning a dict (keras-hub)
                skip = "it has several outputs: compared through the layers that read them"
            elif activation and activation not in ACTIVATIONS:
                skip = f"Keras applies activation {activation!r} inside the layer; compared downstream"
            probes.append(Probe(name, name, module, prefer, skip, activation))
        return probes

    def _fused_activation(self, layer: Any) -> str:
        """The user's model: a Keras layer's own activation, which the mapped module's output lacks.

        (A generated model's tap is the module after the activation, so nothing is applied there.)
        """
        if self.outdir.mode != "model":
            return ""
        name = getattr(getattr(layer, "activation", None), "__name__", "linear")
        return "" if name == "linear" else name

    def run(self, inputs: Sequence[np.ndarray]) -> TFRun:
        probes = [p for p in self.probes if not p.skip]
        n_out = len(self.model.outputs)
        extra = [self.tensors[p.name] for p in probes]
        model = _functional(self.model, list(self.model.outputs) + extra) if extra else self.model
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # Keras's notes on input structure: the inputs are in order
            values = model(list(inputs), training=False)
        values = [to_numpy(v) for v in (values if isinstance(values, (list, tuple)) else [values])]
        names = [ref.layer for ref in self.graph.outputs]  # Keras 3 names output tensors "keras_tensor_<n>"
        return TFRun(outputs=values[:n_out], output_names=names,
                     layers={p.name: v for p, v in zip(probes, values[n_out:])})


def _tensors_in_graph(model: Any, layers: list[Any]) -> dict[str, Any]:
    """Each layer's first output *in ``model``'s graph*, or None.

    ``layer.output`` is that for a plain layer (a shared layer: its first call, as the PyTorch hook
    sees it). For a nested model it is not: Keras 3 returns the nested graph's own output, and a
    tf_keras model's node 0 is its own construction; the outer call is then another inbound node.
    Connectivity is tested by building the probing model: all at once, layer by layer if that fails.
    """
    candidates = {layer.name: _candidates(layer) for layer in layers}
    first = {name: c[0] for name, c in candidates.items() if c}
    try:
        _functional(model, list(model.outputs) + list(first.values()))
        return first
    except ValueError:
        pass
    found = {}
    for name, tensors in candidates.items():
        found[name] = next((t for t in tensors if _connected(model, t)), None)
    return found


def _candidates(layer: Any) -> list[Any]:
    out = []
    try:
        out.append(layer.output)
    except (AttributeError, ValueError, RuntimeError):  # tf_keras: "has multiple inbound nodes"
        pass
    for node in getattr(layer, "_inbound_nodes", ()):  # private in both Keras versions; read only
        out.append(getattr(node, "output_tensors", None))
    flat = [t[0] if isinstance(t, (list, tuple)) and t else t for t in out]
    unique: dict[int, Any] = {}
    for t in flat:
        if t is not None and not isinstance(t, (list, tuple)):
            unique.setdefault(id(t), t)
    return list(unique.values())


def _connected(model: Any, tensor: Any) -> bool:
    try:
        _functional(model, [tensor])
    except ValueError:
        return False
    return True


def _functional(model: Any, outputs: list[Any]) -> Any:
    """A model over ``model``'s graph returning ``outputs``, built by the Keras that loaded ``model``."""
    module = type(model).__module__
    if module.startswith("tf_keras"):
        import tf_keras

        return tf_keras.Model(model.inputs, outputs)
    import keras

    return keras.Model(model.inputs, outputs)


def _pairs_from_entries(graph: GraphSpec, outdir: OutDir, order: list[str]) -> list[tuple[str, str]]:
    """The user's model: a Keras layer pairs with the one module its weights were mapped into."""
    pairs = []
    for layer in graph.layers:
        modules = {outdir.module_of(w.name) for w in layer.weights} - {None}
        if len(modules) == 1 and layer.name in order:
            pairs.append((layer.name, modules.pop()))
    pairs.sort(key=lambda pair: order.index(pair[0]))
    return pairs
