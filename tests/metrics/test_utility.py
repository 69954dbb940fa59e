"""Utility measures: combining rules, interval overlap, quadrant coverage, Ripley's K."""

import doctest
import math
import warnings

import geopandas as gpd
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import geosynth.metrics.matching
import geosynth.metrics.risk
import geosynth.metrics.utility
from geosynth.errors import InputError
from geosynth.metrics import (
    combine_fully_synthetic,
    combine_partially_synthetic,
    greedy_match,
    interval_overlap,
    quadrant_coverage,
    ripley_distance,
    ripley_k,
)
from geosynth.metrics.utility import MAX_K_POINTS, _inside_fraction, _rect_counts, k_subsample

CRS = "EPSG:31983"


def frame(xy, crs=CRS, **columns):
    xy = np.asarray(xy, dtype=float).reshape(-1, 2)
    return gpd.GeoDataFrame(columns, geometry=gpd.points_from_xy(xy[:, 0], xy[:, 1]), crs=crs)


@pytest.mark.parametrize(
    "module", [geosynth.metrics.matching, geosynth.metrics.risk, geosynth.metrics.utility]
)
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0


# --------------------------------------------------------------------------- combining rules


def test_partially_synthetic_by_hand():
    # q = (0.2, 0.4), u = (0.01, 0.03), m = 2: q̄ = 0.3, b = (0.1² + 0.1²)/1 = 0.02, ū = 0.02,
    # T = b/m + ū = 0.01 + 0.02 = 0.03, ν = (m - 1)(1 + m ū / b)² = (1 + 2)² = 9.
    r = combine_partially_synthetic([0.2, 0.4], [0.01, 0.03])
    assert r.estimate == pytest.approx(0.3)
    assert r.variance == pytest.approx(0.03)
    assert r.df == pytest.approx(9.0)
    half = stats.t.ppf(0.975, 9) * math.sqrt(0.03)
    assert (r.lower, r.upper) == pytest.approx((0.3 - half, 0.3 + half))
    # q = (1, 2, 3), u = 1: q̄ = 2, b = 1, ū = 1, T = 1/3 + 1 = 4/3, ν = 2 (1 + 3)² = 32; 90%.
    r = combine_partially_synthetic([1.0, 2.0, 3.0], [1.0, 1.0, 1.0], level=0.9)
    assert (r.estimate, r.variance, r.df) == pytest.approx((2.0, 4 / 3, 32.0))
    assert r.upper - r.estimate == pytest.approx(stats.t.ppf(0.95, 32) * math.sqrt(4 / 3))


def test_partially_synthetic_identical_releases_give_normal_interval():
    # b = 0: T = ū = 4 and ν -> infinity, so the interval is 1 ∓ z_0.975 · 2.
    r = combine_partially_synthetic([1.0, 1.0, 1.0], [4.0, 4.0, 4.0])
    assert r.variance == 4.0 and r.df == math.inf
    assert r.upper == pytest.approx(1 + stats.norm.ppf(0.975) * 2)


def test_partially_synthetic_batches_match_scalars():
    rng = np.random.default_rng(0)
    q = rng.normal(size=(5, 7))
    u = rng.uniform(0.1, 1, size=(5, 7))
    batch = combine_partially_synthetic(q, u)
    for k in range(7):
        one = combine_partially_synthetic(q[:, k], u[:, k])
        for field in ("estimate", "variance", "df", "lower", "upper"):
            assert getattr(batch, field)[k] == pytest.approx(getattr(one, field))


def test_fully_synthetic_by_hand():
    # q = (1, 2, 3), u = 0.5: b = 1, ū = 0.5, T_f = (1 + 1/3)·1 - 0.5 = 5/6,
    # ν_f = 2 (1 - 3·0.5 / (4·1))² = 2 (5/8)² = 0.78125.
    r = combine_fully_synthetic([1.0, 2.0, 3.0], [0.5, 0.5, 0.5])
    assert (r.estimate, r.variance, r.df) == pytest.approx((2.0, 5 / 6, 0.78125))
    assert r.upper - r.estimate == pytest.approx(stats.t.ppf(0.975, 0.78125) * math.sqrt(5 / 6))


def test_fully_synthetic_interval_is_infinite_when_its_df_vanishes():
    # 1 - m·ū/((m+1)·b) rounded to 0 with T_f = 1.4e-17 > 0: ν = 0, SciPy's quantile NaN, and
    # the rectangle counted as "undefined" (a release without points) in the coverage table.
    q = [0.010411663480752398, 0.7542954919436754, 0.21977454200524427, 0.2170653405771461,
         0.15654818743323762]
    r = combine_fully_synthetic(q, [0.09603333300374758] * 5)
    assert r.df == 0.0 and r.variance > 0
    assert r.lower == -np.inf and r.upper == np.inf
    with warnings.catch_warnings():  # a point interval (no variance) warns of no inf * 0
        warnings.simplefilter("error")
        point = combine_fully_synthetic([1.0, 1.0, 1.0], [0.0, 0.0, 0.0])
    assert point.lower == point.upper == 1.0


def test_fully_synthetic_negative_variance_adjustment():
    # q = (1, 1.1), u = 1: b = 0.005, T_f = 1.5·0.005 - 1 < 0 -> T* = (n_syn/n) ū.
    r = combine_fully_synthetic([1.0, 1.1], [1.0, 1.0])
    assert r.variance == pytest.approx(1.0) and r.df == math.inf
    r = combine_fully_synthetic([1.0, 1.1], [1.0, 1.0], n_synthetic=50, n_original=100)
    assert r.variance == pytest.approx(0.5)
    # T_f = 0 exactly: q = (0, 2) gives b = 2 and (1 + 1/2)·2 = 3 = ū; adjusted to ū as well.
    r = combine_fully_synthetic([0.0, 2.0], [3.0, 3.0])
    assert r.variance == pytest.approx(3.0) and r.df == math.inf


@pytest.mark.parametrize(
    "q, u, kwargs, message",
    [
        ([1.0], [1.0], {}, "at least 2 releases"),
        ([1.0, 2.0], [1.0], {}, "same shape"),
        ([1.0, 2.0], [1.0, -1.0], {}, ">= 0"),
        ([1.0, np.nan], [1.0, 1.0], {}, "finite"),
        ([1.0, 2.0], [1.0, 1.0], {"level": 95}, r"\(0, 1\)"),
    ],
)
def test_combining_rules_refuse_bad_input(q, u, kwargs, message):
    with pytest.raises(InputError, match=message):
        combine_partially_synthetic(q, u, **kwargs)
    with pytest.raises(InputError, match=message):
        combine_fully_synthetic(q, u, **kwargs)


def test_fully_synthetic_needs_both_sizes():
    with pytest.raises(InputError, match="both"):
        combine_fully_synthetic([1.0, 2.0], [1.0, 1.0], n_synthetic=10)


# --------------------------------------------------------------------------- interval overlap


def test_interval_overlap_by_hand():
    # [0, 4] and [1, 2]: overlap 1, covers 1/4 of the first and all of the second.
    assert interval_overlap((0, 4), (1, 2)) == pytest.approx(math.sqrt(1 / 4))
    assert interval_overlap((0, 4), (1, 2), kind="karr") == pytest.approx((1 / 4 + 1) / 2)
    # [0, 1] and [3, 5]: signed overlap -2 -> Karr (-2/1 - 2/2)/2 = -1.5; geometric 0.
    assert interval_overlap((0, 1), (3, 5), kind="karr") == pytest.approx(-1.5)
    assert interval_overlap((0, 1), (3, 5)) == 0.0
    # Touching intervals share no length.
    assert interval_overlap((0, 1), (1, 2)) == 0.0
    assert interval_overlap((0, 1), (1, 2), kind="karr") == 0.0


