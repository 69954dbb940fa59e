"""Tests of the DP mechanisms: exact distributions, empirical privacy, seeding, validation.

Seeded draws (NumPy, reproducible) carry the large-sample tests; the unseeded OpenDP path cannot
be seeded, so its tests use moderate samples and a per-test false-alarm rate of about 1e-5
(``P_MIN`` for goodness of fit, ``ALPHA`` for the empirical privacy bound).
"""

import math
import re
import sys
import warnings
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
from scipy import integrate, stats

from geosynth.dp.accountant import Accountant
from geosynth.dp.mechanisms import (
    MAX_FLOAT_NOISE_SCALE,
    MAX_INTEGER_NOISE_SCALE,
    ROUNDING_MARGIN,
    analytic_gaussian_sigma,
    classic_gaussian_sigma,
    exponential,
    gaussian,
    geometric,
    laplace,
)
from geosynth.dp.synthesizers import DirichletMultinomialSynthesizer
from geosynth.errors import (
    BudgetExceededError,
    InputError,
    InputTypeError,
    MemoryLimitError,
    PrivacyLeakWarning,
    SamplerError,
)

P_MIN = 1e-9  # goodness-of-fit tests pass when p > P_MIN
ALPHA = 1e-9  # family-wise error of one empirical privacy test (Bonferroni over outcomes)
PATHS = ["seeded", "opendp"]


def draw(path, mechanism, *args, seed=0, **kwargs):
    """Run ``mechanism`` on the seeded path (asserting the warning) or on the OpenDP path."""
    if path == "seeded":
        with pytest.warns(PrivacyLeakWarning, match="seed"):
            return mechanism(*args, seed=seed, **kwargs)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        return mechanism(*args, **kwargs)


def draw_choices(path, n, candidates, scores, **kwargs):
    """``n`` independent exponential-mechanism choices."""
    if path == "seeded":
        rng = np.random.default_rng(kwargs.pop("seed", 0))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            return np.array([exponential(candidates, scores, seed=rng, **kwargs) for _ in range(n)])
    return np.array([exponential(candidates, scores, **kwargs) for _ in range(n)])


def discrete_laplace_pmf(k, epsilon, sensitivity):
    """P(k) = (1 - a) / (1 + a) a^|k|, a = exp(-epsilon / sensitivity)."""
    a = math.exp(-epsilon / sensitivity)
    return (1 - a) / (1 + a) * a ** np.abs(k)


def softmax(logits):
    weights = np.exp(logits - np.max(logits))
    return weights / weights.sum()


def privacy_excess(counts_a, counts_b, n_a, n_b, min_count=100):
    """Empirical log-ratio of outcome probabilities of two runs, with its uncertainty.

    For each outcome (bin) with at least ``min_count`` hits in both runs, the estimate
    ``L = log(p_a / p_b)`` has standard error ``se = sqrt(1/c_a - 1/n_a + 1/c_b - 1/n_b)``
    (delta method on two binomial proportions). With ``z`` the two-sided Bonferroni quantile at
    ``ALPHA`` over the kept outcomes, returns ``(max |L| - z se, max |L| + z se)``: a lower and
    an upper confidence bound of the largest privacy loss over these outcomes. An ε-DP
    mechanism has ``max |L| <= ε`` for every outcome, so its lower bound must stay <= ε.
    """
    counts_a = np.asarray(counts_a, dtype=float)
    counts_b = np.asarray(counts_b, dtype=float)
    keep = (counts_a >= min_count) & (counts_b >= min_count)
    assert keep.sum() >= 2, "too few outcomes with enough mass to test"
    ca, cb = counts_a[keep], counts_b[keep]
    loss = np.abs(np.log(ca / n_a) - np.log(cb / n_b))
    se = np.sqrt(1 / ca - 1 / n_a + 1 / cb - 1 / n_b)
    z = stats.norm.isf(ALPHA / (2 * keep.sum()))
    return float(np.max(loss - z * se)), float(np.max(loss + z * se))


# ----------------------------------------------------------------------------------------------
# Exact distributions
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("path", "n"), [("seeded", 200_000), ("opendp", 20_000)])
def test_laplace_noise_is_laplace_with_scale_sensitivity_over_epsilon(path, n):
    x = np.full(n, 3.0)
    noisy = draw(path, laplace, x, sensitivity=2.0, epsilon=0.5)
    assert noisy.shape == (n,) and noisy.dtype == np.float64
    noise = noisy - 3.0
    assert stats.kstest(noise, stats.laplace(scale=4.0).cdf).pvalue > P_MIN
    # The test has power: a 20 % wrong scale is rejected.
    assert stats.kstest(noise, stats.laplace(scale=4.8).cdf).pvalue < P_MIN


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("sensitivity", [1, 3])
def test_geometric_noise_is_the_exact_discrete_laplace(path, sensitivity):
    n, epsilon = (200_000 if path == "seeded" else 20_000), 1.0
    noisy = draw(path, geometric, np.full(n, 7), sensitivity=sensitivity, epsilon=epsilon)
    assert noisy.dtype == np.int64
    noise = noisy - 7
    # Cells k = -K..K with >= 20 expected hits, and the two tails lumped.
    pmf = discrete_laplace_pmf(np.arange(-60, 61), epsilon, sensitivity)
    assert np.allclose(pmf, stats.dlaplace(epsilon / sensitivity).pmf(np.arange(-60, 61)))
    big = int(
        np.max(np.flatnonzero(n * discrete_laplace_pmf(np.arange(60), epsilon, sensitivity) >= 20))
    )
    values = np.arange(-big, big + 1)
    a = math.exp(-epsilon / sensitivity)
    tail = a ** (big + 1) / (1 + a)  # P(K > big) = P(K < -big)
    expected = n * np.concatenate(
        [[tail], discrete_laplace_pmf(values, epsilon, sensitivity), [tail]]
    )
    observed = np.concatenate(
        [[np.sum(noise < -big)], [np.sum(noise == v) for v in values], [np.sum(noise > big)]]
    )
    assert expected.sum() == pytest.approx(n)
    assert stats.chisquare(observed, expected).pvalue > P_MIN
    # Power: the pmf of a 15 % larger epsilon is rejected.
    wrong = n * np.concatenate(
        [[0], discrete_laplace_pmf(values, 1.15 * epsilon, sensitivity), [0]]
    )
    wrong[0] = wrong[-1] = (n - wrong.sum()) / 2
    assert stats.chisquare(observed, wrong).pvalue < P_MIN


@pytest.mark.parametrize(("path", "n"), [("seeded", 200_000), ("opendp", 10_000)])
def test_gaussian_noise_has_the_analytic_sigma(path, n):
    epsilon, delta, sensitivity = 0.5, 1e-5, 2.0
    sigma = analytic_gaussian_sigma(sensitivity, epsilon, delta)
    noisy = draw(path, gaussian, np.zeros(n), sensitivity=sensitivity, epsilon=epsilon, delta=delta)
    assert stats.kstest(noisy, stats.norm(scale=sigma).cdf).pvalue > P_MIN
    # Power: the classic sigma (38 % larger here) is rejected.
    classic = classic_gaussian_sigma(sensitivity, epsilon, delta)
    assert classic > 1.3 * sigma
    assert stats.kstest(noisy, stats.norm(scale=classic).cdf).pvalue < P_MIN


