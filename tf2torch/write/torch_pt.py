"""``.pt`` output (a plain state_dict saved with ``torch.save``) and numpy → torch conversion.

Unlike safetensors, ``torch.save`` needs every tensor alive at once (it pickles the whole dict, then
writes the storages), so a ``.pt`` costs as much memory as the checkpoint; prefer safetensors for
large models. torch is imported inside the functions: importing tf2torch must stay cheap.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from ..dtypes import DType
from ..errors import MissingDependencyError, OutputError, Tf2TorchError, UnsupportedError
from .plan import TensorPlan, check_plans, produce_checked

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
    if dtype.torch is None or dtype.name == "string":
        raise UnsupportedError(f"dtype {dtype.name} has no PyTorch tensor type; leave such variables out")
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


def write_pt(path: Path, plans: Iterable[TensorPlan], *,
             on_tensor: Callable[[TensorPlan, int], None] | None = None) -> int:
    """Save ``plans`` as a state_dict with ``torch.save``; loadable with ``torch.load(weights_only=True)``.

    Args:
        path: the file to create (normally inside ``staged_output``'s staging directory).
        plans: the tensors, saved in this order; keys must be unique.
        on_tensor: called as ``on_tensor(plan, plan.nbytes)`` after each tensor is produced (the file
            itself is written at the end, in one ``torch.save``).

    Returns:
        The number of tensor bytes saved.
    """
    torch = _torch()
    plans = check_plans(plans, ".pt")
    state: dict[str, torch.Tensor] = {}
    total = 0
    for plan in plans:
        state[plan.key] = _as_tensor(produce_checked(plan), plan.dtype)
        total += plan.nbytes
        if on_tensor is not None:
            on_tensor(plan, plan.nbytes)
    try:
        torch.save(state, Path(path))
    except BaseException as exc:
        if Path(path).is_file():
            Path(path).unlink()  # no half-written zip, even outside staged_output
        if not isinstance(exc, (OSError, RuntimeError)):
            raise
        # torch's zip writer reports a failed write (disk full) as RuntimeError("PytorchStreamWriter ...").
        if isinstance(exc, RuntimeError) and "PytorchStreamWriter" not in str(exc):
            raise
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc).splitlines()[0]
        raise OutputError(f"{path}: cannot write ({reason}); free disk space or choose another output "
                          "location") from exc
    return total
