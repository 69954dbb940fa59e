import math
import warnings

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import shapely
from geopandas.testing import assert_geodataframe_equal
from scipy import stats

from geosynth.datasets import (
    BERLIN_ACCOMMODATES_BANDS,
    BERLIN_BEDROOMS_BANDS,
    TABLE3,
    berlin_listings,
    paiva_scenario,
    susep_collisions,
)
from geosynth.errors import CRSError, DataWarning, InputError, InputTypeError, MemoryLimitError
from geosynth.lattice import Grid

ALPHA = 0.001
BIG_N = 20_000
HUGE_N = 200_000  # attribute tests: 4 SE of the logistic / Z coefficients is then ~0.05-0.2


@pytest.fixture(scope="module")
def big():
    return paiva_scenario(n=BIG_N, seed=20180101)


@pytest.fixture(scope="module")
def huge():
    return paiva_scenario(n=HUGE_N, seed=2018, generating_shape=(10, 10))


@pytest.fixture(scope="module")
def berlin():
    return berlin_listings()


def design_y(df):
    return np.column_stack(
        [np.ones(len(df)), df.x1 == 2, df.x2 == 2, df.x2 == 3]
    ).astype(float)


def logistic_irls(X, y, iterations=50):
    beta = np.zeros(X.shape[1])
    for _ in range(iterations):
        p = 1.0 / (1.0 + np.exp(-X @ beta))
        info = X.T @ (X * (p * (1 - p))[:, None])
        step = np.linalg.solve(info, X.T @ (y - p))
        beta += step
        if np.abs(step).max() < 1e-12:
            break
    p = 1.0 / (1.0 + np.exp(-X @ beta))
    cov = np.linalg.inv(X.T @ (X * (p * (1 - p))[:, None]))
    return beta, np.sqrt(np.diag(cov))


def generating_cells(scenario):
    """Generating-grid row and column of every record, from its coordinates."""
    nr, nc = scenario.generating_shape
    xmin, ymin, xmax, ymax = scenario.bounds
    x, y = scenario.data.geometry.x.to_numpy(), scenario.data.geometry.y.to_numpy()
    col = np.floor((x - xmin) / (xmax - xmin) * nc).astype(int)
    row = np.floor((y - ymin) / (ymax - ymin) * nr).astype(int)
    return row, col


def brute_force_mass(scenario, boxes):
    """(k, 12) generating mass inside each box by per-axis overlaps with generating cells."""
    nr, nc = scenario.generating_shape
    xmin, ymin, xmax, ymax = scenario.bounds
    gx = np.linspace(xmin, xmax, nc + 1)
    gy = np.linspace(ymin, ymax, nr + 1)
    fx = np.zeros((len(boxes), nc))
    fy = np.zeros((len(boxes), nr))
    for k, (x0, y0, x1, y1) in enumerate(boxes):
        for j in range(nc):
            fx[k, j] = max(0.0, min(x1, gx[j + 1]) - max(x0, gx[j])) / (gx[j + 1] - gx[j])
        for i in range(nr):
            fy[k, i] = max(0.0, min(y1, gy[i + 1]) - max(y0, gy[i])) / (gy[i + 1] - gy[i])
    p = scenario.generating_probabilities.reshape(12, nr, nc)
    return np.einsum("ki,bij,kj->kb", fy, p, fx)


def bvn_pdf(xy, mean, cov):
    d = xy - np.asarray(mean)
    inv = np.linalg.inv(np.asarray(cov))
    q = np.einsum("ni,ij,nj->n", d, inv, d)
    return np.exp(-0.5 * q) / (2 * np.pi * np.sqrt(np.linalg.det(cov)))


# ---------------------------------------------------------------- reproducibility / structure


def test_same_seed_same_data_and_different_seed_differs():
    a = paiva_scenario(n=300, seed=7)
    b = paiva_scenario(n=300, seed=7)
    c = paiva_scenario(n=300, seed=8)
    assert_geodataframe_equal(a.data, b.data)
    np.testing.assert_array_equal(a.generating_probabilities, b.generating_probabilities)
    assert not np.array_equal(a.data.geometry.x.to_numpy(), c.data.geometry.x.to_numpy())
    assert not np.array_equal(a.data.z.to_numpy(), c.data.z.to_numpy())


def test_generator_seed_is_accepted():
    a = paiva_scenario(n=50, seed=np.random.default_rng(3))
    b = paiva_scenario(n=50, seed=3)
    assert_geodataframe_equal(a.data, b.data)


