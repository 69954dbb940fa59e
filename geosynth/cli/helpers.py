"""Helpers shared by the ``geosynth`` subcommands: output checks, seeds, reports, figures."""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from geosynth.errors import InputError

if TYPE_CHECKING:
    import geopandas as gpd
    import pandas as pd
    from matplotlib.figure import Figure

    from geosynth.lattice import Grid
    from geosynth.model import PaivaFit

__all__ = [
    "RHAT_LIMIT",
    "check_outputs",
    "check_columns",
    "check_projected",
    "show_progress",
    "derive_seeds",
    "read_polygons",
    "build_grid",
    "write_text",
    "save_figure",
    "text_block",
    "describe_lattice",
    "fit_diagnostics",
]

#: R-hat above this value is reported as a convergence problem.
RHAT_LIMIT = 1.05


def check_outputs(
    outputs: Mapping[str, Any], overwrite: bool, inputs: Mapping[str, Any] | None = None
) -> dict[str, Path]:
    """Refuse, before any work, outputs that exist (without ``--overwrite``) or coincide.

    Parameters
    ----------
    outputs : mapping of str to path or None
        Option name (as the user typed it, e.g. ``"--map"``) to the file it names; None entries
        (options not given) are skipped.
    overwrite : bool
        Whether ``--overwrite`` was given.
    inputs : mapping of str to path or None, optional
        The command's input files by option or argument name; no output may replace one, even
        with ``--overwrite``.

    Returns
    -------
    dict of str to pathlib.Path
        The given outputs.

    Raises
    ------
    geosynth.errors.InputError
        An output is a directory, two options name the same file, an output is an input, or
        outputs exist and ``overwrite`` is False (all of them are named).
    """
    given = {name: Path(path) for name, path in outputs.items() if path is not None}
    seen = {Path(path).resolve(): name for name, path in (inputs or {}).items()
            if path is not None}
    for name, path in given.items():
        if path.is_dir():
            raise InputError(f"{name} {str(path)!r} is a directory; give a file name")
        key = path.resolve()
        if key in seen:
            raise InputError(f"{seen[key]} and {name} name the same file {str(path)!r}; give "
                             "each output its own file")
        seen[key] = name
    existing = [f"{path} ({name})" for name, path in given.items() if path.exists()]
    if existing and not overwrite:
        raise InputError(
            f"{', '.join(existing)} already exist{'s' if len(existing) == 1 else ''}; pass "
            "--overwrite to replace, or choose other file names (nothing was written)"
        )
    return given


def check_columns(frame: gpd.GeoDataFrame, name: str,
                  columns: Mapping[str, Sequence[str] | str | None]) -> None:
    """Refuse a file ``name`` that lacks a column named by an option.

    Parameters
    ----------
    frame : geopandas.GeoDataFrame
        The file's contents.
    name : str
        How to call the file in the message.
    columns : mapping of str to column names
        Option (e.g. ``"--attributes"``) to the column(s) it names; None entries are skipped.

    Raises
    ------
    geosynth.errors.InputError
        Names the option, the missing columns and the columns of the file.
    """
    available = [c for c in frame.columns if c != frame.geometry.name]
    for option, wanted in columns.items():
        wanted = [] if wanted is None else [wanted] if isinstance(wanted, str) else list(wanted)
        missing = [c for c in wanted if c not in available]
        if missing:
            raise InputError(f"{option}: {name} has no column {', '.join(map(repr, missing))}; "
                             f"its columns are {available}")


def check_projected(points: gpd.GeoDataFrame, name: str) -> None:
    """Refuse points without a CRS or in a geographic CRS (degrees).

    Raises
    ------
    geosynth.errors.CRSError
        With the UTM zone to reproject to, when it can be estimated.
    """
    from geosynth.errors import CRSError

    if points.crs is None:
        raise CRSError(f"{name} has no CRS; pass --crs with the CRS of its coordinates")
    if points.crs.is_geographic:
        try:
            utm = points.estimate_utm_crs().to_string()
        except (RuntimeError, ValueError):  # no valid coordinates to estimate from
            utm = "EPSG:<UTM zone>"
        raise CRSError(
            f"{name} is in the geographic CRS {points.crs.to_string()} (degrees); the lattice "
            f"needs a projected CRS in metres: reproject the file first, e.g. to {utm} "
            f"(ogr2ogr -t_srs {utm} projected.gpkg {name})"
        )


def show_progress(ctx: click.Context) -> bool:
    """Whether progress bars are wanted (not ``geosynth -q``)."""
    return not (ctx.obj or {}).get("quiet", False)


