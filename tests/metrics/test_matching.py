"""Greedy matching (Nunes 2018, Algorithm 1) against a literal brute-force implementation."""

import geopandas as gpd
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from geosynth.errors import CRSError, InputError
from geosynth.metrics import greedy_match, greedy_match_distances
from geosynth.metrics.matching import _greedy_match_arrays


def algorithm_1(original, synthetic):
    """Literal Algorithm 1: record the smallest matrix entry, delete its row and column, repeat.

    ``np.argmin`` returns the first minimum in row-major order, i.e. ties are broken by
    (original index, synthetic index): the documented rule.
    """
    a = np.asarray(original, dtype=float).reshape(-1, 2)
    b = np.asarray(synthetic, dtype=float).reshape(-1, 2)
    dx = a[:, None, 0] - b[None, :, 0]
    dy = a[:, None, 1] - b[None, :, 1]
    matrix = np.sqrt(dx * dx + dy * dy)
    d, ia, ib = [], [], []
    for _ in range(min(len(a), len(b))):
        i, j = np.unravel_index(np.argmin(matrix), matrix.shape)
        d.append(matrix[i, j])
        ia.append(i)
        ib.append(j)
        matrix[i, :] = np.inf
        matrix[:, j] = np.inf
    return np.array(d, dtype=float), np.array(ia, dtype=np.int64), np.array(ib, dtype=np.int64)


def algorithm_1_in_xy_order(original, synthetic):
    """Algorithm 1 on each side sorted by (x, y) (stably), indices mapped back to the rows.

    The tie rule greedy_match documents; pairs listed by (distance, original row, synthetic row).
    """
    a = np.asarray(original, dtype=float).reshape(-1, 2)
    b = np.asarray(synthetic, dtype=float).reshape(-1, 2)
    order_a = np.array(sorted(range(len(a)), key=lambda i: (a[i, 0], a[i, 1], i)), dtype=int)
    order_b = np.array(sorted(range(len(b)), key=lambda j: (b[j, 0], b[j, 1], j)), dtype=int)
    d, ia, ib = algorithm_1(a[order_a], b[order_b])
    ia, ib = order_a[ia], order_b[ib]
    listed = sorted(range(len(d)), key=lambda k: (d[k], ia[k], ib[k]))
    return d[listed], ia[listed], ib[listed]


def assert_same_matching(result, expected):
    d, ia, ib = expected
    np.testing.assert_array_equal(result.original_index, ia)
    np.testing.assert_array_equal(result.synthetic_index, ib)
    np.testing.assert_array_equal(result.distances, d)


def points(max_n, integer):
    coord = (
        st.integers(-3, 3).map(float)
        if integer
        else st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)
    )
    return st.lists(st.tuples(coord, coord), min_size=0, max_size=max_n)


@settings(deadline=None, max_examples=300)
@given(
    data=st.data(),
    integer=st.booleans(),
    leaf_size=st.integers(1, 5),
)
def test_equals_brute_force_algorithm_1(data, integer, leaf_size):
    # Integer coordinates in [-3, 3] make exact distance ties (and coincident points) common;
    # small leaves give deep kd-trees. Sizes are drawn independently, so they are often unequal.
    a = data.draw(points(40, integer), label="original")
    b = data.draw(points(40, integer), label="synthetic")
    a_xy = np.asarray(a, dtype=float).reshape(-1, 2)
    b_xy = np.asarray(b, dtype=float).reshape(-1, 2)
    result = _greedy_match_arrays(a_xy, b_xy, leaf_size)
    assert_same_matching(result, algorithm_1(a, b))


@settings(deadline=None, max_examples=200)
@given(data=st.data(), integer=st.booleans())
def test_greedy_match_is_algorithm_1_in_xy_order(data, integer):
    a = data.draw(points(30, integer), label="original")
    b = data.draw(points(30, integer), label="synthetic")
    assert_same_matching(greedy_match(np.asarray(a, float).reshape(-1, 2),
                                      np.asarray(b, float).reshape(-1, 2)),
                         algorithm_1_in_xy_order(a, b))


def test_a_tie_does_not_make_the_distances_depend_on_the_row_order():
    # Originals at x = 0, 2; synthetic at x = 1, -1. Three pairs tie at distance 1: matching
    # (0, x=1) first leaves (2, -1) at 3, matching (0, x=-1) first leaves (2, 1) at 1. By row
    # index the distances were (1, 3) or (1, 1) depending on which row came first.
    a = np.array([[0.0, 0.0], [2.0, 0.0]])
    b = np.array([[1.0, 0.0], [-1.0, 0.0]])
    results = {tuple(greedy_match_distances(x, y)) for x in (a, a[::-1]) for y in (b, b[::-1])}
    assert results == {(1.0, 1.0)}  # by (x, y): synthetic x=-1 first, then (2, 1) at 1


