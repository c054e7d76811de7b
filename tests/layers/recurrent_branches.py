"""One model per Keras version holding many recurrent cases as branches, saved in each format and
converted once: unmasked cases read a float sequence, masked ones an Embedding(mask_zero=True) of ids
padded at the end, at the start, not at all, and entirely. Weights are seeded random. Used by the RNN(cell)
and Bidirectional-over-a-cell tests."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from tests.conftest import require_keras
from tests.util import convert_in_memory, max_abs

STEPS, FEATURES = 5, 3
IDS = np.array([[3, 4, 5, 0, 0, 0], [1, 2, 3, 4, 5, 6], [0, 0, 7, 8, 2, 1], [0, 0, 0, 0, 0, 0]], "int32")
FORMATS = ("k3.keras", "k3.h5", "k2.h5")
Build = Callable[[Any], Any]  # keras.layers -> the case's layer
Pairs = dict[str, list[tuple[np.ndarray, np.ndarray]]]  # case -> (Keras, converted) per output


def keras_for(fmt: str) -> Any:
    os.environ.setdefault("KERAS_BACKEND", "tensorflow")
    return require_keras("tf_keras" if fmt.startswith("k2") else "keras")


def _flat(value: Any) -> list[Any]:
    return [y for v in value for y in _flat(v)] if isinstance(value, (list, tuple)) else [value]


def run(tmp: Path, version: str, unmasked: Mapping[str, Build], masked: Mapping[str, Build], seed: int
        ) -> dict[str, Pairs]:
    """Every case's (Keras, converted) output pairs, per format of this Keras version ("k3", "k2")."""
    keras = keras_for(version)
    layers = keras.layers
    seq = keras.Input((STEPS, FEATURES), name="sequence")
    ids = keras.Input((IDS.shape[1],), dtype="int32", name="ids")
    embedded = layers.Embedding(10, 4, mask_zero=True)(ids)
    branches = {case: build(layers)(seq) for case, build in unmasked.items()}
    branches |= {case: build(layers)(embedded) for case, build in masked.items()}
    outputs, where = [], {}
    for case, ys in branches.items():
        ys = _flat(ys)  # Keras 3 returns a stack's states nested per cell; the model's outputs are flat
        where[case] = slice(len(outputs), len(outputs) + len(ys))
        outputs += ys
    model = keras.Model([seq, ids], outputs)
    rng = np.random.default_rng(seed)
    model.set_weights([rng.normal(0.0, 0.5, w.shape).astype(np.float32) for w in model.get_weights()])
    xs = [rng.normal(size=(len(IDS), STEPS, FEATURES)).astype(np.float32), IDS]
    expected = [np.asarray(y) for y in model(xs, training=False)]
    results = {}
    for fmt in (f for f in FORMATS if f.startswith(version)):
        path = tmp / f"model.{fmt.split('.')[-1]}"
        model.save(path)
        converted, _ = convert_in_memory(path)
        with torch.no_grad():
            actual = [t.numpy() for t in converted(*(torch.from_numpy(x) for x in xs))]
        assert len(actual) == len(expected)
        results[fmt] = {case: list(zip(expected[s], actual[s], strict=True)) for case, s in where.items()}
    return results


def cached(tmp_path_factory: Any, unmasked: Mapping[str, Build], masked: Callable[[str], Mapping[str, Build]],
           seed: int) -> Callable[[str], Pairs]:
    """fmt -> its pairs, each Keras version's model built once (``masked(version)``: its masked cases)."""
    cache: dict[str, Pairs] = {}

    def get(fmt: str) -> Pairs:
        if fmt not in cache:
            version = fmt.split(".")[0]
            cache.update(run(tmp_path_factory.mktemp(version), version, unmasked, masked(version), seed))
        return cache[fmt]

    return get


def check(fmt: str, case: str, pairs: list[tuple[np.ndarray, np.ndarray]]) -> None:
    for i, (expected, actual) in enumerate(pairs):
        error = max_abs(actual, expected)
        print(f"{fmt} {case} output {i} {expected.shape}: max abs error {error:.2e}")
        assert actual.shape == expected.shape
        torch.testing.assert_close(torch.from_numpy(actual), torch.from_numpy(expected), atol=1e-5, rtol=1e-5)
