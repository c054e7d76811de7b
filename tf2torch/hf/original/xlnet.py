"""zihangdai XLNet: ``model/transformer/word_embedding/lookup_table``, ``mask_emb/mask_emb``, per layer
``rel_attn/q|k|v|o|r/kernel`` stored (d_model, n_head, d_head) as transformers keeps its bare parameters
``rel_attn.q`` ... (no transpose, no ``weight`` leaf), ``rel_attn/LayerNorm``, ``ff/layer_1|layer_2`` (dense
kernels, transposed), ``ff/LayerNorm``; the relative biases ``r_r_bias``, ``r_w_bias``, ``r_s_bias`` and
``seg_embed`` stacked over layers (``[n_layer, ...]``, ``untie_r``): one per layer in transformers. The LM
head's ``model/lm_loss/bias``; the classification head's ``model/sequnece_summary`` (sic, as the release and
the 4.57 loader spell it). Adam's ``<var>/Adam``, ``Adam_1`` are optimizer state."""

from __future__ import annotations

from . import Convention

CONVENTIONS = (
    Convention(
        name="zihangdai XLNet",
        model_types=("xlnet",),
        bare="XLNetModel",
        detect=r"^model/transformer/layer_\d+/rel_attn/q/kernel$",
        splits=r"^model/transformer/(r_r_bias|r_w_bias|r_s_bias|seg_embed)$",
        renames=((r"^model/transformer/(r_r_bias|r_w_bias|r_s_bias|seg_embed)/(\d+)$",
                  r"transformer/layer/\2/rel_attn/\1"),
                 (r"^model/transformer/word_embedding/lookup_table$", "transformer/word_embedding/weight"),
                 (r"^model/transformer/mask_emb/mask_emb$", "transformer/mask_emb"),
                 (r"^model/transformer/layer_(\d+)/", r"transformer/layer/\1/"),
                 (r"/rel_attn/(q|k|v|o|r)/kernel$", r"/rel_attn/\1"),
                 (r"/LayerNorm/", "/layer_norm/"),
                 (r"^model/lm_loss/bias$", "lm_loss/bias"),
                 (r"^model/sequnece_summary/summary/", "sequence_summary/summary/"),
                 (r"/(kernel|gamma)$", "/weight"),
                 (r"/beta$", "/bias")),
        heads=(("lm_loss", "the language-model head"), ("sequence_summary", "the sequence-classification head")),
        loader="load_tf_weights_in_xlnet",
        loader_class="XLNetLMHeadModel",
    ),
)