def test_interval_overlap_point_intervals():
    assert interval_overlap((1, 1), (1, 1)) == 1.0
    # A point inside [0, 4] is fully covered but covers none of it: geometric 0, Karr 1/2.
    assert interval_overlap((2, 2), (0, 4)) == 0.0
    assert interval_overlap((2, 2), (0, 4), kind="karr") == 0.5
    assert interval_overlap((5, 5), (0, 4), kind="karr") == pytest.approx((0 + -1 / 4) / 2)


intervals = st.tuples(
    st.floats(-100, 100, allow_nan=False), st.floats(0.001, 50, allow_nan=False)
).map(lambda t: (t[0], t[0] + t[1]))


@settings(deadline=None, max_examples=200)
@given(a=intervals, b=intervals, kind=st.sampled_from(["geometric", "karr"]))
def test_interval_overlap_properties(a, b, kind):
    assert interval_overlap(a, a, kind) == pytest.approx(1.0)
    value = interval_overlap(a, b, kind)
    assert value == pytest.approx(interval_overlap(b, a, kind))
    assert value <= 1.0 + 1e-12
    if a[1] < b[0] or b[1] < a[0]:  # disjoint
        assert value <= 0.0
    if kind == "geometric":
        assert value >= 0.0


def test_interval_overlap_batches_and_errors():
    a = np.array([[0, 1], [0, 4], [0, 1]])
    b = np.array([[0, 1], [1, 2], [2, 3]])
    np.testing.assert_allclose(interval_overlap(a, b), [1.0, 0.5, 0.0])
    with pytest.raises(InputError, match="lower > upper"):
        interval_overlap((1, 0), (0, 1))
    with pytest.raises(InputError, match="kind"):
        interval_overlap((0, 1), (0, 1), kind="jaccard")


# --------------------------------------------------------------------------- quadrant coverage


def scenario(n, seed):
    rng = np.random.default_rng(seed)
    xy = rng.uniform(0, 100, (n, 2))
    # Outcome more likely in the east, so proportions vary between rectangles.
    y = (rng.random(n) < 0.2 + 0.6 * xy[:, 0] / 100).astype(int)
    return frame(xy, y=y), xy, y


def test_quadrant_coverage_identical_releases_is_one():
    original, _, _ = scenario(2000, 0)
    releases = [original.copy() for _ in range(5)]
    result = quadrant_coverage(original, releases, "y", n_quadrants=300, seed=1)
    # Identical releases: b_m = 0, T = ū = the Wald variance, ν = ∞: the same interval.
    assert result.n_undefined == 0
    assert result.mean_overlap == pytest.approx(1.0, abs=1e-9)
    table = result.quadrants
    assert len(table) == 300 and (table["n_original"] >= 20).all()
    np.testing.assert_allclose(table["lower_synthetic"], table["lower_original"], atol=1e-12)
    assert (table["x0"] < table["x1"]).all() and (table["y0"] < table["y1"]).all()


def test_quadrant_coverage_detects_useless_releases():
    original, xy, y = scenario(2000, 0)
    rng = np.random.default_rng(3)
    # Locations kept, outcomes shuffled: proportions become flat, intervals move away.
    releases = [frame(xy, y=rng.permutation(y)) for _ in range(5)]
    result = quadrant_coverage(original, releases, "y", n_quadrants=300, seed=1)
    assert result.mean_overlap < 0.8
    again = quadrant_coverage(original, releases, "y", n_quadrants=300, seed=1)
    assert again.mean_overlap == result.mean_overlap  # seeded


def test_quadrant_coverage_counts_match_a_direct_count():
    original, xy, y = scenario(500, 4)
    result = quadrant_coverage(original, [original, original], "y", n_quadrants=50, seed=2)
    for row in result.quadrants.itertuples():
        in_x = (xy[:, 0] >= row.x0) & (xy[:, 0] <= row.x1)
        inside = in_x & (xy[:, 1] >= row.y0) & (xy[:, 1] <= row.y1)
        assert row.n_original == inside.sum()
        assert row.p_original == pytest.approx(y[inside].mean())


def test_quadrant_coverage_combines_fully_synthetic_releases_by_their_rules():
    # ε-DP releases synthesize every value: the partial rules' variance ū + b/m understated
    # theirs, (1 + 1/m) b - ū (Raghunathan, Reiter & Rubin 2003), with Reiter's (2002)
    # adjustment n_syn/n · ū where that is not positive. Rebuilt here rectangle by rectangle.
    original, _, _ = scenario(800, 5)
    releases = [scenario(800, 100 + k)[0] for k in range(4)]  # independent: fully synthetic
    full = quadrant_coverage(original, releases, "y", n_quadrants=40, seed=3, rules="full")
    partial = quadrant_coverage(original, releases, "y", n_quadrants=40, seed=3)
    assert full.rules == "full" and partial.rules == "partial"
    table = full.quadrants
    np.testing.assert_array_equal(table[["x0", "y0", "x1", "y1"]],
                                  partial.quadrants[["x0", "y0", "x1", "y1"]])
    counts = np.array([
        [[((xy[:, 0] >= r.x0) & (xy[:, 0] <= r.x1) & (xy[:, 1] >= r.y0) & (xy[:, 1] <= r.y1)
           & flag).sum() for r in table.itertuples()]
         for flag in (np.ones(len(rel), dtype=bool), rel["y"].to_numpy() == 1)]
        for rel in releases for xy in [np.column_stack([rel.geometry.x, rel.geometry.y])]
    ], dtype=float)  # (m, 2, rectangles): points, successes
    n_l, s_l = counts[:, 0], counts[:, 1]
    q = s_l / n_l
    u = q * (1 - q) / n_l
    m = len(releases)
    b, ubar = q.var(axis=0, ddof=1), u.mean(axis=0)
    t_f = (1 + 1 / m) * b - ubar
    expected = np.where(t_f > 0, t_f, n_l.mean(axis=0) / table["n_original"] * ubar)
    np.testing.assert_allclose(table["variance_synthetic"], expected, rtol=1e-12)
    np.testing.assert_allclose(partial.quadrants["variance_synthetic"], ubar + b / m,
                               rtol=1e-12)
    assert (t_f > 0).any() and (t_f <= 0).any()  # both branches are exercised
    for k in np.flatnonzero(t_f > 0)[:3]:  # the same as combine_fully_synthetic, per rectangle
        one = combine_fully_synthetic(q[:, k], u[:, k])
        assert table["lower_synthetic"][k] == pytest.approx(one.lower, rel=1e-9)


def test_rect_counts_boundaries_and_blocks(monkeypatch):
    # Points on a 0..9 integer lattice; closed rectangles include their edges.
    g = np.arange(10.0)
    xy = np.array([(a, b) for a in g for b in g])
    success = (xy[:, 0] + xy[:, 1]) % 2 == 0
    rects = np.array([[0, 0, 9, 9], [2, 3, 4, 3], [2.5, 2.5, 2.9, 9], [1, 1, 2, 2]])
    # 100 points; row y=3 with x in 2..4 -> 3 points, 1 with even x+y (x=3); no integer x in
    # [2.5, 2.9]; the 2x2 block {1,2}^2 -> 4 points, 2 even.
    expected_n = [100, 3, 0, 4]
    expected_s = [50, 1, 0, 2]
    n, s = _rect_counts(xy, success, rects)
    assert n.tolist() == expected_n and s.tolist() == expected_s
    monkeypatch.setattr(geosynth.metrics.utility, "_BLOCK", 7)  # one rectangle per block
    n, s = _rect_counts(xy, success, rects)
    assert n.tolist() == expected_n and s.tolist() == expected_s


def test_quadrant_coverage_refuses_bad_input():
    original, _, _ = scenario(100, 0)
    with pytest.raises(InputError, match="at least 2 releases"):
        quadrant_coverage(original, [original], "y")
    bad = original.assign(y=original["y"] + 1)
    with pytest.raises(InputError, match="binary"):
        quadrant_coverage(original, [bad, bad], "y")
    # Feasible but (nearly) never reached: refused after drawing 200 rectangles per quadrant.
    with pytest.raises(InputError, match="lower min_points"):
        quadrant_coverage(original, [original, original], "y", n_quadrants=5, min_points=100,
                          seed=1)
    with pytest.raises(InputError, match="n_quadrants=100,000,000,000 is above 10,000,000"):
        quadrant_coverage(original, [original, original], "y", n_quadrants=10**11)


