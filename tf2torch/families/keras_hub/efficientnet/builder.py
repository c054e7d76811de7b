"""keras-hub's EfficientNetBackbone: a padded stem conv, stacks of blocks, a 1x1 top conv. The "v1" blocks
(EfficientNet B0–B7 and lite0 as keras-hub converts them from timm) are Keras layers called in a Functional
way: 1x1 expansion, padded depthwise conv, squeeze-and-excitation, 1x1 projection, residual. The "fused"
(FusedMBConvBlock), "unfused" (MBConvBlock) and "cba" (CBABlock) blocks of EfficientNetV2 and the EdgeTPU
variants are keras-hub layers of their own (converted in ``families/keras_hub/efficientnet/converters.py``).

Written from keras-hub 0.32's ``efficientnet/efficientnet_backbone.py``, ``fusedmbconv.py``, ``mbconv.py``, ``cba.py``.
"""

from __future__ import annotations

import math
from typing import Any

from ..common.args import Args, builds
from ..common.functional import FunctionalGraph, Ref
from ..common.keras_layers import (
    CHANNELS_LAST,
    activation,
    batch_norm,
    channels_last_only,
    conv2d,
    positive_ints,
    zero_pad2d,
)

_CANONICAL = {"swish": "silu", "hard_swish": "hard_silu"}  # the names Keras saves activations under
# The three blocks are keras-hub Layer subclasses no registration names: Keras saves them under their module
# and bare class name, which is what a Functional config of the live model holds.
BLOCKS = {"fused": ("FusedMBConvBlock", "keras_hub.src.models.efficientnet.fusedmbconv"),
          "unfused": ("MBConvBlock", "keras_hub.src.models.efficientnet.mbconv"),
          "cba": ("CBABlock", "keras_hub.src.models.efficientnet.cba")}


