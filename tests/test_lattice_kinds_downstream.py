"""Everything downstream of the lattice on hexagons and areal units.

Recovery of a planted intensity (Spearman of the posterior mean against the truth, as the
square-lattice recovery tests do), then prepare → fit (serial, chromatic, block) → synthesize
(uniform and raster-weighted placement inside the cell's polygon) → evaluate → DP release →
tune → review map → GeoPackage release, on each kind.
"""

import warnings

import geopandas as gpd
import numpy as np
import pytest
import shapely
from libpysal import examples
from scipy import stats

import geosynth
from geosynth import Grid, PaivaModel, io, prepare
from geosynth.errors import GridError, InputError
from geosynth.synth import place_in_cells

ATTRIBUTES = ["y", "x"]


def georgia():
    return gpd.read_file(examples.get_path("G_utm.shp")).set_crs("EPSG:32617")


def hexagons():
    return Grid.hexagonal((0.0, 0.0, 6000.0, 5000.0), cell_size=300.0, crs="EPSG:32631")


LATTICES = {"hexagonal": hexagons, "areal": lambda: Grid.from_polygons(georgia(),
                                                                        id_column="AreaKey")}


def planted(grid, seed, per_cell=6.0):
    """Records from a smooth planted intensity: (points, true intensity (G, 4))."""
    rng = np.random.default_rng(seed)
    centre = shapely.get_coordinates(shapely.point_on_surface(
        np.asarray(grid.cells.geometry.array)))
    x0, y0, x1, y1 = grid.bounds
    u = (centre[:, 0] - x0) / (x1 - x0)
    v = (centre[:, 1] - y0) / (y1 - y0)
    field = 1.2 * np.sin(2.5 * u) * np.cos(3.0 * v) + 0.8 * u
    combos = [(a, b) for a in (0, 1) for b in (0, 1)]
    shift = np.array([0.0, -0.4, 0.3, -0.2])
    truth = per_cell / 4 * np.exp(field[:, None] + shift[None, :])
    counts = rng.poisson(truth)
    cells = np.repeat(np.tile(np.arange(grid.n_cells)[:, None], (1, 4)).ravel(),
                      counts.ravel())
    combo = np.repeat(np.tile(np.arange(4), grid.n_cells), counts.ravel())
    xy = place_in_cells(grid, cells, seed=seed)
    frame = gpd.GeoDataFrame(
        {"y": [combos[c][0] for c in combo], "x": [combos[c][1] for c in combo]},
        geometry=gpd.points_from_xy(xy[:, 0], xy[:, 1]), crs=grid.crs)
    return frame, truth


@pytest.fixture(scope="module", params=sorted(LATTICES))
def case(request):
    grid = LATTICES[request.param]()
    data, truth = planted(grid, seed=11)
    counts = prepare(data, grid, ATTRIBUTES)
    return request.param, grid, data, truth, counts


@pytest.fixture(scope="module")
def fitted(case):
    _, _, _, _, counts = case
    return PaivaModel().fit(counts, n_iter=1500, burn_in=500, seed=3, progress=False)


def test_points_land_in_their_planted_cells(case):
    _, grid, data, _, counts = case
    assert counts.n_records == len(data)
    assert (grid.locate(data) >= 0).all()


def test_planted_intensity_is_recovered(case, fitted):
    """Spearman of posterior mean λ vs truth beats the raw counts and is high."""
    kind, _, _, truth, counts = case
    # Levels 0/1 have codes 0/1; the λ columns follow counts.combo_codes.
    order = [int(2 * c[0] + c[1]) for c in counts.combo_codes]
    truth = truth[:, order]
    rho = stats.spearmanr(fitted.posterior_mean_lambda().ravel(), truth.ravel()).statistic
    raw = stats.spearmanr(counts.counts.ravel(), truth.ravel()).statistic
    assert rho > 0.8, kind
    assert rho > raw + 0.05, (kind, rho, raw)


@pytest.mark.parametrize("sampler", ["chromatic", "block"])
def test_other_samplers_agree_with_the_serial_fit(case, fitted, sampler):
    _, _, _, _, counts = case
    if sampler == "chromatic":
        other = PaivaModel().fit(counts, n_iter=1500, burn_in=500, seed=4, progress=False,
                                 parallel=True)
    else:
        other = PaivaModel(sampler="block").fit(counts, n_iter=800, burn_in=300, seed=4,
                                                progress=False)
    a, b = fitted.posterior_mean_lambda().ravel(), other.posterior_mean_lambda().ravel()
    assert np.corrcoef(np.log(a), np.log(b))[0, 1] > 0.97


