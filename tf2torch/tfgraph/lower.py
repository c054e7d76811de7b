"""Lower a TF graph (a frozen ``.pb`` / ``.pbtxt``, a ``.meta`` with its checkpoint, a SavedModel's
signature) to a Keras-like ``GraphSpec``.

The walk: the graph's outputs (``--graph-output``, the signature's, or those ``outputs.py`` finds), the
signature's function calls inlined (``inline.py``), every op the outputs depend on in dependency order,
one converter per op type (``tfgraph/ops_*.py``), then the layers an exporter took apart put back
(``patterns.py``). Every unsupported op type is named in one error before anything is built. The
result is an ordinary ``ModelSpec`` with ``graph`` set, converted like a Keras model.

Layer names come from TF scopes: a conv's layer is named after its weights' scope
(``block1.layer.0/conv1/DW`` -> ``block1.layer.0/conv1``), other layers after their op; a prefix every
layer shares (``resnet_v1_50/``) is dropped. Codegen turns them into identifiers through its namespace.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from ..errors import UnsupportedError, UsageError
from ..map.select import ema_weights
from ..readers.metagraph import VARIABLE_OPS
from ..spec import GraphNode, ModelSpec, Signature, TFGraph, Variable
from . import ops_array, ops_image, ops_linalg, ops_math, ops_nn, ops_shape, ops_slice  # noqa: F401  (registration)
from .base import Const, Missing, NodeCtx, Tensor, Value, lookup
from .builder import Builder
from .inline import inline_calls
from .outputs import consumers, model_inputs, model_outputs

INPUT_OPS = frozenset({"Placeholder"})


def dependency_order(nodes: dict[str, GraphNode], outputs: Sequence[str]) -> list[str]:
    """Every node the outputs depend on, inputs first (iterative: graphs are deep)."""
    done: dict[str, None] = {}
    active: set[str] = set()
    for out in outputs:
        stack: list[tuple[str, bool]] = [(out, False)]
        while stack:
            name, expanded = stack.pop()
            if name in done:
                continue
            if expanded:
                active.discard(name)
                done[name] = None
                continue
            if name in active:
                raise UnsupportedError(f"the graph has a cycle through {name!r} (a while loop); tf2torch converts "
                                       "loop-free graphs: export the model with its loops unrolled, or port by hand")
            if name not in nodes:
                raise UnsupportedError(f"the graph has no node {name!r}; check the output name")
            active.add(name)
            stack.append((name, True))
            for ref in reversed(nodes[name].inputs):
                src = ref.split(":", 1)[0]
                if src not in done:
                    stack.append((src, False))
    return list(done)


def unsupported_ops(nodes: dict[str, GraphNode], order: list[str]) -> dict[str, list[str]]:
    """Op type -> the nodes of ``order`` of that type that nothing converts (inspect lists them too)."""
    missing: dict[str, list[str]] = {}
    for name in order:
        op = nodes[name].op
        if op not in VARIABLE_OPS and op not in INPUT_OPS and op != "Const" and lookup(op) is None:
            missing.setdefault(op, []).append(name)
    return missing


def _check_supported(nodes: dict[str, GraphNode], order: list[str]) -> None:
    missing = unsupported_ops(nodes, order)
    if missing:
        shown = "; ".join(f"{op} ({len(names)}: {', '.join(names[:2])}{', ...' if len(names) > 2 else ''})"
                          for op, names in sorted(missing.items())[:8])
        raise UnsupportedError(f"the graph uses {len(missing)} op type(s) tf2torch does not convert: {shown}; "
                               "see `tf2torch inspect` for the full list, or pass --model FILE.py:CALLABLE "
                               "or --weights-only")


def lower(spec: ModelSpec, outputs: Sequence[str] = (), *, required: bool = True,
          ema: bool = False, signature: str | None = None,
          input_shape: tuple[int | None, ...] | None = None) -> ModelSpec | None:
    """``spec`` with ``graph`` set to the lowered TF graph, its weights renamed for the Keras converters.

    A graph with no model in it (no float Placeholder feeding a weight: a checkpoint's graph written by
    a data pipeline, or only variables) is an error when ``required``, else None. With ``ema`` each
    weight's ExponentialMovingAverage shadow gives its values (the shadow is then reported as used for it).
    ``input_shape`` (TF's layout, batch first) replaces the graph's shape of its one input, for graphs
    whose placeholders leave sizes open (``[None, None, None, 3]``).
    """
    if spec.tf_graph is None:
        raise UnsupportedError(f"{spec.path}: holds no TF graph")
    graph = spec.tf_graph()
    names: tuple[str, ...] = ()
    if graph.signatures and not outputs:
        outputs = signature_outputs(graph, signature)
        names = signature_keys(graph, signature)
    elif signature is not None:
        raise UsageError(f"{spec.path}: --signature {signature!r}: the source has no signatures (only SavedModels do)")
    graph = inline_calls(graph, outputs)
    nodes = graph.by_name()
    if not outputs and not model_inputs(graph):
        if not required:
            return None
        raise UnsupportedError(f"{graph.where}: no model input found (no Placeholder feeds a weight); "
                               "name the outputs with --graph-output NODE")
    outs = list(outputs) or model_outputs(graph)
    if not outs:
        raise UnsupportedError(f"{graph.where}: no model output found; name one with --graph-output NODE")
    order = dependency_order(nodes, [o.split(":", 1)[0] for o in outs])
    _check_supported(nodes, order)
    stored = {v.name: v for v in spec.variables}
    if ema:
        stored.update(ema_weights(spec.variables))
    builder = Builder(consumers({n: nodes[n] for n in order}), input_shape)
    values: dict[str, tuple[Value, ...]] = {}

    def value_of(ref: str) -> Value:
        src, _, index = ref.partition(":")
        found = values.get(src, ())
        i = int(index) if index.isdigit() else 0
        return found[i] if i < len(found) else Missing(f"{src!r} has no output {i}")

    for name in order:
        node = nodes[name]
        if node.op in INPUT_OPS:
            values[name] = (builder.input(node),)
        elif node.op in VARIABLE_OPS:
            key = graph.variables.get(name) or node.attrs.get("shared_name") or name
            if key not in stored:
                raise UnsupportedError(f"{graph.where}: variable {key!r} (node {name!r}) is not in the checkpoint; "
                                       "pass the checkpoint this graph was saved with")
            values[name] = (Const(stored[key], weight=True),)
        elif node.op == "Const":
            value = node.attrs.get("value")
            if not isinstance(value, Variable):
                raise UnsupportedError(f"{graph.where}: Const {name!r} has no value; the file is corrupt")
            # A frozen graph's weights are Consts listed as the spec's variables: keep their identity.
            values[name] = (Const(stored[name], weight=True) if name in stored else Const(value),)
        else:
            ctx = NodeCtx(node, [value_of(r) for r in node.inputs], builder)
            values[name] = _run(ctx)
    out_refs = []
    for out in outs:
        value = value_of(out)
        if not isinstance(value, Tensor):
            raise UnsupportedError(f"{graph.where}: output {out!r} is not computed from the inputs "
                                   f"({getattr(value, 'why', 'a constant')})")
        out_refs.append(value.ref)
    builder.simplify(tuple(out_refs))
    # The layers hold copies of the weights named for the Keras converters (tf_name "conv/kernel"); the
    # spec keeps the variables as read, so the report and copy detection see their own TF names.
    tf_outputs = tuple(o if ":" in o else f"{o}:0" for o in outs)
    return dataclasses.replace(spec, graph=builder.freeze(graph_name(spec), tuple(out_refs), tf_outputs, names))


def supported_ops() -> list[str]:
    """Every TF op type a lowered graph may hold: the converters', and those the walk itself reads."""
    from .base import supported
    from .inline import CALL_OPS

    return sorted({*supported(), *VARIABLE_OPS, *INPUT_OPS, *CALL_OPS, "Const"})


def graph_name(spec: ModelSpec) -> str:
    stem = spec.path.name.split(".", 1)[0]
    return stem if stem and stem not in ("model", "saved_model", "frozen_graph", "graph") else "tf_graph"


def _run(ctx: NodeCtx) -> tuple[Value, ...]:
    converter = lookup(ctx.op)
    assert converter is not None  # _check_supported ran first
    if len(ctx.inputs) < converter.arity:  # type: ignore[attr-defined]
        raise UnsupportedError(f"{ctx.where()}: expected {converter.arity} inputs, found "  # type: ignore[attr-defined]
                               f"{len(ctx.inputs)}; the graph is corrupt")
    try:
        return tuple(converter(ctx))
    except (TypeError, ValueError, AttributeError, IndexError, KeyError, ZeroDivisionError, OverflowError) as exc:
        # An attribute of the wrong kind (a string where a list of ints belongs), a constant of the wrong
        # rank: what a real exporter never writes. One line naming the op, not a traceback.
        raise UnsupportedError(f"{ctx.where()}: its attributes or constant inputs are not what a {ctx.op} has "
                               f"({type(exc).__name__}: {str(exc)[:120]}); the graph is corrupt or forged") from None


def _signature(graph: TFGraph, name: str | None) -> Signature:
    chosen = name or ("serving_default" if "serving_default" in graph.signatures or len(graph.signatures) != 1
                      else next(iter(graph.signatures)))
    if chosen not in graph.signatures:
        raise UsageError(f"{graph.where}: no signature {chosen!r}; the SavedModel has "
                         f"{', '.join(sorted(graph.signatures)) or 'none'}; pass --signature NAME")
    return graph.signatures[chosen]


def signature_keys(graph: TFGraph, name: str | None) -> tuple[str, ...]:
    # The outputs of a dict-returning function are numbered in sorted key order (":k" says which).
    return tuple(sorted(_signature(graph, name).outputs))


def signature_outputs(graph: TFGraph, name: str | None) -> list[str]:
    """The output tensors of signature ``name`` (default ``serving_default``), in output-key order."""
    sig = _signature(graph, name)
    return [sig.outputs[k] for k in signature_keys(graph, name)]
