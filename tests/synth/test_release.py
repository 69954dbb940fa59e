"""to_public: no index, shuffled rows, no internal columns, no original coordinates."""

import io
import json

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import shapely

from geosynth import prepare
from geosynth.errors import DataWarning, InputError, InputTypeError
from geosynth.synth import donut_mask, naive_synthesize, synthesize, to_public
from geosynth.synth.release import (
    BASELINE_ATTR,
    COLUMNS_ATTR,
    LINKED_ATTR,
    POINTS_ATTR,
    PUBLIC_ATTR,
    ReleaseInfo,
    baseline_method,
    column_digest,
    holds_geometries,
    is_identifier_name,
    is_linked,
    is_public,
    make_release,
    plain_columns,
    points_record,
    release_info,
    set_release_info,
)
from tests.synth.helpers import random_lambda, stub_fit


def sorted_rows(frame):
    xy = shapely.get_coordinates(frame.geometry.array)
    out = pd.DataFrame(frame.drop(columns=frame.geometry.name)).reset_index(drop=True)
    out["x"], out["y"] = xy[:, 0], xy[:, 1]
    return out.sort_values(list(out.columns)).reset_index(drop=True)


@pytest.fixture(scope="module")
def release(regular_data):
    gdf, _, counts = regular_data
    fit = stub_fit(counts, random_lambda(counts, chains=1, draws=2))
    return synthesize(fit, gdf, m=1, seed=3)[0]


def test_public_release_has_no_index_and_a_shuffled_order(release, regular_data):
    gdf, _, counts = regular_data
    public = to_public(release, seed=1)
    assert isinstance(public.index, pd.RangeIndex) and public.index.start == 0
    assert list(public.columns) == list(release.columns)
    assert public.crs == release.crs
    # the marker of shuffled rows, how the points were made and the columns made (with the
    # digests of their values, which the shuffle keeps), nothing else
    made = {c: column_digest(release[c]) for c in [*counts.attributes, *counts.covariates]}
    assert public.attrs == {PUBLIC_ATTR: True, "geosynth": {"method": "paiva"},
                            COLUMNS_ATTR: made, POINTS_ATTR: points_record(release)}
    assert release.attrs[LINKED_ATTR] is True  # the input is not modified
    # Same rows, other order.
    pd.testing.assert_frame_equal(sorted_rows(public), sorted_rows(release))
    assert not public.geometry.geom_equals_exact(release.geometry.reset_index(drop=True), 0).all()
    # No original coordinates anywhere.
    original = set(map(tuple, shapely.get_coordinates(gdf.geometry.array)))
    assert original.isdisjoint(map(tuple, shapely.get_coordinates(public.geometry.array)))
    numeric = public.select_dtypes("number").to_numpy()
    xy = shapely.get_coordinates(gdf.geometry.array)
    assert not np.isin(numeric, xy).any()


def test_shuffle_is_reproducible_by_seed(release):
    a, b, c = to_public(release, seed=5), to_public(release, seed=5), to_public(release, seed=6)
    pd.testing.assert_frame_equal(pd.DataFrame(a), pd.DataFrame(b))
    assert not a.geometry.geom_equals_exact(c.geometry, 0).all()


def test_a_guessed_seed_does_not_undo_the_shuffle(release):
    # The permutation was rng.permutation(n) of the seed alone: an intruder who guessed a
    # small seed redrew it and put the rows back in the input's order (row k = record k).
    public = to_public(release, seed=4)
    order = np.random.default_rng(4).permutation(len(release))
    back = public.geometry.iloc[np.argsort(order)].reset_index(drop=True)
    same = back.geom_equals_exact(release.geometry.reset_index(drop=True), 0)
    assert same.mean() < 0.1, f"{same.mean():.0%} of the rows back in the input's order"
    # Keyed by the rows in their order: the same rows in another order shuffle otherwise.
    swapped = release.iloc[[1, 0, *range(2, len(release))]]
    first = to_public(release, seed=4).geometry
    assert not first.geom_equals_exact(to_public(swapped, seed=4).geometry, 0).all()


def test_internal_and_extra_geometry_columns_are_dropped(regular_data):
    gdf, grid, _ = regular_data
    (naive,) = naive_synthesize(gdf, grid, m=1, seed=1)
    naive["_cell"] = grid.locate(naive.geometry)
    naive["original"] = gdf.geometry  # a second geometry column
    public = to_public(naive, seed=2)
    assert list(public.columns) == ["a", "c", "other", "z", "geometry"]
    assert public.geometry.name == "geometry"


