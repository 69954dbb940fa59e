"""Validated confidential points -> counts per (cell, attribute combination) for the Poisson model.

:func:`prepare` is the public boundary between a user's :class:`geopandas.GeoDataFrame` and the
Bayesian Poisson/ICAR model of Paiva et al. (2014) as extended by Nunes (2018): it checks the data,
locates every point in a :class:`geosynth.lattice.Grid`, and returns a :class:`CellCounts` holding

* ``counts[i, b]`` -- the number of records with attribute combination ``b`` in cell ``i``
  (:math:`c_i^{(b)}` in Nunes 2018, §2.1), and
* with a continuous variable ``Z``, the per-(cell, combination) means Z̄_i^(b)
  standardised within each combination (Nunes 2018, §2.2.1) -- one array of them per
  continuous covariate when several are given (``continuous=["z1", "z2"]``; Nunes 2018, §5:
  the β extension generalises to K covariates).

Combinations and levels
-----------------------
The combinations ``b = 0 .. B-1`` are those *present* in the kept records (not the full product of
levels), ordered lexicographically by their attribute codes. The levels of each attribute are the
values present in the kept records, ordered by a stable rule:

* a pandas ``Categorical`` column keeps its category order (restricted to observed categories), so
  choose the baseline with ``gdf[a] = pd.Categorical(gdf[a], categories=[baseline, ...])``;
* any other column uses ``sorted()`` of its unique values (so ``0 < 1``, ``"a" < "b"``).

Code 0 of each attribute is its first level, the *baseline* whose effects α and φ the model fixes
at 0.

How the counting runs
---------------------
:func:`prepare` runs three public steps, which :func:`geosynth.distributed.prepare_dask` runs
partition by partition on a :class:`dask_geopandas.GeoDataFrame` (the core never imports dask):

1. :func:`locate_records` validates the rows of a frame and locates each record: one row per
   record of a *count table* (the attribute columns, :data:`CELL_COLUMN`, :data:`COUNT_COLUMN`
   = 1 and :data:`Z_SUM_COLUMN`);
2. :func:`count_table` sums a count table per (cell, attribute values): the map step on each
   partition and the combine step over the partitions' tables (in memory the records are
   their own rows, so this step is skipped);
3. :func:`counts_from_table` turns a count table into :class:`CellCounts`: levels,
   combinations, the identifying-attribute check, ``counts`` and ``zbar``.

Preparation on a public domain
------------------------------
A differentially private release (:mod:`geosynth.dp`) must not succeed or fail on facts of the
confidential records: if removing one record turned a release into an error, that event alone
would have ε = ∞. ``prepare(..., levels={attribute: [public levels]})`` therefore refuses only
what the arguments and the frame's schema show (columns, dtypes, CRS, the declared levels, the
lattice, ``max_bytes``) and

* counts every combination of the declared levels (``B`` = their product, in code order, empty
  combinations included), so the memory check uses that public number;
* drops, instead of refusing, a record whose point is missing, empty, not a Point or outside
  every cell, or whose attribute value is not a declared level (NaN included; a boolean
  matches only a boolean level, as ``True == 1`` in Python): under add/remove
  neighbours a dropped record changes at most one count, so the table's sensitivity stays 1;
* skips the checks that read the values: record-identifying attributes (the published levels
  are the declared ones; the noise protects the counts), more combinations than records, a
  single level, an empty frame or no point in any cell.

How many records were dropped, and why, is said in a :class:`~geosynth.errors.DataWarning` on
the curator's terminal; it is not part of the counts' DP output and must not be published.

Record-identifying attributes
-----------------------------
A synthetic release keeps every record's attribute values and moves only its location, so an
attribute whose levels single out records (an ID, a timestamp, an exact amount, age in years in a
small sample) would be published verbatim, one level per person. :func:`prepare` therefore
refuses, among the kept records (``n`` of them), an attribute that is

* *nearly unique*: more distinct levels than half the records (on average fewer than two
  records per level), when ``n >= IDENTIFYING_MIN_RECORDS`` (20); or
* *rich in sample uniques*: at least ``IDENTIFYING_MIN_SINGLETONS`` (5) levels held by a single
  record, and those records more than ``IDENTIFYING_SINGLETON_SHARE`` (5%) of all records, so
  more than one record in twenty is unique on that column alone; or
* *unique*: every record alone in its level, with at least two records (an ID column of tiny
  data, which the two minimums above let through).

The absolute minimums keep a handful of rare levels in tiny data from tripping the check; a
rare category in large data (a few singletons among thousands) passes, with a
:class:`~geosynth.errors.PrivacyLeakWarning` for any level held by fewer than
``RARE_LEVEL_RECORDS`` (3) records, which a release publishes all the same. Pass
``allow_identifying=True`` only for a column whose levels are public and cannot be linked to a
person; otherwise drop the column or coarsen it into groups. An attribute *named* like an
identifier (:func:`~geosynth._identifiers.is_identifier_name`: ``patient_id``) with most
records in levels of fewer than ``IDENTIFYING_MIN_RECORDS`` (20) for a person's or record's
(``patient_id``, ``mrn``; ten visits per patient pass the rules above), ``SMALL_LEVEL_RECORDS``
(5) for a facility's (``clinic_id``), is refused too; under any name such small groups get a
:class:`~geosynth.errors.PrivacyLeakWarning`, and an area's code of large groups
(``ID_MUNICIP``) passes. Combinations of several attributes
are not refused (each attribute alone is; the model needs fewer possible combinations than
records), but combinations that identify records by the rules above (8 x 5 levels over 40
records, one record each, pass that need), or a combination held by a single record, get a
:class:`~geosynth.errors.PrivacyLeakWarning`. Without ``levels=``, attributes holding locations
(geometries, their WKT, WKB or GeoJSON, ``(x, y)`` tuples, each record's ``"x, y"`` text) are
refused: a release would drop or publish them. (With ``levels=`` the levels are the curator's
declared public domain.)
"""

from __future__ import annotations

import math
import numbers
import warnings
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

import geopandas as gpd
import numpy as np
import pandas as pd
import shapely
from scipy.special import ndtri

from geosynth._identifiers import (
    ID_COLUMNS,
    INTERNAL_PREFIX,
    LAYER_NAMES,
    case_clash,
    in_id_columns,
    is_identifier_name,
    names_a_record,
)
from geosynth._messages import SHOW_ROWS, caller_stacklevel
from geosynth._messages import describe_rows as _rows
from geosynth._points import (
    holds_coordinates,
    holds_coordinates_within,
    levels_hold_locations,
    location_code_within,
    point_coordinates,
    usable_points,
)
from geosynth._validation import (
    MAX_CONTINUOUS,
    check_bool,
    check_choice,
    check_max_bytes,
    check_unique_columns,
    describe_value,
    inexact_integers,
    is_sequence,
)
from geosynth.errors import (
    CRSError,
    DataWarning,
    InputError,
    InputTypeError,
    MemoryLimitError,
    PrivacyLeakWarning,
)
from geosynth.lattice import require_projected_crs

if TYPE_CHECKING:
    from geosynth.lattice import Grid

__all__ = [
    "CellCounts",
    "CountTable",
    "labels_of",
    "prepare",
    "check_columns",
    "check_crs",
    "check_cells_per_record",
    "MAX_CELLS_PER_RECORD",
    "MIN_CELLS_CHECKED",
    "WARN_CELLS_PER_RECORD",
    "check_levels",
    "check_declared",
    "check_domain_options",
    "counts_on_domain",
    "domain_codes",
    "domain_combos",
    "locate_on_domain",
    "warn_dropped",
    "DROP_REASONS",
    "beyond_bounds",
    "check_outside",
    "check_kept_labels",
    "check_prepare_options",
    "count_table",
    "covariate_names",
    "warn_of_coordinate_columns",
    "coordinate_moments",
    "lattice_origin",
    "counts_from_table",
    "widen_halves",
    "locate_records",
    "warn_if_bounds_touch_records",
    "no_overlap_message",
    "CELL_COLUMN",
    "COUNT_COLUMN",
    "Z_SUM_COLUMN",
    "z_sum_columns",
    "EXTREME_COLUMNS",
    "extreme_columns",
    "group_extremes",
    "value_fences",
    "fenced_values",
    "VALUE_FENCE",
    "FENCED_MIN_RECORDS",
    "FENCE_QUANTILES",
    "is_identifying",
    "declared_attributes",
    "identifies_records",
    "describe_identifier",
    "identifying_levels",
    "IDENTIFYING_LEVEL_SHARE",
    "RARE_LEVEL_RECORDS",
    "MAX_CONTINUOUS",
    "continuous_values",
    "non_numeric_message",
    "merge_evidence",
    "non_numeric_evidence",
    "is_real_dtype",
    "check_not_row_numbers",
    "on_a_grid",
    "IDENTIFYING_MIN_RECORDS",
    "IDENTIFYING_MIN_SINGLETONS",
    "IDENTIFYING_SINGLETON_SHARE",
    "SMALL_LEVEL_RECORDS",
    "name_bound",
]

_SD_RTOL = 1e-12  # an SD below this fraction of the largest |cell mean| is rounding noise

#: An attribute with more distinct levels than this share of the records is nearly unique.
IDENTIFYING_LEVEL_SHARE = 0.5
#: ... checked from this many kept records on.
IDENTIFYING_MIN_RECORDS = 20
#: A level held by fewer records than this is rare: :func:`prepare` warns that a release
#: publishes it (PrivacyLeakWarning), as synthetic values need this many records of a cell.
RARE_LEVEL_RECORDS = 3
#: An attribute most of whose records share their level with fewer than this many records in all
#: (a patient's id over their few visits, a household's over its members) gets a
#: PrivacyLeakWarning: each level is published verbatim and names a small group of records.
SMALL_LEVEL_RECORDS = 5
#: An attribute with at least this many single-record levels ...
IDENTIFYING_MIN_SINGLETONS = 5
#: ... holding more than this share of the records has too many sample uniques.
IDENTIFYING_SINGLETON_SHARE = 0.05
#: A continuous column whose correlation with the records' x or y reaches this (in absolute
#: value, over 10 or more records) is taken for a coordinate: :func:`prepare` warns.
COORDINATE_CORRELATION = 0.99

#: Width of the fences each record's continuous value is clipped to before the cell means, in
#: interquartile ranges of its combination's values (Tukey's far out): :func:`value_fences`.
VALUE_FENCE = 3.0
#: The fewest records of a combination whose values are clipped to its fences: fewer never
#: centre synthetic values on their own cell means (3 cells of 3 records are needed).
FENCED_MIN_RECORDS = 9
#: Besides the quartiles, the values at these shares from each end whose fences widen a
#: combination's (the first), or stand in where the narrower ones coincide (:func:`value_fences`).
FENCE_QUANTILES = (0.1, 0.05, 0.025, 0.01)

#: Columns of a count table (:func:`locate_records`, :func:`count_table`) besides the
#: attributes: the cell id (-1: in no cell), the number of records and the sum of the
#: continuous column (0 without one; one column per covariate, :func:`z_sum_columns`). Their
#: prefix ``"__geosynth_"`` is refused in an attribute's name, so they cannot clash with one.
CELL_COLUMN = "__geosynth_cell"
COUNT_COLUMN = "__geosynth_n"
Z_SUM_COLUMN = "__geosynth_z"
#: Columns of a count table with a continuous covariate holding, per row, the two largest and
#: the two smallest of its records' values (``-inf``/``inf`` where a row holds one record):
#: :func:`extreme_columns`.
EXTREME_COLUMNS = ("__geosynth_high1", "__geosynth_high2", "__geosynth_low1",
                   "__geosynth_low2")
_INTERNAL_PREFIX = "__geosynth_"  # of the columns above; refused as an attribute's name


def covariate_names(continuous: Sequence[str] | str | None) -> tuple[str, ...]:
    """Return the continuous covariates named by ``continuous=`` as a tuple (empty for None).

    The one reader of the ``continuous`` argument of :func:`prepare` and its steps: a str is
    one covariate, a list or tuple of str several (in the order given).

    Parameters
    ----------
    continuous : str, sequence of str or None
        As for :func:`prepare`.

    Returns
    -------
    tuple of str

    Raises
    ------
    InputError
        ``continuous`` is an empty sequence, holds something other than str, names a column
        more than once, or is neither None, a str nor a list/tuple.
    """
    if continuous is None:
        return ()
    if isinstance(continuous, str):
        return (continuous,)
    if not isinstance(continuous, (list, tuple)):
        raise InputError(
            f"continuous must be a column name, a list of column names or None, got "
            f"{type(continuous).__name__}; e.g. continuous=['z1', 'z2']"
        )
    names = tuple(continuous)
    if not names:
        raise InputError("continuous is an empty list; name at least one numeric column, or "
                         "pass continuous=None for no covariate")
    wrong = [n for n in names if not isinstance(n, str)]
    if wrong:
        raise InputError("continuous must list column names (str), got "
                         f"{', '.join(map(describe_value, wrong))}; e.g. continuous=['z1', 'z2']")
    duplicated = sorted({n for n in names if names.count(n) > 1})
    if duplicated:
        raise InputError(f"continuous lists {duplicated} more than once; name each column once")
    return names


def z_sum_columns(n_covariates: int) -> list[str]:
    """Columns of a count table holding the sums of the ``n_covariates`` continuous covariates.

    :data:`Z_SUM_COLUMN` for the first (all zeros without a covariate), then
    ``Z_SUM_COLUMN + "_k"`` for covariate ``k >= 1``.

    Parameters
    ----------
    n_covariates : int
        Number K of covariates (0 or more).

    Returns
    -------
    list of str
        ``max(K, 1)`` column names.
    """
    return [_covariate_column(Z_SUM_COLUMN, k) for k in range(max(n_covariates, 1))]


def _covariate_column(name: str, k: int) -> str:
    """Name the count table's column ``name`` of covariate ``k``: ``name``, then ``name_k``."""
    return name if k == 0 else f"{name}_{k}"


def extreme_columns(n_covariates: int) -> list[tuple[str, str, str, str]]:
    """Columns of a count table holding each covariate's two largest and two smallest values.

    :data:`EXTREME_COLUMNS` for the first covariate, with ``"_k"`` appended for covariate
    ``k >= 1`` (as :func:`z_sum_columns`); none without a covariate. Returns, for each of
    ``n_covariates`` covariates, ``(largest, second largest, smallest, second smallest)``.
    """
    return [tuple(_covariate_column(c, k) for c in EXTREME_COLUMNS) for k in range(n_covariates)]


def group_extremes(groups: np.ndarray, rows: pd.DataFrame, columns: tuple[str, str, str, str],
                   n_groups: int) -> tuple[np.ndarray, ...]:
    """Return the two largest and two smallest values of each group's records, from its rows.

    A row of a count table holds its records' two largest and two smallest values (a record:
    its value, with ``-inf`` and ``inf``); of a row of ``c`` records, ``c`` of those four are
    distinct records (the largest; the second largest from 2; the smallest from 3; all four
    from 4). Those of a group's rows are sorted together, once.

    Parameters
    ----------
    groups : numpy.ndarray of int64, shape (n,)
        Group of each row, in ``[0, n_groups)``; every group holds a row.
    rows : pandas.DataFrame
        The rows: :data:`COUNT_COLUMN` and ``columns``.
    columns : (str, str, str, str)
        The rows' largest, second largest, smallest and second smallest value
        (:func:`extreme_columns`).
    n_groups : int
        Number of groups.

    Returns
    -------
    tuple of four numpy.ndarray of float64, shape (n_groups,)
        Each group's largest, second largest, smallest and second smallest value (``-inf`` or
        ``inf`` for the second of a group of one record).
    """
    count = rows[COUNT_COLUMN].to_numpy(dtype=np.int64)
    parts = [rows[column].to_numpy(dtype=np.float64)[count >= fewest]
             for column, fewest in zip(columns, (1, 2, 3, 4), strict=True)]
    ids = np.concatenate([groups[count >= fewest] for fewest in (1, 2, 3, 4)])
    values = np.concatenate(parts)
    order = np.lexsort((values, ids))
    values, ids = values[order], ids[order]
    start = np.searchsorted(ids, np.arange(n_groups))
    end = np.searchsorted(ids, np.arange(n_groups), side="right")
    several = end - start >= 2  # else the second largest and smallest are none
    return (values[end - 1], np.where(several, values[np.maximum(end - 2, start)], -np.inf),
            values[start], np.where(several, values[np.minimum(start + 1, end - 1)], np.inf))


class CountTable:
    """Shape accessors shared by exact (:class:`CellCounts`) and noisy count tables.

    Subclasses hold ``counts`` (G, B), ``combos`` (with ``<attribute>_code`` columns) and
    ``attributes``.
    """

    counts: np.ndarray
    combos: pd.DataFrame
    attributes: tuple[str, ...]

    @property
    def n_cells(self) -> int:
        """Number of grid cells ``G``."""
        return int(self.counts.shape[0])

    @property
    def n_combos(self) -> int:
        """Number of attribute combinations ``B``."""
        return int(self.counts.shape[1])

    @property
    def combo_codes(self) -> np.ndarray:
        """Attribute codes of each combination, int64 array of shape (B, K)."""
        columns = [f"{a}_code" for a in self.attributes]
        return self.combos[columns].to_numpy(dtype=np.int64)

    def combination_labels(self, sep: str = ",") -> list[str]:
        """Label each attribute combination by its levels, e.g. ``"y=1,x1=2"``.

        The one builder of combination labels: GeoPackage columns (``lambda_<label>``), GeoTIFF
        band descriptions, release metadata, model parameter names, plot titles and map layers.

        Parameters
        ----------
        sep : str, default ","
            Text between the ``attribute=level`` parts; files use ``","``, figures and maps
            ``", "``.

        Returns
        -------
        list of str
            One label per combination ``b`` (row ``b`` of ``combos``), attributes in the order
            of ``attributes``.
        """
        return labels_of(self.combos, self.attributes, sep)


def labels_of(rows: pd.DataFrame, attributes: Sequence[Hashable], sep: str = ",") -> list[str]:
    """Label each row of ``rows`` by its attributes' levels (:meth:`CountTable.combination_labels`).

    The one label builder: of the combinations of counts, and of the records of a release read
    back (:func:`geosynth.io.read_release` checks that they hold fitted combinations).

    Parameters
    ----------
    rows : pandas.DataFrame
        Holds the ``attributes`` columns.
    attributes : sequence of hashable
        The attributes, in label order.
    sep : str, default ","
        Text between the ``attribute=level`` parts.

    Returns
    -------
    list of str
    """
    columns = [[_level_text(level) for level in rows[attribute].tolist()]
               for attribute in attributes]
    return [
        sep.join(f"{attribute}={level}" for attribute, level in zip(attributes, row, strict=True))
        for row in zip(*columns, strict=True)
    ]


def _level_text(level: Any) -> str:
    """Return a level as its label writes it: -0.0 as 0.0 (one level; files store 0.0).

    A level -0.0 (rounding a small negative value) was labelled "-0.0"; the GeoPackage stores
    it as 0.0, and the release read back held a combination its model did not fit.
    """
    if isinstance(level, float | np.floating) and level == 0:
        return str(type(level)(0.0))
    return f"{level}"


