"""readers/h5load.map_contiguous: HDF5 datasets stored whole are memory-mapped, equal to what libhdf5 reads;
every other storage (chunked, compressed, big-endian, small, truncated) is read by libhdf5 or refused in one line."""

from __future__ import annotations

from functools import partial
from pathlib import Path

import h5py
import numpy as np
import pytest

from tf2torch.dtypes import by_name, from_numpy
from tf2torch.errors import FormatError
from tf2torch.pages import Pages
from tf2torch.readers import h5safe
from tf2torch.readers.h5load import MAP_MIN, load_variable

ROWS = MAP_MIN // (4 * 64) + 3  # float32 rows of 64: just over the mapping threshold


def write(path: Path) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    arrays = {
        "whole": rng.standard_normal((ROWS, 64)).astype("<f4"),
        "small": rng.standard_normal((3, 4)).astype("<f4"),
        "big_endian": rng.standard_normal((ROWS, 64)).astype(">f4"),
        "chunked": rng.standard_normal((ROWS, 64)).astype("<f4"),
        "compressed": rng.standard_normal((ROWS, 64)).astype("<f4"),
        "bf16_bits": rng.integers(0, 2**16, (2 * ROWS, 64), dtype=np.uint16).view("V2"),  # 2-byte items: twice the rows
    }
    with h5py.File(path, "w") as f:
        for name, data in arrays.items():
            kw = {"chunks": (64, 64)} if name == "chunked" else {"compression": "gzip"} if name == "compressed" else {}
            f.create_dataset(name, data=data, **kw)
    return arrays


def load(path: Path, name: str, data: np.ndarray) -> np.ndarray:
    dtype = by_name("bfloat16") if data.dtype.kind == "V" else from_numpy(data.dtype.newbyteorder("<"), name)
    opener = partial(h5safe.open_h5, path, str(path), scan=False)
    return load_variable(opener, name, dtype, data.shape, str(path), mapped_from=path)


@pytest.mark.parametrize("name,mapped", [("whole", True), ("bf16_bits", True), ("small", False),
                                         ("big_endian", False), ("chunked", False), ("compressed", False)])
def test_mapped_exactly_when_the_bytes_lie_in_the_file_as_the_array(tmp_path: Path, name: str, mapped: bool) -> None:
    arrays = write(tmp_path / "w.h5")
    got = load(tmp_path / "w.h5", name, arrays[name])
    want = arrays[name].view("<u2") if name == "bf16_bits" else arrays[name].astype(arrays[name].dtype.newbyteorder("<"))
    assert got.dtype == want.dtype and got.shape == want.shape
    assert np.array_equal(got, want)  # bit for bit, as libhdf5 reads it
    print(f"{name}: {'mapped' if Pages.of(got) is not None else 'read'}")
    assert (Pages.of(got) is not None) == mapped  # a mapping the writer can give back page by page


def test_a_dataset_past_the_end_of_a_truncated_file_is_refused_in_one_line(tmp_path: Path) -> None:
    arrays = write(tmp_path / "w.h5")
    with h5py.File(tmp_path / "w.h5", "r") as f:
        end = f["whole"].id.get_offset() + arrays["whole"].nbytes
    data = (tmp_path / "w.h5").read_bytes()
    # the metadata (at the start, and the superblock's end-of-file address) kept; the last of the data cut off
    (tmp_path / "cut.h5").write_bytes(data[:end - 4096])
    with pytest.raises(FormatError, match=r"cut.h5.*(past the end|truncated)") as caught:
        load(tmp_path / "cut.h5", "whole", arrays["whole"])
    assert "\n" not in str(caught.value)
