"""The OnTheMap synthesizer of locations (Machanavajjhala et al. 2008), pure ε-DP.

For every attribute combination ``b`` the confidential counts over the ``G`` cells of a public
lattice, ``x_b = (x_1b, ..., x_Gb)``, are replaced by a Dirichlet-Multinomial draw
(:mod:`geosynth.dp.synthesizers`)::

    p̃_b ~ Dirichlet(α_b + x_b),   x̃_b ~ Multinomial(ñ_b, p̃_b),

and each synthetic record is then placed uniformly inside its synthetic cell (its habitable part,
:func:`geosynth.synth.place_in_cells`). The steps and their privacy cost:

1. **Totals** (``ε_totals``). The combination totals ``n_b = Σ_i x_ib`` are confidential when the
   number of records is (add/remove-one neighbours change one ``n_b`` by one: L1 sensitivity 1).
   They are released with the two-sided geometric mechanism (the discrete Laplace,
   :func:`geosynth.dp.mechanisms.geometric`), clamped at 0, and used as ``ñ_b``.
2. **Cells** (``ε_cells``). Given the public ``ñ_b``, the Dirichlet-Multinomial draw of
   combination ``b`` is ``ε_cells / m``-DP per synthetic dataset when every
   ``α_ib >= ñ_b / (e^(ε_cells/m) − 1)`` (the bound holds for add/remove-one neighbours with
   ``ñ_b`` fixed; derivation in :mod:`geosynth.dp.synthesizers`). A record belongs to exactly one
   combination, so by parallel composition the cell step costs ``ε_cells / m`` per dataset
   whatever the number of combinations, and ``ε_cells`` for the ``m`` datasets.
3. **Placement** inside cells is post-processing of the synthetic counts.

Total: ``ε = ε_totals + ε_cells`` for add/remove-one neighbours (``totals_share`` of ε goes to
the totals, 0.1 by default, or pass ``epsilon_totals``). Under replace-one neighbours a record can
change combination, touching two totals and two combinations: the loss is at most ``2ε``.

Prior surface. ``α_ib = α_min,b · w_i / min_i w_i`` with ``α_min,b = ñ_b / (e^(ε_cells/m) − 1)``
and a *public* weight ``w_i > 0`` per cell (e.g. population from a census raster), so the
smallest ``α_ib`` is exactly the privacy bound and the synthetic records lean towards cells with
more weight where the data are thin. Without a prior every ``α_ib = α_min,b``. The prior must not
be derived from the confidential data, and its largest weight may be at most
:data:`MAX_PRIOR_RATIO` times its smallest (so ``α`` is finite before the budget is spent).

What must be public: the lattice (build it from the study region, e.g. :meth:`Grid.regular`,
not from the points), the attribute domain (prepare the counts on it,
``geosynth.prepare(..., levels=...)``, which refuses nothing on the records' values) and the
prior.

Differences from Machanavajjhala et al. (2008). OnTheMap treats the totals of each destination
block as public and, because the bound makes ``α`` enormous on large sparse domains, relaxes ε-DP
to (ε, δ)-probabilistic DP and shrinks the domain. Here the totals are noised and the guarantee is
pure ε-DP; expect the prior (``Σ_i α_ib`` against ``n_b``) to dominate the synthetic counts when
``ñ_b / (e^ε − 1)`` times the number of cells is large compared with ``n_b``.
"""

from __future__ import annotations

import math
import os
import warnings
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd

from geosynth._messages import caller_stacklevel
from geosynth._random import SeedLike, check_seed
from geosynth._validation import (
    check_epsilon,
    check_m,
    check_max_bytes,
    check_probability,
    check_public_lattice,
    check_real_array,
)
from geosynth.data import CellCounts
from geosynth.dp._randomness import after_noise_generator, noise_source, private_generator
from geosynth.dp.accountant import check_accountant, deepcopy_sharing_budget, ledger_of
from geosynth.dp.locations import (
    DEFAULT_MAX_BYTES,
    RELEASE_BYTES_PER_RECORD,
    TOTAL_CAP_SDS,
    check_geometry_name,
    full_table,
    public_domain,
)
from geosynth.dp.mechanisms import (
    MAX_INTEGER_NOISE_SCALE,
    NEARLY_EXACT_SHARE,
    geometric,
    warn_if_nearly_exact,
)
from geosynth.dp.synthesizers import (
    FixedParameter,
    check_counts,
    draw_dirichlet_multinomial,
    finite_alpha,
    prior_scale,
)
from geosynth.errors import InputError, MemoryLimitError, PrivacyLeakWarning
from geosynth.lattice import Grid
from geosynth.rasters import WeightsLike, pixel_table, read_band, read_raster
from geosynth.synth.placement import check_grid, check_weight_values, place
from geosynth.synth.release import ReleaseInfo, make_release

