"""laiguokun Funnel-Transformer: ``model/input/word_embedding/lookup_table`` and ``input/layer_norm``
(transformers' ``embeddings``), then one flat ``layer_<k>`` numbering: the encoder's blocks in order
(``encoder.blocks.<b>.<j>`` by the config's ``block_sizes``), continued by the decoder's (``decoder.layers``),
as the 4.57 loader walked it. Each layer's ``rel_attn``: ``q|k|v/kernel`` (d_model, n_head, d_head) and
``k|v/bias`` (n_head, d_head) onto one Linear each (``q_head`` ...), ``o/kernel`` (n_head, d_head, d_model)
onto ``post_proj``, ``r/kernel`` (``r_kernel``), ``r_w_bias``, ``r_r_bias``, ``r_s_bias``, ``seg_embed`` as
they are; ``ff/layer_1|layer_2`` (``ffn.linear_1|2``). The pretraining's ``generator/`` is another model."""

from __future__ import annotations

from typing import Any

from . import Convention


def _layers(config: Any) -> tuple[tuple[str, str], ...]:
    out: list[tuple[str, str]] = []
    k = 0
    for block, size in enumerate(config.block_sizes):
        for j in range(size):
            out.append((rf"^model/encoder/layer_{k}/", f"funnel/encoder/blocks/{block}/{j}/"))
            k += 1
    for j in range(config.num_decoder_layers):  # the decoder's numbering continues the encoder's
        out.append((rf"^model/decoder/layer_{k + j}/", f"funnel/decoder/layers/{j}/"))
    return tuple(out)


CONVENTIONS = (
    Convention(
        name="laiguokun Funnel-Transformer",
        model_types=("funnel",),
        bare="FunnelModel",
        detect=r"^model/encoder/layer_\d+/rel_attn/q/kernel$",
        indexed=_layers,
        renames=((r"^model/input/word_embedding/lookup_table$", "funnel/embeddings/word_embeddings/weight"),
                 (r"^model/input/", "funnel/embeddings/"),
                 (r"/rel_attn/(q|k|v)/", r"/attention/\1_head/"),
                 (r"/rel_attn/o/", "/attention/post_proj/"),
                 (r"/rel_attn/r/kernel$", "/attention/r_kernel"),
                 (r"/rel_attn/", "/attention/"),
                 (r"/ff/layer_(\d)/", r"/ffn/linear_\1/"),
                 (r"/ff/", "/ffn/"),
                 (r"/(kernel|gamma)$", "/weight"),
                 (r"/beta$", "/bias")),
        skips=((r"^generator/", "the pretraining's generator, another model (transformers' loader skips it too)"),),
        heads=(("funnel.decoder", "the decoder (FunnelBaseModel has none)"),),
        layouts=((r"\.attention\.(q|k|v)_head\.weight$", "mha_in_kernel"),
                 (r"\.attention\.(k|v)_head\.bias$", "mha_in_bias"),
                 (r"\.attention\.post_proj\.weight$", "mha_out_kernel")),
        loader="load_tf_weights_in_funnel",
    ),
)
