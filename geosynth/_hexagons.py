"""Arithmetic of regular hexagonal lattices: layout, polygons, neighbours and point location.

A hexagonal lattice of side ``s`` (the distance from a centre to a corner) is laid out in "odd-r"
offset coordinates (Patel, *Hexagonal Grids*, Red Blob Games 2013): row ``r`` and column ``c``
with ``r = 0`` the southernmost row; odd rows are shifted half a hexagon east. The computations
are done for **pointy-top** hexagons in coordinates ``(u, v)``; a **flat-top** lattice is the
same lattice with x and y swapped (the reflection in the line ``y = x`` maps a pointy-top
hexagon to a flat-top one), so ``(u, v) = (y, x)`` there.

Every corner lies on the vertex lattice ``u = u0 + i * sqrt(3) s / 2``, ``v = v0 + j * s / 2``
with integer ``i, j``; polygons are built from those integers so that neighbouring hexagons share
bit-identical corners (contiguity from shared coordinates, as libpysal computes it, then finds
every neighbour).

Point location is arithmetic: fractional axial coordinates, rounded in cube coordinates, then
converted to row and column; no geometry is touched.
"""

from __future__ import annotations

import math
from decimal import Decimal
from typing import NamedTuple

import numpy as np
import shapely
from scipy import sparse

__all__ = [
    "HexLayout",
    "hex_around",
    "hex_layout",
    "hex_locate",
    "hex_neighbours",
    "hex_polygons",
    "hex_positions_meeting",
]

_SQRT3 = math.sqrt(3.0)
# Corners of a pointy-top hexagon on the vertex lattice, counter-clockwise from the east-north-east
# corner, relative to the centre (2c + (r & 1), 3r).
_CORNERS_I = np.array([1, 0, -1, -1, 0, 1], dtype=np.int64)
_CORNERS_J = np.array([1, 2, 1, -1, -2, -1], dtype=np.int64)
# Axial neighbour steps (dq, dr), in increasing order of the offset position they lead to.
_AXIAL_STEPS = ((0, -1), (1, -1), (-1, 0), (1, 0), (-1, 1), (0, 1))
# Float64 steps of rounding (of the coordinates and of the offsets in sides) that a point may be
# off its hexagon's edge by (_edge_slack): a safe margin over the few roundings of either.
_ROUNDING_STEPS = 16


class HexLayout(NamedTuple):
    """A rectangle of ``nrows x ncols`` hexagon positions.

    Attributes
    ----------
    origin : tuple of float
        ``(u0, v0)``: the centre of row 0, column 0 in lattice coordinates.
    size : float
        Side of a hexagon (centre to corner).
    nrows, ncols : int
        Rows and columns of the offset lattice.
    flat : bool
        True for flat-top hexagons (coordinates swapped).
    """

    origin: tuple[float, float]
    size: float
    nrows: int
    ncols: int
    flat: bool


def hex_layout(bounds: tuple[float, float, float, float], size: float, flat: bool) -> HexLayout:
    """Smallest offset lattice whose hexagons cover ``bounds``, origin at its south-west corner.

    Parameters
    ----------
    bounds : tuple of float
        ``(xmin, ymin, xmax, ymax)`` to cover.
    size : float
        Hexagon side (centre to corner).
    flat : bool
        Flat-top hexagons.

    Returns
    -------
    HexLayout
        Points with ``u >= u0`` and ``v >= v0`` fall in rows and columns ``>= 0``; the counts are
        large enough that every point of ``bounds`` falls in a hexagon of the layout.
    """
    xmin, ymin, xmax, ymax = bounds
    u0, v0, u1, v1 = (ymin, xmin, ymax, xmax) if flat else (xmin, ymin, xmax, ymax)
    # A point is at most `size` above the centre row of its hexagon, and at most half a width
    # (plus the half-width shift of odd rows) right of its centre column.
    rows, cols = (v1 - v0 + size) / (1.5 * size), (u1 - u0) / (_SQRT3 * size) + 0.5
    if not math.isfinite(rows * cols):  # past float64 (a vanishing size): count in Decimal,
        # for the caller's refusal by number of cells
        side = Decimal(size)
        rows = (Decimal(v1) - Decimal(v0) + side) / (Decimal("1.5") * side)
        cols = (Decimal(u1) - Decimal(u0)) / (Decimal(_SQRT3) * side) + Decimal("0.5")
    nrows = int(math.floor(rows)) + 1
    ncols = int(math.floor(cols)) + 2
    return HexLayout((float(u0), float(v0)), float(size), nrows, ncols, bool(flat))


