"""The value objects a TFLite model is read into: plain, frozen, free of flatbuffer offsets.

Tensor data stays in the memory-mapped file until a weight is read (``LiteModel.array``); everything
else is decoded once, when the file is opened.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...errors import FormatError

if TYPE_CHECKING:
    import numpy as np

    from .sparsity import Sparsity


@dataclass(frozen=True)
class Quantization:
    """A tensor's quantization: per-tensor (one scale) or per-axis (one per slice of ``dimension``)."""

    scales: tuple[float, ...] = ()
    zero_points: tuple[int, ...] = ()
    dimension: int = 0  # quantized_dimension: the axis the scales run along when there are several
    min: tuple[float, ...] = ()
    max: tuple[float, ...] = ()

    @property
    def quantized(self) -> bool:
        return bool(self.scales)


@dataclass(frozen=True)
class LiteTensor:
    index: int
    name: str
    shape: tuple[int, ...]  # as stored: a dynamic batch is 1 here
    signature: tuple[int, ...] | None  # shape_signature: -1 where the size is dynamic (None: not stored)
    dtype: str  # "float32", "int8", ... (schema.TENSOR_TYPES)
    buffer: int  # index into LiteModel.buffers; 0 is the empty sentinel buffer
    quantization: Quantization = field(default_factory=Quantization)
    is_variable: bool = False
    sparsity: Sparsity | None = None  # a sparse constant (DENSIFY's input): its buffer holds the stored values

    @property
    def sparse(self) -> bool:
        return self.sparsity is not None

    @property
    def dims(self) -> tuple[int | None, ...]:
        """The shape with dynamic sizes as None (shape_signature where present)."""
        if self.signature is not None and len(self.signature) == len(self.shape):
            return tuple(None if s < 0 else s for s in self.signature)
        return self.shape


@dataclass(frozen=True)
class LiteOperator:
    index: int
    op: str  # the BuiltinOperator name ("CONV_2D"), or "CUSTOM"
    custom_code: str  # for CUSTOM operators: their name ("Convolution2DTransposeBias")
    version: int
    inputs: tuple[int, ...]  # tensor indices; -1 is an omitted optional input (a bias-free FULLY_CONNECTED)
    outputs: tuple[int, ...]
    options: Mapping[str, Any] = field(default_factory=dict)  # the decoded builtin options
    custom_options: bytes = b""  # a CUSTOM operator's options, raw (each custom op has its own format)
    # tensors the kernel reads only the quantization of (the integer LSTM's intermediate scales)
    intermediates: tuple[int, ...] = ()

    @property
    def kind(self) -> str:
        """What a message calls the operator: its builtin name, or CUSTOM(name)."""
        return f"CUSTOM({self.custom_code})" if self.op == "CUSTOM" else self.op


@dataclass(frozen=True)
class LiteSubgraph:
    name: str
    tensors: tuple[LiteTensor, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    operators: tuple[LiteOperator, ...]


@dataclass(frozen=True)
class LiteSignature:
    key: str
    inputs: Mapping[str, int]  # signature name -> tensor index in the subgraph
    outputs: Mapping[str, int]
    subgraph: int


@dataclass(frozen=True)
class LiteBuffer:
    start: int  # absolute byte position of the data in the file (0 with size 0: no data)
    size: int
    external: bool = False  # stored after the flatbuffer (offset/size), as models over 2 GB are


@dataclass(frozen=True, eq=False)
class LiteModel:
    where: str  # the file, for messages
    version: int
    description: str
    subgraphs: tuple[LiteSubgraph, ...]
    buffers: tuple[LiteBuffer, ...]
    signatures: tuple[LiteSignature, ...] = ()
    metadata: tuple[str, ...] = ()  # the metadata entries' names (min_runtime_version, TFLITE_METADATA, ...)
    data: Any = field(default=None, repr=False)  # the mapped file (a uint8 numpy array)

    def has_data(self, tensor: LiteTensor) -> bool:
        return 0 < tensor.buffer < len(self.buffers) and self.buffers[tensor.buffer].size > 0

    def array(self, tensor: LiteTensor) -> np.ndarray:
        """A constant tensor's values, a read-only view of the mapped file (checked in size on reading); a
        sparse one expanded to its dense shape (``sparsity.densify``: checked against its metadata)."""
        import numpy as np

        from .schema import TENSOR_TYPES

        storage = TENSOR_TYPES[_type_code(tensor.dtype)][1]
        buf = self.buffers[tensor.buffer]
        raw = self.data[buf.start: buf.start + buf.size]
        if tensor.sparsity is not None and storage is not None and buf.size % np.dtype(storage).itemsize == 0:
            from .sparsity import densify

            return densify(np.frombuffer(raw, dtype=storage), tensor.shape, tensor.sparsity,
                           f"{self.where}: sparse tensor {tensor.name!r}")
        if storage is None or math.prod(tensor.shape) * np.dtype(storage).itemsize != buf.size:
            raise FormatError(f"{self.where}: tensor {tensor.name!r} ({tensor.dtype} {list(tensor.shape)}) has "
                              f"{buf.size} bytes of data; the file is corrupt")
        return np.frombuffer(raw, dtype=storage).reshape(tensor.shape)


def _type_code(name: str) -> int:
    from .schema import TENSOR_TYPES

    return next(code for code, (n, _) in TENSOR_TYPES.items() if n == name)
