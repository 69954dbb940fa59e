"""Risk measures: distance tables, linked-record measures and Reiter & Mitra identification risk."""

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest

from geosynth import Grid
from geosynth.errors import CRSError, InputError, InputTypeError
from geosynth.metrics import (
    displacement,
    distance_risk,
    identification_risk,
    k_anonymity_summary,
    spatial_k_anonymity,
)
from geosynth.metrics.risk import with_mean_row

CRS = "EPSG:31983"


def frame(xy, index=None, crs=CRS, **columns):
    xy = np.asarray(xy, dtype=float).reshape(-1, 2)
    return gpd.GeoDataFrame(
        columns, geometry=gpd.points_from_xy(xy[:, 0], xy[:, 1]), index=index, crs=crs
    )


# --------------------------------------------------------------------------- distance_risk


def test_distance_risk_by_hand():
    original = frame([[0, 0], [10, 0], [5, 5]], b=["A", "A", "B"])
    # Release 1: A at (0,3), (10,4) -> matched distances 3 and 4 (min 3, mean 3.5);
    #            B at (5,7), (5,6) -> one match, the closer point at distance 1;
    #            C exists only in the release and is ignored.
    release1 = frame([[0, 3], [10, 4], [5, 7], [5, 6], [0, 0]], b=["A", "A", "B", "B", "C"])
    # Release 2: A at (0,1) -> one match at distance 1 (to the original at (0,0)); no B at all.
    release2 = frame([[0, 1]], b=["A"])
    table = distance_risk(original, [release1, release2], by="b")
    # A: min (3 + 1)/2 = 2, mean (3.5 + 1)/2 = 2.25, n_synthetic (2 + 1)/2 = 1.5.
    # B: only release 1 has B points, so min = mean = 1; n_synthetic (2 + 0)/2 = 1.
    # Mean row: plain means of the two rows.
    expected = pd.DataFrame(
        {
            "n_original": [2.0, 1.0, 1.5],
            "n_synthetic": [1.5, 1.0, 1.25],
            "min_distance": [2.0, 1.0, 1.5],
            "mean_distance": [2.25, 1.0, 1.625],
            # The closest release: A's minima 3 and 1, means 3.5 and 1; B's only release 1.
            "worst_min_distance": [1.0, 1.0, 1.0],
            "worst_mean_distance": [1.0, 1.0, 1.0],
        },
        index=pd.Index(["A", "B", "mean"], name="b"),
    )
    pd.testing.assert_frame_equal(table, expected)
    bare = distance_risk(original, [release1, release2], by="b", mean_row=False)
    assert bare.index.tolist() == ["A", "B"]
    assert bare["n_original"].dtype == np.int64


def test_distance_risk_shows_the_release_that_came_closest():
    """One release of the records' own locations among four moved 500 m.

    Averaged over the releases its minimum matched distance read 9.6 m and its mean 434 m;
    an intruder holds every release, and the worst columns give 0 and 0.
    """
    rng = np.random.default_rng(3)
    xy = rng.uniform(0, 5000, size=(40, 2))
    original = gpd.GeoDataFrame({"b": ["A"] * 40}, geometry=gpd.points_from_xy(*xy.T),
                                crs=3857)
    moved = original.set_geometry(original.translate(500.0, 0.0))
    table = distance_risk(original, [original.copy(), *[moved] * 4], by="b", mean_row=False)
    assert table.loc["A", "min_distance"] > 0 and table.loc["A", "mean_distance"] > 300
    assert table.loc["A", "worst_min_distance"] == 0.0
    assert table.loc["A", "worst_mean_distance"] == 0.0


def test_distance_risk_refuses_text_levels_against_numbers():
    """A release read back with its levels as text matched nothing: every distance was NaN."""
    original = frame([[0, 0], [1, 0], [2, 0], [3, 0]], a=[1, 1, 2, 2])
    release = frame([[0, 1], [3, 1]], a=["1", "2"])
    with pytest.raises(InputError, match=r"by column 'a' holds numbers in original but "
                                         r"text in releases\[0\]"):
        distance_risk(original, [release], by="a")
    table = distance_risk(original, [release.assign(a=[1, 2])], by="a")
    assert table["min_distance"].notna().all()


