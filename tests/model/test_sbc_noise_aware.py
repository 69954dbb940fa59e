"""Simulation-based calibration of the noise-aware fit (latent counts behind ε-DP counts).

As in ``test_sbc.py``: parameters from the prior, counts from the likelihood, then discrete
Laplace noise of scale b on every count. The rank of each true value — including each
combination's true total, a latent quantity only the noise-aware step can recover — among
the posterior draws must be uniform. A wrong latent-count conditional, a wrong marginal
likelihood in the collapsed moves, or a stale count at recording time shows up here.
"""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from geosynth import Grid, PaivaModel
from geosynth.dp.locations import NoisyCounts
from tests.model.test_sbc import PRIORS, simulate

N_REPLICATIONS = 200
N_DRAWS = 99
THIN = 10
N_BINS = 10
NOISE_SCALE = 1.0  # ε = 1 under add/remove neighbours


def discrete_laplace(rng, scale, size):
    """Two-sided geometric noise: difference of two geometric variables on {0, 1, ...}."""
    p = 1.0 - np.exp(-1.0 / scale)
    return rng.geometric(p, size) - rng.geometric(p, size)


def noisy_counts(grid, counts, rng):
    noisy = counts + discrete_laplace(rng, NOISE_SCALE, counts.shape)
    combos = pd.DataFrame({"x": ["a", "b"], "x_code": [0, 1],
                           "n_records": noisy.sum(axis=0).astype(np.int64)})
    return NoisyCounts(counts=noisy.astype(np.int64), combos=combos, attributes=("x",),
                       levels={"x": ["a", "b"]}, grid=grid, epsilon=1.0 / NOISE_SCALE,
                       sensitivity=1, neighbours="add-remove")


def test_discrete_laplace_helper_has_the_right_variance():
    rng = np.random.default_rng(0)
    draws = discrete_laplace(rng, NOISE_SCALE, 200_000)
    r = np.exp(-1.0 / NOISE_SCALE)
    assert draws.var() == pytest.approx(2 * r / (1 - r) ** 2, rel=0.02)


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::geosynth.errors.DataWarning")
def test_noise_aware_simulation_based_calibration():
    grid = Grid.regular((0.0, 0.0, 3.0, 3.0), shape=(3, 3))
    rng = np.random.default_rng(2026)
    model = PaivaModel(priors=PRIORS)
    names = ("mu", "alpha[x=b]", "total[a]", "total[b]")
    ranks = {name: [] for name in names}
    for replication in range(N_REPLICATIONS):
        counts, truth = simulate(grid, rng)
        fit = model.fit(noisy_counts(grid, counts, rng), n_iter=200 + N_DRAWS * THIN,
                        burn_in=200, thin=THIN, chains=1, seed=replication, progress=False)
        totals = fit.latent_totals[0]
        draws = {"mu": fit.scalar("mu")[0], "alpha[x=b]": fit.scalar("alpha[x=b]")[0],
                 "total[a]": totals[:, 0], "total[b]": totals[:, 1]}
        truth = {"mu": truth["mu"], "alpha[x=b]": truth["alpha[x=b]"],
                 "total[a]": counts[:, 0].sum(), "total[b]": counts[:, 1].sum()}
        for name, value in truth.items():
            # Ties (integer totals) are broken at random, as SBC prescribes for discrete values.
            below = np.sum(draws[name] < value)
            ties = np.sum(draws[name] == value)
            ranks[name].append(int(below + rng.integers(0, ties + 1)))
    for name in ("mu", "alpha[x=b]", "total[a]", "total[b]"):
        values = np.asarray(ranks[name])
        histogram = np.bincount(values * N_BINS // (N_DRAWS + 1), minlength=N_BINS)
        p_value = stats.chisquare(histogram).pvalue
        assert p_value > 0.001, f"SBC ranks of {name} not uniform: {histogram}, p = {p_value:.1e}"
