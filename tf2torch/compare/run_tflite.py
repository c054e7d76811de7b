"""The reference side for a ``.tflite`` model: the LiteRT interpreter, every tensor kept.

The interpreter is ``ai_edge_litert``'s when installed, else TensorFlow's ``tf.lite.Interpreter`` (the
``tf`` extra); both run TFLite's builtin kernels without delegates
(``OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES``): XNNPACK, the default delegate, rounds differently
and TF 2.21's computes a (3, 1) stride-2 SAME convolution wrongly. ``experimental_preserve_all_tensors``
keeps the intermediate tensors readable after ``invoke()``.

Layers are found as for TF graphs (``run_tf1``): the conversion report maps each weight tensor of the
file to a state_dict key, so to a module; the module's TFLite counterpart is the operator that reads
all its weights (through a float16 ``DEQUANTIZE``), its row named after the operator (``CONV_2D conv2``).
A fused activation is applied to the module's output first (tf2torch makes it a layer of its own). A
dilated conv (``tflite/atrous.py``) and constant operands (a folded batch norm's MUL / ADD) are listed,
not compared: the first is computed in the space-to-batch domain, the second is no module call.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import MissingDependencyError, UnsupportedError
from ..readers.tflite.model import LiteModel, LiteOperator, LiteSubgraph
from ..readers.tflite.reader import read_model, weight_names
from .inputs import AUTO, InputSpec
from .outdir import OutDir
from .reference import Probe, TFRun

INSTALL_HINT = "pip install ai-edge-litert (or 'tf2torch[tf]': TensorFlow's tf.lite.Interpreter)"
# TFLite's fused activations, as compare.reference.ACTIVATIONS names them (None: nothing to apply).
_OWN_ACTIVATION = frozenset({"UNIDIRECTIONAL_SEQUENCE_LSTM"})
_FUSED = {"NONE": None, "RELU": "relu", "RELU6": "relu6", "TANH": "tanh", "RELU_N1_TO_1": "hard_tanh"}


def _interpreter_class() -> tuple[Any, Any]:
    """(Interpreter, OpResolverType): LiteRT's own package first, TensorFlow's copy second."""
    try:
        from ai_edge_litert.interpreter import Interpreter, OpResolverType  # type: ignore[import-not-found]

        return Interpreter, OpResolverType
    except ImportError:
        pass
    try:
        from .reference import import_tf

        tf = import_tf()
    except MissingDependencyError:
        raise MissingDependencyError(f"verify runs .tflite models in the LiteRT interpreter, and neither "
                                     f"ai_edge_litert nor tensorflow can be imported; install one: {INSTALL_HINT}"
                                     ) from None
    return tf.lite.Interpreter, tf.lite.experimental.OpResolverType


class LiteReference:
    kind = "tflite"

    def __init__(self, path: Path, outdir: OutDir) -> None:
        self.path, self.outdir = path, outdir
        self.model: LiteModel = read_model(path)
        self.graph: LiteSubgraph = self.model.subgraphs[0]
        interpreter, resolver = _interpreter_class()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tf.lite.Interpreter's notice that LiteRT is moving out of TF
            try:
                self.interpreter = interpreter(model_path=str(path), experimental_preserve_all_tensors=True,
                                               experimental_op_resolver_type=resolver.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
            except (ValueError, RuntimeError) as exc:
                raise UnsupportedError(f"{path}: the LiteRT interpreter cannot load this model "
                                       f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})") from None
        # --dequantize of a full-integer model: real values on the PyTorch side (the report says so)
        self.real = any(note.startswith("--dequantize") for note in outdir.notes)
        self.probes, self.tensor_of = self._probes()
        self.notes = ["reference: the LiteRT interpreter's builtin kernels without delegates"]

    def input_specs(self) -> list[InputSpec]:
        iface = self.outdir.interface.get("inputs") or []
        specs = []
        for k, i in enumerate(self.graph.inputs):
            t = self.graph.tensors[i]
            info = iface[k] if k < len(iface) and isinstance(iface[k], dict) else {}
            name = str(info.get("name") or t.name)
            dtype = "float32" if self.real and _quantized(t) else t.dtype  # --dequantize: the real value
            specs.append(InputSpec(name=name, tf_shape=t.dims, layout=str(info.get("layout", AUTO)), dtype=dtype,
                                   aliases=(t.name,)))
        return specs

    # -- layers -----------------------------------------------------------------------------------

    def _probes(self) -> tuple[list[Probe], dict[str, int]]:
        """One probe per module holding weights: the operator reading all of them, in execution order."""
        graph = self.graph
        names = {name: index for index, name in weight_names(self.model, graph).items()}
        readers: dict[int, list[LiteOperator]] = {}
        for op in graph.operators:
            for i in op.inputs:
                readers.setdefault(i, []).append(op)
        by_module: dict[str, list[tuple[str, set[int]]]] = {}
        for source, key in self.outdir.key_of.items():
            module, _, leaf = key.rpartition(".")
            if source in names:
                by_module.setdefault(module, []).append((leaf, _readers_of(names[source], readers)))
        by_index = {op.index: op for op in graph.operators}
        found = []
        for module, sources in by_module.items():
            # a zero bias TF's converter shares between convs ("arith.constant") is read by several: the
            # operator is the one reading every weight of the module, else its kernel
            common = set.intersection(*(ops for _, ops in sources)) or \
                set().union(*(ops for leaf, ops in sources if leaf in ("weight", "value")))
            if not common:
                continue
            op = by_index[min(common)]
            name = f"{op.kind} {module}"
            if sources[0][0] == "value":  # a constant operand (x * c): read inline in forward(), no call to hook
                found.append((op.index, Probe(name, _out_name(graph, op), "", skip="a constant operand, read inline "
                                              "by forward() (its operator's output is the next layer's input)"), -1))
            elif _atrous_end(op.outputs[0] if op.outputs else -1, readers) is not None:
                found.append((op.index, Probe(name, _out_name(graph, op), "", skip="a dilated conv: TFLite computes "
                                              "it between SPACE_TO_BATCH_ND and BATCH_TO_SPACE_ND, the module "
                                              "before its crop"), -1))
            else:
                # (an LSTM's fused_activation_function is its cell activation, inside the module)
                # (an integer module clamps to its fused activation's range itself, and its output is integer
                # codes: Keras's relu6 on int16 codes clipped them to 0..6. Decided per operator: a float-input
                # model (16x8, or int8 with QUANTIZE / DEQUANTIZE ends) is integer inside)
                own = op.op in _OWN_ACTIVATION or (not self.real and _quantized(graph.tensors[op.outputs[0]]))
                fused = "NONE" if own else str(op.options.get("fused_activation_function", "NONE"))
                activation = _FUSED.get(fused)
                found.append((op.index, Probe(name, _out_name(graph, op), module, "cf", activation=activation or ""),
                              op.outputs[0]))
        found.sort(key=lambda item: item[0])
        return [p for _, p, _ in found], {p.name: out for _, p, out in found if out >= 0}

    # -- run --------------------------------------------------------------------------------------

    def run(self, inputs: Sequence[np.ndarray]) -> TFRun:
        interp = self.interpreter
        details = interp.get_input_details()
        try:
            for d, x in zip(details, inputs):
                if tuple(d["shape"]) != tuple(x.shape):
                    interp.resize_tensor_input(d["index"], list(x.shape))
            interp.allocate_tensors()
            for d, x, i in zip(details, inputs, self.graph.inputs):
                if self.real and _quantized(self.graph.tensors[i]):
                    x = _quantize(x, self.graph.tensors[i])
                interp.set_tensor(d["index"], np.ascontiguousarray(x, dtype=d["dtype"]))
            interp.invoke()
        except (ValueError, RuntimeError) as exc:
            raise UnsupportedError(f"{self.path}: the LiteRT interpreter failed to run the model "
                                   f"({str(exc).splitlines()[0] if str(exc) else type(exc).__name__})") from None
        outputs = [self._real(i) for i in self.graph.outputs]
        layers = {name: self._real(i) for name, i in self.tensor_of.items()}
        return TFRun(outputs=outputs, output_names=[self.graph.tensors[i].name for i in self.graph.outputs],
                     layers=layers)


    def _real(self, index: int) -> np.ndarray:
        """Tensor ``index`` after invoke(), an integer one dequantized (its real value)."""
        value = np.array(self.interpreter.get_tensor(index))
        t = self.graph.tensors[index]
        if not self.real or not _quantized(t):
            return value
        q = t.quantization
        zero = np.float64(q.zero_points[0] if q.zero_points else 0)
        return ((value.astype(np.float64) - zero) * np.float64(q.scales[0])).astype(np.float32)


def _quantized(t: Any) -> bool:
    """An integer activation with one scale (a full-integer model's input, output or layer)."""
    return t.dtype in ("int8", "uint8", "int16") and len(t.quantization.scales) == 1


def _quantize(x: np.ndarray, t: Any) -> np.ndarray:
    """LiteRT's QUANTIZE of a real value: round(x / scale) + zero point, halves away from zero, clamped."""
    q = t.quantization
    info = np.iinfo(np.dtype(t.dtype))
    v = np.asarray(x, np.float64) / np.float64(np.float32(q.scales[0]))
    rounded = np.sign(v) * np.floor(np.abs(v) + 0.5) + (q.zero_points[0] if q.zero_points else 0)
    return np.clip(rounded, info.min, info.max).astype(t.dtype)


def _readers_of(index: int, readers: dict[int, list[LiteOperator]]) -> set[int]:
    """The operators reading the weight ``index``; a float16 weight's are those reading its DEQUANTIZE, a
    sparse weight's those reading its DENSIFY."""
    out: set[int] = set()
    for op in readers.get(index) or []:
        if op.op in ("DEQUANTIZE", "DENSIFY"):
            out |= {r.index for o in op.outputs for r in readers.get(o) or []}
        else:
            out.add(op.index)
    return out


def _atrous_end(out: int, readers: dict[int, list[LiteOperator]]) -> LiteOperator | None:
    """The BATCH_TO_SPACE_ND a dilated conv's CONV_2D / DEPTHWISE_CONV_2D feeds (TF's atrous pattern)."""
    found = readers.get(out) or []
    return found[0] if len(found) == 1 and found[0].op == "BATCH_TO_SPACE_ND" and found[0].outputs else None


def _out_name(graph: LiteSubgraph, op: LiteOperator) -> str:
    return graph.tensors[op.outputs[0]].name if op.outputs else f"operator {op.index}"