def _check_labels(levels: dict[str, list], combos: Callable[[], pd.DataFrame]) -> None:
    """Refuse levels that make two levels, or two combinations, read alike in their labels.

    The labels (:meth:`CountTable.combination_labels`, ``"a=x,b=y"``) and the ``a=x`` names of
    each level name the columns, bands and parameters of a release; two alike would overwrite
    one another. Levels of an attribute written alike (``1`` and ``"1"``) are refused; so are
    combinations labelled alike, which needs a ``,`` in a level (``a="1,b=2", b="3"`` and
    ``a="1", b="2,b=3"``): the labels are only built then. No level is quoted. A level holding
    a NUL character is refused: files cut text there ("zone<NUL>north" and "zone<NUL>south"
    were read back from a release as one level "zone").
    """
    for attribute, values in levels.items():
        if any("\x00" in f"{v}" for v in values):
            raise InputError(
                f"attribute {attribute!r} has levels holding a NUL character, where GeoPackages "
                "and most GIS files cut text (two such levels would be read back as one); "
                f"remove it, e.g. gdf[{attribute!r}] = gdf[{attribute!r}].str.replace('\\x00', "
                "'')"
            )
        if len({f"{v}" for v in values}) < len(values):
            raise InputError(
                f"attribute {attribute!r} has levels that are written alike (e.g. 1 and '1'), "
                "so their labels in a release would be one; make them one type, e.g. "
                f"gdf[{attribute!r}].astype(str)"
            )
    with_comma = [a for a, values in levels.items() if any("," in f"{v}" for v in values)]
    if not with_comma:  # each "attribute=level" part ends at the next ","
        return
    labels = labels_of(combos(), list(levels))
    if len(set(labels)) < len(labels):
        raise InputError(
            f"levels of attribute(s) {with_comma} contain ',', which separates the parts of a "
            "combination's label ('a=x,b=y'), so two combinations would get the same label "
            "(the name of their columns and bands in a release); replace the ',' in those "
            f"levels, e.g. gdf[{with_comma[0]!r}] = gdf[{with_comma[0]!r}].str.replace(',', ';')"
        )


@dataclass(frozen=True, eq=False)
class CellCounts(CountTable):
    """Counts per (cell, attribute combination) and standardised cell means of a continuous Z.

    Built by :func:`prepare`; every array is read-only. ``G`` is ``grid.n_cells``, ``B`` the number
    of attribute combinations present in the data, ``K`` the number of attributes and ``n`` the
    number of kept records.

    Attributes
    ----------
    counts : numpy.ndarray of int64, shape (G, B)
        ``counts[i, b]`` = number of records of combination ``b`` located in cell ``i``.
    combos : pandas.DataFrame
        ``B`` rows (index ``0..B-1``), lexicographically ordered by codes. For each attribute ``a``
        a column ``a`` (the level) and ``a_code`` (int64 index into ``levels[a]``; 0 = baseline),
        then ``n_records`` (int64).
    record_cell : numpy.ndarray of int64, shape (n,)
        Cell id of each kept record.
    record_combo : numpy.ndarray of int64, shape (n,)
        Combination index (row of ``combos``) of each kept record.
    record_index : pandas.Index
        Labels of the kept records in the input GeoDataFrame, in input order.
    attributes : tuple of str
        The attribute columns, in the order given to :func:`prepare`.
    levels : dict of str to list
        Levels of each attribute present in the kept records, code order (see module docstring);
        the declared levels when ``domain_declared``.
    continuous : str, tuple of str, or None
        The continuous column as given to :func:`prepare` (a str), or the continuous covariates
        (a tuple, for a list given); None without one. :attr:`covariates` is always a tuple.
    zbar : numpy.ndarray of float64, shape (G, B) or (K, G, B), or None
        Standardised mean of Z per (cell, combination): for each ``b`` the raw cell means over the
        non-empty cells minus ``zbar_mean[b]``, divided by ``zbar_sd[b]``; 0 where a pair is
        empty. With a tuple of K covariates, one such (G, B) array per covariate, standardised
        on its own (``zbar[k]`` is covariate ``covariates[k]``).
    zbar_mask : numpy.ndarray of bool, shape (G, B), or None
        True where the (cell, combination) pair holds records (``counts > 0``); the same for
        every covariate.
    zbar_mean : numpy.ndarray of float64, shape (B,) or (K, B), or None
        Per combination (and covariate), the mean of the raw cell means over its non-empty cells.
    zbar_sd : numpy.ndarray of float64, shape (B,) or (K, B), or None
        Per combination (and covariate), the sample SD (``ddof=1``, as R's ``sd``) of the raw
        cell means over its non-empty cells; 1.0 when it is undefined (fewer than two non-empty
        cells) or zero up to rounding (at most 1e-12 times the largest absolute cell mean).
        A raw cell mean is ``zbar * zbar_sd + zbar_mean``.
    grid : geosynth.lattice.Grid
        The lattice the records were located in.
    domain_declared : bool, default False
        True when prepared on a declared public domain (``prepare(..., levels=...)``):
        ``levels`` is then that domain and ``combos`` every combination of it, empty ones
        included. The ε-DP entry points require it.
    z_extremes : numpy.ndarray of float64, shape (2, G, B) or (K, 2, G, B), or None
        Per (cell, combination) pair (and covariate), the sum of its records' two largest raw
        values and the sum of their two smallest; NaN where a pair holds fewer than two
        records. They tell a cell mean that one or two records pull out of the others' range
        from one that many share (:func:`geosynth.synth.paiva.outlying_means`). Internal, as
        the records are: None for counts built without them (then every such mean is
        withheld).
    z_fences : numpy.ndarray of float64, shape (2, B) or (K, 2, B), or None
        Per combination (and covariate), the low and high fence every record's value was
        clipped to before ``zbar`` and ``z_extremes`` were taken (:func:`value_fences`;
        ``-inf`` and ``inf`` for a combination of fewer than :data:`FENCED_MIN_RECORDS`
        records). Internal, as the records are: quartiles of a few values are theirs.
    """

    counts: np.ndarray
    combos: pd.DataFrame
    record_cell: np.ndarray
    record_combo: np.ndarray
    record_index: pd.Index
    attributes: tuple[str, ...]
    levels: dict[str, list]
    continuous: str | tuple[str, ...] | None
    zbar: np.ndarray | None
    zbar_mask: np.ndarray | None
    zbar_mean: np.ndarray | None
    zbar_sd: np.ndarray | None
    grid: Grid
    domain_declared: bool = False
    z_extremes: np.ndarray | None = None
    z_fences: np.ndarray | None = None

    def __post_init__(self) -> None:
        n = len(self.record_cell)
        if self.counts.ndim != 2 or len(self.record_combo) != n or len(self.record_index) != n:
            raise InputError(
                "CellCounts arrays are inconsistent: counts must be (G, B) and record_cell, "
                "record_combo, record_index must have equal lengths; build it with prepare()"
            )
        for name in (
            "counts",
            "record_cell",
            "record_combo",
            "zbar",
            "zbar_mask",
            "zbar_mean",
            "zbar_sd",
            "z_extremes",
            "z_fences",
        ):
            value = getattr(self, name, None)
            if isinstance(value, np.ndarray):
                value.setflags(write=False)

    @property
    def n_records(self) -> int:
        """Number of kept records ``n``."""
        return int(self.record_cell.shape[0])

    @property
    def covariates(self) -> tuple[str, ...]:
        """The continuous covariates, in order (empty without one; one for a str ``continuous``)."""
        return covariate_names(self.continuous)

    def covariate(self, name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Standardised cell means of one continuous covariate, whatever form ``continuous`` has.

        Parameters
        ----------
        name : str
            One of :attr:`covariates`.

        Returns
        -------
        zbar : numpy.ndarray of float64, shape (G, B)
        zbar_mean, zbar_sd : numpy.ndarray of float64, shape (B,)
            As the attributes of the same names describe them, for this covariate.

        Raises
        ------
        InputError
            ``name`` is not a covariate of these counts (an InputTypeError if it is no str).
        """
        names = self.covariates
        if not isinstance(name, str):  # an array raised "truth value ... is ambiguous"
            check_choice(name, "name", names)
        if name not in names:
            raise InputError(f"{name!r} is not a continuous covariate of these counts; they "
                             f"have {list(names)}")
        if isinstance(self.continuous, str):
            return self.zbar, self.zbar_mean, self.zbar_sd
        k = names.index(name)
        return self.zbar[k], self.zbar_mean[k], self.zbar_sd[k]

    def extremes(self, name: str) -> np.ndarray | None:
        """Return ``z_extremes`` of covariate ``name``, (2, G, B), or None without them.

        ``name`` is one of :attr:`covariates`, checked as by :meth:`covariate`.
        """
        self.covariate(name)  # the same checks of the name
        extremes = getattr(self, "z_extremes", None)  # counts pickled before the field
        if extremes is None or isinstance(self.continuous, str):
            return extremes
        return extremes[self.covariates.index(name)]

    def fences(self, name: str) -> np.ndarray | None:
        """Return ``z_fences`` of covariate ``name``, (2, B), or None without them.

        ``name`` is one of :attr:`covariates`, checked as by :meth:`covariate`.
        """
        self.covariate(name)
        fences = getattr(self, "z_fences", None)  # counts pickled before the field
        if fences is None or isinstance(self.continuous, str):
            return fences
        return fences[self.covariates.index(name)]

    def summary(self) -> pd.DataFrame:
        """Describe each combination.

        Returns
        -------
        pandas.DataFrame
            One row per combination: the attribute levels, ``n_records``, ``n_nonempty_cells``
            (cells holding at least one record of the combination), ``max_count`` (largest count
            in a cell) and, with a continuous variable, ``zbar_mean`` and ``zbar_sd`` (with a
            list of covariates, ``zbar_mean[<name>]`` and ``zbar_sd[<name>]`` for each).
        """
        out = self.combos[list(self.attributes) + ["n_records"]].copy()
        out["n_nonempty_cells"] = (self.counts > 0).sum(axis=0).astype(np.int64)
        out["max_count"] = self.counts.max(axis=0) if self.n_cells else 0
        for name in self.covariates:
            _, mean, sd = self.covariate(name)
            suffix = "" if isinstance(self.continuous, str) else f"[{name}]"
            out["zbar_mean" + suffix] = mean
            out["zbar_sd" + suffix] = sd
        return out

    def __repr__(self) -> str:
        return (
            f"CellCounts(n_records={self.n_records}, n_cells={self.n_cells}, "
            f"n_combos={self.n_combos}, attributes={self.attributes!r}, "
            f"continuous={self.continuous!r})"
        )


def prepare(
    gdf: gpd.GeoDataFrame,
    grid: Grid,
    attributes: Sequence[str] | str,
    continuous: Sequence[str] | str | None = None,
    outside: str = "error",
    max_bytes: int = 2**31,
    *,
    allow_identifying: bool = False,
    levels: dict[str, Sequence] | None = None,
) -> CellCounts:
    """Validate confidential points and count them per (grid cell, attribute combination).

    With ``levels`` (the public domain of every attribute) this is the preparation of a
    differentially private release, whose success depends on public facts only: see
    "Preparation on a public domain" in the module docstring.

    Parameters
    ----------
    gdf : geopandas.GeoDataFrame
        One row per confidential record, with point geometries in a projected CRS (metres).
    grid : geosynth.lattice.Grid
        The lattice; points are located with ``grid.locate``.
    attributes : sequence of str or str
        Categorical attribute columns whose combinations stratify the counts (a single string is
        one attribute). Levels and combinations follow the rules in the module docstring.
    continuous : str or sequence of str, optional
        A numeric column ``Z``; its mean per (cell, combination) is standardised within each
        combination as in Nunes (2018), §2.2.1 (see :class:`CellCounts`). Nunes' back-transform
        (eq. 2.27) multiplies by the *variance*; a standardised value is undone with the SD,
        ``zbar * zbar_sd + zbar_mean``, which is what we store. A list of K numeric columns
        (``["z1", "z2"]``) gives K covariates, each standardised on its own (Nunes 2018, §5),
        and ``zbar`` of shape (K, G, B). Each record's value is first clipped to the far-out
        fences of its combination's values (:func:`value_fences`), so that no record moves
        its cell's mean, which the releases publish, further than a value at the fence would.
    outside : {"error", "drop"}
        What to do with points that ``grid.locate`` puts in no cell (outside the lattice or region,
        or inside an excluded area): raise, or drop them with a
        :class:`~geosynth.errors.DataWarning`.
    max_bytes : int
        Upper bound on the bytes of the (G, B) arrays: ``counts`` (8 bytes per pair) and, with
        ``continuous``, ``zbar_mask`` (1 more), ``zbar`` and ``z_extremes`` (24 more per
        covariate).
    allow_identifying : bool, default False
        Keep an attribute whose levels (nearly) identify records (see "Record-identifying
        attributes" in the module docstring) instead of refusing it; a
        :class:`~geosynth.errors.DataWarning` still names it. Only for levels that are public and
        not linkable to a person. CLI: ``--allow-identifying``. Not used with ``levels``.
    levels : dict of str to list, optional
        The public domain: the levels of each attribute, in code order (extra keys are
        ignored). Counts every combination of them, drops the records it cannot count instead
        of refusing them, and skips the checks that read the records' values; required by the
        ε-DP entry points (:mod:`geosynth.dp`). ``outside`` and ``allow_identifying`` are then
        not used, and ``continuous`` is refused (a DP release has no continuous variable).
        CLI: ``--levels-file`` (with ``--epsilon``).

    Returns
    -------
    CellCounts

    Raises
    ------
    InputError
        ``gdf`` is not a GeoDataFrame (a Dask frame: see Notes) or has no rows; missing,
        empty or non-point geometries;
        attributes empty, duplicated, missing, named by tuples, written alike (``5`` and
        ``"5"``) or named ``"__geosynth_..."``; a ``continuous``
        column missing, listed twice, also an attribute, non-numeric, NaN or infinite; NaN in
        an attribute; points outside the grid with ``outside="error"``, or with
        ``outside="drop"`` while ``gdf.index`` repeats a label (:func:`check_kept_labels`);
        a bad ``outside`` or
        ``max_bytes``; more possible combinations (product of the numbers of levels) than kept
        records; an attribute whose levels identify records, or named like an identifier with most
        records in levels of fewer than :func:`name_bound` (unless ``allow_identifying``);
        an attribute holding locations (geometries, WKT, WKB, GeoJSON, tuples of numbers, coordinate
        text) or tuples; a ``continuous`` column of row numbers (distinct whole numbers nearly all
        one step apart, or n of them within n²/28 values) or varying by less than 1e-8 of its
        values; levels that cannot be sorted (a mix of types, lists), that are written alike (``1``
        and ``"1"``) or whose ``,`` gives two combinations the same label
        (:meth:`CountTable.combination_labels`); several
        columns named as an attribute, or MultiIndex column names; no point in any cell (the
        message reports the bounds of the points and of the grid and suspects a mislabelled
        CRS). With ``levels``, only what the arguments and the frame's columns, dtypes and
        CRS show: an invalid ``levels`` (not a dict, an attribute missing, an empty list, a
        level listed twice, NaN or unhashable, levels written alike or labelling two
        combinations alike), a boolean column declared with non-boolean levels or a numeric
        one with boolean levels, ``continuous`` given.
    CRSError
        ``gdf`` has no CRS while the grid has one, the CRSs differ, or ``gdf`` is in degrees.
    MemoryLimitError
        The (G, B) arrays would exceed ``max_bytes``.

    Warns
    -----
    DataWarning
        An attribute has a single level among the kept records, points were dropped, or an
        identifying attribute was kept with ``allow_identifying=True``. With ``levels``: how
        many records were dropped, and why (for the curator; a release does not hold it).
    PrivacyLeakWarning
        Two or more lattice bounds equal the located records' extreme coordinates (also with
        ``levels``). Without ``levels``: an attribute has levels held by fewer than
        :data:`RARE_LEVEL_RECORDS` records, or most of its records in levels of fewer than
        :data:`SMALL_LEVEL_RECORDS`; the combinations of several attributes (nearly) identify
        records, or some combination is held by a single record of no single-record level.

    Notes
    -----
    A :class:`dask_geopandas.GeoDataFrame` is refused with a message pointing to
    :func:`geosynth.distributed.prepare_dask`, which counts its points partition by partition
    through the same steps (:func:`locate_records`, :func:`count_table`,
    :func:`counts_from_table`), so they need not fit in memory. (The core does not import dask:
    the frame is recognised by the module of its type.)
    """
    if _is_dask_frame(gdf):
        raise InputError(
            f"gdf is a {type(gdf).__module__.split('.')[0]}.{type(gdf).__name__}; prepare takes "
            "a geopandas.GeoDataFrame in memory. Count a Dask frame partition by partition with "
            "geosynth.distributed.prepare_dask(gdf, grid, ...) (same arguments; the dask extra), "
            "or load it with gdf.compute() if it fits in memory"
        )
    if levels is not None:
        return _prepare_on_domain(gdf, grid, attributes, continuous, levels, max_bytes)
    _check_parameters(gdf, grid, outside, max_bytes, allow_identifying)
    attrs = check_columns(gdf, attributes, continuous)
    check_crs(gdf, grid)
    records = locate_records(gdf, grid, attrs, continuous)
    out = records[CELL_COLUMN].to_numpy() < 0
    n_out = int(out.sum())
    if n_out:
        none_left = None
        if n_out == len(gdf):
            none_left = no_overlap_message(len(gdf), point_coordinates(gdf, "gdf"), grid,
                                            gdf.crs)
        if outside == "drop" and none_left is None:
            check_kept_labels(gdf.index, n_out)
        check_outside(n_out, len(gdf), _rows(gdf.index, out), outside, none_left=none_left,
                      stacklevel=2, beyond=beyond_bounds(gdf[out], grid))
        records = records[~out]
    covariates = covariate_names(continuous)
    warn_of_coordinate_columns(covariates, coordinate_moments(gdf[~out], covariates,
                                                              lattice_origin(grid)))
    return counts_from_table(records, grid, attrs, continuous, max_bytes=max_bytes,
                             allow_identifying=allow_identifying)


def lattice_origin(grid: Any) -> tuple[float, float]:
    """Return the lower-left corner of ``grid``'s bounds ((0, 0) without them): public."""
    bounds = getattr(grid, "bounds", None)
    return (0.0, 0.0) if bounds is None else (float(bounds[0]), float(bounds[1]))


def coordinate_moments(gdf: gpd.GeoDataFrame, columns: Sequence[str],
                       origin: tuple[float, float]) -> np.ndarray:
    """Return the sums that correlate each continuous column with the points' x and y.

    Parameters
    ----------
    gdf : geopandas.GeoDataFrame
        Records (those counted: in the lattice).
    columns : sequence of str
        Its continuous columns.
    origin : (float, float)
        Subtracted from x and y (a public point near the records, e.g. the lattice's corner:
        the sums of squares of raw eastings lost the digits the correlation needs).

    Returns
    -------
    numpy.ndarray of float64, shape (len(columns), 9)
        Per column: n, Σx, Σy, Σz, Σx², Σy², Σz², Σxz, Σyz. Sums of partitions add up.
    """
    out = np.zeros((len(columns), 9))
    if not columns or len(gdf) == 0:
        return out
    xy = point_coordinates(gdf, "gdf") - np.asarray(origin, dtype=np.float64)
    for k, name in enumerate(columns):
        z = gdf[name].to_numpy(dtype=np.float64)
        ok = np.isfinite(z) & np.isfinite(xy).all(axis=1)
        x, y, z = xy[ok, 0], xy[ok, 1], z[ok]
        out[k] = (ok.sum(), x.sum(), y.sum(), z.sum(), x @ x, y @ y, z @ z, x @ z, y @ z)
    return out


def warn_of_coordinate_columns(columns: Sequence[str], moments: np.ndarray) -> None:
    """Warn of continuous ``columns`` that follow the records' x or y: coordinates.

    A copy of the easting, a longitude or a latitude beside points in metres, or a distance
    along an axis was modelled as any measurement, and the releases' values of it centred on
    each cell's mean: where the cell's records lie on average, which the synthetic points,
    uniform in the cell, do not tell.

    Parameters
    ----------
    columns : sequence of str
        The continuous columns.
    moments : numpy.ndarray, shape (len(columns), 9)
        :func:`coordinate_moments` of the counted records (summed over partitions).

    Warns
    -----
    geosynth.errors.PrivacyLeakWarning
        Naming the column and the axis, when the absolute correlation reaches
        :data:`COORDINATE_CORRELATION` over 10 or more records.
    """
    for name, (n, sx, sy, sz, sxx, syy, szz, sxz, syz) in zip(columns, moments, strict=True):
        if n < 10:
            continue
        vz = szz - sz * sz / n
        for label, s, ss, sp in (("x", sx, sxx, sxz), ("y", sy, syy, syz)):
            v = ss - s * s / n
            r = (sp - s * sz / n) / np.sqrt(v * vz) if v > 0 and vz > 0 else 0.0
            if abs(r) >= COORDINATE_CORRELATION:
                warnings.warn(
                    f"the continuous column {name!r} follows the records' {label} (correlation "
                    f"{r:.3f}): it reads as a coordinate, and a release's values of it centre "
                    "on each cell's mean, where the cell's records lie on average; drop it "
                    "from continuous unless it is a measurement that only happens to follow "
                    f"{label}",
                    PrivacyLeakWarning,
                    stacklevel=caller_stacklevel(),
                )
                break


# --------------------------------------------------------------------------- validation helpers


def _is_dask_frame(gdf: Any) -> bool:
    """Tell whether ``gdf`` is a Dask (geo)dataframe, without importing dask."""
    return type(gdf).__module__.split(".")[0] in ("dask_geopandas", "dask")


def _check_parameters(
    gdf: Any, grid: Any, outside: Any, max_bytes: Any, allow_identifying: Any
) -> None:
    _check_frame_type(gdf)
    check_prepare_options(grid, outside, max_bytes, allow_identifying)
    if len(gdf) == 0:
        raise InputError("gdf has no rows; prepare needs at least one record")


def _check_frame_type(gdf: Any) -> None:
    if not isinstance(gdf, gpd.GeoDataFrame):
        raise InputError(
            f"gdf must be a geopandas.GeoDataFrame, got {type(gdf).__module__}."
            f"{type(gdf).__name__}; build one with geopandas.GeoDataFrame(df, geometry=...) or "
            "geopandas.points_from_xy(x, y, crs=...)"
        )


def check_prepare_options(
    grid: Any, outside: Any, max_bytes: Any, allow_identifying: Any = False
) -> None:
    """Check the arguments of :func:`prepare` other than the frame and its columns.

    Parameters
    ----------
    grid : geosynth.lattice.Grid
        Must have ``locate``, ``n_cells`` and ``crs``.
    outside : {"error", "drop"}
        As for :func:`prepare`.
    max_bytes : int
        A positive int.
    allow_identifying : bool, default False
        True or False.

    Raises
    ------
    InputError
        Any of them is invalid (the message says what was given).
    """
    _check_allow_identifying(allow_identifying)
    if not isinstance(outside, str):  # an array raised "truth value ... is ambiguous"
        check_choice(outside, "outside", ("error", "drop"))
    if outside not in ("error", "drop"):
        raise InputError(f'outside must be "error" or "drop", got {outside!r}')
    check_max_bytes(max_bytes)
    if not all(hasattr(grid, name) for name in ("locate", "n_cells", "crs")):
        raise InputError(
            f"grid must be a geosynth.lattice.Grid, got {type(grid).__name__}; build one with "
            "Grid.regular(bounds, shape=..., crs=...) or Grid.from_points(gdf, ...)"
        )


def check_columns(
    gdf: gpd.GeoDataFrame,
    attributes: Sequence[str] | str,
    continuous: Sequence[str] | str | None = None,
) -> tuple[str, ...]:
    """Check the attribute and continuous columns of ``gdf`` for :func:`prepare`.

    Only the columns and dtypes are read, so this also checks the empty metadata frame
    (``_meta``) of a Dask frame.

    Parameters
    ----------
    gdf : geopandas.GeoDataFrame
        The confidential points (or an empty frame with their columns and dtypes).
    attributes : sequence of str or str
        As for :func:`prepare`.
    continuous : str or sequence of str, optional
        As for :func:`prepare`; every such column's dtype must be numeric (not bool or
        complex).

    Returns
    -------
    tuple of str
        The attribute columns, in the order given.

    Raises
    ------
    InputError
        MultiIndex column names or no active geometry column; attributes empty, duplicated,
        missing, named by tuples or written alike (``5`` and ``"5"``), clashing with the
        ``combos`` columns or named with the prefix
        ``"__geosynth_"`` of the count table's columns; a ``continuous`` column missing,
        listed twice, also an attribute, or not numeric; several columns of ``gdf`` share the
        name of an attribute or ``continuous`` column.
    """
    if isinstance(gdf.columns, pd.MultiIndex):  # first: it hides the geometry column
        raise InputError(
            "gdf has MultiIndex (several-level) column names; flatten them first, e.g. "
            "gdf.columns = ['_'.join(map(str, c)) for c in gdf.columns]"
        )
    try:
        geometry_name = gdf.geometry.name
    except AttributeError as err:
        raise InputError(
            "gdf has no active geometry column; set one with gdf.set_geometry(column)"
        ) from err
    available = [c for c in gdf.columns if c != geometry_name]
    if not (isinstance(attributes, str) or is_sequence(attributes)):  # 0-d array: no items
        raise InputTypeError(f"attributes must be a column name or a list of column names, got "
                         f"{describe_value(attributes)}; e.g. attributes=['sex', 'age_group'] "
                         f"(of {available})")  # a Series given here holds confidential values
    attrs = (attributes,) if isinstance(attributes, str) else tuple(attributes)
    if not attrs:
        raise InputError(
            f"attributes is empty; name at least one categorical column of gdf: {available}"
        )
    _check_names_are_text(attrs)  # before counting them: a Series in the list has no ==
    duplicated = sorted({a for a in attrs if attrs.count(a) > 1}, key=str)
    if duplicated:
        raise InputError(f"attributes lists {duplicated} more than once; name each column once")
    covariates = covariate_names(continuous)
    for name, role in [(a, "attribute") for a in attrs] + [(z, "continuous column")
                                                           for z in covariates]:
        if name == geometry_name or name not in available:
            raise InputError(
                f"{role} {name!r} is not a column of gdf; available columns: {available}"
            )
    for name in covariates:
        if name in attrs:
            raise InputError(
                f"continuous column {name!r} is also listed in attributes=; use it in one role"
            )
        if is_identifier_name(name):  # a release publishes its synthetic values under it
            raise InputError(
                f"continuous column {name!r} is named like a record identifier: its synthetic "
                "values would follow the identifiers' order, and with it the records' (rows "
                "sorted by place or time get neighbouring ids); drop it from continuous=, or "
                "rename it if it is a measurement"
            )
    check_unique_columns(gdf, "gdf", (*attrs, *covariates))
    generated = [f"{a}_code" for a in attrs] + ["n_records"]
    clash = sorted(set(attrs) & set(generated), key=str)
    if clash:
        raise InputError(
            f"attribute names {clash} clash with the combos columns '<attribute>_code' and "
            "'n_records'; rename them with gdf.rename(columns=...)"
        )
    internal = [a for a in attrs if str(a).startswith(_INTERNAL_PREFIX)]
    if internal:  # the count table's own columns would overwrite (or be summed as) them
        raise InputError(
            f"attribute names {internal} start with {_INTERNAL_PREFIX!r}, the prefix of the "
            "count table's own columns (cell, count, Z sums); rename them with "
            "gdf.rename(columns=...)"
        )
    _check_publishable_names((*attrs, *covariates), available)
    for name in covariates:
        _check_numeric(gdf[name])
    return attrs


def _check_publishable_names(names: tuple[str, ...], available: list) -> None:
    """Refuse columns a public release cannot carry under their names, before any work.

    :func:`geosynth.to_public` drops columns whose names start with ``"_"`` (bookkeeping such
    as pandas' ``_merge``) and refuses those named like record or cell identifiers
    (:data:`~geosynth._identifiers.ID_COLUMNS`: ``index``, ``cell``, ``fid``): an attribute
    ``_sex`` was left out of every public release without a word (the file's metadata still
    listed it), and one named ``index`` was refused only after the fit, with advice to drop it.
    """
    hidden = [n for n in names if n.startswith(INTERNAL_PREFIX)]
    identifiers = [n for n in names if in_id_columns(n)]
    if hidden or identifiers:
        reasons = ([f"{hidden} start with {INTERNAL_PREFIX!r}, the mark of bookkeeping columns "
                    "that to_public drops"] if hidden else []) + (
            [f"{identifiers} are names of record or cell identifiers ({sorted(ID_COLUMNS)}), "
             "which to_public refuses"] if identifiers else [])
        example = (hidden + identifiers)[0]
        renamed = (example.lstrip(INTERNAL_PREFIX) or "column") if hidden else f"{example}_group"
        while renamed in available:  # "_sex" beside a column "sex"
            renamed += "_group"
        raise InputError(
            f"the columns {' and '.join(reasons)}: a public release cannot carry them; rename "
            f"them in the data (in Python, gdf = gdf.rename(columns={{{example!r}: "
            f"{renamed!r}}}))"
        )
    _check_layer_names(names)


def _check_layer_names(names: tuple[str, ...]) -> None:
    """Refuse names a release layer cannot carry as columns, before the fit rather than after.

    ``Sex`` beside ``sex`` (one column in a GeoPackage or a shapefile, whose names ignore case)
    and ``geometry`` or ``geom`` (the layer's own; an attribute ``geometry`` of records whose
    geometry column is ``geom``) passed prepare, the fit and synthesize, and were refused when
    the release was written.
    """
    layer = [n for n in names if n.lower() in LAYER_NAMES]
    if layer:
        raise InputError(
            f"the column {layer[0]!r} has a name a release layer keeps for its geometry or "
            f"feature id ({sorted(LAYER_NAMES)}, in any case); rename it in the data (in "
            f"Python, gdf = gdf.rename(columns={{{layer[0]!r}: {layer[0] + '_value'!r}}}))"
        )
    clash = case_clash(names)
    if clash:
        raise InputError(
            f"the columns {clash[0]!r} and {clash[1]!r} differ only in case, and a release "
            "GeoPackage or shapefile takes them for one column; rename one in the data (in "
            f"Python, gdf = gdf.rename(columns={{{clash[1]!r}: {clash[1] + '_2'!r}}}))"
        )


def _check_names_are_text(names: tuple[Hashable, ...]) -> None:
    """Refuse attribute or continuous columns not named by a str (``5``, ``None``, a tuple).

    A release's columns, the labels of the combinations and a GeoPackage's columns are
    text: a column ``5`` passed ``prepare`` and failed the fit with a message naming no
    column, and ``5`` and ``"5"`` made one ``"5_code"`` column in ``combos``.
    """
    other = [n for n in names if not isinstance(n, str)]
    if any(isinstance(n, pd.Series | pd.DataFrame) or is_sequence(n) and not isinstance(n, tuple)
           for n in other):  # gdf.age, not "age"
        raise InputError(
            f"attributes must list column names (str), got "
            f"{', '.join(map(describe_value, other))}; e.g. attributes=['sex', 'age_group']"
        )
    if other:
        raise InputError(
            f"the columns {other!r} are named by {type(other[0]).__name__}, not text: a "
            "release's columns and the labels of its combinations are text; name them with "
            "str, e.g. gdf.columns = ['_'.join(map(str, c)) if isinstance(c, tuple) else "
            "str(c) for c in gdf.columns]"
        )


def check_crs(gdf: gpd.GeoDataFrame, grid: Any, name: str = "gdf") -> None:
    """Check that ``gdf`` is in the grid's CRS, and in a projected one.

    Parameters
    ----------
    gdf : geopandas.GeoDataFrame
        The points (anything with a ``crs``: a Dask frame too).
    grid : geosynth.lattice.Grid
        The lattice (its ``crs`` may be None).
    name : str, default "gdf"
        How the caller's argument is called, for the messages.

    Raises
    ------
    CRSError
        ``gdf`` has no CRS while the grid has one, the CRSs differ, or ``gdf`` is in degrees.
    """
    grid_crs = grid.crs
    if gdf.crs is None:
        if grid_crs is not None:
            raise CRSError(
                f"{name} has no CRS while the grid uses {grid_crs.to_string()}; if the "
                f"coordinates are already in that CRS use {name}.set_crs(grid.crs), otherwise "
                f"set the true CRS and reproject with {name}.to_crs(grid.crs)"
            )
        return
    require_projected_crs(
        gdf.crs,
        name,
        "" if grid_crs is None else f", or use {name}.to_crs(grid.crs) ({grid_crs.name})",
    )
    if grid_crs is not None and not gdf.crs.equals(grid_crs, ignore_axis_order=True):
        raise CRSError(
            f"{name} CRS {gdf.crs.to_string()} differs from the grid CRS "
            f"{grid_crs.to_string()}; reproject with {name}.to_crs(grid.crs)"
        )


def _check_no_nan(gdf: gpd.GeoDataFrame, column: str, role: str) -> None:
    bad = gdf[column].isna().to_numpy()
    if bad.any():
        raise InputError(
            f"{role} {column!r} has {int(bad.sum())} missing (NaN) values "
            f"({_rows(gdf.index, bad)}); drop those rows, "
            f"e.g. gdf.dropna(subset=[{column!r}]), or fill them"
            + (" with an explicit level (from a CSV file, text such as NA, None or null is "
               "read as missing unless na_values=[] is given)"
               if role == "attribute" else "")
        )


def _mixes_booleans_and_numbers(values: Any) -> bool:
    """Whether ``values`` hold both booleans and other numbers.

    ``True == 1`` and ``hash(True) == hash(1)``, so pandas and Python sets would merge the two
    into one level: a column of flags and codes (``True``, ``1``, ``2``) would count its
    ``True`` records as level ``1``.
    """
    if pd.api.types.infer_dtype(values, skipna=True) not in ("mixed", "mixed-integer"):
        return False
    kinds = {isinstance(v, bool | np.bool_) for v in values
             if isinstance(v, bool | np.bool_ | numbers.Number)}
    return kinds == {True, False}


def _check_finite_levels(gdf: gpd.GeoDataFrame, column: str) -> None:
    """Refuse an attribute with infinite values: a level ``inf`` is a computation gone wrong.

    A ratio divided by zero (``inf``) became a level of its own, counted and synthesized like
    any other, without a word; codes or classes are never infinite on purpose.
    """
    series = gdf[column]
    if isinstance(series.dtype, pd.CategoricalDtype):  # inf among the categories' values
        series = series.astype(series.cat.categories.dtype)
    if pd.api.types.is_float_dtype(series.dtype):
        bad = np.isinf(series.to_numpy(dtype=np.float64, na_value=np.nan))
    elif series.dtype == object:
        bad = np.fromiter((isinstance(v, float | np.floating) and math.isinf(v)
                           for v in series.array), dtype=bool, count=len(series))
    else:
        return
    if bad.any():
        raise InputError(
            f"attribute {column!r} has {int(bad.sum())} infinite values "
            f"({_rows(gdf.index, bad)}); an infinite level is likely a division by zero: fix or "
            "drop those rows, or give them a level of their own, e.g. "
            f"gdf[{column!r}].replace([np.inf, -np.inf], 'unbounded')"
        )


def _check_not_bool_and_number(series: pd.Series) -> None:
    """Refuse an attribute holding booleans and numbers, which would merge into one level."""
    if _mixes_booleans_and_numbers(series):
        raise InputError(
            f"attribute {series.name!r} holds both booleans and numbers, and True would count "
            "as the level 1 (False as 0); make them one type, e.g. "
            f"gdf[{series.name!r}].astype(str) to keep True and 1 apart"
        )


def _check_numeric(series: pd.Series) -> None:
    """Refuse a continuous column whose dtype is not a real number."""
    if not is_real_dtype(series.dtype):
        raise InputError(non_numeric_message(series.name, series.dtype,
                                             non_numeric_evidence(series)))


def is_real_dtype(dtype: Any) -> bool:
    """Whether ``dtype`` holds real numbers: numeric, not boolean, not complex."""
    return (pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype)
            and not pd.api.types.is_complex_dtype(dtype))


