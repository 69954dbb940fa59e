"""Grid.without_links_across: links cut where a river, railway or motorway separates cells."""

import pickle
import warnings

import geopandas as gpd
import numpy as np
import pytest
import shapely

import geosynth
from geosynth import Grid
from geosynth.errors import DataWarning, GridError, IsolatedCellWarning

RIVER = shapely.LineString([(2, -1), (2, 5)])  # along the lattice line x = 2 of a 4 x 4 grid


def _pairs(grid):
    """The links of ``grid`` as a set of (i, j), i < j."""
    coo = grid.adjacency.tocoo()
    return {(int(i), int(j)) for i, j in zip(coo.row, coo.col, strict=True) if i < j}


@pytest.mark.parametrize("pieces", [
    gpd.GeoSeries([shapely.LineString([(2, -1), (2, 2)]), shapely.LineString([(2, 2), (2, 5)])]),
    shapely.MultiLineString([[(2, -1), (2, 2)], [(2, 5), (2, 2)]]),  # the second one reversed
    gpd.GeoSeries([shapely.LineString([(2, y), (2, y + 1)]) for y in range(-1, 5)]),
    # a repeated vertex at the joint (snapped to a grid): its first step was (0, 0)
    shapely.MultiLineString([[(2, -1), (2, 2), (2, 2)], [(2, 2), (2, 2), (2, 5)]]),
])
def test_a_river_in_pieces_cuts_the_links_through_its_joints(pieces):
    # Each piece ends where the next begins: a diagonal link through a joint at a lattice
    # corner only touched each piece, and stayed across the river (8 cut of 10, 1 component).
    grid = Grid.regular((0, 0, 4, 4), shape=(4, 4))
    whole = grid.without_links_across(RIVER)
    split = grid.without_links_across(pieces)
    assert _pairs(split) == _pairs(whole) and split.n_components == 2


def test_a_confluence_cuts_its_three_banks_apart():
    # Three pieces ending at the corner (2, 2): the links through it join cells of different
    # banks, the north-west and south-west ones across the river that runs north-south.
    grid = Grid.regular((0, 0, 4, 4), shape=(4, 4))
    split = grid.without_links_across(shapely.MultiLineString(
        [[(2, -1), (2, 2)], [(2, 2), (2, 5)], [(2, 2), (5, 2)]]))
    centre = shapely.get_coordinates(shapely.centroid(np.asarray(grid.cells.geometry)))
    west, north = centre[:, 0] < 2, centre[:, 1] > 2
    banks = [split.component[mask] for mask in (west, ~west & north, ~west & ~north)]
    assert split.n_components == 3
    assert [len(set(bank.tolist())) for bank in banks] == [1, 1, 1]
    assert len({int(bank[0]) for bank in banks}) == 3


def test_a_link_beside_a_bend_or_an_end_of_the_pieces_is_kept():
    # Pieces meeting in an L at the corner (2, 2) leave the diagonal link from the south-west
    # cell to the north-east one outside the bend: it crosses neither arm. One piece ending
    # there alone (the river's source) is no crossing either.
    grid = Grid.regular((0, 0, 4, 4), shape=(4, 4))
    corner = grid.locate(gpd.points_from_xy([1.5, 2.5], [1.5, 2.5])).tolist()
    bend = grid.without_links_across(
        shapely.MultiLineString([[(2, -1), (2, 2)], [(2, 2), (5, 2)]]))
    source = grid.without_links_across(shapely.LineString([(2, -1), (2, 2)]))
    for split in (bend, source):
        assert tuple(sorted(corner)) in _pairs(split)


