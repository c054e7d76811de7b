"""Code that generated model files carry with them (inlined by source), so they need only torch.

These are real, tested functions; the emitter copies their source into ``model.py``.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import torch

_SAFETENSORS_DTYPES = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
    "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
    "BOOL": torch.bool,
}


def read_weights(path):
    """Read a .safetensors (without the safetensors package) or a .pt state_dict (weights only)."""
    path = Path(path)
    if path.suffix != ".safetensors":
        return torch.load(path, map_location="cpu", weights_only=True)
    data = path.read_bytes()
    (size,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + size])
    header.pop("__metadata__", None)
    state = {}
    for key, info in header.items():
        begin, end = info["data_offsets"]
        raw = bytearray(data[8 + size + begin:8 + size + end])
        tensor = torch.frombuffer(raw, dtype=_SAFETENSORS_DTYPES[info["dtype"]]) if raw else torch.empty(0)
        state[key] = tensor.to(_SAFETENSORS_DTYPES[info["dtype"]]).reshape(info["shape"])
    return state
