"""Hugging Face repositories with TF weights, built as a Hub repo is: transformers 4.57's TF class from a
tiny config, every weight random (``randomise_tf``: a fresh model's LayerNorms at ones and zeros would hide
a swapped pair), ``save_pretrained``. TensorFlow computes the expected outputs; they are saved beside the
converted repo (``inputs.npz``, ``expected.npz``) so that the transformers 5 check can read them too.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from tests.corpus.conftest import randomise_tf, require_transformers

TEXT = dict(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
            max_position_embeddings=64)
SEQ2SEQ = ("input_ids", "decoder_input_ids")
# name: (config class, TF class, config kwargs, input names, save_pretrained kwargs)
CASES: dict[str, tuple[str, str, dict[str, Any], tuple[str, ...], dict[str, Any]]] = {
    "bert-seqcls": ("BertConfig", "TFBertForSequenceClassification", dict(TEXT, num_labels=3), ("input_ids",), {}),
    "gpt2-lm": ("GPT2Config", "TFGPT2LMHeadModel", dict(vocab_size=99, n_embd=32, n_layer=2, n_head=4,
                                                        n_positions=64), ("input_ids",), {}),
    "bart-cg": ("BartConfig", "TFBartForConditionalGeneration", dict(
        vocab_size=99, d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
        decoder_attention_heads=4, encoder_ffn_dim=37, decoder_ffn_dim=37, max_position_embeddings=64), SEQ2SEQ, {}),
    "t5-cg": ("T5Config", "TFT5ForConditionalGeneration", dict(vocab_size=99, d_model=32, d_kv=8, d_ff=37,
                                                               num_layers=2, num_heads=4), SEQ2SEQ, {}),
    "vit-imgcls": ("ViTConfig", "TFViTForImageClassification", dict(
        hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37, image_size=32,
        patch_size=8, num_labels=5), ("pixel_values",), {}),
    # sharded input: 5 tf_model-0000i-of-00005.h5 + tf_model.h5.index.json; a masked-LM head whose decoder
    # weight is the word embedding and whose decoder bias is the head's bias (two tied groups)
    "bert-mlm-sharded": ("BertConfig", "TFBertForMaskedLM", TEXT, ("input_ids",), dict(max_shard_size="20KB")),
}


@dataclass(frozen=True)
class Built:
    name: str
    repo: Path  # the TF repository, as save_pretrained wrote it
    inputs: dict[str, np.ndarray]
    expected: np.ndarray  # TF's logits


def make_inputs(names: tuple[str, ...], seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    return {n: rng.normal(size=(2, 3, 32, 32)).astype(np.float32) if n == "pixel_values"
            else rng.integers(1, 99, (2, 7)).astype(np.int64) for n in names}


@pytest.fixture(scope="session")
def tf_repo(tmp_path_factory):
    """``tf_repo(name)``: the case's TF repository, built once per session."""
    built: dict[str, Built] = {}

    def get(name: str) -> Built:
        if name not in built:
            transformers = require_transformers()
            config_cls, tf_cls, kwargs, input_names, save = CASES[name]
            config = getattr(transformers, config_cls)(**kwargs)
            model = getattr(transformers, tf_cls)(config)
            inputs = make_inputs(input_names, seed=1)
            model(inputs, training=False)  # builds the variables
            randomise_tf(model, seed=2)
            expected = model(inputs, training=False).logits.numpy()
            repo = tmp_path_factory.mktemp(name) / "repo"
            model.save_pretrained(repo, **save)
            built[name] = Built(name, repo, inputs, expected)
        return built[name]

    return get


def run_cli(*args: str):
    """``tf2torch`` in-process, as a user types it (the CLI's own error net: one line, exit code)."""
    from tf2torch.cli import main

    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.fixture(scope="session")
def converted(tf_repo, tmp_path_factory):
    """``converted(name)``: the case converted by the CLI into a repo (with inputs.npz / expected.npz)."""
    done: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in done:
            built = tf_repo(name)
            out = tmp_path_factory.mktemp(name + "-out") / "pt"
            result = run_cli("convert", built.repo, "-o", out, "-q")
            assert result.exit_code == 0, result.output
            np.savez(out.parent / "inputs.npz", **built.inputs)
            np.savez(out.parent / "expected.npz", logits=built.expected)
            done[name] = out
        return done[name]

    return get