def derive_seeds(seed: int | None, names: Sequence[str]) -> tuple[int, dict[str, int]]:
    """Seed of each step of a run, derived from one master seed.

    Parameters
    ----------
    seed : int or None
        The ``--seed`` of the command; None draws a fresh one from :mod:`secrets`, so that the
        owner of the data can still reproduce the release from the audit file.
    names : sequence of str
        The steps, e.g. ``["fit", "synthesize", "public"]``.

    Returns
    -------
    seed : int
        The master seed (given or drawn).
    seeds : dict of str to int
        ``{"seed": seed, name: derived seed, ...}``, each derived seed a 63-bit int from
        :class:`numpy.random.SeedSequence` of the master seed (independent streams).
    """
    import numpy as np

    if seed is None:
        seed = secrets.randbits(63)
    state = np.random.SeedSequence(seed).generate_state(len(names), dtype=np.uint64)
    derived = {name: int(value >> np.uint64(1)) for name, value in zip(names, state, strict=True)}
    return seed, {"seed": seed, **derived}


def read_polygons(path: str | os.PathLike, option: str) -> gpd.GeoDataFrame:
    """Read a polygon layer (study region or excluded areas) named by ``option``.

    Raises
    ------
    geosynth.errors.InputError
        The file cannot be read, is empty, or holds geometries other than polygons.
    """
    import geopandas as gpd
    import pyogrio

    source = Path(path)
    try:
        frame = gpd.read_file(source, engine="pyogrio")
    except (pyogrio.errors.DataSourceError, pyogrio.errors.DataLayerError, ValueError) as err:
        raise InputError(f"cannot read {option} {source.name}: {err}") from err
    if not isinstance(frame, gpd.GeoDataFrame) or len(frame) == 0:
        raise InputError(f"{option} {source.name} has no polygon; give a polygon layer")
    kinds = sorted(set(frame.geom_type.dropna()) - {"Polygon", "MultiPolygon"})
    if kinds:
        raise InputError(f"{option} {source.name} holds {kinds} geometries; give a polygon layer "
                         "(buffer points or lines first)")
    return frame


def build_grid(
    points: gpd.GeoDataFrame,
    shape: tuple[int, int] | None,
    cell_size: float | None,
    region: gpd.GeoDataFrame | None = None,
    exclude: gpd.GeoDataFrame | None = None,
) -> Grid:
    """Build the lattice over the region (if given) or over the bounds of the points."""
    from geosynth.lattice import Grid

    if region is None:
        return Grid.from_points(points, shape=shape, cell_size=cell_size, exclude=exclude)
    if region.crs is not None and points.crs is not None and not region.crs.equals(points.crs):
        region = region.to_crs(points.crs)
    return Grid.regular(tuple(region.total_bounds), shape=shape, cell_size=cell_size,
                        crs=points.crs, region=region, exclude=exclude)


def write_text(path: str | os.PathLike, text: str, overwrite: bool) -> Path:
    """Write ``text`` to ``path`` atomically (UTF-8)."""
    from geosynth._atomic import atomic_path

    with atomic_path(path, overwrite=overwrite) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


def save_figure(figure: Figure, path: str | os.PathLike, overwrite: bool, dpi: int = 100) -> Path:
    """Save a matplotlib figure as PNG atomically and close it."""
    import matplotlib.pyplot as plt

    from geosynth._atomic import atomic_path

    try:
        with atomic_path(path, overwrite=overwrite) as tmp:
            figure.savefig(tmp, dpi=dpi, format="png")
    finally:
        plt.close(figure)
    return Path(path)


def text_block(table: pd.DataFrame | pd.Series, float_format: str = "{:,.3f}") -> str:
    """Format a table as a fenced fixed-width Markdown block."""
    text = table.to_string(float_format=float_format.format)
    return f"```\n{text}\n```\n"


def describe_lattice(grid: Grid) -> str:
    """One line: shape, cell size, number of cells, contiguity, clipping."""
    rows, cols = grid.shape
    dx, dy = grid.cell_size
    clipped = ", clipped to the region/exclusions" if grid.is_clipped else ""
    return (f"{rows}x{cols} cells of {dx:,.0f} x {dy:,.0f} m ({grid.n_cells} habitable, "
            f"{grid.contiguity} contiguity, {grid.n_components} component(s){clipped})")


def fit_diagnostics(fit: PaivaFit) -> tuple[pd.DataFrame, float]:
    """Return the fit's arviz summary and its largest R-hat (NaN when undefined, e.g. one chain)."""
    import numpy as np

    summary = fit.summary()
    r_hat = summary["r_hat"].to_numpy(dtype=float) if "r_hat" in summary else np.array([])
    finite = r_hat[np.isfinite(r_hat)]
    return summary, float(finite.max()) if finite.size else float("nan")
