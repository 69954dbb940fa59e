import warnings
from concurrent.futures import ThreadPoolExecutor

import geopandas as gpd
import matplotlib
import numpy as np
import pandas as pd
import pytest

import geosynth
from geosynth.errors import CRSError, DataWarning, InputError, InputTypeError, PrivacyLeakWarning
from geosynth.evaluation import (
    check_coverage_sizes,
    combine_measures,
    evaluate,
    linked_records,
    measure_release,
    plan_evaluation,
)
from geosynth.metrics import distance_risk, ripley_distance

matplotlib.use("Agg")
ATTRIBUTES = ["y", "x1", "x2"]


@pytest.fixture(scope="module")
def scenario(make_scenario_counts):
    data, grid, _ = make_scenario_counts(n=300, seed=1, shape=(6, 6), attributes=ATTRIBUTES)
    return data, grid


def test_identical_releases_have_zero_distance_and_full_coverage(scenario):
    data, grid = scenario
    copies = [data.data.copy(), data.data.copy()]
    with pytest.warns(PrivacyLeakWarning, match=r"releases 1, 2 \(of 2"):
        result = evaluate(data.data, copies, grid, ATTRIBUTES, outcome="y", n_quadrants=100,
                          seed=1)
    assert result.tables["distance_risk"]["mean_distance"].max() == pytest.approx(0.0)
    assert result.tables["coverage"]["mean_overlap"].iloc[0] == pytest.approx(1.0)
    assert result.tables["pattern"]["sup_l_difference"].max() == pytest.approx(0.0, abs=1e-9)
    assert np.all(result.tables["linked_records"]["mean_displacement"] == 0.0)


def test_a_release_holding_one_original_location_is_named(scenario):
    # Averaged over the releases, the matched distances hid a layer of the originals.
    data, grid = scenario
    releases = geosynth.naive_synthesize(data.data, grid, m=3, seed=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)  # synthetic points: no warning
        evaluate(data.data, releases, grid, ATTRIBUTES)
    edited = releases[1].copy()
    column = edited.columns.get_loc(edited.geometry.name)
    edited.iloc[7, column] = data.data.geometry.iloc[40]  # another record's location
    with pytest.warns(PrivacyLeakWarning, match=r"^release 2 \(of 3, counted from 1\) put "
                                                r"points exactly at the locations of original "
                                                r"records: .*do not publish them$"):
        evaluate(data.data, [releases[0], edited, releases[2]], grid, ATTRIBUTES)


def test_a_release_holding_near_copies_of_original_locations_is_named(scenario):
    # Five points moved 1 mm from records' homes (an edit, or a pipeline that jitters) passed
    # the exact test without a word.
    data, grid = scenario
    releases = geosynth.naive_synthesize(data.data, grid, m=3, seed=2)
    edited = releases[2].copy()
    homes = data.data.geometry.iloc[[3, 50, 99, 150, 201]].translate(0.001, -0.001)
    column = edited.columns.get_loc(edited.geometry.name)
    for row, home in zip([1, 2, 3, 4, 5], homes, strict=True):
        edited.iloc[row, column] = home
    with pytest.warns(PrivacyLeakWarning, match=r"^release 3 \(of 3, counted from 1\) put "
                                                r"points within 0.1 m of the locations of "
                                                r"original records: .*do not publish them$"):
        evaluate(data.data, [releases[0], releases[1], edited], grid, ATTRIBUTES)