# --------------------------------------------------------------------------- Ripley's K


def test_ripley_k_hand_example():
    # Four points on the corners of a unit square in a 2 x 2 window; without edge correction
    # K(1) = |W| / (n (n - 1)) · (8 ordered pairs at distance 1) = 4/12 · 8 = 8/3.
    pts = [[0.5, 0.5], [1.5, 0.5], [0.5, 1.5], [1.5, 1.5]]
    result = ripley_k(pts, (0, 0, 2, 2), radii=[0.0, 0.5, 1.0], correction="none")
    np.testing.assert_allclose(result.k, [0.0, 0.0, 8 / 3])
    np.testing.assert_allclose(result.l, np.sqrt(result.k / np.pi))
    # Translation weight of a horizontal or vertical unit offset in a 2 x 2 window:
    # |W| / ((2 - 1)(2 - 0)) = 2, so K(1) = 4/12 · 8 · 2 = 16/3.
    trans = ripley_k(pts, (0, 0, 2, 2), radii=[1.0], correction="translation")
    np.testing.assert_allclose(trans.k, [16 / 3])


def test_isotropic_inside_fraction_by_hand():
    box = (0.0, 0.0, 10.0, 10.0)
    px = np.array([5.0, 0.0, 0.0, 5.0, 1.0])
    py = np.array([5.0, 5.0, 0.0, 0.0, 1.0])
    d = np.array([2.0, 2.0, 2.0, 0.0, 2.0])
    # Centre: whole circle inside. On an edge: half. At a corner: a quarter. Radius 0: 1.
    # At (1, 1) with r = 2: the arcs beyond the left and bottom edges each subtend
    # 2·arccos(1/2) = 2π/3 and overlap by 2·π/3 - π/2 = π/6 (the corner is inside the circle),
    # so the outside fraction is (4π/3 - π/6)/(2π) = 7/12.
    np.testing.assert_allclose(
        _inside_fraction(px, py, d, box), [1.0, 0.5, 0.25, 1.0, 5 / 12], rtol=1e-12
    )


@pytest.mark.parametrize("correction", ["isotropic", "translation"])
def test_ripley_k_is_pi_r_squared_under_csr(correction):
    # Homogeneous Poisson (binomial) process, n = 2000 in the unit square. For a pair count
    # P ≈ n² π r² / 2 the relative SD of K̂ is about sqrt(2/π) / (n r) (0.8% at r = 0.05) plus a
    # shared-point term (≈ 0.7% at r = 0.25 for n = 1000, less for n = 2000), so 5% is > 5 SD at
    # every radius. Without edge correction K̂(0.25) is ~20% low (see the next test).
    rng = np.random.default_rng(42)
    xy = rng.random((2000, 2))
    r = np.array([0.05, 0.1, 0.15, 0.2, 0.25])
    result = ripley_k(xy, (0, 0, 1, 1), r, correction)
    np.testing.assert_allclose(result.k, np.pi * r**2, rtol=0.05)
    np.testing.assert_allclose(result.l, r, rtol=0.03)


def test_ripley_k_without_correction_is_biased_low():
    rng = np.random.default_rng(42)
    xy = rng.random((2000, 2))
    result = ripley_k(xy, (0, 0, 1, 1), [0.25], "none")
    # Edge effects: a point within r of an edge loses part of its circle; on average about
    # 20% of the area at r = 0.25 for the unit square.
    assert result.k[0] < 0.9 * np.pi * 0.25**2


def test_ripley_k_refuses_bad_input():
    with pytest.raises(InputError, match="outside the window"):
        ripley_k([[0.5, 0.5], [2.0, 0.5]], (0, 0, 1, 1))
    with pytest.raises(InputError, match="half the shorter"):
        ripley_k([[0.5, 0.5], [0.2, 0.5]], (0, 0, 1, 1), radii=[0.1, 0.6])
    with pytest.raises(InputError, match="strictly increasing"):
        ripley_k([[0.5, 0.5], [0.2, 0.5]], (0, 0, 1, 1), radii=[0.2, 0.1])
    with pytest.raises(InputError, match="correction"):
        ripley_k([[0.5, 0.5], [0.2, 0.5]], (0, 0, 1, 1), correction="border")
    assert np.isnan(ripley_k([[0.5, 0.5]], (0, 0, 1, 1)).k).all()


def test_ripley_distance_zero_for_identical_and_positive_for_clustered():
    rng = np.random.default_rng(1)
    xy = rng.uniform(0, 100, (600, 2))
    original = frame(xy, b=np.repeat(["a", "b"], 300))
    same = ripley_distance(
        original, [original.copy(), original.copy()], by="b", window=(0, 0, 100, 100)
    )
    assert same.loc[["a", "b", "mean"], "sup_l_difference"].tolist() == [0.0, 0.0, 0.0]
    # Clustered release: points drawn tightly around 10 centres.
    centres = rng.uniform(10, 90, (10, 2))
    clustered = centres[rng.integers(0, 10, 600)] + rng.normal(0, 2, (600, 2))
    release = frame(np.clip(clustered, 0, 100), b=np.repeat(["a", "b"], 300))
    table = ripley_distance(original, release, by="b", window=(0, 0, 100, 100))
    # Under CSR L(r) ≈ r; clusters of SD 2 inflate L at small r by several units.
    assert (table.loc[["a", "b"], "sup_l_difference"] > 3).all()
    overall = ripley_distance(original, release, window=(0, 0, 100, 100), mean_row=False)
    assert overall.index.tolist() == ["all"] and overall["n_original"].tolist() == [600]


def test_thinned_k_is_unbiased_for_the_k_of_all_points():
    # Derived: a simple random sample of k of n points holds each ordered pair with
    # probability k(k-1)/(n(n-1)), which K's 1/(k(k-1)) cancels, and an (isotropic) pair weight
    # does not depend on the sample, so E[K_sample] is K of all the points. Monte Carlo over
    # 3,000 samples, within 4 standard errors at every radius.
    rng = np.random.default_rng(11)
    xy = np.vstack([rng.uniform(0, 100, (30, 2)), rng.normal(40, 3, (30, 2))])
    window, radii = (0, 0, 100, 100), np.linspace(0, 25, 6)
    full = ripley_k(xy, window, radii).k
    samples = np.array([ripley_k(xy[rng.choice(60, 15, replace=False)], window, radii).k
                        for _ in range(3000)])
    se = samples.std(axis=0, ddof=1) / np.sqrt(len(samples))
    assert np.all(np.abs(samples.mean(axis=0) - full)[1:] < 4 * se[1:])
    # ripley_k's max_points is exactly that estimator on k_subsample's sample, which depends
    # on n and max_points only (not on where the points are), and holds distinct positions
    chosen = k_subsample(60, 15)
    assert len(set(chosen.tolist())) == 15 and np.all(np.diff(chosen) > 0)
    np.testing.assert_array_equal(k_subsample(60, 15), chosen)
    in_xy_order = xy[np.lexsort((xy[:, 1], xy[:, 0]))]
    np.testing.assert_array_equal(ripley_k(xy, window, radii, max_points=15).k,
                                  ripley_k(in_xy_order[chosen], window, radii).k)
    assert k_subsample(60, 60) == slice(None) and k_subsample(60, None) == slice(None)
    # the same points whatever the rows' order (positions in (x, y) order): shuffled rows
    # gave L = 0.129 against 0.100
    shuffled = xy[rng.permutation(60)]
    np.testing.assert_array_equal(ripley_k(shuffled, window, radii, max_points=15).k,
                                  ripley_k(xy, window, radii, max_points=15).k)


