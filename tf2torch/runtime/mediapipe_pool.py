"""MediaPipe's custom pooling operators, for generated files (torch has no op with their index convention).

``MaxPoolingWithArgmax2D`` (mediapipe/util/tflite/operations/max_pool_argmax.cc) and ``MaxUnpooling2D``
(max_unpooling.cc), as their kernels compute them, on NCHW tensors:

- the pool's second output is the *window's own* position of each maximum, ``dy * kernel_w + dx`` (not
  torch's or TF's flat index into the input plane), stored as a float plus 0.1;
- the unpooling writes each value at ``(y * stride_h - pad_top + dy, x * stride_w - pad_left + dx)`` of a
  zero ``(H * kernel_h, W * kernel_w)`` plane (the *kernel* size, whatever the stride), skips positions
  outside it, and where two values land on one cell the later one (in y, then x order) stays.

Both compute their sizes and padding from the input at run time, as the kernels' ``Prepare`` does, so any
input size gives the kernels' result. They use only ``torch``, ``F`` and ``nn`` (inlined into model.py).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


def mediapipe_padding(stride, size_in, kernel, size_out):
    """tflite::ComputePadding (dilation 1): half the total padding, rounded down, and never negative
    (C's truncating division differs from ``//`` only on negative totals, which both clamp to 0)."""
    return max(((size_out - 1) * stride + kernel - size_in) // 2, 0)


class MediaPipeMaxPoolArgmax(nn.Module):
    """MediaPipe's MaxPoolingWithArgmax2D: (the max of each window, clamped to the fused ReLU's range if any;
    where in its window the max is, ``dy * kernel_w + dx + 0.1`` as a float). ``same``: TFLite's SAME
    (``ceil(size / stride)`` windows, padding ``mediapipe_padding`` before) else VALID."""

    def __init__(self, kernel, stride, same, low=None, high=None):
        super().__init__()
        self.kernel, self.stride, self.same = tuple(kernel), tuple(stride), bool(same)
        self.low, self.high = low, high  # the fused activation's clamp (None: that side unbounded)

    def forward(self, x):
        (kh, kw), (sh, sw) = self.kernel, self.stride
        h, w = x.shape[-2], x.shape[-1]
        if self.same:
            oh, ow = (h + sh - 1) // sh, (w + sw - 1) // sw
        else:
            oh, ow = (h - kh + sh) // sh, (w - kw + sw) // sw
        top, left = mediapipe_padding(sh, h, kh, oh), mediapipe_padding(sw, w, kw, ow)
        bottom, right = max((oh - 1) * sh + kh - h - top, 0), max((ow - 1) * sw + kw - w - left, 0)
        lowest = torch.finfo(torch.float32).min  # the kernel's running max starts here (float32 only)
        # The kernel keeps the first value '>' a running max that starts at float's lowest: a NaN never
        # wins, and cells outside the input (its window is clamped to the input) neither: both -inf here.
        x = torch.where(torch.isnan(x), float("-inf"), x)
        if top or bottom or left or right:
            x = F.pad(x, (left, right, top, bottom), value=float("-inf"))
        values, flat = F.max_pool2d(x, (kh, kw), (sh, sw), return_indices=True)  # ties: the first, as the kernel
        # torch's index is y * width + x in the padded plane; the kernel's is the window's own dy * kw + dx
        padded_w = x.shape[-1]
        dy = flat.div(padded_w, rounding_mode="floor") - torch.arange(oh, device=x.device).unsqueeze(1) * sh
        dx = flat.remainder(padded_w) - torch.arange(ow, device=x.device) * sw
        index = dy * kw + dx
        # No value above float's lowest in a window (only -inf / NaN): the kernel's initial max and position 0
        found = values > lowest
        values = torch.where(found, values, lowest)
        index = torch.where(found, index, 0)
        # ActivationFunctionWithMinMax with CalculateActivationRange's bounds: the ReLUs clamp; their open
        # sides and every other activation are +-inf (TFLite >= 2.5; before, float's max, which only +-inf met)
        if self.low is not None or self.high is not None:
            values = values.clamp(self.low, self.high)
        # the kernel writes the int position + 0.1f (so its unpooling's conversion to int, toward zero, is safe)
        return values, index.to(values.dtype) + 0.1

    def extra_repr(self):
        return f"kernel={self.kernel}, stride={self.stride}, same={self.same}, low={self.low}, high={self.high}"


class MediaPipeMaxUnpool(nn.Module):
    """MediaPipe's MaxUnpooling2D: ``values`` written into a zero ``(H * kernel_h, W * kernel_w)`` plane at the
    window positions ``indices`` (MediaPipeMaxPoolArgmax's) give, windows ``stride`` apart."""

    def __init__(self, kernel, stride):
        super().__init__()
        self.kernel, self.stride = tuple(kernel), tuple(stride)

    def forward(self, values, indices):
        (kh, kw), (sh, sw) = self.kernel, self.stride
        n, c, h, w = values.shape
        oh, ow = h * kh, w * kw  # the kernel's output size: input times the filter, whatever the stride
        # its padding is ComputePadding with input and output swapped; its padding option is not read
        top, left = mediapipe_padding(sh, oh, kh, h), mediapipe_padding(sw, ow, kw, w)
        index = indices.to(torch.int64)  # C's float -> int conversion: toward zero
        dy = index.div(kw, rounding_mode="trunc")
        dx = index - dy * kw  # C's % (the sign of the dividend)
        ys = torch.arange(h, device=values.device).unsqueeze(1) * sh - top + dy
        xs = torch.arange(w, device=values.device) * sw - left + dx
        inside = (ys >= 0) & (ys < oh) & (xs >= 0) & (xs < ow)
        # a cell past the plane takes what the kernel skips (positions outside the output); dropped below
        target = torch.where(inside, ys * ow + xs, oh * ow).flatten(2)
        # The kernel loops over y, then x, and a later value overwrites an earlier one on the same cell:
        # keep, per cell, the source with the largest loop position (scatter's own order is unspecified).
        order = torch.arange(h * w, device=values.device).expand(n, c, h * w)
        last = torch.full((n, c, oh * ow + 1), -1, dtype=torch.int64, device=values.device)
        last = last.scatter_reduce(2, target, order, "amax")
        out = torch.where(last >= 0, values.flatten(2).gather(2, last.clamp(min=0)), 0.0)
        return out[..., :-1].unflatten(2, (oh, ow))

    def extra_repr(self):
        return f"kernel={self.kernel}, stride={self.stride}"
