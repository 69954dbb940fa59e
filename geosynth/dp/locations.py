"""ε-differentially private synthetic locations: noisy counts, noise-aware fit, DP releases.

The pipeline, every step after the first being post-processing of a DP output:

1. :func:`dp_counts` adds two-sided geometric (discrete Laplace) noise to every (cell,
   attribute-combination) count of a lattice of public cells and a public attribute domain.
2. :meth:`geosynth.PaivaModel.fit` with the :class:`NoisyCounts` is *noise-aware*: the true counts
   are latent and drawn inside the Gibbs sweep from Poisson(c; λ) × DiscreteLaplace(c̃ − c), in the
   spirit of Charest's (2011) inference on DP synthetic data (Marcolin 2018, §2.6).
3. :func:`dp_synthesize` draws each release from one posterior draw: the number of records of
   every combination is that draw's latent total, and each record's cell follows λ. The original
   records (their attribute values, order, index) are never used, so the release is ε-DP.

:func:`dp_release` runs the three steps; ``geosynth.synthesize(counts, epsilon=...)`` calls it.

Neighbouring datasets. ε is stated for *add/remove-one-record* neighbours (unbounded DP): adding
or removing a record changes exactly one count by one, so the sensitivity of the whole table is 1
and, by parallel composition over the disjoint (cell, combination) partitions, the table costs ε.
Under *replace-one* neighbours a record can leave one count and enter another: sensitivity 2, and
:func:`dp_counts` with ``neighbours="replace"`` doubles the noise scale for the same ε.

What must be public. The lattice (build it from the study region, not from the points, e.g. not
:meth:`Grid.from_points`), the attribute domain (pass ``levels``) and the model settings. The
number of records is *not* assumed public: the releases' sizes come from the posterior of the
latent totals.
"""

from __future__ import annotations

import itertools
import math
import numbers
import warnings
from dataclasses import dataclass, field
from typing import Any

import geopandas as gpd
import numpy as np
import pandas as pd

from geosynth._random import SeedLike
from geosynth.data import CellCounts, CountTable
from geosynth.dp._randomness import private_generator, private_seed
from geosynth.dp.accountant import Accountant
from geosynth.dp.mechanisms import geometric
from geosynth.errors import InputError, PrivacyLeakWarning
from geosynth.lattice import Grid
from geosynth.synth.placement import PixelTable, WeightsLike, place

__all__ = ["NoisyCounts", "DPRelease", "dp_counts", "dp_synthesize", "dp_release"]

_NEIGHBOURS = {"add-remove": 1, "replace": 2}


@dataclass(frozen=True, eq=False)
class NoisyCounts(CountTable):
    """ε-DP counts per (cell, attribute combination), from :func:`dp_counts`.

    Holds only released quantities: no record, cell id of a record, index or exact count.

    Attributes
    ----------
    counts : numpy.ndarray of int64, shape (G, B)
        Noisy counts c̃ = c + noise; may be negative (keep them so: clipping would bias).
    combos : pandas.DataFrame
        Every combination of the public attribute domain (``B`` rows, codes in the order of
        ``levels``): attribute columns, ``<attribute>_code`` columns and ``n_records``, the noisy
        total of the combination (sum of its noisy counts; post-processing).
    attributes : tuple of str
    levels : dict of str to list
        The public attribute domain.
    grid : geosynth.lattice.Grid
    epsilon : float
        Privacy loss of the table.
    sensitivity : int
        1 for add/remove-one neighbours, 2 for replace-one.
    neighbours : str
    ledger : dict or None
        ``Accountant.to_dict()`` after the spend, when an accountant was given.
    """

    counts: np.ndarray
    combos: pd.DataFrame
    attributes: tuple[str, ...]
    levels: dict[str, list]
    grid: Grid
    epsilon: float
    sensitivity: int
    neighbours: str
    ledger: dict | None = None
    continuous: None = None
    zbar: None = None

    def __post_init__(self) -> None:
        self.counts.setflags(write=False)

    @property
    def noise_scale(self) -> float:
        """Scale b = Δ/ε of the discrete Laplace noise, P(k) ∝ exp(−|k|/b)."""
        return self.sensitivity / self.epsilon

    @property
    def n_records(self) -> int:
        """Noisy total of the records, clipped at 0 (a released quantity)."""
        return max(int(self.counts.sum()), 0)

    def __repr__(self) -> str:
        return (f"NoisyCounts(epsilon={self.epsilon:g}, neighbours={self.neighbours!r}, "
                f"n_cells={self.n_cells}, n_combos={self.n_combos}, "
                f"attributes={self.attributes!r})")