def test_ripley_distance_thins_large_combinations_and_counts_them_all():
    rng = np.random.default_rng(2)
    n = MAX_K_POINTS + 500
    original = frame(rng.uniform(0, 100, (n, 2)), b=np.repeat(["a"], n))
    release = frame(rng.uniform(0, 100, (n, 2)), b=np.repeat(["a"], n))
    window, radii = (0, 0, 100, 100), np.linspace(0, 25, 6)
    table = ripley_distance(original, release, window=window, radii=radii, mean_row=False)
    xy_o = np.column_stack([original.geometry.x, original.geometry.y])
    xy_r = np.column_stack([release.geometry.x, release.geometry.y])
    chosen = k_subsample(n, MAX_K_POINTS)
    xy_o, xy_r = (xy[np.lexsort((xy[:, 1], xy[:, 0]))] for xy in (xy_o, xy_r))
    expected = np.max(np.abs(ripley_k(xy_o[chosen], window, radii).l
                             - ripley_k(xy_r[chosen], window, radii).l))
    assert table["sup_l_difference"].iloc[0] == expected
    assert table["n_original"].iloc[0] == n and table["n_synthetic"].iloc[0] == n
    assert expected < 0.5  # both uniform: thinning leaves no gap a poor synthesis would show


@pytest.mark.parametrize(("max_points", "error", "match"), [
    (1, InputError, "max_points must be an int >= 2, got 1; a K function needs pairs"),
    (2.5, TypeError, "max_points must be an int, got float"),
])
def test_ripley_max_points_is_checked(max_points, error, match):
    original = frame(np.random.default_rng(0).uniform(0, 10, (5, 2)))
    with pytest.raises(error, match=match):
        ripley_distance(original, original, window=(0, 0, 10, 10), max_points=max_points)
    with pytest.raises(error, match=match):
        ripley_k([[1, 1], [2, 2]], (0, 0, 10, 10), max_points=max_points)


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    (dict(level=1.0), InputError, r"level must lie in \(0, 1\), got 1\.0; e\.g\. level=0\.95"),
    (dict(level="0.9"), TypeError, "level must be a real number, got str"),
    (dict(n_synthetic=0, n_original=10), InputError, "n_synthetic must be an int >= 1"),
    (dict(n_synthetic=10, n_original=2.5), TypeError, "n_original must be an int, got float"),
])
def test_combining_rules_check_their_parameters(kwargs, error, match):
    with pytest.raises(error, match=match):
        combine_fully_synthetic([1.0, 2.0, 3.0], [1.0, 1.0, 1.0], **kwargs)


@pytest.mark.parametrize(("kwargs", "error", "match"), [
    (dict(level=0.0), InputError, r"level must lie in \(0, 1\)"),
    (dict(n_quadrants=0), InputError, "n_quadrants must be an int >= 1"),
    (dict(min_points=True), TypeError, "min_points must be an int, got bool"),
    (dict(rules="fully"), InputError, r'rules must be "partial" \(locations synthesized'),
    (dict(rules=1), InputError, r'rules must be "partial"'),  # None: from the releases
])
def test_quadrant_coverage_checks_its_parameters(kwargs, error, match):
    original, _, _ = scenario(50, 0)
    with pytest.raises(error, match=match):
        quadrant_coverage(original, [original, original], "y", seed=1, **kwargs)


def test_quadrant_coverage_refuses_an_unreachable_min_points_before_drawing(monkeypatch):
    # More points per rectangle than the original has: it drew 200 x n_quadrants rectangles
    # (9 s at 1,000) before saying so. Now no rectangle is drawn at all.
    original, xy, _ = scenario(100, 0)
    drawn = []
    monkeypatch.setattr(geosynth.metrics.utility, "_draw_rectangles",
                        lambda *args: drawn.append(args))
    releases = [original, original]
    with pytest.raises(InputError, match=r"min_points=101 is more than the number of original "
                                         r"points \(100\).*pass min_points=100 or less$"):
        quadrant_coverage(original, releases, "y", n_quadrants=1000, min_points=101)
    left = (xy[:, 0] <= 50).sum()  # the points within bounds count, not all of them
    with pytest.raises(InputError, match=rf"within bounds \({left}\).*or wider bounds"):
        quadrant_coverage(original, releases, "y", min_points=left + 1, bounds=(0, 0, 50, 100))
    with pytest.raises(InputError, match="bounds holds none of the original points"):
        quadrant_coverage(original, releases, "y", bounds=(200, 200, 300, 300))
    assert drawn == []


def test_ripley_distance_names_a_bad_by():
    original, _, _ = scenario(30, 0)
    with pytest.raises(InputError, match="by must be a column name or a list of column names, "
                                         "got int"):
        ripley_distance(original, original, by=3)


def test_ripley_distance_refuses_text_levels_against_numbers():
    original, _, _ = scenario(30, 0)
    text = original.assign(y=original["y"].astype(str))
    with pytest.raises(InputError, match=r"by column 'y' holds numbers in original but "
                                         r"text in releases\[0\]"):
        ripley_distance(original, text, by="y")


def test_ripley_distance_mean_row_must_be_a_bool_and_unambiguous():
    original, _, _ = scenario(30, 0)
    with pytest.raises(TypeError, match="mean_row must be True or False, got str 'no'"):
        ripley_distance(original, original, by="y", mean_row="no")
    named = original.assign(kind=np.where(original["y"] == 1, "mean", "other"))
    with pytest.raises(InputError, match="by column 'kind' has a level 'mean'.*mean_row=False"):
        ripley_distance(named, named, by="kind")
    table = ripley_distance(named, named, by="kind", mean_row=False)
    assert sorted(table.index) == ["mean", "other"]


# --------------------------------------------------------------------------- the window


def test_a_window_derived_from_points_on_one_line_names_no_coordinate():
    # Records geocoded to one street (one easting): the message showed the easting and the
    # extreme northings at full precision.
    xy = np.column_stack([np.full(30, 614_056.0376), np.linspace(7_790_121.41, 7_799_849.54, 30)])
    original = frame(xy, y=np.arange(30) % 2)
    with pytest.raises(InputError, match="share one x or one y coordinate") as caught:
        quadrant_coverage(original, [original, original], "y")
    assert "614" not in str(caught.value) and "779" not in str(caught.value)
    with pytest.raises(InputError, match="share one x or one y") as caught:
        ripley_k(xy, None)
    assert "614" not in str(caught.value)


def test_a_grid_window_in_another_crs_is_refused():
    from geosynth import Grid
    from geosynth.errors import CRSError

    original, xy, _ = scenario(200, 5)
    grid = Grid.regular((0, 0, 100, 100), shape=(4, 4), crs="EPSG:3857")
    with pytest.raises(CRSError, match="grid uses EPSG:3857|to_crs"):
        quadrant_coverage(original, [original, original], "y", bounds=grid)
    with pytest.raises(CRSError, match="to_crs"):
        ripley_k(original, grid)
    with pytest.raises(CRSError, match="to_crs"):
        ripley_distance(original, [original], window=grid)
    same = Grid.regular((0, 0, 100, 100), shape=(4, 4), crs=CRS)
    assert ripley_k(original, same).k.shape == ripley_k(xy, (0, 0, 100, 100)).k.shape


def test_distances_in_degrees_are_refused():
    from geosynth.errors import CRSError

    lonlat = frame([[-43.9, -19.9], [-43.8, -19.8]], crs="EPSG:4326")
    with pytest.raises(CRSError, match="original_xy"):
        greedy_match(lonlat, lonlat)
    with pytest.raises(CRSError, match="points"):
        ripley_k(lonlat, (-44, -20, -43, -19))


# ------------------------------------------------------------------ oracles and CRS checks


@pytest.mark.parametrize("q", [[True, False, True], ["0.31", "0.42", "0.27"],
                               np.array([0.3 + 1j, 0.4, 0.2]), None])
