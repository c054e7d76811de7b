"""CRC32C: known values, the numpy fallback against the crc32c package, streaming, mask/unmask."""

from __future__ import annotations

import numpy as np
import pytest

from tf2torch.readers import crc

SIZES = [0, 1, 3, 4, 5, 63, 4095, 4096, 4097, 100_003, 1 << 20, (1 << 20) + 7, 3 * (1 << 20) + 1]


def _reference(data: bytes, value: int = 0) -> int:
    """Bit-at-a-time CRC32C: slow, obviously right."""
    value ^= 0xFFFFFFFF
    for byte in data:
        value ^= byte
        for _ in range(8):
            value = (value >> 1) ^ (0x82F63B78 if value & 1 else 0)
    return value ^ 0xFFFFFFFF


@pytest.mark.parametrize(("data", "expected"), [
    (b"", 0), (b"123456789", 0xE3069283), (bytes(32), 0x8A9136AA), (b"\xff" * 32, 0x62A8AB43),
], ids=["empty", "check-string", "zeros32", "ones32"])  # RFC 3720 / crc32c_test.cc vectors
def test_known_values(data, expected):
    assert crc.crc32c(data) == expected
    assert crc.crc32c_numpy(data) == expected


@pytest.mark.parametrize("size", SIZES, ids=[str(s) for s in SIZES])
def test_numpy_fallback_matches(size):
    data = np.random.default_rng(size).integers(0, 256, size, dtype=np.uint8).tobytes()
    expected = _reference(data) if size <= 4097 else crc.crc32c(data)
    assert crc.crc32c_numpy(data) == expected
    assert crc.crc32c_numpy(data, 0x1234ABCD) == (_reference(data, 0x1234ABCD) if size <= 4097 else crc.crc32c(data, 0x1234ABCD))


@pytest.mark.parametrize("impl", [crc.crc32c, crc.crc32c_numpy], ids=["selected", "numpy"])
def test_incremental_over_chunks(impl):
    data = np.random.default_rng(7).integers(0, 256, 200_001, dtype=np.uint8)
    value = 0
    for start in range(0, len(data), 65_537):
        value = impl(data[start:start + 65_537], value)
    assert value == crc.crc32c(data.tobytes())
    stream = crc.Crc32c()
    for part in np.array_split(data, 5):
        stream.update(part)
    assert stream.value == value and stream.masked == crc.mask(value)


def test_accepts_typed_and_unaligned_arrays():
    arr = np.arange(1000, dtype=np.float64)
    assert crc.crc32c_numpy(arr) == crc.crc32c(arr.tobytes())
    odd = np.frombuffer(b"x" + arr.tobytes(), dtype=np.uint8)[1:]  # starts at an odd address
    assert crc.crc32c_numpy(odd) == crc.crc32c(arr.tobytes())


@pytest.mark.parametrize("value", [0, 1, 0xE3069283, 0xFFFFFFFF], ids=["0", "1", "check", "max"])
def test_mask_roundtrip(value):
    assert crc.unmask(crc.mask(value)) == value
    assert crc.mask(value) != value  # masking must change the value (crc32c_test.cc)


def test_mask_known_value():
    # rotate right by 15 then add kMaskDelta, as tensorflow/core/lib/hash/crc32c.h does
    assert crc.mask(0x12345678) == (((0x12345678 >> 15) | (0x12345678 << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def test_backend_falls_back_to_numpy(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "crc32c", None)  # how Python marks a module as not importable
    backend, impl = crc._select()
    assert backend == "numpy" and impl(b"123456789", 0) == 0xE3069283


def test_backend_loaded_without_the_package_init(monkeypatch):
    import importlib.util
    import sys

    if importlib.util.find_spec("crc32c") is None:
        pytest.skip("the crc32c package is not installed")
    monkeypatch.delitem(sys.modules, "crc32c", raising=False)
    backend, impl = crc._select()
    assert backend == "crc32c" and impl(b"123456789", 0) == 0xE3069283
    assert "crc32c" not in sys.modules  # its __init__ (importlib.metadata) was not run


def test_small_inputs_need_no_backend(monkeypatch):
    monkeypatch.setattr(crc, "_selected", None)
    monkeypatch.setattr(crc, "_lazy_left", 100)
    assert crc.crc32c(b"123456789") == 0xE3069283 and crc._selected is None
    assert crc.crc32c(bytes(200)) == _reference(bytes(200)) and crc._selected is not None