@settings(deadline=None, max_examples=200)
@given(data=st.data(), integer=st.booleans())
def test_matched_distances_do_not_depend_on_the_row_order(data, integer):
    # Risk tables (min and mean matched distance) must not change when a file's rows are
    # shuffled; integer coordinates make ties, which broken by row index changed them.
    a = np.asarray(data.draw(points(30, integer), label="original"), float).reshape(-1, 2)
    b = np.asarray(data.draw(points(30, integer), label="synthetic"), float).reshape(-1, 2)
    perm_a = data.draw(st.permutations(range(len(a))), label="perm_a")
    perm_b = data.draw(st.permutations(range(len(b))), label="perm_b")
    np.testing.assert_array_equal(greedy_match_distances(a[list(perm_a)], b[list(perm_b)]),
                                  greedy_match_distances(a, b))


@pytest.mark.parametrize("seed", range(4))
def test_shuffled_lattice_points_give_the_same_distances(seed):
    # 300 x 220 points on a 7 x 7 lattice, rows shuffled: every distance is tied many times.
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 7, (300, 2)).astype(float)
    b = rng.integers(0, 7, (220, 2)).astype(float)
    m = greedy_match(a, b)
    pa, pb = rng.permutation(300), rng.permutation(220)
    shuffled = greedy_match(a[pa], b[pb])
    np.testing.assert_array_equal(shuffled.distances, m.distances)
    # the same pairs of locations (rows of coincident points may swap)
    def located_pairs(match, x, y):
        pairs = np.hstack([x[match.original_index], y[match.synthetic_index]])
        return pairs[np.lexsort(pairs.T[::-1])]

    np.testing.assert_array_equal(located_pairs(shuffled, a[pa], b[pb]), located_pairs(m, a, b))


@pytest.mark.parametrize("seed", range(4))
def test_equals_brute_force_with_many_ties(seed):
    # 300 x 220 points on a 7 x 7 integer lattice: every distance is tied many times over.
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 7, (300, 2)).astype(float)
    b = rng.integers(0, 7, (220, 2)).astype(float)
    assert_same_matching(greedy_match(a, b), algorithm_1_in_xy_order(a, b))
    assert_same_matching(greedy_match(b, a), algorithm_1_in_xy_order(b, a))


def test_equals_brute_force_on_continuous_points():
    rng = np.random.default_rng(11)
    a = rng.normal(size=(400, 2))
    b = rng.uniform(-2, 2, size=(350, 2))
    assert_same_matching(greedy_match(a, b), algorithm_1_in_xy_order(a, b))


def test_docstring_example_by_hand():
    # Originals 0 at x=0 and 1 at x=10; synthetic at x=2, 5, 11. Closest pair: (1, 2) at 1.
    # Then original 0's nearest remaining synthetic is x=2 (distance 2); x=5 is left over.
    m = greedy_match([[0, 0], [10, 0]], [[2, 0], [5, 0], [11, 0]])
    assert m.distances.tolist() == [1.0, 2.0]
    assert m.original_index.tolist() == [1, 0]
    assert m.synthetic_index.tolist() == [2, 0]


def test_all_points_coincident_pairs_by_index():
    # Every distance is 0, so the order (0, i, j) pairs original k with synthetic k in turn.
    a = np.zeros((500, 2))
    b = np.zeros((300, 2))
    m = greedy_match(a, b)
    assert m.original_index.tolist() == list(range(300))
    assert m.synthetic_index.tolist() == list(range(300))
    assert not m.distances.any()


def test_chain_with_decreasing_gaps():
    # Points alternate original/synthetic along a line with strictly decreasing gaps g_0 > g_1 >
    # ..., so every point's nearest neighbour is on its right and only the rightmost pair is
    # mutual. Algorithm 1 matches (original k, synthetic k) at gap g_2k, from the right end
    # (k = n-1) to the left. Rounds of "match all mutual pairs" would need n rounds here.
    n = 3000
    gaps = np.linspace(2.0, 1.0, 2 * n)
    x = np.concatenate([[0.0], np.cumsum(gaps)])[: 2 * n]
    a = np.column_stack([x[0::2], np.zeros(n)])
    b = np.column_stack([x[1::2], np.zeros(n)])
    m = greedy_match(a, b)
    expected_k = np.arange(n - 1, -1, -1)
    np.testing.assert_array_equal(m.original_index, expected_k)
    np.testing.assert_array_equal(m.synthetic_index, expected_k)
    np.testing.assert_allclose(m.distances, (x[1::2] - x[0::2])[expected_k], rtol=1e-12)


def test_unequal_sizes_far_apart_regions():
    # 3,000 originals over the unit square, 1,000 synthetic points in its lower-left quarter:
    # every synthetic point is matched, each original at most once, in non-decreasing order.
    rng = np.random.default_rng(5)
    a = rng.random((3000, 2))
    b = rng.random((1000, 2)) * 0.5
    m = greedy_match(a, b)
    assert len(m.distances) == 1000
    assert np.unique(m.synthetic_index).size == 1000
    assert np.unique(m.original_index).size == 1000
    assert np.all(np.diff(m.distances) >= 0)
    assert_same_matching(m, algorithm_1_in_xy_order(a, b))


