"""Several continuous covariates: their synthetic noise is correlated as their cell means are.

Data are simulated with a known correlation of the two columns' cell means between the cells
of each combination (0.8 in one, -0.5 in the other) and departures of the records from their
cell means that are unrelated, so the target of ``synthesis_correlation`` is known, and the
releases' noise (a synthetic value less its centre, over its noise SD) is tested against it:
each margin by KS against the standard normal (or, with limits, its truncated CDF against the
uniform), the pair by Fisher's z.
"""

import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from geosynth import Grid, prepare
from geosynth.errors import InputError
from geosynth.synth import synthesis_correlation, synthesis_sd, synthesize, synthetic_zbar
from geosynth.synth.paiva import SYNTHESIS_SD_PRIOR_DF, correlation_roots, kept_pairs
from tests.synth.helpers import CRS, stub_fit

ALPHA = 1e-3
GRID = Grid.regular((0.0, 0.0, 20.0, 20.0), shape=(20, 20), crs=CRS)
BETWEEN = {"p": 0.8, "q": -0.5}


def correlated_records(seed, per_cell=4, between=BETWEEN, scale=(1.0, 1.0), cells=None):
    """Records of combinations ``between``: their cell means correlated as it says."""
    rng = np.random.default_rng(seed)
    frames = []
    for level, rho in between.items():
        means = rng.multivariate_normal([0.0, 0.0], [[1.0, rho], [rho, 1.0]], GRID.n_cells)
        for i in range(GRID.n_cells) if cells is None else cells:
            x0, y0, x1, y1 = GRID.cell_bounds([i])[0]
            z = (means[i] + rng.normal(0.0, 0.2, (per_cell, 2))) * np.asarray(scale)
            frames.append(gpd.GeoDataFrame(
                {"a": level, "z1": z[:, 0], "z2": z[:, 1]},
                geometry=gpd.points_from_xy(rng.uniform(x0, x1, per_cell),
                                            rng.uniform(y0, y1, per_cell)), crs=CRS))
    records = gpd.GeoDataFrame(pd.concat(frames, ignore_index=True), geometry="geometry",
                               crs=CRS)
    records.index = 1000 + rng.permutation(len(records))  # labels are not positions
    return records


@pytest.fixture(scope="module")
def correlated():
    data = correlated_records(3)
    return data, prepare(data, GRID, ["a"], continuous=["z1", "z2"])


def standard_noise(counts, release, limits=None):
    """Each record's synthetic noise over its SD, (n, 2): what the releases drew."""
    cells = GRID.locate(release.geometry)
    combo = np.asarray(counts.record_combo)
    noise = []
    for name in counts.covariates:
        _, mean, sd = counts.covariate(name)
        centre = synthetic_zbar(counts, name)[cells, combo] * sd[combo] + mean[combo]
        scale = synthesis_sd(counts, name)[combo]
        if limits is None:
            noise.append((release[name].to_numpy() - centre) / scale)
        else:  # the copula's normal: Φ⁻¹ of the truncated CDF at the value
            low, high = limits[name]
            u = stats.truncnorm.cdf(release[name].to_numpy(), (low - centre) / scale,
                                    (high - centre) / scale, loc=centre, scale=scale)
            assert stats.kstest(u, "uniform").pvalue > ALPHA, name
            noise.append(stats.norm.ppf(u))
    return np.stack(noise, axis=1)


def assert_correlation(sample, rho):
    """Fisher's z test of the sample correlation of ``sample`` (n, 2) against ``rho``."""
    r = np.corrcoef(sample.T)[0, 1]
    z = (np.arctanh(r) - np.arctanh(rho)) * np.sqrt(len(sample) - 3)
    assert 2 * stats.norm.sf(abs(z)) > ALPHA, (r, rho)


