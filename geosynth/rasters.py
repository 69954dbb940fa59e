"""Public rasters read over a lattice: placement weights, cell exposures and cell priors.

A raster of public weights (e.g. population density) places synthetic points within their cells
(:func:`read_weights` → :class:`geosynth.synth.PixelTable`) or weighs the cells of a
differentially private prior (:func:`geosynth.dp.cell_prior`). Both read band 1 of a north-up
raster in the grid's CRS over the grid's bounds, through :func:`read_band`, the one place that
checks a raster's CRS, bands, geotransform, overlap, size and values.

This module sits above the core: :mod:`geosynth.synth` places points by a
:class:`~geosynth.synth.PixelTable` of arrays and never opens a file. The layers and the top
(:func:`geosynth.synthesize`, :func:`geosynth.naive_synthesize`, :mod:`geosynth.dp`,
:mod:`geosynth.distributed`, the CLI's ``--weights``) take a raster path or an open rasterio
dataset and read it here.
"""

from __future__ import annotations

import math
import os
import warnings
from typing import Any, NamedTuple

import numpy as np
import pyproj

from geosynth._validation import check_no_nul, check_real
from geosynth.errors import CRSError, DataWarning, InputError, MemoryLimitError
from geosynth.lattice import Grid
from geosynth.synth.placement import PixelTable, check_grid, check_pixel_table

__all__ = [
    "MAX_WEIGHT_PIXELS",
    "Band",
    "WeightsLike",
    "cell_exposure",
    "check_weights_raster",
    "check_raster_band",
    "check_raster_crs",
    "check_raster_transform",
    "pixel_table",
    "raster_window",
    "read_band",
    "read_raster",
    "read_weights",
    "with_cell_exposure",
]

WeightsLike = Any  # str | os.PathLike | rasterio dataset opened for reading | PixelTable

#: Most pixels of a raster read over the lattice, about 2 GiB at the peak of reading; for a
#: weights raster counted in pieces (a pixel over k cells is k pieces, :func:`read_weights`).
MAX_WEIGHT_PIXELS = 2**23
# Peak memory of read_weights per piece of a pixel of positive weight (at most 256 bytes
# measured: the float64 copy, the pixel boxes, the pieces per cell in chunks and after
# sorting). The limit was 2**28 pixels "8 bytes each": a raster under it could take 60 GiB and
# be killed; then pixels as large as the cells, each in four of them, took 630 bytes a pixel.
_BYTES_PER_PIXEL = 256
# Smallest floor of cell_exposure: below it the floored cells were refused by the lattice as
# "more than 1e+15 times" apart from the others.
_MIN_FLOOR = 1e-6
# What read_raster's errors advise for a weights raster, and what it may be.
_OPEN_HINT = "pass the path of a GeoTIFF (or another GDAL raster) or an open rasterio dataset"
_EXPECTED = "a raster path or an open rasterio dataset"


class Band(NamedTuple):
    """Band 1 of a raster over a grid's bounds.

    Attributes
    ----------
    values : numpy.ndarray of float64, shape (rows, cols)
        The window's pixels; NaN where nodata, masked or NaN.
    transform : affine.Affine
        The raster's north-up geotransform (of the whole raster, not the window).
    row0, col0 : int
        The window's first row and column in the raster.
    """

    values: np.ndarray
    transform: Any
    row0: int
    col0: int


