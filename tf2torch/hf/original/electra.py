"""google-research ELECTRA: one checkpoint holds two models. The discriminator is ``electra/...`` with its
head ``discriminator_predictions/dense`` and ``dense_1`` (transformers' ``dense_prediction``); the generator
is ``generator/...`` with ``generator_predictions/...`` (its ``output_bias`` is ``generator_lm_head.bias``),
and shares the discriminator's ``electra/embeddings`` (untied generator embeddings are not covered: both
tables would claim one key, and the conversion fails). ``ElectraForMaskedLM`` is the generator, every
other class the discriminator; the other model's weights are skipped by rule, with a note."""

from __future__ import annotations

from . import Convention
from ._common import BERT_LEAVES, CONVBERT_SIGNATURE

GENERATOR = "ELECTRA's generator, a second model in the checkpoint (convert it with --hf-class ElectraForMaskedLM " \
            "and the generator's config)"
DISCRIMINATOR = "ELECTRA's discriminator, the other model in the checkpoint (the target is the generator)"

CONVENTIONS = (
    Convention(
        name="ELECTRA generator",
        model_types=("electra",),
        bare="ElectraModel",
        classes=("ElectraForMaskedLM",),
        detect=r"^generator/encoder/layer_\d+/",
        skips=((r"^electra/(encoder|embeddings_project|pooler)/", DISCRIMINATOR),
               (r"^discriminator_predictions/", DISCRIMINATOR),
               (r"(^|/)temperature$", "the pretraining's sampling temperature, not a weight")),
        renames=((r"^generator/", "electra/"),
                 (r"^generator_predictions/output_bias$", "generator_lm_head/bias"),
                 *BERT_LEAVES),
        heads=(("generator_predictions", "the generator's masked-LM head"),
               ("generator_lm_head", "the generator's masked-LM head")),
        loader="load_tf_weights_in_electra",
        loader_class="ElectraForMaskedLM",
        loader_kwargs=(("discriminator_or_generator", "generator"),),
    ),
    Convention(
        name="ELECTRA discriminator",
        model_types=("electra",),
        bare="ElectraModel",
        detect=r"^electra/encoder/layer_\d+/attention/self/query/kernel$",
        unless=CONVBERT_SIGNATURE,  # ConvBERT's checkpoints keep ELECTRA's electra/ names
        skips=((r"^generator(_predictions)?/", GENERATOR),
               (r"(^|/)temperature$", "the pretraining's sampling temperature, not a weight")),
        renames=((r"^discriminator_predictions/dense_1/", "discriminator_predictions/dense_prediction/"),
                 *BERT_LEAVES),
        heads=(("discriminator_predictions", "the discriminator's replaced-token head"),),
        loader="load_tf_weights_in_electra",
        loader_class="ElectraForPreTraining",
        loader_kwargs=(("discriminator_or_generator", "discriminator"),),
    ),
)
