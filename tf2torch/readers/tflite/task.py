"""MediaPipe task bundles (``.task``): a zip of ``.tflite`` models (and metadata files, labels, nested
bundles), read without extracting anything.

A hand landmarker's bundle holds ``hand_detector.tflite`` and ``hand_landmarks_detector.tflite``; a
member is a model when its bytes 4..8 are TFLite's identifier ``TFL3``, whatever its name. Member names
are only compared and turned into output directory names (``model_name``: one path component of safe
characters), never joined to a directory as they are. A stored member (MediaPipe stores models
uncompressed) is memory-mapped where it lies in the bundle; a deflated one is inflated into memory,
bounded by its declared size, which is itself capped (``MAX_MEMBER_BYTES``, ``MAX_DEFLATE_RATIO``).
"""

from __future__ import annotations

import re
import struct
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import FormatError, UsageError
from ...spec import ModelSpec
from ..detect import TFLITE_IDENTIFIER

if TYPE_CHECKING:  # numpy is imported where a member is read: `inspect` of other formats never loads it
    import numpy as np

TASK_SUFFIX = ".task"
ZIP_MAGIC = b"PK\x03\x04"
MAX_MEMBERS = 1024  # real bundles hold a handful of files
MAX_MEMBER_BYTES = 1 << 33  # 8 GiB: an LLM bundle's model is a few GB; more is a forged size
MAX_INFLATED_BYTES = 1 << 31  # a deflated member is inflated into memory: 2 GiB at most
MAX_DEFLATE_RATIO = 1100  # deflate cannot exceed ~1032:1; a higher declared ratio is a zip bomb
_LOCAL_HEADER = struct.Struct("<4s22xHH")  # signature ... file name length, extra field length
_SAFE = re.compile(r"[^A-Za-z0-9_.-]")
_ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError, NotImplementedError,
               RuntimeError, struct.error, UnicodeDecodeError, zlib.error)


@dataclass(frozen=True)
class Member:
    name: str  # the name in the zip
    size: int  # uncompressed bytes
    stored: bool  # not compressed: mapped in place
    is_model: bool  # a TFLite flatbuffer ('TFL3' at bytes 4..8)
    model_name: str  # its output directory name ("" for a member that is no model)


def is_task(path: Path) -> bool:
    """A MediaPipe bundle: a ``.task`` file that is a zip."""
    if path.suffix != TASK_SUFFIX or not path.is_file():
        return False
    with path.open("rb") as f:
        return f.read(4) == ZIP_MAGIC


def members(path: Path) -> list[Member]:
    """Every member of the bundle, checked: names, sizes, compression; models named for output."""
    out: list[Member] = []
    taken: set[str] = set()
    try:
        with zipfile.ZipFile(path) as zf:
            infos = zf.infolist()
            if len(infos) > MAX_MEMBERS:
                raise FormatError(f"{path}: {len(infos)} members, expected at most {MAX_MEMBERS}; not a MediaPipe "
                                  "task bundle")
            seen: set[str] = set()
            for info in infos:
                if info.is_dir():
                    continue
                _check(path, info, seen)
                head = _head(path, zf, info)
                is_model = head[4:8] == TFLITE_IDENTIFIER
                name = _model_name(info.filename, taken) if is_model else ""
                out.append(Member(info.filename, info.file_size, info.compress_type == zipfile.ZIP_STORED,
                                  is_model, name))
    except _ZIP_ERRORS as exc:
        raise FormatError(f"{path}: not a readable zip ({type(exc).__name__}: {str(exc)[:120]}); a .task bundle "
                          "is a zip of .tflite models, is it fully downloaded?") from None
    return out


def read_task(path: Path, member: str | None = None) -> list[tuple[str, ModelSpec]]:
    """(output name, ModelSpec) of every model in the bundle, or of the one named ``member`` (its name in
    the zip, or its output name)."""
    from .reader import parse_model, tflite_spec

    found = [m for m in members(path) if m.is_model]
    if member is not None:
        chosen = [m for m in found if member in (m.name, m.model_name)]
        if not chosen:
            raise UsageError(f"{path}: no model {member!r} in the bundle; its models: "
                             f"{', '.join(m.name for m in found) or 'none'} (`tf2torch inspect {path.name}`)")
        found = chosen[:1]
    if not found:
        raise FormatError(f"{path}: the bundle holds no TFLite model (no member with 'TFL3' at bytes 4..8)")
    out = []
    for m in found:
        data = _read(path, m)
        where = f"{path}:{m.name}"
        out.append((m.model_name, tflite_spec(parse_model(data, where), path / m.name)))
    return out


