"""DOCA (Leal, Vidal & Machado 2018): Algorithms 1-2, the streaming API, noise and evaluation."""

import copy
import itertools
import math
import pickle
import warnings

import numpy as np
import pytest
from scipy import stats

from geosynth.errors import DataWarning, InputError, MemoryLimitError, PrivacyLeakWarning
from geosynth.sdc import Doca
from geosynth.sdc.doca import (
    DocaDiagnostics,
    beta_shape_for_skewness,
    histogram_intersection,
    mse,
    naive_laplace,
    simulate_skewed_stream,
)


def _run(x, seed=0, **kwargs):
    """fit_transform with diagnostics, silencing the (expected) seed/diagnostics warnings."""
    params = {"epsilon": 1.0, "sensitivity": 100_000.0} | kwargs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        doca = Doca(seed=seed, **params)
        released, diag = doca.fit_transform(x, return_diagnostics=True)
    return doca, released, diag


def _reference(x, delay, beta, m):
    """Algorithms 1-2 transcribed with Python lists, independently of the numba kernel.

    Returns the published clusters in publication order as (sorted members, publication time).
    Sums over attributes use the same formula and order as the kernel (see the module docs), and
    the window of tau is summed in storage order, so that float comparisons agree exactly.
    """
    x = np.asarray(x, dtype=float)
    x = x.reshape(x.shape[0], -1)
    n, d = x.shape
    gmin = [math.inf] * d
    gmax = [-math.inf] * d
    clusters = []  # in creation order; each {"members", "lo", "hi"}
    owner = {}
    window = [0.0] * m
    n_losses = 0
    tau = 0.0
    published = []

    def weights():
        return [1.0 / ((gmax[j] - gmin[j]) * d) if gmax[j] > gmin[j] else 0.0 for j in range(d)]

    def publish(cluster, t_pub, w):
        nonlocal n_losses, tau
        loss = 0.0
        for j in range(d):
            loss += (cluster["hi"][j] - cluster["lo"][j]) * w[j]
        window[n_losses % m] = loss
        n_losses += 1
        count = min(n_losses, m)
        total = 0.0
        for q in range(count):
            total += window[q]
        tau = total / count
        published.append((sorted(cluster["members"]), t_pub))
        for member in cluster["members"]:
            del owner[member]
        clusters.remove(cluster)

    w = [0.0] * d
    for t in range(n):
        r = [float(v) for v in x[t]]
        for j in range(d):
            gmin[j] = min(gmin[j], r[j])
            gmax[j] = max(gmax[j], r[j])
        w = weights()
        # Algorithm 2.
        enlargements, tests = [], []
        for c in clusters:
            e = 0.0
            il_test = 0.0
            for j in range(d):
                new_range = max(c["hi"][j], r[j]) - min(c["lo"][j], r[j])
                il_test += new_range * w[j]
                e += (new_range - (c["hi"][j] - c["lo"][j])) * w[j]
            enlargements.append(e)
            tests.append(il_test)
        e_min = min(enlargements, default=math.inf)
        c_min = [c for c, e in zip(clusters, enlargements, strict=True) if e == e_min]
        c_best = [
            c for c, e, il in zip(clusters, enlargements, tests, strict=True)
            if e == e_min and il < tau
        ]
        if c_best:
            chosen = min(c_best, key=lambda c: len(c["members"]))
        elif len(clusters) < beta:
            chosen = {"members": [], "lo": list(r), "hi": list(r)}
            clusters.append(chosen)
        else:
            chosen = min(c_min, key=lambda c: len(c["members"]))
        # Algorithm 1 line 5.
        chosen["members"].append(t)
        chosen["lo"] = [min(a, b) for a, b in zip(chosen["lo"], r, strict=True)]
        chosen["hi"] = [max(a, b) for a, b in zip(chosen["hi"], r, strict=True)]
        owner[t] = chosen
        # Lines 6-11: the record of time t - delay expires.
        if t - delay in owner:
            publish(owner[t - delay], t, w)
    for a in range(n):  # flush, oldest pending record first
        if a in owner:
            publish(owner[a], n - 1, w)
    return published


def _clusters_from(diag: DocaDiagnostics):
    out = []
    for serial in range(diag.n_noise_draws):
        members = np.flatnonzero(diag.cluster == serial)
        times = np.unique(diag.publication_time[members])
        assert times.size == 1
        out.append((members.tolist(), int(times[0])))
    return out


# ----------------------------------------------------------------- Algorithms 1-2


def test_hand_worked_example():
    # delay 3, beta 2. t=0,1: tau = 0, so no cluster qualifies -> A={0}, B={10}. t=2: beta
    # reached, 1 joins the minimum-enlargement cluster A. t=3: 9 joins B; record 0 expires -> A
    # published (IL 1/10, tau = 0.1). t=4: 5 fits nowhere under tau -> D={5}; record 1 expires
    # -> B published. t=5: range grows to 20; 20 -> E. t=6: 21 joins E (IL 1/21 < 0.1). t=7: 4
    # joins D; record 4 expires -> D={5,4} published at once. Flush: E.
    x = np.array([0.0, 10.0, 1.0, 9.0, 5.0, 20.0, 21.0, 4.0])
    doca, released, diag = _run(x, delay=3, max_clusters=2)
    assert diag.cluster.tolist() == [0, 1, 0, 1, 2, 3, 3, 2]
    assert diag.publication_time.tolist() == [3, 4, 3, 4, 7, 7, 7, 7]
    assert diag.cluster_sizes.tolist() == [2, 2, 2, 2]
    centroids = np.array([0.5, 9.5, 4.5, 20.5])
    noise = diag.cluster_noise[diag.cluster, 0]
    np.testing.assert_allclose(released, centroids[diag.cluster] + noise)
    assert doca.tau == pytest.approx((0.1 + 0.1 + 1 / 21 + 1 / 21) / 4)
    assert diag.max_clusters_used == 2


def test_tau_test_is_strict_as_in_the_paper():
    # Constant stream: every information loss is 0 and tau stays 0, so "IL < tau" never holds:
    # beta clusters are opened, then records go round-robin to the smallest. (The authors' code
    # tests "<=" and would put everything in one cluster.)
    _, released, diag = _run(np.full(10, 5.0), delay=100, max_clusters=3)
    assert diag.cluster.tolist() == [i % 3 for i in range(10)]
    assert diag.cluster_sizes.tolist() == [4, 3, 3]


