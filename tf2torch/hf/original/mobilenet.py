"""TF-slim MobileNet v1 / v2 (``tensorflow/models/research/slim/nets/mobilenet*``): ``MobilenetV1/Conv2d_0``, then
``Conv2d_<i>_depthwise`` / ``Conv2d_<i>_pointwise`` (transformers' ``layer.<2i-2>`` / ``layer.<2i-1>``);
``MobilenetV2/Conv``, ``expanded_conv`` (the stem's depthwise and project), ``expanded_conv_<i>/expand|
depthwise|project`` (``layer.<i-1>``), ``Conv_1``; the classifier ``Logits/Conv2d_1c_1x1`` is a 1x1 conv
(``(1, 1, in, out)``) onto an ``nn.Linear`` (the conv1x1_dense layout, chosen by the module type), depthwise
kernels ``(H, W, C, 1)`` onto groups=C convs (likewise). slim's ``BatchNorm`` keeps ``moving_mean`` and
``moving_variance``. RMSProp / Momentum slots are optimizer state, ``global_step`` bookkeeping.

EMA shadows (``<var>/ExponentialMovingAverage``), as transformers 4.57's loaders read them: MobileNetV2's
took the shadow of every kernel, bias, gamma and beta when present (not of the moving statistics);
MobileNetV1's took the raw variables and dropped the shadows. DeepLab's segmentation head (``aspp0``,
``image_pooling``, ...) is not covered: converting onto MobileNetV2ForSemanticSegmentation reports its keys
missing."""

from __future__ import annotations

import re

from . import Convention

SLIM_LEAVES = (
    (r"/BatchNorm/", "/normalization/"),
    (r"/(depthwise_)?weights$", "/convolution/weight"),
    (r"/gamma$", "/weight"),
    (r"/beta$", "/bias"),
    (r"/moving_mean$", "/running_mean"),
    (r"/moving_variance$", "/running_var"),
)
CLASSIFIER = ((r"^MobilenetV[12]/Logits/Conv2d_1c_1x1/weights$", "classifier/weight"),
              (r"^MobilenetV[12]/Logits/Conv2d_1c_1x1/biases$", "classifier/bias"))
HEADS = (("classifier", "the ImageNet classification head"),)
V2_PARTS = {"expand": "expand_1x1", "depthwise": "conv_3x3", "project": "reduce_1x1"}


def _v1_layer(m: re.Match[str]) -> str:
    # 13 blocks of two convs each: transformers keeps them in one list, depthwise first
    return f"mobilenet_v1/layer/{2 * (int(m[1]) - 1) + (m[2] == 'pointwise')}/"


def _v2_layer(m: re.Match[str]) -> str:
    return f"mobilenet_v2/layer/{int(m[1]) - 1}/{V2_PARTS[m[2]]}/"


CONVENTIONS = (
    Convention(
        name="TF-slim MobileNet v1",
        model_types=("mobilenet_v1",),
        bare="MobileNetV1Model",
        detect=r"^MobilenetV1/Conv2d_\d+_depthwise/depthwise_weights$",
        renames=(*CLASSIFIER,
                 (r"^MobilenetV1/Conv2d_0/", "mobilenet_v1/conv_stem/"),
                 (r"^MobilenetV1/Conv2d_(\d+)_(depthwise|pointwise)/", _v1_layer),
                 *SLIM_LEAVES),
        heads=HEADS,
        loader="load_tf_weights_in_mobilenet_v1",
        loader_class="MobileNetV1ForImageClassification",
    ),
    Convention(
        name="TF-slim MobileNet v2",
        model_types=("mobilenet_v2",),
        bare="MobileNetV2Model",
        detect=r"^MobilenetV2/expanded_conv(_\d+)?/depthwise/depthwise_weights$",
        renames=(*CLASSIFIER,
                 (r"^MobilenetV2/Conv/", "mobilenet_v2/conv_stem/first_conv/"),
                 (r"^MobilenetV2/expanded_conv/depthwise/", "mobilenet_v2/conv_stem/conv_3x3/"),
                 (r"^MobilenetV2/expanded_conv/project/", "mobilenet_v2/conv_stem/reduce_1x1/"),
                 (r"^MobilenetV2/expanded_conv_(\d+)/(expand|depthwise|project)/", _v2_layer),
                 (r"^MobilenetV2/Conv_1/", "mobilenet_v2/conv_1x1/"),
                 *SLIM_LEAVES),
        heads=HEADS,
        ema=r"/(weights|depthwise_weights|biases|gamma|beta)$",
        loader="load_tf_weights_in_mobilenet_v2",
        loader_class="MobileNetV2ForImageClassification",
    ),
)