@pytest.mark.parametrize(("path", "n"), [("seeded", 40_000), ("opendp", 3_000)])
def test_exponential_selects_with_softmax_of_epsilon_q_over_two_delta(path, n):
    scores = np.array([0.0, 1.0, 2.0, 4.0, 4.5])
    sensitivity, epsilon = 1.5, 2.0
    chosen = draw_choices(path, n, list("abcde"), scores, sensitivity=sensitivity, epsilon=epsilon)
    observed = np.array([np.sum(chosen == c) for c in "abcde"])
    probabilities = softmax(epsilon * scores / (2 * sensitivity))
    assert stats.chisquare(observed, n * probabilities).pvalue > P_MIN
    # Power: OpenDP's other report-noisy-max convention, exp(eps q / Delta), is rejected.
    assert stats.chisquare(observed, n * softmax(epsilon * scores / sensitivity)).pvalue < P_MIN


@pytest.mark.parametrize("path", ["seeded", "opendp"])
def test_exponential_ties_of_huge_scores_are_even(path):
    # Scores near the float maximum: q / scale overflowed to inf on the seeded path, and the
    # tie of two infs always went to the first candidate (400 of 400). (Doubles there are
    # 2e292 apart, so a sensitivity below that is refused: the test below.)
    chosen = draw_choices(path, 400, ["a", "b"], [1.7e308, 1.7e308], sensitivity=1e293,
                          epsilon=1.0)
    assert stats.binomtest(int(np.sum(chosen == "a")), 400).pvalue > P_MIN


@pytest.mark.parametrize("path", ["seeded", "opendp"])
def test_exponential_refuses_scores_whose_spacing_exceeds_the_sensitivity(path):
    """Near 2**60 doubles are 256 apart: a score one record moves by 1 moved by 0 or 256.

    The choice between two candidates then went from a coin flip (scores 2**60 + 128 each) to
    certain (one at 2**60 + 129, stored as 2**60 + 256): a privacy loss without bound.
    """
    accountant = Accountant(10.0)
    seed = {"seed": 1} if path == "seeded" else {}
    with pytest.raises(InputError, match=r"exponential: scores has 2 values at positions "
                       r"\[0, 1\] where float64's spacing exceeds sensitivity=1"):
        exponential(["a", "b"], [float(2**60 + 256), float(2**60)], sensitivity=1,
                    epsilon=1.0, accountant=accountant, **seed)
    with pytest.raises(InputError, match=r"exponential: scores has 1 integers beyond 2\*\*53"):
        exponential(["a", "b"], [2**60 + 129, 0], sensitivity=1000, epsilon=1.0,
                    accountant=accountant, **seed)
    assert accountant.ledger.empty


@pytest.mark.parametrize("path", ["seeded", "opendp"])
def test_exponential_takes_the_largest_double_as_a_score(path):
    # np.spacing(float max) overflows to inf: under a strict warnings filter the caller got
    # NumPy's RuntimeWarning, otherwise a refusal saying the spacing exceeded 1e300 (it is 2e292).
    top = sys.float_info.max
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        chosen = draw_choices(path, 200, ["a", "b"], [top, top], sensitivity=1e293, epsilon=1.0)
    assert stats.binomtest(int(np.sum(chosen == "a")), 200).pvalue > P_MIN
    with warnings.catch_warnings(), pytest.raises(InputError, match=r"spacing exceeds "
                                                                     r"sensitivity=1e\+292"):
        warnings.simplefilter("error", RuntimeWarning)
        draw_choices(path, 1, ["a", "b"], [top, 0.0], sensitivity=1e292, epsilon=1.0)


def test_exact_numbers_that_float64_rounds_too_far_are_refused():
    """A Decimal of 2**53 + 1 rounds to 2**53: neighbours 2 apart became 4 apart as doubles.

    The release's likelihood ratio was about e² where ε = 1 allows e; now refused, nothing
    spent. (Python ints there were refused already.)
    """
    accountant = Accountant(10.0)
    for x in (Decimal(2**53 + 1), [Fraction(2**53 + 1, 1), 5.0], np.longdouble(2.0**53)):
        with pytest.raises(InputError, match=r"laplace: x holds exact numbers \(Decimal, "
                                             r"Fraction or longdouble\) that float64 rounds"):
            laplace(x, sensitivity=2, epsilon=1.0, accountant=accountant)
    assert accountant.ledger.empty


def test_the_margin_for_converted_numbers_does_not_depend_on_their_values():
    """The noise scale of converted exact numbers is the same whatever the values.

    A margin read off each value's own spacing made neighbours on either side of a power of
    two get different scales (a likelihood ratio of 4.5 at ε = 1). Same seed, same noise.
    """
    def noise(x):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            return laplace([x], sensitivity=1.0, epsilon=1.0, seed=7)[0] - float(x)

    below, above = noise(Decimal(2**20) - Decimal("0.1")), noise(Decimal(2**20) + Decimal("0.1"))
    assert below == pytest.approx(above, abs=1e-9)
    # ... and is the float noise times 1 + 2**-16
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        plain = laplace([0.0], sensitivity=1.0, epsilon=1.0, seed=7)[0]
    assert below == pytest.approx(plain * (1 + ROUNDING_MARGIN), rel=1e-8)  # x's rounding
    assert below != pytest.approx(plain, rel=1e-7)


def test_exponential_returns_the_candidate_object():
    candidates = [("north", 1), ("south", 2)]
    with pytest.warns(PrivacyLeakWarning):
        choice = exponential(candidates, [0.0, 1e6], sensitivity=1, epsilon=1.0, seed=1)
    assert choice == ("south", 2)
    assert exponential(candidates, [1e6, 0.0], sensitivity=1, epsilon=1.0) == ("north", 1)
    assert exponential(np.array([10, 20, 30]), [0, 0, 5e6], sensitivity=1, epsilon=1) == 30


# ----------------------------------------------------------------------------------------------
# Analytic Gaussian calibration
# ----------------------------------------------------------------------------------------------


def gaussian_delta(sigma, sensitivity, epsilon):
    """Balle & Wang's exact delta, straight from the normal cdf (fine for moderate values)."""
    a = sensitivity / (2 * sigma)
    b = epsilon * sigma / sensitivity
    return stats.norm.cdf(a - b) - math.exp(epsilon) * stats.norm.cdf(-a - b)


@pytest.mark.parametrize("epsilon", [0.05, 0.3, 0.99, 1.0, 3.0, 10.0])
@pytest.mark.parametrize("delta", [1e-3, 1e-6, 1e-9])
def test_analytic_sigma_satisfies_the_exact_condition_tightly(epsilon, delta):
    sigma = analytic_gaussian_sigma(2.0, epsilon, delta)
    assert gaussian_delta(sigma, 2.0, epsilon) <= delta * (1 + 1e-9)
    assert gaussian_delta(sigma * (1 - 1e-7), 2.0, epsilon) > delta
    assert analytic_gaussian_sigma(1.0, epsilon, delta) == pytest.approx(sigma / 2, rel=1e-12)
    if epsilon < 1:
        assert sigma <= classic_gaussian_sigma(2.0, epsilon, delta)


def test_analytic_sigma_matches_the_hockey_stick_divergence_by_integration():
    # delta(eps) = integral of max(0, p_{N(1, s)} - e^eps p_{N(0, s)}), independent of the cdf form.
    epsilon, delta = 1.0, 1e-5
    sigma = analytic_gaussian_sigma(1.0, epsilon, delta)
    threshold = epsilon * sigma**2 + 0.5  # where the densities' log-ratio equals epsilon
    integral, _ = integrate.quad(
        lambda y: stats.norm.pdf(y, 1.0, sigma) - math.exp(epsilon) * stats.norm.pdf(y, 0.0, sigma),
        threshold,
        np.inf,
        epsabs=1e-14,
        epsrel=1e-10,
    )
    assert integral == pytest.approx(delta, rel=1e-6)
    assert sigma == pytest.approx(3.7306, abs=1e-4)


