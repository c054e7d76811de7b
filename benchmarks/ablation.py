"""Where the time of ``convert`` to safetensors goes: the same run with parts of the work removed.

    python benchmarks/ablation.py [--rounds 7] [--variants cp,base,no-transpose,...]

Each variant is ``tf2torch convert`` on the bench checkpoint (``make_checkpoint.py``) in its own
process, with one thing patched out; ``cp`` of the data file is the floor. Variants take turns, the
output is deleted and ``sync`` run before each, and the table shows medians and the ratio to ``cp``.
Variants other than ``base`` write wrong or non-durable files: they only measure.

    cp            the floor: copy the data file
    base          tf2torch convert, as shipped
    no-transpose  layout copies skipped (the bands are written uninitialised)
    no-crc        --no-verify-crc
    no-fsync      no fsync and no writeback hints (as cp: nothing waits for the disk)
    lean          no-transpose + no-crc + no-fsync: what is left is start-up and writing
    c-transpose   2-D float32 transposes by an AVX2 C kernel (compiled here with gcc, called via
                  ctypes; skipped without gcc): what a compiled kernel would save
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from make_checkpoint import cache_root, ensure_checkpoint  # noqa: E402

VARIANTS = ["cp", "base", "no-transpose", "no-crc", "no-fsync", "lean", "c-transpose"]

C_KERNEL = r"""
#include <stdint.h>
#include <immintrin.h>
/* dst[i*n + j] = src[j*ld + i] for i < m, j < n (float32): 8x8 AVX2 blocks within 64x64 tiles. */
static void t8(const float *s, int64_t ld, float *d, int64_t n) {
    __m256 r[8], t[8], u[8];
    for (int k = 0; k < 8; k++) r[k] = _mm256_loadu_ps(s + k * ld);
    for (int k = 0; k < 4; k++) {
        t[2 * k] = _mm256_unpacklo_ps(r[2 * k], r[2 * k + 1]);
        t[2 * k + 1] = _mm256_unpackhi_ps(r[2 * k], r[2 * k + 1]);
    }
    for (int k = 0; k < 2; k++) {
        u[4 * k] = _mm256_shuffle_ps(t[4 * k], t[4 * k + 2], 0x44);
        u[4 * k + 1] = _mm256_shuffle_ps(t[4 * k], t[4 * k + 2], 0xEE);
        u[4 * k + 2] = _mm256_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0x44);
        u[4 * k + 3] = _mm256_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0xEE);
    }
    for (int k = 0; k < 4; k++) {
        _mm256_storeu_ps(d + k * n, _mm256_permute2f128_ps(u[k], u[k + 4], 0x20));
        _mm256_storeu_ps(d + (k + 4) * n, _mm256_permute2f128_ps(u[k], u[k + 4], 0x31));
    }
}
void transpose4(const float *src, int64_t ld, float *dst, int64_t m, int64_t n) {
    for (int64_t jj = 0; jj < n; jj += 64)
        for (int64_t ii = 0; ii < m; ii += 64) {
            int64_t je = jj + 64 < n ? jj + 64 : n, ie = ii + 64 < m ? ii + 64 : m, j = jj;
            for (; j + 8 <= je; j += 8) {
                int64_t i = ii;
                for (; i + 8 <= ie; i += 8) t8(src + j * ld + i, ld, dst + i * n + j, n);
                for (; i < ie; i++) for (int64_t q = j; q < j + 8; q++) dst[i * n + q] = src[q * ld + i];
            }
            for (; j < je; j++) for (int64_t i = ii; i < ie; i++) dst[i * n + j] = src[j * ld + i];
        }
}
"""


def patch(variant: str, library: str | None) -> None:
    """In the child: remove the variant's part of the work from tf2torch."""
    from tf2torch.write import atomic, pipeline, safetensors

    if variant in ("no-transpose", "lean"):
        pipeline.copy_into = lambda dst, src: None
    if variant in ("no-fsync", "lean"):
        atomic._fsync_tree = lambda root: None
        atomic._fsync_path = lambda path: None
        safetensors._start_writeback = lambda f, offset, size: None
    if variant == "c-transpose" and library:
        import ctypes

        kernel = ctypes.CDLL(library).transpose4
        kernel.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]
        blocked = pipeline.copy_into

        def copy_into(dst, src):  # a band of a transposed 2-D float32 view: src[i, j] at j*ld + i
            if src.ndim == 2 and src.dtype.str == "<f4" and src.strides[0] == 4 and src.strides[1] % 4 == 0:
                kernel(src.ctypes.data, src.strides[1] // 4, dst.ctypes.data, src.shape[0], src.shape[1])
            else:
                blocked(dst, src)

        pipeline.copy_into = copy_into


def compile_kernel(workdir: Path) -> str | None:
    if shutil.which("gcc") is None:
        return None
    source, library = workdir / "transpose.c", workdir / "libtranspose.so"
    source.write_text(C_KERNEL)
    done = subprocess.run(["gcc", "-O3", "-mavx2", "-shared", "-fPIC", "-o", str(library), str(source)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        return None
    import ctypes

    import numpy as np

    kernel = ctypes.CDLL(str(library)).transpose4
    kernel.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]
    for shape in [(37, 45), (1024, 520)]:  # edges and full tiles: the kernel must equal numpy before timing it
        source = np.random.default_rng(0).standard_normal(shape).astype("<f4")
        band = source.T[3:40]
        out = np.empty(band.shape, band.dtype)
        kernel(band.ctypes.data, band.strides[1] // 4, out.ctypes.data, band.shape[0], band.shape[1])
        if not np.array_equal(out, band):
            raise SystemExit(f"the C transpose kernel is wrong on {shape}")
    return str(library)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--library", help=argparse.SUPPRESS)
    args, rest = parser.parse_known_args()
    if args.child:  # run tf2torch with the variant's patch
        patch(args.child, args.library)
        from tf2torch.cli import run

        sys.argv = ["tf2torch", *rest]
        run()
        return
    prefix = ensure_checkpoint()
    out = cache_root() / "out"
    out.mkdir(parents=True, exist_ok=True)
    variants = args.variants.split(",")
    with tempfile.TemporaryDirectory() as workdir:
        library = compile_kernel(Path(workdir)) if "c-transpose" in variants else None
        if library is None and "c-transpose" in variants:
            print("c-transpose skipped: no gcc, or the kernel did not compile", file=sys.stderr)
            variants.remove("c-transpose")
        times: dict[str, list[float]] = {v: [] for v in variants}
        for _ in range(args.rounds):
            for variant in variants:
                shutil.rmtree(out / "ablation", ignore_errors=True)
                (out / "ablation.data").unlink(missing_ok=True)
                os.sync()
                time.sleep(1.0)
                if variant == "cp":
                    argv = ["cp", f"{prefix}.data-00000-of-00001", str(out / "ablation.data")]
                else:
                    argv = [sys.executable, __file__, "--child", variant, *(["--library", library] if library else []),
                            "convert", str(prefix), "-o", str(out / "ablation"), "-q",
                            *(["--no-verify-crc"] if variant in ("no-crc", "lean") else [])]
                start = time.perf_counter()
                subprocess.run(argv, check=True)
                times[variant].append(time.perf_counter() - start)
        shutil.rmtree(out / "ablation", ignore_errors=True)
        (out / "ablation.data").unlink(missing_ok=True)
    floor = statistics.median(times["cp"]) if "cp" in times else None
    print(f"{'variant':14} {'median s':>9} {'min':>6} {'max':>6}  ratio to cp")
    for variant, runs in times.items():
        median = statistics.median(runs)
        ratio = f"{median / floor:.2f}" if floor else "-"
        print(f"{variant:14} {median:9.2f} {min(runs):6.2f} {max(runs):6.2f}  {ratio}")


if __name__ == "__main__":
    main()