def dp_counts(
    counts: CellCounts,
    epsilon: float,
    accountant: Accountant | None = None,
    *,
    levels: dict[str, list] | None = None,
    neighbours: str = "add-remove",
    seed: SeedLike = None,
) -> NoisyCounts:
    """Release every (cell, combination) count with the geometric mechanism (ε-DP).

    Parameters
    ----------
    counts : CellCounts
        Exact counts from :func:`geosynth.prepare`, on a lattice built from public information.
    epsilon : float
        Privacy loss of the whole table (parallel composition over disjoint counts).
    accountant : geosynth.dp.Accountant, optional
        Charged ε (label ``"dp_counts"``) before any noise is drawn.
    levels : dict of str to list, optional
        The public domain of each attribute. Every combination of it gets a noisy count, also
        those absent from the data: publishing only the combinations present would disclose
        which exist. Default: the levels seen in the data, with a :class:`PrivacyLeakWarning`.
    neighbours : {"add-remove", "replace"}
        Neighbouring-dataset relation ε refers to (sensitivity 1 or 2; see module docstring).
    seed : None or int
        For tests only: a seed makes the noise reproducible and triggers a
        :class:`PrivacyLeakWarning`. Leave None for a release (fresh OS entropy via OpenDP).

    Returns
    -------
    NoisyCounts

    Raises
    ------
    geosynth.errors.InputError
        Invalid arguments, a continuous variable (not supported under DP), or data levels outside
        the declared domain.
    geosynth.errors.BudgetExceededError
        The accountant's budget cannot pay ε (nothing is drawn).
    """
    if not isinstance(counts, CellCounts):
        raise InputError(f"counts must be the CellCounts of geosynth.prepare, got "
                         f"{type(counts).__name__}")
    if counts.continuous is not None:
        raise InputError(
            f"continuous variable {counts.continuous!r}: a DP release of continuous values needs "
            "clamping bounds and its own noisy sums, which geosynth does not provide yet; "
            "prepare the counts without continuous= for a DP release"
        )
    if neighbours not in _NEIGHBOURS:
        raise InputError(f"neighbours must be 'add-remove' or 'replace', got {neighbours!r}")
    domain = _public_domain(counts, levels)
    table, combos = _full_table(counts, domain)
    sensitivity = _NEIGHBOURS[neighbours]
    noisy = geometric(table, sensitivity=sensitivity, epsilon=epsilon, seed=seed,
                      accountant=accountant, label="dp_counts")
    noisy = np.asarray(noisy, dtype=np.int64).reshape(table.shape)
    combos["n_records"] = noisy.sum(axis=0)
    return NoisyCounts(
        counts=noisy, combos=combos, attributes=tuple(counts.attributes), levels=domain,
        grid=counts.grid, epsilon=float(epsilon), sensitivity=sensitivity, neighbours=neighbours,
        ledger=None if accountant is None else accountant.to_dict(),
    )


def _public_domain(counts: CellCounts, levels: dict[str, list] | None) -> dict[str, list]:
    if levels is None:
        warnings.warn(
            "dp_counts: the attribute levels are taken from the confidential data, which "
            "discloses which levels occur; pass levels={attribute: [...]} with the public domain",
            PrivacyLeakWarning, stacklevel=3,
        )
        return {a: list(counts.levels[a]) for a in counts.attributes}
    if not isinstance(levels, dict):
        raise InputError(f"levels must be a dict attribute -> list of levels, got "
                         f"{type(levels).__name__}")
    domain = {}
    for a in counts.attributes:
        if a not in levels:
            raise InputError(f"levels has no entry for attribute {a!r}; give its public levels")
        declared = list(levels[a])
        missing = [v for v in counts.levels[a] if v not in declared]
        if missing:
            raise InputError(f"attribute {a!r} has levels {missing[:5]} in the data that are not "
                             f"in levels[{a!r}] = {declared[:10]}; declare the full domain")
        domain[a] = declared
    return domain


