"""The fixed-point parameters LiteRT's integer kernels compute in their ``Prepare`` step, computed the same
way (tflite/kernels/internal/quantization_util.cc, kernel_util.cc, add.cc, reduce.cc, activations.cc):
doubles where LiteRT uses double, float32 where it uses float."""

from __future__ import annotations

import math

import numpy as np


def round_half_away(x: float) -> int:
    """C's ``round``: halves away from zero."""
    return int(math.copysign(math.floor(abs(x) + 0.5), x))


def quantize_multiplier(real: float) -> tuple[int, int]:
    """``QuantizeMultiplier``: ``real`` = multiplier * 2**(shift - 31) with multiplier in [2**30, 2**31)."""
    if real == 0.0:
        return 0, 0
    mantissa, shift = math.frexp(real)
    fixed = round_half_away(mantissa * (1 << 31))
    if fixed == 1 << 31:
        fixed, shift = fixed // 2, shift + 1
    if shift < -31:
        return 0, 0
    return fixed, shift


def activation_range(fused: str, scale: float, zero_point: int) -> tuple[int | None, int | None]:
    """``CalculateActivationRangeQuantized`` for int8: the fused activation's bounds as int8 values
    (zero point + round(bound / scale), the division in float32); (None, None) for one not handled."""
    def q(bound: float) -> int:
        return zero_point + round_half_away(float(np.float32(bound) / np.float32(scale)))

    if fused == "NONE":
        return -128, 127
    if fused == "RELU":
        return max(-128, q(0.0)), 127
    if fused == "RELU6":
        return max(-128, q(0.0)), min(127, q(6.0))
    if fused == "RELU_N1_TO_1":
        return max(-128, q(-1.0)), min(127, q(1.0))
    return None, None


def add_params(s1: float, s2: float, s_out: float) -> tuple[tuple[int, int], ...]:
    """ADD / SUB on int8: (multiplier, shift) of input 1, input 2 and the output, with the inputs shifted
    left by 20 bits and rescaled to twice the larger input scale."""
    twice_max = 2.0 * max(s1, s2)
    return (quantize_multiplier(s1 / twice_max), quantize_multiplier(s2 / twice_max),
            quantize_multiplier(twice_max / ((1 << 20) * s_out)))


def mean_params(s_in: float, s_out: float, count: int) -> tuple[int, int]:
    """MEAN on int8 (``QuantizedMeanOrSum``): input / output scale as a multiplier, then 1 / count folded
    into it: the multiplier shifted left by floor(log2(count)) (at most 32, at most 31 + shift) and
    divided by count (integer division), the shift lowered to match."""
    multiplier, shift = quantize_multiplier(s_in / s_out)
    bits = min(count.bit_length() - 1, 32, 31 + shift)
    return (multiplier << bits) // count, shift - bits


def mean_hw_params(s_in: float, z_in: int, s_out: float, z_out: int, count: int) -> tuple[int, int, int]:
    """MEAN over the height and width of a 4-D int8 tensor with keep_dims (the builtin kernel's own path,
    ``optimized_integer_ops::Mean``; float32 arithmetic): the raw sum times input scale / (count * output
    scale), plus a bias that folds in both zero points. Returns (multiplier, shift, bias)."""
    f32 = np.float32
    temp = f32(z_in) * f32(s_in) / f32(s_out)
    temp = temp + f32(0.5) if temp > 0 else temp - f32(0.5)
    bias = z_out - int(temp)  # C's cast truncates toward zero
    multiplier, shift = quantize_multiplier(float(f32(s_in) / (f32(count) * f32(s_out))))
    return multiplier, shift, bias


def lut(op: str, s_in: float, z_in: int, s_out: float, z_out: int) -> list[int]:
    """LiteRT's int8 lookup table for LOGISTIC / TANH (``LUTPopulate``): for each q in [-128, 127],
    f(s_in * (q - z_in)) / s_out rounded (float32 arithmetic, as the kernel), plus z_out, clamped."""
    q = np.arange(-128, 128, dtype=np.float32)
    x = np.float32(s_in) * (q - np.float32(z_in))
    with np.errstate(over="ignore"):
        y = np.float32(1) / (np.float32(1) + np.exp(-x)) if op == "LOGISTIC" else np.tanh(x)
    scaled = y.astype(np.float32) * (np.float32(1) / np.float32(s_out))
    rounded = np.sign(scaled) * np.floor(np.abs(scaled.astype(np.float64)) + 0.5)
    return [int(v) for v in np.clip(rounded + z_out, -128, 127)]


def softmax_table(input_scale: float, beta: float) -> list[float]:
    """LiteRT's ``PopulateSoftmaxLookupTable``: entry 255 - k is expf(-input_scale * beta * k), k in [0, 255]
    (the exponent a float32 product; exp taken in double and rounded once to float32)."""
    k = np.arange(256, dtype=np.float32)
    scale = np.float32(-np.float32(input_scale) * np.float32(beta))
    values = np.exp((scale * k).astype(np.float64)).astype(np.float32)
    return [float(v) for v in values[::-1]]


def _to_int16(multiplier: int) -> int:
    """``DownScaleInt32ToInt16Multiplier``: the top 16 bits of a Q31 multiplier, rounded (saturating)."""
    if multiplier >= (1 << 31) - 1 - (1 << 15):
        return (1 << 15) - 1
    return (multiplier + (1 << 15)) >> 16


def hard_swish_params(s_in: float, s_out: float) -> tuple[int, int, int, int]:
    """HARD_SWISH on int8 (``HardSwishPrepare``, float32 arithmetic): the 16-bit output multiplier and
    exponent (high-res input scale, s_in / 128, over s_out) and the relu-ish ones (over 3 / 32768)."""
    f32 = np.float32
    hires = f32(1.0 / 128.0) * f32(s_in)
    out_m, out_e = quantize_multiplier(float(hires / f32(s_out)))
    rel_m, rel_e = quantize_multiplier(float(hires / (f32(3.0) / f32(32768.0))))
    return _to_int16(out_m), out_e, _to_int16(rel_m), rel_e


def relu_quotient(s_in: float, s_out: float) -> float:
    """Input scale / output scale as ``ReluPrepare`` and ``LeakyReluPrepare`` compute it (int8, uint8, int16):
    ``input->params.scale / output->params.scale``, two floats divided in float32 and then widened to double.
    QUANTIZE's Prepare casts both to double first; the two quotients give different multipliers, and the
    outputs part on ties (measured on uint8 RELU6: 21 of 400 one step off with the double one)."""
    return float(np.float32(s_in) / np.float32(s_out))


def leaky_relu_params(s_in: float, s_out: float, alpha: float) -> tuple[tuple[int, int], tuple[int, int]]:
    """LEAKY_RELU on int8: (multiplier, shift) of input / output scale and of alpha * input / output scale
    (both float32 arithmetic, as the kernel's Prepare computes them)."""
    f32 = np.float32
    return (quantize_multiplier(relu_quotient(s_in, s_out)),
            quantize_multiplier(float(f32(s_in) * f32(alpha) / f32(s_out))))
