"""A transformers repo with TF weights in, one with PyTorch weights out: ``tf2torch convert REPO -o OUT``,
then ``from_pretrained(OUT)`` in transformers 4.57's PyTorch classes must load every key (nothing missing,
unexpected or mismatched) and compute TensorFlow's logits (``tests.support.numerics``: 1e-6, or 4x the
PyTorch model's own float64 drift).
"""

from __future__ import annotations

import json

import pytest
import torch
from safetensors import safe_open

from tests.hf.conftest import CASES, run_cli
from tests.support.numerics import check, float64_drift


class Logits(torch.nn.Module):
    """The model called by keyword (positional order differs between classes), returning its logits;
    a module so that ``float64_drift`` can copy it and cast it to float64."""

    def __init__(self, model: torch.nn.Module, names: tuple[str, ...]) -> None:
        super().__init__()
        self.model, self.names = model, names

    def forward(self, *xs: torch.Tensor) -> torch.Tensor:
        return self.model(**dict(zip(self.names, xs))).logits


def load_and_check(out, inputs, expected, label: str) -> None:
    import transformers

    architecture = json.loads((out / "config.json").read_text())["architectures"][0]
    model, info = getattr(transformers, architecture).from_pretrained(out, output_loading_info=True)
    problems = {k: v for k, v in info.items() if v and k != "error_msgs"} | \
        ({"error_msgs": info["error_msgs"]} if info.get("error_msgs") else {})
    assert not problems, f"{label}: from_pretrained reports {problems}"
    wrapped = Logits(model.eval(), tuple(inputs))
    feed = [torch.from_numpy(v) for v in inputs.values()]
    with torch.no_grad():
        actual = wrapped(*feed)
    check(actual, expected, label, float64_drift(wrapped, feed))


@pytest.mark.tf
@pytest.mark.parametrize("name", sorted(CASES))
def test_repo_in_repo_out_loads_and_computes_tf_numbers(name, tf_repo, converted):
    built, out = tf_repo(name), converted(name)
    load_and_check(out, built.inputs, built.expected, f"{name}: TF repo -> tf2torch -> from_pretrained (4.57)")
    config = json.loads((out / "config.json").read_text())
    assert not config["architectures"][0].startswith("TF")
    assert config["dtype"] == config["torch_dtype"] == "float32"
    report = json.loads((out / "report.json").read_text())
    assert report["counts"]["unexpected"] == report["counts"]["mismatched"] == 0
    assert all(e["allowed"] for e in report["entries"] if e["status"] == "missing")
    card = (out / "README.md").read_text()
    assert "by tf2torch 0.1.0" in card.splitlines()[-1]
    with safe_open(str(next(out.glob("model*.safetensors"))), "pt") as f:
        assert f.metadata() == {"format": "pt"}
    copied = {p.name for p in built.repo.iterdir()} - {"config.json"}
    assert {n for n in copied if not n.startswith("tf_model")} <= {p.name for p in out.iterdir()}


@pytest.mark.tf
def test_tied_weights_are_written_once(converted):
    """GPT-2's lm_head is its wte, BART's lm_head and both embed_tokens are model.shared: only the key
    transformers ties the others to is in the file, as save_pretrained writes it."""
    with safe_open(str(converted("gpt2-lm") / "model.safetensors"), "pt") as f:
        assert "transformer.wte.weight" in f.keys() and "lm_head.weight" not in f.keys()
    with safe_open(str(converted("bart-cg") / "model.safetensors"), "pt") as f:
        keys = set(f.keys())
    assert "model.shared.weight" in keys and "final_logits_bias" in keys
    assert not keys & {"lm_head.weight", "model.encoder.embed_tokens.weight", "model.decoder.embed_tokens.weight"}