@pytest.mark.parametrize("how", ["list", "astype", "mixed"])
def test_geometries_in_an_object_column_are_dropped(release, regular_data, how):
    """Original points in an object column (not GeometryDtype) were published by to_public."""
    gdf = regular_data[0]
    internal = release.copy()
    points = list(gdf.geometry)
    if how == "astype":
        points = gdf.geometry.astype(object)
    elif how == "mixed":
        points = [None, "n/a"] + points[2:]
    internal["home"] = pd.Series(points, index=gdf.index, dtype=object)
    internal["label"] = pd.Series(["x"] * len(gdf), index=gdf.index, dtype=object)
    public = to_public(internal, seed=2)
    assert list(public.columns) == ["a", "c", "z", "geometry", "label"]
    original = set(map(tuple, shapely.get_coordinates(gdf.geometry.array)))
    assert original.isdisjoint(map(tuple, shapely.get_coordinates(public.geometry.array)))


_ENCODINGS = {
    "wkt": lambda points: points.to_wkt(),
    "ewkt": lambda points: "SRID=31983;" + points.to_wkt(),
    "wkb": lambda points: pd.Series(points.to_wkb(), index=points.index, dtype=object),
    "hex-wkb": lambda points: points.to_wkb(hex=True),
    "geojson": lambda points: pd.Series([gpd.GeoSeries([p]).to_json() for p in points],
                                        index=points.index),
    "categorical-wkt": lambda points: points.to_wkt().astype("category"),
}


@pytest.mark.parametrize("encoding", list(_ENCODINGS))
def test_geometries_written_as_text_or_bytes_are_dropped(release, regular_data, encoding):
    """The original points as WKT, WKB or GeoJSON text were kept by to_public and published."""
    gdf = regular_data[0]
    internal = release.copy()
    internal["home"] = _ENCODINGS[encoding](gdf.geometry)
    internal["label"] = pd.Series(["Point (of interest)"] * len(gdf), index=gdf.index)
    assert holds_geometries(internal["home"]) and not holds_geometries(internal["label"])
    public = to_public(internal, seed=2)
    assert "home" not in public.columns and "label" in public.columns


@pytest.mark.parametrize("values", [["POINT EMPTY", None], ["0101", "cafe" * 20], [b"abc"],
                                    ['{"coordinates": 1}'], [1.5, 2.5]])
def test_text_that_holds_no_geometry_is_kept(values):
    assert not holds_geometries(pd.Series(values))


def test_keeps_a_custom_geometry_name():
    frame = gpd.GeoDataFrame(
        {"v": [1, 2, 3]}, geometry=gpd.points_from_xy([0, 1, 2], [0, 1, 2]), crs="EPSG:31983"
    ).rename_geometry("where")
    frame.index = ["p", "q", "r"]
    public = to_public(frame, seed=0)
    assert public.geometry.name == "where"
    assert public.index.tolist() == [0, 1, 2]


def with_a_record_outside(gdf):
    """``gdf`` and one more record, outside the lattice, of level ``c = "rare-confidential-level"``.

    ``prepare(..., outside="drop")`` drops it: its level is in no release.
    """
    outside = gdf.head(1).set_geometry(gpd.points_from_xy([1e6], [1e6]), crs=gdf.crs)
    outside.index = [10**6]
    outside["c"] = "rare-confidential-level"
    return pd.concat([gdf, outside])


def test_public_categories_are_only_those_of_its_rows(regular_data):
    """A category held only by a record that prepare dropped was published in the dtype."""
    gdf, grid, _ = regular_data
    gdf = with_a_record_outside(gdf.head(200))
    gdf["c"] = pd.Categorical(gdf["c"], categories=["u", "v", "w", "rare-confidential-level"],
                              ordered=True)
    with pytest.warns(DataWarning, match="dropped 1 of 201 points"):
        counts = prepare(gdf, grid, attributes=["a", "c"], outside="drop")
    fit = stub_fit(counts, random_lambda(counts, chains=1, draws=2))
    (release,) = synthesize(fit, gdf, m=1, seed=3)
    public = to_public(release, seed=1)
    assert list(public["c"].cat.categories) == ["u", "v"]
    assert public["c"].cat.ordered
    assert sorted(public["c"].astype(str)) == sorted(release["c"].astype(str))
    assert "rare-confidential-level" in release["c"].cat.categories  # input not modified


def test_to_public_validation():
    with pytest.raises(InputError, match="release must be a geopandas.GeoDataFrame"):
        to_public(pd.DataFrame({"a": [1]}))
    no_geometry = gpd.GeoDataFrame({"a": [1]})
    with pytest.raises(InputError, match="no active geometry column"):
        to_public(no_geometry)


