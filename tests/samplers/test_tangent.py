"""The tangent-envelope sampler draws exactly from the one-term conditional, from any start."""

import math

import numpy as np
import pytest
from numba import njit
from scipy import stats

from geosynth.samplers import make_streams
from geosynth.samplers.family import STATUS_IMPROPER
from geosynth.samplers.rng import gamma_and_log, standard_normal, uniform
from geosynth.samplers.tangent import TANGENT_MAX_RATIO, tangent_draw
from tests.samplers.test_samplers import CASES, N_DRAWS, ONE_TERM_CASES, P_MIN, exact_cdf

PROPER = [name for name in ONE_TERM_CASES if CASES[name][4] > 0.0]
# Conditionals of ε_ib and of a sparsely observed θ_i / φ_ip: W·e^x ≤ q near the mode, where
# the tangent envelope (not the ARS fallback) makes most draws.
TANGENT_CASES = {
    "eps_no_count": (0.0, [0.3], [1.0], 0.0, 2.0),
    "eps_one_count": (1.0, [0.4], [1.0], 0.0, 1.5),
    "field_two_counts": (2.0, [0.2], [1.0], -0.4, 3.0),
}
# Likelihood-dominated conditionals (W·e^x > q near the mode), where the Gamma envelope runs:
# a well-observed θ_i / φ_ip, an ε_ib whose expected count exceeds τ_ε, and a flat prior (the
# conditional is then exactly a log-Gamma).
GAMMA_CASES = {
    "field_many_counts": (30.0, [10.0], [1.0], 0.0, 2.0),
    "eps_large_expected_count": (3.0, [4.0], [1.0], 0.0, 0.5),
    "eps_no_count_large_weight": (0.0, [3.0], [1.0], 0.0, 0.6),
    "flat_prior": (5.0, [2.0], [1.0], 0.0, 0.0),
}
ENVELOPE_CASES = {**TANGENT_CASES, **GAMMA_CASES}
ALL_CASES = {**{name: CASES[name] for name in PROPER}, **ENVELOPE_CASES}


@njit
def _draws(size, a, weight, m, q, state, start, warm):
    """Tangent draws from ``start``, each warm-started from the previous draw (as in a Gibbs
    sweep) if ``warm``, else from ``start`` itself; cut short at a failure or a wrong W·e^x."""
    out = np.empty(size)
    x = start
    for k in range(size):
        x0 = x if warm else start
        x, wex, status = tangent_draw(x0, a, weight * math.exp(x0), m, q, state)
        if status != 0 or abs(wex - weight * math.exp(x)) > 1e-9 * (1.0 + wex):
            return out[:k]
        out[k] = x
    return out


@njit
def _wrong_tangent(size, a, weight, m, q, state, x0):
    """A planted error: the acceptance exp(−w0(e^d − 1)) drops the tangent's −d term."""
    out = np.empty(size)
    wex = weight * math.exp(x0)
    centre = m + (a - wex) / q
    sd = 1.0 / math.sqrt(q)
    k = 0
    while k < size:
        y = centre + sd * standard_normal(state)
        if uniform(state) < math.exp(-wex * (math.exp(y - x0) - 1.0)):
            out[k] = y
            k += 1
    return out


@njit
def _wrong_gamma(size, a, weight, m, q, state, x0):
    """A planted error: the Gamma envelope's shape forgets the prior tangent's slope −q(x0 − m)."""
    out = np.empty(size)
    log_wex = math.log(weight * math.exp(x0))
    k = 0
    while k < size:
        d = gamma_and_log(state, a)[1] - log_wex
        if uniform(state) < math.exp(-0.5 * q * d * d):
            out[k] = x0 + d
            k += 1
    return out


def _mode(name):
    return exact_cdf(*ALL_CASES[name])[2]


@pytest.mark.parametrize("name", list(ALL_CASES))
def test_warm_started_draws_follow_the_exact_cdf(name):
    a, w, z, m, q = ALL_CASES[name]
    draws = _draws(N_DRAWS, a, float(sum(w)), m, q, make_streams(11, 1)[0], m, True)
    assert draws.shape[0] == N_DRAWS, "a draw failed or returned a wrong W·e^x"
    assert stats.kstest(draws, exact_cdf(a, w, z, m, q)[0]).pvalue > P_MIN


