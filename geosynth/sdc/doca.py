"""DOCA: differentially private publication of a numeric data stream by online microaggregation.

:class:`Doca` implements DOCA (*Differential Privacy Online Clustering and Anonymization*) of Leal,
Vidal & Machado (2018, §3, Algorithms 1–2): every record of a stream joins an online
cluster (Algorithm 2, *BestSelection*); when a record reaches the delay constraint its whole
cluster is published as the cluster's centroid plus *one* Laplace draw of scale
``Δc/ε = Δf/(|C|·ε)`` shared by all its members (§3.2, after Soria-Comas & Domingo-Ferrer 2017),
and the cluster is removed from memory.

The algorithm, as implemented
-----------------------------
Records arrive at times ``t = 0, 1, 2, ...`` (one record is one time unit, §3.2). For each record
``r`` (Algorithm 1):

1. the global range ``[min_t, max_t]`` of every attribute is updated with ``r`` (line 3);
2. *BestSelection* (Algorithm 2) picks a cluster among those in memory ``C``: the clusters whose
   *enlargement* (increase of the information loss when ``r`` joins) is minimal form ``C_min``;
   those of ``C_min`` whose information loss *with* ``r`` is strictly below ``τ`` form ``C_best``.
   If ``C_best`` is not empty the smallest cluster of ``C_best`` is chosen; otherwise a new
   cluster is created if fewer than ``β`` (``max_clusters``) are in memory, else the smallest
   cluster of ``C_min`` is chosen. Ties in size go to the cluster created first;
3. ``r`` joins the chosen cluster (line 5);
4. the record that arrived at ``t − δ`` (``δ`` = ``delay``), if it is still in memory, expires
   (lines 6–8): its cluster ``c_e`` is published. Its information loss (with the global range of
   step 1) is appended to ``I`` and ``τ`` becomes the mean of the last ``m`` (``tau_window``)
   values of ``I`` (lines 9–11). Then (§3.2) every member is released as ``χ + η`` with ``χ``
   the centroid (mean) of the cluster and ``η ~ Laplace(0, Δf/(|c_e|·ε))`` drawn once, and the
   cluster and its records are removed.

The information loss of a cluster is its range divided by the global range seen so far,
``IL(c) = (max(c) − min(c)) / (max_t − min_t)``; for ``d`` attributes it is the mean of that
ratio over the attributes (an attribute whose global range is still 0 contributes 0, as in the
authors' code). The enlargement is ``IL(c ∪ {r}) − IL(c)``.

Every record is therefore published at most ``δ`` arrivals after its own, at most ``β`` clusters
and at most ``δ`` pending records (plus the arriving one) are ever held, and memory is
``O(δ + β·d)`` whatever the length of the stream.

Ambiguities in the paper and our choices
----------------------------------------
* **When a record expires.** The paper only says that a tuple "reached the delay constraint" and
  that never more than ``δ`` tuples are in processing. As in CASTLE (Cao et al. 2011), which
  DOCA varies, and in the authors' published code (``offset == t − delta``), the record that
  arrived at ``t − δ`` expires while the record of time ``t`` is processed (after that record
  joined its cluster). A record is thus published at most ``δ`` arrivals after its own, and
  with ``delay=1`` records can still pair up with their successor.
* **τ before ``m`` clusters are published.** ``τ = 0`` until the first publication (line 1), then
  the mean of all information losses so far until there are ``m`` of them, then the mean of the
  last ``m``. Because the test is strict (``IL < τ``, Algorithm 2 line 10), while ``τ = 0`` no
  cluster qualifies, so the first ``β`` records (all distinct in a generic stream) open ``β``
  clusters. The authors' code tests ``<=`` instead; we follow the paper (see the test with a
  constant stream, where the two differ).
* **Enlargement in floating point.** We compute ``Σ_j (range_j(c ∪ r) − range_j(c)) /
  (d·G_j)``, mathematically equal to ``IL(c ∪ r) − IL(c)`` and exactly 0 when ``r`` lies inside
  the cluster's box; ``C_min`` is the set of clusters whose value equals the minimum exactly.
* **Order of the expiry and the insertion.** As in Algorithm 1, the arriving record joins a
  cluster *before* the expiring cluster is published, so it may be published at once with it.
* **End of the stream.** The paper's stream is unbounded; :meth:`Doca.flush` publishes the
  clusters still in memory one by one in the order in which their oldest records would expire
  (the authors' code uses creation order), each with its own noise draw, updating ``τ`` too.
* **Typos in the paper.** Algorithm 1's input list (``S, Δf, β, m, ε``) omits the delay
  constraint ``δ`` that line 6 uses; and §3.1's "Algoritmo 2 nas linhas 3 a 5" means
  Algorithm 1, lines 3–5 (Algorithm 2 is *BestSelection*, called on line 4).

Multivariate records (the paper's future work (i))
--------------------------------------------------
Records may be tuples of ``d`` numeric attributes (an ``(n, d)`` array, e.g. ``x`` and ``y``).
Ranges, information loss and enlargement are taken per attribute and averaged; the centroid is
the mean per attribute and each attribute gets its own Laplace draw (all members share the
``d`` draws) of scale ``d·Δf_j/(|C|·ε)``: the budget ``ε`` is split evenly across the ``d``
attributes so that the ``d`` releases compose to ``ε`` (sequential composition, since one person
changes all attributes of their record). For ``d = 1`` this is the paper's scale ``Δf/(|C|·ε)``.
Pass ``epsilon = d·ε`` to spend ``ε`` per attribute instead.

What guarantee holds
--------------------
Read this before relying on DOCA:

* ``Δc = Δf/|C|`` is the sensitivity of a cluster's centroid **if the clusters (their members and
  sizes) do not depend on the data**, so that replacing one record changes one member of one
  cluster. Soria-Comas & Domingo-Ferrer (2017) obtain that with an *insensitive*
  microaggregation. DOCA's clustering depends on the values (enlargement, ``τ``, the global
  range), so one changed record can change which clusters form, their sizes and when they are
  published; the released cluster sizes (members share one value) and the noise scales depend
  on the data too. The ε-DP claim of the paper therefore holds only *conditionally on the
  clustering*; the release as a whole is **not** proven ε-differentially private.
* ``Δf`` must bound how much one record's value can change: the width of the attribute's public
  domain. Pass that domain as ``bounds=(lo, hi)``: records are clamped into it (as diffprivlib
  does), and ``Δf = hi − lo``. Given only a ``sensitivity``, a chunk of the stream that would
  make the records' range wider than ``Δf`` is refused before it is processed: an outlier far
  outside the domain would otherwise come out almost exactly (a record of 123,456 among values
  in [0, 1] at ``Δf = 1`` was released as 41,152 in a cluster of three). That window is no
  domain: two neighbouring streams whose ranges are both at most ``Δf`` can differ in one
  record by up to ``2·Δf`` (1, 1, 1, 0 and 1, 1, 1, 2 at ``Δf = 1``), so the noise of scale
  ``Δf/(|C|·ε)`` is ``2ε``-DP (conditionally on the clustering), and whether a chunk is
  refused depends on the records. Without ``bounds`` the accountant is therefore charged
  ``2ε``, with a :class:`~geosynth.errors.PrivacyLeakWarning`, and a stream of a single record
  is not published (it has no range: any value passed, 123,456 came out as 123,455.97 at
  ``Δf = 1``). The paper's choice
  ``Δf = 1.5·(max − min)`` of the data itself is data-dependent and leaks the range; fix the
  domain from public knowledge instead.
* Noise is drawn in floating point (difference of two exponentials from xoshiro256** uniforms):
  it is **not hardened against Mironov's (2012) floating-point attack**, which can reveal the
  exact centroid from the low-order bits of a release. Other parts of geosynth use OpenDP's
  hardened samplers for releases that need that protection. Worse than low-order bits: a noise
  scale within a few float steps of the values' magnitude (a huge ``ε``, or values far from 0
  such as timestamps with a small ``Δf``) rounds ``χ + η`` back to ``χ`` itself, a lone
  record's own value. A chunk is therefore refused when the smallest noise scale
  ``d·Δf_j/((δ+1)·ε)`` is below ``2**20`` float steps (:func:`numpy.spacing`) of the largest
  ``|value|`` of attribute ``j`` seen: a Laplace draw of scale ``b`` lands within half a step
  ``u`` of 0 with probability ``1 − exp(−u/(2b)) < u/(2b)``, below ``2**-21`` there.
* **Budget accounting.** With ``accountant=`` (a :class:`geosynth.dp.accountant.Accountant`) a
  stream is charged ``ε`` (``2ε`` without ``bounds``, above) *once* (label ``"DOCA"``), before its
  first record enters a cluster, hence before any noise is drawn; a spend the budget cannot pay
  raises :class:`~geosynth.errors.BudgetExceededError` and nothing is processed or released. Not
  ``ε`` per published cluster: each record is in exactly one cluster, and a changed record changes
  one member of one cluster, whose release is ``ε``-DP for the centroid's sensitivity ``Δf/|C|``,
  so the releases of the disjoint clusters compose in parallel to ``ε`` (§3.2; McSherry 2009) —
  the paper's claim, with the caveat of the first point: it holds conditionally on the clustering,
  which depends on the data, so the ledger records the paper's nominal ε (2ε without bounds), not
  a proven guarantee (nor one for add/remove-one neighbours, which change a cluster's size).
  Records fed after :meth:`Doca.flush` continue the stream (new records, new clusters) and cost
  nothing more. Each :meth:`Doca.fit_transform` starts a new stream and is charged again
  (sequential composition: it may hold the same people). The guarantee is per record (event
  level, as the paper's): a person behind ``k`` records of a stream — the same records fed
  again after a flush among them — is protected at ``kε`` only (2,000 feeds of one array
  averaged its releases to within 0.06 of the records at ``ε = 1``); feed each record once.
  A copy (:func:`copy.copy`, :func:`copy.deepcopy`) shares the accountant and is charged again
  when it next draws noise: it releases the pending records and the rest of the stream a second
  time. A pickled copy carries a copy of the accountant, with a ledger of its own.
* Noise comes from fresh OS entropy by default. A ``seed`` makes the noise reproducible (hence
  predictable) and is accepted only for tests; it issues
  :class:`~geosynth.errors.PrivacyLeakWarning`. The diagnostics of
  :meth:`Doca.fit_transform` expose the noise (hence the exact centroids) and warn likewise.
* Two objects must never draw the same noise for different data: the differences of their
  releases would be the exact differences of the centroids (a lone record's value when the
  other's is known). A copied or unpickled :class:`Doca` made with ``seed=None`` therefore
  draws fresh OS entropy (the noise state is never pickled); a seeded one keeps its seed's
  stream. A process forked by ``os.fork`` (``multiprocessing``'s default on Linux) copies the
  memory as is: create the :class:`Doca` in each worker instead.

Evaluation (§4, Table 1)
------------------------
:func:`mse`, :func:`histogram_intersection` (100 bins), :func:`naive_laplace` (the per-record
Laplace(Δf/ε) baseline) and :func:`simulate_skewed_stream` (a stand-in for the BackBlaze
``smart_9_raw`` stream, not available offline) are the measures and data of the paper's
evaluation. The reproduction of its Table 1 (``docs/results_doca.md``) is a study outside the
package: ``python -m studies.doca_table1`` from the repository root.
"""

