"""All-or-nothing outputs: failures, Ctrl-C and SIGKILL never leave a finished-looking output."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tf2torch.errors import OutputError
from tf2torch.write.atomic import OLD_MARK, PARTIAL_MARK, atomic_write_file, staged_output

ROOT = Path(__file__).resolve().parents[2]


def entries(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def write_files(staging: Path, names: dict[str, str]) -> None:
    for name, text in names.items():
        (staging / name).write_text(text)


@pytest.mark.parametrize("durable", [True, False], ids=["fsync", "no-fsync"])
def test_success_moves_staging_into_place(tmp_path: Path, durable: bool) -> None:
    out = tmp_path / "out"
    with staged_output(out, durable=durable) as staging:
        assert staging.parent == tmp_path and staging.name.startswith(f".out{PARTIAL_MARK}")
        assert staging.is_dir() and not out.exists()
        write_files(staging, {"model.safetensors": "w", "report.json": "{}"})
        (staging / "sub").mkdir()
        (staging / "sub" / "x").write_text("x")
    assert entries(tmp_path) == ["out"]
    assert entries(out) == ["model.safetensors", "report.json", "sub"]


def test_parents_are_created(tmp_path: Path) -> None:
    with staged_output(tmp_path / "a" / "b" / "out") as staging:
        write_files(staging, {"f": "1"})
    assert (tmp_path / "a" / "b" / "out" / "f").read_text() == "1"


class Boom(Exception):
    pass


@pytest.mark.parametrize("exc", [Boom, KeyboardInterrupt, SystemExit], ids=["exception", "keyboard-interrupt", "system-exit"])
def test_failure_leaves_nothing(tmp_path: Path, exc: type[BaseException]) -> None:
    out = tmp_path / "out"
    with pytest.raises(exc):
        with staged_output(out, force=False) as staging:
            write_files(staging, {"model.safetensors": "half"})
            raise exc()
    assert entries(tmp_path) == []


@pytest.mark.parametrize("exc", [Boom, KeyboardInterrupt], ids=["exception", "keyboard-interrupt"])
def test_failure_with_force_keeps_the_old_output(tmp_path: Path, exc: type[BaseException]) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.txt").write_text("old")
    with pytest.raises(exc):
        with staged_output(out, force=True) as staging:
            write_files(staging, {"new.txt": "new"})
            raise exc()
    assert entries(tmp_path) == ["out"] and entries(out) == ["old.txt"]


def test_non_empty_outdir_refused_without_force(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(OutputError, match=r"out: exists and is not empty; pass --force to replace it"):
        with staged_output(out, force=False):
            raise AssertionError("must not get here")
    assert entries(tmp_path) == ["out"] and (out / "keep.txt").read_text() == "mine"


def test_non_empty_outdir_replaced_with_force(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "old.txt").write_text("old")
    with staged_output(out, force=True) as staging:
        write_files(staging, {"new.txt": "new"})
        assert (out / "old.txt").exists()  # the old output stays until the new one is complete
    assert entries(tmp_path) == ["out"] and entries(out) == ["new.txt"]


def test_empty_outdir_used_without_force(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    with staged_output(tmp_path / "out") as staging:
        write_files(staging, {"f": "1"})
    assert entries(tmp_path / "out") == ["f"]


@pytest.mark.parametrize("force", [False, True], ids=["no-force", "force"])
def test_outdir_that_is_a_file_refused(tmp_path: Path, force: bool) -> None:
    (tmp_path / "out").write_text("a file")
    with pytest.raises(OutputError, match="exists and is a file, not a directory"):
        with staged_output(tmp_path / "out", force=force):
            pass
    assert (tmp_path / "out").read_text() == "a file" and entries(tmp_path) == ["out"]


def test_outdir_appearing_while_writing_is_not_clobbered(tmp_path: Path) -> None:
    out = tmp_path / "out"
    with pytest.raises(OutputError, match="appeared"):
        with staged_output(out) as staging:
            write_files(staging, {"f": "new"})
            out.mkdir()
            (out / "g").write_text("someone else's")
    assert entries(tmp_path) == ["out"] and entries(out) == ["g"]


@pytest.mark.parametrize("outdir", [".", ".."], ids=["cwd", "parent-of-cwd"])
@pytest.mark.parametrize("force", [True, False], ids=["force", "no-force"])
def test_refuses_the_current_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, outdir: str,
                                       force: bool) -> None:
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    with pytest.raises(OutputError, match="refusing to replace"):
        with staged_output(Path(outdir), force=force):
            pass
    assert entries(tmp_path) == ["work"] and entries(tmp_path / "work") == []


def test_symlinked_outdir_replaces_the_target(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "old").write_text("old")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with staged_output(tmp_path / "link", force=True) as staging:
        write_files(staging, {"new": "new"})
    assert (tmp_path / "link").is_symlink() and entries(tmp_path / "link") == ["new"]
    assert not [n for n in entries(tmp_path) if OLD_MARK in n or PARTIAL_MARK in n]


def test_atomic_write_file(tmp_path: Path) -> None:
    target = tmp_path / "model.pt"
    with atomic_write_file(target) as staging:
        assert staging.parent == tmp_path and PARTIAL_MARK in staging.name
        staging.write_bytes(b"one")
    assert target.read_bytes() == b"one" and entries(tmp_path) == ["model.pt"]


def test_atomic_write_file_existing_refused_without_force(tmp_path: Path) -> None:
    (tmp_path / "model.pt").write_bytes(b"old")
    with pytest.raises(OutputError, match="model.pt: exists; pass --force to replace it"):
        with atomic_write_file(tmp_path / "model.pt"):
            pass
    assert (tmp_path / "model.pt").read_bytes() == b"old" and entries(tmp_path) == ["model.pt"]


def test_atomic_write_file_existing_replaced_with_force(tmp_path: Path) -> None:
    (tmp_path / "model.pt").write_bytes(b"old")
    with atomic_write_file(tmp_path / "model.pt", force=True) as staging:
        staging.write_bytes(b"new")
    assert (tmp_path / "model.pt").read_bytes() == b"new" and entries(tmp_path) == ["model.pt"]


@pytest.mark.parametrize("exc", [Boom, KeyboardInterrupt], ids=["exception", "keyboard-interrupt"])
def test_atomic_write_file_failure(tmp_path: Path, exc: type[BaseException]) -> None:
    (tmp_path / "model.pt").write_bytes(b"old")
    with pytest.raises(exc):
        with atomic_write_file(tmp_path / "model.pt", force=True) as staging:
            staging.write_bytes(b"half")
            raise exc()
    assert entries(tmp_path) == ["model.pt"] and (tmp_path / "model.pt").read_bytes() == b"old"


def test_atomic_write_file_onto_a_directory_refused(tmp_path: Path) -> None:
    (tmp_path / "model.pt").mkdir()
    with pytest.raises(OutputError, match="is a directory"):
        with atomic_write_file(tmp_path / "model.pt", force=True):
            pass


# A real interruption: a child process streams 300 MB (30 tensors of 10 MB, zeros made on the fly) and
# is signalled after its third tensor, while 27 are still to come.
CHILD = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    import numpy as np
    from tf2torch.dtypes import by_name
    from tf2torch.write.atomic import atomic_write_file, staged_output
    from tf2torch.plan import TensorPlan
    from tf2torch.write.safetensors import write_safetensors

    def produce():
        time.sleep(0.05)  # keeps the write going long enough to be interrupted mid-way
        return np.zeros(10 << 20, "|u1")

    plans = [TensorPlan(f"t{i:02d}", by_name("uint8"), (10 << 20,), produce) for i in range(30)]
    progress = lambda plan, n: print(plan.key, flush=True)
    mode, target = sys.argv[1], Path(sys.argv[2])
    if mode == "dir":
        with staged_output(target, force=False) as staging:
            write_safetensors(staging / "model.safetensors", plans, on_tensor=progress)
    else:
        with atomic_write_file(target) as staging:
            write_safetensors(staging, plans, on_tensor=progress)
    print("done", flush=True)
""")


@pytest.mark.parametrize("mode", ["dir", "file"], ids=["staged-dir", "atomic-file"])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["sigint", "sigkill"])
def test_real_interruption_mid_write(tmp_path: Path, mode: str, sig: signal.Signals) -> None:
    target = tmp_path / ("out" if mode == "dir" else "model.safetensors")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen([sys.executable, "-c", CHILD, mode, str(target)], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env)
    try:
        lines = [child.stdout.readline().strip() for _ in range(3)]  # type: ignore[union-attr]
        assert lines == ["t00", "t01", "t02"], child.stderr.read()  # type: ignore[union-attr]
        child.send_signal(sig)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    assert "done" not in out
    assert child.returncode == -sig, err  # Python re-raises an unhandled Ctrl-C as SIGINT death
    left = entries(tmp_path)
    assert target.name not in left  # nothing under the final name
    if sig == signal.SIGINT:
        assert left == [], left  # the KeyboardInterrupt unwound through the cleanup
        assert "KeyboardInterrupt" in err
    else:  # SIGKILL runs no cleanup: what remains is visibly partial
        assert left and all(name.startswith(f".{target.name}{PARTIAL_MARK}") for name in left), left
