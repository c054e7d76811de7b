"""Mutations of binary inputs for the fuzzer: raw bytes, protobuf trees, TensorFlow tables (.index).

Every mutator takes a ``random.Random`` and returns new data; none reads the clock or global state, so a
case is a pure function of (seed, target, case number). The structure-aware ones keep what guards the
interesting code valid (a table block's CRC, a protobuf's framing) and break what is behind it: a varint
rewritten as its 10-byte maximum, a length or offset past the end, a duplicated field or block.
"""

from __future__ import annotations

import random
from functools import lru_cache
from typing import Any

from tests.readers.tablebuilder import block, varint
from tf2torch.readers.crc import crc32c, mask
from tf2torch.readers.proto import iter_fields
from tf2torch.readers.table import MAGIC

U64 = (1 << 64) - 1
BIG_INTS = (0, 1, 2, 7, 0x7F, 0x80, 0xFF, 0x7FFF, 1 << 16, 0x7FFFFFFF, 1 << 31, 0xFFFFFFFF, 1 << 32,
            1 << 40, (1 << 62) - 1, (1 << 63) - 1, 1 << 63, U64 - 1, U64)
# 10-byte varint maxima and malformed varints (11 bytes, bit 64 set, never terminated).
HUGE_VARINTS = (b"\xff" * 9 + b"\x01", b"\xff" * 10 + b"\x01", b"\x80" * 9 + b"\x02", b"\xff" * 10,
                b"\xfe" + b"\xff" * 8 + b"\x01", b"\x80" * 10)
NASTY_TEXT = ("", "x\ny", 'a"b', "a'b", "back\\slash", "\u00e9\u4e2d\U0001f600", "\x00", "..", "../../x",
              "/abs", "a/b", "\r\n", "\u2028", "\x85", "é" * 300, 'x"); import os; os.system("touch PWNED"); ("')


# --- raw bytes ---------------------------------------------------------------------------------------

def _pos(rng: random.Random, data: bytearray) -> int:
    return rng.randrange(len(data) + 1)


def _flip(rng: random.Random, data: bytearray) -> bytearray:
    if data:
        for _ in range(rng.choice((1, 1, 2, 8))):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    return data


def _overwrite(rng: random.Random, data: bytearray) -> bytearray:
    if data:
        pos = rng.randrange(len(data))
        data[pos:pos + 8] = rng.randbytes(min(rng.randint(1, 8), len(data) - pos))
    return data


def _interesting(rng: random.Random, data: bytearray) -> bytearray:
    if data:
        data[rng.randrange(len(data))] = rng.choice((0, 1, 0x7F, 0x80, 0xFF))
    return data


def _truncate(rng: random.Random, data: bytearray) -> bytearray:
    return data[:rng.randrange(len(data))] if data else data


def _insert(rng: random.Random, data: bytearray) -> bytearray:
    pos = _pos(rng, data)
    return data[:pos] + rng.randbytes(rng.choice((1, 2, 4, 16, 200))) + data[pos:]


def _delete(rng: random.Random, data: bytearray) -> bytearray:
    if not data:
        return data
    pos = rng.randrange(len(data))
    return data[:pos] + data[pos + rng.choice((1, 4, 64, 1024)):]


def _duplicate(rng: random.Random, data: bytearray) -> bytearray:
    if not data:
        return data
    start = rng.randrange(len(data))
    chunk = data[start:start + rng.choice((8, 64, 512, 4096))]
    pos = _pos(rng, data)
    return data[:pos] + chunk + data[pos:]


def _huge_varint(rng: random.Random, data: bytearray) -> bytearray:
    pos = _pos(rng, data)
    replace = rng.random() < 0.5  # overwrite a (probable) varint in place, or insert one
    end = pos
    while replace and end < len(data) and data[end] & 0x80:
        end += 1
    return data[:pos] + rng.choice(HUGE_VARINTS) + data[end + 1 if replace else pos:]