from __future__ import annotations

import copy
import math
import numbers
import warnings
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from itertools import islice

import numpy as np
from numba import njit

from geosynth._identifiers import is_identifier_name
from geosynth._random import SeedLike, as_generator
from geosynth._validation import (
    MAX_CONTINUOUS,
    check_bool,
    check_epsilon,
    check_int,
    check_optional_str,
    check_positive,
    check_real,
    check_real_array,
    check_unique_columns,
    describe_value,
    refuse_masked,
)
from geosynth.errors import (
    DataWarning,
    InputError,
    InputTypeError,
    MemoryLimitError,
    PrivacyLeakWarning,
)
from geosynth.samplers.rng import make_streams, standard_exponential

__all__ = [
    "Doca",
    "DocaDiagnostics",
    "mse",
    "histogram_intersection",
    "naive_laplace",
    "simulate_skewed_stream",
    "beta_shape_for_skewness",
    "MAX_STATE_BYTES",
]

#: Largest memory (bytes) :class:`Doca` allocates for its state (ring buffer of ``delay + 1``
#: pending records, ``max_clusters`` clusters and the ``tau_window`` last losses); larger
#: requests raise :class:`~geosynth.errors.MemoryLimitError` before allocating.
MAX_STATE_BYTES = 2**30

# A Laplace draw is scale·(E₁ − E₂) with E an exponential of a 64-bit uniform (below 45): a
# noise scale whose product with this stays finite cannot overflow.
_MAX_EXPONENTIAL = 64.0

# Largest second Beta shape beta_shape_for_skewness searches (the bracket of its root finder).
_MAX_BETA_SHAPE = 1e6

# Slots of the int64 counter array of the kernel state.
_T = 0  # arrival index of the next record
_N_ACTIVE = 1  # clusters in memory
_MAX_USED = 2  # most clusters ever in memory at once
_N_PUBLISHED = 3  # published clusters = Laplace draws (one d-vector each)
_N_IL = 4  # information losses appended to I
_N_PENDING = 5  # records in memory
_N_COUNTERS = 6

_DEFAULT_CHUNK = 65_536

# The smallest noise scale must span this many float steps of the values (module docs).
_MIN_NOISE_STEPS = 2.0**20

# --------------------------------------------------------------------------------------------
# numba kernels
# --------------------------------------------------------------------------------------------


@njit(cache=True, error_model="numpy")
def _best_selection(x, i, n_active, beta, tau, c_min, c_max, c_size, c_order, inv_g):
    """Algorithm 2: the chosen cluster slot, or -1 when a new cluster must be created.

    ``inv_g[j]`` is ``1 / (d · G_j)`` (0 when the global range ``G_j`` is 0), so that sums over
    attributes are means of per-attribute ratios.
    """
    d = x.shape[1]
    e_min = math.inf
    k_min = -1  # smallest cluster of C_min (first created on ties)
    k_best = -1  # smallest cluster of C_best
    for idx in range(n_active):
        k = c_order[idx]
        enlargement = 0.0
        il_test = 0.0
        for j in range(d):
            v = x[i, j]
            lo = c_min[k, j]
            hi = c_max[k, j]
            new_lo = v if v < lo else lo
            new_hi = v if v > hi else hi
            w = inv_g[j]
            il_test += (new_hi - new_lo) * w
            # What the range grows by, each side apart: a difference of ranges rounded equal
            # growths apart (0.1000...03 against 0.0999...98 for two clusters sharing their
            # upper bound), and ties went to the widest cluster, not the smallest.
            enlargement += ((lo - new_lo) + (new_hi - hi)) * w
        ok = il_test < tau
        if enlargement < e_min:
            e_min = enlargement
            k_min = k
            k_best = k if ok else -1
        elif enlargement == e_min:
            if c_size[k] < c_size[k_min]:
                k_min = k
            if ok and (k_best < 0 or c_size[k] < c_size[k_best]):
                k_best = k
    if k_best >= 0:
        return k_best
    if n_active < beta:
        return -1
    if k_min < 0:  # only reachable with non-finite enlargements (overflowing ranges)
        return c_order[0]
    return k_min


@njit(cache=True, error_model="numpy")
def _publish(k, t_pub, scale, counters, fstate, inv_g, c_min, c_max, c_sum, c_size, c_head,
             c_order, r_index, r_cluster, r_next, il_hist, rng_state, out_index, out_value,
             out_time, out_cluster, n_out, cl_size, cl_noise, n_cl):
    """Publish cluster slot ``k`` (Algorithm 1 lines 9–11 and §3.2); return ``(n_out, n_cl)``."""
    d = c_min.shape[1]
    size = c_size[k]
    # Lines 9-11: information loss of c_e with the current global range; tau = mean of last m.
    il = 0.0
    for j in range(d):
        il += (c_max[k, j] - c_min[k, j]) * inv_g[j]
    m = il_hist.shape[0]
    n_il = counters[_N_IL]
    il_hist[n_il % m] = il
    n_il += 1
    counters[_N_IL] = n_il
    count = n_il if n_il < m else m
    total = 0.0
    for q in range(count):
        total += il_hist[q]
    fstate[0] = total / count
    # Section 3.2: one Laplace(0, scale_j / |C|) draw per attribute, shared by all members.
    for j in range(d):
        laplace = standard_exponential(rng_state) - standard_exponential(rng_state)
        cl_noise[n_cl, j] = scale[j] / size * laplace
    cl_size[n_cl] = size
    serial = counters[_N_PUBLISHED]
    pos = c_head[k]
    while pos >= 0:
        out_index[n_out] = r_index[pos]
        for j in range(d):
            out_value[n_out, j] = c_sum[k, j] / size + cl_noise[n_cl, j]
        out_time[n_out] = t_pub
        out_cluster[n_out] = serial
        r_cluster[pos] = -1
        n_out += 1
        pos = r_next[pos]
    counters[_N_PUBLISHED] = serial + 1
    counters[_N_PENDING] -= size
    # Remove the cluster, keeping the others in creation order.
    n_active = counters[_N_ACTIVE]
    found = False
    for idx in range(n_active):
        if found:
            c_order[idx - 1] = c_order[idx]
        elif c_order[idx] == k:
            found = True
    counters[_N_ACTIVE] = n_active - 1
    c_size[k] = 0
    c_head[k] = -1
    for j in range(d):  # a freed slot kept its exact min, max and sum (in pickles too)
        c_min[k, j] = 0.0
        c_max[k, j] = 0.0
        c_sum[k, j] = 0.0
    return n_out, n_cl + 1


@njit(cache=True, error_model="numpy")
def _doca_kernel(x, delay, beta, scale, counters, fstate, g_min, g_max, inv_g, c_min, c_max,
                 c_sum, c_size, c_head, c_tail, c_order, r_index, r_cluster, r_next, il_hist,
                 rng_state, out_index, out_value, out_time, out_cluster, cl_size, cl_noise):
    """Run Algorithm 1 over the records ``x`` (n, d); return ``(n_out, n_cl)`` written."""
    n, d = x.shape
    ring = r_index.shape[0]
    n_out = 0
    n_cl = 0
    for i in range(n):
        t = counters[_T]
        # Line 3: global range.
        for j in range(d):
            v = x[i, j]
            if v < g_min[j]:
                g_min[j] = v
            if v > g_max[j]:
                g_max[j] = v
        for j in range(d):
            g = g_max[j] - g_min[j]
            inv_g[j] = 1.0 / (g * d) if g > 0.0 else 0.0
        # Line 4: BestSelection.
        n_active = counters[_N_ACTIVE]
        k = _best_selection(x, i, n_active, beta, fstate[0], c_min, c_max, c_size, c_order,
                            inv_g)
        if k < 0:  # Algorithm 2 lines 12-14: a new cluster.
            k = 0
            while c_size[k] > 0:
                k += 1
            c_order[n_active] = k
            counters[_N_ACTIVE] = n_active + 1
            if n_active + 1 > counters[_MAX_USED]:
                counters[_MAX_USED] = n_active + 1
            for j in range(d):
                c_min[k, j] = x[i, j]
                c_max[k, j] = x[i, j]
                c_sum[k, j] = 0.0
        # Line 5: add r to the cluster.
        pos = t % ring
        r_index[pos] = t
        r_cluster[pos] = k
        r_next[pos] = -1
        if c_size[k] == 0:
            c_head[k] = pos
        else:
            r_next[c_tail[k]] = pos
        c_tail[k] = pos
        c_size[k] += 1
        for j in range(d):
            v = x[i, j]
            if v < c_min[k, j]:
                c_min[k, j] = v
            if v > c_max[k, j]:
                c_max[k, j] = v
            c_sum[k, j] += v
        counters[_N_PENDING] += 1
        counters[_T] = t + 1
        # Lines 6-11 and step 2: the record of time t - delay expires.
        expiring = t - delay
        if expiring >= 0:
            epos = expiring % ring
            if r_cluster[epos] >= 0 and r_index[epos] == expiring:
                n_out, n_cl = _publish(r_cluster[epos], t, scale, counters, fstate, inv_g,
                                       c_min, c_max, c_sum, c_size, c_head, c_order, r_index,
                                       r_cluster, r_next, il_hist, rng_state, out_index,
                                       out_value, out_time, out_cluster, n_out, cl_size,
                                       cl_noise, n_cl)
    return n_out, n_cl


