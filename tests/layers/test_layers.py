"""One-layer (or tiny) Keras models per converter, converted and compared with Keras.

Each case builds a model with the real Keras, randomises every weight (seeded), saves it as ``.keras``
and ``.h5`` (Keras 3) or ``.h5`` (Keras 2, ``tf_keras``: its activation definitions and config
dialect differ), converts it in memory and compares outputs on seeded inputs within 1e-5.
Sizes are chosen so TF 'SAME' is asymmetric where it can be (odd totals: the extra pixel goes to the
bottom/right) and so a sequence's length differs from its channel count (the layout is read from the
shapes).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from tests.conftest import require_keras
from tests.layers.harness import check_file, import_isolated, inputs_for, randomise, ruff_check
from tests.util import convert_in_memory
from tf2torch.errors import UnsupportedError

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

# float32 end to end: a layer or two differ by a few ulps (~1e-7 relative); 1e-5 is the brief's bound.
RTOL = ATOL = 1e-5


@dataclass(frozen=True)
class Case:
    build: Callable[[Any], Any]  # (keras module) -> model
    keras2: bool = False  # build with tf_keras and save .h5 only
    scale: float = 1.0  # input scale (activations with kinks at +-3 need a wider range)
    sizes: dict[int, tuple] | None = None  # input index -> shape, for unknown dims
    options: dict[str, Any] = field(default_factory=dict)  # convert options (channels_last, input_shape)
    ints: int = 0  # > 0: integer inputs in [0, ints) (Embedding)
    zero_steps: bool = False  # some time steps of the inputs all zeros (what Masking(0.0) masks)
    note: str = ""  # a substring the conversion notes must contain
    formats: tuple[str, ...] = ("keras", "h5")  # Keras 3 formats (Keras 2 cases: .h5 only)


def seq(*shapes: tuple, layers: Callable[[Any], list] | None = None, merge: Callable | None = None):
    """A builder: Input(s) of ``shapes``, then ``layers(keras)`` applied in turn (or ``merge`` on all)."""

    def build(keras: Any) -> Any:
        inputs = [keras.Input(s, name=f"in{i}") for i, s in enumerate(shapes)]
        if merge is not None:
            return keras.Model(inputs, merge(keras)(inputs), name="m")
        x = inputs[0]
        for layer in layers(keras):
            x = layer(x)
        return keras.Model(inputs[0], x, name="m")

    return build


def _causal(layer: Any) -> Callable[[list], Any]:
    return lambda inputs: layer(inputs, use_causal_mask=True)


def one(shape: tuple, make: Callable[[Any], Any]) -> Callable[[Any], Any]:
    return seq(shape, layers=lambda k: [make(k.layers)])


IMG, SEQ, VOL = (9, 10, 3), (11, 3), (6, 7, 5, 2)

CASES: dict[str, Case] = {
    # --- convolutions ---------------------------------------------------------------------------------
    "conv1d-valid-k3": Case(one(SEQ, lambda L: L.Conv1D(4, 3))),
    "conv1d-same-k4-s2": Case(one(SEQ, lambda L: L.Conv1D(4, 4, strides=2, padding="same"))),
    "conv1d-same-k3-d2": Case(one(SEQ, lambda L: L.Conv1D(4, 3, dilation_rate=2, padding="same"))),
    "conv1d-causal-k3-d2": Case(one(SEQ, lambda L: L.Conv1D(5, 3, dilation_rate=2, padding="causal"))),
    "conv1d-groups2": Case(one((11, 4), lambda L: L.Conv1D(6, 3, groups=2))),
    "conv2d-valid-k3": Case(one(IMG, lambda L: L.Conv2D(4, 3))),
    "conv2d-valid-k3-s2-nobias": Case(one(IMG, lambda L: L.Conv2D(4, 3, strides=2, use_bias=False))),
    "conv2d-same-k3-s1": Case(one(IMG, lambda L: L.Conv2D(4, 3, padding="same"))),
    "conv2d-same-k3-s2": Case(one(IMG, lambda L: L.Conv2D(4, 3, strides=2, padding="same"))),
    "conv2d-same-k4-s1": Case(one(IMG, lambda L: L.Conv2D(4, 4, padding="same"))),
    "conv2d-same-k5x3-s2x1": Case(one(IMG, lambda L: L.Conv2D(4, (5, 3), strides=(2, 1), padding="same"))),
    "conv2d-same-k3-d2": Case(one(IMG, lambda L: L.Conv2D(4, 3, dilation_rate=2, padding="same"))),
    "conv2d-groups2-relu": Case(one((8, 9, 4), lambda L: L.Conv2D(6, 3, groups=2, padding="same",
                                                                 activation="relu"))),
    "conv3d-valid-k3": Case(one(VOL, lambda L: L.Conv3D(3, 3))),
    "conv3d-same-k3-s2": Case(one(VOL, lambda L: L.Conv3D(3, 3, strides=2, padding="same"))),
    "depthwise2d-same-s2-mult2": Case(one(IMG, lambda L: L.DepthwiseConv2D(3, strides=2, padding="same",
                                                                          depth_multiplier=2))),
    "depthwise2d-valid": Case(one(IMG, lambda L: L.DepthwiseConv2D(3, use_bias=False))),
    "depthwise1d-same-mult2": Case(one(SEQ, lambda L: L.DepthwiseConv1D(3, padding="same",
                                                                       depth_multiplier=2))),
    "separable2d-same-mult2": Case(one(IMG, lambda L: L.SeparableConv2D(5, 3, padding="same",
                                                                       depth_multiplier=2))),
    "separable2d-valid-s2": Case(one(IMG, lambda L: L.SeparableConv2D(5, 3, strides=2, activation="relu"))),
    "separable1d-same-s2": Case(one(SEQ, lambda L: L.SeparableConv1D(5, 3, strides=2, padding="same"))),
    "transpose2d-same-k3-s1": Case(one(IMG, lambda L: L.Conv2DTranspose(4, 3, padding="same"))),
    "transpose2d-same-k3-s2": Case(one(IMG, lambda L: L.Conv2DTranspose(4, 3, strides=2, padding="same"))),
    "transpose2d-same-k4-s2": Case(one(IMG, lambda L: L.Conv2DTranspose(4, 4, strides=2, padding="same"))),
    "transpose2d-same-k2-s1": Case(one(IMG, lambda L: L.Conv2DTranspose(4, 2, padding="same"))),
    "transpose2d-valid-k3-s2": Case(one(IMG, lambda L: L.Conv2DTranspose(4, 3, strides=2))),
    "transpose2d-valid-k2-s1-nobias": Case(one(IMG, lambda L: L.Conv2DTranspose(4, 2, use_bias=False))),
    "transpose1d-same-k3-s2": Case(one(SEQ, lambda L: L.Conv1DTranspose(4, 3, strides=2, padding="same"))),
    "transpose3d-same-k3-s2": Case(one(VOL, lambda L: L.Conv3DTranspose(3, 3, strides=2, padding="same"))),
    # --- dense ----------------------------------------------------------------------------------------
    "dense": Case(one((7,), lambda L: L.Dense(5))),
    "dense-relu-nobias": Case(one((7,), lambda L: L.Dense(5, activation="relu", use_bias=False))),
    "dense-rank3": Case(one((5, 7), lambda L: L.Dense(6))),
    "dense-after-flatten": Case(seq((6, 7, 3), layers=lambda k: [k.layers.Conv2D(4, 3), k.layers.Flatten(),
                                                                  k.layers.Dense(5)])),
    "embedding": Case(one((6,), lambda L: L.Embedding(20, 4)), ints=20),
    # Masks (ids of 0 in [0, 3): about a third of the steps, at the start, middle and end): masked steps
    # carry the recurrent state and repeat the previous output, as Keras computes them.
    "masked-lstm": Case(seq((9,), layers=lambda k: [k.layers.Embedding(3, 4, mask_zero=True), k.layers.LSTM(5)]),
                        ints=3),
    "masked-gru-sequences-dense": Case(seq((9,), layers=lambda k: [
        k.layers.Embedding(3, 4, mask_zero=True), k.layers.Dropout(0.2), k.layers.GRU(5, return_sequences=True),
        k.layers.Dense(2), k.layers.SimpleRNN(3, go_backwards=True)]), ints=3),
    "masked-lstm-keras2": Case(seq((9,), layers=lambda k: [k.layers.Embedding(3, 4, mask_zero=True),
                                                            k.layers.Dropout(0.1), k.layers.LSTM(5)]),
                               ints=3, keras2=True),  # tf_keras: the mask is implicit (compute_mask)
    "masking-layer-lstm": Case(seq((7, 3), layers=lambda k: [k.layers.Masking(0.0), k.layers.LSTM(4, return_sequences=True)]),
                               zero_steps=True),
    # --- normalisation --------------------------------------------------------------------------------
    "batchnorm-image": Case(one(IMG, lambda L: L.BatchNormalization())),
    "batchnorm-no-center": Case(one(IMG, lambda L: L.BatchNormalization(center=False))),
    "batchnorm-no-scale": Case(one(IMG, lambda L: L.BatchNormalization(scale=False, epsilon=1e-5))),
    "batchnorm-no-center-no-scale": Case(one(IMG, lambda L: L.BatchNormalization(center=False, scale=False))),
    "batchnorm-vector": Case(one((7,), lambda L: L.BatchNormalization())),
    "batchnorm-after-conv1d": Case(seq(SEQ, layers=lambda k: [k.layers.Conv1D(4, 3),
                                                               k.layers.BatchNormalization()])),
    "layernorm-seq": Case(one((5, 8), lambda L: L.LayerNormalization())),
    "layernorm-image-channels": Case(one(IMG, lambda L: L.LayerNormalization(epsilon=1e-6))),
    "layernorm-image-all-axes": Case(one(IMG, lambda L: L.LayerNormalization(axis=[1, 2, 3]))),
    "layernorm-no-center": Case(one((5, 8), lambda L: L.LayerNormalization(center=False))),
    "rescaling": Case(one(IMG, lambda L: L.Rescaling(1 / 127.5, offset=-1.0))),
    "rescaling-per-channel": Case(one(IMG, lambda L: L.Rescaling([0.5, 2.0, 4.0], offset=[0.1, 0.0, -0.3]))),
    "normalization-adapted": Case(one(IMG, lambda L: L.Normalization())),
    "normalization-config": Case(one(IMG, lambda L: L.Normalization(mean=[0.485, 0.456, 0.406],
                                                                     variance=[0.052, 0.050, 0.051]))),
    "normalization-config-scalar": Case(one((7,), lambda L: L.Normalization(mean=0.5, variance=4.0))),
    # --- activations ----------------------------------------------------------------------------------
    **{f"activation-{name}": Case(one(IMG, lambda L, n=name: L.Activation(n)), scale=3.0)
       for name in ("relu", "relu6", "sigmoid", "tanh", "swish", "silu", "gelu", "hard_swish", "hard_silu",
                    "hard_sigmoid", "elu", "selu", "softmax", "log_softmax", "softplus", "softsign",
                    "leaky_relu", "mish", "exponential", "linear", "hard_tanh", "log_sigmoid", "tanh_shrink",
                    "celu", "soft_shrink", "hard_shrink")},
    **{f"keras2-activation-{name}": Case(one(IMG, lambda L, n=name: L.Activation(n)), keras2=True, scale=3.0)
       for name in ("relu", "relu6", "swish", "gelu", "hard_sigmoid", "elu", "selu", "softmax", "leaky_relu",
                    "mish", "softplus")},
    "activation-softmax-seq": Case(one((5, 7), lambda L: L.Activation("softmax"))),
    "conv2d-activation-swish": Case(one(IMG, lambda L: L.Conv2D(4, 3, activation="swish"))),
    "relu-plain": Case(one(IMG, lambda L: L.ReLU())),
    "relu-max6": Case(one(IMG, lambda L: L.ReLU(max_value=6.0)), scale=5.0),
    "relu-slope-threshold-max": Case(one(IMG, lambda L: L.ReLU(max_value=2.5, negative_slope=0.1,
                                                                threshold=0.5)), scale=3.0),
    "relu-slope": Case(one(IMG, lambda L: L.ReLU(negative_slope=0.2))),
    "leakyrelu": Case(one(IMG, lambda L: L.LeakyReLU(negative_slope=0.1))),
    "keras2-leakyrelu-default": Case(one(IMG, lambda L: L.LeakyReLU()), keras2=True),
    "elu-layer": Case(one(IMG, lambda L: L.ELU(alpha=0.5))),
    "keras2-thresholded-relu": Case(one(IMG, lambda L: L.ThresholdedReLU(theta=0.5)), keras2=True),
    "softmax-layer-image": Case(one(IMG, lambda L: L.Softmax())),
    "softmax-layer-axis1": Case(one((5, 7), lambda L: L.Softmax(axis=1))),
    "prelu-shared-hw": Case(one(IMG, lambda L: L.PReLU(shared_axes=[1, 2]))),
    "prelu-vector": Case(one((7,), lambda L: L.PReLU())),
    "prelu-shared-all": Case(one(IMG, lambda L: L.PReLU(shared_axes=[1, 2, 3]))),
    # --- padding, cropping ----------------------------------------------------------------------------
    "zeropad2d-asym": Case(one(IMG, lambda L: L.ZeroPadding2D(((1, 2), (3, 0))))),
    "zeropad2d-int": Case(one(IMG, lambda L: L.ZeroPadding2D(1))),
    "zeropad1d": Case(one(SEQ, lambda L: L.ZeroPadding1D((2, 1)))),
    "zeropad3d": Case(one(VOL, lambda L: L.ZeroPadding3D(1))),
    "crop2d": Case(one(IMG, lambda L: L.Cropping2D(((1, 2), (0, 1))))),
    "crop1d": Case(one(SEQ, lambda L: L.Cropping1D((1, 2)))),
    "crop3d": Case(one(VOL, lambda L: L.Cropping3D(1))),
    "zeropad-conv-valid-s2": Case(seq(IMG, layers=lambda k: [k.layers.ZeroPadding2D(((0, 1), (0, 1))),
                                                              k.layers.Conv2D(4, 3, strides=2)])),
    # --- pooling --------------------------------------------------------------------------------------
    "maxpool1d-valid": Case(one(SEQ, lambda L: L.MaxPooling1D(2))),
    "maxpool1d-same-s2": Case(one(SEQ, lambda L: L.MaxPooling1D(3, strides=2, padding="same"))),
    "avgpool1d-same-k2-s1": Case(one(SEQ, lambda L: L.AveragePooling1D(2, strides=1, padding="same"))),
    "maxpool2d-valid": Case(one(IMG, lambda L: L.MaxPooling2D())),
    "maxpool2d-same-k3-s2": Case(one(IMG, lambda L: L.MaxPooling2D(3, strides=2, padding="same"))),
    "maxpool2d-same-k2-s3": Case(one(IMG, lambda L: L.MaxPooling2D(2, strides=3, padding="same"))),
    "avgpool2d-valid-k3-s2": Case(one(IMG, lambda L: L.AveragePooling2D(3, strides=2))),
    "avgpool2d-same-k3-s2": Case(one(IMG, lambda L: L.AveragePooling2D(3, strides=2, padding="same"))),
    "avgpool2d-same-k3-s1": Case(one(IMG, lambda L: L.AveragePooling2D(3, strides=1, padding="same"))),
    "avgpool2d-same-k2-s1": Case(one(IMG, lambda L: L.AveragePooling2D(2, strides=1, padding="same"))),
    "maxpool3d-valid": Case(one(VOL, lambda L: L.MaxPooling3D(2))),
    "avgpool3d-same": Case(one(VOL, lambda L: L.AveragePooling3D(2, padding="same"))),
    "maxpool3d-same-s2": Case(one(VOL, lambda L: L.MaxPooling3D(3, strides=2, padding="same"))),
    **{f"{kind}-{n}d{'-keepdims' if keep else ''}":
       Case(one({1: SEQ, 2: IMG, 3: VOL}[n], lambda L, k=kind, n=n, kd=keep: getattr(L, f"{k}{n}D")(keepdims=kd)))
       for kind in ("GlobalAveragePooling", "GlobalMaxPooling") for n in (1, 2, 3) for keep in (False, True)},
    # --- merges ---------------------------------------------------------------------------------------
    **{f"merge-{name.lower()}": Case(seq(IMG, IMG, merge=lambda k, n=name: getattr(k.layers, n)()))
       for name in ("Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum")},
    "merge-add-three": Case(seq(IMG, IMG, IMG, merge=lambda k: k.layers.Add())),
    "concat-image-channels": Case(seq(IMG, (9, 10, 2), merge=lambda k: k.layers.Concatenate())),
    "concat-image-axis1": Case(seq(IMG, (4, 10, 3), merge=lambda k: k.layers.Concatenate(axis=1))),
    "concat-image-axis2": Case(seq(IMG, (9, 5, 3), merge=lambda k: k.layers.Concatenate(axis=2))),
    "concat-vector": Case(seq((7,), (4,), merge=lambda k: k.layers.Concatenate(axis=1))),
    "concat-seq-axis1": Case(seq((5, 8), (4, 8), merge=lambda k: k.layers.Concatenate(axis=1))),
    # --- shapes ---------------------------------------------------------------------------------------
    "flatten-image": Case(one(IMG, lambda L: L.Flatten())),
    "flatten-seq": Case(one(SEQ, lambda L: L.Flatten())),
    "reshape-vector-to-image-conv": Case(seq((24,), layers=lambda k: [
        k.layers.Reshape((2, 3, 4)), k.layers.Conv2D(3, 2, padding="same")])),
    "reshape-image-minus1": Case(one((4, 6, 2), lambda L: L.Reshape((-1, 6)))),
    "permute-seq": Case(one((5, 8), lambda L: L.Permute((2, 1)))),
    "permute-image": Case(one(IMG, lambda L: L.Permute((2, 1, 3)))),
    "repeatvector": Case(one((5,), lambda L: L.RepeatVector(3))),
    "upsampling2d-nearest": Case(one(IMG, lambda L: L.UpSampling2D())),
    "upsampling2d-nearest-2x3": Case(one(IMG, lambda L: L.UpSampling2D((2, 3)))),
    "upsampling2d-bilinear": Case(one(IMG, lambda L: L.UpSampling2D(interpolation="bilinear"))),
    "upsampling2d-bilinear-3x2": Case(one(IMG, lambda L: L.UpSampling2D((3, 2), interpolation="bilinear"))),
    "upsampling1d": Case(one(SEQ, lambda L: L.UpSampling1D(3))),
    "upsampling3d": Case(one(VOL, lambda L: L.UpSampling3D(2))),
    # --- identities at inference ----------------------------------------------------------------------
    "dropout": Case(one(IMG, lambda L: L.Dropout(0.5))),
    "einsum-dense-heads": Case(one((6, 8), lambda L: L.EinsumDense("abc,cde->abde", output_shape=(None, 2, 4),
                                                                   bias_axes="de", activation="relu"))),
    "einsum-dense-ellipsis": Case(one((5, 7), lambda L: L.EinsumDense("...b,bc->...c", output_shape=3,
                                                                      bias_axes="c"))),
    "einsum-dense-no-bias": Case(one((9,), lambda L: L.EinsumDense("ab,bc->ac", output_shape=4))),
    "dot": Case(seq((6, 4), (5, 4), merge=lambda k: k.layers.Dot(axes=2))),
    "dot-normalized": Case(seq((6, 4), (6, 3), merge=lambda k: k.layers.Dot(axes=1, normalize=True))),
    "dot-vectors": Case(seq((5,), (5,), merge=lambda k: k.layers.Dot(axes=1))),
    "resizing-bilinear": Case(one((9, 12, 3), lambda L: L.Resizing(7, 17))),  # down and up, non-integer
    "resizing-nearest": Case(one((9, 12, 3), lambda L: L.Resizing(14, 5, interpolation="nearest"))),
    "center-crop": Case(one((9, 12, 3), lambda L: L.CenterCrop(6, 7))),
    "attention-dot": Case(seq((5, 4), (7, 4), merge=lambda k: k.layers.Attention())),
    "attention-scaled-key": Case(seq((5, 4), (7, 3), (7, 4), merge=lambda k: k.layers.Attention(use_scale=True))),
    "attention-concat-causal": Case(seq((6, 4), (6, 4), merge=lambda k: _causal(k.layers.Attention(
        score_mode="concat", use_scale=True)))),
    "additive-attention": Case(seq((5, 4), (7, 4), merge=lambda k: k.layers.AdditiveAttention())),
    "time-distributed-conv": Case(one((3, 9, 8, 2), lambda L: L.TimeDistributed(
        L.Conv2D(4, 3, strides=2, padding="same", activation="relu")))),
    "time-distributed-dense": Case(one((4, 6), lambda L: L.TimeDistributed(L.Dense(5)))),
    "time-distributed-pool-bn": Case(seq((3, 8, 8, 2), layers=lambda k: [
        k.layers.TimeDistributed(k.layers.MaxPooling2D(3, strides=2, padding="same")),
        k.layers.TimeDistributed(k.layers.BatchNormalization())])),
    "adaptive-avg-2d": Case(one((11, 9, 3), lambda L: L.AdaptiveAveragePooling2D((4, 3)))),
    "adaptive-max-2d": Case(one((11, 9, 3), lambda L: L.AdaptiveMaxPooling2D((3, 5)))),
    "adaptive-avg-1d": Case(one((13, 4), lambda L: L.AdaptiveAveragePooling1D(5))),
    "grouped-query-attention": Case(seq((5, 8), (7, 8), merge=lambda k: (lambda i: k.layers.GroupQueryAttention(
        head_dim=4, num_query_heads=4, num_key_value_heads=2)(i[0], i[1])))),
    "grouped-query-attention-gate-causal": Case(seq((6, 8), (6, 8), merge=lambda k: (
        lambda i: k.layers.GroupQueryAttention(head_dim=3, num_query_heads=6, num_key_value_heads=3, use_gate=True)(
            i[0], i[1], use_causal_mask=True)))),
    "groupnorm": Case(one((9, 10, 8), lambda L: L.GroupNormalization(groups=4, epsilon=1e-4))),
    "groupnorm-seq": Case(one((11, 6), lambda L: L.GroupNormalization(groups=3))),
    "rmsnorm": Case(one((5, 8), lambda L: L.RMSNormalization(epsilon=1e-5)), formats=("keras",)),
    "unitnorm": Case(one((5, 8), lambda L: L.UnitNormalization())),
    "unitnorm-image": Case(one(IMG, lambda L: L.UnitNormalization(axis=-1))),
    "spatialdropout2d": Case(one(IMG, lambda L: L.SpatialDropout2D(0.5))),
    "spatialdropout1d": Case(one(SEQ, lambda L: L.SpatialDropout1D(0.5))),
    "gaussiannoise": Case(one(IMG, lambda L: L.GaussianNoise(1.0))),
    "gaussiandropout": Case(one(IMG, lambda L: L.GaussianDropout(0.3))),
    "alphadropout": Case(one((7,), lambda L: L.AlphaDropout(0.3))),
    "activityregularization": Case(one((7,), lambda L: L.ActivityRegularization(l1=0.1))),
    "identity": Case(one(IMG, lambda L: L.Identity())),
    "masking": Case(one((5, 8), lambda L: L.Masking())),
}


# --- graphs: several inputs/outputs, nesting, sharing, layouts, unknown sizes ----------------------------

def _multi_io(keras: Any) -> Any:
    L = keras.layers
    image, vector = keras.Input(IMG, name="image"), keras.Input((7,), name="vector")
    feat = L.Conv2D(4, 3, strides=2, padding="same", name="conv")(image)
    pooled = L.GlobalAveragePooling2D(name="gap")(feat)
    joined = L.Concatenate(name="cat")([pooled, L.Dense(4, name="fc_v")(vector)])
    return keras.Model([image, vector], [feat, L.Dense(3, name="head")(joined), pooled], name="multi")


def _nested(keras: Any) -> Any:
    L = keras.layers
    block_in = keras.Input((9, 10, 4))
    y = L.BatchNormalization(name="bn")(L.Conv2D(4, 3, padding="same", name="conv")(block_in))
    block = keras.Model(block_in, L.ReLU(name="relu")(y), name="block")
    tail = keras.Sequential([keras.Input((4,)), L.Dense(6, name="d1"), L.Dense(2, name="d2")], name="tail")
    x = keras.Input(IMG, name="x")
    h = L.Conv2D(4, 1, name="stem")(x)
    h = L.Add(name="res")([h, block(h)])
    return keras.Model(x, tail(L.GlobalMaxPooling2D(name="gmp")(h)), name="outer")


def _shared(keras: Any) -> Any:
    L = keras.layers
    a, b = keras.Input(IMG, name="a"), keras.Input(IMG, name="b")
    conv, dense = L.Conv2D(4, 3, strides=2, padding="same", name="shared_conv"), L.Dense(3, name="shared_fc")
    fa, fb = conv(a), conv(b)
    va, vb = dense(L.Flatten(name="fa")(fa)), dense(L.Flatten(name="fb")(fb))
    outputs = [L.Subtract(name="diff")([fa, fb]), L.Add(name="sum")([va, vb])]
    return keras.Model([a, b], outputs, name="shared")


def _squeeze_excite(keras: Any) -> Any:
    """EfficientNet's block: GAP, Reshape to (1, 1, C) (Keras layout), 1x1 convs, Multiply broadcasting."""
    L = keras.layers
    x = keras.Input(IMG, name="x")
    h = L.Conv2D(6, 3, padding="same", activation="swish", name="conv")(x)
    s = L.Reshape((1, 1, 6), name="se_reshape")(L.GlobalAveragePooling2D(name="se_squeeze")(h))
    s = L.Conv2D(2, 1, activation="swish", name="se_reduce")(s)
    s = L.Conv2D(6, 1, activation="sigmoid", name="se_expand")(s)
    keep = L.GlobalAveragePooling2D(keepdims=True, name="gap_keep")(h)
    return keras.Model(x, L.Multiply(name="excite")([L.Multiply(name="se")([h, s]), keep]), name="se")


