"""The dtype table: TensorFlow ``DataType`` enum values, numpy storage, safetensors and torch names.

One row per dtype tf2torch understands. ``bfloat16`` has no numpy dtype, so it is *stored* as
``uint16`` holding the raw bits; writers and torch conversion reinterpret those bits, never the values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .errors import UnsupportedError

if TYPE_CHECKING:  # imported where arrays are handled: listing a checkpoint needs no numpy
    import numpy as np


@dataclass(frozen=True)
class DType:
    name: str  # our canonical name, also what `inspect` prints
    tf_enum: int  # tensorflow/core/framework/types.proto
    storage: str  # numpy dtype the bytes are read as (little-endian)
    safetensors: str | None  # safetensors header dtype, None when it cannot be stored there
    torch: str | None  # attribute of the torch module, None when torch has no such dtype

    @property
    def itemsize(self) -> int:
        return 0 if self.name == "string" else int(self.storage[2:])  # "<f4" -> 4

    @property
    def is_float(self) -> bool:
        return self.name in ("float16", "bfloat16", "float32", "float64")


_ROWS = [
    DType("float32", 1, "<f4", "F32", "float32"),
    DType("float64", 2, "<f8", "F64", "float64"),
    DType("int32", 3, "<i4", "I32", "int32"),
    DType("uint8", 4, "|u1", "U8", "uint8"),
    DType("int16", 5, "<i2", "I16", "int16"),
    DType("int8", 6, "|i1", "I8", "int8"),
    DType("string", 7, "O", None, None),
    DType("complex64", 8, "<c8", None, "complex64"),
    DType("int64", 9, "<i8", "I64", "int64"),
    DType("bool", 10, "|b1", "BOOL", "bool"),
    DType("bfloat16", 14, "<u2", "BF16", "bfloat16"),  # raw bits in uint16, see module docstring
    DType("uint16", 17, "<u2", "U16", "uint16"),
    DType("complex128", 18, "<c16", None, "complex128"),
    DType("float16", 19, "<f2", "F16", "float16"),
    DType("uint32", 22, "<u4", "U32", "uint32"),
    DType("uint64", 23, "<u8", "U64", "uint64"),
]

BY_NAME: dict[str, DType] = {d.name: d for d in _ROWS}
BY_TF_ENUM: dict[int, DType] = {d.tf_enum: d for d in _ROWS}
# Reference dtypes (DT_FLOAT_REF = 101 ...) are the enum + 100; they only appear in old graphs.
_REF_OFFSET = 100


def from_tf_enum(value: int, where: str) -> DType:
    """The dtype for a TensorFlow ``DataType`` number, or an error naming ``where`` it was found."""
    dtype = BY_TF_ENUM.get(value - _REF_OFFSET if value > _REF_OFFSET else value)
    if dtype is None:
        raise UnsupportedError(
            f"{where}: TensorFlow dtype enum {value} is not supported "
            f"(supported: {', '.join(sorted(BY_NAME))})"
        )
    return dtype


def from_numpy(dtype: np.dtype, where: str) -> DType:
    """The dtype for a numpy dtype as h5py returns it (bfloat16 is not representable there)."""
    import numpy as np

    if dtype.kind in ("S", "O", "U"):
        return BY_NAME["string"]
    for row in _ROWS:
        if row.name != "bfloat16" and row.storage != "O" and np.dtype(row.storage) == dtype.newbyteorder("<"):
            return row
    raise UnsupportedError(f"{where}: numpy dtype {dtype} is not supported")


def by_name(name: str) -> DType:
    try:
        return BY_NAME[name]
    except KeyError:
        raise UnsupportedError(f"unknown dtype {name!r} (known: {', '.join(sorted(BY_NAME))})") from None


def _bf16_bits_from_f32(values: np.ndarray) -> np.ndarray:
    """float32 -> bfloat16 bits, rounding to nearest even like TF and torch; NaN stays a quiet NaN."""
    import numpy as np

    bits = np.ascontiguousarray(values, dtype="<f4").view("<u4")
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype("<u2")
    return np.where(np.isnan(values), np.uint16(0x7FC0), rounded)


def cast(array: np.ndarray, src: DType, dst: DType) -> np.ndarray:
    """Convert stored values between float dtypes (bfloat16 handled through its raw bits)."""
    if src.name == dst.name:
        return array
    if not (src.is_float and dst.is_float):
        raise UnsupportedError(f"cannot cast {src.name} to {dst.name}: only float tensors change dtype")
    if src.name == "bfloat16":
        array = (array.astype("<u4") << 16).view("<f4")
    if dst.name == "bfloat16":
        return _bf16_bits_from_f32(array.astype("<f4", copy=False))
    return array.astype(dst.storage)