def non_numeric_evidence(series: pd.Series) -> pd.DataFrame:
    """Return what a non-numeric continuous column's message needs of it: one row of counts.

    ``present`` values, how many read as ``numbers``, the first five labels of
    those that do not (``text_rows``, a list) and their number ``text``, and of its strings
    (``strings``) how many read as numbers with a decimal comma (``comma``) and whether all
    have a comma before every three digits (``thousands``). The rows of several partitions add
    up (:func:`merge_evidence`), so a partitioned frame's message names rows as
    :func:`prepare`'s does; no value is kept.
    """
    present = series.notna().to_numpy()
    numbers = pd.to_numeric(series.where(present), errors="coerce").notna().to_numpy()
    text = present & ~numbers
    strings = series.dropna()
    if series.dtype == object or isinstance(series.dtype, pd.StringDtype):
        strings = strings[[isinstance(v, str) for v in strings]].astype(str).str.strip()
    else:
        strings = strings.iloc[:0].astype(str)
    return pd.DataFrame({
        "present": [int(present.sum())], "numbers": [int(numbers.sum())],
        "text": [int(text.sum())], "text_rows": [series.index[text][:SHOW_ROWS].tolist()],
        "strings": [len(strings)],
        "comma": [int(strings.str.fullmatch(_DECIMAL_COMMA_NUMBER).sum())],
        "thousands": [bool(strings.str.fullmatch(r"[-+]?\d{1,3}(?:,\d{3})+").all())],
    })


def merge_evidence(rows: pd.DataFrame) -> pd.DataFrame:
    """Add up the rows of :func:`non_numeric_evidence` (of the partitions, in order): one row."""
    return pd.DataFrame({
        **{c: [int(rows[c].sum())] for c in ("present", "numbers", "text", "strings", "comma")},
        "text_rows": [[label for labels in rows["text_rows"] for label in labels][:SHOW_ROWS]],
        "thousands": [bool(rows["thousands"].all())],
    })


def non_numeric_message(name: Hashable, dtype: Any, evidence: pd.DataFrame) -> str:
    """Return the refusal of continuous column ``name`` of non-numeric ``dtype``, with the fix.

    From :func:`non_numeric_evidence`. A mostly numeric text column (ages with one "unknown",
    or "n/a" not in ``na_values``) has the rows to fix named; a column of words, not. Numbers
    written with a comma get the reading option that fixes them: a decimal comma ("12,5"),
    or, when every one has three digits after its comma ("12,500"), either reading (advising
    decimal=',' alone read them 1,000 times too small). Rows only, never values.
    """
    e = evidence.iloc[0]
    fix = "; "
    if e["strings"] and e["comma"] * 2 > e["strings"]:
        if e["thousands"]:
            fix = ("; its values read as numbers with a comma before three digits, a "
                   "thousands separator ('12,500': read the file with thousands=',') or a "
                   "decimal comma ('12,500' for 12.5: decimal=',', CLI: --decimal ,); or ")
        else:
            fix = ("; its values read as numbers with a decimal comma ('12,5'): read the file "
                   "with decimal=',' (CLI: --decimal ,), or ")
    elif e["text"] and e["numbers"] * 2 >= e["present"]:
        rows = _rows(pd.Index(e["text_rows"], dtype=object),
                     np.ones(len(e["text_rows"]), dtype=bool))
        more = e["text"] - len(e["text_rows"])
        fix = (f"; {e['text']} of its values do not read as numbers ({rows}"
               f"{f' and {more} more' if more > 0 else ''}): fix or drop those rows, then ")
    return (f"continuous column {name!r} has non-numeric dtype {dtype}{fix}convert it to "
            f"numbers (in Python, pd.to_numeric(gdf[{name!r}])) or move it to attributes= if "
            "it is categorical")


_DECIMAL_COMMA_NUMBER = r"\s*[-+]?\d{1,3}(?:\.\d{3})*,\d+\s*|\s*[-+]?\d+,\d+\s*"


