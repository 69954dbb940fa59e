"""synthesize: cell probabilities (eq. 2.18), posterior draws, continuous Z (§2.2.2), checks."""

import dataclasses
import subprocess
import sys
import warnings

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import shapely
from scipy import stats
from shapely.geometry import Point, box

import geosynth.data as geosynth_data
from geosynth import Grid, PaivaModel, prepare
from geosynth.errors import (
    CRSError,
    DataWarning,
    InputError,
    IsolatedCellWarning,
    PrivacyLeakWarning,
    SamplerError,
)
from geosynth.rasters import read_weights
from geosynth.synth import (
    PosteriorDraws,
    release_draws,
    synthesis_sd,
    synthesize,
    synthetic_zbar,
    to_public,
)
from geosynth.synth.paiva import (
    DOMINANCE_RATIO,
    MIN_FENCE_MEANS,
    MIN_JUDGED_CELLS,
    MIN_RECORDS_FOR_VALUES,
    OUTLYING_FENCE,
    SYNTHESIS_SD_PRIOR_DF,
    ReleaseMaker,
    continuous_values,
    kept_pairs,
    outlying_means,
    release_seeds,
    warn_pooled_combinations,
)
from tests.synth.helpers import (
    CRS,
    frame_with_index,
    from_origin,
    make_points,
    random_lambda,
    stub_fit,
    write_raster,
)

ALPHA = 1e-3


def cells_of(grid, release):
    return grid.locate(release.geometry)


# ---------------------------------------------------------------------- cell choice (eq. 2.18)
def test_cell_frequencies_match_p_of_the_used_draw(regular_data):
    gdf, grid, counts = regular_data
    fit = stub_fit(counts, random_lambda(counts, chains=2, draws=10, seed=3))
    releases = synthesize(fit, gdf, m=2, seed=21)
    for release in releases:
        draw = release.attrs["geosynth"]["posterior_draw"]
        lam = fit.lambda_draw(draw)
        cells = cells_of(grid, release)
        assert (cells >= 0).all()
        for b in range(counts.n_combos):
            members = counts.record_combo == b
            n_b = int(members.sum())
            observed = np.bincount(cells[members], minlength=grid.n_cells)
            p = lam[:, b] / lam[:, b].sum()
            assert stats.chisquare(observed, n_b * p).pvalue > ALPHA
            # The test has power: the original cell frequencies are a different target.
            original = counts.counts[:, b] / n_b
            assert stats.chisquare(observed, n_b * original).pvalue < ALPHA


def test_zero_intensity_cells_are_never_drawn(regular_data):
    gdf, grid, counts = regular_data
    lam = random_lambda(counts, chains=1, draws=4, seed=1)
    lam[..., ::2, :] = 0.0  # even cells impossible for every combination
    releases = synthesize(stub_fit(counts, lam), gdf, m=4, seed=2)
    for release in releases:
        assert (cells_of(grid, release) % 2 == 1).all()


def test_habitable_fraction_is_not_a_weight():
    # Cell 0 is 90% excluded; with equal λ it must still get half of the records.
    grid = Grid.regular((0, 0, 20, 10), shape=(1, 2), crs=CRS, exclude=box(0, 0, 9, 10))
    gdf = make_points(4000, bounds=(9.5, 0, 20, 10), seed=4)
    counts = prepare(gdf, grid, attributes=["a"])
    lam = np.ones((1, 3, grid.n_cells, counts.n_combos))
    (release,) = synthesize(stub_fit(counts, lam), gdf, m=1, seed=5)
    observed = np.bincount(cells_of(grid, release), minlength=2)
    assert stats.chisquare(observed).pvalue > ALPHA
    x = release.geometry.x.to_numpy()
    assert (x[cells_of(grid, release) == 0] >= 9).all()


def test_diverged_draw_raises_sampler_error(regular_data):
    gdf, _, counts = regular_data
    lam = random_lambda(counts, chains=1, draws=2, seed=1)
    lam[0, 1, :, 2] = 0.0
    fit = stub_fit(counts, lam)
    with pytest.raises(SamplerError, match=r"posterior draw 1 .*combinations \[2\]"):
        synthesize(fit, gdf, m=2, seed=1)
    lam[0, 1, 3, 2] = np.inf
    with pytest.raises(SamplerError, match="not finite"):
        synthesize(stub_fit(counts, lam), gdf, m=2, seed=1)


# ---------------------------------------------------------------------- posterior draws
def concentrated_fit(counts, chains, draws):
    """Draw d puts all the mass of every combination in cell d % G."""
    lam = np.full((chains, draws, counts.n_cells, counts.n_combos), 0.0)
    for d in range(chains * draws):
        lam[d // draws, d % draws, d % counts.n_cells, :] = 1.0
    return stub_fit(counts, lam)


def test_releases_use_equally_spaced_distinct_draws(regular_data):
    gdf, grid, counts = regular_data
    fit = concentrated_fit(counts, chains=2, draws=10)
    releases = synthesize(fit, gdf, m=4, seed=1)
    expected = [2, 7, 12, 17]  # floor((l + 1/2) * 20 / 4)
    assert [r.attrs["geosynth"]["posterior_draw"] for r in releases] == expected
    for release, draw in zip(releases, expected, strict=True):
        assert (cells_of(grid, release) == draw % grid.n_cells).all()


def test_release_draws_formula(regular_data):
    _, _, counts = regular_data
    fit = concentrated_fit(counts, chains=3, draws=5)
    np.testing.assert_array_equal(release_draws(fit, 15), np.arange(15))
    np.testing.assert_array_equal(release_draws(fit, 1), [7])
    np.testing.assert_array_equal(release_draws(fit, 3), [2, 7, 12])  # one per chain
    draws = release_draws(fit, 7)
    assert np.unique(draws).size == 7 and draws.dtype == np.int64
    with pytest.raises(InputError, match="m=16 releases need 16 distinct posterior draws"):
        release_draws(fit, 16)


# ---------------------------------------------------------------------- placement and content
def test_points_lie_in_habitable_geometry_of_drawn_cells():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IsolatedCellWarning)
        grid = Grid.regular(
            (0, 0, 120, 90),
            shape=(6, 8),
            crs=CRS,
            region=Point(60, 45).buffer(50),
            exclude=[Point(40, 40).buffer(12), box(80, 0, 95, 50)],
        )
    gdf = make_points(6000, seed=2)
    gdf = gdf[grid.locate(gdf.geometry) >= 0]
    counts = prepare(gdf, grid, attributes=["a", "c"], continuous="z")
    fit = stub_fit(counts, random_lambda(counts, chains=1, draws=3, seed=2))
    for release in synthesize(fit, gdf, m=3, seed=8):
        cells = cells_of(grid, release)
        assert (cells >= 0).all()
        x, y = release.geometry.x.to_numpy(), release.geometry.y.to_numpy()
        assert shapely.contains_xy(np.asarray(grid.habitable_geometry)[cells], x, y).all()


def test_release_columns_index_crs_and_attributes(regular_data):
    gdf, _, counts = regular_data
    fit = stub_fit(counts, random_lambda(counts, chains=1, draws=5, seed=0))
    releases = synthesize(fit, gdf, m=2, seed=4)
    assert len(releases) == 2
    for release in releases:
        assert isinstance(release, gpd.GeoDataFrame)
        assert list(release.columns) == ["a", "c", "z", "geometry"]  # "other" is not carried
        assert release.crs == gdf.crs
        assert release.index.equals(gdf.index)
        pd.testing.assert_frame_equal(
            pd.DataFrame(release[["a", "c"]]), pd.DataFrame(gdf[["a", "c"]])
        )
        assert not np.allclose(release["z"].to_numpy(), gdf["z"].to_numpy())
        assert release.geometry.geom_type.eq("Point").all()
        # Leak check: no synthetic point equals an original one.
        original = set(map(tuple, shapely.get_coordinates(gdf.geometry.array)))
        synthetic = set(map(tuple, shapely.get_coordinates(release.geometry.array)))
        assert original.isdisjoint(synthetic)


def test_records_dropped_by_prepare_are_not_released():
    grid = Grid.regular((0, 0, 100, 100), shape=(4, 4), crs=CRS)
    gdf = frame_with_index(
        make_points(800, bounds=(-10, 0, 100, 100), seed=3), [f"r{i}" for i in range(800)]
    )
    with pytest.warns(DataWarning, match="dropped"):
        counts = prepare(gdf, grid, attributes=["a"], outside="drop")
    assert counts.n_records < 800
    fit = stub_fit(counts, random_lambda(counts, chains=1, draws=2))
    (release,) = synthesize(fit, gdf, m=1, seed=0)
    assert release.index.equals(counts.record_index)
    assert list(release.columns) == ["a", "geometry"]


def test_reordered_frame_with_unique_index_is_accepted(regular_data):
    gdf, _, counts = regular_data
    fit = stub_fit(counts, random_lambda(counts, chains=1, draws=2))
    shuffled = gdf.sample(frac=1.0, random_state=0)
    a = synthesize(fit, gdf, m=1, seed=6)[0]
    b = synthesize(fit, shuffled, m=1, seed=6)[0]
    assert b.index.equals(gdf.index)  # record order of the fit
    assert a.geometry.geom_equals_exact(b.geometry, 0).all()


@pytest.mark.parametrize("edit", [
    lambda z: z + 100.0,  # rescaled after prepare
    lambda z: z.where(z < z.quantile(0.99), z.quantile(0.99)),  # top-coded after prepare
    lambda z: z.astype(str).where(z.index != 17, "unknown"),  # text in one record
])
def test_a_continuous_column_changed_after_prepare_is_refused(regular_data, edit):
    # The synthetic values follow the prepared cell means, while limits and the release read
    # gdf: a column top-coded after prepare() was published around its old extremes.
    gdf, _, counts = regular_data
    fit = stub_fit(counts, random_lambda(counts, chains=1, draws=2))
    with pytest.raises(InputError, match=r"continuous column 'z' of gdf differs from the data "
                       r"the fit was prepared from: the cell means of \d+ records"):
        synthesize(fit, gdf.assign(z=edit(gdf["z"])), m=1, seed=0)


