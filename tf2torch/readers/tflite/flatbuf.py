"""A small, bounds-checked FlatBuffers table reader: enough of the binary format to read a TFLite model.

The format (flatbuffers.dev, "Internals"): every offset is little-endian; a ``uoffset`` (uint32) points
forward from where it is stored; a table starts with an ``soffset`` (int32) back to its vtable; a vtable
is ``[vtable bytes: u16, table bytes: u16, field offsets: u16...]``, a field offset of 0 meaning "absent,
use the schema default"; a vector or a string is a uint32 count followed by its elements (a string also
has a NUL after them). Nothing here trusts the file: every offset, count and length is checked against
the buffer before it is used, tables nest only ``MAX_DEPTH`` deep and vectors hold at most ``MAX_COUNT``
elements, so a forged file ends in one ``FormatError`` line, never in an IndexError, a huge allocation or
a hang. The ``flatbuffers`` package's generated readers check none of this, hence this module.
"""

from __future__ import annotations

import struct

from ...errors import FormatError

MAX_DEPTH = 16  # Model > SubGraph > Operator > options: 4 levels; a bound keeps forged nesting finite
MAX_COUNT = 1 << 24  # elements in one vector of tables or scalars (a big model has ~10^4 tensors)
_SCALARS = {"b": 1, "B": 1, "h": 2, "H": 2, "i": 4, "I": 4, "q": 8, "Q": 8, "f": 4, "d": 8, "?": 1}


class Table:
    """One table of the buffer, at ``pos``, with its vtable decoded; fields are read by slot number
    (the n-th field of the schema's table, counting a union as two: its type, then its value)."""

    __slots__ = ("buf", "pos", "slots", "where", "depth")

    def __init__(self, buf: memoryview, pos: int, where: str, depth: int = 0) -> None:
        if depth > MAX_DEPTH:
            raise FormatError(f"{where}: tables nested more than {MAX_DEPTH} deep; the file is corrupt")
        self.buf, self.pos, self.where, self.depth = buf, pos, where, depth
        _check(buf, pos, 4, where, "table")
        vtable = pos - struct.unpack_from("<i", buf, pos)[0]
        _check(buf, vtable, 4, where, "vtable")
        vsize, tsize = struct.unpack_from("<HH", buf, vtable)
        if vsize < 4 or vsize % 2:
            raise FormatError(f"{where}: a vtable of {vsize} bytes at byte {vtable} (expected an even size >= 4); "
                              "the file is corrupt")
        _check(buf, vtable, vsize, where, "vtable")
        _check(buf, pos, tsize, where, "table")
        offsets = struct.unpack_from(f"<{(vsize - 4) // 2}H", buf, vtable + 4)
        for slot, off in enumerate(offsets):
            if off and off >= tsize:  # a field must lie inside its table's declared size
                raise FormatError(f"{where}: field {slot} at offset {off} of a {tsize}-byte table; the file is corrupt")
        self.slots = offsets

    def _field(self, slot: int) -> int:
        """The absolute position of field ``slot``, or 0 when absent."""
        return self.pos + self.slots[slot] if slot < len(self.slots) and self.slots[slot] else 0

    def has(self, slot: int) -> bool:
        return bool(self._field(slot))

    def scalar(self, slot: int, fmt: str, default: int | float | bool = 0) -> int | float | bool:
        at = self._field(slot)
        if not at:
            return default
        _check(self.buf, at, _SCALARS[fmt], self.where, f"field {slot}")
        return struct.unpack_from("<" + fmt, self.buf, at)[0]

    def _target(self, slot: int) -> int:
        """Where the uoffset stored in field ``slot`` points (0 when absent)."""
        at = self._field(slot)
        if not at:
            return 0
        _check(self.buf, at, 4, self.where, f"field {slot}")
        return _follow(self.buf, at, self.where)

    def table(self, slot: int, what: str) -> Table | None:
        target = self._target(slot)
        return Table(self.buf, target, f"{self.where} > {what}", self.depth + 1) if target else None

    def string(self, slot: int, default: str = "") -> str:
        target = self._target(slot)
        if not target:
            return default
        raw = bytes(self._vector_bytes(target, 1, f"string field {slot}"))
        return raw.decode("utf-8", errors="replace")  # names are for humans: a bad byte is shown, not fatal

    def _vector_bytes(self, target: int, size: int, what: str) -> memoryview:
        count = _count(self.buf, target, self.where, what)
        _check(self.buf, target + 4, count * size, self.where, what)
        return self.buf[target + 4 : target + 4 + count * size]

    def scalars(self, slot: int, fmt: str) -> tuple:
        """A vector of scalars (``fmt`` a ``struct`` code), or () when absent."""
        target = self._target(slot)
        if not target:
            return ()
        raw = self._vector_bytes(target, _SCALARS[fmt], f"vector field {slot}")
        return struct.unpack_from(f"<{len(raw) // _SCALARS[fmt]}{fmt}", raw)

    def bytes_view(self, slot: int) -> tuple[int, int]:
        """A ``[ubyte]`` vector as (absolute start, length): tensor data stays in the mapped file."""
        target = self._target(slot)
        if not target:
            return 0, 0
        count = _count(self.buf, target, self.where, f"byte vector {slot}")
        _check(self.buf, target + 4, count, self.where, f"byte vector {slot}")
        return target + 4, count

    def tables(self, slot: int, what: str) -> list[Table]:
        """A vector of tables; each element is a uoffset to its table."""
        target = self._target(slot)
        if not target:
            return []
        count = _count(self.buf, target, self.where, what)
        _check(self.buf, target + 4, count * 4, self.where, what)
        return [Table(self.buf, _follow(self.buf, target + 4 + 4 * i, self.where), f"{self.where} > {what}[{i}]",
                      self.depth + 1) for i in range(count)]


def root(buf: memoryview, where: str) -> Table:
    """The root table: the buffer's first uoffset points at it (the file identifier follows it)."""
    _check(buf, 0, 8, where, "header")
    return Table(buf, _follow(buf, 0, where), where)


def _check(buf: memoryview, pos: int, size: int, where: str, what: str) -> None:
    if pos < 0 or size < 0 or pos + size > len(buf):
        raise FormatError(f"{where}: {what} at byte {pos} ({size} bytes) lies outside the {len(buf)}-byte buffer; "
                          "the file is truncated or corrupt, re-export it")


def _follow(buf: memoryview, at: int, where: str) -> int:
    target = at + struct.unpack_from("<I", buf, at)[0]
    if target >= len(buf) or target == at:
        raise FormatError(f"{where}: an offset at byte {at} points to byte {target}, outside the {len(buf)}-byte "
                          "buffer; the file is truncated or corrupt, re-export it")
    return target


def _count(buf: memoryview, target: int, where: str, what: str) -> int:
    _check(buf, target, 4, where, what)
    count = struct.unpack_from("<I", buf, target)[0]
    if count > MAX_COUNT:
        raise FormatError(f"{where}: {what} claims {count} elements (at most {MAX_COUNT} are read); the file is "
                          "corrupt")
    return count