def continuous_values(
    gdf: gpd.GeoDataFrame, column: str, *, check_row_numbers: bool = True
) -> np.ndarray:
    """Return the float64 values of a continuous column, refusing values :func:`prepare` cannot use.

    Parameters
    ----------
    gdf : geopandas.GeoDataFrame
        The confidential points.
    column : str
        A continuous column of ``gdf`` whose dtype :func:`check_columns` accepted.
    check_row_numbers : bool, default True
        Refuse record numbers (:func:`check_not_row_numbers`); a judgement on all the
        records, which a partition alone cannot make.

    Returns
    -------
    numpy.ndarray of float64

    Raises
    ------
    geosynth.errors.InputError
        A value is missing, infinite or beyond ±:data:`MAX_CONTINUOUS` (the message names the
        rows, never the values).
    """
    _check_no_nan(gdf, column, "continuous column")
    values = gdf[column].to_numpy(dtype=np.float64)
    _check_held_exactly(gdf[column], column)
    bad = ~np.isfinite(values)
    if bad.any():
        raise InputError(
            f"continuous column {column!r} has {int(bad.sum())} infinite values "
            f"({_rows(gdf.index, bad)}); drop or replace them"
        )
    if check_row_numbers:
        check_not_row_numbers(values, column)
    huge = np.abs(values) > MAX_CONTINUOUS
    if huge.any():  # squares of such values overflow the cell means' SD (to inf)
        raise InputError(
            f"continuous column {column!r} has {int(huge.sum())} values beyond ±{MAX_CONTINUOUS:g} "
            f"({_rows(gdf.index, huge)}); rescale the column (e.g. to thousands or millions)"
        )
    return values


def _check_held_exactly(series: pd.Series, column: str) -> None:
    """Refuse integers beyond 2**53 that float64 rounds: distinct ones became one value.

    2**64 - 1 and 2**64 - 2 were refused as "the same value in every record".
    """
    dtype = np.dtype(getattr(series.dtype, "numpy_dtype", series.dtype))  # Int64: int64
    if dtype.kind not in "iu":
        return
    big = inexact_integers(series.to_numpy(dtype=dtype))
    if big.any():
        raise InputError(
            f"continuous column {column!r} has integers beyond 2**53 that float64 does not "
            f"hold exactly ({_rows(series.index, big)}), so distinct values would merge; "
            "rescale the column (e.g. to thousands or millions), or, if it is a code, drop it"
        )


def check_not_row_numbers(values: np.ndarray, column: str) -> None:
    """Refuse a continuous column whose values are row numbers or record ids.

    Parameters
    ----------
    values : numpy.ndarray of float64
        Every record's value (a partitioned preparation passes the column's distinct values
        when there are as many as records: the only case in which the column can be refused).
    column : str
        Its name, for the message.

    Raises
    ------
    geosynth.errors.InputError
        :func:`_is_row_numbering`.

    Warns
    -----
    geosynth.errors.PrivacyLeakWarning
        Distinct whole numbers short of that but still unlikely for a measurement (they would
        all differ with probability below e^-6, :data:`_WARN_COLLISION_EXPONENT`): a study's
        medical record numbers, sequential with gaps of up to 50, passed without a word.
    """
    gaps = _whole_number_gaps(values)
    if gaps is None:  # not distinct whole numbers: a measurement
        return
    if _is_row_numbering(gaps):
        raise InputError(
            f"continuous column {column!r} holds {values.size:,} distinct whole numbers (or "
            "multiples of one step) in a nearly regular run (one step between most of them) "
            "or too densely for a measurement (whose values would collide), as row numbers or "
            "record ids do, gaps "
            "or not: its synthetic values would follow the records' order; drop it from "
            "continuous="
        )
    if _dense(gaps, _WARN_COLLISION_EXPONENT):
        warnings.warn(
            f"continuous column {column!r} holds {values.size:,} distinct whole numbers, more "
            "densely than a measurement's would all differ (their chance is below 0.25%), as "
            "record numbers with gaps do: if it is one, drop it from continuous=",
            PrivacyLeakWarning,
            stacklevel=5,
        )


def on_a_grid(values: np.ndarray) -> bool:
    """Tell whether ``values`` could be part of a column :func:`check_not_row_numbers` refuses.

    Parameters
    ----------
    values : numpy.ndarray of float64
        Distinct values of a continuous column (a partitioned preparation passes its smallest
        ones: a subset of values on a grid lies on a grid of a multiple of its step).

    Returns
    -------
    bool
        At least :data:`IDENTIFYING_MIN_RECORDS` distinct whole numbers, or values on a grid
        of a common step (:func:`_whole_number_gaps`); False for a measurement's values.
    """
    return _whole_number_gaps(np.asarray(values, dtype=np.float64)) is not None


def _whole_number_gaps(values: np.ndarray) -> np.ndarray | None:
    """Return the gaps of the sorted ``values`` if they are distinct whole numbers, else None.

    At least :data:`IDENTIFYING_MIN_RECORDS` of them; sorted once for both of
    :func:`check_not_row_numbers`'s rules. Distinct values on a grid of a common step (the
    approximate greatest common divisor of their gaps, not below 1e-6 of their range) count
    in units of it: ids shifted or scaled (``arange(n) + 0.5``, ``0.1 * id``) passed, and
    then scaled ids issued in steps of 2 and 3, whose smallest gap is not the grid's step.
    A measurement's common step vanishes.
    """
    if values.size < IDENTIFYING_MIN_RECORDS:
        return None
    ordered = np.sort(values)
    gaps = np.diff(ordered)
    if not (gaps > 0).all():
        return None
    if np.all(values == np.round(values)):
        return gaps
    # A few hundred units in the last place of the largest value: the rounding of ids scaled
    # in float64, far below any measurement's resolution.
    tolerance = _GRID_ULPS * float(np.spacing(np.abs(ordered).max()))
    for step in (float(gaps.min()), _common_step_of(gaps, ordered, tolerance)):
        with np.errstate(over="ignore", invalid="ignore"):  # a vast range, a NaN step: off
            units = (ordered - ordered[0]) / step
            rounded = np.round(units)
            on_grid = np.abs(units - rounded) * step <= 4 * tolerance * np.maximum(units, 1.0)
        if on_grid.all() and (np.diff(rounded) > 0).all():  # distinct values, distinct steps
            return np.diff(rounded)
    return None


def _common_step_of(gaps: np.ndarray, ordered: np.ndarray, tolerance: float) -> float:
    """Return the common step of ``gaps`` (:func:`_common_step`); NaN where it vanishes.

    It vanishes below 1e-6 of the values' range without their outermost 1 % at each end (one
    outlier, an id of 1e4 among 0.01 * id, stretched the whole range past the step).
    """
    low, high = ordered[int(0.01 * ordered.size)], ordered[int(0.99 * (ordered.size - 1))]
    extent = float(high - low)
    step = float(gaps.max())
    for gap in np.unique(gaps):
        step = _common_step(step, float(gap), tolerance)
        if step < 1e-6 * extent:
            return math.nan
    return step


def _common_step(a: float, b: float, tolerance: float) -> float:
    """Greatest common divisor of two positive floats, to within ``tolerance`` (Euclid's).

    ``a mod b`` carries ``b``'s error ``a / b`` times: 5.75 against a step of 0.01 read from
    rounded values left 5e-12 where the values' own rounding was 4e-12.
    """
    a, b = max(a, b), min(a, b)
    while b > tolerance:
        rest = math.fmod(a, b)
        slack = tolerance * (1.0 + a / b)
        if rest <= slack or b - rest <= slack:
            return b
        a, b = b, rest
    return a


#: Tolerance of :func:`_whole_number_gaps` for values on a grid of a common step, in units in
#: the last place of the largest value.
_GRID_ULPS = 256


def _dense(gaps: np.ndarray, exponent: float) -> bool:
    """Whether the ``n`` values of ``gaps`` span too few whole numbers ``R`` for a measurement.

    Its ``n`` values would all differ with probability below ``e^-exponent`` (the birthday
    bound ``exp(-n²/2R)``).
    """
    n = gaps.size + 1
    return float(gaps.sum()) + 1 <= n * n / (2 * exponent)


def _is_row_numbering(gaps: np.ndarray) -> bool:
    """Whether distinct whole numbers (``gaps`` of their sorted values) are a run of row numbers.

    A nearly regular run, or values too dense for a measurement's.

    A record id or row number (0..n−1, 1017..1316) passed as a continuous column was released
    with synthetic values that followed the input's row order (r = 0.66 with the synthetic
    northing of records sorted by northing), found probing the command line. The first check
    wanted every whole number of the range exactly once: ids with one number missing, or
    numbered in steps of 2, passed (r = 0.65). Now :data:`_SEQUENCE_SHARE` of the gaps between
    the sorted values being one and the same step is enough, or distinct values so dense that
    a measurement's would have collided (:data:`_COLLISION_EXPONENT`). A measurement rarely
    takes distinct whole values so evenly spaced, or so densely.
    """
    if _dense(gaps, _COLLISION_EXPONENT):
        return True  # distinct though dense: a measurement's values would collide
    _, repeats = np.unique(gaps, return_counts=True)
    return bool(repeats.max() >= _SEQUENCE_SHARE * gaps.size)


# The share of equal gaps that makes distinct whole numbers a sequence (_is_row_numbering).
_SEQUENCE_SHARE = 0.9
# n distinct whole numbers within a range of R values are record numbers too when a
# measurement's n values would all differ with probability below e^-14 (about 1e-6): the
# birthday bound exp(-n²/2R) (300 visit numbers drawn from 1-600 passed). Never below 28
# records: n distinct whole numbers span n values at least, and n²/28 < n below 28.
_COLLISION_EXPONENT = 14.0
# ... and warned about when that probability is below e^-6 (0.25 %) (check_not_row_numbers).
_WARN_COLLISION_EXPONENT = 6.0


def beyond_bounds(out: gpd.GeoDataFrame, grid: Grid) -> int | None:
    """How many of the points in no cell lie beyond the lattice's bounds (or have no place).

    For :func:`check_outside`'s ``beyond``, from :func:`prepare` and, partition by partition,
    :func:`geosynth.distributed.prepare_dask`. None on a lattice with no region or exclusion:
    there a point within the bounds in no cell lies between hexagons, and telling it apart
    said "outside the region" of a lattice without one.
    """
    if not grid.is_clipped:
        return None
    xy = shapely.get_coordinates(np.asarray(out.geometry.array, dtype=object))
    if len(xy) != len(out):  # empty or multi-part geometries: no split to tell
        return len(out)
    x0, y0, x1, y1 = grid.bounds
    within = (xy[:, 0] >= x0) & (xy[:, 0] <= x1) & (xy[:, 1] >= y0) & (xy[:, 1] <= y1)
    return int((~within).sum())


def check_outside(
    n_out: int,
    n_total: int,
    rows: str,
    outside: str,
    *,
    none_left: str | None = None,
    stacklevel: int = 2,
    beyond: int | None = None,
) -> None:
    """Refuse, or warn about, the points that fall in no grid cell.

    Parameters
    ----------
    n_out : int
        Points in no cell (outside the lattice or region, or inside an excluded area); >= 1.
    n_total : int
        All points.
    rows : str
        A few of the ``n_out`` points, e.g. ``"rows [3, 17] and 12 more"``
        (:func:`geosynth._messages.describe_rows`).
    outside : {"error", "drop"}
        As for :func:`prepare`.
    none_left : str, optional
        The message when no point is in a cell (default: a generic one).
    stacklevel : int, default 2
        Of the warning, as for :func:`warnings.warn`.
    beyond : int, optional
        How many of the ``n_out`` lie beyond the lattice's bounds, the others being within
        them but outside the region or inside an excluded area (None: not told apart).

    Raises
    ------
    InputError
        Every point is outside (``none_left``), or ``outside="error"``.

    Warns
    -----
    DataWarning
        ``outside="drop"``: how many points are dropped, and which.
    """
    if n_out == n_total:
        raise InputError(none_left or no_overlap_message(n_total, None, None, None))
    reason = "outside the lattice or region, or inside an excluded area"
    if beyond is not None:  # which fix applies: a wider lattice, or the region and exclusions
        reason = (f"{beyond} beyond the lattice's bounds, {n_out - beyond} within them but "
                  "outside the region or inside an excluded area")
    where = f"{n_out} of {n_total} points fall in no grid cell ({reason}): {rows}"
    if outside == "error":
        raise InputError(
            f'{where}; pass outside="drop" to drop them, or build a grid that covers them'
        )
    warnings.warn(f"dropped {where}", DataWarning, stacklevel=stacklevel + 1)


def check_kept_labels(index: pd.Index, n_dropped: int, name: str = "gdf") -> None:
    """Refuse duplicated row labels when records are dropped: the kept ones are named by label.

    :class:`CellCounts` names its kept records by their labels (``record_index``); with some
    records dropped (``outside="drop"``) those labels are all that tells which rows of ``gdf``
    were kept, and a repeated label names several rows: ``gdf.loc[counts.record_index]``
    returned each of them once per repetition (1,040 rows for 52 kept records), and
    :func:`geosynth.synthesize` refused the frame only after the fit. With no record dropped,
    ``record_index`` is ``gdf.index`` row for row, so repeated labels are kept as given.

    Parameters
    ----------
    index : pandas.Index
        The row labels of all the records (kept and dropped).
    n_dropped : int
        Records dropped.
    name : str, default "gdf"
        How the caller's argument is called, for the message.

    Raises
    ------
    InputError
        ``n_dropped > 0`` and ``index`` repeats a label (the message names a few).
    """
    if n_dropped == 0 or index.is_unique:
        return
    repeated = index[index.duplicated()].unique()
    raise InputError(
        f"{name} has {len(repeated)} index labels shared by several rows "
        f"({_rows(repeated, np.ones(len(repeated), dtype=bool))}) and {n_dropped} of its "
        "records are dropped (in no grid cell), so the labels of the kept records "
        "(counts.record_index) cannot tell which rows they are; give every row its own label "
        f"before prepare and synthesize, e.g. {name} = {name}.reset_index(drop=True) (or "
        f"{name}.reset_index() to keep the old labels as a column)"
    )


def _coarse(value: float) -> str:
    """``value`` to 3 significant digits, e.g. ``7,810,000``: enough to tell a CRS mix-up."""
    return format(float(f"{value:.3g}"), ",.15g")


def _describe_bounds(bounds: Sequence[float], step: float | None = None) -> str:
    """``bounds`` to 3 significant digits, or (``step``) to the nearest multiple of it."""
    shown = [_coarse(v) if step is None else _rounded(v, step) for v in bounds]
    return "(" + ", ".join(shown) + ")"


def _rounded(value: float, step: float) -> str:
    """``value`` to the nearest multiple of ``step``, e.g. ``7,800,000``."""
    return format(float(f"{round(value / step) * step:.12g}") + 0.0, ",.15g")  # no "-0"


def _overlap(a: Sequence[float], b: Sequence[float]) -> bool:
    return a[0] <= b[2] and b[0] <= a[2] and a[1] <= b[3] and b[1] <= a[3]


def _grid_extent(grid: Any) -> tuple[float, float, float, float] | None:
    """Bounds of the kept cells of ``grid`` (the region's extent when clipped), if available."""
    try:
        boxes = grid.cell_bounds(np.arange(grid.n_cells))
        return (
            float(boxes[:, 0].min()),
            float(boxes[:, 1].min()),
            float(boxes[:, 2].max()),
            float(boxes[:, 3].max()),
        )
    except (AttributeError, TypeError, ValueError):
        bounds = getattr(grid, "bounds", None)
        return None if bounds is None else tuple(float(v) for v in bounds)  # type: ignore


def no_overlap_message(n: int, xy: np.ndarray | None, grid: Any, crs: Any) -> str:
    """Explain why none of the ``n`` points falls in a cell, suspecting a CRS mix-up.

    ``xy`` may hold only the points' extreme corners (only their bounds are used).
    """
    head = f"none of the {n} points falls in a grid cell, so no record is left"
    extent = _grid_extent(grid) if grid is not None else None
    if xy is None or extent is None or len(xy) == 0:
        return f"{head}: check the grid bounds, region and CRS"
    points = (
        float(xy[:, 0].min()),
        float(xy[:, 1].min()),
        float(xy[:, 0].max()),
        float(xy[:, 1].max()),
    )
    crs_name = "no CRS" if crs is None else f"CRS {crs.to_string()}"
    grid_crs = getattr(grid, "crs", None)
    unit = "CRS units"
    if grid_crs is not None and grid_crs.axis_info:
        name = grid_crs.axis_info[0].unit_name
        unit = f"{name}s" if name in ("metre", "meter") else f"CRS units ({name})"
    target = "region" if getattr(grid, "is_clipped", False) else "grid"
    gap = math.hypot(max(0.0, extent[0] - points[2], points[0] - extent[2]),
                     max(0.0, extent[1] - points[3], points[1] - extent[3]))
    # The records' bounds and the gap to the nearest 10^k of the larger of the gap and the
    # lattice's span: a CRS mix-up shows at that scale, and a near miss gave a record's
    # extreme coordinate (the gap "about 11.1 metres" from a public edge).
    span = max(extent[2] - extent[0], extent[3] - extent[1])
    step = 10.0 ** math.floor(math.log10(max(gap, span, 1e-300)))
    described = (
        f"the points (bounds about {_describe_bounds(points, step)}, {crs_name}) and the "
        f"{target} (cells within bounds {_describe_bounds(extent)})"
    )
    if _overlap(points, extent):  # no CRS mix-up: the records' bounds would help nothing
        return (
            f"{head}: the points ({crs_name}) and the {target} (cells within bounds "
            f"{_describe_bounds(extent)}) overlap, but every point lies outside the region or "
            "inside an excluded area: check the region and exclude polygons (and their CRS)"
        )
    hints = []
    if (np.abs(xy[:, 0]) <= 180).all() and (np.abs(xy[:, 1]) <= 90).all():
        hints.append(
            "the coordinates look like degrees (longitude, latitude) although they are labelled "
            f"with {crs_name}: the CRS is probably mislabelled; give the true CRS of the "
            "coordinates and reproject (gdf.set_crs('EPSG:4326', allow_override=True)"
            ".to_crs(grid.crs), CLI: --crs)"
        )
    swapped = (points[1], points[0], points[3], points[2])
    if _overlap(swapped, extent):
        hints.append(
            "with x and y swapped the points would overlap it: check which column is the "
            "easting (x) and which the northing (y) (CLI: --x, --y), or the axis order of the CRS"
        )
    if not hints and gap < span:
        return (f"{head}: the points ({crs_name}) lie outside the {target} (cells within bounds "
                f"{_describe_bounds(extent)}), closer to it than it is wide: check its bounds "
                "(and the region and exclude polygons)")
    if not hints:
        hints.append(
            f"they are about {_rounded(gap, step)} {unit} apart: check that the points and "
            f"the {target} use the same CRS and that the points' CRS label is right"
        )
    return f"{head}: {described} do not overlap; " + "; ".join(hints)


# --------------------------------------------------------------------------- public domain


def check_levels(levels: Any, attributes: Sequence[str]) -> dict[str, list]:
    """Check a declared public domain and return the levels of ``attributes``, in code order.

    The one check of a ``levels`` dict: :func:`prepare` (``levels=``) and the ε-DP entry points
    (:func:`geosynth.dp.locations.public_domain`) call it. It reads the declared levels only,
    never the records.

    Parameters
    ----------
    levels : dict of str to list
        The public levels of each attribute; keys other than ``attributes`` are ignored.
    attributes : sequence of str
        The attributes that need a domain.

    Returns
    -------
    dict of str to list
        ``{attribute: list of its levels}`` for every attribute, in the order of ``attributes``.

    Raises
    ------
    InputError
        ``levels`` is not a dict, lacks an attribute, or an attribute's entry is not a
        non-empty list of distinct (``1`` and ``1.0`` are one level), hashable, non-NaN levels.
    """
    if not isinstance(levels, dict):
        raise InputError(f"levels must be a dict attribute -> list of levels, got "
                         f"{type(levels).__name__}")
    return {a: _declared_levels(levels, a) for a in attributes}


def _declared_levels(levels: dict, attribute: str) -> list:
    """Return the checked levels of one attribute (see :func:`check_levels`)."""
    if attribute not in levels:
        raise InputError(f"levels has no entry for attribute {attribute!r}; give its public "
                         "levels")
    return check_declared(levels[attribute], f"levels[{attribute!r}]")


