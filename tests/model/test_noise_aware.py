"""The noise-aware fit's kernels: the latent count's marginal and draws against closed forms and
scipy's Poisson, and the level move against its exact target."""

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import special, stats

from geosynth import Grid, PaivaModel
from geosynth.dp.locations import NoisyCounts
from geosynth.dp.mechanisms import geometric
from geosynth.errors import PrivacyLeakWarning
from geosynth.model.fit import build_model_data
from geosynth.model.noise_aware import (
    combination_move,
    combination_move_slot,
    draw_latent_count,
    latent_log_marginal,
    level_move,
    level_move_slot,
)
from geosynth.model.priors import Priors
from geosynth.model.runner import initial_state
from geosynth.model.state import ALPHA_VAR, MU_VAR, compute_eta
from geosynth.samplers.rng import make_streams

# (η, c̃, b): small and large intensities, released counts below zero, at the mode and far from
# it, noise scales from 0.05 to 1e4, and walks that pass c = 4,096 (the end of the tables).
CASES = [
    (0.0, 3.0, 0.5), (math.log(0.2), -4.0, 1.0), (math.log(40.0), 20.0, 2.0),
    (math.log(3.0), 0.0, 8.0), (math.log(150.0), 151.0, 0.25), (-3.0, 12.0, 1.0),
    (-8.0, 0.0, 0.05), (2.0, -30.0, 1e4), (math.log(5000.0), 5010.0, 3.0),
    (math.log(4090.0), 4096.0, 40.0), (math.log(1e6), 999_000.0, 500.0), (12.0, 10.0, 0.7),
]


def closed_form_log_marginal(eta, noisy, b):
    """log Σ_c Poisson(c; λ)·e^{−|c̃ − c|/b}, split at c̃ into two Poisson tails.

    Σ_{c ≤ c̃} Poisson(c; λ)·e^{(c − c̃)/b} = e^{λ(q − 1) − c̃/b}·P(Poisson(λq) ≤ c̃) and
    Σ_{c > c̃} Poisson(c; λ)·e^{(c̃ − c)/b} = e^{λ(1/q − 1) + c̃/b}·P(Poisson(λ/q) > c̃),
    q = e^{1/b}: an independent derivation of what the kernel enumerates.
    """
    lam, q = math.exp(eta), math.exp(1.0 / b)
    low = lam * (q - 1.0) - noisy / b + stats.poisson.logcdf(noisy, lam * q)
    high = lam * (1.0 / q - 1.0) + noisy / b + stats.poisson.logsf(noisy, lam / q)
    if not (math.isfinite(low) and math.isfinite(high)):
        return math.nan  # scipy's log cdf underflows to -inf for far tails
    return float(special.logsumexp([low, high]))


def summed_log_marginal(eta, noisy, b):
    """The same sum term by term in the log domain (scipy's Poisson log pmf), over a
    :func:`window` that no enumeration rule truncates."""
    c = window(eta, noisy, b)
    return float(special.logsumexp(stats.poisson.logpmf(c, math.exp(eta)) - np.abs(noisy - c) / b))


@pytest.mark.parametrize("eta, noisy, b", CASES)
def test_latent_log_marginal_matches_the_closed_form_and_the_full_sum(eta, noisy, b):
    got = latent_log_marginal(eta, noisy, 1.0 / b)
    assert got == pytest.approx(summed_log_marginal(eta, noisy, b), rel=1e-11, abs=1e-9)
    closed = closed_form_log_marginal(eta, noisy, b)
    if math.isfinite(closed):  # 7 of the 12 cases: where scipy reaches both tails
        assert got == pytest.approx(closed, rel=1e-11, abs=1e-9)


def window(eta, noisy, b):
    """Counts from 0 to 60 sd above the larger of c̃ and λ, where the mass ends (below 1e-300)."""
    lam = math.exp(eta)
    return np.arange(int(max(noisy, lam) + 60.0 * math.sqrt(lam + 2.0 * b * b) + 60.0))