__all__ = ["OnTheMapSynthesizer", "onthemap_alpha", "cell_prior", "MAX_PRIOR_RATIO"]

#: Largest ratio of the largest to the smallest prior weight. With it, ``α`` stays finite for
#: every ε and ``ñ`` the synthesizer accepts, so no release fails after the budget is spent
#: (weights 1e-300 and 1e300 made ``α`` infinite at sample time, after the charge).
MAX_PRIOR_RATIO = 1e100


# ---------------------------------------------------------------------- alpha and the prior
def onthemap_alpha(n_synth: Any, epsilon: float, prior_weights: Any) -> np.ndarray:
    """Dirichlet prior of every (cell, combination) for one ε-DP synthetic dataset.

    Parameters
    ----------
    n_synth : array-like of int, shape (B,)
        Public number of synthetic records ``ñ_b`` of each combination (``>= 0``).
    epsilon : float
        Privacy loss of the cell step of one synthetic dataset.
    prior_weights : array-like of float, shape (G,)
        Positive public weight of each cell; ``np.ones(G)`` for a flat prior.

    Returns
    -------
    numpy.ndarray of float64, shape (G, B)
        ``α_ib = ñ_b / (e^ε − 1) · w_i / min w``; the minimum over cells of column ``b`` is the
        bound ``ñ_b / (e^ε − 1)``.

    Raises
    ------
    TypeError
        ``epsilon`` is not a number, or the weights are not real numbers (bools, text, complex).
    geosynth.errors.InputError
        Invalid ``n_synth``, ``epsilon`` or weights (not positive and finite, masked, or a
        largest-to-smallest ratio above :data:`MAX_PRIOR_RATIO`).

    Examples
    --------
    >>> onthemap_alpha([10, 0], 1.0, [1.0, 2.0]).round(3).tolist()
    [[5.82, 0.0], [11.64, 0.0]]
    """
    n = check_counts(n_synth, "n_synth")
    epsilon = check_epsilon(epsilon)
    w = check_real_array(prior_weights, "prior_weights", "an array of positive weights")
    if w.ndim != 1 or w.size == 0 or not np.isfinite(w).all() or (w <= 0).any():
        raise InputError("prior_weights must be a non-empty 1-D array of positive finite weights")
    alpha = np.outer(_scaled_weights(w, "prior_weights"), n / prior_scale(epsilon))
    finite_alpha(float(alpha.max()), epsilon, int(n.max()), scale=float(w.max() / w.min()))
    return alpha


def cell_prior(raster: WeightsLike, grid: Grid) -> np.ndarray:
    """Average a public raster (e.g. population density) over every cell of a grid.

    A cell's weight is the mean of the valid pixels whose *centre* lies in the cell's habitable
    geometry (``grid.locate`` of the pixel centre). A cell holding no pixel centre (raster
    coarser than the grid) takes the pixel under the centre of its box. Nodata and NaN pixels are
    not valid. The mean, not the sum, is used: to weigh clipped cells by their habitable area,
    multiply the result by ``grid.habitable_fraction``. Cells whose weight is not positive (only
    zero or invalid pixels) get no floor here; :class:`OnTheMapSynthesizer` raises them to the
    smallest positive weight.

    Parameters
    ----------
    raster : str, os.PathLike or rasterio dataset
        Single-band raster in the CRS of ``grid``, north-up, non-negative finite values.
    grid : geosynth.lattice.Grid
        The lattice.

    Returns
    -------
    numpy.ndarray of float64, shape (G,)
        Mean weight per cell; 0 where the cell has no valid pixel.

    Raises
    ------
    geosynth.errors.InputError
        The raster cannot be opened, has several data bands or complex values, is rotated, does
        not overlap the grid, or has negative or infinite values over it.
    geosynth.errors.CRSError
        The raster CRS differs from the grid CRS.
    geosynth.errors.MemoryLimitError
        The raster has more than :data:`geosynth.rasters.MAX_WEIGHT_PIXELS` pixels over the
        grid (checked before they are read).
    """
    check_grid(grid)
    return read_raster(
        raster, "prior", lambda dataset: _cell_means(dataset, grid),
        open_hint="pass a GeoTIFF path, an open rasterio dataset or an array of one weight per "
                  "cell",
        expected="an array of weights, a raster path or an open rasterio dataset",
    )


