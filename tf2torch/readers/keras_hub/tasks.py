"""keras-hub ``Task`` files: a classifier or language-model head around a backbone.

A Task's saved config holds its own arguments and its backbone's serialized config. The Task is a
Functional model whose graph calls the backbone as one nested model on the backbone's own inputs, then
its head; that graph is written here, with the backbone expanded by its own builder (a backbone with no
builder stays refused by name). The preprocessor a Task may carry is not part of the model's call
(``Task.__call__`` runs the network on already-tokenised or already-resized inputs), so it is not read.

Written from keras-hub 0.32's ``image_classifier.py``, ``text_classifier.py`` and ``causal_lm.py`` and
each family's subclass (heads, layer names).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...errors import UnsupportedError
from ..keras_v3 import snake_case
from . import PREFIX, Args, builds, expand
from .functional import FunctionalGraph, Ref, sliced
from .keras_layers import conv2d


class Head:
    """A Task's graph while its head is written: the backbone called once on its own inputs."""

    def __init__(self, args: Args) -> None:
        entry = args.raw("backbone")
        if not isinstance(entry, Mapping) or not str(entry.get("registered_name", "")).startswith(PREFIX) \
                or not isinstance(entry.get("config"), Mapping):
            raise args.fail("backbone", "a serialized keras-hub backbone")
        args.raw("preprocessor")  # not part of the model's call (see the module docstring)
        self.backbone = expand(entry, args.where)
        config = self.backbone["config"]
        unnamed = "name" not in entry["config"]
        if unnamed and "layers" in config:  # VGGBackbone saves no name: Keras gives it one from a per-process counter
            config["name"] = snake_case(entry.get("class_name") or "", 3)
        self.args, self.name = args, config.get("name")
        # the head takes the backbone's dtype policy (keras-hub does not save a head_dtype)
        self.g = FunctionalGraph(args.name, config.get("dtype"), keyed_inputs=isinstance(config.get("input_layers"),
                                                                                          Mapping))
        if "layers" not in config:  # a backbone class with no builder
            raise UnsupportedError(
                f"{args.where}: {args.class_name}'s backbone {entry['registered_name']!r} is a keras-hub model which "
                "tf2torch does not generate PyTorch for yet (tf2torch layers --keras-hub lists those it does); "
                "write the weights alone with --weights-only")
        inputs = {e["name"]: e for e in config["layers"] if e.get("class_name") == "InputLayer"}
        refs = {}
        for name in self._input_names(config["input_layers"]):  # the backbone's own input tensors
            layer = inputs[name]["config"]
            refs[name] = self.g.input(name, tuple(layer["batch_shape"][1:]), layer["dtype"])
        # Keras records the (absent) mask it passes a nested model, one per input
        if self.g.keyed_inputs:
            self.out = self.g.model_layer(self.backbone, refs, mask={k: None for k in refs})
        else:
            self.out = self.g.model_layer(self.backbone, *refs.values(), mask=None)
        if unnamed:  # the weights are found by path, whatever the counter gave
            self.g.auto_named.add(self.out.layer)
        self.outputs = config["output_layers"]

    @staticmethod
    def _input_names(layers: Any) -> list[str]:
        if isinstance(layers, Mapping):
            return [v[0] for v in layers.values()]
        return [layers[0]] if layers and isinstance(layers[0], str) else [t[0] for t in layers]

    def output(self, key: str) -> Ref:
        """One output of a backbone that returns a dict (Keras numbers them in sorted key order)."""
        if not isinstance(self.outputs, Mapping) or key not in self.outputs:
            raise self.args.fail("backbone", f"a backbone with a {key!r} output")
        return Ref(self.out.layer, 0, sorted(self.outputs).index(key))

    def backbone_arg(self, key: str) -> Any:
        return self.args.config["backbone"]["config"].get(key)

    def dense(self, name: str, x: Ref, units: int, activation: Any) -> Ref:
        return self.g.layer("Dense", name, {"units": units, "activation": activation, "use_bias": True}, x)

    def dropout(self, name: str, x: Ref, rate: float) -> Ref:
        return self.g.layer("Dropout", name, {"rate": rate, "noise_shape": None}, x, training=False)

    def token(self, x: Ref, index: int = 0) -> Ref:
        return self.g.op("GetItem", "keras.src.ops.numpy", "get_item", {}, x, [sliced(), index, sliced()])

    def model(self, x: Ref) -> dict[str, Any]:
        return self.g.model(self.args.class_name, x)


def _activation(args: Args) -> str:
    """The head's activation as its Dense layer saves it (None is linear)."""
    value = args.raw("activation")
    if value is None:
        return "linear"
    if not isinstance(value, str):
        raise args.fail("activation", "an activation's name")
    return value


