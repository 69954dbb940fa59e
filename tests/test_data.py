import dataclasses
import re
import warnings

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy import stats
from shapely.geometry import LineString, Point, Polygon, box

from geosynth import data as data_module
from geosynth.data import (
    CELL_COLUMN,
    COUNT_COLUMN,
    EXTREME_COLUMNS,
    Z_SUM_COLUMN,
    CellCounts,
    count_table,
    counts_from_table,
    fenced_values,
    group_extremes,
    locate_records,
    prepare,
    value_fences,
)
from geosynth.errors import (
    CRSError,
    DataWarning,
    InputError,
    InputTypeError,
    MemoryLimitError,
    PrivacyLeakWarning,
)
from geosynth.lattice import Grid

CRS = "EPSG:31983"  # SIRGAS 2000 / UTM 23S, metres


def make_gdf(n=40, seed=0, crs=CRS, index=None):
    rng = np.random.default_rng(seed)
    data = {
        "sex": rng.choice(["m", "f"], n),
        "age": rng.choice([3, 1, 2], n),
        "z": rng.normal(10.0, 2.0, n),
    }
    geometry = gpd.points_from_xy(rng.uniform(0, 10, n), rng.uniform(0, 10, n))
    return gpd.GeoDataFrame(data, geometry=geometry, crs=crs, index=index)


@pytest.fixture
def gdf():
    return make_gdf(index=[f"r{i}" for i in range(40)])


@pytest.fixture
def grid():
    return Grid.regular((0, 0, 10, 10), shape=(4, 4), crs=CRS)


def clipped_grid():
    """2 x 2 lattice clipped to a triangle (NE cell dropped) with a small no-go square."""
    region = Polygon([(0, 0), (10, 0), (0, 10)])
    return Grid.regular(
        (0, 0, 10, 10), shape=(2, 2), crs=CRS, region=region, exclude=box(1, 1, 2, 2)
    )


# --------------------------------------------------------------------------- basic behaviour


def test_prepare_counts_and_combos(gdf, grid):
    cc = prepare(gdf, grid, ["sex", "age"])
    assert isinstance(cc, CellCounts)
    assert cc.counts.shape == (16, cc.n_combos) and cc.counts.dtype == np.int64
    assert cc.counts.sum() == cc.n_records == 40
    assert cc.levels == {"sex": ["f", "m"], "age": [1, 2, 3]}
    assert list(cc.combos.columns) == ["sex", "sex_code", "age", "age_code", "n_records"]
    assert cc.combos["sex_code"].dtype == np.int64 and cc.combos["age_code"].dtype == np.int64
    codes = cc.combo_codes
    assert codes.shape == (cc.n_combos, 2) and codes.dtype == np.int64
    # lexicographic order by codes, each combination present
    assert [tuple(r) for r in codes] == sorted(tuple(r) for r in codes)
    assert (cc.combos["n_records"] > 0).all()
    assert cc.combos["n_records"].sum() == 40
    np.testing.assert_array_equal(cc.counts.sum(axis=0), cc.combos["n_records"])
    assert cc.zbar is None and cc.zbar_mask is None and cc.zbar_mean is None and cc.zbar_sd is None
    pd.testing.assert_index_equal(cc.record_index, gdf.index)
    np.testing.assert_array_equal(cc.record_cell, grid.locate(gdf))


def test_baseline_is_first_sorted_level(grid):
    df = make_gdf(n=30, seed=3)
    df["grp"] = np.where(np.arange(30) % 3 == 0, "zeta", np.where(np.arange(30) % 3 == 1, "b", "A"))
    cc = prepare(df, grid, ["grp", "age"])
    assert cc.levels["grp"] == sorted(["zeta", "b", "A"]) == ["A", "b", "zeta"]
    baseline = cc.combos.loc[cc.combos["grp_code"] == 0, "grp"]
    assert set(baseline) == {"A"}
    assert cc.combos.loc[0, "grp"] == "A" and cc.combos.loc[0, "age"] == 1
    assert cc.combos.loc[0, "age_code"] == 0


def test_categorical_keeps_category_order_of_observed_levels(gdf, grid):
    gdf["sex"] = pd.Categorical(gdf["sex"], categories=["x", "m", "f"])  # "x" never observed
    cc = prepare(gdf, grid, ["sex"])
    assert cc.levels["sex"] == ["m", "f"]
    assert cc.combos["sex"].astype(str).tolist() == ["m", "f"]
    assert cc.combos["sex_code"].tolist() == [0, 1]
    values = gdf["sex"].astype(str).to_numpy()
    np.testing.assert_array_equal(cc.combos["sex"].astype(str).to_numpy()[cc.record_combo], values)


def test_single_attribute_given_as_string(gdf, grid):
    cc = prepare(gdf, grid, "sex")
    assert cc.attributes == ("sex",) and cc.n_combos == 2


def test_cellcounts_is_frozen_and_read_only(gdf, grid):
    cc = prepare(gdf, grid, ["sex"], continuous="z")
    with pytest.raises(dataclasses.FrozenInstanceError):
        cc.counts = np.zeros((1, 1), dtype=np.int64)
    for arr in (cc.counts, cc.record_cell, cc.record_combo, cc.zbar, cc.zbar_mask, cc.zbar_sd):
        with pytest.raises(ValueError, match="read-only"):
            arr[0] = 1


def test_summary_and_repr(gdf, grid):
    cc = prepare(gdf, grid, ["sex", "age"], continuous="z")
    summary = cc.summary()
    assert list(summary.columns) == [
        "sex",
        "age",
        "n_records",
        "n_nonempty_cells",
        "max_count",
        "zbar_mean",
        "zbar_sd",
    ]
    np.testing.assert_array_equal(summary["n_nonempty_cells"], (cc.counts > 0).sum(axis=0))
    np.testing.assert_array_equal(summary["max_count"], cc.counts.max(axis=0))
    np.testing.assert_array_equal(summary["zbar_sd"], cc.zbar_sd)
    text = repr(cc)
    assert text.startswith("CellCounts(n_records=40, n_cells=16, n_combos=")
    assert "continuous='z'" in text and len(text) < 200
    assert "zbar_mean" not in prepare(gdf, grid, ["sex"]).summary().columns


# --------------------------------------------------------------------------- validation


def test_not_a_geodataframe(gdf, grid):
    with pytest.raises(InputError, match=r"GeoDataFrame, got pandas\..*DataFrame"):
        prepare(pd.DataFrame(gdf.drop(columns="geometry")), grid, ["sex"])
    with pytest.raises(InputError, match="got builtins.list"):
        prepare([1, 2], grid, ["sex"])


def test_empty_gdf(gdf, grid):
    with pytest.raises(InputError, match="no rows"):
        prepare(gdf.iloc[:0], grid, ["sex"])


def test_no_active_geometry(gdf, grid):
    frame = gpd.GeoDataFrame(pd.DataFrame(gdf.drop(columns="geometry")))
    with pytest.raises(InputError, match="no active geometry.*set_geometry"):
        prepare(frame, grid, ["sex"])


def test_missing_and_empty_geometries_list_rows(gdf, grid):
    gdf.loc[["r1", "r4"], "geometry"] = None
    gdf.loc["r7", "geometry"] = Point()
    with pytest.raises(InputError, match=r"3 records have missing or empty.*\['r1', 'r4', 'r7'\]"):
        prepare(gdf, grid, ["sex"])


def test_many_bad_rows_are_truncated(gdf, grid):
    gdf.loc[gdf.index[:8], "geometry"] = None
    with pytest.raises(InputError, match=r"'r0', 'r1', 'r2', 'r3', 'r4'\] and 3 more"):
        prepare(gdf, grid, ["sex"])


def test_non_point_geometries(gdf, grid):
    gdf.loc["r2", "geometry"] = LineString([(1, 1), (2, 2)])
    with pytest.raises(InputError, match=r"not points \(\['LineString'\].*'r2'.*explode"):
        prepare(gdf, grid, ["sex"])


def test_non_finite_coordinates(gdf, grid):
    gdf.loc["r3", "geometry"] = Point(np.inf, 1.0)
    with pytest.raises(InputError, match=r"NaN or infinite coordinates \(rows \['r3'\]\)"):
        prepare(gdf, grid, ["sex"])


def test_missing_crs(gdf, grid):
    with pytest.raises(CRSError, match=r"no CRS while the grid uses EPSG:31983.*set_crs"):
        prepare(gdf.set_crs(None, allow_override=True), grid, ["sex"])


def test_crs_mismatch(gdf, grid):
    moved = gdf.to_crs("EPSG:3857")
    with pytest.raises(CRSError, match=r"EPSG:3857 differs.*EPSG:31983.*gdf\.to_crs\(grid\.crs\)"):
        prepare(moved, grid, ["sex"])


def test_geographic_crs(gdf, grid):
    with pytest.raises(CRSError, match=r"geographic.*degrees.*gdf\.to_crs\(gdf\.estimate_utm_crs"):
        prepare(gdf.to_crs("EPSG:4326"), grid, ["sex"])
    unprojected = Grid.regular((0, 0, 10, 10), shape=(2, 2))
    with pytest.raises(CRSError, match="estimate_utm_crs"):
        prepare(gdf.to_crs("EPSG:4326"), unprojected, ["sex"])


def test_no_crs_on_either_side_is_accepted(gdf):
    bare = Grid.regular((0, 0, 10, 10), shape=(2, 2))
    cc = prepare(gdf.set_crs(None, allow_override=True), bare, ["sex"])
    assert cc.n_records == 40


def test_missing_attribute_lists_columns(gdf, grid):
    with pytest.raises(
        InputError, match=r"attribute 'race' is not a column.*\['sex', 'age', 'z'\]"
    ):
        prepare(gdf, grid, ["sex", "race"])
    with pytest.raises(InputError, match="attribute 'geometry' is not a column"):
        prepare(gdf, grid, ["geometry"])


def test_missing_continuous_lists_columns(gdf, grid):
    with pytest.raises(InputError, match=r"continuous column 'income' is not a column.*'sex'"):
        prepare(gdf, grid, ["sex"], continuous="income")


def test_empty_and_duplicated_attributes(gdf, grid):
    with pytest.raises(InputError, match=r"attributes is empty.*\['sex', 'age', 'z'\]"):
        prepare(gdf, grid, [])
    with pytest.raises(InputError, match=r"lists \['sex'\] more than once"):
        prepare(gdf, grid, ["sex", "age", "sex"])


def test_continuous_also_attribute(gdf, grid):
    with pytest.raises(InputError, match="'age' is also listed in attributes"):
        prepare(gdf, grid, ["sex", "age"], continuous="age")


def test_attribute_name_clash_with_combos_columns(gdf, grid):
    gdf["sex_code"] = gdf["sex"]
    with pytest.raises(InputError, match=r"\['sex_code'\] clash.*rename"):
        prepare(gdf, grid, ["sex", "sex_code"])


def test_nan_in_attribute(gdf, grid):
    gdf.loc[["r5", "r9"], "sex"] = None
    with pytest.raises(InputError, match=r"attribute 'sex' has 2 missing.*\['r5', 'r9'\].*dropna"
                       r".*text such as NA, None or null is read as missing unless "
                       r"na_values=\[\] is given\)$"):
        prepare(gdf, grid, ["sex"])


