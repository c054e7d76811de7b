"""The streaming safetensors writer against the reference implementation, byte for byte."""

from __future__ import annotations

import json
import mmap
import os
import struct
import weakref
from pathlib import Path

import numpy as np
import pytest
import safetensors.numpy
import safetensors.torch
import torch
from safetensors import safe_open

from tests.readers.test_mapped_reads import mapping_rss
from tf2torch.dtypes import by_name
from tf2torch.errors import OutputError, Tf2TorchError, UnsupportedError, UsageError
from tf2torch.pages import Pages
from tf2torch.plan import TensorPlan
from tf2torch.write import pipeline as write_pipeline
from tf2torch.write import safetensors as st_writer
from tf2torch.write import sink as write_sink
from tf2torch.write.safetensors import build_header, write_safetensors
from tf2torch.write.torch_pt import to_torch

SAFETENSORS_DTYPES = ["float32", "float64", "int32", "uint8", "int16", "int8", "int64", "bool", "bfloat16",
                      "uint16", "float16", "uint32", "uint64"]


def random_array(rng: np.random.Generator, dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    """Values of ``dtype`` in storage form; bfloat16 as the top 16 bits of random float32s."""
    if dtype == "bool":
        return np.asarray(rng.random(shape) < 0.5)
    if dtype == "bfloat16":
        return np.asarray((rng.standard_normal(shape).astype("<f4").view("<u4") >> 16).astype("<u2"))
    storage = np.dtype(by_name(dtype).storage)
    if storage.kind == "f":
        return rng.standard_normal(shape).astype(storage)
    info = np.iinfo(storage)
    return rng.integers(info.min, info.max, size=shape, dtype=storage, endpoint=True)


def plans_of(arrays: dict[str, tuple[str, np.ndarray]]) -> list[TensorPlan]:
    return [TensorPlan(k, by_name(d), a.shape, lambda a=a: a.copy(), source=f"tf/{k}") for k, (d, a) in arrays.items()]


def case(name: str) -> dict[str, tuple[str, np.ndarray]]:
    rng = np.random.default_rng(len(name))
    if name == "float32":
        return {"dense.weight": ("float32", random_array(rng, "float32", (4, 3))),
                "dense.bias": ("float32", random_array(rng, "float32", (4,)))}
    if name == "float16":
        return {"w": ("float16", random_array(rng, "float16", (5, 7)))}
    if name == "bfloat16":
        return {"w": ("bfloat16", random_array(rng, "bfloat16", (3, 8))), "b": ("bfloat16", random_array(rng, "bfloat16", (8,)))}
    if name == "int64":
        return {"bn.num_batches_tracked": ("int64", np.zeros((), "<i8")), "ids": ("int64", random_array(rng, "int64", (9,)))}
    if name == "bool":
        return {"mask": ("bool", random_array(rng, "bool", (3, 5)))}
    if name == "scalar":
        return {"s": ("float32", np.array(1.5, "<f4")), "t": ("uint8", np.array(7, "|u1"))}
    if name == "empty":
        return {"e": ("float32", np.zeros((0, 3), "<f4")), "f": ("int8", np.zeros((2, 0, 4), "|i1")), "g": ("float64", np.ones(2))}
    if name == "all-dtypes":
        return {f"k{i:02d}.{d}": (d, random_array(rng, d, (3, 2))) for i, d in enumerate(SAFETENSORS_DTYPES)}
    if name == "many-keys":
        keys = {f"layer{int(rng.integers(0, 10**6))}.w{i}" for i in range(400)}
        return {k: (d, random_array(rng, d, tuple(int(x) for x in rng.integers(0, 4, size=rng.integers(0, 4)))))
                for k in sorted(keys) for d in [str(rng.choice(SAFETENSORS_DTYPES))]}
    if name == "unicode-keys":
        return {"ß.β.\u2028": ("float32", np.ones(2, "<f4")), 'q"u\\o\te\x01': ("int32", np.arange(3, dtype="<i4")),
                "emoji🙂": ("float16", np.zeros(1, "<f2"))}
    raise KeyError(name)


CASES = ["float32", "float16", "bfloat16", "int64", "bool", "scalar", "empty", "all-dtypes", "many-keys", "unicode-keys"]
METADATA = {"none": None, "empty": {}, "format-pt": {"format": "pt"}, "escaped": {"src\n": 'a"b\\c\x7f\u00e9'}}


def reference_bytes(arrays: dict[str, tuple[str, np.ndarray]], metadata, tmp_path: Path) -> bytes:
    tensors = {k: to_torch(a, by_name(d)) for k, (d, a) in arrays.items()}
    safetensors.torch.save_file(tensors, tmp_path / "ref.safetensors", metadata=metadata)
    return (tmp_path / "ref.safetensors").read_bytes()


@pytest.mark.parametrize("meta", list(METADATA), ids=[f"meta-{m}" for m in METADATA])
@pytest.mark.parametrize("name", CASES, ids=CASES)
def test_bytes_equal_safetensors_torch(name: str, meta: str, tmp_path: Path) -> None:
    arrays = case(name)
    out = tmp_path / "ours.safetensors"
    size = write_safetensors(out, plans_of(arrays), metadata=METADATA[meta])
    ours = out.read_bytes()
    assert size == len(ours)
    assert ours == reference_bytes(arrays, METADATA[meta], tmp_path)


NUMPY_CASES = [c for c in CASES if c not in ("bfloat16", "all-dtypes", "many-keys")]


@pytest.mark.parametrize("name", NUMPY_CASES, ids=NUMPY_CASES)
def test_bytes_equal_safetensors_numpy(name: str, tmp_path: Path) -> None:
    arrays = case(name)
    write_safetensors(tmp_path / "ours.safetensors", plans_of(arrays), metadata={"format": "np"})
    safetensors.numpy.save_file({k: a for k, (_, a) in arrays.items()}, tmp_path / "ref.safetensors",
                                metadata={"format": "np"})
    assert (tmp_path / "ours.safetensors").read_bytes() == (tmp_path / "ref.safetensors").read_bytes()


def split(data: bytes) -> tuple[dict, bytes]:
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + n]), data[8 + n:]


