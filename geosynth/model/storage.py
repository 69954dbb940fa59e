"""Storage of a fit's draws: what is kept, in how much memory, in chunks of how many sweeps.

:func:`plan_storage` decides, before any sampling, which draws of η a fit keeps under its memory
cap (:class:`StoragePlan`); :func:`plan_auto_storage` does it for ``n_iter="auto"`` fits, whose
length is not known in advance. :func:`chunk_sweeps` sets the sweeps per kernel call.
"""

from __future__ import annotations

import math
import warnings
from typing import Literal, NamedTuple

import numpy as np

from geosynth._messages import format_bytes
from geosynth.errors import GeosynthWarning, MemoryLimitError
from geosynth.model.state import ModelData, model_shape, recorded_scalars
from geosynth.model.stopping import MIN_WINDOW_DRAWS, WINDOW_SEGMENTS, AutoSchedule

__all__ = [
    "CHUNK_WORK", "MAX_CHUNK_SWEEPS", "DEFAULT_MAX_BYTES", "chunk_sweeps",
    "evenly_spaced_draws", "StoragePlan", "plan_storage", "plan_model_storage",
    "plan_auto_storage",
]


# Sweeps per kernel call: about CHUNK_WORK cell-combination updates, so the progress bar moves a
# few times a second whatever the lattice. It depends on the data's shape only, so the same seed
# gives the same draws with or without progress bars (η is recomputed at each chunk start).
CHUNK_WORK = 250_000


MAX_CHUNK_SWEEPS = 500


DEFAULT_MAX_BYTES = 4 * 2**30