@pytest.mark.parametrize("name", list(ENVELOPE_CASES))
@pytest.mark.parametrize("offset", [-3.0, 0.0, 1.5])
def test_draws_from_a_fixed_start_are_exact_whatever_the_start(name, offset):
    """Each accepted proposal is an exact draw for every tangent point x0 (module docstring)."""
    a, w, z, m, q = ENVELOPE_CASES[name]
    x0 = _mode(name) + offset
    draws = _draws(N_DRAWS, a, float(sum(w)), m, q, make_streams(12, 1)[0], x0, False)
    assert draws.shape[0] == N_DRAWS
    assert stats.kstest(draws, exact_cdf(a, w, z, m, q)[0]).pvalue > P_MIN


@pytest.mark.parametrize("name", list(TANGENT_CASES))
def test_the_gaussian_branch_runs_in_these_cases(name):
    a, w, _, m, q = TANGENT_CASES[name]
    assert sum(w) * math.exp(_mode(name)) <= TANGENT_MAX_RATIO * q


@pytest.mark.parametrize("name", list(GAMMA_CASES))
def test_the_gamma_branch_runs_in_these_cases(name):
    a, w, _, m, q = GAMMA_CASES[name]
    x = _mode(name)
    assert sum(w) * math.exp(x) > TANGENT_MAX_RATIO * q
    assert a - q * (x - m) > 0.0


def test_the_same_check_catches_a_planted_acceptance_error():
    a, w, z, m, q = TANGENT_CASES["eps_one_count"]
    x0 = _mode("eps_one_count")
    wrong = _wrong_tangent(N_DRAWS, a, float(sum(w)), m, q, make_streams(13, 1)[0], x0)
    assert stats.kstest(wrong, exact_cdf(a, w, z, m, q)[0]).pvalue < P_MIN


def test_the_same_check_catches_a_planted_gamma_envelope_error():
    a, w, z, m, q = GAMMA_CASES["field_many_counts"]
    x0 = _mode("field_many_counts")
    wrong = _wrong_gamma(N_DRAWS, a, float(sum(w)), m, q, make_streams(14, 1)[0], x0)
    assert stats.kstest(wrong, exact_cdf(a, w, z, m, q)[0]).pvalue < P_MIN


@njit
def _cold_draws(size, a, log_weight, x0, m, q, state):
    """Draws each from ``x0`` with ``wex = exp(log W + x0)``; the status of a failure ends them."""
    out = np.empty(size)
    wex = math.exp(log_weight + x0)
    for k in range(size):
        x, new_wex, status = tangent_draw(x0, a, wex, m, q, state)
        if status != 0 or not math.isfinite(new_wex):
            return out[:k], status
        out[k] = x
    return out, 0


def test_start_below_exp_range_recovers_the_weight():
    """x0 < −709: W = wex·e^{−x0} was wex·inf = inf (or 0·inf = NaN), and every draw failed.

    a·x − W e^x − (x − m)²/2 with W = 1e300 and m = −log W is the case (5, [1], [1], 0, 1)
    shifted by −log W, so ``x + log W`` has that case's exact CDF.
    """
    shift = 300 * math.log(10.0)
    cdf, _, _, _ = exact_cdf(5.0, [1.0], [1.0], 0.0, 1.0)
    draws, status = _cold_draws(N_DRAWS, 5.0, shift, -720.0, -shift, 1.0, make_streams(4, 1)[0])
    assert status == 0 and draws.shape == (N_DRAWS,)
    assert stats.kstest(draws + shift, cdf).pvalue > P_MIN


def test_underflowed_weight_is_zero():
    """wex = 0 at x0 = −800 (W·e^{x0} underflowed): W = 0, so the draw is N(m + a/q, 1/q)."""
    draws, status = _cold_draws(N_DRAWS, 2.0, -math.inf, -800.0, 1.0, 4.0, make_streams(5, 1)[0])
    assert status == 0 and draws.shape == (N_DRAWS,)
    assert stats.kstest(draws, stats.norm(1.5, 0.5).cdf).pvalue > P_MIN


@njit  # numba's default (Python) error model: a division by q = 0 raises ZeroDivisionError
def _python_model_draw(x0, a, wex, m, q, state):
    return tangent_draw(x0, a, wex, m, q, state)


def test_zero_weight_and_flat_prior_is_improper_not_a_division_by_zero():
    x, wex, status = _python_model_draw(-1e5, 1e-4, 0.0, 0.0, 0.0, make_streams(6, 1)[0])
    assert status == STATUS_IMPROPER and math.isnan(x) and math.isnan(wex)