def _cell_means(dataset: Any, grid: Grid) -> np.ndarray:
    values, t, row0, col0 = read_band(dataset, grid, "prior")
    check_weight_values(values, "prior")
    valid = ~np.isnan(values)
    rows, cols = np.nonzero(valid)
    xc = t.c + (cols + col0 + 0.5) * t.a
    yc = t.f + (rows + row0 + 0.5) * t.e
    cell = grid.locate(np.column_stack([xc, yc])) if rows.size else np.empty(0, dtype=np.int64)
    inside = cell >= 0
    n_cells = grid.n_cells
    total = np.bincount(cell[inside], weights=values[rows, cols][inside], minlength=n_cells)
    count = np.bincount(cell[inside], minlength=n_cells)
    means = np.divide(total, count, out=np.zeros(n_cells), where=count > 0)
    empty = np.flatnonzero(count == 0)
    if empty.size:  # raster coarser than the grid: the pixel under the cell-box centre
        box = grid.cell_bounds(empty).reshape(-1, 4)
        px = np.floor(((box[:, 0] + box[:, 2]) / 2 - t.c) / t.a).astype(np.int64) - col0
        py = np.floor(((box[:, 1] + box[:, 3]) / 2 - t.f) / t.e).astype(np.int64) - row0
        ok = (px >= 0) & (px < values.shape[1]) & (py >= 0) & (py < values.shape[0])
        centre = np.full(empty.size, np.nan)
        centre[ok] = values[py[ok], px[ok]]
        means[empty] = np.where(np.isfinite(centre), centre, 0.0)
    return means


def _prior_weights(prior: Any, n_cells: int, grid: Grid | None) -> tuple[np.ndarray, str | None]:
    """Weights (G,) scaled to min 1 with non-positive cells floored, and the kind of prior."""
    if prior is None:
        return np.ones(n_cells), None
    is_dataset = all(hasattr(prior, a) for a in ("read", "transform", "crs"))
    if isinstance(prior, str | os.PathLike) or is_dataset:
        if grid is None:
            raise InputError(
                "a raster prior needs the grid: fit on the CellCounts of geosynth.prepare, or "
                "pass an array with one weight per cell"
            )
        w, kind = cell_prior(prior, grid), "raster"
    else:
        # Bools, text and complex numbers were turned into weights; a masked array gave the
        # values hidden under its mask.
        w = check_real_array(prior, "prior", "an array of weights or a raster")
        kind = "array"
        if w.shape != (n_cells,):
            got = f"the single value {float(w):g}" if w.ndim == 0 else f"shape {w.shape}"
            raise InputError(
                f"prior must have one weight per cell, shape ({n_cells},), got {got}; for a "
                "flat prior leave it out (prior=None)"
            )
        if not np.isfinite(w).all() or (w < 0).any():
            raise InputError(
                "prior weights must be finite and >= 0; cells with weight 0 get the smallest "
                "positive weight"
            )
    positive = w > 0
    if not positive.any():
        raise InputError(f"the {kind} prior has no positive weight in any cell of the grid")
    w = np.where(positive, w, w[positive].min())
    return _scaled_weights(w, f"the {kind} prior"), kind


def _scaled_weights(w: np.ndarray, name: str) -> np.ndarray:
    """Positive finite weights divided by their minimum, refusing a ratio above the cap."""
    with np.errstate(over="ignore"):
        ratio = w.max() / w.min()
    if not ratio <= MAX_PRIOR_RATIO:  # also inf
        raise InputError(
            f"{name} spans more than {MAX_PRIOR_RATIO:.0e} between its largest and smallest "
            "weight (cells with weight 0 take the smallest positive one), which makes the "
            "Dirichlet prior overflow; rescale the weights or raise their floor"
        )
    return w / w.min()


# ---------------------------------------------------------------------- the totals mechanism
def _noisy_totals(totals: np.ndarray, epsilon: float, seed: SeedLike) -> np.ndarray:
    """Two-sided geometric noise on the totals (L1 sensitivity 1), clamped at 0.

    The seeded caller's warning is not repeated. Only then are the warning filters changed:
    they are the whole process's, and changing them for every release hid other threads'
    privacy warnings while the totals were drawn.
    """
    if seed is None:
        noisy = geometric(totals, sensitivity=1, epsilon=epsilon)
    else:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)  # warned about once already
            noisy = geometric(totals, sensitivity=1, epsilon=epsilon, seed=seed)
    return np.maximum(np.asarray(noisy, dtype=np.int64).reshape(totals.shape), 0)