@pytest.mark.parametrize(
    ("kind", "n", "delay", "beta", "m"),
    [
        ("uniform", 3000, 50, 5, 7),
        ("integers", 3000, 30, 4, 5),  # many ties in enlargement and size
        ("bivariate", 2000, 40, 6, 10),
        ("skewed", 4000, 100, 10, 20),
        ("uniform", 500, 1, 1, 1),
        ("uniform", 500, 1, 3, 2),
        ("integers", 600, 200, 1, 3),
    ],
)
def test_kernel_matches_a_transcription_of_algorithms_1_and_2(kind, n, delay, beta, m):
    rng = np.random.default_rng(n + delay + beta)
    if kind == "uniform":
        x = rng.uniform(0, 100, n)
    elif kind == "integers":
        x = rng.integers(0, 20, n).astype(float)
    elif kind == "bivariate":
        x = np.column_stack([rng.gamma(2.0, 10.0, n), rng.uniform(-5, 5, n)])
    else:
        x = simulate_skewed_stream(n, seed=5)
    _, released, diag = _run(x, delay=delay, max_clusters=beta, tau_window=m)
    assert _clusters_from(diag) == _reference(x, delay, beta, m)


def test_every_record_is_published_once_within_delay_arrivals():
    x = simulate_skewed_stream(50_000, seed=11)
    _, released, diag = _run(x, sensitivity=99_618.0, delay=1000, max_clusters=50)
    lag = diag.publication_time - np.arange(x.size)
    assert lag.min() >= 0
    assert lag.max() <= 1000
    assert lag.max() == 1000  # the bound is reached: records do wait up to the delay
    assert diag.cluster_sizes.sum() == x.size
    assert np.bincount(diag.cluster).tolist() == diag.cluster_sizes.tolist()


@pytest.mark.parametrize("beta", [1, 3, 50])
def test_never_more_than_beta_clusters_in_memory(beta):
    x = simulate_skewed_stream(20_000, seed=12)
    doca, _, diag = _run(x, delay=500, max_clusters=beta)
    assert diag.max_clusters_used == beta  # reached, never exceeded
    # and while streaming, chunk by chunk
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        doca = Doca(1.0, 100_000.0, delay=500, max_clusters=beta, seed=1)
    seen = []
    for _ in doca.process(x, chunk_size=997):
        seen.append(doca.n_clusters)
        assert doca.n_pending <= 500
    assert max(seen) <= beta
    assert doca.max_clusters_used == beta


def test_one_noise_draw_per_published_cluster_shared_by_its_members():
    x = simulate_skewed_stream(30_000, seed=13)
    doca, released, diag = _run(x, sensitivity=99_618.0, delay=300, max_clusters=20)
    k = diag.cluster_sizes.size
    assert diag.n_noise_draws == k == doca.n_noise_draws == np.unique(diag.cluster).size
    assert diag.cluster_noise.shape == (k, 1)
    # every member carries the same released value: centroid + the cluster's single draw
    centroids = np.bincount(diag.cluster, weights=x) / diag.cluster_sizes
    noise = diag.cluster_noise[diag.cluster, 0]
    np.testing.assert_allclose(released, centroids[diag.cluster] + noise, rtol=0, atol=1e-6)
    for serial in range(0, k, max(1, k // 50)):
        assert np.unique(released[diag.cluster == serial]).size == 1
    # distinct clusters get distinct draws
    assert np.unique(diag.cluster_noise).size == k


def test_noise_is_laplace_with_scale_delta_f_over_cluster_size_epsilon():
    x = simulate_skewed_stream(200_000, seed=14)
    sensitivity, epsilon = 99_618.0, 0.7
    _, _, diag = _run(x, epsilon=epsilon, sensitivity=sensitivity, seed=15)
    assert diag.n_noise_draws > 5_000
    standardised = diag.cluster_noise[:, 0] * diag.cluster_sizes * epsilon / sensitivity
    assert stats.kstest(standardised, stats.laplace().cdf).pvalue > 0.01
    # the test has power: ignoring the cluster size (scale Δf/ε) is rejected
    unscaled = diag.cluster_noise[:, 0] * epsilon / sensitivity
    assert stats.kstest(unscaled, stats.laplace().cdf).pvalue < 1e-6


def test_bivariate_noise_per_attribute_with_its_own_sensitivity():
    rng = np.random.default_rng(16)
    xy = np.column_stack([rng.gamma(2.0, 1_000.0, 100_000), rng.uniform(0.0, 10.0, 100_000)])
    sens = np.array([20_000.0, 15.0])
    _, released, diag = _run(xy, epsilon=1.0, sensitivity=sens, delay=200, max_clusters=10)
    assert released.shape == xy.shape
    assert diag.cluster_noise.shape == (diag.n_noise_draws, 2)
    for j in range(2):  # budget split over d = 2 attributes: scale 2·Δf_j/(|C|·ε)
        z = diag.cluster_noise[:, j] * diag.cluster_sizes / (2 * sens[j])
        assert stats.kstest(z, stats.laplace().cdf).pvalue > 0.01
    # the two attributes' draws are independent
    assert abs(stats.spearmanr(diag.cluster_noise[:, 0], diag.cluster_noise[:, 1])[0]) < 0.05


def test_mse_reduction_at_the_paper_parameters():
    x = simulate_skewed_stream(200_000, seed=17)
    sensitivity = 1.5 * (x.max() - x.min())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        released = Doca(1.0, sensitivity, delay=1000, max_clusters=50, tau_window=100,
                        seed=18).fit_transform(x)
        naive = naive_laplace(x, 1.0, sensitivity, seed=19)
    reduction = 1.0 - mse(x, released) / mse(x, naive)
    assert reduction >= 0.95
    assert mse(x, naive) == pytest.approx(2 * sensitivity**2, rel=0.02)
    assert histogram_intersection(x, released) > 0.75
    assert histogram_intersection(x, naive) < 0.3


# ----------------------------------------------------------------- seeds


def test_seed_warns_and_reproduces():
    x = simulate_skewed_stream(5_000, seed=20)
    with pytest.warns(PrivacyLeakWarning, match="seed=None"):
        a = Doca(1.0, 100_000.0, delay=50, max_clusters=5, seed=7).fit_transform(x)
    with pytest.warns(PrivacyLeakWarning):
        b = Doca(1.0, 100_000.0, delay=50, max_clusters=5, seed=7).fit_transform(x)
    with pytest.warns(PrivacyLeakWarning):
        c = Doca(1.0, 100_000.0, delay=50, max_clusters=5, seed=8).fit_transform(x)
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, c)


def test_no_seed_uses_fresh_entropy_without_warning():
    x = simulate_skewed_stream(5_000, seed=21)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        a = Doca(1.0, bounds=(0.0, 100_000.0), delay=50, max_clusters=5).fit_transform(x)
        b = Doca(1.0, bounds=(0.0, 100_000.0), delay=50, max_clusters=5).fit_transform(x)
    assert np.all(a != b)


def test_diagnostics_warn():
    with pytest.warns(PrivacyLeakWarning, match="never release"):
        Doca(1.0, 1.0).fit_transform([1.0, 2.0], return_diagnostics=True)


# ----------------------------------------------------------------- streaming API


def _seeded(**kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return Doca(**({"epsilon": 1.0, "sensitivity": 100_000.0, "seed": 3} | kwargs))


def test_process_and_flush_match_fit_transform():
    x = simulate_skewed_stream(10_000, seed=22)
    expected = _seeded(delay=100, max_clusters=8).fit_transform(x)
    for chunk_size in (1, 37, 4096, 100_000):
        doca = _seeded(delay=100, max_clusters=8)
        pairs = list(doca.process(x.tolist(), chunk_size=chunk_size))
        assert doca.n_pending > 0
        pairs += doca.flush()
        assert doca.n_pending == 0
        index = np.array([i for i, _ in pairs])
        assert sorted(index.tolist()) == list(range(x.size))
        assert all(isinstance(v, float) for _, v in pairs[:10])
        got = np.empty(x.size)
        got[index] = [v for _, v in pairs]
        np.testing.assert_array_equal(got, expected)


def test_process_is_lazy_on_an_unbounded_stream():
    doca = Doca(1.0, bounds=(-1.0, 1.0), delay=10, max_clusters=3)
    stream = (math.sin(t) for t in itertools.count())
    first = list(itertools.islice(doca.process(stream, chunk_size=16), 1000))
    assert len(first) == 1000
    assert doca.n_records < 1100
    assert doca.n_pending <= 10


def test_process_tuples_yields_arrays_and_flush_option():
    rng = np.random.default_rng(23)
    records = [(float(a), float(b)) for a, b in rng.uniform(0, 10, (500, 2))]
    doca = _seeded(sensitivity=[15.0, 15.0], delay=20, max_clusters=4)
    pairs = list(doca.process(iter(records), chunk_size=64, flush=True))
    assert len(pairs) == 500 and doca.n_pending == 0
    assert all(isinstance(v, np.ndarray) and v.shape == (2,) for _, v in pairs)
    expected = _seeded(sensitivity=[15.0, 15.0], delay=20, max_clusters=4).fit_transform(
        np.array(records))
    got = np.empty((500, 2))
    for i, v in pairs:
        got[i] = v
    np.testing.assert_array_equal(got, expected)


def test_stream_continues_across_calls_and_after_flush():
    doca = _seeded(delay=5, max_clusters=2)
    first = list(doca.process([1.0, 2.0, 3.0]))
    first += doca.flush()
    second = list(doca.process([4.0, 5.0, 6.0], flush=True))
    assert sorted(i for i, _ in first) == [0, 1, 2]
    assert sorted(i for i, _ in second) == [3, 4, 5]


def test_fit_transform_refuses_pending_stream_and_keeps_shape():
    doca = _seeded(delay=50)
    list(doca.process([1.0, 2.0, 3.0]))
    with pytest.raises(InputError, match="call flush"):
        doca.fit_transform([1.0, 2.0])
    doca.flush()
    assert doca.fit_transform(np.ones((7, 1))).shape == (7, 1)
    assert doca.fit_transform(np.array([])).shape == (0,)


# ----------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"epsilon": 0.0}, InputError, "epsilon must be a finite number > 0"),
        ({"epsilon": -1.0}, InputError, "epsilon must be a finite number > 0"),
        ({"epsilon": math.nan}, InputError, "epsilon must be a finite number > 0"),
        ({"epsilon": math.inf}, InputError, "epsilon must be a finite number > 0"),
        ({"epsilon": "one"}, TypeError, "epsilon must be a real number"),
        ({"epsilon": "1.0"}, TypeError, "epsilon must be a real number"),
        ({"epsilon": True}, TypeError, "epsilon must be a real number"),
        ({"sensitivity": 0.0}, InputError, "sensitivity must be finite and > 0"),
        ({"sensitivity": -5.0}, InputError, "sensitivity must be finite and > 0"),
        ({"sensitivity": [1.0, 0.0]}, InputError, "sensitivity must be finite and > 0"),
        ({"sensitivity": math.nan}, InputError, "sensitivity must be finite and > 0"),
        ({"sensitivity": [[1.0]]}, InputError, "sensitivity must be a number or a 1-D"),
        ({"delay": 0}, InputError, r"delay \(the delay constraint δ, in arrivals\) must be an "
                                   "int >= 1"),
        ({"delay": 2.5}, TypeError, r"delay \(.*\) must be an int, got float"),
        ({"delay": True}, TypeError, r"delay \(.*\) must be an int, got bool"),
        ({"max_clusters": 0}, InputError, r"max_clusters \(.*\) must be an int >= 1"),
        ({"tau_window": 0}, InputError, r"tau_window \(.*\) must be an int >= 1"),
    ],
)
def test_parameters_are_validated(kwargs, error, match):
    params = {"epsilon": 1.0, "sensitivity": 1.0} | kwargs
    with pytest.raises(error, match=match):
        Doca(**params)


