"""Greedy closest-pair matching of original and synthetic points (Nunes 2018, Algorithm 1).

Nunes (2018, §3.3, Algorithm 1) measures disclosure risk by the distances between original and
synthetic locations of the same attribute combination: take the matrix of all original × synthetic
distances, repeatedly record its smallest entry, and delete that entry's row and column, until one
side is used up. The recorded distances (Tables 4–6 report their minimum and mean) are the
distances of a *greedy matching*.

The matrix algorithm costs O(n²) memory and O(n³) time. :func:`greedy_match` returns exactly the
same matching in O(n log n) expected time, using two facts:

1. Order the pairs by ``(distance, original index, synthetic index)`` lexicographically; this is a
   strict total order, so Algorithm 1 with that tie-breaking rule (what ``numpy.argmin`` does on
   the row-major original × synthetic matrix) has a unique result (:func:`greedy_match` first
   indexes each side in ``(x, y)`` order, see *Ties* below). Under this order the globally
   smallest remaining pair ``(i, j)`` is a *mutual nearest-neighbour pair*: ``j`` is the nearest
   remaining synthetic point of ``i`` when synthetic points are ranked by ``(distance, j)``, and
   ``i`` the nearest remaining original point of ``j`` ranked by ``(distance, i)``.
2. Conversely, every mutual nearest-neighbour pair (under the same ranking) is matched by
   Algorithm 1: no pair containing ``i`` or ``j`` precedes it, so both are still unmatched when the
   algorithm reaches it, and matching it first does not change any other decision. Mutual
   nearest-neighbour pairs may therefore be matched in any order.

Mutual pairs are found with the *nearest-neighbour chain* (as in agglomerative clustering): from
an unmatched point follow nearest neighbours, alternating sides, until the last two points are
each other's nearest neighbour; match them, pop them, and continue from the rest of the chain.
Pair keys strictly decrease along a chain, so it never cycles, and points stay on the chain until
they are matched, so the whole matching needs O(n_orig + n_synth) nearest-neighbour queries. The
queries run in numba on kd-trees that support deletion: each node keeps the number of its
unmatched points and their smallest index, so exhausted subtrees are skipped and exact ties are
resolved by index without scanning every tied point.

We deliberately do not use rounds of "match every mutual pair found with
:class:`scipy.spatial.cKDTree`, rebuild, repeat": it gives the same result, but each round only
matches the currently mutual pairs, and the tail needs hundreds of rounds for uniform points (774
rounds at 10⁵ per side) and O(n) rounds for chains of points with decreasing gaps.

Distances are computed as ``sqrt(dx*dx + dy*dy)`` in float64 with ``dx = x_orig - x_synth``
(``numpy.hypot`` can differ in the last bit, which matters for exact ties). Ties are exact
equality of these floats.

Ties. Which of two equally distant pairs is matched first can change the later matches and so
the matched distances: originals at x = 0 and 2, synthetic points at x = 1 and -1 give
distances (1, 3) when the synthetic point at 1 is indexed first and (1, 1) otherwise. Breaking
ties by row number made the risk measures (:func:`geosynth.metrics.distance_risk`) depend on how
the rows happen to be stored, and ties are common: coordinates snapped to a grid, or homes in one
building. :func:`greedy_match` therefore ranks each side by ``(x, y)`` (stably, so coincident
points keep their row order) and breaks ties by these ranks: the matched distances are then a
function of the two point sets alone, whatever the row order.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any, NamedTuple

import geopandas as gpd
import numpy as np
import pandas as pd
from numba import njit

from geosynth._messages import describe_rows as _rows
from geosynth._points import point_coordinates
from geosynth._validation import (
    MAX_CONTINUOUS,
    check_real_array,
    check_unique_columns,
    describe_value,
    is_sequence,
)
from geosynth.errors import CRSError, InputError, InputTypeError
from geosynth.lattice import require_projected_crs

__all__ = ["GreedyMatch", "greedy_match", "greedy_match_distances"]

#: Points per kd-tree leaf; any value >= 1 gives the same matching.
_LEAF_SIZE = 16
_SHOW_ROWS = 5


class GreedyMatch(NamedTuple):
    """Result of :func:`greedy_match`: matched pairs in the order Algorithm 1 matches them.

    Attributes
    ----------
    distances : numpy.ndarray of float64, shape (k,)
        Distance of each matched pair, ``k = min(n_orig, n_synth)``; non-decreasing.
    original_index : numpy.ndarray of int64, shape (k,)
        Row of the original point of each pair (0-based position in ``original_xy``).
    synthetic_index : numpy.ndarray of int64, shape (k,)
        Row of the synthetic point of each pair (0-based position in ``synthetic_xy``).
    """

    distances: np.ndarray
    original_index: np.ndarray
    synthetic_index: np.ndarray


def greedy_match(original_xy: Any, synthetic_xy: Any) -> GreedyMatch:
    """Greedy closest-pair matching of original and synthetic points (Nunes 2018, Algorithm 1).

    Repeatedly pairs the globally closest remaining original and synthetic point and removes both,
    until one side is used up. The result is identical to running Algorithm 1 on the full
    distance matrix, ties included, but needs only O(n) memory and O(n log n) expected time (see
    the module notes): 10⁶ points per side take seconds.

    Parameters
    ----------
    original_xy, synthetic_xy : array-like of shape (n, 2), GeoSeries or GeoDataFrame
        Point coordinates (projected, e.g. metres). GeoSeries/GeoDataFrames must hold points and
        share their CRS. Either side may be empty.

    Returns
    -------
    GreedyMatch
        ``(distances, original_index, synthetic_index)``, each of length
        ``min(n_orig, n_synth)``, sorted by ``(distance, original index, synthetic index)``.

    Raises
    ------
    TypeError
        Coordinates that are not real numbers (booleans, text, complex numbers).
    geosynth.errors.InputError
        Coordinates are not an ``(n, 2)`` array of finite values up to ``MAX_CONTINUOUS`` in
        absolute value, or geometries are missing, empty or not points (a z coordinate is
        ignored: distances are planar).
    geosynth.errors.CRSError
        The two GeoSeries/GeoDataFrames have different CRSs (or only one has a CRS), or one is
        geographic (degrees).

    Notes
    -----
    Ties are broken by the points' ``(x, y)`` order, not their row numbers: among equally
    distant pairs, the one whose original point comes first when the originals are sorted by
    ``(x, y)`` wins, then the one whose synthetic point comes first in that order; coincident
    points are taken in row order. This is Algorithm 1 with ``numpy.argmin`` on the row-major
    matrix of the points sorted by ``(x, y)``. The matched distances therefore do not depend on
    the order of the rows (the module notes show a tie that changed them). An R implementation
    on unsorted rows (``which.min`` scans column-major) may pair tied points differently.

    Examples
    --------
    Two originals and three synthetic points on a line. The closest pair is (original 1,
    synthetic 2) at distance 1; then original 0 takes the nearer remaining synthetic point 0 at
    distance 2; synthetic 1 stays unmatched.

    >>> m = greedy_match([[0.0, 0.0], [10.0, 0.0]], [[2.0, 0.0], [5.0, 0.0], [11.0, 0.0]])
    >>> m.distances.tolist(), m.original_index.tolist(), m.synthetic_index.tolist()
    ([1.0, 2.0], [1, 0], [2, 0])
    """
    _check_pair_crs(original_xy, synthetic_xy)
    a = as_xy(original_xy, "original_xy")
    b = as_xy(synthetic_xy, "synthetic_xy")
    return _match_in_xy_order(a, b, _LEAF_SIZE)


def greedy_match_distances(original_xy: Any, synthetic_xy: Any) -> np.ndarray:
    """Distances of the greedy closest-pair matching (Nunes 2018, Algorithm 1).

    Parameters
    ----------
    original_xy, synthetic_xy : array-like of shape (n, 2), GeoSeries or GeoDataFrame
        Point coordinates, as in :func:`greedy_match`.

    Returns
    -------
    numpy.ndarray of float64, shape (min(n_orig, n_synth),)
        Matched distances in the order they are matched (non-decreasing). Use
        :func:`greedy_match` for the matched pairs.

    Raises
    ------
    geosynth.errors.InputError
        Invalid coordinates (see :func:`greedy_match`).
    geosynth.errors.CRSError
        The two inputs have different CRSs.

    Examples
    --------
    >>> greedy_match_distances([[0, 0], [3, 4]], [[0, 1], [3, 4]]).tolist()
    [0.0, 1.0]
    """
    return greedy_match(original_xy, synthetic_xy).distances


def _check_pair_crs(original_xy: Any, synthetic_xy: Any) -> None:
    """Refuse two frames whose CRSs differ (one without a CRS too) or are in degrees.

    Arrays carry no CRS and pass; a frame without a CRS next to one with a CRS does not: its
    coordinates may be in other units, and every distance would silently be wrong.
    """
    frames = {name: value for name, value in (("original_xy", original_xy),
                                               ("synthetic_xy", synthetic_xy))
              if isinstance(value, gpd.GeoDataFrame | gpd.GeoSeries)}
    if len(frames) == 2:
        crs_a, crs_b = original_xy.crs, synthetic_xy.crs
        if (crs_a is None) != (crs_b is None) or (
            crs_a is not None and not crs_a.equals(crs_b, ignore_axis_order=True)
        ):
            shown = ["no CRS" if c is None else f"CRS {c.to_string()}" for c in (crs_a, crs_b)]
            raise CRSError(
                f"original_xy has {shown[0]} but synthetic_xy has {shown[1]}; reproject one "
                "with .to_crs(other.crs) (or set a missing CRS with .set_crs)"
            )
    for name, value in frames.items():
        require_projected_crs(value.crs, name)  # distances in degrees mean nothing


# --------------------------------------------------------------------------- driver


def _match_in_xy_order(a: np.ndarray, b: np.ndarray, leaf_size: int) -> GreedyMatch:
    """Greedy matching with ties broken by ``(x, y)`` rank, then row: row order is irrelevant."""
    order_a = np.lexsort((a[:, 1], a[:, 0]))  # stable: coincident points keep their row order
    order_b = np.lexsort((b[:, 1], b[:, 0]))
    m = _greedy_match_arrays(a[order_a], b[order_b], leaf_size)
    ia, ib = order_a[m.original_index], order_b[m.synthetic_index]
    order = np.lexsort((ib, ia, m.distances))
    return GreedyMatch(m.distances[order], ia[order], ib[order])


def _greedy_match_arrays(a: np.ndarray, b: np.ndarray, leaf_size: int) -> GreedyMatch:
    """Greedy matching of validated ``(n, 2)`` float64 arrays with kd-tree leaves of leaf_size."""
    if a.shape[0] == 0 or b.shape[0] == 0:
        empty = np.empty(0, dtype=np.int64)
        return GreedyMatch(np.empty(0), empty, empty.copy())
    tree_a = _build_tree(a, leaf_size)
    tree_b = _build_tree(b, leaf_size)
    ia, ib = _greedy_chain(a, b, tree_a, tree_b)
    d = pair_distance(a[ia], b[ib])
    order = np.lexsort((ib, ia, d))
    return GreedyMatch(d[order], ia[order], ib[order])


def pair_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise Euclidean distance ``sqrt(dx*dx + dy*dy)`` of two ``(n, 2)`` arrays.

    This is the formula :func:`greedy_match` orders pairs by; use it wherever distances must
    agree with the matching to the last bit.

    Parameters
    ----------
    a, b : numpy.ndarray, shape (n, 2)
        Coordinates.

    Returns
    -------
    numpy.ndarray of float64, shape (n,)
    """
    dx = a[:, 0] - b[:, 0]
    dy = a[:, 1] - b[:, 1]
    return np.sqrt(dx * dx + dy * dy)