@pytest.mark.parametrize(("contiguity", "n_cut"), [("rook", 4), ("queen", 10)])
def test_a_river_cuts_exactly_the_links_that_cross_it(contiguity, n_cut):
    grid = Grid.regular((0, 0, 4, 4), shape=(4, 4), contiguity=contiguity)
    split = grid.without_links_across(RIVER)
    # Derived from the geometry: a link crosses x = 2 iff one cell is in columns 0-1 and the
    # other in columns 2-3 (4 rook links across, and 3 rows x 2 diagonals for queen).
    col = grid.cell_col
    crossing = {(i, j) for i, j in _pairs(grid) if (col[i] < 2) != (col[j] < 2)}
    assert len(crossing) == n_cut
    assert _pairs(split) == _pairs(grid) - crossing
    assert {tuple(p) for p in split.cut_links.tolist()} == crossing
    assert split.n_cut_links == n_cut and split.n_components == 2
    assert (split.adjacency != split.adjacency.T).nnz == 0
    assert np.array_equal(split.component, (col >= 2).astype(np.int64))
    # The cells are the same; the lattice it was made from is untouched.
    assert np.array_equal(split.habitable_fraction, grid.habitable_fraction)
    assert grid.n_cut_links == 0 and grid.n_components == 1
    assert split.cells["n_neighbours"].tolist() == split.n_neighbours.tolist()


def test_a_barrier_that_does_not_separate_the_cells_points_leaves_their_link():
    # A short line inside the first column separates no two cell centres.
    grid = Grid.regular((0, 0, 4, 4), shape=(4, 4), contiguity="rook")
    stub = shapely.LineString([(0.2, 0.2), (0.4, 0.4)])
    with pytest.warns(DataWarning, match="barriers cut no link"):
        same = grid.without_links_across(stub)
    assert _pairs(same) == _pairs(grid) and same.n_cut_links == 0


def test_barriers_in_another_crs_are_reprojected():
    grid = Grid.regular((600_000, 7_790_000, 604_000, 7_794_000), shape=(4, 4),
                        crs="EPSG:31983", contiguity="rook")
    line = shapely.LineString([(602_000, 7_789_000), (602_000, 7_795_000)])
    river = gpd.GeoSeries([line], crs="EPSG:31983").to_crs(4326)
    split = grid.without_links_across(river)
    assert split.n_cut_links == 4 and split.n_components == 2


def test_polygon_barriers_cut_what_exclude_alone_leaves_linked():
    # A canal 0.2 wide along x = 2: excluded, it leaves both banks' cells (80 % habitable)
    # linked across it; as a barrier too, it cuts them.
    canal = shapely.box(1.9, -1, 2.1, 5)
    grid = Grid.regular((0, 0, 4, 4), shape=(4, 4), contiguity="rook", exclude=canal)
    assert grid.n_components == 1
    split = grid.without_links_across(gpd.GeoDataFrame(geometry=[canal]))
    assert split.n_cut_links == 4 and split.n_components == 2
    # The representative points are in the habitable parts (not the excluded canal).
    points = shapely.point_on_surface(split.habitable_geometry)
    assert not shapely.intersects(points, canal).any()


def test_cuts_accumulate_and_compare_like_any_lattice():
    grid = Grid.regular((0, 0, 4, 4), shape=(4, 4), contiguity="rook")
    north_south = grid.without_links_across(RIVER)
    both = north_south.without_links_across(shapely.LineString([(-1, 2), (5, 2)]))
    assert both.n_cut_links == 8 and both.n_components == 4
    assert north_south != grid and north_south == grid.without_links_across(RIVER)
    assert hash(north_south) == hash(grid.without_links_across(RIVER))
    assert pickle.loads(pickle.dumps(both)) == both


def test_a_cell_cut_off_from_every_neighbour_warns_as_an_island():
    grid = Grid.regular((0, 0, 4, 4), shape=(4, 4), contiguity="rook")
    ring = shapely.box(-0.5, -0.5, 1, 1).boundary  # around cell 0 only
    with pytest.warns(IsolatedCellWarning, match=r"fewer barriers"):
        split = grid.without_links_across(ring)
    assert split.n_neighbours[0] == 0 and split.n_components == 2


def test_hexagonal_and_areal_lattices_are_cut_too():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IsolatedCellWarning)
        hexagons = Grid.hexagonal((0, 0, 1000, 1000), cell_size=100)
    middle = shapely.LineString([(500, -100), (500, 1100)])
    split = hexagons.without_links_across(middle)
    centres = shapely.get_coordinates(shapely.point_on_surface(hexagons.habitable_geometry))
    west = centres[:, 0] < 500
    crossing = {(i, j) for i, j in _pairs(hexagons) if west[i] != west[j]}
    assert crossing and _pairs(split) == _pairs(hexagons) - crossing

    areas = gpd.GeoDataFrame(geometry=[shapely.box(x, 0, x + 1, 1) for x in range(4)])
    strip = Grid.from_polygons(areas).without_links_across(RIVER)
    assert _pairs(strip) == {(0, 1), (2, 3)}