def exact_pmf(eta, noisy, b):
    """The latent count's pmf on :func:`window` (normalised from the log domain)."""
    c = window(eta, noisy, b)
    logp = stats.poisson.logpmf(c, math.exp(eta)) - np.abs(noisy - c) / b
    p = np.exp(logp - logp.max())
    return c, p / p.sum()


@pytest.mark.parametrize("eta, noisy, b", CASES)
def test_latent_count_draws_follow_the_exact_conditional(eta, noisy, b):
    """Chi-square of 20,000 draws against the pmf: counts at zero, far below c̃ and far above,
    and walks that leave the 1/k and log k! tables (c > 4,096)."""
    rng = make_streams(11, 1)[0]
    draws = np.array([draw_latent_count(eta, noisy, 1.0 / b, rng) for _ in range(20_000)])
    assert np.all(draws >= 0) and np.all(draws == np.floor(draws))
    support, pmf = exact_pmf(eta, noisy, b)
    assert draws.max() < support.size  # no draw outside the window
    expected = pmf * draws.size
    observed = np.bincount(draws.astype(np.int64), minlength=support.size)
    keep = expected >= 5
    obs = np.append(observed[keep], draws.size - observed[keep].sum())
    exp = np.append(expected[keep], draws.size - expected[keep].sum())
    mask = exp > 0
    chi2 = ((obs[mask] - exp[mask]) ** 2 / exp[mask]).sum()
    assert stats.chi2.sf(chi2, mask.sum() - 1) > 1e-3


@pytest.mark.parametrize("eta, b", [(math.log(0.2), 1.0), (math.log(40.0), 2.0),
                                    (math.log(150.0), 0.25), (math.log(3.0), 8.0), (2.0, 50.0)])
def test_latent_log_marginal_is_the_mechanisms_likelihood_up_to_its_normaliser(eta, b):
    """Times the two-sided geometric normaliser (1 − α)/(1 + α), α = e^{−1/b}, the marginal
    is P(c̃ | λ) of the mechanism (Ghosh, Roughgarden and Sundararajan 2009): it sums to 1
    over every released count, negative ones included, so no mass is lost or counted twice."""
    lam, alpha = math.exp(eta), math.exp(-1.0 / b)
    reach = 60.0 * (math.sqrt(lam) + b) + 60.0
    released = np.arange(math.floor(-reach), math.ceil(lam + reach), dtype=np.float64)
    log_p = np.array([latent_log_marginal(eta, c, 1.0 / b) for c in released])
    total = math.exp(special.logsumexp(log_p)) * (1.0 - alpha) / (1.0 + alpha)
    assert total == pytest.approx(1.0, rel=1e-12)


def test_latent_draws_given_the_mechanisms_counts_give_back_the_poisson_prior():
    """True counts c ~ Poisson(λ) noised by :func:`geosynth.dp.mechanisms.geometric` under
    replace-one neighbours (Δ = 2, ε = 1), then one draw c* of every latent count at the scale
    the fit reads, 1/NoisyCounts.noise_scale: when the conditional is the posterior of the noise
    actually added, c* has the prior's law, Poisson(λ) exactly (chi-square of 20,000 draws).
    Draws at b = 1/ε (Δ ignored) fail this with p ≈ 0, and so do b = 1.5/ε and b = 3/ε."""
    lam, shape = 6.0, (100, 200)
    truth = np.random.default_rng(3).poisson(lam, shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)  # seeded noise: tests only
        released = geometric(truth, sensitivity=2, epsilon=1.0, seed=4)
    levels = [f"l{j}" for j in range(shape[1])]
    combos = pd.DataFrame({"x": levels, "x_code": np.arange(shape[1]),
                           "n_records": released.sum(axis=0)})
    noisy = NoisyCounts(counts=released, combos=combos, attributes=("x",), levels={"x": levels},
                        grid=Grid.regular((0.0, 0.0, 10.0, 10.0), shape=(10, 10)), epsilon=1.0,
                        sensitivity=2, neighbours="replace")
    assert noisy.noise_scale == 2.0
    assert (released < 0).any()  # negative released counts are part of the test
    rng = make_streams(5, 1)[0]
    draws = np.array([draw_latent_count(math.log(lam), c, 1.0 / noisy.noise_scale, rng)
                      for c in released.ravel().astype(np.float64)]).astype(np.int64)
    support = np.arange(draws.max() + 1)
    expected = stats.poisson.pmf(support, lam) * draws.size
    observed = np.bincount(draws)
    keep = expected >= 5
    obs = np.append(observed[keep], draws.size - observed[keep].sum())
    exp = np.append(expected[keep], draws.size - expected[keep].sum())
    chi2 = ((obs - exp) ** 2 / exp).sum()
    assert stats.chi2.sf(chi2, obs.size - 1) > 1e-3


