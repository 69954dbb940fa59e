"""Several continuous covariates (Nunes 2018, §5): one β field per covariate and cell.

Data are simulated from the model itself: per (cell, combination) a covariate value z_k for
each covariate, counts ~ Poisson(exp(Σ_k β_k,i·z_k,ib)), and records carrying z_k plus a little
noise, so the cell means Z̄ are (up to standardisation) the simulated z. The β tests of
``test_fit.py`` check one covariate's sign pattern; these check each covariate's pattern when
two drive the counts at once, with a Normal prior on one and an ICAR prior on the other.
"""

import geopandas as gpd
import numba
import numpy as np
import pandas as pd
import pytest

from geosynth import Grid, PaivaModel, prepare, synthesize, to_public
from geosynth.errors import InputError
from geosynth.model.fit import build_model_data
from geosynth.model.noise_aware import run_chunk_noise_aware, update_latent_counts
from geosynth.model.runner import initial_state
from geosynth.model.state import compute_eta
from geosynth.model.storage import plan_model_storage

GRID = Grid.regular((0.0, 0.0, 6.0, 6.0), shape=(6, 6), crs="EPSG:32723")
WEST = GRID.cell_col < 3
RUN = dict(n_iter=2000, burn_in=500, seed=5, progress=False)


def two_covariate_data(beta1, beta2, seed, n_per_pair=40.0, scale2=1.0, shift2=0.0):
    """Records of 6 combinations on GRID whose cell means of z1 and z2 drive the counts.

    ``z2`` is reported as ``shift2 + scale2 * z`` (another scale: standardisation undoes it).
    """
    rng = np.random.default_rng(seed)
    frames = []
    for a_level, b_level in [(a, b) for a in "pq" for b in "uvw"]:
        z1 = rng.normal(0.0, 1.0, GRID.n_cells)
        z2 = rng.normal(0.0, 1.0, GRID.n_cells)
        lam = n_per_pair * np.exp(beta1 * z1 + beta2 * z2 - 0.5 * (beta1**2 + beta2**2))
        counts = rng.poisson(lam)
        for i in np.flatnonzero(counts):
            x0, y0, x1, y1 = GRID.cell_bounds([i])[0]
            k = counts[i]
            frames.append(gpd.GeoDataFrame(
                {"a": [a_level] * k, "b": [b_level] * k,
                 "z1": z1[i] + rng.normal(0.0, 0.05, k),
                 "z2": shift2 + scale2 * (z2[i] + rng.normal(0.0, 0.05, k))},
                geometry=gpd.points_from_xy(rng.uniform(x0, x1, k), rng.uniform(y0, y1, k)),
                crs=GRID.crs))
    return gpd.GeoDataFrame(pd.concat(frames, ignore_index=True), geometry="geometry",
                            crs=GRID.crs)


@pytest.fixture(scope="module")
def opposite():
    """β_1 > 0 in the west half and < 0 in the east; β_2 the opposite."""
    beta1 = np.where(WEST, 0.8, -0.8)
    data = two_covariate_data(beta1, -beta1, seed=11)
    return data, (beta1, -beta1), prepare(data, GRID, ["a", "b"], continuous=["z1", "z2"])


def assert_sign_pattern(posterior_mean, beta):
    """The thresholds of test_fit.py's single-covariate sign-pattern test."""
    assert np.mean(np.sign(posterior_mean) == np.sign(beta)) >= 0.9
    positive = beta > 0
    if positive.all():
        assert posterior_mean.mean() > 0.3
    else:
        assert posterior_mean[positive].mean() > 0.3 > -0.3 > posterior_mean[~positive].mean()


@pytest.mark.parametrize(("priors", "sampler"), [(("normal", "icar"), "gibbs"),
                                                 (("icar", "normal"), "gibbs"),
                                                 (("icar", "icar"), "block")])
def test_each_covariate_recovers_its_sign_pattern(opposite, priors, sampler):
    _, betas, counts = opposite
    fit = PaivaModel(beta_prior=list(priors), sampler=sampler).fit(counts, **RUN)
    assert fit.beta.shape == (2, fit.n_draws, 2, GRID.n_cells)
    icar = [z for z, prior in zip(("z1", "z2"), priors, strict=True) if prior == "icar"]
    assert [n for n in fit.scalar_names if n.startswith("tau_beta")] == \
        [f"tau_beta[{z}]" for z in icar]
    posterior_mean = fit.beta.mean(axis=(0, 1))
    for k, beta in enumerate(betas):
        assert_sign_pattern(posterior_mean[k], beta)


