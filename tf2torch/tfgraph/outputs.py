"""Which nodes of a TF graph are the model: its inputs and its outputs, when the user names none.

A training graph holds more than the model: labels, a loss, metrics, optimizer updates, summaries and
the saver. What is read from the graph (never from names):
- the model's **inputs** are the float Placeholders that feed an op reading a weight (a conv, a MatMul,
  a batch norm reading a variable or a frozen weight); other float Placeholders are labels;
- the **model region** is what the inputs feed, without what labels feed, without reductions over the
  batch axis (a loss or a metric averages over the batch; a model's output keeps it) and what follows
  them, and without gradient / saving / optimizer scopes;
- ops that only lead into such a loss are its first steps (``(y - x) ** 2``), back to the last op reading
  a weight or an ``Identity`` (how TF1 code names an output: ``tf.identity(x, name="logits")``);
- the **outputs** are the region's ops that feed nothing else in it (metrics and shapes aside).
"""

from __future__ import annotations

import re

from ..readers.metagraph import PASS_THROUGH, VARIABLE_OPS
from ..spec import GraphNode, TFGraph, Variable

WEIGHT_SOURCES = VARIABLE_OPS | {"Const"}
_REDUCTIONS = frozenset({"Mean", "Sum", "Max", "Min", "Prod", "All", "Any", "L2Loss", "EuclideanNorm"})
_NOT_OUTPUTS = frozenset({
    "NoOp", "Assign", "AssignAdd", "AssignSub", "AssignVariableOp", "AssignAddVariableOp", "SaveV2", "Save",
    "SaveSlices", "RestoreV2", "Restore", "RestoreSlice", "MergeV2Checkpoints", "Assert", "Print", "PrintV2",
    "ScalarSummary", "HistogramSummary", "ImageSummary", "MergeSummary", "WriteSummary", "VarIsInitializedOp",
    "IsVariableInitialized", "ArgMax", "ArgMin", "Equal", "NotEqual", "Shape", "Size", "Rank",
})
_NOT_MODEL = re.compile(r"(^|/)(gradients(_\d+)?|save(_\d+)?|training|Adam|Momentum|GradientDescent|"
                        r"ExponentialMovingAverage|summaries)(/|$)")
_FLOAT_ENUMS = (1, 2, 14, 19)
_INT_ENUMS = (3, 9)  # int32, int64: token ids (an embedding lookup reads a weight with them)
_MAX_WEIGHT_PATH = 8  # a weight reaches its op through a read, a cast: a few steps


def _src(ref: str) -> str:
    return ref.split(":", 1)[0]


def _float_placeholder(node: GraphNode) -> bool:
    return node.op == "Placeholder" and getattr(node.attrs.get("dtype"), "enum", 0) in _FLOAT_ENUMS


def _id_placeholder(node: GraphNode) -> bool:
    return node.op == "Placeholder" and getattr(node.attrs.get("dtype"), "enum", 0) in _INT_ENUMS


def _reads_weight(node: GraphNode, nodes: dict[str, GraphNode], first: int = 1) -> bool:
    """Some operand (after the first, unless ``first=0``: a gather's table is its first) comes, through
    reads and casts, from a variable or a float tensor Const."""
    for ref in node.inputs[first:]:
        name, steps = _src(ref), 0
        while name in nodes and nodes[name].op in PASS_THROUGH and nodes[name].inputs and steps < _MAX_WEIGHT_PATH:
            name, steps = _src(nodes[name].inputs[0]), steps + 1
        source = nodes.get(name)
        if source is not None and source.op in WEIGHT_SOURCES:
            value = source.attrs.get("value")
            # a frozen weight: a float tensor Const (shapes and axes are integer Consts)
            if source.op != "Const" or (isinstance(value, Variable) and value.dtype.is_float and len(value.shape) >= 1):
                return True
    return False


def consumers(nodes: dict[str, GraphNode]) -> dict[str, list[str]]:
    """Node -> the nodes among ``nodes`` that read its outputs."""
    out: dict[str, list[str]] = {name: [] for name in nodes}
    for node in nodes.values():
        for ref in node.inputs:
            if _src(ref) in out:
                out[_src(ref)].append(node.name)
    return out


def _below(starts: list[str], readers: dict[str, list[str]], nodes: dict[str, GraphNode],
           stop=lambda name: False) -> dict[str, None]:
    seen: dict[str, None] = {}
    todo = list(starts)
    while todo:
        name = todo.pop()
        if name in seen or _NOT_MODEL.search(name) or stop(name):
            continue
        seen[name] = None
        todo += readers.get(name, [])
    return seen


def _reduces_batch(node: GraphNode, nodes: dict[str, GraphNode]) -> bool:
    if node.op not in _REDUCTIONS:
        return False
    if node.op in ("L2Loss", "EuclideanNorm") or len(node.inputs) < 2:
        return True
    axes = nodes.get(_src(node.inputs[1]))
    value = axes.attrs.get("value") if axes is not None and axes.op == "Const" else None
    if not isinstance(value, Variable) or value.dtype.name not in ("int32", "int64") or len(value.shape) > 1:
        return True  # axes computed at run time (or not axes at all): not a layer tf2torch converts anyway
    return 0 in [int(a) for a in value.read().reshape(-1)]


def model_inputs(graph: TFGraph) -> list[str]:
    nodes = graph.by_name()
    readers = consumers(nodes)
    found = []
    for node in graph.nodes:
        if _float_placeholder(node):
            below = _below([node.name], readers, nodes)
            if any(_reads_weight(nodes[n], nodes) for n in below):
                found.append(node.name)
        elif _id_placeholder(node):  # token ids: an input when they index a weight (an embedding table)
            if any(nodes[c].op in ("GatherV2", "ResourceGather") and _reads_weight(nodes[c], nodes, first=0)
                   for c in _below([node.name], readers, nodes)):
                found.append(node.name)
    return found


def model_outputs(graph: TFGraph, inputs: list[str] | None = None) -> list[str]:
    nodes = graph.by_name()
    readers = consumers(nodes)
    inputs = model_inputs(graph) if inputs is None else inputs
    labels = [n.name for n in graph.nodes if (_float_placeholder(n) or _id_placeholder(n)) and n.name not in inputs]
    tainted = _below(labels, readers, nodes)
    losses: set[str] = set()

    def stop(name: str) -> bool:
        if name in tainted:
            return True
        if _reduces_batch(nodes[name], nodes):
            losses.add(name)
            return True
        return False

    region = _below(inputs, readers, nodes, stop=stop)
    # What only feeds a loss is the loss's first steps (``(y - x) ** 2`` before its mean), back to the
    # last op reading a weight or an Identity (``tf.identity(x, name="logits")`` marks an output).
    # Likewise what only feeds a loss or a metric that also reads labels (a cross-entropy's reshapes).
    dead = losses | set(tainted)
    for name in reversed([n.name for n in graph.nodes if n.name in region]):
        node = nodes[name]
        feeds = [c for c in readers[name] if c in region or c in dead]
        if feeds and all(c in dead for c in feeds) and node.op != "Identity" and not _reads_weight(node, nodes):
            dead.add(name)
            del region[name]
    return [n.name for n in graph.nodes if n.name in region and n.op not in _NOT_OUTPUTS and n.name not in inputs
            and not any(c in region and nodes[c].op not in _NOT_OUTPUTS for c in readers[n.name])]
