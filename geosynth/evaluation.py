"""Risk and utility of a set of releases, side by side (Nunes 2018, §3.3–3.4).

:func:`evaluate` gathers the measures of :mod:`geosynth.metrics` for one set of m releases of a
confidential GeoDataFrame into tables an agency can put in a report, and draws the thesis'
figures (original vs synthetic points per combination, Figures 5–6; quadrant intervals,
Figures 7–8).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import geopandas as gpd
import numpy as np
import pandas as pd

from geosynth._random import SeedLike
from geosynth.errors import InputError
from geosynth.lattice import Grid
from geosynth.metrics import (
    displacement,
    distance_risk,
    identification_risk,
    k_anonymity_summary,
    quadrant_coverage,
    ripley_distance,
    spatial_k_anonymity,
)

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["Evaluation", "evaluate"]


@dataclass
class Evaluation:
    """Tables and figures of one evaluation.

    Attributes
    ----------
    tables : dict of str to pandas.DataFrame
        ``distance_risk`` (Tables 4–6 layout) and ``pattern`` (Ripley's L distance per
        combination); when the releases keep the original index (so records can be linked),
        ``identification_risk`` (Reiter & Mitra 2009) and ``linked_records`` (displacement,
        spatial k-anonymity); with an ``outcome``, ``coverage`` (mean interval overlap over
        random rectangles, §3.3).
    """

    tables: dict[str, pd.DataFrame]
    original: gpd.GeoDataFrame = field(repr=False)
    releases: list[gpd.GeoDataFrame] = field(repr=False)
    attributes: list[str] = field(repr=False)
    quadrants: pd.DataFrame | None = field(default=None, repr=False)

    def to_markdown(self) -> str:
        """All tables as Markdown sections (fixed-width text blocks)."""
        parts = []
        for name, table in self.tables.items():
            parts.append(f"### {name.replace('_', ' ')}\n\n```\n{table.to_string()}\n```\n")
        return "\n".join(parts)

    def plots(self, max_panels: int = 12) -> list[Figure]:
        """Figures: points per combination (Figs. 5–6) and, with an outcome, intervals (7–8)."""
        figures = [self._points_figure(max_panels)]
        if self.quadrants is not None:
            figures.append(self._interval_figure())
        return figures

    def _points_figure(self, max_panels: int) -> Figure:
        import matplotlib.pyplot as plt

        groups = list(self.original.groupby(self.attributes, sort=True).groups.items())
        groups = groups[:max_panels]
        ncols = min(4, len(groups))
        nrows = int(np.ceil(len(groups) / ncols))
        fig, axes = plt.subplots(nrows, ncols, figsize=(3.2 * ncols, 3.0 * nrows),
                                 squeeze=False)
        release = self.releases[0]
        synthetic_groups = release.groupby(self.attributes, sort=True).groups
        for ax, (key, index) in zip(axes.flat, groups, strict=False):
            orig = self.original.geometry.loc[index]
            ax.scatter(orig.x, orig.y, s=6, c="black", label="original")
            if key in synthetic_groups:
                synth = release.geometry.loc[synthetic_groups[key]]
                ax.scatter(synth.x, synth.y, s=6, c="tab:orange", alpha=0.7, label="release 1")
            ax.set_title(", ".join(f"{a}={v}" for a, v in zip(
                self.attributes, np.atleast_1d(key), strict=True)), fontsize=8)
            ax.set_xticks([])
            ax.set_yticks([])
        for ax in list(axes.flat)[len(groups):]:
            ax.set_axis_off()
        axes.flat[0].legend(fontsize=7)
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


def evaluate(
    original: gpd.GeoDataFrame,
    releases: Sequence[gpd.GeoDataFrame],
    grid: Grid,
    attributes: Sequence[str],
    outcome: str | None = None,
    n_quadrants: int = 1000,
    seed: SeedLike = None,
    linked: bool = True,
) -> Evaluation:
    """Measure the disclosure risk and the utility of m releases of ``original``.

    Parameters
    ----------
    original : GeoDataFrame
        The confidential points (projected CRS) with the attribute columns.
    releases : sequence of GeoDataFrame
        The m releases, as returned by :func:`geosynth.synthesize` or the baselines (they keep
        the original index, which the linked-record measures need).
    grid : Grid
        Lattice of the intruder's knowledge for the identification risk.
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

    Returns
    -------
    Evaluation
    """
    attributes = [attributes] if isinstance(attributes, str) else list(attributes)
    releases = list(releases)
    if not releases:
        raise InputError("releases is empty; pass the m synthetic data sets to evaluate")
    tables = {
        "distance_risk": distance_risk(original, releases, by=attributes),
        "pattern": ripley_distance(original, releases, by=attributes),
    }
    if linked:
        for number, release in enumerate(releases):
            if not release.index.equals(original.index):
                raise InputError(
                    f"releases[{number}] does not keep the original index, so its records "
                    "cannot be linked; pass linked=False (e.g. for to_public releases)"
                )
        tables["identification_risk"] = identification_risk(
            original, releases, attributes, grid).summary().to_frame("value")
        tables["linked_records"] = _linked_records(original, releases)
    quadrants = None
    if outcome is not None:
        coverage = quadrant_coverage(original, releases, outcome, n_quadrants=n_quadrants,
                                     seed=seed)
        quadrants = coverage.quadrants
        tables["coverage"] = pd.DataFrame({
            "mean_overlap": [coverage.mean_overlap],
            "n_quadrants": [coverage.n_quadrants],
            "n_undefined": [coverage.n_undefined],
        })
    return Evaluation(tables=tables, original=original, releases=releases,
                      attributes=attributes, quadrants=quadrants)


def _linked_records(original: gpd.GeoDataFrame, releases: list[gpd.GeoDataFrame]) -> pd.DataFrame:
    rows = []
    for number, release in enumerate(releases, start=1):
        moved = displacement(original, release)
        summary = k_anonymity_summary(spatial_k_anonymity(original, release))
        rows.append({"release": number, "median_displacement": float(moved.median()),
                     "mean_displacement": float(moved.mean()), **summary.to_dict()})
    return pd.DataFrame(rows).set_index("release")
