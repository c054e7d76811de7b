"""``tf2torch verify REPO OUT``: transformers 4.57's TF class on REPO against the PyTorch class on the repo
``convert`` wrote, per output and per hidden state; exit 0 within verify's tolerance, exit 3 naming the first
diverging layer when one tensor of OUT's model.safetensors is changed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from tests.hf.conftest import run_cli
from tests.hf.v5 import require_v5_venv

# (case, the outputs verify must compare, the hidden states it must compare)
PASSING = {
    "bert-seqcls": ({"logits"}, {f"hidden_states[{i}]" for i in range(3)}),
    "t5-cg": ({"logits", "encoder_last_hidden_state"},
              {f"{side}_hidden_states[{i}]" for side in ("encoder", "decoder") for i in range(3)}),
    "vit-imgcls": ({"logits"}, {f"hidden_states[{i}]" for i in range(3)}),
}


def _verify_json(repo, out, *args):
    result = run_cli("verify", repo, out, "--json", *args)
    return result, json.loads(result.stdout)


@pytest.mark.tf
@pytest.mark.parametrize("name", sorted(PASSING))
def test_verify_repo_matches_per_output_and_hidden_state(name, tf_repo, converted):
    built, out = tf_repo(name), converted(name)
    result, verdict = _verify_json(built.repo, out)
    for row in verdict["rows"]:
        print(f"{name}: {row['kind']:<6} {row['name']:<28} max abs {row['max_abs']:.2e} max rel {row['max_rel']:.2e}")
    assert result.exit_code == 0, result.output
    assert verdict["ok"] and verdict["first_diverging"] is None and not verdict["notes"]
    outputs, layers = PASSING[name]
    rows = {r["name"]: r for r in verdict["rows"]}
    assert outputs <= {n for n, r in rows.items() if r["kind"] == "output"}
    assert layers <= {n for n, r in rows.items() if r["kind"] == "layer"}
    assert all(r["status"] == "ok" for r in verdict["rows"])
    assert verdict["atol"] == verdict["rtol"] == 1e-4  # the tolerance every verify uses
    names = [i["name"] for i in verdict["inputs"]]
    assert names == (["input_ids", "decoder_input_ids"] if name == "t5-cg" else
                     ["pixel_values"] if name == "vit-imgcls" else ["input_ids"])


@pytest.mark.tf
def test_a_changed_tensor_fails_naming_the_first_diverging_layer(tf_repo, converted, tmp_path):
    """Layer 1's attention output projection (block index 1 of 2) changed in OUT: the embeddings and block 0
    still match, hidden_states[2] (block 1's output) is the first to diverge, and the logits with it."""
    from safetensors.numpy import load_file, save_file

    built = tf_repo("bert-seqcls")
    out = tmp_path / "pt"
    shutil.copytree(converted("bert-seqcls"), out)
    tensors = load_file(out / "model.safetensors")
    key = "bert.encoder.layer.1.attention.output.dense.weight"
    tensors[key] = tensors[key] * 1.01
    save_file(tensors, out / "model.safetensors", metadata={"format": "pt"})

    result, verdict = _verify_json(built.repo, out)
    rows = {r["name"]: r for r in verdict["rows"]}
    print({n: (r["status"], r["max_abs"]) for n, r in rows.items()})
    assert result.exit_code == 3, result.output
    assert not verdict["ok"] and verdict["first_diverging"] == "hidden_states[2]"
    assert rows["hidden_states[0]"]["status"] == rows["hidden_states[1]"]["status"] == "ok"
    assert rows["logits"]["status"] == "diverged"

    table = run_cli("verify", built.repo, out)
    print(table.stderr)
    assert table.exit_code == 3
    assert "MISMATCH: first diverging layer: 'hidden_states[2]'" in table.stderr.strip().splitlines()[-1]


@pytest.mark.tf
def test_verify_refuses_graph_options_for_a_repo(tf_repo, converted):
    result = run_cli("verify", tf_repo("vit-imgcls").repo, converted("vit-imgcls"), "--input-shape", "1,3,32,32")
    assert result.exit_code == 2 and "--input-shape does not apply to a transformers repository" in result.stderr


@pytest.mark.tf
def test_verify_of_an_original_checkpoint_repo_without_its_config_says_to_pass_it(original):
    built = original("bert-bare")
    result = run_cli("verify", built.prefix, built.out)
    print(result.stderr)
    assert result.exit_code == 2 and "a transformers repository" in result.stderr
    assert "--hf-config" in result.stderr


@pytest.mark.tf
def test_verify_without_tensorflow_names_what_is_missing(tf_repo, converted):
    """In the transformers 5 venv (no TensorFlow, no TF classes): one line naming both, exit 1."""
    python = require_v5_venv()
    built, out = tf_repo("vit-imgcls"), converted("vit-imgcls")
    root = str(__import__("pathlib").Path(__file__).resolve().parents[2])
    env = {**{k: v for k, v in os.environ.items() if k != "PYTHONPATH"}, "PYTHONPATH": root}
    done = subprocess.run([str(python), "-m", "tf2torch", "verify", str(built.repo), str(out)], capture_output=True,
                          text=True, env=env, timeout=300)
    print(done.stderr)
    assert done.returncode == 1
    line = done.stderr.strip()
    assert len(line.splitlines()) == 1 and "TensorFlow cannot be imported" in line and "transformers<5" in line


@pytest.mark.tf
def test_convert_with_verify_runs_verify_repo(tf_repo, tmp_path):
    out = tmp_path / "pt"
    result = run_cli("convert", tf_repo("vit-imgcls").repo, "-o", out, "--verify")
    print(result.output)
    assert result.exit_code == 0 and "MATCH: the outputs agree" in result.output and "hidden_states[2]" in result.output


@pytest.mark.tf
def test_verify_repo_takes_inputs_by_name(tf_repo, converted, tmp_path):
    import numpy as np

    feed = tmp_path / "inputs.npz"
    ids = np.random.default_rng(5).integers(1, 99, (3, 5)).astype(np.int64)
    np.savez(feed, input_ids=ids)
    result, verdict = _verify_json(tf_repo("bert-seqcls").repo, converted("bert-seqcls"), "--inputs", feed)
    assert result.exit_code == 0, result.output
    assert verdict["inputs"] == [{"name": "input_ids", "shape": [3, 5], "tf_shape": [3, 5], "layout": "transformers",
                                  "dtype": "int64", "origin": "given"}]
    assert {r["name"]: r["shape"] for r in verdict["rows"]}["logits"] == [3, 3]