def _dynamic(keras: Any) -> Any:
    L = keras.layers
    x = keras.Input((None, None, 3), name="x")
    h = L.Conv2D(4, 3, strides=2, padding="same", name="conv_s2")(x)
    h = L.MaxPooling2D(3, strides=2, padding="same", name="max_s2")(h)
    h = L.AveragePooling2D(2, strides=2, padding="same", name="avg_s2")(h)
    h = L.DepthwiseConv2D(3, padding="same", name="dw_s1")(h)
    return keras.Model(x, L.Dense(3, name="fc")(L.GlobalAveragePooling2D(name="gap")(h)), name="dynamic")


def _small_cnn(keras: Any) -> Any:
    L = keras.layers
    x = keras.Input(IMG, name="x")
    h = L.BatchNormalization(name="bn")(L.Conv2D(4, 3, strides=2, padding="same", name="conv")(x))
    return keras.Model(x, [h, L.Dense(2, name="fc")(L.Flatten(name="flat")(h))], name="cnn")


def _ops_arith(keras: Any) -> Any:
    """Keras 3 records ``x + 1.0`` and friends as op layers (keras.src.ops.numpy>Add, ...)."""
    x, y = keras.Input(IMG, name="x"), keras.Input(IMG, name="y")
    h = keras.layers.Conv2D(3, 3, padding="same", name="conv")(x)
    a = ((2.0 - h) * 3.0 + y) / 4.0 - 0.5
    b = keras.ops.maximum(-(a ** 2), -0.75)
    return keras.Model([x, y], [a, b, keras.ops.minimum(h, y), x / (keras.ops.abs(y) + 1.0)], name="ops")