@pytest.mark.parametrize("kind", ["float", "object"])
def test_an_infinite_attribute_value_is_refused(gdf, grid, kind):
    # A ratio divided by zero became a level 'inf', counted and synthesized without a word.
    values = np.arange(len(gdf)) % 3 + 0.5
    gdf["ratio"] = pd.Series(values, index=gdf.index, dtype=kind)
    gdf.loc["r5", "ratio"] = np.inf
    gdf.loc["r9", "ratio"] = -np.inf
    with pytest.raises(InputError, match=r"attribute 'ratio' has 2 infinite values.*"
                                         r"\['r5', 'r9'\].*replace\(\[np.inf, -np.inf\]"):
        prepare(gdf, grid, ["ratio"])
    gdf["ratio"] = gdf["ratio"].replace([np.inf, -np.inf], 9.5)
    assert prepare(gdf, grid, ["ratio"]).n_records == len(gdf)


def test_an_infinite_category_is_refused(gdf, grid):
    # A categorical column (e.g. pd.cut labels kept as floats, or astype("category") of a
    # ratio) slipped past the check: its dtype is neither float nor object.
    values = np.arange(len(gdf)) % 3 + 0.5
    values[[5, 9]] = [np.inf, -np.inf]
    gdf["ratio"] = pd.Categorical(values)
    with pytest.raises(InputError, match=r"attribute 'ratio' has 2 infinite values.*"
                                         r"\['r5', 'r9'\]"):
        prepare(gdf, grid, ["ratio"])
    gdf["ratio"] = pd.Categorical(np.where(np.isinf(values), 9.5, values))
    assert prepare(gdf, grid, ["ratio"]).levels["ratio"] == [0.5, 1.5, 2.5, 9.5]


@pytest.mark.parametrize("attributes", [None, 123])
def test_attributes_that_are_no_column_names_are_refused(gdf, grid, attributes):
    with pytest.raises(InputError, match=rf"attributes must be a column name or a list of "
                                         rf"column names, got {type(attributes).__name__} "
                                         rf"{attributes}"):
        prepare(gdf, grid, attributes)


@pytest.mark.parametrize("flag", [True, np.True_])
def test_an_attribute_of_booleans_and_numbers_is_refused(gdf, grid, flag):
    # True == 1 and they hash alike: the True records were counted as level 1. (On a declared
    # domain they are dropped instead: test_data_checks.py.)
    gdf["code"] = pd.Series([flag if k % 3 == 0 else k % 3 for k in range(len(gdf))],
                            index=gdf.index, dtype=object)
    with pytest.raises(InputError, match=r"attribute 'code' holds both booleans and numbers.*"
                                         r"astype\(str\)"):
        prepare(gdf, grid, ["sex", "code"])
    gdf["code"] = gdf["code"].astype(str)  # the fix the message gives: three levels
    assert prepare(gdf, grid, ["sex", "code"]).levels["code"] == ["1", "2", "True"]
    gdf["code"] = pd.Series([k % 2 == 0 for k in range(len(gdf))], index=gdf.index, dtype=object)
    assert prepare(gdf, grid, ["code"]).levels["code"] == [False, True]  # booleans alone


def test_nan_in_continuous(gdf, grid):
    gdf.loc["r6", "z"] = np.nan
    with pytest.raises(InputError, match=r"continuous column 'z' has 1 missing.*\['r6'\]") as err:
        prepare(gdf, grid, ["sex"], continuous="z")
    assert "na_values" not in str(err.value)  # a missing number is no text read as missing


def test_infinite_continuous(gdf, grid):
    gdf.loc["r8", "z"] = -np.inf
    with pytest.raises(InputError, match=r"'z' has 1 infinite values \(rows \['r8'\]\)"):
        prepare(gdf, grid, ["sex"], continuous="z")


def test_continuous_values_that_overflow_the_sd_are_refused(gdf, grid):
    # Their squares overflow: the cell means' SD became inf, fell back to 1, and the fit failed
    # later with a message naming no column.
    gdf.loc["r8", "z"] = 3e199
    with pytest.raises(InputError, match=r"'z' has 1 values beyond ±1e\+100 \(rows \['r8'\]\); "
                                         r"rescale the column"):
        prepare(gdf, grid, ["sex"], continuous="z")
    gdf.loc["r8", "z"] = 3e99
    assert np.isfinite(prepare(gdf, grid, ["sex"], continuous="z").zbar_sd).all()


@pytest.mark.parametrize(("values", "advice"), [
    (["12,5", "8,25", "3,75"], r"decimal comma \('12,5'\): read the file with decimal=','"),
    (["12,500", "8,250", "3,750"], r"a thousands separator \('12,500': read the file with "
                                   r"thousands=','\) or a decimal comma"),
])
def test_a_continuous_column_of_comma_numbers_is_told_how_to_read_it(gdf, grid, values, advice):
    # "12,500" read as English thousands was advised decimal=',' alone: 1,000 times too small
    gdf["z"] = np.resize(np.array(values, dtype=object), len(gdf))
    with pytest.raises(InputError, match=advice):
        prepare(gdf, grid, ["sex"], continuous="z")


@pytest.mark.parametrize("dtype", ["uint64", "Int64"])
def test_integers_float64_does_not_hold_are_refused_as_such(gdf, grid, dtype):
    # 2**64 - 1 and 2**64 - 2 became one float: refused as "the same value in every record"
    big = 2**64 - 1 if dtype == "uint64" else 2**62 + 1
    steps = (np.arange(len(gdf)) % 3).astype(np.uint64)
    gdf["z"] = pd.array(np.uint64(big) - steps, dtype=dtype)
    with pytest.raises(InputError, match=r"'z' has integers beyond 2\*\*53 that float64 does "
                                         r"not hold exactly \(rows \['r0', "):
        prepare(gdf, grid, ["sex"], continuous="z")
    gdf["z"] = pd.array(np.uint64(2**54) * (steps + np.uint64(1)), dtype=dtype)  # exact: used
    assert prepare(gdf, grid, ["sex"], continuous="z").zbar is not None


@pytest.mark.parametrize("name", ["id", "person_id", "patientId", "Unnamed: 0"])
def test_a_continuous_column_named_like_an_identifier_is_refused(gdf, grid, name):
    # --continuous id was released with synthetic values following the records' order (r =
    # 0.66 with the synthetic northing of records sorted by northing); --attributes id was
    # refused by its levels.
    values = np.random.default_rng(1).normal(size=len(gdf))
    with pytest.raises(InputError, match=f"continuous column '{name}' is named like a record "
                                         "identifier.*drop it from continuous="):
        prepare(gdf.assign(**{name: values}), grid, ["sex"], continuous=name)


