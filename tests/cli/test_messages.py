"""Command-line wording: options instead of API parameters, clear refusals, what a user sees."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import shapely

from geosynth import io
from geosynth.cli.helpers import summary_block
from geosynth.cli.messages import OPTION_OF_PARAMETER, cli_message
from tests.cli.helpers import FAST, assert_refused, run

ARGS = ["--attributes", "y,x1", "--grid", "4x4", *FAST]
CSV = ["--x", "east", "--y", "north", "--crs", "EPSG:31983"]
#: Python spellings that must never reach a command-line user.
API_SPELLINGS = re.compile(r"\b(?:pad|gdf|n_iter|burn_in|cell_size|allow_identifying|n_public)\b"
                           r"|\b\w+=|Grid\.\w+\(|\(CLI:|in Python")


def assert_cli_wording(text):
    assert not API_SPELLINGS.search(text), text


# ---------------------------------------------------------------------- cli_message
@pytest.mark.parametrize(
    ("message", "expected"),
    [
        ("n_iter (10) - burn_in (10) leaves no draw at thin = 2; raise n_iter or lower burn_in",
         "--iterations (10) - --burn-in (10) leaves no draw at --thin 2; raise --iterations or "
         "lower --burn-in"),
        ("layer='roads' (CLI: --layer): cases.gpkg has no such layer; its layers are ['a']",
         "--layer 'roads': cases.gpkg has no such layer; its layers are ['a']"),
        ("a.gpkg has 2 layers; pass layer= (CLI: --layer) to choose one",
         "a.gpkg has 2 layers; pass --layer to choose one"),
        ("reading a.csv needs them: pass x=, y= and crs= (CLI: --x, --y, --crs); missing: x",
         "reading a.csv needs them: pass --x, --y and --crs; missing: x"),
        ("out.gpkg exists; pass overwrite=True (CLI: --overwrite) to replace it",
         "out.gpkg exists; pass --overwrite to replace it"),
        ("x.gpkg was created meanwhile (pass overwrite=True, CLI: --overwrite, to replace it)",
         "x.gpkg was created meanwhile (pass --overwrite to replace it)"),
        ('12 of 120 points fall in no grid cell; pass outside="drop" to drop them',
         "12 of 120 points fall in no grid cell; pass --drop-outside to drop them"),
        ("column 'id' is unique; pass allow_identifying=True (CLI: --allow-identifying) only if "
         "public", "column 'id' is unique; pass --allow-identifying only if public"),
        ("gdf has no records, so the lattice bounds cannot be derived from it; give the study "
         "region (Grid.from_points(..., region=...), CLI: --region) or explicit public bounds "
         "with Grid.regular(bounds, ...)",
         "cases.csv has no records, so the lattice bounds cannot be derived from it; give the "
         "study region (--region)"),
        ("gdf has a single record (zero width and height): no bounds; give the study region "
         "(Grid.from_points(..., region=...), CLI: --region), or use more records (in Python, "
         "pad > 0 also gives the lattice an extent)",
         "cases.csv has a single record (zero width and height): no bounds; give the study "
         "region (--region), or use more records"),
        ("the points span zero width or height (bounds (0, 0, 0, 1)); pass pad > 0 to give the "
         "lattice an extent", "the points span zero width or height (bounds (0, 0, 0, 1))"),
        ("pass exactly one of shape=(nrows, ncols) or cell_size=(dx, dy), got both",
         "pass exactly one of --grid (nrows, ncols) or --cell-size (dx, dy), got both"),
        ("m=5 releases need 5 distinct posterior draws; ask for fewer releases",
         "--m 5 releases need 5 distinct posterior draws; ask for fewer releases"),
        ("epsilon=1e-300 is so small that the noise overflows; raise epsilon",
         "--epsilon 1e-300 is so small that the noise overflows; raise --epsilon"),
        ("cannot read z.gpkg: 'z.gpkg' not recognized as being in a supported file format.; It "
         "might help to specify the correct driver explicitly by prefixing the file path with "
         "'<DRIVER>:', e.g. 'CSV:path'.",
         "cannot read z.gpkg: 'z.gpkg' not recognized as being in a supported file format (give "
         "a GeoPackage, GeoParquet, shapefile, GeoJSON, FlatGeobuf, zip or CSV file)"),
        ("cannot read t.gpkg: sqlite3_prepare_v2(SELECT COUNT(*) FROM t WHERE a IN ('b')) "
         "failed: database disk image is malformed; database disk image is malformed",
         "cannot read t.gpkg: the file is damaged or truncated (database disk image is "
         "malformed)"),
        ("the region is 3 km away; the points and the region do not overlap",
         "the region is 3 km away; the points and the region do not overlap"),
        # combination labels are the data's names: 'y=0,m=2' read as "--y 0,--m 2"
        ("2 attribute combination(s) have fewer than 3 records ('y=0,x1=2', 'a=1,m=2'); the "
         "record's m=2 releases; not converged: tau_phi[y=1]", "2 attribute combination(s) "
         "have fewer than 3 records ('y=0,x1=2', 'a=1,m=2'); the record's --m 2 releases; not "
         "converged: tau_phi[y=1]"),
        # an option left out, not "--weights None"
        ("check the nodata value, or pass weights=None for uniform placement",
         "check the nodata value, or drop --weights for uniform placement"),
        # no option sets max_bytes: its value is the memory limit
        ("5 release(s) could need 3 GiB, over max_bytes = 2 GiB; make fewer releases (m=5) "
         "(in Python, or raise max_bytes). Nothing was spent",
         "5 release(s) could need 3 GiB, over the memory limit of 2 GiB; make fewer releases "
         "(--m 5). Nothing was spent"),
        # "raise max_bytes" named a parameter no option sets
        ("n_iter='auto' with target_ess=1e+06 over 2 chains keeps up to 5 draws per chain, but "
         "max_bytes = 2 GiB holds 3; raise max_bytes, lower target_ess, or use a coarser grid",
         "--iterations 'auto' with --target-ess 1e+06 over 2 chains keeps up to 5 draws per "
         "chain, but the memory limit of 2 GiB holds 3; lower --target-ess, or use a coarser "
         "grid"),
        ("sep=';;' must be one character (2 characters); e.g. sep=',' or ';' (CLI: --sep)",
         "--sep ';;' must be one character (2 characters); e.g. --sep ',' or ';'"),
    ],
    ids=["iterations", "layer", "bare-layer", "csv-columns", "overwrite", "inner-note",
         "drop-outside", "allow-identifying", "no-records", "single-record-pad", "pad-only",
         "shape-cell-size", "m", "epsilon", "gdal-advice", "sqlite", "untouched", "labels",
         "none", "memory-limit", "raise-memory-limit", "sep"],
)
def test_cli_message_names_options_not_parameters(message, expected):
    assert cli_message(message, {"gdf": "cases.csv"}) == expected


def test_cli_message_names_flags_and_the_hexagons_side():
    # --link-islands is a flag: "--link-islands 'nearest'" is no command line.
    islands = cli_message("To connect them use islands='nearest' (links each to its nearest area)")
    assert islands == "To connect them use --link-islands (links each to its nearest area)"
    side = cli_message("cell_size must be a positive number, got 0.001", {"--cell-size":
                                                                          "--hex-size"})
    assert side == "--hex-size must be a positive number, got 0.001"
    # The note names the hexagons' option: "--hex-size 400 (--hex-size)" was shown.
    coarser = cli_message("choose larger cells, e.g. cell_size=400 (CLI: --hex-size), about one",
                          {"--cell-size": "--hex-size"})
    assert coarser == "choose larger cells, e.g. --hex-size 400, about one"


def test_cli_message_gives_the_ogr2ogr_command_for_python_s_reprojection():
    # "gdf.to_crs(gdf.estimate_utm_crs())" reached the terminal as
    # "gdf.to_crs(gdf.estimate_utm_crs)": the empty brackets stripped, and Python.
    from geosynth.lattice import Grid

    message = ("reproject the points to a CRS made for the area, e.g. "
               "gdf.to_crs(gdf.estimate_utm_crs())")
    assert cli_message(message, {"gdf": "merc.gpkg"}) == (
        "reproject the points to a CRS made for the area, e.g. ogr2ogr -t_srs EPSG:326NN "
        "projected.gpkg 'merc.gpkg' (NN: the area's UTM zone; 327NN south of the equator)")
    # a name with a space is quoted for the shell; a CSV file needs its columns and CRS named
    shown = cli_message(message, {"gdf": "my cases.csv"})
    assert "projected.gpkg 'my cases.csv'" in shown and "-oo X_POSSIBLE_NAMES=" in shown
    with pytest.warns(Warning) as caught:  # the lattice's own warning reads so too
        Grid.regular((-4_900_000, -2_300_000, -4_890_000, -2_290_000), shape=(2, 2),
                     crs="EPSG:3857")
    (warned,) = [str(w.message) for w in caught if "scales lengths" in str(w.message)]
    assert "ogr2ogr -t_srs" in cli_message(warned, {"gdf": "merc.gpkg"})


@pytest.mark.parametrize("name", [r"data\cases.gpkg", r"run\1.gpkg", r"a\g<0>.gpkg"])
def test_cli_message_keeps_a_file_name_with_backslashes(name):
    # The name was a re.sub template: "bad escape \c" (a traceback in place of the message)
    # or, for \1 and \g<0>, another name than the file's.
    assert cli_message("gdf has no CRS", {"gdf": name}) == f"{name} has no CRS"


def test_input_named_with_a_backslash_is_refused_with_a_message(inputs, tmp_path):
    source = tmp_path / "data\\cases.gpkg"
    source.write_bytes(Path(inputs["gpkg"]).read_bytes())
    result = run("release", source, "--attributes", "y,nope", "--grid", "4x4", *FAST,
                 "--out", tmp_path / "o.gpkg")
    assert_refused(result, "--attributes", "data\\cases.gpkg has no column 'nope'")


def test_every_parameter_maps_to_an_option_of_release_or_tune():
    options = set()
    for command in ("release", "tune"):
        options |= set(re.findall(r"--[a-z][\w-]*", run(command, "--help").output))
    assert set(OPTION_OF_PARAMETER.values()) <= options


# ---------------------------------------------------------------------- CLI refusals
@pytest.fixture(scope="module")
def csv_files(inputs, tmp_path_factory):
    """CSV files a hostile tester would try: header only, one record, identical points."""
    folder = tmp_path_factory.mktemp("csv")
    table = pd.read_csv(inputs["csv"])
    paths = {"header": folder / "header.csv", "one": folder / "one.csv",
             "same": folder / "same.csv"}
    table.iloc[:0].to_csv(paths["header"], index=False)
    table.iloc[:1].to_csv(paths["one"], index=False)
    pd.concat([table.iloc[:1]] * 5).to_csv(paths["same"], index=False)
    return paths


@pytest.mark.parametrize(
    ("name", "fragments"),
    [("header", ["header.csv", "no records"]),
     ("one", ["single record", "--region"]),
     ("same", ["one point", "--region"])],
)
def test_degenerate_inputs_name_the_cli_fix(csv_files, tmp_path, name, fragments):
    result = run("release", csv_files[name], *CSV, *ARGS, "--out", tmp_path / "o.gpkg")
    assert_refused(result, *fragments)
    assert_cli_wording(result.output.split("Error:", 1)[1])
    assert list(tmp_path.iterdir()) == []


def test_missing_layer_names_the_option(inputs, tmp_path):
    result = run("release", inputs["gpkg"], *ARGS, "--layer", "roads", "--out",
                 tmp_path / "o.gpkg")
    assert_refused(result, "--layer 'roads'")
    assert_cli_wording(result.output.split("Error:", 1)[1])


def test_points_outside_the_region_say_they_do_not_overlap(inputs, tmp_path):
    far = tmp_path / "far.gpkg"
    gpd.GeoDataFrame(geometry=[shapely.box(0, 0, 1000, 1000)], crs="EPSG:31983").to_file(far)
    result = run("release", inputs["gpkg"], *ARGS, "--region", far, "--out",
                 tmp_path / "o.gpkg")
    assert_refused(result, "do not overlap", "CRS")
    assert_cli_wording(result.output.split("Error:", 1)[1])
    assert sorted(p.name for p in tmp_path.iterdir()) == ["far.gpkg"]


@pytest.mark.parametrize(
    ("content", "fragments"),
    [("{not json", ["--levels-file", "is not valid JSON", "line 1", '{"sex"']),
     (b"\xff\xfe\x00binary", ["--levels-file", "not a JSON text file"]),
     ('["y", "x1"]', ["--levels-file", "must hold a JSON object"]),
     ('{"y": [0, 1]}', ["--levels-file", "no levels for the --attributes", "x1"]),
     ('{"y": [], "x1": [1, 2]}', ["--levels-file", "lists no level for ['y']"])],
    ids=["not-json", "binary", "list", "missing-attribute", "empty-list"],
)
def test_bad_levels_file_is_refused_before_any_work(inputs, tmp_path, content, fragments):
    levels = tmp_path / "levels.json"
    if isinstance(content, bytes):
        levels.write_bytes(content)
    else:
        levels.write_text(content)
    result = run("release", inputs["gpkg"], *ARGS, "--region", inputs["region"], "--epsilon", 1,
                 "--levels-file", levels, "--out", tmp_path / "o.gpkg")
    assert_refused(result, *fragments)
    assert "Fitting" not in result.output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["levels.json"]


@pytest.mark.parametrize(
    ("args", "fragments"),
    [(["--iterations", 10, "--burn-in", 10], ["--iterations 10", "--burn-in 10", "no draw"]),
     (["--iterations", 40, "--burn-in", 10, "--thin", 20, "--m", 5],
      ["--m 5", "keeps only 2", "--thin"]),
     (["--public-total", 100], ["--public-total", "--epsilon"])],
    ids=["no-draw", "too-few-draws", "public-total-without-epsilon"],
)
def test_run_options_are_checked_before_reading(inputs, tmp_path, args, fragments):
    result = run("release", inputs["gpkg"], "--attributes", "y", "--grid", "4x4", *args,
                 "--out", tmp_path / "o.gpkg")
    assert_refused(result, *fragments)
    assert "Read " not in result.output
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------- what a release says
def test_lattice_from_the_points_recommends_region(inputs, tmp_path):
    result = run("release", inputs["gpkg"], *ARGS, "--out", tmp_path / "a.gpkg")
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "Warning: no --region" in text and "pass --region" in text
    assert "reveals the extent of the points to within" in text

    result = run("release", inputs["gpkg"], *ARGS, "--region", inputs["region"],
                 "--out", tmp_path / "b.gpkg")
    assert result.exit_code == 0, result.output
    assert "no --region" not in result.output


@pytest.fixture(scope="module")
def with_ids(inputs, tmp_path_factory):
    """The points with an ID column: 10 records with their own ID, the others sharing one."""
    path = tmp_path_factory.mktemp("ids") / "ids.gpkg"
    points = gpd.read_file(inputs["gpkg"])
    points["stop_id"] = [f"S{k:05d}" if k < 10 else "other" for k in range(len(points))]
    points.to_file(path)
    return path


def test_identifying_attribute_needs_allow_identifying(with_ids, tmp_path):
    result = run("release", with_ids, "--attributes", "y,stop_id", "--grid", "4x4", *FAST,
                 "--out", tmp_path / "o.gpkg")
    assert_refused(result, "stop_id", "--allow-identifying")
    assert "allow_identifying" not in result.output
    assert list(tmp_path.iterdir()) == []

    result = run("release", with_ids, "--attributes", "y,stop_id", "--grid", "4x4", *FAST,
                 "--allow-identifying", "--out", tmp_path / "o.gpkg")
    assert result.exit_code == 0, result.output
    assert "--allow-identifying" in result.output  # the warning says what was kept
    assert "stop_id" in io.read_release(tmp_path / "o.gpkg").releases[0].columns


def test_public_total_fixes_the_size_of_a_dp_release(inputs, tmp_path):
    result = run("release", inputs["gpkg"], "--attributes", "y", "--grid", "3x3",
                 "--region", inputs["region"], "--epsilon", 1, "--levels-file",
                 inputs["levels"], "--public-total", 100, *FAST, "--out", tmp_path / "dp.gpkg")
    assert result.exit_code == 0, result.output
    written = io.read_release(tmp_path / "dp.gpkg")
    assert written.metadata["n_records"] == [100, 100]
    assert written.metadata["n_public"] == 100


def test_report_prints_ess_as_integers_and_r_hat_with_3_decimals(inputs, tmp_path):
    result = run("release", inputs["gpkg"], *ARGS, "--out", tmp_path / "o.gpkg",
                 "--report", tmp_path / "report.md")
    assert result.exit_code == 0, result.output
    block = (tmp_path / "report.md").read_text().split("## Fit summary")[1].split("```")[1]
    header, *rows = block.strip().splitlines()
    columns = header.split()
    assert columns[-3:] == ["ess_bulk", "ess_tail", "r_hat"]
    for row in rows:
        *_, ess_bulk, ess_tail, r_hat = row.split()
        assert re.fullmatch(r"[\d,]+|NaN", ess_bulk) and re.fullmatch(r"[\d,]+|NaN", ess_tail)
        assert re.fullmatch(r"\d+\.\d{3}|NaN", r_hat), row


def test_summary_block_formats():
    summary = pd.DataFrame({"mean": [0.12345, 2.0], "ess_bulk": [301.0, np.nan],
                            "ess_tail": [1234.4, 5.6], "r_hat": [1.0049, np.nan]},
                           index=["mu", "tau_eps"])
    lines = summary_block(summary).splitlines()
    assert lines[0] == lines[-1] == "```"
    assert lines[2].split() == ["mu", "0.123", "301", "1,234", "1.005"]
    assert lines[3].split() == ["tau_eps", "2.000", "NaN", "6", "NaN"]


def test_console_script_prints_no_arviz_future_warning(inputs, tmp_path):
    """arviz warns once a day per cache folder: a fresh cache folder is a fresh machine."""
    script = Path(sys.executable).with_name("geosynth")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONWARNINGS"}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    result = subprocess.run(
        [str(script), "-q", "release", str(inputs["gpkg"]), *map(str, ARGS),
         "--out", str(tmp_path / "o.gpkg"), "--report", str(tmp_path / "r.md")],
        capture_output=True, text=True, env=env, timeout=600,
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "cache" / "arviz").exists()  # arviz was imported with a fresh stamp
    assert "FutureWarning" not in result.stderr and "ArviZ" not in result.stderr
    assert json.loads(io.audit_path(tmp_path / "o.gpkg").read_text())["seeds"]


@pytest.mark.parametrize(("message", "expected"), [
    ("n_iter.gpkg has no CRS; raise n_iter", "n_iter.gpkg has no CRS; raise --iterations"),
    ("data/burn_in.csv: lower burn_in", "data/burn_in.csv: lower --burn-in"),
    ("x=1.gpkg is in degrees; pass x='lon'", "x=1.gpkg is in degrees; pass --x 'lon'"),
])
def test_file_names_are_not_rewritten_as_options(message, expected):
    # A file named like a parameter was printed as "--iterations.gpkg" or "--x 1.gpkg".
    assert cli_message(message) == expected


@pytest.mark.parametrize(("message", "expected"), [
    ("a.csv is a CSV file; omit layer", "a.csv is a CSV file; omit --layer"),
    ("--crs 'EPSG:4326' contradicts the CRS of a.gpkg (EPSG:31983); omit crs to use the "
     "file's CRS", "--crs 'EPSG:4326' contradicts the CRS of a.gpkg (EPSG:31983); omit --crs "
     "to use the file's CRS"),
    ("a.gpkg is a GeoPackage file with its own geometry; omit x and y (CLI: --x/--y)",
     "a.gpkg is a GeoPackage file with its own geometry; omit --x and --y"),
    ("no room; raise thin, lower n_iter or chains, use a coarser grid",
     "no room; raise --thin, lower --iterations or --chains, use a coarser grid"),
    ("Use seeds only in tests; omit seed for a release.",
     "Use seeds only in tests; omit --seed for a release."),
    ("omit layer.gpkg; drop it", "omit layer.gpkg; drop it"),  # a file name, no parameter
])
def test_parameters_named_by_advice_become_options(message, expected):
    # "omit layer", "omit crs", "lower n_iter or chains": a word-like parameter the advice names
    # stayed in its Python spelling, naming no option the user could find in --help.
    assert cli_message(message) == expected


def test_the_exact_intensity_warning_names_the_flag_once_on_the_command_line():
    # "(--include-intensity, --include-intensity, write_intensity_geotiff, ...)": the message
    # named the flag and the Python setting, which the command line rewrites to the same flag.
    import warnings
    from types import SimpleNamespace

    from geosynth.cli.messages import cli_message
    from geosynth.io._files import warn_exact_intensity

    fit = SimpleNamespace(noise_scale=None, counts=SimpleNamespace(counts=np.ones((4, 2))))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warn_exact_intensity(fit, np.ones((4, 2)), "the grid layer", stacklevel=1)
    (message,) = [str(w.message) for w in caught]
    assert "include_intensity=True" in message
    assert cli_message(message).count("--include-intensity") == 1


@pytest.mark.parametrize(("message", "names", "expected"), [
    # A layer called 'pad': the clause listing the layers was dropped as advice about pad.
    ("layer='roads' (CLI: --layer): c.gpkg has no such layer; its layers are ['pad', 'roads2']",
     {}, "--layer 'roads': c.gpkg has no such layer; its layers are ['pad', 'roads2']"),
    ("--region-layer 'x': --region c.gpkg has 1 layer: 'old (pad)' (Polygon), none of them "
     "named so; give one of those names", {},
     "--region-layer 'x': --region c.gpkg has 1 layer: 'old (pad)' (Polygon), none of them "
     "named so; give one of those names"),
    # A column or layer called 'gdf' became the name of the input file.
    ("--attributes 'gdf' is not a column of gdf; available columns: ['gdf', 'y']",
     {"gdf": "c.csv"},
     "--attributes 'gdf' is not a column of c.csv; available columns: ['gdf', 'y']"),
    # A layer called 'drop m' became 'drop --m'.
    ("c.gpkg has 2 layers: 'drop m' (Polygon), 'x' (Point); drop m", {},
     "c.gpkg has 2 layers: 'drop m' (Polygon), 'x' (Point); drop --m"),
    # Outside quoted values the advice about pad still goes.
    ("the records of gdf (with pad) span more; use x, or pad it; z", {"gdf": "c.csv"},
     "the records of c.csv span more; use x; z"),
])
def test_quoted_names_of_the_data_are_not_rewritten(message, names, expected):
    assert cli_message(message, names) == expected


def test_polygon_layers_named_like_parameters_reach_the_user_intact(inputs, tmp_path):
    region = gpd.read_file(inputs["region"])
    path = tmp_path / "city.gpkg"
    for layer in ("pad", "gdf", "n_iter", "m=2"):
        region.to_file(path, layer=layer, engine="pyogrio")
    result = run("release", inputs["gpkg"], *ARGS, "--region", path, "--out",
                 tmp_path / "o.gpkg")
    assert_refused(result, "--region city.gpkg has 4 layers: 'pad' (Polygon), 'gdf' (Polygon), "
                   "'n_iter' (Polygon), 'm=2' (Polygon); 4 of them of polygons: add "
                   "--region-layer LAYER to choose the one to read")
    result = run("release", inputs["gpkg"], *ARGS, "--region", path, "--region-layer", "pads",
                 "--out", tmp_path / "o.gpkg")
    assert_refused(result, "--region-layer 'pads': --region city.gpkg has 4 layers: 'pad' "
                   "(Polygon), 'gdf' (Polygon), 'n_iter' (Polygon), 'm=2' (Polygon), none of "
                   "them named so; give one of those names")
