"""The protobuf wire decoder: varints, field kinds, bounds checks against forged lengths."""

from __future__ import annotations

import pytest

from tests.readers.tablebuilder import field, varint
from tf2torch.errors import FormatError
from tf2torch.readers.proto import Message, parse_message, read_varint, to_int64, unpack_varints


@pytest.mark.parametrize("value", [0, 1, 127, 128, 300, 2**32, 2**63, 2**64 - 1],
                         ids=["0", "1", "127", "128", "300", "2^32", "2^63", "2^64-1"])
def test_varint_roundtrip(value):
    assert read_varint(varint(value), 0, "x") == (value, len(varint(value)))


@pytest.mark.parametrize("raw", [b"\xff" * 11, b"\x80" * 10 + b"\x01", b"\xff" * 9 + b"\x02"],
                         ids=["11-bytes", "11-bytes-terminated", "overflows-64-bits"])
def test_varint_rejects_overlong(raw):
    with pytest.raises(FormatError, match="where"):
        read_varint(raw, 0, "where")


def test_varint_truncated():
    with pytest.raises(FormatError, match="runs past the end"):
        read_varint(b"\x80\x80", 0, "w")


def test_negative_int64_is_ten_bytes():
    msg = Message(field(4, -5), "w")
    assert len(varint(-5)) == 10 and msg.int64(4) == -5 and to_int64(msg.uint(4)) == -5


def test_message_fields_and_defaults():
    blob = field(1, 7) + field(2, b"abc") + field(6, 0xDEADBEEF, wire=5) + field(2, b"last") + field(3, b"\x01\x96\x01")
    msg = Message(blob, "w")
    assert msg.uint(1) == 7 and msg.string(2) == "last" and msg.fixed32(6) == 0xDEADBEEF
    assert msg.repeated_strings(2) == ["abc", "last"]
    assert msg.repeated_uints(3) == [1, 150]  # packed
    assert msg.uint(9) == 0 and msg.string(9) == "" and not msg.has(9)
    assert set(parse_message(blob, "w")) == {1, 2, 3, 6}


def test_unpacked_repeated_varints_are_accepted():
    assert Message(field(3, 1) + field(3, 2), "w").repeated_uints(3) == [1, 2]
    assert unpack_varints(b"\x01\x02", "w") == [1, 2]


def test_forged_length_never_reads_past_the_buffer():
    forged = varint(2 << 3 | 2) + varint(2**62) + b"tiny"
    with pytest.raises(FormatError, match=r"claims 4611686018427387904 bytes .* only 4 left"):
        parse_message(forged, "entry 'x'")


@pytest.mark.parametrize("blob", [b"\x00", varint(1 << 3 | 3), varint(1 << 3 | 1) + b"\x00"],
                         ids=["field-zero", "group", "short-fixed64"])
def test_malformed_messages(blob):
    with pytest.raises(FormatError):
        parse_message(blob, "w")


def test_wrong_wire_type_names_the_field():
    with pytest.raises(FormatError, match="field 1 should be length-delimited"):
        Message(field(1, 5), "w").string(1)


def test_bad_utf8():
    with pytest.raises(FormatError, match="UTF-8"):
        Message(field(1, b"\xff\xfe"), "w").string(1)
