"""Samplers on the model's conditional ``a·x − b·e^x − c·x²`` at extreme a, b, c (2026-12).

In the family's terms ``w = [b]``, ``z = 1``, ``m = 0``, ``q = 2c``. Every check is a KS test
(10⁵ draws, fixed seeds) against an exact CDF: the log-Gamma CDF where ``c = 0``, numerical
integration otherwise, and for a flat prior cut off by an overflowing exponential the Gaussian
CDF on its left plus quadrature over the cut.
"""

import math
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from numba import njit
from scipy import integrate, special, stats

from geosynth.samplers import ars_draw, make_streams, new_workspace, sample_conditional
from geosynth.samplers.ars import ars_draw_single
from geosynth.samplers.tangent import tangent_draw
from tests.samplers.test_samplers import P_MIN, exact_cdf

N = 100_000


def _log_gamma_cdf(shape, rate):
    """CDF of ``log G``, ``G ~ Gamma(shape, rate)``: the family with ``q = 0``."""
    log_rate = math.log(rate)

    def cdf(x):
        t = np.asarray(x, dtype=float) + log_rate
        with np.errstate(over="ignore", under="ignore"):
            tail = np.exp(shape * t - special.gammaln(shape + 1.0))
            return np.where(t < -40.0, tail, special.gammainc(shape, np.exp(np.minimum(t, 700))))

    return cdf


def _flat_prior_cdf(b, q):
    """CDF of ``exp(−b·e^x − q·x²/2)`` for a tiny ``q``: a half-normal cut off on the right.

    Below ``x_c`` (``b·e^x < 1e-20``) the density is the Gaussian's to double precision, so
    that part is Φ; from ``x_c`` to where ``b·e^x = 800`` Simpson's rule on 200,001 points.
    """
    sd = 1.0 / math.sqrt(q)
    x_c, x_r = math.log(1e-20 / b), math.log(800.0 / b)
    left = sd * math.sqrt(2.0 * math.pi) * stats.norm.cdf(x_c / sd)
    grid = np.linspace(x_c, x_r, 200_001)
    middle = integrate.cumulative_simpson(np.exp(-b * np.exp(grid) - 0.5 * q * grid * grid),
                                          x=grid, initial=0.0)
    total = left + middle[-1]

    def cdf(x):
        x = np.asarray(x, dtype=float)
        gauss = sd * math.sqrt(2.0 * math.pi) * stats.norm.cdf(np.minimum(x, x_c) / sd)
        return np.where(x <= x_c, gauss, left + np.interp(x, grid, middle)) / total

    return cdf, left / total, x_r


@njit
def _warm_ars_draws(n, x0, a, w, z, m, q, state):
    """``ars_draw`` warm-started from the previous draw, as in a Gibbs sweep; statuses too."""
    out = np.empty(n)
    status = np.zeros(n, np.int64)
    work = new_workspace()
    x = x0
    for i in range(n):
        out[i], status[i] = ars_draw(x, a, w, z, m, q, state, work)
        if status[i] == 0:
            x = out[i]
    return out, status


@njit
def _warm_single_draws(n, x0, a, b, m, q, state):
    out = np.empty(n)
    status = np.zeros(n, np.int64)
    x = x0
    for i in range(n):
        out[i], status[i] = ars_draw_single(x, a, b, m, q, state)
        if status[i] == 0:
            x = out[i]
    return out, status


@njit
def _warm_tangent_draws(n, x0, a, b, m, q, state):
    out = np.empty(n)
    status = np.zeros(n, np.int64)
    x, wex = x0, b * math.exp(x0)
    for i in range(n):
        out[i], new_wex, status[i] = tangent_draw(x, a, wex, m, q, state)
        if status[i] == 0:
            x, wex = out[i], new_wex
    return out, status


# name: (a, b, c) of a·x − b·e^x − c·x²; all were drawn exactly before 2026-12 too.
MODEL_CASES = {
    "tiny_weight": (5.0, 1e-300, 0.0),
    "huge_weight": (5.0, 1e300, 0.0),
    "tiny_count": (0.01, 1.0, 0.0),
    "huge_count": (1e4, 1.0, 0.0),
    "tiny_weight_prior": (3.0, 1e-300, 1.0),
    "huge_weight_prior": (3.0, 1e300, 1.0),
    "peaked": (3.0, 1.0, 1e12),
    "peaked_tiny_weight": (3.0, 1e-300, 1e12),
    "flat": (3.0, 1.0, 1e-12),
    "negative_a": (-1e6, 1.0, 1.0),
    "huge_a_and_c": (1e8, 1.0, 1e6),
    "no_exponential": (2.0, 0.0, 0.5),
}


