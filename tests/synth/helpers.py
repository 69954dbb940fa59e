"""Builders for the synthesizer tests: point data, stub fits and rasters."""

import geopandas as gpd
import numpy as np
import pandas as pd

from geosynth import PaivaFit, PaivaModel

CRS = "EPSG:31983"


def make_points(n, bounds=(0.0, 0.0, 120.0, 90.0), seed=0, crs=CRS, continuous=True):
    """Uniform points with attributes a in {0, 1}, c in {"u", "v"} and z depending on them."""
    rng = np.random.default_rng(seed)
    xmin, ymin, xmax, ymax = bounds
    x = rng.uniform(xmin, xmax, n)
    y = rng.uniform(ymin, ymax, n)
    a = rng.integers(0, 2, n)
    c = np.where(rng.random(n) < 0.4, "u", "v")
    data = {"a": a, "c": c, "other": np.arange(n) % 7}  # a code of 7 levels, no ID
    if continuous:
        data["z"] = 10.0 + 3.0 * a + 0.05 * x + rng.normal(0.0, 2.0, n)
    return gpd.GeoDataFrame(data, geometry=gpd.points_from_xy(x, y), crs=crs)


def stub_fit(counts, lam):
    """A real PaivaFit whose posterior draws of λ are ``lam`` (chains, draws, G, B)."""
    lam = np.asarray(lam, dtype=np.float64)
    with np.errstate(divide="ignore"):
        eta = np.log(lam).astype(np.float32)
    chains, draws, n_cells, _ = eta.shape
    return PaivaFit(
        model=PaivaModel(),
        counts=counts,
        scalar_names=[],
        scalars=np.zeros((chains, draws, 0)),
        theta=np.zeros((chains, draws, n_cells), dtype=np.float32),
        beta=None,
        eta=eta,
    )


def random_lambda(counts, chains=2, draws=10, seed=0):
    rng = np.random.default_rng(seed)
    shape = (chains, draws, counts.n_cells, counts.n_combos)
    return np.exp(rng.normal(0.0, 1.0, shape))


def from_origin(west, north, xsize, ysize):
    """North-up geotransform (as rasterio.transform.from_origin, without its deprecation)."""
    from affine import Affine

    return Affine(xsize, 0.0, west, 0.0, -ysize, north)


def write_raster(path, values, transform, crs=CRS, nodata=None):
    import rasterio

    values = np.asarray(values, dtype=np.float64)
    with rasterio.open(
        path,
        "w",
        driver="GTiff",
        height=values.shape[0],
        width=values.shape[1],
        count=1,
        dtype="float64",
        crs=crs,
        transform=transform,
        nodata=nodata,
    ) as dst:
        dst.write(values, 1)
    return path


def frame_with_index(gdf, labels):
    out = gdf.copy()
    out.index = pd.Index(labels)
    return out
