"""Checks of geosynth.data: warnings' lines, declared domains, names and identifying data."""

import re
import warnings

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import shapely

from geosynth.data import check_declared, domain_codes, prepare
from geosynth.datasets import paiva_scenario
from geosynth.errors import DataWarning, InputError, PrivacyLeakWarning
from geosynth.lattice import Grid

CRS = "EPSG:31983"
DOMAIN = {"sex": ["f", "m"]}


def make_gdf(n=40, seed=0):
    rng = np.random.default_rng(seed)
    geometry = gpd.points_from_xy(rng.uniform(0, 10, n), rng.uniform(0, 10, n))
    return gpd.GeoDataFrame({"sex": rng.choice(["m", "f"], n)}, geometry=geometry, crs=CRS,
                            index=[f"r{i}" for i in range(n)])


@pytest.fixture
def gdf():
    return make_gdf()


@pytest.fixture
def grid():
    return Grid.regular((0, 0, 10, 10), shape=(4, 4), crs=CRS)


def recorded(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [w for w in caught if issubclass(w.category, DataWarning | PrivacyLeakWarning)]


# ------------------------------------------------------------------ warnings name the user's line


def test_warnings_of_prepare_with_levels_name_the_callers_line_in_the_same_order(gdf):
    # A lattice over the records' own bounds (PrivacyLeakWarning) and a record outside it
    # (DataWarning): with levels= the bounds warning named a line of geosynth/data.py.
    on_records = Grid.regular(tuple(gdf.total_bounds), shape=(4, 4), crs=CRS)
    outlier = gdf.iloc[:1].copy()
    outlier.geometry = gpd.points_from_xy([100.0], [100.0], crs=CRS)
    outlier.index = ["far"]
    data = pd.concat([gdf, outlier])
    with_levels = recorded(lambda: prepare(data, on_records, ["sex"], levels=DOMAIN))
    without = recorded(lambda: prepare(data, on_records, ["sex"], outside="drop"))
    assert [w.category for w in with_levels] == [PrivacyLeakWarning, DataWarning]
    assert [w.category for w in with_levels] == [w.category for w in without]
    for w in with_levels + without:
        assert w.filename == __file__, (w.category.__name__, w.filename)


# ------------------------------------------------------------------ booleans on a declared domain


@pytest.mark.parametrize("flag", [True, np.True_])
def test_booleans_among_numbers_are_dropped_not_refused_on_a_declared_domain(gdf, grid, flag):
    # Refusing read the records' values: with the True record the preparation of a DP release
    # failed, without it it succeeded (an event of epsilon = infinity). It is dropped instead.
    codes = [1 if k % 2 else 2 for k in range(len(gdf))]
    gdf["code"] = pd.Series(codes, index=gdf.index, dtype=object)
    clean = prepare(gdf, grid, ["code"], levels={"code": [1, 2]})
    gdf.loc["r3", "code"] = flag  # was level 1
    caught = recorded(lambda: prepare(gdf, grid, ["code"], levels={"code": [1, 2]}))
    assert [w.category for w in caught] == [DataWarning]
    assert "1 with an attribute value outside the declared levels" in str(caught[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        counts = prepare(gdf, grid, ["code"], levels={"code": [1, 2]})
    assert counts.n_records == clean.n_records - 1 and "r3" not in counts.record_index
    assert counts.combos["n_records"].tolist() == [clean.combos["n_records"][0] - 1,
                                                    clean.combos["n_records"][1]]


def test_domain_codes_match_booleans_only_to_boolean_levels():
    values = np.array([True, 1, 1.0, False, 0, np.True_, "1"], dtype=object)
    assert domain_codes([0, 1], values).tolist() == [-1, 1, 1, -1, 0, -1, -1]
    assert domain_codes([False, True], values).tolist() == [1, -1, -1, 0, -1, 1, -1]
    assert domain_codes(["0", "1"], values).tolist() == [-1, -1, -1, -1, -1, -1, 1]


@pytest.mark.parametrize("column, declared, fix", [
    (lambda n: np.arange(n) % 2 == 0, [0, 1], r"levels\['b'\] = \[False, True\]"),
    (lambda n: pd.array(np.arange(n) % 2 == 0, dtype="boolean"), [0, 1], r"\[False, True\]"),
    (lambda n: np.arange(n) % 2, [False, True], r"numeric levels \(e.g. \[0, 1\]\)"),
])
def test_a_boolean_column_declared_with_numbers_is_refused_from_its_dtype(gdf, grid, column,
                                                                          declared, fix):
    # Public facts (dtype, declared levels); True was counted as level 1 before, and would now
    # match nothing (every record dropped).
    gdf["b"] = column(len(gdf))
    with pytest.raises(InputError, match=rf"attribute 'b' is a (boolean|numeric) column.*{fix}"):
        prepare(gdf, grid, ["b"], levels={"b": declared})


def test_a_boolean_column_on_boolean_levels_is_counted(gdf, grid):
    gdf["b"] = np.arange(len(gdf)) % 4 == 0
    counts = prepare(gdf, grid, ["b"], levels={"b": [False, True]})
    assert counts.combos["n_records"].tolist() == [30, 10]


# ------------------------------------------------------------------ declared levels: linear check


class Level:
    """A level whose comparisons are counted."""

    compared = 0

    def __init__(self, value):
        self.value = value

    def __hash__(self):
        return hash(self.value)

    def __eq__(self, other):
        Level.compared += 1
        return isinstance(other, Level) and self.value == other.value


def test_checking_declared_levels_is_linear_in_their_number():
    # Each level was compared with all before it: 10^6 declared levels took hours.
    Level.compared = 0
    n = 1000
    assert len(check_declared([Level(k) for k in range(n)], "levels['x']")) == n
    assert Level.compared < 10 * n
    with pytest.raises(InputError, match=r"levels\['x'\] lists \['1.0', '2'\] more than once"):
        check_declared([1, 2, 3, 1.0, 2], "levels['x']")


# ------------------------------------------------------------------ attribute names


def test_attributes_given_as_a_column_of_values_are_not_quoted(gdf, grid):
    gdf["pid"] = [f"P{k:05d}" for k in range(len(gdf))]
    with pytest.raises(InputError, match=r"got Series of shape \(40,\)") as error:
        prepare(gdf, grid, gdf["pid"])
    assert "P0000" not in str(error.value)


@pytest.mark.parametrize("levels", [None, {5: ["a", "b"], "5": ["c", "d"]}])
def test_attributes_not_named_by_text_are_refused(gdf, grid, levels):
    # combos got one "5_code" column: attribute 5 took the codes of attribute "5"; a column
    # 5 alone passed prepare and failed the fit with a message naming no column.
    gdf[5] = np.where(np.arange(len(gdf)) < 20, "a", "b")
    gdf["5"] = np.where(np.arange(len(gdf)) % 2 == 0, "c", "d")
    for attributes in ([5, "5"], [5]):
        with pytest.raises(InputError, match=r"the columns \[5\] are named by int, not text"):
            prepare(gdf, grid, attributes, levels=levels)
    gdf = gdf.rename(columns={5: "five"})
    counts = prepare(gdf, grid, ["five", "5"])
    assert counts.combo_codes.tolist() == [[0, 0], [0, 1], [1, 0], [1, 1]]


@pytest.mark.parametrize(("renamed", "attributes", "continuous", "refusal"), [
    ({"sex": "_sex"}, ["_sex"], None, r"\['_sex'\] start with '_'.*\{'_sex': 'sex'\}"),
    ({"z": "_income"}, ["sex"], "_income", r"\['_income'\] start with '_'"),
    ({"sex": "index"}, ["index"], None, r"\['index'\] are names of record or cell identifiers"),
    ({"sex": "Cell"}, ["Cell"], None, r"\['Cell'\] are names of record or cell identifiers"),
    # one GeoPackage column, or the layer's own name: refused by the writer after the fit
    ({"z": "SEX"}, ["sex", "SEX"], None, r"'sex' and 'SEX' differ only in case.*\{'SEX': "),
    ({"z": "Sex"}, ["sex"], "Sex", r"'sex' and 'Sex' differ only in case"),
    ({"sex": "Geom"}, ["Geom"], None, r"'Geom' has a name a release layer keeps"),
])
def test_columns_a_public_release_cannot_carry_are_refused_before_any_work(
        gdf, grid, renamed, attributes, continuous, refusal):
    # to_public dropped an attribute "_sex" from every public release without a word (the
    # file's metadata still listed it), and refused one named "index" only after the fit.
    data = gdf.assign(z=np.linspace(0.0, 1.0, len(gdf))).rename(columns=renamed)
    with pytest.raises(InputError, match=refusal):
        prepare(data, grid, attributes, continuous=continuous)


def test_multiindex_column_names_are_named_before_the_geometry(gdf, grid):
    # geopandas finds no geometry among MultiIndex columns: "set one with set_geometry" was
    # the message, which does not help
    flat = gdf.copy()
    flat.columns = pd.MultiIndex.from_tuples([(c, "") for c in gdf.columns])
    with pytest.raises(InputError, match="MultiIndex"):
        prepare(flat, grid, ["sex"])


# ------------------------------------------------------------------ identifying combinations


def test_combinations_that_identify_records_are_warned_about(gdf, grid):
    # 8 x 5 levels over 40 records, one record each: neither attribute identifies records and
    # 40 possible combinations are not more than the records, yet every record is unique.
    gdf["a"] = np.repeat(np.arange(8), 5)
    gdf["b"] = np.tile(np.arange(5), 8)
    caught = recorded(lambda: prepare(gdf, grid, ["a", "b"]))
    assert [w.category for w in caught] == [PrivacyLeakWarning]
    message = str(caught[0].message)
    assert "attributes ['a', 'b']" in message and "40 combinations among 40 records" in message
    assert caught[0].filename == __file__
    gdf["b"] = np.tile(np.arange(2), 20)  # 16 combinations of 2 or 3 records: no warning
    assert recorded(lambda: prepare(gdf, grid, ["a", "b"])) == []


def test_attributes_named_by_tuples_are_refused(gdf, grid):
    # The count table's columns became a MultiIndex (a pandas deprecation, an error in pandas 4).
    gdf[("a", "b")] = np.where(np.arange(len(gdf)) < 20, "x", "y")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no pandas warning on the way to the refusal
        with pytest.raises(InputError, match=r"the columns \[\('a', 'b'\)\] are named by tuple"):
            prepare(gdf, grid, [("a", "b")])


def _scattered(n, seed=0):
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0, 10_000, size=(n, 2))
    return gpd.GeoDataFrame({"y": rng.integers(0, 2, n)},
                            geometry=gpd.points_from_xy(xy[:, 0], xy[:, 1]), crs="EPSG:3857")


def test_a_lattice_of_hundreds_of_cells_per_record_is_refused_with_a_cell_size():
    # 10 m cells over 10 km for 400 records: 1,000,000 cells, 2,500 per record.
    gdf = _scattered(400)
    grid = Grid.regular((0, 0, 10_000, 10_000), cell_size=10, crs="EPSG:3857")
    with pytest.raises(InputError) as err:
        prepare(gdf, grid, attributes=["y"])
    message = str(err.value)
    assert "1,000,000 cells for 400 records (2,500 cells per record" in message
    # One record per cell: 10 m x sqrt(2,500) = 500 m.
    assert "cell_size=500 (CLI: --cell-size)" in message


def test_a_fine_lattice_with_records_enough_or_few_cells_passes():
    grid = Grid.regular((0, 0, 10_000, 10_000), shape=(100, 100), crs="EPSG:3857")  # 10,000
    with pytest.warns(DataWarning, match="99 cells per record"):
        assert prepare(_scattered(101), grid, attributes=["y"]).n_cells == 10_000
    small = Grid.regular((0, 0, 10_000, 10_000), shape=(99, 100), crs="EPSG:3857")
    with warnings.catch_warnings():
        # too few cells to judge: not even a warning (3 records do get another one)
        warnings.filterwarnings("error", message=".*cells per record")
        assert prepare(_scattered(3), small, attributes=["y"]).n_cells == 9_900


def test_a_lattice_of_20_to_100_cells_per_record_is_prepared_with_a_warning_and_a_fix():
    # 100 m cells over 10 km for 400 records: 10,000 cells, 25 per record; the warning names
    # the cell size of about one record per cell (100 m x sqrt(25) = 500 m) and the tuner,
    # and points at the caller's line.
    grid = Grid.regular((0, 0, 10_000, 10_000), cell_size=100, crs="EPSG:3857")
    with pytest.warns(DataWarning) as caught:
        counts = prepare(_scattered(400), grid, attributes=["y"])
    assert counts.n_cells == 10_000
    [warning] = [w for w in caught if "cells per record" in str(w.message)]
    message = str(warning.message)
    assert "10,000 cells for 400 records (25 cells per record)" in message
    assert "cell_size=500 (CLI: --cell-size)" in message and "geosynth tune" in message
    assert warning.filename == __file__


def test_the_fix_for_hexagons_names_their_own_option():
    # --cell-size would switch the command line to squares; hexagons take --hex-size.
    grid = Grid.hexagonal((0, 0, 10_000, 10_000), cell_size=60, crs="EPSG:3857")
    with pytest.warns(DataWarning) as caught:
        prepare(_scattered(400), grid, attributes=["y"])
    [warning] = [w for w in caught if "cells per record" in str(w.message)]
    assert "(CLI: --hex-size)" in str(warning.message)
    assert "--cell-size" not in str(warning.message)


def test_twenty_cells_per_record_or_fewer_get_no_warning():
    grid = Grid.regular((0, 0, 10_000, 10_000), cell_size=100, crs="EPSG:3857")  # 10,000 cells
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert prepare(_scattered(500), grid, attributes=["y"]).n_cells == 10_000  # 20 each


def test_a_lattice_on_a_public_domain_is_not_judged_by_its_records():
    # Under DP the refusal would depend on the number of records: not made there.
    grid = Grid.regular((0, 0, 10_000, 10_000), cell_size=50, crs="EPSG:3857")  # 40,000 cells
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        counts = prepare(_scattered(40), grid, attributes=["y"], levels={"y": [0, 1]})
    assert counts.n_cells == 40_000


# ------------------------------------------------------------------ regions built from the records


@pytest.mark.parametrize("shape", ["box", "hull"])
def test_a_region_built_from_the_records_is_a_privacy_leak_warning(gdf, shape):
    """region=box(*gdf.total_bounds) on a grid over public bounds: the release's habitable
    fractions gave the records' xmin and xmax to every digit, with no warning. Their convex
    hull has the same extent."""
    points = shapely.union_all(gdf.geometry.values)
    region = (shapely.box(*gdf.total_bounds) if shape == "box" else shapely.convex_hull(points))
    lattice = Grid.regular((-5.0, -5.0, 15.0, 15.0), shape=(4, 4), crs=CRS, region=region)
    caught = recorded(lambda: prepare(gdf, lattice, ["sex"]))
    assert [w.category for w in caught] == [PrivacyLeakWarning]
    message = str(caught[0].message)
    assert "habitable extent" in message and "xmin, ymin, xmax, ymax" in message
    assert caught[0].filename == __file__
    # A region a little wider than the records is not flagged; rounded corners would be:
    # a hull's are arcs around records (test_a_region_drawn_around_the_records_...).
    wider = Grid.regular((-5.0, -5.0, 15.0, 15.0), shape=(4, 4), crs=CRS,
                         region=shapely.buffer(region, 0.5, join_style="mitre"))
    assert recorded(lambda: prepare(gdf, wider, ["sex"])) == []


def _cluster_and_one_alone(n=61, seed=0):
    """Records around (400, 400) and one alone at (812.34, 157.89)."""
    rng = np.random.default_rng(seed)
    xy = np.vstack([rng.normal(400, 80, (n - 1, 2)), [[812.34, 157.89]]])
    return gpd.GeoDataFrame({"sex": rng.choice(["f", "m"], n)},
                            geometry=gpd.points_from_xy(xy[:, 0], xy[:, 1]), crs=CRS)


@pytest.mark.parametrize("drawn", ["buffers", "buffers of 5 segments", "exclude", "hexagons",
                                   "10 m cells", "snapped to 1 cm"])
def test_a_region_drawn_around_the_records_is_a_privacy_leak_warning(drawn):
    """region = 60 m around the records: every edge lies 60 m beyond the records, so the box
    check passed, and a circle fitted to the habitable fractions of the six cells around the
    lone record gave its coordinates back to the centimetre."""
    gdf = _cluster_and_one_alone()
    around = gdf.buffer(60, quad_segs=5 if "5 seg" in drawn else 16).union_all()
    if drawn == "snapped to 1 cm":  # each vertex moved by up to 7 mm
        around = shapely.set_precision(around, 0.01)
    outer = (-100.0, -100.0, 1100.0, 1100.0)
    lattice = {
        "buffers": lambda: Grid.regular(outer, cell_size=100, crs=CRS, region=around),
        "buffers of 5 segments": lambda: Grid.regular(outer, cell_size=100, crs=CRS,
                                                      region=around),
        "exclude": lambda: Grid.regular(outer, cell_size=100, crs=CRS,
                                        exclude=shapely.box(*outer).difference(around)),
        "hexagons": lambda: Grid.hexagonal(gpd.GeoSeries([around], crs=CRS), 60, crs=CRS),
        # the cells' edges cut every chord: their vertices broke each arc into short runs
        "10 m cells": lambda: Grid.regular(outer, cell_size=10, crs=CRS, region=around),
        "snapped to 1 cm": lambda: Grid.regular(outer, cell_size=100, crs=CRS, region=around),
    }[drawn]()
    caught = recorded(lambda: prepare(gdf, lattice, ["sex"]))
    assert [w.category for w in caught] == [PrivacyLeakWarning]
    assert re.search(r"runs in arcs around \d+ record location", str(caught[0].message))
    assert caught[0].filename == __file__


@pytest.mark.parametrize("region", ["staircase", "circle", "irregular"])
def test_public_regions_do_not_trace_the_records(region):
    """A region of raster cells with records in whole metres or at the cells' centres (ties of
    distance at every turn), a circle around a public site, an irregular outline: no warning."""
    rng = np.random.default_rng(1)
    if region == "staircase":
        pixels = np.argwhere(rng.random((60, 60)) < 0.8) * 10.0
        outline = shapely.union_all(shapely.box(pixels[:, 1], pixels[:, 0], pixels[:, 1] + 10,
                                                pixels[:, 0] + 10))
        xy = np.vstack([np.round(rng.uniform(0, 600, (4000, 2))),
                        np.floor(rng.uniform(0, 600, (4000, 2)) / 10) * 10 + 5])
    else:
        angle = np.sort(rng.uniform(0, 2 * np.pi, 300))
        radius = 250.0 if region == "circle" else 200 + 90 * rng.random(300)
        outline = (shapely.Point(300, 300).buffer(250) if region == "circle" else
                   shapely.Polygon(np.c_[300 + radius * np.cos(angle),
                                         300 + radius * np.sin(angle)]))
        xy = np.round(rng.uniform(0, 600, (8000, 2)), 1)
    xy = xy[shapely.contains_xy(outline, xy[:, 0], xy[:, 1])]
    gdf = gpd.GeoDataFrame({"sex": rng.choice(["f", "m"], len(xy))},
                           geometry=gpd.points_from_xy(xy[:, 0], xy[:, 1]), crs=CRS)
    lattice = Grid.regular((-50.0, -50.0, 650.0, 650.0), cell_size=50, crs=CRS, region=outline)
    assert recorded(lambda: prepare(gdf, lattice, ["sex"])) == []


@pytest.mark.parametrize("kind", ["square", "hexagonal"])
def test_an_exclude_built_from_the_records_is_a_privacy_leak_warning_on_snapped_bounds(gdf,
                                                                                      kind):
    # Grid.from_points snaps its bounds outward, so the check of the habitable extent was
    # skipped with them: exclude = the lattice less the records' box ("where nobody lives")
    # published the records' four extremes to every digit through the habitable fractions.
    options = {"shape": (4, 4)} if kind == "square" else {"cell_size": 2.0, "kind": kind}
    snapped = Grid.from_points(gdf, **options)
    nobody = shapely.difference(shapely.box(*snapped.bounds).buffer(10.0),
                                shapely.box(*gdf.total_bounds))
    lattice = Grid.from_points(gdf, exclude=nobody, **options)
    assert lattice.snap_unit is not None
    caught = recorded(lambda: prepare(gdf, lattice, ["sex"]))
    assert [w.category for w in caught] == [PrivacyLeakWarning]
    assert "habitable extent" in str(caught[0].message)
    assert caught[0].filename == __file__
    assert recorded(lambda: prepare(gdf, snapped, ["sex"])) == []


# ------------------------------------------------------------------ identifiers past the levels


def test_an_attribute_named_like_an_identifier_is_refused_whatever_its_levels(grid):
    # Three visits per patient: no level of one record, levels not above half the records, so
    # the level rules passed it, and the writers let a fitted attribute through by any name:
    # every release published the patients' ids.
    gdf = make_gdf(n=198, seed=1)
    gdf["patient_id"] = np.random.default_rng(2).permutation(np.repeat(np.arange(66), 3))
    with pytest.raises(InputError, match=r"'patient_id' has 66 distinct levels among 198 "
                                         r"records, 0 of them held by a single record, and is "
                                         r"named like a record identifier.*allow_identifying"):
        prepare(gdf, grid, ["patient_id"])
    with pytest.warns(DataWarning, match="kept because allow_identifying=True"):
        counts = prepare(gdf, grid, ["patient_id"], allow_identifying=True)
    assert counts.n_combos == 66
    # An area's code is not a record's: large groups pass under any name.
    gdf["ID_MUNICIP"] = np.repeat([3550308, 3304557], 99)
    assert recorded(lambda: prepare(gdf, grid, ["ID_MUNICIP"])) == []


@pytest.mark.parametrize("visits", [5, 10, 18])
def test_an_identifier_of_frequent_visitors_is_refused(grid, visits):
    # A dialysis unit's export: five or ten visits per patient passed the name rule (groups
    # of fewer than five records), and every MRN was published verbatim, without a word.
    n = 198 // visits * visits
    gdf = make_gdf(n=n, seed=1)
    gdf["mrn"] = np.random.default_rng(2).permutation(np.repeat(np.arange(n // visits),
                                                                visits))
    with pytest.raises(InputError, match=r"'mrn' has .* and is named like a record "
                                         r"identifier.*allow_identifying"):
        prepare(gdf, grid, ["mrn"])
    # ... while groups of 20 or more records pass under the name
    gdf["region_id"] = np.repeat(np.arange(n // 22 + 1), 22)[:n]
    prepare(gdf, grid, ["region_id"])
    # ... and a facility's identifier over groups of five or more: eight patients a clinic
    gdf["clinic_id"] = np.repeat(np.arange(n // 8 + 1), 8)[:n]
    assert recorded(lambda: prepare(gdf, grid, ["clinic_id"])) == []


@pytest.mark.parametrize("name", ["nhs_number", "NHSNumber", "chi_number", "cns",
                                  "cod_paciente", "patient_code", "patient_identifier",
                                  "pseudo_id", "pseudonym"])
def test_health_service_numbers_and_record_codes_are_a_persons_identifiers(grid, name):
    # Ten visits each: NHS numbers, pseudonyms and a patient's code were taken for a
    # facility's identifiers (groups of 5 or more pass) or for no identifier at all, and
    # every one was published verbatim, without a word.
    gdf = make_gdf(n=200, seed=1)
    gdf[name] = np.random.default_rng(2).permutation(np.repeat(np.arange(20), 10))
    with pytest.raises(InputError, match=rf"'{name}' has 20 distinct levels .*named like a "
                                         r"record identifier"):
        prepare(gdf, grid, [name])
    # codes that are no record's pass as labels many records share
    for label in ("zip_code", "icd_code", "chi_square"):
        gdf[label] = np.resize(["a", "b", "c"], 200)
        assert recorded(lambda label=label: prepare(gdf, grid, [label])) == []


def test_an_attribute_of_small_groups_is_warned_about(grid):
    gdf = make_gdf(n=198, seed=1)
    gdf["visitor"] = np.random.default_rng(2).permutation(np.repeat(np.arange(66), 3))
    caught = recorded(lambda: prepare(gdf, grid, ["visitor"]))
    assert [w.category for w in caught] == [PrivacyLeakWarning]
    message = str(caught[0].message)
    assert "'visitor' (198 of the 198 records, 66 levels)" in message
    assert "fewer than 4 others" in message and caught[0].filename == __file__
    # Groups of five or more records each, or few records in small groups: no warning.
    gdf["visitor"] = np.repeat(np.arange(33), 6)
    assert recorded(lambda: prepare(gdf, grid, ["visitor"])) == []
    gdf["visitor"] = np.r_[np.zeros(99, int), np.repeat(np.arange(1, 34), 3)]  # half
    assert recorded(lambda: prepare(gdf, grid, ["visitor"])) == []


def test_a_combination_of_one_record_is_warned_about_without_naming_it(grid):
    # One woman among the HIV records: each attribute has large levels, and the combinations
    # are far from identifying, but every release publishes hers.
    gdf = make_gdf(n=200, seed=3)
    gdf["sex"] = np.repeat(["F", "M"], 100)
    gdf["dx"] = np.r_[["HIV"], ["flu"] * 99, ["HIV"] * 33, ["flu"] * 67]
    caught = recorded(lambda: prepare(gdf, grid, ["sex", "dx"]))
    assert [w.category for w in caught] == [PrivacyLeakWarning]
    message = str(caught[0].message)
    assert "1 combination(s) of attributes ['sex', 'dx'] are held by a single record" in message
    assert "HIV" not in message and caught[0].filename == __file__
    gdf.loc[gdf.index[1], "dx"] = "HIV"  # two women: no warning
    assert recorded(lambda: prepare(gdf, grid, ["sex", "dx"])) == []
    # A record alone in two levels (warned of as rare levels) did not hide her: the unique
    # combinations were compared with the number of single-record levels, 2 here.
    gdf.loc[gdf.index[1], "dx"] = "flu"
    gdf.loc[gdf.index[-1], ["sex", "dx"]] = ["X", "TB"]
    caught = recorded(lambda: prepare(gdf, grid, ["sex", "dx"]))
    messages = [str(w.message) for w in caught]
    assert any("1 combination(s) of attributes ['sex', 'dx']" in m for m in messages)
    assert any("have levels held by fewer than 3 records" in m for m in messages)


@pytest.mark.parametrize("kind", ["tuples", "wkt", "points", "categorical_wkt", "text"])
def test_an_attribute_of_locations_is_refused(grid, kind):
    # Block centroids as (x, y) tuples or WKT text were accepted, then dropped from the release
    # (to_public drops columns of locations) while its metadata listed them.
    gdf = make_gdf(n=40, seed=4)
    xy = np.floor(shapely.get_coordinates(gdf.geometry.array) / 5) * 5 + 2.5
    points = shapely.points(xy)
    exact = shapely.get_coordinates(gdf.geometry.array)
    values = {"tuples": [tuple(p) for p in xy], "wkt": list(shapely.to_wkt(points)),
              # each record's own "x, y": with allow_identifying, the combination labels of the
              # release's metadata held them all
              "text": [f"{x:.1f}, {y:.1f}" for x, y in exact],
              "points": list(points),
              "categorical_wkt": pd.Categorical(shapely.to_wkt(points))}[kind]
    gdf["block"] = pd.Series(values, index=gdf.index, dtype=None if kind.startswith("cat")
                             else object)
    with pytest.raises(InputError, match=r"attribute 'block' holds locations .*drop it from "
                                         r"attributes"):
        prepare(gdf, grid, ["sex", "block"], allow_identifying=True)


@pytest.mark.parametrize("order", ["xy", "yx"])
def test_a_few_records_coordinates_as_text_are_refused(grid, order):
    """Three records' own "x, y" beside "north" and "south": published as levels, to 0.1 m."""
    gdf = make_gdf(n=60, seed=4)
    exact = shapely.get_coordinates(gdf.geometry.array)
    labels = np.resize(np.array(["north", "south"], dtype=object), 60)
    for row in (3, 17, 40):
        x, y = exact[row] if order == "xy" else exact[row][::-1]
        labels[row] = f"{x:.1f}, {y:.1f}"
    gdf["addr"] = labels
    with pytest.raises(InputError, match=r"attribute 'addr' has a level that reads as "
                                         r"coordinates inside the lattice"):
        prepare(gdf, grid, ["addr"])
    gdf["addr"] = pd.Categorical(labels)
    with pytest.raises(InputError, match=r"reads as coordinates inside the lattice"):
        prepare(gdf, grid, ["addr"])


@pytest.mark.parametrize("written", ["decimal comma", "thousands", "axis letters", "named",
                                     "dict of numpy floats", "degrees", "household",
                                     "exponent", "hyphen", "three decimals after a comma",
                                     "degrees after a comma"])
def test_records_coordinates_written_otherwise_are_refused(written):
    """Formats the first rule missed: each published the records' own locations as levels."""
    scenario = paiva_scenario(n=120, seed=2)
    data = scenario.data.copy()
    grid = Grid.regular(scenario.bounds, shape=(4, 4), crs=scenario.crs)
    xy = shapely.get_coordinates(data.geometry.array)
    lonlat = shapely.get_coordinates(data.geometry.to_crs(4326).array)
    labels = np.resize(np.array(["north", "south"], dtype=object), len(data))
    rows = (3, 17, 40) if written != "household" else (3, 3, 3)
    for position, row in zip((5, 50, 90), rows, strict=True):
        x, y = xy[row]
        labels[position] = {
            "decimal comma": f"{x:.1f}; {y:.1f}".replace(".", ","),
            "thousands": f"{x:,.1f} {y:,.1f}",
            "axis letters": f"{x:.1f}E {y:.1f}N",
            "named": f"x={x:.1f}, y={y:.1f}",
            "dict of numpy floats": str({"x": np.float64(x), "y": np.float64(y)}),
            "degrees": f"{lonlat[row][1]:.6f}, {lonlat[row][0]:.6f}",
            "household": f"{x:.1f}, {y:.1f}",  # three records at one fix: not rare
            "exponent": f"{x:.7e} {y:.8e}",
            "hyphen": f"{x:.1f}-{y:.1f}",
            # a comma before three digits was read as a thousands separator only
            "three decimals after a comma": f"{x:.3f}; {y:.3f}".replace(".", ","),
            "degrees after a comma": f"{lonlat[row][1]:.3f} {lonlat[row][0]:.3f}".replace(
                ".", ","),
        }[written]
    data["addr"] = labels
    with pytest.raises(InputError, match=r"attribute 'addr' has a level that reads as "
                                         r"coordinates inside the lattice"):
        prepare(data, grid, ["addr"])
    data["addr"] = np.resize(np.array(["18 64", "1,5", "2019-05-03"], dtype=object), len(data))
    assert prepare(data, grid, ["addr"]).levels["addr"] == ["1,5", "18 64", "2019-05-03"]


@pytest.mark.parametrize("size", [3, 5, 12])
def test_households_coordinates_shared_by_their_members_are_refused(size):
    """Each household's "x y" (whole metres) held by its 3, 5 or 12 members: a level many
    records hold passed as a label, and the release gave every home to the metre."""
    scenario = paiva_scenario(n=120, seed=2)
    data = scenario.data.copy()
    grid = Grid.regular(scenario.bounds, shape=(4, 4), crs=scenario.crs)
    xy = shapely.get_coordinates(data.geometry.array)
    home = np.arange(len(data)) // size * size  # each household at its first member's place
    data["home"] = [f"{xy[h, 0]:.0f} {xy[h, 1]:.0f}" for h in home]
    data = data.set_geometry(gpd.points_from_xy(xy[home, 0], xy[home, 1]), crs=scenario.crs)
    assert min(scenario.bounds[:2]) > 100_000  # a UTM box: no label's numbers fall in it
    with pytest.raises(InputError, match=r"attribute 'home' has a level that reads as "
                                         r"coordinates inside the lattice"):
        prepare(data, grid, ["home"], allow_identifying=True)


def _geohash(lon, lat, length):
    """Encode a geohash (written here from its definition: bits alternate, longitude first)."""
    digits, box, code, bits, value, axis = "0123456789bcdefghjkmnpqrstuvwxyz", [
        [-180.0, 180.0], [-90.0, 90.0]], "", 0, 0, 0
    while len(code) < length:
        middle = sum(box[axis]) / 2
        high = (lon, lat)[axis] >= middle
        box[axis][0 if high else 1] = middle
        value, bits, axis = value * 2 + high, bits + 1, 1 - axis
        if bits == 5:
            code, bits, value = code + digits[value], 0, 0
    return code


def _plus_code(lon, lat):
    """Encode the 10 digits of a plus code (pairs of base-20 digits of latitude, longitude)."""
    digits, code, size = "23456789CFGHJMPQRVWX", "", 20.0
    lat, lon = lat + 90.0, lon + 180.0
    for _ in range(5):
        code += digits[int(lat // size)] + digits[int(lon // size)]
        lat, lon, size = lat % size, lon % size, size / 20.0
    return code[:8] + "+" + code[8:]


@pytest.mark.parametrize("written", ["geohash", "plus code", "h3"])
def test_records_location_codes_are_refused_even_when_identifying_is_allowed(written):
    """Three records' own 9-character geohashes (5 m), plus codes (14 m) or H3 cells beside
    "north" and "south" were published verbatim as levels with allow_identifying=True."""
    scenario = paiva_scenario(n=120, seed=2)
    data = scenario.data.copy()
    grid = Grid.regular(scenario.bounds, shape=(4, 4), crs=scenario.crs)
    lonlat = shapely.get_coordinates(data.geometry.to_crs(4326).array)
    labels = np.resize(np.array(["north", "south"], dtype=object), len(data))
    for position, row in zip((5, 50, 90), (3, 17, 40), strict=True):
        lon, lat = lonlat[row]
        labels[position] = {"geohash": _geohash(lon, lat, 9), "plus code": _plus_code(lon, lat),
                            "h3": f"89{row:03x}2828{row:04x}ff"}[written]
    data["where"] = labels
    kind = {"geohash": "a geohash", "plus code": "a plus code", "h3": "an H3 cell id"}[written]
    with pytest.raises(InputError, match=rf"attribute 'where' has a level that reads as {kind} "
                                         r"inside the lattice"):
        prepare(data, grid, ["where"], allow_identifying=True)
    # an area's code many records share (a 5-character geohash, 4.9 km) is a label
    data["where"] = np.resize(np.array([_geohash(*lonlat[0], 5), "elsewhere"], dtype=object),
                              len(data))
    assert len(prepare(data, grid, ["where"]).levels["where"]) == 2
    data["where"] = [_geohash(*lonlat[0], 7)] * len(data)  # shared by every record
    assert len(prepare(data, grid, ["where"]).levels["where"]) == 1


def test_a_word_spelt_with_geohash_letters_is_a_level():
    """"Western", held by 3 records of a lattice whose box holds where it decodes (119.0 E,
    20.7 N), was refused as a geohash: a geohash this fine holds a digit, nearly always."""
    rng = np.random.default_rng(6)
    lonlat = np.column_stack([rng.uniform(118.9, 119.1, 120), rng.uniform(20.6, 20.8, 120)])
    data = gpd.GeoDataFrame({"region": ["Western"] * 3 + ["Eastern", "Central"] * 58 + ["x"]},
                            geometry=gpd.points_from_xy(*lonlat.T), crs=4326).to_crs(32650)
    grid = Grid.regular(data.total_bounds + [-500, -500, 500, 500], shape=(4, 4),
                        crs=data.crs)
    assert "Western" in prepare(data, grid, ["region"]).levels["region"]


@pytest.mark.parametrize("labels", [["Income 5,000 - 10,000", "Income 10,000 - 20,000"],
                                    ["3.5 to 4.0 m", "4.0 to 4.5 m"], ["7.5, 8.0", "8.0, 8.5"]])
def test_number_labels_many_records_share_are_levels(labels):
    """Shared labels read inside the box (a site grid near its origin, a lattice whose box in
    degrees holds 5.000 and 10.000) were refused as locations, however many records held them."""
    rng = np.random.default_rng(3)
    xy = rng.uniform(0, 5000, (120, 2))
    data = gpd.GeoDataFrame({"band": np.resize(np.array(labels, dtype=object), 120)},
                            geometry=gpd.points_from_xy(xy[:, 0], xy[:, 1]), crs=CRS)
    grid = Grid.regular((0, 0, 5000, 5000), shape=(4, 4), crs=CRS)
    assert prepare(data, grid, ["band"]).levels["band"] == sorted(labels)
    data.loc[data.index[:2], "band"] = "9.5, 10.0"  # two records' own text: rare, refused
    with pytest.raises(InputError, match=r"reads as coordinates inside the lattice"):
        prepare(data, grid, ["band"])


@pytest.mark.parametrize("levels", [["1,0", "1,5", "2,0"], ["0 17", "18 64", "65 99"],
                                    ["1;2", "3;4", "5;6"]])
def test_text_levels_of_numbers_are_levels_not_locations(grid, levels):
    # Decimal-comma text and age bands read as coordinate text when the check ran on the
    # distinct levels (all distinct, as coordinates are).
    gdf = make_gdf(n=60, seed=5)
    gdf["band"] = np.resize(levels, 60)
    assert prepare(gdf, grid, ["band"]).levels["band"] == sorted(levels)


def test_tuples_of_labels_are_refused_as_no_level(grid):
    gdf = make_gdf(n=40, seed=5)
    gdf["group"] = pd.Series([("f", "adult"), ("m", "child")] * 20, index=gdf.index,
                             dtype=object)
    with pytest.raises(InputError, match=r"'group' holds tuples.*map\('/'.join\)"):
        prepare(gdf, grid, ["group"])


def test_levels_holding_a_nul_character_are_refused():
    # Files cut text at a NUL: "zone\x00north" and "zone\x00south" were fitted as two levels
    # and read back from the release as one, "zone".
    scenario = paiva_scenario(n=120, seed=2)
    data = scenario.data.assign(grp=np.where(scenario.data["y"] == 1, "zone\x00north",
                                             "zone\x00south"))
    grid = Grid.regular(scenario.bounds, shape=(3, 3), crs=scenario.crs)
    with pytest.raises(InputError, match=r"attribute 'grp' has levels holding a NUL character"):
        prepare(data, grid, ["grp"])


@pytest.mark.parametrize("given", [
    lambda g: {"attributes": [g["age"]]},
    lambda g: {"attributes": ["sex", g["age"]]},
    lambda g: {"attributes": ["sex", g["age"].to_numpy()]},
    lambda g: {"attributes": ["sex"], "continuous": [g["age"]]},
    lambda g: {"attributes": ["sex"], "levels": {"sex": g["sex"]}},
])
def test_a_column_given_for_its_name_is_refused_without_its_values(given):
    # [gdf.age] for ["age"]: the messages printed every value with its row label (or, with a
    # name before it, raised pandas' "truth value of a Series is ambiguous").
    gdf = make_gdf()
    gdf["age"] = np.arange(1_000_001, 1_000_001 + len(gdf))
    grid = Grid.regular((0, 0, 100, 100), shape=(2, 2), crs=CRS)
    with pytest.raises(InputError, match=r"must (list column names \(str\)|be a list of "
                                         r"levels), got (Series|ndarray) of shape \(40,\)") as info:
        prepare(gdf, grid, **given(gdf))
    assert "100000" not in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("column", ["easting", "latitude", "northing_km"])
def test_a_continuous_column_that_is_a_coordinate_is_warned_about(column):
    # An easting copied into a column, or a latitude beside points in metres, was modelled as
    # a measurement: the releases' values centred on each cell's mean of it, where the cell's
    # records lie on average.
    scenario = paiva_scenario(n=300, seed=1)
    data = scenario.data.copy()
    xy = shapely.get_coordinates(data.geometry.array)
    data[column] = {"easting": xy[:, 0], "latitude": data.geometry.to_crs(4326).y,
                    "northing_km": np.round(xy[:, 1] / 1000, 1)}[column]
    grid = Grid.regular(scenario.bounds, shape=(5, 5), crs=scenario.crs)
    caught = recorded(lambda: prepare(data, grid, ["y"], continuous=["z", column]))
    said = [str(w.message) for w in caught if w.category is PrivacyLeakWarning]
    assert len(said) == 1 and said[0].startswith(f"the continuous column {column!r} follows "
                                                 "the records' ")
    assert recorded(lambda: prepare(data, grid, ["y"], continuous="z")) == []
