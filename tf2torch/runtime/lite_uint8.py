"""LiteRT's uint8 kernels (TF 1's all-uint8 models: uint8 weights with a zero point, uint8 activations, int32
biases), emulated.

CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED take uint8 weights with a weight zero point (LiteRT's
``filter_offset``) and one scale per tensor: acc = sum (w - weight zero point) * (x - input zero point) + bias,
requantized once for all channels (``MultiplyByQuantizedMultiplier``, rounded as measured in
tests/tflite/test_uint8_tf1.py), plus the output zero point, clamped to [0, 255].

ADD / SUB, MUL, MEAN, MAX_POOL_2D, SOFTMAX, LOGISTIC / TANH and a standalone RELU* compute what their int8 kernels compute: those kernels
only use q - zero point and the clamp bounds, so a uint8 value q is the int8 value q - 128 with every zero
point and bound lowered by 128 (``tflite/ops_uint8_model.py`` writes the parameters so); each class here wraps
its int8 module (``runtime/lite_int.py``, ``lite_int_act.py``) between ``lite_from_uint8`` and
``lite_to_uint8``. AVERAGE_POOL_2D has its own rounding (below).
"""

from __future__ import annotations

import torch
from torch.nn import functional as F

from .lite_int import (
    TFLiteQuantAdd,
    TFLiteQuantAvgPool2d,
    TFLiteQuantConv2d,
    TFLiteQuantLinear,
    TFLiteQuantMaxPool2d,
    TFLiteQuantMean,
    TFLiteQuantMul,
    lite_requantize,
)
from .lite_int_act import (
    TFLiteQuantHardSwish,
    TFLiteQuantLeakyRelu,
    TFLiteQuantLUT,
    TFLiteQuantRescale,
    TFLiteQuantSoftmax,
)
from .lite_int_math import TFLiteQuantMinMax, TFLiteQuantReduce, lite_round_away


def lite_from_uint8(q):
    """A uint8 tensor as the int8 kernels' operand: q - 128 (int64)."""
    return q.long() - 128


def lite_to_uint8(q):
    """An int8 kernel's result (q - 128) back to uint8."""
    return (q.long() + 128).to(torch.uint8)


class TFLiteUint8Conv2d(TFLiteQuantConv2d):
    """CONV_2D / DEPTHWISE_CONV_2D on uint8 (LiteRT's uint8 ``Conv`` / ``DepthwiseConv``): uint8 weights less
    ``weight_zero_point`` (the kernel's filter_offset), one multiplier for every channel, a [0, 255] clamp."""

    def __init__(self, in_channels, out_channels, kernel_size, weight_zero_point=0, upward=True, **kwargs):
        super().__init__(in_channels, out_channels, kernel_size, **kwargs)
        self.weight_zero_point, self.upward = weight_zero_point, upward
        self.weight = self.weight.to(torch.uint8)

    def forward(self, x):
        centred = F.pad(x.double() - self.input_zero_point, self.padding)
        weight = self.weight.double() - self.weight_zero_point
        acc = F.conv2d(centred, weight, None, self.stride, 0, self.dilation, self.groups)
        acc = acc.round().long() + self.bias.long()[:, None, None]
        out = lite_requantize(acc, self.multiplier.long()[:, None, None], self.shift.long()[:, None, None], self.upward)
        return (out + self.output_zero_point).clamp(self.output_min, self.output_max).to(torch.uint8)


class TFLiteUint8Linear(TFLiteQuantLinear):
    """FULLY_CONNECTED on uint8: uint8 weights less ``weight_zero_point``, one multiplier, a [0, 255] clamp."""

    def __init__(self, in_features, out_features, weight_zero_point=0, upward=True, **kwargs):
        super().__init__(in_features, out_features, **kwargs)
        self.weight_zero_point, self.upward = weight_zero_point, upward
        self.weight = self.weight.to(torch.uint8)

    def forward(self, x):
        acc = (x.double() - self.input_zero_point) @ (self.weight.double() - self.weight_zero_point).T
        acc = acc.round().long() + self.bias.long()
        out = lite_requantize(acc, self.multiplier.long(), self.shift.long(), self.upward)
        return (out + self.output_zero_point).clamp(self.output_min, self.output_max).to(torch.uint8)


def lite_uint8_operand(b, constant):
    """A binary operator's second operand as q - 128: the tensor ``b``, else the module's constant (a uint8
    buffer, one value per channel, or an int8 (1,) buffer already holding q - 128: one number)."""
    if b is None:
        return constant.long() if constant.dtype == torch.int8 else lite_from_uint8(constant)
    return lite_from_uint8(b)


class TFLiteUint8Constant:
    """Mixin: ``uint8_constant`` — the constant operand is the file's uint8 tensor (stored as such)."""

    def __init__(self, *args, uint8_constant=False, **kwargs):
        super().__init__(*args, **kwargs)
        if uint8_constant:
            self.constant = self.constant.to(torch.uint8)


