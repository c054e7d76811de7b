"""Inline the function calls a graph's outputs depend on: a SavedModel signature is a
``StatefulPartitionedCall`` of a wrapper calling the traced function, which may call others.

Each call node becomes its function's body, node names prefixed with the call's (``StatefulPartitionedCall/
sequential/conv/Conv2D``), and an ``IdentityN`` under the call's own name whose inputs are the
function's returns, so ``call:k`` keeps meaning output ``k``. Inside a body, ``node:arg:i`` (output ``i``
of the output arg ``arg``) is rewritten to the flat ``node:k`` the outer graph uses, from the op's
OpDef. A function that calls itself, or an expansion past the node budget, is refused.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import FormatError, UnsupportedError
from ..spec import FunctionSpec, GraphNode, TFGraph

CALL_OPS = frozenset({"StatefulPartitionedCall", "PartitionedCall"})
MAX_NODES = 2_000_000
MAX_DEPTH = 64


def _function_of(node: GraphNode, graph: TFGraph) -> FunctionSpec | None:
    if node.op in CALL_OPS:
        func = node.attrs.get("f")
        name = getattr(func, "name", None)
        if name not in graph.functions:
            raise FormatError(f"{graph.where}: node {node.name!r} calls function {name!r}, which the library lacks")
        return graph.functions[name]
    return graph.functions.get(node.op)  # a function called by name, as its own op type


def _flat_index(node: GraphNode, arg: str, index: int, graph: TFGraph) -> int:
    """Output ``index`` of output arg ``arg`` of ``node`` as a flat output number."""
    if node.op in CALL_OPS:
        return index  # one list output arg
    if node.op in graph.functions:
        outputs = graph.functions[node.op].outputs
        if arg in outputs:
            return outputs.index(arg) + index
    args = graph.op_outputs.get(node.op)
    if args is None:
        raise FormatError(f"{graph.where}: no OpDef for op {node.op!r} (node {node.name!r}) in the stripped op "
                          f"list, so its output {arg!r} cannot be resolved; re-export the model")
    offset = 0
    for name, number_attr, list_attr in args:
        if name == arg:
            return offset + index
        if number_attr:
            offset += int(node.attrs.get(number_attr, 1))
        elif list_attr:
            offset += len(node.attrs.get(list_attr, ()))
        else:
            offset += 1
    raise FormatError(f"{graph.where}: node {node.name!r} ({node.op}) has no output {arg!r}")


def _expand(call: GraphNode, func: FunctionSpec, graph: TFGraph) -> list[GraphNode]:
    prefix = call.name + "/"
    if len(call.inputs) != len(func.inputs):
        raise FormatError(f"{graph.where}: node {call.name!r} passes {len(call.inputs)} inputs to function "
                          f"{func.name!r}, which takes {len(func.inputs)}")
    args = dict(zip(func.inputs, call.inputs))
    body = {n.name: n for n in func.nodes}

    def ref(text: str) -> str:
        parts = text.split(":")
        if len(parts) == 1:
            if text in args:
                return args[text]
            if text in body:
                return prefix + text
            raise FormatError(f"{graph.where}: function {func.name!r} refers to {text!r}, neither an argument nor a node")
        if len(parts) == 3 and parts[0] in body and parts[2].isdigit():
            return f"{prefix}{parts[0]}:{_flat_index(body[parts[0]], parts[1], int(parts[2]), graph)}"
        raise FormatError(f"{graph.where}: function {func.name!r}: cannot resolve the reference {text!r}")

    out = [GraphNode(prefix + n.name, n.op, tuple(ref(i) for i in n.inputs), n.attrs) for n in func.nodes]
    returns = []
    for name in func.outputs:
        if name not in func.ret:
            raise FormatError(f"{graph.where}: function {func.name!r} does not return its output {name!r}")
        returns.append(ref(func.ret[name]))
    out.append(GraphNode(call.name, "IdentityN", tuple(returns)))
    return out


def inline_calls(graph: TFGraph, outputs: Sequence[str]) -> TFGraph:
    """``graph`` with every call the ``outputs`` depend on replaced by the called function's body."""
    if not graph.functions:
        return graph
    nodes: dict[str, GraphNode] = {n.name: n for n in graph.nodes}
    stacks: dict[str, tuple[str, ...]] = {}  # node -> the functions it was inlined from (cycle check)
    todo = [o.split(":", 1)[0] for o in outputs]
    seen: set[str] = set()
    while todo:
        name = todo.pop()
        if name in seen or name not in nodes:
            continue
        node = nodes[name]
        func = _function_of(node, graph)
        if func is None:
            seen.add(name)
            todo += [i.split(":", 1)[0] for i in node.inputs]
            continue
        stack = stacks.get(name, ())
        if func.name in stack or len(stack) >= MAX_DEPTH:
            raise UnsupportedError(f"{graph.where}: function {func.name!r} calls itself (through "
                                   f"{' -> '.join(stack[-4:])}); recursive functions are not converted")
        expanded = _expand(node, func, graph)
        if len(nodes) + len(expanded) > MAX_NODES:
            raise FormatError(f"{graph.where}: inlining the functions makes more than {MAX_NODES} nodes; "
                              "the file is forged or far larger than a model")
        for new in expanded:
            if new.name in nodes and new.name != name:
                raise FormatError(f"{graph.where}: inlining {func.name!r} into {name!r} makes a second node "
                                  f"named {new.name!r}; the file is forged")
            nodes[new.name] = new
            stacks[new.name] = (*stack, func.name)
        todo.append(name)  # now the IdentityN: walk on through its returns
    return TFGraph(where=graph.where, nodes=tuple(nodes.values()), variables=graph.variables,
                   functions=graph.functions, signatures=graph.signatures, op_outputs=graph.op_outputs)
