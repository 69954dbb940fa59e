"""`geosynth release --areas FILE [--area-id COLUMN]` and `--hex-size METRES`."""

import os
import shlex

import geopandas as gpd
import numpy as np
import pytest
import shapely

from geosynth import io
from tests.cli.helpers import FAST, assert_refused, run

GPKG_ARGS = ["--attributes", "y,x1"]


@pytest.fixture(scope="module")
def areas(inputs, tmp_path_factory):
    """Nine districts tiling the scenario region, with a public code and a private key."""
    region = gpd.read_file(inputs["region"])
    x0, y0, x1, y1 = region.total_bounds
    xs, ys = np.linspace(x0, x1, 4), np.linspace(y0, y1, 4)
    boxes = [shapely.box(xs[i], ys[j], xs[i + 1], ys[j + 1]) for j in range(3) for i in range(3)]
    frame = gpd.GeoDataFrame({"district": [f"D{k}" for k in range(9)]}, geometry=boxes,
                             crs=region.crs)
    path = tmp_path_factory.mktemp("areas") / "districts.gpkg"
    frame.to_file(path, engine="pyogrio")
    return path


def test_release_on_areas_writes_the_areas_without_their_ids(inputs, areas, tmp_path):
    out = tmp_path / "areas.gpkg"
    result = run("release", inputs["gpkg"], *GPKG_ARGS, "--areas", areas, "--area-id",
                 "district", "--seed", 2, *FAST, "--out", out)
    assert result.exit_code == 0, result.output
    assert "Lattice: 9 areas (queen contiguity, 1 component(s))" in result.output
    assert "no --region" not in result.output  # the areas are public bounds
    release = io.read_release(out)
    assert release.metadata["lattice"]["kind"] == "areal"
    assert release.metadata["lattice"]["shape"] is None
    assert len(release.grid) == 9 and "area_id" not in release.grid.columns
    public = run("release", inputs["gpkg"], *GPKG_ARGS, "--areas", areas, "--area-id",
                 "district", "--public-area-ids", "--seed", 2, *FAST,
                 "--out", tmp_path / "public.gpkg")
    assert public.exit_code == 0, public.output
    grid = io.read_release(tmp_path / "public.gpkg").grid
    assert grid["area_id"].tolist() == [f"D{k}" for k in range(9)]


def test_release_on_hexagons_and_dp_on_public_areas(inputs, areas, tmp_path):
    result = run("release", inputs["gpkg"], *GPKG_ARGS, "--hex-size", 1500, "--seed", 2,
                 *FAST, "--out", tmp_path / "hex.gpkg")
    assert result.exit_code == 0, result.output
    assert "hexagons of side 1,500 m" in result.output
    release = io.read_release(tmp_path / "hex.gpkg")
    assert release.metadata["lattice"]["kind"] == "hexagonal"
    assert release.metadata["lattice"]["bounds_snap_unit"] == [1500.0, 1500.0]
    assert (shapely.get_num_coordinates(np.asarray(release.grid.geometry.array)) >= 7).all()
    dp = run("release", inputs["gpkg"], *GPKG_ARGS, "--areas", areas, "--epsilon", 2,
             "--levels-file", inputs["levels"], *FAST, "--out", tmp_path / "dp.gpkg")
    assert dp.exit_code == 0, dp.output
    by_area = run("release", inputs["gpkg"], *GPKG_ARGS, "--areas", areas, "--area-exposure",
                  "area", "--epsilon", 2, "--levels-file", inputs["levels"], *FAST,
                  "--out", tmp_path / "dp_area.gpkg")
    assert by_area.exit_code == 0, by_area.output
    lattice = io.read_release(tmp_path / "dp_area.gpkg").metadata["lattice"]
    assert lattice["exposure"] == "habitable area"
    assert "must be public data" not in by_area.output  # the areas' area is public
    frame = gpd.read_file(areas).assign(residents=np.arange(1, 10) * 100)
    frame.to_file(tmp_path / "people.gpkg", engine="pyogrio")
    by_column = run("release", inputs["gpkg"], *GPKG_ARGS, "--areas", tmp_path / "people.gpkg",
                    "--area-exposure", "residents", "--epsilon", 2, "--levels-file",
                    inputs["levels"], *FAST, "--out", tmp_path / "dp_residents.gpkg")
    assert by_column.exit_code == 0, by_column.output
    assert ("Note: --area-exposure residents must be public data (a census population), never "
            "counts of the records") in by_column.output