@njit(cache=True, error_model="numpy")
def _doca_flush(scale, counters, fstate, inv_g, c_min, c_max, c_sum, c_size, c_head, c_order,
                r_index, r_cluster, r_next, il_hist, rng_state, out_index, out_value, out_time,
                out_cluster, cl_size, cl_noise):
    """Publish every cluster in memory, oldest pending record first; return ``(n_out, n_cl)``."""
    n_records = counters[_T]
    ring = r_index.shape[0]
    n_out = 0
    n_cl = 0
    start = n_records - ring if n_records > ring else 0
    for a in range(start, n_records):
        pos = a % ring
        if r_cluster[pos] >= 0 and r_index[pos] == a:
            n_out, n_cl = _publish(r_cluster[pos], n_records - 1, scale, counters, fstate,
                                   inv_g, c_min, c_max, c_sum, c_size, c_head, c_order,
                                   r_index, r_cluster, r_next, il_hist, rng_state, out_index,
                                   out_value, out_time, out_cluster, n_out, cl_size, cl_noise,
                                   n_cl)
    return n_out, n_cl


# --------------------------------------------------------------------------------------------
# validation helpers
# --------------------------------------------------------------------------------------------


def _check_sensitivity(sensitivity: object) -> np.ndarray:
    values = _numbers(sensitivity, "sensitivity")
    if values is None or values.ndim > 1 or values.size == 0 or isinstance(sensitivity, bool):
        raise InputError(
            f"sensitivity must be a number or a 1-D sequence with one number per attribute, got "
            f"{sensitivity!r}"
        )
    if not np.all(np.isfinite(values)) or np.any(values <= 0.0):
        raise InputError(
            f"sensitivity must be finite and > 0 (the largest change of one record's value, e.g. "
            f"the width of the attribute's public domain), got {sensitivity!r}"
        )
    return values


def _numbers(value: object, name: str) -> np.ndarray | None:
    """``value`` as a float64 array if it holds only real numbers (int, float), else None.

    Text (``"1e3"``), booleans, complex numbers, mappings and ragged sequences are not numbers
    here: ``numpy.asarray(..., dtype=float)`` would turn the first into 1000.0, ``True`` into 1.0
    (as ``_validation.check_real`` refuses ``epsilon=True``) and drop the imaginary part of
    complex numbers. An int beyond the float range raises :class:`~geosynth.errors.InputError`
    naming ``name`` (not the value, which may be a record): it was a raw ``OverflowError``.
    """
    if isinstance(value, str | bytes | Mapping):
        return None
    try:
        array = np.asarray(value)
        if isinstance(value, list | tuple) and array.dtype.kind in "biuf":
            # NumPy converts the entries by value: (True, 5.0) became [1.0, 5.0]; as objects,
            # each entry is checked below.
            array = np.asarray(value, dtype=object)
    except ValueError:  # ragged
        return None
    if array.dtype.kind == "O":
        flat = array.ravel().tolist()
        if not all(isinstance(v, numbers.Real | Decimal) and not isinstance(v, bool | np.bool_)
                   for v in flat):  # Fraction too
            return None
    elif array.dtype.kind not in "iuf":
        return None
    try:
        return array.astype(float)
    except OverflowError:
        raise InputError(
            f"{name} holds an int beyond the float range (about ±1.8e308); check it for an "
            "overflow, or rescale the attribute"
        ) from None


def _check_bounds(bounds: object) -> tuple[np.ndarray, np.ndarray]:
    """Return the public domain ``(lo, hi)``: scalars or one per attribute, finite, lo < hi."""
    pair = _numbers(bounds, "bounds")
    if pair is None or pair.ndim not in (1, 2) or pair.shape[0] != 2 or pair.size == 0:
        raise InputError(
            f"bounds must be a pair (lo, hi) of numbers, or of sequences with one number per "
            f"attribute, got {bounds!r}"
        )
    lo, hi = pair[0], pair[1]
    if not (np.all(np.abs(pair) <= MAX_CONTINUOUS) and np.all(lo < hi)):
        raise InputError(
            f"bounds must hold finite numbers within ±{MAX_CONTINUOUS:g} with lo < hi (the public "
            f"domain of each attribute), got {bounds!r}"
        )
    return lo, hi


def _warn_if_bounds_transposed(
    bounds: tuple[np.ndarray, np.ndarray], records: np.ndarray, stacklevel: int = 3
) -> None:
    """Warn when two attributes' ``bounds`` look given as one ``(lo, hi)`` pair per attribute.

    ``bounds=[[x_lo, x_hi], [y_lo, y_hi]]`` reads as ``lo = (x_lo, x_hi)``, ``hi = (y_lo, y_hi)``
    (diffprivlib's convention): for projected coordinates (eastings far below northings) that
    is a valid domain which holds the records, far wider than meant, so the release is ε-DP and
    mostly noise. The tell: every record lies in the other reading's box, at most a hundredth
    of the domain's area. The warning goes to the curator, not into the release.
    """
    lo, hi = bounds
    if records.shape[1] != 2 or lo.shape != (2,) or not (lo[0] < lo[1] and hi[0] < hi[1]):
        return
    other_lo, other_hi = np.array([lo[0], hi[0]]), np.array([lo[1], hi[1]])
    inside = np.all((records >= other_lo) & (records <= other_hi))
    if inside and np.prod(other_hi - other_lo) <= 0.01 * np.prod(hi - lo):
        warnings.warn(
            DataWarning(
                f"bounds are read as (lo, hi) = ({lo.tolist()}, {hi.tolist()}): attribute 0 "
                f"in [{lo[0]:g}, {hi[0]:g}], attribute 1 in [{lo[1]:g}, {hi[1]:g}], a domain "
                "over 100 times the area of the box every record lies in; if you meant one "
                f"(lo, hi) pair per attribute, pass bounds=({other_lo.tolist()}, "
                f"{other_hi.tolist()}) (the noise scales with the domain's width)"
            ),
            stacklevel=stacklevel,
        )


def _stream_cost(epsilon: float, bounds: tuple[np.ndarray, np.ndarray] | None) -> float:
    """Return the ε a stream costs: ``epsilon``, twice that without public ``bounds``.

    Without bounds two neighbouring streams, each of range at most Δf, can differ in one record
    by up to 2·Δf (module docs, "What guarantee holds").
    """
    return epsilon if bounds is not None else 2.0 * epsilon


def _warn_without_bounds(what: str) -> None:
    """PrivacyLeakWarning for a release given a sensitivity but no public domain."""
    warnings.warn(
        PrivacyLeakWarning(
            f"{what} without bounds: two neighbouring inputs, each of range at most "
            "sensitivity=Δf, can differ in one record by up to 2·Δf, so the noise is 2ε-DP "
            "(an accountant is charged 2ε), and whether records are refused for a range wider "
            "than Δf depends on them; pass bounds=(lo, hi), the public domain (records are "
            "clamped into it)"
        ),
        stacklevel=3,
    )


def _domain_sensitivity(
    sensitivity: object, bounds: tuple[np.ndarray, np.ndarray] | None
) -> np.ndarray:
    """Δf: the given ``sensitivity`` (at least the width of ``bounds``), or that width."""
    if sensitivity is None:
        if bounds is None:
            raise InputError(
                "Doca needs the public domain of the records: pass bounds=(lo, hi) (records "
                "are clamped into it; Δf = hi - lo), or sensitivity=Δf, its width"
            )
        return bounds[1] - bounds[0]
    values = _check_sensitivity(sensitivity)
    if bounds is not None and values.ndim == bounds[0].ndim == 1 and values.size != bounds[0].size:
        raise InputError(
            f"sensitivity has {values.size} values but bounds {bounds[0].size} per side; give "
            "one of each per attribute (or scalars for all)"
        )
    if bounds is not None and np.any(values < bounds[1] - bounds[0]):
        raise InputError(
            f"sensitivity {sensitivity!r} is below the width of bounds "
            f"{(bounds[1] - bounds[0]).tolist()}: one record can move across the whole "
            "domain; leave sensitivity=None (it is then hi - lo)"
        )
    return values


