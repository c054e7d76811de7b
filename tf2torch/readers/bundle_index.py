"""TensorFlow tensor bundles' ``.index`` side: the header, one ``BundleEntryProto`` per tensor (or slice of a
partitioned one), and the checks that an entry fits its dtype, shape and data file. ``bundle.Bundle`` reads
the tensors these entries point at. Format facts: tensorflow/core/util/tensor_bundle/tensor_bundle.cc,
core/protobuf/tensor_bundle.proto.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from ..dtypes import DType, from_tf_enum
from ..errors import FormatError, UnsupportedError
from . import slicekey
from .crc import unmask
from .proto import Message

FIX = "re-save the checkpoint, or restore its files from a backup"
_BUNDLE_VERSION = 1  # kTensorBundleVersion: the consumer version we implement


def data_path(prefix: str, shard: int, num_shards: int) -> Path:
    return Path(f"{prefix}.data-{shard:05d}-of-{num_shards:05d}")  # DataFilename() in tensor_bundle.cc


@dataclass(frozen=True)
class Entry:
    """One ``BundleEntryProto``: where a tensor (or, with ``slices``, a partitioned tensor) lives."""

    key: str
    dtype: DType
    shape: tuple[int, ...]
    shard: int
    offset: int
    size: int
    crc: int  # unmasked
    slices: tuple[tuple[slicekey.Extent, ...], ...] = ()

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


def _shape(msg: Message, where: str) -> tuple[int, ...]:
    """A ``TensorShapeProto``: dim (2) of {size (1)}, unknown_rank (3)."""
    if msg.flag(3):
        raise FormatError(f"{where}: stored tensor has unknown rank, expected a fully defined shape; {FIX}")
    dims = tuple(d.int64(1) for d in msg.messages(2, "dim"))
    # numpy arrays have at most 64 dimensions (TF allows 254, but no checkpoint tensor comes close).
    if any(d < 0 for d in dims) or math.prod(dims) >= 1 << 62 or len(dims) > 64:
        raise FormatError(f"{where}: expected non-negative dimensions of sane size, found shape "
                          f"{list(dims)}; {FIX}")
    return dims


def _slices(msg: Message, shape: tuple[int, ...], where: str) -> tuple[tuple[slicekey.Extent, ...], ...]:
    """``TensorSliceProto``s: extent (1) of {start (1), length (2), where a missing length = full}."""
    out = []
    for i, proto in enumerate(msg.messages(7, "slices")):
        extents = tuple((e.int64(1), e.int64(2) if e.has(2) else slicekey.FULL)
                        for e in proto.messages(1, "extent"))
        if len(extents) != len(shape) or any(  # a full extent (length -1) must start at 0
            s < 0 or (s != 0 if n == slicekey.FULL else n < 0 or s + n > d) for (s, n), d in zip(extents, shape)
        ):
            raise FormatError(f"{where}: slice {i} {list(extents)} does not fit the full shape {list(shape)}; {FIX}")
        out.append(extents)
    return tuple(out)


def boxes_of(entry: Entry) -> list[tuple[tuple[int, int], ...]]:
    """Each slice as per-dimension [begin, end) bounds."""
    return [tuple((s, d) if n == slicekey.FULL else (s, s + n) for (s, n), d in zip(ext, entry.shape))
            for ext in entry.slices]


def parse_header(value: bytes, index_path: Path) -> int:
    """The shard count of a ``BundleHeaderProto``: num_shards (1), endianness (2), version (3) {producer,
    min_consumer, bad}."""
    where = f"{index_path}: bundle header"
    msg = Message(value, where)
    if msg.uint(2) != 0:  # Endianness.BIG; metadata is protobuf, but tensor bytes would be swapped
        raise UnsupportedError(f"{where}: checkpoint was written on a big-endian machine; tf2torch reads "
                               "little-endian bundles only; re-save it on a little-endian machine")
    version = msg.message(3, "version")
    if version.int64(2) > _BUNDLE_VERSION or _BUNDLE_VERSION in version.repeated_ints(3):
        raise UnsupportedError(f"{where}: bundle format needs a reader of version {version.int64(2)}, "
                               f"tf2torch implements version {_BUNDLE_VERSION}; re-save with an older TF")
    shards = msg.int64(1)
    if not 0 <= shards < 1 << 20:
        raise FormatError(f"{where}: expected a shard count >= 0, found {shards}; {FIX}")
    return shards

def parse_entry(name: str, value: bytes, index_path: Path, num_shards: int, notes: list[str]) -> Entry | None:
    """A ``BundleEntryProto``; None (with a note) for a dtype tf2torch cannot hold, e.g. DT_VARIANT."""
    where = f"{index_path} variable {name!r}"
    msg = Message(value, where)
    try:
        dtype = from_tf_enum(msg.uint(1), where)
    except UnsupportedError as exc:
        notes.append(f"skipped {name!r}: {exc}")  # e.g. DT_VARIANT iterator state
        return None
    shape = _shape(msg.message(2, "shape"), where)
    shard, offset, size = msg.int64(3), msg.int64(4), msg.int64(5)
    if offset < 0 or size < 0 or not (msg.has(7) or 0 <= shard < num_shards):
        raise FormatError(f"{where}: expected shard in [0, {num_shards}), offset and size >= 0; "
                          f"found shard {shard}, offset {offset}, size {size}; {FIX}")
    return Entry(name, dtype, shape, shard, offset, size, unmask(msg.fixed32(6)), _slices(msg, shape, where))


def check_range(entry: Entry, path: Path, file_size: int) -> None:
    """The entry's bytes fit its dtype and shape, and lie inside its data file of ``file_size`` bytes."""
    where = f"{path} variable {entry.key!r}"
    if entry.dtype.name != "string" and entry.size != entry.numel * entry.dtype.itemsize:
        raise FormatError(f"{where}: expected {entry.numel * entry.dtype.itemsize} bytes for "
                          f"{entry.dtype.name}{list(entry.shape)}, index says {entry.size}; {FIX}")
    # Strings: at least one varint byte per element plus the 4-byte length checksum (TF checks a
    # similar lower bound); this also stops a forged shape from sizing an allocation.
    if entry.dtype.name == "string" and entry.numel and entry.size < entry.numel + 4:
        raise FormatError(f"{where}: {entry.numel} strings need at least {entry.numel + 4} bytes, "
                          f"index says {entry.size}; {FIX}")
    if entry.offset + entry.size > file_size:
        raise FormatError(f"{where}: expected bytes [{entry.offset}, {entry.offset + entry.size}), the "
                          f"file has {file_size} bytes (truncated); {FIX}")