def test_distance_risk_several_by_columns_and_single_release():
    original = frame([[0, 0], [1, 0], [2, 0]], sex=["F", "F", "M"], age=[1, 2, 1])
    release = frame([[0, 2], [1, 1], [2, 4]], sex=["F", "F", "M"], age=[1, 2, 1])
    table = distance_risk(original, release, by=["sex", "age"])
    assert table.index.tolist() == [("F", 1), ("F", 2), ("M", 1), ("mean", "")]
    # Each combination has one original and one synthetic point: distances 2, 1, 4.
    assert table["min_distance"].tolist() == [2.0, 1.0, 4.0, 7.0 / 3.0]


def test_distance_risk_refuses_bad_inputs():
    original = frame([[0, 0]], b=["A"])
    with pytest.raises(InputError, match="'c' is not a column of original"):
        distance_risk(original, frame([[0, 0]], b=["A"]), by="c")
    with pytest.raises(InputError, match="missing values"):
        distance_risk(original, frame([[0, 0]], b=[None]), by="b")
    with pytest.raises(CRSError, match=r"releases\[0\]"):
        distance_risk(original, frame([[0, 0]], crs="EPSG:3857", b=["A"]), by="b")
    degrees = frame([[0, 0]], crs="EPSG:4326", b=["A"])
    with pytest.raises(CRSError, match="geographic"):
        distance_risk(degrees, degrees.copy(), by="b")
    with pytest.raises(InputError, match="releases is empty"):
        distance_risk(original, [], by="b")


# --------------------------------------------------------------------------- linked records


@pytest.mark.parametrize(("by", "shown"), [(None, "NoneType"), (3, "int")])
def test_distance_risk_names_a_by_that_is_no_column_name(by, shown):
    # Both gave TypeError: '...' object is not iterable.
    original = frame([[0, 0]], b=["A"])
    with pytest.raises(InputError, match=f"by must be a column name or a list of column names, "
                                         f"got {shown}; e.g. by="):
        distance_risk(original, original, by=by)


def test_distance_risk_mean_row_must_be_a_bool():
    original = frame([[0, 0]], b=["A"])
    with pytest.raises(TypeError, match="mean_row must be True or False, got str 'no'"):
        distance_risk(original, original, by="b", mean_row="no")  # "no" was taken as True


@pytest.mark.parametrize("by", [["kind"], ["kind", "b"]])
def test_a_level_named_mean_is_refused_where_the_mean_row_would_share_its_label(by):
    # table.loc["mean"] gave both the combination "mean" and the mean row.
    original = frame([[0, 0], [5, 5]], kind=["mean", "median"], b=[1, 2])
    with pytest.raises(InputError, match="by column 'kind' has a level 'mean', the label of the "
                                         "tables' mean row.*or pass mean_row=False$"):
        distance_risk(original, original, by=by)
    table = distance_risk(original, original, by=by, mean_row=False)
    assert len(table) == 2  # without the mean row there is nothing to confuse
    # A level "mean" after the first column cannot collide: the mean row is ("mean", "").
    assert distance_risk(original, original, by=["b", "kind"]).index[-1] == ("mean", "")
    with pytest.raises(InputError, match="a combination labelled 'mean'"):
        with_mean_row(table)


def test_displacement_links_by_index():
    original = frame([[0, 0], [10, 0]], index=["a", "b"])
    release = frame([[13, 4], [3, 4]], index=["b", "a"])  # shuffled rows
    d = displacement(original, release)
    # a: (0,0) -> (3,4) and b: (10,0) -> (13,4): both 3-4-5 triangles.
    assert d.index.tolist() == ["a", "b"]
    assert d.tolist() == [5.0, 5.0]


def test_displacement_refuses_unlinked_records():
    original = frame([[0, 0], [1, 1]], index=[0, 1])
    with pytest.raises(InputError, match="missing from release"):
        displacement(original, frame([[0, 0]], index=[0]))
    with pytest.raises(InputError, match="duplicated index"):
        displacement(original, frame([[0, 0], [1, 1]], index=[0, 0]))