# --------------------------------------------------------------------------- numba kernels
# A tree is the tuple (txy, perm, pos, leaf, lo, hi, left, right, parent, box, count, min_idx,
# dead): points reordered into leaf order (txy[k] = xy[perm[k]], pos = inverse of perm), the leaf
# of each point, the [lo, hi) range, children and parent of each node, its bounding box
# (xmin, xmax, ymin, ymax) over all its points, and the number and smallest index of its
# unmatched points; dead[k] marks matched points by tree position.


@njit(cache=True)
def select_rank(perm, xy, axis, lo, hi, k):  # pragma: no cover - numba
    """Reorder ``perm[lo:hi]`` by ``xy[:, axis]`` so that position k holds its rank (select).

    Quickselect with a median-of-three pivot and Hoare's partition; the kd-trees of the
    greedy matching and of :func:`geosynth.metrics.risk.spatial_k_anonymity` split by it.
    """
    hi -= 1
    while hi > lo:
        mid = (lo + hi) // 2
        a = xy[perm[lo], axis]
        b = xy[perm[mid], axis]
        c = xy[perm[hi], axis]
        if a > b:
            a, b = b, a
        if b > c:
            b = c
            if a > b:
                b = a
        pivot = b  # median of three
        i = lo
        j = hi
        while i <= j:  # Hoare partition: equal keys are swapped, so duplicates split evenly
            while xy[perm[i], axis] < pivot:
                i += 1
            while xy[perm[j], axis] > pivot:
                j -= 1
            if i <= j:
                t = perm[i]
                perm[i] = perm[j]
                perm[j] = t
                i += 1
                j -= 1
        if k <= j:
            hi = j
        elif k >= i:
            lo = i
        else:
            break


