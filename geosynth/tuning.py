"""Choose the lattice: risk and utility of candidate lattices and settings, side by side.

The cell size decides both the disclosure risk and the utility of a release: Nunes (2018,
ch. 4–5) finds that a finer lattice raises the risk of locating the original records and
improves utility, leaves the choice "to the agency that collected the data", and names finding
the lattice size by simulation as future work. :func:`tune` does that simulation: for each
:class:`Candidate` (a lattice plus model settings) it fits the model, draws ``m`` releases and
measures them on one table (:attr:`Tuning.table`); :meth:`Tuning.plot` draws the R-U
confidentiality map of Duncan, Keller-McNulty & Stokes (2001) (disclosure risk against data
utility, one point per candidate, the non-dominated frontier drawn) and
:meth:`Tuning.recommend` picks the candidate of best utility among those within a risk limit,
saying why in words.

The measures (:data:`MEASURES` says what each means and which direction is better):

* risk -- the Algorithm 1 matched distances of Nunes (2018, §3.3) (minimum and mean, mean row over
  the combinations of at least :data:`geosynth.evaluation.MIN_SHOWN_RECORDS` original records and
  synthetic points, as :func:`geosynth.evaluation.shown_tables` shows it: *smaller is riskier*), the
  Reiter & Mitra (2009) expected match risk and true match rate of an intruder who knows each
  target's attributes and cell on the candidate's lattice (*larger is riskier*), and the share of
  records with spatial k-anonymity below 5 (*larger is riskier*);
* utility -- the quadrant CI coverage of §3.3 (mean interval overlap of the proportion of a
  binary outcome over random rectangles, combining rules for partially synthetic data, or
  for fully synthetic data with an ε-DP candidate; a rectangle in which a release has no point
  scores 0, not left out as in :func:`geosynth.metrics.quadrant_coverage`, so that emptying
  dense areas is not rewarded), the Ripley's L gap (mean row, CRS units,
  over the same combinations: *smaller is better*) and the intensity fidelity on a
  **common** lattice, the finest candidate's, so that candidates are comparable and a lattice
  is credited for the detail it keeps: the correlation of original and synthetic cell counts
  (*larger is better*) and the L1 distance of their cell shares (0 to 2, *smaller is
  better*). On the coarsest lattice, as first measured, every finer lattice nested in it
  keeps its counts as well as the coarsest does: detail finer than its cells was not
  measured, and the tie went to the coarsest;
* diagnostics and cost -- the largest R-hat and smallest bulk ESS of the fit, and seconds.

Every risk and utility measure is an estimate from ``m`` releases: :attr:`Tuning.errors` holds
its Monte Carlo standard error, the delete-one jackknife over the releases (each release left
out in turn; for a mean over releases, exactly its standard error ``sd / sqrt(m)``), and
:meth:`Tuning.recommend` says when the pick is within two of them of another candidate or of
the limit, where another seed may pick otherwise. With ``m = 5`` the pick among three
lattices of close utility changed with the seed, and nothing said so.

Each candidate runs as one task of an executor (a thread pool by default, a Dask client's
``get_executor()`` for many) with a seed stream of its own, derived from the root seed and the
candidate's settings; the coverage of every candidate is measured on the same random
rectangles (common random numbers, one stream derived once from the root seed), so that the
candidates differ by their releases, not by the rectangles drawn. A row's columns other than
the two intensity columns therefore depend on the data, the shared settings, the root seed
and the candidate's own settings only: adding or removing other candidates, their order and
the executor do not change them (ε candidates excepted: their noise is fresh OS entropy). The
intensity columns are measured on the lattice of the finest candidate of the call, so adding
a finer candidate (or removing the finest) changes them in every row, and with them a
recommendation by ``intensity_correlation`` or ``intensity_l1``; ``tune(...,
previous=tuning)`` reuses the finished candidates' fits and releases and measures their
intensity columns again on the lattice of the new call.

The table is an internal document, and so is the choice it leads to. Every measure compares
releases with the confidential points, so the recommended lattice and settings are a function
of the confidential data: publishing them with the release discloses a little about the data
that no guarantee of the release covers (for ε-DP candidates, beyond their ε; :func:`tune`
warns). The distances leave out the combinations of fewer than
:data:`geosynth.evaluation.MIN_SHOWN_RECORDS` records or synthetic points (one or two people's
distances to the public synthetic points; a mean over all combinations, next to an evaluation report
of the same releases, gave them back), but the table still describes the confidential points. The
recommended candidate's measured utility is optimistic (the best of several noisy estimates,
each from ``m`` releases), and its tuning releases were chosen for it: make the published
release afresh with the chosen settings and a new seed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import inspect
import math
import os
import threading
import time
import warnings
import zlib
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely

from geosynth._messages import exact_number
from geosynth._points import point_coordinates
from geosynth._random import SeedLike, root_seed_sequence
from geosynth._validation import (
    MAX_CONTINUOUS,
    check_bool,
    check_choice,
    check_int,
    check_keywords,
    check_m,
    check_positive,
    check_public_lattice,
    check_real,
    check_ru_table,
    is_integer,
)
from geosynth.errors import InputError, PrivacyLeakWarning
from geosynth.model.stopping import DEFAULT_MAX_RHAT, DEFAULT_TARGET_ESS

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from geosynth.lattice import Grid
    from geosynth.synth.placement import PixelTable

__all__ = [
    "Candidate",
    "MEASURES",
    "Measure",
    "Recommendation",
    "Tuning",
    "MAX_CANDIDATES",
    "ERROR_MEASURES",
    "ERROR_MULTIPLE",
    "as_candidate",
    "check_risk_limit",
    "coverage_outcome",
    "frontier",
    "jackknife_errors",
    "recommend",
    "tune",
    "tuned_outcome",
]


class Measure(NamedTuple):
    """What one column of :attr:`Tuning.table` measures.

    Attributes
    ----------
    kind : {"risk", "utility", "diagnostic"}
        Which axis of the R-U map it can be.
    larger_is : {"riskier", "safer", "better", "worse"}
        The direction: for a risk measure whether a larger value means more risk; for a
        utility or diagnostic measure whether a larger value is better.
    description : str
        What the number is, in words.
    share : bool, default False
        A share of records (0 to 1): a limit above 1 is a percentage typo.
    count : bool, default False
        A number of records: it grows with the records a candidate describes (``n_records``).
    """

    kind: str
    larger_is: str
    description: str
    share: bool = False
    count: bool = False

    @property
    def sign(self) -> float:
        """+1 when larger values mean more risk (risk) or more utility (utility), else -1."""
        return 1.0 if self.larger_is in ("riskier", "better") else -1.0


#: The measures of a tuning table, in table order: column -> :class:`Measure`.
MEASURES: dict[str, Measure] = {
    "min_distance": Measure(
        "risk", "safer",
        "smallest Algorithm 1 matched distance between original and synthetic points of a "
        "combination (Nunes 2018, §3.3), mean over releases and over the combinations of at "
        "least 3 original records and synthetic points (MIN_SHOWN_RECORDS), in CRS units"),
    "mean_distance": Measure(
        "risk", "safer",
        "mean Algorithm 1 matched distance, mean over releases and over the combinations of "
        "at least 3 original records and synthetic points (CRS units)"),
    "expected_match_risk": Measure(
        "risk", "riskier",
        "Reiter & Mitra (2009): expected number of records an intruder who knows each "
        "target's attributes and lattice cell identifies correctly", count=True),
    "true_match_rate": Measure(
        "risk", "riskier",
        "Reiter & Mitra (2009): share of records matched uniquely and correctly", share=True),
    "k_anonymity_below_5": Measure(
        "risk", "riskier",
        "share of records with spatial k-anonymity below 5 (fewer than 5 original points "
        "within the record's displacement of its synthetic point, as MaskMyPy counts), mean "
        "over releases", share=True),
    "coverage": Measure(
        "utility", "better",
        "quadrant CI coverage (Nunes 2018, §3.3): mean overlap of the original and the "
        "combined synthetic 95% intervals of the outcome's proportion over random rectangles "
        "(a rectangle where a release has no point scores 0)"),
    "ripley_l_gap": Measure(
        "utility", "worse",
        "largest gap between original and synthetic Ripley's L functions (mean row over the "
        "combinations of at least 3 original records and synthetic points, CRS units)"),
    "intensity_correlation": Measure(
        "utility", "better",
        "correlation of original and synthetic (mean over releases) counts per cell of the "
        "common lattice (the finest candidate's)"),
    "intensity_l1": Measure(
        "utility", "worse",
        "L1 distance of original and synthetic cell shares on the common lattice (points "
        "beyond it count as misplaced), from 0 (identical) to 2 (disjoint)"),
    "max_r_hat": Measure(
        "diagnostic", "worse", "largest rank-normalised split R-hat of the fit: over every "
        "parameter (λ included) with n_iter='auto', over the scalars (μ, α, the τ's) with a "
        "fixed n_iter"),
    "min_ess": Measure("diagnostic", "better", "smallest bulk effective sample size of the fit, "
                       "over the same parameters as max_r_hat"),
    "seconds": Measure("diagnostic", "worse", "wall-clock seconds of the candidate's fit, "
                       "releases and measures (with the wait for a core beside the other "
                       "candidates)"),
}

#: The columns of :attr:`Tuning.errors`: the measures of the releases, which change with the
#: random draws (the diagnostics describe the fit).
ERROR_MEASURES = [name for name, measure in MEASURES.items() if measure.kind != "diagnostic"]
#: A pick within this many Monte Carlo standard errors of another is not told apart.
ERROR_MULTIPLE = 2.0
#: Default axes of :meth:`Tuning.plot` and :meth:`Tuning.recommend`.
DEFAULT_RISK = "true_match_rate"
DEFAULT_UTILITY = "coverage"
#: The default ``risk_limit`` of :meth:`Tuning.recommend` and :meth:`Tuning.plot`: the limit
#: given to :func:`tune`, for the default risk only (None is "no limit").
STORED_LIMIT: Any = object()
#: Fit options of a candidate unless ``fit_options`` says otherwise: run until converged.
DEFAULT_FIT_OPTIONS: dict[str, Any] = {"n_iter": "auto", "max_seconds": 900.0}
#: The most candidates of one :func:`tune` call. Each is a whole fit (up to 15 minutes by
#: default), ``m`` releases and an evaluation; 5,000 cell sizes ran for days after building
#: every lattice, and an R-U map or a report of more than a hundred points cannot be read.
MAX_CANDIDATES = 100
_EFFECTS = ("attribute", "combination")
_BETA_PRIORS = ("normal", "icar")


# ----------------------------------------------------------------------------- candidates
@dataclass(frozen=True)
class Candidate:
    """One lattice and model settings to try.

    Give exactly one of ``cell_size``, ``shape``, ``hex_size`` and ``grid``.

    Parameters
    ----------
    cell_size : float, optional
        Side of the square cells, in CRS units.
    shape : tuple of (int, int), optional
        ``(nrows, ncols)`` cells over the region (or the snapped bounds of the points).
    hex_size : float, optional
        Side of regular hexagons (centre to corner), in CRS units (:meth:`geosynth.Grid.hexagonal`).
    grid : geosynth.Grid, optional
        A lattice built beforehand, used as it is (``region``, ``exclude`` and ``barriers``
        of :func:`tune` do not apply to it): typically areal units from
        :meth:`geosynth.Grid.from_polygons` (census tracts, block groups, districts), to
        compare them with squares and hexagons.
        Candidates are told apart by a digest of its cells, adjacency and CRS.
    effects : {"attribute", "combination"}, default "attribute"
        :class:`geosynth.PaivaModel` ``effects``; an ε-DP candidate fits
        :func:`geosynth.dp.dp_model` with these effects (its weakly informative priors).
    beta_prior : str or tuple of str, optional
        Prior of the covariate effects (needs ``continuous`` in :func:`tune`): one name for
        every continuous column, or one per column.
    epsilon : float, optional
        Make ε-differentially private releases (:func:`geosynth.dp.dp_release`) instead of
        partially synthetic ones. Needs ``region`` in :func:`tune`; releases of this kind do not
        keep records linkable, so the Reiter–Mitra and k-anonymity columns are NaN.
    label : str, optional
        Name in tables and plots; default built from the settings (e.g. ``"250 m"``,
        ``"10x10, icar"``, ``"500 m, ε=1"``, ``"areal lattice, 159 cells"``,
        ``"250 m, weights exposure"``).
    weights_exposure : bool, default False
        Each cell's total of the ``weights`` raster of :func:`tune` (a population) is its
        exposure (:func:`geosynth.rasters.cell_exposure`, :meth:`geosynth.Grid.with_exposure`):
        the model smooths the rate per resident instead of the density per unit area. Needs
        ``weights`` in :func:`tune`; refused for a ``grid`` that already has an exposure.
    """

    cell_size: float | None = None
    shape: tuple[int, int] | None = None
    effects: str = "attribute"
    beta_prior: str | tuple[str, ...] | None = None
    epsilon: float | None = None
    label: str | None = None
    hex_size: float | None = None
    weights_exposure: bool = False
    # Two candidates on equal lattices are equal: compared by the digest, not the object.
    grid: Grid | None = field(default=None, repr=False, compare=False)
    _grid_digest: str | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        lattices = (self.cell_size, self.shape, self.hex_size, self.grid)
        if sum(v is not None for v in lattices) != 1:
            raise InputError("a Candidate needs exactly one of cell_size (CRS units), shape "
                             "(rows, cols), hex_size (CRS units) and grid (a geosynth.Grid)")
        if self.grid is not None:
            object.__setattr__(self, "_grid_digest", _grid_digest(self.grid))
        object.__setattr__(self, "weights_exposure",
                           check_bool(self.weights_exposure, "weights_exposure"))
        if self.weights_exposure and self.grid is not None and self.grid.exposure_given:
            raise InputError(f"grid has an exposure already ({self.grid.exposure_source}); give "
                             "one exposure: drop weights_exposure, or build the grid without it")
        for name in ("cell_size", "hex_size"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, check_positive(getattr(self, name), name))
        if self.shape is not None:
            object.__setattr__(self, "shape", _check_shape(self.shape))
        if not isinstance(self.effects, str) or self.effects not in _EFFECTS:
            raise InputError(f"effects must be 'attribute' or 'combination', got "
                             f"{self.effects!r}")
        # A plain str: numpy.str_('combination') equals 'combination' but its repr, which tags
        # the candidate's seed stream, differs, so it drew other releases.
        object.__setattr__(self, "effects", str(self.effects))
        object.__setattr__(self, "beta_prior", _check_beta_prior(self.beta_prior))
        if self.epsilon is not None:
            object.__setattr__(self, "epsilon", check_positive(self.epsilon, "epsilon"))
        if self.label is None:
            object.__setattr__(self, "label", self._default_label())
        elif not isinstance(self.label, str) or not self.label.strip():
            raise InputError(f"label must be a non-empty string, got {self.label!r}")

    def _default_label(self) -> str:
        if self.cell_size is not None:
            parts = [f"{exact_number(self.cell_size)} m"]
        elif self.hex_size is not None:
            parts = [f"hex {exact_number(self.hex_size)} m"]
        elif self.grid is not None:
            parts = [f"{self.grid.kind} lattice, {self.grid.n_cells} cells"]
            if self.grid.exposure_given:
                parts.append(f"exposure {self.grid.exposure_source}")
        else:
            parts = [f"{self.shape[0]}x{self.shape[1]}"]
        if self.weights_exposure:
            parts.append("weights exposure")
        if self.effects != "attribute":
            parts.append(f"{self.effects} effects")
        if self.beta_prior is not None:
            parts.append("/".join(self.beta_prior))
        if self.epsilon is not None:
            parts.append(f"ε={exact_number(self.epsilon)}")
        return ", ".join(parts)

    @property
    def settings(self) -> tuple:
        """The settings that decide the result (everything but the label)."""
        square = (self.cell_size, self.shape, self.effects, self.beta_prior, self.epsilon)
        # Candidates keep the settings (and seed streams) they had before hexagons and before
        # the weights' exposure: each addition is a tail of its own.
        tail = ((("hex_size", self.hex_size),) if self.hex_size is not None else
                (("grid", self._grid_digest),) if self.grid is not None else ())
        if self.weights_exposure:
            tail += (("weights_exposure", True),)
        return (*square, *tail)


def _grid_digest(grid: Any) -> str:
    """SHA-256 of a lattice's kind, CRS, habitable cells and adjacency (what a fit sees).

    And of its exposure, where it is not the habitable fraction that the cells already give.
    """
    from geosynth.lattice import Grid

    if not isinstance(grid, Grid):
        raise InputError(f"grid must be a geosynth.Grid (e.g. Grid.from_polygons(areas)), got "
                         f"{type(grid).__name__}")
    h = hashlib.sha256(repr((grid.kind, grid.crs and grid.crs.to_wkt())).encode())
    exposure = [grid.exposure] if grid.exposure_given else []
    for part in (grid.indptr, grid.indices, *exposure, *shapely.to_wkb(grid.habitable_geometry)):
        h.update(part if isinstance(part, bytes) else np.ascontiguousarray(part).tobytes())
    return h.hexdigest()


def _check_shape(shape: Any) -> tuple[int, int]:
    try:
        rows, cols = (int(v) for v in shape)
        ok = (not isinstance(shape, str)  # "45" iterated to 4 x 5
              and all(is_integer(v) or (isinstance(v, float) and v.is_integer()) for v in shape)
              and rows >= 1 and cols >= 1)
    except (TypeError, ValueError):
        ok = False
    if not ok:
        raise InputError(f"shape must be two integers >= 1 (rows, cols), got {shape!r}")
    return rows, cols


def _check_beta_prior(prior: Any) -> tuple[str, ...] | None:
    """Return the priors as a tuple of Python str (a NumPy str took another seed stream)."""
    if prior is None:
        return None
    iterable = isinstance(prior, Sequence | np.ndarray) and not isinstance(prior, bytes)
    priors = (prior,) if isinstance(prior, str) or not iterable else tuple(prior)
    bad = [p for p in priors if not isinstance(p, str) or p not in _BETA_PRIORS]
    if not priors or bad:
        raise InputError(f"beta_prior must be 'normal' or 'icar' (or one per continuous "
                         f"column), got {prior!r}")
    return tuple(str(p) for p in priors)


def as_candidate(value: Any) -> Candidate:
    """Read a candidate: a :class:`Candidate`, a cell size, a ``(rows, cols)`` pair or a dict.

    Parameters
    ----------
    value : Candidate, float, tuple of (int, int) or dict
        A number is a cell size in CRS units; a pair of integers a shape; a dict the keyword
        arguments of :class:`Candidate`.

    Returns
    -------
    Candidate

    Raises
    ------
    geosynth.errors.InputError
        Anything else, or invalid settings.
    """
    if isinstance(value, Candidate):
        return value
    if isinstance(value, Mapping):
        settings = sorted(name for name, spec in Candidate.__dataclass_fields__.items()
                          if spec.init)  # not _grid_digest, which the Candidate computes
        unknown = sorted(set(value) - set(settings), key=str)
        if unknown:
            raise InputError(f"unknown candidate setting(s) {unknown}; use {settings}")
        return Candidate(**value)
    if isinstance(value, bool | np.bool_):
        raise InputError(f"a candidate must be a cell size, (rows, cols), dict or Candidate, "
                         f"got {value!r}")
    if isinstance(value, int | float | np.number):
        return Candidate(cell_size=value)
    if isinstance(value, tuple | list) and len(value) == 2:
        return Candidate(shape=tuple(value))
    raise InputError(f"a candidate must be a cell size, (rows, cols), dict or Candidate, got "
                     f"{value!r}")


def _candidates(candidates: Any) -> list[Candidate]:
    if isinstance(candidates, str | bytes) or not isinstance(candidates, Sequence):
        raise InputError("candidates must be a list: cell sizes, (rows, cols) pairs, dicts or "
                         "Candidate objects")
    if len(candidates) > MAX_CANDIDATES:
        raise InputError(f"candidates has {len(candidates):,} entries, more than the limit of "
                         f"{MAX_CANDIDATES} (each is a whole fit, m releases and an "
                         "evaluation); compare a few lattices first, e.g. [100, 250, 500, "
                         "1000], then refine around the best in another call")
    out = [as_candidate(c) for c in candidates]
    if not out:
        raise InputError("candidates is empty; give at least one lattice, e.g. [250, 500]")
    labels = [c.label for c in out]
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        raise InputError(f"candidate labels must be unique; repeated: {repeated} (give label=)")
    first: dict[tuple, str] = {}
    for candidate in out:  # same settings, other label: fitted twice (an ε one spent twice)
        other = first.setdefault(candidate.settings, candidate.label)
        if other != candidate.label:
            raise InputError(f"candidates {other!r} and {candidate.label!r} have the same "
                             "settings: they would give the same row (an ε-DP one spending its "
                             "ε twice); drop one")
    return out


# ----------------------------------------------------------------------------- results
class Recommendation(NamedTuple):
    """The outcome of :meth:`Tuning.recommend`.

    Attributes
    ----------
    label : str or None
        Label of the recommended candidate; None when no candidate is within the risk limit.
    candidate : Candidate or None
        The recommended candidate (None also for a table built by hand, which holds labels
        only).
    reason : str
        Why, in words (or what to do when nothing qualifies).
    """

    label: str | None
    candidate: Candidate | None
    reason: str

    def __str__(self) -> str:
        return self.reason


@dataclass
class Tuning:
    """Risk, utility and cost of each candidate (:func:`tune`).

    Attributes
    ----------
    table : pandas.DataFrame
        One row per candidate (index: label, in the order given) with the settings
        (``cell_size``, ``hex_size``, ``shape``, ``n_cells``, ``effects``, ``beta_prior``,
        ``epsilon``) and
        the columns of :data:`MEASURES`.
    candidates : dict of str to Candidate
        The candidates by label.
    risk_limit : float or None
        The default limit of :meth:`recommend`.
    reference : str
        Label of the candidate whose lattice the intensity fidelity is measured on: the
        finest of this tuning's candidates (the intensity columns depend on it).
    errors : pandas.DataFrame or None
        The Monte Carlo standard error of each risk and utility measure
        (:data:`ERROR_MEASURES`), same index as :attr:`table`: the delete-one jackknife over
        the ``m`` releases (:func:`jackknife_errors`): how much a measure would move with
        another seed. It is rough for small ``m`` (5 replicates at the default), and it sees the
        releases' randomness given the fit, not the fit's own Monte Carlo error (small for a
        converged fit; an unconverged one is named by :meth:`recommend`). NaN with ``m = 1``,
        and for the coverage with ``m = 2``.
    """

    table: pd.DataFrame
    candidates: dict[str, Candidate]
    risk_limit: float | None = None
    reference: str = ""
    errors: pd.DataFrame | None = None
    _runs: dict = field(default_factory=dict, repr=False)
    _key: dict = field(default_factory=dict, repr=False)
    _root: Any = field(default=None, repr=False)

    def recommend(self, risk_limit: Any = STORED_LIMIT, risk: str = DEFAULT_RISK,
                  utility: str = DEFAULT_UTILITY) -> Recommendation:
        """Return the candidate of best utility among those within the risk limit.

        Parameters
        ----------
        risk_limit : float or None, optional
            Largest acceptable value of ``risk`` (for a distance, where larger is safer: the
            smallest acceptable value); None: no limit. Default: :attr:`risk_limit`, the limit
            given to :func:`tune`, which is a limit of the default risk (``true_match_rate``)
            and so applies to it only.
        risk, utility : str
            Columns of :attr:`table` (see :data:`MEASURES`).

        Returns
        -------
        Recommendation
        """
        limit = self._limit(risk_limit, risk)
        chosen = recommend(self.table, limit, risk, utility, errors=self.errors)
        return chosen._replace(candidate=self.candidates.get(chosen.label))

    def frontier(self, risk: str = DEFAULT_RISK, utility: str = DEFAULT_UTILITY) -> list[str]:
        """Return the labels of the candidates no other beats on both risk and utility."""
        return frontier(self.table, risk, utility)

    def _limit(self, risk_limit: Any, risk: str) -> float | None:
        """Return the limit asked for; by default tune's, for the risk it was given for."""
        if risk_limit is STORED_LIMIT:
            return self.risk_limit if risk == DEFAULT_RISK else None
        return risk_limit

    def plot(self, risk: str = DEFAULT_RISK, utility: str = DEFAULT_UTILITY,
             risk_limit: Any = STORED_LIMIT) -> Figure:
        """Draw the R-U confidentiality map (Duncan, Keller-McNulty & Stokes 2001).

        Risk on the x axis, utility on the y axis, one labelled point per candidate, the
        non-dominated frontier drawn as a line, the recommendation circled and the risk limit
        (default :attr:`risk_limit`) as a vertical line.

        Parameters
        ----------
        risk, utility : str
            Columns of :attr:`table` (see :data:`MEASURES`).
        risk_limit : float or None, optional
            As in :meth:`recommend`.

        Returns
        -------
        matplotlib.figure.Figure
        """
        from geosynth.plots import ru_map

        limit = self._limit(risk_limit, risk)
        chosen = recommend(self.table, limit, risk, utility).label
        return ru_map(self.table, risk, utility, frontier(self.table, risk, utility), chosen,
                      limit, x_label=_axis_label(risk), y_label=_axis_label(utility))

    def to_markdown(self) -> str:
        """Return the table as a Markdown text block: one column per candidate, 4 digits.

        The measures are followed by their Monte Carlo standard errors (:attr:`errors`, rows
        ending in ``(se)``). An internal document: its measures describe the confidential
        points (see the module notes), though no distance of fewer than
        :data:`geosynth.evaluation.MIN_SHOWN_RECORDS` records is in it.
        """
        blocks = [self.table]
        if self.errors is not None:
            blocks.append(self.errors.add_suffix(" (se)"))
        shown = pd.concat(blocks, axis=1)
        for column in shown.columns:
            if pd.api.types.is_float_dtype(shown[column]):
                shown[column] = shown[column].map(lambda v: f"{v:.4g}")
        return f"```\n{shown.T.to_string()}\n```"


