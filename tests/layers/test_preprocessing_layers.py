"""Discretization, CategoryEncoding, IntegerLookup and AutoContrast inside real Keras models, converted
and compared with Keras on seeded inputs that hit the edge cases: values on and beside bin boundaries,
NaN and infinities, ids out of range, out-of-vocabulary and mask tokens, constant images and channels.

Ids, buckets and encodings must match exactly (integer outputs in Keras's dtype; IntegerLookup's
encodings are float32 where Keras 3's eager call returns int64: the dtype its model was built on); the
Dense / Conv2D after them within 1e-5. The refusals are in test_preprocessing_refused.py.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import torch

from tests.conftest import require_keras
from tests.layers.harness import (
    diff,
    import_isolated,
    keras_outputs,
    randomise,
    ruff_check,
    run_torch,
    to_keras_layout,
)
from tests.util import convert_in_memory

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
RTOL = ATOL = 1e-5
BOUNDS = [-1.0, -0.25, 0.0, 0.1, 0.5, 0.5, 2.0]  # 0.1 is inexact in float32; 0.5 twice (an empty bucket)
VOCAB = [12, 3, 40, 7, 25]
BATCH = 32


def floats(shape: tuple, seed: int) -> np.ndarray:
    """Values on each boundary, one float32 ulp either side (beside 0.0: +-1e-45, denormals TF's kernels read
    as 0.0), NaN, +-inf and normals, shuffled."""
    rng = np.random.default_rng(seed)
    b = np.asarray(BOUNDS, np.float32)
    pool = np.concatenate([b, np.nextafter(b, np.float32(-np.inf)), np.nextafter(b, np.float32(np.inf)),
                           np.float32([np.nan, np.inf, -np.inf, 0.1]), rng.normal(0, 1.5, 64).astype(np.float32)])
    return rng.choice(pool, (BATCH, *shape))


def ids(shape: tuple, low: int, high: int, seed: int, pool: list[int] | None = None) -> np.ndarray:
    rng = np.random.default_rng(seed)
    values = rng.integers(low, high, (BATCH, *shape))
    if pool:  # half from the vocabulary, half anything (out of vocabulary, the mask token, negatives)
        values = np.where(rng.random(values.shape) < 0.5, rng.choice(pool, values.shape), values)
    return values.astype(np.int64)


def images(shape: tuple, low: float, high: float, seed: int) -> np.ndarray:
    x = np.random.default_rng(seed).uniform(low, high, (BATCH, *shape)).astype(np.float32)
    x[0] = low + (high - low) / 3  # a constant image
    x[1, :, :, 0] = high  # a constant channel
    x[2, 1, 2, 1] = np.nan  # a NaN pixel: its channel keeps the input
    x[3] = np.clip(x[3] * 0.01 + low, low, high)  # a low-contrast image
    return x


def dense_head(keras: Any, x: Any, name: str) -> Any:
    return keras.layers.Dense(3, name=f"{name}_fc")(keras.layers.Flatten()(x) if len(x.shape) > 2 else x)


def build(keras: Any, case: Case) -> Any:
    """Input -> the layer -> (its output, and a Dense over it, an Embedding then a Dense, or a Conv2D)."""
    x = keras.Input(case.shape, dtype=case.dtype, name="x")
    y = case.layer(keras)(x)
    head = case.head
    if head == "embed":
        z = keras.layers.Embedding(64, 4, name="embed")(y)
        z = keras.layers.Dense(3, name="fc")(keras.layers.Flatten()(z))
    elif head == "conv":
        z = keras.layers.Conv2D(2, 3, name="conv")(y)
    else:
        z = dense_head(keras, y, "head")
    return keras.Model(x, [y, z], name="m")


@dataclass(frozen=True)
class Case:
    layer: Callable[[Any], Any]  # (keras module) -> the layer
    shape: tuple
    dtype: str
    inputs: Callable[[], np.ndarray]
    head: str = "dense"  # after the layer: "dense", "embed" (its ids into an Embedding) or "conv"
    formats: tuple[str, ...] = ("keras",)
    module: str = "keras"  # or "tf_keras" (saved as .h5)
    float_ids: bool = False  # IntegerLookup's encodings: float32 here, int64 from Keras 3's eager call


def layer(cls: str, *args: Any, **kwargs: Any) -> Callable[[Any], Any]:
    return lambda keras: getattr(keras.layers, cls)(*args, name="pre", **kwargs)


def disc(mode: str = "int", bounds: list[float] = BOUNDS) -> Callable[[Any], Any]:
    return layer("Discretization", bounds, output_mode=mode)


def adapted_disc(keras: Any) -> Any:
    """Keras 3 saves adapted boundaries in the config (beside num_bins); tf_keras in weights (refused)."""
    layer = keras.layers.Discretization(num_bins=5, name="pre")
    layer.adapt(np.random.default_rng(28).normal(size=(100, 6)))
    return layer


def lookup(**kwargs: Any) -> Callable[[Any], Any]:
    return layer("IntegerLookup", vocabulary=VOCAB, **kwargs)


BOTH = ("keras", "h5")
K2 = {"module": "tf_keras", "formats": ("h5",)}
CASES: dict[str, Case] = {
    "disc-int": Case(disc(), (6,), "float32", lambda: floats((6,), 1), "embed", BOTH),
    "disc-one_hot": Case(disc("one_hot"), (6,), "float32", lambda: floats((6,), 2), formats=BOTH),
    "disc-one_hot-axis1": Case(disc("one_hot"), (1,), "float32", lambda: floats((1,), 3)),
    "disc-multi_hot": Case(disc("multi_hot"), (6,), "float32", lambda: floats((6,), 4)),
    "disc-count-rank3": Case(disc("count"), (3, 4), "float32", lambda: floats((3, 4), 5), formats=BOTH),
    "disc-adapted": Case(adapted_disc, (6,), "float32", lambda: floats((6,), 28), "embed", BOTH),
    "disc-int-ids": Case(disc(), (6,), "int32", lambda: ids((6,), -3, 4, 27).astype(np.int32), "embed"),
    "disc-int-image": Case(disc("int", [-0.5, 0.0, 0.5]), (5, 5, 3), "float32", lambda: floats((5, 5, 3), 6),
                           "embed"),
    "cat-one_hot": Case(layer("CategoryEncoding", 6, output_mode="one_hot"), (5,), "int32",
                        lambda: ids((5,), -2, 9, 7).astype(np.int32), formats=BOTH),
    "cat-one_hot-axis1": Case(layer("CategoryEncoding", 6, output_mode="one_hot"), (1,), "int64",
                              lambda: ids((1,), -2, 9, 8)),
    "cat-multi_hot": Case(layer("CategoryEncoding", 6), (5,), "int64", lambda: ids((5,), 0, 9, 9), formats=BOTH),
    "cat-count": Case(layer("CategoryEncoding", 6, output_mode="count"), (5,), "int64", lambda: ids((5,), 0, 9, 10)),
    "cat-float-ids": Case(layer("CategoryEncoding", 4, output_mode="count"), (4,), "float32",  # truncated
                          lambda: np.random.default_rng(11).uniform(-0.9, 5.5, (BATCH, 4)).astype(np.float32)),
    "lookup-int": Case(lookup(), (6,), "int64", lambda: ids((6,), -5, 50, 12, VOCAB), "embed", BOTH),
    "lookup-mask-oov3": Case(lookup(mask_token=0, num_oov_indices=3), (6,), "int64",
                             lambda: ids((6,), -9, 50, 13, [*VOCAB, 0]), "embed", BOTH),
    "lookup-oov0": Case(lookup(num_oov_indices=0), (6,), "int64",
                        lambda: np.random.default_rng(14).choice(VOCAB, (BATCH, 6)).astype(np.int64), "embed"),
    "lookup-invert": Case(lookup(mask_token=0, oov_token=1, invert=True), (6,), "int64",
                          lambda: ids((6,), -2, 9, 15), "embed"),
    "lookup-one_hot-mask": Case(lookup(mask_token=0, output_mode="one_hot"), (6,), "int64",
                                lambda: ids((6,), -5, 50, 16, [*VOCAB, 0]), formats=BOTH, float_ids=True),
    "lookup-multi_hot-pad": Case(lookup(max_tokens=10, pad_to_max_tokens=True, output_mode="multi_hot"), (6,),
                                 "int64", lambda: ids((6,), -5, 50, 17, VOCAB), float_ids=True),
    "lookup-count-oov2": Case(lookup(num_oov_indices=2, output_mode="count"), (6,), "int64",
                              lambda: ids((6,), -5, 50, 18, VOCAB), float_ids=True),
    "contrast-0-255": Case(layer("AutoContrast"), (5, 6, 3), "float32", lambda: images((5, 6, 3), 0.0, 255.0, 19),
                           "conv"),
    "contrast-0-1": Case(layer("AutoContrast", value_range=(1, 0)), (5, 6, 3), "float32",
                         lambda: images((5, 6, 3), 0.0, 1.0, 20), "conv"),
    "contrast-neg": Case(layer("AutoContrast", value_range=(-1, 1.5)), (5, 6, 3), "float32",
                         lambda: images((5, 6, 3), -1.0, 1.5, 21)),
    # tf_keras: int64 buckets and ids, float32 encodings of rank <= 2
    "k2-disc-int": Case(disc(), (6,), "float32", lambda: floats((6,), 22), "embed", **K2),
    "k2-disc-multi_hot": Case(disc("multi_hot"), (6,), "float32", lambda: floats((6,), 23), **K2),
    "k2-cat-count": Case(layer("CategoryEncoding", 6, output_mode="count"), (5,), "int64",
                         lambda: ids((5,), 0, 6, 24), **K2),
    "k2-lookup-mask-oov2": Case(lookup(mask_token=0, num_oov_indices=2), (6,), "int64",
                                lambda: ids((6,), -9, 50, 25, [*VOCAB, 0]), "embed", **K2),
    "k2-lookup-multi_hot": Case(lookup(output_mode="multi_hot"), (6,), "int64",
                                lambda: ids((6,), -5, 50, 26, VOCAB), **K2),
}


def check(path: Any, keras_model: Any, x: np.ndarray, label: str, float_ids: bool = False) -> Any:
    """Convert ``path``, run it and ``keras_model`` on ``x``; exact for ids and encodings (Keras's dtype,
    or float32 for Keras's int64 encodings), 1e-5 for float layers after them. NaN where Keras has NaN."""
    torch_model, conversion = convert_in_memory(path)
    outs = run_torch(torch_model, conversion, [x])
    layouts = [entry["layout"] for entry in conversion.report.interface["outputs"]]
    for i, (t, k, layout) in enumerate(zip(outs, keras_outputs(keras_model, [x]), layouts, strict=True)):
        t = to_keras_layout(t, k, layout, f"{label} output {i}")
        print(f"{label} output {i} {tuple(k.shape)} keras {k.dtype} torch {t.dtype}: "
              f"{diff(torch.nan_to_num(t), np.nan_to_num(k))}")
        if k.dtype.kind in "iu":
            expected = torch.float32 if float_ids and i == 0 else getattr(torch, str(k.dtype))
            assert t.dtype == expected, (t.dtype, k.dtype)
            assert np.array_equal(t.numpy(), k), f"{label} output {i} differs"
        else:
            torch.testing.assert_close(t, torch.from_numpy(k), rtol=RTOL, atol=ATOL, equal_nan=True)
    return conversion


@pytest.mark.parametrize("name,fmt", [(n, f) for n, case in CASES.items() for f in case.formats])
def test_preprocessing_layer_matches_keras(tmp_path, name: str, fmt: str) -> None:
    case = CASES[name]
    keras = require_keras(case.module)
    keras.utils.set_random_seed(0)
    m = build(keras, case)
    randomise(m, seed=0)
    path = tmp_path / f"model.{fmt}"
    m.save(path)
    check(path, m, case.inputs(), f"{name} {fmt}", case.float_ids)


def _adapted(keras: Any, nested: bool) -> tuple[Any, np.ndarray]:
    """An adapted IntegerLookup (mask -7, two OOV slots): its vocabulary lives in the archive's assets."""
    keras.utils.set_random_seed(0)
    data = np.random.default_rng(30).integers(-20, 60, (200, 4))
    adapted = keras.layers.IntegerLookup(mask_token=-7, num_oov_indices=2, max_tokens=40, name="lookup")
    adapted.adapt(data)
    x = keras.Input((6,), dtype="int64", name="x")
    if nested:  # assets/layers/functional/layers/integer_lookup/vocabulary.txt
        inner = keras.Input((6,), dtype="int64")
        y = keras.Model(inner, adapted(inner), name="inner")(x)
    else:
        y = adapted(x)
    z = keras.layers.Dense(3)(keras.layers.Flatten()(keras.layers.Embedding(64, 4)(y)))
    m = keras.Model(x, [y, z], name="m")
    if keras.__name__ == "keras":  # (tf_keras lists the table's vocabulary among the weights: left as built)
        randomise(m, seed=0)
    return m, ids((6,), -25, 70, 31, [-7])


@pytest.mark.parametrize("module,nested", [("keras", False), ("keras", True), ("tf_keras", False)])
def test_adapted_integer_lookup_reads_its_vocabulary_from_the_keras_archive(tmp_path, module: str,
                                                                           nested: bool) -> None:
    keras = require_keras(module)
    m, x = _adapted(keras, nested)
    path = tmp_path / "model.keras"
    m.save(path)
    conversion = check(path, m, x, f"adapted {module} nested={nested}")
    check(path, keras.models.load_model(path), x, f"adapted {module} nested={nested}, reloaded")
    assert any("vocabulary.txt" in n for n in conversion.report.notes), conversion.report.notes


def test_generated_preprocessing_helpers_pass_ruff_and_import_with_torch_only(tmp_path) -> None:
    keras = require_keras()
    x = keras.Input((6,), name="x")
    h = keras.layers.Discretization(BOUNDS, output_mode="one_hot")(x)
    n = keras.layers.IntegerLookup(vocabulary=VOCAB, num_oov_indices=2, mask_token=0)(disc()(keras)(x))
    image = keras.layers.AutoContrast()(keras.layers.Reshape((2, 3, 1))(x))
    m = keras.Model(x, [h, n, image], name="helpers")
    m.save(tmp_path / "model.keras")
    source = check(tmp_path / "model.keras", m, floats((6,), 40), "helpers").model_source
    for helper in ("KerasDiscretization", "KerasIntegerLookup", "KerasCategoryEncoding", "KerasAutoContrast"):
        assert f"class {helper}(nn.Module)" in source
    ruff_check(source, tmp_path / "model.py")
    import_isolated(source, tmp_path / "model.py")
