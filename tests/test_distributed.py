"""Dask execution (geosynth.distributed) equals the in-memory functions, on a LocalCluster."""

import dataclasses
import os
import re
import warnings

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest

import geosynth
from geosynth import Grid, PaivaModel, prepare
from geosynth.errors import DataWarning, InputError, InputTypeError, PrivacyLeakWarning
from geosynth.samplers.rng import make_streams

distributed = pytest.importorskip(
    "distributed", reason="the dask extra (dask[distributed], dask-geopandas) is not installed")
dask_geopandas = pytest.importorskip(
    "dask_geopandas", reason="the dask extra (dask[distributed], dask-geopandas) is not installed")

import dask  # noqa: E402

from geosynth import distributed as gd  # noqa: E402

CRS = "EPSG:31983"
RUN = {"n_iter": 60, "burn_in": 20, "thin": 2}


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None)
    with distributed.Client(cluster) as c:
        gd.warm_up(c)
        yield c
    cluster.close()


@pytest.fixture(scope="module")
def points():
    """Points with an int, a str and a categorical attribute (categories in non-sorted order)."""
    rng = np.random.default_rng(3)
    n = 600
    x, y = rng.uniform(0, 100, n), rng.uniform(0, 80, n)
    a = rng.integers(0, 2, n)
    c = np.where(rng.random(n) < 0.4, "u", "v")
    k = pd.Categorical(rng.choice(["lo", "hi", "mid"], n), categories=["mid", "hi", "lo", "x"])
    z = 5.0 + a + 0.05 * x + rng.normal(0, 1, n)
    return gpd.GeoDataFrame({"a": a, "c": c, "k": k, "z": z},
                            geometry=gpd.points_from_xy(x, y), crs=CRS,
                            index=pd.Index(rng.permutation(n) * 3 + 7))


@pytest.fixture(scope="module")
def grid():
    return Grid.regular((0, 0, 100, 80), shape=(4, 5), crs=CRS)


@pytest.fixture(scope="module")
def fitted(points, grid):
    counts = prepare(points, grid, attributes=["a", "c"], continuous="z")
    return counts, PaivaModel().fit(counts, chains=2, seed=11, progress=False, **RUN)


def to_dask(gdf, npartitions):
    """Partition ``gdf`` keeping its row order (from_geopandas sorts by index by default)."""
    return dask_geopandas.from_geopandas(gdf, npartitions=npartitions, sort=False)


def assert_counts_equal(got, want):
    np.testing.assert_array_equal(got.counts, want.counts)
    # dask stores str columns as pandas' NA-backed string dtype: the values are the same.
    pd.testing.assert_frame_equal(got.combos, want.combos, check_dtype=False)
    for a in want.attributes:
        if not pd.api.types.is_string_dtype(want.combos[a].dtype):
            assert got.combos[a].dtype == want.combos[a].dtype
    np.testing.assert_array_equal(got.record_cell, want.record_cell)
    np.testing.assert_array_equal(got.record_combo, want.record_combo)
    pd.testing.assert_index_equal(got.record_index, want.record_index)
    assert got.attributes == want.attributes and got.levels == want.levels
    assert got.continuous == want.continuous
    for name in ("zbar", "zbar_mean", "zbar_sd", "z_extremes", "z_fences"):
        if getattr(want, name) is None:
            assert getattr(got, name) is None
        else:
            np.testing.assert_allclose(getattr(got, name), getattr(want, name), rtol=1e-12,
                                       atol=1e-12)
    if want.zbar_mask is not None:
        np.testing.assert_array_equal(got.zbar_mask, want.zbar_mask)


# --------------------------------------------------------------------------- seeds (no cluster)
@pytest.mark.parametrize("seed", [5, np.random.SeedSequence(9), "generator"])
def test_chain_seeds_reproduce_the_chain_streams_of_fit(seed):
    if seed == "generator":
        seeds = gd.chain_seeds(np.random.default_rng(1), 3)
        want = make_streams(np.random.default_rng(1), 3)
    elif isinstance(seed, np.random.SeedSequence):
        seeds = gd.chain_seeds(np.random.SeedSequence(9), 3)
        want = make_streams(np.random.SeedSequence(9), 3)
    else:
        seeds, want = gd.chain_seeds(seed, 3), make_streams(seed, 3)
    got = np.vstack([make_streams(s, 1) for s in seeds])
    np.testing.assert_array_equal(got, want)


# --------------------------------------------------------------------------- cluster
def test_warm_up_compiles_once_per_worker(client):
    again = gd.warm_up(client)
    assert set(again) == set(client.nthreads()) and len(again) == 2
    assert not any(again.values())  # the fixture warmed every worker already


def test_fit_dask_equals_in_memory_fit(client, fitted):
    counts, want = fitted
    got = gd.fit_dask(PaivaModel(), counts, client=client, chains=2, seed=11, **RUN)
    for name in ("scalars", "theta", "eta"):
        np.testing.assert_array_equal(getattr(got, name), getattr(want, name))
    assert got.scalar_names == want.scalar_names and got.beta is None
    assert (got.thin, got.burn_in, got.counts) == (want.thin, want.burn_in, counts)


def test_fit_on_the_client_executor_equals_in_memory_fit(client, fitted):
    # The core knows the Executor protocol only; a Dask client gives one (workers warm).
    counts, want = fitted
    got = PaivaModel().fit(counts, chains=2, seed=11, progress=False,
                           executor=client.get_executor(), **RUN)
    np.testing.assert_array_equal(got.eta, want.eta)
    np.testing.assert_array_equal(got.scalars, want.scalars)


def test_large_arguments_are_scattered_once(client, points, grid, fitted, monkeypatch):
    # Lower the graph limit so that the model's arrays, the original and the releases of
    # this small data are scattered (as large data would be) rather than put in every task.
    monkeypatch.setattr(gd, "_GRAPH_BYTES", 1000)
    counts, want = fitted
    got = gd.fit_dask(PaivaModel(), counts, client=client, chains=2, seed=11, **RUN)
    np.testing.assert_array_equal(got.eta, want.eta)
    releases = geosynth.synthesize(want, points, m=2, seed=5)
    expected = geosynth.evaluate(points, releases, grid, ["a", "c"])
    assert_evaluations_equal(gd.evaluate_dask(points, releases, grid, ["a", "c"],
                                              client=client), expected)
    pd.testing.assert_frame_equal(gd.linked_records_dask(points, releases, client=client),
                                  expected.tables["linked_records"])


