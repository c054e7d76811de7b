"""google-research TAPAS: BERT's names under ``bert/`` with seven token-type tables
``embeddings/token_type_embeddings_<i>``, and top-level heads: cell selection ``output_weights`` (hidden,)
and ``output_bias`` (a scalar), ``column_output_weights|bias``, aggregation ``output_weights_agg|bias_agg``
(stored (labels, hidden): torch's layout already), classification ``output_weights_cls|bias_cls``. The
next-sentence head ``cls/seq_relationship`` has no place in any transformers class (its loader skipped it)."""

from __future__ import annotations

from . import Convention
from ._common import BERT_LEAVES, TAPAS_SIGNATURE

CONVENTIONS = (
    Convention(
        name="google-research TAPAS",
        model_types=("tapas",),
        bare="TapasModel",
        detect=TAPAS_SIGNATURE,
        skips=((r"^cls/seq_relationship/", "TAPAS's next-sentence pretraining head: no transformers class has it"),),
        renames=((r"^bert/", "tapas/"),
                 (r"_embeddings_(\d+)$", r"_embeddings_\1/weight"),
                 (r"^output_(weights|bias)_agg$", r"aggregation_classifier/\1"),
                 (r"^output_(weights|bias)_cls$", r"classifier/\1"),
                 (r"^(aggregation_classifier|classifier)/weights$", r"\1/weight"),
                 *BERT_LEAVES),  # (top-level output_weights / output_bias are the keys themselves)
        heads=(("output_weights", "the cell-selection head"), ("output_bias", "the cell-selection head"),
               ("column_output_weights", "the column-selection head"),
               ("column_output_bias", "the column-selection head"),
               ("aggregation_classifier", "the aggregation head"), ("classifier", "the classification head"),
               ("cls.predictions", "the masked-LM head"), ("tapas.pooler", "the pooler")),
        layouts=((r"^(aggregation_classifier|classifier)\.weight$", "identity"),),  # stored (out, in)
        loader="load_tf_weights_in_tapas",
    ),
)
