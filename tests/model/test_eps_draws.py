"""ε's vectorised draws (the passes of ``update_eps``) are exact draws of every entry's conditional.

Entries of six kinds share τ_ε, as in a sweep: sparse ones that the first pass's Gaussian
tangent try accepts mostly, and likelihood-dominated ones (W·e^ε > τ_ε) that end in
``tangent_draw``'s Gamma envelope. Each kind's pooled draws are checked against its exact CDF.
"""

import numpy as np
import pytest
from scipy import stats

from geosynth.model.conditionals import (
    TRY_ACCEPTED,
    TRY_REFUSED,
    TRY_UNFINISHED,
    draw_eps_entries,
    eps_tangent_pass,
)
from geosynth.samplers import make_streams, rng
from tests.samplers.test_samplers import P_MIN, exact_cdf

Q = 0.5  # τ_ε: about its posterior mean in the bench's scenario at 1,600 cells
KINDS = [(0.0, 0.05), (0.0, 0.3), (1.0, 0.4), (0.0, 3.0), (3.0, 4.0), (12.0, 8.0)]  # (count, W)
PER_KIND = 500
ROUNDS = 40  # 20,000 draws per kind


def _entries(start):
    counts = np.repeat([float(c) for c, _ in KINDS], PER_KIND)
    log_w = np.repeat(np.log([w for _, w in KINDS]), PER_KIND)
    eps = np.full(counts.size, start)
    return counts, log_w, eps, log_w + eps, np.exp(log_w + eps)


def _draws(q, seed, start=0.0, warm=True):
    """ROUNDS calls of draw_eps_entries; each from the last draws (``warm``) or from ``start``."""
    counts, log_w, eps, eta, expeta = _entries(start)
    n = counts.size
    work, flags, index = np.zeros((4, n)), np.zeros(n, np.int8), np.zeros(n, np.int64)
    rng = make_streams(seed, 1)[0]
    out = np.empty((ROUNDS, n))
    for r in range(ROUNDS):
        if not warm:
            eps[:], eta[:], expeta[:] = start, log_w + start, np.exp(log_w + start)
        assert draw_eps_entries(eps, counts, eta, expeta, q, rng, work, flags, index) == 0
        out[r] = eps
    return out, log_w, eps, eta, expeta


def _p_values(draws):
    return [
        stats.kstest(draws[:, k * PER_KIND:(k + 1) * PER_KIND].ravel(),
                     exact_cdf(c, [w], [1.0], 0.0, Q)[0]).pvalue
        for k, (c, w) in enumerate(KINDS)
    ]


def test_warm_started_draws_follow_every_kinds_exact_conditional():
    draws = _draws(Q, seed=5)[0]
    assert min(_p_values(draws)) > P_MIN


@pytest.mark.parametrize("start", [-3.0, 2.0])
def test_draws_from_a_fixed_start_far_from_the_mode_are_exact(start):
    """The tangent point is the current value; every draw must be exact whatever it is."""
    draws = _draws(Q, seed=6, start=start, warm=False)[0]
    assert min(_p_values(draws)) > P_MIN


def test_eta_and_its_exponential_follow_the_draws():
    _, log_w, eps, eta, expeta = _draws(Q, seed=7)
    np.testing.assert_allclose(eta - eps, log_w, atol=1e-9)
    np.testing.assert_allclose(expeta, np.exp(eta), rtol=1e-12)


def test_a_pass_accepts_refuses_and_leaves_unfinished_tries():
    """The first pass leaves work for every later path: refused and unfinished entries."""
    counts, _, eps, eta, expeta = _entries(0.0)
    flags = np.full(counts.size, -1, np.int8)
    eps_tangent_pass(eps, counts, expeta, eta, Q, np.uint64(2026), counts.size, flags)
    tallies = [int(np.sum(flags == f)) for f in (TRY_ACCEPTED, TRY_REFUSED, TRY_UNFINISHED)]
    assert sum(tallies) == counts.size
    assert min(tallies[:2]) > 0.1 * counts.size
    # The ziggurat's first comparison fails with probability 1 − mean(x_{i+1}/x_i) (2.8 %).
    outside = 1.0 - float(np.mean(rng._ZIG_RATIO))
    assert stats.binomtest(tallies[2], counts.size, outside).pvalue > P_MIN


def test_the_same_check_catches_draws_made_with_a_precision_ten_per_cent_off():
    draws = _draws(1.1 * Q, seed=5)[0]
    assert min(_p_values(draws)) < P_MIN