def test_huge_delay_is_refused_before_allocating():
    from geosynth.errors import MemoryLimitError

    with pytest.raises(MemoryLimitError, match="lower delay"):
        Doca(1.0, 1.0, delay=10**12)


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_records_are_refused(bad):
    x = np.arange(10.0)
    x[6] = bad
    with pytest.raises(InputError, match="NaN or infinite values at record index 6"):
        Doca(1.0, 10.0).fit_transform(x)
    doca = Doca(1.0, 10.0, delay=3)
    stream = doca.process([0.0, 1.0, 2.0, 3.0, bad, 5.0], chunk_size=2)
    with pytest.raises(InputError, match="record index 4"):
        list(stream)
    assert doca.n_records == 4  # the bad chunk was not processed


@pytest.mark.parametrize(
    ("data", "sensitivity", "match"),
    [
        (np.zeros((4, 2, 2)), 1.0, "must be 1-D .* or 2-D"),
        (np.zeros((4, 3)), [1.0, 1.0], "d=3 attributes but sensitivity has 2"),
        (np.zeros(4), [1.0, 1.0], "d=1 attributes but sensitivity has 2"),
        ([(1.0, 2.0), (1.0,)], 1.0, "must hold numbers"),
        (["a", "b"], 1.0, "must hold numbers"),
    ],
)
def test_wrong_dimensions_are_refused(data, sensitivity, match):
    with pytest.raises(InputError, match=match):
        Doca(1.0, sensitivity).fit_transform(data)


def test_records_must_keep_their_dimension_mid_stream():
    doca = Doca(1.0, 10.0, delay=5)
    list(doca.process([(1.0, 2.0), (3.0, 4.0)]))
    with pytest.raises(InputError, match="stream started with d=2"):
        list(doca.process([(1.0, 2.0, 3.0)]))
    with pytest.raises(InputError, match="must be 1-D"):
        list(doca.process(np.zeros((2, 2, 2))))
    with pytest.raises(InputError, match=r"chunk_size \(records per kernel call\) must be an int"):
        list(doca.process([1.0], chunk_size=0))


# ----------------------------------------------------------------- evaluation helpers


