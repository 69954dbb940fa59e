import dataclasses
import math
import sys
import warnings

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import rasterio
from affine import Affine
from scipy import stats
from scipy.special import gammaln

from geosynth import Grid, prepare
from geosynth.dp.accountant import Accountant
from geosynth.dp.locations import RELEASE_BYTES_PER_RECORD
from geosynth.dp.onthemap import OnTheMapSynthesizer, cell_prior, onthemap_alpha
from geosynth.dp.synthesizers import dirichlet_alpha, draw_dirichlet_multinomial
from geosynth.errors import (
    BudgetExceededError,
    CRSError,
    InputError,
    MemoryLimitError,
    PrivacyLeakWarning,
)
from tests.synth.helpers import write_raster

pytestmark = pytest.mark.filterwarnings("ignore::geosynth.errors.PrivacyLeakWarning")

CRS = "EPSG:31983"
LEVELS = {"y": [0, 1], "x1": [1, 2]}


@pytest.fixture(scope="module")
def scenario_counts(make_scenario_counts):
    return make_scenario_counts(n=300, seed=4, shape=(3, 3), attributes=["y", "x1"],
                                levels=LEVELS)


def dm_logpmf(x_synth, alpha, x):
    x_synth, alpha, x = (np.asarray(v, dtype=float) for v in (x_synth, alpha, x))
    n_synth, a_total, n = x_synth.sum(), alpha.sum(), x.sum()
    return (
        gammaln(n_synth + 1)
        - gammaln(x_synth + 1).sum()
        + gammaln(a_total + n)
        - gammaln(a_total + n + n_synth)
        + (gammaln(alpha + x + x_synth) - gammaln(alpha + x)).sum()
    )


def compositions(total, k):
    if k == 1:
        yield (total,)
        return
    for first in range(total + 1):
        for rest in compositions(total - first, k - 1):
            yield (first, *rest)


# ---------------------------------------------------------------------- alpha and prior
def test_alpha_meets_the_bound_in_every_combination():
    weights = np.array([1.0, 3.0, 2.0, 0.5])
    alpha = onthemap_alpha([10, 0, 250], 0.7, weights)
    assert alpha.shape == (4, 3)
    np.testing.assert_allclose(
        alpha.min(axis=0), [dirichlet_alpha(0.7, 10), 0.0, dirichlet_alpha(0.7, 250)]
    )
    # Shaped by the prior: alpha_ib / alpha_jb = w_i / w_j, smallest where w is smallest.
    np.testing.assert_allclose(alpha[:, 0] / alpha[3, 0], weights / 0.5)
    assert alpha[:, 2].argmin() == 3


def test_synthesizer_alpha_uses_epsilon_cells_per_release(scenario_counts):
    _, _, counts = scenario_counts
    synth = OnTheMapSynthesizer(2.0, totals_share=0.25, m=3).fit(counts, levels=LEVELS)
    assert synth.epsilon_totals == pytest.approx(0.5)
    assert synth.epsilon_cells == pytest.approx(1.5)
    assert synth.epsilon_cells_per_release == pytest.approx(0.5)
    alpha = synth.alpha_for([40, 0, 100, 7])
    np.testing.assert_allclose(alpha.min(axis=0), np.array([40, 0, 100, 7]) / math.expm1(0.5))
    np.testing.assert_allclose(alpha.max(axis=0), alpha.min(axis=0))  # flat prior


def test_a_deep_copy_spends_the_same_budget(scenario_counts):
    # A deep copy had an accountant of its own: the copy and the original each released the
    # same records at the full epsilon, and each ledger showed one spend.
    import copy

    _, _, counts = scenario_counts
    budget = Accountant(2.0)
    synth = OnTheMapSynthesizer(2.0, accountant=budget).fit(counts, levels=LEVELS)
    twin = copy.deepcopy(synth)
    assert twin.accountant is budget
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)  # the small-epsilon advice
        synth.sample()
        with pytest.raises(BudgetExceededError):
            twin.sample()
    assert budget.spent_epsilon == pytest.approx(2.0)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"epsilon": 0.0}, InputError, "epsilon must be a finite number > 0"),
        ({"epsilon": 1.0, "totals_share": 1.0}, InputError, "totals_share"),
        ({"epsilon": 1.0, "totals_share": 0.0}, InputError, "totals_share"),
        ({"epsilon": 1.0, "epsilon_totals": 1.0}, InputError, "smaller than epsilon"),
        ({"epsilon": 1.0, "m": 0}, InputError, r"m \(synthetic datasets\) must be an int >= 1"),
        ({"epsilon": 1.0, "accountant": "budget"}, TypeError, "spend"),
        # e^ε overflowed: α = 0, and an empty cell could never receive a record (ε = ∞)
        ({"epsilon": 800.0}, InputError, r"epsilon_cells / m=720 makes the prior .* underflow"),
        # refused now, not by the mechanism after the accountant was charged
        ({"epsilon": 1e-14}, InputError, r"epsilon=1e-14 \(times totals_share=0.1: 1e-15 for the "
                                          r"totals\) makes the totals' noise scale"),
    ],
)
def test_constructor_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        OnTheMapSynthesizer(**kwargs)


