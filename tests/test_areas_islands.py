"""link_islands: the same links as the loop it replaced, on random layouts with ties.

The reference below is the implementation before the group phase ran as Prim's algorithm: one
component labelling and one STRtree of all other areas per link, quadratic in the number of
groups made only of islands.
"""

from __future__ import annotations

import numpy as np
import pytest
import shapely
from scipy import sparse
from scipy.sparse.csgraph import connected_components

from geosynth._areas import area_contiguity, link_islands


def _reference(polygons, adjacency):
    islands = np.flatnonzero(np.diff(adjacency.indptr) == 0)
    if islands.size == 0 or polygons.size < 2:
        return adjacency, np.empty((0, 2), dtype=np.int64)
    tree = shapely.STRtree(polygons)
    source, target = tree.query_nearest(polygons[islands], exclusive=True, all_matches=True)
    order = np.lexsort((target, source))
    source, target = source[order], target[order]
    first = np.r_[True, source[1:] != source[:-1]]
    links = [np.column_stack([islands[source[first]], target[first]])]
    linked = _reference_with_links(adjacency, links[0])
    while (group := _reference_island_group(linked, islands)) is not None:
        links.append(_reference_nearest_outside(polygons, group))
        linked = _reference_with_links(linked, links[-1])
    return linked, np.concatenate(links).astype(np.int64)


def _reference_with_links(adjacency, links):
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


def _reference_island_group(adjacency, islands):
    n_components, labels = connected_components(adjacency, directed=False)
    if n_components == 1:
        return None
    mainland = np.ones(adjacency.shape[0], dtype=bool)
    mainland[islands] = False
    touched = np.zeros(n_components, dtype=bool)
    touched[labels[mainland]] = True
    only_islands = np.flatnonzero(~touched)
    return None if only_islands.size == 0 else np.flatnonzero(labels == only_islands[0])


def _reference_nearest_outside(polygons, group):
    outside = np.setdiff1d(np.arange(polygons.size), group)
    tree = shapely.STRtree(polygons[outside])
    (source, target), distance = tree.query_nearest(polygons[group], return_distance=True,
                                                    all_matches=True)
    best = np.lexsort((group[source], outside[target], distance))[0]
    return np.array([[group[source[best]], outside[target[best]]]])


def _cells(seed):
    """Boxes on a lattice, corners at quarters (many equal distances), some whole cells
    (touching: a mainland, maybe none, maybe several pieces), some rotated and clipped."""
    rng = np.random.default_rng(seed)
    k = int(rng.integers(3, 12))
    whole, occupied, rotate = rng.uniform(0, 0.5), rng.uniform(0.2, 0.9), rng.uniform() < 0.3
    polygons = []
    for i in range(k):
        for j in range(k):
            if rng.uniform() > occupied:
                continue
            if rng.uniform() < whole:
                polygons.append(shapely.box(i, j, i + 1, j + 1))
                continue
            a, c = np.sort(rng.choice(5, 2, replace=False)) / 4
            b, d = np.sort(rng.choice(5, 2, replace=False)) / 4
            box = shapely.box(i + a, j + b, i + c, j + d)
            if rotate:
                box = shapely.intersection(shapely.affinity.rotate(box, rng.uniform(0, 90)),
                                           shapely.box(i, j, i + 1, j + 1))
                if box.geom_type != "Polygon" or box.is_empty:
                    continue
            polygons.append(box)
    polygons = np.array(polygons, dtype=object)
    return polygons[rng.permutation(polygons.size)]


def _archipelago(seed):
    """A mainland of small squares and groups of 1-5 islands spread far from it and from each
    other (the nearest areas of an island are then found in several growing radii)."""
    rng = np.random.default_rng(seed)
    side = 0.25
    w, h = rng.integers(1, 12, size=2)
    x, y = np.meshgrid(np.arange(w) * side, np.arange(h) * side)
    polygons = list(shapely.box(x.ravel(), y.ravel(), x.ravel() + side, y.ravel() + side))
    spacing = float(rng.choice([1.0, 2.0, 4.0]))
    for g in range(int(rng.integers(2, 40))):
        col, row = divmod(g, 6)
        x0 = w * side + spacing * (1 + col) + rng.integers(0, 3) * 0.25
        y0 = (spacing + 2.5) * row + rng.integers(0, 3) * 0.25
        for m in range(int(rng.integers(1, 6))):
            gap = 0.25 * int(rng.integers(1, 3))
            polygons.append(shapely.box(x0, y0 + m * 0.5, x0 + gap, y0 + m * 0.5 + 0.25))
    polygons = np.array(polygons, dtype=object)
    return polygons[rng.permutation(polygons.size)]