def test_columns_dtypes_index_and_crs():
    s = paiva_scenario(n=200, seed=1)
    assert list(s.data.columns) == ["y", "x1", "x2", "z", "geometry"]
    for col in ("y", "x1", "x2"):
        assert s.data[col].dtype == np.int64
    assert s.data.z.dtype == np.float64
    assert isinstance(s.data.index, pd.RangeIndex)
    assert s.data.crs.to_epsg() == 31983
    assert s.crs.to_epsg() == 31983
    assert s.bounds == (605_000.0, 7_790_000.0, 615_000.0, 7_800_000.0)
    assert set(s.data.y) <= {0, 1} and set(s.data.x1) <= {1, 2} and set(s.data.x2) <= {1, 2, 3}
    assert s.generating_probabilities.shape == (12, 100 * 100)
    np.testing.assert_allclose(s.generating_probabilities.sum(axis=1), 1.0)
    assert s.components[["y", "x1", "x2"]].drop_duplicates().shape[0] == 12
    assert s.components.n_records.sum() == 200


def test_continuous_false_drops_z_but_keeps_everything_else():
    with_z = paiva_scenario(n=150, seed=5)
    without = paiva_scenario(n=150, seed=5, continuous=False)
    assert "z" not in without.data.columns
    assert_geodataframe_equal(without.data, with_z.data.drop(columns="z"))


def test_origin_unit_and_crs_map_the_square():
    s = paiva_scenario(n=100, seed=2, crs="EPSG:32633", origin=(0.0, 0.0), unit=1.0)
    assert s.bounds == (0.0, 0.0, 10.0, 10.0)
    assert s.crs.to_epsg() == 32633
    x, y = s.data.geometry.x, s.data.geometry.y
    assert x.between(0, 10).all() and y.between(0, 10).all()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n": 0}, "n must be an integer number of records from 1 to 10,000,000"),
        ({"n": 2.5}, "n must be an integer number of records"),
        ({"n": 10**14}, "from 1 to 10,000,000, got 100000000000000"),  # 728 TiB asked for
        ({"generating_shape": (0, 10)}, "generating_shape"),
        ({"generating_shape": (10,)}, "generating_shape"),
        ({"generating_shape": (10.5, 10)}, "generating_shape"),
        ({"generating_shape": 7}, "generating_shape"),
        ({"unit": -1.0}, "unit must be a finite number > 0"),
        ({"origin": (1.0, np.nan)}, "origin"),
        # 7.28 TiB asked for; bools as numbers; coordinates that overflow to inf
        ({"generating_shape": (10**6, 10**6)}, r"more than 1,000,000 cells"),
        ({"origin": (True, False)}, r"origin must be two finite numbers"),
        ({"unit": 1e308}, r"origin \(605000.0, 7790000.0\) \+ unit 1e\+308 x 10 .* overflows"),
    ],
)
def test_invalid_arguments_raise_input_error(kwargs, match):
    with pytest.raises(InputError, match=match):
        paiva_scenario(**kwargs)


def test_a_scenario_above_its_memory_limit_is_refused_before_any_draw():
    # n=10,000,000 (inside the documented range) took 3.7 GiB at its peak: a raw MemoryError
    # from shapely.points under a 4 GB limit.
    with pytest.raises(MemoryLimitError, match=r"paiva_scenario\(n=10,000,000\) needs about "
                       r"3\.7 GiB .* over max_bytes = 2\.0 GiB; pass n=5,36\d,\d{3} or fewer"):
        paiva_scenario(n=10**7, seed=1)
    from geosynth.datasets import SCENARIO_MAX_BYTES, scenario_bytes

    assert scenario_bytes(10**7) > SCENARIO_MAX_BYTES >= scenario_bytes(5 * 10**6)
    # the limit is the caller's: exactly the estimate passes, a byte less is refused
    need = scenario_bytes(150, (20, 20))
    assert len(paiva_scenario(n=150, seed=1, generating_shape=(20, 20),
                              max_bytes=need).data) == 150
    with pytest.raises(MemoryLimitError, match="pass n=149 or fewer"):
        paiva_scenario(n=150, seed=1, generating_shape=(20, 20), max_bytes=need - 1)
    with pytest.raises(MemoryLimitError, match="pass a smaller generating_shape"):
        paiva_scenario(n=10, generating_shape=(1000, 1000), max_bytes=2**20)
    with pytest.raises(InputError, match="max_bytes must be a positive int"):
        paiva_scenario(n=10, max_bytes=1.5e9)


