"""Example data: the Nunes (2018) simulation scenario and the Berlin listings shipped with libpysal.

:func:`paiva_scenario` reproduces the simulated confidential data of Nunes (2018), §3.1
(Tables 1-3, eq. 3.1) with the continuous variable of §4 (eq. 4.1), and knows the true
intensity that generated the locations (:meth:`PaivaScenario.true_intensity`), so model fits can
be scored against the truth.

:func:`berlin_listings` loads the Prenzlauer Berg (Berlin) AirBnB listings that libpysal ships
(``libpysal/examples/berlin``), read from the installed package without network access.

:func:`susep_collisions` loads the 107 SUSEP Ford Fusion collisions by driver sex and age band
that Marcolin (2018, Table 4.1) synthesizes with the Dirichlet-multinomial synthesizer.
"""

from __future__ import annotations

import importlib.resources
import math
import numbers
import warnings
from dataclasses import dataclass
from typing import Any, NamedTuple

import geopandas as gpd
import numpy as np
import pandas as pd
import pyogrio
import pyproj
import shapely
from scipy import sparse
from scipy.stats import multivariate_normal

from geosynth._areas import pair_batches, ranks_in_runs
from geosynth._messages import format_bytes
from geosynth._random import SeedLike, as_generator
from geosynth._validation import check_bool, check_max_bytes, check_positive, check_unique_columns
from geosynth.errors import CRSError, DataWarning, InputError, MemoryLimitError
from geosynth.lattice import Grid, parse_crs

__all__ = [
    "PaivaScenario",
    "paiva_scenario",
    "BerlinListings",
    "berlin_listings",
    "TABLE3",
    "BERLIN_ACCOMMODATES_BANDS",
    "BERLIN_BEDROOMS_BANDS",
    "susep_collisions",
    "MAX_RECORDS",
    "MAX_GENERATING_CELLS",
    "SCENARIO_MAX_BYTES",
    "scenario_bytes",
]

# --------------------------------------------------------------------------------------------
# Nunes (2018) §3.1 / §4
# --------------------------------------------------------------------------------------------

#: Side of the thesis study square [0, 10] x [0, 10] (thesis units).
_SQUARE = 10.0
#: The most records paiva_scenario simulates (about 3.7 GiB at its peak: see
#: :func:`scenario_bytes`; more than the default ``max_bytes`` allows).
MAX_RECORDS = 10**7
#: The default ``max_bytes`` of :func:`paiva_scenario`: about 5 million records. 10 million
#: (3.7 GiB at the peak) ended in a raw MemoryError under a 4 GB memory limit.
SCENARIO_MAX_BYTES = 2 * 2**30
#: Peak bytes per record of paiva_scenario: its shapely point (about 200 bytes), coordinates,
#: attributes and their random draws. 355-370 measured (Linux, peak resident size, 1 to 3
#: million records), rounded up.
_BYTES_PER_RECORD = 400
#: Peak bytes per cell of the generating grid (its probabilities and their cumulative sums):
#: 250 measured at a million cells, rounded up.
_BYTES_PER_GENERATING_CELL = 256
#: A generating cell must be this many float64 spacings of its coordinates wide, so that the
#: uniform points inside it are not rounded onto a few positions.
_RESOLUTION = 1000
#: The most cells of paiva_scenario's generating grid (its probabilities, one per cell and
#: combination, take 96 MB there); (100, 100) is the thesis-like default.
MAX_GENERATING_CELLS = 10**6
#: (analysis polygon, generating cell) pairs intersected per batch by
#: PaivaScenario.true_intensity on hexagonal and areal lattices (a few hundred bytes each).
_MAX_PAIRS = 10**6

#: Table 1: p(x1 = 1), p(x1 = 2).
_P_X1 = np.array([0.6, 0.4])

#: Table 2: p(x2 = k | x1) (rows x1 = 1, 2; columns x2 = 1, 2, 3). The thesis prints 0.333 for
#: x1 = 1, which does not sum to one; we use exactly 1/3.
_P_X2_GIVEN_X1 = np.array([[1 / 3, 1 / 3, 1 / 3], [0.6, 0.1, 0.3]])

#: Eq. (3.1): logit p(y = 1) = b0 + b1 1(x1=2) + b2 1(x2=2) + b3 1(x2=3).
_BETA_Y = np.array([-1.0, 1.5, -0.5, 0.5])

#: Eq. (4.1): mean of Z = b0 + b1 1(y=1) + b2 1(x1=2) + b3 1(x2=2) + b4 1(x2=3).
_BETA_Z = np.array([50.0, -3.5, 1.0, -1.5, 2.0])

#: Eq. (4.1) text: Z ~ Normal(mean, 10); we read 10 as the standard deviation.
_Z_SD = 10.0

_I2 = ((1.0, 0.0), (0.0, 1.0))
_TALL = ((0.3, 0.0), (0.0, 4.5))
_RHO_POS = 0.9 * np.sqrt(1.5 * 2.0)
_RHO_NEG = -0.9 * np.sqrt(1.5 * 1.5)

