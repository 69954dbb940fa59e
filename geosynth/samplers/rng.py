"""Counter-free random streams for numba kernels: xoshiro256** with explicit state.

numba's built-in ``np.random`` inside ``@njit`` code keeps one hidden state per thread, is not
seeded by NumPy's generators, and cannot give each chain or parallel work item its own
reproducible stream. As pynndescent and umap do, we pass the generator state explicitly: a
``uint64[4]`` array per stream, advanced in place by the kernels below.

The generator is xoshiro256** (Blackman & Vigna 2018, https://prng.di.unimi.it/), period
2^256 − 1, which passes BigCrush. Streams are seeded from :class:`numpy.random.SeedSequence`
(``spawn`` gives statistically independent children), so the public ``seed`` reproduces the same
draws and different chains never share a stream.

All arithmetic on the state is done with explicit ``np.uint64`` constants: in numba, mixing a
``uint64`` with a plain Python ``int`` promotes to ``float64`` and silently breaks the generator.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from geosynth._random import root_seed_sequence
from geosynth._validation import check_int
from geosynth.errors import InputError

__all__ = [
    "MAX_STREAMS",
    "make_streams",
    "next_uint64",
    "uniform",
    "standard_normal",
    "ziggurat_layer",
    "ziggurat_finish",
    "splitmix64",
    "uniform_of",
    "standard_exponential",
    "gamma",
    "gamma_and_log",
]

#: The most streams of one :func:`make_streams` call (65,536, about a second of spawning): one
#: per chain (at most :data:`geosynth._validation.MAX_CHAINS`) or per parallel work item.
#: ``n_streams = 10**12`` spawned for hours before running out of memory.
MAX_STREAMS = 1 << 16

_ONE = np.uint64(1)
_SHIFT_MANTISSA = np.uint64(11)
_TWO_POW_MINUS_53 = 1.0 / 9007199254740992.0
_BELOW_ONE = 1.0 - _TWO_POW_MINUS_53  # the largest double below 1


def make_streams(seed, n_streams: int) -> np.ndarray:
    """Return ``n_streams`` independent xoshiro256** states derived from ``seed``.

    Parameters
    ----------
    seed : None, int, numpy.random.SeedSequence or numpy.random.Generator
        Public seed. ``None`` uses fresh OS entropy. A Generator contributes 126 bits drawn from it.
        An int must be >= 0.
    n_streams : int
        Number of streams (one per chain, or per parallel work item), from 1 to
        :data:`MAX_STREAMS`.

    Returns
    -------
    numpy.ndarray of uint64, shape (n_streams, 4)
        One state per row; pass a row to the kernels, which advance it in place.

    Raises
    ------
    TypeError
        ``seed`` or ``n_streams`` is a bool, float, string or other type (the message names
        the parameter).
    geosynth.errors.InputError
        ``seed`` is a negative int, or ``n_streams`` is outside 1 .. :data:`MAX_STREAMS`
        (checked before any stream is made).
    """
    n_streams = check_int(n_streams, "n_streams", 1, what="number of random streams")
    if n_streams > MAX_STREAMS:
        raise InputError(f"n_streams (number of random streams) must be at most "
                         f"{MAX_STREAMS:,}, got {n_streams:,}: one stream serves a chain or a "
                         "parallel work item; pass fewer")
    children = root_seed_sequence(seed).spawn(n_streams)
    states = np.empty((n_streams, 4), dtype=np.uint64)
    for k, child in enumerate(children):
        state = child.generate_state(4, dtype=np.uint64)
        if not state.any():  # the all-zero state is the one fixed point of xoshiro
            state[0] = _ONE
        states[k] = state
    return states


@njit(cache=True, inline="always", error_model="numpy")
def _rotl(x, k):
    return (x << k) | (x >> (np.uint64(64) - k))


@njit(cache=True, inline="always", error_model="numpy")
def next_uint64(state):
    """Advance ``state`` (uint64[4]) and return the next 64-bit output."""
    result = _rotl(state[1] * np.uint64(5), np.uint64(7)) * np.uint64(9)
    t = state[1] << np.uint64(17)
    state[2] ^= state[0]
    state[3] ^= state[1]
    state[1] ^= state[2]
    state[0] ^= state[3]
    state[2] ^= t
    state[3] = _rotl(state[3], np.uint64(45))
    return result


@njit(cache=True, inline="always", error_model="numpy")
def uniform_of(bits):
    """Return the uniform on (0, 1) that :func:`uniform` makes of a given 64-bit output.

    ``(k + 1/2)·2⁻⁵³`` for the top 53 bits ``k``, except that the top ``k = 2⁵³ − 1`` would
    round to exactly 1.0 (``1 − 2⁻⁵⁴`` is a tie between 1 − 2⁻⁵³ and 1; before 2026-12 it did,
    once in 2⁵³ draws: ``standard_exponential`` then returned 0 and a slice level equalled
    ``h(x0)``); it gives 1 − 2⁻⁵³. No other output changes.
    """
    return min(((bits >> _SHIFT_MANTISSA) + 0.5) * _TWO_POW_MINUS_53, _BELOW_ONE)


@njit(cache=True, inline="always", error_model="numpy")
def uniform(state):
    """Uniform draw on the open interval (0, 1) with 53 random bits."""
    return uniform_of(next_uint64(state))


@njit(cache=True, inline="always", error_model="numpy")
def standard_exponential(state):
    """Exponential(1) draw by inversion (never returns 0 or inf)."""
    return -math.log(uniform(state))


_ZIG_R = 3.442619855899  # right edge of the base layer (Marsaglia & Tsang 2000, 128 layers)
_ZIG_V = 9.91256303526217e-3  # area of each layer


def _ziggurat_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Layer edges x_0 > x_1 = R > … > x_128 = 0, the ratios x_{i+1}/x_i and e^{−x_i²/2}.

    x_0 = V/f(R) is the width of the base strip (the rectangle under f(R) plus the tail, whose
    area is V); x_{i+1} solves x_{i+1}·(f(x_{i+1}) − f(x_i)) = V (Marsaglia & Tsang 2000).
    """
    x = np.empty(129)
    x[0] = _ZIG_V / math.exp(-0.5 * _ZIG_R * _ZIG_R)
    x[1] = _ZIG_R
    for i in range(2, 128):
        x[i] = math.sqrt(-2.0 * math.log(_ZIG_V / x[i - 1] + math.exp(-0.5 * x[i - 1] ** 2)))
    x[128] = 0.0
    return x, x[1:] / x[:-1], np.exp(-0.5 * x * x)