@pytest.mark.parametrize(
    "counts, prior, error, match",
    [
        ([[1, -2], [3, 4]], None, InputError, "negative"),
        ([1, 2, 3], None, InputError, "2-D"),
        ([[1.5, 2], [3, 4]], None, InputError, "non-integer"),
        ([[1, 2], [3, 4]], [1.0, 2.0, 3.0], InputError, r"shape \(2,\)"),
        ([[1, 2], [3, 4]], [1.0, -1.0], InputError, ">= 0"),
        ([[1, 2], [3, 4]], [0.0, 0.0], InputError, "no positive weight"),
        ([[1, 2], [3, 4]], "prior.tif", InputError, "needs the grid"),
        ([[1, 2], [3, 4]], {"a": 1}, TypeError, "prior must be"),
        # Audit: bools, text and complex numbers became weights (1.0, 2.0, real part) ...
        ([[1, 2], [3, 4]], [True, True], TypeError, "prior must be an array of weights"),
        ([[1, 2], [3, 4]], ["1", "2"], TypeError, "prior must be an array of weights"),
        ([[1, 2], [3, 4]], [1 + 1j, 2.0], TypeError, "prior must be an array of weights"),
        # ... a masked array gave its hidden values, a ragged one a bare TypeError ...
        ([[1, 2], [3, 4]], np.ma.masked_array([1.0, -5.0], [False, True]), InputError,
         "prior is a masked array"),
        ([[1, 2], [3, 4]], [[1.0], [2.0, 3.0]], InputError, "prior is a ragged sequence"),
        # ... and a ratio of 1e600 made the weights infinite: alpha failed after the charge.
        ([[1, 2], [3, 4]], [1e-300, 1e300], InputError, r"spans more than 1e\+100"),
        # ... and a single value said "got shape ()"
        ([[1, 2], [3, 4]], -1.0, InputError, r"got the single value -1; for a flat prior leave"),
    ],
)
def test_fit_errors(counts, prior, error, match):
    with pytest.raises(error, match=match):
        OnTheMapSynthesizer(1.0, prior=prior).fit(counts)


def test_fit_refuses_a_lattice_whose_bounds_follow_the_points(scenario_counts):
    grid = Grid.from_points(scenario_counts.scenario.data, shape=(4, 4))
    counts = prepare(scenario_counts.scenario.data, grid, attributes=["y"], levels={"y": [0, 1]})
    with pytest.raises(InputError, match="OnTheMapSynthesizer is ε-DP but its lattice took its "
                                         "bounds from the points"):
        OnTheMapSynthesizer(1.0).fit(counts, levels={"y": [0, 1]})


def test_levels(scenario_counts):
    scenario, grid, counts = scenario_counts
    ordinary = prepare(scenario.data, grid, attributes=["y", "x1"])
    with pytest.raises(InputError, match="OnTheMapSynthesizer needs counts prepared on the "
                                         "public domain"):
        OnTheMapSynthesizer(1.0).fit(ordinary, levels=LEVELS)
    with pytest.raises(InputError, match="levels differ from the domain"):
        OnTheMapSynthesizer(1.0).fit(counts, levels={"y": [0, 1], "x1": [1]})
    with pytest.raises(InputError, match="no entry for attribute 'x1'"):
        OnTheMapSynthesizer(1.0).fit(counts, levels={"y": [0, 1]})
    wider = prepare(scenario.data, grid, attributes=["y", "x1"],
                    levels={"y": [0, 1, 2], "x1": [1, 2]})
    synth = OnTheMapSynthesizer(1.0).fit(wider)
    assert synth.n_combos == 6 and synth.n_cells == 9
    assert synth.combos[["y", "x1"]].values.tolist() == [
        [0, 1],
        [0, 2],
        [1, 1],
        [1, 2],
        [2, 1],
        [2, 2],
    ]
    with pytest.raises(InputError, match="only applies"):
        OnTheMapSynthesizer(1.0).fit(np.ones((2, 2), dtype=int), levels=LEVELS)


def test_not_fitted():
    with pytest.raises(InputError, match="not fitted"):
        OnTheMapSynthesizer(1.0).sample()


# ---------------------------------------------------------------------- totals
def test_totals_match_truth_for_large_epsilon(scenario_counts):
    _, _, counts = scenario_counts
    with pytest.warns(PrivacyLeakWarning, match="which cells hold records in all but name"):
        synth = OnTheMapSynthesizer(80.0, totals_share=0.5, m=3).fit(counts, levels=LEVELS)
    with pytest.warns(PrivacyLeakWarning):
        tables = synth.sample(seed=1)
    assert tables.shape == (3, 9, 4) and tables.dtype == np.int64
    truth = counts.counts.sum(axis=0)
    np.testing.assert_array_equal(tables.sum(axis=1), np.tile(truth, (3, 1)))


def test_totals_noise_is_the_two_sided_geometric_of_epsilon_totals():
    """Against the exact pmf, with the power to refuse ε off by 5 % either way: the variance
    alone (within 20 %) passed totals drawn at 1.05 and 0.9 times epsilon_totals."""
    from tests.dp.test_mechanisms import discrete_laplace_pmf

    x = np.array([[60, 150], [40, 50]])
    synth = OnTheMapSynthesizer(5.0, totals_share=0.1).fit(x)  # epsilon_totals = 0.5
    rng = np.random.default_rng(3)
    noise = np.concatenate([synth.sample(seed=rng)[0].sum(axis=0) - [100, 200]
                            for _ in range(12_000)])  # the clamp at 0 is 100 away
    edges = np.arange(-8, 9)  # bins <= -8, -7, ..., 7, >= 8
    observed = np.bincount(np.clip(noise, -8, 8) + 8, minlength=edges.size)

    def chi_square_pvalue(epsilon):
        inner = discrete_laplace_pmf(edges[1:-1], epsilon, 1)
        tail = (1.0 - inner.sum()) / 2
        return stats.chisquare(observed, noise.size * np.r_[tail, inner, tail]).pvalue

    assert chi_square_pvalue(0.5) > 1e-3
    assert chi_square_pvalue(0.5 * 1.05) < 1e-4 and chi_square_pvalue(0.5 * 0.95) < 1e-4