class TFLiteUint8BinaryOnInt8(TFLiteUint8Constant):
    """Mixin for a binary uint8 operator whose kernel is the int8 one on q - 128 (both operands shifted)."""

    def forward(self, a, b=None):
        return lite_to_uint8(super().forward(lite_from_uint8(a), lite_uint8_operand(b, self.constant)))


class TFLiteUint8Add(TFLiteUint8BinaryOnInt8, TFLiteQuantAdd):
    """ADD / SUB on uint8."""


class TFLiteUint8Mul(TFLiteUint8BinaryOnInt8, TFLiteQuantMul):
    """MUL on uint8."""


class TFLiteUint8Mean(TFLiteQuantMean):
    """MEAN on uint8: the int8 module on q - 128; with ``bias`` (height and width of a 4-D tensor, keepdim:
    LiteRT's "Mean4D/Uint8") the raw uint8 sum requantized, plus ``bias``, clamped to [0, 255]. That sum is never
    negative, so the kernel's vector loops (half up) and scalar tail (half away from zero) round alike."""

    def forward(self, x):
        if self.bias is None:
            return lite_to_uint8(super().forward(lite_from_uint8(x)))
        total = x.long().sum(dim=self.dims, keepdim=self.keepdim)
        out = lite_requantize(total, torch.tensor(self.multiplier), torch.tensor(self.shift)) + self.bias
        return out.clamp(0, 255).to(torch.uint8)


class TFLiteUint8AvgPool2d(TFLiteQuantAvgPool2d):
    """AVERAGE_POOL_2D on uint8: (sum + count / 2) / count, the sum of non-negative values (so not the int8
    kernel's half away from zero on q - 128: the two differ on negative ties), clamped."""

    def forward(self, x):
        ones = torch.ones_like(x[:1, :1], dtype=torch.float64)
        total = F.avg_pool2d(F.pad(x.double(), self.padding), self.kernel_size, self.stride, divisor_override=1)
        count = F.avg_pool2d(F.pad(ones, self.padding), self.kernel_size, self.stride, divisor_override=1)
        total, count = total.round().long(), count.round().long()
        out = torch.div(total + count // 2, count, rounding_mode="floor")
        return out.clamp(self.output_min, self.output_max).to(torch.uint8)


class TFLiteUint8OnInt8:
    """Mixin for a uint8 operator whose LiteRT kernel is the int8 one on q - 128 (zero points and bounds lowered
    by 128 in the layer's parameters): shift in, run the int8 module (the next base class), shift back."""

    def forward(self, q):
        return lite_to_uint8(super().forward(lite_from_uint8(q)))


class TFLiteUint8MaxPool2d(TFLiteUint8OnInt8, TFLiteQuantMaxPool2d):
    """MAX_POOL_2D on uint8."""


class TFLiteUint8LUT(TFLiteUint8OnInt8, TFLiteQuantLUT):
    """A table lookup on uint8 (LOGISTIC, TANH)."""


class TFLiteUint8Rescale(TFLiteUint8OnInt8, TFLiteQuantRescale):
    """A standalone RELU / RELU6 / RELU_N1_TO_1 on uint8 (LiteRT's ``QuantizedReluX<uint8_t>``)."""


class TFLiteUint8Softmax(TFLiteUint8OnInt8, TFLiteQuantSoftmax):
    """SOFTMAX on uint8."""


class TFLiteUint8HardSwish(TFLiteUint8OnInt8, TFLiteQuantHardSwish):
    """HARD_SWISH on uint8."""


class TFLiteUint8LeakyRelu(TFLiteUint8OnInt8, TFLiteQuantLeakyRelu):
    """LEAKY_RELU on uint8."""


class TFLiteUint8MinMax(TFLiteUint8Constant, TFLiteQuantMinMax):
    """MAXIMUM / MINIMUM on uint8: the stored values compared as they are; a constant operand is the file's
    uint8 tensor."""


class TFLiteUint8Reduce(TFLiteQuantReduce):
    """REDUCE_MAX / REDUCE_MIN on uint8 (the stored values compared) and SUM (LiteRT's optimized
    ``QuantizedMeanOrSum<uint8_t>``: the raw uint8 sum as float32, times ``scale``, plus ``bias``, rounded half
    away from zero, plus the output zero point, clamped to [0, 255])."""

    def forward(self, q):
        if self.kind != "sum":
            return super().forward(q)
        total = q.long().sum(dim=self.dims, keepdim=self.keepdim).float()
        value = total * torch.tensor(self.scale, dtype=torch.float32) + torch.tensor(self.bias, dtype=torch.float32)
        return (lite_round_away(value).long() + self.output_zero_point).clamp(0, 255).to(torch.uint8)
