"""Name pieces google-research's BERT-style releases share (BERT, ELECTRA, ALBERT, MobileBERT, RemBERT,
BigBird): the leaf names of ``modeling.py``'s variables and its ``layer_<i>`` scopes, as PyTorch names; and
the names that tell the families apart when a release's config names no ``model_type``: all of them but
ELECTRA keep BERT's ``bert/encoder/layer_<i>/...``."""

from __future__ import annotations

BERT_LEAVES = (
    (r"_embeddings$", "_embeddings/weight"),  # word/position/token_type tables are bare variables
    (r"/(kernel|gamma|output_weights)$", "/weight"),  # output_weights: stored (out, in), kept as is
    (r"/(beta|output_bias)$", "/bias"),
    (r"/layer_(\d+)/", r"/layer/\1/"),
)

ALBERT_SIGNATURE = r"^(module/)?bert/encoder/transformer/group_\d+/inner_group_\d+/"
MOBILEBERT_SIGNATURE = r"^bert/(embeddings/embedding_transformation|encoder/layer_\d+/(bottleneck|ffn_layer_\d+))/"
REMBERT_SIGNATURE = r"^bert/encoder/embedding_hidden_mapping_in/"  # (ALBERT's too: ruled out by its own)
BIGBIRD_SIGNATURE = r"^bert/encoder/LayerNorm/"  # BigBird keeps the embeddings' norm under the encoder
TAPAS_SIGNATURE = r"^bert/embeddings/token_type_embeddings_\d+$"  # seven token-type tables
CONVBERT_SIGNATURE = r"^electra/encoder/layer_\d+/attention/self/conv_attn_key/"  # ELECTRA's names plus the conv
