"""The xoshiro256** kernels produce the distributions they claim."""

import numpy as np
import pytest
from numba import njit
from scipy import stats

from geosynth.errors import InputError, InputTypeError
from geosynth.samplers import rng


@njit
def _many(kind, state, n, shape, rate):
    out = np.empty(n)
    for i in range(n):
        if kind == 0:
            out[i] = rng.uniform(state)
        elif kind == 1:
            out[i] = rng.standard_normal(state)
        elif kind == 2:
            out[i] = rng.standard_exponential(state)
        else:
            out[i] = rng.gamma(state, shape, rate)
    return out


def _xoshiro_python(state, n):
    """Transcribe the authors' reference C code (prng.di.unimi.it/xoshiro256starstar.c)."""
    mask = (1 << 64) - 1
    s = [int(v) for v in state]

    def rotl(x, k):
        return ((x << k) | (x >> (64 - k))) & mask

    out = []
    for _ in range(n):
        result = (rotl((s[1] * 5) & mask, 7) * 9) & mask
        t = (s[1] << 17) & mask
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
        out.append(result)
    return out


def test_xoshiro_matches_reference_algorithm():
    seeds = [np.array([1, 2, 3, 4], dtype=np.uint64), rng.make_streams(5, 1)[0]]
    for seed in seeds:
        expected = _xoshiro_python(seed.copy(), 1000)
        state = seed.copy()
        assert [int(rng.next_uint64(state)) for _ in range(1000)] == expected


@pytest.mark.parametrize(
    ("kind", "shape", "rate", "reference"),
    [
        (0, 0.0, 0.0, stats.uniform()),
        (1, 0.0, 0.0, stats.norm()),
        (2, 0.0, 0.0, stats.expon()),
        (3, 0.3, 2.0, stats.gamma(0.3, scale=0.5)),
        (3, 1.0, 1.0, stats.gamma(1.0)),
        (3, 7.5, 0.25, stats.gamma(7.5, scale=4.0)),
    ],
)
def test_distributions(kind, shape, rate, reference):
    state = rng.make_streams(99, 1)[0]
    draws = _many(kind, state, 50_000, shape, rate)
    assert stats.kstest(draws, reference.cdf).pvalue > 0.001


@njit
def _gamma_and_logs(state, n, shape):
    out = np.empty((n, 2))
    for i in range(n):
        out[i, 0], out[i, 1] = rng.gamma_and_log(state, shape)
    return out


@pytest.mark.parametrize("shape", [0.3, 1.0, 7.5])
def test_gamma_and_log_draws_gamma_and_its_log(shape):
    draws = _gamma_and_logs(rng.make_streams(98, 1)[0], 50_000, shape)
    assert stats.kstest(draws[:, 0], stats.gamma(shape).cdf).pvalue > 0.001
    np.testing.assert_allclose(np.log(draws[:, 0]), draws[:, 1], rtol=1e-12, atol=1e-12)


def test_gamma_and_log_keeps_the_log_of_a_tiny_shape():
    """Shape 0.002: a fifth of the draws underflow to 0.0; their logs stay finite and exact."""
    logs = _gamma_and_logs(rng.make_streams(97, 1)[0], 20_000, 0.002)[:, 1]
    assert np.all(np.isfinite(logs))
    # log G ~ log G_{1.002} + log(U)/0.002, and shape·log G → −Exp(1) as the shape → 0.
    assert stats.kstest(-0.002 * logs, stats.expon().cdf).pvalue > 0.001


# ---------------------------------------------------------------------- seeds (issue 14, item 13)
BAD_TYPES = [
    (True, r"got bool True"),
    (np.bool_(False), r"got bool"),
    (1.5, r"got float 1\.5; pass an int, e\.g\. seed=2"),  # the nearest int, not 42
    (7.0, r"got float 7\.0; pass an int, e\.g\. seed=7"),
    ("42", r"got str '42'; pass the number itself, seed=42"),
    ("abc", r"got str 'abc'"),
    ([1, 2], r"got list"),
]


def _seed_users():
    """Every normalisation point of a public seed."""
    from geosynth._random import as_generator, root_seed_sequence

    return {
        "make_streams": lambda seed: rng.make_streams(seed, 2),
        "as_generator": as_generator,
        "root_seed_sequence": root_seed_sequence,
    }


@pytest.mark.parametrize("user", ["make_streams", "as_generator", "root_seed_sequence"])
@pytest.mark.parametrize("seed", [-1, np.int64(-5), -(2**70)])
def test_negative_seeds_are_refused_naming_seed(user, seed):
    from geosynth.errors import InputError

    with pytest.raises(InputError, match=r"seed must be None, an int >= 0.*got the negative int"):
        _seed_users()[user](seed)