def noisy_state(make_scenario_counts, model, seed, b, noise_seed):
    """A chain's starting state on 300 records of a 5 x 5 lattice, the counts with rounded
    Laplace(b) noise, and log m at the state's η (the marginal moves' cache)."""
    counts = make_scenario_counts(n=300, seed=5, shape=(5, 5), attributes=["y", "x1"]).counts
    data, tables, _ = build_model_data(counts, model)
    s = initial_state(data, tables, make_streams(seed, 1)[0])
    compute_eta(data, s)
    rng = np.random.default_rng(noise_seed)
    noisy = tables.counts + np.round(rng.laplace(0.0, b, tables.counts.shape))
    G, B = noisy.shape
    lm = np.array([[latent_log_marginal(s.eta[i, j], noisy[i, j], 1 / b) for j in range(B)]
                   for i in range(G)])
    return data, s, noisy, lm


def grid_target(log_target):
    """The CDF of exp(log_target) on a grid of [-3, 3] that holds all its mass, and its sd."""
    grid = np.linspace(-3.0, 3.0, 1201)
    logf = np.array([log_target(t) for t in grid])
    f = np.exp(logf - logf.max())
    assert f[0] < 1e-12 and f[-1] < 1e-12  # the grid holds the whole target
    sd = math.sqrt(np.sum(f * grid ** 2) / f.sum() - (np.sum(f * grid) / f.sum()) ** 2)
    return grid, np.cumsum(f) / f.sum(), sd


def assert_follows(offsets, grid, cdf):
    """KS test of the chain's offsets after 2,000 steps, every 20th, against the grid's CDF."""
    p = stats.kstest(offsets[2_000::20], lambda x: np.interp(x, grid, cdf)).pvalue
    assert p > 1e-3


def test_level_move_samples_the_line_of_mu_against_an_attributes_levels(make_scenario_counts):
    """Run only the level move from one state: the offset t of (μ + t, α_p − t) must follow the
    exact one-dimensional target, the released counts' marginal likelihood on the attribute's
    baseline combinations times the N(0, var) priors, integrated on a grid (KS, thinned). The
    priors are made tight (variance 0.05) so that their terms weigh as much as the data's."""
    b = 2.0
    data, s, noisy, lm = noisy_state(
        make_scenario_counts, PaivaModel(priors=Priors(mu_var=0.05, alpha_var=0.05)), 3, b, 0)
    G, B = noisy.shape
    k = 1  # x1: its baseline combinations are those of x1's first level
    base = np.flatnonzero(data.combo_levels[:, k] < 0)
    members = np.unique(data.combo_levels[:, k][data.combo_levels[:, k] >= 0])
    mu0, alpha0, eta0 = s.mu[0], s.alpha.copy(), s.eta.copy()
    mu_var, alpha_var = data.priors[MU_VAR], data.priors[ALPHA_VAR]

    def log_target(t):
        like = sum(latent_log_marginal(eta0[i, j] + t, noisy[i, j], 1 / b)
                   for i in range(G) for j in base)
        return like - (mu0 + t) ** 2 / (2 * mu_var) \
            - sum((alpha0[p] - t) ** 2 for p in members) / (2 * alpha_var)

    grid, cdf, sd = grid_target(log_target)
    s.marginal_log_sd[level_move_slot(s.alpha.shape[0], k)] = math.log(2.4 * sd)
    offsets, scratch = np.empty(40_000), np.empty_like(lm)
    for n in range(offsets.size):
        level_move(data, s, noisy, 1 / b, k, False, lm, scratch)
        offsets[n] = s.mu[0] - mu0
    t = offsets[-1]
    np.testing.assert_allclose(s.alpha[members], alpha0[members] - t, atol=1e-9)
    others = np.setdiff1d(np.arange(B), base)
    np.testing.assert_allclose(s.eta[:, others], eta0[:, others], atol=1e-9)
    np.testing.assert_allclose(s.eta[:, base], eta0[:, base] + t, atol=1e-9)
    assert_follows(offsets, grid, cdf)


