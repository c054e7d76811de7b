"""``tf2torch verify model.ckpt OUT --hf-config config.json``: transformers 4.57's own
``load_tf_weights_in_<model>`` reads the original checkpoint into OUT's class (the reference: no TF class reads
an original's names) and runs against OUT loaded by ``from_pretrained``, per output and hidden state; exit 0
when they match, exit 3 naming the first diverging layer when a tensor of OUT is changed."""

from __future__ import annotations

import json
import os
import shutil

import pytest

from tests.hf.conftest import run_cli
from tests.hf.originals import CASES


def _verify_json(built, out, *args):
    result = run_cli("verify", built.prefix, out, "--hf-config", built.config_file, "--json", *args)
    return result, (json.loads(result.stdout) if result.stdout.strip().startswith("{") else None)


# make test verifies one case per mechanism (plain names, a pretraining head, a second model, stacked biases split,
# parts combined, a computed key, mesh-TF T5, a CNN, CANINE's own layers); TF2TORCH_HF_FULL=1 verifies all of CASES.
QUICK = ("bert-pretraining", "electra-generator", "xlnet-lm", "imagegpt-lm", "roformer-mlm", "t5-v1_1",
         "mobilenet_v2-imgcls", "canine-bare", "gpt2-lm")
VERIFIED = sorted(CASES) if os.environ.get("TF2TORCH_HF_FULL") == "1" else [n for n in sorted(CASES) if n in QUICK]


@pytest.mark.tf
@pytest.mark.parametrize("name", VERIFIED)
def test_verify_original_matches_the_loaders_model(name, original):
    built = original(name)
    result, verdict = _verify_json(built, built.out)
    assert result.exit_code == 0, result.output
    for row in verdict["rows"]:
        print(f"{name}: {row['kind']:<6} {row['name']:<30} max abs {row['max_abs']:.2e}")
    assert verdict["ok"] and verdict["first_diverging"] is None and not verdict["notes"]
    assert CASES[name].loader in verdict["source_kind"]
    outputs = [r for r in verdict["rows"] if r["kind"] == "output"]
    assert outputs and all(r["status"] == "ok" for r in verdict["rows"])
    # one class, the same weights: the same numbers, not merely close ones
    assert all(r["max_abs"] == 0.0 for r in verdict["rows"]), [(r["name"], r["max_abs"]) for r in verdict["rows"]]
    assert [i["name"] for i in verdict["inputs"]] == list(CASES[name].inputs)


@pytest.mark.tf
@pytest.mark.parametrize(("name", "key", "first"), [
    ("bert-bare", "encoder.layer.1.attention.output.dense.weight", "hidden_states[2]"),
    ("imagegpt-lm", "transformer.h.0.attn.c_attn.weight", "hidden_states[1]"),
])
def test_a_changed_tensor_fails_naming_the_first_diverging_layer(name, key, first, original, tmp_path):
    """One block's tensor scaled in OUT: the hidden states before it match, the block's output is the first to
    diverge, the verdict is exit 3 (ImageGPT: a slice of the combined c_attn, the part from k_proj)."""
    from safetensors.numpy import load_file, save_file

    built = original(name)
    out = tmp_path / "pt"
    shutil.copytree(built.out, out)
    tensors = load_file(out / "model.safetensors")
    if name.startswith("imagegpt"):
        tensors[key][:, 32:64] *= 1.01  # the k_proj part only
    else:
        tensors[key] = tensors[key] * 1.01
    save_file(tensors, out / "model.safetensors", metadata={"format": "pt"})
    result, verdict = _verify_json(built, out)
    rows = {r["name"]: r for r in verdict["rows"]}
    print({n: (r["status"], r["max_abs"]) for n, r in rows.items()})
    assert result.exit_code == 3, result.output
    assert not verdict["ok"] and verdict["first_diverging"] == first
    assert rows["hidden_states[0]"]["status"] == "ok"


@pytest.mark.tf
def test_convert_with_verify_runs_it_for_an_original_checkpoint(original, tmp_path):
    built = original("gpt2-lm")
    result = run_cli("convert", built.prefix, "--hf-config", built.config_file, "--hf-class", "GPT2LMHeadModel",
                     "-o", tmp_path / "out", "--verify")
    print(result.output)
    assert result.exit_code == 0 and "MATCH: the outputs agree" in result.output and "hidden_states[2]" in result.output


@pytest.mark.tf
def test_verify_against_another_checkpoint_is_one_line(original):
    """OUT converted from ELECTRA's discriminator, verified with the BERT checkpoint and config: the config's
    family is not OUT's class's, one line, no comparison."""
    result = run_cli("verify", original("bert-bare").prefix, original("electra-discriminator").out, "--hf-config",
                     original("bert-bare").config_file)
    print(result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.exit_code not in (0, 3) and len(lines) == 1 and "bert" in lines[0]


@pytest.mark.tf
def test_a_checkpoint_the_loader_cannot_fill_the_class_from_is_no_reference(original, tmp_path):
    """verify against a checkpoint lacking one part of ImageGPT's c_attn: transformers' loader leaves that slice
    at its NaN, so there is no reference to compare with: one line naming the parameter, no table."""
    import tensorflow as tf

    from tests.hf import originals

    built = original("imagegpt-bare")
    shapes = {k: v for k, v in originals.imagegpt().items() if k != "model/h1/attn/v_proj"}
    originals.write_checkpoint(tf, tmp_path / "model.ckpt", originals.values(shapes, seed=1))
    result = run_cli("verify", tmp_path / "model.ckpt", built.out, "--hf-config", built.config_file)
    print(result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.exit_code == 2 and len(lines) == 1
    assert "left 1 parameter(s)" in lines[0] and "transformer.h.1.attn.c_attn.weight" in lines[0]


@pytest.mark.tf
def test_verify_original_without_tensorflow_names_what_is_missing(original):
    """In the transformers 5 venv (no TensorFlow, no loaders): one line naming both, exit 1."""
    import os
    import subprocess
    from pathlib import Path

    from tests.hf.v5 import require_v5_venv

    python = require_v5_venv()
    built = original("gpt2-bare")
    root = str(Path(__file__).resolve().parents[2])
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "PYTHONPATH": root}
    done = subprocess.run([str(python), "-m", "tf2torch", "verify", str(built.prefix), str(built.out), "--hf-config",
                           str(built.config_file)], capture_output=True, text=True, env=env, timeout=300)
    print(done.stderr)
    line = done.stderr.strip()
    assert done.returncode == 1 and len(line.splitlines()) == 1
    assert "load_tf_weights_in_" in line and "TensorFlow" in line and "transformers<5" in line


@pytest.mark.tf
def test_a_config_that_is_not_the_checkpoints_is_one_line(original, tmp_path):
    """Another intermediate size than the checkpoint's: the loader refuses the shapes; one line, no table."""
    built = original("bert-bare")
    config = tmp_path / "config.json"
    config.write_text(json.dumps({**json.loads(built.config_file.read_text()), "intermediate_size": 41}))
    result = run_cli("verify", built.prefix, built.out, "--hf-config", config)
    print(result.stderr)
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.exit_code == 2 and len(lines) == 1
    assert "load_tf_weights_in_bert cannot read it into BertForPreTraining" in lines[0] and "config" in lines[0]
