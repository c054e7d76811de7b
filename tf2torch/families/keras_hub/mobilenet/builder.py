"""keras-hub's MobileNetBackbone (MobileNetV3 small / large as keras-hub converts them from timm): a padded
strided stem conv, one DepthwiseConvBlock, stacks of InvertedResidualBlocks and a 1x1 ConvBnActBlock. The
three blocks are keras-hub layers of their own (converted in ``families/keras_hub/mobilenet/converters.py``).

Written from keras-hub 0.32's ``mobilenet/mobilenet_backbone.py`` and ``mobilenet/util.py``.
"""

from __future__ import annotations

from typing import Any

from ..common.args import Args, builds
from ..common.functional import FunctionalGraph, Ref
from ..common.keras_layers import activation, batch_norm, conv2d, image, zero_pad2d

# The blocks are plain Keras Layer subclasses, not registered: Keras saves them under their module and
# bare class name, which is what a Functional config of the live model holds.
MODULE = "keras_hub.src.models.mobilenet.mobilenet_backbone"
BN_EPSILON, BN_MOMENTUM = 1e-5, 0.9  # mobilenet_backbone.BN_EPSILON / BN_MOMENTUM
_CANONICAL = {"swish": "silu", "hard_swish": "hard_silu"}  # the names Keras 3 saves these activations under


def adjust_channels(x: float, divisor: int = 8) -> int:
    """util.adjust_channels: ``x`` rounded to a multiple of 8 (at least 8), never more than 10% down."""
    new = max(divisor, int(x + divisor / 2) // divisor * divisor)
    return new + divisor if new < 0.9 * x else new


def _block(g: FunctionalGraph, class_name: str, name: str, config: dict[str, Any], x: Ref) -> Ref:
    return g.layer(class_name, name, config, x, module=MODULE, registered=class_name)


def _is_ratio(value: Any) -> bool:
    """A squeeze-and-excite ratio: null (or 0) for none, as keras-hub tests it for truth."""
    return value is None or (not isinstance(value, bool) and isinstance(value, (int, float)) and value >= 0)


def _per_block(args: Args, key: str, counts: list[int], check: Any, expected: str) -> list[list[Any]]:
    """A stackwise list of lists: one entry per inverted residual block of each stack."""
    value = args.raw(key)
    if not isinstance(value, list) or len(value) < len(counts) or \
            any(not isinstance(v, list) or len(v) < n for v, n in zip(value, counts)):
        raise args.fail(key, f"a list of lists, {counts} entries")
    if not all(check(item) for v, n in zip(value, counts) for item in v[:n]):
        raise args.fail(key, f"lists of {expected}")
    return value


def _positive(v: Any) -> bool:
    return not isinstance(v, bool) and isinstance(v, int) and v >= 1


@builds("MobileNetBackbone")
def mobilenet(args: Args) -> dict[str, Any]:
    counts = args.raw("stackwise_num_blocks")
    if not isinstance(counts, list) or any(isinstance(n, bool) or not isinstance(n, int) or n < 0 for n in counts):
        raise args.fail("stackwise_num_blocks", "a list of non-negative integers")
    expansion = _per_block(args, "stackwise_expansion", counts, _positive, "positive integers")
    filters = _per_block(args, "stackwise_num_filters", counts, _positive, "positive integers")
    kernels = _per_block(args, "stackwise_kernel_size", counts, _positive, "positive integers")
    strides = _per_block(args, "stackwise_num_strides", counts, _positive, "positive integers")
    padding = _per_block(args, "stackwise_padding", counts, lambda v: _positive(v) or v == 0, "integers >= 0")
    acts = _per_block(args, "stackwise_activation", counts, lambda v: isinstance(v, str), "activation names")
    se = _per_block(args, "stackwise_se_ratio", counts, _is_ratio, "non-negative numbers or nulls")
    # saved, but the constructor builds nothing from them: the last block's activation is always hard_swish
    args.raw("output_num_filters")
    args.raw("output_activation")
    dw_filters, dw_stride = args.int("depthwise_filters"), args.int("depthwise_stride")
    dw_residual, dw_se = args.bool("depthwise_residual"), args.raw("squeeze_and_excite")
    if not _is_ratio(dw_se):
        raise args.fail("squeeze_and_excite", "a non-negative number or null")
    stem = adjust_channels(args.int("input_num_filters", 16))  # saved already adjusted (idempotent)
    if dw_residual and (dw_stride != 1 or dw_filters != stem):
        raise args.fail("depthwise_residual", f"false for a block of stride {dw_stride} from {stem} to {dw_filters} "
                        "channels (keras-hub cannot add its input)")

    g = FunctionalGraph(args.name, args.dtype, keyed_inputs=False)
    x = zero_pad2d(g, "input_pad", image(args, g), 1)
    x = conv2d(g, "input_conv", x, stem, 3, strides=2, use_bias=False)
    x = batch_norm(g, "input_batch_norm", x, BN_EPSILON, BN_MOMENTUM)
    act = args.str("input_activation", "hard_swish")
    x = activation(g, g.auto_name("activation"), x, _CANONICAL.get(act, act))
    # the block is constructed as name="block_0" and renames itself "block_0_0"
    x = _block(g, "DepthwiseConvBlock", "block_0_0", {
        "infilters": stem, "filters": dw_filters, "kernel_size": 3, "stride": dw_stride,
        "squeeze_excite_ratio": dw_se, "residual": dw_residual}, x)
    channels = dw_filters
    for stack, count in enumerate(counts):
        for i in range(count):
            out = adjust_channels(filters[stack][i])
            x = _block(g, "InvertedResidualBlock", f"block_{stack + 1}_{i}", {
                "expansion": expansion[stack][i], "infilters": channels, "filters": out,
                "kernel_size": kernels[stack][i], "stride": strides[stack][i],
                "squeeze_excite_ratio": se[stack][i],
                "activation": acts[stack][i], "padding": padding[stack][i]}, x)
            channels = out
    x = _block(g, "ConvBnActBlock", f"block_{len(counts) + 1}_0", {
        "filter": adjust_channels(args.int("last_layer_filter")), "activation": "hard_swish"}, x)
    return g.model(args.class_name, x)
