"""``DENSIFY``: a sparse constant made dense, folded away before the walk.

TF's converter, asked for ``tf.lite.Optimize.EXPERIMENTAL_SPARSITY``, stores pruned weights sparse
(``readers/tflite/sparsity.py``) and puts a ``DENSIFY`` between such a constant and the operator that
reads it (a conv's filter, an int8 fully-connected weight); a float ``FULLY_CONNECTED`` or a float16
``DEQUANTIZE`` reads the sparse constant itself. The reader expands every sparse constant exactly (the
values LiteRT's DENSIFY writes: the stored ones at their positions, zeros elsewhere), so a ``DENSIFY``
only moves a constant: its readers are pointed at its input and the operator is dropped. That keeps a
dynamic-range model's int8 weights where the hybrid checks look for them (an operator's constant
input, with its scales) and keeps DENSIFY's output, a tensor with no buffer, from counting as an
int8 activation of a full-integer model (``tflite/quant.py``).
"""

from __future__ import annotations

import dataclasses

from ..errors import UnsupportedError
from ..readers.tflite.model import LiteModel, LiteSubgraph
from ..tfgraph.base import Value
from .base import LiteCtx, lite_op


def fold_densify(model: LiteModel, graph: LiteSubgraph) -> LiteSubgraph:
    """``graph`` without its DENSIFY operators, their readers reading the sparse constant instead."""
    moved: dict[int, int] = {}
    for op in graph.operators:
        if op.op != "DENSIFY":
            continue
        if len(op.inputs) != 1 or len(op.outputs) != 1 or op.inputs[0] < 0:
            raise UnsupportedError(f"{model.where}: operator {op.index} (DENSIFY) has {len(op.inputs)} input(s) and "
                                   f"{len(op.outputs)} output(s) (one each); the file is corrupt")
        source, target = graph.tensors[op.inputs[0]], graph.tensors[op.outputs[0]]
        if not (source.sparse and model.has_data(source)):
            raise UnsupportedError(f"{model.where}: operator {op.index} (DENSIFY) reads {source.name!r}, which is "
                                   "not a sparse constant (LiteRT's DENSIFY takes only those)")
        if (source.dtype, source.shape, source.quantization) != (target.dtype, target.shape, target.quantization):
            raise UnsupportedError(f"{model.where}: operator {op.index} (DENSIFY) writes {target.name!r} as "
                                   f"{target.dtype} {list(target.shape)} from {source.dtype} {list(source.shape)} "
                                   "with other quantization: not a plain densification; report the model")
        moved[op.outputs[0]] = op.inputs[0]
    for op in graph.operators:  # LiteRT's sparse FULLY_CONNECTED kernels read sparse weights themselves
        for k, i in enumerate(op.inputs):
            if i >= 0 and graph.tensors[i].sparse and op.op != "DENSIFY" and not (op.op == "FULLY_CONNECTED" and k == 1):
                # e.g. TF's converter with float16 and sparsity feeds a sparse float16 constant to DEQUANTIZE,
                # whose kernel reads the stored values as the dense tensor (past their end: TF 2.21's
                # interpreter returns NaN): no defined result to convert to
                raise UnsupportedError(f"{model.where}: operator {op.index} ({op.kind}) reads the sparse constant "
                                       f"{graph.tensors[i].name!r} directly, which LiteRT computes only through "
                                       "DENSIFY or a FULLY_CONNECTED weight (its DEQUANTIZE reads the stored values as "
                                       "if dense); re-convert without float16 weights or without EXPERIMENTAL_SPARSITY")
    if not moved:
        return graph
    operators = tuple(dataclasses.replace(op, inputs=tuple(moved.get(i, i) for i in op.inputs))
                      for op in graph.operators if op.op != "DENSIFY")
    return dataclasses.replace(graph, operators=operators, outputs=tuple(moved.get(i, i) for i in graph.outputs))


@lite_op("DENSIFY")
def densify(ctx: LiteCtx) -> tuple[Value, ...]:
    """Listed with the converted operators; the walk never meets one (``fold_densify`` ran first), and
    were it to, the dense constant is its input's value."""
    return (ctx.const(0, "sparse constant"),)