def _as_records(data: object, what: str, first_index: int, bounded: bool = False) -> np.ndarray:
    """Return ``data`` as a float64 (n, d) array (1-D: d = 1); refuse NaN/inf and wrong dims.

    Values beyond ±``MAX_CONTINUOUS`` are refused too, unless ``bounded``: the caller then clamps
    the records into public bounds (themselves within ±``MAX_CONTINUOUS``) before summing them.
    Masked arrays with masked entries (``numpy.asarray`` reads the hidden values), data frames
    with repeated column names and records of no attribute are refused.
    """
    refuse_masked(data, what)
    _check_labels(data, what)
    _refuse_geometries(data, what)
    array = _numbers(data, what)
    if array is None:
        raise InputError(
            f"{what} must hold numbers: scalars, or sequences of the same length d (one value "
            f"per attribute), not text, booleans (pass them as 0.0/1.0 if they are numbers), "
            f"complex numbers, missing values (pd.NA) or a mapping"
        )
    if array.ndim == 1:
        array = array[:, None]
    elif array.ndim != 2:
        raise InputError(
            f"{what} must be 1-D (n records of one attribute) or 2-D (n records x d attributes), "
            f"got an array of shape {array.shape}"
        )
    if array.shape[1] == 0:
        raise InputError(
            f"{what} has records of no attribute (shape {array.shape}); pass at least one "
            "value per record"
        )
    finite = np.isfinite(array)
    if not finite.all():
        bad = np.flatnonzero(~finite.all(axis=1))
        rows = ", ".join(str(first_index + b) for b in bad[:5])
        more = f" and {bad.size - 5} more" if bad.size > 5 else ""
        raise InputError(
            f"{what} holds NaN or infinite values at record index {rows}{more}; drop or impute "
            "them before publishing (nothing of this chunk was processed)"
        )
    huge = np.flatnonzero((np.abs(array) > MAX_CONTINUOUS).any(axis=1))
    if huge.size and not bounded:
        raise InputError(
            f"{what} holds values beyond ±{MAX_CONTINUOUS:g} at record index "
            f"{', '.join(str(first_index + b) for b in huge[:5])}: their cluster sums would "
            "overflow; rescale the attribute (nothing of this chunk was processed)"
        )
    return np.ascontiguousarray(array)


def _refuse_geometries(data: object, what: str) -> None:
    """Refuse a GeoDataFrame or GeoSeries, saying how to pass its coordinates.

    Its geometry column was refused as "not numbers" without a word of the geometry or CRS.
    """
    dtypes = getattr(data, "dtypes", None) if hasattr(data, "columns") else [
        getattr(data, "dtype", None)]
    if dtypes is None or not any(str(dtype) == "geometry" for dtype in dtypes):
        return  # geopandas' geometry dtype, told without importing geopandas
    raise InputError(
        f"{what} holds geometries, which DOCA cannot aggregate; pass the coordinates of points "
        f"in a projected CRS (e.g. {what}.get_coordinates(), with public bounds= in that CRS), "
        f"or drop the geometry column for the other attributes"
    )


def _listed(data: object) -> object:
    """Return an iterator's records as a list (``fit_transform(iter(x))``), else ``data``.

    NumPy makes an iterator a 0-d array of one object, refused as "not numbers", which its
    records were.
    """
    return list(data) if isinstance(data, Iterator) else data


def _check_labels(data: object, what: str) -> None:
    """Refuse a data frame with repeated column names, or a frame or series named as an ID.

    An identifier fed to DOCA was published as a noisy copy of every record's ID, took its
    share of ε and steered the clustering (a record's neighbours in the stream were those with
    the next IDs). The names are judged by :func:`geosynth._identifiers.is_identifier_name`,
    the rule of the writers and of :func:`geosynth.prepare`.
    """
    harm = ("DOCA would publish a noisy copy of each record's ID, spend part of epsilon on it "
            "and cluster the records by it")
    if hasattr(data, "columns"):  # a DataFrame
        check_unique_columns(data, what)
        named = [label for label in data.columns if is_identifier_name(label)]
        if named:
            raise InputError(
                f"{what} has {'a column' if len(named) == 1 else 'columns'} named as an "
                f"identifier ({', '.join(map(repr, named))}): {harm}; drop "
                f"{'it' if len(named) == 1 else 'them'} ({what}.drop(columns={named!r}))"
            )
    elif hasattr(data, "index") and is_identifier_name(getattr(data, "name", None) or ""):
        raise InputError(f"{what} is a series named as an identifier ({data.name!r}): {harm}; "
                         "pass an attribute's values, not the ID's")


def _first_outside_domain(
    records: np.ndarray, g_min: np.ndarray, g_max: np.ndarray, width: np.ndarray
) -> tuple[int, int] | None:
    """(row, attribute) of the first record that makes the range seen wider than ``width``."""
    low = np.minimum.accumulate(np.vstack([g_min, records]), axis=0)[1:]
    high = np.maximum.accumulate(np.vstack([g_max, records]), axis=0)[1:]
    wide = high - low > width
    if not wide.any():
        return None
    row = int(np.flatnonzero(wide.any(axis=1))[0])
    return row, int(np.flatnonzero(wide[row])[0])


# --------------------------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DocaDiagnostics:
    """Per-record and per-cluster details of one :meth:`Doca.fit_transform` run.

    **Never release these**: ``cluster_noise`` together with the released values gives the exact
    centroids (it undoes the noise). They exist to test and study the algorithm.

    Attributes
    ----------
    publication_time : numpy.ndarray of int64, shape (n,)
        Arrival index of the record whose processing published record ``i``
        (``publication_time[i] - i`` is its delay, between 0 and ``delay``). Records published by
        the final flush get the last arrival index, ``n - 1``.
    cluster : numpy.ndarray of int64, shape (n,)
        Serial number (publication order, from 0) of the cluster record ``i`` was published in.
    cluster_sizes : numpy.ndarray of int64, shape (k,)
        Size of each published cluster.
    cluster_noise : numpy.ndarray of float64, shape (k, d)
        The Laplace draw of each published cluster (one per attribute, shared by its members).
    max_clusters_used : int
        Most clusters held in memory at once (never above ``max_clusters``).
    n_noise_draws : int
        Noise draws made (one ``d``-vector per published cluster), ``== k``.
    """

    # Not in the printed form: the noise and the clusters give the exact centroids back (with
    # singleton clusters, the records' values), and a printed object goes to logs.
    publication_time: np.ndarray = field(repr=False)
    cluster: np.ndarray = field(repr=False)
    cluster_sizes: np.ndarray = field(repr=False)
    cluster_noise: np.ndarray = field(repr=False)
    max_clusters_used: int
    n_noise_draws: int