# ---------------------------------------------------------------------- the prior surface
def test_prior_shapes_the_cells_without_data():
    # All 20 records in cell 0; cells 1-3 are empty and get alpha in proportion 1 : 2 : 4.
    x = np.array([[20], [0], [0], [0]])
    synth = OnTheMapSynthesizer(4.0, epsilon_totals=1.0, prior=[1.0, 1.0, 2.0, 4.0], m=3)
    synth.fit(x)  # epsilon 1 per synthetic dataset for the cells
    rng = np.random.default_rng(9)
    draws = np.concatenate([synth.sample(seed=rng)[:, :, 0] for _ in range(1000)])
    for cell, weight in [(2, 2), (3, 4)]:
        d = draws[:, cell] - weight * draws[:, 1]  # expectation 0 given any noisy total
        assert abs(d.mean()) < 5 * d.std() / math.sqrt(d.size)
    assert draws[:, 0].mean() > draws[:, 1].mean() + 1  # the data still count
    # Exact conditional mean given the released total, with the alpha at epsilon_cells / m.
    n_synth = draws.sum(axis=1)
    alpha = np.stack([synth.alpha_for([n])[:, 0] for n in n_synth])
    conc = alpha + x[:, 0]
    expected = n_synth[:, None] * conc / conc.sum(axis=1, keepdims=True)
    resid = draws - expected
    assert np.all(np.abs(resid.mean(axis=0)) < 5 * resid.std(axis=0) / math.sqrt(len(resid)))
    # A flat prior would leave cells 1 and 3 equal: the shaping is visible.
    assert draws[:, 3].mean() > 3 * draws[:, 1].mean()


def test_a_prior_too_weak_to_move_records_is_warned_about_with_a_true_bound():
    # epsilon_cells / m = 10.37 over 16 cells: at most 16 / (e^10.37 - 1 + 16) = 5e-4 of the
    # synthetic records may land in cells without an original record of their combination.
    x = np.zeros((16, 1), dtype=np.int64)
    x[:8, 0] = 125  # 1,000 records in 8 cells, 8 cells empty
    epsilon_cells = math.log1p(16 * 1999)
    with pytest.warns(PrivacyLeakWarning, match=r"at most 0\.0005 of the synthetic records"):
        synth = OnTheMapSynthesizer(epsilon_cells + 2.0, epsilon_totals=2.0).fit(x)
    rng = np.random.default_rng(4)
    draws = np.concatenate([synth.sample(seed=rng)[:, :, 0] for _ in range(400)])
    moved = draws[:, 8:].sum(axis=1) / draws.sum(axis=1)
    # Exact expectation given each released total n: 8 (n / s) / (1000 + 16 n / s).
    n, s = draws.sum(axis=1), math.expm1(epsilon_cells)
    expected = 8 * (n / s) / (1000 + 16 * n / s)
    assert np.all(expected < 5e-4)
    assert abs(moved.mean() - expected.mean()) < 5 * moved.std() / math.sqrt(len(moved))
    assert moved.sum() > 0  # the prior still moves a few records
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)  # a tenth of that ε: no warning
        OnTheMapSynthesizer(epsilon_cells / 10 + 2.0, epsilon_totals=2.0).fit(x)


def test_prior_weights_are_floored_and_scaled():
    synth = OnTheMapSynthesizer(1.0, prior=[0.0, 2.0, 4.0, 0.0]).fit(np.ones((4, 1), dtype=int))
    np.testing.assert_allclose(synth.prior_weights, [1.0, 1.0, 2.0, 1.0])
    assert synth.prior_kind == "array"
    series = pd.Series([0.0, 2.0, 4.0, 0.0])  # has .transform, but is not a raster
    synth = OnTheMapSynthesizer(1.0, prior=series).fit(np.ones((4, 1), dtype=int))
    np.testing.assert_allclose(synth.prior_weights, [1.0, 1.0, 2.0, 1.0])


def from_origin(west, north, xsize, ysize):
    return Affine(xsize, 0.0, west, 0.0, -ysize, north)


def test_raster_prior_is_averaged_over_cells(tmp_path):
    grid = Grid.regular((0, 0, 4, 4), shape=(2, 2), crs=CRS)
    values = np.array(  # raster row 0 is the north; grid row 0 is the south
        [[1, 3, 0, 0], [5, 7, 0, 0], [2, 2, 9, -1], [2, 2, 9, 9]], dtype=float
    )
    path = write_raster(tmp_path / "prior.tif", values, from_origin(0, 4, 1, 1), nodata=-1)
    # cells: 0 = SW, 1 = SE (nodata pixel left out of the mean), 2 = NW, 3 = NE (all zero)
    np.testing.assert_allclose(cell_prior(path, grid), [2.0, 9.0, 4.0, 0.0])
    with rasterio.open(path) as dataset:
        np.testing.assert_allclose(cell_prior(dataset, grid), [2.0, 9.0, 4.0, 0.0])
    gdf = gpd.GeoDataFrame(
        {"x1": [1, 2, 1]}, geometry=gpd.points_from_xy([0.5, 3.5, 1.5], [0.5, 3.5, 2.5]), crs=CRS
    )
    counts = prepare(gdf, grid, attributes=["x1"], levels={"x1": [1, 2]})
    synth = OnTheMapSynthesizer(1.0, prior=str(path)).fit(counts)
    assert synth.prior_kind == "raster"
    np.testing.assert_allclose(synth.prior_weights, [1.0, 4.5, 2.0, 1.0])  # NE floored to 2