#: Table 3 of Nunes (2018): location distribution of each combination (y, x1, x2), in thesis
#: units on [0, 10]^2. Each entry is ``(y, x1, x2, components)`` with components a tuple of
#: ``(weight, mean, covariance)``; "A & B" in the table is an equal-weight two-component mixture.
TABLE3: tuple[tuple[int, int, int, tuple[tuple[float, tuple, tuple], ...]], ...] = (
    # y=0, x1=1, x2=1: N2[(3,7); I] & N2[(7,3); I]
    (0, 1, 1, ((0.5, (3.0, 7.0), _I2), (0.5, (7.0, 3.0), _I2))),
    # y=0, x1=1, x2=2: N2[(3,3); I] & N2[(7,7); I]
    (0, 1, 2, ((0.5, (3.0, 3.0), _I2), (0.5, (7.0, 7.0), _I2))),
    # y=0, x1=1, x2=3: N2[(5,5); diag(0.3, 4.5)]
    (0, 1, 3, ((1.0, (5.0, 5.0), _TALL),)),
    # y=0, x1=2, x2=1: N2[(3,5); I] & N2[(7,5); I]
    (0, 2, 1, ((0.5, (3.0, 5.0), _I2), (0.5, (7.0, 5.0), _I2))),
    # y=0, x1=2, x2=2: N2[(5,3); diag(0.8, 0.8)] & N2[(5,7); I]
    (0, 2, 2, ((0.5, (5.0, 3.0), ((0.8, 0.0), (0.0, 0.8))), (0.5, (5.0, 7.0), _I2))),
    # y=0, x1=2, x2=3: N2[(7,3); diag(1, 2)]
    (0, 2, 3, ((1.0, (7.0, 3.0), ((1.0, 0.0), (0.0, 2.0))),)),
    # y=1, x1=1, x2=1: N2[(1.5,5); diag(0.3, 4.5)]
    (1, 1, 1, ((1.0, (1.5, 5.0), _TALL),)),
    # y=1, x1=1, x2=2: N2[(5,5); [[1.5, 0.9*sqrt(1.5*2)], [., 2]]] (off-diagonal as printed)
    (1, 1, 2, ((1.0, (5.0, 5.0), ((1.5, _RHO_POS), (_RHO_POS, 2.0))),)),
    # y=1, x1=1, x2=3: N2[(8.5,5); diag(0.3, 4.5)]
    (1, 1, 3, ((1.0, (8.5, 5.0), _TALL),)),
    # y=1, x1=2, x2=1: N2[(5,2); diag(2.5, 0.7)]
    (1, 2, 1, ((1.0, (5.0, 2.0), ((2.5, 0.0), (0.0, 0.7))),)),
    # y=1, x1=2, x2=2: printed "N(5,5); N2[(5,5); [[1.5, -0.9*sqrt(1.5*1.5)], [., 2]]]" -- the
    # leading "N(5,5);" repeats the mean, so this is a single component.
    (1, 2, 2, ((1.0, (5.0, 5.0), ((1.5, _RHO_NEG), (_RHO_NEG, 2.0))),)),
    # y=1, x1=2, x2=3: printed "N(5;7,5); N2[(5,7.5); diag(2.5, 0.7)]" -- single component.
    (1, 2, 3, ((1.0, (5.0, 7.5), ((2.5, 0.0), (0.0, 0.7))),)),
)

_N_COMBOS = len(TABLE3)


