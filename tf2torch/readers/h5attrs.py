"""Keras's HDF5 attributes, read defensively: text or lists of text, chunked when large.

Keras writes ``layer_names`` / ``weight_names`` as arrays of byte strings and splits one that exceeds
HDF5's 64 KB attribute limit into ``name0``, ``name1``, … (``legacy_h5_format.save_attributes_to_hdf5_group``).
Attributes are type-checked before h5py reads them: fuzzing found a corrupt type byte that crashes
libhdf5 on read.
"""

from __future__ import annotations

from typing import Any

import h5py
import numpy as np

from ..errors import FormatError
from .h5harden import H5_ERRORS, first_line


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
    except H5_ERRORS as exc:
        raise FormatError(
            f"{label}: attribute '{name}' of '{obj.name}' cannot be read ({first_line(exc)})"
        ) from None


def _decode(raw: bytes, obj: h5py.HLObject, name: str, label: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise FormatError(f"{label}: attribute '{name}' of '{obj.name}' is not UTF-8 text") from None