def read_weights(weights: WeightsLike, grid: Grid) -> PixelTable:
    """Read a raster of public weights for placing points in the cells of ``grid``.

    Parameters
    ----------
    weights : str, os.PathLike or rasterio dataset
        Single-band raster of non-negative weights in the grid CRS, north-up.
    grid : geosynth.lattice.Grid
        The lattice.

    Returns
    -------
    geosynth.synth.PixelTable
        The table :func:`geosynth.synth.place_in_cells`, :func:`geosynth.synth.synthesize` and
        :func:`geosynth.synth.naive_synthesize` take as ``weights``.

    Raises
    ------
    geosynth.errors.InputError
        The raster cannot be read, has several data bands or complex values, is
        rotated, has a zero or non-finite pixel size or origin or no geotransform
        (rasterio's identity), does not overlap the grid, has negative or infinite
        weights, or gives no habitable cell a positive weight.
    geosynth.errors.CRSError
        The raster CRS is not the grid's.
    geosynth.errors.MemoryLimitError
        The raster has more than :data:`MAX_WEIGHT_PIXELS` pixels over the grid.

    Examples
    --------
    >>> import numpy as np
    >>> from affine import Affine
    >>> from rasterio.io import MemoryFile
    >>> from geosynth.lattice import Grid
    >>> grid = Grid.regular((0, 0, 2, 1), shape=(1, 2), crs="EPSG:3857")
    >>> north_up = Affine(1, 0, 0, 0, -1, 1)  # 1 m pixels from the north-west corner (0, 1)
    >>> profile = dict(driver="GTiff", width=2, height=1, count=1, dtype="float64",
    ...                crs="EPSG:3857", transform=north_up)
    >>> with MemoryFile() as memory, memory.open(**profile) as raster:
    ...     raster.write(np.array([[0.0, 1.0]]), 1)
    ...     table = read_weights(raster, grid)
    >>> table.total.tolist()
    [0.0, 1.0]
    """
    check_grid(grid)  # "'str' object has no attribute 'crs'"
    return read_raster(
        weights, "weights", lambda dataset: PixelTable.from_band(
            *read_band(dataset, grid, "weights", pieces=True), grid),
        open_hint=_OPEN_HINT, expected=_EXPECTED,
    )


def check_weights_raster(weights: WeightsLike, crs: pyproj.CRS | None) -> None:
    """Check, before any lattice is read from it, that a weights raster can serve ``crs``.

    Opens it (a path) and checks its bands and CRS as :func:`read_weights` does, so that a
    caller reading it over several lattices (:func:`geosynth.tune`) refuses an unreadable
    file, a stack of bands or another CRS once, up front. What depends on a lattice (the
    overlap, the size, the values) is checked by :func:`read_weights`.

    Parameters
    ----------
    weights : str, os.PathLike or rasterio dataset
        The raster.
    crs : pyproj.CRS or None
        The CRS of the lattices it will be read over.

    Raises
    ------
    geosynth.errors.InputError
        The raster cannot be opened, or has several data bands or complex values.
    geosynth.errors.CRSError
        Its CRS is not ``crs``.
    """
    read_raster(weights, "weights", lambda dataset: _check_dataset(dataset, crs, "weights"),
                open_hint=_OPEN_HINT, expected=_EXPECTED)


def _check_dataset(dataset: Any, crs: pyproj.CRS | None, name: str) -> int:
    """Check an open raster's band, geotransform and CRS, in that order; return the band.

    The band first: a container of rasters has no CRS. The geotransform before the CRS,
    which a bare image lacks too (its fix comes first).
    """
    index = check_raster_band(dataset, name)
    check_raster_transform(dataset.transform, f"{name} raster")
    check_raster_crs(dataset.crs, crs, name)
    return index


