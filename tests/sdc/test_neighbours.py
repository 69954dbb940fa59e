"""Tests of geosynth.sdc.neighbour_resample (Matloff & Tendick neighbourhood resampling).

Correctness is checked against an independent brute-force implementation of the paper's metric
(pandas scaling with ddof=1, pandas.get_dummies one-hot, scipy cdist), never against the module's
own helpers.
"""

import math
import re
import warnings

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import shapely
from scipy.spatial.distance import cdist
from scipy.stats import binom
from shapely.geometry import LineString, Point

import geosynth.sdc.neighbours as nbmod
from geosynth import to_public
from geosynth.errors import (
    DataWarning,
    InputError,
    InputTypeError,
    MemoryLimitError,
    PrivacyLeakWarning,
)
from geosynth.io import write_release
from geosynth.sdc import neighbour_resample
from geosynth.sdc.neighbours import NeighbourResampleInfo
from geosynth.synth.release import baseline_method, is_linked

CRS = "EPSG:31983"
WEIGHTS = {"sex": 0.2, "region": 0.3, "owner": 0.5}
NUMERIC = ["age", "income", "rooms"]
CATEGORICAL = ["sex", "region", "owner", "kind"]


def mixed_frame(n=300, seed=0):
    rng = np.random.default_rng(seed)
    df = pd.DataFrame(
        {
            "age": rng.normal(40, 10, n).round(1),
            "income": np.exp(rng.normal(10, 0.5, n)).round(-2),
            "rooms": rng.integers(1, 4, n),
            "sex": rng.choice(["f", "m"], n),
            "region": pd.Categorical(
                rng.choice(["n", "s", "e"], n), categories=["n", "s", "e", "w"]
            ),
            "owner": rng.random(n) < 0.3,
            "kind": rng.choice(["a", "b"], n, p=[0.9, 0.1]),
        },
        index=[f"r{i}" for i in range(n)],
    )
    df["kind"] = df["kind"].astype(object)  # one plain object column besides the "str" one
    return df


def mixed_gdf(n=300, seed=0, geometry="location"):
    df = mixed_frame(n, seed)
    rng = np.random.default_rng(seed + 100)
    xy = rng.normal([500_000.0, 7_800_000.0], [2_000.0, 1_000.0], size=(n, 2)).round(0)
    return (
        gpd.GeoDataFrame(df, geometry=gpd.points_from_xy(xy[:, 0], xy[:, 1]), crs=CRS)
        .rename(columns={"geometry": geometry})
        .set_geometry(geometry)
    )


def brute_force(df, eps, columns, categorical, weights=None, coordinates=False):
    """Independent reference: (n, n) distances in the paper's scaled, weighted space."""
    weights = weights or {}
    parts = []
    for c in columns:
        w = weights.get(c, 1.0)
        if c in categorical:
            dummies = pd.get_dummies(df[c].astype(object).astype(str)).astype(float)
            for level in dummies.columns:
                d = dummies[level]
                if d.std(ddof=1) > 0:
                    parts.append(((d - d.mean()) / d.std(ddof=1) * w).to_numpy())
        else:
            v = df[c].astype(float)
            if v.std(ddof=1) > 0:
                parts.append(((v - v.mean()) / v.std(ddof=1) * w).to_numpy())
    if coordinates:
        w = weights.get(df.geometry.name, 1.0)
        for v in (pd.Series(df.geometry.x), pd.Series(df.geometry.y)):
            parts.append(((v - v.mean()) / v.std(ddof=1) * w).to_numpy())
    z = np.column_stack(parts)
    dist = cdist(z, z)
    neighbours = (dist < eps) & ~np.eye(len(df), dtype=bool)
    return dist, neighbours, z


def comes_from_neighbour(original, released, neighbours, rows):
    """True for each row in ``rows`` whose released value equals some neighbour's value."""
    orig = np.asarray(original, dtype=object)
    rel = np.asarray(released, dtype=object)
    match = rel[rows, None] == orig[None, :]
    return (match & neighbours[rows]).any(axis=1)


