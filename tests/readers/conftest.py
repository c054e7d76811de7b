"""Session fixtures for tests/readers: real files written by TensorFlow into a temporary directory.

The checkpoint fixtures below return a checkpoint prefix (or SavedModel directory); the Keras readers'
fixtures live in ``conftest_keras.py`` and are re-exported here. Everything is small and seeded.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import require_tf
from tests.readers.conftest_keras import keras2_models, keras3_models  # noqa: F401  (Keras reader fixtures)

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

ROOT = Path(__file__).resolve().parents[2]
# The lead's committed fixtures (fixtures/make_fixtures.py), read too when present.
LEAD_CHECKPOINTS = sorted(p.with_suffix("") for p in (ROOT / "fixtures").glob("**/*.index")
                          if p.parent.name != "variables")
LEAD_SAVEDMODELS = sorted(p.parent for p in (ROOT / "fixtures").glob("**/saved_model.pb"))

# Every dtype of tf2torch/dtypes.py (the string one is written separately).
NUMERIC = ["float32", "float64", "int32", "uint8", "int16", "int8", "complex64", "int64", "bool",
           "bfloat16", "uint16", "complex128", "float16", "uint32", "uint64"]


def tf_value(tf, prefix: Path | str, name: str) -> np.ndarray:
    """What TensorFlow itself reads for ``name`` (scalars as 0-d arrays)."""
    value = tf.train.load_checkpoint(str(prefix)).get_tensor(name)
    return np.asarray(value, dtype=object) if isinstance(value, bytes) else np.asarray(value)


@pytest.fixture(scope="session")
def tf():
    return require_tf()


@pytest.fixture(scope="session")
def raw_bundle(tf, tmp_path_factory) -> Path:
    """SaveV2 of every dtype, a 0-d, an empty and a 3 MB tensor (chunked CRC path), strings."""
    rng = np.random.default_rng(0)
    names, tensors = [], []
    for name in NUMERIC:
        dtype = tf.as_dtype(name)
        if name == "bool":
            value = tf.constant(rng.integers(0, 2, (2, 3)).astype(bool))
        elif dtype.is_complex:
            real = tf.constant(rng.normal(size=(2, 3)), dtype.real_dtype)
            value = tf.complex(real, real * 2)
        else:
            value = tf.cast(tf.constant(rng.normal(size=(2, 3)) * 20), dtype)
        names.append(f"dtypes/{name}")
        tensors.append(value)
    extra = {
        "scalar": tf.constant(3.5, tf.float32),
        "empty": tf.zeros([0, 4], tf.float32),
        "big": tf.constant(rng.normal(size=(768, 1024)).astype(np.float32)),
        "dtypes/string": tf.constant([[b"abc", b""], [b"\x00\xff" * 100, "é".encode()]]),
        "string_scalar": tf.constant(b"hello"),
        "string_empty": tf.constant([], tf.string),
    }
    prefix = tmp_path_factory.mktemp("raw") / "bundle"
    tf.raw_ops.SaveV2(prefix=str(prefix), tensor_names=names + list(extra), shape_and_slices=[""] * (len(names) + len(extra)),
                      tensors=tensors + list(extra.values()))
    return prefix


@pytest.fixture(scope="session")
def merged_bundle(tf, tmp_path_factory) -> tuple[Path, dict[str, np.ndarray]]:
    """Slices saved into two bundles and merged: two shards, a 2-D partition spanning both, and a
    partitioned string tensor (which TF's own reader cannot join)."""
    rng = np.random.default_rng(1)
    grid = rng.normal(size=(5, 4)).astype(np.float32)
    ints = np.arange(14, dtype=np.int64).reshape(7, 2)
    folder = tmp_path_factory.mktemp("merged")
    tf.raw_ops.SaveV2(prefix=str(folder / "p0"), tensor_names=["grid", "grid", "ints", "words"],
                      shape_and_slices=["5 4 0,3:0,2", "5 4 0,3:2,2", "7 2 0,3:-", "3 0,2"],
                      tensors=[grid[:3, :2], grid[:3, 2:], ints[:3], tf.constant([b"p", b"q"])])
    tf.raw_ops.SaveV2(prefix=str(folder / "p1"), tensor_names=["grid", "ints", "plain", "words"],
                      shape_and_slices=["5 4 3,2:-", "7 2 3,4:-", "", "3 2,1"],
                      tensors=[grid[3:], ints[3:], tf.constant([1.0, 2.0]), tf.constant([b"r"])])
    tf.raw_ops.MergeV2Checkpoints(checkpoint_prefixes=[str(folder / "p0"), str(folder / "p1")],
                                  destination_prefix=str(folder / "merged"))
    words = np.array([b"p", b"q", b"r"], dtype=object)
    return folder / "merged", {"grid": grid, "ints": ints, "words": words}


@pytest.fixture(scope="session")
def tf1_checkpoint(tf, tmp_path_factory) -> Path:
    """A tf.compat.v1 graph saved by ``Saver(sharded=True)`` over two device strings (two data
    shards), with its ``.meta``: ref and resource variables, partitioned variables, f16/bf16/int64/
    string variables, convs, pools, fused batch norm, Adam slots, EMA shadows and global_step.
    Side branches (dilated conv, partitioned conv, NCHW pool) are in the graph but never run."""
    tf1 = tf.compat.v1
    rng = np.random.default_rng(2)

    def init(shape, dtype=np.float32):
        return (rng.normal(size=shape) * 0.5).astype(dtype)

    graph = tf.Graph()
    with graph.as_default():
        x = tf1.placeholder(tf.float32, [2, 8, 8, 3], name="x")
        with tf.device("/device:CPU:0"):
            w = tf1.get_variable("conv/kernel", initializer=init((3, 3, 3, 4)), use_resource=False)
            y = tf.nn.conv2d(x, w, [1, 2, 2, 1], "SAME", dilations=[1, 1, 1, 1])
            dw = tf1.get_variable("dw/depthwise_kernel", initializer=init((3, 3, 4, 2)))
            y = tf1.nn.depthwise_conv2d_native(y, dw, [1, 1, 1, 1], "SAME")
            gamma = tf1.get_variable("bn/gamma", initializer=init((8,)) + 1)
            beta = tf1.get_variable("bn/beta", initializer=init((8,)))
            mean = tf1.get_variable("bn/moving_mean", initializer=init((8,)), trainable=False)
            var = tf1.get_variable("bn/moving_variance", initializer=np.ones(8, np.float32), trainable=False)
            y, _, _ = tf1.nn.fused_batch_norm(y, gamma, beta, mean, var, epsilon=1e-3, is_training=False)
            # A side branch never run: CPU kernels cannot differentiate dilated convs, but the graph
            # only needs to record the dilations.
            dil = tf1.get_variable("dilated/kernel", initializer=init((3, 3, 8, 8)))
            tf.nn.conv2d(y, dil, 1, "SAME", dilations=2, name="dilated")
            pk = tf1.get_variable("pconv/kernel", [1, 1, 8, 4], partitioner=tf1.fixed_size_partitioner(2, axis=3))
            tf.nn.conv2d(y, pk, 1, "VALID", name="partitioned_conv")  # reads the parts through a ConcatV2
            tf.nn.avg_pool2d(tf.transpose(y, [0, 3, 1, 2]), 2, 2, "VALID", data_format="NCHW", name="nchw_pool")
            y = tf.nn.max_pool2d(y, [3, 3], [1, 1], "SAME")
            y = tf.nn.avg_pool2d(y, 2, 2, "VALID")
            up = tf1.get_variable("up/kernel", initializer=init((2, 2, 5, 8)), use_resource=False)
            y = tf.nn.conv2d_transpose(y, up, [2, 4, 4, 5], [1, 2, 2, 1], "SAME")
        with tf.device("/device:CPU:1"):
            v = tf1.placeholder(tf.float32, [1, 4, 4, 4, 2], name="v")
            k3 = tf1.get_variable("conv3d/kernel", initializer=init((2, 2, 2, 2, 3)))
            z = tf.nn.conv3d(v, k3, [1, 1, 1, 1, 1], "SAME")
            z = tf.nn.max_pool3d(z, 2, 2, "VALID")
            z = tf.nn.avg_pool3d(z, [1, 1, 1], [1, 1, 1], "SAME", data_format="NDHWC")
            part = tf1.get_variable("part", [10, 3], partitioner=tf1.fixed_size_partitioner(3),
                                    initializer=tf1.random_normal_initializer(seed=1))
            tf1.get_variable("half", initializer=init((5,), np.float16))
            tf1.get_variable("bf16", initializer=tf.constant(init((4, 2)), tf.bfloat16))
            tf1.get_variable("i64", initializer=tf.constant([1, -2, 2**40], tf.int64))
            tf1.get_variable("words", initializer=tf.constant([b"abc", b"", b"\x00\xff" * 50]), dtype=tf.string)
            step = tf1.train.get_or_create_global_step()
        loss = tf.reduce_sum(y) + tf.reduce_sum(z) + tf.reduce_sum(tf.concat(list(part), 0))
        train = tf1.train.AdamOptimizer(0.01).minimize(loss, global_step=step)
        ema = tf.train.ExponentialMovingAverage(0.9)
        with tf.control_dependencies([train]):
            tf.group(ema.apply([dw, gamma]))
        saver = tf1.train.Saver(sharded=True)
        config = tf1.ConfigProto(allow_soft_placement=True)  # CPU:1 need not exist: shards follow device strings
        with tf1.Session(graph=graph, config=config) as sess:
            sess.run(tf1.global_variables_initializer())
            sess.run(train, {x: np.ones((2, 8, 8, 3), np.float32), v: np.ones((1, 4, 4, 4, 2), np.float32)})
            prefix = tmp_path_factory.mktemp("tf1") / "model.ckpt"
            saver.save(sess, str(prefix))
    return prefix


def _adam_step(tf, model, optimizer, shape) -> None:
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(model(tf.ones(shape), training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))


def _small_model(layers):
    inputs = layers.Input((6, 6, 3))
    x = layers.Conv2D(4, 3, padding="same", name="c1")(inputs)
    x = layers.BatchNormalization(name="bn")(x)
    x = layers.Flatten()(x)
    return x, inputs


@pytest.fixture(scope="session")
def tf2_keras3(tf, tmp_path_factory) -> Path:
    """``tf.train.Checkpoint(model=keras3_model, optimizer=Adam)`` after one Adam step."""
    import keras

    x, inputs = _small_model(keras.layers)
    model = keras.Model(inputs, keras.layers.Dense(2, name="d")(x))
    optimizer = keras.optimizers.Adam()
    _adam_step(tf, model, optimizer, (1, 6, 6, 3))
    return Path(tf.train.Checkpoint(model=model, optimizer=optimizer).save(str(tmp_path_factory.mktemp("k3") / "ckpt")))


@pytest.fixture(scope="session")
def tf2_tf_keras(tf, tmp_path_factory) -> Path:
    """The same with tf_keras (Keras 2) and its current Adam (slots in lists, no slot_variables)."""
    import tf_keras

    x, inputs = _small_model(tf_keras.layers)
    model = tf_keras.Model(inputs, tf_keras.layers.Dense(2, name="d")(x))
    optimizer = tf_keras.optimizers.Adam()
    _adam_step(tf, model, optimizer, (1, 6, 6, 3))
    return Path(tf.train.Checkpoint(model=model, optimizer=optimizer).save(str(tmp_path_factory.mktemp("k2") / "ckpt")))


@pytest.fixture(scope="session")
def tf2_legacy_slots(tf, tmp_path_factory) -> Path:
    """tf_keras's legacy Adam: the object graph records ``slot_variables`` (``.OPTIMIZER_SLOT`` keys)."""
    import tf_keras

    model = tf_keras.Sequential([tf_keras.layers.Dense(3, input_shape=(4,), name="d")])
    optimizer = tf_keras.optimizers.legacy.Adam()
    _adam_step(tf, model, optimizer, (2, 4))
    return Path(tf.train.Checkpoint(model=model, optimizer=optimizer).save(str(tmp_path_factory.mktemp("legacy") / "ckpt")))


@pytest.fixture(scope="session")
def savedmodel_tf_keras(tf, tmp_path_factory) -> Path:
    """A tf_keras model saved as SavedModel (has keras_metadata.pb)."""
    import tf_keras

    x, inputs = _small_model(tf_keras.layers)
    model = tf_keras.Model(inputs, tf_keras.layers.Dense(2, name="d")(x))
    path = tmp_path_factory.mktemp("sm") / "keras_sm"
    model.save(str(path), save_format="tf")
    return path


@pytest.fixture(scope="session")
def savedmodel_module(tf, tmp_path_factory) -> Path:
    """``tf.saved_model.save`` of a plain ``tf.Module`` (no Keras metadata)."""

    class Affine(tf.Module):
        def __init__(self):
            self.w = tf.Variable(np.arange(6, dtype=np.float32).reshape(3, 2), name="w")
            self.label = tf.Variable(b"affine", name="label")

        @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
        def __call__(self, x):
            return x @ self.w

    path = tmp_path_factory.mktemp("sm") / "module_sm"
    tf.saved_model.save(Affine(), str(path))
    return path


def assert_bit_exact(ours: np.ndarray, theirs: np.ndarray, dtype_name: str) -> None:
    """Same dtype, shape and bytes as TF's array (bfloat16: our uint16 bits vs TF's bits)."""
    if dtype_name == "bfloat16":
        theirs = theirs.view(np.uint16)
    assert ours.shape == theirs.shape, (ours.shape, theirs.shape)
    assert ours.dtype == theirs.dtype, (ours.dtype, theirs.dtype)
    if dtype_name == "string":
        assert all(type(s) is bytes for s in ours.ravel())
        assert ours.tolist() == theirs.tolist()
    else:
        assert ours.tobytes() == theirs.tobytes()  # raw element bytes in C order


@pytest.fixture(scope="session")
def savedmodel_tf1(tf, tmp_path_factory) -> Path:
    """A TF1 SavedModel (``tf.compat.v1.saved_model.Builder``): name-based variables and a graph."""
    tf1 = tf.compat.v1
    path = tmp_path_factory.mktemp("sm") / "tf1_sm"
    graph = tf.Graph()
    with graph.as_default(), tf1.Session(graph=graph) as sess:
        x = tf1.placeholder(tf.float32, [1, 6, 6, 2], name="x")
        kernel = tf1.get_variable("conv/kernel", initializer=np.ones((3, 3, 2, 4), np.float32))
        y = tf.nn.conv2d(x, kernel, 2, "SAME", name="conv")
        sess.run(tf1.global_variables_initializer())
        builder = tf1.saved_model.Builder(str(path))
        signature = tf1.saved_model.predict_signature_def({"x": x}, {"y": y})
        builder.add_meta_graph_and_variables(sess, ["serve"], signature_def_map={"serving_default": signature})
        builder.save()
    return path
