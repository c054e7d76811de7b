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
from tests.support.numerics import check, float64_drift
from tests.support.weights import SLIM, randomise_tf1
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


def _save_slim(tmp_path_factory, name: str, size: int, batch: int, net) -> tuple[Path, np.ndarray, np.ndarray]:
    """Build ``net(slim, inputs) -> logits`` in a TF1 graph, randomise it, save it with its .meta, and
    frozen to ``frozen.pb`` (the logits' graph, variables made Consts, as ``freeze_graph`` does);
    returns the folder, an input batch and TF's logits (batch, 5) for it."""
    tf, slim = require_slim()
    tf1 = tf.compat.v1
    folder = tmp_path_factory.mktemp(f"slim_{name}")
    rng = np.random.default_rng(sum(map(ord, name)))
    x = rng.normal(size=(batch, size, size, 3)).astype(np.float32)
    graph = tf.Graph()
    with graph.as_default():
        inputs = tf1.placeholder(tf.float32, [None, size, size, 3], name="input")
        logits = net(slim, inputs)
        with tf1.Session(graph=graph) as sess:
            sess.run(tf1.global_variables_initializer())
            randomise_tf1(tf1, sess, rng, SLIM)
            expected = sess.run(logits, {inputs: x}).reshape(batch, -1)
            tf1.train.Saver().save(sess, str(folder / "model.ckpt"))
            frozen = tf1.graph_util.convert_variables_to_constants(sess, graph.as_graph_def(), [logits.op.name])
            (folder / "frozen.pb").write_bytes(frozen.SerializeToString())
            (folder / "logits.txt").write_text(logits.op.name)
    return folder, x, expected


def _resnet(version: int):
    def net(slim, inputs):
        nets = importlib.import_module(f"tf_slim.nets.resnet_v{version}")
        with slim.arg_scope(nets.resnet_arg_scope()):
            return getattr(nets, f"resnet_v{version}_50")(inputs, num_classes=5, is_training=False)[0]
    return net


def _vgg(slim, inputs):
    from tf_slim.nets import vgg

    with slim.arg_scope(vgg.vgg_arg_scope()):
        return vgg.vgg_16(inputs, num_classes=5, is_training=False)[0]


def _inception(slim, inputs):
    from tf_slim.nets import inception_v3

    with slim.arg_scope(inception_v3.inception_v3_arg_scope()):
        return inception_v3.inception_v3(inputs, num_classes=5, is_training=False, create_aux_logits=False)[0]


# name -> (builder, input size, batch, port factory, a few pairs the mapping must make). resnet_v1_50 /
# resnet_v2_50 (25M parameters) at 96 px; vgg_16 (138M: fc6 alone is a 7x7x512x4096 conv) and
# inception_v3 at their native 224 / 299 px (so their last pools and convs see what they were built for).
NETS = {
    "resnet_v1_50": (_resnet(1), 96, 2, "resnet_v1_50", {
        # slim creates the shortcut before conv3 (both 1x1, 64 -> 256): paired by name, not by position
        "resnet_v1_50/block1/unit_1/bottleneck_v1/shortcut/weights": "layer1.0.downsample.0.weight",
        "resnet_v1_50/block1/unit_1/bottleneck_v1/shortcut/BatchNorm/gamma": "layer1.0.downsample.1.weight",
        "resnet_v1_50/block1/unit_2/bottleneck_v1/conv3/BatchNorm/beta": "layer1.1.bn3.bias",
        "resnet_v1_50/logits/weights": "fc.weight"}),
    "resnet_v2_50": (_resnet(2), 96, 2, "resnet_v2_50", {
        # pre-activation: "preact" BatchNorms own no conv; the shortcut and conv3 have biases
        "resnet_v2_50/block1/unit_1/bottleneck_v2/preact/gamma": "layer1.0.bn0.weight",
        "resnet_v2_50/block1/unit_1/bottleneck_v2/shortcut/biases": "layer1.0.downsample.bias",
        "resnet_v2_50/postnorm/moving_variance": "bn.running_var"}),
    "vgg_16": (_vgg, 224, 1, "vgg_16", {
        "vgg_16/conv3/conv3_3/weights": "features.14.weight", "vgg_16/fc6/weights": "classifier.0.weight"}),
    "inception_v3": (_inception, 299, 1, "inception_v3", {
        # 1x3 / 3x1 pairs, batch norms without gamma, SAME average pools in every Branch_3
        "InceptionV3/Mixed_7b/Branch_1/Conv2d_0b_3x1/weights": "Mixed_7b.branch1.1.b.conv.weight",
        "InceptionV3/Mixed_6a/Branch_1/Conv2d_1a_1x1/BatchNorm/beta": "Mixed_6a.branch1.2.bn.bias"}),
}