def test_fit_dask_beta_and_noise_aware_fits_equal_in_memory(client, points, grid, fitted):
    counts, _ = fitted
    model = PaivaModel(beta_prior="normal")
    kw = dict(chains=3, seed=np.random.SeedSequence(2), **RUN)
    want = model.fit(counts, progress=False, **kw)
    got = gd.fit_dask(model, counts, **dict(kw, seed=np.random.SeedSequence(2)))  # current client
    np.testing.assert_array_equal(got.beta, want.beta)
    np.testing.assert_array_equal(got.eta, want.eta)

    exact = prepare(points, grid, attributes=["a", "c"])
    exact = prepare(points, grid, attributes=["a", "c"], levels=exact.levels)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the seed= of a DP release is for tests only
        noisy = geosynth.dp.dp_counts(exact, 2.0, seed=1)
    want = PaivaModel().fit(noisy, chains=2, seed=4, progress=False, **RUN)
    got = gd.fit_dask(PaivaModel(), noisy, client=client, chains=2, seed=4, **RUN)
    assert got.noise_scale == want.noise_scale
    np.testing.assert_array_equal(got.latent_totals, want.latent_totals)
    np.testing.assert_array_equal(got.eta, want.eta)


def test_fit_dask_rejects_bad_arguments(client, fitted):
    counts, _ = fitted
    with pytest.raises(InputError, match="chains"):
        gd.fit_dask(PaivaModel(), counts, client=client, chains=0)
    with pytest.raises(InputError, match="n_jobs"):
        gd.fit_dask(PaivaModel(), counts, client=client, n_jobs=2, **RUN)
    with pytest.raises(InputError, match="executor"):
        gd.fit_dask(PaivaModel(), counts, client=client, executor=client.get_executor(), **RUN)
    with pytest.raises(InputError, match="PaivaModel"):
        gd.fit_dask("model", counts, client=client)
    # it told the user to drop executor=, which they never passed
    with pytest.raises(InputError, match="fit_dask needs a fixed n_iter, got 'auto'"):
        gd.fit_dask(PaivaModel(), counts, client=client, n_iter="auto")


def test_fit_dask_refuses_a_keyword_the_fit_does_not_take_before_any_dask_work(
        client, fitted, monkeypatch):
    # a raw TypeError "PaivaModel.fit() got an unexpected keyword argument", from the fit run
    # on the Dask executor
    counts, _ = fitted

    def no_dask(*args, **kwargs):
        raise AssertionError("fit_dask set up Dask work before refusing the keyword")

    monkeypatch.setattr(gd, "_get_client", no_dask)
    with pytest.raises(InputError, match=r"fit_dask\(\*\*fit_options\) has \['bogus'\], which "
                       r"PaivaModel.fit does not take; use keys among \[.*'parallel'"):
        gd.fit_dask(PaivaModel(), counts, client=client, bogus=1, **RUN)


@pytest.mark.parametrize("kind", ["none", "open", "tight"])
def test_synthesize_dask_releases_equal_in_memory_synthesize(client, points, fitted, kind):
    _, fit = fitted
    m, seed = 4, 21
    limits = {"none": None, "open": {"z": (0, None)},
              "tight": {"z": (np.floor(points["z"].min()), np.ceil(points["z"].max()))}}[kind]
    got = gd.synthesize_dask(fit, points, m=m, seed=seed, limits=limits, client=client)
    want = geosynth.synthesize(fit, points, m=m, seed=seed, limits=limits)
    assert len(got) == m
    for release, expected in zip(got, want, strict=True):
        pd.testing.assert_frame_equal(release, expected)
        assert release.attrs == expected.attrs
        recorded = release.attrs["geosynth"].get("limits")  # same record as in memory
        assert recorded == (None if limits is None else
                            {"z": [float(end) if end is not None else None
                                   for end in limits["z"]]})
    if limits is not None:  # drawn truncated, and within the limits
        plain = geosynth.synthesize(fit, points, m=m, seed=seed)
        low, high = limits["z"]
        for release, unlimited in zip(got, plain, strict=True):
            assert not np.array_equal(release["z"], unlimited["z"])
            assert (release["z"] >= low).all() and (high is None or (release["z"] <= high).all())


def test_synthesize_dask_draws_several_covariates_jointly_as_in_memory(client, points, grid):
    """The noise correlation comes from the records, in the client; the workers never see them."""
    data = points.assign(w=2.0 * points["z"] + np.random.default_rng(5).normal(0, 0.3,
                                                                           len(points)))
    counts = prepare(data, grid, attributes=["a"], continuous=["z", "w"])
    fit = PaivaModel().fit(counts, chains=1, seed=3, progress=False, **RUN)
    limits = {"w": (0.0, None)}
    got = gd.synthesize_dask(fit, data, m=2, seed=9, limits=limits, client=client)
    want = geosynth.synthesize(fit, data, m=2, seed=9, limits=limits)
    for release, expected in zip(got, want, strict=True):
        pd.testing.assert_frame_equal(release, expected)
        assert np.corrcoef(release["z"], release["w"])[0, 1] > 0.9


def test_synthesize_dask_checks_the_limits_in_the_client(client, points, fitted):
    _, fit = fitted
    below = int((points["z"] < 6).sum())
    with pytest.raises(InputError, match=rf"^{below} record\(s\) of gdf have 'z' outside "
                                         r"limits\['z'\] = \(6, None\)"):
        gd.synthesize_dask(fit, points, m=2, seed=1, limits={"z": (6, None)}, client=client)
    with pytest.raises(InputError, match=r"range for 'age', which is not a continuous column"):
        gd.synthesize_dask(fit, points, m=2, seed=1, limits={"age": (0, 120)}, client=client)


def test_synthesize_dask_gives_the_workers_warnings_in_the_client(client, points, grid,
                                                                   tmp_path):
    """The pooled combination's warning and the raster's note reach the caller."""
    from tests.synth.helpers import from_origin, write_raster

    rare = points.copy()
    rare.loc[rare.index[0], "a"] = 9  # a combination of one record, with synthetic z
    counts = prepare(rare, grid, attributes=["a"], continuous="z")
    fit = PaivaModel().fit(counts, chains=1, seed=2, progress=False, **RUN)
    values = np.zeros((8, 10))
    values[4:, :5] = 1.0  # weight in the lower-left quarter of the 100 x 80 m grid only
    path = write_raster(tmp_path / "w.tif", values, from_origin(0, 80, 10, 10), crs=CRS)
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        gd.synthesize_dask(fit, rare, m=3, seed=4, weights=str(path), client=client)
    with warnings.catch_warnings(record=True) as want:
        warnings.simplefilter("always")
        geosynth.synthesize(fit, rare, m=3, seed=4, weights=path)
    assert [(w.category, str(w.message)) for w in got] == [
        (w.category, str(w.message)) for w in want]
    assert [w.category for w in got] == [DataWarning] * 2  # one for the raster, not one a release
    message = str(got[0].message)
    assert "'a=9'" in message and "fewer than 3 cells holding 3" in message
    assert "are covered by no pixel of positive weight" in str(got[1].message)
    assert str(got[1].message).endswith("(in releases[0], the first of the 3 of the 3 releases "
                                        "that place points in cells without weight; the "
                                        "others' cells and counts may differ)")
    assert all(w.filename == __file__ for w in got)