def test_simulated_stream_has_the_papers_shape():
    x = simulate_skewed_stream(2_000_000, seed=24)
    assert x.min() == 1.0 and x.max() == 66_413.0
    assert np.all(x == np.rint(x))
    assert stats.skew(x) == pytest.approx(0.7365, abs=0.01)
    np.testing.assert_array_equal(x[:100], simulate_skewed_stream(2_000_000, seed=24)[:100])
    assert not np.array_equal(x[:100], simulate_skewed_stream(2_000_000, seed=25)[:100])


def test_mse_and_histogram_intersection_known_values():
    assert mse([0.0, 1.0, 2.0], [1.0, 1.0, 0.0]) == pytest.approx(5 / 3)
    a = np.array([0.0, 0.0, 1.0, 1.0])
    assert histogram_intersection(a, a, bins=2) == 1.0
    assert histogram_intersection(a, np.array([0.0, 1.0, 1.0, 1.0]), bins=2) == 0.75
    # releases outside the original range count as non-overlapping
    assert histogram_intersection(a, np.array([0.0, 5.0, 5.0, 1.0]), bins=2) == 0.5
    assert histogram_intersection(a, a + 10.0, bins=2) == 0.0
    with pytest.raises(InputError, match="shape"):
        mse([1.0, 2.0], [1.0])
    with pytest.raises(InputError, match="1-D"):
        histogram_intersection(np.zeros((2, 2)), np.zeros(4))


def test_naive_laplace_scale_and_warning():
    # With bounds, the seed's warning is the only one (without, the bounds' warning alone
    # satisfied an unmatched pytest.warns).
    x = np.zeros(20_000)
    with pytest.warns(PrivacyLeakWarning) as caught:
        noisy = naive_laplace(x, 2.0, seed=26, bounds=(-5.0, 5.0))
    assert [str(w.message) for w in caught] == [
        "naive_laplace(seed=...) makes the noise predictable; tests only"]
    assert stats.kstest(noisy / 5.0, stats.laplace().cdf).pvalue > 0.01


def test_beta_shape_for_skewness_matches_scipy_and_refuses_left_skew():
    b = beta_shape_for_skewness(2.0, 0.7365)
    assert float(stats.beta(2.0, b).stats(moments="s")) == pytest.approx(0.7365, abs=1e-9)
    with pytest.raises(InputError, match="skewness must be a finite number > 0"):
        beta_shape_for_skewness(2.0, -0.5)


# ----------------------------------------------------------------- the public domain


@pytest.mark.parametrize("skewness", [1e-300, 1e-13])
def test_beta_shape_for_a_tiny_skewness(skewness):
    # The bracket started at b = a·(1 + 1e-12), whose skewness is already ≈ 3.7e-13 for a = 2:
    # a smaller target raised scipy's raw "f(a) and f(b) must have different signs". The root
    # lies within brentq's xtol (2e-12) of the answer and d(skewness)/db at b = a is
    # 2√(2a + 1)/((2a + 2)·a) = √5/6 < 0.38, so the skewness is off by less than 1e-12.
    b = beta_shape_for_skewness(2.0, skewness)
    assert b >= 2.0
    assert float(stats.beta(2.0, b).stats(moments="s")) == pytest.approx(skewness, abs=1e-12)
    assert math.isfinite(b)


def test_a_record_outside_the_sensitivity_is_refused_before_it_is_processed():
    # 999 values in [0, 1] and a secret 123,456 at Δf = 1: the secret came out as ~41,152 in a
    # cluster of three (3 × 41,152 ≈ the secret)
    x = np.append(np.random.default_rng(30).uniform(0.0, 1.0, 999), 123_456.0)
    with pytest.raises(InputError, match="record index 999 widens the range of attribute 0"):
        Doca(1.0, 1.0).fit_transform(x)
    doca = Doca(1.0, 1.0, delay=10)
    with pytest.raises(InputError, match="record index 999 .* pass bounds=") as caught:
        list(doca.process(x, chunk_size=100))
    assert "123" not in str(caught.value)  # the message names the record, not its value
    assert doca.n_records == 900  # the chunk holding it was not processed


def test_bounds_clamp_the_records_before_they_join_a_cluster():
    x = np.append(np.random.default_rng(31).uniform(0.0, 1.0, 999), 123_456.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        doca = Doca(1.0, bounds=(0.0, 1.0), delay=50, max_clusters=5, seed=32)
        released, diag = doca.fit_transform(x, return_diagnostics=True)
    assert doca.sensitivity == 1.0
    centroids = np.bincount(diag.cluster, weights=np.clip(x, 0.0, 1.0)) / diag.cluster_sizes
    expected = centroids[diag.cluster] + diag.cluster_noise[diag.cluster, 0]
    np.testing.assert_allclose(released, expected, rtol=0, atol=1e-12)
    assert np.abs(released).max() < 100  # Laplace noise of scale ≤ 1: the secret is gone


@pytest.mark.parametrize("secret", [1e101, 1e308, -1e200])
def test_bounds_clamp_values_beyond_the_continuous_limit_too(secret):
    # with public bounds a value past ±1e100 is out of the domain like any other: clamped
    x = [0.2, secret, 0.7, 0.4]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        released = Doca(1.0, bounds=(0.0, 1.0), delay=2, seed=33).fit_transform(x)
        clamped = Doca(1.0, bounds=(0.0, 1.0), delay=2, seed=33).fit_transform(
            np.clip(x, 0.0, 1.0))
        streamed = dict(Doca(1.0, bounds=(0.0, 1.0), delay=2, seed=33).process(x, flush=True))
    np.testing.assert_array_equal(released, clamped)
    np.testing.assert_array_equal([streamed[i] for i in range(4)], clamped)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"sensitivity": None}, "pass bounds=.lo, hi."),
        ({"bounds": (1.0, 0.0)}, "lo < hi"),
        ({"bounds": (0.0, math.nan)}, "finite numbers"),
        ({"bounds": (0.0, 1e101)}, "within ±1e"),
        ({"bounds": (0.0, 1.0, 2.0)}, "a pair .lo, hi."),
        ({"bounds": ("0", "1")}, "a pair .lo, hi."),
        ({"bounds": (0.0, 10.0), "sensitivity": 5.0}, "below the width of bounds"),
        ({"sensitivity": "2"}, "sensitivity must be a number"),
        ({"bounds": ([0, 0], [1, 1]), "sensitivity": [1, 1, 1]}, "sensitivity has 3 values but"),
    ],
)
def test_bounds_and_sensitivity_are_validated(kwargs, match):
    with pytest.raises(InputError, match=match):
        Doca(**({"epsilon": 1.0, "sensitivity": None, "bounds": (0.0, 1.0)} | kwargs
                if "bounds" in kwargs else {"epsilon": 1.0} | kwargs))