def _model_cdf(a, b, c):
    if c == 0.0:
        return _log_gamma_cdf(a, b), math.log(a / b)
    cdf, _, mode, _ = exact_cdf(a, [b], [1.0], 0.0, 2.0 * c)
    return cdf, mode


@pytest.mark.filterwarnings("ignore::scipy.integrate.IntegrationWarning")
@pytest.mark.parametrize("name", list(MODEL_CASES))
@pytest.mark.parametrize("sampler", ["ars", "slice", "ars_draw", "single", "tangent"])
def test_model_conditional_at_extreme_parameters(name, sampler, request):
    a, b, c = MODEL_CASES[name]
    q = 2.0 * c
    if sampler == "tangent" and name == "tiny_count":
        # log Gamma(0.01) falls below −745 in ~6e-4 of draws: W·e^x underflows to 0, which
        # tangent_draw's next call takes as W = 0 (improper with q = 0). Its wex argument
        # cannot carry W there: a known limitation, to fix with the engine passing log W.
        # Run, strictly: a fix shows as a failure to remove this mark.
        request.applymarker(pytest.mark.xfail(
            strict=True, reason="tangent_draw: W·e^x = 0 after an underflow is read as W = 0"))
    cdf, mode = _model_cdf(a, b, c)
    state = make_streams(2026, 1)[0]
    w, z = np.array([b]), np.array([1.0])
    if sampler in ("ars", "slice"):
        draws = sample_conditional(a, w, z, 0.0, q, size=N, method=sampler, seed=2026)
        status = np.zeros(N, np.int64)
    elif sampler == "ars_draw":
        draws, status = _warm_ars_draws(N, mode, a, w, z, 0.0, q, state)
    elif sampler == "single":
        draws, status = _warm_single_draws(N, mode, a, b, 0.0, q, state)
    else:
        draws, status = _warm_tangent_draws(N, mode, a, b, 0.0, q, state)
    assert np.all(status == 0) and np.all(np.isfinite(draws))
    assert stats.kstest(draws, cdf).pvalue > P_MIN


FLAT_CUT_CASES = {
    # name: (b, q); a = 0, m = 0. The ARS tail abscissa at mode + 1.3/√(−h'') lay where
    # b·e^x = inf: STATUS_MODE_FAILED ("the mode search did not converge") for these proper
    # densities; then proposals beyond the cut, where h = −inf, never refined the hull and the
    # rejection budget ran out (STATUS_TOO_MANY_REJECTIONS).
    "cut_at_660": (1e-300, 2e-12),
    "cut_at_7": (1.0, 2e-12),
}


@pytest.mark.parametrize("name", list(FLAT_CUT_CASES))
@pytest.mark.parametrize("sampler", ["ars", "slice", "ars_draw", "single"])
def test_flat_prior_cut_off_by_an_overflowing_exponential(name, sampler):
    b, q = FLAT_CUT_CASES[name]
    cdf, left_share, x_r = _flat_prior_cdf(b, q)
    mode = 0.0 if b < 1e-100 else -23.769  # where b·e^x = −q·x
    state = make_streams(7, 1)[0]
    w, z = np.array([b]), np.array([1.0])
    if sampler in ("ars", "slice"):
        draws = sample_conditional(0.0, w, z, 0.0, q, size=N, method=sampler, seed=7)
        status = np.zeros(N, np.int64)
    elif sampler == "ars_draw":
        draws, status = _warm_ars_draws(N, mode, 0.0, w, z, 0.0, q, state)
    else:
        draws, status = _warm_single_draws(N, mode, 0.0, b, 0.0, q, state)
    assert np.all(status == 0), np.unique(status)
    assert np.all(draws < x_r)  # nothing beyond the cut, where the density is 0
    assert stats.kstest(draws, cdf).pvalue > P_MIN
    # The cut side holds a small share (7.5e-4 for cut_at_660): test it on its own.
    right = int(np.sum(draws > cdf_x_c(b)))
    assert stats.binomtest(right, N, 1.0 - left_share).pvalue > P_MIN