def test_combination_move_samples_the_mean_of_a_combinations_errors(make_scenario_counts):
    """Run only the combination move from one state: the offset t of ε_ib + t (every cell i of
    one combination b) must follow the exact target, the marginal likelihood of b's entries
    times the errors' N(0, 1/τ_ε) priors (KS, thinned). τ_ε is made small so the prior term
    and the data both shape it."""
    b_noise = 1.0
    data, s, noisy, lm = noisy_state(make_scenario_counts, PaivaModel(), 4, b_noise, 1)
    s.tau_eps[0] = 2.0
    G, B = noisy.shape
    combo = 2
    eps0, eta0, tau = s.eps.copy(), s.eta.copy(), s.tau_eps[0]

    def log_target(t):
        like = sum(latent_log_marginal(eta0[i, combo] + t, noisy[i, combo], 1 / b_noise)
                   for i in range(G))
        return like - 0.5 * tau * np.sum((eps0[:, combo] + t) ** 2)

    grid, cdf, sd = grid_target(log_target)
    slot = combination_move_slot(s.alpha.shape[0], data.combo_levels.shape[1], combo)
    s.marginal_log_sd[slot] = math.log(2.4 * sd)
    offsets, scratch = np.empty(40_000), np.empty_like(lm)
    for n in range(offsets.size):
        combination_move(data, s, noisy, 1 / b_noise, combo, False, lm, scratch)
        offsets[n] = s.eps[0, combo] - eps0[0, combo]
    t = offsets[-1]
    np.testing.assert_allclose(s.eps[:, combo], eps0[:, combo] + t, atol=1e-9)
    np.testing.assert_allclose(s.eta[:, combo], eta0[:, combo] + t, atol=1e-9)
    others = np.setdiff1d(np.arange(B), [combo])
    np.testing.assert_array_equal(s.eta[:, others], eta0[:, others])
    assert_follows(offsets, grid, cdf)



def test_a_move_from_beyond_the_eta_limit_is_refused_as_its_reverse_is(make_scenario_counts):
    # The collapsed moves refused a proposal beyond |eta| = ETA_LIMIT but not a state beyond
    # it: from eta = 25.5 a move into the box was accepted by the usual ratio while its reverse
    # was always refused, so detailed balance failed there. Outside the box the move is now
    # the identity (the sweep, which draws eta without the limit, brings the chain back).
    from geosynth.model.noise_aware import ETA_LIMIT

    data, s, noisy, lm = noisy_state(make_scenario_counts, PaivaModel(), 4, 1.0, 1)
    combo = 2
    s.eps[:, combo] += ETA_LIMIT + 0.5 - s.eta[:, combo]
    s.eta[:, combo] = ETA_LIMIT + 0.5
    s.expeta[:, combo] = np.exp(s.eta[:, combo])
    for i in range(noisy.shape[0]):
        lm[i, combo] = latent_log_marginal(s.eta[i, combo], noisy[i, combo], 1.0)
    slot = combination_move_slot(s.alpha.shape[0], data.combo_levels.shape[1], combo)
    s.marginal_log_sd[slot] = math.log(2.0)  # most proposals land inside the box
    scratch = np.empty_like(lm)
    for _ in range(200):
        combination_move(data, s, noisy, 1.0, combo, False, lm, scratch)
    assert np.all(s.eta[:, combo] == ETA_LIMIT + 0.5)
