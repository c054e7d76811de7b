"""Numeric preprocessing layers users keep inside models: Discretization and CategoryEncoding, as Keras
computes them at inference; the encodings are shared with IntegerLookup (preprocessing_lookup.py).

Keras 3's ``numerical_utils.encode_categorical_inputs`` (TF backend): "one_hot" appends a depth axis
(replacing a last axis of 1); "multi_hot" / "count" reduce the one-hot rows over axis 1 (TF's bincount
fast path for rank <= 2 computes the same numbers; ids >= depth count in neither). tf_keras encodes
rank <= 2 only, with the same numbers. Refused: sparse outputs, a batch axis the encoding would sum
away (rank-1 inputs to multi_hot / count), and non-float32 dtype policies.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..codegen import nodes as n
from ..map import layouts
from .base import Converted, Ctx, Module, Op, Param, Shape, TensorInfo
from .common import cfg_bool, cfg_int, cfg_str
from .registry import converter

ENCODINGS = ("one_hot", "multi_hot", "count")
ENCODER = "KerasCategoryEncoding"


def policy(ctx: Ctx) -> str | None:
    """The layer's dtype (policy) name as saved: "float32", "int64", "mixed_float16"; None when unsaid."""
    value = ctx.config.get("dtype")
    if isinstance(value, dict):  # Keras 3: {"class_name": "DTypePolicy", "config": {"name": "float32"}}
        inner = value.get("config")
        value = inner.get("name") if isinstance(inner, dict) else inner
    if value is not None and not isinstance(value, str):
        raise ctx.unsupported(f"config 'dtype' should be a dtype name, found {value!r}")
    return value


def float32_policy(ctx: Ctx) -> None:
    name = policy(ctx)
    if name not in (None, "float32"):
        raise ctx.unsupported(f"dtype {name!r}: only float32 outputs are converted")


def not_sparse(ctx: Ctx) -> None:
    if cfg_bool(ctx, "sparse", False):
        raise ctx.unsupported("sparse=True (a tf.SparseTensor output) is not converted", "save it with sparse=False")


def encode(ctx: Ctx, mode: str, depth: int, shape: Shape, sample_axis_ok: bool,
           suffix: str = "encode") -> tuple[Op, TensorInfo]:
    """The op encoding integer ids of ``shape`` (Keras, no batch) into ``depth`` columns, and its output.

    ``sample_axis_ok``: multi_hot / count may reduce axis 1 of a rank > 2 input (Discretization declares
    that shape). CategoryEncoding and IntegerLookup declare ``shape[:-1] + (depth,)`` there, which is not
    what Keras computes: refused.
    """
    squeeze = False
    if mode == "one_hot":
        if shape and shape[-1] is None:
            raise ctx.unsupported("one_hot over a last axis of unknown size: Keras replaces an axis of 1 and "
                                  "appends one otherwise", "save the model with a fixed input shape")
        squeeze = bool(shape) and shape[-1] == 1
        out: Shape = (*shape[:-1], depth) if squeeze else (*shape, depth)
    elif not shape:
        raise ctx.unsupported(f"{mode} of a rank-1 input sums over the batch axis (one row for the whole "
                              "batch)", "give the input a last axis: shape (N, 1)")
    elif len(shape) > 1 and not (sample_axis_ok and ctx.keras_version == 3):
        declared, computed = (*shape[:-1], depth), (*shape[1:], depth)
        raise ctx.unsupported(f"{mode} of a rank-{len(shape) + 1} input: Keras builds the model on shape (N, "
                              f"{', '.join(map(str, declared))}) but computes (N, {', '.join(map(str, computed))}), "
                              "reducing axis 1")
    else:
        out = (*shape[1:], depth)
    op = Op(n.call(n.M, n.X), Module(ENCODER, (depth, mode), (("squeeze", True),) if squeeze else ()), suffix)
    return op, TensorInfo(out, "keras")


def _boundaries(ctx: Ctx) -> np.ndarray:
    value: Any = ctx.config.get("bin_boundaries")
    if value is None:
        raise ctx.unsupported("no bin_boundaries in the config (num_bins only: never adapted, or a tf_keras "
                              "layer adapted into weights tf2torch does not read)",
                              "save the layer with bin_boundaries=[...]")
    if not isinstance(value, list) or any(isinstance(b, bool) or not isinstance(b, (int, float)) for b in value):
        raise ctx.unsupported(f"bin_boundaries should be a list of numbers, found {value!r}")
    if any(math.isnan(b) for b in value):
        raise ctx.unsupported("a NaN bin boundary")
    with np.errstate(over="ignore"):  # TF's float attr rounds 1e39 to inf too
        bounds = np.asarray(value, dtype=np.float64).astype(np.float32)  # Bucketize's boundaries: float32
    if np.any(np.diff(bounds) < 0):
        raise ctx.unsupported("bin_boundaries are not sorted (TF's Bucketize refuses them at call time)")
    # TF's CPU kernels read denormals as zero: a boundary of 1e-45 splits where 0.0 does
    return np.where(np.abs(bounds) < np.finfo(np.float32).tiny, np.float32(0), bounds)


@converter("Discretization", wants="keras")
def discretization(ctx: Ctx) -> Converted:
    """Bucket indices (Keras 3: int32; tf_keras: the layer's integer dtype, int64 by default), then the
    encoding over len(bin_boundaries) + 1 buckets."""
    bounds = _boundaries(ctx)
    mode = cfg_str(ctx, "output_mode", "int", ("int", *ENCODINGS))
    not_sparse(ctx)
    out_dtype = "int32"
    if mode != "int":
        float32_policy(ctx)
    elif ctx.keras_version == 2:  # tf_keras buckets into the layer's own dtype
        out_dtype = policy(ctx) or "int64"
        if out_dtype not in ("int32", "int64"):
            raise ctx.unsupported(f"dtype {out_dtype!r} for output_mode='int' (int32 and int64 are converted)")
    bucket = Op(n.call(n.M, n.X), Module("KerasDiscretization", (len(bounds), out_dtype)))
    params = (Param("", "bin_boundaries", layouts.IDENTITY, const=bounds),)
    helpers: tuple[str, ...] = ("KerasDiscretization",)
    if mode == "int":
        return Converted((bucket,), (TensorInfo(ctx.x.shape, "keras"),), params, helpers=helpers)
    op, out = encode(ctx, mode, len(bounds) + 1, ctx.x.shape, sample_axis_ok=True)
    return Converted((bucket, op), (out,), params, helpers=(*helpers, ENCODER))


@converter("CategoryEncoding", wants="keras")
def category_encoding(ctx: Ctx) -> Converted:
    """one_hot / multi_hot / count of integer ids in [0, num_tokens), as float32."""
    if len(ctx.call.inputs) > 1 or ctx.call.kwargs.get("count_weights") is not None:
        raise ctx.unsupported("count_weights are not converted")
    depth = cfg_int(ctx, "num_tokens")
    mode = cfg_str(ctx, "output_mode", "multi_hot", ("binary", *ENCODINGS))
    not_sparse(ctx)
    float32_policy(ctx)
    if depth < 1:
        raise ctx.unsupported(f"num_tokens={depth}")
    mode = "multi_hot" if mode == "binary" else mode  # Keras's old name for it
    op, out = encode(ctx, mode, depth, ctx.x.shape, sample_axis_ok=False, suffix="")
    return Converted((op,), (out,), helpers=(ENCODER,))
