"""Smooth modes of the ICAR structure, and the Metropolis–Hastings ratio of the block move on them.

The modes are checked against dense ``numpy.linalg.eigh`` of D_W − W; the move's log ratio
against an independent NumPy evaluation of ``log π(f + Vz) − log π(f) + log q(−z | f + Vz) −
log q(z | f)`` with SciPy's multivariate normal density (any wrong sign, missing term or wrong
reverse proposal changes it). Calibration of the whole sweep with these moves: ``test_sbc.py``.
"""

import geopandas as gpd
import numpy as np
import pytest
from scipy import sparse, stats
from shapely.geometry import box

from geosynth import Grid
from geosynth.model.modes import (
    mode_move,
    mode_precision,
    mode_proposal,
    smooth_modes,
    with_component_constants,
)
from geosynth.samplers.rng import make_streams


def _structure(grid):
    adjacency = grid.adjacency.toarray()
    return np.diag(adjacency.sum(axis=1)) - adjacency


def _two_components():
    """A 5 × 6 queen lattice and a 3-cell path, as one graph with two components."""
    grid = Grid.regular((0.0, 0.0, 6.0, 5.0), shape=(5, 6))
    a = grid.adjacency.toarray()
    path = np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]])
    full = np.zeros((33, 33))
    full[:30, :30] = a
    full[30:, 30:] = path
    csr = sparse.csr_matrix(full)
    return csr.indptr.astype(np.int64), csr.indices.astype(np.int64), full


def test_modes_are_the_smoothest_eigenvectors_orthogonal_to_each_component():
    indptr, indices, adjacency = _two_components()
    structure = np.diag(adjacency.sum(axis=1)) - adjacency
    modes, eigenvalues = smooth_modes(indptr, indices, n_modes=8)
    assert modes.shape == (33, 8)
    np.testing.assert_allclose(modes.T @ modes, np.eye(8), atol=1e-10)
    np.testing.assert_allclose(structure @ modes, modes * eigenvalues, atol=1e-10)
    for member in (np.arange(33) < 30, np.arange(33) >= 30):
        np.testing.assert_allclose(member @ modes, 0.0, atol=1e-10)
    exact = np.linalg.eigvalsh(structure)
    np.testing.assert_allclose(eigenvalues, exact[2:10], rtol=1e-10)  # two zero eigenvalues


def test_sparse_modes_match_dense_ones_and_repeat_bit_for_bit():
    grid = Grid.regular((0.0, 0.0, 32.0, 25.0), shape=(25, 32))  # 800 cells: eigsh path
    indptr = np.asarray(grid.indptr, dtype=np.int64)
    indices = np.asarray(grid.indices, dtype=np.int64)
    modes, eigenvalues = smooth_modes(indptr, indices, n_modes=12)
    exact = np.linalg.eigvalsh(_structure(grid))
    np.testing.assert_allclose(eigenvalues, exact[1:13], rtol=1e-8)
    np.testing.assert_allclose(modes.T @ modes, np.eye(12), atol=1e-8)
    again, _ = smooth_modes(indptr, indices, n_modes=12)
    np.testing.assert_array_equal(modes, again)


def test_a_lattice_with_fewer_modes_than_asked_gives_all_it_has():
    grid = Grid.regular((0.0, 0.0, 3.0, 3.0), shape=(3, 3))
    modes, eigenvalues = smooth_modes(np.asarray(grid.indptr, dtype=np.int64),
                                      np.asarray(grid.indices, dtype=np.int64), n_modes=12)
    assert modes.shape == (9, 8) and (eigenvalues > 0).all()


LEVEL_VAR = 2.5


def _log_target(field, tau, observed, exp_sum, structure, step, component):
    """log π(f + step) − log π(f): Poisson terms with E_i = Σ_b e^η, the ICAR prior and the
    N(0, LEVEL_VAR) prior of each component's mean."""
    moved = field + step
    likelihood = observed @ step - exp_sum @ np.expm1(step)
    prior = -0.5 * tau * (moved @ structure @ moved - field @ structure @ field)
    for c in np.unique(component):
        inside = component == c
        prior -= (moved[inside].mean() ** 2 - field[inside].mean() ** 2) / (2 * LEVEL_VAR)
    return likelihood + prior


def _log_proposal(field, precision, observed, exp_sum, basis, z):
    """log q(z | f): N(H⁻¹g, H⁻¹), H = diag(p) + Vᵀ diag(E) V, g = Vᵀ(a − E) − diag(p)Vᵀf."""
    hessian = np.diag(precision) + basis.T @ (basis * exp_sum[:, None])
    gradient = basis.T @ (observed - exp_sum) - precision * (basis.T @ field)
    mean = np.linalg.solve(hessian, gradient)
    return stats.multivariate_normal(mean, np.linalg.inv(hessian)).logpdf(z)


def _split_lattice():
    """A 5 × 6 lattice cut in two by an excluded column (two components, 25 cells)."""
    grid = Grid.regular((0.0, 0.0, 6.0, 5.0), shape=(5, 6),
                        exclude=gpd.GeoSeries([box(2.0, 0.0, 3.0, 5.0)]))
    assert grid.n_components == 2
    return grid


