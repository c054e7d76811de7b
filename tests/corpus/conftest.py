"""The third-party corpus: models built from their authors' own packages with random, seeded weights.

Nothing is downloaded: every model is built from a small config. Weights are all randomised (a fresh
Hugging Face model has every LayerNorm at ones and zeros, which would hide a swapped gamma/beta), BN
statistics included; the nets are shallow, so float32 drift stays far below the tolerance.
"""

from __future__ import annotations

import os

import numpy as np

from tests.conftest import require_package


def require_transformers():
    """transformers 4.x with its TF classes (the test extra); fails under TF2TORCH_REQUIRE_TF=1."""
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # transformers' TF classes are tf_keras (Keras 2) models
    return require_package("transformers")


def randomise_tf(model, seed: int) -> None:
    """Every variable of a Keras model random: norms' scales near 1, variances in [0.5, 1.5]."""
    rng = np.random.default_rng(seed)
    for weight in model.weights:
        name = weight.name.lower()
        shape = tuple(weight.shape)
        if "moving_variance" in name:
            value = rng.uniform(0.5, 1.5, shape)
        elif name.split("/")[-1].startswith("gamma") or ("norm" in name and "weight" in name.split("/")[-1]):
            value = 1 + rng.normal(0, 0.2, shape)
        elif "position_index" in name:  # an index table, not a weight (Swin): keep it
            continue
        else:
            value = rng.normal(0, 0.2, shape)
        weight.assign(value.astype(weight.dtype.as_numpy_dtype))
