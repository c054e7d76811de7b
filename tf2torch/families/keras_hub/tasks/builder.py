"""keras-hub ``Task`` files: a classifier or language-model head around a backbone.

A Task's saved config holds its own arguments and its backbone's serialized config. The Task is a
Functional model whose graph calls the backbone as one nested model on the backbone's own inputs, then
its head; that graph is written here, with the backbone expanded by its own builder (a backbone with no
builder stays refused by name). The preprocessor a Task may carry is not part of the model's call
(``Task.__call__`` runs the network on already-tokenised or already-resized inputs), so it is not read.

Here: ``Head``, the text classifiers and the causal LMs; image classifiers in ``tasks_vision.py``, masked
and sequence-to-sequence LMs in ``tasks_lm.py``. Written from keras-hub 0.32's ``text_classifier.py`` and
``causal_lm.py`` and each family's subclass (heads, layer names).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ....errors import UnsupportedError
from ....keras_names import snake_case
from ..common.args import PREFIX, Args, builds, expand
from ..common.functional import FunctionalGraph, Ref, sliced


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


def head_activation(args: Args) -> str:
    """The head's activation as its Dense layer saves it (None is linear)."""
    value = args.raw("activation")
    if value is None:
        return "linear"
    if not isinstance(value, str):
        raise args.fail("activation", "an activation's name")
    return value


@builds("BertTextClassifier", "AlbertTextClassifier")
def pooled_text_classifier(args: Args) -> dict[str, Any]:
    head = Head(args)
    dropout = "classifier_dropout" if args.class_name == "BertTextClassifier" else "output_dropout"
    x = head.dropout(dropout, head.output("pooled_output"), args.number("dropout", 0.1))
    return head.model(head.dense("logits", x, args.int("num_classes"), head_activation(args)))


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
    return head.model(head.dense("logits", x, args.int("num_classes"), head_activation(args)))


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