def test_internal_releases_are_marked_linked_and_public_ones_not(release, regular_data):
    gdf, grid, _ = regular_data
    (naive,) = naive_synthesize(gdf, grid, m=1, seed=1)
    (donut,) = donut_mask(gdf, 1, 2, m=1, seed=1)
    for internal in (release, naive, donut):
        assert is_linked(internal) and not is_public(internal)
        # pandas carries the marker through selections, copies and re-orderings
        shuffled = internal[["geometry"]].sample(frac=1, random_state=1).reset_index(drop=True)
        assert is_linked(shuffled)
        public = to_public(internal, seed=2)
        assert is_public(public) and not is_linked(public)
    assert not is_linked(gdf) and not is_linked(pd.DataFrame()) and not is_linked(None)


@pytest.mark.parametrize(("method", "linked"), [("paiva", True), ("naive", True),
                                                ("paiva-dp", False), ("onthemap", False)])
def test_make_release_marks_row_aligned_methods(method, linked):
    data = pd.DataFrame({"a": [1, 2]})
    xy = np.array([[0.0, 0.0], [1.0, 1.0]])
    info = ReleaseInfo(method=method, release=0, epsilon=1.0)
    out = make_release(data, xy, "geometry", "EPSG:31983", info)
    assert is_linked(out) is linked
    # A release with an ε records its ledger, None when no accountant charged it.
    assert out.attrs["geosynth"] == {"method": method, "release": 0, "epsilon": 1.0,
                                     "ledger": None}
    assert release_info(out) == info
    forced = make_release(data, xy, "geometry", "EPSG:31983", info, linked=False)
    assert not is_linked(forced)


def test_release_info_is_a_plain_dict_in_attrs_and_reads_back():
    info = ReleaseInfo(method="onthemap", release=1, weighted=False, epsilon=2.0,
                       neighbours="add-remove", ledger={"spent": {"epsilon": 2.0}},
                       parameters={"epsilon_totals": 0.2, "prior": None}, m=3)
    record = info.to_attrs()
    assert record == {"method": "onthemap", "release": 1, "weighted": False, "epsilon": 2.0,
                      "neighbours": "add-remove", "ledger": {"spent": {"epsilon": 2.0}},
                      "epsilon_totals": 0.2, "prior": None, "m": 3}
    json.dumps(record)  # travels into GeoParquet files and across processes
    frame = gpd.GeoDataFrame({"a": [1]}, geometry=gpd.points_from_xy([0.0], [0.0]))
    assert release_info(frame) is None
    set_release_info(frame, info)
    assert frame.attrs["geosynth"] == record
    assert release_info(frame.iloc[:1].copy()) == info  # pandas carries attrs along
    record["ledger"]["spent"]["epsilon"] = 9.0  # the record is a copy
    assert info.ledger == {"spent": {"epsilon": 2.0}}
    assert release_info(pd.DataFrame()) is None and release_info(object()) is None


def _framed(infos):
    frames = []
    for k, info in enumerate(infos):
        frame = gpd.GeoDataFrame({"a": [k]}, geometry=gpd.points_from_xy([0.0], [0.0]))
        if info is not None:
            set_release_info(frame, info)
        frames.append(frame)
    return frames


def test_of_set_takes_the_last_recorded_value():
    frames = _framed([ReleaseInfo(method="paiva-dp", epsilon=1.0, size={"rule": "a"}),
                      ReleaseInfo(method="paiva-dp", epsilon=1.0, size={"rule": "b"})])
    assert ReleaseInfo.of_set(frames) == ReleaseInfo(method="paiva-dp", epsilon=1.0,
                                                     size={"rule": "b"})
    assert ReleaseInfo.of_set(_framed([ReleaseInfo(method="paiva"), None])) == \
        ReleaseInfo(method="paiva")
    assert ReleaseInfo.of_set([]) == ReleaseInfo()


@pytest.mark.parametrize("infos", [
    [ReleaseInfo(method="paiva", epsilon=1.0), ReleaseInfo(method="naive"), None],
    [ReleaseInfo(method="paiva-dp", epsilon=1.0), ReleaseInfo(method="paiva")],
    [ReleaseInfo(method="paiva-dp", epsilon=1.0), ReleaseInfo(method="paiva-dp", epsilon=2.0)],
    [ReleaseInfo(method="paiva-dp", epsilon=1.0), None],
])
def test_of_set_refuses_releases_made_in_different_ways(infos):
    """Releases of two files, one ε-DP, were all recorded as ε-DP (the last record won)."""
    with pytest.raises(InputError, match=r"^the releases were made in different ways \(releases "
                                         r"0: method .*write each set to its own file$"):
        ReleaseInfo.of_set(_framed(infos))


