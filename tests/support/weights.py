"""One weight randomiser for every test that builds a model: seeded values chosen by the variable's
leaf name, so a converter that drops, swaps or misreads a weight or a BatchNorm statistic shows up.

A fresh model's norms sit at ones and zeros and its BatchNorm statistics at 0 and 1, which hide a
gamma/beta swap or a mean read as a variance: every float variable gets a value. Variances stay in
[0.5, 1.5] (positive, away from the epsilon), scales near one, and the kernels of deep nets can be
scaled by their fan-in so activations stay O(1) (well-conditioned: a float32 comparison stays tight).

``Profile`` keeps each suite's distribution (their figures were measured with it); ``value`` is the rule.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

_VARIANCES = ("moving_variance", "variance")
_SCALES = ("gamma", "scale")
_SHIFTS = ("moving_mean", "mean", "beta", "bias")


@dataclass(frozen=True)
class Profile:
    spread: float = 0.2  # standard deviation of shifts, and of kernels under kernels="spread"
    scales: str = "near_one"  # norm scales: "near_one" 1 + N(0, spread), "uniform" U(0.5, 1.5)
    kernels: str = "spread"  # "spread" N(0, spread), "fan_in" N(0, 1/sqrt(fan_in)), "he" N(0, sqrt(2/fan_in)) for 4-D


#: Keras layer tests and keras.applications: deep nets stay well-conditioned
LAYERS = Profile(spread=0.2, scales="uniform", kernels="fan_in")
#: keras-hub backbones and tasks
KERAS_HUB = Profile(spread=0.3)
#: transformers' TF classes and Google's BERT
TRANSFORMERS = Profile(spread=0.2)
#: TF-slim nets (TF1 graphs): He-scaled conv kernels
SLIM = Profile(spread=0.2, kernels="he")


def leaf(name: str) -> str:
    """``conv1/kernel:0`` -> ``kernel``; Keras 3 paths and TF1 op names alike."""
    return name.split(":")[0].rsplit("/", 1)[-1]


def value(name: str, shape: tuple[int, ...], rng: np.random.Generator, profile: Profile) -> np.ndarray | None:
    """A random value for the variable ``name`` (its leaf decides), or None to keep it (an index table)."""
    last, lower = leaf(name), name.lower()
    if "position_index" in lower:  # Swin's relative-position index: a table of indices, not a weight
        return None
    if last in _VARIANCES or "moving_variance" in lower:
        return rng.uniform(0.5, 1.5, shape)
    if last.startswith(_SCALES) or ("norm" in lower and last == "weight"):
        return rng.uniform(0.5, 1.5, shape) if profile.scales == "uniform" else 1 + rng.normal(0, profile.spread, shape)
    if last in _SHIFTS:
        return rng.normal(0.0, profile.spread, shape)
    if last == "alpha":  # PReLU slopes
        return rng.uniform(0.0, 0.5, shape)
    if profile.kernels == "fan_in":  # (a vector counts fan-in 1)
        fan_in = int(np.prod(shape[:-2] if "depthwise" in last else shape[:-1])) if len(shape) > 1 else 1
        return rng.normal(0.0, 1.0 / np.sqrt(max(fan_in, 1)), shape)  # depthwise: each output sees one channel
    if profile.kernels == "he" and len(shape) == 4:
        return rng.normal(0.0, np.sqrt(2.0 / np.prod(shape[:3])), shape)
    return rng.normal(0.0, profile.spread, shape)


def randomise_keras(model: Any, seed: int, profile: Profile) -> None:
    """Every float variable of a Keras 2 or 3 model (nested models and Task backbones included)."""
    rng = np.random.default_rng(seed)
    for w in model.weights:
        dtype = np.dtype(getattr(w.dtype, "as_numpy_dtype", None) or getattr(w.dtype, "name", w.dtype))
        if dtype.kind != "f":
            continue  # Normalization's int "count", lookup tables
        new = value(getattr(w, "path", None) or w.name, tuple(int(s) for s in w.shape), rng, profile)
        if new is not None:
            w.assign(new.astype(dtype))
    for layer in _all_layers(model):
        # Normalization caches mean/variance as constants when built: assigning its variables does
        # not reach call() until finalize_state() (Keras runs it after loading a file, too).
        if hasattr(layer, "finalize_state"):
            layer.finalize_state()


def randomise_tf1(tf1: Any, sess: Any, seed: int | np.random.Generator, profile: Profile = SLIM) -> None:
    """Every float global variable of a TF1 graph, loaded into ``sess``."""
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    for v in tf1.global_variables():
        if not v.dtype.base_dtype.is_floating:
            continue  # global_step
        new = value(v.op.name, tuple(v.shape), rng, profile)
        if new is not None:
            v.load(new.astype(v.dtype.base_dtype.as_numpy_dtype), sess)


def _all_layers(model: Any) -> Iterator[Any]:
    for layer in getattr(model, "layers", []):
        yield layer
        yield from _all_layers(layer)
