"""Synthetic releases from a fitted Paiva et al. (2014) model (Nunes 2018, §2.1.2 and §2.2.2).

Release ``l`` of ``m`` takes one posterior draw of the intensities λ and, for every confidential
record of attribute combination ``b``, draws a cell with probability (eq. 2.18)::

    p_i^(lb) = λ_i^(lb) / Σ_{i'=1..G} λ_i'^(lb)

independently of the other records, then a point inside that cell (see
:mod:`geosynth.synth.placement`). With a continuous variable Z the record also gets a synthetic
value drawn around the standardised cell mean of its synthetic cell and combination (§2.2.2);
with several continuous covariates (Nunes 2018, §5) one such value per covariate, each column
drawn the same way from its own cell means. Given the analyst's ``limits`` of a column's range
(not in the thesis), its values are drawn from that normal truncated to them.
The attributes of each record are kept, so a release is *partially* synthetic:
``D̃^(l) = (S̃^(l), X, Z̃^(l))``.

:func:`synthesize` takes any fit that has what it reads, :class:`PosteriorDraws` (a
:class:`~geosynth.PaivaFit` has it). ε-differentially private releases are made by
:func:`geosynth.dp.dp_release` (or the one-call :func:`geosynth.synthesize` with ``epsilon=``);
this module never imports :mod:`geosynth.dp`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import geopandas as gpd
import numpy as np
import pandas as pd
from scipy import sparse, special, stats

from geosynth._messages import caller_stacklevel
from geosynth._points import point_coordinates
from geosynth._random import SeedLike, root_seed_sequence
from geosynth._validation import (
    check_m,
    check_range,
    check_unique_columns,
    describe_value,
    range_end_text,
    range_text,
)
from geosynth.data import CellCounts, check_crs, fenced_values
from geosynth.errors import (
    DataWarning,
    InputError,
    InputTypeError,
    PrivacyLeakWarning,
    SamplerError,
)
from geosynth.model.storage import evenly_spaced_draws
from geosynth.synth.placement import (
    PixelTable,
    check_pixel_table,
    place,
    unweighted_note,
    warn_if_weights_follow_records,
    warn_of_unweighted,
)
from geosynth.synth.release import (
    LIMITS_PARAMETER,
    ReleaseInfo,
    check_geodataframe,
    make_release,
    row_digest,
)

__all__ = ["PosteriorDraws", "ReleaseMaker", "synthesize", "check_limits", "release_draws",
           "release_seeds", "synthetic_zbar", "synthesis_sd", "synthesis_correlation",
           "correlation_roots", "correlated_values", "warn_pooled_combinations", "kept_pairs",
           "outlying_means", "warn_withheld_means", "OUTLYING_FENCE", "MIN_FENCE_MEANS",
           "DOMINANCE_RATIO", "SYNTHESIS_SD_PRIOR_DF", "MIN_RECORDS_FOR_VALUES"]

_SHOW = 5
#: Limits of a covariate's synthetic values, ``(low, high)`` floats (±inf: an open end).
Limits = tuple[float, float]
#: What :func:`synthesize` takes as ``limits``: covariate -> ``(low, high)``, None an open end.
LimitsLike = Mapping[str, tuple[float | None, float | None]] | None
#: What :func:`synthesize` reads of a fit (the members of :class:`PosteriorDraws`).
_FIT_ATTRIBUTES = ("counts", "noise_scale", "n_chains", "n_draws", "n_eta_draws", "lambda_draw")
#: ν₀ of :func:`synthesis_sd`: the prior degrees of freedom of a combination's between-cell
#: variance. A combination with records in ν₀ + 1 = 5 cells weighs its own estimate and the
#: pooled one equally; with 41 cells its own gets 91 %.
SYNTHESIS_SD_PRIOR_DF = 4.0
#: The fewest records of a combination a cell must hold for its synthetic continuous values to
#: centre on their mean. A cell holding fewer takes its neighbours' means, as an empty cell
#: does, and a combination with no such cell the means of all combinations around each cell
#: (:func:`synthetic_zbar`): a mean of one or two records is their values.
MIN_RECORDS_FOR_VALUES = 3
#: Width of the fences of :func:`outlying_means`, in interquartile ranges (Tukey's far out).
OUTLYING_FENCE = 3.0
#: :func:`outlying_means` judges a cell mean against at least this many others (with fewer, the
#: quartiles are too unsteady: of 9 normal means, far-out fences flagged 1.8 %; of 20, 0.2 %).
MIN_FENCE_MEANS = 20
#: A cell mean of a combination with too few means for its own fences is withheld when its two
#: largest (or smallest) values lie this many times further beyond its other values than they
#: typically do (:func:`outlying_means`), or pull its mean this many times (more for few cells)
#: further than the combination's levels without them differ. Of 2,000 simulated combinations
#: of 2-20 cells of 3-39 normal, exponential or lognormal(σ = 0.5) values, none was flagged by
#: the first; of lognormal(σ = 1), 1 %. With the second too, of 400 each: 0.3 % of normal
#: values' or rounded ages', 1.3 % of exponential, 1 % of lognormal(σ = 0.5) and 7.5 % of
#: lognormal(σ = 1) combinations had a mean withheld (0.04-0.7 % of their means).
DOMINANCE_RATIO = 10.0
#: A combination's cell means are centres only where it has this many cells of
#: :data:`MIN_RECORDS_FOR_VALUES` or more records, judged and kept (:func:`kept_pairs`): of
#: two, each is judged against the other alone, and two extreme values vouched for each other.
MIN_JUDGED_CELLS = 3


@runtime_checkable
class PosteriorDraws(Protocol):
    """What :func:`synthesize` reads of a fit: stored posterior draws of λ and the prepared data.

    :class:`geosynth.PaivaFit` has all of it; any object with these attributes can be
    synthesized from.

    Attributes
    ----------
    counts : geosynth.data.CellCounts
        The prepared data the model was fitted to: lattice (``counts.grid``), attributes,
        record cells and combinations, and the standardised cell means of a continuous variable.
    noise_scale : float or None
        None for a fit of exact counts; the noise scale of a noise-aware fit of ε-DP counts
        (which :func:`geosynth.dp.dp_synthesize` draws from instead).
    n_chains : int
        Number of chains.
    n_draws : int
        Retained draws per chain.
    n_eta_draws : int
        Stored draws of η (so of λ) per chain, at most ``n_draws``.
    """

    counts: CellCounts
    noise_scale: float | None

    @property
    def n_chains(self) -> int:
        """Number of chains."""

    @property
    def n_draws(self) -> int:
        """Retained draws per chain."""

    @property
    def n_eta_draws(self) -> int:
        """Stored draws of λ per chain."""

    def lambda_draw(self, index: int) -> np.ndarray:
        """Intensities λ (G, B) of stored draw ``index``, chains concatenated."""


def synthesize(
    fit: PosteriorDraws,
    gdf: gpd.GeoDataFrame | None = None,
    m: int = 5,
    seed: SeedLike = None,
    weights: PixelTable | None = None,
    *,
    limits: LimitsLike = None,
    epsilon: None = None,
    **dp_options: Any,
) -> list[gpd.GeoDataFrame]:
    """Generate ``m`` partially synthetic releases from a fitted model (Nunes 2018, §2.1.2).

    Parameters
    ----------
    fit : PosteriorDraws
        The fitted model (a :class:`geosynth.PaivaFit`, or anything with the attributes of
        :class:`PosteriorDraws`); ``fit.counts`` must have been prepared from ``gdf``.
    gdf : geopandas.GeoDataFrame
        The confidential records given to :func:`geosynth.prepare`. Records that ``prepare``
        dropped (``outside="drop"``: outside the grid, region, or inside an excluded area) are
        not released; every other row must be unchanged (same index label, attributes and cell).
    m : int, default 5
        Number of releases.
    seed : None, int, numpy.random.SeedSequence or numpy.random.Generator
        Randomness; the same seed (and inputs) gives the same releases.
    weights : PixelTable, optional
        Raster of non-negative weights (e.g. population density) in the grid CRS, read for
        the grid by :func:`geosynth.rasters.read_weights` (:func:`geosynth.synthesize` takes the
        raster's path itself), used to place points within their synthetic cell; see
        :func:`geosynth.synth.place_in_cells`. It changes where in a cell a point goes, never
        which cell. It must be public data, never derived
        from ``gdf``: points go only to its pixels of positive weight.
    limits : dict of str to (float or None, float or None), optional
        The range of continuous columns, ``{column: (low, high)}`` with None for an open end
        (``{"age": (0, 120)}``, ``{"income": (0, None)}``): their synthetic values are drawn
        from the normal of eq. 2.27 truncated to ``[low, high]`` (see Notes). The analyst's
        statement of what values the variable can take, public knowledge, never the range of
        the data: geosynth does not derive limits from ``gdf`` (a release bounded by the
        column's observed minimum and maximum would publish them). Every original value of the
        released records must lie within. None (default) or ``{}``: no limits, the draws of the
        thesis; ``(None, None)`` is no limit either.
    epsilon : None
        Not accepted here: an ε-differentially private release is made by
        :func:`geosynth.dp.dp_release` (or ``geosynth.synthesize(counts, m, epsilon=...)``).
    **dp_options
        Not accepted either (the options of :func:`geosynth.dp.dp_release`).

    Returns
    -------
    list of geopandas.GeoDataFrame
        ``m`` releases. Each has one row per kept record, in the order of the records given
        to ``prepare`` (``counts.record_index``, whatever the order of ``gdf``) and with their
        index labels (so evaluation can pair records; publish only ``to_public(release)``), the
        attribute columns (original values), the continuous column(s) (synthetic values) if the
        fit has any, and the synthetic points as geometry (same geometry column name and CRS as
        ``gdf``). Other columns of ``gdf`` are not carried over. ``release.attrs["geosynth"]``
        records the method, the release number, the posterior draw used and whether a weights
        raster placed the points (:class:`~geosynth.synth.release.ReleaseInfo`).

    Raises
    ------
    geosynth.errors.InputError
        ``fit`` is not a fit (:class:`PosteriorDraws`), or is a noise-aware fit; ``epsilon`` or
        DP options are given; ``gdf`` is not a GeoDataFrame or is not the frame ``fit`` was
        prepared from (labels, attributes or cells differ), or holds a fitted column twice;
        ``m`` is not an int >= 1 or exceeds the number of stored posterior draws of λ; a draw
        of λ is not shaped (cells, combinations) of ``fit.counts``; invalid ``weights``;
        ``limits`` names a column that is not a continuous covariate of the fit, has a low end
        not below its high end or a NaN or infinite end (:class:`~geosynth.errors.
        InputTypeError`: ``limits`` not a dict, an entry not a pair, an end not a real number
        or None, or a bool), or an original value of a released record lies outside its
        column's limits (the message gives how many, never a value).
    geosynth.errors.CRSError
        ``gdf`` is not in the grid CRS.
    geosynth.errors.SamplerError
        A posterior draw of λ is not finite and positive for some combination.

    Notes
    -----
    *Posterior draws.* With ``T = fit.n_chains * fit.n_eta_draws`` stored draws of λ (chains
    concatenated, as in :meth:`PaivaFit.lambda_draw`; every retained draw unless the fit's
    ``eta_draws`` kept fewer), release ``l = 0 .. m-1`` uses draw ``floor((l + 1/2) * T / m)``
    (:func:`release_draws`): equally spaced draws, each the middle of one of ``m`` equal
    blocks, so ``m`` releases use ``m`` distinct draws spread over all chains (thinned draws are
    close to independent, §2.1.2 asks for an independent draw per release). Release ``l``
    draws from its own generator, seeded by the ``l``-th of ``m`` children spawned from
    ``seed`` keyed by the records (:func:`release_seeds`), so it can be made alone, in any
    order or on a Dask worker (:func:`geosynth.distributed.synthesize_dask`) and be the same
    release, and a guessed seed (small ones are the usual choice) does not give an intruder
    the release's random numbers without the records.

    *Cell probabilities.* ``p_i ∝ λ_ib`` and nothing else. λ_ib is already the expected count
    of the habitable part of cell ``i``: the modelled counts are the records located in that
    habitable geometry, and the model's exposure ``log a_i`` (the habitable fraction) is
    already in it (:class:`geosynth.PaivaModel`), so weighting ``p_i`` by the habitable
    fraction again would count the restriction twice. (The public R implementation of Paiva et al.
    applies restricted-area weights at this step in a way that cancels out of the normalised
    ``p_i``; we do not reproduce that code path.) The habitable geometry enters only where in
    the chosen cell the point is placed.

    *Continuous variable* (§2.2.2). A record of combination ``b`` whose synthetic cell is ``i``
    gets ``Z̃ ~ Normal(Z̄_ib · sd_b + mean_b, s̃_b²)``: ``Z̄_ib`` is the standardised cell mean
    (``fit.counts.zbar``) and ``mean_b, sd_b`` the mean and standard deviation of the raw cell
    means of combination ``b`` (``fit.counts.zbar_mean``, ``zbar_sd``), so the centre is the raw
    cell mean. Eq. 2.27 draws ``Z* ~ Normal(Z̄_ib, 1)`` and writes ``Z* × Var(Z̄) + E(Z̄)``;
    multiplying by the variance is a typo, since the standardisation divided by the SD. Its
    noise SD is then ``sd_b``, which a combination held by one cell does not have (and two or
    three cells estimate badly): there ``Z̃`` would publish the record's own value to within
    whatever stands in for ``sd_b``. ``s̃_b`` is ``sd_b`` moderated towards the pooled
    between-cell SD of all combinations (:func:`synthesis_sd`): ``sd_b`` itself where the
    combination spans many cells, the pooled SD where it spans one (both over the cells of at
    least :data:`MIN_RECORDS_FOR_VALUES` records of a combination). Where ``(i, b)`` held no
    original record, ``Z̄_ib`` is the mean of ``Z̄_jb`` over the neighbours ``j`` of ``i`` that
    hold :data:`MIN_RECORDS_FOR_VALUES` or more records of ``b``, and the mean of ``Z̄_jb`` over
    all cells ``j`` that do if none of the neighbours does (:func:`synthetic_zbar`; the thesis'
    0, the combination mean, also averages the cells of one or two records, and published
    their values).
    Where it held fewer than :data:`MIN_RECORDS_FOR_VALUES` (one or two records), the same
    fallback stands in for ``Z̄_ib``, a departure from the thesis: its cell mean is then those
    records' own values, and every synthetic record of ``b`` drawn into cell ``i`` centres on
    it, so the average of those values over the releases published a lone record's value (a
    record of 95 among values up to 24.5 came out as 96.8 ± 0.7 from 20 releases). A
    combination with no cell of :data:`MIN_RECORDS_FOR_VALUES` records (every combination of
    one or two records) centres on the raw means of all combinations' such cells around the
    synthetic cell, not on its own mean, which is its records' values (a departure too; the
    thesis' 0 published them in every release): :func:`warn_pooled_combinations` names them.
    With several continuous covariates each column is drawn so, from its own ``Z̄``, mean and
    SD, and a record's noise of the columns is drawn jointly (:func:`correlated_values`; the
    thesis has one covariate): ``Z* ~ Normal(Z̄_ib, R_b)``, ``R_b`` the (moderated)
    correlation of the combination's cell means between its cells
    (:func:`synthesis_correlation`), each column's margin as above (a Gaussian copula where a
    column has limits). A release then shows the relation of the columns' cell means, as eq.
    2.27 shows their spread: an income linear in age (a correlation of 0.99 among the
    records, 8 × 8 cells, slope 60) came out at 0.999 (slope 60) in the releases; drawn
    apart, at 0.5 (slope 30). Columns related between cells but not within them show the
    between-cell relation: two that share only a spatial trend (0.32 among the records, 0.93
    between the cell means) came out at 0.91 (0.46 drawn apart). The noise is not fitted to
    the records' own correlation, which one extreme record moves: the releases publish
    nothing of a continuous column but the cell means they centre on and their spread.

    Every cell mean is one of values clipped to the far-out fences of their combination's
    values (:func:`geosynth.data.value_fences`, by :func:`geosynth.prepare`): a value far out
    gives back only the fence. A cell mean of :data:`MIN_RECORDS_FOR_VALUES` or more records
    that one extreme value still pulls far from the other cell means is withheld as well, and
    its cell takes the fallback above (:func:`outlying_means`; without the fences, a value of
    98,765 among a cell's 12 values below 90 came back as a cell average of 8,289, standard
    error 250, over 5 releases). What remains published is the mean of every other such cell,
    with noise: an attacker who knows all but one of its records bounds the last one within
    the fences. Top-code or transform a skewed column before :func:`geosynth.prepare`.

    *Limits* (a departure from the thesis, whose eq. 2.27 draws from the whole normal). A
    variable with a range (an age, a count, an income, a percentage) gets values outside it
    from eq. 2.27 wherever a cell mean lies within a few noise SDs of a bound: a release with
    negative ages or incomes is not credible, and breaks analyses that take logarithms. With
    ``limits={column: (low, high)}`` its synthetic value is drawn from the same normal
    truncated to ``[low, high]``, by inverse CDF: ``Z̃ = F⁻¹(u)``, ``u`` uniform, ``F`` the CDF of
    ``Normal(centre, s̃_b²)`` truncated (:func:`scipy.stats.truncnorm`), one uniform per record
    from the release's generator, so the same seed gives the same release. Near a bound the
    synthetic values of a cell then average away from the bound, not on their centre (the
    mean of a truncated normal), a shift that eq. 2.27 does not have.
    The limits are public knowledge stated by the analyst, not a property of the data; limits
    taken from the data (its minimum and maximum) would make every release bound the
    confidential extremes, so geosynth never derives them, refuses data outside them, and warns
    (:class:`~geosynth.errors.PrivacyLeakWarning`) of an end equal to the column's smallest or
    largest value among the records. Each release records them (``attrs["geosynth"]``:
    ``parameters["limits"]``, kept by :func:`to_public`), and so does a file written by
    :func:`geosynth.io.write_release` (its ``limits`` metadata entry, shown by ``geosynth
    inspect``), so that users of a release know which columns were drawn truncated, and to what
    range.

    Examples
    --------
    >>> import geosynth
    >>> from geosynth.synth import synthesize, to_public
    >>> scenario = geosynth.datasets.paiva_scenario(n=200, seed=1)
    >>> grid = geosynth.Grid.regular(scenario.bounds, shape=(5, 5), crs=scenario.crs)
    >>> counts = geosynth.prepare(scenario.data, grid, attributes=["y", "x1"], continuous="z")
    >>> fit = geosynth.PaivaModel().fit(counts, n_iter=200, burn_in=100, chains=1, seed=1,
    ...                                 progress=False)
    >>> releases = synthesize(fit, scenario.data, m=2, seed=3)
    >>> [len(r) for r in releases], list(releases[0].columns)
    ([200, 200], ['y', 'x1', 'z', 'geometry'])
    >>> public = to_public(releases[0], seed=4)
    """
    _refuse_dp(fit, epsilon, dp_options)
    m = check_m(m)
    maker = ReleaseMaker.of(fit, gdf, weights, limits)
    draws = release_draws(fit, m)
    if fit.counts.covariates:
        warn_withheld_means(fit.counts)
    releases, notes = [], []
    streams = maker.seeds(seed, m)
    for release, (draw, stream) in enumerate(zip(draws.tolist(), streams, strict=True)):
        out, note = maker.release(release, draw, np.random.default_rng(stream))
        releases.append(out)
        notes.append(note)
    warn_of_unweighted(notes)
    return releases


def release_seeds(seed: SeedLike, m: int, records: pd.DataFrame) -> list[np.random.SeedSequence]:
    """Return the seed of each of ``m`` releases: children of ``seed`` keyed by the records.

    Spawned from ``SeedSequence([256 bits of seed, row_digest(records)])``
    (:func:`~geosynth.synth.release.row_digest`). From ``seed`` alone (``seed=2``) an intruder
    drew every uniform and normal of a release: each point's offset in its cell (published to
    the last bit) matched it to its record, undoing the public row shuffle, and the noise of
    the continuous values came off to 1e-14, leaving the cell means. The same seed and records
    still give the same releases; child ``l`` does not depend on ``m``.

    Parameters
    ----------
    seed : None, int, numpy.random.SeedSequence or numpy.random.Generator
        The ``seed`` of :func:`synthesize` (a Generator is advanced).
    m : int
        Number of releases.
    records : pandas.DataFrame
        The records released, in order: their attributes, covariates and points.

    Returns
    -------
    list of numpy.random.SeedSequence

    Raises
    ------
    TypeError, geosynth.errors.InputError
        ``m`` is not an int from 1 to 10,000, or a bad ``seed``.
    """
    m = check_m(m)
    words = root_seed_sequence(seed).generate_state(8).tolist()
    return np.random.SeedSequence([*words, *row_digest(records)]).spawn(m)


@dataclass(frozen=True)
class ReleaseMaker:
    """What the releases of one fit share, computed once, and how each one is drawn.

    :func:`synthesize` makes its ``m`` releases with one maker, in turn;
    :func:`geosynth.distributed.synthesize_dask` makes each release in a task with a maker of
    its own. Either way release ``l`` depends only on its posterior draw and its generator.

    Attributes
    ----------
    fit : PosteriorDraws
        The fit.
    rows : geopandas.GeoDataFrame
        The records' rows, checked against ``fit.counts`` (:func:`aligned_rows`).
    table : PixelTable or None
        The weights raster's pixels grouped by cell, or None for uniform placement.
    filled : dict of str to numpy.ndarray
        Each covariate's standardised cell means, filled where a combination held no record
        (:func:`synthetic_zbar`).
    noise : dict of str to numpy.ndarray
        Each covariate's noise SD per combination (:func:`synthesis_sd`).
    limits : dict of str to (float, float)
        ``(low, high)`` of the covariates whose synthetic values are truncated (±inf: an open
        end, as checked by :func:`synthesize`); the others are not.
    noise_roots : numpy.ndarray of float64, shape (B, K, K), or None
        With K >= 2 covariates, a square root of each combination's noise correlation
        (:func:`synthesis_correlation`, :func:`correlation_roots`); None with one.
    """

    fit: PosteriorDraws
    rows: gpd.GeoDataFrame
    table: PixelTable | None
    filled: dict[str, np.ndarray]
    noise: dict[str, np.ndarray]
    limits: dict[str, Limits] = field(default_factory=dict)
    noise_roots: np.ndarray | None = None

    @classmethod
    def of(cls, fit: PosteriorDraws, gdf: Any, weights: PixelTable | None = None,
           limits: LimitsLike = None) -> ReleaseMaker:
        """Check ``gdf``, ``weights`` and ``limits`` against ``fit``, compute the tables.

        Parameters
        ----------
        fit, gdf, weights, limits
            As for :func:`synthesize`.

        Returns
        -------
        ReleaseMaker
        """
        counts = fit.counts
        rows = aligned_rows(gdf, counts)
        checked = check_limits(rows, limits, counts.covariates)
        table = check_pixel_table(weights, counts.grid)
        warn_if_weights_follow_records(table, counts.grid, point_coordinates(rows, "gdf"))
        several = len(counts.covariates) > 1
        return cls(fit=fit, rows=rows, table=table,
                   filled={name: synthetic_zbar(counts, name) for name in counts.covariates},
                   noise={name: synthesis_sd(counts, name) for name in counts.covariates},
                   limits=checked,
                   noise_roots=correlation_roots(synthesis_correlation(counts)) if several
                   else None)

    def seeds(self, seed: SeedLike, m: int) -> list[np.random.SeedSequence]:
        """Return the seed of each of ``m`` releases (:func:`release_seeds` of the rows)."""
        counts = self.fit.counts
        columns = [*counts.attributes, *counts.covariates, self.rows.geometry.name]
        return release_seeds(seed, m, self.rows[columns])

    def release(self, release: int, draw: int, rng: np.random.Generator, *,
                posterior_draw: int | None = None) -> tuple[gpd.GeoDataFrame, str | None]:
        """Release number ``release`` from stored posterior draw ``draw`` of λ.

        Parameters
        ----------
        release : int
            The release's number, recorded in its ``attrs["geosynth"]``.
        draw : int
            Index of the stored draw of λ (:meth:`PosteriorDraws.lambda_draw`).
        rng : numpy.random.Generator
            The release's own generator.
        posterior_draw : int, optional
            The draw's index in the whole fit, recorded in ``attrs["geosynth"]`` and named in
            errors (default ``draw``); a Dask task's fit holds that one draw only, as draw 0.

        Returns
        -------
        release : geopandas.GeoDataFrame
            As one release of :func:`synthesize`.
        note : str or None
            :func:`~geosynth.synth.placement.unweighted_note` of its cells: the text of the
            :class:`~geosynth.errors.DataWarning` the caller gives (or forwards), or None.
        """
        counts = self.fit.counts
        data = pd.DataFrame(self.rows[list(counts.attributes) + list(counts.covariates)]).copy()
        combo = np.asarray(counts.record_combo, dtype=np.int64)
        posterior_draw = draw if posterior_draw is None else posterior_draw
        lam = checked_lambda(self.fit.lambda_draw(draw), counts, posterior_draw)
        cells = draw_cells(lam, combo, rng, posterior_draw)
        xy = place(counts.grid, cells, rng, self.table, warn=False)
        if self.noise_roots is None:
            for name in counts.covariates:
                data[name] = continuous_values(counts, self.filled[name], cells, combo, rng,
                                               name, self.noise[name],
                                               limits=self.limits.get(name))
        else:
            values = correlated_values(counts, self.filled, cells, combo, rng, self.noise,
                                       self.noise_roots, self.limits)
            for name, column in values.items():  # by position: gdf's labels may be anything
                data[name] = column
        info = ReleaseInfo(method="paiva", release=release, posterior_draw=posterior_draw,
                           weighted=self.table is not None,
                           parameters=_limits_parameters(self.limits, counts.covariates))
        out = make_release(data, xy, self.rows.geometry.name, self.rows.crs, info)
        return out, unweighted_note(self.table, cells)


def _limits_parameters(limits: dict[str, Limits],
                       covariates: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """Return the record's parameters for ``limits``: ``{"limits": {column: [low, high]}}``.

    JSON-friendly (an open end None), in the fit's order of the covariates; ``{}`` without
    limits, so that such a release records nothing new. The limits are public statements of
    the analyst, never derived from the data (:func:`check_limits`): recording them discloses
    nothing, and tells users of the release that its values were drawn truncated.
    """
    recorded = {name: [None if math.isinf(end) else end for end in limits[name]]
                for name in covariates if name in limits}
    return {LIMITS_PARAMETER: recorded} if recorded else {}


def _check_draws(fit: Any) -> None:
    """Refuse a ``fit`` that is no :class:`PosteriorDraws` (None raised AttributeError)."""
    if not isinstance(fit, PosteriorDraws):
        # Not check_fit of geosynth.model.results: any object with these attributes is a fit.
        missing = [name for name in _FIT_ATTRIBUTES if not hasattr(fit, name)]
        raise InputError(
            f"fit must be a geosynth.PaivaFit (stored posterior draws of λ), got "
            f"{type(fit).__name__}, which lacks {', '.join(missing)} of "
            "geosynth.synth.PosteriorDraws; fit one with geosynth.PaivaModel().fit(counts)"
        )


def _check_counts(counts: Any) -> None:
    """Refuse ``counts`` that are no :class:`~geosynth.data.CellCounts` (None: AttributeError)."""
    if not isinstance(counts, CellCounts):
        raise InputError(f"counts must be the geosynth.data.CellCounts of geosynth.prepare, got "
                         f"{type(counts).__name__}")


def _refuse_dp(fit: Any, epsilon: Any, dp_options: dict[str, Any]) -> None:
    """Refuse what only :mod:`geosynth.dp` synthesizes, and anything that is not a fit."""
    if epsilon is not None or dp_options:
        given = ", ".join(["epsilon"] * (epsilon is not None) + sorted(dp_options))
        raise InputError(
            f"geosynth.synth.synthesize makes releases of exact fits and takes no {given}: "
            "make an ε-differentially private release with geosynth.dp.dp_release(counts, "
            "epsilon, m, ...) or geosynth.synthesize(counts, m=..., epsilon=...)"
        )
    _check_draws(fit)
    if fit.noise_scale is not None:
        raise InputError(
            "fit is a noise-aware fit of differentially private counts, which holds no "
            "confidential records to synthesize: draw its releases with "
            "geosynth.dp.dp_synthesize(fit, m) (or geosynth.synthesize(fit, m=...))"
        )


def release_draws(fit: PosteriorDraws, m: int) -> np.ndarray:
    """Index of the stored posterior draw of λ used by each of ``m`` releases.

    Parameters
    ----------
    fit : PosteriorDraws
        The fit; ``T = fit.n_chains * fit.n_eta_draws`` stored draws of η (all retained draws
        unless ``eta_draws`` of the fit kept fewer), chains concatenated, as
        :meth:`PaivaFit.lambda_draw` indexes them.
    m : int
        Number of releases, ``1 <= m <= T``.

    Returns
    -------
    numpy.ndarray of int64, shape (m,)
        ``floor((l + 1/2) * T / m)`` for ``l = 0 .. m-1``: distinct and equally spaced.

    Raises
    ------
    geosynth.errors.InputError
        ``fit`` is not a :class:`PosteriorDraws`; ``m`` is not an int >= 1 or exceeds ``T``.
    """
    _check_draws(fit)
    m = check_m(m)
    total = int(fit.n_chains * fit.n_eta_draws)
    if m > total and getattr(fit, "interrupted", False):
        # eta_draws=k spaces its k draws over the planned run: an early stop reaches few or
        # none of them, and "refit with a larger eta_draws" sent the user the wrong way.
        raise InputError(
            f"m={m} releases need {m} distinct posterior draws of λ but the fit was interrupted "
            f"with η stored for only {total} ({fit.n_chains} chain(s) x {fit.n_eta_draws}); "
            "its stored draws are spread over the planned run, which it did not finish: run "
            "the fit to its end, or ask for fewer releases"
        )
    if m > total and fit.n_eta_draws < fit.n_draws:
        raise InputError(
            f"m={m} releases need {m} distinct posterior draws of λ but the fit stored η for "
            f"only {total} ({fit.n_chains} chain(s) x {fit.n_eta_draws} of its {fit.n_draws} "
            f"retained draws); ask for fewer releases or refit with a larger eta_draws (e.g. "
            f"eta_draws={-(-m // fit.n_chains)}, raising max_bytes if needed)"
        )
    if m > total:
        raise InputError(
            f"m={m} releases need {m} distinct posterior draws but the fit retained only {total} "
            f"({fit.n_chains} chain(s) x {fit.n_draws} draws); ask for fewer releases or refit "
            "with more iterations or a smaller thin"
        )
    return evenly_spaced_draws(total, m)


def synthetic_zbar(counts: CellCounts, covariate: str | None = None) -> np.ndarray:
    """Standardised cell means Z̄_ib used to draw synthetic Z, with empty pairs filled.

    Parameters
    ----------
    counts : geosynth.data.CellCounts
        Prepared data with a continuous variable.
    covariate : str, optional
        One of ``counts.covariates``: its (G, B) means. None: those of every covariate, shaped
        as ``counts.zbar`` ((G, B) for a str ``continuous``, (K, G, B) for a list).

    Returns
    -------
    numpy.ndarray of float64, shape (G, B) or (K, G, B)
        ``zbar`` where cell ``i`` holds at least :data:`MIN_RECORDS_FOR_VALUES` records of
        ``b`` and their mean is not outlying (a *kept* pair, :func:`kept_pairs`). Elsewhere (no
        record, one or two whose mean would be published, or an outlying mean: see
        :func:`synthesize`) the mean of ``zbar[j, b]`` over the neighbours ``j``
        of cell ``i`` (``grid.indptr/indices``) whose pair is kept; when none is, the mean of
        ``zbar`` over all the kept pairs of ``b``. A combination with no kept pair at all takes
        the raw means of the kept pairs of *every* combination in cell ``i`` and its
        neighbours (or, when none has one, of all kept pairs), standardised with ``b``'s own
        mean and SD, so that its centre is that pooled raw mean.

        Not the thesis' 0 (the combination mean) for those: that mean averages the means of
        all the combination's cells, so a combination whose records are spread one or two to a
        cell, or one of a single record, published its records' mean in every release (a
        planted 98,765 among values below 90, in a combination of three records each alone in
        its cell, came back as 3 × the published centre minus the other two: 98,755 from one
        release; one record's value to within the pooled SD). The synthetic values of such a
        combination keep no association with its attributes, only with where its synthetic
        points fall; :func:`warn_pooled_combinations` names them.

    Raises
    ------
    geosynth.errors.InputError
        ``counts`` is not a CellCounts or has no continuous variable, or ``covariate`` is not
        one of its covariates.
    """
    _check_counts(counts)
    if not counts.covariates or counts.zbar is None or counts.zbar_mask is None:
        raise InputError("counts has no continuous variable; prepare(..., continuous=column) first")
    if covariate is None and not isinstance(counts.continuous, str):
        return np.stack([synthetic_zbar(counts, name) for name in counts.covariates])
    name = counts.covariates[0] if covariate is None else covariate
    zbar, mean, sd = counts.covariate(name)
    adjacency = _adjacency(counts.grid)
    kept = kept_pairs(counts, name)
    mask = kept.astype(np.float64)
    zbar = np.asarray(zbar, dtype=np.float64)
    total = adjacency @ (zbar * mask)
    n_with = adjacency @ mask
    n_kept = mask.sum(axis=0)
    overall = np.divide((zbar * mask).sum(axis=0), n_kept, out=np.zeros(n_kept.shape),
                        where=n_kept > 0)
    fill = np.divide(total, n_with, out=np.broadcast_to(overall, total.shape).copy(),
                     where=n_with > 0)
    alone = n_kept == 0  # no kept pair: its own mean is the records' (see Returns)
    if alone.any() and kept.any():
        pooled = _pooled_raw_means(zbar * sd + mean, kept, adjacency)
        fill[:, alone] = (pooled[:, None] - np.asarray(mean)[alone]) / np.asarray(sd)[alone]
    return np.where(kept, zbar, fill)


def _adjacency(grid: Any) -> sparse.csr_matrix:
    """Return the lattice's neighbours as a (G, G) sparse matrix of ones."""
    indices = np.asarray(grid.indices)
    return sparse.csr_matrix((np.ones(indices.size), indices, np.asarray(grid.indptr)),
                             shape=(grid.n_cells, grid.n_cells))


