"""Legacy Keras ``.h5`` (Keras 2 and 3, full model and weights only) and Keras 3 ``.weights.h5``."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

from tf2torch.readers.keras_h5 import read_keras_h5
from tf2torch.spec import Format, Role

ROOT = Path(__file__).resolve().parents[2]
K3 = ["cnn", "seq", "nested", "quirks"]
K2 = ["cnn", "seq", "nested", "quirks", "chunked"]


def as_bits(value: Any) -> np.ndarray:
    """Keras's array with bfloat16 (an ml_dtypes type) as its raw uint16 bits, like we store it."""
    value = np.asarray(value)
    return value.view("<u2") if value.dtype.name == "bfloat16" else value


def assert_same(got: np.ndarray, want: Any) -> None:
    want = as_bits(want)
    assert got.dtype == want.dtype and got.shape == want.shape
    assert got.tobytes() == want.tobytes()


def assert_layers_match(graph: Any, model: Any) -> None:
    """Every layer's weights, in saved order, equal ``layer.get_weights()`` bit for bit."""
    for layer in model.layers:
        got = graph.layer(layer.name).weights
        want = layer.get_weights()
        assert len(got) == len(want), layer.name
        for var, value in zip(got, want, strict=True):
            assert_same(var.read(), value)


def assert_matches_h5py(spec: Any, path: Path) -> None:
    with h5py.File(path, "r") as f:
        for var in spec:
            want = np.asarray(f[var.name][()])
            got = var.read()
            assert got.shape == var.shape == want.shape and got.dtype == np.dtype(var.dtype.storage)
            assert got.tobytes() == want.tobytes(), var.name


@pytest.mark.parametrize("name", K3)
def test_keras3_legacy_h5_weights_equal_keras(keras3_models: dict, name: str) -> None:
    saved = keras3_models[name]
    spec = read_keras_h5(saved.files["h5"])
    assert spec.format is Format.KERAS_H5 and spec.graph is not None and spec.graph.keras_version == 3
    assert_layers_match(spec.graph, saved.model)
    assert_matches_h5py(spec, saved.files["h5"])


@pytest.mark.parametrize("name", K2)
def test_keras2_h5_weights_equal_keras(keras2_models: dict, name: str) -> None:
    saved = keras2_models[name]
    spec = read_keras_h5(saved.files["h5"])
    assert spec.format is Format.KERAS_H5 and spec.graph is not None and spec.graph.keras_version == 2
    assert_layers_match(spec.graph, saved.model)
    assert_matches_h5py(spec, saved.files["h5"])


@pytest.mark.parametrize("name", K2)
def test_keras2_weights_only_h5(keras2_models: dict, name: str) -> None:
    saved = keras2_models[name]
    spec = read_keras_h5(saved.files["weights_legacy_h5"])
    assert spec.format is Format.KERAS_H5 and spec.graph is None
    assert all(v.role is Role.WEIGHT for v in spec)
    # Root layout: <layer>/<weight name>; per layer, saved order is get_weights() order.
    for layer in saved.model.layers:
        got = [v for v in spec if v.name.split("/", 1)[0] == layer.name]
        want = layer.get_weights()
        assert len(got) == len(want)
        for var, value in zip(got, want, strict=True):
            assert_same(var.read(), value)
    assert_matches_h5py(spec, saved.files["weights_legacy_h5"])


@pytest.mark.parametrize("name", K3)
def test_keras3_weights_h5(keras3_models: dict, name: str) -> None:
    saved = keras3_models[name]
    path = saved.files["weights_h5"]
    spec = read_keras_h5(path)
    assert spec.format is Format.KERAS_WEIGHTS_H5 and spec.graph is None
    assert_matches_h5py(spec, path)
    # Keras >= 3.10 tags each vars group with its layer's name: group them and compare.
    with h5py.File(path, "r") as f:
        owner = {v.name: f[v.name].parent.attrs.get("name") for v in spec}
    for layer in saved.model.layers:
        if layer.__class__.__name__ in ("Functional", "Sequential"):
            continue  # nested models: their layers are checked through the .keras reader
        got = [v for v in spec if owner[v.name] == layer.name and v.role is Role.WEIGHT]
        for var, value in zip(got, layer.get_weights(), strict=True):
            assert_same(var.read(), value)


def test_keras2_weight_names_keep_colon_zero_in_path_only(keras2_models: dict) -> None:
    spec = read_keras_h5(keras2_models["cnn"].files["h5"])
    kernel = spec["model_weights/conv/conv/kernel:0"]
    assert kernel.tf_name == "conv/kernel" and kernel.shape == (3, 3, 3, 8)
    assert [v.tf_name for v in spec.graph.layer("bn").weights] == [  # trainable, then non-trainable
        "bn/gamma",
        "bn/beta",
        "bn/moving_mean",
        "bn/moving_variance",
    ]


def test_keras3_legacy_names_are_variable_paths(keras3_models: dict) -> None:
    spec = read_keras_h5(keras3_models["nested"].files["h5"])
    inner = spec.graph.layer("inner")
    assert [v.name for v in inner.weights] == [
        "model_weights/inner/inner/inner_d/kernel",
        "model_weights/inner/inner/inner_d/bias",
    ]
    # A nested model's weights are also given to its inner layers, attributed by name.
    assert inner.graph.layer("inner_d").weights == inner.weights
    assert spec.graph.layer("subfunc").graph.layer("sub_d").weights == spec.graph.layer("subfunc").weights


