import hashlib
import json
import os
import re
import stat
import subprocess
import sys
import warnings
from pathlib import Path

import click
import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import shapely
from click.testing import CliRunner

import geosynth
import geosynth.lattice
from geosynth import io
from geosynth.cli import cli
from geosynth.errors import PrivacyLeakWarning
from tests.cli.helpers import FAST, assert_refused, run

GPKG_ARGS = ["--attributes", "y,x1,x2", "--grid", "4x4"]


def test_release_from_geopackage_writes_release_map_and_report(inputs, tmp_path):
    out = tmp_path / "release.gpkg"
    result = run("release", inputs["gpkg"], *GPKG_ARGS, "--continuous", "z",
                 "--beta-prior", "normal", "--seed", 7, *FAST, "--out", out,
                 "--map", tmp_path / "review.html", "--report", tmp_path / "report.md",
                 "--outcome", "y", "--include-intensity")
    assert result.exit_code == 0, result.output
    assert "120 records" in result.output and "4x4 cells" in result.output

    written = io.read_release(out)
    assert written.m == 2
    assert [len(r) for r in written.releases] == [120, 120]
    assert {"y", "x1", "x2", "z"} <= set(written.releases[0].columns)
    assert written.metadata["method"] == "paiva"
    assert written.metadata["model"]["beta_prior"] == "normal"
    assert any(c.startswith("lambda_") for c in written.grid.columns)
    audit = json.loads(io.audit_path(out).read_text())
    assert audit["seeds"]["seed"] == 7 and {"fit", "synthesize"} <= set(audit["seeds"])
    assert "seed" not in json.dumps(written.metadata).lower()
    # How it was made, for its owner: the inputs by SHA-256 and the options.
    provenance = audit["provenance"]
    assert provenance["inputs"]["INPUT"] == {str(inputs["gpkg"].absolute()): hashlib.sha256(
        inputs["gpkg"].read_bytes()).hexdigest()}
    assert provenance["options"]["continuous"] == ["z"] and provenance["options"]["seed"] == 7
    assert provenance["command"].endswith("release")

    html = (tmp_path / "review.html").read_text()
    assert "Release 1" in html and "Original (internal)" in html
    report = (tmp_path / "report.md").read_text()
    for section in ("## Fit summary", "r_hat", "### distance risk", "### coverage",
                    "### identification risk"):
        assert section in report


def test_release_from_csv_with_cell_size_is_reproducible_from_the_audit_seed(inputs, tmp_path):
    args = ["release", inputs["csv"], "--x", "east", "--y", "north", "--crs", "EPSG:31983",
            "--attributes", "y,x1", "--cell-size", 2500, *FAST]
    first = run(*args, "--out", tmp_path / "a.gpkg")
    assert first.exit_code == 0, first.output
    assert "4x4 cells of 2,500 x 2,500 m" in first.output
    seed = json.loads(io.audit_path(tmp_path / "a.gpkg").read_text())["seeds"]["seed"]

    again = run(*args, "--seed", seed, "--out", tmp_path / "b.gpkg")
    assert again.exit_code == 0, again.output
    a, b = io.read_release(tmp_path / "a.gpkg"), io.read_release(tmp_path / "b.gpkg")
    for ra, rb in zip(a.releases, b.releases, strict=True):
        pd.testing.assert_frame_equal(pd.DataFrame(ra), pd.DataFrame(rb))


def whole_numbers(output):
    """Numbers standing alone in `output`: not digits of "R-hat max 1.120" or of a path."""
    return {int(n) for n in re.findall(r"(?<![\w./-])\d+(?![\w.])", output)}


def test_dp_release_records_the_ledger(inputs, tmp_path):
    out = tmp_path / "dp.gpkg"
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        result = run("release", inputs["gpkg"], *GPKG_ARGS, "--region", inputs["region"],
                     "--epsilon", 1.5, "--levels-file", inputs["levels"], *FAST,
                     "--out", out, "--report", tmp_path / "dp.md")
        assert result.exit_code == 0, result.output
        metadata = io.read_release(out).metadata
    # The exact number of records is what the DP size protects: never on the terminal.
    assert "Read " in result.output and 120 not in whole_numbers(result.output)
    assert "number of records is not shown" in result.output
    assert "120 records" in (tmp_path / "dp.md").read_text()  # the internal report has it
    assert "NOT differentially private" not in result.output
    assert "levels are taken from the confidential data" not in result.output
    assert "Seeds:" not in result.output
    audit = json.loads(io.audit_path(out).read_text())  # how it was made, never a seed
    assert audit["seeds"] is None and audit["provenance"]["options"]["epsilon"] == 1.5
    assert set(audit["provenance"]["inputs"]) == {"INPUT", "--region", "--levels-file"}
    assert metadata["epsilon"] == 1.5 and metadata["noise"] == "os-entropy"
    assert metadata["ledger"]["spent"]["epsilon"] == pytest.approx(1.5)
    assert metadata["lattice"]["is_clipped"] is True
    report = (tmp_path / "dp.md").read_text()
    assert "Privacy ledger" in report
    assert "epsilon = 1.5, noise from fresh OS entropy" in report


def test_a_dp_release_of_a_csv_file_does_not_hang_on_one_record(inputs, tmp_path):
    # pandas typed each CSV column from its values: one record x1 = "unknown" made the column
    # text, and the declared levels [1, 2] then refused the release. Made or refused by one
    # record is a disclosure (epsilon infinite for that event); now both are made.
    table = pd.read_csv(inputs["csv"])
    extra = table.iloc[:1].assign(x1="unknown")
    with_extra = tmp_path / "with_extra.csv"
    pd.concat([table, extra]).to_csv(with_extra, index=False)
    for path in (inputs["csv"], with_extra):
        out = tmp_path / f"{path.stem}.gpkg"
        # the report's evaluation and --outcome read the kept records as the declared levels
        # (a text y of "0" and "1" was refused as not binary, after the noisy counts)
        result = run("release", path, "--x", "east", "--y", "north", "--crs", "EPSG:31983",
                     *GPKG_ARGS, "--region", inputs["region"], "--epsilon", 1,
                     "--levels-file", inputs["levels"], *FAST, "--out", out,
                     "--report", tmp_path / f"{path.stem}.md", "--outcome", "y")
        assert result.exit_code == 0, result.output
        assert set(io.read_release(out).releases[0]["x1"]) <= {1, 2}
        assert "### coverage" in (tmp_path / f"{path.stem}.md").read_text()


def test_dp_release_refuses_a_seed_before_reading(inputs, tmp_path):
    # --seed was taken with warnings: a file stating epsilon 1.5 for noise that anyone
    # guessing --seed 3 could replay and subtract, and the seed in the audit file beside it.
    result = run("release", inputs["gpkg"], *GPKG_ARGS, "--region", inputs["region"],
                 "--epsilon", 1.5, "--levels-file", inputs["levels"], "--seed", 3, *FAST,
                 "--out", tmp_path / "dp.gpkg")
    assert_refused(result, "--seed cannot be used with --epsilon", "fresh OS entropy",
                   "drop --seed")
    assert "Read " not in result.output
    assert list(tmp_path.iterdir()) == []


def test_dp_release_without_levels_file_is_refused(inputs, tmp_path):
    # Levels from the data would be checked against the data: accepted or refused on values.
    result = run("release", inputs["gpkg"], "--attributes", "y", "--grid", "3x3",
                 "--region", inputs["region"], "--epsilon", 1, *FAST,
                 "--out", tmp_path / "dp.gpkg")
    assert_refused(result, "--epsilon needs --levels-file")
    assert list(tmp_path.iterdir()) == []


def test_levels_declared_for_no_column_of_the_run_are_named(inputs, tmp_path):
    # A column declared in --levels-file and left out of --attributes (or mistyped there) was
    # read and dropped without a word.
    levels = tmp_path / "levels.json"
    levels.write_text(json.dumps({"y": [0, 1], "x1": [1, 2], "zip": ["a", "b"]}))
    result = run("release", inputs["gpkg"], "--attributes", "y,x1", "--grid", "3x3",
                 "--region", inputs["region"], "--epsilon", 1, "--levels-file", levels, *FAST,
                 "--out", tmp_path / "dp.gpkg")
    assert result.exit_code == 0, result.output
    assert ("Warning: --levels-file levels.json declares the levels of 'zip', which neither "
            "--attributes nor --outcome names; they are not used") in result.output
    used = run("release", inputs["gpkg"], "--attributes", "y,x1,x2", "--grid", "3x3",
               "--region", inputs["region"], "--epsilon", 1, "--levels-file", inputs["levels"],
               *FAST, "--out", tmp_path / "dp2.gpkg")
    assert used.exit_code == 0 and "declares the levels of" not in used.output


