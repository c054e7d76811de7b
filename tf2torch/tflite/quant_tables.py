"""LiteRT's int8 kernels for elementwise operators, run at conversion time on every possible input: an
operator of one int8 input has 256, of two int8 inputs 65,536; their outputs make a lookup table the
generated model indexes (``runtime/lite_int_act.py``'s ``TFLiteQuantLUT``, ``runtime/lite_int_math.py``'s
``TFLiteQuantPairLUT``). The table is the kernel's own arithmetic, value by value, so the emulation is
exact wherever this file follows the kernel; ``tests/tflite/test_int8_math.py`` compares every entry with
the interpreter's.

The fixed-point steps are gemmlowp's (fixedpoint/fixedpoint.h) and LiteRT's (kernels/internal/common.h),
on numpy int64 arrays holding int32 values; the float steps are float32 where the kernel uses float,
with each transcendental taken in float64 and rounded once to float32 (what a correctly rounded libm
returns). Sources: elementwise.cc (ABS, RSQRT, SQRT, LOG), exp.cc and activations.cc (EXP, GELU: ``LUTPopulate``),
div.cc with reference/div.h (DIV), squared_difference.cc (SQUARED_DIFFERENCE).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from .quant_math import quantize_multiplier

I32_MIN, I32_MAX = -(1 << 31), (1 << 31) - 1
Q = np.arange(-128, 128, dtype=np.int64)  # every int8 value, in table order (entry k is q = k - 128)


class Undefined(ValueError):
    """The kernel leaves the C behaviour undefined for some input (a shift out of range): not emulated."""


def _tdiv(x: np.ndarray, d: int) -> np.ndarray:
    """C's integer division (truncating toward zero)."""
    return np.sign(x) * (np.abs(x) // d)


def srdhm(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """gemmlowp's ``SaturatingRoundingDoublingHighMul`` on int32 values: 2ab / 2**32, rounded half away from
    zero, saturated where both are INT32_MIN."""
    a, b = np.asarray(a, np.int64), np.asarray(b, np.int64)
    ab = a * b
    out = _tdiv(ab + np.where(ab >= 0, 1 << 30, 1 - (1 << 30)), 1 << 31)
    return np.where((a == I32_MIN) & (b == I32_MIN), I32_MAX, out)


def rdpot(x: np.ndarray, exponent: np.ndarray | int) -> np.ndarray:
    """gemmlowp's ``RoundingDivideByPOT``: x / 2**exponent, halves away from zero. An exponent above 31
    (DIV of a small dividend: gemmlowp asserts it away, release builds run it) is computed as x86 runs
    the int32 code: the mask (1 << e) - 1 truncated to 32 bits, the shift count taken mod 32."""
    x, e = np.asarray(x, np.int64), np.asarray(exponent, np.int64)
    if np.any(e < 0):
        raise Undefined("a rounding right shift by a negative amount")
    mask = _wrap32((np.int64(1) << np.minimum(e, 62)) - 1)
    threshold = (mask >> 1) + (x < 0)
    return (x >> (e & 31)) + ((_wrap32(x) & mask) > threshold)


def _wrap32(x: np.ndarray) -> np.ndarray:
    return ((np.asarray(x, np.int64) + (1 << 31)) % (1 << 32)) - (1 << 31)


def srmbp(x: np.ndarray, exponent: int) -> np.ndarray:
    """gemmlowp's ``SaturatingRoundingMultiplyByPOT``: a saturating left shift, or a rounding right one."""
    if exponent > 0:
        return np.clip(np.asarray(x, np.int64) << exponent, I32_MIN, I32_MAX)
    return rdpot(x, -exponent) if exponent < 0 else np.asarray(x, np.int64)


def multiply(x: np.ndarray, multiplier: int, shift: int) -> np.ndarray:
    """LiteRT's ``MultiplyByQuantizedMultiplier`` (int32 x, double rounding): x * m * 2**(shift - 31)."""
    return rdpot(srdhm(_wrap32(np.asarray(x, np.int64) << max(shift, 0)), multiplier), max(-shift, 0))


def one_over_one_plus_x(a: np.ndarray) -> np.ndarray:
    """gemmlowp's ``one_over_one_plus_x_for_x_in_0_1``: 1 / (1 + a), a and the result Q0.31; three
    Newton-Raphson steps in Q2.29 from 48/17 - 32/17 * (1 + a) / 2."""
    a = np.asarray(a, np.int64)
    total = a + I32_MAX
    half = _tdiv(total + np.where(total >= 0, 1, -1), 2)  # RoundingHalfSum(a, One)
    x = _wrap32(1515870810 + srdhm(half, -1010580540))
    for _ in range(3):
        x = _wrap32(x + srmbp(srdhm(x, _wrap32((1 << 29) - srdhm(half, x))), 2))
    return srmbp(x, 1)  # Rescale<0>(ExactMulByPot<-1>(x)): from 1 integer bit to 0


def _clz32(x: np.ndarray) -> np.ndarray:
    """Leading zero bits of x as a uint32 (32 for 0)."""
    x = np.asarray(x, np.int64) & 0xFFFFFFFF
    bits = np.zeros_like(x)
    for k in range(32):
        bits = np.where((x >> k) != 0, k + 1, bits)
    return 32 - bits


def _clrsb32(x: np.ndarray) -> np.ndarray:
    """``CountLeadingSignBits`` of int32 values (GCC's __builtin_clrsb; 31 for 0)."""
    x = np.asarray(x, np.int64)
    return np.where(x == 0, 31, _clz32(np.where(x < 0, ~x, x)) - 1)


def reciprocal(x: np.ndarray, integer_digits: int) -> tuple[np.ndarray, np.ndarray]:
    """LiteRT's ``GetReciprocal``: (1 / x as Q0.31 after normalising x to [1, 2), the bits over unit)."""
    headroom_plus_one = _clz32(x)
    over_unit = integer_digits - headroom_plus_one
    shifted_minus_one = _wrap32(((np.asarray(x, np.int64) << headroom_plus_one) & 0xFFFFFFFF) - (1 << 31))
    return one_over_one_plus_x(shifted_minus_one), over_unit


def _finish(out: np.ndarray, low: int = -128, high: int = 127) -> list[int]:
    return [int(v) for v in np.clip(out, low, high).reshape(-1)]


def abs_table(s_in: float, z_in: int, s_out: float, z_out: int) -> list[int]:
    """ABS (``AbsEvalQuantized``): |q - z_in| rescaled by the float32 quotient s_in / s_out (when the
    scales differ), plus z_out, clamped."""
    value = np.abs(Q - z_in)
    if np.float32(s_in) == np.float32(s_out):
        return _finish(value + z_out)
    multiplier, shift = quantize_multiplier(float(np.float32(s_in) / np.float32(s_out)))
    return _finish(multiply(value, multiplier, shift) + z_out)


def rsqrt_table(s_in: float, z_in: int, s_out: float, z_out: int) -> list[int]:
    """RSQRT (``RsqrtEvalQuantizedInt8``): 1 / sqrt(q - z_in) by LiteRT's fixed-point Newton iteration
    (``GetInvSqrtQuantizedMultiplierExp``) on an integer scaled by 2**20, then rescaled by
    1 / (sqrt(s_in) * s_out); q == z_in gives 127. Entries below z_in (where LiteRT stops with an error)
    are 0: the module refuses such inputs (``TFLiteQuantLUT``'s ``valid_min``)."""
    f32 = np.float32
    multiplier, shift = quantize_multiplier(1.0 / float(np.sqrt(f32(s_in)) * f32(s_out)))  # std::sqrt(float)
    out = []
    for q in range(-128, 128):
        value = q - z_in
        if value < 0:
            out.append(0)
            continue
        if value == 0:
            out.append(127)
            continue
        inv, inv_shift = _inv_sqrt(value)
        data = int(multiply(np.int64(1), inv, inv_shift + 20))
        out.append(int(np.clip(int(multiply(np.int64(data), multiplier, shift - 20)) + z_out, -128, 127)))
    return out


def _inv_sqrt(value: int) -> tuple[int, int]:
    """``GetInvSqrtQuantizedMultiplierExp(value, kReverseShift = -1)`` for value >= 1."""
    if value <= 1:
        return I32_MAX, 0
    shift = 11
    while value >= 1 << 29:
        value //= 4
        shift += 1
    pairs = (int(_clz32(np.int64(value))) - 1) // 2 - 1
    shift -= pairs
    value <<= 2 * pairs
    f3_input = np.int64(value >> 1)  # Q3.28
    half_input = srmbp(f3_input, -1)
    half_three = np.int64((1 << 28) + (1 << 27))  # 1.5 in Q3.28
    x = np.int64(1 << 28)  # F3::One()
    for _ in range(5):
        x3 = srmbp(srdhm(srdhm(x, x), x), 6)  # Rescale<3> of a Q9 product
        x = srmbp(_wrap32(srdhm(half_three, x) - srdhm(half_input, x3)), 3)  # Rescale<3> of Q6
    x = srdhm(x, 1518500250)  # * sqrt(2) / 2 (Q0.31): Q3.28
    inv = int(x)
    if shift < 0:
        inv <<= -shift
        shift = 0
    return inv, -shift


def function_table(fn: Callable[[np.ndarray], np.ndarray], s_in: float, z_in: int, s_out: float,
                   z_out: int) -> list[int]:
    """``LUTPopulate<int8_t>``: for each q, f(s_in * (q - z_in)) * (1 / s_out) rounded half away from zero
    (float32 arithmetic), plus z_out, clamped. ``fn`` maps float32 values to float32 values."""
    f32 = np.float32
    x = f32(s_in) * (Q.astype(f32) - f32(z_in))
    with np.errstate(over="ignore", invalid="ignore"):
        y = np.asarray(fn(x.astype(f32)), dtype=f32)
        scaled = (y * (f32(1) / f32(s_out))).astype(np.float64)
        rounded = np.sign(scaled) * np.floor(np.abs(scaled) + 0.5)
    # saturated, overflows included (an exp far beyond the output's range gives 127: measured, as the
    # interpreter does)
    return _finish(rounded + z_out)


def sqrt_table(s_in: float, z_in: int, s_out: float, z_out: int) -> list[int]:
    """SQRT (``SqrtEvalQuantized``): sqrtf(s_in * (q - z_in)) / s_out in float32, truncated toward zero (a
    C cast, not a rounding), plus z_out, clamped. Entries below z_in (LiteRT stops with an error) are 0:
    the module refuses such inputs."""
    f32 = np.float32
    real = f32(s_in) * (Q - z_in).astype(f32)
    with np.errstate(invalid="ignore"):
        quotient = np.where(Q < z_in, 0, np.sqrt(np.maximum(real, 0)) / f32(s_out)).astype(np.float64)
    if quotient.max() >= 2.0 ** 31:  # C's cast to int is undefined there
        raise Undefined(f"a square root {quotient.max():.3g} output steps large")
    return _finish(np.where(Q < z_in, 0, np.trunc(quotient) + z_out))


def log_f32(s_out: float, z_out: int) -> Callable[[np.ndarray], np.ndarray]:
    """LOG's table function (``LogLUTPrepare``): logf(x), and for x <= 0 the output's lowest real value
    (-128 - z_out) * s_out, a float32 product."""
    lowest = np.float32(-128 - z_out) * np.float32(s_out)

    def fn(x: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(x <= 0, lowest, np.log(x.astype(np.float64)).astype(np.float32)).astype(np.float32)

    return fn


def exp_f32(x: np.ndarray) -> np.ndarray:
    return np.exp(x.astype(np.float64)).astype(np.float32)


def gelu_f32(approximate: bool) -> Callable[[np.ndarray], np.ndarray]:
    """reference_ops' ``GeluTransform`` (0.5 x erfc(-x / sqrt 2)) or ``GeluTransformApproximate``
    (0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3)))), float32 steps in the kernel's order."""
    f32 = np.float32

    def exact(x: np.ndarray) -> np.ndarray:
        arg = x * f32(-math.sqrt(0.5))  # static_cast<float>(-M_SQRT1_2)
        erfc = np.array([math.erfc(float(v)) for v in arg], dtype=np.float64).astype(f32)
        return f32(0.5) * x * erfc

    def tanh_form(x: np.ndarray) -> np.ndarray:
        k = f32(2.0 / math.sqrt(math.pi) * math.sqrt(0.5))  # M_2_SQRTPI * M_SQRT1_2, as a float constant
        inner = k * (x + f32(0.044715) * x * x * x)
        return f32(0.5) * x * (f32(1) + np.tanh(inner.astype(np.float64)).astype(f32))

    return tanh_form if approximate else exact


def div_table(s1: float, z1: int, s2: float, z2: int, s_out: float, z_out: int, low: int,
              high: int) -> list[int]:
    """DIV (reference_ops' ``DivElementwise``): (a - z1) / (b - z2) as the product of a by the fixed-point
    reciprocal of b (``GetReciprocal``), normalised by a's headroom, rescaled by s1 / (s2 * s_out), plus
    z_out, clamped to the fused activation's range. Row-major over (a, b). b == z2 (a division by 0,
    undefined in LiteRT) gives 0; ``TFLiteQuantPairLUT`` refuses such inputs."""
    a, b = np.meshgrid(Q - z1, Q - z2, indexing="ij")
    zero = b == 0
    b = np.where(zero, 1, b)
    a, b = np.where(b < 0, -a, a), np.abs(b)
    f32 = np.float32
    multiplier, shift = quantize_multiplier(float(f32(s1) / (f32(s2) * f32(s_out))))  # float arithmetic
    inv, over_unit = reciprocal(b, 31)
    headroom = _clrsb32(a)
    unscaled = srdhm(_wrap32(a << headroom), inv)
    out = rdpot(srdhm(unscaled, multiplier), -(shift - over_unit - headroom)) + z_out
    return _finish(np.where(zero, 0, np.clip(out, low, high)))


def squared_difference_table(s1: float, z1: int, s2: float, z2: int, s_out: float, z_out: int) -> list[int]:
    """SQUARED_DIFFERENCE (squared_difference.cc): both operands less their zero points, shifted left 7
    bits, rescaled to twice the larger input scale; the difference squared, rescaled to the output."""
    twice = 2.0 * float(max(np.float32(s1), np.float32(s2)))
    m1, e1 = quantize_multiplier(float(np.float32(s1)) / twice)
    m2, e2 = quantize_multiplier(float(np.float32(s2)) / twice)
    mo, eo = quantize_multiplier(twice * twice / ((1 << 14) * float(np.float32(s_out))))
    a, b = np.meshgrid(Q - z1, Q - z2, indexing="ij")
    diff = multiply(a << 7, m1, e1) - multiply(b << 7, m2, e2)
    return _finish(multiply(diff * diff, mo, eo) + z_out)
