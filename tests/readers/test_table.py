"""The LevelDB-style table of .index files: real TF files, forged multi-block tables, corruption."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.readers import tablebuilder as tb
from tf2torch.errors import FormatError, IntegrityError, UnsupportedError
from tf2torch.readers.table import FOOTER_SIZE, Table, read_table

ENTRIES = sorted((f"layer{i // 3}/w{i:03d}".encode(), f"value-{i}".encode() * (i % 4)) for i in range(40))


def write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "t.index"
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("per_block", [1, 3, 40], ids=["block-per-entry", "3-per-block", "one-block"])
def test_roundtrip_prefix_compressed_blocks(tmp_path, per_block):
    assert read_table(write(tmp_path, tb.table(ENTRIES, per_block))) == ENTRIES


def test_empty_table(tmp_path):
    assert read_table(write(tmp_path, tb.table([]))) == []


def test_reads_tf_written_index(tf1_checkpoint):
    entries = read_table(f"{tf1_checkpoint}.index")
    keys = [k for k, _ in entries]
    assert keys[0] == b"" and keys == sorted(keys) and b"conv/kernel" in keys


def test_builder_matches_tf(tf, tmp_path):
    """Our test writer produces tables TF reads: the forged-input tests build on real structure."""
    import numpy as np

    tb.write_bundle(tmp_path / "own", {"a": np.arange(6, dtype=np.float32)}, {"a": 1})
    assert tf.train.load_checkpoint(str(tmp_path / "own")).get_tensor("a").tolist() == list(range(6))


@pytest.mark.parametrize("size", [0, 10, FOOTER_SIZE - 1], ids=["empty", "10-bytes", "47-bytes"])
def test_too_short(tmp_path, size):
    with pytest.raises(FormatError, match=r"t\.index: expected a TensorFlow table"):
        Table(write(tmp_path, b"\x00" * size))


def test_garbage(tmp_path):
    with pytest.raises(FormatError, match="table magic"):
        Table(write(tmp_path, bytes(range(256)) * 4))


def test_truncated(tmp_path):
    data = tb.table(ENTRIES)
    with pytest.raises(FormatError, match=r"t\.index"):
        Table(write(tmp_path, data[: len(data) // 2]))


def test_block_crc_mismatch(tmp_path):
    data = bytearray(tb.table(ENTRIES))
    data[5] ^= 0x01  # inside the first data block
    with pytest.raises(IntegrityError, match="data block 0 .*CRC32C"):
        read_table(write(tmp_path, bytes(data)))


def test_snappy_refused(tmp_path):
    with pytest.raises(UnsupportedError, match="snappy"):
        read_table(write(tmp_path, tb.table(ENTRIES, kind=1)))


def test_unknown_compression(tmp_path):
    with pytest.raises(FormatError, match="compression type 7"):
        read_table(write(tmp_path, tb.table(ENTRIES, kind=7)))


def test_block_handle_past_end(tmp_path):
    data = bytearray(tb.table(ENTRIES))
    footer = tb.varint(0) + tb.varint(0) + tb.varint(len(data)) + tb.varint(10)  # index "after" the file
    data[-FOOTER_SIZE:-8] = footer.ljust(40, b"\x00")
    with pytest.raises(FormatError, match="index block at offset .* runs past"):
        Table(write(tmp_path, bytes(data)))


def _raw_block_table(contents: bytes) -> bytes:
    """One data block with the given contents, a valid trailer, index and footer."""
    index = tb.block([(b"\xff", tb.varint(0) + tb.varint(len(contents)))])
    body = tb._with_trailer(contents)
    meta = len(body)
    body += tb._with_trailer(tb.block([]))
    index_at = len(body)
    body += tb._with_trailer(index)
    handles = tb.varint(meta) + tb.varint(len(tb.block([]))) + tb.varint(index_at) + tb.varint(len(index))
    return body + handles.ljust(40, b"\x00") + tb.MAGIC.to_bytes(8, "little")


@pytest.mark.parametrize(("contents", "message"), [
    (b"\x00\x01\x01a1" + (5).to_bytes(4, "little"), "restart count 5"),
    (b"\x00\x01\x7fa" + (0).to_bytes(4, "little") + (1).to_bytes(4, "little"), "bad entry"),
    (b"\x00\x01\x00b\x05\x01\x00c" + (0).to_bytes(4, "little") + (1).to_bytes(4, "little"), "bad entry"),
    (b"\x00\x01\x00b\x00\x01\x00a" + (0).to_bytes(4, "little") + (1).to_bytes(4, "little"), "out of order"),
    (b"\x00\x01\x00a\x00\x01\x00a" + (0).to_bytes(4, "little") + (1).to_bytes(4, "little"), "out of order"),
    (b"\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01" + (0).to_bytes(4, "little") + (1).to_bytes(4, "little"), "varint"),
], ids=["restarts-overflow", "value-past-end", "shared-too-long", "unsorted", "duplicate", "huge-varint"])
def test_corrupt_block_entries(tmp_path, contents, message):
    with pytest.raises(FormatError, match=message):
        read_table(write(tmp_path, _raw_block_table(contents)))
