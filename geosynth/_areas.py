"""Areal units as lattice cells: validation, contiguity (libpysal), islands and point location.

The adjacency of administrative areas (tracts, districts, counties) is the contiguity of their
polygons: queen neighbours share at least a boundary point, rook neighbours a boundary segment.
It is built by :meth:`libpysal.graph.Graph.build_contiguity`, which assumes a coverage (polygons
that meet only along their boundaries); overlapping areas are refused before.

An island (an area with no neighbour, e.g. an offshore county) is its own connected component of
the ICAR prior. The usual practice of disease mappers with the BYM model is to link each island
to its nearest area instead, which :func:`link_islands` does (and a group made only of islands
to the nearest area outside it).

Point location (:class:`PolygonIndex`) resolves most points by arithmetic on a coarse bin
lattice and tests the rest against the prepared polygons through STRtree queries.
"""

from __future__ import annotations

import math

import numpy as np
import shapely
from scipy import sparse
from scipy.sparse.csgraph import connected_components

from geosynth.errors import GridError

__all__ = ["PolygonIndex", "area_contiguity", "check_no_overlap", "gap_neighbours", "link_islands",
           "pair_batches", "ranks_in_runs"]

# (point, candidate polygon) pairs tested per batch in PolygonIndex.locate: bounds the memory of
# the pairs (about 70 bytes each) whatever the number of candidates of a bin. Batches of a
# million points made 1.6 GB of pairs for 20,000 points in a bin of 1,600 small areas (a city's
# blocks beside large rural ones), and a million points there ran out of memory.
_MAX_PAIRS = 1_000_000
# Two areas overlap when their common area exceeds this fraction of the smaller one (shared
# boundaries of a coverage digitised twice leave slivers far below it).
_OVERLAP_RTOL = 1e-6
_N_NAMED = 5
# An overlap of two areas is a sliver along their common edge (rook neighbours), not a speck at a
# corner, when its smallest enclosing circle's radius squared exceeds this many times its area.
_SLIVER_ELONGATION = 8.0
# Side of the bin lattice of PolygonIndex: this many times the square root of the number of
# polygons (about 250 bins per polygon), at most _MAX_BINS_SIDE.
_BINS_PER_SQRT = 16
_MAX_BINS_SIDE = 1024


def area_contiguity(polygons: np.ndarray, rook: bool, gap: float = 0.0) -> sparse.csr_matrix:
    """Binary contiguity of ``polygons`` (queen, or rook when ``rook``), by libpysal.

    From the geometry (``strict=True``): areas are neighbours where their boundaries meet, at a
    point (queen) or along a segment (rook), also where no vertex is shared. libpysal's default
    compares vertices, which misses the T-junctions common between census tracts (a tract's
    corner in the middle of its neighbour's edge). Areas whose interiors meet in a sliver small
    enough for :func:`check_no_overlap` to accept are neighbours too: libpysal's strict rules
    see no contiguity between overlapping polygons. Rook neighbours need a sliver along an edge
    (:func:`_along_an_edge`), not a speck at a corner. With a ``gap``, areas whose boundaries
    come that close are neighbours as well (:func:`gap_neighbours`).

    Parameters
    ----------
    polygons : numpy.ndarray of shapely Polygon/MultiPolygon, shape (n,)
        A coverage: valid polygons meeting only along their boundaries (or overlapping in
        slivers of a boundary digitised twice).
    rook : bool
        Neighbours must share a boundary segment (rook), not merely a point (queen).
    gap : float, default 0
        Largest distance between the boundaries of neighbours (CRS units).

    Returns
    -------
    scipy.sparse.csr_matrix
        ``(n, n)``, symmetric, binary, no diagonal, indices sorted within each row.
    """
    import geopandas as gpd
    from libpysal.graph import Graph

    graph = Graph.build_contiguity(gpd.GeoSeries(polygons), rook=rook, strict=True)
    adjacency = sparse.csr_matrix(graph.sparse, dtype=np.float64)
    left, right = shapely.STRtree(polygons).query(polygons, predicate="intersects")
    sliver = (left != right) & shapely.relate_pattern(polygons[left], polygons[right],
                                                      "T********")
    left, right = left[sliver], right[sliver]  # interiors meet (a sliver check_no_overlap
    if rook and left.size:                     # accepts): neighbours
        left, right = _along_an_edge(polygons, left, right)
    if gap > 0:
        near_left, near_right = gap_neighbours(polygons, gap, rook)
        left, right = np.r_[left, near_left, near_right], np.r_[right, near_right, near_left]
    n = polygons.size
    adjacency = adjacency + sparse.csr_matrix((np.ones(left.size), (left, right)), shape=(n, n))
    adjacency.setdiag(0.0)  # libpysal stores an island as a zero-weight self-loop
    adjacency.eliminate_zeros()
    adjacency.data[:] = 1.0
    adjacency.sort_indices()
    return sparse.csr_matrix(adjacency)


