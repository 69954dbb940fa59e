"""ε-differentially private synthetic locations: noisy counts, noise-aware fit, DP releases.

The pipeline, every step after the first being post-processing of a DP output:

1. :func:`dp_counts` adds two-sided geometric (discrete Laplace) noise to every (cell,
   attribute-combination) count of a lattice of public cells and a public attribute domain.
2. :meth:`geosynth.PaivaModel.fit` with the :class:`NoisyCounts` is *noise-aware*: the true counts
   are latent and drawn inside the Gibbs sweep from Poisson(c; λ) × DiscreteLaplace(c̃ − c), in the
   spirit of Charest's (2011) inference on DP synthetic data (Marcolin 2018, §2.6).
3. :func:`dp_synthesize` draws each release from one posterior draw: the number of records of
   every combination is that draw's latent total, and each record's cell follows λ. The original
   records (their attribute values, order, index) are never used, so the release is ε-DP.

:func:`dp_release` runs the three steps; ``geosynth.synthesize(counts, epsilon=...)`` calls it.
Every release records how it was made in ``attrs["geosynth"]``
(:class:`~geosynth.synth.release.ReleaseInfo`: method ``"paiva-dp"``, ε, neighbour relation,
ledger and size rule), and :attr:`DPRelease.info` is the record of the whole run.

Neighbouring datasets. ε is stated for *add/remove-one-record* neighbours (unbounded DP): adding
or removing a record changes exactly one count by one, so the sensitivity of the whole table is 1
and, by parallel composition over the disjoint (cell, combination) partitions, the table costs ε.
Under *replace-one* neighbours a record can leave one count and enter another: sensitivity 2, and
:func:`dp_counts` with ``neighbours="replace"`` doubles the noise scale for the same ε.

What must be public. The lattice (build it from the study region, not from the points, e.g. not
:meth:`Grid.from_points`; with its links, and the exposure of areal units, ``Grid.exposure``,
which every release follows whatever ε: a population, never counts of the records), the
attribute domain and the model settings. The number of records is
public only if you say so (``n_public``, below). The counts must be prepared on the declared
domain, ``geosynth.prepare(gdf, grid, attributes, levels={attribute: [public levels]})``, which
refuses nothing on the records' values (it drops the records it cannot count): every entry point
here refuses other counts (:func:`public_domain`), since accepting or refusing data on its
values would itself disclose them, ε = ∞ for that event.

Size of a release. One of two rules, recorded in every release's ``attrs["geosynth"]["size"]``
(and in :attr:`DPRelease.size`; never a seed):

* ``n_public=N`` (CLI ``--public-total N``), when the number of records is *already published*
  (an official statistic, a press release): every release has exactly ``N`` records. The split
  over attribute combinations is a multinomial draw with the probabilities of the posterior
  draw's latent combination totals (of λ's combination sums where those are all 0), the cells
  follow λ. ``N`` is used as it is and is not protected by ε: pass it only when it is public
  already, never the confidential count of a file nobody has published.
* otherwise (``"dp-estimate"``) a release has the posterior draw's latent total number of records,
  a post-processed estimate of the true total, clipped to ``[0, cap]`` with
  ``cap = ceil(max(T̃, 0) + 5σ)``, where ``T̃`` is the noisy total of the table and
  ``σ = √K · sd`` the standard deviation of its noise (``K`` counts, each with the discrete
  Laplace sd ``√(2α) / (1 − α)``, ``α = e^{−1/b}``): the true total exceeds the cap with
  probability below 0.05% (at most 4.2e-4, for one count; up to 1.9e-4 for 25 counts, at the
  large ε whose noise is nearly nil; about 3e-7, the Gaussian tail, once the noise of the total
  is wide, ``σ`` well above 1, as at ε ≤ 1: computed by convolving the counts' noise; this
  said 3e-7 for tables of many counts whatever ε); ``max_records=`` lowers the
  cap. A draw above the cap is cut down to it by a multinomial draw in proportion to the
  combinations' totals (so one combination may, by chance, get more than its own total). See
  :meth:`NoisyCounts.total_upper_bound`.

Small ε. The noise scale ``b = Δ/ε`` grows without bound as ε shrinks, and with it what a
release costs: the posterior lets every count's intensity λ roam over ~``b`` (the released counts
cannot tell 0 from ``b``), the fit enumerates each latent count over ~``17·√λ`` values, several
times per (cell, combination) and sweep, and a release holds on the order of ``K·b`` records
(``ε = 1e-300`` once ended in a 10.9 TiB allocation, ``1e-6`` in releases of 1.4 million and 0
records from 3,000). :func:`dp_release` therefore refuses, *before any budget is spent* and
from public quantities only (lattice, domain, ``m``, ``n_iter``, ``chains``, ``n_public``,
``max_records``), an ε whose

* noise scale exceeds :data:`~geosynth.dp.mechanisms.MAX_INTEGER_NOISE_SCALE` (int64 counts);
* releases could need more than ``max_bytes`` (default 4 GiB, at
  :data:`RELEASE_BYTES_PER_RECORD` bytes per record and ``m`` releases held at once; without
  ``n_public`` or ``max_records`` the noise part ``5σ`` of the cap alone counts);
* noise-aware fit would spend more than :data:`MAX_NOISE_SECONDS` (1 hour) enumerating the
  latent counts on top of what noise of scale 1 costs, and more than 10 times it (an upper
  estimate: every λ at ``b``, timings of the 2-core benchmark machine).

The message names ``epsilon``, the scale, the memory and time it would need, and the smallest ε
that would work for this table and run. After the noise is drawn (post-processing of the DP
table), the full cap is checked against ``max_bytes`` again before the fit. Separately,
:func:`dp_counts` warns (:class:`~geosynth.errors.DataWarning`) when ``b`` exceeds the records
of a typical lattice cell, ``max(T̃ − 2σ, 0) / G`` (a lower confidence bound of the mean count
per cell, from the noisy table): the release will then be mostly noise. On the thesis scenario
(500 records, 10 x 10 lattice, 12 combinations) that is ε below about 0.4.
"""

from __future__ import annotations

import itertools
import math
import numbers
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import geopandas as gpd
import numpy as np
import pandas as pd

from geosynth._messages import caller_stacklevel, format_bytes
from geosynth._random import SeedLike
from geosynth._validation import (
    check_choice,
    check_epsilon,
    check_m,
    check_max_bytes,
    check_public_lattice,
    refuse_masked,
)
from geosynth.data import CellCounts, CountTable, check_levels
from geosynth.dp._randomness import noise_source, private_generator, private_seed
from geosynth.dp.accountant import Accountant, ledger_of
from geosynth.dp.mechanisms import MAX_INTEGER_NOISE_SCALE, geometric
from geosynth.errors import (
    CRSError,
    DataWarning,
    InputError,
    MemoryLimitError,
    PrivacyLeakWarning,
)
from geosynth.lattice import Grid, parse_crs, require_projected_crs
from geosynth.model.stopping import DEFAULT_MAX_RHAT, DEFAULT_TARGET_ESS
from geosynth.rasters import WeightsLike, pixel_table
from geosynth.synth.paiva import PosteriorDraws, release_draws
from geosynth.synth.placement import place, unweighted_note, warn_of_unweighted
from geosynth.synth.release import NOISE_EXTERNAL, ReleaseInfo, make_release

if TYPE_CHECKING:
    from geosynth.model import PaivaModel

__all__ = [
    "NoisyCounts",
    "NoiseAwareDraws",
    "neighbour_sensitivity",
    "DPRelease",
    "dp_counts",
    "dp_synthesize",
    "dp_release",
    "dp_model",
    "full_table",
    "public_domain",
    "check_geometry_name",
    "DEFAULT_MAX_BYTES",
    "MAX_NOISE_SECONDS",
    "RELEASE_BYTES_PER_RECORD",
    "TOTAL_CAP_SDS",
    "DP_EFFECT_VAR",
]

_NEIGHBOURS = {"add-remove": 1, "replace": 2}

