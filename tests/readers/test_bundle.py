"""Tensor bundles: every dtype bit-exact against TensorFlow, partitions, shards, laziness, corruption."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.readers import tablebuilder as tb
from tests.readers.conftest import LEAD_CHECKPOINTS, NUMERIC, assert_bit_exact, tf_value
from tf2torch.errors import FormatError, IntegrityError, UnsupportedError
from tf2torch.readers import slicekey
from tf2torch.readers.bundle import Bundle
from tf2torch.readers.checkpoint import read_checkpoint
from tf2torch.readers.crc import crc32c

RAW_NAMES = [f"dtypes/{n}" for n in NUMERIC] + ["dtypes/string", "scalar", "empty", "big", "string_scalar", "string_empty"]
TF1_NAMES = ["conv/kernel", "up/kernel", "part", "part/Adam_1", "half", "bf16", "i64", "words", "global_step",
             "beta1_power", "dw/depthwise_kernel/ExponentialMovingAverage", "conv3d/kernel"]


def copy_checkpoint(prefix: Path, dest: Path) -> Path:
    for file in prefix.parent.glob(prefix.name + ".*"):
        shutil.copy(file, dest / file.name)
    return dest / prefix.name


def one_line(exc: pytest.ExceptionInfo) -> str:
    text = str(exc.value)
    assert "\n" not in text
    return text


@pytest.mark.parametrize("name", RAW_NAMES, ids=RAW_NAMES)
def test_every_dtype_bit_exact(tf, raw_bundle, name):
    var = read_checkpoint(raw_bundle)[name]
    theirs = tf_value(tf, raw_bundle, name)
    assert var.shape == theirs.shape
    assert_bit_exact(var.read(), theirs, var.dtype.name)


@pytest.mark.parametrize("name", TF1_NAMES, ids=TF1_NAMES)
def test_tf1_saver_variables_bit_exact(tf, tf1_checkpoint, name):
    var = read_checkpoint(tf1_checkpoint)[name]
    assert_bit_exact(var.read(), tf_value(tf, tf1_checkpoint, name), var.dtype.name)


def test_listing_matches_tf(tf, tf1_checkpoint):
    """Same names, dtypes and shapes as TF lists; slices of partitioned variables are not listed."""
    reader = tf.train.load_checkpoint(str(tf1_checkpoint))
    spec = read_checkpoint(tf1_checkpoint)
    assert {v.name: v.shape for v in spec} == {k: tuple(s) for k, s in reader.get_variable_to_shape_map().items()}
    assert {v.name: v.dtype.name for v in spec} == {k: d.name for k, d in reader.get_variable_to_dtype_map().items()}


def test_partitioned_variable_joined_across_shards(tf1_checkpoint):
    bundle = Bundle(tf1_checkpoint)
    part = bundle.entries["part"]
    assert len(part.slices) == 3 and {p.shard for e in bundle.entries.values() for p in bundle.parts(e)} == {0, 1}
    assert bundle.variable("part").nbytes == 10 * 3 * 4


def test_merged_bundle_slices(tf, merged_bundle):
    prefix, expected = merged_bundle
    bundle = Bundle(prefix)
    assert bundle.num_shards == 2 and sorted(bundle.entries) == ["grid", "ints", "plain", "words"]
    assert {p.shard for p in bundle.parts(bundle.entries["grid"])} == {0, 1}  # one variable, two files
    for name in ("grid", "ints"):
        assert_bit_exact(bundle.read(name), tf_value(tf, prefix, name), "float32")
        assert_bit_exact(bundle.read(name), expected[name], "float32")
    # TF cannot join string slices ("Dtype string not supported"); compare with what was saved.
    assert_bit_exact(bundle.read("words"), expected["words"], "string")


def test_slice_keys_match_tf(tf1_checkpoint):
    """The keys TF wrote for slices are exactly EncodeTensorNameSlice of each full entry's slices."""
    from tf2torch.readers.table import read_table

    stored = {k for k, _ in read_table(f"{tf1_checkpoint}.index") if k.startswith(b"\x00")}
    entries = Bundle(tf1_checkpoint).entries.values()
    assert stored == {slicekey.encode(e.key, ext) for e in entries for ext in e.slices}
    assert len(stored) == 11  # part, part/Adam, part/Adam_1 in 3 slices; pconv/kernel in 2
    for key in stored:
        assert slicekey.encode(*slicekey.decode(key, "test")) == key


@pytest.mark.parametrize("value", [0, 1, -1, 63, 64, -64, -65, 2**13, 2**55, -(2**63), 2**63 - 1],
                         ids=lambda v: str(v))
def test_slice_key_signed_numbers_roundtrip(value):
    assert slicekey.decode(slicekey.encode("a\x00\xffb", ((value, slicekey.FULL),)), "t") == ("a\x00\xffb", ((value, -1),))


