"""keras-hub ``Task`` files (a classifier or a language-model head around a backbone) from ``Task.save()``.

The same two checks as the backbones' (``test_keras_hub.py``), against keras-hub itself: the Task's graph
the builder writes is the one keras-hub's constructor builds (the backbone inside is checked there), and
the generated model computes the Task's outputs. Random seeded weights, tiny configs.
"""

from __future__ import annotations

import json
import zipfile
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from tests.corpus.keras_hub_cases import CASES
from tests.corpus.test_keras_hub import _tensors, functional_config, keras_hub, model_inputs, randomise
from tests.support.numerics import check, float64_drift
from tests.util import convert_in_memory, edit_keras_member, to_tf_layout
from tf2torch.cli import EXIT_ERROR, main
from tf2torch.families.keras_hub.common import args as hub_builders
from tf2torch.families.keras_hub.common.functional import AUTO_NAMED

# name -> (Task class, its arguments, the backbone case it wraps)
TASKS: dict[str, tuple[str, dict[str, Any], str]] = {
    "resnet_classifier": ("ResNetImageClassifier", dict(num_classes=4, dropout=0.1), "resnet_v1"),
    "densenet_classifier_max": ("DenseNetImageClassifier", dict(num_classes=3, pooling="max", activation="softmax"),
                                "densenet"),
    "vit_classifier": ("ViTImageClassifier", dict(num_classes=3, intermediate_dim=6), "vit"),
    "vit_classifier_gap": ("ViTImageClassifier", dict(num_classes=3, pooling="gap"), "vit"),
    "deit_classifier": ("DeiTImageClassifier", dict(num_classes=3), "deit"),
    "bert_classifier": ("BertTextClassifier", dict(num_classes=3), "bert"),
    "albert_classifier": ("AlbertTextClassifier", dict(num_classes=2, activation="sigmoid"), "albert"),
    "roberta_classifier": ("RobertaTextClassifier", dict(num_classes=3, hidden_dim=6), "roberta"),
    "distil_bert_classifier": ("DistilBertTextClassifier", dict(num_classes=3), "distil_bert"),
    "efficientnet_classifier": ("EfficientNetImageClassifier", dict(num_classes=3, dropout=0.2), "efficientnet"),
    "mit_classifier": ("MiTImageClassifier", dict(num_classes=3), "mit"),
    "vgg_classifier": ("VGGImageClassifier", dict(num_classes=3, pooling_hidden_dim=6), "vgg_32"),
    "vgg_classifier_flatten": ("VGGImageClassifier", dict(num_classes=3, pooling="flatten", pooling_hidden_dim=6,
                                                          activation="softmax"), "vgg"),
    # (named: keras-hub names the head's pool, flatten and dropout after the name the Task is given, and a reload
    # after the name it was saved under, which for an unnamed Task is another; none of them has weights)
    "hgnetv2_classifier": ("HGNetV2ImageClassifier", dict(num_classes=3, head_filters=12, name="hgnetv2_classifier"),
                           "hgnetv2_lab"),
    "hgnetv2_classifier_max": ("HGNetV2ImageClassifier", dict(num_classes=3, pooling="max", dropout=0.1,
                                                              name="hgnetv2_classifier"), "hgnetv2_ssld_like"),
    "hgnetv2_features": ("HGNetV2ImageClassifier", dict(num_classes=0, name="hgnetv2_classifier"), "hgnetv2_lab"),
    "cspnet_classifier": ("CSPNetImageClassifier", dict(num_classes=3), "cspnet_cs3"),
    "mobilenet_classifier": ("MobileNetImageClassifier", dict(num_classes=3, num_features=16), "mobilenet_v3_small"),
    **{f"{case}_causal_lm": (f"{cls}CausalLM", {}, case) for case, cls in (
        ("gpt2", "GPT2"), ("opt", "OPT"), ("llama", "Llama"), ("mistral", "Mistral"), ("gemma2", "Gemma"),
        ("qwen3", "Qwen3"), ("qwen3_epsilon", "Qwen3"), ("llama3_1", "Llama3"),
        ("qwen", "Qwen"), ("qwen_window", "Qwen"))},
    **{f"{case}_masked_lm": (f"{cls}MaskedLM", {}, case) for case, cls in (
        ("bert", "Bert"), ("albert", "Albert"), ("roberta", "Roberta"), ("distil_bert", "DistilBert"))},
    "t5_seq2seq_lm": ("T5Seq2SeqLM", {}, "t5"),
    "t5_untied_seq2seq_lm": ("T5Seq2SeqLM", {}, "t5_untied"),
}