def _combo_index(y: np.ndarray, x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
    """Index into :data:`TABLE3` (lexicographic order of (y, x1, x2))."""
    return np.asarray(y) * 6 + (np.asarray(x1) - 1) * 3 + (np.asarray(x2) - 1)


def _describe(components: tuple) -> str:
    """Readable text of a Table 3 mixture, e.g. ``0.5 N2((3, 7), [[1, 0], [0, 1]]) + ...``."""
    parts = []
    for weight, mean, cov in components:
        c = np.round(np.asarray(cov, dtype=float), 4).tolist()
        parts.append(f"{weight:g} N2(({mean[0]:g}, {mean[1]:g}), {c})")
    return " + ".join(parts)


def _mixture_density(components: tuple, xy: np.ndarray) -> np.ndarray:
    """Density of a Table 3 mixture at the (m, 2) points ``xy``, shape (m,)."""
    # reshape: scipy's pdf returns a scalar for a single point (a (1, 1) generating grid)
    return sum(w * multivariate_normal(mean=m, cov=c).pdf(xy).reshape(len(xy))
               for w, m, c in components)


def _generating_probabilities(shape: tuple[int, int]) -> np.ndarray:
    """Cell probabilities (12, nr*nc) from the mixture densities at the generating-cell centres."""
    nr, nc = shape
    cy = (np.arange(nr) + 0.5) * (_SQUARE / nr)
    cx = (np.arange(nc) + 0.5) * (_SQUARE / nc)
    yy, xx = np.meshgrid(cy, cx, indexing="ij")  # row 0 = south, row-major
    xy = np.column_stack([xx.ravel(), yy.ravel()])
    dens = np.stack([_mixture_density(entry[3], xy) for entry in TABLE3])
    return dens / dens.sum(axis=1, keepdims=True)


def _cdf_at(cum: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Exact CDF of the piecewise-uniform generating distribution at fractional cell coordinates.

    ``cum`` is (12, nr+1, nc+1) with ``cum[b, i, j]`` = mass of rows < i and columns < j; ``u`` and
    ``v`` (k,) are column and row coordinates in generating-cell units, clipped to the lattice.
    Within a cell the CDF is bilinear in (u, v), so bilinear interpolation of ``cum`` is exact.
    """
    nr, nc = cum.shape[1] - 1, cum.shape[2] - 1
    j = np.minimum(np.floor(u).astype(np.int64), nc - 1)
    i = np.minimum(np.floor(v).astype(np.int64), nr - 1)
    t, s = u - j, v - i
    return (
        cum[:, i, j] * ((1 - s) * (1 - t))
        + cum[:, i, j + 1] * ((1 - s) * t)
        + cum[:, i + 1, j] * (s * (1 - t))
        + cum[:, i + 1, j + 1] * (s * t)
    )  # (12, k)


@dataclass(frozen=True, eq=False)
class PaivaScenario:
    """A realisation of the Nunes (2018) §3.1/§4 simulation scenario with its true intensity.

    Attributes
    ----------
    data : geopandas.GeoDataFrame
        One row per record (RangeIndex) with int64 columns ``y``, ``x1``, ``x2``, float64 ``z``
        (only if simulated with ``continuous=True``) and point ``geometry`` in ``crs``.
    bounds : tuple of float
        The study square ``(xmin, ymin, xmax, ymax)`` in CRS units.
    crs : pyproj.CRS or None
        Coordinate reference system of ``data`` and ``bounds``.
    components : pandas.DataFrame
        The 12 combinations in :data:`TABLE3` order (lexicographic in y, x1, x2; index 0..11) with
        columns ``y``, ``x1``, ``x2``, ``n_components``, ``mixture`` (Table 3 text, thesis units)
        and ``n_records`` (realised number of records ``n_b``).
    generating_probabilities : numpy.ndarray
        (12, nr*nc) probability of each generating cell per combination (row 0 = south,
        row-major: position ``row*nc + col``), proportional to the mixture density at the cell
        centre.
    generating_shape : tuple of int
        ``(nr, nc)`` of the generating grid on the study square.
    """

    data: gpd.GeoDataFrame
    bounds: tuple[float, float, float, float]
    crs: pyproj.CRS | None
    components: pd.DataFrame
    generating_probabilities: np.ndarray
    generating_shape: tuple[int, int]

    @property
    def n_records(self) -> np.ndarray:
        """Realised number of records ``n_b`` per combination, int64 (12,)."""
        return self.components["n_records"].to_numpy(dtype=np.int64)

    @property
    def combo_order(self) -> pd.DataFrame:
        """The (y, x1, x2) of the 12 columns of :meth:`true_intensity`."""
        return self.components[["y", "x1", "x2"]].copy()

    def align(self, combos: pd.DataFrame) -> np.ndarray:
        """Column indices into the 12 scenario combinations for each row of ``combos``.

        Parameters
        ----------
        combos : pandas.DataFrame
            A table with columns ``y``, ``x1`` and ``x2`` holding levels (e.g.
            ``CellCounts.combos``).

        Returns
        -------
        numpy.ndarray
            int64 (len(combos),): ``true_intensity(grid)[:, scenario.align(combos)]`` has the
            columns in the order of ``combos``.

        Raises
        ------
        InputError
            If ``combos`` is not a DataFrame, a column is missing or repeated, or a level is not
            a scenario level.
        """
        if not isinstance(combos, pd.DataFrame):
            raise InputError(
                f"combos must be a pandas.DataFrame with columns y, x1, x2, got "
                f"{type(combos).__name__}; pass e.g. CellCounts.combos"
            )
        check_unique_columns(combos, "combos", ("y", "x1", "x2"))
        missing = [c for c in ("y", "x1", "x2") if c not in combos.columns]
        if missing:
            raise InputError(
                f"combos is missing column(s) {missing}; pass a table with columns y, x1, x2 "
                "such as CellCounts.combos from prepare(..., attributes=['y', 'x1', 'x2'])"
            )
        allowed = {"y": (0, 1), "x1": (1, 2), "x2": (1, 2, 3)}
        values = {}
        for col, levels in allowed.items():
            v = pd.to_numeric(combos[col], errors="coerce").to_numpy(dtype=float)
            bad = ~np.isin(v, levels)
            if bad.any():
                rows = combos.index[bad][:5].tolist()
                raise InputError(
                    f"combos column {col!r} has values outside {list(levels)} in rows {rows}; "
                    "align only works with combinations of the Paiva scenario"
                )
            values[col] = v.astype(np.int64)
        return _combo_index(values["y"], values["x1"], values["x2"]).astype(np.int64)

    def true_intensity(self, grid: Any, combos: pd.DataFrame | None = None) -> np.ndarray:
        """Return the expected count per (analysis cell, combination) given the realised ``n_b``.

        Entry ``[g, b]`` is ``n_b`` times the probability mass that combination ``b``'s generating
        distribution (a generating cell drawn from ``generating_probabilities``, then a uniform
        point inside it) puts inside analysis cell ``g``. The mass is exact for any lattice,
        nested in the generating grid or not: a generating cell contributes
        ``p * overlap_area / cell_area``. For square cells it is computed through the exact
        (piecewise bilinear) CDF of the generating distribution at the four corners of each
        box; for hexagons and areas from the areas of their intersections with the generating
        cells (the bounding box of a hexagon holds 4/3 of its mass and overlaps its neighbours').

        Parameters
        ----------
        grid : geosynth.lattice.Grid
            Analysis lattice in the scenario CRS: square, hexagonal or areal. For clipped grids
            the mass is that of the full cell (box, hexagon or area), not of its habitable part.
        combos : pandas.DataFrame, optional
            If given (e.g. ``CellCounts.combos``), return only the columns of these combinations,
            in this order (see :meth:`align`).

        Returns
        -------
        numpy.ndarray
            float64 (grid.n_cells, 12), or (grid.n_cells, len(combos)) when ``combos`` is given.

        Raises
        ------
        InputError
            If ``grid`` is not a :class:`geosynth.lattice.Grid`.
        CRSError
            If the grid CRS differs from the scenario CRS, or only one of them has a CRS.
        """
        if not isinstance(grid, Grid):
            raise InputError(f"grid must be a geosynth.Grid, got {type(grid).__name__}; build "
                             "it with Grid.regular(scenario.bounds, shape=..., crs=scenario.crs)")
        self._check_crs(grid.crs)
        if grid.kind == "square":
            out = self._box_mass(grid.cell_bounds(np.arange(grid.n_cells)))
        else:
            out = self._polygon_mass(np.asarray(grid.cells.geometry.array, dtype=object))
        out = out * self.n_records[None, :]
        return out if combos is None else out[:, self.align(combos)]

    def _box_mass(self, boxes: np.ndarray) -> np.ndarray:
        """Return the generating mass (k, 12) inside each ``(x0, y0, x1, y1)`` box (exact CDF)."""
        boxes = np.asarray(boxes, dtype=float).reshape(-1, 4)
        nr, nc = self.generating_shape
        xmin, ymin, xmax, ymax = self.bounds
        dx, dy = (xmax - xmin) / nc, (ymax - ymin) / nr
        cum = np.zeros((_N_COMBOS, nr + 1, nc + 1))
        p = self.generating_probabilities.reshape(_N_COMBOS, nr, nc)
        cum[:, 1:, 1:] = p.cumsum(axis=1).cumsum(axis=2)
        u0, u1 = (np.clip((boxes[:, k] - xmin) / dx, 0, nc) for k in (0, 2))
        v0, v1 = (np.clip((boxes[:, k] - ymin) / dy, 0, nr) for k in (1, 3))
        mass = (
            _cdf_at(cum, u1, v1) - _cdf_at(cum, u0, v1) - _cdf_at(cum, u1, v0)
            + _cdf_at(cum, u0, v0)
        )
        return np.clip(mass.T, 0.0, None)

    def _polygon_mass(self, polygons: np.ndarray) -> np.ndarray:
        """Return the generating mass (k, 12) inside each polygon, from its cell overlaps.

        The (polygon, generating cell) pairs are those of the cells meeting the polygon's
        bounding box, intersected in batches of at most :data:`_MAX_PAIRS`.
        """
        nr, nc = self.generating_shape
        xmin, ymin, xmax, ymax = self.bounds
        dx, dy = (xmax - xmin) / nc, (ymax - ymin) / nr
        box = shapely.bounds(polygons)
        c0, c1 = (np.clip(f((box[:, k] - xmin) / dx), 0, nc).astype(np.int64)
                  for k, f in ((0, np.floor), (2, np.ceil)))
        r0, r1 = (np.clip(f((box[:, k] - ymin) / dy), 0, nr).astype(np.int64)
                  for k, f in ((1, np.floor), (3, np.ceil)))
        width, count = c1 - c0, (c1 - c0) * (r1 - r0)
        weight = sparse.csr_matrix((polygons.size, nr * nc))
        for start, stop in pair_batches(count, _MAX_PAIRS):
            cells = np.arange(start, stop)
            k, offset = np.repeat(cells, count[cells]), ranks_in_runs(count[cells])
            row, col = r0[k] + offset // width[k], c0[k] + offset % width[k]
            generating = shapely.box(xmin + col * dx, ymin + row * dy, xmin + (col + 1) * dx,
                                     ymin + (row + 1) * dy)
            share = shapely.area(shapely.intersection(polygons[k], generating)) / (dx * dy)
            weight = weight + sparse.csr_matrix((share, (k, row * nc + col)),
                                                shape=weight.shape)
        return np.asarray(weight @ self.generating_probabilities.T)

    def _check_crs(self, grid_crs: Any) -> None:
        # A grid without a CRS may be in other units (thesis units, km): every box then missed
        # the square and the intensity was silently zero.
        if grid_crs is None and self.crs is None:
            return
        if grid_crs is None or self.crs is None:
            mine = "no CRS" if self.crs is None else f"CRS {self.crs.to_string()}"
            raise CRSError(
                f"the grid has {'no CRS' if grid_crs is None else 'a CRS'} but the scenario has "
                f"{mine}; build the grid with Grid.regular(scenario.bounds, shape=..., "
                "crs=scenario.crs)"
            )
        if pyproj.CRS.from_user_input(grid_crs) != self.crs:
            raise CRSError(
                f"grid CRS {pyproj.CRS.from_user_input(grid_crs).to_string()} differs from the "
                f"scenario CRS {self.crs.to_string()}; build the grid with "
                "Grid.regular(scenario.bounds, shape=..., crs=scenario.crs)"
            )


def _validate_scenario_args(
    n: Any, generating_shape: Any, origin: Any, unit: Any
) -> tuple[int, tuple[int, int], tuple[float, float], float]:
    n = _check_records(n, 1)
    shape = _check_generating_shape(generating_shape)
    org = _check_origin(origin)
    unit = check_positive(unit, "unit", hint="the length of one thesis unit in CRS units, "
                          "e.g. unit=1000.0 (metres)")
    if not all(math.isfinite(v + unit * _SQUARE) for v in org):
        raise InputError(f"origin {org} + unit {unit:g} x {_SQUARE:g} (the side of the square) "
                         "overflows float64; give them in metres of a projected CRS")
    cell = unit * _SQUARE / max(shape)
    if any(_RESOLUTION * math.ulp(abs(v) + unit * _SQUARE) > cell for v in org):
        raise InputError(
            f"unit {unit:g} is too small for origin {org}: a generating cell ({cell:g} CRS "
            f"units wide) is narrower than {_RESOLUTION} float64 spacings of the coordinates "
            "there, so the points would be rounded onto a few positions (or all onto the "
            "origin); give origin and unit "
            "in the same units, e.g. unit=1000.0 metres with the default origin"
        )
    return n, shape, org, unit


def _check_records(n: Any, least: int) -> int:
    """Return ``n``, an int number of records from ``least`` to :data:`MAX_RECORDS`."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or not (
            least <= n <= MAX_RECORDS):
        raise InputError(f"n must be an integer number of records from {least} to "
                         f"{MAX_RECORDS:,}, got {n!r}")
    return int(n)


def _check_generating_shape(generating_shape: Any) -> tuple[int, int]:
    """Return ``(nrows, ncols)``: a tuple, list or array of two positive ints, not too many.

    A set or a dict was taken in its iteration order (``{5, 10}`` gave ``(10, 5)``).
    """
    shape = (tuple(generating_shape)
             if isinstance(generating_shape, tuple | list | np.ndarray) else ())
    if len(shape) != 2 or not all(
        isinstance(s, (int, np.integer)) and not isinstance(s, bool) and s >= 1 for s in shape
    ):
        raise InputError(
            f"generating_shape must be (nrows, ncols) of positive integers, got "
            f"{generating_shape!r}; the thesis-like default is (100, 100)"
        )
    if int(shape[0]) * int(shape[1]) > MAX_GENERATING_CELLS:
        raise InputError(
            f"generating_shape {tuple(map(int, shape))} has more than "
            f"{MAX_GENERATING_CELLS:,} cells (each holds a probability per combination); the "
            "thesis-like default is (100, 100)"
        )
    return int(shape[0]), int(shape[1])


def scenario_bytes(n: int, generating_shape: tuple[int, int] = (100, 100)) -> int:
    """Estimate the peak memory of :func:`paiva_scenario`, in bytes.

    Parameters
    ----------
    n : int
        Number of records.
    generating_shape : tuple of (int, int), default (100, 100)
        ``(nrows, ncols)`` of the generating grid.

    Returns
    -------
    int
        About 400 bytes per record (a shapely point, its coordinates, the attributes and
        their draws) and 256 per generating cell: an upper bound of the peak resident size
        measured on Linux (355-370 bytes per record from 1 to 3 million records).

    Raises
    ------
    geosynth.errors.InputError
        ``n`` is not an int from 0 to :data:`MAX_RECORDS`, or ``generating_shape`` is not
        two positive ints (as :func:`paiva_scenario` refuses them).
    """
    n = _check_records(n, 0)
    return _BYTES_PER_RECORD * n + _BYTES_PER_GENERATING_CELL * math.prod(
        _check_generating_shape(generating_shape))


def _check_scenario_memory(n: int, shape: tuple[int, int], max_bytes: Any) -> None:
    """Refuse a scenario whose estimated peak memory is above ``max_bytes``, before any draw."""
    limit = check_max_bytes(max_bytes)
    need = scenario_bytes(n, shape)
    if need <= limit:
        return
    most = (limit - scenario_bytes(0, shape)) // _BYTES_PER_RECORD
    fix = (f"pass n={most:,} or fewer" if most >= 1
           else "pass a smaller generating_shape (the thesis-like default is (100, 100))")
    raise MemoryLimitError(
        f"paiva_scenario(n={n:,}) needs about {format_bytes(need)} at its peak (about "
        f"{_BYTES_PER_RECORD} bytes a record), over max_bytes = {format_bytes(limit)}; {fix}, "
        f"or a larger max_bytes if the memory is there (max_bytes={need} here)")


def _check_origin(origin: Any) -> tuple[float, float]:
    """Return ``origin`` as two finite floats (bools and text refused)."""
    try:
        values = list(origin)
    except TypeError:
        values = []
    if len(values) != 2 or not all(
        isinstance(v, numbers.Real) and not isinstance(v, bool | np.bool_) and math.isfinite(v)
        for v in values
    ):
        raise InputError(f"origin must be two finite numbers (x, y), got {origin!r}")
    return float(values[0]), float(values[1])


def _simulate_attributes(rng: np.random.Generator, n: int) -> tuple[np.ndarray, ...]:
    """Draw x1 (Table 1), x2 | x1 (Table 2), y (eq. 3.1) and Z (eq. 4.1)."""
    x1 = 1 + (rng.random(n) >= _P_X1[0]).astype(np.int64)
    cdf = np.cumsum(_P_X2_GIVEN_X1, axis=1)[:, :-1]
    x2 = 1 + (rng.random(n)[:, None] >= cdf[x1 - 1]).sum(axis=1).astype(np.int64)
    eta = _BETA_Y @ np.stack([np.ones(n), x1 == 2, x2 == 2, x2 == 3])
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-eta))).astype(np.int64)
    zmean = _BETA_Z @ np.stack([np.ones(n), y == 1, x1 == 2, x2 == 2, x2 == 3])
    z = rng.normal(zmean, _Z_SD)
    return y, x1, x2, z