def test_without_a_crs_only_exact_locations_are_warned_of(scenario):
    # Degrees without a CRS were read as metres: 0.1 "m" became 0.1 degrees, and a release
    # moved about 1 km from every record was warned of as a near copy.
    data, grid = scenario
    scale = 1e-5  # the scenario's metres as if degrees: 1 m is about 1e-5 degrees
    original = data.data.set_geometry(data.data.geometry.scale(scale, scale, origin=(0, 0)))
    original = original.set_crs(None, allow_override=True)
    moved = original.set_geometry(original.geometry.translate(0.01, 0.0))  # ~1 km
    bare = geosynth.Grid.regular(tuple(np.asarray(grid.bounds) * scale), shape=grid.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        result = evaluate(original, [moved], bare, ATTRIBUTES, linked=False)
    assert (result.tables["distance_risk"]["worst_min_distance"] > 0).all()  # no copy
    # ... while the exact test still runs without a CRS: one record's own location is named
    edited = moved.copy()
    edited.iloc[0, edited.columns.get_loc(edited.geometry.name)] = original.geometry.iloc[0]
    with pytest.warns(PrivacyLeakWarning, match=r"put points exactly at the locations"):
        evaluate(original, [edited], bare, ATTRIBUTES, linked=False)


def test_naive_releases_are_evaluated_with_figures(scenario):
    data, grid = scenario
    releases = geosynth.naive_synthesize(data.data, grid, m=3, seed=2)
    result = evaluate(data.data, releases, grid, ATTRIBUTES, outcome="y", n_quadrants=100,
                      seed=3)
    assert set(result.tables) == {"distance_risk", "identification_risk", "pattern",
                                  "linked_records", "coverage", "continuous"}  # of "z"
    assert result.tables["distance_risk"]["mean_distance"].iloc[-1] > 0
    assert 0 < result.tables["coverage"]["mean_overlap"].iloc[0] < 1
    figures = result.plots()
    assert len(figures) == 2 and len(figures[0].axes) >= 12
    text = result.to_markdown()
    assert "### distance risk" in text and "### coverage" in text


def test_coverage_takes_the_combining_rules_of_the_releases(scenario):
    data, grid = scenario
    releases = geosynth.naive_synthesize(data.data, grid, m=3, seed=2)
    kw = dict(outcome="y", n_quadrants=80, seed=3)
    for rules in ("partial", "full"):
        table = evaluate(data.data, releases, grid, ATTRIBUTES, rules=rules, **kw).tables
        direct = geosynth.metrics.quadrant_coverage(data.data, releases, "y", n_quadrants=80,
                                                    seed=3, rules=rules)
        assert table["coverage"]["mean_overlap"].iloc[0] == direct.mean_overlap
    with pytest.raises(InputError, match='rules must be "partial"'):  # before any measure
        evaluate(data.data, releases, grid, ATTRIBUTES, rules="fully", **kw)


def test_releases_made_with_epsilon_take_the_fully_synthetic_rules(scenario):
    """evaluate's default was the partial rules: DP releases got intervals far too narrow."""
    from geosynth.synth.release import ReleaseInfo, set_release_info

    data, grid = scenario
    releases = [geosynth.to_public(r, seed=k) for k, r in
                enumerate(geosynth.naive_synthesize(data.data, grid, m=3, seed=2))]
    for release in releases:
        set_release_info(release, ReleaseInfo(method="paiva-dp", epsilon=1.0))
    kw = dict(outcome="y", n_quadrants=80, seed=3, linked=False)
    found = evaluate(data.data, releases, None, ATTRIBUTES, **kw).tables["coverage"]
    full = geosynth.metrics.quadrant_coverage(data.data, releases, "y", n_quadrants=80, seed=3)
    bare = [release.copy() for release in releases]
    for release in bare:  # no record: the partial rules are the default, not refused
        release.attrs = {}
    partial = geosynth.metrics.quadrant_coverage(data.data, bare, "y", n_quadrants=80, seed=3)
    assert found["mean_overlap"].iloc[0] == full.mean_overlap != partial.mean_overlap
    assert evaluate(data.data, releases, None, ATTRIBUTES, rules="full",
                    **kw).tables["coverage"]["mean_overlap"].iloc[0] == full.mean_overlap
    with pytest.raises(InputError, match=r'rules="partial" for releases made with epsilon.*'
                                         r'pass rules="full", or leave rules=None'):
        evaluate(data.data, releases, None, ATTRIBUTES, rules="partial", **kw)
    plain = geosynth.to_public(geosynth.naive_synthesize(data.data, grid, m=1, seed=5)[0],
                               seed=9)
    with pytest.raises(InputError, match=r"releases 0, 2 were made with epsilon .* and "
                                         r"releases 1 without: .*evaluate each set"):
        evaluate(data.data, [releases[0], plain, releases[2]], None, ATTRIBUTES, **kw)


def test_public_releases_skip_linked_records(scenario):
    data, grid = scenario
    releases = [geosynth.to_public(r, seed=0)
                for r in geosynth.naive_synthesize(data.data, grid, m=2, seed=2)]
    result = evaluate(data.data, releases, grid, ATTRIBUTES, linked=False)
    assert set(result.tables) == {"distance_risk", "pattern", "continuous"}
    shuffled = [r.iloc[::-1] for r in geosynth.naive_synthesize(data.data, grid, m=1, seed=2)]
    with pytest.raises(InputError, match="linked=False"):
        evaluate(data.data, shuffled, grid, ATTRIBUTES)
    # A default-indexed original and a public release's fresh RangeIndex are equal indexes:
    # record k was linked to the unrelated shuffled row k.
    default = data.data.reset_index(drop=True)
    public = [geosynth.to_public(r, seed=0) for r in geosynth.naive_synthesize(default, grid, m=2,
                                                                                seed=2)]
    assert public[0].index.equals(default.index)
    with pytest.raises(InputError, match=r"releases\[0\] is a public release .*linked=False"):
        evaluate(default, public, grid, ATTRIBUTES)


def test_empty_releases_refused(scenario):
    data, grid = scenario
    with pytest.raises(InputError, match="releases is empty"):
        evaluate(data.data, [], grid, ATTRIBUTES)
    for wrong in (None, 5):  # list(releases) raised a raw TypeError
        with pytest.raises(InputError, match="releases must be a GeoDataFrame or a list of "
                                             "GeoDataFrames"):
            evaluate(data.data, wrong, grid, ATTRIBUTES)


def test_an_empty_original_is_refused_not_measured_as_nan(scenario):
    data, grid = scenario
    releases = geosynth.naive_synthesize(data.data, grid, m=2, seed=2)
    with pytest.raises(InputError, match="original has no records"):
        evaluate(data.data.iloc[:0], releases, grid, ATTRIBUTES, linked=False)


def test_tables_combined_per_release_equal_the_metrics_on_all_releases(scenario):
    # evaluate measures each release alone and combines afterwards (the split that lets
    # geosynth.distributed run a task per release); the metrics combine inside. Same arithmetic
    # in the same order, so the tables agree to the last bit.
    data, grid = scenario
    releases = geosynth.naive_synthesize(data.data, grid, m=3, seed=4)
    gone = (releases[1]["y"] == 1) & (releases[1]["x1"] == 2) & (releases[1]["x2"] == 3)
    releases[1] = releases[1][~gone]  # a combination missing from one release: NaN skipped
    result = evaluate(data.data, releases, grid, ATTRIBUTES, linked=False)
    pd.testing.assert_frame_equal(result.tables["distance_risk"],
                                  distance_risk(data.data, releases, by=ATTRIBUTES),
                                  check_exact=True)
    pd.testing.assert_frame_equal(result.tables["pattern"],
                                  ripley_distance(data.data, releases, by=ATTRIBUTES,
                                                  window=grid),
                                  check_exact=True)
    row = result.tables["distance_risk"].loc[(1, 2, 3)]
    assert row["n_synthetic"] == pytest.approx(2 / 3 * row["n_original"])  # 0 in release 1
    assert np.isfinite(row["min_distance"])  # averaged over the releases that have points


def test_a_release_s_pattern_does_not_depend_on_the_other_releases(scenario):
    # The window of the K functions was the box of the original and every release: a point of
    # another release far east widened it, and this release's L gap moved (3.44 to 4.31 in the
    # probe), as did the original's own L function. It is now the lattice's box.
    data, grid = scenario
    first, second = geosynth.naive_synthesize(data.data, grid, m=2, seed=6)
    x0, y0, x1, y1 = grid.bounds
    far = second.copy()
    far.geometry = far.geometry.where(
        far.index != far.index[0], gpd.points_from_xy([x1 + 3 * (x1 - x0)], [y1], crs=far.crs))
    alone = evaluate(data.data, [first], grid, ATTRIBUTES, linked=False)
    with pytest.warns(DataWarning, match=r"releases\[1\] \(1 of \d+\): points outside the "
                                         r"pattern table's window .* are left out"):
        together = evaluate(data.data, [first, far], grid, ATTRIBUTES, linked=False)
    pd.testing.assert_frame_equal(alone.measures[0].pattern, together.measures[0].pattern,
                                  check_exact=True)
    # the point outside the lattice is left out of its release's pattern, not refused
    inside = evaluate(data.data, [second.drop(index=second.index[0])], grid, ATTRIBUTES,
                      linked=False)
    pd.testing.assert_frame_equal(together.measures[1].pattern, inside.measures[0].pattern,
                                  check_exact=True)


def test_the_pattern_window_can_be_the_box_of_a_release_file_s_lattice(scenario):
    # geosynth evaluate has the grid layer of the release file, not a Grid: its box (with the
    # original's) is the window, as the Grid's is, so a release spread over the lattice beyond
    # the records keeps all its points in its L gap.
    data, grid = scenario
    releases = geosynth.naive_synthesize(data.data, grid, m=2, seed=6)
    with_grid = evaluate(data.data, releases, grid, ATTRIBUTES, linked=False)
    with_box = evaluate(data.data, releases, None, ATTRIBUTES, linked=False,
                        lattice_bounds=grid.cells.total_bounds)
    pd.testing.assert_frame_equal(with_grid.tables["pattern"], with_box.tables["pattern"],
                                  check_exact=True)
    with pytest.raises(InputError, match=r"grid must be a geosynth.Grid .*got str; pass a "
                                         r"lattice's box as lattice_bounds="):
        evaluate(data.data, releases, "grid", ATTRIBUTES, linked=False)
    # a box with the default linked=True failed in the identification risk ("grid must be a
    # Grid, got NoneType"), and a box beside a grid was ignored
    with pytest.raises(InputError, match=r"linked=True .* needs grid .* pass linked=False"):
        evaluate(data.data, releases, None, ATTRIBUTES, lattice_bounds=grid.bounds)
    with pytest.raises(InputError, match=r"give grid or lattice_bounds, not both"):
        evaluate(data.data, releases, grid, ATTRIBUTES, linked=False,
                 lattice_bounds=(0.0, 0.0, 1.0, 1.0))


def test_errors_name_the_release_and_the_executor(scenario):
    data, grid = scenario
    releases = geosynth.naive_synthesize(data.data, grid, m=2, seed=2)
    with pytest.raises(InputError, match=r"'x2' is not a column of releases\[1\]"):
        evaluate(data.data, [releases[0], releases[1].drop(columns="x2")], grid, ATTRIBUTES)
    with pytest.raises(InputError, match="executor must be a concurrent.futures.Executor"):
        evaluate(data.data, releases, grid, ATTRIBUTES, executor="threads")
    with pytest.raises(InputError, match="executor must be a concurrent.futures.Executor"):
        linked_records(data.data, releases, executor=2)


def test_an_original_in_a_wrong_crs_is_refused_not_measured_as_no_risk(scenario):
    # Metres of EPSG:31983 declared as UTM 33N and reprojected: distances of 11,000 km, i.e. a
    # risk table that looks perfectly safe.
    data, grid = scenario
    releases = [geosynth.to_public(r, seed=0)
                for r in geosynth.naive_synthesize(data.data, grid, m=2, seed=2)]
    wrong = data.data.set_crs("EPSG:32633", allow_override=True).to_crs(data.data.crs)
    with ThreadPoolExecutor(max_workers=1) as pool:
        for executor in (None, pool):
            with pytest.raises(CRSError, match=r"original and the releases do not overlap.*"
                                               r"releases\[0\].*likely cause is a wrong CRS.*"
                                               r"original\.crs, CLI: --crs") as caught:
                evaluate(wrong, releases, None, ATTRIBUTES, linked=False, executor=executor)
            shown = str(caught.value).replace("[0]", "").replace("10 %", "")
            assert not any(char.isdigit() for char in shown)  # no coordinate, bound or share
    with pytest.raises(CRSError, match="do not overlap"):
        plan_evaluation(wrong, releases, ATTRIBUTES, linked=False)


def test_the_overlap_rule(scenario):
    # Documented rule: at least half of the release's points in the original's bounding box
    # widened by 10 % of its longer side, or half of the original points in the release's.
    data, grid = scenario
    release = geosynth.naive_synthesize(data.data, grid, m=1, seed=2)[0]
    xmin, _, xmax, _ = data.data.total_bounds
    side = xmax - xmin  # the x extent of the original points

    def shifted(share, rows=slice(None)):
        moved = release.copy()
        moved.loc[moved.index[rows], "geometry"] = \
            moved.geometry.iloc[rows].translate(xoff=share * side).to_numpy()
        return moved

    assert plan_evaluation(data.data, [shifted(0.4)], ATTRIBUTES, linked=True)  # a sliver more
    with pytest.raises(CRSError, match=r"fewer than half of the points of releases\[1\]"):
        plan_evaluation(data.data, [release, shifted(0.8)], ATTRIBUTES, linked=True)
    # Most of the points far away, yet the original lies within the release's box (as in a
    # noisy release over a wide public region): it overlaps.
    assert plan_evaluation(data.data, [shifted(10, slice(0, 200))], ATTRIBUTES, linked=True)


def test_attributes_must_be_column_names(scenario):
    data, grid = scenario
    releases = [data.data, data.data]
    with pytest.raises(InputError, match="attributes must be a column name or a list of column "
                                         "names, got NoneType"):
        evaluate(data.data, releases, grid, None, linked=False)  # was TypeError: not iterable


def test_a_level_named_mean_is_refused_before_any_measure(scenario, monkeypatch):
    # The mean rows of the tables are labelled "mean": a combination "mean" shared the label.
    data, grid = scenario
    named = data.data.assign(kind=np.where(data.data["y"] == 1, "mean", "median"))
    measured = []
    monkeypatch.setattr(geosynth.evaluation, "measure_release",
                        lambda *args: measured.append(args))
    with pytest.raises(InputError, match="attribute column 'kind' has a level 'mean'"):
        evaluate(named, [named, named], grid, ["kind", "x1"], linked=False)
    assert measured == []


def assert_evaluations_equal(got, want):
    """Same tables, in the same order, to the last bit."""
    assert list(got.tables) == list(want.tables)
    for name, table in want.tables.items():
        pd.testing.assert_frame_equal(got.tables[name], table, check_exact=True)
    pd.testing.assert_frame_equal(got.quadrants, want.quadrants, check_exact=True)


class CountingExecutor(ThreadPoolExecutor):
    """A thread pool that records the functions it was given."""

    def __init__(self):
        super().__init__(max_workers=2)
        self.submitted = []

    def submit(self, fn, /, *args, **kwargs):
        self.submitted.append(fn.__name__)
        return super().submit(fn, *args, **kwargs)


def test_executor_measures_each_release_in_a_task_with_the_same_tables(scenario):
    data, grid = scenario
    releases = geosynth.naive_synthesize(data.data, grid, m=3, seed=5)
    kw = dict(outcome="y", n_quadrants=60, seed=2)
    want = evaluate(data.data, releases, grid, ATTRIBUTES, **kw)
    with CountingExecutor() as executor:
        got = evaluate(data.data, releases, grid, ATTRIBUTES, executor=executor, **kw)
    assert executor.submitted == ["measure_release"] * 3
    assert set(got.tables) == {"distance_risk", "identification_risk", "pattern",
                               "linked_records", "coverage", "continuous"}
    assert_evaluations_equal(got, want)


def test_plan_measure_combine_are_the_steps_of_evaluate(scenario):
    data, grid = scenario
    releases = geosynth.naive_synthesize(data.data, grid, m=2, seed=6)
    checked, plan = plan_evaluation(data.data, releases, ATTRIBUTES, linked=True, grid=grid)
    assert plan.attributes == tuple(ATTRIBUTES) and plan.linked
    tables = combine_measures([measure_release(data.data, r, plan) for r in checked])
    want = evaluate(data.data, releases, grid, ATTRIBUTES).tables
    for name in ("distance_risk", "pattern", "linked_records"):
        pd.testing.assert_frame_equal(tables[name], want[name], check_exact=True)


def test_linked_records_alone_equal_the_table_of_evaluate(scenario):
    data, grid = scenario
    releases = geosynth.naive_synthesize(data.data, grid, m=3, seed=7)
    want = evaluate(data.data, releases, grid, ATTRIBUTES).tables["linked_records"]
    pd.testing.assert_frame_equal(linked_records(data.data, releases), want)
    with CountingExecutor() as executor:
        got = linked_records(data.data, releases, executor=executor)
    assert len(executor.submitted) == 3
    pd.testing.assert_frame_equal(got, want)
    with pytest.raises(InputError, match=r"releases\[1\] does not keep the original index"):
        linked_records(data.data, [releases[0], releases[1].iloc[::-1]])
    with pytest.raises(InputError, match="releases is empty"):
        linked_records(data.data, [])


@pytest.mark.parametrize("text", ["plain", "a `b` c", "```<img src=x onerror=alert(1)>```",
                                  "`edge`", "line\nbreak\x1b[2J"])
def test_markdown_code_keeps_data_inside_its_code(text):
    # A level holding ``` closed the report's fence; what followed was Markdown (and HTML).
    from geosynth.evaluation import markdown_code

    shown = text.replace("\n", "?").replace("\x1b", "?")
    inline = markdown_code(text)
    fence = inline[: len(inline) - len(inline.lstrip("`"))]
    assert inline.endswith(fence) and "`" * len(fence) not in shown
    assert inline[len(fence):-len(fence)] in (shown, f" {shown} ")
    block = markdown_code("col\n" + text, block=True).split("\n")
    assert block[0] == block[-1] and set(block[0]) == {"`"} and len(block[0]) >= 3
    assert all(block[0] not in line for line in block[1:-1])


def test_an_outcome_the_coverage_cannot_use_is_refused_in_the_terms_of_evaluate(scenario):
    # quadrant_coverage's messages advised its own min_points, which evaluate does not have.
    data, grid = scenario
    releases = geosynth.naive_synthesize(data.data, grid, m=2, seed=2)
    with pytest.raises(InputError, match="outcome needs at least 2 releases.*outcome=None"):
        evaluate(data.data, releases[:1], grid, ATTRIBUTES, outcome="y")
    few = [frame.iloc[:19] for frame in (data.data, *releases)]
    with pytest.raises(InputError, match="outcome needs at least 20 original records .*but "
                                         "original has 19; pass outcome=None"):
        evaluate(few[0], few[1:], grid, ATTRIBUTES, outcome="y")
    assert "coverage" not in evaluate(few[0], few[1:], grid, ATTRIBUTES).tables


# ---------------------------------------------------------------- releases that cannot match


@pytest.mark.parametrize("as_text", ["release", "original"])
def test_levels_of_another_type_in_a_release_are_refused_not_measured_as_no_risk(
    scenario, as_text
):
    # The text "1" is not the number 1: a release read back with text columns shared no
    # combination with the original, and every table said "no synthetic record" (NaN).
    data, grid = scenario
    original = data.data.copy()
    releases = geosynth.naive_synthesize(original, grid, m=2, seed=2)
    if as_text == "release":
        releases[1] = releases[1].assign(x2=releases[1]["x2"].astype(str))
        kinds = "holds numbers in original but text in releases\\[1\\]"
    else:
        original = original.assign(x2=original["x2"].astype(str))
        kinds = "holds text in original but numbers in releases\\[0\\]"
    with pytest.raises(InputError, match=f"attribute column 'x2' {kinds}; levels compare by "
                                         "value and type.*astype"):
        evaluate(original, releases, grid, ATTRIBUTES, linked=False)


def test_levels_of_the_same_kind_in_other_dtypes_are_measured_alike(scenario):
    # Floats 1.0 and ints 1 (or categories) are the same levels: nothing to refuse.
    data, grid = scenario
    releases = geosynth.naive_synthesize(data.data, grid, m=2, seed=2)
    same = evaluate(data.data, releases, grid, ATTRIBUTES, linked=False).tables
    other = [r.assign(x2=r["x2"].astype(float), x1=r["x1"].astype("category"))
             for r in releases]
    tables = evaluate(data.data, other, grid, ATTRIBUTES, linked=False).tables
    np.testing.assert_array_equal(tables["distance_risk"].to_numpy(),
                                  same["distance_risk"].to_numpy())
    empty = [releases[0].iloc[:0].assign(x2=releases[0]["x2"].iloc[:0].astype(str))]
    assert evaluate(data.data, empty, grid, ATTRIBUTES, linked=False).tables[
        "distance_risk"]["n_synthetic"].eq(0).all()  # no level, no kind to compare


# ---------------------------------------------------------------- figures


def test_the_points_figure_takes_each_combinations_own_rows_when_labels_repeat(scenario):
    # Unlinked frames may repeat index labels; .loc of a label took the rows of every
    # combination holding it, so a panel showed points of other combinations.
    data, grid = scenario
    original = data.data.copy()
    original.index = np.arange(len(original)) // 2
    releases = [geosynth.to_public(r, seed=0)
                for r in geosynth.naive_synthesize(data.data, grid, m=1, seed=2)]
    result = evaluate(original, releases, grid, ATTRIBUTES, linked=False)
    figure = result.plots()[0]
    groups = original.reset_index(drop=True).groupby(ATTRIBUTES, sort=True).indices
    for ax, rows in zip(figure.axes, groups.values(), strict=False):
        shown = ax.collections[0].get_offsets()
        xy = np.column_stack([original.geometry.x.to_numpy()[rows],
                              original.geometry.y.to_numpy()[rows]])
        np.testing.assert_array_equal(np.asarray(shown), xy)


@pytest.mark.parametrize(("max_panels", "error", "match"), [
    (0, InputError, "max_panels must be an int >= 1, got 0"),
    (True, TypeError, "max_panels must be an int, got bool"),
    (2.0, TypeError, "max_panels must be an int, got float"),
])
def test_a_number_of_panels_that_is_not_a_positive_int_is_refused(
    scenario, max_panels, error, match
):
    # max_panels=0 divided by zero; a bool counted as 1 panel.
    data, grid = scenario
    releases = geosynth.naive_synthesize(data.data, grid, m=1, seed=2)
    result = evaluate(data.data, releases, grid, ATTRIBUTES)
    with pytest.raises(error, match=match):
        result.plots(max_panels=max_panels)


def test_linked_records_alone_refuse_releases_that_do_not_overlap(scenario):
    # evaluate refused them; the linked_records table alone measured 10,000 km displacements,
    # which read as no risk.
    data, grid = scenario
    releases = geosynth.naive_synthesize(data.data, grid, m=2, seed=7)
    far = releases[1].copy()
    far.geometry = far.geometry.translate(1e7, 0.0)
    with pytest.raises(CRSError, match=r"do not overlap: fewer than half of the points of "
                                       r"releases\[1\]"):
        linked_records(data.data, [releases[0], far])
    with pytest.raises(CRSError, match=r"releases\[0\] has EPSG:32723 but original has"):
        linked_records(data.data, [releases[0].to_crs("EPSG:32723")])


def test_combining_no_measures_is_refused_naming_the_argument():
    # measures[0] raised a bare IndexError.
    with pytest.raises(InputError, match="measures is empty; pass the measure_release result"):
        combine_measures([])


# ---------------------------------------------------------------- what the text shows


def test_the_text_shows_no_distance_of_a_combination_of_one_record(scenario):
    # A combination of one record is one person: its min/mean distance is that person's
    # distance to the (public) synthetic points. to_markdown printed it, and the mean row gave
    # it back from the other rows.
    data, grid = scenario
    original = data.data.copy()
    lone = original.index[0]
    original.loc[lone, "x2"] = 9  # the only record of its combination
    releases = [geosynth.to_public(r, seed=0)
                for r in geosynth.naive_synthesize(original, grid, m=2, seed=2)]
    result = evaluate(original, releases, grid, ATTRIBUTES, linked=False)
    table = result.tables["distance_risk"]
    key = tuple(original.loc[lone, ATTRIBUTES])
    secret = table.loc[key, "mean_distance"]
    assert table.loc[key, "n_original"] == 1 and np.isfinite(secret)  # the tables keep it
    text = result.to_markdown()
    for value in (secret, table["mean_distance"].iloc[-1]):  # as printed: 3 decimals
        assert f"{value:,.3f}" not in text and f"{value:.6f}" not in text
    assert ("Not shown (NaN): min_distance, mean_distance, worst_min_distance and "
            "worst_mean_distance of 1 combination(s) of fewer than 3 original records") in text
    shown = geosynth.evaluation.shown_tables(result.tables)["distance_risk"]
    assert np.isnan(shown.loc[key, ["min_distance", "mean_distance"]]).all()
    others = table.drop(index=[key, table.index[-1]])
    assert shown["mean_distance"].iloc[-1] == pytest.approx(others["mean_distance"].mean())
    rounded = ["min_distance", "worst_min_distance", "worst_mean_distance"]  # 2 digits (below)
    pd.testing.assert_frame_equal(shown.drop(index=[key, table.index[-1]], columns=rounded),
                                  others.drop(columns=rounded))


def test_the_text_shows_a_least_distance_to_two_significant_digits(scenario):
    # Matched greedily, the first pair is the closest: with one release a combination's
    # min_distance was the distance of its record nearest to any of its public points, printed
    # to the millimetre for combinations of 125 records.
    data, grid = scenario
    release = geosynth.to_public(geosynth.naive_synthesize(data.data, grid, m=1, seed=2)[0],
                                 seed=0)
    result = evaluate(data.data, [release], grid, ATTRIBUTES, linked=False)
    text = result.to_markdown()
    for column in ("min_distance", "worst_min_distance", "worst_mean_distance"):
        exact = result.tables["distance_risk"][column].iloc[:-1]
        shown = geosynth.evaluation.shown_tables(result.tables)["distance_risk"][column]
        digits = 1 - np.floor(np.log10(exact.to_numpy()))  # derived apart: 2 significant digits
        np.testing.assert_allclose(shown.iloc[:-1], np.round(exact * 10**digits) / 10**digits)
        assert shown.iloc[-1] == pytest.approx(shown.iloc[:-1].mean())  # of the rounded values
        if column != "worst_mean_distance":  # with m = 1 it is mean_distance, shown whole
            assert not any(f"{value:,.3f}" in text for value in exact)
    assert ("min_distance, worst_min_distance and worst_mean_distance are shown to 2 "
            "significant digits") in text


def test_the_text_shows_no_distance_of_a_combination_of_two_records(scenario):
    # With one release, the minimum and the mean matched distance of a combination of two
    # records are both people's distances (the mean gives the second); the L function of two
    # points is one step at their separation. MIN_SHOWN_RECORDS was 2: all were printed.
    data, grid = scenario
    original = data.data.copy()
    pair = original.index[:2]
    original.loc[pair[1], ["y", "x1"]] = original.loc[pair[0], ["y", "x1"]].to_numpy()
    original.loc[pair, "x2"] = 9  # the only two records of their combination
    release = geosynth.to_public(geosynth.naive_synthesize(original, grid, m=1, seed=2)[0],
                                 seed=0)
    result = evaluate(original, [release], grid, ATTRIBUTES, linked=False)
    key = tuple(original.loc[pair[0], ATTRIBUTES])
    row = result.tables["distance_risk"].loc[key]
    assert row["n_original"] == 2 and np.isfinite(row[["min_distance", "mean_distance"]]).all()
    second = 2 * row["mean_distance"] - row["min_distance"]  # what the printed row gave away
    assert second >= row["min_distance"]
    text = result.to_markdown()
    for value in (row["min_distance"], row["mean_distance"], second):
        assert f"{value:,.3f}" not in text and f"{value:.6f}" not in text
    shown = geosynth.evaluation.shown_tables(result.tables)
    assert np.isnan(shown["distance_risk"].loc[key, ["min_distance", "mean_distance"]]).all()
    assert np.isnan(shown["pattern"].loc[key, "sup_l_difference"])
    assert "Not shown (NaN): sup_l_difference of" in text


def test_the_summary_tables_keep_only_the_mean_rows(scenario):
    # The text of a DP release: no row per original combination, no count.
    data, grid = scenario
    releases = geosynth.naive_synthesize(data.data, grid, m=2, seed=2)
    result = evaluate(data.data, releases, grid, ATTRIBUTES, outcome="y", n_quadrants=50,
                      seed=1, linked=False)
    shown = geosynth.evaluation.shown_tables(result.tables)
    summary = geosynth.evaluation.summary_tables(result.tables)
    assert list(summary) == list(result.tables)
    for name in ("distance_risk", "pattern"):
        assert len(summary[name]) == 1 and "n_original" not in summary[name].columns
        assert "n_synthetic" not in summary[name].columns
        expected = shown[name].drop(columns=["n_original", "n_synthetic"]).iloc[-1]
        np.testing.assert_array_equal(summary[name].iloc[0].to_numpy(), expected.to_numpy())
    pd.testing.assert_frame_equal(summary["coverage"], result.tables["coverage"])


def test_points_at_one_place_without_a_grid_are_refused_in_the_terms_of_evaluate(scenario):
    # The pattern table's window could not be derived, and the advice was "pass window
    # explicitly", a parameter evaluate does not have.
    data, grid = scenario
    flat = data.data.copy()
    flat.geometry = gpd.points_from_xy(flat.geometry.x, np.full(len(flat), 7_790_000.0),
                                       crs=flat.crs)
    one_place = flat.assign(geometry=gpd.points_from_xy(np.full(len(flat), 650_000.0),
                                                        flat.geometry.y, crs=flat.crs))
    with pytest.raises(InputError, match="all at one place.*evaluate points spread over an "
                                         "area, or pass the releases' grid") as caught:
        evaluate(one_place, [one_place, one_place], None, ATTRIBUTES, linked=False)
    assert "window explicitly" not in str(caught.value)
    assert not any(char.isdigit() for char in str(caught.value))
    # the lattice gives the window an area
    assert "pattern" in evaluate(flat, [flat, flat], grid, ATTRIBUTES, linked=False).tables


# --------------------------------------------------------------------------- fuzzed arguments
@pytest.mark.parametrize("n_quadrants", [np.nan, object(), "1", 0])
def test_n_quadrants_is_checked_without_an_outcome_too(scenario, n_quadrants):
    # With outcome=None, a NaN, an object or a str was accepted silently.
    data, grid = scenario
    releases = [data.data, data.data]
    with pytest.raises(InputError, match=r"^n_quadrants must be an int"):
        evaluate(data.data, releases, grid, ATTRIBUTES, n_quadrants=n_quadrants)


def test_an_outcome_named_by_an_array_is_a_type_error(scenario):
    data, grid = scenario
    with pytest.raises(InputTypeError, match=r"^outcome column must be a column name"):
        evaluate(data.data, [data.data, data.data], grid, ATTRIBUTES,
                 outcome=np.array(["y", "x1"]))  # was "truth value ... is ambiguous"


@pytest.mark.parametrize("call", [
    lambda d, g: evaluate(d, np.array(1.0), g, ATTRIBUTES),
    lambda d, g: evaluate(d, [d], g, np.array(1.0)),
    lambda d, g: plan_evaluation(d, np.array(1.0), ATTRIBUTES, True),
    lambda d, g: plan_evaluation(d, [d], np.array("y"), True),
    lambda d, g: linked_records(d, np.array(1.0)),
])
def test_a_0d_array_for_releases_or_attributes_is_a_type_error(scenario, call):
    # list(np.array(1.0)) raised "iteration over a 0-d array".
    data, grid = scenario
    with pytest.raises(InputTypeError, match=r"^(releases|attributes) must be a"):
        call(data.data, grid)


@pytest.mark.parametrize(("n_original", "m", "match"), [
    (80.5, 2, r"^n_original \(number of original records\) must be an int"),
    (None, 2, r"^n_original \(number of original records\) must be an int"),
    (80, np.inf, r"^m \(number of releases\) must be an int"),
])
def test_check_coverage_sizes_refuses_what_is_no_count(n_original, m, match):
    # 80.5 and inf were accepted; None raised "'<' not supported".
    with pytest.raises(InputTypeError, match=match):
        check_coverage_sizes(n_original, m)


def test_the_repr_shows_no_table(scenario):
    # The dataclass repr printed every table: the distance of a combination of one record,
    # which the text outputs leave out, and the exact counts of the original per combination.
    data, grid = scenario
    original = data.data.copy()
    original.loc[original.index[0], "x2"] = 9  # the only record of its combination
    releases = [geosynth.to_public(r, seed=0)
                for r in geosynth.naive_synthesize(original, grid, m=2, seed=2)]
    result = evaluate(original, releases, grid, ATTRIBUTES, linked=False)
    table = result.tables["distance_risk"]
    key = tuple(original.loc[original.index[0], ATTRIBUTES])
    assert table.loc[key, "n_original"] == 1
    text = repr(result)
    assert text == "Evaluation(tables=['distance_risk', 'pattern', 'continuous'])"
    assert f"{table.loc[key, 'mean_distance']:.3f}" not in text and "n_original" not in text


def test_the_text_of_a_table_without_mean_row_hides_its_last_combination_too(scenario):
    # shown_tables took the last row for the mean row: a lone record's distance in the last
    # row of distance_risk(..., mean_row=False) was shown, and replaced by a mean when not.
    data, grid = scenario
    original = data.data.copy()
    lone = original.index[0]
    original.loc[lone, ATTRIBUTES] = [original["y"].max(), 99, 9]  # alone, sorted last
    releases = [geosynth.to_public(r, seed=0)
                for r in geosynth.naive_synthesize(original, grid, m=2, seed=2)]
    table = distance_risk(original, releases, by=ATTRIBUTES, mean_row=False)
    key = tuple(original.loc[lone, ATTRIBUTES])
    assert table.index[-1] == key and table.loc[key, "n_original"] == 1
    shown = geosynth.evaluation.shown_tables({"distance_risk": table})["distance_risk"]
    assert np.isnan(shown.loc[key, ["min_distance", "mean_distance"]]).all()
    # the others as measured (the least distances to two significant digits)
    rounded = ["min_distance", "worst_min_distance", "worst_mean_distance"]
    pd.testing.assert_frame_equal(shown.iloc[:-1].drop(columns=rounded),
                                  table.iloc[:-1].drop(columns=rounded))
    note = geosynth.evaluation.suppression_note("distance_risk", table)
    assert "of 1 combination(s)" in note


def test_a_combination_of_too_few_synthetic_points_is_not_shown_either():
    # Five original records of a = 1, and one public synthetic point of a = 1 at (13, 4): the
    # shown minimum distance, 5.0, was exactly its distance to the original at (10, 0).
    original = gpd.GeoDataFrame(
        {"a": [1, 1, 1, 1, 1, 0, 0, 0, 0]},
        geometry=gpd.points_from_xy([10, 30, 50, 70, 90, 12, 34, 56, 78],
                                    [0, 20, 40, 60, 80, 5, 25, 45, 65]), crs="EPSG:3857")
    release = gpd.GeoDataFrame(
        {"a": [1, 0, 0, 0, 0]},
        geometry=gpd.points_from_xy([13, 15, 35, 55, 75], [4, 9, 29, 49, 69]), crs="EPSG:3857")
    table = distance_risk(original, [release], by=["a"])
    assert table.loc[1, "n_original"] == 5 and table.loc[1, "n_synthetic"] == 1
    assert table.loc[1, "min_distance"] == pytest.approx(5.0)
    shown = geosynth.evaluation.shown_tables({"distance_risk": table})["distance_risk"]
    assert np.isnan(shown.loc[1, ["min_distance", "mean_distance"]]).all()
    assert not np.isnan(shown.loc[0, ["min_distance", "mean_distance"]]).any()
    note = geosynth.evaluation.suppression_note("distance_risk", table)
    assert "of 1 combination(s) of fewer than 3 original records or synthetic points" in note


def test_a_release_plan_does_not_print_the_original_extremes():
    # The plan's window is the box of the original, widened: printed (a Dask task's arguments,
    # a log), it showed an original point beyond the releases, -7.25.
    original = gpd.GeoDataFrame({"a": [1, 1, 0]}, geometry=gpd.points_from_xy(
        [-7.25, 20.0, 40.0], [0.0, 3.0, 5.0]), crs="EPSG:3857")
    release = original.assign(geometry=gpd.points_from_xy([1.5, 20.5, 39.0], [0.5, 2.0, 4.0],
                                                          crs="EPSG:3857"))
    _, plan = geosynth.evaluation.plan_evaluation(original, [release], ["a"], linked=False)
    assert plan.window[0] == pytest.approx(-7.25 - 0.1 * 47.25)
    assert "-11.975" not in repr(plan) and "window" not in repr(plan)


def test_evaluate_compares_the_continuous_columns(scenario):
    # The evaluation said nothing of them: a correlation of 0.3 among the records that came
    # out at 0.9 in the releases went unseen behind a coverage of 0.79.
    from tests.synth.helpers import stub_fit

    data, grid = scenario
    original = data.data.assign(w=2.0 * data.data["z"] + 1.0)
    counts = geosynth.prepare(original, grid, ATTRIBUTES, continuous=["z", "w"])
    fit = stub_fit(counts, np.ones((1, 2, grid.n_cells, counts.n_combos)))
    releases = [geosynth.to_public(r, seed=k)
                for k, r in enumerate(geosynth.synthesize(fit, original, m=2, seed=1))]
    result = evaluate(original, releases, grid, ATTRIBUTES, linked=False)
    table = result.tables["continuous"]
    assert list(table.index) == ["mean[z]", "sd[z]", "mean[w]", "sd[w]", "corr[z,w]"]
    assert table.loc["corr[z,w]", "original"] == pytest.approx(1.0)
    assert table.loc["mean[w]", "original"] == pytest.approx(original["w"].mean())
    assert "### continuous" in result.to_markdown()
    one = evaluate(original, releases[:1], grid, ATTRIBUTES, linked=False)
    assert "continuous" not in one.tables  # two releases to combine


def test_columns_not_finite_numbers_on_every_side_are_not_compared(scenario):
    # A numeric release column with text (or a missing value) in the original raised a raw
    # ValueError from the comparison, an auxiliary table.
    data, grid = scenario
    releases = [geosynth.to_public(r, seed=0)
                for r in geosynth.naive_synthesize(data.data, grid, m=2, seed=2)]
    for spoilt in (data.data.assign(z=data.data["z"].astype(str)),
                   data.data.assign(z=data.data["z"].where(data.data.index != data.data.index[0]))):
        result = evaluate(spoilt, releases, grid, ATTRIBUTES, linked=False)
        assert "continuous" not in result.tables