class Doca:
    """Publish a numeric stream with DOCA (Leal, Vidal & Machado 2018, Algorithms 1–2).

    See the module documentation for the algorithm, the choices where the paper is ambiguous,
    and — importantly — what privacy guarantee does and does not hold.

    Parameters
    ----------
    epsilon : float
        Privacy budget ``ε > 0`` of each stream (split evenly across ``d`` attributes).
    sensitivity : float or array-like of float, shape (d,), optional
        Global sensitivity ``Δf`` (per attribute for multivariate records): the largest change of
        one record's value, the width of the attribute's public domain. A scalar applies to
        every attribute. Defaults to ``hi − lo`` of ``bounds``; without ``bounds``, a chunk
        whose records would span more than ``Δf`` is refused, and a stream costs ``2ε``
        (module docs), with a :class:`~geosynth.errors.PrivacyLeakWarning`.
    delay : int, default 1000
        Delay constraint ``δ``: a record is published at most ``delay`` arrivals after its own.
    max_clusters : int, default 50
        ``β``, the most clusters held in memory.
    tau_window : int, default 100
        ``m``, the number of last published clusters whose mean information loss is ``τ``.
    seed : None, int, numpy.random.SeedSequence or numpy.random.Generator, optional
        ``None`` (default) draws the noise from fresh OS entropy, as a release must. Anything else
        makes the noise reproducible — for tests only — and issues
        :class:`~geosynth.errors.PrivacyLeakWarning`.
    bounds : (lo, hi), each a float or array-like of shape (d,), optional
        The public domain of the records: records are clamped into it before they join a
        cluster, so one record moves its centroid by at most ``(hi − lo)/|C|``. For two
        attributes give ``([x_lo, y_lo], [x_hi, y_hi])``, not one pair per attribute; a
        :class:`~geosynth.errors.DataWarning` points out that mix-up when the records tell.
    accountant : geosynth.dp.accountant.Accountant, optional
        Charged ``(epsilon, 0)`` (``(2·epsilon, 0)`` without ``bounds``) once per stream,
        before the stream's first record joins a cluster (no noise is drawn before); see
        *Budget accounting* in the module docs.
    label : str, optional
        Ledger label for the accountant (default ``"DOCA"``).

    Raises
    ------
    TypeError
        If ``epsilon`` is not a real number (a bool or a string such as ``"1.0"`` included),
        ``delay``, ``max_clusters`` or ``tau_window`` is not an int, ``label`` is not a str or
        ``accountant`` has no ``spend`` method.
    InputError
        If a parameter is out of range (it names the parameter and the fix), or neither
        ``sensitivity`` nor ``bounds`` is given.
    MemoryLimitError
        If the state for ``delay`` and ``max_clusters`` would exceed :data:`MAX_STATE_BYTES`.

    Examples
    --------
    >>> import numpy as np
    >>> from geosynth.sdc import Doca
    >>> doca = Doca(epsilon=1.0, bounds=(0.0, 150.0), delay=100, max_clusters=10)
    >>> released = doca.fit_transform(np.linspace(0.0, 100.0, 1_000))
    >>> released.shape
    (1000,)

    Streaming, with ``O(delay)`` memory::

        doca = Doca(epsilon=1.0, bounds=(0.0, 150.0))
        for index, value in doca.process(stream):   # any iterable of numbers or tuples
            send(index, value)
        for index, value in doca.flush():           # at the end of the stream
            send(index, value)
    """

    def __init__(
        self,
        epsilon: float,
        sensitivity: float | np.ndarray | Iterable[float] | None = None,
        delay: int = 1000,
        max_clusters: int = 50,
        tau_window: int = 100,
        seed: SeedLike = None,
        *,
        bounds: tuple[object, object] | None = None,
        accountant: object = None,
        label: str | None = None,
    ) -> None:
        self.epsilon = check_epsilon(epsilon)
        self.bounds = None if bounds is None else _check_bounds(bounds)
        self.sensitivity = _domain_sensitivity(sensitivity, self.bounds)
        if self.bounds is None:
            _warn_without_bounds("Doca")
        self.delay = check_int(delay, "delay", what="the delay constraint δ, in arrivals")
        self.max_clusters = check_int(
            max_clusters, "max_clusters", what="β, the most clusters held in memory"
        )
        self.tau_window = check_int(
            tau_window, "tau_window", what="m, the published clusters averaged into τ"
        )
        self._check_state_bytes(1 if self.sensitivity.ndim == 0 else self.sensitivity.size)
        self.label = check_optional_str(label, "label")
        if accountant is not None:  # geosynth.dp is imported only when an accountant is given
            from geosynth.dp.accountant import check_accountant

            check_accountant(accountant)
        self.accountant = accountant
        self._charged = False  # whether the accountant paid for the current stream
        self._rng_state = make_streams(seed, 1)[0]  # validates seed before the warning below
        self._seeded = seed is not None
        if seed is not None:
            warnings.warn(
                PrivacyLeakWarning(
                    "Doca(seed=...) makes the Laplace noise reproducible, hence predictable by "
                    "anyone who knows the seed: use it for tests only and leave seed=None (fresh "
                    "OS entropy) for a release"
                ),
                stacklevel=2,
            )
        self._state: tuple[np.ndarray, ...] | None = None
        self._d: int | None = None
        self._scalar_records = False
        # Releases made by the kernel but not yet handed over by process() (its consumer
        # stopped early): they are out of the clusters, so they go out first next time.
        self._outbox: deque[tuple[int, float | np.ndarray]] = deque()

    # ---------------------------------------------------------------- state

    def __getstate__(self) -> dict[str, object]:
        """Return the state to pickle or copy, without the noise state unless seeded.

        Two objects that draw the same noise for different data reveal the exact differences of
        their centroids; :meth:`__setstate__` gives an unseeded copy fresh OS entropy. The
        state is confidential: it holds the pending records' exact cluster sums and ranges,
        the stream's exact minimum and maximum (the global range) and the information losses
        behind ``τ``. Published clusters leave nothing (their slots are zeroed). Keep a pickle
        of a :class:`Doca` with the data.
        """
        state = dict(self.__dict__)
        if not self._seeded:
            del state["_rng_state"]
        state["_charged"] = False  # a copy releases the stream again: it pays again
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        """Restore a pickled or copied Doca; an unseeded one draws fresh OS entropy."""
        self.__dict__.update({"accountant": None, "label": None, "_charged": False} | state)
        if "_rng_state" not in state:
            self._rng_state = make_streams(None, 1)[0]

    def __copy__(self) -> Doca:
        """Return an independent copy, as :func:`copy.deepcopy` does.

        A shallow copy shared the arrays of the clusters (and a seeded one the noise state)
        with the original: records fed to one were published by the other.
        """
        return copy.deepcopy(self)

    def __deepcopy__(self, memo: dict[int, object]) -> Doca:
        """Return an independent copy that shares the accountant (one budget for both).

        A copy with a deep-copied accountant charged its spends to a ledger of its own, so its
        second release of the same records never reached the original budget.
        """
        from geosynth.dp.accountant import deepcopy_sharing_budget

        return deepcopy_sharing_budget(self, memo)

    def __repr__(self) -> str:
        sens = float(self.sensitivity) if self.sensitivity.ndim == 0 else self.sensitivity.tolist()
        bounds = "" if self.bounds is None else (
            f", bounds=({self.bounds[0].tolist()!r}, {self.bounds[1].tolist()!r})")
        return (
            f"Doca(epsilon={self.epsilon!r}, sensitivity={sens!r}, delay={self.delay}, "
            f"max_clusters={self.max_clusters}, tau_window={self.tau_window}{bounds})"
        )

    def _check_state_bytes(self, d: int) -> None:
        counts = {"delay": self.delay, "max_clusters": self.max_clusters,
                  "tau_window": self.tau_window}
        for name, count in counts.items():  # 10**400 overflowed the estimate's float division
            if count > MAX_STATE_BYTES:
                raise MemoryLimitError(
                    f"{name} = {describe_value(count)} is above geosynth.sdc.doca.MAX_STATE_BYTES "
                    f"= {MAX_STATE_BYTES:,}, and each of its entries of state takes 8 bytes or "
                    f"more; lower {name}"
                )
        estimate = ((self.delay + 1) * 24 + self.max_clusters * (3 * 8 * d + 24)
                    + self.tau_window * 8)
        if estimate > MAX_STATE_BYTES:
            raise MemoryLimitError(
                f"delay={self.delay}, max_clusters={self.max_clusters} and "
                f"tau_window={self.tau_window} with d={d} attributes need about "
                f"{estimate / 2**20:,.0f} MiB of state, above geosynth.sdc.doca.MAX_STATE_BYTES = "
                f"{MAX_STATE_BYTES / 2**20:,.0f} MiB; lower delay (or max_clusters, tau_window), "
                "or raise MAX_STATE_BYTES deliberately"
            )

    def _new_state(self, d: int) -> None:
        if self.bounds is not None and self.bounds[0].ndim == 1 and self.bounds[0].size != d:
            raise InputError(
                f"records have d={d} attributes but bounds has {self.bounds[0].size} per side; "
                "pass one (lo, hi) per attribute (or scalars for all)"
            )
        if self.sensitivity.ndim == 1 and self.sensitivity.size != d:
            raise InputError(
                f"records have d={d} attributes but sensitivity has {self.sensitivity.size} "
                "values; pass one sensitivity per attribute (or a scalar for all)"
            )
        self._check_state_bytes(d)
        beta = self.max_clusters
        ring = self.delay + 1
        scale = _laplace_scale(self.sensitivity, d, self.epsilon)
        self._d = d
        self._state = (
            scale,
            np.zeros(_N_COUNTERS, dtype=np.int64),  # counters
            np.zeros(1),  # fstate: tau
            np.full(d, np.inf),  # g_min
            np.full(d, -np.inf),  # g_max
            np.zeros(d),  # inv_g
            np.zeros((beta, d)),  # c_min
            np.zeros((beta, d)),  # c_max
            np.zeros((beta, d)),  # c_sum
            np.zeros(beta, dtype=np.int64),  # c_size
            np.full(beta, -1, dtype=np.int64),  # c_head
            np.full(beta, -1, dtype=np.int64),  # c_tail
            np.zeros(beta, dtype=np.int64),  # c_order
            np.full(ring, -1, dtype=np.int64),  # r_index
            np.full(ring, -1, dtype=np.int64),  # r_cluster
            np.full(ring, -1, dtype=np.int64),  # r_next
            np.zeros(self.tau_window),  # il_hist
        )
        self._charged = False  # a new stream: not paid for yet

    def _open_stream(self, records: np.ndarray) -> None:
        """Start a stream's state for the records' ``d``; warn of transposed ``bounds``."""
        self._new_state(records.shape[1])
        if self.bounds is not None:
            _warn_if_bounds_transposed(self.bounds, records, stacklevel=4)

    def _charge(self) -> None:
        """Charge the accountant ``epsilon`` for the current stream, once, before any noise.

        Raises :class:`~geosynth.errors.BudgetExceededError` (from the accountant) when the
        budget cannot pay; the stream then stays unpaid, and nothing is processed.
        """
        if self._charged:
            return
        if self.accountant is not None:
            self.accountant.spend(_stream_cost(self.epsilon, self.bounds), 0.0,
                                  label="DOCA" if self.label is None else self.label)
        self._charged = True

    def _counter(self, slot: int) -> int:
        return 0 if self._state is None else int(self._state[1][slot])

    @property
    def n_records(self) -> int:
        """Records received so far (the arrival index of the next record)."""
        return self._counter(_T)

    @property
    def n_pending(self) -> int:
        """Records received but not yet published (at most ``delay``)."""
        return self._counter(_N_PENDING)

    @property
    def n_clusters(self) -> int:
        """Clusters currently in memory (at most ``max_clusters``)."""
        return self._counter(_N_ACTIVE)

    @property
    def max_clusters_used(self) -> int:
        """Most clusters held in memory at once so far (never above ``max_clusters``)."""
        return self._counter(_MAX_USED)

    @property
    def n_noise_draws(self) -> int:
        """Laplace draws so far: one (per attribute) for each published cluster."""
        return self._counter(_N_PUBLISHED)

    @property
    def tau(self) -> float:
        """Current threshold ``τ`` (0 until the first cluster is published).

        ``τ`` is computed from the exact ranges of the published clusters and of the stream, not
        from the releases: it is confidential, like the records; never publish it.
        """
        return 0.0 if self._state is None else float(self._state[2][0])

    # ---------------------------------------------------------------- kernels

    def _run(self, records: np.ndarray) -> tuple[np.ndarray, ...]:
        """Feed ``records`` (n, d) to the kernel; return the published slices."""
        if self._state is None:
            self._new_state(records.shape[1])
        elif records.shape[1] != self._d:
            raise InputError(
                f"records have d={records.shape[1]} attributes but this stream started with "
                f"d={self._d}; every record must have the same number of attributes"
            )
        (scale, counters, fstate, g_min, g_max, inv_g, c_min, c_max, c_sum, c_size, c_head,
         c_tail, c_order, r_index, r_cluster, r_next, il_hist) = self._state
        records = self._in_domain(records, g_min, g_max)
        if records.shape[0]:
            self._charge()  # after every refusal of the chunk, before its first record
        capacity = records.shape[0] + int(counters[_N_PENDING])
        out = _out_buffers(capacity, self._d)
        n_out, n_cl = _doca_kernel(records, self.delay, self.max_clusters, scale, counters,
                                   fstate, g_min, g_max, inv_g, c_min, c_max, c_sum, c_size,
                                   c_head, c_tail, c_order, r_index, r_cluster, r_next, il_hist,
                                   self._rng_state, *out)
        return _trim(out, n_out, n_cl)

    def _in_domain(self, records: np.ndarray, g_min: np.ndarray, g_max: np.ndarray) -> np.ndarray:
        """Clamp the records into ``bounds``; without bounds, refuse a range wider than Δf.

        Refuse too values so far from 0 that the smallest noise would round away (module
        docs): with ``bounds``, judged on the bounds alone (public, so the refusal tells nothing
        of the records); without, on the records and the range seen.
        """
        if self.bounds is not None:
            largest = np.maximum(np.abs(self.bounds[0]), np.abs(self.bounds[1]))
            self._check_resolution(np.broadcast_to(largest, (1, records.shape[1])), None)
            return np.clip(records, *self.bounds)
        width = np.broadcast_to(self.sensitivity, (records.shape[1],))
        outside = _first_outside_domain(records, g_min, g_max, width)
        if outside is not None:
            row, j = outside
            raise InputError(
                f"record index {self.n_records + row} widens the range of attribute {j} beyond "
                f"sensitivity={width[j]:g}: Laplace(Δf/ε) noise covers a change of one record by "
                "at most Δf, and this record would be released almost exactly; pass "
                "bounds=(lo, hi), the public domain (records are clamped into it), or a "
                "sensitivity at least the domain's width (nothing of this chunk was processed)"
            )
        seen = np.maximum(np.abs(g_min), np.abs(g_max))  # inf before the first record
        self._check_resolution(np.maximum(np.abs(records), np.where(np.isfinite(seen), seen, 0)),
                               self.n_records)
        return records

    def _check_resolution(self, largest: np.ndarray, first_record: int | None) -> None:
        """Refuse values whose float step is not far below the smallest noise scale.

        ``largest`` (rows x d) bounds the ``|value|`` of each record (``first_record`` is the
        index of its first row), or is one row of the public bounds (``first_record`` None).
        The smallest scale is ``d·Δf_j/((δ+1)·ε)`` (a cluster holds at most ``δ + 1``
        records); it must be at least ``_MIN_NOISE_STEPS`` steps of ``largest``, else
        ``χ + η`` rounds to ``χ``, a lone record's own value.
        """
        smallest = self._state[0] / (self.delay + 1)
        coarse = _first_coarse(smallest, largest)
        if coarse is None:
            return
        row, j = coarse
        where = (f"attribute {j} (bounds up to {largest[row, j]:g})" if first_record is None
                 else f"record index {first_record + row}, attribute {j}")
        fix = ("bounds closer to 0" if first_record is None
               else "subtract a public offset from the attribute so that its values lie near 0")
        raise InputError(
            f"{where}: with epsilon={self.epsilon!r}, delay={self.delay} and sensitivity "
            f"{self.sensitivity.tolist()}, the noise of a cluster of up to delay + 1 records "
            f"(scale d·Δf/(|C|·ε) ≥ {smallest[j]:.3g}) is below 2**20 float steps of the "
            "values' magnitude: releases would round to the exact centroids (a lone record's "
            f"own value); lower epsilon or delay, or {fix} (nothing of this chunk was processed)"
        )

    def _run_flush(self) -> tuple[np.ndarray, ...]:
        if self._state is None:
            return _trim(_out_buffers(0, 1), 0, 0)
        (scale, counters, fstate, g_min, g_max, inv_g, c_min, c_max, c_sum, c_size, c_head,
         c_tail, c_order, r_index, r_cluster, r_next, il_hist) = self._state
        if counters[_N_PENDING]:
            if self.bounds is None:
                _refuse_lone_record(int(counters[_T]), "this stream (flush)")
            self._charge()  # a copy that never paid for the records it would publish
        out = _out_buffers(int(counters[_N_PENDING]), self._d)
        n_out, n_cl = _doca_flush(scale, counters, fstate, inv_g, c_min, c_max, c_sum, c_size,
                                  c_head, c_order, r_index, r_cluster, r_next, il_hist,
                                  self._rng_state, *out)
        return _trim(out, n_out, n_cl)

    def _pairs(self, index: np.ndarray, value: np.ndarray) -> Iterator[tuple[int, object]]:
        if self._scalar_records:
            yield from zip(index.tolist(), value[:, 0].tolist(), strict=True)
        else:
            for i in range(index.shape[0]):
                yield int(index[i]), value[i].copy()

    def _deliver(self) -> Iterator[tuple[int, float | np.ndarray]]:
        """Yield the releases of the outbox, each removed as it is handed over."""
        while self._outbox:
            yield self._outbox.popleft()

    # ---------------------------------------------------------------- public

    def process(
        self,
        stream: Iterable[float] | Iterable[Iterable[float]] | np.ndarray,
        *,
        chunk_size: int = 4096,
        flush: bool = False,
    ) -> Iterator[tuple[int, float | np.ndarray]]:
        """Feed records and yield ``(index, value)`` for every record as its cluster is published.

        ``index`` is the record's arrival index in the stream (0 for the first record ever fed to
        this object, continuing across calls); ``value`` is the released value: a float for
        records given as scalars (or a 1-D array), an array of shape ``(d,)`` for tuples or rows.
        Records are handed to the numba kernel ``chunk_size`` at a time, so releases come out
        after each chunk (the algorithm's decisions do not depend on ``chunk_size``; use
        ``chunk_size=1`` for the lowest latency on a slow live stream). Memory is
        ``O(delay + chunk_size)``; the iterable is consumed lazily. If the loop over the
        generator stops early, the releases of the last chunk not yet yielded are kept and
        come first from the next :meth:`process` or :meth:`flush` (they used to be lost: their
        records were neither pending nor delivered).

        Parameters
        ----------
        stream : iterable of numbers, iterable of equal-length sequences, or numpy.ndarray
            The records in arrival order. A 1-D array is ``n`` scalar records, a 2-D array ``n``
            records of ``d`` attributes.
        chunk_size : int, default 4096
            Records per kernel call.
        flush : bool, default False
            Also publish what remains when ``stream`` is exhausted (as :meth:`flush`). Leave
            False when more of the stream will follow in another call.

        Yields
        ------
        tuple of (int, float or numpy.ndarray)
            Published records, cluster by cluster, in publication order.

        Raises
        ------
        InputError
            On NaN/infinite values (naming the record index), values beyond ±1e100 when no
            ``bounds`` clamp them, non-numeric (also boolean) records, masked entries, repeated
            column names, records whose number of attributes differs from the stream's (or the
            sensitivity's), or values so far from 0 that the noise would round away (see the
            module documentation).
        InputTypeError
            ``stream`` is not iterable (a single number), or ``flush`` is not a bool.
        geosynth.errors.BudgetExceededError
            From ``accountant``, at the first chunk of a stream (or of a copy's continuation),
            before any of its records is clustered or any noise drawn.
        """
        chunk_size = check_int(chunk_size, "chunk_size", what="records per kernel call")
        flush = check_bool(flush, "flush")
        if isinstance(stream, str | bytes | Mapping):
            raise InputError(
                f"stream must hold numbers: an iterable of numbers or of equal-length sequences, "
                f"not {type(stream).__name__} (its characters or keys are not records)"
            )
        if not isinstance(stream, Iterable):
            raise InputTypeError(  # the type only: a single number may be a record
                f"stream must be an iterable of records (numbers or equal-length sequences), got "
                f"{type(stream).__name__}; wrap a single record in a list: process([record])"
            )
        yield from self._deliver()
        _check_labels(stream, "stream")  # a frame's columns or a series' name
        if hasattr(stream, "columns"):  # a DataFrame: iterating it yields its column labels
            stream = np.asarray(stream)
        if isinstance(stream, np.ndarray):
            refuse_masked(stream, "stream")
            if stream.ndim not in (1, 2):
                raise InputError(
                    f"stream must be 1-D (scalar records) or 2-D (records x attributes), got "
                    f"shape {stream.shape}"
                )
            chunks: Iterator[object] = (
                stream[s:s + chunk_size] for s in range(0, stream.shape[0], chunk_size)
            )
        else:
            iterator = iter(stream)
            chunks = iter(lambda: list(islice(iterator, chunk_size)), [])
        for chunk in chunks:
            records = _as_records(chunk, "stream", self.n_records, self.bounds is not None)
            if self._state is None:
                self._open_stream(records)
                self._scalar_records = np.ndim(chunk) == 1
            index, value, *_ = self._run(records)
            self._outbox.extend(self._pairs(index, value))
            yield from self._deliver()
        if flush:
            # Through the outbox, as a chunk's releases: a caller that stops reading during the
            # flush finds the rest in the next flush(), not lost (flush() listed them all at
            # once, out of the outbox).
            index, value, *_ = self._run_flush()
            self._outbox.extend(self._pairs(index, value))
            yield from self._deliver()

    def flush(self) -> list[tuple[int, float | np.ndarray]]:
        """Publish every cluster still in memory (at the end of the stream).

        Clusters are published in the order in which their oldest records would expire, each with
        its own noise draw. The object stays usable: records fed afterwards continue the stream
        (arrival indices continue, ``τ`` and the global range are kept).

        Returns
        -------
        list of tuple of (int, float or numpy.ndarray)
            ``(index, value)`` of the records published now (at most ``delay``), after those a
            :meth:`process` loop stopped early left undelivered.

        Raises
        ------
        geosynth.errors.BudgetExceededError
            From ``accountant``, when a copy that has not paid for its stream would publish
            pending records; nothing is published then.
        """
        index, value, *_ = self._run_flush()
        self._outbox.extend(self._pairs(index, value))
        return list(self._deliver())

    def fit_transform(
        self, data: np.ndarray | Iterable[float], *, return_diagnostics: bool = False
    ) -> np.ndarray | tuple[np.ndarray, DocaDiagnostics]:
        """Publish a whole array as one stream (then flushed); return releases in input order.

        Starts a new stream (arrival index 0, ``τ = 0``, empty clusters and global range); the
        noise stream continues, so a second call draws new noise.

        Parameters
        ----------
        data : array-like, shape (n,) or (n, d)
            Records in arrival order.
        return_diagnostics : bool, default False
            Also return a :class:`DocaDiagnostics` (publication times, clusters, noise draws).
            It exposes the exact centroids, so it issues
            :class:`~geosynth.errors.PrivacyLeakWarning`.

        Returns
        -------
        numpy.ndarray of float64, same shape as ``data``
            The released value of every record.
        DocaDiagnostics
            Only with ``return_diagnostics=True``.

        Raises
        ------
        InputError
            On NaN/infinite or non-numeric (also boolean) values, masked entries, repeated
            column names, values beyond ±1e100 when no ``bounds`` clamp them, a range wider
            than ``sensitivity``, values so far from 0 that the noise would round away, wrong
            dimensions, or if records fed by :meth:`process` are still pending or undelivered
            (call :meth:`flush` first). Nothing of ``data`` is processed then.
        InputTypeError
            ``return_diagnostics`` is not a bool.
        geosynth.errors.BudgetExceededError
            From ``accountant`` (each call is a new stream, charged ``epsilon``), before any
            record is clustered or any noise drawn.
        """
        return_diagnostics = check_bool(return_diagnostics, "return_diagnostics")
        if self.n_pending or self._outbox:
            raise InputError(
                f"{self.n_pending + len(self._outbox)} records fed by process() are not "
                "published or not delivered yet; call flush() before fit_transform(), which "
                "starts a new stream"
            )
        data = _listed(data)
        records = _as_records(data, "data", 0, self.bounds is not None)
        shape = np.shape(data)
        if return_diagnostics:
            warnings.warn(
                PrivacyLeakWarning(
                    "DocaDiagnostics holds the noise draws, which reveal the exact cluster "
                    "centroids; never release them"
                ),
                stacklevel=2,
            )
        n, d = records.shape
        self._state = None
        self._open_stream(records)
        self._in_domain(records, self._state[3], self._state[4])  # refuse before processing any
        if self.bounds is None:
            _refuse_lone_record(n, "data")  # before the stream is charged
        self._scalar_records = len(shape) == 1
        released = np.empty((n, d))
        pub_time = np.empty(n, dtype=np.int64)
        cluster = np.empty(n, dtype=np.int64)
        sizes: list[np.ndarray] = []
        noises: list[np.ndarray] = []

        def published() -> Iterator[tuple[np.ndarray, ...]]:
            for start in range(0, n, _DEFAULT_CHUNK):
                yield self._run(records[start:start + _DEFAULT_CHUNK])
            yield self._run_flush()

        for index, value, time_, serial, size, noise in published():
            released[index] = value
            if return_diagnostics:
                pub_time[index] = time_
                cluster[index] = serial
                sizes.append(size.copy())
                noises.append(noise.copy())
        released = released.reshape(shape)
        if not return_diagnostics:
            return released
        diagnostics = DocaDiagnostics(
            publication_time=pub_time,
            cluster=cluster,
            cluster_sizes=np.concatenate(sizes) if sizes else np.zeros(0, dtype=np.int64),
            cluster_noise=np.concatenate(noises) if noises else np.zeros((0, d)),
            max_clusters_used=self.max_clusters_used,
            n_noise_draws=self.n_noise_draws,
        )
        return released, diagnostics


