"""google-research MobileBERT: BERT's names under ``bert/`` with the bottlenecks (``bottleneck/input``,
``bottleneck/attention``, ``output/bottleneck``), the stacked feed-forwards ``ffn_layer_<i>`` (transformers'
``ffn.<i>``), ``FakeLayerNorm`` (transformers' ``NoNorm``, a scale and a shift), the trigram
``embeddings/embedding_transformation``, and the masked-LM head's ``cls/predictions/extra_output_weights``
(stored (vocab, hidden - embedding), transformers' ``cls.predictions.dense``)."""

from __future__ import annotations

from . import Convention
from ._common import BERT_LEAVES, MOBILEBERT_SIGNATURE

CONVENTIONS = (
    Convention(
        name="google-research MobileBERT",
        model_types=("mobilebert",),
        bare="MobileBertModel",
        detect=MOBILEBERT_SIGNATURE,
        renames=((r"^bert/", "mobilebert/"),
                 (r"/ffn_layer_(\d+)/", r"/ffn/\1/"),
                 (r"/FakeLayerNorm/", "/LayerNorm/"),
                 (r"^cls/predictions/extra_output_weights$", "cls/predictions/dense/weight"),
                 *BERT_LEAVES),
        heads=(("cls.predictions", "the masked-LM pretraining head"),
               ("cls.seq_relationship", "the next-sentence pretraining head")),
        loader="load_tf_weights_in_mobilebert",
        loader_class="MobileBertForPreTraining",
    ),
)
