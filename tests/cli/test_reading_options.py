"""CLI options of how the points are read and released: --sep/--decimal/--encoding/--na-values,
--limit, --weights."""

import math

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import shapely

from geosynth import Candidate, io
from geosynth.cli.options import NaWords, csv_reading
from geosynth.cli.tune import release_command
from geosynth.datasets import paiva_scenario
from tests.cli.helpers import FAST, assert_refused, run

SCENARIO = paiva_scenario(n=120, seed=5)


def _release_points(path):
    """The first release of a written release file."""
    return io.read_release(path).releases[0]


@pytest.fixture(scope="module")
def european_csv(tmp_path_factory):
    """The scenario as a spreadsheet in Portugal or Brazil saves it: ';', ',' and CP1252."""
    data = SCENARIO.data
    table = data.drop(columns="geometry").assign(
        este=data.geometry.x, norte=data.geometry.y,
        bairro=np.where(data.y == 1, "São João", "Savassi"))
    path = tmp_path_factory.mktemp("csv") / "casos.csv"
    table.to_csv(path, sep=";", decimal=",", index=False, encoding="cp1252")
    return path


def test_a_european_csv_is_released_with_sep_decimal_and_encoding(european_csv, tmp_path):
    out = tmp_path / "release.gpkg"
    result = run("release", european_csv, "--x", "este", "--y", "norte", "--crs", SCENARIO.crs,
                 "--sep", ";", "--decimal", ",", "--encoding", "cp1252",
                 "--attributes", "bairro,x1", "--grid", "3x3", "--seed", 1, *FAST, "--out", out)
    assert result.exit_code == 0, result.output
    release = _release_points(out)
    assert len(release) == len(SCENARIO.data)
    assert set(release["bairro"]) == {"São João", "Savassi"}


def test_without_the_options_the_european_csv_is_refused_with_the_fix(european_csv, tmp_path):
    result = run("release", european_csv, "--x", "este", "--y", "norte", "--crs", SCENARIO.crs,
                 "--attributes", "x1", "--grid", "3x3", *FAST, "--out", tmp_path / "r.gpkg")
    assert result.exit_code != 0
    assert "--encoding 'cp1252' for a Windows (Excel) file;" in result.output
    assert "encoding=" not in result.output
    assert not (tmp_path / "r.gpkg").exists()


def test_a_semicolon_file_read_with_commas_gets_the_options_to_pass(inputs, tmp_path):
    # "pass --sep ';' (--sep) and --decimal ',' (--decimal ',')": the notes stayed, as a
    # quoted ';' split the clause
    frame = gpd.read_file(inputs["gpkg"])
    table = frame.drop(columns="geometry").assign(east=frame.geometry.x, north=frame.geometry.y)
    table.to_csv(tmp_path / "semi.csv", sep=";", index=False)
    result = run("release", tmp_path / "semi.csv", "--x", "east", "--y", "north", "--crs",
                 SCENARIO.crs, "--attributes", "y", "--grid", "3x3", *FAST, "--out",
                 tmp_path / "r.gpkg")
    assert_refused(result, "the header line holds ';' where --sep ',' was expected: pass --sep "
                           "';' and --decimal ',' if its numbers have decimal commas")


def test_a_tab_is_typed_as_tab_or_backslash_t(tmp_path):
    data = SCENARIO.data
    table = data.drop(columns="geometry").assign(east=data.geometry.x, north=data.geometry.y)
    path = tmp_path / "points.tsv.csv"
    table.to_csv(path, sep="\t", index=False)
    for spelling in ("tab", "\\t"):
        out = tmp_path / f"release_{len(spelling)}.gpkg"
        result = run("release", path, "--x", "east", "--y", "north", "--crs", SCENARIO.crs,
                     "--sep", spelling, "--attributes", "y", "--grid", "3x3", *FAST,
                     "--out", out)
        assert result.exit_code == 0, result.output
        assert len(_release_points(out)) == len(data)


