"""Entry points: path resolution, formats, SavedModels, Keras metadata, and no TensorFlow import."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.readers.conftest import LEAD_SAVEDMODELS, ROOT, assert_bit_exact, tf_value
from tf2torch.errors import FormatError
from tf2torch.readers.bundle import Bundle
from tf2torch.readers.checkpoint import (
    read_checkpoint,
    read_savedmodel,
    resolve_prefix,
    savedmodel_keras_metadata,
)
from tf2torch.spec import Format, Role


@pytest.mark.parametrize("suffix", ["", ".index", ".meta", ".data-00001-of-00002"],
                         ids=["prefix", "index", "meta", "data"])
def test_resolve_file_paths(tf1_checkpoint, suffix):
    assert resolve_prefix(f"{tf1_checkpoint}{suffix}") == tf1_checkpoint


def test_resolve_directory_via_state_file(tf1_checkpoint, tf2_tf_keras):
    assert resolve_prefix(tf1_checkpoint.parent) == tf1_checkpoint  # Saver wrote an absolute path
    assert resolve_prefix(tf2_tf_keras.parent) == tf2_tf_keras  # tf.train.Checkpoint a relative one


def test_resolve_moved_directory(tf1_checkpoint, tmp_path):
    moved = tmp_path / "moved"
    shutil.copytree(tf1_checkpoint.parent, moved)  # the state file still names the old absolute path
    assert resolve_prefix(moved) == moved / tf1_checkpoint.name


def test_resolve_escaped_state_path(tf1_checkpoint, tmp_path):
    odd = tmp_path / 'we"ird'
    for file in tf1_checkpoint.parent.glob(tf1_checkpoint.name + ".*"):
        shutil.copy(file, tmp_path / file.name.replace(tf1_checkpoint.name, odd.name))
    (tmp_path / "checkpoint").write_text('model_checkpoint_path: "we\\"ird"\nall_model_checkpoint_paths: "x"\n')
    assert resolve_prefix(tmp_path) == odd


def test_resolve_directory_without_state_file(tf1_checkpoint, tmp_path):
    shutil.copy(f"{tf1_checkpoint}.index", tmp_path / "only.index")
    assert resolve_prefix(tmp_path) == tmp_path / "only"
    shutil.copy(f"{tf1_checkpoint}.index", tmp_path / "second.index")
    with pytest.raises(FormatError, match="exactly one \\*.index, found 2"):
        resolve_prefix(tmp_path)


def test_resolve_nothing_there(tmp_path):
    with pytest.raises(FormatError, match=r"nope\.index: expected a TensorFlow checkpoint index"):
        resolve_prefix(tmp_path / "nope")
    (tmp_path / "checkpoint").write_text("garbage\n")
    with pytest.raises(FormatError, match="model_checkpoint_path"):
        resolve_prefix(tmp_path)


def test_tf1_checkpoint_spec(tf1_checkpoint):
    spec = read_checkpoint(tf1_checkpoint.parent)
    assert spec.format is Format.TF1_CHECKPOINT and spec.path == Path(f"{tf1_checkpoint}.index")
    assert spec.ops and [o.variables for o in spec.ops if o.op == "Conv2D"][0] == ("conv/kernel",)
    assert spec["conv/kernel/Adam_1"].role is Role.OPTIMIZER and spec["conv/kernel/Adam_1"].note == "Adam slot 'v' of conv/kernel"
    assert spec["dw/depthwise_kernel/ExponentialMovingAverage"].role is Role.EMA
    assert spec["global_step"].role is Role.BOOKKEEPING


def test_tf2_checkpoint_spec(tf2_keras3):
    spec = read_checkpoint(tf2_keras3)
    assert spec.format is Format.TF2_CHECKPOINT and spec.ops == ()


def test_savedmodel_tf_keras(tf, savedmodel_tf_keras):
    spec = read_savedmodel(savedmodel_tf_keras)
    assert spec.format is Format.SAVED_MODEL
    weights = {v.name: v.tf_name for v in spec if v.role is Role.WEIGHT}
    assert weights["layer_with_weights-0/kernel"] == "c1/kernel" and len(weights) == 8
    prefix = savedmodel_tf_keras / "variables" / "variables"
    assert_bit_exact(spec["layer_with_weights-2/bias"].read(),
                     tf_value(tf, prefix, "layer_with_weights-2/bias/.ATTRIBUTES/VARIABLE_VALUE"), "float32")


def test_savedmodel_module(savedmodel_module):
    spec = read_savedmodel(savedmodel_module / "saved_model.pb")
    assert spec["w"].read().tolist() == [[0, 1], [2, 3], [4, 5]]
    assert spec["label"].read().item() == b"affine"
    assert savedmodel_keras_metadata(savedmodel_module) is None


def test_savedmodel_tf1_has_ops(savedmodel_tf1):
    spec = read_savedmodel(savedmodel_tf1)
    assert spec.names() == ["conv/kernel"] and spec["conv/kernel"].read().sum() == 72
    assert [(o.name, o.variables, o.strides) for o in spec.ops if o.op != "Placeholder"] == [
        ("conv", ("conv/kernel",), (1, 2, 2, 1))]


def test_keras_metadata(savedmodel_tf_keras):
    nodes = savedmodel_keras_metadata(savedmodel_tf_keras)
    assert nodes[0]["node_path"] == "root" and nodes[0]["identifier"] == "_tf_keras_network"
    assert nodes[0]["metadata"]["class_name"] == "Functional"
    conv = next(n for n in nodes if n["node_path"] == "root.layer_with_weights-0")
    assert conv["metadata"]["config"]["name"] == "c1" and conv["version"]["producer"] >= 1
    json.dumps(nodes)  # plain data


def test_not_a_savedmodel(tmp_path):
    (tmp_path / "saved_model.pbtxt").write_text("")
    with pytest.raises(FormatError, match="pbtxt SavedModels are not supported"):
        read_savedmodel(tmp_path)


@pytest.mark.skipif(not LEAD_SAVEDMODELS, reason="fixtures/ holds no SavedModels (run make fixtures)")
@pytest.mark.parametrize("path", LEAD_SAVEDMODELS, ids=[p.name for p in LEAD_SAVEDMODELS])
def test_lead_savedmodels_bit_exact(tf, path):
    spec = read_savedmodel(path)
    prefix = path / "variables" / "variables"
    for var, key in zip(spec, Bundle(prefix).entries):
        assert_bit_exact(var.read(), tf_value(tf, prefix, key), var.dtype.name)


def test_reading_never_imports_tensorflow(tf1_checkpoint, tf2_keras3, savedmodel_tf_keras, merged_bundle):
    code = (
        "import sys\n"
        "import tf2torch.readers.checkpoint as c\n"
        f"specs = [c.read_checkpoint({str(tf1_checkpoint)!r}), c.read_checkpoint({str(tf2_keras3)!r}),\n"
        f"         c.read_checkpoint({str(merged_bundle[0])!r}), c.read_savedmodel({str(savedmodel_tf_keras)!r})]\n"
        f"c.savedmodel_keras_metadata({str(savedmodel_tf_keras)!r})\n"
        "n = sum(v.read().size >= 0 for s in specs for v in s)\n"
        "heavy = [m for m in ('tensorflow', 'keras', 'tf_keras', 'google.protobuf') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "print(n)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert int(result.stdout) > 50