def kept_pairs(counts: CellCounts, covariate: str | None = None) -> np.ndarray:
    """(cell, combination) pairs whose raw mean the releases may centre on: (G, B) bool.

    Those holding at least :data:`MIN_RECORDS_FOR_VALUES` records (their mean is an aggregate
    of that many; a mean of one or two records is their values) in a combination with
    :data:`MIN_JUDGED_CELLS` or more such pairs, whose mean is not outlying
    (:func:`outlying_means`: one extreme value among them moves it far from the others'), as
    long as that many are kept. A combination's only such pair has no mean of its own
    combination to be judged against, and the fences of all combinations miss an extreme value
    wherever the column's level depends on the attributes: a planted 60,000 among two incomes
    near 3,000, the one cell of three records of a rare combination among cells near 3,000 and
    30,000, came back as 59,950 from the mean of five releases (3 × their mean less the other
    two), with no warning. Two such pairs are judged each against the other alone: with an
    extreme value in each (250,000 and 180,000 among incomes near 3,000), they vouched for each
    other, and with one withheld, the other's mean became the centre of every synthetic value
    of its combination (a planted 180,000 came back as 179,768). Such combinations' values are
    pooled instead (:func:`synthetic_zbar`; :func:`warn_pooled_combinations` names them).

    Parameters
    ----------
    counts : geosynth.data.CellCounts
        Prepared data with a continuous variable.
    covariate : str, optional
        One of ``counts.covariates``. None: the pairs kept for every covariate.
    """
    names = counts.covariates if covariate is None else [covariate]
    kept = _judgeable(counts) & ~np.logical_or.reduce([outlying_means(counts, name)
                                                       for name in names])
    return kept & (kept.sum(axis=0) >= MIN_JUDGED_CELLS)  # as few left as _judgeable allows


