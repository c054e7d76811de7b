"""keras-hub's EfficientNet blocks (FusedMBConvBlock, MBConvBlock, CBABlock of EfficientNetV2 and the EdgeTPU
variants) as one module each, ``KerasHubFusedMBConvBlock`` / ``KerasHubMBConvBlock`` / ``KerasHubCBABlock``,
their squeeze-and-excitation as ``KerasHubEfficientNetSE`` inside (``families/keras_hub/efficientnet/runtime.py``).

The blocks take their BatchNorms' epsilon and momentum from their config (the backbone passes its own); the
Dropout before the residual add (drop-connect) is the identity at inference. Their convs are built on the
input's channels while ``input_filters`` sets the expanded width and the residual test: they differ where
the backbone forces a stack's input filters (the EdgeTPU presets, which then set ``nores``).
Written from keras-hub 0.32's ``efficientnet/fusedmbconv.py``, ``mbconv.py`` and ``cba.py``.
"""

from __future__ import annotations

from typing import Any

from ....layers.base import Converted, Ctx, Module, Param, TensorInfo
from ....layers.common import apply_module, cfg_bool, cfg_float, cfg_int, cfg_str, channels_last, param
from ....layers.padding import conv_out_size, window_plan
from ....layers.registry import converter
from ..common.converters import block_activation, conv_bn_params, sublayer_weights
from .builder import BLOCKS

_QUALIFIED = {kind: f"{module}>{name}" for kind, (name, module) in BLOCKS.items()}  # module>class, unregistered