def _out_buffers(capacity: int, d: int) -> tuple[np.ndarray, ...]:
    return (
        np.empty(capacity, dtype=np.int64),  # out_index
        np.empty((capacity, d)),  # out_value
        np.empty(capacity, dtype=np.int64),  # out_time
        np.empty(capacity, dtype=np.int64),  # out_cluster
        np.empty(capacity, dtype=np.int64),  # cl_size
        np.empty((capacity, d)),  # cl_noise
    )


def _trim(out: tuple[np.ndarray, ...], n_out: int, n_cl: int) -> tuple[np.ndarray, ...]:
    index, value, time_, serial, size, noise = out
    return index[:n_out], value[:n_out], time_[:n_out], serial[:n_out], size[:n_cl], noise[:n_cl]


# --------------------------------------------------------------------------------------------
# evaluation (section 4)
# --------------------------------------------------------------------------------------------


def mse(original: np.ndarray, released: np.ndarray) -> float:
    """Mean squared error between original and released values (the paper's EQM, §4).

    Parameters
    ----------
    original, released : array-like of float, same shape
        For multivariate records the mean runs over records and attributes.

    Returns
    -------
    float

    Raises
    ------
    InputError
        Shapes differ, the arrays are empty or hold NaN or infinite values.
    InputTypeError
        Text, booleans or other non-numbers (``numpy.asarray(["1"], dtype=float)`` read
        the text ``"1"`` as 1.0).
    """
    a = check_real_array(original, "original")
    b = check_real_array(released, "released")
    if a.shape != b.shape:
        raise InputError(
            f"original has shape {a.shape} but released has shape {b.shape}; pass the released "
            "values in input order (as fit_transform returns them)"
        )
    if a.size == 0:
        raise InputError("mse of empty arrays is undefined; pass at least one record")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise InputError("mse: original and released must not hold NaN or infinite values")
    return float(np.mean((a - b) ** 2))


