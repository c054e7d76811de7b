"""TensorFlow references for the SAME-padding tests: TF computes the expected numbers, never us.

Inputs are small (a few channels), seeded from the case id so every case is reproducible alone.
"""

from __future__ import annotations

import os
import zlib

import numpy as np
import torch

from tests.conftest import require_keras, require_tf
from tests.support.layouts import cl_to_cf  # noqa: F401 - the grids import it from here

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")


def tf():
    """The tensorflow module (skip, or fail under TF2TORCH_REQUIRE_TF=1, when missing)."""
    return require_tf()


def keras():
    """Keras 3 (TensorFlow backend)."""
    return require_keras("keras")


def rng(case_id: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(case_id.encode()))


def randn(case_id: str, *shape: int) -> np.ndarray:
    return rng(case_id).standard_normal(shape).astype(np.float32)


def weights(case_id: str, *shape: int) -> np.ndarray:
    """Random kernel scaled by 1/sqrt(fan-in, taken as all but the last dim), like a trained net's,
    so outputs are O(1) and an absolute 1e-5 bound means a few float32 ulps."""
    return randn(case_id, *shape) / np.float32(np.sqrt(np.prod(shape[:-1])))


def case_label() -> str:
    """The running test's id, for printed error sizes."""
    return os.environ.get("PYTEST_CURRENT_TEST", "?").split(" ")[0].rpartition("::")[2]


def conv_weight(w: np.ndarray) -> torch.Tensor:
    """TF conv kernel (*k, in, out) -> torch (out, in, *k)."""
    n = w.ndim - 2
    return torch.from_numpy(np.ascontiguousarray(w.transpose(n + 1, n, *range(n))))


def transpose_weight(w: np.ndarray) -> torch.Tensor:
    """TF transposed-conv kernel (*k, out, in) -> torch ConvTranspose (in, out, *k)."""
    n = w.ndim - 2
    return torch.from_numpy(np.ascontiguousarray(w.transpose(n + 1, n, *range(n))))


def depthwise_weight(w: np.ndarray) -> torch.Tensor:
    """TF depthwise kernel (kh, kw, in, mult) -> torch grouped conv (in * mult, 1, kh, kw)."""
    kh, kw, cin, mult = w.shape
    return torch.from_numpy(np.ascontiguousarray(w.reshape(kh, kw, cin * mult).transpose(2, 0, 1)[:, None]))


def max_abs_diff(ours: torch.Tensor, theirs: torch.Tensor) -> float:
    return (ours - theirs).abs().max().item() if ours.numel() else 0.0
