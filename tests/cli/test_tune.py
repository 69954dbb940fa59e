"""``geosynth tune``: the report, the R-U map, the recommendation and its release command."""

import os
import re
import shlex
import stat

import geopandas as gpd
import pytest
import shapely

from geosynth import Candidate, io
from geosynth.cli.tune import release_command
from tests.cli.helpers import FAST, assert_refused, run

ARGS = ["--attributes", "y,x1,x2", "--quadrants", "50"]


def test_tune_writes_report_and_map_and_prints_the_release_command(inputs, tmp_path):
    report = tmp_path / "tune.md"
    result = run("tune", inputs["gpkg"], *ARGS, "--grids", "3x3,5x5", "--cell-sizes", "2000",
                 "--region", inputs["region"], "--risk-limit", "1", "--seed", 3, *FAST,
                 "--report", report)
    assert result.exit_code == 0, result.output
    text = report.read_text()
    for fragment in ("## Recommendation", "## Candidates", "3x3", "5x5", "2000 m",
                     "true_match_rate", "intensity_l1", "seed 3", "geosynth release",
                     "coverage (se)", "`<measure> (se)`: its Monte Carlo standard error",
                     "Internal document: its measures are taken on the confidential records"):
        assert fragment in text, fragment
    png = tmp_path / "tune.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    for path in (report, png):  # internal files
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert "Recommendation: '" in result.output
    header = next(line for line in result.output.splitlines() if "true_match_rate" in line)
    assert header.split() == ["true_match_rate", "true_match_rate", "se", "coverage",
                              "coverage", "se", "n_cells"]  # each measure ± its error
    command = result.output.split("Release it with:\n")[1].splitlines()[0].strip()
    words = shlex.split(command)
    assert words[:3] == ["geosynth", "release", str(inputs["gpkg"])]
    assert ("--grid" in words) or ("--cell-size" in words)
    assert words[words.index("--region") + 1] == str(inputs["region"])


def test_a_risk_limit_is_read_in_the_units_of_its_risk(inputs, tmp_path):
    # --risk-limit went to tune() as a true_match_rate limit whatever --risk said: a limit of
    # 100 m on min_distance was refused as a share above 1.
    result = run("tune", inputs["gpkg"], *ARGS, "--grids", "3x3", "--risk", "min_distance",
                 "--risk-limit", "100", "--seed", 5, *FAST, "--report", tmp_path / "t.md")
    assert result.exit_code == 0, result.output
    assert "min_distance >= 100" in result.output


def test_the_same_seed_gives_the_same_report(inputs, tmp_path):
    texts = []
    for name in ("a.md", "b.md"):
        result = run("tune", inputs["gpkg"], *ARGS, "--grids", "3x3", "--seed", 5, *FAST,
                     "--report", tmp_path / name)
        assert result.exit_code == 0, result.output
        texts.append((tmp_path / name).read_text())
    # Everything but the seconds column is the same: compare the recommendation section.
    assert texts[0].split("## Candidates")[0] == texts[1].split("## Candidates")[0]


