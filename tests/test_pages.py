"""``tf2torch.pages``: which arrays may have their pages dropped, and consumers that drop them."""

from __future__ import annotations

import mmap
from pathlib import Path

import numpy as np
import pytest

from tests.readers.test_mapped_reads import ON_LINUX, mapping_rss
from tf2torch.pages import Pages, map_file
from tf2torch.strided import permute

SHAPE = (1024, 2048)  # 8 MiB of float32


@pytest.fixture
def source(tmp_path: Path) -> tuple[Path, np.ndarray]:
    values = np.random.default_rng(0).standard_normal(SHAPE).astype("<f4")
    path = tmp_path / "values.bin"
    path.write_bytes(b"\0" * 100 + values.tobytes())  # an offset that is not page-aligned
    return path, values


def mapped(path: Path, values: np.ndarray) -> np.ndarray:
    with open(path, "rb") as f:
        return map_file(f, 100, values.nbytes).view("<f4").reshape(values.shape)


NOT_RELEASABLE = {
    "anonymous": lambda p: np.zeros(1 << 20, "<f4"),
    "memmap-r+": lambda p: np.memmap(p, "<f4", mode="r+", offset=100, shape=(1 << 20,)),
    "memmap-copy-on-write": lambda p: np.memmap(p, "<f4", mode="c", offset=100, shape=(1 << 20,)),
    "mapped-but-strided": lambda p: np.memmap(p, "<f4", mode="r", offset=100, shape=SHAPE)[:, ::2],
}


@pytest.mark.parametrize("kind", list(NOT_RELEASABLE), ids=list(NOT_RELEASABLE))
def test_never_for_memory_whose_pages_hold_the_only_copy(kind: str, source) -> None:
    assert Pages.of(NOT_RELEASABLE[kind](source[0])) is None


def test_map_file_and_memmap_readonly_are_releasable(source) -> None:
    path, values = source
    array = mapped(path, values)
    assert not array.flags.writeable and Pages.of(array) is not None
    assert Pages.of(np.memmap(path, "<f4", mode="r", offset=100, shape=SHAPE)) is not None
    np.testing.assert_array_equal(array, values)


@pytest.mark.skipif(not ON_LINUX, reason="needs Linux smaps and madvise")
def test_transposing_a_mapped_array_gives_its_pages_back(source) -> None:
    path, values = source
    array = mapped(path, values)
    out = permute(array, (1, 0))
    assert mapping_rss(path) <= 1 << 20, mapping_rss(path)  # was 8 MiB without the release
    np.testing.assert_array_equal(out, values.T)
    np.testing.assert_array_equal(array, values)  # the data is still there: pages map in again


@pytest.mark.skipif(not ON_LINUX, reason="needs Linux smaps and madvise")
def test_release_is_bounded_by_the_array(source) -> None:
    path, values = source
    array = mapped(path, values)
    np.asarray(array).sum()  # touch every page
    pages = Pages.of(array)
    assert pages is not None
    pages.release(4 << 20)
    assert (4 << 20) - mmap.PAGESIZE <= values.nbytes - mapping_rss(path) <= (4 << 20) + mmap.PAGESIZE
    pages.release(1 << 40)
    assert mapping_rss(path) <= mmap.PAGESIZE

