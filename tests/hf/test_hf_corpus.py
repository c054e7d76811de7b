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
import subprocess
import sys
import time
from importlib.util import find_spec
from pathlib import Path

import numpy as np
import pytest

from tests.hf.conftest import run_cli
from tests.hf.families import FAMILIES, NOT_A_MODEL, STATUS, TF_CLASSES, support_matrix
from tests.hf.v5 import judge, load_all

FULL = os.environ.get("TF2TORCH_HF_FULL") == "1"
ROOT = Path(__file__).resolve().parents[2]
# Beyond each family's base model, the quick lane converts these heads: the MLM decoder bias and the
# untied LM heads (ALBERT, MobileBERT, XGLM), bare (out, in) weights (RemBERT), a pooler the head never
# runs (MPNet), multiple choice, extractive QA, a seq2seq classifier, CTC, a distilled and a segmentation
# head, and a refusal (ESM). tests/hf/test_hf_convert.py already covers BERT MLM (sharded), GPT-2 LM, BART and T5 generation.
QUICK_HEADS = ("TFAlbertForMaskedLM", "TFMobileBertForMaskedLM", "TFXGLMForCausalLM", "TFRemBertForMaskedLM",
               "TFMPNetForMaskedLM", "TFRobertaForMultipleChoice", "TFDistilBertForQuestionAnswering",
               "TFBartForSequenceClassification", "TFWav2Vec2ForCTC", "TFDeiTForImageClassificationWithTeacher",
               "TFSegformerForSemanticSegmentation", "TFEsmForMaskedLM", "TFTapasForQuestionAnswering")


def _quick() -> list[str]:
    """Each family's base model (or its first class when it has none) and ``QUICK_HEADS``."""
    chosen = []
    for family in FAMILIES:
        classes = [c for c, (f, _) in TF_CLASSES.items() if f == family]
        bases = [c for c in classes if TF_CLASSES[c][1] == "base"] or classes[:1]
        chosen += bases
    return chosen + [c for c in QUICK_HEADS if c not in chosen]


SELECTED = sorted(c for c in (TF_CLASSES if FULL else _quick()) if c not in STATUS)
REFUSED = sorted(c for c, (kind, *_) in STATUS.items() if kind == "refused" and (FULL or c in _quick()))
DIFFERS = sorted(c for c, (kind, *_) in STATUS.items() if kind == "differs" and (FULL or c in _quick()))
OVER_DRIFT = sorted(c for c, (kind, *_) in STATUS.items() if kind == "over drift" and (FULL or c in _quick()))


@pytest.fixture(scope="module")
def corpus_root(tmp_path_factory):
    """Where the corpus builds: ROOT/CLASS/repo (TF's save_pretrained) and ROOT/CLASS/pt (tf2torch's output)."""
    return tmp_path_factory.mktemp("hf-corpus")