@pytest.mark.parametrize("args, fragments", [
    (["--report", "x.md"], ["--cell-sizes", "--grids"]),
    (["--cell-sizes", "100,abc", "--report", "x.md"], ["comma-separated numbers"]),
    (["--cell-sizes", "100,100", "--report", "x.md"], ["more than once"]),
    (["--grids", "3x3,0x2", "--report", "x.md"], ["ROWSxCOLS"]),
    (["--grids", "3x3", "--beta-prior", "normal", "--report", "x.md"],
     ["--beta-prior needs --continuous"]),
    (["--grids", "3x3", "--iterations", "auto", "--burn-in", "5", "--report", "x.md"],
     ["--burn-in"]),
    # refused by the fit after reading the data and building every lattice
    (["--grids", "3x3", "--iterations", "auto", "--thin", "1000", "--report", "x.md"],
     ["--thin 1000 with --iterations auto is above 64", "leave --thin out"]),
    (["--grids", "3x3", "--outcome", "nope", "--report", "x.md"], ["nope"]),
    # refused before any fit, not after all of them
    (["--grids", "3x3", "--outcome", "x1", "--report", "x.md"],
     ["outcome column 'x1'", "must be binary", "1 other distinct value(s)"]),
    (["--grids", "3x3", "--risk-limit", "-1", "--report", "x.md"], ["--risk-limit"]),
    # 5 meant as 5 % let every candidate through; checked for the --risk it limits
    (["--grids", "3x3", "--risk-limit", "5", "--report", "x.md"],
     ["--risk-limit must be at most 1 for true_match_rate, a share of records"]),
    # nan and inf were refused by the library after every candidate's fit
    (["--grids", "3x3", "--risk-limit", "nan", "--report", "x.md"],
     ["--risk-limit", "not a finite number"]),
    # 1e300 passed, every candidate was fitted, then the R-U map refused it
    (["--grids", "3x3", "--risk", "min_distance", "--risk-limit", "1e300", "--report", "x.md"],
     ["--risk-limit must be a finite number (at most 1e+100 in size)"]),
    (["--grids", "3x3", "--iterations", "auto", "--max-seconds", "inf", "--report", "x.md"],
     ["--max-seconds", "not a finite number"]),
    # an outcome the releases do not carry, and coverage with one release: refused after
    # every fit before
    (["--grids", "3x3", "--outcome", "z", "--report", "x.md"],
     ["--outcome", "'z' is not one of --attributes y,x1,x2", "add it to --attributes"]),
    (["--grids", "3x3", "--m", "1", "--outcome", "y", "--report", "x.md"],
     ["--outcome needs --m 2 or more", "raise --m or drop --outcome"]),
    (["--grids", "3x3", "--m", "1", "--utility", "coverage", "--report", "x.md"],
     ["--utility coverage needs --m 2 or more", "intensity_correlation"]),
    # Python advice: "recode it, e.g. (points.gpkg['x1'] == level).astype(int)"
    (["--grids", "3x3", "--outcome", "x1", "--report", "x.md"],
     ["--outcome: the outcome column 'x1' of points.gpkg", "recode it in the file"]),
    # a ValueError traceback ("PosixPath('.') has an empty name")
    (["--grids", "3x3", "--report", ""], ["--report", "give a file name"]),
    # "x.md/" wrote the report as the file x.md; a huge lattice named --cell-sizes after
    # "Tuning"
    (["--grids", "3x3", "--report", "x.md/"], ["--report", "give a file name"]),
    (["--grids", "3x3,3000x3000", "--report", "x.md"],
     ["--grids", "3000x3000 would have more than the limit of 4,000,000 cells"]),
    # 1e300 was refused by the lattice after "Tuning" had started
    (["--cell-sizes", "500,1e300", "--report", "x.md"],
     ["--cell-sizes", "at most 1e+12 metres", "'500,1e300'"]),
    # refused after "Tuning", as "continuous column 'x2' is also listed in attributes"
    (["--grids", "3x3", "--continuous", "x2", "--report", "x.md"],
     ["x2 listed in both --attributes and --continuous"]),
])
def test_bad_options_are_refused(inputs, tmp_path, args, fragments):
    args = [f"{tmp_path}/{a}" if a.startswith("x.md") else a for a in args]
    result = run("tune", inputs["gpkg"], "--attributes", "y,x1,x2", *args)
    assert_refused(result, *fragments)
    assert "Tuning" not in result.output  # before any fit
    assert not (tmp_path / "x.md").exists()


@pytest.mark.parametrize("lattices, hint", [
    (["--cell-sizes", ",".join(str(1000 + i) for i in range(101))], "--cell-sizes:"),
    (["--cell-sizes", ",".join(str(1000 + i) for i in range(60)),
      "--grids", ",".join(f"{i}x{i}" for i in range(2, 43))], "--cell-sizes (60), --grids (41):"),
])
def test_more_candidates_than_the_limit_are_refused_before_anything_else(inputs, tmp_path,
                                                                         lattices, hint):
    # 5,000 --cell-sizes printed "Tuning 5000 candidate lattice(s)" and ran for minutes before
    # any fit. Refused first: here before --continuous x2 (also an attribute) is.
    result = run("tune", inputs["gpkg"], *ARGS, *lattices, "--continuous", "x2",
                 "--report", tmp_path / "x.md")
    assert_refused(result, hint, "101 candidates, more than the limit of 100",
                   "compare a few lattices first")
    assert "Tuning" not in result.output and not (tmp_path / "x.md").exists()


def test_an_existing_report_is_refused_before_any_work(inputs, tmp_path):
    report = tmp_path / "tune.md"
    report.write_text("keep me")
    result = run("tune", inputs["gpkg"], *ARGS, "--grids", "3x3", *FAST, "--report", report)
    assert_refused(result, "already exist", "--overwrite")
    assert report.read_text() == "keep me" and not (tmp_path / "tune.png").exists()


