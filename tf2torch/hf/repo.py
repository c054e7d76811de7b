"""What a transformers repository directory holds: its TF weights, the files to copy, what is refused.

Read before anything else (before transformers is imported, before OUT is touched), so that every bad
input fails fast with one line naming the file: a missing or escaping shard, a pickle, a file whose name
the output needs for itself.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath

from ..errors import FormatError, UnsupportedError
from ..readers.jsonsafe import load_json
from . import CONFIG

TF_WEIGHTS = "tf_model.h5"
TF_INDEX = "tf_model.h5.index.json"
# What OUT gets from tf2torch itself; a repo file of one of these names would be silently replaced
OWN_NAMES = ("model.safetensors", "model.safetensors.index.json", "report.json")
SKIP_DIRS = {".git", ".cache"}  # VCS data and huggingface_hub's download bookkeeping, never model files
# Pickles run code when loaded (torch.load, pickle.load): tf2torch never opens one. PyTorch's zip format
# (torch >= 1.6) holds a data.pkl, the legacy format is a bare pickle stream (protocol >= 2 starts 0x80).
PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".pkl", ".pickle")
PICKLE_MAGICS = (b"\x80", b"PK\x03\x04")


@dataclass(frozen=True)
class Repo:
    root: Path
    weights: tuple[Path, ...]  # tf_model.h5, or the shards in index order
    index: Path | None  # tf_model.h5.index.json when sharded
    copies: tuple[PurePosixPath, ...]  # every other file, relative to root, copied unchanged

    @property
    def weights_label(self) -> str:
        return self.index.name if self.index is not None else TF_WEIGHTS


def scan(root: Path) -> Repo:
    """The repository's TF weights and the files to copy; FormatError / UnsupportedError on bad input."""
    files = _files(root)
    pickles = [f for f in files if _is_pickle(root / f)]
    if pickles:
        raise UnsupportedError(
            f"{root / pickles[0]}: a pickle file (torch.save's format or a bare pickle); tf2torch never loads "
            "pickles (loading one can run arbitrary code) nor ships them in its output; move it out of the "
            "repository and convert again (OUT's model.safetensors holds the weights)")
    clash = [f for f in files if f.name in OWN_NAMES or _is_output_shard(f.name)]
    if clash:
        raise UnsupportedError(f"{root / clash[0]}: the output writes a file of this name itself; move it out "
                               "of the repository and convert again")
    if (root / TF_WEIGHTS).is_file():  # transformers' TF loader also tried the single file first
        weights, index = (root / TF_WEIGHTS,), None
    elif (root / TF_INDEX).is_file():
        index = root / TF_INDEX
        weights = shard_files(index)
    else:
        found = ", ".join(sorted(str(f) for f in files)[:6]) or "nothing else"
        raise FormatError(f"{root}: no {TF_WEIGHTS} and no {TF_INDEX} beside {CONFIG} (found {found}); "
                          "download the repository's TensorFlow weights, or pass the .h5 file itself")
    tf_files = {w.name for w in weights} | ({index.name} if index else set())
    copies = tuple(f for f in files if not (len(f.parts) == 1 and (f.name in tf_files or _is_tf_shard(f.name))))
    return Repo(root, weights, index, copies)


def shard_files(index: Path) -> tuple[Path, ...]:
    """The shards an index names, each checked: a plain file name inside the repo, present, non-empty."""
    try:
        text = index.read_bytes()
    except OSError as exc:
        raise FormatError(f"{index}: cannot read ({exc.strerror}); check the file") from None
    data = load_json(text, str(index), "a shard index (weight name -> shard file)")
    weight_map = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(weight_map, dict) or not weight_map or \
            not all(isinstance(v, str) and isinstance(k, str) for k, v in weight_map.items()):
        raise FormatError(f"{index}: expected {{\"weight_map\": {{weight name: shard file}}}}, found something "
                          "else; download the index again")
    names = list(dict.fromkeys(weight_map.values()))  # first-seen order, once each
    for name in names:
        if not _plain_name(name):  # HF writes shards beside the index: anything else could escape the repo
            raise FormatError(f"{index}: names shard {name!r}, a path outside the repository's own folder; "
                              "shard names must be plain file names beside the index (fix or re-download it)")
        shard = index.parent / name
        if not shard.is_file():
            raise FormatError(f"{shard}: missing, named by {index.name}; download every shard of the repository")
        if shard.stat().st_size == 0:
            raise FormatError(f"{shard}: empty, named by {index.name}; the download is incomplete, fetch it again")
    return tuple(index.parent / n for n in names)


def _plain_name(name: str) -> bool:
    if not name or name in (".", "..") or "\x00" in name:
        return False
    # both conventions: a Windows-made index may say "..\\x.h5" or "C:\\x.h5"
    return len(PurePosixPath(name).parts) == 1 and len(PureWindowsPath(name).parts) == 1 \
        and not PurePosixPath(name).is_absolute() and not PureWindowsPath(name).is_absolute()


def _files(root: Path) -> list[PurePosixPath]:
    """Every regular file under root (symlinks followed: a huggingface_hub snapshot is symlinks to blobs)."""
    out = []
    for dirpath, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in sorted(names):
            path = Path(dirpath) / name
            if path.is_file():
                out.append(PurePosixPath(path.relative_to(root).as_posix()))
    return out


def _is_pickle(path: Path) -> bool:
    if path.suffix.lower() not in PICKLE_SUFFIXES:
        return False
    try:
        with path.open("rb") as f:
            head = f.read(4)
    except OSError:
        return False
    return head.startswith(PICKLE_MAGICS)


def _is_tf_shard(name: str) -> bool:
    return name.startswith("tf_model-") and name.endswith(".h5")


def _is_output_shard(name: str) -> bool:
    return name.startswith("model-") and name.endswith(".safetensors")
