"""keras-hub models from their ``Backbone.save()`` files: the file holds the constructor's arguments, and
tf2torch's builder for the class writes the layer graph keras-hub builds from them.

Two checks per model, both against keras-hub itself (random seeded weights, tiny configs):
- the builder's graph is the one keras-hub's constructor builds (``Functional.get_config`` of the live
  model: same layers in the same order, same configs, same connections), so a builder that drifted
  from keras-hub's code fails here by name;
- the generated PyTorch model computes keras-hub's outputs, with a padding mask that masks real steps.
A keras-hub class with no builder, or a file with arguments the builder does not know, is refused by name.
"""

from __future__ import annotations

import json
import os
import zipfile
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from tests.conftest import require_package
from tests.corpus.keras_hub_cases import CASES
from tests.support.numerics import check, float64_drift
from tests.support.weights import KERAS_HUB, randomise_keras
from tests.util import convert_in_memory, edit_keras_member, to_tf_layout
from tf2torch.cli import EXIT_ERROR, main
from tf2torch.families.keras_hub.common import args as hub_builders
from tf2torch.families.keras_hub.common.functional import AUTO_NAMED

GET_CONFIG_BUGS = {"LlamaTransformerDecoder": {"rope_scaling_factor": lambda op: op.rope_position_scaling_factor},
                   "DeiTEncoder": {"key_dim": lambda op: op.hidden_dim // op.num_heads}}


# arguments keras-hub 0.32 keeps only on a sublayer (neither in get_config nor as an attribute)
LIVE_ONLY = {("HierarchicalTransformerEncoder", "sr_ratio"): lambda layer: layer.attn.sr_ratio,
             ("HierarchicalTransformerEncoder", "drop_prob"): lambda layer: layer.drop_prop,  # (sic)
             ("HierarchicalTransformerEncoder", "layer_norm_epsilon"): lambda layer: layer.norm1.epsilon}


def keras_hub():
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    return require_package("keras_hub")


def randomise(model, seed: int) -> None:
    """Every weight random (``tests/support/weights``: norm scales near 1, BatchNorm variances in [0.5, 1.5]),
    so a swapped or dropped weight or statistic shows."""
    randomise_keras(model, seed, KERAS_HUB)


def as_loaded(model) -> None:
    """The weights keras-hub's reload of the saved file gives: DINOv2's embeddings recompute their interpolated
    position embeddings from the stored ones when loaded (the saved copy is ignored), so random ones are
    put through the layer's own save and load."""
    for layer in model.layers:
        if type(layer).__name__ == "DINOV2Embedding":
            store: dict[str, Any] = {}
            layer.save_own_variables(store)
            layer.load_own_variables(store)


def model_inputs(model, seed: int) -> dict[str, np.ndarray]:
    """Two images, or sequences of 7 tokens: one whole, one padded after 4, one all padding."""
    rng = np.random.default_rng(seed)
    if not isinstance(model.input, dict) or list(model.input) == ["images"]:  # an image backbone
        image = model.input["images"] if isinstance(model.input, dict) else model.input
        return {"images": rng.uniform(0, 1, (2, *image.shape[1:])).astype("float32")}
    if "encoder_token_ids" in model.input:  # T5: 40 tokens in (so that far offsets use the log buckets), 7 out
        return {"encoder_token_ids": rng.integers(0, 50, (2, 40)).astype("int32"),
                "encoder_padding_mask": np.array([[1] * 40, [1] * 30 + [0] * 10], "int32"),
                "decoder_token_ids": rng.integers(0, 50, (2, 7)).astype("int32"),
                "decoder_padding_mask": np.array([[1] * 7, [1] * 4 + [0] * 3], "int32")}
    if "encoder_features" in model.input:  # Whisper: 20 frames of audio features, 7 decoder tokens
        return {"encoder_features": rng.normal(size=(2, 20, model.input["encoder_features"].shape[-1])).astype("float32"),
                "decoder_token_ids": rng.integers(0, 50, (2, 7)).astype("int32"),
                "decoder_padding_mask": np.array([[1] * 7, [1] * 4 + [0] * 3], "int32")}
    # the third sequence is all padding: every key of every query masked (Keras 3 gives such rows zero
    # weights, or uniform ones in its fused attention, which layers without dropout take)
    inputs = {"token_ids": rng.integers(0, 50, (3, 7)).astype("int32"),
              "padding_mask": np.array([[1] * 7, [1] * 4 + [0] * 3, [0] * 7], "int32"),
              "segment_ids": rng.integers(0, 2, (3, 7)).astype("int32")}
    return {k: v for k, v in inputs.items() if k in model.input}


def functional_config(model) -> dict[str, Any]:
    """The graph config Keras would save for this model were it a plain Functional model."""
    from keras.src.models import functional

    for op in model.operations:  # keras-hub 0.32's get_config of these reads an attribute they never set
        for attribute, value in GET_CONFIG_BUGS.get(type(op).__name__, {}).items():
            if not hasattr(op, attribute):
                setattr(op, attribute, value(op))
    like = functional.functional_like_constructor
    functional.functional_like_constructor = lambda cls: True  # keras-hub's get_config returns its arguments
    try:
        return json.loads(json.dumps(functional.Functional.get_config(model), default=str))
    finally:
        functional.functional_like_constructor = like


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """name -> (live model, saved file, inputs, keras-hub's outputs), each built once for the module."""
    cache: dict[str, tuple[Any, Any, dict[str, np.ndarray], dict[str, np.ndarray]]] = {}

    def get(name: str):
        if name not in cache:
            class_name, kwargs = CASES[name]
            model = getattr(keras_hub().models, class_name)(**kwargs)
            randomise(model, seed=1)
            as_loaded(model)
            inputs = model_inputs(model, seed=2)
            outputs = model(inputs if len(inputs) > 1 else inputs["images"], training=False)
            path = tmp_path_factory.mktemp(name) / f"{name}.keras"
            model.save(path)
            expected = outputs if isinstance(outputs, dict) else {"output": outputs}
            cache[name] = model, path, inputs, {k: np.asarray(v) for k, v in expected.items()}
        return cache[name]

    return get


@pytest.fixture(params=sorted(CASES))
def saved(request, models):
    return (request.param, *models(request.param))


def _tensors(value: Any) -> list[tuple[str, int, int]]:
    if isinstance(value, dict) and value.get("class_name") == "__keras_tensor__":
        return [tuple(value["config"]["keras_history"])]
    if isinstance(value, dict):
        return [t for k in sorted(value) for t in _tensors(value[k])]
    if isinstance(value, list):
        return [t for v in value for t in _tensors(v)]
    return []


def test_the_builder_writes_the_graph_keras_hub_builds(saved):
    name, model, path, _, _ = saved
    with zipfile.ZipFile(path) as zf:
        ours = hub_builders.expand(json.loads(zf.read("config.json")), str(path))["config"]
    theirs = functional_config(model)
    # keras.ops layers and unnamed inputs are named by a process-wide counter (get_item_1, input_layer_3):
    # pair them by position
    rename = {t["name"]: o["name"] for o, t in zip(ours["layers"], theirs["layers"])
              if str(t.get("module")).startswith("keras.src.ops") or t["class_name"] == "InputLayer"
              or o.get(AUTO_NAMED)}
    print(name, [e["name"] for e in ours["layers"]])
    assert [(e["class_name"], e["name"]) for e in ours["layers"]] == \
        [(e["class_name"], rename.get(e["name"], e["name"])) for e in theirs["layers"]]
    for o, t in zip(ours["layers"], theirs["layers"]):
        for key, value in o["config"].items():
            if key == "dtype" or (key == "name" and o["name"] in rename.values()) or o["class_name"] == "InputLayer":
                continue
            # an argument the layer's get_config leaves out (keras-hub 0.32's Qwen3 decoder drops head_dim): the
            # live layer's attribute
            if key in t["config"]:
                expected = t["config"][key]
            else:  # (op layers are not in model.layers, but their configs have every key we write)
                live = model.get_layer(t["name"])
                read = LIVE_ONLY.get((o["class_name"], key), lambda layer, key=key: getattr(layer, key, None))
                expected = read(live)
            assert json.dumps(value, sort_keys=True) == json.dumps(expected, sort_keys=True), (o["name"], key)
        calls = [[(rename.get(a, a), b, c) for a, b, c in _tensors(n)] for n in t["inbound_nodes"]]
        assert [_tensors(n) for n in o["inbound_nodes"]] == calls, o["name"]
    named = json.dumps(theirs["input_layers"], sort_keys=True)
    for old, new in rename.items():
        named = named.replace(json.dumps(old), json.dumps(new))
    assert json.dumps(ours["input_layers"], sort_keys=True) == named
    assert json.dumps(ours["output_layers"], sort_keys=True) == json.dumps(theirs["output_layers"], sort_keys=True)


def test_the_generated_model_computes_keras_hubs_outputs(saved):
    import torch

    name, _, path, inputs, expected = saved
    model, result = convert_in_memory(path)
    assert result.model_source  # a model.py, not a bare state_dict
    layouts = {i["name"]: i["layout"] for i in result.report.interface["inputs"]}
    if len(inputs) == 1:  # one image input, whatever the model calls it
        layouts = {"images": next(iter(layouts.values()))}
    # channels-first inputs (images, Whisper's audio features) go in as the generated model takes them
    feed = [torch.from_numpy(np.moveaxis(inputs[k], -1, 1).copy() if layouts[k] == "channels_first" else inputs[k])
            for k in sorted(inputs)]
    with torch.no_grad():
        got = model(*feed)
    got = got if isinstance(got, tuple) else (got,)
    for i, key in enumerate(sorted(expected)):
        drift = float64_drift(model, feed, lambda out, i=i: out[i] if isinstance(out, tuple) else out)
        check(to_tf_layout(got[i]), expected[key], f"{name} {key}", drift)


def test_a_keras_hub_class_with_no_builder_is_refused_by_name(tmp_path):
    path = tmp_path / "fnet.keras"
    keras_hub().models.FNetBackbone(vocabulary_size=50, num_layers=1, hidden_dim=8, intermediate_dim=16,
                                    max_sequence_length=16).save(path)
    result = CliRunner().invoke(main, ["convert", str(path), "-o", str(tmp_path / "out")])
    print(result.stderr)
    assert result.exit_code == EXIT_ERROR
    assert "'keras_hub>FNetBackbone' is a keras-hub model" in result.stderr and "--weights-only" in result.stderr
    assert not (tmp_path / "out").exists()
    result = CliRunner().invoke(main, ["convert", str(path), "-o", str(tmp_path / "out"), "--weights-only"])
    assert result.exit_code == 0, result.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["model.safetensors", "report.json"]


def test_an_argument_the_builder_does_not_know_is_refused(models, tmp_path):
    _, path, _, _ = models("bert")
    # an option a newer keras-hub might add
    edited = edit_keras_member(path, tmp_path / "edited.keras", "config.json",
                               lambda c: {**c, "config": {**c["config"], "rope_scaling": 2.0}})
    result = CliRunner().invoke(main, ["convert", str(edited), "-o", str(tmp_path / "out")])
    print(result.stderr)
    assert result.exit_code == EXIT_ERROR and "rope_scaling" in result.stderr and not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", ["llama", "gemma2"])
def test_reversible_embedding_reverse_matches_keras(models, name: str) -> None:
    """``token_embedding.reverse(hidden)``: a causal LM's logits (Llama: its own (dim, vocab) matrix;
    Gemma 2: the tied embedding, soft-capped)."""
    import torch

    model, path, _, _ = models(name)
    hidden = np.random.default_rng(4).normal(size=(2, 3, 16)).astype("float32")
    expected = np.asarray(model.get_layer("token_embedding")(hidden, reverse=True))
    converted, _ = convert_in_memory(path)
    with torch.no_grad():
        got = converted.token_embedding.reverse(torch.from_numpy(hidden)).numpy()
    error = float(np.abs(got - expected).max() / np.abs(expected).max())
    print(f"{name} reverse: max relative error {error:.2e}")
    assert error <= 1e-5


def test_a_hostile_layer_count_is_refused_without_building_it(models, tmp_path):
    """The arguments are data: num_layers=10**9 stops at the builder's bound, with the file named."""
    _, path, _, _ = models("bert")
    edited = edit_keras_member(path, tmp_path / "huge.keras", "config.json",
                               lambda c: {**c, "config": {**c["config"], "num_layers": 10**9}})
    result = CliRunner().invoke(main, ["convert", str(edited), "-o", str(tmp_path / "out")])
    print(result.stderr)
    assert result.exit_code == EXIT_ERROR and "over 20000 layers" in result.stderr and "huge.keras" in result.stderr


@pytest.mark.parametrize("name", ["efficientnet", "cspnet_cs3", "hgnetv2_tanh"])
def test_a_channels_first_image_backbone_is_refused(models, tmp_path, name: str):
    """Built under image_data_format channels_first, keras-hub lays out every layer so: refused, not misread."""
    _, path, _, _ = models(name)
    edited = edit_keras_member(path, tmp_path / "cf.keras", "config.json",
                               lambda c: {**c, "config": {**c["config"], "data_format": "channels_first"}})
    result = CliRunner().invoke(main, ["convert", str(edited), "-o", str(tmp_path / "out")])
    print(result.stderr)
    assert result.exit_code == EXIT_ERROR and "channels_first" in result.stderr and not (tmp_path / "out").exists()


@pytest.mark.parametrize("name", ["mobilenet_v3_large", "efficientnet_v2", "cspnet_csp_resnet", "resnet_v1"])
def test_the_inference_form_folds_the_blocks_batch_norms_and_matches(models, name: str):
    """fuse() folds each BatchNorm that only a conv feeds, in blocks whose converters nest their modules
    (self.bn(self.conv(x))) too; the folded model still computes keras-hub's outputs."""
    import copy

    import torch

    from tests.util import load_source

    _, path, inputs, expected = models(name)
    model, result = convert_in_memory(path)
    fused = load_source(result.model_source)["fuse"](copy.deepcopy(model))
    norms = [sum(isinstance(m, torch.nn.BatchNorm2d) for m in m_.modules()) for m_ in (model, fused)]
    feed = [torch.from_numpy(np.moveaxis(inputs["images"], -1, 1).copy())]
    with torch.no_grad():
        got = to_tf_layout(fused(*feed))
    print(f"{name}: {norms[0]} BatchNorms, {norms[1]} left unfolded")
    check(got, expected["output"], f"{name} inference form", float64_drift(fused, feed))
    assert norms[1] == 0


def test_the_block_converters_accept_exactly_the_activations_the_helpers_build():
    """The converters refuse by a name list; the generated helpers build by a table: the two agree."""
    import torch

    from tf2torch.families.keras_hub.common.converters import ACTIVATIONS
    from tf2torch.families.keras_hub.common.runtime import keras_hub_activation

    built = {name: type(keras_hub_activation(name)).__name__ for name in ACTIVATIONS}
    print(built)
    assert all(isinstance(keras_hub_activation(name), torch.nn.Module) for name in ACTIVATIONS)
    for refused in ("softmax", "exponential", "soft_shrink"):
        with pytest.raises(KeyError):
            keras_hub_activation(refused)


@pytest.mark.parametrize("name", ["bert", "llama"])
def test_the_transformer_layers_are_one_stack(models, name: str) -> None:
    """Item 5 of the issue: the layers as one ModuleList whose forward hands each the padding mask, not one
    line per layer; keys ``transformer_layers.N.…``, every weight still mapped (the outputs: the test above)."""
    _, path, _, _ = models(name)
    model, result = convert_in_memory(path)
    layers = model.transformer_layers
    print(f"{name}: {type(layers).__name__} of {len(layers)}, model.py {len(result.model_source.splitlines())} lines")
    assert type(layers).__name__.endswith("Stack") and len(layers) == CASES[name][1]["num_layers"] >= 2
    assert f"for _ in range({len(layers)})" in result.model_source
    assert "self.transformer_layer_0" not in result.model_source
    assert {k.split(".")[1] for k in (p.key for p in result.plans) if k.startswith("transformer_layers.")} == \
        {str(i) for i in range(len(layers))}
