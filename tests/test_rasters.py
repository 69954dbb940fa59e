"""Public rasters read over a lattice, and the core that places points by their tables."""

import os
import warnings

import numpy as np
import pytest

import geosynth
from geosynth import Grid, rasters
from geosynth.errors import DataWarning, InputError
from geosynth.synth import PixelTable, naive_synthesize, place_in_cells, synthesize
from geosynth.synth.placement import check_pixel_table
from tests.synth.helpers import (
    CRS,
    from_origin,
    make_points,
    random_lambda,
    stub_fit,
    write_raster,
)


@pytest.fixture
def grid():
    return Grid.regular((0, 0, 100, 100), shape=(2, 2), crs=CRS)


@pytest.fixture
def raster(tmp_path):
    values = np.zeros((4, 4))
    values[::2, ::2] = 1.0  # the north-west pixel of each cell
    values[0, 0] = 3.0
    return write_raster(tmp_path / "w.tif", values, from_origin(0, 100, 25, 25))


def test_read_weights_groups_the_pixels_by_cell(grid, raster):
    table = rasters.read_weights(raster, grid)
    assert isinstance(table, PixelTable)
    # Cells count from the south-west; the weights are scaled to a largest pixel of 1.
    np.testing.assert_allclose(table.total, [1 / 3, 1 / 3, 1.0, 1 / 3])
    np.testing.assert_array_equal(table.start, [0, 1, 2, 3, 4])
    np.testing.assert_allclose(table.boxes, [[0, 25, 25, 50], [50, 25, 75, 50],
                                             [0, 75, 25, 100], [50, 75, 75, 100]])


def test_a_path_an_open_dataset_and_the_arrays_give_one_table(grid, raster):
    import rasterio

    from_path = rasters.read_weights(raster, grid)
    with rasterio.open(raster) as dataset:
        from_dataset = rasters.read_weights(dataset, grid)
        band = rasters.read_band(dataset, grid, "weights")
    from_arrays = PixelTable.from_band(*band, grid)
    for table in (from_dataset, from_arrays):
        for name in ("boxes", "within", "start", "total"):
            np.testing.assert_array_equal(getattr(table, name), getattr(from_path, name))


def test_pixel_table_passes_none_and_tables_and_reads_the_rest(grid, raster):
    assert rasters.pixel_table(None, grid) is None
    table = rasters.read_weights(raster, grid)
    assert rasters.pixel_table(table, grid) is table
    np.testing.assert_array_equal(rasters.pixel_table(str(raster), grid).total, table.total)
    other = Grid.regular((0, 0, 100, 100), shape=(1, 2), crs=CRS)
    with pytest.raises(InputError, match=r"PixelTable of 4 cells, but the lattice has 2"):
        rasters.pixel_table(table, other)


@pytest.mark.parametrize("weights", ["w.tif", np.ones((2, 2)), 1.0])
def test_the_core_opens_no_file_and_names_the_reader(grid, weights):
    # The core (geosynth.synth) places points by a table of arrays: a raster path given to
    # it is refused with the reader to call, not opened.
    gdf = make_points(40, bounds=(0, 0, 100, 100), seed=1, continuous=False)
    counts = geosynth.prepare(gdf, grid, attributes=["a"])
    fit = stub_fit(counts, random_lambda(counts, chains=1, draws=2))
    calls = [lambda: place_in_cells(grid, [0], seed=1, weights=weights),
             lambda: synthesize(fit, gdf, m=1, seed=1, weights=weights),
             lambda: naive_synthesize(gdf, grid, m=1, seed=1, weights=weights)]
    for call in calls:
        with pytest.raises(InputError, match=r"weights must be a geosynth\.synth\.PixelTable "
                                             r"here.*geosynth\.rasters\.read_weights"):
            call()
    with pytest.raises(InputError, match="PixelTable"):
        check_pixel_table(weights, grid)


def test_the_top_level_reads_a_raster_path_as_the_core_reads_its_table(grid, raster):
    gdf = make_points(300, bounds=(0, 0, 100, 100), seed=2, continuous=False)
    counts = geosynth.prepare(gdf, grid, attributes=["a"])
    fit = stub_fit(counts, random_lambda(counts, chains=1, draws=2))
    table = rasters.read_weights(raster, grid)
    pairs = [
        (geosynth.synthesize(fit, gdf, m=1, seed=5, weights=raster),
         synthesize(fit, gdf, m=1, seed=5, weights=table)),
        (geosynth.naive_synthesize(gdf, grid, m=1, seed=5, weights=str(raster)),
         naive_synthesize(gdf, grid, m=1, seed=5, weights=table)),
    ]
    for (top,), (core,) in pairs:
        assert top.geometry.geom_equals_exact(core.geometry, 0).all()
        xy = np.column_stack([top.geometry.x, top.geometry.y])
        assert ((xy[:, 0] % 50 < 25) & (xy[:, 1] % 50 >= 25)).all()  # the weighted pixels