@pytest.fixture(scope="module")
def corpus(corpus_root):
    """Every selected case built (TF), converted (tf2torch CLI, in-process) and loaded (transformers 5)."""
    from tests.corpus.conftest import require_transformers

    require_transformers()  # fails (or skips in the fast lane) here, before the subprocess
    root = corpus_root
    started, outs, refused = time.perf_counter(), {}, {}
    names = SELECTED + REFUSED + DIFFERS + OVER_DRIFT
    # the TF side in a process of its own (tests/hf/corpus.py build_all says why), the conversion here
    done = subprocess.run([sys.executable, "-m", "tests.hf.corpus", str(root), *names], cwd=ROOT,
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    for name in names:
        folder = root / name
        if (folder / "error.txt").is_file():
            refused[name] = (f"building the TF model raised {(folder / 'error.txt').read_text().strip()}",
                             folder / "pt")
            continue
        result = run_cli("convert", folder / "repo", "-o", folder / "pt", "-q")
        if name in REFUSED:
            refused[name] = (result, folder / "pt")
        elif result.exit_code == 0:
            outs[name] = folder / "pt"
        else:
            refused[name] = (result, folder / "pt")  # judged as a failure by the case's test
    built = time.perf_counter()
    loaded = load_all(outs) if outs else {"transformers": "5"}
    print(f"hf corpus: {len(SELECTED) + len(REFUSED) + len(DIFFERS) + len(OVER_DRIFT)} TF classes built and converted in {built - started:.1f} s, "
          f"{len(outs)} loaded by transformers 5 in {time.perf_counter() - built:.1f} s")
    return loaded, refused


@pytest.mark.tf
@pytest.mark.parametrize("tf_class", SELECTED)
def test_tf_class_converts_and_transformers_5_computes_tf_outputs(tf_class, corpus):
    loaded, refused = corpus
    if tf_class in refused:
        result, _ = refused[tf_class]
        pytest.fail(f"{tf_class}: {result}" if isinstance(result, str) else
                    f"{tf_class}: conversion failed, exit {result.exit_code}: {result.output.strip()}")
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
    assert re.search(STATUS[tf_class][2], lines[0]), lines[0]
    assert not out.exists()


@pytest.mark.tf
def test_deberta_v2_with_unshared_position_projections_is_refused(tmp_path):
    """DeBERTa-v2 with ``share_att_key: false``: TF names the projections ``pos_proj`` / ``pos_q_proj``,
    PyTorch ``pos_key_proj`` / ``pos_query_proj``; two same-shaped pairs that nothing tells apart are
    refused, not guessed (docs/hugging-face.md)."""
    from tests.corpus.conftest import require_transformers
    from tests.hf.corpus import build_case

    build_case(require_transformers(), "TFDebertaV2Model", tmp_path, share_att_key=False)
    result = run_cli("convert", tmp_path / "repo", "-o", tmp_path / "pt")
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    print(lines)
    assert result.exit_code == 1 and len(lines) == 1 and "pos_key_proj" in lines[0] and "pos_proj" in lines[0]
    assert not (tmp_path / "pt").exists()


@pytest.mark.tf
@pytest.mark.parametrize("tf_class", DIFFERS)
def test_known_difference_is_still_there(tf_class, corpus):
    """Classes that convert but that transformers 5 does not load or compute as TF did, for a reason of
    transformers' own (STATUS "differs"): the figures are printed, and the entry is stale once they pass."""
    loaded, refused = corpus
    assert tf_class not in refused, refused.get(tf_class)
    failures = judge(tf_class, loaded[tf_class], loaded["transformers"])
    print(f"{tf_class}: {STATUS[tf_class][1]}")
    assert failures, f"{tf_class} now loads and matches TF: move it out of STATUS"


@pytest.mark.tf
@pytest.mark.parametrize("tf_class", OVER_DRIFT)
def test_over_the_drift_control_but_within_the_issues_bound(tf_class, corpus):
    """STATUS "over drift": every key loads and every output is within the issue's 1e-5 relative, but above
    4x the float64 drift (the project's control), so not counted as exact; the figures are printed."""
    loaded, refused = corpus
    assert tf_class not in refused, refused.get(tf_class)
    got = loaded[tf_class]
    assert "exception" not in got and not any(got["loading_info"].values()), got
    failures = judge(tf_class, got, loaded["transformers"])
    errors = {name: numbers.get("error", float("inf")) for name, numbers in got["outputs"].items()}
    assert max(errors.values()) <= 1e-5, errors
    assert failures, f"{tf_class} is now within the drift control: move it out of STATUS"


def _installed_tf_classes() -> dict[str, list[str]]:
    """``__all__`` of every ``modeling_tf_*.py`` of the installed transformers, read as text (no import)."""
    spec = find_spec("transformers")
    assert spec is not None and spec.origin is not None
    found = {}
    for path in sorted((Path(spec.origin).parent / "models").glob("*/modeling_tf_*.py")):
        names = re.search(r"__all__\s*=\s*\[(.*?)\]", path.read_text(), re.S)
        listed = re.findall(r'"(TF\w+)"', names.group(1)) if names else []
        found[path.stem] = [n for n in listed if not n.endswith(("PreTrainedModel", "MainLayer"))]
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


def test_the_docs_support_matrix_is_the_table():
    """docs/hugging-face.md's matrix is generated from the table: ``PYTHONPATH=. python -m tests.hf.families``."""
    docs = (Path(__file__).resolve().parents[2] / "docs" / "hugging-face.md").read_text()
    assert support_matrix() in docs, "docs/hugging-face.md's support matrix is stale: python -m tests.hf.families"


@pytest.mark.tf
def test_tapas_cell_selection_weights_are_tfs_bit_for_bit(corpus, corpus_root):
    """TAPAS QA's logits are -10000 outside the table (and the column logits pass through an argmax), so the
    corpus's output check is dominated by that constant: the four weights TF keeps in its cell-selection layers
    are checked here one by one, bit for bit against TF's saved values, under the PyTorch keys they pair with."""
    import h5py
    from safetensors.numpy import load_file

    folder = corpus_root / "TFTapasForQuestionAnswering"  # in the quick lane (QUICK_HEADS)
    assert "TFTapasForQuestionAnswering" not in corpus[1], corpus[1].get("TFTapasForQuestionAnswering")
    got = load_file(folder / "pt" / "model.safetensors")
    with h5py.File(folder / "repo" / "tf_model.h5", "r") as f:
        saved = {}
        f.visititems(lambda name, obj: saved.update({name: obj[()]}) if isinstance(obj, h5py.Dataset) else None)
    pairs = {"output_weights": "compute_token_logits/output/output_weights:0",
             "output_bias": "compute_token_logits/output/output_bias:0",
             "column_output_weights": "compute_column_logits/column_output/column_output_weights:0",
             "column_output_bias": "compute_column_logits/column_output/column_output_bias:0"}
    for key, tf_name in pairs.items():
        (path,) = [p for p in saved if p.endswith(tf_name)]
        print(f"{key} <- {path}: {np.asarray(saved[path]).ravel()[:3]}")
        assert np.all(saved[path] != 0), key  # randomised (corpus.randomise_tf): a swap or a zero fill would show
        assert got[key].dtype == saved[path].dtype and np.array_equal(got[key], saved[path]), key
