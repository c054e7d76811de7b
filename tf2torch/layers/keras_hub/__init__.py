"""Converters for keras-hub's layers (registered as ``keras_hub>Class``) and the Keras layers keras-hub
models are built from (``ReversibleEmbedding``). Each module registers its converters on import."""

from . import dinov2, efficientnet, embeddings, encoder, hgnetv2, llm, masked_lm, mit, mobilenet, t5, vit  # noqa: F401  (registration)