def test_record_level_measures_refuse_a_public_release():
    """to_public's fresh RangeIndex equals a default-indexed original's: displacement and
    spatial k-anonymity paired record k with the unrelated shuffled row k, without a word."""
    import geosynth
    from geosynth.synth.release import LINKED_ATTR

    original = frame([[0, 0], [10, 0], [20, 5]], index=[0, 1, 2])
    internal = frame([[3, 4], [13, 4], [20, 9]], index=[0, 1, 2])
    internal.attrs[LINKED_ATTR] = True
    public = geosynth.to_public(internal, seed=1)
    assert public.index.equals(original.index)
    for measure in (displacement, spatial_k_anonymity):
        with pytest.raises(InputError, match="release is a public release .*before to_public"):
            measure(original, public)
    assert displacement(original, internal).tolist() == [5.0, 5.0, 4.0]


def test_spatial_k_anonymity_by_hand():
    original = frame([[0, 0], [1, 0], [3, 0], [10, 0]])
    release = frame([[2, 0], [1, 0], [3, 5], [6, 0]])
    k = spatial_k_anonymity(original, release)
    # Record 0 moved to (2,0), displacement 2: originals at distance 2 (itself, on the circle),
    #   1 and 1 count, (10,0) at 8 does not -> k = 3.
    # Record 1 did not move: radius 0 holds only itself -> k = 1.
    # Record 2 moved to (3,5), displacement 5: (3,0) at 5 counts; (1,0) at sqrt(29) and (0,0) at
    #   sqrt(34) do not -> k = 1.
    # Record 3 moved to (6,0), displacement 4: (3,0) at 3 and itself at 4 -> k = 2.
    assert k.tolist() == [3, 1, 1, 2]
    summary = k_anonymity_summary(k, thresholds=(2, 5))
    assert summary["share_below_2"] == 0.5  # records 1 and 2
    assert summary["share_below_5"] == 1.0
    assert summary["k_min"] == 1.0 and summary["k_median"] == 1.5 and summary["k_mean"] == 1.75


def test_spatial_k_anonymity_with_address_population():
    original = frame([[0, 0]])
    release = frame([[0, 2]])
    # Circle of radius 2 around (0,2): addresses at (0,1), (1,2) inside, (0,0) on it, (5,5) out.
    addresses = frame([[0, 1], [1, 2], [0, 0], [5, 5]])
    assert spatial_k_anonymity(original, release, addresses).tolist() == [3]
    with pytest.raises(CRSError, match="population"):
        spatial_k_anonymity(original, release, addresses.to_crs("EPSG:3857"))


def _brute_k(population, centres, moved):
    """Point-by-point count of the closed circles, the test scipy's query_ball_point applies."""
    r = moved * (1.0 + 1e-9)  # the documented relative widening of the radius
    dx = population[None, :, 0] - centres[:, None, 0]
    dy = population[None, :, 1] - centres[:, None, 1]
    return ((dx * dx + dy * dy) <= (r * r)[:, None]).sum(axis=1).tolist()


def _lattice_case(rng, offset, step):
    """Lattice points with duplicates, moved by Pythagorean steps (many points on circles)."""
    xy = rng.integers(0, 40, (1500, 2)) * step + offset
    moves = np.array([[3, 4], [-4, 3], [0, 5], [5, 0], [1, 1], [0, 0], [12, -5], [-8, -15]])
    return xy, xy + moves[rng.integers(0, moves.shape[0], xy.shape[0])] * step


def _boundary_population(rng, centres, moved):
    """Points on each circle and one ulp either side, plus duplicates of them."""
    r = moved * (1.0 + 1e-9)
    angle = rng.uniform(0, 2 * np.pi, (centres.shape[0], 6))
    ring = centres[:, None, :] + r[:, None, None] * np.stack([np.cos(angle), np.sin(angle)], 2)
    ring = ring.reshape(-1, 2)
    pts = np.concatenate([ring, np.nextafter(ring, np.inf), np.nextafter(ring, -np.inf), ring])
    return pts