def test_several_metadata_entries_sorted_and_otherwise_equal(tmp_path: Path) -> None:
    # safetensors writes its metadata HashMap in random order; ours is sorted, all else identical.
    arrays, metadata = case("all-dtypes"), {"zeta": "1", "alpha": "2", "format": "pt", "mid": "3"}
    write_safetensors(tmp_path / "ours.safetensors", plans_of(arrays), metadata=metadata)
    ours = (tmp_path / "ours.safetensors").read_bytes()
    ref = reference_bytes(arrays, metadata, tmp_path)
    assert len(ours) == len(ref)
    (our_header, our_data), (ref_header, ref_data) = split(ours), split(ref)
    assert our_header == ref_header and our_data == ref_data
    assert list(our_header["__metadata__"]) == sorted(metadata)


@pytest.mark.parametrize("name", CASES, ids=CASES)
def test_safe_open_reads_back(name: str, tmp_path: Path) -> None:
    arrays = case(name)
    write_safetensors(tmp_path / "m.safetensors", plans_of(arrays), metadata={"format": "pt"})
    with safe_open(tmp_path / "m.safetensors", framework="pt") as f:
        assert f.metadata() == {"format": "pt"}
        assert sorted(f.keys()) == sorted(arrays)
        for key, (dtype, array) in arrays.items():
            got = f.get_tensor(key)
            want = to_torch(array, by_name(dtype))
            assert got.dtype == want.dtype and got.shape == want.shape
            assert torch.equal(got.view(torch.int16) if dtype == "bfloat16" else got,
                               want.view(torch.int16) if dtype == "bfloat16" else want)