def _axis_label(column: str) -> str:
    """E.g. "true match rate (larger is riskier)"."""
    return f"{column.replace('_', ' ')} (larger is {MEASURES[column].larger_is})"


def _measure(column: Any, kind: str) -> Measure:
    """Return the :class:`Measure` of ``column``, refusing a name not of that ``kind``."""
    names = [k for k, v in MEASURES.items() if v.kind == kind]
    return MEASURES[check_choice(column, kind, names)]


def frontier(table: pd.DataFrame, risk: str = DEFAULT_RISK,
             utility: str = DEFAULT_UTILITY) -> list[str]:
    """Labels of the non-dominated candidates of a tuning table.

    A candidate is dominated when another is at most as risky and at least as useful, and
    strictly better on one of the two (directions from :data:`MEASURES`). Rows with a missing
    risk or utility are left out.

    Parameters
    ----------
    table : pandas.DataFrame
        :attr:`Tuning.table` (or any table with the two columns, indexed by label).
    risk, utility : str
        Column names.

    Returns
    -------
    list of str
        Sorted from the least to the most risky.

    Raises
    ------
    geosynth.errors.InputError
        ``risk`` or ``utility`` is not a measure of its kind (:data:`MEASURES`), or the table
        is refused by :func:`~geosynth._validation.check_ru_table` (a missing or repeated
        column, a repeated label, text or ±inf in a column).
    """
    r, u = _oriented(table, risk, utility)
    keep = []
    for label in r.index:
        dominated = ((r <= r[label]) & (u >= u[label]) & ((r < r[label]) | (u > u[label])))
        if not dominated.any():
            keep.append(label)
    return sorted(keep, key=lambda label: (r[label], -u[label], str(label)))


