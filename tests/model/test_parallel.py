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
    on_domain = prepare(scenario.data, counts.grid, attributes=ATTRIBUTES, levels=exact.levels)
    noisy = dp_counts(on_domain, 1.0, seed=0)
    with pytest.raises(InputError, match="not available for noise-aware fits"):
        PaivaModel().fit(noisy, n_iter=10, burn_in=5, thin=1, progress=False, parallel=True)


def test_parallel_matches_serial_on_clipped_lattice_with_singleton_component():
    """Several components, one of them a single cell, and an ICAR β: the chromatic corrections.

    The per-(colour, component) MH step of the level prior, the exact singleton draws and the
    fused μ/α and ε-shift passes all run here; posterior means of μ, τ_θ and mean β must agree
    with the serial sampler within Monte Carlo error (z-test with bulk ESS).
    """
    scenario = paiva_scenario(n=600, seed=4)
    x0, y0, x1, y1 = scenario.bounds
    w, h = (x1 - x0) / 10, (y1 - y0) / 10
    region = [box(x0, y0, x0 + 6 * w, y0 + 10 * h),  # 6 x 10 cells
              box(x0 + 7 * w, y0, x1, y0 + 4 * h),  # 3 x 4 cells, apart from the first
              box(x0 + 8 * w, y0 + 6 * h, x0 + 9 * w, y0 + 7 * h)]  # one isolated cell
    with pytest.warns(Warning):  # the isolated cell is named in an IsolatedCellWarning
        grid = Grid.regular(scenario.bounds, shape=(10, 10), crs=scenario.crs, region=region)
    assert grid.n_components == 3 and 1 in np.bincount(grid.component)
    counts = prepare(scenario.data, grid, attributes=["y", "x1"], continuous="z",
                     outside="drop")
    model = PaivaModel(beta_prior="icar")
    kwargs = dict(n_iter=3000, burn_in=600, thin=2, chains=2, seed=21)
    serial = model.fit(counts, progress=False, **kwargs)
    chromatic = parallel_fit(counts, min(2, numba.config.NUMBA_NUM_THREADS), model, **kwargs)
    draws = {
        "mu": (serial.scalar("mu"), chromatic.scalar("mu")),
        "tau_theta": (serial.scalar("tau_theta"), chromatic.scalar("tau_theta")),
        "mean beta": (serial.beta.mean(axis=2), chromatic.beta.mean(axis=2)),
    }
    for name, pair in draws.items():
        means = [d.mean() for d in pair]
        errors = [d.std() / np.sqrt(float(az.ess(np.asarray(d, float), method="bulk")))
                  for d in pair]
        z = (means[0] - means[1]) / np.hypot(*errors)
        assert abs(z) < 4.0, f"{name}: serial {means[0]:.4f} vs chromatic {means[1]:.4f}, z={z:.2f}"


def test_chromatic_chains_run_in_the_calling_thread(counts, monkeypatch):
    """numba's OpenMP layer keeps a thread team per calling thread; a chromatic fit must not
    start a second one (its idle workers spin on the cores the first needs), so with one job
    its chains run in the caller's thread, while serial chains still go to worker threads."""
    import threading

    from geosynth.model import runner as runner_module

    seen = []
    original = runner_module.ChainRunner.run_chain

    def recording(self, *args, **kwargs):
        seen.append((self.colours is not None, threading.get_ident()))
        return original(self, *args, **kwargs)

    monkeypatch.setattr(runner_module.ChainRunner, "run_chain", recording)
    kwargs = dict(n_iter=6, burn_in=2, thin=1, chains=2, seed=3)
    parallel_fit(counts, 1, **kwargs)
    PaivaModel().fit(counts, progress=False, n_jobs=2, **kwargs)
    here = threading.get_ident()
    assert [t == here for chromatic, t in seen if chromatic] == [True, True]
    assert [t == here for chromatic, t in seen if not chromatic] == [False, False]


@pytest.mark.parametrize("auto", [False, True])
@pytest.mark.parametrize("flag", [np.True_, np.False_])
def test_a_numpy_bool_reaches_the_runner_as_a_python_bool(counts, monkeypatch, flag, auto):
    # parallel=np.True_ is accepted; the runners (and anything they compile) see a Python bool.
    from geosynth.model import fit as fit_module

    class Stop(Exception):
        pass

    seen = []

    def recording(*args, parallel, **kwargs):
        seen.append(parallel)
        raise Stop

    monkeypatch.setattr(fit_module, "AutoRunner" if auto else "ChainRunner", recording)
    run = dict(n_iter="auto") if auto else dict(n_iter=6, burn_in=2)
    with pytest.raises(Stop):
        PaivaModel().fit(counts, thin=1, seed=1, progress=False, parallel=flag, **run)
    assert seen == [bool(flag)] and type(seen[0]) is bool
