"""TF-slim nets (``tf_slim.nets``, the authors' own code, built with TF1 graphs and random seeded
weights) onto torchvision-style PyTorch ports, with no rules and no flags beyond ``--model``: the
names share nothing, so the variables are placed by structure (``map/structure.py``), SAME padding and
BN epsilon come from the ``.meta`` graph, the stride-2 max pool is tied by position."""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from tests.conftest import require_package, require_tf
from tests.util import load_source, state_dict, to_torch_layout
from tf2torch import api

PORTS = Path(__file__).with_name("slim_ports.py")


def require_slim():
    tf = require_tf()
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    # tf_slim imports tf_keras.legacy_tf_layers, which tf_keras 2.21 keeps under tf_keras.src: alias it.
    legacy = importlib.import_module("tf_keras.src.legacy_tf_layers")
    sys.modules.setdefault("tf_keras.legacy_tf_layers", legacy)
    for name in ("base", "convolutional", "core", "normalization", "pooling"):
        sys.modules.setdefault(f"tf_keras.legacy_tf_layers.{name}",
                               importlib.import_module(f"tf_keras.src.legacy_tf_layers.{name}"))
    return tf, require_package("tf_slim")


def _randomise(tf1, sess, rng) -> None:
    """Every variable random (He-scaled kernels), BN statistics included."""
    for v in tf1.global_variables():
        shape, name = tuple(v.shape), v.op.name
        if name.endswith("moving_variance"):
            value = rng.uniform(0.5, 1.5, shape)
        elif name.endswith("gamma"):
            value = 1 + rng.normal(0, 0.2, shape)
        elif name.endswith("weights") and len(shape) == 4:
            value = rng.normal(0, np.sqrt(2.0 / np.prod(shape[:3])), shape)
        elif v.dtype.base_dtype.is_floating:
            value = rng.normal(0, 0.2, shape)
        else:
            continue
        v.load(value.astype(np.float32), sess)


def _slim_resnet(tmp_path_factory, version: int):
    """slim's own resnet_v1_50 / resnet_v2_50 (25M parameters) at 96 px, saved with its .meta; TF's
    logits on a fixed input."""
    tf, slim = require_slim()
    nets = importlib.import_module(f"tf_slim.nets.resnet_v{version}")

    tf1 = tf.compat.v1
    folder = tmp_path_factory.mktemp(f"slim_resnet_v{version}_50")
    rng = np.random.default_rng(10 + version)
    x = rng.normal(size=(2, 96, 96, 3)).astype(np.float32)
    graph = tf.Graph()
    with graph.as_default():
        inputs = tf1.placeholder(tf.float32, [None, 96, 96, 3], name="input")
        with slim.arg_scope(nets.resnet_arg_scope()):
            logits, _ = getattr(nets, f"resnet_v{version}_50")(inputs, num_classes=5, is_training=False)
        with tf1.Session(graph=graph) as sess:
            sess.run(tf1.global_variables_initializer())
            _randomise(tf1, sess, rng)
            expected = sess.run(logits, {inputs: x}).reshape(2, 5)
            tf1.train.Saver().save(sess, str(folder / "model.ckpt"))
    return folder, x, expected


@pytest.fixture(scope="module")
def resnet_v1(tmp_path_factory):
    return _slim_resnet(tmp_path_factory, 1)


@pytest.fixture(scope="module")
def resnet_v2(tmp_path_factory):
    return _slim_resnet(tmp_path_factory, 2)


def test_slim_resnet_v1_onto_a_torchvision_style_port_with_no_rules(resnet_v1):
    folder, x, expected = resnet_v1
    result = api.convert(folder / "model.ckpt", None, dry_run=True, model=f"{PORTS}:resnet_v1_50")
    counts = result.report.counts()
    assert counts["missing"] == 0 and counts["unexpected"] == 0 and counts["mismatched"] == 0, counts
    mapped = {e.source: e.key for e in result.report.by_status("mapped")}
    assert mapped["resnet_v1_50/block1/unit_1/bottleneck_v1/shortcut/weights"] == "layer1.0.downsample.0.weight"
    assert mapped["resnet_v1_50/block1/unit_1/bottleneck_v1/shortcut/BatchNorm/gamma"] == "layer1.0.downsample.1.weight"
    assert mapped["resnet_v1_50/block1/unit_2/bottleneck_v1/conv3/BatchNorm/beta"] == "layer1.1.bn3.bias"
    assert mapped["resnet_v1_50/logits/weights"] == "fc.weight"
    model = load_source(result.model_source, folder / "model.py")["build_model"]()
    model.load_state_dict(state_dict(result.plans), strict=True)
    with torch.no_grad():
        out = model.eval()(to_torch_layout(x)).numpy()
    rel = float(np.abs(out - expected).max()) / float(np.abs(expected).max())
    print(f"tf_slim resnet_v1_50 -> torchvision-style port, no rules: max rel err {rel:.2e}; {counts}")
    assert rel <= 1e-4


def test_slim_resnet_v2_onto_a_preactivation_port_with_no_rules(resnet_v2):
    """Pre-activation units: slim's "preact" BatchNorm owns no conv, the shortcut and conv3 have biases."""
    folder, x, expected = resnet_v2
    result = api.convert(folder / "model.ckpt", None, dry_run=True, model=f"{PORTS}:resnet_v2_50")
    counts = result.report.counts()
    assert counts["missing"] == 0 and counts["unexpected"] == 0 and counts["mismatched"] == 0, counts
    mapped = {e.source: e.key for e in result.report.by_status("mapped")}
    assert mapped["resnet_v2_50/block1/unit_1/bottleneck_v2/preact/gamma"] == "layer1.0.bn0.weight"
    assert mapped["resnet_v2_50/block1/unit_1/bottleneck_v2/shortcut/biases"] == "layer1.0.downsample.bias"
    assert mapped["resnet_v2_50/postnorm/moving_variance"] == "bn.running_var"
    model = load_source(result.model_source, folder / "model.py")["build_model"]()
    model.load_state_dict(state_dict(result.plans), strict=True)
    with torch.no_grad():
        out = model.eval()(to_torch_layout(x)).numpy()
    rel = float(np.abs(out - expected).max()) / float(np.abs(expected).max())
    print(f"tf_slim resnet_v2_50 -> pre-activation port, no rules: max rel err {rel:.2e}; {counts}")
    assert rel <= 1e-4


