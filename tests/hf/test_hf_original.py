"""Original TF1 checkpoints (google-research BERT, ELECTRA, ALBERT, OpenAI GPT-2, mesh-TF T5) into transformers
repositories: ``tf2torch convert model.ckpt --hf-config config.json [--hf-class C] -o OUT``.

Each checkpoint is written under the release's own names and layouts (``tests/hf/originals.py``) and first
loaded by transformers 4.57's ``load_tf_weights_in_<model>`` (the truth: it must fill every parameter).
OUT must then load in transformers 4.57 with nothing missing or unexpected, hold exactly the loader's
weights, and compute the loader's model's outputs; transformers 5 loads the same OUTs in one subprocess.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from tests.hf.conftest import run_cli, tie_groups
from tests.hf.originals import CASES, first_output
from tests.hf.v5 import judge, load_all
from tests.support.numerics import check
from tests.test_hostile import refused


@pytest.mark.tf
@pytest.mark.parametrize("name", sorted(CASES))
def test_original_checkpoint_becomes_the_loaders_model(name, original):
    import transformers

    built, case = original(name), CASES[name]
    config = json.loads((built.out / "config.json").read_text())
    assert config["architectures"] == [case.expected_class]
    assert config["model_type"] == getattr(transformers, case.config_class).model_type
    model, info = getattr(transformers, case.expected_class).from_pretrained(built.out, output_loading_info=True)
    assert not any(info.values()), f"{name}: from_pretrained reports {info}"
    got = model.eval().state_dict()
    assert sorted(got) == sorted(built.truth)
    differ = [k for k in got if not torch.equal(got[k], built.truth[k])]
    assert not differ, f"{name}: not the 4.57 loader's weights: {differ[:5]}"
    with torch.no_grad():
        actual = first_output(model(**{k: torch.from_numpy(v) for k, v in built.inputs.items()}))
    check(actual, built.expected, f"{name}: tf2torch vs transformers 4.57's {case.loader}")
    report = json.loads((built.out / "report.json").read_text())
    skipped = {e["source"]: e["reason"] for e in report["entries"] if e["status"] == "skipped"}
    assert not case.global_step or skipped["global_step"].startswith("bookkeeping")
    slots = [s for s, why in skipped.items() if "slot" in why or "EMA shadow" in why]
    assert len(slots) == len(case.slots(case.shapes())), f"{name}: optimizer slots (EMA shadows) not all counted as such"
    print(f"{name}: {report['counts']['mapped']} mapped, {len(slots)} optimizer slots skipped, "
          f"{len(skipped) - len(slots) - case.global_step} skipped by the convention")


@pytest.mark.tf
def test_heads_and_second_models_are_skipped_by_rule_with_a_note(original):
    """The bare model skips the pretraining heads it has no module for; the discriminator skips ELECTRA's
    generator; each with the reason in report.json, never guessed onto something else."""
    def skipped(name: str) -> dict[str, str]:
        report = json.loads((original(name).out / "report.json").read_text())
        return {e["source"]: e["reason"] for e in report["entries"] if e["status"] == "skipped"}

    bare = skipped("bert-bare")
    heads = {s for s in bare if s.startswith("cls/") and "/adam_" not in s}
    assert len(heads) == 7 and all("BertModel has none" in bare[s] for s in heads)
    assert "next-sentence" in bare["cls/seq_relationship/output_weights"]
    assert not any(s.startswith("cls/") for s in skipped("bert-pretraining") if "/adam_" not in s)
    disc = skipped("electra-discriminator")
    generator = {s for s in disc if s.startswith("generator") and "/adam_" not in s}
    assert generator and all("ElectraForMaskedLM" in disc[s] for s in generator)
    gen = skipped("electra-generator")
    assert "electra/encoder/layer_0/output/dense/kernel" in gen and "discriminator_predictions/dense/kernel" in gen
    albert = skipped("albert-bare")
    assert "sentence-order" in albert["cls/seq_relationship/output_weights"]


@pytest.mark.tf
def test_transformers_5_loads_every_converted_original(original):
    """Every converted original loads in transformers 5 (one process for all) with nothing missing or
    unexpected, and computes what the 4.57 loader's model computed (the rule of tests/support/numerics)."""
    outs = {name: original(name).out for name in sorted(CASES)}
    result = load_all(outs)
    failures = [f for name in outs for f in judge(name, result[name], result["transformers"])]
    assert not failures, "; ".join(failures)


