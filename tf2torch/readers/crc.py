"""CRC32C (Castagnoli), as TensorFlow checksums table blocks and tensors, plus its mask/unmask.

``crc32c(data, crc)`` is incremental like the ``crc32c`` package: ``crc32c(b, crc32c(a)) ==
crc32c(a + b)``, so large tensors can be checked chunk by chunk. The ``crc32c`` package (hardware
instructions, GB/s) is used when importable; otherwise the vectorised numpy fallback in
``crc_numpy``. The first few KiB (index blocks) go through a byte loop here, so listing a checkpoint
imports neither numpy nor a backend.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable

POLY = 0x82F63B78  # Castagnoli polynomial, bit-reflected
_MASK_DELTA = 0xA282EAD8  # tensorflow/core/lib/hash/crc32c.h kMaskDelta
U32 = 0xFFFFFFFF


def mask(crc: int) -> int:
    """TF stores masked CRCs (rotate right 15, add a constant): a CRC of data holding CRCs is safer."""
    return ((((crc >> 15) | (crc << 17)) & U32) + _MASK_DELTA) & U32


def unmask(masked: int) -> int:
    rot = (masked - _MASK_DELTA) & U32
    return ((rot >> 17) | (rot << 15)) & U32


def _fast() -> Callable[[object, int], int]:
    """``crc32c.crc32c`` (hardware CRC32C, GB/s; it releases the GIL). Raises ImportError without it.

    The extension module is loaded by itself: the package's ``__init__`` looks its own version up
    through ``importlib.metadata``, which costs ~0.1 s per process, more than checking a GB of tensors.
    """
    loaded = sys.modules.get("crc32c", False)
    if loaded is None:  # import blocked (``sys.modules[name] = None``, as tests do)
        raise ImportError("crc32c")
    if loaded:
        return loaded.crc32c  # type: ignore[union-attr]
    try:
        spec = importlib.util.find_spec("crc32c")
    except ValueError:
        spec = None
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("crc32c")
    try:
        ext = importlib.machinery.PathFinder.find_spec("crc32c._crc32c", spec.submodule_search_locations)
        module = importlib.util.module_from_spec(ext)  # type: ignore[arg-type]
        ext.loader.exec_module(module)  # type: ignore[union-attr]
        return module.crc32c
    except Exception:  # a different layout of the package: import it the ordinary way
        import crc32c as package

        return package.crc32c


def _select() -> tuple[str, Callable[[object, int], int]]:
    try:
        fast = _fast()
    except ImportError:
        from .crc_numpy import crc32c_numpy

        return "numpy", crc32c_numpy
    return "crc32c", lambda data, crc=0: fast(data, crc)


# The first bytes (index blocks) go through the word loop, so `inspect` loads no backend; after this
# many, the backend is loaded (in under a millisecond) and used for everything.
_LAZY_BUDGET = 64 << 10
_lazy_left = _LAZY_BUDGET
_selected: tuple[str, Callable[[object, int], int]] | None = None


def _backend() -> tuple[str, Callable[[object, int], int]]:
    global _selected
    if _selected is None:
        _selected = _select()
    return _selected


def __getattr__(name: str) -> object:
    if name == "BACKEND":  # "crc32c" or "numpy", chosen on first use
        return _backend()[0]
    if name in ("crc32c_numpy", "_T8", "_LOW", "_HIGH"):  # the fallback, for tests and benchmarks
        from . import crc_numpy

        return getattr(crc_numpy, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _byte_table() -> list[int]:
    table = []
    for value in range(256):
        for _ in range(8):
            value = (value >> 1) ^ POLY if value & 1 else value >> 1
        table.append(value)
    return table


_BYTES = _byte_table()


def _bytewise(state: int, data: bytes) -> int:
    table = _BYTES
    for byte in data:
        state = (state >> 8) ^ table[(state ^ byte) & 0xFF]
    return state


def crc32c(data: object, crc: int = 0) -> int:
    """CRC32C of a bytes-like object or a numpy array's bytes, continuing from ``crc``."""
    np = sys.modules.get("numpy")  # (without numpy loaded, data cannot be an array)
    if np is not None and isinstance(data, np.ndarray):
        data = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    global _lazy_left
    if _selected is None:
        view = memoryview(data).cast("B")  # type: ignore[arg-type]
        if len(view) <= _lazy_left:
            _lazy_left -= len(view)
            return _bytewise(crc ^ U32, view.tobytes()) ^ U32
    return _backend()[1](data, crc)


class Crc32c:
    """Streaming CRC32C: ``update`` chunk by chunk, then read ``value`` (or ``masked``)."""

    def __init__(self) -> None:
        self.value = 0

    def update(self, data: object) -> Crc32c:
        self.value = crc32c(data, self.value)
        return self

    @property
    def masked(self) -> int:
        return mask(self.value)