def _simulate_locations(
    rng: np.random.Generator, combo: np.ndarray, probs: np.ndarray, shape: tuple[int, int]
) -> np.ndarray:
    """Per combination: a generating cell drawn by probability, then a uniform point in it."""
    nr, nc = shape
    cell = np.empty(combo.size, dtype=np.int64)
    for b in range(_N_COMBOS):  # 12 combinations, vectorised over records
        idx = np.flatnonzero(combo == b)
        if idx.size:
            cell[idx] = rng.choice(nr * nc, size=idx.size, p=probs[b])
    u = rng.random((combo.size, 2))
    s1 = (cell % nc + u[:, 0]) * (_SQUARE / nc)
    s2 = (cell // nc + u[:, 1]) * (_SQUARE / nr)
    return np.column_stack([s1, s2])


def paiva_scenario(
    n: int = 500,
    seed: SeedLike = None,
    generating_shape: tuple[int, int] = (100, 100),
    continuous: bool = True,
    crs: Any = "EPSG:31983",
    origin: tuple[float, float] = (605_000.0, 7_790_000.0),
    unit: float = 1000.0,
    max_bytes: int = SCENARIO_MAX_BYTES,
) -> PaivaScenario:
    """Simulate the confidential data of Nunes (2018), §3.1 and §4.

    - ``x1`` in {1, 2} with p = (0.6, 0.4) (Table 1);
    - ``x2 | x1`` in {1, 2, 3} (Table 2): (1/3, 1/3, 1/3) for x1 = 1 (the thesis prints 0.333;
      we use exactly 1/3) and (0.6, 0.1, 0.3) for x1 = 2;
    - ``y`` in {0, 1} with logit p(y=1) = -1 + 1.5 1(x1=2) - 0.5 1(x2=2) + 0.5 1(x2=3) (eq. 3.1);
    - locations: for each combination b = (y, x1, x2) with n_b records, a cell of the generating
      grid on [0, 10]^2 is drawn with probability proportional to the Table 3 mixture density at
      its centre (:data:`TABLE3`), then a point uniformly inside the cell (§3.1);
    - ``z`` ~ Normal(50 - 3.5 1(y=1) + 1(x1=2) - 1.5 1(x2=2) + 2 1(x2=3), sd = 10) (eq. 4.1;
      the thesis writes Normal(Z̄, 10), which we read as standard deviation 10).

    Thesis coordinates (s1, s2) are mapped to ``origin + unit * (s1, s2)`` in ``crs``; the default
    places the 10 km square in SIRGAS 2000 / UTM zone 23S near Belo Horizonte.

    Parameters
    ----------
    n : int, default 500
        Number of records (the thesis uses 500).
    seed : None, int or numpy.random.Generator
        Randomness; a fixed seed gives identical data. ``z`` is always drawn, so
        ``continuous=False`` gives the same y, x1, x2 and locations as ``continuous=True``.
    generating_shape : tuple of int, default (100, 100)
        ``(nrows, ncols)`` of the generating grid on the study square.
    continuous : bool, default True
        Include the continuous variable ``z``.
    crs : str, pyproj.CRS or None, default "EPSG:31983"
        CRS of the output; a projected CRS whose unit matches ``unit``.
    origin : tuple of float, default (605000, 7790000)
        CRS coordinates of the thesis point (0, 0), the south-west corner of the square.
    unit : float, default 1000
        CRS units per thesis unit (1000 m: the square is 10 km wide).
    max_bytes : int, default SCENARIO_MAX_BYTES (2 GiB)
        Largest memory the simulation may take at its peak (:func:`scenario_bytes`, about
        400 bytes a record): checked before anything is drawn.

    Returns
    -------
    PaivaScenario

    Raises
    ------
    InputError
        If ``n`` < 1 or ``generating_shape`` (more than :data:`MAX_GENERATING_CELLS` cells
        included), ``origin`` or ``unit`` is invalid, or ``unit`` is too small for ``origin``
        (a generating cell narrower than a thousand float64 spacings of the coordinates).
    TypeError
        If ``unit`` is not a real number (a bool or a string included), or ``continuous`` is
        not a bool.
    CRSError
        If ``crs`` is not a CRS pyproj can read, or is geographic.
    MemoryLimitError
        If the simulation would take more than ``max_bytes`` (:func:`scenario_bytes`); nothing
        was drawn.
    """
    n, shape, org, unit = _validate_scenario_args(n, generating_shape, origin, unit)
    _check_scenario_memory(n, shape, max_bytes)
    continuous = check_bool(continuous, "continuous")
    rng = as_generator(seed)
    crs_obj = parse_crs(crs)
    if crs_obj is not None and crs_obj.is_geographic:
        raise CRSError(
            f"crs {crs_obj.to_string()} is geographic (degrees); the scenario square is laid out "
            "in metres. Pass a projected CRS such as the default 'EPSG:31983'"
        )
    probs = _generating_probabilities(shape)
    y, x1, x2, z = _simulate_attributes(rng, n)
    combo = _combo_index(y, x1, x2)
    s = _simulate_locations(rng, combo, probs, shape)
    xy = np.asarray(org) + unit * s
    columns: dict[str, Any] = {"y": y, "x1": x1, "x2": x2}
    if continuous:
        columns["z"] = z.astype(np.float64)
    data = gpd.GeoDataFrame(
        columns, geometry=gpd.points_from_xy(xy[:, 0], xy[:, 1]), crs=crs_obj
    )
    components = pd.DataFrame(
        {
            "y": np.array([e[0] for e in TABLE3], dtype=np.int64),
            "x1": np.array([e[1] for e in TABLE3], dtype=np.int64),
            "x2": np.array([e[2] for e in TABLE3], dtype=np.int64),
            "n_components": np.array([len(e[3]) for e in TABLE3], dtype=np.int64),
            "mixture": [_describe(e[3]) for e in TABLE3],
            "n_records": np.bincount(combo, minlength=_N_COMBOS).astype(np.int64),
        }
    )
    side = unit * _SQUARE
    bounds = (org[0], org[1], org[0] + side, org[1] + side)
    return PaivaScenario(data, bounds, crs_obj, components, probs, shape)


# --------------------------------------------------------------------------------------------
# Berlin (Prenzlauer Berg) AirBnB listings from libpysal
# --------------------------------------------------------------------------------------------

#: Bins of ``accommodates`` -> ``accommodates_band`` (labels sort in natural order).
BERLIN_ACCOMMODATES_BANDS: dict[str, tuple[float, float]] = {
    "1": (1, 1),
    "2": (2, 2),
    "3-4": (3, 4),
    "5+": (5, np.inf),
}

#: Bins of ``bedrooms`` -> ``bedrooms_band`` (labels sort in natural order).
BERLIN_BEDROOMS_BANDS: dict[str, tuple[float, float]] = {
    "0-1": (0, 1),
    "2": (2, 2),
    "3+": (3, np.inf),
}

_BERLIN_RENAME = {
    "accommodat": "accommodates",
    "review_sco": "review_score",
    "neighbourh": "neighbourhood",
}
_BERLIN_CRS = "EPSG:25833"


class BerlinListings(NamedTuple):
    """Berlin Prenzlauer Berg listings and their study region (both in EPSG:25833)."""

    points: gpd.GeoDataFrame
    region: gpd.GeoDataFrame


def _band(values: pd.Series, bands: dict[str, tuple[float, float]]) -> np.ndarray:
    """Label each value with the band whose closed interval [lo, hi] contains it."""
    v = values.to_numpy(dtype=float)
    conditions = [(v >= lo) & (v <= hi) for lo, hi in bands.values()]
    return np.select(conditions, list(bands), default="")


#: Columns of the shipped listings (after renaming) and boundary that berlin_listings reads.
_BERLIN_POINT_COLUMNS = ("accommodates", "bedrooms", "beds", "bathrooms", "review_score", "price")
_BERLIN_REGION_COLUMNS = ("neighbourhood",)


def _read_berlin(name: str, columns: tuple[str, ...]) -> gpd.GeoDataFrame:
    """Read one shipped Berlin file, checking that it has its columns and a CRS."""
    path = _berlin_file(name)
    fix = ("reinstall libpysal (pip install --force-reinstall libpysal), whose "
           f"examples/berlin/{name} this is")
    try:
        frame = gpd.read_file(path)
    except (pyogrio.errors.DataSourceError, pyogrio.errors.DataLayerError, OSError,
            ValueError) as err:  # a damaged or replaced copy
        raise InputError(f"berlin_listings cannot read {path} ({type(err).__name__}); "
                         f"{fix}") from None
    frame = frame.rename(columns=_BERLIN_RENAME)
    missing = [c for c in columns if c not in frame.columns]
    if missing or not isinstance(frame, gpd.GeoDataFrame) or frame.crs is None:
        what = f"lacks the column(s) {missing}" if missing else "has no geometry or no CRS"
        raise InputError(f"berlin_listings: {path} {what}, which the shipped file has; {fix}")
    return frame


def _whole_numbers(values: pd.Series, minimum: int) -> np.ndarray:
    """Whether each value is a finite whole number >= ``minimum`` (False where missing)."""
    v = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
    with np.errstate(invalid="ignore"):
        return np.isfinite(v) & (v == np.round(v)) & (v >= minimum)


def _berlin_file(name: str) -> str:
    path = importlib.resources.files("libpysal.examples") / "berlin" / name
    if not path.is_file():
        raise FileNotFoundError(
            f"libpysal example file berlin/{name} not found at {path}; reinstall libpysal "
            "(pip install --force-reinstall libpysal), which ships it"
        )
    return str(path)


def berlin_listings() -> BerlinListings:
    """Load the Prenzlauer Berg (Berlin) AirBnB listings shipped with libpysal.

    Reads ``libpysal/examples/berlin/prenzlauer.zip`` (2203 listings) and ``prenz_bound.zip``
    (the neighbourhood boundary) from the installed package, without network access, and
    reprojects both from Web Mercator (EPSG:3857, whose distances at 52.5° N are stretched by
    about 1/cos(52.5°) = 1.64) to the metric ETRS89 / UTM zone 33N (EPSG:25833).

    Point columns (the shapefile's truncated names are expanded):

    - ``accommodates`` (int64), ``bedrooms`` (int64), ``beds`` (int64; float64 if it had gaps
      or fractions),
      ``bathrooms`` (float64),
      ``review_score`` (float64, 0-100): as shipped;
    - ``price`` (float64): nightly price, the continuous variable;
    - ``accommodates_band`` (str): ``"1"``, ``"2"``, ``"3-4"``, ``"5+"``
      (:data:`BERLIN_ACCOMMODATES_BANDS`);
    - ``bedrooms_band`` (str): ``"0-1"``, ``"2"``, ``"3+"`` (:data:`BERLIN_BEDROOMS_BANDS`);
    - ``geometry``: points. The shipped X/Y columns (EPSG:3857 copies of the geometry) are
      dropped.

    Band labels sort (as strings) in their natural order, so the first is the baseline level.
    Rows with a missing, non-finite or non-positive price, an accommodates that is not a whole
    number >= 1 or a bedrooms that is not a whole number >= 0 (missing included: no band holds
    them), or an empty geometry are dropped with a :class:`~geosynth.errors.DataWarning`; the
    shipped file has none, so all 2203 listings are kept (RangeIndex). All listings lie inside
    the region.

    Returns
    -------
    BerlinListings
        ``(points, region)``; ``region`` has one polygon and a ``neighbourhood`` column.

    Raises
    ------
    FileNotFoundError
        libpysal does not ship the files (reinstall it).
    InputError
        A file cannot be read, or lacks a column, its geometry or its CRS (a damaged copy:
        reinstall libpysal).
    """
    points = _read_berlin("prenzlauer.zip", _BERLIN_POINT_COLUMNS)
    region = _read_berlin("prenz_bound.zip", _BERLIN_REGION_COLUMNS)
    points = points.drop(columns=[c for c in ("X", "Y") if c in points.columns])
    price = pd.to_numeric(points["price"], errors="coerce")
    keep = (
        np.isfinite(price.to_numpy(dtype=float))
        & (price.to_numpy(dtype=float) > 0)
        & _whole_numbers(points["accommodates"], 1)
        & _whole_numbers(points["bedrooms"], 0)
        & ~(points.geometry.is_empty | points.geometry.isna()).to_numpy()
    )
    if not keep.all():
        warnings.warn(
            f"berlin_listings dropped {int((~keep).sum())} of {keep.size} listings with a "
            "missing or non-positive price, an accommodates (>= 1) or bedrooms (>= 0) that is "
            "not a whole number, or an empty geometry",
            DataWarning,
            stacklevel=2,
        )
    points = points.loc[keep].reset_index(drop=True)
    points["price"] = price[keep].to_numpy(dtype=np.float64)
    for col in ("accommodates", "bedrooms", "beds"):
        if _whole_numbers(points[col], -(2**53)).all():  # a fraction is kept, not rounded
            points[col] = pd.to_numeric(points[col]).round().astype(np.int64)
    for col in ("bathrooms", "review_score"):
        points[col] = pd.to_numeric(points[col], errors="coerce").astype(np.float64)
    points["accommodates_band"] = _band(points["accommodates"], BERLIN_ACCOMMODATES_BANDS)
    points["bedrooms_band"] = _band(points["bedrooms"], BERLIN_BEDROOMS_BANDS)
    points = points[[c for c in points.columns if c != "geometry"] + ["geometry"]]
    return BerlinListings(points.to_crs(_BERLIN_CRS), region.to_crs(_BERLIN_CRS))


# --------------------------------------------------------------------------------------------
# SUSEP collisions (Marcolin 2018, Table 4.1)
# --------------------------------------------------------------------------------------------


def susep_collisions() -> pd.DataFrame:
    """Load the SUSEP Ford Fusion collisions by driver sex and age band (Marcolin 2018).

    The 107 collisions of insured Ford Fusion cars in the Belo Horizonte metropolitan area and
    Zona da Mata (Minas Gerais) from 1 January to 31 December 2015, from SUSEP's AutoSeg system
    (Superintendência de Seguros Privados), as tabulated in Marcolin (2018), Table 4.1: the data
    the thesis synthesizes with the Dirichlet-Multinomial synthesizer in ch. 4 (8 categories).
    The 18-25 band, with no collisions in AutoSeg (thesis Figure 4.1), is not part of Table 4.1.
    Totals: 85 men, 22 women.

    Read from ``data/susep_collisions.csv`` at the top of the geosynth source tree (available in
    an editable install).

    Returns
    -------
    pandas.DataFrame
        8 rows (RangeIndex) with columns ``age_band`` (str: ``"26-35"``, ``"36-45"``,
        ``"46-55"``, ``"55+"``, as printed), ``sex`` (str: ``"male"``, ``"female"``) and
        ``collisions`` (int64).

    Raises
    ------
    InputError
        The CSV file is missing (geosynth installed without its source tree), or is not the
        table described above (columns, 8 distinct age band and sex rows, whole non-negative
        counts, 85 men and 22 women): a damaged or edited copy.

    Examples
    --------
    >>> table = susep_collisions()
    >>> int(table["collisions"].sum())
    107
    >>> counts = table.set_index(["age_band", "sex"])["collisions"]  # for a synthesizer
    """
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "data" / "susep_collisions.csv"
    if not path.is_file():
        raise InputError(
            f"susep_collisions: {path} not found; the SUSEP table ships in the data/ folder of "
            "the geosynth source tree, so install geosynth in editable mode from a checkout "
            "(pip install -e .)"
        )
    fix = ("restore data/susep_collisions.csv from a geosynth checkout (it holds Marcolin 2018, "
           "Table 4.1)")
    try:
        table = pd.read_csv(path, comment="#", dtype={"age_band": str, "sex": str})
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        raise InputError(f"susep_collisions cannot read {path} ({type(err).__name__}); "
                         f"{fix}") from None
    problem = _susep_problem(table)
    if problem is not None:
        raise InputError(f"susep_collisions: {path} {problem}; {fix}")
    table["collisions"] = table["collisions"].astype(np.int64)
    return table


#: Collisions by sex in Marcolin (2018), Table 4.1.
_SUSEP_TOTALS = {"female": 22, "male": 85}


def _susep_problem(table: pd.DataFrame) -> str | None:
    """Say how ``table`` differs from the shipped SUSEP table, or None if it does not."""
    if list(table.columns) != ["age_band", "sex", "collisions"]:
        return (f"has the columns {[str(c) for c in table.columns]}, not ['age_band', 'sex', "
                "'collisions']")
    keys = table[["age_band", "sex"]]
    if len(table) != 8 or keys.isna().any(axis=None) or keys.duplicated().any():
        return "does not have 8 rows of distinct age band and sex"
    if not _whole_numbers(table["collisions"], 0).all():
        return "has collision counts that are not whole numbers >= 0"
    totals = pd.to_numeric(table["collisions"]).groupby(table["sex"]).sum().to_dict()
    if totals != _SUSEP_TOTALS:
        return f"has collisions by sex {totals}, not the table's {_SUSEP_TOTALS}"
    return None
