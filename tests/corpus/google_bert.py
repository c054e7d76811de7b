"""A google-research BERT TF1 checkpoint, written with TensorFlow: the variables of a Hugging Face
``TFBertForPreTraining`` (same architecture, TF computes it) saved by ``tf.compat.v1.train.Saver``
under the names Google's ``modeling.py`` / ``run_pretraining.py`` give them, with the
AdamWeightDecayOptimizer slots (``<var>/adam_m``, ``<var>/adam_v``) and ``global_step``.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

# Hugging Face TF name (model prefix removed) -> google-research name. The ``cls/seq_relationship``
# kernel is stored transposed by Google, (2, hidden), read with ``transpose_b=True``.
_RENAMES = (
    (r"layer_\._(\d+)", r"layer_\1"),
    (r"embeddings/word_embeddings/weight$", "embeddings/word_embeddings"),
    (r"embeddings/(token_type|position)_embeddings/embeddings$", r"embeddings/\1_embeddings"),
    (r"^mlm___cls/predictions/bias$", "cls/predictions/output_bias"),
    (r"^mlm___cls/", "cls/"),
    (r"^nsp___cls/seq_relationship/kernel$", "cls/seq_relationship/output_weights"),
    (r"^nsp___cls/seq_relationship/bias$", "cls/seq_relationship/output_bias"),
)


def google_name(hf_name: str) -> str:
    name = hf_name.split(":")[0].split("/", 1)[1]  # drop "tf_bert_for_pre_training/"
    for pattern, replace in _RENAMES:
        name = re.sub(pattern, replace, name)
    return name


def save_google_checkpoint(tf, tf_model, prefix: Path, seed: int) -> list[str]:
    """Write ``tf_model``'s weights as a Google BERT TF1 checkpoint; returns the weight names."""
    tf1 = tf.compat.v1
    rng = np.random.default_rng(seed)
    values = {}
    for weight in tf_model.weights:  # read eagerly, before entering the TF1 graph
        name = google_name(weight.name)
        value = weight.numpy()
        values[name] = value.T.copy() if name == "cls/seq_relationship/output_weights" else value
    graph = tf.Graph()
    names = []
    with graph.as_default():
        for name, value in values.items():
            tf1.get_variable(name, initializer=value)
            for slot in ("adam_m", "adam_v"):
                tf1.get_variable(f"{name}/{slot}", initializer=rng.normal(0, 1e-3, value.shape).astype(value.dtype),
                                 trainable=False)
            names.append(name)
        tf1.train.get_or_create_global_step()
        with tf1.Session(graph=graph) as sess:
            sess.run(tf1.global_variables_initializer())
            tf1.train.Saver().save(sess, str(prefix))
    return names
