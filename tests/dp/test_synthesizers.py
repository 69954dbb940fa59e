import itertools
import math
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.special import gammaln

from geosynth.dp.accountant import Accountant
from geosynth.dp.synthesizers import (
    BetaBinomialSynthesizer,
    DirichletMultinomialSynthesizer,
    dirichlet_alpha,
    dirichlet_epsilon,
)
from geosynth.errors import (
    BudgetExceededError,
    DataWarning,
    InputError,
    InputTypeError,
    MemoryLimitError,
    PrivacyLeakWarning,
)

SUSEP = np.array([21, 6, 24, 2, 19, 10, 21, 4])  # Marcolin (2018) Table 4.1, n = 107

pytestmark = pytest.mark.filterwarnings("ignore::geosynth.errors.PrivacyLeakWarning")


def compositions(total, k):
    """Every vector of k non-negative ints summing to total."""
    for cuts in itertools.combinations(range(total + k - 1), k - 1):
        bounds = (-1, *cuts, total + k - 1)
        yield np.array([bounds[i + 1] - bounds[i] - 1 for i in range(k)])


def dm_logpmf(x_synth, alpha, x):
    """Exact Dirichlet-multinomial log pmf P(x_synth | x) of the synthesizer."""
    x_synth, alpha, x = (np.asarray(v, dtype=float) for v in (x_synth, alpha, x))
    n_synth, a_total, n = x_synth.sum(), alpha.sum(), x.sum()
    return (
        gammaln(n_synth + 1)
        - gammaln(x_synth + 1).sum()
        + gammaln(a_total + n)
        - gammaln(a_total + n + n_synth)
        + (gammaln(alpha + x + x_synth) - gammaln(alpha + x)).sum()
    )


class FakeAccountant:
    def __init__(self, epsilon):
        self.budget, self.spent, self.ledger = epsilon, 0.0, []

    def spend(self, epsilon, delta=0.0, label=None):
        if self.spent + epsilon > self.budget + 1e-12:
            raise BudgetExceededError(f"{label}: {epsilon} exceeds the remaining budget")
        self.spent += epsilon
        self.ledger.append((label, epsilon))


# ---------------------------------------------------------------------- the epsilon <-> alpha map
def test_thesis_alpha_is_the_typo_and_guarantees_less_epsilon():
    # Marcolin (2018) ch. 4: epsilon = 2, n = 107, "alpha = 39.37" = 107 / e (the misprint).
    assert 107 / math.e == pytest.approx(39.37, abs=0.01)
    assert dirichlet_alpha(2.0, 107) == pytest.approx(107 / (math.e**2 - 1))
    assert dirichlet_alpha(2.0, 107) == pytest.approx(16.75, abs=0.005)
    assert dirichlet_epsilon(39.37, 107) == pytest.approx(1.313, abs=5e-4)
    assert dirichlet_epsilon(39.37, 107) < 2.0


@pytest.mark.parametrize("epsilon", [0.01, 0.5, 1.0, 2.0, 10.0])
@pytest.mark.parametrize("n_synth", [1, 7, 107, 10_000])
def test_alpha_and_epsilon_are_inverse(epsilon, n_synth):
    alpha = dirichlet_alpha(epsilon, n_synth)
    assert alpha == pytest.approx(n_synth / math.expm1(epsilon), rel=1e-14)
    assert dirichlet_epsilon(alpha, n_synth) == pytest.approx(epsilon, rel=1e-12)


def test_epsilon_uses_the_smallest_alpha():
    assert dirichlet_epsilon([5.0, 2.0, 9.0], 10) == pytest.approx(math.log(6.0))


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: dirichlet_alpha(0.0, 10), InputError, "epsilon must be a finite number > 0"),
        (lambda: dirichlet_alpha(math.inf, 10), InputError, "finite"),
        (lambda: dirichlet_alpha("1", 10), TypeError, "real number"),
        (lambda: dirichlet_alpha(True, 10), TypeError, "real number"),
        (lambda: dirichlet_alpha(1.0, 0), InputError, "n_synth"),
        (lambda: dirichlet_alpha(1.0, 2.5), TypeError, "n_synth"),
        (lambda: dirichlet_epsilon(0.0, 10), InputError, "positive"),
        (lambda: dirichlet_epsilon([1.0, np.nan], 10), InputError, "positive and finite"),
        (lambda: dirichlet_epsilon([], 10), InputError, "non-empty"),
        (lambda: dirichlet_epsilon(["a"], 10), TypeError, "a number or an array of numbers"),
    ],
)
def test_map_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


# ---------------------------------------------------------------------- construction and fit
def test_default_alpha_is_the_minimum_for_epsilon():
    synth = DirichletMultinomialSynthesizer(2.0).fit(SUSEP)
    assert synth.alpha.shape == (8,)
    np.testing.assert_allclose(synth.alpha, dirichlet_alpha(2.0, 107))
    assert (synth.n, synth.n_synth, synth.m) == (107, 107, 1)
    assert synth.epsilon == synth.epsilon_per_release == 2.0


