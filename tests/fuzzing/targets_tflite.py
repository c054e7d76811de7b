"""Fuzz target for the TFLite reader and lowering: the committed ``.tflite`` fixtures, mutated as bytes
and as flatbuffer words (offsets, vtable entries, vector counts, enum bytes: what a forged file changes),
then read, surveyed, every weight read and checked against its declared shape, and converted."""

from __future__ import annotations

import random
import struct
from pathlib import Path

from tests.fuzzing.binary import mutate_bytes
from tests.fuzzing.seeds import FIXTURES, Case, InvariantError, one_file

SEEDS = ("tflite/cnn.tflite", "tflite/cnn_fp16.tflite", "tflite/cnn_int8.tflite",
         "tflite_custom/conv2d_transpose_bias.tflite", "tflite_custom/pool_unpool.tflite",
         "tflite_sparse/sparse.tflite", "tflite_sparse/sparse_int8.tflite")  # sparsity metadata, DENSIFY
_WORDS = (0, 1, 2, 4, 0x7F, 0x80, 0xFF, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF, 0xFFFFFFF0)


def _words(rng: random.Random, data: bytearray) -> bytearray:
    """Overwrite a few aligned words (flatbuffers align offsets and counts to 4) or single bytes (enums,
    int8 types) with boundary values, or with a value near the file's size."""
    for _ in range(rng.randint(1, 4)):
        if rng.random() < 0.7 and len(data) >= 8:
            at = rng.randrange(0, len(data) - 3) & ~3
            value = rng.choice((*_WORDS, len(data), len(data) - at, rng.randrange(1 << 32)))
            struct.pack_into("<I", data, at, value & 0xFFFFFFFF)
        elif data:
            data[rng.randrange(len(data))] = rng.choice((0, 1, 9, 0x7F, 0x80, 0xFF, rng.randrange(256)))
    return data


def make_tflite(rng: random.Random) -> Case:
    seed = (FIXTURES / rng.choice(SEEDS)).read_bytes()
    roll = rng.random()
    data = bytes(_words(rng, bytearray(seed))) if roll < 0.6 else mutate_bytes(rng, seed) if roll < 0.97 \
        else b"\x10\x00\x00\x00TFL3" + rng.randbytes(rng.randrange(64))
    return one_file("model.tflite", data)


def run_tflite(path: Path, case: Case) -> None:
    from tf2torch import api, summary

    spec = api.read(path)
    summary.summarize(spec)  # the survey: operators by type, quantized tensors, unsupported
    for var in spec.variables:
        array = var.read()
        if tuple(array.shape) != tuple(var.shape) or str(array.dtype.newbyteorder("<")) != str(
                __import__("numpy").dtype(var.dtype.storage).newbyteorder("<")):
            raise InvariantError(f"{var.name}: read {array.dtype}{array.shape}, declared {var.dtype.name}{var.shape}")
    result = api.convert(path, None, dry_run=True)
    compile(result.model_source or "", "model.py", "exec")


_NAMES = ("a.tflite", "sub/b.tflite", "labels.txt", "../up.tflite", "/abs.tflite", "a.tflite", "c:/d.tflite",
          "x/../../y.tflite", "", "n\x00.tflite", "weird name;.tflite")


def make_task(rng: random.Random) -> Case:
    """A MediaPipe bundle of the fixtures (stored or deflated, sometimes mutated models, hostile names),
    then, half the time, the zip's own bytes mutated (headers, central directory, sizes)."""
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for _ in range(rng.randint(1, 3)):
            data = (FIXTURES / rng.choice(SEEDS)).read_bytes()
            if rng.random() < 0.3:
                data = bytes(_words(rng, bytearray(data)))
            name = rng.choice(_NAMES) if rng.random() < 0.3 else rng.choice(_NAMES[:3])
            method = rng.choice((zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED))
            try:
                zf.writestr(zipfile.ZipInfo(name or "empty", (1980, 1, 1, 0, 0, 0)), data, compress_type=method)
            except ValueError:  # zipfile's own refusals of a name (NUL): the case goes on without it
                pass
    data = buf.getvalue()
    if rng.random() < 0.5:
        data = bytes(_words(rng, bytearray(data))) if rng.random() < 0.6 else mutate_bytes(rng, data)
    return one_file("bundle.task", data)


def run_task(path: Path, case: Case) -> None:
    from tf2torch import api, summary

    summary.render_task(path)  # every member checked, every model read and surveyed
    result = api.convert(path, None, dry_run=True)
    for conversion in result.members.values():
        compile(conversion.model_source or "", "model.py", "exec")