@pytest.mark.parametrize("threaded", [False, True])
@pytest.mark.parametrize(
    ("offset", "step"),
    [((0.0, 0.0), 1.0), ((500_000.0, 7_800_000.0), 1.0), ((500_000.0, 7_800_000.0), 0.25),
     ((-3.0, 2.0), 1e-3)],
)
def test_spatial_k_anonymity_equals_a_point_by_point_count(offset, step, threaded, monkeypatch):
    # Exact boundaries: integer and huge UTM coordinates, duplicates, zero displacements, points
    # on every circle and one ulp inside or outside it. The count must be the closed-circle
    # test point by point, whatever shortcut finds it (the fast path must not round).
    from scipy.spatial import cKDTree

    from geosynth.metrics import risk

    monkeypatch.setattr(risk, "_BALL_THREADED", 0 if threaded else 10**9, raising=False)
    rng = np.random.default_rng(7)
    xy, moved_xy = _lattice_case(rng, np.array(offset), step)
    original, release = frame(xy), frame(moved_xy)
    moved = displacement(original, release).to_numpy()
    k = spatial_k_anonymity(original, release)
    assert k.tolist() == _brute_k(xy, moved_xy, moved)
    assert (k >= 1).all()
    ball = cKDTree(xy).query_ball_point(moved_xy, r=moved * (1 + 1e-9), return_length=True)
    assert k.tolist() == ball.tolist()
    population = _boundary_population(rng, moved_xy[:300], moved[:300])
    population = np.concatenate([population, xy])
    k = spatial_k_anonymity(original, release, frame(population))
    assert k.tolist() == _brute_k(population, moved_xy, moved)
    ball = cKDTree(population).query_ball_point(moved_xy, r=moved * (1 + 1e-9), return_length=True)
    assert k.tolist() == ball.tolist()


def test_k_anonymity_summary_refuses_bad_input():
    with pytest.raises(InputError, match="non-empty"):
        k_anonymity_summary([])
    with pytest.raises(InputError, match="positive integers"):
        k_anonymity_summary([1, 2], thresholds=(0,))
    # A bare number gave TypeError: 'int' object is not iterable.
    with pytest.raises(InputError, match=r"thresholds must be a sequence of positive integers, "
                                         r"got int; e\.g\. thresholds=\(5, 25\) or \(5,\)"):
        k_anonymity_summary([1, 2], thresholds=5)


# --------------------------------------------------------------------------- identification


def two_cell_grid():
    # Cell 0 is x in [0, 1), cell 1 is x in [1, 2]; y in [0, 1].
    return Grid.regular((0, 0, 2, 1), shape=(1, 2), crs=CRS)


def at_cells(cells):
    """Points at the centres of the given cells of two_cell_grid."""
    return [[c + 0.5, 0.5] for c in cells]


def test_identification_risk_by_hand():
    grid = two_cell_grid()
    original = frame(at_cells([0, 0, 1, 1]), sex=["F", "F", "F", "M"])
    release1 = frame(at_cells([0, 1, 1, 0]))
    release2 = frame(at_cells([0, 0, 0, 1]))
    risk = identification_risk(original, [release1, release2], "sex", grid)
    # Targets r0 and r1 (F, cell 0). Release 1: F records in cell 0 = {r0}, F = 1 -> r0 gets 1.
    #   Release 2: {r0, r1, r2}, F = 3 -> 1/3 each. Probabilities (1/m = 1/2):
    #   r0 (1 + 1/3)/2 = 2/3, r1 1/6, r2 1/6 -> c = 1 at r0: r0 is a true unique match, r1 a
    #   false one.
    # Target r2 (F, cell 1). Release 1: {r1, r2}, F = 2 -> 1/2 each; release 2: none.
    #   r1 = r2 = 1/4 -> c = 2, T = 1: contributes 1/2.
    # Target r3 (M, cell 1): the only M record; in cell 1 in release 2 (F = 1) -> 1/2, c = 1.
    # Expected match risk = 1 + 0 + 1/2 + 1 = 2.5; unique matches s = 3 (r0, r1, r3), of which
    # r0 and r3 are true: true match rate 2/4, false match rate 1/3.
    assert risk.expected_match_risk == pytest.approx(2.5)
    assert risk.true_match_rate == pytest.approx(0.5)
    assert risk.false_match_rate == pytest.approx(1 / 3)
    assert risk.n_unique_matches == 3
    assert risk.n_true_unique_matches == 2
    assert risk.n_unique_attributes == 1
    rec = risk.records
    assert rec["c"].tolist() == [1, 1, 2, 1]
    assert rec["true_match"].tolist() == [True, False, True, True]
    np.testing.assert_allclose(rec["max_probability"], [2 / 3, 2 / 3, 1 / 4, 1 / 2])
    assert rec["unique_attributes"].tolist() == [False, False, False, True]
    assert risk.summary()["expected_match_risk"] == pytest.approx(2.5)