def _full_table(counts: CellCounts, domain: dict[str, list]) -> tuple[np.ndarray, pd.DataFrame]:
    """Return the counts of every combination of ``domain`` (G, B_full) and its combos."""
    attributes = list(counts.attributes)
    product = list(itertools.product(*(range(len(domain[a])) for a in attributes)))
    combos = pd.DataFrame({a: [domain[a][c[k]] for c in product] for k, a in enumerate(attributes)})
    for k, a in enumerate(attributes):
        combos[f"{a}_code"] = np.array([c[k] for c in product], dtype=np.int64)
    sizes = [len(domain[a]) for a in attributes]
    position = np.zeros(counts.n_combos, dtype=np.int64)
    for a, size in zip(attributes, sizes, strict=True):
        index = {v: j for j, v in enumerate(domain[a])}
        position = position * size + counts.combos[a].map(index).to_numpy(dtype=np.int64)
    table = np.zeros((counts.n_cells, len(product)), dtype=np.int64)
    table[:, position] = counts.counts
    return table, combos


@dataclass
class DPRelease:
    """Result of :func:`dp_release`: everything here is ε-DP and may be published.

    Attributes
    ----------
    releases : list of geopandas.GeoDataFrame
        The synthetic datasets.
    fit : geosynth.PaivaFit
        The noise-aware fit (a function of the noisy counts only).
    noisy : NoisyCounts
    accountant : geosynth.dp.Accountant
        The budget and its ledger.
    """

    releases: list[gpd.GeoDataFrame]
    fit: Any
    noisy: NoisyCounts
    accountant: Accountant = field(repr=False)

    @property
    def epsilon(self) -> float:
        """Total privacy loss spent."""
        return self.accountant.spent_epsilon


def dp_synthesize(
    fit: Any,
    m: int = 5,
    *,
    crs: Any = None,
    geometry: str = "geometry",
    weights: WeightsLike = None,
    seed: SeedLike = None,
) -> list[gpd.GeoDataFrame]:
    """Draw ``m`` synthetic releases from a noise-aware fit (post-processing: still ε-DP).

    Release ``l`` uses retained posterior draw ``d = floor((l + ½)·T/m)``
    (:func:`geosynth.synth.release_draws`). Combination ``b`` gets ``N_b`` records, the draw's
    latent total of that combination, and each record a cell ``i`` with probability
    ``λ_ib / Σ_i' λ_i'b``, then a point in the cell. The records' attribute values are those of
    their combination; rows are shuffled and indexed 0..n−1.

    Parameters
    ----------
    fit : geosynth.PaivaFit
        A noise-aware fit (``PaivaModel().fit(dp_counts(...))``).
    m : int, default 5
        Number of releases.
    crs : optional
        CRS of the output (default: the grid's).
    geometry : str, default "geometry"
        Name of the geometry column.
    weights : str, os.PathLike or rasterio dataset, optional
        Public raster of placement weights within cells (see
        :func:`geosynth.synth.place_in_cells`).
    seed : None or int
        Tests only (reproducible; :class:`PrivacyLeakWarning`).

    Returns
    -------
    list of geopandas.GeoDataFrame
        Attribute columns and synthetic points; ``attrs["geosynth"]`` holds the method, release
        number, ε, neighbour relation and ledger, and never a seed.
    """
    from geosynth.synth.paiva import release_draws
    from geosynth.synth.release import make_release

    noisy = getattr(fit, "counts", None)
    if not isinstance(noisy, NoisyCounts) or fit.latent_totals is None:
        raise InputError(
            "dp_synthesize needs a noise-aware fit of dp_counts(...) output; a fit of exact "
            "counts is not differentially private"
        )
    rng = private_generator(seed, where="dp_synthesize")
    draws = release_draws(fit, m)
    table = None if weights is None else PixelTable.from_raster(weights, noisy.grid)
    releases = []
    for release, draw in enumerate(draws.tolist()):
        # λ of stored draw ``draw`` and the latent totals of the same retained draw.
        totals = fit.latent_totals[fit.draw_position(draw)]
        cells, combo = _draw_records(fit.lambda_draw(draw), totals, rng)
        xy = place(noisy.grid, cells, rng, table)
        data = noisy.combos.loc[combo, list(noisy.attributes)].reset_index(drop=True)
        releases.append(make_release(
            data, xy, geometry, noisy.grid.crs if crs is None else crs, "paiva-dp", release,
            epsilon=noisy.epsilon, neighbours=noisy.neighbours, ledger=noisy.ledger,
        ))
    return releases