def test_release_command_quotes_paths_and_repeats_the_settings():
    command = release_command("my points.gpkg", ["y", "x1"], Candidate(cell_size=250.0,
                              beta_prior=("icar",)), continuous=["z"], region="city.gpkg",
                              crs="EPSG:31983", m=3)
    assert shlex.split(command) == [
        "geosynth", "release", "my points.gpkg", "--crs", "EPSG:31983", "--attributes", "y,x1",
        "--cell-size", "250", "--continuous", "z", "--beta-prior", "icar", "--region",
        "city.gpkg", "--m", "3", "--out", "release.gpkg"]
    dp = release_command("p.gpkg", ["y"], Candidate(shape=(10, 12), epsilon=1.5))
    assert "--grid 10x12" in dp and "--epsilon 1.5" in dp


def test_the_release_command_repeats_the_run_that_was_tuned(inputs, tmp_path):
    # The command left out --iterations, --burn-in, --thin and --chains: release fitted with
    # its own defaults (--iterations auto, 2 chains), not the run that was tuned.
    points = tmp_path / "my points.gpkg"
    points.write_bytes(inputs["gpkg"].read_bytes())
    report = tmp_path / "tune.md"
    result = run("tune", points, *ARGS, "--grids", "3x3", "--seed", 4, "--iterations", "40",
                 "--burn-in", "12", "--thin", "2", "--chains", "3", "--m", "2",
                 "--report", report)
    assert result.exit_code == 0, result.output
    command = result.output.split("Release it with:\n")[1].splitlines()[0].strip()
    assert command in report.read_text()
    words = shlex.split(command)
    assert words[2] == str(points)
    for option, value in (("--iterations", "40"), ("--burn-in", "12"), ("--thin", "2"),
                          ("--chains", "3"), ("--m", "2")):
        assert words[words.index(option) + 1] == value, option
    out = tmp_path / "release.gpkg"
    words[words.index("--out") + 1] = str(out)
    released = run(*words[1:])
    assert released.exit_code == 0, released.output
    model = io.read_release(out).metadata["model"]
    assert (model["chains"], model["burn_in"], model["thin"], model["draws_per_chain"]) == (
        3, 12, 2, 14)


def test_the_release_command_names_the_run_options_off_their_default():
    candidate = Candidate(shape=(3, 3))
    auto = dict(n_iter="auto", thin=None, chains=2, target_ess=400.0, max_rhat=1.01,
                max_seconds=None)
    assert shlex.split(release_command("p.gpkg", ["y"], candidate, run=auto)) == [
        "geosynth", "release", "p.gpkg", "--attributes", "y", "--grid", "3x3", "--m", "5",
        "--out", "release.gpkg"]
    words = shlex.split(release_command("p.gpkg", ["y"], candidate, run={
        **auto, "thin": 3, "chains": 4, "target_ess": 100.0, "max_rhat": 1.05,
        "max_seconds": 30.5}))
    assert " ".join(words[7:-4]) == ("--thin 3 --target-ess 100 --max-rhat 1.05 "
                                     "--max-seconds 30.5 --chains 4")
    fixed = dict(n_iter=8000, burn_in=2000, thin=6, chains=2)  # burn-in N/4, thin 6: defaults
    words = shlex.split(release_command("p.gpkg", ["y"], candidate, run=fixed))
    assert words[7:-4] == ["--iterations", "8000"]
    words = shlex.split(release_command("p.gpkg", ["y"], candidate,
                                        run={**fixed, "burn_in": 100, "thin": 1}))
    assert words[7:-4] == ["--iterations", "8000", "--burn-in", "100", "--thin", "1"]


def test_a_dp_candidates_release_command_names_a_levels_file(inputs, tmp_path):
    # geosynth release --epsilon requires --levels-file, which the command lacked.
    candidate = Candidate(shape=(3, 3), epsilon=1.0)
    words = shlex.split(release_command(str(inputs["gpkg"]), ["y", "x1", "x2"], candidate,
                                        region=str(inputs["region"]), m=2, drop_outside=True))
    assert words[words.index("--levels-file") + 1] == "LEVELS.json"  # a placeholder
    assert "--drop-outside" not in words  # a DP release drops such records anyway
    given = shlex.split(release_command("p.gpkg", ["y"], candidate, levels_file="my levels.json"))
    assert given[given.index("--levels-file") + 1] == "my levels.json"
    words[words.index("LEVELS.json")] = str(inputs["levels"])
    words[words.index("--out") + 1] = str(tmp_path / "dp.gpkg")
    result = run(*words[1:], *FAST)
    assert result.exit_code == 0, result.output
    assert (tmp_path / "dp.gpkg").exists()