def _corner_coordinates(layout: HexLayout, i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, ...]:
    u = layout.origin[0] + i * (_SQRT3 * layout.size / 2)
    v = layout.origin[1] + j * (layout.size / 2)
    return (v, u) if layout.flat else (u, v)


def hex_polygons(layout: HexLayout, row: np.ndarray, col: np.ndarray) -> np.ndarray:
    """Hexagons at the given offset positions, as shapely Polygons (counter-clockwise).

    Parameters
    ----------
    layout : HexLayout
        The lattice.
    row, col : numpy.ndarray of int64
        Offset coordinates, same shape ``(n,)``.

    Returns
    -------
    numpy.ndarray of object, shape (n,)
    """
    ci = 2 * col + (row & 1)
    cj = 3 * row
    i = ci[:, None] + _CORNERS_I[None, :]
    j = cj[:, None] + _CORNERS_J[None, :]
    x, y = _corner_coordinates(layout, i, j)
    if layout.flat:
        # Swapping the axes reverses the orientation; keep exteriors counter-clockwise.
        x, y = x[:, ::-1], y[:, ::-1]
    rings = np.stack([x, y], axis=-1)
    return shapely.polygons(rings)


def hex_positions_meeting(layout: HexLayout, box: tuple[float, float, float, float]
                          ) -> tuple[np.ndarray, np.ndarray]:
    """Offset positions ``row * ncols + col`` whose hexagon meets the interior of ``box``.

    A hexagon whose bounding box lies within ``box`` meets it, one whose bounding box is apart
    from the interior of ``box`` does not (both read from the vertex lattice, bit-identical to
    the corners of :func:`hex_polygons`); only the hexagons crossing the border of ``box`` are
    intersected with it. Intersecting every hexagon took 23 s of the 29 s of a lattice of a
    million hexagons (about 100 s at :data:`geosynth.lattice.MAX_CELLS`).

    Parameters
    ----------
    layout : HexLayout
        The lattice.
    box : tuple of float
        ``(xmin, ymin, xmax, ymax)``.

    Returns
    -------
    positions : numpy.ndarray of int64, sorted
    polygons : numpy.ndarray of object
        The hexagons at those positions.
    """
    position = np.arange(layout.nrows * layout.ncols, dtype=np.int64)
    row, col = np.divmod(position, layout.ncols)
    ci, cj = 2 * col + (row & 1), 3 * row
    # The extreme corners: i - 1 and i + 1 across, j - 2 and j + 2 along (_CORNERS_I, _J).
    x0, y0 = _corner_coordinates(layout, ci - 1, cj - 2)
    x1, y1 = _corner_coordinates(layout, ci + 1, cj + 2)
    del ci, cj
    xmin, ymin, xmax, ymax = box
    meets = (x0 >= xmin) & (x1 <= xmax) & (y0 >= ymin) & (y1 <= ymax)
    apart = (x1 <= xmin) | (x0 >= xmax) | (y1 <= ymin) | (y0 >= ymax)
    border = np.flatnonzero(~meets & ~apart)
    crossing = hex_polygons(layout, row[border], col[border])
    meets[border] = shapely.area(shapely.intersection(crossing, shapely.box(*box))) > 0
    return position[meets], hex_polygons(layout, row[meets], col[meets])


def hex_neighbours(
    layout: HexLayout, row: np.ndarray, col: np.ndarray, lattice_to_cell: np.ndarray
) -> sparse.csr_matrix:
    """Six-neighbour adjacency of the kept hexagons (fewer on the border), vectorised.

    Parameters
    ----------
    layout : HexLayout
        The lattice.
    row, col : numpy.ndarray of int64
        Offset coordinates of each kept cell, in cell-id order.
    lattice_to_cell : numpy.ndarray of int64
        Cell id of each offset position ``row * ncols + col``; -1 where no cell is kept.

    Returns
    -------
    scipy.sparse.csr_matrix
        Binary, symmetric, indices sorted within each row.
    """
    around = hex_around(layout, row, col)[:, 1:]
    other = np.where(around >= 0, lattice_to_cell[np.maximum(around, 0)], -1)
    keep = other >= 0
    i = np.broadcast_to(np.arange(row.size)[:, None], other.shape)[keep]
    n = row.size
    adjacency = sparse.csr_matrix((np.ones(i.size), (i, other[keep])), shape=(n, n))
    adjacency.sort_indices()
    return adjacency


