"""Points inside grid cells: uniform over the habitable geometry, or weighted by a raster.

Every synthesizer in :mod:`geosynth.synth` first decides *which cell* a record goes to and then
calls :func:`place_in_cells` for *where in the cell*. Nunes (2018, §2.1.2) draws the point
uniformly inside the chosen cell; on a clipped :class:`~geosynth.lattice.Grid` "inside the cell"
means inside its habitable geometry ``box ∩ region − exclusions``, so no synthetic record is put
in a lake or outside the study region.

How points are drawn (all vectorised over points; the only Python loops are over rejection
rounds):

* Fully habitable cells (``grid.fully_habitable``): uniform in the box from
  ``grid.cell_bounds``.
* Partially habitable cells: rejection sampling. Candidates are uniform in the bounding box of the
  habitable geometry (clipped to the cell box) and accepted where
  :func:`shapely.contains_xy` holds. Each round draws, for every point still pending, a batch of
  candidates sized from the acceptance rate ``area / bbox area`` (doubling every round the point
  stays pending) and keeps the *first* accepted candidate of each batch, which is exactly uniform
  over the habitable geometry.
* With a weights raster (e.g. population density): a pixel is chosen within the cell with
  probability proportional to its weight among the pixels whose *centre* lies in the cell's
  habitable geometry, then the point is uniform in ``pixel ∩ cell box ∩ habitable geometry``
  (rejection as above). A cell none of whose pixel centres carries positive weight falls back to
  uniform placement, with a :class:`~geosynth.errors.DataWarning`; a raster that gives no cell
  any weight (all zero, nodata or NaN over the grid) is refused. The raster is thus sampled
  at pixel centres, not averaged over areas: a pixel straddling a cell edge gives its whole
  weight to the cell holding its centre, and the strip of the other cell under it receives no
  point. Choose a raster whose pixels are much smaller than the cells (or aligned with them).

Points are drawn in half-open boxes ``[x0, x1) x [y0, y1)``, the convention of
:meth:`Grid.locate <geosynth.lattice.Grid.locate>`, so ``grid.locate`` of a placed point returns
the cell it was placed in.
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import pyproj
import shapely

from geosynth._random import SeedLike, as_generator
from geosynth._validation import check_no_nul
from geosynth.errors import CRSError, DataWarning, InputError, MemoryLimitError, SamplerError
from geosynth.lattice import Grid

__all__ = [
    "place_in_cells",
    "PixelTable",
    "pixel_table",
    "WeightsLike",
    "check_grid",
    "check_raster_band",
    "check_raster_crs",
    "place",
    "unweighted_note",
    "raster_window",
    "read_raster",
    "MAX_WEIGHT_PIXELS",
]

WeightsLike = Any  # str | os.PathLike | rasterio dataset opened for reading

#: Most pixels of a weights raster read over the lattice: about 2 GiB at the peak of reading.
MAX_WEIGHT_PIXELS = 2**23
# Peak memory of PixelTable.from_raster per pixel of positive weight (233 bytes measured: the
# float64 copy, the pixel boxes before and after sorting by cell, their centres and cells). The
# limit was 2**28 pixels "8 bytes each": a raster under it could take 60 GiB and be killed.
_BYTES_PER_PIXEL = 256

# Candidate points per pending point and round are capped at _MAX_BATCH and, over all pending
# points of a round, at about _MAX_CANDIDATES (memory ~ 40 bytes per candidate).
_MAX_BATCH = 2**16
_MAX_CANDIDATES = 2**21
# A point not placed after this many rounds (> 6e7 candidates at full batch) raises SamplerError.
_MAX_ROUNDS = 1000
_SHOW = 10


def place_in_cells(
    grid: Grid,
    cells: np.ndarray | list[int],
    seed: SeedLike = None,
    weights: WeightsLike = None,
) -> np.ndarray:
    """Draw one point inside the habitable geometry of each given cell.

    Parameters
    ----------
    grid : geosynth.lattice.Grid
        The lattice the cell ids refer to.
    cells : array-like of int, shape (n,)
        Cell id of each point to draw, in ``0 .. grid.n_cells - 1`` (repeats allowed).
    seed : None, int, numpy.random.SeedSequence or numpy.random.Generator
        Randomness; the same seed gives the same points.
    weights : str, os.PathLike or rasterio dataset, optional
        A single-band raster of non-negative weights (e.g. population density) in the CRS of
        ``grid``. Within its cell a point falls in a pixel with probability proportional to the
        pixel's weight among the pixels whose centre lies in the cell's habitable geometry, then
        uniformly in ``pixel ∩ habitable geometry``. Nodata and NaN pixels weigh 0. Without it,
        points are uniform over the habitable geometry. The raster must be public data, not
        derived from the confidential records: points fall only in its pixels of positive
        weight, so a fine raster of the records' own density would put them where records are.

    Returns
    -------
    numpy.ndarray of float64, shape (n, 2)
        ``x, y`` of each point, in the grid CRS; ``grid.locate`` returns ``cells`` for them.

    Raises
    ------
    geosynth.errors.InputError
        ``grid`` is not a Grid, ``cells`` are not valid cell ids, or ``weights`` is not a readable
        raster (several data bands or complex values, rotated, degenerate or missing
        geotransform, negative or infinite weights, no overlap with the grid, no pixel of
        positive weight in any habitable cell).
    geosynth.errors.CRSError
        The raster CRS differs from the grid CRS, or only one of them has a CRS.
    geosynth.errors.MemoryLimitError
        The raster has more than :data:`MAX_WEIGHT_PIXELS` pixels over the grid.
    geosynth.errors.SamplerError
        A habitable geometry is too thin to be hit by rejection sampling.

    Warns
    -----
    DataWarning
        With ``weights``: some requested cells contain no pixel centre of positive weight, so
        their points are placed uniformly.

    Examples
    --------
    >>> from geosynth.lattice import Grid
    >>> grid = Grid.regular((0, 0, 10, 10), shape=(2, 2))
    >>> xy = place_in_cells(grid, [0, 3, 3], seed=1)
    >>> grid.locate(xy).tolist()
    [0, 3, 3]
    """
    check_grid(grid)
    cell_ids = grid.check_cell_ids(cells, "cells")
    rng = as_generator(seed)
    table = None if weights is None else PixelTable.from_raster(weights, grid)
    return place(grid, cell_ids, rng, table)


# ---------------------------------------------------------------------- internal API
def check_grid(grid: Any, name: str = "grid") -> None:
    """Raise InputError unless ``grid`` is a :class:`~geosynth.lattice.Grid`.

    Parameters
    ----------
    grid : Any
        The object to check.
    name : str, default "grid"
        What the message calls it.

    Raises
    ------
    geosynth.errors.InputError
        ``grid`` is not a Grid.
    """
    if not isinstance(grid, Grid):
        raise InputError(
            f"{name} must be a geosynth.lattice.Grid, got {type(grid).__name__}; build one with "
            "geosynth.Grid.regular(bounds, shape=..., crs=...)"
        )


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
            dataset = rasterio.open(source)
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


def place(
    grid: Grid,
    cells: np.ndarray,
    rng: np.random.Generator,
    table: PixelTable | None,
    *,
    warn: bool = True,
) -> np.ndarray:
    """Points for validated cell ids; see :func:`place_in_cells`.

    Parameters
    ----------
    grid : geosynth.lattice.Grid
        The lattice.
    cells : numpy.ndarray of int64, shape (n,)
        Valid cell ids.
    rng : numpy.random.Generator
        Randomness.
    table : PixelTable or None
        Pixels of a weights raster grouped by cell; None for uniform placement.
    warn : bool, default True
        Give :func:`unweighted_note` as a :class:`~geosynth.errors.DataWarning`. A caller that
        passes False gives or forwards the note itself (a Dask task returns it to the client).

    Returns
    -------
    numpy.ndarray of float64, shape (n, 2)
    """
    xy = np.empty((cells.size, 2))
    uniform = np.ones(cells.size, dtype=bool)
    if table is not None:
        weighted = table.total[cells] > 0
        uniform = ~weighted
        note = unweighted_note(table, cells) if warn else None
        if note is not None:
            warnings.warn(note, DataWarning, stacklevel=3)
        idx = np.flatnonzero(weighted)
        xy[idx] = _weighted_points(grid, cells[idx], rng, table)
    idx = np.flatnonzero(uniform)
    xy[idx] = _uniform_points(grid, cells[idx], rng)
    return xy


def unweighted_note(table: PixelTable | None, cells: np.ndarray) -> str | None:
    """Say which of ``cells`` hold no pixel centre of positive weight, or None if all do.

    Their points are placed uniformly over the cell's habitable geometry (:func:`place`).

    Parameters
    ----------
    table : PixelTable or None
        Pixels of the weights raster grouped by cell; None (no raster) gives None.
    cells : numpy.ndarray of int64, shape (n,)
        Cell id of each point.

    Returns
    -------
    str or None
        The text of the :class:`~geosynth.errors.DataWarning`.
    """
    if table is None:
        return None
    uniform = ~(table.total[cells] > 0)
    if not uniform.any():
        return None
    empty = np.unique(cells[uniform])
    return (f"{empty.size} cell(s) hold no pixel centre of positive weight in the weights "
            f"raster (cell ids {empty[:_SHOW].tolist()}{' ...' if empty.size > _SHOW else ''}); "
            f"their {int(uniform.sum())} point(s) are placed uniformly over the cell's habitable "
            "geometry")


# ---------------------------------------------------------------------- uniform placement
def _uniform_points(grid: Grid, cells: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Uniform points over the habitable geometry of each cell, shape (n, 2)."""
    xy = np.empty((cells.size, 2))
    if cells.size == 0:
        return xy
    fully = np.asarray(grid.fully_habitable)[cells]
    full = np.flatnonzero(fully)
    xy[full] = _uniform_in_boxes(rng, grid.cell_bounds(cells[full]))
    part = np.flatnonzero(~fully)
    if part.size:
        unique, inverse = np.unique(cells[part], return_inverse=True)
        geoms = _own_copies(np.asarray(grid.habitable_geometry)[unique])
        shapely.prepare(geoms)
        boxes = _clip_boxes(shapely.bounds(geoms), grid.cell_bounds(unique))
        box_area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
        acceptance = np.clip(shapely.area(geoms) / box_area, 1e-300, 1.0)
        batch = np.clip(np.ceil(1.5 / acceptance), 1, _MAX_BATCH).astype(np.int64)
        inverse = inverse.reshape(-1)
        xy[part] = _rejection(rng, boxes[inverse], geoms[inverse], batch[inverse], cells[part])
    return xy