def test_bfloat16_legacy_h5(keras3_models: dict) -> None:
    d2 = read_keras_h5(keras3_models["seq"].files["h5"]).graph.layer("d2")
    assert [v.dtype.name for v in d2.weights] == ["bfloat16", "bfloat16"]


@pytest.mark.parametrize("which", ["keras2", "keras3"])
def test_optimizer_weights_have_the_optimizer_role(
    keras2_models: dict, keras3_models: dict, which: str
) -> None:
    saved = (keras2_models if which == "keras2" else keras3_models)["cnn"]
    spec = read_keras_h5(saved.files["h5"])
    optimizer = [v for v in spec if v.role is Role.OPTIMIZER]
    assert optimizer and all(v.name.startswith("optimizer_weights/") for v in optimizer)
    assert len(optimizer) == len(saved.model.optimizer.variables)
    weights = [v for v in spec if v.role is Role.WEIGHT]
    assert len(weights) == len(saved.model.weights)


def test_chunked_layer_names(keras2_models: dict) -> None:
    saved = keras2_models["chunked"]
    with h5py.File(saved.files["h5"], "r") as f:
        chunked = [k for k in f["model_weights"].attrs if k.startswith("layer_names")]
    assert "layer_names" not in chunked and "layer_names1" in chunked  # Keras did split it
    spec = read_keras_h5(saved.files["h5"])
    assert [layer.name for layer in spec.graph.layers][1:] == [layer.name for layer in saved.model.layers]
    assert_layers_match(spec.graph, saved.model)


def test_config_json_matches_model_config(keras2_models: dict) -> None:
    saved = keras2_models["nested"]
    with h5py.File(saved.files["h5"], "r") as f:
        config = json.loads(f.attrs["model_config"])
    assert [layer.name for layer in read_keras_h5(saved.files["h5"]).graph.layers] == [
        e["name"] for e in config["config"]["layers"]
    ]


def test_listing_reads_no_tensor(keras3_models: dict, monkeypatch: pytest.MonkeyPatch) -> None:
    from tf2torch.readers import h5safe

    calls: list[str] = []
    original = h5safe.read_dataset
    monkeypatch.setattr(h5safe, "read_dataset", lambda *a: calls.append(a[0].name) or original(*a))
    spec = read_keras_h5(keras3_models["cnn"].files["h5"])
    assert calls == []
    spec.variables[0].read()
    assert len(calls) == 1


def test_read_path_imports_no_tensorflow_or_keras(keras2_models: dict, keras3_models: dict) -> None:
    """Read every Keras variant in a fresh interpreter; TF/Keras must stay unimported and nothing
    may be unpickled, unmarshalled or evaluated (a Lambda's bytecode is only data)."""
    files = [
        str(p)
        for s in [*keras2_models.values(), *keras3_models.values()]
        for k, p in s.files.items()
        if k != "npz"
    ]
    script = textwrap.dedent(
        """
        import builtins, marshal, pickle, sys
        from pathlib import Path
        from tf2torch.readers.keras_h5 import read_keras_h5
        from tf2torch.readers.keras_zip import read_keras_zip

        def read_all():
            for name in sys.argv[1:]:
                path = Path(name)
                spec = read_keras_zip(path) if path.suffix == ".keras" else read_keras_h5(path)
                for var in spec:
                    var.read()

        read_all()  # first pass imports whatever the readers import lazily
        def refuse(*a, **k):
            raise AssertionError("code execution attempted while reading")
        marshal.loads = pickle.loads = builtins.eval = builtins.exec = refuse
        read_all()
        bad = sorted(m for m in sys.modules if m.split(".")[0] in ("tensorflow", "keras", "tf_keras"))
        assert not bad, bad
        print("ok", len(sys.argv) - 1)
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script, *files], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == f"ok {len(files)}"


@pytest.mark.parametrize("name", ["cnn", "nested"])
def test_keras2_weights_only_with_model_json(keras2_models: dict, name: str) -> None:
    saved = keras2_models[name]
    spec = read_keras_h5(saved.files["weights_legacy_h5"], config_json=saved.model.to_json())
    assert spec.graph is not None and spec.graph.keras_version == 2
    assert_layers_match(spec.graph, saved.model)


@pytest.mark.parametrize("name", ["cnn", "seq", "nested"])
def test_keras3_weights_h5_with_model_json(keras3_models: dict, name: str) -> None:
    saved = keras3_models[name]
    spec = read_keras_h5(saved.files["weights_h5"], config_json=saved.model.to_json())
    assert spec.format is Format.KERAS_WEIGHTS_H5 and spec.graph is not None and not spec.notes
    assert_layers_match(spec.graph, saved.model)


def test_model_json_that_is_not_json(keras2_models: dict) -> None:
    from tf2torch.errors import FormatError

    with pytest.raises(FormatError, match="model.to_json"):
        read_keras_h5(keras2_models["seq"].files["weights_legacy_h5"], config_json="{oops")