def cell_exposure(weights: WeightsLike, grid: Grid, minimum: float = 0.01) -> np.ndarray:
    """Sum a public raster (a population) over the habitable part of each cell: its exposure.

    For :meth:`geosynth.Grid.with_exposure`: with the population of each cell as its exposure,
    the model smooths the rate per resident. The total of a cell is that of
    :func:`read_weights` (each pixel's value times the share of its area in the cell's
    habitable part), so a raster of people per pixel gives people per cell, and one of
    density gives a multiple of it: the totals are relative (:func:`read_weights` scales the
    raster by its largest value), and the scale goes into μ.

    A cell where the raster counts nobody (a park, a river bank, an industrial estate) can
    still hold records; with an exposure of 0 the model could place none there (and its
    records would have no likelihood). Every cell gets at least ``minimum`` times the mean of
    the positive totals.

    Parameters
    ----------
    weights : str, os.PathLike, rasterio dataset or geosynth.synth.PixelTable
        Single-band raster of non-negative public values in the grid CRS, north-up (as
        :func:`read_weights` takes), or its table read for ``grid``.
    grid : geosynth.lattice.Grid
        The lattice.
    minimum : float, default 0.01
        The floor of a cell's exposure, as a share of the mean positive total, in
        [1e-6, 1]: every cell below it (not only those it counts nobody in) is raised to it.

    Returns
    -------
    numpy.ndarray of float64, shape (n_cells,)
        Positive; proportional to the raster's totals where they are above the floor.

    Raises
    ------
    geosynth.errors.InputError
        ``minimum`` is not in [1e-6, 1], or what :func:`read_weights` raises.

    Warns
    -----
    geosynth.errors.DataWarning
        Cells were raised to the floor, saying how many the raster covers with no positive
        pixel: a raster that covers part of the lattice makes the rest read as nearly empty.

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from affine import Affine
    >>> from rasterio.io import MemoryFile
    >>> from geosynth.lattice import Grid
    >>> grid = Grid.regular((0, 0, 3, 1), shape=(1, 3), crs="EPSG:3857")
    >>> profile = dict(driver="GTiff", width=3, height=1, count=1, dtype="float64",
    ...                crs="EPSG:3857", transform=Affine(1, 0, 0, 0, -1, 1))
    >>> with MemoryFile() as memory, memory.open(**profile) as raster:
    ...     raster.write(np.array([[0.0, 100.0, 300.0]]), 1)
    ...     with warnings.catch_warnings():  # the first cell is raised to the floor
    ...         warnings.simplefilter("ignore")
    ...         exposure = cell_exposure(raster, grid)
    >>> (300 * exposure / exposure.max()).round(9).tolist()  # relative: 1% of the mean, 2
    [2.0, 100.0, 300.0]
    """
    check_grid(grid)
    if weights is None:  # pixel_table's None: "'NoneType' object has no attribute 'total'"
        raise InputError("weights is None: an exposure is read from a raster of public weights "
                         "(a path, a rasterio dataset or a PixelTable of read_weights)")
    share = check_real(minimum, "minimum")
    if not _MIN_FLOOR <= share <= 1:
        raise InputError(f"minimum must be in [{_MIN_FLOOR:g}, 1] (a share of the mean positive "
                         f"cell total), got {minimum!r}")
    total = np.asarray(pixel_table(weights, grid).total, dtype=np.float64)
    floor = share * total[total > 0].mean()
    empty, low = int((total == 0).sum()), int(((total > 0) & (total < floor)).sum())
    if empty or low:
        warnings.warn(
            f"cell_exposure raised {empty + low:,} of {grid.n_cells:,} cells to its floor "
            f"({share:g} of the mean cell total): {empty:,} that the raster covers with no "
            f"positive pixel (outside its extent, nodata or zero) and {low:,} below the floor. "
            "Where the raster does not cover the lattice, the model reads those cells as "
            "nearly empty of people (a fit worse than without the exposure): use a raster that "
            "covers the whole lattice",
            DataWarning, stacklevel=2)
    return np.maximum(total, floor)


def with_cell_exposure(weights: WeightsLike, grid: Grid, minimum: float = 0.01) -> Grid:
    """Return ``grid`` with its cells' totals of a public raster (a population) as exposure.

    :func:`cell_exposure` given to :meth:`geosynth.Grid.with_exposure` with the source
    ``"weights raster"``: what the CLI's ``--weights-exposure`` and the candidates of
    :func:`geosynth.tune` with ``weights_exposure`` fit. A placement table of ``weights`` read
    for ``grid`` serves the returned lattice too (the cells are the same).

    Parameters
    ----------
    weights : str, os.PathLike, rasterio dataset or geosynth.synth.PixelTable
        As :func:`cell_exposure` takes.
    grid : geosynth.lattice.Grid
        The lattice, without an exposure of its own (:attr:`geosynth.Grid.exposure_given`).
    minimum : float, default 0.01
        The floor of :func:`cell_exposure`.

    Returns
    -------
    geosynth.lattice.Grid

    Raises
    ------
    geosynth.errors.InputError
        What :func:`cell_exposure` and :meth:`geosynth.Grid.with_exposure` raise.

    Warns
    -----
    geosynth.errors.DataWarning
        As :func:`cell_exposure`.
    """
    exposure = cell_exposure(weights, grid, minimum)  # checks grid before grid.with_exposure
    return grid.with_exposure(exposure, source="weights raster")


def pixel_table(weights: WeightsLike, grid: Grid) -> PixelTable | None:
    """Return the placement table of ``weights``: None, a raster (read here) or a table read.

    Parameters
    ----------
    weights : None, str, os.PathLike, rasterio dataset or geosynth.synth.PixelTable
        The weights raster, or its table read for ``grid`` (:func:`read_weights`).
    grid : geosynth.lattice.Grid
        The lattice.

    Returns
    -------
    geosynth.synth.PixelTable or None

    Raises
    ------
    geosynth.errors.InputError
        A PixelTable of another number of cells, or what :func:`read_weights` raises.
    """
    if weights is None or isinstance(weights, PixelTable):
        return check_pixel_table(weights, grid)
    return read_weights(weights, grid)


