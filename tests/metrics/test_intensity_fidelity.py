"""intensity_fidelity: original against synthetic counts per cell of a common lattice."""

from __future__ import annotations

import geopandas as gpd
import numpy as np
import pytest

from geosynth import Grid
from geosynth.errors import CRSError, InputError, InputTypeError
from geosynth.metrics import intensity_fidelity

GRID = Grid.regular((0.0, 0.0, 4.0, 1.0), shape=(1, 4), crs=3857)  # cells 0..3 along x


def _points(per_cell: list[int]) -> np.ndarray:
    """Points at the centres of the cells, ``per_cell[i]`` of them in cell i."""
    return np.array([[i + 0.5, 0.5] for i, k in enumerate(per_cell) for _ in range(k)])


def test_counts_per_cell_and_mean_over_releases():
    result = intensity_fidelity(_points([3, 0, 2, 1]), [_points([1, 1, 1, 1]),
                                                        _points([3, 1, 1, 1])], GRID)
    np.testing.assert_array_equal(result.original, [3, 0, 2, 1])
    np.testing.assert_array_equal(result.synthetic, [2, 1, 1, 1])
    # Shares 3/6, 0, 2/6, 1/6 against 2/5, 1/5, 1/5, 1/5.
    assert result.l1 == pytest.approx(abs(0.5 - 0.4) + 0.2 + abs(1 / 3 - 0.2) + abs(1 / 6 - 0.2))
    assert result.correlation == pytest.approx(np.corrcoef([3, 0, 2, 1], [2, 1, 1, 1])[0, 1])


def test_identical_and_disjoint_releases_are_the_two_ends():
    same = intensity_fidelity(_points([3, 0, 2, 1]), [_points([3, 0, 2, 1])] * 2, GRID)
    assert same.correlation == pytest.approx(1.0) and same.l1 == 0.0
    disjoint = intensity_fidelity(_points([3, 0, 2, 0]), [_points([0, 5, 0, 1])], GRID)
    assert disjoint.l1 == pytest.approx(2.0) and disjoint.correlation < 0


def test_one_release_not_in_a_list_is_one_release():
    release = _points([3, 1, 1, 1])
    series = gpd.GeoSeries(gpd.points_from_xy(release[:, 0], release[:, 1]), crs=3857)
    want = intensity_fidelity(_points([3, 0, 2, 1]), [release], GRID)
    for one in (release, series, gpd.GeoDataFrame(geometry=series)):
        got = intensity_fidelity(_points([3, 0, 2, 1]), one, GRID)
        np.testing.assert_array_equal(got.synthetic, [3, 1, 1, 1])
        assert (got.correlation, got.l1) == (want.correlation, want.l1)


def test_points_outside_are_misplaced_mass_and_constant_counts_have_no_correlation():
    outside = np.vstack([_points([1, 1, 1, 1]), [[10.0, 10.0]]])
    result = intensity_fidelity(outside, [_points([1, 1, 1, 1])], GRID)
    assert result.original.sum() == 4 and result.original_outside == 1
    # shares 1/5 in each cell and 1/5 outside, against 1/4 in each cell and none outside
    assert result.l1 == pytest.approx(4 * (1 / 4 - 1 / 5) + 1 / 5)
    assert np.isnan(result.correlation)  # both constant (the outside is not a cell)


def test_a_release_spread_beyond_the_lattice_is_charged_for_it():
    # A release on a coarser lattice snapped outward put points beyond the common lattice;
    # dropped and the rest renormalised, they cost nothing and favoured the coarse lattice.
    spread = np.vstack([_points([3, 0, 2, 1]), [[-1.0, 0.5]] * 2])
    result = intensity_fidelity(_points([3, 0, 2, 1]), [spread], GRID)
    assert result.synthetic_outside == 2 and result.original_outside == 0
    assert result.l1 == pytest.approx(2 / 8 * 2)  # 2/8 outside, and 6/8 of each share inside
    assert result.correlation == pytest.approx(1.0)  # the same pattern over the cells


def test_no_release_is_refused():
    with pytest.raises(InputError, match="releases is empty"):
        intensity_fidelity(_points([1, 1, 1, 1]), [], GRID)