@pytest.mark.parametrize("pipeline", [0, 3 << 18], ids=["no-pipeline", "three-tensors"])
def test_produced_arrays_alive_stay_within_the_pipeline(tmp_path: Path, monkeypatch, pipeline: int) -> None:
    monkeypatch.setattr(write_pipeline, "PIPELINE_BYTES", pipeline)
    refs: list[weakref.ref] = []
    alive_before: list[int] = []

    def producer(i: int):
        def produce() -> np.ndarray:
            alive_before.append(sum(r() is not None for r in refs))
            array = np.full((256, 256), i, "<f4")  # fresh each time: nothing else holds it (256 KiB)
            refs.append(weakref.ref(array))
            return array
        return produce

    plans = [TensorPlan(f"t{i:02d}", by_name("float32"), (256, 256), producer(i)) for i in range(20)]
    write_safetensors(tmp_path / "m.safetensors", plans)
    # Produced but unwritten arrays, plus the one about to be produced, fit the pipeline's budget.
    assert max(alive_before) <= max(pipeline // (256 << 10) - 1, 0), alive_before
    assert all(r() is None for r in refs)


def test_header_needs_no_data() -> None:
    def boom() -> np.ndarray:
        raise AssertionError("produce() called while building the header")

    header, ordered = build_header([TensorPlan("b", by_name("float16"), (3,), boom),
                                    TensorPlan("a", by_name("float32"), (2, 2), boom)], {"format": "pt"})
    assert len(header) % 8 == 0
    doc, _ = split(header)
    assert doc["a"]["data_offsets"] == [0, 16] and doc["b"]["data_offsets"] == [16, 22]
    assert [p.key for p in ordered] == ["a", "b"]


def test_progress_in_data_order(tmp_path: Path) -> None:
    seen: list[tuple[str, int]] = []
    arrays = case("all-dtypes")
    write_safetensors(tmp_path / "m.safetensors", plans_of(arrays), on_tensor=lambda p, n: seen.append((p.key, n)))
    header, _ = split((tmp_path / "m.safetensors").read_bytes())
    assert [k for k, _ in seen] == list(header)
    assert all(n == arrays[k][1].nbytes for k, n in seen)


BAD = {
    "wrong-shape": (TensorPlan("w", by_name("float32"), (2, 3), lambda: np.zeros((3, 2), "<f4"), "dense/kernel"),
                    Tf2TorchError, r"'w' \(from 'dense/kernel'\): expected shape \(2, 3\), found \(3, 2\)"),
    "wrong-dtype": (TensorPlan("w", by_name("bfloat16"), (2,), lambda: np.zeros(2, "<f4"), "v"),
                    Tf2TorchError, "expected numpy dtype uint16 for bfloat16, found float32"),
    "not-array": (TensorPlan("w", by_name("float32"), (2,), lambda: [0.0, 0.0], "v"), Tf2TorchError, "found list"),
    "string": (TensorPlan("vocab", by_name("string"), (2,), lambda: np.array([b"a", b"b"], object), "v"),
               UnsupportedError, "string tensor"),
    "complex": (TensorPlan("c", by_name("complex64"), (2,), lambda: np.zeros(2, "<c8"), "v"),
                UnsupportedError, "cannot be stored in safetensors"),
    "reserved-key": (TensorPlan("__metadata__", by_name("float32"), (1,), lambda: np.zeros(1, "<f4")),
                     UnsupportedError, "reserved"),
}


@pytest.mark.parametrize("bad", list(BAD), ids=list(BAD))
def test_refuses_bad_plans(bad: str, tmp_path: Path) -> None:
    plan, error, match = BAD[bad]
    with pytest.raises(error, match=match):
        write_safetensors(tmp_path / "m.safetensors", [plan])


def test_duplicate_keys_in_one_sorted_message(tmp_path: Path) -> None:
    f32 = by_name("float32")
    plans = [TensorPlan(k, f32, (1,), lambda: np.zeros(1, "<f4")) for k in ["b", "a", "b", "c", "a"]]
    with pytest.raises(Tf2TorchError, match="found duplicates 'a', 'b'; "):
        write_safetensors(tmp_path / "m.safetensors", plans)


def test_metadata_values_must_be_str(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="metadata"):
        write_safetensors(tmp_path / "m.safetensors", [], metadata={"epoch": 3})  # type: ignore[dict-item]


def test_numpy_scalar_result_is_a_0d_tensor(tmp_path: Path) -> None:
    plan = TensorPlan("s", by_name("float32"), (), lambda: np.float32(2.5))  # what ufuncs return for 0-d input
    write_safetensors(tmp_path / "m.safetensors", [plan])
    with safe_open(tmp_path / "m.safetensors", framework="np") as f:
        got = f.get_tensor("s")
    assert got.shape == () and got == np.float32(2.5)


def test_non_contiguous_result_is_written_correctly(tmp_path: Path) -> None:
    base = np.arange(12, dtype="<f4").reshape(3, 4)
    plan = TensorPlan("t", by_name("float32"), (4, 3), lambda: base.T)
    write_safetensors(tmp_path / "m.safetensors", [plan])
    with safe_open(tmp_path / "m.safetensors", framework="np") as f:
        np.testing.assert_array_equal(f.get_tensor("t"), base.T)


@pytest.mark.skipif(not Path("/proc/self/smaps").exists() or not hasattr(mmap, "MADV_DONTNEED"),
                    reason="needs Linux smaps and madvise")
def test_memmapped_source_pages_are_dropped_behind_the_write(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(write_pipeline, "PART_BYTES", 1 << 20)
    src = tmp_path / "source.bin"
    data = np.random.default_rng(0).standard_normal(8 << 20).astype("<f4")  # 32 MiB
    data.tofile(src)
    rss_during: list[int] = []
    real_write = write_sink.Sink.write_at

    def spy(self, chunk, at):
        real_write(self, chunk, at)
        rss_during.append(mapping_rss(src))

    monkeypatch.setattr(write_sink.Sink, "write_at", spy)
    plan = TensorPlan("w", by_name("float32"), (8 << 20,), lambda: np.memmap(src, "<f4", mode="r", offset=0))
    write_safetensors(tmp_path / "m.safetensors", [plan])
    # Without the hint the mapping's RSS would reach 32 MiB by the last part; with it, a few parts
    # (one being written per worker, plus the kernel's fault-around and readahead).
    print(f"mapping RSS during the write: max {max(rss_during) >> 20} MiB of 32 MiB")
    assert max(rss_during[1:]) <= 8 << 20, rss_during
    with safe_open(tmp_path / "m.safetensors", framework="np") as f:
        np.testing.assert_array_equal(f.get_tensor("w"), data)


MAPPINGS = {
    "anonymous": lambda p: np.zeros(1 << 22, "<f4"),
    "memmap-r+": lambda p: np.memmap(p, "<f4", mode="r+"),
    "memmap-copy-on-write": lambda p: np.memmap(p, "<f4", mode="c"),
}


@pytest.mark.parametrize("kind", list(MAPPINGS), ids=list(MAPPINGS))
def test_pages_never_dropped_where_that_could_lose_data(kind: str, tmp_path: Path, monkeypatch) -> None:
    np.zeros(1 << 22, "<f4").tofile(tmp_path / "src.bin")
    assert Pages.of(MAPPINGS[kind](tmp_path / "src.bin")) is None


def test_failure_mid_file_removes_the_partial_file(tmp_path: Path) -> None:
    def produce(i: int):
        def run() -> np.ndarray:
            if i == 2:
                raise KeyboardInterrupt
            return np.zeros(10, "<f4")
        return run

    plans = [TensorPlan(f"t{i}", by_name("float32"), (10,), produce(i)) for i in range(4)]
    with pytest.raises(KeyboardInterrupt):
        write_safetensors(tmp_path / "m.safetensors", plans)
    assert list(tmp_path.iterdir()) == []


def test_written_with_seek_and_write_where_there_is_no_pwrite(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delattr(write_sink.os, "pwrite")  # as on Windows
    monkeypatch.setattr(write_sink, "WRITE_BYTES", 8)  # many pieces, each at its own offset
    monkeypatch.setattr(write_sink, "RESERVED_WRITE_BYTES", 8)
    arrays = case("all-dtypes")
    write_safetensors(tmp_path / "m.safetensors", plans_of(arrays), metadata={"format": "pt"})
    assert (tmp_path / "m.safetensors").read_bytes() == reference_bytes(arrays, {"format": "pt"}, tmp_path)


def test_disk_full_is_an_output_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno

    def full(fd: int, data, offset: int) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(write_sink.os, "pwrite", full)
    plan = TensorPlan("w", by_name("float32"), (4,), lambda: np.zeros(4, "<f4"))
    with pytest.raises(OutputError, match=r"m.safetensors: cannot write \(No space left on device\); free disk space"):
        write_safetensors(tmp_path / "m.safetensors", [plan])
    assert list(tmp_path.iterdir()) == []


def test_writer_module_never_imports_torch() -> None:
    import ast

    tree = ast.parse(Path(st_writer.__file__).read_text())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    imported |= {(node.module or "").split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    assert "torch" not in imported