def test_combining_rules_refuse_estimates_that_are_not_real_numbers(q):
    # Booleans and text were read as numbers; complex lost its imaginary part with a warning.
    for combine in (combine_partially_synthetic, combine_fully_synthetic):
        with pytest.raises(TypeError, match="q must be an array of estimates") as info:
            combine(q, [0.1, 0.1, 0.1])
        assert "0.31" not in str(info.value)  # a confidential estimate is never quoted


def test_combining_rules_refuse_masked_and_overflowing_values():
    masked = np.ma.masked_array([1.0, 2.0, 99.0], mask=[False, False, True])
    with pytest.raises(InputError, match="q is a masked array"):  # 99 was used as an estimate
        combine_partially_synthetic(masked, [1.0, 1.0, 1.0])
    # b_m of (1e200, -1e200) overflowed: variance and interval came out inf with a warning.
    with pytest.raises(InputError, match=r"q has estimates above 1e\+100"):
        combine_partially_synthetic([1e200, -1e200], [1.0, 1.0])
    with pytest.raises(InputError, match=r"u has variances above 1e\+100"):
        combine_fully_synthetic([1.0, 2.0], [1e300, 1e300])


def test_partially_synthetic_m_two_by_hand():
    # m = 2, q = (0, 2), u = (1, 3): q̄ = 1, b = ((0-1)² + (2-1)²)/1 = 2, ū = 2,
    # T_p = ū + b/m = 2 + 1 = 3, ν_p = (m-1)(1 + m ū / b)² = (1 + 2)² = 9.
    r = combine_partially_synthetic([0.0, 2.0], [1.0, 3.0], level=0.9)
    assert (r.estimate, r.variance, r.df) == (1.0, 3.0, 9.0)
    half = stats.t.ppf(0.95, 9) * math.sqrt(3.0)
    assert r.lower == pytest.approx(1.0 - half) and r.upper == pytest.approx(1.0 + half)


def test_partially_synthetic_zero_within_variance_has_m_minus_one_df():
    # ū_m = 0, b_m > 0: ν_p = (m - 1)(1 + 0)² = m - 1 and T_p = b_m / m.
    r = combine_partially_synthetic([1.0, 2.0, 3.0, 6.0], [0.0, 0.0, 0.0, 0.0])
    assert r.df == 3.0 and r.variance == pytest.approx(np.var([1, 2, 3, 6], ddof=1) / 4)


@pytest.mark.parametrize("a", [(-np.inf, np.inf), (0.0, np.inf)])
def test_interval_overlap_refuses_infinite_bounds(a):
    # [-inf, inf] against itself gave NaN; [0, inf] against [1, 2] gave 0.5 (Karr).
    with pytest.raises(InputError, match="a has infinite bounds"):
        interval_overlap(a, a, "karr")


@pytest.mark.parametrize("a", [(False, True), ("0", "1"), (0j, 1)])
def test_interval_overlap_refuses_bounds_that_are_not_real_numbers(a):
    with pytest.raises(TypeError, match=r"a must be \(lower, upper\) pairs of numbers"):
        interval_overlap(a, (0, 1))


def test_interval_overlap_refuses_bounds_whose_width_overflows():
    with pytest.raises(InputError, match=r"a has bounds above 1e\+100"):
        interval_overlap((-1e308, 1e308), (0, 1))


@pytest.mark.parametrize("bounds, match", [
    (("0", "0", "100", "100"), r"bounds\[0\] must be a real number, got str '0'"),
    ((False, False, 100, 100), r"bounds\[0\] must be a real number, got bool False"),
])
def test_quadrant_coverage_refuses_bounds_that_are_not_numbers(bounds, match):
    original, _, _ = scenario(50, 0)
    with pytest.raises(TypeError, match=match):
        quadrant_coverage(original, [original, original], "y", n_quadrants=5, seed=0,
                          min_points=3, bounds=bounds)


def test_quadrant_coverage_refuses_bounds_whose_span_overflows():
    # numpy's uniform raised a bare OverflowError ("high - low range exceeds valid bounds").
    original, _, _ = scenario(50, 0)
    with pytest.raises(InputError, match=r"bounds has a coordinate above 1e\+100"):
        quadrant_coverage(original, [original, original], "y", n_quadrants=5, seed=0,
                          min_points=3, bounds=(-1e308, -1e308, 1e308, 1e308))


def test_ripley_k_refuses_radii_that_are_not_numbers_and_huge_points():
    pts = [[0.5, 0.5], [0.2, 0.5]]
    with pytest.raises(TypeError, match="radii must be a 1-d array of distances"):
        ripley_k(pts, (0, 0, 1, 1), radii=[False, True])  # read as radii 0 and 1
    with pytest.raises(TypeError, match=r"window\[0\] must be a real number"):
        ripley_k(pts, ("0", "0", "1", "1"))
    # Coordinates of 1e300 raised a bare "cannot convert float NaN to integer".
    with pytest.raises(InputError, match=r"points has 2 points with \|x\| or \|y\|"):
        ripley_k([[1e300, 1e300], [-1e300, -1e300]], None)


def test_ripley_distance_and_distance_risk_refuse_an_original_without_rows():
    # Without original points no K was computed: a table of one NaN "mean" row came back, and
    # a typo in correction or radii went unnoticed.
    from geosynth.metrics import distance_risk

    empty = frame(np.empty((0, 2)), b=np.array([], dtype=str))
    release = frame([[10, 10], [20, 20]], b=["a", "b"])
    with pytest.raises(InputError, match="original has no rows, so ripley_distance has no"):
        ripley_distance(empty, release, by="b", window=(0, 0, 100, 100))
    with pytest.raises(InputError, match="original has no rows, so distance_risk has no"):
        distance_risk(empty, release, by="b")


def test_quadrant_coverage_repr_shows_no_rectangle_of_the_original():
    original, _, _ = scenario(200, 0)
    result = quadrant_coverage(original, [original, original], "y", n_quadrants=5, seed=0)
    # The repr printed the table: the original's count and proportion in each rectangle.
    assert " quadrants=" not in repr(result) and "x0" not in repr(result)
    assert f"mean_overlap={result.mean_overlap!r}" in repr(result)


def test_intensity_fidelity_repr_shows_no_original_count():
    from geosynth import Grid
    from geosynth.metrics import intensity_fidelity

    grid = Grid.regular((0, 0, 3, 1), shape=(1, 3), crs=CRS)
    original = frame([[0.5, 0.5]] * 7 + [[1.5, 0.5]] * 2)
    release = frame([[0.5, 0.5]] * 5 + [[2.5, 0.5]] * 4)
    fidelity = intensity_fidelity(original, release, grid)
    # Shares (7, 2, 0)/9 and (5, 0, 4)/9: L1 = (2 + 2 + 4)/9.
    assert fidelity.l1 == pytest.approx(8 / 9)
    assert fidelity.original.tolist() == [7.0, 2.0, 0.0]
    # The NamedTuple repr printed the original's count in every cell.
    assert "7." not in repr(fidelity) and "<3 counts>" in repr(fidelity)


def test_intensity_fidelity_on_a_lattice_away_from_the_points_is_refused():
    # Every point, original and synthetic, fell outside: the one outside bin matched and l1
    # was 0.0, a perfect score.
    from geosynth import Grid
    from geosynth.metrics import intensity_fidelity

    points = frame([[10.5, 10.5]] * 4 + [[11.5, 10.5]] * 3)
    away = Grid.regular((0, 0, 3, 1), shape=(1, 3), crs=CRS)
    with pytest.raises(InputError, match=r"none of the original points lies in a cell of grid"):
        intensity_fidelity(points, [points, points], away)
    west = Grid.regular((10, 10, 11, 12), shape=(2, 1), crs=CRS)  # 4 of 7 inside: measured
    fidelity = intensity_fidelity(points, [points, points], west)
    assert fidelity.l1 == 0.0 and fidelity.original.tolist() == [4.0, 0.0]