def test_constant_and_varying_effects_are_told_apart():
    """β_1 changes sign across the lattice, β_2 = 0.6 everywhere (both under ICAR)."""
    beta1 = np.where(WEST, 0.8, -0.8)
    beta2 = np.full(GRID.n_cells, 0.6)
    counts = prepare(two_covariate_data(beta1, beta2, seed=13), GRID, ["a", "b"],
                     continuous=["z1", "z2"])
    fit = PaivaModel(beta_prior="icar").fit(counts, **RUN)
    assert fit.scalar_names[-2:] == ("tau_beta[z1]", "tau_beta[z2]")
    posterior_mean = fit.beta.mean(axis=(0, 1))
    assert_sign_pattern(posterior_mean[0], beta1)
    assert_sign_pattern(posterior_mean[1], beta2)
    # A constant field is smooth: its ICAR precision is far larger than the varying one's.
    tau = fit.scalars[:, :, -2:].reshape(-1, 2).mean(axis=0)
    assert tau[1] > 3 * tau[0]


def test_one_covariate_as_list_gives_the_draws_of_the_str_form(opposite):
    data, _, _ = opposite
    kwargs = dict(n_iter=120, burn_in=20, thin=2, seed=3, progress=False)
    single = prepare(data, GRID, ["a", "b"], continuous="z1")
    listed = prepare(data, GRID, ["a", "b"], continuous=["z1"])
    assert single.zbar.shape == (36, 6) and listed.zbar.shape == (1, 36, 6)
    np.testing.assert_array_equal(listed.zbar[0], single.zbar)
    first = PaivaModel(beta_prior="icar").fit(single, **kwargs)
    second = PaivaModel(beta_prior=["icar"]).fit(listed, **kwargs)
    np.testing.assert_array_equal(first.eta, second.eta)
    np.testing.assert_array_equal(first.scalars, second.scalars)
    np.testing.assert_array_equal(first.beta, second.beta[:, :, 0])
    assert first.scalar_names[-1] == "tau_beta" and second.scalar_names[-1] == "tau_beta[z1]"
    assert "beta[z1]" in second.to_arviz().posterior and "beta" in first.to_arviz().posterior


def test_covariates_left_out_without_beta_prior(opposite):
    _, _, counts = opposite
    fit = PaivaModel().fit(counts, n_iter=60, burn_in=20, thin=2, seed=1, progress=False)
    assert fit.beta is None and not any(n.startswith("tau_beta") for n in fit.scalar_names)


def chromatic_fit(counts, threads, model, **kwargs):
    before = numba.get_num_threads()
    numba.set_num_threads(threads)
    try:
        return model.fit(counts, progress=False, parallel=True, **kwargs)
    finally:
        numba.set_num_threads(before)


def test_chromatic_draws_with_two_covariates_do_not_depend_on_threads(opposite):
    _, _, counts = opposite
    model = PaivaModel(beta_prior=["normal", "icar"])
    short = dict(n_iter=20, burn_in=10, thin=2, chains=2, seed=11)
    threads = min(2, numba.config.NUMBA_NUM_THREADS)
    first = chromatic_fit(counts, threads, model, **short)
    single = chromatic_fit(counts, 1, model, **short)
    np.testing.assert_array_equal(first.scalars, single.scalars)
    np.testing.assert_array_equal(first.beta, single.beta)
    assert first.beta.shape == (2, 5, 2, GRID.n_cells)


