"""Google's BERT TF1 checkpoint (``bert/encoder/layer_0/...``, ``adam_m``/``adam_v`` slots,
``global_step``, ``cls/`` heads) onto ``transformers.BertForPreTraining`` with no rules and no flags
beyond ``--model``; and onto the bare ``BertModel``, where the ``cls/`` heads must be named as unused."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from tests.corpus.conftest import randomise_tf, require_transformers
from tests.corpus.google_bert import save_google_checkpoint
from tests.support.numerics import check
from tests.util import load_source, state_dict
from tf2torch import api

PORT = '''import transformers

CONFIG = dict(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
              max_position_embeddings=64)


def pretraining():
    return transformers.BertForPreTraining(transformers.BertConfig(**CONFIG))


def encoder():
    return transformers.BertModel(transformers.BertConfig(**CONFIG))
'''


@pytest.fixture(scope="module")
def google(tmp_path_factory):
    transformers = require_transformers()
    import tensorflow as tf

    folder = tmp_path_factory.mktemp("google_bert")
    config = transformers.BertConfig(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                                     intermediate_size=37, max_position_embeddings=64)
    tf_model = transformers.TFBertForPreTraining(config)
    ids = np.random.default_rng(3).integers(0, 99, (2, 7)).astype(np.int64)
    tf_model(ids, training=False)
    randomise_tf(tf_model, seed=4)
    out = tf_model(ids, training=False)
    names = save_google_checkpoint(tf, tf_model, folder / "bert_model.ckpt", seed=5)
    (folder / "port.py").write_text(PORT)
    return folder, ids, out.prediction_logits.numpy(), out.seq_relationship_logits.numpy(), names


def test_google_bert_onto_bert_for_pretraining_with_no_rules(google):
    folder, ids, mlm, nsp, names = google
    result = api.convert(folder / "bert_model.ckpt", None, dry_run=True, model=f"{folder / 'port.py'}:pretraining")
    report = result.report
    mapped = {e.source for e in report.by_status("mapped")}
    assert mapped == set(names)
    skipped = {e.source: e.reason for e in report.by_status("skipped")}
    assert len(skipped) == 2 * len(names) + 1 and "google-research BERT style" in skipped[f"{names[0]}/adam_m"]
    model = load_source(result.model_source, folder / "model.py")["build_model"]()
    model.load_state_dict(state_dict(result.plans), strict=False)
    with torch.no_grad():
        out = model.eval()(torch.from_numpy(ids))
    for what, actual, expected in (("MLM logits", out.prediction_logits, mlm), ("NSP logits", out.seq_relationship_logits, nsp)):
        check(actual, expected, f"google BERT TF1 -> BertForPreTraining, {what}")


def test_google_bert_onto_bert_model_names_the_unused_heads(google):
    """Onto transformers' BertModel (a class of the checkpoint's family) the google-research BERT convention
    applies: the pretraining heads BertModel has no module for are skipped by its rule, each named with the
    reason, and the report says which convention named the weights (issue 24, item 5)."""
    folder, *_ = google
    result = api.convert(folder / "bert_model.ckpt", None, dry_run=True, model=f"{folder / 'port.py'}:encoder")
    counts = result.report.counts()
    assert counts["missing"] == 0 and counts["unexpected"] == 0, counts
    skipped = {e.source: e.reason for e in result.report.by_status("skipped") if e.source.startswith("cls/")}
    print(skipped)
    assert "BertModel has none" in skipped["cls/predictions/output_bias"]
    assert any("google-research BERT convention" in n for n in result.report.notes), result.report.notes