def test_m_releases_split_the_budget():
    synth = DirichletMultinomialSynthesizer(2.0, m=4, n_synth=50).fit(SUSEP)
    assert synth.epsilon == 2.0
    assert synth.epsilon_per_release == pytest.approx(0.5)
    np.testing.assert_allclose(synth.alpha, 50 / math.expm1(0.5))
    assert synth.alpha[0] > dirichlet_alpha(2.0, 50)


def test_explicit_alpha_reports_its_epsilon():
    synth = DirichletMultinomialSynthesizer(alpha=39.37).fit(SUSEP)
    assert synth.epsilon == pytest.approx(math.log(1 + 107 / 39.37))
    per_category = np.array([39.37, 50, 60, 70, 80, 90, 100, 110.0])
    synth = DirichletMultinomialSynthesizer(alpha=per_category, m=3).fit(SUSEP)
    np.testing.assert_array_equal(synth.alpha, per_category)
    assert synth.epsilon_per_release == pytest.approx(math.log(1 + 107 / 39.37))
    assert synth.epsilon == pytest.approx(3 * math.log(1 + 107 / 39.37))


def test_explicit_alpha_larger_than_needed_reports_the_smaller_epsilon():
    synth = DirichletMultinomialSynthesizer(2.0, alpha=39.37).fit(SUSEP)
    assert synth.epsilon == pytest.approx(1.313, abs=5e-4)
    synth = DirichletMultinomialSynthesizer(2.0, alpha=dirichlet_alpha(2.0, 107)).fit(SUSEP)
    assert synth.epsilon == pytest.approx(2.0, rel=1e-12)


def test_alpha_too_small_for_epsilon_names_both():
    with pytest.raises(InputError, match=r"alpha \(min 16\.7\).*too small for epsilon=2"):
        DirichletMultinomialSynthesizer(2.0, alpha=16.7).fit(SUSEP)
    with pytest.raises(InputError, match="epsilon=4"):  # m = 2 needs alpha at 2 per release
        DirichletMultinomialSynthesizer(4.0, alpha=16.7, m=2).fit(SUSEP)


def test_alpha_length_must_match():
    with pytest.raises(InputError, match="3 values but counts has 8"):
        DirichletMultinomialSynthesizer(alpha=[1.0, 2.0, 3.0]).fit(SUSEP)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({}, InputError, "give epsilon"),
        ({"epsilon": -1.0}, InputError, "epsilon must be a finite number > 0"),
        ({"epsilon": "2"}, TypeError, "real number"),
        ({"epsilon": 1.0, "m": 0}, InputError, r"m \(synthetic tables\) must be an int >= 1"),
        ({"epsilon": 1.0, "m": 2.0}, TypeError, r"m \(synthetic tables\) must be an int"),
        ({"epsilon": 1.0, "n_synth": 0}, InputError, "n_synth"),
        ({"epsilon": 1.0, "alpha": -2.0}, InputError, "positive"),
        ({"epsilon": 1.0, "accountant": object()}, TypeError, "spend"),
    ],
)
def test_constructor_errors(kwargs, error, match):
    with pytest.raises(error, match=match):
        DirichletMultinomialSynthesizer(**kwargs)


@pytest.mark.parametrize(
    "counts, error, match",
    [
        ([3, -1, 2], InputError, "negative"),
        ([3, 1.5, 2], InputError, "non-integer"),
        ([3, np.nan, 2], InputError, "NaN"),
        ([], InputError, "empty"),
        ([5], InputError, "at least two"),
        ([[1, 2], [3, 4]], InputError, "1-D"),
        ([True, False], TypeError, "booleans"),
        (["a", "b"], TypeError, "integer counts"),
        ([0, 0, 0], InputError, "sum to 0"),
    ],
)
def test_counts_errors(counts, error, match):
    with pytest.raises(error, match=match):
        DirichletMultinomialSynthesizer(1.0).fit(counts)


@pytest.mark.parametrize("counts", [
    [13, -7, 2], [13, 7.5, 2], np.ma.masked_array([13, -7, 2], mask=[0, 1, 0]),
])
def test_refused_counts_are_not_quoted(counts):
    # "negative value(s) [-7]", "non-integer value(s) [7.5]": the counts are the confidential
    # table; a masked array was read through its mask (and its hidden -7 quoted).
    with pytest.raises(InputError) as info:
        DirichletMultinomialSynthesizer(1.0).fit(counts)
    message = str(info.value)
    assert "7" not in message.replace("positions [[1]]", "")
    assert "positions [[1]]" in message or "masked array with masked entries" in message