#: Default bound on the memory of the ``m`` releases held at once (and of the fit's draws).
DEFAULT_MAX_BYTES = 4 * 2**30
#: Memory of one released record (a shapely point, its attribute values and index; measured
#: about 250 bytes kept and 300 at peak on a two-attribute release).
RELEASE_BYTES_PER_RECORD = 256
#: The DP-estimate cap of a release's size is the noisy total plus this many noise SDs.
TOTAL_CAP_SDS = 5.0
#: Prior variance of every combination's effect and every ICAR field's mean in :func:`dp_model`
#: (weakly informative: sd 2 on the log scale, against the exact fit's 10).
DP_EFFECT_VAR = 4.0
#: Refuse an ε whose latent-count enumeration would add more than this many seconds to the fit
#: (and more than ``_NOISE_SLOWDOWN`` times the fit's own enumeration time).
MAX_NOISE_SECONDS = 3600.0
_NOISE_SLOWDOWN = 10.0
# The mostly-noise warning compares b with max(T̃ − 2σ, 0) / G, a ~97.7% lower bound.
_MOSTLY_NOISE_SDS = 2.0
# Cost of one enumeration of a latent count (latent_log_marginal / draw_latent_count), twice
# what the Zen 5 benchmark machine measured (2026-11-29, λ from 1 to 1e10, b from 1 to 1e6):
# 40-56 ns, and 16-23 ns per unit of sqrt(λ) where the noise lets the walk reach it.
# Calls per sweep per (cell, combination): 6 (refresh, μ, θ, ε, the combination moves, the draw
# of the count) plus one per attribute (its levels' α moves and its level move cover every
# combination once).
_SECONDS_PER_ENUMERATION = 1e-7
_SECONDS_PER_SQRT_LAMBDA = 5e-8
_LATENT_CALLS_BASE = 6


#: :class:`NoisyCounts` warns of a table that looks clipped at 0 when a table noised as it
#: states would show no negative count among its zeros with less than this probability.
CLIPPED_TABLE_P = 1e-6


def _warn_if_clipped(counts: np.ndarray, scale: float) -> None:
    """Warn of a table of no negative count whose zeros say it was clipped at 0.

    Under discrete Laplace noise of scale ``b`` (``α = e^{−1/b}``), a count ``c ≥ 0`` noised to
    ``ñ ≤ 0`` is exactly 0 with probability ``1 − α`` whatever ``c`` (``P(ñ = −j) ∝ α^j``), so
    ``k`` zeros and no negative count have probability ``(1 − α)^k``. An agency's table clipped
    at 0 (post-processing the noise-aware fit does not model) was fitted as if unclipped, its
    sparse cells' intensities biased upwards, without a word.
    """
    zeros = int(np.count_nonzero(counts == 0))
    if zeros == 0 or (counts < 0).any():
        return
    log_p = zeros * math.log1p(-math.exp(-1.0 / scale))
    if log_p < math.log(CLIPPED_TABLE_P):
        warnings.warn(
            f"NoisyCounts: the table has {zeros:,} zero counts and no negative one; noise of "
            f"scale b = {scale:.3g} leaves a count at 0 rather than below it with probability "
            f"{-math.expm1(-1.0 / scale):.3g}, so {zeros:,} zeros and no negative count happen "
            f"with probability about 10^{log_p / math.log(10):.0f}: the table looks clipped at "
            "0, which the noise-aware fit does not model (it would overstate sparse cells); "
            "pass the counts as noised, negative ones included",
            DataWarning,
            stacklevel=4,
        )


@dataclass(frozen=True, eq=False)
class NoisyCounts(CountTable):
    """ε-DP counts per (cell, attribute combination), from :func:`dp_counts`.

    Holds only released quantities: no record, cell id of a record, index or exact count.
    Built by hand (counts someone else noised, e.g. an agency's DP table, to fit them
    noise-aware), it records ``noise="external"``: geosynth did not draw the noise, so the
    ``epsilon`` it states, and every release drawn from it states, is the caller's word. A
    table whose zeros and lack of negative counts are less likely than
    :data:`CLIPPED_TABLE_P` under the noise it states looks clipped at 0, and is warned of
    (:class:`~geosynth.errors.DataWarning`): the noise-aware fit models unclipped noise.

    Attributes
    ----------
    counts : numpy.ndarray of int64, shape (G, B)
        Noisy counts c̃ = c + noise; may be negative (keep them so: clipping would bias).
    combos : pandas.DataFrame
        Every combination of the public attribute domain (``B`` rows, codes in the order of
        ``levels``): attribute columns, ``<attribute>_code`` columns and ``n_records``, the noisy
        total of the combination (sum of its noisy counts; post-processing).
    attributes : tuple of str
    levels : dict of str to list
        The public attribute domain.
    grid : geosynth.lattice.Grid
    epsilon : float
        Privacy loss of the table.
    sensitivity : int
        1 for add/remove-one neighbours, 2 for replace-one.
    neighbours : str
        ``"add-remove"`` or ``"replace"``, the relation ``epsilon`` refers to.
    ledger : dict or None
        ``Accountant.to_dict()`` after the spend, when an accountant was given.
    noise : str
        ``"os-entropy"`` from :func:`dp_counts`, ``"seeded"`` when it was given a seed (tests
        only: the counts are then not ε-DP, and every release drawn from them records so), or
        ``"external"`` for counts built by the caller (not a parameter: only :func:`dp_counts`
        states that geosynth drew the noise).
    continuous, zbar : None
        Always None: a table of noisy counts carries no continuous column (the fit and
        :func:`geosynth.synthesize` read these fields of any counts).
    """

    counts: np.ndarray
    combos: pd.DataFrame
    attributes: tuple[str, ...]
    levels: dict[str, list]
    grid: Grid
    epsilon: float
    sensitivity: int
    neighbours: str
    ledger: dict | None = None
    # Not a parameter: only dp_counts, which drew the noise, sets it. A hand-built table of the
    # exact counts stated noise="os-entropy" at epsilon=0.1, and so did every release of it.
    noise: str = field(default=NOISE_EXTERNAL, init=False)
    continuous: None = None
    zbar: None = None

    def __post_init__(self) -> None:
        self._check_privacy()
        if not isinstance(self.combos, pd.DataFrame):  # len(None) raised a bare TypeError
            raise InputError(
                f"NoisyCounts: combos must be a pandas DataFrame with a row per combination of "
                f"the public domain, got {type(self.combos).__name__}; take it from dp_counts(...)"
                ".combos or geosynth.data.domain_combos(levels)"
            )
        counts, shape = self.counts, (getattr(self.grid, "n_cells", None), len(self.combos))
        refuse_masked(counts, "NoisyCounts: counts")  # a masked table crashed in the fit
        if not isinstance(counts, np.ndarray) or counts.ndim != 2 or counts.dtype.kind not in "iu" \
                or counts.shape[1] != shape[1] or shape[0] not in (None, counts.shape[0]):
            raise InputError(
                "NoisyCounts: counts must be an integer numpy array of shape (cells, "
                f"combinations) = {shape}, got "
                f"{type(counts).__name__} of shape {getattr(counts, 'shape', None)} and dtype "
                f"{getattr(counts, 'dtype', None)}; the noise-aware fit models counts noised by "
                "the two-sided geometric (discrete Laplace) mechanism, whose counts are integers "
                "(continuous Laplace noise, rounded, is not that noise)"
            )
        if counts.dtype == np.uint64 and counts.size and counts.max() > np.iinfo(np.int64).max:
            raise InputError("NoisyCounts: counts beyond the int64 range; no cell holds that many "
                             "records: check the table (a sentinel or an overflow?)")
        # The table's own copy, C-ordered int64 for the kernels (a Fortran-ordered table failed
        # in numba), and read-only: the caller's array is left as it was.
        own = np.array(counts, dtype=np.int64, order="C")
        own.setflags(write=False)
        object.__setattr__(self, "counts", own)
        object.__setattr__(self, "epsilon", float(self.epsilon))  # a float32 ε: float32 scale
        _warn_if_clipped(own, self.noise_scale)

    def _check_privacy(self) -> None:
        """Refuse an ε or a neighbour relation a release could not state truthfully.

        Built by hand, ``epsilon=True``, ``"1"`` or NaN went into every release's record, and
        ``sensitivity=0`` divided by zero in the noise scale. A lattice from
        :meth:`Grid.from_points` was accepted too: every release then lay within bounds that
        follow the outermost confidential points, labelled ε-DP (no finite ε holds; see
        :func:`~geosynth._validation.check_public_lattice`).
        """
        check_epsilon(self.epsilon, "epsilon", hint="pass the ε the counts were noised with")
        check_public_lattice(self.grid, "NoisyCounts")
        expected = neighbour_sensitivity(self.neighbours)
        if isinstance(self.sensitivity, bool | np.bool_) or self.sensitivity != expected:
            raise InputError(
                f"NoisyCounts: sensitivity must be {expected} for neighbours="
                f"{self.neighbours!r}, got {self.sensitivity!r}"
            )

    @property
    def noise_scale(self) -> float:
        """Scale b = Δ/ε of the discrete Laplace noise, P(k) ∝ exp(−|k|/b)."""
        return self.sensitivity / self.epsilon

    @property
    def n_records(self) -> int:
        """Noisy total of the records, clipped at 0 (a released quantity)."""
        return max(int(self.counts.sum()), 0)

    @property
    def noise_sd(self) -> float:
        """Standard deviation √(2α)/(1 − α), α = e^{−1/b}, of the noise of one count."""
        return _discrete_laplace_sd(self.noise_scale)

    def total_upper_bound(self, max_records: int | None = None) -> int:
        """Cap of a release's size under the ``"dp-estimate"`` rule (see the module docstring).

        ``ceil(max(T̃, 0) + 5σ)`` with ``T̃`` the noisy total and ``σ = √K · noise_sd`` the
        standard deviation of the summed noise of the ``K`` counts; the true total exceeds it
        with probability below 0.1%. A function of the noisy table only (post-processing).

        Parameters
        ----------
        max_records : int, optional
            A lower cap to apply (an int >= 1).

        Returns
        -------
        int

        Raises
        ------
        geosynth.errors.InputError
            ``max_records`` is not an int >= 1 (``-5`` was returned as the cap, ``1.5`` cut to
            1 and ``"a"`` raised a bare ValueError).
        """
        max_records = _check_count(max_records, "max_records",
                                   "pass the largest size a release may have, or omit it")
        sd = math.sqrt(self.counts.size) * self.noise_sd
        cap = math.ceil(self.n_records + TOTAL_CAP_SDS * sd)
        return cap if max_records is None else min(cap, max_records)

    def release_info(self) -> ReleaseInfo:
        """Return what a release drawn from these counts records about its privacy.

        Returns
        -------
        geosynth.synth.release.ReleaseInfo
            Method ``"paiva-dp"``, ``epsilon``, ``neighbours``, ``noise`` and ``ledger``.
        """
        return ReleaseInfo(method="paiva-dp", epsilon=self.epsilon, neighbours=self.neighbours,
                           noise=self.noise, ledger=self.ledger)

    def __repr__(self) -> str:
        return (f"NoisyCounts(epsilon={self.epsilon:g}, neighbours={self.neighbours!r}, "
                f"noise={self.noise!r}, n_cells={self.n_cells}, n_combos={self.n_combos}, "
                f"attributes={self.attributes!r})")


