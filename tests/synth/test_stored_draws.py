"""Releases from a fit that stores η for fewer draws than it retained (``eta_draws``)."""

import warnings

import numpy as np
import pytest

import geosynth
from geosynth import PaivaModel, synthesize
from geosynth.errors import GeosynthWarning, InputError
from geosynth.model.storage import plan_storage
from geosynth.synth.paiva import release_draws

RUN = {"n_iter": 200, "burn_in": 100, "thin": 2, "chains": 2, "seed": 3, "progress": False}


@pytest.fixture(scope="module")
def fits(regular_data):
    _, _, counts = regular_data
    model = PaivaModel()
    return model.fit(counts, eta_draws="all", **RUN), model.fit(counts, eta_draws=2, **RUN)


def test_releases_use_the_stored_draws(regular_data, fits):
    gdf, grid, _ = regular_data
    every, few = fits
    assert (few.n_draws, few.n_eta_draws) == (50, 2)
    np.testing.assert_array_equal(release_draws(few, 3), [0, 2, 3])
    releases = synthesize(few, gdf, m=3, seed=5)
    again = synthesize(few, gdf, m=3, seed=5)
    for release, other in zip(releases, again, strict=True):
        assert release.geometry.equals(other.geometry)
    assert [r.attrs["geosynth"]["posterior_draw"] for r in releases] == [0, 2, 3]
    # Stored draw 2 is retained draw few.eta_draw_index[0] of chain 1 of the all-draws fit.
    np.testing.assert_array_equal(few.lambda_draw(2),
                                  every.lambda_draw(50 + int(few.eta_draw_index[0])))
    for release in releases:
        assert (grid.locate(release.geometry) >= 0).all()


def test_more_releases_than_stored_draws_is_refused(regular_data, fits):
    gdf, _, _ = regular_data
    _, few = fits
    with pytest.raises(InputError, match=r"m=5 releases .* stored η for only 4 \(2 chain\(s\) x "
                                         r"2 of its 50 retained draws\).*eta_draws=3"):
        synthesize(few, gdf, m=5, seed=1)


def test_dp_releases_pair_each_stored_draw_with_its_latent_totals(regular_data):
    gdf, grid, _ = regular_data
    exact = geosynth.prepare(gdf, grid, attributes=["a", "c"])
    exact = geosynth.prepare(gdf, grid, attributes=["a", "c"], levels=exact.levels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the seed= of a DP release is for tests only
        noisy = geosynth.dp.dp_counts(exact, 0.5, seed=2)
        fit = PaivaModel().fit(noisy, eta_draws=3, **RUN)
        releases = geosynth.dp.dp_synthesize(fit, m=4, seed=4)
    assert fit.latent_totals.shape[:2] == (2, 50) and fit.n_eta_draws == 3
    for release, draw in zip(releases, release_draws(fit, 4).tolist(), strict=True):
        chain, retained = fit.draw_position(draw)
        expected = np.rint(fit.latent_totals[chain, retained]).astype(int)
        combos = noisy.combos[list(noisy.attributes)]
        got = [int(((release["a"] == row["a"]) & (release["c"] == row["c"])).sum())
               for _, row in combos.iterrows()]
        assert got == expected.tolist()
    # The test has power: the latent totals of the stored rows differ from their neighbours'.
    assert len({tuple(np.rint(t)) for t in fit.latent_totals.reshape(-1, noisy.n_combos)}) > 10


def test_dask_fit_and_releases_keep_the_same_stored_draws(regular_data):
    """fit_dask plans η storage over all chains as fit does; synthesize_dask uses stored draws."""
    distributed = pytest.importorskip("distributed", reason="the dask extra is not installed")
    from geosynth import distributed as gd

    gdf, _, counts = regular_data
    model = PaivaModel(beta_prior="normal")
    want_all = model.fit(counts, eta_draws="all", **RUN)
    # A budget with room for 3.5 draws of η per chain besides the scalars, θ, β and buffers.
    per_draw = RUN["chains"] * 4 * counts.n_cells * counts.n_combos
    one = plan_storage(n_iter=RUN["n_iter"], burn_in=RUN["burn_in"], thin=RUN["thin"],
                       chains=RUN["chains"], n_cells=counts.n_cells, n_combos=counts.n_combos,
                       n_scalars=len(want_all.scalar_names), beta=True, noise=False,
                       eta_draws=1, max_bytes=2**40)
    max_bytes = one.n_bytes + 2 * per_draw + per_draw // 2
    with pytest.warns(GeosynthWarning, match="kept for 3 evenly spaced draws"):
        want = model.fit(counts, max_bytes=max_bytes, **RUN)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        with pytest.warns(GeosynthWarning, match="kept for 3 evenly spaced draws"):
            got = gd.fit_dask(model, counts, client=client, max_bytes=max_bytes,
                              **{k: v for k, v in RUN.items() if k != "progress"})
        for name in ("scalars", "theta", "beta", "eta", "eta_draw_index", "lambda_chain_means"):
            np.testing.assert_array_equal(getattr(got, name), getattr(want, name))
        np.testing.assert_array_equal(got.eta, want_all.eta[:, got.eta_draw_index])
        releases = gd.synthesize_dask(got, gdf, m=4, seed=9, client=client)
        with pytest.raises(InputError, match="eta_draws=4"):
            gd.synthesize_dask(got, gdf, m=7, seed=9, client=client)
    in_memory = synthesize(want, gdf, m=4, seed=9)
    for release, other in zip(releases, in_memory, strict=True):
        assert release.attrs["geosynth"]["posterior_draw"] == \
            other.attrs["geosynth"]["posterior_draw"]
        assert release.geometry.equals(other.geometry)
