"""write_intensity_geotiff: the posterior mean intensity as a north-up GeoTIFF."""

import copy
import dataclasses
import warnings

import numpy as np
import pyproj
import pytest
import rasterio
import shapely
from rasterio.transform import Affine

from geosynth import Grid, PaivaFit, PaivaModel, prepare
from geosynth.errors import DataWarning, InputError, PrivacyLeakWarning
from geosynth.io import write_intensity_geotiff
from tests.io.helpers import CRS, XMAX, XMIN, YMAX, YMIN, names


def test_geotiff_round_trip(tmp_path, fitted):
    fit, _, _ = fitted
    path = tmp_path / "intensity.tif"
    assert write_intensity_geotiff(fit, path) == path
    lam = fit.posterior_mean_lambda()
    labels = fit.counts.combination_labels()
    with rasterio.open(path) as src:
        assert src.count == lam.shape[1] == 12
        assert src.descriptions == tuple(labels)
        assert src.tags(1) == {"y": "0", "x1": "1", "x2": "1"}
        assert pyproj.CRS.from_wkt(src.crs.to_wkt()).equals(pyproj.CRS(CRS))
        assert src.transform == Affine(1250.0, 0.0, XMIN, 0.0, -1250.0, YMAX)
        assert (src.width, src.height) == (8, 8)
        assert src.dtypes == ("float32",) * 12
        assert np.isnan(src.nodata)
        bands = src.read()
    # cell 0 is lattice row 0 (south), column 0: the last raster row; cell 56 (row 7) the first
    grid = fit.grid
    assert (grid.cell_row[0], grid.cell_col[0]) == (0, 0)
    assert (grid.cell_row[56], grid.cell_col[56]) == (7, 0)
    assert not np.allclose(lam[0], lam[56])  # so a missing flip would be caught
    np.testing.assert_array_equal(bands[:, 7, 0], lam[0].astype(np.float32))
    np.testing.assert_array_equal(bands[:, 0, 0], lam[56].astype(np.float32))
    np.testing.assert_array_equal(
        bands[:, 7 - grid.cell_row, grid.cell_col], lam.T.astype(np.float32)
    )


def test_geotiff_of_an_exact_fit_warns_how_closely_it_follows_the_counts(tmp_path, fitted):
    # The posterior mean of a sparse pair sits near its count: rounded, the file gave most
    # exact counts per (cell, combination) with no word of it.
    fit, _, _ = fitted
    counts = fit.counts.counts
    share = np.mean(np.rint(fit.posterior_mean_lambda()) == counts)
    with pytest.warns(PrivacyLeakWarning, match=rf"intensity.tif holds the posterior mean "
                      rf"intensity of a fit of the exact counts: rounded, it equals the "
                      rf"confidential count of {share:.0%} of the") as caught:
        write_intensity_geotiff(fit, tmp_path / "intensity.tif")
    assert caught[0].filename == __file__
    assert 0.5 < share < 1  # an honest figure: neither all nor none of the pairs
    # A noise-aware fit's intensity is post-processing of eps-DP counts: no warning.
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        dp_like = dataclasses.replace(fit, noise_scale=1.0)
        write_intensity_geotiff(dp_like, tmp_path / "dp.tif")


def _fake_fit(counts, values):
    """A PaivaFit with one draw whose intensity is ``values`` (G, B)."""
    eta = np.log(values).astype(np.float32)[None, None]
    G = values.shape[0]
    return PaivaFit(
        model=PaivaModel(),
        counts=counts,
        scalar_names=[],
        scalars=np.zeros((1, 1, 0)),
        theta=np.zeros((1, 1, G), np.float32),
        beta=None,
        eta=eta,
    )


