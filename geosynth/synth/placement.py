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
  over the habitable geometry. A sliver filling under ``_TRIANGULATE_BELOW`` of its box is
  drawn from its constrained Delaunay triangles instead (a triangle by area, a uniform point in
  it, again until ``contains_xy`` holds): as exact, and not stuck on a strip 1e-6 m wide.
* With a weights raster (e.g. population density): each pixel of positive weight is split
  into its pieces ``pixel ∩ cell``, each weighing the pixel's weight times the share of the
  pixel's area that is the cell's habitable part; a piece is chosen within the cell with
  probability proportional to its weight, then the point is uniform in ``piece ∩ habitable
  geometry`` (rejection as above). The density of points within a cell is thus the raster's,
  area for area, whatever the pixels' size and alignment: the earlier rule gave a pixel
  straddling a cell edge wholly to the cell holding its centre, and the strip of the other cell
  under it got no point (36 % of a 250 m cell under a 100 m raster). A cell that no pixel of
  positive weight covers falls back to uniform placement, with a
  :class:`~geosynth.errors.DataWarning`; a raster that gives no cell any weight (all zero,
  nodata or NaN over the grid) is refused.
  The raster comes as a :class:`PixelTable` of arrays: :func:`geosynth.rasters.read_weights`
  reads a file into one, so that this module, like the rest of the core, opens no file.

Points are drawn in half-open boxes ``[x0, x1) x [y0, y1)``, the convention of
:meth:`Grid.locate <geosynth.lattice.Grid.locate>`, so ``grid.locate`` of a placed point returns
the cell it was placed in.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import shapely

from geosynth._messages import caller_stacklevel
from geosynth._random import SeedLike, as_generator
from geosynth.errors import DataWarning, InputError, PrivacyLeakWarning, SamplerError
from geosynth.lattice import Grid

__all__ = [
    "place_in_cells",
    "PixelTable",
    "check_pixel_table",
    "check_weight_values",
    "check_grid",
    "place",
    "unweighted_note",
    "warn_of_unweighted",
    "warn_if_weights_follow_records",
]

# Candidate points per pending point and round are capped at _MAX_BATCH and, over all pending
# points of a round, at about _MAX_CANDIDATES (memory ~ 40 bytes per candidate).
_MAX_BATCH = 2**16
_MAX_CANDIDATES = 2**21
# A point not placed after this many rounds (> 6e7 candidates at full batch) raises SamplerError.
_MAX_ROUNDS = 1000
#: A cell whose habitable part fills less of its box than this is sampled from its triangles.
_TRIANGULATE_BELOW = 1e-3
_SHOW = 10
#: Pixels split into their pieces at once (:func:`_pieces`): bounds the temporaries.
_CHUNK_PIXELS = 2**15