def test_a_prior_raster_beyond_the_pixel_limit_is_refused_before_it_is_read(tmp_path,
                                                                           monkeypatch):
    # The weights raster had this limit, the prior none: an 8000 x 8000 prior took 6 GiB and
    # 20 s to average at fit, a larger one ran out of memory.
    grid = Grid.regular((0, 0, 4, 4), shape=(2, 2), crs=CRS)
    path = write_raster(tmp_path / "prior.tif", np.ones((4, 4)), from_origin(0, 4, 1, 1))
    monkeypatch.setattr("geosynth.rasters.MAX_WEIGHT_PIXELS", 15)
    with pytest.raises(MemoryLimitError, match=r"prior raster has 16 pixels over the grid, "
                                               r"above .*MAX_WEIGHT_PIXELS = 15"):
        cell_prior(path, grid)
    monkeypatch.setattr("geosynth.rasters.MAX_WEIGHT_PIXELS", 16)
    np.testing.assert_allclose(cell_prior(path, grid), np.ones(4))


def test_coarse_raster_prior_samples_cell_centres(tmp_path):
    grid = Grid.regular((0, 0, 4, 4), shape=(4, 4), crs=CRS)
    values = np.array([[1.0, 2.0], [3.0, 4.0]])
    path = write_raster(tmp_path / "coarse.tif", values, from_origin(0, 4, 2, 2))
    expected = np.kron(values[::-1], np.ones((2, 2))).ravel()  # south row first
    np.testing.assert_allclose(cell_prior(path, grid), expected)


def test_raster_prior_errors(tmp_path):
    grid = Grid.regular((0, 0, 4, 4), shape=(2, 2), crs=CRS)
    other = write_raster(
        tmp_path / "utm22.tif", np.ones((4, 4)), from_origin(0, 4, 1, 1), crs="EPSG:31982"
    )
    with pytest.raises(CRSError, match="differs from the grid CRS"):
        cell_prior(other, grid)
    far = write_raster(tmp_path / "far.tif", np.ones((4, 4)), from_origin(100, 104, 1, 1))
    with pytest.raises(InputError, match="does not overlap"):
        cell_prior(far, grid)
    negative = write_raster(tmp_path / "neg.tif", -np.ones((4, 4)), from_origin(0, 4, 1, 1))
    with pytest.raises(InputError, match="negative or infinite"):
        cell_prior(negative, grid)
    with pytest.raises(InputError, match="missing.tif' does not exist; check the file name"):
        cell_prior(tmp_path / "missing.tif", grid)
    # Band 1 of a stack was read silently, whatever the other bands held.
    stack = tmp_path / "stack.tif"
    with rasterio.open(stack, "w", driver="GTiff", height=4, width=4, count=3, dtype="float64",
                       crs=CRS, transform=from_origin(0, 4, 1, 1)) as dst:
        dst.write(np.ones((3, 4, 4)))
    with pytest.raises(InputError, match=r"^prior raster has 3 data bands.*gdal_translate -b"):
        cell_prior(stack, grid)


# ---------------------------------------------------------------------- releases
def test_release_schema(scenario_counts):
    scenario, grid, counts = scenario_counts
    synth = OnTheMapSynthesizer(3.0, m=3).fit(counts, levels=LEVELS)
    with pytest.warns(PrivacyLeakWarning):
        releases = synth.synthesize(seed=7)
    with pytest.warns(PrivacyLeakWarning):
        tables = synth.sample(seed=7)
    original = {(p.x, p.y) for p in scenario.data.geometry}
    assert len(releases) == 3
    for r, gdf in enumerate(releases):
        assert list(gdf.columns) == ["y", "x1", "geometry"]
        assert gdf.index.equals(pd.RangeIndex(len(gdf)))
        assert gdf.crs == grid.crs
        assert gdf["y"].dtype == np.int64 and gdf["x1"].dtype == np.int64
        meta = gdf.attrs["geosynth"]
        assert meta["method"] == "onthemap" and meta["release"] == r
        assert meta["epsilon"] == 3.0 and meta["m"] == 3
        assert meta["epsilon_totals"] + meta["epsilon_cells"] == pytest.approx(3.0)
        assert not any("seed" in str(key).lower() for key in meta)
        assert 7 not in meta.values() and meta["noise"] == "seeded"  # said, not the seed
        synthetic = set(zip(gdf.geometry.x, gdf.geometry.y, strict=True))
        assert not synthetic & original
        # The points sit in the synthetic cells of sample() with the same seed.
        again = prepare(gdf, grid, attributes=["y", "x1"])
        table = np.zeros((9, 4), dtype=np.int64)
        position = again.combos["y"].to_numpy() * 2 + again.combos["x1"].to_numpy() - 1
        table[:, position] = again.counts
        np.testing.assert_array_equal(table, tables[r])
    # All m datasets share the noisy totals.
    np.testing.assert_array_equal(tables.sum(axis=1), np.tile(tables[0].sum(axis=0), (3, 1)))


