import dataclasses
import warnings

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shapely.geometry import LineString, Point, Polygon, box

from geosynth.data import CellCounts, prepare
from geosynth.errors import CRSError, DataWarning, InputError, MemoryLimitError
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
    with pytest.raises(InputError, match=r"attribute 'sex' has 2 missing.*\['r5', 'r9'\].*dropna"):
        prepare(gdf, grid, ["sex"])


def test_nan_in_continuous(gdf, grid):
    gdf.loc["r6", "z"] = np.nan
    with pytest.raises(InputError, match=r"continuous column 'z' has 1 missing.*\['r6'\]"):
        prepare(gdf, grid, ["sex"], continuous="z")


def test_infinite_continuous(gdf, grid):
    gdf.loc["r8", "z"] = -np.inf
    with pytest.raises(InputError, match=r"'z' has 1 infinite values \(rows \['r8'\]\)"):
        prepare(gdf, grid, ["sex"], continuous="z")


@pytest.mark.parametrize("values", [["a", "b"] * 20, [True, False] * 20])
def test_non_numeric_continuous(gdf, grid, values):
    gdf["w"] = values
    with pytest.raises(InputError, match=r"continuous column 'w' has non-numeric.*pd\.to_numeric"):
        prepare(gdf, grid, ["sex"], continuous="w")


def test_mixed_type_attribute(gdf, grid):
    gdf["mix"] = pd.Series([1, "a"] * 20, index=gdf.index, dtype=object)
    with pytest.raises(InputError, match=r"'mix' mixes values of types \['int', 'str'\].*astype"):
        prepare(gdf, grid, ["mix"])


def test_single_level_attribute_warns_but_works(gdf, grid):
    gdf["const"] = "only"
    with pytest.warns(DataWarning, match="'const' has a single level 'only'"):
        cc = prepare(gdf, grid, ["const", "sex"])
    assert cc.levels["const"] == ["only"] and cc.n_combos == 2
    assert (cc.combos["const_code"] == 0).all()


def test_more_combinations_than_records(grid):
    df = make_gdf(n=5, seed=1)
    df["id"] = np.arange(5)
    with pytest.raises(InputError, match=r"= \d+ possible combinations but only 5 records"):
        prepare(df, grid, ["id", "sex"])


def test_memory_limit(gdf, grid):
    cc = prepare(gdf, grid, ["sex", "age"])
    need = 16 * cc.n_combos * 8
    assert prepare(gdf, grid, ["sex", "age"], max_bytes=need).n_combos == cc.n_combos
    with pytest.raises(
        MemoryLimitError, match=rf"need {need:,} bytes.*max_bytes={need - 1:,}.*coarser"
    ):
        prepare(gdf, grid, ["sex", "age"], max_bytes=need - 1)
    # the zbar arrays add 9 bytes per pair
    with pytest.raises(MemoryLimitError, match=rf"zbar.*need {16 * cc.n_combos * 17:,} bytes"):
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
    with pytest.raises(InputError, match=r'outside must be "error" or "drop"'):
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
        match=r"3 of 9 points fall in no grid cell.*\['excl', 'out_region', 'off_lattice'\]"
        r".*outside=\"drop\"",
    ):
        prepare(outside_gdf(), clipped_grid(), ["g"])


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
    assert any("single level 'x'" in str(w.message) for w in caught)


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
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        if len(kept) == 0 or n_levels > len(kept):
            with pytest.raises(InputError, match="no record is left|possible combinations"):
                prepare(df, grid, ["a", "b"], continuous="z", outside="drop")
            return
        cc = prepare(df, grid, ["a", "b"], continuous="z", outside="drop")

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
