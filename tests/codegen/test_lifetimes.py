"""Generated forward() frees intermediates after their last use (chain name, ``del`` at branch points)."""

from __future__ import annotations

import gc
import os

import pytest
import torch

from tests.conftest import require_keras
from tests.support.code import expr, stmts, text
from tests.util import convert_in_memory, load_source
from tf2torch.codegen.lifetimes import free_early


def test_a_chain_flows_through_one_name_and_strings_stay():
    lines = ["conv1 = self.conv1(image)", "bn = self.bn(conv1, 'conv1')", "out = F.pad(bn, [0, 1], mode='constant')"]
    body, returns = free_early(stmts(lines), ["image"], [expr("out")])
    assert text(body) == ["x = self.conv1(image)", "x = self.bn(x, 'conv1')", "out = F.pad(x, [0, 1], mode='constant')"]
    assert returns == [expr("out")]


def test_branch_points_are_deleted_after_their_last_use_and_outputs_kept():
    lines = ["a = self.c1(inp)", "b = self.c2(a)", "c = a + b", "d = self.r(c)", "e = torch.cat([d, a], dim=1)"]
    body, returns = free_early(stmts(lines), ["inp"], [expr("e"), expr("b")])
    print("\n".join(text(body)))
    assert text(body) == ["a = self.c1(inp)", "b = self.c2(a)", "x = a + b", "x = self.r(x)", "e = torch.cat([x, a], dim=1)",
                    "del a"]
    assert returns == [expr("e"), expr("b")]


def test_a_name_already_taken_is_not_used_for_the_chain():
    body, _ = free_early(stmts(["y = self.a(x)", "z = self.b(y)"]), ["x"], [expr("z")])
    assert text(body) == ["h = self.a(x)", "z = self.b(h)"]


@pytest.fixture(scope="module")
def deep_mlp():
    keras = require_keras()
    L = keras.layers
    inp = keras.Input((256,), name="x")
    y = inp
    for i in range(12):
        y = L.Dense(256, activation="relu", name=f"d{i}")(y)
    return keras.Model(inp, y)


def _live(shape) -> int:
    gc.collect()
    return sum(1 for o in gc.get_objects() if isinstance(o, torch.Tensor) and tuple(o.shape) == shape)


def test_generated_forward_holds_a_bounded_number_of_activations(deep_mlp, tmp_path):
    """At the last layer of a 12-layer chain only a couple of activations are alive, not 12."""
    path = tmp_path / "mlp.keras"
    deep_mlp.save(path)
    model, _ = convert_in_memory(path)
    counts = []
    last = list(model.children())[-1]
    last.register_forward_pre_hook(lambda _m, args: counts.append(_live((64, 256))))
    with torch.no_grad():
        model(torch.randn(64, 256))
    print(f"activations of shape (64, 256) alive when the last layer runs: {counts[0]} (12 layers)")
    assert counts[0] <= 3


def test_without_early_freeing_every_activation_is_alive(deep_mlp, tmp_path, monkeypatch):
    """The measurement above can fail: with the rewrite switched off, all 12 are alive."""
    from tf2torch.codegen import emit

    monkeypatch.setattr(emit, "free_early", lambda lines, inputs, returns: (lines, returns))
    path = tmp_path / "mlp.keras"
    deep_mlp.save(path)
    model, _ = convert_in_memory(path)
    counts = []
    list(model.children())[-1].register_forward_pre_hook(lambda _m, args: counts.append(_live((64, 256))))
    with torch.no_grad():
        model(torch.randn(64, 256))
    print(f"without the rewrite: {counts[0]} activations alive at the last layer")
    assert counts[0] >= 12


def test_static_padding_refuses_another_input_size():
    """Static SAME pads are planned for the Keras input size (16x16 here, stride 2): at 20x20 the model
    would silently compute something else, so it says so instead."""
    from pathlib import Path

    fixture = Path(__file__).resolve().parents[2] / "fixtures/keras3/cnn.keras"
    model, _ = convert_in_memory(fixture)
    with torch.no_grad():
        assert model(torch.zeros(1, 3, 16, 16)).shape == (1, 10)
        with pytest.raises(ValueError, match=r"image: this model was converted for inputs of spatial size \(16, 16\)"):
            model(torch.zeros(1, 3, 20, 20))


MODULES = {attr: expr(ctor) for attr, ctor in {
    "conv": "nn.Conv2d(3, 4, 3)", "bn": "nn.BatchNorm2d(4)", "relu": "nn.ReLU()", "relu2": "nn.ReLU()",
    "drop": "nn.Dropout(0.1)", "act": "nn.ReLU6()"}.items()}


@pytest.mark.parametrize(("lines", "inputs", "expected"), [
    (["x = self.conv(image)", "x = self.bn(x)", "x = self.relu(x)"], ["image"], ["relu"]),
    (["a = self.conv(image)", "b = self.relu(a)", "c = a + b"], ["image"], []),  # the conv output is read again
    (["a = self.drop(image)", "b = self.relu(a)"], ["image"], []),  # Dropout in eval returns its input itself
    (["b = self.relu(image)"], ["image"], []),  # the caller's tensor
    (["a = self.conv(image)", "b = self.act(a)", "c = self.conv(b)", "d = self.act(c)"], ["image"], []),  # shared
], ids=["conv-bn-relu", "read-twice", "after-dropout", "model-input", "shared-module"])
def test_activations_run_in_place_only_where_nothing_else_reads_their_input(lines, inputs, expected):
    from tf2torch.codegen.lifetimes import inplace_safe

    assert inplace_safe(stmts(lines), MODULES, inputs) == expected


def test_inference_form_with_in_place_activations_matches_the_readable_form(tmp_path):
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    keras = require_keras()
    keras.utils.set_random_seed(2)
    x = inp = keras.Input((12, 12, 3))
    for i in range(3):
        y = keras.layers.Activation("relu")(keras.layers.BatchNormalization()(keras.layers.Conv2D(4, 3, padding="same")(x)))
        x = y if i == 0 else keras.layers.Add()([x, y])  # residuals: the sums' inputs are read twice
    path = tmp_path / "res.keras"
    keras.Model(inp, keras.layers.ReLU()(x)).save(path)
    model, result = convert_in_memory(path)
    assert "INPLACE = (" in result.model_source
    images = torch.randn(2, 3, 12, 12)
    with torch.no_grad():
        readable = model(images)
        fused = load_source(result.model_source)["fuse"](model)
        assert any(getattr(m, "inplace", False) for m in fused.modules())
        error = float((fused(images) - readable).abs().max())
    print(f"inference form (in-place activations) vs readable: max abs {error:.2e}")
    assert error <= 1e-5


@pytest.mark.parametrize(("lines", "pairs"), [
    (["x = self.conv(x)", "y = self.bn(x)"], [("conv", "bn")]),  # one line each, x read once
    (["y = self.relu(self.bn(self.conv(x)))"], [("conv", "bn")]),  # nested, as a block's converter writes it
    (["x = self.conv(x)", "y = self.bn(x) + x"], []),  # the conv's output is read again
    (["y = self.bn(self.conv(x))", "z = self.conv(y)"], []),  # a shared conv: folding would change its other call
    (["y = self.bn(self.conv(x)) + self.bn(x)"], []),  # a shared BatchNorm
    (["y = self.bn(self.relu(x))"], []),  # not a conv
])
def test_fusible_pairs(lines, pairs):
    from tf2torch.codegen.lifetimes import fusible

    assert fusible(stmts(lines), MODULES) == pairs
