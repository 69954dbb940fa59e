"""The xoshiro256** kernels produce the distributions they claim."""

import numpy as np
import pytest
from numba import njit
from scipy import stats

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