@pytest.mark.parametrize("constants", [False, True])
@pytest.mark.parametrize("tau", [0.3, 4.0])
def test_the_move_s_log_ratio_is_the_metropolis_hastings_ratio(tau, constants):
    """With the component constants the move also changes each component's mean: the target
    then includes the means' N(0, level_var) priors (as ``mode_precision`` says)."""
    grid = _split_lattice()
    indptr = np.asarray(grid.indptr, dtype=np.int64)
    indices = np.asarray(grid.indices, dtype=np.int64)
    component = np.asarray(grid.component, dtype=np.int64)
    modes, eigenvalues = smooth_modes(indptr, indices, n_modes=6)
    basis = with_component_constants(modes, component, 2) if constants else modes
    sizes = np.bincount(component).astype(float)
    full = np.empty(8)
    mode_precision(eigenvalues, tau, sizes, LEVEL_VAR, full)
    precision = full[:basis.shape[1]].copy()
    structure = _structure(grid)
    rng = np.random.default_rng(7)
    G, B = grid.n_cells, 3
    field = rng.normal(0.3, 0.8, G)
    expeta = np.exp(rng.normal(0.5, 0.7, (G, B)))
    combos = np.array([0, 2], dtype=np.int64)
    observed = rng.poisson(expeta[:, combos].sum(axis=1)).astype(float)
    exp_sum = expeta[:, combos].sum(axis=1)
    moved_means = False
    for draw in range(5):
        work = np.zeros((4, G))
        log_ratio = mode_proposal(field, precision, observed, combos, expeta, basis,
                                  make_streams(draw, 1)[0], work)
        step = work[1].copy()
        z = basis.T @ step
        np.testing.assert_allclose(basis @ z, step, atol=1e-12)  # the step is V z
        moved_means |= abs(step[component == 1].mean()) > 1e-6
        expected = (_log_target(field, tau, observed, exp_sum, structure, step, component)
                    + _log_proposal(field + step, precision, observed, exp_sum * np.exp(step),
                                    basis, -z)
                    - _log_proposal(field, precision, observed, exp_sum, basis, z))
        assert log_ratio == pytest.approx(expected, abs=1e-8)
    assert moved_means == constants


def test_component_constants_are_orthonormal_columns_after_the_modes():
    grid = _split_lattice()
    component = np.asarray(grid.component, dtype=np.int64)
    modes, eigenvalues = smooth_modes(np.asarray(grid.indptr, dtype=np.int64),
                                      np.asarray(grid.indices, dtype=np.int64), n_modes=6)
    basis = with_component_constants(modes, component, 2)
    assert basis.shape == (grid.n_cells, 8)
    np.testing.assert_array_equal(basis[:, :6], modes)
    np.testing.assert_allclose(basis.T @ basis, np.eye(8), atol=1e-12)
    for c in range(2):
        inside = component == c
        np.testing.assert_allclose(basis[inside, 6 + c], 1 / np.sqrt(inside.sum()))
        assert not basis[~inside, 6 + c].any()
    out = np.empty(8)
    sizes = np.bincount(component).astype(float)
    mode_precision(eigenvalues, 3.0, sizes, LEVEL_VAR, out)
    np.testing.assert_allclose(out[:6], 3.0 * eigenvalues)
    # Coordinate sqrt(n_c)·mean_c: variance n_c·level_var under the mean's prior.
    np.testing.assert_allclose(out[6:], 1.0 / (sizes * LEVEL_VAR))


def test_an_accepted_move_keeps_eta_and_the_component_means_consistent():
    grid = Grid.regular((0.0, 0.0, 6.0, 5.0), shape=(5, 6))
    modes, eigenvalues = smooth_modes(np.asarray(grid.indptr, dtype=np.int64),
                                      np.asarray(grid.indices, dtype=np.int64), n_modes=6)
    rng = np.random.default_rng(3)
    G, B = grid.n_cells, 2
    field = rng.normal(0.0, 0.1, G)
    eta = rng.normal(0.0, 0.3, (G, B)) + field[:, None]
    expeta = np.exp(eta)
    observed = rng.poisson(np.exp(eta).sum(axis=1)).astype(float)
    combos = np.arange(B, dtype=np.int64)
    stream = make_streams(11, 1)[0]
    accepted = 0
    for _ in range(50):
        before = field.copy()
        eta_before = eta.copy()
        if mode_move(field, 2.0 * eigenvalues, observed, combos, eta, expeta, modes, stream,
                     np.zeros((4, G))):
            accepted += 1
            np.testing.assert_allclose(eta - eta_before, np.repeat((field - before)[:, None], B, 1),
                                       atol=1e-12)
        assert field.mean() == pytest.approx(before.mean(), abs=1e-12)
        np.testing.assert_allclose(expeta, np.exp(eta), rtol=1e-12)
    assert accepted >= 25  # the Gaussian approximation along smooth modes is close