def read_band(dataset: Any, grid: Grid, name: str, pieces: bool = False) -> Band:
    """Read the data band of an open raster over ``grid``'s bounds, checked as public weights.

    Parameters
    ----------
    dataset : rasterio.io.DatasetReader
        The open raster.
    grid : geosynth.lattice.Grid
        The lattice.
    name : str
        The parameter the raster was given as (``"weights"``, ``"prior"``), for messages.
    pieces : bool, default False
        Count the pixels in the pieces a weights table splits them into (one per cell a pixel
        overlaps, :meth:`PixelTable.from_band <geosynth.synth.PixelTable.from_band>`),
        estimated from the pixels' and the cells' sizes, against :data:`MAX_WEIGHT_PIXELS`.

    Returns
    -------
    Band
        The band's values unpacked (``raw * scale + offset``, as GDAL defines a band's scale
        and offset), no data as NaN.

    Raises
    ------
    geosynth.errors.CRSError
        The raster's CRS is not the grid's (:func:`check_raster_crs`).
    geosynth.errors.InputError
        Several data bands or complex values, a rotated, degenerate or missing geotransform, or
        no overlap with the grid. The values are the caller's to check
        (:func:`geosynth.synth.placement.check_weight_values`: :meth:`PixelTable.from_band
        <geosynth.synth.PixelTable.from_band>` and the DP prior do).
    geosynth.errors.MemoryLimitError
        More than :data:`MAX_WEIGHT_PIXELS` pixels over the grid, checked before any is read.
    """
    from rasterio.windows import Window

    index = _check_dataset(dataset, grid.crs, name)
    t = dataset.transform
    if t.b != 0 or t.d != 0:
        raise InputError(
            f"{name} raster has a rotated or sheared geotransform; warp it to a north-up grid "
            "first (e.g. rasterio.warp.reproject or `rio warp`)"
        )
    col0, row0, col1, row1 = raster_window(t, dataset.width, dataset.height, grid.bounds,
                                           name=f"{name} raster")
    if col1 <= col0 or row1 <= row0:
        # The bounds of a lattice built from the points follow the outermost records: not quoted.
        shown = "" if grid.snap_unit is not None else f" {grid.bounds}"
        raise InputError(
            f"{name} raster (bounds {tuple(dataset.bounds)}) does not overlap the grid "
            f"bounds{shown}; check that both use the same CRS"
        )
    n_pixels = (col1 - col0) * (row1 - row0)
    split = _pieces_per_pixel(t, grid) if pieces else 1.0
    if n_pixels * split > MAX_WEIGHT_PIXELS:  # 8000² pixels took 6 GiB and 20 s to average
        counted = ("" if split < 1.05 else  # not "about 1 pieces each"
                   f" (about {split:.2g} pieces each, one per cell a pixel overlaps)")
        raise MemoryLimitError(
            f"{name} raster has {n_pixels:,} pixels over the grid{counted}, above "
            f"geosynth.rasters.MAX_WEIGHT_PIXELS = {MAX_WEIGHT_PIXELS:,} (up to "
            f"{n_pixels * split * _BYTES_PER_PIXEL / 2**30:,.0f} GiB to read and group by "
            "cell); resample it to coarser pixels (e.g. `gdalwarp -tr`, with `-r average` for "
            "a prior), or raise MAX_WEIGHT_PIXELS deliberately"
        )
    band = dataset.read(index, window=Window(col0, row0, col1 - col0, row1 - row0),
                        masked=True)
    values = np.ma.filled(band.astype(np.float64), np.nan)
    # The stored values are packed: GDAL's value = raw * scale + offset. A uint16 raster of
    # raw 1000 and 1010 with offset -1000 (weights 0 and 10) put half the points in the pixel
    # of weight 0.
    scale, offset = dataset.scales[index - 1], dataset.offsets[index - 1]
    if scale != 1.0 or offset != 0.0:
        values = values * scale + offset
    return Band(values, t, row0, col0)