def _oriented(table: pd.DataFrame, risk: str, utility: str) -> tuple[pd.Series, pd.Series]:
    """Risk (larger = riskier) and utility (larger = better) of the rows that have both."""
    r_measure, u_measure = _measure(risk, "risk"), _measure(utility, "utility")
    both = check_ru_table(table, risk, utility).dropna()
    return both[risk] * r_measure.sign, both[utility] * u_measure.sign


def recommend(table: pd.DataFrame, risk_limit: float | None = None, risk: str = DEFAULT_RISK,
              utility: str = DEFAULT_UTILITY, *,
              errors: pd.DataFrame | None = None) -> Recommendation:
    """Pick the candidate of best utility among those within a risk limit.

    Ties in utility go to the less risky candidate, then to the one with fewer cells (a coarser
    lattice publishes less), then to the first label in sorted order (not the first row: the
    same candidates listed in another order get the same recommendation). Candidates whose
    ``risk`` or ``utility`` is missing (NaN: e.g. the linked risks of an ε-DP candidate) are
    never recommended, not even without a limit, since their risk is unknown; the reason
    names them.

    Every measure is an estimate from ``m`` releases. With ``errors`` (the Monte Carlo
    standard errors, :attr:`Tuning.errors`) the reason says when the pick is not told apart
    from another candidate within the limit (their utilities differ by less than
    :data:`ERROR_MULTIPLE` standard errors of the difference, the two taken as independent),
    when the pick's risk is that close to the limit, when a more useful candidate is beyond
    the limit by less than that (another seed may pick otherwise), and when the pick's error
    is unknown (too few releases).

    Parameters
    ----------
    table : pandas.DataFrame
        :attr:`Tuning.table`, indexed by label (``n_cells`` is used for ties when present).
    risk_limit : float, optional
        Largest acceptable risk (smallest acceptable distance for the distance measures).
        None: every candidate with both measures qualifies.
    risk, utility : str
        Columns of the table (see :data:`MEASURES`).
    errors : pandas.DataFrame, optional
        Standard errors of the measures by label (:attr:`Tuning.errors`); labels or columns it
        lacks, and NaN, are taken as unknown.

    Returns
    -------
    Recommendation
        ``label`` is None when nothing is within the limit, and the reason names the least
        risky candidate and its risk. ``candidate`` is None (a table holds labels;
        :meth:`Tuning.recommend` fills it in).

    Raises
    ------
    geosynth.errors.InputError
        Unknown or wrong-kind columns, a table :func:`~geosynth._validation.check_ru_table`
        refuses (repeated labels, text or ±inf in the measures), a non-finite limit, a
        negative one of a rate or count, one above 1 of a share, or no candidate with both
        measures.
    """
    r_measure, u_measure = _measure(risk, "risk"), _measure(utility, "utility")
    r, u = _oriented(table, risk, utility)
    if r.empty:
        raise InputError(f"no candidate has both {risk} and {utility}; pick other measures "
                         "(e.g. min_distance for ε-DP candidates, intensity_correlation "
                         "without an outcome)")
    missing = [label for label in table.index if label not in r.index]
    left_out = (f"; left out for a missing {risk} or {utility}: {missing}" if missing else "")
    limit_text = ""
    if risk_limit is not None:
        limit_value = check_risk_limit(risk_limit, risk)
        limit = limit_value * r_measure.sign
        relation = "<=" if r_measure.sign > 0 else ">="
        limit_text = f" within the limit {risk} {relation} {exact_number(limit_value)}"
        qualified = r.index[r <= limit + 1e-12 * abs(limit)]
        if len(qualified) == 0:
            safest = min(r.index, key=lambda label: (r[label], str(label)))
            return Recommendation(None, None, (
                f"no candidate is within the limit {risk} {relation} "
                f"{exact_number(limit_value)}; the least risky is {safest!r} ({risk} = "
                f"{exact_number(float(table.at[safest, risk]))}): relax the "
                "limit, or add coarser lattices or stronger settings (e.g. a smaller ε)"
                + left_out))
    else:
        qualified = r.index
    cells = table["n_cells"] if "n_cells" in table else pd.Series(0, index=table.index)
    best = min(qualified, key=lambda label: (-u[label], r[label], cells[label], str(label)))
    ties = [label for label in qualified if label != best and u[label] == u[best]]
    reason = (f"{best!r} has the best {utility} ({table.at[best, utility]:.4g}; larger is "
              f"{u_measure.larger_is}) of the {len(qualified)} candidate(s){limit_text}, at "
              f"{risk} = {table.at[best, risk]:.4g}")
    if ties:
        reason += (f"; tied with {ties} on {utility}, it is the less risky, coarser or first "
                   "by label")
    reason += _convergence_note(table, best)
    if r_measure.count and "n_records" in table:
        described = table.loc[qualified, "n_records"]
        if described.nunique() > 1:  # outside="drop": each lattice keeps its own records
            reason += (f"; {risk} counts records, and the candidates describe "
                       f"{int(described.min()):,} to {int(described.max()):,} of them (records "
                       "outside a lattice dropped): compare a share, e.g. true_match_rate")
    if errors is not None:
        reason += _monte_carlo_note(table, _error_table(errors, table), best, qualified, u,
                                    utility, risk, limit_value if risk_limit is not None else None)
    return Recommendation(best, None, reason + left_out)


def _convergence_note(table: pd.DataFrame, best: Any) -> str:
    """Say when the pick's fit has not converged, or when nothing tells (the rule of ``fit``).

    Recommended without a word before: a fit at R-hat 1.052, one whose R-hat is unknown (one
    chain) and one of 5 effective draws, which ``n_iter="auto"`` would have run on.
    """
    r_hat = float(table.at[best, "max_r_hat"]) if "max_r_hat" in table else math.nan
    ess = float(table.at[best, "min_ess"]) if "min_ess" in table else math.nan
    if r_hat > DEFAULT_MAX_RHAT:
        return (f"; its fit has not converged (largest R-hat {r_hat:.3f} > {DEFAULT_MAX_RHAT}): "
                "fit it longer before trusting its measures")
    if ess < DEFAULT_TARGET_ESS:
        return (f"; its fit has {ess:.0f} effective draws of its worst parameter (n_iter='auto' "
                f"runs to {DEFAULT_TARGET_ESS:g}): fit it longer before trusting its measures")
    if "max_r_hat" in table and math.isnan(r_hat):
        return ("; its fit's convergence is unknown (no R-hat: one chain, or too few draws): "
                "fit it with 2 or more chains before trusting its measures")
    return ""