def test_reads_are_fresh_writable_buffers(tf1_checkpoint):
    var = read_checkpoint(tf1_checkpoint)["conv/kernel"]
    first = var.read()
    assert first.flags.writeable and not isinstance(first, np.memmap)
    first[...] = 0
    assert np.any(var.read() != 0)


def test_listing_reads_only_the_index(tf1_checkpoint, tmp_path):
    prefix = copy_checkpoint(tf1_checkpoint, tmp_path)
    for data in tmp_path.glob("*.data-*"):  # same size, every byte wrong: only reading can notice
        data.write_bytes(bytes(b ^ 0xFF for b in data.read_bytes()))
    spec = read_checkpoint(prefix)
    with pytest.raises(IntegrityError):
        spec["conv/kernel"].read()


def test_flipped_byte_fails_crc(tf1_checkpoint, tmp_path):
    prefix = copy_checkpoint(tf1_checkpoint, tmp_path)
    entry = Bundle(prefix).entries["conv/kernel"]
    data = tmp_path / f"{prefix.name}.data-{entry.shard:05d}-of-00002"
    raw = bytearray(data.read_bytes())
    raw[entry.offset + 5] ^= 0x10
    data.write_bytes(bytes(raw))
    with pytest.raises(IntegrityError) as exc:
        read_checkpoint(prefix)["conv/kernel"].read()
    assert data.name in one_line(exc) and "conv/kernel" in str(exc.value)
    unchecked = read_checkpoint(prefix, verify_crc=False)["conv/kernel"].read()  # opt-out reads the bytes
    assert unchecked.tobytes()[5] != read_checkpoint(tf1_checkpoint)["conv/kernel"].read().tobytes()[5]


def test_flipped_string_byte_fails_crc(tf1_checkpoint, tmp_path):
    prefix = copy_checkpoint(tf1_checkpoint, tmp_path)
    entry = Bundle(prefix).entries["words"]
    data = tmp_path / f"{prefix.name}.data-{entry.shard:05d}-of-00002"
    raw = bytearray(data.read_bytes())
    raw[entry.offset + entry.size - 1] ^= 0x01  # last string byte
    data.write_bytes(bytes(raw))
    with pytest.raises(IntegrityError, match="words"):
        read_checkpoint(prefix)["words"].read()


def test_truncated_data_file(tf1_checkpoint, tmp_path):
    prefix = copy_checkpoint(tf1_checkpoint, tmp_path)
    data = tmp_path / f"{prefix.name}.data-00000-of-00002"
    data.write_bytes(data.read_bytes()[:-20])
    with pytest.raises(FormatError, match="truncated") as exc:
        read_checkpoint(prefix)
    assert data.name in one_line(exc)


def test_truncated_after_listing(tf1_checkpoint, tmp_path):
    prefix = copy_checkpoint(tf1_checkpoint, tmp_path)
    spec = read_checkpoint(prefix)
    for data in tmp_path.glob("*.data-*"):
        data.write_bytes(b"")
    with pytest.raises(FormatError, match="truncated"):
        spec["conv/kernel"].read()


def test_missing_shard(tf1_checkpoint, tmp_path):
    prefix = copy_checkpoint(tf1_checkpoint, tmp_path)
    (tmp_path / f"{prefix.name}.data-00001-of-00002").unlink()
    with pytest.raises(FormatError, match=r"model\.ckpt\.data-00001-of-00002: data shard 1 of 2 is missing") as exc:
        read_checkpoint(prefix)
    one_line(exc)