def _round_filters(filters: float, width: float, min_depth: int | None, divisor: int, divisor_as_min: bool,
                   cap: bool) -> int:
    filters *= width
    floor = divisor if divisor_as_min else min_depth
    new = max(floor or 0, int(filters + divisor / 2) // divisor * divisor)
    if cap and new < 0.9 * filters:  # the round down may not lose more than 10%
        new += divisor
    return int(new)


def _numbers(args: Args, key: str, n: int) -> list[float]:
    value = args.raw(key)
    if not isinstance(value, list) or len(value) != n or any(isinstance(v, bool) or not isinstance(v, (int, float))
                                                          for v in value):
        raise args.fail(key, f"a list of {n} numbers")
    return value


def _block(g: FunctionalGraph, x: Ref, name: str, filters_in: int, filters_out: int, kernel: int, strides: int,
           expand: int, se_ratio: float, act: str, projection: Any, dropout: float, eps: float) -> Ref:
    inputs, filters = x, filters_in * expand
    bn = {"axis": 3, "momentum": 0.99, "epsilon": eps, "center": True, "scale": True}  # the blocks' own BNs
    if expand != 1:
        x = conv2d(g, name + "expand_conv", x, filters, 1, padding="same", use_bias=False)
        x = activation(g, name + "expand_activation", g.layer("BatchNormalization", name + "expand_bn", bn, x), act)
    x = zero_pad2d(g, name + "dwconv_pad", x, kernel // 2)
    x = g.layer("DepthwiseConv2D", name + "dwconv", {
        "depth_multiplier": 1, "kernel_size": [kernel, kernel], "strides": [strides, strides], "padding": "valid",
        "data_format": CHANNELS_LAST, "dilation_rate": [1, 1], "activation": "linear", "use_bias": False}, x)
    x = activation(g, name + "dwconv_activation", g.layer("BatchNormalization", name + "dwconv_bn", bn, x), act)
    if 0 < se_ratio <= 1:
        se = g.layer("GlobalAveragePooling2D", name + "se_squeeze", {"data_format": CHANNELS_LAST, "keepdims": False}, x)
        se = g.layer("Reshape", name + "se_reshape", {"target_shape": [1, 1, filters]}, se)
        se = conv2d(g, name + "se_reduce", se, max(1, int(filters_in * se_ratio)), 1, padding="same", activation=act)
        se = conv2d(g, name + "se_expand", se, filters, 1, padding="same", activation="sigmoid")
        x = g.layer("Multiply", name + "se_excite", {}, [x, se])
    x = conv2d(g, name + "project", x, filters_out, 1, padding="same", use_bias=False)
    x = g.layer("BatchNormalization", name + "project_bn", bn, x)
    if projection:
        x = activation(g, name + "projection_activation", x, _CANONICAL.get(projection, projection))
    if strides == 1 and filters_in == filters_out:
        if dropout > 0:
            x = g.layer("Dropout", name + "drop", {"rate": dropout, "noise_shape": [None, 1, 1, 1]}, x)
        x = g.layer("Add", name + "add", {}, [x, inputs])
    return x


def _hub_block(g: FunctionalGraph, x: Ref, kind: str, name: str, filters_in: int, filters_out: int, kernel: int,
               strides: int, expand: int, se_ratio: float, act: str, projection: Any, dropout: float,
               bn: tuple[float, float], nores: bool) -> Ref:
    """One keras-hub block layer, with the arguments the backbone passes it (its get_config's keys)."""
    class_name, module = BLOCKS[kind]
    config: dict[str, Any] = {
        "input_filters": filters_in, "output_filters": filters_out, "kernel_size": kernel, "strides": strides,
        "data_format": CHANNELS_LAST, "batch_norm_momentum": bn[0], "batch_norm_epsilon": bn[1],
        "activation": act, "dropout": dropout, "nores": nores}  # the activation as passed: "swish" stays "swish"
    if kind != "cba":
        config.update(expand_ratio=expand, se_ratio=se_ratio)
    if kind == "fused":  # projection_kernel_size: the backbone never passes it, so the block's default
        config.update(projection_activation=projection, projection_kernel_size=1)
    return g.layer(class_name, name, config, x, module=module, registered=class_name)


def _per_stack(args: Args, key: str, n: int, default: list[Any], check: Any, expected: str) -> list[Any]:
    """A list keras-hub indexes by stack only (never from the end), so it may be longer: its default has 7."""
    value = args.raw(key, default)
    if not isinstance(value, list) or len(value) < n or not all(check(v) for v in value[:n]):
        raise args.fail(key, f"a list of at least {n} {expected}, one per stack")
    return value


@builds("EfficientNetBackbone")
def efficientnet(args: Args) -> dict[str, Any]:
    kinds = args.raw("stackwise_block_types")
    if not isinstance(kinds, list) or not kinds or any(k != "v1" and k not in BLOCKS for k in kinds):
        raise args.fail("stackwise_block_types", "a list of \"v1\", \"fused\", \"unfused\" or \"cba\"")
    n = len(kinds)
    kernels, repeats = positive_ints(args, "stackwise_kernel_sizes"), positive_ints(args, "stackwise_num_repeats")
    filters_in, filters_out = positive_ints(args, "stackwise_input_filters"), positive_ints(args, "stackwise_output_filters")
    expansions, strides = positive_ints(args, "stackwise_expansion_ratios"), positive_ints(args, "stackwise_strides")
    se_ratios, widths = _numbers(args, "stackwise_squeeze_and_excite_ratios", n), _numbers(args, "stackwise_width_coefficients", n)
    depths = _numbers(args, "stackwise_depth_coefficients", n)
    if any(len(v) != n for v in (kernels, repeats, filters_in, filters_out, expansions, strides)):
        raise args.fail("stackwise_kernel_sizes", f"lists of {n} entries, one per stack")
    forced = _per_stack(args, "stackwise_force_input_filters", n, [0] * 7,
                        lambda v: not isinstance(v, bool) and isinstance(v, int), "integers")
    # keras-hub 0.32's get_config leaves nores out, so a reloaded model has the default; read it when present
    nores = _per_stack(args, "stackwise_nores_option", n, [False] * 7, lambda v: isinstance(v, bool), "booleans")
    divisor, min_depth = args.int("depth_divisor", 8), args.raw("min_depth", 8)
    rounding = (min_depth, divisor, args.bool("use_depth_divisor_as_min_depth", False),
                args.bool("cap_round_filter_decrease", False))
    raw_act = args.str("activation", "swish")
    act = _CANONICAL.get(raw_act, raw_act)
    projection = args.raw("projection_activation")
    if projection is not None and not isinstance(projection, str):
        raise args.fail("projection_activation", "an activation name or null")
    momentum, eps = args.number("batch_norm_momentum", 0.9), args.number("batch_norm_epsilon", 1e-5)
    dropout = args.number("dropout", 0.2)
    channels_last_only(args)

    g = FunctionalGraph(args.name, args.dtype, keyed_inputs=False)
    shape = args.raw("input_shape", [None, None, 3])
    x = g.input("input_layer", tuple(shape) if isinstance(shape, list) else (None, None, 3), "float32")
    if args.bool("include_stem_padding", True):
        x = zero_pad2d(g, "stem_conv_pad", x, 1)
    x = conv2d(g, "stem_conv", x, _round_filters(filters_in[0], widths[0], *rounding), 3, strides=2,
               padding=args.str("stem_conv_padding", "valid", ("valid", "same")), use_bias=False)
    x = activation(g, "stem_activation", batch_norm(g, "stem_bn", x, eps, momentum), act)
    block, total = 0, float(sum(repeats))
    for i in range(n):
        fin, fout = (_round_filters(f, widths[i], *rounding) for f in (filters_in[i], filters_out[i]))
        stride = strides[i]
        for j in range(int(math.ceil(depths[i] * repeats[i]))):
            if j > 0:
                stride, fin = 1, fout
            if forced[i] > 0:
                fin = _round_filters(forced[i], widths[i], *rounding)
            name, rate = f"block{i + 1}{chr(j + 97)}_", dropout * block / total  # the rate: identity at inference
            if kinds[i] == "v1":
                x = _block(g, x, name, fin, fout, kernels[i], stride, expansions[i], se_ratios[i], act, projection,
                           rate, eps)
            else:
                x = _hub_block(g, x, kinds[i], name, fin, fout, kernels[i], stride, expansions[i], se_ratios[i],
                               raw_act, projection, rate, (momentum, eps), nores[i])
            block += 1
    x = conv2d(g, "top_conv", x, _round_filters(args.int("num_features", 1280), widths[-1], *rounding), 1,
               padding="same", use_bias=False)
    x = activation(g, "top_activation", batch_norm(g, "top_bn", x, eps, momentum), act)
    return g.model(args.class_name, x)