def test_the_top_level_refuses_a_bad_first_argument_before_reading(grid, tmp_path):
    # Without a fit's grid there is nothing to read the raster for: the fit is refused.
    gdf = make_points(20, bounds=(0, 0, 100, 100), seed=2, continuous=False)
    with pytest.raises(InputError) as info:
        geosynth.synthesize("not a fit", gdf, m=1, weights=tmp_path / "missing.tif")
    assert "missing.tif" not in str(info.value)
    with pytest.raises(InputError, match="grid must be a geosynth.lattice.Grid"):
        geosynth.naive_synthesize(gdf, "not a grid", m=1, weights=tmp_path / "missing.tif")


def test_a_prior_and_weights_share_one_reader_of_band_checks(grid, tmp_path):
    # The DP prior's raster is checked by the same read_band as the weights: its messages
    # name the prior.
    from geosynth.dp.onthemap import cell_prior

    path = write_raster(tmp_path / "n.tif", -np.ones((4, 4)), from_origin(0, 100, 25, 25))
    with pytest.raises(InputError, match="^prior raster has 16 negative or infinite"):
        cell_prior(path, grid)
    with pytest.raises(InputError, match="^weights raster has 16 negative or infinite"):
        rasters.read_weights(path, grid)


def test_nan_weights_of_a_table_built_from_arrays_weigh_zero(grid):
    values = np.full((4, 4), np.nan)
    values[0, 1] = 2.0  # north-west cell, its north-east pixel
    table = PixelTable.from_band(values, from_origin(0, 100, 25, 25), 0, 0, grid)
    np.testing.assert_allclose(table.total, [0, 0, 1, 0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        xy = place_in_cells(grid, np.full(100, 2), seed=1, weights=table)
    assert ((xy[:, 0] >= 25) & (xy[:, 0] < 50) & (xy[:, 1] >= 75)).all()
    with pytest.raises(InputError, match="negative or infinite"):
        PixelTable.from_band(-values, from_origin(0, 100, 25, 25), 0, 0, grid)


def test_the_examples_in_the_docstrings_run():
    import doctest

    result = doctest.testmod(rasters)
    assert result.attempted > 0 and result.failed == 0


def test_a_crs_without_authority_code_is_named_shortly(grid, tmp_path):
    # UTM 23S on GRS80 with a null towgs84, written from proj4: refused as another CRS (the
    # datum is not formally SIRGAS 2000), with a WKT of about 900 characters in the message.
    from geosynth.errors import CRSError

    proj4 = "+proj=utm +zone=23 +south +ellps=GRS80 +towgs84=0,0,0,0,0,0,0 +units=m +no_defs"
    path = write_raster(tmp_path / "p.tif", np.ones((4, 4)), from_origin(0, 100, 25, 25),
                        crs=proj4)
    with pytest.raises(CRSError) as info:
        rasters.read_weights(path, grid)
    message = str(info.value)
    assert "PROJCS[" not in message and len(message) < 500
    assert "(no authority code)" in message and "rio edit-info --crs" in message


def test_packed_values_are_read_unpacked(tmp_path, grid):
    # A uint16 band storing raw 1000 and 1010 with scale 0.5 and offset -500 holds the weights
    # 0 and 5: read raw, the pixel of weight 0 got half the points.
    import rasterio

    path = tmp_path / "packed.tif"
    with rasterio.open(path, "w", driver="GTiff", height=1, width=4, count=1, dtype="uint16",
                       crs=CRS, transform=from_origin(0, 100, 25, 100)) as dst:
        dst.write(np.array([[1000, 1010, 1000, 1010]], dtype=np.uint16), 1)
        dst.offsets = (-500.0,)
        dst.scales = (0.5,)
    with rasterio.open(path) as dataset:
        band = rasters.read_band(dataset, grid, "weights")
    np.testing.assert_array_equal(band.values, [[0.0, 5.0, 0.0, 5.0]])  # raw * 0.5 - 500
    xy = place_in_cells(grid, np.full(500, 2), seed=1, weights=rasters.read_weights(path, grid))
    assert (xy[:, 0] >= 25).all()  # cell 2's pixel of positive weight is its east half


def test_a_raster_path_is_read_as_the_file_it_names(tmp_path, monkeypatch):
    # rasterio read "file:w.tif" as w.tif and "s3:w.tif" from S3: a str's start is a scheme.
    from geosynth.rasters import read_raster

    monkeypatch.chdir(tmp_path)
    write_raster(tmp_path / "w.tif", np.full((2, 2), 1.0), from_origin(0, 2, 1, 1))
    write_raster(tmp_path / "file:w.tif", np.full((2, 2), 2.0), from_origin(0, 2, 1, 1))
    first = lambda dataset: float(dataset.read(1)[0, 0])  # noqa: E731
    assert read_raster("file:w.tif", "weights", first, "", "") == 2.0
    assert read_raster("w.tif", "weights", first, "", "") == 1.0
    os.mkfifo(tmp_path / "pipe.tif")
    with pytest.raises(InputError, match=r"weights '.*pipe.tif' is not a regular file"):
        read_raster("pipe.tif", "weights", first, "", "")


def test_cell_exposure_sums_the_raster_over_each_cell_with_a_floor(grid, tmp_path):
    values = np.zeros((4, 4))
    values[:2, :2] = 12.0  # the north-west cell: 4 pixels of 12 people
    values[2:, 2:] = 1.0  # the south-east cell: 4 pixels of 1
    values[0, 2] = 3.0  # the north-east cell: one pixel of 3
    path = write_raster(tmp_path / "people.tif", values, from_origin(0, 100, 25, 25))
    with pytest.warns(DataWarning, match=r"raised 1 of 4 cells to its floor \(0.01 of the mean "
                                         r"cell total\): 1 that the raster covers with no "
                                         r"positive pixel .* and 0 below the floor"):
        exposure = rasters.cell_exposure(path, grid)
    # Cells count from the south-west: SW nobody, SE 4, NW 48, NE 3 (relative to 48 here).
    relative = exposure / exposure[2] * 48
    floor = 0.01 * np.mean([4, 48, 3])
    np.testing.assert_allclose(relative, [floor, 4, 48, 3], rtol=1e-12)
    table = rasters.read_weights(path, grid)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        np.testing.assert_array_equal(rasters.cell_exposure(table, grid), exposure)
    with pytest.warns(DataWarning, match=r"raised 3 of 4 cells .* 1 that .* and 2 below"):
        mean = rasters.cell_exposure(path, grid, minimum=1.0)
    np.testing.assert_allclose(mean / exposure[2] * 48, [55 / 3, 55 / 3, 48, 55 / 3], rtol=1e-12)
    for minimum in (0, 1e-7, -0.5, 1.5, float("nan")):
        with pytest.raises(InputError, match=r"minimum must be in \[1e-06, 1\]"):
            rasters.cell_exposure(path, grid, minimum=minimum)
    weighted = grid.with_exposure(exposure, source="population raster")
    assert weighted.exposure[2] / weighted.exposure[3] == pytest.approx(16.0)
    # The table read for the grid still places points on the grid with its exposure.
    assert check_pixel_table(table, weighted) is table
    assert rasters.pixel_table(table, weighted) is table


def test_no_weights_or_no_grid_is_refused_by_name(grid, raster):
    # "'NoneType' object has no attribute 'total'", "'str' object has no attribute 'crs'".
    for call in (rasters.cell_exposure, rasters.with_cell_exposure):
        with pytest.raises(InputError, match="weights is None: an exposure is read from a "
                                             "raster of public weights"):
            call(None, grid)
    for bad in ("grid", None):
        for call in (rasters.read_weights, rasters.cell_exposure, rasters.with_cell_exposure):
            with pytest.raises(InputError, match="grid must be a geosynth.lattice.Grid"):
                call(raster, bad)


def test_an_alpha_band_before_the_data_band_is_a_mask_not_the_weights(grid, raster, tmp_path):
    # Band 1 was read whatever it was: an alpha band first gave its 255s as the weights, and
    # the data band went unread.
    import rasterio
    from rasterio.enums import ColorInterp

    with rasterio.open(raster) as single:
        data = single.read(1)
    path = tmp_path / "alpha_first.tif"
    with rasterio.open(path, "w", driver="GTiff", height=4, width=4, count=2, dtype="float64",
                       crs=CRS, transform=from_origin(0, 100, 25, 25)) as dst:
        dst.write(np.full((4, 4), 255.0), 1)
        dst.write(data, 2)
        dst.colorinterp = [ColorInterp.alpha, ColorInterp.gray]
    with rasterio.open(path) as check:
        assert check.colorinterp[0] == ColorInterp.alpha  # the file is what the test says
    np.testing.assert_allclose(rasters.read_weights(path, grid).total,
                               rasters.read_weights(raster, grid).total)


def test_a_file_of_several_rasters_is_refused_with_the_names_to_pass(grid, tmp_path):
    # A GeoPackage with two raster tables opens with no band, only subdatasets: IndexError.
    import rasterio

    path = tmp_path / "two.gpkg"
    profile = {"driver": "GPKG", "width": 4, "height": 4, "count": 1, "dtype": "uint8",
               "crs": CRS, "transform": from_origin(0, 100, 25, 25)}
    for table, more in (("a", {}), ("b", {"APPEND_SUBDATASET": "YES"})):
        with rasterio.open(path, "w", RASTER_TABLE=table, **profile, **more) as dst:
            dst.write(np.ones((4, 4), dtype=np.uint8), 1)
    said = (r"^weights raster has no data band, only 2 subdatasets .*'GPKG:.*two\.gpkg:a'.*"
            r"`gdal_translate GPKG:.*two\.gpkg:a weights\.tif`")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # rasterio: a container has no geotransform
        with pytest.raises(InputError, match=said):
            rasters.read_weights(path, grid)
        with pytest.raises(InputError, match=said):
            rasters.check_weights_raster(path, grid.crs)


def test_a_bare_image_is_refused_for_its_geotransform_without_rasterio_warning(grid, tmp_path):
    # A plain TIFF (no geotransform, no CRS) over a grid with a CRS: rasterio's
    # NotGeoreferencedWarning was printed raw (its file and line, in the command line too),
    # then the error asked only for a CRS; set, the next run failed on the geotransform.
    import rasterio
    from rasterio.errors import NotGeoreferencedWarning

    path = tmp_path / "plain.tif"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotGeoreferencedWarning)
        with rasterio.open(path, "w", driver="GTiff", width=4, height=4, count=1,
                           dtype="float32") as dst:
            dst.write(np.ones((4, 4), dtype="float32"), 1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for read in (lambda: rasters.read_weights(path, grid),
                     lambda: rasters.check_weights_raster(path, grid.crs)):
            with pytest.raises(InputError, match=r"^weights raster has no geotransform"):
                read()


def test_a_grey_geopackage_raster_is_explained_and_reads_as_grey_and_alpha(grid, tmp_path):
    # GDAL opens a byte GeoPackage raster as RGBA whatever its tiles hold: a one-band
    # population raster was refused as "3 data bands" with advice for a TIFF.
    import rasterio

    path = tmp_path / "people.gpkg"
    values = np.arange(1, 17, dtype=np.uint8).reshape(4, 4)
    with rasterio.open(path, "w", driver="GPKG", width=4, height=4, count=1, dtype="uint8",
                       crs=CRS, transform=from_origin(0, 100, 25, 25)) as dst:
        dst.write(values, 1)
    with pytest.raises(InputError, match=r"3 data bands.*GeoPackage of byte tiles.*"
                                         r"BAND_COUNT=2"):
        rasters.read_weights(path, grid)
    with rasterio.open(path, BAND_COUNT=2) as grey:  # the fix the message names
        table = rasters.read_weights(grey, grid)
    # cells from the south-west; each sums its 2 x 2 pixels, scaled to a largest pixel of 1
    sums = [values[2:, :2].sum(), values[2:, 2:].sum(), values[:2, :2].sum(), values[:2, 2:].sum()]
    np.testing.assert_allclose(table.total, np.array(sums) / 16.0)
    rgb = tmp_path / "rgb.tif"
    with rasterio.open(rgb, "w", driver="GTiff", width=4, height=4, count=3, dtype="uint8",
                       crs=CRS, transform=from_origin(0, 100, 25, 25)) as dst:
        dst.write(np.stack([values] * 3))
    with pytest.raises(InputError) as plain:  # a TIFF of three bands gets no GeoPackage advice
        rasters.read_weights(rgb, grid)
    assert "3 data bands" in str(plain.value) and "GeoPackage" not in str(plain.value)
