"""Bad repositories: each is refused with one line naming the file and the fix, a non-zero exit, and
nothing at OUT (not even a staging directory beside it)."""

from __future__ import annotations

import json
import pickle
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.hf.conftest import copy_repo, run_cli


def _config(repo: Path, **changes) -> None:
    path = repo / "config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))


def _index(repo: Path, first_shard: str) -> None:
    path = repo / "tf_model.h5.index.json"
    data = json.loads(path.read_text())
    name = next(iter(data["weight_map"]))
    data["weight_map"][name] = first_shard
    path.write_text(json.dumps(data))


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _torch_pickle(repo: Path) -> None:
    import torch

    torch.save({"w": torch.zeros(2)}, repo / "pytorch_model.bin")  # the zip format, data.pkl inside


# name: (case, damage, what the one line must say)
BAD: dict[str, tuple[str, Callable[[Path], None], tuple[str, ...]]] = {
    "unknown-architecture": ("bert-seqcls", lambda r: _config(r, architectures=["TFNoSuchModelForThings"]),
                             ("config.json", "NoSuchModelForThings", "--hf-class")),
    "no-architectures": ("bert-seqcls", lambda r: _config(r, architectures=None), ("config.json", "--hf-class")),
    "config-not-the-weights": ("bert-seqcls", lambda r: _config(r, intermediate_size=41),
                               ("does config.json belong", "mismatch")),
    "missing-shard": ("bert-mlm-sharded", lambda r: (r / "tf_model-00003-of-00005.h5").unlink(),
                      ("tf_model-00003-of-00005.h5", "missing", "download")),
    "truncated-shard": ("bert-mlm-sharded", lambda r: _truncate(r / "tf_model-00002-of-00005.h5"),
                        ("tf_model-00002-of-00005.h5", "truncated")),
    "truncated-h5": ("gpt2-lm", lambda r: _truncate(r / "tf_model.h5"), ("tf_model.h5", "truncated")),
    "index-escapes-dotdot": ("bert-mlm-sharded", lambda r: _index(r, "../tf_model-00001-of-00005.h5"),
                             ("tf_model.h5.index.json", "outside the repository")),
    "index-escapes-absolute": ("bert-mlm-sharded", lambda r: _index(r, "/etc/hostname"),
                               ("tf_model.h5.index.json", "outside the repository")),
    "pickle-torch": ("gpt2-lm", _torch_pickle, ("pytorch_model.bin", "pickle", "never loads")),
    "pickle-legacy": ("gpt2-lm", lambda r: (r / "training_args.bin").write_bytes(pickle.dumps({"lr": 1.0}, 2)),
                      ("training_args.bin", "pickle")),
    "no-tf-weights": ("vit-imgcls", lambda r: (r / "tf_model.h5").unlink(), ("tf_model.h5", "download")),
    "output-name-taken": ("vit-imgcls", lambda r: (r / "model.safetensors").write_bytes(b"x"),
                          ("model.safetensors", "move it out")),
}


@pytest.mark.tf
@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_repository_is_refused_with_one_line_and_nothing_written(name, tf_repo, tmp_path):
    case, damage, words = BAD[name]
    repo = copy_repo(tf_repo(case), tmp_path)
    damage(repo)
    out = tmp_path / "outputs" / "out"
    result = run_cli("convert", repo, "-o", out)
    assert result.exit_code != 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("tf2torch: error: "), result.stderr
    for word in words:
        assert word in lines[0], f"{word!r} not in {lines[0]}"
    assert not out.exists()
    leftovers = [p.name for p in out.parent.iterdir()] if out.parent.exists() else []
    assert all(p.endswith(".failed-report.json") for p in leftovers), leftovers  # beside OUT, as other modes


@pytest.mark.tf
def test_existing_output_needs_force(tf_repo, tmp_path):
    built = tf_repo("vit-imgcls")
    out = tmp_path / "out"
    out.mkdir()
    (out / "mine.txt").write_text("keep")
    result = run_cli("convert", built.repo, "-o", out)
    assert result.exit_code == 1 and "--force" in result.stderr
    assert (out / "mine.txt").read_text() == "keep"
    assert run_cli("convert", built.repo, "-o", out, "--force", "-q").exit_code == 0
    assert not (out / "mine.txt").exists() and (out / "model.safetensors").is_file()


@pytest.mark.tf
def test_without_transformers_one_line_names_the_extra(tf_repo, tmp_path, monkeypatch):
    built = tf_repo("vit-imgcls")
    monkeypatch.setitem(sys.modules, "transformers", None)  # what `import transformers` sees when absent
    result = run_cli("convert", built.repo, "-o", tmp_path / "out")
    assert result.exit_code == 1
    assert "pip install tf2torch[hf]" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()