@pytest.mark.slow
def test_chromatic_sampler_with_two_covariates_matches_serial(opposite):
    """μ, τ_β of the ICAR covariate and β of both at a few cells: z-tests with bulk ESS."""
    import arviz as az

    _, betas, counts = opposite
    model = PaivaModel(beta_prior=["normal", "icar"])
    kwargs = dict(n_iter=1500, burn_in=300, thin=2, chains=2, seed=5)
    serial = model.fit(counts, progress=False, **kwargs)
    chromatic = chromatic_fit(counts, 1, model, **kwargs)  # = more threads (test above)
    assert not np.array_equal(serial.beta, chromatic.beta)
    cells = [0, 20, 35]
    draws = {
        "mu": [f.scalar("mu") for f in (serial, chromatic)],
        "tau_beta[z2]": [f.scalar("tau_beta[z2]") for f in (serial, chromatic)],
        **{f"beta[z{k + 1}][{i}]": [f.beta[:, :, k, i] for f in (serial, chromatic)]
           for k in range(2) for i in cells},
    }
    for name, (a, b) in draws.items():
        errors = [d.std() / np.sqrt(float(az.ess(np.asarray(d, float), method="bulk")))
                  for d in (a, b)]
        z = (a.mean() - b.mean()) / np.hypot(*errors)
        assert abs(z) < 4.0, f"{name}: serial {a.mean():.4f} vs chromatic {b.mean():.4f}"
    for k, beta in enumerate(betas):
        assert_sign_pattern(chromatic.beta.mean(axis=(0, 1))[k], beta)


def test_noise_aware_kernel_runs_with_two_covariates(opposite):
    """Latent counts keep Σ_b c_ib·Z̄_kib of each covariate in step; β of both is recorded."""
    _, _, counts = opposite
    data, tables, names = build_model_data(counts, PaivaModel(beta_prior=["normal", "icar"]))
    assert data.zbar.shape == (2, 36, 6) and tables.cell_czbar.shape == (2, 36)
    observed = tables.counts.copy()
    stream = np.array([1, 2, 3, 4], dtype=np.uint64)
    state = initial_state(data, tables, stream)
    noisy = tables.counts + np.random.default_rng(0).integers(-2, 3, tables.counts.shape)
    compute_eta(data, state)
    update_latent_counts(data, state, noisy, 1.0)
    assert not np.array_equal(state.counts, tables.counts)  # the chain's copy was redrawn
    for k in range(2):
        np.testing.assert_allclose(state.cell_czbar[k], (state.counts * data.zbar[k]).sum(axis=1))
    rows, G, B = 5, 36, 6
    scalars = np.zeros((rows, 2 * len(tables.level_counts) + 5))
    beta = np.zeros((rows, 2, G), dtype=np.float32)
    status, written = run_chunk_noise_aware(
        data, state, 10, 2, scalars, np.zeros((rows, G), np.float32), beta,
        np.zeros((rows, G, B), np.float32), 0, True, noisy, 1.0, np.zeros((rows, B)))
    assert status == 0 and written == 5
    assert np.all(beta != 0) and np.all(scalars[:, -1] > 0)  # τ_β of the ICAR covariate
    np.testing.assert_array_equal(tables.counts, observed)  # only the state's counts move


def test_storage_counts_one_beta_field_per_covariate(opposite):
    run = dict(n_iter=200, burn_in=100, thin=1, chains=2, eta_draws="all", max_bytes=2**30)
    plans = {}
    for continuous, prior in (("z1", "normal"), (["z1", "z2"], ["normal", "normal"])):
        data, _, names = build_model_data(prepare(opposite[0], GRID, ["a", "b"],
                                               continuous=continuous), PaivaModel(prior))
        plans[len(data.beta_priors)] = plan_model_storage(data, names, noise=False, **run)
    # One more float32 β field per retained draw and chain.
    assert plans[2].n_bytes - plans[1].n_bytes == 2 * 100 * 4 * GRID.n_cells


