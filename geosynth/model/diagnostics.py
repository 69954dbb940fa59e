"""Rank-normalised split bulk ESS and R-hat of many parameters at once (Vehtari et al. 2021).

:func:`convergence_diagnostics` computes, for every column of a ``(chain, draw, parameter)``
array, the two numbers :func:`arviz.ess` (``method="bulk"``) and :func:`arviz.rhat`
(``method="rank"``) give, with arviz's own definitions step by step: chains split in halves
(the middle draw of an odd count dropped), ranks over all draws (ties averaged) normalised by
Blom's ``(r − 3/8)/(S + 1/4)``, the autocovariances (arviz takes them by FFT, padded to
``next_fast_len(2n)``), Geyer's initial positive and monotone sequences exactly as arviz
truncates them, and the larger of the bulk and the folded (``|x − median|``) R-hat.
``tests/model/test_diagnostics.py`` checks the results against arviz to 1e-10.

Why not arviz itself: arviz 0.23 evaluates these one parameter at a time in a Python loop, about
3.7 ms per parameter at 2 chains × 500 draws (measured on the 2-core benchmark machine), which
is 4.7 minutes for the 76,800 intensities λ_ib of a 6,400-cell lattice with 12 combinations.
Here a batch of parameters goes through one sort (for the ranks: a numba radix sort of float32
draws, NumPy's ``argsort`` of float64 ones) and two numba passes: one scores the ranks of the
draws and of the folded draws, whose order it merges from the sort's instead of sorting again;
the other sums each autocovariance directly, lag by lag, only as far as Geyer's truncation
reads them (a few lags for draws that mix in a few sweeps), and leaves the parameters that
need more than :data:`DIRECT_LAGS` to one FFT over their draws. :meth:`PaivaModel.fit` with
``n_iter="auto"`` runs this at every convergence check. Against
the NumPy sorts, scores and FFT of every lag before, a check is 2.4 times faster on 2 chains ×
1,536 float32 draws of white noise, 1.8 times at autocorrelation 0.9, 1.2 times at 0.99
(``bench/RESULTS.md``, 2026-11-29, nineteenth session).
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numpy as np
from numba import njit
from scipy import fft, special

from geosynth._validation import as_rectangular_array, is_integer, refuse_masked
from geosynth.errors import InputError, InputTypeError

__all__ = ["ConvergenceDiagnostics", "convergence_diagnostics"]

# Values a batch holds at once (chains x draws x parameters), so the float64 work arrays of a
# check stay near 64 MiB each whatever the lattice.
BATCH_VALUES = 2**23
_BLOM = 3.0 / 8.0
#: Lags whose autocovariances the ESS sums directly; a parameter whose autocorrelations stay
#: positive beyond them (an integrated autocorrelation time above ~30 draws) takes the FFT's.
#: At 4 split chains × 768 draws a lag costs ~0.3 µs and the FFT of every lag ~50 µs, so the
#: cap sits below the break-even (~150 lags): a parameter costs at most ~40 % more than by FFT.
DIRECT_LAGS = 64
_NEEDS_FFT = -1.0


class ConvergenceDiagnostics(NamedTuple):
    """Bulk ESS and rank-normalised split R-hat per parameter.

    Attributes
    ----------
    ess_bulk : numpy.ndarray of float64, shape (P,)
        NaN where arviz gives NaN (fewer than 4 draws per chain, or a NaN draw).
    r_hat : numpy.ndarray of float64, shape (P,)
        NaN where arviz gives NaN (fewer than 2 chains or 4 draws, a NaN draw, or a parameter
        that is constant over every draw); inf where each chain is constant but the chains
        differ (arviz 0.23: NaN), chains that have not moved at all, which no rule may pass.
    """

    ess_bulk: np.ndarray
    r_hat: np.ndarray


def convergence_diagnostics(draws: np.ndarray, workers: int = 1) -> ConvergenceDiagnostics:
    """Bulk ESS and rank R-hat of every parameter of ``draws``, as arviz computes them.

    Parameters
    ----------
    draws : numpy.ndarray, shape (chains, draws) or (chains, draws, P)
        Real numbers. float32 and float64 draws are ranked and folded in their own precision,
        the rest in float64, as arviz does; other dtypes are ranked and folded in float64
        (arviz folds float16 in float16, so its R-hat can differ in the third decimal). Extra
        trailing axes are flattened into P.
    workers : int, default 1
        Threads over batches of parameters (NumPy's sorts and FFTs release the GIL).

    Returns
    -------
    ConvergenceDiagnostics
        Arrays of shape (P,) (shape (1,) for a 2-d input).

    Raises
    ------
    geosynth.errors.InputError
        ``draws`` has fewer than 2 axes or no chain, holds chains of different lengths (a
        ragged sequence: NumPy's ValueError before), does not hold real numbers (complex
        draws lost their imaginary part, strings and objects failed deep in NumPy), or is a
        masked array with masked entries (their hidden values were used); or ``workers`` is
        below 1.
    TypeError
        ``workers`` is not an int.

    Examples
    --------
    >>> import numpy as np
    >>> from geosynth.model.diagnostics import convergence_diagnostics
    >>> rng = np.random.default_rng(0)
    >>> result = convergence_diagnostics(rng.normal(size=(4, 500, 3)))
    >>> bool((result.ess_bulk > 1500).all()), bool((result.r_hat < 1.01).all())
    (True, True)
    """
    refuse_masked(draws, "draws")
    if not is_integer(workers):
        raise InputTypeError(f"workers must be an int (threads), got {type(workers).__name__} "
                        f"{workers!r}")
    if workers < 1:  # 0 and -5 ran as one thread without a word
        raise InputError(f"workers must be an int >= 1 (threads), got {int(workers)}")
    workers = int(workers)  # np.uint8(2) overflowed in the batch arithmetic below
    try:
        draws = as_rectangular_array(draws, "draws")
    except InputError:
        raise InputError("draws holds chains of different lengths (a ragged sequence); the "
                         "diagnostics need the same number of draws in every chain: keep "
                         "each chain's first draws, as many as the shortest has") from None
    if draws.ndim < 2 or draws.shape[0] == 0:
        raise InputError(f"draws must have shape (chains, draws, ...) with at least one chain, "
                         f"got {draws.shape}")
    if draws.dtype.kind not in "biuf":
        raise InputError(f"draws must hold real numbers (bool, int or float), got dtype "
                         f"{draws.dtype}; pass the parameters' draws as floats")
    chains, n_draws = draws.shape[:2]
    # Not reshape(..., -1): with no draw (or no parameter) -1 is undefined.
    flat = draws.reshape(chains, n_draws, math.prod(draws.shape[2:]))
    n_params = flat.shape[2]
    ess = np.full(n_params, np.nan)
    rhat = np.full(n_params, np.nan)
    half = n_draws // 2
    if half < 2 or n_params == 0:  # arviz: at least 4 draws per chain
        return ConvergenceDiagnostics(ess, rhat)
    # The draws' own precision for the ranks and the folding, as arviz (float32 θ and η draws
    # folded in float64 would order some near-ties differently).
    dtype = draws.dtype if draws.dtype in (np.float32, np.float64) else np.float64
    # Equal batches, as many as the workers times the fewest rounds that keep each batch
    # within BATCH_VALUES (no worker idles on a short last batch).
    largest = max(1, BATCH_VALUES // (2 * chains * half))
    step = -(-n_params // (workers * -(-n_params // (workers * largest))))

    def batch(start: int) -> None:
        block = flat[:, :, start:start + step]
        # (parameter, split chain, draw): the first and the last half of every chain.
        split = np.concatenate([block[:, :half], block[:, n_draws - half:]], axis=0)
        values = np.ascontiguousarray(split.transpose(2, 0, 1), dtype=dtype)
        ess[start:start + step], rhat[start:start + step] = _bulk_and_rank(values, chains > 1)

    starts = range(0, n_params, step)
    if workers > 1 and len(starts) > 1:
        with ThreadPoolExecutor(max_workers=workers) as pool:
            list(pool.map(batch, starts))
    else:
        for start in starts:
            batch(start)
    return ConvergenceDiagnostics(ess, rhat)


def _bulk_and_rank(values: np.ndarray, with_rhat: bool) -> tuple[np.ndarray, np.ndarray]:
    """ESS and R-hat of ``values`` (P, split chains, n), NaN-free or NaN per parameter."""
    n_params = values.shape[0]
    flat = values.reshape(n_params, -1)
    has_nan = np.isnan(flat).any(axis=1)
    # Ties get their average rank: any order of equal values will do.
    if flat.dtype == np.float32:
        order = np.empty(flat.shape, dtype=np.int64)
        sorted_values = np.empty_like(flat)
        _radix_sort_rows(flat, order, sorted_values)
    else:
        order = np.argsort(flat, axis=1)
        sorted_values = np.take_along_axis(flat, order, axis=1)
    size = flat.shape[1]
    table = special.ndtri((np.arange(2 * size - 1) / 2.0 + 1.0 - _BLOM) / (size - 2 * _BLOM + 1))
    z = np.empty((n_params, size))
    z_folded = np.empty((n_params if with_rhat else 0, size))
    _normal_scores(sorted_values, order, table, z, z_folded)
    z = z.reshape(values.shape)
    ess = _ess(z)
    rhat = np.full(n_params, np.nan)
    if with_rhat:
        bulk = _rhat(z)
        tail = _rhat(z_folded.reshape(values.shape))
        # A median of ±inf or NaN (half the draws infinite, or a float32 sum that overflows)
        # makes some |x − median| NaN: arviz's folded R-hat is then NaN, so the bulk one wins.
        middle = size // 2
        with np.errstate(invalid="ignore", over="ignore"):
            median = (sorted_values[:, middle - 1] + sorted_values[:, middle]) / 2
        tail[~np.isfinite(median)] = np.nan
        rhat = np.where(tail > bulk, tail, bulk)  # Python's max(bulk, tail), as arviz
    ess[has_nan] = np.nan
    rhat[has_nan] = np.nan
    return ess, rhat


@njit(cache=True, nogil=True)
def _radix_sort_rows(values, order, sorted_values):
    """Sort each row of the C-contiguous float32 ``values`` by radix.

    The bits of a float32 map to a key that orders as the value does (a positive value's bits
    plus 2³¹, a negative one's complement; -0 just below +0, NaNs at either end: their rows
    give NaN anyway), and four stable counting passes over the key's bytes sort it, skipping a
    byte that every value of the row shares (the exponent's, often). The positions go to
    ``order[p]`` and the values to ``sorted_values[p]``. It replaces NumPy's ``argsort``, a
    comparison sort that took half of a check (29.8 ns a value with the gather of the sorted
    values, for rows of 3,072 draws, against 8.0 ns here; ``bench/RESULTS.md``, 2026-11-29,
    twentieth session); equal values keep their order, which their average rank ignores.
    """
    n_rows, size = values.shape
    bits = values.view(np.uint32)
    keys = np.empty(size, dtype=np.int64)
    spare_keys = np.empty(size, dtype=np.int64)
    index = np.empty(size, dtype=np.int64)
    spare_index = np.empty(size, dtype=np.int64)
    counts = np.empty((4, 256), dtype=np.int64)
    for p in range(n_rows):
        counts[:] = 0
        for t in range(size):
            word = np.int64(bits[p, t])
            key = word + 2**31 if word < 2**31 else 2**32 - 1 - word
            keys[t] = key
            index[t] = t
            for d in range(4):
                counts[d, (key >> (8 * d)) & 255] += 1
        source_keys, source_index = keys, index
        target_keys, target_index = spare_keys, spare_index
        for d in range(4):
            shift = 8 * d
            if counts[d, (source_keys[0] >> shift) & 255] == size:
                continue  # one byte value for the whole row: the pass would change nothing
            start = 0
            for digit in range(256):
                count = counts[d, digit]
                counts[d, digit] = start
                start += count
            for t in range(size):
                key = source_keys[t]
                digit = (key >> shift) & 255
                position = counts[d, digit]
                counts[d, digit] = position + 1
                target_keys[position] = key
                target_index[position] = source_index[t]
            source_keys, target_keys = target_keys, source_keys
            source_index, target_index = target_index, source_index
        for t in range(size):
            order[p, t] = source_index[t]
            sorted_values[p, t] = values[p, source_index[t]]


@njit(cache=True, nogil=True)
def _normal_scores(sorted_values, order, table, z, z_folded):
    """Blom scores of the average ranks of each row, and of its folded values ``|x − median|``.

    Row p of ``sorted_values`` holds a parameter's draws in increasing order and ``order[p]``
    their positions; the scores ``Φ⁻¹((r − 3/8)/(S + 1/4))`` of their average ranks r go to
    ``z[p]`` in the original order. A run of tied values at sorted positions ``first .. last``
    (0-based) has the average rank ``(first + last)/2 + 1``, so every score is
    ``table[first + last]`` (``table`` holds the ``2S − 1`` possible scores, so each is the
    same float as scoring it alone). When ``z_folded`` has rows, the scores of the folded draws
    go there: the folded values of the sorted draws fall (below the median) and then rise, so
    merging the two runs orders them in O(S) instead of a second sort. The median (of an even
    count: the split chains are halves) and the folding are computed in the draws' own dtype,
    as NumPy and arviz do.
    """
    n_params, size = sorted_values.shape
    middle = size // 2  # size = split chains × draws each, an even number
    identity = np.arange(size)
    merged = np.empty(size, dtype=np.int64)
    folded = np.empty(size, dtype=sorted_values.dtype)
    for p in range(n_params):
        values = sorted_values[p]
        positions = order[p]
        _scores_of_runs(values, positions, identity, table, z[p])
        if z_folded.shape[0] == 0:
            continue
        median = (values[middle - 1] + values[middle]) / values.dtype.type(2)
        below = 0
        while below < size and values[below] < median:
            below += 1
        left, right = below - 1, below
        for t in range(size):  # merge the falling and the rising run of |x − median|
            if left >= 0 and (right >= size
                              or abs(values[left] - median) <= abs(values[right] - median)):
                merged[t] = left
                left -= 1
            else:
                merged[t] = right
                right += 1
            folded[t] = abs(values[merged[t]] - median)
        _scores_of_runs(folded, positions, merged, table, z_folded[p])


@njit(cache=True, nogil=True)
def _scores_of_runs(values, positions, index, table, out):
    """``out[positions[index[t]]] = table[first + last]`` over each run of equal ``values``."""
    size = values.shape[0]
    first = 0
    while first < size:
        last = first
        while last + 1 < size and values[last + 1] == values[first]:
            last += 1
        score = table[first + last]
        for t in range(first, last + 1):
            out[positions[index[t]]] = score
        first = last + 1


def _rhat(z: np.ndarray) -> np.ndarray:
    """R-hat as arviz's ``_rhat``, of each (chains, n) slice of ``z`` (P, chains, n)."""
    n = z.shape[2]
    chain_mean = z.mean(axis=2)
    chain_var = z.var(axis=2, ddof=1)
    between = n * chain_mean.var(axis=1, ddof=1)
    within = chain_var.mean(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.sqrt((between / within + n - 1) / n)


def _ess(z: np.ndarray) -> np.ndarray:
    """ESS as arviz's ``_ess``, of each (chains, n) slice of ``z`` (P, chains, n).

    The autocovariances are summed lag by lag (:func:`_geyer_ess`) where the draws mix within
    :data:`DIRECT_LAGS` lags, and taken by FFT, as arviz does, for the rows that need more.
    """
    ess = _geyer_ess(z, np.empty((0, 0)), DIRECT_LAGS)
    slow = np.flatnonzero(ess == _NEEDS_FFT)
    if slow.size:
        ess[slow] = _geyer_ess(z[slow], _mean_autocovariances(z[slow]), z.shape[2])
    return ess


def _mean_autocovariances(z: np.ndarray) -> np.ndarray:
    """``(P, n)`` mean over chains of every biased autocovariance, by FFT (as arviz)."""
    n = z.shape[2]
    length = fft.next_fast_len(2 * n, real=True)
    centred = z - z.mean(axis=2, keepdims=True)
    spectrum = np.fft.rfft(centred, n=length, axis=2)
    spectrum *= np.conjugate(spectrum)
    return (np.fft.irfft(spectrum, n=length, axis=2)[:, :, :n] / n).mean(axis=1)


@njit(cache=True, nogil=True, error_model="numpy")  # 0/0 gives NaN, as NumPy
def _geyer_ess(z, autocovariances, max_lag):
    """Bulk ESS of each (chains, n) slice of ``z`` by arviz's truncation of the autocorrelations.

    arviz's loop over lags t = 1, 3, 5, ... computes the pair sums P_k = ρ_2k + ρ_2k+1 for
    k = 1, 2, ... while the previous pair sum is positive and 2k − 1 < n − 3; it stops at the
    first k_e with P_k ≤ 0 (or at the last k allowed), writes that pair only if P_k ≥ 0, then
    makes the pair sums before it monotone (a running minimum) and adds the even value of the
    last pair when it is positive (or was written). Only the lags up to where it stops are
    needed: a few for draws that mix in a few sweeps. ``autocovariances`` (P, n) gives them
    (by FFT, :func:`_mean_autocovariances`); when it has no rows each is summed directly, and
    a row whose loop would pass ``max_lag`` gets :data:`_NEEDS_FFT` instead of its ESS. Both
    give the same numbers to rounding (``tests/model/test_diagnostics.py``: 1e-10 of arviz's).
    """
    n_params, chains, n = z.shape
    size = chains * n
    k_max = max((n - 3) // 2, 0)  # last pair index the loop may compute
    floor = 1.0 / np.log10(size)
    resolution = np.finfo(np.float64).resolution
    centred = np.empty((chains, n))
    means = np.empty(chains)
    ess = np.empty(n_params)
    for p in range(n_params):
        low, high = np.inf, -np.inf
        for c in range(chains):
            total = 0.0
            for i in range(n):
                value = z[p, c, i]
                total += value
                low, high = min(low, value), max(high, value)
            means[c] = total / n
            for i in range(n):
                centred[c, i] = z[p, c, i] - means[c]
        if high - low < resolution:  # constant: arviz's ESS is the number of draws
            ess[p] = size
            continue
        mean_var = _autocovariance(centred, autocovariances, p, 0) * n / (n - 1.0)
        grand = means.mean()
        between = 0.0
        for c in range(chains):
            between += (means[c] - grand) ** 2
        var_plus = mean_var * (n - 1.0) / n + between / (chains - 1)
        rho_odd = 1.0 - (mean_var - _autocovariance(centred, autocovariances, p, 1)) / var_plus
        if np.isnan(rho_odd):
            ess[p] = np.nan
            continue
        rho_even = 1.0
        pair = rho_even + rho_odd  # P_0
        running, pair_sum, k = pair, 0.0, 0
        needs_fft = False
        while pair > 0 and k < k_max:  # P_k > 0 enters the sum: on to P_k+1
            if 2 * k + 3 > max_lag:  # never with max_lag = n
                needs_fft = True
                break
            pair_sum += running
            k += 1
            even = _autocovariance(centred, autocovariances, p, 2 * k)
            odd = _autocovariance(centred, autocovariances, p, 2 * k + 1)
            rho_even = 1.0 - (mean_var - even) / var_plus
            rho_odd = 1.0 - (mean_var - odd) / var_plus
            pair = rho_even + rho_odd
            running = min(running, pair)
        if needs_fft:
            ess[p] = _NEEDS_FFT
            continue
        extra = rho_even if (rho_even > 0 or pair >= 0 or k == 0) else 0.0
        ess[p] = size / max(-1.0 + 2.0 * pair_sum + extra, floor)
    return ess


@njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
def _autocovariance(centred, autocovariances, p, lag):
    """Mean over chains of ``Σ_i c_i c_{i+lag} / n``, the biased autocovariance at ``lag``.

    ``autocovariances[p, lag]``, or summed from ``centred`` when ``autocovariances`` has no
    rows. The direct sums may be reassociated (so that LLVM vectorises them): they differ from the
    FFT's, as the FFT's from the naive sum, by rounding.
    """
    if autocovariances.shape[0]:
        return autocovariances[p, lag]
    chains, n = centred.shape
    total = 0.0
    for c in range(chains):
        s = 0.0
        for i in range(n - lag):
            s += centred[c, i] * centred[c, i + lag]
        total += s / n
    return total / chains
