"""TF-slim's ``conv2d_same`` onto a user's PyTorch port, with ``--tf-padding same``.

slim writes a strided conv as an explicit ``tf.pad`` of ``(k - 1) // 2`` on each side and a conv with
padding ``VALID``; the usual PyTorch port is a conv with symmetric ``padding=k // 2``, which computes
exactly that. ``--tf-padding same`` is for modules the TF graph does not describe: a module whose kernel
is read by a graph op with padding VALID must be left alone (making it TF 'SAME' moves the window by a
pixel on even inputs: pad 2/3 instead of 3/3). BatchNorm epsilon comes from the FusedBatchNorm ops.

The net: input -> pad 3 + 7x7/2 VALID (conv1) -> fused BN (eps 1e-3) -> relu -> 3x3/1 SAME
(block1/conv2) -> relu -> pad 1 + 3x3/2 VALID (block1/conv3) -> fused BN -> relu -> mean over H, W ->
MatMul + bias (logits). The checkpoint (+ .meta) and TF's logits are made with TensorFlow at test time,
on the 33x33 input of the report and on an even 32x32 input (slim's usual 224 is even too): at odd
sizes TF 'SAME' happens to pad these convs symmetrically as well, so only even sizes show the bug.
"""

from pathlib import Path

import numpy as np
import pytest
import torch

from tests.conftest import require_tf
from tests.util import load_source, state_dict, to_torch_layout
from tf2torch import api

PORT = Path(__file__).with_name("slim_port.py")
SIZES = (33, 32)
VALID_CONVS = {"conv1", "block1.conv3"}  # read by graph ops with padding VALID (after an explicit tf.pad)
SAME_CONV = "block1.conv2"  # read by a graph op with padding SAME, stride 1: k // 2 already is TF's


def _weights(rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Seeded slim-named variables; kernels scaled by 1/sqrt(fan-in) so every layer's output is O(1)."""

    def kernel(*shape):
        return (rng.standard_normal(shape) / np.sqrt(np.prod(shape[:-1]))).astype(np.float32)

    def bn(prefix, c):
        return {f"{prefix}/BatchNorm/gamma": (1 + 0.2 * rng.standard_normal(c)).astype(np.float32),
                f"{prefix}/BatchNorm/beta": (0.2 * rng.standard_normal(c)).astype(np.float32),
                f"{prefix}/BatchNorm/moving_mean": (0.2 * rng.standard_normal(c)).astype(np.float32),
                f"{prefix}/BatchNorm/moving_variance": rng.uniform(0.5, 1.5, c).astype(np.float32)}

    return {"resnet/conv1/weights": kernel(7, 7, 3, 8), **bn("resnet/conv1", 8),
            "resnet/block1/conv2/weights": kernel(3, 3, 8, 12),
            "resnet/block1/conv2/biases": (0.1 * rng.standard_normal(12)).astype(np.float32),
            "resnet/block1/conv3/weights": kernel(3, 3, 12, 16), **bn("resnet/block1/conv3", 16),
            "resnet/logits/weights": kernel(16, 10),
            "resnet/logits/biases": (0.1 * rng.standard_normal(10)).astype(np.float32)}


def _build(tf, values: dict[str, np.ndarray], size: int):
    """The slim graph on a [None, size, size, 3] placeholder "input"; returns (graph, input, logits)."""
    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [None, size, size, 3], name="input")

        def var(name):
            scope, _, leaf = name.rpartition("/")
            with tf1.variable_scope(scope, reuse=tf1.AUTO_REUSE):
                trainable = not leaf.startswith("moving_")
                return tf1.get_variable(leaf, initializer=values[name], trainable=trainable)

        def conv2d_same(y, scope, k, stride):  # slim.nets.resnet_utils.conv2d_same
            w = var(f"{scope}/weights")
            if stride == 1:
                return tf.nn.conv2d(y, w, [1, 1, 1, 1], "SAME")
            pad_beg = (k - 1) // 2
            pad_end = k - 1 - pad_beg
            y = tf.pad(y, [[0, 0], [pad_beg, pad_end], [pad_beg, pad_end], [0, 0]])
            return tf.nn.conv2d(y, w, [1, stride, stride, 1], "VALID")

        def batch_norm(y, scope):
            p = f"{scope}/BatchNorm"
            y, _, _ = tf1.nn.fused_batch_norm(y, var(f"{p}/gamma"), var(f"{p}/beta"), var(f"{p}/moving_mean"),
                                              var(f"{p}/moving_variance"), epsilon=1e-3, is_training=False)
            return y

        y = tf.nn.relu(batch_norm(conv2d_same(x, "resnet/conv1", 7, 2), "resnet/conv1"))
        y = tf.nn.relu(conv2d_same(y, "resnet/block1/conv2", 3, 1) + var("resnet/block1/conv2/biases"))
        y = tf.nn.relu(batch_norm(conv2d_same(y, "resnet/block1/conv3", 3, 2), "resnet/block1/conv3"))
        y = tf.reduce_mean(y, [1, 2])
        logits = tf.identity(tf.matmul(y, var("resnet/logits/weights")) + var("resnet/logits/biases"),
                             name="logits")
    return graph, x, logits


@pytest.fixture(scope="module")
def slim(tmp_path_factory):
    """(checkpoint prefix, {size: (input NHWC, TF logits)}): the checkpoint is the 33x33 graph's."""
    tf = require_tf()
    tf1 = tf.compat.v1
    out = tmp_path_factory.mktemp("slim")
    rng = np.random.default_rng(2024)
    values = _weights(rng)
    io = {}
    for size in SIZES:
        graph, x, logits = _build(tf, values, size)
        with tf1.Session(graph=graph) as sess:
            sess.run(tf1.global_variables_initializer())
            inputs = rng.standard_normal((2, size, size, 3)).astype(np.float32)
            io[size] = (inputs, sess.run(logits, {x: inputs}))
            if size == 33:
                tf1.train.Saver().save(sess, str(out / "model.ckpt"))
    assert (out / "model.ckpt.meta").is_file()
    return out / "model.ckpt", io