def test_whole_floats_and_all_zero_with_n_synth_are_accepted():
    synth = DirichletMultinomialSynthesizer(1.0).fit([3.0, 0.0, 2.0])
    assert synth.n == 5
    synth = DirichletMultinomialSynthesizer(1.0, n_synth=10).fit([0, 0, 0])
    with pytest.warns(PrivacyLeakWarning):
        tables = synth.sample(seed=0)
    assert tables.sum() == 10


def test_sample_before_fit():
    with pytest.raises(InputError, match="not fitted"):
        DirichletMultinomialSynthesizer(1.0).sample()


# ---------------------------------------------------------------------- sampling
def test_sample_shape_seed_warning_and_reproducibility():
    synth = DirichletMultinomialSynthesizer(2.0, m=5).fit(SUSEP)
    with pytest.warns(PrivacyLeakWarning, match="NOT differentially private") as said:
        a = synth.sample(seed=3)
    assert said[0].filename == __file__
    with pytest.warns(PrivacyLeakWarning):
        b = synth.sample(seed=3)
    assert a.shape == (5, 8) and a.dtype == np.int64
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a.sum(axis=1), 107)


def test_unseeded_sample_with_a_public_size_is_fresh_and_silent():
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        synth = DirichletMultinomialSynthesizer(2.0, m=50, n_synth=107).fit(SUSEP)
        assert not np.array_equal(synth.sample(), synth.sample())


def test_the_default_size_publishes_n_and_says_so():
    # ñ = n: every table sums to the confidential n, private only when n is public.
    with pytest.warns(PrivacyLeakWarning, match=r"sums to the confidential number of records n "
                                                r"exactly.*replace-one neighbours"):
        synth = DirichletMultinomialSynthesizer(2.0).fit(SUSEP)
    assert synth.sample().sum() == SUSEP.sum()


def test_an_epsilon_whose_exponential_overflows_is_refused():
    with pytest.raises(InputError, match=r"epsilon=800 makes the prior .* underflow to 0"):
        dirichlet_alpha(800.0, 107)
    assert dirichlet_alpha(700.0, 107) > 0.0


def test_series_gives_labelled_frame():
    index = pd.MultiIndex.from_product([["26-35", "36-45", "46-55", "55+"], ["M", "F"]])
    counts = pd.Series(SUSEP, index=index)
    out = DirichletMultinomialSynthesizer(2.0, m=3).fit_sample(counts, seed=1)
    assert isinstance(out, pd.DataFrame)
    assert out.columns.equals(index)
    assert out.index.equals(pd.RangeIndex(3))
    np.testing.assert_array_equal(out.sum(axis=1), 107)


def test_series_without_categories_warns_that_its_labels_are_published():
    counts = pd.Series([5, 3], index=["a", "b"])
    with pytest.warns(PrivacyLeakWarning, match=r"labels of the counts' index .* categories="):
        DirichletMultinomialSynthesizer(1.0, n_synth=8).fit(counts)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)  # declared: no warning
        DirichletMultinomialSynthesizer(1.0, n_synth=8).fit(counts, categories=["a", "b"])
        DirichletMultinomialSynthesizer(1.0, n_synth=8).fit(np.array([5, 3]))


@pytest.mark.parametrize("index, match", [
    (["a", "a"], r"lists \['a'\] more than once"),
    (["a", np.nan], "holds a missing value"),
    (pd.MultiIndex.from_tuples([("a", 1), ("a", 1)]), "lists a label more than once"),
])
def test_a_series_whose_labels_repeat_or_are_missing_is_refused(index, match):
    # Two columns both named 'a' (or one named NaN) were released.
    counts = pd.Series([5, 3], index=index)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.raises(InputError, match=f"the index of counts \\(the categories\\) {match}"):
            DirichletMultinomialSynthesizer(1.0, n_synth=8).fit(counts)


def test_declared_categories_fix_the_columns_whatever_the_records():
    # value_counts() lists the categories that have records: "rare" appears in one data set
    # only. On declared categories both releases have the same columns, and the absent
    # category is a count of 0 with the full prior, so it is drawn too.
    categories = ["common", "other", "rare"]
    with_rare = pd.Series(["common"] * 30 + ["other"] * 9 + ["rare"]).value_counts()
    without = pd.Series(["common"] * 30 + ["other"] * 10).value_counts()
    tables = []
    for counts in (with_rare, without):
        synth = DirichletMultinomialSynthesizer(alpha=20.0, n_synth=40, m=2000)
        synth.fit(counts, categories=categories)
        assert synth.alpha.shape == (3,)
        tables.append(synth.sample(seed=3))
    assert list(tables[0].columns) == list(tables[1].columns) == categories
    fitted = DirichletMultinomialSynthesizer(2.0, n_synth=40).fit(without, categories=categories)
    np.testing.assert_array_equal(fitted._counts, [30, 10, 0])
    # Without the declaration the column itself would tell the records apart.
    assert "rare" not in DirichletMultinomialSynthesizer(2.0, n_synth=40).fit(without) \
        .sample(seed=1).columns
    # The absent category's mean synthetic count is n_synth·α/(Σα + n), as for any category.
    expected = 40 * 20.0 / (3 * 20.0 + 40)  # 8 (a category of 10 records: 12)
    rare = tables[1]["rare"].to_numpy()
    assert abs(rare.mean() - expected) < 5 * rare.std(ddof=1) / math.sqrt(rare.size)


