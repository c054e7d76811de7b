"""Repeated blocks as one class per kind (codegen/blocks/): a ResNet-like Keras model with named blocks,
converted and compared with Keras; the classes, Sequential stages, keys and verify's taps checked.

The model: a stem, then three stages of three residual blocks named ``stage{s}_block{b}_*`` (ResNet's
naming). Stage 1's first block has a stride-1 shortcut conv, stages 2-3's first blocks stride 2 (TF's SAME
padding, asymmetric there): the stride-2 blocks are one kind, stage 1's first block matches no other block
and stays flat; blocks 2-3 of every stage are one kind (widths differ), chained as one nn.Sequential per
stage. Their ReLU after the second conv is unnamed: Keras names it ``activation_N``, inside the block. A
squeeze-excite's Reshape puts a width in the forward code: kept as an attribute of the block.
"""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from click.testing import CliRunner

from tests.conftest import require_keras
from tests.layers.harness import _layouts as layouts
from tests.layers.harness import (
    check_controlled,
    check_file,
    compare,
    import_isolated,
    inputs_for,
    keras_outputs,
    randomise,
    ruff_check,
    run_torch,
)
from tests.util import convert_in_memory, load_source
from tf2torch import api
from tf2torch.cli import main
from tf2torch.codegen.blocks import find
from tf2torch.codegen.blocks.nest import nest
from tf2torch.spec import GraphSpec, LayerCall, LayerSpec, TensorRef

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
pytestmark = pytest.mark.tf
WIDTHS = (8, 12, 16)


def _resnet_like(keras: Any) -> Any:
    layers = keras.layers
    x = inputs = keras.Input((16, 16, 3), name="image")
    x = layers.Conv2D(8, 3, padding="same", name="stem_conv")(x)
    x = layers.BatchNormalization(name="stem_bn")(x)
    x = layers.ReLU(name="stem_relu")(x)
    for stage, width in enumerate(WIDTHS, start=1):
        for block in (1, 2, 3):
            p = f"stage{stage}_block{block}"
            stride = 2 if block == 1 and stage > 1 else 1
            shortcut = x
            if block == 1:
                shortcut = layers.Conv2D(width, 1, strides=stride, name=f"{p}_0_conv")(x)
                shortcut = layers.BatchNormalization(name=f"{p}_0_bn")(shortcut)
            y = layers.Conv2D(width, 3, strides=stride, padding="same", name=f"{p}_1_conv")(x)
            y = layers.BatchNormalization(name=f"{p}_1_bn")(y)
            y = layers.Activation("relu", name=f"{p}_1_relu")(y)
            y = layers.Conv2D(width, 3, padding="same", name=f"{p}_2_conv")(y)
            y = layers.BatchNormalization(name=f"{p}_2_bn")(y)
            y = layers.Activation("relu")(y)  # Keras names it: activation, activation_1 ...
            y = layers.Conv2D(width, 1, name=f"{p}_3_conv")(y)
            s = layers.GlobalAveragePooling2D(name=f"{p}_se_squeeze")(y)
            s = layers.Reshape((1, 1, width), name=f"{p}_se_reshape")(s)  # its target: a number forward reads
            s = layers.Conv2D(width, 1, activation="sigmoid", name=f"{p}_se_expand")(s)
            y = layers.Multiply(name=f"{p}_se_excite")([y, s])
            y = layers.Add(name=f"{p}_add")([shortcut, y])
            x = layers.ReLU(name=f"{p}_out")(y)
    x = layers.GlobalAveragePooling2D(name="pool")(x)
    return keras.Model(inputs, layers.Dense(5, name="logits")(x), name="resnet_like")


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any, list[np.ndarray]]:
    keras = require_keras("keras")
    model = _resnet_like(keras)
    randomise(model, seed=3)
    path = tmp_path_factory.mktemp("blocks") / "resnet_like.keras"
    model.save(path)
    return path, model, inputs_for(model, seed=4)


def test_blocks_match_keras(saved, tmp_path) -> None:
    path, model, xs = saved
    expected = keras_outputs(model, xs)
    scale = float(np.abs(expected[0]).max())
    _, conversion = check_file(path, model, xs, rtol=1e-4, atol=1e-5 * scale, label="resnet-like, blocks",
                               controlled=True)
    torch_model, _ = convert_in_memory(path)
    load_source(conversion.model_source)["fuse"](torch_model)  # the inference form folds inside block classes
    compare(run_torch(torch_model, conversion, xs), expected, layouts(conversion, "outputs"), rtol=1e-4,
            atol=1e-5 * scale, label="resnet-like, blocks, inference form")
    check_controlled(torch_model, conversion, xs, expected, "resnet-like, blocks, inference form")
    ruff_check(conversion.model_source, tmp_path / "model.py")
    import_isolated(conversion.model_source, tmp_path / "model.py")


