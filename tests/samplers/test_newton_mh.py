"""The Newton-proposal Metropolis–Hastings step leaves the one-term conditional invariant."""

import math

import numpy as np
import pytest
from numba import njit
from scipy import stats

from geosynth.model.state import MH_EXACT_SHARE
from geosynth.samplers import make_streams
from geosynth.samplers.ars import ars_draw_single
from geosynth.samplers.newton_mh import newton_mh_step
from geosynth.samplers.rng import standard_exponential, standard_normal, uniform
from tests.samplers.test_samplers import (
    CASES,
    N_DRAWS,
    ONE_TERM_CASES,
    P_MIN,
    exact_cdf,
    single_draws,
)

PROPER = [name for name in ONE_TERM_CASES if CASES[name][4] > 0.0]


@njit
def _one_step_each(starts, a, weight, m, q, state):
    """One MH step from every start; the new values and how many moved."""
    out = np.empty_like(starts)
    moved = 0
    for k in range(starts.shape[0]):
        x = starts[k]
        new, wex, status = newton_mh_step(x, a, weight * math.exp(x), m, q, state)
        if status != 0 or abs(wex - weight * math.exp(new)) > 1e-9 * (1.0 + wex):
            return out[:k], -1
        out[k] = new
        moved += new != x
    return out, moved


@njit
def _step_without_reverse_density(x, a, wex, m, q, state):
    """A planted error: the MH ratio without the reverse proposal density (as if symmetric)."""
    curvature = wex + q
    mean = x + (a - wex - q * (x - m)) / curvature
    proposal = mean + standard_normal(state) / math.sqrt(curvature)
    step = proposal - x
    wex_new = wex * math.exp(step)
    d_old, d_new = x - m, proposal - m
    log_target = a * step - (wex_new - wex) - 0.5 * q * (d_new * d_new - d_old * d_old)
    if standard_exponential(state) > -log_target:
        return proposal
    return x


@njit
def _one_wrong_step_each(starts, a, weight, m, q, state):
    out = np.empty_like(starts)
    for k in range(starts.shape[0]):
        out[k] = _step_without_reverse_density(starts[k], a, weight * math.exp(starts[k]), m, q,
                                               state)
    return out


@njit
def _chain(size, thin, start, a, weight, m, q, state, exact_share):
    """MH steps, each replaced by an exact ARS draw with probability ``exact_share`` (the
    mixture the engine runs under sampler="mh")."""
    out = np.empty(size)
    x = start
    wex = weight * math.exp(start)
    for k in range(size * thin):
        if uniform(state) < exact_share:
            x, _ = ars_draw_single(x, a, weight, m, q, state)
            wex = weight * math.exp(x)
        else:
            x, wex, _ = newton_mh_step(x, a, wex, m, q, state)
        if (k + 1) % thin == 0:
            out[k // thin] = x
    return out


def _exact_draws(name, seed):
    a, w, _, m, q = CASES[name]
    cdf, _, mode, scale = exact_cdf(*CASES[name])
    draws = single_draws(N_DRAWS, a, float(np.sum(w)), m, q, make_streams(seed, 1)[0], mode)
    assert draws.shape == (N_DRAWS,)
    return cdf, draws


@pytest.mark.parametrize("name", PROPER)
def test_one_step_from_the_target_stays_on_the_target(name):
    """Stationarity: exact draws (ARS, tested against the exact CDF) moved by one MH step are
    still distributed as the target; a step that moved nothing would pass trivially, so most
    of them must move."""
    a, w, _, m, q = CASES[name]
    cdf, starts = _exact_draws(name, 5)
    moved_draws, moved = _one_step_each(starts, a, float(np.sum(w)), m, q, make_streams(6, 1)[0])
    assert moved >= 0, "invalid status, or W·e^x at the new value was not returned"
    assert moved > 0.5 * N_DRAWS, f"only {moved} of {N_DRAWS} proposals accepted"
    assert stats.kstest(moved_draws, cdf).pvalue > P_MIN


def test_the_stationarity_check_catches_a_missing_reverse_density():
    """Without the reverse proposal density the step is biased; the same check must see it."""
    name = "mode_far_from_m"
    a, w, _, m, q = CASES[name]
    cdf, starts = _exact_draws(name, 5)
    wrong = starts
    for seed in range(5):  # a few biased steps, as a chain would take between two draws
        wrong = _one_wrong_step_each(wrong, a, float(np.sum(w)), m, q, make_streams(seed, 1)[0])
    right = starts
    for seed in range(5):
        right, _ = _one_step_each(right, a, float(np.sum(w)), m, q, make_streams(seed, 1)[0])
    assert stats.kstest(right, cdf).pvalue > P_MIN
    assert stats.kstest(wrong, cdf).pvalue < 1e-6


@pytest.mark.parametrize("name", PROPER)
def test_the_mixture_with_exact_draws_reaches_the_target_from_far_away(name):
    a, w, _, m, q = CASES[name]
    cdf, _, mode, scale = exact_cdf(*CASES[name])
    draws = _chain(N_DRAWS // 4, 20, mode + 8 * scale, a, float(np.sum(w)), m, q,
                   make_streams(9, 1)[0], MH_EXACT_SHARE)
    assert stats.kstest(draws[50:], cdf).pvalue > P_MIN


def test_steps_alone_strand_far_in_the_exponential_tail():
    """Why the engine mixes in exact draws: from 8 sd above the mode of a count-0 conditional,
    one Newton step lands about 1 lower, and the reverse step from there is so unlikely that
    the MH step never accepts."""
    a, w, _, m, q = CASES["zero_counts"]
    _, _, mode, scale = exact_cdf(*CASES["zero_counts"])
    draws = _chain(1000, 1, mode + 8 * scale, a, float(np.sum(w)), m, q, make_streams(9, 1)[0],
                   0.0)
    assert np.all(draws == mode + 8 * scale)


@pytest.mark.parametrize(
    "args", [(math.nan, 1.0, 0.0, 1.0), (1.0, -1.0, 0.0, 1.0), (1.0, 1.0, 0.0, 0.0),
             (1.0, math.inf, 0.0, 1.0)],
)
def test_invalid_input_is_reported(args):
    x, wex, status = newton_mh_step(0.0, *args, make_streams(1, 1)[0])
    assert status == 1 and math.isnan(x) and math.isnan(wex)


def test_same_stream_same_steps():
    first = _chain(100, 1, 0.0, 3.0, 1.0, 0.0, 1.0, make_streams(4, 1)[0], MH_EXACT_SHARE)
    again = _chain(100, 1, 0.0, 3.0, 1.0, 0.0, 1.0, make_streams(4, 1)[0], MH_EXACT_SHARE)
    np.testing.assert_array_equal(first, again)
