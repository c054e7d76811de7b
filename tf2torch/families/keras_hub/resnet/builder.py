"""keras-hub's ResNetBackbone: ResNet v1 and v2 (``use_pre_activation``), basic and bottleneck blocks and
their ``_vd`` forms (an average-pooled shortcut), channels-last.

Written from keras-hub 0.32's ``resnet/resnet_backbone.py``; its layer names, paddings (an explicit
ZeroPadding2D before each strided conv), BatchNorm epsilon 1e-5 and momentum 0.9.
"""

from __future__ import annotations

from typing import Any

from ..common.args import Args, builds
from ..common.functional import FunctionalGraph, Ref
from ..common.keras_layers import activation, batch_norm, conv2d, image, pool2d, positive_ints, zero_pad2d

BLOCKS = ("basic_block", "bottleneck_block", "basic_block_vd", "bottleneck_block_vd")


def _bn(g: FunctionalGraph, name: str, x: Ref) -> Ref:
    return batch_norm(g, name, x, 1e-5, momentum=0.9)


def _block(g: FunctionalGraph, x: Ref, filters: int, stride: int, shortcut_conv: bool, kind: str, pre: bool,
           name: str) -> Ref:
    """apply_basic_block / apply_bottleneck_block and their _vd forms."""
    bottleneck, vd = kind.startswith("bottleneck"), kind.endswith("_vd")
    out_filters = 4 * filters if bottleneck else filters
    preact = activation(g, f"{name}_pre_activation_relu", _bn(g, f"{name}_pre_activation_bn", x)) if pre else None
    if shortcut_conv:
        shortcut = preact if preact is not None else x
        if vd and preact is None and stride > 1:  # _vd: average-pool, then a stride-1 1x1 conv
            shortcut = pool2d(g, "Average", g.auto_name("average_pooling2d"), shortcut, 2, stride, padding="same")
        shortcut = conv2d(g, f"{name}_0_conv", shortcut, out_filters, 1, strides=1 if vd else stride, use_bias=False)
        if not pre:
            shortcut = _bn(g, f"{name}_0_bn", shortcut)
    else:
        shortcut = x
    x = preact if preact is not None else x
    convs = [(filters, 1, 1), (filters, 3, stride), (4 * filters, 1, 1)] if bottleneck else \
        [(filters, 3, stride), (filters, 3, 1)]
    for i, (width, kernel, strides) in enumerate(convs, start=1):
        if strides > 1:
            x = zero_pad2d(g, f"{name}_{i}_pad", x, (kernel - 1) // 2)
        x = conv2d(g, f"{name}_{i}_conv", x, width, kernel, strides=strides,
                   padding="valid" if strides > 1 or kernel == 1 else "same", use_bias=False)
        if i < len(convs):
            x = activation(g, f"{name}_{i}_relu", _bn(g, f"{name}_{i}_bn", x))
        elif not pre:
            x = _bn(g, f"{name}_{i}_bn", x)
    if pre:
        return g.layer("Add", f"{name}_out", {}, [shortcut, x])
    return activation(g, f"{name}_out", g.layer("Add", f"{name}_add", {}, [shortcut, x]))


@builds("ResNetBackbone")
def resnet(args: Args) -> dict[str, Any]:
    g = FunctionalGraph(args.name, args.dtype, keyed_inputs=False)
    x = image(args, g)
    stem_filters, stem_kernels = positive_ints(args, "input_conv_filters"), positive_ints(args, "input_conv_kernel_sizes")
    filters, blocks = positive_ints(args, "stackwise_num_filters"), positive_ints(args, "stackwise_num_blocks")
    strides = positive_ints(args, "stackwise_num_strides")
    kind, pre = args.str("block_type", choices=BLOCKS), args.bool("use_pre_activation", False)
    if len(stem_filters) != len(stem_kernels) or not len(filters) == len(blocks) == len(strides):
        raise args.fail("stackwise_num_filters", "lists of matching lengths (keras-hub checks this)")
    x = zero_pad2d(g, "conv1_pad", x, (stem_kernels[0] - 1) // 2)
    x = conv2d(g, "conv1_conv", x, stem_filters[0], stem_kernels[0], strides=2, use_bias=False)
    for i in range(1, len(stem_filters)):
        x = activation(g, f"conv{i}_relu", _bn(g, f"conv{i}_bn", x))
        x = conv2d(g, f"conv{i + 1}_conv", x, stem_filters[i], stem_kernels[i], padding="same", use_bias=False)
    if pre:  # ops.pad with -inf: the max-pool's padding never wins
        x = g.op("Pad", "keras.src.ops.numpy", g.auto_name("pad"),
                 {"pad_width": [[0, 0], [1, 1], [1, 1], [0, 0]], "mode": "constant"}, x, constant_values=float("-inf"))
    else:
        n = len(stem_filters)
        x = activation(g, f"conv{n}_relu", _bn(g, f"conv{n}_bn", x))
        x = zero_pad2d(g, "pool1_pad", x, 1)
    x = pool2d(g, "Max", "pool1_pool", x, 3, strides=2)
    for stack, (width, count, stride) in enumerate(zip(filters, blocks, strides)):
        for i in range(count):
            x = _block(g, x, width, stride if i == 0 else 1, i == 0 and (kind != "basic_block" or stack > 0),
                       kind, pre, f"stack{stack}_block{i}")
    if pre:
        x = activation(g, "post_relu", _bn(g, "post_bn", x))
    return g.model(args.class_name, x)
