"""Chromatic parallel Gibbs: colouring, reproducibility, thread independence, same posterior."""

import arviz as az
import numba
import numpy as np
import pytest
from shapely.geometry import Point, box

from geosynth import Grid, PaivaModel, prepare
from geosynth.datasets import paiva_scenario
from geosynth.errors import InputError
from geosynth.model.parallel import colour_classes, greedy_colouring

ATTRIBUTES = ["y", "x1", "x2"]


def assert_proper(grid, colour):
    for i in range(grid.n_cells):
        neighbours = grid.indices[grid.indptr[i]:grid.indptr[i + 1]]
        assert not np.any(colour[neighbours] == colour[i]), f"cell {i} shares its colour"


@pytest.mark.parametrize(("contiguity", "n_colours"), [("queen", 4), ("rook", 2)])
def test_regular_lattice_colouring(contiguity, n_colours):
    grid = Grid.regular((0, 0, 12, 9), shape=(9, 12), contiguity=contiguity)
    colour = greedy_colouring(grid.indptr.astype(np.int64), grid.indices.astype(np.int64))
    assert_proper(grid, colour)
    assert colour.max() + 1 == n_colours
    ptr, cells = colour_classes(colour)
    assert ptr[-1] == grid.n_cells
    assert sorted(cells.tolist()) == list(range(grid.n_cells))
    for k in range(n_colours):
        assert (colour[cells[ptr[k]:ptr[k + 1]]] == k).all()


def test_clipped_lattice_colouring_is_proper_and_bounded():
    region = [Point(5, 5).buffer(4.3), box(10, 0, 11.5, 2)]
    grid = Grid.regular((0, 0, 12, 10), shape=(20, 24), region=region, exclude=box(4, 4, 6, 6))
    assert grid.is_clipped
    colour = greedy_colouring(grid.indptr.astype(np.int64), grid.indices.astype(np.int64))
    assert_proper(grid, colour)
    assert colour.max() + 1 <= grid.n_neighbours.max() + 1


def test_colouring_of_irregular_graph_is_proper():
    rng = np.random.default_rng(0)
    n = 300
    a = rng.random((n, n)) < 0.03
    a = np.triu(a, 1)
    a = a | a.T
    indptr = np.concatenate([[0], np.cumsum(a.sum(axis=1))]).astype(np.int64)
    indices = np.concatenate([np.flatnonzero(row) for row in a]).astype(np.int64)
    colour = greedy_colouring(indptr, indices)
    for i in range(n):
        assert not np.any(colour[indices[indptr[i]:indptr[i + 1]]] == colour[i])
    assert colour.max() + 1 <= a.sum(axis=1).max() + 1


@pytest.fixture(scope="module")
def counts():
    scenario = paiva_scenario(n=500, seed=1)
    grid = Grid.regular(scenario.bounds, shape=(10, 10), crs=scenario.crs)
    return prepare(scenario.data, grid, attributes=ATTRIBUTES, continuous="z")


def parallel_fit(counts, threads, model=None, **kwargs):
    before = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        return (model or PaivaModel()).fit(counts, progress=False, parallel=True, **kwargs)
    finally:
        numba.set_num_threads(before)


def test_parallel_fit_is_reproducible_and_independent_of_threads(counts):
    threads = min(2, numba.config.NUMBA_NUM_THREADS)
    model = PaivaModel(beta_prior="icar")
    kwargs = dict(n_iter=40, burn_in=20, thin=2, chains=2, seed=11)
    first = parallel_fit(counts, threads, model, **kwargs)
    again = parallel_fit(counts, threads, model, **kwargs)
    single = parallel_fit(counts, 1, model, **kwargs)
    for other in (again, single):
        np.testing.assert_array_equal(first.scalars, other.scalars)
        np.testing.assert_array_equal(first.eta, other.eta)
        np.testing.assert_array_equal(first.beta, other.beta)
    assert not np.array_equal(first.scalars[0], first.scalars[1])  # chains have own streams


def test_parallel_matches_serial_posterior(counts):
    """μ and τ_θ posterior means agree within Monte Carlo error (z-test with bulk ESS)."""
    kwargs = dict(n_iter=2500, burn_in=500, thin=2, chains=2, seed=5)
    serial = PaivaModel().fit(counts, progress=False, **kwargs)
    chromatic = parallel_fit(counts, 1, **kwargs)  # same draws as with more threads (above)
    assert not np.array_equal(serial.scalars, chromatic.scalars)
    for name in ("mu", "tau_theta"):
        means, errors = [], []
        for fit in (serial, chromatic):
            draws = fit.scalar(name)
            means.append(draws.mean())
            errors.append(draws.std() / np.sqrt(float(az.ess(draws, method="bulk"))))
        z = (means[0] - means[1]) / np.hypot(*errors)
        assert abs(z) < 4.0, f"{name}: serial {means[0]:.4f} vs chromatic {means[1]:.4f}, z={z:.2f}"


def test_parallel_refuses_noise_aware_fit_and_bad_flag(counts):
    from geosynth.dp import dp_counts

    with pytest.raises(InputError, match="parallel must be True or False"):
        PaivaModel().fit(counts, n_iter=10, burn_in=5, thin=1, progress=False, parallel="yes")
    scenario = paiva_scenario(n=200, seed=2)
    exact = prepare(scenario.data, counts.grid, attributes=ATTRIBUTES)  # DP needs no continuous=
    noisy = dp_counts(exact, 1.0, seed=0)
    with pytest.raises(InputError, match="not available for noise-aware fits"):
        PaivaModel().fit(noisy, n_iter=10, burn_in=5, thin=1, progress=False, parallel=True)