def dp_counts(
    counts: CellCounts,
    epsilon: float,
    accountant: Accountant | None = None,
    *,
    levels: dict[str, list] | None = None,
    neighbours: str = "add-remove",
    seed: SeedLike = None,
) -> NoisyCounts:
    """Release every (cell, combination) count with the geometric mechanism (ε-DP).

    Parameters
    ----------
    counts : CellCounts
        Exact counts from ``geosynth.prepare(gdf, grid, attributes, levels=...)``, prepared on
        the public domain of each attribute (see :func:`public_domain`) and on a lattice built
        from public information (a lattice whose bounds came from the points is refused).
        Every combination of the domain gets a noisy count, also those absent from the data:
        publishing only the combinations present would disclose which exist.
    epsilon : float
        Privacy loss of the whole table (parallel composition over disjoint counts).
    accountant : geosynth.dp.Accountant, optional
        Charged ε (label ``"dp_counts"``) before any noise is drawn.
    levels : dict of str to list, optional
        The public domain again, for a check: it must equal the one ``counts`` were prepared
        on. Default: that domain.
    neighbours : {"add-remove", "replace"}
        Neighbouring-dataset relation ε refers to (sensitivity 1 or 2; see module docstring).
    seed : None or int
        For tests only: a seed makes the noise reproducible and triggers a
        :class:`PrivacyLeakWarning`. Leave None for a release (fresh OS entropy via OpenDP).

    Returns
    -------
    NoisyCounts

    Raises
    ------
    geosynth.errors.InputError
        Invalid arguments, a lattice whose bounds came from the points
        (:func:`~geosynth._validation.check_public_lattice`), a continuous variable (not
        supported under DP), counts not prepared on a declared domain (or ``levels`` other
        than it), or an ε whose noise scale overflows int64 counts
        (:func:`~geosynth.dp.mechanisms.geometric`; nothing is spent).
    geosynth.errors.BudgetExceededError
        The accountant's budget cannot pay ε (nothing is drawn).

    Warns
    -----
    geosynth.errors.DataWarning
        The noise scale exceeds the records of a typical lattice cell (a lower bound of the
        mean from the noisy total): the release will be mostly noise.
    geosynth.errors.PrivacyLeakWarning
        ε is so large that a count is published exactly with probability at least
        :data:`~geosynth.dp.mechanisms.NEARLY_EXACT_SHARE` (ε/Δ above about 7.6): the release
        is the exact table in all but name (from :func:`~geosynth.dp.mechanisms.geometric`).
    """
    if not isinstance(counts, CellCounts):
        raise InputError(f"counts must be the CellCounts of geosynth.prepare, got "
                         f"{type(counts).__name__}")
    if counts.covariates:
        raise InputError(
            f"continuous variable(s) {', '.join(map(repr, counts.covariates))}: a DP release of "
            "continuous values needs clamping bounds and its own noisy sums, which geosynth "
            "does not provide yet; prepare the counts without continuous= for a DP release"
        )
    sensitivity = neighbour_sensitivity(neighbours)
    check_public_lattice(counts.grid, "dp_counts")
    domain = public_domain(counts, levels)
    table, combos = full_table(counts, domain)
    # geometric warns of an epsilon that leaves the counts exact, before the spend
    noisy = geometric(table, sensitivity=sensitivity, epsilon=epsilon, seed=seed,
                      accountant=accountant, label="dp_counts")
    noisy = np.asarray(noisy, dtype=np.int64).reshape(table.shape)
    combos["n_records"] = noisy.sum(axis=0)
    result = NoisyCounts(
        counts=noisy, combos=combos, attributes=tuple(counts.attributes), levels=domain,
        grid=counts.grid, epsilon=float(epsilon), sensitivity=sensitivity, neighbours=neighbours,
        ledger=ledger_of(accountant),
    )
    object.__setattr__(result, "noise", noise_source(seed))  # frozen; only here
    _warn_if_mostly_noise(result)
    return result