def test_geotiff_of_a_clipped_grid_has_nan_outside(tmp_path, confidential):
    region = shapely.Polygon([(XMIN, YMIN), (XMAX, YMIN), (XMIN, YMAX)])  # south-west triangle
    grid = Grid.regular((XMIN, YMIN, XMAX, YMAX), shape=(4, 5), crs=CRS, region=region)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        counts = prepare(confidential, grid, attributes=["y"], outside="drop")
    values = np.column_stack([np.arange(1.0, grid.n_cells + 1), 100 + np.arange(grid.n_cells)])
    fit = _fake_fit(counts, values)
    path = write_intensity_geotiff(fit, tmp_path / "clipped.tif")
    with rasterio.open(path) as src:
        assert src.descriptions == ("y=0", "y=1")
        assert src.transform == Affine(2000.0, 0.0, XMIN, 0.0, -2500.0, YMAX)
        bands = src.read()
    assert bands.shape == (2, 4, 5)
    kept = np.zeros((4, 5), dtype=bool)
    kept[3 - grid.cell_row, grid.cell_col] = True
    assert 0 < kept.sum() == grid.n_cells < 20
    assert np.isnan(bands[:, ~kept]).all() and np.isfinite(bands[:, kept]).all()
    assert np.isnan(bands[:, 0, 4]).all()  # north-east corner, outside the triangle
    lam = fit.posterior_mean_lambda()
    np.testing.assert_allclose(bands[:, 3 - grid.cell_row, grid.cell_col], lam.T, rtol=1e-6)
    np.testing.assert_allclose(bands[0, 3, 0], 1.0, rtol=1e-6)  # cell 0, south-west


def test_geotiff_refuses_non_regular_lattices(tmp_path, fitted):
    fit, _, _ = fitted
    path = tmp_path / "intensity.tif"
    not_a_grid = dataclasses.replace(fit, counts=dataclasses.replace(fit.counts, grid=object()))
    with pytest.raises(InputError, match="lattice is a object, not a regular geosynth.Grid"):
        write_intensity_geotiff(not_a_grid, path)
    uneven = copy.copy(fit.grid)
    edges = np.array(fit.grid.bounds[0] + 1250.0 * np.arange(9))
    edges[3] += 400.0
    uneven._xedges = edges
    irregular = dataclasses.replace(fit, counts=dataclasses.replace(fit.counts, grid=uneven))
    with pytest.raises(InputError, match="is not regular"):
        write_intensity_geotiff(irregular, path)
    with pytest.raises(InputError, match="fit must be the geosynth.PaivaFit"):
        write_intensity_geotiff(fit.counts, path)
    assert not path.exists()


@pytest.mark.parametrize("name", ["c.gpkg", "c.png", "intensity"])
def test_geotiff_refuses_a_name_of_another_format(tmp_path, fitted, name):
    # "c.gpkg" and "c.png" were written as GeoTIFFs under those names.
    fit, _, _ = fitted
    with pytest.raises(InputError, match=r"must end in \.tif or \.tiff: the intensity surface "
                                         r"is a GeoTIFF; name it .*\.tif"):
        write_intensity_geotiff(fit, tmp_path / name)
    assert list(tmp_path.iterdir()) == []
    assert write_intensity_geotiff(fit, tmp_path / "c.TIFF").exists()


def test_geotiff_refuses_to_overwrite_and_is_atomic(tmp_path, fitted, monkeypatch):
    fit, _, _ = fitted
    path = tmp_path / "intensity.tif"
    path.write_bytes(b"old")
    with pytest.raises(InputError, match=r"intensity.tif exists.*--overwrite"):
        write_intensity_geotiff(fit, path)
    assert path.read_bytes() == b"old"

    real_open = rasterio.open
    created = []

    def broken_open(target, mode="r", **kwargs):
        dataset = real_open(target, mode, **kwargs)  # the temporary file now exists
        dataset.close()
        created.append(target)
        raise rasterio.errors.RasterioIOError("no space left")

    with monkeypatch.context() as patch:
        patch.setattr(rasterio, "open", broken_open)
        with pytest.raises(rasterio.errors.RasterioIOError, match="no space"):
            write_intensity_geotiff(fit, path, overwrite=True)
    assert len(created) == 1 and created[0].parent.parent == tmp_path
    assert not created[0].exists()
    assert path.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["intensity.tif"]
    write_intensity_geotiff(fit, path, overwrite=True)
    with rasterio.open(path) as src:
        assert src.count == 12


def test_geotiff_created_meanwhile_is_not_replaced(tmp_path, fitted, monkeypatch):
    fit, _, _ = fitted
    path = tmp_path / "intensity.tif"
    real_open = rasterio.open

    def another_run_finishes_first(target, mode="r", **kwargs):
        if mode == "w" and not path.exists():
            path.write_bytes(b"the other run's raster")
        return real_open(target, mode, **kwargs)

    monkeypatch.setattr(rasterio, "open", another_run_finishes_first)
    with pytest.raises(InputError, match=r"intensity.tif was created by another process"):
        write_intensity_geotiff(fit, path)
    assert path.read_bytes() == b"the other run's raster"
    assert names(tmp_path) == ["intensity.tif"]