def copy_repo(built: Built, where: Path) -> Path:
    """A private copy of a built repo, to damage."""
    target = where / built.name
    shutil.copytree(built.repo, target)
    return target


@pytest.fixture(scope="session")
def original(tmp_path_factory):
    """``original(name)``: the case of ``originals.CASES`` built (checkpoint under the release's names),
    checked by transformers 4.57's own loader, and converted by the CLI; built once per session."""
    import json
    import re

    import torch

    from tests.hf import originals

    built: dict[str, originals.Built] = {}

    def get(name: str) -> originals.Built:
        if name in built:
            return built[name]
        transformers = require_transformers()
        import tensorflow as tf

        case = originals.CASES[name]
        folder = tmp_path_factory.mktemp(name)
        shapes = case.shapes()
        tensors = originals.values(shapes, seed=len(shapes))  # the same weights for every case of a family
        tensors |= originals.values(case.slots(shapes), seed=1)
        if case.global_step:
            tensors["global_step"] = np.array(1000, np.int64)
        prefix = folder / "model.ckpt"
        originals.write_checkpoint(tf, prefix, tensors)
        (folder / "config.json").write_text(json.dumps(case.config))
        config = getattr(transformers, case.config_class)(
            **(case.config_kwargs or {k: v for k, v in case.config.items() if k != "model_type"}))
        truth = getattr(transformers, case.truth_class)(config).eval()
        with torch.no_grad():
            for key, param in truth.named_parameters():
                if not (case.computed and re.search(case.computed, key)):  # the class's own values stay
                    param.fill_(float("nan"))  # what the loader leaves unset stays NaN
        args = (truth, config, str(prefix)) if case.loader_takes_config else (truth, str(prefix))
        getattr(transformers, case.loader)(*args, **case.loader_kwargs)
        unset = [k for k, v in truth.state_dict().items() if v.is_floating_point() and torch.isnan(v).any()]
        assert not unset, f"{name}: {case.loader} left {unset} unset: the synthetic names are wrong"
        target = getattr(transformers, case.expected_class)(config).eval()
        prefix_of = target.base_model_prefix
        source = truth.state_dict()
        found = {k: next((source[c] for c in (k, f"{prefix_of}.{k}", k.partition(".")[2]) if c in source), None)
                 for k in target.state_dict()}
        missing = target.load_state_dict({k: v for k, v in found.items() if v is not None}, strict=False).missing_keys
        shared = {k for keys in tie_groups(target) for k in keys}
        assert set(missing) <= shared, f"{name}: the truth has no {set(missing) - shared}"  # tied: set with their group
        inputs = {k: v % case.vocab if k.endswith("input_ids") else v for k, v in make_inputs(case.inputs, seed=3).items()}
        with torch.no_grad():
            output = target(**{k: torch.from_numpy(v) for k, v in inputs.items()})
        expected = originals.first_output(output)
        field = "logits" if getattr(output, "logits", None) is not None else next(iter(output.keys()))
        out = folder / "out" / "pt"
        args = ["convert", prefix, "--hf-config", folder / "config.json", "-o", out, "-q"]
        result = run_cli(*args, *(["--hf-class", case.hf_class] if case.hf_class else []))
        assert result.exit_code == 0, result.output
        np.savez(out.parent / "inputs.npz", **inputs)
        np.savez(out.parent / "expected.npz", **{field: expected.double().numpy()})  # by field name: load_in_v5
        built[name] = originals.Built(name, prefix, folder / "config.json", target.state_dict(), inputs,
                                      expected.double().numpy(), out)
        return built[name]

    return get


def tie_groups(model) -> list[list[str]]:
    """The state_dict keys that are one tensor (tied embeddings and LM heads)."""
    from tf2torch.hf.target import tie_groups as groups

    return groups(model)