def test_counts_under_undeclared_labels_are_dropped_with_a_warning():
    counts = pd.Series([4, 3, 2], index=["a", "b", "zzz"])
    with pytest.warns(DataWarning, match=r"dropped 2 record\(s\) counted under labels outside"):
        synth = DirichletMultinomialSynthesizer(1.0, n_synth=7).fit(counts, categories=["b", "a"])
    assert synth.n == 7
    np.testing.assert_array_equal(synth._counts, [3, 4])  # in the declared order
    assert list(synth.sample(seed=0).columns) == ["b", "a"]


def test_categories_match_labels_by_value_and_sum_repeated_labels():
    counts = pd.Series([2, 5, 1], index=pd.Index([1.0, 2, 1], dtype=object))
    synth = DirichletMultinomialSynthesizer(1.0, n_synth=8).fit(counts, categories=[1, 2])
    np.testing.assert_array_equal(synth._counts, [3, 5])


def test_declared_categories_are_checked():
    counts = pd.Series([1, 2], index=["a", "b"])
    synth = DirichletMultinomialSynthesizer(1.0, n_synth=3)
    with pytest.raises(InputError, match=r"categories lists \['a'\] more than once"):
        synth.fit(counts, categories=["a", "a", "b"])
    with pytest.raises(InputError, match="categories must be a list of levels"):
        synth.fit(counts, categories="ab")
    with pytest.raises(InputError, match="categories holds a missing value"):
        synth.fit(counts, categories=["a", None])
    with pytest.raises(InputError, match="counts has 2 values but categories lists 3"):
        synth.fit(np.array([1, 2]), categories=["a", "b", "c"])
    with pytest.raises(InputError, match="at least two categories"), \
            pytest.warns(DataWarning, match="dropped 2 record"):
        synth.fit(counts, categories=["a"])
    frame = synth.fit(np.array([1, 2]), categories=["x", "y"]).sample(seed=0)
    assert list(frame.columns) == ["x", "y"]


def test_beta_binomial_takes_declared_labels():
    synth = BetaBinomialSynthesizer(1.0, n_synth=50).fit(12, n=40, categories=["yes", "no"])
    out = synth.sample(seed=2)
    assert list(out.columns) == ["yes", "no"] and int(out.to_numpy().sum()) == 50
    np.testing.assert_array_equal(synth._counts, [12, 28])
    with pytest.raises(InputError, match="counts has 2 values but categories lists 3"):
        BetaBinomialSynthesizer(1.0, n_synth=50).fit(12, n=40, categories=["a", "b", "c"])


def test_dirichlet_multinomial_moments():
    # m synthetic tables at an explicit alpha are m independent DM(alpha + x, n_synth) draws.
    alpha, n_synth, draws = dirichlet_alpha(2.0, 107), 107, 40_000
    synth = DirichletMultinomialSynthesizer(alpha=alpha, m=draws).fit(SUSEP)
    tables = synth.sample(seed=11)
    concentration = alpha + SUSEP
    p = concentration / concentration.sum()
    mean = n_synth * p
    a_total = concentration.sum()
    var = n_synth * p * (1 - p) * (n_synth + a_total) / (1 + a_total)
    z_mean = (tables.mean(axis=0) - mean) / np.sqrt(var / draws)
    assert np.abs(z_mean).max() < 5
    # Without the prior the mean would be n_synth * SUSEP / 107 = SUSEP: far off.
    assert np.abs(tables.mean(axis=0) - SUSEP).max() > 3
    rel = tables.var(axis=0, ddof=1) / var - 1
    assert np.abs(rel).max() < 6 * math.sqrt(2 / draws) * 2


def test_chi_square_against_exact_pmf():
    x, alpha, n_synth, draws = np.array([3, 1, 0]), 1.5, 4, 20_000
    synth = DirichletMultinomialSynthesizer(alpha=alpha, n_synth=n_synth, m=draws).fit(x)
    tables = synth.sample(seed=5)
    outcomes = list(compositions(n_synth, 3))
    observed = np.array([(tables == o).all(axis=1).sum() for o in outcomes])
    assert observed.sum() == draws
    pmf = np.exp([dm_logpmf(o, np.full(3, alpha), x) for o in outcomes])
    assert pmf.sum() == pytest.approx(1.0)
    scipy_pmf = stats.dirichlet_multinomial.pmf(np.array(outcomes), alpha + x, n_synth)
    np.testing.assert_allclose(pmf, scipy_pmf, rtol=1e-10)
    assert stats.chisquare(observed, draws * pmf).pvalue > 1e-3
    # The same draws are far from the prior-only pmf (x ignored): the test has power.
    wrong = np.exp([dm_logpmf(o, np.full(3, alpha), np.zeros(3)) for o in outcomes])
    assert stats.chisquare(observed, draws * wrong).pvalue < 1e-10