class _Block:
    """One block's params under its torch attribute names, its output shape and notes, built conv by conv."""

    def __init__(self, ctx: Ctx, weights: dict[str, tuple[Any, ...]]) -> None:
        self.ctx, self.w = ctx, weights
        self.eps, self.momentum = cfg_float(ctx, "batch_norm_epsilon", 1e-3), cfg_float(ctx, "batch_norm_momentum", 0.9)
        self.act = block_activation(ctx, cfg_str(ctx, "activation", "swish"))
        self.params: list[Param] = []
        self.channels = ctx.x.shape[-1]
        if self.channels is None:
            raise ctx.unsupported("the number of input channels is unknown")
        self.shape: tuple[int | None, ...] = ctx.x.shape
        self.notes: list[str] = [f"BatchNorm epsilon {self.eps:g} carried over"]
        self.sized = False  # a TF 'SAME' pad planned for the input size: the model checks that size

    def conv_bn(self, conv: str, bn: str, filters: int, kernel: int, stride: int = 1, depthwise: bool = False,
                same: bool = False) -> Any:
        """A bias-free conv and its BatchNorm: after ZeroPadding2D(kernel // 2) and "valid" (keras-hub's usual
        pair, torch's symmetric conv padding), or TF "same" (``same``: MBConv's depthwise conv, asymmetric at
        stride 2; returns the helper's ``padding`` for it)."""
        padding: Any = None
        if same:  # the depthwise conv sees the block's input size (a 1x1 conv or nothing before it)
            plan = window_plan(self.ctx, (kernel, kernel), (stride, stride), (1, 1), "same")
            self.notes += plan.notes
            self.sized = self.sized or plan.sized
            if "SamePad" in plan.helpers:
                padding = None  # the input size is unknown: the helper computes TF's padding at run time
            elif plan.ops:
                padding = plan.ops[0].module.args[0]  # the explicit (left, right, top, bottom) ZeroPad2d
            else:
                padding = plan.padding
        size = [conv_out_size(s, kernel, stride, 1, "same") if same else
                None if s is None else (s + 2 * (kernel // 2) - kernel) // stride + 1 for s in self.shape[:2]]
        if any(s is not None and s < 1 for s in size):
            raise self.ctx.unsupported(f"a {kernel}x{kernel} conv of stride {stride} leaves no output of "
                                       f"{self.shape[:2]}")
        self.shape = (*size, filters)
        self.params += conv_bn_params(conv, bn, self.w[conv][0], self.w[bn], "depthwise2d" if depthwise else "conv2d")
        return padding

    def squeeze_excite(self, filters: int) -> int:
        """keras-hub's SE of ``max(1, int(input_filters * se_ratio))`` channels, on a tensor of ``filters``
        (its params ``se.*``); returns that width."""
        if self.shape[-1] != filters:
            raise self.ctx.unsupported(f"squeeze-and-excitation of {filters} channels on {self.shape[-1]}")
        reduce, expand = self.w["se_conv1"], self.w["se_conv2"]
        self.params += [param("", "se.reduce.weight", reduce[0], "conv2d"), param("", "se.reduce.bias", reduce[1]),
                        param("", "se.expand.weight", expand[0], "conv2d"), param("", "se.expand.bias", expand[1])]
        return max(1, int(cfg_int(self.ctx, "input_filters") * cfg_float(self.ctx, "se_ratio")))

    def residual(self) -> bool:
        """The input added when stride is 1, input_filters == output_filters and not nores (the Dropout before
        it is the identity at inference)."""
        if cfg_int(self.ctx, "strides") != 1 or cfg_int(self.ctx, "input_filters") != cfg_int(self.ctx, "output_filters") \
                or cfg_bool(self.ctx, "nores", False):
            return False
        if self.shape != self.ctx.x.shape:
            raise self.ctx.unsupported(f"a residual add of {self.ctx.x.shape} and {self.shape}")
        return True

    def done(self, cls: str, *args: Any) -> Converted:
        """The block's one module: its hyper-parameters, then the BatchNorms' epsilon and torch momentum
        (Keras: moving = m * moving + (1 - m) * batch; torch: moving = (1 - m') * moving + m' * batch)."""
        module = Module(cls, (*args, self.eps, round(1 - self.momentum, 10)))
        helpers = ("keras_hub_activation", "KerasHubEfficientNetSE", cls)
        return Converted((apply_module(module),), (TensorInfo(self.shape, "cf"),), tuple(self.params),
                         helpers=helpers, notes=tuple(self.notes), sized=self.sized)


def _has_se(ctx: Ctx) -> bool:
    ratio = cfg_float(ctx, "se_ratio", 0.0)
    return 0 < ratio <= 1  # keras-hub's test: a ratio above 1 builds no SE either


def _start(ctx: Ctx, expected: dict[str, int]) -> _Block:
    channels_last(ctx)
    if ctx.x.rank != 4:
        raise ctx.unsupported(f"expected an image (N, H, W, C), found {ctx.x.shape}")
    return _Block(ctx, sublayer_weights(ctx, expected))


_SE = {"se_conv1": 2, "se_conv2": 2}


@converter(_QUALIFIED["fused"], wants="cf")
def fused_mbconv(ctx: Ctx) -> Converted:
    """Padded k x k conv (stride) to input_filters * expand_ratio, BN, act, [SE], padded 1x1 (projection_kernel_size)
    conv, BN, [projection activation when expand_ratio is 1], [+ input]."""
    se, expand = _has_se(ctx), cfg_int(ctx, "expand_ratio", 1)
    b = _start(ctx, {"conv1": 1, "bn1": 4, "output_conv": 1, "bn2": 4, **(_SE if se else {})})
    filters, out = cfg_int(ctx, "input_filters") * expand, cfg_int(ctx, "output_filters")
    kernel, stride, projection_kernel = cfg_int(ctx, "kernel_size", 3), cfg_int(ctx, "strides", 1), \
        cfg_int(ctx, "projection_kernel_size", 1)
    b.conv_bn("conv1", "bn1", filters, kernel, stride)
    bottleneck = b.squeeze_excite(filters) if se else 0
    b.conv_bn("output_conv", "bn2", out, projection_kernel)
    projection = ctx.config.get("projection_activation")
    # keras-hub applies it only when expand_ratio is 1 (it is built whenever it is set)
    projection = block_activation(ctx, projection) if expand == 1 and projection else None
    return b.done("KerasHubFusedMBConvBlock", b.channels, filters, out, kernel, stride, projection_kernel, b.act,
                  bottleneck, projection, b.residual())


@converter(_QUALIFIED["unfused"], wants="cf")
def mbconv(ctx: Ctx) -> Converted:
    """[1x1 conv to input_filters * expand_ratio, BN, act] (when expand_ratio is not 1), k x k depthwise conv
    ("same", stride), BN, act, [SE], padded conv (1x1, or k x k when expand_ratio is 1), BN, [+ input]."""
    se, expand, kernel = _has_se(ctx), cfg_int(ctx, "expand_ratio", 1), cfg_int(ctx, "kernel_size", 3)
    expanded = {"conv1": 1, "bn1": 4} if expand != 1 else {}  # not called, so never built: no weights
    b = _start(ctx, {**expanded, "depthwise": 1, "bn2": 4, "output_conv": 1, "bn3": 4, **(_SE if se else {})})
    filters, out, stride = cfg_int(ctx, "input_filters") * expand, cfg_int(ctx, "output_filters"), \
        cfg_int(ctx, "strides", 1)
    if expand != 1:
        b.conv_bn("conv1", "bn1", filters, 1)
    # the same Activation layer after bn1 and bn2 in keras-hub (no weights)
    padding = b.conv_bn("depthwise", "bn2", b.shape[-1] or 0, kernel, stride, depthwise=True, same=True)
    bottleneck = b.squeeze_excite(filters) if se else 0
    output_kernel = 1 if expand != 1 else kernel
    b.conv_bn("output_conv", "bn3", out, output_kernel)
    return b.done("KerasHubMBConvBlock", b.channels, filters if expand != 1 else None, out, kernel, stride, padding,
                  output_kernel, b.act, bottleneck, b.residual())


@converter(_QUALIFIED["cba"], wants="cf")
def cba(ctx: Ctx) -> Converted:
    """Padded k x k conv (stride) to output_filters, BN, act, [+ input]."""
    b = _start(ctx, {"conv1": 1, "bn1": 4})
    out, kernel, stride = cfg_int(ctx, "output_filters"), cfg_int(ctx, "kernel_size", 3), cfg_int(ctx, "strides", 1)
    b.conv_bn("conv1", "bn1", out, kernel, stride)
    return b.done("KerasHubCBABlock", b.channels, out, kernel, stride, b.act, b.residual())
