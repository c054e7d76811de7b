"""TF graphs at the command line: the first user report's WideResNet with no --model, a training graph's
outputs found without names, clear refusals (unsupported op, batch statistics, hostile names), inspect."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from tests.conftest import require_tf
from tests.test_hostile import listing, refused, run_cli
from tests.tfgraph.graphs import check, run_generated, save_graph
from tf2torch import api

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures"


def test_seed_000_wide_resnet_from_its_tf1_graph_alone(tmp_path):
    """Seed 000: the WideResNet's TF1 checkpoint, no --model: generated code, stride-2 SAME exact."""
    out = tmp_path / "out"
    result = run_cli("convert", FIXTURES / "wrn16_2" / "model.ckpt", "-o", out, "-q")
    assert result.exit_code == 0, result.stderr
    source = (out / "model.py").read_text()
    assert "nn.ZeroPad2d((0, 1, 0, 1))" in source  # TF's extra row and column below/right at stride 2
    # modules nest by the TF scopes: block2.layer.0/conv1 -> self.block2_layer_0.conv1
    assert "self.block2_layer_0.conv1 = nn.Conv2d(32, 64, (3, 3), stride=(2, 2)" in source
    assert "self.block2_layer_0.bn1 = nn.BatchNorm2d(32, eps=0.001" in source  # bn1/BatchNorm/gamma: bn1
    io = np.load(FIXTURES / "wrn16_2" / "io.npz")
    conversion = api.convert(FIXTURES / "wrn16_2" / "model.ckpt", None, dry_run=True)
    got = run_generated(conversion, io["input"])
    rel = float(np.abs(got - io["output"]).max() / np.abs(io["output"]).max())
    print(f"seed 000 WideResNet-16-2 from its .meta: max rel err vs TF {rel:.2e}")
    assert rel <= 1e-5


def _training_graph(tf1, x, var):
    """A classifier with labels, a loss, metrics and an Adam step: only the logits are the model."""
    y = tf1.nn.relu(tf1.nn.conv2d(x, var("c/weights", (3, 3, 3, 4)), [1, 2, 2, 1], "SAME"))
    y = tf1.reduce_mean(y, [1, 2])
    logits = tf1.nn.bias_add(tf1.matmul(y, var("fc/weights", (4, 3))), var("fc/biases", (3,)))
    labels = tf1.placeholder(tf1.float32, [None, 3], name="labels")
    loss = tf1.reduce_mean(tf1.nn.softmax_cross_entropy_with_logits_v2(labels=labels, logits=logits))
    loss += 1e-4 * tf1.add_n([tf1.nn.l2_loss(v) for v in tf1.trainable_variables()])
    tf1.reduce_mean(tf1.cast(tf1.equal(tf1.argmax(logits, 1), tf1.argmax(labels, 1)), tf1.float32), name="acc")
    tf1.train.AdamOptimizer(1e-3).minimize(loss)
    return logits


def test_training_graph_outputs_are_the_logits(tmp_path):
    graph = save_graph(tmp_path, _training_graph, (8, 8, 3), seed=4)
    result = api.convert(graph.checkpoint, None, dry_run=True)  # no --graph-output: found from the graph
    assert result.report.interface["outputs"][0]["keras_shape"] == [3]
    check(graph, graph.checkpoint, "training graph, default outputs")


def test_unsupported_op_is_named_with_its_type_and_scope(tmp_path):
    def build(tf1, x, var):
        y = tf1.nn.conv2d(x, var("c/weights", (3, 3, 3, 4)), [1, 1, 1, 1], "SAME")
        return tf1.nn.local_response_normalization(y, name="block/lrn")
    graph = save_graph(tmp_path, build, (6, 6, 3))
    before = listing(tmp_path)
    line = refused(run_cli("convert", graph.frozen, "-o", tmp_path / "out"), "LRN", "block/lrn")
    assert "--weights-only" in line and listing(tmp_path) - before <= {"out.failed-report.json"}
    summary = json.loads(run_cli("inspect", graph.frozen, "--json").stdout)
    assert summary["graph"]["unsupported"] == {"LRN": ["block/lrn"]}, summary["graph"]
    assert summary["graph"]["ops"]["Conv2D"] == 1 and summary["graph"]["outputs"] == ["block/lrn"]


def test_batch_statistics_graph_is_refused(tmp_path):
    def build(tf1, x, var):
        y, _, _ = tf1.nn.fused_batch_norm(x, var("bn/gamma", (3,)), var("bn/beta", (3,)), is_training=True)
        return tf1.identity(y, name="out")
    graph = save_graph(tmp_path, build, (4, 4, 3))
    refused(run_cli("convert", graph.frozen, "-o", tmp_path / "out"), "is_training=True", "inference graph")