def test_dp_release_drops_records_outside_the_declared_levels(inputs, tmp_path):
    # Refusing them would tell whether such a record is in the data: epsilon = infinity.
    levels = tmp_path / "levels.json"
    levels.write_text(json.dumps({"y": [0], "x1": [1, 2]}))
    result = run("release", inputs["gpkg"], "--attributes", "y,x1", "--grid", "3x3",
                 "--region", inputs["region"], "--epsilon", 1, "--levels-file", levels, *FAST,
                 "--out", tmp_path / "dp.gpkg", "--report", tmp_path / "dp.md")
    assert result.exit_code == 0, result.output
    assert set(io.read_release(tmp_path / "dp.gpkg").releases[0]["y"]) <= {0}
    # The warning counted the records given and dropped ("of the 120 given ... 54 with an
    # attribute value outside"): the number of records is what the DP size protects, and
    # terminal output gets pasted. The terminal says that some were; the report, how many.
    dropped = int((gpd.read_file(inputs["gpkg"])["y"] != 0).sum())
    assert "records outside the --levels-file levels or the lattice" in result.output
    assert "the internal --report has it" in result.output
    assert {120, dropped}.isdisjoint(whole_numbers(result.output)), result.output
    report = (tmp_path / "dp.md").read_text()
    assert f"{dropped} with an attribute value outside the declared levels" in report


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["missing.gpkg", *GPKG_ARGS], ["missing.gpkg", "does not exist"]),
        (["{gpkg}", "--attributes", "y,income", "--grid", "4x4"],
         ["--attributes", "income", "its columns are"]),
        (["{gpkg}", "--attributes", "y", "--grid", "4by4"], ["--grid", "ROWSxCOLS"]),
        (["{gpkg}", "--attributes", "y", "--grid", "0x4"], ["ROWSxCOLS"]),
        # refused by the lattice after the data were read
        (["{gpkg}", "--attributes", "y", "--cell-size", "1e300"],
         ["--cell-size", "1e+300 is not in the range"]),
        (["{gpkg}", "--attributes", "y", "--grid", "\u00b2x2"], ["ROWSxCOLS"]),  # "²".isdigit()
        (["{gpkg}", *GPKG_ARGS, "--chains", "100000000000"], ["--chains", "1<=x<=1024"]),
        (["{gpkg}", "--attributes", "y", "--hex-size", "1e300"],
         ["--hex-size", "1e+300 is not in the range"]),
        (["{gpkg}", "--attributes", "y", "--grid", "4x4", "--cell-size", 500],
         ["exactly one of --grid"]),
        (["{gpkg}", "--attributes", "y"], ["exactly one of --grid"]),
        (["{gpkg}", "--attributes", "y,,x1", "--grid", "4x4"], ["--attributes"]),
        (["{wgs84}", *GPKG_ARGS], ["geographic CRS EPSG:4326", "reproject"]),
        (["{csv}", *GPKG_ARGS], ["--x", "--y", "--crs"]),
        (["{gpkg}", *GPKG_ARGS, "--continuous", "z", "--region", "{region}", "--epsilon", 1],
         ["--epsilon", "--continuous"]),
        (["{gpkg}", *GPKG_ARGS, "--epsilon", 1], ["--epsilon needs --region"]),
        (["{gpkg}", *GPKG_ARGS, "--levels-file", "{levels}"], ["--levels-file", "--epsilon"]),
        (["{gpkg}", *GPKG_ARGS, "--region", "{gpkg}"], ["--region", "polygon"]),
        (["{gpkg}", *GPKG_ARGS, "--region", "{region}", "--epsilon", 1,
          "--levels-file", "{csv}"], ["--levels-file"]),
        # refused when parsed, not by the fit after the data were read
        (["{gpkg}", *GPKG_ARGS, "--region", "{region}", "--epsilon", "nan",
          "--levels-file", "{levels}"], ["--epsilon", "'nan' is not a finite number"]),
    ],
    ids=["missing-file", "missing-column", "bad-grid", "zero-grid", "huge-cell-size",
         "superscript-grid",
         "huge-chains", "huge-hexagon", "grid-and-cell-size",
         "no-lattice", "empty-attribute", "geographic-crs", "csv-without-xy",
         "epsilon-with-continuous", "epsilon-without-region", "levels-without-epsilon",
         "point-region", "bad-levels-file", "nan-epsilon"],
)
def test_bad_input_exits_2_with_a_message(inputs, tmp_path, args, fragments):
    args = [str(a).format(**inputs) for a in args]
    result = run("release", *args, *FAST, "--out", tmp_path / "out.gpkg")
    assert_refused(result, *fragments)
    assert list(tmp_path.iterdir()) == []


def test_the_cli_caps_options_as_the_library_does():
    from geosynth._validation import MAX_CHAINS as MODEL_MAX_CHAINS
    from geosynth._validation import MAX_RELEASES
    from geosynth.cli.demo import MAX_RECORDS as DEMO_MAX_RECORDS
    from geosynth.cli.options import MAX_CELLS as CLI_MAX_CELLS
    from geosynth.cli.options import MAX_CHAINS
    from geosynth.cli.options import MAX_MAX_RHAT as CLI_MAX_MAX_RHAT
    from geosynth.cli.options import MAX_RELEASES as CLI_MAX_RELEASES
    from geosynth.cli.options import MAX_SWEEPS as CLI_MAX_SWEEPS
    from geosynth.cli.options import MAX_TARGET_ESS as CLI_MAX_TARGET_ESS
    from geosynth.cli.options import MIN_MAX_RHAT as CLI_MIN_MAX_RHAT
    from geosynth.datasets import MAX_RECORDS
    from geosynth.metrics.utility import MAX_QUADRANTS
    from geosynth.model.fit import MAX_SWEEPS
    from geosynth.model.stopping import MAX_MAX_RHAT, MAX_TARGET_ESS, MIN_MAX_RHAT

    assert MAX_CHAINS == MODEL_MAX_CHAINS and CLI_MAX_RELEASES == MAX_RELEASES
    assert CLI_MAX_TARGET_ESS == MAX_TARGET_ESS
    assert CLI_MAX_CELLS == geosynth.lattice.MAX_CELLS  # --grid refused at parsing
    from geosynth.cli.options import MAX_EXTENT as CLI_MAX_EXTENT

    assert CLI_MAX_EXTENT == geosynth.lattice.MAX_EXTENT  # --cell-size, --cell-sizes at parsing
    assert CLI_MAX_SWEEPS == MAX_SWEEPS  # --iterations refused at parsing
    target = {(command, p.name): p.type.max for command in ("tune", "release")
              for p in cli.commands[command].params if p.name == "target_ess"}
    assert set(target.values()) == {MAX_TARGET_ESS}  # refused at parsing, before the data
    assert (CLI_MIN_MAX_RHAT, CLI_MAX_MAX_RHAT) == (MIN_MAX_RHAT, MAX_MAX_RHAT)
    from geosynth.cli import options
    from geosynth.model import stopping

    assert (options.DEFAULT_TARGET_ESS, options.DEFAULT_MAX_RHAT) == (
        stopping.DEFAULT_TARGET_ESS, stopping.DEFAULT_MAX_RHAT)
    rhat = {(command, p.type.min, p.type.max) for command in ("tune", "release")
            for p in cli.commands[command].params if p.name == "max_rhat"}
    assert rhat == {("tune", MIN_MAX_RHAT, MAX_MAX_RHAT), ("release", MIN_MAX_RHAT, MAX_MAX_RHAT)}
    caps = {(command, p.name): p.type.max for command in ("demo", "tune", "release")
            for p in cli.commands[command].params if isinstance(p.type, click.IntRange)}
    # the demo's own cap (its evaluation grows with n²) within the scenario's
    assert caps["demo", "n_records"] == DEMO_MAX_RECORDS <= MAX_RECORDS
    assert caps["tune", "n_quadrants"] == MAX_QUADRANTS
    assert caps["release", "m"] == caps["tune", "m"] == MAX_RELEASES


def test_iterations_in_superscript_digits_are_refused(inputs, tmp_path):
    # "²".isdigit() is True but int("²") raises: a traceback with exit status 1.
    result = run("release", inputs["gpkg"], *GPKG_ARGS, "--iterations", "\u00b2",
                 "--out", tmp_path / "out.gpkg")
    assert_refused(result, "--iterations", "'auto'")