def test_multipoints_are_refused_in_gis_words(inputs, tmp_path):
    frame = gpd.read_file(inputs["gpkg"])
    frame.loc[0, "geometry"] = shapely.MultiPoint([(0, 0), (1, 1)])
    frame.to_file(tmp_path / "multi.gpkg", engine="pyogrio")
    result = run("release", tmp_path / "multi.gpkg", "--attributes", "y", "--grid", "3x3",
                 *FAST, "--out", tmp_path / "x.gpkg")
    # the GeoPackage layer becomes one of MultiPoints: every record is refused
    assert_refused(result, "multi.gpkg has 120 non-point geometries (['MultiPoint']",
                   "split MultiPoints into points and replace polygons by a point inside each, "
                   "and save the file again")
    assert "explode" not in result.output and "gdf" not in result.output


def test_csv_options_for_a_geopackage_are_refused_naming_the_option(inputs, tmp_path):
    result = run("release", inputs["gpkg"], "--sep", ";", "--attributes", "y", "--grid", "3x3",
                 *FAST, "--out", tmp_path / "r.gpkg")
    assert result.exit_code != 0
    assert "--sep" in result.output and "CSV files only" in result.output


def test_tune_repeats_the_csv_options_in_the_release_command():
    reading = csv_reading("\t", ",", "cp1252")
    command = release_command("casos.csv", ["y"], Candidate(shape=(4, 4)), x="e", y="n",
                              crs="EPSG:31983", reading=reading)
    assert "--sep tab --decimal , --encoding cp1252" in command
    assert csv_reading(None, None, None) == {}


# ---------------------------------------------------------------------- --na-values


def test_na_values_are_split_at_commas_and_empty_is_none():
    words = NaWords()
    assert words.convert("NA, -99,,NA", None, None) == ["NA", "-99"]
    assert words.convert(".", None, None) == ["."]
    assert words.convert("", None, None) == []
    assert words.convert(["n/a"], None, None) == ["n/a"]
    assert csv_reading(None, None, None, []) == {"na_values": []}
    assert csv_reading(None, None, None, None) == {}


@pytest.mark.parametrize(("na_values", "repeated"), [
    (["NA", "-99"], "--na-values NA,-99 --attributes"),
    ([], "--na-values '' --attributes"),
])
def test_tune_repeats_na_values_in_the_release_command(na_values, repeated):
    reading = csv_reading(";", None, None, na_values)
    command = release_command("casos.csv", ["y"], Candidate(shape=(4, 4)), x="e", y="n",
                              crs="EPSG:31983", reading=reading)
    assert f"--sep ';' {repeated}" in command


@pytest.fixture(scope="module")
def namibia_csv(tmp_path_factory):
    """The scenario with a country column of ISO codes: NA is Namibia."""
    data = SCENARIO.data
    table = data.drop(columns="geometry").assign(
        east=data.geometry.x, north=data.geometry.y,
        country=np.where(data.y == 1, "NA", "ZA"))
    path = tmp_path_factory.mktemp("csv") / "visits.csv"
    table.to_csv(path, index=False)
    return path


def test_na_values_empty_keeps_namibia_and_the_warning_names_it(namibia_csv, tmp_path):
    common = ["--x", "east", "--y", "north", "--crs", SCENARIO.crs, "--attributes", "country",
              "--grid", "3x3", "--seed", 1, *FAST]
    refused = run("release", namibia_csv, *common, "--out", tmp_path / "r.gpkg")
    assert refused.exit_code != 0
    assert ("Warning: column 'country' of visits.csv: "
            f"{int((SCENARIO.data.y == 1).sum())} value(s) written 'NA'") in refused.output
    assert "pass --na-values '' to keep them as text" in refused.output
    assert "is read as missing unless --na-values '' is given)" in refused.output  # the error
    assert "na_values" not in refused.output
    out = tmp_path / "release.gpkg"
    result = run("release", namibia_csv, *common, "--na-values", "", "--out", out)
    assert result.exit_code == 0, result.output
    assert "Warning: column 'country'" not in result.output
    assert set(_release_points(out)["country"]) == {"NA", "ZA"}


