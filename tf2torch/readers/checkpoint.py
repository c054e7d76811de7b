"""Entry points: a TF checkpoint or SavedModel directory -> ``ModelSpec``, never importing TensorFlow.

Example::

    from tf2torch.readers.checkpoint import read_checkpoint
    spec = read_checkpoint("runs/ckpt")          # a prefix, a .index file, or a directory
    kernel = spec["model/layer_with_weights-0/kernel"].read()
"""

from __future__ import annotations

import re
from pathlib import Path

from ..errors import FormatError
from ..spec import Format, ModelSpec, Role, Variable
from .bundle import Bundle
from .graph.savedmodel import read_savedmodel_graph
from .jsonsafe import load_json
from .metagraph import meta_graph_ops, parse_meta_graph, read_meta_graph, read_meta_tf_graph
from .objectgraph import GRAPH_KEY, VALUE_SUFFIX, ObjectGraph
from .proto import Message
from .roles import classify_tf1

STATE_FILE = "checkpoint"  # text CheckpointState written next to checkpoints by TF
_STATE_LINE = re.compile(r'^\s*model_checkpoint_path\s*:\s*"((?:[^"\\]|\\.)*)"', re.MULTILINE)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "'": "'", "\\": "\\"}


def _unescape(text: str) -> str:
    """Text-format protobuf string escapes (\\", \\\\, \\n, octal \\ooo) as TF writes them."""
    out = re.sub(r"\\([0-7]{1,3}|.)", lambda m: chr(int(m[1], 8)) if m[1][0] in "01234567"
                 else _ESCAPES.get(m[1], m[1]), text)
    try:  # octal escapes are UTF-8 bytes; text already holding non-ASCII characters is kept as is
        return out.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        return out


def resolve_prefix(path: Path | str) -> Path:
    """The checkpoint prefix for a prefix, a ``.index`` / ``.data-*`` / ``.meta`` file, or a directory
    (via its ``checkpoint`` state file, else its only ``.index``)."""
    path = Path(path)
    if path.is_dir():
        state = path / STATE_FILE
        if state.is_file():
            found = _STATE_LINE.search(state.read_text(encoding="utf-8", errors="replace"))
            if not found:
                raise FormatError(f"{state}: expected a line 'model_checkpoint_path: \"...\"', found none; "
                                  "pass the checkpoint prefix instead")
            prefix = Path(_unescape(found[1]))
            # Relative paths are relative to the directory. Saver writes absolute ones: when the
            # directory was copied or moved, the checkpoint of that name inside it is the one meant.
            if not prefix.is_absolute():
                prefix = path / prefix
            elif Path(f"{path / prefix.name}.index").is_file():
                prefix = path / prefix.name
        else:
            indexes = sorted(path.glob("*.index"))
            if len(indexes) != 1:
                raise FormatError(f"{path}: expected a '{STATE_FILE}' file or exactly one *.index, found "
                                  f"{len(indexes)} index files; pass the checkpoint prefix instead")
            prefix = indexes[0].with_suffix("")
    else:
        name = re.sub(r"\.(index|meta|data-\d{5}-of-\d{5})$", "", path.name)
        prefix = path.with_name(name)
    if not Path(f"{prefix}.index").is_file():
        raise FormatError(f"{prefix}.index: expected a TensorFlow checkpoint index there, found no file; "
                          "pass the prefix (the path without .index / .data-*)")
    return prefix


def _tf2_variables(bundle: Bundle, graph: ObjectGraph) -> list[Variable]:
    info = graph.variables()
    out = []
    for key in bundle.entries:
        if key == GRAPH_KEY:
            out.append(bundle.variable(key, role=Role.BOOKKEEPING, note="serialized TrackableObjectGraph"))
        elif key in info:
            v = info[key]
            out.append(bundle.variable(key, v.name, v.role, v.note, v.tf_name))
        else:  # a key no object claims (e.g. written by a custom saveable): fall back to its name
            out.append(bundle.variable(key, None, *classify_tf1(key)))
    return out


def _read_bundle(prefix: Path, verify_crc: bool) -> tuple[Bundle, ObjectGraph | None, list[Variable]]:
    bundle = Bundle(prefix, verify_crc)
    if GRAPH_KEY in bundle.entries:
        blob = bundle.read(GRAPH_KEY).reshape(-1)
        if blob.size != 1:
            raise FormatError(f"{bundle.index_path} variable {GRAPH_KEY!r}: expected one serialized "
                              f"object graph, found {blob.size} strings; re-save the checkpoint")
        graph = ObjectGraph.decode(blob[0], f"{bundle.index_path} {GRAPH_KEY}")
        return bundle, graph, _tf2_variables(bundle, graph)
    return bundle, None, [bundle.variable(k, None, *classify_tf1(k)) for k in bundle.entries]