def test_synthesize_dask_names_the_diverged_draw_of_the_fit(client, points, fitted):
    """A task's fit holds its one draw as draw 0; the error names the draw of the whole fit."""
    _, fit = fitted
    used = geosynth.synth.release_draws(fit, 2)
    eta = fit.eta.copy()
    chain, stored = divmod(int(used[1]), fit.n_eta_draws)
    eta[chain, stored, :, 1] = np.nan
    broken = dataclasses.replace(fit, eta=eta)
    with pytest.raises(geosynth.errors.SamplerError,
                       match=rf"posterior draw {int(used[1])} .*combinations \[1\]"):
        gd.synthesize_dask(broken, points, m=2, seed=1, client=client)


def test_synthesize_dask_is_reproducible(client, points, fitted):
    _, fit = fitted
    m, seed = 3, 21
    got = gd.synthesize_dask(fit, points, m=m, seed=seed, client=client)
    again = gd.synthesize_dask(fit, points, m=m, seed=seed, client=client)
    for a, b in zip(got, again, strict=True):
        pd.testing.assert_frame_equal(a, b)
    other = gd.synthesize_dask(fit, points, m=1, seed=seed + 1, client=client)[0]
    assert not other.geometry.geom_equals(got[0].geometry).all()


def test_synthesize_dask_rejects_foreign_data(client, points, fitted):
    _, fit = fitted
    with pytest.raises(InputError, match="not in gdf"):
        gd.synthesize_dask(fit, points.iloc[10:], m=2, seed=1, client=client)


@pytest.mark.parametrize("npartitions", [1, 4])
def test_prepare_dask_equals_prepare(client, points, grid, npartitions):
    # A planted value is clipped to its combination's fences in both, from the records'
    # values (a partition holds some of a combination's records only).
    points = points.copy()
    points.loc[points.index[5], "z"] = 1e6
    ddf = to_dask(points, npartitions)
    for attributes, continuous in ((["a", "c", "k"], "z"), ("k", None)):
        want = prepare(points, grid, attributes=attributes, continuous=continuous)
        if continuous:
            assert np.isfinite(want.z_fences).any()
            assert np.nanmax(want.z_extremes) < 1e3
        got = gd.prepare_dask(ddf, grid, attributes=attributes, continuous=continuous)
        assert_counts_equal(got, want)
        same = prepare(ddf.compute(), grid, attributes=attributes, continuous=continuous)
        pd.testing.assert_frame_equal(got.combos, same.combos)  # dtypes too


@pytest.mark.parametrize("npartitions", [1, 3, 7])
def test_prepare_dask_warns_of_a_coordinate_column_as_prepare_does(client, points, grid,
                                                                   npartitions):
    # prepare_dask gave no warning where prepare did: a copy of the easting, modelled as a
    # measurement, has its cell means published.
    rng = np.random.default_rng(2)
    copied = points.assign(xcopy=points.geometry.x + rng.normal(0, 0.5, len(points)))
    with warnings.catch_warnings(record=True) as want:
        warnings.simplefilter("always")
        prepare(copied, grid, attributes=["a"], continuous=["z", "xcopy"])
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        gd.prepare_dask(to_dask(copied, npartitions), grid, attributes=["a"],
                        continuous=["z", "xcopy"])
    said = [str(w.message) for w in want if w.category is PrivacyLeakWarning]
    assert len(said) == 1 and said[0].startswith("the continuous column 'xcopy' follows the "
                                                 "records' x (correlation 1.000)")
    assert [str(w.message) for w in got if w.category is PrivacyLeakWarning] == said


@pytest.mark.parametrize("npartitions", [4, 150])
def test_prepare_dask_refuses_record_numbers_split_among_partitions(client, points, grid,
                                                                   npartitions):
    # Each partition was checked alone: 600 record numbers in 150 partitions of 4 rows (below
    # the 20 the check needs), or 4 partitions of 150 (too few for the density rule), passed
    # what prepare refuses.
    numbered = points.assign(score=np.random.default_rng(1).permutation(len(points)) + 1000.0)
    with pytest.raises(InputError, match=r"continuous column 'score' holds 600 distinct whole"):
        prepare(numbered, grid, attributes="a", continuous="score")
    with pytest.raises(InputError, match=r"continuous column 'score' holds 600 distinct whole"):
        gd.prepare_dask(to_dask(numbered, npartitions), grid, attributes="a", continuous="score")


@pytest.mark.parametrize("ids", ["0.1 * id", "id + 0.5", "3 * id + 0.25", "steps of 2 and 3"])
def test_prepare_dask_refuses_record_numbers_scaled_or_shifted(client, points, grid, ids):
    # Any column with a fraction skipped the whole-column check: ids scaled or shifted onto a
    # grid passed the Dask path while prepare refused them; and then ids issued in steps of 2
    # and 3 (x 0.1), whose smallest values' smallest gap is not the grid's step.
    rng = np.random.default_rng(3)
    number = rng.permutation(len(points)).astype(float)
    issued = rng.permutation(np.cumsum(rng.choice([2, 3], len(points)))).astype(float)
    score = {"0.1 * id": 0.1 * number, "id + 0.5": number + 0.5,
             "3 * id + 0.25": 3 * number + 0.25, "steps of 2 and 3": 0.1 * issued}[ids]
    numbered = points.assign(score=score)
    message = r"continuous column 'score' holds 600 distinct whole numbers \(or multiples"
    with pytest.raises(InputError, match=message):
        prepare(numbered, grid, attributes="a", continuous="score")
    with pytest.raises(InputError, match=message):
        gd.prepare_dask(to_dask(numbered, 4), grid, attributes="a", continuous="score")


def test_prepare_dask_judges_record_numbers_on_the_whole_column_only(client, points, grid):
    # A partition holding a run 0..149 (the data sorted by the column) was refused on its own,
    # though the whole column, with a repeated value, is no record numbers: prepare accepts it.
    rng = np.random.default_rng(2)
    score = np.r_[np.arange(150.0), rng.integers(10**6, 10**9, 449).astype(float), 7.0]
    scored = points.assign(score=score)
    want = prepare(scored, grid, attributes="a", continuous="score")
    assert_counts_equal(gd.prepare_dask(to_dask(scored, 4), grid, attributes="a",
                                        continuous="score"), want)


