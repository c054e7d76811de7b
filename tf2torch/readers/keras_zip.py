"""Keras 3 ``.keras`` archives: ``metadata.json``, ``config.json``, ``model.weights.h5`` in a zip.

Nothing is extracted: member names are only compared with the three names above, never joined
to a directory. The weights file is opened where it lies: Keras stores members uncompressed, so
each ``Variable.loader`` reopens the archive and hands h5py a read-only window onto the member's
bytes (no copy, no temp file); a deflated member is decompressed into memory on every read.

``model.weights.h5`` mirrors Keras's object tree (``saving_lib._save_state``): the model's layers
are ``layers/<snake_case(class)>[_<n>]/vars/<i>``, numbered per class in ``model.layers`` order
(Functional models list their InputLayers, Sequential models do not, ops such as ``x + 1`` are not
layers); nested models repeat ``layers/...`` inside their group; sublayers appear under their
attribute name (``multi_head_attention/query_dense/vars``); ``optimizer/vars/<i>`` is optimizer
state. Keras >= 3.10 also tags each ``vars`` group with the owner's name; we check it.
"""

from __future__ import annotations

import io
import struct
import zipfile
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import IO, Any

import h5py
import numpy as np

from ..dtypes import DType
from ..errors import FormatError, UnsupportedError
from ..families.keras_hub.common import args as keras_hub
from ..spec import Format, GraphSpec, ModelSpec
from . import h5safe
from .h5load import check_stamp, file_stamp, keras_major, keras_release, load_variable
from .jsonsafe import load_json
from .keras_assets import read_assets
from .keras_config import parse_model_config
from .keras_v3 import attach_v3_weights, v3_vars_groups

METADATA = "metadata.json"
CONFIG = "config.json"
WEIGHTS_H5 = "model.weights.h5"
WEIGHTS_NPZ = "model.weights.npz"
MAX_MEMBERS = 4096  # Keras writes 3 members plus assets; far more means a hostile archive
MAX_JSON_BYTES = 64 << 20  # config.json of the largest real models is a few MB
MAX_DEFLATE_RATIO = 1100  # deflate cannot exceed ~1032:1; a higher declared ratio is a zip bomb
_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature ... file name length, extra field length


def read_keras_zip(path: Path) -> ModelSpec:
    """Read a Keras 3 ``.keras`` file into a ``ModelSpec`` with its graph and lazy weights.

    Example:
        >>> spec = read_keras_zip(Path("model.keras"))  # doctest: +SKIP
        >>> spec.graph.layer("conv").weights[0].name  # doctest: +SKIP
        'layers/conv2d/vars/0'
    """
    path = Path(path)
    label = str(path)
    stamp = file_stamp(path, label)
    with _open_zip(path, label) as zf:
        infos = _checked_members(zf, label)
        metadata = _json_member(zf, infos.get(METADATA), label) if METADATA in infos else {}
        if CONFIG not in infos:
            found = ", ".join(sorted(infos)[:6]) or "no members"
            raise FormatError(
                f"{label}: expected a Keras .keras archive with '{CONFIG}', found {found}; "
                "save the model with model.save('x.keras')"
            )
        config = _json_member(zf, infos[CONFIG], label)
        if WEIGHTS_NPZ in infos and WEIGHTS_H5 not in infos:
            raise UnsupportedError(
                f"{label}: weights are in '{WEIGHTS_NPZ}', which Keras writes as pickled objects that tf2torch "
                "will not unpickle; re-save with model.save('x.keras') (the default h5 weights)"
            )
        weights = infos.get(WEIGHTS_H5)
        assets = read_assets(zf, infos, label)  # vocabularies of adapted lookup layers
        opener = _member_opener(path, stamp, weights, label) if weights else None
    saved_by = metadata.get("keras_version") if isinstance(metadata, Mapping) else None
    version = keras_major(saved_by)
    notes: list[str] = []
    unconverted = ""
    try:
        # A keras-hub model saves its constructor's arguments; its builder writes the layer graph.
        config = keras_hub.expand(config, where=f"{label}:{CONFIG}")
        graph: GraphSpec | None = parse_model_config(config, version, where=f"{label}:{CONFIG}")
        graph = replace(graph, keras_release=keras_release(saved_by))
    except UnsupportedError as exc:  # a subclassed model: its weights can still be listed
        graph, notes, unconverted = None, [str(exc)], str(exc)
    if opener is None:
        return ModelSpec(
            path, Format.KERAS_V3, (), graph, notes=(*notes, f"no '{WEIGHTS_H5}' in the archive"),
            unconverted=unconverted,
        )
    wlabel = f"{label}:{WEIGHTS_H5}"
    with opener(scan=True) as f:  # loaders reopen without the scan (stamp-checked, same bytes)
        groups = v3_vars_groups(f, wlabel, partial(_loader, opener, wlabel))
    if graph is not None:
        graph, notes = attach_v3_weights(graph, config, groups, wlabel, assets)
    variables = tuple(v for g in groups for v in g.variables)
    return ModelSpec(path, Format.KERAS_V3, variables, graph, notes=tuple(notes), unconverted=unconverted)


@contextmanager
def _open_zip(path: Path, label: str) -> Iterator[zipfile.ZipFile]:
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError) as exc:
        raise FormatError(
            f"{label}: expected a .keras zip archive, found no valid zip ({exc}); pass a file saved with model.save('x.keras')"
        ) from None
    except OSError as exc:
        raise FormatError(f"{label}: cannot read the file ({exc.strerror or exc}); check the path") from None
    with zf:
        yield zf