def _ops_unary(keras: Any) -> Any:
    x = keras.Input(IMG, name="x")
    o = keras.ops
    outs = [o.sigmoid(x), o.tanh(x), o.relu(x), o.relu6(x), o.silu(x), o.gelu(x),
            o.gelu(x, approximate=False), o.hard_sigmoid(x), o.hard_silu(x), o.exp(x), o.sqrt(o.abs(x)),
            o.square(x), o.softmax(x, axis=-1), o.log_softmax(x, axis=1)]
    return keras.Model(x, outs, name="unary")


def _ops_h5(keras: Any) -> Any:
    """In a Keras 3 .h5 the op layers lose their module: ``x * 2.0`` reads as a Multiply with a constant."""
    x, y = keras.Input(IMG, name="x"), keras.Input(IMG, name="y")
    return keras.Model([x, y], [x * 2.0 + y, keras.ops.maximum(x, 0.25) - y, 1.0 - x,
                                keras.ops.concatenate([x, y], axis=-1)], name="ops_h5")


def _merge_ranks(keras: Any) -> Any:
    """Merges of different ranks: Keras expands the smaller input right after the batch axis."""
    L = keras.layers
    img, vec, seq3 = keras.Input(IMG, name="img"), keras.Input((3,), name="vec"), keras.Input((10, 3), name="seq")
    conv_seq = L.Conv1D(3, 1, name="conv_seq")(seq3)  # channels-first inside the generated model
    outputs = [L.Multiply(name="img_vec")([img, vec]), L.Add(name="vec_img")([vec, img]),
               L.Add(name="img_seq")([img, conv_seq]), L.Maximum(name="seq_vec")([conv_seq, vec])]
    return keras.Model([img, vec, seq3], outputs, name="ranks")