def test_prepare_dask_gathers_no_measurement_to_the_client(client, points, grid, monkeypatch):
    # Measured values are distinct: the record-number check gathered every distinct value of
    # the column to the client, the data this path is for being too large for it. (The second
    # pass gathers each record's value as a float, 8 bytes, beside its cell and combination,
    # for its combination's fences: no set of distinct values.)
    gathered = []
    monkeypatch.setattr(gd, "check_not_row_numbers",
                        lambda values, column: gathered.append(column))
    gd.prepare_dask(to_dask(points, 4), grid, attributes="a", continuous="z")
    assert gathered == []
    whole = points.assign(z=np.round(points["z"] * 10))
    gd.prepare_dask(to_dask(whole, 4), grid, attributes="a", continuous="z")
    assert gathered == ([] if whole["z"].duplicated().any() else ["z"])


@pytest.mark.parametrize("kind", ["text", "comma", "words"])
def test_prepare_dask_names_the_rows_of_text_in_a_continuous_column_as_prepare_does(
        client, points, grid, kind):
    # The metadata of a text column has no rows: the message named none to fix. One pass over
    # the column finds them in every partition (7 rows in 3 partitions; 5 shown).
    data = points.copy()
    if kind == "text":
        z = data["z"].astype(object)
        z.iloc[[5, 250, 251, 500, 501, 502, 599]] = "n/a"
    elif kind == "comma":
        z = data["z"].map(lambda v: f"{v:.2f}".replace(".", ","))
    else:
        z = pd.Series(np.where(data["a"] == 1, "high", "low"), index=data.index, dtype=object)
    data["z"] = z
    with pytest.raises(InputError) as want:
        prepare(data, grid, attributes=["a"], continuous="z")
    with pytest.raises(InputError) as got:
        gd.prepare_dask(to_dask(data, 3), grid, attributes=["a"], continuous="z")
    # dask holds text as its string dtype
    assert re.sub(r"dtype \w+", "dtype", str(got.value)) == re.sub(r"dtype \w+", "dtype",
                                                                   str(want.value))
    if kind == "text":
        labels = data.index[[5, 250, 251, 500, 501]].tolist()
        assert f"7 of its values do not read as numbers (rows {labels} and 2 more)" \
            in str(got.value)


def test_prepare_dask_refuses_booleans_and_numbers_in_different_partitions(client, points,
                                                                          grid):
    # Each partition held one type and passed; the groups of their tables merged True with 1,
    # and the error blamed the data for changing between passes ("persist it first").
    flags = pd.Series([bool(k % 2) for k in range(300)] + [k % 2 for k in range(300)],
                      dtype=object)
    data = points.assign(flag=flags.to_numpy())
    with dask.config.set({"dataframe.convert-string": False}):
        ddf = to_dask(data, 2).persist()
        with pytest.raises(InputError, match=r"attribute 'flag' holds both booleans and numbers"):
            gd.prepare_dask(ddf, grid, attributes="flag")


def test_prepare_dask_warns_once_of_bounds_on_the_records_extremes(client, points):
    # The extremes of x and y sit in different partitions: each partition alone sees at most
    # one touching bound (no warning), and a worker's warning never reached the client.
    order = np.argsort(points.geometry.x.to_numpy())
    data = points.iloc[np.r_[order[:1], order[2:-1], order[1:2], order[-1:]]]
    xmin, ymin, xmax, ymax = data.total_bounds
    on_extremes = Grid.regular((xmin, ymin, xmax, ymax), shape=(4, 5), crs=CRS)
    with pytest.warns(PrivacyLeakWarning) as caught:
        want = prepare(data, on_extremes, attributes=["a"])
    with pytest.warns(PrivacyLeakWarning) as got_warnings:
        got = gd.prepare_dask(to_dask(data, 4), on_extremes, attributes=["a"])
    assert [str(w.message) for w in got_warnings if w.category is PrivacyLeakWarning] == \
        [str(w.message) for w in caught]  # once, naming all four bounds
    assert "xmin, ymin, xmax, ymax" in str(caught[0].message)
    assert_counts_equal(got, want)


def test_prepare_dask_warns_of_a_snapped_lattice_whose_habitable_extent_is_the_records(
        client, points):
    # The Dask path exempted snapped lattices from the whole check, while prepare exempts
    # only their bounds: an exclude of "where nobody lives" published the records' extremes
    # through the habitable fractions without a warning.
    import shapely

    snapped = Grid.from_points(points, shape=(4, 5))
    nobody = shapely.difference(shapely.box(*snapped.bounds).buffer(10.0),
                                shapely.box(*points.total_bounds))
    lattice = Grid.from_points(points, shape=(4, 5), exclude=nobody)
    with pytest.warns(PrivacyLeakWarning, match="habitable extent") as caught:
        want = prepare(points, lattice, attributes=["a"])
    with pytest.warns(PrivacyLeakWarning, match="habitable extent") as got_warnings:
        got = gd.prepare_dask(to_dask(points, 3), lattice, attributes=["a"])
    assert [str(w.message) for w in got_warnings if w.category is PrivacyLeakWarning] == \
        [str(w.message) for w in caught]
    assert_counts_equal(got, want)


def test_prepare_dask_counts_a_float16_attribute_as_prepare_does(client, points, grid):
    # prepare casts float16 levels to float64 (exact); the partitions' groupby raised pandas'
    # NotImplementedError ("float16 indexes are not supported").
    data = points.assign(a=points["a"].astype(np.float16))
    want = prepare(data, grid, attributes=["a"])
    got = gd.prepare_dask(to_dask(data, 3), grid, attributes=["a"])
    assert_counts_equal(got, want)


def test_prepare_dask_refuses_lists_as_levels_as_prepare_does(client, points, grid):
    # The partitions' groupby raised a bare "TypeError: unhashable type: 'list'".
    values = pd.Series([[1, 2] if k % 2 else "a" for k in range(len(points))],
                       index=points.index, dtype=object)
    data = points.assign(v=values)
    match = r"attribute 'v' mixes values of types \['list', 'str'\].*astype\(str\)"
    with pytest.raises(InputError, match=match):
        prepare(data, grid, attributes=["v"])
    with dask.config.set({"dataframe.convert-string": False}):
        with pytest.raises(InputError, match=match):
            gd.prepare_dask(to_dask(data, 3), grid, attributes=["v"])


