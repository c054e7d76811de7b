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
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import FormatError, IntegrityError
from ..spec import Role, Variable
from . import slicekey
from .bundle_index import FIX, Entry, boxes_of, check_range, data_path, parse_entry, parse_header
from .crc import crc32c
from .proto import decode_utf8
from .table import Table

if TYPE_CHECKING:  # numpy is imported by the reads only: listing a checkpoint (`inspect`) needs none
    import numpy as np

_CHUNK = 64 << 20  # read granularity for large tensors
# Mapping costs a few system calls and page-table work; below this size a plain read is cheaper.
_MAP_MIN = 1 << 20
_CRC_CHUNK = 16 << 20  # CRC granularity over a mapping: pages are dropped behind each chunk


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
                              "entry, found " + (repr(first[0]) if first else "an empty table") + f"; {FIX}")
        self.num_shards = parse_header(first[1], self.index_path)
        self.entries: dict[str, Entry] = {}  # visible keys, in index order
        self._slice_entries: dict[bytes, Entry] = {}
        for key, value in table:
            if key.startswith(b"\x00"):  # NumIncreasing(0): a slice of a partitioned variable
                name, _ = slicekey.decode(key, f"{self.index_path} key {key!r}")
                entry = parse_entry(f"slice of {name!r}", value, self.index_path, self.num_shards, self.notes)
                if entry is not None:
                    self._slice_entries[key] = entry
                continue
            name = decode_utf8(key, f"{self.index_path} key {key!r}")
            entry = parse_entry(name, value, self.index_path, self.num_shards, self.notes)
            if entry is not None:
                self.entries[name] = entry
        self.shard_sizes = self._stat_shards()
        for entry in self.entries.values():
            for part in self.parts(entry):
                check_range(part, self.data_path(part.shard), self.shard_sizes[part.shard])

    def data_path(self, shard: int) -> Path:
        if shard not in self._paths:
            self._paths[shard] = data_path(self.prefix, shard, self.num_shards)
        return self._paths[shard]

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

    def parts(self, entry: Entry) -> list[Entry]:
        """The entries holding ``entry``'s data: itself, or its slices (checked to tile it exactly)."""
        if not entry.slices:
            return [entry]
        where = f"{self.index_path} variable {entry.key!r}"
        parts, boxes = [], boxes_of(entry)
        for extents, box in zip(entry.slices, boxes):
            part = self._slice_entries.get(slicekey.encode(entry.key, extents))
            want = tuple(end - begin for begin, end in box)
            if part is None or part.dtype != entry.dtype or part.shape != want:
                found = "no entry" if part is None else f"{part.dtype.name}{list(part.shape)}"
                raise FormatError(f"{where}: expected slice {list(extents)} as {entry.dtype.name}{list(want)}, "
                                  f"found {found}; {FIX}")
            parts.append(part)
        covered = sum(math.prod(e - b for b, e in box) for box in boxes)
        overlap = any(all(a0 < b1 and b0 < a1 for (a0, a1), (b0, b1) in zip(p, q))
                      for i, p in enumerate(boxes) for q in boxes[i + 1:])
        if overlap or covered != entry.numel:
            raise FormatError(f"{where}: its {len(boxes)} slices cover {covered} of {entry.numel} elements"
                              f"{' and overlap' if overlap else ''}, expected an exact tiling; {FIX}")
        return parts

    def read(self, key: str) -> np.ndarray:
        """The full tensor stored under ``key`` (partitioned variables joined)."""
        import numpy as np

        entry = self.entries[key]
        if not entry.slices:
            return self._read_entry(entry)
        out = np.empty(entry.shape, dtype=object if entry.dtype.name == "string" else entry.dtype.storage)
        for part, box in zip(self.parts(entry), boxes_of(entry)):
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
                check_range(entry, path, os.fstat(f.fileno()).st_size)
                f.seek(entry.offset)
                view, done = memoryview(buf), 0
                while done < entry.size:
                    n = f.readinto(view[done:done + _CHUNK])
                    if not n:
                        raise FormatError(f"{where}: data ends after {done} of {entry.size} bytes "
                                          f"(truncated); {FIX}")
                    done += n
        except OSError as exc:
            raise FormatError(f"{where}: cannot read the data shard ({exc.strerror}); {FIX}") from None
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
                check_range(entry, path, os.fstat(f.fileno()).st_size)
                data = map_file(f, entry.offset, entry.size)
        except OSError as exc:
            raise FormatError(f"{where}: cannot map the data shard ({exc.strerror or exc}); {FIX}") from None
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
                                 f"over {entry.size} bytes (data corrupt); {FIX}")

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

