"""Lazy reads of HDF5 datasets for the Keras readers: a variable per dataset, read when asked.

Loaders run long after listing, so each reopens the file, checks it is the file that was listed (size
and mtime), and that the dataset still has the listed dtype and shape.
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
from ..spec import Role, Variable
from . import h5safe

Opener = Callable[[], AbstractContextManager[h5py.File]]
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
    opener: Opener, ds_path: str, dtype: DType, shape: tuple[int, ...], label: str
) -> np.ndarray:
    """Reopen the file and read one dataset, checking it is still what was listed."""
    with opener() as f:
        ds = h5safe.get_dataset(f, ds_path, label)
        found = (h5safe.dataset_dtype(ds, label), tuple(ds.shape or ()))
        if found != (dtype, shape):
            raise FormatError(
                f"{label}: dataset '{ds_path}' is now {found[0].name}{found[1]}, was listed as {dtype.name}{shape}; "
                "read the file again"
            )
        return h5safe.read_dataset(ds, dtype, label)


def keras_release(version: Any) -> tuple[int, int] | None:
    """(major, minor) of a Keras version string ("3.15.1" -> (3, 15)), None when absent or malformed."""
    match = re.match(r"\s*(\d+)\.(\d+)", version) if isinstance(version, str) else None
    return (int(match.group(1)), int(match.group(2))) if match else None


def keras_major(version: Any) -> int | None:
    """The major version of a Keras version string ("2.21.0" -> 2), None when absent or malformed."""
    match = re.match(r"\s*(\d+)\.", version) if isinstance(version, str) else None
    return int(match.group(1)) if match else None
