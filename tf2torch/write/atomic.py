"""All-or-nothing outputs: write into a staging name next to the target, rename into place at the end.

Only this module (and the writers it hands a staging path to) touches the output location. A
conversion that fails, is interrupted (Ctrl-C) or is killed never leaves something under the final
name that looks finished: staging names start with ``.`` and contain ``tf2torch-partial``, so a
SIGKILL leftover is visibly partial. Staging is created in the target's own directory so that the
final ``os.replace`` is a rename within one filesystem, which POSIX makes atomic.

Durability: before the rename every staged file and directory is ``fsync``-ed, and the parent
directory after it. Cost: the conversion waits until its data is on disk (mostly overlapped with the
writing itself, since the kernel writes dirty pages back in the background). Benefit: after a power
loss the final name holds complete files or does not exist; without the fsyncs a journaling
filesystem may commit the rename before the data, leaving a finished-looking directory of truncated
files. ``durable=False`` skips them (tests, scratch outputs).
"""

from __future__ import annotations

import errno
import os
import secrets
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..errors import OutputError

PARTIAL_MARK = ".tf2torch-partial-"  # in every staging name: ".{name}.tf2torch-partial-<random>"
OLD_MARK = ".tf2torch-old-"  # a replaced output, between the swap and its removal


@contextmanager
def staged_output(outdir: Path, force: bool = False, *, durable: bool = True) -> Iterator[Path]:
    """Yield an empty staging directory; on success it becomes ``outdir``, on any exception it is removed.

    Args:
        outdir: the output directory. It may not exist yet (parents are created) or be empty.
        force: replace an existing non-empty ``outdir``; the old one is removed only after the new
            one is in place.
        durable: fsync files and directories before the rename (see the module docstring).

    Example:
        >>> import tempfile, pathlib
        >>> out = pathlib.Path(tempfile.mkdtemp()) / "out"
        >>> with staged_output(out, durable=False) as staging:
        ...     _ = (staging / "report.json").write_text("{}")
        >>> sorted(p.name for p in out.iterdir())
        ['report.json']
    """
    shown = Path(outdir)
    final = shown.resolve()  # follow a symlink: replace what it points to, not the link
    if final.exists() and not final.is_dir():
        raise OutputError(f"{shown}: exists and is a file, not a directory; choose another output "
                          "directory or remove the file")
    if final.is_dir():
        _refuse_precious(final, shown)
        if not force and _non_empty(final):
            raise OutputError(f"{shown}: exists and is not empty; pass --force to replace it")
    _make_parent(final.parent, shown)
    staging = _unique(final.parent, f".{final.name}{PARTIAL_MARK}", shown, directory=True)
    try:
        yield staging
        if durable:
            _fsync_tree(staging)
        _swap_in(staging, final, shown, force)
        if durable:
            _fsync_path(final.parent)
    except BaseException:  # KeyboardInterrupt too: a half-written staging dir is useless
        shutil.rmtree(staging, ignore_errors=True)
        raise


@contextmanager
def atomic_write_file(path: Path, force: bool = False, *, durable: bool = True) -> Iterator[Path]:
    """Yield a staging file path next to ``path``; on success it replaces ``path``, else it is deleted.

    Args:
        path: the output file. Its directory is created if missing.
        force: replace an existing file (atomically: readers see the old file or the new one).
        durable: fsync the file before the rename and the directory after it.
    """
    shown = Path(path)
    final = check_file_target(shown, force)
    _make_parent(final.parent, shown)
    staging = _unique(final.parent, f".{final.name}{PARTIAL_MARK}", shown, directory=False)
    try:
        yield staging
        if durable:
            _fsync_path(staging)
        if not force and final.exists():
            raise OutputError(f"{shown}: appeared while writing; pass --force to replace it")
        os.replace(staging, final)
        if durable:
            _fsync_path(final.parent)
    except BaseException:
        staging.unlink(missing_ok=True)
        raise


def check_file_target(path: Path, force: bool = False) -> Path:
    """Refuse an output file path ``atomic_write_file`` would refuse, before any long work; returns it
    resolved (a symlink is followed: what it points to is replaced)."""
    final = Path(path).resolve()
    if final.is_dir():
        raise OutputError(f"{path}: is a directory, expected a file path; give a file name")
    if final.exists() and not force:
        raise OutputError(f"{path}: exists; pass --force to replace it")
    return final


def _swap_in(staging: Path, final: Path, shown: Path, force: bool) -> None:
    try:
        os.replace(staging, final)  # POSIX: succeeds when `final` is absent or an empty directory
        return
    except OSError as exc:
        if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise OutputError(f"{shown}: cannot move the finished output into place ({exc.strerror}); "
                              "check the directory's permissions and retry") from exc
    if not force:
        raise OutputError(f"{shown}: appeared and is not empty; pass --force to replace it")
    aside = _unique(final.parent, f".{final.name}{OLD_MARK}", shown, directory=None)
    os.replace(final, aside)
    try:
        os.replace(staging, final)
    except BaseException:
        os.replace(aside, final)  # put the previous output back: never leave neither in place
        raise
    shutil.rmtree(aside, ignore_errors=True)


def _non_empty(directory: Path) -> bool:
    with os.scandir(directory) as entries:
        return any(True for _ in entries)


def _refuse_precious(final: Path, shown: Path) -> None:
    """The output replaces the whole directory: refuse ones that are surely not a previous output.

    Replacing the current directory would also leave the user's shell in a deleted directory.
    """
    cwd = Path.cwd().resolve()
    if final == Path(final.anchor) or final == Path.home().resolve() or final == cwd or final in cwd.parents:
        raise OutputError(f"{shown}: refusing to replace the filesystem root, the home directory or the "
                          "current directory (or one containing it); give a new directory name, e.g. -o converted")


def _make_parent(parent: Path, shown: Path) -> None:
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"{shown}: cannot create its directory {parent} ({exc.strerror}); "
                          "choose another output location") from exc


def _unique(parent: Path, prefix: str, shown: Path, directory: bool | None) -> Path:
    """A fresh name ``prefix<random>`` in ``parent``: created as a directory or an empty file, or (None)
    only chosen."""
    for _ in range(100):
        path = parent / f"{prefix}{secrets.token_hex(4)}"
        try:
            if directory is None:
                if not os.path.lexists(path):
                    return path
                continue
            if directory:
                os.mkdir(path)  # mode 0o777 minus umask, like any directory the user creates
            else:
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
            return path
        except FileExistsError:
            continue
        except OSError as exc:
            raise OutputError(f"{shown}: cannot create a staging entry in {parent} ({exc.strerror}); "
                              "choose a writable output location") from exc
    raise OutputError(f"{shown}: no free staging name in {parent}; remove old '{prefix}*' entries")


def _fsync_tree(root: Path) -> None:
    """fsync every regular file, then every directory bottom-up (so the names are durable too)."""
    for dirpath, _dirs, files in os.walk(root, topdown=False):
        for name in files:
            path = os.path.join(dirpath, name)
            if not os.path.islink(path):
                _fsync_path(Path(path))
        _fsync_path(Path(dirpath))


def _fsync_path(path: Path) -> None:
    if path.is_dir() and os.name == "nt":
        return  # Windows cannot open a directory for fsync
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