# ---------------------------------------------------------------------- Beta-Binomial
def test_beta_binomial_successes_and_two_counts_agree():
    a = BetaBinomialSynthesizer(1.0, n_synth=50).fit(12, n=40)
    b = BetaBinomialSynthesizer(1.0, n_synth=50).fit([12, 28])
    np.testing.assert_array_equal(a.alpha, b.alpha)
    assert a.n == b.n == 40
    np.testing.assert_array_equal(a.sample(seed=2), b.sample(seed=2))


def test_beta_binomial_moments():
    x, n, draws = 30, 40, 40_000
    synth = BetaBinomialSynthesizer(alpha=[2.0, 5.0], m=draws).fit(x, n=n)
    successes = synth.sample(seed=8)[:, 0]
    a, b = 2.0 + x, 5.0 + n - x
    mean = n * a / (a + b)
    var = n * a * b * (a + b + n) / ((a + b) ** 2 * (a + b + 1))
    assert abs(successes.mean() - mean) < 5 * math.sqrt(var / draws)
    assert successes.var(ddof=1) / var == pytest.approx(1, abs=0.05)


@pytest.mark.parametrize(
    "args, kwargs, error, match",
    [
        (([1, 2, 3],), {}, InputError, "exactly 2"),
        ((12,), {"n": 10}, InputError, "exceed"),
        ((12,), {"n": 10.0}, TypeError, "n must be an int"),
        (([1, 2],), {"n": 10}, InputError, "one number of successes"),
        ((-1,), {"n": 10}, InputError, "negative"),
    ],
)
def test_beta_binomial_errors(args, kwargs, error, match):
    with pytest.raises(error, match=match):
        BetaBinomialSynthesizer(1.0).fit(*args, **kwargs)


# ---------------------------------------------------------------------- accountant
def test_accountant_is_charged_before_drawing():
    accountant = FakeAccountant(3.0)
    synth = DirichletMultinomialSynthesizer(2.0, m=2, accountant=accountant).fit(SUSEP)
    synth.sample(seed=1)
    assert accountant.ledger == [("DirichletMultinomialSynthesizer.sample", 2.0)]
    with pytest.raises(BudgetExceededError):
        synth.sample(seed=1)
    assert accountant.spent == 2.0


def test_accountant_is_charged_the_guaranteed_epsilon():
    accountant = FakeAccountant(10.0)
    synth = DirichletMultinomialSynthesizer(alpha=39.37, accountant=accountant).fit(SUSEP)
    synth.sample(seed=1)
    assert accountant.spent == pytest.approx(math.log(1 + 107 / 39.37))


# ---------------------------------------------------------------------- privacy: exact
def neighbour_pairs(n, k, relation):
    """(x, x') pairs of neighbouring count vectors with sum(x) = n."""
    for x in compositions(n, k):
        for j in range(k):
            if relation == "add-remove":
                yield x, x + np.eye(k, dtype=int)[j]
            else:
                for l_ in range(k):
                    if l_ != j and x[l_] > 0:
                        yield x, x + np.eye(k, dtype=int)[j] - np.eye(k, dtype=int)[l_]


def max_log_ratio(alpha, n, k, n_synth, relation):
    worst = 0.0
    outcomes = list(compositions(n_synth, k))
    for x, y in neighbour_pairs(n, k, relation):
        for o in outcomes:
            worst = max(worst, abs(dm_logpmf(o, alpha, x) - dm_logpmf(o, alpha, y)))
    return worst


@pytest.mark.parametrize("epsilon", [0.3, 1.0, 3.0])
@pytest.mark.parametrize("relation", ["replace", "add-remove"])
def test_exact_privacy_loss_is_bounded_by_epsilon(epsilon, relation):
    k, n, n_synth = 3, 3, 4
    synth = DirichletMultinomialSynthesizer(epsilon, n_synth=n_synth).fit([1, 1, 1])
    worst = max_log_ratio(synth.alpha, n, k, n_synth, relation)
    assert worst <= epsilon + 1e-9
    if relation == "replace":  # the bound is attained
        assert worst == pytest.approx(epsilon, abs=1e-9)
    else:  # not attained, but approached
        assert worst > 0.5 * epsilon


@pytest.mark.parametrize("epsilon", [0.3, 1.0, 3.0])
def test_exact_privacy_bound_is_tight(epsilon):
    k, n, n_synth = 3, 3, 4
    alpha = np.full(k, 0.99 * dirichlet_alpha(epsilon, n_synth))
    assert max_log_ratio(alpha, n, k, n_synth, "replace") > epsilon + 1e-3


