"""Hand-written models for the coverage matrix (tests/tflite/test_coverage.py) beyond tests/tflite/models.py:
operators that models.py has only beside others a full-integer model refuses, a sparse (pruned) model
for DENSIFY, and a dynamic-range LSTM whose weights are big enough to be quantized."""

from __future__ import annotations

import numpy as np

from tests.conftest import require_tf


def int_moves(keras):
    """Operators of a full-integer model that only move values or whose int8 kernel is emulated, with
    nothing refused beside them: SUB, a standalone RELU_N1_TO_1, RELU6 and RELU, PADV2, GATHER, SPLIT, SPLIT_V,
    PACK, UNPACK, SLICE, STRIDED_SLICE, TRANSPOSE, RESHAPE, EXPAND_DIMS, CONCATENATION, DEPTH_TO_SPACE
    (a float model has them too), and an ELU TF's converter keeps float between DEQUANTIZE
    and QUANTIZE."""
    tf = require_tf()
    L = keras.layers
    ops = keras.ops
    inp = keras.Input((7, 6, 4))
    x = L.Conv2D(8, 3, padding="same")(inp)
    y = L.Conv2D(8, 1)(inp)
    d = L.Subtract()([x, y])
    p = L.Lambda(lambda t: tf.pad(t, [[0, 0], [1, 0], [0, 2], [0, 0]], constant_values=0.25))(d)
    g = L.Lambda(lambda t: ops.take(t, np.array([3, 0, 5, 1], dtype="int32"), axis=-1))(p)
    a, b = L.Lambda(lambda t: ops.split(t, 2, axis=-1))(g)
    u, v = L.Lambda(lambda t: ops.split(t, [1], axis=1))(p)
    rows = L.Lambda(lambda t: ops.unstack(t, axis=1))(a)
    stacked = L.Lambda(lambda t: ops.stack([t[0], t[2]], axis=2))(rows)
    cut = L.Lambda(lambda t: ops.slice(t, (0, 1, 1, 0), (-1, 4, 3, 2)))(b)
    strided = L.Lambda(lambda t: t[:, 1::2, ::2, :])(v)
    swapped = L.Permute((2, 1, 3))(cut)
    wide = L.Lambda(lambda t: ops.expand_dims(ops.reshape(t, (-1, 24)), 1))(swapped)
    joined = L.Concatenate()([L.Flatten()(strided), L.Flatten()(u)])
    clipped = L.Activation("hard_tanh")(joined)  # after a concatenation: nothing to fuse it into
    blocks = L.Lambda(lambda t: tf.nn.depth_to_space(t, 2))(L.ReLU(6.0)(L.Reshape((2, 2, 40))(joined)))
    # ELU has no int8 kernel: TF's converter keeps it float between a DEQUANTIZE and a QUANTIZE
    elu = L.Activation("elu")(L.Flatten()(stacked))
    return keras.Model(inp, [elu, clipped, L.ReLU()(wide), L.Flatten()(blocks)])


def int_more(keras):
    """Operators whose int8 kernels are not emulated yet, in a model of their own so a full-integer
    refusal names them (their float forms are compared): TRANSPOSE_CONV, PRELU, RESIZE_NEAREST_NEIGHBOR,
    REDUCE_MAX, DIV of tensors."""
    L = keras.layers
    ops = keras.ops
    inp = keras.Input((5, 4, 6))
    x = L.Conv2DTranspose(8, 3, strides=2, padding="same")(inp)
    x = L.PReLU(shared_axes=[1, 2])(x)
    r = L.Resizing(20, 16, interpolation="nearest")(x)
    m = L.Lambda(lambda t: ops.max(t, axis=(1, 2)))(r)
    return keras.Model(inp, L.Lambda(lambda t: t[0] / (1.5 + t[1] * t[1]))([m, L.Dense(8)(m)]))