def test_a_stale_aux_xml_does_not_relabel_a_new_geotiff(tmp_path, fitted):
    # GDAL reads intensity.tif.aux.xml as part of intensity.tif: left from an older file (QGIS
    # writes one), it gave the new surface the old band descriptions, another fit's labels.
    fit, _, _ = fitted
    path = tmp_path / "intensity.tif"
    write_intensity_geotiff(fit, path)
    with rasterio.open(path) as src:
        n_bands = src.count
        expected = src.descriptions
    aux = "".join(f'<PAMRasterBand band="{b}"><Description>old {b}</Description></PAMRasterBand>'
                  for b in range(1, n_bands + 1))
    (tmp_path / "intensity.tif.aux.xml").write_text(f"<PAMDataset>{aux}</PAMDataset>")
    (tmp_path / "intensity.tif.ovr").write_bytes(b"stale overviews")
    with rasterio.open(path) as src:
        assert src.descriptions[0] == "old 1"  # GDAL does read it
    write_intensity_geotiff(fit, path, overwrite=True)
    with rasterio.open(path) as src:
        assert src.descriptions == expected
    assert sorted(p.name for p in tmp_path.iterdir()) == ["intensity.tif"]


def test_geotiff_refuses_an_attribute_name_a_band_tag_cannot_hold(tmp_path, confidential):
    # GDAL stores band tags as name=value: the tag "grp=x" of level "a" read back as "grp".
    grid = Grid.regular((XMIN, YMIN, XMAX, YMAX), shape=(4, 5), crs=CRS)
    frame = confidential.rename(columns={"y": "grp=x"})
    counts = prepare(frame, grid, attributes=["grp=x"])
    fit = _fake_fit(counts, np.ones((grid.n_cells, 2)))
    path = tmp_path / "intensity.tif"
    with pytest.raises(InputError, match=r"attribute 'grp=x' contains '=', which cannot be in "
                                         r"the name of a GeoTIFF band tag"):
        write_intensity_geotiff(fit, path)
    # The dataset's 'attributes' tag lists them with commas: "a,b" read as two attributes.
    counts = prepare(confidential.rename(columns={"y": "a,b"}), grid, attributes=["a,b"])
    with pytest.raises(InputError, match=r"attribute 'a,b' contains ',', which separates"):
        write_intensity_geotiff(_fake_fit(counts, np.ones((grid.n_cells, 2))), path)
    assert names(tmp_path) == []


@pytest.mark.parametrize("value", [np.nan, np.inf, 1e39])
def test_geotiff_refuses_an_intensity_a_float32_band_cannot_hold(tmp_path, confidential, value):
    # NaN was written as the nodata value (read back as a cell outside the region) and values
    # past the float32 range as infinity, silently.
    grid = Grid.regular((XMIN, YMIN, XMAX, YMAX), shape=(4, 5), crs=CRS)
    counts = prepare(confidential, grid, attributes=["y"])
    values = np.ones((grid.n_cells, 2))
    values[6, 1] = value
    fit = _fake_fit(counts, values)
    with pytest.raises(InputError, match=r"fit: the posterior mean intensity is NaN, infinite or "
                                         r"beyond the float32 range in 1 cell\(s\) \(cell ids "
                                         r"\[6\]\).*fit the model again"):
        write_intensity_geotiff(fit, tmp_path / "intensity.tif")
    assert names(tmp_path) == []