def _checked_members(zf: zipfile.ZipFile, label: str) -> dict[str, zipfile.ZipInfo]:
    infos = zf.infolist()
    if len(infos) > MAX_MEMBERS:
        raise FormatError(
            f"{label}: archive has {len(infos)} members, a Keras file has a handful (limit {MAX_MEMBERS}); refusing it"
        )
    out: dict[str, zipfile.ZipInfo] = {}
    for info in infos:
        name = info.filename
        parts = name.replace("\\", "/").split("/")
        if name.startswith(("/", "\\")) or ".." in parts or "\\" in name or "\0" in name or ":" in parts[0]:
            raise FormatError(
                f"{label}: archive member {name!r} has an absolute or parent-relative path; refusing the archive"
            )
        if name in out:
            raise FormatError(
                f"{label}: archive member {name!r} appears twice; refusing the ambiguous archive"
            )
        if info.flag_bits & 0x1:
            raise FormatError(
                f"{label}: archive member {name!r} is encrypted; Keras never encrypts, refusing it"
            )
        # Keras stores or deflates; any other method id would surface as zipfile's NotImplementedError
        # (or need a codec) when the member is opened, so it is refused here by name.
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise FormatError(
                f"{label}: archive member {name!r} uses compression method {info.compress_type}, expected "
                "stored (0) or deflate (8) as Keras writes; refusing the archive"
            )
        if info.compress_type != zipfile.ZIP_STORED and info.file_size > MAX_DEFLATE_RATIO * max(
            info.compress_size, 1
        ):
            raise FormatError(
                f"{label}: archive member {name!r} declares {info.file_size} bytes from {info.compress_size} "
                "compressed (beyond what deflate can do); refusing a zip bomb"
            )
        out[name] = info
    return out


def _json_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, label: str) -> Any:
    if info.file_size > MAX_JSON_BYTES:
        raise FormatError(
            f"{label}: '{info.filename}' declares {info.file_size} bytes, more than the {MAX_JSON_BYTES} a model config needs; "
            "refusing it"
        )
    try:
        with zf.open(info) as fh:
            raw = fh.read(MAX_JSON_BYTES + 1)  # never trust the declared size alone
        text = raw[:MAX_JSON_BYTES].decode("utf-8")
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        raise FormatError(
            f"{label}: '{info.filename}' is not readable JSON ({str(exc).splitlines()[0]}); the archive is corrupt"
        ) from None
    return load_json(text, f"{label}: '{info.filename}'", "JSON as Keras writes it")


def _member_opener(
    path: Path, stamp: tuple[int, int], info: zipfile.ZipInfo, label: str
) -> Callable[[], Any]:
    """A callable that opens the weights member as an h5py file, reopening the archive each time."""
    wlabel = f"{label}:{info.filename}"
    if info.compress_type != zipfile.ZIP_STORED:
        return partial(_deflated, path, stamp, info.filename, label, wlabel)
    # The member's bytes start after its local header, whose name/extra lengths may differ from
    # the central directory's; read them there (``header_offset`` already counts any prefix).
    with path.open("rb") as fh:
        fh.seek(info.header_offset)
        header = fh.read(_LOCAL_HEADER.size)
    if len(header) != _LOCAL_HEADER.size or _LOCAL_HEADER.unpack(header)[0] != b"PK\x03\x04":
        raise FormatError(
            f"{wlabel}: local zip header missing at offset {info.header_offset}; the archive is corrupt"
        )
    _, name_len, extra_len = _LOCAL_HEADER.unpack(header)
    start = info.header_offset + _LOCAL_HEADER.size + name_len + extra_len
    if info.compress_size != info.file_size or start + info.file_size > stamp[0]:
        raise FormatError(
            f"{wlabel}: stored member of {info.file_size} bytes does not fit the archive ({stamp[0]} bytes); it is truncated"
        )
    return partial(_stored, path, stamp, start, info.file_size, label, wlabel)


@contextmanager
def _stored(
    path: Path, stamp: tuple[int, int], start: int, size: int, label: str, wlabel: str, scan: bool = False
) -> Iterator[h5py.File]:
    check_stamp(path, stamp, label)
    with path.open("rb") as fh, h5safe.open_h5(_Window(fh, start, size), wlabel, scan) as f:
        yield f


@contextmanager
def _deflated(
    path: Path, stamp: tuple[int, int], member: str, label: str, wlabel: str, scan: bool = False
) -> Iterator[h5py.File]:
    check_stamp(path, stamp, label)
    with _open_zip(path, label) as zf:
        try:
            with zf.open(member) as fh:
                data = fh.read(zf.getinfo(member).file_size + 1)
        except (zipfile.BadZipFile, OSError, EOFError) as exc:
            raise FormatError(f"{wlabel}: cannot be decompressed ({exc}); the archive is corrupt") from None
    with h5safe.open_h5(io.BytesIO(data), wlabel, scan) as f:
        yield f


def _loader(
    opener: Callable[[], Any], label: str, ds_path: str, dtype: DType, shape: tuple[int, ...]
) -> Callable[[], np.ndarray]:
    return partial(load_variable, opener, ds_path, dtype, shape, label)


class _Window(io.RawIOBase):
    """Read-only, seekable view of ``size`` bytes at ``start`` of an open file (a stored zip member)."""

    def __init__(self, fh: IO[bytes], start: int, size: int) -> None:
        super().__init__()
        self._fh, self._start, self._size, self._pos = fh, start, size, 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        n = max(0, min(len(view), self._size - self._pos))  # never read past the member
        if n == 0:
            return 0
        self._fh.seek(self._start + self._pos)
        got = self._fh.readinto(view[:n]) or 0
        self._pos += got
        return got


