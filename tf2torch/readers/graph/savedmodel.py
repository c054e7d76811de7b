"""The graph of a TF2 SavedModel (``tf.saved_model.save``, Keras 3 ``model.export()``, TF Hub): the outer
graph, its function library, its signatures, and which checkpoint variable each captured handle is.

Messages (core/protobuf/saved_model.proto, meta_graph.proto, saved_object_graph.proto,
core/framework/function.proto, op_def.proto)::

    SavedModel       meta_graphs 2
    MetaGraphDef     meta_info_def 1 {stripped_op_list 2 {op 1}}, graph_def 2, signature_def 5 (map),
                     object_graph_def 7
    SignatureDef     inputs 1, outputs 2 (maps: key -> TensorInfo {name 1})
    GraphDef         node 1, library 2 {function 1}
    FunctionDef      signature 1 (OpDef), node_def 3, ret 4 (map: output arg -> "node:arg:index")
    OpDef            name 1, input_arg 2, output_arg 3, attr 4 {name 1, default_value 3}
    ArgDef           name 1, number_attr 5, type_list_attr 6
    SavedObjectGraph concrete_functions 2 (map: name -> SavedConcreteFunction {bound_inputs 2})

How a captured variable is found (what TF's own loader relies on): a signature is an outer
``StatefulPartitionedCall`` whose inputs are the signature's Placeholders followed by one ``VarHandleOp``
per capture; ``concrete_functions[f].bound_inputs`` lists the object-graph node of each capture, in the
same order, and those node ids are the checkpoint object graph's. Handle names are not used: Keras 3
exports uniquify them (``conv/kernel_1``).
"""

from __future__ import annotations

from pathlib import Path

from ...errors import FormatError
from ...spec import FunctionSpec, OpOutputs, Signature, TFGraph
from ..proto import Message
from .nodes import FuncAttr, decode_graph, decode_node, merge_defaults, op_defaults

CALL_OPS = frozenset({"StatefulPartitionedCall", "PartitionedCall"})
MAX_FUNCTIONS = 100_000


def _map(msg: Message, number: int, what: str) -> dict[str, Message]:
    return {e.string(1): e.message(2, what) for e in msg.messages(number, what)}


def _signatures(meta: Message) -> dict[str, Signature]:
    out = {}
    for key, sig in _map(meta, 5, "signature_def").items():
        inputs = {k: v.string(1) for k, v in _map(sig, 1, "input").items()}
        outputs = {k: v.string(1) for k, v in _map(sig, 2, "output").items()}
        if key.startswith("__") or not outputs or not any(outputs.values()):
            continue  # __saved_model_init_op: an op, not a signature
        out[key] = Signature(key, inputs, outputs)
    return out


def _op_outputs(op_defs: list[Message]) -> dict[str, OpOutputs]:
    """Per op type: its output args as (name, number_attr, type_list_attr)."""
    return {d.string(1): tuple((a.string(1), a.string(5), a.string(6)) for a in d.messages(3, "output_arg"))
            for d in op_defs}


def _function(fdef: Message, defaults: dict, where: str) -> FunctionSpec:
    sig = fdef.message(1, "signature")
    name = sig.string(1)
    at = f"{where} > function {name!r}"
    nodes = tuple(merge_defaults(decode_node(n, f"{at} > node[{i}]"), defaults)
                  for i, n in enumerate(fdef.messages(3, "node_def")))
    return FunctionSpec(
        name=name,
        inputs=tuple(a.string(1) for a in sig.messages(2, "input_arg")),
        outputs=tuple(a.string(1) for a in sig.messages(3, "output_arg")),
        nodes=nodes,
        ret={e.string(1): e.string(2) for e in fdef.messages(4, "ret")},
    )


def _bound_inputs(meta: Message) -> dict[str, list[int]]:
    functions = meta.message(7, "object_graph_def").messages(2, "concrete_functions")
    return {e.string(1): e.message(2, "concrete function").repeated_ints(2) for e in functions}


def read_savedmodel_graph(root: Path, node_variables: dict[int, str]) -> TFGraph:
    """The SavedModel's first meta graph. ``node_variables`` maps checkpoint object-graph node ids to the
    spec's variable names (TF2 SavedModels); handles it does not cover keep their own names (TF1
    SavedModels, whose variables are named as in the graph)."""
    file = root / "saved_model.pb"
    where = str(file)
    from ..metagraph import read_file

    blob = read_file(file, "the SavedModel")
    metas = Message(blob, where).messages(2, "meta_graphs")
    if not metas:
        raise FormatError(f"{file}: holds no meta graph; the SavedModel is empty or corrupt")
    meta = metas[0]
    op_defs = meta.message(1, "meta_info_def").message(2, "stripped_op_list").messages(1, "op")
    defaults = op_defaults(op_defs, where)
    graph_def = meta.message(2, "graph_def")
    library = graph_def.message(2, "library").messages(1, "function")
    if len(library) > MAX_FUNCTIONS:
        raise FormatError(f"{file}: {len(library)} functions, more than tf2torch reads ({MAX_FUNCTIONS})")
    functions = {f.name: f for f in (_function(m, defaults, where) for m in library)}
    base = decode_graph(graph_def, where, defaults=defaults)
    variables: dict[str, str] = {}
    bound = _bound_inputs(meta)
    for node in base.nodes:
        func = node.attrs.get("f")
        if node.op not in CALL_OPS or not isinstance(func, FuncAttr) or func.name not in bound:
            continue
        ids = bound[func.name]
        handles = node.inputs[len(node.inputs) - len(ids):] if ids else ()
        for handle, node_id in zip(handles, ids):
            if node_id in node_variables:
                variables[handle.split(":", 1)[0]] = node_variables[node_id]
    return TFGraph(where=where, nodes=base.nodes, variables=variables, functions=functions,
                   signatures=_signatures(meta), op_outputs=_op_outputs(op_defs))
