"""The immutable sorted table behind TensorFlow ``.index`` files (a LevelDB SSTable without filters).

Layout (tensorflow/core/lib/io/format.cc, block.cc, table.cc)::

    [data block][trailer] ... [metaindex block][trailer] [index block][trailer] [footer: 48 bytes]

* footer: metaindex handle and index handle (each varint64 offset + varint64 size), zero padding to
  40 bytes, then the magic 0xdb4775248b80fb57 as two little-endian fixed32 (low word first);
* trailer: 1 byte compression type + fixed32 *masked* CRC32C of the block contents and that byte;
* block: entries, then a fixed32 restart array, then a fixed32 restart count. An entry is varint32
  shared-prefix length, varint32 non-shared length, varint32 value length, key suffix, value;
* the index block maps a separator key (>= every key of the block) to that data block's handle.

TF writes bundle indexes uncompressed (tensor_bundle.cc sets kNoCompression); snappy is refused.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ..errors import FormatError, IntegrityError, UnsupportedError
from .crc import crc32c, unmask
from .proto import read_varint

FOOTER_SIZE = 48
MAGIC = 0xDB4775248B80FB57
TRAILER_SIZE = 5
NO_COMPRESSION, SNAPPY = 0, 1
_FIX = "re-save the checkpoint, or restore it from a backup"


def _u32(buf: bytes, pos: int) -> int:
    return int.from_bytes(buf[pos:pos + 4], "little")


class Table:
    """An opened ``.index`` file: the whole file is read once (index files are small)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        try:
            self.data = self.path.read_bytes()
        except OSError as exc:
            raise FormatError(f"{self.path}: cannot read the checkpoint index ({exc.strerror}); "
                              "check the path and permissions") from None
        if len(self.data) < FOOTER_SIZE:
            raise FormatError(f"{self.path}: expected a TensorFlow table (at least {FOOTER_SIZE} bytes), "
                              f"found {len(self.data)} bytes (truncated); {_FIX}")
        footer = self.data[-FOOTER_SIZE:]
        magic = _u32(footer, 40) | _u32(footer, 44) << 32  # low word first
        if magic != MAGIC:
            raise FormatError(f"{self.path}: expected table magic {MAGIC:#x} in the last 8 bytes, "
                              f"found {magic:#x} (not a TF checkpoint index, or truncated); {_FIX}")
        where = f"{self.path}: footer"
        _meta_off, pos = read_varint(footer, 0, where)  # metaindex: unused by TF readers (no filters)
        _meta_size, pos = read_varint(footer, pos, where)
        off, pos = read_varint(footer, pos, where)
        size, pos = read_varint(footer, pos, where)
        if pos > 40:
            raise FormatError(f"{self.path}: footer block handles overrun their 40 bytes (corrupt); {_FIX}")
        self.index = self._block(off, size, "index block")

    def _block(self, offset: int, size: int, what: str) -> bytes:
        """The verified, uncompressed contents of the block at ``offset``."""
        limit = len(self.data) - FOOTER_SIZE
        if offset > limit or size + TRAILER_SIZE > limit - offset:
            raise FormatError(f"{self.path}: {what} at offset {offset} with {size} bytes (+{TRAILER_SIZE} "
                              f"trailer) runs past the table data ({limit} bytes; truncated?); {_FIX}")
        raw = self.data[offset:offset + size + 1]  # contents + compression type byte
        stored = unmask(_u32(self.data, offset + size + 1))
        actual = crc32c(raw)
        if stored != actual:
            raise IntegrityError(f"{self.path}: {what} at offset {offset}: expected CRC32C {stored:#010x}, "
                                 f"computed {actual:#010x} (the index file is corrupt); {_FIX}")
        kind = raw[-1]
        if kind == SNAPPY:
            raise UnsupportedError(f"{self.path}: {what} is snappy-compressed; TensorFlow writes checkpoint "
                                   "indexes uncompressed and tf2torch reads only those; re-save with TF")
        if kind != NO_COMPRESSION:
            raise FormatError(f"{self.path}: {what} has compression type {kind}, expected 0 (none) "
                              f"(corrupt); {_FIX}")
        return raw[:-1]

    def _entries(self, block: bytes, what: str) -> Iterator[tuple[bytes, bytes]]:
        where = f"{self.path}: {what}"
        if len(block) < 4:
            raise FormatError(f"{where}: expected at least 4 bytes (restart count), found {len(block)}; {_FIX}")
        restarts = _u32(block, len(block) - 4)
        if restarts > (len(block) - 4) // 4:
            raise FormatError(f"{where}: restart count {restarts} does not fit in {len(block)} bytes "
                              f"(corrupt); {_FIX}")
        end = len(block) - 4 * (restarts + 1)  # entries stop where the restart array starts
        points = {_u32(block, end + 4 * i) for i in range(restarts)}
        key, pos = b"", 0
        while pos < end:
            start = pos
            shared, pos = read_varint(block, pos, where)
            unshared, pos = read_varint(block, pos, where)
            vlen, pos = read_varint(block, pos, where)
            # Prefix compression: a key is `shared` bytes of the previous key plus its own suffix;
            # at a restart point nothing is shared, so seeks can start there.
            if shared > len(key) or (start in points and shared) or unshared + vlen > end - pos:
                raise FormatError(f"{where}: bad entry at byte {start} (shared {shared} of a "
                                  f"{len(key)}-byte key, {unshared}+{vlen} bytes with {end - pos} left); {_FIX}")
            new_key = key[:shared] + block[pos:pos + unshared]
            if start and new_key <= key:
                raise FormatError(f"{where}: keys out of order at byte {start} ({new_key!r} after {key!r}; "
                                  f"tables are sorted); {_FIX}")
            key = new_key
            pos += unshared
            yield key, block[pos:pos + vlen]
            pos += vlen

    def __iter__(self) -> Iterator[tuple[bytes, bytes]]:
        """Every (key, value) in key order."""
        last: bytes | None = None
        for i, (separator, handle) in enumerate(self._entries(self.index, "index block")):
            where = f"{self.path}: index entry {i}"
            offset, pos = read_varint(handle, 0, where)  # trailing bytes allowed, as in table.cc
            size, _ = read_varint(handle, pos, where)
            what = f"data block {i} (offset {offset})"
            for key, value in self._entries(self._block(offset, size, what), what):
                if (last is not None and key <= last) or key > separator:
                    raise FormatError(f"{self.path}: {what}: key {key!r} is out of order (previous "
                                      f"{last!r}, block limit {separator!r}); {_FIX}")
                last = key
                yield key, value


def read_table(path: Path | str) -> list[tuple[bytes, bytes]]:
    """All entries of a table file, in key order."""
    return list(Table(path))
