"""Keras ``.keras`` archives: weights, nested paths, and hostile zips."""

from __future__ import annotations

import io
import json
import os
import struct
import warnings
import zipfile
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pytest

from tests.readers.test_keras_h5 import assert_layers_match, assert_same
from tf2torch.errors import FormatError, Tf2TorchError, UnsupportedError
from tf2torch.readers import keras_zip
from tf2torch.readers.keras_zip import read_keras_zip
from tf2torch.spec import Format, Role

K3 = ["cnn", "seq", "nested", "quirks"]
K2 = ["cnn", "seq", "nested", "chunked"]  # tf_keras cannot save TFOpLambda models as .keras


def one_line_error(exc_info: pytest.ExceptionInfo[Tf2TorchError], path: Path) -> str:
    message = str(exc_info.value)
    assert "\n" not in message and str(path) in message, message
    return message


def assert_matches_member(spec: Any, path: Path) -> None:
    with zipfile.ZipFile(path) as zf, h5py.File(io.BytesIO(zf.read("model.weights.h5")), "r") as f:
        for var in spec:
            want = np.asarray(f[var.name][()])
            got = var.read()
            assert got.shape == var.shape == want.shape and got.dtype == np.dtype(var.dtype.storage)
            assert got.tobytes() == want.tobytes(), var.name


def all_layers(graph: Any) -> list[Any]:
    return [x for layer in graph.layers for x in [layer, *(all_layers(layer.graph) if layer.graph else [])]]


@pytest.mark.parametrize("name", K3)
def test_keras3_weights_equal_keras(keras3_models: dict, name: str) -> None:
    saved = keras3_models[name]
    spec = read_keras_zip(saved.files["keras"])
    assert spec.format is Format.KERAS_V3 and spec.graph.keras_version == 3 and not spec.notes
    assert_layers_match(spec.graph, saved.model)
    assert_matches_member(spec, saved.files["keras"])


@pytest.mark.parametrize("name", K2)
def test_tf_keras_dot_keras(keras2_models: dict, name: str) -> None:
    saved = keras2_models[name]
    spec = read_keras_zip(saved.files["keras"])
    assert spec.graph.keras_version == 2 and not spec.notes  # tf_keras writes no name attrs: paths only
    assert_layers_match(spec.graph, saved.model)
    assert_matches_member(spec, saved.files["keras"])


@pytest.mark.parametrize("which", ["keras2", "keras3"])
def test_every_weight_is_assigned_once(keras2_models: dict, keras3_models: dict, which: str) -> None:
    saved = (keras2_models if which == "keras2" else keras3_models)["nested"]
    spec = read_keras_zip(saved.files["keras"])
    leaves = [v for layer in all_layers(spec.graph) if layer.graph is None for v in layer.weights]
    assert sorted(v.name for v in leaves) == sorted(v.name for v in spec if v.role is Role.WEIGHT)


def test_nested_model_paths(keras3_models: dict) -> None:
    spec = read_keras_zip(keras3_models["nested"].files["keras"])
    inner_d = spec.graph.layer("inner").graph.layer("inner_d")
    assert [v.name for v in inner_d.weights] == [
        "layers/sequential/layers/dense/vars/0",
        "layers/sequential/layers/dense/vars/1",
    ]
    assert (
        spec.graph.layer("subfunc").graph.layer("sub_d").weights[0].name
        == "layers/functional/layers/dense/vars/0"
    )
    # Dense layers of the outer model are numbered per class in model.layers order.
    assert [spec.graph.layer(n).weights[0].name for n in ("shared", "out1", "out2")] == [
        "layers/dense/vars/0",
        "layers/dense_1/vars/0",
        "layers/dense_2/vars/0",
    ]
    assert spec.graph.layer("inner").weights == inner_d.weights


def test_optimizer_variables(keras3_models: dict) -> None:
    saved = keras3_models["cnn"]
    spec = read_keras_zip(saved.files["keras"])
    optimizer = [v for v in spec if v.role is Role.OPTIMIZER]
    assert [v.name for v in optimizer[:2]] == ["optimizer/vars/0", "optimizer/vars/1"]
    assert len(optimizer) == len(saved.model.optimizer.variables)
    for var, value in zip(optimizer, saved.model.optimizer.variables, strict=True):
        assert_same(var.read(), value.numpy())


def test_ops_are_qualified_and_not_counted_as_layers(keras3_models: dict) -> None:
    spec = read_keras_zip(keras3_models["quirks"].files["keras"])
    add = next(layer for layer in spec.graph.layers if layer.class_name.endswith(">Add"))
    assert add.class_name == "keras.src.ops.numpy>Add" and add.weights == ()
    assert (
        spec.graph.layer("sub").graph.layer("idense").weights[0].name
        == "layers/functional/layers/dense/vars/0"
    )


def test_bfloat16_weights(keras3_models: dict) -> None:
    d2 = read_keras_zip(keras3_models["seq"].files["keras"]).graph.layer("d2")
    assert [v.dtype.name for v in d2.weights] == ["bfloat16", "bfloat16"]


def test_deflated_archive_reads_the_same(keras3_models: dict, tmp_path: Path) -> None:
    source = keras3_models["nested"].files["keras"]
    target = tmp_path / "deflated.keras"
    with zipfile.ZipFile(source) as src, zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info))
    a, b = read_keras_zip(source), read_keras_zip(target)
    assert a.names() == b.names()
    for x, y in zip(a, b, strict=True):
        assert x.read().tobytes() == y.read().tobytes()