def chunk_sweeps(n_cells: int, n_combos: int, thin: int) -> tuple[int, int]:
    """Sweeps per burn-in chunk and per sampling chunk (whole thinning periods)."""
    chunk = max(1, min(MAX_CHUNK_SWEEPS, CHUNK_WORK // (n_cells * n_combos)))
    return chunk, thin * max(1, chunk // thin)


def evenly_spaced_draws(n_keep: int, k: int) -> np.ndarray:
    """Retained draws ``floor((j + 1/2)·n_keep/k)``, ``j = 0 .. k-1`` (all of them if k >= n_keep).

    The middle draw of each of ``k`` equal blocks: distinct, increasing, and ``arange(n_keep)``
    for ``k = n_keep``.

    Parameters
    ----------
    n_keep : int
        Retained draws per chain.
    k : int
        How many to pick.

    Returns
    -------
    numpy.ndarray of int64, shape (min(k, n_keep),)
        The indices of the picked draws.
    """
    k = min(int(k), int(n_keep))
    return ((2 * np.arange(k, dtype=np.int64) + 1) * n_keep) // (2 * k)


class StoragePlan(NamedTuple):
    """What a fit stores, from :func:`plan_storage`.

    Attributes
    ----------
    n_keep : int
        Retained draws per chain (scalars, θ, β and latent totals are stored for each).
    eta_index : numpy.ndarray of int64, shape (k,)
        The retained draws (0-based, per chain) whose η is stored; increasing.
    draws_per_chunk : int
        Retained draws per sampling chunk: rows of the per-chain η scratch buffer.
    n_bytes : int
        Estimated bytes of the stored draws of all chains plus the per-chain η buffers.
    """

    n_keep: int
    eta_index: np.ndarray
    draws_per_chunk: int
    n_bytes: int


def plan_storage(
    *,
    n_iter: int,
    burn_in: int,
    thin: int,
    chains: int,
    n_cells: int,
    n_combos: int,
    n_scalars: int,
    beta: int | bool,
    noise: bool,
    eta_draws: int | Literal["all", "auto"],
    max_bytes: int,
    stacklevel: int = 2,
) -> StoragePlan:
    """Decide how many draws of η a fit stores, or refuse before anything large is allocated.

    Counted, over all chains: float64 scalars (``8·S`` bytes a retained draw), float32 θ and β
    (``4·G`` each, β once per fitted covariate), float64 latent totals of a noise-aware fit
    (``8·B``),
    float32 η of the stored draws (``4·G·B`` each); and per chain the float64 running sum of
    exp η and its scratch term (``16·G·B``) and the float32 η of one sampling chunk
    (``4·G·B`` per draw of the chunk, plus ``4·G`` for a discarded β when β is not fitted).
    Not counted: the sampler state and the data (a few (G, B) float64 arrays per chain).

    Parameters
    ----------
    n_iter, burn_in, thin, chains, eta_draws, max_bytes
        As for :meth:`~geosynth.model.fit.PaivaModel.fit` (validated there).
    n_cells, n_combos, n_scalars : int
        G, B and the number of scalar parameters S.
    beta : int or bool
        Number K of fitted β fields, one per continuous covariate (True: one, False: none).
    noise : bool
        Whether the fit is noise-aware.
    stacklevel : int, default 2
        Of the warning, as for :func:`warnings.warn`.

    Returns
    -------
    StoragePlan

    Raises
    ------
    MemoryLimitError
        ``eta_draws`` asks for more than ``max_bytes`` allows, or (``"auto"``) not even one
        draw of η per chain fits next to the draws of the scalars, θ and β.

    Warns
    -----
    GeosynthWarning
        ``eta_draws="auto"`` keeps η for fewer than all retained draws.
    """
    n_keep = (n_iter - burn_in) // thin
    G, B, S = int(n_cells), int(n_combos), int(n_scalars)
    per_draw = 8 * S + 4 * G * (1 + int(beta)) + (8 * B if noise else 0)
    per_eta = 4 * G * B
    rows = chunk_sweeps(G, B, thin)[1] // thin
    buffers = 16 * G * B + rows * (per_eta + (0 if beta else 4 * G))
    fixed = chains * (n_keep * per_draw + buffers)
    need = fixed + chains * n_keep * per_eta
    fits = max(0, (max_bytes - fixed) // (chains * per_eta))
    what = (f"{chains} chain(s) x {n_keep} retained draws of η ({G:,} cells x {B} combinations, "
            f"{format_bytes(per_eta)} a draw)")
    limit = f"max_bytes = {format_bytes(max_bytes)}"
    parameters = "scalars, θ and β" if beta else "scalars and θ"
    if fits < 1:
        raise MemoryLimitError(
            f"the draws of the {parameters} of {chains} chain(s) x {n_keep} retained draws "
            f"({G:,} cells) and the η buffers take {format_bytes(fixed)}, leaving no room "
            f"under {limit} for even one stored draw of η ({format_bytes(chains * per_eta)} "
            "for all chains); raise thin, lower n_iter or chains, use a coarser grid, or raise "
            "max_bytes"
        )
    if eta_draws == "all":
        k = n_keep
        if need > max_bytes:
            raise MemoryLimitError(
                f"storing {what} needs {format_bytes(need)}, above {limit}; pass "
                f"eta_draws='auto' or eta_draws={min(fits, n_keep)} (store η for fewer draws; "
                "the posterior mean of λ still uses them all), raise thin, use a coarser grid, "
                "or raise max_bytes"
            )
    elif eta_draws == "auto":
        k = min(n_keep, int(fits))
        if k < n_keep:
            warnings.warn(
                f"eta_draws='auto': storing {what} would need {format_bytes(need)}, above "
                f"{limit}, so η is kept for {k} evenly spaced draws per chain ({chains * k} in "
                f"all, so at most {chains * k} synthetic releases). The posterior mean of λ "
                f"still averages all {n_keep} draws per chain, and the {parameters} keep "
                "every draw. To choose, pass eta_draws=<int> (or 'all') and raise max_bytes",
                GeosynthWarning, stacklevel=stacklevel,
            )
    else:
        k = min(n_keep, int(eta_draws))
        if k > fits:
            raise MemoryLimitError(
                f"storing η for eta_draws={k} of {what} needs "
                f"{format_bytes(fixed + chains * k * per_eta)}, above {limit}; pass "
                f"eta_draws={int(fits)} or less (or 'auto'), raise thin, or raise max_bytes"
            )
    return StoragePlan(n_keep=n_keep, eta_index=evenly_spaced_draws(n_keep, k),
                       draws_per_chunk=rows, n_bytes=int(fixed + chains * k * per_eta))


def plan_model_storage(data: ModelData, names: list[str], *, noise: bool, stacklevel: int = 2,
                       **run) -> StoragePlan:
    """Return :func:`plan_storage` for the kernels' arrays (G, B, S and β from them).

    The arrays are those of :func:`~geosynth.model.fit.build_model_data`.

    S is ``len(names)``, the scalars the fit returns (the kernels' τ_β column, recorded also
    when it is not reported, is dropped at the end of the fit: 8 bytes a draw, not counted).

    Parameters
    ----------
    data : ModelData
        The kernels' arrays of :func:`~geosynth.model.fit.build_model_data`.
    names : list of str
        The reported scalar parameters.
    noise : bool
        Whether the fit is noise-aware (it stores latent totals).
    stacklevel : int, default 2
        Stack level of the warning issued when only some η draws fit.
    **run
        ``n_iter``, ``burn_in``, ``thin``, ``chains``, ``eta_draws`` and ``max_bytes``, as
        :func:`plan_storage` takes them.

    Returns
    -------
    StoragePlan
    """
    G, B, _ = model_shape(data)
    return plan_storage(n_cells=G, n_combos=B, n_scalars=len(names),
                        beta=len(data.beta_priors), noise=noise,
                        stacklevel=stacklevel + 1, **run)


def plan_auto_storage(data: ModelData, names: list[str], *, thin: int, chains: int,
                       noise: bool, target_ess: float, max_rhat: float,
                       max_bytes: int) -> tuple[StoragePlan, AutoSchedule]:
    """Rows of the stored window of an ``n_iter="auto"`` fit, and its schedule.

    Every retained draw keeps its η (the λ check and the releases use them), so a draw costs ``8·S +
    4·G`` (θ) ``+ 4·G·K`` (β, one field per fitted covariate) ``+ 8·B`` (latent totals, if
    noise-aware) ``+ 4·G·B`` (η) bytes, S the kernels' recorded scalars
    (:func:`~geosynth.model.state.recorded_scalars`), and a chain's buffers ``40·G·B`` (four float64
    sums of exp η, one per segment of the window, and a scratch term) plus a chunk's discarded β.
    The draws per chain that fit in ``max_bytes`` bound the window
    (:class:`~geosynth.model.stopping.AutoSchedule`).

    Raises
    ------
    MemoryLimitError
        Fewer than ``max(16, 2·target_ess/chains)`` draws per chain fit: the thinning rule
        keeps at least half the window, and the target would be out of reach.

    Warns
    -----
    GeosynthWarning
        Fewer draws per chain fit than the schedule's ``wanted_draws``: R-hat may then stay
        above ``max_rhat`` by its own noise.
    """
    G, B, _ = model_shape(data)
    beta = len(data.beta_priors)
    per_draw = (8 * recorded_scalars(data) + 4 * G * (1 + beta)
                + (8 * B if noise else 0) + 4 * G * B)
    rows = chunk_sweeps(G, B, thin)[1] // thin
    buffers = 8 * (WINDOW_SEGMENTS + 1) * G * B + (0 if beta else 4 * G * rows)
    capacity = max(0, (max_bytes - chains * buffers) // (chains * per_draw))
    need = max(MIN_WINDOW_DRAWS, 2 * math.ceil(target_ess / chains))
    if capacity < need:
        raise MemoryLimitError(
            f"n_iter='auto' with target_ess={target_ess:g} over {chains} chains keeps up to "
            f"{need} draws per chain, each with its η ({G:,} cells x {B} combinations, "
            f"{format_bytes(per_draw)} a draw), but max_bytes = {format_bytes(max_bytes)} "
            f"holds {capacity}; raise max_bytes, lower target_ess, or use a coarser grid"
        )
    schedule = AutoSchedule(thin, chains, target_ess, max_rhat, capacity)
    window = schedule.max_draws
    if window < schedule.wanted_draws:
        warnings.warn(
            f"n_iter='auto': max_bytes = {format_bytes(max_bytes)} holds {window} draws per "
            f"chain with their η ({G:,} cells x {B} combinations), fewer than the "
            f"{schedule.wanted_draws} that keep the noise of R-hat itself well below "
            f"max_rhat={max_rhat:g} over every parameter: the fit may run long or stop at "
            "max_seconds unconverged; raise max_bytes, raise max_rhat, or use a coarser grid",
            GeosynthWarning, stacklevel=4,
        )
    plan = StoragePlan(n_keep=window, eta_index=np.arange(window, dtype=np.int64),
                       draws_per_chunk=rows, n_bytes=int(chains * (window * per_draw + buffers)))
    return plan, schedule
