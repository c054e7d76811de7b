"""keras-hub image classifier Tasks: a pooling head around an image backbone (``tasks.Head``).

Written from keras-hub 0.32's ``image_classifier.py`` and the ViT, DeiT, MobileNet, VGG and HGNetV2
subclasses (heads, layer names).
"""

from __future__ import annotations

from typing import Any

from ..common.args import Args, builds
from ..common.functional import FunctionalGraph, sliced
from ..common.keras_layers import conv2d
from .builder import Head, head_activation


@builds("ImageClassifier", "ResNetImageClassifier", "DenseNetImageClassifier", "EfficientNetImageClassifier",
        "MiTImageClassifier", "CSPNetImageClassifier")
def image_classifier(args: Args) -> dict[str, Any]:
    head = Head(args)
    pooling = args.str("pooling", "avg", ("avg", "max"))
    x = head.g.layer("GlobalAveragePooling2D" if pooling == "avg" else "GlobalMaxPooling2D", "pooler",
                     {"data_format": "channels_last", "keepdims": False}, head.out)
    x = head.dropout("output_dropout", x, args.number("dropout", 0.0))
    return head.model(head.dense("predictions", x, args.int("num_classes"), head_activation(args)))


@builds("ViTImageClassifier", "DeiTImageClassifier")
def vit_classifier(args: Args) -> dict[str, Any]:
    head, deit = Head(args), args.class_name.startswith("DeiT")
    pooling = args.str("pooling", "token", ("token", "gap"))
    if pooling == "token":  # x[:, 0]: the class token
        x = head.g.op("GetItem", "keras.src.ops.numpy", "get_item", {}, head.out, [sliced(), 0])
    else:  # ops.mean over the tokens
        x = head.g.op("Mean", "keras.src.ops.numpy", "mean", {"axis": [1], "keepdims": False}, head.out)
    if not deit and args.raw("intermediate_dim") is not None:
        x = head.dense("pre_logits", x, args.int("intermediate_dim"), "tanh")
    dropout = args.number("dropout", 0.0)
    if not deit:  # DeiTImageClassifier creates its dropout layer and never calls it
        x = head.dropout("output_dropout", x, dropout)
    return head.model(head.dense("predictions", x, args.int("num_classes"), head_activation(args)))


@builds("MobileNetImageClassifier")
def mobilenet_classifier(args: Args) -> dict[str, Any]:
    """MobileNetV3's head: average pool (kept 1x1), a 1x1 hard-swish conv to num_features, flatten, logits
    (no activation; keras-hub saves none of the base classifier's pooling/activation/dropout)."""
    head = Head(args)
    x = head.g.layer("GlobalAveragePooling2D", "pooler", {"data_format": "channels_last", "keepdims": True}, head.out)
    x = conv2d(head.g, "classifier_conv", x, args.int("num_features", 1024), 1, activation="hard_silu")
    x = head.g.layer("Flatten", head.g.auto_name("flatten"), {"data_format": "channels_last"}, x)
    return head.model(head.dense("predictions", x, args.int("num_classes"), "linear"))


def _entry(g: FunctionalGraph, class_name: str, name: str, config: dict[str, Any]) -> dict[str, Any]:
    """A layer of a Sequential as Keras saves it (no call nodes: a Sequential chains its layers)."""
    return {"module": "keras.layers", "class_name": class_name, "registered_name": None,
            "config": {"name": name, "trainable": True, "dtype": g.dtype, **config}}