@pytest.mark.parametrize(
    ("extra", "fragments"),
    [
        (["--hex-size", 500, "--grid", "4x4"], ["exactly one of", "--grid and --hex-size"]),
        (["--areas", "AREAS", "--cell-size", 500], ["--cell-size and --areas"]),
        ([], ["exactly one of", "got none"]),
        (["--cell-size", 500, "--area-id", "district"], ["--area-id applies to --areas only"]),
        (["--areas", "AREAS", "--region", "REGION"], ["--areas are the study region"]),
        (["--areas", "AREAS", "--public-area-ids"], ["--public-area-ids needs --area-id"]),
        (["--hex-size", 0], ["--hex-size"]),
        (["--hex-size", "nan"], ["--hex-size", "not a finite number of metres"]),
        (["--cell-size", "inf"], ["--cell-size", "not a finite number of metres"]),
        (["--hex-size", "0.001"], ["--hex-size"]),  # named so, not --cell-size
        (["--cell-size", 500, "--area-gap", 1], ["--area-gap applies to --areas only"]),
        (["--areas", "AREAS", "--area-gap", 0], ["--area-gap"]),
        (["--cell-size", 500, "--area-exposure", "area"],
         ["--area-exposure applies to --areas only"]),
    ],
)
def test_lattice_options_are_checked_before_reading(inputs, areas, tmp_path, extra, fragments):
    substituted = [areas if v == "AREAS" else inputs["region"] if v == "REGION" else v
                   for v in extra]
    result = run("release", inputs["gpkg"], *GPKG_ARGS, *substituted, *FAST,
                 "--out", tmp_path / "x.gpkg")
    assert_refused(result, *fragments)
    assert not (tmp_path / "x.gpkg").exists()


def test_area_gap_joins_districts_digitised_apart(inputs, areas, tmp_path):
    # The nine districts each shrunk by 1 m: 2 m of gap between neighbours.
    apart = tmp_path / "apart.gpkg"
    frame = gpd.read_file(areas)
    frame.set_geometry(frame.buffer(-1.0, join_style="mitre")).to_file(apart, engine="pyogrio")
    alone = run("release", inputs["gpkg"], *GPKG_ARGS, "--areas", apart, "--seed", 2, *FAST,
                "--out", tmp_path / "alone.gpkg")
    assert alone.exit_code == 0, alone.output
    assert "9 areas (queen contiguity, 9 component(s))" in alone.output
    joined = run("release", inputs["gpkg"], *GPKG_ARGS, "--areas", apart, "--area-gap", 3,
                 "--seed", 2, *FAST, "--out", tmp_path / "joined.gpkg")
    assert joined.exit_code == 0, joined.output
    assert "9 areas (queen contiguity, 1 component(s))" in joined.output
    assert io.read_release(tmp_path / "joined.gpkg").metadata["lattice"]["gap"] == 3.0
    assert io.read_release(tmp_path / "alone.gpkg").metadata["lattice"]["gap"] == 0.0
    wide = run("release", inputs["gpkg"], *GPKG_ARGS, "--areas", apart, "--area-gap", 1e9,
               *FAST, "--out", tmp_path / "wide.gpkg")
    assert_refused(wide, "--area-gap 1e+09 is more than a tenth of a typical area's side")
    assert not (tmp_path / "wide.gpkg").exists()


def test_area_exposure_is_the_areas_area_or_a_column_and_is_recorded(inputs, areas, tmp_path):
    frame = gpd.read_file(areas)
    frame["residents"] = [800, 1200, 950, 400, 3000, 700, 1100, 650, 500]
    frame.loc[2, "empty"] = 0
    frame.to_file(tmp_path / "people.gpkg", engine="pyogrio")
    for exposure, source in (("area", "habitable area"), ("residents", "column residents")):
        out = tmp_path / f"{exposure}.gpkg"
        result = run("release", inputs["gpkg"], *GPKG_ARGS, "--areas", tmp_path / "people.gpkg",
                     "--area-exposure", exposure, "--seed", 2, *FAST, "--out", out)
        assert result.exit_code == 0, result.output
        assert f"9 areas (queen contiguity, 1 component(s), exposure: {source})" in result.output
        assert io.read_release(out).metadata["lattice"]["exposure"] == source
    for column, fragment in (("people", "--areas people.gpkg: --area-exposure 'people' is not "
                                        "a column of areas"),
                             ("empty", "exposure column 'empty' values at rows [0, 1, 3, 4, 5, "
                                       "6, 7, 8] are missing")):
        refused = run("release", inputs["gpkg"], *GPKG_ARGS, "--areas",
                      tmp_path / "people.gpkg", "--area-exposure", column, *FAST,
                      "--out", tmp_path / "x.gpkg")
        assert_refused(refused, fragment)
        assert not (tmp_path / "x.gpkg").exists()