def test_existing_outputs_are_refused_before_any_work(inputs, tmp_path):
    out, report = tmp_path / "release.gpkg", tmp_path / "report.md"
    out.write_bytes(b"an earlier release")
    before = out.stat().st_mtime_ns
    result = run("release", inputs["gpkg"], *GPKG_ARGS, *FAST, "--out", out,
                 "--report", report)
    assert_refused(result, "release.gpkg (--out)", "--overwrite")
    assert out.read_bytes() == b"an earlier release" and out.stat().st_mtime_ns == before
    assert not report.exists() and not io.audit_path(out).exists()

    (tmp_path / "map.html").write_text("old map")
    result = run("release", inputs["gpkg"], *GPKG_ARGS, *FAST, "--out", tmp_path / "new.gpkg",
                 "--map", tmp_path / "map.html")
    assert_refused(result, "map.html (--map)")
    assert not (tmp_path / "new.gpkg").exists()
    assert (tmp_path / "map.html").read_text() == "old map"


@pytest.mark.parametrize("option", ["--out", "--map", "--report"])
@pytest.mark.parametrize("name", ["new/", "   "])  # an existing folder: click names it
def test_output_names_that_are_folders_or_blank_are_refused(inputs, tmp_path, option, name):
    # Path("new/") is Path("new"): --out new/ wrote a GeoPackage named new (and new.audit.json)
    # beside the folder the user meant.
    outputs = {"--out": str(tmp_path / "r.gpkg"), option: f"{tmp_path}/{name}"}
    args = [arg for pair in outputs.items() for arg in pair]
    result = run("release", inputs["gpkg"], *GPKG_ARGS, *FAST, *args)
    assert_refused(result, option, "give a file name, not the folder or blank name")
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_overwrite_replaces_existing_outputs(inputs, tmp_path):
    out = tmp_path / "release.gpkg"
    out.write_bytes(b"an earlier release")
    result = run("release", inputs["gpkg"], *GPKG_ARGS, *FAST, "--out", out, "--overwrite")
    assert result.exit_code == 0, result.output
    assert io.read_release(out).m == 2


def test_same_file_for_two_outputs_is_refused(inputs, tmp_path):
    (tmp_path / "x.md").symlink_to(tmp_path / "x.gpkg")
    result = run("release", inputs["gpkg"], *GPKG_ARGS, "--out", tmp_path / "x.gpkg",
                 "--report", tmp_path / "x.md")
    assert_refused(result, "--out and --report name the same file")


@pytest.mark.parametrize(("option", "name"), [("--map", "r.gpkg-wal"), ("--map", "r.gpkg-shm"),
                                              ("--report", "int.tif.aux.xml"),
                                              ("--report", "int.tif.MSK")])
def test_an_output_named_as_another_s_sqlite_or_gdal_sidecar_is_refused_before_the_fit(
        inputs, tmp_path, option, name):
    # r.gpkg-wal was refused only by the final move into place, after the fit, blaming "a
    # program (such as QGIS)"; int.tif.aux.xml was written, then removed with the GeoTIFF's
    # stale sidecars ("Wrote int.tif.aux.xml (internal report)"). No such name has the suffix
    # of a map or a report.
    result = run("release", inputs["gpkg"], *GPKG_ARGS, "--grid", "4x4", *FAST,
                 "--out", tmp_path / "r.gpkg", "--intensity-tif", tmp_path / "int.tif",
                 option, tmp_path / name)
    assert_refused(result, f"Invalid value for '{option}'", f"{name}' does not end in")
    assert "Fitting" not in result.output and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("column", "row", "message", "advice"), [
    ("y", 5, "--attributes 'y': gap.gpkg has 1 of ", "dropna"),
    ("geometry", 3, "gap.gpkg: 1 of ", "geometry.isna"),
])
def test_missing_values_and_locations_are_refused_in_the_file_s_terms(inputs, tmp_path, column,
                                                                     row, message, advice):
    # release gave pandas advice ("e.g. gdf.dropna(subset=['y'])", and a garbled
    # "gap.gpkg[~(gdf.geometry.isna | ...)]"); tune and evaluate named the file and option.
    frame = gpd.read_file(inputs["gpkg"])
    frame.loc[row, column] = None
    frame.to_file(tmp_path / "gap.gpkg", engine="pyogrio")
    result = run("release", tmp_path / "gap.gpkg", *GPKG_ARGS, *FAST,
                 "--out", tmp_path / "out.gpkg")
    assert_refused(result, message, "in the file")
    assert advice not in result.output and not (tmp_path / "out.gpkg").exists()


def test_console_script_prints_no_traceback_unless_verbose(inputs, tmp_path):
    script = Path(sys.executable).with_name("geosynth")
    args = ["release", str(inputs["gpkg"]), "--attributes", "nope", "--grid", "4x4",
            "--out", str(tmp_path / "o.gpkg")]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    quiet = subprocess.run([str(script), *args], capture_output=True, text=True, env=env)
    assert quiet.returncode == 2
    assert quiet.stderr.startswith("Error: --attributes") and "Traceback" not in quiet.stderr
    verbose = subprocess.run([str(script), "-v", *args], capture_output=True, text=True, env=env)
    assert verbose.returncode == 2 and "Traceback" in verbose.stderr


def test_help_explains_bounds_and_dp_region():
    result = run("release", "--help")
    assert result.exit_code == 0
    text = " ".join(result.output.split())
    assert "depend on the confidential data" in text
    assert "requires a public --region" in text


def test_progress_bars_go_to_stderr_and_quiet_hides_them(inputs, tmp_path):
    args = ["release", str(inputs["gpkg"]), *GPKG_ARGS, *map(str, FAST),
            "--report", str(tmp_path / "r.md"), "--map", str(tmp_path / "m.html")]
    loud = CliRunner().invoke(cli, [*args, "--out", str(tmp_path / "a.gpkg")])
    assert loud.exit_code == 0, loud.output
    assert "chain 0" in loud.stderr and "chain 0" not in loud.stdout
    # The steps after the fit, which take minutes at a million records, say what they do.
    steps = ["Synthesizing 2 releases ...", "Drawing the review map", "Measuring disclosure "
             "risk and utility for --report ...", "Writing 2 releases to"]
    where = [loud.stderr.find(step) for step in steps]
    assert -1 not in where and where == sorted(where), loud.stderr
    quiet = CliRunner().invoke(cli, ["-q", *args, "--out", str(tmp_path / "b.gpkg"),
                                     "--overwrite"])
    assert quiet.exit_code == 0, quiet.output
    assert "chain 0" not in quiet.stderr
    assert not any(step in quiet.stderr for step in steps)


def test_points_in_excluded_areas_are_refused_or_dropped(inputs, tmp_path):
    lake = tmp_path / "lake.gpkg"
    points = gpd.read_file(inputs["gpkg"])
    xmin, ymin, xmax, ymax = points.total_bounds
    centre = shapely.box(xmin + (xmax - xmin) / 3, ymin + (ymax - ymin) / 3,
                         xmax - (xmax - xmin) / 3, ymax - (ymax - ymin) / 3)
    gpd.GeoDataFrame(geometry=[centre], crs=points.crs).to_file(lake, engine="pyogrio")
    args = ["release", inputs["gpkg"], *GPKG_ARGS, "--exclude", lake, *FAST]
    assert_refused(run(*args, "--out", tmp_path / "a.gpkg"), "--drop-outside")

    result = run(*args, "--drop-outside", "--out", tmp_path / "a.gpkg")
    assert result.exit_code == 0, result.output
    assert "Warning: dropped" in result.output
    kept = int(result.output.split("Read ")[1].split()[0])
    assert 0 < kept < len(points)
    assert io.read_release(tmp_path / "a.gpkg").metadata["n_records"] == [kept, kept]


def test_an_exclude_over_every_cell_names_the_options(inputs, tmp_path):
    # "check the region, exclude and bounds": words of Python parameters, two copies of it.
    lake = tmp_path / "lake.gpkg"
    points = gpd.read_file(inputs["gpkg"])
    everything = shapely.box(*points.total_bounds).buffer(10_000)
    gpd.GeoDataFrame(geometry=[everything], crs=points.crs).to_file(lake, engine="pyogrio")
    result = run("release", inputs["gpkg"], *GPKG_ARGS, "--exclude", lake, *FAST,
                 "--out", tmp_path / "a.gpkg")
    assert_refused(result, "no cell has habitable area", "check --region and --exclude against "
                                                         "the bounds")


def test_an_output_never_replaces_an_input(inputs, tmp_path):
    copy = tmp_path / "points.gpkg"
    copy.write_bytes(inputs["gpkg"].read_bytes())
    result = run("release", copy, *GPKG_ARGS, "--out", copy, "--overwrite")
    assert_refused(result, "INPUT and --out name the same file")
    assert copy.read_bytes() == inputs["gpkg"].read_bytes()