def _draw_records(lam: np.ndarray, totals: np.ndarray, rng: np.random.Generator):
    """Cells and combinations of one release: N_b records of b, cells ~ λ_·b; shuffled."""
    n_b = np.rint(totals).astype(np.int64)
    combo = np.repeat(np.arange(lam.shape[1]), n_b)
    cells = np.empty(combo.size, dtype=np.int64)
    start = 0
    for b, n in enumerate(n_b.tolist()):
        if n:
            p = lam[:, b] / lam[:, b].sum()
            cells[start:start + n] = rng.choice(lam.shape[0], size=n, p=p)
        start += n
    order = rng.permutation(combo.size)
    return cells[order], combo[order]


def dp_release(
    counts: CellCounts,
    epsilon: float,
    m: int = 5,
    *,
    levels: dict[str, list] | None = None,
    neighbours: str = "add-remove",
    accountant: Accountant | None = None,
    model: Any = None,
    n_iter: int = 3000,
    burn_in: int = 1000,
    thin: int = 4,
    chains: int = 2,
    progress: bool = True,
    weights: WeightsLike = None,
    geometry: str = "geometry",
    seed: int | None = None,
) -> DPRelease:
    """ε-DP synthetic locations: noisy counts → noise-aware fit → ``m`` releases.

    Parameters
    ----------
    counts : CellCounts
        Exact counts from :func:`geosynth.prepare` (no continuous variable).
    epsilon : float
        Total privacy loss of the release (all ``m`` synthetic datasets together: they are
        post-processing of one noisy table).
    m : int, default 5
    levels, neighbours
        See :func:`dp_counts`.
    accountant : geosynth.dp.Accountant, optional
        Budget to charge; default a fresh ``Accountant(epsilon)``.
    model : geosynth.PaivaModel, optional
        Default ``PaivaModel(effects="combination")``: every combination has its own level and
        ICAR field, so its total is learnt from its own noisy counts. (Under the additive
        attribute model a combination's total is partly predicted from the others, which at
        small ε pulls it towards the additive fit.)
    n_iter, burn_in, thin, chains, progress
        Passed to :meth:`PaivaModel.fit`.
    weights : optional
        Public placement raster (see :func:`dp_synthesize`).
    geometry : str
        Geometry column name of the releases.
    seed : None or int
        Tests only: reproducible noise and draws, with a :class:`PrivacyLeakWarning`.

    Returns
    -------
    DPRelease

    Notes
    -----
    At small ε the counts of sparse combinations carry little information, and under the vague
    log-scale priors of :class:`~geosynth.Priors` the posterior of their totals shrinks towards
    zero (λ → 0 explains the released counts about as well as the truth does); releases then
    hold fewer records of those combinations than the original. ``docs/results.md`` shows the
    effect over ε. Clipping the noisy counts at zero instead would bias every sparse cell
    upwards.
    """
    from geosynth.model import PaivaModel

    if isinstance(epsilon, bool) or not isinstance(epsilon, numbers.Real) \
            or not math.isfinite(epsilon) or epsilon <= 0:
        raise InputError(f"epsilon must be a finite number > 0, got {epsilon!r}")
    accountant = Accountant(float(epsilon)) if accountant is None else accountant
    noisy = dp_counts(counts, epsilon, accountant, levels=levels, neighbours=neighbours,
                      seed=seed)
    with warnings.catch_warnings():
        # One warning for a seeded run is enough (dp_counts issued it).
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        fit_seed = private_seed(seed, where="dp_release")
    model = PaivaModel(effects="combination") if model is None else model
    fit = model.fit(noisy, n_iter=n_iter, burn_in=burn_in, thin=thin, chains=chains,
                    seed=fit_seed, progress=progress)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        releases = dp_synthesize(fit, m, geometry=geometry, weights=weights,
                                 seed=None if seed is None else fit_seed + 1)
    return DPRelease(releases=releases, fit=fit, noisy=noisy, accountant=accountant)