def test_analytic_sigma_is_stable_at_extreme_parameters():
    assert math.isfinite(analytic_gaussian_sigma(1.0, 500.0, 1e-300))
    assert math.isfinite(analytic_gaussian_sigma(1.0, 1e-4, 0.999))
    small, large = analytic_gaussian_sigma(1, 1.0, 1e-12), analytic_gaussian_sigma(1, 1.0, 1e-2)
    assert small > large


def _normal_cdf_exact(x, digits=120):
    """Φ(x) to ``digits`` digits (Decimal Taylor series of erf; for |x| up to about 12)."""
    from decimal import Decimal, localcontext

    with localcontext() as context:
        context.prec = digits
        z = Decimal(x) / Decimal(2).sqrt()
        term = total = z
        n = 0
        while abs(term) > Decimal(10) ** -(digits - 5) or n < 5:
            n += 1
            term = -term * z * z / n
            total += term / (2 * n + 1)
        pi = Decimal("3.14159265358979323846264338327950288419716939937510582097494459230781640628")
        return (1 + 2 * total / pi.sqrt()) / 2


def _gaussian_delta_exact(sigma, epsilon):
    """δ(ε) of [BW18] Thm. 8 for Δ = 1 in 120-digit arithmetic (no cancellation)."""
    from decimal import Decimal, localcontext

    with localcontext() as context:
        context.prec = 120
        r, e = Decimal(sigma), Decimal(epsilon)
        a, c = 1 / (2 * r), e * r
        return float(_normal_cdf_exact(a - c) - e.exp() * _normal_cdf_exact(-a - c))


@pytest.mark.parametrize(("epsilon", "delta"), [
    (1.0, 1e-5), (0.01, 1e-10), (1e-6, 1e-20),
    (1e-20, 1e-18), (1e-17, 1e-25), (1e-12, 1e-40), (1e-40, 1e-16),
])
def test_analytic_sigma_meets_delta_in_exact_arithmetic(epsilon, delta):
    """Where ε ≪ δ < 1e-16 the float evaluation of δ cancelled to 0 and σ was too small: at
    ε = 1e-20, δ = 1e-18 the true δ was 65 times the one asked for (1e24 times further out)."""
    sigma = analytic_gaussian_sigma(1.0, epsilon, delta)
    assert _gaussian_delta_exact(sigma, epsilon) <= delta * (1 + 1e-9)


def test_classic_sigma_refuses_epsilon_at_least_one():
    assert classic_gaussian_sigma(1.0, 0.5, 1e-5) == pytest.approx(
        2 * math.sqrt(2 * math.log(1.25e5))
    )
    with pytest.raises(InputError, match="epsilon must be < 1"):
        classic_gaussian_sigma(1.0, 1.0, 1e-5)


# ----------------------------------------------------------------------------------------------
# Empirical privacy on neighbouring inputs (after diffprivlib's tests)
# ----------------------------------------------------------------------------------------------


def laplace_excess(path, n, epsilon, run_epsilon, seed):
    """Bin the outputs of laplace on x = 0 and on its neighbour x' = Delta = 1."""
    a = draw(path, laplace, np.zeros(n), sensitivity=1.0, epsilon=run_epsilon, seed=seed)
    b = draw(path, laplace, np.ones(n), sensitivity=1.0, epsilon=run_epsilon, seed=seed + 1)
    edges = np.arange(-8.0, 9.5, 0.5)
    return privacy_excess(np.histogram(a, edges)[0], np.histogram(b, edges)[0], n, n)


@pytest.mark.parametrize(("path", "n"), [("seeded", 400_000), ("opendp", 20_000)])
def test_laplace_log_ratio_on_neighbours_stays_below_epsilon(path, n):
    lower, upper = laplace_excess(path, n, 1.0, 1.0, seed=10)
    assert lower <= 1.0
    assert upper >= 1.0  # the bins reach the worst case (the log-ratio is exactly eps in tails)


def test_laplace_privacy_test_has_power():
    lower, _ = laplace_excess("seeded", 400_000, 1.0, 3.0, seed=20)
    assert lower > 1.0  # run at 3 eps, the empirical loss is caught exceeding eps


def geometric_excess(path, n, epsilon, run_epsilon, seed, sensitivity=2):
    a = draw(
        path,
        geometric,
        np.zeros(n, dtype=int),
        sensitivity=sensitivity,
        epsilon=run_epsilon,
        seed=seed,
    )
    b = draw(
        path,
        geometric,
        np.full(n, sensitivity),
        sensitivity=sensitivity,
        epsilon=run_epsilon,
        seed=seed + 1,
    )
    values = np.arange(-40, 41)
    counts = [np.array([np.sum(run == v) for v in values]) for run in (a, b)]
    return privacy_excess(*counts, n, n)


@pytest.mark.parametrize(("path", "n"), [("seeded", 400_000), ("opendp", 20_000)])
def test_geometric_log_ratio_on_neighbours_stays_below_epsilon(path, n):
    lower, upper = geometric_excess(path, n, 1.0, 1.0, seed=30)
    assert lower <= 1.0
    assert upper >= 1.0


def test_geometric_privacy_test_has_power():
    lower, _ = geometric_excess("seeded", 400_000, 1.0, 3.0, seed=40)
    assert lower > 1.0


def gaussian_hockey_stick(n, epsilon, delta, run_epsilon, seed):
    """Lower confidence bound of max_S P(M(x') in S) - e^eps P(M(x) in S) over half-lines S.

    (epsilon, delta)-DP bounds this by delta for every S; the log-ratio itself is unbounded in
    the tails, so the pure-DP log-ratio test does not apply. The optimal S is a half-line.
    """
    run_sigma = analytic_gaussian_sigma(1.0, run_epsilon, delta)
    a = draw(
        "seeded",
        gaussian,
        np.zeros(n),
        sensitivity=1.0,
        epsilon=run_epsilon,
        delta=delta,
        seed=seed,
    )
    b = draw(
        "seeded",
        gaussian,
        np.ones(n),
        sensitivity=1.0,
        epsilon=run_epsilon,
        delta=delta,
        seed=seed + 1,
    )
    a, b = np.sort(a), np.sort(b)
    thresholds = np.linspace(-3 * run_sigma, 6 * run_sigma, 91)
    p_a = 1 - np.searchsorted(a, thresholds) / n  # P(M(x) > t)
    p_b = 1 - np.searchsorted(b, thresholds) / n  # P(M(x') > t)
    excess = p_b - math.exp(epsilon) * p_a
    se = np.sqrt((p_b * (1 - p_b) + math.exp(2 * epsilon) * p_a * (1 - p_a)) / n)
    z = stats.norm.isf(ALPHA / thresholds.size)
    return float(np.max(excess - z * se))


# delta = 0.01 rather than a realistic 1e-6: the binomial error of the estimated probabilities
# (~1e-4 here) must be small next to delta for the test to detect a mis-calibrated sigma.
def test_gaussian_satisfies_epsilon_delta_on_neighbours():
    assert gaussian_hockey_stick(400_000, 1.0, 0.01, 1.0, seed=50) <= 0.01


def test_gaussian_privacy_test_has_power():
    assert gaussian_hockey_stick(400_000, 1.0, 0.01, 1.5, seed=60) > 0.01


