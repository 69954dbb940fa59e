"""Nested cell aggregates and the exact shifts of θ over them (geosynth.model.coarse).

The aggregates are checked as a graph partition should be (connected, nested, none across two
components); the shift of θ over one aggregate as a Gibbs draw: its draws against the exact
conditional of k, computed here from the whole log posterior of θ + k·1_A on a fine grid
(Poisson terms, ICAR quadratic form and the component means' priors), with a KS test that
also rejects the conditional of a planted error. Calibration of whole sweeps: ``test_sbc.py``.
"""

import geopandas as gpd
import numpy as np
import pytest
from scipy import sparse, stats
from shapely.geometry import box

from geosynth import Grid, PaivaModel, prepare
from geosynth.datasets import paiva_scenario
from geosynth.model.coarse import coarse_aggregates, coarse_shifts
from geosynth.model.fit import build_model_data
from geosynth.model.runner import initial_state
from geosynth.model.state import LEVEL_VAR, compute_eta
from geosynth.samplers.rng import make_streams


def _split_grid(side=12, bounds=(0.0, 0.0, 12.0, 12.0)):
    """A side × side queen lattice over ``bounds`` cut in two by an excluded column."""
    x0, y0, x1, y1 = bounds
    width = (x1 - x0) / side
    grid = Grid.regular(bounds, shape=(side, side),
                        exclude=gpd.GeoSeries([box(x0 + 4 * width, y0, x0 + 5 * width, y1)]))
    assert grid.n_components == 2
    return grid


def _aggregates(grid):
    indptr = np.asarray(grid.indptr, dtype=np.int64)
    indices = np.asarray(grid.indices, dtype=np.int64)
    ptr, cells = coarse_aggregates(indptr, indices, min_aggregates=2)
    return [cells[ptr[a]:ptr[a + 1]] for a in range(len(ptr) - 1)]


@pytest.mark.parametrize("side", [12, 30])
def test_aggregates_are_connected_nested_and_within_one_component(side):
    grid = _split_grid(side)
    groups = _aggregates(grid)
    assert len(groups) > 4 and all(len(g) >= 2 for g in groups)
    adjacency = grid.adjacency
    sets = [set(g.tolist()) for g in groups]
    for group in groups:
        assert len(set(np.asarray(grid.component)[group])) == 1
        n_parts, _ = sparse.csgraph.connected_components(adjacency[group][:, group])
        assert n_parts == 1
    for a, first in enumerate(sets):  # a laminar family: disjoint or one inside the other
        for second in sets[a + 1:]:
            common = first & second
            assert not common or common == first or common == second
    sizes = np.array([len(g) for g in groups])
    assert sizes.max() >= 20  # a coarser level than the first was built


def _one_aggregate_case(seed):
    """A fitted-looking state on the split lattice, and data that shift one aggregate only."""
    scenario = paiva_scenario(n=600, seed=seed)
    grid = _split_grid(12, scenario.bounds)
    counts = prepare(scenario.data, grid, attributes=["y"], outside="drop")
    data, tables, _ = build_model_data(counts, PaivaModel())
    groups = _aggregates(grid)
    group = max((g for g in groups if len(g) < 30), key=len)  # a mid-size aggregate
    data = data._replace(coarse_ptr=np.array([0, len(group)], dtype=np.int64),
                         coarse_cells=np.sort(group).astype(np.int64))
    state = initial_state(data, tables, make_streams(seed, 1)[0])
    rng = np.random.default_rng(seed)
    state.theta[:] = rng.normal(0.0, 0.6, state.theta.shape)
    state.eps[:] = rng.normal(0.0, 0.3, state.eps.shape)
    state.tau_theta[0] = 1.7
    compute_eta(data, state)
    return data, state, np.sort(group), grid


def _log_conditional(k, data, state, group, grid, tau):
    """log π(θ + k·1_A | rest) up to a constant, from the whole target, for each k."""
    member = np.zeros(state.theta.shape[0], dtype=bool)
    member[group] = True
    adjacency = grid.adjacency.toarray()
    structure = np.diag(adjacency.sum(axis=1)) - adjacency
    component = np.asarray(grid.component)
    sizes = np.bincount(component).astype(float)
    level_var = data.priors[LEVEL_VAR]
    out = np.empty(k.shape)
    for n, step in enumerate(k):
        theta = state.theta + step * member
        eta = state.eta + step * member[:, None]
        sums = np.bincount(component, weights=theta)
        out[n] = (np.sum(state.counts * eta - np.exp(eta))
                  - 0.5 * tau * theta @ structure @ theta
                  - np.sum(sums ** 2 / (2.0 * level_var * sizes ** 2)))
    return out


def _cdf(data, state, group, grid, tau):
    k = np.linspace(-6.0, 6.0, 24001)
    log_density = _log_conditional(k, data, state, group, grid, tau)
    density = np.exp(log_density - log_density.max())
    cdf = np.cumsum(density)
    cdf /= cdf[-1]
    return lambda x: np.interp(x, k, cdf)


@pytest.mark.parametrize("seed", [3, 8])
def test_the_shift_over_an_aggregate_is_an_exact_draw_of_its_conditional(seed):
    data, state, group, grid = _one_aggregate_case(seed)
    start = {name: np.array(v) for name, v in state._asdict().items()}
    draws = []
    comp_sum = np.zeros(data.component_size.shape[0])
    for n in range(2000):
        trial = type(state)(**{name: np.array(v) for name, v in start.items()})
        trial.rng[:] = make_streams(1000 + n, 1)[0]
        assert coarse_shifts(data, trial, comp_sum) == 0
        step = trial.theta - start["theta"]
        assert np.allclose(step[group], step[group][0]) and np.all(np.delete(step, group) == 0)
        np.testing.assert_allclose(trial.eta - start["eta"],
                                   np.broadcast_to(step[:, None], trial.eta.shape), atol=1e-12)
        np.testing.assert_allclose(trial.expeta, np.exp(trial.eta), rtol=1e-12)
        draws.append(step[group][0])
    exact = _cdf(data, state, group, grid, state.tau_theta[0])
    assert stats.kstest(draws, exact).pvalue > 1e-3
    # The same test rejects a planted error: the conditional of twice the field's precision.
    planted = _cdf(data, state, group, grid, 2.0 * state.tau_theta[0])
    assert stats.kstest(draws, planted).pvalue < 1e-6
