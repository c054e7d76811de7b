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
# MemoryError: what h5py raises for libhdf5's failed allocations, e.g. under ``memory_guard``.
_H5_ERRORS = (OSError, RuntimeError, KeyError, ValueError, TypeError, MemoryError)


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
        except _H5_ERRORS as exc:
            raise FormatError(
                f"{label}: HDF5 file cannot be opened ({_first_line(exc)}); it is truncated or corrupt"
            ) from None
        yield file


def _size(fh: IO[bytes]) -> int:
    fh.seek(0, 2)
    size = fh.tell()
    fh.seek(0)
    return size


_GUARD_SLACK = 256 << 20


@contextmanager
def memory_guard(file_size: int) -> Iterator[None]:
    """Cap the address space while libhdf5 lists a file: 256 MiB + 2x the file's size more than now.

    libhdf5 trusts 32-bit sizes it reads (a variable-length string's length) and allocates, and zero-
    fills, that much before finding out the file cannot back it: a few flipped bits cost gigabytes, or
    the process on a small CI runner. Under the cap the allocation fails and h5py raises, which the
    getters turn into FormatError. Listing reads attributes and metadata only (the largest, a model
    config, is part of the file). Used for listing only, which runs before any thread that produces
    tensors exists: the cap is process-wide. Linux only (elsewhere RLIMIT_AS is not kept).
    """
    try:
        import resource

        with open("/proc/self/status") as status:
            vm = next(int(line.split()[1]) << 10 for line in status if line.startswith("VmSize:"))
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, StopIteration, ValueError):
        yield
        return
    cap = vm + _GUARD_SLACK + 2 * file_size
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    keep = soft != resource.RLIM_INFINITY and soft <= cap  # already as tight (an outer guard, ulimit -v)
    if not keep:
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        if not keep:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


_GCOL = b"GCOL\x01"  # a global heap collection (version 1): vlen strings such as Keras's attributes
_SCAN_CHUNK = 16 << 20


def check_global_heaps(fh: IO[bytes], label: str) -> None:
    """Refuse global heap collections that libhdf5 would parse forever (no Python signal can stop it).

    libhdf5 (H5HG__cache_heap_deserialize, still in 1.14) walks a collection's objects by their sizes;
    a free-space object of size 0, or a size whose alignment wraps to 0, never advances, and zero
    bytes read past the end of a truncated file are such an object. Every place libhdf5 could load a
    collection from starts with the bytes "GCOL" 1, so all of them are walked here first, the same way.
    """
    try:
        fh.seek(0, 2)
        size = fh.tell()
        fh.seek(0)
        head = fh.read(16).ljust(16, b"\x00")  # superblock v0/v1 keep "size of lengths" at 14, v2/v3 at 10
        width = head[14] if head[8] in (0, 1) else head[10]
        pos, tail = 0, b""
        while pos < size:
            fh.seek(pos)
            chunk = fh.read(_SCAN_CHUNK)
            if not chunk:
                break
            buf, base = tail + chunk, pos - len(tail)
            at = buf.find(_GCOL)
            while at >= 0:
                _check_heap(fh, base + at, width, size, label)
                at = buf.find(_GCOL, at + 1)
            tail, pos = buf[-(len(_GCOL) - 1):], pos + len(chunk)
        fh.seek(0)
    except OSError as exc:
        raise FormatError(f"{label}: cannot read the file ({exc.strerror or exc}); check the path") from None


def _check_heap(fh: IO[bytes], offset: int, width: int, file_size: int, label: str) -> None:
    align = (8 + width + 7) // 8 * 8  # H5HG_SIZEOF_HDR == H5HG_SIZEOF_OBJHDR: ALIGN(8 + sizeof_size)
    fh.seek(offset + 8)
    heap_size = int.from_bytes(fh.read(width), "little")
    fh.seek(offset)
    data = fh.read(min(heap_size, file_size - offset))  # bounded by the file, never by the header
    pos = align
    while pos < heap_size and pos + align <= heap_size:  # a shorter tail is free space, then the end
        header = data[pos:pos + align].ljust(align, b"\x00")  # past the end of the file: zeros
        index, obj_size = int.from_bytes(header[:2], "little"), int.from_bytes(header[8:8 + width], "little")
        need = (align + (obj_size + 7) // 8 * 8) % (1 << 64) if index else obj_size  # size_t arithmetic
        if need == 0 or need > heap_size:
            raise FormatError(f"{label}: global heap collection at byte {offset} has an object at byte "
                              f"{offset + pos} of size {obj_size}, which libhdf5 would loop on; the file is "
                              "corrupt or hostile")
        pos += need


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
    except _H5_ERRORS as exc:
        raise FormatError(f"{label}: group '{group.name}' cannot be listed ({_first_line(exc)})") from None
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


# Attribute type classes Keras writes: text (variable or fixed length) and numbers ([] is float64).
_ATTR_CLASSES = {h5py.h5t.STRING, h5py.h5t.INTEGER, h5py.h5t.FLOAT}


def _raw_attr(obj: h5py.HLObject, name: str, label: str) -> Any:
    try:
        if name not in obj.attrs:
            return None
        # Checked before any read: libhdf5 crashes (SIGSEGV in H5T__conv_vlen) reading a variable-length
        # *sequence* whose type byte is corrupt, and h5py sizes its buffer from the stored dataspace.
        attr = obj.attrs.get_id(name)
        kind, count = attr.get_type().get_class(), attr.get_space().get_simple_extent_npoints()
        if kind not in _ATTR_CLASSES or count * attr.get_type().get_size() > obj.file.id.get_filesize():
            raise FormatError(
                f"{label}: attribute '{name}' of '{obj.name}' has HDF5 type class {kind} and {count} items; "
                "Keras writes text or numbers that fit in the file, the file is corrupt or hostile"
            )
        return obj.attrs[name]
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