def resample(df, eps, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return neighbour_resample(df, eps, return_info=True, **kwargs)


@pytest.fixture(params=["blocked", "single_tree"])
def search_path(request, monkeypatch):
    """Run a test through both neighbour searches (blocks per combination, one big tree)."""
    if request.param == "single_tree":
        monkeypatch.setattr(nbmod, "_MAX_GROUPS", 0)
    return request.param


# --------------------------------------------------------------------------------------------
# Correctness against brute force
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("eps", [0.8, 1.5])
def test_released_values_come_from_neighbours_within_eps(search_path, eps):
    df = mixed_frame()
    dist, neighbours, _ = brute_force(df, eps, list(df.columns), CATEGORICAL, WEIGHTS)
    off_diagonal = ~np.eye(len(df), dtype=bool)
    assert np.abs(dist[off_diagonal] - eps).min() > 1e-9  # no tie at the boundary
    out, info = resample(df, eps, weights=WEIGHTS, seed=3)

    np.testing.assert_array_equal(info.n_neighbours, neighbours.sum(axis=1))
    movers = np.flatnonzero(info.selected & (info.n_neighbours >= 2))
    assert movers.size > 100
    for c in df.columns:
        ok = comes_from_neighbour(df[c], out[c], neighbours, movers)
        assert ok.all(), f"{c}: rows {movers[~ok][:5]} not from a neighbour"
    # the draws are not trivially the record itself
    changed = (out[NUMERIC].to_numpy() != df[NUMERIC].to_numpy()).any(axis=1)
    assert changed[movers].mean() > 0.8
    # records with fewer than min_neighbours=2 neighbours are released unchanged (keep)
    lonely = np.flatnonzero(info.n_neighbours < 2)
    assert (info.n_neighbours[lonely] == 1).any()
    pd.testing.assert_frame_equal(out.iloc[lonely], df.iloc[lonely])


def test_neighbour_counts_match_brute_force_with_duplicates_and_weights(search_path):
    # small integers give many exact duplicates (collapsed to one point internally)
    rng = np.random.default_rng(7)
    n = 400
    df = pd.DataFrame(
        {
            "a": rng.integers(0, 4, n),
            "b": rng.integers(0, 3, n),
            "c": rng.choice(["x", "y", "z"], n),
            "d": rng.integers(0, 2, n),
        }
    )
    weights = {"a": 0.5, "c": 0.25}
    for eps in (0.3, 0.9, 1.6, 2.5):
        dist, neighbours, _ = brute_force(df, eps, ["a", "b", "c", "d"], ["c", "d"], weights)
        assert np.abs(dist[~np.eye(n, dtype=bool)] - eps).min() > 1e-9
        _, info = resample(df, eps, weights=weights, categorical=["d"], seed=0)
        np.testing.assert_array_equal(info.n_neighbours, neighbours.sum(axis=1))
        assert info.mean_neighbours == pytest.approx(neighbours.sum(axis=1).mean())


def test_bound_is_strict():
    df = pd.DataFrame({"x": [0.25, 1.5]})
    scaled = (df["x"] - df["x"].mean()) / df["x"].std(ddof=1)
    gap = float(scaled.iloc[1] - scaled.iloc[0])
    _, at = resample(df, gap, seed=0)
    _, above = resample(df, float(np.nextafter(gap, np.inf)), seed=0)
    assert at.n_neighbours.tolist() == [0, 0]
    assert above.n_neighbours.tolist() == [1, 1]


def test_identical_records_are_neighbours_and_self_is_excluded():
    df = pd.DataFrame({"x": [5.0, 5.0, 5.0, 9.0], "s": ["a", "a", "a", "b"]})
    out, info = resample(df, 0.5, seed=0)
    assert info.n_neighbours.tolist() == [2, 2, 2, 0]
    pd.testing.assert_frame_equal(out, df)


def test_draws_are_uniform_over_neighbouring_records():
    # 1000 clusters far apart: a target at c, three identical records at c + 1, one at c - 1.
    # The target's neighbours are 4 records, so each variable is c + 1 with probability 3/4.
    k = 1000
    centres = np.arange(k) * 1000.0
    x = np.concatenate([centres, centres + 1, centres + 1, centres + 1, centres - 1])
    df = pd.DataFrame({"x": x, "y": x})
    sd = df["x"].std(ddof=1)
    scaled_step = 1 / sd * np.sqrt(2)  # both variables move by 1
    out, info = resample(df, 1.5 * scaled_step, seed=11)
    assert info.n_neighbours[:k].tolist() == [4] * k
    for c in ("x", "y"):
        up = int((out[c].to_numpy()[:k] == centres + 1).sum())
        down = int((out[c].to_numpy()[:k] == centres - 1).sum())
        assert up + down == k
        assert binom.ppf(0.0005, k, 0.75) <= up <= binom.ppf(0.9995, k, 0.75)
    # variables are drawn independently: both up in about (3/4)^2 of the targets
    both = int(((out["x"].to_numpy()[:k] > centres) & (out["y"].to_numpy()[:k] > centres)).sum())
    assert binom.ppf(0.0005, k, 0.5625) <= both <= binom.ppf(0.9995, k, 0.5625)


def test_small_eps_preserves_dependence_large_eps_destroys_it():
    # the paper's theorem: as eps -> 0 the joint law is kept although draws are independent
    rng = np.random.default_rng(5)
    x = rng.normal(size=5000)
    df = pd.DataFrame({"x": x, "y": x + 0.3 * rng.normal(size=5000)})
    r0 = np.corrcoef(df["x"], df["y"])[0, 1]
    small, _ = resample(df, 0.1, seed=1)
    large, info = resample(df, 100.0, seed=1)
    assert info.mean_neighbours == 4999  # everyone is everyone's neighbour
    assert abs(np.corrcoef(small["x"], small["y"])[0, 1] - r0) < 0.02
    assert abs(np.corrcoef(large["x"], large["y"])[0, 1]) < 0.05


# --------------------------------------------------------------------------------------------
# Categorical variables and dtypes
# --------------------------------------------------------------------------------------------


def test_categorical_values_are_drawn_whole_and_keep_their_dtype():
    df = mixed_frame(n=400, seed=2)
    df["region"] = df["region"].cat.as_ordered()
    eps = 1.5
    _, neighbours, _ = brute_force(df, eps, list(df.columns), CATEGORICAL, WEIGHTS)
    out, info = resample(df, eps, weights=WEIGHTS, seed=4)
    pd.testing.assert_series_equal(out.dtypes, df.dtypes)
    assert list(out["region"].cat.categories) == ["n", "s", "e", "w"]
    assert out["region"].cat.ordered
    assert out["kind"].dtype == object
    movers = np.flatnonzero(info.n_neighbours >= 2)
    for c in CATEGORICAL:
        # exactly one level per released record, and it is the level of one neighbour
        one_hot = pd.get_dummies(out[c].astype(str))
        assert (one_hot.sum(axis=1) == 1).all()
        assert comes_from_neighbour(df[c], out[c], neighbours, movers).all()
    # with small weights some neighbours differ in a categorical, so levels do move
    assert (out["sex"] != df["sex"]).any()


def test_categories_held_only_by_suppressed_records_are_warned_about():
    # The dtype keeps every category: a rare diagnosis whose only record was suppressed (it has
    # no neighbour) was still published in out["diag"].cat.categories, without a word.
    rng = np.random.default_rng(0)
    diag = ["flu"] * 150 + ["cold"] * 149 + ["rare-disease"]
    df = pd.DataFrame({"age": rng.normal(40.0, 10.0, 300).round(1),
                       "diag": pd.Categorical(diag), "kept": pd.Categorical(diag)})
    match = (r"^categorical column\(s\) 'diag' \(1\), 'kept' \(1\) list categories that no "
             r"released record holds but suppressed or resampled records did")
    with pytest.warns(PrivacyLeakWarning, match=match) as record, warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        out = neighbour_resample(df, 1.0, columns=["age", "diag"], no_neighbours="suppress",
                                 seed=0)
    assert "rare-disease" not in out["diag"].tolist()
    assert "rare-disease" in out["diag"].cat.categories  # the dtype is kept, as documented
    assert not any("rare-disease" in str(w.message) for w in record)
    # the fix the message names removes it
    assert "rare-disease" not in out["diag"].cat.remove_unused_categories().cat.categories
    # a category unused in the input (a declared code) is not warned about
    df = mixed_frame()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        neighbour_resample(df, 100.0, seed=0)
    assert not any("categorical column" in str(w.message) for w in record)


def test_an_identifying_categorical_column_is_refused():
    # An ID among the default columns: every record its own level, no record has a neighbour,
    # and all of them were released unchanged, ID included (with a warning only).
    df = mixed_frame(n=300, seed=2)
    df["patient"] = [f"P{k:04d}" for k in range(300)]
    with pytest.raises(InputError, match=r"categorical column 'patient' has 300 levels among "
                                         r"300 records, 300 of them held by a single record: "
                                         r"an identifier.*drop it from columns="):
        neighbour_resample(df, 1.5, seed=1)
    code = df.assign(code=np.arange(300))
    with pytest.raises(InputError, match="categorical column 'code'"):
        neighbour_resample(code, 1.5, columns=["age", "code"], categorical=["code"], seed=1)


@pytest.mark.parametrize("dtype", ["str", "int64", "float64"])
def test_an_id_repeated_over_a_few_visits_is_refused_as_prepare_refuses_it(dtype):
    # Two visits per patient: no level of one record, so the level rules passed it, and with
    # min_neighbours=2 every record kept its own patient_id (the records released unchanged with
    # only a DataWarning). prepare refuses the column by its name and small levels.
    df = mixed_frame(n=200, seed=3).assign(patient_id=np.repeat(np.arange(5000, 5100), 2))
    df = df.astype({"patient_id": dtype})
    kind = {"str": "categorical", "int64": "integer", "float64": "whole-number float"}[dtype]
    with pytest.raises(InputError, match=rf"{kind} column 'patient_id' has 100 levels among 200 "
                                         r"records, 0 of them held by a single record, and is "
                                         r"named like a record identifier: an identifier"):
        neighbour_resample(df, 1.5, categorical=["patient_id"] * (dtype == "str"), seed=3)
    # an area's code of many records a level is no record's id, whatever its name
    area = df.drop(columns="patient_id").assign(area_id=np.repeat(np.arange(10), 20))
    resample(area, 1.5, categorical=["area_id"], seed=3)


def test_records_released_unchanged_are_a_privacy_warning():
    # Records without enough neighbours are released as they are under the default
    # no_neighbours="keep": the records themselves, not a data issue.
    df = mixed_frame(n=200, seed=3)
    for action, category in (("keep", PrivacyLeakWarning), ("suppress", DataWarning)):
        with warnings.catch_warnings(record=True) as record:
            warnings.simplefilter("always")
            neighbour_resample(df, 1e-9, no_neighbours=action, seed=3)
        (warned,) = [w for w in record if "selected records have" in str(w.message)]
        assert warned.category is category, action


@pytest.mark.parametrize("dtype", ["int64", "Int64", "uint32"])
def test_an_identifying_integer_column_is_refused(dtype):
    # An integer ID among the default columns was resampled as a number: every released ID was
    # a real one (a neighbour's), and records were released with a real ID attached.
    rng = np.random.default_rng(4)
    df = mixed_frame(n=300, seed=2)
    ids = df.assign(patient_id=np.arange(100_001, 100_301)).astype({"patient_id": dtype})
    with pytest.raises(InputError, match=r"integer column 'patient_id' has 300 levels among 300 "
                                         r"records, 300 of them held by a single record, and is "
                                         r"named like a record identifier: an identifier.*drop "
                                         r"it from columns=.*categorical="):
        neighbour_resample(ids, 1.5, seed=1)
    ssn = df.assign(ssn=rng.permutation(300) * 7919 + 10**8)  # scattered, not consecutive
    with pytest.raises(InputError, match=r"integer column 'ssn' has 300 levels"):
        neighbour_resample(ssn, 1.5, columns=["age", "ssn"], seed=1)
    # the fixes the message names work: leave it out, or coarsen it into categories
    out, _ = resample(ids, 1.5, columns=list(df.columns), seed=1)
    assert out["patient_id"].equals(ids["patient_id"])
    coarse = ids.assign(patient_id=pd.cut(ids["patient_id"], 5, labels=False))
    resample(coarse, 1.5, categorical=["patient_id"], seed=1)


@pytest.mark.parametrize("dtype", ["float64", "Float64", "float32"])
def test_an_identifying_whole_number_float_column_is_refused(dtype):
    # An integer ID stored as floats (read from a CSV with a blank cell) was not checked: every
    # released record carried a real ID (a neighbour's), resampled as a number.
    df = mixed_frame(n=300, seed=2)
    ids = df.assign(patient_id=np.arange(100_001.0, 100_301.0)).astype({"patient_id": dtype})
    with pytest.raises(InputError, match=r"whole-number float column 'patient_id' has 300 "
                                         r"distinct values among 300 records: an identifier.*"
                                         r"drop it from columns=") as err:
        neighbour_resample(ids, 1.5, seed=1)
    assert "100001" not in str(err.value) and "100300" not in str(err.value)
    scattered = df.assign(ssn=(np.random.default_rng(4).permutation(300) * 7919.0 + 1e8))
    with pytest.raises(InputError, match=r"whole-number float column 'ssn'"):
        neighbour_resample(scattered, 1.5, columns=["age", "ssn"], seed=1)
    # whole numbers that repeat (income rounded to 100 in mixed_frame) and floats with a
    # fractional part are measurements, not IDs
    assert df["income"].eq(df["income"].round()).all() and df["income"].duplicated().any()
    resample(df, 1.5, seed=1)
    resample(ids.assign(patient_id=ids["patient_id"].astype(np.float64) + 0.5), 1.5, seed=1)


def test_integer_variables_that_repeat_are_accepted():
    # age in years: 300 records over some 60 ages, a few ages held by one record
    df = mixed_frame(n=300, seed=2)
    df["age"] = df["age"].round().astype(np.int64)
    assert 0 < int((df["age"].value_counts() == 1).sum()) < 15
    out, info = resample(df, 1.5, weights=WEIGHTS, seed=1)
    _, neighbours, _ = brute_force(df, 1.5, list(df.columns), CATEGORICAL, WEIGHTS)
    np.testing.assert_array_equal(info.n_neighbours, neighbours.sum(1))
    assert out["age"].dtype == np.int64
    # the integer check is not applied to floats (a continuous measurement is often unique)
    jitter = np.random.default_rng(8).random(300)
    resample(df.assign(age=df["age"] + jitter), 1.5, seed=1)


def test_integer_ages_of_a_small_table_are_not_taken_for_an_identifier():
    # 50 people's ages in years: some 35 levels, more than half the records, so the level rules
    # for categories refused the column as an ID. A repeated value is a measurement's; an
    # integer column is an ID when all its values are distinct or its name is an ID's.
    df = mixed_frame(n=50, seed=6)
    df["age"] = df["age"].round().astype(np.int64)
    assert df["age"].duplicated().any() and df["age"].nunique() > 25
    out, _ = resample(df, 1.5, seed=1)
    assert out["age"].dtype == np.int64
    with pytest.raises(InputError, match=r"integer column 'age' has 50 levels among 50"):
        neighbour_resample(df.assign(age=np.arange(50) * 3 + 18), 1.5, seed=1)
    typed_twice = np.arange(1000, 1050)
    typed_twice[7] = typed_twice[6]  # an ID with one value typed twice is still an ID
    with pytest.raises(InputError, match=r"integer column 'ref' has 49 levels among 50"):
        neighbour_resample(df.assign(ref=typed_twice), 1.5, seed=1)
    visits = df.assign(patient_no=np.repeat(np.arange(25), 2))  # two records an ID, by name
    with pytest.raises(InputError, match=r"integer column 'patient_no' .* named like a record"):
        neighbour_resample(visits, 1.5, seed=1)


def test_numeric_column_listed_as_categorical_enters_as_dummies():
    # codes 1, 2, 30: as numbers 30 is far away; as categories every level is equally far
    df = pd.DataFrame({"code": [1, 1, 2, 2, 30, 30] * 5, "v": np.arange(30) % 2})
    eps = 2.0
    _, num = brute_force(df, eps, ["code", "v"], [])[:2]
    _, cat = brute_force(df, eps, ["code", "v"], ["code"])[:2]
    assert not np.array_equal(num.sum(1), cat.sum(1))
    _, info_num = resample(df, eps, seed=0)
    _, info_cat = resample(df, eps, categorical=["code"], seed=0)
    np.testing.assert_array_equal(info_num.n_neighbours, num.sum(1))
    np.testing.assert_array_equal(info_cat.n_neighbours, cat.sum(1))


def test_columns_not_listed_are_carried_unchanged():
    df = mixed_frame()
    out, info = resample(df, 1.5, columns=["age", "income"], seed=0)
    for c in ("rooms", "sex", "region", "owner", "kind"):
        pd.testing.assert_series_equal(out[c], df[c])
    _, neighbours, _ = brute_force(df, 1.5, ["age", "income"], [])
    np.testing.assert_array_equal(info.n_neighbours, neighbours.sum(1))


# --------------------------------------------------------------------------------------------
# modprop, seeds and selection
# --------------------------------------------------------------------------------------------


def test_modprop_zero_returns_input_unchanged():
    df = mixed_frame()
    out = neighbour_resample(df, 1.0, modprop=0.0, seed=1)
    assert out is not df
    pd.testing.assert_frame_equal(out, df)
    gdf = mixed_gdf()
    out_g, info = neighbour_resample(
        gdf, 1.0, modprop=0, include_coordinates=True, seed=1, return_info=True
    )
    assert isinstance(out_g, gpd.GeoDataFrame)
    pd.testing.assert_frame_equal(out_g, gdf)
    assert info.n_selected == 0 and not info.selected.any()


def test_same_seed_same_output_different_seed_differs():
    df = mixed_frame()
    a, _ = resample(df, 1.5, weights=WEIGHTS, seed=42)
    b, _ = resample(df, 1.5, weights=WEIGHTS, seed=42)
    c, _ = resample(df, 1.5, weights=WEIGHTS, seed=43)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)
    # a Generator is used as given (threading one stream through calls)
    rng = np.random.default_rng(42)
    d, _ = resample(df, 1.5, weights=WEIGHTS, seed=rng)
    pd.testing.assert_frame_equal(a, d)