def test_identification_risk_weightings_differ_by_hand():
    grid = two_cell_grid()
    original = frame(at_cells([0, 1, 1]), sex=["F", "F", "F"])
    release1 = frame(at_cells([0, 0, 1]))
    release2 = frame(at_cells([1, 1, 0]))
    # Target r0 (F, cell 0). Release 1: cell 0 holds {r0, r1} (1/2 each); release 2: {r2} (1).
    #   Reiter & Mitra: r0 = r1 = 1/4, r2 = 1/2 -> c = 1 at r2, a false unique match.
    #   Share of releases: r0 = r1 = r2 = 1/2 -> c = 3, T = 1, contributes 1/3.
    rm = identification_risk(original, [release1, release2], ["sex"], grid)
    share = identification_risk(original, [release1, release2], ["sex"], grid, weighting="share")
    assert rm.records.loc[0, "c"] == 1 and not rm.records.loc[0, "true_match"]
    assert rm.records.loc[0, "max_probability"] == pytest.approx(0.5)
    assert share.records.loc[0, "c"] == 3 and share.records.loc[0, "true_match"]
    # Targets r1, r2 (F, cell 1). Release 1: {r2} (1); release 2: {r0, r1} (1/2 each).
    #   Reiter & Mitra: r2 = 1/2, r0 = r1 = 1/4 -> c = 1 at r2: false for r1, true for r2.
    #   Share: all 1/2 -> c = 3, T = 1 for both.
    assert rm.records["c"].tolist() == [1, 1, 1]
    assert rm.records["true_match"].tolist() == [False, False, True]
    assert rm.expected_match_risk == pytest.approx(1.0)
    assert rm.false_match_rate == pytest.approx(2 / 3)
    assert share.expected_match_risk == pytest.approx(1.0)  # 3 x 1/3
    assert share.n_unique_matches == 0 and np.isnan(share.false_match_rate)


def test_identification_risk_target_cell_never_hit():
    grid = two_cell_grid()
    original = frame(at_cells([0, 0]), sex=["F", "F"])
    release = frame(at_cells([1, 1]))
    # Nobody is ever released in cell 0: both F records tie at probability 0, c = 2, T = 1.
    risk = identification_risk(original, [release, release.copy()], "sex", grid)
    assert risk.records["c"].tolist() == [2, 2]
    assert risk.expected_match_risk == pytest.approx(1.0)
    assert risk.true_match_rate == 0.0 and np.isnan(risk.false_match_rate)


def test_identification_risk_unique_attributes_are_always_matched():
    # Ten records, each with its own attribute value; releases scatter them anywhere.
    grid = Grid.regular((0, 0, 10, 10), shape=(10, 10), crs=CRS)
    rng = np.random.default_rng(0)
    original = frame(rng.uniform(0, 10, (10, 2)), id=np.arange(10))
    releases = [frame(rng.uniform(0, 10, (10, 2))) for _ in range(3)]
    risk = identification_risk(original, releases, "id", grid)
    assert risk.true_match_rate == 1.0 and risk.expected_match_risk == 10.0


def test_identification_risk_refuses_bad_inputs():
    grid = two_cell_grid()
    original = frame(at_cells([0, 1]), sex=["F", "M"])
    with pytest.raises(InputError, match="differs from the original"):
        identification_risk(original, frame(at_cells([0, 1]), sex=["M", "M"]), "sex", grid)
    outside = frame([[5, 5], [0.5, 0.5]], sex=["F", "M"])
    with pytest.raises(InputError, match="in no grid cell"):
        identification_risk(outside, frame(at_cells([0, 1])), "sex", grid)
    with pytest.raises(InputError, match="weighting"):
        identification_risk(original, frame(at_cells([0, 1])), "sex", grid, weighting="x")
    with pytest.raises(InputError, match="Grid"):
        identification_risk(original, frame(at_cells([0, 1])), "sex", grid=None)