@pytest.mark.parametrize("size", [1999.9996, 3333.333333333, 1e-7 + 250])
def test_the_release_command_and_label_keep_every_digit_of_the_size(size):
    # Rounded to six digits, 1999.9996 m became 2000 m: a 5 x 5 lattice, not the 6 x 6 tuned.
    for candidate, option in ((Candidate(cell_size=size), "--cell-size"),
                              (Candidate(hex_size=size), "--hex-size")):
        words = shlex.split(release_command("p.gpkg", ["y"], candidate))
        assert float(words[words.index(option) + 1]) == size
        assert repr(size) in candidate.label
    dp = shlex.split(release_command("p.gpkg", ["y"], Candidate(shape=(3, 3), epsilon=size)))
    assert float(dp[dp.index("--epsilon") + 1]) == size


def test_coverage_without_a_binary_outcome(inputs, tmp_path):
    # x1 (levels 1, 2) first: no default outcome. An explicit --utility coverage is refused
    # before any fit; the default falls back to intensity_correlation and says so.
    report = tmp_path / "t.md"
    args = ["tune", inputs["gpkg"], "--attributes", "x1,y", "--quadrants", "50", "--grids",
            "3x3", "--seed", 2, *FAST, "--report", report]
    refused = run(*args, "--utility", "coverage")
    assert_refused(refused, "--utility coverage needs a binary --outcome",
                   "first attribute 'x1' is not one")
    assert "Tuning" not in refused.output and not report.exists()
    result = run(*args)
    assert result.exit_code == 0, result.output
    assert "ranking by --utility intensity_correlation" in result.output
    assert "intensity_correlation" in report.read_text()


def test_continuous_without_a_beta_prior_is_tuned_as_release_takes_it(inputs, tmp_path):
    # release takes --continuous alone (synthetic values, no effect on the intensity); tune
    # refused it, naming a pairing that release does not require.
    result = run("tune", inputs["gpkg"], *ARGS, "--continuous", "z", "--grids", "3x3",
                 "--seed", 4, *FAST, "--report", tmp_path / "t.md")
    assert result.exit_code == 0, result.output
    words = shlex.split(result.output.split("Release it with:\n")[1].splitlines()[0])
    assert words[words.index("--continuous") + 1] == "z" and "--beta-prior" not in words
    # The fits leave z out, the release command synthesizes it: said, not hidden.
    assert ("Note: without --beta-prior the candidates are fitted and measured without "
            "--continuous z") in result.output
    refused = run("tune", inputs["gpkg"], *ARGS, "--beta-prior", "normal", "--grids", "3x3",
                  *FAST, "--report", tmp_path / "u.md")
    assert refused.exit_code == 2 and "--beta-prior needs --continuous" in refused.output


def test_ctrl_c_stops_the_candidates_fits_at_once(inputs, tmp_path):
    # The fits run in worker threads, which Ctrl-C does not reach: tune waited for them to
    # finish (106 s in the audit), and without a limit on an auto fit, without end.
    import os
    import signal
    import subprocess
    import sys
    import time
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    command = [sys.executable, "-c", "from geosynth.cli import main; main()", "tune",
               str(inputs["gpkg"]), "--attributes", "y,x1", "--grids", "4x4,5x5",
               "--iterations", "1000000", "--burn-in", "10", "--thin", "2", "--m", "2",
               "--report", str(tmp_path / "t.md")]
    process = subprocess.Popen(command, cwd=root, stderr=subprocess.PIPE, text=True,
                               env=dict(os.environ, PYTHONPATH=str(root)),
                               start_new_session=True)
    time.sleep(8)  # loading, then fitting
    os.killpg(process.pid, signal.SIGINT)
    start = time.monotonic()
    stderr = process.communicate(timeout=120)[1]
    assert process.returncode == 130, stderr
    assert time.monotonic() - start < 20
    assert "Interrupted: nothing was written" in stderr
    assert not (tmp_path / "t.md").exists()