def _application_layers(keras: Any) -> Any:
    """The layers keras.applications defines for ConvNeXt and InceptionResNetV2, in a tiny model."""
    from keras.src.applications.convnext import LayerScale, StochasticDepth
    from keras.src.applications.inception_resnet_v2 import CustomScaleLayer

    L = keras.layers
    x = keras.Input(IMG, name="x")
    h = L.Conv2D(3, 3, padding="same", name="conv")(x)
    h = StochasticDepth(0.2, name="drop_path")(LayerScale(1e-6, 3, name="layer_scale")(h))
    return keras.Model(x, CustomScaleLayer(0.17, name="residual_scale")([x, h]), name="app_layers")


def _foreign_layer_scale(keras: Any) -> Any:
    """A user's own "LayerScale" (another config, another computation) in a .h5."""
    class LayerScale(keras.layers.Layer):
        def __init__(self, factor=2.0, **kwargs):
            super().__init__(**kwargs)
            self.factor = factor

        def call(self, x):
            return x * self.factor

        def get_config(self):
            return {**super().get_config(), "factor": self.factor}

    x = keras.Input(IMG, name="x")
    return keras.Model(x, LayerScale(name="mine")(keras.layers.Conv2D(3, 3, name="c")(x)), name="foreign")


DYN = {0: (9, 10, 3)}  # odd height, even width: both SAME splits at stride 2
CASES.update({  # random augmentation layers: the identity at inference, checked against Keras one by one
    f"augment-{name}": Case(seq(IMG, layers=lambda k, name=name, kw=kwargs: [getattr(k.layers, name)(**kw),
                                                                 k.layers.Conv2D(2, 3, name="c")]),
                            formats=("keras",))
    for name, kwargs in {
        "RandomFlip": {}, "RandomRotation": {"factor": 0.2}, "RandomZoom": {"height_factor": 0.2},
        "RandomContrast": {"factor": 0.3}, "RandomTranslation": {"height_factor": 0.1, "width_factor": 0.1},
        "RandomBrightness": {"factor": 0.2}, "RandomShear": {"x_factor": 0.2},
        "RandomHue": {"factor": 0.2, "value_range": (0, 1)},
        "RandomSaturation": {"factor": 0.2, "value_range": (0, 1)},
        "RandomSharpness": {"factor": 0.2, "value_range": (0, 1)},
        "RandomGrayscale": {"factor": 0.5}, "RandomColorJitter": {"value_range": (0, 1), "brightness_factor": 0.2},
        "RandomErasing": {"value_range": (0, 1)}, "RandomGaussianBlur": {"value_range": (0, 1)},
        "RandomPerspective": {}, "RandomInvert": {"value_range": (0, 1)},
        "RandomPosterization": {"factor": 4, "value_range": (0, 255)}, "RandomColorDegeneration": {"factor": 0.3},
        "RandomElasticTransform": {"value_range": (0, 1)}, "AugMix": {"value_range": (0, 1)},
        "RandAugment": {"value_range": (0, 1)}, "CutMix": {}, "MixUp": {},
        "Solarization": {"addition_factor": 0.5, "threshold_factor": 0.5, "value_range": (0, 1)},
    }.items()
})
CASES.update({
    "graph-multi-io": Case(_multi_io),
    "graph-nested": Case(_nested),
    "graph-shared": Case(_shared),
    "graph-squeeze-excite": Case(_squeeze_excite),
    "graph-channels-last": Case(_small_cnn, options={"channels_last": True}),
    "graph-unknown-size-dynamic-same": Case(_dynamic, sizes=DYN, note="computed at run time"),
    "graph-unknown-size-input-shape": Case(_dynamic, sizes=DYN, options={"input_shape": (1, 3, 9, 10)},
                                           note="asymmetric"),
    "ops-arith": Case(_ops_arith, formats=("keras",)),
    "ops-unary": Case(_ops_unary, formats=("keras",)),
    "ops-legacy-h5": Case(_ops_h5, formats=("keras", "h5")),
    "merge-different-ranks": Case(_merge_ranks),
    "application-layers": Case(_application_layers),  # .h5: recognised by config signature
    "keras2-graph-nested": Case(_nested, keras2=True),
    "keras2-graph-squeeze-excite": Case(_squeeze_excite, keras2=True),
    # the wrapped layer with its kernel as saved (power iteration runs only in training)
    "spectral-norm-conv": Case(one(IMG, lambda L: L.SpectralNormalization(L.Conv2D(4, 3, strides=2, padding="same")))),
    "spectral-norm-dense-after-flatten": Case(seq((5, 4, 3), layers=lambda k: [
        k.layers.Conv2D(3, 2), k.layers.Flatten(), k.layers.SpectralNormalization(k.layers.Dense(4))])),
    "spectral-norm-embedding": Case(one((7,), lambda L: L.SpectralNormalization(L.Embedding(10, 4))), ints=10),
})