def test_synthesize_needs_cell_counts():
    synth = OnTheMapSynthesizer(1.0).fit(np.ones((4, 2), dtype=int))
    with pytest.raises(InputError, match="CellCounts"):
        synth.synthesize()


@pytest.mark.filterwarnings("error::geosynth.errors.PrivacyLeakWarning")
def test_unseeded_release_is_silent(scenario_counts):
    _, _, counts = scenario_counts
    releases = OnTheMapSynthesizer(1.0, m=2).fit(counts, levels=LEVELS).synthesize()
    assert len(releases) == 2


def test_accountant_ledger_and_atomic_refusal(scenario_counts):
    _, _, counts = scenario_counts
    accountant = Accountant(1.5)
    synth = OnTheMapSynthesizer(1.0, m=2, accountant=accountant).fit(counts, levels=LEVELS)
    releases = synth.synthesize(seed=1)
    assert accountant.spent_epsilon == pytest.approx(1.0)
    ledger = accountant.ledger
    assert ledger["label"].tolist() == [
        "onthemap: totals epsilon=0.1 + cells epsilon=0.9 (4 combinations in parallel, m=2)"
    ]
    assert ledger["epsilon"].tolist() == [1.0]
    assert releases[0].attrs["geosynth"]["ledger"]["spent"]["epsilon"] == pytest.approx(1.0)
    with pytest.raises(BudgetExceededError):
        synth.sample(seed=2)
    assert accountant.spent_epsilon == pytest.approx(1.0)  # nothing charged, not even totals
    assert len(accountant.ledger) == 1


def test_threads_sharing_an_accountant_never_charge_a_refused_release():
    """The charge was a check of ε, then separate spends for the totals and the cells: two
    threads could both pass the check, and the later one's cells were refused after its totals
    were charged (1.1 spent of 1.5 for one release). The barrier holds both threads after a
    check until the other has passed it too, the interleaving that broke."""
    import threading

    class CheckedTogether(Accountant):
        barrier = threading.Barrier(2, timeout=10)

        def check(self, epsilon, delta=0.0):
            super().check(epsilon, delta)
            self.barrier.wait()

    accountant = CheckedTogether(1.5)
    synths = [OnTheMapSynthesizer(1.0, accountant=accountant).fit(np.ones((3, 2), dtype=int))
              for _ in range(2)]
    outcomes = []

    def release(synth):
        try:
            outcomes.append(synth.sample().shape)
        except BudgetExceededError as error:
            outcomes.append(error)

    threads = [threading.Thread(target=release, args=(synth,)) for synth in synths]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert sorted(type(outcome).__name__ for outcome in outcomes) == [
        "BudgetExceededError", "tuple"]
    assert accountant.spent_epsilon == pytest.approx(1.0)  # one release, charged once
    assert len(accountant.ledger) == 1


def test_two_synthesizers_in_a_callers_parallel_block_each_cost_their_epsilon(scenario_counts):
    # One synthesizer per disjoint region: each is one partition of ε = 1, so the block costs 1
    # and nothing is left. Totals and cells were two partitions (0.1 and 0.9), the block 0.9.
    _, _, counts = scenario_counts
    accountant = Accountant(1.0)
    with accountant.parallel(label="regions"):
        for region in range(2):
            OnTheMapSynthesizer(1.0, m=2, accountant=accountant).fit(
                counts, levels=LEVELS).synthesize(seed=region)
    assert accountant.spent_epsilon == pytest.approx(1.0)
    with pytest.raises(BudgetExceededError):
        accountant.spend(0.1)


# ---------------------------------------------------------------------- privacy of the cells
@pytest.mark.parametrize("relation", ["replace", "add-remove"])
def test_exact_privacy_of_the_cell_step_with_a_prior(relation):
    # Given public totals, one combination on a 3-cell lattice with prior weights 1 : 2 : 4.
    epsilon, n, n_synth, k = 0.8, 2, 3, 3
    synth = OnTheMapSynthesizer(epsilon + 1.0, epsilon_totals=1.0, prior=[1.0, 2.0, 4.0])
    synth.fit(np.ones((k, 1), dtype=int))
    alpha = synth.alpha_for([n_synth])[:, 0]
    worst = 0.0
    for x in map(np.array, compositions(n, k)):
        for j in range(k):
            ys = (
                [x + np.eye(k, dtype=int)[j]]
                if relation == "add-remove"
                else [
                    x + np.eye(k, dtype=int)[j] - np.eye(k, dtype=int)[i]
                    for i in range(k)
                    if i != j and x[i] > 0
                ]
            )
            for y in ys:
                for o in compositions(n_synth, k):
                    worst = max(worst, abs(dm_logpmf(o, alpha, x) - dm_logpmf(o, alpha, y)))
    assert worst <= epsilon + 1e-9
    if relation == "replace":
        assert worst == pytest.approx(epsilon, abs=1e-9)  # attained at the smallest-prior cell


