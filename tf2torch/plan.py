"""What the mapping stage hands to writers: one lazy ``TensorPlan`` per state_dict entry.

A plan knows its key, dtype and shape without touching data, so a writer can lay out a whole file
(the safetensors header) first and then produce one tensor at a time: peak memory is the largest
tensor, not the checkpoint.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .dtypes import DType
from .errors import Tf2TorchError, UnsupportedError

if TYPE_CHECKING:  # (imported by the functions that handle arrays: planning needs no numpy)
    import numpy as np


@dataclass(frozen=True, eq=False)
class TensorPlan:
    """One output tensor, produced on demand.

    ``produce()`` loads the source and applies the layout change; it returns an array of exactly
    ``shape`` whose numpy dtype is ``dtype.storage`` (bfloat16 as raw ``uint16`` bits), with any
    strides (a transposed view of a memory-mapped source is copied by the writer, band by band).
    """

    key: str  # state_dict key
    dtype: DType  # output dtype
    shape: tuple[int, ...]  # output shape
    produce: Callable[[], np.ndarray] = field(repr=False)
    source: str = ""  # source variable name, for messages

    @property
    def numel(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.numel * self.dtype.itemsize

    def where(self) -> str:
        """How messages name this tensor: the key, and the source variable when there is one."""
        return f"{self.key!r} (from {self.source!r})" if self.source else repr(self.key)


def check_plans(plans: Iterable[TensorPlan], writer: str) -> list[TensorPlan]:
    """Refuse plans no state_dict file can hold: duplicate keys, strings, malformed shapes.

    Args:
        plans: the plans to write.
        writer: the output kind, for messages ("safetensors", ".pt").

    Returns:
        The plans as a list, in the order given.
    """
    import numpy as np

    plans = list(plans)
    dupes = sorted(k for k, n in Counter(p.key for p in plans).items() if n > 1)
    if dupes:
        raise Tf2TorchError(
            f"{writer} output: keys must be unique, found duplicates {', '.join(map(repr, dupes))}; "
            "rename them with a rules file"
        )
    for plan in plans:
        if not isinstance(plan.key, str):
            raise Tf2TorchError(f"{writer} output: key {plan.key!r} is a {type(plan.key).__name__}, expected str")
        if plan.dtype.name == "string":
            # The caller is meant to skip string variables (vocabularies, checkpoint bookkeeping).
            raise UnsupportedError(
                f"{plan.where()}: is a string tensor; {writer} state_dicts hold only numeric tensors, "
                "leave string variables out of the plans"
            )
        if not all(isinstance(d, (int, np.integer)) and d >= 0 for d in plan.shape):
            raise Tf2TorchError(f"{plan.where()}: shape {plan.shape} is not a tuple of non-negative ints")
    return plans


def produce_checked(plan: TensorPlan, *, contiguous: bool = True) -> np.ndarray:
    """Run ``plan.produce()`` and check the result against the plan before any byte is written.

    A writer that trusted the declared shape would write a header that lies about the data, so a
    mismatch is an error here. A strided result is copied into C order unless ``contiguous=False``
    (the streaming writer copies it band by band itself).
    """
    import numpy as np

    array = plan.produce()
    if isinstance(array, np.generic):  # numpy ufuncs turn 0-d arrays into scalars
        array = np.asarray(array)
    if not isinstance(array, np.ndarray):
        raise Tf2TorchError(
            f"{plan.where()}: expected a numpy array from its producer, found {type(array).__name__}"
        )
    want = np.dtype(plan.dtype.storage)
    if array.dtype != want:
        raise Tf2TorchError(
            f"{plan.where()}: expected numpy dtype {want} for {plan.dtype.name}, found {array.dtype}; "
            "the layout or cast step returned the wrong dtype"
        )
    if array.shape != tuple(plan.shape):
        raise Tf2TorchError(
            f"{plan.where()}: expected shape {tuple(plan.shape)}, found {array.shape}; "
            "the layout step and its declared output shape disagree"
        )
    if contiguous and not array.flags.c_contiguous:
        from .strided import contiguous as copy_contiguous

        array = copy_contiguous(array)
    return array
