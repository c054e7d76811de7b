"""Mutations of Keras inputs for the fuzzer: JSON configs, HDF5 files (edited with h5py), .keras zips.

JSON: values of the wrong type, keys dropped or renamed, items duplicated, deep nesting, broken syntax.
HDF5: attributes that lie (layer_names, weight_names, model_config), datasets replaced by other shapes,
dtypes, links, virtual or external datasets, members removed or added, hard-link cycles. Zip: members
renamed (zip-slip names), duplicated, dropped, deflated, central-directory fields that lie.
"""

from __future__ import annotations

import io
import json
import math
import random
import zipfile
from typing import Any

import h5py
import numpy as np

from tests.fuzzing.binary import NASTY_TEXT, mutate_bytes

# --- JSON ---------------------------------------------------------------------------------------------

def _random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randrange(10)
    if kind == 0:
        return None
    if kind == 1:
        return rng.choice((True, False))
    if kind == 2:
        return rng.choice((0, -1, 1, 3, 10**30, -(2**63), 2**64, 10**400))
    if kind == 3:
        return rng.choice((0.5, -1e308, 1e308, float("nan"), float("inf")))
    if kind == 4:
        return rng.choice(NASTY_TEXT + ("Conv2D", "InputLayer", "Functional", "Sequential", "__keras_tensor__",
                                        "__tuple__", "_CONSTANT_VALUE", "Lambda", "Dense", "keras.src.ops.numpy"))
    if kind == 5 and depth < 3:
        return [_random_value(rng, depth + 1) for _ in range(rng.randrange(5))]
    if kind == 6 and depth < 3:
        return {rng.choice(("class_name", "config", "name", "layers", "inbound_nodes", "args", "kwargs",
                            "keras_history", "module", "registered_name", "input_layers", "output_layers")):
                _random_value(rng, depth + 1) for _ in range(rng.randrange(4))}
    if kind == 7:
        return ["conv", 0, 0] if rng.random() < 0.5 else ["image", rng.choice((0, 1, -1, 10**9)), 0, {}]
    return rng.choice(([], {}, "", [[]], [{}]))