# -------------------------------------------------------------------------- exact oracle


def test_displacement_and_k_anonymity_refuse_a_list_of_releases():
    original = frame([[0, 0], [10, 0]])
    near, far = frame([[0, 1], [10, 1]]), frame([[0, 50], [10, 50]])
    # displacement silently measured only the first release of a list; spatial_k_anonymity
    # raised AttributeError ('builtin_function_or_method' object has no attribute ...).
    for measure in (displacement, spatial_k_anonymity):
        with pytest.raises(InputError, match=rf"release must be one geopandas\.GeoDataFrame, got "
                                             rf"list; {measure.__name__} measures one release"):
            measure(original, [near, far])
    assert displacement(original, far).tolist() == [50.0, 50.0]


@pytest.mark.parametrize("k", [[-1, 2], [0.5, 2], [np.inf, 2]])
def test_k_anonymity_summary_refuses_values_that_are_not_counts(k):
    with pytest.raises(InputError, match="1 values are negative, fractional or infinite"):
        k_anonymity_summary(k)


@pytest.mark.parametrize("k", [np.array([1 + 1j, 2]), [True, False], ["3", "4"]])
def test_k_anonymity_summary_refuses_values_that_are_not_numbers(k):
    # Complex k lost its imaginary part with a warning; text was refused only by dtype.
    with pytest.raises(TypeError, match="k must be an array of k-anonymity counts"):
        k_anonymity_summary(k)


def test_k_anonymity_summary_accepts_whole_floats():
    summary = k_anonymity_summary(np.array([1.0, 4.0, 5.0, 30.0]))
    assert summary["share_below_5"] == 0.5 and summary["k_min"] == 1.0


def test_identification_risk_refuses_frames_without_crs_on_a_grid_with_one():
    grid = two_cell_grid()
    # Coordinates in unknown units were located on the grid's cells as if in its CRS.
    original = frame(at_cells([0, 1]), sex=["F", "M"], crs=None)
    release = frame(at_cells([0, 1]), crs=None)
    with pytest.raises(CRSError, match=r"original has no CRS while the grid uses EPSG:31983; "
                                       r".*original\.set_crs\(grid\.crs\)"):
        identification_risk(original, release, "sex", grid)
    bare = Grid.regular((0, 0, 2, 1), shape=(1, 2))
    assert identification_risk(original, release, "sex", bare).n_records == 2


def test_identification_risk_repr_shows_no_record_id_or_cell():
    grid = two_cell_grid()
    original = frame(at_cells([0, 1]), index=["patient-123", "patient-456"], sex=["F", "M"])
    risk = identification_risk(original, frame(at_cells([1, 0]), index=original.index), "sex",
                               grid)
    # The dataclass repr printed the records table: every record's id and true cell.
    assert "patient-" not in repr(risk) and "cell" not in repr(risk)
    assert "expected_match_risk=2.0" in repr(risk)
    assert risk.records.loc["patient-456", "cell"] == 1  # still there for the data holder


def test_duplicated_column_names_are_refused_naming_the_column():
    original = frame([[0.5, 0.5], [1.5, 0.5]], sex=["F", "M"], age=[1, 2])
    twice = original.rename(columns={"age": "sex"})  # two columns called "sex"
    # distance_risk raised "The truth value of a Series is ambiguous", identification_risk
    # "operands could not be broadcast together".
    with pytest.raises(InputError, match=r"original has several columns named \['sex'\]"):
        distance_risk(twice, original, by="sex")
    with pytest.raises(InputError, match=r"releases\[0\] has several columns named \['sex'\]"):
        identification_risk(original, twice, "sex", two_cell_grid())


def test_displacement_names_the_release_whose_crs_differs():
    original = frame([[0, 0]])
    # The message spoke of "releases[0]", a parameter displacement does not have.
    with pytest.raises(CRSError, match=r"^release has no CRS but original has EPSG:31983"):
        displacement(original, frame([[0, 1]], crs=None))