def test_na_values_for_a_geopackage_are_refused_naming_the_option(inputs, tmp_path):
    result = run("release", inputs["gpkg"], "--na-values", "", "--attributes", "y", "--grid",
                 "3x3", *FAST, "--out", tmp_path / "r.gpkg")
    assert_refused(result, "--na-values '' applies to CSV files only", "omit --na-values")


@pytest.mark.parametrize("command", ["release", "tune", "evaluate"])
def test_every_command_reading_csv_takes_na_values(command):
    assert "--na-values WORDS" in run(command, "--help").output


@pytest.fixture(scope="module")
def z_range():
    z = SCENARIO.data["z"]
    return math.floor(z.min()), math.ceil(z.max())


@pytest.fixture(scope="module")
def skewed(tmp_path_factory):
    """The points with a non-negative, right-skewed z (most near 0, a long tail: an income)."""
    data = SCENARIO.data.copy()
    data["z"] = np.exp((data["z"] - 20.0) / 10.0) - 1.0
    path = tmp_path_factory.mktemp("skewed") / "points.gpkg"
    data.to_file(path, engine="pyogrio")
    return path, math.ceil(data["z"].max())


def _release_z(points, out, *limits):
    result = run("release", points, "--attributes", "y,x1", "--continuous", "z",
                 "--grid", "4x4", "--seed", 11, "--iterations", "40", "--burn-in", "10",
                 "--thin", "2", "--m", "5", *limits, "--out", out)
    assert result.exit_code == 0, result.output
    return pd.concat(io.read_release(out).releases)["z"].to_numpy()


def test_limit_keeps_the_synthetic_values_in_the_range(skewed, tmp_path):
    points, high = skewed
    free = _release_z(points, tmp_path / "free.gpkg")
    # Records near 0 share cells with the tail: unlimited, the normal of eq. 2.27 goes below 0
    # (12–20 of the 600 values at seeds 11–15).
    assert (free < 0).sum() > 0
    limited = _release_z(points, tmp_path / "limited.gpkg", "--limit", f"z=0:{high}")
    assert limited.min() >= 0 and limited.max() <= high
    open_high = _release_z(points, tmp_path / "open.gpkg", "--limit", "z=0:")
    assert open_high.min() >= 0


@pytest.mark.parametrize(("limits", "fragments"), [
    (["--limit", "age"], ["COLUMN=LOW:HIGH", "'age'"]),
    (["--limit", "z=a:3"], ["'a'", "not a finite number"]),
    (["--limit", "z=nan:3"], ["not a finite number"]),
    (["--limit", "z=5:1"], ["'z=5:1' is an empty range", "e.g. age=0:120"]),
    (["--limit", "z=2:2"], ["'z=2:2' is an empty range"]),
    (["--limit", "z=:"], ["'z=:' sets neither end", "drop this --limit"]),  # was a no-op
    (["--limit", "w=0:1"], ["'w' is not a --continuous column", "the --continuous columns are z"]),
    (["--limit", "z=0:1", "--limit", "z=0:2"], ["'z' twice"]),
])
def test_bad_limits_are_refused_before_the_data_are_read(inputs, tmp_path, limits, fragments):
    result = run("release", inputs["gpkg"], "--attributes", "y", "--continuous", "z",
                 "--grid", "3x3", *FAST, *limits, "--out", tmp_path / "r.gpkg")
    assert_refused(result, *fragments)
    assert "Read " not in result.output  # refused before reading INPUT


def test_data_outside_the_limit_are_counted_never_shown(inputs, tmp_path, z_range):
    low, high = z_range
    middle = (low + high) / 2
    z = SCENARIO.data["z"]
    result = run("release", inputs["gpkg"], "--attributes", "y", "--continuous", "z",
                 "--grid", "3x3", *FAST, "--limit", f"z={middle}:", "--out", tmp_path / "r.gpkg")
    assert result.exit_code != 0
    assert f"{int((z < middle).sum())} record(s)" in result.output
    assert f"--limit z={middle:g}:" in result.output and "Fitting" not in result.output
    assert "gdf" not in result.output and "in Python" not in result.output
    for value in z[z < middle]:
        assert f"{value:.3f}"[:-1] not in result.output
    assert not (tmp_path / "r.gpkg").exists()