def test_unknown_area_id_column_is_named(inputs, areas, tmp_path):
    result = run("release", inputs["gpkg"], *GPKG_ARGS, "--areas", areas, "--area-id", "code",
                 *FAST, "--out", tmp_path / "x.gpkg")
    assert result.exit_code != 0
    assert "--area-id 'code' is not a column of --areas districts.gpkg" in result.output
    assert "district" in result.output


def test_duplicate_area_ids_are_refused_in_gis_words(inputs, areas, tmp_path):
    frame = gpd.read_file(areas)
    frame.loc[1, "district"] = "D0"
    frame.to_file(tmp_path / "twice.gpkg", engine="pyogrio")
    result = run("release", inputs["gpkg"], *GPKG_ARGS, "--areas", tmp_path / "twice.gpkg",
                 "--area-id", "district", *FAST, "--out", tmp_path / "x.gpkg")
    assert_refused(result, "--area-id 'district' has duplicate values ['D0']",
                   "(dissolve the areas by id first)")
    assert "areas.dissolve" not in result.output


def test_tune_takes_hexagon_candidates_and_prints_their_release_command(inputs, tmp_path):
    result = run("tune", inputs["gpkg"], *GPKG_ARGS, "--hex-sizes", "1500,3000",
                 "--region", inputs["region"], "--iterations", 60, "--burn-in", 20, "--m", 2,
                 "--quadrants", 20, "--seed", 1, "--report", tmp_path / "tune.md")
    assert result.exit_code == 0, result.output
    assert "--hex-size" in result.output
    assert "hex 1500 m" in (tmp_path / "tune.md").read_text()


def test_tune_takes_areas_candidates_and_their_release_command_runs(inputs, areas, tmp_path):
    report = tmp_path / "tune.md"
    result = run("tune", inputs["gpkg"], *GPKG_ARGS, "--areas", areas, "--region",
                 inputs["region"], "--iterations", 60, "--burn-in", 20, "--m", 2,
                 "--quadrants", 20, "--seed", 1, "--report", report)
    assert result.exit_code == 0, result.output
    assert "districts.gpkg" in report.read_text().split("## Candidates")[1]
    command = shlex.split(result.output.split("Release it with:\n")[1].splitlines()[0])
    assert command[-4:] == ["--m", "2", "--out", "release.gpkg"]
    assert "--areas" in command and "--region" not in command  # the areas are the region
    out = tmp_path / "chosen.gpkg"
    release = run(*command[1:-2], "--out", out, *FAST)
    assert release.exit_code == 0, release.output
    assert io.read_release(out).metadata["lattice"]["kind"] == "areal"


@pytest.mark.parametrize(
    ("extra", "fragments"),
    [
        (["--cell-sizes", 500, "--link-islands"], ["--link-islands applies to --areas only"]),
        (["--cell-sizes", 500, "--area-gap", 1], ["--area-gap applies to --areas only"]),
        (["--cell-sizes", 500, "--area-exposures", "area"],
         ["--area-exposures applies to --areas only"]),
        (["--areas", "AREAS", "--areas", "AREAS"], ["distinct names"]),
    ],
)
def test_tune_areas_options_are_checked_before_reading(inputs, areas, tmp_path, extra,
                                                       fragments):
    substituted = [areas if v == "AREAS" else v for v in extra]
    result = run("tune", inputs["gpkg"], *GPKG_ARGS, *substituted, "--report",
                 tmp_path / "tune.md")
    assert_refused(result, *fragments)
    assert not (tmp_path / "tune.md").exists()