def exponential_excess(n, run_epsilon, seed):
    """Ten candidates with equal scores vs. candidate 0 down by Delta and the others up by Delta.

    The neighbour moves every score by at most Delta = 1; candidate 0's log-ratio is
    0.935 eps at eps = 1, close to the bound.
    """
    scores = np.zeros(10)
    neighbour = np.ones(10)
    neighbour[0] = -1.0
    kwargs = {"sensitivity": 1.0, "epsilon": run_epsilon}
    a = draw_choices("seeded", n, np.arange(10), scores, seed=seed, **kwargs)
    b = draw_choices("seeded", n, np.arange(10), neighbour, seed=seed + 1, **kwargs)
    return privacy_excess(np.bincount(a, minlength=10), np.bincount(b, minlength=10), n, n)


def test_exponential_selection_ratio_on_neighbours_stays_below_epsilon():
    lower, upper = exponential_excess(30_000, 1.0, seed=70)
    assert lower <= 1.0
    assert upper >= 0.9


def test_exponential_privacy_test_has_power():
    lower, _ = exponential_excess(30_000, 3.0, seed=80)
    assert lower > 1.0


# ----------------------------------------------------------------------------------------------
# Shapes, seeding and warnings
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", PATHS)
def test_scalars_in_scalars_out_and_arrays_keep_their_shape(path):
    assert isinstance(draw(path, laplace, 2.0, sensitivity=1, epsilon=1), float)
    assert isinstance(draw(path, laplace, 2, sensitivity=1, epsilon=1), float)
    assert isinstance(draw(path, gaussian, 2.0, sensitivity=1, epsilon=1, delta=1e-6), float)
    count = draw(path, geometric, 5, sensitivity=1, epsilon=1)
    assert isinstance(count, int) and not isinstance(count, bool)
    assert isinstance(draw(path, geometric, np.int32(5), sensitivity=1, epsilon=1), int)
    grid = np.arange(12.0).reshape(3, 4)
    assert draw(path, laplace, grid, sensitivity=1, epsilon=1).shape == (3, 4)
    assert draw(path, gaussian, grid, sensitivity=1, epsilon=1, delta=1e-6).shape == (3, 4)
    counts = draw(path, geometric, grid.astype(int), sensitivity=1, epsilon=1)
    assert counts.shape == (3, 4) and counts.dtype == np.int64
    assert draw(path, geometric, [2.0, 3.0], sensitivity=1, epsilon=1).dtype == np.int64
    assert draw(path, laplace, np.zeros(0), sensitivity=1, epsilon=1).shape == (0,)


@pytest.mark.parametrize("path", PATHS)
def test_noise_is_centred_on_the_input_whatever_its_offset(path):
    """Far from 0 (−1e6, 1e9, an int 10¹²) the noise is that at 0: mean 0 and the exact
    variance (Laplace 2b², discrete Laplace 2a/(1 − a)² with a = e^{−ε}), within 6 standard
    errors of 20,000 draws; integer inputs keep every digit (10¹² + k is exact)."""
    n = 20_000
    values = np.array([-1e6, 0.0, 12.5, 1e9])
    noisy = draw(path, laplace, np.repeat(values, n), sensitivity=1.0, epsilon=1.0)
    noise = (noisy - np.repeat(values, n)).reshape(4, n)
    for row in noise:  # Laplace(0, 1): mean 0, variance 2, fourth moment 24
        assert abs(row.mean()) < 6 * math.sqrt(2 / n)
        assert abs(row.var() - 2.0) < 6 * math.sqrt((24 - 4) / n)
    counts = np.array([0, 5, 10**12])
    noisy_counts = draw(path, geometric, np.repeat(counts, n), sensitivity=1, epsilon=1.0)
    assert noisy_counts.dtype == np.int64
    a = math.exp(-1.0)
    variance = 2 * a / (1 - a) ** 2
    fourth = 2 * a * (1 + 10 * a + a * a) / (1 - a) ** 4  # Σ k⁴ P(k), P(k) ∝ a^|k|
    for row in (noisy_counts - np.repeat(counts, n)).reshape(3, n):
        assert abs(row.mean()) < 6 * math.sqrt(variance / n)
        assert abs(row.var() - variance) < 6 * math.sqrt((fourth - variance**2) / n)


def seeded_calls():
    return [
        lambda seed: laplace(np.zeros(5), sensitivity=1, epsilon=1, seed=seed),
        lambda seed: geometric(np.zeros(5, dtype=int), sensitivity=1, epsilon=1, seed=seed),
        lambda seed: gaussian(np.zeros(5), sensitivity=1, epsilon=1, delta=1e-5, seed=seed),
        lambda seed: np.array(
            [
                exponential(range(50), np.zeros(50), sensitivity=1, epsilon=1, seed=seed + i)
                for i in range(5)
            ]
        ),
    ]


@pytest.mark.parametrize("call", seeded_calls(), ids=["laplace", "geometric", "gaussian", "exp"])
def test_seeded_calls_are_reproducible_and_warn(call):
    with pytest.warns(PrivacyLeakWarning, match="NOT differentially private") as said:
        first = call(42)
    assert said[0].filename == __file__  # the caller's line, not the mechanism's
    with pytest.warns(PrivacyLeakWarning):
        again = call(42)
    with pytest.warns(PrivacyLeakWarning):
        other = call(43)
    np.testing.assert_array_equal(first, again)
    assert not np.array_equal(first, other)


def test_unseeded_calls_differ_and_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning (PrivacyLeakWarning included) fails
        outputs = [
            (
                laplace(np.zeros(5), sensitivity=1, epsilon=1),
                laplace(np.zeros(5), sensitivity=1, epsilon=1),
            ),
            (
                geometric(np.zeros(20, dtype=int), sensitivity=1, epsilon=1),
                geometric(np.zeros(20, dtype=int), sensitivity=1, epsilon=1),
            ),
            (
                gaussian(np.zeros(5), sensitivity=1, epsilon=1, delta=1e-5),
                gaussian(np.zeros(5), sensitivity=1, epsilon=1, delta=1e-5),
            ),
            (
                [
                    exponential(range(100), np.zeros(100), sensitivity=1, epsilon=1)
                    for _ in range(5)
                ],
                [
                    exponential(range(100), np.zeros(100), sensitivity=1, epsilon=1)
                    for _ in range(5)
                ],
            ),
        ]
    for first, second in outputs:
        assert not np.array_equal(first, second)


# ----------------------------------------------------------------------------------------------
# Accountant integration
# ----------------------------------------------------------------------------------------------


MECHANISM_CALLS = {
    "laplace": (lambda **kw: laplace(np.zeros(3), sensitivity=1, epsilon=0.5, **kw), 0.5, 0.0),
    "geometric": (lambda **kw: geometric([1, 2], sensitivity=1, epsilon=0.5, **kw), 0.5, 0.0),
    "gaussian": (
        lambda **kw: gaussian(1.0, sensitivity=1, epsilon=0.5, delta=1e-6, **kw),
        0.5,
        1e-6,
    ),
    "exponential": (
        lambda **kw: exponential(["a", "b"], [0, 1], sensitivity=1, epsilon=0.5, **kw),
        0.5,
        0.0,
    ),
}


@pytest.mark.parametrize("name", list(MECHANISM_CALLS))
def test_mechanisms_charge_the_accountant(name):
    call, epsilon, delta = MECHANISM_CALLS[name]
    accountant = Accountant(1.0, delta=1e-5)
    call(accountant=accountant)
    call(accountant=accountant, label="second")
    ledger = accountant.ledger
    assert ledger["label"].tolist() == [name, "second"]
    assert ledger["epsilon"].tolist() == [epsilon, epsilon]
    assert ledger["delta"].tolist() == [delta, delta]
    assert accountant.spent_epsilon == pytest.approx(2 * epsilon)