def _enough_records(counts: CellCounts) -> np.ndarray:
    return (np.asarray(counts.zbar_mask, dtype=bool)
            & (np.asarray(counts.counts) >= MIN_RECORDS_FOR_VALUES))


def _judgeable(counts: CellCounts) -> np.ndarray:
    """Pairs of enough records in a combination of :data:`MIN_JUDGED_CELLS` such pairs or more."""
    enough = _enough_records(counts)
    return enough & (enough.sum(axis=0) >= MIN_JUDGED_CELLS)


def outlying_means(counts: CellCounts, covariate: str | None = None) -> np.ndarray:
    """Cell means that an extreme value pulls out of the bulk: (G, B) bool, never published.

    A pair of :data:`MIN_RECORDS_FOR_VALUES` or more records whose raw cell mean lies beyond Tukey's
    (1977, *Exploratory Data Analysis*, §2H) far-out fences ``[Q1 − 3·IQR, Q3 + 3·IQR]`` of the raw
    means of all the *other* such pairs (every combination), so that the mean judged does not move
    its own fences (the mean absolute deviation that stands in for a zero IQR grows with it), or
    beyond the fences of the other means of its own combination. Judged only against
    :data:`MIN_FENCE_MEANS` or more other means (of all combinations; of its own, for the second
    fences). The fences of all combinations alone missed an extreme value wherever the column's
    level depends on the attributes (income by occupation): with means near 3,000 in one group and
    30,000 in the other, the pooled IQR spans the gap, and a planted 300,000 moved its cell's mean
    of a low-group combination to 24,290, inside the fences, so the releases gave it back within 1 %
    (planted values passed up to 1.4 million). Eq. 2.27 of Nunes (2018) centres every synthetic
    value drawn into a cell on that cell's mean, so the releases estimate it as closely as there are
    synthetic records, and a mean far out says that one record is: with 12 values below 90 and a
    planted 98,765, the cell's synthetic values averaged 8,289 (standard error 250) over 5 releases,
    and 13 × 8,289 − 12 × a typical value (50) gave the planted record back to within 9 %. Such a
    pair is treated as one of too few records (:func:`synthetic_zbar` fills it from its neighbours);
    its records keep their cells and attributes. Where the quartiles coincide (half the means or
    more are equal), the mean absolute deviation from their median stands in for the IQR.

    A mean beyond the fences that many records share is kept: one whose pair holds
    :data:`MIN_RECORDS_FOR_VALUES` + 2 or more records and whose mean without the pair's two
    largest values (below the low fence: two smallest; ``counts.z_extremes``) lies beyond
    the same fence, and which neither its two largest nor its two smallest values move by
    more than one IQR. A home of 10,000 residents of age 85 among cells near 40 was withheld
    as "an extreme value", and its synthetic ages centred on its neighbours' (45.9): 96 % of
    the records moved by 40 years. One or two extreme values (on either side) among such a
    cell's shared level move its mean by more than an IQR, and withhold it; a value that
    moves it by less is no more visible than one inside the fences of any cell. Counts
    without ``z_extremes`` (built by hand) withhold every mean beyond the fences, and every
    mean of a combination judged by dominance (below), which they cannot judge.

    A combination with :data:`MIN_FENCE_MEANS` or fewer such pairs has no fences of its own;
    each of its means is withheld where its two largest (or smallest) values lie more than
    :data:`DOMINANCE_RATIO` times as far beyond the pair's other values as they typically do
    (:func:`_dominated`): income near 3,000 in 10 cells and 30,000 in 64 others, a planted
    300,000 among 12 low incomes passed the fences of all 74 means and came back within 3 %.

    Every combination's means, fences or not, are also withheld where their two largest (or
    smallest) values pull them far further from their level without them than the
    combination's levels without them differ (:func:`_pulled`): an extreme value in half of a
    combination's cells inflated what its extremes typically do, and seven of 21 cells
    holding one each moved its own fences (a planted 316,228 among incomes near 30,000 came
    back within 2 %).

    This is a dominance rule for means (with the (n, k) rule's n = 2 largest contributors;
    Hundepool et al. 2012, *Statistical Disclosure Control*, §5.2), judged on the cell means
    the releases show. A moderate value that leaves its cell's mean inside the fences can
    still be bounded by an attacker who knows the others'; top-code or transform a skewed
    column first.

    Parameters
    ----------
    counts : geosynth.data.CellCounts
        Prepared data with a continuous variable.
    covariate : str, optional
        One of ``counts.covariates``; None: the first.

    Returns
    -------
    numpy.ndarray of bool, shape (G, B)
    """
    name = counts.covariates[0] if covariate is None else covariate
    zbar, mean, sd = counts.covariate(name)
    enough = _enough_records(counts)
    raw = np.asarray(zbar, dtype=np.float64) * sd + mean
    trimmed = _trimmed_means(counts, name, raw)
    out = np.zeros(enough.shape, dtype=bool)
    if enough.sum() > MIN_FENCE_MEANS:  # itself and the others
        out[enough] = _outside_fences(raw[enough], trimmed[:, enough])
    excess = _excess_of_extremes(counts, name, raw)
    pulls, levels = _pulls(counts, name, raw)
    adjacency = _adjacency(counts.grid)
    for b in range(raw.shape[1]):  # and among its own combination's means, where they suffice
        own = enough[:, b]
        if own.sum() > 1:  # by the pull of its extreme values on its mean, always
            out[own, b] |= _pulled(pulls[:, own, b], levels[:, own, b],
                                   _neighbour_levels(adjacency, levels[:, :, b], own))
        if own.sum() > MIN_FENCE_MEANS:
            out[own, b] |= _outside_fences(raw[own, b], trimmed[:, own, b])
        elif own.sum() > 1:  # too few for fences: by the dominance of its extreme values too
            out[own, b] |= _dominated(excess[:, own, b])
    return out