def test_an_output_never_replaces_a_file_read_with_an_input(inputs, written_release, tmp_path):
    # A shapefile is several files; a release's audit file holds its seeds.
    shapefile = tmp_path / "points.shp"
    gpd.read_file(inputs["gpkg"]).to_file(shapefile)
    dbf = shapefile.with_suffix(".dbf").read_bytes()
    (tmp_path / "dbf.md").symlink_to(shapefile.with_suffix(".dbf"))
    for report, message in ((shapefile.with_suffix(".dbf"), "does not end in .md"),
                            (tmp_path / "dbf.md", "INPUT and --report name the same file")):
        result = run("release", shapefile, *GPKG_ARGS, "--out", tmp_path / "r.gpkg",
                     "--report", report, "--overwrite")
        assert_refused(result, message)
        assert shapefile.with_suffix(".dbf").read_bytes() == dbf
    audit = io.audit_path(written_release)
    seeds = audit.read_bytes()
    (tmp_path / "audit.md").symlink_to(audit)
    for report, message in ((audit, "does not end in .md"),
                            (tmp_path / "audit.md", "RELEASE and --report name the same file")):
        result = run("evaluate", inputs["gpkg"], written_release, "--attributes", "y",
                     "--report", report, "--overwrite")
        assert_refused(result, message)
        assert audit.read_bytes() == seeds


def test_map_max_points_without_a_map_is_refused(inputs, tmp_path):
    # accepted and ignored, where --outcome without --report was refused
    result = run("release", inputs["gpkg"], *GPKG_ARGS, "--out", tmp_path / "r.gpkg",
                 "--map-max-points", 100)
    assert_refused(result, "--map-max-points limits the points of the --map",
                   "add --map FILE or drop --map-max-points")
    assert list(tmp_path.iterdir()) == []


def test_outcome_is_checked_before_the_fit(inputs, tmp_path):
    out = ["--out", tmp_path / "r.gpkg"]
    result = run("release", inputs["gpkg"], *GPKG_ARGS, *out, "--outcome", "y")
    assert_refused(result, "--outcome is the coverage column of the --report's evaluation")
    result = run("release", inputs["gpkg"], *GPKG_ARGS, *out, "--outcome", "x2", "--report",
                 tmp_path / "r.md")
    assert_refused(result, "--outcome: the outcome column 'x2'", "must be binary")
    assert "astype" not in result.output  # Python advice: (points.gpkg['x2'] == level)...
    assert "Fitting" not in result.output and not (tmp_path / "r.gpkg").exists()
    # Not an attribute: refused after the whole fit, naming "releases[0]".
    result = run("release", inputs["gpkg"], "--attributes", "x1,x2", "--grid", "4x4", *out,
                 "--outcome", "y", "--report", tmp_path / "r.md")
    assert_refused(result, "--outcome 'y' is not one of --attributes")
    assert "Fitting" not in result.output and "releases[0]" not in result.output


def test_outcome_that_the_report_cannot_use_is_refused_before_the_fit(inputs, tmp_path):
    # Each was refused by the report's evaluation after the fit, in Python terms ("pass m >= 2
    # releases, or --outcome None", "min_points=20", "rows [5]").
    args = ["--outcome", "y", "--report", tmp_path / "r.md", "--out", tmp_path / "r.gpkg"]
    one = ["--iterations", "40", "--burn-in", "10", "--thin", "2", "--m", 1]
    result = run("release", inputs["gpkg"], *GPKG_ARGS, *one, *args)
    assert_refused(result, "--outcome needs at least 2 releases", "raise --m to 2 or more")
    assert "Read " not in result.output  # an option conflict: before reading

    points = gpd.read_file(inputs["gpkg"])
    small = tmp_path / "small.gpkg"
    points.iloc[:19].to_file(small)
    result = run("release", small, *GPKG_ARGS, *FAST, *args)
    assert_refused(result, "--outcome needs at least 20 original records", "omit --outcome")
    assert "Fitting" not in result.output and "min_points" not in result.output

    gaps = tmp_path / "gaps.gpkg"
    points.assign(y=points["y"].astype(float).mask(points.index == 5)).to_file(gaps)
    result = run("release", gaps, "--attributes", "y,x1,x2", "--grid", "4x4", *FAST, *args)
    assert_refused(result, "--attributes 'y'", "1 of 120 records")  # an attribute: complete
    assert "Fitting" not in result.output and "rows [5]" not in result.output
    assert set(tmp_path.iterdir()) == {small, gaps}  # nothing written


def test_outcome_refusals_under_epsilon_show_no_number_of_records(inputs, tmp_path):
    points = gpd.read_file(inputs["gpkg"])
    gaps = tmp_path / "gaps.gpkg"
    points.assign(x2=points["y"].astype(float).mask(points.index == 5)).to_file(gaps)
    result = run("release", gaps, "--attributes", "y,x1", "--grid", "3x3",
                 "--region", inputs["region"], "--epsilon", 1, "--levels-file",
                 inputs["levels"], *FAST, "--outcome", "x2", "--report", tmp_path / "r.md",
                 "--out", tmp_path / "r.gpkg")
    assert_refused(result, "--outcome 'x2' is not one of --attributes")  # an option conflict
    assert 120 not in whole_numbers(result.output)
    assert "Differentially private release" not in result.output


def test_an_input_pipe_is_refused_naming_input(tmp_path):
    # The message named the Python parameter: "path '.../pipe.gpkg' is not a regular file".
    pipe = tmp_path / "pipe.gpkg"
    os.mkfifo(pipe)
    result = run("release", pipe, *GPKG_ARGS, *FAST, "--out", tmp_path / "r.gpkg")
    assert_refused(result, f"INPUT {str(pipe)!r} is not a regular file (a pipe or a device)")
    assert list(tmp_path.iterdir()) == [pipe]


def test_an_existing_output_is_named_without_its_escape_sequences(inputs, tmp_path):
    # The name was printed raw: an escape sequence reached the terminal and a line break split
    # the message in two lines, the second one looking like geosynth's.
    out = tmp_path / "esc\x1b[31mRED\nFAKE.gpkg"
    out.touch()
    result = run("release", inputs["gpkg"], *GPKG_ARGS, "--out", out)
    assert_refused(result, "esc?[31mRED?FAKE.gpkg (--out) already exists")
    assert "\x1b" not in result.output and result.output.count("\n") == 1


def test_a_dangling_link_as_output_is_refused_before_the_fit(inputs, tmp_path):
    (tmp_path / "r.gpkg").symlink_to(tmp_path / "gone.gpkg")
    result = run("release", inputs["gpkg"], *GPKG_ARGS, "--out", tmp_path / "r.gpkg")
    assert_refused(result, "r.gpkg (--out) already exists; pass --overwrite")
    assert "Fitting" not in result.output


# A quick stopping rule for the 120-record test points (the default asks ESS 400, R-hat 1.01).
QUICK_AUTO = ["--thin", "1", "--target-ess", "50", "--max-rhat", "1.1", "--m", "2"]


def test_iterations_auto_is_the_default_and_says_how_the_fit_stopped(inputs, tmp_path):
    help_text = " ".join(run("release", "--help").output.split())
    assert "--iterations N|AUTO" in help_text and "[default: auto]" in help_text
    out, report = tmp_path / "auto.gpkg", tmp_path / "auto.md"
    result = run("release", inputs["gpkg"], "--attributes", "y,x1", "--grid", "4x4",
                 *QUICK_AUTO, "--seed", 3, "--out", out, "--report", report)
    assert result.exit_code == 0, result.output
    assert "until converged (bulk ESS >= 50, R-hat < 1.1)" in result.output
    assert "Sampler converged after" in result.output and "R-hat max" not in result.output
    assert io.read_release(out).m == 2
    assert "--iterations auto: converged after" in report.read_text()
    # judged by its own --max-rhat: "above 1.01: not converged" followed "converged ... 1.1"
    assert "not converged" not in report.read_text()


def test_iterations_number_keeps_the_fixed_run(inputs, tmp_path):
    result = run("release", inputs["gpkg"], "--attributes", "y,x1", "--grid", "4x4",
                 "--iterations", 300, "--m", 2, "--out", tmp_path / "fixed.gpkg")
    assert result.exit_code == 0, result.output
    assert "2 chain(s) x 300 sweeps" in result.output and "R-hat max:" in result.output


def test_max_seconds_warns_and_still_writes(inputs, tmp_path):
    result = run("release", inputs["gpkg"], "--attributes", "y", "--grid", "3x3", "--thin", 1,
                 "--target-ess", 100000, "--max-seconds", 0.01, "--m", 2,
                 "--out", tmp_path / "o.gpkg")
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "Warning: --iterations 'auto' stopped at --max-seconds 0.01 before converging" \
        in text
    assert "Not converged: " in text and "fit.stopping" not in text
    assert "raise --max-seconds, lower --target-ess or raise --max-rhat" in text
    # the summary line after the warning named the parameter, max_seconds=0.01
    assert "Sampler stopped at --max-seconds 0.01 before converging" in text
    assert "max_seconds=" not in text


