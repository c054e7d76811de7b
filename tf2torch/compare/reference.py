"""What every TensorFlow-side runner hands back, and the one lazy TensorFlow import.

A *probe* pairs one TF tensor (a Keras layer's output, a TF1 op's output) with the PyTorch module whose
forward hook gives the same value, plus a hint on the module's layout: ``"cf"`` when PyTorch keeps it
channels-first while TF has it channels-last, ``"keras"`` when both use the same axes.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import ModuleType

import numpy as np

from ..errors import MissingDependencyError

INSTALL_HINT = "pip install 'tf2torch[tf]'"


@contextmanager
def _quiet_fd2() -> Iterator[None]:
    """Silence file descriptor 2 while TF's C++ runtime starts: absl and the CUDA probe print there
    before TF_CPP_MIN_LOG_LEVEL is read ("Could not find cuda drivers ..."), which is noise in CI logs."""
    try:
        saved = os.dup(2)
    except OSError:  # no real stderr (embedded interpreter): nothing to silence
        yield
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def import_tf() -> ModuleType:
    """TensorFlow, or a one-line error naming the extra that installs it."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # TF's C++ start-up chatter, not ours to show
    try:
        with _quiet_fd2():
            import tensorflow as tf

            tf.config.list_logical_devices("CPU")  # device probing (CUDA) happens here, still silenced
    except ImportError as exc:
        raise MissingDependencyError(f"verify runs the original model in TensorFlow, which cannot be imported "
                                     f"({exc}); install it with: {INSTALL_HINT}") from None
    return tf


@contextmanager
def full_float32(tf: ModuleType) -> Iterator[None]:
    """TensorFloat-32 off while the reference runs (GPUs would otherwise round matmuls and convolutions
    to 10-bit mantissas, and every layer would differ from PyTorch's CPU float32); restored afterwards."""
    config = tf.config.experimental
    before = config.tensor_float_32_execution_enabled()
    config.enable_tensor_float_32_execution(False)
    try:
        yield
    finally:
        config.enable_tensor_float_32_execution(before)


@dataclass(frozen=True)
class Probe:
    name: str  # row name: the Keras layer, or the PyTorch module path (TF1 graphs)
    tf: str  # what TF computes it as: Keras layer name, TF tensor name
    module: str  # PyTorch module path to hook ("" when the row is skipped)
    prefer: str = "cf"  # layout hint for rank >= 3: "cf" (move PyTorch's axis 1 last) or "keras"
    skip: str = ""  # why this layer is listed but not compared
    activation: str = ""  # applied to the module's output first: Keras fused it into the layer, the user's
    # PyTorch model applies it separately (see ACTIVATIONS)


@dataclass
class TFRun:
    outputs: list[np.ndarray]
    output_names: list[str]
    layers: dict[str, np.ndarray] = field(default_factory=dict)  # probe name -> TF value


def align(actual: np.ndarray, ref_shape: tuple[int, ...], prefer: str) -> np.ndarray:
    """PyTorch's tensor in TF's layout: channels moved last when the module keeps them first.

    ``prefer`` decides when both readings fit the shape (e.g. 8x8 maps of 8 channels); otherwise the
    shape does. When neither fits, the preferred reading is returned and the row reports the shapes.
    """
    if actual.ndim < 3:
        return actual
    moved = np.moveaxis(actual, 1, -1)
    options = (moved, actual) if prefer == "cf" else (actual, moved)
    for candidate in options:
        if tuple(candidate.shape) == tuple(ref_shape):
            return candidate
    return options[0]


# Activations Keras layers fuse (``Conv2D(..., activation="relu")``), applied to a PyTorch module's output
# so it can be compared with the Keras layer's output. Others leave the layer uncompared.
ACTIVATIONS = {
    "relu": lambda x: np.maximum(x, 0),
    "relu6": lambda x: np.clip(x, 0, 6),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh,
    "hard_tanh": lambda x: np.clip(x, -1, 1),  # TFLite's fused RELU_N1_TO_1
    "softplus": lambda x: np.logaddexp(0, x),
}


def to_numpy(value: object) -> np.ndarray:
    array = value.numpy() if hasattr(value, "numpy") else np.asarray(value)
    return np.asarray(array)