@pytest.mark.parametrize("name", list(MECHANISM_CALLS))
def test_a_refused_spend_draws_no_noise(name, monkeypatch):
    call, _, _ = MECHANISM_CALLS[name]
    accountant = Accountant(0.4, delta=1e-5)
    accountant.spend(0.1, label="earlier")
    before = accountant.to_dict()
    # Seeded path: the generator is untouched and no seed warning is even issued.
    rng = np.random.default_rng(5)
    state = rng.bit_generator.state
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        with pytest.raises(BudgetExceededError, match="Nothing was spent"):
            call(accountant=accountant, seed=rng)
    assert rng.bit_generator.state == state
    # OpenDP path: the measurement is built but never invoked.
    import geosynth.dp.mechanisms as mechanisms

    invoked = []
    calibrate = mechanisms._calibrate

    def spy(*args, **kwargs):
        measurement = calibrate(*args, **kwargs)

        def run(value):
            invoked.append(value)
            return measurement(value)

        return run

    monkeypatch.setattr(mechanisms, "_calibrate", spy)
    with pytest.raises(BudgetExceededError):
        call(accountant=accountant)
    assert invoked == []
    assert accountant.to_dict() == before
    assert accountant.ledger["label"].tolist() == ["earlier"]
    call(accountant=Accountant(1.0, delta=1e-5))  # the spy does run when the spend fits
    assert len(invoked) == 1


def test_mechanisms_inside_a_parallel_block_are_charged_once():
    accountant = Accountant(1.0)
    with accountant.parallel(label="cells"):
        for cell in range(4):
            geometric(
                [cell], sensitivity=1, epsilon=0.8, accountant=accountant, label=f"cell {cell}"
            )
    assert accountant.spent_epsilon == pytest.approx(0.8)
    assert accountant.ledger["composition"].tolist() == ["parallel"] * 4


# ----------------------------------------------------------------------------------------------
# Validation
# ----------------------------------------------------------------------------------------------


def lap(**overrides):
    kwargs = {"sensitivity": 1.0, "epsilon": 1.0} | overrides
    x = kwargs.pop("x", [1.0, 2.0])
    return laplace(x, **kwargs)


def gau(**overrides):
    kwargs = {"sensitivity": 1.0, "epsilon": 1.0, "delta": 1e-6} | overrides
    x = kwargs.pop("x", 1.0)
    return gaussian(x, **kwargs)


def geo(**overrides):
    kwargs = {"sensitivity": 1, "epsilon": 1.0} | overrides
    x = kwargs.pop("x", [1, 2])
    return geometric(x, **kwargs)


def expo(**overrides):
    kwargs = {"sensitivity": 1.0, "epsilon": 1.0} | overrides
    candidates = kwargs.pop("candidates", ["a", "b"])
    scores = kwargs.pop("scores", [0.0, 1.0])
    return exponential(candidates, scores, **kwargs)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: lap(epsilon=0), InputError, "epsilon must be a finite number > 0"),
        (lambda: lap(epsilon=-1), InputError, "epsilon"),
        (lambda: lap(epsilon=math.inf), InputError, "epsilon"),
        (lambda: lap(epsilon=math.nan), InputError, "epsilon"),
        (lambda: lap(epsilon="1"), TypeError, "epsilon must be a real number, got str"),
        (lambda: lap(epsilon=True), TypeError, "epsilon"),
        (lambda: lap(sensitivity=0), InputError, "sensitivity must be a finite number > 0"),
        (lambda: lap(sensitivity=math.inf), InputError, "sensitivity"),
        (lambda: lap(sensitivity=None), TypeError, "sensitivity"),
        (lambda: lap(x=[1.0, math.nan]), InputError, r"x has 1 non-finite .* positions \[1\]"),
        (lambda: lap(x=math.inf), InputError, "x has 1 non-finite"),
        (lambda: lap(x="3"), TypeError, "x must be a real number"),
        (lambda: lap(x=[1, "a"]), TypeError, "x must be a real number"),
        (lambda: lap(x=[True, False]), TypeError, "x must be a real number"),
        (lambda: lap(x=1 + 2j), TypeError, "x must be a real number"),
        (lambda: lap(label=3), TypeError, "label"),
        (lambda: lap(accountant=object()), TypeError, "accountant"),
        (lambda: gau(delta=0), InputError, r"delta must lie in \(0, 1\)"),
        (lambda: gau(delta=1), InputError, "delta"),
        (lambda: gau(delta=-1e-6), InputError, "delta"),
        (lambda: gau(delta="small"), TypeError, "delta"),
        (lambda: gau(sensitivity=-2), InputError, "sensitivity"),
        (lambda: gau(epsilon=0), InputError, "epsilon"),
        (lambda: geo(x=[1, 2.5]), InputError, r"x_int must hold integers .* positions \[1\]"),
        (lambda: geo(x=[1.0, math.nan]), InputError, "x_int must hold integers"),
        (lambda: geo(x=["1"]), TypeError, "x_int must be an integer"),
        (lambda: geo(x=np.array([2**63], dtype=np.uint64)), InputError, "int64 range"),
        (lambda: geo(sensitivity=1.5), InputError, "sensitivity must be a positive integer"),
        (lambda: geo(sensitivity=0), InputError, "sensitivity"),
        (lambda: geo(epsilon=-0.1), InputError, "epsilon"),
        (lambda: expo(scores=[0.0]), InputError, "same length, got 2 candidates and 1 scores"),
        (lambda: expo(scores=[0.0, math.nan]), InputError, r"scores has 1 NaN .* positions \[1\]"),
        (lambda: expo(scores=[0.0, math.inf]), InputError, "scores"),
        (lambda: expo(scores=["x", "y"]), TypeError, "scores must be an array of real numbers"),
        (lambda: expo(scores=[[0.0, 1.0]]), InputError, "one-dimensional"),
        (lambda: expo(candidates=[], scores=[]), InputError, "candidates is empty"),
        (lambda: expo(candidates="ab"), TypeError, "candidates must be a sequence"),
        (lambda: expo(candidates=5), TypeError, "candidates must be a sequence"),
        (lambda: expo(sensitivity=0), InputError, "sensitivity"),
        (lambda: expo(epsilon=math.inf), InputError, "epsilon"),
    ],
)
def test_invalid_arguments_are_refused_with_the_parameter_named(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_privacy_parameters_are_keyword_only():
    with pytest.raises(TypeError):
        laplace(1.0, 1.0, 1.0)
    with pytest.raises(TypeError):
        exponential(["a"], [0.0], 1.0, 1.0)


def test_validation_happens_before_any_spend():
    accountant = Accountant(1.0)
    with pytest.raises(InputError):
        laplace([math.nan], sensitivity=1, epsilon=0.5, accountant=accountant)
    assert accountant.spent_epsilon == 0.0 and accountant.ledger.empty


@pytest.mark.parametrize("name", list(MECHANISM_CALLS))
@pytest.mark.parametrize(("seed", "error"), [("3", TypeError), (1.5, TypeError), (-1, InputError)])
def test_a_bad_seed_is_refused_before_the_spend(name, seed, error):
    """The seed was checked after the accountant was charged: a refused call still spent ε."""
    call, _, _ = MECHANISM_CALLS[name]
    accountant = Accountant(1.0, delta=1e-5)
    with pytest.raises(error, match="seed"):
        call(accountant=accountant, seed=seed)
    assert accountant.spent_epsilon == 0.0 and accountant.ledger.empty


# ----------------------------------------------------------------------------------------------
# Noise scales that overflow the output type (issue 14, item 6)
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", PATHS)
def test_geometric_refuses_a_scale_that_overflows_int64(path):
    """geometric(3, epsilon=1e-300) used to return 9223372036854775807 (or 3) silently."""
    accountant = Accountant(1.0)
    kwargs = {"seed": 1} if path == "seeded" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)  # refused before the seed warning
        with pytest.raises(
            InputError,
            match=r"geometric: epsilon=1e-300 with sensitivity=1 gives a noise scale "
            r"sensitivity/epsilon of 1e\+300, above the 1.62e\+14 that int64 counts can carry"
            r".*Use epsilon >= 6.2e-15 for sensitivity=1",
        ):
            geometric(3, sensitivity=1, epsilon=1e-300, accountant=accountant, **kwargs)
    assert accountant.spent_epsilon == 0.0 and accountant.ledger.empty
    with pytest.raises(InputError, match=r"epsilon >= 1.3e-14 for sensitivity=2"):
        geometric([0, 1], sensitivity=2, epsilon=1e-14)