def hex_around(layout: HexLayout, row: np.ndarray, col: np.ndarray) -> np.ndarray:
    """Offset positions of each hexagon and its six neighbours; -1 outside the layout.

    Parameters
    ----------
    layout : HexLayout
        The lattice.
    row, col : numpy.ndarray of int64, shape (n,)
        Offset coordinates (may lie outside the layout).

    Returns
    -------
    numpy.ndarray of int64, shape (n, 7)
        Positions ``row * ncols + col``, the hexagon itself first.
    """
    q = col - (row - (row & 1)) // 2
    out = np.full((row.size, 1 + len(_AXIAL_STEPS)), -1, dtype=np.int64)
    for k, (dq, dr) in enumerate(((0, 0), *_AXIAL_STEPS)):
        r2 = row + dr
        c2 = q + dq + (r2 - (r2 & 1)) // 2
        inside = (r2 >= 0) & (r2 < layout.nrows) & (c2 >= 0) & (c2 < layout.ncols)
        out[inside, k] = r2[inside] * layout.ncols + c2[inside]
    return out


def hex_locate(layout: HexLayout, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, ...]:
    """Offset row and column of the hexagon containing each point (cube rounding).

    Parameters
    ----------
    layout : HexLayout
        The lattice.
    x, y : numpy.ndarray of float64
        Coordinates (finite).

    Returns
    -------
    row, col : numpy.ndarray of int64
        Outside the layout they are out of ``0..nrows-1`` / ``0..ncols-1``.
    near_edge : numpy.ndarray of bool
        Points within a relative ``1e-9`` of their hexagon's boundary, or within a few float64
        steps of the coordinates (:func:`_edge_slack`), where rounding may pick either side:
        the caller decides them geometrically.
    """
    u, v = (y, x) if layout.flat else (x, y)
    du = (u - layout.origin[0]) / layout.size
    dv = (v - layout.origin[1]) / layout.size
    q = du * (_SQRT3 / 3) - dv / 3
    r = dv * (2 / 3)
    s = -q - r
    rq, rr, rs = np.rint(q), np.rint(r), np.rint(s)
    eq, er, es = np.abs(rq - q), np.abs(rr - r), np.abs(rs - s)
    fix_q = (eq > er) & (eq > es)
    fix_r = ~fix_q & (er > es)
    rq = np.where(fix_q, -rr - rs, rq)
    rr = np.where(fix_r, -rq - rs, rr)
    row = rr.astype(np.int64)
    col = rq.astype(np.int64) + (row - (row & 1)) // 2
    # Offset from the chosen centre, in sides, along the three edge normals of a pointy hexagon
    # (0, 60 and 120 degrees); the hexagon is where all three are at most sqrt(3)/2.
    cu = du - _SQRT3 * (rq + rr / 2)
    cv = dv - 1.5 * rr
    reach = np.maximum(np.abs(cu), np.abs(cu / 2 + cv * (_SQRT3 / 2)))
    reach = np.maximum(reach, np.abs(-cu / 2 + cv * (_SQRT3 / 2)))
    near_edge = reach > (_SQRT3 / 2) * (1 - 1e-9) - _edge_slack(layout, u, v, du, dv)
    return row, col, near_edge


def _edge_slack(layout: HexLayout, u: np.ndarray, v: np.ndarray, du: np.ndarray,
                dv: np.ndarray) -> np.ndarray:
    """How far (in sides) rounding may move a point across its hexagon's edge.

    The corners of :func:`hex_polygons` are rounded to a float64 step of the coordinates, and
    the offsets of :func:`hex_locate` to a step of themselves: with small hexagons far from the
    CRS origin (0.5 m hexagons at a UTM northing of 7.5e6) that is far more than ``1e-9``
    sides, and a point on an edge or corner went to a hexagon other than the smallest one
    holding it, or one not holding it, or to none.
    """
    magnitude = np.maximum(np.abs(u), np.abs(v))
    magnitude = np.maximum(magnitude, max(abs(layout.origin[0]), abs(layout.origin[1])))
    steps = magnitude / layout.size + np.abs(du) + np.abs(dv)
    return _ROUNDING_STEPS * np.finfo(np.float64).eps * steps
