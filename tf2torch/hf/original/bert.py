"""google-research BERT (``modeling.py`` + ``run_pretraining.py``): ``bert/encoder/layer_0/attention/
self/query/kernel``, the pretraining heads ``cls/predictions/...`` (masked LM: ``transform/dense``,
``transform/LayerNorm``, ``output_bias``; its decoder is the word embedding) and ``cls/seq_relationship/
output_weights`` (stored (2, hidden): torch's layout already). AdamWeightDecay's ``adam_m`` / ``adam_v``
slots and ``global_step`` are optimizer state and bookkeeping (``readers.roles``)."""

from __future__ import annotations

from . import Convention
from ._common import BERT_LEAVES, BIGBIRD_SIGNATURE, MOBILEBERT_SIGNATURE, REMBERT_SIGNATURE, TAPAS_SIGNATURE

CONVENTIONS = (
    Convention(
        name="google-research BERT",
        model_types=("bert",),
        bare="BertModel",
        detect=r"^bert/encoder/layer_\d+/attention/self/query/kernel$",
        # MobileBERT's, RemBERT's, BigBird's and TAPAS' checkpoints hold BERT's names too, under the same bert/
        unless="|".join((MOBILEBERT_SIGNATURE, REMBERT_SIGNATURE, BIGBIRD_SIGNATURE, TAPAS_SIGNATURE)),
        renames=BERT_LEAVES,
        heads=(("cls.predictions", "the masked-LM pretraining head"),
               ("cls.seq_relationship", "the next-sentence pretraining head")),
        loader="load_tf_weights_in_bert",
        loader_class="BertForPreTraining",
    ),
)
