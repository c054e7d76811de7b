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
from tf2torch.errors import MappingError

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
    folder, *_ = google
    with pytest.raises(MappingError) as caught:
        api.convert(folder / "bert_model.ckpt", None, dry_run=True, model=f"{folder / 'port.py'}:encoder")
    print(caught.value)
    assert "'cls/predictions/output_bias' [99]" in str(caught.value)
    result = api.convert(folder / "bert_model.ckpt", None, dry_run=True, model=f"{folder / 'port.py'}:encoder",
                         allow_unexpected=("^cls/",))
    assert result.report.counts()["missing"] == 0
