"""A tiny protobuf wire-format decoder, so reading checkpoints never needs the ``protobuf`` package.

Only the wire format is decoded (https://protobuf.dev/programming-guides/encoding/); callers know
their field numbers from the ``.proto`` files. Every length is checked against the buffer before it
is used, so a forged length can never make us allocate more than the buffer already holds. Errors
are ``FormatError`` prefixed with a caller-provided ``where`` (file and object being decoded).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import NamedTuple

from ..errors import FormatError

Buffer = bytes | bytearray | memoryview

VARINT, FIXED64, LEN, START_GROUP, END_GROUP, FIXED32 = 0, 1, 2, 3, 4, 5
_MAX_VARINT_BYTES = 10  # ceil(64 / 7): anything longer is not a 64-bit varint
_MAX_FIELD_NUMBER = (1 << 29) - 1
_U64 = (1 << 64) - 1


class Field(NamedTuple):
    wire: int  # wire type: VARINT, FIXED64, LEN or FIXED32
    value: int | memoryview  # ints for VARINT/FIXED*, a zero-copy view for LEN


def read_varint(buf: Buffer, pos: int, where: str) -> tuple[int, int]:
    """The unsigned varint at ``buf[pos:]`` and the position after it."""
    if pos < len(buf) and buf[pos] < 0x80:  # fast path: most tags and lengths are one byte
        return buf[pos], pos + 1
    result = 0
    for i in range(_MAX_VARINT_BYTES):
        if pos + i >= len(buf):
            raise FormatError(f"{where}: varint at byte {pos} runs past the end of its {len(buf)}-byte "
                              "buffer (file truncated or corrupt); re-save the checkpoint")
        byte = buf[pos + i]
        result |= (byte & 0x7F) << (7 * i)
        if byte < 0x80:
            # The 10th byte may only carry bit 63; more means the value does not fit in 64 bits.
            if result > _U64:
                raise FormatError(f"{where}: varint at byte {pos} overflows 64 bits (corrupt data); "
                                  "re-save the checkpoint")
            return result, pos + i + 1
    raise FormatError(f"{where}: varint at byte {pos} is longer than {_MAX_VARINT_BYTES} bytes "
                      "(corrupt data); re-save the checkpoint")


def to_int64(value: int) -> int:
    """Reinterpret a decoded uint64 as int64 (negative int32/int64 fields are 10-byte varints)."""
    return value - (1 << 64) if value >= 1 << 63 else value


def iter_fields(buf: Buffer, where: str) -> Iterator[tuple[int, Field]]:
    """``(field_number, Field)`` pairs in wire order."""
    view = memoryview(buf).cast("B") if not isinstance(buf, memoryview) else buf
    pos, end = 0, len(view)
    while pos < end:
        tag, pos = read_varint(view, pos, where)
        number, wire = tag >> 3, tag & 7
        if number == 0 or number > _MAX_FIELD_NUMBER:
            raise FormatError(f"{where}: invalid protobuf field number {number} at byte {pos} "
                              "(not a protobuf message, or corrupt); re-save the file")
        if wire == VARINT:
            value, pos = read_varint(view, pos, where)
            yield number, Field(wire, value)
        elif wire in (FIXED64, FIXED32):
            width = 8 if wire == FIXED64 else 4
            if pos + width > end:
                raise FormatError(f"{where}: field {number} needs {width} bytes at byte {pos}, only "
                                  f"{end - pos} left (truncated); re-save the file")
            yield number, Field(wire, int.from_bytes(view[pos:pos + width], "little"))
            pos += width
        elif wire == LEN:
            length, pos = read_varint(view, pos, where)
            # Checked before slicing: a forged length must not reach past (or allocate beyond) the buffer.
            if length > end - pos:
                raise FormatError(f"{where}: field {number} claims {length} bytes at byte {pos}, only "
                                  f"{end - pos} left (truncated or forged length); re-save the file")
            yield number, Field(wire, view[pos:pos + length])
            pos += length
        else:
            # Groups (3/4) are proto2-only and never used by the TensorFlow messages we read.
            raise FormatError(f"{where}: unsupported protobuf wire type {wire} for field {number} at "
                              f"byte {pos} (corrupt, or not the expected message); re-save the file")


def parse_message(buf: Buffer, where: str) -> dict[int, list[Field]]:
    """``{field_number: [Field, ...]}`` with repeated fields in wire order."""
    fields: dict[int, list[Field]] = {}
    for number, field in iter_fields(buf, where):
        fields.setdefault(number, []).append(field)
    return fields


def unpack_varints(buf: Buffer, where: str) -> list[int]:
    """The values of a packed repeated varint field (proto3 packs repeated scalars by default)."""
    out, pos = [], 0
    while pos < len(buf):
        value, pos = read_varint(buf, pos, where)
        out.append(value)
    return out


class Message:
    """Typed, wire-type-checked access to a parsed message; absent fields read as proto3 defaults."""

    def __init__(self, buf: Buffer, where: str) -> None:
        self.where = where
        self.fields = parse_message(buf, where)

    def _all(self, number: int, wires: tuple[int, ...], kind: str) -> list[Field]:
        found = self.fields.get(number, [])
        for field in found:
            if field.wire not in wires:
                raise FormatError(f"{self.where}: field {number} should be {kind}, found wire type "
                                  f"{field.wire} (not the expected message, or corrupt); re-save the file")
        return found

    def has(self, number: int) -> bool:
        return number in self.fields

    def uint(self, number: int, default: int = 0) -> int:
        found = self._all(number, (VARINT,), "a varint")
        return found[-1].value if found else default  # type: ignore[return-value]  # last one wins

    def int64(self, number: int, default: int = 0) -> int:
        return to_int64(self.uint(number, default))

    def flag(self, number: int) -> bool:
        return self.uint(number) != 0

    def fixed32(self, number: int, default: int = 0) -> int:
        found = self._all(number, (FIXED32,), "a fixed32")
        return found[-1].value if found else default  # type: ignore[return-value]

    def float32(self, number: int, default: float = 0.0) -> float:
        return struct.unpack("<f", self.fixed32(number).to_bytes(4, "little"))[0] if self.has(number) else default

    def blob(self, number: int) -> bytes:
        found = self._all(number, (LEN,), "length-delimited")
        return bytes(found[-1].value) if found else b""  # type: ignore[arg-type]

    def string(self, number: int) -> str:
        return decode_utf8(self.blob(number), f"{self.where} field {number}")

    def repeated_bytes(self, number: int) -> list[memoryview]:
        return [f.value for f in self._all(number, (LEN,), "length-delimited")]  # type: ignore[misc]

    def repeated_strings(self, number: int) -> list[str]:
        return [decode_utf8(bytes(v), f"{self.where} field {number}") for v in self.repeated_bytes(number)]

    def messages(self, number: int, what: str) -> list[Message]:
        views = self.repeated_bytes(number)
        return [Message(v, f"{self.where} > {what}[{i}]") for i, v in enumerate(views)]

    def message(self, number: int, what: str) -> Message:
        found = self.repeated_bytes(number)
        return Message(found[-1] if found else b"", f"{self.where} > {what}")

    def repeated_uints(self, number: int) -> list[int]:
        """A repeated varint field, whether the writer packed it or not (parsers must accept both)."""
        out: list[int] = []
        for field in self._all(number, (VARINT, LEN), "a (packed) varint"):
            if field.wire == LEN:
                out.extend(unpack_varints(field.value, f"{self.where} field {number}"))  # type: ignore[arg-type]
            else:
                out.append(field.value)  # type: ignore[arg-type]
        return out

    def repeated_ints(self, number: int) -> list[int]:
        return [to_int64(v) for v in self.repeated_uints(number)]

    def repeated_floats(self, number: int) -> list[float]:
        """A repeated ``float`` field, packed (4-byte little-endian runs) or not."""
        out: list[float] = []
        for field in self._all(number, (FIXED32, LEN), "a (packed) float"):
            if field.wire == LEN:
                data = bytes(field.value)  # type: ignore[arg-type]
                if len(data) % 4:
                    raise FormatError(f"{self.where}: packed float field {number} has {len(data)} bytes, "
                                      "not a multiple of 4 (corrupt); re-save the file")
                out.extend(struct.unpack(f"<{len(data) // 4}f", data))
            else:
                out.append(struct.unpack("<f", field.value.to_bytes(4, "little"))[0])  # type: ignore[union-attr]
        return out


def decode_utf8(data: bytes, where: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FormatError(f"{where}: expected UTF-8 text, found undecodable byte at {exc.start} "
                          "(corrupt or not the expected message); re-save the file") from None