def test_exact_privacy_of_unequal_alpha_and_m_releases():
    k, n, n_synth, epsilon, m = 3, 2, 3, 1.0, 2
    alpha = np.array([1.0, 3.0, 10.0]) * dirichlet_alpha(epsilon / m, n_synth)
    synth = DirichletMultinomialSynthesizer(epsilon, n_synth=n_synth, m=m, alpha=alpha).fit(
        [1, 1, 0]
    )
    assert synth.epsilon_per_release == pytest.approx(epsilon / m)
    # Two independent tables: the joint log ratio is the sum over the two.
    outcomes = list(compositions(n_synth, k))
    worst = 0.0
    for x, y in neighbour_pairs(n, k, "replace"):
        diff = np.array(
            [dm_logpmf(o, synth.alpha, x) - dm_logpmf(o, synth.alpha, y) for o in outcomes]
        )
        worst = max(worst, np.abs(diff[:, None] + diff[None, :]).max())
    assert worst == pytest.approx(epsilon, abs=1e-9)


# ---------------------------------------------------------------------- privacy: empirical
def empirical_max_log_ratio(tables_x, tables_y, min_count=500):
    """Largest |log frequency ratio| over outcomes seen often, and its 4-SE tolerance."""
    draws = tables_x.shape[0]
    keys_x = [tuple(r) for r in tables_x]
    keys_y = [tuple(r) for r in tables_y]
    cx, cy = pd.Series(keys_x).value_counts(), pd.Series(keys_y).value_counts()
    worst, tol = 0.0, 0.0
    for key in set(cx.index) & set(cy.index):
        a, b = cx[key], cy[key]
        if min(a, b) < min_count:
            continue
        se = math.sqrt((1 - a / draws) / a + (1 - b / draws) / b)
        ratio = abs(math.log(a / b))
        if ratio > worst:
            worst, tol = ratio, 4 * se
    return worst, tol


def test_empirical_privacy_of_beta_binomial():
    epsilon, n_synth, draws = 1.0, 3, 200_000
    alpha = dirichlet_alpha(epsilon, n_synth)

    def draw(counts, a, seed):
        synth = BetaBinomialSynthesizer(alpha=a, n_synth=n_synth, m=draws)
        return synth.fit(counts).sample(seed=seed)

    # x = (1, 0) and x' = (0, 1) differ in one record (replace-one): the worst case.
    worst, tol = empirical_max_log_ratio(draw([1, 0], alpha, 1), draw([0, 1], alpha, 2))
    assert worst <= epsilon + tol
    assert worst > epsilon - tol  # the bound is attained at x_synth = (3, 0)
    # With half the alpha the same estimate exceeds epsilon: the test can fail.
    worst, tol = empirical_max_log_ratio(draw([1, 0], alpha / 2, 1), draw([0, 1], alpha / 2, 2))
    assert worst > epsilon + tol


def test_empirical_privacy_add_remove_with_fixed_n_synth():
    epsilon, n_synth, draws = 1.0, 2, 200_000
    synth_x = DirichletMultinomialSynthesizer(epsilon, n_synth=n_synth, m=1).fit([0, 1, 0])
    alpha = synth_x.alpha

    def draw(counts, seed):
        synth = DirichletMultinomialSynthesizer(alpha=alpha, n_synth=n_synth, m=draws)
        return synth.fit(counts).sample(seed=seed)

    worst, tol = empirical_max_log_ratio(draw([0, 1, 0], 3), draw([1, 1, 0], 4))
    # derived: the largest |log P(x_s | x) / P(x_s | x')| over the 6 outcomes of 2 records
    exact = max(abs(dm_logpmf(o, alpha, [0, 1, 0]) - dm_logpmf(o, alpha, [1, 1, 0]))
                for o in compositions(n_synth, 3))
    assert exact <= epsilon
    assert abs(worst - exact) <= tol  # 0.632: half the alpha (0.943) would be refused


@pytest.mark.parametrize("name", ["m", "epsilon", "alpha", "n_synth", "epsilon_per_release", "n"])
def test_privacy_parameters_cannot_be_changed_after_calibration(name):
    # synth.m = 10 drew ten tables from a prior calibrated for one, each as private as that
    # one, while the charge and the metadata said epsilon: ten times the loss claimed.
    synth = DirichletMultinomialSynthesizer(1.0, n_synth=20).fit([5, 7, 8])
    before = getattr(synth, name)
    with pytest.raises(AttributeError, match=f"{name} is fixed: .* build a new"):
        setattr(synth, name, 10)
    assert np.array_equal(getattr(synth, name), before)


def test_parameters_set_by_fit_say_so_before_it():
    with pytest.raises(AttributeError, match="alpha is set by fit"):
        _ = DirichletMultinomialSynthesizer(1.0, n_synth=20).alpha


