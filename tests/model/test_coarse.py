"""Nested cell aggregates and the exact shifts of θ over them (geosynth.model.coarse).

The aggregates are checked as a graph partition should be (connected, nested, none across two
components); the shift of θ over one aggregate as a Gibbs draw: its draws against the exact
conditional of k, computed here from the whole log posterior of θ + k·1_A on a fine grid
(Poisson terms, ICAR quadratic form and the component means' priors), with a KS test that
also rejects the conditional of a planted error. Calibration of whole sweeps: ``test_sbc.py``.
"""

import numpy as np
import pytest
from scipy import sparse, stats

from geosynth import PaivaModel, prepare
from geosynth.datasets import paiva_scenario
from geosynth.model.coarse import coarse_aggregates, coarse_shifts
from geosynth.model.fit import build_model_data
from geosynth.model.runner import initial_state
from geosynth.model.state import LEVEL_VAR, compute_eta
from geosynth.samplers.rng import make_streams
from tests.model.lattices import split_lattice


def _split_grid(side=12, bounds=(0.0, 0.0, 12.0, 12.0)):
    """A side × side queen lattice over ``bounds`` cut in two by an excluded column."""
    return split_lattice(bounds, (side, side), 4)


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
    state.tau_phi[0] = 2.5
    state.phi[:, 0] = rng.normal(0.0, 0.4, state.theta.shape)
    compute_eta(data, state)
    return data, state, np.sort(group), grid


def _log_conditional(k, state, field, p, group, grid, tau, level_var):
    """log π(f + k·1_A | rest) up to a constant for each k, from the whole target.

    ``field`` is θ (p = −1) or φ_·p: the Poisson terms of every entry it enters, its ICAR
    quadratic form fᵀQf and the N(0, level_var) priors of its component means.
    """
    member = np.zeros(state["theta"].shape[0])
    member[group] = 1.0
    entries = member[:, None] * np.ones(state["eta"].shape[1])
    if p >= 0:  # the combinations holding level p: here (attribute y) combination 1
        entries[:, 0] = 0.0
    adjacency = grid.adjacency.toarray()
    structure = np.diag(adjacency.sum(axis=1)) - adjacency
    component = np.asarray(grid.component)
    sizes = np.bincount(component).astype(float)
    eta = state["eta"][None] + k[:, None, None] * entries[None]
    poisson = np.sum(state["counts"][None] * eta - np.exp(eta), axis=(1, 2))
    quadratic = (field @ structure @ field + 2.0 * k * (member @ structure @ field)
                 + k ** 2 * (member @ structure @ member))
    sums = np.bincount(component, weights=field)[None] + k[:, None] * np.bincount(
        component, weights=member)[None]
    return poisson - 0.5 * tau * quadratic - np.sum(sums ** 2 / (2.0 * level_var * sizes ** 2),
                                                    axis=1)


def _pit(value, state, field, p, group, grid, tau, level_var):
    """The conditional CDF of the shift (:func:`_log_conditional`) at ``value``."""
    k = np.linspace(-5.0, 5.0, 2001)
    log_density = _log_conditional(k, state, field, p, group, grid, tau, level_var)
    density = np.exp(log_density - log_density.max())
    cdf = np.cumsum(density)
    return np.interp(value, k, cdf / cdf[-1])


@pytest.mark.parametrize("seed", [3, 8])
def test_each_field_s_shift_over_an_aggregate_is_an_exact_draw_of_its_conditional(seed):
    """θ's shift given the state, then φ's given the state after θ's: probability integral
    transforms under the exact conditionals are uniform; under three times the precision they are
    not (a planted error the same test catches)."""
    data, state, group, grid = _one_aggregate_case(seed)
    level_var = data.priors[LEVEL_VAR]
    start = {name: np.array(v) for name, v in state._asdict().items()}
    tau_theta, tau_phi = start["tau_theta"][0], start["tau_phi"][0]
    pits = {"theta": [], "phi": [], "theta planted": [], "phi planted": []}
    for n in range(400):
        trial = type(state)(**{name: np.array(v) for name, v in start.items()})
        trial.rng[:] = make_streams(1000 + n, 1)[0]
        assert coarse_shifts(data, trial) == 0
        k_theta = trial.theta[group[0]] - start["theta"][group[0]]
        k_phi = trial.phi[group[0], 0] - start["phi"][group[0], 0]
        moved = np.zeros(start["theta"].shape[0], dtype=bool)
        moved[group] = True
        np.testing.assert_allclose(trial.theta - start["theta"], k_theta * moved, atol=1e-12)
        np.testing.assert_allclose(trial.phi[:, 0] - start["phi"][:, 0], k_phi * moved,
                                   atol=1e-12)
        shift = np.outer(moved, [k_theta, k_theta + k_phi])
        np.testing.assert_allclose(trial.eta - start["eta"], shift, atol=1e-12)
        np.testing.assert_allclose(trial.expeta, np.exp(trial.eta), rtol=1e-12)
        after_theta = dict(start, eta=start["eta"] + np.outer(moved, [k_theta, k_theta]))
        for planted, factor in (("", 1.0), (" planted", 3.0)):
            pits["theta" + planted].append(_pit(k_theta, start, start["theta"], -1, group, grid,
                                                factor * tau_theta, level_var))
            pits["phi" + planted].append(_pit(k_phi, after_theta, start["phi"][:, 0], 0, group,
                                              grid, factor * tau_phi, level_var))
    for name, values in pits.items():
        p_value = stats.kstest(values, "uniform").pvalue
        assert (p_value < 1e-4) if "planted" in name else (p_value > 1e-3), (name, p_value)
