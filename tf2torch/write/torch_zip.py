"""The container of ``torch.save`` files, written one record at a time.

A ``.pt`` file is a zip archive, entries stored (not compressed) under one top-level directory:
``data.pkl`` (the pickled object; tensors refer to storages by key), ``.format_version`` ("1"),
``.storage_alignment`` ("64"), ``byteorder``, one ``data/<key>`` record of raw bytes per storage, and
``version`` ("3\\n"). torch starts every record's data at a multiple of 64 bytes (so
``torch.load(mmap=True)`` can map the storages in place), padding each local header with an extra
field of id 0x4246 ("FB"); this writer does the same. Layout taken from
torch/csrc/jit/serialization (PyTorchStreamWriter) and checked against files ``torch.save`` writes.

The zip structure itself (CRC-32 of each record, local headers, zip64 for records or offsets past
4 GiB, the central directory) is Python's ``zipfile``: records are streamed into it, so a record is
never held in memory whole.
"""

from __future__ import annotations

import re
import struct
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

ALIGNMENT = 64  # torch's storage alignment (the ".storage_alignment" record)
_PAD_ID = 0x4246  # "FB": the extra field torch pads local headers with
_LOCAL_HEADER = 30  # bytes of a zip local file header before its name
_ZIP64_EXTRA = 20  # zipfile appends this extra field to local headers it writes as zip64


class TorchArchive:
    """A ``torch.save``-style zip being written; use as a context manager, records in order.

    Example:
        >>> import tempfile, pathlib
        >>> path = pathlib.Path(tempfile.mkdtemp()) / "m.pt"
        >>> with TorchArchive(path) as archive:
        ...     archive.write("version", b"3\\n")
        >>> zipfile.ZipFile(path).namelist()
        ['m/version']
    """

    def __init__(self, path: Path) -> None:
        stem = Path(path).stem
        # torch names the directory after the file; any name loads, so keep only a plain one.
        self.prefix = stem if re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", stem) else "archive"
        self.zip = zipfile.ZipFile(path, "w", compression=zipfile.ZIP_STORED, allowZip64=True)

    def __enter__(self) -> TorchArchive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.zip.close()

    def write(self, name: str, data: bytes) -> None:
        with self.open(name, len(data)) as f:
            f.write(data)

    @contextmanager
    def open(self, name: str, size: int) -> Iterator[IO[bytes]]:
        """A writable stream for record ``name`` of exactly ``size`` bytes, its data 64-byte aligned."""
        info = zipfile.ZipInfo(f"{self.prefix}/{name}", date_time=(1980, 1, 1, 0, 0, 0))
        info.compress_type = zipfile.ZIP_STORED
        info.file_size = size
        zip64 = size * 1.05 > zipfile.ZIP64_LIMIT  # zipfile's own rule for a declared size
        assert self.zip.fp is not None  # (open for writing until close)
        start = (self.zip.fp.tell() + _LOCAL_HEADER + len(info.filename.encode("ascii"))
                 + (_ZIP64_EXTRA if zip64 else 0) + 4)  # + the padding field's own 4-byte header
        pad = -start % ALIGNMENT
        info.extra = struct.pack("<HH", _PAD_ID, pad) + b"\0" * pad
        with self.zip.open(info, "w", force_zip64=zip64) as f:
            yield f