def _int_field(rng: random.Random, data: bytearray) -> bytearray:
    """A little-endian u32/u64 that points past the end (offset and length fields)."""
    if not data:
        return data
    value = rng.choice((len(data), len(data) + 1, len(data) * 2, 0x7FFFFFFF, 0xFFFFFFFF, 1 << 40, U64))
    width = rng.choice((4, 8))
    pos = rng.randrange(len(data))
    return data[:pos] + (value & ((1 << 8 * width) - 1)).to_bytes(width, "little") + data[pos + width:]


BYTE_OPS = (_flip, _overwrite, _interesting, _truncate, _insert, _delete, _duplicate, _huge_varint, _int_field)


def mutate_bytes(rng: random.Random, data: bytes, count: int | None = None) -> bytes:
    out = bytearray(data)
    for _ in range(count or rng.choice((1, 1, 1, 2, 2, 3, 5))):
        out = rng.choice(BYTE_OPS)(rng, out)
    return bytes(out)


# --- protobuf trees ----------------------------------------------------------------------------------
# A tree is a tuple of (number, wire, value): value is an int (varint/fixed), bytes, a tuple (a nested
# message, when the bytes parse as one), or Raw (pre-encoded bytes: over-long varints, lying lengths).

class Raw(bytes):
    """A field value already encoded (after the tag), emitted verbatim."""


@lru_cache(maxsize=64)
def seed_tree(buf: bytes) -> tuple:
    """``decode_tree`` of a seed, decoded once per process (seeds repeat across cases)."""
    return decode_tree(buf)


def decode_tree(buf: bytes, depth: int = 0) -> tuple:
    out = []
    for number, f in iter_fields(buf, "seed"):
        value: Any = f.value
        if f.wire == 2:
            value = bytes(value)
            if value and depth < 12:
                try:
                    value = decode_tree(value, depth + 1)
                except Exception:  # not a message: keep the bytes
                    pass
        out.append((number, f.wire, value))
    return tuple(out)


def encode_tree(tree: tuple) -> bytes:
    """Bytes of a tree. A value that does not fit its wire type (after a wire-type mutation) is written
    anyway: an int under LEN as the bytes of its varint, bytes under a scalar wire type verbatim."""
    out = bytearray()
    for number, wire, value in tree:
        out += varint(number << 3 | wire)
        if isinstance(value, Raw):
            out += value
        elif isinstance(value, int):
            if wire == 1:
                out += (value & U64).to_bytes(8, "little")
            elif wire == 5:
                out += (value & 0xFFFFFFFF).to_bytes(4, "little")
            elif wire == 2:
                out += varint(len(varint(value))) + varint(value)
            else:
                out += varint(value)
        else:
            body = encode_tree(value) if isinstance(value, tuple) else bytes(value)
            out += varint(len(body)) + body if wire == 2 else body
    return bytes(out)


def _long_varint(value: int) -> Raw:
    """``value`` in 10 bytes (non-minimal, which protobuf parsers must accept)."""
    value &= U64
    return Raw(bytes(((value >> 7 * i) & 0x7F) | (0x80 if i < 9 else 0) for i in range(10)))


def _field_mutation(rng: random.Random, tree: tuple, i: int) -> list:
    number, wire, value = tree[i]
    roll = rng.random()
    if roll < 0.08:
        return []  # drop the field
    if roll < 0.16:
        return [tree[i], tree[i]]  # repeat it
    if roll < 0.22:
        return [(rng.choice((number, number + 1, rng.randrange(1, 40))), rng.choice((0, 1, 2, 5)),
                 rng.choice((0, U64, b"", rng.randbytes(4))) if rng.random() < 0.5 else value), tree[i]]
    if roll < 0.28:  # the same value under another wire type or field number
        wire2 = rng.choice([w for w in (0, 1, 2, 5) if w != wire])
        value2: Any = value if (wire2 == 2) == isinstance(value, (bytes, tuple)) else (
            rng.choice(BIG_INTS) if wire2 != 2 else b"\x01")
        return [(rng.choice((number, rng.randrange(1, 20))), wire2, value2)]
    if isinstance(value, int):
        choice = rng.random()
        if choice < 0.3:
            return [(number, wire, _long_varint(rng.choice(BIG_INTS)) if wire == 0 else rng.choice(BIG_INTS))]
        if choice < 0.4 and wire == 0:
            return [(number, wire, Raw(rng.choice(HUGE_VARINTS)))]
        if choice < 0.5 and wire == 0:
            return [(number, wire, _long_varint(value))]  # same value, non-minimal encoding
        small = rng.randrange(-3, 12)
        return [(number, wire, rng.choice((small & U64, value + 1, max(value - 1, 0), value * 2 + 1,
                                           rng.choice(BIG_INTS), rng.getrandbits(64))))]
    body = encode_tree(value) if isinstance(value, tuple) else bytes(value)
    choice = rng.random()
    if isinstance(value, tuple) and choice < 0.55:
        return [(number, wire, mutate_tree(rng, value))]
    if choice < 0.7:  # a length that points past the end of the message
        return [(number, wire, Raw(varint(len(body) + rng.choice((1, 2, 100, 1 << 31, U64 - len(body))) & U64) + body))]
    if choice < 0.8:
        return [(number, wire, rng.choice((b"", b"\xff" * 3, rng.choice(NASTY_TEXT).encode("utf-8", "surrogatepass"))))]
    return [(number, wire, mutate_bytes(rng, body))]