def test_points_outside_the_region_are_dropped_with_drop_outside(inputs, tmp_path):
    # tune refused them and advised --drop-outside, which it did not have.
    region = gpd.read_file(inputs["region"])
    x0, y0, x1, y1 = region.total_bounds
    small = tmp_path / "small.gpkg"
    gpd.GeoDataFrame(geometry=[shapely.box(x0, y0, x1 - 2100, y1)], crs=region.crs).to_file(
        small, engine="pyogrio")
    args = ["tune", inputs["gpkg"], *ARGS, "--grids", "3x3", "--region", small, "--seed", 1,
            *FAST]
    refused = run(*args, "--report", tmp_path / "a.md")
    assert_refused(refused, "fall in no grid cell", "pass --drop-outside to drop them")
    result = run(*args, "--drop-outside", "--report", tmp_path / "b.md")
    assert result.exit_code == 0, result.output
    assert "Warning: candidate '3x3': dropped" in result.output  # whose records, said
    command = shlex.split(result.output.split("Release it with:\n")[1].splitlines()[0])
    assert "--drop-outside" in command
    release = run(*command[1:-2], "--out", tmp_path / "r.gpkg", *FAST)
    assert release.exit_code == 0, release.output


def test_a_too_fine_cell_size_names_the_option_and_no_extent(inputs, tmp_path):
    # The rows and columns were the records' extent over the cell size, i.e. their extent to
    # 1 cm (6 digits each here), and the option was named --cell-size, which tune lacks.
    for option, label in (("--cell-sizes", "0.01 m"), ("--hex-sizes", "hex 0.01 m")):
        result = run("tune", inputs["gpkg"], *ARGS, option, "0.01", *FAST,
                     "--report", tmp_path / "t.md")
        assert_refused(result, "cells, more than the limit of 4,000,000",
                       f"use a larger {option}", f"Candidate {label!r} failed")
        assert not re.search(r"--cell-size(?!s)", result.output)
        error = next(line for line in result.output.splitlines() if line.startswith("Error:"))
        assert re.search(r"about \d\.\de\d+ cells", error)
        assert not re.search(r"\d{3,}", error.replace("4,000,000", ""))  # 2 figures only


def test_one_release_ranks_by_intensity_without_coverage(inputs, tmp_path):
    result = run("tune", inputs["gpkg"], *ARGS, "--grids", "3x3", "--seed", 1, *FAST, "--m", 1,
                 "--report", tmp_path / "t.md")
    assert result.exit_code == 0, result.output
    assert ("the coverage needs --m 2 or more (--m 1 has no coverage): ranking by --utility "
            "intensity_correlation") in result.output


def test_too_few_records_for_a_rectangle_rank_by_intensity_without_coverage(inputs, tmp_path):
    # 15 records cannot fill a coverage rectangle of 20: tune left the coverage out (NaN), and
    # the default --utility coverage then failed after every fit ("no candidate has both").
    small = gpd.read_file(inputs["gpkg"]).iloc[:15]
    small.to_file(tmp_path / "small.gpkg", engine="pyogrio")
    result = run("tune", tmp_path / "small.gpkg", "--attributes", "y", "--grids", "3x3",
                 "--seed", 1, *FAST, "--report", tmp_path / "t.md")
    assert result.exit_code == 0, result.output
    assert "ranking by --utility intensity_correlation" in result.output
    refused = run("tune", tmp_path / "small.gpkg", "--attributes", "y", "--grids", "3x3",
                  "--utility", "coverage", *FAST, "--report", tmp_path / "u.md")
    assert refused.exit_code != 0 and "--utility coverage needs" in refused.output


@pytest.mark.parametrize(("column", "row", "message", "advice"), [
    ("y", 5, "--attributes 'y': gap.gpkg has 1 of 120 records without a value", "dropna"),
    ("geometry", 3, "gap.gpkg: 1 of 120 records have no location", "geometry.isna"),
])
def test_missing_values_and_locations_are_refused_before_any_fit(inputs, tmp_path, column, row,
                                                                 message, advice):
    # A missing y was refused after "Tuning" with pandas advice (gdf.dropna(subset=['y'])), and
    # the coverage note first blamed y for not being binary.
    frame = gpd.read_file(inputs["gpkg"])
    frame.loc[row, column] = None
    frame.to_file(tmp_path / "gap.gpkg", engine="pyogrio")
    result = run("tune", tmp_path / "gap.gpkg", *ARGS, "--grids", "3x3", *FAST,
                 "--report", tmp_path / "t.md")
    assert_refused(result, message)
    assert "Tuning" not in result.output and advice not in result.output
    assert not (tmp_path / "t.md").exists()


