"""keras-hub's MobileNet blocks (DepthwiseConvBlock, InvertedResidualBlock, ConvBnActBlock) as one module each,
``KerasHubDepthwiseConvBlock`` / ``KerasHubInvertedResidualBlock`` / ``KerasHubConvBnActBlock``, their
squeeze-and-excitation as ``KerasHubSqueezeExcite`` inside (``runtime.py``; tests/codegen/test_library.py
checks its BatchNorms carry ``builder.py``'s BN_EPSILON / BN_MOMENTUM).

The blocks are plain Layer subclasses, saved under their module and bare class name. Their BatchNorms'
epsilon and momentum are constants of keras-hub's module, not in any config (the helpers carry them).
Written from keras-hub 0.32's ``mobilenet/mobilenet_backbone.py``.
"""

from __future__ import annotations

from typing import Any

from ....layers.base import Converted, Ctx, Module, Param, TensorInfo
from ....layers.common import apply_module, cfg_bool, cfg_float, cfg_int, channels_last, param
from ....layers.registry import converter
from ..common.converters import block_activation, conv_bn_params, sublayer_weights
from .builder import BN_EPSILON, MODULE, adjust_channels

QUALIFIED = MODULE + ">"  # the blocks are found by module>class (qualified_class_name)
_BN = {"batch_normalization1": 4, "batch_normalization2": 4, "batch_normalization3": 4}
HELPERS = ("keras_hub_activation", "KerasHubSqueezeExcite")


