"""The family x head corpus (issue 24): every TF model class of transformers 4.57 (``families.TF_CLASSES``)
that transformers 5 still has a PyTorch class for, built tiny with random weights (TF computes the truth),
converted by ``tf2torch convert REPO -o OUT``, then loaded by transformers 5 in ONE subprocess: no key
missing, unexpected or mismatched, and every output of the model within the numerics rule.

Time: ``make test`` runs the quick lane (every family, its base model and the heads of ``QUICK_HEADS``);
``TF2TORCH_HF_FULL=1`` runs every class of the table (docs/hugging-face.md gives both times). Every TF repo is
built in one module-scoped pass, and converted in-process.
"""

from __future__ import annotations

import os
import re
import time
from importlib.util import find_spec
from pathlib import Path

import pytest

from tests.hf.conftest import run_cli
from tests.hf.families import FAMILIES, NOT_A_MODEL, STATUS, TF_CLASSES
from tests.hf.v5 import judge, load_all

FULL = os.environ.get("TF2TORCH_HF_FULL") == "1"
# Beyond each family's base model, the quick lane converts these heads (tied LM heads, the MLM decoder
# bias, poolers a head class does not build, grouped/separable layers, scalar parameters)
QUICK_HEADS = ("TFBertForMaskedLM", "TFAlbertForMaskedLM", "TFConvBertForMaskedLM", "TFGPT2LMHeadModel",
               "TFMPNetForMaskedLM", "TFMobileBertForMaskedLM", "TFRemBertForMaskedLM", "TFXGLMForCausalLM",
               "TFBartForSequenceClassification", "TFElectraForPreTraining", "TFRobertaForMultipleChoice",
               "TFDistilBertForQuestionAnswering", "TFT5ForConditionalGeneration", "TFWav2Vec2ForCTC",
               "TFDeiTForImageClassificationWithTeacher", "TFSegformerForSemanticSegmentation")


def _quick() -> list[str]:
    """Each family's base model (or its first class when it has none) and ``QUICK_HEADS``."""
    chosen = []
    for family in FAMILIES:
        classes = [c for c, (f, _) in TF_CLASSES.items() if f == family]
        bases = [c for c in classes if TF_CLASSES[c][1] == "base"] or classes[:1]
        chosen += bases
    return chosen + [c for c in QUICK_HEADS if c not in chosen]


SELECTED = sorted(c for c in (TF_CLASSES if FULL else _quick()) if c not in STATUS)
REFUSED = sorted(c for c, (kind, _) in STATUS.items() if kind == "refused" and (FULL or c in _quick()))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Every selected case built (TF), converted (tf2torch CLI, in-process) and loaded (transformers 5)."""
    from tests.corpus.conftest import require_transformers
    from tests.hf.corpus import build_case

    transformers = require_transformers()
    root = tmp_path_factory.mktemp("hf-corpus")
    started, outs, refused = time.perf_counter(), {}, {}
    for name in SELECTED + REFUSED:
        folder = root / name
        folder.mkdir()
        build_case(transformers, name, folder)
        result = run_cli("convert", folder / "repo", "-o", folder / "pt", "-q")
        if name in REFUSED:
            refused[name] = (result, folder / "pt")
        elif result.exit_code == 0:
            outs[name] = folder / "pt"
        else:
            refused[name] = (result, folder / "pt")  # judged as a failure by the case's test
    built = time.perf_counter()
    loaded = load_all(outs) if outs else {"transformers": "5"}
    print(f"hf corpus: {len(SELECTED) + len(REFUSED)} TF classes built and converted in {built - started:.1f} s, "
          f"{len(outs)} loaded by transformers 5 in {time.perf_counter() - built:.1f} s")
    return loaded, refused


@pytest.mark.tf
@pytest.mark.parametrize("tf_class", SELECTED)
def test_tf_class_converts_and_transformers_5_computes_tf_outputs(tf_class, corpus):
    loaded, refused = corpus
    if tf_class in refused:
        result, _ = refused[tf_class]
        pytest.fail(f"{tf_class}: conversion failed, exit {result.exit_code}: {result.output.strip()}")
    failures = judge(tf_class, loaded[tf_class], loaded["transformers"])
    assert not failures, "; ".join(failures)


@pytest.mark.tf
@pytest.mark.parametrize("tf_class", REFUSED)
def test_unconvertible_class_is_refused_with_one_line(tf_class, corpus):
    """What tf2torch cannot convert faithfully it refuses: exit 1, one line naming the cause, nothing written."""
    result, out = corpus[1][tf_class]
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    print(f"{tf_class}: {lines}")
    assert result.exit_code == 1 and len(lines) == 1 and lines[0].startswith("tf2torch: error: "), result.output
    assert STATUS[tf_class][1].split(":")[0] in lines[0] or re.search(STATUS[tf_class][2], lines[0]), lines[0]
    assert not out.exists()


def _installed_tf_classes() -> dict[str, list[str]]:
    """``__all__`` of every ``modeling_tf_*.py`` of the installed transformers, read as text (no import)."""
    spec = find_spec("transformers")
    assert spec is not None and spec.origin is not None
    found = {}
    for path in sorted((Path(spec.origin).parent / "models").glob("*/modeling_tf_*.py")):
        names = re.search(r"__all__\s*=\s*\[(.*?)\]", path.read_text(), re.S)
        found[path.stem] = re.findall(r'"(TF\w+)"', names.group(1)) if names else []
    return found


@pytest.mark.tf
def test_the_table_lists_every_tf_model_class_of_transformers():
    """The table is the installed transformers' list: a TF class added, dropped or renamed fails here."""
    from tests.corpus.conftest import require_transformers

    require_transformers()
    installed = {name for module, names in _installed_tf_classes().items() if module != "modeling_tf_auto"
                 for name in names}
    assert installed - set(TF_CLASSES) - set(NOT_A_MODEL) == set()
    assert set(TF_CLASSES) - installed == set() and set(NOT_A_MODEL) <= installed
    assert {family for family, _ in TF_CLASSES.values()} == set(FAMILIES)
    print(f"{len(TF_CLASSES)} TF model classes in {len(FAMILIES)} families; {len(SELECTED)} converted in this run")