@njit(cache=True)
def _build_tree(xy, leaf_size):  # pragma: no cover - numba
    """Median-split kd-tree over ``xy`` (split on the wider side of each node's box)."""
    n = xy.shape[0]
    perm = np.arange(n)
    cap = 2 * (2 * n // leaf_size + 1) + 1
    lo = np.empty(cap, np.int64)
    hi = np.empty(cap, np.int64)
    left = np.full(cap, -1, np.int64)
    right = np.full(cap, -1, np.int64)
    parent = np.full(cap, -1, np.int64)
    box = np.empty((cap, 4))
    todo = np.empty(cap, np.int64)
    lo[0] = 0
    hi[0] = n
    n_nodes = 1
    sp = 1
    todo[0] = 0
    while sp > 0:
        sp -= 1
        node = todo[sp]
        start = lo[node]
        stop = hi[node]
        x0 = np.inf
        x1 = -np.inf
        y0 = np.inf
        y1 = -np.inf
        for k in range(start, stop):
            x = xy[perm[k], 0]
            y = xy[perm[k], 1]
            x0 = min(x0, x)
            x1 = max(x1, x)
            y0 = min(y0, y)
            y1 = max(y1, y)
        box[node, 0] = x0
        box[node, 1] = x1
        box[node, 2] = y0
        box[node, 3] = y1
        if stop - start <= leaf_size:
            continue
        axis = 0 if (x1 - x0) >= (y1 - y0) else 1
        mid = (start + stop) // 2
        select_rank(perm, xy, axis, start, stop, mid)
        c = n_nodes
        n_nodes += 2
        lo[c] = start
        hi[c] = mid
        lo[c + 1] = mid
        hi[c + 1] = stop
        parent[c] = node
        parent[c + 1] = node
        left[node] = c
        right[node] = c + 1
        todo[sp] = c
        todo[sp + 1] = c + 1
        sp += 2
    txy = np.empty((n, 2))
    pos = np.empty(n, np.int64)
    leaf = np.empty(n, np.int64)
    for k in range(n):
        txy[k, 0] = xy[perm[k], 0]
        txy[k, 1] = xy[perm[k], 1]
        pos[perm[k]] = k
    count = np.zeros(n_nodes, np.int64)
    min_idx = np.empty(n_nodes, np.int64)
    for node in range(n_nodes - 1, -1, -1):  # children are created after their parent
        if left[node] < 0:
            count[node] = hi[node] - lo[node]
            m = n
            for k in range(lo[node], hi[node]):
                leaf[perm[k]] = node
                m = min(m, perm[k])
            min_idx[node] = m
        else:
            count[node] = count[left[node]] + count[right[node]]
            min_idx[node] = min(min_idx[left[node]], min_idx[right[node]])
    dead = np.zeros(n, np.bool_)
    return (
        txy,
        perm,
        pos,
        leaf,
        lo[:n_nodes].copy(),
        hi[:n_nodes].copy(),
        left[:n_nodes].copy(),
        right[:n_nodes].copy(),
        parent[:n_nodes].copy(),
        box[:n_nodes].copy(),
        count,
        min_idx,
        dead,
    )


@njit(cache=True)
def _mindist(box, node, qx, qy):  # pragma: no cover - numba
    """Distance from (qx, qy) to the node's box, a lower bound of its points' distances.

    Rounding is monotone, so for a point p in the box ``fl(|qx - px|) >= fl(dx_box)`` and the
    bound holds for the computed distances too: pruning never drops a point it should keep.
    """
    dx = 0.0
    if qx < box[node, 0]:
        dx = box[node, 0] - qx
    elif qx > box[node, 1]:
        dx = qx - box[node, 1]
    dy = 0.0
    if qy < box[node, 2]:
        dy = box[node, 2] - qy
    elif qy > box[node, 3]:
        dy = qy - box[node, 3]
    return np.sqrt(dx * dx + dy * dy)


@njit(cache=True)
def _delete(tree, p):  # pragma: no cover - numba
    """Mark point p matched and update counts and smallest indices up to the root."""
    perm, pos, leaf = tree[1], tree[2], tree[3]
    lo, hi, left, right, parent = tree[4], tree[5], tree[6], tree[7], tree[8]
    count, min_idx, dead = tree[10], tree[11], tree[12]
    n = perm.size
    dead[pos[p]] = True
    node = leaf[p]
    count[node] -= 1
    m = n
    for k in range(lo[node], hi[node]):
        if not dead[k]:
            m = min(m, perm[k])
    min_idx[node] = m
    node = parent[node]
    while node >= 0:
        count[node] -= 1
        min_idx[node] = min(min_idx[left[node]], min_idx[right[node]])
        node = parent[node]


@njit(cache=True)
def _nearest(tree, qx, qy, stack):  # pragma: no cover - numba
    """Unmatched point of ``tree`` minimising ``(distance to (qx, qy), index)``."""
    txy, perm = tree[0], tree[1]
    lo, hi, left, right = tree[4], tree[5], tree[6], tree[7]
    box, count, min_idx, dead = tree[9], tree[10], tree[11], tree[12]
    best_d = np.inf
    best_i = perm.size
    sp = 1
    stack[0] = 0
    while sp > 0:
        sp -= 1
        node = stack[sp]
        if count[node] == 0:
            continue
        md = _mindist(box, node, qx, qy)
        # Keep a node whose bound ties the best: it may hold a tied point with a smaller index.
        if md > best_d or (md == best_d and min_idx[node] > best_i):
            continue
        if left[node] < 0:
            for k in range(lo[node], hi[node]):
                if dead[k]:
                    continue
                dx = qx - txy[k, 0]
                dy = qy - txy[k, 1]
                d = np.sqrt(dx * dx + dy * dy)
                if d < best_d or (d == best_d and perm[k] < best_i):
                    best_d = d
                    best_i = perm[k]
        else:
            near = left[node]
            far = right[node]
            if _mindist(box, far, qx, qy) < _mindist(box, near, qx, qy):
                near, far = far, near
            stack[sp] = far  # visit the nearer child first
            stack[sp + 1] = near
            sp += 2
    return best_i


@njit(cache=True)
def _greedy_chain(xy_a, xy_b, tree_a, tree_b):  # pragma: no cover - numba
    """Nearest-neighbour chain over two deletable kd-trees; returns matched (a, b) rows."""
    n_a = xy_a.shape[0]
    n_b = xy_b.shape[0]
    n = min(n_a, n_b)
    out_a = np.empty(n, np.int64)
    out_b = np.empty(n, np.int64)
    chain = np.empty(n_a + n_b + 1, np.int64)
    stack = np.empty(2 * (tree_a[4].size + tree_b[4].size) + 8, np.int64)
    # Every pair holds one point of the smaller side, so chains need only start there; starting
    # on the larger side would query points that may never be matched.
    start_side = 0 if n_a <= n_b else 1
    starts = tree_a[1] if start_side == 0 else tree_b[1]  # leaf order: spatially coherent
    pos_a, dead_a = tree_a[2], tree_a[12]
    pos_b, dead_b = tree_b[2], tree_b[12]
    m = 0
    for t in range(starts.size):
        if m == n:
            break
        s = starts[t]
        if start_side == 0:
            if dead_a[pos_a[s]]:
                continue
        elif dead_b[pos_b[s]]:
            continue
        chain[0] = s
        depth = 1
        while depth > 0:
            top = chain[depth - 1]
            side = (start_side + depth - 1) % 2
            if side == 0:
                nn = _nearest(tree_b, xy_a[top, 0], xy_a[top, 1], stack)
            else:
                nn = _nearest(tree_a, xy_b[top, 0], xy_b[top, 1], stack)
            if depth >= 2 and chain[depth - 2] == nn:
                a = top if side == 0 else nn
                b = nn if side == 0 else top
                _delete(tree_a, a)
                _delete(tree_b, b)
                out_a[m] = a
                out_b[m] = b
                m += 1
                depth -= 2
                if m == n:
                    break
            else:
                chain[depth] = nn
                depth += 1
    return out_a, out_b


# --------------------------------------------------------------------------- point inputs
# Shared by geosynth.metrics.risk and geosynth.metrics.utility.


def as_xy(points: Any, name: str) -> np.ndarray:
    """Return validated float64 ``(n, 2)`` coordinates of an array-like or GeoSeries/GeoDataFrame.

    Parameters
    ----------
    points : array-like of shape (n, 2), GeoSeries or GeoDataFrame
        Coordinates or point geometries.
    name : str
        Parameter name used in error messages.

    Returns
    -------
    numpy.ndarray of float64, shape (n, 2)

    Raises
    ------
    TypeError
        An array of something other than real numbers: booleans, text (also ``"1.5"``),
        complex numbers, None (:func:`geosynth._validation.check_real_array`).
    geosynth.errors.InputError
        Not an ``(n, 2)`` array, a masked array with masked entries, non-finite coordinates or
        coordinates beyond ``MAX_CONTINUOUS`` in absolute value, or missing, empty, non-point or
        3-D geometries. Messages name rows, never a coordinate.
    """
    if isinstance(points, gpd.GeoDataFrame | gpd.GeoSeries):
        return frame_xy(points, name)
    arr = check_real_array(points, name, "an (n, 2) array of x, y coordinates")
    if arr.shape in ((0,), (0, 2)):  # no points, e.g. []
        return np.empty((0, 2))
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise InputError(
            f"{name} must be an (n, 2) array of x, y coordinates, got shape {arr.shape}; "
            "stack coordinates with numpy.column_stack([x, y])"
        )
    bad = np.flatnonzero(~np.isfinite(arr).all(axis=1))
    if bad.size:
        raise InputError(
            f"{name} has {bad.size} rows with NaN or infinite coordinates (rows "
            f"{bad[:_SHOW_ROWS].tolist()}); drop or fix them"
        )
    _check_magnitude(arr, name, lambda far: f"rows {np.flatnonzero(far)[:_SHOW_ROWS].tolist()}")
    return np.ascontiguousarray(arr)


def frame_xy(frame: gpd.GeoDataFrame | gpd.GeoSeries, name: str) -> np.ndarray:
    """Return validated ``(n, 2)`` coordinates of the points of a GeoDataFrame/GeoSeries.

    Parameters
    ----------
    frame : GeoDataFrame or GeoSeries
        Point geometries.
    name : str
        Parameter name used in error messages.

    Returns
    -------
    numpy.ndarray of float64, shape (n, 2)

    Raises
    ------
    geosynth.errors.InputError
        Missing, empty or non-point geometries, non-finite coordinates, or coordinates beyond
        ``MAX_CONTINUOUS`` in absolute value.

    Notes
    -----
    A z coordinate is ignored: the measures are planar, as a map shows the points. Two points
    that differ only in height are at distance 0, the conservative reading for disclosure.
    """
    xy = point_coordinates(frame, name)
    _check_magnitude(xy, name, lambda far: _rows(frame.index, far))
    return xy


def _check_magnitude(xy: np.ndarray, name: str, rows: Any) -> None:
    """Refuse coordinates beyond ``MAX_CONTINUOUS``: their squared distances overflow to inf."""
    far = (np.abs(xy) > MAX_CONTINUOUS).any(axis=1)
    if far.any():
        raise InputError(
            f"{name} has {int(far.sum())} points with |x| or |y| above {MAX_CONTINUOUS:g} "
            f"({rows(far)}), where distances overflow; no projected CRS reaches that: check "
            "the CRS and the units of the coordinates"
        )


def as_releases(releases: Any) -> list[gpd.GeoDataFrame]:
    """Return ``releases`` (one GeoDataFrame or a sequence of them) as a non-empty list.

    Parameters
    ----------
    releases : GeoDataFrame or sequence of GeoDataFrame
        The m synthetic releases.

    Returns
    -------
    list of GeoDataFrame

    Raises
    ------
    geosynth.errors.InputTypeError
        Neither a GeoDataFrame nor a list, tuple or 1-d array of them (a 0-d array raised
        "iteration over a 0-d array").
    geosynth.errors.InputError
        Empty, or an item is not a GeoDataFrame.
    """
    items = [releases] if isinstance(releases, gpd.GeoDataFrame) else releases
    if not is_sequence(items):  # a 0-d array raised "iteration over a 0-d array"
        raise InputTypeError(
            f"releases must be a GeoDataFrame or a list of GeoDataFrames, got "
            f"{type(releases).__name__}"
        )
    items = list(items)
    if not items:
        raise InputError("releases is empty; pass the list of synthetic GeoDataFrames")
    for k, item in enumerate(items):
        if not isinstance(item, gpd.GeoDataFrame):
            raise InputError(
                f"releases[{k}] must be a geopandas.GeoDataFrame, got {type(item).__name__}"
            )
    return items


def check_frames(
    original: Any, releases: list[gpd.GeoDataFrame], projected: bool = True, name: str = ""
) -> None:
    """Check that ``original`` is a GeoDataFrame sharing its CRS with every release.

    Parameters
    ----------
    original : GeoDataFrame
        The confidential points.
    releases : list of GeoDataFrame
        Output of :func:`as_releases`.
    projected : bool, default True
        Also refuse a geographic CRS (distances in degrees are meaningless).
    name : str, optional
        What the caller calls its one release (``"release"``); default ``releases[k]``.

    Raises
    ------
    geosynth.errors.InputError
        ``original`` is not a GeoDataFrame.
    geosynth.errors.CRSError
        A release's CRS differs from the original's, or the CRS is geographic.
    """
    if not isinstance(original, gpd.GeoDataFrame):
        raise InputError(
            f"original must be a geopandas.GeoDataFrame, got {type(original).__name__}; build "
            "one with geopandas.GeoDataFrame(df, geometry=geopandas.points_from_xy(x, y, crs=...))"
        )
    crs = original.crs
    for k, release in enumerate(releases):
        other = release.crs
        same = (crs is None and other is None) or (
            crs is not None and other is not None and crs.equals(other, ignore_axis_order=True)
        )
        if not same:
            shown = "no CRS" if other is None else other.to_string()
            mine = "no CRS" if crs is None else crs.to_string()
            raise CRSError(
                f"{name or f'releases[{k}]'} has {shown} but original has {mine}; reproject "
                "with release.to_crs(original.crs) (or set the missing CRS with set_crs)"
            )
    if projected and crs is not None and crs.is_geographic:
        raise CRSError(
            f"original uses the geographic CRS {crs.to_string()} (degrees), so distances would "
            "be in degrees; reproject everything with gdf.to_crs(gdf.estimate_utm_crs())"
        )


def as_columns(columns: str | Sequence[str], name: str) -> list[str]:
    """Return a column name or a sequence of names as a non-empty list without duplicates.

    Parameters
    ----------
    columns : str or sequence of str
        Column names.
    name : str
        Parameter name used in error messages.

    Returns
    -------
    list of str

    Raises
    ------
    geosynth.errors.InputTypeError
        Not a str, a sequence or a 1-d array (e.g. None, a number, a 0-d array), or an entry
        is no column name (a list or an array).
    geosynth.errors.InputError
        Empty, or duplicated names.
    """
    if not (isinstance(columns, str) or is_sequence(columns)):  # 0-d array: no items
        raise InputTypeError(
            f"{name} must be a column name or a list of column names, got "
            f"{type(columns).__name__}; e.g. {name}=['y']"
        )
    cols = [columns] if isinstance(columns, str) else list(columns)
    unnamed = sorted({type(c).__name__ for c in cols if not isinstance(c, Hashable)})
    if unnamed:  # an array entry: "truth value ... is ambiguous" in the duplicate check
        raise InputTypeError(f"{name} must list column names, got {', '.join(unnamed)} entries; "
                             f"e.g. {name}=['y']")
    if not cols:
        raise InputError(f"{name} is empty; name at least one attribute column")
    duplicated = sorted({c for c in cols if cols.count(c) > 1}, key=str)
    if duplicated:
        raise InputError(f"{name} lists {duplicated} more than once; name each column once")
    return cols


#: What :func:`pandas.api.types.infer_dtype` calls levels that are numbers (True == 1 too).
_NUMBER_LEVELS = frozenset({"integer", "floating", "mixed-integer-float", "decimal", "boolean"})


def _level_kind(column: pd.Series) -> str | None:
    """Return ``"numbers"`` or ``"text"`` for the levels of ``column``, None if mixed or empty."""
    if not column.notna().any():
        return None
    values = column.cat.categories if isinstance(column.dtype, pd.CategoricalDtype) else column
    inferred = pd.api.types.infer_dtype(values, skipna=True)
    if inferred in _NUMBER_LEVELS:
        return "numbers"
    return "text" if inferred == "string" else None


def check_level_types(
    frames: list[pd.DataFrame], names: list[str], cols: list[str], role: str = "attribute column"
) -> None:
    """Refuse a release whose levels are text where the original's are numbers, or back.

    ``frames[0]`` is the original; ``names`` name the frames in the messages.

    Combinations compare by value and type: the text ``"1"`` is not the number ``1``. A release
    read back from a file with other column types shared no combination with the original, and
    every table said "no synthetic record" (NaN distances, no risk) without a word. Only the
    kinds of the columns are compared (no level is named), so a release whose levels happen to
    miss the original's, as a noisy ε-DP release of few records may, is measured as it is.
    """
    for column in cols:
        kinds = [_level_kind(frame[column]) for frame in frames]
        for kind, name in zip(kinds[1:], names[1:], strict=True):
            if kinds[0] is not None and kind is not None and kind != kinds[0]:
                raise InputError(
                    f"{role} {column!r} holds {kinds[0]} in original but {kind} in "
                    f"{name}; levels compare by value and type (the text '1' is not the number "
                    f"1), so no record of {name} would be compared with an original record and "
                    "the tables would show no risk: give the column the same type in every "
                    f"frame, e.g. {name}[{column!r}].astype(original[{column!r}].dtype) (is "
                    "original the data the releases were made from?)"
                )



def check_columns(frame: pd.DataFrame, columns: list[str], frame_name: str, role: str) -> None:
    """Check that ``columns`` exist in ``frame`` (not the geometry) and hold no missing values.

    Parameters
    ----------
    frame : DataFrame
        The table to check.
    columns : list of str
        Required columns.
    frame_name : str
        Name of ``frame`` in error messages (e.g. ``"releases[2]"``).
    role : str
        What the columns are (e.g. ``"by column"``), for error messages.

    Raises
    ------
    geosynth.errors.InputError
        A column is missing, names several columns of ``frame``, or has missing values (an
        InputTypeError if a name is an array or list).
    """
    geometry = getattr(getattr(frame, "geometry", None), "name", None)
    available = [c for c in frame.columns if c != geometry]
    for column in columns:
        if not isinstance(column, Hashable):  # an array: "truth value ... is ambiguous"
            raise InputTypeError(f"{role} must be a column name (a str), got "
                                 f"{describe_value(column)}")
        if column == geometry or column not in available:
            raise InputError(
                f"{role} {column!r} is not a column of {frame_name}; available columns: {available}"
            )
        check_unique_columns(frame, frame_name, [column])  # else the measures crashed
        bad = frame[column].isna().to_numpy()
        if bad.any():
            raise InputError(
                f"{role} {column!r} of {frame_name} has {int(bad.sum())} missing values "
                f"({_rows(frame.index, bad)}); drop those rows or fill them with an explicit level"
            )