def test_weights_place_every_point_in_the_weighted_pixels(inputs, tmp_path):
    rasterio = pytest.importorskip("rasterio")
    x0, y0, x1, y1 = (b + d for b, d in zip(SCENARIO.bounds, (-100, -100, 100, 100),
                                            strict=True))
    rows = cols = 4
    cw, ch = (x1 - x0) / cols, (y1 - y0) / rows
    # Two pixels per cell side; weight only in the south-west pixel of each cell.
    pixels = np.zeros((2 * rows, 2 * cols), dtype="float32")
    pixels[1::2, 0::2] = 1.0  # raster rows count from the north: odd rows are cells' south
    path = tmp_path / "density.tif"
    with rasterio.open(path, "w", driver="GTiff", width=2 * cols, height=2 * rows, count=1,
                       dtype="float32", crs=SCENARIO.crs,
                       transform=rasterio.transform.from_origin(x0, y1, cw / 2, ch / 2)) as dst:
        dst.write(pixels, 1)
    out = tmp_path / "release.gpkg"
    result = run("release", inputs["gpkg"], "--attributes", "y", "--grid", f"{rows}x{cols}",
                 "--region", inputs["region"], "--weights", path, "--seed", 3, *FAST,
                 "--out", out)
    assert result.exit_code == 0, result.output
    release = _release_points(out)
    fx = np.mod(release.geometry.x - x0, cw) / cw
    fy = np.mod(release.geometry.y - y0, ch) / ch
    assert (fx <= 0.5 + 1e-9).all() and (fy <= 0.5 + 1e-9).all()


def test_weights_exposure_weighs_the_cells_by_the_raster_and_is_recorded(inputs, tmp_path):
    rasterio = pytest.importorskip("rasterio")
    x0, y0, x1, y1 = (b + d for b, d in zip(SCENARIO.bounds, (-100, -100, 100, 100),
                                            strict=True))
    path = tmp_path / "people.tif"
    people = np.ones((8, 8), dtype="float32")
    people[:, :4] = 9.0  # the west half of the area holds nine people a pixel, the east one
    with rasterio.open(path, "w", driver="GTiff", width=8, height=8, count=1, dtype="float32",
                       crs=SCENARIO.crs, transform=rasterio.transform.from_origin(
                           x0, y1, (x1 - x0) / 8, (y1 - y0) / 8)) as dst:
        dst.write(people, 1)
    out = tmp_path / "release.gpkg"
    result = run("release", inputs["gpkg"], "--attributes", "y", "--grid", "4x4", "--region",
                 inputs["region"], "--weights", path, "--weights-exposure", "--seed", 3, *FAST,
                 "--out", out)
    assert result.exit_code == 0, result.output
    assert "exposure: weights raster" in result.output
    assert io.read_release(out).metadata["lattice"]["exposure"] == "weights raster"
    for extra, message in (
            (["--weights-exposure"], "--weights-exposure takes each cell's total of the "
                                     "--weights raster; add --weights RASTER"),
            (["--weights", path, "--weights-exposure", "--areas", inputs["region"],
              "--area-exposure", "area"], "give one exposure: --area-exposure or "
                                          "--weights-exposure")):
        lattice = [] if "--areas" in extra else ["--grid", "4x4"]
        refused = run("release", inputs["gpkg"], "--attributes", "y", *lattice, *extra, *FAST,
                      "--out", tmp_path / "x.gpkg")
        assert_refused(refused, message)
        assert not (tmp_path / "x.gpkg").exists()


def test_weights_in_another_crs_are_refused_naming_the_option(inputs, tmp_path):
    rasterio = pytest.importorskip("rasterio")
    path = tmp_path / "degrees.tif"
    with rasterio.open(path, "w", driver="GTiff", width=2, height=2, count=1, dtype="float32",
                       crs="EPSG:4326",
                       transform=rasterio.transform.from_origin(-44, -19, 0.1, 0.1)) as dst:
        dst.write(np.ones((2, 2), dtype="float32"), 1)
    result = run("release", inputs["gpkg"], "--attributes", "y", "--grid", "3x3",
                 "--weights", path, *FAST, "--out", tmp_path / "r.gpkg")
    assert result.exit_code != 0
    assert "--weights degrees.tif: weights raster CRS EPSG:4326 differs" in result.output
    assert "Fitting" not in result.output
    assert not (tmp_path / "r.gpkg").exists()


