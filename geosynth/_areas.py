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

import heapq
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
    is left (or the islands are all there is). Groups are taken in the order of their smallest
    id, and a group that reaches another group made only of islands is the first group again:
    its growth is Prim's (1957) algorithm, run until it reaches an area with neighbours
    (:func:`_link_island_groups`).

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
        ``(island, nearest)`` pairs added; ties go to the smaller id of the nearest areas. A
        group's link is its ``(member, area)`` pair of smallest distance, then smallest area id,
        then smallest member id.
    """
    islands = np.flatnonzero(np.diff(adjacency.indptr) == 0)
    if islands.size == 0 or polygons.size < 2:
        return adjacency, np.empty((0, 2), dtype=np.int64)
    tree = shapely.STRtree(polygons)
    source, target = tree.query_nearest(polygons[islands], exclusive=True, all_matches=True)
    order = np.lexsort((target, source))
    source, target = source[order], target[order]
    first = np.r_[True, source[1:] != source[:-1]]
    links = np.column_stack([islands[source[first]], target[first]])
    linked = _with_links(adjacency, links)
    more = _link_island_groups(polygons, tree, linked, islands)
    if len(more):
        linked = _with_links(linked, more)
    return linked, np.concatenate([links, more]).astype(np.int64)


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


def _link_island_groups(polygons: np.ndarray, tree: shapely.STRtree, linked: sparse.csr_matrix,
                        islands: np.ndarray) -> np.ndarray:
    """Link each group made only of islands, by its nearest pair, to the nearest area outside.

    The rule is a loop: take the group (connected component of ``linked`` holding no area with
    neighbours) of smallest id, link its ``(member, area)`` pair of smallest distance (then
    smallest area id, then smallest member id), and start again until no such group is left or
    all areas are one component. A group linked to another island-only group is still the one
    of smallest id, so the loop grows it, link by link, until it reaches an area with neighbours:
    Prim's (1957) algorithm from that group. It is run so, with one component labelling and a
    list of the nearest areas of each island (:class:`_NearestAreas`), instead of a labelling
    and an STRtree of all other areas per link, quadratic in the number of island-only groups.
    """
    n_components, labels = connected_components(linked, directed=False)
    mainland = np.ones(polygons.size, dtype=bool)
    mainland[islands] = False
    anchored = np.zeros(n_components, dtype=bool)
    anchored[labels[mainland]] = True
    groups = np.flatnonzero(~anchored)
    if n_components == 1 or groups.size == 0:
        return np.empty((0, 2), dtype=np.int64)
    order = np.argsort(labels, kind="stable")
    bounds = np.searchsorted(labels[order], np.arange(n_components + 1))
    members = [order[bounds[c]:bounds[c + 1]].tolist() for c in range(n_components)]
    nearest = _NearestAreas(polygons, tree, labels, order[np.isin(labels[order], groups)])
    reached = anchored[labels]  # in a component holding an area with neighbours
    inside = np.zeros(polygons.size, dtype=bool)
    links: list[tuple[int, int]] = []
    for group in groups.tolist():
        if not reached[members[group][0]]:
            links += _grow(group, members, labels, reached, inside, nearest)
    return np.array(links, dtype=np.int64).reshape(-1, 2)


def _grow(group: int, members: list[list[int]], labels: np.ndarray, reached: np.ndarray,
          inside: np.ndarray, nearest: _NearestAreas) -> list[tuple[int, int]]:
    """Links of ``group`` (Prim's algorithm) until it reaches ``reached`` or holds all areas.

    A heap holds one ``(distance, area, member)`` entry per member: the nearest area of that
    member not yet inside the group (stale once that area joins the group, then replaced), or
    its radius when its list is used up; the used-up lists of that radius are then extended.
    """
    heap: list[tuple[float, int, int]] = []
    grown: list[int] = []
    used_up: set[int] = set()
    links: list[tuple[int, int]] = []

    def push(member: int) -> None:
        entry = nearest.entry(member, inside)
        if entry[1] == nearest.beyond:
            used_up.add(member)
        heapq.heappush(heap, entry)

    def absorb(component: int) -> None:
        inside[members[component]] = True
        grown.extend(members[component])
        for member in members[component]:
            push(member)

    absorb(group)
    while len(grown) < inside.size:
        distance, area, member = heapq.heappop(heap)
        if area == nearest.beyond and distance == nearest.radius[member]:
            # the others of this radius come next: extend them together
            due = [m for m in used_up if nearest.radius[m] <= distance]
            nearest.extend(np.array(sorted(due)))
            used_up.difference_update(due)
        elif area < nearest.beyond and not inside[area]:
            links.append((member, area))
            if reached[area]:
                break
            absorb(int(labels[area]))
        push(member)
    reached[grown] = True
    inside[grown] = False
    return links


class _NearestAreas:
    """The areas nearest to each island, by boundary distance then id, found in growing radii.

    The list of an island holds every other area within its radius (distances by
    ``shapely.distance``, the island first, as ``STRtree.query_nearest`` measures them): first a
    radius reaching an area outside the island's component, then, when the group's growth has
    used them all, a radius twice as large plus a typical area side (:meth:`extend`).

    Parameters
    ----------
    polygons : numpy.ndarray of shapely geometries, shape (n,)
        The areas.
    tree : shapely.STRtree
        Of ``polygons``.
    labels : numpy.ndarray of int, shape (n,)
        Connected component of each area.
    islands : numpy.ndarray of int
        The islands whose lists are needed.
    """

    def __init__(self, polygons: np.ndarray, tree: shapely.STRtree, labels: np.ndarray,
                 islands: np.ndarray) -> None:
        self.polygons, self.tree, self.beyond = polygons, tree, polygons.size
        # a typical area side (valid polygons have a positive area); dwithin's slack covers
        # rounding at the magnitude of the coordinates
        self.step = max(float(np.median(np.sqrt(shapely.area(polygons)))), 1e-300)
        self.rounding = 1e-9 * float(np.abs(shapely.total_bounds(polygons)).max())
        self.radius: dict[int, float] = {}
        self.near: dict[int, list[int]] = {}
        self.dist: dict[int, list[float]] = {}
        self.position: dict[int, int] = {}
        radius = np.full(islands.size, self.step)
        while islands.size:
            source, area, distance = self._within(islands, radius)
            out = np.zeros(islands.size, dtype=bool)
            out[source[labels[area] != labels[islands[source]]]] = True
            keep = out[source]
            self._store(islands[out], radius[out], np.cumsum(out)[source[keep]] - 1, area[keep],
                        distance[keep])
            islands, radius = islands[~out], 2.0 * radius[~out] + self.step

    def _within(self, islands: np.ndarray, radius: np.ndarray) -> tuple[np.ndarray, np.ndarray,
                                                                         np.ndarray]:
        """``(index in islands, area, distance)`` of the other areas within ``radius``."""
        slack = radius + 1e-9 * radius + self.rounding
        source, area = self.tree.query(self.polygons[islands], predicate="dwithin",
                                       distance=slack)
        keep = area != islands[source]
        source, area = source[keep], area[keep]
        distance = shapely.distance(self.polygons[islands[source]], self.polygons[area])
        keep = distance <= radius[source]
        return source[keep], area[keep], distance[keep]

    def _store(self, islands: np.ndarray, radius: np.ndarray, source: np.ndarray,
               area: np.ndarray, distance: np.ndarray) -> None:
        """Keep the lists of ``islands``, sorted by distance then area id."""
        order = np.lexsort((area, distance, source))
        bounds = np.searchsorted(source[order], np.arange(islands.size + 1)).tolist()
        near, dist = area[order].tolist(), distance[order].tolist()
        for i, (island, reach) in enumerate(zip(islands.tolist(), radius.tolist(), strict=True)):
            self.radius[island], self.position[island] = reach, 0
            self.near[island] = near[bounds[i]:bounds[i + 1]]
            self.dist[island] = dist[bounds[i]:bounds[i + 1]]

    def entry(self, island: int, inside: np.ndarray) -> tuple[float, int, int]:
        """``(distance, area, island)`` of the nearest area not ``inside``, or of the radius.

        ``(radius, beyond, island)``, past every area at the radius, says the list is used up.
        """
        near, at = self.near[island], self.position[island]
        while at < len(near) and inside[near[at]]:
            at += 1
        self.position[island] = at
        if at < len(near):
            return self.dist[island][at], near[at], island
        return self.radius[island], self.beyond, island

    def extend(self, islands: np.ndarray) -> None:
        """Replace the used-up lists of ``islands`` by the areas in larger rings."""
        old = np.array([self.radius[island] for island in islands.tolist()])
        reach = 2.0 * old + self.step
        source, area, distance = self._within(islands, reach)
        keep = distance > old[source]
        self._store(islands, reach, source[keep], area[keep], distance[keep])


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