def _error_table(errors: Any, table: pd.DataFrame) -> pd.DataFrame:
    """``errors`` aligned on the rows of ``table`` (unknown: NaN), refusing what is no table."""
    if not isinstance(errors, pd.DataFrame):
        raise InputError(f"errors must be a DataFrame of standard errors by label (Tuning.errors) "
                         f"or None, got {type(errors).__name__}")
    aligned = errors.reindex(index=table.index)
    return aligned.apply(pd.to_numeric, errors="coerce")


def _monte_carlo_note(table: pd.DataFrame, errors: pd.DataFrame, best: Any, qualified: Any,
                      u: pd.Series, utility: str, risk: str, limit: float | None) -> str:
    """Say when the pick is within Monte Carlo error of another candidate or of the limit."""
    def error(label: Any, column: str) -> float:
        return float(errors.at[label, column]) if column in errors else math.nan

    def shown(label: Any, column: str) -> str:
        return f"{table.at[label, column]:.4g} ± {error(label, column):.2g}"

    note = ""
    others = [label for label in qualified if label != best]
    if others and not math.isfinite(error(best, utility)):
        note += (f"; the Monte Carlo error of its {utility} is unknown (too few releases: the "
                 "jackknife needs 2, the coverage 3), so whether another seed would pick "
                 "otherwise cannot be told; raise m")
    close = [label for label in others
             if u[best] - u[label] < ERROR_MULTIPLE * math.hypot(error(best, utility),
                                                                 error(label, utility))]
    if close:
        described = ", ".join(f"{label!r} ({shown(label, utility)})" for label in close)
        note += (f"; its {utility} ({shown(best, utility)}, ± one Monte Carlo standard error) "
                 f"is within {ERROR_MULTIPLE:g} standard errors of {described}: another seed "
                 "may pick otherwise; raise m to tell them apart")
    if limit is None:
        return note
    value = float(table.at[best, risk])
    if abs(value - limit) < ERROR_MULTIPLE * error(best, risk):
        note += (f"; its {risk} ({shown(best, risk)}) is within {ERROR_MULTIPLE:g} Monte Carlo "
                 f"standard errors of the limit {exact_number(limit)}")
    # More useful candidates beyond the limit by less than their error: another seed may let
    # them in, and pick one of them.
    beyond = [label for label in u.index if label not in set(qualified) and u[label] > u[best]
              and abs(float(table.at[label, risk]) - limit)
              < ERROR_MULTIPLE * error(label, risk)]
    if beyond:
        described = ", ".join(f"{label!r} ({shown(label, risk)})" for label in beyond)
        note += (f"; {described} {'is' if len(beyond) == 1 else 'are'} more useful and beyond "
                 f"the limit by less than {ERROR_MULTIPLE:g} Monte Carlo standard errors of "
                 f"{risk}: another seed may let {'it' if len(beyond) == 1 else 'them'} in")
    return note


def check_risk_limit(risk_limit: Any, risk: str) -> float:
    """Return ``risk_limit`` as a float: finite, >= 0 for rates and counts, <= 1 for shares.

    No risk measure is ever negative: a negative limit of a rate left no candidate within it,
    which read as "everything is too risky" instead of a typo, and one of a distance (where
    larger is safer) let every candidate through, as no limit; a limit above 1 of a share (5
    meant as 5 %) let every candidate through, however risky.

    Parameters
    ----------
    risk_limit : float
        The limit of :func:`recommend`.
    risk : str
        The risk measure it limits (a key of :data:`MEASURES`).

    Returns
    -------
    float

    Raises
    ------
    geosynth.errors.InputError
        ``risk`` is not a risk measure of :data:`MEASURES`; ``risk_limit`` is not a finite
        number, is negative, or above 1 for a share.
    """
    measure = _measure(risk, "risk")
    limit = check_real(risk_limit, "risk_limit")
    if not abs(limit) <= MAX_CONTINUOUS:  # also NaN; beyond it the R-U map failed after the fits
        raise InputError(f"risk_limit must be a finite number (at most {MAX_CONTINUOUS:g} in "
                         f"size), got {risk_limit!r}; pass risk_limit=None for no limit")
    if limit < 0:  # a negative distance limit let every candidate through, as no limit
        largest = "largest" if measure.larger_is == "riskier" else "smallest"
        example = "0.05" if measure.larger_is == "riskier" else "50"
        raise InputError(f"risk_limit must be >= 0 for {risk}, which is never negative, got "
                         f"{limit:g}; pass the {largest} acceptable {risk} (e.g. {example}), or "
                         "pass risk_limit=None for no limit")
    if limit > 1 and measure.share:
        raise InputError(f"risk_limit must be at most 1 for {risk}, a share of records, got "
                         f"{limit:g}; pass a share (e.g. 0.05 for 5%), or pass risk_limit=None for "
                         "no limit")
    return limit


# ----------------------------------------------------------------------------- running
@dataclass
class _CandidateRun:
    """What a finished candidate keeps: its measures, lattice and synthetic coordinates."""

    row: dict
    grid: Grid
    synthetic_xy: list[np.ndarray]
    #: The row's release measures with each release left out in turn (the jackknife).
    replicates: list[dict] = field(default_factory=list)
    #: What the candidate read of the weights raster (:func:`_table_digest`).
    weights: str | None = None
    #: The warnings of a task run in another process, ``(category, text, file, line)``, for
    #: :func:`tune` to give in its own (:func:`_collected_warnings`).
    warned: list[tuple] = field(default_factory=list)


@dataclass(frozen=True)
class _Setup:
    """What every candidate shares (validated once by :func:`tune`)."""

    attributes: list[str]
    continuous: list[str] | str | None
    region: Any
    exclude: Any
    barriers: Any
    m: int
    outcome: str | None
    n_quadrants: int
    fit_options: dict
    outside: str = "error"
    #: The placement raster (path or open dataset), read over each candidate's lattice.
    weights: Any = None
    #: The seed of the coverage rectangles, the same for every candidate (set by tune).
    coverage_seed: np.random.SeedSequence | None = None
    #: The process of tune's caller (set by tune): tasks run in another one collect their
    #: warnings (:func:`run_candidate`).
    caller: int | None = None


