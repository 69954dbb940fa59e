"""Ripley's K/L against PySAL's pointpats, and under complete spatial randomness (issue 19).

pointpats 2.5 (``pointpats.distance_statistics.k``/``l``) implements only the uncorrected
estimator: ``K̂_pp(r) = A · 2 #{i < j: d_ij < r} / n²`` with ``A`` the area of the points'
bounding box (it takes no window). Ours without correction is
``K̂(r) = |W| · 2 #{i < j: d_ij <= r} / (n (n - 1))``, so with no distance equal to a radius
``K̂ = K̂_pp · (|W| / A) · n / (n - 1)`` exactly. The edge-corrected estimators are checked
against pointpats' pair counts within bounds derived from their weights, and in expectation
under complete spatial randomness, where both are unbiased for ``πr²``.
"""

import math

import numpy as np
import pytest
import shapely
from pointpats import distance_statistics
from scipy.spatial.distance import pdist, squareform

import geosynth
from geosynth.metrics import ripley_k


@pytest.fixture(scope="module")
def thesis():
    """The thesis scenario points, their window and 51 radii up to a quarter of its side."""
    scenario = geosynth.datasets.paiva_scenario(n=500, seed=1)
    xmin, ymin, xmax, ymax = scenario.bounds
    radii = np.linspace(0.0, min(xmax - xmin, ymax - ymin) / 4, 51)
    xy = shapely.get_coordinates(scenario.data.geometry)
    distances = pdist(xy)
    # The two estimators count d < r and d <= r: no distance may equal a radius for the
    # comparison to be exact (the closest is ~2 mm away on this 10 km square).
    assert np.min(np.abs(distances[:, None] - radii[1:])) > 1e-6
    return scenario, xy, radii, distances


def normalisation_factor(xy, window):
    """``(|W| / A) · n / (n - 1)``: pointpats' uncorrected K (and L squared) to ours."""
    n = xy.shape[0]
    xmin, ymin, xmax, ymax = window
    bbox_area = np.prod(xy.max(axis=0) - xy.min(axis=0))
    return (xmax - xmin) * (ymax - ymin) / bbox_area * n / (n - 1)


def pointpats_in_our_normalisation(xy, window, radii):
    """pointpats' uncorrected K rescaled to the window's area and the n (n - 1) pair count."""
    support, k_pp = distance_statistics.k(xy, support=radii, edge_correction=None)
    np.testing.assert_array_equal(support, radii)
    return k_pp * normalisation_factor(xy, window)


def test_uncorrected_k_and_l_equal_pointpats_on_the_thesis_scenario(thesis):
    scenario, xy, radii, _ = thesis
    ours = ripley_k(scenario.data, scenario.bounds, radii, correction="none")
    # Same pair counts, different constants: equal to rounding (relative 1e-12).
    np.testing.assert_allclose(
        ours.k, pointpats_in_our_normalisation(xy, scenario.bounds, radii), rtol=1e-12, atol=0
    )
    assert ours.k[-1] > 0
    # L = sqrt(K / π) in both: pointpats' L scales by the square root of the same factor.
    _, l_pp = distance_statistics.l(xy, support=radii, edge_correction=None)
    factor = normalisation_factor(xy, scenario.bounds)
    assert 1.0 < factor < 1.25  # the points' box is ~91% of the window on each side
    np.testing.assert_allclose(ours.l, l_pp * math.sqrt(factor), rtol=1e-12, atol=0)


def _inside_fraction_lower_bound(xy, window, radius, angles=4096):
    """Lower bound of the share of each circle (centre xy, given radius) inside the window.

    Counting which of ``angles`` equally spaced points of the circle lie inside the rectangle
    misclassifies at most one point per crossing of the circle with the boundary (at most 8),
    so the count minus ``8 / angles`` is a lower bound (independent of the closed form in
    geosynth.metrics.utility).
    """
    xmin, ymin, xmax, ymax = window
    theta = 2 * np.pi * (np.arange(angles) + 0.5) / angles
    px = xy[:, 0, None] + radius * np.cos(theta)
    py = xy[:, 1, None] + radius * np.sin(theta)
    inside = (px >= xmin) & (px <= xmax) & (py >= ymin) & (py <= ymax)
    return inside.mean(axis=1) - 8 / angles