def int_spatial(keras):
    """The pixel-moving operators whose int8 kernels are emulated, in a model of their own (elsewhere they
    sit beside operators a full-integer model refuses): TRANSPOSE_CONV, MIRROR_PAD, RESIZE_BILINEAR and
    RESIZE_NEAREST_NEIGHBOR (half-pixel centres, non-integer factors: bilinear 13x17 -> 23x31, nearest
    down to 9x12; every grid and size of the float forms: tests/tflite/test_resize_float.py)."""
    L = keras.layers
    ops = keras.ops
    inp = keras.Input((5, 7, 4))
    x = L.Conv2DTranspose(6, 3, strides=2, padding="same", activation="relu")(inp)
    x = L.Lambda(lambda t: ops.pad(t, ((0, 0), (1, 2), (2, 1), (0, 0)), mode="reflect"))(x)
    b = L.Resizing(23, 31, interpolation="bilinear")(x)
    n = L.Resizing(9, 12, interpolation="nearest")(x)
    return keras.Model(inp, [L.Conv2D(4, 3, strides=2, padding="same")(b), n])


def tconv_wide(keras):
    """A TRANSPOSE_CONV with weights big enough (32 x 3 x 3 x 16) for dynamic-range quantization: a
    hybrid TRANSPOSE_CONV (its hybrid kernel is not emulated yet: refused by name)."""
    inp = keras.Input((5, 4, 16))
    return keras.Model(inp, keras.layers.Conv2DTranspose(32, 3, strides=2, padding="same")(inp))


def sparse(keras):
    """A conv and two Dense layers whose kernels ``prune`` zeroes in blocks: TF's converter, asked for
    EXPERIMENTAL_SPARSITY, stores them sparse (DENSIFY before the conv; FULLY_CONNECTED reads its 1x4
    block-sparse weights itself in float, through DENSIFY in int8)."""
    L = keras.layers
    inp = keras.Input((9, 8, 4))
    x = L.Conv2D(16, 3, padding="same", name="sparse_conv")(inp)
    x = L.Dense(32, activation="relu", name="sparse_fc1")(L.Flatten()(x))
    return keras.Model(inp, L.Dense(8, name="sparse_fc2")(x))


def prune(model, seed: int, fraction: float = 0.7) -> None:
    """Zero ``fraction`` of every kernel in blocks of 4 along its input axis (what magnitude pruning with a
    1x4 block leaves), after the weights are randomised."""
    rng = np.random.default_rng(seed + 100)
    for w in model.weights:
        if len(w.shape) < 2:
            continue
        value = np.array(w.numpy())
        rows = value.reshape(-1, value.shape[-1])  # (inputs, outputs): blocks of 4 consecutive inputs
        keep = np.repeat(rng.random((-(-rows.shape[0] // 4), rows.shape[1])) >= fraction, 4, axis=0)[: rows.shape[0]]
        w.assign((rows * keep).reshape(value.shape).astype(np.float32))


def lstm_wide(keras):
    """UNIDIRECTIONAL_SEQUENCE_LSTM with 48 units on 24 features: its weights (48 x 24 and 48 x 48 per gate)
    pass the 1024 values dynamic-range quantization needs (32 x 32 did not: TF's converter kept them float),
    so that variant holds a hybrid LSTM."""
    L = keras.layers
    inp = keras.Input((5, 24), batch_size=1)
    return keras.Model(inp, L.Dense(3)(L.LSTM(48)(inp)))


def reduce_prod(keras):
    """REDUCE_PROD after a Dense: TF's converter writes it int16 in a 16x8 model, a kernel tf2torch does not
    emulate (test_models.py's refusal case; the int8 one is: test_int8_prod.py)."""
    inp = keras.Input((5, 6))
    return keras.Model(inp, keras.layers.Lambda(lambda t: keras.ops.prod(t, axis=-1))(keras.layers.Dense(6)(inp)))


MODELS = {"int_moves": int_moves, "int_more": int_more, "int_spatial": int_spatial, "tconv_wide": tconv_wide, "sparse": sparse,
          "lstm_wide": lstm_wide, "reduce_prod": reduce_prod}
TF_KERAS = frozenset({"lstm_wide"})
SPARSE = frozenset({"sparse"})  # converted with EXPERIMENTAL_SPARSITY (pruned first)