def _pulls(counts: CellCounts, name: str, raw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """How far each pair's two largest (smallest) values pull its mean, and its level without.

    Returns ``(pulls, levels)``, each (2, G, B): the mean less the mean without the two
    largest values, and the mean without the two smallest less the mean; the levels are those
    two means without them (:func:`_trimmed_means` of 3 or more records: of three, the smallest
    and the largest value). NaN for pairs of fewer than :data:`MIN_RECORDS_FOR_VALUES` records
    or counts without ``z_extremes``.
    """
    levels = _trimmed_means(counts, name, raw, fewest=MIN_RECORDS_FOR_VALUES)
    return np.stack([raw - levels[0], levels[1] - raw]), levels


def _neighbour_levels(adjacency: sparse.csr_matrix, levels: np.ndarray,
                      own: np.ndarray) -> np.ndarray:
    """Return the mean level of each ``own`` cell's ``own`` neighbours: (2, m), NaN if none.

    ``levels`` (2, G) are a combination's (:func:`_pulls`), ``own`` its cells of enough
    records.
    """
    known = own[None, :] & np.isfinite(levels)
    total = (adjacency @ np.where(known, levels, 0.0).T).T
    n_with = (adjacency @ known.T.astype(np.float64)).T
    means = np.divide(total, n_with, out=np.full(total.shape, np.nan), where=n_with > 0)
    return means[:, own]


def _pulled(pulls: np.ndarray, levels: np.ndarray, near: np.ndarray) -> np.ndarray:
    """Whether a combination's pairs are pulled by their extreme values past its levels: (m,).

    ``pulls`` and ``levels`` (2, m) are :func:`_pulls`' for a combination's m >= 2 pairs,
    ``near`` (2, m) the mean level of each one's neighbours (:func:`_neighbour_levels`). A pair
    is pulled when its two largest (smallest) values move its mean by more than
    ``R^(1+1/(m−1))`` times the spread of the combination's levels without them (``R`` =
    :data:`DOMINANCE_RATIO`; the spread is the mean absolute deviation from their median, or
    that of the levels less their neighbours', where three or more have neighbours and it is
    smaller: an attacker guesses a cell's level from its neighbours', and incomes rising
    threefold across a city hid a value three times the data's largest, in a cell of ten, which
    came back within 1 %), or when its pull is unknown (counts without ``z_extremes``: they
    withhold these means rather than publish them unjudged). Levels that tie pull against no
    spread: a floor taken from other combinations' pulls let incomes of 0, 0 and one earner's in
    each cell through, every earner's income given back by three times the cell's mean. The
    spread of m levels rests on m − 1 differences, and the chance that it falls below 1/R of its
    usual size is of order R^−(m−1): the higher ratio for few levels kept two cells of six
    surgeons' ordinary incomes (two levels, one difference) from being withheld in 46 data sets
    of 200 at ratio R (2 of 200 at R²; a combination of two such cells is pooled now, whatever
    they hold: :data:`MIN_JUDGED_CELLS`).

    :func:`_dominated` compares a pair's extremes with those of the combination's other pairs,
    which an extreme value in half of them inflated: two cells of three incomes near 3,000, one
    with 250,000 and the other 180,000, vouched for each other, and five releases gave both back
    within 7 % with no warning. The levels without the two largest and smallest values are what
    one or two extreme values per cell cannot move.
    """
    out = np.zeros(pulls.shape[1], dtype=bool)
    for side in range(2):
        known = np.isfinite(levels[side]) & np.isfinite(pulls[side])
        out |= ~known
        if known.any():
            level = levels[side, known]
            spread = np.mean(np.abs(level - np.median(level)))
            local = (level - near[side, known])[np.isfinite(near[side, known])]
            if local.size >= 3:
                spread = min(spread, np.mean(np.abs(local - np.median(local))))
            ratio = DOMINANCE_RATIO ** (1.0 + 1.0 / max(level.size - 1, 1))
            out[known] |= pulls[side, known] > ratio * spread
    return out


def _excess_of_extremes(counts: CellCounts, name: str, raw: np.ndarray) -> np.ndarray:
    """How far each pair's two largest (two smallest) values lie beyond its others: (2, G, B).

    The sum of the two largest less twice the mean of the others, and twice the mean of the
    others less the sum of the two smallest; NaN for pairs of fewer than
    :data:`MIN_RECORDS_FOR_VALUES` records or counts without ``z_extremes``.
    """
    extremes = counts.extremes(name)
    others = _trimmed_means(counts, name, raw, fewest=MIN_RECORDS_FOR_VALUES)
    if extremes is None:
        return others  # NaN
    return np.stack([extremes[0] - 2.0 * others[0], 2.0 * others[1] - extremes[1]])


def _dominated(own: np.ndarray) -> np.ndarray:
    """Whether each pair of a combination is dominated by its extreme values: (m,) bool.

    ``own`` (2, m) holds the excesses (:func:`_excess_of_extremes`) of a combination's pairs,
    m >= 2. A pair is dominated when its excess on either side exceeds :data:`DOMINANCE_RATIO`
    times the median excess of the combination's other pairs: those of other combinations are
    on other scales (judged against students' incomes, surgeons' ordinary cell means were
    withheld in 174 data sets of 200), and a combination's one pair is never kept
    (:func:`kept_pairs`). A dominance rule with n = 2 contributors (Hundepool et al. 2012,
    §5.2), measured against what the two largest values of a cell typically add: income near
    3,000 in a group of 10 cells and 30,000 in another of 64, a planted 300,000 among a cell's
    12 low incomes came back within 3 % from five releases, with no warning (the group's 10
    means were too few for its own fences, and the fences of all 74 spanned the gap).
    """
    m = own.shape[1]
    out = np.zeros(m, dtype=bool)
    for side in range(2):
        for i in range(m):
            others = np.delete(own[side], i)
            others = others[~np.isnan(others)]
            if others.size and own[side, i] > DOMINANCE_RATIO * np.median(others):
                out[i] = True
    return out


def _trimmed_means(counts: CellCounts, name: str, raw: np.ndarray,
                   fewest: int = MIN_RECORDS_FOR_VALUES + 2) -> np.ndarray:
    """Each pair's mean without its two largest values, and without its two smallest: (2, G, B).

    NaN where the pair holds fewer than ``fewest`` records (by default what is left would be
    the values of one or two: such a mean is never published), or ``counts`` has no
    ``z_extremes``.
    """
    n = np.asarray(counts.counts, dtype=np.float64)
    extremes = counts.extremes(name)
    if extremes is None:
        return np.full((2, *n.shape), np.nan)
    return np.divide(n * raw - extremes, n - 2.0, out=np.full(extremes.shape, np.nan),
                     where=n >= fewest)


def _outside_fences(means: np.ndarray, trimmed: np.ndarray) -> np.ndarray:
    """Whether each of ``means`` lies beyond the far-out fences of the others, pulled by few.

    A mean beyond the high fence whose mean without its two largest values (``trimmed[0]``)
    lies beyond it too is shared by the cell's records (a home of 10,000 residents of age 85
    among cells near 40), and is not withheld if neither its two largest nor its two smallest
    values move it by more than one spread (IQR). So below.
    """
    low, high, spread = _fences_without_each(means)
    above, below = means > high, means < low
    # Neither the two largest nor the two smallest values may move the mean by an IQR: 50
    # records of 85 and one of -40 (mean 82.5) would publish the -40.
    steady = (means - trimmed[0] <= spread) & (trimmed[1] - means <= spread)
    shared = steady & ((above & (trimmed[0] > high)) | (below & (trimmed[1] < low)))
    return (above | below) & ~shared


def _fences_without_each(means: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Far-out fences of ``means`` without each one in turn, and their spread (IQR): (n,) each.

    O(n log n).
    """
    order = np.argsort(means, kind="stable")
    v = means[order]
    n = v.size
    rank = np.arange(n)

    def quantile(p: float) -> np.ndarray:  # linear (numpy's default), of the n - 1 others
        h = p * (n - 2)
        k = int(np.floor(h))
        below = np.where(rank <= k, v[k + 1], v[k])
        above = np.where(rank <= k + 1, v[min(k + 2, n - 1)], v[k + 1])
        return below + (h - k) * (above - below)

    q1, median, q3 = quantile(0.25), quantile(0.5), quantile(0.75)
    prefix = np.concatenate([[0.0], np.cumsum(v)])
    at = np.searchsorted(v, median)
    deviations = (median * at - prefix[at]) + (prefix[n] - prefix[at] - median * (n - at))
    mean_deviation = (deviations - np.abs(v - median)) / (n - 1)
    spread = np.where(q3 > q1, q3 - q1, mean_deviation)
    low, high, spreads = np.empty(n), np.empty(n), np.empty(n)
    low[order] = q1 - OUTLYING_FENCE * spread
    high[order] = q3 + OUTLYING_FENCE * spread
    spreads[order] = spread
    return low, high, spreads


def _pooled_raw_means(raw: np.ndarray, kept: np.ndarray, adjacency: sparse.csr_matrix
                      ) -> np.ndarray:
    """Mean raw cell mean of the kept pairs of every combination, per cell (G,).

    Over cell ``i`` and its neighbours; over all kept pairs where none of those has one.
    """
    sums = np.where(kept, raw, 0.0).sum(axis=1)
    numbers = kept.sum(axis=1).astype(np.float64)
    near = adjacency + sparse.identity(adjacency.shape[0], format="csr")
    near_sums, near_numbers = near @ sums, near @ numbers
    overall = sums.sum() / numbers.sum()
    return np.divide(near_sums, near_numbers, out=np.full(sums.shape, overall),
                     where=near_numbers > 0)


def warn_withheld_means(counts: CellCounts) -> None:
    """Say which cell means the synthetic continuous values do not centre on, and why.

    :func:`warn_pooled_combinations`, then a warning per covariate with outlying cell means
    (:func:`outlying_means`). Called once per set of releases by :func:`synthesize` and
    :func:`geosynth.distributed.synthesize_dask`.

    Parameters
    ----------
    counts : geosynth.data.CellCounts
        Prepared data with continuous covariates.

    Warns
    -----
    geosynth.errors.DataWarning
        As above; the outlying means' values are not shown (the warning may be logged).
    geosynth.errors.PrivacyLeakWarning
        Too few cell means (:data:`MIN_FENCE_MEANS` or fewer) for far-out fences: an extreme
        value on a coarse lattice went out with no warning (a record of 9,870,000 among values
        near 40,000, on a 3 × 3 lattice, came back within 5 % from five releases' means); the
        dominance rule of :func:`outlying_means` withholds such a cell now, but not one whose
        few records all hold extreme values.
    """
    warn_pooled_combinations(counts)
    n_judged = int(_enough_records(counts).sum())
    if 0 < n_judged <= MIN_FENCE_MEANS:
        warnings.warn(
            f"the cell means of {list(counts.covariates)} were checked for extreme values only "
            "by the dominance of their two largest and smallest values, not against far-out "
            f"fences: {n_judged} cell and combination pair(s) hold {MIN_RECORDS_FOR_VALUES} or "
            f"more records, and the fences need more than {MIN_FENCE_MEANS}; synthetic values "
            "centre on their cell's mean, so a value that does not dominate it can still show "
            "through the releases (its cell's mean times its records, less the others), and "
            "a cell of few records that all hold extreme values does: top-code or transform the "
            "columns in the data (e.g. at a public threshold; in Python, before prepare()), or "
            "use a finer lattice",
            PrivacyLeakWarning,
            stacklevel=caller_stacklevel(),
        )
    for name in counts.covariates:
        n_out = int(outlying_means(counts, name).sum())
        if n_out:
            warnings.warn(
                f"{n_out} cell mean(s) of {name!r} lie beyond the far-out fences of the other cell "
                f"means (Q1 - {OUTLYING_FENCE:g} IQR, Q3 + {OUTLYING_FENCE:g} IQR), or are "
                "dominated or pulled by their two largest or smallest values: an extreme "
                "value among their records would show in the releases, so their synthetic "
                "values follow the neighbouring cells' means instead; top-code or transform "
                f"{name!r} in the data (in Python, before prepare()) if its extremes are real "
                "values to keep",
                DataWarning,
                stacklevel=caller_stacklevel(),
            )


def warn_pooled_combinations(counts: CellCounts) -> None:
    """Say which combinations get synthetic values from the pooled means of all combinations.

    A combination with fewer than :data:`MIN_JUDGED_CELLS` cells holding
    :data:`MIN_RECORDS_FOR_VALUES` of its records (every combination of one or two records,
    those spread thinly, and those with too few such cells to judge each against the others:
    :func:`kept_pairs`) centres its synthetic values
    on the means of the other combinations around each synthetic cell (:func:`synthetic_zbar`):
    their association with its attributes is not kept, so an analysis of the continuous
    column by those attributes would be biased towards no difference. So does a combination
    whose every such cell mean is withheld for one covariate (:func:`outlying_means`), for
    that covariate alone: said apart, naming it (one warning blamed every covariate, and the
    want of records).

    Parameters
    ----------
    counts : geosynth.data.CellCounts
        Prepared data with continuous covariates.

    Warns
    -----
    geosynth.errors.DataWarning
        Naming up to five such combinations (and the covariate, for withheld means).
    """
    present = counts.combos["n_records"].to_numpy() > 0
    few = present & ~_judgeable(counts).any(axis=0)
    labels = counts.combination_labels()

    def named(combos: np.ndarray) -> str:
        return ", ".join(repr(labels[b]) for b in combos[:_SHOW]) + (
            ", ..." if combos.size > _SHOW else "")

    if few.any():
        warnings.warn(
            f"{int(few.sum())} attribute combination(s) have fewer than {MIN_JUDGED_CELLS} "
            "cells holding "
            f"{MIN_RECORDS_FOR_VALUES} or more of their records ({named(np.flatnonzero(few))}): "
            f"their synthetic {', '.join(map(repr, counts.covariates))} follow the cell means "
            "of all combinations around their synthetic cells, not their own records' values "
            "(which they would disclose), so they keep no association with those attributes; "
            "coarsen the lattice or the attributes that make them rare if that association "
            "matters",
            DataWarning,
            stacklevel=caller_stacklevel(),
        )
    for name in counts.covariates:  # withheld as outlying: that covariate alone
        withheld = present & ~few & ~kept_pairs(counts, name).any(axis=0)
        if withheld.any():
            warnings.warn(
                f"the synthetic {name!r} of {int(withheld.sum())} attribute combination(s) "
                f"({named(np.flatnonzero(withheld))}) follow the cell means of all "
                "combinations around their synthetic cells: their cell means of "
                f"{MIN_RECORDS_FOR_VALUES} or more of their records lie beyond the far-out "
                "fences or are pulled by their extreme values, leaving fewer than "
                f"{MIN_JUDGED_CELLS} kept to be judged against each other, so that column "
                "keeps no association "
                f"with those attributes; top-code or transform {name!r} in the data (in "
                "Python, before prepare()) if its extremes are real values to keep",
                DataWarning,
                stacklevel=caller_stacklevel(),
            )


# ---------------------------------------------------------------------- internals
def aligned_rows(gdf: Any, counts: CellCounts) -> gpd.GeoDataFrame:
    """Rows of ``gdf`` for the kept records of ``counts``, in record order, after checking them.

    Parameters
    ----------
    gdf : geopandas.GeoDataFrame
        The confidential records given to :func:`geosynth.prepare`.
    counts : geosynth.data.CellCounts
        What ``prepare`` made of them.

    Returns
    -------
    geopandas.GeoDataFrame
        One row per kept record, in the order of ``counts.record_index``.

    Raises
    ------
    geosynth.errors.InputError
        ``gdf`` is None or not a GeoDataFrame, lacks a column of ``counts`` or has it twice,
        or is not the frame ``counts`` was prepared from (labels, attributes or cells differ).
    geosynth.errors.CRSError
        ``gdf`` has no CRS, or another one, than the lattice of ``counts``.
    """
    if gdf is None:
        raise InputError(
            "gdf is missing: a release keeps the attributes of the confidential records and "
            "draws one point per record; pass the GeoDataFrame given to prepare(), "
            "synthesize(fit, gdf, m=...)"
        )
    check_geodataframe(gdf)
    check_crs(gdf, counts.grid)  # the releases take gdf's CRS
    needed = list(counts.attributes) + list(counts.covariates)
    missing = [c for c in needed if c not in gdf.columns]
    if missing:
        raise InputError(
            f"gdf lacks the columns {missing} the fit was prepared with; pass the GeoDataFrame "
            "given to prepare()"
        )
    check_unique_columns(gdf, "gdf", needed)
    index = counts.record_index
    if gdf.index.equals(index):
        rows = gdf
    elif gdf.index.is_unique:
        absent = ~index.isin(gdf.index)
        if absent.any():
            raise InputError(
                f"{int(absent.sum())} records of the fit are not in gdf (index labels "
                f"{index[absent][:_SHOW].tolist()}); pass the GeoDataFrame given to prepare()"
            )
        rows = gdf.loc[index]
        _check_dropped(gdf[~gdf.index.isin(index)], counts)
    else:
        raise InputError(
            "gdf has duplicate index labels and is not row-for-row the data the fit was "
            "prepared from, so records cannot be matched; pass exactly the GeoDataFrame given "
            "to prepare() (or reset_index(drop=True) before prepare and synthesize)"
        )
    _check_same_records(rows, counts)
    return rows


def _check_dropped(extra: gpd.GeoDataFrame, counts: CellCounts) -> None:
    """Rows of gdf missing from the fit must be the ones prepare dropped (in no cell)."""
    if len(extra) == 0:
        return
    located = counts.grid.locate(extra.geometry) >= 0
    if located.any():
        raise InputError(
            f"{int(located.sum())} rows of gdf lie in grid cells but are not in the fit (index "
            f"labels {extra.index[located][:_SHOW].tolist()}); pass the GeoDataFrame given to "
            "prepare(), unchanged"
        )


def _check_same_records(rows: gpd.GeoDataFrame, counts: CellCounts) -> None:
    """Attributes and cells of ``rows`` must be those the fit counted.

    With repeated index labels, rows are matched by position: the same records in another
    order were said to have other attributes, and the advice to reset the index came only
    when the labels themselves differed.
    """
    fix = ("pass the GeoDataFrame given to prepare(), unchanged" if rows.index.is_unique else
           "gdf has duplicate index labels, so its records are matched by position: pass the "
           "GeoDataFrame given to prepare(), in the same order (or reset_index(drop=True) "
           "before prepare and synthesize)")
    combo = np.asarray(counts.record_combo)
    for a in counts.attributes:
        expected = counts.combos[a].to_numpy()[combo]
        differs = rows[a].to_numpy() != expected
        if differs.any():
            raise InputError(
                f"attribute {a!r} of gdf differs from the data the fit was prepared from for "
                f"{int(differs.sum())} records (index labels "
                f"{rows.index[differs][:_SHOW].tolist()}); {fix}"
            )
    cells = counts.grid.locate(rows.geometry)
    moved = cells != np.asarray(counts.record_cell)
    if moved.any():
        raise InputError(
            f"{int(moved.sum())} records of gdf lie in other cells than when the fit was "
            f"prepared (index labels {rows.index[moved][:_SHOW].tolist()}); {fix}"
        )
    for name in counts.covariates:
        changed = _changed_covariate_records(rows[name], counts, name)
        if changed.any():
            raise InputError(
                f"continuous column {name!r} of gdf differs from the data the fit was prepared "
                f"from: the cell means of {int(changed.sum())} records (index labels "
                f"{rows.index[changed][:_SHOW].tolist()}) are not those the fit holds, so the "
                f"synthetic values would follow the old ones; {fix} (edits such as top-coding "
                "belong before prepare())"
            )


def _changed_covariate_records(values: pd.Series, counts: CellCounts, name: str) -> np.ndarray:
    """Flag the records whose (cell, combination) mean of ``name`` differs from the fit's.

    Their values are clipped to the counts' fences first, as :func:`geosynth.prepare` did.

    The synthetic values follow the prepared cell means, while ``limits`` and the release
    read ``gdf``: a column rescaled or top-coded after prepare() was published around the old
    values without a word. Equal up to rounding (1e-8 of the means' scale: a partitioned
    preparation sums in another order).
    """
    pair = np.asarray(counts.record_cell) * counts.n_combos + np.asarray(counts.record_combo)
    size = counts.n_cells * counts.n_combos
    z = pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64)  # text: NaN, differs
    fences = counts.fences(name)
    if fences is not None:  # as prepare clipped them
        z = fenced_values(z, np.asarray(counts.record_combo), fences)
    n = np.bincount(pair, minlength=size)
    means = np.bincount(pair, weights=z, minlength=size)[pair] / n[pair]
    zbar, zbar_mean, zbar_sd = counts.covariate(name)
    combo = np.asarray(counts.record_combo)
    held = zbar.reshape(-1)[pair] * zbar_sd[combo] + zbar_mean[combo]
    scale = float(np.max(np.abs(held), initial=0.0)) + float(np.max(zbar_sd, initial=0.0))
    return ~(np.abs(means - held) <= 1e-8 * scale)


def checked_lambda(lam: Any, counts: CellCounts, draw: int) -> np.ndarray:
    """Return posterior draw ``draw`` of λ as float64 after checking its shape is (G, B).

    Parameters
    ----------
    lam : array_like
        What ``fit.lambda_draw(draw)`` returned.
    counts : geosynth.data.CellCounts
        The fit's prepared data: ``G = counts.n_cells`` cells, ``B = counts.n_combos``
        combinations.
    draw : int
        Index of the draw, for the message.

    Returns
    -------
    numpy.ndarray of float64, shape (G, B)

    Raises
    ------
    geosynth.errors.InputError
        λ is not a (G, B) array: the fit's draws belong to other prepared data than
        ``fit.counts``.
    """
    lam = np.asarray(lam, dtype=np.float64)
    expected = (counts.n_cells, counts.n_combos)
    if lam.shape != expected:
        raise InputError(
            f"posterior draw {draw} of λ has shape {lam.shape}, but fit.counts has "
            f"{expected[0]} cells and {expected[1]} attribute combinations: the fit's draws "
            "belong to other prepared data; synthesize from a fit of these counts, "
            "PaivaModel().fit(counts)"
        )
    return lam


def draw_cells(
    lam: np.ndarray, combo: np.ndarray, rng: np.random.Generator, draw: int | None = None
) -> np.ndarray:
    """Draw a cell for each record, with probability ``λ_ib / Σ_i λ_ib`` (eq. 2.18).

    Parameters
    ----------
    lam : numpy.ndarray of float64, shape (G, B)
        Intensities of one posterior draw.
    combo : numpy.ndarray of int64, shape (n,)
        Combination of each record.
    rng : numpy.random.Generator
        Randomness; one uniform per record, in record order.
    draw : int, optional
        Draw index, for error messages.

    Returns
    -------
    numpy.ndarray of int64, shape (n,)
        Cell ids, by inverse CDF (``searchsorted`` on the cumulative sums of each column); a cell
        with ``λ_ib = 0`` is never drawn.
    """
    lam = np.asarray(lam, dtype=np.float64)
    cumulative = np.cumsum(lam, axis=0)
    total = cumulative[-1]
    bad = ~(np.isfinite(total) & (total > 0)) | ~np.isfinite(lam).all(axis=0) | (lam < 0).any(0)
    used = np.zeros(lam.shape[1], dtype=bool)
    used[combo] = True
    bad &= used
    if bad.any():
        which = "" if draw is None else f" of posterior draw {draw}"
        raise SamplerError(
            f"the intensities λ{which} are not finite, non-negative and positive in sum for "
            f"combinations {np.flatnonzero(bad)[:_SHOW].tolist()}; the fit diverged: check the "
            "trace plots and refit (longer burn-in, other priors)"
        )
    u = rng.random(combo.size)
    cells = np.empty(combo.size, dtype=np.int64)
    order = np.argsort(combo, kind="stable")
    bounds = np.searchsorted(combo[order], np.arange(lam.shape[1] + 1))
    for b in np.flatnonzero(used):
        members = order[bounds[b] : bounds[b + 1]]
        target = u[members] * total[b]
        cells[members] = np.searchsorted(cumulative[:, b], target, side="right")
    # u * total < total, but rounding can reach it; the last cell of positive λ is the answer.
    return _last_positive_clip(cells, combo, lam)


def _last_positive_clip(cells: np.ndarray, combo: np.ndarray, lam: np.ndarray) -> np.ndarray:
    positive = lam > 0
    last = lam.shape[0] - 1 - np.argmax(positive[::-1], axis=0)
    return np.minimum(cells, last[combo])


def continuous_values(
    counts: CellCounts,
    zbar: np.ndarray,
    cells: np.ndarray,
    combo: np.ndarray,
    rng: np.random.Generator,
    covariate: str | None = None,
    noise_sd: np.ndarray | None = None,
    *,
    limits: Limits | None = None,
) -> np.ndarray:
    """Synthetic Z: ``Normal(zbar[cell, b] * sd_b + mean_b, s̃_b²)`` (Nunes 2018, eq. 2.27, SD).

    ``s̃_b`` is :func:`synthesis_sd`, the thesis' ``sd_b`` moderated so that a combination
    held by few cells does not publish its records' values (see :func:`synthesize`). With
    ``limits``, the same normal truncated to ``[low, high]`` (not in the thesis: see
    :func:`synthesize`).

    Parameters
    ----------
    counts : geosynth.data.CellCounts
        Prepared data with a continuous variable (``zbar_mean``, ``zbar_sd`` per combination).
    zbar : numpy.ndarray of float64, shape (G, B)
        Standardised cell means of ``covariate``, empty pairs filled (:func:`synthetic_zbar`).
    cells : numpy.ndarray of int64, shape (n,)
        Synthetic cell of each record.
    combo : numpy.ndarray of int64, shape (n,)
        Combination of each record.
    rng : numpy.random.Generator
        Randomness; one normal per record, in record order.
    covariate : str, optional
        Which of ``counts.covariates`` (its mean and SD per combination); None: the first.
    noise_sd : numpy.ndarray of float64, shape (B,), optional
        :func:`synthesis_sd` of the covariate, when the caller already has it (one per fit, not
        per release); computed here otherwise.
    limits : (float, float), optional
        ``(low, high)`` floats, ``-inf`` or ``inf`` for an open end, ``low < high``: the values
        are drawn truncated to ``[low, high]`` by inverse CDF (one uniform per record, in
        record order, instead of one normal). They are the analyst's public statement of the
        variable's range, never derived from the data. None: the whole normal, as eq. 2.27.

    Returns
    -------
    numpy.ndarray of float64, shape (n,)
    """
    name = counts.covariates[0] if covariate is None else covariate
    centre = _centres(counts, name, zbar, cells, combo)
    if noise_sd is None:
        noise_sd = synthesis_sd(counts, name)
    if limits is None:
        return rng.normal(centre, np.asarray(noise_sd)[combo])
    return _truncated_normal(centre, np.asarray(noise_sd)[combo], limits, rng)


def correlated_values(
    counts: CellCounts,
    zbar: Mapping[str, np.ndarray],
    cells: np.ndarray,
    combo: np.ndarray,
    rng: np.random.Generator,
    noise_sd: Mapping[str, np.ndarray],
    roots: np.ndarray,
    limits: Mapping[str, Limits] | None = None,
) -> dict[str, np.ndarray]:
    """Synthetic values of K >= 2 covariates with correlated noise (a Gaussian copula).

    Each column's value has the distribution :func:`continuous_values` gives it alone (eq.
    2.27 of Nunes 2018 with the moderated SD, truncated to its limits if it has any); the K
    standard normals of a record are correlated by its combination's
    :func:`synthesis_correlation` (``w = roots[b] @ z``, ``z`` independent standard normals),
    and a column with limits takes its value from its normal by the truncated distribution's
    quantile of ``Φ(w)`` (a Gaussian copula: each margin stays exact, and the correlation is
    that of the normals, a little weaker between truncated values).

    Parameters
    ----------
    counts : geosynth.data.CellCounts
        Prepared data with K >= 2 continuous variables.
    zbar : dict of str to numpy.ndarray of float64, shape (G, B)
        Each covariate's standardised cell means, empty pairs filled (:func:`synthetic_zbar`).
    cells, combo : numpy.ndarray of int64, shape (n,)
        Synthetic cell and combination of each record.
    rng : numpy.random.Generator
        Randomness: one (n, K) array of standard normals, record by record.
    noise_sd : dict of str to numpy.ndarray of float64, shape (B,)
        Each covariate's :func:`synthesis_sd`.
    roots : numpy.ndarray of float64, shape (B, K, K)
        :func:`correlation_roots` of :func:`synthesis_correlation`.
    limits : dict of str to (float, float), optional
        ``(low, high)`` of the covariates drawn truncated, as for :func:`continuous_values`.

    Returns
    -------
    dict of str to numpy.ndarray of float64, shape (n,)
        Every covariate's synthetic values, in the order of ``counts.covariates``.
    """
    limits = {} if limits is None else limits
    names = list(counts.covariates)
    w = rng.standard_normal((combo.size, len(names)))
    order = np.argsort(combo, kind="stable")
    bounds = np.searchsorted(combo[order], np.arange(roots.shape[0] + 1))
    for b in np.flatnonzero(np.diff(bounds)):
        members = order[bounds[b]:bounds[b + 1]]
        w[members] = w[members] @ roots[b].T
    values = {}
    for k, name in enumerate(names):
        centre = _centres(counts, name, zbar[name], cells, combo)
        sd = np.asarray(noise_sd[name])[combo]
        values[name] = (centre + sd * w[:, k] if name not in limits
                        else _truncated_quantile(centre, sd, limits[name], w[:, k]))
    return values


def _centres(counts: CellCounts, name: str, zbar: np.ndarray, cells: np.ndarray,
             combo: np.ndarray) -> np.ndarray:
    """Raw centre of each record's synthetic value of ``name``: ``zbar[cell, b]·sd_b + mean_b``."""
    _, mean, sd = counts.covariate(name)
    return zbar[cells, combo] * np.asarray(sd)[combo] + np.asarray(mean)[combo]


def _truncated_normal(centre: np.ndarray, sd: np.ndarray, limits: Limits,
                      rng: np.random.Generator) -> np.ndarray:
    """``Normal(centre, sd²)`` truncated to ``limits``, by inverse CDF: one uniform per value.

    :func:`scipy.stats.truncnorm` computes the quantile in log space, exact far in a tail. A
    uniform of 0 (probability 2⁻⁵³) is taken as 2⁻⁵⁴, which would be an infinite value at an
    open low end; rounding of ``centre + sd · z`` is clipped to the limits.
    """
    low, high = limits
    u = rng.random(np.shape(centre))
    u[u == 0.0] = 2.0**-54
    values = stats.truncnorm.ppf(u, (low - centre) / sd, (high - centre) / sd, loc=centre,
                                 scale=sd)
    return np.clip(values, low, high)


def _truncated_quantile(centre: np.ndarray, sd: np.ndarray, limits: Limits,
                        w: np.ndarray) -> np.ndarray:
    """``Normal(centre, sd²)`` truncated to ``limits`` at the quantile ``Φ(w)`` of each value.

    The upper half through the survival function at ``Φ(−w)``, so that neither tail rounds
    ``Φ(w)`` to 0 or 1 (an infinite value at an open end).
    """
    low, high = limits
    a, b = (low - centre) / sd, (high - centre) / sd
    upper = w > 0
    values = np.empty_like(centre)
    values[~upper] = stats.truncnorm.ppf(special.ndtr(w[~upper]), a[~upper], b[~upper],
                                         loc=centre[~upper], scale=sd[~upper])
    values[upper] = stats.truncnorm.isf(special.ndtr(-w[upper]), a[upper], b[upper],
                                        loc=centre[upper], scale=sd[upper])
    return np.clip(values, low, high)


def _checked_limits(limits: Any, covariates: list[str] | tuple[str, ...]) -> dict[str, Limits]:
    """``limits`` of :func:`synthesize` as ``{covariate: (low, high)}`` floats, ±inf open ends.

    Entries ``(None, None)`` (no limit) are left out, so their columns are drawn as without
    limits.
    """
    if limits is None:
        return {}
    if not isinstance(limits, Mapping):
        raise InputTypeError(
            "limits must be a dict {column: (low, high)} of continuous columns' ranges, with "
            f"None for an open end, e.g. limits={{'age': (0, 120)}}; got {describe_value(limits)}"
        )
    checked = {}
    for name, pair in limits.items():
        if name not in covariates:
            having = (f"whose continuous columns are {list(covariates)}" if covariates else
                      "which has no continuous column (prepare(..., continuous=column))")
            raise InputError(
                f"limits give a range for {name!r}, which is not a continuous column of the "
                f"fit, {having}; give limits for those columns only"
            )
        low, high = check_range(pair, f"limits[{name!r}]")
        if low > -math.inf or high < math.inf:
            checked[name] = (low, high)
    return checked


def check_limits(gdf: Any, limits: LimitsLike, covariates: list[str] | tuple[str, ...], *,
                 warn: bool = True) -> dict[str, Limits]:
    """Check ``limits`` of :func:`synthesize` and the records' values against them.

    :func:`synthesize` makes this check itself; a caller that fits first (the command line)
    makes it before the fit, so that bad limits cost no run.

    Parameters
    ----------
    gdf : pandas.DataFrame
        The records to release, with the ``covariates`` columns.
    limits : dict of str to (float or None, float or None) or None
        As for :func:`synthesize`.
    covariates : sequence of str
        The continuous columns the fit has.
    warn : bool, default True
        Warn (:class:`~geosynth.errors.PrivacyLeakWarning`) of an end of the limits that is the
        column's smallest or largest value among the records: the release publishes it. False
        for a check ahead of :func:`synthesize`, which warns.

    Returns
    -------
    dict of str to (float, float)
        ``(low, high)`` per limited covariate, ±inf for an open end.

    Raises
    ------
    geosynth.errors.InputError
        As :func:`synthesize` raises for ``limits``.
    """
    checked = _checked_limits(limits, covariates)
    values = {name: gdf[name].to_numpy(dtype=np.float64) for name in checked}
    for name, (low, high) in checked.items():  # every column first: a refusal before a warning
        _check_within_limits(name, values[name], low, high)
    for name, (low, high) in checked.items() if warn else ():
        _warn_of_limits_at_extremes(name, values[name], low, high)
    return checked


def _warn_of_limits_at_extremes(name: str, values: np.ndarray, low: float, high: float) -> None:
    """PrivacyLeakWarning: an end of column ``name``'s limits is at its smallest or largest value.

    A release publishes its limits (the metadata's ``limits``), so ``limits={"z": (z.min(),
    z.max())}`` published both confidential extremes to every digit, with no warning; so did
    them rounded (22.867 for 22.86721): an end within :data:`_NEAR_EXTREME` of the values'
    range of an extreme is warned about too, and so is one that rounds an isolated extreme
    (a gap to the next value of :data:`_ISOLATED_GAP` median gaps or more): within that gap
    and within :data:`_ROUNDING_SHARE` of the extreme's magnitude. ``ceil(income.max())``
    published a top income of 9,870,000.4 to the unit, the next being 212,000; a share's
    public 100 beside an isolated 97.0 is no rounding of it. A bound the variable takes by
    definition (0 for an age) may equal an extreme: the message says so.
    """
    distinct = np.unique(values)
    if distinct.size:  # no record: no extreme
        near = _NEAR_EXTREME * float(distinct[-1] - distinct[0])
        steps = np.diff(distinct)
        gaps = steps[[0, -1]] if steps.size > 1 else np.zeros(2)
        gaps = np.where(gaps >= _ISOLATED_GAP * np.median(steps) if steps.size > 1 else False,
                        gaps, 0.0)
        ends = [word for word, end, extreme, gap in (("smallest", low, distinct[0], gaps[0]),
                                                     ("largest", high, distinct[-1], gaps[1]))
                if abs(end - extreme) <= max(near, min(gap, _ROUNDING_SHARE * abs(extreme)))]
        if ends:
            warnings.warn(
                f"limits[{name!r}] (CLI: --limit {name}=...) has an end at (or rounding an "
                f"isolated one, or within {_NEAR_EXTREME:.1%} of the values' range of) the "
                f"{' and the '.join(ends)} "
                f"{name!r} among the records: a release publishes its limits, so this publishes "
                "a confidential extreme unless the bound is public by definition (such as 0 "
                "for an age); give bounds the variable can take, not those of the data",
                PrivacyLeakWarning,
                stacklevel=caller_stacklevel(),
            )


#: An end of the limits this close to an extreme of the values, as a share of their range, is
#: taken for the extreme (rounded).
_NEAR_EXTREME = 1e-3
#: An extreme whose gap to the next distinct value is this many median gaps or more is isolated:
#: an end of the limits within that gap of it is taken for the extreme (rounded).
_ISOLATED_GAP = 10.0
#: An end within this share of an isolated extreme's magnitude (and within its gap) rounds it.
_ROUNDING_SHARE = 0.01


def _check_within_limits(name: str, values: np.ndarray, low: float, high: float) -> None:
    """Refuse original values of the released records outside their column's limits.

    The message counts them and quotes none (the values are confidential).
    """
    outside = int(((values < low) | (values > high)).sum())
    if outside:
        ends = ":".join("" if math.isinf(end) else range_end_text(end) for end in (low, high))
        raise InputError(
            f"{outside} record(s) of gdf have {name!r} outside limits[{name!r}] = "
            f"{range_text((low, high))} (CLI: --limit {name}={ends}): the synthetic values "
            "are drawn within the limits, which must hold every original value; widen the "
            "limits to every value the variable can take, or clean the data (in Python, "
            f"find the records with {_outside_selector(name, low, high)})"
        )


def _outside_selector(name: str, low: float, high: float) -> str:
    """Write the pandas expression selecting the rows of ``gdf`` outside ``(low, high)``."""
    if math.isinf(high):
        return f"gdf[gdf[{name!r}] < {range_end_text(low)}]"
    if math.isinf(low):
        return f"gdf[gdf[{name!r}] > {range_end_text(high)}]"
    return f"gdf[~gdf[{name!r}].between({range_end_text(low)}, {range_end_text(high)})]"


def synthesis_sd(counts: CellCounts, covariate: str | None = None) -> np.ndarray:
    """Noise SD of each combination's synthetic values: its between-cell SD, moderated.

    Nunes (2018, eq. 2.27) draws a synthetic value with the SD ``sd_b`` of combination ``b``'s
    raw cell means over the ``n_b`` cells that hold its records. With ``n_b = 1`` that SD does
    not exist, and with few cells it can be arbitrarily small: a rare combination (one record,
    or a few with close values) would have its values published almost exactly. So the
    variance is moderated as in empirical Bayes (the moderated variance of Smyth 2004, *Stat.
    Appl. Genet. Mol. Biol.* 3(1), art. 3: the posterior mean under a scaled inverse-χ² prior
    with ν₀ degrees of freedom)::

        s̃_b² = (ν_b · sd_b² + ν₀ · s₀²) / (ν_b + ν₀),    ν_b = max(n_b − 1, 0),

    with ``ν₀`` = :data:`SYNTHESIS_SD_PRIOR_DF` and ``s₀²`` the pooled between-cell variance of
    all combinations, ``Σ_b ν_b sd_b² / Σ_b ν_b``; where that is not defined or 0 (no
    combination spans two cells, or none varies between them), the variance of all those
    cells' raw means around their overall mean stands in for it. A combination spanning many
    cells keeps ``sd_b`` nearly as the thesis has it; one held by a single cell gets ``s₀``.

    ``sd_b``, ``n_b`` and ``s₀`` count only the cells holding at least
    :data:`MIN_RECORDS_FOR_VALUES` records of the combination, whose means the releases centre
    on anyway (:func:`synthetic_zbar`): the noise SD is estimable from the releases, and with
    a cell of one record among them it disclosed that record's distance from the other cells'
    means.

    Parameters
    ----------
    counts : geosynth.data.CellCounts
        Prepared data with a continuous variable.
    covariate : str, optional
        One of ``counts.covariates``; None: the first.

    Returns
    -------
    numpy.ndarray of float64, shape (B,)

    Raises
    ------
    geosynth.errors.InputError
        ``counts`` is not a CellCounts or has no continuous variable, or the means of the
        cells holding at least :data:`MIN_RECORDS_FOR_VALUES` records of a combination do not
        vary (fewer than two such cells, or equal means): any synthetic value would disclose
        their common value, or the noise SD that of the other cells' records.
    """
    _check_counts(counts)
    if not counts.covariates or counts.zbar_mask is None:
        raise InputError("counts has no continuous variable; prepare(..., continuous=column) first")
    name = counts.covariates[0] if covariate is None else covariate
    zbar, mean, sd = counts.covariate(name)
    mask = np.asarray(counts.zbar_mask, dtype=bool)
    kept = kept_pairs(counts, name)
    raw = np.where(mask, zbar * sd + mean, 0.0)
    n_kept = kept.sum(axis=0)
    centre = np.divide(np.where(kept, raw, 0.0).sum(axis=0), n_kept,
                       out=np.zeros(n_kept.shape), where=n_kept > 0)
    df = np.maximum(n_kept - 1.0, 0.0)
    squares = (np.where(kept, raw - centre, 0.0) ** 2).sum(axis=0)
    pooled = squares.sum() / df.sum() if df.sum() > 0 else 0.0
    if not pooled > 0.0:
        means = raw[kept]
        pooled = means.var(ddof=1) if means.size > 1 else 0.0
    if not (np.isfinite(pooled) and pooled > 0.0):
        raise InputError(
            f"the continuous column {name!r} has one cell mean for every record (no "
            f"combination has {MIN_JUDGED_CELLS} or more cells of {MIN_RECORDS_FOR_VALUES} or "
            "more records whose means are kept, or they are equal): its synthetic values would "
            "disclose that value, or the noise SD the values of single records; use a lattice "
            f"whose cells hold {MIN_RECORDS_FOR_VALUES} or more records of a combination in at "
            f"least {MIN_JUDGED_CELLS} places, or drop the column"
        )
    prior_df = SYNTHESIS_SD_PRIOR_DF
    return np.sqrt((squares + prior_df * pooled) / (df + prior_df))


def synthesis_correlation(counts: CellCounts) -> np.ndarray:
    """Correlation of the covariates' synthetic noise in each combination, moderated.

    Eq. 2.27 of Nunes (2018) draws a synthetic value around its cell's mean with the spread of
    the standardised cell means, ``Z* ~ Normal(Z̄_ib, 1)``: its noise is the between-cell
    variation of the combination's means. With several covariates (not in the thesis, which
    has one) :func:`synthesize` draws a record's noise of all of them jointly,
    ``Z* ~ Normal(Z̄_ib, R_b)`` (:func:`correlated_values`), ``R_b`` the correlation of the
    combination's cell means between its cells: the same between-cell variation, with its
    covariance. Drawn apart, columns related within a record kept only half of their relation
    (an income linear in age, a correlation of 0.99 among the records, came out at 0.5 and
    half the slope); jointly, a release shows the relation of the cell means, as eq. 2.27
    shows their spread. It reads only the cell means the releases centre on.

    As :func:`synthesis_sd` moderates a variance, the correlation is moderated towards the
    pooled one of all combinations (Smyth 2004, with the same prior degrees of freedom
    ν₀ = :data:`SYNTHESIS_SD_PRIOR_DF`)::

        R_b = (ν_b · C_b + ν₀ · R₀) / (ν_b + ν₀),    R₀ = Σ_b ν_b C_b / Σ_b ν_b,

    ``C_b`` the correlation of ``b``'s means over its ``n_b`` cells kept for every covariate
    (:func:`kept_pairs`: three or more records, no outlying mean), ``ν_b = n_b − 1``: a
    combination held by one such cell gets ``R₀``, one spanning many nearly its own. Being
    correlations, combinations of different scales (incomes by occupation) pool alike. A
    combination whose kept means of some column do not vary has no ``C_b`` (``ν_b`` taken as
    0); where no combination has one, the noise of the columns is independent.

    Parameters
    ----------
    counts : geosynth.data.CellCounts
        Prepared data with one or more continuous variables.

    Returns
    -------
    numpy.ndarray of float64, shape (B, K, K)
        A correlation matrix per combination (unit diagonal, positive semi-definite), K the
        number of covariates.

    Raises
    ------
    geosynth.errors.InputError
        ``counts`` is not a CellCounts or has no continuous variable.
    """
    _check_counts(counts)
    if not counts.covariates or counts.zbar_mask is None:
        raise InputError("counts has no continuous variable; prepare(..., continuous=column) first")
    kept = kept_pairs(counts)
    zbar = np.stack([np.asarray(counts.covariate(name)[0], dtype=np.float64)
                     for name in counts.covariates])  # (K, G, B)
    k, n_combinations = zbar.shape[0], zbar.shape[2]
    n_kept = kept.sum(axis=0)
    centre = np.divide(np.where(kept, zbar, 0.0).sum(axis=1), n_kept,
                       out=np.zeros((k, n_combinations)), where=n_kept > 0)
    deviations = np.where(kept, zbar - centre[:, None, :], 0.0)
    scatter = np.einsum("kgb,lgb->bkl", deviations, deviations)
    variances = np.diagonal(scatter, axis1=1, axis2=2)
    weights = np.where((variances > 0).all(axis=1), np.maximum(n_kept - 1.0, 0.0), 0.0)
    own = np.stack([_as_correlation(matrix) for matrix in scatter])
    pooled = (np.einsum("b,bkl->kl", weights, own) / weights.sum() if weights.sum() > 0
              else np.eye(k))
    return ((weights[:, None, None] * own + SYNTHESIS_SD_PRIOR_DF * pooled)
            / (weights + SYNTHESIS_SD_PRIOR_DF)[:, None, None])


def _as_correlation(covariance: np.ndarray) -> np.ndarray:
    """Return the correlation matrix of ``covariance``; a column of no variance is uncorrelated."""
    scale = np.sqrt(np.clip(np.diag(covariance), 0.0, None))
    varies = scale > 0
    correlation = np.eye(scale.size)
    inner = np.ix_(varies, varies)
    correlation[inner] = covariance[inner] / np.outer(scale[varies], scale[varies])
    correlation = np.clip(correlation, -1.0, 1.0)
    np.fill_diagonal(correlation, 1.0)
    return correlation


def correlation_roots(correlation: np.ndarray) -> np.ndarray:
    """Return a square root ``L`` (``L Lᵀ = R``) of each of a stack of correlation matrices.

    The Cholesky factor where ``R`` is positive definite (the first column's noise is then its
    own standard normal); where ``R`` is singular (columns whose cell means are exact linear
    functions of each other), the symmetric root of ``R`` with its negative rounding
    eigenvalues set to 0, rows scaled back to unit length.

    Parameters
    ----------
    correlation : numpy.ndarray of float64, shape (B, K, K)

    Returns
    -------
    numpy.ndarray of float64, shape (B, K, K)
    """
    roots = np.empty_like(correlation)
    for b, matrix in enumerate(correlation):
        try:
            roots[b] = np.linalg.cholesky(matrix)
        except np.linalg.LinAlgError:
            values, vectors = np.linalg.eigh(matrix)
            root = vectors * np.sqrt(np.clip(values, 0.0, None)) @ vectors.T
            roots[b] = root / np.linalg.norm(root, axis=1, keepdims=True)
    return roots
