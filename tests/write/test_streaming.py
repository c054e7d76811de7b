"""Streaming conversion: the same bytes as an in-memory conversion, and memory bounded by one tensor.

Checkpoints are written by real TensorFlow (``benchmarks/make_checkpoint.py``, BERT-like names).
The reference reads them with TensorFlow's own reader, transposes with numpy and saves with
``safetensors.torch.save_file``: nothing of tf2torch's data path (mapped reads, CRC, tiled transposes,
the writer threads) is shared with it, only the mapping decisions (keys, which layout).
"""

from __future__ import annotations

import importlib.util
import json
import os
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import require_tf
from tf2torch import api
from tf2torch.write import pipeline
from tf2torch.write.safetensors import write_safetensors

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("make_checkpoint", ROOT / "benchmarks" / "make_checkpoint.py")
make_checkpoint = importlib.util.module_from_spec(_spec)  # type: ignore[arg-type]
_spec.loader.exec_module(make_checkpoint)  # type: ignore[union-attr]

pytestmark = pytest.mark.tf

# A few MB, with tensors on both sides of the reader's mapping threshold (1 MiB): 2 MB embeddings
# (kept as they are) and 1 MiB kernels (transposed through the staged 2-D path).
SMALL = {"layers": 2, "hidden": 128, "intermediate": 2048, "vocab": 4000, "positions": 64}
# ~230 MB; the largest tensor is a 42 MB (1280 x 8192) kernel that is transposed, the worst case.
MEDIUM = {"layers": 2, "hidden": 1280, "intermediate": 8192, "vocab": 2000, "positions": 64}
SLACK = 32 << 20  # interpreter, allocator and staging buffers: far below a second copy of anything


def write(prefix: Path, params: dict[str, int]) -> Path:
    require_tf()
    return make_checkpoint.write_checkpoint(prefix, **params)


@pytest.fixture(scope="module")
def small(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write(tmp_path_factory.mktemp("small") / "model.ckpt", SMALL)


@pytest.fixture(scope="module")
def medium(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write(tmp_path_factory.mktemp("medium") / "model.ckpt", MEDIUM)


def split(data: bytes) -> tuple[dict, bytes]:
    n = struct.unpack("<Q", data[:8])[0]
    return json.loads(data[8:8 + n]), data[8 + n:]


def reference_state(prefix: Path, report) -> dict:
    """The state_dict built in memory: TF's reader, numpy transposes, torch tensors."""
    import tensorflow as tf
    import torch

    reader = tf.train.load_checkpoint(str(prefix))
    state = {}
    for entry in report.entries:
        if entry.status != "mapped":
            continue
        value = reader.get_tensor(entry.source)
        if entry.layout == "(in, out) -> (out, in)":
            value = np.ascontiguousarray(value.T)
        else:
            assert entry.layout == "unchanged", entry.layout  # the only layouts of a BERT checkpoint
        state[entry.key] = torch.from_numpy(value)
    return state


def test_converted_file_equals_in_memory_conversion(small: Path, tmp_path: Path) -> None:
    from safetensors.torch import save_file

    result = api.convert(small, tmp_path / "out")
    ours = (tmp_path / "out" / "model.safetensors").read_bytes()
    header, data = split(ours)
    metadata = header.pop("__metadata__")
    state = reference_state(small, result.report)
    assert len(state) == len(header) == 5 + 16 * SMALL["layers"] + 9  # every weight, global_step skipped
    save_file(state, tmp_path / "ref.safetensors", metadata=metadata)
    ref_header, ref_data = split((tmp_path / "ref.safetensors").read_bytes())
    ref_header.pop("__metadata__")
    assert header == ref_header  # same keys, dtypes, shapes and offsets
    assert data == ref_data  # every tensor byte
    assert len(ours) == (tmp_path / "ref.safetensors").stat().st_size


def test_pt_file_holds_what_tensorflow_reads(small: Path, tmp_path: Path) -> None:
    import torch

    result = api.convert(small, tmp_path / "out", weights_format="pt")
    got = torch.load(tmp_path / "out" / "model.pt", weights_only=True)
    want = reference_state(small, result.report)
    assert list(got) == [p.key for p in result.plans] and sorted(got) == sorted(want)
    for key, tensor in want.items():
        assert got[key].dtype == tensor.dtype and torch.equal(got[key], tensor), key


@pytest.mark.parametrize("buffers,band", [(1, 64 << 10), (3, 1 << 20)], ids=["one-small-buffer", "three-buffers"])
def test_stream_is_byte_identical_to_save_file(small: Path, tmp_path: Path, monkeypatch, buffers: int,
                                                band: int) -> None:
    from safetensors.torch import save_file

    monkeypatch.setattr(pipeline, "BUFFERS", buffers)
    monkeypatch.setattr(pipeline, "BAND_BYTES", band)
    monkeypatch.setattr(pipeline, "PART_BYTES", 1 << 20)  # the 2 MB embeddings go in parts
    monkeypatch.setattr(pipeline, "PIPELINE_BYTES", 3 << 20)  # several tensors in flight, several waits
    result = api.convert(small, None, dry_run=True)
    write_safetensors(tmp_path / "ours.safetensors", result.plans, metadata={"format": "pt"})
    save_file(reference_state(small, result.report), tmp_path / "ref.safetensors", metadata={"format": "pt"})
    assert (tmp_path / "ours.safetensors").read_bytes() == (tmp_path / "ref.safetensors").read_bytes()


CHILD = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    import numpy as np
    from tf2torch import api
    import tf2torch.write.output, tf2torch.write.safetensors, tf2torch.map.plan  # imported before measuring
    if sys.argv[3] == "pt":
        import torch, tf2torch.write.torch_pt

    def status(field: str) -> int:
        line = next(l for l in Path("/proc/self/status").read_text().splitlines() if l.startswith(field))
        return int(line.split()[1]) * 1024

    # Peak RSS of this process image: VmHWM. (getrusage's ru_maxrss would also count the parent's RSS
    # at the time of the fork: Linux carries it over exec, and pytest with TensorFlow loaded is big.)
    spec = api.read(sys.argv[1])
    base = status("VmRSS:")
    api.convert(sys.argv[1], sys.argv[2], weights_format=sys.argv[3])
    peak = max(status("VmHWM:"), base)
    largest = max(v.nbytes for v in spec.variables)
    total = sum(v.nbytes for v in spec.variables)
    print(json.dumps({"growth": peak - base, "largest": largest, "total": total}))
""")


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize("weights", ["safetensors", "pt"])
def test_peak_memory_is_about_one_tensor(medium: Path, tmp_path: Path, weights: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", CHILD, str(medium), str(tmp_path / "out"), weights], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    assert got["largest"] > 40e6 and got["total"] > 200e6  # the checkpoint is what the test needs
    # Started but unwritten tensors stay within the pipeline's budget (or are one larger tensor);
    # the mapped source and the transposed copy are never both resident in full.
    limit = max(got["largest"], pipeline.PIPELINE_BYTES) + got["largest"] // 4 + SLACK
    print(f"{weights}: peak RSS grew {got['growth'] / 2**20:.0f} MiB converting {got['total'] / 2**20:.0f} MiB "
          f"(largest tensor {got['largest'] / 2**20:.0f} MiB, limit {limit / 2**20:.0f} MiB)")
    assert got["growth"] < limit, f"{got['growth'] / 2**20:.0f} MiB grown, limit {limit / 2**20:.0f} MiB"
    assert got["growth"] < got["total"] / 2
