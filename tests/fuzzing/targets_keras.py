"""Fuzz targets for the Keras readers and the whole pipeline: config JSON, .h5, .keras, SavedModel
directories, format detection, and ``api.convert(dry_run=True)`` with plans produced on a fraction.
"""

from __future__ import annotations

import json
import random
from functools import cache
from pathlib import Path
from typing import Any

from tests.fuzzing.binary import decode_tree, encode_tree, mutate_bytes, mutate_proto, seed_tree
from tests.fuzzing.keras_files import mutate_h5, mutate_json_text, mutate_zip
from tests.fuzzing.seeds import (
    CHECKPOINTS,
    DEV_ZERO,
    FIFO,
    FIXTURES,
    H5_FILES,
    Case,
    check_array,
    json_configs,
    one_file,
    read_all,
)
from tests.fuzzing.targets_tf import mutate_checkpoint


def make_config(rng: random.Random) -> Case:
    config = rng.choice(json_configs())
    return one_file("model.json", mutate_json_text(rng, config).encode("utf-8", "surrogatepass"),
                version=rng.choice((None, 2, 3, 4)), as_object=rng.random() < 0.5)


def run_config(path: Path, case: Case) -> None:
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


def make_keras_h5(rng: random.Random) -> Case:
    rel = rng.choice(H5_FILES)
    data = (FIXTURES / rel).read_bytes()
    config = rng.choice(json_configs())
    data = mutate_h5(rng, data, config) if rng.random() < 0.8 else mutate_bytes(rng, data)
    options = {"config_json": mutate_json_text(rng, config) if rng.random() < 0.5 else json.dumps(config)} \
        if "weights" in rel and rng.random() < 0.2 else {}
    return one_file(Path(rel).name, data, **options)


def run_keras_h5(path: Path, case: Case) -> None:
    from tf2torch.readers.keras_h5 import read_keras_h5

    read_all(read_keras_h5(path, case.options.get("config_json")))


def make_keras_zip(rng: random.Random) -> Case:
    return one_file("model.keras", mutate_zip(rng, (FIXTURES / "keras3/cnn.keras").read_bytes()))


def run_keras_zip(path: Path, case: Case) -> None:
    from tf2torch.readers.keras_zip import read_keras_zip

    read_all(read_keras_zip(path))


DETECT_NAMES = ("x.h5", "x.keras", "x.hdf5", "x.weights.h5", "model.ckpt.index", "model.ckpt.meta",
                "model.ckpt.data-00000-of-00001", "checkpoint", "saved_model.pb", "saved_model.pbtxt",
                "variables/variables.index", "x.pt", "x.pkl", "sub/checkpoint", "sub/a.index", "sub/b.index")


def make_detect(rng: random.Random) -> Case:
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


def run_detect(path: Path, case: Case) -> None:
    from tf2torch.readers.checkpoint import resolve_prefix
    from tf2torch.readers.detect import Kind, detect

    kind, where = detect(path)
    if kind is Kind.CHECKPOINT:
        resolve_prefix(where)


def make_savedmodel(rng: random.Random) -> Case:
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


def run_savedmodel(path: Path, case: Case) -> None:
    from tf2torch import api

    read_all(api.read(path))


CONVERT_SOURCES = ("tf1", "tf1_sharded", "tf2_keras2", "tf2_keras3", "savedmodel", "h5", "keras")


def make_convert(rng: random.Random) -> Case:
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
        case = make_savedmodel(rng)
        case.options.update(options)
        return case
    case = make_keras_h5(rng) if kind == "h5" else make_keras_zip(rng)
    case.options = options
    return case


def run_convert(path: Path, case: Case) -> None:
    from tf2torch import api

    config = case.options.get("config")
    result = api.convert(path, None, dry_run=True, config=path.parent / config if config else None)
    if result.model_source is not None:
        compile(result.model_source, "model.py", "exec")
    if case.options.get("produce"):
        for plan in result.plans:
            check_array(plan.produce(), plan.shape, plan.dtype, f"plan {plan.key!r}")
