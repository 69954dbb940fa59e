"""The block (GMRF) sampler: sparse LDLᵀ, Gaussian approximation, exactness, reproducibility.

The GMRF approximation is exact for a Gaussian likelihood, so there its mode, covariance and
log-density must equal a dense solve, and the Metropolis–Hastings step of a fixed-τ block
update must accept every proposal. Calibration (SBC, with a planted error it must catch) and
two-sample agreement with the single-site sampler check the whole chain statistically.
"""

import warnings

import numpy as np
import pytest
import shapely

import geosynth
from geosynth.model import block as bk
from geosynth.model import gmrf
from geosynth.model.fit import build_model_data
from geosynth.samplers.rng import make_streams


def _grid_with_components():
    """A 6 x 7 lattice clipped to two blocks of cells and one isolated cell (3 components)."""
    region = shapely.union_all([shapely.box(0, 0, 300, 600), shapely.box(400, 0, 700, 300),
                                shapely.box(500, 500, 600, 600)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return geosynth.Grid.regular((0, 0, 700, 600), shape=(6, 7), crs="EPSG:31983",
                                     region=region)


def _data(grid, beta_prior=None):
    rng = np.random.default_rng(5)
    from tests.model.test_sbc import cell_counts

    counts = cell_counts(grid, rng.poisson(2.0, (grid.n_cells, 2)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data, _, _ = build_model_data(counts, geosynth.PaivaModel(beta_prior=beta_prior))
    return data


def _dense_precision(grid, st, tau, level_var, diag):
    perm = st.pattern.perm
    adjacency = grid.adjacency.toarray()[np.ix_(perm, perm)]
    precision = tau * (np.diag(adjacency.sum(axis=1)) - adjacency) + np.diag(diag)
    component = np.asarray(grid.component)[perm]
    for c in range(grid.n_components):
        member = (component == c).astype(float)
        precision += np.outer(member, member) / (level_var * member.sum() ** 2)
    return precision


@pytest.fixture(scope="module")
def gaussian_case():
    grid = _grid_with_components()
    assert grid.n_components == 3 and np.bincount(grid.component).min() == 1
    data = _data(grid)
    st = bk.build_block_structure(data)
    work = bk.new_block_work(data, st)
    rng = np.random.default_rng(0)
    G = grid.n_cells
    work.counts[:] = rng.normal(size=G)
    work.weight[:] = rng.gamma(2.0, 1.0, G)
    tau, level_var = 2.5, 3.0
    q_sqrt = np.zeros(grid.n_components)
    bk._level_precisions(data, level_var, q_sqrt)
    precision = _dense_precision(grid, st, tau, level_var, work.weight)
    return grid, data, st, work, tau, level_var, q_sqrt, precision


def test_ldl_matches_a_dense_solve_and_log_det():
    grid = geosynth.Grid.regular((0, 0, 900, 800), shape=(8, 9), crs="EPSG:31983")
    pattern = gmrf.build_pattern(np.asarray(grid.indptr), np.asarray(grid.indices))
    G = grid.n_cells
    rng = np.random.default_rng(1)
    diag = rng.gamma(2.0, 1.0, G)
    a_val = np.empty(len(pattern.a_row))
    gmrf.fill_matrix(pattern, 1.7, diag, a_val)
    nnz = pattern.l_ptr[-1]
    l_idx, l_val, d = np.empty(nnz, np.int64), np.empty(nnz), np.empty(G)
    scratch = np.empty(G), np.empty(G, np.int64), np.empty(G, np.int64), np.empty(G, np.int64)
    assert gmrf.ldl_numeric(pattern, a_val, l_idx, l_val, d, *scratch)
    perm = pattern.perm
    adjacency = grid.adjacency.toarray()[np.ix_(perm, perm)]
    dense = 1.7 * (np.diag(adjacency.sum(axis=1)) - adjacency) + np.diag(diag)
    b = rng.normal(size=G)
    x = b.copy()
    gmrf.ldl_solve(pattern, l_idx, l_val, d, x)
    np.testing.assert_allclose(x, np.linalg.solve(dense, b), rtol=1e-10, atol=1e-12)
    assert gmrf.ldl_log_det(d) == pytest.approx(np.linalg.slogdet(dense)[1], rel=1e-12)
    v = rng.normal(size=G)
    assert gmrf.matrix_quadratic(pattern, a_val, v) == pytest.approx(v @ dense @ v, rel=1e-12)
    # a matrix that is not positive definite is reported, not factored
    gmrf.fill_matrix(pattern, 1.7, -diag, a_val)
    assert not gmrf.ldl_numeric(pattern, a_val, l_idx, l_val, d, *scratch)


def test_gaussian_approximation_is_exact_for_a_gaussian_likelihood(gaussian_case):
    grid, data, st, work, tau, level_var, q_sqrt, precision = gaussian_case
    start = np.random.default_rng(2).normal(size=grid.n_cells)
    assert bk.gaussian_approximation(data, st, work, bk.KIND_GAUSSIAN, tau, level_var, q_sqrt,
                                     start, 1)
    np.testing.assert_allclose(work.mean, np.linalg.solve(precision, work.counts),
                               rtol=1e-10, atol=1e-12)
    x = np.random.default_rng(3).normal(size=grid.n_cells)
    expected = 0.5 * np.linalg.slogdet(precision)[1] - 0.5 * (x - work.mean) @ precision @ (
        x - work.mean)
    assert bk._approximation_log_density(st, work, tau, q_sqrt, x) == pytest.approx(
        expected, rel=1e-10)


def test_draws_of_the_approximation_have_its_covariance(gaussian_case):
    grid, data, st, work, tau, level_var, q_sqrt, precision = gaussian_case
    bk.gaussian_approximation(data, st, work, bk.KIND_GAUSSIAN, tau, level_var, q_sqrt,
                              np.zeros(grid.n_cells), 1)
    stream = make_streams(4, 1)[0]
    n = 20_000
    draws = np.empty((n, grid.n_cells))
    for r in range(n):
        bk._draw_approximation(st, work, q_sqrt, stream, work.proposal)
        draws[r] = work.proposal
    covariance = np.linalg.inv(precision)
    sd = np.sqrt(np.diag(covariance))
    # Monte Carlo error of a sample covariance: sd_i·sd_j·sqrt(2/n) at most; allow 5 of them.
    assert np.all(np.abs(draws.mean(axis=0) - work.mean) < 5 * sd / np.sqrt(n))
    assert np.all(np.abs(np.cov(draws.T) - covariance) < 5 * np.outer(sd, sd) * np.sqrt(2 / n))


def test_fixed_tau_block_update_always_accepts_under_a_gaussian_likelihood(gaussian_case):
    grid, data, st, work, tau, level_var, q_sqrt, _ = gaussian_case
    work.current[:] = np.random.default_rng(6).normal(size=grid.n_cells)
    stream = make_streams(7, 1)[0]
    for _ in range(50):
        accepted, new_tau = bk.block_update(data, st, work, bk.KIND_GAUSSIAN, tau, 1.0, 0.1,
                                            level_var, q_sqrt, 1, stream, -50.0, 1.0)
        assert accepted and new_tau == tau
        work.current[:] = work.proposal


@pytest.fixture(scope="module")
def scenario_counts():
    scenario = geosynth.datasets.paiva_scenario(n=300, seed=3)
    grid = geosynth.Grid.regular(scenario.bounds, shape=(6, 6), crs=scenario.crs)
    return geosynth.prepare(scenario.data, grid, attributes=["y", "x1"], continuous="z")


@pytest.mark.parametrize(("sampler", "beta_prior"), [("block", None), ("mh", "normal")])
def test_same_seed_same_draws_whatever_the_processes(scenario_counts, sampler, beta_prior):
    model = geosynth.PaivaModel(sampler=sampler, beta_prior=beta_prior)
    run = dict(n_iter=120, burn_in=40, thin=2, chains=2, seed=11, progress=False)
    one = model.fit(scenario_counts, n_jobs=1, **run)
    two = model.fit(scenario_counts, n_jobs=2, **run)
    np.testing.assert_array_equal(one.scalars, two.scalars)
    np.testing.assert_array_equal(one.eta, two.eta)
    other = model.fit(scenario_counts, n_jobs=2, **{**run, "seed": 12})
    assert not np.array_equal(one.scalars, other.scalars)
    # the sampler differs from exact single-site Gibbs (same seed)
    gibbs = geosynth.PaivaModel(sampler="gibbs", beta_prior=beta_prior).fit(
        scenario_counts, n_jobs=2, **run)
    assert not np.array_equal(one.scalars, gibbs.scalars)


def test_beta_icar_block_moves_beta_and_its_precision(scenario_counts):
    model = geosynth.PaivaModel(beta_prior="icar", sampler="block")
    fit = model.fit(scenario_counts, n_iter=200, burn_in=50, thin=1, chains=2, seed=3,
                    progress=False)
    assert np.isfinite(fit.scalars).all() and np.isfinite(fit.beta).all()
    assert np.unique(fit.scalar("tau_beta")).size > 20
    assert np.all(fit.beta.std(axis=1) > 0)


def test_sampler_argument_is_validated(scenario_counts):
    with pytest.raises(ValueError, match="sampler must be"):
        geosynth.PaivaModel(sampler="nuts")
    with pytest.raises(ValueError, match="parallel=False"):
        geosynth.PaivaModel(sampler="block").fit(scenario_counts, n_iter=20, burn_in=5, thin=1,
                                                  parallel=True, progress=False)


@pytest.mark.slow
@pytest.mark.parametrize("sampler", ["block", "mh"])
def test_samplers_agree_with_exact_single_site_gibbs(scenario_counts, sampler):
    """Posterior means of μ, α, every τ, selected θ_i and λ_ib agree within MC error."""
    import arviz as az

    run = dict(n_iter=4000, burn_in=1000, thin=2, chains=2, seed=21, progress=False)
    fits = {s: geosynth.PaivaModel(sampler=s).fit(scenario_counts, **run)
            for s in ("gibbs", sampler)}

    def quantities(fit):
        out = {name: fit.scalar(name) for name in fit.scalar_names}
        for i in (0, 7, 20, 35):
            out[f"theta[{i}]"] = fit.theta[:, :, i]
            for b in (0, 3):
                out[f"lambda[{i},{b}]"] = np.exp(fit.eta[:, :, i, b])
        return out

    first, second = quantities(fits["gibbs"]), quantities(fits[sampler])
    for name, draws in first.items():
        other = second[name]
        se = [d.std() / np.sqrt(float(az.ess(d, method="mean"))) for d in (draws, other)]
        difference = abs(draws.mean() - other.mean())
        # 4.5 combined standard errors: ~30 comparisons, a false alarm rate below 1e-3.
        assert difference < 4.5 * np.hypot(*se), (name, draws.mean(), other.mean(), se)


def _block_chain_start(counts):
    from geosynth.model.runner import initial_state

    data, tables, _ = build_model_data(counts, geosynth.PaivaModel(beta_prior="icar",
                                                                   sampler="block"))
    return data, initial_state(data, tables, make_streams(4, 1)[0])


def _single_site_slots(s):
    """Every slot of ``s.scale_log_sd`` that the single-site sweep's moves read and tune."""
    from geosynth.model.moves import eps_scale_slot, field_scale_slots
    from geosynth.model.remap import remap_errors_slot

    P, K = s.alpha.shape[0], s.beta.shape[0]
    split, remap, rough = field_scale_slots(s)
    slots = set(range(1 + P + K)) | {eps_scale_slot(s), remap_errors_slot(s)}
    for first in (split, remap, rough):
        slots |= set(range(first, first + 1 + P))
    return slots


def _block_slots(s):
    P, K = s.alpha.shape[0], s.beta.shape[0]
    return ([bk.block_slot(s, bk.KIND_THETA, -1)]
            + [bk.block_slot(s, bk.KIND_PHI, p) for p in range(P)]
            + [bk.block_slot(s, bk.KIND_BETA, c) for c in range(K)])


def test_block_updates_tune_slots_of_their_own(scenario_counts):
    """The block updates' log(F − 1) and the single-site scale moves' log σ never share a slot.

    The hybrid sweep runs both in each burn-in sweep; with one slot per field for both (before
    2026-12) each tuned the other's proposal scale.
    """
    data, s = _block_chain_start(scenario_counts)
    block, single = _block_slots(s), _single_site_slots(s)
    assert len(set(block)) == len(block) == 1 + s.alpha.shape[0] + s.beta.shape[0]
    assert not set(block) & single
    assert set(block) | single == set(range(s.scale_log_sd.shape[0]))
    # Block sweeps alone (hybrid off) in burn-in: only the block and the errors' slots move.
    st, n_steps, sign, _ = bk.block_settings(data)
    before = s.scale_log_sd.copy()
    status, _ = bk.run_chunk_block(data, s, 3, 1, np.zeros((0, 0)), np.zeros((0, 0), np.float32),
                                   np.zeros((0, 0, 0), np.float32),
                                   np.zeros((0, 0, 0), np.float32), 0, False, st, n_steps, sign,
                                   False)
    assert status == 0
    moved = set(np.flatnonzero(s.scale_log_sd != before))
    assert set(block) <= moved
    P, K = s.alpha.shape[0], s.beta.shape[0]
    assert not moved & set(range(1 + P + K))  # the fields' scale moves with the intercept
