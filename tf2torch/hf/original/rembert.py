"""google-research RemBERT: BERT's names under ``bert/`` with the smaller input embeddings projected by
``bert/encoder/embedding_hidden_mapping_in``. Its pretraining head (``cls/...``, ``output_embedding``, in
another layout than ``RemBertForMaskedLM``'s) is not carried over, as transformers' loader never read it
("reset at classification time")."""

from __future__ import annotations

from . import Convention
from ._common import ALBERT_SIGNATURE, BERT_LEAVES, REMBERT_SIGNATURE

HEAD = "RemBERT's pretraining head, in a layout transformers' classes do not have (its own loader skipped it)"

CONVENTIONS = (
    Convention(
        name="google-research RemBERT",
        model_types=("rembert",),
        bare="RemBertModel",
        detect=REMBERT_SIGNATURE,
        unless=ALBERT_SIGNATURE,
        skips=((r"^cls/", HEAD), (r"(^|/)output_embedding(/|$)", HEAD)),
        renames=((r"^bert/", "rembert/"), *BERT_LEAVES),
        loader="load_tf_weights_in_rembert",
        loader_class="RemBertModel",
    ),
)
