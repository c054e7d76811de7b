"""Name pieces google-research's BERT-style releases share (BERT, ELECTRA, ALBERT, MobileBERT): the leaf
names of ``modeling.py``'s variables and its ``layer_<i>`` scopes, as PyTorch names."""

from __future__ import annotations

BERT_LEAVES = (
    (r"_embeddings$", "_embeddings/weight"),  # word/position/token_type tables are bare variables
    (r"/(kernel|gamma|output_weights)$", "/weight"),  # output_weights: stored (out, in), kept as is
    (r"/(beta|output_bias)$", "/bias"),
    (r"/layer_(\d+)/", r"/layer/\1/"),
)