def tune(
    gdf: gpd.GeoDataFrame,
    attributes: Sequence[str] | str,
    candidates: Sequence[Any],
    *,
    region: Any = None,
    exclude: Any = None,
    barriers: Any = None,
    continuous: Sequence[str] | str | None = None,
    m: int = 5,
    risk_limit: float | None = None,
    executor: Executor | None = None,
    seed: SeedLike = None,
    outcome: str | None = None,
    n_quadrants: int = 1000,
    fit_options: Mapping[str, Any] | None = None,
    previous: Tuning | None = None,
    progress: bool = True,
    outside: str = "error",
    weights: Any = None,
) -> Tuning:
    """Fit, release and measure each candidate lattice; the risk–utility table of all of them.

    For each candidate (:class:`Candidate`): the lattice (:meth:`geosynth.Grid.from_points`
    over ``region`` when given), :func:`geosynth.prepare`, the fit of
    :class:`geosynth.PaivaModel` with the candidate's settings, ``m`` releases
    (:func:`geosynth.synthesize`, or :func:`geosynth.dp.dp_release` for an ε candidate) and
    :func:`geosynth.evaluate`; then the intensity fidelity of every candidate on the lattice of
    the one with the most cells. See :data:`MEASURES` for the columns.

    Parameters
    ----------
    gdf : geopandas.GeoDataFrame
        The confidential points (projected CRS) with the attribute columns. Its index is not
        used: rows are numbered by position (messages name rows by number, not by label).
    attributes : sequence of str or str
        Attribute columns that define the combinations.
    candidates : sequence
        Cell sizes (CRS units), ``(rows, cols)`` pairs, dicts of :class:`Candidate` settings or
        Candidates, e.g. ``[100, 250, 500, 1000]``.
    region, exclude : GeoDataFrame, GeoSeries or shapely geometry, optional
        Study region (the lattice spans its bounds and is clipped to it; required by ε
        candidates) and no-go areas, as in :meth:`geosynth.Grid.from_points`.
    barriers : GeoDataFrame, GeoSeries or shapely geometry, optional
        Lines or polygons (rivers, motorways) whose crossings are cut from every candidate's
        lattice (:meth:`geosynth.Grid.without_links_across`).
    continuous : sequence of str or str, optional
        Continuous columns, for candidates with a ``beta_prior``.
    m : int, default 5
        Releases per candidate (the coverage needs 2 or more: with ``m=1`` there is no
        coverage column unless ``outcome`` asks for it, which is refused).
    risk_limit : float, optional
        Default limit of :meth:`Tuning.recommend` (of its default risk,
        ``true_match_rate``, a share): a number from 0 to 1.
    executor : concurrent.futures.Executor, optional
        Runs one task per candidate: default a thread pool of ``cpu_count // 2`` threads (each
        fit runs two chains); a Dask client's ``client.get_executor()`` for many candidates.
    seed : None, int, numpy.random.SeedSequence or numpy.random.Generator
        Root seed. Each candidate fits and releases with a stream derived from it and the
        candidate's settings, and every candidate's coverage is measured on the same random
        rectangles, drawn from one stream derived from the root seed (common random numbers;
        with ``outside="drop"``, within the box of the records each candidate keeps, so
        candidates that drop different records get different rectangles).
        So the same seed gives the same table whatever the executor or the order, and a
        candidate's row does not depend on the other candidates, except its two intensity
        columns: they are measured on the lattice of the finest candidate of the call, which
        a finer candidate added changes; its ``seconds``, which count the wait for a core
        beside the other candidates (and numba's compilation on a fresh install, for the
        first fits); and every measure of a fit stopped by ``max_seconds`` (of the default
        ``fit_options``) before converging: its sweeps depend on the machine's speed and
        load (its R-hat or ESS then falls short, and :meth:`Tuning.recommend` says so). ε
        candidates draw their noise from fresh OS entropy (never from a seed), so their rows
        change between runs.
    outcome : str, optional
        Binary attribute (one of ``attributes``: the releases carry those columns only) of the
        coverage measure; default the first attribute when it holds only 0 and 1 (or
        booleans) and ``m >= 2``, else no coverage column (NaN).
    n_quadrants : int, default 1000
        Random rectangles of the coverage measure, at most
        :data:`geosynth.metrics.utility.MAX_QUADRANTS`.
    fit_options : mapping, optional
        Keyword arguments of :meth:`geosynth.PaivaModel.fit` (and of ``dp_release`` for ε
        candidates), e.g. ``{"n_iter": 2000, "burn_in": 500}``; default
        :data:`DEFAULT_FIT_OPTIONS`, run until converged or 15 minutes. Keys these functions do
        not take are refused before any fit.
    previous : Tuning, optional
        A tuning of the same data and settings: candidates it holds are not rerun (their
        fits, releases and other measures are reused), and their intensity columns are
        measured again on the lattice of this call's finest candidate.
    progress : bool, default True
        Show a progress bar across candidates.
    outside : {"error", "drop"}, default "error"
        Points in no cell of a candidate's lattice (outside the region, or in an excluded
        area), as in :func:`geosynth.prepare`: refuse them, or drop them (with a warning) and
        measure the candidate on the records kept. The CLI's ``--drop-outside``.
    weights : str, os.PathLike or rasterio dataset, optional
        Raster of public non-negative weights (e.g. population density, in the records' CRS)
        that places every candidate's synthetic points within their cells, as in
        :func:`geosynth.synthesize` (and :func:`geosynth.dp.dp_release`); and the cells'
        exposure of the candidates with ``weights_exposure``. Read over each candidate's
        lattice before any fit (:func:`geosynth.rasters.read_weights`); default: uniformly
        within the cells. Never a raster made from the records (warned about, as by
        :func:`geosynth.synthesize`).

    Returns
    -------
    Tuning

    Raises
    ------
    geosynth.errors.InputError
        Invalid candidates or options, all before any fit: attributes or ``continuous``
        columns that ``gdf`` lacks, an ``outcome`` that is not a binary attribute, an
        ``outcome`` with ``m=1``, ``n_quadrants`` above the cap, ``fit_options`` that is not a
        mapping, has keys the fit does not take or run settings it refuses (e.g. ``burn_in``
        beyond ``n_iter``), two candidates with the same settings, a ``risk_limit`` below 0 or
        above 1, a candidate whose lattice cannot be built (e.g. too many cells), a bad
        ``outside``, ``region`` or ``exclude``; a raster of ``weights`` that
        :func:`geosynth.rasters.read_weights` refuses over a candidate's lattice, or a
        candidate with ``weights_exposure`` without ``weights``; an ε candidate without
        ``region`` or with a
        ``beta_prior`` (``continuous`` is for candidates with one; the others, ε or not, do not
        read it); a ``beta_prior`` without ``continuous``; ``previous`` made from other
        data, settings or seed; and what :func:`geosynth.prepare`, the fit, the releases and
        the evaluation raise (with a note naming the candidate).

    Warns
    -----
    geosynth.errors.PrivacyLeakWarning
        With ε candidates: they spend their ε on the same data and are ranked with exact-data
        measures, which the chosen ε does not cover (keep the tuning internal). And when the
        ``weights``' positive pixels hold nearly all the records in a sliver of their cells (a
        raster made from them).
    geosynth.errors.DataWarning
        A candidate with ``weights_exposure`` has cells that the raster counts (nearly) nobody
        in, raised to a floor (:func:`geosynth.rasters.cell_exposure`).

    Notes
    -----
    The recommendation is chosen by measures of the confidential data, so the chosen settings
    are themselves a function of it: keep the table, the report and the map internal, and make
    the published release afresh (new seed) with the chosen settings. The distance columns
    average the combinations of at least :data:`geosynth.evaluation.MIN_SHOWN_RECORDS`
    original records and synthetic points (on average over the releases) only (NaN when there
    is none), as :func:`geosynth.evaluation.shown_tables` shows them; for partially synthetic
    candidates, which keep every record's combination, those combinations are the same for
    every candidate (with ``outside="drop"``, those of the records each candidate keeps); an
    ε-DP candidate's releases may hold fewer points of a combination, and leave it out.

    Examples
    --------
    >>> from geosynth.datasets import paiva_scenario
    >>> scenario = paiva_scenario(n=200, seed=1)
    >>> tuning = tune(scenario.data, ["y", "x1", "x2"], [(4, 4), (8, 8)],
    ...               fit_options={"n_iter": 200, "burn_in": 100}, n_quadrants=50, m=2,
    ...               seed=1, progress=False)  # doctest: +SKIP
    >>> tuning.recommend(risk_limit=0.05).reason  # doctest: +SKIP
    """
    gdf = _records(gdf)
    wanted = _candidates(candidates)
    setup = _setup(gdf, attributes, continuous, (region, exclude, barriers), m, outcome,
                   n_quadrants, fit_options, outside, weights)
    _check_fit_options(setup.fit_options, wanted)
    if weights is not None:  # what a lattice does not change is refused once, here
        from geosynth.rasters import check_weights_raster

        check_weights_raster(weights, gdf.crs)
    for candidate in wanted:
        _check_candidate(candidate, setup)
    if risk_limit is not None:
        risk_limit = check_risk_limit(risk_limit, DEFAULT_RISK)
    progress = check_bool(progress, "progress")
    _warn_of_dp_candidates(wanted)
    xy = point_coordinates(gdf, "gdf")  # once: the bounds check, the fingerprint, the table
    _warn_of_bounds_on_records(xy, wanted)
    key = _fingerprint(gdf, xy, setup)
    root = _root_seed(seed, previous, key)
    setup = dataclasses.replace(setup, coverage_seed=_coverage_seed(root), caller=os.getpid())
    runs: dict[tuple, _CandidateRun] = {}
    if previous is not None:
        runs.update({settings: run for settings, run in previous._runs.items()})
    todo = [c for c in wanted if c.settings not in runs]
    # With weights, a reused candidate's lattice is built again, to check what it reads.
    reused = [c for c in wanted if c.settings in runs] if setup.weights is not None else []
    with _labelled_warnings():
        lattices = _lattices(gdf, xy, todo + reused, setup)
        _check_reused_weights(reused, runs, lattices)
        runs.update(_run_all(gdf, todo, setup, root, executor, progress, lattices))
    return _tuning(xy, wanted, runs, risk_limit, key, root)


def coverage_outcome(gdf: gpd.GeoDataFrame, attributes: Sequence[str],
                     outcome: str | None) -> str | None:
    """Return the binary column of the coverage measure, or None when there is none.

    Parameters
    ----------
    gdf : geopandas.GeoDataFrame
        The confidential points.
    attributes : sequence of str
        Their attribute columns; the first is the default outcome when it is binary.
    outcome : str or None
        The column asked for (one of ``attributes``), or None for the default.

    Returns
    -------
    str or None
        ``outcome``, else the first attribute if it holds only 0 and 1 (or booleans), else None
        (the tuning table then has no coverage: NaN).

    Raises
    ------
    geosynth.errors.InputError
        ``outcome`` is not a column of ``gdf``, not binary, or not one of ``attributes`` (the
        releases carry the attribute columns only, so its coverage could not be measured).
    """
    from geosynth.metrics.utility import binary_outcome, is_binary

    if outcome is None:
        return attributes[0] if attributes and is_binary(gdf[attributes[0]]) else None
    binary_outcome(gdf, outcome, "gdf")
    if outcome not in attributes:
        raise InputError(f"outcome={outcome!r} is not one of the attributes {list(attributes)}: "
                         "the releases carry the attribute columns only, so its coverage "
                         f"cannot be measured; add {outcome!r} to attributes or pick one of them")
    return outcome


def _records(gdf: Any) -> gpd.GeoDataFrame:
    """Return the points numbered by position (0, 1, ...), which is how tune passes them on.

    The messages of the checks and of :func:`geosynth.prepare` (points outside a lattice, bad
    values) then name rows by number, never by their index labels, which may be record ids.
    """
    if not isinstance(gdf, gpd.GeoDataFrame):
        raise InputError(f"gdf must be a GeoDataFrame, got {type(gdf).__name__}")
    if len(gdf) == 0:  # said by prepare after every lattice was built
        raise InputError("gdf has no rows; tune needs the confidential points")
    return gdf.reset_index(drop=True)


def _setup(gdf, attributes, continuous, places, m, outcome, n_quadrants,
           fit_options, outside, weights=None) -> _Setup:
    """Check what every candidate shares, before any fit (candidates in :func:`tune`).

    ``places`` is ``(region, exclude, barriers)``.
    """
    from geosynth.data import check_columns

    attributes = list(check_columns(gdf, attributes, continuous))
    m = check_m(m)
    if outside not in ("error", "drop"):
        raise InputError(f'outside must be "error" or "drop" (as in geosynth.prepare), got '
                         f"{outside!r}")
    return _Setup(attributes, continuous, *places, m,
                  tuned_outcome(gdf, attributes, outcome, m), _n_quadrants(n_quadrants),
                  _fit_options(fit_options), outside, weights)


def tuned_outcome(gdf: gpd.GeoDataFrame, attributes: list[str], outcome: str | None,
                  m: int) -> str | None:
    """Return the outcome whose coverage :func:`tune` measures, or None (no coverage column).

    :func:`coverage_outcome`, then what the coverage needs: ``m >= 2`` releases, enough
    records to fill a rectangle and a bounding box of the records with width and height.
    Without them the default outcome gives no coverage column, and an ``outcome`` asked for is
    refused (before any fit).

    Parameters
    ----------
    gdf : geopandas.GeoDataFrame
        The confidential points.
    attributes : list of str
        Their attribute columns.
    outcome : str or None
        The column asked for, or None for the default.
    m : int
        Releases per candidate.

    Returns
    -------
    str or None

    Raises
    ------
    geosynth.errors.InputError
        ``outcome`` is given but its coverage cannot be measured.
    """
    from geosynth.evaluation import check_coverage_sizes

    chosen = coverage_outcome(gdf, attributes, outcome)
    if m < 2 and outcome is not None:
        raise InputError(f"outcome={outcome!r} needs m >= 2: the coverage combines the releases "
                         "(its interval uses the variance between them), so m=1 has none; pass "
                         "m=2 or more, or leave outcome unset (no coverage column)")
    if chosen is None:
        return None
    try:  # before any fit: the coverage was refused after every candidate's
        check_coverage_sizes(len(gdf), m)
        _check_coverage_extent(gdf, outcome)
    except InputError:
        if outcome is None:  # the default outcome: no coverage column then
            return None
        raise
    return chosen


def _check_coverage_extent(gdf: gpd.GeoDataFrame, outcome: str | None) -> None:
    """Refuse records whose bounding box has no width or height: no coverage rectangle fits.

    :func:`geosynth.metrics.quadrant_coverage` draws the rectangles in that box (tune gives it
    no other bounds) and refused it after every candidate's fit, advising to pass bounds,
    which tune does not take.
    """
    from geosynth.metrics.utility import as_bounds

    try:
        as_bounds(None, point_coordinates(gdf, "gdf"), "bounds")
    except InputError:  # its message advises bounds=; no coordinate in this one either
        raise InputError(
            f"outcome={outcome!r}: the coverage rectangles are drawn in the records' bounding "
            "box, which has no width or no height (every record shares one x or one y "
            "coordinate, e.g. geocoded to one place), so no coverage can be measured; leave "
            "outcome unset (no coverage column) or check the geocoding") from None


def _n_quadrants(n_quadrants: Any) -> int:
    from geosynth.metrics.utility import MAX_QUADRANTS

    n_quadrants = check_int(n_quadrants, "n_quadrants", what="random rectangles of coverage")
    if n_quadrants > MAX_QUADRANTS:
        raise InputError(f"n_quadrants (random rectangles of coverage) must be at most "
                         f"{MAX_QUADRANTS:,}, got {n_quadrants:,}; the thesis uses 1,000")
    return n_quadrants


#: Arguments of the fits that tune sets itself, per candidate.
_SET_BY_TUNE = frozenset({"self", "counts", "seed", "progress", "executor", "stop", "epsilon",
                          "m", "model", "noise", "weights"})
