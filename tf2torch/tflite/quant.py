"""Integer-quantized TFLite models: what is emulated, what ``--dequantize`` turns to float, what is refused.

Three kinds of quantized tensors occur (schema.fbs ``QuantizationParameters``: real = scale * (q - zero_point),
one scale per tensor or one per slice of ``quantized_dimension``):

* int8 **weights of a hybrid operator** (dynamic-range quantization: float activations):
  FULLY_CONNECTED, CONV_2D (per channel), DEPTHWISE_CONV_2D (per channel) and TRANSPOSE_CONV are emulated
  exactly as LiteRT computes them (``layers/lite_quant.py``, ``runtime/lite_quant.py``; TRANSPOSE_CONV:
  ``tflite/ops_int_spatial.py``, ``runtime/lite_int_spatial.py``); a DEQUANTIZE of an int8
  constant becomes its float32 values (LiteRT's ``Dequantize`` computes scale * (q - zero_point) in
  float, exactly representable, so the parameter is what LiteRT uses);
* **integer activations** (full-integer quantization: int8 tensors computed at run time, int32 biases):
  LiteRT's integer kernels are emulated operator by operator (``tflite/ops_int.py``; int16 activations of
  16x8 quantization: ``tflite/ops_int16.py``; uint8 ends and uint8 models: ``tflite/ops_uint8.py``), and
  an operator with no integer converter of its kind is refused by name (``tflite/lower.py``);
* with ``--dequantize`` every quantized constant becomes its dequantized float32 values, QUANTIZE and
  DEQUANTIZE of activations become identities and integer inputs and outputs carry real values: the
  trainable float model, an approximation of the integer one (``tf2torch verify`` measures how far).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from .. import dtypes
from ..errors import UnsupportedError
from ..readers.tflite.model import LiteModel, LiteOperator, LiteSubgraph, LiteTensor
from ..spec import Variable

ACTIVATION_INTS = frozenset({"int8", "uint8", "int16", "int4"})  # integer tensors computed at run time
WEIGHT_INTS = frozenset({"int8", "uint8", "int16", "int32", "int64", "int4", "int2"})  # int64: 16x8 biases
HYBRID = frozenset({"FULLY_CONNECTED", "CONV_2D", "DEPTHWISE_CONV_2D", "TRANSPOSE_CONV"})  # emulated, weights at input 1
HINT = "convert with --dequantize for the float model (tf2torch verify measures its distance from LiteRT)"


def is_quantized_constant(model: LiteModel, t: LiteTensor) -> bool:
    return t.dtype in WEIGHT_INTS and t.quantization.quantized and model.has_data(t)


def integer_activations(model: LiteModel, graph: LiteSubgraph) -> list[LiteTensor]:
    """8- and 16-bit integer tensors computed at run time (or fed in): a full-integer model's activations."""
    used = {i for op in graph.operators for i in (*op.inputs, *op.outputs) if i >= 0} | set(graph.inputs)
    return [t for t in graph.tensors if t.index in used and not model.has_data(t) and t.dtype in ACTIVATION_INTS]


def check(model: LiteModel, graph: LiteSubgraph, operators: Sequence[LiteOperator], dequantize: bool) -> bool:
    """Refuse, in one line naming every cause, a quantized model the chosen route does not compute; True
    for a full-integer model (int8, int16 or uint8 activations: its operators then take their integer
    converters)."""
    tensors = graph.tensors
    if any(t.dtype in ("int4", "int2") for t in tensors):
        raise UnsupportedError(f"{model.where}: 4-bit / 2-bit packed tensors are not converted")
    acts = integer_activations(model, graph)
    unscaled = [t for t in acts if not t.quantization.quantized]
    if unscaled:  # no real value to dequantize to, and no integer kernel that tf2torch emulates
        shown = ", ".join(f"{t.name.split(';', 1)[0]!r} ({t.dtype})" for t in unscaled[:3])
        raise UnsupportedError(f"{model.where}: {len(unscaled)} integer activation tensor(s) without quantization "
                               f"parameters ({shown}{', ...' if len(unscaled) > 3 else ''}): not converted")
    if dequantize:
        return False
    if acts:  # a full-integer model: LiteRT's integer kernels, emulated operator by operator (int8:
        return True  # tflite/ops_int.py; int16 activations of 16x8 models: ops_int16.py; uint8: ops_uint8.py)
    refused: dict[str, list[str]] = {}
    for op in operators:
        for k, i in enumerate(op.inputs):
            if i < 0 or not is_quantized_constant(model, tensors[i]) or op.op == "DEQUANTIZE":
                continue
            why = _hybrid_problem(op, k, tensors[i])
            if why:
                refused.setdefault(f"{op.kind} ({why})", []).append(tensors[op.outputs[0]].name if op.outputs else "")
    if refused:
        shown = "; ".join(f"{kind}: {len(names)} ({', '.join(repr(x) for x in names[:2])}"
                          f"{', ...' if len(names) > 2 else ''})" for kind, names in sorted(refused.items()))
        raise UnsupportedError(f"{model.where}: int8 weights on operators whose dynamic-range (hybrid) kernels "
                               f"are not emulated: {shown}; {HINT}")
    return False