def _params() -> list:
    out = []
    for name, case in CASES.items():
        for fmt in (("h5",) if case.keras2 else case.formats):
            out.append(pytest.param(name, fmt, id=f"{name}-{fmt}", marks=pytest.mark.tf))
    return out


@pytest.mark.parametrize(("name", "fmt"), _params())
def test_layer_matches_keras(tmp_path, name: str, fmt: str) -> None:
    case = CASES[name]
    keras = require_keras("tf_keras" if case.keras2 else "keras")
    keras.utils.set_random_seed(0)
    model = case.build(keras)
    randomise(model, seed=0)
    path = tmp_path / f"model.{fmt}"
    model.save(path)
    if case.ints:
        rng = np.random.default_rng(1)
        xs = [rng.integers(0, case.ints, (2, *t.shape[1:])).astype(np.float32) for t in model.inputs]
    else:
        xs = [x * np.float32(case.scale) for x in inputs_for(model, seed=1, sizes=case.sizes)]
    if case.zero_steps:  # steps 0, 3 and the last of sample 0, step 2 of sample 1: all zeros
        xs[0][0, [0, 3, -1]] = 0
        xs[0][1, 2] = 0
    if case.ints or case.zero_steps:
        print(f"{name}: masked steps per sample {(xs[0] == 0).reshape(2, xs[0].shape[1], -1).all(-1).sum(1)}")
    _, conversion = check_file(path, model, xs, rtol=RTOL, atol=ATOL, label=f"{name} {fmt}", **case.options)
    if case.note:
        assert any(case.note in n for n in conversion.report.notes), conversion.report.notes