def _warn_if_mostly_noise(noisy: NoisyCounts) -> None:
    """DataWarning when b exceeds the records of a lattice cell (post-processing only).

    The typical cell count is a lower confidence bound of the mean records per cell,
    ``max(T̃ − 2σ, 0) / G`` (``σ`` the SD of the summed noise): the noisy total alone would
    hide the problem whenever a large positive noise draw inflates it.
    """
    scale = noisy.noise_scale
    sd = math.sqrt(noisy.counts.size) * noisy.noise_sd
    total = int(noisy.counts.sum())
    typical = max(total - _MOSTLY_NOISE_SDS * sd, 0.0) / noisy.n_cells
    if scale <= typical:
        return
    larger = (f"a larger epsilon (above {noisy.sensitivity / typical:.2g} for this table)"
              if typical > 0 else "a much larger epsilon")
    # A bound of 0 read as "more than the 0 records a lattice cell surely holds": nonsense.
    held = (f"more than the {typical:.3g} records a lattice cell surely holds on average (a "
            f"97.7% lower bound from the noisy total {total} over {noisy.n_cells} cells)"
            if typical > 0 else
            f"and the noisy total {total} over {noisy.n_cells} cells cannot tell, at 97.7%, "
            "that a lattice cell holds any record on average")
    warnings.warn(
        f"dp_counts: epsilon={noisy.epsilon:g} (sensitivity {noisy.sensitivity}) adds noise of "
        f"scale {scale:.3g} to every count, {held}: the counts, and every release drawn from "
        f"them, will be mostly noise. Use {larger}, a coarser lattice or fewer attributes",
        DataWarning, stacklevel=caller_stacklevel(),
    )


def public_domain(
    counts: CellCounts, levels: dict[str, list] | None, where: str = "dp_counts"
) -> dict[str, list]:
    """Return the public attribute domain of a DP release: the one ``counts`` were prepared on.

    A DP entry point takes only counts prepared on a declared domain
    (``geosynth.prepare(..., levels=...)``, :attr:`CellCounts.domain_declared`): an ordinary
    preparation refuses or accepts the data on facts of the records (levels outside the domain,
    identifying attributes, more combinations than records), and that refusal alone would
    disclose them, whatever the noise. Nothing here reads the records.

    Parameters
    ----------
    counts : CellCounts
        Counts from ``geosynth.prepare(gdf, grid, attributes, levels=...)``.
    levels : dict of str to list, or None
        None, or the same domain again (checked by :func:`geosynth.data.check_levels`).
    where : str, default "dp_counts"
        The caller named in the messages (e.g. ``"OnTheMapSynthesizer"``).

    Returns
    -------
    dict of str to list
        The levels of every attribute, in code order.

    Raises
    ------
    geosynth.errors.InputError
        ``counts`` were not prepared on a declared domain, or ``levels`` is invalid or differs
        from it.
    """
    if not counts.domain_declared:
        raise InputError(
            f"{where} needs counts prepared on the public domain: geosynth.prepare(gdf, grid, "
            "attributes, levels={attribute: [public levels]}) (CLI: --levels-file). Counts "
            "prepared without levels= were accepted or refused on facts of the records (their "
            "levels, identifying attributes, combinations against records), which no noise "
            "can protect"
        )
    if levels is not None and check_levels(levels, counts.attributes) != counts.levels:
        raise InputError(
            f"{where}: levels differ from the domain the counts were prepared on "
            f"({counts.levels}); pass the public levels to geosynth.prepare(levels=...) only"
        )
    return {a: list(counts.levels[a]) for a in counts.attributes}


def full_table(counts: CellCounts, domain: dict[str, list]) -> tuple[np.ndarray, pd.DataFrame]:
    """Count every combination of a public domain, also those absent from the data.

    Parameters
    ----------
    counts : CellCounts
        Exact counts from :func:`geosynth.prepare`.
    domain : dict of str to list
        The public levels of every attribute (:func:`public_domain`).

    Returns
    -------
    table : numpy.ndarray of int64, shape (G, B_full)
        Counts per (cell, combination of ``domain``), combinations in lexicographic order of
        the level codes (the last attribute fastest); 0 for combinations absent from the data.
    combos : pandas.DataFrame
        ``B_full`` rows: a column per attribute (its level) and ``<attribute>_code``.
    """
    attributes = list(counts.attributes)
    product = list(itertools.product(*(range(len(domain[a])) for a in attributes)))
    combos = pd.DataFrame({a: [domain[a][c[k]] for c in product] for k, a in enumerate(attributes)})
    for k, a in enumerate(attributes):
        combos[f"{a}_code"] = np.array([c[k] for c in product], dtype=np.int64)
    sizes = [len(domain[a]) for a in attributes]
    position = np.zeros(counts.n_combos, dtype=np.int64)
    for a, size in zip(attributes, sizes, strict=True):
        index = {v: j for j, v in enumerate(domain[a])}
        position = position * size + counts.combos[a].map(index).to_numpy(dtype=np.int64)
    table = np.zeros((counts.n_cells, len(product)), dtype=np.int64)
    table[:, position] = counts.counts
    return table, combos


class NoiseAwareDraws(PosteriorDraws, Protocol):
    """What :func:`dp_synthesize` reads of a noise-aware fit: λ draws and latent totals.

    A :class:`geosynth.PaivaFit` of :class:`NoisyCounts` has it: the posterior draws of λ and,
    with each, the latent total of every combination.

    Attributes
    ----------
    counts : NoisyCounts
        The noisy counts the model was fitted to.
    latent_totals : numpy.ndarray of float64, shape (chains, draws, B)
        Latent total of every combination at each retained draw.
    """

    counts: Any
    latent_totals: np.ndarray | None

    def draw_position(self, index: int) -> tuple[int, int]:
        """``(chain, retained draw)`` of stored draw ``index``."""


@dataclass
class DPRelease:
    """Result of :func:`dp_release`: everything here is ε-DP and may be published.

    Attributes
    ----------
    releases : list of geopandas.GeoDataFrame
        The synthetic datasets.
    fit : geosynth.PaivaFit
        The noise-aware fit (a function of the noisy counts only).
    noisy : NoisyCounts
    accountant : geosynth.dp.Accountant
        The budget and its ledger (or the object with a ``spend`` method that was given).
    size : dict
        How the releases' sizes were set (also in each release's ``attrs["geosynth"]["size"]``):
        ``{"rule": "n_public", "n_public": N}`` or ``{"rule": "dp-estimate", "cap": C,
        "cap_from": "noisy total + 5 sd" | "max_records", "noisy_total": T̃}``.
    """

    releases: list[gpd.GeoDataFrame]
    fit: Any
    noisy: NoisyCounts
    accountant: Accountant = field(repr=False)
    size: dict = field(default_factory=dict)

    @property
    def epsilon(self) -> float:
        """Privacy loss of these releases: the ε of the noisy counts they post-process.

        Not ``accountant.spent_epsilon``, which also counts what other releases charged a shared
        accountant (and which an accountant given as any object with ``spend`` may not have).
        """
        return self.noisy.epsilon

    @property
    def info(self) -> ReleaseInfo:
        """How the releases were made, as :func:`geosynth.io.write_release` records it.

        Method ``"paiva-dp"``, ε and neighbour relation of the noisy counts, the accountant's
        ledger as it was when they were drawn (the releases' own record: later spends of a
        shared accountant are not theirs, and :func:`geosynth.io.write_release` refuses a
        record that contradicts the releases'), the size rule and, under the ``"n_public"``
        rule, the published total. Pass it as ``write_release(..., metadata=result.info)``.
        """
        ledger = self.noisy.ledger if self.noisy.ledger is not None else ledger_of(self.accountant)
        return self.noisy.release_info().replace(
            ledger=ledger, size=dict(self.size),
            n_public=self.size.get("n_public") if self.size.get("rule") == "n_public" else None,
        )


