"""Small Keras models that together use every TFLite operator tf2torch converts, made into ``.tflite``
files by TF's own converter (float32, or float16 weights), and the interpreter's outputs for them.

Sizes are odd and strides 2 so TF's SAME padding is asymmetric; weights and batch-norm statistics are
random and seeded (TFLite folds the statistics into the convolutions, so a wrong fold would show).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from tests.conftest import require_keras, require_tf
from tests.tflite import models_cov


def _randomise(model, seed: int) -> None:
    rng = np.random.default_rng(seed)
    for weight in model.weights:
        shape = tuple(weight.shape)
        name = weight.path if hasattr(weight, "path") else weight.name
        if "moving_variance" in name:
            value = rng.uniform(0.5, 1.5, shape)
        elif "gamma" in name:
            value = 1 + rng.normal(0, 0.2, shape)
        elif len(shape) >= 2:  # kernels scaled by their fan-in, so deep nets neither explode nor vanish
            fan_in = int(np.prod(shape[:2] if "depthwise" in name else shape[:-1]))
            value = rng.normal(0, 1.3 / np.sqrt(fan_in), shape)
        else:
            value = rng.normal(0, 0.3, shape)
        weight.assign(value.astype(np.float32))


def convs(keras):
    """CONV_2D (SAME, stride 2, odd sizes; dilated, SAME and VALID), DEPTHWISE_CONV_2D with a multiplier, both pools
    SAME and VALID, fused RELU / RELU6 / TANH, a batch norm after an activation (MUL + ADD)."""
    L = keras.layers
    inp = keras.Input((23, 21, 3))
    x = L.Conv2D(8, 3, strides=2, padding="same", activation="relu6")(inp)
    x = L.BatchNormalization()(L.Activation("relu")(x))
    x = L.DepthwiseConv2D(3, depth_multiplier=2, padding="same", activation="tanh")(x)
    x = L.Conv2D(6, (3, 2), dilation_rate=2, padding="same")(x)  # SPACE_TO_BATCH_ND, CONV_2D, BATCH_TO_SPACE_ND
    x = L.DepthwiseConv2D(3, dilation_rate=(2, 1), padding="valid")(x)
    a = L.MaxPooling2D(3, strides=2, padding="same")(x)
    b = L.AveragePooling2D(3, strides=2, padding="same")(x)
    x = L.Concatenate()([a, b])
    x = L.AveragePooling2D(2, padding="valid")(x)
    x = L.MaxPooling2D(2, strides=1, padding="valid")(x)
    x = L.Conv2D(5, 1, activation="relu")(x)
    return keras.Model(inp, x)


def dense_math(keras):
    """FULLY_CONNECTED (after a Flatten's RESHAPE, fused activations), ADD / SUB / MUL / DIV of tensors
    with broadcasting, SOFTMAX, LOGISTIC, HARD_SWISH, LEAKY_RELU, MEAN."""
    L = keras.layers
    inp = keras.Input((7, 9, 4))
    x = L.Conv2D(6, 3, strides=2, padding="same")(inp)
    g = L.GlobalAveragePooling2D(keepdims=True)(x)  # MEAN, then a broadcast MUL: a squeeze-excite
    g = L.Dense(6, activation="sigmoid")(g)
    x = L.Multiply()([x, g])
    x = L.Activation("hard_swish")(x)
    f = L.Flatten()(x)
    d1 = L.Dense(10, activation="relu")(f)
    d2 = L.Dense(10)(L.LeakyReLU(negative_slope=0.1)(f))
    s = L.Subtract()([d1, d2])
    q = L.Lambda(lambda t: t[0] / (1.5 + t[1] * t[1]))([s, d2])
    y = L.Add()([q, d1])
    return keras.Model(inp, [L.Softmax()(L.Dense(4)(y)), L.Activation("sigmoid")(y)])


def shapes(keras):
    """RESHAPE, TRANSPOSE, PAD, STRIDED_SLICE, CONCATENATION on a sequence, FULLY_CONNECTED with
    keep_num_dims (a Dense on a rank-3 tensor), BATCH_MATMUL, GELU, SPLIT, PACK, RESIZE_*."""
    L = keras.layers
    ops = keras.ops
    inp = keras.Input((8, 6, 3))
    x = L.ZeroPadding2D(((1, 2), (0, 1)))(inp)
    x = L.Conv2D(4, 3, padding="same")(x)
    up = L.UpSampling2D(2, interpolation="bilinear")(x)
    near = L.UpSampling2D(2, interpolation="nearest")(x)
    x = L.Conv2D(4, 3, strides=2, padding="same")(L.Add()([up, near]))
    seq = L.Reshape((11 * 7, 4))(x)
    seq = L.Dense(8)(seq)
    seq = L.Activation("gelu")(seq)
    att = L.Lambda(lambda t: ops.matmul(t, ops.transpose(t, (0, 2, 1))) * 0.35)(seq)  # scaled, as attention is
    part = L.Lambda(lambda t: t[:, 1:9:2, :])(seq)
    halves = L.Lambda(lambda t: ops.split(t, 2, axis=-1))(part)
    stacked = L.Lambda(lambda t: ops.stack(t, axis=1))(halves)
    return keras.Model(inp, [L.Softmax()(att), L.Flatten()(stacked)])


def more_ops(keras):
    """TRANSPOSE_CONV (SAME, stride 2, bias, fused activation), PRELU, ELU, LOG_SOFTMAX, MIRROR_PAD,
    REDUCE_MAX / SUM, EXP / LOG / SQRT, GATHER, SPLIT_V, UNPACK, TILE, RELU_N1_TO_1 (hard tanh)."""
    L = keras.layers
    ops = keras.ops
    inp = keras.Input((5, 7, 4))
    x = L.Conv2DTranspose(6, 3, strides=2, padding="same", activation="relu")(inp)
    x = L.PReLU(shared_axes=[1, 2])(x)
    x = L.Lambda(lambda t: ops.pad(t, ((0, 0), (1, 2), (2, 1), (0, 0)), mode="reflect"))(x)
    x = L.Conv2D(6, 3, strides=2, padding="valid", activation="elu")(x)
    m = L.Lambda(lambda t: ops.max(t, axis=(1, 2)))(x)
    s = L.Lambda(lambda t: ops.log(1.0 + ops.sum(ops.exp(t), axis=1)) + ops.sqrt(ops.abs(t[:, 0]) + 1.0))(x)
    g = L.Lambda(lambda t: ops.take(t, np.array([2, 0, 1], dtype="int32"), axis=-1))(x)
    a, b = L.Lambda(lambda t: ops.split(t, [2], axis=-1))(x)
    rows = L.Lambda(lambda t: ops.unstack(t, axis=1))(a)
    t = L.Lambda(lambda t: ops.tile(t, (1, 1, 2)))(rows[0])
    h = L.Activation("hard_tanh")(L.Flatten()(b))
    out = L.Concatenate()([L.Flatten()(g), L.Flatten()(t), h, L.Flatten()(s)])
    return keras.Model(inp, [L.Activation("log_softmax")(L.Dense(5)(out)), m])


def elementwise(keras):
    """MAXIMUM, MINIMUM, POW, RSQRT, SQUARE, SQUARED_DIFFERENCE, REDUCE_MIN, a standalone RELU6, SLICE,
    SQUEEZE, TRANSPOSE, RESIZE_NEAREST_NEIGHBOR (half-pixel centres, as tf.image.resize writes it), a
    Conv1D (a CONV_2D between reshapes)."""
    L = keras.layers
    ops = keras.ops
    inp = keras.Input((6, 5, 4))
    x = L.Conv2D(4, 3, padding="same")(inp)
    y = L.Resizing(12, 10, interpolation="nearest")(x)
    y = L.Conv2D(4, 3, strides=2, padding="same")(y)
    a = L.Lambda(lambda t: ops.maximum(t[0], t[1]) + ops.minimum(t[0], 0.25))([x, y])
    b = L.Lambda(lambda t: ops.power(ops.abs(t[0]) + 1.0, t[1]) + ops.rsqrt(ops.square(t[1]) + 1.0))([a, y])
    c = L.Lambda(lambda t: ops.square(t[0] - t[1]))([b, x])
    m = L.Lambda(lambda t: ops.min(t, axis=(1, 2)))(c)
    r = L.ReLU(max_value=6.0)(L.GlobalAveragePooling2D()(b))
    s = L.Lambda(lambda t: ops.squeeze(ops.slice(t, (0, 1, 0, 0), (-1, 1, 5, 4)), axis=1))(c)
    p = L.Permute((2, 1))(s)
    q = L.Conv1D(3, 2, strides=2, padding="same")(p)  # EXPAND_DIMS, CONV_2D, SQUEEZE (or a RESHAPE)
    g = L.Lambda(lambda t: ops.gelu(t, approximate=True))(m)  # GELU's tanh form
    return keras.Model(inp, [L.Concatenate()([m, r, g]), L.Flatten()(q)])


def blocks(keras):
    """DEPTH_TO_SPACE and SPACE_TO_DEPTH (tf.nn's, in a Lambda: Keras has no layer for them)."""
    tf = require_tf()
    L = keras.layers
    inp = keras.Input((6, 4, 4))
    x = L.Conv2D(12, 3, padding="same")(inp)
    x = L.Lambda(lambda t: tf.nn.depth_to_space(t, 2))(x)  # (12, 8, 3)
    x = L.Conv2D(3, 3, padding="same")(x)
    return keras.Model(inp, L.Lambda(lambda t: tf.nn.space_to_depth(t, 4))(x))  # (3, 2, 48)


def wide_dense(keras):
    """Weights large enough (>= 1024 values) for dynamic-range quantization to make them int8."""
    inp = keras.Input((32,))
    return keras.Model(inp, keras.layers.Dense(64, activation="relu")(inp))


def hybrid(keras):
    """Weights big enough (>= 1024 values) for dynamic-range quantization to make them int8 per channel:
    CONV_2D (stride-2 SAME on odd sizes, fused RELU), DEPTHWISE_CONV_2D (multiplier 4), a 1x1 CONV_2D,
    FULLY_CONNECTED after a Flatten (kernel rows reordered for channels-first) and after a MEAN."""
    L = keras.layers
    inp = keras.Input((11, 10, 16))
    x = L.Conv2D(32, 3, strides=2, padding="same", activation="relu")(inp)
    x = L.DepthwiseConv2D(3, depth_multiplier=4, padding="same")(x)
    x = L.Conv2D(16, 1)(x)
    flat = L.Dense(24)(L.Flatten()(x))
    pooled = L.Dense(80, activation="relu")(L.Dense(96)(L.GlobalAveragePooling2D()(x)))
    return keras.Model(inp, [flat, pooled])


def int_ops(keras):
    """The operators of a full-integer model beyond MobileNetV2's: pools (SAME, stride 2, odd sizes) into a
    CONCATENATION, LOGISTIC, MUL and ADD of tensors, RELU, PAD, MEAN, FULLY_CONNECTED, TANH, SOFTMAX."""
    L = keras.layers
    inp = keras.Input((13, 11, 3))
    x = L.Conv2D(8, 3, strides=2, padding="same", activation="relu6")(inp)
    x = L.Concatenate()([L.MaxPooling2D(3, strides=2, padding="same")(x),
                         L.AveragePooling2D(3, strides=2, padding="same")(x)])
    y = L.Conv2D(16, 1)(x)
    z = L.Add()([L.Multiply()([y, L.Activation("sigmoid")(y)]), y])
    z = L.ZeroPadding2D(((1, 0), (2, 1)))(L.Activation("relu")(z))
    g = L.GlobalAveragePooling2D()(z)
    d = L.Dense(12, activation="tanh")(g)
    # the intermediate tensors are outputs too, so each operator is compared, not only what a softmax leaves
    return keras.Model(inp, [L.Softmax()(L.Dense(5)(d)), d, g, z, x])


def v3_ops(keras):
    """MobileNetV3's int8 operators, each an output: HARD_SWISH, a MEAN with keep_dims (the builtin
    kernel's own 4-D path: 20 channels, 16 in its vector loop and 4 in its scalar one), hard sigmoid as
    ADD / MUL of one-number constants and RELU6, LEAKY_RELU."""
    L = keras.layers
    inp = keras.Input((9, 8, 4))
    c = L.Conv2D(20, 3, padding="same")(inp)
    hard_sigmoid = L.ReLU(6.0)(c + 3.0) * (1.0 / 6.0)
    return keras.Model(inp, [L.Activation("hard_swish")(c), L.GlobalAveragePooling2D(keepdims=True)(c),
                             hard_sigmoid, L.LeakyReLU(negative_slope=0.3)(c)])


def cnn16(keras):
    """A small Keras CNN for 16x8 quantization, each operator's result an output: CONV_2D (SAME, stride 2, odd
    sizes, fused RELU6), a batch norm (MUL / ADD of per-channel constants), DEPTHWISE_CONV_2D (multiplier 2),
    a dilated conv, both pools into a CONCATENATION, ADD / SUB / MUL of tensors, PAD, RELU, MEAN,
    FULLY_CONNECTED, SOFTMAX."""
    L = keras.layers
    inp = keras.Input((13, 11, 3))
    x = L.Conv2D(8, 3, strides=2, padding="same", activation="relu6")(inp)
    x = L.BatchNormalization()(L.Activation("relu")(x))
    x = L.DepthwiseConv2D(3, depth_multiplier=2, padding="same")(x)
    d = L.Conv2D(16, 3, dilation_rate=2, padding="same")(x)
    p = L.Concatenate()([L.MaxPooling2D(3, strides=2, padding="same")(d), L.AveragePooling2D(3, strides=2, padding="same")(d)])
    y = L.Conv2D(16, 1)(p)
    z = L.Add()([L.Multiply()([y, y]), L.Subtract()([y, L.Conv2D(16, 1)(p)])])
    z = L.ZeroPadding2D(((1, 0), (2, 1)))(L.Activation("relu")(z))
    g = L.GlobalAveragePooling2D()(z)
    return keras.Model(inp, [L.Softmax()(L.Dense(5)(g)), g, z, p, x])


def mlp16(keras):
    """A small MLP for 16x8 quantization: FULLY_CONNECTED with fused RELU / RELU6, ADD, SOFTMAX, each an output."""
    L = keras.layers
    inp = keras.Input((20,))
    h = L.Dense(32, activation="relu")(inp)
    h2 = L.Dense(32, activation="relu6")(h)
    o = L.Dense(6)(L.Add()([h, h2]))
    return keras.Model(inp, [L.Softmax()(o), o, h2])


def prelu_pad(keras):
    """PRELU (a PReLU shared over the spatial axes: one slope per channel) and PADV2 (tf.pad with a
    constant value other than 0) between stride-2 SAME convs."""
    tf = require_tf()
    L = keras.layers
    inp = keras.Input((5, 6, 3))
    x = L.PReLU(shared_axes=[1, 2])(L.Conv2D(4, 3)(inp))
    x = L.Lambda(lambda t: tf.pad(t, [[0, 0], [1, 2], [0, 1], [0, 0]], constant_values=0.5))(x)
    return keras.Model(inp, L.Conv2D(3, 3, strides=2, padding="same")(x))


def squeeze_dynamic(keras):
    """SQUEEZE: TF's converter writes it only where the input's other sizes are open (a RESHAPE otherwise)."""
    tf = require_tf()
    L = keras.layers
    inp = keras.Input((None, 1, 3))
    return keras.Model(inp, L.Activation("tanh")(L.Lambda(lambda t: tf.squeeze(t, axis=2) * 1.5)(inp)))


def lstm(keras):
    """UNIDIRECTIONAL_SEQUENCE_LSTM: TF's converter fuses a tf_keras LSTM of a fixed batch size (its last step
    taken by a STRIDED_SLICE), then a Dense. (One LSTM: each takes TF's converter ~5 s.)"""
    L = keras.layers
    inp = keras.Input((7, 4), batch_size=1)
    return keras.Model(inp, L.Dense(3)(L.LSTM(6)(inp)))


def mobilenet_v2(keras):
    return keras.applications.MobileNetV2(input_shape=(96, 96, 3), alpha=0.35, weights=None, classes=10,
                                          classifier_activation=None)  # logits: a softmax would hide errors


def mobilenet_v3_small(keras):
    return keras.applications.MobileNetV3Small(input_shape=(64, 64, 3), alpha=0.75, weights=None, classes=10,
                                               include_preprocessing=False, classifier_activation=None)


MODELS: dict[str, Callable] = {"convs": convs, "more_ops": more_ops, "elementwise": elementwise,
                               "wide_dense": wide_dense, "dense_math": dense_math, "shapes": shapes, "blocks": blocks,
                               "mobilenet_v2": mobilenet_v2, "mobilenet_v3_small": mobilenet_v3_small,
                               "prelu_pad": prelu_pad, "hybrid": hybrid, "cnn16": cnn16, "mlp16": mlp16, "int_ops": int_ops, "v3_ops": v3_ops, "squeeze_dynamic": squeeze_dynamic, "lstm": lstm}
TF_KERAS = frozenset({"lstm"})  # models made with tf_keras (Keras 2): TF's converter fuses only its LSTM
MODELS.update(models_cov.MODELS)  # the coverage matrix's own models (tests/tflite/models_cov.py)
TF_KERAS |= models_cov.TF_KERAS


def make_tflite(folder: Path, name: str, fp16: bool = False, seed: int = 0, quantize: str = "") -> Path:
    """The model ``name`` with random seeded weights, through TF's TFLite converter; ``quantize``:
    "dynamic_range" (int8 weights), "full_integer" (int8 everywhere, from a representative dataset),
    "full_integer_float_io" (the same with float input and output: QUANTIZE / DEQUANTIZE at the ends),
    "full_integer_uint8" (uint8 input and output) or
    "int16x8" (int16 activations, int8 weights)."""
    tf, keras = require_tf(), require_keras()
    if name in TF_KERAS:
        import tf_keras as keras
    keras.utils.set_random_seed(seed)
    model = MODELS[name](keras)
    _randomise(model, seed)
    if name in models_cov.SPARSE:
        models_cov.prune(model, seed)
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    if fp16:
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
        converter.target_spec.supported_types = [tf.float16]
    if quantize:
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if name in models_cov.SPARSE:  # pruned weights stored sparse (DENSIFY), in every variant
        converter.optimizations = [tf.lite.Optimize.EXPERIMENTAL_SPARSITY, *converter.optimizations]
    if quantize in ("full_integer", "full_integer_float_io", "int16x8", "full_integer_uint8"):
        shape = tuple(d or 3 for d in model.inputs[0].shape[1:])  # an open size: 3 (squeeze_dynamic's length)
        rng = np.random.default_rng(seed)
        converter.representative_dataset = lambda: ([rng.normal(size=(1, *shape)).astype(np.float32)]
                                                    for _ in range(4))
    if quantize in ("full_integer", "full_integer_float_io"):  # float_io: QUANTIZE / DEQUANTIZE at the ends
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    if quantize == "full_integer":
        converter.inference_input_type = converter.inference_output_type = tf.int8
    if quantize == "full_integer_uint8":  # uint8 input and output: QUANTIZE uint8 <-> int8 at the ends
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        converter.inference_input_type = converter.inference_output_type = tf.uint8
    if quantize == "int16x8":  # 16x8: int16 activations, int8 weights (float input and output)
        converter.target_spec.supported_ops = [tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8]
    path = folder / f"{name}{'_fp16' if fp16 else ''}{'_' + quantize if quantize else ''}.tflite"
    path.write_bytes(converter.convert())
    return path


def _interpreter(path: Path, xnnpack: bool = False):
    tf = require_tf()
    import warnings

    kinds = tf.lite.experimental.OpResolverType
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # tf.lite.Interpreter's deprecation notice (LiteRT moves out of TF)
        return tf.lite.Interpreter(model_path=str(path), experimental_op_resolver_type=kinds.AUTO if xnnpack
                                   else kinds.BUILTIN_WITHOUT_DEFAULT_DELEGATES)


def input_shapes(path: Path) -> list[tuple[int, ...]]:
    """The signature's input shapes (batch 1), in signature order."""
    details = _interpreter(path).get_signature_runner().get_input_details()
    return [tuple(int(d) for d in details[k]["shape"]) for k in details]


def interpret(path: Path, inputs: list[np.ndarray], xnnpack: bool = False) -> list[np.ndarray]:
    """The LiteRT interpreter's outputs (TF's tf.lite.Interpreter, builtin kernels without the XNNPACK
    delegate; ``xnnpack``: with it, LiteRT's default), in signature order."""
    runner = _interpreter(path, xnnpack).get_signature_runner()
    details = runner.get_input_details()
    outs = runner(**dict(zip(details, inputs)))
    return [outs[k] for k in sorted(outs)]