@pytest.mark.tf
def test_spectral_normalization_after_training_calls(tmp_path) -> None:
    """Training calls rewrite the kernel with its spectrally normalised value (and vector_u): the saved
    kernel is what inference reads, so the converted layer matches predict."""
    keras = require_keras("keras")
    model = CASES["spectral-norm-conv"].build(keras)
    randomise(model, seed=0)
    x = inputs_for(model, seed=2)[0]
    before = np.array(model.layers[1].layer.kernel)
    for _ in range(3):
        model(x, training=True)
    print(f"kernel changed by training calls: max {np.abs(np.array(model.layers[1].layer.kernel) - before).max():.3f}")
    assert not np.allclose(np.array(model.layers[1].layer.kernel), before)
    model.save(tmp_path / "model.keras")
    _, conversion = check_file(tmp_path / "model.keras", model, inputs_for(model, seed=1), rtol=RTOL, atol=ATOL,
                               label="spectral-norm after training calls")
    unused = {e.source for e in conversion.report.entries if e.status == "skipped"}
    assert any(name.endswith("vars/1") for name in unused), unused  # vector_u: the iteration's state


# --- what cannot be converted fails with the layer's name and class ------------------------------------

def _keras3_op_cumsum(keras: Any) -> Any:
    x = keras.Input((5, 8), name="x")
    return keras.Model(x, keras.layers.Dense(2, name="fc")(keras.ops.cumsum(x, axis=1)), name="m")


