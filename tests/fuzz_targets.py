"""Fuzz targets: each one makes a mutated input from real fixtures and runs one reader over it.

A ``Case`` is files (relative path -> bytes, or a special file) plus the path handed to the reader, so
any case can be written out as a reproducer and re-run. ``make`` is a pure function of its
``random.Random``; ``run`` raises nothing but ``Tf2TorchError`` on hostile input, and checks what a
successful read returns (shapes and dtypes as declared) so that a quiet wrong answer is caught too.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from tests.fuzz_mutators import (
    BIG_INTS,
    NASTY_TEXT,
    U64,
    decode_tree,
    encode_tree,
    forge_table,
    mutate_bytes,
    mutate_h5,
    mutate_json_text,
    mutate_proto,
    mutate_tree,
    mutate_zip,
    seed_tree,
    zip_members,
)
from tests.readers.tablebuilder import varint
from tf2torch.errors import FormatError
from tf2torch.readers import slicekey
from tf2torch.readers.crc import crc32c, mask
from tf2torch.readers.table import Table

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FIFO = "<fifo>"  # a special file: a named pipe (opening it for reading blocks until a writer comes)
DEV_ZERO = "<symlink:/dev/zero>"  # a symlink to an endless file


class InvariantError(AssertionError):
    """A read that succeeded but returned something other than what it declared."""


@dataclass
class Case:
    files: dict[str, bytes | str]  # bytes, or FIFO / DEV_ZERO
    entry: str  # the path given to the reader, relative to the case directory
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Target:
    name: str
    weight: float  # share of --cases (cost differs ~20x between targets)
    make: Callable[[random.Random], Case]
    run: Callable[[Path, Case], None]
    doc: str


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


# --- the targets -----------------------------------------------------------------------------------

def _one(name: str, data: bytes, **options: Any) -> Case:
    return Case({name: data}, name, options)


def _make_proto(rng: random.Random) -> Case:
    seed = rng.choice(proto_seeds())
    roll = rng.random()
    if roll < 0.6:
        data = mutate_proto(rng, seed_tree(seed))
    elif roll < 0.95:
        data = mutate_bytes(rng, seed)
    else:
        data = rng.randbytes(rng.randrange(64))
    return _one("input.pb", data)


def _exercise(buf: Any, depth: int) -> None:
    from tf2torch.readers.proto import LEN, Message

    msg = Message(buf, "fuzz")
    for number in list(msg.fields):
        for accessor in (msg.uint, msg.int64, msg.flag, msg.fixed32, msg.float32, msg.blob, msg.string,
                         msg.repeated_uints, msg.repeated_ints, msg.repeated_floats, msg.repeated_strings):
            try:
                accessor(number)
            except FormatError:
                pass
        for f in msg.fields[number]:
            if f.wire == LEN and depth < 4:
                try:
                    _exercise(f.value, depth + 1)
                except FormatError:
                    pass


def _run_proto(path: Path, case: Case) -> None:
    _exercise(path.read_bytes(), 0)


def _mutate_entry(rng: random.Random, key: bytes, value: bytes) -> bytes:
    """A BundleEntryProto (or, under the empty key, BundleHeaderProto) with one field made hostile."""
    tree = seed_tree(value)
    if rng.random() < 0.35:
        return mutate_proto(rng, tree)
    if key == b"":
        number = rng.choice((1, 2, 3))
        new = {1: (1, 0, rng.choice((0, 2, 3, 1 << 20, U64))), 2: (2, 0, 1),
               3: (3, 2, ((1, 0, 1), (2, 0, rng.choice((1, 2, U64))), (3, 0, rng.choice((0, 1, 2)))))}[number]
    else:
        number = rng.choice((1, 2, 2, 3, 4, 4, 5, 5, 6, 7))
        if number == 1:
            new = (1, 0, rng.choice((0, 1, 2, 3, 7, 10, 14, 19, 20, 21, 23, 24, 101, 107, 121, 999, U64)))
        elif number == 2:
            dims = rng.choice(([], [0], [1 << 40], [1 << 31, 1 << 31], [U64], [1] * 70, [2, 3], [3, 2],
                               [1 << 21] * 3, [5, 4], [7, 2]))
            shape = tuple((2, 2, ((1, 0, d),)) for d in dims)
            new = (2, 2, shape + (((3, 0, 1),) if rng.random() < 0.1 else ()))
        elif number == 3:
            new = (3, 0, rng.choice((1, 2, 5, 1 << 31, U64)))
        elif number in (4, 5):
            new = (number, 0, rng.choice(BIG_INTS + (30000, 29969, 29970, 17628)))
        elif number == 6:
            new = (6, 5, rng.getrandbits(32))
        else:
            extents = tuple((1, 2, ((1, 0, rng.choice((0, 1, 3, U64))),) + (((2, 0, rng.choice((0, 1, 2, U64))),)
                                                                         if rng.random() < 0.7 else ()))
                            for _ in range(rng.choice((1, 2, 3))))
            new = (7, 2, extents)
    kept = tuple(f for f in tree if f[0] != new[0])
    return encode_tree(kept + (new,) if rng.random() < 0.8 else kept)


def _mutate_key(rng: random.Random, key: bytes) -> bytes:
    roll = rng.random()
    if roll < 0.3 and key.startswith(b"\x00"):
        return mutate_bytes(rng, key)  # a broken slice key
    if roll < 0.5:
        name = rng.choice(NASTY_TEXT).encode("utf-8", "surrogatepass")
        return slicekey.encode(name.decode("utf-8", "replace"), ((0, rng.choice((1, -1))),)) if rng.random() < 0.3 else name
    if roll < 0.7:
        return b"\xff\xfe" + key  # not UTF-8
    return mutate_bytes(rng, key)


def mutate_index(rng: random.Random, entries: tuple[tuple[bytes, bytes], ...]) -> bytes:
    entries_l = list(entries)
    for _ in range(rng.choice((1, 1, 2))):
        i = rng.randrange(len(entries_l))
        key, value = entries_l[i]
        roll = rng.random()
        if roll < 0.6:
            entries_l[i] = (key, _mutate_entry(rng, key, value))
        elif roll < 0.75 and key:
            entries_l[i] = (_mutate_key(rng, key), value)
        elif roll < 0.82:
            entries_l.insert(i, (key, value))  # duplicated key
        elif roll < 0.9 and len(entries_l) > 1:
            del entries_l[i]
        elif roll < 0.95:
            j = rng.randrange(len(entries_l))
            entries_l[i], entries_l[j] = entries_l[j], entries_l[i]
        else:
            entries_l.append((b"\xff" * 3, rng.choice([v for _, v in entries_l])))
    if rng.random() < 0.85:  # usually keep the table sorted, so the reader gets past the order check
        entries_l.sort(key=lambda kv: kv[0])
    return forge_table(rng, entries_l)


def _make_table(rng: random.Random) -> Case:
    name = rng.choice(list(CHECKPOINTS))
    entries = index_entries(name)
    if rng.random() < 0.35:
        data = mutate_bytes(rng, checkpoint_files(name)[f"{CHECKPOINTS[name][1]}.index"])
    else:
        data = mutate_index(rng, entries)
    return _one("table.index", data)


def _run_table(path: Path, case: Case) -> None:
    for key, value in Table(path):
        if not isinstance(key, bytes) or not isinstance(value, bytes):
            raise InvariantError("table yielded non-bytes")


def mutate_checkpoint(rng: random.Random, name: str, with_meta: bool = False) -> dict[str, bytes | str]:
    files: dict[str, bytes | str] = dict(checkpoint_files(name, with_meta))
    prefix = CHECKPOINTS[name][1]
    index = f"{prefix}.index"
    for _ in range(rng.choice((1, 1, 2))):
        shards = sorted(n for n, body in files.items() if ".data-" in n and isinstance(body, bytes))
        if not shards:
            break
        roll = rng.random()
        if roll < 0.55:
            files[index] = mutate_index(rng, index_entries(name))
        elif roll < 0.65:
            files[index] = mutate_bytes(rng, files[index])  # type: ignore[arg-type]
        elif roll < 0.9:
            shard = rng.choice(shards)
            files[shard] = mutate_bytes(rng, files[shard])  # type: ignore[arg-type]  # flips: CRC mismatches
        elif roll < 0.95:
            del files[rng.choice(shards)]  # a missing shard
        else:
            files[rng.choice(shards)] = rng.choice((FIFO, DEV_ZERO))
    if with_meta and f"{prefix}.meta" in files and rng.random() < 0.3:
        files[f"{prefix}.meta"] = mutate_proto(rng, seed_tree(files[f"{prefix}.meta"]))  # type: ignore[arg-type]
    return files


def _make_bundle(rng: random.Random) -> Case:
    name = rng.choice(list(CHECKPOINTS))
    return Case(mutate_checkpoint(rng, name), CHECKPOINTS[name][1], {"verify_crc": rng.random() < 0.8})


def _run_bundle(path: Path, case: Case) -> None:
    from tf2torch.readers.checkpoint import read_checkpoint

    read_all(read_checkpoint(path, verify_crc=case.options.get("verify_crc", True)))


def _make_objectgraph(rng: random.Random) -> Case:
    seed = rng.choice(object_graphs())
    data = mutate_proto(rng, seed_tree(seed)) if rng.random() < 0.85 else mutate_bytes(rng, seed)
    return _one("object_graph.pb", data)


def _run_objectgraph(path: Path, case: Case) -> None:
    from tf2torch.readers.objectgraph import ObjectGraph

    graph = ObjectGraph.decode(path.read_bytes(), str(path))
    graph.variables()
    graph.resolve("model/_operations/1")
    graph.resolve("a/../b//c")


def _make_metagraph(rng: random.Random) -> Case:
    seeds = meta_graphs()
    seed = seeds[-1] if rng.random() < 0.03 else rng.choice(seeds[:-1])  # the full .meta is slow to parse
    data = mutate_proto(rng, seed_tree(seed)) if rng.random() < 0.85 else mutate_bytes(rng, seed)
    return _one("model.ckpt.meta", data)


def _run_metagraph(path: Path, case: Case) -> None:
    from tf2torch.readers.metagraph import read_meta_graph

    read_meta_graph(path)


def _make_config(rng: random.Random) -> Case:
    config = rng.choice(json_configs())
    return _one("model.json", mutate_json_text(rng, config).encode("utf-8", "surrogatepass"),
                version=rng.choice((None, 2, 3, 4)), as_object=rng.random() < 0.5)


def _run_config(path: Path, case: Case) -> None:
    from tf2torch.readers.keras_config import parse_model_config, parse_model_json

    text = path.read_bytes().decode("utf-8", "surrogatepass")
    if case.options.get("as_object"):
        try:
            obj = json.loads(text)
        except (ValueError, RecursionError):  # what json itself refuses is not the parser's input
            obj = None
        if obj is not None:
            parse_model_config(obj, case.options.get("version"), where=str(path))
            return
    parse_model_json(text, where=str(path))


def _make_keras_h5(rng: random.Random) -> Case:
    rel = rng.choice(H5_FILES)
    data = (FIXTURES / rel).read_bytes()
    config = rng.choice(json_configs())
    data = mutate_h5(rng, data, config) if rng.random() < 0.8 else mutate_bytes(rng, data)
    options = {"config_json": mutate_json_text(rng, config) if rng.random() < 0.5 else json.dumps(config)} \
        if "weights" in rel and rng.random() < 0.2 else {}
    return _one(Path(rel).name, data, **options)


def _run_keras_h5(path: Path, case: Case) -> None:
    from tf2torch.readers.keras_h5 import read_keras_h5

    read_all(read_keras_h5(path, case.options.get("config_json")))


def _make_keras_zip(rng: random.Random) -> Case:
    return _one("model.keras", mutate_zip(rng, (FIXTURES / "keras3/cnn.keras").read_bytes()))


def _run_keras_zip(path: Path, case: Case) -> None:
    from tf2torch.readers.keras_zip import read_keras_zip

    read_all(read_keras_zip(path))


DETECT_NAMES = ("x.h5", "x.keras", "x.hdf5", "x.weights.h5", "model.ckpt.index", "model.ckpt.meta",
                "model.ckpt.data-00000-of-00001", "checkpoint", "saved_model.pb", "saved_model.pbtxt",
                "variables/variables.index", "x.pt", "x.pkl", "sub/checkpoint", "sub/a.index", "sub/b.index")


def _make_detect(rng: random.Random) -> Case:
    contents: list[bytes | str] = [b"", b"hello\n", b"\x89PNG\r\n\x1a\n" + bytes(40), b"\x89HDF\r\n\x1a\n" + bytes(8),
                                   b"PK\x03\x04" + bytes(30), (FIXTURES / "keras3/cnn.keras").read_bytes()[:200],
                                   FIFO, DEV_ZERO, b"\x80\x02}q\x00."]  # the last: a pickle
    files: dict[str, bytes | str] = {}
    for name in rng.sample(DETECT_NAMES, rng.randrange(1, 5)):
        if name.endswith("checkpoint"):
            target = rng.choice(("model.ckpt", "/elsewhere/model.ckpt", "../x", 'a"b', "\\x", "sub/a", "", "a\\\"b"))
            files[name] = rng.choice((f'model_checkpoint_path: "{target}"\n'.encode(), mutate_bytes(rng, b'model_checkpoint_path: "model.ckpt"\n')))
        else:
            files[name] = rng.choice(contents)
    entry = rng.choice(list(files) + [".", "sub", "model.ckpt", "missing", "x", "variables"])
    return Case(files, entry)


def _run_detect(path: Path, case: Case) -> None:
    from tf2torch.readers.checkpoint import resolve_prefix
    from tf2torch.readers.detect import Kind, detect

    kind, where = detect(path)
    if kind is Kind.CHECKPOINT:
        resolve_prefix(where)


def _make_slicekey(rng: random.Random) -> Case:
    extents = tuple((rng.choice((0, 1, 5, 1 << 40, -1)), rng.choice((-1, 1, 7, 1 << 62)))
                    for _ in range(rng.randrange(1, 5)))
    key = slicekey.encode(rng.choice(NASTY_TEXT[:8] + ("w", "a/b/c")), extents)
    return _one("key.bin", mutate_bytes(rng, key) if rng.random() < 0.9 else rng.randbytes(rng.randrange(30)))


def _run_slicekey(path: Path, case: Case) -> None:
    slicekey.decode(path.read_bytes(), "fuzz")


def _make_strings(rng: random.Random) -> Case:
    items = [rng.randbytes(rng.choice((0, 1, 5, 200))) for _ in range(rng.randrange(0, 6))]
    lengths = [len(s) for s in items]
    from tf2torch.readers.strings import _lengths_crc

    crc = _lengths_crc(lengths) if items else 0
    body = b"".join(varint(n) for n in lengths) + mask(crc).to_bytes(4, "little") + b"".join(items)
    data = mutate_bytes(rng, body) if rng.random() < 0.8 else body
    count = len(items) if rng.random() < 0.8 else rng.choice((0, 1, len(items) + 1, 1 << 40))
    return _one("strings.bin", data, count=count, crc=crc32c(body) if rng.random() < 0.7 else rng.getrandbits(32))


def _run_strings(path: Path, case: Case) -> None:
    from tf2torch.readers.strings import decode_string_tensor

    buf = np.frombuffer(path.read_bytes(), np.uint8)
    out = decode_string_tensor(buf, case.options["count"], True, "fuzz", case.options["crc"])
    if out.shape != (case.options["count"],):
        raise InvariantError(f"decoded {out.shape}, expected ({case.options['count']},)")


def _make_savedmodel(rng: random.Random) -> Case:
    which = rng.choice(("keras2", "keras3"))
    root = FIXTURES / "savedmodel" / which
    files: dict[str, bytes | str] = {p.relative_to(root).as_posix(): p.read_bytes()
                                     for p in sorted(root.rglob("*")) if p.is_file()}
    roll = rng.random()
    if roll < 0.3:
        files["saved_model.pb"] = mutate_proto(rng, _saved_model_tree(which))
    elif roll < 0.65 and "keras_metadata.pb" in files:
        files["keras_metadata.pb"] = _mutate_keras_metadata(rng, files["keras_metadata.pb"])  # type: ignore[arg-type]
    else:
        variables = mutate_checkpoint(rng, f"sm_{which}")
        files = {k: v for k, v in files.items() if not k.startswith("variables/")}
        files.update({f"variables/{k}": v for k, v in variables.items()})
    return Case(files, ".")


@cache
def _saved_model_tree(which: str) -> tuple:
    return decode_tree((FIXTURES / f"savedmodel/{which}/saved_model.pb").read_bytes())


def _mutate_keras_metadata(rng: random.Random, data: bytes) -> bytes:
    tree = seed_tree(data)
    if rng.random() < 0.3:
        return mutate_proto(rng, tree)
    nodes = [i for i, f in enumerate(tree) if f[0] == 1 and isinstance(f[2], tuple)]
    i = rng.choice(nodes)
    node = list(tree[i][2])
    for j, (number, _wire, value) in enumerate(node):
        if number == 5:  # the node's metadata JSON
            text = bytes(value) if isinstance(value, bytes) else encode_tree(value)
            try:
                new = mutate_json_text(rng, json.loads(text)).encode("utf-8", "surrogatepass")
            except ValueError:
                new = mutate_bytes(rng, text)
            node[j] = (5, 2, new)
    return encode_tree(tree[:i] + ((1, 2, tuple(node)),) + tree[i + 1:])


def _run_savedmodel(path: Path, case: Case) -> None:
    from tf2torch import api

    read_all(api.read(path))


CONVERT_SOURCES = ("tf1", "tf1_sharded", "tf2_keras2", "tf2_keras3", "savedmodel", "h5", "keras")


def _make_convert(rng: random.Random) -> Case:
    kind = rng.choice(CONVERT_SOURCES)
    options: dict[str, Any] = {"produce": rng.random() < 0.3}
    if kind in CHECKPOINTS:
        files = mutate_checkpoint(rng, kind, with_meta=kind == "tf1")
        entry = CHECKPOINTS[kind][1]
        if kind.startswith("tf2") and rng.random() < 0.5:
            config = json.loads((CHECKPOINTS[kind][0] / "model.json").read_text())
            files["model.json"] = (mutate_json_text(rng, config) if rng.random() < 0.5 else json.dumps(config)).encode(
                "utf-8", "surrogatepass")
            options["config"] = "model.json"
        return Case(files, entry, options)
    if kind == "savedmodel":
        case = _make_savedmodel(rng)
        case.options.update(options)
        return case
    case = _make_keras_h5(rng) if kind == "h5" else _make_keras_zip(rng)
    case.options = options
    return case


def _run_convert(path: Path, case: Case) -> None:
    from tf2torch import api

    config = case.options.get("config")
    result = api.convert(path, None, dry_run=True, config=path.parent / config if config else None)
    if result.model_source is not None:
        compile(result.model_source, "model.py", "exec")
    if case.options.get("produce"):
        for plan in result.plans:
            check_array(plan.produce(), plan.shape, plan.dtype, f"plan {plan.key!r}")


TARGETS: dict[str, Target] = {t.name: t for t in (
    Target("proto", 8, _make_proto, _run_proto, "protobuf wire decoder and every typed accessor"),
    Target("table", 8, _make_table, _run_table, "LevelDB table: footer, blocks, restarts, CRCs"),
    Target("bundle", 9, _make_bundle, _run_bundle, "tensor bundle header/entries/shards, every tensor read"),
    Target("objectgraph", 6, _make_objectgraph, _run_objectgraph, "TF2 TrackableObjectGraph decoding"),
    Target("metagraph", 4, _make_metagraph, _run_metagraph, ".meta MetaGraphDef ops and variables"),
    Target("keras_config", 8, _make_config, _run_config, "parse_model_config / parse_model_json"),
    Target("keras_h5", 5, _make_keras_h5, _run_keras_h5, "Keras .h5 / .weights.h5, every weight read"),
    Target("keras_zip", 4, _make_keras_zip, _run_keras_zip, "Keras 3 .keras archive, every weight read"),
    Target("savedmodel", 3, _make_savedmodel, _run_savedmodel, "SavedModel dir incl. keras_metadata.pb"),
    Target("detect", 4, _make_detect, _run_detect, "format detection and checkpoint state files"),
    Target("slicekey", 3, _make_slicekey, _run_slicekey, "partitioned-variable slice keys"),
    Target("strings", 3, _make_strings, _run_strings, "DT_STRING tensor layout"),
    Target("convert", 5, _make_convert, _run_convert, "api.convert(dry_run=True), plans produced on 30%"),
)}


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


__all__ = ["TARGETS", "Case", "Target", "InvariantError", "materialize", "mutate_tree"]
