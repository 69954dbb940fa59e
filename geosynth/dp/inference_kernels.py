"""Numba kernels of :mod:`geosynth.dp.inference` (Charest 2011 posterior of DP synthetic counts).

Notation: ``k`` categories, ``M`` synthetic tables ``x̃_m`` (rows of ``synthetic``), confidential
total ``n``, prior ``γ`` (``prior``), synthesizer prior ``α`` (``alpha``). Every kernel works on
plain arrays and advances an explicit xoshiro256** state (``uint64[4]``, see
:mod:`geosynth.samplers.rng`) in place; validation lives in :mod:`geosynth.dp.inference`.

The collapsed target. Integrating ``p`` and every ``p̃_m`` out, the posterior of the latent counts
is ``π(x) ∝ DirMult(x; n, γ) ∏_m DirMult(x̃_m; ñ, α + x)`` on the compositions of ``n``, and
because ``Σ_i (α_i + x_i) = A + n`` does not depend on ``x`` it factorises over categories::

    log π(x) = const + Σ_i T[i, x_i],   Σ_i x_i = n,
    T[i, v]  = lgamma(γ_i + v) − lgamma(v + 1)
               + Σ_m lgamma(α_i + v + x̃_mi) − M · lgamma(α_i + v).

The table ``T`` (shape (k, n + 1)) is all any collapsed kernel needs.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from geosynth.samplers.rng import gamma, uniform

__all__ = [
    "release_log_table",
    "collapsed_log_table",
    "forward_log_sums",
    "backward_log_sums",
    "log_marginals",
    "conditional_cdf_table",
    "sample_exact",
    "run_pair_mh",
    "run_binary_gibbs",
    "run_binary_mhl",
    "run_adaptive_mh",
]

_NEG_INF = -np.inf


# ---------------------------------------------------------------------------- small helpers
@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _xlogy(v, log_y):
    """``v · log_y`` with the convention ``0 · (−inf) = 0``."""
    if v == 0:
        return 0.0
    return v * log_y


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _randint(state, upper):
    """Uniform integer on ``0 .. upper − 1``."""
    j = int(uniform(state) * upper)
    return j if j < upper else upper - 1


@njit(cache=True, nogil=True, error_model="numpy")
def _dirichlet_log(state, shape, out_log):
    """Draw ``Dirichlet(shape)`` by normalised gammas; write log probabilities to ``out_log``."""
    k = shape.shape[0]
    total = 0.0
    top = 0.0
    for i in range(k):
        g = gamma(state, shape[i], 1.0)
        out_log[i] = g
        total += g
        top = max(top, g)
    log_total = _log_sum(total, out_log, top)
    for i in range(k):
        g = out_log[i]
        out_log[i] = math.log(g) - log_total if g > 0.0 else _NEG_INF


@njit(cache=True, nogil=True, error_model="numpy")
def _log_sum(total, values, top):
    """``log Σ values`` given their float ``total`` and largest value ``top``.

    ``math.log(total)`` unless the sum overflowed to inf (gammas of a synthesizer prior near
    1e308, a tiny ε): then every log proportion was ``−inf``, the Metropolis ratios of
    ``"adaptive"`` NaN and the chain never moved. Summed relative to ``top`` there.
    """
    if total < np.inf:
        return math.log(total)
    scaled = 0.0
    for i in range(values.shape[0]):
        scaled += values[i] / top
    return math.log(top) + math.log(scaled)


@njit(cache=True, nogil=True, error_model="numpy")
def _dirichlet_given_counts(state, prior, x, out):
    """Draw ``p ~ Dirichlet(prior + x)`` into ``out`` (float64[k])."""
    k = prior.shape[0]
    total = 0.0
    for i in range(k):
        g = gamma(state, prior[i] + x[i], 1.0)
        out[i] = g
        total += g
    for i in range(k):
        out[i] /= total


@njit(cache=True, nogil=True, error_model="numpy")
def _log_convolve(a, b, out):
    """``out[s] = log Σ_{v=0..s} exp(a[v] + b[s − v])`` for ``s = 0 .. len(out) − 1``."""
    for s in range(out.shape[0]):
        top = _NEG_INF
        for v in range(s + 1):
            t = a[v] + b[s - v]
            if t > top:
                top = t
        if top == _NEG_INF:
            out[s] = _NEG_INF
            continue
        total = 0.0
        for v in range(s + 1):
            total += math.exp(a[v] + b[s - v] - top)
        out[s] = top + math.log(total)


# ---------------------------------------------------------------------------- tables
@njit(cache=True, nogil=True, error_model="numpy")
def release_log_table(synthetic, n, alpha):
    """Log-likelihood of the synthetic tables as a function of each latent count.

    Parameters
    ----------
    synthetic : int64[M, k]
        Synthetic tables, rows summing to ``ñ``.
    n : int
        Confidential total.
    alpha : float64[k]
        Synthesizer prior.

    Returns
    -------
    float64[k, n + 1]
        ``R[i, v] = Σ_m lgamma(α_i + v + x̃_mi) − M · lgamma(α_i + v)``, less its value at
        ``v = 0``: up to a constant, ``Σ_i R[i, x_i] = log ∏_m DirMult(x̃_m; ñ, α + x)`` for any
        composition ``x`` of ``n``.

    Notes
    -----
    Summed by its increments ``R[i, v + 1] − R[i, v] = Σ_m log1p(x̃_mi / (α_i + v))``, not as
    differences of ``lgamma``: at a huge ``α`` (a tiny ε) the ``lgamma`` values are near
    ``α log α`` (3e16 at α = 1e15) and their rounding, of order 1, swamped the differences, so
    the posterior came out far from the prior it must equal there (mean 0.87 for 0.5 at
    α = 1e16).
    """
    n_tables, k = synthetic.shape
    out = np.empty((k, n + 1))
    for i in range(k):
        out[i, 0] = 0.0
        for v in range(n):
            base = alpha[i] + v
            step = 0.0
            for m in range(n_tables):
                x = synthetic[m, i]
                # log((base + x) / base): log1p keeps it exact for a huge base, the difference
                # of logs for a tiny one (x / base would overflow near α = 1e-320)
                step += math.log1p(x / base) if base >= 1.0 else math.log(base + x) - math.log(base)
            out[i, v + 1] = out[i, v] + step
    return out


@njit(cache=True, nogil=True, error_model="numpy")
def collapsed_log_table(release_table, prior):
    """Add the Dirichlet-multinomial prior of ``x`` to a release table.

    Parameters
    ----------
    release_table : float64[k, n + 1]
        From :func:`release_log_table`.
    prior : float64[k]
        Prior ``γ`` of ``p``.

    Returns
    -------
    float64[k, n + 1]
        ``T[i, v] = R[i, v] + lgamma(γ_i + v) − lgamma(γ_i) − lgamma(v + 1)``;
        ``log π(x) = const + Σ T[i, x_i]``.

    Notes
    -----
    ``lgamma(γ_i + v) − lgamma(γ_i)`` comes from :func:`_lgamma_difference`: at a huge prior
    (γ = 1e154) the two ``lgamma`` are near 3.5e156 and their difference lost every digit, so
    ``x`` came out as if the synthetic tables said nothing (x̄ = 25 of 50, not 21.9).
    """
    k, width = release_table.shape
    out = np.empty((k, width))
    for i in range(k):
        for v in range(width):
            out[i, v] = (release_table[i, v] + _lgamma_difference(prior[i], v, 0.0)
                         - math.lgamma(v + 1.0))
    return out


@njit(cache=True, nogil=True, error_model="numpy")
def forward_log_sums(table):
    """Log partial partition functions over the first categories.

    Parameters
    ----------
    table : float64[k, n + 1]
        Collapsed log table ``T``.

    Returns
    -------
    float64[k + 1, n + 1]
        ``F[j, s] = log Σ exp(Σ_{i<j} T[i, x_i])`` over ``x_0 + … + x_{j−1} = s``; ``F[0]`` is
        the point mass at 0 and ``F[k, n]`` the log normaliser of ``π``. Cost ``O(k n²)``.
    """
    k, width = table.shape
    out = np.full((k + 1, width), _NEG_INF)
    out[0, 0] = 0.0
    for j in range(k):
        _log_convolve(out[j], table[j], out[j + 1])
    return out


@njit(cache=True, nogil=True, error_model="numpy")
def backward_log_sums(table):
    """Log partial partition functions over the last categories.

    Parameters
    ----------
    table : float64[k, n + 1]
        Collapsed log table ``T``.

    Returns
    -------
    float64[k + 1, n + 1]
        ``B[j, s] = log Σ exp(Σ_{i≥j} T[i, x_i])`` over ``x_j + … + x_{k−1} = s``; ``B[k]`` is
        the point mass at 0.
    """
    k, width = table.shape
    out = np.full((k + 1, width), _NEG_INF)
    out[k, 0] = 0.0
    for j in range(k - 1, -1, -1):
        _log_convolve(table[j], out[j + 1], out[j])
    return out


@njit(cache=True, nogil=True, error_model="numpy")
def log_marginals(table, forward, backward):
    """Exact log posterior pmf of each latent count.

    Parameters
    ----------
    table : float64[k, n + 1]
        Collapsed log table ``T``.
    forward, backward : float64[k + 1, n + 1]
        From :func:`forward_log_sums` and :func:`backward_log_sums`.

    Returns
    -------
    float64[k, n + 1]
        ``log P(x_i = v | x̃)``.
    """
    k, width = table.shape
    n = width - 1
    log_z = forward[k, n]
    rest = np.empty(width)
    out = np.empty((k, width))
    for i in range(k):
        _log_convolve(forward[i], backward[i + 1], rest)  # all categories but i
        for v in range(width):
            out[i, v] = table[i, v] + rest[n - v] - log_z
    return out


# ---------------------------------------------------------------------------- exact sampling
@njit(cache=True, nogil=True, error_model="numpy")
def conditional_cdf_table(table, forward):
    """Cumulative conditional distributions used by :func:`sample_exact`.

    Parameters
    ----------
    table : float64[k, n + 1]
        Collapsed log table ``T``.
    forward : float64[k + 1, n + 1]
        From :func:`forward_log_sums`.

    Returns
    -------
    float64[k − 1, n + 1, n + 1]
        ``cdf[j − 1, s, v] = P(x_j <= v | x_0 + … + x_j = s)`` for ``j = 1 .. k − 1`` and
        ``v = 0 .. s`` (entries with ``v > s`` are 1). Built in ``O(k n²)`` exponentials.
    """
    k, width = table.shape
    out = np.ones((k - 1, width, width))
    for j in range(1, k):
        for s in range(width):
            log_total = forward[j + 1, s]
            cumulative = 0.0
            for v in range(s + 1):
                cumulative += math.exp(table[j, v] + forward[j, s - v] - log_total)
                out[j - 1, s, v] = cumulative
            for v in range(s + 1):  # remove the rounding error of the total
                out[j - 1, s, v] /= cumulative
            out[j - 1, s, s] = 1.0
    return out


@njit(cache=True, nogil=True, error_model="numpy")
def _search(cdf_row, upper, u):
    """Smallest ``v`` in ``0 .. upper`` with ``cdf_row[v] >= u`` (binary search)."""
    lo = 0
    hi = upper
    while lo < hi:
        mid = (lo + hi) // 2
        if cdf_row[mid] >= u:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(cache=True, nogil=True, error_model="numpy")
def _walk(table, forward, j, s, u):
    """Smallest ``v`` whose conditional cumulative probability reaches ``u`` (linear walk)."""
    log_total = forward[j + 1, s]
    cumulative = 0.0
    chosen = -1
    for v in range(s + 1):
        w = table[j, v] + forward[j, s - v] - log_total
        if w == _NEG_INF:
            continue
        cumulative += math.exp(w)
        chosen = v
        if cumulative >= u:
            break
    return chosen


@njit(cache=True, nogil=True, error_model="numpy")
def sample_exact(table, forward, cdf, prior, state, x_out, p_out):
    """Independent draws from the exact posterior by backward sampling over categories.

    Draws ``x_{k−1}, x_{k−2}, …, x_1`` in turn from
    ``P(x_j = v | x_{j+1..}) = exp(T[j, v] + F[j, s − v] − F[j + 1, s])`` (``s`` the part of
    ``n`` not yet assigned), sets ``x_0 = s``, then ``p ~ Dirichlet(γ + x)``. With a
    precomputed ``cdf`` (:func:`conditional_cdf_table`) each ``x_j`` is a binary search, so one
    draw costs ``O(k log n)``; with an empty ``cdf`` (shape (0, 0, 0), for large ``n``) it walks
    ``v`` up from 0, ``x_j + 1`` exponentials, ``O(n + k)`` per draw.

    Parameters
    ----------
    table : float64[k, n + 1]
        Collapsed log table ``T``.
    forward : float64[k + 1, n + 1]
        From :func:`forward_log_sums`.
    cdf : float64[k − 1, n + 1, n + 1] or float64[0, 0, 0]
        From :func:`conditional_cdf_table`, or empty.
    prior : float64[k]
        Prior ``γ``.
    state : uint64[4]
        xoshiro256** stream, advanced in place.
    x_out : int64[n_draws, k]
        Output latent counts (written).
    p_out : float64[n_draws, k]
        Output probabilities (written).
    """
    k, width = table.shape
    n = width - 1
    use_table = cdf.shape[0] == k - 1
    x = np.empty(k, dtype=np.int64)
    for d in range(x_out.shape[0]):
        s = n
        for j in range(k - 1, 0, -1):
            u = uniform(state)
            if use_table:
                chosen = _search(cdf[j - 1, s], s, u)
            else:
                chosen = _walk(table, forward, j, s, u)
            x[j] = chosen
            s -= chosen
        x[0] = s
        _dirichlet_given_counts(state, prior, x, p_out[d])
        for i in range(k):
            x_out[d, i] = x[i]


# ---------------------------------------------------------------------------- collapsed MH
@njit(cache=True, nogil=True, error_model="numpy")
def run_pair_mh(table, prior, x, n_iter, burn_in, thin, max_shift, state, x_out, p_out):
    """Collapsed Metropolis chain on the compositions of ``n`` (pair moves), then ``p | x``.

    One iteration is ``k`` proposals; each picks an ordered pair of distinct categories
    ``(i, j)`` and a shift ``s`` uniform on ``1 .. S`` and proposes ``x_i − s, x_j + s``. The
    proposal is symmetric (the reverse move picks ``(j, i)`` and the same ``s`` with the same
    probability), so it is accepted with probability ``min(1, π(x') / π(x))``, read off ``T``
    with four look-ups; a move that would make ``x_i`` negative is rejected. During burn-in ``S``
    is adapted every 50 iterations towards an acceptance rate of 0.35 and is then frozen, so the
    recorded chain is a time-homogeneous π-invariant chain.

    Parameters
    ----------
    table : float64[k, n + 1]
        Collapsed log table ``T``.
    prior : float64[k]
        Prior ``γ`` (for the ``p`` draws).
    x : int64[k]
        Starting composition of ``n``; updated in place (final state on return).
    n_iter, burn_in, thin : int
        Total iterations, discarded iterations and thinning; draw ``d`` is iteration
        ``burn_in + d · thin``.
    max_shift : int
        Initial largest shift ``S``.
    state : uint64[4]
        xoshiro256** stream, advanced in place.
    x_out : int64[n_keep, k]
        Recorded latent counts (written).
    p_out : float64[n_keep, k]
        Recorded ``p ~ Dirichlet(γ + x)`` at the recorded iterations (written).

    Returns
    -------
    accepted, proposed : int
        Accepted and proposed moves after burn-in.
    max_shift : int
        The (frozen) largest shift used after burn-in.
    """
    k, width = table.shape
    scale = float(max_shift)
    window_acc = 0
    window_prop = 0
    accepted = 0
    proposed = 0
    d = 0
    for t in range(n_iter):
        shift_cap = max(1, int(scale + 0.5))
        acc = 0
        for _ in range(k):
            i = _randint(state, k)
            j = _randint(state, k - 1)
            if j >= i:
                j += 1
            s = 1 + _randint(state, shift_cap)
            if x[i] >= s:
                log_ratio = (
                    table[i, x[i] - s] - table[i, x[i]] + table[j, x[j] + s] - table[j, x[j]]
                )
                if log_ratio >= 0.0 or math.log(uniform(state)) < log_ratio:
                    x[i] -= s
                    x[j] += s
                    acc += 1
        if t < burn_in:
            window_acc += acc
            window_prop += k
            if window_prop >= 50 * k:
                rate = window_acc / window_prop
                scale = min(max(scale * math.exp(2.0 * (rate - 0.35)), 1.0), float(width - 1))
                window_acc = 0
                window_prop = 0
        else:
            accepted += acc
            proposed += k
            if (t - burn_in) % thin == 0 and d < x_out.shape[0]:
                _dirichlet_given_counts(state, prior, x, p_out[d])
                for c in range(k):
                    x_out[d, c] = x[c]
                d += 1
    return accepted, proposed, max(1, int(scale + 0.5))


# ---------------------------------------------------------------------------- binary Gibbs
@njit(cache=True, nogil=True, error_model="numpy")
def run_binary_gibbs(release_table, prior, x0, n_iter, burn_in, thin, state, x_out, p_out):
    """Gibbs sampler of the Beta-Binomial model with ``p̃`` integrated out.

    Alternates ``p | x ~ Beta(γ_1 + x, γ_2 + n − x)`` and
    ``x | p, x̃ ∝ Binomial(x; n, p) ∏_m DirMult(x̃_m; ñ, α + (x, n − x))``, the latter drawn
    exactly by enumerating ``x = 0 .. n`` in log space (Marcolin 2018, Algorithm 3, with the
    ``p̃_m`` collapsed).

    Parameters
    ----------
    release_table : float64[2, n + 1]
        From :func:`release_log_table` (column 0 successes, column 1 failures).
    prior : float64[2]
        ``(γ_1, γ_2)``.
    x0 : int
        Starting number of successes.
    n_iter, burn_in, thin : int
        As in :func:`run_pair_mh`.
    state : uint64[4]
        xoshiro256** stream, advanced in place.
    x_out : int64[n_keep, 2]
        Recorded ``(x, n − x)`` (written).
    p_out : float64[n_keep, 2]
        Recorded ``(p, 1 − p)`` (written).
    """
    n = release_table.shape[1] - 1
    base = np.empty(n + 1)
    log_w = np.empty(n + 1)
    lg_n = math.lgamma(n + 1.0)
    for v in range(n + 1):
        base[v] = (
            lg_n
            - math.lgamma(v + 1.0)
            - math.lgamma(n - v + 1.0)
            + release_table[0, v]
            + release_table[1, n - v]
        )
    x = x0
    d = 0
    for t in range(n_iter):
        a = gamma(state, prior[0] + x, 1.0)
        b = gamma(state, prior[1] + n - x, 1.0)
        total = a + b
        p = a / total
        log_p = math.log(a) - math.log(total) if a > 0.0 else _NEG_INF
        log_q = math.log(b) - math.log(total) if b > 0.0 else _NEG_INF
        top = _NEG_INF
        for v in range(n + 1):
            w = base[v] + _xlogy(v, log_p) + _xlogy(n - v, log_q)
            log_w[v] = w
            if w > top:
                top = w
        norm = 0.0
        for v in range(n + 1):
            norm += math.exp(log_w[v] - top)
        u = uniform(state) * norm
        cumulative = 0.0
        for v in range(n + 1):
            w = math.exp(log_w[v] - top)
            if w > 0.0:
                cumulative += w
                x = v
                if cumulative >= u:
                    break
        if t >= burn_in and (t - burn_in) % thin == 0 and d < x_out.shape[0]:
            x_out[d, 0] = x
            x_out[d, 1] = n - x
            p_out[d, 0] = p
            p_out[d, 1] = 1.0 - p
            d += 1


#: From this α on, :func:`_lgamma_difference` uses Stirling's series (its next term, below
#: 1/(360 α³), is under 1e-23) instead of a difference of two lgamma near α log α.
_STIRLING_FROM = 1e7


@njit(cache=True, nogil=True, error_model="numpy")
def _lgamma_difference(a, x, y):
    """Return ``lgamma(a + x) − lgamma(a + y)``, accurate also where ``a`` is huge (tiny ε).

    The two lgamma are near ``a log a`` (3e16 at a = 1e15), so their difference lost all its
    digits there. Stirling's series, ``lgamma(z) = (z − ½) log z − z + ½ log 2π + 1/(12z) −
    …``, gives the difference without those terms: with ``u = a + x``, ``w = a + y``,
    ``(w − ½) log1p((x − y)/w) + (x − y) log u − (x − y) + (1/u − 1/w)/12``.
    """
    if a < _STIRLING_FROM:
        return math.lgamma(a + x) - math.lgamma(a + y)
    u = a + x
    w = a + y
    d = x - y
    return (w - 0.5) * math.log1p(d / w) + d * math.log(u) - d + (1.0 / u - 1.0 / w) / 12.0


@njit(cache=True, nogil=True, error_model="numpy")
def _mhl_log_ratio(c, v, n, log_p, log_q, sum_log_pt, sum_log_qt, alpha, n_tables):
    """``log π(x = c | p, p̃) − log π(x = v | p, p̃)`` of the uncollapsed Beta-Binomial model."""
    return (
        math.lgamma(v + 1.0) - math.lgamma(c + 1.0)
        + math.lgamma(n - v + 1.0) - math.lgamma(n - c + 1.0)
        + _xlogy(c, log_p + sum_log_pt) - _xlogy(v, log_p + sum_log_pt)
        + _xlogy(n - c, log_q + sum_log_qt) - _xlogy(n - v, log_q + sum_log_qt)
        - n_tables * (_lgamma_difference(alpha[0], c, v)
                      + _lgamma_difference(alpha[1], n - c, n - v))
    )


@njit(cache=True, nogil=True, error_model="numpy")
def run_binary_mhl(
    successes, n, n_synth, alpha, prior, x0, half_width, n_iter, burn_in, thin, state, x_out, p_out
):
    """Marcolin's (2018) Algorithm 4, "MH-L": Gibbs for ``p`` and ``p̃_m``, a window MH step for x.

    Each iteration draws ``p ~ Beta(γ_1 + x, γ_2 + n − x)``, each
    ``p̃_m ~ Beta(α_1 + x̃_m + x, α_2 + ñ − x̃_m + n − x)``, proposes ``x' = x + U{−L, …, L}``
    and accepts with probability ``min(1, π(x' | p, p̃) / π(x | p, p̃))`` where
    ``π(x | p, p̃) ∝ Binomial(x; n, p) ∏_m Beta(p̃_m; α_1 + x, α_2 + n − x)``. Proposals outside
    ``0 .. n`` are rejected (which keeps the proposal symmetric, so no Hastings correction is
    needed at the borders). A proposal of ``x' = x`` counts as accepted.

    Parameters
    ----------
    successes : int64[M]
        Synthetic successes ``x̃_m``.
    n, n_synth : int
        Confidential and synthetic sizes.
    alpha, prior : float64[2]
        ``(α_1, α_2)`` and ``(γ_1, γ_2)``.
    x0 : int
        Starting number of successes.
    half_width : int
        ``L``.
    n_iter, burn_in, thin : int
        As in :func:`run_pair_mh`.
    state : uint64[4]
        xoshiro256** stream, advanced in place.
    x_out : int64[n_keep, 2]
        Recorded ``(x, n − x)`` (written).
    p_out : float64[n_keep, 2]
        Recorded ``(p, 1 − p)`` (written).

    Returns
    -------
    accepted, proposed : int
        After burn-in.
    """
    n_tables = successes.shape[0]
    x = x0
    d = 0
    accepted = 0
    proposed = 0
    for t in range(n_iter):
        a = gamma(state, prior[0] + x, 1.0)
        b = gamma(state, prior[1] + n - x, 1.0)
        total = a + b
        p = a / total
        log_p = math.log(a) - math.log(total) if a > 0.0 else _NEG_INF
        log_q = math.log(b) - math.log(total) if b > 0.0 else _NEG_INF
        sum_log_pt = 0.0
        sum_log_qt = 0.0
        for m in range(n_tables):
            g1 = gamma(state, alpha[0] + successes[m] + x, 1.0)
            g2 = gamma(state, alpha[1] + n_synth - successes[m] + n - x, 1.0)
            log_total = math.log(g1 + g2)
            if log_total == np.inf:  # α near 1e308: halve first (the chain stuck, ratios NaN)
                log_total = math.log(0.5 * g1 + 0.5 * g2) + math.log(2.0)
            sum_log_pt += math.log(g1) - log_total if g1 > 0.0 else _NEG_INF
            sum_log_qt += math.log(g2) - log_total if g2 > 0.0 else _NEG_INF
        step = _randint(state, 2 * half_width + 1) - half_width
        candidate = x + step
        acc = 0
        if step == 0:
            acc = 1
        elif 0 <= candidate <= n:
            log_ratio = _mhl_log_ratio(candidate, x, n, log_p, log_q, sum_log_pt, sum_log_qt,
                                       alpha, n_tables)
            if log_ratio >= 0.0 or math.log(uniform(state)) < log_ratio:
                x = candidate
                acc = 1
        if t >= burn_in:
            accepted += acc
            proposed += 1
            if (t - burn_in) % thin == 0 and d < x_out.shape[0]:
                x_out[d, 0] = x
                x_out[d, 1] = n - x
                p_out[d, 0] = p
                p_out[d, 1] = 1.0 - p
                d += 1
    return accepted, proposed


# ---------------------------------------------------------------------------- Algorithm 6
@njit(cache=True, nogil=True, error_model="numpy")
def run_adaptive_mh(
    synthetic, n, alpha, prior, x, n_iter, burn_in, thin, adapt_every, state, x_out, p_out
):
    """Marcolin's (2018) Algorithm 6: Gibbs for ``p``, ``p̃_m`` and an independence MH step for x.

    Each iteration draws ``p ~ Dirichlet(γ + x)``, each ``p̃_m ~ Dirichlet(α + x + x̃_m)`` (the
    thesis prints ``γ + x + x̃``, a typo), proposes ``x' ~ Multinomial(n, β)`` independently of
    ``x`` and accepts with probability ``min(1, π(x') q(x) / (π(x) q(x')))``, where
    ``π(x | p, p̃) ∝ Multinomial(x; n, p) ∏_m Dirichlet(p̃_m; α + x)`` and ``q`` is the
    Multinomial(n, β) pmf (the multinomial coefficients cancel). ``β`` starts uniform and, every
    ``adapt_every`` iterations *of the burn-in only*, becomes the mean of the ``p`` draws since
    the last update; the thesis adapts for the whole run, which breaks the Markov property of
    the recorded chain.

    Parameters
    ----------
    synthetic : int64[M, k]
        Synthetic tables.
    n : int
        Confidential total.
    alpha, prior : float64[k]
        ``α`` and ``γ``.
    x : int64[k]
        Starting composition; updated in place.
    n_iter, burn_in, thin : int
        As in :func:`run_pair_mh`.
    adapt_every : int
        Iterations between updates of ``β`` during burn-in (500 in the thesis).
    state : uint64[4]
        xoshiro256** stream, advanced in place.
    x_out : int64[n_keep, k]
        Recorded latent counts (written).
    p_out : float64[n_keep, k]
        Recorded ``p`` (written).

    Returns
    -------
    accepted, proposed : int
        After burn-in.
    """
    n_tables, k = synthetic.shape
    beta = np.full(k, 1.0 / k)
    log_beta = np.log(beta)
    cumulative_beta = np.empty(k)
    p_sum = np.zeros(k)
    p_count = 0
    shape = np.empty(k)
    log_p = np.empty(k)
    log_pt = np.empty(k)
    sum_log_pt = np.empty(k)
    candidate = np.empty(k, dtype=np.int64)
    d = 0
    accepted = 0
    proposed = 0
    for t in range(n_iter):
        for i in range(k):
            shape[i] = prior[i] + x[i]
        _dirichlet_log(state, shape, log_p)
        for i in range(k):
            sum_log_pt[i] = 0.0
        for m in range(n_tables):
            for i in range(k):
                shape[i] = alpha[i] + x[i] + synthetic[m, i]
            _dirichlet_log(state, shape, log_pt)
            for i in range(k):
                sum_log_pt[i] += log_pt[i]
        if t < burn_in:
            for i in range(k):
                p_sum[i] += math.exp(log_p[i])
            p_count += 1
            if p_count == adapt_every:
                total = 0.0
                for i in range(k):
                    beta[i] = max(p_sum[i] / p_count, 1e-12)
                    total += beta[i]
                for i in range(k):
                    beta[i] /= total
                    log_beta[i] = math.log(beta[i])
                    p_sum[i] = 0.0
                p_count = 0
        running = 0.0
        for i in range(k):
            running += beta[i]
            cumulative_beta[i] = running
        for i in range(k):
            candidate[i] = 0
        for _ in range(n):
            u = uniform(state) * running
            c = 0
            while c < k - 1 and cumulative_beta[c] < u:
                c += 1
            candidate[c] += 1
        log_ratio = 0.0
        for i in range(k):
            if candidate[i] != x[i]:
                log_ratio += (
                    _xlogy(candidate[i], log_p[i] + sum_log_pt[i] - log_beta[i])
                    - _xlogy(x[i], log_p[i] + sum_log_pt[i] - log_beta[i])
                    - n_tables * _lgamma_difference(alpha[i], candidate[i], x[i])
                )
        acc = 0
        if log_ratio >= 0.0 or math.log(uniform(state)) < log_ratio:
            for i in range(k):
                x[i] = candidate[i]
            acc = 1
        if t >= burn_in:
            accepted += acc
            proposed += 1
            if (t - burn_in) % thin == 0 and d < x_out.shape[0]:
                for i in range(k):
                    x_out[d, i] = x[i]
                    p_out[d, i] = math.exp(log_p[i])
                d += 1
    return accepted, proposed
