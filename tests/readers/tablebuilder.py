"""Test-only writers for protobuf fields, TF tables and tiny bundles, to forge inputs TF never writes.

Written from the format description in ``tf2torch/readers/table.py`` and ``bundle.py``; the tests check
this writer against files real TensorFlow produced, so a bug here cannot hide one in the reader.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from tf2torch.readers.crc import crc32c, mask
from tf2torch.readers.table import MAGIC


def varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64 -> 10-byte two's complement, as protobuf does
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def field(number: int, value: int | bytes, wire: int | None = None) -> bytes:
    if isinstance(value, bytes):
        return varint(number << 3 | 2) + varint(len(value)) + value
    if wire == 5:
        return varint(number << 3 | 5) + value.to_bytes(4, "little")
    return varint(number << 3) + varint(value)


def block(entries: list[tuple[bytes, bytes]], restart_interval: int = 4) -> bytes:
    out, restarts, last = bytearray(), [], b""
    for i, (key, value) in enumerate(entries):
        shared = 0
        if i % restart_interval:
            while shared < min(len(key), len(last)) and key[shared] == last[shared]:
                shared += 1
        else:
            restarts.append(len(out))
        out += varint(shared) + varint(len(key) - shared) + varint(len(value)) + key[shared:] + value
        last = key
    for r in restarts or [0]:
        out += r.to_bytes(4, "little")
    return bytes(out + len(restarts or [0]).to_bytes(4, "little"))


def _with_trailer(contents: bytes, kind: int = 0) -> bytes:
    return contents + bytes([kind]) + mask(crc32c(contents + bytes([kind]))).to_bytes(4, "little")


def table(entries: list[tuple[bytes, bytes]], per_block: int = 3, kind: int = 0) -> bytes:
    """A table file with ``per_block`` entries per data block (several blocks exercise the index)."""
    out, index = bytearray(), []
    for start in range(0, len(entries), per_block):
        chunk = entries[start:start + per_block]
        contents = block(chunk)
        index.append((chunk[-1][0], varint(len(out)) + varint(len(contents))))
        out += _with_trailer(contents, kind)
    meta_handle = varint(len(out)) + varint(len(block([])))
    out += _with_trailer(block([]))
    index_handle = varint(len(out)) + varint(len(block(index)))
    out += _with_trailer(block(index))
    footer = (meta_handle + index_handle).ljust(40, b"\x00")
    return bytes(out + footer + MAGIC.to_bytes(8, "little"))


def header(num_shards: int = 1, endianness: int = 0, min_consumer: int = 0) -> bytes:
    return field(1, num_shards) + field(2, endianness) + field(3, field(1, 1) + field(2, min_consumer))


def shape(dims: tuple[int, ...]) -> bytes:
    return b"".join(field(2, field(1, d)) for d in dims)


def entry(dtype: int, dims: tuple[int, ...], offset: int, size: int, crc: int, shard: int = 0) -> bytes:
    return (field(1, dtype) + field(2, shape(dims)) + field(3, shard) + field(4, offset) + field(5, size)
            + field(6, mask(crc), wire=5))


def write_bundle(prefix: Path, tensors: dict[str, np.ndarray], tf_enums: dict[str, int]) -> None:
    """A one-shard bundle of numeric tensors (``tf_enums`` gives each one's DataType number)."""
    data, entries = bytearray(), []
    for name in sorted(tensors):
        raw = np.ascontiguousarray(tensors[name]).tobytes()
        entries.append((name.encode(), entry(tf_enums[name], tensors[name].shape, len(data), len(raw), crc32c(raw))))
        data += raw
    Path(f"{prefix}.data-00000-of-00001").write_bytes(bytes(data))
    Path(f"{prefix}.index").write_bytes(table([(b"", header())] + entries))