# ------------------------------------------------------------ refusals before the spend
def test_tiny_epsilon_refused_at_fit_before_any_spend():
    accountant = Accountant(10.0)
    synth = DirichletMultinomialSynthesizer(1e-320, n_synth=3, accountant=accountant)
    # The prior n_synth / (e^eps - 1) overflowed to inf and sample() failed in NumPy after the
    # accountant had been charged.
    with pytest.raises(InputError, match=r"epsilon / m=.*overflows to infinity.*epsilon / m >="):
        synth.fit([1, 2])
    assert accountant.spent_epsilon == 0.0


def test_epsilon_over_m_underflowing_to_zero_refused():
    with pytest.raises(InputError, match=r"epsilon / m=0.0 is not > 0"):
        DirichletMultinomialSynthesizer(5e-324, m=2, n_synth=3).fit([1, 2])


@pytest.mark.parametrize("m", [10**7 + 1, 10**300, 10**400])
def test_m_beyond_max_tables_refused(m):
    # 10**400 raised OverflowError (epsilon / m), 10**300 NumPy's "maximum dimension" error.
    with pytest.raises(InputError, match=r"m \(synthetic tables\) must be at most 10,000,000"):
        DirichletMultinomialSynthesizer(1.0, m=m)


@pytest.mark.parametrize(
    "counts", [[1e30, 1.0], np.array([2**63 + 5, 1], dtype=np.uint64), [2**62, 2**62]]
)
def test_counts_beyond_int64_room_refused_not_wrapped(counts):
    # 1e30 and uint64 2**63+5 were cast to int64 -9223372036854775808: negative counts.
    beyond = r"counts (has value\(s\) beyond|sums to more than) 2\*\*62"
    with pytest.raises(InputError, match=beyond):
        DirichletMultinomialSynthesizer(1.0, n_synth=5).fit(counts)


def test_n_synth_and_n_beyond_2_62_refused():
    with pytest.raises(InputError, match=r"n_synth=10+ is beyond 2\*\*62"):
        DirichletMultinomialSynthesizer(1.0, n_synth=10**30)
    with pytest.raises(InputError, match=r"n=10+ is beyond 2\*\*62"):
        BetaBinomialSynthesizer(1.0, n_synth=5).fit(3, n=10**30)


# ------------------------------------------------------------ seeds, memory, huge priors
@pytest.mark.parametrize("seed, error", [("abc", TypeError), (-1, InputError), (1.5, TypeError)])
def test_a_bad_seed_is_refused_before_any_spend(seed, error):
    # The seed was checked by the generator after accountant.spend: the budget was gone and
    # nothing was released.
    accountant = Accountant(10.0)
    synth = DirichletMultinomialSynthesizer(1.0, n_synth=10, accountant=accountant).fit([3, 4])
    with pytest.raises(error, match="seed must be"):
        synth.sample(seed=seed)
    assert accountant.spent_epsilon == 0.0


def test_a_sample_beyond_the_memory_limit_is_refused_at_fit():
    # m = 10**7 tables of 10**4 categories: NumPy's MemoryError (745 GiB) after the spend.
    accountant = Accountant(10.0)
    synth = DirichletMultinomialSynthesizer(1.0, n_synth=10, m=10**7, accountant=accountant)
    with pytest.raises(MemoryLimitError, match=r"m=10,000,000 synthetic tables of 10,000 "
                                               r"categories need 2.24e\+03 GiB.*fewer tables"):
        synth.fit(np.ones(10**4, dtype=np.int64))
    assert accountant.spent_epsilon == 0.0
    DirichletMultinomialSynthesizer(1.0, n_synth=10, m=10**7).fit(SUSEP)  # 1.8 GiB: allowed


@pytest.mark.parametrize("alpha", [1e100, 1e308])
def test_a_huge_prior_draws_the_prior_not_the_last_category(alpha):
    # α → ∞: p̃ is the prior mean (1/4 each) and x̃ ~ Multinomial(12, 1/4). At α = 1e308 the
    # four gammas summed to inf in Generator.dirichlet, p̃ came out (0, 0, 0, 0) and every
    # table was (0, 0, 0, 12). (α = 1e100 is the ordinary path: the check has no special case.)
    draws, n_synth = 20_000, 12
    synth = DirichletMultinomialSynthesizer(alpha=alpha, n_synth=n_synth, m=draws)
    tables = synth.fit([7, 0, 3, 2]).sample(seed=4)
    assert synth.epsilon_per_release == pytest.approx(n_synth / alpha)  # log1p(ñ / α)
    expected = draws * stats.binom.pmf(np.arange(n_synth + 1), n_synth, 0.25)
    keep = expected >= 5
    for column in tables.T:
        observed = np.bincount(column, minlength=n_synth + 1)
        obs = np.append(observed[keep], observed[~keep].sum())
        exp = np.append(expected[keep], expected[~keep].sum())
        assert stats.chisquare(obs, exp * draws / exp.sum()).pvalue > 1e-4