@pytest.mark.parametrize("user", ["make_streams", "as_generator", "root_seed_sequence"])
@pytest.mark.parametrize(("seed", "match"), BAD_TYPES)
def test_seeds_of_other_types_are_refused_naming_seed(user, seed, match):
    with pytest.raises(TypeError, match=r"seed must be None, an int >= 0, a numpy SeedSequence "
                                        r"or a numpy Generator, " + match):
        _seed_users()[user](seed)


def test_valid_seeds_give_the_same_streams_as_before():
    # make_streams(seed) spawns children of SeedSequence(seed); a Generator gives 128 bits.
    def reference(root, n):
        return np.array([child.generate_state(4, dtype=np.uint64) for child in root.spawn(n)])

    for seed in (0, 7, np.int64(7), np.uint32(7), 2**80):
        np.testing.assert_array_equal(rng.make_streams(seed, 3),
                                      reference(np.random.SeedSequence(int(seed)), 3))
    sequence = np.random.SeedSequence(11)
    np.testing.assert_array_equal(rng.make_streams(sequence, 2),
                                  reference(np.random.SeedSequence(11), 2))
    # the caller's SeedSequence is not consumed: the same object gives the same streams again
    np.testing.assert_array_equal(rng.make_streams(sequence, 2),
                                  reference(np.random.SeedSequence(11), 2))
    assert sequence.n_children_spawned == 0
    sequence.spawn(1)  # a caller's own spawns move where the library starts, as in NumPy
    np.testing.assert_array_equal(rng.make_streams(sequence, 2),
                                  reference(np.random.SeedSequence(11), 3)[1:])
    generator, twin = np.random.default_rng(3), np.random.default_rng(3)
    root = np.random.SeedSequence(twin.integers(0, 2**63, size=2).tolist())
    np.testing.assert_array_equal(rng.make_streams(generator, 2), reference(root, 2))
    assert rng.make_streams(None, 1).shape == (1, 4)

    from geosynth._random import as_generator

    assert as_generator(5).random() == np.random.default_rng(5).random()
    assert as_generator(generator) is generator


def test_fit_and_other_public_functions_name_seed(make_scenario_counts):
    import geosynth
    from geosynth.errors import InputError

    counts = make_scenario_counts(n=60, seed=1, shape=(5, 5), attributes=["y"]).counts
    with pytest.raises(InputError, match=r"seed must be None, an int >= 0.*got the negative "
                                         r"int -1: pass a non-negative int such as seed=1"):
        geosynth.PaivaModel().fit(counts, n_iter=20, burn_in=0, seed=-1, progress=False)
    with pytest.raises(TypeError, match=r"seed must be .*got bool True"):
        geosynth.PaivaModel().fit(counts, n_iter=20, burn_in=0, seed=True, progress=False)
    with pytest.raises(InputError, match="got the negative int -3"):
        geosynth.datasets.paiva_scenario(n=10, seed=-3)
    with pytest.raises(InputError, match="got the negative int -2"):
        geosynth.samplers.sample_conditional(a=1.0, w=[1.0], z=1.0, m=0.0, q=1.0, seed=-2)


# ------------------------------------------------------------- the ziggurat normal (2026-11-26)
def test_ziggurat_layers_have_equal_areas_and_close_at_zero():
    """Each of the 127 upper layers has the base strip's area V; the top one ends at x = 0."""
    x, ratio, f = rng._ZIG_X, rng._ZIG_RATIO, rng._ZIG_F
    assert np.all(np.diff(x) < 0) and x[-1] == 0.0
    areas = x[1:128] * (f[2:129] - f[1:128])
    # The recursion carries the 13-digit R and V of the paper: the top layer closes to 1e-9.
    np.testing.assert_allclose(areas, rng._ZIG_V, rtol=1e-8)
    # Base strip: rectangle under f(R) plus the tail beyond R (exact normal tail integral).
    tail = np.sqrt(np.pi / 2) * stats.norm.sf(rng._ZIG_R) * 2
    np.testing.assert_allclose(rng._ZIG_R * f[1] + tail, rng._ZIG_V, rtol=1e-9)
    np.testing.assert_allclose(ratio, x[1:] / x[:-1])


def _assert_normal_fine_bins_and_tails(draws):
    """Chi-square over 400 equiprobable bins; the mass beyond R and beyond 4 (binomial tests)."""
    edges = stats.norm.ppf(np.linspace(0, 1, 401))
    observed, _ = np.histogram(draws, edges)
    assert stats.chisquare(observed).pvalue > 0.001
    for cut in (rng._ZIG_R, 4.0):
        beyond = int(np.sum(np.abs(draws) > cut))
        assert stats.binomtest(beyond, draws.size, 2 * stats.norm.sf(cut)).pvalue > 0.001


def test_ziggurat_normal_fine_bins_and_tails():
    """2·10⁶ draws: chi-square over 400 equiprobable bins (the layers' wedges and edges), and
    the mass beyond the base layer's edge R and beyond 4 against the exact normal tails."""
    state = rng.make_streams(2026, 1)[0]
    draws = _many(1, state, 2_000_000, 0.0, 0.0)
    _assert_normal_fine_bins_and_tails(draws)
    assert abs(np.mean(draws > 0) - 0.5) < 5 * 0.5 / np.sqrt(draws.size)


