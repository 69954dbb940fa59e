"""Regular lattices over a study area: clipping, adjacency, components and point location.

:class:`Grid` is the spatial support of every model in geosynth: the intensity of each attribute
combination is constant within a cell, and the ICAR prior couples neighbouring cells (Nunes 2018,
§2.1, after Paiva et al. 2014). Nunes defines neighbours as cells sharing a vertex or points of
their sides, i.e. queen contiguity, which is the default here. A grid is a regular
``nrows x ncols`` lattice over rectangular bounds, optionally clipped to a study ``region`` and
with no-go areas (``exclude``: lakes, parks, ...) removed.

Everything that scales with the number of cells or points is vectorised: the adjacency comes from
the lattice diagonals (as :func:`libpysal.weights.lat2SW`) restricted to the kept cells, clipping
uses shapely 2 array operations and an STRtree, and :meth:`Grid.locate` is arithmetic on the
coordinates with a geometric test only for points in partially habitable cells.
"""

from __future__ import annotations

import copy
import math
import numbers
import threading
import warnings
from collections.abc import Sequence
from decimal import Decimal, localcontext
from typing import TYPE_CHECKING, Any, NamedTuple

import geopandas as gpd
import numpy as np
import pandas as pd
import pyproj
import shapely
from scipy import sparse
from scipy.sparse.csgraph import connected_components

from geosynth._areas import PolygonIndex, area_contiguity, check_no_overlap, link_islands
from geosynth._hexagons import (
    HexLayout,
    hex_around,
    hex_layout,
    hex_locate,
    hex_neighbours,
    hex_positions_meeting,
)
from geosynth._messages import caller_stacklevel
from geosynth._points import metres_per_unit, point_coordinates
from geosynth._validation import (
    as_float,
    check_choice,
    check_real,
    describe_value,
    is_integer,
    is_real,
    refuse_masked,
)
from geosynth.errors import (
    CRSError,
    DataWarning,
    GridError,
    InputError,
    InputTypeError,
    IsolatedCellWarning,
)

if TYPE_CHECKING:
    import libpysal

__all__ = ["Grid", "parse_crs", "require_projected_crs"]

#: Largest lattice (``nrows * ncols``) a :class:`Grid` may span. Building one this size takes
#: about 1 GB and 3 s (2,000 × 2,000, measured; 25 million cells took 5.7 GB), far beyond what
#: a model fit holds. Raise it deliberately if needed.
MAX_CELLS = 4_000_000
#: The most cell ids :meth:`Grid.check_cell_ids` converts in one call (0.8 GB of int64 ids,
#: and 1.6 GB of points placed in them by :func:`geosynth.synth.place_in_cells`): ten times
#: :data:`geosynth.datasets.MAX_RECORDS`, the largest simulated data set.
MAX_CELL_IDS = 10**8
#: The widest extent (and cell size) of a lattice, in CRS units: coordinates in millimetres of
#: the whole Earth (4e7 m round) stay below it.
MAX_EXTENT = 1e12

# Cells whose habitable area is below this fraction of the box area count as empty (guards against
# floating-point slivers where a region boundary runs along a cell edge).
_AREA_RTOL = 1e-12
# ... or below a strip this many float64 steps of the largest coordinate wide along the cell's
# perimeter (_sliver_area): at UTM northings (7e6) a region edge digitised on a lattice line
# (7519104.4) misses the computed line (7519097.8 + 3 * 2.2) by a step of 1e-9, which left the
# cells beyond it a sliver of 5e-11 of their area, far above _AREA_RTOL: spurious cells, with
# neighbours, in the model.
_SLIVER_STEPS = 4
# Serialises the geometric tests of Grid.locate: shapely prepares a geometry on its first point
# test, and GEOS's prepared geometries are not thread-safe (libgeos/geos#825): threads locating
# points in one clipped or areal grid at once crashed the interpreter (double free, segfault).
_GEOMETRY_LOCK = threading.Lock()
# How many cell ids an IsolatedCellWarning names.
_N_NAMED = 10
#: Candidate links of an island tested at once against the barriers (_nearest_reachable).
_RELINK_BATCH = 256
#: Largest ratio of two areas' exposures (:meth:`Grid.from_polygons`): beyond it, surely a unit
#: error or a sliver (scaled to a geometric mean of 1, 1e308 and 1e-320 overflowed to inf).
_EXPOSURE_SPREAD = 1e15
_AREA_ADVICE = ("an area's exposure must be a positive finite number: give an area of no "
                "population a small one if records may lie in it (or use 'area'), and drop it, "
                "or add it to the no-go areas (exclude=, CLI: --exclude), if none can (records "
                "in it are then outside the lattice)")
_CELL_ADVICE = ("a cell's exposure must be a positive finite number: give a cell of no "
                "population a small one, as geosynth.rasters.cell_exposure does (records may "
                "lie in it)")
# Neighbour steps (drow, dcol) in increasing lattice offset drow*ncols + dcol, so the neighbours of
# each cell come out sorted by cell id (cell ids increase with lattice position).
_STEPS = {
    "queen": ((-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)),
    "rook": ((-1, 0), (0, -1), (0, 1), (1, 0)),
}
_POLYGON_TYPES = (3, 6)  # shapely type ids of Polygon and MultiPolygon
_LINE_TYPES = (1, 2, 5)  # shapely type ids of LineString, LinearRing and MultiLineString
_POINT_TYPE = 0
_COLLECTION_TYPE = 7  # shapely type id of GeometryCollection
#: Lattice kinds: square cells, regular hexagons, or areal units (one cell per polygon).
KINDS = ("square", "hexagonal", "areal")
_ORIENTATIONS = ("pointy", "flat")
_ISLANDS = ("keep", "nearest")
# Mantissas of the "nice" snapping units of Grid.from_points(shape=...): 1, 2, 2.5, 5 x 10^k, so a
# unit is always more than half the cell size it stands for.
_NICE_MANTISSAS = (5.0, 2.5, 2.0, 1.0)

Bounds = tuple[float, float, float, float]
PolygonsLike = Any  # GeoDataFrame | GeoSeries | shapely.Geometry | Sequence[shapely.Geometry]