def test_identification_risk_equals_the_definitions_on_random_small_cases():
    # A literal reading of Reiter & Mitra (2009) in exact fractions as the oracle: for target j,
    # record r's probability is (1/m) Σ_l [r matches j in l] / F_jl (or the share of releases),
    # c_j the records tied at the maximum, T_j whether j is among them. Random cases with m = 1,
    # ties, a cell no release hits and synthetic points outside the grid (cell -1).
    from fractions import Fraction

    grid = Grid.regular((0, 0, 3, 1), shape=(1, 3), crs=CRS)
    rng = np.random.default_rng(11)
    for _ in range(40):
        n, m = int(rng.integers(1, 7)), int(rng.integers(1, 4))
        attr, cell0 = rng.integers(0, 2, n), rng.integers(0, 3, n)
        cells = rng.integers(-1, 3, (m, n))
        original = frame([[c + 0.5, 0.5] for c in cell0], a=attr)
        releases = [frame([[c + 0.5, 0.5] if c >= 0 else [9.0, 9.0] for c in row])
                    for row in cells]
        for weighting in ("reiter_mitra", "share"):
            c, t = [], []
            for j in range(n):
                same = [r for r in range(n) if attr[r] == attr[j]]
                prob = {}
                for r in same:
                    p = Fraction(0)
                    for ell in range(m):
                        f = sum(cells[ell, k] == cell0[j] for k in same)
                        if cells[ell, r] == cell0[j]:
                            p += Fraction(1, int(f)) if weighting == "reiter_mitra" else 1
                    prob[r] = p / m
                tied = [r for r in same if prob[r] == max(prob.values())]
                c.append(len(tied))
                t.append(j in tied)
            risk = identification_risk(original, releases, "a", grid, weighting=weighting)
            assert risk.records["c"].tolist() == c
            assert risk.records["true_match"].tolist() == t
            emr = sum(Fraction(int(tj), cj) for tj, cj in zip(t, c, strict=True))
            assert risk.expected_match_risk == pytest.approx(float(emr), rel=1e-12)
            unique = [tj for tj, cj in zip(t, c, strict=True) if cj == 1]
            assert risk.true_match_rate == sum(unique) / n
            assert risk.n_unique_matches == len(unique)
            if unique:
                assert risk.false_match_rate == pytest.approx(unique.count(False) / len(unique))
            else:
                assert np.isnan(risk.false_match_rate)


# --------------------------------------------------------------------------- fuzzed arguments
def _pair():
    original = frame([[0, 0], [1, 1], [2, 2]], sex=["m", "f", "m"])
    grid = Grid.regular((-1, -1, 3, 3), shape=(2, 2), crs=CRS)
    return original, original.copy(), grid


def test_weighting_given_an_array_is_a_type_error():
    original, release, grid = _pair()
    with pytest.raises(InputTypeError, match=r"^weighting must be one of 'reiter_mitra', "
                                             r"'share', got ndarray"):
        identification_risk(original, [release], "sex", grid, weighting=np.array(["share"] * 2))


@pytest.mark.parametrize("call", [
    lambda o, r, g: distance_risk(o, np.array(1.0), "sex"),
    lambda o, r, g: distance_risk(o, [r], np.array(1.0)),
    lambda o, r, g: identification_risk(o, np.array(1.0), "sex", g),
    lambda o, r, g: identification_risk(o, [r], np.array("sex"), g),
    lambda o, r, g: k_anonymity_summary(np.array([1, 5, 30]), thresholds=np.array(5)),
    lambda o, r, g: distance_risk(o, [r], np.array([["sex"]])),
])
def test_a_0d_array_for_a_list_argument_is_a_type_error(call):
    # list(np.array(1.0)) raised "iteration over a 0-d array".
    with pytest.raises(InputTypeError, match=r"must be a"):
        call(*_pair())


def test_a_column_named_by_an_array_is_a_type_error():
    original, release, _ = _pair()
    with pytest.raises(InputTypeError, match=r"^by must list column names, got ndarray entries"):
        distance_risk(original, [release], [np.array(["sex", "sex"])])  # "truth value ..."