def test_bounds_per_attribute_must_match_the_records():
    with pytest.raises(InputError, match="bounds has 2 per side"):
        Doca(1.0, bounds=([0.0, 0.0], [1.0, 1.0])).fit_transform(np.zeros((4, 3)))


def _eastings_northings(n=200, seed=34):
    rng = np.random.default_rng(seed)
    return np.c_[rng.uniform(500e3, 510e3, n), rng.uniform(5.0e6, 5.01e6, n)]


@pytest.mark.parametrize(
    "release",
    [
        lambda b, x: Doca(1.0, bounds=b, delay=20, seed=35).fit_transform(x),
        lambda b, x: list(Doca(1.0, bounds=b, delay=20, seed=35).process(x, flush=True)),
        lambda b, x: naive_laplace(x, 1.0, bounds=b, seed=35),
    ],
    ids=["fit_transform", "process", "naive_laplace"],
)
def test_bounds_given_as_one_pair_per_attribute_are_pointed_out(release):
    # [[x_lo, x_hi], [y_lo, y_hi]] reads as lo=(x_lo, x_hi), hi=(y_lo, y_hi): for eastings below
    # northings a valid domain holding every record, millions of metres wide
    x = _eastings_northings()
    meant = ([499e3, 4.99e6], [511e3, 5.02e6])
    transposed = [[499e3, 511e3], [4.99e6, 5.02e6]]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        release(transposed, x)
        release(meant, x)
    said = [str(w.message) for w in caught if issubclass(w.category, DataWarning)]
    assert len(said) == 1
    assert "bounds=([499000.0, 4990000.0], [511000.0, 5020000.0])" in said[0]
    assert all(w.filename == __file__ for w in caught if issubclass(w.category, DataWarning))