def cdf_x_c(b):
    """Where the Gaussian part of :func:`_flat_prior_cdf` ends."""
    return math.log(1e-20 / b)


_NARROW_SCRIPT = textwrap.dedent("""
    import numpy as np
    from geosynth.samplers import sample_conditional
    for m, q in ((1.0, 1e32), (1e6, 4e20), (1e6, 5e20)):
        x = sample_conditional(0.0, [0.0], 1.0, m, q, size=300, method="slice", seed=3)
        assert np.all(np.abs(x - m) <= 4 * np.spacing(m)), (m, q, x.min(), x.max())
    print("done")
""")


def test_slice_on_a_density_narrower_than_the_double_spacing_terminates():
    """N(m, 1/q) with sd below the spacing of doubles at m: Neal's acceptance test halved two
    neighbouring doubles forever (the middle rounds to an end). Run apart, with a timeout, so
    that a hang fails the test instead of stopping the suite."""
    result = subprocess.run([sys.executable, "-c", _NARROW_SCRIPT], capture_output=True,
                            text=True, timeout=600, check=False)
    assert result.returncode == 0 and result.stdout.strip() == "done", result.stderr[-2000:]


@pytest.mark.parametrize(("m", "q"), [(1.0, 1e32), (1e6, 4e20)])
def test_ars_on_a_density_narrower_than_the_double_spacing(m, q):
    x = sample_conditional(0.0, [0.0], 1.0, m, q, size=300, seed=3)
    assert np.all(np.abs(x - m) <= 4 * np.spacing(m))


def test_tangent_draws_from_far_below_the_mode_are_exact():
    # From W·e^{x0} = e^-700 a proposal 700 or more up was refused outright, though nearly
    # every one there should be accepted: the draws were those of the density cut off at
    # x0 + 700, mixed with the fallback's (KS D = 0.13).
    cdf, _ = _model_cdf(0.0, 1.0, 0.5)
    state = make_streams(2027, 1)[0]
    draws = np.empty(20_000)
    for i in range(draws.size):  # each from x0 = -700, as one update of a far-off state
        draws[i], _, status = tangent_draw(-700.0, 0.0, math.exp(-700.0), 0.0, 1.0, state)
        assert status == 0
    assert stats.kstest(draws, cdf).pvalue > P_MIN


def test_tangent_gamma_envelope_keeps_the_draw_of_a_tiny_weight_without_prior():
    # q = 0: x1 = x0 + (a − wex)/wex is 1e15 for wex = 1e-14, and x1 + d lost the draw
    # (21 distinct values in 20,000; every draw 0.0 at wex = 1e-17).
    for wex in (1e-14, 1e-17):
        state = make_streams(2028, 1)[0]
        draws = np.array([tangent_draw(0.0, 10.0, wex, 0.0, 0.0, state)[0]
                          for _ in range(20_000)])
        assert stats.kstest(draws, _log_gamma_cdf(10.0, wex)).pvalue > P_MIN


@pytest.mark.parametrize("method", ["slice", "ars"])
def test_a_mode_beyond_the_overflow_of_exp_is_sampled(method):
    # w = 1e-303, a = 1e6: the mode lies at 711.5, where exp(x) overflows though w·e^x does
    # not; the slice sampler drew the density cut off at 709.78 (every draw 709.783), ARS
    # failed its mode search.
    draws = sample_conditional(1e6, [1e-303], [1.0], 0.0, 0.0, size=20_000, method=method,
                               seed=5)
    assert stats.kstest(draws, _log_gamma_cdf(1e6, 1e-303)).pvalue > P_MIN


def test_slice_on_a_nearly_flat_density_never_freezes_silently():
    # a = 1e-20, w = 1, q = 0 (log Gamma(1e-20)): the width was set at a far-off mode estimate,
    # the chain drifted to |x| where it was below the spacing of doubles, and every later draw
    # was the same value with STATUS_OK. It either samples or fails with a SamplerError.
    from geosynth.errors import SamplerError

    try:
        draws = sample_conditional(1e-20, [1.0], [1.0], 0.0, 0.0, size=20_000, method="slice",
                                   seed=6)
    except SamplerError:
        return
    assert np.unique(draws).size > draws.size // 2
