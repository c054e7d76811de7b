"""``TensorProto`` (a Const node's value, core/framework/tensor.proto) as a lazily decoded ``Variable``.

Fields used::

    TensorProto  dtype 1, tensor_shape 2 {dim 2 {size 1}, unknown_rank 3}, tensor_content 4 (raw,
                 little-endian), float_val 5, double_val 6, int_val 7 (int32/16/8, uint8/16),
                 string_val 8, int64_val 10, bool_val 11, half_val 13 (float16/bfloat16 bits in int32),
                 uint32_val 16, uint64_val 17

TF writes either the raw bytes or the typed list; a typed list shorter than the shape repeats its last
value (``tf.zeros([1000, 1000])`` is stored as one 0.0), an empty one means zeros.
"""

from __future__ import annotations

import math
import struct
from typing import TYPE_CHECKING

from ...dtypes import DType, from_tf_enum
from ...errors import FormatError
from ...spec import Variable
from ..proto import FIXED64, LEN, Message

if TYPE_CHECKING:
    import numpy as np

# A forged shape with one repeated value would otherwise ask for terabytes; real constants filled
# from a short list (zeros, ones, a scalar broadcast) are far below this.
MAX_FILLED_ELEMENTS = 1 << 27
MAX_DIMS = 32


def _shape(msg: Message, where: str) -> tuple[int, ...]:
    dims = tuple(d.int64(1) for d in msg.message(2, "tensor_shape").messages(2, "dim"))
    if len(dims) > MAX_DIMS or any(d < 0 for d in dims):
        raise FormatError(f"{where}: a constant's shape {list(dims)[:8]} is not a valid static shape "
                          "(negative or more than 32 dims); the file is corrupt")
    return dims


def _doubles(msg: Message, number: int, where: str) -> list[float]:
    out: list[float] = []
    for f in msg.fields.get(number, []):
        if f.wire == LEN:
            data = bytes(f.value)  # type: ignore[arg-type]
            if len(data) % 8:
                raise FormatError(f"{where}: packed double field has {len(data)} bytes, not a multiple of 8")
            out.extend(struct.unpack(f"<{len(data) // 8}d", data))
        elif f.wire == FIXED64:
            out.append(struct.unpack("<d", f.value.to_bytes(8, "little"))[0])  # type: ignore[union-attr]
        else:
            raise FormatError(f"{where}: double_val should be fixed64, found wire type {f.wire}")
    return out


def _typed_values(msg: Message, dtype: DType, where: str) -> list:
    name = dtype.name
    if name == "float32":
        return msg.repeated_floats(5)
    if name == "float64":
        return _doubles(msg, 6, where)
    if name in ("int32", "int16", "int8", "uint8", "uint16"):
        return msg.repeated_ints(7)
    if name == "int64":
        return msg.repeated_ints(10)
    if name == "bool":
        return [bool(v) for v in msg.repeated_uints(11)]
    if name in ("float16", "bfloat16"):
        return [v & 0xFFFF for v in msg.repeated_uints(13)]  # the 16 bits, stored as the storage dtype
    if name == "uint32":
        return msg.repeated_uints(16)
    if name == "uint64":
        return msg.repeated_uints(17)
    if name == "string":
        return [bytes(v) for v in msg.repeated_bytes(8)]
    raise FormatError(f"{where}: constants of dtype {name} are not supported")


def _decode(msg: Message, dtype: DType, shape: tuple[int, ...], where: str) -> np.ndarray:
    import numpy as np

    size = math.prod(shape)
    content = msg.blob(4)
    if content and dtype.name != "string":
        if len(content) != size * dtype.itemsize:
            raise FormatError(f"{where}: tensor_content has {len(content)} bytes, the shape {list(shape)} "
                              f"of {dtype.name} needs {size * dtype.itemsize}; the file is corrupt")
        return np.frombuffer(content, dtype=dtype.storage).reshape(shape)
    values = _typed_values(msg, dtype, where)
    if len(values) > size:
        raise FormatError(f"{where}: {len(values)} values for shape {list(shape)}; the file is corrupt")
    if len(values) < size and size > MAX_FILLED_ELEMENTS:
        raise FormatError(f"{where}: a constant of {size} elements filled from {len(values)} values is "
                          f"larger than tf2torch accepts ({MAX_FILLED_ELEMENTS}); the file is corrupt or forged")
    if dtype.name == "string":
        out = np.empty(size, dtype=object)
        out[:len(values)] = values
        out[len(values):] = values[-1] if values else b""
        return out.reshape(shape)
    array = np.zeros(size, dtype=dtype.storage)
    if values:
        array[:len(values)] = values
        array[len(values):] = values[-1]  # TF repeats the last value to fill the shape
    return array.reshape(shape)


def const_variable(blob: Message, name: str, where: str) -> Variable:
    """The Const ``name``'s value (its ``value`` attr's TensorProto) as a Variable, read on demand."""
    dtype = from_tf_enum(blob.uint(1), where)
    shape = _shape(blob, where)
    nbytes = math.prod(shape) * max(dtype.itemsize, 1)
    return Variable(name=name, dtype=dtype, shape=shape, nbytes=nbytes,
                    loader=lambda: _decode(blob, dtype, shape, where))