def test_a_partitioned_order_of_the_sums_is_not_a_change(regular_data):
    gdf, _, counts = regular_data
    fit = stub_fit(counts, random_lambda(counts, chains=1, draws=2))
    rounding = gdf["z"] * (1 + 4e-16)  # a sum in another order differs by a few ulps
    assert not rounding.equals(gdf["z"])
    (same,) = synthesize(fit, gdf, m=1, seed=0)
    (rounded,) = synthesize(fit, gdf.assign(z=rounding), m=1, seed=0)  # not refused
    assert rounded.index.equals(same.index) and list(rounded.columns) == list(same.columns)
    assert np.isfinite(rounded["z"]).all() and not np.isin(rounded["z"], rounding).any()


def test_seeds_reproduce_and_differ(regular_data):
    gdf, _, counts = regular_data
    fit = stub_fit(counts, random_lambda(counts, chains=2, draws=3))
    a = synthesize(fit, gdf, m=2, seed=10)
    b = synthesize(fit, gdf, m=2, seed=10)
    c = synthesize(fit, gdf, m=2, seed=11)
    for ra, rb, rc in zip(a, b, c, strict=True):
        pd.testing.assert_frame_equal(pd.DataFrame(ra), pd.DataFrame(rb))
        assert not ra.geometry.geom_equals_exact(rc.geometry, 0).all()
        assert not np.array_equal(ra["z"], rc["z"])
    assert not a[0].geometry.geom_equals_exact(a[1].geometry, 0).all()


def test_weights_move_points_within_cells_not_between(tmp_path, regular_data):
    gdf, grid, counts = regular_data
    values = np.zeros((9, 12))
    values[1::3, 1::3] = 1.0  # the centre pixel of each 30 m cell (10 m pixels)
    path = write_raster(tmp_path / "w.tif", values, from_origin(0, 90, 10, 10))
    fit = stub_fit(counts, random_lambda(counts, chains=1, draws=2))
    (plain,) = synthesize(fit, gdf, m=1, seed=3)
    (weighted,) = synthesize(fit, gdf, m=1, seed=3, weights=read_weights(path, grid))
    np.testing.assert_array_equal(cells_of(grid, plain), cells_of(grid, weighted))
    assert weighted.attrs["geosynth"]["weighted"] is True
    xy = shapely.get_coordinates(weighted.geometry.array)
    assert ((xy % 30 >= 10) & (xy % 30 < 20)).all()


def test_cells_without_weight_are_warned_about_once_for_all_the_releases(tmp_path,
                                                                          regular_data):
    # One warning a release said the same cells m times, each with another count of points.
    gdf, grid, counts = regular_data
    values = np.ones((9, 12))
    values[:, :3] = 0.0  # the western column of 30 m cells has no weight
    path = write_raster(tmp_path / "w.tif", values, from_origin(0, 90, 10, 10))
    lam = np.ones((1, 4, grid.n_cells, counts.n_combos))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        synthesize(stub_fit(counts, lam), gdf, m=4, seed=3, weights=read_weights(path, grid))
    notes = [str(w.message) for w in caught if "no pixel of positive weight" in str(w.message)]
    assert len(notes) == 1
    assert notes[0].startswith(f"{grid.shape[0]} cell(s) are covered by no pixel of positive "
                               "weight")
    assert notes[0].endswith("(in releases[0], the first of the 4 of the 4 releases that place "
                             "points in cells without weight; the others' cells and counts may "
                             "differ)")
    assert caught[0].filename == __file__


def test_the_unweighted_cells_warning_points_at_the_caller_of_the_shortcut(tmp_path,
                                                                             regular_data):
    # geosynth.synthesize reaches the release code through geosynth._shortcuts: a fixed
    # stacklevel pointed at the shortcut's own line, not at the analyst's.
    import geosynth

    gdf, grid, counts = regular_data
    values = np.ones((9, 12))
    values[:, :3] = 0.0
    path = write_raster(tmp_path / "w.tif", values, from_origin(0, 90, 10, 10))
    lam = np.ones((1, 2, grid.n_cells, counts.n_combos))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        geosynth.synthesize(stub_fit(counts, lam), gdf, m=2, seed=3, weights=path)
    said = [w for w in caught if "no pixel of positive weight" in str(w.message)]
    assert len(said) == 1 and said[0].filename == __file__


def test_one_release_gets_its_note_as_it_is():
    from geosynth.synth.placement import warn_of_unweighted

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_of_unweighted(["3 cells"])
        warn_of_unweighted([None, None])
        warn_of_unweighted([None, "2 cells", "5 cells"])
    assert [str(w.message) for w in caught] == [
        "3 cells", "2 cells (in releases[1], the first of the 2 of the 3 releases that place "
        "points in cells without weight; the others' cells and counts may differ)"]


# ---------------------------------------------------------------------- continuous Z (§2.2.2)
def test_continuous_back_transform_uses_the_sd(regular_data):
    gdf, grid, counts = regular_data
    # Every draw puts all mass of every combination in cell 5, which holds records of all.
    lam = np.zeros((1, 2, grid.n_cells, counts.n_combos))
    lam[..., 5, :] = 1.0
    fit = stub_fit(counts, lam)
    releases = synthesize(fit, gdf, m=2, seed=12)
    z = np.concatenate([r["z"].to_numpy() for r in releases])
    combo = np.tile(counts.record_combo, 2)
    noise = synthesis_sd(counts)
    for b in range(counts.n_combos):
        sd, mean = counts.zbar_sd[b], counts.zbar_mean[b]
        raw_cell_mean = counts.zbar[5, b] * sd + mean
        members = gdf.loc[(counts.record_cell == 5) & (counts.record_combo == b), "z"]
        assert raw_cell_mean == pytest.approx(members.mean())
        target = stats.norm(raw_cell_mean, noise[b])
        assert stats.kstest(z[combo == b], target.cdf).pvalue > ALPHA
        # Eq. 2.27 as printed (× variance) is a different distribution, and the test sees it.
        misprint = stats.norm(counts.zbar[5, b] * sd**2 + mean, sd**2)
        assert stats.kstest(z[combo == b], misprint.cdf).pvalue < ALPHA


def line_counts(zbar_cells, n_cells=5):
    """1 x ``n_cells`` lattice; combination (a=0) has records in ``zbar_cells`` with given
    mean z."""
    grid = Grid.regular((0, 0, 10 * n_cells, 10), shape=(1, n_cells), crs=CRS)
    rows = []
    for cell, z in zbar_cells.items():
        for offset in (-1.0, 0.0, 1.0):  # MIN_RECORDS_FOR_VALUES records: the mean is kept
            rows.append({"a": 0, "z": z + offset, "x": 10 * cell + 5, "y": 5})
    frame = pd.DataFrame(rows)
    gdf = gpd.GeoDataFrame(
        frame[["a", "z"]], geometry=gpd.points_from_xy(frame.x, frame.y), crs=CRS
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)  # single-level attribute
        counts = prepare(gdf, grid, attributes=["a"], continuous="z")
    return gdf, grid, counts


def test_neighbour_fallback_exact():
    # Records in cells 0, 1 and 4 with cell means 10, 20, 60 (raw mean 30, sd 26.46).
    _, _, counts = line_counts({0: 10.0, 1: 20.0, 4: 60.0})
    z = counts.zbar[:, 0]
    filled = synthetic_zbar(counts)[:, 0]
    assert filled[[0, 1, 4]] == pytest.approx(z[[0, 1, 4]])
    assert filled[2] == pytest.approx(z[1])  # neighbours 1 (records) and 3 (none)
    assert filled[3] == pytest.approx(z[4])  # neighbours 2 (none) and 4 (records)
    assert filled[2] != pytest.approx(0.0) and filled[3] != pytest.approx(0.0)