def test_noise_correlation_is_the_cell_means_correlation(correlated):
    """400 cells per combination: r within 0.12 of the simulated 0.8 and -0.5 (3 SE of r; the
    records' departures, SD 0.2 around means of SD 1, weaken it by 1 %)."""
    _, counts = correlated
    correlation = synthesis_correlation(counts)
    assert correlation.shape == (2, 2, 2)
    np.testing.assert_array_equal(np.diagonal(correlation, axis1=1, axis2=2), 1.0)
    for b, level in enumerate(counts.levels["a"]):
        assert abs(correlation[b, 0, 1] - BETWEEN[level]) < 0.12


def test_the_moderation_is_smyths_on_correlations():
    """Derived apart from the records: each combination's correlation of its kept cell means,
    weighted by its cells less one against ν₀ of the pooled (weighted mean) correlation; a
    combination of four cells on another scale is pooled alike."""
    data = correlated_records(5, between={"p": 0.9})
    few = correlated_records(6, per_cell=3, between={"q": -0.9}, scale=(1.0, 2.0),
                             cells=[0, 7, 14, 21])
    both = gpd.GeoDataFrame(pd.concat([data, few]), crs=CRS)
    both.index = range(len(both))
    counts = prepare(both, GRID, ["a"], continuous=["z1", "z2"])
    kept = kept_pairs(counts)

    def own(b):  # correlation of combination b's kept cell means, and their number less one
        records = both[both["a"] == counts.levels["a"][b]]
        means = records.groupby(GRID.locate(records.geometry))[["z1", "z2"]].mean()
        means = means.loc[kept[means.index, b]]
        return means.corr().iloc[0, 1], len(means) - 1

    (r_p, df_p), (r_q, df_q) = own(0), own(1)
    pooled = (df_p * r_p + df_q * r_q) / (df_p + df_q)
    expected = (df_q * r_q + SYNTHESIS_SD_PRIOR_DF * pooled) / (df_q + SYNTHESIS_SD_PRIOR_DF)
    correlation = synthesis_correlation(counts)
    assert correlation[1, 0, 1] == pytest.approx(expected, rel=1e-9)
    assert r_q < expected < correlation[0, 0, 1]  # between its own and the pooled


def test_cells_of_one_or_two_records_do_not_dilute_the_correlation():
    # The means were standardised over every cell holding records, the covariance over the
    # kept ones: 16 cells of one record with far values inflated the SD, and a correlation of
    # 1.0 over 40 kept cells came out at 0.023 against the pooled prior's unit diagonal.
    # Beside a combination q of -0.9, p's own correlation lost to the pooled one.
    data = correlated_records(8, per_cell=4, between={"p": 0.999, "q": -0.9}, cells=range(40))
    lone = correlated_records(9, per_cell=1, between={"p": 0.0}, scale=(50.0, 50.0),
                              cells=range(40, 56))
    both = gpd.GeoDataFrame(pd.concat([data, lone]), crs=CRS)
    both.index = range(len(both))
    counts = prepare(both, GRID, ["a"], continuous=["z1", "z2"])
    # 39 of p's degrees of freedom at 0.999 against ν₀ = 4 of a pooled value near 0.05
    assert synthesis_correlation(counts)[0, 0, 1] > 0.85


def test_without_two_kept_cells_anywhere_the_noise_is_independent():
    data = correlated_records(2, per_cell=3, cells=[0])
    counts = prepare(data, GRID, ["a"], continuous=["z1", "z2"])
    np.testing.assert_array_equal(synthesis_correlation(counts), np.eye(2)[None].repeat(2, 0))


@pytest.mark.parametrize("limits", [None, {"z1": (-2.5, 2.5), "z2": (-1.0, None)}])
@pytest.mark.filterwarnings("error")
def test_releases_draw_each_margin_exactly_and_the_pair_correlated(correlated, limits):
    data, counts = correlated
    if limits is not None:  # records within the limits, none at an end (that would warn)
        data = data[data["z1"].between(-2.4, 2.4) & (data["z2"] > -0.9)]
        counts = prepare(data, GRID, ["a"], continuous=["z1", "z2"])
    target = synthesis_correlation(counts)
    fit = stub_fit(counts, np.ones((1, 4, GRID.n_cells, 2)))
    opened = None if limits is None else {k: (lo, np.inf if hi is None else hi)
                                          for k, (lo, hi) in limits.items()}
    for release in synthesize(fit, data, m=2, seed=8, limits=limits):
        noise = standard_noise(counts, release, opened)
        for b in range(2):
            members = np.asarray(counts.record_combo) == b
            for k in range(2):
                assert stats.kstest(noise[members, k], "norm").pvalue > ALPHA
            assert_correlation(noise[members], target[b, 0, 1])