# backbones only a head needs: VGG's 7x7 head conv wants at least a 7x7 feature map
EXTRA = {"vgg_32": ("VGGBackbone", dict(stackwise_num_repeats=[1, 1], stackwise_num_filters=[4, 8],
                                        image_shape=(32, 32, 3))),
         "t5_untied": ("T5Backbone", dict(CASES["t5"][1], tie_embedding_weights=False))}


@pytest.fixture(scope="module")
def tasks(tmp_path_factory):
    cache: dict[str, tuple[Any, Any, dict[str, np.ndarray], np.ndarray]] = {}

    def get(name: str):
        if name not in cache:
            class_name, kwargs, backbone_case = TASKS[name]
            backbone_class, backbone_kwargs = CASES[backbone_case] if backbone_case in CASES else EXTRA[backbone_case]
            hub = keras_hub()
            backbone = getattr(hub.models, backbone_class)(**backbone_kwargs)
            task = getattr(hub.models, class_name)(backbone=backbone, preprocessor=None, **kwargs)
            randomise(task, seed=1)
            inputs = model_inputs(backbone, seed=2)
            # a masked LM's own input (the backbone has none): three fixed positions per sequence, one repeated,
            # one negative (ops.take_along_axis counts it from the end)
            if isinstance(task.input, dict) and "mask_positions" in task.input:
                inputs["mask_positions"] = np.array([[1, 4, 6], [0, 0, 3], [6, 2, -1]], "int32")
            expected = np.asarray(task(inputs if len(inputs) > 1 else inputs["images"], training=False))
            path = tmp_path_factory.mktemp(name) / f"{name}.keras"
            task.save(path)
            cache[name] = task, path, inputs, expected
        return cache[name]

    return get


@pytest.fixture(params=sorted(TASKS))
def saved(request, tasks):
    return (request.param, *tasks(request.param))


def assert_same_config(ours: dict[str, Any], theirs: dict[str, Any]) -> None:
    """Every config value the builder writes is the one keras-hub saves (a Sequential's layers, each)."""
    if ours["class_name"] == "InputLayer":  # named by a counter; its shape is what the layers after it are built on
        assert (ours["config"]["batch_shape"], ours["config"]["dtype"]) == \
            (theirs["config"]["batch_shape"], theirs["config"]["dtype"]), ours["config"]["name"]
        return
    for key, value in ours["config"].items():
        if key == "layers":
            def named(layers: list[dict[str, Any]]) -> list[tuple[str, str | None]]:  # (inputs: a counter's names)
                return [(e["class_name"], None if e["class_name"] == "InputLayer" else e["config"]["name"])
                        for e in layers]
            assert named(value) == named(theirs["config"]["layers"]), ours["config"]["name"]
            for o, t in zip(value, theirs["config"]["layers"], strict=True):
                assert_same_config(o, t)
        elif key not in ("dtype", "name"):
            assert json.dumps(value, sort_keys=True) == json.dumps(theirs["config"][key], sort_keys=True), \
                (ours["config"]["name"], key)