def test_npz_weights_are_refused(keras3_models: dict) -> None:
    path = keras3_models["seq"].files["npz"]
    with pytest.raises(UnsupportedError) as exc:
        read_keras_zip(path)
    assert "unpickle" in one_line_error(exc, path)


def test_reading_extracts_nothing(keras3_models: dict) -> None:
    path = keras3_models["cnn"].files["keras"]
    before = sorted(os.listdir(path.parent))
    for var in read_keras_zip(path):
        var.read()
    assert sorted(os.listdir(path.parent)) == before


# --- hostile archives --------------------------------------------------------------------------------


def make_zip(path: Path, members: dict[str, bytes]) -> Path:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns about duplicate names, which one test wants
        with zipfile.ZipFile(path, "w") as zf:
            for name, data in members.items():
                zf.writestr(name.split("#")[0], data)
    return path


CONFIG = json.dumps({"class_name": "Sequential", "config": {"name": "s", "layers": []}}).encode()


def test_parent_relative_member(tmp_path: Path) -> None:
    work = tmp_path / "a" / "b"
    work.mkdir(parents=True)
    path = make_zip(
        work / "evil.keras", {"config.json": CONFIG, "../../evil": b"pwned", "metadata.json": b"{}"}
    )
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    with pytest.raises(FormatError) as exc:
        read_keras_zip(path)
    assert "../../evil" in one_line_error(exc, path)
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    assert not (tmp_path / "evil").exists()


@pytest.mark.parametrize(
    "member", ["/etc/evil", "a\\..\\..\\evil", "C:/evil"], ids=["absolute", "backslash", "drive"]
)
def test_absolute_or_windows_member(tmp_path: Path, member: str) -> None:
    path = tmp_path / "m.keras"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("config.json", CONFIG)
        info = zipfile.ZipInfo("x")
        info.filename = member  # bypass zipfile's own name normalisation
        zf.writestr(info, b"x")
    with pytest.raises(FormatError) as exc:
        read_keras_zip(path)
    one_line_error(exc, path)


def test_zip_that_is_not_a_keras_file(tmp_path: Path) -> None:
    path = make_zip(tmp_path / "other.keras", {"readme.txt": b"hello"})
    with pytest.raises(FormatError) as exc:
        read_keras_zip(path)
    assert "config.json" in one_line_error(exc, path)


def test_text_file_named_keras(tmp_path: Path) -> None:
    path = tmp_path / "t.keras"
    path.write_text("not a zip")
    with pytest.raises(FormatError) as exc:
        read_keras_zip(path)
    assert "zip" in one_line_error(exc, path)


def test_truncated_archive(keras3_models: dict, tmp_path: Path) -> None:
    data = keras3_models["cnn"].files["keras"].read_bytes()
    path = tmp_path / "cut.keras"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(FormatError) as exc:
        read_keras_zip(path)
    one_line_error(exc, path)


def test_too_many_members(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keras_zip, "MAX_MEMBERS", 50)
    path = make_zip(
        tmp_path / "many.keras", {"config.json": CONFIG, **{f"assets/{i}": b"" for i in range(60)}}
    )
    with pytest.raises(FormatError) as exc:
        read_keras_zip(path)
    assert "61 members" in one_line_error(exc, path)


def test_zip_bomb_declared_size(tmp_path: Path) -> None:
    path = tmp_path / "bomb.keras"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("config.json", CONFIG)
    data = bytearray(path.read_bytes())
    central = data.rindex(b"PK\x01\x02")
    struct.pack_into("<I", data, central + 24, 0xFFFFFFF0)  # declared uncompressed size: ~4 GB
    path.write_bytes(bytes(data))
    with pytest.raises(FormatError) as exc:
        read_keras_zip(path)
    assert "zip bomb" in one_line_error(exc, path)


def test_duplicate_members(tmp_path: Path) -> None:
    path = make_zip(tmp_path / "dup.keras", {"config.json": CONFIG, "config.json#2": CONFIG})
    with pytest.raises(FormatError) as exc:
        read_keras_zip(path)
    assert "twice" in one_line_error(exc, path)


def test_config_json_garbage(tmp_path: Path) -> None:
    path = make_zip(tmp_path / "bad.keras", {"config.json": b"{not json"})
    with pytest.raises(FormatError) as exc:
        read_keras_zip(path)
    assert "config.json" in one_line_error(exc, path)


def test_weights_member_not_hdf5(tmp_path: Path) -> None:
    path = make_zip(tmp_path / "w.keras", {"config.json": CONFIG, "model.weights.h5": b"garbage" * 10})
    with pytest.raises(FormatError) as exc:
        read_keras_zip(path)
    assert "model.weights.h5" in one_line_error(exc, path)


def test_weights_that_do_not_match_the_config(keras3_models: dict, tmp_path: Path) -> None:
    # cnn's weights under nested's config: the layer names recorded in the vars groups disagree.
    with (
        zipfile.ZipFile(keras3_models["nested"].files["keras"]) as a,
        zipfile.ZipFile(keras3_models["cnn"].files["keras"]) as b,
    ):
        members = {
            "config.json": a.read("config.json"),
            "metadata.json": a.read("metadata.json"),
            "model.weights.h5": b.read("model.weights.h5"),
        }
    path = make_zip(tmp_path / "mixed.keras", members)
    with pytest.raises(FormatError) as exc:
        read_keras_zip(path)
    assert "expected layer" in one_line_error(exc, path)
