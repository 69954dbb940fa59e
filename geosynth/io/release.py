"""Release GeoPackages: write and read the public releases, lattice and metadata of a run.

A release is one GeoPackage: layers ``synthetic_1`` .. ``synthetic_m`` (the synthetic
records), ``grid`` (the lattice cells, optionally with the posterior mean intensity) and
``metadata`` (a non-spatial ``key, value`` table of JSON values). Seeds go to a private audit
file ``<path>.audit.json`` beside it.

What a release file may hold. Everything in the GeoPackage is meant to be published, so it never
holds original coordinates, the cells of the original records, the index of the confidential
input, or a seed: pass releases through :func:`geosynth.to_public` first. :func:`write_release`
also never writes the index, refuses columns named like record or cell identifiers
(:data:`ID_COLUMNS`) and, given ``original_index=``, columns whose values are labels of the
confidential input. Every file is written to a temporary file beside the target and renamed
over it, so a failed write leaves no partial file and keeps an existing one.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import warnings
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import geopandas as gpd
import numpy as np
import pandas as pd
import pyogrio
import pyproj
import shapely

from geosynth._atomic import atomic_path
from geosynth._messages import describe_rows
from geosynth.errors import CRSError, InputError, PrivacyLeakWarning
from geosynth.io._files import POINT_TYPE, check_target, existing_file
from geosynth.lattice import Grid

if TYPE_CHECKING:
    from geosynth.data import CellCounts
    from geosynth.model.fit import PaivaFit

__all__ = [
    "ReleaseFile",
    "write_release",
    "read_release",
    "audit_path",
    "combination_labels",
    "RELEASE_LAYER",
    "GRID_LAYER",
    "METADATA_LAYER",
    "ID_COLUMNS",
    "RESERVED_KEYS",
]

#: Name of release layer ``k`` (1-based): ``RELEASE_LAYER.format(k)``.
RELEASE_LAYER = "synthetic_{}"
#: Layer of the lattice cells.
GRID_LAYER = "grid"
#: Non-spatial layer of ``key, value`` rows, the values JSON.
METADATA_LAYER = "metadata"
#: Column names (compared case-insensitively) that identify records or their cells; a release
#: column with one of these names is refused.
ID_COLUMNS = frozenset(
    {
        "index",
        "level_0",
        "fid",
        "cell",
        "cell_id",
        "record_cell",
        "record_index",
        "record_combo",
        "original_index",
    }
)
#: Metadata keys :func:`write_release` computes itself; ``metadata=`` cannot set them.
RESERVED_KEYS = frozenset(
    {
        "format",
        "format_version",
        "geosynth_version",
        "created_utc",
        "crs",
        "m",
        "layers",
        "n_records",
        "lattice",
        "model",
        "priors",
        "intensity",
    }
)

_FORMAT = "geosynth-release"
_FORMAT_VERSION = 1
_AUDIT_SUFFIX = ".audit.json"
_RELEASE_LAYER_RE = re.compile(r"^synthetic_(\d+)$")


@dataclass
class ReleaseFile:
    """The contents of a release GeoPackage, as read by :func:`read_release`.

    Attributes
    ----------
    releases : list of geopandas.GeoDataFrame
        Layers ``synthetic_1`` .. ``synthetic_m`` in order, each with a fresh ``RangeIndex``.
    grid : geopandas.GeoDataFrame or None
        The ``grid`` layer (cell polygons, ``lambda_*`` columns if written with the intensity).
    metadata : dict
        The ``metadata`` layer, each value decoded from JSON (empty if the layer is absent).
    layers : list of str
        Every layer of the file, in file order.
    """

    releases: list[gpd.GeoDataFrame]
    grid: gpd.GeoDataFrame | None
    metadata: dict[str, Any]
    layers: list[str] = field(default_factory=list)

    @property
    def m(self) -> int:
        """Number of releases."""
        return len(self.releases)


def audit_path(path: str | os.PathLike) -> Path:
    """Return the private audit file ``<path>.audit.json`` of the release at ``path``."""
    return Path(str(Path(path)) + _AUDIT_SUFFIX)


def write_release(
    path: str | os.PathLike,
    releases: Sequence[gpd.GeoDataFrame],
    *,
    grid: Grid | None = None,
    fit: PaivaFit | None = None,
    include_intensity: bool = False,
    metadata: Mapping[str, Any] | None = None,
    seeds: Mapping[str, Any] | None = None,
    overwrite: bool = False,
    original_index: pd.Index | Sequence | None = None,
) -> Path:
    """Write ``m`` public releases, the lattice and the metadata to one GeoPackage.

    Parameters
    ----------
    path : str or os.PathLike
        The GeoPackage to write (GeoPackage whatever the extension; ``.gpkg`` is customary).
    releases : sequence of geopandas.GeoDataFrame
        The releases to publish, each the output of :func:`geosynth.to_public` (or a public
        differentially private release). They are written as layers ``synthetic_1`` ..
        ``synthetic_m`` with their columns as given, never their index. All must be point
        layers in one CRS.
    grid : geosynth.Grid, optional
        The lattice, written as layer ``grid`` (one polygon per cell with the columns of
        :attr:`Grid.cells`). Defaults to ``fit.grid`` when ``fit`` is given.
    fit : geosynth.PaivaFit, optional
        The fit behind the releases: its model, priors and sampler settings go to the metadata.
    include_intensity : bool, default False
        Add to the ``grid`` layer one column ``lambda_<combination>`` (e.g.
        ``lambda_y=1,x1=2``) per attribute combination with the posterior mean intensity
        (expected records per cell). Needs ``fit``.
    metadata : Mapping, optional
        Extra JSON-serialisable metadata; may set ``method``, ``epsilon`` and ``ledger`` (the
        ε ledger, e.g. ``Accountant.to_dict()``) and any new key, not the keys the writer
        computes (:data:`RESERVED_KEYS`) nor any key naming a seed.
    seeds : Mapping, optional
        Seeds used to make the releases (name -> int, SeedSequence, list, ...). They are written
        to the private audit file ``<path>.audit.json`` (:func:`audit_path`, mode 0600) together
        with the SHA-256 of the GeoPackage, never into the GeoPackage.
    overwrite : bool, default False
        Replace an existing file (and audit file). When replacing a release without ``seeds``, a
        stale audit file of the old release is removed.
    original_index : pandas.Index or sequence, optional
        Index of the confidential input. If given, a release column whose values are distinct
        labels of this index (or which bears its name), and a release whose non-default index
        consists of these labels, are refused.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    geosynth.errors.InputError
        ``path`` exists and ``overwrite`` is False; ``releases`` is empty or not a sequence of
        point GeoDataFrames; a release has an identifier column (:data:`ID_COLUMNS`, an internal
        ``_`` column, an extra geometry column, or labels of ``original_index``); releases or
        grid disagree on the CRS; ``grid``/``fit`` have the wrong type or disagree;
        ``include_intensity`` without ``fit``; invalid ``metadata`` or ``seeds``.

    Warns
    -----
    geosynth.errors.PrivacyLeakWarning
        A release has a non-default index, i.e. is not the output of :func:`geosynth.to_public`:
        its index is not written, but its row order may still follow the confidential file.

    Notes
    -----
    The ``metadata`` layer holds ``format``, ``format_version``, ``geosynth_version``,
    ``created_utc`` (ISO 8601), ``crs`` (authority string such as ``"EPSG:31983"``, else WKT),
    ``m``, ``layers``, ``n_records`` (per release), ``method``, ``lattice`` (shape, cell size,
    bounds, contiguity, number of cells and components, whether clipped), ``model`` and
    ``priors`` (with ``fit``), ``epsilon`` and ``ledger`` (from ``metadata`` or, for
    differentially private releases, ``attrs["geosynth"]``), ``intensity``, and the extra keys
    of ``metadata``. Each value is a JSON text (``null`` when unknown).

    Examples
    --------
    >>> public = [geosynth.to_public(r, seed=k) for k, r in enumerate(releases)]  # doctest: +SKIP
    >>> write_release("release.gpkg", public, fit=fit, seeds={"synthesize": 3})  # doctest: +SKIP
    """
    target = Path(path)
    frames = _check_releases(releases, original_index)
    lattice, fit = _check_grid_and_fit(grid, fit, include_intensity)
    crs = _common_crs(frames, lattice)
    audit = audit_path(target)
    check_target(target, overwrite)
    if seeds is not None:
        check_target(audit, overwrite)
    table = _metadata_table(releases, frames, lattice, fit, include_intensity, metadata, crs)
    audit_record = None if seeds is None else _audit_record(target, seeds)
    cells = None if lattice is None else _grid_layer(lattice, fit if include_intensity else None)

    with ExitStack() as stack:
        tmp = stack.enter_context(atomic_path(target, overwrite=True))
        for k, frame in enumerate(frames, start=1):
            _write_layer(frame, tmp, RELEASE_LAYER.format(k))
        if cells is not None:
            _write_layer(cells, tmp, GRID_LAYER)
        _write_layer(table, tmp, METADATA_LAYER)
        if audit_record is not None:
            audit_record["sha256"] = _sha256(tmp)
            tmp_audit = stack.enter_context(atomic_path(audit, overwrite=True))
            tmp_audit.write_text(json.dumps(audit_record, indent=2) + "\n", encoding="utf-8")
            os.chmod(tmp_audit, 0o600)
    if audit_record is None and audit.exists():
        audit.unlink()  # it described the release just replaced
    return target


def _write_layer(frame: pd.DataFrame, path: Path, layer: str) -> None:
    """Add ``frame`` as ``layer`` to the GeoPackage at ``path`` (created by the first call)."""
    options: dict[str, Any] = {}
    if isinstance(frame, gpd.GeoDataFrame) and len(frame) == 0:
        options["geometry_type"] = "Point" if layer != GRID_LAYER else "Polygon"
    pyogrio.write_dataframe(frame, path, layer=layer, driver="GPKG", **options)




def _check_releases(releases: Any, original_index: Any) -> list[gpd.GeoDataFrame]:
    """Validate the releases and return them ready to write (index dropped)."""
    if isinstance(releases, pd.DataFrame) or not isinstance(releases, Sequence):
        raise InputError(
            f"releases must be a list of GeoDataFrames, got {type(releases).__name__}; wrap a "
            "single release in a list: [release]"
        )
    if len(releases) == 0:
        raise InputError("releases is empty; pass at least one release")
    original = None if original_index is None else pd.Index(original_index)
    frames = []
    for k, release in enumerate(releases, start=1):
        name = f"release {k} ({RELEASE_LAYER.format(k)})"
        if not isinstance(release, gpd.GeoDataFrame):
            raise InputError(
                f"{name} must be a geopandas.GeoDataFrame, got {type(release).__name__}"
            )
        try:
            geometry = release.geometry.name
        except AttributeError as err:
            raise InputError(
                f"{name} has no active geometry column; pass the releases of geosynth.to_public"
            ) from err
        _check_release_columns(release, geometry, name, original)
        _check_release_index(release, name, original)
        geoms = np.asarray(release.geometry.array, dtype=object)
        type_id = shapely.get_type_id(geoms)
        wrong = type_id != POINT_TYPE
        if wrong.any():
            raise InputError(
                f"{name} has {int(wrong.sum())} missing or non-point geometries "
                f"({describe_rows(release.index, wrong)}); a release holds one synthetic point "
                "per record"
            )
        frames.append(release.reset_index(drop=True))
    return frames


def _check_release_columns(
    release: gpd.GeoDataFrame, geometry: str, name: str, original: pd.Index | None
) -> None:
    for column in release.columns:
        if column == geometry:
            continue
        label = str(column)
        fix = "drop it (release.drop(columns=...)) and pass geosynth.to_public(release)"
        if label.lower() in ID_COLUMNS:
            raise InputError(
                f"{name} has a column {label!r}, which identifies records or their cells and "
                f"must not be published; {fix}"
            )
        if label.startswith("_"):
            raise InputError(f"{name} has an internal column {label!r}; {fix}")
        if isinstance(release[column].dtype, gpd.array.GeometryDtype):
            raise InputError(
                f"{name} has a second geometry column {label!r} (only the synthetic points may "
                f"be published); {fix}"
            )
        if original is None:
            continue
        if original.name is not None and column == original.name:
            raise InputError(
                f"{name} has a column {label!r}, the name of the original index; {fix}"
            )
        values = release[column]
        if len(values) >= 2 and values.is_unique and values.isin(original).all():
            raise InputError(
                f"{name}: the values of column {label!r} are distinct labels of the original "
                f"index (original_index), so they link synthetic to confidential records; {fix}"
            )


def _check_release_index(release: gpd.GeoDataFrame, name: str, original: pd.Index | None) -> None:
    index = release.index
    if isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1:
        return
    if original is not None and len(index) > 0 and index.isin(original).all():
        raise InputError(
            f"{name} is indexed by labels of the original index (original_index): it is the "
            "internal output of synthesize, whose index and row order link synthetic to "
            "confidential records; pass geosynth.to_public(release)"
        )
    warnings.warn(
        f"{name} has a non-default index: it is not written, but its row order may still follow "
        "the confidential file; publish geosynth.to_public(release) instead",
        PrivacyLeakWarning,
        stacklevel=4,
    )


def _check_grid_and_fit(
    grid: Any, fit: Any, include_intensity: bool
) -> tuple[Grid | None, PaivaFit | None]:
    from geosynth.model.fit import PaivaFit

    if fit is not None and not isinstance(fit, PaivaFit):
        raise InputError(
            f"fit must be the geosynth.PaivaFit of PaivaModel().fit, got {type(fit).__name__}"
        )
    if grid is not None and not isinstance(grid, Grid):
        raise InputError(f"grid must be a geosynth.Grid, got {type(grid).__name__}")
    if not isinstance(include_intensity, bool | np.bool_):
        raise InputError(f"include_intensity must be True or False, got {include_intensity!r}")
    if include_intensity and fit is None:
        raise InputError(
            "include_intensity=True needs fit= (the posterior mean intensity comes from the "
            "fit); pass fit or leave include_intensity False"
        )
    if fit is None:
        return grid, None
    if grid is None:
        return fit.grid, fit
    if grid is not fit.grid and not _same_lattice(grid, fit.grid):
        raise InputError(
            f"grid {grid!r} is not the lattice of fit ({fit.grid!r}); omit grid to write fit.grid"
        )
    return grid, fit


def _same_lattice(a: Grid, b: Grid) -> bool:
    return (
        a.shape == b.shape
        and a.n_cells == b.n_cells
        and np.allclose(a.bounds, b.bounds)
        and np.array_equal(a.cell_row, b.cell_row)
        and np.array_equal(a.cell_col, b.cell_col)
    )


def _common_crs(frames: list[gpd.GeoDataFrame], grid: Grid | None) -> pyproj.CRS | None:
    crs = frames[0].crs
    for k, frame in enumerate(frames[1:], start=2):
        if not _crs_equal(frame.crs, crs):
            raise CRSError(
                f"release {k} has CRS {_crs_label(frame.crs)} but release 1 has "
                f"{_crs_label(crs)}; reproject with release.to_crs(...) so all share one CRS"
            )
    if grid is not None and not _crs_equal(grid.crs, crs):
        raise CRSError(
            f"the grid has CRS {_crs_label(grid.crs)} but the releases have {_crs_label(crs)}; "
            "releases must be in the CRS of the lattice they were made on"
        )
    return crs


def _crs_equal(a: pyproj.CRS | None, b: pyproj.CRS | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return a.equals(b, ignore_axis_order=True)


def _crs_label(crs: pyproj.CRS | None) -> str | None:
    """Return the authority string (``"EPSG:31983"``) of ``crs``, else its WKT (None: no CRS)."""
    if crs is None:
        return None
    authority = crs.to_authority()
    return ":".join(authority) if authority else crs.to_wkt()


def combination_labels(counts: CellCounts) -> list[str]:
    """Labels ``"y=1,x1=2"`` of the attribute combinations of ``counts``, in column order.

    Parameters
    ----------
    counts : geosynth.data.CellCounts
        Prepared counts (``fit.counts``).

    Returns
    -------
    list of str
        One label per combination ``b`` (row of ``counts.combos``).
    """
    combos = counts.combos
    return [
        ",".join(f"{attribute}={combos[attribute].iloc[b]}" for attribute in counts.attributes)
        for b in range(len(combos))
    ]


def _grid_layer(grid: Grid, fit: PaivaFit | None) -> gpd.GeoDataFrame:
    cells = grid.cells.copy()
    if fit is not None:
        lam = fit.posterior_mean_lambda()
        for b, label in enumerate(combination_labels(fit.counts)):
            cells[f"lambda_{label}"] = lam[:, b]
    return cells


def _lattice_description(grid: Grid) -> dict[str, Any]:
    return {
        "shape": list(grid.shape),
        "cell_size": list(grid.cell_size),
        "bounds": list(grid.bounds),
        "contiguity": grid.contiguity,
        "n_cells": grid.n_cells,
        "n_components": grid.n_components,
        "is_clipped": grid.is_clipped,
        "row_order": "row 0 is the southernmost row; cell ids are row-major",
    }


def _model_description(fit: PaivaFit) -> dict[str, Any]:
    model = fit.model
    return {
        "name": type(model).__name__,
        "beta_prior": model.beta_prior,
        "beta_sampler": model.beta_sampler,
        "effects": model.effects,
        "chains": fit.n_chains,
        "draws_per_chain": fit.n_draws,
        "burn_in": fit.burn_in,
        "thin": fit.thin,
        "noise_scale": fit.noise_scale,
        "attributes": list(fit.counts.attributes),
        "continuous": fit.counts.continuous,
        "combinations": combination_labels(fit.counts),
    }


def _release_attrs(releases: Sequence[gpd.GeoDataFrame], key: str) -> Any:
    """Return ``attrs["geosynth"][key]`` of the releases (the last one set; None if absent)."""
    values = []
    for release in releases:
        info = release.attrs.get("geosynth") if isinstance(release.attrs, dict) else None
        if isinstance(info, Mapping) and info.get(key) is not None:
            values.append(info[key])
    return values[-1] if values else None


def _metadata_table(
    releases: Sequence[gpd.GeoDataFrame],
    frames: list[gpd.GeoDataFrame],
    grid: Grid | None,
    fit: PaivaFit | None,
    include_intensity: bool,
    metadata: Mapping[str, Any] | None,
    crs: pyproj.CRS | None,
) -> pd.DataFrame:
    import geosynth

    extra = _check_metadata(metadata)
    # A noise-aware fit's counts are the NoisyCounts of geosynth.dp, which carry ε and ledger.
    noisy = None if fit is None else fit.counts
    ledger = (
        extra.pop("ledger", None)
        or _release_attrs(releases, "ledger")
        or getattr(noisy, "ledger", None)
    )
    epsilon = (
        extra.pop("epsilon", None)
        or _release_attrs(releases, "epsilon")
        or getattr(noisy, "epsilon", None)
    )
    if epsilon is None and isinstance(ledger, Mapping):
        epsilon = (ledger.get("spent") or {}).get("epsilon")
    method = extra.pop("method", None) or _release_attrs(releases, "method")
    if method is None and fit is not None:
        method = "paiva" if fit.noise_scale is None else "paiva-dp"
    values: dict[str, Any] = {
        "format": _FORMAT,
        "format_version": _FORMAT_VERSION,
        "geosynth_version": geosynth.__version__,
        "created_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "crs": _crs_label(crs),
        "m": len(frames),
        "layers": [RELEASE_LAYER.format(k) for k in range(1, len(frames) + 1)],
        "n_records": [len(frame) for frame in frames],
        "method": method,
        "lattice": None if grid is None else _lattice_description(grid),
        "model": None if fit is None else _model_description(fit),
        "priors": None if fit is None else fit.model.priors.to_dict(),
        "epsilon": epsilon,
        "ledger": ledger,
        "intensity": (
            "grid columns lambda_<combination>: posterior mean expected records per cell"
            if include_intensity
            else None
        ),
    }
    values.update(extra)
    rows = []
    for key, value in values.items():
        try:
            text = json.dumps(_jsonable(value, f"metadata[{key!r}]"), allow_nan=False)
        except (TypeError, ValueError) as err:
            raise InputError(f"metadata[{key!r}] is not JSON-serialisable: {err}") from err
        rows.append((key, text))
    return pd.DataFrame(rows, columns=["key", "value"])


def _check_metadata(metadata: Any) -> dict[str, Any]:
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise InputError(f"metadata must be a dict of str keys, got {type(metadata).__name__}")
    extra = {}
    for key, value in metadata.items():
        if not isinstance(key, str):
            raise InputError(f"metadata keys must be str, got {key!r}")
        if key in RESERVED_KEYS:
            raise InputError(
                f"metadata[{key!r}] is computed by write_release and cannot be set; use another key"
            )
        seed_key = _find_seed_key(key, value)
        if seed_key is not None:
            raise InputError(
                f"metadata has a seed ({seed_key!r}); seeds must not be published: pass them as "
                "seeds=, which go to the private audit file"
            )
        extra[key] = value
    return extra


def _find_seed_key(key: str, value: Any) -> str | None:
    if "seed" in key.lower():
        return key
    if isinstance(value, Mapping):
        for inner_key, inner in value.items():
            found = _find_seed_key(str(inner_key), inner)
            if found is not None:
                return found
    elif isinstance(value, list | tuple):
        for inner in value:
            found = _find_seed_key("", inner)
            if found is not None:
                return found
    return None


def _jsonable(value: Any, name: str) -> Any:
    """Plain-JSON form of ``value``: numpy scalars/arrays, tuples, CRS, paths, datetimes."""
    if value is None or isinstance(value, str | bool):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        value = float(value)
        if math.isfinite(value):
            return value
        return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v, f"{name}[{k!r}]") for k, v in value.items()}
    if isinstance(value, list | tuple | np.ndarray | pd.Index | pd.Series):
        return [_jsonable(v, f"{name}[{i}]") for i, v in enumerate(list(value))]
    if isinstance(value, pyproj.CRS):
        return _crs_label(value)
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, datetime | pd.Timestamp):
        return value.isoformat()
    if isinstance(value, np.random.SeedSequence):
        return {"entropy": _jsonable(value.entropy, name), "spawn_key": list(value.spawn_key)}
    if isinstance(value, np.random.Generator):
        raise InputError(
            f"{name} is a numpy Generator, whose seed cannot be recorded; pass the int seed or "
            "SeedSequence it was made from"
        )
    raise InputError(
        f"{name} of type {type(value).__name__} cannot be written as JSON; pass numbers, "
        "strings, lists or dicts"
    )


def _audit_record(target: Path, seeds: Any) -> dict[str, Any]:
    import geosynth

    if not isinstance(seeds, Mapping):
        raise InputError(
            f"seeds must be a dict of name -> seed (e.g. {{'synthesize': 3}}), got "
            f"{type(seeds).__name__}"
        )
    return {
        "note": "PRIVATE: these seeds with the confidential data reproduce the release; "
        "do not publish this file",
        "release": target.name,
        "geosynth_version": geosynth.__version__,
        "created_utc": datetime.now(UTC).isoformat(timespec="seconds"),
        "seeds": _jsonable(dict(seeds), "seeds"),
    }


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# ---------------------------------------------------------------------- reading releases
def read_release(path: str | os.PathLike) -> ReleaseFile:
    """Read a release GeoPackage written by :func:`write_release`.

    Parameters
    ----------
    path : str or os.PathLike
        The GeoPackage.

    Returns
    -------
    ReleaseFile
        The releases (``synthetic_1`` .. ``synthetic_m`` in numeric order), the grid layer (or
        None), the decoded metadata (empty if the file has no metadata layer) and the layer
        names. The private audit file is not read.

    Raises
    ------
    geosynth.errors.InputError
        The file does not exist, cannot be read, has no ``synthetic_<k>`` layer, or has a
        metadata value that is not JSON.
    """
    source = existing_file(path)
    try:
        listed = pyogrio.list_layers(source)
        layers = [str(name) for name in listed[:, 0]]
        numbered = sorted(
            (int(match.group(1)), name)
            for name in layers
            if (match := _RELEASE_LAYER_RE.match(name))
        )
        if not numbered:
            raise InputError(
                f"{source.name} is not a geosynth release: it has no synthetic_<k> layer "
                f"(layers: {layers})"
            )
        releases = [pyogrio.read_dataframe(source, layer=name) for _, name in numbered]
        grid = pyogrio.read_dataframe(source, layer=GRID_LAYER) if GRID_LAYER in layers else None
        table = (
            pyogrio.read_dataframe(source, layer=METADATA_LAYER)
            if METADATA_LAYER in layers
            else None
        )
    except (pyogrio.errors.DataSourceError, pyogrio.errors.DataLayerError) as err:
        raise InputError(f"cannot read {source.name} as a GeoPackage: {err}") from err
    metadata: dict[str, Any] = {}
    if table is not None:
        for key, text in zip(table["key"], table["value"], strict=True):
            try:
                metadata[str(key)] = json.loads(text)
            except (TypeError, json.JSONDecodeError) as err:
                raise InputError(
                    f"{source.name}: metadata value of {key!r} is not JSON ({err}); the file "
                    "was not written by geosynth or was edited"
                ) from err
    return ReleaseFile(releases=releases, grid=grid, metadata=metadata, layers=layers)