@pytest.mark.parametrize("path", PATHS)
def test_geometric_at_the_largest_scale_stays_far_inside_int64(path):
    epsilon = 1.0001 / MAX_INTEGER_NOISE_SCALE
    noisy = draw(path, geometric, np.full(2000, 3), sensitivity=1, epsilon=epsilon)
    assert noisy.dtype == np.int64
    assert np.all(np.abs(noisy - 3) < 2**52)
    # ... and the noise really has that scale (mean |K| ~ b), it is not saturated or zero.
    assert 0.5 * MAX_INTEGER_NOISE_SCALE < np.abs(noisy - 3).mean() < 2 * MAX_INTEGER_NOISE_SCALE


def test_geometric_refuses_counts_without_room_for_noise():
    with pytest.raises(InputError, match=r"x_int has values beyond ±2\*\*62 at positions \[1\]"):
        geometric([1, 2**62 + 1], sensitivity=1, epsilon=1.0)
    with warnings.catch_warnings():  # the bound itself is accepted
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        assert geometric([2**62, -(2**62)], sensitivity=1, epsilon=1.0, seed=0).dtype == np.int64


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda **kw: laplace(1.0, sensitivity=1e10, epsilon=1e-300, **kw),
         r"laplace: epsilon=1e-300 with sensitivity=10000000000.0 gives a noise scale "
         r"sensitivity/epsilon of inf, above the 4.39e\+304 that float64 noise can carry"),
        (lambda **kw: laplace([1.0, 1e308], sensitivity=1, epsilon=1.0, **kw),
         r"laplace: x has 1 values beyond ±4.49e\+307 at positions \[1\]"),
        (lambda **kw: gaussian(1.0, sensitivity=1e306, epsilon=1.0, delta=1e-6, **kw),
         r"gaussian: epsilon=1.0 with sensitivity=1e\+306 gives a noise standard deviation "
         r"sigma \(delta=1e-06\) of .*above the 4.39e\+304"),
        (lambda **kw: exponential(["a", "b"], [0, 1], sensitivity=1e300, epsilon=1e-300, **kw),
         r"exponential: epsilon=1e-300 with sensitivity=1e\+300 gives a Gumbel scale "
         r"2\*sensitivity/epsilon of inf"),
        (lambda **kw: exponential(["a", "b"], [0, 1], sensitivity=1e-300, epsilon=1e300, **kw),
         r"exponential: .*Gumbel scale 2\*sensitivity/epsilon of 0 \(the quotient underflows\)"),
    ],
    ids=["laplace-inf-scale", "laplace-huge-x", "gaussian-huge-sigma", "exponential-inf-scale",
         "exponential-zero-scale"],
)
@pytest.mark.parametrize("path", PATHS)
def test_float_mechanisms_refuse_scales_that_overflow(call, match, path):
    accountant = Accountant(1e301, delta=0.5)
    kwargs = {"seed": 1} if path == "seeded" else {}
    with pytest.raises(InputError, match=match):
        call(accountant=accountant, **kwargs)
    assert accountant.spent_epsilon == 0.0


def test_float_mechanisms_accept_huge_but_finite_scales():
    """A scale of 1e300 is absurd but representable: the output is finite, not refused."""
    assert MAX_FLOAT_NOISE_SCALE > 1e300
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        noisy = laplace(np.zeros(50), sensitivity=1.0, epsilon=1e-300, seed=2)
    assert np.all(np.isfinite(noisy)) and np.abs(noisy).max() > 1e298


# ---------------------------------------------------------------------- audit regressions
@pytest.mark.parametrize("epsilon", [1e200, 1e300])
def test_analytic_sigma_for_huge_epsilon_is_the_threshold_not_one(epsilon):
    from geosynth.dp.mechanisms import _gaussian_delta

    # log_ndtr(-huge) = -inf made delta NaN, the bracket stopped at 1 and sigma was 1.0.
    sigma = analytic_gaussian_sigma(1.0, epsilon, 1e-5)
    assert sigma < 1e-90
    assert _gaussian_delta(sigma, epsilon) <= 1e-5
    assert _gaussian_delta(sigma * (1 - 1e-9), epsilon) > 1e-5


def test_geometric_calibrates_for_the_exact_integer_sensitivity(monkeypatch):
    import geosynth.dp.mechanisms as mechanisms

    seen = []
    original = mechanisms._calibrate

    def spy(build, scale, d_in, limit, where):
        seen.append(d_in)
        return original(build, scale, d_in, limit, where)

    monkeypatch.setattr(mechanisms, "_calibrate", spy)
    noisy = geometric(3, sensitivity=2**53 + 1, epsilon=1000.0)
    assert isinstance(noisy, int)
    assert seen == [2**53 + 1]  # float(2**53 + 1) == 2**53 was passed before


def test_ragged_input_and_mapping_candidates_refused_with_geosynth_errors():
    with pytest.raises(InputError, match=r"x is a ragged sequence"):
        laplace([[1.0], [1.0, 2.0]], sensitivity=1.0, epsilon=1.0)
    with pytest.raises(InputError, match=r"x_int is a ragged sequence"):
        geometric([[1], [1, 2]], sensitivity=1, epsilon=1.0)
    with pytest.raises(InputError, match=r"scores is a ragged sequence"):
        exponential(["a", "b"], [[1.0], [1.0, 2.0]], sensitivity=1.0, epsilon=1.0)
    with pytest.raises(TypeError, match=r"candidates must be a sequence .* got dict"):
        exponential({"a": 1, "b": 2}, [1.0, 2.0], sensitivity=1.0, epsilon=1.0)


def test_geometric_refuses_masked_counts_without_reading_under_the_mask():
    """np.asarray dropped the mask: the hidden (confidential) counts were noised and released."""
    accountant = Accountant(1.0)
    hidden = np.ma.array([3, 12345], mask=[False, True])
    with pytest.raises(InputError, match=r"x_int is a masked array with masked entries") as info:
        geometric(hidden, sensitivity=1, epsilon=1.0, accountant=accountant)
    assert "12345" not in str(info.value) and accountant.ledger.empty
    assert geometric(np.ma.array([3, 4]), sensitivity=1, epsilon=50.0).shape == (2,)


def test_geometric_refuses_an_integer_sensitivity_beyond_floats_with_an_input_error():
    """float(10**400) raised a bare OverflowError before the sensitivity was checked."""
    with pytest.raises(InputError, match=r"sensitivity must be a finite number > 0"):
        geometric([1], sensitivity=10**400, epsilon=1.0)


# ----------------------------------------------------------------------------------------------
# OpenDP's privacy map, sigma underflow, absurd integer inputs
# ----------------------------------------------------------------------------------------------


