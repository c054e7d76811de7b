"""Which reader a path needs (a checkpoint prefix, a SavedModel directory, a Keras file), and ``read``,
which hands the path to it: the one source dispatch, behind ``tf2torch.read`` and every conversion.

Detection looks at names first and confirms with magic bytes, so a text file named ``.h5`` gets a clear
message instead of an HDF5 library error. Each reader is imported by the branch that needs it: listing a
TF1 checkpoint must not load h5py.
"""

from __future__ import annotations

import enum
from pathlib import Path

from ..errors import FormatError, UsageError
from ..spec import ModelSpec

HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
ZIP_MAGIC = b"PK\x03\x04"
TFLITE_IDENTIFIER = b"TFL3"  # a flatbuffer's file identifier sits at bytes 4..8, after the root offset
_CKPT_SUFFIXES = (".index", ".meta")


class Kind(enum.StrEnum):
    CHECKPOINT = "checkpoint"  # a tensor-bundle prefix (TF1 Saver or TF2 tf.train.Checkpoint)
    SAVED_MODEL = "savedmodel"
    KERAS_H5 = "keras-h5"
    KERAS_ZIP = "keras-zip"
    GRAPH_DEF = "graphdef"  # a frozen GraphDef .pb
    TFLITE = "tflite"  # a TFLite flatbuffer (.tflite)
    TASK = "task"  # a MediaPipe task bundle (.task): a zip of .tflite models


def _magic(path: Path, n: int = 8) -> bytes:
    try:
        with path.open("rb") as f:
            return f.read(n)
    except OSError as exc:
        raise FormatError(f"{path}: cannot read ({exc.strerror})") from None


def _prefix_of(path: Path) -> Path | None:
    """The checkpoint prefix a path names: ``x.index``, ``x.meta``, ``x.data-00000-of-00001`` or ``x``."""
    name = path.name
    if path.suffix in _CKPT_SUFFIXES:
        return path.with_suffix("")
    if ".data-" in name:
        return path.with_name(name[: name.index(".data-")])
    if path.with_name(name + ".index").is_file():
        return path
    return None


def _checkpoint_in_dir(path: Path) -> Path | None:
    state = path / "checkpoint"
    if state.is_file():  # tf.train.Saver / CheckpointManager state: model_checkpoint_path: "…"
        for line in state.read_text(encoding="utf-8", errors="replace").splitlines():
            if line.startswith("model_checkpoint_path:"):
                name = line.split(":", 1)[1].strip().strip('"')
                prefix = Path(name) if Path(name).is_absolute() else path / name
                if prefix.with_name(prefix.name + ".index").is_file():
                    return prefix
                # the state file often holds the absolute path of the machine that wrote it
                local = path / Path(name).name
                if local.with_name(local.name + ".index").is_file():
                    return local
    indexes = sorted(path.glob("*.index"))
    if len(indexes) == 1:
        return indexes[0].with_suffix("")
    if len(indexes) > 1:
        names = ", ".join(i.name for i in indexes[:4])
        raise FormatError(f"{path}: holds several checkpoints ({names}); pass one prefix, e.g. {indexes[-1].with_suffix('')}")
    return None