def test_a_categorical_zero_one_outcome_is_refused_with_a_true_reason():
    original, _, _ = scenario(50, 0)
    categorical = original.astype({"y": "category"})
    # The message said "0 other distinct value(s)": there are none, the dtype is the problem.
    with pytest.raises(InputError, match="dtype category and values 0/1 of no number type"):
        quadrant_coverage(categorical, [original, original], "y", n_quadrants=5, seed=0)


def test_rectangles_are_drawn_in_batches_of_bounded_memory(monkeypatch):
    # 2·n_quadrants per batch: at the cap of 10**7 rectangles, over a gigabyte at once.
    sizes = []

    def every_rectangle_holds_enough(xy, success, rects):
        sizes.append(len(rects))
        return np.full(len(rects), 5), np.zeros(len(rects))

    monkeypatch.setattr(geosynth.metrics.utility, "_rect_counts", every_rectangle_holds_enough)
    rects, n, _ = geosynth.metrics.utility._draw_rectangles(
        np.random.default_rng(0), (0.0, 0.0, 1.0, 1.0), np.zeros((1, 2)), np.zeros(1),
        n_quadrants=3_000_000, min_points=1)
    assert sizes == [2**20] * 3 and len(rects) == len(n) == 3_000_000
    sizes.clear()
    geosynth.metrics.utility._draw_rectangles(  # the default 1000: one batch of 2000, as before
        np.random.default_rng(0), (0.0, 0.0, 1.0, 1.0), np.zeros((1, 2)), np.zeros(1),
        n_quadrants=1000, min_points=1)
    assert sizes == [2000]


def test_an_unbounded_synthetic_interval_is_taken_at_its_limit():
    # The fully synthetic rules' ν_f near 0 gives t quantiles beyond float64: the interval
    # covers the original's and none of it is covered (geometric 0, Karr 1/2), as for a wide
    # finite one. The public interval_overlap refuses infinite bounds.
    overlap = geosynth.metrics.utility._overlap
    lower, upper = np.array([0.2]), np.array([0.4])
    for far in (np.inf, 1e300):
        assert overlap(lower, upper, np.array([-far]), np.array([far]), "geometric")[0] == \
            pytest.approx(0.0, abs=1e-150)  # sqrt(1 · 0.2/2e300) for the finite one
        assert overlap(lower, upper, np.array([-far]), np.array([far]), "karr")[0] == 0.5
    with pytest.raises(InputError, match="infinite bounds"):
        interval_overlap((0.2, 0.4), (-np.inf, np.inf))


@pytest.mark.parametrize("measure", ["ripley_k", "quadrant_coverage", "ripley_distance"])
def test_a_frame_without_crs_is_refused_against_a_grid_with_one(measure):
    # A Grid's CRS was compared only with a frame that had a CRS: points without one (e.g.
    # coordinates in other units) were measured in the grid's window silently, where
    # identification_risk and intensity_fidelity refuse them.
    from geosynth import Grid
    from geosynth.errors import CRSError

    original, xy, _ = scenario(200, 5)
    bare = original.set_crs(None, allow_override=True)
    grid = Grid.regular((0, 0, 100, 100), shape=(4, 4), crs=CRS)
    call = {
        "ripley_k": lambda: ripley_k(bare, grid),
        "quadrant_coverage": lambda: quadrant_coverage(bare, [bare, bare], "y", n_quadrants=5,
                                                       seed=0, bounds=grid),
        "ripley_distance": lambda: ripley_distance(bare, [bare], window=grid),
    }[measure]
    with pytest.raises(CRSError, match=r"has no CRS while the grid uses EPSG:31983"):
        call()
    assert ripley_k(xy, grid).k.shape == (51,)  # arrays carry no CRS: taken in the grid's


def test_combining_rules_take_a_tiny_between_variance_without_warning():
    # ū / b_m overflowed for b_m ~ 5e-321 (a RuntimeWarning) on the way to ν = ∞, its limit.
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        partial = combine_partially_synthetic([0.0, 1e-160], [1.0, 1.0])
        full = combine_fully_synthetic([0.0, 1e-160], [1.0, 1.0])
    assert partial.df == math.inf and partial.variance == pytest.approx(1.0)
    assert full.df == math.inf and full.variance == pytest.approx(1.0)  # T_f < 0: adjusted


def test_partially_synthetic_rules_recover_their_coverage():
    # Recovery of a known value: Q = 0 and m releases with q_l = Q + e + d_l, where e ~ N(0, U)
    # is the shared error of the original estimate and d_l ~ N(0, B) the synthesis noise;
    # u_l = U. Then q̄ - Q ~ N(0, U + B/m), which T_p = ū + b_m/m estimates with ν_p df, so the
    # 90% interval covers Q in 90% of the 4000 repetitions (SD 0.5%; 3 SD = 1.4%).
    rng = np.random.default_rng(2024)
    m, reps, big_u, big_b = 3, 4000, 1.0, 4.0
    q = rng.normal(0, math.sqrt(big_u), reps) + rng.normal(0, math.sqrt(big_b), (m, reps))
    r = combine_partially_synthetic(q, np.full((m, reps), big_u), level=0.9)
    covered = np.mean((r.lower <= 0) & (0 <= r.upper))
    assert covered == pytest.approx(0.9, abs=0.015)


def test_ripley_k_equals_a_brute_force_sum_with_ties_in_a_rectangle():
    # K̂(r) = |W| / (n (n - 1)) Σ_{i ≠ j} w_ij [d_ij <= r] summed pair by pair in a 3 x 1 window,
    # with three duplicated points (d = 0, counted at r = 0) and two points on corners. The
    # isotropic weight is checked against the share of 20,000 equally spaced points of each
    # circle that fall in the window (error ~ 1e-4 of the share).
    rng = np.random.default_rng(5)
    box = (0.0, 0.0, 3.0, 1.0)
    xy = rng.uniform((0, 0), (3, 1), (20, 2))
    xy = np.vstack([xy, xy[:3], [[0.0, 0.0], [3.0, 1.0]]])
    r = np.array([0.0, 0.05, 0.1, 0.2, 0.35, 0.5])
    theta = (np.arange(20_000) + 0.5) / 20_000 * 2 * np.pi
    n = xy.shape[0]
    sums = {"none": np.zeros(r.size), "translation": np.zeros(r.size),
            "isotropic": np.zeros(r.size)}
    for i in range(n):
        for j in range(n):
            dx, dy = xy[j] - xy[i]
            d = math.hypot(dx, dy)
            if i == j or d > r[-1]:
                continue
            x, y = xy[i, 0] + d * np.cos(theta), xy[i, 1] + d * np.sin(theta)
            share = np.mean((x >= 0) & (x <= 3) & (y >= 0) & (y <= 1)) if d > 0 else 1.0
            hit = d <= r
            sums["none"] += hit
            sums["translation"] += hit * 3.0 / ((3.0 - abs(dx)) * (1.0 - abs(dy)))
            sums["isotropic"] += hit / share
    for correction, total in sums.items():
        expected = 3.0 / (n * (n - 1)) * total
        got = ripley_k(xy, box, r, correction).k
        rtol = 1e-3 if correction == "isotropic" else 1e-12
        np.testing.assert_allclose(got, expected, rtol=rtol)
    assert sums["none"][0] == 6  # the three duplicated pairs, both orders, at r = 0


def test_interval_overlap_names_batches_that_do_not_broadcast():
    # NumPy's "operands could not be broadcast together with shapes (3,) (2,)" named neither.
    with pytest.raises(InputError, match=r"^a and b hold batches of \(3,\) and \(2,\) intervals, "
                                         r"which do not broadcast"):
        interval_overlap(np.zeros((3, 2)), np.zeros((2, 2)))
    single = interval_overlap(np.array([[0.0, 1.0], [0.5, 2.0]]), (0.0, 1.0))
    np.testing.assert_allclose(single, [1.0, np.sqrt(1 / 3 * 1 / 2)])  # [0.5, 1] covers 1/3, 1/2


