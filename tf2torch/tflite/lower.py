"""Lower a TFLite model (subgraph 0: the one its signature runs) to the Keras-like ``GraphSpec`` a TF graph
is lowered to, so the generated model, SAME padding, the contract and ``fuse()`` are the same.

The walk: refuse quantized models and unsupported operators first (every one named, in one line), then
the operators in their stored order (TFLite stores them in execution order), one converter each
(``tflite/ops_*.py``). A converter's output shapes are checked against the shapes TFLite declares for
its outputs: a disagreement is a lowering error caught here, not a wrong model later.
"""

from __future__ import annotations

import dataclasses
import types
from collections.abc import Sequence

from ..dtypes import BY_NAME
from ..errors import MappingError, UnsupportedError
from ..readers.tflite.model import LiteModel, LiteOperator, LiteSubgraph, LiteTensor
from ..readers.tflite.reader import weight_names
from ..spec import GraphNode, ModelSpec, Variable
from ..tfgraph import lower as _tf_lower  # noqa: F401  (registers the TF-op converters the operators use)
from ..tfgraph.base import Const, Missing, Tensor, Value
from ..tfgraph.builder import Builder
from . import (  # noqa: F401,E501  (registration)
    ops_array,
    ops_custom,
    ops_int,
    ops_int16,
    ops_int16_act,
    ops_int_act,
    ops_int_lstm,
    ops_int_math,
    ops_int_prod,
    ops_int_spatial,
    ops_math,
    ops_nn,
    ops_rnn,
    ops_uint8,
    ops_uint8_act,
    ops_uint8_float,
    ops_uint8_model,
    ops_uint8_more,
    ops_uint8_tconv,
    quant,
)
from .atrous import fold_atrous
from .base import LiteCtx, lookup_int, lookup_lite, supported, supported_int
from .densify import fold_densify

_ERRORS = (TypeError, ValueError, AttributeError, IndexError, KeyError, ZeroDivisionError, OverflowError)


def readable(name: str) -> str:
    """A tensor name as a layer name: TFLite joins the names of the ops it fused with ';' (the first
    is the outermost), and keeps TF's ':0' output suffix on inputs and outputs."""
    first = name.split(";", 1)[0]
    return first[:-2] if first.endswith(":0") else first


def unsupported_ops(graph: LiteSubgraph, operators: Sequence[LiteOperator]) -> dict[str, list[str]]:
    """Operator kind -> names of the operators of that kind nothing converts (inspect lists them too)."""
    missing: dict[str, list[str]] = {}
    for op in operators:
        if lookup_lite(op.kind) is None:  # a custom operator's converter is registered as CUSTOM(name)
            name = readable(graph.tensors[op.outputs[0]].name) if op.outputs else f"operator {op.index}"
            missing.setdefault(op.kind, []).append(name)
    return missing


def _check_supported(model: LiteModel, graph: LiteSubgraph, operators: Sequence[LiteOperator]) -> None:
    missing = unsupported_ops(graph, operators)
    if missing:
        shown = "; ".join(f"{kind} ({len(names)}: {', '.join(names[:2])}{', ...' if len(names) > 2 else ''})"
                          for kind, names in sorted(missing.items())[:8])
        raise UnsupportedError(f"{model.where}: the model uses {len(missing)} TFLite operator type(s) tf2torch does "
                               f"not convert: {shown}; `tf2torch layers --tflite-ops` lists the supported ones")


def _integer_tensors(model: LiteModel, graph: LiteSubgraph, op: LiteOperator) -> list[LiteTensor]:
    """The integer activations (int8, int16, uint8) an operator reads or writes (none: float or shape
    arithmetic, converted as usual)."""
    return [t for i in (*op.inputs, *op.outputs) if i >= 0 for t in (graph.tensors[i],)
            if t.dtype in quant.ACTIVATION_INTS and not model.has_data(t)]


def integer_kind(tensors: Sequence[LiteTensor]) -> str:
    """Which integer converters an operator takes: int16 when it touches an int16 activation (16x8 models,
    their int16 -> int8 QUANTIZE too), uint8 when it touches a uint8 one, else int8."""
    kinds = {t.dtype for t in tensors}
    return next((k for k in ("int16", "uint8") if k in kinds), "int8")