def test_releases_carry_synthetic_values_of_each_covariate():
    """z2 on another scale keeps its own scale; both columns follow the originals' spread."""
    beta1 = np.where(WEST, 0.5, -0.5)
    data = two_covariate_data(beta1, -beta1, seed=17, n_per_pair=15.0, scale2=100.0,
                              shift2=1000.0)
    counts = prepare(data, GRID, ["a", "b"], continuous=["z1", "z2"])
    fit = PaivaModel(beta_prior=["normal", "icar"]).fit(counts, n_iter=300, burn_in=100,
                                                        seed=2, progress=False)
    releases = synthesize(fit, data, m=2, seed=4)
    public = to_public(releases[0], seed=1)
    assert list(public.columns) == ["a", "b", "z1", "z2", "geometry"]
    for release in releases:
        for column in ("z1", "z2"):
            original, synthetic = data[column], release[column]
            # Z* ~ N(Z̄_ib, 1)·sd_b + mean_b: the synthetic values have the originals' centre
            # and spread at least that of the cell means (plus one SD of noise per record).
            se = original.std() / np.sqrt(len(original))
            assert abs(synthetic.mean() - original.mean()) < 0.2 * original.std() + 5 * se
            assert 0.8 < synthetic.std() / original.std() < 2.0
            assert not np.allclose(synthetic.to_numpy(), original.loc[release.index].to_numpy())
        assert 800 < release["z2"].mean() < 1200 and abs(release["z1"].mean()) < 1
    assert not np.array_equal(releases[0]["z1"], releases[1]["z1"])


def test_each_covariate_is_standardised_on_its_own(opposite):
    data, _, counts = opposite
    assert counts.covariates == ("z1", "z2") and counts.zbar_mean.shape == (2, 6)
    for k, name in enumerate(counts.covariates):
        alone = prepare(data, GRID, ["a", "b"], continuous=name)
        np.testing.assert_array_equal(counts.zbar[k], alone.zbar)
        np.testing.assert_array_equal(counts.zbar_mean[k], alone.zbar_mean)
        np.testing.assert_array_equal(counts.zbar_sd[k], alone.zbar_sd)
        np.testing.assert_array_equal(counts.zbar_mask, alone.zbar_mask)
        for mine, theirs in zip(counts.covariate(name), alone.covariate(name), strict=True):
            np.testing.assert_array_equal(mine, theirs)
        summary = counts.summary()
        np.testing.assert_array_equal(summary[f"zbar_sd[{name}]"], alone.summary()["zbar_sd"])
    with pytest.raises(InputError, match=r"'z3' is not a continuous covariate.*\['z1', 'z2'\]"):
        counts.covariate("z3")


def test_memory_bound_counts_each_covariate(opposite):
    from geosynth.errors import MemoryLimitError

    data = opposite[0]
    pairs = GRID.n_cells * 6
    # counts 8, zbar_mask 1, and per covariate zbar 8 and z_extremes 16 bytes a pair
    prepare(data, GRID, ["a", "b"], continuous=["z1", "z2"], max_bytes=pairs * (8 + 1 + 48))
    with pytest.raises(MemoryLimitError, match=rf"need {pairs * 57:,} bytes"):
        prepare(data, GRID, ["a", "b"], continuous=["z1", "z2"],
                max_bytes=pairs * 57 - 1)


@pytest.mark.parametrize(("continuous", "message"), [
    (["z1", "z1"], r"continuous lists \['z1'\] more than once; name each column once"),
    (["z1", "a"], r"continuous column 'a' is also listed in attributes=; use it in one role"),
    (["z1", "label"], r"continuous column 'label' has non-numeric dtype .*pd.to_numeric"),
    (["z1", "gap"], r"continuous column 'gap' has 1 missing \(NaN\) values .*dropna"),
    (["z1", "nope"], r"continuous column 'nope' is not a column of gdf"),
    ([], r"continuous is an empty list"),
    (["z1", 2], r"continuous must list column names \(str\)"),
])
def test_bad_covariates_are_refused(opposite, continuous, message):
    data = opposite[0].assign(label="x", gap=1.0)
    data.loc[3, "gap"] = np.nan
    with pytest.raises(InputError, match=message):
        prepare(data, GRID, ["a", "b"], continuous=continuous)


def test_bad_beta_priors_are_refused(opposite):
    _, _, counts = opposite
    with pytest.raises(InputError, match=r"beta_prior lists 3 priors .* 2 continuous covariates "
                                         r"\['z1', 'z2'\]; give one prior per covariate"):
        PaivaModel(beta_prior=["normal", "icar", "icar"]).fit(counts, n_iter=10, burn_in=0,
                                                               thin=1, progress=False)
    # [None] fitted a Normal prior while reporting (None,)
    for bad in (["normal", "gamma"], [], ["normal", None], 3, [None], (None,)):
        with pytest.raises(InputError, match="beta_prior must be None, 'normal', 'icar' or a "
                                             "list"):
            PaivaModel(beta_prior=bad)