@pytest.mark.parametrize(("sources", "weakest"), [
    (["os-entropy", "external", "os-entropy"], "external"),
    (["seeded", "external", "os-entropy"], "seeded"),
    (["external", "seeded"], "seeded"),
    (["os-entropy", "os-entropy"], "os-entropy"),
])
def test_of_set_records_the_weakest_noise_source(sources, weakest):
    """A set is as private as its least private release: seeded, then external noise."""
    frames = []
    for source in sources:
        frame = gpd.GeoDataFrame({"a": [0]}, geometry=gpd.points_from_xy([0.0], [0.0]))
        set_release_info(frame, ReleaseInfo(method="paiva-dp", epsilon=1.0, noise=source))
        frames.append(frame)
    assert ReleaseInfo.of_set(frames).noise == weakest


# ---------------------------------------------------------------------- recorded limits
def limited_frame(record):
    frame = gpd.GeoDataFrame({"z": [1.0]}, geometry=gpd.points_from_xy([0.0], [0.0]))
    frame.attrs = {"geosynth": record, LINKED_ATTR: True}
    return frame


def test_to_public_keeps_the_limits_and_no_other_parameter():
    """Limits are the analyst's public statements; other parameters stay internal."""
    record = {"method": "paiva", "release": 1, "limits": {"z": [0, None]}, "r_min": 1.0,
              "note": "from seed 12345"}
    public = to_public(limited_frame(record), seed=1)
    assert public.attrs["geosynth"] == {"method": "paiva", "limits": {"z": [0.0, None]}}
    plain = to_public(limited_frame({"method": "paiva", "r_min": 1.0}), seed=1)
    assert plain.attrs["geosynth"] == {"method": "paiva"}


def test_of_set_records_the_limits_its_releases_share():
    frames = [limited_frame({"method": "paiva", "limits": {"z": [0.0, 9.0]}}) for _ in range(2)]
    assert ReleaseInfo.of_set(frames).parameters == {"limits": {"z": [0.0, 9.0]}}
    assert ReleaseInfo.of_set([limited_frame({"method": "paiva"})]).parameters == {}
    for other in ({"method": "paiva", "limits": {"z": [0.0, 8.0]}}, {"method": "paiva"}):
        with pytest.raises(InputError, match=r"the releases record different limits, \{'z': "
                                             r"\[0.0, 9.0\]\} and .*one set of limits"):
            ReleaseInfo.of_set([*frames, limited_frame(other)])


@pytest.mark.parametrize(("limits", "error", "match"), [
    ({}, InputError, r"must be a non-empty dict"),
    ([["z", 0, 1]], InputTypeError, r"must be a non-empty dict \{column: \[low, high\]\}"),
    ({"z": [0.0]}, InputTypeError, r"\['z'\] must be a pair \(low, high\)"),
    ({"z": "0:1"}, InputTypeError, r"\['z'\] must be a pair"),
    ({"z": [0.0, "1"]}, InputTypeError, r"\['z'\]\[1\] must be a real number or None \(an "
                                        r"open end\), got str"),
    ({"z": [True, 2.0]}, InputTypeError, r"\[0\] must be a real number or None.*got bool"),
    ({"z": [0.0, float("inf")]}, InputError, r"\[1\] must be a finite number, got inf"),
    ({"z": [float("nan"), 1.0]}, InputError, r"\[0\] must be a finite number, got nan"),
    ({"z": [0, 10**400]}, InputError, r"\[1\] must be a finite number, got inf"),
    ({"z": [None, None]}, InputError, r"two open ends, which limits nothing"),
    ({"z": [5.0, 5.0]}, InputError, r"\['z'\] = \(5, 5\) is empty"),
    ({"z": [120.0, 0.0]}, InputError, r"is empty: its low end must be below its high end"),
])
def test_absurd_recorded_limits_are_refused(limits, error, match):
    with pytest.raises(error, match=r"ReleaseInfo parameters\['limits'\].*" + match):
        ReleaseInfo(method="paiva", parameters={"limits": limits})
    with pytest.raises(error, match=r"attrs\['geosynth'\]: .*" + match):
        release_info(limited_frame({"method": "paiva", "limits": limits}))


def test_recorded_limits_read_back_as_plain_floats():
    info = ReleaseInfo(parameters={"limits": {"z": (np.int64(0), np.float32(2.5)),
                                              "w": [None, 3]}})
    assert info.parameters == {"limits": {"z": [0.0, 2.5], "w": [None, 3.0]}}
    assert all(type(end) is float for end in info.parameters["limits"]["z"])
    assert ReleaseInfo.from_attrs({"geosynth": info.to_attrs()}) == info


