"""keras-hub image backbones built from Keras layers only: VGG and DenseNet (channels-last, as keras-hub
builds them under Keras's default image data format).

Written from keras-hub 0.32's ``vgg/vgg_backbone.py`` and ``densenet/densenet_backbone.py``.
"""

from __future__ import annotations

from typing import Any

from ..common.args import Args, builds
from ..common.functional import FunctionalGraph
from ..common.keras_layers import activation, batch_norm, conv2d, image, pool2d, positive_ints

DENSENET_BN_EPSILON = 1.001e-5  # densenet_backbone.BN_EPSILON


@builds("VGGBackbone")
def vgg(args: Args) -> dict[str, Any]:
    g = FunctionalGraph(args.name, args.dtype, keyed_inputs=False)
    x = image(args, g)
    repeats, filters = positive_ints(args, "stackwise_num_repeats"), positive_ints(args, "stackwise_num_filters")
    if len(repeats) != len(filters):
        raise args.fail("stackwise_num_filters", f"{len(repeats)} values, one per stack")
    for stack, (count, width) in enumerate(zip(repeats, filters), start=1):
        for i in range(1, count + 1):
            x = conv2d(g, f"block{stack}_conv{i}", x, width, 3, padding="same", activation="relu")
        x = pool2d(g, "Max", f"block{stack}_pool", x, 2)
    return g.model(args.class_name, x)


@builds("DenseNetBackbone")
def densenet(args: Args) -> dict[str, Any]:
    g = FunctionalGraph(args.name, args.dtype, keyed_inputs=False)
    x = image(args, g)
    repeats = positive_ints(args, "stackwise_num_repeats")
    growth, compression = args.int("growth_rate", 32), args.float("compression_ratio", 0.5)
    eps = DENSENET_BN_EPSILON
    x = conv2d(g, "conv1_conv", x, 64, 7, strides=2, padding="same", use_bias=False)
    x = activation(g, "conv1_relu", batch_norm(g, "conv1_bn", x, eps))
    x = pool2d(g, "Max", "pool1", x, 3, strides=2, padding="same")
    channels = 64
    for stack, count in enumerate(repeats, start=1):
        for i in range(1, count + 1):  # apply_conv_block: BN-ReLU-1x1 conv, BN-ReLU-3x3 conv, concat
            name = f"stack{stack}_block{i}"
            y = activation(g, f"{name}_1_relu", batch_norm(g, f"{name}_1_bn", x, eps))
            y = conv2d(g, f"{name}_1_conv", y, 4 * growth, 1, use_bias=False)
            y = activation(g, f"{name}_2_relu", batch_norm(g, f"{name}_2_bn", y, eps))
            y = conv2d(g, f"{name}_2_conv", y, growth, 3, padding="same", use_bias=False)
            x = g.layer("Concatenate", f"{name}_concat", {"axis": -1}, [x, y])
            channels += growth
        if stack < len(repeats):  # apply_transition_block
            name = f"transition{stack}"
            x = activation(g, f"{name}_relu", batch_norm(g, f"{name}_bn", x, eps))
            channels = int(channels * compression)
            x = conv2d(g, f"{name}_conv", x, channels, 1, use_bias=False)
            x = pool2d(g, "Average", f"{name}_pool", x, 2)
    x = activation(g, "relu", batch_norm(g, "bn", x, eps))
    return g.model(args.class_name, x)
