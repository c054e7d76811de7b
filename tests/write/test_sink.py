"""write/sink.py and the band pipeline: tensors whose sizes fall at no boundary, transposed band by band into
few reused buffers, write the bytes safetensors itself writes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tf2torch.dtypes import by_name
from tf2torch.plan import TensorPlan
from tf2torch.write import pipeline, sink
from tf2torch.write.safetensors import write_safetensors

from .test_safetensors import reference_bytes


def odd_sized(rng: np.random.Generator) -> dict[str, tuple[str, np.ndarray]]:
    """Sizes that are no multiple of a band, a part or a write: every boundary falls mid-tensor."""
    return {f"t{i}": ("float32", rng.standard_normal(shape).astype("<f4"))
            for i, shape in enumerate([(3,), (517, 9), (1, 1), (1031,), (64, 37), (5,)])}


def transposed_plans(arrays: dict[str, tuple[str, np.ndarray]]) -> list[TensorPlan]:
    """Plans producing each 2-D array as the transposed view of its transpose (the strided band path)."""
    return [TensorPlan(k, by_name(d), a.shape, (lambda a=a: np.ascontiguousarray(a.T).T) if a.ndim == 2
                       else (lambda a=a: a.copy())) for k, (d, a) in arrays.items()]


@pytest.mark.parametrize("buffers", [1, 2, 4], ids=["one-buffer", "two-buffers", "default"])
def test_bands_are_written_in_order(tmp_path: Path, monkeypatch, buffers: int) -> None:
    monkeypatch.setattr(pipeline, "BUFFERS", buffers)  # few buffers: taking one waits on the writer
    monkeypatch.setattr(pipeline, "BAND_BYTES", 4096)  # many bands
    monkeypatch.setattr(pipeline, "PART_BYTES", 1000)
    monkeypatch.setattr(sink, "WRITE_BYTES", 777)
    arrays = odd_sized(np.random.default_rng(buffers))
    write_safetensors(tmp_path / "m.safetensors", transposed_plans(arrays), metadata={"format": "pt"})
    assert (tmp_path / "m.safetensors").read_bytes() == reference_bytes(arrays, {"format": "pt"}, tmp_path)
