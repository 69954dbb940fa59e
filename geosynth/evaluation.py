"""Risk and utility of a set of releases, side by side (Nunes 2018, §3.3–3.4).

:func:`evaluate` gathers the measures of :mod:`geosynth.metrics` for one set of m releases of a
confidential GeoDataFrame into tables an agency can put in a report, and draws the thesis'
figures (original vs synthetic points per combination, Figures 5–6; quadrant intervals,
Figures 7–8).

An evaluation runs in three public steps, so that the per-release work can run as tasks of a
:class:`concurrent.futures.Executor` (``evaluate(..., executor=...)``: a thread pool, or a Dask
cluster's ``client.get_executor()``; :func:`geosynth.distributed.evaluate_dask` adds the Dask
specifics) with the same code and the same result:

1. :func:`plan_evaluation` checks every input and fixes what the releases share (the window
   of the Ripley's K functions);
2. :func:`measure_release` measures one release against the original (greedy matched
   distances and Ripley's L gap per combination, displacement, spatial k-anonymity), in this
   process or in one task per release;
3. :func:`combine_measures` averages the per-release results over releases and adds the mean
   rows; the identification risk and the quadrant coverage, which need all releases at once,
   are computed from all of them by :func:`evaluate` meanwhile.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

import geopandas as gpd
import numpy as np
import pandas as pd

from geosynth._messages import CONTROL_CHARACTERS
from geosynth._points import NEAR_ALPHA, at_locations, metric_coordinates, near_copies
from geosynth._random import SeedLike, check_seed
from geosynth._validation import check_bool, check_int
from geosynth.errors import CRSError, DataWarning, InputError, PrivacyLeakWarning
from geosynth.lattice import Grid
from geosynth.metrics import (
    continuous_utility,
    displacement,
    distance_risk,
    identification_risk,
    k_anonymity_summary,
    original_l_functions,
    quadrant_coverage,
    ripley_distance,
    spatial_k_anonymity,
)
from geosynth.metrics.matching import (
    as_columns,
    as_releases,
    check_columns,
    check_frames,
    check_level_types,
    frame_xy,
)
from geosynth.metrics.risk import (
    MEAN_LABEL,
    IdentificationRisk,
    check_mean_label,
    nanmean_rows,
    nanmin_rows,
    with_mean_row,
)
from geosynth.metrics.utility import (
    MIN_POINTS,
    QuadrantCoverage,
    as_bounds,
    check_n_quadrants,
    check_release_rules,
    combining_rules,
)
from geosynth.synth.release import is_public

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "Evaluation",
    "ReleaseMeasures",
    "ReleasePlan",
    "combine_measures",
    "evaluation_tables",
    "evaluate",
    "linked_records",
    "measure_release",
    "plan_evaluation",
    "markdown_code",
    "check_coverage_sizes",
    "shown_tables",
    "combining_rules",
    "check_release_rules",
    "suppression_note",
    "MIN_SHOWN_RECORDS",
    "SUPPRESSED_COLUMNS",
    "summary_tables",
]


def markdown_code(text: str, block: bool = False) -> str:
    """Return ``text`` as Markdown code: shown as it is, never read as Markdown or HTML.

    Attribute names and levels come from the data: a level holding three backticks closed the
    report's fence, and what followed (``<img onerror=...>``) was Markdown, raw HTML to a
    viewer that renders it. The fence is one backtick longer than the longest run of
    backticks in ``text`` (CommonMark), and control characters become ``?``.

    Parameters
    ----------
    text : str
        What to show.
    block : bool, default False
        A fenced block (``` lines) instead of an inline code span.

    Returns
    -------
    str
    """
    text = CONTROL_CHARACTERS.sub("?", str(text)) if not block else "\n".join(
        CONTROL_CHARACTERS.sub("?", line) for line in str(text).splitlines())
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    if block:
        fence = "`" * max(3, longest + 1)
        return f"{fence}\n{text}\n{fence}"
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


@dataclass
class Evaluation:
    """Tables and figures of one evaluation.

    Attributes
    ----------
    tables : dict of str to pandas.DataFrame
        ``distance_risk`` (Tables 4–6 layout) and ``pattern`` (Ripley's L distance per
        combination; each K function from at most
        :data:`~geosynth.metrics.utility.MAX_K_POINTS` points, see
        :func:`~geosynth.metrics.utility.k_subsample`); when the releases keep the original
        index (so records can be linked),
        ``identification_risk`` (Reiter & Mitra 2009) and ``linked_records`` (displacement,
        spatial k-anonymity); with an ``outcome``, ``coverage`` (mean interval overlap over
        random rectangles, §3.3); with continuous columns in the releases (numeric, not
        attributes) and two or more releases, ``continuous``
        (:func:`geosynth.metrics.continuous_utility`: their means, SDs and correlations over
        all records, original against the releases, with interval overlaps).
    original : geopandas.GeoDataFrame
        The confidential points evaluated (for :meth:`plots`; not in the repr).
    releases : list of geopandas.GeoDataFrame
        The releases evaluated, in order.
    attributes : list of str
        The attribute columns that define the combinations.
    quadrants : pandas.DataFrame or None
        The random rectangles of the coverage table and their overlaps, with an ``outcome``.
    measures : list of ReleaseMeasures
        :func:`measure_release` of each release, in release order: the tables of a subset of
        the releases (:func:`evaluation_tables`) need no release measured again.
    """

    tables: dict[str, pd.DataFrame]
    original: gpd.GeoDataFrame = field(repr=False)
    releases: list[gpd.GeoDataFrame] = field(repr=False)
    attributes: list[str] = field(repr=False)
    quadrants: pd.DataFrame | None = field(default=None, repr=False)
    measures: list[ReleaseMeasures] = field(default_factory=list, repr=False)

    def __repr__(self) -> str:
        """Name the tables, not their values: a printed result gets pasted into logs and tickets.

        The dataclass repr printed every table in full: the distances of a combination of one
        record (one person's distance to the public synthetic points), which the text outputs
        leave out (:func:`shown_tables`), and the exact counts of the original per combination,
        which a differentially private release protects. Use :meth:`to_markdown` for the tables
        as they may be shown.
        """
        return f"Evaluation(tables={list(self.tables)})"

    def to_markdown(self) -> str:
        """All tables as Markdown sections (fixed-width text blocks), as they may be shown.

        The tables go through :func:`shown_tables`: the matched distances and the L distance
        of a combination of fewer than :data:`MIN_SHOWN_RECORDS` original records or synthetic
        points (one person's distance to the synthetic points, which are public) are left
        out, with a note saying so, and the mean row averages the shown combinations only.
        :attr:`tables` keep every value. The text still holds the exact original counts
        (``n_original``): an internal document.
        """
        parts = []
        for name, table in shown_tables(self.tables).items():
            # Three decimals, as the command line prints them (pandas' default printed six).
            block = markdown_code(table.to_string(float_format="{:,.3f}".format), block=True)
            parts.append(f"### {name.replace('_', ' ')}\n\n{block}\n")
            note = suppression_note(name, self.tables[name])
            if note:
                parts.append(f"{note}\n")
        return "\n".join(parts)

    def plots(self, max_panels: int = 12) -> list[Figure]:
        """Figures: points per combination (Figs. 5–6) and, with an outcome, intervals (7–8).

        Parameters
        ----------
        max_panels : int, default 12
            The most combinations shown (the first ones in sorted order), one panel each.

        Returns
        -------
        list of matplotlib.figure.Figure

        Raises
        ------
        TypeError
            ``max_panels`` is not an int (a bool or a float included).
        geosynth.errors.InputError
            ``max_panels`` < 1.
        """
        max_panels = check_int(max_panels, "max_panels", 1, hint="e.g. max_panels=12")
        figures = [self._points_figure(max_panels)]
        if self.quadrants is not None:
            figures.append(self._interval_figure())
        return figures

    def _points_figure(self, max_panels: int) -> Figure:
        import matplotlib.pyplot as plt

        # Rows by position: labels may repeat in an unlinked frame, and .loc of a repeated label
        # took the rows of every combination that has it.
        groups = list(self.original.groupby(self.attributes, sort=True).indices.items())
        groups = groups[:max_panels]
        ncols = min(4, len(groups))
        nrows = int(np.ceil(len(groups) / ncols))
        fig, axes = plt.subplots(nrows, ncols, figsize=(3.2 * ncols, 3.0 * nrows),
                                 squeeze=False)
        release = self.releases[0]
        synthetic_groups = release.groupby(self.attributes, sort=True).indices
        for ax, (key, rows) in zip(axes.flat, groups, strict=False):
            orig = self.original.geometry.iloc[rows]
            ax.scatter(orig.x, orig.y, s=6, c="black", label="original")
            if key in synthetic_groups:
                synth = release.geometry.iloc[synthetic_groups[key]]
                ax.scatter(synth.x, synth.y, s=6, c="tab:orange", alpha=0.7, label="release 1")
            ax.set_title(", ".join(f"{a}={v}" for a, v in zip(
                self.attributes, np.atleast_1d(key), strict=True)), fontsize=8)
            ax.set_xticks([])
            ax.set_yticks([])
        for ax in list(axes.flat)[len(groups):]:
            ax.set_axis_off()
        axes.flat[0].legend(fontsize=7)
        # Beside release 1's points (public), the black dots are placed on a map: say so.
        fig.suptitle("Original records (black): confidential, internal review only",
                     fontsize=9)
        fig.tight_layout()
        return fig

    def _interval_figure(self, n_shown: int = 40) -> Figure:
        import matplotlib.pyplot as plt

        shown = self.quadrants.dropna(subset=["overlap"]).head(n_shown)
        fig, ax = plt.subplots(figsize=(8, 4))
        k = np.arange(len(shown))
        ax.vlines(k - 0.15, shown["lower_original"], shown["upper_original"], color="black",
                  label="original (Wald)")
        ax.vlines(k + 0.15, shown["lower_synthetic"], shown["upper_synthetic"],
                  color="tab:orange", label="releases (combining rules)")
        ax.set_xlabel("rectangle")
        ax.set_ylabel("proportion of outcome = 1")
        ax.legend(fontsize=8)
        fig.tight_layout()
        return fig


#: Fewest original records (and synthetic points) of a combination whose distances the text
#: outputs show. One record is one person: its matched distances are that person's distance to
#: the public synthetic points. Two records are still too few: with one release (``m = 1``)
#: the minimum and the mean matched distance give both people's distances, and the Ripley's L
#: function of two points is one step, at their separation, which the L distance to the public
#: points bounds.
MIN_SHOWN_RECORDS = 3
#: The columns of each table that :func:`shown_tables` leaves out for too few records.
SUPPRESSED_COLUMNS = {
    "distance_risk": ("min_distance", "mean_distance", "worst_min_distance",
                      "worst_mean_distance"),
    "pattern": ("sup_l_difference",),
}


def shown_tables(tables: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Return the tables as text outputs show them: no distance of one or two records.

    A combination of one original record is one person: its ``min_distance`` and
    ``mean_distance`` are that person's distance to the synthetic points of the combination,
    which are public, so a report that is shared would place the person on a circle around
    them; with two records and one release the two distances give both people's. In the
    ``distance_risk`` table the two distances, and in the ``pattern`` table the L distance, of
    every combination of fewer than :data:`MIN_SHOWN_RECORDS` original records (or synthetic
    points, on average over the releases) become NaN
    (:func:`suppression_note` says so), and the mean row averages the shown combinations only
    (the mean over all of them, next to the other rows, gave the left-out value back). Other
    tables are unchanged.

    Parameters
    ----------
    tables : dict of str to pandas.DataFrame
        :attr:`Evaluation.tables` (or metric tables under those names, with or without their
        mean row).

    Returns
    -------
    dict of str to pandas.DataFrame
        The same tables, in the same order; copies where a value was left out.
    """
    return {name: _shown(name, table) for name, table in tables.items()}


def summary_tables(tables: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Return the tables as the text of a differentially private release shows them.

    The rows of a per-combination table are the combinations of the *original* records, and
    their values tell combinations of one, two and more records apart: for an ε-DP release,
    whose counts are what ε protects, they list which rare combinations exist in the
    confidential data. Each table with a mean row (``distance_risk``, ``pattern``) becomes
    that row alone, as :func:`shown_tables` computes it (combinations of fewer than
    :data:`MIN_SHOWN_RECORDS` records left out of it), without the ``n_original`` and
    ``n_synthetic`` columns (their mean is over the original combinations); the ``coverage``
    table, of rectangles holding at least ``MIN_POINTS`` original records, is unchanged. The
    distances remain measures of the confidential points, which ε does not cover.

    Parameters
    ----------
    tables : dict of str to pandas.DataFrame
        :attr:`Evaluation.tables`.

    Returns
    -------
    dict of str to pandas.DataFrame
        The same tables, in the same order.
    """
    summaries = {}
    for name, table in shown_tables(tables).items():
        if _has_mean_row(table):
            table = table.iloc[-1:].drop(columns=["n_original", "n_synthetic"],
                                         errors="ignore")
            table.index = pd.Index(["mean over combinations"])
        summaries[name] = table
    return summaries


def _has_mean_row(table: pd.DataFrame) -> bool:
    """Whether the last row of ``table`` is the mean row of :func:`with_mean_row`."""
    return len(table) > 0 and table.index.get_level_values(0)[-1] == MEAN_LABEL


def _lone_rows(name: str, table: pd.DataFrame) -> np.ndarray:
    """Positions of the combination rows (not the mean row) of too few records on a side.

    Too few original records, or too few synthetic points: with one synthetic point of a
    combination, public, its minimum matched distance is the distance to the nearest original
    record of that combination, which draws a circle through it (a fully synthetic release
    may hold fewer points of a combination than the original). ``n_synthetic`` is the mean
    over the releases: with several, a combination of one point in one release and many in
    the others is shown, its distances averaged over the releases (the one point's among
    them, not alone).
    A table without a mean row (a metric called with ``mean_row=False``) is all combinations:
    its last row was taken for the mean, neither checked nor kept (the mean replaced it).
    """
    if name not in SUPPRESSED_COLUMNS or "n_original" not in table.columns:
        return np.zeros(0, dtype=np.int64)
    counts = table["n_original"].to_numpy(dtype=np.float64)
    if "n_synthetic" in table.columns:
        counts = np.fmin(counts, table["n_synthetic"].to_numpy(dtype=np.float64))
    if _has_mean_row(table):
        counts = counts[:-1]
    return np.flatnonzero(counts < MIN_SHOWN_RECORDS)


def _shown(name: str, table: pd.DataFrame) -> pd.DataFrame:
    lone = _lone_rows(name, table)
    coarse = _coarsened_columns(name, table)
    if lone.size == 0 and not coarse:
        return table
    shown = table.copy()
    for label in (c for c in SUPPRESSED_COLUMNS[name] if c in shown.columns):
        column = shown.columns.get_loc(label)
        values = shown.iloc[:, column].to_numpy(dtype=np.float64).copy()
        values[lone] = np.nan
        if label in coarse:
            values = _significant_digits(values, COARSE_DIGITS)
        if _has_mean_row(table):
            values[-1] = nanmean_rows(values[None, :-1])[0]
        shown.iloc[:, column] = values
    return shown


#: Significant digits of a combination's ``min_distance`` in the text outputs.
COARSE_DIGITS = 2


def _coarsened_columns(name: str, table: pd.DataFrame) -> tuple[str, ...]:
    """Return the columns :func:`shown_tables` rounds: a combination's least matched distance.

    Matched greedily, the first pair is the closest: with one release the ``min_distance`` of
    a combination of 125 records was the distance of the record nearest to any of its public
    points, to the millimetre (with several, the mean of such). To :data:`COARSE_DIGITS`
    significant digits it still says how close the nearest record came (the risk it
    measures), not that record's distance to the millimetre.
    """
    if name != "distance_risk":
        return ()
    # A release's mean over a combination of one public point is that point's distance to
    # the nearest record: the worst (smallest) such mean printed it to the millimetre.
    return tuple(c for c in ("min_distance", "worst_min_distance", "worst_mean_distance")
                 if c in table)


def _significant_digits(values: np.ndarray, digits: int) -> np.ndarray:
    """Round each of ``values`` to ``digits`` significant digits (0, NaN and inf kept).

    Parameters
    ----------
    values : numpy.ndarray of float64
    digits : int

    Returns
    -------
    numpy.ndarray of float64
    """
    values = np.asarray(values, dtype=np.float64)
    finite = np.isfinite(values) & (values != 0)
    out = values.copy()
    scale = 10.0 ** (digits - 1 - np.floor(np.log10(np.abs(values[finite]))))
    out[finite] = np.round(values[finite] * scale) / scale
    return out


def suppression_note(name: str, table: pd.DataFrame) -> str:
    """Return the note under a table from which :func:`shown_tables` left values out, or "".

    Parameters
    ----------
    name : str
        The table's key in :attr:`Evaluation.tables`.
    table : pandas.DataFrame
        The table as measured (before :func:`shown_tables`).

    Returns
    -------
    str
        A sentence naming how many combinations' values are not shown, and one saying that
        ``min_distance`` is rounded; "" if neither.
    """
    lone = _lone_rows(name, table)
    notes = []
    if lone.size:
        columns = _listed(SUPPRESSED_COLUMNS[name])
        notes.append(f"Not shown (NaN): {columns} of {lone.size} combination(s) of fewer than "
                     f"{MIN_SHOWN_RECORDS} original records or synthetic points, too few to "
                     "show without telling each person's distance; the mean row averages the "
                     "other combinations.")
    coarse = _coarsened_columns(name, table)
    if coarse:
        notes.append(f"{_listed(coarse)} {'is' if len(coarse) == 1 else 'are'} shown to "
                     f"{COARSE_DIGITS} significant digits: each can be the distance of one "
                     "record, the nearest to a synthetic point.")
    return " ".join(notes)


def _listed(names: Sequence[str]) -> str:
    """Join names as text: ``a``, ``a and b``, ``a, b and c``."""
    return " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)


def evaluate(
    original: gpd.GeoDataFrame,
    releases: Sequence[gpd.GeoDataFrame],
    grid: Grid,
    attributes: Sequence[str],
    outcome: str | None = None,
    n_quadrants: int = 1000,
    seed: SeedLike = None,
    linked: bool = True,
    *,
    executor: Executor | None = None,
    rules: str | None = None,
    lattice_bounds: Sequence[float] | None = None,
) -> Evaluation:
    """Measure the disclosure risk and the utility of m releases of ``original``.

    The work splits in two. The measures of one release against the original (its greedy
    matched distances and Ripley's L gap per combination, its displacement and spatial
    k-anonymity) are computed release by release; the combining steps then run once on these
    per-release results (averages over releases, the "mean" rows), together with the measures
    that need all releases at once (the Reiter–Mitra identification risk, whose match
    probabilities sum over releases record by record, and the quadrant coverage, whose intervals
    come from the combining rules). With an ``executor`` each release is measured by its own
    task while this process computes the rest; the tables are the same as in memory, to the
    last bit.

    Parameters
    ----------
    original : GeoDataFrame
        The confidential points (projected CRS) with the attribute columns.
    releases : sequence of GeoDataFrame
        The m releases, as returned by :func:`geosynth.synthesize` or the baselines (they keep
        the original index, which the linked-record measures need).
    grid : Grid
        Lattice of the intruder's knowledge for the identification risk (unused, may be None,
        with ``linked=False``).
    attributes : sequence of str
        Attribute columns that define the combinations.
    outcome : str, optional
        Binary column whose proportion over random rectangles gives the coverage table.
    n_quadrants : int, default 1000
        Random rectangles of the coverage table (thesis: 1000).
    seed : None, int or numpy.random.Generator
        Seed of the random rectangles.
    linked : bool, default True
        The releases keep the original index, record by record (as :func:`geosynth.synthesize`
        and the baselines return them), so record-level measures apply. Pass False for
        :func:`geosynth.to_public` releases, whose rows are shuffled.
    executor : concurrent.futures.Executor, optional
        Measure each release (:func:`measure_release`) as a task of this executor, e.g. a
        :class:`~concurrent.futures.ThreadPoolExecutor` or a Dask client's
        ``client.get_executor()``, while this process computes the identification risk and
        the coverage. The original is an argument of every task (on a Dask cluster,
        :func:`geosynth.distributed.evaluate_dask` sends it to each worker once). None
        (default): one release after another in this process.
    rules : {"partial", "full"}, optional
        Combining rules of the coverage table (:func:`geosynth.metrics.quadrant_coverage`)
        and of the continuous columns: ``"full"`` for releases in which every value is
        synthetic, such as ε-DP releases. None (default): taken from the releases' records
        (:func:`check_release_rules`): ``"full"`` for releases made with ε, else
        ``"partial"``. ``"partial"`` is refused for releases made with ε.
    lattice_bounds : (xmin, ymin, xmax, ymax), optional
        The box of the releases' lattice when ``grid`` is None (a release file's grid layer,
        ``release_file.grid.total_bounds``): with the original points', the window of the
        pattern table (:attr:`ReleasePlan.window`).

    Returns
    -------
    Evaluation

    Raises
    ------
    geosynth.errors.InputError
        ``releases`` is empty or holds something else than GeoDataFrames; ``attributes`` is
        not a column name or a list of them; a frame lacks an attribute column, has missing
        values in it, or has invalid points; a release's attribute column holds text where
        the original's holds numbers, or numbers where it holds text (no combination could
        match); the first attribute has a level ``"mean"`` (the
        label of the tables' mean rows); with ``linked``, a release does not keep the original
        index; with ``outcome``, fewer than 2 releases or fewer original records than a
        rectangle of the coverage table holds (:data:`geosynth.metrics.utility.MIN_POINTS`);
        ``executor`` has no ``submit``; ``grid`` is not a Grid (nor None); the original
        points are all at one place and ``grid`` is None (the pattern table has no window);
        ``n_quadrants`` or ``seed`` is invalid (checked with or without ``outcome``); or an
        error of the measures in :mod:`geosynth.metrics`.
    geosynth.errors.CRSError
        The CRSs differ, or the CRS is geographic; or the points of a release do not overlap
        the original points (see Notes).

    Warns
    -----
    geosynth.errors.PrivacyLeakWarning
        A release puts a point exactly at an original record's location (the message names
        the releases): a synthetic point does so with probability 0; or, in a CRS, puts more
        points within 0.1 m of the records than chance placement explains.

    Notes
    -----
    Distances between two places that have nothing to do with each other look like no risk at
    all: an original whose coordinates were declared in a wrong CRS (e.g. metres of one UTM
    zone declared as another, then reprojected) gave matched distances of 11,000 km. So every
    release must overlap the original: at least half of its points must lie in the bounding
    box of the original points widened on every side by 10 % of the box's longer side, or at
    least half of the original points in the release's box widened alike (a release spread
    over a wider public region, as noisy ε-DP releases may be, passes by the second rule). No
    check when both sides are single places. Releases made from the original pass by far.
    """
    _check_executor(executor)
    if grid is not None and not isinstance(grid, Grid):
        raise InputError(f"grid must be a geosynth.Grid (the releases' lattice) or None, got "
                         f"{type(grid).__name__}; pass a lattice's box as lattice_bounds=")
    _check_lattice_arguments(grid, lattice_bounds, linked)
    releases, plan = plan_evaluation(original, releases, attributes, linked,
                                     grid if grid is not None else lattice_bounds)
    rules = check_release_rules(releases, rules)
    check_n_quadrants(n_quadrants)  # also unused (outcome=None): a typo is no setting
    check_seed(seed)
    if outcome is not None:
        check_coverage_sizes(len(original), len(releases))
    attributes = list(plan.attributes)
    _warn_of_original_locations(original, releases)
    collect = _start(measure_release, [(original, release, plan) for release in releases],
                     executor)
    identification = None
    if linked:
        identification = identification_risk(original, releases, attributes, grid)
    coverage = None
    if outcome is not None:
        coverage = quadrant_coverage(original, releases, outcome, n_quadrants=n_quadrants,
                                     seed=seed, rules=rules)
    measures = collect()
    continuous = _continuous_columns(original, releases, attributes)
    values = (continuous_utility(original, releases, continuous, rules=rules)
              if continuous and len(releases) >= 2 else None)
    tables = evaluation_tables(measures, identification, coverage, values)
    quadrants = None if coverage is None else coverage.quadrants
    return Evaluation(tables=tables, original=original, releases=releases,
                      attributes=attributes, quadrants=quadrants, measures=measures)


def _continuous_columns(original: gpd.GeoDataFrame, releases: Sequence[gpd.GeoDataFrame],
                        attributes: Sequence[str]) -> list[str]:
    """Return the releases' numeric columns but attributes and geometry, in the original too.

    The continuous columns a synthesizer drew (``prepare(..., continuous=...)``), in the
    releases' order: numeric (not bool) and finite in the original and every release.
    """
    frames = [original, *releases]
    first = releases[0]

    def finite_numbers(frame: pd.DataFrame, column: str) -> bool:
        values = frame[column]
        return (pd.api.types.is_numeric_dtype(values.dtype)
                and not pd.api.types.is_bool_dtype(values.dtype)
                and bool(np.isfinite(values.to_numpy(dtype=np.float64, na_value=np.nan)).all()))

    return [c for c in first.columns
            if c != first.geometry.name and c not in attributes
            and all(c in frame.columns and finite_numbers(frame, c) for frame in frames)]


def evaluation_tables(measures: Sequence[ReleaseMeasures],
                      identification: IdentificationRisk | None = None,
                      coverage: QuadrantCoverage | None = None,
                      continuous: pd.DataFrame | None = None) -> dict[str, pd.DataFrame]:
    """Return the tables of :func:`evaluate` from the measures of its releases.

    The one place that assembles them: :func:`evaluate` calls it with every release, and
    :func:`geosynth.tune` with all releases but one, for the Monte Carlo error of its measures.

    Parameters
    ----------
    measures : sequence of ReleaseMeasures
        :func:`measure_release` of each release, in release order.
    identification : IdentificationRisk, optional
        :func:`geosynth.metrics.identification_risk` of the same releases (linked records).
    coverage : QuadrantCoverage, optional
        :func:`geosynth.metrics.quadrant_coverage` of the same releases.
    continuous : pandas.DataFrame, optional
        :func:`geosynth.metrics.continuous_utility` of the same releases.

    Returns
    -------
    dict of str to pandas.DataFrame
        As :attr:`Evaluation.tables`.
    """
    per_release = combine_measures(measures)
    tables = {"distance_risk": per_release["distance_risk"], "pattern": per_release["pattern"]}
    if identification is not None:
        tables["identification_risk"] = identification.summary().to_frame("value")
        tables["linked_records"] = per_release["linked_records"]
    if coverage is not None:
        tables["coverage"] = pd.DataFrame({
            "mean_overlap": [coverage.mean_overlap],
            "n_quadrants": [coverage.n_quadrants],
            "n_undefined": [coverage.n_undefined],
        })
    if continuous is not None:
        tables["continuous"] = continuous
    return tables


def _warn_of_original_locations(original: gpd.GeoDataFrame,
                                releases: Sequence[gpd.GeoDataFrame]) -> None:
    """PrivacyLeakWarning naming the releases with points at or near original locations.

    A synthetic point placed at random in its cell meets a record's location with probability
    0, so any such point is a leak (a release edited back, a baseline that keeps locations,
    the original itself). Averaged over releases, the matched distances hid it: a layer of the
    originals beside a synthetic one reported a mean distance of 37.5 m. So are, in a CRS, more
    points within 0.1 m (or a finer radius, down to 1 µm) of the records than chance
    placement explains (:func:`geosynth._points.near_copies`, the test of public review
    maps): a release edited
    to put five points 1 mm from records' homes passed without a word. The message names the
    releases, not how many points: for an ε-DP release that count would describe the records
    outside the guarantee.
    """
    locations = frame_xy(original, "original")
    # Without a CRS the units are unknown (degrees read as metres made 0.1 "m" 0.1°, and
    # honest releases were warned of): the exact test only.
    crs = original.crs
    metric = None if crs is None else metric_coordinates(np.unique(locations, axis=0), crs)
    exact, near, widest = [], [], 0.0  # the widest radius that judged a release a copy
    for k, release in enumerate(releases, start=1):
        xy = frame_xy(release, f"releases[{k - 1}]")
        if at_locations(xy, locations).any():
            exact.append(k)
        elif metric is not None:
            found, _, radius = near_copies(metric_coordinates(xy, crs), metric)
            if found:
                near.append(k)
                widest = max(widest, radius)
    for leaking, where in ((exact, "exactly at"), (near, f"within {widest:g} m of")):
        if not leaking:
            continue
        which = ", ".join(map(str, leaking))
        chance = ("does so with probability 0" if leaking is exact else
                  f"lands that near so often with a chance below {NEAR_ALPHA:g}")
        warnings.warn(
            f"release{'s' if len(leaking) > 1 else ''} {which} (of {len(releases)}, counted from "
            f"1) put points {where} the locations of original records: a synthetic point "
            f"{chance}, so these releases publish confidential locations (edited, made by a "
            "baseline that keeps locations, or the original itself); do not publish them",
            PrivacyLeakWarning,
            stacklevel=3,
        )


def linked_records(
    original: gpd.GeoDataFrame,
    releases: Sequence[gpd.GeoDataFrame],
    *,
    executor: Executor | None = None,
) -> pd.DataFrame:
    """Displacement and spatial k-anonymity of each release: the ``linked_records`` table alone.

    Equal to ``evaluate(original, releases, ...).tables["linked_records"]`` (the measures are
    taken release by release), without the other measures.

    Parameters
    ----------
    original : GeoDataFrame
        The confidential points.
    releases : sequence of GeoDataFrame
        Releases that keep the original index (as :func:`geosynth.synthesize` returns them).
    executor : concurrent.futures.Executor, optional
        Measure each release as a task of this executor (see :func:`evaluate`).

    Returns
    -------
    pandas.DataFrame
        One row per release (index ``release``, from 1): median and mean displacement and the
        spatial k-anonymity summary (:func:`geosynth.metrics.k_anonymity_summary`).

    Raises
    ------
    geosynth.errors.InputError
        ``releases`` is empty, a release does not keep the original index, or a frame has
        invalid points.
    geosynth.errors.CRSError
        The CRSs differ or are geographic, or a release does not overlap the original points
        (as in :func:`evaluate`: the displacements would measure the gap between two places).
    """
    _check_executor(executor)
    releases = as_releases(releases)  # one frame too (list(frame) gave its column names)
    check_frames(original, releases)
    for number, release in enumerate(releases):
        if not release.index.equals(original.index):
            raise InputError(
                f"releases[{number}] does not keep the original index, so its records cannot "
                "be linked"
            )
    _check_overlap(frame_xy(original, "original"),
                   [frame_xy(release, f"releases[{k}]") for k, release in enumerate(releases)])
    rows = _start(_linked_row, [(original, release) for release in releases], executor)
    return _linked_table(rows())


# --------------------------------------------------------------------------- per release, combine
@dataclass(frozen=True)
class ReleasePlan:
    """What the measures of one release need besides the original and the release.

    Decided once for all releases (:func:`plan_evaluation`), so that each release can be
    measured on its own -- in this process or in a task of an executor -- with the same
    result.

    Attributes
    ----------
    attributes : tuple of str
        Attribute columns that define the combinations.
    window : tuple of 4 floats
        ``(xmin, ymin, xmax, ymax)``: the box of the lattice and the original points (without
        a lattice, the original's box widened by :data:`OVERLAP_MARGIN` of its longer side),
        the window shared by every Ripley's K function
        (:func:`geosynth.metrics.ripley_distance`); a release's points outside it are left
        out of its pattern.
        Left out of the plan's printed form: its ends are the original records' extremes
        wherever these lie beyond the releases, and the plan goes to every task of an
        executor (and to its logs).
    linked : bool
        Measure the displacement and spatial k-anonymity of the linked records.
    reference : dict or None
        The original's L function of each combination in ``window``
        (:func:`geosynth.metrics.original_l_functions`), computed once for all releases; None:
        each release computes it. Left out of the printed form: it describes the records.
    """

    attributes: tuple[str, ...]
    window: tuple[float, float, float, float] = field(repr=False)
    linked: bool
    reference: dict | None = field(default=None, repr=False)


class ReleaseMeasures(NamedTuple):
    """The measures of one release against the original (:func:`measure_release`).

    Attributes
    ----------
    distance_risk : pandas.DataFrame
        :func:`geosynth.metrics.distance_risk` of this release alone, without the mean row.
    pattern : pandas.DataFrame
        :func:`geosynth.metrics.ripley_distance` of this release alone in the shared window,
        without the mean row.
    linked_records : dict or None
        Median and mean displacement and the spatial k-anonymity summary (None when the
        records are not linked).
    """

    distance_risk: pd.DataFrame
    pattern: pd.DataFrame
    linked_records: dict | None


def _check_lattice_arguments(grid: Grid | None, lattice_bounds: object, linked: object) -> None:
    """Refuse both a grid and a box, or record-level measures without the grid they need.

    A ``lattice_bounds`` given with a grid was ignored without a word; one given instead of
    the grid with the default ``linked=True`` failed in the identification risk, after the
    releases' measures had started, as "grid must be a Grid, got NoneType".
    """
    if grid is not None and lattice_bounds is not None:
        raise InputError("give grid or lattice_bounds, not both: the grid's box is "
                         "grid.bounds; drop lattice_bounds")
    if grid is None and check_bool(linked, "linked"):
        raise InputError(
            "linked=True measures the identification risk per cell of the releases' lattice, "
            "so it needs grid (a geosynth.Grid); with only the lattice's box (lattice_bounds, "
            "as from a release file), pass linked=False"
        )


def plan_evaluation(
    original: gpd.GeoDataFrame,
    releases: Sequence[gpd.GeoDataFrame],
    attributes: str | Sequence[str],
    linked: bool,
    grid: Grid | Sequence[float] | None = None,
) -> tuple[list[gpd.GeoDataFrame], ReleasePlan]:
    """Check the inputs of :func:`evaluate` and fix what the per-release measures share.

    Every check that names a frame (``releases[k]``) is done here, over all releases, so that a
    release measured on its own never reports a wrong position.

    Parameters
    ----------
    original : GeoDataFrame
        The confidential points.
    releases : sequence of GeoDataFrame
        The m releases.
    attributes : str or sequence of str
        Attribute columns that define the combinations.
    linked : bool
        Whether the releases must keep the original index.
    grid : Grid or (xmin, ymin, xmax, ymax), optional
        The releases' lattice, or its box: with the original points, it fixes the window of
        the pattern table (:attr:`ReleasePlan.window`).

    Returns
    -------
    releases : list of GeoDataFrame
    plan : ReleasePlan

    Raises
    ------
    geosynth.errors.InputError
        See :func:`evaluate`.
    geosynth.errors.CRSError
        See :func:`evaluate`.
    """
    releases = as_releases(releases)  # None or a number: a raw TypeError from list()
    check_frames(original, releases)
    if len(original) == 0:
        raise InputError("original has no records; pass the confidential points the releases "
                         "were made from")
    cols = as_columns(attributes, "attributes")
    names = ["original"] + [f"releases[{k}]" for k in range(len(releases))]
    frames = [original, *releases]
    xys = []
    for frame, name in zip(frames, names, strict=True):
        check_columns(frame, cols, name, "attribute column")
        xys.append(frame_xy(frame, name))
    check_mean_label(original, cols, "attribute column")
    check_level_types(frames, names, cols)
    _check_overlap(xys[0], xys[1:])
    if check_bool(linked, "linked"):
        for number, release in enumerate(releases):
            if is_public(release):  # a fresh RangeIndex equals a default-indexed original's
                raise InputError(
                    f"releases[{number}] is a public release (geosynth.to_public or a DP "
                    "release): its rows are shuffled and no longer belong to the records of "
                    "original; pass linked=False, or the internal output of geosynth.synthesize"
                )
            if not release.index.equals(original.index):
                raise InputError(
                    f"releases[{number}] does not keep the original index, so its records "
                    "cannot be linked; pass linked=False (e.g. for to_public releases)"
                )
    window = _pattern_window(xys[0], grid)
    _warn_of_points_outside(xys[1:], window, grid is None)
    reference = original_l_functions(original, cols, window)
    return releases, ReleasePlan(attributes=tuple(cols), window=window, linked=bool(linked),
                                 reference=reference)


def _pattern_window(original: np.ndarray,
                    grid: Grid | Sequence[float] | None) -> tuple[float, float, float, float]:
    """Return the window of the Ripley's K functions, fixed before any release is seen.

    The box of the lattice and the original points (the releases' points lie in the lattice's
    cells); without a lattice, the original points' box widened as for the overlap check
    (:data:`OVERLAP_MARGIN` of its longer side). The box of the original and every release
    made a release's L gap depend on the others (one point 600 m east in another release moved
    it from 3.44 to 4.31) and the original's own L function on the releases. No coordinate is
    shown: they are the original's.
    """
    if grid is not None:
        if isinstance(grid, Grid):
            x0, y0, x1, y1 = grid.bounds
        else:  # the box of a lattice known from a release file (lattice_bounds)
            x0, y0, x1, y1 = as_bounds(grid, original, "lattice_bounds")
        low = np.minimum(original.min(axis=0), [x0, y0])
        high = np.maximum(original.max(axis=0), [x1, y1])
    else:
        low, high, _ = _widened_box(original)
    if not np.all(high > low):
        raise InputError(
            "the original points are all at one place (a single record, or records geocoded "
            "to one place), so the pattern table's Ripley's K functions have no window of any "
            "area; evaluate points spread over an area, or pass the releases' grid"
        )
    return as_bounds((float(low[0]), float(low[1]), float(high[0]), float(high[1])),
                     original, "window")


#: Share of points that must lie near the other side's points (:func:`evaluate`, Notes).
OVERLAP_SHARE = 0.5
#: Widening of a bounding box, as a share of its longer side (:func:`evaluate`, Notes).
OVERLAP_MARGIN = 0.1


def _check_overlap(original: np.ndarray, releases: list[np.ndarray]) -> None:
    """Refuse a release that does not overlap the original points: most likely a wrong CRS.

    The rule is in :func:`evaluate`'s Notes. The message shows no coordinates, bounds or
    shares: they would describe the confidential points.
    """
    near_original = _widened_box(original)
    for number, xy in enumerate(releases):
        if xy.shape[0] == 0:
            continue
        box = _widened_box(xy)
        if near_original[2] == 0 and box[2] == 0:
            continue  # one place on each side: nothing tells an offset from a displacement
        if _share_in(xy, near_original) >= OVERLAP_SHARE or \
                _share_in(original, box) >= OVERLAP_SHARE:
            continue
        raise CRSError(
            f"original and the releases do not overlap: fewer than half of the points of "
            f"releases[{number}] lie in the bounding box of the original points widened by 10 %, "
            "and fewer than half of the original points in that of the release, so the "
            "distances would measure the gap between two places and look like no risk; the "
            "likely cause is a wrong CRS of the original points (original.crs, CLI: --crs): "
            "declare the CRS their coordinates are really in (original.set_crs(true_crs, "
            "allow_override=True), CLI: --crs), and check that the releases were made from this "
            "original"
        )


def _widened_box(xy: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Return the bounding box of ``xy`` widened by ``OVERLAP_MARGIN`` and its longer side."""
    low, high = xy.min(axis=0), xy.max(axis=0)
    side = float(np.max(high - low))
    return low - OVERLAP_MARGIN * side, high + OVERLAP_MARGIN * side, side


def _share_in(xy: np.ndarray, box: tuple[np.ndarray, np.ndarray, float]) -> float:
    """Return the share of ``xy`` in ``box`` (:func:`_widened_box`)."""
    low, high, _ = box
    return float(((xy >= low) & (xy <= high)).all(axis=1).mean())


def measure_release(
    original: gpd.GeoDataFrame, release: gpd.GeoDataFrame, plan: ReleasePlan
) -> ReleaseMeasures:
    """Measure one release against the original: the per-release part of :func:`evaluate`.

    Parameters
    ----------
    original : GeoDataFrame
        The confidential points.
    release : GeoDataFrame
        One release, checked by :func:`plan_evaluation`.
    plan : ReleasePlan
        The shared settings.

    Returns
    -------
    ReleaseMeasures
    """
    attributes = list(plan.attributes)
    linked = _linked_row(original, release) if plan.linked else None
    return ReleaseMeasures(
        distance_risk=distance_risk(original, release, by=attributes, mean_row=False),
        pattern=ripley_distance(original, _in_window(release, plan.window), by=attributes,
                                window=plan.window, mean_row=False, reference=plan.reference),
        linked_records=linked,
    )


def _warn_of_points_outside(xys: list[np.ndarray], window: tuple[float, float, float, float],
                            no_grid: bool) -> None:
    """DataWarning naming the releases with points outside the pattern table's window.

    They are left out of that release's Ripley's L gap (:func:`_in_window`): without a lattice
    a release spread 2 km beyond the records scored better than a close one. Counts of the
    releases' points only (public), no coordinate.
    """
    outside = {k: int(np.count_nonzero(~_inside(xy, window))) for k, xy in enumerate(xys)}
    described = ", ".join(f"releases[{k}] ({n:,} of {xys[k].shape[0]:,})"
                          for k, n in outside.items() if n)
    if described:
        fix = "; pass the releases' grid" if no_grid else ""
        warnings.warn(
            f"{described}: points outside the pattern table's window (the lattice's box with "
            "the original points', or without a lattice the original points' box widened by "
            f"10 %) are left out of the release's Ripley's L gap{fix}",
            DataWarning,
            stacklevel=4,
        )


def _in_window(release: gpd.GeoDataFrame,
               window: tuple[float, float, float, float]) -> gpd.GeoDataFrame:
    """Return the points of ``release`` inside ``window`` (all of a release in its lattice)."""
    inside = _inside(frame_xy(release, "release"), window)
    return release if inside.all() else release[inside]


def _inside(xy: np.ndarray, window: tuple[float, float, float, float]) -> np.ndarray:
    """Return which points of ``xy`` lie in the closed box ``window`` (xmin, ymin, xmax, ymax)."""
    x0, y0, x1, y1 = window
    return (xy[:, 0] >= x0) & (xy[:, 0] <= x1) & (xy[:, 1] >= y0) & (xy[:, 1] <= y1)


def combine_measures(measures: Sequence[ReleaseMeasures]) -> dict[str, pd.DataFrame]:
    """Combine the per-release measures of m releases into the tables of :func:`evaluate`.

    ``n_synthetic`` is averaged over the releases and the distances and L gaps over the
    releases where they are defined, then the mean row is appended: the same arithmetic, in the
    same order, as :func:`~geosynth.metrics.distance_risk` and
    :func:`~geosynth.metrics.ripley_distance` called with all releases, so the tables are equal
    to theirs bit for bit.

    Parameters
    ----------
    measures : sequence of ReleaseMeasures
        One per release, in release order.

    Returns
    -------
    dict of str to pandas.DataFrame
        ``distance_risk``, ``pattern`` and, when the records are linked, ``linked_records``.

    Raises
    ------
    geosynth.errors.InputError
        ``measures`` is empty.
    """
    measures = list(measures)
    if not measures:
        raise InputError("measures is empty; pass the measure_release result of every release, "
                         "in release order")
    tables = {
        "distance_risk": _average_over_releases([m.distance_risk for m in measures]),
        "pattern": _average_over_releases([m.pattern for m in measures]),
    }
    if measures[0].linked_records is not None:
        tables["linked_records"] = _linked_table([m.linked_records for m in measures])
    return tables


def check_coverage_sizes(n_original: int, m: int) -> None:
    """Refuse, before any measure (or fit), an ``outcome`` the coverage table cannot use.

    :func:`~geosynth.metrics.quadrant_coverage` would refuse it with advice on its own
    parameters (``min_points``), which :func:`evaluate` and :func:`geosynth.tune` do not have.

    Parameters
    ----------
    n_original : int
        Number of original records.
    m : int
        Number of releases.

    Raises
    ------
    geosynth.errors.InputTypeError
        ``n_original`` or ``m`` is not an int (80.5, inf, None).
    geosynth.errors.InputError
        Fewer than 2 releases, or fewer original records than every rectangle holds
        (:data:`geosynth.metrics.utility.MIN_POINTS`).
    """
    n_original = check_int(n_original, "n_original", 0, what="number of original records")
    m = check_int(m, "m", 1, what="number of releases")
    if m < 2:
        raise InputError("outcome needs at least 2 releases (the coverage intervals combine the "
                         "releases by their between-release variance); pass m >= 2 releases, "
                         "or outcome=None")
    if n_original < MIN_POINTS:
        raise InputError(
            f"outcome needs at least {MIN_POINTS} original records (every random rectangle of "
            f"the coverage table holds {MIN_POINTS} of them), but original has {n_original}; "
            "pass outcome=None, or call geosynth.metrics.quadrant_coverage with a smaller "
            "min_points"
        )


def _check_executor(executor: object) -> None:
    if executor is not None and not callable(getattr(executor, "submit", None)):
        raise InputError(
            "executor must be a concurrent.futures.Executor (e.g. ThreadPoolExecutor(), or "
            f"client.get_executor() of a Dask client), got {type(executor).__name__}"
        )


def _start(function, calls: list[tuple], executor: Executor | None):
    """Start ``function(*args)`` for each ``args`` of ``calls``; return a function that waits.

    With an executor each call is a task, submitted now; without, the calls run one after
    another when the results are asked for. Results come back in the order of ``calls``.
    """
    if executor is None:
        return lambda: [function(*args) for args in calls]
    futures = [executor.submit(function, *args) for args in calls]

    def collect() -> list:
        try:
            return [future.result() for future in futures]
        except BaseException:
            for future in futures:  # a failed task (or Ctrl-C) stops the tasks not started
                future.cancel()
            raise

    return collect


def _average_over_releases(tables: list[pd.DataFrame]) -> pd.DataFrame:
    """Average single-release metric tables (same rows) over releases and add the mean row.

    ``n_original`` is the same in every table; ``n_synthetic`` is a plain mean, a ``worst_``
    column the smallest over the releases, the other columns a mean over the releases where
    they are defined (NaN if none), as the metrics do.
    """
    first = tables[0]
    columns = {}
    for name in first.columns:
        if name == "n_original":
            columns[name] = first[name].to_numpy()
            continue
        values = np.column_stack([table[name].to_numpy(dtype=np.float64) for table in tables])
        if name == "n_synthetic":
            columns[name] = values.mean(axis=1)
        else:
            columns[name] = (nanmin_rows if name.startswith("worst_") else nanmean_rows)(values)
    return with_mean_row(pd.DataFrame(columns, index=first.index))


def _linked_row(original: gpd.GeoDataFrame, release: gpd.GeoDataFrame) -> dict:
    """Displacement and spatial k-anonymity summary of one linked release."""
    moved = displacement(original, release)
    summary = k_anonymity_summary(spatial_k_anonymity(original, release))
    return {"median_displacement": float(moved.median()),
            "mean_displacement": float(moved.mean()), **summary.to_dict()}


def _linked_table(rows: Sequence[dict]) -> pd.DataFrame:
    """Build the ``linked_records`` table: one row per release, indexed from 1."""
    return pd.DataFrame([{"release": number, **row} for number, row in enumerate(rows, start=1)]
                        ).set_index("release")