def detect(path: Path) -> tuple[Kind, Path]:
    """The reader kind and the path to hand it (a checkpoint *prefix* for checkpoints)."""
    if path.is_dir():
        if (path / "saved_model.pb").is_file() or (path / "variables" / "variables.index").is_file():
            return Kind.SAVED_MODEL, path
        prefix = _checkpoint_in_dir(path)
        if prefix is not None:
            return Kind.CHECKPOINT, prefix
        if not any(path.iterdir()):
            raise FormatError(f"{path}: the directory is empty; expected a SavedModel or a TF checkpoint")
        raise FormatError(f"{path}: no SavedModel (saved_model.pb) and no checkpoint (*.index) in this directory")
    if path.is_file() and path.suffix in (".h5", ".hdf5", ".keras"):
        magic = _magic(path)
        if magic.startswith(HDF5_MAGIC):
            return Kind.KERAS_H5, path
        if magic.startswith(ZIP_MAGIC):
            return Kind.KERAS_ZIP, path
        expected = "a zip archive (Keras 3 .keras)" if path.suffix == ".keras" else "an HDF5 file"
        raise FormatError(f"{path}: expected {expected}, found {'an empty file' if not magic else 'other bytes'} "
                          f"(first bytes {magic[:8]!r}); is it the right file, fully downloaded?")
    if path.is_file() and path.suffix == ".task":
        magic = _magic(path)
        if not magic.startswith(ZIP_MAGIC):
            raise FormatError(f"{path}: expected a MediaPipe task bundle (a zip), found "
                              f"{'an empty file' if not magic else repr(magic[:8])}; is it fully downloaded?")
        return Kind.TASK, path
    if path.is_file() and (path.suffix == ".tflite" or _magic(path)[4:8] == TFLITE_IDENTIFIER):
        magic = _magic(path)
        if magic[4:8] != TFLITE_IDENTIFIER:
            raise FormatError(f"{path}: expected a TFLite model (identifier 'TFL3' at bytes 4..8), found "
                              f"{'an empty file' if not magic else repr(magic[:8])}; is it fully downloaded?")
        return Kind.TFLITE, path
    if path.is_file() and path.suffix == ".pb":
        if path.name == "saved_model.pb":  # the SavedModel's own proto: read the directory it belongs to
            return Kind.SAVED_MODEL, path.parent
        return Kind.GRAPH_DEF, path
    if path.is_file() and path.suffix == ".pbtxt":
        if path.name == "saved_model.pbtxt":
            raise FormatError(f"{path}: a text-format SavedModel; save it in binary (tf.saved_model.save writes "
                              "saved_model.pb)")
        return Kind.GRAPH_DEF, path
    prefix = _prefix_of(path)
    if prefix is not None and prefix.with_name(prefix.name + ".index").is_file():
        return Kind.CHECKPOINT, prefix
    if prefix is not None and path.suffix == ".index":
        raise FormatError(f"{path}: no such index file")
    if not path.exists():
        raise FormatError(f"{path}: no such file, directory or checkpoint prefix ({path}.index not found)")
    raise FormatError(f"{path}: not a format tf2torch reads; expected a checkpoint prefix, a SavedModel directory, "
                      "a Keras .h5 / .keras file, a frozen graph .pb / .pbtxt, a .tflite model")


def read(path: Path, *, verify_crc: bool = True, config: Path | None = None) -> ModelSpec:
    """The ``ModelSpec`` of any supported source (``tf2torch.api.read`` documents the arguments)."""
    kind, where = detect(path)
    if kind is Kind.CHECKPOINT:
        from .checkpoint import read_checkpoint

        spec = read_checkpoint(where, verify_crc=verify_crc)
    elif kind is Kind.SAVED_MODEL:
        from .checkpoint import read_savedmodel, savedmodel_keras_metadata

        spec = read_savedmodel(where, verify_crc=verify_crc)
        metadata = savedmodel_keras_metadata(where) if config is None else None
        if metadata:  # a tf_keras SavedModel carries its architecture in keras_metadata.pb
            from .with_config import from_keras_metadata

            spec = from_keras_metadata(spec, metadata)
    elif kind is Kind.GRAPH_DEF:
        from .graph.frozen import read_graph_def

        spec = read_graph_def(where)
    elif kind is Kind.TFLITE:
        from .tflite.reader import read_tflite

        spec = read_tflite(where)
    elif kind is Kind.TASK:
        from .tflite.task import read_task

        found = read_task(where)
        if len(found) != 1:
            raise UsageError(f"{path}: a task bundle of {len(found)} models ({', '.join(n for n, _ in found)}); "
                             "`tf2torch convert` writes each into OUTDIR/<name>/, or pass --member NAME")
        spec = found[0][1]
    elif kind is Kind.KERAS_H5:
        from .keras_h5 import read_keras_h5

        spec = read_keras_h5(where)
    else:
        from .keras_zip import read_keras_zip

        spec = read_keras_zip(where)
    if config is not None:
        from .with_config import attach_config

        spec = attach_config(spec, config)
    return spec