def _along_an_edge(polygons: np.ndarray, left: np.ndarray, right: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Keep the overlapping pairs whose common area is a sliver along an edge (rook neighbours).

    A shared edge digitised twice leaves a common area far longer than wide; areas meeting at
    a corner digitised twice (a tract's corner poking into the tract diagonal to it) overlap
    in a speck about as wide as long, which made them rook neighbours. The common area counts
    as a sliver when the square of its smallest enclosing circle's radius exceeds
    :data:`_SLIVER_ELONGATION` times its area: above 8 for a strip more than about 32 times
    longer than wide, at most 1 for a square or a triangle of fair angles.
    """
    overlap = shapely.intersection(polygons[left], polygons[right])
    along = shapely.minimum_bounding_radius(overlap) ** 2 > _SLIVER_ELONGATION * shapely.area(
        overlap)
    return left[along], right[along]


def gap_neighbours(polygons: np.ndarray, gap: float, rook: bool) -> tuple[np.ndarray,
                                                                             np.ndarray]:
    """Pairs of areas whose boundaries come within ``gap``: neighbours across a digitising gap.

    Areas digitised separately rarely meet exactly: a few centimetres of gap between two
    districts made them strangers, often islands, to libpysal's strict contiguity. Queen
    neighbours across a gap are areas at most ``gap`` apart (an STRtree ``dwithin`` query, as
    libpysal's fuzzy contiguity with ``buffer=gap/2``). Rook neighbours must also run along each
    other: the overlap of the two areas grown by ``gap/2`` is longer than ``2·gap`` (its
    smallest enclosing circle has a radius above ``gap``), where areas meeting at a corner
    overlap within a disk of radius about ``0.71·gap``. So a shared edge shorter than about
    ``2·gap`` counts as a corner: ``gap`` must be far below the shortest shared edge.

    Parameters
    ----------
    polygons : numpy.ndarray of shapely Polygon/MultiPolygon, shape (n,)
        The areas.
    gap : float
        Largest distance between the boundaries of neighbours (CRS units), > 0.
    rook : bool
        Rook contiguity (a shared stretch of boundary) rather than queen.

    Returns
    -------
    left, right : numpy.ndarray of intp
        Each pair once, ``left < right``.
    """
    left, right = shapely.STRtree(polygons).query(polygons, predicate="dwithin", distance=gap)
    pair = left < right
    left, right = left[pair], right[pair]
    if rook and left.size:
        grown = shapely.buffer(polygons, gap / 2)
        overlap = shapely.intersection(grown[left], grown[right])
        along = shapely.minimum_bounding_radius(overlap) > gap
        left, right = left[along], right[along]
    return left, right


def check_no_overlap(polygons: np.ndarray, name: str, labels: np.ndarray | None = None) -> None:
    """Refuse areas whose interiors overlap (a point would belong to two areas).

    Parameters
    ----------
    polygons : numpy.ndarray of shapely Polygon/MultiPolygon, shape (n,)
        The areas.
    name : str
        How the caller's argument is called, for the message.
    labels : numpy.ndarray, shape (n,), optional
        Row labels of the areas (their frame's index), by which the message names them, as
        the other checks of the areas do; row positions by default.

    Raises
    ------
    geosynth.errors.GridError
        Naming the first overlapping pairs and the fix.
    """
    tree = shapely.STRtree(polygons)
    left, right = tree.query(polygons, predicate="intersects")
    pair = left < right
    left, right = left[pair], right[pair]
    if left.size == 0:
        return
    common = shapely.area(shapely.intersection(polygons[left], polygons[right]))
    smaller = np.minimum(shapely.area(polygons[left]), shapely.area(polygons[right]))
    bad = np.flatnonzero(common > _OVERLAP_RTOL * smaller)
    if bad.size:
        labels = (np.arange(polygons.size) if labels is None else np.asarray(labels)).tolist()
        pairs = ", ".join(f"({labels[left[k]]!r}, {labels[right[k]]!r})" for k in bad[:_N_NAMED])
        more = f" and {bad.size - _N_NAMED} more" if bad.size > _N_NAMED else ""
        raise GridError(
            f"{name} overlap: rows {pairs}{more} share interior area, so a point could belong "
            "to two areas; areas must form a coverage (meet only along boundaries): clean them "
            "first, e.g. with geopandas.overlay or GeoSeries.union_all per area"
        )


def link_islands(polygons: np.ndarray, adjacency: sparse.csr_matrix) -> tuple[sparse.csr_matrix,
                                                                               np.ndarray]:
    """Link every area without a neighbour to its nearest area (smallest boundary distance).

    This is the usual practice of disease mappers with the BYM model (libpysal's
    ``attach_islands`` links the same pairs). Taken alone it can pair two islands with each
    other: two offshore areas nearer to each other than to the mainland would form a two-area
    component of their own, which the user asked to connect. So a group made only of islands is
    then linked, by its nearest pair, to the nearest area outside the group, until no such group
    is left (or the islands are all there is).

    Parameters
    ----------
    polygons : numpy.ndarray of shapely geometries, shape (n,)
        The areas.
    adjacency : scipy.sparse.csr_matrix
        Binary symmetric contiguity.

    Returns
    -------
    adjacency : scipy.sparse.csr_matrix
        With the new links in both directions.
    links : numpy.ndarray of int64, shape (k, 2)
        ``(island, nearest)`` pairs added; ties go to the smaller id of the nearest areas.
    """
    islands = np.flatnonzero(np.diff(adjacency.indptr) == 0)
    if islands.size == 0 or polygons.size < 2:
        return adjacency, np.empty((0, 2), dtype=np.int64)
    tree = shapely.STRtree(polygons)
    source, target = tree.query_nearest(polygons[islands], exclusive=True, all_matches=True)
    order = np.lexsort((target, source))
    source, target = source[order], target[order]
    first = np.r_[True, source[1:] != source[:-1]]
    links = [np.column_stack([islands[source[first]], target[first]])]
    linked = _with_links(adjacency, links[0])
    while (group := _island_group(linked, islands)) is not None:
        links.append(_nearest_outside(polygons, group))
        linked = _with_links(linked, links[-1])
    return linked, np.concatenate(links).astype(np.int64)


def _with_links(adjacency: sparse.csr_matrix, links: np.ndarray) -> sparse.csr_matrix:
    """``adjacency`` with the ``(a, b)`` pairs of ``links`` added in both directions."""
    n = adjacency.shape[0]
    extra = sparse.csr_matrix(
        (np.ones(2 * len(links)), (np.r_[links[:, 0], links[:, 1]], np.r_[links[:, 1],
                                                                          links[:, 0]])),
        shape=(n, n),
    )
    linked = sparse.csr_matrix(adjacency + extra)
    linked.data[:] = 1.0
    linked.sort_indices()
    return linked


def _island_group(adjacency: sparse.csr_matrix, islands: np.ndarray) -> np.ndarray | None:
    """Members of the first connected component made only of islands, unless it is all areas."""
    n_components, labels = connected_components(adjacency, directed=False)
    if n_components == 1:
        return None
    mainland = np.ones(adjacency.shape[0], dtype=bool)
    mainland[islands] = False
    touched = np.zeros(n_components, dtype=bool)
    touched[labels[mainland]] = True
    only_islands = np.flatnonzero(~touched)
    return None if only_islands.size == 0 else np.flatnonzero(labels == only_islands[0])


def _nearest_outside(polygons: np.ndarray, group: np.ndarray) -> np.ndarray:
    """Find the ``(member, area)`` pair of smallest boundary distance from ``group`` to the rest."""
    outside = np.setdiff1d(np.arange(polygons.size), group)
    tree = shapely.STRtree(polygons[outside])
    (source, target), distance = tree.query_nearest(polygons[group], return_distance=True,
                                                    all_matches=True)
    best = np.lexsort((group[source], outside[target], distance))[0]
    return np.array([[group[source[best]], outside[target[best]]]])


class PolygonIndex:
    """Point location in a set of polygons through a coarse bin lattice and an STRtree.

    The bins are queried once against an STRtree of the polygons: a bin lying in the interior
    of one polygon (``contains_properly``) resolves its points by arithmetic alone; the points
    of a bin crossed by a boundary are tested (``intersects_xy`` on the prepared polygons)
    against those of that bin's candidate polygons whose bounding box holds them, in batches
    of at most :data:`_MAX_PAIRS` (point, candidate) pairs.

    Parameters
    ----------
    polygons : numpy.ndarray of shapely geometries, shape (k,)
        The cells; a point intersecting several (a shared boundary) goes to the smallest index.
    """

    def __init__(self, polygons: np.ndarray) -> None:
        self.polygons = polygons
        self.bounds = shapely.bounds(polygons)
        shapely.prepare(polygons)
        x0, y0, x1, y1 = shapely.total_bounds(polygons)
        side = max(2, min(_MAX_BINS_SIDE, int(math.ceil(_BINS_PER_SQRT * math.sqrt(
            polygons.size)))))
        self.origin = (float(x0), float(y0))
        self.upper = (float(x1), float(y1))
        self.n_bins = side
        self.step = (max(float(x1 - x0), 1e-300) / side, max(float(y1 - y0), 1e-300) / side)
        col, row = np.meshgrid(np.arange(side), np.arange(side))
        bx = x0 + col.ravel() * self.step[0]
        by = y0 + row.ravel() * self.step[1]
        # Closed boxes, slightly enlarged, so every polygon a point of the bin may touch is a
        # candidate despite rounding of the bin arithmetic.
        pad = 1e-9 * max(self.step)
        boxes = shapely.box(bx - pad, by - pad, bx + self.step[0] + pad, by + self.step[1] + pad)
        bin_id, cell = shapely.STRtree(polygons).query(boxes, predicate="intersects")
        order = np.lexsort((cell, bin_id))
        bin_id, cell = bin_id[order], cell[order]
        self.start = np.searchsorted(bin_id, np.arange(side * side + 1))
        self.candidates = cell
        single = np.diff(self.start) == 1
        first = self.start[:-1][single]
        inside = shapely.contains_properly(polygons[cell[first]], boxes[single])
        self.bin_cell = np.full(side * side, -1, dtype=np.int64)
        self.bin_cell[np.flatnonzero(single)[inside]] = cell[first][inside]

    def locate(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Index of the polygon each point intersects, or -1 (NaN coordinates give -1).

        Parameters
        ----------
        x, y : numpy.ndarray of float64, shape (n,)
            Coordinates.

        Returns
        -------
        numpy.ndarray of int64, shape (n,)
        """
        # Within the polygons' bounds (NaN compares False): the bin of a far point overflowed
        # ("overflow encountered in divide").
        (x0, y0), (x1, y1) = self.origin, self.upper
        finite = (x >= x0) & (x <= x1) & (y >= y0) & (y <= y1)
        col = np.floor((np.where(finite, x, x0) - x0) / self.step[0])
        row = np.floor((np.where(finite, y, y0) - y0) / self.step[1])
        # A point on the max edge of the extent belongs to the last bin.
        col = np.where(col == self.n_bins, self.n_bins - 1, col)
        row = np.where(row == self.n_bins, self.n_bins - 1, row)
        in_bins = finite & (col >= 0) & (col < self.n_bins) & (row >= 0) & (row < self.n_bins)
        position = np.where(in_bins, row * self.n_bins + col, 0).astype(np.int64)
        cell = np.where(in_bins, self.bin_cell[position], -1)
        rest = np.flatnonzero(in_bins & (cell < 0))
        count = np.diff(self.start)[position[rest]]
        rest, count = rest[count > 0], count[count > 0]  # a bin without polygon: -1 already
        for start, stop in pair_batches(count, _MAX_PAIRS):
            chunk = rest[start:stop]
            cell[chunk] = self._test_candidates(position[chunk], x[chunk], y[chunk])
        return cell

    def _test_candidates(self, position: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Smallest candidate polygon of its bin intersecting each point, or -1."""
        lo, hi = self.start[position], self.start[position + 1]
        count = hi - lo
        point = np.repeat(np.arange(position.size), count)
        offset = ranks_in_runs(count)
        candidate = self.candidates[np.repeat(lo, count) + offset]
        px, py = x[point], y[point]
        # Only candidates whose bounding box holds the point can hold it (a comparison of
        # numbers, where the bin of a dense cluster has hundreds of candidates).
        box = self.bounds[candidate]
        near = np.flatnonzero((box[:, 0] <= px) & (px <= box[:, 2]) & (box[:, 1] <= py)
                              & (py <= box[:, 3]))
        hit = near[shapely.intersects_xy(self.polygons[candidate[near]], px[near], py[near])]
        cell = np.full(position.size, np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(cell, point[hit], candidate[hit])
        cell[cell == np.iinfo(np.int64).max] = -1
        return cell


def pair_batches(count: np.ndarray, max_pairs: int) -> list[tuple[int, int]]:
    """Split items ``0 .. len(count) - 1`` into runs whose ``count`` sum to at most ``max_pairs``.

    A run holds at least one item, so an item of more pairs is a run of its own.

    Parameters
    ----------
    count : numpy.ndarray of int, shape (n,)
        Pairs of each item (e.g. candidate polygons of each point).
    max_pairs : int
        The most pairs of a run of several items.

    Returns
    -------
    list of tuple of int
        ``(start, stop)`` of each run, in order, covering every item.
    """
    total = np.cumsum(count)
    runs, start = [], 0
    while start < count.size:
        before = int(total[start - 1]) if start else 0
        stop = max(start + 1, int(np.searchsorted(total, before + max_pairs, side="right")))
        runs.append((start, stop))
        start = stop
    return runs


def ranks_in_runs(count: np.ndarray) -> np.ndarray:
    """Rank ``0 .. count[i] - 1`` of each element of ``np.repeat(items, count)`` in its run.

    Parameters
    ----------
    count : numpy.ndarray of int, shape (n,)
        Length of each run.

    Returns
    -------
    numpy.ndarray of int64, shape (count.sum(),)
    """
    return np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