@pytest.mark.parametrize(("value", "what"), [("inf", "with an infinite value"),
                                           ("", "without a value")])
def test_a_continuous_value_missing_or_infinite_names_the_option(inputs, tmp_path, value,
                                                                   what):
    # An infinite value was refused as "continuous column 'z' has 1 infinite values (rows
    # [5])", naming no option; a missing one advised "an explicit level", which no number has.
    table = pd.read_csv(inputs["csv"])
    table["z"] = table["z"].astype(object)
    table.loc[5, "z"] = value
    path = tmp_path / "cases.csv"
    table.to_csv(path, index=False)
    result = run("release", path, "--x", "east", "--y", "north", "--crs", "EPSG:31983",
                 "--attributes", "y", "--continuous", "z", "--grid", "3x3", *FAST,
                 "--out", tmp_path / "o.gpkg")
    assert_refused(result, f"--continuous 'z': cases.csv has 1 of {len(table)} records {what} "
                   "in that column; drop them or impute the values in the file")
    assert "explicit level" not in result.output


def test_too_few_draws_for_r_hat_is_a_warning_and_arviz_stays_quiet(inputs, tmp_path):
    # --iterations 10 kept one draw per chain: arviz's "More chains (2) than draws (1)"
    # printed raw with its file path, twice, and the R-hat line read as a plain result.
    result = run("release", inputs["gpkg"], "--attributes", "y", "--grid", "3x3",
                 "--iterations", 10, "--burn-in", 9, "--thin", 1, "--m", 1,
                 "--out", tmp_path / "o.gpkg")
    assert result.exit_code == 0, result.output
    assert "More chains" not in result.output and "arviz" not in result.output
    assert "Warning: R-hat max not computable: 1 draws per chain" in result.output


def test_one_chain_says_why_r_hat_is_not_shown(inputs, tmp_path):
    # One chain has no R-hat (arviz compares 2 or more): the output read "R-hat max: nan".
    result = run("release", inputs["gpkg"], "--attributes", "y", "--grid", "3x3",
                 "--iterations", 40, "--chains", 1, "--m", 1, "--out", tmp_path / "o.gpkg",
                 "--report", tmp_path / "report.md")
    assert result.exit_code == 0, result.output
    assert "nan" not in result.output
    assert "R-hat max: not computable: 1 chain, and R-hat compares 2 or more" in result.output
    assert "R-hat max: not computable: 1 chain" in (tmp_path / "report.md").read_text()


@pytest.mark.parametrize(
    ("args", "fragments"),
    [(["--burn-in", 100], ["--iterations auto discards the first quarter", "--burn-in"]),
     (["--chains", 1], ["--chains 2 or more", "--chains 1"]),
     (["--iterations", 300, "--max-seconds", 5],
      ["--max-seconds applies to --iterations auto only; drop it,"]),
     (["--iterations", 300, "--target-ess", 100, "--max-rhat", 1.05],
      ["--target-ess, --max-rhat apply to --iterations auto"]),
     (["--iterations", "many"], ["expected a number of sweeps >= 1 or 'auto'"]),
     (["--iterations", 0], ["expected a number of sweeps >= 1 or 'auto'"]),
     # refused by the fit after reading the data
     (["--iterations", 10**13], ["--iterations", "above the limit of 1,000,000,000"]),
     (["--thin", 10**15], ["--thin 1000000000000000 with --iterations auto is above 64"]),
     (["--target-ess", 0], ["--target-ess"]),
     (["--max-rhat", 1], ["--max-rhat"]),
     (["--max-rhat", "1.0005"], ["--max-rhat", "1.001<=x<=2"]),
     (["--max-rhat", "1e300"], ["--max-rhat", "1.001<=x<=2"]),
     (["--max-seconds", 0], ["--max-seconds"])],
    ids=["burn-in", "one-chain", "max-seconds-fixed", "target-fixed", "word", "zero", "huge",
         "thin", "target", "rhat", "rhat-noise", "rhat-off", "seconds"],
)
def test_stopping_options_are_checked_before_reading(inputs, tmp_path, args, fragments):
    result = run("release", inputs["gpkg"], "--attributes", "y", "--grid", "4x4", *args,
                 "--out", tmp_path / "o.gpkg")
    assert_refused(result, *fragments)
    assert "Read " not in result.output
    assert list(tmp_path.iterdir()) == []


@pytest.fixture(scope="module")
def two_covariates(inputs, tmp_path_factory):
    """The GeoPackage points with a second numeric column ``z2``."""
    points = gpd.read_file(inputs["gpkg"])
    points["z2"] = 1000.0 + 10.0 * points["z"] + np.arange(len(points))
    path = tmp_path_factory.mktemp("covariates") / "points.gpkg"
    points.to_file(path, engine="pyogrio")
    return path


def test_release_with_two_continuous_columns(two_covariates, tmp_path):
    out = tmp_path / "release.gpkg"
    result = run("release", two_covariates, *GPKG_ARGS, "--continuous", "z,z2",
                 "--beta-prior", "normal,icar", "--seed", 3, *FAST, "--out", out,
                 "--report", tmp_path / "report.md")
    assert result.exit_code == 0, result.output
    written = io.read_release(out)
    assert written.metadata["model"]["continuous"] == ["z", "z2"]
    assert written.metadata["model"]["beta_prior"] == ["normal", "icar"]
    for release in written.releases:
        assert {"z", "z2"} <= set(release.columns)
        assert release["z2"].between(900, 3000).all()  # its own scale, not z's
    assert "continuous `z, z2`" in (tmp_path / "report.md").read_text()
    # One name is the single-covariate form, as before.
    one = tmp_path / "one.gpkg"
    result = run("release", two_covariates, *GPKG_ARGS, "--continuous", "z2",
                 "--beta-prior", "icar", "--seed", 3, *FAST, "--out", one)
    assert result.exit_code == 0, result.output
    assert io.read_release(one).metadata["model"]["continuous"] == "z2"


@pytest.mark.parametrize(
    ("args", "fragments"),
    [
        (["--continuous", "z,z"], ["--continuous", "listed more than once"]),
        (["--continuous", "z,y"], ["continuous column 'y' is also listed in --attributes"]),
        (["--continuous", "z,z2", "--beta-prior", "normal,gamma"],
         ["--beta-prior", "normal or icar"]),
        (["--continuous", "z,z2", "--beta-prior", "normal,icar,icar"],
         ["--beta-prior", "3 priors for 2 --continuous columns"]),
        # refused after reading the data and printing "Fitting", in the API's words
        (["--beta-prior", "normal"], ["--beta-prior needs --continuous"]),
    ],
    ids=["repeated", "also-attribute", "bad-prior", "prior-count", "prior-alone"],
)
def test_bad_continuous_columns_exit_2(two_covariates, tmp_path, args, fragments):
    result = run("release", two_covariates, *GPKG_ARGS, *args, *FAST,
                 "--out", tmp_path / "out.gpkg")
    assert_refused(result, *fragments)
    assert "Fitting" not in result.output  # refused before the fit


def test_an_id_column_as_continuous_exits_2_naming_the_option(inputs, tmp_path):
    # --continuous id was released: its synthetic values followed the input's row order.
    points = gpd.read_file(inputs["gpkg"])
    path = tmp_path / "ids.gpkg"
    points.assign(id=np.arange(len(points)), seq=np.arange(len(points)) + 1.0).to_file(
        path, engine="pyogrio")
    for column, fragment in (("id", "is named like a record identifier"),
                             ("seq", "distinct whole numbers (or multiples of one step) in "
                                     "a nearly regular run")):
        result = run("release", path, *GPKG_ARGS, "--continuous", column, *FAST,
                     "--out", tmp_path / "out.gpkg")
        assert_refused(result, fragment, "drop it from --continuous")
        assert not (tmp_path / "out.gpkg").exists()


@pytest.mark.parametrize("sampler", ["mh", "block"])
def test_sampler_option_reaches_the_model(inputs, tmp_path, sampler):
    result = run("release", inputs["gpkg"], *GPKG_ARGS, "--sampler", sampler, "--seed", 2, *FAST,
                 "--out", tmp_path / "out.gpkg")
    assert result.exit_code == 0, result.output
    assert f"sampler='{sampler}'" in result.output
    assert io.read_release(tmp_path / "out.gpkg").m >= 1


