"""One small TF graph per group of TF ops, converted with no --model from its frozen ``.pb`` and from its
``.meta`` + checkpoint, compared with TensorFlow's own output (random seeded weights).

Sizes and strides are chosen so that TF's SAME padding is asymmetric, so a symmetric guess would show.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.conftest import require_tf
from tests.tfgraph.graphs import check, run_generated, save_graph
from tf2torch import api


def conv_bias_relu6(tf1, x, var):
    y = tf1.nn.conv2d(x, var("c1/weights", (3, 3, 3, 6)), [1, 2, 2, 1], "SAME")
    y = tf1.nn.relu6(tf1.nn.bias_add(y, var("c1/biases", (6,))))
    y = tf1.nn.depthwise_conv2d(y, var("dw/depthwise_weights", (3, 3, 6, 2)), [1, 2, 2, 1], "SAME")
    return tf1.identity(y, name="out")


def explicit_padding_and_pools(tf1, x, var):
    y = tf1.nn.conv2d(x, var("c/weights", (3, 3, 3, 4)), [1, 1, 1, 1], [[0, 0], [1, 2], [0, 1], [0, 0]])
    y = tf1.nn.max_pool2d(y, 3, 2, "SAME")
    z = tf1.nn.avg_pool2d(y, 3, 2, "SAME")  # divides by the real pixels at the border
    z = tf1.pad(z, [[0, 0], [1, 1], [2, 0], [0, 0]])
    return tf1.nn.conv2d(z, var("c2/weights", (2, 2, 4, 3)), [1, 1, 1, 1], "VALID", name="out")


def batch_norm_leaky_relu(tf1, x, var):
    y = tf1.nn.conv2d(x, var("c/weights", (3, 3, 3, 5)), [1, 1, 1, 1], "SAME")
    y, _, _ = tf1.nn.fused_batch_norm(y, var("bn/gamma", (5,)), var("bn/beta", (5,)), var("bn/moving_mean", (5,)),
                                      var("bn/moving_variance", (5,), low=0.5), epsilon=0.01, is_training=False)
    return tf1.nn.leaky_relu(y, alpha=0.3, name="out")


def global_pool_dense_softmax(tf1, x, var):
    y = tf1.nn.relu(tf1.nn.conv2d(x, var("c/weights", (3, 3, 3, 8)), [1, 2, 2, 1], "SAME"))
    y = tf1.reduce_mean(y, [1, 2], keepdims=True)
    y = tf1.squeeze(y, [1, 2])
    y = tf1.matmul(y, var("fc/weights", (8, 4))) + var("fc/biases", (4,))
    return tf1.nn.softmax(y, name="out")


def concat_and_arithmetic(tf1, x, var):
    a = tf1.nn.conv2d(x, var("a/weights", (1, 1, 3, 4)), [1, 1, 1, 1], "SAME")
    b = tf1.nn.conv2d(x, var("b/weights", (3, 3, 3, 4)), [1, 1, 1, 1], "SAME")
    y = tf1.concat([a * 2.0 - 1.0, tf1.maximum(b, 0.0)], axis=3)
    y = y + tf1.nn.sigmoid(y) / 3.0
    return tf1.nn.tanh(y, name="out")


def dynamic_flatten_dense(tf1, x, var):
    y = tf1.nn.conv2d(x, var("c/weights", (3, 3, 3, 4)), [1, 2, 2, 1], "SAME")
    # tf.layers.flatten's run-time form: the batch size from Shape, the rest -1
    y = tf1.reshape(y, tf1.stack([tf1.shape(y)[0], -1]))
    y = tf1.nn.bias_add(tf1.matmul(y, var("fc/weights", (4 * 4 * 4, 6))), var("fc/biases", (6,)))
    return tf1.nn.elu(y, name="out")


def transpose_conv_resize_pad_tile(tf1, x, var):
    batch = tf1.shape(x)[0]
    y = tf1.nn.conv2d_transpose(x, var("up/weights", (3, 3, 4, 3)), tf1.stack([batch, 10, 12, 4]), [1, 2, 2, 1],
                                "SAME")  # 5x6 -> 10x12
    y = require_tf().image.resize(y, [20, 24], method="bilinear")  # TF2's half-pixel grid
    y = tf1.image.resize_nearest_neighbor(y, [40, 48])  # TF1's legacy grid: a repeat at integer factors
    y = tf1.pad(y, [[0, 0], [2, 1], [1, 3], [0, 0]], mode="REFLECT")
    y = tf1.nn.conv2d(y, var("c/weights", (3, 3, 4, 2)), [1, 2, 2, 1], "VALID")
    return tf1.tile(y, [1, 1, 2, 3], name="out")


def stack_gather_transpose(tf1, x, var):
    y = tf1.nn.conv2d(x, var("c/weights", (1, 1, 3, 4)), [1, 1, 1, 1], "SAME")
    a, b = tf1.gather(y, [3, 0], axis=3), tf1.gather(y, [1, 2], axis=3)
    y = tf1.stack([a, b], axis=1)  # (N, 2, H, W, 2)
    y = tf1.transpose(y, [0, 2, 3, 1, 4])
    y = tf1.reshape(y, [-1, 5 * 5 * 4])
    return tf1.identity(tf1.matmul(y, var("fc/weights", (100, 3))), name="out")


GRAPHS = {
    "transpose_conv_resize_pad_tile": (transpose_conv_resize_pad_tile, (5, 6, 3)),
    "stack_gather_transpose": (stack_gather_transpose, (5, 5, 3)),
    "conv_bias_relu6_depthwise": (conv_bias_relu6, (10, 10, 3)),  # SAME stride 2: pads 0 before, 1 after
    "explicit_padding_and_pools": (explicit_padding_and_pools, (11, 10, 3)),
    "batch_norm_leaky_relu": (batch_norm_leaky_relu, (7, 7, 3)),
    "global_pool_dense_softmax": (global_pool_dense_softmax, (8, 8, 3)),
    "concat_and_arithmetic": (concat_and_arithmetic, (6, 6, 3)),
    "dynamic_flatten_dense": (dynamic_flatten_dense, (7, 7, 3)),
}


@pytest.fixture(scope="module", params=sorted(GRAPHS))
def saved(request, tmp_path_factory):
    build, shape = GRAPHS[request.param]
    return request.param, save_graph(tmp_path_factory.mktemp(request.param), build, shape,
                                     seed=sum(map(ord, request.param)))


@pytest.mark.parametrize("form", ["frozen", "meta"])
def test_graph_converts_to_the_same_numbers(saved, form):
    name, graph = saved
    check(graph, graph.frozen if form == "frozen" else graph.checkpoint, name)


def test_a_dense_after_a_flatten_permutes_its_rows_not_the_activations(tmp_path):
    graph = save_graph(tmp_path, dynamic_flatten_dense, (7, 7, 3), seed=11)
    source = api.convert(graph.frozen, None, dry_run=True).model_source
    forward = source.split("def forward")[1].split("\n\n")[0]
    assert "torch.flatten(" in forward and "permute" not in forward and "movedim" not in forward, forward
    check(graph, graph.frozen, "flatten before a Dense")


def test_shape_vectors_fold(tmp_path):
    """Shape arithmetic that only depends on static sizes folds away (tf.shape(x)[1:3] * 2 as a resize
    target would need ops we do not convert; here it is a reshape target)."""
    def build(tf1, x, var):
        y = tf1.nn.conv2d(x, var("c/weights", (1, 1, 3, 2)), [1, 1, 1, 1], "VALID")
        dims = tf1.shape(y)
        y = tf1.reshape(y, tf1.concat([dims[:1], [-1], dims[3:]], axis=0))  # (N, H*W, C)
        return tf1.identity(y * 0.5, name="out")
    graph = save_graph(tmp_path, build, (4, 5, 3), seed=3)
    assert graph.expected.shape == (2, 20, 2) and np.isfinite(graph.expected).all()
    check(graph, graph.frozen, "shape folding")


def test_token_ids_through_an_embedding(tmp_path):
    """An int32 Placeholder of token ids indexing a weight table (tf.gather): an input of the model, an
    nn.Embedding; the mean over the sequence and a Dense after it."""
    tf = require_tf()
    tf1 = tf.compat.v1
    rng = np.random.default_rng(8)
    graph = tf.Graph()
    with graph.as_default():
        ids = tf1.placeholder(tf.int32, [None, 6], name="ids")
        table = tf1.get_variable("embed/table", initializer=rng.normal(size=(20, 8)).astype(np.float32))
        y = tf1.reduce_mean(tf1.gather(table, ids), axis=1)
        w = tf1.get_variable("fc/weights", initializer=rng.normal(size=(8, 3)).astype(np.float32))
        out = tf1.identity(tf1.matmul(y, w), name="out")
        data = rng.integers(0, 20, (2, 6)).astype(np.int32)
        with tf1.Session(graph=graph) as sess:
            sess.run(tf1.global_variables_initializer())
            expected = sess.run(out, {ids: data})
            frozen = tf1.graph_util.convert_variables_to_constants(sess, graph.as_graph_def(), ["out"])
    (tmp_path / "frozen.pb").write_bytes(frozen.SerializeToString())
    result = api.convert(tmp_path / "frozen.pb", None, dry_run=True)
    assert "nn.Embedding(20, 8)" in result.model_source
    got = run_generated(result, data)
    rel = float(np.abs(got - expected).max() / np.abs(expected).max())
    print(f"token ids -> embedding: max rel err vs TF {rel:.2e}")
    assert rel <= 1e-5