@pytest.mark.parametrize("mangle", [lambda b: bytes(range(256)) * 3, lambda b: b[: len(b) // 2], lambda b: b[:-1], lambda b: b""],
                         ids=["garbage", "half", "minus-one-byte", "empty"])
def test_broken_index(tf1_checkpoint, tmp_path, mangle):
    prefix = copy_checkpoint(tf1_checkpoint, tmp_path)
    index = tmp_path / f"{prefix.name}.index"
    index.write_bytes(mangle(index.read_bytes()))
    with pytest.raises(FormatError) as exc:
        read_checkpoint(prefix)
    assert "model.ckpt.index" in one_line(exc)


# ---- forged bundles: valid tables (correct block CRCs) carrying hostile entries ------------------

def forge(tmp_path: Path, entries: list[tuple[bytes, bytes]], data: bytes = b"\x00" * 64, header: bytes | None = None) -> Path:
    prefix = tmp_path / "forged"
    (tmp_path / "forged.data-00000-of-00001").write_bytes(data)
    (tmp_path / "forged.index").write_bytes(tb.table([(b"", header or tb.header())] + entries))
    return prefix


HOSTILE = {
    "huge-length": tb.field(1, 1) + tb.varint(2 << 3 | 2) + tb.varint(2**62) + b"\x08\x02",
    "eleven-byte-varint": tb.field(1, 1) + tb.varint(5 << 3) + b"\xff" * 10 + b"\x01",
    "huge-shape": tb.entry(1, (2**40, 2**40), 0, 16, 0),
    "negative-dim": tb.entry(1, (-3,), 0, 12, 0),
    "offset-past-file": tb.entry(1, (4,), 2**40, 16, 0),
    "size-mismatch": tb.entry(1, (4,), 0, 12, 0),
    "bad-shard": tb.entry(1, (4,), 0, 16, 0, shard=7),
    "negative-size": tb.field(1, 1) + tb.field(2, tb.shape((4,))) + tb.field(5, -16),
    "huge-string-count": tb.entry(7, (2**50,), 0, 64, 0),
}


@pytest.mark.parametrize("name", list(HOSTILE), ids=list(HOSTILE))
def test_forged_entries(tmp_path, name):
    with pytest.raises(FormatError) as exc:
        prefix = forge(tmp_path, [(b"v", HOSTILE[name])])
        spec = read_checkpoint(prefix)
        spec["v"].read()
    assert "forged" in one_line(exc)


def test_forged_string_length(tmp_path):
    payload = tb.varint(2**60) + tb.varint(1) + b"\x00" * 4 + b"ab"  # first length is absurd
    prefix = forge(tmp_path, [(b"s", tb.entry(7, (2,), 0, len(payload), 0))], payload)
    with pytest.raises(FormatError, match="string lengths add up") as exc:
        read_checkpoint(prefix, verify_crc=False)["s"].read()
    one_line(exc)


def test_string_length_checksum(tmp_path):
    payload = tb.varint(2) + b"\x00\x00\x00\x00" + b"ab"  # wrong (zero) length checksum
    prefix = forge(tmp_path, [(b"s", tb.entry(7, (1,), 0, len(payload), crc32c(payload)))], payload)
    with pytest.raises(IntegrityError, match="length checksum"):
        read_checkpoint(prefix)["s"].read()


def test_missing_slice_entry(tmp_path):
    extent = tb.field(1, tb.field(1, 0) + tb.field(2, 2))
    full = tb.field(1, 1) + tb.field(2, tb.shape((4,))) + tb.field(7, extent)  # slice [0, 2) only, never stored
    with pytest.raises(FormatError, match=r"'v': expected slice \[\(0, 2\)\]"):
        read_checkpoint(forge(tmp_path, [(b"v", full)]))


def test_slices_must_tile(tmp_path):
    data = np.arange(4, dtype=np.float32).tobytes()
    extent = tb.field(1, tb.field(1, 0) + tb.field(2, 2))
    full = tb.field(1, 1) + tb.field(2, tb.shape((4,))) + tb.field(7, extent) + tb.field(7, extent)
    part = tb.entry(1, (2,), 0, 8, crc32c(data[:8]))
    key = slicekey.encode("v", ((0, 2),))
    with pytest.raises(FormatError, match="cover 4 of 4 elements and overlap"):
        read_checkpoint(forge(tmp_path, [(key, part), (b"v", full)], data))


def test_big_endian_refused(tmp_path):
    with pytest.raises(UnsupportedError, match="big-endian"):
        read_checkpoint(forge(tmp_path, [], header=tb.header(endianness=1)))


def test_newer_format_refused(tmp_path):
    with pytest.raises(UnsupportedError, match="version 5"):
        read_checkpoint(forge(tmp_path, [], header=tb.header(min_consumer=5)))


def test_header_must_come_first(tmp_path):
    (tmp_path / "x.index").write_bytes(tb.table([(b"a", tb.entry(1, (1,), 0, 4, 0))]))
    with pytest.raises(FormatError, match="bundle header under the empty key"):
        read_checkpoint(tmp_path / "x")


def test_unsupported_dtype_is_skipped_with_a_note(tmp_path):
    data = np.arange(4, dtype=np.float32).tobytes()
    prefix = forge(tmp_path, [(b"a", tb.entry(1, (4,), 0, 16, crc32c(data))), (b"q", tb.entry(11, (4,), 0, 4, 0))], data)
    spec = read_checkpoint(prefix)
    assert spec.names() == ["a"] and "'q'" in spec.notes[0] and "enum 11" in spec.notes[0]


@pytest.mark.skipif(not LEAD_CHECKPOINTS, reason="fixtures/ holds no checkpoints (run make fixtures)")
@pytest.mark.parametrize("prefix", LEAD_CHECKPOINTS, ids=[str(p.relative_to(p.parents[1])) for p in LEAD_CHECKPOINTS])
def test_lead_fixtures_bit_exact(tf, prefix):
    spec = read_checkpoint(prefix)
    keys = Bundle(prefix).entries
    for var, key in zip(spec, keys):
        assert_bit_exact(var.read(), tf_value(tf, prefix, key), var.dtype.name)
