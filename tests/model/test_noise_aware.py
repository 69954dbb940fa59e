"""The latent-count kernels of the noise-aware fit against closed forms (scipy's Poisson)."""

import math

import numpy as np
import pytest
from scipy import special, stats

from geosynth.model.noise_aware import draw_latent_count, latent_log_marginal
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


@pytest.mark.parametrize("eta, noisy, b", [CASES[8], CASES[9], CASES[6], CASES[1]])
def test_latent_count_draws_follow_the_exact_conditional_beyond_the_tables(eta, noisy, b):
    """Chi-square of 20,000 draws against the pmf, where the walks leave the 1/k and log k!
    tables (c > 4,096) and where the count sits at zero."""
    rng = make_streams(7, 1)[0]
    draws = np.array([draw_latent_count(eta, noisy, 1.0 / b, rng) for _ in range(20_000)])
    assert np.all(draws >= 0) and np.all(draws == np.floor(draws))
    support, pmf = exact_pmf(eta, noisy, b)
    expected = pmf * draws.size
    observed = np.array([np.count_nonzero(draws == c) for c in support], dtype=float)
    assert observed.sum() == draws.size  # no draw outside the window
    keep = expected >= 5
    obs = np.append(observed[keep], draws.size - observed[keep].sum())
    exp = np.append(expected[keep], draws.size - expected[keep].sum())
    mask = exp > 0
    chi2 = ((obs[mask] - exp[mask]) ** 2 / exp[mask]).sum()
    assert stats.chi2.sf(chi2, mask.sum() - 1) > 1e-3