@pytest.mark.parametrize(
    ("name", "levels", "message"),
    [
        ("y", {0: " b", 1: "b"}, r"attribute 'y': its level ' b' begins with whitespace"),
        ("y", {0: "", 1: "b"}, r"attribute 'y': its level '' is empty"),
        ("y", {0: "a\x1bb", 1: "ab"}, r"attribute 'y': its level 'a\?b' holds a control character"),
        (" grp", None, r"attribute ' grp': its name begins with whitespace"),
        ("grp\x01", None, r"attribute 'grp\?': its name holds a control character"),
    ],
)
def test_geotiff_refuses_names_and_levels_gdal_would_not_keep(
    tmp_path, confidential, name, levels, message
):
    # GDAL stores tags and descriptions in XML: it read " b" back as "b" (so the bands of " b"
    # and "b" carried the same tag), an empty level as no tag, and dropped control characters.
    grid = Grid.regular((XMIN, YMIN, XMAX, YMAX), shape=(4, 5), crs=CRS)
    frame = confidential.rename(columns={"y": name})
    if levels is not None:
        frame[name] = frame[name].map(levels)
    counts = prepare(frame, grid, attributes=[name])
    fit = _fake_fit(counts, np.ones((grid.n_cells, 2)))
    with pytest.raises(InputError, match=message + r".*recode it .* before geosynth.prepare"):
        write_intensity_geotiff(fit, tmp_path / "intensity.tif")
    assert names(tmp_path) == []


def test_geotiff_keeps_levels_with_inner_spaces_and_newlines(tmp_path, confidential):
    grid = Grid.regular((XMIN, YMIN, XMAX, YMAX), shape=(4, 5), crs=CRS)
    frame = confidential.copy()
    frame["y"] = frame["y"].map({0: "no one ", 1: "a\nb"})
    counts = prepare(frame, grid, attributes=["y"])
    path = write_intensity_geotiff(_fake_fit(counts, np.ones((grid.n_cells, 2))),
                                   tmp_path / "intensity.tif")
    with rasterio.open(path) as src:
        tags = [src.tags(b + 1) for b in range(src.count)]
        descriptions = src.descriptions
    expected = counts.combos["y"].tolist()
    assert sorted(expected) == ["a\nb", "no one "]
    assert tags == [{"y": level} for level in expected]
    assert list(descriptions) == counts.combination_labels()


@pytest.mark.parametrize("overwrite", ["no", "False", 0, None])
def test_geotiff_refuses_an_overwrite_that_is_not_a_bool(tmp_path, fitted, overwrite):
    # A string such as "no" is truthy: it replaced the existing file.
    fit, _, _ = fitted
    path = tmp_path / "intensity.tif"
    path.write_bytes(b"old")
    with pytest.raises(InputError, match=r"^overwrite must be True or False, got "):
        write_intensity_geotiff(fit, path, overwrite=overwrite)
    assert path.read_bytes() == b"old"
    assert names(tmp_path) == ["intensity.tif"]


def test_geotiff_refuses_a_path_that_is_not_a_path(fitted):
    fit, _, _ = fitted
    with pytest.raises(InputError, match=r"path must be a file path .*got NoneType"):
        write_intensity_geotiff(fit, None)


def test_a_folder_given_as_the_path_names_a_geotiff_too(tmp_path, fitted):
    # The message named release.gpkg, a GeoPackage, for the GeoTIFF's path.
    fit = fitted[0]
    with pytest.raises(InputError, match=r"is a directory; pass a file name in it \(e.g. "
                                         r"release.gpkg, intensity.tif\)"):
        write_intensity_geotiff(fit, tmp_path)


def test_files_without_a_crs_are_pointed_out(tmp_path, confidential):
    # Points and a grid without a CRS gave a GeoTIFF and a release file without one, without
    # a word: GIS software put them at its own origin or refused them.
    from geosynth import synthesize, to_public
    from geosynth.io import write_release

    data = confidential.set_crs(None, allow_override=True)
    grid = Grid.regular((XMIN, YMIN, XMAX, YMAX), shape=(4, 4))
    counts = prepare(data, grid, attributes=["y"])
    fit = PaivaModel().fit(counts, n_iter=40, burn_in=20, chains=1, seed=1, progress=False)
    public = [to_public(r, seed=2) for r in synthesize(fit, data, m=1, seed=3)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        write_intensity_geotiff(fit, tmp_path / "no_crs.tif")
        write_release(tmp_path / "no_crs.gpkg", public, fit=fit)
    said = [(str(w.message), w.filename) for w in caught if w.category is DataWarning]
    assert [text.split(" has no CRS")[0] for text, _ in said] == ["no_crs.tif", "no_crs.gpkg"]
    assert all("GIS software cannot place it" in text and where == __file__
               for text, where in said)