def test_a_wide_domain_of_two_attributes_is_not_mistaken_for_one_pair_each():
    # lo=(0, 1), hi=(1000, 1001) as meant: records filling it are not warned about; records
    # all in the other reading's box ([0, 1] x [1000, 1001], a millionth of the area) are.
    rng = np.random.default_rng(36)
    bounds = ([0.0, 1.0], [1000.0, 1001.0])
    filling = rng.uniform([0.0, 1.0], [1000.0, 1001.0], size=(200, 2))
    cornered = rng.uniform([0.0, 1000.0], [1.0, 1001.0], size=(200, 2))
    said = {}
    for name, x in (("filling", filling), ("cornered", cornered)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            released = Doca(1.0, bounds=bounds, delay=20, seed=37).fit_transform(x)
        assert released.shape == x.shape
        said[name] = [str(w.message) for w in caught if issubclass(w.category, DataWarning)]
    assert said["filling"] == []
    assert len(said["cornered"]) == 1 and "bounds=([0.0, 1000.0], [1.0, 1001.0])" in \
        said["cornered"][0]


@pytest.mark.parametrize(
    "data", ["1234", {5: "x"}, ["1e3", "7"], [1 + 2j, 3.0], [b"1", b"2"], [1.0, "2"]]
)
def test_text_mappings_and_complex_numbers_are_not_records(data):
    with pytest.raises(InputError, match="must hold numbers"):
        Doca(1.0, 1e6).fit_transform(data)
    with pytest.raises(InputError, match="must hold numbers"):
        list(Doca(1.0, 1e6).process(data))


def test_values_whose_sums_overflow_and_noise_scales_that_overflow_are_refused():
    with pytest.raises(InputError, match=r"beyond ±1e\+100 at record index 1"):
        Doca(1.0, 1e300).fit_transform([0.0, 1e150, 5.0])
    with pytest.raises(InputError, match="noise scale .* overflows; raise epsilon"):
        Doca(1e-320, 1.0).fit_transform([0.0, 1.0])


def test_the_state_estimate_counts_attributes_and_the_tau_window(monkeypatch):
    from geosynth.errors import MemoryLimitError
    from geosynth.sdc import doca as module

    with pytest.raises(MemoryLimitError, match="tau_window=200000000"):
        Doca(1.0, 1.0, tau_window=200_000_000)
    monkeypatch.setattr(module, "MAX_STATE_BYTES", 2**20)
    doca = Doca(1.0, 1.0, delay=10, max_clusters=50)  # d = 1: 8 KiB
    with pytest.raises(MemoryLimitError, match="d=5000 attributes"):
        doca.fit_transform(np.zeros((3, 5000)))


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda: beta_shape_for_skewness(2.0, math.nan), InputError, "skewness must be a finite"),
        (lambda: beta_shape_for_skewness(2.0, 1e9), InputError, "beyond the .* lower it"),
        (lambda: beta_shape_for_skewness(-1.0, 0.5), InputError, "a must be a finite number"),
        (lambda: simulate_skewed_stream(10, low="0"), TypeError, "low must be a real number"),
        (lambda: histogram_intersection([1.0, 2.0], [1.0], bins=0), InputError, "bins"),
        (lambda: histogram_intersection([1.0, 2.0], [1.0], bins=True), TypeError, "bins"),
        (lambda: mse([1.0, math.nan], [1.0, 2.0]), InputError, "NaN or infinite"),
    ],
)
def test_evaluation_helpers_name_the_bad_parameter(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_fractions_and_decimals_are_numbers():
    from decimal import Decimal
    from fractions import Fraction

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        doca = Doca(1.0, Fraction(21, 2), seed=1)
        released = doca.fit_transform([Fraction(1, 2), Decimal("2.5"), 3])
    assert doca.sensitivity == 10.5 and released.shape == (3,)


# ----------------------------------------------------------------------- leaks and validation


@pytest.mark.parametrize(
    "duplicate", [copy.deepcopy, lambda d: pickle.loads(pickle.dumps(d))], ids=["copy", "pickle"]
)
def test_copies_of_an_unseeded_doca_draw_fresh_noise(duplicate):
    # Two objects drawing the same noise for different data: the differences of their releases
    # are the exact differences of the centroids (here the secret change of record 2)
    x = np.array([10.0, 50.0, 90.0, 30.0, 70.0])
    neighbour = x.copy()
    neighbour[2] = 77.7
    doca = Doca(1.0, bounds=(0.0, 100.0), delay=2)
    twin = duplicate(doca)
    a, b = doca.fit_transform(x), twin.fit_transform(neighbour)
    # Shared noise makes the differences equal to within rounding; isclose's default rtol
    # (windows 1e-4 wide at 12.3) was hit by fresh noise about once in 300,000 runs.
    exact = {"rtol": 0.0, "atol": 1e-9}
    assert not np.any(np.isclose(a - b, 0.0, **exact)
                      | np.isclose(a - b, (x - neighbour) / 2, **exact)
                      | np.isclose(a - b, x - neighbour, **exact))
    c, d = doca.fit_transform(x), twin.fit_transform(x)
    assert np.all(c != d)


def test_copies_of_a_seeded_doca_keep_its_stream():
    doca = _seeded(delay=5)
    x = simulate_skewed_stream(200, seed=40)
    for twin in (copy.deepcopy(doca), pickle.loads(pickle.dumps(doca))):
        np.testing.assert_array_equal(twin.fit_transform(x), _seeded(delay=5).fit_transform(x))


def test_masked_entries_are_refused_not_read():
    x = np.ma.masked_array([1.0, 2.0, 1e6, 3.0], mask=[False, False, True, False])
    with pytest.raises(InputError, match="data is a masked array with masked entries"):
        Doca(1.0, bounds=(0.0, 10.0)).fit_transform(x)
    doca = Doca(1.0, bounds=(0.0, 10.0), delay=2)
    with pytest.raises(InputError, match="stream is a masked array"):
        list(doca.process(x, chunk_size=1))
    assert doca.n_records == 0
    with pytest.raises(InputError, match="data is a masked array"):
        naive_laplace(x, 1.0, 10.0)


@pytest.mark.parametrize(
    ("kwargs", "data", "match"),
    [
        ({"bounds": (0.0, 1.0)}, np.array([True, False, True]), "not text, booleans"),
        ({"sensitivity": np.True_}, [0.5, 0.2], "sensitivity must be a number"),
        ({"sensitivity": [True]}, [0.5, 0.2], "sensitivity must be a number"),
        ({"bounds": (False, True)}, [0.5, 0.2], "bounds must be a pair"),
    ],
)
def test_booleans_are_not_numbers(kwargs, data, match):
    with pytest.raises(InputError, match=match):
        Doca(1.0, **kwargs).fit_transform(data)


@pytest.mark.parametrize("data", [np.zeros((5, 0)), [[]]])
def test_records_need_at_least_one_attribute(data):
    with pytest.raises(InputError, match="records of no attribute"):
        Doca(1.0, 1.0).fit_transform(data)
    with pytest.raises(InputError, match="records of no attribute"):
        list(Doca(1.0, 1.0).process(np.asarray(data)))


def test_process_reads_a_data_frame_by_rows_and_refuses_repeated_columns():
    import pandas as pd

    frame = pd.DataFrame({0: [5.0, 6.0, 7.0], 1: [1.0, 2.0, 3.0]})  # labels that are numbers
    pairs = dict(_seeded(sensitivity=[10.0, 10.0], delay=2).process(frame, flush=True))
    assert sorted(pairs) == [0, 1, 2]  # three rows, not the two column labels
    expected = _seeded(sensitivity=[10.0, 10.0], delay=2).fit_transform(frame.to_numpy())
    np.testing.assert_array_equal(np.array([pairs[i] for i in range(3)]), expected)
    twice = pd.DataFrame([[1.0, 2.0], [3.0, 4.0]], columns=["x", "x"])
    with pytest.raises(InputError, match=r"stream has several columns named \['x'\]"):
        list(Doca(1.0, 10.0).process(twice))
    with pytest.raises(InputError, match=r"data has several columns named \['x'\]"):
        Doca(1.0, 10.0).fit_transform(twice)


def test_columns_named_as_identifiers_are_refused_everywhere():
    # A patient_id column was noised and published with the rest, took its share of epsilon
    # and clustered records by their IDs. The rule is geosynth's for identifiers' names.
    import pandas as pd

    rng = np.random.default_rng(43)
    frame = pd.DataFrame({"age": rng.normal(40.0, 5.0, 30), "patient_id": np.arange(30.0)})
    said = r"^{} has a column named as an identifier \('patient_id'\).*drop it"
    with pytest.raises(InputError, match=said.format("stream")):
        list(Doca(1.0, bounds=([0.0, 0.0], [100.0, 100.0])).process(frame, flush=True))
    with pytest.raises(InputError, match=said.format("data")):
        Doca(1.0, bounds=([0.0, 0.0], [100.0, 100.0])).fit_transform(frame)
    with pytest.raises(InputError, match=said.format("data")):
        naive_laplace(frame, 1.0, bounds=([0.0, 0.0], [100.0, 100.0]))
    with pytest.raises(InputError, match=r"^data is a series named as an identifier"):
        Doca(1.0, bounds=(0.0, 100.0)).fit_transform(frame["patient_id"])
    with pytest.raises(InputError, match=r"^stream is a series named as an identifier"):
        list(Doca(1.0, bounds=(0.0, 100.0)).process(frame["patient_id"], flush=True))
    released = Doca(1.0, bounds=(0.0, 100.0)).fit_transform(frame["age"])  # an attribute
    assert released.shape == (30,)


def test_an_iterator_of_records_is_read_as_its_list():
    # fit_transform(iter(x)) was refused as "data must hold numbers ... not text, booleans".
    x = np.random.default_rng(44).uniform(0.0, 100.0, 40)
    np.testing.assert_array_equal(_seeded(sensitivity=100.0).fit_transform(iter(x)),
                                  _seeded(sensitivity=100.0).fit_transform(x))
    with pytest.warns(PrivacyLeakWarning, match="predictable"):  # the seed, for the test
        assert naive_laplace((v for v in x), 1.0, bounds=(0.0, 100.0), seed=1).shape == (40,)


def test_naive_laplace_refuses_records_outside_the_sensitivity():
    x = np.append(np.random.default_rng(41).uniform(0.0, 1.0, 9), 123_456.0)
    with pytest.raises(InputError, match="record index 9 widens the range") as caught:
        naive_laplace(x, 1.0, 1.0)
    assert "123" not in str(caught.value)


def test_noise_below_the_float_step_of_the_values_is_refused():
    # timestamps in ns (float step 256) in a public window of 1 µs: noise of scale ≤ 1000 rounded
    # releases back to the exact timestamps (95 of 1000 with delay=1 before this check)
    t = 1.7e18 + np.random.default_rng(42).integers(0, 1000, 1000).astype(float)
    with pytest.raises(InputError, match=r"attribute 0 \(bounds up to 1.7e\+18\): .* below "
                                         r"2\*\*20 float.*bounds closer to 0"):
        Doca(1.0, bounds=(1.7e18, 1.7e18 + 1e3), delay=1, max_clusters=1000).fit_transform(t)
    with pytest.raises(InputError, match="record index 0, attribute 0: .* below 2\\*\\*20 float"):
        Doca(1.0, 1024.0, delay=1, max_clusters=1000).fit_transform(t)  # no bounds: the records
    with pytest.raises(InputError, match="lower epsilon"):  # released the inputs exactly
        Doca(1e20, bounds=(0.0, 1.0), delay=1).fit_transform([0.123456789, 0.9876])
    # The boundary, derived: delay=1 and Δf=1 give the smallest scale 1/(2ε); the float step of
    # 1.0 is 2**-52, so ε = 2**31 puts the scale at exactly 2**20 steps (accepted) and any
    # larger ε below them (refused). With public bounds (0, 1) the bound 1 decides, before any
    # record; without, the record that reaches 1.0, not those before it.
    Doca(2.0**31, bounds=(0.0, 1.0), delay=1).fit_transform([0.25, 1.0])
    Doca(2.0**31, 1.0, delay=1).fit_transform([0.25, 1.0])
    bounded = Doca(2.0**31 * 1.01, bounds=(0.0, 1.0), delay=1)
    with pytest.raises(InputError, match=r"attribute 0 \(bounds up to 1\)"):
        list(bounded.process([0.25, 0.3], chunk_size=2))
    assert bounded.n_records == 0
    doca = Doca(2.0**31 * 1.01, 1.0, delay=1)
    with pytest.raises(InputError, match="record index 2, attribute 0"):
        list(doca.process([0.25, 0.3, 1.0], chunk_size=2))
    assert doca.n_records == 2


def test_fit_transform_refuses_the_whole_array_before_processing_any_of_it():
    x = np.append(np.random.default_rng(43).uniform(0.0, 1.0, 70_000), 5.0)  # past one chunk
    doca = Doca(1.0, 1.0, delay=10)
    with pytest.raises(InputError, match="record index 70000 widens"):
        doca.fit_transform(x)
    assert doca.n_records == doca.n_pending == doca.n_noise_draws == 0
    assert doca.fit_transform(x[:5]).shape == (5,)  # no flush() needed


def test_a_bad_seed_is_refused_without_the_seed_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        with pytest.raises(TypeError, match="seed must be None, an int"):
            Doca(1.0, bounds=(0.0, 1.0), seed="42")


def test_naive_laplace_refuses_noise_that_rounds_away_or_overflows():
    # A huge epsilon (or values far from 0) returned the records themselves, bit for bit
    # (naive_laplace([0.25, 0.5, 0.75], 1e20, 1.0) == the input); a tiny one returned -inf.
    x = np.array([0.25, 0.5, 0.75])
    with pytest.raises(InputError, match="record index 0, attribute 0: .* below 2\\*\\*20 "
                                         "float steps.*lower epsilon") as caught:
        naive_laplace(x, 1e20, 1.0)
    assert "0.25" not in str(caught.value)
    t = 1.7e18 + np.arange(3.0) * 256
    with pytest.raises(InputError, match="record index 0, attribute 0: .*public offset"):
        naive_laplace(t, 1.0, 1024.0)
    with pytest.raises(InputError, match="overflows; raise epsilon"):
        naive_laplace(x, 5e-324, 1.0)
    # The boundary, as for Doca: Δf = 1 and the float step 2**-52 of 1.0 accept ε = 2**32.
    assert not np.any(naive_laplace([0.25, 1.0], 2.0**32, 1.0) == [0.25, 1.0])
    with pytest.raises(InputError, match="record index 1, attribute 0"):
        naive_laplace([0.25, 1.0], 2.0**32 * 1.01, 1.0)


# ----------------------------------------------------------------------- second review


def test_a_process_loop_stopped_early_loses_no_release():
    # The kernel takes a whole chunk's published clusters out of memory; a consumer that broke
    # out of the loop never got the rest of them, and neither flush() nor process() did either
    # (65 of 100 records came out, none pending).
    x = np.random.default_rng(50).uniform(size=100)
    doca = Doca(1.0, bounds=(0.0, 1.0), delay=5, max_clusters=2)
    got = []
    for index, _ in doca.process(x[:50], chunk_size=50):
        got.append(index)
        if len(got) == 10:
            break
    with pytest.raises(InputError, match="call flush"):  # undelivered releases are kept
        doca.fit_transform(x)
    got += [i for i, _ in doca.process(x[50:], chunk_size=50)]
    got += [i for i, _ in doca.flush()]
    assert sorted(got) == list(range(100))


def test_a_shallow_copy_is_independent_of_the_original():
    # copy.copy shared the cluster arrays: records fed to the copy moved the original's stream
    doca = Doca(1.0, bounds=(0.0, 1.0), delay=5)
    list(doca.process([0.1, 0.2]))
    twin = copy.copy(doca)
    list(twin.process([0.3]))
    assert (doca.n_records, doca.n_pending) == (2, 2)
    assert (twin.n_records, twin.n_pending) == (3, 3)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda d: d.fit_transform([0.5], return_diagnostics="no"), "return_diagnostics must be"),
        (lambda d: list(d.process([0.5], flush="no")), "flush must be True or False"),
        (lambda d: list(d.process(0.123)), "stream must be an iterable of records .* got float"),
        (lambda d: list(d.process(np.float64(0.123))), "stream must be an iterable"),
        (lambda d: list(d.process(None)), "stream must be an iterable"),
    ],
)
def test_flags_and_a_single_number_as_stream_are_refused_by_type(call, match):
    # "no" is truthy: it returned the diagnostics (the exact centroids) or flushed; a number
    # raised Python's "'float' object is not iterable"
    from geosynth.errors import InputTypeError

    with pytest.raises(InputTypeError, match=match) as caught:
        call(Doca(1.0, bounds=(0.0, 1.0), delay=5))
    assert "0.123" not in str(caught.value)  # a single number may be a record


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: Doca(1.0, 1.0).fit_transform([0.5, 10**400]), "data holds an int beyond"),
        (lambda: list(Doca(1.0, bounds=(0, 1)).process([0.5, -(10**400)])), "stream holds an"),
        (lambda: naive_laplace([0.5, 10**400], 1.0, 1.0), "data holds an int beyond"),
        (lambda: Doca(1.0, bounds=(0, 10**400)), "bounds holds an int beyond"),
        (lambda: Doca(1.0, [1.0, 10**400]), "sensitivity holds an int beyond"),
        (lambda: Doca(1.0, bounds=([], [])), "bounds must be a pair"),
    ],
)
def test_ints_beyond_the_float_range_and_empty_bounds_are_refused(call, match):
    # an int past ±1.8e308 raised a raw OverflowError; bounds=([], []) were accepted
    with pytest.raises(InputError, match=match) as caught:
        call()
    assert "0000" not in str(caught.value)