class Grid:
    """A regular lattice of cells, optionally clipped to a region with excluded areas.

    Build one with :meth:`Grid.regular` (explicit bounds) or :meth:`Grid.from_points` (bounds of
    the data, snapped outward so that they do not reveal its extremes); ``Grid(...)`` takes the
    same arguments as :meth:`Grid.regular`. The CRS must be projected (metres); geographic CRSs
    (degrees) are refused.

    Parameters
    ----------
    bounds : tuple of float
        ``(xmin, ymin, xmax, ymax)`` of the lattice, in the units of ``crs``.
    shape : tuple of int, optional
        ``(nrows, ncols)``. Give exactly one of ``shape`` and ``cell_size``.
    cell_size : float or tuple of float, optional
        Cell width and height ``dx`` or ``(dx, dy)``. The lattice then extends ``bounds`` up and
        to the right to a whole number of cells: ``ncols = ceil((xmax - xmin) / dx)`` (a width
        within ``1e-9`` cells of an integer is rounded to it, so float noise adds no column).
    crs : pyproj.CRS or str or int, optional
        Projected coordinate reference system of the lattice (anything
        :meth:`pyproj.CRS.from_user_input` accepts); a geographic CRS is refused.
    contiguity : {"queen", "rook"}, default "queen"
        Rook neighbours share an edge; queen neighbours share an edge or a corner.
    region : GeoDataFrame, GeoSeries, shapely geometry or sequence of polygons, optional
        Study region. Cells are clipped to the union of its polygons.
    exclude : GeoDataFrame, GeoSeries, shapely geometry or sequence of polygons, optional
        No-go areas removed from every cell.

    Notes
    -----
    Conventions:

    * Row 0 is the **southernmost** row (smallest y) and column 0 the westernmost. The lattice
      position of (row, col) is ``row * ncols + col``.
    * Cells are half-open boxes ``[x0, x1) x [y0, y1)``; points on the outer max edges
      ``x == xmax`` or ``y == ymax`` belong to the last column or the last (northernmost) row.
    * The habitable geometry of a cell is ``box ∩ union(region) − union(exclude)`` and its
      habitable fraction is the area of that geometry over the box area. Cells with no habitable
      area (outside the region, merely touching it, or wholly excluded) are dropped, as are cells
      left only a rounding sliver where a region or no-go boundary runs along a lattice line (a
      strip a few float64 steps of the coordinates wide); the kept cells get ids
      ``0 .. n_cells - 1`` in row-major order of their lattice positions.
    * The adjacency of a clipped lattice is the regular lattice adjacency restricted to the kept
      cells: two kept cells are neighbours if their boxes are lattice neighbours, whatever the
      region looks like between them. :meth:`without_links_across` cuts the links that cross
      rivers, railways or motorways.
    * Point location (:meth:`locate`): a point in a partially habitable cell is kept if it
      *intersects* the habitable geometry, so boundaries count as habitable. Points on the region
      boundary are inside; points on the boundary of an excluded area are inside too (only points
      strictly inside an excluded area are refused). "On" is up to float64 rounding: a point
      computed to lie on a slanted edge can fall a few 1e-10 m either side of the clipped
      geometry (GEOS rounds the intersection), and is located accordingly.
    * Connected components are numbered in order of their smallest cell id.
    * ``region`` and ``exclude`` given as a GeoDataFrame or GeoSeries with a CRS are reprojected
      to the grid CRS; geometries without a CRS are taken to be in the grid CRS. An ``exclude``
      that removes no area from any cell (far from the region: usually coordinates in another
      CRS) warns (:class:`~geosynth.errors.DataWarning`), as it would let points into the
      no-go areas it was meant to keep them out of.

    Examples
    --------
    >>> grid = Grid.regular((0, 0, 10, 10), shape=(10, 10))
    >>> int(grid.n_neighbours.max()), grid.n_components
    (8, 1)
    >>> grid.locate([[0.5, 0.5], [9.5, 0.5], [10.0, 10.0], [11.0, 5.0]]).tolist()
    [0, 9, 99, -1]
    """

    #: Exposure of the cells when it is not their habitable fraction (:attr:`exposure`).
    _exposure: np.ndarray | None = None
    _exposure_source = "habitable fraction"
    #: Single-part barriers of every :meth:`without_links_across` so far.
    _barrier_parts = np.empty(0, dtype=object)

    def __init__(
        self,
        bounds: Sequence[float],
        shape: tuple[int, int] | None = None,
        cell_size: float | tuple[float, float] | None = None,
        crs: Any = None,
        contiguity: str = "queen",
        region: PolygonsLike = None,
        exclude: PolygonsLike = None,
    ) -> None:
        self._kind = "square"
        self._contiguity = _check_contiguity(contiguity)
        self._crs = _as_crs(crs)
        xmin, ymin, xmax, ymax = _check_bounds(bounds)
        nrows, ncols, dx, dy = _lattice_shape((xmin, ymin, xmax, ymax), shape, cell_size)
        _check_resolution(min(dx, dy), (xmin, ymin, xmax, ymax))
        self._shape = (nrows, ncols)
        self._xedges = _edges(xmin, xmax, ncols, dx, exact_max=cell_size is None)
        self._yedges = _edges(ymin, ymax, nrows, dy, exact_max=cell_size is None)
        self._cell_size = (float(dx), float(dy))
        region_geom = polygon_union(region, "region", self._crs)
        exclude_geom = polygon_union(exclude, "exclude", self._crs)
        self._is_clipped = region is not None or exclude is not None
        self._snap_unit: tuple[float, float] | None = None
        self._cache: dict[str, Any] = {}
        if self._is_clipped:
            self._build_clipped(region_geom, exclude_geom)
        else:
            n = nrows * ncols
            self._lattice_to_cell = np.arange(n, dtype=np.int64)
            self._cell_row, self._cell_col = np.divmod(np.arange(n, dtype=np.int64), ncols)
            self._habitable_fraction = np.ones(n)
            self._fully = np.ones(n, dtype=bool)
        self._set_adjacency(self._square_adjacency())

    # ------------------------------------------------------------------ constructors
    @classmethod
    def regular(
        cls,
        bounds: Sequence[float],
        shape: tuple[int, int] | None = None,
        cell_size: float | tuple[float, float] | None = None,
        crs: Any = None,
        contiguity: str = "queen",
        region: PolygonsLike = None,
        exclude: PolygonsLike = None,
    ) -> Grid:
        """Build a lattice over explicit bounds.

        Parameters
        ----------
        bounds : tuple of float
            ``(xmin, ymin, xmax, ymax)``.
        shape : tuple of int, optional
            ``(nrows, ncols)``; give exactly one of ``shape`` and ``cell_size``.
        cell_size : float or tuple of float, optional
            ``dx`` or ``(dx, dy)``; the lattice extends ``bounds`` up/right to whole cells.
        crs : pyproj.CRS or str or int, optional
            CRS of ``bounds``; must be projected (a geographic CRS, in degrees, is refused).
        contiguity : {"queen", "rook"}, default "queen"
            Neighbourhood definition.
        region : GeoDataFrame, GeoSeries, shapely geometry or sequence of polygons, optional
            Study region the cells are clipped to.
        exclude : GeoDataFrame, GeoSeries, shapely geometry or sequence of polygons, optional
            Areas removed from the cells.

        Returns
        -------
        Grid

        Raises
        ------
        geosynth.errors.GridError
            Invalid bounds, shape, cell size, contiguity or polygons, or no habitable cell left.
        geosynth.errors.CRSError
            ``crs`` is not understood or is geographic, or polygons carry a CRS while the grid
            has none.
        """
        return cls(bounds, shape, cell_size, crs, contiguity, region, exclude)

    @classmethod
    def from_points(
        cls,
        gdf: gpd.GeoDataFrame | gpd.GeoSeries,
        shape: tuple[int, int] | None = None,
        cell_size: float | tuple[float, float] | None = None,
        pad: float = 0.0,
        region: PolygonsLike = None,
        exclude: PolygonsLike = None,
        contiguity: str = "queen",
        kind: str = "square",
        orientation: str = "pointy",
    ) -> Grid:
        """Build a lattice over a point layer, with bounds that do not reveal its extremes.

        With ``region``, the lattice spans the bounds of the region (plus ``pad``), which are
        public, and the points only supply the CRS (points outside the region fall in no cell).

        Without ``region``, the bounds are derived from the confidential points, so they are
        **snapped outward** to a coarse value first: no exact extreme x or y of a record appears
        in :attr:`bounds`, in the vertices of :attr:`cells` or in anything derived from them
        (the metadata and ``grid`` layer of a release). Every point lies strictly inside the
        lattice. The lattice semantics are:

        * ``cell_size=(dx, dy)``: cells of exactly ``dx`` by ``dy``; the lattice edges are whole
          multiples of the cell size (``xmin = i * dx``), the first one strictly below the
          smallest x of the points (minus ``pad``) and the last one strictly above the largest
          x (plus ``pad``); likewise in y. The snapping unit is ``(dx, dy)``.
        * ``shape=(nrows, ncols)``: exactly ``nrows x ncols`` cells. The snapping unit ``ux``
          is the largest "nice" number (1, 2, 2.5 or 5 times a power of 10) at most
          ``(x extent + 2 * pad) / ncols``, i.e. between half the nominal cell width and the
          nominal cell width; the bounds are the multiples of ``ux`` just outside the points'
          extremes (strictly) and the cells divide them evenly, so ``dx = (xmax - xmin) /
          ncols`` is slightly larger than the nominal width. Likewise in y. Neither unit is
          below :data:`MIN_SNAP_SHARE` of the other: records along one street, 3 cm apart in x
          and 3 km in y, had their extreme x published to 2.5 mm in a 10 x 10 lattice (x is
          then snapped to 25 m, a tenth of y's unit, and the cells widen to match).

        What snapped bounds still reveal: each extreme x (y) of the points to within one snapping
        unit :attr:`snap_unit` (about one cell); and if the coordinates themselves are rounded
        to multiples of the unit (coarse geocoding), possibly the exact extreme. Pass the study
        ``region`` (CLI: ``--region``) to publish nothing about the extremes at all.

        Parameters
        ----------
        gdf : GeoDataFrame or GeoSeries
            The points; the grid takes their CRS (which must be projected, in metres).
        shape : tuple of int, optional
            ``(nrows, ncols)``; give exactly one of ``shape`` and ``cell_size``.
        cell_size : float or tuple of float, optional
            ``dx`` or ``(dx, dy)``.
        pad : float, default 0.0
            Margin added on every side of the bounds (of the points, or of ``region``) before
            snapping, in CRS units. It never grows ``region``: the cells are clipped to it (and a
            hexagonal lattice over a ``region`` ignores it: its hexagons are laid from the
            region's bounds, and a pad would only add hexagons clipped away).
        region, exclude : GeoDataFrame, GeoSeries, shapely geometry or sequence of polygons
            As in :meth:`regular`.
        contiguity : {"queen", "rook"}, default "queen"
            Neighbourhood definition (square cells; hexagons have six neighbours either way).
        kind : {"square", "hexagonal"}, default "square"
            Square cells, or regular hexagons of side ``cell_size`` (:meth:`hexagonal`) over
            the region, or over the bounds snapped outward to multiples of ``cell_size``.
        orientation : {"pointy", "flat"}, default "pointy"
            Orientation of hexagons (``kind="hexagonal"``).

        Returns
        -------
        Grid
            With :attr:`snap_unit` set when the bounds were derived from the points.

        Raises
        ------
        geosynth.errors.InputError
            ``gdf`` is not a GeoDataFrame/GeoSeries; without ``region``, it has missing, empty or
            non-point geometries or non-finite coordinates (the rows are named).
        geosynth.errors.CRSError
            ``gdf`` is in a geographic CRS (degrees).
        geosynth.errors.GridError
            Without ``region``: ``gdf`` has no records, or its points have zero width or height
            (one record, identical or collinear points) and ``pad`` is 0; ``pad`` is negative.

        Examples
        --------
        >>> import geopandas as gpd
        >>> points = gpd.GeoSeries.from_xy([1003.7, 1961.2], [2040.5, 2512.9], crs=3857)
        >>> grid = Grid.from_points(points, cell_size=250)
        >>> grid.bounds, grid.shape, grid.snap_unit
        ((1000.0, 2000.0, 2000.0, 2750.0), (3, 4), (250.0, 250.0))
        """
        if not isinstance(gdf, gpd.GeoDataFrame | gpd.GeoSeries):
            raise InputError(
                f"gdf must be a GeoDataFrame or GeoSeries, got {type(gdf).__name__}; "
                "convert with geopandas.GeoDataFrame(df, geometry=...)"
            )
        pad_value = as_float(pad) if is_real(pad) else math.nan  # 10**400: OverflowError
        if not (math.isfinite(pad_value) and pad_value >= 0):
            raise GridError(f"pad must be a finite number >= 0, got {describe_value(pad)}")
        pad = pad_value
        kind = _check_word(kind, "kind", ("square", "hexagonal"),
                           " (areal units: Grid.from_polygons)")
        # a square lattice ignores the orientation, but not a typo
        orientation = _check_word(orientation, "orientation", _ORIENTATIONS)
        contiguity = _check_contiguity(contiguity)
        crs = _as_crs(gdf.crs, "gdf")
        region_geom = polygon_union(region, "region", crs)
        if kind == "hexagonal":
            return cls._hexagons_over_points(gdf, shape, cell_size, pad, region_geom, exclude,
                                             orientation, crs)
        if region_geom is not None:
            rx0, ry0, rx1, ry1 = (float(v) for v in shapely.bounds(region_geom))
            bounds = (rx0 - pad, ry0 - pad, rx1 + pad, ry1 + pad)
            return cls(bounds, shape, cell_size, crs, contiguity, region_geom, exclude)
        xy = point_coordinates(gdf, "gdf")
        _check_extent(xy, pad)
        lower = xy.min(axis=0) - pad
        upper = xy.max(axis=0) + pad
        if (shape is None) == (cell_size is None):
            _lattice_shape((0.0, 0.0, 1.0, 1.0), shape, cell_size)  # raises the usual message
        if shape is not None:
            nrows, ncols = _check_shape(shape)
            units = _shape_units(_nice_floor((upper[0] - lower[0]) / ncols),
                                 _nice_floor((upper[1] - lower[1]) / nrows))
            (x0, x1), (y0, y1) = (
                _snap_outward(lower[k], upper[k], units[k], None) for k in (0, 1)
            )
        else:
            units = _check_cell_size(cell_size)
            # A max bound half a cell short of the last edge: Grid extends it to whole cells,
            # which gives exactly the snapped number of cells whatever the rounding.
            (x0, x1), (y0, y1) = (
                _snap_outward(lower[k], upper[k], units[k], units[k]) for k in (0, 1)
            )
            x1, y1 = x1 - units[0] / 2, y1 - units[1] / 2
        grid = cls((x0, y0, x1, y1), shape, cell_size, crs, contiguity, None, exclude)
        grid._snap_unit = (float(units[0]), float(units[1]))
        return grid


    @classmethod
    def hexagonal(
        cls,
        extent: Sequence[float] | PolygonsLike,
        cell_size: float,
        orientation: str = "pointy",
        crs: Any = None,
        exclude: PolygonsLike = None,
    ) -> Grid:
        """Build a lattice of regular hexagons over explicit bounds or a study region.

        Hexagons have equal areas and six equal neighbours (each shares an edge, so queen and
        rook contiguity coincide), with less directional bias than squares. Cell ids follow the
        rows of the "odd-r" offset layout (:attr:`cell_row`, :attr:`cell_col`; row 0 is the
        southernmost row, odd rows are shifted half a hexagon east; for ``"flat"`` hexagons rows
        and columns are swapped: row 0 is the westernmost column of hexagons).

        Parameters
        ----------
        extent : tuple of float, or GeoDataFrame, GeoSeries, shapely geometry or polygons
            ``(xmin, ymin, xmax, ymax)`` to cover with whole hexagons, or a study region: the
            hexagons meeting it are clipped to it (their habitable geometry).
        cell_size : float
            Side of each hexagon (centre to corner) in CRS units; a hexagon has area
            ``3 * sqrt(3) / 2 * cell_size**2`` (about 2.6 times the square of the side) and
            neighbouring centres are ``sqrt(3) * cell_size`` apart.
        orientation : {"pointy", "flat"}, default "pointy"
            Pointy-top (a corner to the north) or flat-top (an edge to the north) hexagons.
        crs : pyproj.CRS or str or int, optional
            Projected CRS; defaults to the CRS of a GeoDataFrame/GeoSeries ``extent``.
        exclude : GeoDataFrame, GeoSeries, shapely geometry or sequence of polygons, optional
            No-go areas removed from every hexagon.

        Returns
        -------
        Grid
            With :attr:`kind` ``"hexagonal"``.

        Raises
        ------
        geosynth.errors.GridError
            Invalid extent, cell size, orientation or polygons, too many hexagons, or no
            habitable hexagon left.
        geosynth.errors.CRSError
            A geographic CRS.

        Examples
        --------
        >>> grid = Grid.hexagonal((0, 0, 1000, 1000), cell_size=100)
        >>> grid.kind, int(grid.n_neighbours.max())
        ('hexagonal', 6)
        """
        orientation = _check_word(orientation, "orientation", _ORIENTATIONS)
        if isinstance(cell_size, Sequence | np.ndarray):
            raise GridError(f"cell_size of a hexagonal lattice is one number, got {cell_size!r}")
        size = _check_cell_size(cell_size)[0]
        if isinstance(extent, gpd.GeoDataFrame | gpd.GeoSeries) and crs is None:
            crs = extent.crs
        crs = _as_crs(crs)
        if _is_bounds(extent):
            bounds, region = _check_bounds(extent), None  # type: ignore[arg-type]
        elif extent is None:  # its bounds were NaN: "cannot convert NaN to integer"
            raise GridError("extent must be bounds (xmin, ymin, xmax, ymax) or the polygons of "
                            "a study region, got None")
        else:
            region = polygon_union(extent, "region", crs)
            bounds = tuple(float(v) for v in shapely.bounds(region))
        layout = hex_layout(bounds, size, orientation == "flat")
        if layout.nrows * layout.ncols > MAX_CELLS:
            raise GridError(
                f"the hexagonal lattice would have about {_rounded(layout.nrows * layout.ncols)} "
                f"cells, more than the limit of {MAX_CELLS:,}; use a larger cell_size (or raise "
                "geosynth.lattice.MAX_CELLS)"
            )
        _check_resolution(size, bounds, _HEXAGON_FIX)
        position, polygons = hex_positions_meeting(layout, bounds)
        row, col = np.divmod(position, layout.ncols)
        grid = cls.__new__(cls)
        grid._kind, grid._crs, grid._contiguity = "hexagonal", crs, "queen"
        grid._layout = layout
        grid._shape = (layout.nrows, layout.ncols)
        grid._cell_size = (size, size)
        kept = grid._set_cells(polygons, region, polygon_union(exclude, "exclude", crs))
        grid._cell_row, grid._cell_col = row[kept], col[kept]
        grid._lattice_to_cell = np.full(layout.nrows * layout.ncols, -1, dtype=np.int64)
        grid._lattice_to_cell[position[kept]] = np.arange(kept.size, dtype=np.int64)
        grid._set_adjacency(
            hex_neighbours(layout, grid._cell_row, grid._cell_col, grid._lattice_to_cell)
        )
        return grid

    @classmethod
    def from_polygons(
        cls,
        areas: gpd.GeoDataFrame | gpd.GeoSeries,
        id_column: str | None = None,
        contiguity: str = "queen",
        exclude: PolygonsLike = None,
        islands: str = "keep",
        public_ids: bool = False,
        gap: float = 0.0,
        exposure: str | Sequence[float] | np.ndarray | pd.Series | None = None,
    ) -> Grid:
        """Build a lattice with one cell per areal unit (census tract, district, county, ...).

        The ICAR prior is the standard model on any areal adjacency (Besag, York & Mollié 1991),
        so the Paiva et al. (2014) model carries over unchanged: the cells are the areas, the
        neighbours share a boundary.

        Parameters
        ----------
        areas : GeoDataFrame or GeoSeries
            Polygons or MultiPolygons forming a coverage (they may touch, not overlap), in a
            projected CRS. Cell ``i`` is the ``i``-th row (after dropping areas wholly inside
            ``exclude``).
        id_column : str, optional
            Column of unique area identifiers, kept as :attr:`area_ids` and as the ``area_id``
            column of :attr:`cells`.
        contiguity : {"queen", "rook"}, default "queen"
            Queen neighbours share at least a boundary point, rook neighbours a boundary
            segment; built by :meth:`libpysal.graph.Graph.build_contiguity`.
        exclude : GeoDataFrame, GeoSeries, shapely geometry or sequence of polygons, optional
            No-go areas; the habitable geometry of an area is the area minus them.
        islands : {"keep", "nearest"}, default "keep"
            An area with no neighbour is its own connected component (with an
            :class:`~geosynth.errors.IsolatedCellWarning`), or, with ``"nearest"``, is linked
            to its nearest area (the usual practice with the BYM model); islands that are
            nearest to each other are then linked, as a group, to the nearest area outside the
            group, so no component is made of islands alone. The links are in
            :attr:`linked_islands`.
        public_ids : bool, default False
            Whether the area identifiers are public and may appear in a release; by default a
            release's ``grid`` layer holds the areas without their ids.
        gap : float, default 0
            Areas whose boundaries come within ``gap`` CRS units of each other are neighbours
            too: areas digitised separately often leave slivers of gap between them, which
            libpysal's exact contiguity reads as no contact (and the areas as islands). With
            rook contiguity the two must run along each other for more than about ``2·gap``
            (:func:`geosynth._areas.gap_neighbours`). A point in no area but within ``gap``
            of one (a record geocoded onto a boundary street) is located in the nearest
            (:meth:`locate`). At most a tenth of the side of a typical
            area (the square root of the median area); an area narrower than ``gap`` (a road
            or river) no longer separates the areas on either side.
        exposure : "area", str or array-like, optional
            What an area's expected count is proportional to at a given intensity: the
            offset ``log a_i`` of :class:`geosynth.PaivaModel` (:attr:`exposure`). By default
            the habitable fraction (1 for an area ``exclude`` does not cut), so the fields
            smooth the areas' counts as counts: right for areas drawn to hold similar
            populations (census tracts). ``"area"``: the habitable area, so the fields smooth
            the density per unit area as on a lattice of cells: right for administrative areas
            of very different sizes, where smoothing counts inflates the small areas' share
            (a board of 1 km and 250 m squares with uniform records gave the small ones
            0.57--0.61 of the points for 0.508 of the records). The name of a column of
            ``areas`` (a population), or one value per row of ``areas``: the fields smooth the
            rate per unit of it, taken as it is where ``exclude`` cuts an area (no one lives in
            a lake). Positive finite numbers for the areas kept, at most 10¹⁵ times apart;
            scaled to a geometric mean of 1 (the scale goes into μ). **Public data**, like the
            areas: every release follows it, an ε-DP release too, so it must never be a
            quantity of the confidential records (their counts per area).

        Returns
        -------
        Grid
            With :attr:`kind` ``"areal"``.

        Raises
        ------
        geosynth.errors.GridError
            Not polygons (or no active geometry column), invalid, empty or overlapping areas,
            an ``id_column`` that is no str or names several columns, duplicate, missing or
            non-scalar ids (lists) or ids written alike (``1`` and ``"1"``), more than
            :data:`MAX_CELLS` areas, an unknown option, a ``gap`` that is negative, not finite
            or above a tenth of a typical area's side, an ``exposure`` that is not a positive
            finite number for every area kept (naming them), names no single column, spans
            more than 10¹⁵, or is neither a str nor 1-D, or no habitable area left.
        geosynth.errors.CRSError
            ``areas`` is in a geographic CRS.
        """
        if not isinstance(areas, gpd.GeoDataFrame | gpd.GeoSeries):
            raise GridError(
                f"areas must be a GeoDataFrame or GeoSeries of polygons, got "
                f"{type(areas).__name__}; read them with geopandas.read_file"
            )
        islands = _check_word(islands, "islands", _ISLANDS)
        if not isinstance(public_ids, bool | np.bool_):
            raise GridError(f"public_ids must be True or False, got {public_ids!r}")
        try:
            areas.geometry  # noqa: B018 (a GeoDataFrame without an active geometry raises)
        except AttributeError:
            raise GridError("areas has no active geometry column; set one with "
                            "areas.set_geometry(column)") from None
        crs = _as_crs(areas.crs, "areas")
        if len(areas) > MAX_CELLS:  # before any geometric work (a contiguity of all pairs)
            raise GridError(
                f"areas has {len(areas):,} areas, more than the limit of {MAX_CELLS:,} cells; "
                "dissolve them into larger units (or raise geosynth.lattice.MAX_CELLS)"
            )
        polygons = _area_polygons(areas)
        ids = _area_ids(areas, id_column)
        check_no_overlap(polygons, "areas", np.asarray(areas.index))
        gap = _check_gap(gap, polygons)
        grid = cls.__new__(cls)
        grid._kind, grid._crs = "areal", crs
        grid._contiguity = _check_contiguity(contiguity)
        grid._public_ids = bool(public_ids)
        excluded = polygon_union(exclude, "exclude", crs)
        kept = grid._set_cells(polygons, None, excluded)
        grid._exposure, grid._exposure_source = _area_exposure(
            areas, exposure, kept, grid.habitable_geometry, None if ids is None else ids[kept])
        grid._exclude = excluded  # a point within gap of an area may lie in it (_locate_in_gaps)
        _warn_of_dropped_areas(np.asarray(areas.index), kept)
        grid._area_ids = None if ids is None else ids[kept]
        polygons = polygons[kept]
        adjacency = area_contiguity(polygons, rook=grid._contiguity == "rook", gap=gap)
        links = np.empty((0, 2), dtype=np.int64)
        if islands == "nearest":
            adjacency, links = link_islands(polygons, adjacency)
        grid._linked_islands, grid._gap = links, gap
        grid._set_adjacency(adjacency)
        return grid

    @classmethod
    def _hexagons_over_points(
        cls,
        gdf: gpd.GeoDataFrame | gpd.GeoSeries,
        shape: Any,
        cell_size: Any,
        pad: float,
        region: shapely.Geometry | None,
        exclude: PolygonsLike,
        orientation: str,
        crs: pyproj.CRS | None,
    ) -> Grid:
        if shape is not None or cell_size is None:
            raise GridError(
                "a hexagonal lattice takes cell_size (the side of a hexagon), not shape"
            )
        if region is not None:  # hexagons beyond the region would be clipped away: no pad
            return cls.hexagonal(region, cell_size, orientation, crs, exclude)
        size = _check_cell_size(cell_size)[0]
        xy = point_coordinates(gdf, "gdf")
        _check_extent(xy, pad)
        lower, upper = xy.min(axis=0) - pad, xy.max(axis=0) + pad
        (x0, x1), (y0, y1) = (_snap_outward(lower[k], upper[k], size, None, _HEXAGON_FIX)
                              for k in (0, 1))
        grid = cls.hexagonal((x0, y0, x1, y1), cell_size, orientation, crs, exclude)
        grid._snap_unit = (size, size)
        return grid

    def _set_cells(
        self,
        polygons: np.ndarray,
        region: shapely.Geometry | None,
        exclude: shapely.Geometry | None,
    ) -> np.ndarray:
        """Clip candidate cell polygons; keep those with habitable area (ids in input order).

        Returns the positions of the kept polygons in ``polygons``.
        """
        self._is_clipped = region is not None or exclude is not None
        self._snap_unit = None
        self._cache = {}
        area = shapely.area(polygons)
        if self._is_clipped:
            bounds = shapely.bounds(polygons)
            inner = shapely.point_on_surface(polygons)
            candidates = _Candidates(
                boxes=polygons,
                cx=shapely.get_x(inner),
                cy=shapely.get_y(inner),
                window=tuple(float(v) for v in shapely.total_bounds(polygons)),
                step=float(np.max(bounds[:, 2:] - bounds[:, :2])),
            )
            habitable, fully, alive = _clip_boxes(candidates, region, exclude)
            fraction = np.where(fully, 1.0, 0.0)
            partial = alive & ~fully
            fraction[partial] = shapely.area(habitable[partial]) / area[partial]
        else:
            habitable, fully = polygons, np.ones(polygons.size, dtype=bool)
            fraction = np.ones(polygons.size)
        keep = fraction > _AREA_RTOL
        if self._is_clipped:  # an area given thin is kept, a clipping remnant that thin is not
            keep &= fraction * area > _sliver_area(shapely.length(polygons),
                                                   shapely.total_bounds(polygons))
        if not keep.any():
            raise _no_habitable_cell(bool(np.any(fraction > 0)))
        self._habitable_fraction = np.minimum(fraction[keep], 1.0)
        self._fully = fully[keep]
        self._habitable = habitable[keep]
        self._cache["boxes"] = polygons[keep]
        self._polygon_bounds = shapely.bounds(polygons[keep])
        self._bounds = tuple(float(v) for v in shapely.total_bounds(polygons[keep]))
        return np.flatnonzero(keep)

    # ------------------------------------------------------------------ construction helpers
    def _build_clipped(self, region: shapely.Geometry | None, exclude: shapely.Geometry | None):
        nrows, ncols = self._shape
        xe, ye = self._xedges, self._yedges
        rows, cols = self._candidate_rows_cols(region)
        pos = (rows[:, None] * ncols + cols[None, :]).ravel().astype(np.int64)
        r, c = np.divmod(pos, ncols)
        x0, y0, x1, y1 = xe[c], ye[r], xe[c + 1], ye[r + 1]
        box_area = (x1 - x0) * (y1 - y0)
        candidates = _Candidates(
            boxes=shapely.box(x0, y0, x1, y1),
            cx=(x0 + x1) / 2,
            cy=(y0 + y1) / 2,
            window=(xe[cols[0]], ye[rows[0]], xe[cols[-1] + 1], ye[rows[-1] + 1]),
            step=max(self._cell_size),
        )
        boxes = candidates.boxes
        habitable, fully, alive = _clip_boxes(candidates, region, exclude)
        area = box_area.copy()
        partial = alive & ~fully
        area[partial] = shapely.area(habitable[partial])
        area[~alive] = 0.0
        fraction = np.minimum(area / box_area, 1.0)
        sliver = _sliver_area(2 * ((x1 - x0) + (y1 - y0)), (xe[0], ye[0], xe[-1], ye[-1]))
        keep = (fraction > _AREA_RTOL) & (area > sliver)
        if not keep.any():
            raise _no_habitable_cell(bool(np.any(area > 0)))
        self._lattice_to_cell = np.full(nrows * ncols, -1, dtype=np.int64)
        self._lattice_to_cell[pos[keep]] = np.arange(int(keep.sum()), dtype=np.int64)
        self._cell_row, self._cell_col = r[keep], c[keep]
        self._habitable_fraction = fraction[keep]
        self._fully = fully[keep]
        self._habitable = habitable[keep]
        self._cache["boxes"] = boxes[keep]

    def _candidate_rows_cols(self, region: shapely.Geometry | None) -> tuple[np.ndarray, ...]:
        """Rows and columns whose closed boxes meet the bounding box of ``region``."""
        xe, ye = self._xedges, self._yedges
        if region is None:
            return np.arange(self._shape[0]), np.arange(self._shape[1])
        if not shapely.intersects(region, shapely.box(xe[0], ye[0], xe[-1], ye[-1])):
            raise GridError(
                f"region (bounds {tuple(round(float(v), 6) for v in shapely.bounds(region))}) "
                f"does not intersect the grid bounds {self.bounds}; check that region and grid "
                "share a CRS and that the bounds cover the region"
            )
        _warn_if_region_beyond(region, shapely.box(xe[0], ye[0], xe[-1], ye[-1]))
        rx0, ry0, rx1, ry1 = shapely.bounds(region)
        rows = np.flatnonzero((ye[1:] >= ry0) & (ye[:-1] <= ry1))
        cols = np.flatnonzero((xe[1:] >= rx0) & (xe[:-1] <= rx1))
        return rows, cols

    def _square_adjacency(self) -> sparse.csr_matrix:
        indptr, indices = _lattice_csr(
            self._cell_row, self._cell_col, self._lattice_to_cell, self._shape, self._contiguity
        )
        n = self._cell_row.size
        return sparse.csr_matrix((np.ones(indices.size), indices, indptr), shape=(n, n))

    def _set_adjacency(self, adjacency: sparse.csr_matrix) -> None:
        """Store a binary symmetric CSR adjacency, its components, and warn about islands.

        The last step of every constructor: it also warns of a CRS that distorts lengths where
        the lattice lies (:func:`_warn_of_distortion`).
        """
        _warn_of_distortion(self._crs, self.bounds)
        self._adjacency = adjacency
        self._indptr = adjacency.indptr.astype(np.int64)
        self._indices = adjacency.indices.astype(np.int64)
        self._n_neighbours = np.diff(self._indptr)
        # The adjacency is symmetric, so strong components are the undirected components, and
        # the strong algorithm skips the transpose that directed=False builds (7x faster).
        n_components, labels = connected_components(
            self._adjacency, directed=True, connection="strong"
        )
        self._n_components = int(n_components)
        self._component = _relabel_by_first(labels, n_components)
        isolated = np.flatnonzero(self._n_neighbours == 0)
        if isolated.size:
            named = ", ".join(str(i) for i in isolated[:_N_NAMED])
            more = f" and {isolated.size - _N_NAMED} more" if isolated.size > _N_NAMED else ""
            fix = "contiguity='queen', " if self._contiguity == "rook" else ""
            if self.kind == "areal" and self.n_cells == 1:
                fix = "more than one area (a single area has nothing to link to)"
            elif self.n_cells == 1:  # "a larger cell_size" was the wrong way
                fix = "a smaller cell_size (a single cell has nothing to link to)"
            elif self.kind == "areal":
                fix = f"{fix}islands='nearest' (links each to its nearest area, as BYM users do)"
            else:
                fix = f"{fix}a larger cell_size or a region that joins them"
            if self.n_cut_links and self.n_linked_islands:  # islands="nearest" is in use
                fix = "barriers that leave them a link (Grid.without_links_across, CLI: --barriers)"
            elif self.n_cut_links:
                fix = f"{fix}, or fewer barriers (Grid.without_links_across, CLI: --barriers)"
            warnings.warn(
                f"{isolated.size} cell(s) have no {self._contiguity} neighbour (cell ids "
                f"{named}{more}); each forms its own connected component, whose level has a "
                "vague prior and no neighbour to be pooled with, so the model fits it from its "
                "own records: its synthetic counts follow theirs closely, combination by "
                "combination. To connect them use "
                f"{fix}",
                IsolatedCellWarning,
                stacklevel=caller_stacklevel(),
            )

    # ------------------------------------------------------------------ attributes
    @property
    def kind(self) -> str:
        """``"square"``, ``"hexagonal"`` or ``"areal"`` (one cell per polygon)."""
        return getattr(self, "_kind", "square")  # grids pickled before issue 18 are square

    @property
    def bounds(self) -> Bounds:
        """``(xmin, ymin, xmax, ymax)`` of the lattice (whole cells, unclipped)."""
        if self.kind != "square":
            return self._bounds
        xe, ye = self._xedges, self._yedges
        return (float(xe[0]), float(ye[0]), float(xe[-1]), float(ye[-1]))

    @property
    def edges(self) -> tuple[np.ndarray, np.ndarray]:
        """Column and row edges ``(x_edges, y_edges)`` of a square lattice, increasing.

        Column ``c`` of the full lattice spans ``x_edges[c] .. x_edges[c + 1]`` and row ``r``
        ``y_edges[r] .. y_edges[r + 1]`` (rows from the south); position ``r * ncols + c``
        (:attr:`lattice_to_cell`).

        Raises
        ------
        geosynth.errors.GridError
            The lattice is hexagonal or areal.
        """
        self.require_square("edges")
        return _readonly(self._xedges), _readonly(self._yedges)

    @property
    def origin(self) -> tuple[float, float] | None:
        """Centre ``(x, y)`` of the first hexagon of a hexagonal lattice, else None.

        It is the south-west corner ``(xmin, ymin)`` of the bounds (or region) the lattice was
        built over, to every digit, and a release's grid layer gives it back (a corner of that
        hexagon has its x; the mean of its corners, its y).
        """
        layout = getattr(self, "_layout", None)
        if layout is None:
            return None
        u0, v0 = layout.origin
        return (v0, u0) if layout.flat else (u0, v0)

    @property
    def orientation(self) -> str | None:
        """``"pointy"`` or ``"flat"`` (top) of a hexagonal lattice, else None."""
        layout = getattr(self, "_layout", None)
        return None if layout is None else ("flat" if layout.flat else "pointy")

    @property
    def area_ids(self) -> np.ndarray | None:
        """Identifier of each area of an areal lattice (``id_column``), else None."""
        ids = getattr(self, "_area_ids", None)
        return None if ids is None else _readonly(ids)

    @property
    def public_ids(self) -> bool:
        """Whether :attr:`area_ids` may appear in a release (``from_polygons(public_ids=)``)."""
        return bool(getattr(self, "_public_ids", False))

    @property
    def linked_islands(self) -> np.ndarray:
        """``(island, nearest)`` cell pairs linked by ``from_polygons(islands="nearest")``."""
        links = getattr(self, "_linked_islands", None)
        return _readonly(links if links is not None else np.empty((0, 2), dtype=np.int64))

    @property
    def n_linked_islands(self) -> int:
        """Number of islands :attr:`linked_islands` linked (each counted once).

        Two islands nearer each other than the mainland are linked both ways and then to it:
        three pairs for two islands, which were reported as "3 island(s) linked".
        """
        return int(np.unique(self.linked_islands[:, 0]).size)

    @property
    def cut_links(self) -> np.ndarray:
        """``(i, j)`` cell pairs, ``i < j``, unlinked by :meth:`without_links_across`."""
        cut = getattr(self, "_cut_links", None)  # grids pickled before barriers have none
        return _readonly(cut if cut is not None else np.empty((0, 2), dtype=np.int64))

    @property
    def link_points(self) -> np.ndarray:
        """Point of each cell that its links start from (shapely Points, cached).

        A point of the cell's habitable part (:func:`shapely.point_on_surface`), outside the
        polygons of the barriers of :meth:`without_links_across` where the cell reaches beyond
        them: the segments between these points decide which links a barrier cuts, and which
        area an island cut off is linked to instead.
        """
        if "link_points" not in self._cache:
            self._cache["link_points"] = _points_beside(self.habitable_geometry,
                                                        self._barrier_parts)
        return _readonly(self._cache["link_points"])

    @property
    def cut_segments(self) -> np.ndarray:
        """Segment of each link in :attr:`cut_links`, between the points that decided the cut.

        Shapely LineStrings, in the order of :attr:`cut_links`: each crosses a barrier (review
        maps draw them).
        """
        segments = getattr(self, "_cut_segments", None)
        if segments is None or len(segments) != self.n_cut_links:  # pickled before they were kept
            points, cut = self.link_points, self.cut_links
            segments = shapely.shortest_line(points[cut[:, 0]], points[cut[:, 1]])
        return _readonly(segments)

    @property
    def n_cut_links(self) -> int:
        """Number of links :meth:`without_links_across` removed (0 for a lattice as built)."""
        return int(self.cut_links.shape[0])

    @property
    def gap(self) -> float:
        """Digitising gap of an areal lattice's contiguity (``from_polygons(gap=)``), else 0."""
        return float(getattr(self, "_gap", 0.0))

    def require_square(self, what: str) -> None:
        """Refuse a lattice that is not square, for ``what`` needs rows of square cells.

        Parameters
        ----------
        what : str
            What needs the square lattice, for the message (e.g. ``"a GeoTIFF intensity"``).

        Raises
        ------
        geosynth.errors.GridError
            The lattice is hexagonal or areal; the message says what to use instead.
        """
        if self.kind != "square":
            raise GridError(
                f"{what} needs a square lattice, but this grid is {self.kind}; use the intensity "
                "layer of the GeoPackage release (geosynth.io.write_release(..., "
                "include_intensity=True)) or the cells' GeoDataFrame (grid.cells) instead"
            )

    def _require_rows(self, name: str) -> None:
        if self.kind == "areal":
            raise GridError(
                f"grid.{name} is defined for square and hexagonal lattices only; an areal "
                "lattice has one cell per polygon (see grid.cells and grid.area_ids)"
            )

    @property
    def snap_unit(self) -> tuple[float, float] | None:
        """How precisely :attr:`bounds` reveal the extremes of confidential points, or None.

        None when the bounds are public: given to :meth:`regular` or taken from a ``region``.
        ``(ux, uy)`` when :meth:`from_points` derived them from the points: each bound is then
        a multiple of the unit strictly beyond the points, so it reveals the smallest and largest
        x (y) of the points to within ``ux`` (``uy``). Pass a public ``region`` (CLI:
        ``--region``) to avoid that.
        """
        return getattr(self, "_snap_unit", None)  # grids pickled before issue 14 lack it

    @property
    def shape(self) -> tuple[int, int]:
        """``(nrows, ncols)`` of the full lattice (of the offset layout, for hexagons)."""
        self._require_rows("shape")
        return self._shape

    @property
    def cell_size(self) -> tuple[float, float]:
        """``(dx, dy)``, the cell width and height; ``(side, side)`` for hexagons."""
        self._require_rows("cell_size")
        return self._cell_size

    @property
    def crs(self) -> pyproj.CRS | None:
        """Coordinate reference system, or None."""
        return self._crs

    @property
    def contiguity(self) -> str:
        """``"queen"`` or ``"rook"``."""
        return self._contiguity

    @property
    def n_cells(self) -> int:
        """Number of kept cells."""
        return int(self._habitable_fraction.size)

    @property
    def cell_row(self) -> np.ndarray:
        """Lattice row of each cell (0 = south; the offset row of a hexagon), int64."""
        self._require_rows("cell_row")
        return _readonly(self._cell_row)

    @property
    def cell_col(self) -> np.ndarray:
        """Lattice column of each cell (0 = west; the offset column of a hexagon), int64."""
        self._require_rows("cell_col")
        return _readonly(self._cell_col)

    @property
    def lattice_to_cell(self) -> np.ndarray:
        """Cell id of each lattice position ``row * ncols + col``; -1 where dropped."""
        self._require_rows("lattice_to_cell")
        return _readonly(self._lattice_to_cell)

    @property
    def habitable_fraction(self) -> np.ndarray:
        """Habitable area of each cell over its area, float64 ``(n_cells,)`` in (0, 1]."""
        return _readonly(self._habitable_fraction)

    @property
    def exposure(self) -> np.ndarray:
        """What each cell's expected count is proportional to: float64 ``(n_cells,)``, positive.

        The offset ``log a_i`` of :class:`geosynth.PaivaModel`. The :attr:`habitable_fraction`
        but for an areal lattice built with ``exposure`` (:meth:`from_polygons`) or a lattice
        given one (:meth:`with_exposure`), whose values are scaled to a geometric mean of 1;
        :attr:`exposure_source` says which.
        """
        if self._exposure is None:
            return self.habitable_fraction
        return _readonly(self._exposure)

    @property
    def exposure_given(self) -> bool:
        """Whether the exposure was given (:meth:`from_polygons`, :meth:`with_exposure`).

        False when it is the :attr:`habitable_fraction`, which the cells themselves give.
        """
        return self._exposure is not None

    @property
    def exposure_source(self) -> str:
        """Where :attr:`exposure` comes from.

        ``"habitable fraction"``, ``"habitable area"``, ``"column <name>"``, ``"given
        values"`` or the ``source`` of :meth:`with_exposure`.
        """
        return self._exposure_source

    @property
    def fully_habitable(self) -> np.ndarray:
        """True where the cell's habitable part is its whole :meth:`cell_bounds` box.

        That is a square cell inside the region, not touching an excluded area; never a hexagon
        or an area (their placement and location go through their polygon).
        """
        if self.kind != "square":
            return _readonly(np.zeros(self.n_cells, dtype=bool))
        return _readonly(self._fully)

    @property
    def habitable_geometry(self) -> np.ndarray:
        """Shapely geometry of the habitable part of each cell (the cell when not clipped)."""
        if not self._is_clipped:
            return self._boxes()
        return _readonly(self._habitable)

    @property
    def is_clipped(self) -> bool:
        """True if the grid was built with a ``region`` or ``exclude``."""
        return self._is_clipped

    @property
    def adjacency(self) -> sparse.csr_matrix:
        """Binary symmetric adjacency, ``scipy.sparse.csr_matrix`` ``(n_cells, n_cells)``."""
        return self._adjacency

    @property
    def indptr(self) -> np.ndarray:
        """CSR row pointer of :attr:`adjacency`, int64 ``(n_cells + 1,)``."""
        return _readonly(self._indptr)

    @property
    def indices(self) -> np.ndarray:
        """CSR column indices of :attr:`adjacency` (sorted within each row), int64."""
        return _readonly(self._indices)

    @property
    def n_neighbours(self) -> np.ndarray:
        """Number of neighbours of each cell, int64 ``(n_cells,)``."""
        return _readonly(self._n_neighbours)

    @property
    def component(self) -> np.ndarray:
        """Connected-component label of each cell, int64, numbered by smallest cell id."""
        return _readonly(self._component)

    @property
    def n_components(self) -> int:
        """Number of connected components of the adjacency graph."""
        return self._n_components

    @property
    def cells(self) -> gpd.GeoDataFrame:
        """One row per cell (cached; copy before modifying).

        Columns ``cell_id, row, col, n_neighbours, habitable_fraction, component, geometry``
        where ``geometry`` is the cell (box, hexagon or area), in the grid CRS. An areal
        lattice has ``area_id`` (when built with ``id_column``) instead of ``row, col``.
        """
        if "cells" not in self._cache:
            columns: dict[str, Any] = {"cell_id": np.arange(self.n_cells, dtype=np.int64)}
            if self.kind == "areal":
                if self.area_ids is not None:
                    columns["area_id"] = self.area_ids
            else:
                columns.update(row=self._cell_row, col=self._cell_col)
            columns.update(
                n_neighbours=self._n_neighbours,
                habitable_fraction=self._habitable_fraction,
                component=self._component,
            )
            self._cache["cells"] = gpd.GeoDataFrame(
                columns, geometry=np.asarray(self._boxes()), crs=self._crs
            )
        return self._cache["cells"]

    # ------------------------------------------------------------------ methods
    def check_cell_ids(self, cell_ids: Any, name: str = "cell_ids") -> np.ndarray:
        """Return ``cell_ids`` as int64 after checking they are 1-d integer ids of this grid.

        Parameters
        ----------
        cell_ids : array-like of int, shape (n,)
            Ids of habitable cells, ``0 .. n_cells - 1``.
        name : str, default "cell_ids"
            How the caller's argument is called, for the error messages.

        Returns
        -------
        numpy.ndarray of int64, shape (n,)
            The ids (not copied when already int64).

        Raises
        ------
        geosynth.errors.InputError
            Not a 1-d integer array, more than :data:`MAX_CELL_IDS` ids (refused before they
            are converted: ``range(10**9)`` raised MemoryError), or an id outside
            ``0 .. n_cells - 1`` (``name`` is the parameter named in the message).
        """
        try:
            size = f"{len(cell_ids):,}" if len(cell_ids) > MAX_CELL_IDS else ""
        except TypeError:  # a scalar or a 0-d array: refused below as not 1-d
            size = ""
        except OverflowError:  # len(range(10**20))
            size = "over 2**63"
        if size:
            raise InputError(
                f"{name} holds {size} ids, more than the limit of {MAX_CELL_IDS:,} of one "
                "call (each id becomes 8 bytes, and its point 16); pass them in batches (or "
                "raise geosynth.lattice.MAX_CELL_IDS)"
            )
        ids = np.asarray(cell_ids)
        if ids.size == 0 and ids.ndim == 1 and ids.dtype.kind in "fO":  # [] reads as float64
            ids = ids.astype(np.int64)
        if ids.ndim != 1 or not np.issubdtype(ids.dtype, np.integer):
            raise InputError(
                f"{name} must be a 1-d array of integer cell ids, got dtype {ids.dtype} and "
                f"shape {ids.shape}"
            )
        bad = np.flatnonzero((ids < 0) | (ids >= self.n_cells))
        if bad.size:
            raise InputError(
                f"{name} must lie in 0..{self.n_cells - 1}; got {ids[bad[:_N_NAMED]].tolist()} "
                f"at positions {bad[:_N_NAMED].tolist()}"
            )
        return ids.astype(np.int64, copy=False)

    def cell_bounds(self, cell_ids: int | Sequence[int] | np.ndarray) -> np.ndarray:
        """Boxes of the given cells.

        Parameters
        ----------
        cell_ids : int or array-like of int
            Cell ids in ``0 .. n_cells - 1``.

        Returns
        -------
        numpy.ndarray, shape (k, 4)
            ``(x0, y0, x1, y1)`` of each cell's (unclipped) box, the bounding box of a hexagon
            or an area; ``k = 1`` for a scalar id.

        Raises
        ------
        geosynth.errors.InputError
            An id is not an integer in ``0 .. n_cells - 1``.
        """
        ids = self.check_cell_ids(np.atleast_1d(np.asarray(cell_ids)))
        if self.kind != "square":
            return self._polygon_bounds[ids]
        r, c = self._cell_row[ids], self._cell_col[ids]
        xe, ye = self._xedges, self._yedges
        return np.column_stack([xe[c], ye[r], xe[c + 1], ye[r + 1]])

    def locate(self, points: Any) -> np.ndarray:
        """Cell id of each point.

        Parameters
        ----------
        points : GeoSeries, GeoDataFrame, array of shapely Points or array-like (n, 2)
            Points in the grid CRS (a GeoSeries/GeoDataFrame with a different CRS is refused).

        Returns
        -------
        numpy.ndarray of int64, shape (n,)
            Cell id, or -1 for points outside the lattice, in a dropped cell, outside the
            region or strictly inside an excluded area, and for missing, empty, non-point or
            NaN-coordinate points (a point of an areal lattice built with ``gap`` that lies in
            no area but within ``gap`` of one goes to the nearest of them, the smallest id on a
            tie). Square cells are half-open ``[x0, x1) x [y0, y1)`` except on
            the outer max edges, which belong to the last column/row; a point on a boundary
            shared by hexagons or areas goes to the one with the smallest cell id (hexagons
            and areas are closed).
            Within partially habitable cells boundaries count as habitable (see the class
            notes).

        Raises
        ------
        geosynth.errors.CRSError
            ``points`` has a CRS different from the grid CRS.
        geosynth.errors.InputError
            ``points`` is neither geometries nor an ``(n, 2)`` coordinate array.

        Notes
        -----
        Several threads may locate points in one grid at once: its geometric tests take turns
        (shapely prepares a geometry on its first test, and GEOS's prepared geometries are not
        thread-safe), the arithmetic runs in parallel.
        """
        x, y = _coordinates(points, self._crs)
        if self.kind == "areal":
            with _GEOMETRY_LOCK:
                if "index" not in self._cache:
                    self._cache["index"] = PolygonIndex(self._habitable)
                cell = self._cache["index"].locate(x, y)
                if self.gap > 0:
                    self._locate_in_gaps(cell, x, y)
                return cell
        if self.kind == "hexagonal":
            cell = self._locate_hexagon(x, y)
            if self._is_clipped:
                self._refine(cell, x, y)
            return cell
        outside = ~((x >= self._xedges[0]) & (x <= self._xedges[-1]))
        outside |= ~((y >= self._yedges[0]) & (y <= self._yedges[-1]))
        row = _axis_index(y, self._yedges)
        col = _axis_index(x, self._xedges)
        cell = np.take(self._lattice_to_cell, row * self._shape[1] + col, mode="clip")
        cell[outside] = -1
        if self._is_clipped:
            self._refine(cell, x, y)
            self._claim_shared_edges(cell, outside, x, y, row, col)
        return cell

    def _locate_in_gaps(self, cell: np.ndarray, x: np.ndarray, y: np.ndarray) -> None:
        """Give a point in no area but within :attr:`gap` of one to the nearest (smallest id).

        ``from_polygons(gap=)`` links areas across slivers of digitising gap, and records
        geocoded onto the boundary streets fall in them: they were in no cell ("build a grid
        that covers them"), or dropped without a word. The distance is to the areas' habitable
        parts; a point inside an area (its excluded part) or strictly inside an excluded area
        stays in none.
        """
        lost = np.flatnonzero((cell < 0) & np.isfinite(x) & np.isfinite(y))
        excluded = getattr(self, "_exclude", None)  # None: pickled before, or none given
        if excluded is not None:
            lost = lost[~shapely.contains_xy(excluded, x[lost], y[lost])]
        if lost.size == 0:
            return
        if "area_trees" not in self._cache:
            self._cache["area_trees"] = (shapely.STRtree(self._boxes()),
                                         shapely.STRtree(self._habitable))
        areas, habitable = self._cache["area_trees"]
        points = shapely.points(x[lost], y[lost])
        inside = areas.query(points, predicate="intersects")[0]
        near, area = habitable.query_nearest(points, max_distance=self.gap, all_matches=True)
        free = ~np.isin(near, inside)
        near, area = near[free], area[free]
        order = np.lexsort((area, near))  # each point's nearest areas, smallest id first
        near, area = near[order], area[order]
        points_hit, first = np.unique(near, return_index=True)
        cell[lost[points_hit]] = area[first]

    def _claim_shared_edges(self, cell: np.ndarray, outside: np.ndarray, x: np.ndarray,
                            y: np.ndarray, row: np.ndarray, col: np.ndarray) -> None:
        """Give a lost point on its cell's west or south edge to a cell sharing that edge.

        Square cells are half-open: a point on the line between two cells goes to the east (or
        north) one. When that cell is not kept (the region ends on the line) or its habitable
        part stops short of the line (a no-go area starts on it), the point was put in no cell,
        although it lies on the closed edge of the cell to its west (south). As for hexagons,
        the smallest kept cell id whose habitable part holds the point wins.
        """
        lost = np.flatnonzero((cell < 0) & ~outside)
        if lost.size == 0:
            return
        r, c, px, py = row[lost], col[lost], x[lost], y[lost]
        west = (c > 0) & (px == self._xedges[c])
        south = (r > 0) & (py == self._yedges[r])
        ncols = self._shape[1]
        candidates = np.full((lost.size, 3), -1, dtype=np.int64)
        for k, (shared, rr, cc) in enumerate(((west, r, c - 1), (south, r - 1, c),
                                              (west & south, r - 1, c - 1))):
            position = np.where(shared, rr * ncols + cc, 0)
            candidates[:, k] = np.where(shared, self._lattice_to_cell[position], -1)
        cell[lost] = _smallest_holding(candidates, self._habitable, px, py)

    def _locate_hexagon(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        layout: HexLayout = self._layout
        # Within the hexagons' bounds (NaN compares False): far points overflowed the int64
        # rounding of their row and column ("invalid value encountered in cast").
        x0, y0, x1, y1 = self._bounds
        finite = (x >= x0) & (x <= x1) & (y >= y0) & (y <= y1)
        row, col, near_edge = hex_locate(layout, np.where(finite, x, 0.0),
                                         np.where(finite, y, 0.0))
        inside = finite & (row >= 0) & (row < layout.nrows) & (col >= 0) & (col < layout.ncols)
        position = np.where(inside, row * layout.ncols + col, 0)
        cell = np.take(self._lattice_to_cell, position)
        cell[~inside] = -1
        # On an edge, rounding may pick either side, or a hexagon that is not kept while the
        # point touches a kept one: test the kept hexagons around it (smallest id first).
        near = np.flatnonzero(finite & near_edge)
        if near.size:
            cell[near] = self._touching_hexagon(row[near], col[near], x[near], y[near])
        return cell

    def _touching_hexagon(self, row: np.ndarray, col: np.ndarray, x: np.ndarray,
                          y: np.ndarray) -> np.ndarray:
        """Smallest kept cell among a hexagon and its neighbours intersecting each point.

        On a clipped lattice the test is against each cell's habitable part: a point on the
        edge of two hexagons, outside the habitable part of the first, belongs to the second
        (it was lost, -1, when the first was picked by its whole hexagon).
        """
        around = hex_around(self._layout, row, col)
        ids = np.where(around >= 0, self._lattice_to_cell[np.maximum(around, 0)], -1)
        shapes = self._habitable if self._is_clipped else self._boxes()
        return _smallest_holding(ids, shapes, x, y)

    def _refine(self, cell: np.ndarray, x: np.ndarray, y: np.ndarray) -> None:
        """Set ``cell`` to -1 for points of partially habitable cells outside the geometry."""
        sel = np.flatnonzero(cell >= 0)
        sel = sel[~self._fully[cell[sel]]]
        if sel.size == 0:
            return
        with _GEOMETRY_LOCK:
            if "prepared" not in self._cache:
                shapely.prepare(self._habitable[~self._fully])
                self._cache["prepared"] = True
            hit = shapely.intersects_xy(self._habitable[cell[sel]], x[sel], y[sel])
        cell[sel[~hit]] = -1

    def to_libpysal(self) -> libpysal.weights.W:
        """Return the adjacency as a :class:`libpysal.weights.W` with ids ``0 .. n_cells - 1``.

        Returns
        -------
        libpysal.weights.W
            Binary weights; isolated cells are kept as islands.
        """
        from libpysal.weights import W

        indices, bounds = self._indices.tolist(), self._indptr.tolist()
        neighbours = {i: indices[bounds[i] : bounds[i + 1]] for i in range(self.n_cells)}
        weights = {i: [1.0] * len(nb) for i, nb in neighbours.items()}
        return W(neighbours, weights, id_order=list(range(self.n_cells)), silence_warnings=True)

    def without_links_across(self, barriers: PolygonsLike) -> Grid:
        """Return this lattice without the links that cross ``barriers`` (rivers, motorways, ...).

        The ICAR prior pools each cell with its neighbours; across a river, a railway or a
        motorway the intensity of one bank says little of the other's, and lattice contiguity
        (which links cells "whatever the region looks like between them") still pools them.
        The usual remedy in disease mapping is to edit the neighbour list (as with spdep's
        ``edit.nb``): this does it by rule. A link between two neighbouring cells is cut when
        the straight segment between their representative points crosses a barrier line or
        polygon (:func:`shapely.crosses`: a segment that only touches a barrier at an end, or
        runs along a line, is not cut). The representative point of a cell is a point inside
        its habitable part outside the barrier polygons (:func:`shapely.point_on_surface`),
        inside the polygons only for a cell they cover wholly.

        An island that ``islands="nearest"`` linked to its nearest area (:meth:`from_polygons`)
        and whose link is cut is linked instead to the nearest area it reaches without crossing
        a barrier (:attr:`linked_islands`), a group of islands by its nearest such pair; with
        none, it is on its own, with a warning. A later call tests the links against its
        barriers and those of the earlier calls, so no link an earlier barrier cut comes back.

        The links of a cell follow from its one point, and the cell is not split: a barrier
        polygon through a cell links it to the bank its point lies on, and a barrier line
        through a cell's point (a road along the cells' centres) cuts none of its links. Use
        cells smaller than the stretches of bank to separate, or pass the barrier's polygons
        also as ``exclude`` so that they leave the cells.

        Parameters
        ----------
        barriers : GeoDataFrame, GeoSeries, shapely geometry or sequence of geometries
            Lines (LineString, MultiLineString) or polygons (Polygon, MultiPolygon), public
            data; a GeoDataFrame or GeoSeries in another CRS is reprojected to the grid's.

        Returns
        -------
        Grid
            A copy with the same cells, fewer links (:attr:`cut_links`), and the connected
            components of the new adjacency. A cell left without a neighbour warns as any
            island does (:class:`~geosynth.errors.IsolatedCellWarning`).

        Raises
        ------
        geosynth.errors.GridError
            ``barriers`` is not lines or polygons, or holds invalid or no non-empty ones.
        geosynth.errors.CRSError
            ``barriers`` cannot be reprojected to the grid CRS.

        Warns
        -----
        geosynth.errors.DataWarning
            The barriers cut no link (far from the lattice, usually coordinates in another CRS,
            or only inside cells).

        Examples
        --------
        A river along ``x = 2`` separates the two westernmost columns of a 4 x 4 lattice from
        the rest: 4 rook links cross it.

        >>> import shapely
        >>> grid = Grid.regular((0, 0, 4, 4), shape=(4, 4), contiguity="rook")
        >>> split = grid.without_links_across(shapely.LineString([(2, -1), (2, 5)]))
        >>> split.n_cut_links, split.n_components
        (4, 2)
        """
        parts = shapely.get_parts(check_polygons(barriers, "barriers", self._crs, lines=True))
        every = np.concatenate([self._barrier_parts, parts])  # and those of earlier calls
        points = _points_beside(self.habitable_geometry, every)
        cut, segments = _links_crossing(self._adjacency, points, every)
        if cut.shape[0] == 0:
            warnings.warn(
                "barriers cut no link of the lattice: they run only inside cells, or lie away "
                "from the cells (in another CRS?); check that they cross the study region",
                DataWarning,
                stacklevel=2,
            )
        grid = self._copy()
        grid._cut_links = np.concatenate([self.cut_links, cut])
        grid._cut_segments = np.concatenate([self.cut_segments, segments])
        grid._barrier_parts = every
        grid._cache["link_points"] = points
        adjacency = (self._adjacency - _symmetric_links(cut, self.n_cells)).tocsr()
        adjacency.eliminate_zeros()
        linked = self.linked_islands
        if self.n_linked_islands:  # an island's link to its nearest area may be cut too
            gone = {tuple(pair) for pair in cut.tolist()}
            kept = linked[[(min(pair), max(pair)) not in gone for pair in linked.tolist()]]
            relinked = _reconnect_islands(adjacency, self.habitable_geometry, points, every,
                                          np.unique(linked[:, 0]))
            adjacency = (adjacency + _symmetric_links(relinked, self.n_cells)).tocsr()
            linked = np.concatenate([kept, relinked])
        adjacency.sort_indices()
        grid._set_adjacency(adjacency)  # its warning reads the links of islands="nearest"
        grid._linked_islands = linked
        return grid

    def with_exposure(self, exposure: Any, source: str = "given values") -> Grid:
        """Return this lattice with ``exposure`` as what each cell's expected count follows.

        The offset ``log a_i`` of :class:`geosynth.PaivaModel` (:attr:`exposure`), in place of
        the habitable fraction: with the population of each cell, the fields smooth the rate
        per resident, as the expected counts of disease mapping do, instead of the density per
        unit of habitable area. :func:`geosynth.rasters.cell_exposure` sums a population raster
        over each cell; areas take theirs in :meth:`from_polygons` (``exposure=``).

        Parameters
        ----------
        exposure : array-like of float, shape (n_cells,)
            One positive finite number per cell, in the order of the cell ids, at most 10¹⁵
            times apart; scaled to a geometric mean of 1 (the scale goes into μ). **Public
            data**: every release follows it, an ε-DP release too; never a quantity of the
            confidential records.
        source : str, default "given values"
            What it is, as the release metadata records it (``lattice.exposure``), e.g.
            ``"population raster"``.

        Returns
        -------
        Grid
            A copy with the same cells and links.

        Raises
        ------
        geosynth.errors.GridError
            ``exposure`` is not one positive finite number per cell (naming the cells), spans
            more than 10¹⁵, or ``source`` is not a non-empty str without control characters, or
            is a name :meth:`from_polygons` gives (``"habitable area"``, ``"column ..."``) or
            the default's (``"habitable fraction"``).

        Examples
        --------
        >>> grid = Grid.regular((0, 0, 2, 1), shape=(1, 2))
        >>> grid.with_exposure([10.0, 40.0], source="residents").exposure.round(12).tolist()
        [0.5, 2.0]
        """
        _check_exposure_source(source)
        cells = np.arange(self.n_cells)
        given = _given_exposure(exposure, pd.RangeIndex(self.n_cells), "cells",
                                "cell, in the order of the cell ids", "")
        grid = self._copy()
        grid._exposure = _scaled_exposure(
            _positive_exposure(given, cells, "exposure", "cells", _CELL_ADVICE), cells, "cell")
        grid._exposure_source = source
        return grid

    def _copy(self) -> Grid:
        """Return a shallow copy to derive a lattice from, without the cached cells table."""
        grid = copy.copy(self)
        grid._cache = {key: value for key, value in self._cache.items() if key != "cells"}
        return grid

    def _boxes(self) -> np.ndarray:
        if "boxes" not in self._cache:
            r, c = self._cell_row, self._cell_col
            xe, ye = self._xedges, self._yedges
            self._cache["boxes"] = shapely.box(xe[c], ye[r], xe[c + 1], ye[r + 1])
        return _readonly(self._cache["boxes"])

    def __eq__(self, other: object) -> bool:
        """Whether ``other`` is the same lattice: interchangeable wherever this grid is used.

        Two grids are equal when they have the same kind, CRS, contiguity, cells (lattice edges
        and positions, or polygons), habitable geometry and fraction, adjacency (with the
        ``gap`` and :attr:`linked_islands` of an areal lattice, and the links cut across
        barriers), :attr:`area_ids`, :attr:`public_ids` and :attr:`snap_unit`, compared
        exactly, so grids built alike compare equal.
        """
        if not isinstance(other, Grid):
            return NotImplemented
        if self is other:
            return True
        return (
            self.same_cells(other)
            and np.array_equal(self.exposure, other.exposure)
            and _same_adjacency(self.adjacency, other.adjacency)
        )

    def same_cells(self, other: Grid) -> bool:
        """Whether ``other`` has the same cells and habitable parts, whatever its exposure.

        What placing points in cells depends on (:class:`geosynth.synth.PixelTable`): equal
        grids have the same cells, and so do a grid and its :meth:`with_exposure`.
        """
        return (isinstance(other, Grid) and _grid_key(self) == _grid_key(other)
                and _same_crs_or_none(self._crs, other._crs) and _same_cells(self, other))

    def __hash__(self) -> int:
        """Hash of the scalar description of the lattice, consistent with :meth:`__eq__`.

        A grid is immutable once built (its arrays are read-only), so equal grids may serve as
        the same dictionary key.
        """
        return hash(_grid_key(self))

    def __repr__(self) -> str:
        crs = None if self._crs is None else self._crs.to_string()
        if self.kind != "square":
            size = f", cell_size={self._cell_size[0]:g}" if self.kind == "hexagonal" else ""
            return (
                f"Grid(kind={self.kind!r}{size}, n_cells={self.n_cells}, "
                f"contiguity={self._contiguity!r}, is_clipped={self._is_clipped}, "
                f"n_components={self._n_components}, crs={crs!r})"
            )
        return (
            f"Grid(shape={self._shape}, n_cells={self.n_cells}, contiguity={self._contiguity!r}, "
            f"is_clipped={self._is_clipped}, n_components={self._n_components}, crs={crs!r})"
        )


# ---------------------------------------------------------------------- equality
def _grid_key(grid: Grid) -> tuple:
    """Hashable scalar description of ``grid`` (equal grids have equal keys)."""
    rows = grid.kind != "areal"
    return (
        grid.kind,
        grid.contiguity,
        grid.n_cells,
        grid.bounds,
        grid.is_clipped,
        grid.public_ids,
        grid.gap,
        grid.snap_unit,
        grid.n_cut_links,
        grid.shape if rows else None,
        grid.cell_size if rows else None,
        getattr(grid, "_layout", None),
    )


def _points_beside(habitable: np.ndarray, barriers: np.ndarray) -> np.ndarray:
    """Return a point of each cell's habitable part outside the barrier polygons, if any.

    With the centre of a cell in a river polygon (not excluded), every segment from it began
    in the barrier and crossed it: the cell lost all its links and became an island.
    """
    points = shapely.point_on_surface(habitable)
    areas = barriers[np.isin(shapely.get_type_id(barriers), _POLYGON_TYPES)]
    if areas.size == 0:
        return points
    touched = np.unique(shapely.STRtree(areas).query(habitable, predicate="intersects")[0])
    beside = shapely.difference(habitable[touched], shapely.union_all(areas))
    kept = ~shapely.is_empty(beside)
    points[touched[kept]] = shapely.point_on_surface(beside[kept])
    return points


def _links_crossing(adjacency: sparse.csr_matrix, points: np.ndarray,
                    barriers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(i, j)`` pairs, ``i < j``, of linked cells whose points' segment crosses a barrier.

    And those segments.

    ``points`` holds one point per cell, ``barriers`` single-part lines and polygons (an
    STRtree of them answers all the segments at once). A segment that only touches a barrier
    (at one of its ends: a line through a cell's point) or runs along a line does not cross
    it (:func:`shapely.crosses`); one that "intersects" it cut every link of a cell whose
    point a road passed through.
    """
    upper = sparse.triu(adjacency, k=1).tocoo()
    i, j = upper.row.astype(np.int64), upper.col.astype(np.int64)
    xy = shapely.get_coordinates(points)
    segments = shapely.linestrings(np.stack([xy[i], xy[j]], axis=1))
    crossed = _BarrierTest(barriers).crossed(segments)
    order = np.lexsort((j[crossed], i[crossed]))
    return np.column_stack([i[crossed][order], j[crossed][order]]), segments[crossed][order]


class _BarrierTest:
    """Which segments cross the barriers: their single-part lines and polygons.

    :func:`shapely.crosses` part by part, and the junctions of lines: a river given in pieces
    (OSM ways, a MultiLineString) ends each piece where the next begins, so a segment through
    that point only touched each piece, and the links through the joints of a river snapped
    to the lattice's corners stayed across it. A segment whose interior passes through a point
    where two or more line pieces end crosses there when the pieces run off to both sides of
    it (the sign of the cross product of the segment and each piece's first step away).
    """

    def __init__(self, barriers: np.ndarray) -> None:
        self._tree = shapely.STRtree(barriers)
        lines = barriers[(shapely.get_type_id(barriers) == 1) & ~shapely.is_closed(barriers)]
        # A repeated vertex made a piece's first step (0, 0), of no side (rivers snapped to a
        # grid have them; a piece of zero length keeps its two points and counts nowhere).
        lines = shapely.remove_repeated_points(lines)
        xy, line = shapely.get_coordinates(lines, return_index=True)
        first = np.flatnonzero(np.diff(line, prepend=-1))  # each piece's first vertex
        last = np.append(first[1:], line.size).astype(np.int64)[:first.size] - 1
        # The end points and the direction each piece leaves them in (two vertices at least).
        ends = np.concatenate([xy[first], xy[last]]).reshape(-1, 2)
        steps = np.concatenate([xy[first + 1] - xy[first], xy[last - 1] - xy[last]])
        nodes, which, shared = np.unique(ends, axis=0, return_inverse=True, return_counts=True)
        joints = np.flatnonzero(shared >= 2)  # where one piece ends alone, nothing is crossed
        self._joints = shapely.points(nodes[joints])
        self._joint_tree = shapely.STRtree(self._joints)
        # The steps grouped by node: node k's are _steps[_start[k]:_start[k] + shared[k]].
        self._steps = steps[np.argsort(which.reshape(-1), kind="stable")]
        self._start = (np.cumsum(shared) - shared)[joints]
        self._count = shared[joints]

    def crossed(self, segments: np.ndarray) -> np.ndarray:
        """Return a bool per segment: True where it crosses a barrier."""
        crossed = np.zeros(len(segments), dtype=bool)
        crossed[self._tree.query(segments, predicate="crosses")[0]] = True
        if self._joints.size == 0:
            return crossed
        # "contains": the joint lies in the segment's interior, not at a cell's point.
        seg, joint = self._joint_tree.query(segments, predicate="contains")
        for a, k in zip(seg.tolist(), joint.tolist(), strict=True):
            if crossed[a]:
                continue
            xy = shapely.get_coordinates(segments[a])
            dx, dy = xy[1] - xy[0]
            arms = self._steps[self._start[k]:self._start[k] + self._count[k]]
            side = np.sign(dx * arms[:, 1] - dy * arms[:, 0])
            crossed[a] = bool((side > 0).any() and (side < 0).any())
        return crossed


def _symmetric_links(pairs: np.ndarray, n: int) -> sparse.csr_matrix:
    """Adjacency of ``n`` cells holding the ``(a, b)`` links of ``pairs`` in both directions."""
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    return sparse.csr_matrix(
        (np.ones(2 * len(pairs)), (np.r_[pairs[:, 0], pairs[:, 1]], np.r_[pairs[:, 1],
                                                                          pairs[:, 0]])),
        shape=(n, n))


def _reconnect_islands(adjacency: sparse.csr_matrix, habitable: np.ndarray, points: np.ndarray,
                       barriers: np.ndarray, islands: np.ndarray) -> np.ndarray:
    """Return ``(island, area)`` links that join groups of islands cut off by barriers.

    ``islands`` are the cells that ``islands="nearest"`` linked (:meth:`Grid.from_polygons`).
    A connected component of ``adjacency`` made of islands alone (one whose link to the
    mainland a barrier cut) is linked, by its pair of smallest distance (then area id, then
    island id) whose segment between the cells' ``points`` crosses no barrier, to a cell
    outside it; a component it reaches that is made of islands alone joins it, and it goes on
    (Prim 1957, as :func:`geosynth._areas.link_islands` does without barriers). Its nearest
    area by boundary distance can lie across the river for the points that decide links (an
    area's point on the far bank): such an island was left on its own. A component that
    reaches no cell across no barrier stays on its own, with the warning of any island.
    """
    n = adjacency.shape[0]
    island = np.zeros(n, dtype=bool)
    island[islands] = True
    if island.all():
        return np.empty((0, 2), dtype=np.int64)
    tree, xy = _BarrierTest(barriers), shapely.get_coordinates(points)
    links, stranded = [], np.zeros(n, dtype=bool)
    while True:
        joined = adjacency + _symmetric_links(links, n)
        _, labels = connected_components(joined, directed=False)
        mainland = np.zeros(labels.max() + 1, dtype=bool)
        mainland[labels[~island]] = True
        lonely = np.flatnonzero(~mainland[labels] & ~stranded)
        if lonely.size == 0:
            return np.array(links, dtype=np.int64).reshape(-1, 2)
        members = np.flatnonzero(labels == labels[lonely[0]])
        pair = _nearest_reachable(members, np.flatnonzero(labels != labels[lonely[0]]),
                                  habitable, xy, tree)
        if pair is None:
            stranded[members] = True
        else:
            links.append(pair)


def _nearest_reachable(members: np.ndarray, others: np.ndarray, habitable: np.ndarray,
                       xy: np.ndarray, tree: _BarrierTest) -> tuple[int, int] | None:
    """Return the closest ``(member, other)`` pair whose points' segment crosses no barrier.

    Pairs by the distance of their habitable parts, then the other's id, then the member's;
    their segments are tested a batch at a time (an island that reaches nothing tested every
    cell one query at a time).
    """
    member = np.repeat(members, others.size)
    other = np.tile(others, members.size)
    distance = shapely.distance(habitable[member], habitable[other])
    order = np.lexsort((member, other, distance))
    for start in range(0, order.size, _RELINK_BATCH):
        batch = order[start:start + _RELINK_BATCH]
        segments = shapely.linestrings(np.stack([xy[member[batch]], xy[other[batch]]], axis=1))
        crossing = tree.crossed(segments)
        if not crossing.all():
            first = batch[int(np.argmin(crossing))]
            return int(member[first]), int(other[first])
    return None


def _same_crs_or_none(a: pyproj.CRS | None, b: pyproj.CRS | None) -> bool:
    return (a is None and b is None) or (a is not None and b is not None and _same_crs(a, b))


def _same_cells(a: Grid, b: Grid) -> bool:
    """Tell whether the cells, their fractions and habitable parts (and ids) are the same."""
    if not np.array_equal(a.habitable_fraction, b.habitable_fraction):
        return False
    if a.kind == "areal":
        ids_a, ids_b = a.area_ids, b.area_ids
        if (ids_a is None) != (ids_b is None) or not np.array_equal(a.linked_islands,
                                                                    b.linked_islands):
            return False
        if ids_a is not None and ids_a.tolist() != ids_b.tolist():  # type: ignore[union-attr]
            return False
    else:
        if not np.array_equal(a.lattice_to_cell, b.lattice_to_cell):
            return False
        if a.kind == "square" and not (np.array_equal(a._xedges, b._xedges)
                                       and np.array_equal(a._yedges, b._yedges)):
            return False
    geometries = []
    if a.kind != "square":
        geometries.append((a._boxes(), b._boxes()))
    if a.is_clipped:
        geometries.append((a.habitable_geometry, b.habitable_geometry))
    return all(
        bool(np.all(shapely.equals_exact(np.asarray(ga), np.asarray(gb), tolerance=0.0)))
        for ga, gb in geometries
    )


def _same_adjacency(a: sparse.csr_matrix, b: sparse.csr_matrix) -> bool:
    return a.shape == b.shape and (a != b).nnz == 0


# ---------------------------------------------------------------------- validation
def _check_contiguity(contiguity: object) -> str:
    return _check_word(contiguity, "contiguity", ("queen", "rook"))


def _check_word(value: object, name: str, choices: Sequence[str], hint: str = "") -> str:
    """:func:`~geosynth._validation.check_choice`, raising the lattice's GridError.

    The constructors of :class:`Grid` document one error for every invalid argument.
    """
    try:
        return check_choice(value, name, choices)
    except InputError as err:
        raise GridError(f"{err}{hint}") from None


def _check_gap(gap: Any, polygons: np.ndarray) -> float:
    """Return ``gap`` as a float: finite, >= 0 and at most a tenth of a typical area's side.

    The bound keeps the gap a tolerance for digitising, not a distance band (a gap as wide as
    the region would make every pair of areas neighbours, n² of them).
    """
    number = check_real(gap, "gap")
    if not (math.isfinite(number) and number >= 0):
        raise GridError(f"gap must be a finite distance >= 0 (CRS units), got {number!r}; "
                        "e.g. gap=1.0 joins areas at most 1 m apart in a metric CRS")
    typical = math.sqrt(float(np.median(shapely.area(polygons))))
    if number > typical / 10:
        raise GridError(
            f"gap={number:g} is more than a tenth of a typical area's side ({typical:.3g} CRS "
            "units, the square root of the median area): it closes digitising gaps between "
            "neighbours, far narrower than the areas; give a smaller gap"
        )
    return number


def _as_crs(crs: Any, name: str = "crs") -> pyproj.CRS | None:
    """Parse ``crs`` and refuse geographic ones (``name`` is what the message calls it)."""
    parsed = parse_crs(crs)
    require_projected_crs(parsed, name)
    return parsed


def parse_crs(crs: Any, name: str = "crs") -> pyproj.CRS | None:
    """Parse a ``crs`` parameter, refusing what pyproj cannot read with a geosynth error.

    The one parse of a CRS given as a parameter (the lattices, :func:`require_projected_crs`,
    :func:`geosynth.datasets.paiva_scenario`).

    Parameters
    ----------
    crs : pyproj.CRS, str, int or anything pyproj.CRS.from_user_input accepts, or None
    name : str, default "crs"
        Name of the parameter, used in the messages.

    Returns
    -------
    pyproj.CRS or None

    Raises
    ------
    geosynth.errors.InputTypeError
        ``crs`` is a bool, an array, a Series or a list (pyproj raised NumPy's "truth value
        of an array is ambiguous" on an array, and read ``True`` as EPSG:1).
    geosynth.errors.CRSError
        ``crs`` is not a CRS pyproj can read; the message names it and gives an example.
    """
    if crs is None:
        return None
    if isinstance(crs, bool | np.bool_ | list) or hasattr(crs, "__array__"):
        raise InputTypeError(
            f"{name} must be a pyproj.CRS, an EPSG code (int) or a CRS string, got "
            f"{describe_value(crs)}; pass e.g. {name}='EPSG:31983'"
        )
    try:
        return pyproj.CRS.from_user_input(crs)
    except pyproj.exceptions.CRSError as err:
        shown = repr(crs) if isinstance(crs, str) and len(crs) <= 60 else describe_value(crs)
        raise CRSError(
            f"{name} {shown} is not a valid CRS ({err}); pass e.g. 'EPSG:31983' or a pyproj.CRS"
        ) from err


def require_projected_crs(crs: Any, name: str = "crs", alternative: str = "") -> None:
    """Refuse a geographic CRS (degrees): lattice cells, areas and distances need metres.

    The one check behind :class:`Grid` (its ``crs``, or the CRS of the points of
    :meth:`Grid.from_points`) and :func:`geosynth.prepare`.

    Parameters
    ----------
    crs : pyproj.CRS or anything pyproj.CRS.from_user_input accepts, or None
        The CRS to check; None (no CRS) passes.
    name : str, default "crs"
        What the message calls the CRS owner: ``"crs"`` (a parameter) or a frame such as
        ``"gdf"``.
    alternative : str, optional
        Extra fix appended to the message (e.g. ``", or use gdf.to_crs(grid.crs)"``).

    Raises
    ------
    geosynth.errors.InputTypeError
        ``crs`` is an array, a list or a bool (:func:`parse_crs`).
    geosynth.errors.CRSError
        ``crs`` is not a CRS pyproj can read (:func:`parse_crs`), or is geographic; the
        message names ``name`` and how to fix it.
    """
    if crs is None:
        return
    parsed = crs if isinstance(crs, pyproj.CRS) else parse_crs(crs, name)
    if not parsed.is_geographic:
        _refuse_third_axis(parsed, name)
        return
    subject = f"crs {parsed.to_string()} is" if name == "crs" else (
        f"{name} uses the CRS {parsed.to_string()}, which is"
    )
    frame = "gdf" if name == "crs" else name
    raise CRSError(
        f"{subject} geographic (degrees); cells, areas and distances need a projected CRS in "
        f"metres: reproject the points with {frame}.to_crs({frame}.estimate_utm_crs()) and "
        f"build the grid in that CRS{alternative}"
    )


def _refuse_third_axis(crs: pyproj.CRS, name: str) -> None:
    """Refuse a projected CRS with a vertical axis (compound) and a geocentric one.

    A compound CRS (EPSG:31983+5720) passed every step, and the release file then recorded it
    in words GDAL does not read back the same: the reader refused the file just written as an
    edited one. The lattice lives on the horizontal plane.
    """
    if len(crs.axis_info) <= 2 and not crs.is_compound:
        return
    frame = "gdf" if name == "crs" else name
    owner = f"crs {crs.to_string()}" if name == "crs" else f"{name}'s CRS {crs.to_string()}"
    if crs.is_geocentric:
        raise CRSError(f"{owner} is geocentric (x, y, z from the Earth's centre); cells, areas "
                       f"and distances need a projected CRS in metres: reproject with "
                       f"{frame}.to_crs({frame}.estimate_utm_crs())")
    raise CRSError(f"{owner} has a vertical axis; the lattice lives on the horizontal plane: "
                   f"use its horizontal CRS, {frame}.set_crs({frame}.crs.to_2d(), "
                   f"allow_override=True) (here {crs.to_2d().to_string()})")


def _check_bounds(bounds: Sequence[float]) -> Bounds:
    """Return four finite floats; a bool (``True`` for 1) or an int past float64 is refused."""
    try:
        values = tuple(as_float(v) if is_real(v) else math.nan for v in bounds)
    except TypeError:  # not iterable
        values = ()
    if len(values) != 4 or not all(math.isfinite(v) for v in values):
        raise GridError(
            f"bounds must be four finite numbers (xmin, ymin, xmax, ymax), got "
            f"{_describe_sequence(bounds)}"
        )
    xmin, ymin, xmax, ymax = values
    if xmin >= xmax or ymin >= ymax:
        raise GridError(
            f"bounds must satisfy xmin < xmax and ymin < ymax, got (xmin={xmin}, ymin={ymin}, "
            f"xmax={xmax}, ymax={ymax}); pass them in the order (xmin, ymin, xmax, ymax)"
        )
    return xmin, ymin, xmax, ymax


def _lattice_shape(
    bounds: Bounds,
    shape: tuple[int, int] | None,
    cell_size: float | tuple[float, float] | None,
) -> tuple[int, int, float, float]:
    """Return ``nrows, ncols, dx, dy`` from exactly one of ``shape`` and ``cell_size``."""
    if (shape is None) == (cell_size is None):
        got = "both" if shape is not None else "neither"
        raise GridError(
            f"pass exactly one of shape=(nrows, ncols) or cell_size=(dx, dy), got {got}"
        )
    xmin, ymin, xmax, ymax = bounds
    if shape is not None:
        nrows, ncols = _check_shape(shape)
        dx, dy = (xmax - xmin) / ncols, (ymax - ymin) / nrows
        if not (dx <= MAX_EXTENT and dy <= MAX_EXTENT):  # inf: the extent overflowed float64
            raise GridError(
                f"bounds {tuple(bounds)} divided into shape={(nrows, ncols)} give cells of "
                f"{dx:.3g} x {dy:.3g} CRS units, beyond {MAX_EXTENT:g} (wider than any projected "
                "CRS in metres: the Earth is 4e7 m round); check the bounds and their CRS"
            )
    else:
        dx, dy = _check_cell_size(cell_size)
        cols, rows = (xmax - xmin) / dx - 1e-9, (ymax - ymin) / dy - 1e-9
        if not math.isfinite(cols * rows):  # past float64 (and MAX_CELLS): count in Decimal
            cols = (Decimal(xmax) - Decimal(xmin)) / Decimal(dx)
            rows = (Decimal(ymax) - Decimal(ymin)) / Decimal(dy)
        ncols, nrows = max(1, math.ceil(cols)), max(1, math.ceil(rows))
    if nrows * ncols > MAX_CELLS:
        fix = "a smaller shape=(nrows, ncols)" if shape is not None else "a larger cell_size"
        raise GridError(
            f"the lattice would have about {_rounded(nrows * ncols)} cells, more than the limit "
            f"of {MAX_CELLS:,}; use {fix} (or raise geosynth.lattice.MAX_CELLS)"
        )
    return nrows, ncols, dx, dy


def _rounded(n_cells: int) -> str:
    """``n_cells`` to 2 significant figures, e.g. ``8.0e11`` (also beyond the float range).

    From a cell size, the rows and columns are the extent over the cell size: exact counts
    would give the extent of the records (without a region, their extremes) to a cell.
    """
    mantissa, exponent = f"{Decimal(n_cells):.1e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def _check_shape(shape: object) -> tuple[int, int]:
    try:
        nrows, ncols = shape  # type: ignore[misc]
    except (TypeError, ValueError):
        nrows = ncols = None
    ok = all(
        isinstance(v, int | np.integer) and not isinstance(v, bool) and v > 0
        for v in (nrows, ncols)
    )
    if not ok:
        raise GridError(f"shape must be two positive integers (nrows, ncols), got {shape!r}")
    return int(nrows), int(ncols)  # type: ignore[arg-type]


def _check_cell_size(cell_size: object) -> tuple[float, float]:
    """Return ``(dx, dy)``; True (no length), text or an int past float64 (10**400) refused."""
    sizes = cell_size if isinstance(cell_size, Sequence | np.ndarray) else (cell_size, cell_size)
    try:
        values = [as_float(v) if is_real(v) else math.nan for v in sizes]  # type: ignore[union-attr]
    except TypeError:  # a 0-d array
        values = []
    dx, dy = values if len(values) == 2 else (math.nan, math.nan)
    if not (dx > 0 and dy > 0):  # also NaN
        raise GridError(
            f"cell_size must be a positive number or a pair (dx, dy) of positive numbers, "
            f"got {_describe_sequence(cell_size)}"
        )
    if max(dx, dy) > MAX_EXTENT:  # a hexagon of side 1e300 overflowed placement's batches
        huge = any(is_integer(v) and not math.isfinite(as_float(v)) for v in sizes)
        shown = "(an int past the float range)" if huge else repr(cell_size)  # inf as inf
        raise GridError(
            f"cell_size {shown} is beyond {MAX_EXTENT:g} CRS units, wider than any "
            "projected CRS in metres (the Earth is 4e7 m round); give the size in metres"
        )
    return dx, dy


def _describe_sequence(value: object) -> str:
    """Show a short tuple or list of numbers (bounds, a cell size) by its repr, else its type."""
    if isinstance(value, tuple | list) and len(value) <= 4 and all(
        isinstance(v, numbers.Number) and not (is_integer(v) and abs(v) > 10**20) for v in value
    ):
        return repr(value)
    return describe_value(value)


#: Advice of the messages that find cells too small: a square lattice's, a hexagonal one's.
_SQUARE_FIX = "a larger cell_size or a smaller shape"
_HEXAGON_FIX = "a larger cell_size, the hexagons' side"


def _check_resolution(size: float, bounds: Bounds, fix: str = _SQUARE_FIX) -> None:
    """Refuse cells too small for float64 to place points within them at these coordinates.

    float64 resolves about 2.2e-16 of a coordinate: at 2**50 (1e15) a 1 m cell holds four
    values per axis, and points placed "uniformly" in it landed on the records' own locations
    about once in 16 draws. A cell must span at least :data:`_MIN_RELATIVE_CELL` of the
    largest coordinate (some 450,000 values per axis).
    The message gives the coordinates' order of magnitude only (bounds derived from the
    records hold their extremes).
    """
    magnitude = max(abs(v) for v in bounds)
    if size < _MIN_RELATIVE_CELL * magnitude:
        raise GridError(
            f"cells of {size:.3g} CRS units are below {_MIN_RELATIVE_CELL:g} of the coordinates "
            f"(of the order of 1e{math.floor(math.log10(magnitude))}), where float64 holds too "
            f"few distinct values to place points within a cell; use larger cells ({fix}), or "
            "coordinates nearer their origin (a projected CRS in metres)"
        )


#: The smallest cell relative to the largest coordinate of the lattice (:func:`_check_resolution`).
_MIN_RELATIVE_CELL = 1e-10


def _edges(vmin: float, vmax: float, n: int, step: float, exact_max: bool) -> np.ndarray:
    """Edges ``vmin + k·step`` (``k = 0..n``), each the double nearest the decimal sum.

    In floats, ``k·step`` of a size with no exact binary form put many edges one float step
    off the decimal line: with 0.1, 2.2 or 30.48 (100 ft), 40–75 % of the points lying on
    lines (coarse geocoding rounds records onto them) went to the cell west or south of the
    line, against the half-open rule, and a lattice at the geocoding's spacing counted 0 and
    20 records in alternate columns of 10 each. Each edge is now computed in decimal from the
    shortest text of ``vmin`` and ``step`` (of ``(vmax − vmin)/n`` with ``exact_max``) and
    rounded once, so an edge meant at 0.3 is the double 0.3 that a point read as 0.3 is.
    """
    with localcontext() as context:
        context.prec = _DECIMAL_DIGITS
        start = Decimal(repr(float(vmin)))
        size = ((Decimal(repr(float(vmax))) - start) / n if exact_max
                else Decimal(repr(float(step))))
        edges = np.array([float(start + k * size) for k in range(n + 1)])
    if exact_max:
        edges[-1] = vmax
    return edges  # increasing: _check_resolution keeps step far above float64's spacing


def _multiple(k: int, unit: float, plus: tuple[int, float] | None = None) -> float:
    """``k·unit`` (``+ n·step`` given ``plus = (n, step)``), rounded once from decimals.

    As :func:`_edges` computes the edges, so snapped bounds fall on them.
    """
    with localcontext() as context:
        context.prec = _DECIMAL_DIGITS
        value = k * Decimal(repr(float(unit)))
        if plus is not None:
            value = Decimal(repr(float(value))) + plus[0] * Decimal(repr(float(plus[1])))
        return float(value)


#: Digits of the decimal sums of :func:`_edges` and :func:`_multiple`: exact for 17-digit
#: inputs times a count of cells, so the one rounding is the conversion to a double.
_DECIMAL_DIGITS = 60



def _check_extent(xy: np.ndarray, pad: float) -> None:
    """Refuse points whose bounds cannot carry a lattice (none, too wide, or zero width/height)."""
    n = len(xy)
    fix = (
        "give the study region (Grid.from_points(..., region=...), CLI: --region) or explicit "
        "public bounds with Grid.regular(bounds, ...)"
    )
    if n == 0:
        raise GridError(
            f"gdf has no records, so the lattice bounds cannot be derived from it; {fix}"
        )
    extent = float(np.max(xy.max(axis=0) - xy.min(axis=0))) + 2.0 * pad
    if not extent <= MAX_EXTENT:  # also inf, where ±1e308 coordinates overflow the width
        raise GridError(
            f"the records of gdf (with pad) span more than {MAX_EXTENT:g} CRS units, beyond any "
            f"projected CRS in metres (the Earth is 4e7 m round); check the coordinates and "
            f"their CRS, or {fix}"
        )
    if pad > 0:
        return
    flat = [axis for k, axis in enumerate(("x", "y")) if xy[:, k].min() == xy[:, k].max()]
    if not flat:
        return
    if n == 1:
        what = "gdf has a single record (zero width and height)"
    elif len(flat) == 2:
        what = f"the {n} records of gdf all lie at one point (zero width and height)"
    else:
        side, line = ("width", "vertical") if flat[0] == "x" else ("height", "horizontal")
        what = (
            f"the {n} records of gdf lie on one {line} line (zero {side}: they all share one "
            f"{flat[0]} coordinate)"
        )
    raise GridError(
        f"{what}: the lattice bounds cannot be derived from the points; {fix}, or use more "
        "records (in Python, pad > 0 also gives the lattice an extent)"
    )


#: Smallest ratio of one axis's snapping unit to the other's in :meth:`Grid.from_points` with
#: ``shape`` (a "nice" number: units stay 1, 2, 2.5 or 5 times a power of 10).
MIN_SNAP_SHARE = 0.1


def _shape_units(ux: float, uy: float) -> tuple[float, float]:
    """Snapping units of both axes, neither below :data:`MIN_SNAP_SHARE` of the other."""
    return max(ux, MIN_SNAP_SHARE * uy), max(uy, MIN_SNAP_SHARE * ux)


def _nice_floor(value: float) -> float:
    """Largest ``m * 10**k`` not above ``value``, with ``m`` in 1, 2, 2.5, 5.

    0 for a ``value`` that underflowed to 0 (an extent of a few subnormals over the number of
    cells), which :func:`_snap_outward` refuses as too small.
    """
    if value <= 0:  # math.log10 raised "math domain error"
        return 0.0
    exponent = math.floor(math.log10(value))
    for mantissa in _NICE_MANTISSAS:
        unit = mantissa * 10.0**exponent
        if unit <= value:
            return unit
    return 10.0 ** (exponent - 1) * _NICE_MANTISSAS[0]  # log10 rounded up; 5 x 10^(k-1) fits


def _snap_outward(
    vmin: float, vmax: float, unit: float, step: float | None, fix: str = _SQUARE_FIX
) -> tuple[float, float]:
    """Multiples of ``unit`` strictly below ``vmin`` and strictly above ``vmax``.

    With ``step`` (the cell size), the upper multiple is checked as :func:`_edges` will compute
    the last edge, ``lower + n * step``, so rounding cannot put it on or below ``vmax``.
    ``fix``: the message's advice (:data:`_HEXAGON_FIX` for hexagons, which have no shape).
    """
    vmin, vmax = float(vmin), float(vmax)
    magnitude = max(abs(vmin), abs(vmax))
    if unit <= 4 * math.ulp(magnitude):
        # The order of magnitude only: vmin and vmax are the records' extremes.
        order = f" (of the order of 1e{math.floor(math.log10(magnitude))})" if magnitude else ""
        raise GridError(
            f"cells of size {unit:.3g} are too small to be told apart at the coordinates of the "
            f"points{order}; use {fix}"
        )
    i0 = math.ceil(vmin / unit) - 1
    i1 = math.floor(vmax / unit) + 1
    # Rounding of vmin / unit can leave a multiple on the extreme: step once more (the unit is
    # above the float resolution, so one step suffices; the bounded loops only guard that).
    for _ in range(8):
        if _multiple(i0, unit) >= vmin:
            i0 -= 1
        elif _multiple(i1, unit) <= vmax:
            i1 += 1
        else:
            break
    lower = _multiple(i0, unit)
    if step is None:
        return lower, _multiple(i1, unit)
    n = i1 - i0
    for _ in range(8):
        upper = _multiple(i0, unit, (n, step))  # the last edge, as _edges computes it
        if upper > vmax:
            return lower, upper
        n += 1
    raise GridError(  # pragma: no cover - guarded by the resolution check above
        f"cannot snap the lattice bounds to multiples of {unit} near {vmin:.3g}; use a larger "
        "cell_size or a smaller shape"
    )


def polygon_union(obj: PolygonsLike, name: str, crs: pyproj.CRS | None) -> shapely.Geometry | None:
    """Union of the polygons in ``obj`` in the grid CRS (prepared), or None.

    How :class:`Grid` reads a ``region`` or ``exclude`` (and :func:`geosynth.tune` fingerprints
    one, so that inputs covering other areas never compare equal).

    Parameters
    ----------
    obj : GeoDataFrame, GeoSeries, shapely geometry, sequence of polygons or None
        The polygons.
    name : str
        How messages name ``obj`` (``"region"``, ``"exclude"``).
    crs : pyproj.CRS or None
        The grid CRS; a GeoDataFrame or GeoSeries in another CRS is reprojected.

    Returns
    -------
    shapely.Geometry or None
        The prepared union; None when ``obj`` is None.

    Raises
    ------
    geosynth.errors.GridError, geosynth.errors.CRSError
        As :func:`check_polygons`.
    """
    if obj is None:
        return None
    union = shapely.union_all(check_polygons(obj, name, crs))
    shapely.prepare(union)
    return union


def check_polygons(obj: PolygonsLike, name: str, crs: pyproj.CRS | None, *,
                   lines: bool = False) -> np.ndarray:
    """Return the non-empty polygons of ``obj`` in the grid CRS, refusing invalid ones.

    The check of :func:`polygon_union` without the union, which is the costly part for a
    large layer (the command line checks its polygon files when it reads them).

    Parameters
    ----------
    obj : GeoDataFrame, GeoSeries, shapely geometry or sequence of polygons
        The polygons.
    name : str
        How messages name ``obj``.
    crs : pyproj.CRS or None
        The grid CRS; a GeoDataFrame or GeoSeries in another CRS is reprojected.
    lines : bool, default False
        Accept lines too (the ``barriers`` of :meth:`Grid.without_links_across`).

    Returns
    -------
    numpy.ndarray of shapely Polygon/MultiPolygon (and lines, with ``lines``)
        In 2-D (a z coordinate is dropped: a lattice is planar).

    Raises
    ------
    geosynth.errors.GridError
        ``obj`` is not polygons (or lines), or holds invalid or no non-empty ones.
    geosynth.errors.CRSError
        ``obj`` has no CRS, or one that cannot be reprojected to ``crs``.
    """
    source = None  # the polygons in their own CRS, when reprojected
    if isinstance(obj, gpd.GeoDataFrame | gpd.GeoSeries):
        geoms = np.asarray(_to_grid_crs(obj, name, crs).geometry.array, dtype=object)
        if obj.crs is not None and crs is not None and not _same_crs(obj.crs, crs):
            source = np.asarray(obj.geometry.array, dtype=object)
    elif isinstance(obj, shapely.Geometry):
        geoms = np.array([obj], dtype=object)
    elif (isinstance(obj, Sequence) and not isinstance(obj, str)) or (
        isinstance(obj, np.ndarray) and obj.ndim == 1  # a 0-d array has no len()
    ):
        geoms = np.empty(len(obj), dtype=object)
        geoms[:] = list(obj)
    else:
        raise GridError(
            f"{name} must be a GeoDataFrame, GeoSeries, shapely geometry or sequence of "
            f"polygons, got {type(obj).__name__}"
        )
    not_geom = np.flatnonzero(~shapely.is_geometry(geoms) & ~shapely.is_missing(geoms))
    if not_geom.size:
        raise GridError(
            f"{name} items at positions {not_geom[:_N_NAMED].tolist()} are not "
            "shapely geometries; pass polygons"
        )
    present = ~shapely.is_missing(geoms)
    present[present] = ~shapely.is_empty(geoms[present])
    geoms = geoms[present]
    allowed = _POLYGON_TYPES + _LINE_TYPES if lines else _POLYGON_TYPES
    wrong = np.flatnonzero(~np.isin(shapely.get_type_id(geoms), allowed))
    if wrong.size:
        kinds = sorted({shapely.get_type_id(g) for g in geoms[wrong]})
        names = [shapely.GeometryType(k).name for k in kinds]
        fix = "buffer points into polygons first" if lines else "buffer lines or points first"
        if _COLLECTION_TYPE in kinds:  # what make_valid returns for a polygon with a spike
            fix = (f"{fix}; keep the polygons of a collection (e.g. the output of make_valid) "
                   "with shapely.make_valid(geometry, method='structure') (shapely >= 2.1) or "
                   "GeoSeries.explode() and its Polygon rows")
        what = ("LineString/MultiLineString/Polygon/MultiPolygon" if lines
                else "Polygon/MultiPolygon")
        raise GridError(
            f"{name} must contain only {what} geometries, found {names} at non-empty positions "
            f"{wrong[:_N_NAMED].tolist()}; {fix}"
        )
    invalid = np.flatnonzero(~shapely.is_valid(geoms))
    if invalid.size and source is not None and shapely.is_valid(source[present][invalid]).all():
        raise GridError(
            f"{name} polygons at non-empty positions {invalid[:_N_NAMED].tolist()} are valid in "
            f"their CRS {obj.crs.to_string()} but became invalid when reprojected to the grid "
            f"CRS {crs.to_string()} ({shapely.is_valid_reason(geoms[invalid[0]])}): they reach "
            f"beyond where the grid CRS is defined; clip {name} to the study area in its own CRS "
            "before building the grid"
        )
    if invalid.size:
        raise GridError(
            f"{name} has invalid polygons at non-empty positions {invalid[:_N_NAMED].tolist()} "
            f"({shapely.is_valid_reason(geoms[invalid[0]])}); repair them, e.g. with QGIS's Fix "
            "geometries or ogr2ogr -makevalid (in Python, shapely.make_valid or the GeoSeries' "
            "make_valid method)"
        )
    if geoms.size == 0:
        # "pass None to skip it" was wrong for Grid.hexagonal's extent, which is required
        raise GridError(
            f"{name} has no non-empty line or polygon, so it crosses nothing; pass the lines or "
            "polygons of the barriers" if lines else
            f"{name} has no non-empty polygon, so it covers no area; pass the polygons of an area"
        )
    return shapely.force_2d(geoms)  # see _area_polygons


def _to_grid_crs(
    obj: gpd.GeoDataFrame | gpd.GeoSeries, name: str, crs: pyproj.CRS | None
) -> gpd.GeoDataFrame | gpd.GeoSeries:
    if obj.crs is None or (crs is not None and _same_crs(obj.crs, crs)):
        return obj
    if crs is None:
        # A geographic CRS was suggested as the grid's, which the grid then refused.
        suggested = ("a projected CRS in metres (crs=... of Grid.regular or Grid.hexagonal, "
                     f"e.g. {name}.estimate_utm_crs())" if obj.crs.is_geographic
                     else f"crs={obj.crs.to_string()!r} of Grid.regular or Grid.hexagonal")
        raise CRSError(
            f"{name} has CRS {obj.crs.to_string()} but the grid has no CRS; give the grid its "
            f"CRS ({suggested}, the CRS of the points of Grid.from_points or of the areas of "
            f"Grid.from_polygons, e.g. areas.set_crs(...)), or drop the CRS of {name}"
        )
    return _densified(obj).to_crs(crs)


#: A layer's edges are split into segments of at most this share of its extent before it is
#: reprojected (:func:`_densified`) ...
_DENSIFY_SHARE = 1 / 1024
#: ... unless that adds more than about this many vertices (then longer segments).
_DENSIFY_MAX_VERTICES = 200_000


def _densified(obj: gpd.GeoDataFrame | gpd.GeoSeries) -> gpd.GeoDataFrame | gpd.GeoSeries:
    """Return ``obj`` with vertices added along its long edges, in its own CRS.

    ``to_crs`` moves vertices only, so each straight edge became the chord between its
    reprojected ends: a region's edge along the 45th parallel from 14° to 16° E lay 486 m north
    of the parallel in UTM zone 33, and records inside the region near it fell in no cell.
    Segments longer than :data:`_DENSIFY_SHARE` of the layer's extent are split (a chord's
    error falls with the square of its length: under a millimetre there), or longer ones if
    that would add more than :data:`_DENSIFY_MAX_VERTICES` vertices.
    """
    geoms = np.asarray(obj.geometry.array, dtype=object)
    x0, y0, x1, y1 = shapely.total_bounds(geoms)
    span = max(x1 - x0, y1 - y0)
    if not (np.isfinite(span) and span > 0):
        return obj
    length = float(np.nansum(shapely.length(geoms)))
    step = max(span * _DENSIFY_SHARE, length / _DENSIFY_MAX_VERTICES)
    valid = shapely.is_valid(geoms)  # GEOS repairs an invalid polygon it densifies (buffer
    dense = np.where(valid, shapely.segmentize(geoms, step), geoms)  # 0): its error is kept
    if isinstance(obj, gpd.GeoSeries):
        return gpd.GeoSeries(dense, index=obj.index, crs=obj.crs, name=obj.name)
    return obj.set_geometry(gpd.GeoSeries(dense, index=obj.index, crs=obj.crs))


def _warn_of_dropped_areas(labels: np.ndarray, kept: np.ndarray) -> None:
    """DataWarning naming the areas ``exclude`` removed from an areal lattice (``kept``: positions).

    The cells are numbered over the areas kept: four areas a-d with b excluded gave three
    cells, cell 1 being area c, without a word, and results joined back by position went to
    the wrong areas.
    """
    dropped = np.delete(labels, kept)
    if dropped.size:
        more = f" and {dropped.size - _N_NAMED} more" if dropped.size > _N_NAMED else ""
        warnings.warn(
            f"exclude covers {dropped.size} area(s) entirely (or but for a sliver), left out of "
            f"the lattice (areas.index {dropped[:_N_NAMED].tolist()}{more}): the cells are "
            "numbered over the areas kept, so cell k is not areas.iloc[k]; join results by "
            "grid.area_ids (id_column=), not by position",
            DataWarning,
            stacklevel=caller_stacklevel(),
        )


def _warn_if_region_beyond(region: shapely.Geometry, lattice: shapely.Geometry) -> None:
    """DataWarning when more than 1 % of ``region`` lies beyond the lattice's bounds.

    ``Grid.regular((0, 0, 10, 10), ..., region=box(0, 0, 100, 100))`` cut 99 % of the region
    off without a word, and every point there was located in no cell.
    """
    if shapely.contains(lattice, region):
        return
    outside = shapely.area(shapely.difference(region, lattice))
    if outside > 0.01 * shapely.area(region):
        warnings.warn(
            f"{outside / shapely.area(region):.0%} of the region's area lies beyond the grid "
            f"bounds {tuple(round(float(v), 6) for v in shapely.bounds(lattice))}, left out of "
            "the lattice (points there are in no cell); build the grid over the region's "
            "bounds (Grid.regular(region.total_bounds, ..., region=region))",
            DataWarning,
            stacklevel=caller_stacklevel(),
        )


# ---------------------------------------------------------------------- vectorised kernels
class _Candidates(NamedTuple):
    """Boxes of the lattice positions that may be kept, with what clipping needs."""

    boxes: np.ndarray  # shapely boxes
    cx: np.ndarray  # box centres
    cy: np.ndarray
    window: Bounds  # extent of all the boxes
    step: float  # longest cell side


def _clip_boxes(
    candidates: _Candidates, region: shapely.Geometry | None, exclude: shapely.Geometry | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Clip candidate boxes; return (habitable geometry, fully habitable, intersects region).

    Intersection and difference are computed only for boxes crossing a region or exclusion
    boundary; the others are whole or dropped.
    """
    boxes = candidates.boxes
    tree = shapely.STRtree(boxes)
    habitable = boxes.copy()
    alive = np.ones(boxes.size, dtype=bool)
    fully = np.ones(boxes.size, dtype=bool)
    if region is not None:
        inside, partial = _classify(tree, candidates, region)
        habitable[partial] = shapely.intersection(boxes[partial], region)
        alive, fully = inside | partial, inside
    if exclude is not None:
        covered, partial = _classify(tree, candidates, exclude)
        removes = (covered & alive).any()
        alive &= ~covered
        fully &= ~(covered | partial)
        partial &= alive
        before = None if removes else shapely.area(habitable[partial])  # only then needed
        habitable[partial] = shapely.difference(habitable[partial], exclude)
        if not (removes or (shapely.area(habitable[partial]) < before).any()):
            warnings.warn(_exclude_misses_cells(exclude, candidates.window), DataWarning,
                          stacklevel=4)
    clipped = alive & ~fully
    habitable[clipped] = _polygonal(habitable[clipped])
    return habitable, fully, alive


def _polygonal(geoms: np.ndarray) -> np.ndarray:
    """Return the polygons of each geometry, dropping the lines and points of a collection.

    A box that only touches the region along an edge intersects it in a line, kept in a
    collection with the box's polygons: a record on that edge went to the cell of the line
    (its habitable area an island 671 m away) rather than to the cell it borders, and a naive
    point was placed on the island.
    """
    mixed = np.flatnonzero(~np.isin(shapely.get_type_id(geoms), _POLYGONAL_TYPES))
    if mixed.size == 0:
        return geoms
    out = geoms.copy()
    for k in mixed:
        parts = shapely.get_parts(geoms[k])
        polygons = parts[np.isin(shapely.get_type_id(parts), _POLYGONAL_TYPES)]
        out[k] = shapely.union_all(polygons) if polygons.size else shapely.Polygon()
    return out


#: shapely's type ids of Polygon and MultiPolygon.
_POLYGONAL_TYPES = (3, 6)


def _exclude_misses_cells(exclude: shapely.Geometry, window: tuple[float, ...]) -> str:
    """Return the warning for an ``exclude`` that removes no part of any cell (a CRS mix-up)."""
    bounds = tuple(round(float(v), 6) for v in shapely.bounds(exclude))
    return (f"the excluded areas (bounds {bounds}) remove no part of any cell of the lattice "
            f"(bounds {tuple(round(float(v), 6) for v in window)}), so the release may place "
            "points in them: check that exclude= and the grid share a CRS, or drop exclude")


def _classify(
    tree: shapely.STRtree, candidates: _Candidates, polygons: shapely.Geometry
) -> tuple[np.ndarray, np.ndarray]:
    """Split boxes into covered by ``polygons`` and crossing their boundary (not covered).

    The STRtree finds the boxes the boundary intersects, queried with short boundary segments
    so each query window is small. Any other box lies wholly in the interior or the exterior, so
    its centre decides; boxes on the boundary are covered if ``covers`` says so (e.g. a region
    edge running along a cell edge), otherwise partial.
    """
    boxes = candidates.boxes
    segments = _boundary_segments(polygons, candidates.window, candidates.step)
    on_boundary = _hits(tree, segments, boxes.size)
    away = ~on_boundary
    covered = np.zeros(boxes.size, dtype=bool)
    covered[away] = shapely.intersects_xy(polygons, candidates.cx[away], candidates.cy[away])
    covered[on_boundary] = shapely.covers(polygons, boxes[on_boundary])
    return covered, on_boundary & ~covered


def _boundary_segments(polygons: shapely.Geometry, window: Bounds, step: float) -> np.ndarray:
    """Boundary of ``polygons`` within ``window`` (+ one step) as segments of length <= step."""
    xmin, ymin, xmax, ymax = window
    rings = shapely.get_rings(shapely.get_parts(polygons))
    lines = shapely.clip_by_rect(rings, xmin - step, ymin - step, xmax + step, ymax + step)
    lines = shapely.get_parts(lines)
    lines = shapely.segmentize(lines[~shapely.is_empty(lines)], step)
    coords, line_id = shapely.get_coordinates(lines, return_index=True)
    same = line_id[1:] == line_id[:-1]
    return shapely.linestrings(np.stack([coords[:-1][same], coords[1:][same]], axis=1))


def _hits(tree: shapely.STRtree, geometries: np.ndarray, n: int) -> np.ndarray:
    """Boolean mask of the tree items intersecting any of ``geometries``."""
    _, items = tree.query(geometries, predicate="intersects")
    mask = np.zeros(n, dtype=bool)
    mask[items] = True
    return mask


def _lattice_csr(
    rows: np.ndarray,
    cols: np.ndarray,
    lattice_to_cell: np.ndarray,
    shape: tuple[int, int],
    contiguity: str,
) -> tuple[np.ndarray, np.ndarray]:
    """CSR ``(indptr, indices)`` of the lattice adjacency restricted to the kept cells.

    Each step ``(dr, dc)`` is one diagonal ``dr * ncols + dc`` of the regular lattice adjacency
    (as in :func:`libpysal.weights.lat2SW`). Looking the steps up in ``lattice_to_cell`` padded
    with a border of -1 masks the steps that would wrap across a row end or leave the lattice,
    and maps kept neighbours to cell ids (-1 when dropped). Steps are in increasing offset, so
    indices come out sorted within each row.
    """
    nrows, ncols = shape
    padded = np.full((nrows + 2, ncols + 2), -1, dtype=np.int64)
    padded[1:-1, 1:-1] = lattice_to_cell.reshape(nrows, ncols)
    padded = padded.ravel()
    base = (rows + 1) * (ncols + 2) + (cols + 1)
    steps = _STEPS[contiguity]
    neighbours = np.empty((rows.size, len(steps)), dtype=np.int64)
    for k, (dr, dc) in enumerate(steps):
        np.take(padded, base + (dr * (ncols + 2) + dc), out=neighbours[:, k])
    present = neighbours >= 0
    indptr = np.zeros(rows.size + 1, dtype=np.int64)
    np.cumsum(np.count_nonzero(present, axis=1), out=indptr[1:])
    return indptr, neighbours[present]


def _no_habitable_cell(touched: bool = False) -> GridError:
    """Return the error of a lattice none of whose cells has habitable area (of both builds).

    ``touched``: some cell overlaps the habitable region, by less than a rounding sliver of it
    (cells of 1e12 m over a city's region were "outside the region"). ``region=`` and
    ``exclude=`` are spelled as parameters so that the command line names its options
    (``--region``, ``--exclude``).
    """
    if touched:
        return GridError(
            "no cell has habitable area: the habitable region is a rounding sliver (below "
            f"{_AREA_RTOL:g} of the area) of every cell it overlaps, so the cells are far "
            "larger than the region; choose cells smaller than the region (a smaller cell_size= or "
            "a larger shape=)"
        )
    return GridError(
        "no cell has habitable area: every cell is outside the region or inside an excluded "
        "area; check region= and exclude= against the bounds (and their CRS)"
    )


def _sliver_area(perimeter: np.ndarray, bounds: Any) -> np.ndarray:
    """Habitable area below which a cell holds only a rounding sliver along its boundary.

    A strip :data:`_SLIVER_STEPS` float64 steps of the largest coordinate of ``bounds`` wide
    along the whole ``perimeter``: where a region or no-go boundary runs along a cell edge, the
    two are computed apart by about one step, far more than :data:`_AREA_RTOL` of a small cell
    at projected coordinates.
    """
    magnitude = float(np.max(np.abs(np.asarray(bounds, dtype=np.float64))))
    return _SLIVER_STEPS * np.finfo(np.float64).eps * magnitude * perimeter


#: A lattice whose CRS scales lengths by more than this fraction at its centre is warned about.
MAX_SCALE_DISTORTION = 0.05


def _warn_of_distortion(crs: pyproj.CRS | None, bounds: Bounds) -> None:
    """DataWarning when the CRS scales lengths far from 1 at the lattice's centre.

    Web Mercator (EPSG:3857) at 60°N doubles every length: cells "250 m" wide were 125 m on the
    ground, a quarter of the area meant, and the matched distances of the disclosure risk were
    twice the true ones, so a release looked safer than it was. An equal-area CRS keeps areas
    but not lengths: Mollweide (the CRS of global population grids) at 60°N stretches the
    meridians by 1.9, so both directions' scales are checked. A projected CRS in its area of
    use (UTM in its zone, a national grid) scales lengths by well under 1 %.
    """
    if crs is None or not crs.is_projected:
        return
    x = (bounds[0] + bounds[2]) / 2
    y = (bounds[1] + bounds[3]) / 2
    try:
        lon, lat = pyproj.Transformer.from_crs(crs, crs.geodetic_crs, always_xy=True).transform(
            x, y)
        factors = pyproj.Proj(crs).get_factors(lon, lat)
    except (pyproj.exceptions.ProjError, pyproj.exceptions.CRSError, TypeError):
        return
    unit = metres_per_unit(crs)
    # The smallest and largest scale over all directions (Tissot's indicatrix): an equal-area
    # CRS (Mollweide, EPSG:6933) keeps areas (areal scale 1) while stretching one direction and
    # shrinking another.
    low, high = sorted((factors.tissot_semiminor, factors.tissot_semimajor))
    if not (math.isfinite(low) and math.isfinite(high) and low > 0):
        return
    if 1 - MAX_SCALE_DISTORTION <= low and high <= 1 + MAX_SCALE_DISTORTION:
        return
    scales = f"{high:.3g}" if high - low <= 1e-3 * high else f"{low:.3g} to {high:.3g}"
    ground = (f"{100 * unit / high:.3g}" if high - low <= 1e-3 * high
              else f"{100 * unit / high:.3g} to {100 * unit / low:.3g}")
    warnings.warn(
        f"the lattice's CRS ({crs.to_string()}) scales lengths by {scales} at the lattice's "
        f"centre (longitude {lon:.4g}, latitude {lat:.4g}): 100 CRS units ({100 * unit:g} m "
        f"on the map) measure {ground} m on the ground, so cells and every distance (the "
        "disclosure risk's among them) are off by as much; reproject the points to a CRS made "
        "for the area, e.g. gdf.to_crs(gdf.estimate_utm_crs())",
        DataWarning,
        stacklevel=caller_stacklevel(),
    )


def _relabel_by_first(labels: np.ndarray, n_components: int) -> np.ndarray:
    """Renumber component labels in order of their smallest member."""
    _, first = np.unique(labels, return_index=True)
    order = np.empty(n_components, dtype=np.int64)
    order[np.argsort(first)] = np.arange(n_components, dtype=np.int64)
    return order[labels]


def _smallest_holding(ids: np.ndarray, shapes: np.ndarray, x: np.ndarray,
                      y: np.ndarray) -> np.ndarray:
    """Per row of ``ids`` (n, k; -1: no cell), the smallest id whose shape holds the point.

    Shapes are closed (a point on an edge is held), so a point on the edge of two cells goes
    to the smaller id; -1 where none holds it.
    """
    found = np.full(ids.shape[0], -1, dtype=np.int64)
    for k in np.argsort(ids, axis=1, kind="stable").T:  # -1 first: skipped
        candidate = ids[np.arange(ids.shape[0]), k]
        test = np.flatnonzero((found < 0) & (candidate >= 0))
        with _GEOMETRY_LOCK:
            hit = shapely.intersects_xy(shapes[candidate[test]], x[test], y[test])
        found[test[hit]] = candidate[test[hit]]
    return found


def _axis_index(v: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Index of the half-open interval of ``edges`` holding each ``v``.

    Arithmetic estimate ``floor((v - min) / step)`` clamped to ``0 .. n - 1`` (so the max edge
    falls in the last interval and NaN gives 0), then corrected by one step against ``edges`` so
    the result agrees exactly with :meth:`Grid.cell_bounds` despite rounding. Values outside
    ``[min, max]`` get an arbitrary index in ``-1 .. n``; callers mask them.
    """
    n = edges.size - 1
    t = v - edges[0]
    t *= n / (edges[-1] - edges[0])
    np.floor(t, out=t)
    np.fmax(t, 0, out=t)
    np.fmin(t, n - 1, out=t)
    idx = t.astype(np.int64)
    del t
    idx -= v < edges[idx]
    upper = np.append(edges[1:-1], np.inf)  # the last interval is closed above
    idx += v >= upper[idx]
    return idx


def _coordinates(points: Any, crs: pyproj.CRS | None) -> tuple[np.ndarray, np.ndarray]:
    """Float64 x and y of ``points``; NaN for missing, empty or non-point geometries."""
    if isinstance(points, gpd.GeoDataFrame | gpd.GeoSeries):
        if points.crs is not None and crs is not None and not _same_crs(points.crs, crs):
            raise CRSError(
                f"points have CRS {points.crs.to_string()} but the grid has "
                f"{crs.to_string()}; reproject with points.to_crs(grid.crs)"
            )
        return _point_xy(np.asarray(points.geometry.array, dtype=object))
    if isinstance(points, shapely.Geometry):
        return _point_xy(np.array([points], dtype=object))
    refuse_masked(points, "points")  # np.asarray would locate the hidden coordinates
    if isinstance(points, pd.DataFrame) and all(  # nullable Float64/Int64: NaN for missing
            pd.api.types.is_numeric_dtype(t) and not pd.api.types.is_bool_dtype(t)
            for t in points.dtypes):
        points = points.to_numpy(dtype=np.float64, na_value=np.nan)
    try:
        arr = np.asarray(points)
    except ValueError as err:  # ragged lists
        raise InputError(
            f"points must be point geometries or an (n, 2) array of x, y coordinates; NumPy "
            f"could not make an array of them ({err})") from err
    if arr.size == 0:
        return np.empty(0), np.empty(0)
    if arr.dtype == object:
        return _point_xy(arr.ravel())
    if arr.ndim != 2 or arr.shape[1] != 2 or arr.dtype.kind not in "iuf":  # complex: no x, y
        raise InputError(
            f"points must be point geometries or an (n, 2) array of x, y coordinates, got an "
            f"array of shape {arr.shape} and dtype {arr.dtype}"
        )
    arr = arr.astype(np.float64, copy=False)
    return arr[:, 0], arr[:, 1]


def _point_xy(geoms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    not_geom = ~shapely.is_geometry(geoms) & ~shapely.is_missing(geoms)
    if not_geom.any():
        raise InputError(
            f"points at positions {np.flatnonzero(not_geom)[:_N_NAMED].tolist()} are not shapely "
            "geometries; pass point geometries or an (n, 2) coordinate array"
        )
    ok = (shapely.get_type_id(geoms) == _POINT_TYPE) & ~shapely.is_empty(geoms)
    if ok.all():
        return shapely.get_x(geoms), shapely.get_y(geoms)
    x, y = np.full(geoms.size, np.nan), np.full(geoms.size, np.nan)
    x[ok], y[ok] = shapely.get_x(geoms[ok]), shapely.get_y(geoms[ok])
    return x, y


def _readonly(arr: np.ndarray) -> np.ndarray:
    view = arr.view()
    view.flags.writeable = False
    return view


def _same_crs(a: pyproj.CRS, b: pyproj.CRS) -> bool:
    return a.equals(b, ignore_axis_order=True)


def _is_bounds(extent: Any) -> bool:
    """Tell bounds (a 4-sequence of numbers) from polygons."""
    if isinstance(extent, gpd.GeoDataFrame | gpd.GeoSeries | shapely.Geometry | str):
        return False
    try:
        values = list(extent)
    except TypeError:
        return False
    return len(values) == 4 and all(
        isinstance(v, int | float | np.number) and not isinstance(v, bool) for v in values
    )


def _area_polygons(areas: gpd.GeoDataFrame | gpd.GeoSeries) -> np.ndarray:
    """Return the polygons of ``areas`` in 2-D; refuse missing, empty, non-polygon, invalid rows."""
    geoms = np.asarray(areas.geometry.array, dtype=object)
    missing = np.flatnonzero(shapely.is_missing(geoms) | shapely.is_empty(geoms))
    wrong = np.flatnonzero(~np.isin(shapely.get_type_id(geoms), _POLYGON_TYPES))
    wrong = np.setdiff1d(wrong, missing)
    invalid = np.setdiff1d(np.flatnonzero(~shapely.is_valid(geoms)), np.r_[missing, wrong])
    labels = np.asarray(areas.index)
    for rows, what, fix in (
        (missing, "have no geometry or an empty one", "drop them"),
        (wrong, "are not Polygon/MultiPolygon", "keep only the areas' polygons"),
        (invalid, "are invalid polygons", "repair them with GeoSeries.make_valid()"),
    ):
        if rows.size:
            named = labels[rows[:_N_NAMED]].tolist()
            raise GridError(f"areas rows {named} {what}; {fix}")
    if geoms.size == 0:
        raise GridError("areas has no rows; pass the polygons of the areal units")
    # A lattice is planar: a z coordinate (an export from a 3-D source) is ignored by every
    # geometry step, but it stayed in the cells, so a release's grid layer held 3-D polygons
    # that read_release refused as edited ("do not publish it").
    return shapely.force_2d(geoms)


def _id_problems(ids: pd.Series) -> list[tuple[int, str]]:
    r"""Return ``(position, why)`` of the values of ``ids`` no file can hold as area ids.

    An identifier is text without NUL (GDAL cut ``"a\x00b"`` and ``"a\x00c"`` to one id), an
    integer of int64 (a uint64 above 2**63 crashed the GeoPackage writer) or another number;
    containers, booleans, bytes and dates are not (dates were called "lists").
    """
    if pd.api.types.is_bool_dtype(ids.dtype):
        return [(0, "booleans")]
    if pd.api.types.is_unsigned_integer_dtype(ids.dtype):
        beyond = np.flatnonzero(ids.to_numpy() > np.iinfo(np.int64).max)
        return [(int(k), "an integer beyond 64-bit signed integers") for k in beyond]
    if pd.api.types.is_numeric_dtype(ids.dtype):
        return []
    problems = []
    for k, value in enumerate(ids.to_numpy(dtype=object)):
        if isinstance(value, str):
            why = "text holding a NUL character" if "\x00" in value else None
        elif isinstance(value, bool | np.bool_):
            why = "a boolean"
        elif isinstance(value, numbers.Integral):
            why = (None if -(2**63) <= int(value) < 2**63
                   else "an integer beyond 64-bit signed integers")
        elif isinstance(value, numbers.Real):
            why = None
        else:
            why = f"a {type(value).__name__}"
        if why is not None:
            problems.append((k, why))
    return problems


def _area_ids(areas: gpd.GeoDataFrame | gpd.GeoSeries, id_column: str | None) -> np.ndarray | None:
    """Return the unique, present identifiers in ``areas[id_column]``, or None."""
    if id_column is None:
        return None
    if not isinstance(id_column, str):
        raise GridError(f"id_column must be the name of a column (a str), got {id_column!r}")
    if not isinstance(areas, gpd.GeoDataFrame) or id_column not in areas.columns:
        have = list(areas.columns) if isinstance(areas, gpd.GeoDataFrame) else []
        raise GridError(f"id_column {id_column!r} is not a column of areas (columns: {have})")
    if list(areas.columns).count(id_column) > 1:
        raise GridError(f"areas has several columns named {id_column!r}; rename or drop the "
                        "copies so that id_column names one")
    ids = areas[id_column]
    if isinstance(ids, gpd.GeoSeries):
        raise GridError(f"id_column {id_column!r} is a geometry column; name a column of "
                        "identifiers (text or integers), one per area")
    missing = np.flatnonzero(ids.isna().to_numpy())
    if missing.size:
        named = np.asarray(areas.index)[missing[:_N_NAMED]].tolist()
        raise GridError(f"id_column {id_column!r} is missing at rows {named}; fill or drop them")
    problems = _id_problems(ids)
    if problems:  # lists were accepted as ids; 2**64 - 1 and "a\x00b" failed or changed in GDAL
        rows, why = zip(*problems[:_N_NAMED], strict=True)
        named = np.asarray(areas.index)[list(rows)].tolist()
        raise GridError(f"id_column {id_column!r} holds values that are no identifier at rows "
                        f"{named} ({why[0]}); give one text or integer per area, e.g. "
                        f"areas[{id_column!r}].astype(str)")
    duplicated = ids.duplicated(keep=False).to_numpy()
    if duplicated.any():
        values = sorted(set(ids[duplicated].astype(str)))[:_N_NAMED]
        raise GridError(
            f"id_column {id_column!r} has duplicate values {values}; ids must name one area "
            "each (dissolve the areas by id first (in Python, areas.dissolve(by=...)))"
        )
    alike = ids.astype(str).duplicated(keep=False).to_numpy()
    if alike.any():  # 1 and "1": one id once written to a file, or shown in a table
        values = sorted(set(ids[alike].astype(str)))[:_N_NAMED]
        raise GridError(
            f"id_column {id_column!r} has distinct values written alike {values} (e.g. the "
            "number 1 and the text '1'); give the ids one type, e.g. "
            f"areas[{id_column!r}].astype(str), after checking they name different areas"
        )
    return ids.to_numpy()


def _area_exposure(areas: gpd.GeoDataFrame | gpd.GeoSeries, exposure: Any, kept: np.ndarray,
                   habitable: np.ndarray, ids: np.ndarray | None
                   ) -> tuple[np.ndarray | None, str]:
    """Return the exposure of the kept areas (geometric mean 1) and its source, or (None, ...).

    ``exposure`` as :meth:`Grid.from_polygons` takes it; ``habitable`` is the habitable
    geometry of the kept areas (rows ``kept`` of ``areas``), ``ids`` their identifiers if any
    (which name the areas in messages; else the index labels of ``areas``). Only the kept
    areas' values are checked: an area that ``exclude`` removes needs none.
    """
    if exposure is None:
        return None, Grid._exposure_source
    labels = np.asarray(areas.index)[kept] if ids is None else ids
    columns = ([c for c, dtype in zip(areas.columns, areas.dtypes, strict=True)
                if not isinstance(dtype, gpd.array.GeometryDtype)]
               if isinstance(areas, gpd.GeoDataFrame) else [])
    if isinstance(exposure, str) and exposure == "area" and "area" not in columns:
        values, source = shapely.area(habitable), "habitable area"
    else:
        if isinstance(exposure, str):
            given, source = _exposure_column(areas, exposure, columns), f"column {exposure}"
            name = f"exposure column {exposure!r}"
        else:
            given, source, name = (_given_exposure(exposure, areas.index), "given values",
                                   "exposure")
        values = _positive_exposure(given.iloc[kept], labels, name,
                                    "area_ids" if ids is not None else "rows")
    return _scaled_exposure(values, labels), source


def _exposure_column(areas: gpd.GeoDataFrame | gpd.GeoSeries, name: str,
                     columns: list[str]) -> pd.Series:
    """Return the column ``name`` of ``areas`` (not a geometry), or refuse it, naming why."""
    if name == "area":
        raise GridError("exposure='area' is ambiguous: areas has a column named 'area' (the "
                        "polygons' area, or that column?); rename the column (in Python, or "
                        "pass exposure=areas['area'] for the column)")
    if columns.count(name) != 1:
        geometry = isinstance(areas, gpd.GeoDataFrame) and name in areas.columns
        why = ("is a geometry column" if geometry and name not in columns
               else "is not a column" if name not in columns else "names several columns")
        raise GridError(f"exposure={name!r} {why} of areas (columns: {columns}); name one "
                        "numeric column (a population), or pass 'area'")
    return areas[name]


def _given_exposure(exposure: Any, index: pd.Index, of: str = "areas",
                    each: str = "row of areas, in their order",
                    kinds: str = "'area', the name of a column of areas, or ") -> pd.Series:
    """Return an array-like exposure as a Series on ``index`` (areas' rows, or cells), or refuse.

    ``of`` names the things counted, ``each`` one of them, ``kinds`` the other forms taken.
    """
    if isinstance(exposure, pd.Series):
        if not exposure.index.equals(index):
            raise GridError(f"exposure is a Series whose index is not that of the {of}; pass "
                            f"one value per {each} (exposure.to_numpy() in that order)")
        return exposure
    if not isinstance(exposure, np.ndarray | list | tuple | pd.api.extensions.ExtensionArray) \
            or np.ndim(exposure) != 1:
        raise GridError(f"exposure must be {kinds}one positive number per {each} (a 1-D "
                        f"array, list or Series), got {describe_value(exposure)}")
    if len(exposure) != len(index):
        raise GridError(f"exposure has {len(exposure)} values for {len(index)} {of}; give one "
                        f"per {each}")
    return pd.Series(exposure, index=index)


def _check_exposure_source(source: Any) -> None:
    """Refuse a ``source`` of :meth:`Grid.with_exposure` that would read as another exposure."""
    if not isinstance(source, str) or not source.strip() \
            or any(ord(c) < 32 or ord(c) == 127 for c in source):
        raise GridError(f"source must be a non-empty str naming the exposure, without control "
                        f"characters, got {describe_value(source)}")
    if source in (Grid._exposure_source, "habitable area") or source.startswith("column "):
        raise GridError(f"source {source!r} names an exposure geosynth sets itself (the "
                        "release metadata would misreport this one); name yours, e.g. "
                        "'population raster'")


def _positive_exposure(values: pd.Series, labels: np.ndarray, name: str, rows: str,
                       advice: str = _AREA_ADVICE) -> np.ndarray:
    """Return ``values`` as float64 after checking each is a positive finite real number.

    Numbers only: booleans, dates, durations, complex numbers and text (even ``"1e3"``) are no
    quantity of people or area (``pd.to_numeric`` read dates as nanoseconds since 1970).
    """
    dtype = values.dtype
    is_object = pd.api.types.is_object_dtype(dtype)
    if not (pd.api.types.is_numeric_dtype(dtype) or is_object) \
            or pd.api.types.is_bool_dtype(dtype) or pd.api.types.is_complex_dtype(dtype):
        raise GridError(f"{name} holds {dtype} values; give a positive number per area (a "
                        "population, or an area), stored as numbers, not text or dates")
    present = values.notna().to_numpy()
    if is_object:
        number = np.array([isinstance(v, numbers.Real | Decimal)
                           and not isinstance(v, bool | np.bool_) for v in values], dtype=bool)
        floats = np.full(len(values), np.nan)
        floats[number & present] = [float(v) for v in values[number & present]]
    else:
        number = np.ones(len(values), dtype=bool)
        floats = values.to_numpy(dtype=np.float64, na_value=np.nan)
    with np.errstate(invalid="ignore"):
        flagged = [(~number & present, "are not numbers"), (~present, "are missing"),
                   (np.isinf(floats), "are infinite"), (floats <= 0, "are zero or negative")]
    for where, what in flagged:
        if where.any():
            named = labels[np.flatnonzero(where)[:_N_NAMED]].tolist()
            raise GridError(f"{name} values at {rows} {named} {what}; {advice}")
    return floats


def _scaled_exposure(values: np.ndarray, labels: np.ndarray, unit: str = "area") -> np.ndarray:
    """Return ``values`` over their geometric mean; refuse a ratio over :data:`_EXPOSURE_SPREAD`."""
    log_values = np.log(values)
    low, high = int(np.argmin(log_values)), int(np.argmax(log_values))
    if log_values[high] - log_values[low] > math.log(_EXPOSURE_SPREAD):
        name_low, name_high = labels[[low, high]].tolist()
        raise GridError(
            f"exposure ranges from {values[low]:.3g} ({unit} {name_low!r}) to "
            f"{values[high]:.3g} ({unit} {name_high!r}), more than {_EXPOSURE_SPREAD:.0e} "
            f"times: a unit error or a sliver; check those {unit}s")
    return np.exp(log_values - log_values.mean())