def test_the_task_graph_is_the_one_keras_hub_builds(saved):
    name, task, path, _, _ = saved
    with zipfile.ZipFile(path) as zf:
        ours = hub_builders.expand(json.loads(zf.read("config.json")), str(path))["config"]
    theirs = functional_config(task)
    backbone = task.backbone.name
    if name.endswith("seq2seq_lm"):  # T5's head (the scale, then the embedding reversed) is moved into the
        tied = task.backbone.tie_embedding_weights  # backbone (tasks_lm.t5_seq2seq_lm)
        moved = [theirs["layers"].pop() for _ in range(1 + tied)][::-1]
        assert [e["class_name"] for e in moved] == ["Multiply"] * tied + ["ReversibleEmbedding"]
        assert theirs["output_layers"] == ["token_embedding", 0, 0]
        theirs["output_layers"] = [backbone, 1, 2]  # its third output, "logits" (sorted after the other two)
        inner = next(e for e in ours["layers"] if e["name"] == backbone)["config"]
        reverse = next(e for e in inner["layers"] if e["name"] == "token_embedding")["inbound_nodes"][-1]
        assert reverse["kwargs"] == {"reverse": True} and inner["output_layers"]["logits"][0] == "token_embedding"
        x = _tensors(reverse)[0]
        if tied:
            scale = next(e for e in inner["layers"] if e["name"] == x[0])["inbound_nodes"][0]
            assert scale["args"][1] == moved[0]["inbound_nodes"][0]["args"][1]  # the same float32 constant
            x = _tensors(scale)[0]
        assert x == tuple(inner["output_layers"]["decoder_sequence_output"])
    # op layers and unnamed inputs are named by a process-wide counter: paired by position
    rename = {t["name"]: o["name"] for o, t in zip(ours["layers"], theirs["layers"])
              if str(t.get("module")).startswith("keras.src.ops") or t["class_name"] == "InputLayer" or o.get(AUTO_NAMED)}
    print(name, [(e["class_name"], e["name"]) for e in ours["layers"]])
    assert [(e["class_name"], e["name"]) for e in ours["layers"]] == \
        [(e["class_name"], rename.get(e["name"], e["name"])) for e in theirs["layers"]]
    for o, t in zip(ours["layers"], theirs["layers"]):
        calls = [[(rename.get(a, a), b, c) for a, b, c in _tensors(n)] for n in t["inbound_nodes"]]
        assert [_tensors(n) for n in o["inbound_nodes"]] == calls, o["name"]
        assert [n["kwargs"] for n in o["inbound_nodes"]] == [n["kwargs"] for n in t["inbound_nodes"]], o["name"]
        if o["class_name"] == type(task.backbone).__name__:  # its own graph is checked by test_keras_hub.py
            assert o["registered_name"] == t["registered_name"]
            continue
        if o["class_name"] == "MaskedLMHead":  # keras-hub saves a copy of the token embedding's config in the head;
            # the builder writes where that layer (which Keras saves once, with the backbone) is: tasks_lm.py
            shared = o["config"]["token_embedding"]["shared"]
            layer = task.backbone.get_layer(shared[1])
            assert shared[0] == backbone and (getattr(layer, shared[2]) if len(shared) == 3 else layer) is \
                task.backbone.token_embedding is task.get_layer("mlm_head").token_embedding
            o = {**o, "config": {k: v for k, v in o["config"].items() if k != "token_embedding"}}
        if name.endswith("causal_lm") and o["name"] == "token_embedding":  # the backbone's own layer, called again
            shared = o["config"]["shared"]  # (tasks.causal_lm): written as where it is, the same object
            layer = task.backbone.get_layer(shared[1])
            assert shared[0] == backbone and (getattr(layer, shared[2]) if len(shared) == 3 else layer) is \
                task.backbone.token_embedding is task.get_layer("token_embedding")
            assert o["config"]["input_dim"] == t["config"]["input_dim"]
            continue
        assert_same_config(o, t)
    for key in ("input_layers", "output_layers"):
        named = json.dumps(theirs[key], sort_keys=True)
        for old, new in rename.items():
            named = named.replace(json.dumps(old), json.dumps(new))
        assert json.dumps(ours[key], sort_keys=True) == named, key


def test_the_generated_task_computes_keras_hubs_outputs(saved):
    import torch

    name, _, path, inputs, expected = saved
    model, result = convert_in_memory(path)
    assert result.model_source
    layouts = {i["name"]: i["layout"] for i in result.report.interface["inputs"]}
    if len(inputs) == 1:
        layouts = {"images": next(iter(layouts.values()))}
    feed = [torch.from_numpy(np.moveaxis(inputs[k], -1, 1).copy() if layouts[k] == "channels_first" else inputs[k])
            for k in sorted(inputs)]
    with torch.no_grad():
        got = to_tf_layout(model(*feed))
    check(got, expected, name, float64_drift(model, feed))


@pytest.mark.parametrize("name", [n for n in sorted(TASKS) if n.endswith(("_masked_lm", "_causal_lm"))])
def test_a_language_model_head_calls_the_backbones_embedding(tasks, name):
    """The tied embedding is one weight in the generated model, as in keras-hub's: not a copy in the head."""
    task, path, _, _ = tasks(name)
    model, _ = convert_in_memory(path)
    table = tuple(task.backbone.token_embedding.embeddings.shape)
    shapes = [tuple(p.shape) for p in model.parameters()]
    print(f"{name}: {shapes.count(table)} parameter(s) of the embedding's shape {table}")
    assert shapes.count(table) == 1
    if name.endswith("_masked_lm"):
        assert table not in [tuple(p.shape) for p in model.mlm_head.parameters()]