@pytest.mark.parametrize("coordinates", [False, True])
def test_the_release_depends_on_the_data_and_seed_not_on_the_search_path(monkeypatch,
                                                                         coordinates):
    # A draw takes the k-th record of a record's neighbour list, which was in the order the
    # search found the pairs: the same data and seed gave another release when the search went
    # through one tree instead of blocks (a tuning constant), or when scipy's trees changed it.
    data = mixed_gdf(n=1000) if coordinates else mixed_frame(n=1000)
    blocked, _ = resample(data, 1.5, weights=WEIGHTS, include_coordinates=coordinates, seed=5)
    monkeypatch.setattr(nbmod, "_MAX_GROUPS", 0)
    single, _ = resample(data, 1.5, weights=WEIGHTS, include_coordinates=coordinates, seed=5)
    pd.testing.assert_frame_equal(blocked, single)


@pytest.mark.parametrize("modprop", [0.0, 0.013, 0.25, 0.5, 1.0])
def test_exact_selection_resamples_floor_n_modprop_records(modprop):
    df = mixed_frame()
    out, info = resample(df, 1.5, modprop=modprop, selection="exact", weights=WEIGHTS, seed=9)
    assert info.n_selected == math.floor(len(df) * modprop) == int(info.selected.sum())
    unselected = ~info.selected
    pd.testing.assert_frame_equal(out[unselected], df[unselected])


