"""What every fuzz case is made from and checked against: fixture seeds, the ``Case``, read checks.

A ``Case`` is files (relative path -> bytes, or a special file) plus the path handed to the reader, so any
case can be written out as a reproducer and re-run. Seeds are the committed fixtures (``fixtures/``),
read once per process. A successful read must return what it declared (shape, dtype), so a quiet wrong
answer fails a case just as a crash does.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from tests.fuzzing.binary import decode_tree, encode_tree
from tests.fuzzing.keras_files import zip_members
from tf2torch.readers.table import Table

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"
FIFO = "<fifo>"  # a special file: a named pipe (opening it for reading blocks until a writer comes)
DEV_ZERO = "<symlink:/dev/zero>"  # a symlink to an endless file


class InvariantError(AssertionError):
    """A read that succeeded but returned something other than what it declared."""


@dataclass
class Case:
    files: dict[str, bytes | str]  # bytes, or FIFO / DEV_ZERO
    entry: str  # the path given to the reader, relative to the case directory
    options: dict[str, Any] = field(default_factory=dict)


def one_file(name: str, data: bytes, **options: Any) -> Case:
    return Case({name: data}, name, options)


def materialize(case: Case, root: Path) -> Path:
    """Write the case's files under ``root``; returns the path to hand the reader."""
    for rel, body in case.files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if body == FIFO:
            os.mkfifo(path)
        elif body == DEV_ZERO:
            os.symlink("/dev/zero", path)
        else:
            path.write_bytes(body)  # type: ignore[arg-type]
    return root / case.entry


# --- seeds (fixtures, read once per process) ----------------------------------------------------------

CHECKPOINTS = {  # name -> (directory, prefix inside it)
    "tf1": (FIXTURES / "tf1", "model.ckpt"),
    "tf1_sharded": (FIXTURES / "tf1_sharded", "model.ckpt"),
    "tf2_keras2": (FIXTURES / "tf2/keras2", "ckpt"),
    "tf2_keras3": (FIXTURES / "tf2/keras3", "ckpt"),
    "sm_keras2": (FIXTURES / "savedmodel/keras2/variables", "variables"),
    "sm_keras3": (FIXTURES / "savedmodel/keras3/variables", "variables"),
}
H5_FILES = ("keras2/cnn.h5", "keras2/cnn_weights.h5", "keras3/cnn.h5", "keras3/cnn.weights.h5")


@cache
def checkpoint_files(name: str, with_meta: bool = False) -> dict[str, bytes]:
    folder, prefix = CHECKPOINTS[name]
    return {p.name: p.read_bytes() for p in sorted(folder.glob(f"{prefix}.*"))
            if with_meta or not p.name.endswith(".meta")}


@cache
def index_entries(name: str) -> tuple[tuple[bytes, bytes], ...]:
    folder, prefix = CHECKPOINTS[name]
    return tuple(Table(folder / f"{prefix}.index"))


@cache
def object_graphs() -> tuple[bytes, ...]:
    from tf2torch.readers.bundle import Bundle
    from tf2torch.readers.objectgraph import GRAPH_KEY

    blobs = []
    for name in ("tf2_keras2", "tf2_keras3", "sm_keras2", "sm_keras3"):
        folder, prefix = CHECKPOINTS[name]
        blobs.append(bytes(Bundle(folder / prefix).read(GRAPH_KEY).reshape(-1)[0]))
    return tuple(blobs)


@cache
def meta_graphs() -> tuple[bytes, ...]:
    """Meta graphs of the fixtures, each also reduced to the nodes the reader looks at (fast cases)."""
    blobs = [(FIXTURES / "tf1/model.ckpt.meta").read_bytes(), (FIXTURES / "wrn16_2/model.ckpt.meta").read_bytes()]
    for sm in ("keras2", "keras3"):
        saved = decode_tree((FIXTURES / f"savedmodel/{sm}/saved_model.pb").read_bytes())
        blobs.append(encode_tree(next(v for n, _, v in saved if n == 2)))
    reduced = [encode_tree(_reduce_meta(decode_tree(b))) for b in blobs]
    return tuple(reduced + blobs[:1])


def _reduce_meta(meta: tuple) -> tuple:
    keep_ops = {b"VariableV2", b"VarHandleOp", b"Identity", b"ReadVariableOp", b"ConcatV2", b"Conv2D",
                b"MaxPool", b"AvgPool", b"FusedBatchNormV3", b"DepthwiseConv2dNative", b"Cast", b"Const"}
    out = []
    for number, wire, value in meta:
        if number == 2 and isinstance(value, tuple):  # graph_def: keep interesting nodes only
            nodes = [f for f in value if f[0] == 1 and isinstance(f[2], tuple)
                     and any(n == 2 and v in keep_ops for n, _, v in f[2] if isinstance(v, bytes))]
            value = tuple(nodes[:120])
        elif number not in (4,):
            continue
        out.append((number, wire, value))
    return tuple(out)


@cache
def proto_seeds() -> tuple[bytes, ...]:
    seeds = [(FIXTURES / "savedmodel/keras2/keras_metadata.pb").read_bytes(),
             (FIXTURES / "savedmodel/keras3/fingerprint.pb").read_bytes()]
    seeds += [v for name in CHECKPOINTS for _, v in index_entries(name)[:12]]
    return tuple(seeds) + object_graphs() + meta_graphs()[:4]


@cache
def json_configs() -> tuple[Any, ...]:
    import h5py

    configs = [json.loads(dict(zip_members((FIXTURES / "keras3/cnn.keras").read_bytes()))["config.json"])]
    for rel in ("keras2/cnn.h5", "keras3/cnn.h5"):
        with h5py.File(FIXTURES / rel, "r") as f:
            raw = f.attrs["model_config"]
            configs.append(json.loads(raw.decode() if isinstance(raw, bytes) else raw))
    configs += [json.loads((FIXTURES / f"tf2/{k}/model.json").read_text()) for k in ("keras2", "keras3")]
    return tuple(configs)


# --- checks on what a successful read returns ----------------------------------------------------------

def check_array(array: Any, shape: tuple[int, ...], dtype: Any, what: str) -> None:
    if not isinstance(array, np.ndarray):
        raise InvariantError(f"{what}: read returned {type(array).__name__}, not an ndarray")
    want = np.dtype(object) if dtype.name == "string" else np.dtype(dtype.storage)
    if array.shape != tuple(shape) or array.dtype != want:
        raise InvariantError(f"{what}: declared {dtype.name}{tuple(shape)}, read {array.dtype}{array.shape}")


def read_all(spec: Any) -> None:
    """Read every variable of a ModelSpec; a Tf2TorchError of one variable does not hide the others."""
    from tf2torch.errors import Tf2TorchError

    first: Tf2TorchError | None = None
    for var in spec.variables:
        try:
            check_array(var.read(), var.shape, var.dtype, f"variable {var.name!r}")
        except Tf2TorchError as exc:
            first = first or exc
    if first is not None:
        raise first