@pytest.mark.parametrize("correction", ["isotropic", "translation"])
def test_corrected_k_within_derived_bounds_of_pointpats(thesis, correction):
    # K̂_c(r) = |W| / (n (n - 1)) Σ_{i≠j, d_ij <= r} w_ij with weights w_ij >= 1, so
    # pointpats' (rescaled) count is a lower bound. Upper bounds from the weights:
    # * translation: w_ij = ab / ((a - |dx|)(b - |dy|)) <= 1 / ((1 - r/a)(1 - r/b)) for d <= r;
    # * isotropic: w_ij = 1 / e(x_i, d_ij) <= 1 / e(x_i, r), since in a convex window the share
    #   e(x, d) of the circle inside never grows with d; so K̂ <= |W|/(n(n-1)) Σ_i N_i(r)/e(x_i, r)
    #   with N_i(r) the neighbours of i within r.
    scenario, xy, radii, distances = thesis
    window = scenario.bounds
    xmin, ymin, xmax, ymax = window
    a, b = xmax - xmin, ymax - ymin
    n = xy.shape[0]
    ours = ripley_k(xy, window, radii, correction).k
    lower = pointpats_in_our_normalisation(xy, window, radii)
    if correction == "translation":
        upper = lower / ((1 - radii / a) * (1 - radii / b))
    else:
        neighbours = squareform(distances)
        np.fill_diagonal(neighbours, np.inf)
        upper = np.zeros(radii.size)
        for k, radius in enumerate(radii):
            counts = (neighbours <= radius).sum(axis=1)
            if radius > 0:
                share = _inside_fraction_lower_bound(xy, window, radius)
                assert share.min() > 0.25
                upper[k] = a * b / (n * (n - 1)) * np.sum(counts / share)
        # Σ_i N_i(r) is pointpats' pair count (ties excluded by the fixture).
        pairs = np.array([(neighbours <= radius).sum() for radius in radii])
        np.testing.assert_allclose(a * b / (n * (n - 1)) * pairs, lower, rtol=1e-12)
    tol = 1e-12 * ours
    assert np.all(ours >= lower - tol) and np.all(ours <= upper + tol)
    # The correction does something at the largest radius. The scenario's intensity (a
    # mixture of bumps, thesis Table 3) is low near the edges: no point is within 240 m of
    # one, so the isotropic weights are all 1 up to r = 240 m and only 5% above the
    # uncorrected K at r = 2.5 km, while the translation weights (25% there) do not look at
    # where the points are.
    assert ours[-1] > 1.04 * lower[-1]


def test_translation_k_equals_the_sum_over_all_pairs(thesis):
    # Brute force over every pair (pdist order) instead of cKDTree pairs in chunks.
    scenario, xy, radii, distances = thesis
    xmin, ymin, xmax, ymax = scenario.bounds
    a, b = xmax - xmin, ymax - ymin
    n = xy.shape[0]
    i, j = np.triu_indices(n, k=1)
    weights = a * b / ((a - np.abs(xy[i, 0] - xy[j, 0])) * (b - np.abs(xy[i, 1] - xy[j, 1])))
    expected = [2 * a * b / (n * (n - 1)) * weights[distances <= r].sum() for r in radii]
    np.testing.assert_allclose(
        ripley_k(xy, scenario.bounds, radii, "translation").k, expected, rtol=1e-12
    )


def test_mean_k_is_pi_r_squared_under_csr_and_uncorrected_is_low():
    # 200 binomial patterns of n = 200 points in the unit square. With |W| / (n (n - 1)), the
    # isotropic and translation estimators are unbiased for πr² at every r <= 1/2, and the
    # uncorrected one has mean πr² c(r) with c(r) = ∫_{|h|<=r} (1-|h1|)(1-|h2|) dh / (πr²)
    # = 1 - 8r/(3π) + r²/(2π) (the set covariance of the unit square: ∫|h1| = 4r³/3 and
    # ∫|h1 h2| = r⁴/2 over the disc). Tolerance: 4 Monte Carlo standard errors of the mean of
    # K̂(r)/(πr²) over the patterns (1.7e-3 at r = 0.25 to 6e-3 at r = 0.05).
    rng = np.random.default_rng(2018)
    radii = np.array([0.05, 0.1, 0.15, 0.2, 0.25])
    corrections = ("isotropic", "translation", "none")
    patterns = 200
    ratio = {c: np.empty((patterns, radii.size)) for c in corrections}
    for p in range(patterns):
        xy = rng.random((200, 2))
        for c in corrections:
            ratio[c][p] = ripley_k(xy, (0, 0, 1, 1), radii, c).k / (math.pi * radii**2)
    c_r = 1 - 8 * radii / (3 * math.pi) + radii**2 / (2 * math.pi)
    for c in corrections:
        mean = ratio[c].mean(axis=0)
        se = ratio[c].std(axis=0, ddof=1) / math.sqrt(patterns)
        assert np.all(se < 0.01)
        target = c_r if c == "none" else 1.0
        assert np.all(np.abs(mean - target) < 4 * se), (c, mean, se)
    # Biased low by ~3% (r = 0.05) to ~20% (r = 0.25): more than 4 standard errors at every r.
    none_mean = ratio["none"].mean(axis=0)
    none_se = ratio["none"].std(axis=0, ddof=1) / math.sqrt(patterns)
    assert np.all(none_mean + 4 * none_se < 1)
    assert none_mean[-1] < 0.82