def check_declared(given: Any, name: str) -> list:
    """Check one list of declared public levels (or categories) and return it as a list.

    Parameters
    ----------
    given : list, tuple, numpy.ndarray or pandas.Index
        The declared levels.
    name : str
        How the messages name it (``levels['sex']``, ``categories``).

    Returns
    -------
    list
        The levels, in the order given.

    Raises
    ------
    InputError
        ``given`` is not a non-empty list of distinct (``1`` and ``1.0`` are one level),
        hashable, non-NaN levels, not mixing booleans with numbers.
    """
    if isinstance(given, str | bytes | dict) or not isinstance(given, Sequence | np.ndarray
                                                                | pd.Index):
        raise InputError(f"{name} must be a list of levels, got {describe_value(given)}")
    declared = list(given)
    if not declared:
        raise InputError(f"{name} is empty; give at least one public level")
    try:
        unique = len(set(declared)) == len(declared)  # by == and hash, as the counting matches
    except TypeError as err:
        raise InputError(f"{name} holds unhashable levels; give numbers or strings") from err
    if pd.isna(pd.Series(declared, dtype=object)).any():
        raise InputError(f"{name} holds a missing value (NaN/None); a level needs a name, e.g. "
                         "'unknown'")
    if _mixes_booleans_and_numbers(pd.Series(declared, dtype=object)):
        raise InputError(f"{name} holds both booleans and numbers, and True is the level 1 "
                         "(False is 0); give levels of one type")
    if not unique:  # 1 and 1.0: one level, a combination of pure noise
        seen: set = set()  # by == and hash, in one pass (a scan per level took hours at 10⁶)
        repeated = sorted({str(v) for v in declared if v in seen or seen.add(v)})
        raise InputError(f"{name} lists {repeated[:5]} more than once; give each public level "
                         "once")
    return declared


def _level_index(declared: list) -> pd.Index:
    """Index the declared levels so that values match by ``==`` and hash (1 is 1.0)."""
    return pd.Index(declared, dtype=object, tupleize_cols=False)


def domain_codes(declared: list, values: np.ndarray) -> np.ndarray:
    """Code of each value among declared levels, -1 where it is none of them.

    Values match by ``==`` and hash, so ``1`` and ``1.0`` are one level, but a boolean matches
    only a boolean level (``True == 1`` in Python: a flag was counted as the level ``1``); a
    value of no level (an unhashable one, a list in an object column, too) gets -1, not an
    error, so that success does not depend on the records: the one matching of values to a
    declared domain (:func:`prepare` with ``levels``, the DP synthesizers' ``categories``).

    Parameters
    ----------
    declared : list
        Checked levels (:func:`check_levels`).
    values : numpy.ndarray of object, shape (n,)
        The values to code.

    Returns
    -------
    numpy.ndarray of intp, shape (n,)
        Position of each value in ``declared``, or -1.
    """
    index = _level_index(declared)
    try:
        codes = index.get_indexer(values)
    except TypeError:  # a list or dict in the column: no declared level, dropped, not refused
        hashable = np.array([_is_hashable(v) for v in values], dtype=bool)
        codes = np.full(len(values), -1, dtype=np.intp)
        codes[hashable] = index.get_indexer(values[hashable])
    level_is_bool = np.array([_is_bool(v) for v in declared], dtype=bool)
    if level_is_bool.any() or _may_hold_booleans(values):
        value_is_bool = np.fromiter((_is_bool(v) for v in values), dtype=bool,
                                    count=len(values))
        codes[(codes >= 0) & (value_is_bool != level_is_bool[codes])] = -1
    return codes


def declared_attributes(frame: pd.DataFrame, levels: dict[str, list]) -> pd.DataFrame:
    """Return ``frame`` with each attribute of ``levels`` as the declared levels' values.

    A CSV file read for a DP release holds its attributes as text, which :func:`prepare`
    matches to the declared numbers and booleans (``"1"`` to ``1``): the records it kept then
    carry the same values as the release, for the evaluation and the outcome's check (a text
    ``y`` of "0" and "1" was refused as not binary, after the noisy counts were drawn).

    Parameters
    ----------
    frame : pandas.DataFrame
        The records, e.g. those :func:`prepare` kept (``counts.record_index``).
    levels : dict of str to list
        The declared domain (``counts.levels``).

    Returns
    -------
    pandas.DataFrame
        A copy; each attribute's type inferred from its values (int64 for whole numbers).
    """
    return frame.assign(**{
        attribute: pd.Series(_as_declared(frame[attribute], declared),
                             index=frame.index).infer_objects()
        for attribute, declared in levels.items()})


def _as_declared(values: pd.Series, declared: list) -> np.ndarray:
    """Return ``values`` for :func:`domain_codes`, a text column's numbers and booleans read.

    A CSV file read for a DP release holds its attributes as text: pandas' types follow the
    records' values (one record "unknown" in a column of codes made it text, and the declared
    levels ``[1, 2]`` then refused the release: made or refused by one record). A text value
    that is no declared text level matches the declared number it reads as (``"1"``,
    ``"1.0"``, ``" 1"``) or the declared boolean (``"True"``, ``"false"``).
    """
    text = _text_values(values)
    if text is None:
        return values.to_numpy(dtype=object)  # as it is: domain_codes only reads it
    out = values.to_numpy(dtype=object, copy=True)
    values = values.where(text).astype("string")
    free = text & ~values.isin([v for v in declared if isinstance(v, str)]).to_numpy(dtype=bool)
    if any(isinstance(v, numbers.Real) and not _is_bool(v) for v in declared):
        read = pd.to_numeric(values.where(free), errors="coerce").to_numpy(dtype=np.float64)
        hit = free & np.isfinite(read)
        out[hit] = read[hit]
    if any(_is_bool(v) for v in declared):
        lower = values.where(free).str.strip().str.lower()
        for word, flag in (("true", True), ("false", False)):
            out[(lower == word).fillna(False).to_numpy(dtype=bool)] = flag
    return out


def _text_values(values: pd.Series) -> np.ndarray | None:
    """Where ``values`` holds text (a mask), judged value by value; None when nowhere.

    pandas 2 reads a CSV's text as object, pandas 3 as StringDtype. One column judged as a
    whole let one record decide for all: a single int among "1", "2" texts switched the
    reading off, and 40 records of the declared levels were dropped (one record changed 40
    counts).
    """
    if isinstance(values.dtype, pd.StringDtype):
        return values.notna().to_numpy(dtype=bool)
    if values.dtype != object:
        return None
    kind = pd.api.types.infer_dtype(values, skipna=True)
    if kind == "string":
        return values.notna().to_numpy(dtype=bool)
    if not kind.startswith("mixed"):
        return None
    return np.fromiter((isinstance(v, str) for v in values.to_numpy(dtype=object)), bool,
                       len(values))


def _is_bool(value: Any) -> bool:
    return isinstance(value, bool | np.bool_)


def _may_hold_booleans(values: np.ndarray) -> bool:
    """Whether ``values`` may hold booleans (pandas' inference, in C: no loop over strings)."""
    return pd.api.types.infer_dtype(values, skipna=True) not in (
        "string", "bytes", "floating", "integer", "decimal", "empty", "categorical",
        "datetime64", "datetime", "date", "timedelta64", "timedelta", "time", "period",
        "interval", "complex",
    )


def _is_hashable(value: Any) -> bool:
    try:
        hash(value)
    except TypeError:
        return False
    return True


def domain_combos(domain: dict[str, list]) -> pd.DataFrame:
    """Every combination of a public domain, the last attribute varying fastest.

    Parameters
    ----------
    domain : dict of str to list
        Checked levels of every attribute (:func:`check_levels`), in attribute order.

    Returns
    -------
    pandas.DataFrame
        ``prod(len(levels))`` rows (index ``0..B-1``): for each attribute ``a`` a column ``a``
        (the level) and ``a_code`` (int64 index into ``domain[a]``). The order is that of the
        codes, as in :class:`CellCounts`.
    """
    sizes = [len(v) for v in domain.values()]
    codes = np.indices(sizes).reshape(len(sizes), -1)  # C order: the last attribute fastest
    columns: dict[Hashable, Any] = {}
    for k, (a, declared) in enumerate(domain.items()):
        columns[a] = pd.Series(declared, dtype=object).iloc[codes[k]].tolist()
        columns[f"{a}_code"] = codes[k].astype(np.int64)
    return pd.DataFrame(columns, index=pd.RangeIndex(codes.shape[1]))


def _prepare_on_domain(
    gdf: Any,
    grid: Any,
    attributes: Sequence[str] | str,
    continuous: Sequence[str] | str | None,
    levels: Any,
    max_bytes: Any,
) -> CellCounts:
    """:func:`prepare` with ``levels``: refusals from public facts only, records dropped."""
    _check_frame_type(gdf)
    attrs, domain = check_domain_options(gdf, grid, attributes, continuous, levels, max_bytes)
    # One frame deeper than locate_records: warn_if_bounds_touch_records, locate_on_domain,
    # this function, prepare, then the user's line.
    cell, combo, dropped = locate_on_domain(gdf, grid, domain, stacklevel=5)
    warn_dropped(dropped.sum(axis=0), len(gdf), stacklevel=4)  # warn_dropped, here, prepare
    keep = (cell >= 0) & (combo >= 0)
    return counts_on_domain(cell[keep], combo[keep], gdf.index[keep], grid, attrs, domain)


def check_domain_options(
    frame: Any, grid: Any, attributes: Sequence[str] | str,
    continuous: Sequence[str] | str | None, levels: Any, max_bytes: Any,
) -> tuple[list[str], dict[str, list]]:
    """Check what a preparation on a public domain checks; return the attributes and domain.

    Only public facts: the options, the frame's columns and CRS (``frame`` may be a Dask
    frame's metadata with a ``crs``), the declared levels and the memory of the declared
    product of combinations.

    Parameters
    ----------
    frame : geopandas.GeoDataFrame or dask_geopandas.GeoDataFrame
        The points (only columns, dtypes and CRS are read).
    grid, attributes, continuous, levels, max_bytes
        As for :func:`prepare`.

    Returns
    -------
    attributes : list of str
    domain : dict of str to list
        :func:`check_levels` of ``levels``.
    """
    check_prepare_options(grid, "drop", max_bytes)
    meta = getattr(frame, "_meta", frame)
    attrs = check_columns(meta, attributes, continuous)
    if covariate_names(continuous):
        raise InputError("levels= prepares the counts of a DP release, which cannot release a "
                         "continuous variable yet; drop continuous=")
    check_crs(frame, grid)
    domain = check_levels(levels, attrs)
    for a, declared in domain.items():
        _check_domain_dtype(meta[a].dtype, a, declared)
    n_combos = math.prod(len(v) for v in domain.values())
    _check_memory(int(grid.n_cells), n_combos, 0, max_bytes, len(domain))  # public numbers
    _check_labels(domain, lambda: domain_combos(domain))
    return attrs, domain


def _check_domain_dtype(dtype: Any, attribute: Hashable, declared: list) -> None:
    """Refuse, from the dtype, declared levels that no value of the column can match.

    A boolean column declared with numbers or the reverse (a boolean matches only a boolean
    level, :func:`domain_codes`), a numeric column declared with text only: every record would
    be dropped. Both facts are public (the schema and the declared levels); an object or text
    column may hold anything and is not judged.
    """
    bool_levels = [_is_bool(v) for v in declared]
    if pd.api.types.is_bool_dtype(dtype) and not all(bool_levels):
        raise InputError(
            f"attribute {attribute!r} is a boolean column, but levels[{attribute!r}] are not "
            f"all booleans (True is not the level 1 here); declare "
            f"levels[{attribute!r}] = [False, True]"
        )
    if pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype) and any(
            bool_levels):
        raise InputError(
            f"attribute {attribute!r} is a numeric column, but levels[{attribute!r}] holds "
            "booleans, which no number matches; declare its numeric levels (e.g. [0, 1])"
        )
    # Text for a numeric column or numbers for a text column: every record was dropped, and a
    # DP release of pure noise written (levels ["1", "2"] from a JSON file for a column of 1, 2).
    numbers_declared = [v for v in declared if isinstance(v, numbers.Real) and not _is_bool(v)]
    if pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype) and (
            not numbers_declared):
        raise InputError(
            f"attribute {attribute!r} is a numeric column, but levels[{attribute!r}] holds no "
            f"number ({_shown_levels(declared)}), which no value matches: every record would "
            f"be dropped; declare its levels as numbers (e.g. [1, 2], not [\"1\", \"2\"])"
        )
    # A text column is not judged: its values may read as the declared numbers and booleans
    # (_as_declared), as a CSV file's do under DP.


def _shown_levels(declared: list) -> str:
    shown = ", ".join(repr(v) for v in declared[:3])
    return shown + (", ..." if len(declared) > 3 else "")


def counts_on_domain(
    cell: np.ndarray, combo: np.ndarray, index: pd.Index, grid: Any, attributes: list[str],
    domain: dict[str, list],
) -> CellCounts:
    """Build the :class:`CellCounts` of the kept records' cells and domain combinations.

    Parameters
    ----------
    cell, combo : numpy.ndarray of int64, shape (n,)
        Cell and combination (index into :func:`domain_combos`) of each kept record.
    index : pandas.Index
        The kept records' labels.
    grid : geosynth.lattice.Grid
    attributes : list of str
    domain : dict of str to list

    Returns
    -------
    CellCounts
        ``domain_declared=True``: every combination of ``domain``, empty ones included.
    """
    n_cells, n_combos = int(grid.n_cells), math.prod(len(v) for v in domain.values())
    counts = np.bincount(cell * n_combos + combo, minlength=n_cells * n_combos)
    counts = counts.astype(np.int64).reshape(n_cells, n_combos)
    combos = domain_combos(domain)
    combos["n_records"] = counts.sum(axis=0).astype(np.int64)
    return CellCounts(
        counts=counts, combos=combos, record_cell=np.asarray(cell, dtype=np.int64),
        record_combo=np.asarray(combo, dtype=np.int64), record_index=index,
        attributes=attributes, levels=domain, continuous=None, zbar=None,
        zbar_mask=None, zbar_mean=None, zbar_sd=None, grid=grid, domain_declared=True,
    )


#: Why a preparation on a public domain drops a record: the columns of ``locate_on_domain``'s
#: ``dropped`` and the words of :func:`warn_dropped`.
DROP_REASONS = (
    "without a usable point geometry (missing, empty, not a Point, NaN coordinates)",
    "in no lattice cell (outside the lattice or region, or in an excluded area)",
    "with an attribute value outside the declared levels (NaN included; True and False "
    "match only boolean levels)",
)