def test_hostile_node_names_reach_the_code_only_as_identifiers(tmp_path):
    """A forged .pb whose node names hold code: the generated file compiles, runs, and holds none of it."""
    tf = require_tf()

    def build(tf1, x, var):
        y = tf1.nn.conv2d(x, var("conv/weights", (3, 3, 3, 2)), [1, 2, 2, 1], "SAME")
        return tf1.nn.relu(y, name="out")
    graph = save_graph(tmp_path, build, (6, 6, 3))
    graph_def = tf.compat.v1.GraphDef()
    graph_def.ParseFromString(graph.frozen.read_bytes())
    evil = 'x"); __import__("os").system("touch PWNED"); ("'
    renames = {n.name: f"{evil}/{n.name}" for n in graph_def.node}
    for node in graph_def.node:
        node.name = renames[node.name]
        node.input[:] = [renames.get(i.split(":")[0], i) + (":" + i.split(":")[1] if ":" in i else "") for i in node.input]
    forged = tmp_path / "forged.pb"
    forged.write_bytes(graph_def.SerializeToString())
    result = api.convert(forged, None, dry_run=True)
    # Names survive only as identifiers (x___import___os_system_...), never as code or string syntax.
    assert '__import__("os")' not in result.model_source and ".system(" not in result.model_source
    assert not (tmp_path / "PWNED").exists()
    got = run_generated(result, graph.x)
    print(f"hostile names: max abs err vs TF {np.abs(got - graph.expected).max():.2e}")
    assert np.allclose(got, graph.expected, rtol=1e-5, atol=1e-6)


def test_a_per_channel_product_that_is_no_batch_norm_is_a_constant_operand(tmp_path):
    """x * gain by a weight vector, with no add of beta - mean * gain after it: the weight is a buffer
    the product reads (not a guessed batch norm); a product with a constant computed from weights that
    is no batch norm is refused."""
    def build(tf1, x, var):
        y = tf1.nn.conv2d(x, var("c/weights", (1, 1, 3, 4)), [1, 1, 1, 1], "SAME")
        return tf1.identity(y * var("gain", (4,)), name="out")
    graph = save_graph(tmp_path, build, (4, 4, 3))
    source = api.convert(graph.frozen, None, dry_run=True).model_source
    assert "nn.BatchNorm" not in source and "TFConstant((4,))" in source
    check(graph, graph.frozen, "x * weight vector")

    def derived(tf1, x, var):
        y = tf1.nn.conv2d(x, var("c/weights", (1, 1, 3, 4)), [1, 1, 1, 1], "SAME")
        return tf1.identity(y * tf1.math.rsqrt(var("v", (4,), low=0.5)), name="out")
    (tmp_path / "derived").mkdir()
    graph = save_graph(tmp_path / "derived", derived, (4, 4, 3))
    refused(run_cli("convert", graph.frozen, "-o", tmp_path / "out"), "computed from weights",
            "not part of a batch norm")


def test_an_unfused_batch_norm_is_a_batch_norm(tmp_path):
    """tf.nn.batch_normalization (x * gamma * rsqrt(var + eps) + (beta - mean * ...)) in a TF1 graph."""
    def build(tf1, x, var):
        y = tf1.nn.conv2d(x, var("c/weights", (3, 3, 3, 4)), [1, 2, 2, 1], "SAME")
        y = tf1.nn.batch_normalization(y, var("bn/mean", (4,)), var("bn/variance", (4,), low=0.5),
                                       var("bn/beta", (4,)), var("bn/gamma", (4,)), 0.01)
        return tf1.nn.relu(y, name="out")
    graph = save_graph(tmp_path, build, (8, 8, 3))
    source = api.convert(graph.frozen, None, dry_run=True).model_source
    assert "nn.BatchNorm2d(4, eps=0.01" in source, source
    check(graph, graph.frozen, "unfused batch norm")


def test_open_input_sizes_are_fixed_by_input_shape(tmp_path):
    """A placeholder [None, None, None, 3] before a Flatten: refused with the flag to pass, then exact
    with --input-shape in the generated model's layout (channels first)."""
    def build(tf1, x, var):
        y = tf1.nn.conv2d(x, var("c/weights", (3, 3, 3, 4)), [1, 2, 2, 1], "SAME")
        y = tf1.reshape(y, tf1.stack([tf1.shape(y)[0], -1]))
        return tf1.matmul(y, var("fc/weights", (5 * 5 * 4, 2)), name="out")
    tf = require_tf()
    graph = save_graph(tmp_path, build, (10, 10, 3))
    graph_def = tf.compat.v1.GraphDef()
    graph_def.ParseFromString(graph.frozen.read_bytes())
    placeholder = next(n for n in graph_def.node if n.op == "Placeholder")
    for dim in placeholder.attr["shape"].shape.dim[1:3]:
        dim.size = -1  # the sizes a TF Hub image model leaves open
    graph.frozen.write_bytes(graph_def.SerializeToString())
    refused(run_cli("convert", graph.frozen, "-o", tmp_path / "out"), "--input-shape")
    check(graph, graph.frozen, "open input sizes + --input-shape", input_shape=(1, 3, 10, 10))
