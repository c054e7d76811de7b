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
_H5_ERRORS = (OSError, RuntimeError, KeyError, ValueError, TypeError)


@contextmanager
def open_h5(source: Path | IO[bytes], label: str) -> Iterator[h5py.File]:
    """Open ``source`` (a path or a seekable binary file object) read-only, or raise FormatError.

    Paths are opened as Python file objects too (h5py's ``fileobj`` driver): libhdf5 then never
    sees a file name, so no file locking (fails on read-only and network mounts) and no clash
    with a handle the caller opened on the same file with other flags.
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
        try:
            file = stack.enter_context(h5py.File(fh, "r"))
        except _H5_ERRORS as exc:
            raise FormatError(
                f"{label}: HDF5 file cannot be opened ({_first_line(exc)}); it is truncated or corrupt"
            ) from None
        yield file


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
    except _H5_ERRORS as exc:
        raise FormatError(
            f"{label}: dataset '{where}' cannot be inspected ({_first_line(exc)}); the file is corrupt"
        ) from None
    # Keras stores weights uncompressed, so a real dataset cannot hold more bytes than its file.
    if declared > file_size:
        raise FormatError(
            f"{label}: dataset '{where}' declares shape {obj.shape} ({declared} bytes) but the file has "
            f"only {file_size} bytes; the file is corrupt or hostile"
        )
    return obj


def children(group: h5py.Group, label: str) -> list[str]:
    """Names of the members of ``group`` (links are not followed)."""
    try:
        return list(group.keys())
    except _H5_ERRORS as exc:
        raise FormatError(f"{label}: group '{group.name}' cannot be listed ({_first_line(exc)})") from None


def address(obj: h5py.HLObject, label: str) -> int:
    """The object's address in the file: equal for two names hard-linked to one object."""
    try:
        return h5py.h5o.get_info(obj.id).addr
    except _H5_ERRORS as exc:
        raise FormatError(f"{label}: '{obj.name}' cannot be inspected ({_first_line(exc)}); the file is corrupt") from None


def is_group(parent: h5py.Group, name: str) -> bool:
    """True for a hard-linked group; links of other kinds are refused by the getters, not here."""
    try:
        link = parent.get(name, getlink=True)
        return isinstance(link, h5py.HardLink) and parent.get(name, getclass=True) is h5py.Group
    except _H5_ERRORS:
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
    except _H5_ERRORS as exc:
        raise FormatError(
            f"{label}: dataset '{ds.name}' cannot be read ({_first_line(exc)}); the file is truncated or corrupt"
        ) from None
    storage = np.dtype(dtype.storage)
    if data.dtype.kind == "V":
        return data.view(storage)  # raw bits, never converted through float
    # HDF5 keeps the writer's byte order; spec storage is little-endian, values stay bit-identical.
    return data.astype(storage, copy=False)


def read_attr_text(obj: h5py.HLObject, name: str, label: str) -> str | None:
    """A string attribute, or None when absent (h5py gives str or bytes depending on the writer)."""
    value = _raw_attr(obj, name, label)
    if value is None:
        return None
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value[()]
    if isinstance(value, (bytes, np.bytes_)):
        return _decode(bytes(value), obj, name, label)
    if isinstance(value, str):
        return value
    raise FormatError(
        f"{label}: attribute '{name}' of '{obj.name}' should be text, found {type(value).__name__}"
    )


def read_attr_list(obj: h5py.HLObject, name: str, label: str) -> list[str]:
    """A list-of-strings attribute, joined from Keras's chunks when it was split.

    An HDF5 object header holds at most 64 KB of attributes, so Keras writes a longer list as
    ``name0``, ``name1``, ... (``save_attributes_to_hdf5_group``); it never writes both forms.
    """
    if _raw_attr(obj, name, label) is not None:
        return _text_items(_raw_attr(obj, name, label), obj, name, label)
    items: list[str] = []
    chunk = 0
    while (part := _raw_attr(obj, f"{name}{chunk}", label)) is not None:
        items.extend(_text_items(part, obj, f"{name}{chunk}", label))
        chunk += 1
    return items


def _text_items(value: Any, obj: h5py.HLObject, name: str, label: str) -> list[str]:
    arr = np.asarray(value)
    if arr.size == 0:  # Keras writes [] for weightless layers, which numpy types as float64
        return []
    if arr.ndim != 1 or arr.dtype.kind not in ("S", "O", "U"):
        raise FormatError(
            f"{label}: attribute '{name}' of '{obj.name}' should be a list of strings, found {arr.dtype} {arr.shape}"
        )
    out = []
    for item in arr:
        if isinstance(item, (bytes, np.bytes_)):
            out.append(_decode(bytes(item), obj, name, label))
        elif isinstance(item, str):
            out.append(item)
        else:
            raise FormatError(f"{label}: attribute '{name}' of '{obj.name}' has a non-string item {item!r}")
    return out


def _raw_attr(obj: h5py.HLObject, name: str, label: str) -> Any:
    try:
        return obj.attrs[name] if name in obj.attrs else None
    except _H5_ERRORS as exc:
        raise FormatError(
            f"{label}: attribute '{name}' of '{obj.name}' cannot be read ({_first_line(exc)})"
        ) from None


def _decode(raw: bytes, obj: h5py.HLObject, name: str, label: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise FormatError(f"{label}: attribute '{name}' of '{obj.name}' is not UTF-8 text") from None


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
        except _H5_ERRORS as exc:
            raise FormatError(f"{label}: '{where}' cannot be looked up ({_first_line(exc)})") from None
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
        except _H5_ERRORS as exc:
            raise FormatError(
                f"{label}: '{where}' cannot be opened ({_first_line(exc)}); the file is corrupt"
            ) from None
    return current


def _full(parent: h5py.Group, path: str) -> str:
    base = parent.name.rstrip("/") if parent.name else ""
    return f"{base}/{path}".lstrip("/")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