def test_records_related_in_cells_and_between_keep_it_in_the_releases():
    """An income linear in age (r = 0.99 among the records) stays so; apart it fell to 0.5."""
    rng = np.random.default_rng(7)
    grid = Grid.regular((0.0, 0.0, 8.0, 8.0), shape=(8, 8), crs=CRS)
    n = 3000
    x, y = rng.uniform(0, 8, n), rng.uniform(0, 8, n)
    age = 30 + 3 * x + rng.normal(0, 12, n)
    records = gpd.GeoDataFrame({"a": rng.choice(["f", "m"], n), "age": age,
                                "income": 500 + 60 * age + rng.normal(0, 90, n)},
                               geometry=gpd.points_from_xy(x, y), crs=CRS)
    counts = prepare(records, grid, ["a"], continuous=["age", "income"])
    fit = stub_fit(counts, np.asarray(counts.counts, dtype=float)[None, None] + 0.5)
    original = np.corrcoef(records["age"], records["income"])[0, 1]
    release = synthesize(fit, records, m=1, seed=2)[0]
    assert abs(np.corrcoef(release["age"], release["income"])[0, 1] - original) < 0.02
    assert np.polyfit(release["age"], release["income"], 1)[0] == pytest.approx(60, rel=0.05)


def test_columns_that_are_one_another_rescaled_stay_so():
    """z2 = 3·z1 + 5: a singular correlation; the noise of both is one normal."""
    data = correlated_records(4)
    data["z2"] = 3 * data["z1"] + 5
    counts = prepare(data, GRID, ["a"], continuous=["z1", "z2"])
    np.testing.assert_allclose(synthesis_correlation(counts)[:, 0, 1], 1.0)
    release = synthesize(stub_fit(counts, np.ones((1, 2, GRID.n_cells, 2))), data, m=1,
                         seed=1)[0]
    # (to rounding: the standardised means agree to ~1e-15, so R is 1 - ~1e-14, and a second
    # normal enters with a weight of ~1e-7)
    np.testing.assert_allclose(release["z2"], 3 * release["z1"] + 5, rtol=0, atol=1e-5)


def test_roots_reproduce_their_correlation():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(5, 3, 3))
    covariance = a @ np.swapaxes(a, 1, 2)
    scale = np.sqrt(np.diagonal(covariance, axis1=1, axis2=2))
    correlation = covariance / (scale[:, :, None] * scale[:, None, :])
    correlation[0] = 1.0  # rank one: every column the same
    roots = correlation_roots(correlation)
    np.testing.assert_allclose(roots @ np.swapaxes(roots, 1, 2), correlation, atol=1e-12)
    np.testing.assert_array_equal(roots[1:], np.tril(roots[1:]))  # Cholesky where it exists


def test_one_covariate_draws_as_before(correlated):
    """The copula is for two or more columns: one column's draws are eq. 2.27's normals."""
    data, _ = correlated
    counts = prepare(data, GRID, ["a"], continuous="z1")
    fit = stub_fit(counts, np.ones((1, 2, GRID.n_cells, 2)))
    release = synthesize(fit, data, m=1, seed=3)[0]
    noise = standard_noise(counts, release)[:, 0]
    assert stats.kstest(noise, "norm").pvalue > ALPHA


def test_synthesis_correlation_needs_a_continuous_column(correlated):
    data, _ = correlated
    with pytest.raises(InputError, match=r"prepare\(\.\.\., continuous=column\) first"):
        synthesis_correlation(prepare(data, GRID, ["a"]))