def _pieces_per_pixel(transform: Any, grid: Grid) -> float:
    """Return the cells a pixel is expected to overlap, ``1 + (pw·Σh + ph·Σw + G·pw·ph) / ΣA``.

    For a ``pw × ph`` pixel placed at random over a tiling of convex cells of areas ``A`` and
    bounding boxes ``w × h``, the cells it overlaps are on average the area of the cells'
    Minkowski sums with the pixel, ``A + pw·h + ph·w + pw·ph`` each, over the cells' area: one
    piece for pixels far smaller than the cells, four for squares as large as them, and more
    for hexagons and areas than their boxes suggest (the boxes' product undercounted pixels as
    large as hexagons by a fifth, and the memory limit with them). At most ``G``: a pixel
    overlaps no more than every cell (one pixel of 10^12 m was refused as "about 1e+18 pieces",
    up to 238 billion GiB).
    """
    boxes = grid.cell_bounds(np.arange(grid.n_cells))
    width, height = boxes[:, 2] - boxes[:, 0], boxes[:, 3] - boxes[:, 1]
    areas = width * height if grid.kind == "square" else grid.cells.geometry.area.to_numpy()
    pw, ph = abs(transform.a), abs(transform.e)
    reach = pw * height.sum() + ph * width.sum() + grid.n_cells * pw * ph
    return min(float(1.0 + reach / areas.sum()), float(grid.n_cells))


def read_raster(source: Any, name: str, read: Any, open_hint: str, expected: str) -> Any:
    """Return ``read(dataset)`` for a raster path (opened and closed here) or an open dataset.

    Parameters
    ----------
    source : str, os.PathLike or rasterio dataset
        The raster.
    name : str
        The parameter ``source`` was given as, for errors.
    read : callable
        ``read(dataset)`` computes the result from the open dataset.
    open_hint : str
        What to pass instead when a path cannot be opened.
    expected : str
        What the parameter may be, for the error on another type.

    Returns
    -------
    Any
        ``read(dataset)``.

    Raises
    ------
    geosynth.errors.InputError
        A path that is not a readable raster, a closed dataset or another type.
    """
    if isinstance(source, str | os.PathLike):
        import rasterio

        check_no_nul(os.fspath(source), name)
        try:
            with warnings.catch_warnings():  # the geotransform's own check says it, with a fix
                warnings.simplefilter("ignore", rasterio.errors.NotGeoreferencedWarning)
                dataset = rasterio.open(_local_or_url(source, name))
        except rasterio.errors.RasterioIOError as err:
            raise InputError(
                f"{name} {os.fspath(source)!r} cannot be opened as a raster ({err}); {open_hint}"
            ) from err
        with dataset:
            try:
                return read(dataset)
            except rasterio.errors.RasterioIOError as err:  # e.g. a truncated file
                raise InputError(
                    f"{name} {os.fspath(source)!r} cannot be read ({err}); {open_hint}"
                ) from None
    if not all(hasattr(source, a) for a in ("read", "transform", "crs", "width", "height")):
        raise InputError(f"{name} must be {expected}, got {type(source).__name__}")
    if getattr(source, "closed", False):
        raise InputError(f"{name} is a closed rasterio dataset; pass an open one or a path")
    return read(source)



def _local_or_url(source: str | os.PathLike, name: str) -> str | os.PathLike:
    """Return a path as rasterio should read it: a file here as a checked Path, a URL as is.

    rasterio reads a str's start as a URL scheme, so ``file:w.tif`` read ``w.tif`` and
    ``s3:w.tif`` went to S3; and a named pipe or a device was opened unchecked. A path with
    ``://`` or a GDAL ``/vsi`` prefix is left to rasterio (a public raster online); any other
    is checked as a file (:func:`geosynth.io.existing_file`) and given as a Path, which
    rasterio does not parse.
    """
    text = os.fspath(source)
    if "://" in text or text.startswith("/vsi"):
        return source
    from geosynth.io import existing_file  # GDAL's readers' check, in geosynth.io

    return existing_file(source, name)


