"""google-research BigBird: BERT's names, with the embeddings' norm at ``bert/encoder/LayerNorm``, the pooler
``bert/pooler/dense`` (transformers' ``bert.pooler``), and 3-D attention kernels: ``query|key|value/kernel``
(hidden, heads, head_dim) with biases (heads, head_dim), ``attention/output/dense/kernel`` (heads, head_dim,
hidden): one Linear each in transformers (the multi-head layouts of the table)."""

from __future__ import annotations

from . import Convention
from ._common import BERT_LEAVES, BIGBIRD_SIGNATURE

CONVENTIONS = (
    Convention(
        name="google-research BigBird",
        model_types=("big_bird",),
        bare="BigBirdModel",
        detect=BIGBIRD_SIGNATURE,
        renames=((r"^bert/encoder/LayerNorm/", "bert/embeddings/LayerNorm/"),
                 (r"^bert/pooler/dense/", "bert/pooler/"),
                 *BERT_LEAVES),
        heads=(("cls.predictions", "the masked-LM pretraining head"),
               ("cls.seq_relationship", "the next-sentence pretraining head")),
        layouts=((r"\.attention\.self\.(query|key|value)\.weight$", "mha_in_kernel"),
                 (r"\.attention\.self\.(query|key|value)\.bias$", "mha_in_bias"),
                 (r"\.attention\.output\.dense\.weight$", "mha_out_kernel")),
        loader="load_tf_weights_in_big_bird",
        loader_class="BigBirdForPreTraining",
    ),
)
