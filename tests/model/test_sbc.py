"""Simulation-based calibration (Talts et al. 2018) of the Gibbs engine.

Parameters are drawn from the prior of the model the engine targets, counts from the likelihood,
and the rank of each true value among (thinned) posterior draws must be uniform. Any wrong full
conditional, wrong Gamma shape or invalid re-centring move shows up as non-uniform ranks.
"""

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from geosynth import Grid, PaivaModel, Priors
from geosynth.data import CellCounts

PRIORS = Priors(mu_var=1.0, alpha_var=1.0, level_var=1.0, theta_shape=4.0, theta_rate=2.0,
                phi_shape=4.0, phi_rate=2.0, eps_shape=4.0, eps_rate=1.0)
N_REPLICATIONS = 300
N_DRAWS = 99  # ranks take N_DRAWS + 1 values
THIN = 10
N_BINS = 10


def icar_field(grid, tau, level_var, rng):
    """Draw from ICAR(tau) x N(component mean; 0, level_var): a proper Gaussian."""
    adjacency = grid.adjacency.toarray()
    precision = tau * (np.diag(adjacency.sum(axis=1)) - adjacency)
    for c in range(grid.n_components):
        member = (grid.component == c).astype(float)
        n_c = member.sum()
        precision += np.outer(member, member) / (level_var * n_c**2)
    return rng.multivariate_normal(np.zeros(grid.n_cells), np.linalg.inv(precision))


def simulate(grid, rng):
    p = PRIORS
    tau_theta = rng.gamma(p.theta_shape, 1 / p.theta_rate)
    tau_phi = rng.gamma(p.phi_shape, 1 / p.phi_rate)
    tau_eps = rng.gamma(p.eps_shape, 1 / p.eps_rate)
    mu = rng.normal(0, np.sqrt(p.mu_var))
    alpha = rng.normal(0, np.sqrt(p.alpha_var))
    theta = icar_field(grid, tau_theta, p.level_var, rng)
    phi = icar_field(grid, tau_phi, p.level_var, rng)
    eps = rng.normal(0, 1 / np.sqrt(tau_eps), (grid.n_cells, 2))
    eta = mu + theta[:, None] + eps
    eta[:, 1] += alpha + phi
    counts = rng.poisson(np.exp(eta))
    truth = {
        "mu": mu + theta.mean(),
        "alpha[x=b]": alpha + phi.mean(),
        "theta[0]": theta[0] - theta.mean(),
        "tau_theta": tau_theta,
        "tau_phi[x=b]": tau_phi,
        "tau_eps": tau_eps,
    }
    return counts, truth


def cell_counts(grid, counts):
    record_cell, record_combo = np.nonzero(counts)
    repeats = counts[record_cell, record_combo]
    record_cell = np.repeat(record_cell, repeats)
    record_combo = np.repeat(record_combo, repeats)
    combos = pd.DataFrame({"x": ["a", "b"], "x_code": [0, 1],
                           "n_records": counts.sum(axis=0).astype(np.int64)})
    return CellCounts(
        counts=counts.astype(np.int64), combos=combos, record_cell=record_cell.astype(np.int64),
        record_combo=record_combo.astype(np.int64), record_index=pd.RangeIndex(len(record_cell)),
        attributes=("x",), levels={"x": ["a", "b"]}, continuous=None, zbar=None,
        zbar_mask=None, zbar_mean=None, zbar_sd=None, grid=grid,
    )


def sbc_p_values(model, n_replications=N_REPLICATIONS):
    """Chi-square p-value and rank histogram of each checked quantity under ``model``."""
    grid = Grid.regular((0.0, 0.0, 3.0, 3.0), shape=(3, 3))
    rng = np.random.default_rng(2018)
    ranks = {name: [] for name in ("mu", "alpha[x=b]", "theta[0]", "tau_theta", "tau_phi[x=b]",
                                   "tau_eps")}
    for replication in range(n_replications):
        counts, truth = simulate(grid, rng)
        fit = model.fit(cell_counts(grid, counts), n_iter=200 + N_DRAWS * THIN, burn_in=200,
                        thin=THIN, chains=1, seed=replication, progress=False)
        draws = {
            "mu": fit.scalar("mu")[0],
            "alpha[x=b]": fit.scalar("alpha[x=b]")[0],
            "theta[0]": fit.theta[0, :, 0],
            "tau_theta": fit.scalar("tau_theta")[0],
            "tau_phi[x=b]": fit.scalar("tau_phi[x=b]")[0],
            "tau_eps": fit.scalar("tau_eps")[0],
        }
        for name, value in truth.items():
            ranks[name].append(int(np.sum(draws[name] < value)))
    out = {}
    for name, values in ranks.items():
        histogram = np.bincount(np.asarray(values) * N_BINS // (N_DRAWS + 1), minlength=N_BINS)
        out[name] = (stats.chisquare(histogram).pvalue, histogram)
    return out


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::geosynth.errors.DataWarning")
@pytest.mark.parametrize("sampler", ["gibbs", "mh"])
def test_simulation_based_calibration(sampler):
    for name, (p_value, histogram) in sbc_p_values(PaivaModel(priors=PRIORS,
                                                              sampler=sampler)).items():
        assert p_value > 0.001, f"SBC ranks of {name} not uniform: {histogram}, p = {p_value:.1e}"