def test_synthesize_places_points_inside_the_cells_polygons(case, fitted):
    _, grid, data, _, _ = case
    releases = geosynth.synthesize(fitted, data, m=2, seed=5)
    polygons = np.asarray(grid.habitable_geometry)
    for release in releases:
        cell = grid.locate(release)
        assert (cell >= 0).all()
        assert shapely.intersects_xy(polygons[cell], release.geometry.x,
                                     release.geometry.y).all()
    evaluation = geosynth.evaluate(data, releases, grid, ATTRIBUTES, n_quadrants=50, seed=6)
    assert np.isfinite(evaluation.tables["distance_risk"]["min_distance"]).all()
    assert 0 <= evaluation.tables["identification_risk"].loc["true_match_rate", "value"] <= 1


def test_uniform_placement_is_uniform_in_a_hexagon():
    grid = hexagons()
    cell = np.full(20_000, 7)
    xy = place_in_cells(grid, cell, seed=8)
    hexagon = np.asarray(grid.cells.geometry.array)[7]
    x0, y0, x1, y1 = hexagon.bounds
    # The share in the left half of the hexagon's box is 1/2 by symmetry; in the box's bottom
    # fifth it is the area of that strip of the hexagon over its area.
    strip = shapely.box(x0, y0, x1, y0 + (y1 - y0) / 5)
    share = shapely.area(hexagon.intersection(strip)) / hexagon.area
    for observed, expected in (((xy[:, 0] < (x0 + x1) / 2).mean(), 0.5),
                               ((xy[:, 1] < y0 + (y1 - y0) / 5).mean(), share)):
        assert stats.binomtest(int(observed * len(xy)), len(xy), expected).pvalue > 1e-3


def test_raster_weights_place_points_in_weighted_pixels_of_the_polygon(tmp_path):
    rasterio = pytest.importorskip("rasterio")
    from rasterio.transform import from_origin

    grid = hexagons()
    path = tmp_path / "weights.tif"
    values = np.zeros((50, 60), dtype="float32")
    values[:, :30] = 1.0  # only the western half of the extent has weight
    with rasterio.open(path, "w", driver="GTiff", width=60, height=50, count=1,
                       dtype="float32", crs=grid.crs.to_wkt(),
                       transform=from_origin(0.0, 5000.0, 100.0, 100.0)) as dst:
        dst.write(values, 1)
    straddling = grid.locate([[3000.0, 2500.0]])[0]
    xy = place_in_cells(grid, np.full(2000, straddling), seed=9,
                        weights=geosynth.rasters.read_weights(path, grid))
    assert (grid.locate(xy) == straddling).all()
    assert (xy[:, 0] <= 3000.0).all()


def test_dp_release_and_tune_run_on_hexagons():
    grid = hexagons()
    data, _ = planted(grid, seed=12, per_cell=3.0)
    counts = prepare(data, grid, ATTRIBUTES)
    counts = prepare(data, grid, ATTRIBUTES, levels=counts.levels)
    from geosynth.dp import dp_release

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        release = dp_release(counts, 2.0, 2, n_iter=300, burn_in=100, progress=False)
    assert len(release.releases) == 2
    assert (grid.locate(release.releases[0]) >= 0).all()
    region = shapely.box(*grid.bounds)
    tuning = geosynth.tune(data, ATTRIBUTES, [geosynth.Candidate(hex_size=600.0), 1000.0],
                           region=region, m=2, n_quadrants=30, seed=1, progress=False,
                           fit_options={"n_iter": 300, "burn_in": 100})
    assert tuning.table.loc["hex 600 m", "hex_size"] == 600.0
    assert np.isfinite(tuning.table["true_match_rate"]).all()