_ZIG_X, _ZIG_RATIO, _ZIG_F = _ziggurat_tables()
_LOW_SEVEN = np.uint64(0x7F)


@njit(cache=True, error_model="numpy", inline="always")
def ziggurat_layer(bits):
    """Split one 64-bit output into the ziggurat's signed uniform, layer and candidate.

    The top 53 bits give the signed uniform ``u``, the low 7 bits (unused by it) the layer
    ``i``, as in Doornik (2005), whose layer-independent uniform avoids the correlation of the
    original's shared bits. ``x = u·x_i`` is a standard normal draw when ``|u| <``
    ``_ZIG_RATIO[i]`` (97.2 % of outputs: one minus the mean ratio); otherwise
    :func:`ziggurat_finish` completes the draw from ``(u, i)``.

    Returns
    -------
    u : float
    i : int
    x : float
    fast : bool
        ``|u| < _ZIG_RATIO[i]``: ``x`` is the draw.
    """
    u = 2.0 * uniform_of(bits) - 1.0
    i = np.int64(bits & _LOW_SEVEN)
    return u, i, u * _ZIG_X[i], abs(u) < _ZIG_RATIO[i]


@njit(cache=True, error_model="numpy")
def ziggurat_finish(u, i, state):
    """Complete a ziggurat draw whose first comparison failed (Marsaglia & Tsang 2000).

    The base layer's tail beyond R is drawn by Marsaglia's (1964) exponential method; any other
    layer's wedge by the test under the curve, and a rejected wedge starts a fresh draw from
    ``state``. Called with the ``(u, i)`` of :func:`ziggurat_layer`, it makes the pair an exact
    standard normal draw whatever produced the 64 bits (the engine's vectorised passes take
    them from :func:`splitmix64`).
    """
    while True:
        if i == 0:
            while True:
                x = -math.log(uniform(state)) / _ZIG_R
                y = -math.log(uniform(state))
                if 2.0 * y > x * x:
                    return _ZIG_R + x if u > 0.0 else -_ZIG_R - x
        x = u * _ZIG_X[i]
        f_inner = _ZIG_F[i + 1]
        f_outer = _ZIG_F[i]
        # Accept under the curve between the layer's two edges: f(x) = e^{−x²/2}.
        if f_outer + uniform(state) * (f_inner - f_outer) < math.exp(-0.5 * x * x):
            return x
        u, i, x, fast = ziggurat_layer(next_uint64(state))
        if fast:
            return x