def _lambda(keras: Any) -> Any:
    x = keras.Input((4,), name="x")
    return keras.Model(x, keras.layers.Lambda(lambda t: t * 2.0, name="double")(x), name="m")


def _prelu_per_pixel(keras: Any) -> Any:
    x = keras.Input(IMG, name="x")
    return keras.Model(x, keras.layers.PReLU(name="slopes")(x), name="m")


def _op_sigmoid(keras: Any) -> Any:
    x = keras.Input((3,), name="x")
    return keras.Model(x, keras.ops.sigmoid(x), name="m")


def _op_average_h5(keras: Any) -> Any:
    """keras.ops.average is a reduction; in a Keras 3 .h5 it reads as class "Average" with two inputs."""
    x, w = keras.Input((4,), name="x"), keras.Input((4,), name="w")
    return keras.Model([x, w], keras.ops.average(x, axis=1, weights=w), name="m")


def _op_array_constant(keras: Any) -> Any:
    x = keras.Input((3,), name="x")
    return keras.Model(x, keras.ops.add(x, np.array([1.0, 2.0, 3.0], np.float32)), name="m")


def _masked_pooling(keras: Any) -> Any:
    ids = keras.Input((6,), name="ids")
    h = keras.layers.Embedding(5, 4, mask_zero=True, name="embed")(ids)
    h = keras.layers.Rescaling(2.0, name="pool")(h)  # a layer that hands the mask on in Keras, tf2torch not ...
    return keras.Model(ids, keras.layers.MultiHeadAttention(1, 4)(h, h), name="m")  # ... before an attention


