"""Options a Hugging Face route does not read are refused by name (exit 2, one line, nothing written), never
silently ignored; the options it reads are not. The check runs before any file is read, so a repository
here is a directory with a ``config.json`` and a checkpoint a prefix that need not exist."""

from __future__ import annotations

import json

import pytest

from tests.hf.conftest import run_cli

# (flag and value, the word of the reason the line must give)
NOT_READ = {
    "model": (("--model", "port.py:build"), "--hf-class"),
    "config": (("--config", "model.json"), "Keras model JSON"),
    "rules": (("--rules", "rules.toml"), "no rules"),
    "format-pt": (("--format", "pt"), "model.safetensors"),
    "ema": (("--ema",), "loaders read"),
    "strict": (("--strict",), "contract is fixed"),
    "allow-missing": (("--allow-missing", "pooler.*"), "contract is fixed"),
    "allow-unexpected": (("--allow-unexpected", "cls/.*"), "contract is fixed"),
    "keep-names": (("--keep-names",), "state_dict keys"),
    "no-transpose": (("--no-transpose",), "layouts"),
    "input-shape": (("--input-shape", "1,7"), "no graph"),
    "tf-padding": (("--tf-padding", "same"), "no graph"),
    "channels-last": (("--channels-last",), "no graph"),
    "flat": (("--flat",), "no graph"),
    "weights-only": (("--weights-only",), "only weights"),
    "graph-output": (("--graph-output", "logits"), "no TF graph"),
    "signature": (("--signature", "serving_default"), "no SavedModel"),
}


@pytest.fixture
def repo(tmp_path):
    folder = tmp_path / "repo"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"architectures": ["TFBertModel"], "model_type": "bert"}))
    return folder


def _flag(args: tuple[str, ...]) -> str:
    return args[0]


@pytest.mark.parametrize("name", sorted(NOT_READ) + ["no-verify-crc"])
def test_repo_refuses_an_option_it_does_not_read(name, repo, tmp_path):
    args, why = NOT_READ.get(name, (("--no-verify-crc",), "no checksums"))
    result = run_cli("convert", repo, "-o", tmp_path / "out", *args)
    print(result.stderr)
    assert result.exit_code == 2, result.output
    line = result.stderr.strip()
    assert len(line.splitlines()) == 1 and line.startswith(f"tf2torch: error: {_flag(args)} does not apply")
    assert "transformers repository" in line and why in line and f"drop {_flag(args)}" in line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", sorted(set(NOT_READ) - {"model"}))  # --model with --hf-config: its own line
def test_original_checkpoint_refuses_an_option_it_does_not_read(name, tmp_path):
    args, why = NOT_READ[name]
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert"}))
    result = run_cli("convert", tmp_path / "model.ckpt", "--hf-config", tmp_path / "config.json",
                     "-o", tmp_path / "out", *args)
    print(result.stderr)
    assert result.exit_code == 2, result.output
    line = result.stderr.strip()
    assert line.startswith(f"tf2torch: error: {_flag(args)} does not apply to an original TF1 checkpoint")
    assert why in line and not (tmp_path / "out").exists()


def test_hf_class_with_model_refuses_model(tmp_path):
    """--hf-class picks the transformers route even for a file: --model would then be dropped unseen."""
    result = run_cli("convert", tmp_path / "tf_model.h5", "--hf-class", "BertModel", "--model", "p.py:build",
                     "-o", tmp_path / "out")
    assert result.exit_code == 2 and "--model does not apply" in result.stderr


def test_suggest_rules_is_refused_for_a_repo(repo):
    result = run_cli("convert", repo, "--suggest-rules")
    print(result.stderr)
    assert result.exit_code == 2 and "--suggest-rules does not apply" in result.stderr
    assert not result.stdout


@pytest.mark.parametrize("args", [("--dtype", "float16"), ("--force",), ("--dry-run",), ("--hf-class", "BertModel")],
                         ids=lambda a: a[0])
def test_options_the_route_reads_pass_the_check(args, repo, tmp_path):
    """Control: the repo has no weights, so the conversion fails, but not on the option."""
    result = run_cli("convert", repo, "-o", tmp_path / "out", *args)
    print(result.stderr)
    assert result.exit_code != 0 and "does not apply" not in result.stderr and "tf_model.h5" in result.stderr
