"""Hardening against libhdf5 itself: a C parser of untrusted files that can loop, over-allocate or hang.

Found by fuzzing (``make fuzz``): a global heap object of size 0 makes libhdf5 loop forever (no Python
signal can stop it), and a forged variable-length size makes it allocate gigabytes before failing. Both
are checked or capped here before libhdf5 reads the file; ``h5safe.open_h5`` applies them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO

from ..errors import FormatError

_GUARD_SLACK = 256 << 20


@contextmanager
def memory_guard(file_size: int) -> Iterator[None]:
    """Cap the address space while libhdf5 lists a file: 256 MiB + 2x the file's size more than now.

    libhdf5 trusts 32-bit sizes it reads (a variable-length string's length) and allocates, and zero-
    fills, that much before finding out the file cannot back it: a few flipped bits cost gigabytes, or
    the process on a small CI runner. Under the cap the allocation fails and h5py raises, which the
    getters turn into FormatError. Listing reads attributes and metadata only (the largest, a model
    config, is part of the file). Used for listing only, which runs before any thread that produces
    tensors exists: the cap is process-wide. Linux only (elsewhere RLIMIT_AS is not kept).
    """
    try:
        import resource

        with open("/proc/self/status") as status:
            vm = next(int(line.split()[1]) << 10 for line in status if line.startswith("VmSize:"))
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, StopIteration, ValueError):
        yield
        return
    cap = vm + _GUARD_SLACK + 2 * file_size
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    keep = soft != resource.RLIM_INFINITY and soft <= cap  # already as tight (an outer guard, ulimit -v)
    if not keep:
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        if not keep:
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


_GCOL = b"GCOL\x01"  # a global heap collection (version 1): vlen strings such as Keras's attributes
_SCAN_CHUNK = 16 << 20


def check_global_heaps(fh: IO[bytes], label: str) -> None:
    """Refuse global heap collections that libhdf5 would parse forever (no Python signal can stop it).

    libhdf5 (H5HG__cache_heap_deserialize, still in 1.14) walks a collection's objects by their sizes;
    a free-space object of size 0, or a size whose alignment wraps to 0, never advances, and zero
    bytes read past the end of a truncated file are such an object. Every place libhdf5 could load a
    collection from starts with the bytes "GCOL" 1, so all of them are walked here first, the same way.
    """
    try:
        fh.seek(0, 2)
        size = fh.tell()
        fh.seek(0)
        head = fh.read(16).ljust(16, b"\x00")  # superblock v0/v1 keep "size of lengths" at 14, v2/v3 at 10
        width = head[14] if head[8] in (0, 1) else head[10]
        pos, tail = 0, b""
        while pos < size:
            fh.seek(pos)
            chunk = fh.read(_SCAN_CHUNK)
            if not chunk:
                break
            buf, base = tail + chunk, pos - len(tail)
            at = buf.find(_GCOL)
            while at >= 0:
                _check_heap(fh, base + at, width, size, label)
                at = buf.find(_GCOL, at + 1)
            tail, pos = buf[-(len(_GCOL) - 1):], pos + len(chunk)
        fh.seek(0)
    except OSError as exc:
        raise FormatError(f"{label}: cannot read the file ({exc.strerror or exc}); check the path") from None


def _check_heap(fh: IO[bytes], offset: int, width: int, file_size: int, label: str) -> None:
    align = (8 + width + 7) // 8 * 8  # H5HG_SIZEOF_HDR == H5HG_SIZEOF_OBJHDR: ALIGN(8 + sizeof_size)
    fh.seek(offset + 8)
    heap_size = int.from_bytes(fh.read(width), "little")
    fh.seek(offset)
    data = fh.read(min(heap_size, file_size - offset))  # bounded by the file, never by the header
    pos = align
    while pos < heap_size and pos + align <= heap_size:  # a shorter tail is free space, then the end
        header = data[pos:pos + align].ljust(align, b"\x00")  # past the end of the file: zeros
        index, obj_size = int.from_bytes(header[:2], "little"), int.from_bytes(header[8:8 + width], "little")
        need = (align + (obj_size + 7) // 8 * 8) % (1 << 64) if index else obj_size  # size_t arithmetic
        if need == 0 or need > heap_size:
            raise FormatError(f"{label}: global heap collection at byte {offset} has an object at byte "
                              f"{offset + pos} of size {obj_size}, which libhdf5 would loop on; the file is "
                              "corrupt or hostile")
        pos += need


# MemoryError: what h5py raises for libhdf5's failed allocations, e.g. under ``memory_guard``.
H5_ERRORS = (OSError, RuntimeError, KeyError, ValueError, TypeError, MemoryError)


def first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
