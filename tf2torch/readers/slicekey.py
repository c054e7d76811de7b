"""Keys of the slices of a partitioned variable, as ``checkpoint::EncodeTensorNameSlice`` writes them.

tensorflow/core/util/saved_tensor_slice_util.cc builds the key with OrderedCode
(tensorflow/core/lib/strings/ordered_code.cc)::

    NumIncreasing(0) String(name) NumIncreasing(rank) {SignedNumIncreasing(start) SignedNumIncreasing(length)}*rank

A full extent is written as start 0, length -1. Because the key starts with NumIncreasing(0) = b"\\x00",
slice keys sort before every ordinary variable name and never collide with one.
"""

from __future__ import annotations

from ..errors import FormatError

Extent = tuple[int, int]  # (start, length); length -1 means "the whole dimension"
FULL = -1


def _num_increasing(value: int) -> bytes:
    """One length byte, then the value big-endian without leading zero bytes (0 is just b"\\x00")."""
    body = value.to_bytes((value.bit_length() + 7) // 8, "big")
    return bytes([len(body)]) + body


def _string(value: bytes) -> bytes:
    # \x00 and \xff are escaped as \x00\xff and \xff\x00; \x00\x01 terminates the string.
    out = bytearray()
    for byte in value:
        out += b"\x00\xff" if byte == 0 else b"\xff\x00" if byte == 0xFF else bytes((byte,))
    return bytes(out + b"\x00\x01")


def _read_string(key: bytes, pos: int, bad: str) -> tuple[bytes, int]:
    out = bytearray()
    while pos + 1 < len(key):
        byte, nxt = key[pos], key[pos + 1]
        if byte not in (0, 0xFF):
            out.append(byte)
            pos += 1
        elif (byte, nxt) == (0, 1):
            return bytes(out), pos + 2
        elif (byte, nxt) in ((0, 0xFF), (0xFF, 0)):
            out.append(byte)
            pos += 2
        else:
            break
    raise FormatError(bad)


def _signed(value: int) -> bytes:
    """SignedNumIncreasing: n bytes hold 7n-1 value bits; the top n bits (sign first, then size bits)
    say how long the number is. Written as the two's complement value xored with n leading ones."""
    magnitude = ~value if value < 0 else value
    length = magnitude.bit_length() // 7 + 1  # 1..10 bytes for int64
    header = ((1 << length) - 1) << (8 * length - length)
    return ((value % (1 << (8 * length))) ^ header).to_bytes(length, "big")


def encode(name: str, extents: tuple[Extent, ...]) -> bytes:
    """The key TensorFlow stores the slice ``extents`` of variable ``name`` under."""
    out = [_num_increasing(0), _string(name.encode("utf-8")), _num_increasing(len(extents))]
    for start, length in extents:
        out += [_signed(start), _signed(length)]
    return b"".join(out)


def _read_signed(key: bytes, pos: int, where: str) -> tuple[int, int]:
    if pos >= len(key):
        raise FormatError(f"{where}: slice key ends inside a number (corrupt index); re-save the checkpoint")
    negative = not key[pos] & 0x80
    lead = int.from_bytes(key[pos:pos + 2].ljust(2, b"\x00"), "big") ^ (0xFFFF if negative else 0)
    length = 16 - (~lead & 0xFFFF).bit_length()  # count of leading one bits = encoded length
    if length > 10 or pos + length > len(key):
        raise FormatError(f"{where}: malformed signed number at byte {pos} of the slice key (corrupt "
                          "index); re-save the checkpoint")
    raw = int.from_bytes(key[pos:pos + length], "big") ^ (((1 << length) - 1) << (7 * length))
    value = raw - (1 << (8 * length)) if negative else raw
    return value, pos + length


def decode(key: bytes, where: str) -> tuple[str, tuple[Extent, ...]]:
    """``(name, extents)`` of a slice key; ``FormatError`` when ``key`` is not one."""
    bad = f"{where}: not a tensor slice key (corrupt index); re-save the checkpoint"
    if not key.startswith(b"\x00"):
        raise FormatError(bad)
    raw_name, pos = _read_string(key, 1, bad)
    if pos >= len(key) or key[pos] > 8 or pos + 1 + key[pos] > len(key):
        raise FormatError(bad)
    rank = int.from_bytes(key[pos + 1:pos + 1 + key[pos]], "big")
    pos += 1 + key[pos]
    if rank == 0 or rank > 64:
        raise FormatError(f"{where}: slice key has rank {rank}, expected 1..64 (corrupt index); "
                          "re-save the checkpoint")
    extents = []
    for _ in range(rank):
        start, pos = _read_signed(key, pos, where)
        length, pos = _read_signed(key, pos, where)
        extents.append((start, length))
    if pos != len(key):
        raise FormatError(f"{where}: {len(key) - pos} stray bytes after the slice key (corrupt index); "
                          "re-save the checkpoint")
    try:
        return raw_name.decode("utf-8"), tuple(extents)
    except UnicodeDecodeError:
        raise FormatError(bad) from None