def test_ripley_k_refuses_a_window_whose_area_underflows():
    # |W| = 1e-400 is 0 in float64: a ZeroDivisionError in the chunk size, and K̂ = 0 at every r.
    xy = np.random.default_rng(0).uniform(size=(20, 2)) * 1e-200
    with pytest.raises(InputError, match=r"^window's area underflows float64") as caught:
        ripley_k(xy, (0, 0, 1e-200, 1e-200), radii=[0.0, 1e-201])
    assert "e-20" not in str(caught.value)  # no side: a window from the points is their extent
    with pytest.raises(InputError, match=r"^window's area underflows float64"):
        ripley_k(xy, None)


def test_ripley_k_enumerates_the_pairs_of_a_cluster_in_bounded_chunks(monkeypatch):
    # Chunks were sized by the neighbours expected under CSR in the whole window: 400 points in
    # a 1 x 1 cluster of a 1000 x 1000 window all fell in chunks of 25 points, i.e. 25 · 400 =
    # 10,000 pairs against a budget of 2,000 (6,000 clustered points took 2.3 GB, n² pairs).
    # Now every chunk holds at most the budget (400 neighbours per point: 5 points a chunk).
    rng = np.random.default_rng(7)
    xy = rng.uniform(0, 1, (400, 2)) + 500
    box, radii = (0, 0, 1000, 1000), np.linspace(0, 250, 11)
    expected = ripley_k(xy, box, radii, "translation").k
    sizes = []

    class Spy(geosynth.metrics.utility.cKDTree):
        def sparse_distance_matrix(self, other, max_distance, **kwargs):
            pairs = super().sparse_distance_matrix(other, max_distance, **kwargs)
            sizes.append(len(pairs))
            return pairs

    monkeypatch.setattr(geosynth.metrics.utility, "cKDTree", Spy)
    monkeypatch.setattr(geosynth.metrics.utility, "_PAIR_CHUNK", 2000)
    got = ripley_k(xy, box, radii, "translation").k
    assert sum(sizes) == 400 * 400  # every ordered pair (and the self-pairs) once
    assert max(sizes) <= 2000
    np.testing.assert_allclose(got, expected, rtol=1e-12)


def test_a_window_derived_from_the_points_is_not_shown_in_the_radii_message():
    # "half the shorter window side (0.491252)" was half the extent of the confidential points.
    xy = np.random.default_rng(3).uniform(0, 1, (50, 2)) * [3.0, 1.0] + [1234.5, 678.9]
    half = (xy[:, 1].max() - xy[:, 1].min()) / 2
    for call in (lambda: ripley_k(xy, None, radii=[0.0, 60.0]),
                 lambda: ripley_distance(frame(xy), [frame(xy)], radii=[0.0, 60.0])):
        with pytest.raises(InputError, match=r"^radii must not exceed half the shorter window "
                                             r"side;.*pass window explicitly") as caught:
            call()
        assert f"{half:g}" not in str(caught.value) and f"{half:.3g}" not in str(caught.value)
    with pytest.raises(InputError, match=r"half the shorter window side \(0\.5\)"):
        ripley_k(xy - [1234.5, 678.9], (0, 0, 3, 1), radii=[0.0, 0.6])  # given: shown


def test_ripley_distance_names_the_frame_and_row_outside_the_window():
    # A release's point outside the window was reported as "positions [15]" of no frame: its
    # position within the combination's subset, not the release's row 45.
    rng = np.random.default_rng(0)
    xy = rng.uniform(0, 100, (60, 2))
    group = np.repeat(["a", "b"], 30)
    moved = xy.copy()
    moved[45] = [150.0, 50.0]
    with pytest.raises(InputError, match=r"^releases\[1\] has 1 point\(s\) outside the window "
                                         r"\(0\.0, 0\.0, 100\.0, 100\.0\) \(positions \[45\]\)"):
        ripley_distance(frame(xy, g=group), [frame(xy, g=group), frame(moved, g=group)],
                        by="g", window=(0, 0, 100, 100))


@pytest.mark.parametrize("sizes", [{"n_synthetic": 10**400, "n_original": 1},
                                   {"n_synthetic": 1, "n_original": 10**400},
                                   {"n_synthetic": 1, "n_original": 10**5000}])  # no str()
def test_fully_synthetic_refuses_absurd_sizes(sizes):
    # n_synthetic = 10**400: Python's OverflowError in the ratio; n_original = 10**400: a ratio
    # of 0.0, i.e. T = 0 and a point interval when T_f <= 0.
    name = next(k for k, v in sizes.items() if v > 1)
    with pytest.raises(InputError, match=rf"^{name} must be at most "
                                         r"4,611,686,018,427,387,904 \(2\*\*62\) records"):
        combine_fully_synthetic([1.0, 2.0, 3.0], [5.0, 5.0, 5.0], **sizes)
    big = combine_fully_synthetic([1.0, 2.0, 3.0], [5.0, 5.0, 5.0], 0.95, 2**62, 2**61)
    assert big.variance == pytest.approx(2 * 5.0) and big.df == math.inf  # T_f < 0: adjusted


def test_an_overlap_kind_that_is_an_array_is_refused():
    # NumPy's "truth value of an array with more than one element is ambiguous".
    original = scenario(200, 0)[0]
    for call in (lambda kind: interval_overlap((0, 1), (0, 2), kind),
                 lambda kind: quadrant_coverage(original, [original, original], "y", kind=kind)):
        with pytest.raises(InputError, match=r"^kind must be \"geometric\" or \"karr\""):
            call(np.array(["karr", "geometric"]))


def test_default_radii_of_a_derived_window_do_not_give_the_extent_back():
    # With window=None the box is the points' own: k.r[-1] * 4 was its shorter side, to every
    # digit (982.5036308238417 for points spanning that).
    rng = np.random.default_rng(5)
    sides = []
    for side in (982.5036308238417, 990.0, 1000.0):
        xy = np.vstack([[0.0, 0.0], [side, 2 * side], rng.uniform(0, side, (50, 2))])
        r = ripley_k(xy, None).r
        assert side / 4 / 2 ** 0.25 < r[-1] <= side / 4
        steps = math.log(r[-1], 2 ** 0.25)  # a power of 2^(1/4)
        assert abs(steps - round(steps)) < 1e-9
        sides.append(r[-1])
    assert sides[0] == sides[1]  # extents within a step give the same radii
    given = ripley_k(xy, (0.0, 0.0, 1000.0, 2000.0)).r  # a public window: as before
    assert given[-1] == 250.0


# ---------------------------------------------------------------------- continuous columns
def _frames(seed, rho, n=400, m=3, shift=0.0):
    rng = np.random.default_rng(seed)
    import pandas as pd

    def one(r, loc):
        z = rng.multivariate_normal([loc, 10.0], [[1.0, r], [r, 1.0]], n)
        return pd.DataFrame({"z1": z[:, 0], "z2": z[:, 1]})
    return one(rho[0], 0.0), [one(rho[1], shift) for _ in range(m)]


