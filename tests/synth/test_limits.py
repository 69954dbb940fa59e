"""synthesize(..., limits=): synthetic continuous values truncated to a stated range."""

import json
import math
import warnings

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
from scipy import stats

import geosynth
from geosynth import Grid, prepare
from geosynth.errors import InputError, InputTypeError, PrivacyLeakWarning
from geosynth.synth import synthesis_sd, synthesize, synthetic_zbar
from geosynth.synth.paiva import continuous_values
from tests.synth.helpers import CRS, make_points, random_lambda, stub_fit

ALPHA = 1e-3


@pytest.fixture(scope="module")
def ranged_data():
    """3000 points on a 3 x 4 lattice; w > 0 and v < 0 with cell means near 0 in the west.

    ``w = 0.1 x + Exp(1)``: cell means about 2.5, 5.5, 8.5 and 11.5 from west to east, so the
    normal of eq. 2.27 (SD about 3.9) puts about a quarter of the western cells' values below
    0; ``v = -w``.
    """
    gdf = make_points(3000, seed=1)
    rng = np.random.default_rng(5)
    gdf["w"] = 0.1 * gdf.geometry.x + rng.exponential(1.0, len(gdf))
    gdf["v"] = -gdf["w"]
    grid = Grid.regular((0, 0, 120, 90), shape=(3, 4), crs=CRS)
    counts = prepare(gdf, grid, attributes=["a", "c"], continuous=["z", "w", "v"])
    return gdf, grid, counts


def concentrated(counts, cell, draws=2):
    """A fit whose every draw puts all records of every combination in ``cell``."""
    lam = np.zeros((1, draws, counts.n_cells, counts.n_combos))
    lam[..., cell, :] = 1.0
    return stub_fit(counts, lam)


def gpd_points(xy):
    return gpd.GeoSeries(gpd.points_from_xy(*np.transpose(xy)), crs=CRS)


def values(releases, column):
    return np.concatenate([r[column].to_numpy() for r in releases])


# ---------------------------------------------------------------------- the distribution
@pytest.mark.parametrize("column, limits", [
    ("w", (0, None)),
    ("v", (None, 0)),
    ("w", (0.0, 30.0)),
])
def test_values_of_a_cell_and_combination_follow_the_truncated_normal(ranged_data, column,
                                                                      limits):
    gdf, grid, counts = ranged_data
    cell = int(grid.locate(gpd_points([(15.0, 45.0)]))[0])  # western column: mean near 0
    releases = synthesize(concentrated(counts, cell), gdf, m=2, seed=7,
                          limits={column: limits})
    got = values(releases, column)
    combo = np.tile(counts.record_combo, 2)
    _, mean, sd = counts.covariate(column)
    zbar = synthetic_zbar(counts, column)
    noise = synthesis_sd(counts, column)
    low = -np.inf if limits[0] is None else limits[0]
    high = np.inf if limits[1] is None else limits[1]
    for b in range(counts.n_combos):
        centre = zbar[cell, b] * sd[b] + mean[b]
        target = stats.truncnorm((low - centre) / noise[b], (high - centre) / noise[b],
                                 loc=centre, scale=noise[b])
        assert stats.kstest(got[combo == b], target.cdf).pvalue > ALPHA
        # The whole normal of eq. 2.27 puts a fifth or more of its mass beyond the bound
        # (the test sees it).
        whole = stats.norm(centre, noise[b])
        assert max(whole.cdf(low), whole.sf(high)) > 0.2
        assert stats.kstest(got[combo == b], whole.cdf).pvalue < ALPHA


def test_every_value_lies_within_its_limits(ranged_data):
    gdf, _, counts = ranged_data
    limits = {"w": (0, math.ceil(gdf["w"].max())), "v": (math.floor(gdf["v"].min()), 0)}
    fit = stub_fit(counts, random_lambda(counts, chains=1, draws=3))
    unlimited = synthesize(fit, gdf, m=3, seed=8)
    assert (values(unlimited, "w") < 0).any() and (values(unlimited, "v") > 0).any()
    for column, (low, high) in limits.items():
        got = values(synthesize(fit, gdf, m=3, seed=8, limits=limits), column)
        assert np.isfinite(got).all() and (got >= low).all() and (got <= high).all()


