"""Fuzz targets for the TensorFlow readers: protobuf decoder, tables, bundles, object graphs, meta
graphs, slice keys and string tensors. Each target is a ``make`` (rng -> Case) and a ``run`` (path, Case).
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import numpy as np

from tests.fuzzing.binary import (
    BIG_INTS,
    NASTY_TEXT,
    U64,
    encode_tree,
    forge_table,
    mutate_bytes,
    mutate_proto,
    seed_tree,
)
from tests.fuzzing.seeds import (
    CHECKPOINTS,
    DEV_ZERO,
    FIFO,
    Case,
    InvariantError,
    checkpoint_files,
    index_entries,
    meta_graphs,
    object_graphs,
    one_file,
    proto_seeds,
    read_all,
)
from tests.readers.tablebuilder import varint
from tf2torch.errors import FormatError
from tf2torch.readers import slicekey
from tf2torch.readers.crc import crc32c, mask
from tf2torch.readers.table import Table


def make_proto(rng: random.Random) -> Case:
    seed = rng.choice(proto_seeds())
    roll = rng.random()
    if roll < 0.6:
        data = mutate_proto(rng, seed_tree(seed))
    elif roll < 0.95:
        data = mutate_bytes(rng, seed)
    else:
        data = rng.randbytes(rng.randrange(64))
    return one_file("input.pb", data)


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


def run_proto(path: Path, case: Case) -> None:
    _exercise(path.read_bytes(), 0)


def _mutate_entry(rng: random.Random, key: bytes, value: bytes) -> bytes:
    """A BundleEntryProto (or, under the empty key, BundleHeaderProto) with one field made hostile."""
    try:
        tree = seed_tree(value)
    except FormatError:  # already garbled by an earlier edit of this case
        return mutate_bytes(rng, value)
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


def make_table(rng: random.Random) -> Case:
    name = rng.choice(list(CHECKPOINTS))
    entries = index_entries(name)
    if rng.random() < 0.35:
        data = mutate_bytes(rng, checkpoint_files(name)[f"{CHECKPOINTS[name][1]}.index"])
    else:
        data = mutate_index(rng, entries)
    return one_file("table.index", data)


def run_table(path: Path, case: Case) -> None:
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


def make_bundle(rng: random.Random) -> Case:
    name = rng.choice(list(CHECKPOINTS))
    return Case(mutate_checkpoint(rng, name), CHECKPOINTS[name][1], {"verify_crc": rng.random() < 0.8})


def run_bundle(path: Path, case: Case) -> None:
    from tf2torch.readers.checkpoint import read_checkpoint

    read_all(read_checkpoint(path, verify_crc=case.options.get("verify_crc", True)))


def make_objectgraph(rng: random.Random) -> Case:
    seed = rng.choice(object_graphs())
    data = mutate_proto(rng, seed_tree(seed)) if rng.random() < 0.85 else mutate_bytes(rng, seed)
    return one_file("object_graph.pb", data)


def run_objectgraph(path: Path, case: Case) -> None:
    from tf2torch.readers.objectgraph import ObjectGraph

    graph = ObjectGraph.decode(path.read_bytes(), str(path))
    graph.variables()
    graph.resolve("model/_operations/1")
    graph.resolve("a/../b//c")


def make_metagraph(rng: random.Random) -> Case:
    seeds = meta_graphs()
    seed = seeds[-1] if rng.random() < 0.03 else rng.choice(seeds[:-1])  # the full .meta is slow to parse
    data = mutate_proto(rng, seed_tree(seed)) if rng.random() < 0.85 else mutate_bytes(rng, seed)
    return one_file("model.ckpt.meta", data)


def run_metagraph(path: Path, case: Case) -> None:
    from tf2torch.readers.metagraph import read_meta_graph

    read_meta_graph(path)


def make_slicekey(rng: random.Random) -> Case:
    extents = tuple((rng.choice((0, 1, 5, 1 << 40, -1)), rng.choice((-1, 1, 7, 1 << 62)))
                    for _ in range(rng.randrange(1, 5)))
    key = slicekey.encode(rng.choice(NASTY_TEXT[:8] + ("w", "a/b/c")), extents)
    return one_file("key.bin", mutate_bytes(rng, key) if rng.random() < 0.9 else rng.randbytes(rng.randrange(30)))


def run_slicekey(path: Path, case: Case) -> None:
    slicekey.decode(path.read_bytes(), "fuzz")


def make_strings(rng: random.Random) -> Case:
    items = [rng.randbytes(rng.choice((0, 1, 5, 200))) for _ in range(rng.randrange(0, 6))]
    lengths = [len(s) for s in items]
    from tf2torch.readers.strings import _lengths_crc

    crc = _lengths_crc(lengths) if items else 0
    body = b"".join(varint(n) for n in lengths) + mask(crc).to_bytes(4, "little") + b"".join(items)
    data = mutate_bytes(rng, body) if rng.random() < 0.8 else body
    count = len(items) if rng.random() < 0.8 else rng.choice((0, 1, len(items) + 1, 1 << 40))
    return one_file("strings.bin", data, count=count, crc=crc32c(body) if rng.random() < 0.7 else rng.getrandbits(32))


def run_strings(path: Path, case: Case) -> None:
    from tf2torch.readers.strings import decode_string_tensor

    buf = np.frombuffer(path.read_bytes(), np.uint8)
    out = decode_string_tensor(buf, case.options["count"], True, "fuzz", case.options["crc"])
    if out.shape != (case.options["count"],):
        raise InvariantError(f"decoded {out.shape}, expected ({case.options['count']},)")


GRAPHS = Path(__file__).resolve().parents[2] / "fixtures" / "graphs"


def _graph_tree(name: str) -> tuple:
    return seed_tree((GRAPHS / name).read_bytes())


def make_graphdef(rng: random.Random) -> Case:
    """A frozen GraphDef, mutated: nodes, attrs, Const tensors (shapes with huge declared sizes), refs."""
    seed = (GRAPHS / "frozen.pb").read_bytes()
    roll = rng.random()
    data = mutate_proto(rng, _graph_tree("frozen.pb")) if roll < 0.8 else mutate_bytes(rng, seed) if roll < 0.97 \
        else rng.randbytes(rng.randrange(64))
    return one_file("frozen.pb", data)


def run_graphdef(path: Path, case: Case) -> None:
    from tf2torch import api, summary

    spec = api.read(path)
    summary.summarize(spec)  # the survey: inputs, outputs, ops by type, unsupported
    result = api.convert(path, None, dry_run=True)
    compile(result.model_source or "", "model.py", "exec")


def make_tf2graph(rng: random.Random) -> Case:
    """A tf.Module SavedModel whose saved_model.pb is mutated: signatures, the function library (calls,
    output-arg references, OpDefs), bound inputs of the captures."""
    root = GRAPHS / "module"
    files: dict[str, bytes | str] = {p.relative_to(root).as_posix(): p.read_bytes()
                                     for p in sorted(root.rglob("*")) if p.is_file()}
    tree = _graph_tree("module/saved_model.pb")
    files["saved_model.pb"] = mutate_proto(rng, tree) if rng.random() < 0.9 else mutate_bytes(
        rng, files["saved_model.pb"])  # type: ignore[arg-type]
    return Case(files, ".")


def run_tf2graph(path: Path, case: Case) -> None:
    run_graphdef(path, case)


def make_pbtxt(rng: random.Random) -> Case:
    """A text GraphDef (the frozen fixture written as text, once), mutated as text: tokens dropped,
    duplicated, swapped for nasty ones; braces unbalanced; huge numbers."""
    text = _pbtxt_seed()
    tokens = text.split(" ")
    for _ in range(rng.randrange(1, 6)):
        i = rng.randrange(len(tokens))
        roll = rng.random()
        if roll < 0.3:
            del tokens[i]
        elif roll < 0.5:
            tokens.insert(i, tokens[rng.randrange(len(tokens))])
        elif roll < 0.8:
            tokens[i] = rng.choice(("{", "}", "<", ">", "[", "]", ":", '"\\x', "'", "1e999", "-9223372036854775809",
                                    "DT_NOPE", "true", '"\\777"', "#", "\x00", str(1 << 70), *NASTY_TEXT[:4]))
        else:
            tokens[i] = tokens[i] * rng.randrange(2, 50)
    return one_file("frozen.pbtxt", " ".join(tokens).encode("utf-8", "surrogatepass"))


def _pbtxt_seed() -> str:
    return (GRAPHS / "frozen.pbtxt").read_text()


def run_pbtxt(path: Path, case: Case) -> None:
    run_graphdef(path, case)