def test_a_continuous_column_of_row_numbers_is_refused(gdf, grid):
    n = len(gdf)
    # Ids with one number missing, or numbered in steps of 2, passed the first check (which
    # wanted every number of the range once): released, they followed the records' order.
    one_gap = np.delete(np.arange(1001, 1002 + n), n // 2)
    for run in (np.arange(n), np.arange(1017, 1017 + n)[::-1] * 1.0, np.arange(n) * 2,
                one_gap):
        with pytest.raises(InputError, match=rf"'seq' holds {n:,} distinct whole numbers \(or "
                                             r"multiples of one step\) in a nearly regular run"):
            prepare(gdf.assign(seq=run), grid, ["sex"], continuous="seq")
    # shifted or scaled ids (arange(n) + 0.5, 0.1 * id) passed as measurements
    for run in (np.arange(n) + 0.5, 0.1 * np.arange(1017, 1017 + n), np.arange(n) * 0.37 - 4):
        with pytest.raises(InputError, match=r"multiples of one step\) in a nearly regular"):
            prepare(gdf.assign(seq=run), grid, ["sex"], continuous="seq")
    # Scaled ids issued in steps of 2 and 3 (their smallest gap is not the grid's step), and
    # scaled or shifted ids with one outlier (it stretched the range past the step).
    rng = np.random.default_rng(4)
    issued = 0.1 * rng.permutation(np.cumsum(rng.choice([2, 3], 300)))
    outlier = np.r_[0.01 * rng.permutation(299), 1e4]
    for run in (issued, outlier, np.r_[np.arange(299) + 0.5, 1e7 + 0.5]):
        with pytest.raises(InputError, match=r"multiples of one step\)"):
            prepare(make_gdf(n=300, seed=8).assign(seq=run), grid, ["sex"], continuous="seq")
    # Visit numbers drawn from 1-600 for 300 records: distinct and dense, steps of 1 to 4. A
    # measurement's 300 values in 600 would collide (probability of none: about e^-75).
    many = make_gdf(n=300, seed=8)
    visits = np.random.default_rng(8).choice(np.arange(1, 601), 300, replace=False)
    with pytest.raises(InputError, match="in a nearly regular run"):
        prepare(many.assign(seq=visits), grid, ["sex"], continuous="seq")
    # 300 distinct values among 10,000 are not dense: a measurement may take them.
    spread = np.random.default_rng(9).choice(np.arange(10_000), 300, replace=False)
    assert prepare(many.assign(seq=spread), grid, ["sex"], continuous="seq").zbar is not None
    # Distinct whole numbers unevenly spaced, as rounded measurements are, pass.
    rng = np.random.default_rng(3)
    measured = np.cumsum(rng.integers(1, 40, n))
    assert prepare(gdf.assign(seq=measured), grid, ["sex"], continuous="seq").zbar is not None


def test_a_continuous_column_of_record_numbers_with_gaps_is_warned_about(grid):
    # A study's medical record numbers, sequential with gaps of 1 to 50, passed without a word:
    # 500 distinct whole numbers over about 12,750, which a measurement's would all avoid
    # repeating with probability about e^-9.8.
    many = make_gdf(n=500, seed=8)
    rng = np.random.default_rng(0)
    numbers = 5_000_000 + np.cumsum(rng.integers(1, 51, 500))
    with pytest.warns(PrivacyLeakWarning, match=r"'regnum' holds 500 distinct whole numbers, "
                                                r"more densely than a measurement's"):
        prepare(many.assign(regnum=numbers * 1.0), grid, ["sex"], continuous="regnum")
    # incomes in whole units over a range of 200,000 may all differ (about e^-0.6): no warning
    incomes = rng.choice(np.arange(500, 200_000), 500, replace=False) * 1.0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        prepare(many.assign(income=incomes), grid, ["sex"], continuous="income")
    assert not [w for w in caught if "distinct whole numbers" in str(w.message)]


def test_a_continuous_column_that_does_not_vary_is_refused_by_prepare(gdf, grid):
    # A constant column was fitted and refused only by synthesize ("one cell mean for every
    # record"); values of the order of 1e-310 got the same message.
    with pytest.raises(InputError, match=r"'z' has the same value in every record .*drop it "
                                         r"from continuous="):
        prepare(gdf.assign(z=5.0), grid, ["sex"], continuous="z")
    spread = np.random.default_rng(5).uniform(1.0, 2.0, len(gdf))  # not an evenly spaced run
    with pytest.raises(InputError, match=r"'z' varies by less than 1e-154 .*rescale it"):
        prepare(gdf.assign(z=spread * 1e-310), grid, ["sex"], continuous="z")
    counts = prepare(gdf.assign(z=spread * 1e-150), grid, ["sex"], continuous="z")
    assert np.isfinite(counts.zbar).all() and counts.zbar.std() > 0
    # 37.25 with a jitter of 1e-9: every synthetic value was 37.25, and β was fitted on the
    # jitter (standardised to full scale).
    jitter = np.random.default_rng(4).normal(0.0, 1e-9, len(gdf))
    with pytest.raises(InputError, match=r"'z' varies between cells by less than 1e-08 of its "
                                         r"values: in effect one value"):
        prepare(gdf.assign(z=37.25 + jitter), grid, ["sex"], continuous="z")
    # A small relative spread that is real (a latitude to 1e-4 degrees) passes.
    assert prepare(gdf.assign(z=45.0 + spread * 1e-4), grid, ["sex"], continuous="z").zbar \
        is not None


@pytest.mark.parametrize("values", [["a", "b"] * 20, [True, False] * 20])
def test_non_numeric_continuous(gdf, grid, values):
    gdf["w"] = values
    with pytest.raises(InputError, match=r"continuous column 'w' has non-numeric.*pd\.to_numeric"):
        prepare(gdf, grid, ["sex"], continuous="w")


def test_mixed_type_attribute(gdf, grid):
    gdf["mix"] = pd.Series([1, "a"] * 20, index=gdf.index, dtype=object)
    with pytest.raises(InputError, match=r"'mix' mixes values of types \['int', 'str'\].*astype"):
        prepare(gdf, grid, ["mix"])


@pytest.mark.parametrize("values", [[[1], [2]], [{"a": 1}, {"b": 2}]])
def test_attribute_of_lists_or_dicts_is_refused_naming_it(gdf, grid, values):
    gdf["bag"] = pd.Series(values * 20, index=gdf.index, dtype=object)
    with pytest.raises(InputError, match=r"attribute 'bag' mixes values of types \['(list|dict)'\]"
                                         r".*no level.*astype\(str\)"):
        prepare(gdf, grid, ["bag"])


@pytest.mark.parametrize(("named", "continuous", "levels"), [
    ("sex", None, None), ("z", "z", None), ("sex", None, {"sex": ["f", "m"]}),
])
def test_a_column_name_held_by_several_columns_is_refused(gdf, grid, named, continuous, levels):
    # gdf[name] is then a DataFrame: a raw AttributeError, or every record dropped as "outside
    # the declared levels" with levels=.
    frame = gdf.assign(copy=gdf[named]).rename(columns={"copy": named})
    with pytest.raises(InputError, match=rf"several columns named \['{named}'\]; .*duplicated"):
        prepare(frame, grid, ["sex"], continuous=continuous, levels=levels)


def test_multiindex_column_names_are_refused(gdf, grid):
    frame = gdf.copy()
    frame.columns = pd.MultiIndex.from_tuples([(c, "") for c in gdf.columns])
    frame = frame.set_geometry(("geometry", ""))
    with pytest.raises(InputError, match="MultiIndex .*column names; flatten them"):
        prepare(frame, grid, [("sex", "")])


def test_single_level_attribute_warns_but_works(gdf, grid):
    gdf["const"] = "only"
    with pytest.warns(DataWarning, match="'const' has a single level among the 40") as caught:
        cc = prepare(gdf, grid, ["const", "sex"])
    # the level is a value of the records (of the only one, in a one-record frame): not quoted
    assert not any("only" in str(w.message) for w in caught)
    assert cc.levels["const"] == ["only"] and cc.n_combos == 2
    assert (cc.combos["const_code"] == 0).all()


def test_more_combinations_than_records(grid):
    df = make_gdf(n=5, seed=1)
    df["id"] = np.arange(5)
    with pytest.raises(InputError, match="attribute 'id' has 5 distinct levels"):
        prepare(df, grid, ["id", "sex"])
    with (
        pytest.warns(DataWarning, match="allow_identifying=True"),
        pytest.raises(InputError, match=r"= \d+ possible combinations but only 5 records"),
    ):
        prepare(df, grid, ["id", "sex"], allow_identifying=True)


def test_memory_limit(gdf, grid):
    cc = prepare(gdf, grid, ["sex", "age"])
    need = 16 * cc.n_combos * 8
    assert prepare(gdf, grid, ["sex", "age"], max_bytes=need).n_combos == cc.n_combos
    with pytest.raises(
        MemoryLimitError, match=rf"need {need:,} bytes.*max_bytes={need - 1:,}.*coarser"
    ):
        prepare(gdf, grid, ["sex", "age"], max_bytes=need - 1)
    # zbar_mask, zbar and z_extremes add 1 + 8 + 16 bytes per pair
    with pytest.raises(MemoryLimitError, match=rf"zbar.*need {16 * cc.n_combos * 33:,} bytes"):
        prepare(gdf, grid, ["sex", "age"], continuous="z", max_bytes=need)
    with pytest.raises(MemoryError):
        prepare(gdf, grid, ["sex", "age"], max_bytes=1)


@pytest.mark.parametrize("max_bytes", [0, -5, 1.5, True, "2GB"])
def test_bad_max_bytes(gdf, grid, max_bytes):
    with pytest.raises(InputError, match="max_bytes must be a positive int"):
        prepare(gdf, grid, ["sex"], max_bytes=max_bytes)


def test_bad_grid(gdf):
    with pytest.raises(InputError, match="grid must be a geosynth.lattice.Grid, got tuple"):
        prepare(gdf, (0, 0, 1, 1), ["sex"])


@pytest.mark.parametrize("outside", ["ignore", None, "DROP"])
def test_bad_outside(gdf, grid, outside):
    # None is no str: check_choice's type error
    with pytest.raises(InputError, match=r'outside must be ("error" or "drop"|one of \'error)'):
        prepare(gdf, grid, ["sex"], outside=outside)


# --------------------------------------------------------------------------- outside points


def outside_gdf():
    xy = [(4, 4), (1.5, 1.5), (8, 8), (6, 3), (3, 6), (-1, -1), (2, 2), (5, 4.5), (0.5, 0.5)]
    labels = ["in0", "excl", "out_region", "in1", "in2", "off_lattice", "edge_excl", "in3", "in4"]
    return gpd.GeoDataFrame(
        {"g": ["a", "b", "a", "b", "a", "b", "a", "b", "a"]},
        geometry=[Point(p) for p in xy],
        crs=CRS,
        index=labels,
    )


def test_outside_error_names_count_and_rows():
    with pytest.raises(
        InputError,
        # told apart: a wider lattice is the fix for one, the region and exclusions for two
        match=r"3 of 9 points fall in no grid cell \(1 beyond the lattice's bounds, 2 within "
        r"them but outside the region or inside an excluded area\).*\['excl', 'out_region', "
        r"'off_lattice'\].*outside=\"drop\"",
    ):
        prepare(outside_gdf(), clipped_grid(), ["g"])


def test_points_between_the_hexagons_of_an_unclipped_lattice_are_not_said_outside_a_region():
    # No region nor exclusion: a point within the bounds in no cell lies in a notch between
    # hexagons, and "within them but outside the region or inside an excluded area" misled.
    grid = Grid.hexagonal((0, 0, 10, 10), cell_size=2.0)
    x0, y0, _, _ = grid.bounds
    xy = np.array([[5.0, 5.0], [4.0, 6.0], [x0 + 0.01, y0 + 0.01], [6.0, 4.0]])
    assert (grid.locate(xy) < 0).sum() == 1  # the corner of the bounds, in a notch
    gdf = gpd.GeoDataFrame({"g": ["a", "b", "a", "b"]}, geometry=gpd.points_from_xy(*xy.T))
    with pytest.raises(InputError) as caught:
        prepare(gdf, grid, ["g"])
    assert "1 of 4 points fall in no grid cell (outside the lattice" in str(caught.value)
    assert "beyond the lattice's bounds" not in str(caught.value)


def test_outside_drop_drops_exactly_unlocated_points():
    grid, df = clipped_grid(), outside_gdf()
    located = grid.locate(df)
    with pytest.warns(DataWarning, match=r"dropped 3 of 9 points.*'excl'"):
        cc = prepare(df, grid, ["g"], outside="drop")
    assert (located == -1).sum() == 3
    pd.testing.assert_index_equal(cc.record_index, df.index[located >= 0])
    np.testing.assert_array_equal(cc.record_cell, located[located >= 0])
    assert cc.n_records == 6 and cc.counts.sum() == 6 and cc.counts.shape == (grid.n_cells, 2)
    assert "edge_excl" in cc.record_index  # boundary of the excluded area counts as habitable


def test_outside_drop_everything():
    df = outside_gdf().loc[["excl", "out_region", "off_lattice"]]
    with pytest.raises(InputError, match="no record is left"):
        prepare(df, clipped_grid(), ["g"], outside="drop")


def test_levels_come_from_kept_records():
    df = outside_gdf()
    df["h"] = ["x"] * 9
    df.loc["off_lattice", "h"] = "only_outside"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        cc = prepare(df, clipped_grid(), ["g", "h"], outside="drop")
    assert cc.levels["h"] == ["x"]
    assert any("'h' has a single level among the 6 kept" in str(w.message) for w in caught)


# --------------------------------------------------------------------------- zbar


def reference_zbar(df, combo, cell, z, n_cells, n_combos):
    """zbar computed independently with pandas groupby (Nunes 2018, §2.2.1)."""
    frame = pd.DataFrame({"combo": combo, "cell": cell, "z": z})
    raw = frame.groupby(["combo", "cell"])["z"].mean()
    mean = raw.groupby(level="combo").mean()
    sd = raw.groupby(level="combo").std(ddof=1)
    sd = sd.where(sd.notna() & (sd > 0), 1.0)
    standardised = (raw - mean.reindex(raw.index, level="combo")) / sd.reindex(
        raw.index, level="combo"
    )
    expected = np.zeros((n_cells, n_combos))
    b, i = (standardised.index.get_level_values(k).to_numpy() for k in ("combo", "cell"))
    expected[i, b] = standardised.to_numpy()
    return (
        expected,
        mean.reindex(range(n_combos)).to_numpy(),
        sd.reindex(range(n_combos)).to_numpy(),
    )


def test_zbar_matches_pandas_on_continuous_data(gdf, grid):
    cc = prepare(gdf, grid, ["sex", "age"], continuous="z")
    expected, mean, sd = reference_zbar(
        gdf, cc.record_combo, cc.record_cell, gdf["z"].to_numpy(), 16, cc.n_combos
    )
    np.testing.assert_allclose(cc.zbar, expected, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(cc.zbar_mean, mean, rtol=1e-12)
    np.testing.assert_allclose(cc.zbar_sd, sd, rtol=1e-12)
    np.testing.assert_array_equal(cc.zbar_mask, cc.counts > 0)
    assert (cc.zbar[~cc.zbar_mask] == 0).all()
    # each combination: mean 0 and SD 1 over its non-empty cells
    for b in range(cc.n_combos):
        values = cc.zbar[cc.zbar_mask[:, b], b]
        if values.size >= 2:
            assert abs(values.mean()) < 1e-12 and abs(values.std(ddof=1) - 1) < 1e-12
    # back-transformation recovers the raw cell means
    raw = pd.DataFrame({"b": cc.record_combo, "i": cc.record_cell, "z": gdf["z"]})
    raw = raw.groupby(["i", "b"])["z"].mean()
    i, b = raw.index.get_level_values(0), raw.index.get_level_values(1)
    back = cc.zbar[i, b] * cc.zbar_sd[b] + cc.zbar_mean[b]
    np.testing.assert_allclose(back, raw.to_numpy(), rtol=1e-12)


def test_zbar_degenerate_sd_is_one():
    grid = Grid.regular((0, 0, 10, 10), shape=(2, 2), crs=CRS)
    xy = [(1, 1), (1, 2), (1, 3), (6, 1), (6, 6), (2, 2), (3, 3), (7, 7)]
    df = gpd.GeoDataFrame(
        {
            # "c": constant 0.1 across 3 cells with different counts (means 0.1 up to rounding)
            # "s": a single non-empty cell
            "g": ["c", "c", "c", "c", "c", "s", "s", "v"],
            "z": [0.1, 0.1, 0.1, 0.1, 0.1, 5.0, 7.0, 3.0],
        },
        geometry=[Point(p) for p in xy],
        crs=CRS,
    )
    cc = prepare(df, grid, ["g"], continuous="z")
    np.testing.assert_array_equal(cc.zbar_sd, [1.0, 1.0, 1.0])
    np.testing.assert_allclose(cc.zbar_mean, [0.1, 6.0, 3.0], rtol=1e-15)
    np.testing.assert_allclose(cc.zbar, 0.0, atol=1e-15)
    assert cc.zbar_mask.sum(axis=0).tolist() == [3, 1, 1]


# --------------------------------------------------------------------------- properties

PROPERTY_GRID = Grid.regular(
    (0, 0, 12, 9),
    shape=(3, 4),
    crs=CRS,
    exclude=box(8, 6, 12, 9),  # drops the NE cell
)


@st.composite
def records(draw):
    n = draw(st.integers(1, 60))
    coord = st.floats(-2, 14, allow_nan=False, allow_infinity=False)
    xs = draw(st.lists(coord, min_size=n, max_size=n))
    ys = draw(st.lists(coord, min_size=n, max_size=n))
    a = draw(st.lists(st.sampled_from(["q", "p", "r"]), min_size=n, max_size=n))
    b = draw(st.lists(st.sampled_from([10, -1]), min_size=n, max_size=n))
    z = draw(st.lists(st.integers(-200, 200).map(lambda v: v / 4), min_size=n, max_size=n))
    labels = draw(st.lists(st.integers(0, 10**6), min_size=n, max_size=n, unique=True))
    return gpd.GeoDataFrame(
        {"a": a, "b": b, "z": z}, geometry=gpd.points_from_xy(xs, ys), crs=CRS, index=labels
    )


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records())
def test_properties_against_pandas(df):
    grid = PROPERTY_GRID
    located = grid.locate(df)
    kept = df[located >= 0].assign(cell=located[located >= 0])
    n_levels = kept["a"].nunique() * kept["b"].nunique()
    # Tiny draws have attributes unique to every record; the identifying rules have their own
    # tests, this one checks the counting.
    options = {"continuous": "z", "outside": "drop", "allow_identifying": True}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        if len(kept) == 0 or n_levels > len(kept):
            with pytest.raises(InputError, match="no record is left|possible combinations"):
                prepare(df, grid, ["a", "b"], **options)
            return
        means = kept.groupby(["cell", "a", "b"])["z"].mean()
        if len(means) > 1 and means.nunique() == 1:  # a covariate that does not vary
            with pytest.raises(InputError, match="same value in every record"):
                prepare(df, grid, ["a", "b"], **options)
            return
        cc = prepare(df, grid, ["a", "b"], **options)

    # kept records: exactly those located, in input order
    pd.testing.assert_index_equal(cc.record_index, kept.index)
    np.testing.assert_array_equal(cc.record_cell, kept["cell"].to_numpy())
    assert cc.counts.sum() == cc.n_records == len(kept)

    # combinations: sorted levels, present combinations in lexicographic order
    assert cc.levels == {"a": sorted(set(kept["a"])), "b": sorted(set(kept["b"]))}
    groups = kept.groupby(["a", "b"]).size()
    assert list(zip(cc.combos["a"], cc.combos["b"], strict=True)) == list(groups.index)
    np.testing.assert_array_equal(cc.combos["n_records"], groups.to_numpy())

    # each record's combination carries its own attribute values and codes
    np.testing.assert_array_equal(cc.combos["a"].to_numpy()[cc.record_combo], kept["a"])
    np.testing.assert_array_equal(cc.combos["b"].to_numpy()[cc.record_combo], kept["b"])
    codes = cc.combo_codes[cc.record_combo]
    np.testing.assert_array_equal(np.asarray(cc.levels["a"])[codes[:, 0]], kept["a"])
    np.testing.assert_array_equal(np.asarray(cc.levels["b"])[codes[:, 1]], kept["b"])

    # counts equal a groupby of (cell, combination) sizes
    combo = kept.groupby(["a", "b"]).ngroup().to_numpy()
    np.testing.assert_array_equal(cc.record_combo, combo)
    sizes = pd.DataFrame({"cell": kept["cell"], "combo": combo}).groupby(["cell", "combo"]).size()
    expected = np.zeros((grid.n_cells, cc.n_combos), dtype=np.int64)
    expected[sizes.index.get_level_values(0), sizes.index.get_level_values(1)] = sizes.to_numpy()
    np.testing.assert_array_equal(cc.counts, expected)

    # zbar equals groupby means standardised within each combination
    zbar, mean, sd = reference_zbar(
        kept, combo, kept["cell"].to_numpy(), kept["z"].to_numpy(), grid.n_cells, cc.n_combos
    )
    np.testing.assert_allclose(cc.zbar, zbar, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(cc.zbar_mean, mean, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(cc.zbar_sd, sd, rtol=1e-9)
    np.testing.assert_array_equal(cc.zbar_mask, expected > 0)


# --------------------------------------------------------------------------- issue 14


def big_gdf(n=3000, seed=5):
    """``n`` records with a stop ID, a string ID, exact amounts and ordinary attributes."""
    rng = np.random.default_rng(seed)
    return gpd.GeoDataFrame(
        {
            "idNum": rng.permutation(n) + 100_000,
            "code": [f"A{i:05d}" for i in rng.permutation(n)],
            "amount": rng.lognormal(3.0, 1.0, n),
            "sex": rng.choice(["m", "f"], n),
            "age": rng.integers(18, 90, n),
            "district": rng.choice([f"d{k}" for k in range(40)], n),
        },
        geometry=gpd.points_from_xy(rng.uniform(0, 10, n), rng.uniform(0, 10, n)),
        crs=CRS,
    )


@pytest.mark.parametrize("column", ["idNum", "code", "amount"])
def test_record_identifying_attribute_is_refused(grid, column):
    df = big_gdf()
    with pytest.raises(
        InputError,
        match=rf"attribute '{column}' has 3,000 distinct levels among 3,000 records, 3,000 of "
        rf"them held by a single record.*Drop the column '{column}', or coarsen it into groups"
        r".*allow_identifying=True \(CLI: --allow-identifying\) only if its levels are public",
    ):
        prepare(df, grid, ["sex", column])
    with pytest.warns(DataWarning, match=rf"'{column}' has 3,000 distinct levels.*kept because"):
        counts = prepare(df, grid, [column], allow_identifying=True)
    assert len(counts.levels[column]) == 3000


def test_ordinary_attributes_pass_the_identifying_check(grid):
    df = big_gdf()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        counts = prepare(df, grid, ["sex", "age"])
        assert prepare(df, grid, ["district"]).n_combos == 40
    assert counts.n_records == 3000 and len(counts.levels["age"]) == 72


def test_nearly_unique_and_singleton_rich_attributes_are_refused(grid):
    df = big_gdf(n=200)
    # 120 levels for 200 records (more than half): nearly unique, although 80 levels are pairs
    df["pairs"] = np.r_[np.arange(80).repeat(2), np.arange(80, 120)]
    with pytest.raises(InputError, match=r"'pairs' has 120 distinct levels among 200 records, "
                                         r"40 of them held by a single record"):
        prepare(df, grid, ["pairs"])
    # few levels, but 11 records (5.5%) alone in theirs
    df["rare"] = np.r_[np.zeros(189, dtype=int), np.arange(1, 12)]
    with pytest.raises(InputError, match=r"'rare' has 12 distinct levels.*11 of them held by"):
        prepare(df, grid, ["rare"])
    # 10 singletons (5% exactly) and 4 singletons in small data are not enough
    df["rare"] = np.r_[np.zeros(190, dtype=int), np.arange(1, 11)]
    assert prepare(df, grid, ["rare"]).levels["rare"][-1] == 10
    tiny = make_gdf(n=8, seed=2)
    tiny["ward"] = np.r_[0, 0, 0, 0, 1, 2, 3, 4]
    assert prepare(tiny, grid, ["ward"]).n_combos == 5


@pytest.mark.parametrize("n", [2, 4])
def test_an_attribute_unique_to_every_record_of_tiny_data_is_refused(grid, n):
    # Below both minimums (20 records, 5 singletons) only this rule sees an ID column.
    tiny = make_gdf(n=n, seed=2)
    tiny["patient_no"] = [f"P-{k:05d}" for k in range(n)]
    with pytest.raises(InputError, match=rf"'patient_no' has {n} distinct levels among {n} "
                                         rf"records, {n} of them.*or every record alone in its"):
        prepare(tiny, grid, ["patient_no"])
    with pytest.warns(DataWarning, match="kept because allow_identifying=True"):
        prepare(tiny, grid, ["patient_no"], allow_identifying=True)


def test_identifying_check_counts_kept_records_only():
    df = big_gdf(n=40)
    df["ward"] = np.arange(40)
    df.loc[df.index[:36], "ward"] = 0  # 4 singletons among the located records, 5 with the last
    df.loc[df.index[-1], "geometry"] = Point(50, 50)  # outside the grid
    grid = Grid.regular((0, 0, 10, 10), shape=(2, 2), crs=CRS)
    with pytest.warns(DataWarning, match="dropped 1 of 40"):
        counts = prepare(df, grid, ["ward"], outside="drop")
    assert counts.n_records == 39 and len(counts.levels["ward"]) == 4


@pytest.mark.parametrize("value", [1, "yes", None])
def test_allow_identifying_must_be_bool(gdf, grid, value):
    with pytest.raises(InputError, match="allow_identifying must be True or False"):
        prepare(gdf, grid, ["sex"], allow_identifying=value)


def test_dask_frames_are_sent_to_prepare_dask(grid):
    dask_geopandas = pytest.importorskip("dask_geopandas")
    df = big_gdf(n=300)
    ddf = dask_geopandas.from_geopandas(df, npartitions=2, sort=False)
    with pytest.raises(InputError, match=r"gdf is a dask_geopandas.GeoDataFrame; .* "
                                         r"geosynth.distributed.prepare_dask\(gdf, grid, ...\)"):
        prepare(ddf, grid, ["sex"])


def test_identifying_check_on_dask_frames(grid):
    pytest.importorskip("dask_geopandas")
    import dask_geopandas

    from geosynth.distributed import prepare_dask

    df = big_gdf(n=300)
    ddf = dask_geopandas.from_geopandas(df, npartitions=2, sort=False)
    with pytest.raises(InputError, match=r"'idNum' has 300 distinct levels among 300 records"):
        prepare_dask(ddf, grid, ["idNum"])
    assert prepare_dask(ddf, grid, ["sex", "district"]).n_records == 300
    with pytest.warns(DataWarning, match="kept because allow_identifying=True"):
        prepare_dask(ddf, grid, ["idNum"], allow_identifying=True)


# --------------------------------------------------------------------------- the counting steps


def test_locate_records_is_a_count_table_of_the_records(gdf, grid):
    records = locate_records(gdf, grid, ("sex", "age"), "z")
    pd.testing.assert_index_equal(records.index, gdf.index)
    assert list(records.columns) == ["sex", "age", CELL_COLUMN, COUNT_COLUMN, Z_SUM_COLUMN,
                                     *EXTREME_COLUMNS]
    np.testing.assert_array_equal(records[CELL_COLUMN], grid.locate(gdf))
    assert (records[COUNT_COLUMN] == 1).all()
    np.testing.assert_array_equal(records[Z_SUM_COLUMN], gdf["z"])
    high1, high2, low1, low2 = EXTREME_COLUMNS  # a record's value, and none other
    np.testing.assert_array_equal(records[high1], gdf["z"])
    np.testing.assert_array_equal(records[low1], gdf["z"])
    assert (records[high2] == -np.inf).all() and (records[low2] == np.inf).all()
    bad = gdf.copy()
    bad.loc["r3", "sex"] = None
    with pytest.raises(InputError, match=r"attribute 'sex' has 1 missing \(NaN\) values"):
        locate_records(bad, grid, ("sex",))


def test_counting_by_partition_through_the_public_steps_equals_prepare(grid):
    """What geosynth.distributed.prepare_dask does, without dask: map, combine, finish."""
    df = make_gdf(n=200, seed=8)
    df["age"] = pd.Categorical(df["age"], categories=[2, 3, 1])
    df.loc[df.index[:5], "geometry"] = Point(50, 50)  # in no cell
    attributes = ("sex", "age")
    with pytest.warns(DataWarning, match="dropped 5 of 200"):
        want = prepare(df, grid, list(attributes), continuous="z", outside="drop")
    parts = [df.iloc[:70], df.iloc[70:150], df.iloc[150:]]
    tables = [count_table(locate_records(part, grid, attributes, "z"), attributes)
              for part in parts]
    table = count_table(pd.concat(tables), attributes)
    assert table[COUNT_COLUMN].sum() == 200 and len(table) < 200
    table = table[table[CELL_COLUMN] >= 0].reset_index(drop=True)
    asked = []

    def records(levels, combo_codes):
        asked.append((levels, combo_codes))
        return pd.DataFrame({"cell": want.record_cell, "combo": want.record_combo,
                             Z_SUM_COLUMN: df.loc[want.record_index, "z"].to_numpy()},
                            index=want.record_index)

    got = counts_from_table(table, grid, attributes, "z", records=records)
    assert asked[0][0] == want.levels == {"sex": ["f", "m"], "age": [2, 3, 1]}
    np.testing.assert_array_equal(asked[0][1], want.combo_codes)
    np.testing.assert_array_equal(got.counts, want.counts)
    pd.testing.assert_frame_equal(got.combos, want.combos)
    np.testing.assert_allclose(got.zbar, want.zbar, rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(got.zbar_mask, want.zbar_mask)
    np.testing.assert_allclose(got.z_extremes, want.z_extremes, rtol=1e-12)  # NaN where equal
    np.testing.assert_array_equal(got.z_fences, want.z_fences)
    # The cell means are taken from the records' clipped values, which records must give.
    with pytest.raises(InputError, match=f"records returned no column '{Z_SUM_COLUMN}'"):
        counts_from_table(table, grid, attributes, "z",
                          records=lambda levels, codes: records(levels, codes).iloc[:, :2])
    one_each = locate_records(df.iloc[5:], grid, attributes, "z")
    with pytest.raises(InputError, match=f"table has no column '{Z_SUM_COLUMN}'"):
        counts_from_table(one_each.drop(columns=Z_SUM_COLUMN), grid, attributes, "z")
    # A grouped table cannot say where its records are.
    with pytest.raises(InputError, match="pass records="):
        counts_from_table(table, grid, attributes, "z")
    with pytest.raises(InputError, match="records returned 3 records, but the table counts 195"):
        counts_from_table(table, grid, attributes, "z",
                          records=lambda levels, codes: records(levels, codes).iloc[:3])


# --------------------------------------------------------------------------- value fences


def test_a_value_never_moves_its_own_fence():
    # The attack on a fence that a value moves: seven 0s, a 10 and x had a fence linear in x
    # (a mean absolute deviation of all the values), and x came back from it exactly.
    # An interpolated 10 % quantile weighted a clipped value 0.1 in its fence: 23 zeros,
    # 1, 1.2, 1.5, 2, x, 40 and 55 clipped x to a fence from which x came back exactly. Every
    # value beyond a fence (and each end's two most extreme) is pushed further out here, and
    # no fence moves: 300 random combinations of 9-60 values, many tied.
    rng = np.random.default_rng(5)
    leaky = np.array([0.0] * 23 + [1.0, 1.2, 1.5, 2.0, 10.0, 40.0, 55.0])
    cases = [leaky] + [np.round(rng.exponential(2.0, n)) * rng.choice([0.0, 1.0], n, p=[0.6, 0.4])
                       for n in rng.integers(9, 61, 300)]
    for values in cases:
        n = len(values)
        combo = np.zeros(n, dtype=np.int64)
        fences = value_fences(values, combo, 1)
        order = np.argsort(values, kind="stable")
        outside = (values < fences[0, 0]) | (values > fences[1, 0])
        for ends, push in ((order[-2:], 1e6), (order[:2], -1e6)):
            pushed = values.copy()
            pushed[ends] += push * np.array([1.0, 2.0])
            beyond = outside & (values > fences[1, 0] if push > 0 else values < fences[0, 0])
            pushed[beyond] += push
            np.testing.assert_array_equal(value_fences(pushed, combo, 1), fences)
    assert 2.0 < value_fences(leaky, np.zeros(30, dtype=np.int64), 1)[1, 0] < 10.0  # x clipped
    # 1.8 million values, all 0 but the three largest: the third largest is further out than
    # Tukey's 4.72 SDs, and its fences' width came out negative, so that they fell inside
    # [0, third] and moved with it (every 0 was raised). They are those values now.
    for third in (100.0, 400.0):
        huge = np.zeros(1_800_000)
        huge[-3:] = [third, 5_000.0, 9_000.0]
        got = value_fences(huge, np.zeros(huge.size, dtype=np.int64), 1)[:, 0]
        np.testing.assert_array_equal(got, [0.0, third])


def test_values_are_clipped_to_their_combinations_far_out_fences(grid):
    # sex "m" has 300 records, one of them planted 1,000 (the others near 10, SD 2); "f" has 8,
    # too few for fences. The cell means are those of the values clipped to the fences of each
    # fenced combination's values (reference_fences).
    df = make_gdf(n=308, seed=4)
    df["sex"] = ["m"] * 300 + ["f"] * 8
    df["w"] = df["z"] * 3.0 - 1.0
    df.loc[df.index[7], "z"] = 1_000.0
    df.loc[df.index[303], "z"] = -500.0  # in "f": not clipped
    with pytest.warns(DataWarning, match=r"1 of 308 values of continuous column 'z' \(in 1 "
                      r"attribute combination\(s\)\) lie beyond the far-out fences") as got:
        counts = prepare(df, grid, ["sex"], continuous=["z", "w"])
    assert not [w for w in got if "'w'" in str(w.message)]
    assert all(w.filename == __file__ for w in got)
    assert counts.combos["sex"].tolist() == ["f", "m"]
    z = df["z"].to_numpy()
    fence = reference_fences(z[:300])
    assert 15 < fence[1] < 30  # 4.7 SDs out
    np.testing.assert_allclose(counts.fences("z"), [[-np.inf, fence[0]], [np.inf, fence[1]]],
                               rtol=1e-12)
    clipped = np.where(np.arange(308) < 300, np.clip(z, *fence), z)
    cells = grid.locate(df)
    combo = (df["sex"] == "m").to_numpy().astype(int)
    for name, values in (("z", clipped), ("w", df["w"].to_numpy())):
        zbar, mean, sd = counts.covariate(name)
        raw = zbar * sd + mean
        for i, b in {(cells[7], 1), (cells[303], 0), (cells[0], 1)}:
            here = (cells == i) & (combo == b)
            np.testing.assert_allclose(raw[i, b], values[here].mean(), rtol=1e-12)
    high1, high2 = np.sort(clipped[(cells == cells[7]) & (combo == 1)])[::-1][:2]
    assert counts.extremes("z")[0, cells[7], 1] == pytest.approx(high1 + high2, rel=1e-12)
    assert high1 == pytest.approx(fence[1], rel=1e-12)


def reference_fences(values):
    """The fences of one combination's values, per value_fences' docstring, by plain loops."""
    v, n = np.sort(values), len(values)
    reach = stats.norm.ppf(0.75) * 7.0

    def inner(r):
        z = stats.norm.ppf(1.0 - r / (n - 1))
        width = max((reach - z) / (2.0 * z), 0.0) * (v[n - 1 - r] - v[r])
        return v[r] - width, v[n - 1 - r] + width

    q1, q3 = np.quantile(v, [0.25, 0.75])
    low, high = q1 - 3.0 * (q3 - q1), q3 + 3.0 * (q3 - q1)
    r10 = int(np.ceil(0.1 * (n - 1) - 1e-9))
    if r10 >= 2:
        low, high = min(low, inner(r10)[0]), max(high, inner(r10)[1])
    for p in (0.05, 0.025, 0.01, None):
        r = 2 if p is None else int(np.ceil(p * (n - 1) - 1e-9))
        if low == high and r >= 2:
            low, high = inner(r)
    return low, high


def test_value_fences_match_the_reference_and_reach_the_population_fences():
    rng = np.random.default_rng(12)
    # Exponential(1): Tukey's fences ln(4/3) - 3 ln 3 and ln 4 + 3 ln 3; those of the 10 %
    # and 90 % values lie further out above (the long tail), not below: 200,000 values
    # estimate each to about 0.02.
    values = rng.exponential(1.0, 200_000)
    fences = value_fences(values, np.zeros(values.size, dtype=np.int64), 1)
    z90 = stats.norm.ppf(0.9)
    k = (stats.norm.ppf(0.75) * 7.0 - z90) / (2 * z90)
    assert k == pytest.approx(1.342, abs=1e-3)
    q10, q90 = -np.log(0.9), np.log(10.0)
    np.testing.assert_allclose(fences[:, 0], [np.log(4 / 3) - 3 * np.log(3),
                                              q90 + k * (q90 - q10)], atol=0.05)
    # Combinations of every kind and size, records in any order: as the reference.
    kinds = [lambda n: rng.normal(0.0, 1.0, n), lambda n: rng.poisson(1.0, n) * 1.0,
             lambda n: np.where(rng.random(n) < 0.85, 0.0, rng.exponential(5.0, n)),
             lambda n: np.full(n, 3.0)]
    groups = [kinds[b % 4](int(rng.integers(1, 80))) for b in range(60)]
    values = np.concatenate(groups)
    combo = np.repeat(np.arange(60), [len(g) for g in groups])
    shuffle = rng.permutation(values.size)
    got = value_fences(values[shuffle], combo[shuffle], 61)
    for b, group in enumerate(groups):
        want = reference_fences(group) if len(group) >= 9 else (-np.inf, np.inf)
        np.testing.assert_allclose(got[:, b], want, rtol=1e-12, atol=1e-12)
    assert got[0, 60] == -np.inf and got[1, 60] == np.inf  # a combination of no record
    # 35 zeros and 10 values near 50: the quartiles are 0, and the 10 % and 90 % values
    # (ranks 5 and 39) set the fences; seven 0s, a 10 and a far value: every value tied
    # down to the third smallest and largest, so each is clipped to 0.
    tied = np.concatenate([np.zeros(35), rng.normal(50.0, 5.0, 10)])
    got = value_fences(tied, np.zeros(45, dtype=np.int64), 1)[:, 0]
    top = np.sort(tied)[39]
    z = stats.norm.ppf(1 - 5 / 44)
    width = (stats.norm.ppf(0.75) * 7.0 - z) / (2 * z) * top
    np.testing.assert_allclose(got, [-width, top + width], rtol=1e-12)
    assert (tied <= got[1]).all()
    got = value_fences(np.array([0.0] * 7 + [10.0, 1e6]), np.zeros(9, dtype=np.int64), 1)
    np.testing.assert_array_equal(got[:, 0], [0.0, 0.0])
    mixed = rng.normal(0.0, 1.0, 40)
    pulled = fenced_values(np.array([100.0, -100.0]), np.array([0, 1]),
                           value_fences(np.concatenate([mixed[:20], mixed[20:]]),
                                        np.repeat([0, 1], 20), 2))
    assert pulled[0] == reference_fences(mixed[:20])[1]
    assert pulled[1] == reference_fences(mixed[20:])[0]

def test_points_that_miss_the_region_say_so_and_suspect_the_crs():
    grid = Grid.regular((600_000, 7_800_000, 610_000, 7_810_000), shape=(5, 5), crs=CRS,
                        region=box(600_000, 7_800_000, 610_000, 7_810_000))
    rng = np.random.default_rng(3)
    degrees = gpd.GeoDataFrame(
        {"sex": rng.choice(["m", "f"], 30)},
        geometry=gpd.points_from_xy(rng.uniform(-44, -43.9, 30), rng.uniform(-20, -19.9, 30)),
        crs=CRS,
    )
    for outside in ("error", "drop"):
        with pytest.raises(InputError) as err:
            prepare(degrees, grid, ["sex"], outside=outside)
        message = str(err.value)
        assert "none of the 30 points falls in a grid cell" in message
        assert "and the region (cells within bounds (600,000, 7,800,000, 610,000, 7,810,000))"\
            in message
        assert "do not overlap" in message and "look like degrees" in message
        assert "set_crs('EPSG:4326'" in message and 'outside="drop"' not in message
    # swapped axes
    swapped = degrees.set_geometry(gpd.points_from_xy(rng.uniform(7.8e6, 7.81e6, 30),
                                                      rng.uniform(6.0e5, 6.1e5, 30)), crs=CRS)
    with pytest.raises(InputError, match=r"do not overlap; with x and y swapped the points would"):
        prepare(swapped, grid, ["sex"])
    # far away (another UTM zone mislabelled): bounds of both and the distance
    far = degrees.set_geometry(gpd.points_from_xy(rng.uniform(3.0e5, 3.1e5, 30),
                                                  rng.uniform(7.8e6, 7.81e6, 30)), crs=CRS)
    with pytest.raises(InputError, match=r"points \(bounds about \(3\d\d,000, 7,8\d0,000, "
                                         r"3\d\d,000, 7,8\d0,000\), CRS EPSG:31983\).*about "
                                         r"300,000 metres apart.*same CRS"):
        prepare(far, grid, ["sex"])


def test_points_just_outside_the_region_do_not_give_their_extremes():
    # A region 11.1 m east of the records: "they are about 11.1 metres apart" gave the
    # records' largest x to 10 cm (the region's edge, public, less 11.1), and their bounds
    # were printed to 3 significant digits (to 10 m near a local CRS's origin).
    grid = Grid.regular((335_007, 7_390_000, 340_007, 7_395_000), shape=(5, 5), crs=CRS)
    rng = np.random.default_rng(5)
    x = np.r_[rng.uniform(330_000, 334_990, 29), 334_995.8806]
    near = gpd.GeoDataFrame({"sex": rng.choice(["m", "f"], 30)}, crs=CRS,
                            geometry=gpd.points_from_xy(x, rng.uniform(7.39e6, 7.395e6, 30)))
    with pytest.raises(InputError, match=r"none of the 30 points falls in a grid cell.*lie "
                                         r"outside the grid .*closer to it than it is") as info:
        prepare(near, grid, ["sex"])
    message = str(info.value)
    assert "apart" not in message and "bounds about (" not in message
    # the numbers shown are the lattice's bounds (3 significant digits), none the records'
    assert re.findall(r"[\d,.]+\d", message) == ["30", "31983", "335,000", "7,390,000", "340,000",
                                                 "7,400,000"]


def test_points_inside_the_lattice_but_all_excluded_name_the_region():
    grid = Grid.regular((0, 0, 10, 10), shape=(2, 2), crs=CRS, exclude=box(0, 0, 5, 5))
    df = make_gdf(n=10, seed=4)
    df["geometry"] = gpd.points_from_xy(np.linspace(1, 4, 10), np.linspace(1, 4, 10), crs=CRS)
    with pytest.raises(InputError, match=r"none of the 10 points.*overlap, but every point lies "
                                         r"outside the region or inside an excluded area") as info:
        prepare(df, grid, ["sex"])
    # Their bounds (1, 1, 4, 4) helped nothing there and told the records' extremes.
    assert "bounds about (1" not in str(info.value) and "4.00" not in str(info.value)


# --------------------------------------------------------------------------- public domain


DOMAIN = {"sex": ["f", "m"], "age": [1, 2, 3]}


def small_frame(sex, age, xy, index=None):
    geometry = [None if p is None else Point(p) if len(p) == 2 else LineString(p) for p in xy]
    return gpd.GeoDataFrame({"sex": sex, "age": age}, geometry=geometry, crs=CRS, index=index)


def test_domain_counts_every_declared_combination_and_drops_what_it_cannot_count(grid):
    # grid: 4 x 4 cells of 2.5 m over (0, 0, 10, 10); cell id = row * 4 + column.
    gdf = small_frame(
        sex=["f", "m", "m", "x", None, "f", "f", "f"],
        age=[1, 3, 3, 1, 2, 9, 2, 2],
        xy=[(1, 1), (6, 1), (6, 1.5), (1, 1), (1, 1), (1, 1), (50, 50), None],
        index=list("abcdefgh"),
    )
    with pytest.warns(DataWarning) as caught:
        counts = prepare(gdf, grid, ["sex", "age"], levels=DOMAIN)
    message = str(caught[0].message)
    assert "1 without a usable point geometry" in message  # h
    assert "1 in no lattice cell" in message  # g
    assert "3 with an attribute value outside the declared levels" in message  # d, e, f
    assert caught[0].filename == __file__
    # Hand-derived: a = (f, 1) in cell 0; b, c = (m, 3) in cell 2. Combinations in code
    # order: (f,1) (f,2) (f,3) (m,1) (m,2) (m,3).
    expected = np.zeros((16, 6), dtype=np.int64)
    expected[0, 0] = 1
    expected[2, 5] = 2
    np.testing.assert_array_equal(counts.counts, expected)
    assert counts.domain_declared and counts.levels == DOMAIN
    assert counts.combos[["sex", "age"]].values.tolist() == [
        ["f", 1], ["f", 2], ["f", 3], ["m", 1], ["m", 2], ["m", 3]]
    assert counts.combos["age_code"].tolist() == [0, 1, 2, 0, 1, 2]
    assert counts.combos["n_records"].tolist() == [1, 0, 0, 0, 0, 2]
    assert list(counts.record_index) == ["a", "b", "c"]
    np.testing.assert_array_equal(counts.record_cell, [0, 2, 2])
    np.testing.assert_array_equal(counts.record_combo, [0, 5, 5])


def test_domain_keeps_a_categorical_and_matches_levels_by_value(grid):
    gdf = small_frame(sex=pd.Categorical(["m", "f"], categories=["m", "f"]), age=[1.0, 3.0],
                      xy=[(1, 1), (1, 1)])
    counts = prepare(gdf, grid, ["sex", "age"], levels=DOMAIN)
    assert counts.levels == DOMAIN  # the declared order, not the category order
    assert counts.counts[0].tolist() == [0, 0, 1, 1, 0, 0]


@pytest.mark.parametrize(
    ("bigger", "smaller"),
    [
        # 6 possible combinations: 6 records pass the ordinary check, 5 do not.
        (dict(sex=["f", "f", "f", "m", "m", "m"], age=[1, 2, 3, 1, 2, 3]), 5),
        # every record alone in its level: "identifying" for 2 records, not for 3.
        (dict(sex=["f", "m", "f"], age=[1, 2, 1]), 2),
        # a level outside the declared domain: refused by the ordinary DP path.
        (dict(sex=["f", "m", "z"], age=[1, 2, 3]), 2),
        # one record, and none: refused as an empty frame.
        (dict(sex=["f"], age=[1]), 0),
        # one point outside the lattice, alone: "no point in any cell".
        (dict(sex=["f"], age=[1], xy=[(50, 50)]), 0),
    ],
    ids=["combinations", "identifying", "undeclared-level", "empty", "all-outside"],
)
def test_domain_prepares_both_of_neighbouring_datasets(grid, bigger, smaller):
    """What the ordinary prepare refuses on the records' values, the domain path counts."""
    n = len(bigger["sex"])
    xy = bigger.pop("xy", [(1 + k, 1) for k in range(n)])
    datasets = [small_frame(**bigger, xy=xy), small_frame(**bigger, xy=xy).iloc[:smaller]]
    with pytest.raises(InputError):  # the ordinary path refuses one of the two
        for data in datasets:
            prepare(data, grid, ["sex", "age"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)  # records dropped: for the curator
        tables = [prepare(data, grid, ["sex", "age"], levels=DOMAIN).counts for data in datasets]
    assert tables[0].shape == tables[1].shape == (16, 6)
    assert np.abs(tables[0] - tables[1]).sum() <= n - smaller


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    sex=st.lists(st.sampled_from(["f", "m", "x", None]), min_size=1, max_size=8),
    data=st.data(),
)
def test_domain_removing_any_record_changes_at_most_one_count_by_one(sex, data):
    grid = Grid.regular((0, 0, 10, 10), shape=(4, 4), crs=CRS)
    n = len(sex)
    age = data.draw(st.lists(st.sampled_from([1, 2, 3, 7]), min_size=n, max_size=n))
    xy = data.draw(st.lists(st.sampled_from([(1, 1), (6, 9), (50, 50), None]), min_size=n,
                            max_size=n))
    gdf = small_frame(sex=sex, age=age, xy=xy)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        full = prepare(gdf, grid, ["sex", "age"], levels=DOMAIN).counts
        for k in range(n):
            without = prepare(gdf.drop(index=gdf.index[k]), grid, ["sex", "age"],
                              levels=DOMAIN).counts
            difference = full - without
            assert difference.min() >= 0 and difference.sum() <= 1


def test_domain_memory_check_uses_the_declared_product(grid):
    gdf = small_frame(sex=["f"], age=[1], xy=[(1, 1)])  # one observed combination
    # cells x declared combinations x int64, and the combinations table (2 attributes)
    needed = 16 * 6 * 8 + 6 * 2 * data_module._COMBO_BYTES
    prepare(gdf, grid, ["sex", "age"], max_bytes=needed, levels=DOMAIN)
    for data in (gdf, gdf.iloc[:0]):  # whatever the records, the same refusal
        with pytest.raises(MemoryLimitError, match=rf"counts and combinations arrays for 16 "
                                                   rf"cells x 6 combinations need {needed:,}"):
            prepare(data, grid, ["sex", "age"], max_bytes=needed - 1, levels=DOMAIN)


def test_a_huge_declared_domain_is_refused_before_its_table_is_built():
    # 1 cell x 90,000 combinations: 720 kB of counts passed a 1 MB limit, and the table of the
    # declared combinations (~9.6 MB here; ~30 GB for 2.7e8 under the default) was then built
    one_cell = Grid.regular((0, 0, 10, 10), shape=(1, 1), crs=CRS)
    domain = {"a": [f"a{i}" for i in range(300)], "b": list(range(300))}
    gdf = gpd.GeoDataFrame({"a": ["a1"], "b": [1]}, geometry=gpd.points_from_xy([1.0], [1.0]),
                           crs=CRS)
    with pytest.raises(MemoryLimitError, match="counts and combinations arrays for 1 cells x "
                                               "90000 combinations"):
        prepare(gdf, one_cell, ["a", "b"], max_bytes=10**6, levels=domain)


@pytest.mark.parametrize(
    ("levels", "match"),
    [
        (["f", "m"], "levels must be a dict"),
        ({"sex": ["f", "m"]}, "levels has no entry for attribute 'age'"),
        ({**DOMAIN, "age": []}, r"levels\['age'\] is empty"),
        ({**DOMAIN, "age": "123"}, r"levels\['age'\] must be a list"),
        ({**DOMAIN, "age": [1, 2, 1.0]}, r"levels\['age'\] lists \['1.0'\] more than once"),
        ({**DOMAIN, "age": [1, np.nan]}, r"levels\['age'\] holds a missing value"),
        ({**DOMAIN, "age": [[1], [2]]}, r"levels\['age'\] holds unhashable levels"),
        ({**DOMAIN, "age": [True, 2]}, r"levels\['age'\] holds both booleans and numbers"),
    ],
)
def test_domain_refuses_invalid_levels(gdf, grid, levels, match):
    with pytest.raises(InputError, match=match):
        prepare(gdf, grid, ["sex", "age"], levels=levels)


def test_domain_refuses_a_continuous_variable_and_keeps_schema_checks(gdf, grid):
    with pytest.raises(InputError, match="continuous"):
        prepare(gdf, grid, ["sex", "age"], continuous="z", levels=DOMAIN)
    with pytest.raises(InputError, match="not a column"):
        prepare(gdf, grid, ["sex", "income"], levels=DOMAIN)
    with pytest.raises(CRSError):
        prepare(gdf.set_crs("EPSG:4326", allow_override=True), grid, ["sex", "age"],
                levels=DOMAIN)


def test_domain_drops_unhashable_values_instead_of_raising(grid):
    # A list in an attribute column raised pandas' TypeError: a refusal on a record's value.
    gdf = small_frame(sex=[["f"], "f", "m"], age=[1, 1, 2], xy=[(1, 1), (1, 1), (1, 1)])
    with pytest.warns(DataWarning, match="1 with an attribute value outside the declared"):
        counts = prepare(gdf, grid, ["sex", "age"], levels=DOMAIN)
    assert counts.counts[0].tolist() == [1, 0, 0, 0, 1, 0]


def test_rare_levels_are_warned_about_without_quoting_them(gdf, grid):
    # A level held by one record passes the identifying check (one rare category among many
    # records), yet every release publishes it verbatim: it tells that such a record exists.
    gdf["diagnosis"] = "common"
    gdf.loc["r3", "diagnosis"] = "Alice Smith"  # a name typed into a category column
    gdf.loc[["r5", "r6"], "diagnosis"] = "rare"
    with pytest.warns(PrivacyLeakWarning, match=r"attribute\(s\) 'diagnosis' \(2 levels\) have "
                                                r"levels held by fewer than 3 records") as caught:
        prepare(gdf, grid, ["sex", "diagnosis"])
    assert not any("Alice" in str(w.message) or "rare'" in str(w.message) for w in caught)
    gdf.loc[["r5", "r6", "r7"], "diagnosis"] = "rare"
    gdf.loc["r3", "diagnosis"] = "rare"  # every level now held by 3 or more records
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        prepare(gdf, grid, ["sex", "diagnosis"])


# --------------------------------------------------------------------------- column names, dtypes


@pytest.mark.parametrize("name", [CELL_COLUMN, COUNT_COLUMN, Z_SUM_COLUMN, Z_SUM_COLUMN + "_1",
                                  "__geosynth_zone"])
def test_an_attribute_named_like_a_count_table_column_is_refused(gdf, grid, name):
    # The count table writes its cell ids, ones and Z sums into these columns: an attribute of
    # that name was silently replaced by them (levels = cell ids, or a single level 1), and
    # a name starting like the Z sums was summed by count_table.
    gdf[name] = np.arange(len(gdf)) % 2
    with pytest.raises(InputError, match=rf"\['{name}'\] start with '__geosynth_'.*rename"):
        prepare(gdf, grid, ["sex", name], continuous="z")


def test_combos_of_a_categorical_hold_only_its_observed_categories(gdf, grid):
    # Unused categories (e.g. levels of records filtered out before prepare) are no levels:
    # neither in levels nor in the dtype of the combos and summary columns.
    gdf["sex"] = pd.Categorical(gdf["sex"], categories=["x", "m", "Alice", "f"])
    cc = prepare(gdf, grid, ["sex", "age"])
    assert cc.levels["sex"] == ["m", "f"]
    assert cc.combos["sex"].cat.categories.tolist() == ["m", "f"]
    assert cc.summary()["sex"].cat.categories.tolist() == ["m", "f"]
    assert cc.combos["sex_code"].tolist() == [
        cc.levels["sex"].index(v) for v in cc.combos["sex"]
    ]


def _ints_and_floats(age):
    """``age`` as an object column holding 1 and 1.0 (one level), 2 and 2.0, ..."""
    mixed = age.astype(object)
    mixed.iloc[::2] = [float(v) for v in age.iloc[::2]]
    return mixed


@pytest.mark.parametrize(
    "convert",
    [
        lambda sex, age: (sex.astype("string"), age.astype("Int64")),
        lambda sex, age: (sex.astype("category"), age.astype("category")),
        lambda sex, age: (sex, _ints_and_floats(age)),
    ],
    ids=["nullable", "categorical", "int_and_float"],
)
def test_counts_do_not_depend_on_the_dtype_of_the_attributes(gdf, grid, convert):
    expected = prepare(gdf, grid, ["sex", "age"], continuous="z")
    converted = gdf.copy()
    converted["sex"], converted["age"] = convert(gdf["sex"], gdf["age"])
    cc = prepare(converted, grid, ["sex", "age"], continuous="z")
    assert cc.levels == expected.levels
    np.testing.assert_array_equal(cc.counts, expected.counts)
    np.testing.assert_array_equal(cc.combo_codes, expected.combo_codes)
    np.testing.assert_array_equal(cc.zbar, expected.zbar)
    # every combination writes a level as levels does (2 and 2.0 in one column were written
    # as their combination's first record held them: "age=2" in one label, "age=2.0" in
    # another, and the model's check of level names refused the counts)
    assert cc.combination_labels() == [
        f"sex={cc.levels['sex'][s]},age={cc.levels['age'][a]}" for s, a in cc.combo_codes
    ]


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_a_narrow_float_attribute_counts_as_its_float64_values(gdf, grid, dtype):
    # float16 raised pandas' NotImplementedError ("float16 indexes are not supported").
    halves = gdf.assign(score=gdf["age"] * 0.5)
    expected = prepare(halves, grid, ["sex", "score"])
    cc = prepare(halves.astype({"score": dtype}), grid, ["sex", "score"])
    assert cc.levels == expected.levels and len(expected.levels["score"]) > 1
    np.testing.assert_array_equal(cc.counts, expected.counts)
    assert cc.combination_labels() == expected.combination_labels()


def test_repeated_index_labels_are_kept_as_given(gdf, grid):
    expected = prepare(gdf, grid, ["sex", "age"])
    gdf.index = ["same"] * len(gdf)
    cc = prepare(gdf, grid, ["sex", "age"])
    assert cc.record_index.tolist() == ["same"] * len(gdf)
    np.testing.assert_array_equal(cc.counts, expected.counts)
    np.testing.assert_array_equal(cc.record_cell, expected.record_cell)


def test_repeated_index_labels_are_refused_when_records_are_dropped(gdf, grid):
    # The kept records are named by label (record_index): with a label on two rows and a
    # record dropped, gdf.loc[counts.record_index] returned each such row twice per label,
    # and synthesize(fit, gdf) refused the frame only after the fit.
    gdf.index = [f"r{i % 20}" for i in range(len(gdf))]  # r0 .. r19, each on two rows
    points = gdf.geometry.array.copy()
    points[0] = Point(20.0, 5.0)  # row 0 (label r0, as row 20) outside the lattice
    gdf = gdf.set_geometry(points)
    with pytest.raises(InputError, match=r"gdf has 20 index labels shared by several rows "
                                         r"\(rows \['r0', 'r1', .* and 15 more\) and 1 of its "
                                         r"records are dropped.*reset_index\(drop=True\)"):
        prepare(gdf, grid, ["sex", "age"], outside="drop")
    with pytest.raises(InputError, match=r"1 of 40 points fall in no grid cell"):
        prepare(gdf, grid, ["sex", "age"])  # outside="error": that error, not the labels'
    with pytest.warns(DataWarning, match=r"dropped 1 of 40 points .*rows \[0\]"):
        kept = prepare(gdf.reset_index(drop=True), grid, ["sex", "age"], outside="drop")
    assert kept.record_index.tolist() == list(range(1, 40))


def test_repeated_index_labels_are_kept_when_no_record_is_dropped(gdf, grid):
    gdf.index = ["same"] * len(gdf)
    assert prepare(gdf, grid, ["sex", "age"], outside="drop").n_records == len(gdf)


def test_nullable_missing_values_are_refused_naming_the_rows(gdf, grid):
    gdf["age"] = gdf["age"].astype("Int64")
    gdf.loc["r4", "age"] = pd.NA
    with pytest.raises(InputError, match=r"attribute 'age' has 1 missing .*\['r4'\]"):
        prepare(gdf, grid, ["sex", "age"])
    gdf["age"] = gdf["age"].fillna(1)
    gdf["z"] = gdf["z"].astype("Float64")
    gdf.loc["r7", "z"] = pd.NA
    with pytest.raises(InputError, match=r"continuous column 'z' has 1 missing .*\['r7'\]"):
        prepare(gdf, grid, ["sex", "age"], continuous="z")


# --------------------------------------------------------------------------- oracles


def test_counts_and_zbar_equal_a_brute_force_count_over_cells_that_cover_the_points():
    # Points on interior edges, corners and the lattice's outer edges: every point lies in a
    # cell that covers it (shapely), the one of largest (x0, y0) when several do (cells are
    # half-open [x0, x1) x [y0, y1), the outer max edges belonging to the last column/row).
    grid = Grid.regular((0, 0, 12, 9), shape=(3, 4), crs=CRS)
    rng = np.random.default_rng(3)
    edges_x, edges_y = [0.0, 3.0, 6.0, 9.0, 12.0], [0.0, 3.0, 6.0, 9.0]
    xy = np.vstack([
        [(x, y) for x in edges_x for y in edges_y],  # every corner
        [(x, rng.uniform(0, 9)) for x in edges_x for _ in range(3)],  # vertical edges
        [(rng.uniform(0, 12), y) for y in edges_y for _ in range(3)],  # horizontal edges
        rng.uniform((0, 0), (12, 9), (60, 2)),
    ])
    n = len(xy)
    frame = gpd.GeoDataFrame(
        {"a": rng.choice(["p", "q"], n), "b": rng.choice([1, 2], n), "z": rng.normal(5, 2, n)},
        geometry=gpd.points_from_xy(xy[:, 0], xy[:, 1]), crs=CRS,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)  # bounds equal extreme points
        cc = prepare(frame, grid, ["a", "b"], continuous="z")

    boxes = grid.cell_bounds(np.arange(grid.n_cells))
    cell = np.empty(n, dtype=np.int64)
    for r, point in enumerate(frame.geometry):
        covering = [i for i in range(grid.n_cells) if box(*boxes[i]).covers(point)]
        cell[r] = max(covering, key=lambda i: (boxes[i][0], boxes[i][1]))
    np.testing.assert_array_equal(cc.record_cell, cell)

    groups = frame.assign(cell=cell).groupby(["a", "b"])
    combo = groups.ngroup().to_numpy()
    expected = np.zeros((grid.n_cells, cc.n_combos), dtype=np.int64)
    np.add.at(expected, (cell, combo), 1)
    np.testing.assert_array_equal(cc.counts, expected)

    sums = np.zeros_like(expected, dtype=float)
    np.add.at(sums, (cell, combo), frame["z"].to_numpy())
    for b in range(cc.n_combos):
        held = expected[:, b] > 0
        means = sums[held, b] / expected[held, b]
        assert cc.zbar_mean[b] == pytest.approx(means.mean(), rel=1e-12)
        assert cc.zbar_sd[b] == pytest.approx(means.std(ddof=1), rel=1e-12)
        np.testing.assert_allclose(cc.zbar[held, b], (means - means.mean()) / means.std(ddof=1),
                                   rtol=1e-10, atol=1e-12)
        assert (cc.zbar[~held, b] == 0).all()


# --------------------------------------------------------------------------- fuzzed arguments


def test_outside_given_an_array_is_a_type_error(gdf, grid):
    # `outside not in ("error", "drop")` raised "truth value of an array is ambiguous".
    with pytest.raises(InputTypeError, match=r"^outside must be one of 'error', 'drop', got "
                                             r"ndarray of shape \(2,\)"):
        prepare(gdf, grid, ["sex"], outside=np.array(["error", "drop"]))


@pytest.mark.parametrize("attributes", [np.array(1.0), np.array("sex"), np.array([["sex"]])])
def test_attributes_given_a_0d_or_2d_array_is_a_type_error(gdf, grid, attributes):
    # tuple(np.array(1.0)) raised "iteration over a 0-d array".
    with pytest.raises(InputTypeError, match=r"^attributes must be a column name or a list"):
        prepare(gdf, grid, attributes)


def test_covariate_name_given_an_array_is_a_type_error(gdf, grid):
    cc = prepare(gdf, grid, ["sex"], continuous="z")
    with pytest.raises(InputTypeError, match=r"^name must be one of 'z', got ndarray"):
        cc.covariate(np.array(["z", "z"]))


@pytest.mark.parametrize("sizes", [[2, 3, 4, 2], [1], [7], [300, 2, 7], [2**31, 2**31, 3]])
def test_combinations_by_flat_index_are_numpys_unique_rows(sizes):
    # The rows and order of np.unique(axis=0), which prepare used (7 s at a million records);
    # the last sizes overflow a flat index and take that path itself.
    from geosynth.data import _unique_rows

    rng = np.random.default_rng(len(sizes))
    for n in (1, 10, 5_000):
        codes = np.column_stack([rng.integers(0, s, n) for s in sizes]).astype(np.int64)
        codes[-1] = [s - 1 for s in sizes]  # the largest code of every attribute
        unique, inverse = np.unique(codes, axis=0, return_inverse=True)
        got_unique, got_inverse = _unique_rows(codes, sizes)
        np.testing.assert_array_equal(got_unique, unique)
        np.testing.assert_array_equal(got_inverse, inverse.reshape(-1))
        assert got_unique.dtype == np.int64 and got_inverse.dtype == np.int64


@pytest.mark.parametrize("dtype", ["str", object])  # pandas 3 reads text as str, pandas 2 object
def test_a_text_column_matches_the_declared_numbers_and_booleans_it_reads_as(grid, dtype):
    # A CSV file read for a DP release holds text: "1" matches the declared 1, "true" the
    # declared True, "01" the declared 1 too; a declared text level is matched as written.
    gdf = small_frame(sex=["f", "m"] * 3, age=[1, 2] * 3,
                      xy=[(1, 1), (6, 1), (1, 6), (6, 6), (2, 2), (7, 7)])
    gdf["age"] = pd.Series(["1", " 2.0", "01", "x", "true", None], dtype=dtype)
    gdf["flag"] = pd.Series(["True", "false", "TRUE", "1", "yes", "False"], dtype=dtype)
    gdf["code"] = pd.Series(["1", "1.0", "a", "1", "a", "2"], dtype=dtype)
    with pytest.warns(DataWarning, match="outside the declared levels"):
        counts = prepare(gdf, grid, ["age", "flag", "code"],
                         levels={"age": [1, 2], "flag": [False, True], "code": ["1", "a", 2]})
    kept = counts.record_index.tolist()
    # kept: rows 0 (1, True, "1") and 2 (1, True, "a"); dropped: row 1's code "1.0" (no text
    # level, and its number is not the declared 2), row 3's age "x" and flag "1", row 4's age
    # "true" and flag "yes", row 5's missing age
    assert kept == [0, 2]
    combos = counts.combos.iloc[counts.record_combo][["age", "flag", "code"]]
    assert combos.to_dict("records") == [{"age": 1, "flag": True, "code": "1"},
                      {"age": 1, "flag": True, "code": "a"}]


@pytest.mark.parametrize("other", [1, 2.0, True])
def test_one_record_of_another_type_does_not_change_how_the_others_are_read(grid, other):
    # Text was read as the declared numbers only when the whole column was text: one record
    # holding the int 1 among "1" and "2" dropped every other record (one record changed five
    # counts, under DP where it may change one).
    xy = [(1, 1), (6, 1), (1, 6), (6, 6), (2, 2), (7, 7)]
    gdf = small_frame(sex=["f"] * 6, age=[1, 2] * 3, xy=xy)
    gdf["age"] = pd.Series(["1", "2", "1", "2", "1", other], dtype=object)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)  # True: outside the declared levels
        counts = prepare(gdf, grid, ["age"], levels={"age": [1, 2]})
        alone = prepare(gdf.iloc[:5], grid, ["age"], levels={"age": [1, 2]})
    assert counts.record_index.tolist() == list(range(5 if other is True else 6))
    np.testing.assert_array_equal(counts.record_combo[:5], alone.record_combo)


@pytest.mark.parametrize(("domain", "match"), [
    ({"sex": ["f", "m"], "age": ["1", "2", "3"]},
     r"'age' is a numeric column, but levels\['age'\] holds no number \('1', '2', '3'\)"),
])
def test_domain_levels_no_value_of_the_column_can_match_are_refused(grid, domain, match):
    # Levels ["1", "2"] from a JSON file for a column of numbers matched no record: every
    # record was dropped, with only the generic warning, and a DP release of noise written.
    gdf = small_frame(sex=["f", "m"], age=[1, 3], xy=[(1, 1), (6, 1)])
    gdf["sex"] = gdf["sex"].astype("str")
    with pytest.raises(InputError, match=match):
        prepare(gdf, grid, ["sex", "age"], levels=domain)
    with pytest.warns(DataWarning, match="outside the declared levels"):  # some can match
        prepare(gdf, grid, ["sex", "age"], levels={"sex": ["f", "m"], "age": [1, "2", "3"]})


def test_z_extremes_are_each_pairs_two_largest_and_two_smallest_values(grid):
    # Derived by sorting each pair's values; NaN for a pair of one record (no second value).
    df = make_gdf(n=60, seed=4)
    df["w"] = -3.0 * df["z"]
    counts = prepare(df, grid, ["sex"], continuous=["z", "w"])
    frame = pd.DataFrame({"cell": counts.record_cell, "combo": counts.record_combo,
                          "z": df.loc[counts.record_index, "z"].to_numpy()})
    expected = np.full((2, *counts.counts.shape), np.nan)
    for (cell, combo), values in frame.groupby(["cell", "combo"])["z"]:
        ordered = np.sort(values.to_numpy())
        if ordered.size >= 2:
            expected[:, cell, combo] = ordered[-2:].sum(), ordered[:2].sum()
    np.testing.assert_allclose(counts.extremes("z"), expected, rtol=1e-12)
    np.testing.assert_allclose(counts.extremes("w"), -3.0 * expected[::-1], rtol=1e-12)
    single = counts.counts == 1
    assert single.any() and np.isnan(counts.extremes("z")[:, single]).all()
    assert prepare(df, grid, ["sex"]).z_extremes is None


def test_group_extremes_merge_rows_of_any_number_of_records():
    # Rows of 1 to 6 records each (their own two largest and smallest), grouped at random:
    # each group's extremes are those of all its records, derived by sorting them.
    rng = np.random.default_rng(11)
    records = [rng.normal(0.0, 1.0, rng.integers(1, 7)) for _ in range(400)]
    groups = rng.integers(0, 60, len(records))
    rows = pd.DataFrame({COUNT_COLUMN: [v.size for v in records]})
    high1, high2, low1, low2 = EXTREME_COLUMNS
    rows[high1] = [np.sort(v)[-1] for v in records]
    rows[high2] = [np.sort(v)[-2] if v.size > 1 else -np.inf for v in records]
    rows[low1] = [np.sort(v)[0] for v in records]
    rows[low2] = [np.sort(v)[1] if v.size > 1 else np.inf for v in records]
    got = group_extremes(groups, rows, EXTREME_COLUMNS, 60)
    for g in range(60):
        values = np.sort(np.concatenate([v for v, k in zip(records, groups, strict=True)
                                         if k == g]))
        assert [got[j][g] for j in range(4)] == [values[-1], values[-2], values[0], values[1]]
