"""One-call entry points of the package top, above the core and the layers it dispatches to.

:func:`synthesize` is ``geosynth.synthesize``: releases of an exact fit through the core
(:func:`geosynth.synth.synthesize`), ε-differentially private releases through
:mod:`geosynth.dp` (:func:`~geosynth.dp.dp_release`, :func:`~geosynth.dp.dp_synthesize`). The
core never imports :mod:`geosynth.dp`; this module is the one place that chooses between them.
:func:`naive_synthesize` is ``geosynth.naive_synthesize``. Both take a weights raster as a path
or an open dataset, read here by :func:`geosynth.rasters.read_weights`: the core places points
by the table read, and opens no file.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import geopandas as gpd

    from geosynth._random import SeedLike
    from geosynth.data import CellCounts
    from geosynth.lattice import Grid
    from geosynth.rasters import WeightsLike
    from geosynth.synth.paiva import LimitsLike, PosteriorDraws

__all__ = ["naive_synthesize", "synthesize"]


def synthesize(
    fit: PosteriorDraws | CellCounts,
    gdf: gpd.GeoDataFrame | None = None,
    m: int = 5,
    seed: SeedLike = None,
    weights: WeightsLike = None,
    *,
    limits: LimitsLike = None,
    epsilon: float | None = None,
    **dp_options: Any,
) -> list[gpd.GeoDataFrame]:
    """Make ``m`` synthetic releases: from a fit, or ε-differentially private from counts.

    * ``synthesize(fit, gdf, m, seed)`` -- partially synthetic releases of a fit of exact
      counts (Nunes 2018, §2.1.2): :func:`geosynth.synth.synthesize`.
    * ``synthesize(counts, m=m, epsilon=ε, ...)`` -- an ε-DP release of counts prepared on the
      public domain (``prepare(..., levels=...)``):
      :func:`geosynth.dp.dp_release` adds geometric noise to the counts, fits the model
      noise-aware and draws records (attributes included) from the posterior.
    * ``synthesize(noise_aware_fit, m=m)`` -- releases of a noise-aware fit of
      :func:`geosynth.dp.dp_counts` output: :func:`geosynth.dp.dp_synthesize`.

    Parameters
    ----------
    fit : geosynth.PaivaFit or geosynth.data.CellCounts
        The fitted model (``fit.counts`` prepared from ``gdf``), a noise-aware fit, or, with
        ``epsilon``, the prepared counts.
    gdf : geopandas.GeoDataFrame, optional
        The confidential records given to :func:`geosynth.prepare` (a fit of exact counts
        only; a DP release never reuses them).
    m : int, default 5
        Number of releases.
    seed : None, int, numpy.random.SeedSequence or numpy.random.Generator
        Randomness; the same seed (and inputs) gives the same releases. For a DP release a
        seed is for tests only (it triggers a :class:`~geosynth.errors.PrivacyLeakWarning`).
    weights : str, os.PathLike, rasterio dataset or geosynth.synth.PixelTable, optional
        Raster of non-negative weights in the grid CRS to place points within their cell
        (:func:`geosynth.synth.place_in_cells`), read by :func:`geosynth.rasters.read_weights`.
    limits : dict of str to (float or None, float or None), optional
        The range of continuous columns, ``{column: (low, high)}`` with None for an open end,
        for a fit of exact counts: their synthetic values are drawn truncated to it (see
        :func:`geosynth.synth.synthesize`). Refused with ``epsilon`` or a noise-aware fit,
        whose releases have no continuous column.
    epsilon : float, optional
        Make an ε-differentially private release of the counts ``fit``; the ledger is in each
        release's ``attrs["geosynth"]``.
    **dp_options
        With ``epsilon``: ``levels``, ``neighbours``, ``accountant``, ``model``, ``n_iter``,
        ``burn_in``, ``thin``, ``chains``, ``progress``, ``n_public``, ``max_records``,
        ``max_bytes`` of :func:`geosynth.dp.dp_release`.

    Returns
    -------
    list of geopandas.GeoDataFrame
        ``m`` releases (see :func:`geosynth.synth.synthesize` and
        :func:`geosynth.dp.dp_synthesize`).

    Raises
    ------
    geosynth.errors.InputError
        ``gdf`` or ``limits`` with ``epsilon`` or with a noise-aware fit; ``epsilon`` or DP
        options with a fit
        (they go with the counts); DP options without ``epsilon``; with ``epsilon``, a first
        argument that is not the CellCounts of :func:`geosynth.prepare`; and everything the
        function dispatched to raises.
    """
    from geosynth._validation import check_m
    from geosynth.synth import paiva

    noise_aware = isinstance(fit, paiva.PosteriorDraws) and fit.noise_scale is not None
    if epsilon is None and not dp_options and not noise_aware:
        check_m(m)  # before a raster of up to 2 GiB is read
        table = _read_weights(weights, getattr(getattr(fit, "counts", None), "grid", None))
        return paiva.synthesize(fit, gdf, m, seed, table, limits=limits)
    if limits is not None:
        from geosynth.errors import InputError

        raise InputError(
            "limits bound the synthetic continuous values of releases of an exact fit; an "
            "ε-differentially private release has no continuous column: drop limits="
        )
    return _dp_synthesize(fit, gdf, m, seed, weights, epsilon, dp_options)


def _dp_synthesize(fit, gdf, m, seed, weights, epsilon, dp_options) -> list[gpd.GeoDataFrame]:
    """Run the ε-DP branch of :func:`synthesize`."""
    from geosynth.data import CellCounts
    from geosynth.dp.locations import dp_release, dp_synthesize
    from geosynth.errors import InputError
    from geosynth.synth.paiva import PosteriorDraws

    # The options dp_release takes besides what synthesize names itself; an unknown one is
    # named first (the checks below would blame gdf or epsilon instead).
    options = set(inspect.signature(dp_release).parameters) - {"counts", "epsilon", "m",
                                                               "seed", "weights"}
    unknown = sorted(set(dp_options) - options)
    if unknown:
        raise InputError(f"unknown keyword argument(s) {unknown}; the DP options (with "
                         f"epsilon=) are {', '.join(sorted(options))}")
    if gdf is not None:
        raise InputError(
            "a differentially private release does not reuse the confidential records: call "
            "synthesize(counts, m=..., epsilon=...) without gdf"
        )
    if isinstance(fit, PosteriorDraws):
        if epsilon is not None or dp_options:
            raise InputError(
                "epsilon/DP options go with the prepared CellCounts, not with a fit: "
                "synthesize(counts, epsilon=...); a noise-aware fit is synthesized as it is"
            )
        return dp_synthesize(fit, m, weights=weights, seed=seed)
    if epsilon is None:
        raise InputError(f"DP options {sorted(dp_options)} need epsilon=")
    if not isinstance(fit, CellCounts):
        raise InputError(
            f"with epsilon, the first argument must be the CellCounts of geosynth.prepare, got "
            f"{type(fit).__name__}"
        )
    return dp_release(fit, epsilon, m, weights=weights, seed=seed, **dp_options).releases


def naive_synthesize(
    gdf: gpd.GeoDataFrame,
    grid: Grid,
    m: int = 5,
    seed: SeedLike = None,
    weights: WeightsLike = None,
    columns: Sequence[str] | None = None,
) -> list[gpd.GeoDataFrame]:
    """Naive releases: a uniform point inside each record's own cell (Nunes 2018, §3.2).

    :func:`geosynth.synth.naive_synthesize`, with ``weights`` also a raster.

    Parameters
    ----------
    gdf, grid, m, seed, columns
        As for :func:`geosynth.synth.naive_synthesize`.
    weights : str, os.PathLike, rasterio dataset or geosynth.synth.PixelTable, optional
        Raster of non-negative weights in the grid CRS to place points within their cell,
        read by :func:`geosynth.rasters.read_weights`; default uniform.

    Returns
    -------
    list of geopandas.GeoDataFrame
        ``m`` releases (see :func:`geosynth.synth.naive_synthesize`).

    Raises
    ------
    geosynth.errors.InputError, geosynth.errors.CRSError, geosynth.errors.MemoryLimitError
        An invalid raster (:func:`geosynth.rasters.read_weights`), and everything
        :func:`geosynth.synth.naive_synthesize` raises.
    """
    from geosynth._validation import check_m
    from geosynth.synth.baselines import naive_synthesize as naive

    check_m(m)  # before a raster of up to 2 GiB is read
    return naive(gdf, grid, m, seed, _read_weights(weights, grid), columns)


def _read_weights(weights: WeightsLike, grid: Any) -> Any:
    """Read a raster path or dataset for ``grid`` into its placement table; pass others on.

    Without a :class:`~geosynth.lattice.Grid` (a first argument that is not a fit), ``weights``
    is passed on as given, for the core to refuse the first argument.
    """
    from geosynth.lattice import Grid
    from geosynth.rasters import pixel_table

    return pixel_table(weights, grid) if isinstance(grid, Grid) else weights
