"""The parameters LiteRT's int16 (16x8) kernels compute in their ``Prepare`` step, computed the same way
(tflite/kernels/activations.cc, add.cc, sub.cc; internal/common.h): doubles where LiteRT uses double, float32
where it uses float. Each table is checked against the interpreter over the whole int16 range
(tests/tflite/test_int16.py)."""

from __future__ import annotations

import math

import numpy as np

from .quant_math import quantize_multiplier, round_half_away


def add16_params(s1: float, s2: float, s_out: float) -> tuple[tuple[int, int], ...]:
    """ADD / SUB on int16, general scales: as int8's, with the inputs shifted left by 15 bits (not 20)."""
    twice_max = 2.0 * max(s1, s2)
    return (quantize_multiplier(s1 / twice_max), quantize_multiplier(s2 / twice_max),
            quantize_multiplier(twice_max / ((1 << 15) * s_out)))


def activation_range16(fused: str, scale: float) -> tuple[int | None, int | None]:
    """``CalculateActivationRangeQuantized`` for int16 (zero point 0): the bounds as int16 values."""
    def q(bound: float) -> int:
        return round_half_away(float(np.float32(bound) / np.float32(scale)))

    bounds = {"NONE": (-32768, 32767), "RELU": (max(-32768, q(0.0)), 32767),
              "RELU6": (max(-32768, q(0.0)), min(32767, q(6.0))),
              "RELU_N1_TO_1": (max(-32768, q(-1.0)), min(32767, q(1.0)))}
    return bounds.get(fused, (None, None))


def lut16(fn, low: float, high: float) -> list[int]:
    """LiteRT's ``gen_lut`` for an int16 -> int16 table on [low, high] with outputs in [-1, 1] (double): 512
    samples, each corrected by half its interpolation error at the step's midpoint, and a 513th (the end)."""
    steps = 512
    step = (high - low) / steps
    scale = 65536.0 / 2.0  # (int16 max - int16 min + 1) / (output max - output min)
    table = []
    for i in range(steps):
        value, mid, nxt = fn(low + i * step), fn(low + i * step + step / 2), fn(low + (i + 1) * step)
        sample = round_half_away(value * scale)
        interpolated = round_half_away((nxt * scale + round_half_away(value * scale)) / 2)
        bias = round_half_away((interpolated - round_half_away(mid * scale)) / 2)
        table.append(int(min(max(sample - bias, -32768), 32767)))
    table.append(int(min(max(round_half_away(fn(high) * scale), -32768), 32767)))
    return table


def softmax16_params(s_in: float, beta: float) -> tuple[int, int, list[int], list[int]]:
    """SOFTMAX on int16 (``SoftmaxPrepare``): the multiplier and shift taking input_scale * beta onto
    10 / 65535 per unit, the exp table on [-10, 0] and the 1 / (1 + x) table on [0, 1]."""
    multiplier, shift = quantize_multiplier(float(np.float32(s_in) * np.float32(beta)) / (10.0 / 65535.0))  # a float product
    return multiplier, shift, lut16(math.exp, -10.0, 0.0), lut16(lambda v: 1.0 / (1.0 + v), 0.0, 1.0)