class _UncertifiedMeasurement:
    """A measurement whose privacy map never certifies the loss asked for (whatever the scale)."""

    def __init__(self, invoked):
        self.invoked = invoked

    def map(self, d_in):
        return 1e6

    def __call__(self, value):
        self.invoked.append(value)
        return value


class _OpenDPWithUncertifiedMaps:
    """OpenDP with every noise constructor replaced by one building _UncertifiedMeasurement."""

    def __init__(self, dp, invoked):
        self._dp = dp
        build = lambda *args, **kwargs: _UncertifiedMeasurement(invoked)  # noqa: E731
        self.m = type("m", (), {"make_laplace": staticmethod(build),
                                "make_gaussian": staticmethod(build),
                                "make_noisy_max": staticmethod(build)})

    def __getattr__(self, name):
        return getattr(self._dp, name)


@pytest.mark.parametrize("name", list(MECHANISM_CALLS))
def test_a_loss_opendp_does_not_certify_is_refused_before_the_spend(name, monkeypatch):
    """When OpenDP's own map stayed above the claimed epsilon (rho), a PrivacyLeakWarning was
    issued and the noise released anyway, charged and labelled at the smaller epsilon."""
    import geosynth.dp.mechanisms as mechanisms

    call, _, _ = MECHANISM_CALLS[name]
    invoked = []
    dp = mechanisms._opendp()
    monkeypatch.setattr(mechanisms, "_opendp", lambda: _OpenDPWithUncertifiedMaps(dp, invoked))
    accountant = Accountant(1.0, delta=1e-5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.raises(SamplerError, match=rf"^{name}: OpenDP certifies a privacy loss of "
                           r"1000000.0 .*nothing was spent or released"):
            call(accountant=accountant)
    assert invoked == []
    assert accountant.ledger.empty and accountant.spent_epsilon == 0.0


@pytest.mark.parametrize(("sensitivity", "epsilon", "delta"),
                         [(5e-324, 50.0, 1e-6), (1e-300, 1e300, 0.5), (1e-300, 1e300, 1e-20)])
def test_a_sigma_that_underflows_is_an_input_error_not_a_zero_division(sensitivity, epsilon,
                                                                       delta):
    """sigma = ratio * sensitivity rounded to 0 and the check of delta divided by it."""
    given = re.escape(f"epsilon={epsilon!r} with sensitivity={sensitivity!r} and delta={delta!r}")
    match = rf"{given} gives a noise standard deviation sigma of .* underflows to 0; use a smaller"
    with pytest.raises(InputError, match=match):
        analytic_gaussian_sigma(sensitivity, epsilon, delta)
    accountant = Accountant(1e301, delta=0.9)
    with pytest.raises(InputError, match=match):
        gaussian(1.0, sensitivity=sensitivity, epsilon=epsilon, delta=delta,
                 accountant=accountant)
    assert accountant.ledger.empty


def test_classic_sigma_of_a_subnormal_delta_is_finite():
    """1.25 / delta overflowed to inf for delta < 7e-309, and sigma with it."""
    sigma = classic_gaussian_sigma(1.0, 0.5, 5e-324)
    expected = 2 * math.sqrt(2 * (math.log(1.25) - math.log(5e-324)))
    assert math.isfinite(sigma) and sigma == pytest.approx(expected, rel=1e-14)
    assert sigma == pytest.approx(77.18358454866917, rel=1e-12)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("sensitivity", [2**63, 2**70, 1e20])
def test_geometric_refuses_a_sensitivity_beyond_int64_before_the_spend(path, sensitivity):
    """OpenDP raised a bare ValueError ('not representable by i64'); the seeded path ran."""
    accountant = Accountant(1e300)
    kwargs = {"seed": 1} if path == "seeded" else {}
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)  # refused before the seed warning
        with pytest.raises(InputError, match=r"sensitivity must be at most 2\*\*63 - 1 for "
                           r"geometric\(\)"):
            geometric(1, sensitivity=sensitivity, epsilon=1e30, accountant=accountant, **kwargs)
    assert accountant.ledger.empty