def test_tune_joins_areas_across_a_gap_and_its_release_command_keeps_it(inputs, areas,
                                                                        tmp_path):
    apart = tmp_path / "apart.gpkg"
    frame = gpd.read_file(areas)
    frame.set_geometry(frame.buffer(-1.0, join_style="mitre")).to_file(apart, engine="pyogrio")
    result = run("tune", inputs["gpkg"], *GPKG_ARGS, "--areas", apart, "--area-gap", 3,
                 "--iterations", 60, "--burn-in", 20, "--m", 2, "--quadrants", 20, "--seed", 1,
                 "--report", tmp_path / "tune.md")
    assert result.exit_code == 0, result.output
    command = shlex.split(result.output.split("Release it with:\n")[1].splitlines()[0])
    assert command[command.index("--area-gap") + 1] == "3"
    assert "--area-exposure" not in command
    release = run(*command[1:-2], "--out", tmp_path / "chosen.gpkg", *FAST)
    assert release.exit_code == 0, release.output
    assert "9 areas (queen contiguity, 1 component(s))" in release.output


def test_tune_compares_exposures_and_its_release_command_keeps_the_chosen_one(inputs, areas,
                                                                              tmp_path):
    frame = gpd.read_file(areas).assign(residents=np.arange(1, 10) * 100)
    frame.to_file(tmp_path / "people.gpkg", engine="pyogrio")
    tuning = ["--iterations", 60, "--burn-in", 20, "--m", 2, "--quadrants", 20, "--seed", 1]
    one = run("tune", inputs["gpkg"], *GPKG_ARGS, "--areas", areas, "--area-exposures", "area",
              *tuning, "--report", tmp_path / "one.md")
    assert one.exit_code == 0, one.output
    command = shlex.split(one.output.split("Release it with:\n")[1].splitlines()[0])
    assert command[command.index("--area-exposure") + 1] == "area"
    release = run(*command[1:-2], "--out", tmp_path / "chosen.gpkg", *FAST)
    assert release.exit_code == 0, release.output
    assert "exposure: habitable area" in release.output
    three = run("tune", inputs["gpkg"], *GPKG_ARGS, "--areas", tmp_path / "people.gpkg",
                "--area-exposures", "none,area,residents", *tuning,
                "--report", tmp_path / "three.md")
    assert three.exit_code == 0, three.output
    labels = [f"people.gpkg, exposure {e}" for e in ("none", "area", "residents")]
    assert all(label in (tmp_path / "three.md").read_text() for label in labels)
    command = shlex.split(three.output.split("Release it with:\n")[1].splitlines()[0])
    recommended = three.output.split("Recommendation:")[1].splitlines()[0]
    (chosen,) = [e for e in ("none", "area", "residents") if f"exposure {e}" in recommended]
    given = command[command.index("--area-exposure") + 1] if "--area-exposure" in command else None
    assert given == (None if chosen == "none" else chosen)
    missing = run("tune", inputs["gpkg"], *GPKG_ARGS, "--areas", areas, "--area-exposures",
                  "area,people", *tuning, "--report", tmp_path / "x.md")
    assert_refused(missing, "--areas districts.gpkg: --area-exposures 'people' is not a column")


def test_tune_counts_each_exposure_as_a_candidate_and_guards_every_areas_file(
        inputs, areas, tmp_path, monkeypatch):
    import geosynth.tuning

    monkeypatch.setattr(geosynth.tuning, "MAX_CANDIDATES", 2)
    many = run("tune", inputs["gpkg"], *GPKG_ARGS, "--areas", areas, "--area-exposures",
               "none,area,residents", "--report", tmp_path / "x.md")
    assert_refused(many, "--areas: 3 candidates, more than the limit of 2")
    assert not (tmp_path / "x.md").exists()
    monkeypatch.undo()
    # Two files of one name in two folders, told apart by their layers: a --report on the
    # first was accepted once the inputs were keyed by file name.
    for folder in ("d1", "d2"):  # a GeoPackage named .md, as the test below
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "t.md").write_bytes(areas.read_bytes())
    first = tmp_path / "d1" / "t.md"
    clash = run("tune", inputs["gpkg"], *GPKG_ARGS, "--areas", first, "--areas-layer", "a",
                "--areas", tmp_path / "d2" / "t.md", "--areas-layer", "b",
                "--area-exposures", "none,area", "--report", first, "--overwrite")
    assert_refused(clash, "name the same file")
    assert first.read_bytes() == areas.read_bytes()