def _warn_if_copied_cells(epsilon_cells_per_release: float, prior_weights: np.ndarray) -> None:
    """PrivacyLeakWarning when the cells' prior is too weak to move any synthetic record.

    A combination's cell probabilities are Dirichlet(``x_b + α_b``) with ``α_ib = w_i ñ_b /
    (e^ε − 1)``: the expected share of its synthetic records in cells holding none of its
    original records is ``W_empty ñ_b / ((e^ε − 1) n_b + W ñ_b)``, at most ``W / (e^ε − 1 +
    W)`` for ``ñ_b`` near ``n_b`` (``W`` the sum of the weights; public numbers only). When
    that bound is below ``1 −`` :data:`~geosynth.dp.mechanisms.NEARLY_EXACT_SHARE`, the releases
    copy which cells hold records in all but name, whatever ε they state.
    """
    total = float(prior_weights.sum())
    share = total / (math.expm1(epsilon_cells_per_release) + total)
    if share >= 1.0 - NEARLY_EXACT_SHARE:
        return
    warnings.warn(
        f"OnTheMapSynthesizer: epsilon_cells / m = {epsilon_cells_per_release:g} gives the "
        f"cells a prior so weak that at most {share:.3g} of the synthetic records (expected, "
        "with noisy totals near the true ones) fall in cells holding no original record of "
        "their combination: the releases publish which cells hold records in all but name. "
        f"Use a smaller epsilon or a larger m (below {math.log1p(total * 999.0):.3g} per "
        "release, at least one record in a thousand moves)",
        PrivacyLeakWarning, stacklevel=caller_stacklevel(),
    )


