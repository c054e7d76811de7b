"""write/sink.py and the copier threads: tensors whose sizes fall at no boundary, transposed band by band by
two copiers, write the bytes safetensors itself writes."""

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


@pytest.mark.parametrize("copiers,buffers", [(1, 1), (2, 3), (2, 6)], ids=["serial", "two-copiers-tight", "default"])
def test_bands_copied_in_parallel_are_written_in_order(tmp_path: Path, monkeypatch, copiers: int, buffers: int) -> None:
    monkeypatch.setattr(pipeline, "COPIERS", copiers)
    monkeypatch.setattr(pipeline, "BUFFERS", buffers)  # few buffers: taking one waits on the writer
    monkeypatch.setattr(pipeline, "BAND_BYTES", 4096)  # many bands
    monkeypatch.setattr(pipeline, "PART_BYTES", 1000)
    monkeypatch.setattr(sink, "WRITE_BYTES", 777)
    monkeypatch.setattr(sink, "RESERVED_WRITE_BYTES", 777)
    arrays = odd_sized(np.random.default_rng(copiers + buffers))
    write_safetensors(tmp_path / "m.safetensors", transposed_plans(arrays), metadata={"format": "pt"})
    assert (tmp_path / "m.safetensors").read_bytes() == reference_bytes(arrays, {"format": "pt"}, tmp_path)


def test_reserved_file_is_written_to_exactly_its_size(tmp_path: Path) -> None:
    arrays = odd_sized(np.random.default_rng(7))
    size = write_safetensors(tmp_path / "m.safetensors", transposed_plans(arrays), metadata={"format": "pt"})
    got = (tmp_path / "m.safetensors").read_bytes()
    print(f"fallocate available: {sink._fallocate is not None}; {size} bytes")
    assert len(got) == size and got == reference_bytes(arrays, {"format": "pt"}, tmp_path)


def _failing_fallocate(code: int):
    import ctypes

    def fallocate(fd: int, mode: int, offset: int, length: int) -> int:
        ctypes.set_errno(code)
        return -1
    return fallocate


def test_a_full_disk_fails_before_any_tensor_is_read(tmp_path: Path, monkeypatch) -> None:
    import errno

    from tf2torch.errors import OutputError

    monkeypatch.setattr(sink, "_fallocate", _failing_fallocate(errno.ENOSPC))
    read: list[str] = []
    plans = [TensorPlan("w", by_name("float32"), (4,), lambda: read.append("w") or np.zeros(4, "<f4"))]
    with pytest.raises(OutputError, match=r"cannot allocate \d+ bytes .*free disk space"):
        write_safetensors(tmp_path / "m.safetensors", plans)
    assert read == [] and not (tmp_path / "m.safetensors").exists()


def test_a_filesystem_that_cannot_allocate_is_written_as_before(tmp_path: Path, monkeypatch) -> None:
    import errno

    monkeypatch.setattr(sink, "_fallocate", _failing_fallocate(errno.EOPNOTSUPP))
    arrays = odd_sized(np.random.default_rng(8))
    write_safetensors(tmp_path / "m.safetensors", transposed_plans(arrays), metadata={"format": "pt"})
    assert (tmp_path / "m.safetensors").read_bytes() == reference_bytes(arrays, {"format": "pt"}, tmp_path)


def test_a_reserved_file_is_written_in_larger_calls(tmp_path: Path, monkeypatch) -> None:
    import errno

    calls: list[int] = []
    can_allocate = sink._fallocate is not None  # (Linux)
    real = sink._pwrite
    monkeypatch.setattr(sink, "_pwrite", lambda fd, data, at: calls.append(len(data)) or real(fd, data, at))
    big = {"w": ("float32", np.ones((1 << 20,), "<f4"))}  # 4 MiB
    plans = [TensorPlan("w", by_name("float32"), (1 << 20,), lambda: big["w"][1])]
    write_safetensors(tmp_path / "a.safetensors", plans)
    reserved = max(calls)
    calls.clear()
    monkeypatch.setattr(sink, "_fallocate", _failing_fallocate(errno.EOPNOTSUPP))
    write_safetensors(tmp_path / "b.safetensors", plans)
    print(f"largest write: {reserved} bytes reserved, {max(calls)} not")
    assert max(calls) == sink.WRITE_BYTES
    assert reserved == (sink.RESERVED_WRITE_BYTES if can_allocate else sink.WRITE_BYTES)
    assert (tmp_path / "a.safetensors").read_bytes() == (tmp_path / "b.safetensors").read_bytes()
