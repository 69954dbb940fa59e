"""`Grid.from_polygons(exposure=...)`: what an area's expected count is proportional to."""

import pickle

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import shapely

from geosynth import Grid
from geosynth.errors import GridError
from geosynth.tuning import Candidate


@pytest.fixture
def areas():
    """Three 1 x 1 squares and two 0.5 x 0.5 squares, with a population and a text column."""
    boxes = [shapely.box(i, 0, i + 1, 1) for i in range(3)]
    boxes += [shapely.box(3, 0, 3.5, 0.5), shapely.box(3, 0.5, 3.5, 1)]
    return gpd.GeoDataFrame({"pop": [10.0, 20.0, 30.0, 5.0, 5.0],
                             "name": list("abcde")}, geometry=boxes, crs=3857)


def _geometric_mean(values):
    return float(np.exp(np.mean(np.log(values))))


def test_the_default_exposure_is_the_habitable_fraction(areas):
    for grid in (Grid.from_polygons(areas), Grid.regular((0, 0, 4, 4), shape=(4, 4)),
                 Grid.hexagonal(shapely.box(0, 0, 10, 10), 2.0,
                                exclude=shapely.Point(5, 5).buffer(2))):
        assert grid.exposure_source == "habitable fraction"
        assert np.array_equal(grid.exposure, grid.habitable_fraction)


def test_area_is_the_habitable_area_scaled_to_a_geometric_mean_of_one(areas):
    lake = shapely.box(0, 0, 0.5, 1)  # half of the first area
    grid = Grid.from_polygons(areas, exposure="area", exclude=lake)
    habitable = np.array([0.5, 1, 1, 0.25, 0.25])
    assert grid.exposure_source == "habitable area"
    assert np.allclose(grid.exposure, habitable / _geometric_mean(habitable), rtol=1e-12)
    assert _geometric_mean(grid.exposure) == pytest.approx(1.0, rel=1e-12)
    assert not grid.exposure.flags.writeable


@pytest.mark.parametrize("given", ["pop", "series", "array", "list"])
def test_a_column_or_values_per_row_are_the_exposure(areas, given):
    exposure = {"pop": "pop", "series": areas["pop"], "array": areas["pop"].to_numpy(),
                "list": areas["pop"].tolist()}[given]
    grid = Grid.from_polygons(areas, exposure=exposure)
    pop = areas["pop"].to_numpy()
    assert np.allclose(grid.exposure, pop / _geometric_mean(pop), rtol=1e-12)
    assert grid.exposure_source == ("column pop" if given == "pop" else "given values")


def test_areas_dropped_by_exclude_leave_their_exposure_out(areas):
    with pytest.warns(UserWarning):  # the wholly excluded area is dropped, with a warning
        grid = Grid.from_polygons(areas, exposure="pop", exclude=shapely.box(1, 0, 2, 1))
    kept = np.array([10.0, 30.0, 5.0, 5.0])
    assert grid.n_cells == 4
    assert np.allclose(grid.exposure, kept / _geometric_mean(kept), rtol=1e-12)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"pop": [10, 20, 0, 5, 5]}, r"rows \[2\] are zero or negative"),
        ({"pop": [10, -1, 30, 5, 5]}, r"rows \[1\] are zero or negative"),
        ({"pop": [10, np.nan, 30, None, 5]}, r"rows \[1, 3\] are missing"),
        ({"pop": [10, np.inf, 30, 5, 5]}, r"rows \[1\] are infinite"),
        ({"pop": ["10", "many", 30, 5, 5]}, r"rows \[0, 1\] are not numbers"),  # text
        ({"pop": [10, True, 30, 5, 5]}, r"rows \[1\] are not numbers"),
        ({"pop": [True, False, True, True, True]}, r"holds bool values"),
        ({"pop": pd.date_range("2020-01-01", periods=5)}, r"holds datetime64\[\w+\] values"),
        ({"pop": pd.to_timedelta([1, 2, 3, 4, 5], unit="D")}, r"holds timedelta64\[\w+\] values"),
        ({"pop": [1 + 1j, 2, 3, 4, 5]}, r"holds complex128 values"),
        ({"pop": pd.array([10, None, 30, 5, 5], dtype="Int64")}, r"rows \[1\] are missing"),
    ],
)
def test_exposures_that_are_not_positive_numbers_are_refused_by_row(areas, change, message):
    bad = areas.assign(**change)
    with pytest.raises(GridError, match=r"exposure column 'pop'.*" + message):
        Grid.from_polygons(bad, exposure="pop")


def test_an_exposure_of_the_wrong_length_or_index_or_column_is_refused(areas):
    with pytest.raises(GridError, match=r"exposure has 3 values for 5 areas"):
        Grid.from_polygons(areas, exposure=[1, 2, 3])
    for wrong in (3.0, 0, np.ones((5, 1)), {"a": 1}, (v for v in range(5))):
        with pytest.raises(GridError, match=r"exposure must be 'area', the name of a column of "
                                            r"areas, or one positive number per row"):
            Grid.from_polygons(areas, exposure=wrong)
    with pytest.raises(GridError, match=r"index is not that of the areas"):
        Grid.from_polygons(areas, exposure=areas["pop"].set_axis(range(10, 15)))
    with pytest.raises(GridError, match=r"exposure='people' is not a column of areas "
                                        r"\(columns: \['pop', 'name'\]\)"):
        Grid.from_polygons(areas, exposure="people")
    with pytest.raises(GridError, match=r"exposure column 'name' holds (str|object) values"):
        Grid.from_polygons(areas, exposure="name")
    with pytest.raises(GridError, match=r"exposure='geometry' is a geometry column of areas"):
        Grid.from_polygons(areas, exposure="geometry")
    twice = pd.concat([areas[["pop"]], areas], axis=1)
    with pytest.raises(GridError, match=r"exposure='pop' names several columns"):
        Grid.from_polygons(gpd.GeoDataFrame(twice, geometry="geometry"), exposure="pop")