# noise: an ε-DP candidate's counts carry it; weights: tune's own, read for each lattice.


def _fit_options(fit_options: Any) -> dict:
    if fit_options is None:
        return dict(DEFAULT_FIT_OPTIONS)
    if not isinstance(fit_options, Mapping):
        raise InputError(f"fit_options must be a mapping of keyword arguments of "
                         f"PaivaModel.fit, got {type(fit_options).__name__}; e.g. "
                         "fit_options={'n_iter': 2000, 'burn_in': 500}")
    options = dict(fit_options)
    refused = sorted(set(options) & _SET_BY_TUNE, key=str)
    if refused:
        raise InputError(f"fit_options may not set {refused}: tune sets them per candidate")
    return options


def _check_fit_options(options: dict, candidates: list[Candidate]) -> None:
    """Refuse keys that the fits of the candidates do not take (a TypeError after the fits)."""
    from geosynth.model import PaivaModel

    takers = {}
    if any(c.epsilon is None for c in candidates):
        takers["PaivaModel.fit"] = (PaivaModel.fit, "exact")
    if any(c.epsilon is not None for c in candidates):
        from geosynth.dp import dp_release

        takers["dp_release"] = (dp_release, "ε-DP")
    for name, (function, kind) in takers.items():
        parameters = inspect.signature(function).parameters
        if any(p.kind is p.VAR_KEYWORD for p in parameters.values()):
            continue  # takes any keyword (a wrapper): the fit itself checks them
        check_keywords(options, function, f"{name} (the fit of the {kind} candidates)",
                       "fit_options", _SET_BY_TUNE)
        _check_run_settings(options, parameters, name, kind)
        _check_other_settings(options, name, kind)


def _check_other_settings(options: dict, name: str, kind: str) -> None:
    """Check the fits' other settings (``parallel``, ``n_jobs``, ...) before any candidate runs."""
    from geosynth.model.fit import check_fit_settings

    settings = {key: options[key] for key in ("n_jobs", "eta_draws", "max_bytes", "parallel")
                if key in options}
    with _noted_as_fit_options(name, kind):
        check_fit_settings(**settings)


@contextlib.contextmanager
def _noted_as_fit_options(name: str, kind: str) -> Iterator[None]:
    """Add to an error of the block a note that it is about ``fit_options``, for ``name``."""
    try:
        yield
    except (InputError, TypeError) as err:
        err.add_note(f"(fit_options of geosynth.tune, for {name}, the fit of the {kind} "
                     "candidates)")
        raise


#: The run settings of the fits, checked by :func:`geosynth.model.fit.check_run_settings`.
_RUN_SETTINGS = ("n_iter", "burn_in", "thin", "chains", "target_ess", "max_rhat", "max_seconds")


def _check_run_settings(options: dict, parameters: Mapping[str, inspect.Parameter], name: str,
                        kind: str) -> None:
    """Check the run settings as the fit will, with its defaults, before any candidate runs.

    A ``burn_in`` beyond ``n_iter`` or a ``thin`` of 0 was refused by each candidate's fit,
    while the other candidates' fits ran (and ε-DP candidates spent their ε).
    """
    from geosynth.dp.locations import DP_BURN_IN
    from geosynth.model.fit import check_run_settings

    run = {key: options.get(key, parameters[key].default) for key in _RUN_SETTINGS}
    if kind == "ε-DP" and run["burn_in"] is None and not (
            isinstance(run["n_iter"], str) and run["n_iter"] == "auto"):
        run["burn_in"] = DP_BURN_IN  # dp_release's own default for a fixed n_iter
    with _noted_as_fit_options(name, kind):
        check_run_settings(**run)


def _warn_of_dp_candidates(candidates: list[Candidate]) -> None:
    """PrivacyLeakWarning: ε candidates are an internal study whose ε the final release lacks.

    Each ε candidate spends its ε on the same confidential data (sequential composition: the
    study costs their sum), and all are ranked by measures computed against the exact data, so
    which lattice and ε win depends on the data beyond any candidate's ε.
    """
    epsilons = [c.epsilon for c in candidates if c.epsilon is not None]
    if epsilons:
        warnings.warn(
            f"tune: the {len(epsilons)} ε-DP candidate(s) each spend their ε on the "
            f"confidential data (together ε = {sum(epsilons):g}) and are ranked with measures "
            "of the exact data, and their attribute levels are those seen in the data, so the "
            "choice is not covered by the chosen ε: keep the tuning internal and make the "
            "published release afresh, with new noise and the declared public levels",
            PrivacyLeakWarning,
            stacklevel=3,
        )


def _warn_of_bounds_on_records(xy: np.ndarray, candidates: list[Candidate]) -> None:
    """Give the bounds warning of :func:`geosynth.prepare` for the given lattices, here.

    A candidate's own prepare warns in its task: on a Dask executor that warning stayed in the
    worker's log.
    """
    from geosynth.data import warn_if_bounds_touch_records

    for candidate in candidates:
        if candidate.grid is not None:
            located = xy[np.asarray(candidate.grid.locate(xy)) >= 0]
            warn_if_bounds_touch_records(candidate.grid, located)


def _check_candidate(candidate: Candidate, setup: _Setup) -> None:
    name = f"candidate {candidate.label!r}"
    if candidate.weights_exposure and setup.weights is None:
        raise InputError(f"{name} has weights_exposure=True but tune() got no weights= raster "
                         "(its cells' totals are the exposure); pass weights= or drop "
                         "weights_exposure")
    if candidate.beta_prior is not None and setup.continuous is None:
        raise InputError(f"{name} has beta_prior={candidate.beta_prior} but tune() got no "
                         "continuous= column")
    if candidate.beta_prior is not None:
        from geosynth.data import covariate_names

        columns = list(covariate_names(setup.continuous))
        if len(candidate.beta_prior) not in (1, len(columns)):
            raise InputError(f"{name} has {len(candidate.beta_prior)} beta priors "
                             f"{list(candidate.beta_prior)} for {len(columns)} continuous "
                             f"column(s) {columns}; give one prior per column, or one for all")
    if candidate.epsilon is not None:
        if candidate.grid is not None:
            check_public_lattice(candidate.grid, name)
        elif setup.region is None:
            raise InputError(f"{name} is ε-DP: pass region= (public lattice bounds; bounds "
                             "taken from the points would leak their extremes)")
        if candidate.beta_prior is not None:
            raise InputError(f"{name}: ε-DP releases take no continuous covariate; drop "
                             "beta_prior or epsilon")


def _fingerprint(gdf: gpd.GeoDataFrame, xy: np.ndarray, setup: _Setup) -> dict[str, str]:
    """Digests of the data and of each shared setting (to check ``previous`` against)."""
    columns = setup.attributes + ([setup.continuous] if isinstance(setup.continuous, str)
                                  else list(setup.continuous or []))

    def digest(*parts: Any) -> str:
        h = hashlib.sha256()
        for part in parts:
            h.update(part if isinstance(part, bytes) else repr(part).encode())
        return h.hexdigest()

    data = digest(xy.tobytes(), gdf.crs and gdf.crs.to_wkt(),
                  pd.util.hash_pandas_object(gdf[columns], index=True).to_numpy().tobytes())
    return {"data": data, "attributes": digest(setup.attributes),
            "continuous": digest(setup.continuous),
            "region": digest(_wkb(setup.region, "region", gdf.crs)),
            "exclude": digest(_wkb(setup.exclude, "exclude", gdf.crs)),
            "barriers": digest(_wkb(setup.barriers, "barriers", gdf.crs, lines=True)),
            "m": digest(setup.m),
            "outcome": digest(setup.outcome), "n_quadrants": digest(setup.n_quadrants),
            "fit_options": digest(sorted(setup.fit_options.items())),
            "outside": digest(setup.outside),
            # Whether there is a raster; which one, by what each candidate read of it.
            "weights": digest(setup.weights is not None),
            # The rectangles also follow from the root seed (checked apart), the data, the
            # outcome and n_quadrants: this names how they are drawn (common to all candidates).
            "coverage rectangles": digest("common random numbers", _COVERAGE_TAG)}


def _wkb(polygons: Any, name: str = "region", crs: Any = None, lines: bool = False) -> bytes:
    """Return the bytes of a region, exclusion or barriers as the lattice reads them.

    Every input :meth:`geosynth.Grid.from_points` takes (a GeoDataFrame, a GeoSeries, a
    geometry, a list of polygons) is read by the lattice's own reader, in the CRS of the
    points (``crs``): inputs that cover different areas never get the same bytes (a list's
    repr, which shapely cuts short, made two regions equal). The bytes are the WKB of the
    union and the input's own CRS; ``lines`` reads lines too, as barriers are read.
    """
    from geosynth.lattice import check_polygons

    if polygons is None:
        return b""
    union = shapely.union_all(check_polygons(polygons, name, crs, lines=lines))
    own = getattr(polygons, "crs", None)
    return (repr(own and own.to_wkt()).encode()
            + shapely.to_wkb(shapely.normalize(union), byte_order=1))


def _root_seed(seed: SeedLike, previous: Tuning | None, key: dict) -> np.random.SeedSequence:
    if previous is None:
        return root_seed_sequence(seed)
    if not isinstance(previous, Tuning):
        raise InputError(f"previous must be a Tuning from geosynth.tune, got "
                         f"{type(previous).__name__}")
    differ = [name for name in key if previous._key.get(name) != key[name]]
    if differ:
        raise InputError(f"previous was made with other {', '.join(differ)}; its candidates "
                         "cannot be reused (run tune without previous=)")
    root = previous._root
    if seed is not None:
        given = root_seed_sequence(seed)
        if (given.entropy, given.spawn_key) != (root.entropy, root.spawn_key):
            raise InputError("seed differs from the seed of previous; pass the same seed (or "
                             "none: previous's is used)")
    return root


def _candidate_seed(root: np.random.SeedSequence, candidate: Candidate):
    """Return the candidate's own stream: the root seed and a digest of its settings."""
    tag = zlib.crc32(repr(candidate.settings).encode())
    return np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, tag))


#: Spawn key of the coverage rectangles' stream: beyond the CRC-32 tags of the candidates.
_COVERAGE_TAG = 2**32


def _coverage_seed(root: np.random.SeedSequence) -> np.random.SeedSequence:
    """Return the stream of the coverage rectangles, one for every candidate of a root seed.

    Common random numbers: the candidates are measured on the same rectangles, so their
    coverage differs by their releases only, not by the rectangles drawn (whose own noise is
    as large as the differences between candidates).
    """
    return np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, _COVERAGE_TAG))


def _lattice(gdf: gpd.GeoDataFrame, candidate: Candidate, setup: _Setup) -> Grid:
    """Return the candidate's lattice: its own grid, or one over the region (or the points)."""
    from geosynth.lattice import Grid

    if candidate.grid is not None:
        return candidate.grid
    hexagonal = candidate.hex_size is not None
    grid = Grid.from_points(gdf, shape=candidate.shape,
                            cell_size=candidate.hex_size if hexagonal else candidate.cell_size,
                            region=setup.region, exclude=setup.exclude,
                            kind="hexagonal" if hexagonal else "square")
    return grid if setup.barriers is None else grid.without_links_across(setup.barriers)


