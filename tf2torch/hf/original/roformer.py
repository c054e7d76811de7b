"""ZhuiyiTechnology RoFormer (bert4keras' BERT checkpoint layout): BERT's names under ``bert/`` (transformers'
``roformer.``), no position table (rotary positions: transformers' ``encoder.embed_positions`` is a sinusoid
the class computes, ``computed`` below), the masked-LM head ``cls/predictions``; no pooler and no
next-sentence head (no transformers RoFormer class has them, and 4.57's loader raised on them: a checkpoint
holding them fails here as unexpected weights, not skipped on a guess). Its names are BERT's minus
``position_embeddings``: BERT's signature matches both, so a release's ``bert_config.json`` needs
``"model_type": "roformer"`` (or ``--hf-class``); without it the conversion names both families."""

from __future__ import annotations

from . import Convention
from ._common import BERT_LEAVES

CONVENTIONS = (
    Convention(
        name="ZhuiyiTechnology RoFormer",
        model_types=("roformer",),
        bare="RoFormerModel",
        detect=r"^bert/encoder/layer_\d+/attention/self/query/kernel$",
        unless=r"^bert/embeddings/position_embeddings$",  # BERT's learned positions: RoFormer has none
        renames=((r"^bert/", "roformer/"), *BERT_LEAVES),
        heads=(("cls.predictions", "the masked-LM pretraining head"),),
        computed=((r"(^|\.)encoder\.embed_positions\.weight$", "the sinusoidal position table"),),
        loader="load_tf_weights_in_roformer",
        loader_class="RoFormerForMaskedLM",
    ),
)
