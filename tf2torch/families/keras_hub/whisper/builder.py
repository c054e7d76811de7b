"""keras-hub's WhisperBackbone: the audio encoder (two Conv1D with exact GELU, a learned position
embedding, pre-norm WhisperEncoder layers) and the text decoder (TokenAndPositionEmbedding, pre-norm
WhisperDecoder layers with causal self-attention and cross-attention to the encoder output).

Written from keras-hub 0.32's ``whisper/whisper_backbone.py``.
"""

from __future__ import annotations

from typing import Any

from ..common.args import Args, builds
from ..common.functional import FunctionalGraph
from ..common.keras_layers import CHANNELS_LAST

_GELU = "keras.src.ops.nn"


@builds("WhisperBackbone")
def whisper(args: Args) -> dict[str, Any]:
    g = FunctionalGraph(args.name, args.dtype)
    hidden, heads, inner = args.int("hidden_dim"), args.int("num_heads"), args.int("intermediate_dim")
    layers, dropout = args.int("num_layers"), args.number("dropout", 0.0)
    features = g.input("encoder_features", (None, args.int("num_mels", 80)), "float32")

    def conv(name: str, x: Any, strides: int, padding: str) -> Any:
        return g.layer("Conv1D", name, {"filters": hidden, "kernel_size": [3], "strides": [strides], "padding": padding,
                                        "data_format": CHANNELS_LAST, "dilation_rate": [1], "groups": 1,
                                        "activation": "linear", "use_bias": True}, x)

    x = g.op("Gelu", _GELU, g.auto_name("gelu"), {"approximate": False},
             conv("encoder_token_embedding_conv_layer_1", features, 1, "same"))
    x = g.layer("Padder", "encoder_padder", {}, x, module="keras_hub.src.models.whisper.whisper_backbone",
                registered="Padder")
    x = g.op("Gelu", _GELU, g.auto_name("gelu"), {"approximate": False},
             conv("encoder_token_embedding_conv_layer_2", x, 2, "valid"))
    positions = g.hub("PositionEmbedding", "encoder_position_embedding",
                      {"sequence_length": args.int("max_encoder_sequence_length", 3000) // 2, "trainable": False}, x)
    x = g.layer("Add", "encoder_embeddings_add", {}, (x, positions))
    x = g.layer("Dropout", "encoder_embeddings_dropout", {"rate": dropout}, x)
    block = {"intermediate_dim": inner, "num_heads": heads, "dropout": dropout, "activation": "gelu",
             "layer_norm_epsilon": 1e-5, "normalize_first": True}
    for i in range(layers):
        x = g.hub("WhisperEncoder", f"transformer_encoder_layer_{i}", block, x)
    encoded = g.layer("LayerNormalization", "encoder_layer_norm", {"axis": [-1], "epsilon": 1e-5}, x)

    ids = g.input("decoder_token_ids", (None,), "int32")
    x = g.hub("TokenAndPositionEmbedding", "decoder_token_and_position_embedding", {
        "vocabulary_size": args.int("vocabulary_size"), "sequence_length": args.int("max_decoder_sequence_length", 448),
        "embedding_dim": hidden}, ids)
    x = g.layer("Dropout", "decoder_embeddings_dropout", {"rate": dropout}, x)
    mask = g.input("decoder_padding_mask", (None,), "int32")
    for i in range(layers):  # called with keywords only, as keras-hub does
        x = g.hub("WhisperDecoder", f"transformer_decoder_layer_{i}", block, decoder_sequence=x,
                  encoder_sequence=encoded, decoder_padding_mask=mask)
    decoded = g.layer("LayerNormalization", "decoder_layer_norm", {"axis": [-1], "epsilon": 1e-5}, x)
    return g.model(args.class_name, {"encoder_sequence_output": encoded, "decoder_sequence_output": decoded})