def test_bernoulli_selection_size_is_binomial():
    df = mixed_frame(n=2000, seed=1)
    q = 0.3
    lo, hi = binom.ppf(0.0005, 2000, q), binom.ppf(0.9995, 2000, q)
    sizes = []
    for seed in range(5):
        out, info = resample(df, 1.0, modprop=q, weights=WEIGHTS, seed=seed)
        sizes.append(info.n_selected)
        assert lo <= info.n_selected <= hi
        pd.testing.assert_frame_equal(out[~info.selected], df[~info.selected])
    assert len(set(sizes)) > 1  # the size is random, unlike selection="exact"
    _, full = resample(df, 1.0, modprop=1.0, weights=WEIGHTS, seed=0)
    assert full.n_selected == 2000


# --------------------------------------------------------------------------------------------
# Records without neighbours
# --------------------------------------------------------------------------------------------


def test_no_neighbours_keep_warns_and_releases_unchanged():
    df = mixed_frame()
    match = r"selected records have fewer than min_neighbours=2 other records within eps=0\.8"
    with pytest.warns(PrivacyLeakWarning, match=match) as record:
        out, info = neighbour_resample(df, 0.8, weights=WEIGHTS, seed=0, return_info=True)
    n_none = int((info.n_neighbours == 0).sum())
    assert info.n_without_neighbours == int((info.n_neighbours < 2).sum()) > n_none > 0
    (message,) = [str(w.message) for w in record if "selected records have" in str(w.message)]
    assert message.startswith(f"{info.n_without_neighbours} of 300 selected records")
    assert (f"({n_none} have none; records identical in every variable count once; "
            "return_info=True gives them: info.selected & (info.n_distinct_neighbours < 2))"
            in message)
    assert info.n_suppressed == 0
    assert len(out) == len(df)
    assert out.index.equals(df.index)


def test_no_neighbours_suppress_drops_and_warns_with_count():
    df = mixed_frame()
    _, info_keep = resample(df, 0.8, weights=WEIGHTS, seed=0)
    n_lonely = info_keep.n_without_neighbours
    match = rf"{n_lonely} of 300 selected .* dropped"
    with pytest.warns(DataWarning, match=match), warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        out, info = neighbour_resample(
            df, 0.8, weights=WEIGHTS, no_neighbours="suppress", seed=0, return_info=True
        )
    assert info.n_suppressed == n_lonely == len(df) - len(out)
    expected_index = df.index[info.n_neighbours >= 2]
    assert out.index.equals(expected_index)
    # unselected lonely records are not dropped
    out_half, info_half = resample(
        df, 0.8, weights=WEIGHTS, no_neighbours="suppress", modprop=0.5, selection="exact", seed=0
    )
    lonely = info_half.n_neighbours < 2
    assert len(out_half) == len(df) - int((lonely & info_half.selected).sum())
    assert set(df.index[lonely & ~info_half.selected]) <= set(out_half.index)


def pairs_gdf(n_pairs=50):
    """Pairs of records far apart: each one's only neighbour is its twin; all values distinct."""
    base = np.arange(n_pairs) * 100.0
    v = np.concatenate([base, base + 1.0])
    return gpd.GeoDataFrame(
        {"age": v + 0.25, "income": v * 10 + 0.5},
        geometry=gpd.points_from_xy(v, v + 0.75), crs=CRS,
    )


