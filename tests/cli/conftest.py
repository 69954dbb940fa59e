"""Small input files and one written release shared by the CLI tests."""

import json

import geopandas as gpd
import pytest
import shapely

from geosynth.datasets import paiva_scenario
from tests.cli.helpers import FAST, run


@pytest.fixture(scope="session")
def inputs(tmp_path_factory):
    """Points as GeoPackage, CSV and (degrees) GeoPackage; a region; a levels file."""
    folder = tmp_path_factory.mktemp("inputs")
    scenario = paiva_scenario(n=120, seed=5)
    data = scenario.data
    paths = {
        "gpkg": folder / "points.gpkg",
        "csv": folder / "points.csv",
        "wgs84": folder / "wgs84.gpkg",
        "region": folder / "region.gpkg",
        "levels": folder / "levels.json",
    }
    data.to_file(paths["gpkg"], engine="pyogrio")
    table = data.drop(columns="geometry").assign(east=data.geometry.x, north=data.geometry.y)
    table.to_csv(paths["csv"], index=False)
    data.to_crs(4326).to_file(paths["wgs84"], engine="pyogrio")
    region = shapely.box(*scenario.bounds).buffer(100)
    gpd.GeoDataFrame(geometry=[region], crs=scenario.crs).to_file(paths["region"],
                                                                  engine="pyogrio")
    paths["levels"].write_text(json.dumps({"y": [0, 1], "x1": [1, 2], "x2": [1, 2, 3]}))
    return paths


@pytest.fixture(scope="session")
def written_release(inputs, tmp_path_factory):
    """A release of the GeoPackage points written once with a fixed seed."""
    path = tmp_path_factory.mktemp("release") / "release.gpkg"
    result = run("release", inputs["gpkg"], "--attributes", "y,x1,x2", "--continuous", "z",
                 "--grid", "4x4", "--seed", 11, *FAST, "--out", path)
    assert result.exit_code == 0, result.output
    return path