@builds("ImageClassifier", "ResNetImageClassifier", "DenseNetImageClassifier", "EfficientNetImageClassifier",
        "MiTImageClassifier", "CSPNetImageClassifier")
def image_classifier(args: Args) -> dict[str, Any]:
    head = Head(args)
    pooling = args.str("pooling", "avg", ("avg", "max"))
    x = head.g.layer("GlobalAveragePooling2D" if pooling == "avg" else "GlobalMaxPooling2D", "pooler",
                     {"data_format": "channels_last", "keepdims": False}, head.out)
    x = head.dropout("output_dropout", x, args.number("dropout", 0.0))
    return head.model(head.dense("predictions", x, args.int("num_classes"), _activation(args)))


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
    return head.model(head.dense("predictions", x, args.int("num_classes"), _activation(args)))


@builds("BertTextClassifier", "AlbertTextClassifier")
def pooled_text_classifier(args: Args) -> dict[str, Any]:
    head = Head(args)
    dropout = "classifier_dropout" if args.class_name == "BertTextClassifier" else "output_dropout"
    x = head.dropout(dropout, head.output("pooled_output"), args.number("dropout", 0.1))
    return head.model(head.dense("logits", x, args.int("num_classes"), _activation(args)))


@builds("RobertaTextClassifier", "DistilBertTextClassifier")
def token_text_classifier(args: Args) -> dict[str, Any]:
    """The first token's hidden state (Roberta's start token, DistilBERT's [CLS], both at index 0),
    through a hidden Dense (tanh for RoBERTa, relu for DistilBERT), to the logits."""
    head, roberta = Head(args), args.class_name == "RobertaTextClassifier"
    dropout = args.number("dropout", 0.0 if roberta else 0.2)
    x = head.token(head.out)
    if roberta:
        x = head.dropout("pooled_dropout", x, dropout)
    hidden = args.raw("hidden_dim")
    hidden = args.int("hidden_dim") if hidden is not None else head.backbone_arg("hidden_dim")
    x = head.dense("pooled_dense", x, hidden, "tanh" if roberta else "relu")
    x = head.dropout("output_dropout", x, dropout)
    return head.model(head.dense("logits", x, args.int("num_classes"), _activation(args)))


# backbone -> where ``backbone.token_embedding`` is: its own layer, or a TokenAndPositionEmbedding's sublayer
_TOKEN_EMBEDDING = {"OPTBackbone": ("embeddings", "TokenAndPositionEmbedding")}


@builds("GPT2CausalLM", "OPTCausalLM", "LlamaCausalLM", "Llama3CausalLM", "MistralCausalLM", "GemmaCausalLM",
        "Qwen3CausalLM")
def causal_lm(args: Args) -> dict[str, Any]:
    """The backbone's hidden states through its own token embedding, reversed: the logits (the tied
    embedding, or Llama's separate output matrix, as the backbone's ReversibleEmbedding holds them).

    keras-hub calls ``backbone.token_embedding`` in the Task's graph, outside the backbone; Keras saves
    that shared layer's weights once, inside the backbone. The Task's layer is written as the place of
    that layer in the graph (``{"shared": [...]}``): its converter calls the backbone's one module.
    """
    head = Head(args)
    config = head.backbone["config"]
    name, class_name = _TOKEN_EMBEDDING.get(str(head.backbone.get("class_name")), ("token_embedding",
                                                                                   "ReversibleEmbedding"))
    owner = next((e for e in config["layers"] if e["name"] == name), None)
    outputs = config["output_layers"]
    if owner is None or owner["class_name"] != class_name or not isinstance(outputs, list) or not outputs \
            or not isinstance(outputs[0], str):
        raise args.fail("backbone", f"a backbone with one output and a {class_name} {name!r}")
    path = [config["name"], name, *(("token_embedding",) if class_name != "ReversibleEmbedding" else ())]
    vocabulary = owner["config"]["vocabulary_size" if class_name != "ReversibleEmbedding" else "input_dim"]
    logits = head.g.layer("ReversibleEmbedding", "token_embedding", {"input_dim": vocabulary, "shared": path},
                          head.out, reverse=True)
    return head.model(logits)


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
    logits = _entry(g, "Dense", "predictions", {"units": args.int("num_classes"), "activation": _activation(args),
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
    classes, activation = args.int("num_classes", minimum=0), _activation(args)
    if classes == 0:  # the pooled features (the activation is only the Dense's)
        return head.model(head.g.layer("Identity", "predictions", {}, x))
    return head.model(head.dense("predictions", x, classes, activation))