def test_a_record_with_one_neighbour_is_not_copied_from_it():
    # Matloff & Tendick (min_neighbours=1): every variable of a record with one neighbour comes
    # from that neighbour, so it is released as an exact copy of another record, location too.
    gdf = pairs_gdf()
    n = len(gdf)
    eps = 0.02  # twins are 0.0014 apart (scaled), pairs 0.14
    with pytest.warns(PrivacyLeakWarning, match=rf"^{n} of {n} resampled records are an exact "
                                                r"copy of an original record \(another.s, or "
                                                r"their own\) in all 4 resampled variables "
                                                r"\(the location included\)"):
        out, info = neighbour_resample(gdf, eps, include_coordinates=True, min_neighbours=1,
                                       seed=0, return_info=True)
    assert info.n_neighbours.tolist() == [1] * n and info.n_without_neighbours == 0
    assert info.n_whole_copies == n and info.min_neighbours == 1
    twin = np.r_[np.arange(n // 2, n), np.arange(n // 2)]
    pd.testing.assert_frame_equal(out.reset_index(drop=True),
                                  gdf.iloc[twin].reset_index(drop=True))
    # default min_neighbours=2: not resampled, handled (and counted) as without neighbours
    match = rf"^{n} of {n} selected records have fewer than min_neighbours=2 other records"
    with pytest.warns(PrivacyLeakWarning, match=match) as record:
        out, info = neighbour_resample(gdf, eps, include_coordinates=True, seed=0,
                                       return_info=True)
    assert not any("exact copy" in str(w.message) for w in record)  # of another record
    assert info.n_without_neighbours == n and info.n_whole_copies == 0
    pd.testing.assert_frame_equal(out, gdf)  # released unchanged (keep), as the warning says
    out, info = resample(gdf, eps, include_coordinates=True, no_neighbours="suppress", seed=0)
    assert len(out) == 0 and info.n_suppressed == n


def test_neighbours_that_are_copies_of_one_record_count_once():
    # A record whose neighbours are all copies of one record takes every variable from that
    # record: an exact copy as certain as with a single neighbour. A record whose only
    # neighbours are its own twins gets its own values back. Both were "resampled" (and kept
    # by no_neighbours="suppress"); they are records without enough distinct neighbours.
    rng = np.random.default_rng(0)
    spread = pd.DataFrame({"a": rng.normal(0.0, 1.0, 200), "b": rng.normal(0.0, 1.0, 200)})
    triplets = pd.DataFrame({"a": [9.0] * 3, "b": [9.0] * 3})  # rows 200-202
    pair_and_one = pd.DataFrame({"a": [-9.0, -9.05, -9.05], "b": [-9.0] * 3})  # rows 203-205
    df = pd.concat([spread, triplets, pair_and_one], ignore_index=True)
    out, info = resample(df, 0.3, no_neighbours="suppress", seed=1)
    assert info.n_neighbours[200:].tolist() == [2] * 6
    assert info.n_distinct_neighbours[200:].tolist() == [1, 1, 1, 1, 2, 2]
    assert not {200, 201, 202, 203} & set(out.index)
    assert {204, 205} <= set(out.index)
    lonely = info.selected & (info.n_distinct_neighbours < 2)
    assert info.n_without_neighbours == info.n_suppressed == int(lonely.sum())
    assert out.index.equals(df.index[~lonely])
    # with keep they are released unchanged and counted, not as copies of another record
    with pytest.warns(PrivacyLeakWarning, match=r"info\.n_distinct_neighbours < 2"):
        kept, info = neighbour_resample(df, 0.3, seed=1, return_info=True)
    pd.testing.assert_frame_equal(kept.loc[200:203], df.loc[200:203])
    assert info.n_without_neighbours == int(lonely.sum())
    # the paper's method (min_neighbours=1) copies them: only records with no neighbour stay
    copied, info = resample(df, 0.3, min_neighbours=1, seed=1)
    assert info.n_without_neighbours == int((info.n_neighbours == 0).sum())
    assert (copied.loc[203] == df.loc[204]).all()


def test_min_neighbours_raises_the_bar():
    df = mixed_frame()
    _, info2 = resample(df, 1.5, weights=WEIGHTS, seed=0)
    out, info5 = resample(df, 1.5, weights=WEIGHTS, min_neighbours=5, seed=0)
    np.testing.assert_array_equal(info5.n_neighbours, info2.n_neighbours)
    few = info5.n_neighbours < 5
    assert info5.n_without_neighbours == int(few.sum()) > info2.n_without_neighbours
    pd.testing.assert_frame_equal(out[few], df[few])
    assert (out[~few][NUMERIC] != df[~few][NUMERIC]).any(axis=1).mean() > 0.8


@pytest.mark.parametrize(
    ("value", "error", "match"),
    [
        (0, InputError, r"min_neighbours must be an int >= 1, got 0"),
        (-2, InputError, r"min_neighbours must be an int >= 1"),
        (True, TypeError, r"min_neighbours must be an int, got bool"),
        (2.0, TypeError, r"min_neighbours must be an int, got float"),
        ("2", TypeError, r"min_neighbours must be an int"),
    ],
)
def test_bad_min_neighbours(value, error, match):
    with pytest.raises(error, match=match):
        neighbour_resample(mixed_frame(), 1.0, min_neighbours=value)


def test_min_neighbours_beyond_the_other_records_is_refused():
    # min_neighbours=10**30 resampled nothing: every record was released as it was.
    with pytest.raises(InputError, match=r"min_neighbours=300 is more than the 299 other records "
                                         r"a record can have as neighbours, so every record "
                                         r"would be released unchanged"):
        neighbour_resample(mixed_frame(n=300), 1.0, min_neighbours=300)


def clusters_gdf(n_clusters, size):
    """Clusters of ``size`` records far apart, every value distinct: k = size - 1 neighbours."""
    offsets = np.tile(np.arange(size, dtype=float), n_clusters)
    centre = np.repeat(np.arange(n_clusters) * 1000.0, size)
    v = centre + offsets
    return gpd.GeoDataFrame(
        {"a": v + 0.1, "b": v + 0.2}, geometry=gpd.points_from_xy(v, v + 0.3), crs=CRS
    )


@pytest.mark.parametrize(("columns", "n_variables"), [([], 2), (["a"], 3)])
def test_whole_copies_occur_at_rate_k_to_the_one_minus_v(columns, n_variables):
    # Each of V variables comes from one of k neighbours drawn independently, so a record is an
    # exact copy of one neighbour with probability k**(1 - V); with V = 2 (coordinates only)
    # that is the share of released points that are real locations (1/k).
    k, n_clusters = 3, 600
    gdf = clusters_gdf(n_clusters, k + 1)
    n = len(gdf)
    with pytest.warns(PrivacyLeakWarning, match=rf"of {n} resampled records .* in all "
                                                rf"{n_variables} resampled variables"):
        # cluster members are at most 3e-5 apart (scaled), clusters 8e-3
        out, info = neighbour_resample(gdf[[*columns, "geometry"]], 1e-3, columns=columns,
                                       include_coordinates=True, seed=7, return_info=True)
    assert info.n_neighbours.tolist() == [k] * n
    p = k ** (1 - n_variables)
    assert binom.ppf(0.0005, n, p) <= info.n_whole_copies <= binom.ppf(0.9995, n, p)
    # independent count: released rows equal to an original row (every value is distinct, and
    # a record is never its own neighbour, so such a row copies another record)
    key = [*columns, "x", "y"]
    original = gdf.assign(x=gdf.geometry.x, y=gdf.geometry.y)[key]
    released = out.assign(x=out.geometry.x, y=out.geometry.y)[key]
    assert len(released.merge(original, on=key)) == info.n_whole_copies
    if n_variables == 2:
        real = {(x, y) for x, y in zip(original["x"], original["y"], strict=True)}
        is_real = [(x, y) in real for x, y in zip(released["x"], released["y"], strict=True)]
        assert sum(is_real) == info.n_whole_copies


def test_whole_copies_count_twins_and_a_single_variable_does_not_warn():
    # records identical in every variable are one point: drawing a from one twin and b from the
    # other copies them as surely as drawing both from one
    # (min_neighbours=1: with the default, records whose neighbours are all twins are not
    # resampled at all)
    df = pd.DataFrame({"a": [0.0, 0.0, 0.0, 100.0, 100.0, 100.0],
                       "b": [5.0, 5.0, 5.0, 9.0, 9.0, 9.0]})
    with pytest.warns(PrivacyLeakWarning, match=r"^6 of 6 resampled records"):
        _, info = neighbour_resample(df, 0.5, min_neighbours=1, seed=0, return_info=True)
    assert info.n_whole_copies == 6
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)  # one variable: that is the method
        _, info = resample(mixed_frame(), 0.3, columns=["age"], seed=0)
    n_resampled = int((info.n_neighbours >= 2).sum())
    assert info.n_whole_copies == n_resampled > 0


def test_no_warning_when_every_selected_record_has_neighbours():
    df = mixed_frame()
    with warnings.catch_warnings():
        warnings.simplefilter("error", DataWarning)
        _, info = neighbour_resample(df, 100.0, seed=0, return_info=True)
    assert info.n_without_neighbours == 0


# --------------------------------------------------------------------------------------------
# Coordinates
# --------------------------------------------------------------------------------------------


def test_include_coordinates_points_within_eps_of_replaced_record(search_path):
    gdf = mixed_gdf()
    eps = 1.5
    weights = {**WEIGHTS, "location": 0.8}
    dist, neighbours, z = brute_force(
        gdf, eps, list(gdf.columns.drop("location")), CATEGORICAL, weights, coordinates=True
    )
    assert np.abs(dist[~np.eye(len(gdf), dtype=bool)] - eps).min() > 1e-9
    out, info = resample(gdf, eps, weights=weights, include_coordinates=True, seed=2)
    assert isinstance(out, gpd.GeoDataFrame)
    assert out.geometry.name == "location" and out.crs == gdf.crs
    assert out.index.equals(gdf.index)
    np.testing.assert_array_equal(info.n_neighbours, neighbours.sum(1))
    movers = np.flatnonzero(info.n_neighbours >= 2)
    x0, y0 = gdf.geometry.x.to_numpy(), gdf.geometry.y.to_numpy()
    x1, y1 = out.geometry.x.to_numpy(), out.geometry.y.to_numpy()
    assert comes_from_neighbour(x0, x1, neighbours, movers).all()
    assert comes_from_neighbour(y0, y1, neighbours, movers).all()
    # in the scaled, weighted space: within eps along each axis, sqrt(2) eps in the plane
    sx, sy = x0.std(ddof=1) / 0.8, y0.std(ddof=1) / 0.8
    dx, dy = (x1 - x0) / sx, (y1 - y0) / sy
    assert np.all(np.abs(dx) < eps) and np.all(np.abs(dy) < eps)
    assert np.all(np.hypot(dx, dy) < math.sqrt(2) * eps)
    assert (np.hypot(dx, dy)[movers] > 0).mean() > 0.8  # points do move
    # x and y come from independently drawn neighbours, so most released points (of records
    # with several neighbours) are not a real location; drawing (x, y) jointly would make all
    # of them real
    real = {(a, b) for a, b in zip(x0, y0, strict=True)}
    several = np.flatnonzero(info.n_neighbours >= 5)
    is_real = np.array([(x1[i], y1[i]) in real for i in several])
    assert several.size > 100 and is_real.mean() < 0.5
    # attributes still come from neighbours in the joint space
    for c in ("age", "sex", "region"):
        assert comes_from_neighbour(gdf[c], out[c], neighbours, movers).all()


@pytest.mark.parametrize("columns", [[], ["age", "income"]])
def test_records_released_at_a_real_location_are_counted_and_warned(columns):
    # x and y come from the same neighbour with probability >= 1/k: the released point is then
    # a real location, which was neither counted nor warned about unless every other variable
    # came from that neighbour too.
    gdf = mixed_gdf()[[*columns, "location"]]
    # With the coordinates alone a real location is a whole copy, warned as such, unless x and y
    # came from two records sharing a coordinate (which depends on the draw).
    match = (r"resampled records are released at the exact location of an original record"
             + ("" if columns else r"|in all 2 resampled variables \(the location included\)"))
    with pytest.warns(PrivacyLeakWarning, match=match):
        out, info = neighbour_resample(gdf, 0.4, columns=columns, include_coordinates=True,
                                       seed=3, return_info=True)
    real = set(zip(gdf.geometry.x, gdf.geometry.y, strict=True))
    moved = np.flatnonzero(info.selected & (info.n_neighbours >= 2))
    released = zip(out.geometry.x.to_numpy()[moved], out.geometry.y.to_numpy()[moved],
                   strict=True)
    expected = sum(point in real for point in released)
    assert 0 < info.n_whole_copies <= expected == info.n_location_copies < moved.size
    if columns:  # the geometry carried over unchanged is not counted: it was not resampled
        _, without = resample(gdf, 0.4, columns=columns, seed=3)
        assert without.n_location_copies == 0


def test_geometry_is_carried_unchanged_without_include_coordinates():
    gdf = mixed_gdf()
    out, info = resample(gdf, 1.5, weights=WEIGHTS, seed=0)
    assert isinstance(out, gpd.GeoDataFrame) and out.crs == gdf.crs
    assert out.geometry.equals(gdf.geometry)
    columns = list(gdf.columns.drop("location"))
    _, neighbours, _ = brute_force(gdf, 1.5, columns, CATEGORICAL, WEIGHTS)
    np.testing.assert_array_equal(info.n_neighbours, neighbours.sum(1))


def unchanged_geometry_warnings(data, **kwargs):
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        neighbour_resample(data, 1.5, seed=0, **kwargs)
    return [str(w.message) for w in record
            if w.category is PrivacyLeakWarning and "are copied unchanged" in str(w.message)]


def test_a_geometry_copied_unchanged_is_warned_about():
    # Without include_coordinates every record's true location was released beside its
    # resampled attributes with no word at run time (only the docstring said so).
    gdf = mixed_gdf()
    gdf.loc[gdf.index[:3], "location"] = None  # absent geometries show nothing
    expected = r"geometry column\(s\) 'location' \(297 of 300 records\) are copied unchanged"
    for kwargs in ({"weights": WEIGHTS}, {"modprop": 0.0}):
        (message,) = unchanged_geometry_warnings(gdf, **kwargs)
        assert re.match(expected, message)
    gdf["home"] = gdf.geometry.buffer(1.0)  # any other geometry column, even when resampling
    gdf = gdf.iloc[3:]
    (message,) = unchanged_geometry_warnings(gdf, columns=NUMERIC, include_coordinates=True)
    assert re.match(r"geometry column\(s\) 'home' \(297 of 297 records\)", message)
    assert not unchanged_geometry_warnings(gdf.drop(columns="home"), columns=NUMERIC,
                                           include_coordinates=True)
    assert not unchanged_geometry_warnings(pd.DataFrame(gdf[NUMERIC]))


def test_coordinates_only():
    gdf = mixed_gdf()[["location"]]
    out, info = resample(gdf, 0.3, include_coordinates=True, seed=0)
    _, neighbours, _ = brute_force(gdf, 0.3, [], [], coordinates=True)
    np.testing.assert_array_equal(info.n_neighbours, neighbours.sum(1))
    assert out.crs == gdf.crs


# --------------------------------------------------------------------------------------------
# Info, memory guard
# --------------------------------------------------------------------------------------------


def test_info_fields():
    df = mixed_frame()
    out, info = resample(df, 1.0, modprop=0.5, selection="exact", weights=WEIGHTS, seed=0)
    assert isinstance(info, NeighbourResampleInfo)
    assert info.n_records == 300 and info.n_selected == 150
    assert info.n_without_neighbours == int((info.selected & (info.n_neighbours < 2)).sum())
    assert info.min_neighbours == 2
    assert info.mean_neighbours == pytest.approx(info.n_neighbours.mean())
    assert info.n_neighbours.dtype == np.int64
    with pytest.raises(ValueError, match="read-only"):
        info.selected[0] = True


def test_the_info_repr_shows_counts_not_which_records_are_real():
    # The dataclass repr printed the arrays: a logged or notebook-printed info told which
    # released rows were not selected (or had too few neighbours), i.e. real records unchanged.
    df = mixed_frame(n=20)
    _, info = resample(df, 1.0, modprop=0.5, selection="exact", seed=0)
    text = repr(info)
    assert "array" not in text and "True" not in text and "False" not in text
    for name in ("selected", "n_neighbours", "n_distinct_neighbours"):
        assert not re.search(rf"\b{name}=", text)
    assert text.startswith("NeighbourResampleInfo(n_records=20, n_selected=10, ")
    assert f"n_whole_copies={info.n_whole_copies}" in text


def test_memory_guard(monkeypatch):
    monkeypatch.setattr(nbmod, "MAX_NEIGHBOUR_PAIRS", 1000)
    df = mixed_frame()
    with pytest.raises(MemoryLimitError, match=r"eps=50\.0 gives about .* MAX_NEIGHBOUR_PAIRS"):
        neighbour_resample(df, 50.0, seed=0)
    with pytest.raises(MemoryError):
        neighbour_resample(df[["age", "income"]], 50.0, seed=0)


def test_constant_column_does_not_count_in_distance():
    df = pd.DataFrame({"x": [0.0, 0.1, 5.0], "c": [7, 7, 7], "s": ["a", "a", "a"]})
    _, info = resample(df, 0.5, seed=0)
    _, neighbours, _ = brute_force(df, 0.5, ["x"], [])
    np.testing.assert_array_equal(info.n_neighbours, neighbours.sum(1))


@pytest.mark.parametrize("factor", [1e200, 1e-200])
def test_huge_and_tiny_values_count_in_the_distance(factor):
    # Squaring 1e200 overflows and squaring 1e-200 underflows: the SD came out inf or 0 and the
    # variable was treated as constant, i.e. silently left out of the distance.
    rng = np.random.default_rng(3)
    df = pd.DataFrame({"v": rng.normal(size=200), "age": rng.normal(size=200)})
    dist, neighbours, _ = brute_force(df, 0.5, ["v", "age"], [])
    assert np.abs(dist[~np.eye(200, dtype=bool)] - 0.5).min() > 1e-9
    _, age_only = resample(df, 0.5, columns=["age"], seed=0)
    assert not np.array_equal(age_only.n_neighbours, neighbours.sum(1))  # v matters
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no overflow in the scaling
        _, info = resample(df.assign(v=df["v"] * factor), 0.5, seed=0)
    np.testing.assert_array_equal(info.n_neighbours, neighbours.sum(1))


# --------------------------------------------------------------------------------------------
# Validation
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("eps", [0, -1.0, float("nan"), float("inf")])
def test_bad_eps(eps):
    with pytest.raises(InputError, match=r"eps must be a finite number > 0"):
        neighbour_resample(mixed_frame(), eps)


@pytest.mark.parametrize("eps", [True, "0.3", None])
def test_eps_of_the_wrong_type(eps):
    with pytest.raises(TypeError, match=r"eps must be a real number"):
        neighbour_resample(mixed_frame(), eps)


@pytest.mark.parametrize("modprop", [-0.1, 1.5, float("nan")])
def test_bad_modprop(modprop):
    with pytest.raises(InputError, match=r"modprop must lie in \[0, 1\]"):
        neighbour_resample(mixed_frame(), 1.0, modprop=modprop)


@pytest.mark.parametrize("modprop", ["all", None, True])
def test_modprop_of_the_wrong_type(modprop):
    with pytest.raises(TypeError, match=r"modprop must be a real number"):
        neighbour_resample(mixed_frame(), 1.0, modprop=modprop)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"selection": "random"}, r"selection must be one of 'bernoulli', 'exact', got str "
                                  r"'random'"),
        ({"no_neighbours": "drop"}, r"no_neighbours must be one of 'keep', 'suppress'"),
        ({"include_coordinates": "yes"}, r"include_coordinates must be True or False"),
        ({"weights": {"height": 0.5}}, r"weights names 'height', which is not a resampled"),
        ({"weights": {"age": 0}}, r"weight of 'age' must be a finite number > 0"),
        ({"weights": {"age": -1.0}}, r"weight of 'age' must be a finite number > 0"),
        ({"weights": [("age", 0.5)]}, r"weights must be a dict"),
        ({"columns": ["age", "height"]}, r"column 'height' is not in df; available columns"),
        ({"columns": ["age", "age"]}, r"columns lists \['age'\] more than once"),
        ({"columns": []}, r"no variables to resample"),
        ({"categorical": ["sex", "height"]}, r"categorical column 'height' is not among"),
        ({"columns": ["age"], "categorical": ["sex"]}, r"categorical column 'sex' is not among"),
        ({"include_coordinates": True}, r"include_coordinates=True needs a geopandas"),
    ],
)
def test_bad_parameters(kwargs, match):
    with pytest.raises(InputError, match=match):
        neighbour_resample(mixed_frame(), 1.0, **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"eps": 1e101}, r"eps must be at most 1e\+100 .* got 1e\+101; any eps above"),
        ({"eps": 1e300, "weights": {"age": 1e200}}, r"eps must be at most 1e\+100"),
        ({"weights": {"age": 1e308}}, r"weight of 'age' must be at most 1e\+100 .*divide every"),
        ({"weights": {"sex": 1e200}}, r"weight of 'sex' must be at most 1e\+100"),
    ],
)
def test_huge_eps_or_weights_are_refused(kwargs, match):
    # (scaled value * weight)^2 or eps^2 overflowed: scipy's tree raised "The value of p too
    # large" (numeric) or math raised OverflowError (categorical)
    kwargs = {"eps": 1.0, **kwargs}
    with pytest.raises(InputError, match=match):
        neighbour_resample(mixed_frame(), **kwargs)


