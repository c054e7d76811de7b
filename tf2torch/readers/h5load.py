"""Lazy reads of HDF5 datasets for the Keras readers: a variable per dataset, read when asked.

Loaders run long after listing, so each reopens the file, checks it is the file that was listed (size
and mtime), and that the dataset still has the listed dtype and shape.

A dataset stored whole (contiguous layout, no filters, little-endian: what Keras and transformers write)
is memory-mapped from its file, as checkpoint tensors are (``map_contiguous``): no copy into memory, and
the writer gives its pages back as it goes. Anything else is read by libhdf5.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from ..dtypes import DType
from ..errors import FormatError
from ..pages import map_file
from ..spec import Role, Variable
from . import h5safe
from .h5harden import H5_ERRORS

Opener = Callable[[], AbstractContextManager[h5py.File]]
MAP_MIN = 1 << 20  # bytes: a smaller dataset is read (mapping costs system calls and page-table work)
LoaderFactory = Callable[[str, DType, tuple[int, ...]], Callable[[], np.ndarray]]


def variable(
    ds: h5py.Dataset, ds_path: str, label: str, factory: LoaderFactory, role: Role, tf_name: str, note: str
) -> Variable:
    dtype = h5safe.dataset_dtype(ds, label)
    shape = tuple(int(d) for d in ds.shape or ())
    nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    return Variable(ds_path, dtype, shape, nbytes, factory(ds_path, dtype, shape), role, tf_name, note)


def file_stamp(path: Path, label: str) -> tuple[int, int]:
    try:
        st = os.stat(path)
    except OSError as exc:
        raise FormatError(f"{label}: cannot read the file ({exc.strerror}); check the path") from None
    return (st.st_size, st.st_mtime_ns)


def check_stamp(path: Path, stamp: tuple[int, int], label: str) -> None:
    # Loaders run long after listing; refuse to mix tensors of two different saves.
    if file_stamp(path, label) != stamp:
        raise FormatError(f"{label}: the file changed since it was listed; read it again")


def load_variable(
    opener: Opener, ds_path: str, dtype: DType, shape: tuple[int, ...], label: str, mapped_from: Path | None = None
) -> np.ndarray:
    """Reopen the file and read one dataset, checking it is still what was listed; with ``mapped_from`` (the
    file's path, when the file is the whole HDF5 file) a dataset stored whole is mapped instead of read."""
    with opener() as f:
        ds = h5safe.get_dataset(f, ds_path, label)
        found = (h5safe.dataset_dtype(ds, label), tuple(ds.shape or ()))
        if found != (dtype, shape):
            raise FormatError(
                f"{label}: dataset '{ds_path}' is now {found[0].name}{found[1]}, was listed as {dtype.name}{shape}; "
                "read the file again"
            )
        mapped = map_contiguous(ds, dtype, shape, mapped_from, label) if mapped_from is not None else None
        return mapped if mapped is not None else h5safe.read_dataset(ds, dtype, label)


def map_contiguous(ds: h5py.Dataset, dtype: DType, shape: tuple[int, ...], path: Path,
                   label: str) -> np.ndarray | None:
    """``ds`` mapped read-only from ``path`` when its bytes lie there as the array (else None: read it)."""
    storage = np.dtype(dtype.storage)
    nbytes = int(np.prod(shape, dtype=np.int64)) * storage.itemsize
    try:
        plist = ds.id.get_create_plist()
        if plist.get_layout() != h5py.h5d.CONTIGUOUS or plist.get_nfilters() != 0:
            return None  # chunked or filtered: only libhdf5 can assemble it
        offset = ds.id.get_offset()  # None while no storage is allocated (a never-written dataset: fill values)
        stored = ds.id.get_storage_size()
    except H5_ERRORS:
        return None  # libhdf5's own read reports what is wrong, in one line
    # A raw 2-byte opaque type is bfloat16's bits (h5safe.dataset_dtype); numbers must be little-endian as
    # stored, since the mapping is the file's bytes. HDF5 addresses count from the superblock, which open_h5
    # requires at byte 0, so they are file offsets.
    if (offset is None or stored != nbytes or nbytes < MAP_MIN or ds.dtype.itemsize != storage.itemsize
            or (ds.dtype.kind != "V" and ds.dtype.newbyteorder("<") != ds.dtype)):
        return None
    try:
        with path.open("rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if offset + nbytes > size:
                raise FormatError(f"{label}: dataset '{ds.name}' lies at bytes {offset}..{offset + nbytes}, past the "
                                  f"end of the {size}-byte file; the file is truncated or corrupt")
            data = map_file(fh, offset, nbytes)
    except OSError as exc:
        raise FormatError(f"{label}: cannot map dataset '{ds.name}' ({exc.strerror or exc}); check the file") from None
    return data.view(storage).reshape(shape)


def keras_release(version: Any) -> tuple[int, int] | None:
    """(major, minor) of a Keras version string ("3.15.1" -> (3, 15)), None when absent or malformed."""
    match = re.match(r"\s*(\d+)\.(\d+)", version) if isinstance(version, str) else None
    return (int(match.group(1)), int(match.group(2))) if match else None


def keras_major(version: Any) -> int | None:
    """The major version of a Keras version string ("2.21.0" -> 2), None when absent or malformed."""
    match = re.match(r"\s*(\d+)\.", version) if isinstance(version, str) else None
    return int(match.group(1)) if match else None