@pytest.mark.parametrize("prefix", ["", "level-"])  # words were split into characters
def test_public_arrow_dictionary_holds_only_its_rows_values(regular_data, prefix):
    """A pyarrow dictionary column kept the level of a dropped record in its dictionary."""
    pa = pytest.importorskip("pyarrow")
    gdf, grid, _ = regular_data
    gdf = with_a_record_outside(gdf.head(200))
    dictionary = pd.ArrowDtype(pa.dictionary(pa.int8(), pa.string()))
    levels = [v if v == "rare-confidential-level" else f"{prefix}{v}" for v in gdf["c"]]
    gdf["c"] = pd.array(levels, dtype=dictionary)
    with pytest.warns(DataWarning, match="dropped 1 of 201 points"):
        counts = prepare(gdf, grid, attributes=["a", "c"], outside="drop")
    (release,) = synthesize(stub_fit(counts, random_lambda(counts, chains=1, draws=2)), gdf,
                            m=1, seed=3)
    public = to_public(release, seed=1)
    assert public["c"].dtype == dictionary
    assert sorted(public["c"].astype(str)) == sorted(release["c"].astype(str))

    def parquet_bytes(frame):
        buffer = io.BytesIO()
        frame.to_parquet(buffer)
        return buffer.getvalue()

    # A GeoParquet file of the release writes the dictionary, used entries or not.
    assert b"rare-confidential-level" in parquet_bytes(release)  # input not modified
    assert b"rare-confidential-level" not in parquet_bytes(public)


def test_public_drops_the_name_of_the_column_labels(release):
    named = release.copy()
    named.columns.name = "survey_2024_hiv_positive"
    public = to_public(named, seed=1)
    assert public.columns.name is None
    assert list(public.columns) == list(release.columns)
    assert named.columns.name == "survey_2024_hiv_positive"  # the input is not modified


def test_to_public_refuses_repeated_and_multiindex_columns(release):
    repeated = gpd.GeoDataFrame(pd.concat([release, release[["a"]]], axis=1),
                                geometry="geometry", crs=release.crs)
    with pytest.raises(InputError, match=r"release has several columns named \['a'\]; a column "
                                         r"must be named once"):
        to_public(repeated, seed=1)
    levels = gpd.GeoDataFrame({("v", "a"): [1], ("g", "geometry"): gpd.points_from_xy([0], [0])},
                              geometry=("g", "geometry"))
    with pytest.raises(InputError, match=r"2-level \(MultiIndex\) column labels"):
        to_public(levels, seed=1)


def test_plain_columns_lists_non_geometry_columns_even_when_repeated():
    frame = gpd.GeoDataFrame({"a": [1], "b": [2.0]}, geometry=gpd.points_from_xy([0.0], [0.0]))
    frame["second"] = gpd.GeoSeries.from_xy([1.0], [1.0])
    assert plain_columns(frame) == ["a", "b"]
    repeated = pd.concat([frame, frame[["a"]]], axis=1)  # crashed: frame["a"] is a DataFrame
    assert plain_columns(repeated) == ["a", "b", "a"]


@pytest.mark.parametrize("column", ["record_index", "Cell_ID", "FID"])
def test_to_public_refuses_identifier_columns(release, column):
    # to_public is the form that may be published: a column naming records or cells is refused
    # there, not only when the file is written.
    tagged = release.copy()
    tagged[column] = np.arange(len(release))
    with pytest.raises(InputError, match=rf"release has a column '{column}', which identifies "
                                         r"records or their cells.*drop the column"):
        to_public(tagged, seed=1)
    assert list(to_public(release, seed=1).columns) == list(release.columns)


# ---------------------------------------------------------------------- altered attrs
def point_frame(attrs):
    frame = gpd.GeoDataFrame({"a": [1, 2]}, geometry=gpd.points_from_xy([0.0, 1.0], [0.0, 1.0]))
    frame.attrs = attrs
    return frame


def looped():
    inner = []
    inner.append(inner)
    return {"method": "paiva", "size": {"rule": inner}}