@pytest.mark.parametrize(("x", "position"), [
    ([1, 2.0**63], 1), ([-(2.0**63) * 2, 1.0], 0), ([1, 10**30], 1), ([[1, 2], [3, -(10**20)]], 3),
    (10**30, 0),
])
def test_geometric_counts_beyond_int64_are_refused_cleanly(x, position):
    """A float 2**63 passed the range test (float(int64 max) == 2**63) and overflowed in the
    cast with a RuntimeWarning; Python ints beyond int64 were "a list of dtype object"."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning from the cast
        with pytest.raises(InputError, match=rf"x_int has values outside the int64 range at "
                           rf"positions \[{position}\]"):
            geometric(x, sensitivity=1, epsilon=1.0)


def test_geometric_takes_ints_held_as_objects_like_laplace_takes_floats():
    """An object Series of ints (e.g. after a concat with None dropped) was a TypeError."""
    import pandas as pd

    noisy = geometric(pd.Series([3, 4], dtype=object), sensitivity=1, epsilon=50.0)
    assert noisy.dtype == np.int64 and noisy.shape == (2,)
    assert isinstance(geometric(np.array(7, dtype=object), sensitivity=1, epsilon=50.0), int)
    with pytest.raises(TypeError, match="x_int must be an integer or an array of integers"):
        geometric(np.array([1, "a"], dtype=object), sensitivity=1, epsilon=1.0)


def test_exponential_refuses_a_zero_dimensional_candidates_array():
    """len() of a 0-d array raised a bare 'len() of unsized object'."""
    with pytest.raises(TypeError, match="candidates must be a sequence .* 0-dimensional array"):
        exponential(np.array(5), [0.0], sensitivity=1.0, epsilon=1.0)
    # Candidates that are ragged sequences themselves are still fine.
    assert exponential([[1], [1, 2]], [0.0, 1e9], sensitivity=1.0, epsilon=1.0) == [1, 2]


@pytest.mark.parametrize("call", [
    lambda: geometric("7", sensitivity=1, epsilon=1.0),
    lambda: exponential({"a": 1}, [1.0], sensitivity=1, epsilon=1.0),
    lambda: laplace([1.0], sensitivity=1, epsilon=1.0, accountant=object()),
    lambda: DirichletMultinomialSynthesizer(epsilon=1.0).fit([True, False]),
])
def test_a_wrong_type_in_the_dp_layer_is_a_geosynth_error(call):
    # A plain TypeError escaped `except GeosynthError` around a release.
    with pytest.raises(InputTypeError):
        call()


@pytest.mark.parametrize("mechanism", [
    lambda x, acc: laplace(x, sensitivity=1.0, epsilon=1.0, accountant=acc),
    lambda x, acc: gaussian(x, sensitivity=1.0, epsilon=0.5, delta=1e-6, accountant=acc),
    lambda x, acc: geometric(x, sensitivity=1, epsilon=1.0, accountant=acc),
    lambda x, acc: exponential(range(x.size), x, sensitivity=1.0, epsilon=1.0,
                               accountant=acc),
])
def test_values_whose_copy_is_too_large_are_refused_before_any_spend(mechanism):
    # laplace(np.ones(10**9, np.int8), ...) raised a bare MemoryError asking for 7.45 GiB
    # (a view of 10**12 values here: no memory is taken by the input itself).
    acc = Accountant(10.0)
    huge = np.broadcast_to(np.int8(1), (10**12,))
    with pytest.raises(MemoryLimitError, match=r"has 1,000,000,000,000 values, whose 8-byte "
                                               r"copy .*MAX_VALUE_BYTES \(2 GiB\)"):
        mechanism(huge, acc)
    assert acc.spent_epsilon == 0.0


def test_the_copy_limit_is_the_documented_one(monkeypatch):
    from geosynth.dp import mechanisms

    assert mechanisms.MAX_VALUE_BYTES == 2**31
    monkeypatch.setattr(mechanisms, "MAX_VALUE_BYTES", 80)  # ten 8-byte values
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        assert laplace(np.zeros(10, np.int8), sensitivity=1.0, epsilon=1.0, seed=1).shape == (10,)
    with pytest.raises(MemoryLimitError, match="has 11 values"):
        laplace(np.zeros(11, np.int8), sensitivity=1.0, epsilon=1.0, seed=1)


def test_geometric_warns_of_an_epsilon_that_leaves_the_counts_exact_before_the_spend():
    # geometric([3, 0, 12], epsilon=1e300) returned the counts themselves, labelled ε-DP,
    # without a word (dp_counts and OnTheMapSynthesizer warned; the mechanism did not).
    accountant = Accountant(1e301)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        with pytest.raises(PrivacyLeakWarning, match=r"geometric: epsilon=1e\+300 \(sensitivity "
                           r"1\) leaves each count exact with probability 1: about 0 of the 3 "
                           r"counts get any noise.*below 1\.1 most counts get noise"):
            geometric([3, 0, 12], sensitivity=1, epsilon=1e300, accountant=accountant)
    assert accountant.spent_epsilon == 0.0 and accountant.ledger.empty
    # P(K = 0) = tanh(ε / 2Δ) crosses 0.999 at ε/Δ = 2·atanh(0.999) = 7.6004
    threshold = 2 * math.atanh(0.999)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        geometric([3], sensitivity=2, epsilon=2 * threshold * 0.999)
    with pytest.warns(PrivacyLeakWarning,
                      match=r"counts: epsilon=15.2.*sensitivity 2.*of the 1 counts"):
        geometric([3], sensitivity=2, epsilon=2 * threshold * 1.001, label="counts")


@pytest.mark.parametrize("epsilon", [1e-300, 1e-160, 1e155, 1e300])
def test_exponential_refuses_an_epsilon_whose_zcdp_loss_is_no_float(epsilon):
    # rho = epsilon**2 / 8 underflowed to 0 (ZeroDivisionError) or overflowed (OverflowError).
    accountant = Accountant(epsilon=1e301)
    with pytest.raises(InputError, match=r"exponential: epsilon=.* is outside \[1e-150, 1e\+150\]"):
        exponential(["a", "b"], [0.0, 1.0], sensitivity=1, epsilon=epsilon,
                    accountant=accountant)
    assert accountant.spent_epsilon == 0


def test_exponential_takes_the_ends_of_its_epsilon_range():
    assert exponential(["a", "b"], [0.0, 1.0], sensitivity=1, epsilon=1e150) == "b"
    # ε = 1e-150: each with probability 1/2 (up to 1e-150), not "a" or "b" always
    rng = np.random.default_rng(11)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)  # a seed, for the test
        picks = [exponential(["a", "b"], [0.0, 1.0], sensitivity=1, epsilon=1e-150, seed=rng)
                 for _ in range(2_000)]
    assert stats.binomtest(picks.count("b"), len(picks), 0.5).pvalue > 1e-3


# ----------------------------------------------------------- values float64 holds too coarsely
@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
@pytest.mark.parametrize("x", [2**60 + 129, np.array([3, 2**53 + 1], dtype=np.int64),
                               [2**70 + 1]])
def test_float_mechanisms_refuse_integers_float64_rounds(mechanism, x, path):
    """2**60 + 129 became 2**60 + 256 and its neighbour 2**60 + 128 became 2**60 exactly.

    The noise (scale 1) was then rounded away: every output was 2**60 or 2**60 + 256, telling
    the two neighbours apart with certainty against a stated epsilon of 1.
    """
    accountant = Accountant(10.0, delta=1e-3)
    kwargs = {"seed": 1} if path == "seeded" else {}
    call = laplace if mechanism == "laplace" else gaussian
    extra = {"delta": 1e-6} if mechanism == "gaussian" else {}
    for sensitivity in (1, 4096):  # beyond the spacing too: the integer rule alone refuses
        with pytest.raises(InputError, match=rf"{mechanism}: x has 1 integers beyond 2\*\*53 "
                           r"at positions \[\d\] that float64 cannot hold exactly.*use "
                           r"geosynth.dp.mechanisms.geometric"):
            call(x, sensitivity=sensitivity, epsilon=1.0, accountant=accountant, **extra,
                 **kwargs)
    assert accountant.ledger.empty


@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
def test_float_mechanisms_judge_integers_element_by_element(mechanism):
    """10**16 is exact in float64: refused as an integer, accepted as a float; and a list's
    integer beyond 2**53 beside a float was rounded by NumPy before the check saw it."""
    call = laplace if mechanism == "laplace" else gaussian
    extra = {"delta": 1e-6} if mechanism == "gaussian" else {}
    assert float(10**16) == 10**16
    noisy = call(10**16, sensitivity=1e9, epsilon=1.0, **extra)
    assert noisy != 1e16
    with pytest.raises(InputError, match=r"x has 1 integers beyond 2\*\*53 at positions \[0\]"):
        call([2**53 + 1, 0.5], sensitivity=2, epsilon=1.0, **extra)


@pytest.mark.parametrize("mechanism", ["laplace", "gaussian"])
def test_float_mechanisms_refuse_values_whose_spacing_exceeds_the_sensitivity(mechanism):
    """Near 1e17 doubles are 16 apart: noise of scale 1 was rounded away, x published exactly."""
    accountant = Accountant(10.0, delta=1e-3)
    call = laplace if mechanism == "laplace" else gaussian
    extra = {"delta": 1e-6} if mechanism == "gaussian" else {}
    assert np.spacing(1e17) == 16.0
    with pytest.raises(InputError, match=rf"{mechanism}: x has 1 values at positions \[1\] "
                       r"where float64's spacing exceeds sensitivity=1: no float64 statistic "
                       r"there can change by at most the sensitivity.*subtract a public offset"):
        call([5.0, 1e17], sensitivity=1, epsilon=1.0, accountant=accountant, **extra)
    assert accountant.ledger.empty
    # The same magnitude with a sensitivity above the spacing is noised. One draw of scale 64
    # rounds back to 1e17 with probability 1 - exp(-8/64) = 0.12 (Laplace) or 0.02 (Gaussian),
    # so 40 are drawn: most must move, and all 40 stay put with probability < 1e-36.
    noisy = call(np.full(40, 1e17), sensitivity=64, epsilon=1.0, accountant=accountant, **extra)
    assert np.count_nonzero(noisy != 1e17) >= 20


def test_float_mechanisms_take_integers_up_to_2_to_the_53():
    noisy = laplace(np.array([2**53 - 1, 7]), sensitivity=2, epsilon=1.0)
    assert noisy.shape == (2,) and np.all(np.isfinite(noisy))


@pytest.mark.parametrize("delta", [2e-3, 0.5])
def test_gaussian_warns_of_a_large_delta(delta):
    accountant = Accountant(10.0, delta=0.9)
    with pytest.warns(PrivacyLeakWarning, match=rf"gaussian: delta={delta!r} is above 0.001: "
                      r"delta is the probability that the guarantee fails outright"):
        gaussian(1.0, sensitivity=1, epsilon=1.0, delta=delta, accountant=accountant)
    assert accountant.spent_delta == pytest.approx(delta)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        gaussian(1.0, sensitivity=1, epsilon=1.0, delta=1e-3)
