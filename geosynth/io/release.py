"""Release GeoPackages: write and read the public releases, lattice and metadata of a run.

A release is one GeoPackage: layers ``synthetic_1`` .. ``synthetic_m`` (the synthetic
records), ``grid`` (the lattice cells, optionally with the posterior mean intensity) and
``metadata`` (a non-spatial ``key, value`` table of JSON values, written last; its last row,
``complete``, lists every layer of the file and marks the release as completely written). Seeds
go to a private audit file ``<path>.audit.json`` beside it, with the SHA-256 of the GeoPackage.

What a release file may hold. Everything in the GeoPackage is meant to be published, so it never
holds original coordinates, the cells of the original records, the index of the confidential
input, or a seed: pass releases through :func:`geosynth.to_public` first. :func:`write_release`
refuses the internal (row-aligned) output of the synthesizers, never writes the index, refuses
columns named like record or cell identifiers (:func:`~geosynth.synth.release.is_identifier_name`)
and, given ``fit=``, every column its model does not release, and, given ``original_index=``,
columns whose values are labels of the confidential input. The metadata
follows one schema owned by geosynth: callers may set only :data:`METADATA_KEYS`, free text
goes to ``notes``, and both are scanned for seeds.

The metadata is one record, :class:`~geosynth.synth.release.ReleaseInfo`, which the
synthesizers attach to every release and :func:`write_release` completes with what describes
the file. This module is the one place where its keys, their order and their types in the file
exist: :func:`metadata_from_info` writes a record as the ``key, value`` table,
:func:`info_from_metadata` (``ReleaseFile.info``) reads it back.

All or nothing. The GeoPackage and its audit file are written into a private staging folder and
moved into place together (:class:`geosynth._atomic.AtomicOutputs`): a failed, interrupted or
killed write leaves no partial file under the final name and keeps an existing one; leftovers of
killed writes are removed by the next write of the same output. The audit file is moved first
and the release second, so a kill between the two leaves the new audit file beside the old
release (or beside none: then nothing is published and the seeds are kept):
:func:`read_release` and ``geosynth inspect`` check the SHA-256 recorded in the audit file and
report an audit file that does not belong to its release.

Reading. :func:`read_release` validates a file against the schema (layers, their types and row
counts, every metadata field and its type, the ``complete`` entry) and says what is wrong in one
:class:`~geosynth.errors.InputError`; files that are not GeoPackages, damaged, incomplete or
edited are refused.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import unicodedata
import warnings
from collections.abc import Iterator, Mapping, Sequence
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

from geosynth._atomic import (
    AtomicOutputs,
    create_new,
    drop_staged,
    interrupted_commit,
    remove_stale_staging,
    sqlite_journals,
    stage_output,
    transaction_overwrite,
)
from geosynth._identifiers import LAYER_NAMES, case_clash
from geosynth._messages import describe_rows
from geosynth._validation import check_bool, describe_value, is_integer
from geosynth.data import IDENTIFYING_MIN_RECORDS, identifying_levels, labels_of
from geosynth.errors import CRSError, InputError, InputTypeError, PrivacyLeakWarning
from geosynth.io._files import (
    MULTIPOLYGON_TYPE,
    POINT_TYPE,
    POLYGON_TYPE,
    as_path,
    check_target,
    existing_file,
    file_sha256,
    gdal_path,
    geopackage_problem,
    not_a_geopackage,
    printable,
    read_bounded,
    warn_exact_intensity,
    warn_without_crs,
)
from geosynth.io._gpkg_checks import (
    EDITED,
    GDAL_ERRORS,
    check_column_types,
    check_gpkg_tables,
    check_spatial_indexes,
    check_unread_room,
    hidden_objects,
    stored_columns,
)
from geosynth.lattice import Grid
from geosynth.synth.release import (
    ID_COLUMNS,
    LIMITS_PARAMETER,
    NOISE_SEEDED,
    NOISE_SOURCES,
    PUBLIC_ATTR,
    PUBLISHED_ATTR,
    UNLINKED_METHODS,
    ReleaseInfo,
    ReleaseInfoSource,
    check_id_columns,
    check_recorded_limits,
    edited_columns,
    holds_geometries,
    is_linked,
    is_public,
    is_published,
    moved_points,
    record_columns,
    recorded_columns,
    refuse_baseline,
    release_info,
    set_release_info,
)

if TYPE_CHECKING:
    from geosynth.model.results import PaivaFit

__all__ = [
    "ReleaseFile",
    "write_release",
    "read_release",
    "verify_audit",
    "audit_path",
    "looks_like_release",
    "info_from_metadata",
    "metadata_from_info",
    "RELEASE_LAYER",
    "GRID_LAYER",
    "METADATA_LAYER",
    "COMPLETE_KEY",
    "ID_COLUMNS",
    "METADATA_KEYS",
    "released_columns",
    "check_storable_columns",
    "RESERVED_KEYS",
]

#: Name of release layer ``k`` (1-based): ``RELEASE_LAYER.format(k)``.
RELEASE_LAYER = "synthetic_{}"
#: Layer of the lattice cells.
GRID_LAYER = "grid"
#: Non-spatial layer of ``key, value`` rows, the values JSON.
METADATA_LAYER = "metadata"
#: Key of the last metadata row: ``{"layers": [every layer of the file], "n_layers": k}``. A file
#: without it (or whose layers disagree with it) is incomplete or not a geosynth release.
COMPLETE_KEY = "complete"
#: Metadata keys a caller may set through ``metadata=`` (each type-checked): ``method`` (str),
#: ``epsilon`` (a number > 0), ``ledger`` (the ε ledger: ``Accountant.to_dict()``, or some of
#: its entries, and no other key), ``size`` (how the size of an ε-DP release was set:
#: ``{"rule": "n_public", "n_public": N}`` or the ``"dp-estimate"`` rule of
#: :mod:`geosynth.dp.locations`; default: the releases' ``attrs["geosynth"]["size"]``),
#: ``data`` (a public description of the data, str) and ``n_public`` (a published record total,
#: int >= 0), and ``noise`` (where a DP release's noise came from: ``"os-entropy"``,
#: ``"seeded"`` or ``"external"``, see :attr:`~geosynth.synth.release.ReleaseInfo.noise`). Free
#: text goes to ``notes=``.
METADATA_KEYS = frozenset({"method", "epsilon", "noise", "ledger", "size", "data", "n_public"})
#: Metadata keys :func:`write_release` computes itself; ``metadata=`` cannot set them.
RESERVED_KEYS = frozenset(
    {
        "complete",
        "notes",
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
# 2: the metadata ends with the ``complete`` entry, user text is in ``notes``.
# 3: an optional ``noise`` entry says whether a DP release's noise was seeded.
_FORMAT_VERSION = 3
# 4: an optional ``limits`` entry records the analyst's limits of truncated continuous columns.
# Written only by files that have it, so a file without limits is the version-3 file it was and
# a geosynth that cannot read the limits says "upgrade" instead of calling the file edited.
_LIMITS_VERSION = 4
# Versions read: a version-2 file is a version-3 file without ``noise``.
_READ_VERSIONS = frozenset({2, 3, _LIMITS_VERSION})
# Methods whose releases carry no differential privacy: a record naming one with an ε lies.
_EXACT_METHODS = frozenset({"paiva", "naive", "donut"})
_AUDIT_SUFFIX = ".audit.json"
_RELEASE_LAYER_RE = re.compile(r"^synthetic_(\d+)$")
# Limits of what read_release decodes: rows of the metadata table, characters of one value,
# nesting depth of a value, bytes of an audit file.
_MAX_METADATA_ROWS = 1_000
_MAX_VALUE_CHARS = 16_000_000
_MAX_DEPTH = 32
_MAX_AUDIT_BYTES = 1 << 20
# Integers at least this large that equal a seed are refused wherever they appear in metadata;
# smaller seeds (7, 42) are too common as numbers to search for and are caught by their words.
_LONG_SEED = 100_000
# Key names of generator state, anywhere in the metadata.
_SEED_KEY = re.compile(
    r"seed|rng|random_?state|^state$|entropy|spawn_?key|bit_?generator|^generator$", re.IGNORECASE
)
# Text such as "seed=42", "rng 7", "entropy 1234", "seeds [1, 2]", "state: 7" (a bare "state"
# only before "=" or ":", so that "United States 2019" passes).
_SEED_TEXT = re.compile(
    r"(?<![a-z])(?:(?:seed|rng[ _-]?state|rng|random[ _-]?state|entropy|spawn[ _-]?key"
    r"|bit[ _-]?generator)"
    r"(?:s|ed)?(?![a-z])[\s:=#'\"(\[{,_-]{0,4}"
    # "seed was 42", "seed set to 42", "seeded with 42", "seed no. 42"
    r"(?:(?:is|was|of|set\s+to|used|with|no\.?|value|number)[\s:=#'\"(\[{,_-]{1,4}){0,2}"
    r"|state\s*[:=]\s*[\"'(\[{]?\s*)[+-]?\d"
    # "42 was the seed", "used 42 as seed"
    r"|\d\s+(?:was|is|as)\s+(?:the\s+|a\s+|our\s+)?(?:random\s+|rng\s+)?seed(?![a-z])",
    re.IGNORECASE,
)
_DIGITS = re.compile(r"\d{6,}")
# Integers in scientific notation ("9.18e8"): a seed spelled as a float.
_EXPONENT = re.compile(r"\d+(?:\.\d+)?e[+-]?\d+", re.IGNORECASE)
# Letters of other scripts that look like Latin ones ("sеed" with a Cyrillic е): text is matched
# after this mapping, NFKD (fullwidth "ｓｅｅｄ", "４２") and without accents or format characters.
_LOOKALIKES = str.maketrans(
    "аеорсухіјѕԁɡոԛАВЕКМНОРСТХЅІЈαεικνορτυχΑΒΕΗΙΚΜΝΟΡΤΥΧ",
    "aeopcyxijsdgnqABEKMHOPCTXSIJaeiknoptuxABEHIKMNOPTYX",
)


@dataclass
class ReleaseFile:
    """The contents of a release GeoPackage, as read and validated by :func:`read_release`.

    Attributes
    ----------
    releases : list of geopandas.GeoDataFrame
        Layers ``synthetic_1`` .. ``synthetic_m`` in order, each with a fresh ``RangeIndex``.
    grid : geopandas.GeoDataFrame or None
        The ``grid`` layer (cell polygons, ``lambda_*`` columns if written with the intensity).
    metadata : dict
        The ``metadata`` layer, each value decoded from JSON and checked against the schema.
    layers : list of str
        Every layer of the file, in file order.
    audit : pathlib.Path or None
        The private audit file beside the release, when it was present, readable and its
        SHA-256 matched the GeoPackage (None otherwise, or when not checked).
    """

    releases: list[gpd.GeoDataFrame]
    grid: gpd.GeoDataFrame | None
    metadata: dict[str, Any]
    layers: list[str] = field(default_factory=list)
    audit: Path | None = None

    @property
    def m(self) -> int:
        """Number of releases."""
        return len(self.releases)

    @property
    def info(self) -> ReleaseInfo:
        """The metadata as the record that was written (:func:`info_from_metadata`)."""
        return info_from_metadata(self.metadata)


def looks_like_release(path: str | os.PathLike) -> bool:
    """Tell whether the file at ``path`` has the layers of a geosynth release.

    Its metadata table and a first release layer; not validated (:func:`read_release` does
    that). For messages: a release given where the confidential points belong (the arguments
    of ``geosynth evaluate`` swapped) was read as points, and the advice was to pick a layer.

    Parameters
    ----------
    path : str or os.PathLike
        An existing file.

    Returns
    -------
    bool
        False for a file GDAL cannot list (a CSV, say) or without those layers.
    """
    try:
        names = {str(name) for name in pyogrio.list_layers(path)[:, 0]}
    except (pyogrio.errors.DataSourceError, OSError, ValueError):
        return False
    return METADATA_LAYER in names and RELEASE_LAYER.format(1) in names


def audit_path(path: str | os.PathLike) -> Path:
    """Return the private audit file ``<path>.audit.json`` of the release at ``path``.

    Raises
    ------
    geosynth.errors.InputTypeError
        ``path`` is not a file path (str or os.PathLike).
    """
    return Path(str(as_path(path)) + _AUDIT_SUFFIX)


def write_release(
    path: str | os.PathLike,
    releases: Sequence[gpd.GeoDataFrame],
    *,
    grid: Grid | None = None,
    fit: PaivaFit | None = None,
    include_intensity: bool = False,
    metadata: Mapping[str, Any] | None = None,
    notes: str | None = None,
    seeds: Mapping[str, Any] | None = None,
    overwrite: bool = False,
    original_index: pd.Index | Sequence | None = None,
    outputs: AtomicOutputs | None = None,
    provenance: Mapping[str, Any] | None = None,
) -> Path:
    """Write ``m`` public releases, the lattice and the metadata to one GeoPackage.

    Parameters
    ----------
    path : str or os.PathLike
        The GeoPackage to write, named ``*.gpkg`` (the GeoPackage standard's extension; GDAL
        took ``r.kml`` for a KML file and rewrote it with each layer, keeping only the last).
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
        The releases may then hold only the columns its model releases (its attributes and
        continuous columns, :func:`released_columns`) beside the points. With it or without
        it, a release may hold only the columns its synthesizer recorded making, with the
        values it drew (:func:`~geosynth.synth.release.recorded_columns`).
    include_intensity : bool, default False
        Add to the ``grid`` layer one column ``lambda_<combination>`` (e.g.
        ``lambda_y=1,x1=2``) per attribute combination with the posterior mean intensity
        (expected records per cell). Needs ``fit``.
    metadata : Mapping or geosynth.synth.release.ReleaseInfo, optional
        Values of the caller-settable keys of the schema, :data:`METADATA_KEYS`: ``method``,
        ``epsilon``, ``noise``, ``ledger``, ``size``, ``data``, ``n_public``. Other keys are
        refused (the writer computes :data:`RESERVED_KEYS` itself; free text goes to
        ``notes``). A
        :class:`~geosynth.synth.release.ReleaseInfo` (e.g. :attr:`geosynth.dp.DPRelease.info`)
        gives those fields and its ``notes`` (unless ``notes`` is given); the writer computes
        the others. Every value is scanned for seeds (see Notes).
    notes : str, optional
        Free text published in the metadata entry ``notes``; scanned for seeds like
        ``metadata``.
    seeds : Mapping, optional
        Seeds used to make the releases (name -> None, an int >= 0, a SeedSequence, or a
        list or dict of these; NaN, floats, strings and bools are refused). They are written
        to the private audit file ``<path>.audit.json`` (:func:`audit_path`, created mode 0600)
        together with the SHA-256 of the GeoPackage, never into the GeoPackage. Refused for
        a differentially private release (one stating an ``epsilon``): no seed may sit beside
        one.
    overwrite : bool, default False
        Replace an existing file and its audit file. When a release is replaced without
        ``seeds``, its audit file is replaced by one that records no seeds (and the new SHA-256),
        in the same transaction, so no audit file describes a release that is gone.
    original_index : pandas.Index or sequence, optional
        Index of the confidential input. If given, a release column most of whose rows hold
        distinct labels of this index, repeated or not (or which bears its name), a release
        whose non-default index consists of these labels, and a release that has as many rows
        as the input with a default index but did not come from :func:`geosynth.to_public` (its
        row ``k`` may be confidential record ``k``) are refused.
    outputs : geosynth._atomic.AtomicOutputs, optional
        A transaction of the caller (e.g. the CLI, which also writes a review map and a report).
        The GeoPackage and then its audit file are staged into it (``outputs.add``) and moved
        into place by the caller's commit; whether they may replace existing files is
        ``outputs.overwrite``. Without it, ``write_release`` commits its own transaction.
    provenance : Mapping, optional
        How the release was made, for its owner to make it again: e.g. the input files with
        their SHA-256 and the options (the command line records its own). JSON values (text,
        numbers, booleans, None, lists and mappings with text keys), written to the private
        audit file (``"provenance"``), never into the GeoPackage; an audit file is written for
        it even without ``seeds``.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    geosynth.errors.InputError
        ``path`` is not a file path (an InputTypeError), does not end in ``.gpkg`` or holds a
        ``!``; ``path`` (or its audit file) exists and ``overwrite`` is False, or was created by
        another process during the write; ``releases`` is empty or not a sequence of point
        GeoDataFrames; a release is the internal output of a synthesizer or may be row-aligned
        with the input; a release has an identifier column (named like one,
        :func:`~geosynth.synth.release.is_identifier_name`, unless ``fit``'s model releases it;
        an internal ``_`` column, an extra geometry column, or labels of ``original_index``),
        or, given ``fit``, a column its model does not release (``orig_x``), without ``fit``, a
        column that the synthesizer did not record making
        (:func:`~geosynth.synth.release.recorded_columns`); a release with columns beside the
        points but no such record (a merge, join or concat drops it), or whose recorded
        columns' values changed since (:func:`check_edited_columns`); releases or
        grid disagree on the CRS; ``grid``/``fit`` have the wrong type or disagree;
        ``include_intensity`` without ``fit``; ``metadata`` has a key outside
        :data:`METADATA_KEYS` or a value of the wrong type (a ``ledger`` or ``size``, also one
        recorded on the releases, with a key or value that is not of their schema);
        ``metadata`` or ``notes`` hold a seed; invalid ``seeds``, or ``seeds`` beside a
        release stating an ε; ``overwrite=True`` with ``outputs`` that may not overwrite; a
        release with points outside the cells of the grid; given ``fit``, a release that
        records no synthesizer (:func:`geosynth.synth.release.release_info`).

    Warns
    -----
    geosynth.errors.PrivacyLeakWarning
        A release has a non-default index, i.e. is not the output of :func:`geosynth.to_public`:
        its index is not written, but its row order may still follow the confidential file.
        Or the releases' DP noise was drawn from a seed (``noise`` ``"seeded"``): the file
        states their ε, and that the noise was seeded, but they are not private. Or
        ``include_intensity`` publishes the intensity of a fit of exact counts, which follows
        them where cells hold few records (the message gives the share of (cell, combination)
        pairs whose rounded intensity is their count).

    Notes
    -----
    The ``metadata`` layer holds ``format``, ``format_version``, ``geosynth_version``,
    ``created_utc`` (ISO 8601), ``crs`` (authority string such as ``"EPSG:31983"``, else WKT),
    ``m``, ``layers``, ``n_records`` (per release), ``method``, ``lattice`` (kind: square,
    hexagonal or areal; shape and cell size, None for areal units; islands linked to their
    nearest area; the digitising ``gap`` of an areal lattice's contiguity; the links cut
    across barriers, ``cut_links``; what a cell's expected count is proportional to,
    ``exposure``: :attr:`Grid.exposure_source`), bounds,
    contiguity, number of cells and components, whether clipped, and ``bounds_snap_unit``:
    None for public bounds, else how precisely bounds derived from the points reveal their
    extremes), ``model`` and ``priors`` (with ``fit``), ``limits`` (when the releases
    record them: ``{"age": [0.0, 120.0]}``, the analyst's range each truncated continuous
    column was drawn within, null an open end; public statements, not data; the file is then
    format version 4), ``epsilon``, ``noise`` (when known), ``ledger`` and ``size`` (from
    ``metadata`` or, for differentially private releases, ``attrs["geosynth"]``),
    ``intensity``, ``notes``, ``data`` and
    ``n_public`` (when given) and, as its last row, ``complete`` (every layer of the file and
    their number). Each value is a JSON text (``null`` when unknown).

    Seeds are never published. Refused in ``metadata`` and ``notes``: keys naming generator
    state at any depth (``seed``, ``rng_state``, ``state``, ``entropy``, ``spawn_key``,
    ``bit_generator``), text where such a word is followed by a number (``"seed=42"``,
    ``"rng state 7"``, ``"entropy: 12"``; a bare ``"state"`` only before ``=`` or ``:``), and
    any integer of at least six digits (as a number, a key or inside text, also written with
    digit separators, in hexadecimal or in scientific notation) that equals a value of ``seeds``
    (smaller seeds are too common as numbers to search for). A list of pairs
    (``[["seed", 42]]``) counts as the object it spells, and text is compared after Unicode
    normalisation (fullwidth letters, accents, zero-width characters, Cyrillic and Greek
    look-alikes of Latin letters).

    Order of the files. The audit file is moved into place first, then the GeoPackage: a kill
    between the two leaves the new audit file beside the previous release, which
    :func:`read_release` and ``geosynth inspect`` detect by its SHA-256, or beside no release.

    Examples
    --------
    >>> public = [geosynth.to_public(r, seed=k) for k, r in enumerate(releases)]  # doctest: +SKIP
    >>> write_release("release.gpkg", public, fit=fit, seeds={"synthesize": 3})  # doctest: +SKIP
    """
    target = as_path(path)
    if target.suffix.lower() != ".gpkg":
        raise InputError(f"path {printable(str(target))!r} must end in .gpkg: a release is a "
                         "GeoPackage, and GDAL takes other names for other formats (r.kml for "
                         f"KML, keeping one layer); name it {printable(_gpkg_name(target))}")
    replace = transaction_overwrite(outputs, overwrite)
    lattice, fit = _check_grid_and_fit(grid, fit, include_intensity)
    frames = _check_releases(releases, original_index,
                             None if fit is None else released_columns(_model_description(fit)))
    _check_release_sizes(frames, fit)
    crs = _common_crs(frames, lattice)
    audit = audit_path(target)
    check_target(target, replace)
    # The audit file is part of the release: written with seeds, and replaced (by a record
    # without seeds) when an old one would otherwise describe a release that is gone.
    with_audit = seeds is not None or provenance is not None or os.path.lexists(audit)
    if with_audit:
        check_target(audit, replace)
    seed_values = _seed_integers(seeds)
    info = _file_info(releases, frames, lattice, fit, include_intensity, metadata, notes, crs,
                      seed_values)
    if seeds is not None and info.epsilon is not None:
        raise InputError(
            f"seeds= for {printable(target.name)}, a differentially private release (epsilon "
            f"{info.epsilon:g}): its noise comes from fresh OS entropy, so no seed reproduces it, "
            "and a seed beside it would be that of a test's replayable noise; drop seeds"
        )
    if info.noise == NOISE_SEEDED:
        _warn_seeded_noise(f"{printable(target.name)} is written with", stacklevel=3)
    if info.method is None:
        _warn_unknown_method(printable(target.name))
    table = _metadata_table(info)
    audit_record = _audit_record(target, seeds, provenance) if with_audit else None
    cells = None if lattice is None else _grid_layer(lattice, fit if include_intensity else None)
    box = None if cells is None else shapely.total_bounds(np.asarray(cells.geometry.array))
    beyond = [] if box is None else [k for k, frame in enumerate(frames, start=1)
                                     if _beyond_box(frame, box)]
    if beyond:
        raise InputError(
            f"release {beyond[0]} ({RELEASE_LAYER.format(beyond[0])}) has points outside the "
            "cells of the grid, so it was not drawn on that lattice (a reader would take the "
            "file for an edited one); pass the grid (or fit) the releases were drawn with"
        )
    written = metadata_from_info(info)
    for k, frame in enumerate(frames, start=1):
        problem = _value_problem(frame, written) or _combination_problem(frame, written)
        if problem is not None:
            raise InputError(
                f"release {k} ({RELEASE_LAYER.format(k)}) has {problem}: no geosynth "
                "synthesizer drew them (a reader would take the file for an edited one); "
                "write the releases as geosynth.synthesize drew them"
            )
        check_edited_columns(frame, f"release {k} ({RELEASE_LAYER.format(k)})")
    if include_intensity:
        warn_exact_intensity(fit, fit.posterior_mean_lambda(),
                             f"the grid layer of {printable(target.name)}", stacklevel=2)
    warn_without_crs(crs, printable(target.name), stacklevel=2)

    transaction = AtomicOutputs(overwrite=replace) if outputs is None else outputs
    staged: list[Path] = []
    try:
        # The audit file is staged (so moved into place) first: a kill between the two moves
        # leaves an audit file without its release, which publishes nothing and blocks a plain
        # rerun, never a release whose seeds are lost in a staging folder.
        if audit_record is not None:
            remove_stale_staging(audit)
            staged.append(stage_output(transaction, audit, private=True,
                                       example="release.gpkg"))
        remove_stale_staging(target)
        tmp = stage_output(transaction, target, private=False, example="release.gpkg")
        staged.append(tmp)
        layers = [(frame, RELEASE_LAYER.format(k)) for k, frame in enumerate(frames, start=1)]
        layers += [] if cells is None else [(cells, GRID_LAYER)]
        layers.append((table, METADATA_LAYER))  # last: its last row marks the file complete
        with _gdal_dates():
            for frame, layer in layers:
                _write_layer(frame, tmp, layer, target)
        if audit_record is not None:
            audit_record["sha256"] = file_sha256(tmp)
            with create_new(staged[0], private=True) as handle:
                handle.write(json.dumps(audit_record, indent=2) + "\n")
        if outputs is None:
            transaction.commit()
    except FileExistsError as err:
        drop_staged(transaction, outputs, staged)
        raise InputError(f"{err.filename} {err.strerror}") from None
    except BaseException:
        drop_staged(transaction, outputs, staged)
        raise
    return target


def _creation_time() -> datetime:
    """When a file is written: ``SOURCE_DATE_EPOCH`` (seconds, UTC) if set, else now.

    The reproducible-builds convention: a release written twice from the same data and seeds
    differed in its bytes only in the times of writing (the metadata's ``created_utc`` and
    GDAL's ``gpkg_contents.last_change``), so a reproduction could not be checked against the
    audit file's SHA-256. With ``SOURCE_DATE_EPOCH`` set, both take its time, and the file is
    the same to the byte.

    Raises
    ------
    geosynth.errors.InputError
        ``SOURCE_DATE_EPOCH`` is set but is no whole number of seconds from 0 to year 9999.
    """
    text = os.environ.get("SOURCE_DATE_EPOCH")
    if text is None:
        return datetime.now(UTC)
    try:
        return datetime.fromtimestamp(int(text.strip()), UTC)
    except (ValueError, OverflowError, OSError):
        raise InputError(
            f"SOURCE_DATE_EPOCH is {printable(text)[:40]!r}, not a whole number of seconds since "
            "1970-01-01 UTC; set it to one (e.g. SOURCE_DATE_EPOCH=$(date +%s)) or unset it"
        ) from None


@contextlib.contextmanager
def _gdal_dates() -> Iterator[None]:
    """Have GDAL date the GeoPackage's tables at :func:`_creation_time` when it is fixed.

    GDAL's ``OGR_CURRENT_DATE`` (its own reproducible-builds option), set for the writes and
    restored after (a process-wide option: not set without ``SOURCE_DATE_EPOCH``).
    """
    if os.environ.get("SOURCE_DATE_EPOCH") is None:
        yield
        return
    fixed = _creation_time().strftime("%Y-%m-%dT%H:%M:%S.000Z")
    before = pyogrio.get_gdal_config_option("OGR_CURRENT_DATE")
    pyogrio.set_gdal_config_options({"OGR_CURRENT_DATE": fixed})
    try:
        yield
    finally:
        pyogrio.set_gdal_config_options({"OGR_CURRENT_DATE": before})


def _gpkg_name(path: Path) -> str:
    """Name ``path`` as a GeoPackage: ``r.kml`` -> ``r.gpkg``, ``r.gpkg.zip`` -> ``r.gpkg``."""
    return path.stem if path.stem.lower().endswith(".gpkg") else f"{path.stem}.gpkg"


def _write_layer(frame: pd.DataFrame, path: Path, layer: str, target: Path) -> None:
    """Add ``frame`` as ``layer`` to the GeoPackage at ``path`` (created by the first call).

    GDAL's failures (a full disk: "database or disk is full", "Failed to commit transaction")
    come out of pyogrio as its own errors; they become an :class:`OSError` naming ``target``.
    """
    options: dict[str, Any] = {}
    if isinstance(frame, gpd.GeoDataFrame) and len(frame) == 0:
        options["geometry_type"] = "Point" if layer != GRID_LAYER else "Polygon"
    elif _ARROW_WRITE and _RELEASE_LAYER_RE.match(layer) and _arrow_writable(frame):
        options["use_arrow"] = True  # the same file, written faster
    try:
        # as the staged file, not a URL: a target in a folder "file:sub" went to "sub/..."
        pyogrio.write_dataframe(frame, gdal_path(path), layer=layer, driver="GPKG", **options)
    except (pyogrio.errors.DataSourceError, pyogrio.errors.DataLayerError) as err:
        raise OSError(
            f"cannot write {printable(str(target))}: GDAL failed on layer {layer} "
            f"({printable(str(err))[:200]}); check the free space and the folder, then write "
            "it again (nothing was replaced)"
        ) from None



def _version(text: str) -> tuple[int, ...]:
    """Return the leading ``major.minor`` of version ``text`` as numbers (``(0, 0)``: none)."""
    found = re.match(r"(\d+)\.(\d+)", text)
    return tuple(int(part) for part in found.groups()) if found else (0, 0)


# Whether pyogrio can hand a layer to GDAL through Arrow (GDAL >= 3.8; pyogrio 0.11 writes the
# feature ids of a GeoPackage through Arrow as feature by feature).
_ARROW_WRITE = (tuple(pyogrio.__gdal_version__) >= (3, 8, 0)
                and _version(pyogrio.__version__) >= (0, 11))


def _arrow_writable(frame: pd.DataFrame) -> bool:
    """Whether pyogrio writes ``frame`` through Arrow as it does feature by feature.

    True for a point layer of named (text) columns of NumPy booleans, integers (unsigned up
    to 32 bits) and 32- or 64-bit floats: the same column types and values. Other columns
    are not: Arrow writes integers held as objects as INTEGER (feature by feature: TEXT) and
    unsigned 64-bit integers as REAL.
    """
    if not isinstance(frame, gpd.GeoDataFrame):
        return False
    geometry = frame.geometry.name
    return all(isinstance(column, str) and (column == geometry or _plain_dtype(dtype))
               for column, dtype in frame.dtypes.items())


def _plain_dtype(dtype: Any) -> bool:
    """Whether ``dtype`` is a NumPy bool, integer (unsigned up to 32 bits) or float32/64."""
    return isinstance(dtype, np.dtype) and (
        dtype.kind in "bi" or (dtype.kind == "u" and dtype.itemsize <= 4)
        or (dtype.kind == "f" and dtype.itemsize in (4, 8)))


def _as_original_index(original_index: Any) -> pd.Index:
    """``original_index`` as a pandas Index; an InputError for a scalar or string."""
    if isinstance(original_index, str | bytes) or not hasattr(original_index, "__len__"):
        raise InputError(
            f"original_index must be the index of the confidential records (gdf.index), got "
            f"{type(original_index).__name__}"
        )
    return pd.Index(original_index)


def _check_release_sizes(frames: list[gpd.GeoDataFrame], fit: PaivaFit | None) -> None:
    """Refuse releases of an exact-count fit that do not hold one point per record.

    :func:`geosynth.synthesize` draws every release of such a fit with the fit's number of
    records; a release filtered to nothing by mistake was published without a word. A fit to
    noisy counts draws its own sizes, so only the exact ones are checked.
    """
    if fit is None or fit.noise_scale is not None:
        return
    n = int(fit.counts.n_records)
    wrong = [k for k, frame in enumerate(frames, start=1) if len(frame) != n]
    if wrong:
        k = wrong[0]
        raise InputError(
            f"release {k} ({RELEASE_LAYER.format(k)}) has {len(frames[k - 1]):,} points, not "
            f"the {n:,} records of fit's counts (every release of geosynth.synthesize holds one "
            "point per record); pass the releases of geosynth.synthesize(fit, ...) unfiltered, "
            "through geosynth.to_public")


def _check_releases(releases: Any, original_index: Any,
                    released: frozenset[str] | None) -> list[gpd.GeoDataFrame]:
    """Validate the releases and return them ready to write (index dropped).

    ``released``: the columns the fit's model releases (None: no fit).
    """
    if isinstance(releases, pd.DataFrame) or not isinstance(releases, Sequence):
        raise InputError(
            f"releases must be a list of GeoDataFrames, got {type(releases).__name__}; wrap a "
            "single release in a list: [release]"
        )
    if len(releases) == 0:
        raise InputError("releases is empty; pass at least one release")
    original = None if original_index is None else _as_original_index(original_index)
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
        if not is_linked(release):  # a baseline's public form: whatever its columns
            refuse_baseline(release, name, "it is for comparison, not for publication; "
                            "publish the releases of geosynth.synthesize")
        _check_storable_values(release, geometry, name)
        check_release_columns(release, geometry, name, original, released=released or ())
        if is_linked(release):
            raise InputError(
                f"{name} is the internal output of geosynth.synthesize (or of a baseline): its "
                "row k and index belong to confidential record k, so publishing it would link "
                "synthetic to confidential records; pass geosynth.to_public(release), which "
                "shuffles the rows and drops the index"
            )
        _check_release_index(release, name, original)
        check_model_columns(release, geometry, name, released)
        _check_geopackage_columns(release, geometry, name)
        wrong, _ = _plain_points(release)
        if wrong.any():
            raise InputError(
                f"{name} has {int(wrong.sum())} {_NOT_PLAIN_POINTS} "
                f"({describe_rows(release.index, wrong)}); a release holds one synthetic point "
                "(x, y) per record"
            )
        frames.append(release.reset_index(drop=True))
    differ = _schema_difference(frames, [f"release {k} ({RELEASE_LAYER.format(k)})"
                                         for k in range(1, len(frames) + 1)])
    if differ is not None:
        raise InputError(
            f"the releases differ in their columns: {differ}; the releases of one file must "
            "have the same columns of the same kinds (as the releases of one geosynth run "
            "have): pass the releases of one run, or give them the same columns and types"
        )
    return frames


def released_columns(model: Mapping[str, Any]) -> frozenset[str]:
    """Return the columns a model releases beside the points: its attributes and covariates.

    Parameters
    ----------
    model : Mapping
        The description of a fitted model, as the metadata entry ``model`` of a release file
        holds it (``ReleaseFile.metadata["model"]``): ``attributes`` (a list of names) and
        ``continuous`` (None, one name, or a list of names).

    Returns
    -------
    frozenset of str
    """
    continuous = model.get("continuous") or []
    return frozenset([*model.get("attributes", []),
                      *([continuous] if isinstance(continuous, str) else continuous)])


def check_model_columns(release: gpd.GeoDataFrame, geometry: Any, name: str,
                        released: frozenset[str] | None) -> None:
    """Refuse columns that the fit's model (``released``: its columns) did not make.

    Without a model (``released`` None), refuse those the release's synthesizer did not record
    making (:func:`~geosynth.synth.release.recorded_columns`). Either way, refuse a release
    with columns but no such record (a merge, join or concat drops it). Values changed since
    are refused by :func:`check_edited_columns`.
    """
    extra = [] if released is None else _unreleased_columns(release, geometry, released)
    if extra:
        raise InputError(
            f"{name} has columns {_shown(extra)} that the model of fit does not release (its "
            f"attributes and continuous columns: {_shown(sorted(released))}): the model did "
            "not make them (a record id, the original coordinates or values added to the "
            "release), and they would publish what they hold about the confidential records; "
            "drop them (release.drop(columns=...)), or pass the fit whose model made them"
        )
    _check_made_columns(release, geometry, name)


def _check_made_columns(release: gpd.GeoDataFrame, geometry: Any, name: str) -> None:
    """Refuse columns the synthesizer did not record making, or whose values changed since.

    The release's own record of its columns and their values (kept through
    :func:`~geosynth.synth.release.to_public`) is the only witness of what a column holds:
    without it (pandas drops ``attrs`` in a merge, join or concat) no column but the points
    is written.
    """
    made = recorded_columns(release)
    if made is None:
        if any(c != geometry for c in release.columns):
            raise InputError(
                f"{name} holds no record of the columns its synthesizer made (pandas drops it "
                "in merge, join and concat, which may have brought back the records' own "
                "values): write the releases as geosynth.synthesize and geosynth.to_public "
                "made them, without a merge; for a release made outside geosynth whose "
                "columns hold nothing of the records, record them first with "
                "geosynth.synth.release.record_columns(release)"
            )
        return
    extra = _unreleased_columns(release, geometry, made)
    if extra:
        raise InputError(
            f"{name} has columns {_shown(extra)} that the synthesizer that made it did not make "
            f"(it made {_shown(sorted(map(str, made)))}): a record id, the original "
            "coordinates or values added to a release would publish what they hold about the "
            "confidential records; drop them (release.drop(columns=...)), or, for a column "
            "that holds nothing of the records (a label of the release), record it with "
            "geosynth.synth.release.record_columns(release)"
        )


def check_edited_columns(release: gpd.GeoDataFrame, name: str) -> None:
    """Refuse recorded columns whose values changed since the synthesizer drew them.

    Run after the checks that say more about a value (missing, outside its limits, a level
    the model never fitted): this one catches what they let through, the records' own values
    written over a synthesized column (:func:`~geosynth.synth.release.edited_columns`), and
    points other than those drawn (:func:`~geosynth.synth.release.moved_points`: the
    records' own locations under a copied record), or in another CRS, where they cannot be
    compared. The digests are of whole columns, so a release of some of the rows is refused
    too; an empty one is not checked.
    """
    edited = edited_columns(release) if len(release) else []  # no row, no value to check
    if edited:
        raise InputError(
            f"{name} has values in {_shown([str(c) for c in edited])} that are not, as a whole, "
            "those its synthesizer drew (values overwritten or edited since, e.g. with the "
            "records' own values, which would be published; or rows removed or added): write "
            "the release whole, with the values geosynth.synthesize drew, or drop the column"
        )
    moved = moved_points(release) if len(release) else None
    if moved == "crs":
        raise InputError(
            f"{name} has its points in another CRS than the one its synthesizer drew them in, "
            "so they cannot be checked against its record of them; write (or map) the release "
            "in the CRS it was drawn in, and reproject the published file afterwards"
        )
    if moved is not None:
        raise InputError(
            f"{name} has points that are not, as a whole, those its synthesizer drew (moved, "
            "replaced, e.g. by the records' own locations, which would be published; or rows "
            "removed or added): write the release whole, with the points geosynth.synthesize "
            "drew"
        )


def _unreleased_columns(release: gpd.GeoDataFrame, geometry: Any,
                        released: frozenset[str]) -> list[str]:
    """Return the columns of ``release`` other than its geometry that are not in ``released``."""
    return [str(c) for c in release.columns if c != geometry and c not in released]


def _check_recorded_columns(frame: gpd.GeoDataFrame, name: str, layer: str,
                            released: frozenset[str]) -> None:
    """Refuse a column of a release layer that the model its metadata records does not release.

    The writer refuses them (:func:`check_model_columns`), so one in a file was added since:
    ``orig_x`` holding the records' eastings was read by ``evaluate`` without a word.
    """
    extra = _unreleased_columns(frame, frame.geometry.name, released)
    if extra:
        raise InputError(
            f"{name}: its layer {layer!r} has columns {_shown(extra)} that the model its "
            f"metadata records does not release (its columns: {_shown(sorted(released))}); "
            f"geosynth writes no other, so {EDITED}"
        )


def _column_kind(dtype: Any) -> str:
    """How a GeoPackage stores a column of ``dtype``: numeric, text, bool or date/time."""
    if isinstance(dtype, pd.CategoricalDtype):  # written as its categories' values
        dtype = dtype.categories.dtype
    if pd.api.types.is_bool_dtype(dtype):
        return "bool"
    if pd.api.types.is_numeric_dtype(dtype):
        return "numeric"
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return "date/time"
    return "text"


def _schema_difference(frames: Sequence[gpd.GeoDataFrame], labels: Sequence[str]) -> str | None:
    """Describe the first difference of column names or kinds between ``frames``, or None.

    A layer whose attribute became text shared no combination with the others and was
    measured as holding none of them. Kinds are compared between layers that hold records
    (an empty column's type says nothing: pandas makes ``[]`` a float column). Names come
    from a file, so they are made printable.
    """
    def kinds(frame: gpd.GeoDataFrame) -> dict[str, str]:
        geometry = frame.geometry.name
        return {str(c): _column_kind(frame[c].dtype) for c in frame.columns if c != geometry}

    schemas = [kinds(frame) for frame in frames]
    for schema, label in zip(schemas[1:], labels[1:], strict=True):
        missing = [c for c in schemas[0] if c not in schema]
        extra = [c for c in schema if c not in schemas[0]]
        if missing or extra:
            parts = ([f"{label} lacks {_shown(missing)}"] if missing else []) + (
                [f"{label} has {_shown(extra)}, which {labels[0]} lacks"] if extra else [])
            return " and ".join(parts)
    full = [(schema, label) for schema, label, frame in zip(schemas, labels, frames, strict=True)
            if len(frame)]
    for schema, label in full[1:]:
        reference, name = full[0]
        for column, kind in reference.items():
            if schema[column] != kind:
                return (f"column {printable(column)!r} is {kind} in {name} but {schema[column]} "
                        f"in {label}")
    return None


# Column names a GeoPackage layer written by GDAL uses itself (LAYER_NAMES): its geometry and
# feature id (an "fid" column is refused before, as an identifier). "geometry" is the name GDAL
# gives the geometry when read: a column of that name beside the layer's geometry was written,
# then replaced by the points when read (its values unseen).
# A model's column renamed in a release is refused (write_release(fit=) lets through only the
# model's columns): it is renamed in the records, before prepare and the fit.
_BEFORE_PREPARE = " (a model's attribute or continuous column: in the records given to prepare)"


def _check_geopackage_columns(release: gpd.GeoDataFrame, geometry: str, name: str) -> None:
    """Refuse columns a GeoPackage cannot hold as they are (GDAL failed on them mid-write).

    SQLite's names are case-insensitive (``y`` and ``Y`` are one column), ``geom`` and ``fid``
    are the layer's own, and it has no complex numbers nor integers beyond int64.
    """
    columns = [column for column in release.columns if column != geometry]
    for column in columns:
        label = str(column)
        if not isinstance(column, str):  # pyogrio failed on it with an AttributeError
            raise InputError(f"{name} has a column labelled {column!r} ({type(column).__name__}),"
                             " but a GeoPackage names its columns by text; rename it "
                             "(release.rename(columns=str))")
        if label.lower() in LAYER_NAMES:
            raise InputError(f"{name} has a column {label!r}, a name the GeoPackage layer uses "
                             f"for itself (geometry, feature id); rename it{_BEFORE_PREPARE}")
    clash = case_clash(columns)
    if clash:
        raise InputError(f"{name} has columns {clash[0]!r} and {clash[1]!r}, which a "
                         "GeoPackage (SQLite) takes for one (names ignore case); rename "
                         f"one{_BEFORE_PREPARE}")
    for column in columns:
        label = str(column)
        values = release[column]
        if values.dtype.kind == "c":
            raise InputError(f"{name}: column {label!r} holds complex numbers, which a "
                             "GeoPackage cannot store; split it into real and imaginary parts")
        if values.dtype.kind == "u" and len(values) and values.max() > np.iinfo(np.int64).max:
            raise InputError(f"{name}: column {label!r} holds integers beyond int64, which a "
                             "GeoPackage cannot store; store them as text or float")



def _check_storable_values(release: gpd.GeoDataFrame, geometry: str, name: str) -> None:
    """Refuse names and values a GeoPackage cuts or cannot store, before any check reads them.

    Text is cut at a NUL character (levels "zone<NUL>north" and "zone<NUL>south" were read
    back as one level "zone") and must be UTF-8 (a lone surrogate, from a file name decoded
    with ``surrogateescape``, failed the write with a bare encoding error); durations failed
    it with an error naming no column.
    """
    for column in release.columns:
        if column == geometry:
            continue
        if isinstance(column, str) and not _storable_text(column):
            raise InputError(f"{name} has a column name {ascii(column)} holding a NUL character "
                             "or text that is not UTF-8, which a GeoPackage cuts or cannot "
                             "store; rename it")
        values = release[column]
        label = ascii(str(column))
        if values.dtype.kind == "M":
            _check_milliseconds(values, name, label)
            continue  # dates hold no text
        if values.dtype.kind in "biufc":
            continue  # numbers hold no text
        if values.dtype.kind == "m":
            raise InputError(f"{name}: column {label} holds durations (timedelta), which a "
                             "GeoPackage cannot store; store them as numbers (e.g. "
                             f"release[{label}].dt.total_seconds())")
        bad = [k for k, v in enumerate(values.tolist())
               if isinstance(v, str) and not _storable_text(v)]
        if bad:
            raise InputError(f"{name}: column {label} has {len(bad)} text value(s) holding a "
                             "NUL character or text that is not UTF-8 (rows "
                             f"{bad[:5]}), which a GeoPackage cuts (merging levels) or cannot "
                             "store; clean them (e.g. .str.replace('\\x00', ''))")


def _check_milliseconds(values: pd.Series, name: str, label: str) -> None:
    """Refuse date/times finer than a millisecond: a GeoPackage stores them to the millisecond.

    Levels ``08:00:00`` and ``08:00:00.0004`` of an attribute were written as one, the file
    passing every check (the merged value is a fitted level); ``.0001`` and ``.0002`` were
    read back as an edited file.
    """
    finer = values.notna() & (values != values.dt.floor("ms"))
    if finer.any():
        raise InputError(
            f"{name}: column {label} has {int(finer.sum())} date/time value(s) finer than a "
            "millisecond, which a GeoPackage stores to the millisecond: values that differ "
            "below it would be one; round them before geosynth.prepare (gdf[column] = "
            "gdf[column].dt.round('ms'))"
        )


def check_storable_columns(frame: gpd.GeoDataFrame, name: str) -> None:
    """Refuse column names and values a release GeoPackage cannot hold as they are.

    :func:`write_release` makes these checks on each release; a caller that fits first (the
    command line) makes them on the records' released columns before the fit, so that a name
    or a value the file cannot hold costs no run.

    Parameters
    ----------
    frame : geopandas.GeoDataFrame
        The columns a release would hold (the model's attributes and continuous columns) and
        the geometry.
    name : str
        How the messages name ``frame``.

    Raises
    ------
    geosynth.errors.InputError
        Names a GeoPackage takes for one (``Age`` and ``age``) or for its own (``geom``),
        text it cuts (a NUL) or cannot store, durations, complex numbers, integers beyond
        int64, or date/times finer than a millisecond.
    """
    geometry = frame.geometry.name
    _check_storable_values(frame, geometry, name)
    _check_geopackage_columns(frame, geometry, name)


def _storable_text(text: str) -> bool:
    """Whether a GeoPackage stores ``text`` as it is: UTF-8, no NUL (SQLite cuts text there)."""
    if "\x00" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


_NOT_PLAIN_POINTS = "missing, empty, non-finite, 3-D (Z/M) or non-point geometries"


def _plain_points(frame: gpd.GeoDataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Mask of rows whose geometry is not one point with finite x and y and nothing more.

    ``POINT EMPTY`` and ``POINT (nan nan)`` have the point type too, and a Z or M value would
    be published unchecked. Also returns the points' coordinates ``(n, 2)`` (those of every
    row when the mask is all False).
    """
    geoms = np.asarray(frame.geometry.array, dtype=object)
    wrong = shapely.get_type_id(geoms) != POINT_TYPE
    wrong |= shapely.is_empty(geoms) | shapely.has_z(geoms) | shapely.has_m(geoms)
    kept = np.flatnonzero(~wrong)
    xy = shapely.get_coordinates(geoms if len(kept) == len(geoms) else geoms[kept])
    wrong[kept[~np.isfinite(xy).all(axis=1)]] = True
    return wrong, xy


_WRITE_FIX = "drop it (release.drop(columns=...)) and pass geosynth.to_public(release)"
_READ_FIX = f"geosynth never writes such a column, so {EDITED}"


def check_release_columns(
    release: gpd.GeoDataFrame, geometry: str, name: str, original: pd.Index | None,
    fix: str = _WRITE_FIX, *, released: Sequence[str] | frozenset[str] = (),
) -> None:
    """Refuse columns that may not be published: when writing, reading, or mapping a release.

    Parameters
    ----------
    release : geopandas.GeoDataFrame
        A release (or a layer read from a release file).
    geometry : str
        Name of its active geometry column (not checked).
    name : str
        How the message names the release.
    original : pandas.Index or None
        Index of the confidential input: columns bearing its name, or most of whose rows hold
        distinct labels of it (repeated or not), are refused too.
    fix : str, optional
        What to do instead, ending the message.
    released : sequence or frozenset of str, optional
        Columns the model released (:func:`released_columns`): they may be named like
        identifiers (an attribute ``region_id`` of a few levels).

    Raises
    ------
    geosynth.errors.InputError
        An internal ``_`` column, a second geometry column, (given ``original``, and not of
        a DP release, which no record's label can be in) a column linked to its labels, or a
        column named like an identifier (:func:`~geosynth.synth.release.is_identifier_name`)
        that is not in ``released``: the message ends with ``fix`` or, for an identifier of a
        column that could be an attribute, says that a model's attribute is let through by
        ``fit=``.
    """
    noisy = _drawn_from_noisy_counts(release)
    for column in release.columns:
        if column == geometry:
            continue
        label = str(column)
        if label.startswith("_"):
            raise InputError(f"{name} has an internal column {label!r}; {fix}")
        if holds_geometries(release[column]):  # with or without the geometry dtype
            raise InputError(
                f"{name} has a second geometry column {label!r}, or coordinates in it (lists, "
                f"text of numbers; only the synthetic points may be published); {fix}"
            )
        if original is None:
            continue
        if original.name is not None and column == original.name:
            raise InputError(
                f"{name} has a column {label!r}, the name of the original index; {fix}"
            )
        if noisy:  # no row is a record's: refusing by the records' labels would tell their number
            continue
        values = release[column]
        labels = _original_labels(values, original)
        if labels.size >= 2 and 2 * labels.size > len(values):
            raise InputError(
                f"{name}: the values of column {label!r} are distinct labels of the original "
                f"index (original_index) ({labels.size} of them in {len(values)} rows), so "
                f"they link synthetic to confidential records; {fix}"
            )
    if fix == _WRITE_FIX and not released:
        fix = (f"{fix}; if it is an attribute the model released, pass fit= (write_release "
               "then lets the model's attributes through) or rename it")
    check_id_columns(release, name, fix, released=released)
    if not released:
        _check_identifying_values(release, geometry, name, fix)


def _check_identifying_values(release: gpd.GeoDataFrame, geometry: str, name: str,
                              fix: str) -> None:
    """Refuse a column whose values single out rows, as prepare refuses such an attribute.

    Without the model's columns (``fit=``) a column of distinct values under a neutral name
    (``record=np.arange(n)``) was written: after to_public it still tied each synthetic point
    to one record. Floating-point columns are let through (synthetic continuous values are
    distinct by nature), and releases of fewer than ``IDENTIFYING_MIN_RECORDS`` rows, where a
    binary attribute of two rows would count as unique (the name checks still apply there).
    """
    if len(release) < IDENTIFYING_MIN_RECORDS:
        return
    for column in release.columns:
        values = release[column]
        if column == geometry or pd.api.types.is_float_dtype(values.dtype):
            continue
        described = identifying_levels(values.astype(str))
        if described is not None:
            raise InputError(
                f"{name}: the values of column {str(column)!r} single out its rows "
                f"({described}), as a record identifier would; {fix}"
            )


def _original_labels(values: pd.Series, original: pd.Index) -> np.ndarray:
    """Return the distinct values of ``values`` that are labels of ``original``.

    Labels are also matched as text (``"17"`` for the label 17). A column is linked to the
    records when most of its rows hold distinct labels: repeated labels, missing values or a
    few other values among them do not unlink it, while a categorical column whose few levels
    happen to be labels (``y`` in {0, 1} of a default index) holds too few distinct ones. The
    labels 0..n-1 of a default index are also ordinary integer values (ages, counts): a numeric
    column is linked to them only when its values are all distinct labels.
    """
    if pd.api.types.is_numeric_dtype(values) and original.equals(pd.RangeIndex(len(original))):
        linked = values.is_unique and bool(values.isin(original).all())
        return values.to_numpy() if linked else values.to_numpy()[:0]
    distinct = pd.Series(pd.unique(values.dropna()))
    if distinct.size < 2:
        return distinct.to_numpy()
    found = distinct.isin(original)
    if not found.all():
        text = original.astype(str)
        found |= distinct.astype(str).isin(text)
    return distinct[found].to_numpy()


def _check_release_index(release: gpd.GeoDataFrame, name: str, original: pd.Index | None) -> None:
    index = release.index
    if isinstance(index, pd.RangeIndex) and index.start == 0 and index.step == 1:
        # Not only with as many rows as the input: with one row dropped, the rows were still
        # the input's, in its order, and passed with no warning.
        if (
            original is not None
            and len(release) > 1
            and not is_public(release)
            and not _drawn_from_noisy_counts(release)
        ):
            raise InputError(
                f"{name} has a default 0..n-1 index and is not the output of "
                "geosynth.to_public, beside the confidential input's index (original_index): "
                "its row k may still be confidential record k (rows in the input's order); pass "
                "geosynth.to_public(release), which shuffles the rows"
            )
        if original is None and len(release) > 1 and not (
                is_public(release) or _drawn_from_noisy_counts(release)):
            warnings.warn(
                f"{name} is not marked as shuffled by geosynth.to_public (a file round trip, "
                "a merge or a new GeoDataFrame drops the mark in attrs): its row k may be "
                "confidential record k; pass geosynth.to_public(release), which shuffles the "
                "rows (shuffling again does no harm), or original_index= to have it checked",
                PrivacyLeakWarning,
                stacklevel=4,
            )
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


def _drawn_from_noisy_counts(release: gpd.GeoDataFrame) -> bool:
    """Tell whether ``release`` is a differentially private release of geosynth.

    Its records are drawn from noisy counts: no row belongs to a confidential record.
    """
    info = release_info(release)
    return info is not None and info.method in UNLINKED_METHODS


def _check_grid_and_fit(
    grid: Any, fit: Any, include_intensity: bool
) -> tuple[Grid | None, PaivaFit | None]:
    from geosynth.model.results import check_fit

    if fit is not None:
        check_fit(fit)
    if grid is not None and not isinstance(grid, Grid):
        raise InputError(f"grid must be a geosynth.Grid, got {type(grid).__name__}")
    check_bool(include_intensity, "include_intensity")
    if include_intensity and fit is None:
        raise InputError(
            "include_intensity=True needs fit= (the posterior mean intensity comes from the "
            "fit); pass fit or leave include_intensity False"
        )
    if fit is None:
        return grid, None
    if grid is None:
        return fit.grid, fit
    if grid != fit.grid:  # Grid.__eq__: cells, habitable parts, adjacency, ids, CRS
        # Two areal lattices that differ only there have the same repr: say which.
        ids = ("" if grid.public_ids == fit.grid.public_ids else
               f": its public_ids is {grid.public_ids} and the fit's {fit.grid.public_ids} (build "
               "the lattice with public_ids=True before the fit to publish the area ids)")
        if not ids and not np.array_equal(grid.exposure, fit.grid.exposure):
            ids = (f": its exposure is the {grid.exposure_source} and the fit's the "
                   f"{fit.grid.exposure_source}")
        raise InputError(
            f"grid {grid!r} is not the lattice of fit ({fit.grid!r}){ids}; omit grid to write "
            "fit.grid"
        )
    return grid, fit


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


def _grid_layer(grid: Grid, fit: PaivaFit | None) -> gpd.GeoDataFrame:
    cells = grid.cells.copy()
    if not grid.public_ids:
        # Area identifiers stay internal unless the areas are declared public (they could be
        # the keys of a confidential register).
        cells = cells.drop(columns=["area_id"], errors="ignore")
    if fit is not None:
        lam = fit.posterior_mean_lambda()
        labels = fit.counts.combination_labels()
        seen: dict[str, str] = {}
        for label in labels:  # SQLite's column names ignore case: GDAL failed mid-write
            if label.lower() in seen:
                raise InputError(
                    f"combinations {printable(seen[label.lower()])!r} and {printable(label)!r} "
                    "differ only in case, and their intensity columns (lambda_<combination>) "
                    "would be one column of a GeoPackage, whose names ignore case; write "
                    "without include_intensity (CLI: --include-intensity), or recode the levels"
                )
            seen[label.lower()] = label
        for b, label in enumerate(labels):
            cells[f"lambda_{label}"] = lam[:, b]
    return cells


def _lattice_description(grid: Grid) -> dict[str, Any]:
    square_like = grid.kind != "areal"
    return {
        "kind": grid.kind,
        "shape": list(grid.shape) if square_like else None,
        "cell_size": list(grid.cell_size) if square_like else None,
        "linked_islands": grid.n_linked_islands,
        "cut_links": grid.n_cut_links,
        "exposure": grid.exposure_source,
        "gap": grid.gap if not square_like else None,
        "bounds": list(grid.bounds),
        "contiguity": grid.contiguity,
        "n_cells": grid.n_cells,
        "n_components": grid.n_components,
        "is_clipped": grid.is_clipped,
        # None: public bounds (given, or of a region); else the bounds were derived from the
        # points and reveal their extremes to within this unit (Grid.snap_unit).
        "bounds_snap_unit": _snap_unit(grid),
        "row_order": _row_order(grid),
    }


def _row_order(grid: Grid) -> str:
    if grid.kind == "areal":
        return ("cell ids follow the rows of the areas, leaving out any area an exclusion "
                "covered wholly")
    if grid.orientation == "flat":
        # "row 0 is the southernmost row" was written for flat-top hexagons too, whose row 0
        # is the westernmost column.
        return ("flat-top hexagons in odd-q offset columns: row 0 is the westernmost column "
                "of hexagons, col 0 its southernmost hexagon, odd rows shifted half a hexagon "
                "north; cell ids are row-major")
    if grid.kind == "hexagonal":
        return ("pointy-top hexagons in odd-r offset rows (odd rows shifted half a hexagon "
                "east); row 0 is the southernmost row; cell ids are row-major")
    return "row 0 is the southernmost row; cell ids are row-major"


def _snap_unit(grid: Grid) -> list[float] | None:
    unit = getattr(grid, "snap_unit", None)
    return None if unit is None else [float(v) for v in unit]


def _model_description(fit: PaivaFit) -> dict[str, Any]:
    model = fit.model
    return {
        "name": type(model).__name__,
        "beta_prior": _as_json(model.beta_prior),
        "beta_sampler": model.beta_sampler,
        "effects": model.effects,
        "chains": fit.n_chains,
        "draws_per_chain": fit.n_draws,
        "burn_in": fit.burn_in,
        "thin": fit.thin,
        "noise_scale": fit.noise_scale,
        "attributes": list(fit.counts.attributes),
        # One column name (continuous="z"), or the list of covariates (continuous=["z1", "z2"]).
        "continuous": _as_json(fit.counts.continuous),
        "combinations": fit.counts.combination_labels(),
    }


def _as_json(value: Any) -> Any:
    """Return a tuple of names (covariates, their priors) as a JSON list; else ``value``."""
    return list(value) if isinstance(value, tuple) else value


def _fit_info(fit: PaivaFit | None) -> ReleaseInfo:
    """Return what a fit says about its releases: the method, and ε and ledger if noise-aware.

    A noise-aware fit's counts (:class:`geosynth.dp.NoisyCounts`) are a
    :class:`~geosynth.synth.release.ReleaseInfoSource` that records them.
    """
    if fit is None:
        return ReleaseInfo()
    if fit.noise_scale is None:
        return ReleaseInfo(method="paiva")
    if isinstance(fit.counts, ReleaseInfoSource):
        return fit.counts.release_info()
    return ReleaseInfo(method="paiva-dp")


def _warn_seeded_noise(what: str, stacklevel: int) -> None:
    """PrivacyLeakWarning: ``what`` (e.g. "release.gpkg holds") DP releases of seeded noise."""
    warnings.warn(
        f"{what} differentially private releases whose noise was drawn from a seed (tests "
        "only): whoever knows or guesses the seed can remove the noise, so they are not "
        "differentially private whatever epsilon the file states; do not publish them (make "
        "the release again without a seed)",
        PrivacyLeakWarning,
        stacklevel=stacklevel,
    )


def _warn_unknown_method(name: str) -> None:
    """PrivacyLeakWarning: nothing says how the points of ``name`` were made.

    ``to_public(original)`` passed every check and published the confidential points, exactly:
    without a fit, a ``metadata`` method or a record of a geosynth synthesizer on the releases,
    the writer cannot tell synthetic points from the records themselves.
    """
    warnings.warn(
        f"{name}: nothing records how its points were made (no fit=, no metadata method, no "
        "record of a geosynth synthesizer on the releases), so the writer cannot tell them "
        "from the original records, which would be published exactly; pass fit= (or "
        "metadata={'method': ...} for releases made elsewhere) once you know they are synthetic",
        PrivacyLeakWarning,
        stacklevel=3,
    )


def _check_drawn_from_a_fit(releases: Sequence[gpd.GeoDataFrame]) -> None:
    """Refuse, beside ``fit=``, a release that no geosynth synthesizer recorded drawing.

    ``fit=`` names the method in the file, so ``to_public(original)`` given with a fit was
    published as the fit's synthetic points, with no warning: every point a confidential
    record's own location. The synthesizers record themselves on each release
    (:func:`geosynth.synth.release.release_info`), and :func:`geosynth.to_public` keeps it.
    """
    for k, release in enumerate(releases, start=1):
        if is_published(release):
            # It carries its file's record, which names no fit: which one drew it is unknown.
            raise InputError(
                f"release {k} ({RELEASE_LAYER.format(k)}) was read from a release file, which "
                "does not say which fit drew it; write it without fit= (its record, read from "
                "the file, is kept)"
            )
        if release_info(release) is None:
            raise InputError(
                f"release {k} ({RELEASE_LAYER.format(k)}) carries no record of the synthesizer "
                "that drew it, so with fit= the file would call points of unknown origin (the "
                "original records themselves, for to_public of the input) the fit's synthetic "
                "points; pass geosynth.to_public(r) of each release r that geosynth.synthesize "
                "drew from the fit (pandas keeps the record through selections and renames; "
                "pd.concat and some constructors drop it)"
            )


def _claims_privacy_without_it(info: ReleaseInfo) -> bool:
    """Whether a record names a method made without DP and yet an ε, a noise or a ledger."""
    return info.method in _EXACT_METHODS and any(
        value is not None for value in (info.epsilon, info.noise, info.ledger))


def _check_privacy_claim(given: ReleaseInfo, found: ReleaseInfo, from_fit: ReleaseInfo) -> None:
    """Refuse ``metadata=`` whose method, ε or ledger contradicts the library's own record.

    Where the releases or the fit say how they were made, the file states that and nothing
    else: ``metadata={"epsilon": 0.5}`` on the releases of an exact fit published a privacy
    guarantee the release does not have.
    """
    if _claims_privacy_without_it(given):
        raise InputError(
            f"metadata names method {printable(given.method)!r}, made without differential "
            "privacy, and an epsilon, a noise or a ledger: the file would claim a privacy it "
            "does not have; leave them out"
        )
    own_method = found.method or from_fit.method
    if own_method is None:
        return  # releases made outside geosynth: the caller's record is all there is
    for key in ("method", "epsilon", "noise", "ledger"):
        claimed = getattr(given, key)
        own = getattr(found, key) or getattr(from_fit, key)
        if claimed is not None and claimed != own:
            raise InputError(
                f"metadata[{key!r}] = {printable(claimed)!r} contradicts how these releases were "
                f"made ({key} {printable(own)!r}): the file would claim a privacy it does not "
                f"have; leave {key!r} out of metadata (it is filled in from the releases)"
            )


def _file_info(
    releases: Sequence[gpd.GeoDataFrame],
    frames: list[gpd.GeoDataFrame],
    grid: Grid | None,
    fit: PaivaFit | None,
    include_intensity: bool,
    metadata: Any,
    notes: Any,
    crs: pyproj.CRS | None,
    seed_values: set[int],
) -> ReleaseInfo:
    """Build the record of the file: the caller's values, else the releases', else the fit's."""
    import geosynth

    given = _check_metadata(metadata)
    if notes is None:
        notes = given.notes
    if notes is not None and not isinstance(notes, str):
        raise InputError(f"notes must be a str (free text), got {type(notes).__name__}")
    found = ReleaseInfo.of_set(releases)
    if fit is not None:
        _check_drawn_from_a_fit(releases)
    from_fit = _fit_info(fit)
    _check_privacy_claim(given, found, from_fit)
    ledger = given.ledger or found.ledger or from_fit.ledger
    info = given.replace(
        method=given.method or found.method or from_fit.method,
        epsilon=given.epsilon or found.epsilon or from_fit.epsilon,
        noise=given.noise or found.noise or from_fit.noise,
        ledger=ledger,
        size=given.size or found.size,
        notes=notes,
        parameters=_file_limits(found, frames),
    )
    _check_published(info, seed_values)
    _check_crs_text(crs, seed_values)
    spent = ledger.get("spent", {}).get("epsilon") if ledger is not None else None
    if info.epsilon is None and spent:  # the ledger's total (0: nothing was spent, no ε)
        info = info.replace(epsilon=spent)
    return info.replace(
        geosynth_version=geosynth.__version__,
        created_utc=_creation_time().isoformat(timespec="seconds"),
        crs=_crs_label(crs),
        m=len(frames),
        n_records=tuple(len(frame) for frame in frames),
        lattice=None if grid is None else _lattice_description(grid),
        model=None if fit is None else _model_description(fit),
        priors=None if fit is None else fit.model.priors.to_dict(),
        intensity=(
            "grid columns lambda_<combination>: posterior mean expected records per cell"
            if include_intensity
            else None
        ),
    )


def _file_limits(found: ReleaseInfo, frames: list[gpd.GeoDataFrame]) -> dict[str, Any]:
    """Return the releases' recorded ``limits`` of the columns the file's release layers hold.

    Limits are the analyst's public statements, not data: writing them discloses nothing, and
    tells users of the file which columns were drawn truncated, and to what range.
    """
    limits = found.parameters.get(LIMITS_PARAMETER) or {}
    held = {column: pair for column, pair in limits.items() if column in frames[0].columns}
    return {LIMITS_PARAMETER: held} if held else {}


def _check_published(info: ReleaseInfo, seed_values: set[int]) -> None:
    """Refuse a record holding a seed, or a ledger or size that :func:`read_release` refuses."""
    # Everything that did not come from the library itself is scanned for seeds.
    for key in ("method", "epsilon", "ledger", "size", "notes", "data", "n_public"):
        where = "notes" if key == "notes" else f"metadata[{key!r}]"
        problem = _seed_problem(_jsonable(getattr(info, key), where), where, seed_values)
        if problem is not None:
            raise InputError(
                f"{problem}; seeds and generator state must not be published: pass seeds as "
                "seeds= (they go to the private audit file) and remove them from metadata= and "
                "notes="
            )
    for key in ("ledger", "size"):  # after the seeds: a seed is the worse problem
        problem = _type_problem(_jsonable(getattr(info, key), key), _SCHEMA[key], key)
        if problem is not None:
            raise InputError(f"metadata {problem}; {_SCHEMA_FIX[key]}")


def _check_crs_text(crs: pyproj.CRS | None, seed_values: set[int]) -> None:
    """Refuse a CRS whose published text holds a seed.

    A CRS without an authority code is published as its WKT, twice (the metadata's ``crs`` and
    the GeoPackage's ``gpkg_spatial_ref_sys``), name and remarks included: a custom CRS named
    "seed 918273645" put the seed given to ``seeds=`` into the file four times.
    """
    if crs is None or crs.to_authority() is not None:
        return
    # Its names and remarks, the free text of a CRS: its parameters are numbers (a false
    # easting of 500000) that a seed may equal by chance, and no name can change them.
    texts: list[str] = []
    stack: list[Any] = [crs.to_json_dict()]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            texts += [str(v) for k, v in item.items() if k in ("name", "remarks", "scope")]
            stack += [v for k, v in item.items() if k not in ("name", "remarks", "scope")]
        elif isinstance(item, list):
            stack += item
    problem = _seed_problem(" ; ".join(texts), "the releases' CRS (its WKT is published)",
                            seed_values)
    if problem is not None:
        raise InputError(f"{problem}; seeds must not be published: give the CRS a name and "
                         "remarks without them (or use its EPSG code)")


def _metadata_table(info: ReleaseInfo) -> pd.DataFrame:
    """Return the ``key, value`` table of ``info``, each value a JSON text."""
    rows = []
    for key, value in metadata_from_info(info).items():
        try:
            text = json.dumps(value, allow_nan=False)
        except (TypeError, ValueError) as err:
            raise InputError(f"metadata[{key!r}] is not JSON-serialisable: {err}") from err
        rows.append((key, text))
    return pd.DataFrame(rows, columns=["key", "value"])


def metadata_from_info(info: ReleaseInfo) -> dict[str, Any]:
    """Return the metadata table of a release file of ``info``, as JSON values in file order.

    Parameters
    ----------
    info : geosynth.synth.release.ReleaseInfo
        The record of the file; ``m`` and ``n_records`` must be set.

    Returns
    -------
    dict
        ``format``, ``format_version``, ``geosynth_version``, ``created_utc``, ``crs``, ``m``,
        ``layers``, ``n_records``, ``method``, ``lattice``, ``model``, ``priors``,
        ``limits`` (only when ``info.parameters`` records them), ``epsilon``, ``noise``,
        ``ledger``, ``size``, ``intensity``, ``notes``, ``data`` and ``n_public`` (these
        three only when set) and, last, ``complete`` (every layer of the file: the releases,
        ``grid`` when a lattice is described, ``metadata``). Values are plain JSON (``null``
        when unknown; an infinite ε is ``"inf"``). ``format_version`` is 4 with ``limits``,
        else 3.

    Raises
    ------
    geosynth.errors.InputError
        ``m`` or ``n_records`` is not set, or a value cannot be written as JSON.
    """
    if not isinstance(info, ReleaseInfo):
        raise InputError(f"info must be a geosynth ReleaseInfo, got {type(info).__name__}")
    if info.m is None or info.n_records is None:
        raise InputError("a release file's record needs m and n_records (write_release sets "
                         "them)")
    layers = [RELEASE_LAYER.format(k) for k in range(1, info.m + 1)]
    limited = LIMITS_PARAMETER in info.parameters
    values: dict[str, Any] = {"format": _FORMAT,
                              "format_version": _LIMITS_VERSION if limited else _FORMAT_VERSION}
    for key in _INFO_KEYS:
        if key == "layers":
            values[key] = layers
            continue
        value = info.parameters.get(key) if key == LIMITS_PARAMETER else getattr(info, key)
        if key not in _OPTIONAL_KEYS or value is not None:
            values[key] = _jsonable(value, f"metadata[{key!r}]")
    every_layer = [*layers, *([GRID_LAYER] if info.lattice is not None else []), METADATA_LAYER]
    values[COMPLETE_KEY] = {"layers": every_layer, "n_layers": len(every_layer)}  # the last row
    return values


def info_from_metadata(metadata: Mapping[str, Any]) -> ReleaseInfo:
    """Return the record a release file's metadata holds (as :func:`read_release` decoded it).

    Parameters
    ----------
    metadata : Mapping
        ``ReleaseFile.metadata``, checked against the schema by :func:`read_release`.

    Returns
    -------
    geosynth.synth.release.ReleaseInfo
        Every field the file records (per-release fields such as ``release`` are None);
        ``n_records`` as a tuple, an ε of ``"inf"`` as ``math.inf``, ``limits`` in
        :attr:`~geosynth.synth.release.ReleaseInfo.parameters`.
        ``metadata_from_info(info_from_metadata(metadata))`` gives the table back.
    """
    values = {key: metadata.get(key) for key in _INFO_KEYS
              if key not in {"layers", LIMITS_PARAMETER}}
    limits = metadata.get(LIMITS_PARAMETER)
    values["parameters"] = {} if limits is None else {LIMITS_PARAMETER: limits}
    if values["n_records"] is not None:
        values["n_records"] = tuple(values["n_records"])
    if values["epsilon"] == "inf":
        values["epsilon"] = math.inf
    return ReleaseInfo(**values)


def _check_metadata(metadata: Any) -> ReleaseInfo:
    """Return the caller's ``metadata``, restricted to :data:`METADATA_KEYS` and type-checked."""
    if metadata is None:
        return ReleaseInfo()
    if isinstance(metadata, ReleaseInfo):
        given = {key: getattr(metadata, key) for key in sorted(METADATA_KEYS)}
        for key, value in given.items():
            if value is not None:
                _check_metadata_value(key, value)
        return ReleaseInfo(**given, notes=metadata.notes)
    if not isinstance(metadata, Mapping):
        raise InputError(f"metadata must be a dict of str keys or a ReleaseInfo, got "
                         f"{type(metadata).__name__}")
    allowed = ", ".join(sorted(METADATA_KEYS))
    extra = {}
    for key, value in metadata.items():
        if not isinstance(key, str):
            raise InputError(f"metadata keys must be str, got {key!r}; allowed keys: {allowed}")
        if key in RESERVED_KEYS:
            raise InputError(
                f"metadata[{key!r}] is computed by write_release and cannot be set"
                + ("; pass free text as notes=" if key == "notes" else "")
            )
        if key not in METADATA_KEYS:
            raise InputError(
                f"metadata[{key!r}]: the release metadata follows geosynth's schema and has no "
                f"key {key!r}; allowed keys: {allowed}; put free text in notes="
            )
        if value is not None:
            _check_metadata_value(key, value)
        extra[key] = value
    return ReleaseInfo(**extra)


def _check_metadata_value(key: str, value: Any) -> None:
    number = isinstance(value, int | float | np.integer | np.floating) and not isinstance(
        value, bool | np.bool_
    )
    if key in ("method", "data") and not isinstance(value, str):
        raise InputError(f"metadata[{key!r}] must be a str, got {type(value).__name__}")
    if key == "epsilon" and not (number and float(value) > 0):
        raise InputError(f"metadata['epsilon'] must be a number > 0, got {value!r}")
    if key == "noise" and value not in NOISE_SOURCES:
        raise InputError(f"metadata['noise'] must be one of {sorted(NOISE_SOURCES)}, got "
                         f"{printable(value)!r}")
    if key == "ledger" and not isinstance(value, Mapping):
        raise InputError(
            f"metadata['ledger'] must be a dict such as Accountant.to_dict(), got "
            f"{type(value).__name__}"
        )
    if key == "size" and not isinstance(value, Mapping):
        raise InputError(
            f"metadata['size'] must be a dict such as {{'rule': 'n_public', 'n_public': 500}}, "
            f"got {type(value).__name__}"
        )
    if key == "n_public" and not (
        isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)
        and value >= 0
    ):
        raise InputError(f"metadata['n_public'] must be an int >= 0, got {value!r}")


def _seed_integers(seeds: Any) -> set[int]:
    """Every integer in ``seeds`` (ints, lists, SeedSequence entropy and spawn keys)."""
    if seeds is None:
        return set()
    if not isinstance(seeds, Mapping):
        raise InputError(
            f"seeds must be a dict of name -> seed (e.g. {{'synthesize': 3}}), got "
            f"{type(seeds).__name__}"
        )
    _check_seed_values(seeds)
    found: set[int] = set()
    stack = [_jsonable(dict(seeds), "seeds")]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, int) and not isinstance(item, bool):
            found.add(item)
        elif isinstance(item, str) and item.lstrip("+-").isdigit():
            found.add(int(item))
    return found


def _seed_problem(value: Any, where: str, seed_values: set[int]) -> str | None:
    """Describe a seed or generator state in the JSON value ``value``, or return None.

    Keys and text are compared in a plain spelling (:func:`_plain_text`); a key may itself be a
    seed, and a list of pairs (``[["seed", 42]]``) is read as the object it spells.
    """
    long_seeds = {abs(s) for s in seed_values if abs(s) >= _LONG_SEED}
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        item, place = stack.pop()
        if isinstance(item, dict):
            for key, inner in item.items():
                if _SEED_KEY.search(_plain_text(str(key))):
                    return (f"{place} has the key {printable(key)!r}, which names a seed or "
                            "generator state")
                if _holds_seed(str(key), long_seeds):
                    return f"{place} has a key that is one of the seeds given in seeds="
                stack.append((inner, f"{place}[{printable(key)!r}]"))
        elif isinstance(item, list):
            for i, (first, second) in enumerate(zip(item, item[1:], strict=False)):
                if (isinstance(first, str) and _SEED_KEY.search(_plain_text(first))
                        and len(first.split()) == 1 and _is_number(second)):
                    return (f"{place}[{i}] is {printable(first)!r} followed by a number, which "
                            "names a seed or generator state")
            stack.extend((inner, f"{place}[{i}]") for i, inner in enumerate(item))
        elif isinstance(item, bool) or item is None:
            continue
        elif isinstance(item, int | float):
            if _is_seed_number(item, long_seeds):
                return f"{place} holds one of the seeds given in seeds="
        elif isinstance(item, str):
            match = _SEED_TEXT.search(_plain_text(item))
            if match:
                return f"{place} contains {printable(match.group(0))!r}, which looks like a seed"
            if _holds_seed(item, long_seeds):
                return f"{place} contains one of the seeds given in seeds="
    return None


def _plain_text(text: str) -> str:
    """Return ``text`` spelled plainly: NFKD, no accents or format characters, Latin look-alikes.

    ``"ｓｅｅｄ=４２"``, ``"se\u200bed=42"``, ``"seéd=42"`` and ``"sеed=42"`` (Cyrillic е) all
    become ``"seed=42"``.
    """
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    kept = "".join(c for c in decomposed if unicodedata.category(c) not in ("Mn", "Cf"))
    return kept.translate(_LOOKALIKES)


def _holds_seed(text: str, long_seeds: set[int]) -> bool:
    """Whether ``text`` spells one of ``long_seeds``.

    As digits (``918273645``, ``918,273,645``, ``918_273_645``, ``918 273 645``), hexadecimal
    (``0x36bbd56d``) or in scientific notation (``9.18273645e8``).
    """
    if not long_seeds:
        return False
    text = _plain_text(text)
    if any(int(digits) in long_seeds for digits in _DIGITS.findall(text)):
        return True
    grouped = re.sub(r"(?<=\d)[\s_,.'’](?=\d{3}(?!\d))", "", text)
    if any(int(digits) in long_seeds for digits in _DIGITS.findall(grouped)):
        return True
    lowered = text.lower()
    for seed in long_seeds:
        hexadecimal = format(seed, "x")  # all digits: only with its 0x (it may be a count)
        prefix = "(?:0x)?" if hexadecimal.strip("0123456789") else "0x"
        if re.search(rf"(?<![0-9a-z]){prefix}{hexadecimal}(?![0-9a-z])", lowered):
            return True
    return any(_is_seed_number(float(number), long_seeds)
               for number in _EXPONENT.findall(text))


def _is_seed_number(value: int | float, long_seeds: set[int]) -> bool:
    """Whether the whole number ``value`` is one of ``long_seeds``, or rounds as one does."""
    number = float(value)
    return number.is_integer() and (abs(int(value)) in long_seeds
                                    or abs(number) in {float(s) for s in long_seeds})


def _check_seed_values(seeds: Mapping[str, Any]) -> None:
    """Refuse a value of ``seeds`` that is no seed (NaN, 1.5, "42", True), naming its place.

    A seed is None, an int >= 0 or a SeedSequence (as :func:`geosynth._random.check_seed`
    takes them), or a list, tuple, integer array or dict of seeds (e.g. the entropy of a
    SeedSequence). A NaN was written to the audit file as ``null`` and a float as a number no
    generator takes.
    """
    pending: list[tuple[str, Any]] = [(f"seeds[{k!r}]", v) for k, v in seeds.items()]
    while pending:
        place, value = pending.pop()
        if isinstance(value, np.ndarray):
            value = value.tolist() if value.dtype.kind in "iu" else value
        if isinstance(value, Mapping):
            pending.extend((f"{place}[{k!r}]", v) for k, v in value.items())
        elif isinstance(value, list | tuple):
            pending.extend((f"{place}[{i}]", v) for i, v in enumerate(value))
        elif isinstance(value, np.random.Generator):
            continue  # refused by _jsonable, with the fix
        elif not (value is None or isinstance(value, np.random.SeedSequence)
                  or (is_integer(value) and value >= 0)):
            raise InputTypeError(
                f"{place} must be None, an int >= 0, a numpy SeedSequence or a list of these, "
                f"got {describe_value(value)}; record the seed given to the function")


def _is_number(value: Any) -> bool:
    """Whether the JSON value ``value`` is a number, or text of an integer (``"42"``)."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int | float) or (
        isinstance(value, str) and value.strip().lstrip("+-").isdigit())


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


def _audit_record(target: Path, seeds: Any, provenance: Any = None) -> dict[str, Any]:
    import geosynth

    if provenance is not None and not isinstance(provenance, Mapping):
        raise InputError(f"provenance must be a mapping of name -> JSON value (the inputs and "
                         f"options of the release), got {type(provenance).__name__}")

    record: dict[str, Any] = {
        "note": "PRIVATE: these seeds with the confidential data reproduce the release; "
        "do not publish this file",
        "release": target.name,
        "geosynth_version": geosynth.__version__,
        "created_utc": _creation_time().isoformat(timespec="seconds"),
        "seeds": None if seeds is None else _jsonable(dict(seeds), "seeds"),
    }
    if seeds is None:
        record["note"] = (
            "PRIVATE: no seeds were recorded for this release (e.g. differentially private "
            "noise from fresh OS entropy)"
            + ("; it records how the release was made" if provenance is not None else
               "; this file replaced the audit file of the release it overwrote")
        )
    if provenance is not None:
        record["provenance"] = _jsonable(dict(provenance), "provenance")
    return record


# ---------------------------------------------------------------------- reading releases
# The schema of format version 2: key -> type. A type is one of _SCALARS ("str", "int", ...),
# ("optional", type), ("list", type, length or None), ("mapping", type of every value),
# ("either", type, type), ("one_of", word, word), a dict of required fields, ("some_of", dict)
# of fields each of which may be left out, or ("tagged", key, {word: dict}): the dict of fields
# named by the value of ``key``.
# One name or several (continuous covariates and their β priors; files with one str still read).
_NAMES = ("either", "str", ("list", "str", None))
_LATTICE_FIELDS = {
    "bounds": ("list", "number", 4),
    "contiguity": "str",
    "n_cells": "int",
    "n_components": "int",
    "is_clipped": "bool",
    "bounds_snap_unit": ("optional", ("list", "number", 2)),
    "row_order": "str",
}
_SQUARE_LATTICE_SCHEMA = {  # files written before hexagonal and areal lattices
    "shape": ("list", "int", 2),
    "cell_size": ("list", "number", 2),
    **_LATTICE_FIELDS,
}
_LATTICE_SCHEMA_BEFORE_GAP = {  # files written before areal lattices recorded their gap
    "kind": "str",
    "shape": ("optional", ("list", "int", 2)),  # None for areal units
    "cell_size": ("optional", ("list", "number", 2)),
    "linked_islands": "int",
    **_LATTICE_FIELDS,
}
_LATTICE_SCHEMA_BEFORE_CUTS = {**_LATTICE_SCHEMA_BEFORE_GAP, "gap": ("optional", "number")}
_LATTICE_SCHEMA_BEFORE_EXPOSURE = {**_LATTICE_SCHEMA_BEFORE_CUTS,
                                   "cut_links": "int"}  # links across barriers
_LATTICE_SCHEMA = {**_LATTICE_SCHEMA_BEFORE_EXPOSURE, "exposure": "str"}  # Grid.exposure_source
_MODEL_SCHEMA = {
    "name": "str",
    "beta_prior": ("optional", _NAMES),
    "beta_sampler": ("optional", "str"),
    "effects": "str",
    "chains": "int",
    "draws_per_chain": "int",
    "burn_in": "int",
    "thin": "int",
    "noise_scale": ("optional", "number"),
    "attributes": ("list", "str", None),
    "continuous": ("optional", _NAMES),
    "combinations": ("list", "str", None),
}
# The ε ledger: Accountant.to_dict() of geosynth.dp.accountant (rows of its LEDGER_COLUMNS,
# blocks of its BLOCK_COLUMNS). A caller's ledger (metadata=) may leave parts out, add none: a
# key added by hand was published, and printed by ``geosynth inspect``, as part of the ledger.
_COMPOSITION = ("one_of", "sequential", "parallel")
_COST = {"epsilon": "nonneg", "delta": "delta"}
_LEDGER_SCHEMA = ("some_of", {
    "format": ("one_of", "geosynth.dp.Accountant"),
    "version": "int",
    "budget": {"epsilon": "epsilon", "delta": "delta"},
    "spent": _COST,
    "remaining": {"epsilon": "epsilon_left", "delta": "delta"},
    "ledger": ("list", {"label": ("optional", "str"), **_COST, "composition": _COMPOSITION,
                        "group": ("optional", "int"), "cumulative_epsilon": "nonneg",
                        "cumulative_delta": "delta"}, None),
    "blocks": ("list", {"id": "int", "label": ("optional", "str"), "composition": _COMPOSITION,
                        "parent": ("optional", "int"), **_COST}, None),
})
# How the size of an ε-DP release was set: one of the two rules of geosynth.dp.locations.
_SIZE_SCHEMA = ("tagged", "rule", {
    "n_public": {"rule": "str", "n_public": "int"},
    "dp-estimate": {"rule": "str", "cap": "int",
                    "cap_from": ("one_of", "noisy total + 5 sd", "max_records"),
                    "noisy_total": "integer"},  # of noisy counts: may be negative
})
_SCHEMA_FIX = {
    "ledger": "pass the ledger of a geosynth.dp.Accountant, accountant.to_dict(), or leave it out",
    "size": "pass {'rule': 'n_public', 'n_public': N} for releases sized to a published total "
            "N, or leave size out (a DP release records its own)",
}
_SCHEMA: dict[str, Any] = {
    "format": "str",
    "format_version": "int",
    "geosynth_version": "str",
    "created_utc": "str",
    "crs": ("optional", "str"),
    "m": "int",
    "layers": ("list", "str", None),
    "n_records": ("list", "int", None),
    "method": ("optional", "str"),
    "lattice": ("optional", ("either", _LATTICE_SCHEMA, _LATTICE_SCHEMA_BEFORE_EXPOSURE,
                                     _LATTICE_SCHEMA_BEFORE_CUTS,
                                     _LATTICE_SCHEMA_BEFORE_GAP, _SQUARE_LATTICE_SCHEMA)),
    "model": ("optional", _MODEL_SCHEMA),
    "priors": ("optional", ("mapping", "number")),
    # column -> [low, high] (null: an open end) of a release drawn with limits (version 4)
    LIMITS_PARAMETER: ("optional", ("mapping", ("list", ("optional", "number"), 2))),
    "epsilon": ("optional", "epsilon"),
    "noise": ("optional", "str"),
    "ledger": ("optional", _LEDGER_SCHEMA),
    "size": ("optional", _SIZE_SCHEMA),
    "intensity": ("optional", "str"),
    "notes": ("optional", "str"),
    "data": ("optional", "str"),
    "n_public": ("optional", "int"),
    COMPLETE_KEY: {"layers": ("list", "str", None), "n_layers": "int"},
}
#: Keys the writer writes only when given.
_OPTIONAL_KEYS = frozenset({"noise", "data", "n_public", LIMITS_PARAMETER})
#: Keys of the table between ``format_version`` and ``complete``, in file order: each holds the
#: ReleaseInfo field of its name, except ``layers`` (the release layers, from ``m``) and
#: ``limits`` (``ReleaseInfo.parameters["limits"]``).
_INFO_KEYS = tuple(key for key in _SCHEMA if key not in {"format", "format_version",
                                                          COMPLETE_KEY})


def read_release(path: str | os.PathLike, *, check_audit: bool = True) -> ReleaseFile:
    """Read a release GeoPackage written by :func:`write_release`, checking it against its schema.

    Parameters
    ----------
    path : str or os.PathLike
        The GeoPackage.
    check_audit : bool, default True
        If the private audit file ``<path>.audit.json`` lies beside the release (and can be
        read), check that the SHA-256 it records is the GeoPackage's. Only True or False (a
        NumPy bool too) is accepted: ``"no"`` would be truthy, ``None`` falsy.

    Returns
    -------
    ReleaseFile
        The releases (``synthetic_1`` .. ``synthetic_m`` in numeric order), the grid layer (or
        None), the decoded metadata, the layer names and the verified audit file (or None).
        The audit file's seeds are not read into the result.

    Raises
    ------
    geosynth.errors.InputTypeError
        ``check_audit`` is not a bool, or ``path`` is not a file path.
    geosynth.errors.InputError
        One message saying what is wrong: the file does not exist, is not a GeoPackage or is
        damaged; it is not a geosynth release (no metadata, another ``format``); it is
        incomplete (no ``complete`` entry as the last metadata row, a layer it lists is missing,
        a release layer has fewer rows than its metadata records) or edited (extra layers such
        as ``synthetic_01``, duplicate or unknown metadata keys, a metadata table without its
        ``key``/``value`` columns, a value that is not JSON, nested too deeply or of the wrong
        type, a release layer that is not a point layer or in another CRS, a grid layer with
        a column the writer never gives it, or cells with Z or M coordinates, ``limits``
        that are no limits (an end not finite, low >= high, two open ends) or name a column
        the releases do not have, values geosynth never draws (a point outside the grid
        layer's cells, a missing value in a column of the model, a value outside the recorded
        ``limits``), an SQLite table
        that is neither a layer nor one of the GeoPackage's own, or any SQL view); or it holds
        data geosynth never writes in the GeoPackage's own tables, so it was altered after it
        was written (rows in ``gpkg_metadata``, ``gpkg_metadata_reference``,
        ``gpkg_data_columns``, ``gpkg_data_column_constraints`` or the tile tables; a
        ``gpkg_contents`` row for no layer, or with an identifier other than the layer name, a
        description, a time stamp that is not one, an extent other than its features'; a
        spatial index ``rtree_<layer>_geom`` that is not SQLite's R*Tree with GDAL's columns,
        holds other boxes than the features' bounds, or holds bytes, nodes or inner boxes
        beside its tree; triggers, indexes, columns of the GeoPackage's tables, or words,
        literals, numbers or comments in the SQL of its schema that GDAL never writes; rows of
        ``gpkg_ogr_contents``, ``sqlite_sequence``, ``gpkg_geometry_columns``,
        ``gpkg_extensions`` or ``sqlite_stat*`` other than GDAL's for the layers; rows of
        ``gpkg_spatial_ref_sys`` other than GDAL's defaults and the layers' CRS as the metadata
        records it; GeoPackage ids or reserved bytes in the SQLite header other than SQLite's
        and GDAL's, free pages, pages SQLite's integrity check finds no table reading, or
        bytes past the last page); the message names the table, never its content; SQLite's
        ``-wal``, ``-shm`` or ``-journal`` files beside it (checked before anything opens it,
        as opening would merge them into it); a model fitted to noisy counts under a method
        made without noise; or the audit file
        beside it does not belong to it (:func:`verify_audit`).

    Warns
    -----
    geosynth.errors.PrivacyLeakWarning
        The file's DP releases record seeded noise (metadata ``noise`` ``"seeded"``): they are
        not private, whatever ε the file states.

    Notes
    -----
    A release layer with 0 rows is accepted when its metadata records 0 records (an ε-DP
    release may be empty); ``geosynth evaluate`` refuses it.
    """
    check_audit = check_bool(check_audit, "check_audit")
    source = existing_file(path)
    name = printable(source.name)
    problem = geopackage_problem(source)
    if problem is not None:
        raise not_a_geopackage(source, problem)
    _refuse_journals(source, name)  # before GDAL opens it: it would replay them into the file
    try:
        listed = pyogrio.list_layers(source)
    except GDAL_ERRORS as err:
        raise not_a_geopackage(source, err) from None
    layers = [str(layer) for layer in listed[:, 0]]
    kinds = {str(layer): (None if kind is None else str(kind)) for layer, kind in listed}
    hidden = hidden_objects(source, layers)
    if hidden:
        raise InputError(
            f"{name} holds the SQLite {', '.join(hidden)}, which no layer lists and geosynth "
            f"never writes (data in them travels with the file unseen), so {EDITED}"
        )
    if METADATA_LAYER not in layers:
        if not any(_RELEASE_LAYER_RE.match(layer) for layer in layers):
            raise InputError(
                f"{name} is not a geosynth release: it has no metadata table and no "
                f"synthetic_<k> layer (layers: {_shown(layers)})"
            )
        raise _incomplete(name, "it has no metadata table")
    if kinds[METADATA_LAYER] is not None:
        raise _incomplete(name, f"its {METADATA_LAYER!r} layer is spatial, not a key/value table")
    table = _read_layer(source, METADATA_LAYER, _MAX_METADATA_ROWS + 1)
    metadata = _decode_metadata(table, name)
    _check_schema(metadata, name)
    check_gpkg_tables(source, name, layers, kinds)  # a geosynth release: its own tables
    check_column_types(source, name, layers)  # before GDAL reads its values as others
    if metadata.get("noise") == NOISE_SEEDED:
        _warn_seeded_noise(f"{name} holds", stacklevel=3)
    releases, bounds = _read_releases(source, name, metadata, layers, kinds)
    unheld = [column for column in metadata.get(LIMITS_PARAMETER) or {}
              if column not in releases[0].columns]
    if unheld:
        raise InputError(f"{name}: its metadata 'limits' name columns {_shown(unheld)} that its "
                         f"releases do not have, so {EDITED}")
    lattice = metadata["lattice"]
    grid = None
    if lattice is not None:
        grid = _read_layer(source, GRID_LAYER, lattice["n_cells"] + 1)
        if not isinstance(grid, gpd.GeoDataFrame) or len(grid) != lattice["n_cells"]:
            rows = len(grid) if isinstance(grid, pd.DataFrame) else 0
            rows = f"more than {lattice['n_cells']}" if rows > lattice["n_cells"] else rows
            raise _incomplete(
                name, f"its grid layer has {rows} cells but its metadata records "
                f"{lattice['n_cells']}"
            )
        if not _crs_equal(grid.crs, releases[0].crs):
            raise _incomplete(name, f"its grid layer is in {_crs_label(grid.crs)}, but its "
                                    f"releases in {_crs_label(releases[0].crs)}")
        cells = np.asarray(grid.geometry.array, dtype=object)
        polygons = np.isin(shapely.get_type_id(cells), (POLYGON_TYPE, MULTIPOLYGON_TYPE))
        if not polygons.all():
            raise _incomplete(name, f"its grid layer has {int((~polygons).sum())} cells that are "
                                    "not polygons")
        third = shapely.has_z(cells) | shapely.has_m(cells)  # a value per cell, unchecked
        if third.any():
            raise InputError(f"{name}: its grid layer has {int(third.sum())} cells with Z or M "
                             f"coordinates, which geosynth never writes, so {EDITED}")
        _check_stored_columns(source, name, GRID_LAYER, grid)
        extra = [str(c) for c in grid.columns
                 if c != grid.geometry.name and str(c) not in _grid_columns(metadata)]
        if extra:
            raise InputError(f"{name}: its grid layer has columns {_shown(extra)}, which "
                             f"geosynth never writes there, so {EDITED}")
        problem = _lattice_problem(lattice, grid)
        if problem is not None:
            raise InputError(f"{name}: its metadata 'lattice' {problem}, so {EDITED}")
    _check_release_values(releases, metadata, grid, name)
    check_spatial_indexes(source, name, [*metadata["layers"], *([GRID_LAYER] if grid is not None
                                                                   else [])], bounds)
    check_unread_room(source, name, layers, kinds, metadata.get("crs"))  # last: says least
    # Each release carries the file's record: how it was made (its epsilon) decides, e.g., the
    # combining rules geosynth.evaluate takes for it.
    # Its columns, as published, are recorded too: the file may be written again as it is.
    record = info_from_metadata(metadata)
    for frame in releases:
        set_release_info(frame, record)
        record_columns(frame)
    audit = None
    if check_audit:
        try:
            audit = audit_path(source) if verify_audit(source) is not None else None
        except OSError:  # e.g. another user's 0600 audit file: nothing to check against
            audit = None
    return ReleaseFile(releases=releases, grid=grid, metadata=metadata, layers=layers,
                       audit=audit)


def _check_stored_columns(source: Path, name: str, layer: str, frame: pd.DataFrame) -> None:
    """Refuse columns of ``layer``'s table that GDAL did not read (:func:`stored_columns`)."""
    read = {str(column) for column in frame.columns if column != frame.geometry.name}
    unread = [column for column in stored_columns(source, layer) if column not in read]
    if unread:
        raise InputError(f"{name}: its layer {layer!r} has columns {_shown(unread)} that GDAL "
                         "does not read back (a column named as the geometry is replaced by "
                         f"the points: its values travel unseen), so {EDITED}")


def _check_release_values(releases: list[gpd.GeoDataFrame], metadata: dict[str, Any],
                          grid: gpd.GeoDataFrame | None, name: str) -> None:
    """Refuse release values that geosynth never draws, naming the layer and never the value.

    Every synthetic point lies in a cell of the grid layer; the model's columns hold no missing
    value; a continuous column with recorded ``limits`` lies within them. A release edited
    after it was written (a point moved 1,000 km away, as an extreme original record would be;
    ``z`` set to 1e300 or to NULL) passed ``read_release``, ``inspect`` and ``evaluate``.
    """
    box = None if grid is None else shapely.total_bounds(np.asarray(grid.geometry.array))
    for k, release in enumerate(releases, start=1):
        layer = RELEASE_LAYER.format(k)
        if box is not None and _beyond_box(release, box):
            raise InputError(f"{name}: layer {layer} has points outside its grid layer, "
                             f"where geosynth never places one, so {EDITED}")
        problem = _value_problem(release, metadata) or _combination_problem(release, metadata)
        if problem is not None:
            raise InputError(f"{name}: layer {layer} has {problem}, so {EDITED}")


def _combination_problem(release: gpd.GeoDataFrame, metadata: Mapping[str, Any]) -> str | None:
    """Describe records of combinations the model did not fit, or return None.

    Every record of a release is of a combination of the model's (``model.combinations``):
    an attribute set to a level no record had (``x1 = 99``) passed the reader. Not checked
    when the file names no model or its attributes are not all columns.
    """
    model = metadata.get("model") or {}
    attributes = model.get("attributes") or []
    fitted = model.get("combinations")
    if not attributes or fitted is None or not set(attributes) <= set(release.columns):
        return None
    present = pd.DataFrame(release[attributes]).drop_duplicates()  # a label per combination
    unknown = set(labels_of(present, attributes)) - set(fitted)
    if unknown:
        return (f"{len(unknown)} combination(s) of attribute levels that its model did not fit "
                "(geosynth draws records of the fitted combinations only)")
    return None


def _value_problem(release: gpd.GeoDataFrame, metadata: Mapping[str, Any]) -> str | None:
    """Describe values of the model's columns that geosynth never draws, or return None.

    A missing value, or a value of a continuous column outside its recorded ``limits``: the
    reader refuses such a file as edited, so the writer refuses to write one (a NaN written by
    the caller made a file the reader then called edited).
    """
    model = metadata.get("model") or {}
    continuous = model.get("continuous")
    columns = [*(model.get("attributes") or []),
               *([continuous] if isinstance(continuous, str) else continuous or [])]
    missing = [c for c in columns if c in release.columns and release[c].isna().any()]
    if missing:
        return f"missing values in {_shown(missing)}, which geosynth never writes"
    for column, (low, high) in (metadata.get(LIMITS_PARAMETER) or {}).items():
        values = pd.to_numeric(release[column], errors="coerce").to_numpy(dtype=np.float64)
        low = -math.inf if low is None else low
        high = math.inf if high is None else high
        if ((values < low) | (values > high)).any():
            return f"values of {printable(column)!r} outside its metadata 'limits'"
    return None


def _beyond_box(release: gpd.GeoDataFrame, box: np.ndarray) -> bool:
    """Whether a point of ``release`` lies outside ``box``, the bounding box of the cells.

    The check of the writer (against the grid it writes) and of the reader (against the grid
    layer); the box, not each cell, so that no point drawn in a cell is refused by rounding.
    """
    if len(release) == 0:
        return False
    x0, y0, x1, y1 = shapely.total_bounds(np.asarray(release.geometry.array))
    slack = _EXTENT_RTOL * max(box[2] - box[0], box[3] - box[1])
    return bool(x0 < box[0] - slack or y0 < box[1] - slack or x1 > box[2] + slack
                or y1 > box[3] + slack)


# Relative tolerance of a square lattice's extent against its shape times its cell size (the
# edges are sums of float64 steps).
_EXTENT_RTOL = 1e-9


def _lattice_problem(lattice: dict[str, Any], grid: gpd.GeoDataFrame) -> str | None:
    """Describe how the metadata's ``lattice`` disagrees with the grid layer, or return None.

    ``n_cells`` is the grid layer's rows (checked before). A square or hexagonal lattice has a
    ``shape`` (an areal one none), at least as many places as cells, each cell's ``row`` and
    ``col`` in it, one cell per place; a square lattice spans ``shape`` times ``cell_size``
    and, unclipped, fills every place; an unclipped hexagonal one keeps cells in its first
    row and column and in its last or the one before (it drops the hexagons of its last row
    or column that miss the extent). ``[10**12, 5]`` passed and was printed as the shape.
    """
    shape, kind = lattice.get("shape"), lattice.get("kind", "square")
    if kind not in ("square", "hexagonal", "areal"):
        return f"names the lattice kind {printable(kind)[:40]!r}, which geosynth does not make"
    if (shape is None) != (kind == "areal") or (lattice.get("cell_size") is None) != (
            kind == "areal"):
        return f"gives a {kind} lattice {'a' if kind == 'areal' else 'no'} shape or cell size"
    if shape is None:
        return None
    rows, cols = shape
    found = f"has the shape {rows} x {cols}, but its grid layer"
    if rows < 1 or cols < 1 or lattice["n_cells"] > rows * cols:
        return f"{found} has {lattice['n_cells']} cells"
    place = [grid.get(column) for column in ("row", "col")]
    if any(p is None or not pd.api.types.is_integer_dtype(p) for p in place):
        return f"{found} has no integer row and col columns"
    row, col = (np.asarray(p, dtype=np.int64) for p in place)
    if len(row) and (row.min() < 0 or col.min() < 0 or row.max() >= rows or col.max() >= cols):
        return f"{found} has cells in rows 0..{row.max()} and columns 0..{col.max()}"
    if len(np.unique(row * cols + col)) != len(row):
        return f"{found} has two cells in one place"
    return _extent_problem(lattice, row, col, np.asarray(grid.geometry.array, dtype=object),
                           found)


def _extent_problem(lattice: dict[str, Any], row: np.ndarray, col: np.ndarray,
                    cells: np.ndarray, found: str) -> str | None:
    """Check the extent and the unclipped cells of a lattice (see :func:`_lattice_problem`)."""
    (rows, cols), (dx, dy) = lattice["shape"], lattice["cell_size"]
    xmin, ymin, xmax, ymax = lattice["bounds"]
    if lattice.get("kind", "square") == "square":
        if not (math.isclose(xmax - xmin, cols * dx, rel_tol=_EXTENT_RTOL)
                and math.isclose(ymax - ymin, rows * dy, rel_tol=_EXTENT_RTOL)):
            return (f"has the shape {rows} x {cols} of cells {dx} x {dy}, which do not span "
                    "its bounds")
        if not lattice["is_clipped"] and lattice["n_cells"] != rows * cols:
            return f"{found} has {lattice['n_cells']} cells and is not clipped"
        return _misplaced_cells(lattice, row, col, cells)
    if not lattice["is_clipped"] and len(row) and (
            row.min() != 0 or col.min() != 0 or row.max() < rows - 2 or col.max() < cols - 2):
        return f"{found} has cells in rows {row.min()}..{row.max()} and columns " \
               f"{col.min()}..{col.max()}, and is not clipped"
    return None


def _misplaced_cells(lattice: dict[str, Any], row: np.ndarray, col: np.ndarray,
                     cells: np.ndarray) -> str | None:
    """Describe the cells of a square lattice that lie outside their row and column's box."""
    (dx, dy), (xmin, ymin, _, _) = lattice["cell_size"], lattice["bounds"]
    box = np.stack([xmin + col * dx, ymin + row * dy, xmin + (col + 1) * dx,
                    ymin + (row + 1) * dy], axis=1)
    slack = _EXTENT_RTOL * max(abs(v) for v in lattice["bounds"]) + 1e-9 * max(dx, dy)
    bounds = shapely.bounds(cells)
    outside = ((bounds[:, :2] < box[:, :2] - slack) | (bounds[:, 2:] > box[:, 2:] + slack))
    misplaced = int(outside.any(axis=1).sum())
    if misplaced:
        return (f"has the shape {lattice['shape'][0]} x {lattice['shape'][1]} of cells {dx} x "
                f"{dy}, but {misplaced} cells of its grid layer lie outside their places")
    return None


def _grid_columns(metadata: dict[str, Any]) -> set[str]:
    """Columns :func:`write_release` may give the grid layer of a file with this metadata.

    Those of :attr:`Grid.cells` (``area_id`` only for areal units) and, with the intensity,
    ``lambda_<combination>`` for each combination of the model.
    """
    columns = {"cell_id", "n_neighbours", "habitable_fraction", "component"}
    columns |= {"area_id"} if metadata["lattice"].get("kind") == "areal" else {"row", "col"}
    if metadata["intensity"] is not None and metadata["model"] is not None:
        columns |= {f"lambda_{label}" for label in metadata["model"]["combinations"]}
    return columns


def verify_audit(path: str | os.PathLike) -> dict[str, Any] | None:
    """Check that the private audit file beside the release ``path`` belongs to it.

    Parameters
    ----------
    path : str or os.PathLike
        The release GeoPackage.

    Returns
    -------
    dict or None
        The audit record (it holds the seeds: never print or publish it), or None when there
        is no audit file beside the release.

    Raises
    ------
    geosynth.errors.InputError
        ``path`` is not a file path (an InputTypeError); the audit file is damaged or not a
        geosynth audit file, or the SHA-256 it records is
        not the GeoPackage's: it belongs to another version of the release (e.g. the one a
        later write replaced, or a write killed between the release and its audit file).
    OSError
        The audit file exists but cannot be read (e.g. it belongs to another user).
    """
    source = as_path(path)
    audit = audit_path(source)
    if not os.path.lexists(audit):
        return None
    label = printable(audit.name)
    damaged = (
        f"the audit file {label} is damaged or not a geosynth audit file; keep it apart from "
        f"the release and write the release again to record its seeds"
    )
    try:
        raw = read_bounded(audit, _MAX_AUDIT_BYTES, "it")
    except InputError as err:
        raise InputError(f"{damaged} ({err})") from None
    try:
        record = _json_value(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise InputError(f"{damaged} ({printable(err)})") from None
    if not isinstance(record, dict) or not isinstance(record.get("sha256"), str):
        raise InputError(f"{damaged} (it records no sha256)")
    if not isinstance(record.get("seeds", {}), dict | None):  # as _audit_record writes them
        raise InputError(f"{damaged} (its seeds are not a mapping of name to seed)")
    if record["sha256"] != file_sha256(source):
        if interrupted_commit(source) or interrupted_commit(audit):
            raise InputError(
                f"the audit file {label} does not belong to this release: a write of "
                f"{printable(source.name)} was killed while it moved the release and its audit "
                "file into place, and the files it replaced wait beside them; write the "
                "release again, replacing it (overwrite=True), which first puts the earlier "
                "release and its audit file back, and do not move or delete either file "
                "before (that would lose the earlier release's seeds)"
            )
        raise InputError(
            f"the audit file {label} does not belong to this release: the SHA-256 it records is "
            f"not that of {printable(source.name)} (it describes another version of the file, "
            "e.g. one this file replaced, or a write was killed between the release and its "
            "audit file); its seeds do not reproduce this release: move it away, and write the "
            "release again to record the seeds"
        )
    return record


def _incomplete(name: str, what: str) -> InputError:
    return InputError(
        f"{name} is incomplete or not a geosynth release: {what}; write the release again with "
        "geosynth (an interrupted write leaves no file under its final name: this may be a "
        "leftover temporary file, or the file was edited)"
    )


def _shown(names: Sequence[str]) -> str:
    """Return ``['a', 'b']`` with control characters replaced (names come from the file)."""
    return "[" + ", ".join(repr(printable(name)) for name in names) + "]"


def _read_layer(source: Path, layer: str, limit: int,
                fids: list[np.ndarray] | None = None) -> pd.DataFrame:
    """Read at most ``limit`` rows of ``layer``.

    A file whose layer holds more rows than its metadata records is refused without loading
    every row (10**8 added rows filled the memory before the count was compared). Given
    ``fids``, the rows' feature ids are appended to it (the frame keeps its default index).
    """
    try:
        frame = pyogrio.read_dataframe(source, layer=layer, max_features=limit,
                                       fid_as_index=fids is not None)
    except GDAL_ERRORS as err:
        raise not_a_geopackage(source, err) from None
    if fids is not None:
        fids.append(np.asarray(frame.index, dtype=np.int64))
        frame.index = pd.RangeIndex(len(frame))
    return frame


def _json_value(text: str) -> Any:
    """``json.loads`` limited in size, depth and to finite numbers; ValueError otherwise.

    NaN, ±Infinity and floats beyond the float range (``1e999``, which ``json`` reads as inf)
    are refused.
    """
    if len(text) > _MAX_VALUE_CHARS:
        raise ValueError(f"it is longer than {_MAX_VALUE_CHARS} characters")

    def refuse(constant: str) -> Any:
        raise ValueError(f"{constant} is not a JSON number")

    def finite(number: str) -> float:
        value = float(number)  # 1e999 overflows to inf, a number past NaN/Infinity's refusal
        if not math.isfinite(value):
            raise ValueError(f"{number[:40]} is beyond the range of a float")
        return value

    try:
        value = json.loads(text, parse_constant=refuse, parse_float=finite)
    except RecursionError:
        raise ValueError(f"it is nested more than {_MAX_DEPTH} levels deep") from None
    except json.JSONDecodeError as err:
        raise ValueError(f"not JSON: {err.msg} at character {err.pos}") from None
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > _MAX_DEPTH:
            raise ValueError(f"it is nested more than {_MAX_DEPTH} levels deep")
        if isinstance(item, dict):
            stack.extend((inner, depth + 1) for inner in item.values())
        elif isinstance(item, list):
            stack.extend((inner, depth + 1) for inner in item)
    return value


def _decode_metadata(table: pd.DataFrame, name: str) -> dict[str, Any]:
    """Return the ``key -> value`` dict of the metadata table, checked row by row."""
    columns = [str(column) for column in table.columns]
    if sorted(columns) != ["key", "value"]:
        raise _incomplete(
            name, f"its metadata table has columns {_shown(columns)} instead of key, value"
        )
    if len(table) > _MAX_METADATA_ROWS:
        raise _incomplete(name, f"its metadata table has more than {_MAX_METADATA_ROWS} rows")
    metadata: dict[str, Any] = {}
    keys = table["key"].tolist()
    for row, (key, text) in enumerate(zip(keys, table["value"].tolist(), strict=True)):
        if not isinstance(key, str):
            raise _incomplete(name, f"metadata row {row} has the key {printable(key)!r}, not text")
        shown = printable(key)
        if key in metadata:
            raise _incomplete(name, f"the metadata key {shown!r} appears {keys.count(key)} times")
        if not isinstance(text, str):
            raise _incomplete(name, f"the metadata value of {shown!r} is not text")
        try:
            metadata[key] = _json_value(text)
        except ValueError as err:
            raise InputError(
                f"{name}: the metadata value of {shown!r} is not valid ({printable(err)}); the "
                "file was not written by geosynth or was edited"
            ) from None
    return metadata


def _refuse_journals(source: Path, name: str) -> None:
    """Refuse a release with SQLite's journal files beside it, before anything opens it.

    GDAL and SQLite replay a ``-wal`` (or a hot ``-journal``) into the file on opening it: the
    checks read pages the file itself does not hold (a ``-wal`` of a clean release beside a
    file whose last page held 256 original coordinate pairs passed, when the file could not be
    written), and reading changed the file it checked (its SHA-256 moved).
    """
    present = sqlite_journals(source)
    if present:
        raise InputError(
            f"{name} has SQLite's {' and '.join(printable(p) for p in present)} beside it: a "
            "program (such as QGIS) has it open, or was killed while it had, and opening it "
            "would merge pages the file does not hold; close that program and read it again, "
            "or write the release again with geosynth if nothing has it open"
        )


def _check_schema(metadata: dict[str, Any], name: str) -> None:
    """Check format, version, the ``complete`` entry and the type of every field."""
    if metadata.get("format") != _FORMAT:
        raise InputError(
            f"{name} is not a geosynth release: its metadata format is "
            f"{printable(json.dumps(metadata.get('format')))[:80]}, not {_FORMAT!r}"
        )
    version = metadata.get("format_version")
    if version not in _READ_VERSIONS or isinstance(version, bool):
        if isinstance(version, int) and not isinstance(version, bool) and version > 1:
            raise InputError(
                f"{name} has release format version {version}; this geosynth reads version "
                f"{max(_READ_VERSIONS)}: upgrade geosynth"
            )
        raise _incomplete(
            name, f"its format version is {printable(json.dumps(version))[:40]}, not "
            f"{_FORMAT_VERSION} (releases of geosynth 0.1 carry no mark of completeness)"
        )
    keys = list(metadata)
    if COMPLETE_KEY not in metadata:
        raise _incomplete(name, f"its metadata has no {COMPLETE_KEY!r} entry")
    if keys[-1] != COMPLETE_KEY:
        raise _incomplete(name, f"the {COMPLETE_KEY!r} entry is not the last row of its metadata")
    unknown = [key for key in keys if key not in _SCHEMA]
    if unknown:
        raise _incomplete(name, f"its metadata has keys that are not in the schema: "
                                f"{_shown(unknown)}")
    missing = [key for key in _SCHEMA if key not in metadata and key not in _OPTIONAL_KEYS]
    if missing:
        raise _incomplete(name, f"its metadata has no {_shown(missing)} entries")
    for key, value in metadata.items():
        problem = _type_problem(value, _SCHEMA[key], key)
        if problem is not None:
            raise InputError(
                f"{name}: metadata {problem}; the file was not written by geosynth or was edited"
            )
    m = metadata["m"]
    # m is compared with the lists' lengths first: a tampered m = 10**10 built that many
    # layer names before any check.
    counted = len(metadata["layers"]) == m == len(metadata["n_records"])
    expected = [RELEASE_LAYER.format(k) for k in range(1, m + 1)] if counted else []
    if m < 1 or not counted or metadata["layers"] != expected:
        raise _incomplete(
            name, f"its metadata says m = {m} but lists the release layers "
            f"{_shown(metadata['layers'])} with {len(metadata['n_records'])} record counts"
        )
    if metadata.get("noise") is not None and metadata["noise"] not in NOISE_SOURCES:
        raise InputError(
            f"{name}: metadata noise is {printable(metadata['noise'])!r}, not one of "
            f"{sorted(NOISE_SOURCES)}; the file was not written by geosynth or was edited"
        )
    _check_limits_entry(metadata, version, name)
    if _claims_privacy_without_it(info_from_metadata(metadata)):
        raise InputError(
            f"{name}: its metadata says method {printable(metadata['method'])!r}, made without "
            "differential privacy, yet states an epsilon, a noise or a privacy ledger; the file "
            "was edited to claim a privacy it does not have"
        )
    _check_noise_scale(metadata, name)
    complete = metadata[COMPLETE_KEY]
    if complete["n_layers"] != len(complete["layers"]):
        raise _incomplete(name, f"its {COMPLETE_KEY!r} entry counts {complete['n_layers']} "
                                f"layers but lists {len(complete['layers'])}")
    grid = [GRID_LAYER] if metadata["lattice"] is not None else []
    if complete["layers"] != [*expected, *grid, METADATA_LAYER]:
        raise _incomplete(name, f"its {COMPLETE_KEY!r} entry lists the layers "
                                f"{_shown(complete['layers'])}, not those of its metadata")


def _check_noise_scale(metadata: dict[str, Any], name: str) -> None:
    """Refuse a model fitted to noisy counts whose method or ε says otherwise.

    The noise scale of geosynth's DP counts is ``b = Δ/ε`` (a whole sensitivity Δ): a DP
    release relabelled ``"paiva"`` (its ε, noise and ledger nulled) read as exact, and one
    whose ε was edited from 1 to 0.1 claimed ten times the privacy it has.
    """
    model = metadata.get("model")
    scale = model.get("noise_scale") if isinstance(model, dict) else None
    if scale is None:
        return
    if metadata["method"] in _EXACT_METHODS:
        raise InputError(
            f"{name}: its model was fitted to noisy counts (noise_scale), a differentially "
            f"private release, yet its metadata says method {printable(metadata['method'])!r}, "
            "made without noise; the file was edited to hide how it was made"
        )
    epsilon = metadata.get("epsilon")
    if epsilon is None:  # a fit of counts noised elsewhere may not know it
        return
    sensitivity = float(epsilon) * float(scale)
    if sensitivity < 0.5 or not math.isclose(sensitivity, round(sensitivity), rel_tol=1e-9):
        raise InputError(
            f"{name}: its metadata states epsilon {epsilon:g}, but its model's noise scale "
            f"{scale:g} is sensitivity/epsilon for a whole sensitivity, and {epsilon:g} × "
            f"{scale:g} is not one; the file was edited to claim a privacy it does not have"
        )


def _check_limits_entry(metadata: dict[str, Any], version: int, name: str) -> None:
    """Refuse a ``limits`` entry that geosynth never writes (absurd ends, an older version)."""
    limits = metadata.get(LIMITS_PARAMETER)
    if limits is None:
        return
    if version < _LIMITS_VERSION:
        raise InputError(f"{name}: its metadata has 'limits', which release format version "
                         f"{version} does not have, so {EDITED}")
    try:
        check_recorded_limits(limits, "'limits'")
    except InputError as err:
        raise InputError(f"{name}: metadata {printable(str(err))}; geosynth never writes such "
                         f"limits, so {EDITED}") from None


def _type_problem(value: Any, spec: Any, where: str) -> str | None:
    """Describe how ``value`` does not match the schema type ``spec``, or return None."""
    if isinstance(spec, dict):
        return _fields_problem(value, spec, where, required=True)
    kind = spec[0] if isinstance(spec, tuple) else None
    if kind == "optional":
        return None if value is None else _type_problem(value, spec[1], where)
    if kind == "either":
        problems = [_type_problem(value, option, where) for option in spec[1:]]
        if None in problems:
            return None
        # The problem of the option a value of this JSON type was meant for.
        return problems[-1] if isinstance(value, list) else problems[0]
    if kind == "some_of":
        return _fields_problem(value, spec[1], where, required=False)
    if kind == "tagged":
        return _tagged_problem(value, spec[1], spec[2], where)
    if kind == "one_of":
        if isinstance(value, str) and value in spec[1:]:
            return None
        return f"{printable(where)!r} must be one of {list(spec[1:])}, got {_json_type(value)}"
    if kind == "list":
        _, item, length = spec
        if not isinstance(value, list):
            return f"{printable(where)!r} must be a list, got {_json_type(value)}"
        if length is not None and len(value) != length:
            return f"{printable(where)!r} must have {length} items, got {len(value)}"
        for i, inner in enumerate(value):
            problem = _type_problem(inner, item, f"{where}[{i}]")
            if problem is not None:
                return problem
        return None
    if kind == "mapping":
        if not isinstance(value, dict):
            return f"{printable(where)!r} must be an object, got {_json_type(value)}"
        for key, inner in value.items():
            problem = _type_problem(inner, spec[1], f"{where}.{key}")
            if problem is not None:
                return problem
        return None
    check, wanted = _SCALARS[spec]
    if check(value):
        return None
    return f"{printable(where)!r} must be {wanted}, got {_json_type(value)}"


def _fields_problem(value: Any, spec: dict[str, Any], where: str, required: bool) -> str | None:
    """Describe how the object ``value`` does not have the fields ``spec``, or return None."""
    if not isinstance(value, dict):
        return f"{printable(where)!r} must be an object, got {_json_type(value)}"
    extra = [key for key in value if key not in spec]
    if extra:
        return (f"{printable(where)!r} has unknown fields {_shown(extra)} (geosynth writes "
                f"only {_shown(list(spec))})")
    missing = [key for key in spec if key not in value] if required else []
    if missing:
        return f"{printable(where)!r} has missing fields {_shown(missing)}"
    for key in value:
        problem = _type_problem(value[key], spec[key], f"{where}.{key}")
        if problem is not None:
            return problem
    return None


def _tagged_problem(value: Any, tag: str, options: dict[str, dict], where: str) -> str | None:
    """Check ``value`` against the fields ``options[value[tag]]``."""
    if not isinstance(value, dict):
        return f"{printable(where)!r} must be an object, got {_json_type(value)}"
    word = value.get(tag)
    if not (isinstance(word, str) and word in options):
        return (f"{printable(f'{where}.{tag}')!r} must be one of {sorted(options)}, got "
                f"{_json_type(word)}")
    return _fields_problem(value, options[word], where, required=True)


def _json_number(value: Any) -> bool:
    """Whether the JSON value ``value`` is a number (not text, not true/false)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


# The scalar types of the schema: a test of the decoded JSON value and what it must be.
_SCALARS = {
    "str": (lambda v: isinstance(v, str), "text"),
    "int": (lambda v: _json_number(v) and isinstance(v, int) and v >= 0, "an integer >= 0"),
    "integer": (lambda v: _json_number(v) and isinstance(v, int), "an integer"),
    "number": (_json_number, "a number"),
    "nonneg": (lambda v: _json_number(v) and v >= 0, "a number >= 0"),
    "delta": (lambda v: _json_number(v) and 0 <= v <= 1, "a number from 0 to 1"),
    "bool": (lambda v: isinstance(v, bool), "true or false"),
    "dict": (lambda v: isinstance(v, dict), "an object"),
    "epsilon": (lambda v: (_json_number(v) and v > 0) or v == "inf", "a number > 0"),
    "epsilon_left": (lambda v: (_json_number(v) and v >= 0) or v == "inf",
                     'a number >= 0 or "inf"'),
}


def _json_type(value: Any) -> str:
    kind = {dict: "an object", list: "a list", str: "text", bool: "true/false", int: "a number",
            float: "a number", type(None): "null"}.get(type(value), type(value).__name__)
    return f"{kind} {printable(json.dumps(value))[:40]}" if kind != "an object" else kind


def _read_releases(
    source: Path, name: str, metadata: dict[str, Any], layers: list[str],
    kinds: dict[str, str | None],
) -> tuple[list[gpd.GeoDataFrame], dict[str, tuple[np.ndarray, np.ndarray]]]:
    """Check the file's layers against the ``complete`` entry and read the release layers.

    Returns the releases and, per release layer, its feature ids and the bounds ``(4, n)`` of
    its points (as :func:`pyogrio.read_bounds` gives them) for
    :func:`~geosynth.io._gpkg_checks.check_spatial_indexes`.
    """
    listed = metadata[COMPLETE_KEY]["layers"]
    missing = [layer for layer in listed if layer not in layers]
    if missing:
        raise _incomplete(name, f"its metadata lists {len(listed)} layers and "
                                f"{_shown(missing)} are missing")
    extra = [layer for layer in layers if layer not in listed]
    if extra:
        raise _incomplete(
            name, f"it has layers that the release does not list: {_shown(extra)} (a release "
            f"has exactly the layers {_shown(listed)}; only synthetic_1 .. synthetic_"
            f"{metadata['m']} are releases)"
        )
    crs = metadata["crs"]
    try:
        expected_crs = None if crs is None else pyproj.CRS.from_user_input(crs)
    except pyproj.exceptions.CRSError:
        raise InputError(f"{name}: metadata 'crs' is not a valid CRS ({printable(crs)[:80]})") \
            from None
    model = metadata["model"]
    released = released_columns(model) if model is not None else frozenset()
    releases, bounds = [], {}
    for layer, count in zip(metadata["layers"], metadata["n_records"], strict=True):
        kind = kinds.get(layer)
        if kind is None or "point" not in kind.lower():
            raise _incomplete(name, f"its layer {layer!r} is {'a table' if kind is None else kind}"
                                    ", not a point layer")
        fids: list[np.ndarray] = []
        frame = _read_layer(source, layer, count + 1, fids)
        if not isinstance(frame, gpd.GeoDataFrame):
            raise _incomplete(name, f"its layer {layer!r} has no geometry")
        if len(frame) != count:
            rows = f"more than {count}" if len(frame) > count else len(frame)
            raise _incomplete(name, f"its layer {layer!r} has {rows} rows but its "
                                    f"metadata records {count}")
        wrong, xy = _plain_points(frame)
        if wrong.any():
            raise _incomplete(name, f"its layer {layer!r} has {int(wrong.sum())} "
                                    f"{_NOT_PLAIN_POINTS}")
        bounds[layer] = (fids[0], xy[:, [0, 1, 0, 1]].T)  # a point's minx, miny, maxx, maxy
        if not np.array_equal(fids[0], np.arange(1, count + 1)):
            raise InputError(f"{name}: its layer {layer!r} has feature ids other than 1 to "
                             f"{count}, which geosynth writes (a number per point, which GIS "
                             f"programs show as a column), so {EDITED}")
        _check_stored_columns(source, name, layer, frame)
        if not _crs_equal(frame.crs, expected_crs):
            raise _incomplete(name, f"its layer {layer!r} is in {_crs_label(frame.crs)}, but its "
                                    f"metadata records {printable(crs)[:80]}")
        check_release_columns(frame, frame.geometry.name, f"{name}: its layer {layer!r}", None,
                              _READ_FIX, released=released)
        if model is not None:  # written with fit=, which refuses any other column
            _check_recorded_columns(frame, name, layer, released)
        frame.attrs = {PUBLIC_ATTR: True, PUBLISHED_ATTR: True}  # its rows are not linked
        releases.append(frame)
    differ = _schema_difference(releases, [repr(printable(layer)) for layer in metadata["layers"]])
    if differ is not None:
        raise InputError(f"{name}: its release layers differ: {differ}; geosynth writes every "
                         f"release layer with the same columns and column kinds, so {EDITED}")
    return releases, bounds