def _check_integer(model: LiteModel, graph: LiteSubgraph, operators: Sequence[LiteOperator]) -> None:
    """A full-integer model: every operator on integer activations has an integer converter of its kind, or
    only moves values between tensors of one (scale, zero point); the others are refused, every one at once."""
    missing: dict[str, list[str]] = {}
    for op in operators:
        tensors = _integer_tensors(model, graph, op)
        kind = integer_kind(tensors)
        if not tensors or lookup_int(op.kind, kind) is not None:
            continue
        params = {(t.dtype, t.quantization.scales, t.quantization.zero_points) for t in tensors}
        if op.kind in ops_int.MOVES and len(params) <= 1 and op.options.get("fused_activation_function",
                                                                            "NONE") == "NONE":
            continue
        why = " (no integer kernel emulated)" if op.kind not in ops_int.MOVES else " (int8 tensors of different scales)"
        if kind != "int8":
            why = why.replace("integer", f"{kind} integer").replace("int8 tensors", f"{kind} tensors")
        name = readable(graph.tensors[op.outputs[0]].name) if op.outputs else f"operator {op.index}"
        missing.setdefault(op.kind + why, []).append(name)
    if missing:
        kinds = "/".join(sorted({integer_kind(_integer_tensors(model, graph, op)) for op in operators
                                 if _integer_tensors(model, graph, op)}))
        shown = "; ".join(f"{kind}: {len(names)} ({', '.join(names[:2])}{', ...' if len(names) > 2 else ''})"
                          for kind, names in sorted(missing.items())[:8])
        raise UnsupportedError(f"{model.where}: a full-integer {kinds} model with {len(missing)} operator kind(s) "
                               f"whose integer form is not emulated: {shown}; {quant.HINT}")


def lower(spec: ModelSpec, input_shape: tuple[int | None, ...] | None = None, dequantize: bool = False) -> ModelSpec:
    """``spec`` with ``graph`` set to its TFLite model lowered to layers; ``input_shape`` (TF's layout,
    batch first) replaces its one input's shape (a model converted with an open size); ``dequantize``:
    a quantized model's float form (``tflite/quant.py``)."""
    if spec.tflite is None:
        raise UnsupportedError(f"{spec.path}: holds no TFLite model")
    model: LiteModel = spec.tflite()
    graph = fold_densify(model, model.subgraphs[0])  # sparse constants are read dense: DENSIFY only moves them
    operators = fold_atrous(model, graph)  # dilated convs, as TF's converter takes them apart
    _check_supported(model, graph, operators)
    integer = quant.check(model, graph, operators, dequantize)
    if integer:
        _check_integer(model, graph, operators)
    names = weight_names(model, graph)
    stored = {v.name: v for v in spec.variables}
    keys = _signature_keys(model)
    builder = Builder(_consumers(graph, operators, keys[1]), input_shape)
    values: dict[int, Value] = {}
    for i in graph.inputs:
        t = graph.tensors[i]
        name = keys[0].get(i) or readable(t.name)
        # --dequantize: an integer input takes the real value its quantization stands for (float32)
        real = dequantize and t.dtype in quant.ACTIVATION_INTS and t.quantization.quantized
        dtype = types.SimpleNamespace(enum=BY_NAME[t.dtype].tf_enum if t.dtype in BY_NAME and not real else 1)
        values[i] = builder.input(GraphNode(name, "Placeholder", (), {"shape": list(t.dims), "dtype": dtype}))
    for t in graph.tensors:
        if t.index not in values and model.has_data(t):
            var = stored.get(names.get(t.index, ""))
            if var is not None and dequantize and quant.is_quantized_constant(model, t):
                var = quant.dequantized(model.where, t, var)  # same name: the report accounts for the file's tensor
            values[t.index] = Const(var, weight=True) if var is not None else Const(_constant(model, t))
    taken: set[str] = set()
    for op in operators:
        ctx = LiteCtx(op, graph.tensors, [values.get(i, Missing(f"tensor {i} is computed by no earlier operator"))
                                          if i >= 0 else Missing("an omitted optional input") for i in op.inputs],
                      builder, _node_name(graph, op, taken, keys[1]), dequantize=dequantize)
        tensors = _integer_tensors(model, graph, op) if integer else []
        outs = _run(ctx, integer_kind(tensors) if tensors else "")
        for k, i in enumerate(op.outputs):
            if k < len(outs):
                # (with --input-shape too: the sizes a TFLite input leaves open are None here; the fixed
                # ones Builder.input holds the new shape to)
                _check_shape(ctx, k, outs[k])
                values[i] = outs[k]
    out_refs = []
    for i in graph.outputs:
        value = values.get(i)
        if not isinstance(value, Tensor):
            raise UnsupportedError(f"{model.where}: output {graph.tensors[i].name!r} is not computed from the inputs")
        out_refs.append(value.ref)
    builder.simplify(tuple(out_refs))
    output_names = tuple(keys[1].get(i, "") for i in graph.outputs)
    frozen = builder.freeze(_model_name(spec), tuple(out_refs), tuple(graph.tensors[i].name for i in graph.outputs),
                            output_names if all(output_names) else (), class_name="TFLite")
    notes = quant.interface_notes(graph, {**keys[0], **keys[1]}, dequantize)
    if dequantize:
        notes += ("--dequantize: quantized weights dequantized to float32, QUANTIZE / DEQUANTIZE of activations "
                  "dropped, float compute; `tf2torch verify` measures the distance from LiteRT's integer "
                  "inference",)
    return dataclasses.replace(spec, graph=frozen, notes=spec.notes + notes)