# ------------------------------------------------------------ the prior and the successes, read
@pytest.mark.parametrize("alpha, error, match", [
    (np.ma.masked_array([1.0, -5.0], mask=[False, True]), InputError, "alpha is a masked array"),
    ([True, 2.5], TypeError, "alpha must be a number or an array of numbers, got list holding "
                             "bool"),
    (10**400, InputError, "alpha must be finite, got an int beyond the float range"),
], ids=["masked", "bool entry", "10**400"])
def test_alpha_is_read_as_the_posterior_reads_it(alpha, error, match):
    # The masked -5 was read through the mask (a prior of [1, -5] refused as "positive", or a
    # hidden 1e-300 used), True became a prior of 1.0, and 10**400 was "not numeric (object)";
    # charest_posterior refused all three.
    with pytest.raises(error, match=match):
        DirichletMultinomialSynthesizer(alpha=alpha)


def test_an_alpha_that_leaves_no_privacy_is_refused_before_any_spend():
    # ñ / min α overflowed: ε = inf, the tables were the confidential counts, and the only
    # message (with an accountant) was the accountant's "epsilon must be finite" about an epsilon
    # the user never gave. The epsilon route refuses an ε above ln(max float) as no privacy.
    accountant = Accountant(10.0)
    synth = DirichletMultinomialSynthesizer(alpha=1e-320, n_synth=3, accountant=accountant)
    with pytest.raises(InputError, match=r"alpha \(min 1e-320\) .* is inf: no privacy at all"):
        synth.fit([1, 2])
    assert accountant.spent_epsilon == 0.0
    synth = DirichletMultinomialSynthesizer(alpha=1e-300, n_synth=3).fit([1, 2])
    assert synth.epsilon == pytest.approx(math.log1p(3e300))  # the epsilon route's range


def test_beta_binomial_masked_successes_are_refused():
    # np.asarray dropped the mask: the hidden 7 was synthesized as the successes.
    with pytest.raises(InputError, match="counts is a masked array"):
        BetaBinomialSynthesizer(1.0).fit(np.ma.masked_array([7], mask=[True]), n=10)


@pytest.mark.parametrize("counts, n, match", [
    (13, 11, "successes .* exceed the number of trials n"),
    ([13, 17], 50, "one number of successes, got 2 numbers"),
])
def test_beta_binomial_refusals_do_not_quote_the_counts(counts, n, match):
    # "successes x=13 exceed the number of trials n=11", "got [13 17]": the confidential data in
    # a message (the counts' own refusals give positions, not values).
    with pytest.raises(InputError, match=match) as info:
        BetaBinomialSynthesizer(1.0).fit(counts, n=n)
    assert not {"13", "17", str(n)} & set(re.findall(r"\d+", str(info.value)))


@pytest.mark.parametrize("counts", [10**400, [10**400, 1], [1, -(10**400)]])
def test_counts_beyond_the_float_range_are_refused(counts):
    # float(10**400) raised OverflowError ("int too large to convert to float").
    synth = DirichletMultinomialSynthesizer(epsilon=1, n_synth=100)
    with pytest.raises(InputError, match=r"^counts has value\(s\) beyond 2\*\*62"):
        synth.fit(counts)


@pytest.mark.parametrize("fit", [
    lambda: DirichletMultinomialSynthesizer(epsilon=1, n_synth=100).fit(
        [1, 2, 3], categories=np.array(1.0)),
    lambda: BetaBinomialSynthesizer(epsilon=1, n_synth=100).fit(
        [1, 2], categories=np.array("a")),
    lambda: BetaBinomialSynthesizer(epsilon=1, n_synth=100).fit(
        1, n=5, categories=np.array(1.0)),
])
def test_a_0d_array_of_categories_is_refused_by_name(fit):
    # list(np.array(1.0)) raised "TypeError: iteration over a 0-d array".
    with pytest.raises(InputTypeError, match=r"^categories must be a list of labels .*got "
                                             r"ndarray of shape \(\)"):
        fit()
    synth = BetaBinomialSynthesizer(epsilon=1, n_synth=100).fit([1, 2],
                                                               categories=np.array(["a", "b"]))
    assert list(synth.categories) == ["a", "b"]


def test_a_deep_copy_of_a_synthesizer_spends_the_same_budget():
    # A deep copy had an accountant of its own: 2 epsilon released, each ledger saying 1.
    import copy

    budget = Accountant(1.0)
    synth = DirichletMultinomialSynthesizer(1.0, n_synth=50, accountant=budget).fit([20, 30])
    twin = copy.deepcopy(synth)
    assert twin.accountant is budget and twin.alpha is not synth.alpha
    synth.sample(seed=None)
    with pytest.raises(BudgetExceededError):
        twin.sample(seed=None)
    assert budget.spent_epsilon == pytest.approx(1.0)