def test_a_task_around_a_backbone_with_no_builder_is_refused_by_name(tmp_path):
    hub = keras_hub()
    backbone = hub.models.FNetBackbone(vocabulary_size=50, num_layers=1, hidden_dim=8, intermediate_dim=16,
                                       max_sequence_length=16)
    path = tmp_path / "fnet_classifier.keras"
    hub.models.FNetTextClassifier(backbone=backbone, num_classes=2, preprocessor=None).save(path)
    result = CliRunner().invoke(main, ["convert", str(path), "-o", str(tmp_path / "out")])
    print(result.stderr)
    assert result.exit_code == EXIT_ERROR and "FNetTextClassifier" in result.stderr
    assert not (tmp_path / "out").exists()


def test_a_task_argument_the_builder_does_not_know_is_refused(tasks, tmp_path):
    _, path, _, _ = tasks("bert_classifier")
    edited = edit_keras_member(path, tmp_path / "edited.keras", "config.json",
                               lambda c: {**c, "config": {**c["config"], "label_smoothing": 0.1}})
    result = CliRunner().invoke(main, ["convert", str(edited), "-o", str(tmp_path / "out")])
    print(result.stderr)
    assert result.exit_code == EXIT_ERROR and "label_smoothing" in result.stderr and not (tmp_path / "out").exists()


def test_a_task_around_a_backbone_tf2torch_does_not_build_is_refused_by_name(tasks, tmp_path):
    _, path, _, _ = tasks("resnet_classifier")
    edited = edit_keras_member(path, tmp_path / "xception.keras", "config.json", lambda c: {**c, "config": {
        **c["config"], "backbone": {**c["config"]["backbone"], "registered_name": "keras_hub>XceptionBackbone"}}})
    result = CliRunner().invoke(main, ["convert", str(edited), "-o", str(tmp_path / "out")])
    print(result.stderr)
    assert result.exit_code == EXIT_ERROR and "backbone 'keras_hub>XceptionBackbone'" in result.stderr
    assert "--weights-only" in result.stderr and not (tmp_path / "out").exists()


def test_a_masked_lm_head_outside_a_masked_lm_task_is_refused(tmp_path):
    """A MaskedLMHead in a plain Functional model holds its own output kernel (or embedding): not converted."""
    hub = keras_hub()  # require_package first: skips (or fails under TF2TORCH_REQUIRE_TF=1) without keras-hub
    import keras

    x, positions = keras.Input((7, 8)), keras.Input((3,), dtype="int32")
    path = tmp_path / "head.keras"
    keras.Model([x, positions], hub.layers.MaskedLMHead(vocabulary_size=50)(x, positions)).save(path)
    result = CliRunner().invoke(main, ["convert", str(path), "-o", str(tmp_path / "out")])
    print(result.stderr)
    assert result.exit_code == EXIT_ERROR and "only the head of a keras-hub MaskedLM task" in result.stderr
    assert not (tmp_path / "out").exists()


def test_a_task_around_the_wrong_backbone_is_refused_in_one_short_line(tasks, tmp_path):
    """A text classifier whose backbone is an image model: the one-line error names what the head needs and
    shows the argument shortened (it is a whole serialized model)."""
    _, bert, _, _ = tasks("bert_classifier")
    _, resnet, _, _ = tasks("resnet_classifier")
    with zipfile.ZipFile(resnet) as zf:
        image_backbone = json.loads(zf.read("config.json"))["config"]["backbone"]
    edited = edit_keras_member(bert, tmp_path / "wrong.keras", "config.json",
                               lambda c: {**c, "config": {**c["config"], "backbone": image_backbone}})
    result = CliRunner().invoke(main, ["convert", str(edited), "-o", str(tmp_path / "out")])
    print(result.stderr)
    assert result.exit_code == EXIT_ERROR and "a backbone with a 'pooled_output' output" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and len(result.stderr) < 600
    assert not (tmp_path / "out").exists()