# ---------------------------------------- counter-based bits of the vectorised passes (2026-11-28)
def _splitmix_python(seed, n):
    """Transcribe the reference C code (prng.di.unimi.it/splitmix64.c)."""
    mask = (1 << 64) - 1
    x, out = int(seed), []
    for _ in range(n):
        x = (x + 0x9E3779B97F4A7C15) & mask
        z = x
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        out.append(z ^ (z >> 31))
    return out


@njit
def _splitmix_outputs(key, n):
    out = np.empty(n, np.uint64)
    for k in range(n):
        out[k] = rng.splitmix64(key, k)
    return out


@pytest.mark.parametrize("key", [0, 1234567, 2**64 - 1])
def test_splitmix64_outputs_match_the_reference_algorithm(key):
    assert [int(v) for v in _splitmix_outputs(np.uint64(key), 1000)] == _splitmix_python(key, 1000)


@njit
def _normals_from_splitmix(key, n, state):
    out = np.empty(n)
    for k in range(n):
        u, layer, x, fast = rng.ziggurat_layer(rng.splitmix64(key, k))
        out[k] = x if fast else rng.ziggurat_finish(u, layer, state)
    return out


def test_ziggurat_from_outside_bits_and_its_finish_draw_normals():
    """The vectorised passes' normals: ziggurat_layer on SplitMix64 bits, ziggurat_finish on the
    2.8 % outside the rectangles; the fine-bin and tail checks of the xoshiro normals."""
    draws = _normals_from_splitmix(np.uint64(2026), 2_000_000, rng.make_streams(3, 1)[0])
    _assert_normal_fine_bins_and_tails(draws)


# ------------------------------------------------------------ edges and independence (2026-12)
def test_uniform_stays_inside_the_open_interval_at_both_extreme_outputs():
    """The top 53 bits all ones gave (2⁵³ − 1/2)·2⁻⁵³, which rounds to exactly 1.0."""
    top = rng.uniform_of(np.uint64(2**64 - 1))
    bottom = rng.uniform_of(np.uint64(0))
    assert 0.0 < bottom < top < 1.0
    assert top == 1.0 - 2.0**-53 and bottom == 2.0**-54
    assert -np.log(top) > 0.0  # standard_exponential never returns 0
    # every other output is (k + 1/2)·2⁻⁵³ rounded, as before
    for k in (0, 1, 2**52 - 1, 2**52, 2**53 - 2):
        bits = np.uint64(k << 11 | 0x7FF)
        assert rng.uniform_of(bits) == (k + 0.5) * 2.0**-53


@njit
def _uniform_rows(states, n):
    out = np.empty((states.shape[0], n))
    for s in range(states.shape[0]):
        for i in range(n):
            out[s, i] = rng.uniform(states[s])
    return out


def test_spawned_streams_are_uncorrelated():
    """64 streams of one seed: the 2,016 pairwise correlations of 10⁵ uniforms, and those at
    lags 1–3 between neighbouring streams, are N(0, 1/n) draws (KS), none beyond 5/√n."""
    n = 100_000
    draws = _uniform_rows(rng.make_streams(2026, 64), n)
    corr = np.corrcoef(draws)[np.triu_indices(64, 1)] * np.sqrt(n)
    lagged = [np.corrcoef(draws[s, lag:], draws[s + 1, :-lag])[0, 1] * np.sqrt(n)
              for s in range(63) for lag in (1, 2, 3)]
    assert stats.kstest(corr, "norm").pvalue > 0.001
    assert np.abs(corr).max() < 5.0 and np.abs(lagged).max() < 5.0


@pytest.mark.parametrize("n_streams", [None, "1", True, 3.5, np.float64(2.0)])
def test_make_streams_refuses_a_count_that_is_not_an_int(n_streams):
    # None and "1" raised a bare TypeError from SeedSequence.spawn, True and 3.5 another.
    with pytest.raises(InputTypeError, match=r"^n_streams \(number of random streams\) must be "
                                             r"an int"):
        rng.make_streams(1, n_streams)


@pytest.mark.parametrize("n_streams", [0, -1, (1 << 16) + 1, 10**12, 10**400])
def test_make_streams_refuses_a_count_out_of_range_before_any_work(n_streams):
    # -1 raised OverflowError in SeedSequence; 10**12 spawned for minutes (this test must be
    # instant: the check comes before spawning).
    with pytest.raises(InputError, match=r"^n_streams \(number of random streams\) must be"):
        rng.make_streams(1, n_streams)


def test_make_streams_takes_any_int_up_to_its_maximum():
    assert rng.make_streams(1, np.int64(3)).shape == (3, 4)
    assert rng.MAX_STREAMS == 1 << 16  # MAX_CHAINS chains each get their stream