@pytest.mark.parametrize(("record", "error", "match"), [
    ("paiva", InputTypeError, r"attrs\['geosynth'\] must be the dict of ReleaseInfo.to_attrs, "
                              r"got str 'paiva'"),
    ({1: "paiva"}, InputTypeError, r"attrs\['geosynth'\] keys must be str, got int 1"),
    ({"m": "3"}, InputTypeError, r"attrs\['geosynth'\]\['m'\] must be an int or None, got str"),
    ({"m": True}, InputTypeError, r"\['m'\] must be an int or None, got bool True"),
    ({"n_records": 5}, InputTypeError, r"\['n_records'\] must be a list of int"),
    ({"n_records": "123"}, InputTypeError, r"\['n_records'\] must be a list of int"),
    ({"method": ["naive"]}, InputTypeError, r"\['method'\] must be a str or None, got list "
                                            r"of length 1"),
    ({"weighted": "no"}, InputTypeError, r"\['weighted'\] must be True or False"),
    ({"epsilon": "1"}, InputTypeError, r"\['epsilon'\] must be a number"),
    ({"ledger": ["spent"]}, InputTypeError, r"\['ledger'\] must be a dict"),
    ({"noise": "none"}, InputError, r"\['noise'\] must be one of \['external', 'os-entropy', "
                                    r"'seeded'\], got str 'none'"),
    ({"ledger": {"rows": [{"xy": np.zeros((3, 2))}]}}, InputTypeError,
     r"\['ledger'\]\['rows'\]\[0\]\['xy'\] must hold plain values .*got ndarray of shape "
     r"\(3, 2\)"),
    ({"secret": {"a": {1, 2}}}, InputTypeError, r"\['secret'\]\['a'\] must hold plain values"),
    ({"r_min": (x for x in [1.0])}, InputTypeError, r"\['r_min'\] must hold plain values"),
    ({"size": {("a",): 1}}, InputTypeError, r"\['size'\] keys must be str, got tuple"),
    (looped(), InputTypeError, r"\['size'\]\['rule'\]\[0\].* nested more than 32 levels"),
    ({"parameters": {"r_min": 1.0}}, InputError, r"parameters \['parameters'\] are named like "
                                                 r"its fields"),
])
def test_an_altered_record_is_refused_by_name(record, error, match):
    """Values of the wrong type, unhashable or nested junk raised raw TypeErrors or read back."""
    frame = point_frame({"geosynth": record})
    with pytest.raises(error, match=match) as caught:
        release_info(frame)
    assert "del release.attrs['geosynth']" in str(caught.value) or error is InputError
    with pytest.raises(InputError):
        to_public(frame, seed=1)  # the baseline check reads the record: refused, not guessed


def test_a_record_reads_back_as_plain_values():
    """A str subclass (with anything attached), NumPy scalars and tuples become plain values."""

    class Tagged(str):
        pass

    method = Tagged("naive")
    method.confidential = [(612345.0, 7412345.0)]
    record = {"method": method, "release": np.int64(2), "epsilon": np.float32(0.5),
              "weighted": np.bool_(False), "n_records": (np.int64(3), 4),
              "size": {"cap": np.int64(10), "rows": (1, 2.5)}, "r_min": np.float64(1.5)}
    info = release_info(point_frame({"geosynth": record}))
    assert type(info.method) is str and info.method == "naive"
    assert type(info.release) is int and info.release == 2
    assert type(info.epsilon) is float and info.epsilon == 0.5
    assert info.weighted is False
    assert info.n_records == (3, 4) and all(type(n) is int for n in info.n_records)
    assert info.size == {"cap": 10, "rows": [1, 2.5]} and type(info.size["cap"]) is int
    assert info.parameters == {"r_min": 1.5} and type(info.parameters["r_min"]) is float
    json.dumps(info.to_attrs())


def test_parameters_named_like_fields_are_refused():
    """to_attrs wrote the parameter over the field: a naive release read back as 'paiva'."""
    with pytest.raises(InputError, match=r"parameters \['method'\] are named like its fields.*"
                                         r"ReleaseInfo\(method=\.\.\.\)"):
        ReleaseInfo(method="naive", parameters={"method": "paiva"})
    with pytest.raises(InputTypeError, match="parameters must be a dict, got NoneType"):
        ReleaseInfo(parameters=None)


@pytest.mark.parametrize(("fields", "error", "match"), [
    ({"method": float("nan")}, InputTypeError, r"ReleaseInfo.method must be a str or None, got "
                                               r"float nan"),
    ({"data": 3}, InputTypeError, r"ReleaseInfo.data must be a str or None, got int 3"),
    ({"release": -1}, InputError, r"ReleaseInfo.release must be an int >= 0, got -1"),
    ({"release": 1.0}, InputTypeError, r"ReleaseInfo.release must be an int, got float 1.0; "
                                       r"pass an int"),
    ({"posterior_draw": True}, InputTypeError, r"ReleaseInfo.posterior_draw must be an int, got "
                                               r"bool True"),
    ({"n_public": -5}, InputError, r"ReleaseInfo.n_public must be an int >= 0, got -5"),
    ({"m": 0}, InputError, r"ReleaseInfo.m must be an int >= 1, got 0"),
    ({"epsilon": float("nan")}, InputError, r"ReleaseInfo.epsilon must be a number > 0 \(or "
                                            r"inf\), got nan; record the privacy loss"),
    ({"epsilon": -1.0}, InputError, r"ReleaseInfo.epsilon must be a number > 0"),
    ({"epsilon": 0}, InputError, r"ReleaseInfo.epsilon must be a number > 0"),
    ({"epsilon": True}, InputTypeError, r"ReleaseInfo.epsilon must be a real number, got bool"),
    ({"epsilon": "1.0"}, InputTypeError, r"ReleaseInfo.epsilon must be a real number, got str"),
    ({"weighted": "no"}, InputTypeError, r"ReleaseInfo.weighted must be True or False"),
    ({"noise": "none"}, InputError, r"ReleaseInfo.noise must be one of 'external', "
                                    r"'os-entropy', 'seeded', got str 'none'"),
    ({"ledger": ["spent"]}, InputTypeError, r"ReleaseInfo.ledger must be a dict or None, got "
                                            r"list"),
    ({"size": "n_public"}, InputTypeError, r"ReleaseInfo.size must be a dict or None"),
    ({"n_records": 5}, InputTypeError, r"ReleaseInfo.n_records must be a list of int"),
    ({"n_records": [3, -1]}, InputError, r"ReleaseInfo.n_records\[1\] must be an int >= 0, "
                                         r"got -1"),
])
def test_release_info_refuses_a_field_of_the_wrong_type_or_range(fields, error, match):
    """The constructor took anything: method=nan, release=-1, epsilon=nan were recorded."""
    with pytest.raises(error, match=match):
        ReleaseInfo(**fields)
    with pytest.raises(error, match=match):
        ReleaseInfo().replace(**fields)


