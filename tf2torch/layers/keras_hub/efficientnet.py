"""keras-hub's EfficientNet blocks (FusedMBConvBlock, MBConvBlock, CBABlock of EfficientNetV2 and the EdgeTPU
variants) as chains of torch convs, BatchNorms and activations, their squeeze-and-excitation as
``KerasHubEfficientNetSE`` (``codegen/helpers_keras_hub_efficientnet.py``).

The blocks take their BatchNorms' epsilon and momentum from their config (the backbone passes its own); the
Dropout before the residual add (drop-connect) is the identity at inference. Their convs are built on the
input's channels while ``input_filters`` sets the expanded width and the residual test: they differ where
the backbone forces a stack's input filters (the EdgeTPU presets, which then set ``nores``).
Written from keras-hub 0.32's ``efficientnet/fusedmbconv.py``, ``mbconv.py`` and ``cba.py``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ...map import layouts
from ...readers.keras_hub.efficientnet import BLOCKS
from ..base import Converted, Ctx, Module, Op, Param, TensorInfo
from ..common import activation_ops, apply_module, cfg_bool, cfg_float, cfg_int, cfg_str, channels_last, param
from ..padding import conv_out_size, window_plan
from ..registry import converter
from .common import sublayer_weights

_QUALIFIED = {kind: f"{module}>{name}" for kind, (name, module) in BLOCKS.items()}  # module>class, unregistered
# The activations KerasHubEfficientNetSE builds by name (its table); another one in an SE block is refused.
SE_ACTIVATIONS = ("relu", "relu6", "silu", "swish", "hard_silu", "hard_swish", "gelu", "tanh", "sigmoid", "elu",
                  "mish", "linear")


class _Chain:
    """The ops, params and shape of one block, built step by step (each module its own attribute)."""

    def __init__(self, ctx: Ctx, weights: dict[str, tuple[Any, ...]]) -> None:
        self.ctx, self.w = ctx, weights
        self.eps, self.momentum = cfg_float(ctx, "batch_norm_epsilon", 1e-3), cfg_float(ctx, "batch_norm_momentum", 0.9)
        self.act = cfg_str(ctx, "activation", "swish")
        self.ops: list[Op] = []
        self.params: list[Param] = []
        self.shape: tuple[int | None, ...] = ctx.x.shape
        self.notes: list[str] = [f"BatchNorm epsilon {self.eps:g} carried over"]
        self.helpers: tuple[str, ...] = ()

    def conv(self, sublayer: str, filters: int, kernel: int, stride: int = 1, depthwise: bool = False,
             same: bool = False) -> None:
        """A bias-free conv: after ZeroPadding2D(kernel // 2) and "valid" (keras-hub's usual pair, torch's
        symmetric conv padding), or TF "same" (``same``: MBConv's depthwise conv, asymmetric at stride 2)."""
        channels = self.shape[-1]
        if channels is None:
            raise self.ctx.unsupported("the number of input channels is unknown")
        pad: tuple[int, ...] = (kernel // 2, kernel // 2)
        if same:  # the depthwise conv sees the block's input size (a 1x1 conv or nothing before it)
            plan = window_plan(self.ctx, (kernel, kernel), (stride, stride), (1, 1), "same", "conv")
            self.ops += [dataclasses.replace(op, suffix=f"{sublayer}_pad") for op in plan.ops]
            self.notes += plan.notes
            self.helpers += plan.helpers
            pad = plan.padding
        module = Module("nn.Conv2d", (channels, filters, (kernel, kernel)), (
            ("stride", (stride, stride)), ("padding", pad), ("groups", channels if depthwise else 1), ("bias", False)))
        self.ops.append(apply_module(module, sublayer))
        self.params.append(param(sublayer, "weight", self.w[sublayer][0], "depthwise2d" if depthwise else "conv2d"))
        size = [conv_out_size(s, kernel, stride, 1, "same") if same else
                None if s is None else (s + 2 * (kernel // 2) - kernel) // stride + 1 for s in self.shape[:2]]
        if any(s is not None and s < 1 for s in size):
            raise self.ctx.unsupported(f"a {kernel}x{kernel} conv of stride {stride} leaves no output of "
                                       f"{self.shape[:2]}")
        self.shape = (*size, filters)

    def batch_norm(self, sublayer: str) -> None:
        gamma, beta, mean, variance = self.w[sublayer]
        # Keras: moving = m * moving + (1 - m) * batch; torch: moving = (1 - m') * moving + m' * batch
        module = Module("nn.BatchNorm2d", (self.shape[-1],), (("eps", self.eps),
                                                              ("momentum", round(1 - self.momentum, 10))))
        self.ops.append(apply_module(module, sublayer))
        self.params += [param(sublayer, "weight", gamma), param(sublayer, "bias", beta),
                        param(sublayer, "running_mean", mean), param(sublayer, "running_var", variance),
                        Param(sublayer, "num_batches_tracked", layouts.IDENTITY, const=np.zeros((), dtype=np.int64))]

    def activation(self, suffix: str, fn: Any) -> None:
        self.ops += activation_ops(self.ctx, fn, TensorInfo(self.shape, "cf"), suffix)

    def squeeze_excite(self, filters: int) -> None:
        """keras-hub's SE of ``max(1, int(input_filters * se_ratio))`` channels, on a tensor of ``filters``."""
        if self.shape[-1] != filters:
            raise self.ctx.unsupported(f"squeeze-and-excitation of {filters} channels on {self.shape[-1]}")
        if self.act not in SE_ACTIVATIONS:
            raise self.ctx.unsupported(f"activation {self.act!r} in the squeeze-and-excitation")
        bottleneck = max(1, int(cfg_int(self.ctx, "input_filters") * cfg_float(self.ctx, "se_ratio")))
        reduce, expand = self.w["se_conv1"], self.w["se_conv2"]
        self.ops.append(apply_module(Module("KerasHubEfficientNetSE", (filters, bottleneck, self.act)), "se"))
        self.params += [param("se", "reduce.weight", reduce[0], "conv2d"), param("se", "reduce.bias", reduce[1]),
                        param("se", "expand.weight", expand[0], "conv2d"), param("se", "expand.bias", expand[1])]
        self.helpers += ("KerasHubEfficientNetSE",)

    def residual(self) -> None:
        """The input added when stride is 1, input_filters == output_filters and not nores (the Dropout before
        it is the identity at inference)."""
        if cfg_int(self.ctx, "strides") != 1 or cfg_int(self.ctx, "input_filters") != cfg_int(self.ctx, "output_filters") \
                or cfg_bool(self.ctx, "nores", False):
            return
        if self.shape != self.ctx.x.shape:
            raise self.ctx.unsupported(f"a residual add of {self.ctx.x.shape} and {self.shape}")
        self.ops.append(Op("{x} + {0}"))

    def done(self) -> Converted:
        return Converted(tuple(self.ops), (TensorInfo(self.shape, "cf"),), tuple(self.params),
                         helpers=tuple(dict.fromkeys(self.helpers)), notes=tuple(self.notes))


def _has_se(ctx: Ctx) -> bool:
    ratio = cfg_float(ctx, "se_ratio", 0.0)
    return 0 < ratio <= 1  # keras-hub's test: a ratio above 1 builds no SE either


def _start(ctx: Ctx, expected: dict[str, int]) -> _Chain:
    channels_last(ctx)
    if ctx.x.rank != 4:
        raise ctx.unsupported(f"expected an image (N, H, W, C), found {ctx.x.shape}")
    return _Chain(ctx, sublayer_weights(ctx, expected))


_SE = {"se_conv1": 2, "se_conv2": 2}


@converter(_QUALIFIED["fused"], wants="cf")
def fused_mbconv(ctx: Ctx) -> Converted:
    """Padded k x k conv (stride) to input_filters * expand_ratio, BN, act, [SE], padded 1x1 (projection_kernel_size)
    conv, BN, [projection activation when expand_ratio is 1], [+ input]."""
    se, expand = _has_se(ctx), cfg_int(ctx, "expand_ratio", 1)
    c = _start(ctx, {"conv1": 1, "bn1": 4, "output_conv": 1, "bn2": 4, **(_SE if se else {})})
    filters = cfg_int(ctx, "input_filters") * expand
    c.conv("conv1", filters, cfg_int(ctx, "kernel_size", 3), cfg_int(ctx, "strides", 1))
    c.batch_norm("bn1")
    c.activation("act", c.act)
    if se:
        c.squeeze_excite(filters)
    c.conv("output_conv", cfg_int(ctx, "output_filters"), cfg_int(ctx, "projection_kernel_size", 1))
    c.batch_norm("bn2")
    projection = ctx.config.get("projection_activation")
    if expand == 1 and projection:  # keras-hub applies it only then (it is built whenever it is set)
        c.activation("projection_act", projection)
    c.residual()
    return c.done()


@converter(_QUALIFIED["unfused"], wants="cf")
def mbconv(ctx: Ctx) -> Converted:
    """[1x1 conv to input_filters * expand_ratio, BN, act] (when expand_ratio is not 1), k x k depthwise conv
    ("same", stride), BN, act, [SE], padded conv (1x1, or k x k when expand_ratio is 1), BN, [+ input]."""
    se, expand, kernel = _has_se(ctx), cfg_int(ctx, "expand_ratio", 1), cfg_int(ctx, "kernel_size", 3)
    expanded = {"conv1": 1, "bn1": 4} if expand != 1 else {}  # not called, so never built: no weights
    c = _start(ctx, {**expanded, "depthwise": 1, "bn2": 4, "output_conv": 1, "bn3": 4, **(_SE if se else {})})
    filters = cfg_int(ctx, "input_filters") * expand
    if expand != 1:
        c.conv("conv1", filters, 1)
        c.batch_norm("bn1")
        c.activation("act1", c.act)
    c.conv("depthwise", c.shape[-1] or 0, kernel, cfg_int(ctx, "strides", 1), depthwise=True, same=True)
    c.batch_norm("bn2")
    c.activation("act2", c.act)  # the same Activation layer as act1 in keras-hub (no weights)
    if se:
        c.squeeze_excite(filters)
    c.conv("output_conv", cfg_int(ctx, "output_filters"), 1 if expand != 1 else kernel)
    c.batch_norm("bn3")
    c.residual()
    return c.done()


@converter(_QUALIFIED["cba"], wants="cf")
def cba(ctx: Ctx) -> Converted:
    """Padded k x k conv (stride) to output_filters, BN, act, [+ input]."""
    c = _start(ctx, {"conv1": 1, "bn1": 4})
    c.conv("conv1", cfg_int(ctx, "output_filters"), cfg_int(ctx, "kernel_size", 3), cfg_int(ctx, "strides", 1))
    c.batch_norm("bn1")
    c.activation("act", c.act)
    c.residual()
    return c.done()
