"""Matplotlib figures: lattice data (counts and intensities per combination), the R-U map."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from geosynth._messages import NOISY_COUNTS
from geosynth._validation import MAX_CONTINUOUS, check_real, check_ru_table
from geosynth.errors import InputError

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from geosynth.data import CellCounts
    from geosynth.lattice import Grid
    from geosynth.model import PaivaFit

__all__ = [
    "lattice_image",
    "combination_panels",
    "counts_figure",
    "intensity_figure",
    "ru_map",
    "CONFIDENTIAL_NOTE",
    "MAX_PANELS",
]

# Said in the titles of figures of exact counts (CellCounts): they show each cell's records,
# ones and twos included, and may not leave the internal review.
CONFIDENTIAL_NOTE = "confidential exact counts: internal review only"
#: In the title of an R-U map: its risks and utilities are measured on the confidential records.
RU_MAP_NOTE = "internal: measured on the confidential records"
#: The most panels of one figure (:func:`combination_panels`): 16 rows of 4, 48 inches tall;
#: 5 000 panels of one call needed gigabytes and raised MemoryError.
MAX_PANELS = 64


def lattice_image(grid: Grid, values: np.ndarray) -> np.ma.MaskedArray:
    """Scatter per-cell ``values`` into an (nrows, ncols) image, masking dropped cells.

    Row 0 of the returned image is the southernmost lattice row, so draw it with
    ``imshow(..., origin="lower", extent=(xmin, xmax, ymin, ymax))``.

    Parameters
    ----------
    grid : Grid
        Lattice the values refer to.
    values : numpy.ndarray, shape (G,)
        One value per kept cell, in cell-id order.

    Returns
    -------
    numpy.ma.MaskedArray of float64, shape (nrows, ncols)
        Cells dropped by clipping (and NaN or infinite values) are masked.

    Raises
    ------
    geosynth.errors.InputError
        ``grid`` is not a Grid, or ``values`` is not one number per cell of it (finite ones
        within ±1e100).
    geosynth.errors.GridError
        ``grid`` is not square (hexagons and areas are drawn as polygons instead).
    """
    _check_grid(grid)
    grid.require_square("an image of the lattice")
    values = _cell_values(grid, values, 1)
    nrows, ncols = grid.shape
    image = np.full(nrows * ncols, np.nan)
    positions = grid.cell_row * ncols + grid.cell_col
    image[positions] = values
    return np.ma.masked_invalid(image.reshape(nrows, ncols))


def combination_panels(
    grid: Grid, values: np.ndarray, titles: list[str], suptitle: str = "", cmap: str = "viridis"
) -> Figure:
    """One panel per column of ``values`` (G, B): the lattice coloured by that column.

    Parameters
    ----------
    grid : Grid
        Lattice the rows of ``values`` refer to.
    values : numpy.ndarray, shape (G, B)
        Per-cell values for each of B attribute combinations.
    titles : list of str
        Panel titles, one per combination. Drawn as plain text (as is ``suptitle``): a ``$``
        does not start matplotlib's mathtext, so levels such as ``"$0-$25k"`` stay as written.
    suptitle : str, optional
        Figure title.
    cmap : str, default "viridis"
        Name of a matplotlib colour map.

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    geosynth.errors.InputError
        ``grid`` is not a Grid, ``values`` is not (G, B) numbers for it (finite ones within
        ±1e100), ``B`` exceeds
        :data:`MAX_PANELS`, ``titles`` is not one title per column, or ``cmap`` names no colour
        map.
    """
    _check_grid(grid)
    values = _cell_values(grid, values, 2)
    if values.shape[1] > MAX_PANELS:
        raise InputError(f"values has {values.shape[1]} columns, one panel each, but a figure "
                         f"draws at most {MAX_PANELS} panels (MAX_PANELS); pass a subset of the "
                         f"columns, e.g. values[:, :{MAX_PANELS}] with their titles")
    if not isinstance(titles, list | tuple) or len(titles) != values.shape[1]:
        raise InputError(f"titles must be a list of {values.shape[1]} panel titles, one per "
                         f"column of values, got {titles!r}")
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    if not isinstance(cmap, str) or cmap not in matplotlib.colormaps:
        raise InputError(f"cmap must be the name of a matplotlib colour map, e.g. 'viridis' or "
                         f"'magma', got {cmap!r}")
    n_panels = values.shape[1]
    ncols = min(4, n_panels)
    nrows = math.ceil(n_panels / ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.2 * ncols, 3.0 * nrows), squeeze=False)
    for b, ax in enumerate(axes.flat):
        if b >= n_panels:
            ax.set_axis_off()
            continue
        image = _draw_cells(ax, grid, values[:, b], cmap)
        ax.set_title(_plain(titles[b]), fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
        fig.colorbar(image, ax=ax, shrink=0.8)
    if suptitle:
        fig.suptitle(_plain(suptitle))
    fig.tight_layout()
    return fig


def _plain(text: Any) -> str:
    r"""``str(text)`` with each ``$`` escaped, so matplotlib draws it as text, not mathtext.

    Labels hold the data's text: ``"income=$0-$25k"`` was drawn as a formula ("0-" in
    italics, the dollars gone) and ``"a$\frac$"`` raised a ParseSyntaxException when drawn.
    """
    return str(text).replace("$", r"\$")


def _check_grid(grid: Any) -> None:
    from geosynth.lattice import Grid

    if not isinstance(grid, Grid):
        raise InputError(f"grid must be a geosynth.Grid, got {type(grid).__name__}")


def _cell_values(grid: Grid, values: Any, ndim: int) -> np.ndarray:
    """``values`` as floats, one row per cell of ``grid``: shape (G,) or (G, B)."""
    try:
        array = np.asarray(values, dtype=float)
    except (TypeError, ValueError) as err:
        raise InputError(f"values must hold numbers (NaN where a cell has none), one row per "
                         f"cell of the grid; got {type(values).__name__} holding something "
                         f"else (text?): convert the column to float first") from err
    if array.ndim != ndim or array.shape[0] != grid.n_cells or 0 in array.shape:
        wanted = f"({grid.n_cells},)" if ndim == 1 else f"({grid.n_cells}, B)"
        raise InputError(f"values must have shape {wanted}, one row per cell of the grid, got "
                         f"shape {array.shape}")
    huge = np.isfinite(array) & (np.abs(array) > MAX_CONTINUOUS)
    if huge.any():  # 1e308 raised matplotlib's "arange: cannot compute length" (colour bar)
        raise InputError(f"values holds {int(huge.sum())} finite values beyond "
                         f"±{MAX_CONTINUOUS:g}, which no colour scale can hold; rescale them, "
                         "or set them to NaN (drawn as no value)")
    return array


def _draw_cells(ax: Any, grid: Grid, values: np.ndarray, cmap: str) -> Any:
    """Draw per-cell values: an image of a square lattice, a choropleth of other cells."""
    if grid.kind == "square":
        xmin, ymin, xmax, ymax = grid.bounds
        return ax.imshow(lattice_image(grid, values), origin="lower",
                         extent=(xmin, xmax, ymin, ymax), cmap=cmap)
    cells = grid.cells[["geometry"]].assign(value=np.asarray(values, dtype=float))
    before = len(ax.collections)
    cells.plot(column="value", ax=ax, cmap=cmap, edgecolor="none")  # geopandas draws holes
    # The collection of the values; geopandas draws no cell of NaN, and none at all when every
    # value is NaN (the last collection of the axes was then an IndexError).
    from matplotlib.cm import ScalarMappable

    drawn = [c for c in ax.collections[before:] if c.get_array() is not None]
    collection = drawn[-1] if drawn else ScalarMappable(cmap=cmap)
    xmin, ymin, xmax, ymax = grid.bounds
    ax.set_xlim(xmin, xmax)
    ax.set_ylim(ymin, ymax)
    ax.set_aspect("equal")
    return collection


def counts_figure(cell_counts: CellCounts) -> Figure:
    """Plot counts per cell for each combination of a :class:`~geosynth.data.CellCounts`.

    Parameters
    ----------
    cell_counts : geosynth.data.CellCounts or geosynth.dp.NoisyCounts
        The counts of :func:`geosynth.prepare` (or noisy counts).

    Returns
    -------
    matplotlib.figure.Figure
        One panel per combination. The figure of exact counts is titled as confidential
        (:data:`CONFIDENTIAL_NOTE`): it shows every cell's records, ones and twos included.

    Raises
    ------
    geosynth.errors.InputError
        ``cell_counts`` is not a count table, or has more than :data:`MAX_PANELS` combinations.
    """
    from geosynth.data import CellCounts, CountTable

    if not isinstance(cell_counts, CountTable):
        raise InputError(f"cell_counts must be the CellCounts of geosynth.prepare (or noisy "
                         f"counts), got {type(cell_counts).__name__}")
    n_combos = cell_counts.counts.shape[1]
    if n_combos > MAX_PANELS:
        raise InputError(f"cell_counts has {n_combos} combinations, one panel each, but a figure "
                         f"draws at most {MAX_PANELS} (MAX_PANELS); draw a subset with "
                         f"combination_panels(cell_counts.grid, cell_counts.counts[:, columns], "
                         f"titles)")
    titles = cell_counts.combination_labels(sep=", ")
    suptitle = (f"Records per cell and combination ({CONFIDENTIAL_NOTE})"
                if isinstance(cell_counts, CellCounts)
                else f"{NOISY_COUNTS[0].upper()}{NOISY_COUNTS[1:]} per cell and combination")
    return combination_panels(cell_counts.grid, cell_counts.counts, titles, suptitle=suptitle)


def intensity_figure(fit: PaivaFit, combination: int) -> Figure:
    """Observed counts next to the posterior mean λ of one combination (Nunes 2018, Fig. 3).

    Parameters
    ----------
    fit : geosynth.PaivaFit
        The fitted model.
    combination : int
        Column of the combination (``fit.counts.combination_labels()`` gives their order).

    Returns
    -------
    matplotlib.figure.Figure
        Two lattice panels titled by the combination's label; with the exact counts of
        :func:`geosynth.prepare`, the title says they are confidential (:data:`CONFIDENTIAL_NOTE`).

    Raises
    ------
    geosynth.errors.InputError
        ``fit`` is not a PaivaFit, or ``combination`` is not in ``[0, B)``.
    """
    from geosynth.data import CellCounts
    from geosynth.model.results import check_fit

    check_fit(fit)
    B = fit.counts.counts.shape[1]
    if isinstance(combination, bool) or not isinstance(combination, int | np.integer) \
            or not 0 <= combination < B:
        raise InputError(f"combination must be an int in [0, {B}), got {combination!r}")
    values = np.column_stack([fit.counts.counts[:, combination],
                              fit.posterior_mean_lambda()[:, combination]])
    label = fit.counts.combination_labels(sep=", ")[combination]
    exact = isinstance(fit.counts, CellCounts)
    if exact:
        label += f"\n(observed counts are {CONFIDENTIAL_NOTE})"
    return combination_panels(fit.grid, values,
                              ["observed counts" if exact else NOISY_COUNTS, "posterior mean λ"],
                              suptitle=label)


def ru_map(
    table: pd.DataFrame,
    risk: str,
    utility: str,
    frontier: list[str],
    chosen: str | None = None,
    risk_limit: float | None = None,
    x_label: str | None = None,
    y_label: str | None = None,
) -> Figure:
    """R-U confidentiality map (Duncan, Keller-McNulty & Stokes 2001): risk against utility.

    Parameters
    ----------
    table : pandas.DataFrame
        One row per candidate, indexed by label, with the ``risk`` and ``utility`` columns.
        Rows whose measures are missing (NaN) or beyond ±1e100 (which no axis can hold) are
        listed in the title, not drawn; an infinite measure is refused.
    risk, utility : str
        Columns drawn on the x and y axes.
    frontier : list of str
        Labels of the non-dominated candidates, joined by a line in this order.
    chosen : str, optional
        Label of the recommended candidate, circled.
    risk_limit : float, optional
        Drawn as a vertical dashed line; a finite number within ±1e100.
    x_label, y_label : str, optional
        Axis labels (default the column names). All text (labels, candidate names) is drawn as
        plain text: a ``$`` does not start matplotlib's mathtext.

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    geosynth.errors.InputError
        ``table`` is refused by :func:`geosynth._validation.check_ru_table` (not a DataFrame,
        a missing or repeated column, a repeated label, text or ±inf in a measure), or
        ``frontier`` is not a list (a string is one label, not
        a list of its characters), ``frontier`` or ``chosen`` holds a label that is no row of
        ``table``, or ``risk_limit`` is NaN, infinite or beyond ±1e100.
    TypeError
        ``risk_limit`` is not a real number.
    """
    import matplotlib.pyplot as plt

    both = check_ru_table(table, risk, utility)
    both = both[both.abs().le(MAX_CONTINUOUS).all(axis=1)]  # NaN, 1e308: no place on an axis
    if not isinstance(frontier, list | tuple):  # a str would be read as its characters
        raise InputError(f"frontier must be a list of candidate labels (rows of table), got "
                         f"{type(frontier).__name__}; wrap a single label in a list: [label]")
    unknown = [label for label in [*frontier, *([] if chosen is None else [chosen])]
               if label not in table.index]
    if unknown:  # a typo drew a map with no recommendation, and no word of it
        raise InputError(f"frontier and chosen must be labels of table's rows, but {unknown} "
                         f"are not (rows: {list(table.index)[:10]}); pass labels of table.index")
    if risk_limit is not None:
        risk_limit = check_real(risk_limit, "risk_limit")
        if not abs(risk_limit) <= MAX_CONTINUOUS:
            raise InputError(f"risk_limit must be a finite number (at most {MAX_CONTINUOUS:g} "
                             f"in size), got {risk_limit!r}; pass None for no limit line")
    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    ax.scatter(both[risk], both[utility], color="tab:blue", zorder=3)
    for label, (x, y) in both.iterrows():
        ax.annotate(_plain(label), (x, y), textcoords="offset points", xytext=(5, 5), fontsize=9)
    line = both.loc[[label for label in frontier if label in both.index]]
    if len(line) > 1:
        ax.plot(line[risk], line[utility], color="tab:orange", zorder=2,
                label="non-dominated frontier")
    if chosen is not None and chosen in both.index:
        ax.scatter([both.at[chosen, risk]], [both.at[chosen, utility]], s=250,
                   facecolors="none", edgecolors="tab:red", linewidths=2, zorder=4,
                   label=f"recommended: {_plain(chosen)}")
    if risk_limit is not None:
        ax.axvline(risk_limit, color="grey", linestyle="--", label=f"risk limit {risk_limit:g}")
    ax.margins(0.1)  # room for the labels of the points at the edges
    ax.set_xlabel(_plain(x_label or risk))
    ax.set_ylabel(_plain(y_label or utility))
    missing = [_plain(label) for label in table.index if label not in both.index]
    # Two lines: on one, the note ran past the 6.4-inch figure and lost its ")".
    title = f"R-U confidentiality map\n({RU_MAP_NOTE})"
    if missing:
        title += (f"\n(not drawn, a measure missing or beyond ±1e100: "
                  f"{', '.join(missing)})")
    ax.set_title(title)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    return fig
