"""The third-party corpus: models built from their authors' own packages with random, seeded weights.

Nothing is downloaded: every model is built from a small config. Weights are all randomised (a fresh
Hugging Face model has every LayerNorm at ones and zeros, which would hide a swapped gamma/beta), BN
statistics included; the nets are shallow, so float32 drift stays far below the tolerance.
"""

from __future__ import annotations

import os

from tests.conftest import require_package
from tests.support.weights import TRANSFORMERS, randomise_keras


def require_transformers():
    """transformers 4.x with its TF classes (the test extra); fails under TF2TORCH_REQUIRE_TF=1."""
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")  # transformers' TF classes are tf_keras (Keras 2) models
    return require_package("transformers")


def randomise_tf(model, seed: int) -> None:
    """Every variable of a Keras model random (``tests/support/weights``): norms' scales near 1, variances in
    [0.5, 1.5]."""
    randomise_keras(model, seed, TRANSFORMERS)
