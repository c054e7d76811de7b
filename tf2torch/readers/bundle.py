"""TensorFlow tensor bundles (``PREFIX.index`` + ``PREFIX.data-0000i-of-0000N``), read without TF.

Format facts (tensorflow/core/util/tensor_bundle/tensor_bundle.cc, core/protobuf/tensor_bundle.proto):

* the ``.index`` is a sorted table (``table.py``) of key -> serialized ``BundleEntryProto``; its first
  entry, under the empty key, is the ``BundleHeaderProto`` (num_shards, endianness, version);
* data lives in shard ``shard_id`` at ``[offset, offset + size)``; ``crc32c`` is the *masked* CRC32C of
  those bytes. Numeric tensors are raw little-endian element bytes (bool: one byte each);
* a partitioned variable's entry has ``slices`` and no data; each slice is its own entry under an
  OrderedCode key (``slicekey.py``). Slice entries are hidden here and joined on read.

Opening a bundle reads only the ``.index`` and stats the data files. Tensor bytes are read on demand:
a tensor of at least ``_MAP_MIN`` bytes is memory-mapped on its own (read-only; no copy, and the
mapping goes with the last array using it), smaller ones are read into a fresh buffer. The CRC32C is
checked before the array is handed out, chunk by chunk over the mapping, dropping each chunk's pages
behind the check (``tf2torch.pages``) so that checking a large tensor does not make it resident.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..dtypes import DType, from_tf_enum
from ..errors import FormatError, IntegrityError, UnsupportedError
from ..spec import Role, Variable
from . import slicekey
from .crc import crc32c, unmask
from .proto import Message, decode_utf8
from .table import Table

if TYPE_CHECKING:  # numpy is imported by the reads only: listing a checkpoint (`inspect`) needs none
    import numpy as np

_FIX = "re-save the checkpoint, or restore its files from a backup"
_BUNDLE_VERSION = 1  # kTensorBundleVersion: the consumer version we implement
_CHUNK = 64 << 20  # read granularity for large tensors
# Mapping costs a few system calls and page-table work; below this size a plain read is cheaper.
_MAP_MIN = 1 << 20
_CRC_CHUNK = 16 << 20  # CRC granularity over a mapping: pages are dropped behind each chunk


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
        raise FormatError(f"{where}: stored tensor has unknown rank, expected a fully defined shape; {_FIX}")
    dims = tuple(d.int64(1) for d in msg.messages(2, "dim"))
    # numpy arrays have at most 64 dimensions (TF allows 254, but no checkpoint tensor comes close).
    if any(d < 0 for d in dims) or math.prod(dims) >= 1 << 62 or len(dims) > 64:
        raise FormatError(f"{where}: expected non-negative dimensions of sane size, found shape "
                          f"{list(dims)}; {_FIX}")
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
            raise FormatError(f"{where}: slice {i} {list(extents)} does not fit the full shape {list(shape)}; {_FIX}")
        out.append(extents)
    return tuple(out)


def _boxes(entry: Entry) -> list[tuple[tuple[int, int], ...]]:
    """Each slice as per-dimension [begin, end) bounds."""
    return [tuple((s, d) if n == slicekey.FULL else (s, s + n) for (s, n), d in zip(ext, entry.shape))
            for ext in entry.slices]


class Bundle:
    """An opened tensor bundle: its entries (index only) and on-demand, CRC-checked tensor reads."""

    def __init__(self, prefix: Path | str, verify_crc: bool = True) -> None:
        self.prefix = str(prefix)
        self.index_path = Path(f"{self.prefix}.index")
        self.verify_crc = verify_crc
        self.notes: list[str] = []
        self._paths: dict[int, Path] = {}
        table = iter(Table(self.index_path))
        first = next(table, None)
        if first is None or first[0] != b"":
            raise FormatError(f"{self.index_path}: expected the bundle header under the empty key as first "
                              "entry, found " + (repr(first[0]) if first else "an empty table") + f"; {_FIX}")
        self.num_shards = self._header(first[1])
        self.entries: dict[str, Entry] = {}  # visible keys, in index order
        self._slice_entries: dict[bytes, Entry] = {}
        for key, value in table:
            if key.startswith(b"\x00"):  # NumIncreasing(0): a slice of a partitioned variable
                name, _ = slicekey.decode(key, f"{self.index_path} key {key!r}")
                entry = self._entry(f"slice of {name!r}", value)
                if entry is not None:
                    self._slice_entries[key] = entry
                continue
            name = decode_utf8(key, f"{self.index_path} key {key!r}")
            entry = self._entry(name, value)
            if entry is not None:
                self.entries[name] = entry
        self.shard_sizes = self._stat_shards()
        for entry in self.entries.values():
            for part in self.parts(entry):
                self._check_range(part, self.shard_sizes)

    def data_path(self, shard: int) -> Path:
        if shard not in self._paths:
            self._paths[shard] = data_path(self.prefix, shard, self.num_shards)
        return self._paths[shard]

    def _header(self, value: bytes) -> int:
        """``BundleHeaderProto``: num_shards (1), endianness (2), version (3) {producer, min_consumer, bad}."""
        where = f"{self.index_path}: bundle header"
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
            raise FormatError(f"{where}: expected a shard count >= 0, found {shards}; {_FIX}")
        return shards

    def _entry(self, name: str, value: bytes) -> Entry | None:
        where = f"{self.index_path} variable {name!r}"
        msg = Message(value, where)
        try:
            dtype = from_tf_enum(msg.uint(1), where)
        except UnsupportedError as exc:
            self.notes.append(f"skipped {name!r}: {exc}")  # e.g. DT_VARIANT iterator state
            return None
        shape = _shape(msg.message(2, "shape"), where)
        shard, offset, size = msg.int64(3), msg.int64(4), msg.int64(5)
        if offset < 0 or size < 0 or not (msg.has(7) or 0 <= shard < self.num_shards):
            raise FormatError(f"{where}: expected shard in [0, {self.num_shards}), offset and size >= 0; "
                              f"found shard {shard}, offset {offset}, size {size}; {_FIX}")
        return Entry(name, dtype, shape, shard, offset, size, unmask(msg.fixed32(6)), _slices(msg, shape, where))

    def _stat_shards(self) -> dict[int, int]:
        sizes = {}
        for shard in sorted({p.shard for e in self.entries.values() for p in self.parts(e)}):
            path = self.data_path(shard)
            try:
                sizes[shard] = path.stat().st_size
            except OSError:
                raise FormatError(f"{path}: data shard {shard} of {self.num_shards} is missing (the index "
                                  f"{self.index_path.name} refers to it); copy all PREFIX.data-* files "
                                  "next to the .index") from None
        return sizes

    def _check_range(self, entry: Entry, sizes: dict[int, int]) -> None:
        path = self.data_path(entry.shard)
        where = f"{path} variable {entry.key!r}"
        if entry.dtype.name != "string" and entry.size != entry.numel * entry.dtype.itemsize:
            raise FormatError(f"{where}: expected {entry.numel * entry.dtype.itemsize} bytes for "
                              f"{entry.dtype.name}{list(entry.shape)}, index says {entry.size}; {_FIX}")
        # Strings: at least one varint byte per element plus the 4-byte length checksum (TF checks a
        # similar lower bound); this also stops a forged shape from sizing an allocation.
        if entry.dtype.name == "string" and entry.numel and entry.size < entry.numel + 4:
            raise FormatError(f"{where}: {entry.numel} strings need at least {entry.numel + 4} bytes, "
                              f"index says {entry.size}; {_FIX}")
        if entry.offset + entry.size > sizes[entry.shard]:
            raise FormatError(f"{where}: expected bytes [{entry.offset}, {entry.offset + entry.size}), the "
                              f"file has {sizes[entry.shard]} bytes (truncated); {_FIX}")

    def parts(self, entry: Entry) -> list[Entry]:
        """The entries holding ``entry``'s data: itself, or its slices (checked to tile it exactly)."""
        if not entry.slices:
            return [entry]
        where = f"{self.index_path} variable {entry.key!r}"
        parts, boxes = [], _boxes(entry)
        for extents, box in zip(entry.slices, boxes):
            part = self._slice_entries.get(slicekey.encode(entry.key, extents))
            want = tuple(end - begin for begin, end in box)
            if part is None or part.dtype != entry.dtype or part.shape != want:
                found = "no entry" if part is None else f"{part.dtype.name}{list(part.shape)}"
                raise FormatError(f"{where}: expected slice {list(extents)} as {entry.dtype.name}{list(want)}, "
                                  f"found {found}; {_FIX}")
            parts.append(part)
        covered = sum(math.prod(e - b for b, e in box) for box in boxes)
        overlap = any(all(a0 < b1 and b0 < a1 for (a0, a1), (b0, b1) in zip(p, q))
                      for i, p in enumerate(boxes) for q in boxes[i + 1:])
        if overlap or covered != entry.numel:
            raise FormatError(f"{where}: its {len(boxes)} slices cover {covered} of {entry.numel} elements"
                              f"{' and overlap' if overlap else ''}, expected an exact tiling; {_FIX}")
        return parts

    def read(self, key: str) -> np.ndarray:
        """The full tensor stored under ``key`` (partitioned variables joined)."""
        import numpy as np

        entry = self.entries[key]
        if not entry.slices:
            return self._read_entry(entry)
        out = np.empty(entry.shape, dtype=object if entry.dtype.name == "string" else entry.dtype.storage)
        for part, box in zip(self.parts(entry), _boxes(entry)):
            out[tuple(slice(b, e) for b, e in box)] = self._read_entry(part)
        return out

    def _read_entry(self, entry: Entry) -> np.ndarray:
        path = self.data_path(entry.shard)
        where = f"{path} variable {entry.key!r}"
        if entry.dtype.name != "string" and entry.size >= _MAP_MIN:
            return self._map_entry(entry, path, where)
        import numpy as np

        buf = np.empty(entry.size, np.uint8)
        try:
            with open(path, "rb") as f:
                # Re-checked at read time: the file may have changed since the index was listed.
                self._check_range(entry, {entry.shard: os.fstat(f.fileno()).st_size})
                f.seek(entry.offset)
                view, done = memoryview(buf), 0
                while done < entry.size:
                    n = f.readinto(view[done:done + _CHUNK])
                    if not n:
                        raise FormatError(f"{where}: data ends after {done} of {entry.size} bytes "
                                          f"(truncated); {_FIX}")
                    done += n
        except OSError as exc:
            raise FormatError(f"{where}: cannot read the data shard ({exc.strerror}); {_FIX}") from None
        if entry.dtype.name == "string":
            from .strings import decode_string_tensor

            strings = decode_string_tensor(buf, entry.numel, self.verify_crc, where, entry.crc)
            return strings.reshape(entry.shape)
        if self.verify_crc:
            self._check_crc(entry, buf, where)
        return buf.view(entry.dtype.storage).reshape(entry.shape)

    def _map_entry(self, entry: Entry, path: Path, where: str) -> np.ndarray:
        """A numeric tensor as a read-only view of its own mapping of the data file, CRC-checked."""
        from ..pages import map_file

        try:
            with open(path, "rb") as f:
                # Re-checked just before mapping: touching pages past a shortened file would be SIGBUS.
                self._check_range(entry, {entry.shard: os.fstat(f.fileno()).st_size})
                data = map_file(f, entry.offset, entry.size)
        except OSError as exc:
            raise FormatError(f"{where}: cannot map the data shard ({exc.strerror or exc}); {_FIX}") from None
        if self.verify_crc:
            self._check_crc(entry, data, where)
        return data.view(entry.dtype.storage).reshape(entry.shape)

    def _check_crc(self, entry: Entry, data: np.ndarray, where: str) -> None:
        from ..pages import Pages

        pages = Pages.of(data) if entry.size > _CRC_CHUNK else None
        crc = 0
        for start in range(0, entry.size, _CRC_CHUNK):
            crc = crc32c(data[start:start + _CRC_CHUNK], crc)
            if pages is not None:
                pages.release(start + _CRC_CHUNK)
        if crc != entry.crc:
            raise IntegrityError(f"{where}: expected CRC32C {entry.crc:#010x}, computed {crc:#010x} "
                                 f"over {entry.size} bytes (data corrupt); {_FIX}")

    def variable(self, key: str, name: str | None = None, role: Role = Role.WEIGHT, note: str = "",
                 tf_name: str = "") -> Variable:
        """A lazy ``Variable`` for ``key``: each ``read()`` loads (and checks) the data afresh."""
        entry = self.entries[key]
        return Variable(
            name=key if name is None else name,
            dtype=entry.dtype,
            shape=entry.shape,
            nbytes=sum(p.size for p in self.parts(entry)),
            loader=lambda: self.read(key),
            role=role,
            tf_name=tf_name,
            note=note,
        )