def test_outcome_help_says_what_tune_does_with_it():
    # It was evaluate's help ("the coverage table of the evaluation"): tune's outcome must be
    # one of --attributes, and defaults to the first attribute when that is 0/1.
    text = " ".join(run("tune", "--help").output.split())
    help_text = text.split("--outcome COLUMN")[1].split("--quadrants")[0]
    assert "one of --attributes" in help_text and "first attribute" in help_text
    assert "evaluation" not in help_text
    # --region said "Every candidate lattice covers its bounds": --areas candidates do not.
    region_help = text.split("--region FILE")[1].split("--exclude")[0]
    assert "--areas candidates ignore it" in region_help


def test_areas_file_names_are_printed_without_control_characters(inputs, tmp_path):
    # A candidate's label is its --areas file name: the table printed it raw.
    region = gpd.read_file(inputs["region"])
    x0, y0, x1, y1 = region.total_bounds
    xm = (x0 + x1) / 2
    areas = tmp_path / "tracts\x1b[2J.gpkg"
    gpd.GeoDataFrame(geometry=[shapely.box(x0, y0, xm, y1), shapely.box(xm, y0, x1, y1)],
                     crs=region.crs).to_file(areas, engine="pyogrio")
    result = run("tune", inputs["gpkg"], *ARGS, "--areas", areas, "--seed", 1, *FAST,
                 "--report", tmp_path / "t.md")
    assert result.exit_code == 0, result.output
    # In the table and the release command (click strips the raw escape only off a terminal).
    assert result.output.count("tracts?[2J.gpkg") == 2 and "\x1b" not in result.output


def test_identifying_attributes_are_refused_with_advice_tune_can_follow(inputs, tmp_path):
    # Refused after "Tuning", advising --allow-identifying (an option of release, not of tune)
    # and pd.cut.
    result = run("tune", inputs["gpkg"], "--attributes", "y,z", "--grids", "3x3", *FAST,
                 "--report", tmp_path / "t.md")
    assert_refused(result, "--attributes 'z' of points.gpkg has 120 levels among 120 records",
                   "drop it from --attributes")
    for fragment in ("Tuning", "--allow-identifying", "pd.cut"):
        assert fragment not in result.output


@pytest.mark.parametrize("name", ["tune.png", "tune.PNG"])
def test_a_report_named_like_its_r_u_map_is_refused_with_a_fix(inputs, tmp_path, name):
    # --report tune.png was refused as "--report and R-U map of --report name the same file",
    # advising to give each output its own file, which no option does.
    result = run("tune", inputs["gpkg"], *ARGS, "--grids", "3x3", *FAST,
                 "--report", tmp_path / name)
    assert_refused(result, "--report", f"{name}' does not end in .md, .markdown or .txt: the "
                   "report is a Markdown text", "such as report.md")
    assert "give each output its own file" not in result.output
    assert list(tmp_path.iterdir()) == []


def test_report_help_names_the_r_u_map_file_it_writes():
    # "<report>.png" read as tune.md.png; the map of --report tune.md is tune.png.
    text = " ".join(run("tune", "--help").output.split())
    assert "<report>.png" not in text and "tune.md: tune.png" in text


def test_tune_names_input_for_a_pipe(tmp_path):
    # click's exists=True lets a named pipe through; the reader's message named "path".
    fifo = tmp_path / "points.gpkg"
    os.mkfifo(fifo)
    result = run("tune", fifo, *ARGS, "--grids", "3x3", "--report", tmp_path / "t.md")
    assert_refused(result, "INPUT", "is not a regular file")
    assert "path '" not in result.output and "Tuning" not in result.output


def test_continuous_values_that_release_refuses_are_refused_before_any_fit(inputs, tmp_path):
    # Without --beta-prior the fits leave the --continuous column out: a column with an
    # infinite value was tuned, and the release command printed for it failed ("continuous
    # column 'z' has 1 infinite values").
    frame = gpd.read_file(inputs["gpkg"])
    frame.loc[7, "z"] = float("inf")
    frame.to_file(tmp_path / "inf.gpkg", engine="pyogrio")
    result = run("tune", tmp_path / "inf.gpkg", *ARGS, "--continuous", "z", "--grids", "3x3",
                 *FAST, "--report", tmp_path / "t.md")
    assert_refused(result, "--continuous 'z': inf.gpkg has 1 of", "records with an infinite "
                   "value in that column; drop them or impute the values in the file")
    assert "Tuning" not in result.output and not (tmp_path / "t.md").exists()
    released = run("release", tmp_path / "inf.gpkg", "--attributes", "y,x1,x2", "--continuous",
                   "z", "--grid", "3x3", *FAST, "--out", tmp_path / "r.gpkg")
    assert released.exit_code == 2 and "infinite" in released.output  # as release refuses it


