"""Helpers of the subcommands: outputs that cannot be written are refused naming the option."""

import os
import subprocess

import pytest

from geosynth.cli.helpers import check_outputs
from geosynth.errors import InputError
from tests.cli.helpers import assert_refused, run


def test_output_name_too_long_is_refused_naming_the_option(tmp_path):
    # is_dir() raised "[Errno 36] File name too long", an OSError naming no option.
    long_name = tmp_path / ("a" * 300 + ".md")
    with pytest.raises(InputError, match=r"^--report .*longer than the file system allows; "
                       r"choose a shorter name"):
        check_outputs({"--report": long_name}, overwrite=False)


def test_output_folder_name_too_long_is_refused_by_the_command(written_release, tmp_path):
    report = tmp_path / ("f" * 300) / "report.md"
    result = run("evaluate", written_release, written_release, "--report", report)
    assert_refused(result, "--report", "choose a shorter name")
    assert list(tmp_path.iterdir()) == []


def test_output_through_a_loop_of_symbolic_links_is_refused(tmp_path):
    # resolve() raised RuntimeError("Symlink loop from ..."): a traceback.
    os.symlink("loop", tmp_path / "loop")
    with pytest.raises(InputError, match=r"^--map .*points back to itself"):
        check_outputs({"--map": tmp_path / "loop" / "review.html"}, overwrite=False)


@pytest.mark.parametrize("name", ["my cases (2).gpkg", "a;touch pwned.gpkg", "$(id)`x`.gpkg",
                                  "it's.gpkg"])
def test_the_ogr2ogr_advice_quotes_the_file_name(name, tmp_path):
    # The command was printed unquoted: pasted, "my cases (2).gpkg" was a shell syntax error and
    # "a;touch pwned.gpkg" ran a second command.
    import shlex

    import geopandas as gpd
    import shapely

    from geosynth.cli.helpers import check_projected
    from geosynth.errors import CRSError

    points = gpd.GeoDataFrame(geometry=[shapely.Point(-46.6, -23.5)], crs="EPSG:4326")
    with pytest.raises(CRSError) as caught:
        check_projected(points, name)
    command = str(caught.value).split("(ogr2ogr ")[1].rsplit(")", 1)[0]
    assert shlex.split(command) == ["-t_srs", "EPSG:32723", "projected.gpkg", name]
    # As a shell reads it when pasted: no substitution, no second command.
    shell = subprocess.run(["sh", "-c", f"printf '%s\\n' {command}"], capture_output=True,
                           text=True, check=False, cwd=tmp_path)
    assert shell.stdout.splitlines() == ["-t_srs", "EPSG:32723", "projected.gpkg", name]


def test_the_ogr2ogr_advice_shows_no_control_character():
    import geopandas as gpd
    import shapely

    from geosynth.cli.helpers import check_projected
    from geosynth.errors import CRSError

    points = gpd.GeoDataFrame(geometry=[shapely.Point(-46.6, -23.5)], crs="EPSG:4326")
    with pytest.raises(CRSError) as caught:
        check_projected(points, "cases\x1b[2J.gpkg")
    assert "\x1b" not in str(caught.value) and "cases?[2J.gpkg" in str(caught.value)


@pytest.mark.parametrize("name", ["x=1.gpkg", "n_iter.gpkg", "my cases.gpkg"])
def test_the_ogr2ogr_advice_names_the_file_through_the_command(inputs, tmp_path, name):
    # The command line rewords messages (x=... is --x, n_iter is --iterations): the advice
    # said "ogr2ogr ... projected.gpkg --x 1.gpkg" for the file x=1.gpkg.
    import shlex
    import shutil

    shutil.copy(inputs["wgs84"], tmp_path / name)
    result = run("tune", tmp_path / name, "--attributes", "y,x1", "--grids", "3x3",
                 "--report", tmp_path / "t.md")
    assert_refused(result, "geographic CRS EPSG:4326")
    command = result.output.split("(ogr2ogr ")[1].split(")\n")[0]
    assert shlex.split(command)[-2:] == ["projected.gpkg", name]


