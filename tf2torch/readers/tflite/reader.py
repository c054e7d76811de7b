"""Read a ``.tflite`` file (a TFLite flatbuffer, schema v3) into a ``LiteModel`` and a ``ModelSpec``.

The file is memory-mapped, never read whole: weights are views of the mapping, read when a converter
needs them. Every table goes through ``flatbuf.Table`` (offsets, vtables, counts checked); what is
decoded here is then checked for meaning: tensor and buffer indices in range, constant data exactly
``prod(shape) * itemsize`` bytes, buffers stored after the flatbuffer inside the file.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from ...dtypes import BY_NAME
from ...errors import FormatError
from ...spec import Format, ModelSpec, Variable
from . import schema as S
from .flatbuf import Table, root
from .model import LiteBuffer, LiteModel, LiteOperator, LiteSignature, LiteSubgraph, LiteTensor, Quantization
from .sparsity import read_sparsity

if TYPE_CHECKING:
    import numpy as np

MAX_RANK = 16  # TFLite kernels take at most 6 dimensions; more is a forged shape
FLOAT_DTYPES = ("float32", "float16", "float64")
QUANTIZED_DTYPES = ("int8", "uint8", "int16", "int32", "int64")  # weights and biases of quantized models, with scales


def read_tflite(path: Path) -> ModelSpec:
    """The ``ModelSpec`` of a ``.tflite`` file: its float constant tensors of subgraph 0 as variables, the
    decoded model behind ``spec.tflite``."""
    return tflite_spec(read_model(path), path)


def tflite_spec(model: LiteModel, path: Path) -> ModelSpec:
    """The ``ModelSpec`` of a decoded model; ``path`` names it (a ``.task`` member: ``x.task/name.tflite``)."""
    graph = model.subgraphs[0]
    weights = []
    for index, name in weight_names(model, graph).items():
        t = graph.tensors[index]
        weights.append(Variable(name=name, dtype=BY_NAME[t.dtype], shape=t.shape,
                                nbytes=_dense_bytes(model, t), loader=_loader(model, t),
                                tf_name=t.name.split(";", 1)[0]))
    notes = (f"TFLite metadata: {', '.join(model.metadata)}",) if model.metadata else ()
    return ModelSpec(path=path, format=Format.TFLITE, variables=tuple(weights), notes=notes,
                     variable_order=tuple(v.name for v in weights), tflite=lambda: model)


def weight_names(model: LiteModel, graph: LiteSubgraph) -> dict[int, str]:
    """Tensor index -> variable name of the graph's weights: its float constants of rank >= 1 and its
    quantized integer constants (int8 weights, int32 biases: they carry scales; an int32 constant without
    them is a shape or axes, a scalar is a factor: as in a frozen graph). Names are not unique in the
    schema: a repeated one gets its tensor index."""
    out: dict[int, str] = {}
    seen: set[str] = set()
    for t in graph.tensors:
        weight = t.dtype in FLOAT_DTYPES or t.dtype in QUANTIZED_DTYPES and t.quantization.quantized
        if weight and t.shape and model.has_data(t):
            name = t.name if t.name not in seen else f"{t.name}#{t.index}"
            seen.add(name)
            out[t.index] = name
    return out


def _dense_bytes(model: LiteModel, t: LiteTensor) -> int:
    # a sparse constant's buffer holds its stored values only: the variable is its dense expansion
    stored = model.buffers[t.buffer].size
    return math.prod(t.shape) * BY_NAME[t.dtype].itemsize if t.sparse else stored


def _loader(model: LiteModel, tensor: LiteTensor):
    return lambda: model.array(tensor)


def read_model(path: Path) -> LiteModel:
    from ...pages import map_file

    try:
        with path.open("rb") as f:
            size = path.stat().st_size
            if size < 8:
                raise FormatError(f"{path}: a TFLite file has at least 8 bytes (root offset, 'TFL3'), found {size}; "
                                  "is it fully downloaded?")
            data = map_file(f, 0, size)
    except OSError as exc:
        raise FormatError(f"{path}: cannot read ({exc.strerror})") from None
    return parse_model(data, str(path))


def parse_model(data: np.ndarray, where: str) -> LiteModel:
    """Decode a TFLite flatbuffer held in ``data`` (uint8, mapped or in memory); ``where`` names it."""
    path, size = where, len(data)
    if size < 8:
        raise FormatError(f"{where}: a TFLite model has at least 8 bytes (root offset, 'TFL3'), found {size}")
    buf = memoryview(data)
    if bytes(buf[4:8]) != S.FILE_IDENTIFIER:
        raise FormatError(f"{path}: expected the TFLite identifier 'TFL3' at bytes 4..8, found {bytes(buf[4:8])!r}; "
                          "is it a .tflite model?")
    top = root(buf, where)
    version = int(top.scalar(S.MODEL["version"], "I"))
    if version != S.SCHEMA_VERSION:
        raise FormatError(f"{path}: TFLite schema version {version}, expected {S.SCHEMA_VERSION}; re-convert the "
                          "model with a current TensorFlow / LiteRT converter")
    codes = [_opcode(t) for t in top.tables(S.MODEL["operator_codes"], "operator_codes")]
    buffers = tuple(_buffer(t, size, where, i) for i, t in enumerate(top.tables(S.MODEL["buffers"], "buffers")))
    subgraphs = tuple(_subgraph(t, codes, len(buffers), where) for t in top.tables(S.MODEL["subgraphs"], "subgraphs"))
    if not subgraphs:
        raise FormatError(f"{path}: the model has no subgraph; the file is corrupt")
    signatures = tuple(_signature(t, subgraphs, where) for t in top.tables(S.MODEL["signature_defs"], "signature_defs"))
    metadata = tuple(t.string(S.METADATA["name"]) for t in top.tables(S.MODEL["metadata"], "metadata"))
    model = LiteModel(where, version, top.string(S.MODEL["description"]), subgraphs, buffers, signatures, metadata,
                      data)
    for t in subgraphs[0].tensors:  # every constant's size is checked now, not when it is first used
        if model.has_data(t) and S.TENSOR_TYPES[_code(t.dtype)][1] is not None:
            model.array(t)
    return model


def _code(dtype: str) -> int:
    return next(c for c, (n, _) in S.TENSOR_TYPES.items() if n == dtype)


def _opcode(t: Table) -> tuple[str, str, int]:
    # Old files only set the int8 deprecated_builtin_code; new ones set builtin_code (an int32) and keep
    # min(code, 127) in the deprecated field: the larger of the two is the operator.
    code = max(int(t.scalar(S.OPERATOR_CODE["deprecated_builtin_code"], "b")),
               int(t.scalar(S.OPERATOR_CODE["builtin_code"], "i")))
    name = S.BUILTIN_OPS[code] if 0 <= code < len(S.BUILTIN_OPS) else f"BUILTIN_{code}"
    return name, t.string(S.OPERATOR_CODE["custom_code"]), int(t.scalar(S.OPERATOR_CODE["version"], "i", 1))


def _buffer(t: Table, file_size: int, where: str, index: int) -> LiteBuffer:
    start, size = t.bytes_view(S.BUFFER["data"])
    offset, length = int(t.scalar(S.BUFFER["offset"], "Q")), int(t.scalar(S.BUFFER["size"], "Q"))
    if offset > 1:  # the schema: data outside the flatbuffer, offset from the file's start "only valid if > 1"
        if size or offset + length > file_size:
            raise FormatError(f"{where}: buffer {index} at bytes {offset}..{offset + length} (file: {file_size} "
                              "bytes); the file is truncated or corrupt")
        return LiteBuffer(offset, length, external=True)
    return LiteBuffer(start, size)


def _quantization(t: Table | None) -> Quantization:
    if t is None:
        return Quantization()
    q = S.QUANTIZATION
    return Quantization(scales=t.scalars(q["scale"], "f"), zero_points=t.scalars(q["zero_point"], "q"),
                        dimension=int(t.scalar(S.QUANTIZATION["quantized_dimension"], "i")),
                        min=t.scalars(S.QUANTIZATION["min"], "f"), max=t.scalars(S.QUANTIZATION["max"], "f"))


def _tensor(t: Table, index: int, n_buffers: int, where: str) -> LiteTensor:
    name = t.string(S.TENSOR["name"]) or f"tensor_{index}"
    shape = tuple(int(d) for d in t.scalars(S.TENSOR["shape"], "i"))
    signature = tuple(int(d) for d in t.scalars(S.TENSOR["shape_signature"], "i")) if t.has(
        S.TENSOR["shape_signature"]) else None
    if len(shape) > MAX_RANK or any(d < 0 for d in shape) or math.prod(shape) > 1 << 40:
        raise FormatError(f"{where}: tensor {name!r} has shape {list(shape)[:8]} (expected at most {MAX_RANK} "
                          "non-negative sizes); the file is corrupt")
    code = int(t.scalar(S.TENSOR["type"], "b"))
    if code not in S.TENSOR_TYPES:
        raise FormatError(f"{where}: tensor {name!r} has type {code}, not a TensorType of schema v3; the file is "
                          "corrupt or newer than tf2torch")
    buffer = int(t.scalar(S.TENSOR["buffer"], "I"))
    if buffer >= max(n_buffers, 1):
        raise FormatError(f"{where}: tensor {name!r} names buffer {buffer} of {n_buffers}; the file is corrupt")
    return LiteTensor(index, name, shape, signature, S.TENSOR_TYPES[code][0], buffer,
                      _quantization(t.table(S.TENSOR["quantization"], "quantization")),
                      bool(t.scalar(S.TENSOR["is_variable"], "?")), _sparsity(t, f"{where}: tensor {name!r}"))


def _sparsity(t: Table, where: str):
    table = t.table(S.TENSOR["sparsity"], "sparsity")
    return read_sparsity(table, where) if table is not None else None


def _options(t: Table, op: str, where: str) -> dict:
    spec = S.OPTIONS.get(op)
    kind = int(t.scalar(S.OPERATOR["builtin_options_type"], "B"))
    if spec is None or kind == 0:
        return {}
    if kind != spec[0]:
        raise FormatError(f"{where}: a {op} operator carries builtin options of type {kind}, expected {spec[0]}; "
                          "the file is corrupt")
    table = t.table(S.OPERATOR["builtin_options"], f"{op} options")
    out: dict = {}
    for key, slot, fmt, default in spec[1]:
        if table is None:
            value = default
        elif fmt == "i*":
            value = tuple(int(v) for v in table.scalars(slot, "i"))
        else:
            value = table.scalar(slot, fmt, default)  # type: ignore[arg-type]
        if key in S.ENUM_FIELDS:
            value = S.ENUM_FIELDS[key].get(int(value), f"unknown ({value})")
        out[key] = value
    return out


def _subgraph(t: Table, codes: list[tuple[str, str, int]], n_buffers: int, where: str) -> LiteSubgraph:
    name = t.string(S.SUBGRAPH["name"])
    here = f"{where} (subgraph {name!r})" if name else where
    tensors = tuple(_tensor(x, i, n_buffers, here) for i, x in enumerate(t.tables(S.SUBGRAPH["tensors"], "tensors")))

    def indices(values: tuple, what: str, optional: bool = False) -> tuple[int, ...]:
        for v in values:
            if not (0 <= v < len(tensors) or optional and v == -1):
                raise FormatError(f"{here}: {what} names tensor {v} of {len(tensors)}; the file is corrupt")
        return tuple(int(v) for v in values)

    operators = []
    for i, o in enumerate(t.tables(S.SUBGRAPH["operators"], "operators")):
        index = int(o.scalar(S.OPERATOR["opcode_index"], "I"))
        if index >= len(codes):
            raise FormatError(f"{here}: operator {i} names operator code {index} of {len(codes)}; the file is corrupt")
        op, custom, version = codes[index]
        start, size = o.bytes_view(S.OPERATOR["custom_options"]) if op == "CUSTOM" else (0, 0)  # checked in the file
        operators.append(LiteOperator(i, op, custom, version,
                                      indices(o.scalars(S.OPERATOR["inputs"], "i"), f"operator {i}'s inputs", True),
                                      indices(o.scalars(S.OPERATOR["outputs"], "i"), f"operator {i}'s outputs"),
                                      _options(o, op, f"{here}: operator {i}"), bytes(o.buf[start:start + size]),
                                      indices(o.scalars(S.OPERATOR["intermediates"], "i"),
                                              f"operator {i}'s intermediates")))
    return LiteSubgraph(name, tensors, indices(t.scalars(S.SUBGRAPH["inputs"], "i"), "the inputs"),
                        indices(t.scalars(S.SUBGRAPH["outputs"], "i"), "the outputs"), tuple(operators))


def _signature(t: Table, subgraphs: tuple[LiteSubgraph, ...], where: str) -> LiteSignature:
    key = t.string(S.SIGNATURE_DEF["signature_key"])
    index = int(t.scalar(S.SIGNATURE_DEF["subgraph_index"], "I"))
    if index >= len(subgraphs):
        raise FormatError(f"{where}: signature {key!r} names subgraph {index} of {len(subgraphs)}; the file is corrupt")
    count = len(subgraphs[index].tensors)

    def entries(slot: int, what: str) -> dict[str, int]:
        out = {}
        for m in t.tables(slot, what):
            name, tensor = m.string(S.TENSOR_MAP["name"]), int(m.scalar(S.TENSOR_MAP["tensor_index"], "I"))
            if tensor >= count:
                raise FormatError(f"{where}: signature {key!r} maps {name!r} to tensor {tensor} of {count}; "
                                  "the file is corrupt")
            out[name] = tensor
        return out

    return LiteSignature(key, entries(S.SIGNATURE_DEF["inputs"], "inputs"),
                         entries(S.SIGNATURE_DEF["outputs"], "outputs"), index)