def test_continuous_utility_follows_reiters_rules_and_fishers_z():
    """Derived apart: each release's mean and s²/n combined by Reiter (2003), the original's
    t interval, correlations on Fisher's scale with variance 1/(n - 3), mapped back."""
    from geosynth.metrics import continuous_utility

    original, releases = _frames(1, (0.6, 0.2))
    table = continuous_utility(original, releases, ["z1", "z2"])
    assert list(table.index) == ["mean[z1]", "sd[z1]", "mean[z2]", "sd[z2]", "corr[z1,z2]"]
    n, m = len(original), len(releases)
    q = np.array([r["z1"].mean() for r in releases])
    u = np.array([r["z1"].var(ddof=1) / n for r in releases])
    b, ubar = q.var(ddof=1), u.mean()
    total, df = b / m + ubar, (m - 1) * (1 + m * ubar / b) ** 2
    half = stats.t.ppf(0.975, df) * math.sqrt(total)
    row = table.loc["mean[z1]"]
    assert row["synthetic"] == pytest.approx(q.mean())
    assert (row["lower_synthetic"], row["upper_synthetic"]) == pytest.approx(
        (q.mean() - half, q.mean() + half))
    se = original["z1"].std(ddof=1) / math.sqrt(n)
    assert row["upper_original"] - row["original"] == pytest.approx(stats.t.ppf(0.975, n - 1) * se)
    assert table.loc["sd[z2]", "synthetic"] == pytest.approx(np.mean([r["z2"].std(ddof=1)
                                                                      for r in releases]))
    fz = np.arctanh([r.corr().iloc[0, 1] for r in releases])
    corr = table.loc["corr[z1,z2]"]
    assert corr["synthetic"] == pytest.approx(np.tanh(fz.mean()))
    assert corr["original"] == pytest.approx(original.corr().iloc[0, 1])
    # 0.6 against 0.2 on 400 records: the intervals are apart; the means agree
    assert corr["overlap"] == 0.0 and row["overlap"] > 0.0


def test_a_correlations_overlap_is_that_of_the_intervals_it_shows():
    # The intervals are built on Fisher's scale and shown as r; the overlap was taken on
    # Fisher's scale, and did not belong to the row's intervals (0.421 against 0.409).
    from geosynth.metrics import continuous_utility, interval_overlap

    original, releases = _frames(3, (0.9, 0.75), n=60, m=5)
    row = continuous_utility(original, releases, ["z1", "z2"]).loc["corr[z1,z2]"]
    shown = interval_overlap((row["lower_original"], row["upper_original"]),
                             (row["lower_synthetic"], row["upper_synthetic"]))
    on_fisher = interval_overlap(
        np.arctanh([row["lower_original"], row["upper_original"]]),
        np.arctanh([row["lower_synthetic"], row["upper_synthetic"]]))
    assert 0.0 < row["overlap"] < 1.0
    assert row["overlap"] == pytest.approx(shown, rel=1e-12)
    assert abs(on_fisher - shown) > 1e-3  # the scales disagree here: the test can fail


def test_fully_synthetic_rules_with_no_degrees_of_freedom_give_an_unbounded_interval():
    # T_f = (1 + 1/m) b_m - u_m near 0+ drives nu_f to 0 and the interval to (-inf, inf);
    # continuous_utility passed it to interval_overlap, which refuses infinite bounds.
    import pandas as pd

    from geosynth.metrics import combine_fully_synthetic, continuous_utility

    original = pd.DataFrame({"z": [0.0, 1.0, 2.0, 3.0]})
    first = pd.DataFrame({"z": [0.0, 0.0, 2.0, 2.0]})
    releases = [first, first + 0.6667]
    q = np.array([r["z"].mean() for r in releases])
    u = np.array([r["z"].var(ddof=1) / 4 for r in releases])
    assert 0.0 < 1.5 * q.var(ddof=1) - u.mean() < 1e-3  # T_f just above 0
    combined = combine_fully_synthetic(q, u, n_synthetic=4, n_original=4)
    assert math.isinf(combined.lower) and math.isinf(combined.upper)
    row = continuous_utility(original, releases, ["z"], rules="full").loc["mean[z]"]
    assert row["lower_synthetic"] == -math.inf and row["upper_synthetic"] == math.inf
    assert row["overlap"] == 0.0  # it covers the original's, none of it is covered


def test_the_fully_synthetic_adjustment_takes_the_releases_mean_size():
    # DP releases differ in size. With b_m = 0 (equal means) T_f < 0, so Reiter's (2002)
    # adjustment (n_syn / n) u_m sets the variance; n_syn was the first release's size, so the
    # interval's width followed the order of the releases.
    import pandas as pd

    from geosynth.metrics import continuous_utility

    original = pd.DataFrame({"z": np.arange(100.0)})
    small = pd.DataFrame({"z": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]})
    large = pd.DataFrame({"z": np.repeat(small["z"].to_numpy(), 4) + 0.0})
    assert small["z"].mean() == large["z"].mean()  # b_m = 0
    u = np.array([small["z"].var(ddof=1) / 10, large["z"].var(ddof=1) / 40])
    half = stats.norm.ppf(0.975) * math.sqrt((10 + 40) / 2 / 100 * u.mean())  # df = inf
    for releases in ([small, large], [large, small]):
        row = continuous_utility(original, releases, ["z"], rules="full").loc["mean[z]"]
        assert (row["lower_synthetic"], row["upper_synthetic"]) == pytest.approx(
            (4.5 - half, 4.5 + half), rel=1e-12)
    for rules in ("partial", "full"):  # a NaN in a release: refused by both rules
        with pytest.raises(InputError, match=r"'z' of releases\[1\] has 40 missing"):
            continuous_utility(original, [small, large.assign(z=np.nan)], ["z"], rules=rules)


def test_continuous_utility_agrees_where_the_releases_are_the_original_law():
    from geosynth.metrics import continuous_utility

    original, releases = _frames(2, (0.5, 0.5))
    table = continuous_utility(original, releases, ["z1", "z2"])
    assert (table["overlap"].dropna() > 0.0).all()
    with pytest.raises(InputError, match="2 or more releases"):
        continuous_utility(original, releases[:1], ["z1"])
    with pytest.raises(InputError, match=r"lacks the continuous column\(s\) \['w'\]"):
        continuous_utility(original, releases, ["w"])


def test_continuous_utility_refuses_text_missing_values_and_no_columns():
    """A NaN in the original gave a NaN mean and overlap without a word; text a bare ValueError."""
    from geosynth.metrics import continuous_utility

    original, releases = _frames(2, (0.5, 0.5))
    holed = original.copy()
    holed.loc[holed.index[3], "z1"] = np.nan
    with pytest.raises(InputError, match=r"continuous column 'z1' of original has 1 missing or "
                                         r"infinite values \(rows \[.*\]\); drop those rows"):
        continuous_utility(holed, releases, ["z1"])
    infinite = releases[1].copy()
    infinite.loc[infinite.index[0], "z2"] = np.inf
    with pytest.raises(InputError, match=r"'z2' of releases\[1\] has 1 missing or infinite"):
        continuous_utility(original, [releases[0], infinite], ["z1", "z2"])
    text = original.assign(z1=original["z1"].astype(str))
    with pytest.raises(TypeError, match=r"continuous column 'z1' of original must be a column "
                                         r"of numbers"):
        continuous_utility(text, releases, ["z1"])
    with pytest.raises(InputError, match="columns is empty"):
        continuous_utility(original, releases, [])
    with pytest.raises(InputError, match=r"columns lists \['z1'\] more than once"):
        continuous_utility(original, releases, ["z1", "z1"])
    assert continuous_utility(original, releases, "z1").index.tolist() == ["mean[z1]", "sd[z1]"]


def test_a_release_with_a_constant_column_keeps_the_originals_correlation():
    # One release whose column was constant made the correlation undefined there, and the
    # whole row NaN: the original's r and its interval, which are defined, went with it.
    from geosynth.metrics import continuous_utility

    original, releases = _frames(4, (0.6, 0.6), n=80, m=3)
    releases[1] = releases[1].assign(z2=1.0)
    row = continuous_utility(original, releases, ["z1", "z2"]).loc["corr[z1,z2]"]
    r, n = original.corr().iloc[0, 1], len(original)
    half = stats.norm.ppf(0.975) / math.sqrt(n - 3)
    assert row["original"] == pytest.approx(r)
    assert (row["lower_original"], row["upper_original"]) == pytest.approx(
        (np.tanh(np.arctanh(r) - half), np.tanh(np.arctanh(r) + half)))
    assert np.isnan(row[["synthetic", "lower_synthetic", "upper_synthetic", "overlap"]]).all()
    # a constant column in the original: nothing defined
    flat = continuous_utility(original.assign(z2=2.0), releases, ["z1", "z2"])
    assert flat.loc["corr[z1,z2]"].isna().all()