@njit(cache=True, error_model="numpy", inline="always")
def standard_normal(state):
    """Draw a standard normal value (ziggurat, 128 layers; Marsaglia & Tsang 2000).

    One 64-bit output gives both the signed uniform and the layer (:func:`ziggurat_layer`);
    97.2 % of draws end at the first comparison, the rest in :func:`ziggurat_finish`.
    """
    u, i, x, fast = ziggurat_layer(next_uint64(state))
    if fast:
        return x
    return ziggurat_finish(u, i, state)


_GOLDEN_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX_2 = np.uint64(0x94D049BB133111EB)


@njit(cache=True, error_model="numpy", inline="always")
def splitmix64(key, k):
    """Output ``k`` (≥ 0) of the SplitMix64 stream that starts from ``key``.

    SplitMix64 (Steele, Lea & Flood 2014; the generator that seeds xoshiro) adds the odd
    constant γ = 0x9E3779B97F4A7C15 to its state and returns a 64-bit mix of the sum; output k
    is the mix of ``key + (k + 1)·γ``, so any output can be computed without the ones before
    it. A loop over k has no carried state, so LLVM vectorises it: the engine's vectorised
    passes draw one ``key`` from the chain's xoshiro256** stream and take their bits here. The
    sequence passes BigCrush; two passes' sequences overlap only if their keys differ by less
    than the pass length times γ (modulo 2⁶⁴), which has probability ~n/2⁶⁴.
    """
    z = key + (np.uint64(k) + _ONE) * _GOLDEN_GAMMA
    z = (z ^ (z >> np.uint64(30))) * _MIX_1
    z = (z ^ (z >> np.uint64(27))) * _MIX_2
    return z ^ (z >> np.uint64(31))


@njit(cache=True, error_model="numpy", inline="always")
def _marsaglia_tsang(state, shape):
    """Gamma(shape, 1) draw for shape ≥ 1 (Marsaglia & Tsang 2000, squeeze then log test)."""
    d = shape - 1.0 / 3.0
    c = 1.0 / math.sqrt(9.0 * d)
    while True:
        x = standard_normal(state)
        v = 1.0 + c * x
        if v <= 0.0:
            continue
        v = v * v * v
        u = uniform(state)
        if u < 1.0 - 0.0331 * x * x * x * x or math.log(u) < 0.5 * x * x + d * (
            1.0 - v + math.log(v)
        ):
            return d * v


@njit(cache=True, error_model="numpy")
def gamma(state, shape, rate):
    """Gamma(shape, rate) draw (Marsaglia & Tsang 2000; boosted by U^(1/shape) for shape < 1).

    Parameters
    ----------
    state : numpy.ndarray of uint64, shape (4,)
        xoshiro256** stream, advanced in place.
    shape : float
        Shape parameter (> 0).
    rate : float
        Rate parameter (> 0); the mean is ``shape / rate``.

    Returns
    -------
    float
        The draw.
    """
    boost = 1.0
    if shape < 1.0:
        boost = uniform(state) ** (1.0 / shape)
        shape = shape + 1.0
    return boost * _marsaglia_tsang(state, shape) / rate


@njit(cache=True, error_model="numpy", inline="always")
def gamma_and_log(state, shape):
    """Draw from Gamma(shape, 1); return the draw and its logarithm, finite for any shape > 0.

    For shape < 1 the boost ``G = G_{shape+1}·U^{1/shape}`` (Marsaglia & Tsang 2000, §6) is
    applied in log space, ``log G = log G_{shape+1} + log(U)/shape``: :func:`gamma`'s
    ``U^{1/shape}`` underflows to 0 when the shape is small, the log does not.

    Parameters
    ----------
    state : numpy.ndarray of uint64, shape (4,)
        xoshiro256** stream, advanced in place.
    shape : float
        Shape parameter (> 0).

    Returns
    -------
    g, log_g : float
        The draw (possibly 0.0 after underflow, its log still exact) and ``log g``.
    """
    if shape >= 1.0:
        g = _marsaglia_tsang(state, shape)
        return g, math.log(g)
    u = uniform(state)
    log_g = math.log(_marsaglia_tsang(state, shape + 1.0)) + math.log(u) / shape
    return math.exp(log_g), log_g
