"""The HDF5 gatekeepers: hostile and odd files, built with h5py in the Keras legacy layout."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

from tf2torch.errors import FormatError, Tf2TorchError, UnsupportedError
from tf2torch.readers import h5attrs, h5safe
from tf2torch.readers.keras_h5 import read_keras_h5

KERNEL = np.arange(12, dtype="<f4").reshape(3, 4)
BIAS = np.array([1.5, -2.0, 0.25, 8.0], dtype="<f4")


def legacy_file(path: Path, kernel: bool = True) -> Path:
    """A Keras 2 ``save_weights("x.h5")`` file with one Dense layer (optionally without its kernel)."""
    with h5py.File(path, "w") as f:
        f.attrs["keras_version"] = "2.21.0"
        f.attrs["backend"] = "tensorflow"
        f.attrs["layer_names"] = [b"dense"]
        g = f.create_group("dense")
        g.attrs["weight_names"] = [b"dense/kernel:0", b"dense/bias:0"]
        if kernel:
            g["dense/kernel:0"] = KERNEL
        g["dense/bias:0"] = BIAS
    return path


def one_line_error(exc_info: pytest.ExceptionInfo[Tf2TorchError], path: Path) -> str:
    message = str(exc_info.value)
    assert "\n" not in message and str(path) in message, message
    return message


def read_all(path: Path) -> list[np.ndarray]:
    return [v.read() for v in read_keras_h5(path)]


def test_plain_legacy_file_reads_exactly(tmp_path: Path) -> None:
    spec = read_keras_h5(legacy_file(tmp_path / "w.h5"))
    assert spec.names() == ["dense/dense/kernel:0", "dense/dense/bias:0"]  # the h5 paths
    assert [v.tf_name for v in spec] == ["dense/kernel", "dense/bias"]
    kernel, bias = read_all(spec.path)
    assert kernel.tobytes() == KERNEL.tobytes() and kernel.dtype == KERNEL.dtype and kernel.shape == (3, 4)
    assert bias.tobytes() == BIAS.tobytes()


def test_text_file_named_h5(tmp_path: Path) -> None:
    path = tmp_path / "model.h5"
    path.write_text("this is not HDF5\n")
    with pytest.raises(FormatError) as exc:
        read_keras_h5(path)
    assert "expected an HDF5 file" in one_line_error(exc, path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FormatError) as exc:
        read_keras_h5(tmp_path / "absent.h5")
    one_line_error(exc, tmp_path / "absent.h5")


@pytest.mark.parametrize("keep", [0.3, 0.6, 0.9], ids=["30pct", "60pct", "90pct"])
def test_truncated_file(tmp_path: Path, keep: float) -> None:
    path = tmp_path / "t.h5"
    with h5py.File(path, "w") as f:
        f.attrs["layer_names"] = [b"dense"]
        g = f.create_group("dense")
        g.attrs["weight_names"] = [b"dense/kernel:0"]
        g["dense/kernel:0"] = np.ones((200, 200), dtype="<f4")
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])
    with pytest.raises(FormatError) as exc:
        read_all(path)  # truncation shows either when opening or when reading the tensor
    one_line_error(exc, path)


def test_external_link_where_a_weight_should_be(tmp_path: Path) -> None:
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f["kernel"] = KERNEL
    path = legacy_file(tmp_path / "w.h5", kernel=False)
    with h5py.File(path, "a") as f:
        f["dense/dense/kernel:0"] = h5py.ExternalLink(str(other), "kernel")
    with pytest.raises(FormatError) as exc:
        read_keras_h5(path)
    assert "ExternalLink" in one_line_error(exc, path)


def test_soft_link_is_refused(tmp_path: Path) -> None:
    path = legacy_file(tmp_path / "w.h5", kernel=False)
    with h5py.File(path, "a") as f:
        f["dense/dense/kernel:0"] = h5py.SoftLink("/dense/dense/bias:0")
    with pytest.raises(FormatError) as exc:
        read_keras_h5(path)
    assert "SoftLink" in one_line_error(exc, path)


def test_virtual_dataset_where_a_weight_should_be(tmp_path: Path) -> None:
    source = tmp_path / "source.h5"
    with h5py.File(source, "w") as f:
        f["kernel"] = KERNEL
    path = legacy_file(tmp_path / "w.h5", kernel=False)
    layout = h5py.VirtualLayout(shape=KERNEL.shape, dtype=KERNEL.dtype)
    layout[:] = h5py.VirtualSource(str(source), "kernel", shape=KERNEL.shape)
    with h5py.File(path, "a") as f:
        f["dense/dense"].create_virtual_dataset("kernel:0", layout)
    with pytest.raises(FormatError) as exc:
        read_keras_h5(path)
    assert "virtual" in one_line_error(exc, path)


def test_dataset_with_external_storage(tmp_path: Path) -> None:
    raw = tmp_path / "kernel.bin"
    raw.write_bytes(KERNEL.tobytes())
    path = legacy_file(tmp_path / "w.h5", kernel=False)
    with h5py.File(path, "a") as f:
        f["dense/dense"].create_dataset(
            "kernel:0", shape=KERNEL.shape, dtype="<f4", external=[(str(raw), 0, KERNEL.nbytes)]
        )
    with pytest.raises(FormatError) as exc:
        read_keras_h5(path)
    assert "external" in one_line_error(exc, path)


def test_shape_larger_than_the_file(tmp_path: Path) -> None:
    path = legacy_file(tmp_path / "w.h5", kernel=False)
    with h5py.File(path, "a") as f:  # chunked, never written: declares 4 TB, stores nothing
        f["dense/dense"].create_dataset("kernel:0", shape=(1 << 20, 1 << 20), dtype="<f4", chunks=(16, 16))
    with pytest.raises(FormatError) as exc:
        read_keras_h5(path)
    assert "declares shape" in one_line_error(exc, path)


def test_unknown_filter_plugin_is_refused(tmp_path: Path) -> None:
    path = legacy_file(tmp_path / "w.h5", kernel=False)
    with h5py.File(path, "a") as f:
        f["dense/dense"].create_dataset("kernel:0", data=KERNEL, compression=32099, allow_unknown_filter=True)
    with pytest.raises(FormatError) as exc:
        read_keras_h5(path)
    assert "filter 32099" in one_line_error(exc, path)


def test_parent_path_component_is_refused(tmp_path: Path) -> None:
    path = legacy_file(tmp_path / "w.h5")
    with h5py.File(path, "a") as f:
        f["dense"].attrs["weight_names"] = [b"../dense/dense/kernel:0"]
    with pytest.raises(FormatError) as exc:
        read_keras_h5(path)
    assert "'..'" in one_line_error(exc, path)


def test_missing_weight_dataset(tmp_path: Path) -> None:
    path = legacy_file(tmp_path / "w.h5", kernel=False)
    with pytest.raises(FormatError) as exc:
        read_keras_h5(path)
    assert "dense/dense/kernel:0" in one_line_error(exc, path)


def test_hdf5_without_keras_structure(tmp_path: Path) -> None:
    path = tmp_path / "plain.h5"
    with h5py.File(path, "w") as f:
        f["data"] = KERNEL
    with pytest.raises(FormatError) as exc:
        read_keras_h5(path)
    assert "expected a Keras HDF5 file" in one_line_error(exc, path)


def test_chunked_attributes_are_joined(tmp_path: Path) -> None:
    # What Keras writes when a name list exceeds the 64 KB object-header limit: fixed-length
    # byte-string chunks name0, name1, ... and no unsuffixed attribute.
    path = tmp_path / "w.h5"
    with h5py.File(path, "w") as f:
        f.attrs["layer_names0"] = np.array([b"a"], dtype="S1")
        f.attrs["layer_names1"] = np.array([b"dense"], dtype="S5")
        f.create_group("a").attrs["weight_names"] = np.array([], dtype="float64")
        g = f.create_group("dense")
        g.attrs["weight_names0"] = np.array([b"dense/kernel:0"], dtype="S14")
        g.attrs["weight_names1"] = np.array([b"dense/bias:0"], dtype="S12")
        g["dense/kernel:0"] = KERNEL
        g["dense/bias:0"] = BIAS
    with h5py.File(path, "r") as f:
        assert h5attrs.read_attr_list(f, "layer_names", "t") == ["a", "dense"]
        assert h5attrs.read_attr_list(f["a"], "weight_names", "t") == []
    assert read_keras_h5(path).names() == ["dense/dense/kernel:0", "dense/dense/bias:0"]


@pytest.mark.parametrize(
    "value", [b"2.21.0", "2.21.0", np.bytes_(b"2.21.0")], ids=["bytes", "str", "np-bytes"]
)
def test_text_attribute_bytes_or_str(tmp_path: Path, value: object) -> None:
    path = tmp_path / "a.h5"
    with h5py.File(path, "w") as f:
        f.attrs["keras_version"] = value
    with h5py.File(path, "r") as f:
        assert h5attrs.read_attr_text(f, "keras_version", "t") == "2.21.0"
        assert h5attrs.read_attr_text(f, "absent", "t") is None


def test_non_string_list_attribute(tmp_path: Path) -> None:
    path = tmp_path / "a.h5"
    with h5py.File(path, "w") as f:
        f.attrs["layer_names"] = np.array([1, 2, 3])
    with h5py.File(path, "r") as f, pytest.raises(FormatError):
        h5attrs.read_attr_list(f, "layer_names", "t")


@pytest.mark.parametrize("tagged", [True, False], ids=["keras3-weights-h5", "keras3-legacy-h5"])
def test_bfloat16_opaque_reads_raw_bits(tmp_path: Path, tagged: bool) -> None:
    bits = np.array([0x3F80, 0xC000, 0x7FC1], dtype="<u2")  # 1.0, -2.0 and a NaN payload
    path = tmp_path / "bf.h5"
    with h5py.File(path, "w") as f:
        ds = f.create_dataset("x", data=bits.view("V2"))
        if tagged:
            ds.attrs["dtype"] = "bfloat16"
    with h5py.File(path, "r") as f:
        ds = h5safe.get_dataset(f, "x", "t")
        dtype = h5safe.dataset_dtype(ds, "t")
        out = h5safe.read_dataset(ds, dtype, "t")
    assert dtype.name == "bfloat16" and out.dtype == np.dtype("<u2") and out.tobytes() == bits.tobytes()


def test_big_endian_dataset_reads_as_little_endian(tmp_path: Path) -> None:
    path = tmp_path / "be.h5"
    with h5py.File(path, "w") as f:
        f["x"] = KERNEL.astype(">f4")
    with h5py.File(path, "r") as f:
        ds = h5safe.get_dataset(f, "x", "t")
        out = h5safe.read_dataset(ds, h5safe.dataset_dtype(ds, "t"), "t")
    assert out.dtype == np.dtype("<f4") and out.tobytes() == KERNEL.tobytes()


def test_string_dataset_is_unsupported(tmp_path: Path) -> None:
    path = tmp_path / "s.h5"
    with h5py.File(path, "w") as f:
        f["x"] = np.array([b"a", b"b"])
    with h5py.File(path, "r") as f, pytest.raises(UnsupportedError):
        h5safe.dataset_dtype(h5safe.get_dataset(f, "x", "t"), "t")


def test_file_changed_after_listing(tmp_path: Path) -> None:
    spec = read_keras_h5(legacy_file(tmp_path / "w.h5"))
    with h5py.File(spec.path, "a") as f:
        f.attrs["touched"] = "x" * 100
    with pytest.raises(FormatError) as exc:
        spec.variables[0].read()
    assert "changed since it was listed" in one_line_error(exc, spec.path)


def test_reading_while_another_handle_is_open(tmp_path: Path) -> None:
    # Loaders go through Python file objects, so a caller's own h5py handle never clashes.
    path = legacy_file(tmp_path / "w.h5")
    spec = read_keras_h5(path)
    with h5py.File(path, "r"):
        assert spec.variables[0].read().tobytes() == KERNEL.tobytes()