def test_empirical_privacy_of_the_cell_step():
    epsilon, n_synth, draws = 1.0, 2, 200_000
    alpha = onthemap_alpha([n_synth], epsilon, [1.0, 2.0, 4.0])[:, 0]
    rng = np.random.default_rng(12)

    def freq(x, a):
        tables = draw_dirichlet_multinomial(rng, a, np.array(x), n_synth, draws)
        return pd.Series([tuple(t) for t in tables]).value_counts()

    def worst_ratio(a):
        fx, fy = freq([1, 0, 0], a), freq([0, 1, 0], a)  # one record moves cell 0 -> 1
        worst, tol = 0.0, 0.0
        for key in set(fx.index) & set(fy.index):
            if min(fx[key], fy[key]) < 500:
                continue
            ratio = abs(math.log(fx[key] / fy[key]))
            if ratio > worst:
                worst = ratio
                tol = 4 * math.sqrt(1 / fx[key] + 1 / fy[key])
        return worst, tol

    worst, tol = worst_ratio(alpha)
    assert epsilon - tol < worst <= epsilon + tol
    worst, tol = worst_ratio(alpha / 2)  # below the bound: the check fails
    assert worst > epsilon + tol


@pytest.mark.parametrize(
    "name", ["m", "epsilon", "epsilon_totals", "epsilon_cells", "epsilon_cells_per_release"]
)
def test_the_split_of_epsilon_and_m_are_fixed(name):
    synth = OnTheMapSynthesizer(1.0, m=1)
    with pytest.raises(AttributeError, match=f"{name} is fixed"):
        setattr(synth, name, 9)
    assert synth.m == 1 and synth.epsilon == 1.0


def test_audit_tiny_epsilon_and_huge_m_refused_with_input_error():
    # epsilon * totals_share underflowed to 0: ZeroDivisionError; m = 10**400 OverflowError.
    with pytest.raises(InputError, match=r"epsilon=4.94066e-324 \(times totals_share=0.1: 0 "
                                         r"for the totals\) makes the totals' noise scale"):
        OnTheMapSynthesizer(5e-324)
    with pytest.raises(InputError, match=r"m \(synthetic datasets\) must be at most 10,000"):
        OnTheMapSynthesizer(1.0, m=10**400)


def test_a_tiny_epsilon_is_refused_naming_what_was_passed_and_the_least_that_works():
    # Only epsilon was given, and the message named epsilon_totals=1e-301, and the least of it.
    import re

    for options, name in (({}, "epsilon"), ({"totals_share": 0.25}, "epsilon"),
                          ({"epsilon_totals": 1e-301}, "epsilon_totals")):
        with pytest.raises(InputError, match=rf"^{name}=.* noise scale exceed") as caught:
            OnTheMapSynthesizer(1e-300 if name == "epsilon" else 1.0, **options)
        least = float(re.search(rf"use {name} >= ([\d.e+-]+)", str(caught.value)).group(1))
        given = {name: least * 1.01} if name == "epsilon_totals" else {"epsilon": least * 1.01}
        OnTheMapSynthesizer(**({"epsilon": 1.0} | options | given))  # the advice works