@pytest.mark.parametrize("unit", [True, "1000", None])
def test_a_unit_that_is_not_a_number_is_refused(unit):
    with pytest.raises(TypeError, match="unit must be a real number"):
        paiva_scenario(n=10, unit=unit)


@pytest.mark.parametrize("continuous", ["no", 0, None])
def test_a_continuous_flag_that_is_not_a_bool_is_refused(continuous):
    # continuous="no" is truthy: it silently simulated z
    with pytest.raises(TypeError, match="continuous must be True or False"):
        paiva_scenario(n=10, continuous=continuous)


@pytest.mark.parametrize("shape", [(1, 1), (1, 4), (3, 1)])
def test_a_generating_grid_of_one_row_or_column_works(shape):
    # (1, 1) raised numpy's AxisError: the mixture density of one point was a scalar
    s = paiva_scenario(n=40, seed=3, generating_shape=shape)
    assert s.generating_probabilities.shape == (12, shape[0] * shape[1])
    np.testing.assert_allclose(s.generating_probabilities.sum(axis=1), 1.0)
    assert len(s.data) == 40


def test_scenario_sizes_are_checked_as_the_scenario_checks_them():
    # scenario_bytes(-5) was smaller than for 0 records, nan a bare ValueError, 2.7 records on
    # a 2.9 x 2.9 grid truncated; a set {5, 10} as generating_shape became (10, 5).
    from geosynth.datasets import scenario_bytes

    for n, shape in ((-5, (100, 100)), (math.nan, (100, 100)), (2.7, (2, 2)), (True, (2, 2)),
                     (10, (2.9, 2.9)), (10, {5, 10}), (10, {5: 1, 10: 2})):
        with pytest.raises(InputError, match=r"^(n must be an integer number of records from 0|"
                                             r"generating_shape must be \(nrows, ncols\))"):
            scenario_bytes(n, shape)
    with pytest.raises(InputError, match=r"generating_shape must be \(nrows, ncols\)"):
        paiva_scenario(n=5, seed=1, generating_shape={5, 10})
    assert scenario_bytes(0, [2, 3]) == scenario_bytes(0, np.array([3, 2]))


def test_geographic_crs_is_refused():
    with pytest.raises(CRSError, match="is geographic"):
        paiva_scenario(n=10, crs="EPSG:4326")


def test_an_unreadable_crs_is_refused_naming_it():
    # pyproj's own CRSError (not a geosynth error, naming no parameter) came out before
    with pytest.raises(CRSError, match=r"crs 'EPSG:nope' is not a valid CRS .* 'EPSG:31983'"):
        paiva_scenario(n=10, crs="EPSG:nope")


@pytest.mark.parametrize("crs", [np.array(["EPSG:31983", "EPSG:31983"]), True])
def test_a_crs_that_is_an_array_or_a_bool_is_a_type_error(crs):
    # An array raised NumPy's "truth value of an array is ambiguous" inside pyproj.
    with pytest.raises(InputTypeError, match=r"^crs must be a pyproj.CRS, an EPSG code"):
        paiva_scenario(n=10, crs=crs)


# ---------------------------------------------------------------- attribute distributions


def test_x1_follows_table1(huge):
    k = int((huge.data.x1 == 1).sum())
    assert stats.binomtest(k, HUGE_N, 0.6).pvalue > ALPHA


@pytest.mark.parametrize(("x1", "probs"), [(1, [1 / 3, 1 / 3, 1 / 3]), (2, [0.6, 0.1, 0.3])])
def test_x2_given_x1_follows_table2(huge, x1, probs):
    x2 = huge.data.x2[huge.data.x1 == x1]
    observed = np.bincount(x2, minlength=4)[1:]
    expected = np.asarray(probs) * len(x2)
    assert stats.chisquare(observed, expected).pvalue > ALPHA


def test_y_logistic_coefficients_recovered(huge):
    beta, se = logistic_irls(design_y(huge.data), huge.data.y.to_numpy(float))
    truth = np.array([-1.0, 1.5, -0.5, 0.5])
    assert np.all(np.abs(beta - truth) < 4 * se), (beta, se)