def histogram_intersection(a: np.ndarray, b: np.ndarray, bins: int | np.ndarray = 100) -> float:
    """Share of the distribution of ``a`` that the distribution of ``b`` covers (§4, Figure 2).

    Both samples are binned on the same edges — ``bins`` equal-width bins over the range of
    ``a`` (the original data), or explicit edges — and ``Σ_k min(p_k, q_k)`` is returned, where
    ``p_k`` and ``q_k`` are the fractions of *all* values of ``a`` and ``b`` in bin ``k``. Values
    of ``b`` outside the edges (noise pushes releases past the original range) therefore count
    as not overlapping. The paper does not say how its 100 bins were placed; this is our choice.

    Parameters
    ----------
    a : array-like of float, 1-D
        Original values (they define the bin range).
    b : array-like of float, 1-D
        Released values.
    bins : int or array-like of float, default 100
        Number of bins over ``[min(a), max(a)]``, or the bin edges.

    Returns
    -------
    float
        Between 0 (disjoint) and 1 (identical histograms).

    Raises
    ------
    InputError
        ``a`` or ``b`` is not a non-empty 1-D array of finite numbers, or ``bins`` is not an
        int ≥ 1 nor at least two finite, strictly increasing edges (NaN edges gave 1.0).
    InputTypeError
        Text, booleans or other non-numbers in ``a``, ``b`` or ``bins``.
    """
    x = check_real_array(a, "a")
    y = check_real_array(b, "b")
    if x.ndim != 1 or y.ndim != 1 or x.size == 0 or y.size == 0:
        raise InputError(
            f"histogram_intersection takes two non-empty 1-D arrays (one attribute), got shapes "
            f"{x.shape} and {y.shape}; compare attributes one at a time"
        )
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise InputError("histogram_intersection: a and b must not hold NaN or infinite values")
    edges = np.histogram_bin_edges(x, bins=_check_bins(bins))
    p = np.histogram(x, bins=edges)[0] / x.size
    q = np.histogram(y, bins=edges)[0] / y.size
    return float(np.minimum(p, q).sum())


def _check_bins(bins: object) -> int | np.ndarray:
    """``bins`` of :func:`histogram_intersection`: an int ≥ 1, or increasing finite edges."""
    if isinstance(bins, numbers.Integral | np.bool_):
        return check_int(bins, "bins", what="equal-width bins over the range of a")
    edges = check_real_array(bins, "bins", what="an int or an array of bin edges")
    if edges.ndim != 1 or edges.size < 2 or not (
        np.all(np.isfinite(edges)) and np.all(np.diff(edges) > 0)
    ):
        raise InputError(
            f"bins must be an int >= 1 or at least two finite, strictly increasing bin edges, got "
            f"an array of shape {edges.shape}; pass e.g. bins=100 or bins=np.linspace(lo, hi, 101)"
        )
    return edges


def _refuse_lone_record(n_records: int, what: str) -> None:
    """Refuse to publish, without ``bounds``, a stream that holds a single record.

    Without bounds, ``Δf`` bounds the range of the records (module docs), so a neighbouring
    stream's changed record lies within ``2·Δf`` of the others. A stream of one record has no
    other: any value passes, and noise of scale ``Δf/ε`` released it almost exactly (123,456
    came out as 123,455.97 at ``Δf = 1``).
    """
    if n_records == 1:
        raise InputError(
            f"{what} holds a single record and no bounds: the sensitivity bounds the range of "
            "the records, and one record has none, so its value, however far out, would be "
            "released with noise of scale sensitivity/epsilon; pass bounds=(lo, hi), the public "
            "domain (records are clamped into it), or publish it with other records"
        )