@pytest.mark.parametrize(("barriers", "match"), [
    (shapely.Point(2, 2), r"barriers must contain only LineString.*POINT.*buffer points"),
    ([shapely.LineString()], "barriers has no non-empty line or polygon"),
    ("river", "barriers must be a GeoDataFrame"),
])
def test_what_is_no_barrier_is_refused_naming_the_parameter(barriers, match):
    grid = Grid.regular((0, 0, 4, 4), shape=(4, 4))
    with pytest.raises(GridError, match=match):
        grid.without_links_across(barriers)


def test_the_model_no_longer_pools_intensity_across_the_barrier():
    # Every record in the two western columns of an 8 x 8 lattice: without a barrier the ICAR
    # prior lends the empty eastern cells along x = 4 some of the western intensity; cut along
    # x = 4, the east is its own component with no record, and its intensity falls.
    rng = np.random.default_rng(4)
    n = 400
    xy = np.column_stack([rng.uniform(0, 4, n), rng.uniform(0, 8, n)])
    points = gpd.GeoDataFrame({"a": rng.integers(0, 2, n)},
                              geometry=gpd.points_from_xy(xy[:, 0], xy[:, 1]), crs=3857)
    grid = Grid.regular((0, 0, 8, 8), shape=(8, 8), crs=3857)
    split = grid.without_links_across(shapely.LineString([(4, -1), (4, 9)]))
    border = np.flatnonzero(grid.cell_col == 4)  # the eastern bank's cells
    intensity = []
    for lattice in (grid, split):
        counts = geosynth.prepare(points, lattice, attributes=["a"])
        fit = geosynth.PaivaModel().fit(counts, n_iter=600, burn_in=200, seed=3,
                                        progress=False)
        intensity.append(fit.posterior_mean_lambda()[border].sum())
    pooled, cut = intensity
    assert cut < 0.1 * pooled  # 5.5 pooled, 0.02 cut (seed 4); 5.4 and 0.02, 5.7 and 0.01 (5, 6)


def test_a_barrier_through_the_cells_points_isolates_none_of_them():
    # A road along x = 1.5, through the centres of column 1: its segments "intersected" every
    # link of those cells, which became 4 islands (11 links cut, 6 components).
    grid = Grid.regular((0, 0, 4, 4), shape=(4, 4), contiguity="rook")
    road = shapely.LineString([(1.5, -1), (1.5, 5)])
    with pytest.warns(DataWarning, match="barriers cut no link"):
        along = grid.without_links_across(road)
    assert along.n_components == 1 and along.n_neighbours.min() >= 2
    # As a polygon (not excluded), the cells it covers are linked to the bank of their point.
    with warnings.catch_warnings():
        warnings.simplefilter("error", IsolatedCellWarning)
        split = grid.without_links_across(road.buffer(0.1))
    col = grid.cell_col
    assert split.n_components == 2 and split.n_neighbours.min() >= 1
    points = shapely.point_on_surface(grid.habitable_geometry)  # column 1's points: x = 1.5
    assert np.allclose(shapely.get_x(points)[col == 1], 1.5)
    assert all(len(set(split.component[col == c])) == 1 for c in range(4))
    assert split.component[col == 0][0] != split.component[col == 2][0]


