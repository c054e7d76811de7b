"""``.pt`` output and the numpy → torch helper."""

from __future__ import annotations

import struct
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from tf2torch.dtypes import by_name
from tf2torch.errors import OutputError, Tf2TorchError, UnsupportedError
from tf2torch.plan import TensorPlan
from tf2torch.write import pipeline, sink
from tf2torch.write.torch_pt import to_torch, write_pt

from .test_safetensors import CASES, case, plans_of, random_array

TORCH_DTYPES = ["float32", "float64", "int32", "uint8", "int16", "int8", "complex64", "int64", "bool",
                "bfloat16", "uint16", "complex128", "float16", "uint32", "uint64"]


def as_bits(t: torch.Tensor) -> torch.Tensor:
    """Compare bfloat16/float16 by bits: equal bits is the claim, not close values."""
    return t.view(torch.int16) if t.dtype in (torch.bfloat16, torch.float16) else t


@pytest.mark.parametrize("name", CASES, ids=CASES)
def test_pt_loads_with_weights_only(name: str, tmp_path: Path) -> None:
    arrays = case(name)
    total = write_pt(tmp_path / "model.pt", plans_of(arrays))
    assert total == sum(a.nbytes for _, a in arrays.values())
    state = torch.load(tmp_path / "model.pt", weights_only=True)
    assert list(state) == list(arrays)  # the plans' order is kept
    for key, (dtype, array) in arrays.items():
        got = state[key]
        assert got.dtype == getattr(torch, by_name(dtype).torch)
        assert tuple(got.shape) == array.shape
        assert torch.equal(as_bits(got), as_bits(to_torch(array, by_name(dtype))))


@pytest.mark.parametrize("dtype", TORCH_DTYPES, ids=TORCH_DTYPES)
def test_to_torch_every_dtype(dtype: str) -> None:
    rng = np.random.default_rng(1)
    array = random_array(rng, dtype, (3, 4)) if "complex" not in dtype else (
        rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))).astype(by_name(dtype).storage)
    tensor = to_torch(array, by_name(dtype))
    assert tensor.dtype == getattr(torch, by_name(dtype).torch) and tuple(tensor.shape) == (3, 4)
    raw = tensor.view(torch.uint16) if dtype == "bfloat16" else tensor
    np.testing.assert_array_equal(raw.numpy(), array)


def test_bfloat16_bits_are_reinterpreted_not_converted() -> None:
    bits = np.array([0x3F80, 0xC000, 0x7F80, 0x0001], "<u2")  # 1.0, -2.0, +inf, smallest subnormal
    tensor = to_torch(bits, by_name("bfloat16"))
    assert tensor.dtype == torch.bfloat16
    assert tensor[:3].tolist() == [1.0, -2.0, float("inf")]
    assert tensor.view(torch.uint16).numpy().tolist() == bits.tolist()