def test_z_follows_eq_4_1(huge):
    d = huge.data
    mean = 50 - 3.5 * (d.y == 1) + 1.0 * (d.x1 == 2) - 1.5 * (d.x2 == 2) + 2.0 * (d.x2 == 3)
    resid = d.z - mean
    # Per-combination means within 4 standard errors of eq. (4.1).
    groups = resid.groupby([d.y, d.x1, d.x2])
    z_scores = groups.mean() / (10.0 / np.sqrt(groups.size()))
    assert len(z_scores) == 12
    assert np.all(np.abs(z_scores) < 4), z_scores
    # SD 10: sample variance within 4 SE (SE of s^2 = sigma^2 sqrt(2/(n-1))).
    assert abs(resid.var() - 100.0) < 4 * 100.0 * np.sqrt(2 / (HUGE_N - 1))
    assert stats.kstest(resid / 10.0, "norm").pvalue > ALPHA


def test_z_regression_coefficients_recovered(huge):
    d = huge.data
    X = np.column_stack([np.ones(len(d)), d.y == 1, d.x1 == 2, d.x2 == 2, d.x2 == 3]).astype(float)
    beta, *_ = np.linalg.lstsq(X, d.z.to_numpy(), rcond=None)
    se = 10.0 * np.sqrt(np.diag(np.linalg.inv(X.T @ X)))
    truth = np.array([50.0, -3.5, 1.0, -1.5, 2.0])
    assert np.all(np.abs(beta - truth) < 4 * se), (beta, se)


# ---------------------------------------------------------------- locations


def test_locations_inside_the_square(big):
    xmin, ymin, xmax, ymax = big.bounds
    x, y = big.data.geometry.x, big.data.geometry.y
    assert x.between(xmin, xmax).all() and y.between(ymin, ymax).all()


@pytest.mark.parametrize(
    ("b", "mean", "cov"),
    [
        (0, None, None),  # mixture, checked below
        (7, (5.0, 5.0), [[1.5, 0.9 * np.sqrt(1.5 * 2)], [0.9 * np.sqrt(1.5 * 2), 2.0]]),
        (10, (5.0, 5.0), [[1.5, -0.9 * np.sqrt(1.5 * 1.5)], [-0.9 * np.sqrt(1.5 * 1.5), 2.0]]),
        (11, (5.0, 7.5), [[2.5, 0.0], [0.0, 0.7]]),
    ],
)
def test_generating_probabilities_are_table3_density_at_cell_centres(b, mean, cov):
    s = paiva_scenario(n=10, seed=0, generating_shape=(20, 25))
    cx = (np.arange(25) + 0.5) * 10 / 25
    cy = (np.arange(20) + 0.5) * 10 / 20
    yy, xx = np.meshgrid(cy, cx, indexing="ij")
    xy = np.column_stack([xx.ravel(), yy.ravel()])
    if mean is None:  # (y=0, x1=1, x2=1): N2[(3,7); I] & N2[(7,3); I]
        dens = bvn_pdf(xy, (3, 7), np.eye(2)) + bvn_pdf(xy, (7, 3), np.eye(2))
    else:
        dens = bvn_pdf(xy, mean, cov)
    np.testing.assert_allclose(s.generating_probabilities[b], dens / dens.sum(), rtol=1e-10)
    assert tuple(s.components.loc[b, ["y", "x1", "x2"]]) == TABLE3[b][:3]