def dp_synthesize(
    fit: NoiseAwareDraws,
    m: int = 5,
    *,
    n_public: int | None = None,
    max_records: int | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    crs: Any = None,
    geometry: str = "geometry",
    weights: WeightsLike = None,
    seed: SeedLike = None,
) -> list[gpd.GeoDataFrame]:
    """Draw ``m`` synthetic releases from a noise-aware fit (post-processing: still ε-DP).

    Release ``l`` uses retained posterior draw ``d = floor((l + ½)·T/m)``
    (:func:`geosynth.synth.release_draws`). Its size follows one of the rules of the module
    docstring ("Size of a release"): exactly ``n_public`` records, split over the combinations
    in proportion to the draw's latent combination totals; or ``N_b`` records of combination
    ``b``, the draw's latent total of ``b``, thinned to the cap
    :meth:`NoisyCounts.total_upper_bound` (or ``max_records``) when their sum exceeds it. Each
    record gets a cell ``i`` with probability ``λ_ib / Σ_i' λ_i'b``, then a point in the cell.
    The records' attribute values are those of their combination; rows are shuffled and
    indexed 0..n−1.

    Parameters
    ----------
    fit : NoiseAwareDraws
        A noise-aware fit (``PaivaModel().fit(dp_counts(...))``).
    m : int, default 5
        Number of releases.
    n_public : int, optional
        The number of records, when it is *already published*: every release then has exactly
        this many. Not protected by ε (see the module docstring). CLI ``--public-total``.
    max_records : int, optional
        Upper bound on a release's size under the DP-estimate rule (lowers the default cap).
        Not allowed together with ``n_public``. Published (every release's record and the
        file's metadata give the cap) and not protected by ε: a public number, never one
        taken from the data (``max_records=len(points)`` publishes the exact count).
    max_bytes : int, default 4 GiB
        Refuse (before drawing) when ``m`` releases of the largest allowed size would need more,
        at :data:`RELEASE_BYTES_PER_RECORD` bytes per record.
    crs : optional
        CRS of the lattice's coordinates, for a lattice built without one; otherwise the
        lattice's CRS (the default), or left out. The points are drawn in the lattice's
        coordinates and not reprojected: reproject the releases with ``release.to_crs(...)``.
    geometry : str, default "geometry"
        Name of the geometry column.
    weights : str, os.PathLike, rasterio dataset or geosynth.synth.PixelTable, optional
        Public raster of placement weights within cells (see
        :func:`geosynth.synth.place_in_cells`), or its table already read for ``fit``'s grid.
    seed : None or int
        Tests only (reproducible; :class:`PrivacyLeakWarning`).

    Returns
    -------
    list of geopandas.GeoDataFrame
        Attribute columns and synthetic points; ``attrs["geosynth"]`` holds the method, release
        number, ε, neighbour relation, ledger and the size rule (``"size"``), never a seed
        (:meth:`NoisyCounts.release_info`).

    Raises
    ------
    geosynth.errors.InputError
        ``fit`` is not a noise-aware fit, its lattice took its bounds from the points
        (:func:`~geosynth._validation.check_public_lattice`), or ``m``, ``n_public``,
        ``max_records`` or ``max_bytes`` is invalid.
    geosynth.errors.CRSError
        ``crs`` is not a CRS, is geographic, or differs from the lattice's CRS.
    geosynth.errors.MemoryLimitError
        The releases could need more than ``max_bytes``; nothing was drawn.
    """
    noisy = getattr(fit, "counts", None)
    if not isinstance(noisy, NoisyCounts) or getattr(fit, "latent_totals", None) is None:
        raise InputError(
            "dp_synthesize needs a noise-aware fit of dp_counts(...) output; a fit of exact "
            "counts is not differentially private"
        )
    # Again here: a NoisyCounts unpickled (or altered) without its checks on such a lattice.
    check_public_lattice(noisy.grid, "dp_synthesize")
    m = check_m(m)
    check_geometry_name(geometry, noisy.attributes)
    crs = _release_crs(crs, noisy.grid)
    n_public, max_records, max_bytes = _check_size_options(n_public, max_records, max_bytes)
    size = _size_rule(noisy, m, n_public, max_records, max_bytes)
    rng = private_generator(seed, where="dp_synthesize")
    draws = release_draws(fit, m)
    table = pixel_table(weights, noisy.grid)
    made = [_one_release(fit, noisy, draw, release, size, rng, table, crs, geometry)
            for release, draw in enumerate(draws.tolist())]
    warn_of_unweighted([note for _, note in made])  # one warning, not one a release
    return [release for release, _ in made]


def _release_crs(crs: Any, grid: Grid) -> Any:
    """Return the releases' CRS: the lattice's, or ``crs`` for a lattice without one.

    The points are in the lattice's coordinates; ``crs="EPSG:4326"`` on a lattice in metres
    labelled them as degrees (and an unreadable ``crs`` failed in pyproj after the draws).
    """
    if crs is None:
        return grid.crs
    parsed = parse_crs(crs)
    if grid.crs is None:
        require_projected_crs(parsed, "crs")
        return parsed
    if not parsed.equals(grid.crs):
        raise CRSError(
            f"crs={crs!r} differs from the lattice's CRS {grid.crs.to_string()}: the points are "
            "drawn in the lattice's coordinates and crs only labels them; leave crs out and "
            "reproject the releases with release.to_crs(...)"
        )
    return grid.crs


def _one_release(fit, noisy, draw, release, size, rng, table, crs,
                 geometry) -> tuple[gpd.GeoDataFrame, str | None]:
    """Release number ``release`` from stored draw ``draw`` (λ and the same draw's totals).

    And its :func:`~geosynth.synth.placement.unweighted_note` (None: every point weighted).
    """
    lam = fit.lambda_draw(draw)
    totals = fit.latent_totals[fit.draw_position(draw)]
    n_b = _combination_sizes(lam, totals, size, rng)
    cells, combo = _draw_records(lam, n_b, rng)
    xy = place(noisy.grid, cells, rng, table, warn=False)
    # Combination b is row b of combos (by position: a hand-built table's index may differ).
    data = noisy.combos[list(noisy.attributes)].iloc[combo].reset_index(drop=True)
    info = noisy.release_info().replace(release=release, size=dict(size))
    return make_release(data, xy, geometry, crs, info), unweighted_note(table, cells)


def _combination_sizes(lam: np.ndarray, totals: np.ndarray, size: dict,
                       rng: np.random.Generator) -> np.ndarray:
    """Return the records per combination of one release under the size rule ``size``."""
    n_b = np.rint(np.clip(np.asarray(totals, dtype=np.float64), 0.0, None)).astype(np.int64)
    if size["rule"] == "n_public":
        target = int(size["n_public"])
    elif int(n_b.sum()) > int(size["cap"]):
        target = int(size["cap"])
    else:
        return n_b
    weights = n_b.astype(np.float64) if n_b.sum() > 0 else lam.sum(axis=0)
    return rng.multinomial(target, weights / weights.sum()).astype(np.int64)


def _draw_records(lam: np.ndarray, n_b: np.ndarray, rng: np.random.Generator):
    """Cells and combinations of one release: N_b records of b, cells ~ λ_·b; shuffled."""
    combo = np.repeat(np.arange(lam.shape[1]), n_b)
    cells = np.empty(combo.size, dtype=np.int64)
    start = 0
    for b, n in enumerate(n_b.tolist()):
        if n:
            p = lam[:, b] / lam[:, b].sum()
            cells[start:start + n] = rng.choice(lam.shape[0], size=n, p=p)
        start += n
    order = rng.permutation(combo.size)
    return cells[order], combo[order]


# --------------------------------------------------------------------------------------------
# Size rule and resource checks
# --------------------------------------------------------------------------------------------


def _discrete_laplace_sd(scale: float) -> float:
    """SD √(2α)/(1 − α) of the discrete Laplace noise P(k) ∝ α^|k|, α = e^{−1/scale}."""
    alpha = math.exp(-1.0 / scale)
    return math.sqrt(2.0 * alpha) / -math.expm1(-1.0 / scale)


def _check_count(value: Any, name: str, fix: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral) \
            or value < 1:
        raise InputError(f"{name} must be an int >= 1 or None, got {value!r}; {fix}")
    return int(value)


def _check_size_options(n_public: Any, max_records: Any,
                        max_bytes: Any) -> tuple[int | None, int | None, int]:
    n_public = _check_count(n_public, "n_public",
                            "pass the published number of records, or omit it")
    max_records = _check_count(max_records, "max_records",
                               "pass the largest size a release may have, or omit it")
    if n_public is not None and max_records is not None:
        raise InputError(
            f"n_public={n_public} fixes every release's size, so max_records={max_records} has "
            "no effect; pass only one of them"
        )
    return n_public, max_records, check_max_bytes(max_bytes)


