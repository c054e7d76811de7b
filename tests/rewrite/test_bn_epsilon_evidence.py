"""BatchNorm epsilon is rewritten only with evidence from the source.

A Keras model saved with ``model.save`` (HDF5 with ``model_config``) says each BatchNormalization's
``epsilon``; a weights-only HDF5 (``save_weights``, like Hugging Face's ``tf_model.h5``) holds the numbers
and nothing about epsilon. With no evidence the user's model keeps its own eps and the report says so
(a note mentioning epsilon and "no evidence"), instead of assuming TF's default 1e-3.

The models are built with tf_keras (Keras 2) at test time; TF computes the expected outputs.
"""

from pathlib import Path

import numpy as np
import pytest
import torch

from tests.conftest import require_keras
from tests.support.weights import TRANSFORMERS, randomise_keras
from tests.util import load_source, state_dict, to_torch_layout
from tf2torch import api

PORT = Path(__file__).with_name("eps_port.py")
KEYS = {"conv.weight", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var", "fc.weight", "fc.bias"}


def _model(keras, epsilon: float):
    L = keras.layers
    inp = keras.Input(shape=(8, 8, 3), name="image")
    x = L.Conv2D(8, 3, padding="same", use_bias=False, name="conv")(inp)
    x = L.BatchNormalization(epsilon=epsilon, name="bn")(x)
    x = L.ReLU(name="relu")(x)
    x = L.GlobalAveragePooling2D(name="gap")(x)
    return keras.Model(inp, L.Dense(4, name="fc")(x), name="eps_net")


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """{epsilon: (weights_only.h5, full.h5, input NHWC, TF output)} for BN epsilon 1e-5 and 1e-3."""
    keras = require_keras("tf_keras")
    out = {}
    for i, epsilon in enumerate((1e-5, 1e-3)):
        tmp = tmp_path_factory.mktemp(f"eps{epsilon:g}")
        rng = np.random.default_rng(500 + i)
        model = _model(keras, epsilon)
        randomise_keras(model, 500 + i, TRANSFORMERS)  # BN statistics too: variances in 0.5..1.5
        x = rng.standard_normal((2, 8, 8, 3)).astype(np.float32)
        expected = model.predict(x, verbose=0)
        model.save_weights(tmp / "weights_only.h5")
        model.save(tmp / "full.h5")
        out[epsilon] = (tmp / "weights_only.h5", tmp / "full.h5", x, expected)
    return out


def _convert(path):
    result = api.convert(path, None, dry_run=True, model=f"{PORT}:EpsNet")
    counts = result.report.counts()
    mapped = {e.source: e.key for e in result.report.by_status("mapped")}
    print(f"{path.name} onto EpsNet: {counts}; {mapped}")
    print(f"  unexpected: {[(e.source, e.reason) for e in result.report.by_status('unexpected')]}")
    print(f"  missing: {[(e.key, e.reason) for e in result.report.by_status('missing')]}")
    print(f"  rewrites: {result.report.rewrites}")
    print(f"  notes: {result.report.notes}")
    assert counts["missing"] == 0 and counts["mismatched"] == 0 and counts["unexpected"] == 0
    assert set(mapped.values()) == KEYS
    return result


def _run(result, x):
    model = load_source(result.model_source, PORT.with_name("model.py"))["build_model"]()
    model.load_state_dict(state_dict(result.plans), strict=True)
    with torch.no_grad():
        return model.eval()(to_torch_layout(x)), model


def _eps_rewrites(result):
    return {r["module"]: r["args"] for r in result.report.rewrites if r["kind"] == "eps"}


def _no_evidence_note(result) -> bool:
    return any("epsilon" in n.lower() and "no evidence" in n.lower() for n in result.report.notes)


def _diff(out, expected, what):
    expected = torch.from_numpy(expected)
    diff = (out - expected).abs().max().item()
    print(f"{what}: max abs diff {diff:.2e} (max |output| {expected.abs().max().item():.2f})")
    return diff, expected


def test_weights_only_h5_keeps_the_ports_epsilon(saved):
    """Keras eps 1e-5 == PyTorch's default: with no evidence nothing is rewritten and the port is exact."""
    weights_only, _, x, expected = saved[1e-5]
    result = _convert(weights_only)
    out, model = _run(result, x)
    diff, expected = _diff(out, expected, "weights-only h5, Keras eps 1e-5, port eps 1e-5")
    print(f"  patched bn.eps = {model.bn.eps:g}")
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5 * expected.abs().max().item())
    assert _eps_rewrites(result) == {}
    assert _no_evidence_note(result), result.report.notes
    assert model.bn.eps == 1e-5


def test_full_h5_epsilon_comes_from_the_keras_config(saved):
    _, full, x, expected = saved[1e-3]
    result = _convert(full)
    out, model = _run(result, x)
    diff, expected = _diff(out, expected, "full h5, Keras eps 1e-3 (config), port eps 1e-5")
    assert _eps_rewrites(result) == {"bn": 0.001}
    assert model.bn.eps == pytest.approx(1e-3)
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5 * expected.abs().max().item())


def test_weights_only_h5_cannot_carry_epsilon(saved):
    """Keras eps 1e-3 saved weights-only: the file says nothing about epsilon, so the port keeps 1e-5
    and computes something else than TF did. Documents the limit: only a save with the model config
    (model.save) carries epsilon; otherwise the port must set it itself."""
    weights_only, _, x, expected = saved[1e-3]
    result = _convert(weights_only)
    out, model = _run(result, x)
    print(f"  patched bn.eps = {model.bn.eps:g}")
    kept = model.bn.eps
    diff, expected_t = _diff(out, expected, "weights-only h5, Keras eps 1e-3, port keeps eps 1e-5")
    # the control: the same weights with eps 1e-3 are TF, so epsilon alone makes the difference
    model.bn.eps = 1e-3
    with torch.no_grad():
        control = model(to_torch_layout(x))
    _diff(control, expected, "  the same patched model with bn.eps set to 1e-3 by hand")
    torch.testing.assert_close(control, expected_t, rtol=1e-5, atol=1e-5 * expected_t.abs().max().item())
    assert _eps_rewrites(result) == {}
    assert kept == 1e-5
    assert _no_evidence_note(result), result.report.notes
    assert diff > 1e-4