@pytest.mark.parametrize(
    ("bins", "error", "match"),
    [
        ([0.0, math.nan], InputError, "finite, strictly increasing"),  # gave 1.0
        ([3.0, 1.0, 2.0], InputError, "finite, strictly increasing"),
        ([1.0], InputError, "at least two"),
        (2.5, InputError, "bins must be an int >= 1 or"),
        ("auto", TypeError, "bins must be an int or an array of bin edges"),
    ],
)
def test_histogram_intersection_refuses_bad_bins(bins, error, match):
    with pytest.raises(error, match=match):
        histogram_intersection([1.0, 2.0, 3.0], [1.0, 2.0], bins=bins)


def test_evaluation_helpers_refuse_text():
    # numpy read ["1", "2"] as numbers: mse(["1", "2"], [1, 2]) was 0.0
    with pytest.raises(TypeError, match="original must be an array of real numbers"):
        mse(["1", "2"], [1.0, 2.0])
    with pytest.raises(TypeError, match="a must be an array of real numbers"):
        histogram_intersection(["1", "2"], [1.0])


def test_simulated_stream_refuses_a_range_that_overflows():
    # high - low = inf gave a stream of inf and NaN
    with pytest.raises(InputError, match="difference is finite"):
        simulate_skewed_stream(10, seed=1, low=-1e308, high=1e308)