def test_prepare_dask_passes_several_covariates(client, points, grid):
    data = points.assign(w=(np.arange(len(points)) % 7) * 1.5)
    want = prepare(data, grid, attributes=["a"], continuous=["z", "w"])
    got = gd.prepare_dask(to_dask(data, 3), grid, attributes=["a"], continuous=["z", "w"])
    assert got.continuous == ("z", "w") and got.zbar.shape == (2, grid.n_cells, got.n_combos)
    assert_counts_equal(got, want)


def test_prepare_dask_outside_points(client, points, grid):
    small = Grid.regular((0, 0, 100, 40), shape=(2, 5), crs=CRS)
    ddf = to_dask(points, 3)
    with pytest.raises(InputError, match=r"of 600 points fall in no grid cell"):
        gd.prepare_dask(ddf, small, attributes=["a"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        want = prepare(points, small, attributes=["a", "k"], continuous="z", outside="drop")
        got = gd.prepare_dask(ddf, small, attributes=["a", "k"], continuous="z",
                              outside="drop")
    dropped = [str(w.message).split(":")[0] for w in caught if w.category is DataWarning]
    assert len(dropped) == 2 and dropped[0] == dropped[1]
    assert all(w.filename == __file__ for w in caught if w.category is DataWarning)
    assert_counts_equal(got, want)
    nowhere = Grid.regular((1000, 1000, 1100, 1080), shape=(2, 2), crs=CRS)
    with pytest.raises(InputError, match="none of the 600 points falls in a grid cell") as dask:
        gd.prepare_dask(ddf, nowhere, attributes=["a"], outside="drop")
    with pytest.raises(InputError) as memory:
        prepare(points, nowhere, attributes=["a"], outside="drop")
    assert str(dask.value) == str(memory.value)  # with the points' bounds, as prepare says
    assert "bounds about" in str(dask.value)


def test_prepare_dask_refuses_repeated_labels_when_records_are_dropped(client, points, grid):
    # Partitions read from separate files often number their rows from 0 again: the kept
    # records' labels (record_index) then named several rows each, as in prepare.
    small = Grid.regular((0, 0, 100, 40), shape=(2, 5), crs=CRS)
    halves = [points.iloc[:300].reset_index(drop=True), points.iloc[300:].reset_index(drop=True)]
    ddf = to_dask(pd.concat(halves), 2)
    assert ddf.npartitions == 2
    with pytest.raises(InputError, match=r"gdf has 300 index labels shared by several rows .*"
                                         r"reset_index\(drop=True\)"):
        gd.prepare_dask(ddf, small, attributes=["a"], outside="drop")
    assert gd.prepare_dask(ddf, grid, attributes=["a"], outside="drop").n_records == 600


def test_prepare_dask_checks_metadata_and_partitions(client, points, grid):
    ddf = to_dask(points, 2)
    with pytest.raises(InputError, match="not a column"):
        gd.prepare_dask(ddf, grid, attributes=["nope"])
    with pytest.raises(geosynth.errors.CRSError):
        gd.prepare_dask(ddf.to_crs("EPSG:4326"), grid, attributes=["a"])
    with pytest.raises(InputError, match="non-numeric"):
        gd.prepare_dask(ddf, grid, attributes=["a"], continuous="c")
    bad = points.copy()
    bad.loc[bad.index[5], "a"] = np.nan
    with pytest.raises(InputError, match="missing"):
        gd.prepare_dask(to_dask(bad, 2), grid, attributes=["a"])
    unknown = ddf.assign(u=ddf["c"].astype("category").cat.as_unknown())
    with pytest.raises(InputError, match="categorize"):
        gd.prepare_dask(unknown, grid, attributes=["u"])
    with pytest.raises(InputError, match='outside must be "error" or "drop"'):
        gd.prepare_dask(ddf, grid, attributes=["a"], outside="keep")
    with pytest.raises(InputError, match="must be a dask_geopandas.GeoDataFrame"):
        gd.prepare_dask(points, grid, attributes=["a"])
    # The core does not import dask: it sends a Dask frame here.
    with pytest.raises(InputError, match="geosynth.distributed.prepare_dask"):
        prepare(ddf, grid, attributes=["a"])


def test_prepare_dask_refuses_mixed_types_the_frame_keeps(client, points, grid):
    """As documented: without Dask's string conversion 1 and "1" are refused, as by prepare."""
    import dask

    mixed = points.assign(m=pd.Series([1, "1"] * (len(points) // 2), index=points.index,
                                      dtype=object))
    apart = points.assign(m=pd.Series([1] * 300 + ["1"] * 300, index=points.index,
                                      dtype=object))  # each partition of one type
    with pytest.raises(InputError, match=r"mixes values of types \['int', 'str'\]"):
        prepare(mixed, grid, attributes=["m"])
    with dask.config.set({"dataframe.convert-string": False}):
        for frame in (mixed, apart):
            with pytest.raises(InputError, match=r"mixes values of types \['int', 'str'\]"):
                gd.prepare_dask(to_dask(frame, 2), grid, attributes=["m"])
    with dask.config.set({"dataframe.convert-string": True}):  # the default: one level "1"
        ddf = to_dask(mixed, 2)
        with pytest.warns(geosynth.errors.DataWarning, match="'m' has a single level"):
            assert gd.prepare_dask(ddf, grid, attributes=["m"]).levels == {"m": ["1"]}


def test_prepare_dask_judges_coordinates_as_text_by_records_not_groups(client):
    # 60 records carry their own "x y" (31 addresses, most shared by two), 40 read "unknown":
    # prepare refused the column; the Dask path judged its table of counts, a row per cell
    # and level (31 rows of addresses against over 31 of "unknown" on 100 cells), and
    # accepted it, publishing the addresses as levels.
    grid = Grid.regular((0, 0, 100, 80), shape=(10, 10), crs=CRS)
    rng = np.random.default_rng(3)
    at = rng.uniform(1, 79, (31, 2))
    shared = np.repeat(at, np.r_[np.full(29, 2), 1, 1], axis=0)
    where = np.r_[shared, rng.uniform(1, 79, (40, 2))]
    text = [f"{x:.1f} {y:.1f}" for x, y in shared] + ["unknown"] * 40
    located = gpd.GeoDataFrame({"loc": np.array(text, dtype=object)},
                               geometry=gpd.points_from_xy(*where.T), crs=CRS)
    for prepared in (lambda: prepare(located, grid, attributes=["loc"]),
                     lambda: gd.prepare_dask(to_dask(located, 1), grid, attributes=["loc"])):
        with pytest.raises(InputError, match="attribute 'loc' holds locations"):
            prepared()


def test_prepare_dask_refuses_an_attribute_of_another_dtype_in_a_partition(client, points, grid):
    # A partition of floats under int metadata was cast to it: level 1.5 was counted as 1,
    # without a word (prepare of the same records keeps 1.0, 1.5 and 2.0 apart).
    from dask import delayed

    ints, floats = points.iloc[:300], points.iloc[300:]
    floats = floats.assign(a=floats["a"] + 0.5 * (np.arange(300) % 2))
    for other in (floats, floats.assign(a=floats["a"].astype(str))):
        ddf = dask.dataframe.from_delayed([delayed(ints), delayed(other)], meta=ints.iloc[:0],
                                          verify_meta=False)
        with pytest.raises(InputError, match=r"a partition of gdf holds attribute 'a' as "
                           r"(float64|str|object), the frame's metadata as int64: .*"
                           r"ddf\['a'\] = ddf\['a'\]\.astype\('int64'\)"):
            gd.prepare_dask(ddf, grid, attributes=["a"])
    # integers of another width keep their values, and text as object or str is text
    same = dask.dataframe.from_delayed(
        [delayed(ints), delayed(points.iloc[300:].assign(a=points["a"].iloc[300:]
                                                           .astype("int32")))],
        meta=ints.iloc[:0], verify_meta=False)
    assert_counts_equal(gd.prepare_dask(same, grid, attributes=["a"]),
                        prepare(points, grid, attributes=["a"]))


def test_prepare_dask_checks_the_crs_of_every_partition(client, points, grid):
    """A partition's CRS is not the metadata's: its coordinates were counted as the grid's."""
    import dask
    import dask.dataframe as dd

    first, rest = points.iloc[:300], points.iloc[300:]
    for other in (rest.set_crs("EPSG:32724", allow_override=True),  # prepare: CRSError
                  rest.set_crs(None, allow_override=True)):
        with pytest.raises(geosynth.errors.CRSError):
            prepare(other, grid, attributes=["a"])
        ddf = dd.from_delayed([dask.delayed(first), dask.delayed(other)], meta=points.iloc[:0])
        if not isinstance(ddf, dask_geopandas.GeoDataFrame):
            ddf = dask_geopandas.from_dask_dataframe(ddf)
        assert ddf.crs == points.crs
        with pytest.raises(geosynth.errors.CRSError, match="^a partition of gdf is not in"):
            gd.prepare_dask(ddf, grid, attributes=["a"])
        with pytest.raises(geosynth.errors.CRSError, match="^a partition of gdf is not in"):
            gd.prepare_dask(ddf, grid, attributes=["a"], levels={"a": [0, 1]})


def test_synthesize_dask_checks_the_weights_in_the_client(client, points, fitted, tmp_path):
    # Read in each task before: the InputError reached the caller as a bare Exception (its
    # rasterio cause does not unpickle), once per release.
    _, fit = fitted
    missing = str(tmp_path / "nope.tif")
    with pytest.raises(InputError) as memory:
        geosynth.synthesize(fit, points, m=2, seed=1, weights=missing)
    with pytest.raises(InputError) as dask:
        gd.synthesize_dask(fit, points, m=2, seed=1, weights=missing, client=client)
    assert type(dask.value) is type(memory.value)
    assert str(dask.value) == str(memory.value) and "does not exist" in str(dask.value)


def test_dask_prepared_counts_fit_and_synthesize(client, points, grid):
    ddf = to_dask(points, 3)
    counts = gd.prepare_dask(ddf, grid, attributes=["a", "c"], continuous="z")
    fit = gd.fit_dask(PaivaModel(), counts, client=client, chains=1, seed=3, **RUN)
    [release] = gd.synthesize_dask(fit, ddf.compute(), m=1, seed=3, client=client)
    assert release.index.equals(points.index) and len(release) == len(points)


def test_linked_records_dask_equals_evaluate(client, points, grid, fitted):
    _, fit = fitted
    releases = geosynth.synthesize(fit, points, m=3, seed=5)
    want = geosynth.evaluate(points, releases, grid, ["a", "c"]).tables["linked_records"]
    got = gd.linked_records_dask(points, releases, client=client)
    pd.testing.assert_frame_equal(got, want)
    with pytest.raises(InputError, match="original index"):
        gd.linked_records_dask(points, [geosynth.to_public(releases[0], seed=1)], client=client)
    one = gd.linked_records_dask(points, releases[0], client=client)  # one frame: raw error
    pd.testing.assert_frame_equal(one, want.iloc[:1])


# --------------------------------------------------------------------------- evaluate
@pytest.fixture(scope="module")
def thread_client():
    """Two single-thread workers in this process (the README's LocalCluster)."""
    # The scheduler serves its HTTP routes even without a dashboard, by default on port 8787,
    # which the module's other cluster holds: any free port will do.
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                       dashboard_address=None,
                                       scheduler_kwargs={"dashboard_address": ":0"})
    with distributed.Client(cluster, set_as_default=False) as c:
        gd.warm_up(c)
        yield c
    cluster.close()


def assert_evaluations_equal(got, want):
    """Same tables, in the same order, to the last bit (same functions on the same data)."""
    assert list(got.tables) == list(want.tables)
    for name, table in want.tables.items():
        pd.testing.assert_frame_equal(got.tables[name], table, check_exact=True)
    if want.quadrants is None:
        assert got.quadrants is None
    else:
        pd.testing.assert_frame_equal(got.quadrants, want.quadrants, check_exact=True)
    assert got.attributes == want.attributes and len(got.releases) == len(want.releases)


def test_evaluate_dask_equals_evaluate(thread_client, points, grid, fitted):
    _, fit = fitted
    releases = geosynth.synthesize(fit, points, m=3, seed=5)
    kw = dict(outcome="a", n_quadrants=50, seed=2)
    want = geosynth.evaluate(points, releases, grid, ["a", "c"], **kw)
    with distributed.get_task_stream(client=thread_client) as stream:
        got = gd.evaluate_dask(points, releases, grid, ["a", "c"], client=thread_client, **kw)
    tasks = [t["key"] for t in stream.data if str(t["key"]).startswith("geosynth-evaluate-")]
    assert len(tasks) == 3  # one task per release
    assert set(got.tables) == {"distance_risk", "pattern", "identification_risk",
                               "linked_records", "coverage", "continuous"}
    assert_evaluations_equal(got, want)
    # Public (shuffled) releases: no linked-record tables, the same on both paths.
    public = [geosynth.to_public(r, seed=k) for k, r in enumerate(releases)]
    want = geosynth.evaluate(points, public, grid, "c", linked=False)
    got = gd.evaluate_dask(points, public, grid, "c", linked=False, client=thread_client)
    assert set(got.tables) == {"distance_risk", "pattern", "continuous"}
    assert_evaluations_equal(got, want)


def test_evaluate_on_the_client_executor_in_worker_processes(client, points, grid, fitted):
    _, fit = fitted
    releases = geosynth.synthesize(fit, points, m=2, seed=8)
    want = geosynth.evaluate(points, releases, grid, ["c", "a"], outcome="a", n_quadrants=40,
                             seed=1)
    got = geosynth.evaluate(points, releases, grid, ["c", "a"], outcome="a", n_quadrants=40,
                            seed=1, executor=client.get_executor())
    assert_evaluations_equal(got, want)
    got = gd.evaluate_dask(points, releases, grid, ["c", "a"], outcome="a", n_quadrants=40,
                           seed=1, client=client)
    assert_evaluations_equal(got, want)


def test_evaluate_dask_checks_every_release_in_the_client(thread_client, points, grid, fitted):
    _, fit = fitted
    releases = geosynth.synthesize(fit, points, m=3, seed=5)
    missing = [releases[0], releases[1].drop(columns="c"), releases[2]]
    with pytest.raises(InputError, match=r"'c' is not a column of releases\[1\]"):
        gd.evaluate_dask(points, missing, grid, ["a", "c"], client=thread_client)
    shuffled = [releases[0], releases[1], releases[2].iloc[::-1]]
    with pytest.raises(InputError, match=r"releases\[2\] does not keep the original index"):
        gd.evaluate_dask(points, shuffled, grid, ["a"], client=thread_client)
    with pytest.raises(InputError, match="releases is empty"):
        gd.evaluate_dask(points, [], grid, ["a"], client=thread_client)
    for wrong in (None, 5):  # list(releases): a bare TypeError "object is not iterable"
        with pytest.raises(InputError, match="releases must be a GeoDataFrame or a list"):
            gd.evaluate_dask(points, wrong, grid, ["a"], client=thread_client)


def test_tune_on_the_client_executor_equals_in_memory_tune(client, points):
    import shapely

    options = {"region": shapely.box(0, 0, 100, 80), "fit_options": RUN, "m": 2,
               "n_quadrants": 50, "seed": 4, "progress": False}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        local = geosynth.tune(points, ["a", "c"], [(2, 2), (4, 5)], **options)
        remote = geosynth.tune(points, ["a", "c"], [(2, 2), (4, 5)],
                               executor=client.get_executor(), **options)
    columns = [c for c in local.table.columns if c != "seconds"]
    pd.testing.assert_frame_equal(local.table[columns], remote.table[columns])
    assert remote.recommend().label == local.recommend().label


def test_tune_on_the_client_executor_gives_the_candidates_warnings(client, points):
    # The candidates' warnings were shown in the workers' logs, unlabelled: an analyst on a
    # cluster saw none of the privacy warnings tune gives in memory (rare levels here).
    import shapely

    rare = points.assign(r=np.where(np.arange(len(points)) < 2, "rare", "common"))
    options = {"region": shapely.box(0, 0, 100, 80), "fit_options": RUN, "m": 2,
               "n_quadrants": 50, "seed": 4, "progress": False}

    def privacy_warnings(**executor):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            geosynth.tune(rare, ["a", "r"], [(2, 2), (4, 5)], **executor, **options)
        return sorted(str(w.message) for w in caught if w.category is PrivacyLeakWarning
                      and "levels held by fewer than 3 records" in str(w.message))

    local = privacy_warnings()
    assert [m[:21] for m in local] == ["candidate '2x2': attr", "candidate '4x5': attr"]
    assert privacy_warnings(executor=client.get_executor()) == local


def test_prepare_dask_on_a_public_domain_equals_prepare(client, points):
    # The preparation of a DP release: nothing refused on values, the same records dropped.
    region_grid = Grid.regular((0, 0, 100, 60), shape=(3, 5), crs=CRS)  # y > 60: outside
    odd = points.copy()
    odd.loc[odd.index[:7], "c"] = "w"  # an undeclared level
    odd.loc[odd.index[7:10], "geometry"] = None  # no point
    levels = {"a": [0, 1], "c": ["u", "v"], "k": ["lo", "mid", "hi", "x"]}
    with pytest.warns(DataWarning) as memory:
        want = prepare(odd, region_grid, attributes=["a", "c", "k"], levels=levels)
    with pytest.warns(DataWarning) as dask:
        got = gd.prepare_dask(to_dask(odd, 4), region_grid, attributes=["a", "c", "k"],
                              levels=levels)
    assert got.domain_declared and got.counts.shape == (15, 16)
    assert_counts_equal(got, want)
    assert [str(w.message) for w in dask] == [str(w.message) for w in memory]
    assert dask[0].filename == memory[0].filename == __file__  # the caller's line
    assert "7 with an attribute value outside the declared levels" in str(dask[0].message)
    with pytest.warns(PrivacyLeakWarning):  # the seed (tests only)
        noisy = geosynth.dp.dp_counts(got, 1.0, seed=0)  # the DP entry points take it
    assert noisy.counts.shape == (15, 16)


def test_prepare_dask_checks_the_dtypes_of_every_partition(client, points, grid):
    """A partition's dtypes are not the metadata's: refused as prepare refuses them, not counted.

    A bool continuous column was summed as 0 and 1, and a categorical value outside the
    metadata's categories was counted as its last category ('x', which no record holds).
    """
    ddf = to_dask(points, 3)

    def as_bool(part):
        return part.assign(z=part["z"] > 5)

    with pytest.raises(InputError, match="non-numeric dtype bool"):
        prepare(points.assign(z=points["z"] > 5), grid, attributes=["a"], continuous="z")
    with pytest.raises(InputError, match=r"^a partition of gdf does not match .*non-numeric"):
        gd.prepare_dask(ddf.map_partitions(as_bool, meta=ddf._meta), grid, attributes=["a"],
                        continuous="z")

    def new_level(part):
        k = part["k"].cat.add_categories(["new"])
        k.iloc[:5] = "new"
        return part.assign(k=k)

    other = ddf.map_partitions(new_level, meta=ddf._meta)
    with pytest.raises(InputError, match=r"attribute 'k' .*ddf.categorize\(columns=\['k'\]\)"):
        gd.prepare_dask(other, grid, attributes=["a", "k"])


def _changes_after_first_read(part, folder, partition_info=None):
    """Return ``part`` the first time, then with ``a`` flipped (data changing between passes)."""
    seen = folder / f"read-{partition_info['number']}"
    if seen.exists():
        return part.assign(a=1 - part["a"])
    seen.touch()
    return part


def test_prepare_dask_refuses_data_that_changes_between_passes(client, points, grid, tmp_path):
    # As many records in both passes, so the record count check passed, and the counts (first
    # pass) disagreed with the records' cells and combinations (second pass) that the
    # releases are drawn for.
    ddf = to_dask(points, 2)
    changing = ddf.map_partitions(_changes_after_first_read, tmp_path, meta=ddf._meta)
    with pytest.raises(InputError, match="second pass .*persist"):
        gd.prepare_dask(changing, grid, attributes=["a", "c"])
    for seen in tmp_path.iterdir():
        seen.unlink()
    stable = changing.persist()  # as the message says: one read
    assert_counts_equal(gd.prepare_dask(stable, grid, attributes=["a", "c"]),
                        prepare(points, grid, attributes=["a", "c"]))


def test_seed_helpers_refuse_what_fit_and_synthesize_refuse():
    # True gave one seed, 0 none, -1 a bare OverflowError, 10**11 ran until memory ran out.
    for chains in (True, 0, -1, 10**11):
        with pytest.raises(InputError, match="chains must be an integer from 1 to 1,024"):
            gd.chain_seeds(1, chains)
    with pytest.raises(InputTypeError, match=r"chains must be an int, got float 2\.0; pass an "
                                             r"int, e\.g\. chains=2"):
        gd.chain_seeds(1, 2.0)
    assert len(gd.chain_seeds(1, np.int64(3))) == 3


# --------------------------------------------------------------------------- review
def test_synthesize_dask_refuses_what_is_not_a_fit(client, points):
    # The one home of the check (geosynth.model.results.check_fit) and its message.
    for wrong in ("fit", None, prepare(points, Grid.regular((0, 0, 100, 80), shape=(2, 2),
                                                            crs=CRS), attributes=["a"])):
        with pytest.raises(InputError, match="^fit must be the geosynth.PaivaFit of "
                                             r"PaivaModel\(\).fit, got "):
            gd.synthesize_dask(wrong, points, m=2, seed=1, client=client)


def test_fit_dask_says_what_is_wrong_with_n_iter_and_stop(client, fitted):
    # A str n_iter other than "auto" was told the story of n_iter="auto"; stop= was said to
    # be set by fit_dask itself, which it never is.
    import threading

    counts, _ = fitted
    with pytest.raises(InputError, match="n_iter must be an integer from 1 to") as caught:
        gd.fit_dask(PaivaModel(), counts, client=client, n_iter="800", burn_in=2, thin=1)
    assert "auto" not in str(caught.value).split("got")[1]
    with pytest.raises(InputError, match="fit_dask takes no stop: its chains run as Dask tasks"):
        gd.fit_dask(PaivaModel(), counts, client=client, stop=threading.Event(), **RUN)


def _note_read(part, folder, partition_info=None):
    """Return ``part`` after leaving a file in ``folder`` for this read of the partition."""
    (folder / f"read-{partition_info['number']}-{os.urandom(6).hex()}").touch()
    return part


def test_prepare_dask_reads_the_data_as_often_as_documented(client, points, grid, tmp_path):
    # "The data is read twice" (once with levels): the check of the bounds against the
    # records' extremes read every partition once more.
    ddf = to_dask(points, 3)
    counted = ddf.map_partitions(_note_read, tmp_path, meta=ddf._meta)
    for kw, passes in ((dict(attributes=["a", "c"]), 2),
                       (dict(attributes=["a"], levels={"a": [0, 1]}), 1)):
        for read in tmp_path.iterdir():
            read.unlink()
        got = gd.prepare_dask(counted, grid, **kw)
        assert_counts_equal(got, prepare(points, grid, **kw))
        assert len(list(tmp_path.iterdir())) == passes * 3


def test_prepare_dask_on_a_public_domain_warns_of_bounds_at_the_callers_line(client, points):
    # The PrivacyLeakWarning named geosynth/distributed.py, and came after the drop warning
    # (prepare warns of the bounds first).
    xmin, ymin, xmax, ymax = points.total_bounds
    on_extremes = Grid.regular((xmin, ymin, xmax, ymax), shape=(4, 5), crs=CRS)
    odd = points.copy()
    odd.loc[odd.index[:4], "a"] = 7  # outside the declared levels: dropped with a warning
    kw = dict(attributes=["a"], levels={"a": [0, 1]})
    with warnings.catch_warnings(record=True) as memory:
        warnings.simplefilter("always")
        prepare(odd, on_extremes, **kw)
    with warnings.catch_warnings(record=True) as dask:
        warnings.simplefilter("always")
        gd.prepare_dask(to_dask(odd, 3), on_extremes, **kw)
    assert [w.category for w in dask] == [w.category for w in memory] == [
        PrivacyLeakWarning, DataWarning]
    assert [str(w.message) for w in dask] == [str(w.message) for w in memory]
    assert all(w.filename == __file__ for w in dask)


def test_synthesize_dask_sends_no_original_point_or_value_to_the_workers(
        thread_client, points, fitted, monkeypatch):
    # Every worker got the records' coordinates and continuous values (kept in its memory,
    # spilled to its disk) though a release draws new ones.
    _, fit = fitted
    sent = []
    scatter = thread_client.scatter

    def spy(data, *args, **kwargs):
        sent.extend(data)
        return scatter(data, *args, **kwargs)

    monkeypatch.setattr(thread_client, "scatter", spy)
    got = gd.synthesize_dask(fit, points, m=2, seed=3, client=thread_client)
    [shared] = [s for s in sent if hasattr(s, "rows")]
    rows = shared.rows
    assert rows.crs == points.crs and rows.geometry.name == points.geometry.name
    assert rows.geometry.isna().all() and rows["z"].isna().all()
    assert not np.isin(points["z"].to_numpy(), rows.to_numpy(dtype=object)).any()
    pd.testing.assert_frame_equal(rows[["a", "c"]], pd.DataFrame(points[["a", "c"]]))
    # nor the records' cells, the exact counts per cell, the cell means of z or its extremes
    counts = shared.fit.counts
    assert fit.counts.counts.any() and fit.counts.zbar.any() and fit.counts.record_cell.any()
    assert np.isfinite(fit.counts.z_extremes).any()
    assert not (counts.counts.any() or counts.record_cell.any() or counts.zbar.any()
                or counts.zbar_mask.any() or counts.z_extremes.any())
    for release, expected in zip(got, geosynth.synthesize(fit, points, m=2, seed=3),
                                 strict=True):
        pd.testing.assert_frame_equal(release, expected)
