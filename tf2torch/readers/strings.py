"""The on-disk layout of ``DT_STRING`` tensors in a bundle (WriteStringTensor / ReadStringTensor in
tensorflow/core/util/tensor_bundle/tensor_bundle.cc)::

    [varint64 len_0] ... [varint64 len_n-1] [fixed32 masked CRC32C of the lengths] [bytes_0] ... [bytes_n-1]

The length checksum is not over the varint bytes: each length is fed to CRC32C as a little-endian
uint32 (or uint64 when it exceeds 2**32 - 1, a later extension). The entry's CRC32C continues from
there over the four stored checksum bytes and then over all string bytes.
"""

from __future__ import annotations

import numpy as np

from ..errors import FormatError, IntegrityError
from .crc import crc32c, mask, unmask
from .proto import read_varint

_FIX = "re-save the checkpoint, or restore its files from a backup"


def _lengths_crc(lengths: list[int]) -> int:
    if all(n <= 0xFFFFFFFF for n in lengths):
        return crc32c(np.asarray(lengths, dtype="<u4").tobytes())
    raw = b"".join(n.to_bytes(4 if n <= 0xFFFFFFFF else 8, "little") for n in lengths)
    return crc32c(raw)


def decode_string_tensor(buf: np.ndarray, count: int, verify_crc: bool, where: str,
                         expected_crc: int | None = None) -> np.ndarray:
    """``count`` byte strings from the entry bytes ``buf``, as a 1-D object array of ``bytes``.

    With ``verify_crc`` both the length checksum and (when given) the entry's unmasked CRC32C
    ``expected_crc`` are checked.
    """
    size = len(buf)
    if size == 0 and count == 0:
        return np.empty(0, dtype=object)
    # Every length takes at least one byte, and the checksum four: rejects forged element counts
    # before anything of that size is allocated.
    if count + 4 > size:
        raise FormatError(f"{where}: {count} strings need at least {count + 4} bytes, the entry has {size}; {_FIX}")
    out = np.empty(count, dtype=object)
    data = buf.tobytes()
    lengths, pos = [], 0
    for _ in range(count):
        n, pos = read_varint(data, pos, where)
        lengths.append(n)
    stored_bytes = data[pos:pos + 4]
    if len(stored_bytes) < 4 or sum(lengths) != size - pos - 4:
        raise FormatError(f"{where}: string lengths add up to {sum(lengths)} bytes, the entry holds "
                          f"{max(size - pos - 4, 0)} after them; {_FIX}")
    crc = _lengths_crc(lengths)
    if verify_crc and unmask(int.from_bytes(stored_bytes, "little")) != crc:
        raise IntegrityError(f"{where}: string length checksum: expected {mask(crc):#010x} (masked), "
                             f"stored {int.from_bytes(stored_bytes, 'little'):#010x} (data corrupt); {_FIX}")
    pos += 4
    for i, n in enumerate(lengths):
        out[i] = data[pos:pos + n]
        pos += n
    if verify_crc and expected_crc is not None:
        actual = crc32c(data[len(data) - sum(lengths):], crc32c(stored_bytes, crc))
        if actual != expected_crc:
            raise IntegrityError(f"{where}: expected CRC32C {expected_crc:#010x}, computed {actual:#010x} "
                                 f"over {size} bytes (data corrupt); {_FIX}")
    return out