def test_far_tails_and_a_uniform_of_zero_give_finite_values_within_the_limits(ranged_data):
    _, _, counts = ranged_data
    n = counts.n_records
    cells = np.zeros(n, dtype=np.int64)
    combo = np.asarray(counts.record_combo, dtype=np.int64)
    zbar = synthetic_zbar(counts, "z")  # centres of 10 to 20, SDs of 2 or so
    far = continuous_values(counts, zbar, cells, combo, np.random.default_rng(1), "z",
                            limits=(100.0, math.inf))
    assert np.isfinite(far).all() and (far >= 100.0).all() and (far < 101.0).all()

    class Zeros:  # a generator whose uniforms are all 0 (probability 2**-53 each)
        def random(self, size):
            return np.zeros(size)

    low_open = continuous_values(counts, zbar, cells, combo, Zeros(), "z",
                                 limits=(-math.inf, 50.0))
    assert np.isfinite(low_open).all() and (low_open <= 50.0).all()


# ---------------------------------------------------------------------- seeds; no limits
def test_limited_releases_reproduce_with_their_seed(ranged_data):
    gdf, _, counts = ranged_data
    fit = stub_fit(counts, random_lambda(counts, chains=2, draws=3))
    limits = {"w": (0, None), "v": (None, 0)}
    a = synthesize(fit, gdf, m=2, seed=10, limits=limits)
    b = synthesize(fit, gdf, m=2, seed=10, limits=limits)
    c = synthesize(fit, gdf, m=2, seed=11, limits=limits)
    for ra, rb, rc in zip(a, b, c, strict=True):
        pd.testing.assert_frame_equal(pd.DataFrame(ra), pd.DataFrame(rb))
        assert ra.attrs == rb.attrs
        assert not np.array_equal(ra["w"], rc["w"])
    assert not np.array_equal(a[0]["w"], a[1]["w"])


@pytest.mark.parametrize("none", [None, {}, {"w": (None, None)}])
def test_no_limits_draw_as_without_the_argument(ranged_data, none):
    gdf, _, counts = ranged_data
    fit = stub_fit(counts, random_lambda(counts, chains=1, draws=2))
    want = synthesize(fit, gdf, m=2, seed=12)
    got = synthesize(fit, gdf, m=2, seed=12, limits=none)
    for release, expected in zip(got, want, strict=True):
        pd.testing.assert_frame_equal(pd.DataFrame(release), pd.DataFrame(expected))
        assert release.attrs == expected.attrs and "limits" not in release.attrs["geosynth"]


# ---------------------------------------------------------------------- the record
def test_releases_record_their_limits_as_plain_json(ranged_data):
    """Users of a release could not tell that its values were drawn truncated, nor to what."""
    gdf, _, counts = ranged_data
    fit = stub_fit(counts, random_lambda(counts, chains=1, draws=2))
    # Given out of the fit's covariate order (z, w, v), as ints, with a no-limit entry.
    limits = {"v": (None, 0), "z": (None, None), "w": (0, 30)}
    releases = synthesize(fit, gdf, m=2, seed=15, limits=limits)
    for release in releases:
        record = release.attrs["geosynth"]["limits"]
        assert record == {"w": [0.0, 30.0], "v": [None, 0.0]}
        assert list(record) == ["w", "v"] and type(record["w"][0]) is float
        assert json.loads(json.dumps(record)) == record
        assert geosynth.synth.release.release_info(release).parameters == {"limits": record}
        public = geosynth.to_public(release, seed=1)
        assert public.attrs["geosynth"] == {"method": "paiva", "limits": record}


def test_limits_change_only_the_limited_column_and_those_drawn_after_it(ranged_data):
    """Cells, points and the covariates drawn before it (z, in counts.covariates order)."""
    gdf, _, counts = ranged_data
    fit = stub_fit(counts, random_lambda(counts, chains=1, draws=2))
    (plain,) = synthesize(fit, gdf, m=1, seed=13)
    (limited,) = synthesize(fit, gdf, m=1, seed=13, limits={"w": (0, None)})
    assert plain.geometry.geom_equals_exact(limited.geometry, 0).all()
    np.testing.assert_array_equal(plain["z"], limited["z"])
    assert not np.array_equal(plain["w"], limited["w"])