def _assert_same(polygons, rook):
    adjacency = area_contiguity(polygons, rook=rook)
    expected_adjacency, expected = _reference(polygons, adjacency)
    linked, links = link_islands(polygons, adjacency)
    assert links.dtype == np.int64
    np.testing.assert_array_equal(links, expected)
    assert (linked != expected_adjacency).nnz == 0
    return adjacency, links


@pytest.mark.parametrize("seed", range(150))
def test_links_are_those_of_the_loop_on_lattice_layouts_with_ties(seed):
    polygons = _cells(seed)
    if polygons.size >= 2:
        _assert_same(polygons, rook=bool(seed % 2))


@pytest.mark.parametrize("seed", range(40))
def test_links_are_those_of_the_loop_on_archipelagos(seed):
    adjacency, links = _assert_same(_archipelago(seed), rook=False)
    islands = np.count_nonzero(np.diff(adjacency.indptr) == 0)
    assert len(links) >= islands


def test_groups_go_by_smallest_id_and_one_reaching_another_goes_on():
    # Islands 0 and 2 are a pair, 1 and 3 another; 0-3 and 2-1 are equally near (0.75), nearer
    # than the mainland (4, 5). The group of smallest id {0, 2} takes the pair of smallest
    # outside id, 2-1, then the group {0, 1, 2, 3} its nearest pair, 0-4. Taking {1, 3} first,
    # or both groups at once, would link 3-0 instead.
    polygons = np.array([
        shapely.box(0, 0, 1, 1), shapely.box(1.5, 1.75, 2.5, 2.75), shapely.box(1.5, 0, 2.5, 1),
        shapely.box(0, 1.75, 1, 2.75), shapely.box(-3, 0, -2, 1), shapely.box(-4, 0, -3, 1),
    ], dtype=object)
    adjacency = area_contiguity(polygons, rook=False)
    linked, links = link_islands(polygons, adjacency)
    assert links.tolist() == [[0, 2], [1, 3], [2, 0], [3, 1], [2, 1], [0, 4]]
    assert connected_components(linked, directed=False)[0] == 1
    np.testing.assert_array_equal(links, _reference(polygons, adjacency)[1])


def test_areas_all_islands_far_apart_are_chained_as_the_loop_chains_them():
    # No area with neighbours: the group of area 0 grows until it holds every area.
    rng = np.random.default_rng(3)
    corners = rng.choice(400, size=30, replace=False)
    polygons = np.array([shapely.box(5 * (c % 20), 5 * (c // 20), 5 * (c % 20) + 0.25,
                                     5 * (c // 20) + 0.25) for c in corners], dtype=object)
    adjacency, links = _assert_same(polygons, rook=False)
    assert connected_components(_reference(polygons, adjacency)[0], directed=False)[0] == 1


def test_one_tree_and_one_labelling_whatever_the_number_of_island_groups(monkeypatch):
    # 60 pairs of islands, each pair nearer to itself than to anything else: the loop built an
    # STRtree of all other areas and labelled all components once per pair (quadratic).
    import geosynth._areas as areas

    mainland = [shapely.box(i, 0, i + 1, 1) for i in range(10)]
    pairs = [shapely.box(x, y, x + 0.4, y + 0.4) for p in range(60)
             for x, y in ((12 + 3 * (p % 10), 3 * (p // 10)),
                          (12.6 + 3 * (p % 10), 3 * (p // 10)))]
    polygons = np.array(mainland + pairs, dtype=object)
    adjacency = area_contiguity(polygons, rook=False)
    built, labelled, tree = [], [], shapely.STRtree
    monkeypatch.setattr(areas.shapely, "STRtree", lambda geoms: built.append(1) or tree(geoms))
    monkeypatch.setattr(areas, "connected_components",
                        lambda *a, **k: labelled.append(1) or connected_components(*a, **k))
    _, links = link_islands(polygons, adjacency)
    assert len(links) == 120 + 60
    assert len(built) == 1 and len(labelled) == 1