def _check(path: Path, info: zipfile.ZipInfo, seen: set[str]) -> None:
    name = info.filename
    parts = name.replace("\\", "/").split("/")
    if not name or "\0" in name or name.startswith(("/", "\\")) or ".." in parts or ":" in parts[0]:
        raise FormatError(f"{path}: member name {name!r} is not a relative path inside the bundle; refused")
    if name in seen:
        raise FormatError(f"{path}: member {name!r} appears twice; refused")
    seen.add(name)
    if info.flag_bits & 0x1:
        raise FormatError(f"{path}: member {name!r} is encrypted; tf2torch reads unencrypted bundles only")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise FormatError(f"{path}: member {name!r} uses zip compression method {info.compress_type}; expected "
                          "stored or deflated")
    if info.file_size > MAX_MEMBER_BYTES:
        raise FormatError(f"{path}: member {name!r} declares {info.file_size} bytes, more than "
                          f"{MAX_MEMBER_BYTES}; refused as a forged size")
    if info.compress_type == zipfile.ZIP_STORED and info.compress_size != info.file_size:
        raise FormatError(f"{path}: stored member {name!r} declares {info.compress_size} bytes stored for "
                          f"{info.file_size}; the bundle is corrupt")
    if info.compress_type == zipfile.ZIP_DEFLATED and (
            info.file_size > MAX_INFLATED_BYTES or info.file_size > MAX_DEFLATE_RATIO * max(info.compress_size, 1)):
        raise FormatError(f"{path}: deflated member {name!r} declares {info.file_size} bytes from "
                          f"{info.compress_size}: a zip bomb or more than {MAX_INFLATED_BYTES} bytes; refused")


def _head(path: Path, zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    with zf.open(info) as f:
        return f.read(8)


def _read(path: Path, m: Member) -> np.ndarray:
    """The member's bytes: a read-only mapping of the bundle (stored) or inflated in memory (deflated)."""
    import numpy as np

    from ...pages import map_file

    try:
        with zipfile.ZipFile(path) as zf:
            info = zf.getinfo(m.name)
            if not m.stored:
                with zf.open(info) as f:
                    data = f.read(info.file_size + 1)  # zipfile stops at the declared size and checks the CRC
                if len(data) != info.file_size:
                    raise FormatError(f"{path}: member {m.name!r} inflates to {len(data)} bytes, declared "
                                      f"{info.file_size}; the bundle is corrupt")
                return np.frombuffer(data, np.uint8)
        with path.open("rb") as f:
            f.seek(info.header_offset)
            magic, name_len, extra_len = _LOCAL_HEADER.unpack(f.read(_LOCAL_HEADER.size))
            start = info.header_offset + _LOCAL_HEADER.size + name_len + extra_len  # the local header's own
            # name and extra field lengths, which may differ from the central directory's
            if magic != ZIP_MAGIC or start + info.file_size > path.stat().st_size:
                raise FormatError(f"{path}: member {m.name!r}'s local header or data lies outside the file; the "
                                  "bundle is corrupt")
            return map_file(f, start, info.file_size)
    except FormatError:
        raise
    except _ZIP_ERRORS as exc:
        raise FormatError(f"{path}: member {m.name!r} cannot be read ({type(exc).__name__}: {str(exc)[:120]})"
                          ) from None


def _model_name(member: str, taken: set[str]) -> str:
    """One safe path component for the member's output directory (``models/face.tflite`` -> ``face``)."""
    stem = member.replace("\\", "/").rsplit("/", 1)[-1]
    stem = stem[: -len(".tflite")] if stem.endswith(".tflite") else stem
    base = _SAFE.sub("_", stem).strip(".") or "model"
    name, n = base, 2
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    taken.add(name)
    return name