def read_checkpoint(path: Path | str, verify_crc: bool = True) -> ModelSpec:
    """A TF1 (``Saver``) or TF2 (``tf.train.Checkpoint``) checkpoint, lazily.

    Args:
        path: the checkpoint prefix, its ``.index`` file, or a directory with a ``checkpoint`` file.
        verify_crc: check the CRC32C of every tensor when it is read.
    Returns:
        A ``ModelSpec``: TF2_CHECKPOINT when an object graph is stored, else TF1_CHECKPOINT with
        ``ops`` from ``PREFIX.meta`` when that file exists.
    """
    prefix = resolve_prefix(path)
    bundle, graph, variables = _read_bundle(prefix, verify_crc)
    meta = Path(f"{prefix}.meta")
    parsed = read_meta_graph(meta) if meta.is_file() and graph is None else None
    return ModelSpec(
        path=Path(f"{prefix}.index"),
        format=Format.TF2_CHECKPOINT if graph is not None else Format.TF1_CHECKPOINT,
        variables=tuple(variables),
        ops=parsed.ops if parsed else (meta_graph_ops(meta) if meta.is_file() else ()),
        notes=tuple(bundle.notes),
        variable_order=parsed.variable_order if parsed else (),
        tf_graph=(lambda: read_meta_tf_graph(meta)) if parsed else None,
        graph_placeholders=parsed.placeholders if parsed else True,
    )


def read_object_graph(path: Path | str, verify_crc: bool = True) -> ObjectGraph | None:
    """The decoded object graph of a TF2 checkpoint or SavedModel (None for TF1 checkpoints)."""
    path = Path(path)
    prefix = path / "variables" / "variables" if (path / "saved_model.pb").is_file() else resolve_prefix(path)
    return _read_bundle(prefix, verify_crc)[1]


def _savedmodel_dir(path: Path | str) -> Path:
    path = Path(path)
    if path.is_file() and path.name == "saved_model.pb":
        path = path.parent
    if not (path / "saved_model.pb").is_file():
        hint = " (text .pbtxt SavedModels are not supported)" if (path / "saved_model.pbtxt").exists() else ""
        raise FormatError(f"{path}: expected a SavedModel directory with saved_model.pb, found none{hint}; "
                          "pass the directory tf.saved_model.save wrote")
    return path


def read_savedmodel(path: Path | str, verify_crc: bool = True) -> ModelSpec:
    """A SavedModel directory: its ``variables/variables.*`` bundle, and conv/pool/BN ops when its first
    meta graph is a TF1 graph (TF2 SavedModels keep ops inside functions, which are not searched)."""
    root = _savedmodel_dir(path)
    prefix = root / "variables" / "variables"
    variables: list[Variable] = []
    notes: list[str] = []
    node_variables: dict[int, str] = {}
    if Path(f"{prefix}.index").is_file():
        bundle, objects, variables = _read_bundle(prefix, verify_crc)
        notes += bundle.notes
        if objects is not None:  # object-graph node -> variable: how signatures' captures are resolved
            node_variables = {v.node: v.name for v in objects.variables().values() if v.key.endswith(VALUE_SUFFIX)}
    else:
        notes.append("the SavedModel has no variables/variables.index: it holds no variables")
    where = str(root / "saved_model.pb")
    metas = Message((root / "saved_model.pb").read_bytes(), where).repeated_bytes(2)  # SavedModel.meta_graphs
    ops = parse_meta_graph(metas[0], f"{where} meta_graphs[0]").ops if metas else ()
    return ModelSpec(path=root, format=Format.SAVED_MODEL, variables=tuple(variables), ops=ops, notes=tuple(notes),
                     tf_graph=lambda: read_savedmodel_graph(root, node_variables))


def savedmodel_keras_metadata(path: Path | str) -> list[dict] | None:
    """The Keras (tf.keras / tf_keras) ``keras_metadata.pb`` of a SavedModel, or None without one.

    ``SavedMetadata.nodes`` (1) are ``SavedObject``: node_id 2, node_path 3 ("root.layer-0"),
    identifier 4 ("_tf_keras_layer", ...), metadata 5 (JSON), version 6 {producer 1, min_consumer 2}.
    Returns one dict per node: those fields, with ``metadata`` decoded from JSON.
    """
    file = _savedmodel_dir(path) / "keras_metadata.pb"
    if not file.is_file():
        return None
    out = []
    for i, node in enumerate(Message(file.read_bytes(), str(file)).messages(1, "nodes")):
        metadata = load_json(node.string(5) or "{}", f"{file}: node {i}", "metadata JSON (re-save the model)")
        version = node.message(6, "version")
        out.append({
            "node_id": node.int64(2),
            "node_path": node.string(3),
            "identifier": node.string(4),
            "metadata": metadata,
            "version": {"producer": version.int64(1), "min_consumer": version.int64(2)},
        })
    return out


__all__ = ["read_checkpoint", "read_savedmodel", "savedmodel_keras_metadata", "read_object_graph",
           "resolve_prefix"]