def test_a_barrier_that_cuts_an_islands_link_says_so_and_the_link_is_gone():
    # islands="nearest" linked the far island to its nearest area; a barrier across the strait
    # cut that link, the metadata still counted it, and the warning advised islands="nearest".
    areas = gpd.GeoDataFrame(geometry=[shapely.box(0, 0, 1, 1), shapely.box(1, 0, 2, 1),
                                       shapely.box(5, 0, 6, 1)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IsolatedCellWarning)
        linked = Grid.from_polygons(areas, islands="nearest")
    assert linked.n_linked_islands == 1 and linked.n_components == 1
    strait = shapely.LineString([(3.5, -1), (3.5, 2)])
    with pytest.warns(IsolatedCellWarning, match=r"barriers that leave them a link") as caught:
        cut = linked.without_links_across(strait)
    assert "islands='nearest'" not in str(caught[0].message)
    assert cut.n_linked_islands == 0 and cut.n_components == 2 and cut.n_cut_links == 1


def test_an_island_whose_nearest_area_lies_across_a_barrier_is_linked_to_one_it_reaches():
    # The island I is nearest to area B's northern arm, but B's point lies south of the river:
    # the island's link to B crossed it, was cut, and the island was left on its own (its
    # releases then follow its own counts) although area D, north of the river, is next.
    a, c, d = shapely.box(0, 0, 10, 5), shapely.box(0, 5, 10, 10), shapely.box(0, 10, 10, 15)
    b = shapely.union(shapely.box(10, -10, 30, 4), shapely.box(10, 4, 14, 10))
    island = shapely.box(11.5, 11, 14, 13)
    areas = gpd.GeoDataFrame(geometry=[a, c, d, b, island], crs=3857)
    assert shapely.get_y(shapely.point_on_surface(b)) < 5  # B's point: south of the river
    linked = Grid.from_polygons(areas, islands="nearest")
    assert linked.linked_islands.tolist() == [[4, 3]]
    river = shapely.LineString([(-1, 5), (31, 5)])
    with warnings.catch_warnings():
        warnings.simplefilter("error", IsolatedCellWarning)
        split = linked.without_links_across(river)
    assert [3, 4] in split.cut_links.tolist()
    assert split.linked_islands.tolist() == [[4, 2]]  # D: the nearest across no barrier
    assert split.n_neighbours[4] == 1 and split.component[4] == split.component[2]
    assert split.n_components == 2  # south of the river (A, B) and north (C, D, I)
    # Each cut link's segment, as recorded, crosses the river.
    assert len(split.cut_segments) == split.n_cut_links
    assert shapely.crosses(split.cut_segments, river).all()


def test_a_group_of_islands_cut_off_is_joined_again_and_a_cut_link_never_comes_back():
    # Two islands nearest each other are linked together, and the group by one link to the
    # mainland; a short barrier across that link left the pair a component of islands alone,
    # without a warning (only cells without a neighbour warned).
    main = [shapely.box(0, 0, 10, 10), shapely.box(10, 0, 20, 10), shapely.box(0, 10, 10, 20),
            shapely.box(10, 10, 20, 20)]
    pair = [shapely.box(30, 0, 32, 2), shapely.box(34, 0, 36, 2)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IsolatedCellWarning)
        group = Grid.from_polygons(gpd.GeoDataFrame(geometry=main + pair, crs=3857),
                                   islands="nearest")
    assert group.linked_islands.tolist() == [[4, 5], [5, 4], [4, 1]]
    with warnings.catch_warnings():
        warnings.simplefilter("error", IsolatedCellWarning)
        split = group.without_links_across(shapely.LineString([(25, 0), (25, 4)]))
    assert split.cut_links.tolist() == [[1, 4]]
    assert split.n_components == 1 and split.linked_islands.tolist()[-1] == [4, 3]
    # Two calls: the second barrier cuts the link the first call made instead, and no call
    # puts back a link an earlier barrier cut (it relinked across it).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", IsolatedCellWarning)
        alone = Grid.from_polygons(gpd.GeoDataFrame(geometry=main + pair[:1], crs=3857),
                                   islands="nearest")
        twice = alone.without_links_across(shapely.LineString([(25, 0), (25, 4)]))
        twice = twice.without_links_across(shapely.LineString([(27, 3), (27, 6)]))
    linked = {tuple(sorted(p)) for p in zip(*twice.adjacency.nonzero(), strict=True)}
    assert not linked & {tuple(p) for p in twice.cut_links.tolist()}
    assert twice.n_neighbours[4] == 0 and twice.n_linked_islands == 0
    assert shapely.crosses(twice.cut_segments, shapely.MultiLineString(
        [[(25, 0), (25, 4)], [(27, 3), (27, 6)]])).all()