def test_release_info_keeps_plain_values_and_an_infinite_epsilon():
    info = ReleaseInfo(release=np.int64(2), epsilon=np.float32(0.5), weighted=np.bool_(True),
                       n_records=np.array([3, 4]), m=np.int64(2))
    assert type(info.release) is int and type(info.epsilon) is float and info.weighted is True
    assert info.n_records == (3, 4) and all(type(n) is int for n in info.n_records)
    json.dumps(info.to_attrs())
    assert ReleaseInfo(epsilon=float("inf")).epsilon == float("inf")  # no privacy, stated


def test_a_number_beyond_the_float_range_reads_as_infinite():
    """float() of 10**400 or a huge Fraction raised a bare OverflowError."""
    from fractions import Fraction

    huge = Fraction(10**400)
    info = release_info(point_frame({"geosynth": {"epsilon": 10**400, "r_max": huge}}))
    assert info.epsilon == float("inf") and info.parameters == {"r_max": float("inf")}


@pytest.mark.parametrize(("record", "match"), [
    ({"release": -1}, r"attrs\['geosynth'\]: ReleaseInfo.release must be an int >= 0"),
    ({"epsilon": float("nan")}, r"attrs\['geosynth'\]: ReleaseInfo.epsilon must be a number > "
                                r"0 \(or inf\), got nan"),
    ({"m": 0}, r"attrs\['geosynth'\]: ReleaseInfo.m must be an int >= 1"),
    ({"n_records": [2, -2]}, r"ReleaseInfo.n_records\[1\] must be an int >= 0"),
])
def test_a_record_out_of_range_is_refused_with_the_fix(record, match):
    with pytest.raises(InputError, match=match) as caught:
        release_info(point_frame({"geosynth": record}))
    assert "del release.attrs['geosynth']" in str(caught.value)


@pytest.mark.parametrize("marker", [["naive"], {"naive": 1}, "paiva", False, np.array(["naive"])])
def test_an_altered_baseline_marker_is_refused(marker):
    """An unhashable marker raised a raw TypeError; any other one was silently not a baseline."""
    frame = point_frame({BASELINE_ATTR: marker})
    with pytest.raises(InputError, match=r"attrs\['geosynth_baseline'\] must be one of "
                                         r"\['donut', 'naive', 'neighbour'\].*del release.attrs"):
        baseline_method(frame)


def test_public_form_keeps_a_plain_baseline_marker():
    """A str subclass marker (and whatever it carries) was kept as it was on the public form."""

    class Tagged(str):
        pass

    for key in (BASELINE_ATTR, "geosynth"):
        marker = Tagged("donut")
        marker.confidential = [(612345.0, 7412345.0)]
        value = marker if key == BASELINE_ATTR else {"method": marker}
        public = to_public(point_frame({key: value}), seed=1)
        record = {} if key == BASELINE_ATTR else {"geosynth": {"method": "donut"}}
        assert public.attrs == {PUBLIC_ATTR: True, BASELINE_ATTR: "donut", **record}
        assert type(public.attrs[BASELINE_ATTR]) is str
        if record:
            assert type(public.attrs["geosynth"]["method"]) is str
        assert baseline_method(public) == "donut"
    assert baseline_method(point_frame({})) is None and baseline_method(object()) is None


