"""``.pt`` output (a plain state_dict that ``torch.load(weights_only=True)`` reads) and numpy → torch.

``torch.save`` needs every tensor alive at once (it pickles the whole dict, then writes the storages),
so it would cost as much memory as the checkpoint. ``write_pt`` writes the same file format itself
(``torch_zip``): first the pickle, which needs only dtypes and shapes, then each tensor's bytes as its
own record, produced, written and released one at a time (``pipeline.pieces``), like safetensors.
torch is imported inside the functions: importing tf2torch must stay cheap.
"""

from __future__ import annotations

import io
import math
import pickle
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from ..dtypes import DType
from ..errors import MissingDependencyError, OutputError, Tf2TorchError, UnsupportedError
from ..plan import TensorPlan, check_plans, produce_checked
from . import sink
from .pipeline import pieces
from .torch_zip import ALIGNMENT, TorchArchive

if TYPE_CHECKING:
    import torch


def _torch() -> ModuleType:
    try:
        import torch
    except ImportError:
        raise MissingDependencyError("writing PyTorch tensors needs torch; install it with: pip install torch") from None
    return torch


def to_torch(array: np.ndarray, dtype: DType) -> torch.Tensor:
    """The tensor ``dtype`` describes, from ``array`` holding it in numpy storage form.

    bfloat16 arrives as raw ``uint16`` bits and is reinterpreted, never converted. The tensor shares
    memory with ``array`` when that is writable and C-contiguous; read-only arrays (memory-mapped
    checkpoints) are copied, because torch assumes it may write to any tensor.

    Args:
        array: the values, numpy dtype ``dtype.storage`` (either byte order).
        dtype: the tensor's dtype.

    Example:
        >>> import numpy as np
        >>> from tf2torch.dtypes import by_name
        >>> to_torch(np.array([0x3F80], "<u2"), by_name("bfloat16"))
        tensor([1.], dtype=torch.bfloat16)
    """
    array = np.asarray(array)  # numpy scalars (what ufuncs return for 0-d input) become 0-d arrays
    if not array.flags.writeable:
        array = array.copy()
    return _as_tensor(array, dtype)


def _as_tensor(array: np.ndarray, dtype: DType) -> torch.Tensor:
    """``to_torch`` without the read-only copy: for tensors that are only read (saved), never mutated."""
    torch = _torch()
    _check_torch_dtype(dtype)
    storage = np.dtype(dtype.storage)
    if array.dtype != storage:
        if array.dtype.newbyteorder("<") != storage.newbyteorder("<"):
            raise Tf2TorchError(f"expected a numpy {storage} array for a {dtype.name} tensor, found {array.dtype}")
        array = array.astype(storage)  # big-endian input: torch tensors are native (little-endian) only
    if not array.flags.c_contiguous:  # (np.ascontiguousarray would also turn 0-d arrays into 1-d)
        array = np.ascontiguousarray(array)
    with warnings.catch_warnings():
        # Read-only arrays reach here only from write_pt, which never writes to the tensors.
        warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
        tensor = torch.from_numpy(array)
    if dtype.name == "bfloat16":
        tensor = tensor.view(torch.bfloat16)  # same bits, now read as bfloat16
    return tensor


def _check_torch_dtype(dtype: DType, where: str = "") -> None:
    if dtype.torch is None or dtype.name == "string":
        raise UnsupportedError(f"{where}dtype {dtype.name} has no PyTorch tensor type; leave such variables out")