def test_the_top_level_synthesize_passes_limits_on(ranged_data):
    gdf, _, counts = ranged_data
    fit = stub_fit(counts, random_lambda(counts, chains=1, draws=2))
    limits = {"w": (0, None)}
    got = geosynth.synthesize(fit, gdf, m=2, seed=14, limits=limits)
    want = synthesize(fit, gdf, m=2, seed=14, limits=limits)
    for release, expected in zip(got, want, strict=True):
        pd.testing.assert_frame_equal(pd.DataFrame(release), pd.DataFrame(expected))


def test_the_top_level_synthesize_refuses_limits_for_a_dp_release(ranged_data):
    _, _, counts = ranged_data
    with pytest.raises(InputError, match="no continuous column: drop limits="):
        geosynth.synthesize(counts, m=1, epsilon=1.0, limits={"w": (0, None)})


# ---------------------------------------------------------------------- checks
@pytest.mark.parametrize("limits, error, match", [
    ([("w", (0, None))], InputTypeError, r"limits must be a dict \{column: \(low, high\)\}.*"
                                         r"got list of length 1"),
    ({"age": (0, 120)}, InputError, r"range for 'age', which is not a continuous column of "
                                    r"the fit, whose continuous columns are \['z', 'w', 'v'\]"),
    ({"a": (0, 1)}, InputError, r"range for 'a', which is not a continuous column"),
    ({"w": 0}, InputTypeError, r"limits\['w'\] must be a pair \(low, high\).*got int 0"),
    ({"w": (0, 1, 2)}, InputTypeError, r"limits\['w'\] must be a pair.*tuple of length 3"),
    ({"w": "01"}, InputTypeError, r"limits\['w'\] must be a pair"),
    ({"w": (False, None)}, InputTypeError, r"limits\['w'\]\[0\] must be a real number or "
                                           r"None \(an open end\), got bool False"),
    ({"w": (0, "100")}, InputTypeError, r"limits\['w'\]\[1\] must be a real number.*str"),
    ({"w": (0, np.nan)}, InputError, r"limits\['w'\]\[1\] must be a finite number, got nan; "
                                     r"use None for an open end"),
    ({"w": (-np.inf, None)}, InputError, r"limits\['w'\]\[0\] must be a finite number"),
    ({"w": (30, 0)}, InputError, r"limits\['w'\] = \(30, 0\) is empty: its low end must be "
                                 r"below its high end"),
    ({"w": (5.5, 5.5)}, InputError, r"limits\['w'\] = \(5.5, 5.5\) is empty"),
])
def test_bad_limits_are_refused_naming_the_entry(ranged_data, limits, error, match):
    gdf, _, counts = ranged_data
    fit = stub_fit(counts, random_lambda(counts, chains=1, draws=2))
    with pytest.raises(error, match=match):
        synthesize(fit, gdf, m=1, seed=1, limits=limits)


def test_limits_for_a_fit_without_continuous_columns_are_refused():
    gdf = make_points(300, seed=2)
    grid = Grid.regular((0, 0, 120, 90), shape=(3, 4), crs=CRS)
    counts = prepare(gdf, grid, attributes=["a"])
    fit = stub_fit(counts, random_lambda(counts, chains=1, draws=2))
    with pytest.raises(InputError, match=r"'z', which is not a continuous column of the fit, "
                                         r"which has no continuous column"):
        synthesize(fit, gdf, m=1, seed=1, limits={"z": (0, None)})