def test_tune_report_never_replaces_an_areas_file(inputs, areas, tmp_path):
    copy = tmp_path / "districts.md"
    copy.write_bytes(areas.read_bytes())
    result = run("tune", inputs["gpkg"], *GPKG_ARGS, "--areas", copy, "--report", copy,
                 "--overwrite")
    assert_refused(result, "--areas districts.md and --report name the same file")
    assert copy.read_bytes() == areas.read_bytes()


def test_areas_without_crs_or_a_pipe_are_refused_before_the_fit(inputs, areas, tmp_path):
    no_crs = tmp_path / "no_crs.gpkg"
    gpd.read_file(areas).set_crs(None, allow_override=True).to_file(no_crs, engine="pyogrio")
    result = run("release", inputs["gpkg"], *GPKG_ARGS, "--areas", no_crs,
                 "--out", tmp_path / "r.gpkg")
    assert_refused(result, "--areas has no CRS while the points use EPSG:")
    assert "Fitting" not in result.output
    pipe = tmp_path / "region.gpkg"
    os.mkfifo(pipe)  # reading it would wait for a writer for ever
    result = run("release", inputs["gpkg"], *GPKG_ARGS, "--grid", "3x3", "--region", pipe,
                 "--out", tmp_path / "r.gpkg")
    assert_refused(result, "--region", "is not a regular file")


@pytest.mark.parametrize("option", ["--region", "--exclude"])
@pytest.mark.parametrize("lattice", [["--grid", "3x3"], ["--hex-size", "2000"]])
def test_a_polygon_file_of_empty_geometries_is_refused_naming_its_option(inputs, tmp_path,
                                                                         option, lattice):
    # --region of one empty polygon said "bounds must be four finite numbers ... got (nan, ...)"
    # or "region has no non-empty polygon; pass None to skip it"
    empty = tmp_path / "empty.gpkg"
    region = gpd.read_file(inputs["region"])
    gpd.GeoDataFrame(geometry=[shapely.Polygon()], crs=region.crs).to_file(empty,
                                                                          engine="pyogrio")
    result = run("release", inputs["gpkg"], *GPKG_ARGS, *lattice, option, empty,
                 "--out", tmp_path / "r.gpkg")
    assert_refused(result, f"{option} empty.gpkg has no polygon; give a polygon layer")
    assert "Fitting" not in result.output


@pytest.mark.parametrize("lattice", [["--grid", "3x3"], ["--cell-size", "2000"]])
def test_an_invalid_region_is_refused_as_such_not_as_bounds(inputs, tmp_path, lattice):
    # a zero-area (invalid) region was refused as "bounds must satisfy xmin < xmax and ymin <
    # ymax ... pass them in the order (xmin, ymin, xmax, ymax)": bounds the user never gave
    flat = tmp_path / "flat.gpkg"
    region = gpd.read_file(inputs["region"])
    x0, y0, x1, _ = region.total_bounds
    polygon = shapely.Polygon([(x0, y0), (x1, y0), ((x0 + x1) / 2, y0)])
    gpd.GeoDataFrame(geometry=[polygon], crs=region.crs).to_file(flat, engine="pyogrio")
    result = run("release", inputs["gpkg"], *GPKG_ARGS, *lattice, "--region", flat,
                 "--out", tmp_path / "r.gpkg")
    assert_refused(result, "--region flat.gpkg has invalid polygons", "ogr2ogr -makevalid")
    assert "bounds must" not in result.output and "shapely" not in result.output


@pytest.mark.parametrize("option", ["--cell-size", "--hex-size"])
def test_a_vanishing_cell_size_over_a_region_is_refused_not_a_traceback(inputs, tmp_path,
                                                                        option):
    # 1e-160 m cells over the 10 km region: about 1e328 cells, an int that float() cannot hold,
    # crashed with OverflowError while formatting the message
    result = run("release", inputs["gpkg"], *GPKG_ARGS, option, "1e-160", "--region",
                 inputs["region"], "--out", tmp_path / "r.gpkg")
    assert_refused(result, "more than the limit of 4,000,000", f"use a larger {option}")


@pytest.mark.parametrize(("args", "shown"), [(["--cell-size", "1e9"], "--cell-size 1e+09"),
                                             (["--grid", "1x1"], "--grid 1x1"),
                                             (["--hex-size", "1e9"], "--hex-size 1e+09")])
