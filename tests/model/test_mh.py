"""sampler="mh": single-site updates by Newton-proposal Metropolis–Hastings steps.

The step itself is tested in ``tests/samplers/test_newton_mh.py``; simulation-based calibration
(``test_sbc.py``), two-sample agreement with exact Gibbs and reproducibility by seed
(``test_block.py``, with the block sampler) check the chain.
"""

import numpy as np
import pytest

import geosynth
from geosynth.dp import dp_counts


@pytest.fixture(scope="module")
def scenario_counts():
    scenario = geosynth.datasets.paiva_scenario(n=300, seed=3)
    grid = geosynth.Grid.regular(scenario.bounds, shape=(6, 6), crs=scenario.crs)
    return geosynth.prepare(scenario.data, grid, attributes=["y", "x1"], continuous="z")


RUN = dict(n_iter=120, burn_in=40, thin=2, chains=2, seed=11, progress=False)


def test_every_parameter_moves(scenario_counts):
    fit = geosynth.PaivaModel(sampler="mh").fit(scenario_counts, **RUN)
    assert np.isfinite(fit.scalars).all()
    for name in fit.scalar_names:
        assert np.unique(fit.scalar(name)).size > 30, name
    eta = fit.eta.reshape(-1, fit.eta.shape[-2] * fit.eta.shape[-1])
    assert np.all(eta.std(axis=0) > 0)


def test_parallel_is_refused_with_the_fix(scenario_counts):
    with pytest.raises(geosynth.errors.InputError, match="sampler='mh' use parallel=False"):
        geosynth.PaivaModel(sampler="mh").fit(scenario_counts, n_iter=20, burn_in=5,
                                              parallel=True, progress=False)


@pytest.mark.filterwarnings("ignore::geosynth.errors.PrivacyLeakWarning")
def test_noise_aware_fit_runs_the_mh_updates():
    scenario = geosynth.datasets.paiva_scenario(n=300, seed=3)
    grid = geosynth.Grid.regular(scenario.bounds, shape=(5, 5), crs=scenario.crs)
    counts = geosynth.prepare(scenario.data, grid, attributes=["y", "x1"],
                              levels={"y": [0, 1], "x1": [1, 2]})
    released = dp_counts(counts, epsilon=2.0, seed=1)
    mh = geosynth.PaivaModel(sampler="mh").fit(released, **RUN)
    exact = geosynth.PaivaModel(sampler="gibbs").fit(released, **RUN)
    assert np.isfinite(mh.scalars).all()
    assert not np.array_equal(mh.scalars, exact.scalars)