@pytest.mark.parametrize("column, limits, selector", [
    ("w", (1, None), r"gdf\[gdf\['w'\] < 1\]"),
    ("v", (None, -1.5), r"gdf\[gdf\['v'\] > -1.5\]"),
    ("w", (0.5, 12), r"gdf\[~gdf\['w'\].between\(0.5, 12\)\]"),
])
def test_data_outside_the_limits_are_counted_never_shown(ranged_data, column, limits,
                                                         selector):
    gdf, _, counts = ranged_data
    fit = stub_fit(counts, random_lambda(counts, chains=1, draws=2))
    low = -np.inf if limits[0] is None else limits[0]
    high = np.inf if limits[1] is None else limits[1]
    original = gdf[column].to_numpy()
    outside = original[(original < low) | (original > high)]
    assert 0 < outside.size < len(gdf)
    with pytest.raises(InputError) as err:
        synthesize(fit, gdf, m=1, seed=1, limits={column: limits})
    message = str(err.value)
    assert message.startswith(f"{outside.size} record(s) of gdf have {column!r} outside "
                              f"limits[{column!r}] = ")
    assert "widen the limits" in message and "clean the data" in message
    assert pd.Series([message]).str.contains(selector).all()
    for value in outside:
        for shown in (repr(value), f"{value:.4f}"):
            assert shown not in message


def test_values_on_the_limits_are_within(ranged_data):
    gdf, _, counts = ranged_data
    fit = stub_fit(counts, random_lambda(counts, chains=1, draws=2))
    w = gdf["w"]
    (release,) = synthesize(fit, gdf, m=1, seed=2, limits={"w": (w.min(), w.max())})
    assert release["w"].between(w.min(), w.max()).all()


def test_limits_at_the_records_extremes_are_warned_of(ranged_data):
    # limits={"z": (z.min(), z.max())} published both confidential extremes in the release's
    # metadata, to every digit, with no warning.
    gdf, _, counts = ranged_data
    fit = stub_fit(counts, random_lambda(counts, chains=1, draws=1))
    extremes = (float(gdf["w"].min()), float(gdf["w"].max()))
    with pytest.warns(PrivacyLeakWarning, match=r"limits\['w'\] \(CLI: --limit w=\.\.\.\) has "
                                                r"an end at .* the smallest and the largest 'w' "
                                                r"among the records: .*publishes a confidential"):
        synthesize(fit, gdf, m=1, seed=8, limits={"w": extremes})
    with pytest.warns(PrivacyLeakWarning, match=r"the largest 'w' among"):
        synthesize(fit, gdf, m=1, seed=8, limits={"w": (0, extremes[1])})
    # Rounded, the extremes were published to within the rounding, with no warning.
    spread = extremes[1] - extremes[0]
    rounded = (extremes[0] - 4e-4 * spread, extremes[1] + 4e-4 * spread)
    with pytest.warns(PrivacyLeakWarning, match=r"within 0\.1% of the values' range of\) the "
                                                r"smallest and the largest 'w'"):
        synthesize(fit, gdf, m=1, seed=8, limits={"w": rounded})
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)  # bounds the data do not reach
        synthesize(fit, gdf, m=1, seed=8, limits={"w": (0, math.ceil(extremes[1]))})
        synthesize(fit, gdf, m=1, seed=8, limits={"w": (extremes[0] - 1e-2 * spread, None)})
    # An isolated extreme (the gap to the next value at least 10 median gaps) rounded, as
    # ceil(income.max()) gives a top income to the unit, was not warned of.
    distinct = np.unique(gdf["w"])
    steps = np.diff(distinct)
    assert steps[-1] >= 10 * np.median(steps)  # the largest w is isolated: derived
    rounded_up = math.ceil(distinct[-1] * 10) / 10  # to 0.1: within the gap and 1 % of it
    assert 1e-3 * spread < rounded_up - distinct[-1] <= min(steps[-1], 0.01 * distinct[-1])
    with pytest.warns(PrivacyLeakWarning, match=r"rounding an isolated one.* the largest 'w'"):
        synthesize(fit, gdf, m=1, seed=8, limits={"w": (None, rounded_up)})
    with warnings.catch_warnings():  # 2 % above it is no rounding of it (a public bound)
        warnings.simplefilter("error", PrivacyLeakWarning)
        synthesize(fit, gdf, m=1, seed=8, limits={"w": (None, 1.02 * distinct[-1])})