def _hybrid_problem(op: LiteOperator, k: int, t: LiteTensor) -> str:
    """Why an operator reading the quantized constant ``t`` at input ``k`` is not emulated ('' if it is)."""
    if op.op not in HYBRID or k != 1:
        return "its hybrid kernel is not emulated"
    if t.dtype != "int8":
        return f"{t.dtype} weights"
    if any(z != 0 for z in t.quantization.zero_points):
        return "weights with a zero point"  # TF's converter quantizes weights symmetrically
    per_channel = len(t.quantization.scales) > 1
    if op.op not in ("FULLY_CONNECTED", "TRANSPOSE_CONV") and not per_channel:  # (TRANSPOSE_CONV repeats it)
        return "one weight scale for all channels"  # LiteRT's symmetric EvalHybrid path: not emulated
    if per_channel and t.quantization.dimension != (3 if op.op == "DEPTHWISE_CONV_2D" else 0):
        return f"scales along axis {t.quantization.dimension}"
    return ""


def weight_scales(t: LiteTensor, channels: int) -> list[float]:
    """The per-output-channel scales of hybrid weights (one for all when per-tensor)."""
    scales = [float(s) for s in t.quantization.scales]
    if not all(0 < s < float("inf") for s in scales):
        raise UnsupportedError(f"tensor {t.name!r}: weight scales must be positive and finite; the file is corrupt")
    if len(scales) not in (1, channels):
        raise UnsupportedError(f"tensor {t.name!r}: {len(scales)} scales for {channels} output channels")
    return scales


def dequantized(where: str, t: LiteTensor, var: Variable) -> Variable:
    """``var`` (the quantized constant ``t``) as float32: scale * (q - zero_point), per channel along
    ``quantized_dimension``. A float32 product of an integer below 2**24 and a float32 scale, rounded
    once, which is what LiteRT's DEQUANTIZE gives."""
    import numpy as np

    q = t.quantization
    if len(q.scales) > 1 and not (0 <= q.dimension < len(t.shape) and t.shape[q.dimension] == len(q.scales)):
        raise UnsupportedError(f"{where}: tensor {t.name!r} has {len(q.scales)} scales along axis "
                               f"{q.dimension} of shape {list(t.shape)}; the file is corrupt")
    shape = [1] * len(t.shape)
    if len(q.scales) > 1:
        shape[q.dimension] = len(q.scales)
    scale = np.asarray(q.scales, dtype=np.float64).reshape(shape)
    zero = np.asarray(q.zero_points or [0], dtype=np.float64).reshape(shape if len(q.zero_points) > 1 else [1])

    def load() -> np.ndarray:
        return ((var.read().astype(np.float64) - zero) * scale).astype(np.float32)

    f32 = dtypes.BY_NAME["float32"]
    return dataclasses.replace(var, dtype=f32, nbytes=4 * int(np.prod(t.shape, dtype=np.int64)), loader=load)


def interface_notes(graph: LiteSubgraph, names: dict[int, str], dequantize: bool) -> tuple[str, ...]:
    """What the model's quantized inputs and outputs were in the file: their scale and zero point."""
    notes = []
    for kind, indices in (("input", graph.inputs), ("output", graph.outputs)):
        for i in indices:
            t = graph.tensors[i]
            if t.dtype in ACTIVATION_INTS and t.quantization.quantized:
                scale, zero = t.quantization.scales[0], (t.quantization.zero_points or (0,))[0]
                real = (f"the converted model's {kind} is the real value scale * (q - zero_point)" if dequantize
                        else f"the converted model's {kind} is q itself ({t.dtype}; real value scale * (q - zero_point))")
                notes.append(f"TFLite {kind} {names.get(i, t.name)!r}: {t.dtype}, scale {scale!r}, zero point "
                             f"{zero}; {real}")
    return tuple(notes)