@pytest.mark.parametrize(("family", "model_type"), [("bert", "bert"), ("electra", "electra"), ("albert", "albert"),
                                                    ("mobilebert", "mobilebert"), ("rembert", "rembert"),
                                                    ("big_bird", "big_bird"), ("gpt2", "gpt2"),
                                                    ("gpt_neo", "gpt_neo"), ("tapas", "tapas"), ("t5", "t5"),
                                                    ("convbert", "convbert"),
                                                    # their names' channel counts come from transformers' class
                                                    pytest.param("mobilenet_v1", "mobilenet_v1", marks=pytest.mark.tf),
                                                    pytest.param("mobilenet_v2", "mobilenet_v2", marks=pytest.mark.tf),
                                                    ("xlnet", "xlnet"), ("canine", "canine"),
                                                    ("imagegpt", "imagegpt"),
                                                    ("funnel", "funnel")])
def test_a_config_without_model_type_finds_the_family_by_the_checkpoints_names(family, model_type):
    """A release's own config (bert_config.json, hparams.json) names no model_type: each family's checkpoint
    is recognised by its own convention and no other (MobileBERT's names contain BERT's)."""
    from tests.hf import originals
    from tf2torch.hf.original import detect

    found = detect(sorted(getattr(originals, family)()))
    assert [c.model_types[0] for c in found] == [model_type]


@pytest.mark.tf
def test_slim_mobilenet_ema_shadows_as_transformers_loaders_read_them(original):
    """MobileNetV2's loader took the EMA shadow of each kernel, bias, gamma, beta (not of the moving
    statistics); MobileNetV1's took the raw variables. The reports say which, per shadow."""
    def skipped(name: str) -> dict[str, str]:
        report = json.loads((original(name).out / "report.json").read_text())
        return {e["source"]: e["reason"] for e in report["entries"] if e["status"] == "skipped"}

    v2, v1 = skipped("mobilenet_v2-imgcls"), skipped("mobilenet_v1-imgcls")
    read = {s for s, why in v2.items() if why.startswith("EMA shadow, read in place of")}
    assert "MobilenetV2/Conv/weights/ExponentialMovingAverage" in read
    assert "MobilenetV2/Conv/BatchNorm/gamma/ExponentialMovingAverage" in read
    assert "MobilenetV2/Conv/BatchNorm/moving_mean/ExponentialMovingAverage" not in read
    assert not any("read in place" in why for why in v1.values())
    assert "not selected" in v1["MobilenetV1/Conv2d_0/weights/ExponentialMovingAverage"]


def test_roformer_names_are_bert_names_so_the_config_must_say_which():
    """RoFormer's checkpoint is BERT's without the position table: both signatures match, neither is picked
    (the conversion asks for model_type), while a BERT checkpoint is BERT's alone."""
    from tests.hf import originals
    from tf2torch.hf.original import detect

    assert [c.model_types[0] for c in detect(sorted(originals.roformer()))] == ["bert", "roformer"]
    assert [c.model_types[0] for c in detect(sorted(originals.bert()))] == ["bert"]


def _config(built, tmp_path, **changes) -> str:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**json.loads(built.config_file.read_text()), **changes}))
    return str(path)


# name: (case, config changes, extra arguments, what the one line must say)
BAD = {
    "config-not-the-weights": ("bert-bare", dict(intermediate_size=41), (), ("does config.json belong", "mismatch")),
    "more-layers-than-the-checkpoint": ("gpt2-bare", dict(n_layer=3), (), ("missing", "h.2")),
    "unknown-model-type": ("bert-bare", dict(model_type="no_such_model"), (), ("no_such_model", "known: ")),
    "family-of-another-checkpoint": ("t5-v1_1", dict(model_type="bert"), (), ("'bert'", "mesh-TF T5 names")),
    "class-of-another-family": ("bert-bare", {}, ("--hf-class", "GPT2Model"), ("'gpt2'", "google-research BERT")),
    "class-not-the-config": ("t5-v1_1", {}, ("--hf-class", "BertModel"), ("'t5'", "'bert' class")),
    "roformer-without-model-type": ("roformer-mlm", dict(model_type=None), (),
                                    ("google-research BERT and ZhuiyiTechnology RoFormer", "model_type")),
    "imagegpt-config-for-gpt2-names": ("gpt2-bare", dict(model_type="imagegpt"), (),
                                       ("'imagegpt'", "OpenAI GPT-2 names")),
    "no-model-type-and-no-known-names": ("gpt2-bare", {}, ("--hf-class", "NoSuchModel"), ("NoSuchModel",)),
}