def check_raster_band(dataset: Any, name: str) -> int:
    """Return the one data band of a raster of weights; refuse none, several, or complex values.

    Band 1 was read whatever the others held (the red of an RGB image, the first of a stack),
    and complex values lost their imaginary part with a NumPy ComplexWarning. An alpha band
    beside one data band is a mask, which the read applies; it may come first (band 1 was
    read, the alpha's 255 as weights, and the data band ignored). A container of several
    rasters (a GeoPackage with two raster tables, a netCDF of several variables) opens with
    no band, only subdatasets: it raised IndexError.

    Parameters
    ----------
    dataset : rasterio.io.DatasetReader
        The open raster.
    name : str
        Its parameter, for the message (``"weights"``, ``"prior"``).

    Returns
    -------
    int
        The data band's index (1-based, as rasterio's ``read`` takes it).

    Raises
    ------
    geosynth.errors.InputError
        No data band (naming the subdatasets to choose from, if any), several data bands, or
        complex values.
    """
    from rasterio.enums import ColorInterp

    count = getattr(dataset, "count", 1)
    kinds = list(getattr(dataset, "colorinterp", ()))
    data = [index for index in range(1, count + 1)
            if index > len(kinds) or kinds[index - 1] != ColorInterp.alpha]
    if not data:
        raise InputError(f"{name} raster has no data band{_subdatasets(dataset)}")
    if len(data) > 1:
        raise InputError(
            f"{name} raster has {len(data)} data bands; weights are one band: pass a "
            "single-band raster (e.g. `gdal_translate -b 2 in.tif weights.tif` keeps band 2)"
            f"{_byte_tiles(dataset, kinds)}"
        )
    (band,) = data
    dtypes = getattr(dataset, "dtypes", ())
    dtype = str(dtypes[band - 1]) if len(dtypes) >= band else "float64"
    if dtype.startswith("complex"):
        raise InputError(
            f"{name} raster holds complex values ({dtype}); weights must be real numbers "
            ">= 0: pass a real band (e.g. the magnitude, `gdal_calc.py --calc='abs(A)'`)"
        )
    return band


def _byte_tiles(dataset: Any, kinds: list) -> str:
    """Return the end of the several-bands message for a GeoPackage of byte tiles, else "".

    GDAL opens every byte GeoPackage raster as red, green, blue and alpha (its ``BAND_COUNT``
    open option, 4 by default), a single grey band too, and nothing in the file tells them
    apart: a population raster saved as a GeoPackage was refused as "3 data bands".
    """
    from rasterio.enums import ColorInterp

    rgba = [ColorInterp.red, ColorInterp.green, ColorInterp.blue, ColorInterp.alpha]
    if getattr(dataset, "driver", None) != "GPKG" or kinds != rgba:
        return ""
    return ("; a GeoPackage of byte tiles opens as red, green, blue and alpha even when it holds "
            "one grey band: if so, open it as grey and alpha (rasterio.open(path, "
            "BAND_COUNT=2), and pass the dataset) or convert it (`gdal_translate -oo "
            "BAND_COUNT=2 in.gpkg weights.tif`)")


def _subdatasets(dataset: Any) -> str:
    """Return the end of the no-data-band message: the subdatasets to pass instead, if any."""
    names = list(getattr(dataset, "subdatasets", None) or ())
    if not names:
        return "; pass a raster with one data band"
    shown = ", ".join(repr(n) for n in names[:3]) + (", ..." if len(names) > 3 else "")
    return (f", only {len(names)} subdatasets (several rasters in one file: {shown}); copy "
            f"the one to use to a file of its own and pass that (e.g. `gdal_translate "
            f"{names[0]} weights.tif`)")



def check_raster_crs(raster_crs: Any, grid_crs: pyproj.CRS | None, name: str = "weights") -> None:
    """Refuse a raster whose CRS is not the grid's (or only one of them has a CRS).

    Parameters
    ----------
    raster_crs : rasterio.crs.CRS or None
        ``dataset.crs`` of the raster.
    grid_crs : pyproj.CRS or None
        ``grid.crs``.
    name : str, default "weights"
        The raster's parameter, for the messages (``"weights"``, ``"prior"``).

    Raises
    ------
    geosynth.errors.CRSError
        The CRSs differ (axis order aside), or one of them is missing; the message says how to
        reproject or set the CRS.
    """
    if raster_crs is None and grid_crs is None:
        return
    if raster_crs is None:
        raise CRSError(
            f"{name} raster has no CRS while the grid uses {grid_crs.to_string()}; set it "
            "(e.g. `rio edit-info --crs` or dataset.crs = ...) if the raster is in that CRS"
        )
    if grid_crs is None:
        raise CRSError(
            f"{name} raster has CRS {raster_crs.to_string()} but the grid has none; build the "
            "grid with that crs"
        )
    crs = pyproj.CRS.from_wkt(raster_crs.to_wkt())
    if not crs.equals(grid_crs, ignore_axis_order=True):
        raise CRSError(
            f"{name} raster CRS {_crs_label(crs)} differs from the grid CRS "
            f"{_crs_label(grid_crs)}; reproject the raster to the grid CRS first (e.g. "
            "`rio warp --dst-crs` or rasterio.warp.reproject), or, if it only looks different "
            "(the same projection without an EPSG code), set the grid's CRS on it (`rio "
            "edit-info --crs`)"
        )