def test_cells_of_one_or_two_records_take_their_neighbours_mean():
    # Cell 2 holds one record of 95 between cells of 3 records (means 10 and 20): its own mean
    # would centre every synthetic value drawn into it, so it takes its neighbours' (15).
    _, _, counts = line_counts({0: 10.0, 1: 20.0, 3: 10.0})
    gdf, grid, _ = line_counts({0: 10.0, 1: 20.0, 3: 10.0})
    lone = gpd.GeoDataFrame({"a": [0], "z": [95.0]}, geometry=gpd.points_from_xy([25], [5]),
                            crs=CRS)
    gdf = gpd.GeoDataFrame(pd.concat([gdf, lone], ignore_index=True), crs=CRS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        counts = prepare(gdf, grid, attributes=["a"], continuous="z")
    assert counts.counts[2, 0] == 1 < MIN_RECORDS_FOR_VALUES
    _, mean, sd = counts.covariate("z")
    raw = synthetic_zbar(counts)[:, 0] * sd[0] + mean[0]
    assert raw[2] == pytest.approx((20.0 + 10.0) / 2)  # neighbours 1 and 3, not 95
    assert raw[1] == pytest.approx(20.0) and raw[3] == pytest.approx(10.0)
    assert raw[4] == pytest.approx(10.0)  # an empty cell: its neighbour 3, as before


def test_a_lone_record_value_is_not_recovered_by_averaging_releases():
    # The attack: average the synthetic values drawn into the lone record's cell over many
    # releases. They centred on its own 95; now on the neighbours' mean, far below.
    gdf, grid, _ = line_counts({0: 10.0, 1: 20.0, 3: 10.0})
    lone = gpd.GeoDataFrame({"a": [0], "z": [95.0]}, geometry=gpd.points_from_xy([25], [5]),
                            crs=CRS)
    gdf = gpd.GeoDataFrame(pd.concat([gdf] * 40 + [lone], ignore_index=True), crs=CRS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        counts = prepare(gdf, grid, attributes=["a"], continuous="z")
    fit = stub_fit(counts, np.ones((1, 20, 5, 1)))  # every cell equally likely
    releases = synthesize(fit, gdf, m=20, seed=4)
    in_cell = np.concatenate([r.loc[grid.locate(r.geometry) == 2, "z"].to_numpy()
                              for r in releases])
    noise = synthesis_sd(counts)[0]
    assert in_cell.size > 1000
    # the centre is 15 (neighbours' mean); 95 lies many standard errors away
    assert abs(in_cell.mean() - 15.0) < 4 * noise / np.sqrt(in_cell.size)


def test_combination_mean_fallback_exact():
    _, _, counts = line_counts({0: 10.0, 1: 40.0, 2: 25.0}, n_cells=7)
    filled = synthetic_zbar(counts)[:, 0]
    assert filled[3] == pytest.approx(counts.zbar[2, 0])
    # no neighbour with records: the mean of the kept cells (standardised: 0)
    assert filled[5] == pytest.approx(0.0, abs=1e-12) and filled[6] == filled[5]


def lone_value_data(lone):
    """1 x 7 lattice. a=0: three records in each of cells 0 (9, 10, 11), 1 (19, 20, 21) and
    2 (29, 30, 31), and a lone record of value ``lone`` in cell 6; a=1: three records in each
    of cells 3 (4, 5, 6), 4 (6, 7, 8) and 5 (8, 9, 10)."""
    grid = Grid.regular((0, 0, 70, 10), shape=(1, 7), crs=CRS)
    rows = [(0, mean + d, cell) for cell, mean in ((0, 10.0), (1, 20.0), (2, 30.0))
            for d in (-1, 0, 1)]
    rows += [(0, lone, 6)] + [(1, mean + d, cell) for cell, mean in ((3, 5.0), (4, 7.0),
                                                                     (5, 9.0))
                              for d in (-1, 0, 1)]
    frame = pd.DataFrame(rows, columns=["a", "z", "cell"])
    gdf = gpd.GeoDataFrame(frame[["a", "z"]], crs=CRS,
                           geometry=gpd.points_from_xy(10 * frame.cell + 5, np.full(len(rows), 5)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)  # single-level attribute
        counts = prepare(gdf, grid, attributes=["a"], continuous="z")
    return gdf, grid, counts


def test_no_kept_neighbour_takes_the_mean_of_the_kept_cells():
    # Cells 4 to 6 of a=0 have no neighbour of >= 3 records. They took the combination mean
    # over all cells with records, (10 + 20 + 30 + lone) / 4, so lone = 4 * centre - 60: the
    # mean of the releases' values there published the lone record. The kept cells' mean is
    # 20; cell 3 takes its neighbour cell 2's 30.
    for lone in (95.0, 500.0):
        _, _, counts = lone_value_data(lone)
        _, mean, sd = counts.covariate("z")
        raw = synthetic_zbar(counts)[:, 0] * sd[0] + mean[0]
        np.testing.assert_allclose(raw, [10.0, 20.0, 30.0, 30.0, 20.0, 20.0, 20.0],
                                   rtol=1e-12)


def test_synthesis_sd_ignores_cells_of_one_or_two_records():
    # Kept cells only: a=0 has means 10, 20, 30 (ν = 2, Σ squares 200), a=1 means 5, 7, 9
    # (ν = 2, Σ squares 8); pooled s0² = 208 / 4 = 52. The lone record's cell weighed in, so
    # the SD estimated from the releases gave its distance from the other cells' means.
    for lone in (95.0, 500.0):
        _, _, counts = lone_value_data(lone)
        expected = np.sqrt([(200.0 + 4 * 52.0) / 6, (8.0 + 4 * 52.0) / 6])
        np.testing.assert_allclose(synthesis_sd(counts), expected, rtol=1e-12)


def test_a_lone_record_value_does_not_change_the_releases():
    # The releases' values are a function of the cells of >= 3 records only: changing the lone
    # record's value from 95 to 500 changes no synthetic value (beyond rounding). The same
    # generators are given to both (synthesize keys its streams by the records, lone included).
    releases = []
    for lone in (95.0, 500.0):
        gdf, _, counts = lone_value_data(lone)
        maker = ReleaseMaker.of(stub_fit(counts, np.ones((1, 10, 7, 2))), gdf)
        releases.append([maker.release(k, k, np.random.default_rng([3, k]))[0]
                         for k in range(10)])
    for a, b in zip(*releases, strict=True):
        assert a.geometry.geom_equals_exact(b.geometry, 0).all()
        np.testing.assert_allclose(a["z"], b["z"], rtol=1e-9)


@pytest.mark.parametrize(
    ("cell_means", "cell", "expected", "alternative"),
    [
        ({0: 10.0, 1: 20.0, 4: 60.0}, 3, 60.0, 30.0),  # neighbours 2 (none) and 4
        ({0: 10.0, 1: 20.0, 4: 60.0}, 2, 20.0, 30.0),  # neighbours 1 and 3 (none)
        ({0: 10.0, 1: 40.0, 2: 25.0}, 6, 25.0, 40.0),  # no neighbour with records: the
        # mean of the kept cells
    ],
)
def test_fallbacks_in_releases(cell_means, cell, expected, alternative):
    gdf, grid, _ = line_counts(cell_means, n_cells=7)
    gdf = gpd.GeoDataFrame(pd.concat([gdf] * 150, ignore_index=True), geometry="geometry", crs=CRS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        counts = prepare(gdf, grid, attributes=["a"], continuous="z")
    lam = np.zeros((1, 1, grid.n_cells, 1))
    lam[..., cell, 0] = 1.0
    (release,) = synthesize(stub_fit(counts, lam), gdf, m=1, seed=cell)
    assert (cells_of(grid, release) == cell).all()
    assert not counts.zbar_mask[cell, 0]
    sd = counts.zbar_sd[0]
    assert stats.kstest(release["z"], stats.norm(expected, sd).cdf).pvalue > ALPHA
    assert stats.kstest(release["z"], stats.norm(alternative, sd).cdf).pvalue < ALPHA


def combination_counts(cell_means, offsets=(-1.0, 0.0, 1.0)):
    """1 x 5 lattice; ``cell_means[a]`` maps cells to the mean z of combination ``a`` there.

    Each cell holds one record of the combination per offset, at its mean + offset (by
    default MIN_RECORDS_FOR_VALUES records, so the cell's mean is used); ``offsets`` may map
    combinations to their own offsets.
    """
    grid = Grid.regular((0, 0, 50, 10), shape=(1, 5), crs=CRS)
    per_combination = offsets if isinstance(offsets, dict) else dict.fromkeys(cell_means, offsets)
    rows = [{"a": a, "z": z + offset, "x": 10 * cell + 5, "y": 5}
            for a, cells in cell_means.items() for cell, z in cells.items()
            for offset in per_combination[a]]
    frame = pd.DataFrame(rows)
    gdf = gpd.GeoDataFrame(frame[["a", "z"]], geometry=gpd.points_from_xy(frame.x, frame.y),
                           crs=CRS)
    return gdf, prepare(gdf, grid, attributes=["a"], continuous="z")


def test_synthesis_sd_moderates_each_combination_towards_the_pooled_sd():
    # a=0: cells 0, 1, 4 with means 10, 20, 60: ν = 2, sd² = 700 (Σ squares 1,400).
    # a=1: cell 2 alone (pooled, ν = 0).  a=2: cells 0, 3, 1 with means 0, 2, 4: ν = 2,
    # sd² = 4 (Σ squares 8).
    _, counts = combination_counts({0: {0: 10.0, 1: 20.0, 4: 60.0}, 1: {2: 1e6},
                                    2: {0: 0.0, 3: 2.0, 1: 4.0}})
    assert SYNTHESIS_SD_PRIOR_DF == 4.0
    pooled = (1400.0 + 8.0) / (2 + 0 + 2)
    expected = np.sqrt([(1400.0 + 4 * pooled) / 6, pooled, (8.0 + 4 * pooled) / 6])
    np.testing.assert_allclose(synthesis_sd(counts), expected, rtol=1e-12)


def test_a_combination_in_one_cell_does_not_publish_its_value():
    # The leaks this closes: the thesis' SD is undefined for a combination held by one cell,
    # and a stand-in of 1 raw unit published its records' mean (here 1e6, the column's
    # maximum) ± 1; then, with the pooled SD, the releases still centred on that mean (its
    # only cell mean, with none of its combination to judge it against). Now on the kept
    # means of every combination around the synthetic cell: cell 1's 20 (a=0), derived.
    _, counts = combination_counts({0: {0: 10.0, 1: 20.0, 4: 60.0}, 1: {2: 1e6}})
    pooled_sd = np.sqrt(700.0)  # a=0 alone spans several cells
    assert synthesis_sd(counts)[1] == pytest.approx(pooled_sd)
    n = 4000
    cells, combo = np.full(n, 2), np.ones(n, dtype=np.int64)
    z = continuous_values(counts, synthetic_zbar(counts), cells, combo,
                          np.random.default_rng(5))
    assert stats.kstest(z, stats.norm(20.0, pooled_sd).cdf).pvalue > ALPHA
    assert z.max() < 1e3  # 1e6 is 37,000 SDs away


def test_values_of_a_combination_of_two_records_do_not_centre_on_their_mean():
    # a=1 has its two records (499 and 501) in cell 2: every release centred its values on
    # their mean, so the average of the releases' a=1 rows tended to 500 as m grew. Now they
    # centre on the kept means of all combinations around each synthetic cell: cells 0, 1
    # and 4 of a=0 (10, 20, 60), never 500.
    gdf, counts = combination_counts({0: {0: 10.0, 1: 20.0, 4: 60.0}, 1: {2: 500.0}},
                                     offsets={0: (-1.0, 0.0, 1.0), 1: (-1.0, 1.0)})
    fit = stub_fit(counts, random_lambda(counts, chains=1, draws=40))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        releases = synthesize(fit, gdf, m=40, seed=2)
    pooled = [str(w.message) for w in caught if w.category is DataWarning
              and "fewer than 3 cells holding 3 or more" in str(w.message)]
    assert len(pooled) == 1 and "1 attribute combination(s)" in pooled[0] and "'a=1'" in pooled[0]
    # Three kept cell means are too few to judge for an extreme value: said once, and nothing
    # else is a privacy warning.
    privacy = [str(w.message) for w in caught if w.category is PrivacyLeakWarning]
    assert len(privacy) == 1 and "only by the dominance" in privacy[0] and ": 3 cell" in privacy[0]
    # The centre of each cell, derived: the mean of the kept raw means of cell i and its
    # neighbours (a 1 x 5 line), whatever the combination.
    centres = {0: (10 + 20) / 2, 1: (10 + 20) / 2, 2: 20.0, 3: 60.0, 4: 60.0}
    noise = synthesis_sd(counts)[1]
    for release in releases[:10]:
        rows = release.loc[release["a"] == 1]
        cells = cells_of(counts.grid, rows)
        expected = np.array([centres[c] for c in cells])
        standardised = (rows["z"].to_numpy() - expected) / noise
        assert np.abs(standardised).max() < 6  # 500 would be ≥ 17 noise SDs away
    everything = np.concatenate([r.loc[r["a"] == 1, "z"].to_numpy() for r in releases])
    assert abs(everything.mean() - 500.0) > 400
    plenty, counts = combination_counts({0: {0: 10.0, 1: 20.0, 4: 30.0},
                                         1: {2: 5.0, 3: 7.0, 1: 9.0}})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # Six cell means are too few to judge for an extreme value (said, and not the point).
        warnings.filterwarnings("ignore", "the cell means of .* only by the dominance",
                                PrivacyLeakWarning)
        synthesize(stub_fit(counts, random_lambda(counts, chains=1, draws=4)), plenty, m=2,
                   seed=2)


def test_a_combination_spread_one_record_to_a_cell_does_not_publish_its_mean():
    # The attack: a=1 has three records, 42.46, 42.50 and a planted 98,765.43, each alone in
    # its cell. Its centre was its own mean (the thesis' 0): 3 × centre − 2 × typical value
    # gave back 98,755 from one release. Its values now centre on the other combination's
    # kept means around each cell, which do not depend on a=1's records.
    gdf, counts = combination_counts(
        {0: {0: 40.0, 1: 45.0, 2: 41.0, 3: 44.0, 4: 42.0}, 1: {0: 0.0, 2: 0.0, 4: 0.0}},
        offsets={0: (-1.0, 0.0, 1.0), 1: (0.0,)})
    planted = gdf.index[gdf["a"] == 1]
    gdf.loc[planted, "z"] = [42.46, 42.50, 98_765.43]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        counts = prepare(gdf, counts.grid, attributes=["a"], continuous="z")
    assert not kept_pairs(counts)[:, 1].any() and kept_pairs(counts)[:, 0].all()
    _, mean, sd = counts.covariate("z")
    raw = synthetic_zbar(counts)[:, 1] * sd[1] + mean[1]
    kept_means = np.array([40.0, 45.0, 41.0, 44.0, 42.0])
    expected = [kept_means[max(i - 1, 0):i + 2].mean() for i in range(5)]
    np.testing.assert_allclose(raw, expected, rtol=1e-12)
    fit = stub_fit(counts, random_lambda(counts, chains=1, draws=20))
    with pytest.warns(DataWarning, match=r"'a=1'\): their synthetic 'z' follow the cell means"):
        releases = synthesize(fit, gdf, m=20, seed=7)
    values = np.concatenate([r.loc[r["a"] == 1, "z"].to_numpy() for r in releases])
    assert values.max() < 1_000  # the planted value's mean (32,950) was each release's centre


@pytest.fixture
def values_unfenced(monkeypatch):
    """Prepare without clipping values to their combination's fences (geosynth.data.value_fences).

    The fences bound what one record moves its cell mean; the rules on cell means
    (outlying_means) are a second line, tested alone by the attacks they were built against.
    """
    monkeypatch.setattr(geosynth_data, "FENCED_MIN_RECORDS", sys.maxsize)


def planted_line(values_per_cell, n_cells=25, seed=0):
    """1 x ``n_cells`` lattice, one combination; ``values_per_cell`` values in U(20, 89) per
    cell (``values_per_cell`` may map cells to lists of extra values)."""
    rng = np.random.default_rng(seed)
    grid = Grid.regular((0, 0, 10 * n_cells, 10), shape=(1, n_cells), crs=CRS)
    rows = [(cell, z) for cell in range(n_cells) for z in rng.uniform(20, 89, values_per_cell)]
    return grid, rows


def line_frame(grid, rows):
    frame = pd.DataFrame(rows, columns=["cell", "z"]).assign(a=0)
    gdf = gpd.GeoDataFrame(frame[["a", "z"]], crs=CRS,
                           geometry=gpd.points_from_xy(10 * frame.cell + 5, np.full(len(rows), 5)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)  # single-level attribute
        return gdf, prepare(gdf, grid, attributes=["a"], continuous="z")


def test_a_planted_extreme_gives_back_no_more_than_its_combinations_fence():
    # The README's attack on values clipped to their combination's far-out fences: 12 values
    # in U(20, 89) per cell and a planted 98,765 in cell 12. Its mean is now that of the
    # values with 98,765 clipped to the fence (Q3 + 3 IQR of the 301 values, derived here),
    # so it is kept, and an attacker who knows cell 12's other 12 values solves the releases'
    # average for the fence, not for the planted value.
    grid, rows = planted_line(12)
    gdf, counts = line_frame(grid, rows + [(12, 98_765.0)])
    values = gdf["z"].to_numpy()
    q1, q3 = np.quantile(values, [0.25, 0.75])
    fence = q3 + 3.0 * (q3 - q1)
    assert fence < 300
    ordered, r = np.sort(values), 30  # the 10 % and 90 % values' fence lies inside Tukey's
    z = stats.norm.ppf(1 - r / 300)
    width = (stats.norm.ppf(0.75) * 7 - z) / (2 * z) * (ordered[300 - r] - ordered[r])
    assert ordered[300 - r] + width < fence
    raw = counts.zbar[:, 0] * counts.zbar_sd[0] + counts.zbar_mean[0]
    others = values[:-1][np.array([cell for cell, _ in rows]) == 12]
    assert others.size == 12
    assert 13 * raw[12] - others.sum() == pytest.approx(fence, rel=1e-9)
    assert kept_pairs(counts)[12, 0] and not outlying_means(counts).any()
    fit = stub_fit(counts, np.ones((1, 5, grid.n_cells, 1)))
    releases = synthesize(fit, gdf, m=5, seed=8)
    in_cell = np.concatenate([r.loc[grid.locate(r.geometry) == 12, "z"].to_numpy()
                              for r in releases])
    noise = synthesis_sd(counts)[0]
    assert in_cell.size > 20
    assert abs(in_cell.mean() - raw[12]) < 4 * noise / np.sqrt(in_cell.size)
    assert 13 * in_cell.mean() - others.sum() < 2 * fence  # not 98,765


@pytest.mark.usefixtures("values_unfenced")
def test_a_planted_extreme_does_not_show_as_its_cell_mean():
    # The attack of the README: 12 values below 90 and a planted 98,765 in cell 12. The
    # synthetic values drawn into cell 12 centred on its mean (7,649 here): averaged over the
    # releases, 13 x that - 12 x a typical value gave the planted value back. Now that mean is
    # withheld and cell 12 takes its neighbours' kept means, 11 and 13.
    grid, rows = planted_line(12)
    gdf, counts = line_frame(grid, rows + [(12, 98_765.0)])
    raw = counts.zbar[:, 0] * counts.zbar_sd[0] + counts.zbar_mean[0]
    assert raw[12] > 7_000
    assert np.flatnonzero(outlying_means(counts)[:, 0]).tolist() == [12]
    assert not kept_pairs(counts)[12, 0] and kept_pairs(counts)[[11, 13], 0].all()
    fit = stub_fit(counts, np.ones((1, 5, grid.n_cells, 1)))
    with pytest.warns(DataWarning, match=r"1 cell mean\(s\) of 'z' lie beyond the far-out") as got:
        releases = synthesize(fit, gdf, m=5, seed=8)
    assert all(w.filename == __file__ for w in got)  # the caller's line
    in_cell = np.concatenate([r.loc[grid.locate(r.geometry) == 12, "z"].to_numpy()
                              for r in releases])
    noise = synthesis_sd(counts)[0]
    centre = raw[[11, 13]].mean()
    assert in_cell.size > 20
    assert abs(in_cell.mean() - centre) < 4 * noise / np.sqrt(in_cell.size)
    assert in_cell.max() < 1_000


def test_a_far_mean_that_many_records_share_is_kept():
    # A home of 200 residents of age ~500 among cells of 12 values in 20-89: its mean lay
    # beyond the fences, was withheld as "an extreme value", and its synthetic values centred
    # on its neighbours' (45.9 for a real 85 in a probe): 96 % of the records moved. Without
    # its two largest values its mean is the same: many records share it.
    grid, rows = planted_line(12)
    rng = np.random.default_rng(1)
    shared = [(12, z) for z in rng.normal(500.0, 20.0, 200)]
    gdf, counts = line_frame(grid, rows + shared)
    raw = counts.zbar[:, 0] * counts.zbar_sd[0] + counts.zbar_mean[0]
    assert raw[12] > 400
    assert not outlying_means(counts).any() and kept_pairs(counts)[12, 0]
    fit = stub_fit(counts, np.ones((1, 2, grid.n_cells, 1)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)  # nothing withheld, nothing said
        release = synthesize(fit, gdf, m=1, seed=2)[0]
    in_cell = release.loc[grid.locate(release.geometry) == 12, "z"].to_numpy()
    noise = synthesis_sd(counts)[0]
    assert abs(in_cell.mean() - raw[12]) < 4 * noise / np.sqrt(in_cell.size)
    # Counts built without the records' extremes cannot tell: the mean is withheld, as before.
    assert outlying_means(dataclasses.replace(counts, z_extremes=None))[12, 0]


@pytest.mark.usefixtures("values_unfenced")
@pytest.mark.parametrize("planted", [[98_765.0], [98_765.0, 97_000.0], [-2_000.0]])
def test_one_or_two_extremes_among_a_shared_far_mean_are_withheld(planted):
    # Kept for what its records share, the mean would publish a planted value with it: 213 x
    # the cell mean - 212 x the shared level. Without its two largest values (or, for a value
    # on the other side, its two smallest: -2,000 left the mean beyond the high fence, and
    # was published) the mean moves by more than the spread of the means: withheld.
    grid, rows = planted_line(12)
    rng = np.random.default_rng(1)
    shared = [(12, z) for z in rng.normal(500.0, 20.0, 200)]
    _, counts = line_frame(grid, rows + shared + [(12, v) for v in planted])
    assert np.flatnonzero(outlying_means(counts)[:, 0]).tolist() == [12]


@pytest.mark.usefixtures("values_unfenced")
def test_an_extreme_is_judged_among_its_own_combinations_means_too():
    # Income near 3,000 in group "lo" and 30,000 in "hi": the fences of all the means spanned
    # the gap, and a planted 300,000 among 14 "lo" records (cell mean 24,290) passed them, so
    # the releases gave it back within 1 %. Its combination's own means (near 3,000) refuse it.
    rng = np.random.default_rng(9)
    n_cells = 30
    grid = Grid.regular((0, 0, 10 * n_cells, 10), shape=(1, n_cells), crs=CRS)
    cells = np.repeat(np.arange(n_cells), 14)
    frame = pd.concat([
        pd.DataFrame({"cell": cells, "grp": "lo", "z": rng.normal(3_000, 400, cells.size)}),
        pd.DataFrame({"cell": cells, "grp": "hi", "z": rng.normal(30_000, 4_000, cells.size)}),
    ], ignore_index=True)
    frame.loc[0, "z"] = 300_000.0  # a "lo" record of cell 0
    gdf = gpd.GeoDataFrame(frame[["grp", "z"]], crs=CRS, geometry=gpd.points_from_xy(
        10 * frame.cell + 5, np.full(len(frame), 5.0)))
    counts = prepare(gdf, grid, attributes=["grp"], continuous="z")
    lo = counts.combos["grp"].tolist().index("lo")
    raw = counts.zbar * counts.zbar_sd + counts.zbar_mean  # (G, B) cell means
    assert 20_000 < raw[0, lo] < 30_000
    others = np.delete(raw.ravel(), np.ravel_multi_index((0, lo), raw.shape))
    q1, q3 = np.quantile(others, [0.25, 0.75])  # the means span 3,000-30,000
    assert raw[0, lo] < q3 + OUTLYING_FENCE * (q3 - q1)  # inside the pooled fences
    assert np.argwhere(outlying_means(counts)).tolist() == [[0, lo]]


def test_a_small_combination_is_judged_on_its_own_scale():
    """Students' incomes near 800 in 9 cells, 12 surgeons near 15,000 in 2: judged against
    every combination's extremes, the surgeons' ordinary means were withheld in 174 data sets
    of 200."""
    rng = np.random.default_rng(2)
    grid = Grid.regular((0, 0, 90, 10), shape=(1, 9), crs=CRS)
    students = pd.DataFrame({"cell": np.repeat(np.arange(9), 34), "grp": "student"})
    students["z"] = rng.normal(800, 250, len(students))
    surgeons = pd.DataFrame({"cell": np.repeat([2, 6], 6), "grp": "surgeon"})
    surgeons["z"] = rng.normal(15_000, 4_000, len(surgeons))
    frame = pd.concat([students, surgeons], ignore_index=True)
    gdf = gpd.GeoDataFrame(frame[["grp", "z"]], crs=CRS, geometry=gpd.points_from_xy(
        10 * frame.cell + 5, np.full(len(frame), 5.0)))
    counts = prepare(gdf, grid, attributes=["grp"], continuous="z")
    assert not outlying_means(counts).any()


def test_a_combination_pooled_for_one_covariate_is_named_for_that_one():
    # Four "rare" records in each of three cells, one in each with an extreme z2: its z2 means
    # were withheld, and the warning said the combination had no cell of 3 or more records
    # and that both z1 and z2 lost their association with the attributes (z1 kept its means).
    rng = np.random.default_rng(10)
    n_cells = 30
    grid = Grid.regular((0, 0, 10 * n_cells, 10), shape=(1, n_cells), crs=CRS)
    cells = np.repeat(np.arange(n_cells), 6)
    frame = pd.DataFrame({"cell": np.r_[cells, [5] * 4, [12] * 4, [20] * 4],
                          "grp": ["common"] * cells.size + ["rare"] * 12,
                          "z1": rng.normal(12, 1, cells.size + 12),
                          "z2": rng.normal(1e5, 1e4, cells.size + 12)})
    frame.loc[frame.index[[-9, -5, -1]], "z2"] = 2e7
    gdf = gpd.GeoDataFrame(frame[["grp", "z1", "z2"]], crs=CRS, geometry=gpd.points_from_xy(
        10 * frame.cell + 5, np.full(len(frame), 5.0)))
    counts = prepare(gdf, grid, attributes=["grp"], continuous=["z1", "z2"])
    rare = counts.combos["grp"].tolist().index("rare")
    assert kept_pairs(counts, "z1")[[5, 12, 20], rare].all()
    assert not kept_pairs(counts, "z2")[[5, 12, 20], rare].any()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_pooled_combinations(counts)
    said = [str(w.message) for w in caught]
    assert len(said) == 1 and said[0].startswith(
        "the synthetic 'z2' of 1 attribute combination(s) ('grp=rare') follow the cell means")
    assert "'z1'" not in said[0] and "fewer than 3 cells holding" not in said[0]


def test_a_combinations_only_cell_mean_is_not_published():
    """A rare combination's three records in one cell, one of them 9,870,000 among incomes
    near 40,000: no other mean of its combination to judge it by, nor enough means for
    fences, so it went unjudged; five releases' rare values averaged 3,317,615, and 3 × that
    less twice a typical income gave 9,871,845 back, with a warning that said it was judged."""
    rng = np.random.default_rng(0)
    grid = Grid.regular((0, 0, 90, 10), shape=(1, 9), crs=CRS)
    frame = pd.DataFrame({"cell": np.r_[np.repeat(np.arange(9), 8), [4, 4, 4]],
                          "grp": ["common"] * 72 + ["rare"] * 3})
    frame["z"] = np.r_[rng.normal(40_000, 4_000, 72), [40_000.0, 41_000.0, 9_870_000.0]]
    gdf = gpd.GeoDataFrame(frame[["grp", "z"]], crs=CRS, geometry=gpd.points_from_xy(
        10 * frame.cell + 5, np.full(len(frame), 5.0)))
    counts = prepare(gdf, grid, attributes=["grp"], continuous="z")
    rare = counts.combos["grp"].tolist().index("rare")
    assert counts.counts[4, rare] == 3 and not outlying_means(counts)[4, rare]  # unjudged
    assert not kept_pairs(counts)[:, rare].any() and kept_pairs(counts)[:, 1 - rare].all()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        releases = synthesize(stub_fit(counts, random_lambda(counts, 1, 20, 1)), gdf, m=5,
                              seed=7)
    assert any("1 attribute combination(s) have fewer than 3 cells holding 3 or more of "
               "their records ('grp=rare')" in str(w.message) for w in caught)
    values = np.concatenate([r.loc[r.grp == "rare", "z"].to_numpy() for r in releases])
    # centred on the pooled means of the common incomes around, not the rare cell's 3,317,000
    assert values.size and abs(values.mean() - 40_000) < 5 * 4_000


def income_frame(rare, seed=0, n_cells=30):
    """Incomes near 30,000 ('hi', 10 a cell) and 3,000 ('lo', 5) in every cell of a line,
    and ``rare``: {cell: its 'rare' records' values}."""
    rng = np.random.default_rng(seed)
    rows = [(c, "hi", v) for c in range(n_cells) for v in rng.normal(30_000, 3_000, 10)]
    rows += [(c, "lo", v) for c in range(n_cells) for v in rng.normal(3_000, 300, 5)]
    rows += [(c, "rare", v) for c, values in rare.items() for v in values]
    frame = pd.DataFrame(rows, columns=["cell", "grp", "z"])
    grid = Grid.regular((0, 0, 10 * n_cells, 10), shape=(1, n_cells), crs=CRS)
    gdf = gpd.GeoDataFrame(frame[["grp", "z"]], crs=CRS, geometry=gpd.points_from_xy(
        10 * frame.cell + 5, np.full(len(frame), 5.0)))
    counts = prepare(gdf, grid, attributes=["grp"], continuous="z")
    return gdf, counts, counts.combos["grp"].tolist().index("rare")


def test_two_cells_that_each_hold_an_extreme_do_not_vouch_for_each_other():
    """A rare combination's two cells of three incomes near 3,000, one with 250,000 and the
    other 180,000: each cell's extremes were judged against the other's, neither was
    withheld, the fences of all 92 means (3,000 to 30,000) held both, and 20 releases gave
    back 255,976 and 173,445 with no warning."""
    gdf, counts, rare = income_frame({4: [3_000.0, 3_100.0, 250_000.0],
                                      9: [2_900.0, 3_050.0, 180_000.0]})
    assert np.flatnonzero(outlying_means(counts)[:, rare]).tolist() == [4, 9]
    assert not kept_pairs(counts)[:, rare].any()
    releases = synthesize(stub_fit(counts, random_lambda(counts, 1, 20, 1)), gdf, m=20,
                          seed=3)
    values = np.concatenate([r.loc[r.grp == "rare", "z"].to_numpy() for r in releases])
    assert values.size and values.mean() < 40_000  # the pooled means around, never ~80,000
    # Derived: each cell's two largest values pull its mean (85,367; 61,983) from its
    # level without them (3,000; 2,900) by 1,650 and 1,180 times the levels' spread (50).
    levels = np.array([3_000.0, 2_900.0])
    pulls = np.array([np.mean([3_000, 3_100, 250_000]), np.mean([2_900, 3_050, 180_000])])
    spread = np.mean(np.abs(levels - np.median(levels)))
    assert (pulls - levels > DOMINANCE_RATIO ** 2 * spread).all()


@pytest.mark.usefixtures("values_unfenced")
def test_an_extreme_where_levels_rise_across_space_is_withheld():
    """Incomes rising twentyfold along a line of 30 cells of ten: the levels' spread over the
    whole line hid a value three times the data's largest in the lowest cell, which came back
    within 1 % as ten times its cell's mean less nine times its neighbour's; the levels less
    their neighbours' spread little."""
    rng = np.random.default_rng(0)
    level = 3_000 * 20 ** (np.arange(30) / 29)
    rows = [(c, g, v) for g in ("t", "u") for c in range(30)
            for v in rng.lognormal(np.log(level[c]), 0.5, 10)]
    planted = round(3 * max(v for *_, v in rows), -3)
    rows[0] = (0, "t", planted)
    frame = pd.DataFrame(rows, columns=["cell", "grp", "z"])
    grid = Grid.regular((0, 0, 300, 10), shape=(1, 30), crs=CRS)
    gdf = gpd.GeoDataFrame(frame[["grp", "z"]], crs=CRS, geometry=gpd.points_from_xy(
        10 * frame.cell + 5, np.full(len(frame), 5.0)))
    counts = prepare(gdf, grid, attributes=["grp"], continuous="z")
    t = counts.combos["grp"].tolist().index("t")
    assert np.flatnonzero(outlying_means(counts)[:, t]).tolist() == [0]
    assert kept_pairs(counts)[1:, t].all()  # the rest of the line keeps its means


@pytest.mark.usefixtures("values_unfenced")
def test_a_combination_left_with_too_few_means_is_pooled():
    """One of a rare combination's three cells is withheld (9,870,000 among its incomes): the
    other two would be judged against each other alone (with one of two withheld, the other's
    mean became the centre of every synthetic value of the combination)."""
    _, counts, rare = income_frame({4: [3_000.0, 3_100.0, 9_870_000.0],
                                    9: [2_900.0, 3_050.0, 3_000.0],
                                    14: [3_100.0, 2_950.0, 3_020.0]})
    assert MIN_JUDGED_CELLS == 3
    assert np.flatnonzero(outlying_means(counts)[:, rare]).tolist() == [4]
    assert not kept_pairs(counts)[:, rare].any()
    assert kept_pairs(counts)[:, :rare].all()  # 'hi' and 'lo' keep every cell
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_pooled_combinations(counts)
    assert any("'grp=rare'" in str(w.message) and "fewer than 3 kept" in str(w.message)
               for w in caught)


def test_counts_without_extremes_withhold_the_means_they_cannot_judge():
    # Without z_extremes no pull or dominance is known: the means of a combination judged
    # by them were all kept, and a 9,870,000 among a cell's incomes came back within 0.1 %.
    _, counts, rare = income_frame({4: [3_000.0, 3_100.0, 9_870_000.0],
                                    9: [2_900.0, 3_050.0, 3_000.0]})
    bare = dataclasses.replace(counts, z_extremes=None)
    assert outlying_means(bare)[[4, 9], rare].all() and not kept_pairs(bare)[:, rare].any()


def pulled_by_brute_force(rows, n_cells):
    """Each cell's pull (mean less its mean without its two largest; the mean without its two
    smallest less the mean) beyond 10^(1 + 1/(m - 1)) times the mean absolute deviation of
    the cells' means without them from their median (m cells of 3 or more values), or of
    those means less their neighbours' (cells c - 1 and c + 1 of a line) if smaller."""
    values = pd.DataFrame(rows, columns=["cell", "z"]).groupby("cell")["z"].apply(np.sort)
    values = values[values.map(len) >= 3]
    out = np.zeros(n_cells, dtype=bool)
    ratio = DOMINANCE_RATIO ** (1 + 1 / (len(values) - 1))
    for trim in (lambda v: v[:-2], lambda v: v[2:]):
        level = values.map(lambda v, trim=trim: trim(v).mean())
        pull = (values.map(np.mean) - level).abs()
        spread = np.mean(np.abs(level - np.median(level)))
        local = [level[c] - np.mean([level[n] for n in (c - 1, c + 1) if n in level.index])
                 for c in level.index if c - 1 in level.index or c + 1 in level.index]
        if len(local) >= 3:
            spread = min(spread, np.mean(np.abs(local - np.median(local))))
        out[values.index[pull > ratio * spread]] = True
    return out


@pytest.mark.usefixtures("values_unfenced")
def test_outlying_means_are_those_beyond_the_fences_of_the_other_means():
    # Derived by brute force: each kept mean against np.quantile's quartiles of the others (or
    # their mean absolute deviation from their median where the quartiles coincide), or
    # pulled by its extreme values (pulled_by_brute_force).
    rng = np.random.default_rng(3)
    flagged = zero_iqr = pulled = 0
    for trial in range(6):
        n_cells = MIN_FENCE_MEANS + 1 + 4 * trial
        grid, rows = planted_line(3, n_cells=n_cells, seed=trial)
        if trial % 2:  # ties, and (trial 3, 5) a zero IQR: 80 % of the cells hold 50, 50, 50
            rows = [(c, 50.0 if c < 0.8 * n_cells and trial > 1 else round(z, -1))
                    for c, z in rows]
        rows += [(int(rng.integers(n_cells)), v) for v in rng.lognormal(5, 2, 3)]
        _, counts = line_frame(grid, rows)
        raw = counts.zbar[:, 0] * counts.zbar_sd[0] + counts.zbar_mean[0]
        expected = []
        for i in range(n_cells):
            others = np.delete(raw, i)
            q1, median, q3 = np.quantile(others, [0.25, 0.5, 0.75])
            spread = q3 - q1 if q3 > q1 else np.mean(np.abs(others - median))
            zero_iqr += q3 == q1
            expected.append(not q1 - OUTLYING_FENCE * spread <= raw[i]
                            <= q3 + OUTLYING_FENCE * spread)
        by_pull = pulled_by_brute_force(rows, n_cells)
        assert outlying_means(counts)[:, 0].tolist() == (np.array(expected) | by_pull).tolist()
        flagged += sum(expected)
        pulled += int((by_pull & ~np.array(expected)).sum())
    assert flagged > 0 and zero_iqr > 0 and pulled > 0  # every branch exercised


def test_no_mean_is_withheld_from_a_bulk_without_extremes_or_too_few_means():
    grid, rows = planted_line(5, n_cells=60, seed=4)
    gdf, counts = line_frame(grid, rows)
    assert not outlying_means(counts).any()
    fit = stub_fit(counts, np.ones((1, 2, grid.n_cells, 1)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        synthesize(fit, gdf, m=2, seed=1)
    grid, rows = planted_line(12, n_cells=MIN_FENCE_MEANS)  # too few others for fences
    _, counts = line_frame(grid, rows)
    assert not outlying_means(counts).any()


@pytest.mark.usefixtures("values_unfenced")
@pytest.mark.parametrize("planted", [98_765.0, -5_000.0, 2_000.0])
def test_too_few_means_for_fences_withhold_a_mean_its_extreme_dominates(planted):
    """20 cells of a combination: no fences of its own, and, alone, none at all; a planted
    98,765 among 12 values in U(20, 89) went out through its cell's mean (said only by a
    warning). Its two largest values lie 10 times further beyond the others than usual."""
    grid, rows = planted_line(12, n_cells=MIN_FENCE_MEANS)
    _, counts = line_frame(grid, rows + [(3, planted)])
    assert np.flatnonzero(outlying_means(counts)[:, 0]).tolist() == [3]
    # derived: the excess of cell 3's two largest (smallest) values over twice the others'
    # mean, against the median excess of the 19 other cells
    by_cell = pd.DataFrame(rows + [(3, planted)], columns=["cell", "z"]).groupby("cell")["z"]
    excess = by_cell.apply(lambda z: np.sort(z.to_numpy())[-2:].sum()
                           - 2 * np.sort(z.to_numpy())[:-2].mean())
    if planted < 0:
        excess = by_cell.apply(lambda z: 2 * np.sort(z.to_numpy())[2:].mean()
                               - np.sort(z.to_numpy())[:2].sum())
    assert excess[3] > DOMINANCE_RATIO * excess.drop(3).median()
    assert (excess.drop(3) < DOMINANCE_RATIO * excess.drop(3).median()).all()


@pytest.mark.usefixtures("values_unfenced")
def test_a_small_combination_is_judged_by_dominance_beside_a_large_one():
    """Income near 3,000 in 10 cells ('lo') and 30,000 in 64 ('hi'): the fences of all 74
    means spanned the gap, 'lo' had too few means for its own, and a planted 300,000 among a
    cell's 12 'lo' incomes came back within 3 % from five releases."""
    rng = np.random.default_rng(0)
    grid = Grid.regular((0, 0, 640, 10), shape=(1, 64), crs=CRS)
    hi = pd.DataFrame({"cell": np.repeat(np.arange(64), 20), "grp": "hi"})
    hi["z"] = rng.normal(30_000, 2_000, len(hi))
    lo = pd.DataFrame({"cell": np.repeat(np.arange(10), 12), "grp": "lo"})
    lo["z"] = rng.normal(3_000, 300, len(lo))
    lo.loc[5, "z"] = 300_000.0  # cell 0
    frame = pd.concat([hi, lo], ignore_index=True)
    gdf = gpd.GeoDataFrame(frame[["grp", "z"]], crs=CRS, geometry=gpd.points_from_xy(
        10 * frame.cell + 5, np.full(len(frame), 5.0)))
    counts = prepare(gdf, grid, attributes=["grp"], continuous="z")
    b = counts.combos["grp"].tolist().index("lo")
    raw = counts.zbar * counts.zbar_sd + counts.zbar_mean
    q1, q3 = np.quantile(np.delete(raw[counts.counts >= 3], 0), [0.25, 0.75])
    assert raw[0, b] < q3 + OUTLYING_FENCE * (q3 - q1)  # inside the fences of all means
    assert np.argwhere(outlying_means(counts)).tolist() == [[0, b]]


def test_synthesis_sd_refuses_a_column_with_one_cell_mean():
    _, counts = combination_counts({0: {3: 7.0}})
    with pytest.raises(InputError, match="'z' has one cell mean for every record"):
        synthesis_sd(counts)


def test_synthetic_zbar_needs_a_continuous_variable(regular_data):
    gdf, grid, _ = regular_data
    counts = prepare(gdf, grid, attributes=["a"])
    with pytest.raises(InputError, match="no continuous variable"):
        synthetic_zbar(counts)


# ---------------------------------------------------------------------- validation
def test_fit_must_be_a_paiva_fit(regular_data):
    gdf, _, counts = regular_data
    with pytest.raises(InputError, match=r"fit must be a geosynth.PaivaFit .*got CellCounts, "
                                         r"which lacks noise_scale, n_chains, n_draws, "
                                         r"n_eta_draws, lambda_draw of geosynth.synth."
                                         r"PosteriorDraws; fit one with"):
        synthesize(counts, gdf)


class DrawsOnly:
    """Not a PaivaFit: only what synthesize reads (the PosteriorDraws protocol)."""

    def __init__(self, fit):
        self.counts, self.noise_scale = fit.counts, fit.noise_scale
        self.n_chains, self.n_draws, self.n_eta_draws = fit.n_chains, fit.n_draws, fit.n_eta_draws
        self.lambda_draw = fit.lambda_draw


def test_any_fit_with_the_posterior_draw_protocol_is_synthesized(regular_data):
    gdf, _, counts = regular_data
    fit = stub_fit(counts, random_lambda(counts, chains=2, draws=4, seed=2))
    assert isinstance(fit, PosteriorDraws) and isinstance(DrawsOnly(fit), PosteriorDraws)
    want = synthesize(fit, gdf, m=3, seed=4)
    got = synthesize(DrawsOnly(fit), gdf, m=3, seed=4)
    for a, b in zip(want, got, strict=True):
        pd.testing.assert_frame_equal(a, b)
        assert a.attrs == b.attrs


@pytest.mark.parametrize("options", [{"epsilon": 1.0}, {"levels": {"a": [0, 1]}},
                                     {"epsilon": 1.0, "n_public": 10}])
def test_the_core_refuses_dp_and_points_to_geosynth_dp(regular_data, options):
    gdf, _, counts = regular_data
    fit = stub_fit(counts, random_lambda(counts, chains=1, draws=2))
    for first, frame in ((fit, gdf), (counts, None)):
        with pytest.raises(InputError, match=r"takes no .*geosynth\.dp\.dp_release.*"
                                             r"geosynth\.synthesize\(counts"):
            synthesize(first, frame, m=1, **options)


def test_records_under_repeated_labels_in_another_order_are_said_to_be_matched_by_position(
        regular_data):
    # Every label 0: the same records reversed were "attribute 'a' of gdf differs", with no
    # word of the labels, which is what made the order matter.
    gdf, grid, _ = regular_data
    same = gdf.set_axis([0] * len(gdf))
    counts = prepare(same, grid, attributes=["a", "c"], continuous="z")
    fit = stub_fit(counts, random_lambda(counts, chains=1, draws=2))
    assert len(synthesize(fit, same, m=1, seed=1)[0]) == len(gdf)  # in order: matched
    with pytest.raises(InputError, match=r"differs .*; gdf has duplicate index labels, so its "
                                         r"records are matched by position.*reset_index"):
        synthesize(fit, same.iloc[::-1], m=1)


def test_the_core_refuses_a_noise_aware_fit(regular_data):
    gdf, _, counts = regular_data
    fit = dataclasses.replace(stub_fit(counts, random_lambda(counts, chains=1, draws=2)),
                              noise_scale=1.0)
    with pytest.raises(InputError, match=r"noise-aware fit .*geosynth\.dp\.dp_synthesize"):
        synthesize(fit, gdf, m=1)


def test_the_core_never_loads_geosynth_dp():
    code = ("import sys, geosynth.synth\n"
            "print(sorted(m for m in sys.modules if m.startswith('geosynth.dp')))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True)
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize(("m", "error", "match"), [
    (0, InputError, "m \\(number of releases\\) must be an int >= 1"),
    (-1, InputError, "m \\(number of releases\\) must be an int >= 1"),
    (1.5, TypeError, "m \\(number of releases\\) must be an int, got float"),
    (True, TypeError, "m \\(number of releases\\) must be an int, got bool"),
    ("2", TypeError, "m \\(number of releases\\) must be an int, got str"),
])
def test_m_must_be_a_positive_int(regular_data, m, error, match):
    gdf, _, counts = regular_data
    fit = stub_fit(counts, random_lambda(counts, chains=1, draws=5))
    with pytest.raises(error, match=match):
        synthesize(fit, gdf, m=m)


def test_m_larger_than_the_draws(regular_data):
    gdf, _, counts = regular_data
    fit = stub_fit(counts, random_lambda(counts, chains=1, draws=3))
    with pytest.raises(InputError, match="only 3"):
        synthesize(fit, gdf, m=4)


def test_gdf_must_be_the_prepared_frame(regular_data):
    gdf, _, counts = regular_data
    fit = stub_fit(counts, random_lambda(counts, chains=1, draws=2))
    with pytest.raises(InputError, match="gdf must be a geopandas.GeoDataFrame"):
        synthesize(fit, pd.DataFrame(gdf), m=1)
    with pytest.raises(InputError, match=r"lacks the columns \['z'\]"):
        synthesize(fit, gdf.drop(columns="z"), m=1)
    changed = gdf.copy()
    changed.loc[changed.index[[3, 9]], "a"] = 1 - changed.loc[changed.index[[3, 9]], "a"]
    with pytest.raises(InputError, match=r"attribute 'a' .* for 2 records \(index labels \[3, 9\]"):
        synthesize(fit, changed, m=1)
    moved = gdf.copy()
    moved.loc[0, "geometry"] = Point(119.0, 89.0)
    with pytest.raises(InputError, match=r"1 records of gdf lie in other cells .*\[0\]"):
        synthesize(fit, moved, m=1)
    with pytest.raises(InputError, match=r"1 records of the fit are not in gdf .*\[7\]"):
        synthesize(fit, gdf.drop(index=7), m=1)
    extra = pd.concat([gdf, gdf.iloc[[0]].set_axis([10**6])])
    with pytest.raises(InputError, match=r"1 rows of gdf lie in grid cells .*\[1000000\]"):
        synthesize(fit, extra, m=1)
    duplicated = pd.concat([gdf, gdf.iloc[[0]]])
    with pytest.raises(InputError, match="duplicate index labels"):
        synthesize(fit, duplicated, m=1)
    with pytest.raises(CRSError):
        synthesize(fit, gdf.to_crs("EPSG:32723"), m=1)
    with pytest.raises(CRSError, match="gdf has no CRS while the grid uses"):
        synthesize(fit, gdf.set_crs(None, allow_override=True), m=1)  # a release without CRS


def test_duplicate_labels_are_fine_for_the_same_frame():
    grid = Grid.regular((0, 0, 120, 90), shape=(3, 4), crs=CRS)
    gdf = frame_with_index(make_points(500, seed=9), [0, 1] * 250)
    counts = prepare(gdf, grid, attributes=["a"])
    fit = stub_fit(counts, random_lambda(counts, chains=1, draws=2))
    (release,) = synthesize(fit, gdf, m=1, seed=1)
    assert release.index.equals(gdf.index)


def test_a_missing_gdf_says_to_pass_the_prepared_frame(regular_data):
    """synthesize(fit, m=1) said "build one with geopandas.GeoDataFrame(df, geometry=...)"."""
    _, _, counts = regular_data
    fit = stub_fit(counts, random_lambda(counts, chains=1, draws=2))
    with pytest.raises(InputError, match=r"gdf is missing.*pass the GeoDataFrame given to "
                                         r"prepare\(\)"):
        synthesize(fit, m=1, seed=1)


def test_bad_seed_type(regular_data):
    gdf, _, counts = regular_data
    fit = stub_fit(counts, random_lambda(counts, chains=1, draws=2))
    with pytest.raises(TypeError, match="seed must be"):
        synthesize(fit, gdf, m=1, seed="1")


# ---------------------------------------------------------------------- a real (tiny) fit
def test_tiny_real_fit_end_to_end(make_scenario_counts):
    scenario, grid, counts = make_scenario_counts(n=200, seed=1, shape=(5, 5),
                                                  attributes=["y", "x1"], continuous="z")
    fit = PaivaModel().fit(
        counts, n_iter=200, burn_in=100, thin=1, chains=1, seed=2, progress=False
    )
    assert fit.n_chains * fit.n_draws == 100
    releases = synthesize(fit, scenario.data, m=3, seed=5)
    assert [r.attrs["geosynth"]["posterior_draw"] for r in releases] == [16, 50, 83]
    for release in releases:
        assert (cells_of(grid, release) >= 0).all()
        pd.testing.assert_series_equal(
            release.groupby(["y", "x1"]).size(), scenario.data.groupby(["y", "x1"]).size()
        )
        assert np.isfinite(release["z"]).all()
        public = to_public(release, seed=1)
        assert isinstance(public.index, pd.RangeIndex)


@pytest.mark.parametrize("column", ["a", "z"])
def test_gdf_with_a_fitted_column_twice_is_refused(regular_data, column):
    """A repeated attribute crashed in numpy; a repeated covariate was released twice."""
    gdf, _, counts = regular_data
    fit = stub_fit(counts, random_lambda(counts, chains=1, draws=2))
    twice = pd.concat([gdf, gdf[[column]]], axis=1)
    with pytest.raises(InputError, match=rf"gdf has several columns named \['{column}'\].*"
                                         r"keeps the first"):
        synthesize(fit, twice, m=1, seed=1)
    other = pd.concat([gdf, gdf[["other"]]], axis=1)  # a column the fit does not use
    (release,) = synthesize(fit, other, m=1, seed=1)
    assert list(release.columns) == ["a", "c", "z", "geometry"]


@pytest.mark.parametrize("shape", [(12, 9), (5, 4), (30, 4)])
def test_draws_of_other_counts_are_refused(regular_data, shape):
    """λ of another lattice or other combinations was used silently or crashed in NumPy."""
    gdf, _, counts = regular_data
    fit = DrawsOnly(stub_fit(counts, random_lambda(counts, chains=1, draws=2)))
    assert (counts.n_cells, counts.n_combos) == (12, 4)
    fit.lambda_draw = lambda index: np.ones(shape)
    with pytest.raises(InputError, match=rf"posterior draw 1 of λ has shape \({shape[0]}, "
                                         rf"{shape[1]}\), but fit.counts has 12 cells and 4"):
        synthesize(fit, gdf, m=1, seed=1)


def test_cell_counts_across_releases_are_binomial(regular_data):
    """Records draw their cells independently: a cell's count over releases is Binomial.

    A chi-square of one release against its expected counts cannot see under-dispersion
    (e.g. cells handed out in fixed proportions); the spread over many releases can.
    """
    gdf, grid, counts = regular_data
    gdf = gdf.head(300)
    counts = prepare(gdf, grid, attributes=["a"])
    lam = np.broadcast_to(np.linspace(1.0, 2.0, grid.n_cells)[:, None],
                          (1, 400, grid.n_cells, counts.n_combos))
    releases = synthesize(stub_fit(counts, lam), gdf, m=400, seed=9)
    b, cell = 0, grid.n_cells - 1
    n_b = int((counts.record_combo == b).sum())
    p = lam[0, 0, cell, b] / lam[0, 0, :, b].sum()
    members = counts.record_combo == b
    observed = np.array([(cells_of(grid, r)[members] == cell).sum() for r in releases])
    binomial = stats.binom(n_b, p)
    edges = np.unique(binomial.ppf(np.linspace(0, 1, 9)[1:-1]))  # about 8 equiprobable bins
    expected = np.diff(np.concatenate([[0.0], binomial.cdf(edges), [1.0]])) * observed.size
    found = np.bincount(np.searchsorted(edges, observed, side="left"), minlength=expected.size)
    assert stats.chisquare(found, expected).pvalue > ALPHA
    # The test has power: fixed proportions (round(n_b * p) every time) fail it.
    fixed = np.full(observed.size, round(n_b * p))
    found = np.bincount(np.searchsorted(edges, fixed, side="left"), minlength=expected.size)
    assert stats.chisquare(found, expected).pvalue < ALPHA


def test_synthesis_sd_refuses_a_lattice_with_one_cell_of_three_records():
    # Cell 0 holds 3 records (mean 10), cell 1 one record (value v). The pooled SD fell back to
    # the variance of every cell mean, (v − 10)²/2: the noise SD, estimable from the releases,
    # gave |v − 10|, and the releases centre on 10, the one mean they may use.
    for lone in (95.0, 500.0):
        grid = Grid.regular((0, 0, 50, 10), shape=(1, 5), crs=CRS)
        z, x = [9.0, 10.0, 11.0, lone], [5, 5, 5, 15]
        gdf = gpd.GeoDataFrame({"a": [0] * 4, "z": z}, crs=CRS,
                               geometry=gpd.points_from_xy(x, [5] * 4))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataWarning)
            counts = prepare(gdf, grid, attributes=["a"], continuous="z")
        with pytest.raises(InputError, match="no combination has 3 or more cells of 3 or more "
                                             "records"):
            synthesis_sd(counts)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: release_draws(None, 2), r"^fit must be a geosynth.PaivaFit .* got NoneType"),
        (lambda: synthetic_zbar(None), r"^counts must be the geosynth.data.CellCounts"),
        (lambda: synthesis_sd(None), r"^counts must be the geosynth.data.CellCounts"),
    ],
)
def test_none_for_a_fit_or_counts_is_refused_naming_it(call, match):
    # Each raised AttributeError ('NoneType' object has no attribute ...).
    with pytest.raises(InputError, match=match):
        call()


def test_too_few_cell_means_to_judge_an_extreme_value_are_said():
    # A record of 9,870,000 among values near 40,000 on a 3 x 3 lattice: 18 cell means, too
    # few to judge against far-out fences, so it went out unflagged (13 x the releases' mean
    # of its cell gave it back within 5 %), without a word.
    gdf = make_points(400, seed=7)
    gdf["z"] = 40_000 + gdf["z"]
    gdf.loc[gdf.index[0], "z"] = 9_870_000.0

    def said(shape):
        grid = Grid.regular((0.0, 0.0, 120.0, 90.0), shape=shape, crs=CRS)
        counts = prepare(gdf, grid, ["a"], continuous="z")
        fit = stub_fit(counts, random_lambda(counts, chains=1, draws=2))
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            synthesize(fit, gdf, m=1, seed=1)
        return [str(w.message) for w in caught if w.category is PrivacyLeakWarning
                and "only by the dominance" in str(w.message)]

    coarse = said((3, 3))
    assert len(coarse) == 1 and "18 cell and combination pair(s)" in coarse[0]
    assert "9870000" not in coarse[0] and "9,870,000" not in coarse[0]
    assert said((6, 6)) == []  # 72 pairs: judged (and the extreme one withheld)


# ---------------------------------------------------------------------- release seeds
def _offsets_in_cells(grid, release):
    """Each point's x offset in its cell, as a fraction of the cell width (public)."""
    x0 = grid.bounds[0]
    width = (grid.bounds[2] - grid.bounds[0]) / grid.shape[1]
    return np.round(((release.geometry.x.to_numpy() - x0) % width) / width, 9)


def test_a_guessed_seed_does_not_give_the_releases_random_numbers():
    # Seeded by SeedSequence(seed).spawn(m)[l] alone, a release's x offsets in its cells were
    # the uniforms that followed its n cell uniforms: from seed=2 an intruder matched each
    # public point to its record (undoing the row shuffle) and took the noise off the
    # continuous values. Keyed by the records, the guess finds none of them.
    gdf = make_points(400, seed=1)
    grid = Grid.regular((0.0, 0.0, 120.0, 90.0), shape=(3, 4), crs=CRS)
    counts = prepare(gdf, grid, attributes=["a", "c"], continuous="z")
    fit = stub_fit(counts, random_lambda(counts))
    release = synthesize(fit, gdf, m=2, seed=2)[0]
    guess = np.random.default_rng(np.random.SeedSequence(2).spawn(2)[0])
    guess.random(len(gdf))  # the cells' uniforms
    guessed = set(np.round(guess.random(len(gdf)), 9).tolist())
    assert not guessed & set(_offsets_in_cells(grid, release).tolist())
    again = synthesize(fit, gdf, m=2, seed=2)[0]
    pd.testing.assert_frame_equal(release, again)  # the same seed and records: the same


def test_release_seeds_are_keyed_by_the_records_and_independent_of_m():
    records = make_points(50, seed=3)
    first = [s.generate_state(4).tolist() for s in release_seeds(4, 3, records)]
    assert first == [s.generate_state(4).tolist() for s in release_seeds(4, 3, records)]
    assert len({tuple(s) for s in first}) == 3
    assert [s.generate_state(4).tolist() for s in release_seeds(4, 5, records)][:3] == first
    edited = records.copy()
    edited.loc[edited.index[7], "z"] += 1.0  # one value of one record
    assert [s.generate_state(4).tolist() for s in release_seeds(4, 3, edited)][0] != first[0]
    for m in (True, 2.0):
        with pytest.raises(TypeError, match="m .number of releases. must be an int"):
            release_seeds(1, m, records)
    for m in (0, 10**11):
        with pytest.raises(InputError, match="m .number of releases. must be"):
            release_seeds(1, m, records)
