"""keras-hub language-model Tasks whose head reuses the backbone's token embedding: the masked LMs (BERT,
ALBERT, RoBERTa, DistilBERT) and T5's sequence-to-sequence LM.

Keras saves a layer shared by the backbone and the head once, with the backbone. The masked LMs'
``MaskedLMHead`` keeps its own Dense, LayerNorm and output bias (saved under the head) and calls the
backbone's embedding in reverse: its graph is keras-hub's, with the head's ``token_embedding`` written as
the place of that layer in the graph (its converter calls that one module: ``families/keras_hub/tasks/converters.py``).
T5's head is only the embedding in reverse, so the call is written inside the backbone, as a causal LM's is
(``tasks.causal_lm``).

Written from keras-hub 0.32's ``masked_lm_head.py``, ``*_masked_lm.py`` and ``t5_seq_2_seq_lm.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..common.args import Args, builds
from ..common.functional import Ref
from ..common.keras_layers import GELU_TANH
from .builder import Head

# Task -> (the backbone layer that is or holds ``backbone.token_embedding``, its class, whether it is that
# layer's ``token_embedding`` sublayer, the head's intermediate activation, whether the backbone returns a dict)
_MASKED_LMS = {
    "BertMaskedLM": ("token_embedding", "ReversibleEmbedding", False, "gelu", True),
    "AlbertMaskedLM": ("token_embedding", "ReversibleEmbedding", False, GELU_TANH, True),
    "RobertaMaskedLM": ("embeddings", "TokenAndPositionEmbedding", True, "gelu", False),
    "DistilBertMaskedLM": ("token_and_position_embedding", "TokenAndPositionEmbedding", True, "gelu", False),
}


def _layer(head: Head, name: str, class_name: str) -> dict[str, Any]:
    """The backbone's layer entry ``name`` (of ``class_name``), which the head calls."""
    entry = next((e for e in head.backbone["config"]["layers"] if e.get("name") == name), None)
    if entry is None or entry.get("class_name") != class_name:
        raise head.args.fail("backbone", f"a backbone with a {class_name} {name!r}")
    return entry


@builds(*_MASKED_LMS)
def masked_lm(args: Args) -> dict[str, Any]:
    """The backbone's sequence output gathered at ``mask_positions`` (a new int input) by the MaskedLMHead,
    which keras-hub builds with the backbone's vocabulary, token embedding and the family's activation."""
    layer, class_name, sublayer, activation, keyed = _MASKED_LMS[args.class_name]
    head = Head(args)
    _layer(head, layer, class_name)
    embedding = head.backbone["config"]["name"], layer, *(("token_embedding",) if sublayer else ())
    positions = head.g.input("mask_positions", (None,), "int32")
    x = head.output("sequence_output") if keyed else head.out
    # keras-hub passes no epsilon or output activation: MaskedLMHead's defaults (1e-5, logits)
    config = {"vocabulary_size": head.backbone_arg("vocabulary_size"), "token_embedding": {"shared": list(embedding)},
              "intermediate_activation": activation, "activation": "linear", "layer_norm_epsilon": 1e-05}
    return head.model(head.g.hub("MaskedLMHead", "mlm_head", config, x, positions))


@builds("T5Seq2SeqLM")
def t5_seq2seq_lm(args: Args) -> dict[str, Any]:
    """The decoder's output through the shared token embedding in reverse (scaled by hidden_dim ** -0.5
    first when the embedding is tied), written inside the backbone as a third output, ``logits``: keras-hub
    calls both after the backbone, in the Task's graph (``tasks.causal_lm`` says why it is moved)."""
    head = Head(args)
    config = head.backbone["config"]
    embedding = _layer(head, "token_embedding", "ReversibleEmbedding")
    outputs = config["output_layers"]
    if not isinstance(outputs, dict) or "decoder_sequence_output" not in outputs or "logits" in outputs:
        raise args.fail("backbone", "a T5 backbone returning its encoder and decoder outputs")
    x = Ref(*outputs["decoder_sequence_output"])
    if embedding["config"]["tie_weights"]:
        taken = {e["name"] for e in config["layers"]}
        name = next(n for n in ("multiply", *(f"multiply_{i}" for i in range(1, len(taken) + 1))) if n not in taken)
        # ops.multiply(x, ops.cast(hidden_dim ** -0.5, x.dtype)): Keras saves the constant as a float32 tensor
        scale = {"class_name": "__tensor__", "config": {
            "value": float(np.float32(head.backbone_arg("hidden_dim") ** -0.5)), "dtype": "float32"}}
        config["layers"].append({"module": "keras.src.ops.numpy", "class_name": "Multiply", "registered_name": "Multiply",
                                 "config": {"name": name}, "name": name,
                                 "inbound_nodes": [{"args": [x.serialize(), scale], "kwargs": {}}]})
        x = Ref(name)
    embedding["inbound_nodes"].append({"args": [x.serialize()], "kwargs": {"reverse": True}})
    outputs["logits"] = ["token_embedding", len(embedding["inbound_nodes"]) - 1, 0]
    return head.model(head.output("logits"))