def _crs_label(crs: pyproj.CRS) -> str:
    """``crs.to_string()``, or its name where that is a WKT of hundreds of characters."""
    text = crs.to_string()
    return text if len(text) <= 80 else f"{crs.name!r} (no authority code)"




def check_raster_transform(transform: Any, name: str = "raster") -> None:
    """Refuse a geotransform that places no pixel: missing, degenerate or not finite.

    Parameters
    ----------
    transform : affine.Affine
        The raster's geotransform.
    name : str, default "raster"
        What the message calls the raster (``"weights raster"``).

    Raises
    ------
    geosynth.errors.InputError
        A pixel size of 0 or a non-finite pixel size or origin (it raised ZeroDivisionError or
        "cannot convert float NaN to integer"), or the identity geotransform, which rasterio
        gives a raster with no geotransform (one not georeferenced, or georeferenced only by
        GCPs or RPCs): its pixels were taken as 1-unit squares from ``(0, 0)`` with rows
        running *north*, so an image's top rows weighted the south of a grid near the origin.
    """
    terms = (transform.a, transform.e, transform.c, transform.f)
    if not (all(math.isfinite(v) for v in terms) and transform.a != 0 and transform.e != 0):
        raise InputError(
            f"{name} has no usable geotransform (pixel size {transform.a!r} x {transform.e!r}, "
            f"origin {transform.c!r}, {transform.f!r}); georeference it in the grid CRS first "
            "(e.g. `gdal_translate -a_ullr` or `rio edit-info --transform`)"
        )
    if tuple(transform)[:6] == (1.0, 0.0, 0.0, 0.0, 1.0, 0.0):
        raise InputError(
            f"{name} has no geotransform (rasterio gives the identity for a raster that is not "
            "georeferenced, or is georeferenced only by GCPs or RPCs); georeference it in the "
            "grid CRS first (e.g. `gdalwarp` with its GCPs, `gdal_translate -a_ullr` or "
            "`rio edit-info --transform`)"
        )


def raster_window(
    transform: Any, width: int, height: int, bounds: tuple[float, ...], name: str = "raster"
) -> tuple[int, int, int, int]:
    """``(col0, row0, col1, row1)`` of the pixels meeting ``bounds``, clipped to the raster.

    Parameters
    ----------
    transform : affine.Affine
        North-up geotransform of the raster (no rotation), so pixel columns and rows are
        affine in x and y.
    width, height : int
        Size of the raster in pixels.
    bounds : tuple of float
        ``(xmin, ymin, xmax, ymax)`` to cover, e.g. ``grid.bounds``.
    name : str, default "raster"
        What the message calls the raster (``"weights raster"``).

    Returns
    -------
    tuple of int
        Columns ``col0 .. col1 - 1`` and rows ``row0 .. row1 - 1``; empty (``col1 <= col0`` or
        ``row1 <= row0``) when the raster does not meet ``bounds``.

    Raises
    ------
    geosynth.errors.InputError
        No usable geotransform (:func:`check_raster_transform`), or a pixel size so small
        that the grid spans more pixels than a float counts (1e-320: OverflowError).
    """
    check_raster_transform(transform, name)
    xmin, ymin, xmax, ymax = bounds
    cols = [(x - transform.c) / transform.a for x in (xmin, xmax)]
    rows = [(y - transform.f) / transform.e for y in (ymin, ymax)]
    if not all(math.isfinite(v) for v in cols + rows):  # a subnormal pixel size overflowed
        raise InputError(
            f"{name} has pixels of {transform.a!r} x {transform.e!r}, so small that the grid's "
            "extent spans more pixels than a float counts; check its geotransform (the pixel "
            "size is in the units of its CRS)"
        )
    col0 = max(0, math.floor(min(cols)))
    row0 = max(0, math.floor(min(rows)))
    col1 = min(width, math.ceil(max(cols)))
    row1 = min(height, math.ceil(max(rows)))
    return col0, row0, col1, row1


