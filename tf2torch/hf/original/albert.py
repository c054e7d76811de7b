"""google-research ALBERT: BERT's names with the shared layers of ``bert/encoder/transformer/group_<g>/
inner_group_<i>/`` (``attention_1/self/query``, ``attention_1/output/dense``, ``LayerNorm`` after the
attention, ``ffn_1/intermediate/dense`` and ``ffn_1/intermediate/output/dense``, ``LayerNorm_1``), the
factorised embedding's ``embedding_hidden_mapping_in``, and the heads ``cls/predictions`` (transformers'
``predictions``) and ``cls/seq_relationship`` (the sentence-order head, ``sop_classifier.classifier``).
A TF-Hub export prefixes every name with ``module/``."""

from __future__ import annotations

from . import Convention
from ._common import ALBERT_SIGNATURE

LAYER = r"(/albert_layers/\d+/)"  # an inner group, once renamed below

CONVENTIONS = (
    Convention(
        name="google-research ALBERT",
        model_types=("albert",),
        bare="AlbertModel",
        detect=ALBERT_SIGNATURE,
        renames=(
            (r"^module/", ""),
            (r"^bert/", "albert/"),
            (r"^albert/encoder/transformer/group_(\d+)/inner_group_(\d+)/",
             r"albert/encoder/albert_layer_groups/\1/albert_layers/\2/"),
            (LAYER + r"attention_1/self/", r"\1attention/"),
            (LAYER + r"attention_1/output/dense/", r"\1attention/dense/"),
            (LAYER + r"LayerNorm/", r"\1attention/LayerNorm/"),  # the norm after the attention
            (LAYER + r"ffn_1/intermediate/dense/", r"\1ffn/"),
            (LAYER + r"ffn_1/intermediate/output/dense/", r"\1ffn_output/"),
            (LAYER + r"LayerNorm_1/", r"\1full_layer_layer_norm/"),  # the norm after the feed-forward
            (r"^albert/pooler/dense/", "albert/pooler/"),
            (r"^cls/predictions/transform/", "predictions/"),
            (r"^cls/predictions/output_bias$", "predictions/bias"),
            (r"^cls/seq_relationship/", "sop_classifier/classifier/"),
            (r"_embeddings$", "_embeddings/weight"),
            (r"/(kernel|gamma|output_weights)$", "/weight"),  # output_weights: stored (out, in), kept as is
            (r"/(beta|output_bias)$", "/bias"),
        ),
        heads=(("predictions", "the masked-LM pretraining head"),
               ("sop_classifier", "the sentence-order pretraining head")),
        loader="load_tf_weights_in_albert",
        loader_class="AlbertForPreTraining",
    ),
)