def write_pt(path: Path, plans: Iterable[TensorPlan], *,
             on_tensor: Callable[[TensorPlan, int], None] | None = None) -> int:
    """Save ``plans`` as a ``torch.save``-format state_dict, one tensor in memory at a time.

    ``torch.load(path, weights_only=True)`` returns a dict of the tensors in plan order (and
    ``mmap=True`` works: storages are 64-byte aligned, as torch writes them).

    Args:
        path: the file to create (normally inside ``staged_output``'s staging directory).
        plans: the tensors, saved in this order; keys must be unique.
        on_tensor: called as ``on_tensor(plan, plan.nbytes)`` after each tensor is written.

    Returns:
        The number of tensor bytes saved.
    """
    plans = check_plans(plans, ".pt")
    refs = {plan.key: _TensorRef(plan, str(i)) for i, plan in enumerate(plans)}
    for plan in plans:  # refused before anything is written
        _check_torch_dtype(plan.dtype, f"{plan.where()}: ")
    pickled = io.BytesIO()
    _Pickler(pickled, protocol=2).dump(refs)  # protocol 2: what torch.save writes
    path = Path(path)
    buffer = np.empty(0, np.uint8)

    def take(nbytes: int) -> np.ndarray:  # one band buffer, reused: each band is written before the next
        nonlocal buffer
        if buffer.nbytes < nbytes:
            buffer = np.empty(nbytes, np.uint8)
        return buffer

    try:
        with TorchArchive(path) as archive:
            archive.write("data.pkl", pickled.getvalue())
            archive.write(".format_version", b"1")
            archive.write(".storage_alignment", str(ALIGNMENT).encode())
            archive.write("byteorder", b"little")  # our arrays are little-endian on every host
            for plan, ref in zip(plans, refs.values()):
                array = produce_checked(plan, contiguous=False)
                with archive.open(f"data/{ref.storage_key}", plan.nbytes) as f:
                    for data, _, done in pieces(array, take, lambda b: None):
                        for start in range(0, len(data), sink.WRITE_BYTES):  # (small writes: see WRITE_BYTES)
                            f.write(data[start:start + sink.WRITE_BYTES])
                        if done is not None:
                            done()
                del array
                if on_tensor is not None:
                    on_tensor(plan, plan.nbytes)
            archive.write("version", b"3\n")
    except BaseException as exc:
        if path.is_file():
            path.unlink()  # no half-written zip, even outside staged_output
        if isinstance(exc, OSError):
            raise OutputError(f"{path}: cannot write ({exc.strerror or exc}); free disk space or choose "
                              "another output location") from exc
        raise
    return sum(plan.nbytes for plan in plans)


# Tensors of these dtypes are pickled as torch.save does for them: _rebuild_tensor_v2 over the legacy
# typed storage class. Newer dtypes (uint16/32/64) use _rebuild_tensor_v3 over an UntypedStorage plus
# the dtype (torch/storage.py: the legacy map is frozen; new dtypes never get a storage class).
_LEGACY_STORAGE = {
    "float64": "DoubleStorage", "float32": "FloatStorage", "float16": "HalfStorage", "int64": "LongStorage",
    "int32": "IntStorage", "int16": "ShortStorage", "int8": "CharStorage", "uint8": "ByteStorage",
    "bool": "BoolStorage", "bfloat16": "BFloat16Storage", "complex128": "ComplexDoubleStorage",
    "complex64": "ComplexFloatStorage",
}


class _StorageRef:
    """Pickled as torch's persistent id of a storage: ``("storage", type, key, "cpu", numel)``."""

    def __init__(self, storage_type: object, key: str, numel: int) -> None:
        self.id = ("storage", storage_type, key, "cpu", numel)


class _TensorRef:
    """Pickled as torch pickles a contiguous CPU tensor of ``plan``'s dtype and shape."""

    def __init__(self, plan: TensorPlan, storage_key: str) -> None:
        self.plan, self.storage_key = plan, storage_key

    def __reduce__(self) -> tuple[object, tuple[object, ...]]:
        torch = _torch()
        shape = tuple(int(d) for d in self.plan.shape)
        # torch's contiguous strides count a size-0 dimension as 1 (torch.empty((2, 0, 4)).stride() == (4, 4, 1))
        stride = tuple(math.prod(max(d, 1) for d in shape[i + 1:]) for i in range(len(shape)))
        legacy = _LEGACY_STORAGE.get(self.plan.dtype.name)
        if legacy is not None:
            storage = _StorageRef(getattr(torch, legacy), self.storage_key, self.plan.numel)
            return torch._utils._rebuild_tensor_v2, (storage, 0, shape, stride, False, OrderedDict())
        storage = _StorageRef(torch.storage.UntypedStorage, self.storage_key, self.plan.nbytes)
        dtype = getattr(torch, str(self.plan.dtype.torch))
        return torch._utils._rebuild_tensor_v3, (storage, 0, shape, stride, False, OrderedDict(), dtype)


class _Pickler(pickle.Pickler):
    """Writes ``_StorageRef``s as persistent ids (BINPERSID), as ``torch.save``'s pickler does."""

    def persistent_id(self, obj: object) -> object:
        return obj.id if isinstance(obj, _StorageRef) else None