def supported_ops() -> list[str]:
    """Every TFLite builtin operator a converted model may hold."""
    return supported()


def supported_int_ops(kind: str = "int8") -> list[str]:
    """Every operator that may read or write ``kind`` (int8, int16, uint8) activations: an integer kernel
    emulated, or one that only moves values (between tensors of one scale and zero point)."""
    return sorted(set(supported_int(kind)) | {op for op in ops_int.MOVES if lookup_lite(op) is not None})


def _signature_keys(model: LiteModel) -> tuple[dict[int, str], dict[int, str]]:
    """Tensor index -> signature name, for inputs and outputs of subgraph 0's signature."""
    for sig in model.signatures:
        if sig.subgraph == 0:
            return {i: k for k, i in sig.inputs.items()}, {i: k for k, i in sig.outputs.items()}
    return {}, {}


def _consumers(graph: LiteSubgraph, operators: Sequence[LiteOperator], outputs: dict[int, str]) -> dict[str, list[str]]:
    """Node name (an operator's first output) -> the operators reading any of its outputs."""
    taken: set[str] = set()
    names = {op.index: _node_name(graph, op, taken, outputs) for op in operators}
    producer = {i: names[op.index] for op in operators for i in op.outputs}
    out: dict[str, list[str]] = {n: [] for n in names.values()}
    for op in operators:
        for i in op.inputs:
            if i in producer:
                out[producer[i]].append(names[op.index])
    for i in graph.outputs:  # a model output is read by the caller too
        if i in producer:
            out[producer[i]].append("<output>")
    return out


def _node_name(graph: LiteSubgraph, op: LiteOperator, taken: set[str], outputs: dict[int, str]) -> str:
    """An operator's name: its first output's (a model output's signature key, "output_0", rather than
    the exporter's "StatefulPartitionedCall:0")."""
    first = op.outputs[0] if op.outputs else -1
    base = outputs.get(first) or (readable(graph.tensors[first].name) if first >= 0 else f"operator_{op.index}")
    name, n = base, 1
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    taken.add(name)
    return name


def _constant(model: LiteModel, t: LiteTensor) -> Variable:
    """A constant that is no weight (a shape, axes, a scalar factor), read now: they are small."""
    array = model.array(t) if t.dtype in BY_NAME else None
    if array is None:
        raise UnsupportedError(f"{model.where}: constant {t.name!r} of type {t.dtype}")
    return Variable(name=t.name, dtype=BY_NAME[t.dtype], shape=t.shape, nbytes=array.nbytes, loader=lambda: array)


def _run(ctx: LiteCtx, integer: str = "") -> tuple[Value, ...]:
    """``integer``: the operator's integer kind (int8, int16, uint8), or "" for a float operator."""
    converter = (integer and lookup_int(ctx.operator.kind, integer)) or lookup_lite(ctx.operator.kind)
    assert converter is not None  # _check_supported ran first
    try:
        return tuple(converter(ctx))
    except (UnsupportedError, MappingError) as exc:  # MappingError: a weight of the wrong rank for its layout
        message = str(exc)
        raise UnsupportedError(message if message.startswith("operator ") else f"{ctx.where()}: {message}") from None
    except _ERRORS as exc:
        # Options or constants of the wrong kind or rank: what TF's converter never writes. One line.
        raise UnsupportedError(f"{ctx.where()}: its options or constant inputs are not what a {ctx.op} has "
                               f"({type(exc).__name__}: {str(exc)[:120]}); the file is corrupt or forged") from None


def _check_shape(ctx: LiteCtx, k: int, value: Value) -> None:
    if not isinstance(value, Tensor):
        return
    declared = ctx.out_dims(k)
    got = value.shape
    if not declared and ctx.tensors[ctx.operator.outputs[k]].signature is None:
        return  # a tensor of unknown shape (has_rank false): nothing declared
    if len(declared) != len(got) or any(d is not None and g is not None and d != g
                                        for d, g in zip(declared[1:], got[1:])):
        raise UnsupportedError(f"{ctx.where()}: output {k} lowered to shape {list(got)} where the model declares "
                               f"{list(declared)}; report the model")


def _model_name(spec: ModelSpec) -> str:
    stem = spec.path.name.split(".", 1)[0]
    return stem if stem and stem != "model" else "tflite_model"