def _size_rule(noisy: NoisyCounts, m: int, n_public: int | None, max_records: int | None,
               max_bytes: int) -> dict:
    """Return the size rule; MemoryLimitError if ``m`` releases may exceed ``max_bytes``."""
    if n_public is not None:
        size: dict[str, Any] = {"rule": "n_public", "n_public": n_public}
        largest = n_public
    else:
        cap = noisy.total_upper_bound()
        cap_from = "noisy total + 5 sd"
        if max_records is not None and max_records < cap:
            cap, cap_from = max_records, "max_records"
        size = {"rule": "dp-estimate", "cap": cap, "cap_from": cap_from,
                "noisy_total": int(noisy.counts.sum())}
        largest = cap
    need = m * largest * RELEASE_BYTES_PER_RECORD
    if need > max_bytes:
        if n_public is not None:
            why = f"n_public={n_public} records each"
            fix = _fewer_releases_fix(m, "n_public")
        else:
            why = (f"up to {largest:,} records each (the noisy total "
                   f"{int(noisy.counts.sum()):,} plus 5 sd of its noise at "
                   f"epsilon={noisy.epsilon:g}, noise scale {noisy.noise_scale:.3g})"
                   if size["cap_from"] != "max_records" else
                   f"up to max_records={largest:,} records each")
            fix = ("pass n_public= if the number of records is already published, or use a "
                   "larger epsilon (in Python, max_records= also caps each release and "
                   "max_bytes raises the limit)")
        raise MemoryLimitError(
            f"{m} release(s) of {why} could need {format_bytes(need)} (at "
            f"{RELEASE_BYTES_PER_RECORD} bytes per record), over max_bytes = "
            f"{format_bytes(max_bytes)}; {fix}"
        )
    return size


def _format_count(n: float) -> str:
    return f"{n:,.0f}" if n < 1e12 else f"{n:.3g}"


def _format_seconds(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:.0f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:,.0f} days"


def neighbour_sensitivity(neighbours: Any) -> int:
    """Return the L1 sensitivity of a count table under the relation ``neighbours``.

    Parameters
    ----------
    neighbours : {"add-remove", "replace"}
        Neighbouring datasets differ by one record added or removed (1), or one record replaced
        (2: one count down, another up).

    Returns
    -------
    int

    Raises
    ------
    geosynth.errors.InputError
        Any other value (an InputTypeError for a list, an array or other non-str).
    """
    return _NEIGHBOURS[check_choice(neighbours, "neighbours", tuple(_NEIGHBOURS))]


#: dp_release's default ``burn_in`` for a fixed ``n_iter`` (the exact fit's is 2000).
DP_BURN_IN = 1000


def _fit_settings(model: Any, n_iter: Any, burn_in: Any, thin: Any, chains: Any, progress: Any,
                  stop: Any, target_ess: Any, max_rhat: Any, max_seconds: Any) -> dict:
    """Check the fit's settings as :meth:`PaivaModel.fit` will, before the budget is spent.

    Returns the keyword arguments of ``model.fit`` (besides counts, seed and max_bytes). A
    setting refused by the fit after :func:`dp_counts` had charged the accountant wasted ε
    (a typo in ``thin`` cost the whole budget and released nothing).
    """
    from geosynth._validation import check_bool
    from geosynth.model.fit import check_run_settings

    if not callable(getattr(model, "fit", None)):
        raise InputError(f"model must be a geosynth.PaivaModel, got {type(model).__name__}")
    if getattr(model, "sampler", None) == "block":
        raise InputError("model: sampler='block' has no noise-aware fit yet; use "
                         "dp_model() (sampler='gibbs')")
    if getattr(model, "beta_prior", None) is not None:  # refused by the fit, after the spend
        raise InputError(f"model: beta_prior={model.beta_prior!r} needs a continuous "
                         "covariate, and ε-DP counts carry none; use dp_model() (no beta_prior)")
    run: dict[str, Any] = {"thin": thin, "chains": chains, "stop": stop,
                           "progress": check_bool(progress, "progress")}
    auto = isinstance(n_iter, str) and n_iter == "auto"
    if not auto and burn_in is None:
        burn_in = DP_BURN_IN
    check_run_settings(n_iter, burn_in, thin, chains, target_ess, max_rhat, max_seconds,
                       stop=stop)
    if auto:
        return {**run, "n_iter": "auto", "burn_in": burn_in, "target_ess": target_ess,
                "max_rhat": max_rhat, "max_seconds": max_seconds}
    return {**run, "n_iter": n_iter, "burn_in": burn_in}


def check_geometry_name(geometry: Any, attributes: tuple[str, ...]) -> None:
    """Refuse a geometry column name that is not a str or would overwrite an attribute.

    The one check of the ``geometry`` of the ε-DP point releases (:func:`dp_release`,
    :meth:`geosynth.dp.onthemap.OnTheMapSynthesizer.sample`): a name equal to an attribute's
    replaced that attribute with the points, after ε was spent.

    Parameters
    ----------
    geometry : str
        Name of the geometry column of the release.
    attributes : tuple of str
        The release's attribute columns.

    Raises
    ------
    geosynth.errors.InputError
        ``geometry`` is not a non-empty str, or is one of ``attributes``.
    """
    if not isinstance(geometry, str) or not geometry or geometry in attributes:
        raise InputError(
            f"geometry must be a column name (a non-empty str) other than the attributes "
            f"{list(attributes)}, got {geometry!r}; e.g. geometry='geometry'"
        )


def _check_run(n_iter: Any, chains: Any) -> tuple[int, int]:
    """Sweeps (for the small-ε check: :data:`AUTO_SWEEPS` for ``"auto"``) and chains."""
    if isinstance(n_iter, str) and n_iter == "auto":
        n_iter = AUTO_SWEEPS
    for name, value in (("n_iter", n_iter), ("chains", chains)):
        if isinstance(value, bool | np.bool_) or not isinstance(value, numbers.Integral) \
                or value < 1:
            also = " or 'auto'" if name == "n_iter" else ""
            raise InputError(f"{name} must be an int >= 1{also}, got {value!r}")
    return int(n_iter), int(chains)


#: Sweeps per chain that the small-ε check assumes for ``n_iter="auto"``, whose length is not
#: known in advance: the fixed default of ``PaivaModel.fit`` (and of the command line before
#: ``--iterations auto``).
AUTO_SWEEPS = 8000


