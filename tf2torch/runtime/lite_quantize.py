"""LiteRT's QUANTIZE of float values (to int8, uint8 or int16), emulated position by position.

The builtin kernel is ``optimized_ops::AffineQuantize``: a vector loop over the tensor's flat (channels-last)
order, 8 values at a time, multiplies by the float32 reciprocal of the scale and rounds half to even (x86
builds translate NEON's ``vcvtnq_s32_f32`` to ``cvtps2dq``); the last ``size mod 8`` values go through its
scalar loop, ``round(x / scale)`` in double with halves away from zero. Both add the zero point and clamp.
Measured on exact ties and on values where the two products round apart, for int8, uint8 and int16, with
flat sizes that are and are not multiples of 8 (tests/tflite/test_quantize_ties.py): every position follows
its loop's rule.
"""

from __future__ import annotations

import torch

LITE_QUANTIZE_LANES = 8  # AffineQuantize's vector loop: two float32x4 registers per step


def lite_tflite_positions(x, channels_first=False, flat_from=None):
    """Each element's index in TFLite's flat order (channels last), laid out like ``x``: a channels-first
    tensor (N, C, ...) is (N, ..., C) in TFLite; a channels-first flatten's (N, C*H*W) comes from ``flat_from``
    (H, W, C), TFLite's shape before the flatten."""
    index = torch.arange(x.numel(), device=x.device)
    if flat_from:
        return index.reshape(x.shape[0], *flat_from).movedim(-1, 1).flatten(1)
    if channels_first and x.dim() >= 3:
        return index.reshape(x.shape[0], *x.shape[2:], x.shape[1]).movedim(-1, 1)
    return index.reshape(x.shape)


def lite_affine_quantize(x, scale, zero_point, low, high, channels_first=False, flat_from=None):
    """``AffineQuantize``: float ``x`` to integers in [low, high] (int64), each value by the rule of the loop
    that reaches it (see the module docstring). ``scale`` is the tensor's float32 scale as a Python float."""
    x = x.float()
    reciprocal = torch.tensor(1.0 / scale, dtype=torch.float32)  # the kernel's 1.0f / (double) scale
    q = torch.round(x * reciprocal).double()  # a float32 product, rounded half to even
    tail = x.numel() % LITE_QUANTIZE_LANES
    if tail:
        v = x.double() / scale
        away = torch.sign(v) * torch.floor(v.abs() + 0.5)  # TfLiteRound: halves away from zero
        scalar = lite_tflite_positions(x, channels_first, flat_from) >= x.numel() - tail
        q = torch.where(scalar, away, q)
    return (q.long() + zero_point).clamp(low, high)
