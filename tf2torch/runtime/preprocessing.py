"""Helper modules for Keras's numeric preprocessing layers (layers/preprocessing*.py), inlined by source
into generated files like those of ``runtime/keras_layers.py``: each depends only on ``torch`` / ``nn``.
"""

from __future__ import annotations

import torch
from torch import nn


class KerasDiscretization(nn.Module):
    """keras.layers.Discretization's bucket of each value, as TF's Bucketize finds it: the number of
    boundaries <= x (an upper bound, so a value on a boundary goes to the bucket above it and NaN past
    the last one), compared in float32 (Keras casts float inputs to float32; TF compares ints as floats)
    with denormals as zero (TF runs its CPU kernels so: -1e-45 is in the bucket of 0.0)."""

    def __init__(self, size, dtype):
        super().__init__()
        self.out_dtype = getattr(torch, dtype)
        self.register_buffer("bin_boundaries", torch.zeros(size))

    def forward(self, x):
        x = x.float()
        x = torch.where(x.abs() < torch.finfo(torch.float32).tiny, 0.0, x).contiguous()
        return torch.bucketize(x, self.bin_boundaries.float(), right=True).to(self.out_dtype)


class KerasIntegerLookup(nn.Module):
    """keras.layers.IntegerLookup's table: an int64 key found in ``keys`` (sorted) maps to the ``values``
    entry beside it, any other to ``default``. Then, as Keras's ``_lookup_dense`` does: ``mask`` =
    (key, value) overrides where the input is the mask key, and with ``num_oov`` > 1 an entry still at
    ``default`` becomes ``oov_start + key mod num_oov`` (TF's floormod: never negative)."""

    def __init__(self, size, default, mask=None, num_oov=0, oov_start=0):
        super().__init__()
        self.default, self.mask = int(default), mask
        self.num_oov, self.oov_start = int(num_oov), int(oov_start)
        self.register_buffer("keys", torch.zeros(size, dtype=torch.int64))
        self.register_buffer("values", torch.zeros(size, dtype=torch.int64))

    def forward(self, x):
        x = x.long().contiguous()  # Keras casts the input to int64 (a float truncates toward zero)
        at = torch.searchsorted(self.keys, x).clamp(max=self.keys.numel() - 1)
        out = torch.where(self.keys[at] == x, self.values[at], self.default)
        if self.mask is not None:
            out = torch.where(x == self.mask[0], self.mask[1], out)
        if self.num_oov > 1:
            out = torch.where(out == self.default, torch.remainder(x, self.num_oov) + self.oov_start, out)
        return out


class KerasCategoryEncoding(nn.Module):
    """Keras's encodings of integer ids (``numerical_utils.encode_categorical_inputs``): "one_hot" appends
    a ``depth`` axis (``squeeze``: in place of a last axis of 1); "multi_hot" / "count" take the max / sum
    of the one-hot rows over axis 1. An id outside [0, depth) matches no column, as in TF's one_hot (and
    its bincount, which drops ids >= depth)."""

    def __init__(self, depth, mode, squeeze=False):
        super().__init__()
        self.depth, self.mode, self.squeeze = int(depth), mode, bool(squeeze)

    def forward(self, ids):
        ids = ids.long()  # Keras casts the ids to int64 (a float truncates toward zero)
        if self.squeeze:
            ids = ids.squeeze(-1)
        hot = (ids.unsqueeze(-1) == torch.arange(self.depth, device=ids.device)).float()
        if self.mode == "one_hot":
            return hot
        return hot.amax(dim=1) if self.mode == "multi_hot" else hot.sum(dim=1)


class KerasAutoContrast(nn.Module):
    """keras.layers.AutoContrast: each image's channels stretched to [0, 255] by their own min and max,
    in Keras's float32 steps: value_range (``low``, ``low + span``) mapped to [0, 255] and back unless it
    is [0, 255]; ``scale = 255 / (max - min)`` (a true division: torch's ``255.0 / t`` multiplies by a
    reciprocal); a NaN result (a constant channel: 0 * inf) keeps the input value. ``dims``: the spatial
    axes."""

    def __init__(self, low, span, dims, rescale):
        super().__init__()
        self.low, self.span, self.dims, self.rescale = float(low), float(span), tuple(dims), bool(rescale)

    def forward(self, x):
        x = x.float()
        images = (x - self.low) / self.span * 255.0 + 0.0 if self.rescale else x
        low = images.amin(dim=self.dims, keepdim=True)  # NaN propagates, as in TF's reduce_min
        high = images.amax(dim=self.dims, keepdim=True)
        scale = torch.full_like(high, 255.0) / (high - low)
        offset = -low * scale
        out = (images * scale + offset).clamp(0.0, 255.0)
        if self.rescale:
            out = (out - 0.0) / 255.0 * self.span + self.low
        return torch.where(torch.isnan(out), x, out)
