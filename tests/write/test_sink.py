"""write/sink.py: the direct (O_DIRECT) and buffered sinks write the same bytes, and fall back cleanly."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import numpy as np
import pytest

from tf2torch.dtypes import by_name
from tf2torch.errors import OutputError
from tf2torch.plan import TensorPlan
from tf2torch.write import pipeline, sink
from tf2torch.write.safetensors import write_safetensors

from .test_safetensors import case, plans_of, reference_bytes

DIRECT = hasattr(os, "O_DIRECT")


def odd_sized(rng: np.random.Generator) -> dict[str, tuple[str, np.ndarray]]:
    """Tensors whose sizes are no multiple of any block: every chunk and block boundary falls mid-tensor;
    a transposed one goes through the copier threads."""
    return {f"t{i}": ("float32", rng.standard_normal(shape).astype("<f4"))
            for i, shape in enumerate([(3,), (517, 9), (1, 1), (1031,), (64, 37), (5,)])}


def transposed_plans(arrays: dict[str, tuple[str, np.ndarray]]) -> list[TensorPlan]:
    """Plans producing each 2-D array as the transposed view of its transpose (the strided band path)."""
    return [TensorPlan(k, by_name(d), a.shape, (lambda a=a: np.ascontiguousarray(a.T).T) if a.ndim == 2
                       else (lambda a=a: a.copy())) for k, (d, a) in arrays.items()]


def sink_kind(path: Path) -> str:
    with sink.open_sink(path) as s:
        return type(s).__name__


@pytest.mark.skipif(not DIRECT, reason="O_DIRECT is Linux-only")
@pytest.mark.parametrize("chunk", [sink.ALIGN, 3 * sink.ALIGN, sink.CHUNK], ids=["one-block", "three-blocks", "default"])
def test_direct_sink_writes_the_bytes_safetensors_writes(tmp_path: Path, monkeypatch, chunk: int) -> None:
    monkeypatch.setattr(sink, "CHUNK", chunk)  # chunks end mid-tensor, mid-band and mid-header
    monkeypatch.setattr(pipeline, "BAND_BYTES", 4096)  # many bands, copied two at a time
    monkeypatch.setattr(pipeline, "PART_BYTES", 1000)
    arrays = odd_sized(np.random.default_rng(chunk))
    kind = sink_kind(tmp_path / "probe")
    print(f"{tmp_path}: {kind}")
    write_safetensors(tmp_path / "m.safetensors", transposed_plans(arrays), metadata={"format": "pt"})
    got = (tmp_path / "m.safetensors").read_bytes()
    want = reference_bytes(arrays, {"format": "pt"}, tmp_path)
    assert len(got) == len(want) and got == want  # the padding of the last block was cut off again


def test_without_direct_io_the_buffered_sink_writes_the_same_bytes(tmp_path: Path, monkeypatch) -> None:
    real_open = os.open

    def no_direct(path, flags, mode=0o777):
        if flags & getattr(os, "O_DIRECT", 0):
            raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))  # what tmpfs answers
        return real_open(path, flags, mode)

    monkeypatch.setattr(sink.os, "open", no_direct)
    assert sink_kind(tmp_path / "probe") == "BufferedSink"
    arrays = case("all-dtypes")
    write_safetensors(tmp_path / "m.safetensors", plans_of(arrays))
    assert (tmp_path / "m.safetensors").read_bytes() == reference_bytes(arrays, None, tmp_path)


@pytest.mark.skipif(not DIRECT, reason="O_DIRECT is Linux-only")
def test_a_filesystem_refusing_direct_writes_gets_the_buffered_sink(tmp_path: Path, monkeypatch) -> None:
    real_pwrite = os.pwrite
    direct_fds: set[int] = set()
    tried: list[int] = []
    real_open = os.open

    def tracking_open(path, flags, mode=0o777):
        fd = real_open(path, flags, mode)
        if flags & os.O_DIRECT:
            direct_fds.add(fd)
            tried.append(fd)
        else:
            direct_fds.discard(fd)  # the number of the closed direct descriptor, reused
        return fd

    def refusing(fd, data, at):
        if fd in direct_fds:
            raise OSError(errno.EINVAL, os.strerror(errno.EINVAL))  # opened, but no aligned write accepted
        return real_pwrite(fd, data, at)

    monkeypatch.setattr(sink.os, "open", tracking_open)
    monkeypatch.setattr(sink.os, "pwrite", refusing)
    arrays = odd_sized(np.random.default_rng(1))
    write_safetensors(tmp_path / "m.safetensors", plans_of(arrays))
    assert tried, "the direct open was not tried"
    assert (tmp_path / "m.safetensors").read_bytes() == reference_bytes(arrays, None, tmp_path)


@pytest.mark.skipif(not DIRECT, reason="O_DIRECT is Linux-only")
def test_disk_full_during_a_direct_chunk_is_one_line_and_leaves_nothing(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(sink, "CHUNK", sink.ALIGN)
    real_pwrite = os.pwrite
    calls = 0

    def fills_up(fd, data, at):
        nonlocal calls
        calls += 1
        if calls > 3:  # the probe and two chunks go through
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_pwrite(fd, data, at)

    if sink_kind(tmp_path / "probe") != "DirectSink":
        pytest.skip(f"{tmp_path} has no direct I/O")
    (tmp_path / "probe").unlink()
    monkeypatch.setattr(sink.os, "pwrite", fills_up)
    plan = TensorPlan("w", by_name("float32"), (10_000,), lambda: np.zeros(10_000, "<f4"))
    with pytest.raises(OutputError, match=r"m.safetensors: cannot write \(No space left on device\); free disk space"):
        write_safetensors(tmp_path / "m.safetensors", [plan])
    assert list(tmp_path.iterdir()) == []