def test_dp_release_takes_the_mh_sampler(inputs, tmp_path):
    result = run("release", inputs["gpkg"], *GPKG_ARGS, "--region", inputs["region"],
                 "--epsilon", 1.5, "--levels-file", inputs["levels"], "--sampler", "mh",
                 *FAST, "--out", tmp_path / "dp.gpkg")
    assert result.exit_code == 0, result.output


def test_block_sampler_with_epsilon_names_the_options(inputs, tmp_path):
    result = run("release", inputs["gpkg"], *GPKG_ARGS, "--region", inputs["region"],
                 "--epsilon", 1.5, "--levels-file", inputs["levels"], "--sampler", "block",
                 *FAST, "--out", tmp_path / "dp.gpkg")
    assert result.exit_code == 2, result.output
    assert "--sampler block has no noise-aware fit" in result.output
    assert "Read " not in result.output and not (tmp_path / "dp.gpkg").exists()  # before reading


def test_a_csv_with_ids_in_an_unnamed_first_column_is_refused_without_naming_them(inputs,
                                                                                 tmp_path):
    # Written with index_label=False, the header has no name for the IDs: pandas made them the
    # row labels and a missing level was reported as "rows ['PAT0007']" on the terminal.
    table = pd.read_csv(inputs["csv"])
    table.index = [f"PAT{i:04d}" for i in range(len(table))]
    table["x1"] = table["x1"].astype(float)
    table.loc["PAT0007", "x1"] = None
    path = tmp_path / "ids.csv"
    table.to_csv(path, index_label=False)
    result = run("release", path, "--x", "east", "--y", "north", "--crs", "EPSG:31983",
                 "--attributes", "y,x1", "--grid", "4x4", *FAST, "--out", tmp_path / "a.gpkg")
    assert_refused(result, "more fields in its records than names in its header line",
                   "give every column a name in the header line")
    assert "PAT" not in result.output and not (tmp_path / "a.gpkg").exists()
    assert "to_csv" not in result.output  # Python advice


def test_an_identifying_attribute_is_refused_with_advice_the_command_line_can_follow(inputs,
                                                                                   tmp_path):
    # The advice coarsened it "(e.g. pd.cut for numbers, ...)", a pandas function.
    result = run("release", inputs["gpkg"], "--attributes", "y,z", "--grid", "3x3", *FAST,
                 "--out", tmp_path / "r.gpkg")
    assert_refused(result, "coarsen it into groups (e.g. bands of numbers, a prefix for codes)",
                   "--allow-identifying")
    assert "pd.cut" not in result.output and "in Python" not in result.output


def test_a_text_continuous_column_gets_advice_the_command_line_can_follow(two_covariates,
                                                                          tmp_path):
    # "convert it with pd.to_numeric(cases.gpkg['label'])": Python advice, with the file name
    # put where the frame's name was.
    frame = gpd.read_file(two_covariates)
    frame["label"] = "a"
    frame.to_file(tmp_path / "text.gpkg", engine="pyogrio")
    result = run("release", tmp_path / "text.gpkg", *GPKG_ARGS, "--continuous", "label", *FAST,
                 "--out", tmp_path / "out.gpkg")
    assert_refused(result, "continuous column 'label' has non-numeric dtype",
                   "convert it to numbers or move it to --attributes if it is categorical")
    assert "to_numeric" not in result.output and "decimal comma" not in result.output


def test_a_continuous_column_with_a_few_words_names_their_rows(tmp_path):
    # Ages with "unknown" in two rows are read as text: the message named no row to fix.
    rng = np.random.default_rng(5)
    frame = pd.DataFrame({"x": rng.uniform(600_000, 601_000, 60).round(1),
                          "y": rng.uniform(7_790_000, 7_791_000, 60).round(1),
                          "sex": rng.choice(["f", "m"], 60),
                          "age": rng.integers(1, 90, 60).astype(str)})
    frame.loc[[7, 41], "age"] = "unknown"
    frame.to_csv(tmp_path / "cases.csv", index=False)
    result = run("release", tmp_path / "cases.csv", "--x", "x", "--y", "y", "--crs",
                 "EPSG:31983", "--attributes", "sex", "--continuous", "age",
                 "--grid", "3x3", *FAST, "--out", tmp_path / "out.gpkg")
    assert_refused(result, "continuous column 'age' has non-numeric dtype",
                   "2 of its values do not read as numbers (rows [7, 41]): fix or drop those "
                   "rows")
    assert "unknown" not in result.output  # rows, never values


def test_a_continuous_column_of_decimal_commas_is_told_the_decimal_option(tmp_path):
    # A ';' CSV of "12,5" read without --decimal: told only to convert the column to numbers.
    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"x": rng.uniform(600_000, 601_000, 60).round(1),
                          "y": rng.uniform(7_790_000, 7_791_000, 60).round(1),
                          "sex": rng.choice(["f", "m"], 60),
                          "age": [f"{v:.1f}".replace(".", ",") for v in rng.uniform(1, 90, 60)]})
    frame.to_csv(tmp_path / "cases.csv", sep=";", index=False)
    result = run("release", tmp_path / "cases.csv", "--x", "x", "--y", "y", "--crs",
                 "EPSG:31983", "--sep", ";", "--attributes", "sex", "--continuous", "age",
                 "--grid", "3x3", *FAST, "--out", tmp_path / "out.gpkg")
    assert_refused(result, "continuous column 'age' has non-numeric dtype",
                   "with a decimal comma ('12,5'): read the file with --decimal ','")


def test_a_guessed_seed_does_not_undo_the_row_shuffle(written_release):
    # An intruder who guesses --seed (11 here; small seeds are the usual choice) re-derives the
    # seed of each step as the command does and undoes the public shuffle. Row k of every
    # unshuffled release would be the synthetic version of record k, so all the releases agree
    # on every attribute row by row: the input's row order, which a release never holds.
    from geosynth.cli.helpers import derive_seeds

    releases = io.read_release(written_release).releases
    codes = [r[["y", "x1", "x2"]].astype(str).agg(",".join, axis=1).to_numpy() for r in releases]
    _, seeds = derive_seeds(11, ["fit", "synthesize", "public", "evaluate"])
    # Nor does it give the random streams of the fit and the synthesis: the seeds of the steps
    # (in the private audit file) are keyed by the records as well.
    audit = json.loads(io.audit_path(written_release).read_text())["seeds"]
    assert audit["seed"] == 11
    assert all(audit[step] != seeds[step] for step in ("fit", "synthesize", "public"))
    rng = np.random.default_rng(seeds["public"])
    unshuffled = []
    for code in codes:
        order = rng.permutation(len(code))  # as geosynth.to_public draws it
        back = np.empty(len(code), dtype=object)
        back[order] = code
        unshuffled.append(back)
    agreement = np.mean(unshuffled[0] == unshuffled[1])
    # Independent rows agree as often as two random records' combinations: about 0.15 here.
    assert agreement < 0.5, f"the guessed seed restores the row order ({agreement:.0%} agree)"


def _no_fit(monkeypatch):
    def no_fit(*args, **kwargs):
        raise AssertionError("the outputs must be checked before the fit")

    monkeypatch.setattr(geosynth.PaivaModel, "fit", no_fit)


@pytest.mark.parametrize("name", ["rel", "r.csv", "r.gpkg.bak"])
def test_out_without_the_gpkg_extension_is_refused_before_the_fit(inputs, tmp_path, name,
                                                                   monkeypatch):
    # --out rel printed pyogrio's raw "RuntimeWarning: ... non conformant file extension";
    # --out r.csv was refused only after the whole fit.
    _no_fit(monkeypatch)
    result = run("release", inputs["gpkg"], *GPKG_ARGS, *FAST, "--out", tmp_path / name)
    assert_refused(result, "Invalid value for '--out'", f"{name}' does not end in .gpkg",
                   "such as release.gpkg")
    assert "RuntimeWarning" not in result.output and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("option", "name", "fragment"), [
    ("--map", "old.gpkg", "does not end in .html or .htm: the review map is an HTML file"),
    ("--report", "old.gpkg", "does not end in .md, .markdown or .txt: the report is a Markdown"),
    ("--intensity-tif", "old.gpkg", "does not end in .tif or .tiff: the intensity surface is a "
                                    "GeoTIFF"),
    ("--intensity-tif", "notes.md", "does not end in .tif or .tiff"),
])
def test_an_output_of_the_wrong_kind_is_refused_before_the_fit(inputs, tmp_path, option, name,
                                                               fragment, monkeypatch):
    # --map old.gpkg --overwrite replaced a release with an internal map of the original
    # points, beside the audit file of the release that was gone.
    _no_fit(monkeypatch)
    (tmp_path / name).write_text("a file the run must keep")
    result = run("release", inputs["gpkg"], *GPKG_ARGS, "--grid", "4x4", *FAST, "--out",
                 tmp_path / "new.gpkg", option, tmp_path / name, "--overwrite")
    assert_refused(result, f"Invalid value for '{option}'", fragment)
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]
    assert (tmp_path / name).read_text() == "a file the run must keep"