@pytest.mark.parametrize("command", ["tune", "release"])
def test_the_ogr2ogr_advice_for_a_csv_of_degrees_reads_its_points(tmp_path, command):
    # "ogr2ogr -t_srs EPSG:32723 projected.gpkg cases.csv": GDAL reads no geometry from a CSV
    # without its columns and CRS named, so the advice wrote a table without points. Run the
    # advised command through GDAL (pyogrio) and read its output as the advice says.
    import shlex

    import numpy as np
    import pandas as pd
    import pyogrio

    from geosynth.io import read_points

    rng = np.random.default_rng(3)
    pd.DataFrame({"lon": -46.6 + rng.uniform(0, 0.05, 40), "lat": -23.5 + rng.uniform(0, 0.05, 40),
                  "sex": rng.choice(["f", "m"], 40)}).to_csv(tmp_path / "cases.csv", sep=";",
                                                            index=False)
    sizes = ["--cell-sizes", "1000", "--report", tmp_path / "t.md"] if command == "tune" else [
        "--cell-size", "1000", "--out", tmp_path / "r.gpkg"]
    result = run(command, tmp_path / "cases.csv", "--x", "lon", "--y", "lat", "--crs",
                 "EPSG:4326", "--sep", ";", "--attributes", "sex", *sizes)
    assert_refused(result, "geographic CRS EPSG:4326",
                   "then give projected.gpkg without --x, --y and --crs")
    words = shlex.split(" ".join(result.output.split("(ogr2ogr ")[1].split(";")[0].split()))
    *options, target, source = words
    pairs = dict(zip(options[::2], options[1::2], strict=True))
    open_options = dict(value.split("=", 1) for flag, value in zip(
        options[::2], options[1::2], strict=True) if flag == "-oo")  # several -oo: not pairs
    read = pyogrio.read_dataframe(tmp_path / source, **open_options)
    read.set_crs(pairs["-s_srs"]).to_crs(pairs["-t_srs"]).to_file(tmp_path / target)
    projected = read_points(tmp_path / target)
    assert projected.crs.to_string() == "EPSG:32723" and len(projected) == 40
    assert list(projected.columns) == ["sex", "geometry"]  # no degrees left as columns
    assert projected.geometry.x.between(3e5, 4e5).all()


@pytest.mark.parametrize("command", ["tune", "release"])
def test_points_in_a_crs_in_feet_are_refused_with_the_reprojection(inputs, tmp_path, command):
    # EPSG:2227 is in US survey feet: "--cell-size 500" made cells of 500 ft (152 m), which
    # the output called "500 x 500 m", closer to the records than the analyst asked for.
    import geopandas as gpd

    feet = tmp_path / "feet.gpkg"
    points = gpd.read_file(inputs["gpkg"])
    x0, y0 = points.total_bounds[:2]  # moved to the San Francisco Bay, in feet
    moved = points.geometry.translate(6_000_000 - x0, 2_100_000 - y0)
    points.set_geometry(moved).set_crs(2227, allow_override=True).to_file(feet)
    args = (["--grids", "3x3", "--report", tmp_path / "t.md"] if command == "tune" else
            ["--cell-size", "500", "--out", tmp_path / "r.gpkg"])
    result = run(command, feet, "--attributes", "y,x1", *args)
    assert_refused(result, "feet.gpkg is in EPSG:2227, whose unit is the US survey foot "
                   "(0.3048", "and every distance geosynth reports are metres",
                   "ogr2ogr -t_srs EPSG:")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["feet.gpkg"]


def test_an_output_with_control_characters_is_refused_naming_the_option(inputs, tmp_path):
    # "the output path '...' contains control characters" named no option.
    result = run("tune", inputs["gpkg"], "--attributes", "y,x1", "--grids", "3x3",
                 "--report", tmp_path / "tune\nreport.md")
    assert_refused(result, "--report: the output path", "contains control characters")
    assert "Tuning" not in result.output and list(tmp_path.iterdir()) == []


def test_report_tables_show_labels_without_control_characters():
    # A level holding a line break and an escape sequence (ESC [2J clears a terminal) was
    # written raw into the report's fit summary.
    import pandas as pd

    from geosynth.cli.helpers import summary_block, text_block

    table = pd.DataFrame({"mean": [1.0], "ess_bulk": [100.0]},
                         index=["alpha[x2=multi\nline\x1b[2J]"])
    for block in (summary_block(table), text_block(table)):
        assert "alpha[x2=multi?line?[2J]" in block and "\x1b" not in block
        assert block.count("\n") == 4  # fence, header, one row, fence
    fenced = table.rename(index={table.index[0]: "alpha[x2=```]"})  # closed the fence
    for block in (summary_block(fenced), text_block(fenced)):
        assert block.startswith("````\n") and block.endswith("\n````\n")