def test_the_smallest_epsilon_advised_keeps_uneven_weights_finite():
    # Advised from ñ alone, it was 1e100 times too small under weights 1 and 1e100: followed,
    # the call was refused again with the same advice.
    import re
    import warnings

    with pytest.raises(InputError, match="overflows to infinity") as caught:
        onthemap_alpha([3], 1e-250, [1.0, 1e100])
    advised = float(re.search(r"use epsilon >= ([\d.e+-]+)", str(caught.value)).group(1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert np.isfinite(onthemap_alpha([3], advised * 1.01, [1.0, 1e100])).all()
        with pytest.raises(InputError, match="overflows to infinity"):
            onthemap_alpha([3], advised / 4096, [1.0, 1e100])  # past its 2**10 margin


# ---------------------------------------------------------------------- audit: the boundary
@pytest.mark.parametrize(
    "weights, error, match",
    [
        ([True, True], TypeError, "prior_weights must be an array of positive weights"),
        (["1", "2"], TypeError, "prior_weights must be an array of positive weights"),
        (np.ma.masked_array([1.0, -5.0], [False, True]), InputError, "masked array"),
        # 1e600 overflowed alpha, and the message blamed epsilon=1
        ([1e-300, 1e300], InputError, r"prior_weights spans more than 1e\+100"),
    ],
)
def test_onthemap_alpha_refuses_weights_that_are_not_positive_reals(weights, error, match):
    with pytest.raises(error, match=match):
        onthemap_alpha([1, 2], 1.0, weights)


def test_a_prior_ratio_at_the_cap_still_releases_at_the_smallest_epsilon_cells():
    # The cap keeps alpha finite for every epsilon the constructor accepts: no refusal after
    # the budget is spent.
    synth = OnTheMapSynthesizer(1.0, epsilon_totals=1 - 2**-52, m=10_000,
                                prior=[1.0, 1e50, 1e100]).fit(np.array([[3, 0], [1, 2], [0, 5]]))
    tables = synth.sample(seed=1)
    assert np.isfinite(synth.alpha_for([10**6, 10**6])).all()
    np.testing.assert_array_equal(tables.sum(axis=1), np.tile(tables[0].sum(axis=0), (10_000, 1)))


def test_masked_counts_are_refused_without_their_hidden_values():
    counts = np.ma.masked_array([[3, -987654], [1, 2]], [[False, True], [False, False]])
    with pytest.raises(InputError, match="counts is a masked array") as info:
        OnTheMapSynthesizer(1.0).fit(counts)
    assert "987654" not in str(info.value)


@pytest.mark.parametrize("seed", ["abc", -1, 1.5])
def test_an_invalid_seed_charges_nothing(scenario_counts, seed):
    # The budget was spent, then private_generator refused the seed: nothing released.
    _, _, counts = scenario_counts
    accountant = Accountant(5.0)
    synth = OnTheMapSynthesizer(1.0, accountant=accountant).fit(counts, levels=LEVELS)
    for call in (synth.sample, synth.synthesize):
        with pytest.raises((TypeError, InputError), match="seed"):
            call(seed=seed)
    assert accountant.spent_epsilon == 0.0 and len(accountant.ledger) == 0


def test_prior_weights_changed_after_fit_are_refused_before_the_charge():
    accountant = Accountant(5.0)
    synth = OnTheMapSynthesizer(1.0, accountant=accountant).fit(np.ones((3, 2), dtype=int))
    for weights in (np.array([1.0, 1e-300, 1e300]), np.array([1.0, 0.0, 1.0]), np.ones(2)):
        synth.prior_weights = weights
        with pytest.raises(InputError, match="prior_weights"):
            synth.sample()
    assert accountant.spent_epsilon == 0.0


@pytest.mark.parametrize(
    "geometry, error, match",
    [
        ("y", InputError, r"geometry must be a column name \(a non-empty str\) other than the "
                          r"attributes \['y', 'x1'\], got 'y'"),
        (None, InputError, "geometry must be a column name"),
        (5, InputError, "geometry must be a column name"),
    ],
)
def test_a_bad_geometry_name_is_refused_before_the_charge(scenario_counts, geometry, error,
                                                          match):
    # geometry="y" overwrote the attribute y with the points: a release without y, ε spent.
    _, _, counts = scenario_counts
    accountant = Accountant(5.0)
    synth = OnTheMapSynthesizer(1.0, accountant=accountant).fit(counts, levels=LEVELS)
    with pytest.raises(error, match=match):
        synth.synthesize(geometry=geometry)
    assert accountant.spent_epsilon == 0.0


def test_tables_beyond_max_bytes_are_refused_at_fit():
    # m = 10,000 tables of 10**4 cells x 10**3 combinations: 745 GiB of zeros after the charge.
    counts = np.zeros((10**4, 10**3), dtype=np.int64)
    with pytest.raises(MemoryLimitError, match=r"m=10000 synthetic tables .* over max_bytes"):
        OnTheMapSynthesizer(1.0, m=10_000).fit(counts)
    OnTheMapSynthesizer(1.0, m=2).fit(counts)  # 160 MB: fine
    # A broadcast table takes no memory until the checks copy it (74.5 GiB as float64): a
    # bare MemoryError before the refusal by name.
    huge = np.broadcast_to(np.int64(0), (10**6, 10**4))
    with pytest.raises(MemoryLimitError, match=r"m=1 synthetic tables of 1,000,000 cells"):
        OnTheMapSynthesizer(1.0, m=1).fit(huge)
    with pytest.raises(InputError, match="max_bytes must be a positive int"):
        OnTheMapSynthesizer(1.0, max_bytes=0)


def test_a_domain_beyond_max_bytes_is_refused_before_the_full_table_is_built(
    scenario_counts, monkeypatch
):
    # 9 cells x 4 combinations x 8 bytes = 288 bytes: full_table (G x B int64 table, the B
    # combinations as Python tuples and a DataFrame) was built first, gigabytes for a large
    # domain, and only then refused.
    _, _, counts = scenario_counts
    built = []
    monkeypatch.setattr("geosynth.dp.onthemap.full_table",
                        lambda *args: built.append(args) or pytest.fail("full_table was built"))
    with pytest.raises(MemoryLimitError, match=r"m=1 synthetic tables of 9 cells x 4 combin"):
        OnTheMapSynthesizer(1.0, max_bytes=287).fit(counts)
    assert built == []


@pytest.mark.parametrize(
    ("value", "error", "match"),
    [
        (-3, InputError, r"counts\.counts has 1 negative value\(s\) at positions \[\[0, 0\]\]"),
        (1.5, InputError, r"counts\.counts has 1 non-integer value\(s\)"),
        (np.nan, InputError, r"counts\.counts has 1 NaN or infinite value\(s\)"),
        (True, TypeError, r"counts\.counts must hold integer counts, got booleans"),
    ],
)
def test_cell_counts_with_invalid_counts_are_refused_at_fit(scenario_counts, value, error,
                                                            match):
    # CellCounts does not check its own counts: one built or replaced by hand with -3 was
    # fitted and failed in NumPy's Dirichlet after the charge; 1.5 was truncated to 1 and NaN
    # became -2**63 silently.
    _, _, counts = scenario_counts
    bad = counts.counts.astype(type(value))
    bad[0, 0] = value
    with pytest.raises(error, match=match):
        OnTheMapSynthesizer(1.0).fit(dataclasses.replace(counts, counts=bad))


def test_point_datasets_beyond_max_bytes_are_refused_before_the_charge(scenario_counts):
    _, _, counts = scenario_counts
    accountant = Accountant(5.0)
    # 300 records, m = 50: about 4 MB of points
    synth = OnTheMapSynthesizer(1.0, m=50, accountant=accountant, max_bytes=2**20)
    synth.fit(counts, levels=LEVELS)
    with pytest.raises(MemoryLimitError, match="m=50 point datasets could need more") as info:
        synth.synthesize()
    assert "300" not in str(info.value)  # the confidential total is not quoted
    assert accountant.spent_epsilon == 0.0
    assert len(OnTheMapSynthesizer(1.0, m=2, max_bytes=2**20).fit(
        counts, levels=LEVELS).synthesize()) == 2


def test_the_refusal_before_the_charge_does_not_depend_on_the_number_of_records(
        scenario_counts):
    """The memory check before the charge added the records to the noise bound: raising
    max_bytes until it stopped refusing gave their number exactly, and spent nothing. Before
    the charge only the noise bound counts; the noisy totals (ε-DP) are checked once drawn."""
    import dataclasses

    _, _, counts = scenario_counts
    larger = dataclasses.replace(counts, counts=counts.counts * 100)  # 30,000 records
    # The noise bound of 4 totals at epsilon_totals = 0.1 is about 290 records: it fits.
    max_bytes = 1000 * RELEASE_BYTES_PER_RECORD
    for table, fits in ((counts, True), (larger, False)):
        accountant = Accountant(1.0)
        synth = OnTheMapSynthesizer(1.0, accountant=accountant, max_bytes=max_bytes)
        synth.fit(table, levels=LEVELS)
        if fits:
            assert len(synth.synthesize()) == 1
        else:
            with pytest.raises(MemoryLimitError, match=r"of [\d,]{6} records each \(the noisy "
                               r"totals\).*cost epsilon=1; nothing was released"):
                synth.synthesize()
        assert accountant.spent_epsilon == pytest.approx(1.0)  # the same, whatever the records


def test_no_overlap_message_does_not_quote_bounds_taken_from_the_points(tmp_path):
    # Grid.from_points bounds follow the outermost confidential points (snapped to a unit).
    points = gpd.GeoDataFrame(geometry=gpd.points_from_xy([1234.5, 1876.25], [5432.5, 5987.75]),
                              crs=CRS)
    grid = Grid.from_points(points, shape=(2, 2))
    far = write_raster(tmp_path / "far.tif", np.ones((4, 4)), from_origin(0, 4, 1, 1))
    with pytest.raises(InputError, match="does not overlap the grid bounds;") as info:
        cell_prior(far, grid)
    for bound in grid.bounds:
        assert f"{bound:g}" not in str(info.value) and repr(bound) not in str(info.value)


def test_an_epsilon_that_leaves_the_totals_exact_is_warned_about():
    """At epsilon_totals = 10 a total gets noise with probability 1 − tanh(5) ≈ 1e-4: the
    release publishes the exact totals, labelled ε-DP, and said nothing."""
    with pytest.warns(PrivacyLeakWarning, match=r"epsilon_totals=10 \(sensitivity 1\) leaves "
                      r"each combination total exact with probability 0\.9999.*smaller "
                      r"epsilon_totals \(or totals_share\): below 1\.1 most combination totals"):
        OnTheMapSynthesizer(100.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        OnTheMapSynthesizer(70.0, epsilon_totals=7.5)  # tanh(3.75) = 0.9989: not warned


@pytest.mark.parametrize("seed", [None, 7])
def test_points_are_placed_by_a_generator_that_drew_no_noise(scenario_counts, monkeypatch,
                                                              seed):
    # A placed point's offset in its cell is a generator's uniform, to 53 bits: placed by the
    # generator of the Dirichlet-Multinomial noise, the releases showed the outputs of the
    # state that drew it (PCG64 is not cryptographic).
    from geosynth.dp import onthemap

    seen = {}
    draw, place = OnTheMapSynthesizer._draw, onthemap.place

    def spy_draw(self, rng, n_synth):
        seen["noise"] = rng
        seen["noise_state"] = rng.bit_generator.state["state"]["state"]
        return draw(self, rng, n_synth)

    def spy_place(grid, cells, rng, table):
        seen.setdefault("placement", rng)
        return place(grid, cells, rng, table)

    monkeypatch.setattr(OnTheMapSynthesizer, "_draw", spy_draw)
    monkeypatch.setattr(onthemap, "place", spy_place)
    counts = scenario_counts[2]
    synth = OnTheMapSynthesizer(epsilon=3.0, m=1).fit(counts, levels=LEVELS)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        first = synth.synthesize(seed=seed)
    assert seen["placement"] is not seen["noise"]
    placement_state = seen["placement"].bit_generator.state["state"]["state"]
    assert placement_state != seen["noise"].bit_generator.state["state"]["state"]
    assert placement_state != seen["noise_state"]
    if seed is not None:  # a seed still gives the same release
        seen.clear()
        again = OnTheMapSynthesizer(epsilon=3.0, m=1).fit(counts, levels=LEVELS)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            second = again.synthesize(seed=seed)
        assert first[0].geometry.geom_equals_exact(second[0].geometry, 0).all()


def test_an_unseeded_release_leaves_the_warning_filters_alone(scenario_counts, monkeypatch):
    # The totals' step entered warnings.catch_warnings() for every release: the filters are
    # the process's, so other threads' privacy warnings were swallowed meanwhile.
    from geosynth.dp import onthemap

    entered = []
    original = warnings.catch_warnings

    def counting(*args, **kwargs):
        entered.append(sys._getframe(1).f_code.co_name)
        return original(*args, **kwargs)

    synth = OnTheMapSynthesizer(epsilon=3.0, m=1).fit(scenario_counts[2], levels=LEVELS)
    monkeypatch.setattr(onthemap.warnings, "catch_warnings", counting)
    synth.synthesize()
    assert "_noisy_totals" not in entered
