"""One small TF graph per group of TF ops, converted with no --model from its frozen ``.pb`` and from its
``.meta`` + checkpoint, compared with TensorFlow's own output (random seeded weights).

Sizes and strides are chosen so that TF's SAME padding is asymmetric, so a symmetric guess would show.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.tfgraph.graphs import check, save_graph


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


GRAPHS = {
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
    from tf2torch import api

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