@pytest.mark.tf
@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_is_one_line_and_nothing_written(name, original, tmp_path):
    case, changes, extra, words = BAD[name]
    built = original(case)
    out = tmp_path / "outputs" / "out"
    result = run_cli("convert", built.prefix, "--hf-config", _config(built, tmp_path, **changes), "-o", out, *extra)
    refused(result, *words, code=None)
    assert not out.exists()


@pytest.mark.tf
def test_not_an_original_checkpoint_or_config_is_one_line(original, tmp_path):
    """A TF2 object-graph checkpoint (its names are object paths, no convention's) and a config that is no
    JSON object: one line naming the file, nothing written."""
    import tensorflow as tf

    built = original("gpt2-bare")
    tf.train.Checkpoint(v=tf.Variable(np.ones(3, np.float32))).write(str(tmp_path / "tf2" / "ckpt"))
    (tmp_path / "list.json").write_text("[1, 2]")
    for source, config, words in ((tmp_path / "tf2" / "ckpt", built.config_file, ("TF2 object-graph", "ckpt")),
                                  (built.prefix, tmp_path / "list.json", ("list.json", "JSON object"))):
        result = run_cli("convert", source, "--hf-config", config, "-o", tmp_path / "out")
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert result.exit_code != 0 and len(lines) == 1 and all(w in lines[0] for w in words), result.stderr
        assert not (tmp_path / "out").exists()


@pytest.mark.tf
def test_sharded_output_holds_the_same_weights(original, tmp_path, monkeypatch):
    """Above the shard size the checkpoint route splits OUT as save_pretrained does (the writer both routes
    share), and the shards still hold exactly the loader's weights."""
    import transformers

    from tf2torch.hf import write

    built = original("t5-v1_1")
    monkeypatch.setattr(write, "MAX_SHARD_SIZE", 20_000)
    out = tmp_path / "out"
    result = run_cli("convert", built.prefix, "--hf-config", built.config_file, "--hf-class",
                     "T5ForConditionalGeneration", "-o", out, "-q")
    assert result.exit_code == 0, result.output
    assert len(list(out.glob("model-*.safetensors"))) > 2 and (out / "model.safetensors.index.json").is_file()
    got = transformers.T5ForConditionalGeneration.from_pretrained(out).state_dict()
    assert all(torch.equal(got[k], v) for k, v in built.truth.items())


@pytest.mark.tf
def test_dry_run_plans_and_writes_nothing(original, tmp_path):
    built = original("bert-bare")
    result = run_cli("convert", built.prefix, "--hf-config", built.config_file, "--dry-run", "-o", tmp_path / "out")
    assert result.exit_code == 0, result.output
    assert "bert/encoder/layer_0/attention/self/query/kernel" in result.output and not (tmp_path / "out").exists()


@pytest.mark.tf
def test_model_and_hf_config_together_is_a_usage_error(original, tmp_path):
    built = original("gpt2-bare")
    result = run_cli("convert", built.prefix, "--hf-config", built.config_file, "--model", "x.py:build",
                     "-o", tmp_path / "out")
    assert result.exit_code != 0 and "pass one of them" in result.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.tf
def test_expected_outputs_are_not_trivial(original):
    """The comparison means something: the truth's outputs vary (no NaN, not constant)."""
    built = original("bert-bare")
    assert np.isfinite(built.expected).all() and built.expected.std() > 1e-3


USER_FILE = """import transformers


def build():
    return transformers.{cls}(transformers.{config}(**{kwargs!r}))
"""


@pytest.mark.tf
@pytest.mark.parametrize("name", ["bert-pretraining", "bert-bare", "gpt2-lm", "imagegpt-lm", "xlnet-lm",
                                  "roformer-mlm"])