def test_largest_eps_and_weights_work():
    df = mixed_frame()
    _, info = resample(df, 1e100, seed=0)
    assert info.n_neighbours.tolist() == [len(df) - 1] * len(df)
    heavy = {"age": 1e100, "income": 1e100, "sex": 1e100}
    dist, neighbours, _ = brute_force(df, 1e100, list(df.columns), CATEGORICAL, heavy)
    assert np.abs(dist[~np.eye(len(df), dtype=bool)] / 1e100 - 1).min() > 1e-9
    assert 0 < neighbours.sum() < len(df) * (len(df) - 1)
    _, info = resample(df, 1e100, weights=heavy, seed=0)
    np.testing.assert_array_equal(info.n_neighbours, neighbours.sum(1))


def test_bad_seed_type():
    with pytest.raises(TypeError, match="seed must be None, an int"):
        neighbour_resample(mixed_frame(), 1.0, seed="abc")


def test_not_a_dataframe():
    with pytest.raises(InputError, match=r"df must be a pandas DataFrame .* got numpy\.ndarray"):
        neighbour_resample(np.zeros((3, 2)), 1.0)


def test_empty_frame():
    with pytest.raises(InputError, match="df has no rows"):
        neighbour_resample(mixed_frame().iloc[:0], 1.0)


