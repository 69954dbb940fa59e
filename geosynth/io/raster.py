"""The posterior mean intensity of a fit as a north-up GeoTIFF, one band per combination."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from geosynth._atomic import (
    AtomicOutputs,
    drop_staged,
    remove_stale_staging,
    stage_output,
    transaction_overwrite,
)
from geosynth._validation import check_no_nul
from geosynth.errors import InputError
from geosynth.io._files import check_target, printable, warn_exact_intensity, warn_without_crs
from geosynth.lattice import Grid

if TYPE_CHECKING:
    from geosynth.model.results import PaivaFit

__all__ = ["write_intensity_geotiff"]

# Cell edges may differ from xmin + k * dx by float rounding (the last edge of a lattice built
# from a shape is set to xmax exactly); anything beyond this fraction of a cell is not regular.
_REGULAR_RTOL = 1e-6

# GDAL keeps tags and band descriptions in XML, which cannot hold these C0 controls: it drops
# them, as it drops the whitespace a value begins with and a tag whose value is empty.
_LOST_CHARACTERS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f]")
_LEADING_SPACE = " \t\n\r"


def write_intensity_geotiff(
    fit: PaivaFit, path: str | os.PathLike, *, overwrite: bool = False,
    outputs: AtomicOutputs | None = None,
) -> Path:
    """Write the posterior mean intensity of a fit as a north-up float32 GeoTIFF.

    Parameters
    ----------
    fit : geosynth.PaivaFit
        Fitted model on a regular lattice (:class:`geosynth.Grid`).
    path : str or os.PathLike
        The GeoTIFF to write.
    overwrite : bool, default False
        Replace an existing file. With ``outputs``, whether files may be replaced is
        ``outputs.overwrite`` (``overwrite=True`` is then refused unless it agrees).
    outputs : geosynth._atomic.AtomicOutputs, optional
        A transaction of the caller (e.g. the command line, which also writes a release): the
        GeoTIFF is staged into it and moved into place by the caller's commit, together with
        the other files. Without it, the GeoTIFF is moved into place at once.

    Returns
    -------
    pathlib.Path
        ``path`` (with ``outputs``: where the GeoTIFF will be once committed).

    Raises
    ------
    geosynth.errors.InputError
        ``path`` is not a file path or does not end in .tif or .tiff, ``overwrite`` is not a
        bool, ``fit`` is not a PaivaFit,
        its lattice is not a :class:`~geosynth.Grid` or its cells are not equally spaced, an
        attribute name contains ``=`` (it cannot name a band tag), an attribute name or level
        is empty, begins with whitespace or holds a control character (GDAL would store it
        altered or not at all), the posterior mean intensity is NaN, infinite or beyond the
        float32 range in a cell, or ``path`` exists and ``overwrite`` is False (or
        ``overwrite=True`` with ``outputs`` that may not overwrite).
    geosynth.errors.GridError
        The lattice is hexagonal or areal (a GeoTIFF needs square cells).

    Notes
    -----
    One band per attribute combination ``b`` (band ``b + 1``) holds
    ``fit.posterior_mean_lambda()[:, b]``, the expected number of records per cell; the band
    description is the combination label (``fit.counts.combination_labels()``, "y=1,x1=2,x2=3")
    and the band tags hold each attribute's level. Pixels are the lattice cells: raster row
    ``r`` is lattice row ``nrows - 1 - r`` (the lattice counts rows from the south, a GeoTIFF
    from the north), the transform is ``from_origin(xmin, ymax, dx, dy)`` and the CRS is the
    grid's. Cells dropped by clipping to a region are NaN, the nodata value.

    The file holds what ``geosynth.io.write_release(..., include_intensity=True)`` publishes
    in the grid layer of a release, and no record: it is written readable by others (0666
    less the umask). Publish it only if the posterior mean intensity may be published: where
    cells hold few records, λ follows their counts closely (a
    :class:`~geosynth.errors.PrivacyLeakWarning` says how closely, for a fit of exact counts).
    """
    import rasterio

    from geosynth.model.results import check_fit

    _check_path(path)
    replace = transaction_overwrite(outputs, overwrite)
    check_fit(fit)
    grid = fit.grid
    _check_regular(grid)
    _check_tag_names(fit.counts.attributes)
    _check_tag_texts(fit.counts.combos, fit.counts.attributes)
    lam = np.asarray(fit.posterior_mean_lambda())
    _check_float32(lam)
    target = Path(path)
    check_target(target, replace)
    _check_suffix(target)
    warn_exact_intensity(fit, lam, printable(target.name), stacklevel=2)
    warn_without_crs(grid.crs, printable(target.name), stacklevel=2)
    labels = fit.counts.combination_labels()
    nrows, ncols = grid.shape
    bands = np.full((lam.shape[1], nrows, ncols), np.nan, dtype=np.float32)
    bands[:, nrows - 1 - np.asarray(grid.cell_row), np.asarray(grid.cell_col)] = lam.T
    xmin, _, _, ymax = grid.bounds
    dx, dy = grid.cell_size
    crs = None if grid.crs is None else rasterio.crs.CRS.from_wkt(grid.crs.to_wkt())
    profile = {
        "driver": "GTiff",
        "width": ncols,
        "height": nrows,
        "count": lam.shape[1],
        "dtype": "float32",
        "crs": crs,
        "transform": rasterio.transform.Affine(dx, 0.0, xmin, 0.0, -dy, ymax),
        "nodata": np.nan,
        "compress": "deflate",
    }
    remove_stale_staging(target)
    transaction = AtomicOutputs(overwrite=replace) if outputs is None else outputs
    staged: list[Path] = []
    try:
        staged.append(stage_output(transaction, target, private=False,
                                   example="intensity.tif"))
        _write_bands(staged[0], profile, bands, fit, labels)
        if outputs is None:
            transaction.commit()
    except FileExistsError as err:  # created by another process during the write
        drop_staged(transaction, outputs, staged)
        raise InputError(f"{err.filename} {err.strerror}") from None
    except BaseException:
        drop_staged(transaction, outputs, staged)
        raise
    return target


def _write_bands(
    tmp: Path, profile: dict[str, Any], bands: np.ndarray, fit: PaivaFit, labels: list[str]
) -> None:
    """Write the bands, tags and band descriptions of the GeoTIFF at ``tmp``."""
    import rasterio

    import geosynth

    with rasterio.open(tmp, "w", **profile) as dst:
        dst.write(bands)
        dst.update_tags(
            geosynth_version=geosynth.__version__,
            quantity="posterior mean intensity (expected records per cell)",
            attributes=",".join(fit.counts.attributes),
        )
        combos = fit.counts.combos
        for b, label in enumerate(labels):
            dst.set_band_description(b + 1, label)
            dst.update_tags(
                b + 1, **{str(a): str(combos[a].iloc[b]) for a in fit.counts.attributes}
            )


def _check_path(path: Any) -> None:
    """Refuse a ``path`` that is not a file path, or holds a NUL character."""
    if not isinstance(path, str | os.PathLike):
        raise InputError(
            f"path must be a file path (str or pathlib.Path), got {type(path).__name__}; pass "
            "the name of the GeoTIFF to write, such as 'intensity.tif'"
        )
    check_no_nul(os.fspath(path), "path")


def _check_suffix(target: Path) -> None:
    """Refuse a name of another format: "c.gpkg" was written as a GeoTIFF under that name.

    After :func:`check_target`, which explains a folder, a pipe or a name too long first.
    """
    if target.suffix.lower() not in (".tif", ".tiff"):
        raise InputError(f"path {printable(str(target))!r} must end in .tif or .tiff: the "
                         "intensity surface is a GeoTIFF; name it "
                         f"{printable(target.with_suffix('.tif').name)}")


def _check_float32(lam: np.ndarray) -> None:
    """Refuse an intensity a float32 band cannot hold as a value.

    NaN is the nodata value (a cell outside the region) and a value past the float32 range was
    written as infinity, so either would have been a wrong surface, silently.
    """
    bad = ~(np.abs(lam) <= np.finfo(np.float32).max)  # also NaN
    if bad.any():
        cells = np.flatnonzero(bad.any(axis=1))
        raise InputError(
            f"fit: the posterior mean intensity is NaN, infinite or beyond the float32 range "
            f"in {cells.size} cell(s) (cell ids {cells[:10].tolist()}), which a float32 "
            "GeoTIFF would show as nodata (outside the region) or infinity; the fit diverged "
            "or was edited: check it (fit.summary()) and fit the model again"
        )


def _check_tag_names(attributes: Any) -> None:
    """Refuse attribute names that cannot name a band tag (GDAL stores tags as ``name=value``).

    A tag ``grp=x`` of level ``a`` was read back as the tag ``grp`` of level ``x=a``; an
    attribute ``a,b`` could not be told from two attributes ``a`` and ``b`` in the dataset's
    ``attributes`` tag, which lists them separated by commas.
    """
    for attribute in attributes:
        if "=" in str(attribute):
            raise InputError(
                f"attribute {printable(attribute)!r} contains '=', which cannot be in the name "
                "of a GeoTIFF band tag (GDAL stores tags as name=value and would read back "
                "another name and level); rename the column before geosynth.prepare"
            )
        if "," in str(attribute):
            raise InputError(
                f"attribute {printable(attribute)!r} contains ',', which separates the "
                "attributes in the GeoTIFF's 'attributes' tag (it would read as two); rename "
                "the column before geosynth.prepare"
            )


def _check_tag_texts(combos: Any, attributes: Any) -> None:
    """Refuse attribute names and levels that GDAL would store altered, or not at all.

    A level ``" b"`` was read back from its band tag as ``"b"`` (two levels ``"b"`` and
    ``" b"`` as the same one), an empty level as no tag, a control character as nothing.
    """
    for attribute in attributes:
        texts = [(str(attribute), "its name")]
        texts += [(str(level), f"its level {printable(level)!r}")
                  for level in dict.fromkeys(combos[attribute].tolist())]
        for text, what in texts:
            problem = _tag_text_problem(text)
            if problem is not None:
                raise InputError(
                    f"attribute {printable(attribute)!r}: {what} {problem}, which a GeoTIFF "
                    "band tag or description does not keep (GDAL would read back another "
                    "text or none); recode it (e.g. strip the spaces) before geosynth.prepare"
                )


def _tag_text_problem(text: str) -> str | None:
    """Say why GDAL would not keep ``text`` as it is in a tag, or None if it would."""
    if not text:
        return "is empty"
    if text[0] in _LEADING_SPACE:
        return "begins with whitespace"
    if _LOST_CHARACTERS.search(text):
        return "holds a control character"
    return None


def _check_regular(grid: Any) -> None:
    """Raise InputError unless ``grid`` is a Grid whose cells lie on regular spacing."""
    if not isinstance(grid, Grid):
        raise InputError(
            f"the fit's lattice is a {type(grid).__name__}, not a regular geosynth.Grid; a "
            "GeoTIFF needs a regular lattice (export the grid layer with write_release instead)"
        )
    grid.require_square("a GeoTIFF intensity surface")
    xmin, ymin, _, _ = grid.bounds
    dx, dy = grid.cell_size
    col = np.asarray(grid.cell_col, dtype=np.float64)
    row = np.asarray(grid.cell_row, dtype=np.float64)
    boxes = grid.cell_bounds(np.arange(grid.n_cells))
    expected = np.column_stack(
        [xmin + col * dx, ymin + row * dy, xmin + (col + 1) * dx, ymin + (row + 1) * dy]
    )
    tolerance = _REGULAR_RTOL * min(dx, dy)
    if not np.allclose(boxes, expected, rtol=0, atol=tolerance):
        raise InputError(
            "the fit's lattice is not regular (its cell edges are not equally spaced); a "
            "GeoTIFF needs a regular lattice (export the grid layer with write_release instead)"
        )
