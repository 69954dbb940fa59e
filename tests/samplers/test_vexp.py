"""exp and expm1 as plain arithmetic (geosynth.samplers.vexp): accuracy, clamping, fixed-order sums.

Against NumPy's libm-backed ``exp``/``expm1``: within 2 ulp over the arguments the engine meets
(|x| ≤ 40), relative accuracy of ``expm1`` near 0 (where ``exp(x) − 1`` would lose every
digit), overflow to ∞ and underflow to 0 (−1) exactly where eˣ does, NaN in, NaN out; and the
two sums in exactly the order their docstrings give (recomputed here in Python), close to the
exactly rounded sum.
"""

import math

import numpy as np
from numba import njit

from geosynth.samplers.vexp import HIGH, LOW, exp_vec, expm1_vec, fixed_order_sum, sum_of_products


@njit
def _both(x, out):
    for i in range(x.shape[0]):
        out[0, i] = exp_vec(x[i])
        out[1, i] = expm1_vec(x[i])


def _apply(x):
    out = np.empty((2, x.shape[0]))
    _both(np.ascontiguousarray(x, dtype=np.float64), out)
    return out


def _ulps(value, reference):
    return np.abs(value - reference) / np.spacing(np.abs(reference))


def test_within_two_ulp_of_libm_where_the_engine_works():
    rng = np.random.default_rng(3)
    x = np.concatenate([rng.uniform(-40, 40, 200_000), rng.normal(0, 0.5, 100_000),
                        np.linspace(-40, 40, 100_001)])
    exp, expm1 = _apply(x)
    assert _ulps(exp, np.exp(x)).max() <= 2.0
    assert _ulps(expm1, np.expm1(x)).max() <= 2.0


def test_expm1_keeps_its_relative_accuracy_near_zero():
    tiny = np.concatenate([np.geomspace(1e-300, 1e-3, 2_000), -np.geomspace(1e-300, 1e-3, 2_000),
                           [0.0]])
    exp, expm1 = _apply(tiny)
    assert _ulps(expm1[:-1], np.expm1(tiny[:-1])).max() <= 2.0
    assert expm1[-1] == 0.0 and exp[-1] == 1.0
    assert _ulps(exp, np.exp(tiny)).max() <= 2.0


def test_overflow_and_underflow_where_exp_does_and_nan_propagates():
    """A scale move's proposal far out must measure as an infinite change, not a capped one."""
    edge = np.linspace(700.0, 709.78, 10_001)
    exp, expm1 = _apply(edge)
    assert _ulps(exp, np.exp(edge)).max() <= 2.0 and _ulps(expm1, np.expm1(edge)).max() <= 2.0
    with np.errstate(under="ignore"):
        deep = np.linspace(-744.0, -700.0, 10_001)  # subnormal results below −708.4
        exp, expm1 = _apply(deep)
        assert np.abs(exp - np.exp(deep)).max() <= 2 * np.spacing(np.exp(deep)).max()
        assert np.all(expm1 == -1.0)
    exp, expm1 = _apply(np.array([709.79, 710.0, 800.0, 1e300, np.inf, -745.2, -800.0, -np.inf,
                                  np.nan]))
    assert np.all(exp[:5] == np.inf) and np.all(expm1[:5] == np.inf)
    assert np.all(exp[5:8] == 0.0) and np.all(expm1[5:8] == -1.0)
    assert np.isnan(exp[8]) and np.isnan(expm1[8])
    assert LOW < math.log(5e-324) and math.log(np.finfo(float).max) < HIGH


def _in_documented_order(terms):
    n = len(terms)
    partial = [0.0, 0.0, 0.0, 0.0]
    whole = n - n % 4
    for i in range(whole):
        partial[i % 4] += terms[i]
    for i in range(whole, n):
        partial[0] += terms[i]
    return (partial[0] + partial[1]) + (partial[2] + partial[3])


def test_sums_follow_their_documented_order():
    rng = np.random.default_rng(5)
    for n in (0, 1, 3, 4, 7, 1_601, 19_200):
        a, b = rng.normal(size=n), rng.gamma(0.5, size=n)
        products = [x * y for x, y in zip(a, b, strict=True)]
        assert sum_of_products(a, b) == _in_documented_order(products)
        assert fixed_order_sum(b) == _in_documented_order(list(b))
        assert abs(sum_of_products(a, b) - math.fsum(products)) <= 1e-12 * max(1.0, n)


def test_over_the_whole_float_range_subnormals_included():
    """Every magnitude from the smallest subnormal to the largest double, both signs: eˣ to
    1 ulp (1 unit of the smallest subnormal where eˣ is subnormal), expm1 to 2 ulp, and 0, ∞,
    −1 and NaN exactly where NumPy gives them."""
    tiny = np.geomspace(5e-324, 1.7e308, 400_000)
    x = np.concatenate([tiny, -tiny, np.linspace(-760.0, 720.0, 1_000_001),
                        [0.0, -0.0, 709.782712893384, 709.7827128933841, -745.1332191019411,
                         -745.1332191019412, np.nan, np.inf, -np.inf]])
    exp, expm1 = _apply(x)
    with np.errstate(over="ignore", under="ignore"):
        ref_exp, ref_expm1 = np.exp(x), np.expm1(x)
    for value, reference, tolerance in ((exp, ref_exp, 1.0), (expm1, ref_expm1, 2.0)):
        special = ~np.isfinite(reference) | (reference == 0.0) | (reference == -1.0)
        np.testing.assert_array_equal(value[special], reference[special])
        normal = ~special & (np.abs(reference) >= np.finfo(float).tiny)
        assert _ulps(value[normal], reference[normal]).max() <= tolerance
        subnormal = ~special & ~normal
        assert np.abs(value[subnormal] - reference[subnormal]).max() <= 5e-324