def test_a_lattice_of_cells_wider_than_the_study_area_is_refused(inputs, tmp_path, args,
                                                                 shown):
    # --cell-size 1e9 was accepted: one cell reaching 1e9 m past the records, and synthetic
    # points up to y = 9.99e8 m, far outside the area where the CRS is used; --hex-size 1e9
    # gave three such cells.
    result = run("release", inputs["gpkg"], *GPKG_ARGS, *args, *FAST,
                 "--out", tmp_path / "r.gpkg")
    assert_refused(result, shown, "choose a")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("command", "args", "shown"), [
    ("release", ["--hex-size", "900"], "--hex-size 900 makes hexagons wider than"),
    ("tune", ["--cell-sizes", "1e9"], "--cell-sizes 1e+09 makes cells wider than"),
    ("tune", ["--hex-sizes", "900"], "--hex-sizes 900 makes hexagons wider than"),
])
def test_cells_wider_than_the_records_extent_are_refused(inputs, tmp_path, command, args,
                                                         shown):
    # A hexagon is two sides across: --hex-size 900 over records 1.5 km apart made 4 cells
    # spanning 3.9 x 3.2 km; tune's candidates were not checked at all.
    import geopandas as gpd

    points = gpd.read_file(inputs["gpkg"])
    x0, y0 = points.total_bounds[:2]
    small = tmp_path / "small.gpkg"
    factor = 1500 / max(np.ptp(points.geometry.x), np.ptp(points.geometry.y))
    points.set_geometry(points.geometry.scale(factor, factor, origin=(x0, y0))).to_file(small)
    out = (["--out", tmp_path / "r.gpkg"] if command == "release"
           else ["--report", tmp_path / "t.md"])
    result = run(command, small, *GPKG_ARGS, *args, *FAST, *out)
    assert_refused(result, shown, "the records' extent")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.gpkg"]


def test_a_region_in_degrees_is_measured_in_the_points_units(inputs, tmp_path):
    # The study-area check read a --region in EPSG:4326 in degrees: every cell was "wider".
    import geopandas as gpd

    degrees = tmp_path / "region_4326.gpkg"
    gpd.read_file(inputs["region"]).to_crs(4326).to_file(degrees)
    result = run("release", inputs["gpkg"], *GPKG_ARGS, "--region", degrees, "--cell-size",
                 "400", *FAST, "--out", tmp_path / "r.gpkg")
    assert result.exit_code == 0, result.output


def test_an_exclude_without_a_crs_is_refused_and_one_in_degrees_is_reprojected(inputs,
                                                                              tmp_path):
    # A no-go area in degrees saved without its CRS was taken to be in the points' CRS: it
    # removed nothing (a warning only) and the release was written with every cell whole.
    points = gpd.read_file(inputs["gpkg"])
    x0, y0, x1, y1 = points.total_bounds
    lake = shapely.box(x0, y0, (x0 + x1) / 2, (y0 + y1) / 2)  # a quarter of the records
    degrees = gpd.GeoDataFrame(geometry=[lake], crs=points.crs).to_crs(4326)
    no_crs = tmp_path / "lake_no_crs.gpkg"
    degrees.set_crs(None, allow_override=True).to_file(no_crs, engine="pyogrio")
    args = ["release", inputs["gpkg"], *GPKG_ARGS, "--grid", "4x4", *FAST]
    result = run(*args, "--exclude", no_crs, "--out", tmp_path / "r.gpkg")
    assert_refused(result, "--exclude has no CRS while the points use EPSG:")
    assert not (tmp_path / "r.gpkg").exists()
    with_crs = tmp_path / "lake_4326.gpkg"
    degrees.to_file(with_crs, engine="pyogrio")  # reprojected: its records are in the no-go area
    assert_refused(run(*args, "--exclude", with_crs, "--out", tmp_path / "s.gpkg"),
                   "excluded")


def test_lengths_below_ten_units_are_printed_to_three_digits_with_the_crs_unit():
    # A snap unit of 2.5 mm printed as "to within 0 m", which read as exact; feet as "m".
    import pyproj

    from geosynth.cli.helpers import length_text

    metres, feet = pyproj.CRS("EPSG:32723"), pyproj.CRS("EPSG:2263")
    assert length_text(0.0025, metres) == "0.0025 m"
    assert length_text(2500.0, metres) == "2,500 m" and length_text(2.5) == "2.5"
    assert length_text(250.0, feet) == "250 US survey foot"
