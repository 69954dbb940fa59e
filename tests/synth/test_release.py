"""to_public: no index, shuffled rows, no internal columns, no original coordinates."""

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import shapely

from geosynth.errors import InputError
from geosynth.synth import donut_mask, naive_synthesize, synthesize, to_public
from geosynth.synth.release import (
    LINKED_ATTR,
    PUBLIC_ATTR,
    is_linked,
    is_public,
    make_release,
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
    gdf = regular_data[0]
    public = to_public(release, seed=1)
    assert isinstance(public.index, pd.RangeIndex) and public.index.start == 0
    assert list(public.columns) == list(release.columns)
    assert public.crs == release.crs
    assert public.attrs == {PUBLIC_ATTR: True}  # the marker of shuffled rows, nothing else
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


def test_internal_and_extra_geometry_columns_are_dropped(regular_data):
    gdf, grid, _ = regular_data
    (naive,) = naive_synthesize(gdf, grid, m=1, seed=1)
    naive["_cell"] = grid.locate(naive.geometry)
    naive["original"] = gdf.geometry  # a second geometry column
    public = to_public(naive, seed=2)
    assert list(public.columns) == ["a", "c", "other", "z", "geometry"]
    assert public.geometry.name == "geometry"


def test_keeps_a_custom_geometry_name():
    frame = gpd.GeoDataFrame(
        {"v": [1, 2, 3]}, geometry=gpd.points_from_xy([0, 1, 2], [0, 1, 2]), crs="EPSG:31983"
    ).rename_geometry("where")
    frame.index = ["p", "q", "r"]
    public = to_public(frame, seed=0)
    assert public.geometry.name == "where"
    assert public.index.tolist() == [0, 1, 2]


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
    out = make_release(data, xy, "geometry", "EPSG:31983", method, 0, epsilon=1.0)
    assert is_linked(out) is linked
    assert out.attrs["geosynth"] == {"method": method, "release": 0, "epsilon": 1.0}
    forced = make_release(data, xy, "geometry", "EPSG:31983", method, 0, linked=False)
    assert not is_linked(forced)
