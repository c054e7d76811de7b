"""keras-hub's MobileNet blocks (DepthwiseConvBlock, InvertedResidualBlock, ConvBnActBlock) as chains of
torch convs, BatchNorms and activations, their squeeze-and-excitation as ``KerasHubSqueezeExcite``
(``codegen/helpers_keras_hub_mobilenet.py``).

The blocks are plain Layer subclasses, saved under their module and bare class name. Their BatchNorms'
epsilon and momentum are constants of keras-hub's module, not in any config. Written from keras-hub 0.32's
``mobilenet/mobilenet_backbone.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...map import layouts
from ...readers.keras_hub.mobilenet import BN_EPSILON, BN_MOMENTUM, MODULE, adjust_channels
from ..base import Converted, Ctx, Module, Op, Param, TensorInfo
from ..common import activation_ops, apply_module, cfg_bool, cfg_float, cfg_int, channels_last, param
from ..registry import converter
from .common import sublayer_weights

QUALIFIED = MODULE + ">"  # the blocks are found by module>class (qualified_class_name)
_BN = {"batch_normalization1": 4, "batch_normalization2": 4, "batch_normalization3": 4}


class _Chain:
    """The ops, params and shape of one block, built step by step (each module its own attribute)."""

    def __init__(self, ctx: Ctx, weights: dict[str, tuple[Any, ...]]) -> None:
        self.ctx, self.w = ctx, weights
        self.ops: list[Op] = []
        self.params: list[Param] = []
        self.shape: tuple[int | None, ...] = ctx.x.shape
        self.helpers: tuple[str, ...] = ()

    def info(self) -> TensorInfo:
        return TensorInfo(self.shape, "cf")

    def conv(self, suffix: str, sublayer: str, filters: int, kernel: int = 1, stride: int = 1, pad: int = 0,
             depthwise: bool = False) -> None:
        """A bias-free Conv2D (``depthwise``: groups = channels) after ``pad`` zeros on each side (keras-hub's
        ZeroPadding2D before a "valid" conv, the same numbers as torch's conv padding)."""
        channels = self.shape[-1]
        if channels is None:
            raise self.ctx.unsupported("the number of input channels is unknown")
        module = Module("nn.Conv2d", (channels, filters, (kernel, kernel)), (
            ("stride", (stride, stride)), ("padding", (pad, pad)), ("groups", channels if depthwise else 1),
            ("bias", False)))
        self.ops.append(apply_module(module, suffix))
        self.params.append(param(suffix, "weight", self.w[sublayer][0], "conv2d"))
        size = [None if s is None else (s + 2 * pad - kernel) // stride + 1 for s in self.shape[:2]]
        if any(s is not None and s < 1 for s in size):
            raise self.ctx.unsupported(f"a {kernel}x{kernel} conv of stride {stride} leaves no output of "
                                       f"{self.shape[:2]}")
        self.shape = (*size, filters)

    def batch_norm(self, suffix: str, sublayer: str) -> None:
        gamma, beta, mean, variance = self.w[sublayer]
        # Keras: moving = m * moving + (1 - m) * batch; torch: moving = (1 - m') * moving + m' * batch
        module = Module("nn.BatchNorm2d", (self.shape[-1],), (("eps", BN_EPSILON),
                                                              ("momentum", round(1 - BN_MOMENTUM, 10))))
        self.ops.append(apply_module(module, suffix))
        self.params += [param(suffix, "weight", gamma), param(suffix, "bias", beta),
                        param(suffix, "running_mean", mean), param(suffix, "running_var", variance),
                        Param(suffix, "num_batches_tracked", layouts.IDENTITY, const=np.zeros((), dtype=np.int64))]

    def activation(self, suffix: str, fn: Any) -> None:
        self.ops += activation_ops(self.ctx, fn, self.info(), suffix)

    def squeeze_excite(self, sublayer: str, ratio: float) -> None:
        reduce, expand = self.w[f"{sublayer}/conv_reduce"], self.w[f"{sublayer}/conv_expand"]
        channels = self.shape[-1] or 0
        bottleneck = adjust_channels(channels * ratio)
        self.ops.append(apply_module(Module("KerasHubSqueezeExcite", (self.shape[-1], bottleneck)), "se"))
        self.params += [param("se", "conv_reduce.weight", reduce[0], "conv2d"), param("se", "conv_reduce.bias", reduce[1]),
                        param("se", "conv_expand.weight", expand[0], "conv2d"), param("se", "conv_expand.bias", expand[1])]
        self.helpers = ("KerasHubSqueezeExcite",)

    def residual(self) -> None:
        if self.shape != self.ctx.x.shape:
            raise self.ctx.unsupported(f"a residual add of {self.ctx.x.shape} and {self.shape}")
        self.ops.append(Op("{x} + {0}"))

    def done(self) -> Converted:
        return Converted(tuple(self.ops), (self.info(),), tuple(self.params), helpers=self.helpers,
                         notes=(f"BatchNorm epsilon {BN_EPSILON:g} carried over",))


def _start(ctx: Ctx, expected: dict[str, int], se: str | None) -> _Chain:
    """The block's weights by sublayer (its SE's when ``se`` names it) and the input checked against
    ``infilters`` when the config has one."""
    channels_last(ctx)
    if ctx.x.rank != 4:
        raise ctx.unsupported(f"expected an image (N, H, W, C), found {ctx.x.shape}")
    if "infilters" in ctx.config and cfg_int(ctx, "infilters") != ctx.x.shape[-1]:
        raise ctx.unsupported(f"infilters={ctx.config['infilters']} but the input has {ctx.x.shape[-1]} channels")
    if se:
        expected = {**expected, f"{se}/conv_reduce": 2, f"{se}/conv_expand": 2}
    return _Chain(ctx, sublayer_weights(ctx, expected))


def _se_ratio(ctx: Ctx) -> float:
    """The block's SE ratio; 0 for none (keras-hub tests it for truth: null and 0 build no SE layer)."""
    return 0.0 if ctx.config.get("squeeze_excite_ratio") is None else cfg_float(ctx, "squeeze_excite_ratio")


@converter(QUALIFIED + "DepthwiseConvBlock", wants="cf")
def depthwise_conv_block(ctx: Ctx) -> Converted:
    """Pad 1, depthwise conv, BN, ReLU, [SE], 1x1 conv, BN, [+ input]."""
    se = _se_ratio(ctx)
    c = _start(ctx, {"conv1": 1, "conv2": 1, "batch_normalization1": 4, "batch_normalization2": 4},
               "se_layer" if se else None)
    c.conv("conv1", "conv1", ctx.x.shape[-1] or 0, cfg_int(ctx, "kernel_size", 3), cfg_int(ctx, "stride", 2), 1,
           depthwise=True)  # padding (1, 1) whatever the kernel size: keras-hub's
    c.batch_norm("bn1", "batch_normalization1")
    c.activation("act1", "relu")  # keras.layers.ReLU()
    if se:
        c.squeeze_excite("se_layer", se)
    c.conv("conv2", "conv2", cfg_int(ctx, "filters"))
    c.batch_norm("bn2", "batch_normalization2")
    if cfg_bool(ctx, "residual", False):
        c.residual()
    return c.done()


@converter(QUALIFIED + "InvertedResidualBlock", wants="cf")
def inverted_residual_block(ctx: Ctx) -> Converted:
    """1x1 conv to the expanded width, BN, act, pad, depthwise conv, BN, act, [SE], 1x1 conv, BN, and the
    input added when stride is 1 and infilters == filters."""
    se = _se_ratio(ctx)
    c = _start(ctx, {"conv1": 1, "conv2": 1, "conv3": 1, **_BN}, "squeeze_excite" if se else None)
    expanded, filters = adjust_channels(cfg_int(ctx, "expansion")), cfg_int(ctx, "filters")
    stride, act = cfg_int(ctx, "stride"), ctx.config.get("activation")
    c.conv("conv1", "conv1", expanded)
    c.batch_norm("bn1", "batch_normalization1")
    c.activation("act1", act)
    c.conv("conv2", "conv2", expanded, cfg_int(ctx, "kernel_size"), stride, cfg_int(ctx, "padding"), depthwise=True)
    c.batch_norm("bn2", "batch_normalization2")
    c.activation("act2", act)
    if se:
        c.squeeze_excite("squeeze_excite", se)
    c.conv("conv3", "conv3", filters)
    c.batch_norm("bn3", "batch_normalization3")
    if stride == 1 and cfg_int(ctx, "infilters") == filters:
        c.residual()
    return c.done()


@converter(QUALIFIED + "ConvBnActBlock", wants="cf")
def conv_bn_act_block(ctx: Ctx) -> Converted:
    """1x1 conv, BN, activation."""
    c = _start(ctx, {"conv": 1, "batch_normalization": 4}, None)
    c.conv("conv", "conv", cfg_int(ctx, "filter"))
    c.batch_norm("bn", "batch_normalization")
    c.activation("act", ctx.config.get("activation"))
    return c.done()