def test_out_with_an_upper_case_gpkg_extension_is_a_release(inputs, tmp_path):
    out = tmp_path / "R.GPKG"
    result = run("release", inputs["gpkg"], *GPKG_ARGS, *FAST, "--out", out)
    assert result.exit_code == 0, result.output
    assert "RuntimeWarning" not in result.output and "extension" not in result.output
    assert io.read_release(out).m == 2


@pytest.mark.parametrize("option", ["--out", "--report"])
@pytest.mark.parametrize("overwrite", [True, False], ids=["overwrite", "new"])
def test_overwrite_never_replaces_a_named_pipe(inputs, tmp_path, option, overwrite,
                                               monkeypatch):
    # mkfifo r.gpkg; --out r.gpkg --overwrite: the pipe became a regular GeoPackage (as root,
    # --out /dev/null --overwrite replaced the device). Without --overwrite the message
    # advised --overwrite.
    _no_fit(monkeypatch)
    fifo = tmp_path / ("r.gpkg" if option == "--out" else "report.md")
    os.mkfifo(fifo)
    outputs = {"--out": tmp_path / "r.gpkg", option: fifo}
    args = [arg for pair in outputs.items() for arg in pair]
    result = run("release", inputs["gpkg"], *GPKG_ARGS, *FAST, *args,
                 *(["--overwrite"] if overwrite else []))
    assert_refused(result, f"{option} '{fifo}' is a named pipe (FIFO), not a regular file",
                   "even with --overwrite", "nothing was written")
    assert "already exist" not in result.output
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == [fifo.name]


def test_the_review_map_shows_only_the_models_columns(inputs, tmp_path):
    # The map drew every column of the input: patient ids and a column of dates (which also
    # made the map fail after the fit: 'Object of type Timestamp is not JSON serializable').
    data = gpd.read_file(inputs["gpkg"])
    data["patient_id"] = [f"P{k:06d}" for k in range(len(data))]
    data["notified"] = pd.Timestamp("2024-01-01") + pd.to_timedelta(np.arange(len(data)), "D")
    path = tmp_path / "points.gpkg"
    data.to_file(path, engine="pyogrio")
    result = run("release", path, *GPKG_ARGS, *FAST, "--out", tmp_path / "r.gpkg",
                 "--map", tmp_path / "map.html")
    assert result.exit_code == 0, result.output
    page = (tmp_path / "map.html").read_text()
    assert "P000017" not in page and "patient_id" not in page and "notified" not in page
    assert "x2" in page  # an attribute of the model is still shown


@pytest.mark.parametrize(("r_hat", "warned"), [(1.03, True), (1.009, False)])
def test_a_fixed_length_run_is_not_converged_above_the_librarys_r_hat(r_hat, warned, capsys):
    # The commands warned above R-hat 1.05, while fit(max_rhat=) and tune call a fit
    # unconverged above 1.01: a run at 1.03 passed here without a word.
    from types import SimpleNamespace

    from geosynth.cli.release import _echo_convergence

    _echo_convergence(r_hat, SimpleNamespace(stopping=None, n_chains=2))
    said = capsys.readouterr()
    assert f"R-hat max: {r_hat:.3f}" in said.out
    assert ("Warning: R-hat max" in said.err and "> 1.01" in said.err) is warned


def test_a_continuous_column_without_two_cell_means_is_refused_before_the_fit(inputs,
                                                                             tmp_path):
    # synthesize refused it after the whole fit: with every record in one cell of the lattice
    # and one combination, one cell mean is all there is.
    points = gpd.read_file(inputs["gpkg"])
    path = tmp_path / "coarse.gpkg"
    x0, y0 = points.total_bounds[:2]
    clustered = points.geometry.scale(0.1, 0.1, origin=(x0, y0))  # in the region's corner
    points.assign(y=0).set_geometry(clustered).to_file(path, engine="pyogrio")
    result = run("release", path, "--attributes", "y", "--continuous", "z", "--grid", "2x2",
                 "--region", inputs["region"], *FAST, "--out", tmp_path / "out.gpkg")
    assert_refused(result, "the continuous column 'z' has one cell mean for every record")
    assert "Fitting" not in result.output


@pytest.mark.parametrize(("columns", "attributes", "refusal"), [
    ({"Y": "y"}, "y,Y", "the columns 'y' and 'Y' differ only in case, and a release "
                        "GeoPackage or shapefile takes them for one column; rename one"),
    ({"geom": "x1"}, "y,geom", "the column 'geom' has a name a release layer keeps"),
])
def test_names_a_geopackage_cannot_hold_are_refused_before_the_fit(inputs, tmp_path, columns,
                                                                   attributes, refusal):
    # The writer refused them after the whole fit, and renaming the release's column then
    # was refused as a column the model does not release.
    table = pd.read_csv(inputs["csv"])
    table = table.assign(**{new: table[old] for new, old in columns.items()})
    path = tmp_path / "cases.csv"
    table.to_csv(path, index=False)
    result = run("release", path, "--x", "east", "--y", "north", "--crs", "EPSG:31983",
                 "--attributes", attributes, "--grid", "4x4", *FAST,
                 "--out", tmp_path / "out.gpkg")
    assert_refused(result, refusal)  # by prepare, whose advice is the data's, not Python's
    assert "Fitting" not in result.output and "in Python" not in result.output
    assert not (tmp_path / "out.gpkg").exists()


def test_date_times_finer_than_a_millisecond_are_refused_before_the_fit(inputs, tmp_path):
    # Levels 08:00:00 and 08:00:00.0004 were written as one level, the file passing every
    # check (the merged value is a fitted level).
    points = gpd.read_file(inputs["gpkg"])
    start = pd.Timestamp("2020-03-01 08:00:00")
    points["when"] = np.where(points["y"] == 1, start, start + pd.Timedelta("400us"))
    path = tmp_path / "times.parquet"
    points.to_parquet(path)
    result = run("release", path, "--attributes", "y,when", "--grid", "4x4", *FAST,
                 "--out", tmp_path / "out.gpkg")
    assert_refused(result, "column 'when' has", "finer than a millisecond", "dt.round('ms')")
    assert "Fitting" not in result.output


def test_a_column_a_release_cannot_carry_is_named_for_the_command_line(inputs, tmp_path):
    # The Python advice was rewritten as "cases.csv = gdf.rename(...)".
    table = pd.read_csv(inputs["csv"]).rename(columns={"x1": "_x1"})
    path = tmp_path / "cases.csv"
    table.to_csv(path, index=False)
    result = run("release", path, "--x", "east", "--y", "north", "--crs", "EPSG:31983",
                 "--attributes", "y,_x1", "--grid", "4x4", *FAST, "--out", tmp_path / "o.gpkg")
    assert_refused(result, "['_x1'] start with '_'", "rename them in the data")
    assert "rename(" not in result.output and "Fitting" not in result.output


def test_barriers_cut_the_links_they_cross_and_the_release_says_how_many(inputs, tmp_path):
    # A river along the middle of the 4 x 4 lattice, north to south, in another CRS (degrees):
    # reprojected to the points' CRS, it separates the two western columns from the two
    # eastern ones, so 4 rook and 6 diagonal queen links (of the inner column pairs) are cut.
    points = gpd.read_file(inputs["gpkg"])
    grid = geosynth.Grid.from_points(points, shape=(4, 4))
    xmin, ymin, xmax, ymax = grid.bounds
    middle = (xmin + xmax) / 2
    line = shapely.LineString([(middle, ymin - 1), (middle, ymax + 1)])
    river = gpd.GeoDataFrame(geometry=[line], crs=points.crs).to_crs(4326)
    path = tmp_path / "river.gpkg"
    river.to_file(path, engine="pyogrio")
    result = run("release", inputs["gpkg"], *GPKG_ARGS, "--barriers", path, "--seed", 3, *FAST,
                 "--out", tmp_path / "a.gpkg")
    assert result.exit_code == 0, result.output
    assert "2 component(s), 10 link(s) cut by --barriers)" in result.output
    lattice = io.read_release(tmp_path / "a.gpkg").metadata["lattice"]
    assert lattice["cut_links"] == 10 and lattice["n_components"] == 2


def test_a_barriers_layer_without_barriers_is_refused(inputs, tmp_path):
    result = run("release", inputs["gpkg"], *GPKG_ARGS, "--barriers-layer", "rivers", *FAST,
                 "--out", tmp_path / "a.gpkg")
    assert_refused(result, "--barriers-layer applies to --barriers only")