UNSUPPORTED = {
    # (builder, format, Python class of the offending layer, substrings of the message). Keras numbers
    # op names per session (sigmoid, sigmoid_1, ...), so the layer's name is read from the model.
    "keras3-op-cumsum": (_keras3_op_cumsum, "keras", "Cumsum", ("keras.src.ops.numpy>Cumsum",)),
    "keras3-op-in-h5": (_op_sigmoid, "h5", "Sigmoid", ("'Sigmoid'",)),  # .h5 drops the op's module
    "keras3-op-array-constant": (_op_array_constant, "keras", "Add", ("keras.src.ops.numpy>Add", "constant")),
    "keras3-op-average-in-h5": (_op_average_h5, "h5", "Average", ("keras.ops.average",)),
    "lambda": (_lambda, "keras", "Lambda", ("Lambda",)),
    # a mask reaching a layer tf2torch does not know to end or carry it (Keras 3's Rescaling carries it), with
    # an attention (which reads masks itself) after it: refused (layers that end masks: test_masked_pooling.py)
    "masked-pooling": (_masked_pooling, "keras", "Rescaling", ("Keras mask",)),
    "prelu-per-pixel": (_prelu_per_pixel, "h5", "PReLU", ("PReLU", "shared_axes")),
    # keras.applications' own layers in a .h5 (no module kept) are recognised by config signature: a
    # user's class of the same name with another config is refused, saying why
    "foreign-layer-scale-in-h5": (lambda k: _foreign_layer_scale(k), "h5", "LayerScale",
                                  ("'LayerScale' saved without its module", "['factor']")),
}


@pytest.mark.tf
@pytest.mark.parametrize("name", list(UNSUPPORTED), ids=list(UNSUPPORTED))
def test_unsupported_layer_names_layer_and_class(tmp_path, name: str) -> None:
    keras = require_keras("keras")
    build, fmt, cls, expected = UNSUPPORTED[name]
    model = build(keras)
    layer = next(x for x in getattr(model, "operations", model.layers) if type(x).__name__ == cls)
    path = tmp_path / f"model.{fmt}"
    model.save(path)
    with pytest.raises(UnsupportedError) as info:
        convert_in_memory(path)
    print(f"{name}: {info.value}")
    for text in (f"'{layer.name}'", *expected):
        assert text in str(info.value)


# --- generated code that carries helper classes stays clean and torch-only -----------------------------

def _helpers(keras: Any) -> Any:
    """SamePad, SamePool (unknown size), Crop (transposed SAME), KerasRescaling, KerasNormalization,
    KerasEinsumDense."""
    L = keras.layers
    x = keras.Input((None, None, 3), name="x")
    h = L.Normalization(name="norm")(L.Rescaling([0.5, 1.0, 2.0], name="scale")(x))
    h = L.Conv2D(4, 3, strides=2, padding="same", name="conv")(h)
    h = L.AveragePooling2D(3, strides=2, padding="same", name="avg")(h)
    h = L.Conv2DTranspose(2, 3, strides=2, padding="same", name="up")(h)
    return keras.Model(x, L.EinsumDense("...c,cd->...d", output_shape=5, bias_axes="d", name="mix")(h),
                       name="helpers")


@pytest.mark.tf
def test_generated_helpers_pass_ruff_and_import_with_torch_only(tmp_path) -> None:
    keras = require_keras("keras")
    model = _helpers(keras)
    randomise(model, seed=0)
    path = tmp_path / "helpers.keras"
    model.save(path)
    xs = inputs_for(model, seed=1, sizes={0: (9, 10, 3)})
    _, conversion = check_file(path, model, xs, rtol=RTOL, atol=ATOL, label="helpers")
    source = conversion.model_source
    for helper in ("SamePad", "SamePool", "Crop", "KerasRescaling", "KerasNormalization", "KerasEinsumDense"):
        assert f"class {helper}(nn.Module)" in source
    ruff_check(source, tmp_path / "model.py")
    import_isolated(source, tmp_path / "model.py")