def test_nan_names_column_and_rows():
    df = mixed_frame()
    df.loc[["r3", "r7"], "income"] = np.nan
    match = r"column 'income' has 2 missing \(NaN\) values \(rows \['r3', 'r7'\]\)"
    with pytest.raises(InputError, match=match):
        neighbour_resample(df, 1.0)
    df = mixed_frame()
    df["kind"] = df["kind"].where(df.index != "r5", None)
    with pytest.raises(InputError, match=r"column 'kind' has 1 missing .*'r5'"):
        neighbour_resample(df, 1.0)
    # NaN outside the resampled columns is fine
    neighbour_resample(df, 100.0, columns=["age"], seed=0)


def test_infinite_values():
    df = mixed_frame()
    df.loc["r1", "age"] = np.inf
    with pytest.raises(InputError, match=r"column 'age' has 1 infinite values \(rows \['r1'\]\)"):
        neighbour_resample(df, 1.0)


def test_unsupported_dtype():
    df = mixed_frame()
    df["when"] = pd.Timestamp("2020-01-01") + pd.to_timedelta(np.arange(300), unit="D")
    match = r"column 'when' has dtype datetime64.*leave it out of columns="
    with pytest.raises(InputError, match=match):
        neighbour_resample(df, 1.0)
    resample(df, 100.0, columns=["age", "sex"], seed=0)


def test_geometry_column_in_columns():
    match = r"columns lists the geometry column 'location'.*include_coordinates=True"
    with pytest.raises(InputError, match=match):
        neighbour_resample(mixed_gdf(), 1.0, columns=["age", "location"])


def test_coordinates_need_points():
    gdf = mixed_gdf(n=20)
    gdf.loc["r2", "location"] = LineString([(0, 0), (1, 1)])
    with pytest.raises(InputError, match=r"1 geometries are not points \(rows \['r2'\]\)"):
        neighbour_resample(gdf, 1.0, include_coordinates=True)
    gdf = mixed_gdf(n=20)
    gdf.loc["r4", "location"] = Point()
    match = r"1 records have missing or empty geometries \(rows \['r4'\]\)"
    with pytest.raises(InputError, match=match):
        neighbour_resample(gdf, 1.0, include_coordinates=True)
    gdf = mixed_gdf(n=20)
    gdf.loc["r4", "location"] = Point(1, 2, 3)
    with pytest.raises(InputError, match=r"df has 1 points with a z coordinate.*force_2d"):
        neighbour_resample(gdf, 1.0, include_coordinates=True)
    # without include_coordinates the geometry is not inspected
    neighbour_resample(gdf, 100.0, seed=0)


@pytest.mark.parametrize("name", ["columns", "categorical"])
def test_nested_column_lists_are_refused(name):
    # columns=[["age"]] raised "TypeError: unhashable type: 'list'"
    with pytest.raises(InputError, match=rf"{name} must be a column name or a flat list of "
                                         r"column names, got \['age'\] among them"):
        neighbour_resample(mixed_frame(), 1.0, **{name: [["age"], "sex"]})


def test_return_info_must_be_a_bool():
    # return_info="no" is truthy: a tuple came back where the caller expected a frame
    with pytest.raises(TypeError, match="return_info must be True or False, got str 'no'"):
        neighbour_resample(mixed_frame(), 1.0, return_info="no")


def test_duplicated_column_names():
    df = pd.DataFrame([[1.0, 2.0], [3.0, 4.0]], columns=["a", "a"])
    with pytest.raises(InputError, match=r"df has several columns named \['a'\]"):
        neighbour_resample(df, 1.0)


def test_warnings_never_name_record_labels():
    # Warnings land in logs and pasted terminals; an index of patient IDs named the records
    # released unchanged or as exact copies of another record ("rows ['PAT7']").
    df = pd.DataFrame({"age": [30, 31, 30, 31, 50, 51, 50, 90], "sex": list("ffffmmmm")},
                      index=[f"PAT{i}" for i in range(8)])
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        _, info = neighbour_resample(df, eps=0.5, seed=1, return_info=True)
    categories = {w.category for w in record}
    assert PrivacyLeakWarning in categories
    # PAT7 (age 90) has no neighbour; PAT5's two neighbours are both (50, "m")
    assert info.n_without_neighbours == 2 and info.n_whole_copies > 0
    assert not any("PAT" in str(w.message) or "rows [" in str(w.message) for w in record)


@pytest.mark.parametrize("kwargs", [
    {"no_neighbours": np.array(["keep", "suppress"])},
    {"selection": np.array(["bernoulli", "exact"])},
    {"selection": pd.Series(["exact"])},
])
def test_options_given_as_arrays_are_refused_by_name(kwargs):
    # `value not in (...)` raised NumPy's "truth value of an array is ambiguous".
    (name,) = kwargs
    with pytest.raises(InputTypeError, match=rf"^{name} must be one of .*, got (ndarray|Series) "
                                             r"of shape"):
        neighbour_resample(mixed_frame(), 1.0, **kwargs)


@pytest.mark.parametrize("name", ["columns", "categorical"])
def test_a_0d_array_of_column_names_is_refused_by_name(name):
    # list(np.array("age")) raised "TypeError: iteration over a 0-d array".
    with pytest.raises(InputTypeError, match=rf"^{name} must be a column name or a flat list of "
                                             r"column names, got ndarray of shape \(\)"):
        neighbour_resample(mixed_frame(), 1.0, **{name: np.array("age")})
    frame = neighbour_resample(mixed_frame(), 1.0, seed=1, columns=np.array(["age"]))
    assert list(frame.columns) == list(mixed_frame().columns)


