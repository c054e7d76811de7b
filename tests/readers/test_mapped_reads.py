"""Large tensors are read through their own read-only memory map, CRC-checked chunk by chunk, and
the checked pages are given back; small ones are read into fresh buffers."""

from __future__ import annotations

import mmap
from pathlib import Path

import numpy as np
import pytest

from tf2torch.errors import FormatError, IntegrityError
from tf2torch.pages import Pages
from tf2torch.readers import bundle as bundle_module
from tf2torch.readers.bundle import Bundle

from . import tablebuilder as tb

FLOAT = 1  # DT_FLOAT
ON_LINUX = Path("/proc/self/smaps").exists() and hasattr(mmap, "MADV_DONTNEED")


@pytest.fixture
def prefix(tmp_path: Path) -> tuple[Path, dict[str, np.ndarray]]:
    rng = np.random.default_rng(0)
    tensors = {
        "big": rng.standard_normal((1024, 1536)).astype("<f4"),  # 6 MiB: mapped
        "odd": rng.standard_normal((513, 700)).astype("<f4"),  # 1.4 MB at an offset not page-aligned
        "small": rng.standard_normal((16, 16)).astype("<f4"),  # read into a buffer
    }
    tb.write_bundle(tmp_path / "ckpt", tensors, {name: FLOAT for name in tensors})
    return tmp_path / "ckpt", tensors


def mapping_rss(path: Path) -> int:
    """Resident bytes of this process's mappings of ``path`` (Linux /proc/self/smaps)."""
    total, inside = 0, False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        fields = line.split()
        if fields and "-" in fields[0] and len(fields) >= 5:  # a mapping header line
            inside = fields[-1] == str(path)
        elif inside and fields[0] == "Rss:":
            total += int(fields[1]) * 1024
    return total


@pytest.mark.parametrize("name", ["big", "odd"], ids=["page-aligned", "unaligned-offset"])
def test_large_tensors_are_read_only_views_of_a_mapping(prefix, name: str) -> None:
    path, tensors = prefix
    value = Bundle(path).read(name)
    np.testing.assert_array_equal(value, tensors[name])
    assert not value.flags.writeable
    assert Pages.of(value) is not None  # a read-only shared file mapping: its pages can be dropped


def test_small_tensors_are_fresh_buffers(prefix) -> None:
    path, tensors = prefix
    value = Bundle(path).read("small")
    assert value.flags.writeable and Pages.of(value) is None
    np.testing.assert_array_equal(value, tensors["small"])


def test_corrupt_byte_in_a_mapped_tensor(prefix) -> None:
    path, tensors = prefix
    data = Path(f"{path}.data-00000-of-00001")
    raw = bytearray(data.read_bytes())
    raw[len(raw) // 3] ^= 0x01  # inside "big" (sorted first)
    data.write_bytes(bytes(raw))
    with pytest.raises(IntegrityError, match="'big'"):
        Bundle(path).read("big")
    assert Bundle(path, verify_crc=False).read("big").shape == tensors["big"].shape


def test_truncated_after_listing_is_an_error_not_a_crash(prefix) -> None:
    path, _ = prefix
    opened = Bundle(path)
    data = Path(f"{path}.data-00000-of-00001")
    data.write_bytes(data.read_bytes()[:1 << 20])  # mapping past the end would be SIGBUS on access
    with pytest.raises(FormatError, match="truncated"):
        opened.read("big")


@pytest.mark.skipif(not ON_LINUX, reason="needs Linux smaps and madvise")
def test_checked_pages_are_given_back(prefix, monkeypatch) -> None:
    path, tensors = prefix
    monkeypatch.setattr(bundle_module, "_CRC_CHUNK", 1 << 20)
    value = Bundle(path).read("big")
    data = Path(f"{path}.data-00000-of-00001")
    # Without the release the whole 6 MiB would be resident after the CRC pass; with it, at most the
    # last chunk's pages.
    assert mapping_rss(data) <= (1 << 20) + mmap.PAGESIZE, mapping_rss(data)
    np.testing.assert_array_equal(value, tensors["big"])  # touching it again maps it again
