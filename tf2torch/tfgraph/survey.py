"""What ``tf2torch inspect`` says about a TF graph: its inputs and outputs as a conversion would find
them, its ops by type, and the op types on the way to the outputs that have no converter."""

from __future__ import annotations

from collections import Counter
from typing import Any

from ..errors import Tf2TorchError
from ..spec import TFGraph
from .inline import inline_calls
from .lower import dependency_order, signature_outputs, unsupported_ops
from .outputs import model_inputs, model_outputs


def survey(graph: TFGraph) -> dict[str, Any]:
    """For a SavedModel: its signatures, and the ops of ``serving_default`` (or its only one) inlined."""
    signatures = {name: {"inputs": sorted(sig.inputs), "outputs": sorted(sig.outputs)}
                  for name, sig in sorted(graph.signatures.items())}
    if graph.signatures:
        try:
            outputs = signature_outputs(graph, None)
            graph = inline_calls(graph, outputs)
        except Tf2TorchError:
            outputs = []
        nodes = graph.by_name()
        chosen = graph.signatures.get("serving_default") or next(iter(graph.signatures.values()))
        inputs = [t.split(":", 1)[0] for t in chosen.inputs.values()]
    else:
        nodes = graph.by_name()
        inputs = model_inputs(graph)
        outputs = model_outputs(graph, inputs) if inputs else []
    try:
        needed = dependency_order(nodes, [o.split(":", 1)[0] for o in outputs]) if outputs else list(nodes)
    except Tf2TorchError:  # a cycle, or a dangling input: every node is then worth listing
        needed = list(nodes)
    unsupported = unsupported_ops(nodes, needed)
    ops = Counter(n.op for n in graph.nodes)
    return {"nodes": len(graph.nodes), "inputs": inputs, "outputs": outputs,
            **({"signatures": signatures} if signatures else {}),
            "ops": dict(sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))),
            "unsupported": dict(sorted(unsupported.items()))}