@pytest.mark.parametrize("a", [1e-300, 1e-20, 1e-8])
def test_beta_shape_for_a_tiny_first_shape(a):
    # As a, b -> 0 with b = c·a the skewness tends to (c - 1)/√c, which is 1 at c = φ² =
    # (3 + √5)/2. brentq's absolute tolerance returned b = a(1 + 1e-12) (skewness 1e-12) for
    # a = 1e-20, and √(a·b) underflowed to a ZeroDivisionError at a = 1e-300.
    b = beta_shape_for_skewness(a, 1.0)
    assert b / a == pytest.approx((3 + math.sqrt(5)) / 2, rel=1e-6)


@pytest.mark.parametrize("name", ["delay", "max_clusters", "tau_window"])
def test_a_count_beyond_any_memory_is_refused_by_name(name):
    # 10**400 raised OverflowError ("integer division result too large for a float") while
    # the state's size was estimated.
    with pytest.raises(MemoryLimitError, match=rf"^{name} = int <401 digits or so> is above "
                                               r".*MAX_STATE_BYTES"):
        Doca(1.0, 1000.0, **{name: 10**400})


@pytest.mark.parametrize("bounds", [(True, 5.0), (0.0, np.True_), ([0.0, True], [1.0, 2.0])])
def test_bounds_holding_a_bool_are_refused(bounds):
    # NumPy turned (True, 5.0) into [1.0, 5.0]: a flag was silently taken as the bound 1.
    with pytest.raises(InputError, match=r"^bounds must be a pair \(lo, hi\) of numbers"):
        Doca(1.0, bounds=bounds)
    assert Doca(1.0, bounds=(1, 5.0)).sensitivity == 4.0


def test_a_published_cluster_leaves_nothing_in_the_state():
    # _publish freed a slot by its size and head only: its exact min, max and sum stayed, and
    # went into pickles (a lone record of 9.75, published as 16.40, was in the pickle).
    doca = Doca(1.0, bounds=(0, 10), delay=2, max_clusters=2)
    doca.fit_transform([3.0, 7.25, 1.5, 9.75, 4.0, 6.5])
    (_, _, _, _, _, _, c_min, c_max, c_sum, c_size, *_) = pickle.loads(pickle.dumps(doca))._state
    assert (c_size == 0).all()  # everything published
    for name, values in (("c_min", c_min), ("c_max", c_max), ("c_sum", c_sum)):
        assert (values == 0.0).all(), name


def test_stopping_to_read_a_flushing_process_loses_no_release():
    # process(flush=True) listed the whole flush at once, out of the outbox: a caller that
    # stopped reading after one release lost the others (flush() then returned []).
    doca = Doca(1.0, bounds=(0, 10), delay=100, max_clusters=3, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        got = []
        for k, pair in enumerate(doca.process([1.0, 2, 3, 4, 5, 6], flush=True)):
            got.append(pair[0])
            if k == 1:
                break
        rest = [i for i, _ in doca.flush()]
    assert sorted(got + rest) == list(range(6))


def test_printed_diagnostics_show_no_noise():
    doca = Doca(1.0, bounds=(0, 10), delay=1, max_clusters=1, seed=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        _, diagnostics = doca.fit_transform([3.0, 7.25, 1.5], return_diagnostics=True)
    text = repr(diagnostics)
    assert "cluster_noise" not in text and f"{diagnostics.cluster_noise[0, 0]:.4f}" not in text


def test_without_bounds_a_stream_costs_twice_epsilon_and_warns():
    # Both streams pass the range check at sensitivity 1, yet their last records differ by 2:
    # the noise of scale 1/(|C| epsilon) is 2 epsilon-DP, and the ledger said epsilon.
    from geosynth.dp.accountant import Accountant

    for stream in ([1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 2.0]):
        budget = Accountant(10.0)
        with pytest.warns(PrivacyLeakWarning, match=r"Doca without bounds: .* up to 2·Δf"):
            doca = Doca(1.0, sensitivity=1.0, delay=1, max_clusters=1, accountant=budget)
        doca.fit_transform(np.array(stream))
        assert budget.spent_epsilon == pytest.approx(2.0)
    budget = Accountant(10.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        Doca(1.0, bounds=(0.0, 2.0), delay=1, max_clusters=1, accountant=budget).fit_transform(
            np.array([1.0, 1.0, 1.0, 2.0]))
    assert budget.spent_epsilon == pytest.approx(1.0)


def test_equal_enlargements_go_to_the_smallest_cluster():
    """Algorithm 2's tie-break: clusters sharing their upper bound grow alike for a larger value.

    As a difference of ranges the growths of [-0.5,-0.4], [-0.9,-0.4] and [-1.2,-0.4] by -0.3
    came out 0.1000...03, 0.1000...09 and 0.0999...98: the widest cluster won the tie.
    """
    from geosynth.sdc.doca import _best_selection

    x = np.array([[-0.3]])
    c_min = np.array([[-0.5], [-0.9], [-1.2]])
    c_max = np.array([[-0.4], [-0.4], [-0.4]])
    c_size = np.array([1, 2, 3], dtype=np.int64)
    c_order = np.array([0, 1, 2], dtype=np.int64)
    inv_g = np.array([1.0])
    # tau = 0: no cluster passes the information-loss test, so C_min decides (its smallest)
    chosen = _best_selection(x, 0, 3, 3, 0.0, c_min, c_max, c_size, c_order, inv_g)
    assert chosen == 0


def test_geometries_are_refused_with_how_to_pass_their_coordinates():
    # A GeoDataFrame was refused as "must hold numbers ... not text", without a word of its
    # geometry column or CRS.
    import geopandas as gpd

    points = gpd.GeoDataFrame({"v": [1.0, 2.0, 3.0]}, crs="EPSG:31983",
                              geometry=gpd.points_from_xy([0.0, 1.0, 2.0], [0.0, 1.0, 2.0]))
    for data in (points, points.geometry):
        with pytest.raises(InputError, match=r"data holds geometries.*get_coordinates\(\), "
                                             r"with public bounds="):
            Doca(1.0, bounds=(0, 100)).fit_transform(data)
    coordinates = points.get_coordinates().to_numpy()  # the fix the message names works
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        assert Doca(1.0, bounds=(0, 100)).fit_transform(coordinates).shape == (3, 2)