def naive_laplace(
    data: np.ndarray,
    epsilon: float,
    sensitivity: float | np.ndarray | None = None,
    seed: SeedLike = None,
    *,
    bounds: tuple[object, object] | None = None,
    accountant: object = None,
    label: str | None = None,
) -> np.ndarray:
    """Add an independent Laplace(0, Δf/ε) draw to every record: the paper's baseline (§4).

    For ``(n, d)`` records each attribute gets ``Laplace(0, d·Δf_j/ε)`` (budget split evenly, as
    in :class:`Doca`). Uses numpy's floating-point sampler (not hardened against Mironov's
    attack). With ``bounds`` the records are clamped into the public domain; without, data
    whose range exceeds ``Δf`` are refused, as by :class:`Doca` (an outlier outside the domain
    would be released almost exactly), and the release is ``2ε``-DP (:class:`Doca`'s module
    docs), with a :class:`~geosynth.errors.PrivacyLeakWarning`.

    Parameters
    ----------
    data : array-like, shape (n,) or (n, d)
    epsilon : float
    sensitivity : float or array-like of float, shape (d,), optional
        ``Δf``; defaults to ``hi − lo`` of ``bounds`` (one of the two is needed).
    seed : None or seed-like, optional
        ``None`` (default) uses fresh OS entropy; a seed issues
        :class:`~geosynth.errors.PrivacyLeakWarning`.
    bounds : (lo, hi), each a float or array-like of shape (d,), optional
        The public domain of the records, as for :class:`Doca`.
    accountant : geosynth.dp.accountant.Accountant, optional
        Charged ``(epsilon, 0)`` (``(2·epsilon, 0)`` without ``bounds``) once, after the
        checks and before any noise is drawn: each record's release is ``ε``-DP and the
        records are disjoint (parallel composition).
    label : str, optional
        Ledger label for the accountant (default ``"naive Laplace"``).

    Returns
    -------
    numpy.ndarray, same shape as ``data``

    Raises
    ------
    InputError
        On NaN/infinite or non-numeric values, wrong dimensions, a range of the data wider
        than ``sensitivity`` (naming the record index, not its value), a noise scale that
        overflows, or one so small against the values that the releases would round to the
        records themselves (as :class:`Doca` refuses it).
    TypeError
        ``label`` is not a str or ``accountant`` has no ``spend`` method.
    geosynth.errors.BudgetExceededError
        From ``accountant``, before any noise is drawn.
    """
    eps = check_epsilon(epsilon)
    label = check_optional_str(label, "label")
    if accountant is not None:  # geosynth.dp is imported only when an accountant is given
        from geosynth.dp.accountant import check_accountant

        check_accountant(accountant)
    domain = None if bounds is None else _check_bounds(bounds)
    sens = _domain_sensitivity(sensitivity, domain)
    data = _listed(data)
    records = _as_records(data, "data", 0, bounded=domain is not None)
    d = records.shape[1]
    if sens.ndim == 1 and sens.size != d:
        raise InputError(
            f"data have d={d} attributes but sensitivity (or bounds) has {sens.size} values; "
            "pass one per attribute (or a scalar)"
        )
    width = np.broadcast_to(sens, (d,))
    if domain is not None:
        _warn_if_bounds_transposed(domain, records)
        records = np.clip(records, *domain)
        outside = None
    else:
        _warn_without_bounds("naive_laplace")
        _refuse_lone_record(records.shape[0], "data")
        outside = _first_outside_domain(records, np.full(d, np.inf), np.full(d, -np.inf), width)
    if outside is not None:
        row, j = outside
        raise InputError(
            f"data: record index {row} widens the range of attribute {j} beyond "
            f"sensitivity={width[j]:g}: Laplace(Δf/ε) noise covers a change of one record by at "
            "most Δf, and a record outside the domain would be released almost exactly; clamp "
            "the data into the public domain first, or pass its width as sensitivity"
        )
    scale = _naive_scale(records, sens, d, eps)
    if seed is not None:
        warnings.warn(
            PrivacyLeakWarning("naive_laplace(seed=...) makes the noise predictable; tests only"),
            stacklevel=2,
        )
    rng = as_generator(seed)
    if accountant is not None:
        accountant.spend(_stream_cost(eps, domain), 0.0,
                         label="naive Laplace" if label is None else label)
    noisy = records + rng.laplace(0.0, 1.0, size=records.shape) * scale
    return noisy.reshape(np.shape(data))


def _laplace_scale(sensitivity: np.ndarray, d: int, epsilon: float) -> np.ndarray:
    """Return the per-attribute Laplace scale ``d·Δf_j/ε``; refuse one that overflows.

    A scale whose largest Laplace draws (:data:`_MAX_EXPONENTIAL` scales) are not finite would
    release noise alone (inf or NaN).

    Parameters
    ----------
    sensitivity : numpy.ndarray
        Δf, a scalar or one per attribute.
    d : int
        Number of attributes.
    epsilon : float
        The privacy parameter.

    Returns
    -------
    numpy.ndarray, shape (d,)
    """
    with np.errstate(over="ignore"):
        scale = np.broadcast_to(sensitivity, (d,)).astype(float) * d / epsilon
        overflows = not np.all(np.isfinite(scale * _MAX_EXPONENTIAL))
    if overflows:
        raise InputError(
            f"the noise scale d·Δf/ε = {scale.max():.3g} of epsilon={epsilon!r} and "
            f"sensitivity {np.asarray(sensitivity).tolist()} overflows; raise epsilon (the "
            "release would be noise alone)"
        )
    return scale


def _first_coarse(scale: np.ndarray, largest: np.ndarray) -> tuple[int, int] | None:
    """Return ``(row, attribute)`` of the first value the noise cannot move, or None.

    A value whose float step times :data:`_MIN_NOISE_STEPS` exceeds its attribute's ``scale``
    would come back from ``value + η`` (nearly) unchanged: a record's own value.

    Parameters
    ----------
    scale : numpy.ndarray, shape (d,)
        The smallest noise scale of each attribute.
    largest : numpy.ndarray, shape (rows, d)
        Bounds of the ``|value|`` of each row.

    Returns
    -------
    tuple of int or None
    """
    coarse = scale < _MIN_NOISE_STEPS * np.spacing(largest)
    if not coarse.any():
        return None
    row = int(np.flatnonzero(coarse.any(axis=1))[0])
    return row, int(np.flatnonzero(coarse[row])[0])


def _naive_scale(records: np.ndarray, sens: np.ndarray, d: int, eps: float) -> np.ndarray:
    """Per-attribute scale ``d·Δf_j/ε`` of :func:`naive_laplace`, refused if it is useless.

    As in :class:`Doca` (module docs), a scale that overflows, or that is below ``2**20`` float
    steps of a record's ``|value|`` (``record + η`` would round back to the record), is refused,
    naming the record index, never its value.
    """
    scale = _laplace_scale(sens, d, eps)
    coarse = _first_coarse(scale, np.abs(records))
    if coarse is not None:
        row, j = coarse
        raise InputError(
            f"naive_laplace: record index {row}, attribute {j}: with epsilon={eps!r} and "
            f"sensitivity {sens.tolist()}, the noise scale d·Δf/ε = {scale[j]:.3g} is below "
            "2**20 float steps of the value's magnitude: the release would round to the record "
            "itself; lower epsilon, or subtract a public offset from the attribute so that its "
            "values lie near 0"
        )
    return scale


def beta_shape_for_skewness(a: float, skewness: float) -> float:
    """Second shape ``b`` of the ``Beta(a, b)`` distribution whose skewness is ``skewness``.

    Solves ``2 (b − a) √(a + b + 1) / ((a + b + 2) √(a b)) = skewness`` for ``b > a`` (a
    right-skewed Beta) by Brent's method; :func:`simulate_skewed_stream` draws from that Beta.

    Parameters
    ----------
    a : float
        First shape (> 0).
    skewness : float
        Target skewness (> 0).

    Returns
    -------
    float
        The second shape ``b``.

    Raises
    ------
    geosynth.errors.InputError
        ``a`` or ``skewness`` is not a finite number > 0, or ``skewness`` is beyond what a
        ``Beta(a, b ≤ 1e6)`` reaches.
    TypeError
        ``a`` or ``skewness`` is not a real number.
    """
    from scipy import optimize

    def skew(b: float) -> float:  # √a·√b: √(a·b) underflowed to 0 for a tiny a
        return (2.0 * (b - a) * math.sqrt(a + b + 1.0)
                / ((a + b + 2.0) * math.sqrt(a) * math.sqrt(b)))

    a = check_positive(a, "a", hint="the first Beta shape")
    skewness = check_positive(skewness, "skewness", hint="a right-skewed stream")
    reachable = skew(_MAX_BETA_SHAPE)
    if skewness >= reachable:
        raise InputError(
            f"skewness={skewness!r} is beyond the {reachable:.4g} a Beta({a:g}, b ≤ "
            f"{_MAX_BETA_SHAPE:g}) reaches; lower it, or lower a (smaller a skews further)"
        )
    # brentq's default absolute tolerance (2e-12) returned the bracket's end for a < 1e-6. The
    # bracket starts at b = a, where the skewness is exactly 0: from a·(1 + 1e-12) a target
    # below that point's skewness (1e-13) raised scipy's "f(a) and f(b) must have different
    # signs".
    return optimize.brentq(lambda b: skew(b) - skewness, a, _MAX_BETA_SHAPE,
                           xtol=1e-12 * min(a, 1.0))


def simulate_skewed_stream(
    n: int = 2_000_000,
    seed: SeedLike = None,
    *,
    low: float = 1.0,
    high: float = 66_413.0,
    skewness: float = 0.7365,
    a: float = 2.0,
) -> np.ndarray:
    """Integer-valued, right-skewed stream shaped like the paper's BackBlaze ``smart_9_raw``.

    The paper's data (§4: 1,989,462 records, min 1, max 66,413, skewness 0.7365) are not
    available offline. We draw ``Beta(a, b)`` with ``b`` solved so that the Beta's skewness is
    ``skewness``, rescale the sample affinely so that its minimum is ``low`` and its maximum is
    ``high`` exactly (skewness is invariant under that), and round to integers (power-on hours).
    With the defaults the mean is about 15,500 and the sample skewness is within a few
    thousandths of 0.7365 for two million records. The records are i.i.d., hence already in a
    random order (the paper shuffles its stream).

    Parameters
    ----------
    n : int, default 2,000,000
    seed : None or seed-like, optional
    low, high : float
        Exact minimum and maximum of the sample.
    skewness : float, default 0.7365
        Target skewness ``(1/(n·s³)) Σ (x − x̄)³`` (the paper's definition).
    a : float, default 2.0
        First Beta shape (sets how heavy the left part is).

    Returns
    -------
    numpy.ndarray of float64, shape (n,)
    """
    n = check_int(n, "n", 2, what="records in the stream")
    low, high = check_real(low, "low"), check_real(high, "high")
    if not (math.isfinite(low) and math.isfinite(high) and math.isfinite(high - low)
            and high > low):
        raise InputError(
            f"need finite low < high whose difference is finite, got low={low!r}, "
            f"high={high!r}; rescale the stream"
        )
    b = beta_shape_for_skewness(a, skewness)
    draws = as_generator(seed).beta(a, b, size=n)
    lo, hi = draws.min(), draws.max()
    return np.rint(low + (draws - lo) / (hi - lo) * (high - low))