@pytest.fixture(scope="module", params=sorted(NETS))
def saved(request, tmp_path_factory):
    build, size, batch, *_ = NETS[request.param]
    return request.param, _save_slim(tmp_path_factory, request.param, size, batch, build)


def test_slim_net_onto_a_torchvision_style_port_with_no_rules(saved):
    name, (folder, x, expected) = saved
    _, _, _, port, pairs = NETS[name]
    result = api.convert(folder / "model.ckpt", None, dry_run=True, model=f"{PORTS}:{port}")
    counts = result.report.counts()
    assert counts["missing"] == 0 and counts["unexpected"] == 0 and counts["mismatched"] == 0, counts
    mapped = {e.source: e.key for e in result.report.by_status("mapped")}
    assert {k: mapped.get(k) for k in pairs} == pairs
    if name == "inception_v3":  # TF's SAME average pool divides by the real pixels: the port's is rewritten
        assert "Mixed_5b.branch3.0" in {r["module"] for r in result.report.rewrites if r["kind"] == "pool"}
    model = load_source(result.model_source, folder / "model.py")["build_model"]()
    model.load_state_dict(state_dict(result.plans), strict=True)
    feed = [to_torch_layout(x)]
    with torch.no_grad():
        out = model.eval()(*feed).numpy()
    print(counts)
    check(out, expected, f"tf_slim {name} -> torchvision-style port, no rules", float64_drift(model, feed))


def _generated(result, folder: Path, x: np.ndarray) -> tuple[np.ndarray, float]:
    """The generated model's output and its float64 drift (the control of the project's error rule)."""
    model = load_source(result.model_source, folder / "model.py")["build_model"]()
    model.load_state_dict(state_dict(result.plans), strict=True)
    feed = [to_torch_layout(x)]
    with torch.no_grad():
        return model.eval()(*feed).numpy(), float64_drift(model, feed)


@pytest.mark.parametrize("form", ["frozen.pb", "meta"])
def test_slim_graph_to_generated_pytorch_with_no_model(saved, form):
    """Issue 15: the TF graph alone (a frozen GraphDef, or the .meta beside the checkpoint) becomes a
    readable generated model: modules named after slim's scopes, SAME and epsilon from the graph."""
    name, (folder, x, expected) = saved
    logits = (folder / "logits.txt").read_text()
    source = folder / "frozen.pb" if form == "frozen.pb" else folder / "model.ckpt"
    # The frozen graph was pruned to the logits; the .meta also holds slim's softmax "predictions" end
    # point, so the logits are named (the default outputs are checked in test_tf_graph.py).
    outputs = () if form == "frozen.pb" else (logits,)
    result = api.convert(source, None, dry_run=True, graph_outputs=outputs)
    counts = result.report.counts()
    assert counts["missing"] == 0 and counts["unexpected"] == 0 and counts["mismatched"] == 0, counts
    out, drift = _generated(result, folder, x)
    print(counts)
    check(out.reshape(len(x), -1), expected, f"tf_slim {name} {form} -> generated model", drift)
    assert "nn.Conv2d(" in result.model_source
    assert ("nn.BatchNorm2d(" in result.model_source) == (name != "vgg_16")  # VGG has no batch norm
