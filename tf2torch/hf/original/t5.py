"""mesh-TF T5 (T5 v1.0 / v1.1, mT5): ``encoder/block_000/layer_000/SelfAttention/q|k|v|o`` (kernels with no
``kernel`` leaf, stored (in, out)), ``relative_attention_bias`` stored (heads, buckets) where torch's
embedding is (buckets, heads), ``layer_norm/scale`` (or ``rms_norm/scale``), ``DenseReluDense/wi|wo`` (v1.1:
``wi_0``, ``wi_1``), ``final_layer_norm/scale``, ``shared/embedding``, and v1.1's untied LM head
``decoder/logits/kernel``. Adafactor's ``<var>_slot_vr|vc|v`` are optimizer state (``readers.roles``)."""

from __future__ import annotations

from . import Convention

CONVENTIONS = (
    Convention(
        name="mesh-TF T5",
        model_types=("t5", "mt5"),
        bare="T5Model",
        detect=r"^encoder/block_\d+/layer_\d+/SelfAttention/q$",
        renames=((r"^(encoder|decoder)/block_0*(\d+)/layer_0*(\d+)/", r"\1/block/\2/layer/\3/"),
                 (r"/layer/(\d+)/rms_norm/", r"/layer/\1/layer_norm/"),
                 (r"^(encoder|decoder)/rms_norm/", r"\1/final_layer_norm/"),
                 (r"/(SelfAttention|EncDecAttention)/(q|k|v|o|relative_attention_bias)$", r"/\1/\2/weight"),
                 (r"^shared/embedding$", "shared/weight"),
                 (r"^decoder/logits/kernel$", "lm_head/weight"),
                 (r"/(kernel|scale)$", "/weight")),
        heads=(("lm_head", "the untied LM head (T5 v1.1)"), ("decoder", "the decoder")),
        layouts=((r"\.relative_attention_bias\.weight$", "swap_axes"),),
        loader="load_tf_weights_in_t5",
        loader_class="T5ForConditionalGeneration",
    ),
)