@builds("VGGImageClassifier")
def vgg_classifier(args: Args) -> dict[str, Any]:
    """VGG's head, a Sequential named "head": two ReLU convs (7x7 valid, then 1x1) and a global pool
    ("avg"/"max"), or flatten and two ReLU Dense layers ("flatten"), then the logits."""
    head = Head(args)
    g, hidden = head.g, args.int("pooling_hidden_dim", 4096)
    pooling, dropout = args.str("pooling", "avg", ("avg", "max", "flatten")), args.number("dropout", 0.0)
    conv = {"strides": [1, 1], "data_format": "channels_last", "dilation_rate": [1, 1], "groups": 1,
            "activation": "relu", "use_bias": True}
    drop = _entry(g, "Dropout", "output_dropout", {"rate": dropout, "noise_shape": None})
    logits = _entry(g, "Dense", "predictions", {"units": args.int("num_classes"), "activation": head_activation(args),
                                                 "use_bias": True})
    if pooling == "flatten":
        dense = {"units": hidden, "activation": "relu", "use_bias": True}
        layers = [_entry(g, "Flatten", "flatten", {"data_format": "channels_last"}), _entry(g, "Dense", "fc1", dense),
                  drop, _entry(g, "Dense", "fc2", dense), logits]
    else:
        pooler = "GlobalAveragePooling2D" if pooling == "avg" else "GlobalMaxPooling2D"
        layers = [_entry(g, "Conv2D", "fc1", {"filters": hidden, "kernel_size": [7, 7], "padding": "valid", **conv}),
                  drop, _entry(g, "Conv2D", "fc2", {"filters": hidden, "kernel_size": [1, 1], "padding": "same", **conv}),
                  _entry(g, pooler, "pooler", {"data_format": "channels_last", "keepdims": False}), logits]
    # the Sequential is built on the backbone's output: (image size halved by each stack's pool, last width)
    shape = head.backbone_arg("image_shape") or [None, None, None]
    stacks = head.backbone_arg("stackwise_num_filters")
    for _ in stacks:
        shape = [None if s is None else s // 2 for s in shape[:2]] + [stacks[-1]]
    layers.insert(0, {"module": "keras.layers", "class_name": "InputLayer", "registered_name": None,
                      "config": {"name": g.auto_name("input_layer"), "batch_shape": [None, *shape],
                                 "dtype": "float32"}})
    entry = {"module": "keras", "class_name": "Sequential", "registered_name": None,
             "config": {"name": "head", "trainable": True, "dtype": g.dtype, "layers": layers}}
    return head.model(g.model_layer(entry, head.out, mask=None))


@builds("HGNetV2ImageClassifier")
def hgnetv2_classifier(args: Args) -> dict[str, Any]:
    """HGNetV2's head on the last stage's features: a 1x1 conv unit (ReLU, the backbone's affine-block
    choice) to head_filters, a global pool, flatten, dropout, then the logits (an Identity when
    num_classes is 0). Its pool, flatten and dropout are named after the Task, as keras-hub's reload of the
    file names them (the saved name; a Task first built unnamed named them "hgnetv2_image_classifier_…",
    which only changes names: they hold no weights)."""
    head, name = Head(args), args.name
    last = f"stage{len(head.backbone_arg('stackwise_stage_filters') or [])}"  # backbone.stage_names[-1]
    x = head.output(last)
    filters = args.raw("head_filters")
    filters = head.backbone_arg("hidden_sizes")[-1] if filters is None else args.int("head_filters")
    x = head.g.hub("HGNetV2ConvLayer", "head_last", {
        "in_channels": head.backbone_arg("hidden_sizes")[-1], "out_channels": filters, "kernel_size": 1, "stride": 1,
        "groups": 1, "activation": "relu", "data_format": "channels_last", "channel_axis": -1,
        "use_learnable_affine_block": bool(head.backbone_arg("use_learnable_affine_block"))}, x)
    pooling = args.str("pooling", "avg", ("avg", "max"))
    x = head.g.layer("GlobalAveragePooling2D" if pooling == "avg" else "GlobalMaxPooling2D", f"{name}_{pooling}_pool",
                     {"data_format": "channels_last", "keepdims": False}, x)
    x = head.g.layer("Flatten", f"{name}_flatten", {"data_format": "channels_last"}, x)
    x = head.dropout(f"{name}_output_dropout", x, args.number("dropout", 0.0))
    classes, activation = args.int("num_classes", minimum=0), head_activation(args)
    if classes == 0:  # the pooled features (the activation is only the Dense's)
        return head.model(head.g.layer("Identity", "predictions", {}, x))
    return head.model(head.dense("predictions", x, classes, activation))
