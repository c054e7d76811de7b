"""Gatekeepers for every HDF5 access of the Keras readers.

Nothing else in tf2torch indexes an ``h5py`` object directly: groups, datasets and attributes are
fetched here, so one place refuses what a Keras writer never produces and an attacker might (links
to other files, virtual or external-storage datasets, shapes larger than the file, filter plugins)
and turns h5py's ``OSError``/``KeyError`` tracebacks into one-line ``FormatError``s. The idea
follows Keras's ``safe_get_h5_group`` / ``safe_get_h5_dataset`` (``keras/src/saving/saving_lib.py``).
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import IO, Any

import h5py
import numpy as np

from ..dtypes import BY_NAME, DType, from_numpy
from ..errors import FormatError, UnsupportedError
from .h5attrs import read_attr_text
from .h5harden import H5_ERRORS, check_global_heaps, first_line, memory_guard

# --- Key names of the Keras HDF5 layouts (legacy ``.h5`` and Keras 3 ``.weights.h5``) ---------------
ATTR_LAYER_NAMES = "layer_names"  # legacy: layer groups in saved order
ATTR_WEIGHT_NAMES = "weight_names"  # legacy: per layer, dataset paths relative to the layer group
ATTR_MODEL_CONFIG = "model_config"  # legacy full model: JSON of the model config
ATTR_KERAS_VERSION = "keras_version"
ATTR_BACKEND = "backend"
GROUP_MODEL_WEIGHTS = "model_weights"  # legacy full model: the weights live here, not at the root
GROUP_OPTIMIZER_WEIGHTS = "optimizer_weights"
GROUP_TOP_LEVEL_WEIGHTS = "top_level_model_weights"  # legacy: weights owned by the model itself
GROUP_LAYERS = "layers"  # Keras 3: container of layer groups
GROUP_LAYERS_KERAS_2_13 = "_layer_checkpoint_dependencies"  # tf.keras 2.13's name for ``layers``
GROUP_VARS = "vars"  # Keras 3: datasets "0", "1", ... of one object
GROUP_OPTIMIZER = "optimizer"
ATTR_NAME = "name"  # Keras >= 3.10 tags each ``vars`` group with the owning layer's name
ATTR_DTYPE = "dtype"  # Keras 3 tags bfloat16 datasets (stored as 2-byte opaque) with "bfloat16"

HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"

# Filters HDF5 implements itself; any other id would make libhdf5 dlopen a plugin from
# HDF5_PLUGIN_PATH, i.e. run code chosen by the file. Keras never compresses weights at all.
_BUILTIN_FILTERS = {
    h5py.h5z.FILTER_DEFLATE,
    h5py.h5z.FILTER_SHUFFLE,
    h5py.h5z.FILTER_FLETCHER32,
    h5py.h5z.FILTER_SZIP,
    h5py.h5z.FILTER_NBIT,
    h5py.h5z.FILTER_SCALEOFFSET,
}


@contextmanager
def open_h5(source: Path | IO[bytes], label: str, scan: bool = True) -> Iterator[h5py.File]:
    """Open ``source`` (a path or a seekable binary file object) read-only, or raise FormatError.

    Paths are opened as Python file objects too (h5py's ``fileobj`` driver): libhdf5 then never
    sees a file name, so no file locking (fails on read-only and network mounts) and no clash
    with a handle the caller opened on the same file with other flags.

    ``scan`` first checks the global heaps (``check_global_heaps``), one pass over the file; loaders
    that reopen a file already scanned (and stamp-checked) pass False.
    """
    with ExitStack() as stack:
        try:
            fh = stack.enter_context(source.open("rb")) if isinstance(source, Path) else source
            fh.seek(0)
            head = fh.read(len(HDF5_SIGNATURE))
            fh.seek(0)
        except OSError as exc:
            raise FormatError(
                f"{label}: cannot read the file ({exc.strerror or exc}); check the path"
            ) from None
        # HDF5 also allows a user block before the signature; Keras never writes one, so check
        # offset 0 and give a clear message for text or zip files renamed to .h5.
        if head != HDF5_SIGNATURE:
            raise FormatError(
                f"{label}: expected an HDF5 file (signature {HDF5_SIGNATURE!r}), found {head!r}; "
                "pass a file written by Keras model.save()/save_weights()"
            )
        if scan:  # listing: the heaps are walked and libhdf5's allocations capped (see both)
            check_global_heaps(fh, label)
            stack.enter_context(memory_guard(_size(fh)))
        try:
            file = stack.enter_context(h5py.File(fh, "r"))
        except H5_ERRORS as exc:
            raise FormatError(
                f"{label}: HDF5 file cannot be opened ({first_line(exc)}); it is truncated or corrupt"
            ) from None
        yield file


def _size(fh: IO[bytes]) -> int:
    fh.seek(0, 2)
    size = fh.tell()
    fh.seek(0)
    return size


def get_group(parent: h5py.Group, path: str, label: str) -> h5py.Group:
    obj = _walk(parent, path, label)
    if not isinstance(obj, h5py.Group):
        raise FormatError(
            f"{label}: expected an HDF5 group at '{_full(parent, path)}', found a {type(obj).__name__}"
        )
    return obj


def get_dataset(parent: h5py.Group, path: str, label: str) -> h5py.Dataset:
    """The dataset at ``path``, refusing virtual/external storage and impossible sizes."""
    where = _full(parent, path)
    obj = _walk(parent, path, label)
    if not isinstance(obj, h5py.Dataset):
        raise FormatError(f"{label}: expected an HDF5 dataset at '{where}', found a {type(obj).__name__}")
    try:
        if obj.is_virtual:  # its data is read from other files named inside this one
            raise FormatError(
                f"{label}: dataset '{where}' is a virtual dataset; Keras never writes those, refusing it"
            )
        if obj.external:  # raw data kept in separate files next to this one
            raise FormatError(
                f"{label}: dataset '{where}' stores its data in external files {obj.external}; refusing it"
            )
        plist = obj.id.get_create_plist()
        for i in range(plist.get_nfilters()):
            code = plist.get_filter(i)[0]
            if code not in _BUILTIN_FILTERS:
                raise FormatError(
                    f"{label}: dataset '{where}' uses HDF5 filter {code}, which would load a plugin; "
                    "re-save the weights without compression"
                )
        declared = math.prod(obj.shape or ()) * obj.dtype.itemsize
        file_size = obj.file.id.get_filesize()
        if plist.get_nfilters():
            _check_chunks(obj, where, file_size, label)
    except H5_ERRORS as exc:
        raise FormatError(
            f"{label}: dataset '{where}' cannot be inspected ({first_line(exc)}); the file is corrupt"
        ) from None
    # Keras stores weights uncompressed, so a real dataset cannot hold more bytes than its file.
    if declared > file_size:
        raise FormatError(
            f"{label}: dataset '{where}' declares shape {obj.shape} ({declared} bytes) but the file has "
            f"only {file_size} bytes; the file is corrupt or hostile"
        )
    return obj


def _check_chunks(ds: h5py.Dataset, where: str, file_size: int, label: str) -> None:
    """Filtered (compressed) chunks lie within the file: libhdf5 allocates a chunk's stored size, read
    from the chunk index, before reading it, so a forged size would cost up to 4 GiB."""
    def check(info: Any) -> None:
        if info.byte_offset + info.size > file_size:
            raise FormatError(
                f"{label}: dataset '{where}' has a chunk of {info.size} bytes at byte {info.byte_offset}, past "
                f"the end of the {file_size}-byte file; the file is truncated or corrupt"
            )

    ds.id.chunk_iter(check)


def children(group: h5py.Group, label: str) -> list[str]:
    """Names of the members of ``group`` (links are not followed)."""
    try:
        names = list(group.keys())
    except H5_ERRORS as exc:
        raise FormatError(f"{label}: group '{group.name}' cannot be listed ({first_line(exc)})") from None
    # h5py hands out a link name that is not UTF-8 as bytes; Keras names are always text.
    bad = next((n for n in names if not isinstance(n, str)), None)
    if bad is not None:
        raise FormatError(f"{label}: group '{group.name}' has a member named {bad!r}, which is not UTF-8 text; "
                          "the file is corrupt")
    return names


def address(obj: h5py.HLObject, label: str) -> int:
    """The object's address in the file: equal for two names hard-linked to one object."""
    try:
        return h5py.h5o.get_info(obj.id).addr
    except H5_ERRORS as exc:
        raise FormatError(f"{label}: '{obj.name}' cannot be inspected ({first_line(exc)}); the file is corrupt") from None


def is_group(parent: h5py.Group, name: str) -> bool:
    """True for a hard-linked group; links of other kinds are refused by the getters, not here."""
    try:
        link = parent.get(name, getlink=True)
        return isinstance(link, h5py.HardLink) and parent.get(name, getclass=True) is h5py.Group
    except H5_ERRORS:
        return False


def dataset_dtype(ds: h5py.Dataset, label: str) -> DType:
    dtype = ds.dtype
    if dtype.kind == "V" and dtype.itemsize == 2 and dtype.names is None:
        # bfloat16: Keras hands h5py an ml_dtypes.bfloat16 array, which h5py stores as a 2-byte
        # opaque type with an empty tag. Keras 3 .weights.h5 adds attr dtype="bfloat16"; Keras 3's
        # legacy .h5 writer adds nothing, but no other Keras dtype is a 2-byte opaque.
        tag = read_attr_text(ds, ATTR_DTYPE, label)
        if tag in (None, "bfloat16"):
            return BY_NAME["bfloat16"]
    if dtype.kind in ("S", "O", "U"):
        raise UnsupportedError(
            f"{label}: dataset '{ds.name}' holds strings; Keras weights are numeric, refusing it"
        )
    try:
        return from_numpy(dtype, f"{label}: dataset '{ds.name}'")
    except UnsupportedError:
        tag = read_attr_text(ds, ATTR_DTYPE, label)
        raise UnsupportedError(
            f"{label}: dataset '{ds.name}' has dtype {tag or dtype}, which tf2torch cannot convert "
            f"(supported: {', '.join(sorted(BY_NAME))})"
        ) from None


def read_dataset(ds: h5py.Dataset, dtype: DType, label: str) -> np.ndarray:
    """All of ``ds`` as an array of ``dtype.storage`` (bfloat16 as its raw uint16 bits)."""
    try:
        data = np.asarray(ds[()])
    except H5_ERRORS as exc:
        raise FormatError(
            f"{label}: dataset '{ds.name}' cannot be read ({first_line(exc)}); the file is truncated or corrupt"
        ) from None
    storage = np.dtype(dtype.storage)
    if data.dtype.kind == "V":
        return data.view(storage)  # raw bits, never converted through float
    # HDF5 keeps the writer's byte order; spec storage is little-endian, values stay bit-identical.
    return data.astype(storage, copy=False)


def _walk(parent: h5py.Group, path: str, label: str) -> h5py.HLObject:
    current: h5py.HLObject = parent
    for part in path.split("/"):
        where = _full(parent, path)
        if part in ("", ".", ".."):
            raise FormatError(
                f"{label}: invalid HDF5 path '{path}' (empty, '.' or '..' component); the file is corrupt"
            )
        if not isinstance(current, h5py.Group):
            raise FormatError(f"{label}: '{current.name}' is not a group, cannot look up '{where}'")
        try:
            link = current.get(part, getlink=True)
        except H5_ERRORS as exc:
            raise FormatError(f"{label}: '{where}' cannot be looked up ({first_line(exc)})") from None
        if link is None:
            raise FormatError(
                f"{label}: expected '{where}' in the HDF5 file, it is missing; the file is incomplete"
            )
        # Keras writes hard links only. External links open other files; soft links can point
        # at external links or alias data, so both are refused outright.
        if not isinstance(link, h5py.HardLink):
            raise FormatError(
                f"{label}: '{where}' is a {type(link).__name__}; Keras files contain only hard links, refusing it"
            )
        try:
            current = current[part]
        except H5_ERRORS as exc:
            raise FormatError(
                f"{label}: '{where}' cannot be opened ({first_line(exc)}); the file is corrupt"
            ) from None
    return current


def _full(parent: h5py.Group, path: str) -> str:
    base = parent.name.rstrip("/") if parent.name else ""
    return f"{base}/{path}".lstrip("/")