@pytest.mark.tf
def test_sharded_output_above_the_shard_size(tf_repo, tmp_path, monkeypatch):
    """Above the threshold the weights are split as save_pretrained splits them, with an index; the
    sharded input (tf_model-0000i-of-00005.h5) is read through its index."""
    from tf2torch.hf import write

    built = tf_repo("bert-mlm-sharded")
    assert (built.repo / "tf_model.h5.index.json").is_file() and not (built.repo / "tf_model.h5").exists()
    monkeypatch.setattr(write, "MAX_SHARD_SIZE", 16_000)
    out = tmp_path / "out"
    result = run_cli("convert", built.repo, "-o", out, "-q")
    assert result.exit_code == 0, result.output
    shards = sorted(p.name for p in out.glob("model-*.safetensors"))
    assert len(shards) > 2 and not (out / "model.safetensors").exists()
    assert all(p.stat().st_size < 16_000 + 4_096 for p in out.glob("model-*.safetensors"))  # + header
    index = json.loads((out / "model.safetensors.index.json").read_text())
    assert sorted(set(index["weight_map"].values())) == shards
    total = 0
    for shard in shards:
        with safe_open(str(out / shard), "pt") as f:
            assert f.metadata() == {"format": "pt"}
            total += sum(f.get_tensor(k).nbytes for k in f.keys())
    assert index["metadata"]["total_size"] == total
    load_and_check(out, built.inputs, built.expected, "bert-mlm: sharded TF in, sharded PyTorch out")


@pytest.mark.tf
def test_hf_class_overrides_the_config(tf_repo, tmp_path):
    """--hf-class builds another class from the same config: the encoder alone, the head's weights
    left over (so refused: every TF weight must land somewhere or the conversion fails)."""
    built = tf_repo("bert-seqcls")
    result = run_cli("convert", built.repo, "-o", tmp_path / "out", "--hf-class", "BertModel")
    assert result.exit_code == 1 and "classifier" in result.output
    assert not (tmp_path / "out").exists()
    result = run_cli("convert", built.repo, "-o", tmp_path / "ok", "--hf-class", "TFBertForSequenceClassification",
                     "-q")
    assert result.exit_code == 0, result.output  # a TF class name is read as its PyTorch twin


@pytest.mark.tf
def test_conversion_imports_no_tensorflow(tf_repo, tmp_path):
    """The console script, in a fresh interpreter: transformers 4.x would import TensorFlow at its own
    import when it is installed; the mode turns that off."""
    from tests.test_lazy_imports import loaded_modules

    result = loaded_modules(["convert", str(tf_repo("gpt2-lm").repo), "-o", str(tmp_path / "out"), "-q"])
    assert result["code"] == 0, result
    assert "torch" in result["loaded"] and not {"tensorflow", "keras", "tf_keras"} & set(result["loaded"]), result
    assert (tmp_path / "out" / "model.safetensors").is_file()


@pytest.mark.tf
def test_other_files_copied_and_card_appended(tf_repo, tmp_path):
    """Tokenizer files (in sub-folders too) are copied byte for byte; the card keeps its bytes and gains
    one line; --dtype casts the weights and the config records it."""
    from tests.hf.conftest import copy_repo

    repo = copy_repo(tf_repo("vit-imgcls"), tmp_path)
    card = b"---\nlicense: apache-2.0\n---\n# A model\n\ncaf\xc3\xa9"  # no final newline
    (repo / "README.md").write_bytes(card)
    (repo / "sub").mkdir()
    (repo / "sub" / "vocab.txt").write_bytes(b"[PAD]\n[UNK]\n")
    (repo / "preprocessor_config.json").write_text('{"do_resize": true}')
    out = tmp_path / "out"
    assert run_cli("convert", repo, "-o", out, "--dtype", "float16", "-q").exit_code == 0
    assert (out / "sub" / "vocab.txt").read_bytes() == b"[PAD]\n[UNK]\n"
    assert (out / "preprocessor_config.json").read_text() == '{"do_resize": true}'
    text = (out / "README.md").read_bytes()
    assert text.startswith(card + b"\n\n") and text.count(b"\n") == card.count(b"\n") + 3  # its last line ended, a blank, ours
    assert json.loads((out / "config.json").read_text())["dtype"] == "float16"
    with safe_open(str(out / "model.safetensors"), "pt") as f:
        assert {f.get_tensor(k).dtype for k in f.keys()} == {torch.float16}


@pytest.mark.tf
def test_target_is_built_on_the_meta_device(tf_repo):
    """No storage and no initialisation: the class serves its keys and shapes only."""
    from tests.corpus.conftest import require_transformers
    from tf2torch.hf import target

    transformers = require_transformers()
    model = target.build(transformers.GPT2LMHeadModel, tf_repo("gpt2-lm").repo)
    assert {p.device.type for p in model.parameters()} == {"meta"}
    assert target.tie_groups(model) == [["transformer.wte.weight", "lm_head.weight"]]