def test_points_as_barriers_are_refused_naming_the_option(inputs, tmp_path):
    points = gpd.read_file(inputs["gpkg"])
    path = tmp_path / "wells.gpkg"
    points.iloc[:3][["geometry"]].to_file(path, engine="pyogrio")
    result = run("release", inputs["gpkg"], *GPKG_ARGS, "--barriers", path, *FAST,
                 "--out", tmp_path / "a.gpkg")
    assert_refused(result, "--barriers", "Point", "buffer points")
    assert not (tmp_path / "a.gpkg").exists()


def test_under_epsilon_the_outcome_is_judged_on_the_declared_levels_not_the_records(inputs,
                                                                                  tmp_path):
    # Judged on the records, whether a DP release was made told whether there were 20 of them,
    # or whether one held a value outside 0/1: now only the declared levels can refuse it.
    points = gpd.read_file(inputs["gpkg"])
    small = tmp_path / "small.gpkg"
    # The records at the four extremes among the 15: their box (widened by 10 %) holds the
    # region, so the DP releases (fresh noise each run) always overlap them and the report's
    # evaluation measures them (1 run in 5 refused releases that fell beside 15 other records).
    x, y = points.geometry.x.to_numpy(), points.geometry.y.to_numpy()
    extremes = list(dict.fromkeys(int(i) for i in (x.argmin(), x.argmax(), y.argmin(),
                                                   y.argmax())))
    rest = [i for i in range(len(points)) if i not in extremes]
    points.iloc[extremes + rest[:15 - len(extremes)]].to_file(small)
    args = ["--attributes", "y,x1", "--grid", "3x3", "--region", inputs["region"],
            "--epsilon", 1, *FAST, "--outcome", "y"]
    report = tmp_path / "r.md"
    result = run("release", small, *args, "--levels-file", inputs["levels"], "--report", report,
                 "--out", tmp_path / "r.gpkg")
    assert result.exit_code == 0, result.output
    assert io.read_release(tmp_path / "r.gpkg").m == 2
    assert "- Note: no coverage of --outcome y: fewer than 20 records" in report.read_text()

    three = tmp_path / "three.json"
    three.write_text(json.dumps({"y": [0, 1, 2], "x1": [1, 2]}))
    result = run("release", inputs["gpkg"], *args, "--levels-file", three, "--report", report,
                 "--out", tmp_path / "s.gpkg", "--overwrite")
    assert_refused(result, "--outcome: the levels of 'y' in --levels-file three.json are "
                           "[0, 1, 2]", "declare them as [0, 1]")
    assert "Fitting" not in result.output and not (tmp_path / "s.gpkg").exists()


def test_a_map_too_large_for_a_page_is_refused_before_the_fit(inputs, tmp_path, monkeypatch):
    # Uncapped (--map-max-points 0) a map of 200,000 records failed after the whole fit.
    monkeypatch.setattr(geosynth.maps, "MAX_DRAWN", 500)  # 120 records: 5 layers, 600 drawn
    result = run("release", inputs["gpkg"], *GPKG_ARGS, *FAST, "--map", tmp_path / "m.html",
                 "--map-max-points", 0, "--out", tmp_path / "r.gpkg")
    assert_refused(result, "the map would draw 600 points and lines", "--map-max-points 100 "
                                                                      "or fewer")
    assert "Fitting" not in result.output and not list(tmp_path.iterdir())


def test_a_map_in_a_crs_without_longitude_is_refused_before_the_fit(inputs, tmp_path):
    # A site grid in metres: the fit ran, then PROJ's traceback came out of the map (exit 1).
    local = ('ENGCRS["site grid",EDATUM["site"],CS[Cartesian,2],AXIS["x",east,'
             'LENGTHUNIT["metre",1]],AXIS["y",north,LENGTHUNIT["metre",1]]]')
    args = ["release", inputs["csv"], "--x", "east", "--y", "north", "--crs", local,
            "--attributes", "y,x1", "--grid", "4x4", *FAST, "--out", tmp_path / "r.gpkg"]
    result = run(*args, "--map", tmp_path / "m.html")
    assert_refused(result, "has no transformation to longitude and latitude",
                   "leave out --map")
    assert "Fitting" not in result.output and not list(tmp_path.iterdir())
    assert run(*args).exit_code == 0  # without the map the site grid is fine


def test_the_default_map_cap_shrinks_to_fit_many_releases_in_a_page(inputs, tmp_path,
                                                                   monkeypatch):
    # The default of 10,000 points a layer refused a map of 25 releases (51 layers, 510,000
    # points and lines) until --map-max-points was given; the default now fits the page.
    monkeypatch.setattr(geosynth.maps, "MAX_DRAWN", 500)  # 120 records, 2 releases: 5 layers
    result = run("release", inputs["gpkg"], *GPKG_ARGS, *FAST, "--map", tmp_path / "m.html",
                 "--out", tmp_path / "r.gpkg")
    assert result.exit_code == 0, result.output
    assert "Map: at most 100 points per layer, so that its 2 releases fit a page" in result.output
    page = (tmp_path / "m.html").read_text()
    # 100 a layer (500 // 5): the records' and two releases' points; and 200 lines.
    assert page.count('"type": "Point"') + page.count('"type":"Point"') == 3 * 100
    explicit = run("release", inputs["gpkg"], *GPKG_ARGS, *FAST, "--map", tmp_path / "n.html",
                   "--map-max-points", 120, "--out", tmp_path / "s.gpkg")
    assert_refused(explicit, "the map would draw 600 points and lines",
                   "--map-max-points 100 or fewer")  # a cap given is the analyst's: kept


def test_under_epsilon_a_release_of_no_counted_record_is_still_made(inputs, tmp_path):
    # Declared levels that no record holds: every record is dropped, and the release is noise.
    # The report's evaluation then failed after the noise was drawn ("original has no
    # records"), so whether a release was made depended on the records.
    nothing = tmp_path / "nothing.json"
    nothing.write_text(json.dumps({"y": [5, 6], "x1": [1, 2]}))
    report = tmp_path / "r.md"
    result = run("release", inputs["gpkg"], "--attributes", "y,x1", "--grid", "3x3",
                 "--region", inputs["region"], "--epsilon", 1, "--levels-file", nothing, *FAST,
                 "--report", report, "--map", tmp_path / "m.html", "--out", tmp_path / "r.gpkg")
    assert result.exit_code == 0, result.output
    assert "- Note: no risk or utility: no record was counted" in report.read_text()
    assert io.read_release(tmp_path / "r.gpkg").m == 2
    # The steps said are the same whatever was counted: a missing "Measuring" told none was.
    loud = CliRunner().invoke(cli, ["release", str(inputs["gpkg"]), "--attributes", "y,x1",
                                    "--grid", "3x3", "--region", str(inputs["region"]),
                                    "--epsilon", "1", "--levels-file", str(nothing),
                                    *map(str, FAST), "--report", str(report), "--overwrite",
                                    "--out", str(tmp_path / "r.gpkg")])
    assert loud.exit_code == 0, loud.output
    assert "Measuring disclosure risk and utility for --report" in loud.stderr


@pytest.mark.parametrize("command", ["release", "tune"])
def test_a_coordinate_column_named_as_an_attribute_is_said_to_be_one(inputs, tmp_path, command):
    # --x east --attributes east: "points.csv has no column 'east'", which it has.
    lattice = ["--grid", "4x4", *FAST, "--out", tmp_path / "out.gpkg"] if command == "release" \
        else ["--grids", "4x4", "--report", tmp_path / "report.md"]
    result = run(command, inputs["csv"], "--x", "east", "--y", "north", "--crs", "EPSG:31983",
                 "--attributes", "y,east", *lattice)
    assert_refused(result, "--attributes: 'east' is a column of points.csv's coordinates "
                           "(--x, --y), which become the points")


def test_a_column_whose_name_holds_a_comma_is_named_as_such(inputs, tmp_path):
    # --attributes "y,x1,x2" split a column named "x1,x2" in two: "no column 'x1', 'x2'".
    table = pd.read_csv(inputs["csv"]).rename(columns={"x1": "x1,x2", "x2": "other"})
    path = tmp_path / "comma.csv"
    table.to_csv(path, index=False)
    result = run("release", path, "--x", "east", "--y", "north", "--crs", "EPSG:31983",
                 "--attributes", "y,x1,x2", "--grid", "4x4", *FAST, "--out", tmp_path / "o.gpkg")
    assert_refused(result, "--attributes: comma.csv has a column 'x1,x2', whose comma splits it")