def test_one_beta_prior_is_the_prior_of_every_continuous_column(inputs, tmp_path):
    # release reads --beta-prior normal as the prior of every --continuous column; tune gave
    # the candidates a one-prior list, which every fit refused after reading the data.
    frame = gpd.read_file(inputs["gpkg"])
    frame["w"] = 2 * frame["z"] + 1
    frame.to_file(tmp_path / "two.gpkg", engine="pyogrio")
    args = ["tune", tmp_path / "two.gpkg", *ARGS, "--continuous", "z,w", "--grids", "3x3",
            "--seed", 2, *FAST]
    result = run(*args, "--beta-prior", "normal", "--report", tmp_path / "t.md")
    assert result.exit_code == 0, result.output
    words = shlex.split(result.output.split("Release it with:\n")[1].splitlines()[0])
    assert words[words.index("--beta-prior") + 1] == "normal,normal"
    words[words.index("--out") + 1] = str(tmp_path / "r.gpkg")
    released = run(*words[1:])
    assert released.exit_code == 0, released.output
    assert io.read_release(tmp_path / "r.gpkg").metadata["model"]["beta_prior"] == [
        "normal", "normal"]
    refused = run(*args, "--beta-prior", "normal,icar,normal", "--report", tmp_path / "u.md")
    assert_refused(refused, "--beta-prior", "3 priors for 2 --continuous columns")
    assert "Tuning" not in refused.output


@pytest.mark.parametrize(("args", "name"), [(["--grids", "3x3"], "3x3"),
                                            (["--cell-sizes", "2000"], "2000 m")])
def test_an_areas_file_named_like_another_candidate_is_refused_before_any_work(
        inputs, tmp_path, args, name):
    # Two candidates '3x3' were refused after the data and areas were read, advising label=,
    # which the command line does not have.
    areas = tmp_path / name
    areas.write_bytes(inputs["region"].read_bytes())
    result = run("tune", inputs["gpkg"], *ARGS, *args,
                 "--areas", areas, *FAST, "--report", tmp_path / "t.md")
    assert_refused(result, "--areas", f"{name!r} is also the label", "rename or copy the file")
    assert "Tuning" not in result.output and "label=" not in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_the_printed_table_is_marked_internal(inputs, tmp_path):
    # The table on stdout (a true_match_rate of 1/n is one record matched) was printed with
    # no word that, unlike the report beside it, it describes the confidential records.
    result = run("tune", inputs["gpkg"], *ARGS, "--grids", "3x3", "--seed", 1, *FAST,
                 "--report", tmp_path / "t.md")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    heading = next(k for k, line in enumerate(lines) if "true_match_rate" in line)
    assert lines[heading - 1] == ("Candidates (internal: measured on the confidential records "
                                  f"of {inputs['gpkg'].name}; do not publish):")
    assert "All of it is internal, the printed table too" in " ".join(
        run("tune", "--help").output.split())


def test_barriers_cut_every_candidate_and_the_release_command_repeats_them(inputs, tmp_path):
    points = gpd.read_file(inputs["gpkg"])
    x0, y0, x1, y1 = shapely.box(*points.total_bounds).buffer(100).bounds
    river = shapely.LineString([((x0 + x1) / 2, y0), ((x0 + x1) / 2, y1)])
    rivers = tmp_path / "rivers.gpkg"
    gpd.GeoDataFrame(geometry=[river], crs=points.crs).to_file(rivers, layer="rivers",
                                                                engine="pyogrio")
    gpd.GeoDataFrame(geometry=[shapely.box(x0, y0, x0 + 10, y0 + 10)], crs=points.crs).to_file(
        rivers, layer="parks", engine="pyogrio")
    result = run("tune", inputs["gpkg"], *ARGS, "--grids", "4x4", "--region", inputs["region"],
                 "--barriers", rivers, "--seed", 3, *FAST, "--report", tmp_path / "t.md")
    assert result.exit_code == 0, result.output
    # Of the GeoPackage's two layers, its only line layer is read (and said so).
    assert "read its only line layer 'rivers'" in result.output
    command = result.output.split("Release it with:\n")[1].splitlines()[0].strip()
    words = shlex.split(command)
    assert words[words.index("--barriers") + 1] == str(rivers)
    released = run(*words[1:-2], *FAST, "--seed", 3, "--out", tmp_path / "r.gpkg")
    assert released.exit_code == 0, released.output
    assert io.read_release(tmp_path / "r.gpkg").metadata["lattice"]["cut_links"] == 10