def test_one_class_per_kind_and_a_sequential_per_stage(saved) -> None:
    path, _, _ = saved
    source = api.convert(path, None, dry_run=True).model_source
    flat = api.convert(path, None, dry_run=True, flat=True).model_source
    print(f"model.py: {len(source.splitlines())} lines with blocks, {len(flat.splitlines())} flat")
    namespace = load_source(source)
    kinds = [name for name, value in namespace.items()
             if isinstance(value, type) and "one block each" in (value.__doc__ or "")]
    assert len(kinds) == 2, kinds  # the stride-2 first blocks; blocks 2-3
    assert source.count("nn.Sequential(") == len(WIDTHS)  # blocks 2-3 of each stage
    assert "self.stage1_block1_1_conv = nn.Conv2d" in source  # a kind with one instance stays flat
    assert "self.stage2_block1 = " in source and "self.stage3_block1 = " in source
    model = namespace["build_model"]()
    assert [type(m).__name__ for m in model.stage2_blocks] == [type(model.stage3_blocks[0]).__name__] * 2
    assert model.stage2_blocks[1].conv1.in_channels == WIDTHS[1] and model.stage3_blocks[0].conv1.in_channels == WIDTHS[2]
    assert len(source.splitlines()) < len(flat.splitlines())
    stored = re.findall(r"^        self\.(\w+) = \1$", source, re.MULTILINE)  # numbers forward reads
    kept = {k for m in (model.stage3_block1, model.stage3_blocks[0]) for k, v in vars(m).items()
            if isinstance(v, int) and not isinstance(v, bool)}
    assert stored and kept == set(stored), (stored, kept)