def test_only_the_areas_kept_need_an_exposure_and_ids_name_the_areas(areas):
    # A water area of no population, removed by exclude, was refused for its 0, and the advice
    # was to exclude it.
    water = areas.assign(pop=[10.0, 20.0, 0.0, 5.0, 5.0], code=["A", "B", "C", "D", "E"])
    with pytest.warns(UserWarning):
        grid = Grid.from_polygons(water, exposure="pop", exclude=shapely.box(2, 0, 3, 1))
    assert grid.n_cells == 4
    with pytest.raises(GridError, match=r"values at area_ids \['C'\] are zero or negative.*"
                                        r"give an area of no population a small one"):
        Grid.from_polygons(water, exposure="pop", id_column="code")


def test_exposures_more_than_1e15_apart_are_refused_naming_the_two_areas(areas):
    # Scaled to a geometric mean of 1, 1e308 overflowed to inf and the fit failed.
    with pytest.raises(GridError, match=r"exposure ranges from 1e-320 \(area 1\) to 1e\+308 "
                                        r"\(area 0\), more than 1e\+15 times"):
        Grid.from_polygons(areas, exposure=[1e308, 1e-320, 1, 1, 1])
    grid = Grid.from_polygons(areas, exposure=[1e14, 1, 1, 1, 1])
    assert np.isfinite(grid.exposure).all() and grid.exposure[0] / grid.exposure[1] == \
        pytest.approx(1e14)


def test_area_is_ambiguous_where_areas_have_a_column_of_that_name(areas):
    with pytest.raises(GridError, match=r"exposure='area' is ambiguous"):
        Grid.from_polygons(areas.assign(area=1.0), exposure="area")
    grid = Grid.from_polygons(areas.assign(area=areas["pop"]),
                              exposure=areas["pop"].rename("area"))
    assert grid.exposure_source == "given values"


def test_grids_of_other_exposures_differ_and_copies_keep_theirs(areas):
    plain, by_area = Grid.from_polygons(areas), Grid.from_polygons(areas, exposure="area")
    by_pop = Grid.from_polygons(areas, exposure="pop")
    assert plain != by_area and by_area != by_pop and plain != by_pop
    # The same values by name or as a Series: the same lattice (a fit's grid is compared).
    assert by_pop == Grid.from_polygons(areas, exposure=areas["pop"])
    assert hash(by_pop) == hash(Grid.from_polygons(areas, exposure=areas["pop"]))
    assert by_area == Grid.from_polygons(areas, exposure="area")
    assert hash(by_area) == hash(Grid.from_polygons(areas, exposure="area"))
    cut = by_pop.without_links_across(shapely.LineString([(3, -1), (3, 2)]))
    assert np.array_equal(cut.exposure, by_pop.exposure)
    assert cut.exposure_source == "column pop"
    assert pickle.loads(pickle.dumps(by_pop)) == by_pop
    # tune tells candidates apart by their lattice: the exposure is part of it.
    candidates = [Candidate(grid=grid) for grid in (plain, by_area, by_pop)]
    assert len({candidate._grid_digest for candidate in candidates}) == 3
    assert [candidate.label for candidate in candidates] == [
        "areal lattice, 5 cells", "areal lattice, 5 cells, exposure habitable area",
        "areal lattice, 5 cells, exposure column pop"]


def test_any_lattice_takes_an_exposure_per_cell():
    grid = Grid.regular((0, 0, 3, 2), shape=(2, 3), crs=3857,
                        region=shapely.box(0, 0, 2.5, 2))
    people = grid.with_exposure(np.arange(1.0, 7.0), source="residents")
    assert people.exposure_source == "residents" and grid.exposure_source == "habitable fraction"
    assert np.allclose(people.exposure, np.arange(1.0, 7.0) / _geometric_mean(np.arange(1, 7)))
    assert np.array_equal(grid.habitable_fraction, people.habitable_fraction)  # unchanged
    assert people != grid and people == grid.with_exposure(np.arange(1.0, 7.0), "residents")
    assert (people.adjacency != grid.adjacency).nnz == 0
    with pytest.raises(GridError, match=r"exposure values at cells \[2\] are zero or negative"):
        grid.with_exposure([1, 2, 0, 4, 5, 6])
    with pytest.raises(GridError, match=r"exposure has 5 values for 6 cells; give one per cell, "
                                        r"in the order of the cell ids"):
        grid.with_exposure([1, 2, 3, 4, 5])
    with pytest.raises(GridError, match=r"exposure must be one positive number per cell"):
        grid.with_exposure(2.0)
    for source in ("", "pop\x1b[31m", 7):
        with pytest.raises(GridError, match=r"source must be a non-empty str"):
            grid.with_exposure(np.ones(6), source=source)
    # A name geosynth gives its own exposures hid this one from the metadata and from tune.
    for source in ("habitable fraction", "habitable area", "column pop"):
        with pytest.raises(GridError, match=r"names an exposure geosynth sets itself"):
            grid.with_exposure(np.ones(6), source=source)
    with pytest.raises(GridError, match=r"a cell's exposure must be a positive finite number"):
        grid.with_exposure([1, 2, np.nan, 4, 5, 6])
    with pytest.raises(GridError, match=r"from 1e-16 \(cell 0\) to 2 \(cell 1\)"):
        grid.with_exposure([1e-16, 2, 1, 1, 1, 1])
    assert people.same_cells(grid) and grid.same_cells(people)
    assert not grid.same_cells(Grid.regular((0, 0, 3, 2), shape=(2, 3), crs=3857))