# ---------------------------------------------------------------------- the synthesizer
class OnTheMapSynthesizer:
    """ε-DP synthetic locations by cell-level Dirichlet-Multinomial draws (OnTheMap).

    Parameters
    ----------
    epsilon : float
        Total privacy loss of one call of :meth:`sample` or :meth:`synthesize` (totals and all
        ``m`` synthetic datasets), for add/remove-one neighbours.
    prior : array-like of float, str, os.PathLike or rasterio dataset, optional
        Public prior surface: one non-negative weight per cell, or a raster averaged over each
        cell with :func:`cell_prior`. Cells with weight 0 get the smallest positive weight.
        Default flat.
    totals_share : float, default 0.1
        Fraction of ``epsilon`` spent on the noisy combination totals, in (0, 1).
    epsilon_totals : float, optional
        Explicit ε of the totals (overrides ``totals_share``), ``0 < epsilon_totals < epsilon``.
    m : int, default 1
        Number of synthetic datasets per release; the cell step of each gets ``ε_cells / m``.
        All share one set of noisy totals.
    accountant : object, optional
        Budget accountant (e.g. :class:`geosynth.dp.Accountant`): charged ``epsilon`` by one
        ``spend`` (totals and cells together) before anything is drawn; a spend it refuses
        charges nothing, also when threads share it.
    max_bytes : int, default 4 GiB
        Largest memory the ``m`` synthetic tables (:meth:`sample`, ``8·m·G·B`` bytes, checked
        by :meth:`fit`) or the ``m`` point datasets (:meth:`synthesize`, about
        ``RELEASE_BYTES_PER_RECORD`` bytes per record: the noise part before anything is
        spent, the noisy totals once drawn) may take.

    Attributes
    ----------
    epsilon, epsilon_totals, epsilon_cells : float
        Total ε and its split, ``epsilon = epsilon_totals + epsilon_cells``. Read-only, as are
        ``epsilon_cells_per_release`` and ``m`` (:class:`~geosynth.dp.synthesizers.FixedParameter`):
        the priors and the charge are calibrated for them.
    epsilon_cells_per_release : float
        ``epsilon_cells / m``.
    m : int
        Number of synthetic datasets.
    prior_weights : numpy.ndarray of float64, shape (G,)
        The prior after fitting, floored and scaled so that its minimum is 1.
    prior_kind : {"array", "raster"} or None
        The kind of prior given.
    combos : pandas.DataFrame or None
        The public combinations (attribute and ``<attribute>_code`` columns) when fitted on a
        CellCounts.
    attributes : tuple of str
        Attribute columns (empty when fitted on an array).
    grid : geosynth.lattice.Grid or None
        The lattice, when fitted on a CellCounts.

    Raises
    ------
    TypeError
        A parameter has the wrong type.
    geosynth.errors.InputError
        A parameter value is invalid.

    Warns
    -----
    geosynth.errors.PrivacyLeakWarning
        ``epsilon_totals`` is so large (above about 7.6) that each combination total is
        published exactly with probability at least
        :data:`~geosynth.dp.mechanisms.NEARLY_EXACT_SHARE`.

    Notes
    -----
    The guarantee, the split of ε and what must be public are explained in
    :mod:`geosynth.dp.onthemap`.
    """

    epsilon = FixedParameter()
    epsilon_totals = FixedParameter()
    epsilon_cells = FixedParameter()
    epsilon_cells_per_release = FixedParameter()
    m = FixedParameter()

    def __init__(
        self,
        epsilon: float,
        *,
        prior: Any = None,
        totals_share: float = 0.1,
        epsilon_totals: float | None = None,
        m: int = 1,
        accountant: Any = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> None:
        self._epsilon = check_epsilon(epsilon)
        if epsilon_totals is None:
            share = check_probability(totals_share, "totals_share")
            self._epsilon_totals = share * self.epsilon
        else:
            self._epsilon_totals = check_epsilon(epsilon_totals, "epsilon_totals")
            if self.epsilon_totals >= self.epsilon:
                raise InputError(
                    f"epsilon_totals={epsilon_totals!r} must be smaller than epsilon={epsilon!r}, "
                    "which also pays for the cells"
                )
        self._epsilon_cells = self.epsilon - self.epsilon_totals
        self._m = check_m(m, "synthetic datasets")
        self._epsilon_cells_per_release = self.epsilon_cells / self.m
        # Both refusals now, before a sample or synthesize charges the accountant. A tiny
        # epsilon times totals_share underflows to 0 (it raised ZeroDivisionError).
        if not self.epsilon_totals > 0.0 or 1.0 / self.epsilon_totals > MAX_INTEGER_NOISE_SCALE:
            smallest = 1.0 / MAX_INTEGER_NOISE_SCALE
            # Name what the caller passed: epsilon_totals, or epsilon through totals_share.
            given = (f"epsilon_totals={self.epsilon_totals:g}" if epsilon_totals is not None
                     else f"epsilon={self.epsilon:g} (times totals_share={share:g}: "
                          f"{self.epsilon_totals:g} for the totals)")
            fix = (f"epsilon_totals >= {smallest:.3g}" if epsilon_totals is not None
                   else f"epsilon >= {smallest / share:.3g}")  # share > 0: checked above
            raise InputError(
                f"{given} makes the totals' noise scale exceed {MAX_INTEGER_NOISE_SCALE:.3g} "
                f"(int64 counts would saturate); use {fix}"
            )
        prior_scale(self.epsilon_cells_per_release, "epsilon_cells / m")
        # OnTheMapSynthesizer(100) published the exact number of records of every combination,
        # labelled ε-DP, without a word: a total is exact with probability tanh(ε_totals / 2).
        warn_if_nearly_exact(self.epsilon_totals, 1, None, "OnTheMapSynthesizer",
                             name="epsilon_totals", what="combination total",
                             fix="Use a smaller epsilon_totals (or totals_share)")
        check_accountant(accountant)
        self.max_bytes = check_max_bytes(max_bytes)
        self.prior = prior
        self.accountant = accountant
        self._counts: np.ndarray | None = None

    def __deepcopy__(self, memo: dict[int, Any]) -> OnTheMapSynthesizer:
        """Return a deep copy that shares the accountant (one budget for both).

        A copy with a ledger of its own released the same records again while each ledger
        showed one spend (:func:`~geosynth.dp.accountant.deepcopy_sharing_budget`).
        """
        return deepcopy_sharing_budget(self, memo)

    # ------------------------------------------------------------------ fitting
    def fit(
        self, counts: CellCounts | Any, *, levels: dict[str, list] | None = None
    ) -> OnTheMapSynthesizer:
        """Store the confidential counts and the prior.

        Parameters
        ----------
        counts : geosynth.CellCounts or array-like of int, shape (G, B)
            Counts per (cell, combination) from ``geosynth.prepare(gdf, grid, attributes,
            levels=...)``, on the public domain (a continuous variable is ignored): every
            combination of it is synthesized, also those absent from the data. Or a plain
            non-negative integer array (then :meth:`synthesize` is not available and a raster
            prior cannot be used).
        levels : dict of str to list, optional
            With a CellCounts: the public domain again, for a check (it must equal the one the
            counts were prepared on). Default: that domain.

        Returns
        -------
        OnTheMapSynthesizer
            ``self``.

        Raises
        ------
        TypeError
            ``counts`` or ``prior`` has the wrong type.
        geosynth.errors.InputError
            Invalid counts (not 2-D, negative, fractional, NaN; also the ``counts`` of a
            CellCounts, which its class does not check), a lattice whose bounds came from
            the points (``counts.grid.snap_unit`` set), a CellCounts not prepared on a declared
            domain or ``levels`` other than it (:func:`~geosynth.dp.locations.public_domain`),
            or an invalid prior.
        geosynth.errors.MemoryLimitError
            The ``m`` synthetic tables would take more than ``max_bytes`` (for a CellCounts,
            checked on the size of the public domain before its table is built), or a raster
            prior has too many pixels (:func:`cell_prior`).

        Warns
        -----
        geosynth.errors.PrivacyLeakWarning
            ``epsilon_cells / m`` leaves the cells' prior so weak that under one synthetic
            record in a thousand is expected outside the cells holding its combination's
            original records (public numbers only: ε, the lattice and the prior weights).
        """
        if isinstance(counts, CellCounts):
            check_public_lattice(counts.grid, "OnTheMapSynthesizer")
            domain = public_domain(counts, levels, where="OnTheMapSynthesizer")
            # Before full_table builds the (G, B) table and the B combinations: a domain over
            # max_bytes took gigabytes and seconds before this refusal (public numbers only).
            self._check_table_memory(counts.grid.n_cells, math.prod(map(len, domain.values())))
            # A CellCounts built or replaced by hand is not checked by its class: -3 failed in
            # NumPy's Dirichlet after the charge, 1.5 became 1 and NaN -2**63 in full_table.
            check_counts(counts.counts, "counts.counts", ndim=2)
            table, combos = full_table(counts, domain)
            self.grid: Grid | None = counts.grid
            self.attributes: tuple[str, ...] = tuple(counts.attributes)
            self.combos: pd.DataFrame | None = combos
            self.levels: dict[str, list] | None = domain
        else:
            if levels is not None:
                raise InputError("levels only applies to the CellCounts of geosynth.prepare")
            shape = np.shape(counts)  # public: before the copies of the checks (74.5 GiB
            if len(shape) == 2:  # of 10^6 x 10^4 raised a bare MemoryError)
                self._check_table_memory(*shape)
            # a masked array gave (and quoted) the confidential values hidden under its mask
            check_real_array(counts, "counts", "an array of counts")
            table = check_counts(counts, "counts", ndim=2)
            self.grid, self.attributes, self.combos, self.levels = None, (), None, None
        self.prior_weights, self.prior_kind = _prior_weights(self.prior, table.shape[0], self.grid)
        _warn_if_copied_cells(self.epsilon_cells_per_release, self.prior_weights)
        self._counts = np.asarray(table, dtype=np.int64)
        return self

    def _check_table_memory(self, n_cells: int, n_combos: int) -> None:
        """MemoryLimitError if ``m`` int64 tables of ``G × B`` exceed ``max_bytes``.

        :meth:`sample` holds the ``(m, G, B)`` tables; ``G``, ``B`` and ``m`` are public.
        """
        need = 8 * self.m * n_cells * n_combos
        if need > self.max_bytes:
            raise MemoryLimitError(
                f"m={self.m} synthetic tables of {n_cells:,} cells x {n_combos:,} "
                f"combinations need {need / 2**30:.3g} GiB, over max_bytes = "
                f"{self.max_bytes / 2**30:.3g} GiB; use fewer datasets m, a coarser lattice or "
                "fewer attribute levels, or raise max_bytes"
            )

    @property
    def n_cells(self) -> int:
        """Number of cells ``G``."""
        self._check_fitted()
        return int(self._counts.shape[0])

    @property
    def n_combos(self) -> int:
        """Number of combinations ``B`` (of the public domain)."""
        self._check_fitted()
        return int(self._counts.shape[1])

    def alpha_for(self, n_synth: Any) -> np.ndarray:
        """Prior ``α`` (G, B) of one synthetic dataset given the public totals ``ñ`` (B,).

        Parameters
        ----------
        n_synth : array-like of int, shape (B,)
            Released number of records per combination.

        Returns
        -------
        numpy.ndarray of float64, shape (G, B)
            :func:`onthemap_alpha` at ``epsilon_cells_per_release`` with :attr:`prior_weights`.
        """
        self._check_fitted()
        n = check_counts(n_synth, "n_synth")
        if n.shape != (self.n_combos,):
            raise InputError(f"n_synth must have shape ({self.n_combos},), got {n.shape}")
        return onthemap_alpha(n, self.epsilon_cells_per_release, self.prior_weights)

    def _check_fitted(self) -> None:
        if self._counts is None:
            raise InputError("OnTheMapSynthesizer is not fitted; call fit(counts) first")

    def _check_ready(self, seed: SeedLike) -> None:
        """Refuse, before the accountant is charged, whatever would fail after it.

        A bad ``seed`` raised from the generator after the spend, and a ``prior_weights``
        replaced after the fit from ``onthemap_alpha``: the budget was gone, nothing released.
        """
        self._check_fitted()
        check_seed(seed)
        w = check_real_array(self.prior_weights, "prior_weights", "an array of positive weights")
        if w.shape != (self.n_cells,) or not np.isfinite(w).all() or (w <= 0).any():
            raise InputError(
                f"prior_weights must hold {self.n_cells} positive finite weights, one per cell; "
                "it was changed after fit: pass the prior to the constructor and fit again"
            )
        _scaled_weights(w, "prior_weights")

    def _check_release_memory(self) -> None:
        """MemoryLimitError if the noise alone could put ``m`` point datasets over max_bytes.

        Public quantities only: ``TOTAL_CAP_SDS`` standard deviations of the geometric noise
        of each of the ``B`` totals, ``m`` and ``max_bytes``. A refusal that also counted the
        records disclosed their number, exactly and for free: raising ``max_bytes`` until the
        refusal stopped found it. The noisy totals themselves are checked once drawn
        (:meth:`_check_noisy_size`).
        """
        sd = math.sqrt(2.0) / self.epsilon_totals
        noise = self.n_combos * (TOTAL_CAP_SDS * sd + 1.0)
        if self.m * noise * RELEASE_BYTES_PER_RECORD > self.max_bytes:
            raise MemoryLimitError(
                f"m={self.m} point datasets could need more than max_bytes = "
                f"{self.max_bytes / 2**30:.3g} GiB (about {RELEASE_BYTES_PER_RECORD} bytes per "
                f"synthetic record; the noise of epsilon_totals={self.epsilon_totals:g} alone "
                f"could add {noise:,.0f} records to each); make fewer datasets m, use a larger "
                "epsilon_totals, or raise max_bytes. Nothing was spent"
            )

    def _check_noisy_size(self, n_synth: np.ndarray) -> None:
        """MemoryLimitError if ``m`` datasets of the noisy totals ``ñ`` exceed ``max_bytes``.

        ``ñ`` is ε-DP, so this refusal (and the size it quotes) is post-processing; it comes
        after the charge.
        """
        records = int(n_synth.sum())
        need = self.m * records * RELEASE_BYTES_PER_RECORD
        if need > self.max_bytes:
            raise MemoryLimitError(
                f"m={self.m} point datasets of {records:,} records each (the noisy totals) "
                f"need about {need / 2**30:.3g} GiB, over max_bytes = "
                f"{self.max_bytes / 2**30:.3g} GiB; make fewer datasets m or raise max_bytes. "
                f"The noisy totals have cost epsilon={self.epsilon:g}; nothing was released"
            )

    # ------------------------------------------------------------------ sampling
    def sample(self, seed: SeedLike = None) -> np.ndarray:
        """Release ``m`` synthetic count tables; spends :attr:`epsilon`.

        Parameters
        ----------
        seed : None, int, numpy.random.SeedSequence or numpy.random.Generator
            ``None`` (the only choice for a release) uses fresh OS entropy. A seed is for tests
            only: it issues a :class:`~geosynth.errors.PrivacyLeakWarning`.

        Returns
        -------
        numpy.ndarray of int64, shape (m, G, B)
            Synthetic counts; ``sample.sum(axis=1)`` is the same noisy totals ``ñ_b`` in every
            dataset.

        Raises
        ------
        TypeError, geosynth.errors.InputError
            Not fitted, an invalid ``seed``, or :attr:`prior_weights` changed since the fit into
            an invalid prior; nothing is spent.
        geosynth.errors.BudgetExceededError
            From the accountant, before anything is drawn.
        """
        self._check_ready(seed)
        self._spend()
        rng = private_generator(seed, where="OnTheMapSynthesizer.sample")
        return self._draw(rng, self._draw_totals(rng, seed))

    def synthesize(
        self, seed: SeedLike = None, weights: WeightsLike = None, geometry: str = "geometry"
    ) -> list[gpd.GeoDataFrame]:
        """Release ``m`` synthetic point datasets; spends :attr:`epsilon`.

        Parameters
        ----------
        seed : None, int, numpy.random.SeedSequence or numpy.random.Generator
            ``None`` for a release; a seed for tests only (warns). The same seed gives the counts
            of :meth:`sample` with that seed.
        weights : str, os.PathLike, rasterio dataset or geosynth.synth.PixelTable, optional
            Public raster to place points within their cell in proportion to (see
            :func:`geosynth.synth.place_in_cells`); default uniform over the habitable part.
        geometry : str, default "geometry"
            Name of the geometry column.

        Returns
        -------
        list of geopandas.GeoDataFrame
            ``m`` datasets with the attribute columns and synthetic points in the grid CRS, rows
            in random order with a fresh RangeIndex. Nothing of the input is carried over (no
            coordinates, cell ids or index). ``attrs["geosynth"]`` holds ``method="onthemap"``,
            ``release``, ``epsilon``, ``epsilon_totals``, ``epsilon_cells``, ``m``,
            ``neighbours``, ``prior``, ``weighted``, ``noise`` (``"seeded"`` when a seed was
            given: then the releases are not ε-DP) and ``ledger`` (``accountant.to_dict()``
            after the spend, or None), and never a seed.

        Raises
        ------
        TypeError, geosynth.errors.InputError
            Not fitted, fitted on a plain array (no grid or attributes), an invalid ``seed``,
            ``weights`` or ``geometry`` (InputError: not a non-empty str, or the name of an
            attribute column); nothing is spent.
        geosynth.errors.MemoryLimitError
            The noise of the totals alone could make the ``m`` datasets take more than
            ``max_bytes`` (nothing is spent: the check uses public quantities only, never the
            number of records); or, once drawn, the noisy totals do (then ``epsilon`` is
            spent and nothing is released).
        geosynth.errors.BudgetExceededError
            From the accountant, before anything is drawn.
        """
        self._check_ready(seed)
        if self.grid is None or self.combos is None:
            raise InputError(
                "synthesize needs a fit on the CellCounts of geosynth.prepare (grid and "
                "attributes); with a plain array use sample()"
            )
        check_geometry_name(geometry, self.attributes)
        self._check_release_memory()
        table = pixel_table(weights, self.grid)
        self._spend()
        rng = private_generator(seed, where="OnTheMapSynthesizer.synthesize")
        n_synth = self._draw_totals(rng, seed)
        self._check_noisy_size(n_synth)
        tables = self._draw(rng, n_synth)
        rng = after_noise_generator(rng, seed)  # the noise's own generator publishes nothing
        n_combos = self.n_combos
        attributes = self.combos[list(self.attributes)]
        ledger = ledger_of(self.accountant)
        releases = []
        for release, counts in enumerate(tables):
            flat = np.repeat(np.arange(counts.size), counts.ravel())
            flat = flat[rng.permutation(flat.size)]
            cells, combo = np.divmod(flat, n_combos)
            xy = place(self.grid, cells, rng, table)
            data = attributes.iloc[combo].reset_index(drop=True)
            info = ReleaseInfo(
                method="onthemap",
                release=release,
                weighted=table is not None,
                epsilon=self.epsilon,
                neighbours="add-remove",
                noise=noise_source(seed),
                ledger=ledger,
                parameters={"epsilon_totals": self.epsilon_totals,
                            "epsilon_cells": self.epsilon_cells, "prior": self.prior_kind},
                m=self.m,
            )
            releases.append(make_release(data, xy, geometry, self.grid.crs, info))
        return releases

    def _spend(self) -> None:
        """Charge the accountant ``epsilon`` in one spend, before any draw.

        One ``accountant.spend(epsilon)``, labelled with the split: the totals (``epsilon_totals``)
        and the cell step (``epsilon_cells``, one partition per combination: disjoint records,
        parallel composition) add up to ``epsilon``. One spend is the accountant's own
        atomic check-and-record: a spend that does not fit records nothing, even when threads
        share the accountant. (A check of ``epsilon`` followed by separate spends for the totals
        and the cells let two threads both pass the check; the later one's cells were then
        refused after its totals were charged, so the budget paid for a release that never
        happened.) Inside a caller's parallel block (one synthesizer per region) the spend is
        one partition costing ``epsilon``.
        """
        if self.accountant is None:
            return
        self.accountant.spend(
            self.epsilon, 0.0,
            label=(f"onthemap: totals epsilon={self.epsilon_totals:g} + cells "
                   f"epsilon={self.epsilon_cells:g} ({self.n_combos} combinations in parallel, "
                   f"m={self.m})"),
        )

    def _draw_totals(self, rng: np.random.Generator, seed: SeedLike) -> np.ndarray:
        """Draw the noisy combination totals ``ñ`` (B,) of a release."""
        totals_seed = None if seed is None else int(rng.integers(2**63 - 1))
        return _noisy_totals(self._counts.sum(axis=0), self.epsilon_totals, totals_seed)

    def _draw(self, rng: np.random.Generator, n_synth: np.ndarray) -> np.ndarray:
        """Draw m Dirichlet-Multinomial tables per combination given the totals: (m, G, B)."""
        x = self._counts
        alpha = onthemap_alpha(n_synth, self.epsilon_cells_per_release, self.prior_weights)
        out = np.zeros((self.m, *x.shape), dtype=np.int64)
        for b in range(x.shape[1]):
            out[:, :, b] = draw_dirichlet_multinomial(
                rng, alpha[:, b], x[:, b], int(n_synth[b]), self.m
            )
        return out

    def __repr__(self) -> str:
        return (
            f"OnTheMapSynthesizer(epsilon={self.epsilon:g}, epsilon_totals="
            f"{self.epsilon_totals:g}, m={self.m})"
        )