def test_empty_sides():
    m = greedy_match(np.empty((0, 2)), [[1.0, 2.0]])
    assert m.distances.size == 0 and m.original_index.size == 0 and m.synthetic_index.size == 0
    assert greedy_match_distances([[0, 0]], []).size == 0


def test_accepts_geoseries_and_checks_crs():
    a = gpd.GeoSeries(gpd.points_from_xy([0, 3], [0, 4]), crs="EPSG:31983")
    b = gpd.GeoSeries(gpd.points_from_xy([0, 3], [1, 4]), crs="EPSG:31983")
    # (1, 1) coincide (distance 0), then (0, 0) at distance 1.
    assert greedy_match_distances(a, b).tolist() == [0.0, 1.0]
    with pytest.raises(CRSError, match="to_crs"):
        greedy_match(a, b.set_crs("EPSG:3857", allow_override=True))


@pytest.mark.parametrize(
    "bad, message",
    [
        ([[0.0, np.nan]], "NaN or infinite"),
        ([[0.0, 1.0, 2.0]], r"\(n, 2\)"),
        ([[0.0, 1e101]], r"above 1e\+100 \(rows \[0\]\)"),
    ],
)
def test_bad_coordinates_are_refused(bad, message):
    with pytest.raises(InputError, match=message) as info:
        greedy_match(bad, [[0.0, 0.0]])
    assert "original_xy" in str(info.value)
    assert isinstance(info.value, ValueError)


def test_non_point_geometries_are_refused():
    import shapely

    lines = gpd.GeoSeries([shapely.LineString([(0, 0), (1, 1)])])
    with pytest.raises(InputError, match="non-point"):
        greedy_match(lines, [[0.0, 0.0]])


@pytest.mark.parametrize(
    "bad",
    [
        [["6001234.5", "7401234.5"]],  # text that looks like numbers was read as numbers
        [[True, False]],  # booleans were read as 1 and 0
        np.array([[6001234.5 + 1j, 7401234.5]]),  # the imaginary part was dropped (a warning)
        [["6001234.5", "x"]],  # the message quoted the text: a confidential coordinate
    ],
)
def test_coordinates_that_are_not_real_numbers_are_refused_without_quoting_them(bad):
    with pytest.raises(TypeError, match="original_xy must be an \\(n, 2\\) array") as info:
        greedy_match(bad, [[0.0, 0.0]])
    assert "6001234" not in str(info.value)


def test_masked_coordinates_are_refused():
    # np.asarray used the hidden value under the mask as a coordinate.
    masked = np.ma.masked_array([[1.0, 2.0]], mask=[[True, False]])
    with pytest.raises(InputError, match="original_xy is a masked array"):
        greedy_match(masked, [[0.0, 0.0]])


def test_coordinates_whose_distances_overflow_are_refused():
    # (1e200)² overflowed to inf: every distance tied at inf and pairs were matched by index.
    with pytest.raises(InputError, match=r"synthetic_xy has 1 points with \|x\| or \|y\|"):
        greedy_match([[0.0, 0.0]], [[1e200, 0.0]])


def test_a_frame_without_crs_next_to_one_with_a_crs_is_refused():
    a = gpd.GeoSeries(gpd.points_from_xy([0, 3], [0, 4]), crs="EPSG:31983")
    b = gpd.GeoSeries(gpd.points_from_xy([0, 3], [1, 4]))
    with pytest.raises(CRSError, match="original_xy has CRS EPSG:31983 but synthetic_xy has no "
                                       "CRS"):
        greedy_match(a, b)
    with pytest.raises(CRSError, match="original_xy has no CRS"):
        greedy_match(b, a)
    assert greedy_match_distances(b, b).tolist() == [0.0, 0.0]  # neither has a CRS: comparable
    assert greedy_match_distances(a, np.array([[0.0, 1.0]])).tolist() == [1.0]  # arrays: no CRS


def test_points_with_a_z_coordinate_are_measured_in_the_plane():
    # Planar, as a map shows them: a synthetic point over the original (100 m higher) sits on
    # it, the conservative reading for disclosure.
    flat = gpd.GeoSeries(gpd.points_from_xy([0.0], [0.0]), crs="EPSG:31983")
    high = gpd.GeoSeries(gpd.points_from_xy([0.0], [3.0], [100.0]), crs="EPSG:31983")
    assert greedy_match_distances(flat, high).tolist() == [3.0]


def test_an_array_of_rows_without_coordinates_is_refused():
    # A (5, 0) array was taken for "no points".
    with pytest.raises(InputError, match=r"got shape \(5, 0\)"):
        greedy_match(np.empty((5, 0)), [[0.0, 0.0]])