def _clip_boxes(inner: np.ndarray, outer: np.ndarray) -> np.ndarray:
    """Intersection of (n, 4) boxes ``inner`` and ``outer``."""
    return np.column_stack(
        [
            np.maximum(inner[:, 0], outer[:, 0]),
            np.maximum(inner[:, 1], outer[:, 1]),
            np.minimum(inner[:, 2], outer[:, 2]),
            np.minimum(inner[:, 3], outer[:, 3]),
        ]
    )


def _uniform_in_boxes(rng: np.random.Generator, boxes: np.ndarray) -> np.ndarray:
    """Uniform points in half-open boxes ``[x0, x1) x [y0, y1)`` given as (n, 4)."""
    n = boxes.shape[0]
    x0, y0, x1, y1 = boxes.T
    x = x0 + rng.random(n) * (x1 - x0)
    y = y0 + rng.random(n) * (y1 - y0)
    # u < 1 can still round up to the upper edge, which belongs to the next cell.
    np.minimum(x, np.nextafter(x1, -np.inf), out=x)
    np.minimum(y, np.nextafter(y1, -np.inf), out=y)
    return np.column_stack([x, y])


def _rejection(
    rng: np.random.Generator,
    boxes: np.ndarray,
    geoms: np.ndarray,
    batch: np.ndarray,
    cells: np.ndarray,
) -> np.ndarray:
    """Uniform points in ``geoms[k] ∩ boxes[k]`` by rejection from the boxes.

    Parameters
    ----------
    rng : numpy.random.Generator
        Randomness.
    boxes : numpy.ndarray of float64, shape (n, 4)
        Proposal boxes; ``geoms[k] ∩ boxes[k]`` must have positive area.
    geoms : numpy.ndarray of object, shape (n,)
        Shapely geometries (prepared for speed).
    batch : numpy.ndarray of int64, shape (n,)
        Candidates drawn per point in the first round; doubled each round the point stays
        pending, up to ``_MAX_BATCH``.
    cells : numpy.ndarray of int64, shape (n,)
        Cell ids, for the error message.

    Returns
    -------
    numpy.ndarray of float64, shape (n, 2)
        Each point is the first accepted candidate of its own iid sequence, so it is exactly
        uniform over ``geoms[k] ∩ boxes[k]``.
    """
    n = boxes.shape[0]
    xy = np.empty((n, 2))
    batch = batch.astype(np.int64, copy=True)
    pending = np.arange(n)
    for _ in range(_MAX_ROUNDS):
        if pending.size == 0:
            return xy
        k = np.minimum(batch[pending], max(1, _MAX_CANDIDATES // pending.size))
        owner = np.repeat(pending, k)
        candidates = _uniform_in_boxes(rng, boxes[owner])
        hit = np.flatnonzero(shapely.contains_xy(geoms[owner], candidates[:, 0], candidates[:, 1]))
        # ``owner`` is sorted, so the first hit of each owner is its first accepted candidate.
        placed, first = np.unique(owner[hit], return_index=True)
        xy[placed] = candidates[hit[first]]
        pending = pending[~np.isin(pending, placed, assume_unique=True)]
        batch[pending] = np.minimum(batch[pending] * 2, _MAX_BATCH)
    stuck = np.unique(cells[pending])
    raise SamplerError(
        f"could not draw points inside the habitable geometry of cells "
        f"{stuck[:_SHOW].tolist()} after {_MAX_ROUNDS} rejection rounds: their habitable part "
        "is a sliver too thin to hit; build the grid with a region/exclude that does not leave "
        "slivers (e.g. snap or buffer the polygons) or use a different cell size"
    )


# ---------------------------------------------------------------------- raster weights
@dataclass(frozen=True)
class PixelTable:
    """Positive-weight raster pixels grouped by the cell holding their centre.

    Attributes
    ----------
    boxes : numpy.ndarray of float64, shape (P, 4)
        ``pixel ∩ cell box`` of each pixel, sorted by cell.
    within : numpy.ndarray of float64, shape (P,)
        Running sum of the pixel weights within each cell, restarting at each cell's first
        pixel (one sum over all cells made a small cell's weights a difference of two large
        sums: next to pixels of weight 1e17, a cell's pixels of weight 1 and 3 summed to 0).
    start : numpy.ndarray of int64, shape (G + 1,)
        Pixels of cell ``i`` are ``start[i] .. start[i + 1] - 1``.
    total : numpy.ndarray of float64, shape (G,)
        Total weight of each cell (0 where no pixel centre of positive weight).
    """

    boxes: np.ndarray
    within: np.ndarray
    start: np.ndarray
    total: np.ndarray

    @classmethod
    def from_raster(cls, weights: WeightsLike, grid: Grid) -> PixelTable:
        """Read band 1 of ``weights`` over the grid bounds and group its pixels by cell.

        Parameters
        ----------
        weights : str, os.PathLike or rasterio dataset
            Single-band raster of non-negative weights in the grid CRS, north-up.
        grid : geosynth.lattice.Grid
            The lattice.

        Returns
        -------
        PixelTable

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
        """
        return read_raster(
            weights, "weights", lambda dataset: cls._from_dataset(dataset, grid),
            open_hint="pass the path of a GeoTIFF (or another GDAL raster) or an open rasterio "
                      "dataset",
            expected="a raster path or an open rasterio dataset",
        )

    @classmethod
    def _from_dataset(cls, dataset: Any, grid: Grid) -> PixelTable:
        check_raster_crs(dataset.crs, grid.crs)
        check_raster_band(dataset, "weights")
        t = dataset.transform
        if t.b != 0 or t.d != 0:
            raise InputError(
                "weights raster has a rotated or sheared geotransform; warp it to a north-up "
                "grid first (e.g. rasterio.warp.reproject or `rio warp`)"
            )
        col0, row0, col1, row1 = raster_window(t, dataset.width, dataset.height, grid.bounds,
                                               name="weights raster")
        if col1 <= col0 or row1 <= row0:
            # The bounds of a lattice built from the points follow the outermost records:
            # not quoted.
            shown = "" if grid.snap_unit is not None else f" {grid.bounds}"
            raise InputError(
                f"weights raster (bounds {tuple(dataset.bounds)}) does not overlap the grid "
                f"bounds{shown}; check that both use the same CRS"
            )
        from rasterio.windows import Window

        n_pixels = (col1 - col0) * (row1 - row0)
        if n_pixels > MAX_WEIGHT_PIXELS:
            raise MemoryLimitError(
                f"weights raster has {n_pixels:,} pixels over the grid, above "
                f"geosynth.synth.placement.MAX_WEIGHT_PIXELS = {MAX_WEIGHT_PIXELS:,} (about "
                f"{n_pixels * _BYTES_PER_PIXEL / 2**30:,.0f} GiB to read); resample it to "
                "coarser pixels (e.g. `gdalwarp -tr`), or raise MAX_WEIGHT_PIXELS deliberately"
            )
        band = dataset.read(1, window=Window(col0, row0, col1 - col0, row1 - row0), masked=True)
        values = np.ma.filled(band.astype(np.float64), 0.0)
        values[np.isnan(values)] = 0.0
        if np.isinf(values).any() or (values < 0).any():
            n_bad = int((np.isinf(values) | (values < 0)).sum())
            raise InputError(
                f"weights raster has {n_bad} negative or infinite pixel values over the grid; "
                "weights must be finite and >= 0 (set nodata for pixels without data)"
            )
        if values.max(initial=0.0) > 0.0:
            # Only ratios within a cell matter; scaled to at most 1, a cell's sum cannot
            # overflow (finite weights near 1e308 summed to inf, and every cell fell back to
            # uniform placement).
            values /= values.max()
        rows, cols = np.nonzero(values > 0)
        w = values[rows, cols]
        rows, cols = rows + row0, cols + col0
        xa, xb = t.c + cols * t.a, t.c + (cols + 1) * t.a
        ya, yb = t.f + rows * t.e, t.f + (rows + 1) * t.e
        centre = np.column_stack([(xa + xb) / 2, (ya + yb) / 2])
        cell = grid.locate(centre) if centre.size else np.empty(0, dtype=np.int64)
        inside = cell >= 0
        order = np.argsort(cell[inside], kind="stable")
        cell = cell[inside][order]
        pixel = np.column_stack(
            [np.minimum(xa, xb), np.minimum(ya, yb), np.maximum(xa, xb), np.maximum(ya, yb)]
        )[inside][order]
        boxes = _clip_boxes(pixel, grid.cell_bounds(cell))
        if ((boxes[:, 2] <= boxes[:, 0]) | (boxes[:, 3] <= boxes[:, 1])).any():
            # Pixels below the float resolution of the coordinates: a point "in" one was put
            # beside it, possibly in the next cell (or rejection sampling ran 6e7 candidates).
            raise InputError(
                f"weights raster pixels ({abs(t.a)!r} x {abs(t.e)!r}) are too small to be told "
                "apart at the grid's coordinates; resample it to coarser pixels (e.g. "
                "`gdalwarp -tr`)"
            )
        sorted_w = w[inside][order]
        within = pd.Series(sorted_w).groupby(cell).cumsum().to_numpy()
        start = np.searchsorted(cell, np.arange(grid.n_cells + 1), side="left")
        last = np.maximum(start[1:] - 1, 0)
        total = np.where(start[1:] > start[:-1], within[last] if within.size else 0.0, 0.0)
        _check_some_weight(total)
        return cls(boxes=boxes, within=within, start=start, total=total)

    def choose(self, cells: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Pixel (row of ``boxes``) for each cell, with probability ∝ weight within the cell.

        Parameters
        ----------
        cells : numpy.ndarray of int64, shape (n,)
            Cells with positive total weight.
        rng : numpy.random.Generator
            Randomness; one uniform per cell.

        Returns
        -------
        numpy.ndarray of int64, shape (n,)
        """
        target = rng.random(cells.size) * self.total[cells]
        # The first pixel of the cell whose running sum exceeds the target: a binary search in
        # each cell's own run of pixels, all cells at once.
        left, right = self.start[cells].copy(), self.start[cells + 1] - 1
        while (active := left < right).any():
            mid = (left + right) // 2
            beyond = self.within[mid] > target
            left = np.where(active & ~beyond, mid + 1, left)
            right = np.where(active & beyond, mid, right)
        return left


def check_raster_band(dataset: Any, name: str) -> None:
    """Refuse a raster of weights with several data bands or complex values.

    Band 1 was read whatever the others held (the red of an RGB image, the first of a stack),
    and complex values lost their imaginary part with a NumPy ComplexWarning. An alpha band
    beside one data band is a mask, which the read applies.

    Parameters
    ----------
    dataset : rasterio.io.DatasetReader
        The open raster.
    name : str
        Its parameter, for the message (``"weights"``, ``"prior"``).

    Raises
    ------
    geosynth.errors.InputError
        Several data bands, or complex values.
    """
    from rasterio.enums import ColorInterp

    count = getattr(dataset, "count", 1)
    alpha = sum(c == ColorInterp.alpha for c in getattr(dataset, "colorinterp", ()))
    if count - alpha > 1:
        raise InputError(
            f"{name} raster has {count - alpha} data bands; weights are one band: pass a "
            "single-band raster (e.g. `gdal_translate -b 2 in.tif weights.tif` keeps band 2)"
        )
    dtype = str(getattr(dataset, "dtypes", ("float64",))[0])
    if dtype.startswith("complex"):
        raise InputError(
            f"{name} raster holds complex values ({dtype}); weights must be real numbers "
            ">= 0: pass a real band (e.g. the magnitude, `gdal_calc.py --calc='abs(A)'`)"
        )


def _check_some_weight(total: np.ndarray) -> None:
    """Refuse a raster that gives no cell any weight (all zero, nodata or NaN over the grid).

    Every point would fall back to uniform placement: the raster was surely not the one meant
    (wrong band, extent or CRS units, or an empty mask), and a warning is easy to miss.
    """
    if not (total > 0).any():
        raise InputError(
            "weights raster has no pixel of positive weight whose centre lies in a habitable "
            "cell of the grid (every pixel over the grid is 0, nodata or NaN, or outside the "
            "region); check the band, the extent and the nodata value, or pass weights=None "
            "for uniform placement"
        )


def check_raster_crs(raster_crs: Any, grid_crs: pyproj.CRS | None) -> None:
    """Refuse a raster whose CRS is not the grid's (or only one of them has a CRS).

    Parameters
    ----------
    raster_crs : rasterio.crs.CRS or None
        ``dataset.crs`` of the raster.
    grid_crs : pyproj.CRS or None
        ``grid.crs``.

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
            f"weights raster has no CRS while the grid uses {grid_crs.to_string()}; set it "
            "(e.g. `rio edit-info --crs` or dataset.crs = ...) if the raster is in that CRS"
        )
    if grid_crs is None:
        raise CRSError(
            f"weights raster has CRS {raster_crs.to_string()} but the grid has none; build the "
            "grid with that crs"
        )
    crs = pyproj.CRS.from_wkt(raster_crs.to_wkt())
    if not crs.equals(grid_crs, ignore_axis_order=True):
        raise CRSError(
            f"weights raster CRS {crs.to_string()} differs from the grid CRS "
            f"{grid_crs.to_string()}; reproject the raster to the grid CRS first (e.g. "
            "`rio warp --dst-crs` or rasterio.warp.reproject)"
        )


def _own_copies(geoms: np.ndarray) -> np.ndarray:
    """Fresh copies of the grid's geometries ``geoms`` (exact: WKB keeps every bit).

    ``shapely.prepare`` changes the geometry objects it is given, and GEOS's prepared
    geometries are not thread-safe: releases placed in threads on one grid
    (:func:`geosynth.distributed.synthesize_dask` on a threaded scheduler) would prepare and
    test the same objects at once, which can crash the interpreter. Each call prepares its own.
    """
    return shapely.from_wkb(shapely.to_wkb(geoms))


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
    xmin, ymin, xmax, ymax = bounds
    cols = [(x - transform.c) / transform.a for x in (xmin, xmax)]
    rows = [(y - transform.f) / transform.e for y in (ymin, ymax)]
    col0 = max(0, math.floor(min(cols)))
    row0 = max(0, math.floor(min(rows)))
    col1 = min(width, math.ceil(max(cols)))
    row1 = min(height, math.ceil(max(rows)))
    return col0, row0, col1, row1


def _weighted_points(
    grid: Grid, cells: np.ndarray, rng: np.random.Generator, table: PixelTable
) -> np.ndarray:
    """Points in a weight-proportional pixel of each cell (cells with positive total weight)."""
    xy = np.empty((cells.size, 2))
    if cells.size == 0:
        return xy
    boxes = table.boxes[table.choose(cells, rng)]
    fully = np.asarray(grid.fully_habitable)[cells]
    full = np.flatnonzero(fully)
    xy[full] = _uniform_in_boxes(rng, boxes[full])
    part = np.flatnonzero(~fully)
    if part.size:
        geoms = _own_copies(np.asarray(grid.habitable_geometry)[cells[part]])
        shapely.prepare(geoms)
        batch = np.full(part.size, 2, dtype=np.int64)
        xy[part] = _rejection(rng, boxes[part], geoms, batch, cells[part])
    return xy


def pixel_table(weights: WeightsLike, grid: Grid) -> PixelTable | None:
    """Return the placement table of ``weights`` (None, a raster, or a table already read).

    A table read for another lattice indexed its cells with this lattice's ids (an IndexError
    or points in the other lattice's pixels).

    Parameters
    ----------
    weights : None, str, os.PathLike, rasterio dataset or PixelTable
        The weights raster, or its table read for ``grid`` (:meth:`PixelTable.from_raster`).
    grid : geosynth.lattice.Grid
        The lattice.

    Returns
    -------
    PixelTable or None

    Raises
    ------
    geosynth.errors.InputError
        A PixelTable of another number of cells, or an invalid raster.
    """
    if weights is None:
        return None
    if isinstance(weights, PixelTable):
        if np.shape(weights.total) != (grid.n_cells,):
            raise InputError(
                f"weights is a PixelTable of {np.shape(weights.total)[0]:,} cells, but the "
                f"lattice has {grid.n_cells:,}; read it for this lattice with "
                "PixelTable.from_raster(raster, grid), or pass the raster itself"
            )
        return weights
    return PixelTable.from_raster(weights, grid)
