"""A streaming safetensors writer, from the format spec (github.com/huggingface/safetensors, README).

File layout: 8-byte little-endian header length N, then N bytes of JSON
``{"__metadata__": {str: str}, key: {"dtype", "shape", "data_offsets": [begin, end]}, ...}``
padded with spaces to a multiple of 8, then the tensors back to back, little-endian, offsets relative
to the end of the header. The header needs only dtypes and shapes, so it is written first, and it
fixes each tensor's offset: ``pipeline.stream`` then produces the tensors one at a time and its writer
thread writes each at its place, releasing it once written: peak memory is about one tensor (or the
pipeline's small budget), never the model.

The bytes equal ``safetensors.torch.save_file``'s for the same tensors (same data order, JSON
spelling and padding) except for the order of several ``__metadata__`` entries: safetensors emits a
Rust ``HashMap`` in random order, we sort them so our output is reproducible.
No torch import here: writing safetensors needs numpy only.

The bytes go to the file through ``write/sink.py``, which hands each written range to the kernel's writeback
at once: the final fsync of ``staged_output`` then finds little left to do.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from ..errors import Tf2TorchError, UnsupportedError, UsageError
from ..plan import TensorPlan, check_plans
from . import pipeline
from .sink import open_sink

# Data order: safetensors' own `prepare` sorts by dtype (descending, in the order of its Rust `Dtype`
# enum) and then by key. With 8-byte items first and 1-byte last, every tensor starts at a multiple of
# its itemsize (the header is padded to 8), so readers can map it without unaligned access.
_DTYPE_RANK = {name: i for i, name in enumerate(
    ["BOOL", "U8", "I8", "I16", "U16", "F16", "BF16", "I32", "U32", "F32", "F64", "I64", "U64"])}
_METADATA_KEY = "__metadata__"
_MAX_HEADER = 100_000_000  # safetensors readers refuse larger headers (MAX_HEADER_SIZE)


def build_header(plans: Iterable[TensorPlan],
                 metadata: Mapping[str, str] | None = None) -> tuple[bytes, list[TensorPlan]]:
    """The file's first bytes (length prefix + padded JSON) and the plans in data order.

    Computed from dtypes and shapes alone; no tensor is produced.
    """
    plans = check_plans(plans, "safetensors")
    for plan in plans:
        if plan.dtype.safetensors is None or plan.dtype.safetensors not in _DTYPE_RANK:
            raise UnsupportedError(
                f"{plan.where()}: dtype {plan.dtype.name} cannot be stored in safetensors; "
                "write a .pt file instead"
            )
        if plan.key == _METADATA_KEY:
            raise UnsupportedError(f"{plan.where()}: the key {_METADATA_KEY!r} is reserved by safetensors; rename it")
    ordered = sorted(plans, key=lambda p: (-_DTYPE_RANK[p.dtype.safetensors], p.key))  # type: ignore[index]
    doc: dict[str, object] = {}
    if metadata is not None:
        bad = [k for k, v in metadata.items() if not isinstance(k, str) or not isinstance(v, str)]
        if bad:
            raise UsageError(f"safetensors metadata: keys and values must be str, found {bad[0]!r}: "
                             f"{metadata[bad[0]]!r}; convert them with str()")
        doc[_METADATA_KEY] = dict(sorted(metadata.items()))
    offset = 0
    for plan in ordered:
        doc[plan.key] = {"dtype": plan.dtype.safetensors, "shape": [int(d) for d in plan.shape],
                         "data_offsets": [offset, offset + plan.nbytes]}
        offset += plan.nbytes
    # serde_json spelling: no spaces, UTF-8 as is, the same escapes as Python's json for control chars.
    try:
        text = json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise Tf2TorchError(f"safetensors header: a key or metadata entry is not valid Unicode ({exc.reason}); "
                            "rename it") from None
    text += b" " * (-len(text) % 8)
    if len(text) > _MAX_HEADER:
        raise UnsupportedError(f"safetensors header: {len(text)} bytes exceeds the {_MAX_HEADER}-byte limit of "
                               "safetensors readers; split the tensors into several files")
    return struct.pack("<Q", len(text)) + text, ordered


def write_safetensors(path: Path, plans: Iterable[TensorPlan], *, metadata: Mapping[str, str] | None = None,
                      on_tensor: Callable[[TensorPlan, int], None] | None = None) -> int:
    """Write ``plans`` to ``path`` as safetensors, producing one tensor at a time.

    Args:
        path: the file to create (normally inside ``staged_output``'s staging directory).
        plans: the tensors; keys must be unique.
        metadata: the header's ``__metadata__`` (str to str); ``{"format": "pt"}`` lets
            ``safetensors.torch.load_file`` users know the layout is PyTorch's.
        on_tensor: called after each tensor as ``on_tensor(plan, plan.nbytes)`` (bytes of that tensor).

    Returns:
        The file size in bytes.

    Example:
        >>> import numpy as np, tempfile, pathlib
        >>> from tf2torch.dtypes import by_name
        >>> plan = TensorPlan("w", by_name("float32"), (2,), lambda: np.zeros(2, "<f4"))
        >>> write_safetensors(pathlib.Path(tempfile.mkdtemp()) / "m.safetensors", [plan])
        72
    """
    path = Path(path)
    header, ordered = build_header(plans, metadata)
    placed, offset = [], len(header)
    for plan in ordered:
        placed.append((plan, offset))
        offset += plan.nbytes
    sink = open_sink(path)
    try:
        with sink:
            sink.reserve(offset)  # the whole file's size: known from the header before any tensor is read
            sink.write_at(memoryview(header), 0)
            pipeline.stream(placed, sink.write_at, on_tensor)
    except BaseException:
        # A header promising more data than follows must not survive, even outside staged_output.
        if path.is_file():  # (never a device or fifo given as the path)
            path.unlink()
        raise
    return offset