def test_model_file_building_the_transformers_class_needs_no_rules(name, original, tmp_path):
    """``--model user.py:build`` where build returns the transformers class: the checkpoint's convention
    (detected from its names, for a class of that family) names the weights, its parts combined (ImageGPT),
    its stacked biases split (XLNet), what the class computes filled by it (RoFormer's sinusoid, ImageGPT's
    zero biases); the report says which, and the written weights are the 4.57 loader's, computing its outputs."""
    import transformers
    from safetensors.torch import load_file

    built, case = original(name), CASES[name]
    kwargs = case.config_kwargs or {k: v for k, v in case.config.items() if k != "model_type"}
    (tmp_path / "user.py").write_text(USER_FILE.format(cls=case.expected_class, config=case.config_class,
                                                       kwargs=kwargs))
    out = tmp_path / "out"
    result = run_cli("convert", built.prefix, "--model", f"{tmp_path / 'user.py'}:build", "-o", out, "-q")
    assert result.exit_code == 0, result.output
    report = json.loads((out / "report.json").read_text())
    convention = [n for n in report["notes"] if "convention" in n]
    assert len(convention) == 1 and case.expected_class in convention[0], report["notes"]
    assert all(e["reason"].startswith("matched by pair") for e in report["entries"] if e["status"] == "mapped")
    got = load_file(out / "model.safetensors")
    differ = [k for k in got if not torch.equal(got[k], built.truth[k])]
    assert not differ, f"{name}: not the 4.57 loader's weights: {differ[:5]}"
    model = getattr(transformers, case.expected_class)(getattr(transformers, case.config_class)(**kwargs)).eval()
    missing = model.load_state_dict(got, strict=False).missing_keys
    tied = {k for group in tie_groups(model) for k in group}
    assert set(missing) <= tied, f"{name}: not written: {set(missing) - tied}"
    model.tie_weights()
    with torch.no_grad():
        actual = first_output(model(**{k: torch.from_numpy(v) for k, v in built.inputs.items()}))
    check(actual, built.expected, f"{name} via --model: tf2torch vs transformers 4.57's {case.loader}")
    print(f"{name}: {convention[0]}; {report['counts']}")


@pytest.mark.tf
def test_imagegpt_parts_are_accounted_each_by_its_own_name(original):
    """Combined tensors: report.json names every part (not a made-up variable), the key it went into, its
    offset and layout; the biases no release has are filled by the class's own initialisation, said so."""
    report = json.loads((original("imagegpt-lm").out / "report.json").read_text())
    mapped = {e["source"]: e for e in report["entries"] if e["status"] == "mapped"}
    for k, proj in enumerate(("q_proj", "k_proj", "v_proj")):
        entry = mapped[f"model/h1/attn/{proj}"]
        assert entry["key"] == "transformer.h.1.attn.c_attn.weight"
        assert f"part {k + 1} of 3" in entry["reason"] and f"[{32 * k}:{32 * (k + 1)}] along axis 1" in entry["reason"]
        assert entry["layout"] == "(N, H, D) -> (D, N*H)" and entry["shape"] == [2, 16, 32]
    assert "[16:17] along axis 0" in mapped["model/sos"]["reason"] and mapped["model/sos"]["key"] == "transformer.wte.weight"
    assert "model/h1/attn/c_attn" not in mapped and "model/wte" in mapped  # the combined name is not an entry
    filled = {e["key"]: e["reason"] for e in report["entries"] if e["status"] == "filled"}
    assert len(filled) == 8 and all("do not have" in why and "_init_weights" in why for why in filled.values())


@pytest.mark.tf
def test_imagegpt_with_a_part_missing_is_refused_by_name(original, tmp_path):
    """A combined tensor is never filled in part: one line naming the part found and the one missing."""
    import tensorflow as tf

    from tests.hf import originals

    built = original("imagegpt-bare")
    shapes = {k: v for k, v in originals.imagegpt().items() if k != "model/h1/attn/v_proj"}
    originals.write_checkpoint(tf, tmp_path / "model.ckpt", originals.values(shapes, seed=1))
    result = run_cli("convert", tmp_path / "model.ckpt", "--hf-config", built.config_file, "-o", tmp_path / "out")
    refused(result, "'model/h1/attn/q_proj'", "into 'model/h1/attn/c_attn'", "lacks model/h1/attn/v_proj", "pass the whole checkpoint", code=None)
    assert not (tmp_path / "out").exists()
