"""What ``tf2torch inspect`` says about a TFLite model: its inputs and outputs, its operators by type,
the quantized tensors, and the operators nothing converts (the same listing as a TF graph's survey)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..readers.tflite.model import LiteModel
from .atrous import fold_atrous
from .lower import readable, unsupported_ops
from .quant import ACTIVATION_INTS


def survey(model: LiteModel) -> dict[str, Any]:
    graph = model.subgraphs[0]
    ops = Counter(op.kind for op in graph.operators)
    quantized = [t.name for t in graph.tensors if t.dtype in ACTIVATION_INTS]
    signatures = {s.key: {"inputs": sorted(s.inputs), "outputs": sorted(s.outputs)} for s in model.signatures}
    return {"nodes": len(graph.operators), "inputs": [readable(graph.tensors[i].name) for i in graph.inputs],
            "outputs": [readable(graph.tensors[i].name) for i in graph.outputs],
            **({"signatures": signatures} if signatures else {}),
            "ops": dict(sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))),
            "unsupported": dict(sorted(unsupported_ops(graph, fold_atrous(model, graph)).items())),
            **({"quantized": quantized[:20]} if quantized else {}),
            "subgraphs": len(model.subgraphs)}