@pytest.mark.parametrize("inference", [False, True], ids=["readable", "inference"])
def test_block_classes_script_and_export(saved, tmp_path, inference) -> None:
    """Block classes, their stored numbers and Sequential stages through jit.script and torch.export."""
    import torch

    path, _, xs = saved
    api.convert(path, tmp_path / "out")
    spec = importlib.util.spec_from_file_location("blocks_exported_model", tmp_path / "out" / "model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.load_model(inference=inference)
    x = torch.from_numpy(xs[0]).movedim(-1, 1).contiguous()
    with torch.no_grad():
        expected = model(x)
        scripted = torch.jit.script(model)(x)
        exported = torch.export.export(model, (x,)).module()(x)
    for label, actual in (("jit.script", scripted), ("torch.export", exported)):
        print(f"{label}: max abs {float((actual - expected).abs().max()):.2e}")
        torch.testing.assert_close(actual, expected, rtol=1e-5, atol=1e-6)


def test_keys_cover_the_same_weights_and_taps_resolve(saved) -> None:
    path, _, _ = saved
    blocked = api.convert(path, None, dry_run=True)
    flat = api.convert(path, None, dry_run=True, flat=True)
    by_source = lambda plans: sorted(p.source for p in plans)  # noqa: E731
    assert by_source(blocked.plans) == by_source(flat.plans)  # every Keras weight, once
    assert "stage2_blocks.0.conv1.weight" in {p.key for p in blocked.plans}
    model, conversion = convert_in_memory(path)
    taps = conversion.report.interface["layers"]
    for module in taps.values():
        model.get_submodule(module)  # raises if verify's hook point is not in the model
    assert taps["stage2_block2_1_conv"] == "stage2_blocks.0.conv1"
    assert taps["stage3_block1_0_bn"] == "stage3_block1.bn0"
    print(f"{len(taps)} taps resolve")


def test_flat_keeps_one_module_per_keras_layer(saved, tmp_path) -> None:
    path, model, xs = saved
    result = CliRunner().invoke(main, ["convert", str(path), "-o", str(tmp_path / "out"), "--flat", "-q"])
    assert result.exit_code == 0, result.output
    source = (tmp_path / "out" / "model.py").read_text()
    assert "nn.Sequential(" not in source and "one block each" not in source
    assert "self.stage2_block2_1_conv = nn.Conv2d" in source
    _, conversion = check_file(path, model, xs, rtol=1e-4, atol=1e-6, label="resnet-like, --flat", flat=True,
                               controlled=True)
    assert conversion.model_source == source


def test_verify_compares_layers_inside_blocks(saved, tmp_path) -> None:
    path, _, _ = saved
    api.convert(path, tmp_path / "out")
    result = api.verify(path, tmp_path / "out")
    rows = {r.name: r for r in result.rows}
    print({name: rows[name].max_abs for name in ("stage2_block2_1_conv", "stage3_block3_out", "logits")})
    assert result.ok
    assert rows["stage2_block2_1_conv"].torch == "stage2_blocks.0.conv1" and rows["stage2_block2_1_conv"].status == "ok"


def test_masks_keep_a_graph_flat() -> None:
    """A Keras mask is a local of the forward that makes it: no block may take one across."""
    keras = require_keras("keras")
    layers = keras.layers
    x = inputs = keras.Input((6,), dtype="int32")
    x = layers.Embedding(20, 8, mask_zero=True, name="embed")(x)
    for i in range(3):
        x = layers.Dense(8, name=f"b{i}_dense")(x)
        x = layers.LayerNormalization(name=f"b{i}_norm")(x)
        x = layers.Dense(8, name=f"b{i}_out")(x)
    model = keras.Model(inputs, layers.LSTM(4, name="lstm")(x))
    spec = api.read(_save(model))
    assert find.plan(spec.graph) == []
    unmasked = GraphSpec(spec.graph.name, spec.graph.class_name,
                         tuple(layer for layer in spec.graph.layers if layer.name != "embed"), (), (), 3)
    assert [r.prefix for r in find.plan(unmasked)] == ["b0", "b1", "b2"]  # the same names without the mask


def _save(model: Any) -> Path:
    import tempfile

    path = Path(tempfile.mkdtemp()) / "model.keras"
    model.save(path)
    return path


def _layer(name: str, *inputs: str) -> LayerSpec:
    return LayerSpec(name, "Dense", {"units": 4}, (LayerCall(tuple(TensorRef(i) for i in inputs)),))


def test_a_run_that_is_not_a_sub_graph_is_not_nested() -> None:
    """Names only propose: ``a1``'s layers are one run by name, but ``a1_b`` reads ``mid``, which reads
    ``a1_a`` (saved out of order): nesting them would make a block feed itself. ``a2`` … ``a4`` are
    sound and still found."""
    layers = [LayerSpec("in", "InputLayer", {"batch_shape": [None, 4]}),
              _layer("a1_a", "in"), _layer("a1_b", "mid"), _layer("a1_c", "a1_b"), _layer("mid", "a1_a")]
    last = "a1_c"
    for i in (2, 3, 4):
        layers += [_layer(f"a{i}_a", last), _layer(f"a{i}_b", f"a{i}_a"), _layer(f"a{i}_c", f"a{i}_b")]
        last = f"a{i}_c"
    graph = GraphSpec("g", "Functional", tuple(layers), (TensorRef("in"),), (TensorRef(last),), 3)
    wiring = find._Graph(graph)
    assert not wiring.sound(1, 4) and wiring.sound(5, 8)
    nested = nest(graph, find.plan(graph))
    assert [layer.name for layer in nested.layers] == ["in", "a1_a", "a1_b", "a1_c", "mid", "a2", "a3", "a4"]
    assert nested.layer("a3").calls[0].inputs == (TensorRef("a2"),) and nested.outputs == (TensorRef("a4"),)


def test_a_block_the_walker_refuses_leaves_the_model_flat(saved, monkeypatch) -> None:
    """Blocks change how the code reads, never whether a model converts: a block the walker cannot take
    (here: every block, refused on purpose) gives the flat model, with a note saying so."""
    from tf2torch.codegen.blocks.nest import BLOCK_CLASS
    from tf2torch.errors import UnsupportedError
    from tf2torch.layers.graph import GraphConverter

    nested = GraphConverter._nested

    def refuse_blocks(self, cls, attrs, local, layer, *args, **kwargs):
        if layer.class_name == BLOCK_CLASS:
            raise UnsupportedError(f"block {layer.name!r} refused by the test")
        return nested(self, cls, attrs, local, layer, *args, **kwargs)

    monkeypatch.setattr(GraphConverter, "_nested", refuse_blocks)
    path, model, xs = saved
    _, conversion = check_file(path, model, xs, rtol=1e-4, atol=1e-6, label="resnet-like, blocks refused",
                               controlled=True)
    assert "nn.Sequential(" not in conversion.model_source and "one block each" not in conversion.model_source
    assert any(n.startswith("repeated blocks left flat: block ") for n in conversion.report.notes)
