"""Releases: the GeoDataFrames the synthesizers return, and their public form.

A *release* returned by :func:`~geosynth.synth.synthesize`, :func:`~geosynth.synth.naive_synthesize`
or :func:`~geosynth.synth.donut_mask` keeps the index of the confidential input, so that evaluation
code (disclosure risk, utility) can pair each synthetic record with its original in memory. That
index, and the row order, are themselves information about the confidential file: anything that
leaves the analyst's machine goes through :func:`to_public` first.

Markers in ``GeoDataFrame.attrs`` (pandas carries them through selections, copies and
re-orderings) let :func:`geosynth.io.write_release` tell the two forms apart even when the
confidential input had a default ``0 .. n-1`` index, so that the internal index looks like a
fresh one:

* :data:`LINKED_ATTR` -- set by the synthesizers whose row ``k`` is made from confidential record
  ``k`` (``synthesize``, ``naive_synthesize``, ``donut_mask``); such a frame is never written.
* :data:`PUBLIC_ATTR` -- set by :func:`to_public` (shuffled rows, fresh index).
* :data:`PUBLISHED_ATTR` -- set by :func:`geosynth.io.read_release` (read from a published file).

How a release was made is one record, :class:`ReleaseInfo`, built by the synthesizers (and by
:mod:`geosynth.dp`) and kept in ``attrs["geosynth"]`` as a plain JSON-able dict
(:meth:`ReleaseInfo.to_attrs`; a dict because ``attrs`` travel with the frame into GeoParquet
files and across processes). :func:`geosynth.io.write_release` writes it as the release file's
metadata and :func:`geosynth.io.read_release` reads it back (``ReleaseFile.info``); the keys of
that file and their schema live in :mod:`geosynth.io.release` only.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely

from geosynth._identifiers import (
    ID_COLUMNS,
    IDENTIFIER_ENDINGS,
    IDENTIFIER_WORDS,
    INTERNAL_PREFIX,
    in_id_columns,
    is_identifier_name,
)
from geosynth._messages import list_positions
from geosynth._points import holds_coordinates, holds_encoded_geometries, holds_geometries
from geosynth._random import SeedLike, as_generator
from geosynth._validation import (
    as_float,
    check_bool,
    check_choice,
    check_epsilon,
    check_int,
    check_optional_str,
    check_range,
    check_unique_columns,
    describe_value,
    is_integer,
    is_real,
    is_sequence,
)
from geosynth.errors import InputError, InputTypeError

__all__ = [
    "ReleaseInfo",
    "ReleaseInfoSource",
    "release_info",
    "set_release_info",
    "to_public",
    "row_digest",
    "is_linked",
    "is_public",
    "is_published",
    "INFO_ATTR",
    "INTERNAL_PREFIX",
    "ID_COLUMNS",
    "IDENTIFIER_WORDS",
    "IDENTIFIER_ENDINGS",
    "is_identifier_name",
    "check_id_columns",
    "holds_geometries",
    "holds_encoded_geometries",
    "holds_coordinates",
    "LINKED_ATTR",
    "PUBLIC_ATTR",
    "PUBLISHED_ATTR",
    "PUBLIC_RECORD_FIELDS",
    "PUBLIC_PARAMETERS",
    "LIMITS_PARAMETER",
    "check_recorded_limits",
    "UNLINKED_METHODS",
    "BASELINE_ATTR",
    "BASELINE_METHODS",
    "COLUMNS_ATTR",
    "POINTS_ATTR",
    "column_digest",
    "points_record",
    "record_columns",
    "recorded_columns",
    "recorded_points",
    "moved_points",
    "edited_columns",
    "keep_recorded_columns",
    "baseline_method",
    "refuse_baseline",
    "NOISE_OS_ENTROPY",
    "NOISE_SEEDED",
    "NOISE_EXTERNAL",
    "NOISE_SOURCES",
]

#: ``attrs`` key of the :class:`ReleaseInfo` record of a release (a plain dict).
INFO_ATTR = "geosynth"
#: ``attrs`` key (value True) of a release whose rows are aligned with the confidential input:
#: row ``k`` was made from confidential record ``k`` (the internal output of the synthesizers).
LINKED_ATTR = "geosynth_linked"
#: ``attrs`` key (value True) of the output of :func:`to_public`: rows shuffled, fresh index.
PUBLIC_ATTR = "geosynth_public"
#: ``attrs`` key (value True) of a release read from a published file
#: (:func:`geosynth.io.read_release`): showing it publishes nothing new.
PUBLISHED_ATTR = "geosynth_published"
#: Methods of :func:`make_release` whose records are drawn from noisy counts, not one per
#: confidential record (ε-DP locations, OnTheMap): their rows are not aligned with the input.
UNLINKED_METHODS = frozenset({"paiva-dp", "onthemap"})
#: Methods whose points stay in (Naive) or next to (donut) each record's own location, or are
#: records' true locations (Matloff and Tendick's neighbour resampling,
#: :func:`geosynth.sdc.neighbour_resample`): baselines to compare with, never to publish.
BASELINE_METHODS = frozenset({"naive", "donut", "neighbour"})
#: Where each baseline's points lie, as :func:`refuse_baseline` says it.
_BASELINE_POINTS = {
    "naive": "stay in each record's own cell",
    "donut": "stay next to each record's own location",
    "neighbour": "are records' true locations (their own, or their neighbours' coordinates)",
}
#: ``attrs`` key that :func:`to_public` keeps on the public form of a baseline (its method).
BASELINE_ATTR = "geosynth_baseline"
#: ``attrs`` key of the columns a synthesizer made beside the points (a dict of each label and
#: the digest of its values, :func:`column_digest`), set by :func:`make_release` and kept by
#: :func:`to_public`: :func:`geosynth.io.write_release` refuses any other column, and any
#: column whose values changed since (:func:`recorded_columns`).
COLUMNS_ATTR = "geosynth_columns"
#: ``attrs`` key of the record of a release's points: the digest of their coordinates as a
#: multiset and the CRS they were drawn in (:func:`points_record`), set and kept as
#: :data:`COLUMNS_ATTR`; :func:`geosynth.io.write_release` refuses other points.
POINTS_ATTR = "geosynth_points"
#: :attr:`ReleaseInfo.noise` of a DP release whose noise came from fresh OS entropy.
NOISE_OS_ENTROPY = "os-entropy"
#: :attr:`ReleaseInfo.noise` of a DP release whose noise came from a caller's seed (tests only):
#: whoever knows or guesses the seed replays the noise and removes it, so the stated ε is no
#: guarantee at all.
NOISE_SEEDED = "seeded"
#: :attr:`ReleaseInfo.noise` of a DP release fitted to noisy counts that geosynth did not noise
#: (a :class:`~geosynth.dp.locations.NoisyCounts` built by the caller, e.g. from an agency's
#: published DP table): the stated ε is the caller's statement, which geosynth cannot check.
NOISE_EXTERNAL = "external"
#: Every value :attr:`ReleaseInfo.noise` may take.
NOISE_SOURCES = frozenset({NOISE_OS_ENTROPY, NOISE_SEEDED, NOISE_EXTERNAL})
#: Fields of :class:`ReleaseInfo` by the type :meth:`ReleaseInfo.from_attrs` reads them as.
_TEXT_FIELDS = frozenset({"method", "neighbours", "noise", "crs", "intensity", "data", "notes",
                          "geosynth_version", "created_utc"})
_INT_FIELDS = frozenset({"release", "posterior_draw", "n_public", "m"})
_DICT_FIELDS = frozenset({"ledger", "size", "lattice", "model", "priors"})
#: Smallest value of each integer field of :class:`ReleaseInfo`.
_INT_MINIMUM = {"release": 0, "posterior_draw": 0, "n_public": 0, "m": 1}
_EPSILON_FIX = ("record the privacy loss the release was made with, e.g. ReleaseInfo(epsilon=1.0), "
                "or leave epsilon None for a release without differential privacy")
#: Deepest nesting of dicts and lists a record's value may have (a cycle is refused, too).
_MAX_DEPTH = 32
_RECORD_FIX = (
    "the record of how the release was made was altered; remove it (del release.attrs"
    f"[{INFO_ATTR!r}]) or record one with geosynth.synth.release.set_release_info(release, "
    "ReleaseInfo(...))"
)


@dataclass(frozen=True)
class ReleaseInfo:
    """How a release, or a set of releases, was made: the one record of a release's provenance.

    Built by the synthesizers for every release (kept in ``attrs["geosynth"]``, see
    :func:`release_info`), completed by :func:`geosynth.io.write_release` with what describes the
    file (``m``, ``n_records``, ``crs``, lattice, model, priors, version, time) and read back from
    a file by :func:`geosynth.io.read_release` (``ReleaseFile.info``). Every field is optional
    (None: not recorded); values are plain Python (str, int, float, bool, dicts and lists), so
    the record is what gets published: it never holds a seed.

    Attributes
    ----------
    method : str or None
        ``"paiva"``, ``"paiva-dp"``, ``"naive"``, ``"donut"`` or ``"onthemap"`` (or a caller's
        label, in a file).
    release : int or None
        Number of the release within its set, from 0 (one release only).
    posterior_draw : int or None
        Stored posterior draw of λ the release was drawn from (Paiva releases only).
    weighted : bool or None
        Whether points were placed within cells by a weights raster.
    epsilon : float or None
        Privacy loss of a differentially private release (all ``m`` releases together).
    neighbours : str or None
        Neighbouring-dataset relation ε refers to (``"add-remove"`` or ``"replace"``).
    noise : str or None
        Where a differentially private release's noise came from: :data:`NOISE_OS_ENTROPY`
        (``"os-entropy"``), :data:`NOISE_SEEDED` (``"seeded"``: a caller's seed, tests only;
        the stated ε is then no guarantee, since the seed replays the noise), or
        :data:`NOISE_EXTERNAL` (``"external"``: counts noised outside geosynth, whose ε is the
        caller's statement).
    ledger : dict or None
        The ε ledger, ``Accountant.to_dict()`` after the spend.
    size : dict or None
        How the size of an ε-DP release was set (see :mod:`geosynth.dp.locations`).
    n_public : int or None
        A published total of records the release was sized to.
    parameters : dict
        Settings of the method (the donut radii ``r_min``, ``r_max``; OnTheMap's
        ``epsilon_totals``, ``epsilon_cells`` and ``prior``; the ``limits`` of a Paiva
        release's truncated continuous columns, ``{"age": [0.0, 120.0]}`` with None for an
        open end, see :func:`check_recorded_limits`).
    m : int or None
        Number of releases in the set.
    n_records : tuple of int or None
        Records of each release (a file).
    crs : str or None
        Authority string (``"EPSG:31983"``) or WKT of the releases' CRS (a file).
    lattice, model, priors : dict or None
        Descriptions of the lattice, the fitted model and its priors (a file).
    intensity : str or None
        What the grid layer's intensity columns hold, when written (a file).
    data : str or None
        A public description of the data.
    notes : str or None
        Free text.
    geosynth_version : str or None
        Version of geosynth that wrote the file.
    created_utc : str or None
        ISO 8601 time the file was written.

    Raises
    ------
    geosynth.errors.InputTypeError
        A field of the wrong type: ``method=float("nan")``, ``release=1.0``, ``epsilon=True``,
        ``ledger=[...]``, ``n_records=5``, ``parameters`` not a dict.
    geosynth.errors.InputError
        A value out of range: ``release``, ``posterior_draw``, ``n_public`` or a count of
        ``n_records`` below 0, ``m`` below 1, ``epsilon`` NaN or <= 0 (``inf`` is a record of
        no privacy guarantee, and is kept), ``noise`` not one of :data:`NOISE_SOURCES`, or
        ``parameters`` named like a field, or ``parameters["limits"]`` that are no limits
        (:func:`check_recorded_limits`).

    Examples
    --------
    >>> info = ReleaseInfo(method="donut", release=0, parameters={"r_min": 1.0, "r_max": 2.0})
    >>> info.to_attrs()
    {'method': 'donut', 'release': 0, 'r_min': 1.0, 'r_max': 2.0}
    >>> ReleaseInfo.from_attrs({"geosynth": info.to_attrs()}) == info
    True
    """

    method: str | None = None
    release: int | None = None
    posterior_draw: int | None = None
    weighted: bool | None = None
    epsilon: float | None = None
    neighbours: str | None = None
    noise: str | None = None
    ledger: Mapping[str, Any] | None = None
    size: Mapping[str, Any] | None = None
    n_public: int | None = None
    parameters: Mapping[str, Any] = field(default_factory=dict)
    m: int | None = None
    n_records: tuple[int, ...] | None = None
    crs: str | None = None
    lattice: Mapping[str, Any] | None = None
    model: Mapping[str, Any] | None = None
    priors: Mapping[str, Any] | None = None
    intensity: str | None = None
    data: str | None = None
    notes: str | None = None
    geosynth_version: str | None = None
    created_utc: str | None = None

    def __post_init__(self) -> None:
        """Check every field, and refuse :attr:`parameters` named like a field.

        A recorded field is replaced by its plain value (:func:`_checked_field`): an int for
        ``np.int64(2)``, a float for ε, a tuple for ``n_records``. Parameters named like a
        field would be written over it by :meth:`to_attrs`.
        """
        for item in dataclasses.fields(self):
            value = getattr(self, item.name)
            if value is not None and item.name != "parameters":
                object.__setattr__(self, item.name, _checked_field(item.name, value))
        if not isinstance(self.parameters, Mapping):
            raise InputTypeError(
                f"ReleaseInfo parameters must be a dict, got {describe_value(self.parameters)}"
            )
        if LIMITS_PARAMETER in self.parameters:
            limits = check_recorded_limits(self.parameters[LIMITS_PARAMETER],
                                           f"ReleaseInfo parameters[{LIMITS_PARAMETER!r}]")
            object.__setattr__(self, "parameters", {**self.parameters, LIMITS_PARAMETER: limits})
        clash = sorted(set(self.parameters) & {item.name for item in dataclasses.fields(self)},
                       key=str)
        if clash:
            raise InputError(
                f"ReleaseInfo parameters {clash} are named like its fields: to_attrs writes "
                "the parameters next to the fields, where one would replace the other; give "
                f"the value as the field, ReleaseInfo({clash[0]}=...), or rename the parameter"
            )

    def replace(self, **changes: Any) -> ReleaseInfo:
        """Return a copy with ``changes`` (field name -> value) applied.

        Parameters
        ----------
        **changes
            New values of fields.

        Returns
        -------
        ReleaseInfo
        """
        return dataclasses.replace(self, **changes)

    def to_attrs(self) -> dict[str, Any]:
        """Return the plain dict kept in ``attrs["geosynth"]`` of a release.

        Returns
        -------
        dict
            Every recorded field (not None) in field order, the :attr:`parameters` in place of
            that field, and ``ledger`` whenever ``epsilon`` is recorded (None: no accountant
            charged it). Containers are copies.
        """
        record: dict[str, Any] = {}
        for item in dataclasses.fields(self):
            value = getattr(self, item.name)
            if item.name == "parameters":
                record.update(copy.deepcopy(dict(value)))
            elif item.name == "n_records" and value is not None:
                record[item.name] = list(value)
            elif value is not None or (item.name == "ledger" and self.epsilon is not None):
                record[item.name] = copy.deepcopy(value)
        return record

    @classmethod
    def from_attrs(cls, attrs: Mapping[str, Any]) -> ReleaseInfo | None:
        """Read the record of a release's ``attrs`` (:meth:`to_attrs` written there).

        Parameters
        ----------
        attrs : Mapping
            ``release.attrs``.

        Returns
        -------
        ReleaseInfo or None
            None when ``attrs`` holds no record (or is not a Mapping). Keys that are not fields
            go to :attr:`parameters`. Values are plain copies: str, int, float, bool, None,
            and dicts (of str keys) and lists of them; ``n_records`` a tuple.

        Raises
        ------
        geosynth.errors.InputTypeError
            The record is not a dict, has a key that is not a str, a field of another type
            (``m="3"``, ``n_records=5``), a value that is not plain data (an array, a
            generator), nested deeper than 32 levels or in a cycle.
        geosynth.errors.InputError
            ``noise`` is not one of :data:`NOISE_SOURCES`, or the record has a key
            ``"parameters"`` (its parameters are keys of the record itself).
        """
        record = attrs.get(INFO_ATTR) if isinstance(attrs, Mapping) else None
        if record is None:
            return None
        where = f"attrs[{INFO_ATTR!r}]"
        if not isinstance(record, Mapping):
            raise InputTypeError(
                f"{where} must be the dict of ReleaseInfo.to_attrs, got "
                f"{describe_value(record)}; {_RECORD_FIX}"
            )
        names = {item.name for item in dataclasses.fields(cls)} - {"parameters"}
        values, parameters = {}, {}
        for key, value in record.items():
            if not isinstance(key, str):
                raise InputTypeError(
                    f"{where} keys must be str, got {describe_value(key)}; {_RECORD_FIX}"
                )
            if key in names:
                values[key] = _field_value(key, value, f"{where}[{key!r}]")
            else:
                parameters[str.__str__(key)] = _plain_value(value, f"{where}[{_key_text(key)}]")
        try:
            return cls(**values, parameters=parameters)
        except InputError as err:  # a value out of range (release=-1, epsilon=nan)
            raise type(err)(f"{where}: {err}; {_RECORD_FIX}") from None

    @classmethod
    def of_set(cls, releases: Iterable[Any]) -> ReleaseInfo:
        """Return what a set of releases records about itself.

        Parameters
        ----------
        releases : iterable of geopandas.GeoDataFrame
            Releases (those without a record are skipped).

        Returns
        -------
        ReleaseInfo
            ``method``, ``epsilon``, ``noise``, ``ledger`` and ``size``, each the value of the
            last release that records one, except that ``noise`` is the weakest any release
            records: :data:`NOISE_SEEDED`, then :data:`NOISE_EXTERNAL`; and the
            :data:`PUBLIC_PARAMETERS` the releases record (the ``limits``).

        Raises
        ------
        geosynth.errors.InputError
            Releases with a record disagree on a parameter of :data:`PUBLIC_PARAMETERS` (one
            set records limits another does not have), or on their ``method`` or ``epsilon``
            (releases of two files, one ε-DP: the file's one record labelled them all ε-DP),
            or some record an ``epsilon`` and others record none: the file's one record would
            misstate how some of its releases were made.
        """
        releases = list(releases)
        records = list(map(release_info, releases))
        infos = [info for info in records if info is not None]
        _check_made_alike(records)
        values = {}
        for name in PUBLIC_RECORD_FIELDS:
            recorded = [getattr(info, name) for info in infos if getattr(info, name) is not None]
            values[name] = recorded[-1] if recorded else None
        for weakest in (NOISE_SEEDED, NOISE_EXTERNAL):
            if weakest in (info.noise for info in infos):
                values["noise"] = weakest
                break
        return cls(**values, parameters=_shared_parameters(infos))


def _check_made_alike(records: list[ReleaseInfo | None]) -> None:
    """Refuse releases made in different ways (method, ε) for one file's one record."""
    ways = [(None, None) if info is None else (info.method, info.epsilon) for info in records]
    dp = {k for k, (_, epsilon) in enumerate(ways) if epsilon is not None}
    methods = {method for method, _ in ways if method is not None}
    epsilons = {epsilon for _, epsilon in ways if epsilon is not None}
    if len(methods) > 1 or len(epsilons) > 1 or 0 < len(dp) < len(ways):
        groups: dict[tuple, list[int]] = {}
        for k, way in enumerate(ways):
            groups.setdefault(way, []).append(k)
        described = "; ".join(
            f"releases {list_positions(positions)}: method {method!r}, epsilon {epsilon!r}"
            for (method, epsilon), positions in groups.items())
        raise InputError(
            f"the releases were made in different ways ({described}); a file records one way "
            "for all its releases, so it would misstate how some were made (a file of ε-DP "
            "releases and others would claim ε for all): write each set to its own file"
        )


@runtime_checkable
class ReleaseInfoSource(Protocol):
    """Data that say what every release drawn from them records (e.g. ε-DP noisy counts).

    :class:`geosynth.dp.NoisyCounts` is one: :func:`geosynth.io.write_release` takes the ε and
    ledger of a noise-aware fit's releases from its counts, without knowing :mod:`geosynth.dp`.
    """

    def release_info(self) -> ReleaseInfo:
        """Return the record every release drawn from this object starts from."""


#: Fields of a release's record that :func:`to_public` keeps: those the file's metadata states
#: (:meth:`ReleaseInfo.of_set`), not the release's number or posterior draw.
PUBLIC_RECORD_FIELDS = ("method", "epsilon", "noise", "ledger", "size")
#: Key of :attr:`ReleaseInfo.parameters` holding the analyst's limits of the continuous columns
#: whose synthetic values were drawn truncated (``synthesize(..., limits=...)``).
LIMITS_PARAMETER = "limits"
#: Parameters of a release's record that :func:`to_public` keeps and
#: :func:`geosynth.io.write_release` writes (the others, e.g. the donut radii, stay in the
#: internal record). Limits are public statements of the analyst (an age lies in 0 .. 120),
#: never derived from the data: recording them discloses nothing about the records, and users
#: of the file need them to know that the values were truncated (a mean near a bound moves).
PUBLIC_PARAMETERS = (LIMITS_PARAMETER,)


def release_info(frame: Any) -> ReleaseInfo | None:
    """Return the :class:`ReleaseInfo` recorded in ``frame.attrs`` (None if there is none).

    Parameters
    ----------
    frame : Any
        A release (anything without ``attrs`` has no record).

    Returns
    -------
    ReleaseInfo or None

    Raises
    ------
    geosynth.errors.InputError
        The record in ``frame.attrs`` was altered (:meth:`ReleaseInfo.from_attrs`).
    """
    return ReleaseInfo.from_attrs(getattr(frame, "attrs", None))


def set_release_info(frame: Any, info: ReleaseInfo) -> None:
    """Record ``info`` in ``frame.attrs["geosynth"]`` (replacing a previous record).

    Parameters
    ----------
    frame : pandas.DataFrame or geopandas.GeoDataFrame
        A release; its other ``attrs`` (the linked/public markers) are kept.
    info : ReleaseInfo
        The record.
    """
    frame.attrs[INFO_ATTR] = info.to_attrs()


def check_recorded_limits(value: Any, where: str) -> dict[str, list[float | None]]:
    """Check the ``limits`` recorded in a release's record (attrs or file) and return a copy.

    The recorded form of :func:`geosynth.synthesize`'s ``limits`` (checked there): plain JSON.

    Parameters
    ----------
    value : Any
        The recorded limits: ``{column: [low, high]}``, an end None where it is open.
    where : str
        What the message calls it (``"ReleaseInfo parameters['limits']"``).

    Returns
    -------
    dict of str to list
        ``{column: [low, high]}`` in the given order, each end a float or None.

    Raises
    ------
    geosynth.errors.InputTypeError
        ``value`` is not a dict of str keys, an entry is not a pair, an end not a real number
        or None.
    geosynth.errors.InputError
        ``value`` is empty, an end is not finite, an entry has two open ends or low >= high:
        :func:`~geosynth.synth.synthesize` records none of them.
    """
    if not isinstance(value, Mapping) or not value:
        kind = InputError if isinstance(value, Mapping) else InputTypeError
        raise kind(f"{where} must be a non-empty dict {{column: [low, high]}} (None for an open "
                   f"end), got {describe_value(value)}; leave it out of a release drawn "
                   "without limits")
    checked = {}
    for column, pair in value.items():
        if not isinstance(column, str):
            raise InputTypeError(f"{where} keys must be column names (str), got "
                                 f"{describe_value(column)}")
        checked[str.__str__(column)] = _recorded_pair(pair, f"{where}[{_key_text(column)}]")
    return checked


def _recorded_pair(pair: Any, where: str) -> list[float | None]:
    """One recorded entry of limits: a range of :func:`check_range`, not open at both ends."""
    low, high = check_range(pair, where)
    if math.isinf(low) and math.isinf(high):
        raise InputError(f"{where} has two open ends, which limits nothing; synthesize records "
                         "only the columns it truncates")
    return [None if math.isinf(end) else end for end in (low, high)]


def _shared_parameters(infos: list[ReleaseInfo]) -> dict[str, Any]:
    """Return the :data:`PUBLIC_PARAMETERS` the records ``infos`` share; refuse any that differ."""
    shared = {}
    for name in PUBLIC_PARAMETERS:
        recorded = [info.parameters.get(name) for info in infos]
        differ = [value for value in recorded if value != recorded[0]]
        if differ:
            raise InputError(
                f"the releases record different {name}, {recorded[0]!r} and {differ[0]!r} (None: "
                f"not recorded); a file records one set of {name} for all its releases: write "
                f"the releases drawn with the same {name} together"
            )
        if recorded and recorded[0] is not None:
            shared[name] = recorded[0]
    return shared


def _checked_field(name: str, value: Any) -> Any:
    """Return the recorded (not None) field ``name`` of a :class:`ReleaseInfo` as a plain value.

    Raises
    ------
    geosynth.errors.InputTypeError
        ``value`` is not of the field's type.
    geosynth.errors.InputError
        ``value`` is out of the field's range.
    """
    label = f"ReleaseInfo.{name}"
    if name == "noise":
        return check_choice(value, label, sorted(NOISE_SOURCES))
    if name in _TEXT_FIELDS:
        return check_optional_str(value, label)
    if name in _INT_FIELDS:
        return check_int(value, label, _INT_MINIMUM[name])
    if name == "epsilon":
        return check_epsilon(value, label, allow_infinity=True, hint=_EPSILON_FIX)
    if name == "weighted":
        return check_bool(value, label)
    if name == "n_records":
        if not is_sequence(value):
            raise InputTypeError(f"{label} must be a list of int (the records of each "
                                 f"release) or None, got {describe_value(value)}")
        return tuple(check_int(n, f"{label}[{k}]", 0) for k, n in enumerate(value))
    if not isinstance(value, Mapping):  # ledger, size, lattice, model, priors
        raise InputTypeError(f"{label} must be a dict or None, got {describe_value(value)}")
    return value


def _field_value(name: str, value: Any, where: str) -> Any:
    """Return a field of a record read from ``attrs`` as a plain value of the field's type."""
    if value is None:
        return None
    if name in _TEXT_FIELDS and isinstance(value, str):
        text = str.__str__(value)  # a plain str: a subclass may carry anything else along
        if name == "noise" and text not in NOISE_SOURCES:
            raise InputError(f"{where} must be one of {sorted(NOISE_SOURCES)}, got "
                             f"{describe_value(text)}; {_RECORD_FIX}")
        return text
    if name in _INT_FIELDS and is_integer(value):
        return int(value)
    if name == "epsilon" and is_real(value):
        return as_float(value)  # 10**400 or a huge Fraction: inf, not an OverflowError
    if name == "weighted" and isinstance(value, bool | np.bool_):
        return bool(value)
    if name in _DICT_FIELDS and isinstance(value, Mapping):
        return _plain_value(value, where)
    if name == "n_records" and isinstance(value, list | tuple) and all(map(is_integer, value)):
        return tuple(int(n) for n in value)
    kind = ("a str" if name in _TEXT_FIELDS else "an int" if name in _INT_FIELDS
            else "a number" if name == "epsilon" else "True or False" if name == "weighted"
            else "a dict" if name in _DICT_FIELDS else "a list of int")
    raise InputTypeError(f"{where} must be {kind} or None, got {describe_value(value)}; "
                         f"{_RECORD_FIX}")


def _plain_value(value: Any, where: str, depth: int = 0) -> Any:
    """Return a copy of ``value`` made of plain JSON-able Python values (tuples: lists)."""
    if value is None:
        return None
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if is_integer(value):
        return int(value)
    if is_real(value):
        return as_float(value)
    if isinstance(value, Mapping | list | tuple) and depth >= _MAX_DEPTH:
        raise InputTypeError(f"{where} is nested more than {_MAX_DEPTH} levels deep (or holds "
                             f"itself); {_RECORD_FIX}")
    if isinstance(value, Mapping):
        copied = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise InputTypeError(f"{where} keys must be str, got {describe_value(key)}; "
                                     f"{_RECORD_FIX}")
            copied[str.__str__(key)] = _plain_value(item, f"{where}[{_key_text(key)}]",
                                                    depth + 1)
        return copied
    if isinstance(value, list | tuple):
        return [_plain_value(item, f"{where}[{k}]", depth + 1) for k, item in enumerate(value)]
    raise InputTypeError(
        f"{where} must hold plain values (str, int, float, bool, None, and dicts and lists of "
        f"them), got {describe_value(value)}; {_RECORD_FIX}"
    )


def _key_text(key: str) -> str:
    """Return ``repr(key)``, cut to a readable length and without control characters."""
    return describe_value(str.__str__(key)).removeprefix("str ")


def row_digest(frame: pd.DataFrame) -> list[int]:
    """Return a SHA-256 digest of ``frame``'s values, row order included, as eight 32-bit words.

    The key that makes a shuffle or a seed depend on data an intruder does not hold
    (:func:`to_public`; the command line's seeds, keyed by the records).

    Parameters
    ----------
    frame : pandas.DataFrame
        Geometry columns are hashed as WKB, the others by
        :func:`pandas.util.hash_pandas_object` (as text where their values are unhashable).
        The index and the column names are not.

    Returns
    -------
    list of int
        Words for :class:`numpy.random.SeedSequence`.
    """
    digest = hashlib.sha256(str(len(frame)).encode())
    for position in range(frame.shape[1]):
        values = frame.iloc[:, position]
        if isinstance(values.dtype, gpd.array.GeometryDtype):
            digest.update(_wkb_bytes(np.asarray(values.array, dtype=object)))
            continue
        digest.update(_value_words(values).tobytes())
    return np.frombuffer(digest.digest(), dtype=np.uint32).tolist()


def _value_words(values: pd.Series) -> np.ndarray:
    """Return one uint64 hash per value (:func:`pandas.util.hash_pandas_object`), C-ordered."""
    try:
        try:
            words = pd.util.hash_pandas_object(values, index=False).to_numpy()
        except TypeError:  # lists, dicts: unhashable cells
            words = pd.util.hash_pandas_object(values.astype(str), index=False).to_numpy()
    except UnicodeEncodeError:  # text with lone surrogates, which has no UTF-8
        words = pd.util.hash_pandas_object(values.map(repr), index=False).to_numpy()
    return np.ascontiguousarray(words, dtype=np.uint64)


def column_digest(values: pd.Series) -> str:
    """Return the SHA-256 (hex) of a column's values as a multiset: their order is ignored.

    A row shuffle (:func:`to_public`) keeps it; a value changed, added or removed changes it.
    Categories that no row holds do not enter it.

    Parameters
    ----------
    values : pandas.Series
        One non-geometry column.

    Returns
    -------
    str
    """
    return hashlib.sha256(np.sort(_value_words(values)).tobytes()).hexdigest()


def points_record(frame: gpd.GeoDataFrame) -> dict[str, Any]:
    """Return the record of ``frame``'s points: their CRS and a digest of their coordinates.

    The digest is the SHA-256 of the number of points and of their coordinates sorted (a
    multiset: a row shuffle keeps it; a point moved, added or removed changes it).

    Parameters
    ----------
    frame : geopandas.GeoDataFrame
        A release.

    Returns
    -------
    dict
        ``{"crs": WKT or None, "digest": hex}``.
    """
    xy = shapely.get_coordinates(np.asarray(frame.geometry.array, dtype=object))
    xy = np.ascontiguousarray(xy[np.lexsort((xy[:, 1], xy[:, 0]))])
    digest = hashlib.sha256(str(len(frame)).encode())
    digest.update(xy.tobytes())
    return {"crs": None if frame.crs is None else frame.crs.to_wkt(),
            "digest": digest.hexdigest()}


#: The little-endian WKB of a 2-D point: byte order 1, type 1, x, y (21 bytes, no padding).
_POINT_WKB = np.dtype([("order", "u1"), ("type", "<u4"), ("x", "<f8"), ("y", "<f8")])


def _wkb_bytes(geoms: np.ndarray) -> bytes:
    """Return the WKB of ``geoms`` joined (b"" for a missing one), as shapely writes it.

    For 2-D points, which a release is, the bytes are laid out with NumPy: shapely's WKB
    objects joined in Python took 2.8 s per million points (0.5 s so).
    """
    if geoms.size and (shapely.get_type_id(geoms) == 0).all() and not (
            shapely.has_z(geoms).any() or shapely.is_empty(geoms).any()):
        xy = shapely.get_coordinates(geoms)
        packed = np.empty(len(geoms), dtype=_POINT_WKB)
        packed["order"], packed["type"] = 1, 1
        packed["x"], packed["y"] = xy[:, 0], xy[:, 1]
        return packed.tobytes()
    wkb = shapely.to_wkb(geoms)
    wkb[pd.isna(wkb)] = b""  # a missing geometry
    return b"".join(wkb.tolist())


def _public_order(frame: pd.DataFrame, rng: np.random.Generator) -> np.ndarray:
    """Return the row shuffle of :func:`to_public`, a permutation keyed by ``rng`` and the rows.

    The permutation is drawn from ``SeedSequence([128 bits of rng, row_digest(frame)])``.
    From the seed alone (``to_public(release, seed=4)``: small seeds are the usual choice) an
    intruder redrew the permutation and put every release's rows back in the input's order,
    row k the synthetic version of record k in all m releases. The digest needs the rows in
    that order, which the published file does not give; the same release and seed still give
    the same order.
    """
    key = rng.integers(0, 2**32, size=4, dtype=np.uint64).tolist()
    seed = np.random.SeedSequence([*key, *row_digest(frame)])
    return np.random.default_rng(seed).permutation(len(frame))


def to_public(release: gpd.GeoDataFrame, seed: SeedLike = None) -> gpd.GeoDataFrame:
    """Return the form of a release that may be published.

    Parameters
    ----------
    release : geopandas.GeoDataFrame
        One release from :func:`~geosynth.synth.synthesize` (or a baseline).
    seed : None, int, numpy.random.SeedSequence or numpy.random.Generator
        Randomness of the row shuffle; the same seed gives the same order of the same rows.
        The shuffle is also keyed by the rows in their input order (:func:`_public_order`), so
        a guessed seed does not undo it.

    Returns
    -------
    geopandas.GeoDataFrame
        The rows in a random order with a fresh ``RangeIndex`` (the input order and index labels
        could link synthetic records to confidential ones), the active geometry, and the other
        columns except geometry columns other than the active one (also an ``object`` column
        holding shapely geometries) and internal columns (names starting with ``"_"``). A
        categorical column (or a pyarrow dictionary column) keeps only the categories its rows
        hold: the others may be values of confidential records
        that are not in the release (a category made from the whole file, a record that
        ``prepare`` dropped), and the dtype would publish them. ``attrs`` metadata and the
        name of the column labels (``columns.name``) are dropped, except the marker
        ``attrs[PUBLIC_ATTR] = True`` by which :func:`geosynth.io.write_release` knows the rows
        were shuffled, on a baseline's release ``attrs[BASELINE_ATTR]`` (its method), by
        which it refuses to publish one, ``attrs[COLUMNS_ATTR]`` (the columns the synthesizer
        made that are kept, :func:`recorded_columns`), by which it refuses columns added
        since, and the fields :data:`PUBLIC_RECORD_FIELDS` of the
        release's record (:func:`release_info`: the method, and ε, noise, ledger and size of a
        DP release) and its :data:`PUBLIC_PARAMETERS` (the ``limits`` of a Paiva release),
        which the file's metadata states. CRS and column order are kept.

    Raises
    ------
    geosynth.errors.InputError
        ``release`` is not a GeoDataFrame with an active geometry column, has MultiIndex
        column labels, several columns of the same name, or a column named like a record or
        cell identifier (:data:`ID_COLUMNS`); its ``attrs`` hold an altered record, baseline
        mark (:func:`baseline_method`) or record of columns (:func:`recorded_columns`).

    Examples
    --------
    >>> import geopandas as gpd
    >>> release = gpd.GeoDataFrame(
    ...     {"y": [1, 0]}, geometry=gpd.points_from_xy([0.5, 1.5], [0.5, 0.5]), index=[17, 3]
    ... )
    >>> public = to_public(release, seed=1)
    >>> public.index.tolist(), sorted(public["y"].tolist())
    ([0, 1], [0, 1])
    """
    # First: pandas deep-copies attrs into every selection, even of the geometry column, and
    # a value that cannot be copied would fail there without naming the record.
    method = baseline_method(release)
    made = release_info(release)
    check_geodataframe(release, "release")
    _check_column_names(release)
    rng = as_generator(seed)
    geometry = release.geometry.name
    keep = [
        c
        for c in release.columns
        if c == geometry
        or not (
            holds_geometries(release[c])
            or (isinstance(c, str) and c.startswith(INTERNAL_PREFIX))
        )
    ]
    order = _public_order(release[keep], rng)
    public = release[keep].iloc[order].reset_index(drop=True)
    for position in range(public.shape[1]):
        values = public.iloc[:, position]
        used = _used_levels_only(values)
        if used is not values:
            public.isetitem(position, used)
    public = gpd.GeoDataFrame(public, geometry=geometry, crs=release.crs)
    public.columns = public.columns.rename(None)  # a label of the confidential frame's columns
    public.attrs = {PUBLIC_ATTR: True}
    if method is not None:
        public.attrs[BASELINE_ATTR] = method
    keep_recorded_columns(release, public)
    if made is not None:  # how the points were made, as write_release publishes it
        kept = {name: made.parameters[name] for name in PUBLIC_PARAMETERS
                if name in made.parameters}
        set_release_info(public, ReleaseInfo(**{name: getattr(made, name)
                                                for name in PUBLIC_RECORD_FIELDS},
                                             parameters=kept))
    return public


def check_id_columns(release: pd.DataFrame, name: str, fix: str, *,
                     released: Iterable[Any] = (),
                     rule: Callable[[Any], bool] = is_identifier_name) -> None:
    """Refuse a column (other than the active geometry) named like an identifier.

    Parameters
    ----------
    release : pandas.DataFrame or geopandas.GeoDataFrame
        A release, or a layer read from a release file.
    name : str
        How the message names the release.
    fix : str
        What to do instead, ending the message.
    released : iterable, optional
        Columns the model released (its attributes and continuous columns): let through
        whatever their names (an attribute ``region_id`` of a few levels is no identifier;
        :func:`geosynth.prepare` refuses attributes whose levels identify records).
    rule : callable, default :func:`is_identifier_name`
        Whether a column name is an identifier's (:func:`to_public`, which does not know the
        model, takes only the names of :data:`ID_COLUMNS`).

    Raises
    ------
    geosynth.errors.InputError
        A column's name is an identifier's (``rule``) and not in ``released``.
    """
    geometry = getattr(getattr(release, "geometry", None), "name", None)
    allowed = set(released)
    for column in release.columns:
        if column != geometry and column not in allowed and rule(column):
            raise InputError(
                f"{name} has a column {str(column)!r}, which identifies records or their cells "
                f"and must not be published; {fix}"
            )


def _check_column_names(release: gpd.GeoDataFrame) -> None:
    """Refuse column labels that :func:`to_public` cannot tell apart (MultiIndex, repeats)."""
    if isinstance(release.columns, pd.MultiIndex):
        raise InputError(
            f"release has {release.columns.nlevels}-level (MultiIndex) column labels; give it "
            "one level of names, e.g. release.columns = ['_'.join(map(str, c)) for c in "
            "release.columns], keeping the geometry column's name"
        )
    check_unique_columns(release, "release")
    # The names of ID_COLUMNS only: to_public does not know the model, whose attributes may be
    # named like identifiers (write_release, given fit=, does).
    check_id_columns(release, "release", "drop the column (release.drop(columns=...)) before "
                     "to_public", rule=in_id_columns)


def _used_levels_only(values: pd.Series) -> pd.Series:
    """``values`` with only the categories (dictionary entries) its rows hold.

    A pandas categorical keeps every category of its dtype, and a pyarrow dictionary column
    (``pd.ArrowDtype(pa.dictionary(...))``) every entry of its dictionary, after the rows
    holding them are gone: both would publish values of records that are not in the release.
    """
    if isinstance(values.dtype, pd.CategoricalDtype):
        return values.cat.remove_unused_categories()
    arrow_type = getattr(values.dtype, "pyarrow_dtype", None)
    if arrow_type is None or not _is_dictionary(arrow_type):
        return values
    import pyarrow as pa

    # pa.array takes the column's own arrow data (pa.chunked_array iterated it as a sequence,
    # splitting each string into characters).
    chunks = pa.array(values.array).cast(arrow_type.value_type).dictionary_encode()
    chunks = chunks.cast(pa.dictionary(arrow_type.index_type, arrow_type.value_type,
                                       arrow_type.ordered))
    return pd.Series(pd.array(chunks, dtype=values.dtype), index=values.index, name=values.name)


def _is_dictionary(arrow_type: Any) -> bool:
    import pyarrow as pa

    return pa.types.is_dictionary(arrow_type)


def refuse_baseline(frame: Any, name: str, fix: str) -> None:
    """Refuse to publish ``frame`` if a baseline (:func:`baseline_method`) made it.

    Parameters
    ----------
    frame : Any
        A release.
    name : str
        How the caller names it in the message (``"releases[0]"``).
    fix : str
        What to do instead, ending the message.

    Raises
    ------
    geosynth.errors.InputError
        ``frame`` was made by a baseline (the Naive, donut or neighbour method).
    """
    method = baseline_method(frame)
    if method is not None:
        raise InputError(
            f"{name} was made by the {method} baseline, whose points {_BASELINE_POINTS[method]}, "
            f"next to all its other columns: {fix}"
        )


def baseline_method(frame: Any) -> str | None:
    """Return the baseline method (in :data:`BASELINE_METHODS`) that made ``frame``, or None.

    Read from the release's record (:func:`release_info`) or, on the output of
    :func:`to_public`, from :data:`BASELINE_ATTR`.

    Parameters
    ----------
    frame : Any
        A release.

    Returns
    -------
    str or None

    Raises
    ------
    geosynth.errors.InputError
        ``attrs[BASELINE_ATTR]`` is set to anything but a method of :data:`BASELINE_METHODS`,
        or the record is altered (:meth:`ReleaseInfo.from_attrs`).
    """
    marker = _attrs_entry(frame, BASELINE_ATTR)
    if marker is not None:
        method = str.__str__(marker) if isinstance(marker, str) else None
        if method not in BASELINE_METHODS:
            raise InputError(
                f"attrs[{BASELINE_ATTR!r}] must be one of {sorted(BASELINE_METHODS)} (to_public "
                f"keeps there the method of a baseline's release), got {describe_value(marker)}; "
                f"remove it (del release.attrs[{BASELINE_ATTR!r}]) if no baseline made the "
                "release"
            )
        return method
    info = release_info(frame)
    return info.method if info is not None and info.method in BASELINE_METHODS else None


def keep_recorded_columns(source: Any, target: Any) -> None:
    """Record on ``target`` the entries of ``source``'s record for the columns ``target`` holds.

    For a public form of ``source`` (:func:`to_public`, a public review map's layer), which
    drops internal columns and ``attrs``; nothing is recorded if ``source`` records nothing.

    Parameters
    ----------
    source : Any
        A release (:func:`recorded_columns`).
    target : pandas.DataFrame
        Its public form; ``target.attrs`` is updated.

    Raises
    ------
    geosynth.errors.InputError
        ``source``'s record is altered (:func:`recorded_columns`).
    """
    made = recorded_columns(source)
    if made is not None:
        target.attrs[COLUMNS_ATTR] = {c: made[c] for c in target.columns if c in made}
    points = recorded_points(source)
    if points is not None:
        target.attrs[POINTS_ATTR] = dict(points)


def record_columns(frame: pd.DataFrame) -> None:
    """Record the columns of ``frame`` not yet recorded as made, with the digests of values.

    :func:`make_release` records the columns and points of every release it builds; call this
    on a release made outside geosynth, whose columns hold nothing of the confidential
    records, before :func:`geosynth.io.write_release` (which refuses columns no record lists,
    and values or points changed since they were recorded). Columns and points already
    recorded keep their record: a value written over a synthesized column stays refused.
    Never on a frame with a merged or joined column of the records: the record is what lets
    it through.

    Parameters
    ----------
    frame : pandas.DataFrame
        A release; ``frame.attrs[COLUMNS_ATTR]`` (and, for a GeoDataFrame with an active
        geometry, ``frame.attrs[POINTS_ATTR]``) is updated.

    Raises
    ------
    geosynth.errors.InputError
        The record is altered (:func:`recorded_columns`, :func:`recorded_points`).
    """
    made = recorded_columns(frame) or {}
    for label in plain_columns(frame):
        if label not in made:
            made[label] = column_digest(frame[label])
    frame.attrs[COLUMNS_ATTR] = made
    has_points = getattr(frame, "geometry", None) is not None  # an active geometry
    if has_points and recorded_points(frame) is None:
        frame.attrs[POINTS_ATTR] = points_record(frame)


def recorded_points(frame: Any) -> dict | None:
    """Return the record of a release's points (:func:`points_record`; None: no record).

    Parameters
    ----------
    frame : Any
        A release.

    Returns
    -------
    dict or None

    Raises
    ------
    geosynth.errors.InputError
        ``attrs[POINTS_ATTR]`` is set to anything but such a record.
    """
    record = _attrs_entry(frame, POINTS_ATTR)
    if record is None:
        return None
    if not (isinstance(record, dict) and set(record) == {"crs", "digest"}
            and isinstance(record["digest"], str)
            and (record["crs"] is None or isinstance(record["crs"], str))):
        raise InputError(
            f"attrs[{POINTS_ATTR!r}] must be the record of the points a synthesizer drew (their "
            f"CRS and digest), got {describe_value(record)}; the record was altered: write the "
            "release as geosynth.synthesize and geosynth.to_public made it"
        )
    return record


def moved_points(frame: gpd.GeoDataFrame) -> str | None:
    """Say how ``frame``'s points differ from the recorded ones (None: as recorded, or none).

    Parameters
    ----------
    frame : geopandas.GeoDataFrame
        A release.

    Returns
    -------
    str or None
        ``"crs"`` if they are in another CRS than recorded (then they cannot be compared),
        ``"points"`` if they are other points.
    """
    record = recorded_points(frame)
    if record is None:
        return None
    if (frame.crs is None) != (record["crs"] is None) or (
            frame.crs is not None and not frame.crs.equals(record["crs"])):
        return "crs"
    return None if points_record(frame)["digest"] == record["digest"] else "points"


def recorded_columns(frame: Any) -> dict | None:
    """Return the columns a synthesizer recorded making, with their digests (None: no record).

    :func:`make_release` records each column of a release and the digest of its values
    (:func:`column_digest`) in ``attrs[COLUMNS_ATTR]``, and :func:`to_public` keeps the record;
    pandas carries ``attrs`` through a copy, an assignment or ``assign``, so a column added to
    a release afterwards (an original value merged back, ``orig_x``) is not in it, and one
    overwritten (``release["z"] = records["z"]``) no longer matches its digest.

    Parameters
    ----------
    frame : Any
        A release (anything without ``attrs`` has no record).

    Returns
    -------
    dict or None
        Each recorded column label and the hex digest of its values.

    Raises
    ------
    geosynth.errors.InputError
        ``attrs[COLUMNS_ATTR]`` is set to anything but a dict of column labels and digests.
    """
    record = _attrs_entry(frame, COLUMNS_ATTR)
    if record is None:
        return None
    if not (isinstance(record, dict) and all(isinstance(v, str) for v in record.values())):
        raise InputError(
            f"attrs[{COLUMNS_ATTR!r}] must map each column a synthesizer made to the digest of "
            f"its values (make_release records it), got {describe_value(record)}; the record "
            "was altered: write the release as geosynth.synthesize and geosynth.to_public "
            "made it, or, if none of its columns holds values of the records, record them "
            "again with geosynth.synth.release.record_columns(release)"
        )
    return dict(record)


def edited_columns(frame: pd.DataFrame) -> list:
    """Return the recorded columns of ``frame`` whose values no longer match their digest.

    Parameters
    ----------
    frame : pandas.DataFrame
        A release (:func:`recorded_columns`); columns without a record are not checked.

    Returns
    -------
    list
        Column labels, in column order.
    """
    made = recorded_columns(frame) or {}
    return [label for k, label in enumerate(frame.columns)
            if label in made and column_digest(frame.iloc[:, k]) != made[label]]


def is_linked(frame: Any) -> bool:
    """Whether ``frame`` is marked as the internal, row-aligned output of a synthesizer.

    Parameters
    ----------
    frame : Any
        A release (anything without ``attrs`` is not marked).

    Returns
    -------
    bool
        True if ``frame.attrs[LINKED_ATTR]`` is set to anything but None or False and
        ``frame`` is not the output of :func:`to_public`: its row ``k`` (and index label)
        belongs to confidential record ``k``.
    """
    attrs = getattr(frame, "attrs", None)
    if not isinstance(attrs, dict) or is_public(frame):
        return False
    marker = attrs.get(LINKED_ATTR)
    # Any value but None or False counts: the marker fails closed (an array has no truth value).
    return not (marker is None or (isinstance(marker, bool | np.bool_) and not marker))


def is_public(frame: Any) -> bool:
    """Whether ``frame`` is marked as the output of :func:`to_public` (shuffled, fresh index).

    Parameters
    ----------
    frame : Any
        A release.

    Returns
    -------
    bool
        True if ``frame.attrs[PUBLIC_ATTR]`` is True (as :func:`to_public` sets it); any other
        value (``"no"``, 1, an array) is not the mark.
    """
    return _marked(frame, PUBLIC_ATTR)


def is_published(frame: Any) -> bool:
    """Whether ``frame`` was read from a release file (:func:`geosynth.io.read_release`).

    :func:`geosynth.to_public` marks what it returns as public whatever it is given, the
    confidential records too; a frame read from a published file is public already.

    Parameters
    ----------
    frame : Any
        A release.

    Returns
    -------
    bool
        True if ``frame.attrs[PUBLISHED_ATTR]`` is True.
    """
    return _marked(frame, PUBLISHED_ATTR)


def _attrs_entry(frame: Any, key: str) -> Any:
    """Return ``frame.attrs[key]`` (None where ``frame`` has no such entry or no attrs)."""
    attrs = getattr(frame, "attrs", None)
    return attrs.get(key) if isinstance(attrs, Mapping) else None


def _marked(frame: Any, key: str) -> bool:
    """Whether ``frame.attrs[key]`` is True (any other value is not the mark)."""
    attrs = getattr(frame, "attrs", None)
    if not isinstance(attrs, dict):
        return False
    marker = attrs.get(key)
    return isinstance(marker, bool | np.bool_) and bool(marker)


# ---------------------------------------------------------------------- shared helpers
def check_geodataframe(gdf: Any, name: str = "gdf") -> None:
    """Raise InputError unless ``gdf`` is a GeoDataFrame with an active geometry column.

    Parameters
    ----------
    gdf : Any
        The object to check.
    name : str, default "gdf"
        What the message calls it.

    Raises
    ------
    geosynth.errors.InputError
        ``gdf`` is not a GeoDataFrame or has no active geometry column.
    """
    if not isinstance(gdf, gpd.GeoDataFrame):
        raise InputError(
            f"{name} must be a geopandas.GeoDataFrame, got {type(gdf).__module__}."
            f"{type(gdf).__name__}; build one with geopandas.GeoDataFrame(df, geometry=...)"
        )
    try:
        _ = gdf.geometry.name
    except AttributeError as err:
        raise InputError(
            f"{name} has no active geometry column; set one with {name}.set_geometry(column)"
        ) from err


def make_release(
    data: pd.DataFrame,
    xy: np.ndarray,
    geometry: str,
    crs: Any,
    info: ReleaseInfo,
    *,
    linked: bool | None = None,
) -> gpd.GeoDataFrame:
    """GeoDataFrame of the non-geometry columns ``data`` with synthetic points ``xy``.

    Parameters
    ----------
    data : pandas.DataFrame
        The non-geometry columns, one row per record.
    xy : numpy.ndarray of float64, shape (n, 2)
        The synthetic points.
    geometry : str
        Name of the geometry column.
    crs : Any
        CRS of the points.
    info : ReleaseInfo
        How the release was made; recorded in ``attrs["geosynth"]`` (:func:`set_release_info`).
        The columns of ``data`` and the digests of their values are recorded in
        ``attrs[COLUMNS_ATTR]`` (:func:`record_columns`).
    linked : bool, optional
        Whether row ``k`` was made from confidential record ``k`` (default: True unless
        ``info.method`` is one of :data:`UNLINKED_METHODS`); a linked release carries
        ``attrs[LINKED_ATTR] = True`` and is refused by :func:`geosynth.io.write_release`.

    Returns
    -------
    geopandas.GeoDataFrame
    """
    frame = data.copy()
    frame[geometry] = gpd.points_from_xy(xy[:, 0], xy[:, 1])
    out = gpd.GeoDataFrame(frame, geometry=geometry, crs=crs)
    out.attrs = {}
    record_columns(out)
    set_release_info(out, info)
    if linked is None:
        linked = info.method not in UNLINKED_METHODS
    if linked:
        out.attrs[LINKED_ATTR] = True
    return out


def plain_columns(gdf: gpd.GeoDataFrame) -> list:
    """Return the labels of the columns of ``gdf`` that are not geometry columns.

    Parameters
    ----------
    gdf : geopandas.GeoDataFrame
        Any frame; a label repeated by several columns is listed once per column.

    Returns
    -------
    list
        Labels in column order.
    """
    dtypes = gdf.dtypes
    return [c for c, dtype in zip(gdf.columns, dtypes, strict=True)
            if not isinstance(dtype, gpd.array.GeometryDtype)]
