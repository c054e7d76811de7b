"""A frozen ``GraphDef`` (``.pb``, or ``.pbtxt`` in text format): the graph, with the weights as Const nodes.

``tf.compat.v1.graph_util.convert_variables_to_constants`` (and ``freeze_graph``) replace each variable
by a Const of the same name, so a frozen ResNet's ``resnet_v1_50/conv1/weights`` is still called that.
The float Consts of rank >= 1 are the spec's variables (scalars are epsilons and factors, integer
Consts are shapes and axes); every one of them must be used by a conversion, or it is reported.
"""

from __future__ import annotations

from pathlib import Path

from ...errors import FormatError
from ...spec import Format, ModelSpec, Variable
from ..proto import LEN, VARINT, Message
from .nodes import decode_graph


def read_graph_def(path: Path | str) -> ModelSpec:
    from ..metagraph import read_file

    path = Path(path)
    blob = read_file(path, "the graph")
    if path.suffix == ".pbtxt":  # tf.io.write_graph(..., as_text=True): the same message, in text
        from .text import text_to_binary

        try:
            text = blob.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FormatError(f"{path}: a .pbtxt should be UTF-8 text, found byte {exc.start}") from None
        blob = text_to_binary(text, str(path))
    msg = Message(blob, str(path))
    first = msg.fields.get(1, [])
    if any(f.wire == VARINT for f in first) or (not first and msg.has(2)):
        # SavedModel: saved_model_schema_version 1 (varint), meta_graphs 2; GraphDef: node 1 (messages)
        raise FormatError(f"{path}: is a SavedModel's saved_model.pb, not a frozen graph; pass the SavedModel's "
                          "directory (with its variables/)")
    if not first or any(f.wire != LEN for f in first):
        raise FormatError(f"{path}: expected a binary GraphDef (a frozen graph), found no nodes; is it the right file?")
    graph = decode_graph(msg, str(path))
    weights = []
    for node in graph.nodes:
        value = node.attrs.get("value") if node.op == "Const" else None
        if isinstance(value, Variable) and value.dtype.is_float and len(value.shape) >= 1:
            weights.append(value)
    return ModelSpec(path=path, format=Format.GRAPH_DEF, variables=tuple(weights), tf_graph=lambda: graph,
                     variable_order=tuple(v.name for v in weights))