def test_intensity_tif_is_written_with_the_release(inputs, tmp_path):
    rasterio = pytest.importorskip("rasterio")
    out, tif = tmp_path / "release.gpkg", tmp_path / "maps" / "intensity.tif"
    result = run("release", inputs["gpkg"], "--attributes", "y,x1", "--grid", "4x5",
                 "--seed", 2, *FAST, "--out", out, "--intensity-tif", tif)
    assert result.exit_code == 0, result.output
    assert f"Wrote {tif}" in result.output
    # the warning that it follows the exact counts names the options, not Python's names
    assert "otherwise leave it out (--include-intensity, --intensity-tif)" in result.output
    assert "write_intensity_geotiff" not in result.output
    with rasterio.open(tif) as raster:
        bands = raster.read()
        assert (raster.count, raster.height, raster.width) == (4, 4, 5)  # 2 x 2 combinations
        assert raster.crs.to_epsg() == 31983
        assert raster.descriptions[0].startswith("y=")
    assert np.isfinite(bands).all() and (bands > 0).all()
    assert tif.stat().st_mode & 0o044  # public, like the release


def test_intensity_tif_of_hexagons_is_refused_before_the_data_are_read(inputs, tmp_path):
    result = run("release", inputs["gpkg"], "--attributes", "y", "--hex-size", "1500", *FAST,
                 "--out", tmp_path / "r.gpkg", "--intensity-tif", tmp_path / "i.tif")
    assert_refused(result, "--intensity-tif needs square cells")
    assert "Read " not in result.output


def test_a_run_failing_after_the_geotiff_is_staged_writes_none(inputs, tmp_path, monkeypatch):
    from geosynth import io as geosynth_io

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(geosynth_io, "write_release", full_disk)
    tif = tmp_path / "intensity.tif"
    result = run("release", inputs["gpkg"], "--attributes", "y", "--grid", "3x3", *FAST,
                 "--out", tmp_path / "r.gpkg", "--intensity-tif", tif)
    assert result.exit_code != 0
    assert not tif.exists() and not (tmp_path / "r.gpkg").exists()
    assert sorted(path.name for path in tmp_path.iterdir()) == []


def test_a_dp_release_warns_of_weights_made_from_the_records(inputs, tmp_path):
    # synthesize warned of a raster positive only in the records' pixels; a DP release (which
    # fits the noisy counts, not the records) placed its points with it without a word.
    rasterio = pytest.importorskip("rasterio")
    x0, y0, x1, y1 = (b + d for b, d in zip(SCENARIO.bounds, (-100, -100, 100, 100),
                                            strict=True))
    size = 10.0
    cols, rows = int(np.ceil((x1 - x0) / size)), int(np.ceil((y1 - y0) / size))
    pixels = np.zeros((rows, cols), dtype="float32")
    points = gpd.read_file(inputs["gpkg"])
    pixels[((y1 - points.geometry.y) / size).astype(int),
           ((points.geometry.x - x0) / size).astype(int)] = 1.0
    path = tmp_path / "cases.tif"
    with rasterio.open(path, "w", driver="GTiff", width=cols, height=rows, count=1,
                       dtype="float32", crs=SCENARIO.crs,
                       transform=rasterio.transform.from_origin(x0, y1, size, size)) as dst:
        dst.write(pixels, 1)
    result = run("release", inputs["gpkg"], "--attributes", "y", "--grid", "4x4",
                 "--region", inputs["region"], "--epsilon", 1, "--levels-file",
                 inputs["levels"], "--weights", path, *FAST, "--out", tmp_path / "r.gpkg")
    assert result.exit_code == 0, result.output
    assert "cover a sliver of the habitable area" in result.output
    assert "yet nearly all of the records lie in them" in result.output  # no share quoted
    assert (result.output.index("of the records lie in them")
            < result.output.index("Differentially private release"))
