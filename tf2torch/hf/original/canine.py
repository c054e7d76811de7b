"""google-research CANINE (``language/canine/modeling.py``): the character embeddings under ``char_embeddings/``
(the hash embedders ``embeddings/HashBucketCodepointEmbedder_<i>``, ``char_position_embeddings``,
``segment_embeddings``: transformers' ``token_type_embeddings``, ``LayerNorm``); the shallow local encoder
``initial_char_encoder/layer_0/...``; the downsampling conv, built inside that scope by a function that opens
``initial_char_encoder/chars_to_molecules`` again (``initial_char_encoder/initial_char_encoder/
chars_to_molecules/conv``: transformers' ``chars_to_molecules``); the deep stack ``bert/layer_<i>/...`` (no
``encoder/`` scope: ``encoder.layer``); the upsampling conv ``final_char_encoder/conv`` and its ``LayerNorm``
(``projection``) beside the final encoder's ``final_char_encoder/layer_0``; the ``pooler/dense``. Conv kernels
are tf.layers.conv1d's (K, in, out), taken to (out, in, K) by the module type, as the loader's transpose.
The pretraining heads (``cls``, ``autoregressive_decoder``, ``char_output_weights``) no transformers class has;
the release's config names ``max_positions`` (transformers' ``max_position_embeddings``)."""

from __future__ import annotations

from . import Convention
from ._common import BERT_LEAVES

CONVENTIONS = (
    Convention(
        name="google-research CANINE",
        model_types=("canine",),
        bare="CanineModel",
        detect=r"^char_embeddings/embeddings/HashBucketCodepointEmbedder_\d+$",
        skips=((r"(^|/)(cls|autoregressive_decoder|char_output_weights)(/|$)",
                "CANINE's pretraining head, which no transformers class has (transformers' loader skips it too)"),),
        renames=((r"^char_embeddings/embeddings/(HashBucketCodepointEmbedder_\d+)$", r"char_embeddings/\1/weight"),
                 (r"^char_embeddings/segment_embeddings$", "char_embeddings/token_type_embeddings"),
                 (r"^initial_char_encoder/initial_char_encoder/chars_to_molecules/", "chars_to_molecules/"),
                 (r"^final_char_encoder/(conv|LayerNorm)/", r"projection/\1/"),
                 (r"^bert/", "encoder/"),
                 *BERT_LEAVES),
        config_keys=(("max_positions", "max_position_embeddings"),),
        loader="load_tf_weights_in_canine",
        loader_class="CanineModel",
    ),
)