def place_in_cells(
    grid: Grid,
    cells: np.ndarray | list[int],
    seed: SeedLike = None,
    weights: PixelTable | None = None,
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
    weights : PixelTable, optional
        A single-band raster of non-negative weights (e.g. population density) in the CRS of
        ``grid``, read for ``grid`` by :func:`geosynth.rasters.read_weights`. Within its cell a
        point falls in a piece ``pixel ∩ habitable geometry`` with probability proportional to
        the pixel's weight times the piece's area (a pixel over several cells is split among
        them, :class:`PixelTable`), then uniformly in the piece: the density of the points
        follows the raster, area for area. Nodata and NaN pixels weigh 0. Without it,
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
        ``grid`` is not a Grid, ``cells`` are not valid cell ids, or ``weights`` is not a
        PixelTable read for this lattice (:func:`check_pixel_table`).
    geosynth.errors.SamplerError
        A habitable geometry is too thin to be hit by rejection sampling.

    Warns
    -----
    DataWarning
        With ``weights``: no pixel of positive weight covers some requested cells, so their
        points are placed uniformly.

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
    table = check_pixel_table(weights, grid)
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
            warnings.warn(note, DataWarning, stacklevel=caller_stacklevel())
        idx = np.flatnonzero(weighted)
        xy[idx] = _weighted_points(grid, cells[idx], rng, table)
    idx = np.flatnonzero(uniform)
    xy[idx] = _uniform_points(grid, cells[idx], rng)
    return xy


def unweighted_note(table: PixelTable | None, cells: np.ndarray) -> str | None:
    """Say which of ``cells`` no pixel of positive weight covers, or None if one covers each.

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
    return (f"{empty.size} cell(s) are covered by no pixel of positive weight in the weights "
            f"raster (cell ids {empty[:_SHOW].tolist()}{' ...' if empty.size > _SHOW else ''}); "
            f"their {int(uniform.sum())} point(s) are placed uniformly over the cell's habitable "
            "geometry")


def warn_of_unweighted(notes: Sequence[str | None]) -> None:
    """Give one DataWarning for the :func:`unweighted_note` of each of a call's releases.

    One warning a release repeated the same cells, each time with other counts of points (a
    release draws its own), and with ``m = 20`` twenty warnings said one thing: that the
    raster has no weight in some cells the records' combinations occupy. The warning points
    at the first line outside geosynth: a fixed level pointed at ``geosynth.synthesize``'s own
    call of :func:`geosynth.synth.paiva.synthesize`.

    Parameters
    ----------
    notes : sequence of str or None
        Each release's note, in release order (None: all its points weighted).
    """
    given = [(release, note) for release, note in enumerate(notes) if note is not None]
    if not given:
        return
    first, note = given[0]
    if len(notes) > 1:
        note += (f" (in releases[{first}], the first of the {len(given)} of the {len(notes)} "
                 "releases that place points in cells without weight; the others' cells and "
                 "counts may differ)")
    warnings.warn(note, DataWarning, stacklevel=caller_stacklevel())


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
        boxed = np.flatnonzero(acceptance[inverse] >= _TRIANGULATE_BELOW)
        owner = inverse[boxed]
        xy[part[boxed]] = _rejection(rng, boxes[owner], geoms[owner], batch[owner],
                                     cells[part[boxed]])
        for k in np.flatnonzero(acceptance < _TRIANGULATE_BELOW):
            points = part[inverse == k]
            xy[points] = _in_triangles(rng, geoms[k], points.size, int(unique[k]))
    return xy


def _in_triangles(rng: np.random.Generator, geom: shapely.Geometry, n: int,
                  cell: int) -> np.ndarray:
    """``n`` uniform points in a polygon, by rejection from its triangles, shape (n, 2).

    For a sliver that fills less than :data:`_TRIANGULATE_BELOW` of its box, where drawing
    from the box almost never hits: a diagonal strip 1e-4 m wide across a 1 km cell (a region
    and an exclusion digitised apart along one shore) took 78 s for 20 points, and one 1e-6 m
    wide failed after 408 s. A triangle of its constrained Delaunay triangulation is chosen
    by area and a point drawn uniformly in it; the points the polygon does not contain by
    ``contains_xy`` (on its boundary, or outside by rounding) are drawn again, so each point
    is exactly uniform over the polygon as :func:`_rejection` tests it.
    """
    triangles = shapely.get_parts(shapely.constrained_delaunay_triangles(geom))
    corners = shapely.get_coordinates(triangles).reshape(-1, 4, 2)[:, :3]  # closed rings
    area = shapely.area(triangles)
    xy = np.empty((n, 2))
    pending = np.arange(n)
    for _ in range(_MAX_ROUNDS):
        if pending.size == 0:
            return xy
        chosen = corners[rng.choice(area.size, size=pending.size, p=area / area.sum())]
        u, v = rng.random(pending.size), rng.random(pending.size)
        fold = u + v > 1.0  # the parallelogram's far half, folded onto the triangle
        u[fold], v[fold] = 1.0 - u[fold], 1.0 - v[fold]
        a, b, c = chosen[:, 0], chosen[:, 1], chosen[:, 2]
        candidates = a + u[:, None] * (b - a) + v[:, None] * (c - a)
        inside = shapely.contains_xy(geom, candidates[:, 0], candidates[:, 1])
        xy[pending[inside]] = candidates[inside]
        pending = pending[~inside]
    raise SamplerError(
        f"could not draw points inside the habitable geometry of cell {cell} after "
        f"{_MAX_ROUNDS} rounds: its habitable part is a sliver thinner than the coordinates' "
        "precision; build the grid with a region/exclude that does not leave slivers (e.g. snap "
        "or buffer the polygons) or use a different cell size"
    )


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
    """Pieces of positive-weight raster pixels, each ``pixel ∩ cell``, grouped by cell.

    A pixel over several cells is split among them, each piece weighing the pixel's weight
    times the share of the pixel's area that is the habitable part of the cell, so that the
    density of placed points within a cell follows the raster, area for area.

    Attributes
    ----------
    boxes : numpy.ndarray of float64, shape (P, 4)
        ``pixel ∩ cell box`` of each piece, sorted by cell.
    within : numpy.ndarray of float64, shape (P,)
        Running sum of the piece weights within each cell, restarting at each cell's first
        piece (one sum over all cells made a small cell's weights a difference of two large
        sums: next to pixels of weight 1e17, a cell's pixels of weight 1 and 3 summed to 0).
    start : numpy.ndarray of int64, shape (G + 1,)
        Pieces of cell ``i`` are ``start[i] .. start[i + 1] - 1``.
    total : numpy.ndarray of float64, shape (G,)
        Total weight of each cell (0 where no pixel of positive weight covers any of its
        habitable part).
    acceptance : numpy.ndarray of float64, shape (P,)
        Habitable share of each piece's box, in (0, 1] (1 in a fully habitable square cell):
        the rate at which points uniform in the box land in the cell.
    grid : geosynth.lattice.Grid or None
        The lattice the table was made for (:func:`check_pixel_table` compares it).
    """

    boxes: np.ndarray
    within: np.ndarray
    start: np.ndarray
    total: np.ndarray
    acceptance: np.ndarray | None = None
    grid: Grid | None = field(default=None, repr=False, compare=False)

    @classmethod
    def from_band(cls, values: np.ndarray, transform: Any, row0: int, col0: int,
                  grid: Grid) -> PixelTable:
        """Split the pixels of positive weight of a raster window among the cells they cover.

        :func:`geosynth.rasters.read_weights` reads a raster file or dataset into this table.

        Parameters
        ----------
        values : numpy.ndarray of float, shape (rows, cols)
            The window's weights, finite and ``>= 0``; NaN (no data) weighs 0.
        transform : affine.Affine
            North-up geotransform of the raster (no rotation); ``transform.a``, ``.c``, ``.e``
            and ``.f`` are read.
        row0, col0 : int
            Raster row and column of ``values[0, 0]``.
        grid : geosynth.lattice.Grid
            The lattice.

        Returns
        -------
        PixelTable

        Raises
        ------
        geosynth.errors.InputError
            Negative or infinite weights, pixels too small to tell apart at the grid's
            coordinates, or no habitable cell covered by a pixel of positive weight.
        """
        check_grid(grid)
        values = np.array(values, dtype=np.float64)
        check_weight_values(values, "weights")
        values[np.isnan(values)] = 0.0
        t = transform
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
        pixels = np.column_stack(
            [np.minimum(xa, xb), np.minimum(ya, yb), np.maximum(xa, xb), np.maximum(ya, yb)])
        if ((pixels[:, 2] <= pixels[:, 0]) | (pixels[:, 3] <= pixels[:, 1])).any():
            # Pixels below the float resolution of the coordinates: a point "in" one was put
            # beside it, possibly in the next cell (or rejection sampling ran 6e7 candidates).
            raise InputError(
                f"weights raster pixels ({abs(t.a)!r} x {abs(t.e)!r}) are too small to be told "
                "apart at the grid's coordinates; resample it to coarser pixels (e.g. "
                "`gdalwarp -tr`)"
            )
        window = _window_box(t, row0, col0, *values.shape)
        del values, rows, cols, xa, xb, ya, yb  # the pieces are made in chunks of pixels
        _warn_of_cells_beyond(grid, window)
        cell, boxes, weight, acceptance = _pieces(grid, pixels, w)
        order = np.argsort(cell, kind="stable")
        cell, boxes = cell[order], boxes[order]
        weight, acceptance = weight[order], acceptance[order]
        within = pd.Series(weight).groupby(cell).cumsum().to_numpy()
        start = np.searchsorted(cell, np.arange(grid.n_cells + 1), side="left")
        last = np.maximum(start[1:] - 1, 0)
        total = np.where(start[1:] > start[:-1], within[last] if within.size else 0.0, 0.0)
        _check_some_weight(total)
        return cls(boxes=boxes, within=within, start=start, total=total, acceptance=acceptance,
                   grid=grid)

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


def _window_box(t: Any, row0: int, col0: int, rows: int, cols: int) -> tuple[float, ...]:
    """Return the box ``(xmin, ymin, xmax, ymax)`` the raster window's pixels cover."""
    xs = (t.c + col0 * t.a, t.c + (col0 + cols) * t.a)
    ys = (t.f + row0 * t.e, t.f + (row0 + rows) * t.e)
    return min(xs), min(ys), max(xs), max(ys)


#: Share of a cell's habitable area beyond the weights raster from which the cell is named.
_UNCOVERED_SHARE = 0.01


def _warn_of_cells_beyond(grid: Grid, window: tuple[float, ...]) -> None:
    """Warn of cells partly beyond the raster: their points all go to the part it covers.

    Area beyond the raster weighs 0. A cell the raster misses entirely falls back to uniform
    placement (:func:`unweighted_note`), but one it reaches by a sliver put every point in
    that sliver, silently: a population raster clipped at a county line piled the points of
    the border cells onto the line.
    """
    bounds = grid.cell_bounds(np.arange(grid.n_cells))
    beyond = np.flatnonzero((bounds[:, 0] < window[0]) | (bounds[:, 1] < window[1])
                            | (bounds[:, 2] > window[2]) | (bounds[:, 3] > window[3]))
    if beyond.size == 0:
        return
    geoms = np.asarray(grid.habitable_geometry)[beyond]
    area = shapely.area(geoms)
    outside = shapely.area(shapely.difference(geoms, shapely.box(*window)))
    share = np.divide(outside, area, out=np.zeros_like(area), where=area > 0)
    partly = beyond[(share > _UNCOVERED_SHARE) & (share < 1.0 - 1e-9)]
    if partly.size:
        shown = ", ".join(map(str, partly[:5].tolist()))
        more = f" and {partly.size - 5} more" if partly.size > 5 else ""
        warnings.warn(
            f"{partly.size} cell(s) reach beyond the weights raster (cell ids [{shown}]{more}): "
            "the raster weighs the area beyond it 0, so their points are placed only in the "
            "part it covers; use a raster that covers the whole lattice (e.g. extend it with "
            "its mean or a neighbouring value), or clip the lattice to the raster",
            DataWarning, stacklevel=caller_stacklevel(),
        )


def _pieces(grid: Grid, pixels: np.ndarray,
            w: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Return the pieces ``pixel ∩ cell`` of positive habitable area (cell, box, weight, rate).

    Made :data:`_CHUNK_PIXELS` pixels at a time, so that the temporaries of the overlaps and
    the areas are bounded whatever the raster's size (a pixel may cover up to four cells).
    On hexagons and areas the cells' geometries are indexed and prepared once.
    """
    geoms = tree = None
    if grid.kind != "square":
        geoms = _own_copies(np.asarray(grid.habitable_geometry))
        shapely.prepare(geoms)
        tree = shapely.STRtree(geoms)
    elif not np.asarray(grid.fully_habitable).all():
        geoms = _own_copies(np.asarray(grid.habitable_geometry))
        shapely.prepare(geoms)
    parts: list[tuple[np.ndarray, ...]] = []
    for first in range(0, pixels.shape[0], _CHUNK_PIXELS):
        chunk = pixels[first:first + _CHUNK_PIXELS]
        pixel, cell = _covered_cells(grid, chunk, tree)
        boxes = _clip_boxes(chunk[pixel], grid.cell_bounds(cell))
        habitable = _habitable_areas(grid, cell, boxes, geoms)
        keep = habitable > 0
        pixel, cell, boxes, habitable = pixel[keep], cell[keep], boxes[keep], habitable[keep]
        pixel_area = (chunk[pixel, 2] - chunk[pixel, 0]) * (chunk[pixel, 3] - chunk[pixel, 1])
        box_area = (boxes[:, 2] - boxes[:, 0]) * (boxes[:, 3] - boxes[:, 1])
        parts.append((cell, boxes, w[first + pixel] * habitable / pixel_area,
                      np.minimum(habitable / box_area, 1.0)))
    if not parts:
        return (np.empty(0, dtype=np.int64), np.empty((0, 4)), np.empty(0), np.empty(0))
    return tuple(np.concatenate(arrays) for arrays in zip(*parts, strict=True))


def _covered_cells(grid: Grid, pixels: np.ndarray,
                   tree: shapely.STRtree | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Pairs ``(pixel, cell)`` of the pixel boxes ``(P, 4)`` and the cells they overlap.

    On a square lattice from its edges (a pixel covers a range of rows and columns); on
    hexagons and areas from ``tree``, a spatial index of the cells' habitable geometry. Pairs
    that only touch are kept here and weigh 0 (:func:`_habitable_areas`).
    """
    if grid.kind == "square":
        x_edges, y_edges = grid.edges
        c0 = np.searchsorted(x_edges, pixels[:, 0], side="right") - 1
        c1 = np.searchsorted(x_edges, pixels[:, 2], side="left") - 1
        r0 = np.searchsorted(y_edges, pixels[:, 1], side="right") - 1
        r1 = np.searchsorted(y_edges, pixels[:, 3], side="left") - 1
        c0, r0 = np.maximum(c0, 0), np.maximum(r0, 0)
        c1, r1 = np.minimum(c1, x_edges.size - 2), np.minimum(r1, y_edges.size - 2)
        ncols, nrows = np.maximum(c1 - c0 + 1, 0), np.maximum(r1 - r0 + 1, 0)
        pixel, offset = _ranges(ncols * nrows)
        col = c0[pixel] + offset % ncols[pixel]
        row = r0[pixel] + offset // ncols[pixel]
        shape_cols = x_edges.size - 1
        position = row * shape_cols + col
        cell = np.asarray(grid.lattice_to_cell)[position] if position.size else position
        found = cell >= 0
        return pixel[found], cell[found]
    found = tree.query(shapely.box(*pixels.T), predicate="intersects")
    return found[0].astype(np.int64), found[1].astype(np.int64)


def _ranges(count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Expand runs of ``count[k]`` items: each item's run ``k`` and its offset in the run."""
    owner = np.repeat(np.arange(count.size), count)
    return owner, np.arange(owner.size) - np.repeat(np.cumsum(count) - count, count)


def _habitable_areas(grid: Grid, cell: np.ndarray, boxes: np.ndarray,
                     geoms: np.ndarray | None) -> np.ndarray:
    """Area of each ``box ∩ habitable geometry of cell`` (``geoms``: the cells' prepared copies).

    The box's own area in a fully habitable square cell, and wherever the box lies inside the
    cell's geometry (most pieces of a hexagon); an intersection only for the rest, the pieces
    on a cell's edge.
    """
    width = np.maximum(boxes[:, 2] - boxes[:, 0], 0.0)
    height = np.maximum(boxes[:, 3] - boxes[:, 1], 0.0)
    area = width * height
    part = np.flatnonzero(~np.asarray(grid.fully_habitable)[cell] & (area > 0))
    if part.size:
        pieces = shapely.box(*boxes[part].T)
        own = geoms[cell[part]]
        edge = ~shapely.contains(own, pieces)
        area[part[edge]] = shapely.area(shapely.intersection(pieces[edge], own[edge]))
    return area


def _check_some_weight(total: np.ndarray) -> None:
    """Refuse a raster that gives no cell any weight (all zero, nodata or NaN over the grid).

    Every point would fall back to uniform placement: the raster was surely not the one meant
    (wrong band, extent or CRS units, or an empty mask), and a warning is easy to miss.
    """
    if not (total > 0).any():
        raise InputError(
            "weights raster has no pixel of positive weight over a habitable cell of the grid "
            "(every pixel over the grid is 0, nodata or NaN, or outside the region); check the "
            "band, the extent and the nodata value, or pass weights=None for uniform placement"
        )


def _own_copies(geoms: np.ndarray) -> np.ndarray:
    """Fresh copies of the grid's geometries ``geoms`` (exact: WKB keeps every bit).

    ``shapely.prepare`` changes the geometry objects it is given, and GEOS's prepared
    geometries are not thread-safe: releases placed in threads on one grid
    (:func:`geosynth.distributed.synthesize_dask` on a threaded scheduler) would prepare and
    test the same objects at once, which can crash the interpreter. Each call prepares its own.
    """
    return shapely.from_wkb(shapely.to_wkb(geoms))


def _weighted_points(
    grid: Grid, cells: np.ndarray, rng: np.random.Generator, table: PixelTable
) -> np.ndarray:
    """Points in a weight-proportional pixel of each cell (cells with positive total weight)."""
    xy = np.empty((cells.size, 2))
    if cells.size == 0:
        return xy
    piece = table.choose(cells, rng)
    boxes = table.boxes[piece]
    fully = np.asarray(grid.fully_habitable)[cells]
    full = np.flatnonzero(fully)
    xy[full] = _uniform_in_boxes(rng, boxes[full])
    part = np.flatnonzero(~fully)
    if part.size:
        geoms = _own_copies(np.asarray(grid.habitable_geometry)[cells[part]])
        shapely.prepare(geoms)
        acceptance = (np.full(part.size, 0.5) if table.acceptance is None
                      else np.clip(table.acceptance[piece[part]], 1e-300, 1.0))
        batch = np.clip(np.ceil(1.5 / acceptance), 1, _MAX_BATCH).astype(np.int64)
        boxed = np.flatnonzero(acceptance >= _TRIANGULATE_BELOW)
        xy[part[boxed]] = _rejection(rng, boxes[part[boxed]], geoms[boxed], batch[boxed],
                                     cells[part[boxed]])
        sliver = part[acceptance < _TRIANGULATE_BELOW]
        habitable = np.asarray(grid.habitable_geometry)
        for one in np.unique(piece[sliver]):
            points = sliver[piece[sliver] == one]
            cell = int(cells[points[0]])
            inside = shapely.intersection(shapely.box(*table.boxes[one]), habitable[cell])
            xy[points] = _in_triangles(rng, inside, points.size, cell)
    return xy


def check_pixel_table(weights: Any, grid: Grid) -> PixelTable | None:
    """Return ``weights`` (None or a :class:`PixelTable` read for ``grid``), or refuse it.

    The core places points by a table of arrays and opens no file: a raster is read into a
    table by :func:`geosynth.rasters.read_weights` (which :func:`geosynth.synthesize`,
    :func:`geosynth.naive_synthesize`, :mod:`geosynth.dp` and the CLI's ``--weights`` call on a
    path). A table read for another lattice indexed its cells with this lattice's ids (an
    IndexError or points in the other lattice's pixels).

    Parameters
    ----------
    weights : None or PixelTable
        The placement table.
    grid : geosynth.lattice.Grid
        The lattice.

    Returns
    -------
    PixelTable or None

    Raises
    ------
    geosynth.errors.InputError
        ``weights`` is a raster path, a dataset or another type, or a PixelTable of another
        number of cells.
    """
    if weights is None:
        return None
    if not isinstance(weights, PixelTable):
        raise InputError(
            f"weights must be a geosynth.synth.PixelTable here, got {type(weights).__name__}; "
            "read the raster with geosynth.rasters.read_weights(raster, grid) and pass the "
            "table (geosynth.synthesize, geosynth.naive_synthesize and the CLI's --weights take "
            "the raster's path itself)"
        )
    if np.shape(weights.total) != (grid.n_cells,):
        raise InputError(
            f"weights is a PixelTable of {np.shape(weights.total)[0]:,} cells, but the "
            f"lattice has {grid.n_cells:,}; read it for this lattice with "
            "geosynth.rasters.read_weights(raster, grid) (geosynth.synthesize and "
            "geosynth.naive_synthesize take the raster's path itself)"
        )
    # A table of the same number of cells read for another lattice put every point in that
    # lattice's pixels, outside this one (and its region), without a word.
    if weights.grid is None or not (weights.grid is grid or weights.grid.same_cells(grid)):
        raise InputError(
            "weights is a PixelTable read for another lattice (or made without one): its "
            "pixels would place points in that lattice's cells; read it for this lattice with "
            "geosynth.rasters.read_weights(raster, grid)"
        )
    return weights


def warn_if_weights_follow_records(table: PixelTable | None, grid: Grid, xy: np.ndarray, *,
                                   show_shares: bool = True) -> None:
    """PrivacyLeakWarning when the weights' positive pixels are little more than the records.

    A raster made from the records (their density at a fine bandwidth, one pixel of weight per
    record) is no public weight: the synthetic points are drawn into the pixels, so a release
    largely put the records back (92 % within 15 m of one). Its sign: nearly all the records
    (:data:`_FOLLOWED_SHARE`) lie in pixels of positive weight that cover a sliver
    (:data:`_SLIVER_SHARE`) of their cells' habitable area. Public rasters of where people
    live can look alike in sparse places (building footprints in the countryside), so this is a
    warning. Judged on at most 10,000 records.

    Parameters
    ----------
    table : PixelTable or None
        The placement table (None: nothing to check).
    grid : geosynth.lattice.Grid
        Its lattice.
    xy : numpy.ndarray of float64, shape (n, 2)
        The records' coordinates.
    show_shares : bool, default True
        Quote the shares of records and area. False for a DP release, whose terminal output
        may be pasted: the shares are numbers of the records.
    """
    if table is None or xy.shape[0] == 0:
        return
    rng = np.random.default_rng(0)  # a fixed sample: the same warning for the same data
    sample = xy if xy.shape[0] <= 10_000 else xy[rng.choice(xy.shape[0], 10_000, replace=False)]
    cells = np.asarray(grid.locate(sample))
    sample, cells = sample[cells >= 0], cells[cells >= 0]
    if cells.size == 0:
        return
    owner, offset = _ranges(table.start[cells + 1] - table.start[cells])
    piece = table.start[cells][owner] + offset
    boxes, x, y = table.boxes[piece], sample[owner, 0], sample[owner, 1]
    inside = (x >= boxes[:, 0]) & (x <= boxes[:, 2]) & (y >= boxes[:, 1]) & (y <= boxes[:, 3])
    held = np.bincount(owner[inside], minlength=cells.size) > 0
    used = np.unique(cells)
    of_used, offset = _ranges(table.start[used + 1] - table.start[used])
    pieces = table.start[used][of_used] + offset
    widths = table.boxes[pieces, 2] - table.boxes[pieces, 0]
    heights = table.boxes[pieces, 3] - table.boxes[pieces, 1]
    acceptance = 1.0 if table.acceptance is None else table.acceptance[pieces]
    covered = float(np.sum(widths * heights * acceptance))
    habitable = float(np.sum(shapely.area(np.asarray(grid.habitable_geometry)[used])))
    if held.mean() >= _FOLLOWED_SHARE and covered < _SLIVER_SHARE * habitable:
        area, share = ((f"{covered / habitable:.2%}", f"{held.mean():.0%}") if show_shares
                       else ("a sliver", "nearly all"))
        warnings.warn(
            f"the weights raster's pixels of positive weight cover {area} of the habitable "
            f"area of the cells that hold records, yet {share} of the records lie in them: a "
            "raster made from the records (their density) would place "
            "the synthetic points on them; use a public raster (population, buildings), and "
            "if it is one, check that it is not the records' own density",
            PrivacyLeakWarning,
            stacklevel=caller_stacklevel(),
        )


#: Share of the records in pixels of positive weight (with :data:`_SLIVER_SHARE`) that makes a
#: weights raster look made from them.
_FOLLOWED_SHARE = 0.9
#: Share of the habitable area that pixels of positive weight cover, below which they are a
#: sliver of it.
_SLIVER_SHARE = 0.02


def check_weight_values(values: np.ndarray, name: str) -> None:
    """Refuse negative or infinite weights (NaN, no data, is allowed).

    Parameters
    ----------
    values : numpy.ndarray of float
        Pixel weights.
    name : str
        What they are, for the message (``"weights"``, ``"prior"``).

    Raises
    ------
    geosynth.errors.InputError
        Some weights are negative or infinite.
    """
    bad = np.isinf(values) | (values < 0)
    if bad.any():
        raise InputError(
            f"{name} raster has {int(bad.sum())} negative or infinite pixel values over the "
            "grid; weights must be finite and >= 0 (set nodata for pixels without data)"
        )
