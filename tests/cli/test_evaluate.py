import os
import re
import stat

import geopandas as gpd
import numpy as np
import pyogrio
import pytest

import geosynth
from geosynth import io
from geosynth.synth.release import record_columns
from tests.cli.helpers import assert_refused, run
from tests.io.helpers import (
    CRS,
    XMIN,
    YMIN,
    metadata_value,
    public_like,
    set_metadata,
    sql,
    with_record,
)


def test_evaluate_prints_tables_and_writes_report(inputs, written_release, tmp_path):
    report = tmp_path / "evaluation.md"
    result = run("evaluate", inputs["gpkg"], written_release, "--attributes", "y,x1",
                 "--outcome", "y", "--seed", 1, "--report", report)
    assert result.exit_code == 0, result.output
    assert "120 original records; 2 releases" in result.output
    for table in ("distance risk", "pattern", "coverage"):
        assert table in result.output
    assert "identification risk" not in result.output  # public releases are not linkable
    text = report.read_text()
    assert "### distance risk" in text and "`y`, `x1`; outcome `y`" in text
    assert stat.S_IMODE(os.stat(report).st_mode) == 0o600  # internal: confidential summaries


def test_evaluate_report_in_an_unwritable_folder_fails_before_reading(inputs, written_release,
                                                                      tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = run("evaluate", inputs["gpkg"], written_release, "--attributes", "y",
                 "--report", blocker / "evaluation.md")
    assert result.exit_code == 2
    assert "--report" in result.output and "original records" not in result.output


def test_evaluate_takes_attributes_from_the_release_metadata(inputs, written_release):
    result = run("evaluate", inputs["gpkg"], written_release)
    assert result.exit_code == 0, result.output
    assert "x2" in result.output.split("distance risk")[1].splitlines()[2]


def test_evaluate_reprojects_an_original_in_another_crs(inputs, written_release):
    result = run("evaluate", inputs["wgs84"], written_release, "--attributes", "y")
    assert result.exit_code == 0, result.output
    assert "Reprojecting wgs84.gpkg from EPSG:4326" in result.output


def test_evaluate_csv_original(inputs, written_release):
    result = run("evaluate", inputs["csv"], written_release, "--x", "east", "--y", "north",
                 "--crs", "EPSG:31983", "--attributes", "x1")
    assert result.exit_code == 0, result.output


def test_evaluate_missing_column(inputs, written_release):
    result = run("evaluate", inputs["gpkg"], written_release, "--attributes", "y,age")
    assert_refused(result, "--attributes", "'age'")


def test_evaluate_missing_outcome(inputs, written_release):
    result = run("evaluate", inputs["gpkg"], written_release, "--outcome", "sick")
    assert_refused(result, "--outcome", "'sick'")


def test_evaluate_refuses_to_print_the_original_values(inputs, written_release):
    # z is continuous: a table by z has a row per record with its original value.
    result = run("evaluate", inputs["gpkg"], written_release, "--attributes", "y,z")
    assert_refused(result, "--attributes 'z' of points.gpkg has 120 levels among 120 records",
                   "would print the original values")
    z = run("evaluate", inputs["gpkg"], written_release, "--outcome", "z")
    assert_refused(z, "outcome column 'z'", "must be binary", "other distinct value(s)")
    assert "found values" not in z.output and "e+" not in z.output and ".0" not in z.output


def test_evaluate_refuses_an_original_sharing_no_combination(inputs, written_release, tmp_path):
    # The same records with x1 as text: every table came out NaN without a word.
    text = gpd.read_file(inputs["gpkg"])
    text["x1"] = text["x1"].astype(str)
    text.to_file(tmp_path / "text.gpkg", engine="pyogrio")
    result = run("evaluate", tmp_path / "text.gpkg", written_release, "--attributes", "y,x1")
    assert_refused(result, "share no combination of --attributes y, x1",
                   "the text '1' is not the number 1")
    half = gpd.read_file(inputs["gpkg"]).iloc[:60]
    half.to_file(tmp_path / "half.gpkg", engine="pyogrio")
    result = run("evaluate", tmp_path / "half.gpkg", written_release, "--attributes", "y")
    assert result.exit_code == 0, result.output
    assert "Warning: half.gpkg has 60 records but the releases were made from 120" in \
        result.output


def test_evaluate_file_that_is_not_a_release(inputs):
    result = run("evaluate", inputs["gpkg"], inputs["gpkg"])
    assert_refused(result, "not a geosynth release")


def test_evaluate_missing_file(inputs, tmp_path):
    result = run("evaluate", inputs["gpkg"], tmp_path / "none.gpkg")
    assert_refused(result, "none.gpkg", "does not exist")


def test_evaluate_names_the_argument_of_a_pipe(inputs, written_release, tmp_path):
    # The message named the Python parameter: "path '.../pipe.gpkg' is not a regular file".
    pipe = tmp_path / "pipe.gpkg"
    os.mkfifo(pipe)
    result = run("evaluate", pipe, written_release)
    assert_refused(result, f"ORIGINAL {str(pipe)!r} is not a regular file (a pipe or a device)")
    result = run("evaluate", inputs["gpkg"], pipe)
    assert_refused(result, f"RELEASE {str(pipe)!r} is not a regular file (a pipe or a device)")


def test_evaluate_refuses_existing_report(inputs, written_release, tmp_path):
    report = tmp_path / "evaluation.md"
    report.write_text("keep me")
    result = run("evaluate", inputs["gpkg"], written_release, "--report", report)
    assert_refused(result, "--report", "--overwrite")
    assert report.read_text() == "keep me"
    result = run("evaluate", inputs["gpkg"], written_release, "--report", report, "--overwrite")
    assert result.exit_code == 0, result.output
    assert "distance risk" in report.read_text()


# ---------------------------------------------------------------------- release files that are
# incomplete, edited or foreign (checked by io.read_release before any measure)
def _write_pair(folder, columns, **release_options):
    """40 original points with ``columns`` and a release of 2 layers of the same square."""
    rng = np.random.default_rng(3)
    xy = rng.uniform([XMIN, YMIN], [XMIN + 2000, YMIN + 2000], size=(40, 2))
    original = gpd.GeoDataFrame(columns, geometry=gpd.points_from_xy(xy[:, 0], xy[:, 1]),
                                crs=CRS)
    original_path = folder / "original.gpkg"
    original.to_file(original_path, engine="pyogrio")
    releases = []
    for _ in range(2):
        moved = xy + rng.normal(0, 50, size=xy.shape)
        order = rng.permutation(40)
        release = gpd.GeoDataFrame(
            {name: values[order] for name, values in columns.items()},
            geometry=gpd.points_from_xy(moved[:, 0], moved[:, 1]), crs=CRS)
        record_columns(release)  # a stand-in for a synthesizer's release, made by hand
        releases.append(geosynth.to_public(release, seed=rng))
    release_path = folder / "release.gpkg"
    io.write_release(release_path, releases, **release_options)
    return original_path, release_path


@pytest.fixture
def small_pair(tmp_path):
    """An original of 40 points with a text attribute and a release of the same square."""
    levels = np.array(["a\x1b[2J", "b\x9b1m"])[np.arange(40) % 2]
    return _write_pair(tmp_path, {"kind": levels}, seeds={"synthesize": 5})


def test_evaluate_prints_no_control_characters(small_pair):
    original, release = small_pair
    result = run("evaluate", original, release, "--attributes", "kind")
    assert result.exit_code == 0, result.output
    assert "distance risk" in result.output
    assert "a?[2J" in result.output and not set("\x1b\x9b") & set(result.output)


def test_evaluate_with_its_arguments_swapped_is_told_the_order(small_pair):
    # The release was read as the points, and the advice was to pass --layer.
    original, release = small_pair
    result = run("evaluate", release, original, "--attributes", "kind")
    assert_refused(result, "ORIGINAL", "is a geosynth release",
                   "the order is 'geosynth evaluate ORIGINAL RELEASE'")
    assert "--layer" not in result.output


def test_evaluate_refuses_an_incomplete_release(small_pair):
    original, release = small_pair
    sql(release, "DELETE FROM metadata WHERE key = 'complete'")
    assert_refused(run("evaluate", original, release, "--attributes", "kind"),
                   "is incomplete or not a geosynth release", "no 'complete' entry")


def test_evaluate_refuses_a_stray_release_layer(small_pair):
    original, release = small_pair
    pyogrio.write_dataframe(public_like(3), release, layer="synthetic_01")
    assert_refused(run("evaluate", original, release, "--attributes", "kind"),
                   "['synthetic_01']", "only synthetic_1 .. synthetic_2 are releases")


def test_evaluate_refuses_attributes_recorded_as_text(inputs, written_release, tmp_path):
    copy = tmp_path / "copy.gpkg"
    copy.write_bytes(written_release.read_bytes())
    model = metadata_value(copy, "model")
    set_metadata(copy, "model", {**model, "attributes": "yx1"})
    assert_refused(run("evaluate", inputs["gpkg"], copy),
                   "'model.attributes' must be a list, got text")


def test_evaluate_refuses_an_audit_file_of_another_release(small_pair, tmp_path):
    original, release = small_pair
    other = tmp_path / "other.gpkg"
    io.write_release(other, [public_like(5)], seeds={"synthesize": 6})
    io.audit_path(release).write_bytes(io.audit_path(other).read_bytes())
    assert_refused(run("evaluate", original, release, "--attributes", "kind"),
                   "does not belong to this release")


def test_evaluate_refuses_an_empty_release(small_pair, tmp_path):
    original, _ = small_pair
    empty = tmp_path / "empty.gpkg"
    io.write_release(empty, [public_like(5, kind=["a"] * 5), public_like(0, kind=[])])
    assert_refused(run("evaluate", original, empty, "--attributes", "kind"),
                   "synthetic_2 has no records, so there is nothing to compare")


# ---------------------------------------------------------------------- a wrong CRS, an --outcome
# the coverage table cannot use, layers that do not match
def test_evaluate_refuses_an_original_declared_in_a_wrong_projected_crs(inputs, written_release):
    # Metres of EPSG:31983 declared as UTM 33N were reprojected and measured: distances of
    # 11,000 km, a risk table that looked perfectly safe (exit 0).
    result = run("evaluate", inputs["csv"], written_release, "--x", "east", "--y", "north",
                 "--crs", "EPSG:32633", "--attributes", "y")
    assert_refused(result, "original and the releases do not overlap",
                   "the likely cause is a wrong CRS of the original points (--crs)")
    assert "distance risk" not in result.output and ".crs" not in result.output


def test_evaluate_blames_the_crs_for_metres_declared_as_degrees(inputs, written_release):
    # It said "original has 120 points with NaN or infinite coordinates; drop or fix them".
    result = run("evaluate", inputs["csv"], written_release, "--x", "east", "--y", "north",
                 "--crs", "EPSG:4326", "--attributes", "y")
    assert_refused(result, "points.csv: its points lie outside the range of degrees",
                   "of EPSG:4326, the crs given: their numbers are another CRS's (e.g. metres); "
                   "give --crs the CRS the x and y columns are in")
    assert "NaN" not in result.output
    error = result.output[result.output.index("Error:"):]
    assert not re.search(r"\d{4,}", error.replace("4326", ""))  # no coordinate nor extreme


def test_evaluate_outcome_of_a_one_layer_release_is_refused_in_cli_terms(inputs, tmp_path):
    original = io.read_points(inputs["gpkg"])
    release = tmp_path / "one.gpkg"
    stand_in = geosynth.to_public(original, seed=1)  # a release made by hand, recorded
    record_columns(stand_in)
    io.write_release(release, [stand_in])
    result = run("evaluate", inputs["gpkg"], release, "--attributes", "y", "--outcome", "y")
    assert_refused(result, "--outcome needs at least 2 releases", "one.gpkg holds 1",
                   "omit --outcome, or evaluate a release written with --m 2 or more")
    assert "GeoDataFrame" not in result.output  # Python advice: "pass the list of m ..."
    assert run("evaluate", inputs["gpkg"], release, "--attributes", "y").exit_code == 0


def test_evaluate_outcome_with_fewer_records_than_a_rectangle_holds(inputs, written_release,
                                                                    tmp_path):
    small = tmp_path / "small.gpkg"
    io.read_points(inputs["gpkg"]).iloc[:19].to_file(small, engine="pyogrio")
    result = run("evaluate", small, written_release, "--attributes", "y", "--outcome", "y")
    assert_refused(result, "--outcome needs at least 20 original records (every random "
                           "rectangle of the coverage table holds 20 of them), but small.gpkg "
                           "has 19; omit --outcome")
    assert "min_points" not in result.output and "quadrants" not in result.output


def test_evaluate_refuses_a_release_file_whose_layers_differ_in_type(inputs, written_release,
                                                                     tmp_path):
    # One layer rewritten with x1 as text: evaluate used half of the data and exited 0.
    copy = tmp_path / "copy.gpkg"
    copy.write_bytes(written_release.read_bytes())
    layer = pyogrio.read_dataframe(copy, layer="synthetic_2")
    pyogrio.write_dataframe(layer.assign(x1=layer["x1"].astype(str)), copy, layer="synthetic_2")
    assert_refused(run("evaluate", inputs["gpkg"], copy, "--attributes", "y,x1"),
                   "column 'x1' is numeric in 'synthetic_1' but text in 'synthetic_2'",
                   "the file was edited after it was written")


def test_evaluate_refuses_a_layer_sharing_no_combination(small_pair, tmp_path):
    # Only the union of the layers was compared: a layer of other levels was averaged in as
    # "no synthetic record" of every combination.
    original, release = small_pair
    layers = io.read_release(release).releases
    other = tmp_path / "other.gpkg"
    io.write_release(other, [layers[0], with_record(layers[1].assign(kind="c"))])
    assert_refused(run("evaluate", original, other, "--attributes", "kind"),
                   "original.gpkg and layer synthetic_2 of the release share no combination "
                   "of --attributes kind")
    assert run("evaluate", original, release, "--attributes", "kind").exit_code == 0


# ---------------------------------------------------------------------- values the measures cannot
# use, named by option and file (the library named Python objects and gave pandas advice)
def _rewrite_layers(path, change):
    for number in (1, 2):
        layer = pyogrio.read_dataframe(path, layer=f"synthetic_{number}")
        pyogrio.write_dataframe(change(layer), path, layer=f"synthetic_{number}")


def test_evaluate_names_the_option_of_missing_values_and_locations(small_pair, tmp_path):
    # It said "attribute column 'kind' of original has 1 missing values" and advised
    # "original[~(original.geometry.isna | original.geometry.is_empty)]".
    original, release = small_pair
    frame = gpd.read_file(original)
    frame.loc[5, "kind"] = None
    frame.to_file(tmp_path / "gap.gpkg", engine="pyogrio")
    result = run("evaluate", tmp_path / "gap.gpkg", release, "--attributes", "kind")
    assert_refused(result, "--attributes 'kind': gap.gpkg has 1 of 40 records without a value")
    frame = gpd.read_file(original)
    frame.loc[3, "geometry"] = None
    frame.to_file(tmp_path / "nowhere.gpkg", engine="pyogrio")
    result = run("evaluate", tmp_path / "nowhere.gpkg", release, "--attributes", "kind")
    assert_refused(result, "nowhere.gpkg: 1 of 40 records have no location")
    assert "original[" not in result.output and "geometry.isna" not in result.output


def test_evaluate_names_the_option_of_an_outcome_of_the_release(inputs, written_release,
                                                                tmp_path):
    result = run("evaluate", inputs["gpkg"], written_release, "--attributes", "y,x1",
                 "--outcome", "x1")
    assert_refused(result, "--outcome: the outcome column 'x1' of points.gpkg must be binary",
                   "1 other distinct value(s)", "recode it in the file")
    assert "gdf[" not in result.output and "astype" not in result.output
    # A release whose outcome is not binary holds levels its model did not fit: it was edited,
    # and the file is refused before its outcome is read.
    copy = tmp_path / "copy.gpkg"
    copy.write_bytes(written_release.read_bytes())
    _rewrite_layers(copy, lambda layer: layer.assign(y=layer["y"] * 7 + 3))
    result = run("evaluate", inputs["gpkg"], copy, "--attributes", "x1", "--outcome", "y")
    assert_refused(result, "copy.gpkg: layer synthetic_1 has", "that its model did not fit",
                   "the file was edited")
    assert "releases[0]" not in result.output


@pytest.mark.parametrize("name", ["", "   ", "new/", "new/.."])
def test_evaluate_refuses_a_blank_or_folder_report_name(inputs, written_release, tmp_path,
                                                       monkeypatch, name):
    # "new/" wrote the report as a file "new", "   " as a file named by spaces.
    monkeypatch.chdir(tmp_path)
    result = run("evaluate", inputs["gpkg"], written_release, "--attributes", "y",
                 "--report", name)
    assert_refused(result, "--report", "give a file name")
    assert "original records" not in result.output and list(tmp_path.iterdir()) == []


def test_evaluate_refuses_a_release_without_crs_or_in_degrees(small_pair, tmp_path):
    # Without a CRS the advice was "pass --crs for the original points", which --crs (the CRS
    # of ORIGINAL, which has one) cannot follow; in degrees the original was reprojected to
    # them and refused with Python advice (gdf.to_crs(gdf.estimate_utm_crs)).
    original, release = small_pair
    layers = io.read_release(release).releases
    bare = tmp_path / "bare.gpkg"
    io.write_release(bare, [with_record(layer.set_crs(None, allow_override=True))
                            for layer in layers])
    for args in ([], ["--crs", CRS]):
        result = run("evaluate", original, bare, "--attributes", "kind", *args)
        assert_refused(result, "RELEASE has no CRS", "evaluate a release written with its CRS")
        assert "pass --crs" not in result.output
    degrees = tmp_path / "degrees.gpkg"
    io.write_release(degrees, [with_record(layer.to_crs(4326)) for layer in layers])
    result = run("evaluate", original, degrees, "--attributes", "kind")
    assert_refused(result, "RELEASE is in the geographic CRS EPSG:4326 (degrees)")
    assert "to_crs" not in result.output and "Reprojecting" not in result.output


def test_evaluate_help_names_the_crs_refusals():
    text = " ".join(run("evaluate", "--help").output.split())
    assert "checked against the release schema before any measure" in text
    assert "no CRS or a geographic one (degrees), is refused" in text


# ---------------------------------------------------------------------- what is printed: no lone
# record's distance; no exact count of the original of a differentially private release
def _pair(folder, metadata=None):
    """40 original points (one the only record of kind 'c') and a release of 2 layers."""
    kinds = np.array(["a", "b"])[np.arange(40) % 2]
    kinds[0] = "c"
    outcome = (np.arange(40) % 3 == 0).astype(int)
    return _write_pair(folder, {"kind": kinds, "y": outcome}, metadata=metadata)


def test_evaluate_shows_no_distance_of_a_combination_of_one_record(tmp_path):
    # Kind 'c' has one original record: its distances (printed and in the report) were that
    # person's distance to the published synthetic points.
    original, release = _pair(tmp_path)
    report = tmp_path / "report.md"
    result = run("evaluate", original, release, "--attributes", "kind", "--report", report)
    assert result.exit_code == 0, result.output
    evaluation = geosynth.evaluate(io.read_points(original), io.read_release(release).releases,
                                   None, ["kind"], linked=False)
    lone = evaluation.tables["distance_risk"].loc["c"]
    assert lone["n_original"] == 1
    text = report.read_text()
    for value in (lone["min_distance"], lone["mean_distance"]):
        assert f"{value:,.3f}" not in result.output and f"{value:.4f}" not in text
    for shown in (result.output, text):
        assert ("Not shown (NaN): min_distance, mean_distance, worst_min_distance and "
                "worst_mean_distance of 1 combination(s)") in shown


def test_evaluate_of_a_dp_release_prints_no_exact_count_of_the_original(tmp_path):
    # The number of original records and the n_original columns are what epsilon protects:
    # they were printed (terminal output gets pasted) and the report did not say so.
    original, release = _pair(tmp_path, metadata={"epsilon": 1.0, "method": "paiva-dp"})
    report = tmp_path / "report.md"
    result = run("evaluate", original, release, "--attributes", "kind", "--report", report)
    assert result.exit_code == 0, result.output
    tables = result.output.split("distance risk:")[1]
    assert "40 original records" not in result.output and "n_original" not in tables
    assert "the exact counts of the original records tell what the confidential data hold, " \
           "which epsilon protects (the internal --report has them)" in result.output
    text = report.read_text()
    assert "n_original" in text and "Confidential: the release is differentially private, " \
                                   "and the number of original records" in text
    small = tmp_path / "small.gpkg"
    io.read_points(original).iloc[:19].to_file(small, engine="pyogrio")
    refused = run("evaluate", small, release, "--attributes", "kind", "--outcome", "y")
    assert_refused(refused, "--outcome needs at least 20 original records", "small.gpkg has "
                                                                             "fewer; omit")
    assert "19" not in refused.output


def test_evaluate_of_a_dp_release_prints_only_the_means_over_combinations(tmp_path):
    # The rows per combination are the combinations of the original records: kind 'c' (one
    # person) was listed, its NaN distances told it held fewer than 2 records, and the note
    # counted such combinations. Only the mean rows (as shown_tables computes them) remain.
    original, release = _pair(tmp_path, metadata={"epsilon": 1.0, "method": "paiva-dp"})
    result = run("evaluate", original, release, "--attributes", "kind")
    assert result.exit_code == 0, result.output
    evaluation = geosynth.evaluate(io.read_points(original), io.read_release(release).releases,
                                   None, ["kind"], linked=False)
    shown = geosynth.evaluation.shown_tables(evaluation.tables)
    body = result.output.split("distance risk:")[1]
    lines = [line.split() for line in body.splitlines() if line.strip()]
    assert not any(row[0] in ("a", "b", "c", "kind") for row in lines)
    assert "Not shown" not in body and "combination(s)" not in body
    for name, column in (("distance_risk", "mean_distance"), ("pattern", "sup_l_difference")):
        assert f"{shown[name][column].iloc[-1]:,.3f}" in body
        for value in shown[name][column].iloc[:-1].dropna():
            assert f"{value:,.3f}" not in body
    (tmp_path / "plain").mkdir()
    plain = run("evaluate", *_pair(tmp_path / "plain"), "--attributes", "kind")
    assert "\nc " in plain.output  # without epsilon the rows per combination are printed


def test_evaluate_of_a_dp_release_combines_by_the_fully_synthetic_rules(tmp_path):
    # Every value of a DP release is synthetic; the partial rules' intervals were too narrow.
    original, release = _pair(tmp_path, metadata={"epsilon": 1.0, "method": "paiva-dp"})
    result = run("evaluate", original, release, "--attributes", "kind", "--outcome", "y",
                 "--seed", 1)
    assert result.exit_code == 0, result.output
    row = result.output.split("coverage:")[1].splitlines()[2].split()
    points, layers = io.read_points(original), io.read_release(release).releases
    bare = [layer.copy() for layer in layers]
    for layer in bare:  # without the file's record: the partial rules are not refused
        layer.attrs = {}
    overlap = {rules: geosynth.metrics.quadrant_coverage(points, bare, "y", seed=1,
                                                         rules=rules).mean_overlap
               for rules in ("full", "partial")}
    # Read from the file, the releases carry its record: the full rules by default.
    assert geosynth.metrics.quadrant_coverage(points, layers, "y", seed=1).mean_overlap == \
        overlap["full"]
    assert f"{overlap['full']:,.3f}" != f"{overlap['partial']:,.3f}"
    assert row[1] == f"{overlap['full']:,.3f}"


def test_evaluate_of_a_dp_release_refuses_without_counting_the_original(tmp_path):
    # The refusals of identifying --attributes ("40 levels among 40 records") and of metres
    # declared as degrees ("40 of 40 points") gave the exact number of original records.
    kinds = np.array(["a", "b"])[np.arange(40) % 2]
    original, release = _write_pair(tmp_path, {"kind": kinds, "z": np.arange(40) * 1.5},
                                    metadata={"epsilon": 1.0, "method": "paiva-dp"})
    identifying = run("evaluate", original, release, "--attributes", "kind,z")
    assert_refused(identifying, "--attributes 'z' of original.gpkg has nearly one level per "
                                "record", "would print the original values")
    degrees = tmp_path / "degrees.gpkg"
    io.read_points(original).set_crs(4326, allow_override=True).to_file(degrees,
                                                                        engine="pyogrio")
    wrong = run("evaluate", degrees, release, "--attributes", "kind")
    assert_refused(wrong, "degrees.gpkg: its points lie outside the range of degrees",
                   "the CRS the file declares")
    for result in (identifying, wrong):
        assert not re.search(r"\b40\b", result.output)
    (tmp_path / "plain").mkdir()  # without epsilon the counts are shown
    plain = _write_pair(tmp_path / "plain", {"kind": kinds, "z": np.arange(40) * 1.5},
                        metadata={"method": "paiva"})
    assert "40 levels among 40 records" in run("evaluate", *plain, "--attributes",
                                               "kind,z").output


def test_a_seed_without_an_outcome_is_refused(inputs, written_release):
    # It draws the coverage's rectangles only: without --outcome it was accepted and did nothing.
    result = run("evaluate", inputs["gpkg"], written_release, "--attributes", "y", "--seed", 5)
    assert_refused(result, "--seed fixes the random rectangles", "add --outcome COLUMN or drop "
                                                                  "--seed")