def _convert(prefix, input_shape):
    return api.convert(prefix, None, dry_run=True, model=f"{PORT}:SlimNet", tf_padding="same",
                       input_shape=input_shape)


def _patched(result):
    model = load_source(result.model_source, PORT.with_name("model.py"))["build_model"]()
    model.load_state_dict(state_dict(result.plans), strict=True)
    return model.eval()


def _check(model, inputs, expected, what):
    with torch.no_grad():
        out = model(to_torch_layout(inputs))
    expected = torch.from_numpy(expected)
    diff = (out - expected).abs().max().item()
    scale = expected.abs().max().item()
    print(f"{what}: max abs diff {diff:.2e} (max |logit| {scale:.2f}, {100 * diff / scale:.1f}%)")
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-5 * scale)


def test_every_variable_maps_without_rules(slim):
    prefix, _ = slim
    result = _convert(prefix, (1, 3, 33, 33))
    counts = result.report.counts()
    variables = {v.name for v in api.read(prefix).variables}
    entries = sorted(result.report.by_status("mapped"), key=lambda e: e.source)
    mapped = {e.source: e.key for e in entries}
    print(f"slim onto SlimNet: {counts}")
    for e in entries:  # slim's conv1/weights and conv1/BatchNorm/gamma share a name: the shape decides
        print(f"  {e.source} -> {e.key} ({e.reason})")
    assert counts["missing"] == 0 and counts["mismatched"] == 0 and counts["unexpected"] == 0
    assert set(mapped) == variables
    assert mapped["resnet/conv1/weights"] == "conv1.weight"
    assert mapped["resnet/conv1/BatchNorm/gamma"] == "bn1.weight"
    assert mapped["resnet/conv1/BatchNorm/moving_variance"] == "bn1.running_var"
    assert mapped["resnet/block1/conv2/biases"] == "block1.conv2.bias"
    assert mapped["resnet/block1/conv3/weights"] == "block1.conv3.weight"
    assert mapped["resnet/block1/conv3/BatchNorm/beta"] == "block1.bn3.bias"
    assert mapped["resnet/logits/weights"] == "logits.weight"


@pytest.mark.parametrize("size", SIZES)
def test_the_port_as_written_with_tf_epsilon_is_tensorflow(slim, size):
    """The control: the user's port unchanged (symmetric padding=k // 2) but for BN epsilon 1e-3 already
    computes TF's logits at every size, so any padding rewrite of conv1 / block1.conv3 can only hurt."""
    prefix, io = slim
    result = _convert(prefix, (1, 3, size, size))
    model = load_source(PORT.read_text(), PORT)["SlimNet"]()
    model.load_state_dict(state_dict(result.plans), strict=True)
    for bn in (model.bn1, model.block1.bn3):
        bn.eps = 1e-3
    _check(model.eval(), *io[size], f"slim port as written, eps 1e-3, {size}x{size}")


@pytest.mark.parametrize("size", SIZES)
def test_patched_port_matches_tf_static(slim, size):
    prefix, io = slim
    model = _patched(_convert(prefix, (1, 3, size, size)))
    _check(model, *io[size], f"slim conv2d_same, --tf-padding same, static {size}x{size}")


@pytest.mark.parametrize("size", SIZES)
def test_patched_port_matches_tf_dynamic(slim, size):
    """No --input-shape: one patched model for every input size."""
    prefix, io = slim
    model = _patched(_convert(prefix, None))
    _check(model, *io[size], f"slim conv2d_same, --tf-padding same, dynamic, {size}x{size} input")


@pytest.mark.parametrize("input_shape", [(1, 3, 33, 33), (1, 3, 32, 32), None], ids=["static33", "static32", "dynamic"])
def test_graph_valid_convs_get_no_padding_rewrite_and_bn_gets_graph_epsilon(slim, input_shape):
    prefix, _ = slim
    result = _convert(prefix, input_shape)
    for r in result.report.rewrites:
        print(f"rewrite {r['module']}: {r['kind']} {r['args']} ({r['what']})")
    padding = {r["module"]: r["kind"] for r in result.report.rewrites if r["kind"] in ("pad", "padding", "dynamic")}
    assert not VALID_CONVS & set(padding), f"graph-VALID convs rewritten: {padding}"
    eps = {r["module"]: r["args"] for r in result.report.rewrites if r["kind"] == "eps"}
    assert eps == {"bn1": 0.001, "block1.bn3": 0.001}  # the FusedBatchNorm ops' epsilon attribute


@pytest.mark.parametrize("input_shape", [(1, 3, 33, 33), (1, 3, 32, 32), None], ids=["static33", "static32", "dynamic"])
def test_stride1_same_conv_needs_no_change(slim, input_shape):
    """k=3, s=1 TF 'SAME' pads 1/1 at every input size: the port's padding=1 already is TF's."""
    prefix, _ = slim
    result = _convert(prefix, input_shape)
    touched = [r for r in result.report.rewrites if r["module"] == SAME_CONV]
    print(f"{SAME_CONV} rewrites ({'static' if input_shape else 'dynamic'}): {touched}")
    assert touched == []
    model = _patched(result)
    conv = model.get_submodule(SAME_CONV)
    assert type(conv) is torch.nn.Conv2d and conv.padding == (1, 1)