def _paths(obj: Any, path: tuple = ()) -> list[tuple]:
    out = [path]
    if isinstance(obj, dict):
        for k, v in obj.items():
            out += _paths(v, path + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            out += _paths(v, path + (i,))
    return out


def _get(obj: Any, path: tuple) -> Any:
    for part in path:
        obj = obj[part]
    return obj


def mutate_json_obj(rng: random.Random, obj: Any, count: int | None = None) -> Any:
    """A deep copy of ``obj`` with values replaced, keys dropped or renamed, items duplicated."""
    obj = json.loads(json.dumps(obj))
    for _ in range(count or rng.choice((1, 1, 2, 3))):
        paths = _paths(obj)
        path = rng.choice(paths)
        if not path:
            obj = _random_value(rng) if rng.random() < 0.1 else obj
            continue
        parent, key = _get(obj, path[:-1]), path[-1]
        roll = rng.random()
        if roll < 0.2:
            del parent[key]  # a missing key / a shorter list
        elif roll < 0.3 and isinstance(parent, list):
            parent.insert(key, json.loads(json.dumps(parent[key])))  # a duplicated layer / node / ref
        elif roll < 0.4 and isinstance(parent, dict):
            parent[rng.choice(NASTY_TEXT + ("name", "class_name", "config"))] = parent.pop(key)
        elif roll < 0.5 and isinstance(parent[key], str):
            parent[key] = rng.choice(NASTY_TEXT)
        elif roll < 0.6 and isinstance(parent[key], int) and not isinstance(parent[key], bool):
            parent[key] = rng.choice((-1, parent[key] + 1, 10**12, -(10**12), 2**63))
        elif roll < 0.65:
            other = _get(obj, rng.choice(paths))  # a value from elsewhere (maybe an ancestor: a cycle
            parent[key] = json.loads(json.dumps(other))  # is impossible, json copies break it)
        else:
            parent[key] = _random_value(rng)
    return obj


def mutate_json_text(rng: random.Random, obj: Any) -> str:
    """Text of a mutated ``obj``; sometimes deeply nested, duplicated keys, or broken syntax."""
    mutated = mutate_json_obj(rng, obj)
    text = json.dumps(mutated, allow_nan=True)
    roll = rng.random()
    if roll < 0.08:  # deep nesting in place of one value
        depth = rng.choice((100, 900, 3000, 100_000))
        nest = rng.choice((("[" * depth, "]" * depth), ('{"a":' * depth, "}" * depth)))
        marker = rng.choice(('"config": ', '"inbound_nodes": ', '"layers": ', '"args": ', '"name": '))
        at = text.find(marker)
        if at >= 0:
            at += len(marker)
            text = text[:at] + nest[0] + "0" + nest[1] + ", " + '"_x": ' + text[at:] if marker != '"name": ' \
                else text[:at] + nest[0] + "0" + nest[1] + text[text.find(",", at):]
    elif roll < 0.12:
        text = mutate_bytes(rng, text.encode()).decode("utf-8", "replace")
    elif roll < 0.15:
        text = text.replace('"name"', '"name": "dup", "name"', 1)  # duplicated key: the last one wins
    return text


# --- HDF5 ---------------------------------------------------------------------------------------------

def _h5_objects(f: h5py.File) -> tuple[list[str], list[str]]:
    groups, datasets = ["/"], []
    f.visititems(lambda name, obj: (datasets if isinstance(obj, h5py.Dataset) else groups).append("/" + name))
    return groups, datasets


def _attr_value(rng: random.Random, old: Any) -> Any:
    roll = rng.randrange(9)
    if roll == 0:
        return np.arange(rng.choice((1, 3, 1000)), dtype=rng.choice(("i4", "f8")))
    if roll == 1:
        return np.array([], dtype="S1")
    if roll == 2:
        return np.array([b"\xff\xfe", b"x"], dtype="S2")
    if roll == 3:
        items = [bytes(x) for x in np.atleast_1d(old)] if isinstance(old, np.ndarray) and old.dtype.kind == "S" else [b"a"]
        return np.array(items + items, dtype=f"S{max(len(i) for i in items) or 1}")  # duplicated names
    if roll == 4:
        return np.array([n.encode() for n in ("", "..", "/abs", "a//b", "missing", "x\ny")], dtype="S8")
    if roll == 5:
        return rng.choice(NASTY_TEXT)
    if roll == 6:
        return np.array([[b"a", b"b"]], dtype="S1")  # 2-D
    if roll == 7:
        return 7
    return np.array([b"x" * 3] * rng.choice((2, 5000)), dtype="S3")


def _h5_mutation(rng: random.Random, f: h5py.File, json_seed: Any) -> None:
    groups, datasets = _h5_objects(f)
    roll = rng.random()
    if roll < 0.2:  # attributes: layer_names, weight_names, model_config, keras_version, name, dtype
        holders = [o for o in groups + datasets if f[o].attrs.keys()] or ["/"]
        obj = f[rng.choice(holders)]
        names = list(obj.attrs.keys()) or ["layer_names"]
        name = rng.choice(names + ["layer_names0", "weight_names1", "dtype", "name"])
        if name == "model_config" and json_seed is not None and rng.random() < 0.7:
            obj.attrs[name] = mutate_json_text(rng, json_seed).encode("utf-8", "surrogatepass")
        elif name in obj.attrs and rng.random() < 0.2:
            del obj.attrs[name]
        else:
            obj.attrs[name] = _attr_value(rng, obj.attrs.get(name))
    elif roll < 0.5 and datasets:  # a dataset replaced by something of another shape / dtype / kind
        path = rng.choice(datasets)
        old = f[path]
        shape, attrs = old.shape, dict(old.attrs)
        if math.prod(shape or ()) > 1 << 20:  # an earlier edit made it huge: never materialise that
            shape = (4,)
        del f[path]
        kind = rng.randrange(12)
        if kind == 0:
            f.create_dataset(path, data=np.zeros((*shape, 2)[-rng.randrange(1, 3):], "f4"))
        elif kind == 1:
            f.create_dataset(path, shape=shape, dtype=rng.choice(("f2", ">f4", "i8", "u1", "?", "c8", "f8", "V2")))
        elif kind == 2:
            f.create_dataset(path, data=np.array([b"a", b"bc"], dtype="S2"))
        elif kind == 3:
            f.create_dataset(path, shape=rng.choice(((1 << 20, 1 << 20), (1 << 40,), (10**6,))), dtype="f4",
                             chunks=True)  # declared far larger than the file, storage never allocated
        elif kind == 4:
            f.create_dataset(path, data=np.float32(1.5))
        elif kind == 5:
            f.create_dataset(path, data=np.zeros(shape, "f4"), compression=rng.choice(("gzip", "lzf")))
        elif kind == 6:
            f[path] = h5py.ExternalLink("other.h5", "/x")
        elif kind == 7:
            f[path] = h5py.SoftLink(rng.choice(groups + datasets + ["/nowhere"]))
        elif kind == 8:
            f.create_group(path)
        elif kind == 9:
            layout = h5py.VirtualLayout(shape=(4,), dtype="f4")
            layout[:] = h5py.VirtualSource("other.h5", "x", shape=(4,))
            f.create_virtual_dataset(path, layout)
        elif kind == 10:
            f.create_dataset(path, shape=(4,), dtype="f4", external=[("ext.bin", 0, 16)])
        else:
            f.create_dataset(path, data=np.zeros(shape, [("a", "f4"), ("b", "i4")]))
        if kind not in (6, 7) and path in f and rng.random() < 0.5:
            for k, v in attrs.items():
                f[path].attrs[k] = v
    elif roll < 0.65:  # a member removed
        victim = rng.choice(groups[1:] + datasets) if len(groups) + len(datasets) > 1 else None
        if victim:
            del f[victim]
    elif roll < 0.8:  # an extra member
        where = f[rng.choice(groups)]
        name = rng.choice(("10", "x", "vars", "layers", "top_level_model_weights", "optimizer_weights", "..a", "0"))
        if name not in where:
            if rng.random() < 0.5:
                where.create_dataset(name, data=np.ones(3, "f4"))
            else:
                where.create_group(name)
    elif roll < 0.9 and datasets:  # values: NaN, inf, huge (a correct read of odd numbers)
        ds = f[rng.choice(datasets)]
        if ds.dtype.kind == "f" and 0 < ds.size < 1 << 20 and not ds.external and not ds.is_virtual:
            ds[...] = np.full(ds.shape, rng.choice((np.nan, np.inf, -0.0, 3e38)), ds.dtype)
    else:  # a hard link making a cycle or an alias
        target = rng.choice(groups)
        where = f[rng.choice(groups)]
        if "loop" not in where:
            where["loop"] = f[target]


def mutate_h5(rng: random.Random, data: bytes, json_seed: Any = None) -> bytes:
    """Edit a copy of an HDF5 file with h5py (1-3 structural edits), sometimes then flip raw bytes."""
    buf = io.BytesIO(data)
    try:
        with h5py.File(buf, "r+") as f:
            for _ in range(rng.choice((1, 1, 2, 3))):
                _h5_mutation(rng, f, json_seed)
    except (OSError, KeyError, ValueError, TypeError, RuntimeError):
        pass  # an edit h5py itself refuses: keep what was written so far
    out = buf.getvalue()
    return mutate_bytes(rng, out) if rng.random() < 0.15 else out


# --- zip (.keras) -------------------------------------------------------------------------------------

def zip_members(data: bytes) -> list[tuple[str, bytes]]:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return [(i.filename, zf.read(i)) for i in zf.infolist()]


def build_zip(members: list[tuple[str, bytes]], deflate: set[str] = frozenset()) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, body in members:
            info = zipfile.ZipInfo(name, (2024, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED if name in deflate else zipfile.ZIP_STORED
            zf.writestr(info, body)
    return buf.getvalue()


def _patch_central(data: bytes, rng: random.Random) -> bytes:
    """Lie in the central directory: sizes, offsets, flags (zipfile trusts these fields)."""
    out = bytearray(data)
    pos = out.find(b"PK\x01\x02")
    positions = []
    while pos >= 0:
        positions.append(pos)
        pos = out.find(b"PK\x01\x02", pos + 4)
    if not positions:
        return bytes(out)
    at = rng.choice(positions)
    field_at, width = rng.choice(((8, 2), (10, 2), (20, 4), (24, 4), (42, 4), (28, 2), (30, 2)))
    value = rng.choice((0, 1, 0xFFFF, 0xFFFFFFFF, len(data), 1 << 30))
    out[at + field_at:at + field_at + width] = (value & ((1 << 8 * width) - 1)).to_bytes(width, "little")
    return bytes(out)


def mutate_zip(rng: random.Random, data: bytes) -> bytes:
    members = zip_members(data)
    roll = rng.random()
    if roll < 0.25:
        return mutate_bytes(rng, data)
    if roll < 0.35:
        return _patch_central(data, rng)
    deflate: set[str] = set()
    for _ in range(rng.choice((1, 1, 2))):
        i = rng.randrange(len(members))
        name, body = members[i]
        action = rng.random()
        if action < 0.35 and name.endswith(".json"):
            try:
                text = mutate_json_text(rng, json.loads(body))
            except (ValueError, RecursionError):  # already broken by an earlier edit
                text = mutate_bytes(rng, body).decode("utf-8", "replace")
            members[i] = (name, text.encode("utf-8", "surrogatepass"))
        elif action < 0.6 and name.endswith(".h5"):
            members[i] = (name, mutate_h5(rng, body))
        elif action < 0.7:
            members[i] = (rng.choice(("../../x", "/abs/config.json", "a\\..\\b", "config.json", "model.weights.npz",
                                      "C:evil", "x\x00y", "metadata.json")), body)
        elif action < 0.78:
            members.append((name, body))  # duplicated member
        elif action < 0.85:
            del members[i]
        elif action < 0.9:
            deflate.add(name)
        else:
            members[i] = (name, mutate_bytes(rng, body))
        if not members:
            break
    try:
        return build_zip(members, deflate)
    except ValueError:  # a name zipfile will not write (NUL): fall back to a raw edit
        return mutate_bytes(rng, data)