def test_records_not_selected_keep_their_true_location_with_a_warning():
    # With include_coordinates, records modprop does not select are released at their true
    # location; no warning counted them (modprop=0 returned every location silently).
    gdf = mixed_gdf()
    with pytest.warns(PrivacyLeakWarning, match=r"^300 of 300 records were not selected "
                      r"for resampling \(modprop=0\) and are released unchanged, at their true "
                      r"location"):
        out = neighbour_resample(gdf, 1.0, modprop=0, include_coordinates=True, seed=1)
    pd.testing.assert_frame_equal(out, gdf)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        out, info = neighbour_resample(gdf, 1.5, modprop=0.5, selection="exact",
                                       weights=WEIGHTS, include_coordinates=True, seed=0,
                                       return_info=True)
    messages = [str(w.message) for w in record if w.category is PrivacyLeakWarning
                and "not selected" in str(w.message)]
    assert messages == [f"{int((~info.selected).sum())} of 300 records were not selected for "
                        "resampling (modprop=0.5) and are released unchanged, at their true "
                        "location. Pass modprop=1 to resample every record's coordinates"]
    assert out.geometry[~info.selected].geom_equals(gdf.geometry[~info.selected]).all()
    with warnings.catch_warnings(record=True) as record:  # every record selected: no warning
        warnings.simplefilter("always")
        neighbour_resample(gdf, 1.5, weights=WEIGHTS, include_coordinates=True, seed=0)
    assert not [w for w in record if "not selected" in str(w.message)]
    with warnings.catch_warnings(record=True) as record:  # no coordinates resampled: no warning
        warnings.simplefilter("always")
        neighbour_resample(pd.DataFrame(gdf[NUMERIC]), 1.5, modprop=0.5, seed=0)
    assert not [w for w in record if "not selected" in str(w.message)]


def test_the_output_is_a_baseline_that_the_writer_refuses_even_when_public(tmp_path):
    # Its points are records' true locations (its own, or its neighbours'): written as a
    # release, 120 of 120 points were original ones.
    gdf = pairs_gdf()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        moved = neighbour_resample(gdf, 0.5, include_coordinates=True, seed=0)
        kept = neighbour_resample(gdf, 0.5, modprop=0, seed=0)
    for out in (moved, kept):
        assert baseline_method(out) == "neighbour" and is_linked(out)
        public = to_public(out, seed=1)
        assert baseline_method(public) == "neighbour"
        with pytest.raises(InputError, match=r"made by the neighbour baseline, whose points are "
                                             r"records' true locations"):
            write_release(tmp_path / "r.gpkg", [public])
    assert list(tmp_path.iterdir()) == []
    assert gdf.attrs == {}  # the input is not marked


def test_a_missing_value_is_named_before_an_identifier_is_suspected():
    # Whole-number floats with one NaN and the others distinct were reported as an identifier
    # ("3 distinct values among 3 records"): the NaN was counted as one more value.
    df = pd.DataFrame({"age": [30.0, np.nan, 41.0, 30.0], "w": [1.0, 2.0, 3.0, 4.0]},
                      index=["a", "b", "c", "d"])
    with pytest.raises(InputError, match=r"column 'age' has 1 missing \(NaN\) values"):
        neighbour_resample(df, 0.5, columns=["age", "w"], seed=1)


def test_whole_copies_are_counted_by_the_released_values():
    """Rows drawn from several neighbours that share values are copies too (246 of 626)."""
    df = pd.DataFrame({"a": [1.0, 1.0, 2.0, 2.0, 1.5], "b": [1.0, 2.0, 1.0, 2.0, 1.5]})
    originals = set(zip(df["a"], df["b"], strict=True))
    counted = found = 0
    for seed in range(60):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            out, info = neighbour_resample(df, 3.0, seed=seed, return_info=True)
        moved = np.flatnonzero(info.selected & (info.n_distinct_neighbours >= 2))
        rows = zip(out["a"].to_numpy()[moved], out["b"].to_numpy()[moved], strict=True)
        brute = sum(row in originals for row in rows)  # another's values, or its own
        assert info.n_whole_copies == brute, seed
        counted, found = counted + info.n_whole_copies, found + brute
    assert counted > 100  # copies are common here: the check has something to count


# ---------------------------------------------------------------------- study area
def l_shaped_points(n=400, seed=1):
    """``n`` points uniform in an L of two 1000 x 200 m arms, with an age and a sex."""
    rng = np.random.default_rng(seed)
    area = shapely.union(shapely.box(0, 0, 1000, 200), shapely.box(0, 0, 200, 1000))
    xy = np.empty((0, 2))
    while len(xy) < n:
        candidates = rng.uniform(0, 1000, (4 * n, 2))
        xy = np.vstack([xy, candidates[shapely.contains_xy(area, *candidates.T)]])
    frame = pd.DataFrame({"age": rng.integers(20, 80, n), "sex": rng.choice(["f", "m"], n)})
    return area, gpd.GeoDataFrame(frame, geometry=gpd.points_from_xy(*xy[:n].T), crs=CRS)


def test_resampled_points_stay_in_the_region_and_out_of_no_go_areas():
    # x from one neighbour and y from another put 15 of 400 points outside an L-shaped area.
    area, gdf = l_shaped_points()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        free = neighbour_resample(gdf, 1.5, include_coordinates=True, seed=1)
        assert (~free.geometry.within(area)).sum() > 5  # the method alone leaves the L
        lake = shapely.box(300, 0, 500, 100)
        kept = neighbour_resample(gdf, 1.5,
                                  include_coordinates=True, seed=1, region=area,
                                  exclude=gpd.GeoSeries([lake], crs=CRS))
    xy = shapely.get_coordinates(kept.geometry.array)
    assert shapely.intersects_xy(area, *xy.T).all()
    assert not shapely.contains_xy(lake, *xy.T).any()
    assert len(kept) == len(gdf)


def test_a_region_holding_every_draw_changes_nothing():
    area, gdf = l_shaped_points(n=200)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        free = neighbour_resample(gdf, 1.0, include_coordinates=True, seed=4)
        whole = neighbour_resample(gdf, 1.0, include_coordinates=True, seed=4,
                                   region=shapely.box(-1, -1, 1001, 1001))
    pd.testing.assert_frame_equal(free, whole)


def test_a_point_that_cannot_be_redrawn_into_the_area_takes_a_real_point_in_it():
    # Of three records only the first lies in the area. The others' crossed coordinates can
    # reach it (x and y of the first); the first's neighbours have no x or y that can, so
    # after the redraws it takes a neighbour's point in the area, and there is none but its
    # own. Every released point is then that real location, and the warning counts them.
    gdf = gpd.GeoDataFrame({"v": [1.0, 1.0, 1.0]},
                           geometry=gpd.points_from_xy([0, 10, 20], [0, 10, 20]), crs=CRS)
    with pytest.warns(PrivacyLeakWarning, match="3 of 3 resampled records are released at "
                                                "the exact location of an original record"):
        out = neighbour_resample(gdf, 100.0, include_coordinates=True, seed=2,
                                 region=Point(0, 0).buffer(1))
    assert shapely.get_coordinates(out.geometry.array).tolist() == [[0.0, 0.0]] * 3


@pytest.mark.parametrize(("options", "match"), [
    ({"region": shapely.box(0, 0, 1, 1)}, "pass include_coordinates=True"),
    ({"region": shapely.box(5000, 5000, 6000, 6000), "include_coordinates": True},
     "no record's point lies in region"),
])
def test_a_region_is_refused_where_it_cannot_apply(options, match):
    _, gdf = l_shaped_points(n=50)
    with pytest.raises(InputError, match=match):
        neighbour_resample(gdf, 1.0, seed=1, **options)