def _check_small_epsilon(
    *, epsilon: float, sensitivity: int, n_cells: int, n_combos: int, n_attributes: int,
    m: int, n_iter: int, chains: int, n_public: int | None, max_records: int | None,
    max_bytes: int,
) -> None:
    """Refuse, before any budget is spent, an ε this table and run cannot afford.

    Uses public quantities only (the lattice size, the domain, the run settings), never the
    confidential counts: a refusal that depended on them would itself disclose something.
    """
    from geosynth.model.noise_aware import ETA_LIMIT

    scale = sensitivity / epsilon
    problems = []
    largest_scale = [MAX_INTEGER_NOISE_SCALE]
    memory_scale = math.inf  # the largest scale whose noisy total fits max_bytes, unsized
    if scale > MAX_INTEGER_NOISE_SCALE:
        problems.append(
            f"the noise would overflow int64 counts (scale above {MAX_INTEGER_NOISE_SCALE:.3g})"
        )
    # Memory of the m releases held at once.
    n_counts = n_cells * n_combos
    if n_public is not None or max_records is not None:
        records = n_public if n_public is not None else max_records
        name = "n_public" if n_public is not None else "max_records"
        need = m * records * RELEASE_BYTES_PER_RECORD
        if need > max_bytes:  # not a matter of epsilon
            raise MemoryLimitError(
                f"{m} release(s) of {name}={records:,} records each could need "
                f"{format_bytes(need)} (at {RELEASE_BYTES_PER_RECORD} bytes per record), over "
                f"max_bytes = {format_bytes(max_bytes)}; {_fewer_releases_fix(m, name)}. "
                "Nothing was spent"
            )
    else:
        sd_total = math.sqrt(n_counts) * _discrete_laplace_sd(min(scale, 1e300))
        records = TOTAL_CAP_SDS * sd_total
        per_release = (f"up to {_format_count(records)} records each (5 sd of the noisy "
                       "total: without n_public a release's size is a DP estimate)")
        # sd <= sqrt(2)·scale, so this scale keeps 5·sd_total within max_bytes.
        memory_scale = max_bytes / (m * RELEASE_BYTES_PER_RECORD * TOTAL_CAP_SDS
                                    * math.sqrt(2.0 * n_counts))
        largest_scale.append(memory_scale)
        need = m * records * RELEASE_BYTES_PER_RECORD
        if need > max_bytes:
            problems.append(
                f"{m} release(s) of {per_release} could need {format_bytes(need)}, over "
                f"max_bytes = {format_bytes(max_bytes)}"
            )
    # Time of the latent-count enumeration of the noise-aware fit.
    calls = float(n_iter) * chains * (_LATENT_CALLS_BASE + n_attributes) * n_counts
    base = calls * (_SECONDS_PER_ENUMERATION + _SECONDS_PER_SQRT_LAMBDA)
    allowed = max(MAX_NOISE_SECONDS, _NOISE_SLOWDOWN * base)
    reach = min(scale, math.exp(ETA_LIMIT))
    extra = calls * _SECONDS_PER_SQRT_LAMBDA * (math.sqrt(reach) - 1.0)
    if calls * _SECONDS_PER_SQRT_LAMBDA * (math.exp(ETA_LIMIT / 2) - 1.0) > allowed:
        largest_scale.append((1.0 + allowed / (calls * _SECONDS_PER_SQRT_LAMBDA)) ** 2)
    if extra > allowed:
        problems.append(
            f"the noise-aware fit would enumerate latent counts up to ~{reach:.3g} per cell "
            f"({chains} chain(s) x {n_iter} sweeps x {n_counts:,} counts): up to about "
            f"{_format_seconds(extra)} of extra sampling, over the {_format_seconds(allowed)} "
            "allowed"
        )
    if not problems:
        return
    smallest = sensitivity / min(largest_scale)
    options = ("pass n_public= if the number of records is already published (in Python, "
               "max_records= also caps each release); or "
               if n_public is None and max_records is None else "")
    # The releases also hold the records, whose number is not public: at the ε that bounds the
    # noise the noisy total may still exceed max_bytes, after the spend (12 runs of 20).
    caveat = (" for the noise alone (each release also holds the records, whose number only "
              "the noisy total tells: at that epsilon they may still exceed the memory limit "
              "after the budget is spent, unless n_public= bounds them (in Python, "
              "max_records= too))"
              if memory_scale == min(largest_scale) else "")
    raise InputError(
        f"epsilon={epsilon!r} is too small for this table: with sensitivity {sensitivity} the "
        f"noise scale is {scale:.3g} on each of {n_counts:,} counts ({n_cells:,} cells x "
        f"{n_combos} combinations), so " + "; ".join(problems) + ". The smallest epsilon that "
        f"works here is about {_round_up(smallest)}{caveat}; otherwise {options}use fewer sweeps "
        f"(now n_iter={n_iter}), chains (now chains={chains}) or releases (now m={m}), a "
        "coarser lattice or fewer attributes. Nothing was spent"
    )


def _round_up(value: float, digits: int = 2) -> str:
    """Format ``value`` with ``digits`` significant digits, rounded up (never below it)."""
    exponent = math.floor(math.log10(value)) - digits + 1
    rounded = math.ceil(value / 10.0**exponent) * 10.0**exponent
    return f"{rounded:.{digits}g}"


def dp_model(sampler: str = "gibbs", effects: str = "combination") -> PaivaModel:
    """Return the model :func:`dp_release` fits by default, with the given ``sampler``.

    ``PaivaModel(effects="combination", sampler=sampler, priors=Priors(alpha_var=4,
    level_var=4))``: every combination has its own level and ICAR field, so its total is learnt
    from its own noisy counts, and each combination's effect α_b, like the mean of each ICAR
    field, has the weakly informative prior N(0, 2²) (:data:`DP_EFFECT_VAR`) instead of the
    exact fit's N(0, 10²). ``effects="attribute"`` gives the additive model with the same
    priors (:func:`geosynth.tune`'s ε-DP candidates).

    Why not the vague priors of the exact fit (Nunes 2018, eqs. 2.5–2.6;
    :class:`~geosynth.Priors`): with observed counts the likelihood swamps them, under DP noise
    it does not. At ε = 0.5 on the thesis scenario (1,600 cells, 12 combinations, 5,000
    records) the noisy counts change the profile log-likelihood of a sparse combination's
    total by only 3.6 between 8 records and its maximum near 240 (true 265). N(0, 10²) puts
    about a third of its mass below −4, where a combination is all but empty, and the
    posterior followed that volume:

    - the posterior mean total of the emptiest combination was 7–8 % of the true total over
      three noise draws (9–15 % on 400 cells with 1,250 records); with N(0, 2²) 35–47 %
      (37–77 %), and the combination totals' log errors fell from 0.84–1.13 to 0.33–0.39 rms;
    - on the Berlin listings at 150 m (ε = 0.5 and 1; 12 combinations, three with 0–2
      records) the totals' summed absolute errors were the same or smaller (a few records now
      go to the empty combinations), and the chains mixed better: minimum bulk ESS of the
      scalars 14–79 → 96–146 of 2 × 1,500 draws, max R-hat 1.055–1.120 → 1.012–1.029;
    - where ε leaves the counts informative (ε = 2 on 1,600 cells, ε = 1 on 400) the totals
      were the same within the seeds' spread;
    - the additive model's fits of the Berlin listings mixed better too (min ESS 11–166 →
      58–206, max R-hat 1.016–1.162 → 1.006–1.039), with totals' errors the same or smaller.

    (``bench/RESULTS.md``, 2026-11-29, eighteenth session.) The prior is public and fixed, so
    it costs no privacy budget. A ratio of e⁴ ≈ 55 between two combinations sits two prior sd
    out; for a domain with rarer combinations pass ``model=PaivaModel(effects="combination",
    priors=Priors(alpha_var=..., level_var=...))``. Weakly informative rather than vague
    priors on regression effects: Gelman, Jakulin, Pittau & Su (2008), *Ann. Appl. Stat.* 2(4).

    Parameters
    ----------
    sampler : {"gibbs", "mh"}, default "gibbs"
        See :class:`geosynth.PaivaModel` (the block sampler has no noise-aware fit yet).
    effects : {"combination", "attribute"}, default "combination"
        See :class:`geosynth.PaivaModel`.

    Returns
    -------
    geosynth.PaivaModel
    """
    from geosynth.model import PaivaModel, Priors

    priors = Priors(alpha_var=DP_EFFECT_VAR, level_var=DP_EFFECT_VAR)
    return PaivaModel(effects=effects, sampler=sampler, priors=priors)


@contextmanager
def _seed_warning_given(seed: Any) -> Iterator[None]:
    """Silence the seed's PrivacyLeakWarning after dp_counts gave it, for a seeded run only.

    Unseeded, nothing is silenced: ``warnings.catch_warnings`` changes the filters of the whole
    process, so in tune's worker threads it hid other candidates' warnings.
    """
    if seed is None:
        yield
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        yield


