"""YituTech ConvBERT (an ELECTRA-style pretraining, names under ``electra/``): BERT's layers plus the
span-based dynamic convolution in each attention (``conv_attn_key``: a separable 1-D conv, depthwise
``(K, C, 1)`` and pointwise ``(1, C, O)`` kernels, with a ``(O,)`` bias torch keeps as a ``(O, 1)`` column;
``conv_attn_kernel``, ``conv_attn_point``: dense) and, with ``num_groups > 1``, grouped feed-forwards
``g_dense`` whose kernel is stored ``(groups, in, out)`` as torch's ``GroupedLinearLayer`` keeps it.
transformers 4.57's loader fills the bare ``ConvBertModel``; the discriminator's head and the generator
are other models here (no transformers ConvBERT class has them)."""

from __future__ import annotations

from . import Convention
from ._common import BERT_LEAVES, CONVBERT_SIGNATURE

GENERATOR = "ConvBERT's pretraining generator, a second model in the checkpoint (transformers' loader reads " \
            "only the discriminator's body)"

CONVENTIONS = (
    Convention(
        name="YituTech ConvBERT",
        model_types=("convbert",),
        bare="ConvBertModel",
        detect=CONVBERT_SIGNATURE,
        renames=((r"^electra/", "convbert/"),
                 (r"/conv_attn_key/(depthwise|pointwise)_kernel$", r"/key_conv_attn_layer/\1/weight"),
                 (r"/conv_attn_key/bias$", "/key_conv_attn_layer/bias"),
                 (r"/conv_attn_kernel/", "/conv_kernel_layer/"),
                 (r"/conv_attn_point/", "/conv_out_layer/"),
                 (r"/g_dense/", "/dense/"),
                 *BERT_LEAVES),
        skips=((r"^generator(_predictions)?/", GENERATOR),),
        heads=(("discriminator_predictions", "the discriminator's replaced-token head"),),
        layouts=((r"\.key_conv_attn_layer\.bias$", "column"),),
        loader="load_tf_weights_in_convbert",
        loader_class="ConvBertModel",
    ),
)