class _Block:
    """One block's params under its torch attribute names, and its output shape, built conv by conv."""

    def __init__(self, ctx: Ctx, weights: dict[str, tuple[Any, ...]]) -> None:
        self.ctx, self.w = ctx, weights
        self.params: list[Param] = []
        self.shape: tuple[int | None, ...] = ctx.x.shape

    def conv_bn(self, conv: str, sublayer: str, bn: str, bn_sublayer: str, filters: int, kernel: int = 1,
                stride: int = 1, pad: int = 0) -> None:
        """A bias-free conv (after ``pad`` zeros on each side: keras-hub's ZeroPadding2D before a "valid" conv,
        the same numbers as torch's conv padding) and its BatchNorm."""
        size = [None if s is None else (s + 2 * pad - kernel) // stride + 1 for s in self.shape[:2]]
        if any(s is not None and s < 1 for s in size):
            raise self.ctx.unsupported(f"a {kernel}x{kernel} conv of stride {stride} leaves no output of "
                                       f"{self.shape[:2]}")
        self.shape = (*size, filters)
        self.params += conv_bn_params(conv, bn, self.w[sublayer][0], self.w[bn_sublayer])

    def squeeze_excite(self, sublayer: str, ratio: float) -> int:
        """The SE's params (``se.*``) and its bottleneck width."""
        reduce, expand = self.w[f"{sublayer}/conv_reduce"], self.w[f"{sublayer}/conv_expand"]
        self.params += [param("", "se.conv_reduce.weight", reduce[0], "conv2d"), param("", "se.conv_reduce.bias", reduce[1]),
                        param("", "se.conv_expand.weight", expand[0], "conv2d"), param("", "se.conv_expand.bias", expand[1])]
        return adjust_channels((self.shape[-1] or 0) * ratio)

    def residual(self) -> bool:
        if self.shape != self.ctx.x.shape:
            raise self.ctx.unsupported(f"a residual add of {self.ctx.x.shape} and {self.shape}")
        return True

    def done(self, cls: str, *args: Any) -> Converted:
        return Converted((apply_module(Module(cls, args)),), (TensorInfo(self.shape, "cf"),), tuple(self.params),
                         helpers=(*HELPERS, cls), notes=(f"BatchNorm epsilon {BN_EPSILON:g} carried over",))


def _start(ctx: Ctx, expected: dict[str, int], se: str | None) -> tuple[_Block, int]:
    """The block's weights by sublayer (its SE's when ``se`` names it) and the input's channels, checked against
    ``infilters`` when the config has one."""
    channels_last(ctx)
    if ctx.x.rank != 4:
        raise ctx.unsupported(f"expected an image (N, H, W, C), found {ctx.x.shape}")
    channels = ctx.x.shape[-1]
    if channels is None:
        raise ctx.unsupported("the number of input channels is unknown")
    if "infilters" in ctx.config and cfg_int(ctx, "infilters") != channels:
        raise ctx.unsupported(f"infilters={ctx.config['infilters']} but the input has {channels} channels")
    if se:
        expected = {**expected, f"{se}/conv_reduce": 2, f"{se}/conv_expand": 2}
    return _Block(ctx, sublayer_weights(ctx, expected)), channels


def _se_ratio(ctx: Ctx) -> float:
    """The block's SE ratio; 0 for none (keras-hub tests it for truth: null and 0 build no SE layer)."""
    return 0.0 if ctx.config.get("squeeze_excite_ratio") is None else cfg_float(ctx, "squeeze_excite_ratio")


@converter(QUALIFIED + "DepthwiseConvBlock", wants="cf")
def depthwise_conv_block(ctx: Ctx) -> Converted:
    """Pad 1, depthwise conv, BN, ReLU, [SE], 1x1 conv, BN, [+ input]."""
    se = _se_ratio(ctx)
    b, channels = _start(ctx, {"conv1": 1, "conv2": 1, "batch_normalization1": 4, "batch_normalization2": 4},
                         "se_layer" if se else None)
    kernel, stride, filters = cfg_int(ctx, "kernel_size", 3), cfg_int(ctx, "stride", 2), cfg_int(ctx, "filters")
    # padding (1, 1) whatever the kernel size: keras-hub's
    b.conv_bn("conv1", "conv1", "bn1", "batch_normalization1", channels, kernel, stride, 1)
    bottleneck = b.squeeze_excite("se_layer", se) if se else 0
    b.conv_bn("conv2", "conv2", "bn2", "batch_normalization2", filters)
    residual = cfg_bool(ctx, "residual", False) and b.residual()
    return b.done("KerasHubDepthwiseConvBlock", channels, filters, kernel, stride, bottleneck, residual)


@converter(QUALIFIED + "InvertedResidualBlock", wants="cf")
def inverted_residual_block(ctx: Ctx) -> Converted:
    """1x1 conv to the expanded width, BN, act, pad, depthwise conv, BN, act, [SE], 1x1 conv, BN, and the
    input added when stride is 1 and infilters == filters."""
    se = _se_ratio(ctx)
    b, channels = _start(ctx, {"conv1": 1, "conv2": 1, "conv3": 1, **_BN}, "squeeze_excite" if se else None)
    expanded, filters = adjust_channels(cfg_int(ctx, "expansion")), cfg_int(ctx, "filters")
    kernel, stride, pad, act = cfg_int(ctx, "kernel_size"), cfg_int(ctx, "stride"), cfg_int(ctx, "padding"), \
        block_activation(ctx, ctx.config.get("activation"))
    b.conv_bn("conv1", "conv1", "bn1", "batch_normalization1", expanded)
    b.conv_bn("conv2", "conv2", "bn2", "batch_normalization2", expanded, kernel, stride, pad)
    bottleneck = b.squeeze_excite("squeeze_excite", se) if se else 0
    b.conv_bn("conv3", "conv3", "bn3", "batch_normalization3", filters)
    residual = stride == 1 and cfg_int(ctx, "infilters") == filters and b.residual()
    return b.done("KerasHubInvertedResidualBlock", channels, expanded, filters, kernel, stride, pad, act, bottleneck,
                  residual)


@converter(QUALIFIED + "ConvBnActBlock", wants="cf")
def conv_bn_act_block(ctx: Ctx) -> Converted:
    """1x1 conv, BN, activation."""
    b, channels = _start(ctx, {"conv": 1, "batch_normalization": 4}, None)
    filters, act = cfg_int(ctx, "filter"), block_activation(ctx, ctx.config.get("activation"))
    b.conv_bn("conv", "conv", "bn", "batch_normalization", filters)
    return b.done("KerasHubConvBnActBlock", channels, filters, act)