@pytest.fixture(scope="module")
def population(inputs, tmp_path_factory):
    """A public raster of positive weights over the region, 20 x 20 pixels."""
    import numpy as np

    from tests.synth.helpers import from_origin, write_raster

    region = gpd.read_file(inputs["region"])
    west, south, east, north = region.total_bounds
    size = (east - west) / 20
    values = np.random.default_rng(4).uniform(1.0, 50.0, size=(20, 20))
    path = tmp_path_factory.mktemp("population") / "population.tif"
    return write_raster(path, values, from_origin(west, north, size, size), crs=region.crs)


def test_weights_place_every_candidate_and_weights_exposure_compares_each_with_it(
        inputs, population, tmp_path):
    result = run("tune", inputs["gpkg"], *ARGS, "--grids", "3x3", "--cell-sizes", "2500",
                 "--region", inputs["region"], "--weights", population, "--weights-exposure",
                 "--seed", 3, *FAST, "--report", tmp_path / "t.md")
    assert result.exit_code == 0, result.output
    assert "Tuning 4 candidate lattice(s)" in result.output
    header = next(line for line in (tmp_path / "t.md").read_text().splitlines()
                  if line.startswith("candidate"))  # the table has a column per candidate
    assert "3x3, weights exposure" in header and "2500 m, weights exposure" in header
    assert header.count("3x3") == 2 and header.count("2500 m") == 2
    command = result.output.split("Release it with:\n")[1].splitlines()[0].strip()
    words = shlex.split(command)
    assert words[words.index("--weights") + 1] == str(population)
    chosen = re.search(r"Recommendation: '([^']+)'", result.output).group(1)
    assert ("--weights-exposure" in words) == chosen.endswith("weights exposure")
    released = run(*words[1:-2], *FAST, "--seed", 3, "--out", tmp_path / "r.gpkg")
    assert released.exit_code == 0, released.output


def test_the_release_command_of_a_weights_exposure_candidate_names_the_raster():
    twin = Candidate(cell_size=250.0, weights_exposure=True)
    words = shlex.split(release_command("p.gpkg", ["y"], twin, weights="people.tif"))
    assert words[words.index("--weights"):words.index("--weights") + 3] == [
        "--weights", "people.tif", "--weights-exposure"]
    plain = shlex.split(release_command("p.gpkg", ["y"], Candidate(cell_size=250.0),
                                        weights="people.tif"))
    assert "--weights-exposure" not in plain and "people.tif" in plain
    with pytest.raises(ValueError, match="needs the weights raster"):
        release_command("p.gpkg", ["y"], twin)


def test_weights_exposure_needs_weights_and_counts_its_candidates(inputs, tmp_path):
    result = run("tune", inputs["gpkg"], *ARGS, "--grids", "3x3", "--weights-exposure",
                 "--report", tmp_path / "x.md")
    assert_refused(result, "--weights-exposure takes each cell's total of the --weights",
                   "add --weights RASTER")
    sizes = ",".join(str(1000 + i) for i in range(51))
    result = run("tune", inputs["gpkg"], *ARGS, "--cell-sizes", sizes, "--weights-exposure",
                 "--weights", inputs["region"], "--report", tmp_path / "x.md")
    assert_refused(result, "--cell-sizes (51), --weights-exposure (51):",
                   "102 candidates, more than the limit of 100")


def test_a_weights_raster_tune_cannot_read_is_refused_once_before_tuning(inputs, population,
                                                                       tmp_path):
    text = tmp_path / "notraster.tif"
    text.write_text("not a raster")
    result = run("tune", inputs["gpkg"], *ARGS, "--grids", "3x3,4x4", "--weights", text,
                 "--report", tmp_path / "x.md")
    assert_refused(result, "--weights notraster.tif: weights ", "cannot be opened as a raster",
                   "pass the path of a GeoTIFF (or another GDAL raster)")
    assert "rasterio dataset" not in result.output and "Candidate" not in result.output
    assert "Tuning" not in result.output
    import rasterio

    with rasterio.open(population) as raster:
        values, profile = raster.read(1), raster.profile
    profile.update(crs="EPSG:4326")
    other = tmp_path / "degrees.tif"
    with rasterio.open(other, "w", **profile) as out:
        out.write(values, 1)
    result = run("tune", inputs["gpkg"], *ARGS, "--grids", "3x3", "--weights", other,
                 "--report", tmp_path / "x.md")
    assert_refused(result, "--weights degrees.tif: weights raster CRS EPSG:4326 differs from")
    assert "Tuning" not in result.output