@pytest.mark.parametrize("b", range(12))
def test_cell_counts_match_generating_probabilities(big, b):
    nr, nc = big.generating_shape
    row, col = generating_cells(big)
    combo = big.data.y * 6 + (big.data.x1 - 1) * 3 + (big.data.x2 - 1)
    mask = (combo == b).to_numpy()
    n_b = int(mask.sum())
    assert n_b == big.components.n_records[b] and n_b > 100
    counts = np.zeros((nr, nc))
    np.add.at(counts, (row[mask], col[mask]), 1)
    # Coarsen 100x100 -> 10x10 by summing 10x10 blocks.
    observed = counts.reshape(10, 10, 10, 10).sum(axis=(1, 3)).ravel()
    expected = n_b * big.generating_probabilities[b].reshape(10, 10, 10, 10).sum(axis=(1, 3))
    expected = expected.ravel()
    # Pool the cells with expected count < 5 into one bin.
    small = expected < 5
    obs = np.append(observed[~small], observed[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    assert stats.chisquare(obs, exp).pvalue > ALPHA


def test_points_uniform_within_generating_cells(big):
    nr, nc = big.generating_shape
    xmin, ymin, xmax, ymax = big.bounds
    x = (big.data.geometry.x.to_numpy() - xmin) / (xmax - xmin) * nc
    frac = x - np.floor(x)
    assert stats.kstest(frac, "uniform").pvalue > ALPHA


# ---------------------------------------------------------------- true intensity


def grid_for(scenario, shape, bounds=None):
    return Grid.regular(bounds or scenario.bounds, shape=shape, crs=scenario.crs)


def test_true_intensity_sums_to_n_b_on_a_covering_grid(big):
    lam = big.true_intensity(grid_for(big, (10, 10)))
    assert lam.shape == (100, 12)
    assert (lam >= 0).all()
    np.testing.assert_allclose(lam.sum(axis=0), big.n_records, rtol=1e-10)


def test_true_intensity_nested_grid_equals_block_sums(big):
    grid = grid_for(big, (10, 10))
    lam = big.true_intensity(grid)
    blocks = big.generating_probabilities.reshape(12, 10, 10, 10, 10).sum(axis=(2, 4))
    expected = (blocks.reshape(12, 100) * big.n_records[:, None]).T  # cell id = row*10 + col
    order = grid.cell_row * 10 + grid.cell_col
    np.testing.assert_allclose(lam, expected[order], rtol=1e-9, atol=1e-12)


def test_true_intensity_non_nested_grid_matches_overlap_areas():
    s = paiva_scenario(n=2_000, seed=11, generating_shape=(30, 40))
    grid = grid_for(s, (7, 7))
    lam = s.true_intensity(grid)
    np.testing.assert_allclose(lam.sum(axis=0), s.n_records, rtol=1e-10)
    boxes = grid.cell_bounds(np.arange(grid.n_cells))
    expected = brute_force_mass(s, boxes) * s.n_records[None, :]
    np.testing.assert_allclose(lam, expected, rtol=1e-9, atol=1e-9)


def test_true_intensity_partial_cover_and_outside():
    s = paiva_scenario(n=1_000, seed=4, generating_shape=(25, 25))
    xmin, ymin, xmax, ymax = s.bounds
    shifted = (xmin + 3_333.0, ymin - 2_500.0, xmax + 3_333.0, ymax - 2_500.0)
    grid = grid_for(s, (6, 9), bounds=shifted)
    lam = s.true_intensity(grid)
    boxes = grid.cell_bounds(np.arange(grid.n_cells))
    np.testing.assert_allclose(
        lam, brute_force_mass(s, boxes) * s.n_records[None, :], rtol=1e-9, atol=1e-9
    )
    assert np.all(lam.sum(axis=0) < s.n_records)
    outside = boxes[:, 0] >= xmax
    assert outside.any() and np.all(lam[outside] == 0)


def test_true_intensity_agrees_with_observed_counts(big):
    grid = grid_for(big, (7, 7))
    lam = big.true_intensity(grid)
    cell = grid.locate(big.data)
    combo = (big.data.y * 6 + (big.data.x1 - 1) * 3 + (big.data.x2 - 1)).to_numpy()
    assert (cell >= 0).all()
    observed = np.zeros_like(lam)
    np.add.at(observed, (cell, combo), 1)
    keep = lam >= 5
    # chi-square over the (cell, combo) bins with expected >= 5, plus one pooled bin per combo
    obs = np.concatenate([observed[keep], (observed * ~keep).sum(axis=0)])
    exp = np.concatenate([lam[keep], (lam * ~keep).sum(axis=0)])
    use = exp > 0
    # counts per combo are fixed (n_b), so 12 degrees of freedom are lost
    statistic = ((obs[use] - exp[use]) ** 2 / exp[use]).sum()
    dof = use.sum() - 12
    assert stats.chi2.sf(statistic, dof) > ALPHA


def chi_square_pvalue(lam, observed):
    """Chi-square p-value of (cell, combo) counts against ``lam`` (fixed n_b per combo)."""
    keep = lam >= 5
    obs = np.concatenate([observed[keep], (observed * ~keep).sum(axis=0)])
    exp = np.concatenate([lam[keep], (lam * ~keep).sum(axis=0)])
    use = exp > 0
    statistic = ((obs[use] - exp[use]) ** 2 / exp[use]).sum()
    return stats.chi2.sf(statistic, use.sum() - 12)


@pytest.mark.parametrize("orientation", ["pointy", "flat"])
def test_true_intensity_of_hexagons_is_the_mass_inside_them_not_their_boxes(orientation):
    # The bounding box of a hexagon holds 4/3 of its area and overlaps the neighbours' boxes:
    # the truth summed to 4/3 n_b on a covering hexagonal lattice. With a (1, 1) generating
    # grid the points are uniform on the square, so a hexagon's mass is its area in the square
    # over the square's area.
    s = paiva_scenario(n=3_000, seed=5, generating_shape=(1, 1))
    grid = Grid.hexagonal(s.bounds, 700.0, orientation=orientation, crs=s.crs)
    lam = s.true_intensity(grid)
    np.testing.assert_allclose(lam.sum(axis=0), s.n_records, rtol=1e-10)
    inside = shapely.area(shapely.intersection(np.asarray(grid.cells.geometry.array),
                                               shapely.box(*s.bounds)))
    expected = inside[:, None] / 1e8 * s.n_records[None, :]
    np.testing.assert_allclose(lam, expected, rtol=1e-9, atol=1e-9)


def test_true_intensity_of_areas_equals_that_of_the_same_boxes_as_square_cells():
    # An areal lattice of boxes must get the exact (CDF) mass of a square lattice of the same
    # boxes, with generating cells not nested in them.
    s = paiva_scenario(n=2_000, seed=11, generating_shape=(30, 40))
    square = grid_for(s, (7, 7))
    areas = gpd.GeoDataFrame(geometry=square.cells.geometry.to_numpy(), crs=s.crs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        areal = Grid.from_polygons(areas, contiguity="rook")
    np.testing.assert_allclose(s.true_intensity(areal), s.true_intensity(square),
                               rtol=1e-9, atol=1e-9)


def test_true_intensity_of_hexagons_agrees_with_observed_counts(big):
    grid = Grid.hexagonal(big.bounds, 600.0, crs=big.crs)
    lam = big.true_intensity(grid)
    cell = grid.locate(big.data)
    combo = (big.data.y * 6 + (big.data.x1 - 1) * 3 + (big.data.x2 - 1)).to_numpy()
    assert (cell >= 0).all()
    observed = np.zeros_like(lam)
    np.add.at(observed, (cell, combo), 1)
    assert chi_square_pvalue(lam, observed) > ALPHA


def test_true_intensity_of_hexagons_is_the_same_in_small_batches(big, monkeypatch):
    import geosynth.datasets

    grid = Grid.hexagonal(big.bounds, 900.0, crs=big.crs)
    whole = big.true_intensity(grid)
    monkeypatch.setattr(geosynth.datasets, "_MAX_PAIRS", 37)  # many batches, some one cell
    np.testing.assert_allclose(big.true_intensity(grid), whole, rtol=1e-12, atol=1e-12)


def test_true_intensity_refuses_what_is_not_a_grid(big):
    with pytest.raises(InputError, match=r"grid must be a geosynth.Grid, got tuple; build it "
                                         r"with Grid.regular\(scenario.bounds"):
        big.true_intensity(big.bounds)


def test_align_and_combos_argument_reorder_columns(big):
    grid = grid_for(big, (5, 5))
    full = big.true_intensity(grid)
    combos = pd.DataFrame({"y": [1, 0, 1], "x1": [2, 1, 1], "x2": [3, 1, 2], "y_code": [1, 0, 1]})
    idx = big.align(combos)
    np.testing.assert_array_equal(idx, [11, 0, 7])
    np.testing.assert_array_equal(big.true_intensity(grid, combos=combos), full[:, [11, 0, 7]])
    pd.testing.assert_frame_equal(
        big.combo_order.iloc[idx].reset_index(drop=True), combos[["y", "x1", "x2"]]
    )


def test_align_rejects_bad_tables(big):
    with pytest.raises(InputError, match="missing column"):
        big.align(pd.DataFrame({"y": [0], "x1": [1]}))
    with pytest.raises(InputError, match="'x2' has values outside"):
        big.align(pd.DataFrame({"y": [0], "x1": [1], "x2": [4]}))


def test_true_intensity_refuses_other_crs(big):
    grid = Grid.regular((0.0, 0.0, 10.0, 10.0), shape=(2, 2), crs="EPSG:32633")
    with pytest.raises(CRSError, match="differs from the scenario CRS"):
        big.true_intensity(grid)


# ---------------------------------------------------------------- Berlin listings


def test_berlin_points_and_region(berlin):
    points, region = berlin
    assert len(points) == 2203  # the shipped file has no rows to drop
    assert points.crs.to_epsg() == 25833 and region.crs.to_epsg() == 25833
    assert points.crs.is_projected and points.crs.axis_info[0].unit_name == "metre"
    assert points.geom_type.eq("Point").all()
    assert isinstance(points.index, pd.RangeIndex)
    assert len(region) == 1
    assert points.within(region.union_all()).all()
    # Prenzlauer Berg is ~11 km^2; a Web-Mercator area would be ~2.7x larger.
    assert 9e6 < region.area.iloc[0] < 13e6


def test_berlin_attributes(berlin):
    points = berlin.points
    assert points.price.dtype == np.float64
    assert points.price.notna().all() and (points.price > 0).all()
    assert set(points.accommodates_band) == set(BERLIN_ACCOMMODATES_BANDS)
    assert set(points.bedrooms_band) == set(BERLIN_BEDROOMS_BANDS)
    assert sorted(BERLIN_ACCOMMODATES_BANDS) == ["1", "2", "3-4", "5+"]
    assert sorted(BERLIN_BEDROOMS_BANDS) == ["0-1", "2", "3+"]
    acc = points.accommodates
    np.testing.assert_array_equal(
        points.accommodates_band,
        np.where(acc == 1, "1", np.where(acc == 2, "2", np.where(acc <= 4, "3-4", "5+"))),
    )
    bed = points.bedrooms
    np.testing.assert_array_equal(
        points.bedrooms_band, np.where(bed <= 1, "0-1", np.where(bed == 2, "2", "3+"))
    )
    assert {"X", "Y", "accommodat"}.isdisjoint(points.columns)


def test_true_intensity_on_a_clipped_grid_uses_the_kept_cells(big):
    from shapely.geometry import box

    xmin, ymin, xmax, ymax = big.bounds
    west_half = box(xmin, ymin, (xmin + xmax) / 2, ymax)
    full = grid_for(big, (10, 10))
    clipped = Grid.regular(big.bounds, shape=(10, 10), crs=big.crs, region=west_half)
    assert clipped.n_cells == 50
    kept = full.lattice_to_cell[clipped.cell_row * 10 + clipped.cell_col]
    np.testing.assert_allclose(big.true_intensity(clipped), big.true_intensity(full)[kept])


# ---------------------------------------------------------------- CRS, units and tables refused


def test_true_intensity_refuses_a_grid_without_crs_beside_a_scenario_with_one(big):
    # A grid in thesis units without a CRS missed the square: the intensity was silently 0.
    grid = Grid.regular((0.0, 0.0, 10.0, 10.0), shape=(2, 2), crs=None)
    with pytest.raises(CRSError, match=r"the grid has no CRS but the scenario has CRS "
                                       r"EPSG:31983; build the grid with .*crs=scenario.crs"):
        big.true_intensity(grid)
    plain = paiva_scenario(n=50, seed=1, crs=None)
    with pytest.raises(CRSError, match="the grid has a CRS but the scenario has no CRS"):
        plain.true_intensity(Grid.regular(plain.bounds, shape=(2, 2), crs="EPSG:31983"))
    lam = plain.true_intensity(Grid.regular(plain.bounds, shape=(2, 2), crs=None))
    assert lam.sum() == pytest.approx(50)


@pytest.mark.parametrize("unit", [1e-12, 1e-9])
def test_a_unit_too_small_for_the_origin_is_refused(unit):
    # unit=1e-12 at the default origin: the square collapsed onto the origin (every point the
    # same) and true_intensity raised IndexError; 1e-9 rounded the points onto a few positions.
    with pytest.raises(InputError, match=rf"unit {unit:g} is too small for origin "
                                         r"\(605000.0, 7790000.0\).*same units"):
        paiva_scenario(n=10, seed=1, unit=unit)
    small = paiva_scenario(n=10, seed=1, unit=unit, origin=(0.0, 0.0))  # no rounding there
    assert small.bounds == (0.0, 0.0, unit * 10, unit * 10)


def test_align_refuses_what_is_not_a_table_of_columns(big):
    with pytest.raises(InputError, match="combos must be a pandas.DataFrame .*got list"):
        big.align([[0, 1, 1]])
    repeated = pd.DataFrame([[0, 1, 1, 2]], columns=["y", "x1", "x2", "x2"])
    with pytest.raises(InputError, match=r"combos has several columns named \['x2'\]"):
        big.align(repeated)


# ---------------------------------------------------------------- damaged copies of the data


@pytest.fixture
def berlin_copy(tmp_path, monkeypatch):
    """Write a changed copy of the shipped listings and make berlin_listings read it."""
    import geopandas as gpd

    from geosynth import datasets

    shipped = datasets._berlin_file

    def install(change):
        frame = change(gpd.read_file(shipped("prenzlauer.zip")))
        path = tmp_path / "prenzlauer.shp"
        if frame is not None:
            with warnings.catch_warnings():  # GDAL's note on a copy written without a CRS
                warnings.simplefilter("ignore", UserWarning)
                frame.to_file(path, engine="pyogrio")
        else:
            path = tmp_path / "prenzlauer.zip"
            path.write_bytes(b"not a zip file")
        monkeypatch.setattr(datasets, "_berlin_file", lambda name: str(path)
                            if name == "prenzlauer.zip" else shipped(name))
        return path

    return install


@pytest.mark.parametrize(("change", "match"), [
    (lambda frame: None, r"berlin_listings cannot read .*prenzlauer.zip \(DataSourceError\)"),
    (lambda frame: frame.drop(columns="price"), r"lacks the column\(s\) \['price'\]"),
    (lambda frame: frame.set_crs(None, allow_override=True), "has no geometry or no CRS"),
])
def test_a_damaged_copy_of_the_listings_is_refused_with_the_fix(berlin_copy, change, match):
    # GDAL's DataSourceError, KeyError 'price' and "Cannot transform naive geometries" before.
    berlin_copy(change)
    with pytest.raises(InputError, match=match + r".*reinstall libpysal"):
        berlin_listings()


def test_listings_outside_every_band_are_dropped_not_labelled_empty(berlin_copy):
    # accommodates 0 or bedrooms -1 got the band "" (a level of its own); bedrooms 1.5 was
    # rounded to 2; beds 2.5 to 2.
    def change(frame):
        frame.loc[0, "accommodat"] = 0
        frame.loc[1, "bedrooms"] = -1.0
        frame.loc[2, "bedrooms"] = 1.5
        frame.loc[3, "beds"] = 2.5
        return frame

    berlin_copy(change)
    with pytest.warns(DataWarning, match="dropped 3 of 2203 listings"):
        points = berlin_listings().points
    assert len(points) == 2200
    assert set(points.accommodates_band) <= set(BERLIN_ACCOMMODATES_BANDS)
    assert set(points.bedrooms_band) <= set(BERLIN_BEDROOMS_BANDS)
    assert points["beds"].dtype == np.float64 and points["beds"].iloc[0] == 2.5


SUSEP = ("age_band,sex,collisions\n26-35,male,21\n26-35,female,6\n36-45,male,24\n"
         "36-45,female,2\n46-55,male,19\n46-55,female,10\n55+,male,21\n55+,female,4\n")


@pytest.mark.parametrize(("text", "match"), [
    (SUSEP.replace("collisions\n", "count\n"), r"has the columns \['age_band', 'sex', 'count'\]"),
    (SUSEP.replace(",21\n", ",\n", 1), "not whole numbers >= 0"),  # astype: IntCastingNaNError
    (SUSEP.replace(",2\n", ",2.7\n"), "not whole numbers >= 0"),  # was truncated to 2
    (SUSEP.replace(",2\n", ",-2\n"), "not whole numbers >= 0"),
    (SUSEP.replace(",4\n", ",40\n"), r"collisions by sex \{'female': 58, 'male': 85\}"),
    (SUSEP + "55+,female,0\n", "does not have 8 rows of distinct age band and sex"),
    (SUSEP.replace("55+,female", "55+,male"), "does not have 8 rows"),
    ("", r"cannot read .* \(EmptyDataError\)"),
])
def test_a_damaged_susep_table_is_refused_with_the_fix(tmp_path, monkeypatch, text, match):
    from geosynth import datasets

    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "susep_collisions.csv").write_text(text)
    monkeypatch.setattr(datasets, "__file__", str(tmp_path / "geosynth" / "datasets.py"))
    with pytest.raises(InputError, match=match + ".*restore data/susep_collisions.csv"):
        susep_collisions()
    (tmp_path / "data" / "susep_collisions.csv").write_text("# a comment line\n" + SUSEP)
    assert susep_collisions()["collisions"].sum() == 107
