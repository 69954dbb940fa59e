"""Simulation-based calibration of the block sampler, and a planted error that it catches.

Same design and thresholds as ``test_sbc.py`` (Talts et al. 2018): parameters from the prior,
counts from the likelihood, ranks of the truth among thinned posterior draws must be uniform.
Run with the block moves alone (no single-site updates of the fields: ``HYBRID = False``) and
as shipped; the planted error flips the sign of the reverse proposal density in the
Metropolis–Hastings ratio, which the same check must reject.
"""

import numpy as np
import pytest
from scipy import stats

from geosynth import Grid, PaivaModel
from geosynth.model import block
from tests.model.test_sbc import N_BINS, N_DRAWS, PRIORS, THIN, cell_counts, simulate

N_REPLICATIONS = 300
NAMES = ("mu", "alpha[x=b]", "theta[0]", "tau_theta")


def sbc_p_values(n_replications=N_REPLICATIONS):
    grid = Grid.regular((0.0, 0.0, 3.0, 3.0), shape=(3, 3))
    rng = np.random.default_rng(2018)
    model = PaivaModel(priors=PRIORS, sampler="block")
    ranks = {name: [] for name in NAMES}
    for replication in range(n_replications):
        counts, truth = simulate(grid, rng)
        fit = model.fit(cell_counts(grid, counts), n_iter=200 + N_DRAWS * THIN, burn_in=200,
                        thin=THIN, chains=1, seed=replication, progress=False)
        draws = {
            "mu": fit.scalar("mu")[0],
            "alpha[x=b]": fit.scalar("alpha[x=b]")[0],
            "theta[0]": fit.theta[0, :, 0],
            "tau_theta": fit.scalar("tau_theta")[0],
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
@pytest.mark.parametrize("hybrid", [False, True], ids=["blocks-only", "as-shipped"])
def test_block_sampler_is_calibrated(monkeypatch, hybrid):
    monkeypatch.setattr(block, "HYBRID", hybrid)
    for name, (p_value, histogram) in sbc_p_values().items():
        assert p_value > 0.001, f"SBC ranks of {name} not uniform: {histogram}, p = {p_value:.1e}"


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::geosynth.errors.DataWarning")
def test_sbc_catches_a_wrong_sign_in_the_mh_ratio(monkeypatch):
    monkeypatch.setattr(block, "HYBRID", False)
    monkeypatch.setattr(block, "PROPOSAL_SIGN", -1.0)
    p_values = {name: p for name, (p, _) in sbc_p_values().items()}
    assert min(p_values.values()) < 1e-6, p_values
