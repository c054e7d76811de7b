"""Moving test inputs and outputs between TF's channels-last and the generated model's channels-first axes.

One place for the rule the tests apply on their side of a comparison (the converter's own rule is
``tf2torch/interface.py``; tests follow what the conversion report's ``interface`` says, or rank >= 4).
"""

from __future__ import annotations

import numpy as np
import torch


def cl_to_cf(a: np.ndarray) -> torch.Tensor:
    """Channels-last array (N, *spatial, C) as a channels-first tensor (N, C, *spatial), any rank."""
    return torch.from_numpy(np.ascontiguousarray(np.moveaxis(np.asarray(a), -1, 1)))


def to_torch_layout(x: np.ndarray) -> torch.Tensor:
    """NHWC (TF) -> NCHW (torch) for rank >= 4; other ranks unchanged."""
    return cl_to_cf(x) if np.ndim(x) >= 4 else torch.from_numpy(np.ascontiguousarray(x))


def to_tf_layout(t: torch.Tensor) -> np.ndarray:
    """NCHW (torch) -> NHWC (TF) for rank >= 4; other ranks unchanged."""
    t = t.detach()
    return (t.movedim(1, -1) if t.dim() >= 4 else t).numpy()


def as_interface(x: np.ndarray, layout: str) -> torch.Tensor:
    """A Keras-layout input in the layout the report's ``interface`` gives ("channels_first" / "keras")."""
    return cl_to_cf(x) if layout == "channels_first" else torch.from_numpy(np.ascontiguousarray(x))


def to_keras_layout(t: torch.Tensor, keras_out: np.ndarray, layout: str, where: str) -> torch.Tensor:
    """A model output moved back to Keras's axes; its shape must be what the interface says."""
    keras_shape = tuple(keras_out.shape[1:])
    expected = (keras_shape[-1], *keras_shape[:-1]) if layout == "channels_first" else keras_shape
    assert tuple(t.shape[1:]) == expected, f"{where}: torch shape {tuple(t.shape)}, expected (N, *{expected})"
    return t.movedim(1, -1) if layout == "channels_first" else t