@pytest.mark.parametrize("grid", [None, (0.0, 0.0, 4.0, 1.0)])
def test_a_grid_that_is_not_a_lattice_is_named(grid):
    # None gave AttributeError: 'NoneType' object has no attribute 'crs'.
    with pytest.raises(InputError, match="grid must be a geosynth.lattice.Grid, got "
                                         f"{type(grid).__name__}"):
        intensity_fidelity(_points([1, 1, 1, 1]), [_points([1, 1, 1, 1])], grid)


def test_a_frame_in_another_crs_is_refused_not_counted_as_outside():
    # Before, such points fell outside every cell: correlation NaN and l1 = 1, silently.
    xy = _points([3, 0, 2, 1])
    original = gpd.GeoDataFrame(geometry=gpd.points_from_xy(xy[:, 0], xy[:, 1]), crs=3857)
    assert intensity_fidelity(original, [original], GRID).l1 == 0.0
    other = original.set_crs(31983, allow_override=True)
    with pytest.raises(CRSError, match=r"releases\[0\] CRS EPSG:31983 differs from the grid CRS "
                                       r"EPSG:3857; reproject with releases\[0\].to_crs"):
        intensity_fidelity(original, [other], GRID)
    with pytest.raises(CRSError, match=r"original has no CRS while the grid uses EPSG:3857"):
        intensity_fidelity(original.set_crs(None, allow_override=True), [original], GRID)


def test_a_release_with_no_point_on_the_lattice_is_as_far_as_can_be():
    # Once its shares were zeros and l1 came out as a plausible-looking 1.0; all its mass is
    # misplaced: the largest distance, 2. No point at all has no distribution.
    outside = np.array([[10.0, 10.0], [11.0, 10.0]])
    result = intensity_fidelity(_points([3, 0, 2, 1]), [outside], GRID)
    assert result.l1 == 2.0 and np.isnan(result.correlation)
    assert result.synthetic.sum() == 0 and result.synthetic_outside == 2
    assert np.isnan(intensity_fidelity(_points([3, 0, 2, 1]), [np.empty((0, 2))], GRID).l1)


def test_frames_in_different_crss_are_refused_on_a_grid_without_one():
    # With no grid CRS to compare with, each frame passed on its own: an original in one CRS and
    # a release in another were counted on the same cells, silently.
    xy = _points([3, 0, 2, 1])
    grid = Grid.regular((0.0, 0.0, 4.0, 1.0), shape=(1, 4))
    original = gpd.GeoDataFrame(geometry=gpd.points_from_xy(xy[:, 0], xy[:, 1]), crs=3857)
    other = original.set_crs(31983, allow_override=True)
    with pytest.raises(CRSError, match=r"releases\[1\] has CRS EPSG:31983 but original has "
                                       r"EPSG:3857; reproject with releases\[1\]\.to_crs"):
        intensity_fidelity(original, [original, other], grid)
    with pytest.raises(CRSError, match=r"releases\[0\] has CRS None but original has EPSG:3857"):
        intensity_fidelity(original, [original.set_crs(None, allow_override=True)], grid)
    # The first frame is the reference when the original is an array.
    with pytest.raises(CRSError, match=r"releases\[1\] has CRS EPSG:31983 but releases\[0\] has"):
        intensity_fidelity(xy, [original, other], grid)
    assert intensity_fidelity(original, [original, xy], grid).l1 == 0.0  # arrays: no CRS


@pytest.mark.parametrize("releases", [None, 5, np.array(1.0)])
def test_releases_that_are_no_list_are_a_type_error(releases):
    # list(None) raised "'NoneType' object is not iterable".
    with pytest.raises(InputTypeError, match=r"^releases must be a list of synthetic data sets"):
        intensity_fidelity(_points([1, 1, 1, 1]), releases, GRID)


@pytest.mark.parametrize("original", [[], np.empty((0, 2))])
def test_an_original_without_points_is_refused_not_measured_as_nan(original):
    # Both measures were NaN: nothing to compare the releases with.
    with pytest.raises(InputError, match=r"^original has no points"):
        intensity_fidelity(original, [_points([1, 1, 1, 1])], GRID)