def _table_digest(table: PixelTable | None) -> str | None:
    """SHA-256 of a placement table: the weights as read over the lattice (None without)."""
    if table is None:
        return None
    h = hashlib.sha256()
    for part in (table.boxes, table.within, table.start, table.total, table.acceptance):
        h.update(b"-" if part is None else np.ascontiguousarray(part).tobytes())
    return h.hexdigest()


def _check_reused_weights(reused: list[Candidate], runs: dict[tuple, _CandidateRun],
                          lattices: dict[tuple, _Lattice]) -> None:
    """Refuse to reuse a candidate of ``previous`` that read other weights than this call's.

    What matters is what the candidate read over its lattice: a file's bytes missed a change
    in a VRT's source or a sidecar's nodata, and a raster read over the web or from memory
    was read whole to digest it.
    """
    for candidate in reused:
        if runs[candidate.settings].weights != _table_digest(
                lattices[candidate.settings].weights):
            raise InputError(f"previous was made with other weights (candidate "
                             f"{candidate.label!r} read another raster over its lattice); its "
                             "candidates cannot be reused (run tune without previous=)")


class _Lattice(NamedTuple):
    """A candidate's lattice, as its fit sees it, and the placement table read for it."""

    grid: Grid
    weights: PixelTable | None = None


def _weighted_lattice(gdf: gpd.GeoDataFrame, candidate: Candidate, setup: _Setup,
                      xy: np.ndarray) -> _Lattice:
    """Return the candidate's lattice and ``setup.weights`` read over it (and its exposure).

    Warn when the raster's positive pixels follow the records ``xy``.
    """
    grid = _lattice(gdf, candidate, setup)
    _check_lattice_takes_records(gdf, grid, xy, setup.outside)
    if setup.weights is None:
        return _Lattice(grid)
    from geosynth.rasters import read_weights, with_cell_exposure
    from geosynth.synth.placement import warn_if_weights_follow_records

    table = read_weights(setup.weights, grid)
    # An ε candidate's shares are numbers of the records: not quoted.
    warn_if_weights_follow_records(table, grid, xy, show_shares=candidate.epsilon is None)
    if candidate.weights_exposure:
        grid = with_cell_exposure(table, grid)  # the table serves it: the cells are the same
    return _Lattice(grid, table)


def _check_lattice_takes_records(gdf: gpd.GeoDataFrame, grid: Grid, xy: np.ndarray,
                                 outside: str) -> None:
    """Refuse, as :func:`geosynth.prepare` will, a lattice in another CRS or missing records.

    A ``Candidate(grid=...)`` in another CRS, or not covering every record (with
    ``outside="error"``), was refused by its own task only, after the candidates before it had
    been fitted (up to ``max_seconds`` each) and ε candidates had spent their ε.
    """
    from geosynth._messages import describe_rows
    from geosynth.data import beyond_bounds, check_crs, check_outside

    check_crs(gdf, grid, "gdf")
    if outside == "error":
        out = np.asarray(grid.locate(xy), dtype=np.int64) < 0
        if out.any():
            check_outside(int(out.sum()), len(gdf), describe_rows(gdf.index, out), outside,
                          beyond=beyond_bounds(gdf[out], grid))


def _lattices(gdf: gpd.GeoDataFrame, xy: np.ndarray, todo: list[Candidate],
              setup: _Setup) -> dict[tuple, _Lattice]:
    """Build every candidate's lattice, and read the weights over it, before any fit, here.

    A lattice refused (too many cells, cells too small for the coordinates, no habitable cell)
    or a raster refused over it was found by its candidate's task only, while the other
    candidates' fits ran and ε-DP candidates spent their ε.
    """
    lattices = {}
    for candidate in todo:
        # Its warnings name it (the raster's floor or its likeness to the records differ by
        # lattice), shown as the caller's filters decide (_labelled_warnings).
        with _running(candidate.label):
            try:
                lattices[candidate.settings] = _weighted_lattice(gdf, candidate, setup, xy)
            except Exception as err:
                err.add_note(f"(in geosynth.tune, candidate {candidate.label!r})")
                raise
    return lattices


#: The candidate each thread works for, ``{thread id: label}`` (:func:`_running`).
_RUNNING: dict[int, str] = {}
#: The warnings a thread keeps for tune's caller, ``{thread id: list}`` (another process's).
_COLLECTING: dict[int, list[tuple]] = {}
#: Guards the install of :func:`_labelled_showwarnmsg` by concurrent calls of :func:`tune`.
_LABELLING = threading.Lock()
#: How many calls of :func:`tune` are labelling warnings, and the hook they wrap.
_labelling: dict[str, Any] = {"calls": 0, "shown": None}


@contextlib.contextmanager
def _running(label: str) -> Iterator[None]:
    """Mark the current thread as working for the candidate ``label`` (its warnings name it)."""
    thread = threading.get_ident()
    _RUNNING[thread] = label
    try:
        yield
    finally:
        _RUNNING.pop(thread, None)


@contextlib.contextmanager
def _collected_warnings() -> Iterator[list[tuple]]:
    """Keep the warnings the current thread gives (instead of showing them): for the caller.

    As ``(category, text, filename, lineno)``; :func:`_give_warnings` gives them again in
    the process of :func:`tune`. Works through :func:`_labelled_showwarnmsg`, which must be
    installed (:func:`_labelled_warnings`): ``catch_warnings`` is not thread-safe.
    """
    thread = threading.get_ident()
    kept: list[tuple] = []
    _COLLECTING[thread] = kept
    try:
        yield kept
    finally:
        _COLLECTING.pop(thread, None)


def _give_warnings(label: str, warned: list[tuple]) -> None:
    """Give again, labelled, the warnings a candidate's task collected in another process."""
    for category, text, filename, lineno in warned:
        warnings.warn_explicit(f"candidate {label!r}: {text}", category, filename, lineno)


def _labelled_showwarnmsg(msg: warnings.WarningMessage) -> None:
    """Show a warning as before, prefixed ``candidate 'LABEL': `` when given for a candidate.

    Kept instead, when the thread collects its warnings (:func:`_collected_warnings`).
    """
    kept = _COLLECTING.get(threading.get_ident())
    if kept is not None:
        kept.append((msg.category, str(msg.message), msg.filename, msg.lineno))
        return
    label = _RUNNING.get(threading.get_ident())
    if label is not None:
        text = f"candidate {label!r}: {msg.message}"
        try:  # the same class, for whoever records warnings; its text if it needs more
            message = msg.category(text)
        except Exception:
            message = text
        msg = warnings.WarningMessage(message, msg.category, msg.filename, msg.lineno,
                                      msg.file, msg.line, msg.source)
    _labelling["shown"](msg)


@contextlib.contextmanager
def _labelled_warnings() -> Iterator[None]:
    """Prefix each warning given for a candidate with ``candidate 'LABEL': ``.

    A fit's warning (stopped by ``max_seconds`` before converging, records dropped) named no
    candidate, and with several the analyst could not tell whose it was. Recording warnings
    within the tasks is not thread-safe (``catch_warnings`` there lost other candidates'
    warnings), and neither is replacing ``warnings.showwarning``: every ``catch_warnings``
    (pandas enters one in most dtype checks) saves and restores it, so one in another thread
    undid the labelling of a concurrent :func:`tune`. The hook wrapped here is the warnings
    module's ``_showwarnmsg``, which the interpreter calls to show every warning and which no
    ``catch_warnings`` saves (it then calls ``showwarning`` as before: the command line's
    printer, a test's recorder). The first call installs it and the last to finish puts the
    previous one back; a warning is labelled when given in a thread marked by
    :func:`_running` (a task, or the building of a lattice). The filters are the caller's,
    applied to the warning's own text; under the default one, a warning worded alike for
    several candidates from the same line is shown for the first only. Tasks run in other
    processes (a Dask cluster) keep their warnings (:func:`_collected_warnings`, as the
    worker's filters let them through), and :func:`tune` gives them, labelled, as each
    candidate finishes.
    """
    with _LABELLING:
        if _labelling["calls"] == 0:
            _labelling["shown"] = warnings._showwarnmsg
            warnings._showwarnmsg = _labelled_showwarnmsg
        _labelling["calls"] += 1
    try:
        yield
    finally:
        with _LABELLING:
            _labelling["calls"] -= 1
            # "shown" is kept: a thread that read the hook just before it was put back still
            # calls it, and gets the warning shown as before (None raised TypeError there).
            if _labelling["calls"] == 0 and warnings._showwarnmsg is _labelled_showwarnmsg:
                warnings._showwarnmsg = _labelling["shown"]