def dp_release(
    counts: CellCounts,
    epsilon: float,
    m: int = 5,
    *,
    levels: dict[str, list] | None = None,
    neighbours: str = "add-remove",
    accountant: Accountant | None = None,
    n_public: int | None = None,
    max_records: int | None = None,
    model: Any = None,
    n_iter: int | str = 3000,
    burn_in: int | None = None,
    thin: int = 4,
    chains: int = 2,
    progress: bool = True,
    max_bytes: int = DEFAULT_MAX_BYTES,
    weights: WeightsLike = None,
    geometry: str = "geometry",
    seed: SeedLike = None,
    target_ess: float = DEFAULT_TARGET_ESS,
    max_rhat: float = DEFAULT_MAX_RHAT,
    max_seconds: float | None = None,
    stop: threading.Event | None = None,
) -> DPRelease:
    """ε-DP synthetic locations: noisy counts → noise-aware fit → ``m`` releases.

    Parameters
    ----------
    counts : CellCounts
        Exact counts from ``geosynth.prepare(gdf, grid, attributes, levels=...)``, on the public
        domain (see :func:`dp_counts`).
    epsilon : float
        Total privacy loss of the release (all ``m`` synthetic datasets together: they are
        post-processing of one noisy table).
    m : int, default 5
    levels, neighbours
        See :func:`dp_counts`.
    accountant : geosynth.dp.Accountant, optional
        Budget to charge; default a fresh ``Accountant(epsilon)``.
    n_public : int, optional
        The number of records, *only when it is already published* (CLI ``--public-total``):
        every release then has exactly ``n_public`` records. It is used as given and is not
        protected by ε. Without it a release's size is a DP estimate, at most
        :meth:`NoisyCounts.total_upper_bound` (see "Size of a release" in the module
        docstring).
    max_records : int, optional
        Lower cap on a release's size under the DP-estimate rule (not with ``n_public``).
        Published and not protected by ε, as for :func:`dp_synthesize`: never the records'
        number or anything else taken from the data.
    model : geosynth.PaivaModel, optional
        Default :func:`dp_model`, ``PaivaModel(effects="combination")``: every combination has
        its own level and ICAR field, so its total is learnt from its own noisy counts. (Under
        the additive
        attribute model a combination's total is partly predicted from the others, which at
        small ε pulls it towards the additive fit.)
    n_iter, burn_in, thin, chains, progress, target_ess, max_rhat, max_seconds, stop
        Passed to :meth:`PaivaModel.fit`; ``burn_in`` defaults to 1000 for a fixed ``n_iter``.
        With ``n_iter="auto"`` (run until converged, the command line's default) the fit
        discards the first quarter of the sweeps and takes no ``burn_in``, and the small-ε check
        assumes :data:`AUTO_SWEEPS` sweeps per chain.
    max_bytes : int, default 4 GiB
        Bound on the memory of the ``m`` releases (at :data:`RELEASE_BYTES_PER_RECORD` bytes
        a record) and, separately, on the fit's stored draws (``PaivaModel.fit(max_bytes=)``).
    weights : optional
        Public placement raster (see :func:`dp_synthesize`).
    geometry : str
        Geometry column name of the releases.
    seed : None, int, numpy.random.SeedSequence or numpy.random.Generator
        Tests only: reproducible noise and draws, with a :class:`PrivacyLeakWarning` (the
        command line refuses a seed with ``--epsilon``).

    Returns
    -------
    DPRelease
        With :attr:`DPRelease.size` recording the size rule used.

    Raises
    ------
    TypeError
        ``epsilon`` is not a real number (a bool or a string such as ``"1.0"`` included).
    geosynth.errors.InputError
        Invalid arguments (the fit's settings, ``model``, ``geometry`` and the ``weights``
        raster included: all are checked here, as the fit and the placement would, so that no
        typo is found after ε is spent), counts not prepared on a declared domain
        (:func:`public_domain`) or on a lattice from the points, or
        an ε too small for this table and run (see "Small ε" in the
        module docstring): the noise would overflow int64, the releases could exceed
        ``max_bytes`` or the latent-count enumeration would take hours. The message names
        ``epsilon``, the noise scale, the memory and time, and the smallest ε that works.
        Raised before anything is spent or drawn.
    geosynth.errors.MemoryLimitError
        After the noise: the DP-estimate cap of the releases' size (the noisy total plus 5 sd)
        exceeds ``max_bytes``. Raised before the fit; the budget is spent, nothing is released.
    geosynth.errors.BudgetExceededError
        The accountant cannot pay ε (nothing is drawn).

    Warns
    -----
    geosynth.errors.DataWarning
        From :func:`dp_counts`: the noise scale exceeds the records of a typical lattice cell
        (mostly noise).

    Notes
    -----
    At small ε the counts of sparse combinations carry little information: λ → 0 explains the
    released counts about as well as the truth does. Under the vague log-scale priors of
    :class:`~geosynth.Priors` the posterior of their totals therefore collapsed towards zero;
    the default :func:`dp_model`'s N(0, 2²) effects keep most of it, but releases at small ε
    still hold fewer records of those combinations than the original. ``docs/results.md`` shows
    the effect over ε. Clipping the noisy counts at zero instead would bias every sparse cell
    upwards. ``n_public`` fixes the total but not this split.

    The pull is not confined to sparse combinations. Over 150 noisy tables of one dataset (300
    records, 4 × 4 cells, 4 combinations of 47 to 132 records, ε = 0.3, one chain of 6,000
    sweeps each), the posterior mean of every combination's latent total was low, by 2 to 8
    records (−1.8 ± 1.4 to −8.4 ± 1.4), the total by about 18 (6 %), and 90 % intervals of the
    total held the truth 85 % of the time; the noisy total itself is unbiased. So under the
    default "dp-estimate" size rule releases at small ε hold a few per cent fewer records than
    the original. Where the total is already public, ``n_public`` removes that part.
    """
    epsilon = check_epsilon(epsilon)
    if not isinstance(counts, CellCounts):
        raise InputError(f"counts must be the CellCounts of geosynth.prepare, got "
                         f"{type(counts).__name__}")
    sensitivity = neighbour_sensitivity(neighbours)
    public_domain(counts, levels, where="dp_release")
    check_public_lattice(counts.grid, "dp_release")
    m = check_m(m)
    n_public, max_records, max_bytes = _check_size_options(n_public, max_records, max_bytes)
    n_iter_checked, chains_checked = _check_run(n_iter, chains)
    model = dp_model() if model is None else model
    run = _fit_settings(model, n_iter, burn_in, thin, chains, progress, stop, target_ess,
                        max_rhat, max_seconds)
    check_geometry_name(geometry, counts.attributes)
    table = pixel_table(weights, counts.grid)  # a public raster: read before the spend
    n_combos = math.prod(len(counts.levels[a]) for a in counts.attributes)  # the domain's
    _check_small_epsilon(
        epsilon=float(epsilon), sensitivity=sensitivity, n_cells=counts.n_cells,
        n_combos=n_combos, n_attributes=len(counts.attributes), m=m,
        n_iter=n_iter_checked, chains=chains_checked, n_public=n_public,
        max_records=max_records, max_bytes=max_bytes,
    )
    accountant = Accountant(float(epsilon)) if accountant is None else accountant
    noisy = dp_counts(counts, epsilon, accountant, levels=levels, neighbours=neighbours,
                      seed=seed)
    try:  # before the long fit; the cap is a function of the noisy table
        size = _size_rule(noisy, m, n_public, max_records, max_bytes)
    except MemoryLimitError as err:
        raise MemoryLimitError(f"{err}. The noisy counts have cost epsilon={epsilon:g}; "
                               "nothing was released") from None
    with _seed_warning_given(seed):
        fit_seed = private_seed(seed, where="dp_release")
    fit = model.fit(noisy, seed=fit_seed, max_bytes=max_bytes, **run)
    if fit.interrupted:  # Ctrl-C: no release from a fit stopped early (the budget is spent)
        raise KeyboardInterrupt
    with _seed_warning_given(seed):
        releases = dp_synthesize(fit, m, n_public=n_public, max_records=max_records,
                                 max_bytes=max_bytes, geometry=geometry, weights=table,
                                 seed=None if seed is None else fit_seed + 1)
    return DPRelease(releases=releases, fit=fit, noisy=noisy, accountant=accountant, size=size)


def _fewer_releases_fix(m: int, name: str) -> str:
    """Return the fix of releases too large for ``max_bytes``: fewer, or a smaller ``name``.

    It read "make fewer releases (m=1)" for one release, quoting the value given as the fix.
    """
    fewer = f"make fewer releases (m={m}) or " if m > 1 else ""
    return f"{fewer}give a smaller {name} (in Python, or raise max_bytes)"