def test_tune_compares_areal_units_with_squares():
    areas = georgia()
    counties = Grid.from_polygons(areas, id_column="AreaKey")
    data, _ = planted(counties, seed=13, per_cell=4.0)
    region = shapely.union_all(np.asarray(areas.geometry.array))
    candidates = [geosynth.Candidate(grid=counties), 60_000.0,
                  geosynth.Candidate(grid=counties, epsilon=2.0)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tuning = geosynth.tune(data, ATTRIBUTES, candidates, region=region, m=2,
                               n_quadrants=30, seed=1, progress=False,
                               fit_options={"n_iter": 300, "burn_in": 100})
    row = tuning.table.loc["areal lattice, 159 cells"]
    assert row["n_cells"] == 159 and row["shape"] == "-"
    assert np.isfinite(row["true_match_rate"]) and np.isfinite(row["intensity_correlation"])
    dp_row = tuning.table.loc["areal lattice, 159 cells, ε=2"]
    assert np.isnan(dp_row["true_match_rate"]) and dp_row["epsilon"] == 2.0
    # The same areas built again are the same candidate; other adjacency is another one.
    again = geosynth.Candidate(grid=Grid.from_polygons(georgia(), id_column="AreaKey"))
    rook = geosynth.Candidate(grid=Grid.from_polygons(areas, contiguity="rook"))
    assert again.settings == candidates[0].settings != rook.settings


def test_tune_refuses_a_dp_grid_whose_bounds_come_from_the_points():
    grid = hexagons()
    data, _ = planted(grid, seed=14, per_cell=1.0)
    from_points = Grid.from_points(data, cell_size=500.0)
    with pytest.raises(geosynth.errors.InputError, match="took its bounds from the points"):
        geosynth.tune(data, ATTRIBUTES, [geosynth.Candidate(grid=from_points, epsilon=1.0)])
    with pytest.raises(geosynth.errors.InputError, match="grid must be a geosynth.Grid"):
        geosynth.Candidate(grid="tracts.gpkg")


def test_release_geopackage_holds_the_areas_without_private_ids(case, fitted, tmp_path):
    kind, grid, data, _, _ = case
    releases = [geosynth.to_public(r) for r in geosynth.synthesize(fitted, data, m=2, seed=5)]
    path = io.write_release(tmp_path / "release.gpkg", releases, fit=fitted,
                            include_intensity=True)
    layer = gpd.read_file(path, layer="grid")
    assert len(layer) == grid.n_cells and "area_id" not in layer.columns
    assert any(column.startswith("lambda_") for column in layer.columns)
    # (GeoPackage may store a layer of mixed polygons as MultiPolygons: compare topologically.)
    assert shapely.equals(np.asarray(layer.geometry.array),
                          np.asarray(grid.cells.geometry.array)).all()
    assert io.read_release(path).metadata["lattice"]["kind"] == kind
    with pytest.raises(GridError, match="needs a square lattice"):
        io.write_intensity_geotiff(fitted, tmp_path / "lambda.tif")


def test_public_area_ids_are_written_only_when_declared_public(tmp_path):
    areas = georgia()
    grid = Grid.from_polygons(areas, id_column="AreaKey", public_ids=True)
    data, _ = planted(grid, seed=13, per_cell=2.0)
    counts = prepare(data, grid, ATTRIBUTES)
    fit = PaivaModel().fit(counts, n_iter=200, burn_in=100, seed=1, progress=False)
    releases = [geosynth.to_public(r) for r in geosynth.synthesize(fit, data, m=1, seed=2)]
    path = io.write_release(tmp_path / "public.gpkg", releases, fit=fit)
    layer = gpd.read_file(path, layer="grid")
    assert layer["area_id"].astype(str).tolist() == areas["AreaKey"].astype(str).tolist()
    # A lattice rebuilt to publish the ids after a private fit: its repr is the fit's, so the
    # refusal says what differs.
    private = PaivaModel().fit(prepare(data, Grid.from_polygons(areas, id_column="AreaKey"),
                                       ATTRIBUTES), n_iter=200, burn_in=100, seed=1,
                               progress=False)
    with pytest.raises(InputError, match=r"its public_ids is True and the fit's False \(build "
                                         r"the lattice with public_ids=True before the fit"):
        io.write_release(tmp_path / "again.gpkg", releases, fit=private, grid=grid)
    # A lattice given an exposure has the repr of the one without: said too.
    by_area = Grid.from_polygons(areas, id_column="AreaKey", public_ids=True, exposure="area")
    with pytest.raises(InputError, match=r"its exposure is the habitable area and the fit's the "
                                         r"habitable fraction"):
        io.write_release(tmp_path / "again.gpkg", releases, fit=fit, grid=by_area)


def test_review_map_draws_the_intensity_of_each_area(case, fitted):
    pytest.importorskip("folium")
    from geosynth import maps

    _, grid, data, _, _ = case
    releases = geosynth.synthesize(fitted, data, m=1, seed=5)
    html = maps.review_map(data, releases, fit=fitted).get_root().render()
    assert html.count('"cell_id"') >= grid.n_cells  # one choropleth feature per cell