def mutate_tree(rng: random.Random, tree: tuple) -> tuple:
    if not tree:
        return ((rng.randrange(1, 10), 0, rng.choice(BIG_INTS)),)
    # Descend into the children of one field more often than mutating at the top: most of what the
    # readers interpret (shapes, dims, node ids) sits a few messages deep.
    i = rng.randrange(len(tree))
    new = _field_mutation(rng, tree, i)
    if len(tree) > 1 and rng.random() < 0.05:
        j = rng.randrange(len(tree))
        swapped = list(tree)
        swapped[i], swapped[j] = swapped[j], swapped[i]
        return tuple(swapped)
    return tree[:i] + tuple(new) + tree[i + 1:]


def mutate_proto(rng: random.Random, tree: tuple, count: int | None = None) -> bytes:
    for _ in range(count or rng.choice((1, 1, 2, 3))):
        tree = mutate_tree(rng, tree)
    return encode_tree(tree)


# --- TensorFlow tables (.index) ----------------------------------------------------------------------

def _trailer(contents: bytes, kind: int = 0) -> bytes:
    return contents + bytes([kind]) + mask(crc32c(contents + bytes([kind]))).to_bytes(4, "little")


def forge_table(rng: random.Random, entries: list[tuple[bytes, bytes]], corrupt: bool = True) -> bytes:
    """A table of ``entries`` (in the order given) with valid block CRCs; with ``corrupt``, sometimes a
    block's contents, its compression byte or a footer handle are broken *before* the CRC is taken."""
    per_block = rng.choice((1, 2, 3, 16, 1000))
    restart = rng.choice((1, 2, 4, 16))
    out, index = bytearray(), []
    broken = rng.randrange(-1, len(entries) // per_block + 2) if corrupt and rng.random() < 0.5 else -2

    def add(contents: bytes, n: int) -> tuple[int, int]:
        kind = 0
        if n == broken:
            if rng.random() < 0.2:
                kind = rng.choice((1, 2, 0xFF))
            else:
                contents = mutate_bytes(rng, contents)
        handle = (len(out), len(contents))
        out.extend(_trailer(contents, kind))
        return handle

    for n, start in enumerate(range(0, len(entries), per_block)):
        chunk = entries[start:start + per_block]
        off, size = add(block(chunk, restart), n)
        index.append((chunk[-1][0], varint(off) + varint(size)))
    meta = add(block([]), -3)
    idx = add(block(index, restart), len(index))
    handles = [meta[0], meta[1], idx[0], idx[1]]
    footer = b"".join(varint(h) for h in handles)
    if corrupt and rng.random() < 0.1:
        handles[rng.randrange(4)] = rng.choice(BIG_INTS + (len(out), len(out) + 1))
        footer = b"".join(varint(h) for h in handles)
        if rng.random() < 0.3:
            footer = rng.choice(HUGE_VARINTS) * 4
    return bytes(out) + footer[:40].ljust(40, b"\x00") + MAGIC.to_bytes(8, "little")