def test_read_only_arrays_are_copied_so_torch_can_write() -> None:
    array = np.arange(4, dtype="<f4")
    array.setflags(write=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # torch's "not writable" warning must not appear
        tensor = to_torch(array, by_name("float32"))
    tensor += 1
    assert array.tolist() == [0, 1, 2, 3]


def test_writable_contiguous_arrays_share_memory() -> None:
    array = np.zeros(4, "<f4")
    to_torch(array, by_name("float32"))[0] = 5
    assert array[0] == 5


def test_big_endian_and_strided_input() -> None:
    array = np.arange(12, dtype=">i4").reshape(3, 4)[:, ::2]
    tensor = to_torch(array, by_name("int32"))
    assert tensor.tolist() == array.tolist() and tensor.is_contiguous()


@pytest.mark.parametrize(("dtype", "array", "error", "match"), [
    ("float32", np.zeros(2, "<f8"), Tf2TorchError, "expected a numpy float32 array"),
    ("string", np.array([b"a"], object), UnsupportedError, "string has no PyTorch tensor type"),
], ids=["wrong-dtype", "string"])
def test_to_torch_refuses(dtype: str, array: np.ndarray, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        to_torch(array, by_name(dtype))


def test_memmapped_read_only_source_saved_without_warning(tmp_path: Path) -> None:
    data = np.arange(1000, dtype="<f4")
    data.tofile(tmp_path / "src.bin")
    plan = TensorPlan("w", by_name("float32"), (1000,), lambda: np.memmap(tmp_path / "src.bin", "<f4", mode="r"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        write_pt(tmp_path / "m.pt", [plan])
    assert torch.equal(torch.load(tmp_path / "m.pt", weights_only=True)["w"], torch.from_numpy(data))


def test_string_plans_refused(tmp_path: Path) -> None:
    plan = TensorPlan("vocab", by_name("string"), (1,), lambda: np.array([b"a"], object), "table/vocab")
    with pytest.raises(UnsupportedError, match="'vocab' \\(from 'table/vocab'\\): is a string tensor"):
        write_pt(tmp_path / "m.pt", [plan])
    assert not (tmp_path / "m.pt").exists()


def test_progress_per_tensor(tmp_path: Path) -> None:
    seen: list[tuple[str, int]] = []
    arrays = case("all-dtypes")
    write_pt(tmp_path / "m.pt", plans_of(arrays), on_tensor=lambda p, n: seen.append((p.key, n)))
    assert seen == [(k, a.nbytes) for k, (_, a) in arrays.items()]


def data_offsets(path: Path) -> dict[str, int]:
    """Where each record's data starts in the zip (local header + name + extra)."""
    raw = path.read_bytes()
    offsets = {}
    for info in zipfile.ZipFile(path).infolist():
        name_len, extra_len = struct.unpack("<HH", raw[info.header_offset + 26:info.header_offset + 30])
        offsets[info.filename] = info.header_offset + 30 + name_len + extra_len
    return offsets


@pytest.mark.parametrize("name", CASES, ids=CASES)
def test_same_records_and_pickle_as_torch_save(name: str, tmp_path: Path) -> None:
    arrays = case(name)
    write_pt(tmp_path / "ours.pt", plans_of(arrays))
    # (copied into torch.empty: torch's own strides, also for zero-size tensors, whose numpy strides differ)
    tensors = {k: to_torch(a, by_name(d)) for k, (d, a) in arrays.items()}
    torch.save({k: torch.empty(t.shape, dtype=t.dtype).copy_(t) for k, t in tensors.items()}, tmp_path / "ref.pt")
    ours, ref = zipfile.ZipFile(tmp_path / "ours.pt"), zipfile.ZipFile(tmp_path / "ref.pt")
    assert ours.testzip() is None  # every record's CRC-32 is right
    assert [n.split("/", 1)[1] for n in ours.namelist()] == [
        n.split("/", 1)[1] for n in ref.namelist() if not n.endswith(".data/serialization_id")]
    for record in ["data.pkl", ".format_version", ".storage_alignment", "byteorder", "version"]:
        assert ours.read(f"ours/{record}") == ref.read(f"ref/{record}"), record
    assert all(offset % 64 == 0 for offset in data_offsets(tmp_path / "ours.pt").values())
    mapped = torch.load(tmp_path / "ours.pt", weights_only=True, mmap=True)  # needs the 64-byte alignment
    for key, (dtype, array) in arrays.items():
        assert torch.equal(as_bits(mapped[key]), as_bits(to_torch(array, by_name(dtype))))


def test_strided_plans_are_written_band_by_band(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pipeline, "BAND_BYTES", 4096)  # many bands, and a last partial one
    monkeypatch.setattr(sink, "WRITE_BYTES", 1000)  # writes that split bands at odd places
    source = random_array(np.random.default_rng(3), "float32", (300, 70))
    conv = random_array(np.random.default_rng(4), "bfloat16", (3, 3, 20, 12))
    plans = [TensorPlan("dense.weight", by_name("float32"), (70, 300), lambda: source.T, "dense/kernel"),
             TensorPlan("conv.weight", by_name("bfloat16"), (12, 20, 3, 3), lambda: conv.transpose(3, 2, 0, 1))]
    write_pt(tmp_path / "m.pt", plans)
    state = torch.load(tmp_path / "m.pt", weights_only=True)
    assert zipfile.ZipFile(tmp_path / "m.pt").testzip() is None
    assert torch.equal(state["dense.weight"], torch.from_numpy(np.ascontiguousarray(source.T)))
    want = torch.from_numpy(np.ascontiguousarray(conv.transpose(3, 2, 0, 1))).view(torch.bfloat16)
    assert torch.equal(as_bits(state["conv.weight"]), as_bits(want))


def test_failure_midway_leaves_no_file(tmp_path: Path) -> None:
    def boom() -> np.ndarray:
        raise KeyboardInterrupt

    plans = [TensorPlan("a", by_name("float32"), (4,), lambda: np.zeros(4, "<f4")),
             TensorPlan("b", by_name("float32"), (4,), boom)]
    with pytest.raises(KeyboardInterrupt):
        write_pt(tmp_path / "m.pt", plans)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_disk_full_is_an_output_error() -> None:
    plan = TensorPlan("w", by_name("float32"), (1 << 20,), lambda: np.zeros(1 << 20, "<f4"))
    with pytest.raises(OutputError, match=r"/dev/full: cannot write \(No space left on device\); free disk space"):
        write_pt(Path("/dev/full"), [plan])  # every write fails with ENOSPC


def test_zip64_records_stay_aligned_and_load(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Records past 2 GiB get zip64 local headers (20 more bytes); lowering the limit makes every record
    # one, so the alignment arithmetic for them is checked without writing gigabytes.
    monkeypatch.setattr(zipfile, "ZIP64_LIMIT", 100)
    arrays = case("all-dtypes")
    write_pt(tmp_path / "m.pt", plans_of(arrays))
    raw = (tmp_path / "m.pt").read_bytes()
    infos = zipfile.ZipFile(tmp_path / "m.pt").infolist()
    assert any(struct.unpack("<I", raw[i.header_offset + 18:i.header_offset + 22])[0] == 0xFFFFFFFF
               for i in infos)  # zip64 local headers were written
    assert all(offset % 64 == 0 for offset in data_offsets(tmp_path / "m.pt").values())
    state = torch.load(tmp_path / "m.pt", weights_only=True, mmap=True)
    for key, (dtype, array) in arrays.items():
        assert torch.equal(as_bits(state[key]), as_bits(to_torch(array, by_name(dtype))))