def test_markers_fail_closed():
    """Only True marks a public frame; any set linked marker but False marks a linked one."""
    assert not is_public(point_frame({PUBLIC_ATTR: "no"}))
    assert not is_public(point_frame({PUBLIC_ATTR: 1}))
    assert is_public(point_frame({PUBLIC_ATTR: np.bool_(True)}))
    # "no" was the mark of to_public: a linked frame so marked was written as shuffled.
    assert is_linked(point_frame({LINKED_ATTR: True, PUBLIC_ATTR: "no"}))
    assert is_linked(point_frame({LINKED_ATTR: np.array([True, True])}))  # raised ValueError
    assert is_linked(point_frame({LINKED_ATTR: "yes"}))
    assert not is_linked(point_frame({LINKED_ATTR: False}))
    assert not is_linked(point_frame({LINKED_ATTR: np.bool_(False)}))
    assert not is_linked(point_frame({LINKED_ATTR: True, PUBLIC_ATTR: True}))


# ---------------------------------------------------------------------- identifier names
@pytest.mark.parametrize("name", [
    "id", "ID", "patient_id", "patientId", "PatientID", "id_paciente", "ID_MUNICIP", "Cell ID",
    "patient_no", "case_number", "Fall_Nr", "AreaKey", "key", "number", "uuid", "GUID",
    "OBJECTID", "GlobalID", "rowid", "id2", "número_id", "person.id", "fid", "index", "level_0",
    "MRN", "patient_mrn",
])
def test_names_of_identifiers_are_identifiers(name):
    # Only the exact names of ID_COLUMNS were: id, patient_id, patient_no and uuid were not.
    assert is_identifier_name(name)


@pytest.mark.parametrize("name", [
    "valid", "isValid", "idade", "IDADE", "NU_IDADE_N", "width", "paid", "cidade", "video",
    "identity", "key_stage", "num_rooms", "nr_children", "no_show", "age_num", "NO2", "no",
    "x1", "y", "z", "neighbourhood", "PATIENTID", "grid", "monkey",
])
def test_ordinary_attribute_names_are_not_identifiers(name):
    # Whole words only: idade (Portuguese: age) and NU_IDADE_N (SINAN's age) are attributes.
    assert not is_identifier_name(name)


def test_to_public_keeps_an_attribute_named_like_an_identifier(release):
    # It does not know the model: write_release, given fit=, lets the model's attributes through.
    tagged = release.assign(ID_MUNICIP=1)
    assert "ID_MUNICIP" in to_public(tagged, seed=1).columns


@pytest.mark.parametrize("case", ["points", "nan", "missing", "empty", "z", "polygon"])
def test_row_digest_hashes_the_wkb_of_the_geometries_as_shapely_writes_it(case):
    # The digest keys to_public's shuffle: points are laid out with NumPy (a million took 2.8 s
    # as shapely's WKB objects joined), and must give the very bytes shapely writes.
    import hashlib

    from geosynth.synth.release import row_digest

    rng = np.random.default_rng(3)
    geoms = shapely.points(rng.normal(7.8e6, 1e4, (50, 2)))
    if case == "nan":
        geoms[4] = shapely.Point(np.nan, 1.0)
    elif case == "missing":
        geoms[4] = None
    elif case == "empty":
        geoms[4] = shapely.Point()
    elif case == "z":
        geoms[4] = shapely.Point(1.0, 2.0, 3.0)
    elif case == "polygon":
        geoms[4] = shapely.box(0, 0, 1, 1)
    frame = gpd.GeoDataFrame({"a": np.arange(50)}, geometry=geoms)
    wkb = shapely.to_wkb(geoms)
    wkb[pd.isna(wkb)] = b""
    expected = hashlib.sha256(b"50")
    expected.update(pd.util.hash_pandas_object(frame["a"], index=False).to_numpy().tobytes())
    expected.update(b"".join(wkb.tolist()))
    assert row_digest(frame) == np.frombuffer(expected.digest(), dtype=np.uint32).tolist()


def test_a_columns_digest_ignores_row_order_and_unused_categories_but_no_value():
    # The record that lets write_release refuse the records' values written over a synthetic
    # column: a shuffle keeps it, every change of a value (or of the rows held) does not.
    rng = np.random.default_rng(8)
    z = pd.Series(rng.normal(size=200))
    assert column_digest(z) == column_digest(z.sample(frac=1.0, random_state=1))
    for changed in (z.where(z.index != 5, z[5] + 1e-12), z.iloc[1:], z.round(3),
                    pd.concat([z, z.iloc[:1]]), z.astype(np.float32)):
        assert column_digest(changed) != column_digest(z)
    levels = pd.Series(pd.Categorical(["a", "b", "a"], categories=["a", "b", "c"]))
    assert column_digest(levels) == column_digest(levels.cat.remove_unused_categories())
    assert column_digest(levels) != column_digest(levels.replace({"b": "c"}))
    text = pd.Series(["\udcff", "a"], dtype=object)  # a lone surrogate: hashed by its repr
    assert column_digest(text) == column_digest(text[::-1]) != column_digest(text.str[:0])