@pytest.fixture(scope="module")
def vgg_16(tmp_path_factory):
    """The full slim vgg_16 (138M parameters: fc6 alone is a 7x7x512x4096 conv) on 224 px."""
    tf, slim = require_slim()
    from tf_slim.nets import vgg

    tf1 = tf.compat.v1
    folder = tmp_path_factory.mktemp("slim_vgg_16")
    rng = np.random.default_rng(16)
    x = rng.normal(size=(1, 224, 224, 3)).astype(np.float32)
    graph = tf.Graph()
    with graph.as_default():
        inputs = tf1.placeholder(tf.float32, [None, 224, 224, 3], name="input")
        with slim.arg_scope(vgg.vgg_arg_scope()):
            logits, _ = vgg.vgg_16(inputs, num_classes=5, is_training=False)
        with tf1.Session(graph=graph) as sess:
            sess.run(tf1.global_variables_initializer())
            _randomise(tf1, sess, rng)
            expected = sess.run(logits, {inputs: x})
            tf1.train.Saver().save(sess, str(folder / "model.ckpt"))
    return folder, x, expected


def test_slim_vgg_16_onto_a_torchvision_style_port_with_no_rules(vgg_16):
    folder, x, expected = vgg_16
    result = api.convert(folder / "model.ckpt", None, dry_run=True, model=f"{PORTS}:vgg_16")
    counts = result.report.counts()
    assert counts["missing"] == 0 and counts["unexpected"] == 0 and counts["mismatched"] == 0, counts
    mapped = {e.source: e.key for e in result.report.by_status("mapped")}
    assert mapped["vgg_16/conv3/conv3_3/weights"] == "features.14.weight"
    assert mapped["vgg_16/fc6/weights"] == "classifier.0.weight"
    model = load_source(result.model_source, folder / "model.py")["build_model"]()
    model.load_state_dict(state_dict(result.plans), strict=True)
    with torch.no_grad():
        out = model.eval()(to_torch_layout(x)).numpy()
    rel = float(np.abs(out - expected).max()) / float(np.abs(expected).max())
    print(f"tf_slim vgg_16 (138M parameters) -> torchvision-style port, no rules: max rel err {rel:.2e}; {counts}")
    assert rel <= 1e-4


@pytest.fixture(scope="module")
def inception_v3(tmp_path_factory):
    """slim inception_v3 at its native 299 px (so the 8x8 logits pool is a global mean), no aux logits."""
    tf, slim = require_slim()
    from tf_slim.nets import inception_v3 as nets

    tf1 = tf.compat.v1
    folder = tmp_path_factory.mktemp("slim_inception_v3")
    rng = np.random.default_rng(3)
    x = rng.normal(size=(1, 299, 299, 3)).astype(np.float32)
    graph = tf.Graph()
    with graph.as_default():
        inputs = tf1.placeholder(tf.float32, [None, 299, 299, 3], name="input")
        with slim.arg_scope(nets.inception_v3_arg_scope()):
            logits, _ = nets.inception_v3(inputs, num_classes=5, is_training=False, create_aux_logits=False)
        with tf1.Session(graph=graph) as sess:
            sess.run(tf1.global_variables_initializer())
            _randomise(tf1, sess, rng)
            expected = sess.run(logits, {inputs: x})
            tf1.train.Saver().save(sess, str(folder / "model.ckpt"))
    return folder, x, expected


def test_slim_inception_v3_onto_a_torchvision_style_port_with_no_rules(inception_v3):
    """Branches in slim's order, 1x3/3x1 pairs, SAME average pools in every Branch_3 (TF's divisor
    counts only real pixels: the port's AvgPool2d is rewritten), stride-2 VALID convs."""
    folder, x, expected = inception_v3
    result = api.convert(folder / "model.ckpt", None, dry_run=True, model=f"{PORTS}:inception_v3")
    counts = result.report.counts()
    assert counts["missing"] == 0 and counts["unexpected"] == 0 and counts["mismatched"] == 0, counts
    mapped = {e.source: e.key for e in result.report.by_status("mapped")}
    assert mapped["InceptionV3/Mixed_7b/Branch_1/Conv2d_0b_3x1/weights"] == "Mixed_7b.branch1.1.b.conv.weight"
    assert mapped["InceptionV3/Mixed_6a/Branch_1/Conv2d_1a_1x1/BatchNorm/beta"] == "Mixed_6a.branch1.2.bn.bias"
    pools = {r["module"] for r in result.report.rewrites if r["kind"] == "pool"}
    assert "Mixed_5b.branch3.0" in pools
    model = load_source(result.model_source, folder / "model.py")["build_model"]()
    model.load_state_dict(state_dict(result.plans), strict=True)
    with torch.no_grad():
        out = model.eval()(to_torch_layout(x)).numpy()
    rel = float(np.abs(out - expected).max()) / float(np.abs(expected).max())
    print(f"tf_slim inception_v3 -> torchvision-style port, no rules: max rel err {rel:.2e}; {counts}")
    assert rel <= 1e-4