def locate_on_domain(
    gdf: gpd.GeoDataFrame, grid: Any, domain: dict[str, list], *, check_bounds: bool = True,
    stacklevel: int = 4,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cell and domain combination of every record, -1 where it cannot be counted.

    Parameters
    ----------
    gdf : geopandas.GeoDataFrame
        The records (or one partition of them).
    grid : geosynth.lattice.Grid
    domain : dict of str to list
        Checked levels (:func:`check_levels`).
    check_bounds : bool, default True
        Warn when the lattice bounds equal the located records' extremes
        (:func:`warn_if_bounds_touch_records`); a partitioned caller checks once over all.
    stacklevel : int, default 4
        Of that warning, counted from :func:`warn_if_bounds_touch_records` (4: the caller of
        the function that calls this one).

    Returns
    -------
    cell, combo : numpy.ndarray of int64, shape (n,)
        -1 for a record that cannot be counted (in both).
    dropped : numpy.ndarray of bool, shape (n, 3)
        Which of :data:`DROP_REASONS` applies to each record.
    """
    usable, xy = usable_points(gdf)
    cell = np.full(len(gdf), -1, dtype=np.int64)
    if usable.any():
        located = np.asarray(grid.locate(xy[usable]), dtype=np.int64).reshape(-1)
        if located.shape != (int(usable.sum()),):
            raise InputError(f"grid.locate returned {located.shape[0]} cell ids for "
                             f"{int(usable.sum())} points; grid must be a geosynth.lattice.Grid")
        cell[usable] = located
        if check_bounds:
            warn_if_bounds_touch_records(grid, xy[cell >= 0], stacklevel=stacklevel)
    codes = np.stack([domain_codes(declared, _as_declared(gdf[a], declared))
                      for a, declared in domain.items()])
    in_domain = (codes >= 0).all(axis=0)
    combo = np.full(len(gdf), -1, dtype=np.int64)
    if in_domain.any():
        sizes = tuple(len(v) for v in domain.values())
        combo[in_domain] = np.ravel_multi_index(codes[:, in_domain], sizes)
    dropped = np.column_stack([~usable, usable & (cell < 0), ~in_domain])
    cell[combo < 0] = -1
    combo[cell < 0] = -1
    return cell, combo, dropped


def warn_dropped(counts: np.ndarray, n_records: int, stacklevel: int = 2) -> None:
    """Warn the curator (DataWarning) of how many records a domain preparation dropped.

    Parameters
    ----------
    counts : array-like of int, shape (3,)
        Records dropped for each of :data:`DROP_REASONS`.
    n_records : int
        Records given.
    stacklevel : int, default 2
        As for :func:`warnings.warn`.
    """
    dropped = [(int(n), why) for n, why in zip(counts, DROP_REASONS, strict=True) if n]
    if not dropped:
        return
    described = "; ".join(f"{n} {why}" for n, why in dropped)
    warnings.warn(
        f"prepare(levels=...) dropped records of the {n_records} given (a record can have "
        f"several reasons): {described}. They are not counted; under differential privacy a "
        "dropped record changes at most one count, so dropping costs no privacy, and this "
        "warning, for you only, is not part of any release",
        DataWarning, stacklevel=stacklevel,
    )


# --------------------------------------------------------------------------- encoding and counting


class _RecordBoxes(NamedTuple):
    """The box every counted record lies in: in the lattice's CRS, and in degrees (or None)."""

    bounds: tuple[float, float, float, float]
    degrees: tuple[float, float, float, float] | None


def _record_boxes(grid: Grid) -> _RecordBoxes:
    """Return the lattice's box, and the same box in longitude and latitude when it has a CRS."""
    degrees = None
    if grid.crs is not None:
        from pyproj import Transformer
        from pyproj.exceptions import CRSError as ProjCRSError
        from pyproj.exceptions import ProjError

        try:
            to_degrees = Transformer.from_crs(grid.crs, "EPSG:4326", always_xy=True)
            box = to_degrees.transform_bounds(*grid.bounds)
            degrees = tuple(map(float, box)) if np.all(np.isfinite(box)) else None
        except (ProjError, ProjCRSError):  # a local CRS without a path to degrees
            degrees = None
    return _RecordBoxes(tuple(map(float, grid.bounds)), degrees)


def _levels_and_codes(
    series: pd.Series, weights: np.ndarray, boxes: _RecordBoxes
) -> tuple[list, np.ndarray]:
    """Levels present in ``series`` in code order (category order, else ``sorted``) and codes.

    Levels that hold locations are refused (:func:`_refuse_locations`; ``weights``, the records
    each row counts, and ``boxes``, the lattice's box, as there).
    """
    if isinstance(series.dtype, pd.CategoricalDtype):
        categories = series.cat.categories
        raw = series.cat.codes.to_numpy()
        observed = np.zeros(len(categories), dtype=bool)
        observed[raw] = True
        levels = categories[observed].tolist()
        _refuse_locations(series, levels, weights, boxes)
        return levels, (np.cumsum(observed) - 1)[raw]
    series = widen_halves(series)
    unique = series.drop_duplicates().tolist()
    try:
        levels = sorted(unique)
        codes = pd.Categorical(series, categories=levels).codes
    except TypeError as err:  # unorderable (1 and "a", complex) or unhashable (lists) values
        if any(isinstance(v, shapely.Geometry) for v in unique):
            _refuse_locations(series, unique, weights, boxes)
        raise _no_levels(series, unique) from err
    _refuse_locations(series, levels, weights, boxes)
    return levels, codes


def widen_halves(values: pd.Series) -> pd.Series:
    """Return ``values`` with float16 widened to float64 (exact: every half is a double).

    pandas has no float16 index: grouping, sorting into levels or matching categories of a
    float16 attribute raised its NotImplementedError.

    Parameters
    ----------
    values : pandas.Series
        An attribute column.

    Returns
    -------
    pandas.Series
    """
    return values.astype(np.float64) if values.dtype == np.float16 else values


def _no_levels(series: pd.Series, values: list) -> InputError:
    """Return the refusal of an attribute whose values cannot be sorted or grouped into levels."""
    kinds = sorted({type(v).__name__ for v in values})
    return InputError(
        f"attribute {series.name!r} mixes values of types {kinds} that cannot be sorted into "
        "levels (or holds values such as lists, which are no level); make them one type of "
        f"text or number, e.g. gdf[{series.name!r}].astype(str)"
    )


def _refuse_locations(
    series: pd.Series, levels: list, weights: np.ndarray, boxes: _RecordBoxes
) -> None:
    """Refuse an attribute whose levels are locations.

    Judged on the levels (:func:`levels_hold_locations`: geometries, their encodings, tuples
    of numbers) and on the records (:func:`holds_coordinates`: text of numbers, most records
    distinct, as one location per record is; ``weights`` are the records each row counts, as
    in a table of counts). Block centroids as ``(x, y)`` tuples or WKT text
    were accepted as levels, and the release then lost the column
    (:func:`geosynth.synth.to_public` drops columns holding locations) while its metadata
    listed it: a modelled attribute gone without a word. With ``allow_identifying``, each
    record's ``"x, y"`` text went into the metadata's combination labels, in the public file.
    A few records' own ``"x, y"`` beside common labels are refused too
    (:func:`holds_coordinates_within`: text of numbers inside the lattice's ``boxes``).
    """
    name = series.name
    located = levels_hold_locations(levels)  # parses WKT, WKB and GeoJSON: once
    if any(isinstance(v, tuple | frozenset) for v in levels) and not located:
        raise InputError(
            f"attribute {name!r} holds tuples (or sets), which a release cannot keep as levels; "
            f"make each level one text or number, e.g. gdf[{name!r}].map('/'.join) for tuples "
            "of text"
        )
    if located or holds_coordinates(series, weights):
        raise InputError(
            f"attribute {name!r} holds locations (geometries, their WKT, WKB or GeoJSON text, "
            "or coordinates as tuples or text of numbers); a release publishes attribute "
            "levels verbatim, and drops columns of locations: drop it from attributes (the "
            "records' locations are the geometry column, which geosynth replaces), or replace "
            "it by a label of each area (e.g. a district name)"
        )
    if holds_coordinates_within(series, boxes.bounds, weights, RARE_LEVEL_RECORDS,
                                boxes.degrees):
        raise InputError(
            f"attribute {name!r} has a level that reads as coordinates inside the lattice "
            "(text holding two numbers that fall in its box, in metres or in degrees, such as "
            "a home's easting and northing); a release publishes attribute levels verbatim: "
            "drop those values or the column. If they are labels, not places (e.g. an age "
            "band '18 64' on a lattice near its CRS's origin), write them otherwise ('18-64') "
            "or merge the rare ones into a level many records share"
        )
    code = None if boxes.degrees is None else location_code_within(series, boxes.degrees,
                                                                    weights)
    if code is not None:
        raise InputError(
            f"attribute {name!r} has a level that reads as {code} inside the lattice, held by "
            "fewer than 10 records (a home's location, to 150 m or finer); a release publishes "
            "attribute levels verbatim: drop the column, or replace the codes by a coarser "
            "area's label many records share (e.g. a geohash cut to 5 characters)"
        )


def locate_records(
    gdf: gpd.GeoDataFrame,
    grid: Grid,
    attributes: Sequence[str],
    continuous: Sequence[str] | str | None = None,
    *,
    check_bounds: bool = True,
) -> pd.DataFrame:
    """Validate the rows of ``gdf`` and locate each record: one row per record of a count table.

    The first step of :func:`prepare`, which also runs on each partition of a Dask frame
    (:func:`geosynth.distributed.prepare_dask`). The columns and the CRS are checked by the
    caller (:func:`check_columns`, :func:`check_crs`).

    Parameters
    ----------
    gdf : geopandas.GeoDataFrame
        The points (all records, or one partition).
    grid : geosynth.lattice.Grid
        The lattice; points are located with ``grid.locate``.
    attributes : sequence of str
        The attribute columns (checked).
    continuous : str or sequence of str, optional
        The continuous column(s) (checked).
    check_bounds : bool, default True
        Warn when bounds given as public equal the records' extremes
        (:func:`warn_if_bounds_touch_records`), and refuse record numbers in ``continuous``
        (:func:`check_not_row_numbers`). A partition sees only its own records (a run of
        record numbers sorted into it, its own extremes), so a partitioned count checks both
        once over all of them instead.

    Returns
    -------
    pandas.DataFrame
        Index ``gdf.index``; the attribute columns (dtypes kept), :data:`CELL_COLUMN` (int64
        cell id, -1 for a point in no cell), :data:`COUNT_COLUMN` (int64, 1) and the columns of
        :func:`z_sum_columns` (float64 value of each continuous covariate; one column of 0
        without one).

    Raises
    ------
    InputError
        Missing, empty or non-point geometries; NaN or infinite values in an attribute, or
        booleans and numbers in one (``True`` would count as ``1``); NaN or infinite values of
        ``continuous``;
        ``grid.locate`` returned the wrong number of cells.
    """
    xy = point_coordinates(gdf, "gdf")
    for a in attributes:
        _check_no_nan(gdf, a, "attribute")
        _check_finite_levels(gdf, a)
        _check_not_bool_and_number(gdf[a])
    covariates = covariate_names(continuous)
    z = [continuous_values(gdf, name, check_row_numbers=check_bounds)
         for name in covariates] or [np.zeros(len(gdf))]
    cell = np.asarray(grid.locate(xy), dtype=np.int64).reshape(-1)
    if cell.shape != (len(gdf),):
        raise InputError(
            f"grid.locate returned {cell.shape[0]} cell ids for {len(gdf)} points; "
            "grid must be a geosynth.lattice.Grid"
        )
    if check_bounds:
        warn_if_bounds_touch_records(grid, xy[cell >= 0])
    records = pd.DataFrame({a: gdf[a].array for a in attributes}, index=gdf.index)
    records[CELL_COLUMN] = cell
    records[COUNT_COLUMN] = np.ones(len(gdf), dtype=np.int64)
    for column, values in zip(z_sum_columns(len(covariates)), z, strict=True):
        records[column] = values
    for (high1, high2, low1, low2), values in zip(extreme_columns(len(covariates)), z,
                                                  strict=False):
        records[high1], records[high2] = values, -np.inf
        records[low1], records[low2] = values, np.inf
    return records


def warn_if_bounds_touch_records(grid: Grid, xy: np.ndarray, stacklevel: int = 4) -> None:
    """PrivacyLeakWarning when bounds given as public equal located records' coordinates.

    ``xy`` (n, 2) holds the located records, or only points with their extremes (a partitioned
    count passes each partition's minimum and maximum corners).

    Every located record lies within the bounds, so a bound equal to one's x (or y) is the
    records' extreme: a lattice over the points' own ``total_bounds`` would publish it exactly.
    One such bound alone can be chance (a record on the edge of a public region, both in whole
    metres), so two or more are asked for. Bounds that :meth:`Grid.from_points` derived
    (``snap_unit`` set) are snapped outward and areal lattices follow their public polygons,
    so neither's bounds are checked; the habitable extent of any clipped lattice is: an
    ``exclude`` of "where nobody lives" (the snapped lattice less the records' box) published
    the records' four extremes to every digit through the habitable fractions, on a
    :meth:`Grid.from_points` lattice that this check skipped.

    ``stacklevel`` is that of :func:`warnings.warn`: the default names the caller of
    :func:`prepare` (``prepare`` -> :func:`locate_records` -> this function); a caller with
    another depth passes its own, so that the warning names the user's line.
    """
    if xy.shape[0] == 0:
        return
    if grid.kind != "areal" and grid.snap_unit is None and _warn_if_lattice_bounds_touch(
            grid, xy, stacklevel + 1):
        return
    if grid.fully_habitable.all():
        return
    # A clipped lattice publishes each cell's habitable fraction (the release's grid layer),
    # from which a region's edge inside a cell is read back: region=box(*gdf.total_bounds)
    # gave the records' xmin and xmax to every digit, and so would their convex hull.
    touching = _bounds_at_extremes(shapely.total_bounds(grid.habitable_geometry), xy)
    if len(touching) >= 2:
        warnings.warn(
            f"the habitable extent of the lattice (its region= less exclude=) has "
            f"{', '.join(touching)} equal to the extreme coordinates of the records: the "
            "release's habitable fractions publish them exactly (a region built from the "
            "records, such as their bounding box or convex hull?); clip the lattice to a "
            "public study region instead",
            PrivacyLeakWarning,
            stacklevel=stacklevel,
        )
        return
    centres = _records_at_arc_centres(grid, xy)
    if centres:
        warnings.warn(
            f"the boundary of the lattice's habitable extent (its region= less exclude=) "
            f"runs in arcs around {centres} record location(s): the release's habitable "
            "fractions let them be read back (a region drawn around the records, such as a "
            "buffer of them?); clip the lattice to a public study region instead (a circle "
            "around a public site, with records geocoded to the site itself, warns too: "
            "then nothing confidential is at its centre)",
            PrivacyLeakWarning,
            stacklevel=stacklevel,
        )


#: A run of this many consecutive boundary vertices at one distance from a record (to the
#: relative tolerance :data:`_ARC_RTOL`) is an arc around it (:func:`_records_at_arc_centres`).
_ARC_VERTICES = 5
#: Relative tolerance of the distances of an arc's vertices: a buffer's vertices snapped to
#: 1 cm lie within 7 mm of its circle, 1.2e-4 of a 60 m radius.
_ARC_RTOL = 5e-4
#: Consecutive vertex triples whose circumcentres lie within this share of their radius of
#: each other may be on one arc: candidates, verified by :data:`_ARC_RTOL`.
_ARC_CENTRE_SHARE = 0.05


def _records_at_arc_centres(grid: Grid, xy: np.ndarray) -> int:
    """Count the distinct locations of ``xy`` at the centre of an arc of the region's boundary.

    A region drawn around the records passed the bounding-box check of
    :func:`warn_if_bounds_touch_records`: the union of 60 m buffers of the records shifts every
    edge by 60 m, yet the habitable fractions of the six cells around a lone record gave its
    coordinates back to the centimetre (a circle fitted to the cut cells). A buffer's boundary
    is made of arcs: runs of :data:`_ARC_VERTICES` or more consecutive vertices at one distance
    from a record (every 5.6 degrees for shapely's and geopandas' default 16 segments a
    quarter, 18 for QGIS's 5). A public boundary holds no such run around a record except by
    chance: a staircase of raster cells holds at most four, the corners of one pixel, around a
    record at its centre. The boundary is that of the cut cells' habitable parts, merged, less
    the vertices the cells' edges add on its straight stretches (they broke every arc into runs
    too short on 10 m cells). Candidate centres come from the boundary (circumcentres of
    consecutive vertex triples that agree, :func:`_arc_candidates`); the records near one are
    then checked against the run's vertices, so 10**6 records cost one KD-tree.
    """
    cut = ~grid.fully_habitable & (grid.habitable_fraction < 1.0 - 1e-9)
    if not cut.any() or len(xy) == 0:
        return 0
    boundary = shapely.boundary(shapely.coverage_union_all(grid.habitable_geometry[cut]))
    runs = [run for ring in shapely.get_parts(boundary)
            for run in _arc_candidates(shapely.get_coordinates(ring)[:-1])]
    if not runs:
        return 0
    from scipy.spatial import cKDTree

    centres = np.array([centre for centre, _, _ in runs])
    radii = np.array([radius for _, radius, _ in runs])
    near = cKDTree(xy).query_ball_point(centres, _ARC_CENTRE_SHARE * radii)
    found = set()
    for (_, _, vertices), records in zip(runs, near, strict=True):
        for k in records:
            distance = np.hypot(*(vertices - xy[k]).T)
            if np.ptp(distance) <= _ARC_RTOL * distance.mean():
                found.add(tuple(xy[k]))
    return len(found)


def _arc_candidates(ring: np.ndarray) -> list[tuple[np.ndarray, float, np.ndarray]]:
    """Return ``(centre, radius, vertices)`` of each run of a ring's vertices on one circle.

    ``ring`` (n, 2) without its closing repeat. Vertices on a straight line between their
    neighbours are dropped first; then each vertex's triple (it and its two neighbours) has a
    circumcentre, and :data:`_ARC_VERTICES` - 2 or more consecutive triples whose centres and
    radii agree (:data:`_ARC_CENTRE_SHARE`) make a run of all their vertices: the records are
    checked against the whole arc (against 5 of a public circle's vertices, a record 3.3 m
    from its centre passed).
    """
    for _ in range(2):  # twice: a vertex between two dropped ones is judged again
        if len(ring) < _ARC_VERTICES:
            return []
        before, after = np.roll(ring, 1, axis=0) - ring, np.roll(ring, -1, axis=0) - ring
        cross = before[:, 0] * after[:, 1] - before[:, 1] * after[:, 0]
        scale = np.hypot(*before.T) * np.hypot(*after.T)
        ring = ring[np.abs(cross) > 1e-9 * scale]
    if len(ring) < _ARC_VERTICES:
        return []
    # each triple's circumcentre, relative to its middle vertex (UTM's 10**13 squares cancel)
    a, c = np.roll(ring, 1, axis=0) - ring, np.roll(ring, -1, axis=0) - ring
    d = 2.0 * (a[:, 0] * c[:, 1] - a[:, 1] * c[:, 0])
    sa, sc = np.sum(a * a, axis=1), np.sum(c * c, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        offset = np.column_stack([(c[:, 1] * sa - a[:, 1] * sc) / d,
                                  (a[:, 0] * sc - c[:, 0] * sa) / d])
    centre, radius = ring + offset, np.hypot(*offset.T)
    following = np.roll(np.arange(len(ring)), -1)
    same = (np.hypot(*(centre - centre[following]).T) <= _ARC_CENTRE_SHARE * radius) & (
        np.abs(radius - radius[following]) <= _ARC_CENTRE_SHARE * radius)
    starts = same & same[following]  # triples i, i+1, i+2 agree: vertices i-1..i+3
    n = len(ring)
    if starts.all():  # a whole ring on one circle: a lone buffer
        return [(centre[0], float(radius[0]), ring)] if np.isfinite(radius[0]) else []
    runs = []
    for i in np.flatnonzero(starts & ~np.roll(starts, 1)):  # the first of each run of them
        length = int(np.argmin(np.roll(starts, -i)))  # triples i .. i + length + 1 agree
        if np.isfinite(radius[i]):
            runs.append((centre[i], float(radius[i]),
                         ring[np.arange(i - 1, i + length + 3) % n]))
    return runs


def _warn_if_lattice_bounds_touch(grid: Grid, xy: np.ndarray, stacklevel: int) -> bool:
    """Warn when the lattice bounds equal the records' extremes; return whether it warned."""
    # A hexagonal lattice's own bounds are its hexagons' outer edge; what it publishes to every
    # digit is the south-west corner of the bounds it was built over, its first hexagon's centre.
    hexagonal = grid.kind == "hexagonal"
    bounds = (*grid.origin, math.nan, math.nan) if hexagonal else grid.bounds
    touching = _bounds_at_extremes(bounds, xy)
    if len(touching) < 2:
        return False
    warnings.warn(
        f"the lattice {'origin' if hexagonal else 'bounds'} {', '.join(touching)} equal the "
        "extreme coordinates of the records: a release on this lattice publishes them "
        "exactly (a grid over "
        "gdf.total_bounds?); build the lattice over a public study region "
        "(Grid.regular(region.total_bounds, ..., region=region)), or with "
        "Grid.from_points, which snaps the bounds outward",
        PrivacyLeakWarning,
        stacklevel=stacklevel,
    )
    return True


def _bounds_at_extremes(bounds, xy: np.ndarray) -> list[str]:
    """Which of ``bounds`` (xmin, ymin, xmax, ymax) equal the records' extremes in ``xy``."""
    xmin, ymin, xmax, ymax = (float(v) for v in bounds)
    span = max(xmax - xmin, ymax - ymin)
    if not math.isfinite(span):  # a hexagonal lattice's origin alone
        span = float(np.ptp(xy, axis=0).max())
    tolerance = 1e-9 * span
    extremes = {"xmin": (xmin, xy[:, 0].min()), "ymin": (ymin, xy[:, 1].min()),
                "xmax": (xmax, xy[:, 0].max()), "ymax": (ymax, xy[:, 1].max())}
    return [name for name, (bound, value) in extremes.items() if abs(bound - value) <= tolerance]


def count_table(table: pd.DataFrame, attributes: Sequence[str]) -> pd.DataFrame:
    """Sum a count table per (cell, attribute values): one row per group that holds records.

    The map step of a partitioned count (on the records of one partition, from
    :func:`locate_records`) and its combine step (on the concatenated tables of all
    partitions): sums of counts and of Z are associative, so the order of the partitions only
    changes the last bits of the Z sums. An attribute holding booleans and numbers (in
    different partitions, each of one type) is refused: the groups would merge True with 1.

    Parameters
    ----------
    table : pandas.DataFrame
        A count table: the attribute columns, :data:`CELL_COLUMN`, :data:`COUNT_COLUMN` and
        the Z sums (:func:`z_sum_columns`).
    attributes : sequence of str
        The attribute columns.

    Returns
    -------
    pandas.DataFrame
        A count table with a ``RangeIndex``: columns :data:`CELL_COLUMN`, the attributes,
        :data:`COUNT_COLUMN` and the Z sums, groups in order of first appearance.
    """
    for attribute in attributes:  # the partitions' booleans and numbers meet here
        _check_not_bool_and_number(table[attribute])
    halves = {a: table[a].dtype for a in attributes if table[a].dtype == np.float16}
    table = table.assign(**{a: widen_halves(table[a]) for a in halves})
    keys = [CELL_COLUMN, *attributes]
    grouped = table.groupby(keys, sort=False, observed=True, dropna=False)
    sums = [COUNT_COLUMN] + [c for c in table.columns if str(c).startswith(Z_SUM_COLUMN)]
    try:
        out = grouped[sums].sum().reset_index().astype(halves)
    except TypeError as err:  # unhashable values (lists, dicts): no levels, as in prepare
        unhashable = [a for a in attributes
                      if table[a].map(lambda v: not isinstance(v, Hashable)).any()]
        if not unhashable:
            raise
        raise _no_levels(table[unhashable[0]], list(table[unhashable[0]])) from err
    groups = grouped.ngroup().to_numpy(dtype=np.int64)
    for columns in extreme_columns(len(sums) - 1):
        if columns[0] not in table.columns:  # a table of counts only
            break
        for column, values in zip(columns, group_extremes(groups, table, columns, len(out)),
                                  strict=True):
            out[column] = values
    return out


def counts_from_table(
    table: pd.DataFrame,
    grid: Grid,
    attributes: Sequence[str],
    continuous: Sequence[str] | str | None = None,
    *,
    max_bytes: int = 2**31,
    allow_identifying: bool = False,
    records: Callable[[dict[str, list], np.ndarray], pd.DataFrame] | None = None,
) -> CellCounts:
    """Build :class:`CellCounts` from a count table of the kept records: the last step of prepare.

    Levels and combinations come from the rows that hold records (see the module docstring);
    a single-level attribute is warned about and a record-identifying one refused (counted
    with the rows' weights :data:`COUNT_COLUMN`), the sizes are checked, then ``counts`` and
    ``zbar`` are summed from the rows.

    Parameters
    ----------
    table : pandas.DataFrame
        A count table (:func:`locate_records` or :func:`count_table`) without the points in no
        cell: every :data:`CELL_COLUMN` value is a cell of ``grid``. Attribute columns keep the
        dtype of the input (a categorical's category order sets the level order).
    grid : geosynth.lattice.Grid
        The lattice the records were located in.
    attributes : sequence of str
        The attribute columns (checked by :func:`check_columns`).
    continuous : str or sequence of str, optional
        The continuous column(s), whose records' values are in the columns of
        :func:`z_sum_columns` (of ``table``, or of what ``records`` returns).
    max_bytes : int, default 2**31
        As for :func:`prepare`.
    allow_identifying : bool, default False
        As for :func:`prepare`.
    records : callable, optional
        Where each record lies, for a table whose rows count several records (from
        :func:`count_table`): called as ``records(levels, combo_codes)`` with the levels per
        attribute and the (B, K) attribute codes of the combinations, it returns a DataFrame
        with int64 columns ``cell`` and ``combo`` (row of ``combos``) and, with
        ``continuous``, each record's values in the columns of :func:`z_sum_columns`, one row
        per kept record in input order, indexed by the records' labels. None (default): the
        rows of ``table`` are the records themselves (each counts 1), and its index holds their
        labels. The cell means of ``continuous`` are taken from the records' values, clipped
        to their combination's fences (:func:`value_fences`), so they need every record's.

    Returns
    -------
    CellCounts

    Raises
    ------
    InputError
        More possible combinations than records; an identifying attribute (unless
        ``allow_identifying``); levels that cannot be sorted, or labelled alike (see
        :func:`prepare`); a row counts several records while ``records`` is None;
        ``records`` returned another number of records than the table counts.
    MemoryLimitError
        The (G, B) arrays would exceed ``max_bytes``.

    Warns
    -----
    DataWarning
        An attribute has a single level; an identifying attribute was kept with
        ``allow_identifying=True``.
    """
    attrs = tuple(attributes)
    weights = table[COUNT_COLUMN].to_numpy(dtype=np.int64)
    n_kept = int(weights.sum())
    if records is None and len(weights) != n_kept:
        raise InputError(
            "table has rows that count several records; pass records= to say where each "
            "record lies"
        )
    levels: dict[str, list] = {}
    codes = np.empty((len(table), len(attrs)), dtype=np.int64)
    boxes = _record_boxes(grid)
    for k, name in enumerate(attrs):
        levels[name], codes[:, k] = _levels_and_codes(table[name], weights, boxes)
        if len(levels[name]) == 1:
            warnings.warn(
                f"attribute {name!r} has a single level among the {n_kept} kept records, "
                "so its effect cannot be estimated; "
                "consider removing it from attributes (CLI: --attributes)",
                DataWarning,
                stacklevel=3,
            )
    sizes = {
        a: np.bincount(codes[:, k], weights=weights, minlength=len(levels[a])).astype(np.int64)
        for k, a in enumerate(attrs)
    }
    kept_identifying = _check_identifying(sizes, n_kept, allow_identifying)
    _warn_of_rare_levels(sizes, kept_identifying)
    _warn_of_small_levels(sizes, n_kept, kept_identifying)
    combo_codes, row_combo = _unique_rows(codes, [len(levels[a]) for a in attrs])
    n_cells, n_combos = int(grid.n_cells), len(combo_codes)
    covariates = covariate_names(continuous)
    _check_sizes(levels, n_kept, n_cells, n_combos, len(covariates), max_bytes)
    check_cells_per_record(grid, n_kept)
    n_per_combo = np.bincount(row_combo, weights=weights, minlength=n_combos).astype(np.int64)
    if len(attrs) > 1 and not _warn_of_identifying_combinations(n_per_combo, n_kept, attrs):
        _warn_of_unique_combinations(n_per_combo, combo_codes, attrs, sizes)

    row_cell = table[CELL_COLUMN].to_numpy(dtype=np.int64)
    flat = row_cell * n_combos + row_combo
    counts = np.bincount(flat, weights=weights, minlength=n_cells * n_combos)
    counts = counts.astype(np.int64).reshape(n_cells, n_combos)
    combos = _combos_frame(table, attrs, codes, combo_codes, n_per_combo)
    _check_labels(levels, lambda: combos)
    if records is None:
        located = table
        record_cell, record_combo, record_index = row_cell.copy(), row_combo, table.index
    else:
        located = records(levels, combo_codes)
        if len(located) != n_kept:
            raise InputError(
                f"records returned {len(located)} records, but the table counts {n_kept}; if "
                "the data is partitioned, persist it so that every pass sees the same records"
            )
        record_cell = located["cell"].to_numpy(dtype=np.int64)
        record_combo = located["combo"].to_numpy(dtype=np.int64)
        record_index = located.index
    missing = [c for c in z_sum_columns(len(covariates)) if c not in located.columns]
    if covariates and missing:
        raise InputError(
            f"{'table has' if records is None else 'records returned'} no column "
            f"{missing[0]!r}; with continuous= it must hold each record's values (in the "
            "columns of z_sum_columns), whose clipped cell means the counts hold"
        )
    zbar = mask = mean = sd = extremes = fences = None
    if covariates:
        record_pair = record_cell * n_combos + record_combo
        parts, fences, extremes = [], [], []
        for name, column in zip(covariates, z_sum_columns(len(covariates)), strict=True):
            values = located[column].to_numpy(dtype=np.float64)
            fences.append(value_fences(values, record_combo, n_combos))
            clipped = fenced_values(values, record_combo, fences[-1])
            _warn_of_clipped_values(name, values != clipped, record_combo)
            values = clipped
            sums = np.bincount(record_pair, weights=values,
                               minlength=n_cells * n_combos).reshape(n_cells, n_combos)
            _check_covariate_varies(name, sums, counts)
            parts.append(_standardise(sums, counts))
            extremes.append(_pair_extremes(record_pair, values, counts))
        mask = parts[0][1]
        if isinstance(continuous, str):
            zbar, _, mean, sd = parts[0]
            extremes, fences = extremes[0], fences[0]
        else:  # one standardisation per covariate, stacked on a leading axis
            zbar, mean, sd = (np.stack([part[j] for part in parts]) for j in (0, 2, 3))
            extremes, fences = np.stack(extremes), np.stack(fences)
        continuous = continuous if isinstance(continuous, str) else covariates
    return CellCounts(
        counts=counts,
        combos=combos,
        record_cell=record_cell,
        record_combo=record_combo,
        record_index=record_index,
        attributes=attrs,
        levels=levels,
        continuous=continuous,
        zbar=zbar,
        zbar_mask=mask,
        zbar_mean=mean,
        zbar_sd=sd,
        grid=grid,
        z_extremes=extremes,
        z_fences=fences,
    )


def _pair_extremes(record_pair: np.ndarray, values: np.ndarray, counts: np.ndarray
                   ) -> np.ndarray:
    """``z_extremes`` of one covariate from its records' (fenced) values: (2, G, B)."""
    pairs, groups = np.unique(record_pair, return_inverse=True)
    high1, high2, low1, low2 = EXTREME_COLUMNS
    rows = pd.DataFrame({COUNT_COLUMN: np.ones(values.size, dtype=np.int64), high1: values,
                         high2: -np.inf, low1: values, low2: np.inf})
    top, second, bottom, next_up = group_extremes(groups, rows, EXTREME_COLUMNS, pairs.size)
    out = np.full((2, counts.size), np.nan)
    several = counts.reshape(-1)[pairs] >= 2
    out[0, pairs[several]] = (top + second)[several]
    out[1, pairs[several]] = (bottom + next_up)[several]
    return out.reshape(2, *counts.shape)


def value_fences(values: np.ndarray, combo: np.ndarray, n_combos: int) -> np.ndarray:
    """Bounds at which each record's continuous value is winsorised: (2, B), low and high.

    Tukey's (1977, §2H) far-out fences ``[Q1 − 3·IQR, Q3 + 3·IQR]`` (:data:`VALUE_FENCE`
    IQRs) of the values of each combination of :data:`FENCED_MIN_RECORDS` or more records
    (quartiles by linear interpolation, numpy's default), widened to those of its values at
    10 % and 90 % (the first of :data:`FENCE_QUANTILES`) where they lie further out:
    ``[v_r − k·R, v_{n−1−r} + k·R]`` of the sorted values, ``r = ⌈p·(n − 1)⌉``,
    ``R = v_{n−1−r} − v_r``, with the ``k`` that puts a normal's fences where Tukey's are
    (4.72 SDs out; ``k = 1.34`` at 10 %). The quartiles of a skewed or mostly-zero column
    describe its bulk only: with 15 zeros and 5 positive values, ``Q3 + 3·IQR`` was the
    smallest positive value, and clipped the other four. Where both pairs coincide (a count
    that is mostly 0), the next of :data:`FENCE_QUANTILES` that differ stands in, and last the
    third smallest and third largest values; where all coincide, every value is clipped to the
    common one (its other values are one or two at each end, and a cell mean would publish
    them).

    No fence depends on a value it clips. Only ranks that leave each end's two most extreme
    values out are used (``r >= 2``), and the wider pairs are values themselves, not
    interpolated, with ``k >= 0`` (the third largest of 1.8 million values lies beyond
    Tukey's 4.72 SDs, where ``k`` was negative and the fences fell inside the values that set
    them): a value inside a fence is never clipped, and one beyond it enters no fence.
    A spread that counted every value (a mean absolute deviation) let a fence grow with the
    value it clipped, and an interpolated 10 % quantile gave a clipped value a weight of 0.1 in
    its fence: an attacker solved for the value exactly from either. (The quartiles
    interpolate with weights 0, ¼, ½ or ¾, and a value weighted ¼ or more in Q3 lies within
    ``Q3 + 3·IQR``; from 12 records on, the 10 % and 90 % values enclose every value the
    quartiles weigh.) Values far out at more than 10 % of a combination's records at one end
    carry its wider fences out with them (more than a quarter, its quartiles'); the rules on
    the cell means then judge them alone.
    ``-inf`` and ``inf`` for a smaller combination: its own cell means are never the centres
    of synthetic values (a cell of :data:`~geosynth.synth.paiva.MIN_RECORDS_FOR_VALUES`
    records in each of :data:`~geosynth.synth.paiva.MIN_JUDGED_CELLS` cells are needed), and
    the quartiles of a few values are one or two of them.

    A record's value is clipped to its combination's fences before any cell mean is taken
    (:func:`fenced_values`), so that no record moves its cell's mean further than a value at
    the fence would: every cell mean is published through the synthetic values centred on it
    (Nunes 2018, eq. 2.27), and the releases' average over a cell gave back a value 13 SDs out
    in a cell of 7 within 4 % (an attacker's 7 × mean − 6 × a typical value), where the rules
    judging the cell means (:func:`geosynth.synth.paiva.outlying_means`) did not flag it: a
    value 6–13 SDs out was withheld in 11 of 30 plantings. Clipped at the fence, such a value
    gives back only the fence: that the record lies beyond it, as top-coding publishes.

    The cost (simulated, 1,000-2,000 combinations each): of normal values, one in 400,000
    lies beyond the fences of their distribution, but the quantiles of few values are
    unsteady: 0.9 % of the values of combinations of 9 records were clipped, 0.01 % of 30, and
    the means stayed unbiased. A skewed column loses some of its long tail: 2-4 % of
    lognormal(σ = 1) values were clipped, lowering the means by 4-6 % (exponential: 0.5-2.6 %,
    by 0.5-2.4 %). A column mostly of one value has its rare others clipped near it: with 75 %
    zeros, 17-26 % of the other (exponential or lognormal) values of combinations of 20-50
    records, and with 90 % zeros about half. Transform such a column (a logarithm), or split
    off its common value as an attribute, before :func:`prepare`; the :class:`DataWarning` of
    :func:`prepare` says how many values were clipped.

    Parameters
    ----------
    values : numpy.ndarray of float64, shape (n,)
        Each record's value.
    combo : numpy.ndarray of int64, shape (n,)
        Each record's combination, in ``[0, n_combos)``.
    n_combos : int
        Number of combinations B.

    Returns
    -------
    numpy.ndarray of float64, shape (2, B)
    """
    order = np.lexsort((values, combo))
    v, c = values[order], combo[order]
    start = np.searchsorted(c, np.arange(n_combos))
    size = np.searchsorted(c, np.arange(n_combos), side="right") - start
    fences = np.tile(np.array([[-np.inf], [np.inf]]), (1, n_combos))
    fenced = np.flatnonzero(size >= FENCED_MIN_RECORDS)
    if fenced.size == 0:
        return fences
    first, n = start[fenced], size[fenced]

    reach = ndtri(0.75) * (1.0 + 2.0 * VALUE_FENCE)  # Tukey's far-out fence, in SDs

    def inner_fences(low_at: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Fences of the values at ranks low_at and n - 1 - low_at, scaled as Tukey's."""
        low, high = v[first + low_at], v[first + n - 1 - low_at]
        z = ndtri(1.0 - low_at / (n - 1))  # beyond Tukey's reach (n > 1.7 million): no width
        width = np.maximum((reach - z) / (2.0 * z), 0.0) * (high - low)
        return low - width, high + width

    q1, q3 = (_linear_quantile(v, first, n, p) for p in (0.25, 0.75))
    low, high = q1 - VALUE_FENCE * (q3 - q1), q3 + VALUE_FENCE * (q3 - q1)
    ranks = [np.ceil(p * (n - 1) - 1e-9).astype(np.int64) for p in FENCE_QUANTILES]
    wider = ranks[0] >= 2  # the 10 % and 90 % values, where the two at each end stay out
    decile_low, decile_high = inner_fences(np.where(wider, ranks[0], 2))
    low = np.where(wider, np.minimum(low, decile_low), low)
    high = np.where(wider, np.maximum(high, decile_high), high)
    for rank in ranks[1:] + [np.full(n.shape, 2)]:  # values tie down to the 10 %: further out
        use = (high == low) & (rank >= 2)
        if use.any():
            step_low, step_high = inner_fences(np.where(use, rank, 2))
            low, high = np.where(use, step_low, low), np.where(use, step_high, high)
    fences[0, fenced], fences[1, fenced] = low, high
    return fences


def _linear_quantile(v: np.ndarray, first: np.ndarray, n: np.ndarray, p: float) -> np.ndarray:
    """Quantile ``p`` of each run ``v[first:first + n]`` of sorted values (numpy's linear)."""
    h = p * (n - 1)
    k = np.floor(h).astype(np.int64)
    low, high = v[first + k], v[first + np.minimum(k + 1, n - 1)]
    return low + (h - k) * (high - low)


def _warn_of_clipped_values(name: str, clipped: np.ndarray, combo: np.ndarray) -> None:
    """DataWarning of how many values of ``name`` were clipped to their fences, and where.

    For the curator: it names no value and no fence.
    """
    if not clipped.any():
        return
    warnings.warn(
        f"{int(clipped.sum())} of {clipped.size} values of continuous column {name!r} (in "
        f"{np.unique(combo[clipped]).size} attribute combination(s)) lie beyond the far-out "
        "fences of their combination's values (Q1 - 3 IQR, Q3 + 3 IQR, or wider) and were "
        "clipped to them before the cell means, so that the releases do not give a far value "
        "back; to choose the bound yourself, top-code the column (or transform a skewed one) "
        "before prepare (CLI: in the input file)",
        DataWarning,
        stacklevel=4,
    )


def fenced_values(values: np.ndarray, combo: np.ndarray, fences: np.ndarray) -> np.ndarray:
    """Return each record's value clipped to its combination's fences (:func:`value_fences`).

    Parameters
    ----------
    values : numpy.ndarray of float64, shape (n,)
    combo : numpy.ndarray of int64, shape (n,)
        Each record's combination.
    fences : numpy.ndarray of float64, shape (2, B)

    Returns
    -------
    numpy.ndarray of float64, shape (n,)
    """
    return np.clip(values, fences[0][combo], fences[1][combo])


def _unique_rows(codes: np.ndarray, sizes: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(codes, axis=0, return_inverse=True)`` of level codes, by flat index.

    Rows of codes in ``[0, sizes[k])`` sort as their C-order flat indices do, so the unique
    flat indices give the same rows in the same (lexicographic) order. ``axis=0`` sorts rows
    through a structured view: 16 s of a 14.7 s ``prepare`` of a million records (0.1 s so).
    Falls back to it when the flat index would overflow int64.

    Returns
    -------
    combo_codes : numpy.ndarray of int64, shape (B, K)
    row_combo : numpy.ndarray of int64, shape (len(codes),)
    """
    if len(sizes) == 0 or math.prod(sizes) >= 2**62:
        unique, inverse = np.unique(codes, axis=0, return_inverse=True)
        return unique, inverse.reshape(-1).astype(np.int64)
    flat, inverse = np.unique(np.ravel_multi_index(tuple(codes.T), sizes), return_inverse=True)
    unique = np.column_stack(np.unravel_index(flat, sizes)).astype(np.int64, copy=False)
    return unique, inverse.reshape(-1).astype(np.int64)


def _check_allow_identifying(allow_identifying: Any) -> None:
    check_bool(allow_identifying, "allow_identifying")


def is_identifying(sizes: np.ndarray, n_records: int) -> bool:
    """Tell whether an attribute with ``sizes`` records per level (nearly) identifies records.

    The rules of the module docstring ("Record-identifying attributes").

    Parameters
    ----------
    sizes : numpy.ndarray of int
        Records per level (zeros are ignored).
    n_records : int
        All records.

    Returns
    -------
    bool
    """
    n_levels = int(np.count_nonzero(sizes))
    n_singletons = int(np.count_nonzero(sizes == 1))
    nearly_unique = (
        n_records >= IDENTIFYING_MIN_RECORDS and n_levels > IDENTIFYING_LEVEL_SHARE * n_records
    )
    many_singletons = (
        n_singletons >= IDENTIFYING_MIN_SINGLETONS
        and n_singletons > IDENTIFYING_SINGLETON_SHARE * n_records
    )
    unique = n_records >= 2 and n_singletons == n_records
    return nearly_unique or many_singletons or unique


def identifying_levels(values: pd.Series, name: Hashable | None = None) -> str | None:
    """Describe ``values`` if their levels identify records (:func:`identifies_records`).

    Parameters
    ----------
    values : pandas.Series
        One column of the records (NaN counts as a level).
    name : hashable, optional
        The column's name, for the rule on names like an identifier's (None: levels only).

    Returns
    -------
    str or None
        ``"<levels> levels among <n> records, <k> of them held by a single record"`` (and
        ``", and is named like a record identifier"`` when the name counted), else None.
    """
    sizes = values.value_counts(dropna=False).to_numpy()
    if not identifies_records(sizes, len(values), name):
        return None
    named = name is not None and is_identifier_name(name)
    return (f"{sizes.size:,} levels among {len(values):,} records, "
            f"{int((sizes == 1).sum()):,} of them held by a single record"
            f"{', and is named like a record identifier' * named}")


#: An integer column with more distinct values than this share of its records is judged as an
#: identifier by the level rules (:func:`describe_identifier`); fewer, it is a measurement.
NEARLY_UNIQUE_SHARE = 0.9
# Floats at or beyond 2**53 are all whole numbers; below it a whole-number float column is an
# integer column stored as floats.
_WHOLE_FLOAT_LIMIT = 2.0**53


def _whole_number_floats(values: pd.Series) -> bool:
    """Tell whether a float column holds whole numbers only, each below ``2**53`` in magnitude.

    NaN and inf are left to the later checks. Beyond ``2**53`` every float is whole, so a
    column reaching that far is a measurement, not an integer stored as floats.
    """
    if not pd.api.types.is_float_dtype(values.dtype):
        return False
    numbers = values.to_numpy(dtype=np.float64, na_value=np.nan)
    finite = numbers[np.isfinite(numbers)]
    return (finite.size > 0 and bool(np.all(np.abs(finite) < _WHOLE_FLOAT_LIMIT))
            and bool(np.all(finite == np.round(finite))))


def describe_identifier(values: pd.Series, name: Hashable) -> tuple[str, str] | None:
    """``(kind, description)`` of a numeric column that identifies records, else None.

    An integer column by the rules of :func:`geosynth.data.identifying_levels` when nearly
    every record holds its own value (:data:`NEARLY_UNIQUE_SHARE`: an ID with one value typed
    twice too) or its name is an identifier's. The level rules alone, meant for categories,
    took a measurement for an ID in a small table: 50 people's ages in years span more levels
    than half the records. A float column of whole numbers only (an integer ID
    stored as floats: read from a CSV with a blank cell, or after a join) when every record
    holds its own value: a continuous measurement rounded to whole units (income in dollars)
    repeats, an ID never does. Other columns: None (text and categories are judged by
    :func:`identifying_levels`; a continuous measurement is distinct for every record without
    being an identifier).

    Parameters
    ----------
    values : pandas.Series
        One column of the records.
    name : hashable
        The column's name.

    Returns
    -------
    (str, str) or None
        ``("integer" or "whole-number float", description)``, else None.
    """
    if pd.api.types.is_integer_dtype(values.dtype):
        nearly_unique = values.nunique(dropna=False) > NEARLY_UNIQUE_SHARE * len(values)
        if not (nearly_unique or is_identifier_name(name)):
            return None  # a measurement or a count repeats: ages, rooms
        described = identifying_levels(values, name)
        return None if described is None else ("integer", described)
    n = len(values)
    if n < 2 or not _whole_number_floats(values):
        return None
    if values.nunique(dropna=False) < n:  # a measurement repeats; an ID by its name does too
        described = identifying_levels(values, name) if is_identifier_name(name) else None
        return None if described is None else ("whole-number float", described)
    return "whole-number float", f"{n:,} distinct values among {n:,} records"


def identifies_records(sizes: np.ndarray, n_records: int, name: Hashable | None = None) -> bool:
    """Tell whether an attribute identifies records: the one rule of prepare and the SDC tools.

    By its levels (:func:`is_identifying`), or by its name (:func:`is_identifier_name`) with
    most records in levels of fewer than :func:`name_bound` records (``patient_id`` over three
    visits each passes the level rules; over five or ten visits, a dialysis patient's, it
    passed a bound of :data:`SMALL_LEVEL_RECORDS` too, and every MRN was published
    verbatim). An area's code (``ID_MUNICIP``, 150 records a level) is not a record's.

    Parameters
    ----------
    sizes : numpy.ndarray of int
        Records per level (zeros are ignored).
    n_records : int
        All records.
    name : hashable, optional
        The attribute's name (None: the level rules only).

    Returns
    -------
    bool
    """
    return is_identifying(sizes, n_records) or (
        name is not None and is_identifier_name(name)
        and bool(_in_small_levels(sizes, n_records, name_bound(name))))


def name_bound(name: Hashable) -> int:
    """Return the records a level needs for an attribute named like an identifier to pass.

    :data:`IDENTIFYING_MIN_RECORDS` for a person's or a record's identifier
    (:func:`~geosynth._identifiers.names_a_record`: ``patient_id``, ``mrn``), whose levels
    name a few records (a dialysis patient's ten visits); :data:`SMALL_LEVEL_RECORDS` for a
    facility's or an area's (``clinic_id``, ``ward_no``: eight patients a clinic is a group).
    """
    return IDENTIFYING_MIN_RECORDS if names_a_record(name) else SMALL_LEVEL_RECORDS


def _warn_of_rare_levels(sizes: dict[str, np.ndarray], skipped: list[str]) -> None:
    """PrivacyLeakWarning for attributes with levels of fewer than :data:`RARE_LEVEL_RECORDS`.

    Such attributes pass :func:`is_identifying` (a rare category among many records), but a
    release publishes every level verbatim: a level held by one record (a rare diagnosis, a
    name typed into a category column) tells that such a record is in the data. The message
    counts the rare levels and does not quote them. Not repeated for the ``skipped``
    attributes (identifying ones kept with ``allow_identifying``, warned about already).
    """
    rare = {a: int(np.count_nonzero((per_level > 0) & (per_level < RARE_LEVEL_RECORDS)))
            for a, per_level in sizes.items()}
    described = [f"{a!r} ({k} level{'s' if k > 1 else ''})" for a, k in rare.items()
                 if k and a not in skipped]
    if described:
        warnings.warn(
            f"attribute(s) {', '.join(described)} have levels held by fewer than "
            f"{RARE_LEVEL_RECORDS} records; a release publishes each level verbatim, so a rare "
            "level can single out its records: merge rare levels into broader ones (e.g. "
            "'other') unless they are public and harmless",
            PrivacyLeakWarning,
            stacklevel=4,  # the caller of prepare (through counts_from_table)
        )


def _in_small_levels(per_level: np.ndarray, n_records: int,
                     below: int = SMALL_LEVEL_RECORDS) -> int:
    """Count the records in levels of fewer than ``below`` records, if most are; else 0.

    From :data:`IDENTIFYING_MIN_RECORDS` records (fewer: 0). Most: more than half.
    """
    in_small = int(per_level[(per_level > 0) & (per_level < below)].sum())
    return in_small if n_records >= IDENTIFYING_MIN_RECORDS and in_small > n_records / 2 else 0


def _warn_of_small_levels(sizes: dict[str, np.ndarray], n_records: int,
                          skipped: list[str]) -> None:
    """PrivacyLeakWarning for attributes whose levels hold small groups of records.

    Most records (more than half, from :data:`IDENTIFYING_MIN_RECORDS` records) in levels of
    fewer than :data:`SMALL_LEVEL_RECORDS` records: a patient's id over three visits each has
    no level of one record and fewer levels than half the records, so it passes
    :func:`is_identifying`, yet each level is published verbatim and names its records. Not
    repeated for the ``skipped`` attributes (identifying ones, warned about already).
    """
    small = {a: (_in_small_levels(per_level, n_records), int(np.count_nonzero(per_level)))
             for a, per_level in sizes.items() if a not in skipped}
    small = {a: v for a, v in small.items() if v[0]}
    if small:
        described = ", ".join(f"{a!r} ({k:,} of the {n_records:,} records, {m:,} levels)"
                              for a, (k, m) in small.items())
        warnings.warn(
            f"attribute(s) {described}: most records share their level with fewer than "
            f"{SMALL_LEVEL_RECORDS - 1} others; a release publishes each level verbatim, so "
            "levels this small name groups of records, as an id repeated over a person's few "
            "visits does: drop such a column or merge its levels into broader groups",
            PrivacyLeakWarning,
            stacklevel=4,  # the caller of prepare (through counts_from_table)
        )


def _warn_of_unique_combinations(n_per_combo: np.ndarray, combo_codes: np.ndarray,
                                 attributes: tuple[Hashable, ...],
                                 sizes: dict[str, np.ndarray]) -> None:
    """PrivacyLeakWarning for combinations held by a single record of no single-record level.

    As :func:`_warn_of_rare_levels` for one attribute: one woman among 100 HIV records passes
    every per-attribute rule, and each release publishes her combination, telling that she is
    in the data. Counted, never quoted; a combination one of whose levels holds one record
    only is left to :func:`_warn_of_rare_levels`, which has warned of it already.
    """
    alone_in_a_level = np.zeros(n_per_combo.shape, dtype=bool)
    for k, attribute in enumerate(attributes):
        alone_in_a_level |= sizes[attribute][combo_codes[:, k]] == 1
    unique = int(np.count_nonzero((n_per_combo == 1) & ~alone_in_a_level))
    if unique == 0:
        return
    warnings.warn(
        f"{unique:,} combination(s) of attributes {list(attributes)} are held by a single "
        "record; a release publishes each record's combination verbatim, so such a "
        "combination singles out its record: use fewer attributes or merge levels into "
        "broader ones unless the combinations are public and harmless",
        PrivacyLeakWarning,
        stacklevel=4,  # the caller of prepare (through counts_from_table)
    )


def _warn_of_identifying_combinations(
    sizes: np.ndarray, n_records: int, attributes: tuple[Hashable, ...]
) -> bool:
    """PrivacyLeakWarning when the combinations of the attributes (nearly) identify records.

    Each attribute alone may pass :func:`is_identifying` while their combinations single out
    records (8 x 5 levels over 40 records, one record each): a release publishes each
    record's combination verbatim. Warned about, not refused (see the module docstring).
    """
    if not is_identifying(sizes, n_records):
        return
    warnings.warn(
        f"the combinations of attributes {list(attributes)} (nearly) identify records: "
        f"{int(np.count_nonzero(sizes)):,} combinations among {n_records:,} records, "
        f"{int(np.count_nonzero(sizes == 1)):,} of them held by a single record; a release "
        "publishes each record's combination verbatim, so use fewer attributes or merge "
        "levels into broader ones",
        PrivacyLeakWarning,
        stacklevel=4,  # the caller of prepare (through counts_from_table)
    )
    return True


def _check_identifying(
    sizes: dict[str, np.ndarray], n_records: int, allow_identifying: bool
) -> list[str]:
    """Refuse (or, when allowed, warn about) attributes whose levels identify records.

    By :func:`identifies_records`: the writers let a fitted model's attribute through under
    any name.

    Returns the identifying attributes kept (``allow_identifying``; none otherwise).
    """
    flagged = [a for a, per_level in sizes.items()
               if identifies_records(per_level, n_records, a)]
    if not flagged:
        return flagged
    described = "; ".join(
        f"attribute {a!r} has {int(np.count_nonzero(sizes[a])):,} distinct levels among "
        f"{n_records:,} records, {int(np.count_nonzero(sizes[a] == 1)):,} of them held by a "
        f"single record{', and is named like a record identifier' * is_identifier_name(a)}"
        for a in flagged
    )
    names = ", ".join(repr(a) for a in flagged)
    if allow_identifying:
        warnings.warn(
            f"{described}: kept because allow_identifying=True, so its levels are published "
            "verbatim with the synthetic records",
            DataWarning,
            stacklevel=4,  # the caller of prepare (through counts_from_table)
        )
        return flagged
    raise InputError(
        f"{described}; such levels (nearly) identify records (a name like an identifier's "
        f"with most records in levels of fewer than {SMALL_LEVEL_RECORDS}, or "
        f"{IDENTIFYING_MIN_RECORDS} for a person's or record's (patient_id, mrn), "
        f"more levels than {IDENTIFYING_LEVEL_SHARE:.0%} of the records, or over "
        f"{IDENTIFYING_SINGLETON_SHARE:.0%} of the records alone in their level, or every "
        "record alone in its level), and a release "
        f"would publish them verbatim. Drop the column {names}, or coarsen it into groups "
        "(e.g. bands of numbers (in Python, pd.cut), a prefix for codes); pass "
        "allow_identifying=True "
        "(CLI: --allow-identifying) only if its levels are public and not linkable"
    )


def _check_sizes(
    levels: dict[str, list],
    n_records: int,
    n_cells: int,
    n_combos: int,
    n_covariates: int,
    max_bytes: int,
) -> None:
    _check_combinations(levels, n_records)
    _check_memory(n_cells, n_combos, n_covariates, max_bytes)


#: Cells per record beyond which a lattice is refused (from :data:`MIN_CELLS_CHECKED` cells):
#: with 99 % of the cells empty the lattice is far finer than the data (often a cell size in
#: the wrong unit or a typo), not a design.
MAX_CELLS_PER_RECORD = 100
#: Cells per record beyond which a lattice gets a DataWarning (from :data:`MIN_CELLS_CHECKED`
#: cells, up to :data:`MAX_CELLS_PER_RECORD`): at least 95 % of the cells empty.
WARN_CELLS_PER_RECORD = 20
#: Lattices of fewer cells are never refused or warned of for their cells per record.
MIN_CELLS_CHECKED = 10_000


def check_cells_per_record(grid: Grid, n_records: int) -> None:
    """Refuse a lattice of over :data:`MAX_CELLS_PER_RECORD` cells per record (not under DP).

    844,545 cells of 10 m for 400 records (2,111 per record) were prepared without a word: the
    fit then ran at 4 s per sweep, for hours, and its releases, with every record alone in a
    10 m cell, would place synthetic points next to the records' own cells. The model of
    Paiva et al. (2014) pools counts between neighbouring cells; it assumes cells that hold
    records, a few per cell in their examples. The message suggests the cell size of about one
    record per cell for square and hexagonal lattices. Between
    :data:`WARN_CELLS_PER_RECORD` and :data:`MAX_CELLS_PER_RECORD` cells per record the lattice
    is prepared with a :class:`~geosynth.errors.DataWarning` that says the same and points to
    ``geosynth tune``, which compares cell sizes by disclosure risk and utility. (Not called
    when a lattice is prepared on a public domain: the decision would depend on the number of
    records.)

    Parameters
    ----------
    grid : geosynth.lattice.Grid
        The lattice.
    n_records : int
        Records located in it.

    Raises
    ------
    geosynth.errors.InputError
        The lattice has at least :data:`MIN_CELLS_CHECKED` cells and more than
        :data:`MAX_CELLS_PER_RECORD` per record.

    Warns
    -----
    geosynth.errors.DataWarning
        The lattice has at least :data:`MIN_CELLS_CHECKED` cells and more than
        :data:`WARN_CELLS_PER_RECORD` per record (and not more than
        :data:`MAX_CELLS_PER_RECORD`).
    """
    n_cells = int(grid.n_cells)
    if n_cells < MIN_CELLS_CHECKED or n_cells <= WARN_CELLS_PER_RECORD * max(n_records, 1):
        return
    ratio = n_cells / max(n_records, 1)
    size = (f"the lattice has {n_cells:,} cells for {n_records:,} records ({ratio:,.0f} cells "
            "per record")
    if n_cells <= MAX_CELLS_PER_RECORD * max(n_records, 1):
        warnings.warn(
            f"{size}): at least {1 - 1 / WARN_CELLS_PER_RECORD:.0%} of the cells will be "
            "empty, the fit is slow for the data it has, and the finer the cells the closer "
            f"synthetic points fall to the records; {_coarser_cells(grid, ratio)}, or compare "
            "cell sizes by disclosure risk and utility with `geosynth tune`",
            DataWarning, stacklevel=4)
        return
    raise InputError(
        f"{size}, more than {MAX_CELLS_PER_RECORD:,}): almost every cell would be empty, the "
        "fit would take hours, and with each record alone in a tiny cell the releases would "
        f"place synthetic points next to the records; {_coarser_cells(grid, ratio)}"
    )


def _coarser_cells(grid: Grid, ratio: float) -> str:
    """Return the fix for ``ratio`` cells per record: cells of about one record each."""
    if grid.kind == "areal":
        return "give fewer, larger areas"
    side = grid.cell_size[0] * math.sqrt(ratio)
    digits = 10 ** math.floor(math.log10(side))
    suggested = math.ceil(side / digits) * digits
    option = "--hex-size" if grid.kind == "hexagonal" else "--cell-size"  # squares otherwise
    return (f"choose larger cells, e.g. cell_size={suggested:g} (CLI: {option}), about "
            "one record per cell, or a few (check the unit: metres of the grid CRS)")


def _check_combinations(levels: dict[str, list], n_records: int) -> None:
    """Refuse more possible combinations of the observed levels than records (not under DP)."""
    possible = math.prod(len(v) for v in levels.values())
    if possible > n_records:
        sizes = " x ".join(f"{len(v)} ({a})" for a, v in levels.items())
        raise InputError(
            f"attributes have {sizes} = {possible} possible combinations but only {n_records} "
            "records; most combinations would be empty or hold single records: use fewer "
            "attributes or merge levels"
        )


#: Peak bytes per combination and attribute while :func:`domain_combos` builds a declared
#: domain's table (53 measured with tracemalloc at 10⁶ combinations of two attributes).
_COMBO_BYTES = 56


def _check_memory(n_cells: int, n_combos: int, n_covariates: int, max_bytes: int,
                  n_attributes: int = 0) -> None:
    """Refuse (G, B) arrays over ``max_bytes``, with a declared domain's combinations table.

    ``n_attributes`` > 0 counts the table :func:`domain_combos` builds for a declared domain:
    its size is the product of the declared levels, not bounded by the records (a domain of
    2.7e8 combinations on one cell passed the counts' check and needed some 30 GB).
    """
    per_pair = 8 + (1 + 24 * n_covariates if n_covariates else 0)
    needed = n_cells * n_combos * per_pair + n_combos * n_attributes * _COMBO_BYTES
    if needed > max_bytes:
        arrays = "counts, zbar, z_extremes and zbar_mask" if n_covariates else "counts"
        arrays += " and combinations" if n_attributes else ""
        raise MemoryLimitError(
            f"the {arrays} arrays for {n_cells} cells x {n_combos} combinations need "
            f"{needed:,} bytes ({needed / 2**30:.2f} GiB), more than max_bytes={max_bytes:,}; "
            "use a coarser grid, fewer attributes, or raise max_bytes"
        )


def _combos_frame(
    frame: pd.DataFrame,
    attrs: tuple[str, ...],
    codes: np.ndarray,
    combo_codes: np.ndarray,
    n_per_combo: np.ndarray,
) -> pd.DataFrame:
    """Build the ``combos`` table: each combination's levels (dtypes kept), codes and records.

    A level is written as its first row holds it, the value :func:`_levels_and_codes` keeps in
    ``levels``: values equal to it but written otherwise (``2.0`` in an object column whose
    first ``2`` is an int) read as that one level in every combination.
    """
    columns: dict[Hashable, Any] = {}
    for k, name in enumerate(attrs):
        level_rows = np.unique(codes[:, k], return_index=True)[1]  # first row of each code
        values = frame[name].iloc[level_rows[combo_codes[:, k]]].reset_index(drop=True)
        if isinstance(values.dtype, pd.CategoricalDtype):  # categories = the observed levels
            values = values.cat.remove_unused_categories()
        columns[name] = values
        columns[f"{name}_code"] = combo_codes[:, k].astype(np.int64)
    columns["n_records"] = n_per_combo.astype(np.int64)
    return pd.DataFrame(columns, index=pd.RangeIndex(len(combo_codes)))


def _check_covariate_varies(name: str, sums: np.ndarray, counts: np.ndarray) -> None:
    """Refuse a continuous column whose cell means are one value, or differ by too little.

    "Too little": their differences' squares underflow to 0. A constant column was prepared and
    fitted (its β confounded with the intercept) and refused only by :func:`geosynth.synthesize`, as
    "one cell mean for every record"; values of the order of 1e-310 got the same message. From the
    cell sums, so a partitioned preparation checks the whole column. The message names no value.
    """
    held = counts > 0
    if held.sum() < 2:
        return
    means = sums[held] / counts[held]
    spread = float(means.max() - means.min())
    if spread == 0.0:
        raise InputError(
            f"continuous column {name!r} has the same value in every record (every cell mean "
            "is one value): a covariate must vary for its effect to be estimated, and its "
            "synthetic values would publish that value; drop it from continuous="
        )
    if spread < math.sqrt(np.finfo(np.float64).tiny):  # their squares underflow to 0
        raise InputError(
            f"continuous column {name!r} varies by less than 1e-154 between cells, too little "
            "for the squares of its deviations to be represented; rescale it (e.g. multiply "
            "it by a power of ten)"
        )
    if spread < _MIN_RELATIVE_SPREAD * float(np.abs(means).max()):
        # 37.25 ± 1e-9: standardised, the jitter became the covariate (β fitted on rounding
        # noise), and every synthetic value was 37.25, the value a constant column is refused
        # for publishing.
        raise InputError(
            f"continuous column {name!r} varies between cells by less than "
            f"{_MIN_RELATIVE_SPREAD:g} of its values: in effect one value, which its synthetic "
            "values would publish, and a spread of rounding noise, which its effect would be "
            "fitted on; drop it from continuous= (or subtract its common value first if the "
            "differences are real)"
        )


# The smallest spread of a continuous column's cell means relative to their size
# (_check_covariate_varies): a float32 column carries 7 digits, a float64 one 16.
_MIN_RELATIVE_SPREAD = 1e-8


def _standardise(
    sums: np.ndarray, counts: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Standardise raw cell means of Z within each combination (Nunes 2018, §2.2.1)."""
    mask = counts > 0
    raw = np.divide(sums, counts, out=np.zeros_like(sums), where=mask)
    n_nonempty = mask.sum(axis=0)  # >= 1: every combination is present in some cell
    mean = raw.sum(axis=0) / n_nonempty
    centred = np.where(mask, raw - mean, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        sd = np.sqrt((centred**2).sum(axis=0) / (n_nonempty - 1))
    scale = np.abs(raw).max(axis=0)
    degenerate = (n_nonempty < 2) | ~np.isfinite(sd) | (sd <= _SD_RTOL * scale)
    sd = np.where(degenerate, 1.0, sd)
    return centred / sd, mask, mean, sd