def _run_all(gdf, todo, setup, root, executor, progress,
             lattices: dict[tuple, _Lattice]) -> dict[tuple, _CandidateRun]:
    if not todo:
        return {}
    from concurrent.futures import as_completed

    from tqdm.auto import tqdm

    own = executor is None
    if own:
        executor = ThreadPoolExecutor(max_workers=max(1, (os.cpu_count() or 2) // 2))
    elif not callable(getattr(executor, "submit", None)):
        raise InputError(f"executor must have a submit method (a concurrent.futures.Executor), "
                         f"got {type(executor).__name__}")
    # Ctrl-C reaches only this thread: the event stops the fits of tune's own threads (tasks
    # of a caller's executor may run elsewhere, where an Event cannot go).
    stop = threading.Event() if own else None
    # The tasks get each lattice with its table read: an open rasterio dataset as weights
    # cannot be pickled, and a process pool's or a Dask cluster's tasks raised TypeError.
    sent = dataclasses.replace(setup, weights=None)
    try:
        futures = {executor.submit(run_candidate, gdf, c, sent, _candidate_seed(root, c), stop,
                                   lattice=lattices[c.settings]): c
                   for c in todo}
        done = {}
        with tqdm(total=len(todo), desc="candidates", disable=not progress) as bar:
            for future in as_completed(futures):
                candidate = futures[future]
                try:
                    done[candidate.settings] = run = future.result()
                    _give_warnings(candidate.label, run.warned)
                except Exception as err:
                    for other in futures:
                        other.cancel()
                    err.add_note(f"(in geosynth.tune, candidate {candidate.label!r})")
                    raise
                bar.update(1)
        return done
    except BaseException:  # Ctrl-C, or a candidate failed: the other fits are of no use now
        if stop is not None:
            stop.set()  # the running fits stop at their next chunk, so the shutdown is quick
        raise
    finally:
        if own:  # waits for the tasks: their warnings are still labelled (tune's caller)
            executor.shutdown(wait=True, cancel_futures=True)


def run_candidate(gdf: gpd.GeoDataFrame, candidate: Candidate, setup: _Setup,
                  seed: np.random.SeedSequence, stop: threading.Event | None = None, *,
                  lattice: _Lattice) -> _CandidateRun:
    """Lattice, fit, releases and measures of one candidate (one task of :func:`tune`).

    ``stop`` (tune's own threads): set on Ctrl-C or when another candidate failed, it stops the
    fit at its next chunk, and the candidate then raises ``KeyboardInterrupt`` instead of
    measuring a cut-short fit. ``lattice``: the candidate's lattice and placement table, built
    beforehand by :func:`tune` (:func:`_lattices`).
    """
    if setup.caller is None or setup.caller == os.getpid():
        with _running(candidate.label):  # its warnings name it (_labelled_warnings)
            return _run_candidate(gdf, candidate, setup, seed, stop, lattice)
    # Another process (a Dask cluster's worker): its warnings were shown there, in the
    # worker's log, unlabelled, and the analyst saw none of the candidates' privacy warnings.
    with _labelled_warnings(), _collected_warnings() as warned:
        run = _run_candidate(gdf, candidate, setup, seed, stop, lattice)
    run.warned = warned
    return run


def _run_candidate(gdf, candidate, setup, seed, stop, lattice) -> _CandidateRun:
    from geosynth.data import prepare
    from geosynth.evaluation import evaluate
    from geosynth.model import PaivaModel

    start = time.perf_counter()
    # The third stream drew each candidate's own rectangles; they are now common to all
    # (setup.coverage_seed), and the first two keep their values.
    fit_seed, release_seed, _ = seed.spawn(3)
    grid, weights = lattice
    with_beta = candidate.beta_prior is not None
    counts = prepare(gdf, grid, setup.attributes,
                     continuous=setup.continuous if with_beta else None, outside=setup.outside)
    if len(counts.record_index) < len(gdf):  # outside="drop": the records kept
        gdf = gdf.loc[counts.record_index]
    if candidate.epsilon is None:
        from geosynth.synth import synthesize

        model = PaivaModel(beta_prior=_model_beta_prior(candidate.beta_prior),
                           effects=candidate.effects)
        fit = model.fit(counts, seed=fit_seed, progress=False, stop=stop, **setup.fit_options)
        if stop is not None and stop.is_set():
            raise KeyboardInterrupt
        releases = synthesize(fit, gdf, m=setup.m, seed=release_seed, weights=weights)
    else:  # DP noise from fresh OS entropy: no seed; no covariates (dp_counts refuses them)
        from geosynth.dp import dp_model, dp_release

        # Tuning reads the records anyway (it scores releases against them): the levels they
        # hold stand in for the public domain a release would declare.
        counts = prepare(gdf, grid, setup.attributes, levels=counts.levels)
        release = dp_release(counts, candidate.epsilon, setup.m,
                             model=dp_model(effects=candidate.effects), progress=False,
                             stop=stop, weights=weights, **setup.fit_options)
        fit, releases = release.fit, release.releases
    linked = candidate.epsilon is None
    # No warnings.catch_warnings here: in a worker thread it switched warnings off for the
    # whole process, and another candidate's PrivacyLeakWarning was lost.
    evaluation = evaluate(gdf, releases, grid, setup.attributes, outcome=setup.outcome,
                          n_quadrants=setup.n_quadrants, seed=setup.coverage_seed,
                          linked=linked, rules="partial" if linked else "full")
    replicates = _release_errors(evaluation, grid, setup, linked)
    row = {**_settings_row(candidate, grid, len(gdf)), **_measures(evaluation.tables, linked),
           **_diagnostics(fit), "seconds": time.perf_counter() - start}
    return _CandidateRun(row, grid, [point_coordinates(r, "release") for r in releases],
                         replicates, _table_digest(weights))


def _model_beta_prior(priors: tuple[str, ...] | None) -> str | list[str] | None:
    """Return the ``beta_prior`` of :class:`geosynth.PaivaModel` (one name: every covariate)."""
    if priors is None:
        return None
    return priors[0] if len(priors) == 1 else list(priors)


def _settings_row(candidate: Candidate, grid: Grid, n_records: int) -> dict:
    return {
        "cell_size": candidate.cell_size if candidate.cell_size is not None else np.nan,
        "hex_size": candidate.hex_size if candidate.hex_size is not None else np.nan,
        "shape": f"{grid.shape[0]}x{grid.shape[1]}" if grid.kind != "areal" else "-",
        "n_cells": grid.n_cells,
        "n_records": n_records,
        "effects": candidate.effects,
        "beta_prior": "/".join(candidate.beta_prior) if candidate.beta_prior else "-",
        "epsilon": candidate.epsilon if candidate.epsilon is not None else np.inf,
    }


def _measures(tables: dict[str, pd.DataFrame], linked: bool) -> dict:
    """Return the row's measures: the distances' mean rows as :func:`shown_tables` shows them.

    The mean over every combination, one of one record among them, gave that person's matched
    distance back next to an evaluation report of the same releases (k times the mean minus
    the shown rows).
    """
    from geosynth.evaluation import shown_tables

    shown = shown_tables(tables)
    distance = shown["distance_risk"].iloc[-1]
    row = {"min_distance": float(distance["min_distance"]),
           "mean_distance": float(distance["mean_distance"]),
           "expected_match_risk": np.nan, "true_match_rate": np.nan,
           "k_anonymity_below_5": np.nan, "coverage": np.nan,
           "ripley_l_gap": float(shown["pattern"]["sup_l_difference"].iloc[-1])}
    if linked:
        risk = tables["identification_risk"]["value"]
        row["expected_match_risk"] = float(risk["expected_match_risk"])
        row["true_match_rate"] = float(risk["true_match_rate"])
        row["k_anonymity_below_5"] = float(tables["linked_records"]["share_below_5"].mean())
    if "coverage" in tables:
        row["coverage"] = _coverage_score(tables["coverage"].iloc[0])
    return row


def _release_errors(evaluation, grid: Grid, setup: _Setup, linked: bool) -> list[dict]:
    """Measure the candidate's releases with each release left out in turn.

    The delete-one jackknife's replicates (:func:`jackknife_errors`): the per-release measures
    are kept by the evaluation, so only the identification risk and the coverage, which need
    all releases at once, are computed again, on the same rectangles (the coverage seed). The
    coverage of one release has no combining rules: with ``m = 2`` its replicates are NaN.
    """
    from geosynth.evaluation import evaluation_tables
    from geosynth.metrics import identification_risk, quadrant_coverage

    original, releases = evaluation.original, evaluation.releases
    replicates = []
    for left_out in range(len(releases) if len(releases) > 1 else 0):
        kept = [release for k, release in enumerate(releases) if k != left_out]
        measures = [m for k, m in enumerate(evaluation.measures) if k != left_out]
        identification = (identification_risk(original, kept, setup.attributes, grid)
                          if linked else None)
        coverage = None
        if setup.outcome is not None and len(kept) > 1:
            coverage = quadrant_coverage(original, kept, setup.outcome,
                                         n_quadrants=setup.n_quadrants, seed=setup.coverage_seed,
                                         rules="partial" if linked else "full")
        replicates.append(_measures(evaluation_tables(measures, identification, coverage),
                                    linked))
    return replicates


def jackknife_errors(replicates: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Return the delete-one jackknife standard errors (Efron & Stein 1981) of m replicates.

    ``se = sqrt((m - 1) / m * sum_k (t_k - t_mean)^2)``, where ``t_k`` is the measure with
    release k left out. For a mean over releases it is the standard error of that mean,
    ``sd / sqrt(m)``, exactly; for a measure of all releases at once (the identification risk,
    the coverage) it estimates the spread of the measure over repeated sets of m releases.

    Parameters
    ----------
    replicates : sequence of mapping of str to float
        One mapping per left-out release, the same keys in each.

    Returns
    -------
    dict of str to float
        The standard error of each key; NaN when a replicate is NaN or there are fewer than 2.
    """
    if len(replicates) < 2:
        return {name: math.nan for name in (replicates[0] if replicates else {})}
    errors = {}
    for name in replicates[0]:
        values = np.array([float(r[name]) for r in replicates])
        m = values.size
        spread = float(np.sum((values - values.mean()) ** 2))
        errors[name] = math.sqrt((m - 1) / m * spread) if np.isfinite(spread) else math.nan
    return errors


def _coverage_score(coverage: pd.Series) -> float:
    """Mean overlap over every rectangle, those where a release has no point scoring 0.

    :func:`geosynth.metrics.quadrant_coverage` leaves such a rectangle out of its
    ``mean_overlap`` (no combined interval), as the thesis defines the measure. Ranked by it, a
    candidate that emptied dense areas gained: dropping a cluster of 300 records scored 0.62,
    keeping it with the wrong outcome 0.59. The geometric overlap's worst, 0, is what an
    interval that exists nowhere gets here.
    """
    n_quadrants, n_undefined = int(coverage["n_quadrants"]), int(coverage["n_undefined"])
    if n_undefined == n_quadrants:
        return 0.0
    return float(coverage["mean_overlap"]) * (n_quadrants - n_undefined) / n_quadrants


def _diagnostics(fit) -> dict:
    """Largest R-hat and smallest bulk ESS: the auto-stopping check's, else over the scalars."""
    if fit.stopping is not None:
        return {"max_r_hat": float(fit.stopping.max_r_hat),
                "min_ess": float(fit.stopping.min_ess)}
    from geosynth.model.diagnostics import convergence_diagnostics

    scalars = np.stack([fit.scalar(name) for name in fit.scalar_names], axis=-1)
    result = convergence_diagnostics(scalars)
    # One chain has no R-hat (all NaN): nanmax printed NumPy's "All-NaN slice" warning.
    r_hat = result.r_hat[~np.isnan(result.r_hat)]
    ess = result.ess_bulk[~np.isnan(result.ess_bulk)]
    return {"max_r_hat": float(r_hat.max()) if r_hat.size else math.nan,
            "min_ess": float(ess.min()) if ess.size else math.nan}


def _tuning(original_xy, wanted, runs, risk_limit, key, root) -> Tuning:
    """Assemble the table: the candidates' rows plus the intensity fidelity on one lattice."""
    # The finest lattice: on the coarsest, every candidate nested in it kept its counts as well
    # as the coarsest itself, so the detail of the finer ones went unmeasured and a tie went
    # to the coarsest. Ties by the settings' text, not by the order the candidates came in
    # (4x6 and 6x4 swapped their intensity columns when listed the other way round).
    reference = min(wanted, key=lambda c: (-runs[c.settings].grid.n_cells, repr(c.settings)))
    grid = runs[reference.settings].grid
    rows, errors = {}, {}
    for candidate in wanted:
        run = runs[candidate.settings]
        rows[candidate.label] = {**run.row, **_intensity(original_xy, run.synthetic_xy, grid)}
        replicates = [
            {**replicate, **_intensity(original_xy, run.synthetic_xy[:k] + run.synthetic_xy[k + 1:],
                                       grid)}
            for k, replicate in enumerate(run.replicates)]
        errors[candidate.label] = {name: math.nan for name in ERROR_MEASURES}
        errors[candidate.label].update(jackknife_errors(replicates))
    columns = ["cell_size", "hex_size", "shape", "n_cells", "n_records", "effects", "beta_prior",
               "epsilon", *MEASURES]
    table = pd.DataFrame.from_dict(rows, orient="index")[columns]
    table.index.name = "candidate"
    error_table = pd.DataFrame.from_dict(errors, orient="index")[ERROR_MEASURES]
    error_table.index.name = "candidate"
    return Tuning(table=table, candidates={c.label: c for c in wanted}, risk_limit=risk_limit,
                  reference=reference.label, errors=error_table, _runs=dict(runs), _key=key,
                  _root=root)


def _intensity(original_xy: np.ndarray, synthetic_xy: list[np.ndarray], grid: Grid) -> dict:
    """Return the intensity columns of a row (:func:`~geosynth.metrics.intensity_fidelity`)."""
    from geosynth.metrics import intensity_fidelity

    fidelity = intensity_fidelity(original_xy, synthetic_xy, grid)
    return {"intensity_correlation": fidelity.correlation, "intensity_l1": fidelity.l1}
