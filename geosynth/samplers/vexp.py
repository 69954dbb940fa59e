"""``exp`` and ``expm1`` as plain arithmetic, for the engine's loops that LLVM can vectorise.

A loop that calls libm's ``exp`` is a loop of calls: LLVM vectorises none of it (a pip install
of llvmlite has no SVML, Intel's vector math library, which numba would otherwise use). The
scale moves spend a good part of a sweep in exactly such loops — ``expm1`` of a proposed step
in every cell, eight to ten rounds for each field, and over every entry for ε's. Written here
without calls or branches, those loops run on the whole vector width: a pass of ``expm1`` over
1,600 cells with its weighted sum took 2.05 µs against 5.34 µs through libm (Zen 5,
``bench/RESULTS.md``, 2026-11-28, twelfth session).

Method (Cody & Waite 1980; Tang 1989): x = k·ln 2 + r with k = round(x/ln 2) found by adding
1.5·2⁵² (so k sits in the low bits of the sum) and ln 2 split in two so that r is exact to
~2⁻⁶⁰; expm1(r) for |r| ≤ ln 2 / 2 by its Taylor polynomial of degree 13 (truncation below
r¹³/14! < 1.2·10⁻¹⁷ relative, 0.05 ulp) in Horner's form; 2ᵏ written into the exponent bits;
then eˣ = 2ᵏ·(1 + expm1(r)) and expm1(x) = 2ᵏ·expm1(r) + (2ᵏ − 1), which is expm1(r)
itself, without cancellation, when k = 0 (computed as (2^h·expm1(r) + 2^h − 2^(h − k))·2^(k − h),
exact in the powers of two for |k| ≤ 52); 2ᵏ is applied as two factors 2^⌊k/2⌋ and 2^(k − ⌊k/2⌋),
so that the results overflow to ∞ and underflow to 0 (expm1 to −1) exactly where eˣ does —
which the scale moves rely on: a proposal far out must read as an infinite change of the
expected count and be refused, not be capped into an acceptable one. Within 2 ulp of glibc over
|x| ≤ 40 (``tests/samplers/test_vexp.py``).

No fast-math flags: every lane computes what a scalar loop would, in the same order, so the
results — and the draws — do not depend on the CPU's vector width. :func:`sum_of_products`
fixes the order of the sums that go with these loops for the same reason.
"""

from __future__ import annotations

import math

from numba import njit, types
from numba.extending import intrinsic

__all__ = [
    "exp_vec",
    "expm1_vec",
    "sum_of_products",
    "fixed_order_sum",
    "LOW",
    "HIGH",
]

#: Arguments are clamped to [LOW, HIGH]: e^LOW rounds to 0 and e^HIGH overflows to ∞, as eˣ
#: does beyond them, so the clamp changes no result (it keeps 2ᵏ's exponent bits in range).
LOW, HIGH = -746.0, 710.0

_INV_LN2 = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01  # ln 2 to 32 bits: k·_LN2_HI is exact for |k| < 2²⁰
_LN2_LO = 1.90821492927058770002e-10  # ln 2 − _LN2_HI
_ROUND = 6755399441055744.0  # 1.5·2⁵²: x/ln 2 + _ROUND holds round(x/ln 2) in its low bits
_ROUND_BITS = 0x4338000000000000  # the IEEE bits of _ROUND
_ONE_EXPONENT = 1023 << 52  # the bits of 1.0
_C = [1.0 / math.factorial(j) for j in range(14)]
_C2, _C3, _C4, _C5, _C6, _C7, _C8, _C9, _C10, _C11, _C12, _C13 = _C[2:]


def _reinterpret(source, target):
    """Return an intrinsic that reads a ``source`` value's IEEE bits as a ``target`` value."""

    @intrinsic
    def reinterpret(typingctx, value):
        if value != source:
            return None

        def codegen(context, builder, signature, args):
            return builder.bitcast(args[0], context.get_value_type(target))

        return target(source), codegen

    return reinterpret


_bits = _reinterpret(types.float64, types.int64)  # a float64's bits as an int64
_float = _reinterpret(types.int64, types.float64)  # the float64 with these bits


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _reduced(x):
    """``(2^h, 2^(k − h), expm1(r))`` with x = k·ln 2 + r, |r| ≤ ln 2 / 2, h = ⌊k/2⌋.

    x is first clamped to [:data:`LOW`, :data:`HIGH`], where eˣ is already 0 and ∞; the two
    halves of 2ᵏ are normal numbers for every k of that range, and their product overflows or
    underflows as eˣ does.
    """
    x = min(max(x, LOW), HIGH)
    shifted = x * _INV_LN2 + _ROUND
    k = _bits(shifted) - _ROUND_BITS  # round(x/ln 2), exact: |k| < 2⁵¹
    half = k >> 1
    low_scale = _float((half << 52) + _ONE_EXPONENT)
    high_scale = _float(((k - half) << 52) + _ONE_EXPONENT)
    kd = shifted - _ROUND
    r = (x - kd * _LN2_HI) - kd * _LN2_LO
    p = _C13
    p = p * r + _C12
    p = p * r + _C11
    p = p * r + _C10
    p = p * r + _C9
    p = p * r + _C8
    p = p * r + _C7
    p = p * r + _C6
    p = p * r + _C5
    p = p * r + _C4
    p = p * r + _C3
    p = p * r + _C2
    return low_scale, high_scale, p * r * r + r


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def exp_vec(x):
    """eˣ without calls or branches, to 2 ulp; 0 and ∞ where eˣ underflows and overflows."""
    low_scale, high_scale, small = _reduced(x)
    return ((1.0 + small) * low_scale) * high_scale


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def expm1_vec(x):
    """eˣ − 1 without calls or branches, to 2 ulp also near 0; −1 and ∞ far out."""
    low_scale, high_scale, small = _reduced(x)
    return (small * low_scale + (low_scale - 1.0 / high_scale)) * high_scale


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _four_partial_sums(a, b, weighted):
    """Σ a_i·b_i (``weighted``) or Σ a_i in four interleaved partial sums, in a fixed order."""
    n = a.shape[0]
    s0, s1, s2, s3 = 0.0, 0.0, 0.0, 0.0
    whole = n - n % 4
    for i in range(0, whole, 4):
        if weighted:
            s0 += a[i] * b[i]
            s1 += a[i + 1] * b[i + 1]
            s2 += a[i + 2] * b[i + 2]
            s3 += a[i + 3] * b[i + 3]
        else:
            s0 += a[i]
            s1 += a[i + 1]
            s2 += a[i + 2]
            s3 += a[i + 3]
    for i in range(whole, n):
        s0 += a[i] * b[i] if weighted else a[i]
    return (s0 + s1) + (s2 + s3)


@njit(cache=True, nogil=True, error_model="numpy")
def sum_of_products(a, b):
    """Σ a_i·b_i over 1-d arrays in four interleaved partial sums, added in a fixed order.

    Four running sums let the additions overlap (a single one is a chain of dependent adds,
    as slow as the vectorised ``expm1`` pass it follows), and their order is the code's, not
    the vectoriser's, so the result does not depend on the CPU.
    """
    return _four_partial_sums(a, b, True)


@njit(cache=True, nogil=True, error_model="numpy")
def fixed_order_sum(a):
    """Σ a_i over a 1-d array, in the four partial sums of :func:`sum_of_products`."""
    return _four_partial_sums(a, a, False)
