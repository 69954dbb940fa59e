"""Run geosynth on a Dask cluster: chains and releases as tasks, point counting by partition.

Needs the ``dask`` extra (``pip install "geosynth[dask]"``: ``dask[distributed]`` and
``dask-geopandas``). Every function takes a :class:`distributed.Client`; ``client=None`` uses the
current one (:func:`distributed.get_client`), so the same code runs on a
:class:`distributed.LocalCluster` or, with ``Client("tcp://scheduler:8786")``, on a real cluster.

* :func:`fit_dask` -- one Dask task per Gibbs chain; the draws equal those of
  :meth:`PaivaModel.fit <geosynth.PaivaModel.fit>` with the same ``seed``.
* :func:`synthesize_dask` -- one task per release, each with its own random stream
  (:func:`release_seeds`).
* :func:`evaluate_dask` -- :func:`geosynth.evaluate` with one task per release for the
  per-release measures, combined in the client; the tables equal the in-memory ones.
* :func:`prepare_dask` -- what :func:`geosynth.prepare` does with a
  :class:`dask_geopandas.GeoDataFrame`: points are located and counted partition by partition
  (map, then sum), so the point set need not fit in memory.
* :func:`warm_up` -- compile (or load from numba's cache) the sampling kernels on each worker,
  one worker at a time: concurrent writes can corrupt numba's on-disk cache. The tasks of
  :func:`fit_dask` also do it, under a cluster-wide :class:`distributed.Lock`, on a worker that
  was not warmed up.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from geosynth._random import root_seed_sequence, spawn_seeds
from geosynth.errors import DataWarning, InputError, SamplerError

if TYPE_CHECKING:
    import dask_geopandas
    import distributed
    import geopandas as gpd

    from geosynth.data import CellCounts
    from geosynth.evaluation import Evaluation
    from geosynth.lattice import Grid
    from geosynth.model.fit import PaivaFit, PaivaModel

__all__ = [
    "chain_seeds",
    "evaluate_dask",
    "fit_dask",
    "linked_records_dask",
    "prepare_dask",
    "release_seeds",
    "synthesize_dask",
    "warm_up",
]

_LOCK_NAME = "geosynth-numba-compile"
_WARM = threading.Event()  # set in a worker process once its kernels are compiled or loaded
_WARM_PARALLEL = threading.Event()  # likewise for the chromatic (parallel=True) kernels
_WARM_LOCK = threading.Lock()
_CELL, _N, _Z = "__geosynth_cell", "__geosynth_n", "__geosynth_z"
_SHOW = 5


# --------------------------------------------------------------------------- client and warm-up
def _get_client(client: distributed.Client | None) -> distributed.Client:
    try:
        import distributed
    except ImportError as err:  # pragma: no cover - the dask extra is installed in CI
        raise ImportError(
            'geosynth.distributed needs the dask extra: pip install "geosynth[dask]"'
        ) from err
    if client is not None:
        if not isinstance(client, distributed.Client):
            raise InputError(f"client must be a distributed.Client, got {type(client).__name__}")
        return client
    try:
        return distributed.get_client()
    except ValueError as err:
        raise InputError(
            "no Dask client: pass client=distributed.Client(address) (or LocalCluster()), or "
            "create one before calling"
        ) from err


def _tiny_scenario():
    """Return the warm-up fits' data: a 60-point scenario and its counts on a 3 x 3 lattice."""
    import geosynth

    scenario = geosynth.datasets.paiva_scenario(n=60, seed=0)
    grid = geosynth.Grid.regular(scenario.bounds, shape=(3, 3), crs=scenario.crs)
    return scenario, geosynth.prepare(scenario.data, grid, attributes=["y"])


def _compile_kernels() -> None:
    """Run tiny fits (exact, noise-aware) and metrics so numba compiles or loads their kernels."""
    import geosynth
    from geosynth.dp import dp_counts
    from geosynth.evaluation import _measure_release, _plan_evaluation

    scenario, counts = _tiny_scenario()
    model = geosynth.PaivaModel()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(counts, n_iter=2, burn_in=0, thin=1, chains=1, seed=0, progress=False,
                  n_jobs=1)
        noisy = dp_counts(counts, 1.0, seed=0)
        model.fit(noisy, n_iter=2, burn_in=0, thin=1, chains=1, seed=0, progress=False,
                  n_jobs=1)
        # The numba kernels of the metrics (greedy matching, linked-record distances).
        [release], plan = _plan_evaluation(scenario.data, [scenario.data], ["y"], linked=True)
        _measure_release(scenario.data, release, plan)


def _warm_here() -> bool:
    """Compile the kernels in this process unless done already; True if it compiled now."""
    with _WARM_LOCK:
        if _WARM.is_set():
            return False
        _compile_kernels()
        _WARM.set()
        return True


def _warm_in_task(parallel: bool = False) -> None:
    """From inside a task: warm this worker up under a cluster-wide lock (no-op when warm).

    ``parallel``: also compile or load the chromatic kernels (cached too, and ~2 minutes of
    CPU to compile, so only for tasks that run ``parallel=True`` fits).
    """
    if _WARM.is_set() and (_WARM_PARALLEL.is_set() or not parallel):
        return
    from distributed import Lock

    with Lock(_LOCK_NAME):
        _warm_here()
        if parallel:
            _warm_parallel_here()


def _warm_parallel_here() -> None:
    """Run a tiny chromatic fit once in this process so numba compiles or loads its kernels."""
    with _WARM_LOCK:
        if _WARM_PARALLEL.is_set():
            return
        import geosynth

        _, counts = _tiny_scenario()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            geosynth.PaivaModel().fit(counts, n_iter=2, burn_in=0, thin=1, chains=1, seed=0,
                                      progress=False, n_jobs=1, parallel=True)
        _WARM_PARALLEL.set()


def warm_up(client: distributed.Client | None = None) -> dict[str, bool]:
    """Compile or load the numba kernels on every worker, one worker at a time.

    The kernels are compiled with ``cache=True``: the first worker writes numba's cache, the
    others load it. Running this before many tasks start avoids concurrent cache writes, which
    can corrupt the cache. Idempotent: a warm worker returns at once.

    Parameters
    ----------
    client : distributed.Client, optional
        Default: the current client.

    Returns
    -------
    dict of str to bool
        Per worker address, whether it compiled now (False: it was warm already).
    """
    client = _get_client(client)
    done = {}
    for address in sorted(client.nthreads()):
        done.update(client.run(_warm_here, workers=[address]))
    return done


# --------------------------------------------------------------------------- chains


def chain_seeds(seed, chains: int) -> list[np.random.SeedSequence]:
    """Seeds that make one-chain fits reproduce the chains of a ``chains``-chain fit.

    ``PaivaModel().fit(counts, chains=1, seed=chain_seeds(seed, chains)[c])`` runs chain ``c``
    of ``PaivaModel().fit(counts, chains=chains, seed=seed)`` with the same random stream, so
    the same draws. Like ``fit``, a Generator ``seed`` is advanced and a SeedSequence spawns
    ``chains`` children.

    Parameters
    ----------
    seed : None, int, numpy.random.SeedSequence or numpy.random.Generator
        The ``seed`` of the multi-chain fit.
    chains : int
        Number of chains.

    Returns
    -------
    list of numpy.random.SeedSequence
        ``chains`` seeds; the only child of seed ``c`` is child ``c`` of ``seed``.
    """
    return [_parent_of(child) for child in root_seed_sequence(seed).spawn(chains)]


def _parent_of(child: np.random.SeedSequence) -> np.random.SeedSequence:
    """Return a SeedSequence whose next (first) spawned child is ``child``."""
    return np.random.SeedSequence(child.entropy, spawn_key=child.spawn_key[:-1],
                                  pool_size=child.pool_size,
                                  n_children_spawned=child.spawn_key[-1])


def _run_chain(model, counts, seed, chain, options) -> dict[str, Any]:
    """Dask task: one chain; returns its draws (not the counts, which the client holds)."""
    _warm_in_task(parallel=bool(options.get("parallel")))
    try:
        fit = model.fit(counts, chains=1, seed=seed, progress=False, n_jobs=1, **options)
    except SamplerError as err:
        raise SamplerError(str(err).replace("chain 0:", f"chain {chain}:", 1)) from err
    return {name: getattr(fit, name) for name in
            ("scalar_names", "scalars", "theta", "beta", "eta", "latent_totals", "noise_scale",
             "eta_draw_index", "lambda_chain_means")}


def fit_dask(
    model: PaivaModel,
    counts: CellCounts,
    *,
    client: distributed.Client | None = None,
    n_iter: int = 8000,
    burn_in: int = 2000,
    thin: int = 6,
    chains: int = 2,
    seed=None,
    max_bytes: int | None = None,
    noise: float | None = None,
    eta_draws: int | str = "auto",
    **fit_options: Any,
) -> PaivaFit:
    """Fit ``model`` with one Dask task per chain; the draws equal ``model.fit``'s.

    Parameters
    ----------
    model : geosynth.PaivaModel
        The model to fit.
    counts : CellCounts or geosynth.dp.NoisyCounts
        As for :meth:`PaivaModel.fit <geosynth.PaivaModel.fit>`; sent to the workers once.
    client : distributed.Client, optional
        Default: the current client.
    n_iter, burn_in, thin, chains, seed, noise
        As for :meth:`PaivaModel.fit <geosynth.PaivaModel.fit>`. Chain ``c`` uses the random
        stream it has in ``model.fit(counts, chains=chains, seed=seed)`` (:func:`chain_seeds`),
        so the result equals the in-memory fit draw for draw.
    max_bytes : int, optional
        Bound on the draws of *all* chains, gathered on the client (default: ``fit``'s 4 GiB).
    eta_draws : int, "all" or "auto", default "auto"
        As for :meth:`PaivaModel.fit <geosynth.PaivaModel.fit>`, over all chains: the client
        plans the storage (and warns) as ``model.fit`` would, and every task stores η for the
        same retained draws.
    **fit_options
        Other keyword arguments of ``model.fit`` (each task runs with ``chains=1``,
        ``progress=False`` and ``n_jobs=1``).

    Returns
    -------
    geosynth.PaivaFit
        The chains concatenated in order.

    Raises
    ------
    InputError
        Invalid arguments, or no Dask client.
    MemoryLimitError
        The draws of all chains would exceed ``max_bytes``.
    SamplerError
        A chain failed (names the chain and the parameter block).

    Warns
    -----
    geosynth.errors.GeosynthWarning
        ``eta_draws="auto"`` keeps η for fewer than all retained draws.
    """
    from geosynth.model.fit import (
        DEFAULT_MAX_BYTES,
        PaivaFit,
        PaivaModel,
        _check_run_arguments,
        _check_storage_arguments,
        build_model_data,
    )

    if not isinstance(model, PaivaModel):
        raise InputError(f"model must be a geosynth.PaivaModel, got {type(model).__name__}")
    _check_run_arguments(n_iter, burn_in, thin, chains)
    reserved = {"chains", "progress", "n_jobs"} & set(fit_options)
    if reserved:
        raise InputError(f"fit_dask sets {sorted(reserved)} itself; leave them out")
    max_bytes = DEFAULT_MAX_BYTES if max_bytes is None else max_bytes
    _check_storage_arguments(eta_draws, max_bytes)
    data, names = build_model_data(counts, model)  # validates counts against the model
    noisy = noise is not None or getattr(counts, "noise_scale", None) is not None
    n_eta = _planned_eta_draws(data, names, n_iter, burn_in, thin, chains, max_bytes, noisy,
                               eta_draws)
    client = _get_client(client)
    seeds = chain_seeds(seed, chains)
    [model_f, counts_f] = client.scatter([model, counts], broadcast=True, hash=False)
    # Each task stores η for the n_eta draws planned for all chains (within its 1-chain bound).
    options = dict(fit_options, n_iter=n_iter, burn_in=burn_in, thin=thin, noise=noise,
                   max_bytes=max_bytes, eta_draws=n_eta)
    futures = [
        client.submit(_run_chain, model_f, counts_f, s, c, options, pure=False,
                      key=f"geosynth-chain-{c}-{os.urandom(4).hex()}")
        for c, s in enumerate(seeds)
    ]
    parts = client.gather(futures)
    n = min(p["scalars"].shape[1] for p in parts)
    n_stored = min(p["eta"].shape[1] for p in parts)

    def stack(name, rows=n):
        if parts[0][name] is None:
            return None
        return np.concatenate([p[name][:, :rows] for p in parts], axis=0)

    means = None if any(p["lambda_chain_means"] is None for p in parts) else np.concatenate(
        [p["lambda_chain_means"] for p in parts], axis=0)
    return PaivaFit(model=model, counts=counts, scalar_names=parts[0]["scalar_names"],
                    scalars=stack("scalars"), theta=stack("theta"), beta=stack("beta"),
                    eta=stack("eta", n_stored), thin=thin, burn_in=burn_in,
                    noise_scale=parts[0]["noise_scale"], latent_totals=stack("latent_totals"),
                    eta_draw_index=parts[0]["eta_draw_index"][:n_stored],
                    lambda_chain_means=means)


def _planned_eta_draws(data, names, n_iter, burn_in, thin, chains, max_bytes, noisy,
                       eta_draws) -> int:
    """Plan the storage of all chains as ``model.fit`` would; return η draws per chain."""
    from geosynth.model.fit import plan_model_storage

    plan = plan_model_storage(data, names, n_iter=n_iter, burn_in=burn_in, thin=thin,
                              chains=chains, noise=noisy, eta_draws=eta_draws,
                              max_bytes=max_bytes, stacklevel=4)
    return int(plan.eta_index.size)


# --------------------------------------------------------------------------- releases
def release_seeds(seed, m: int) -> list[np.random.SeedSequence]:
    """Seed of each of ``m`` releases, as :func:`geosynth.synthesize` derives them.

    See :func:`geosynth._random.spawn_seeds`.
    """
    return spawn_seeds(seed, m)


def _one_draw_fit(fit: PaivaFit, index: int) -> dict[str, Any]:
    """Return stored η draw ``index``'s arrays, shaped as a 1-chain 1-draw fit."""
    chain, retained = fit.draw_position(index)
    stored = index - chain * fit.n_eta_draws

    def pick(a, draw=retained):
        return None if a is None else a[chain, draw][None, None]

    return {"scalars": pick(fit.scalars), "theta": pick(fit.theta), "beta": pick(fit.beta),
            "eta": pick(fit.eta, stored), "latent_totals": None, "eta_draw_index": None,
            "lambda_chain_means": None, "_mean_lambda": None}


def _release_task(template, counts, gdf, arrays, seed, release, draw, weights):
    """Dask task: release ``release`` from posterior draw ``draw`` with its own generator."""
    from geosynth.synth import paiva

    fit = dataclasses.replace(template, counts=counts, **arrays)
    # A synthesize that derives its release streams with release_seeds (PER_RELEASE_STREAMS)
    # gets the seed whose only child is this release's; the one-generator synthesize gets the
    # release's generator itself. Either way the release draws from default_rng(seed).
    if getattr(paiva, "PER_RELEASE_STREAMS", False):
        stream = _parent_of(seed)
    else:
        stream = np.random.default_rng(seed)
    [out] = paiva.synthesize(fit, gdf, m=1, seed=stream, weights=weights)
    out.attrs["geosynth"].update(release=release, posterior_draw=draw)
    return out


def synthesize_dask(
    fit: PaivaFit,
    gdf: gpd.GeoDataFrame,
    m: int = 5,
    seed=None,
    weights: str | os.PathLike | None = None,
    *,
    client: distributed.Client | None = None,
) -> list[gpd.GeoDataFrame]:
    """Make ``m`` releases like :func:`geosynth.synthesize`, one Dask task per release.

    Release ``l`` uses posterior draw ``release_draws(fit, m)[l]``, as in memory, and its own
    generator ``numpy.random.default_rng(release_seeds(seed, m)[l])``, so releases do not depend
    on one another and any subset can be recomputed. When in-memory ``synthesize`` draws its
    releases the same way (``geosynth.synth.paiva.PER_RELEASE_STREAMS``), the releases equal its
    releases for the same seed. (A ``synthesize`` that runs the releases in turn on one
    generator gives other releases with the same distribution; release 0 of ``synthesize(...,
    seed=default_rng(release_seeds(seed, m)[0]))`` is then release 0 here.)

    Parameters
    ----------
    fit : geosynth.PaivaFit
        An exact fit (noise-aware fits go through :func:`geosynth.synthesize`).
    gdf : geopandas.GeoDataFrame
        The records given to :func:`geosynth.prepare`, in memory; sent to the workers once.
    m : int, default 5
        Number of releases.
    seed : None, int, numpy.random.SeedSequence or numpy.random.Generator
        The same seed gives the same releases.
    weights : str or os.PathLike, optional
        Path of the weights raster (read by each task, so it must be readable by the workers).
    client : distributed.Client, optional
        Default: the current client.

    Returns
    -------
    list of geopandas.GeoDataFrame
        As :func:`geosynth.synthesize`, in release order.
    """
    from geosynth._validation import check_m
    from geosynth.model.fit import PaivaFit
    from geosynth.synth.paiva import aligned_rows, release_draws

    if not isinstance(fit, PaivaFit):
        raise InputError(f"fit must be a geosynth.PaivaFit, got {type(fit).__name__}")
    if fit.noise_scale is not None:
        raise InputError("synthesize_dask takes exact fits; synthesize a noise-aware fit with "
                         "geosynth.synthesize")
    if weights is not None and not isinstance(weights, (str, os.PathLike)):
        raise InputError("weights must be a path the workers can open, got "
                         f"{type(weights).__name__}")
    m = check_m(m)
    aligned_rows(gdf, fit.counts)  # fail here, not in m tasks
    draws = release_draws(fit, m).tolist()
    client = _get_client(client)
    seeds = release_seeds(seed, m)
    template = dataclasses.replace(fit, counts=None, scalars=None, theta=None, beta=None,
                                   eta=None, latent_totals=None, eta_draw_index=None,
                                   lambda_chain_means=None, _mean_lambda=None)
    [counts_f, gdf_f] = client.scatter([fit.counts, gdf], broadcast=True, hash=False)
    futures = []
    for release, (draw, s) in enumerate(zip(draws, seeds, strict=True)):
        futures.append(client.submit(
            _release_task, template, counts_f, gdf_f, _one_draw_fit(fit, draw), s,
            release, draw, weights, pure=False,
            key=f"geosynth-release-{release}-{os.urandom(4).hex()}"))
    return client.gather(futures)


def _linked_task(original, release, number):
    from geosynth.evaluation import _linked_records

    _warm_in_task()
    table = _linked_records(original, [release])
    table.index = pd.Index([number], name=table.index.name)
    return table


def linked_records_dask(
    original: gpd.GeoDataFrame,
    releases: Sequence[gpd.GeoDataFrame],
    *,
    client: distributed.Client | None = None,
) -> pd.DataFrame:
    """Compute the ``linked_records`` table of :func:`geosynth.evaluate`, a task per release.

    Displacement and spatial k-anonymity are measured release by release, so this equals
    ``geosynth.evaluate(original, releases, ...).tables["linked_records"]``. (:func:`evaluate_dask`
    computes all the tables of :func:`~geosynth.evaluate`, with a task per release.)

    Parameters
    ----------
    original : geopandas.GeoDataFrame
        The confidential points; sent to the workers once.
    releases : sequence of geopandas.GeoDataFrame
        Releases that keep the original index (as :func:`synthesize_dask` returns them).
    client : distributed.Client, optional
        Default: the current client.

    Returns
    -------
    pandas.DataFrame
        One row per release (index ``release``, from 1): median and mean displacement and the
        spatial k-anonymity summary.
    """
    releases = list(releases)
    if not releases:
        raise InputError("releases is empty; pass the m synthetic data sets to evaluate")
    for number, release in enumerate(releases):
        if not release.index.equals(original.index):
            raise InputError(
                f"releases[{number}] does not keep the original index, so its records cannot "
                "be linked"
            )
    client = _get_client(client)
    [original_f] = client.scatter([original], broadcast=True, hash=False)
    futures = [client.submit(_linked_task, original_f, release, number, pure=False,
                             key=f"geosynth-linked-{number}-{os.urandom(4).hex()}")
               for number, release in enumerate(releases, start=1)]
    return pd.concat(client.gather(futures))


def _measure_task(original, release, plan):
    from geosynth.evaluation import _measure_release

    _warm_in_task()
    return _measure_release(original, release, plan)


def evaluate_dask(
    original: gpd.GeoDataFrame,
    releases: Sequence[gpd.GeoDataFrame],
    grid: Grid,
    attributes: Sequence[str] | str,
    outcome: str | None = None,
    n_quadrants: int = 1000,
    seed=None,
    linked: bool = True,
    *,
    client: distributed.Client | None = None,
) -> Evaluation:
    """Run :func:`geosynth.evaluate` with one Dask task per release.

    The inputs are checked in the client first (every error names the release at fault, as
    in memory). Then the original is sent to every worker once, the releases are spread over
    the workers, and each release is measured against the original in its own task, where it
    lies: greedy matched distances and Ripley's L gap per combination
    (in the window of all points, fixed in the client), displacement and spatial k-anonymity.
    While the tasks run, the client computes the measures that need all releases at once: the
    Reiter–Mitra identification risk (match probabilities summed over releases record by
    record) and the quadrant coverage (intervals from the combining rules). Last, the
    per-release results are combined in the client -- averaged over releases, mean rows added
    -- by the same code as in memory, so the tables equal those of
    ``geosynth.evaluate(original, releases, ...)`` bit for bit (each release's measures are
    computed by the same functions on the same data, and combined in release order).

    ``geosynth.evaluate(..., scheduler="dask", client=client)`` calls this.

    Parameters
    ----------
    original : geopandas.GeoDataFrame
        The confidential points, in memory; sent to the workers once.
    releases : sequence of geopandas.GeoDataFrame
        The m releases, in memory (as :func:`synthesize_dask` returns them); each is sent to
        the worker that measures it.
    grid, attributes, outcome, n_quadrants, seed, linked
        As for :func:`geosynth.evaluate`.
    client : distributed.Client, optional
        Default: the current client.

    Returns
    -------
    geosynth.Evaluation
        As :func:`geosynth.evaluate`.

    Raises
    ------
    geosynth.errors.InputError
        No Dask client, or any error of :func:`geosynth.evaluate`.
    geosynth.errors.CRSError
        As :func:`geosynth.evaluate`.
    """
    from geosynth.evaluation import _run_evaluation

    client = _get_client(client)

    def start(original, releases, plan):
        [original_f] = client.scatter([original], broadcast=True, hash=False)
        # Releases are scattered over the workers (not put in the task graph); each task then
        # runs where its release is.
        release_fs = client.scatter(releases, hash=False)
        futures = [client.submit(_measure_task, original_f, release_f, plan, pure=False,
                                 key=f"geosynth-evaluate-{number}-{os.urandom(4).hex()}")
                   for number, release_f in enumerate(release_fs, start=1)]
        return lambda: client.gather(futures)

    return _run_evaluation(original, releases, grid, attributes, outcome, n_quadrants, seed,
                           linked, start=start)


# --------------------------------------------------------------------------- prepare
def _is_dask_geodataframe(gdf: Any) -> bool:
    try:
        import dask_geopandas
    except ImportError:
        return False
    return isinstance(gdf, dask_geopandas.GeoDataFrame)


def _partition_counts(part, grid, attrs, continuous) -> pd.DataFrame:
    """Map step: validate one partition and count its points per (cell, attribute values)."""
    from geosynth._points import point_coordinates
    from geosynth.data import _check_no_nan, _continuous_values

    xy = point_coordinates(part, "gdf")
    for a in attrs:
        _check_no_nan(part, a, "attribute")
    z = np.zeros(len(part)) if continuous is None else _continuous_values(part, continuous)
    cell = np.asarray(grid.locate(xy), dtype=np.int64).reshape(-1)
    if cell.shape != (len(part),):
        raise InputError(
            f"grid.locate returned {cell.shape[0]} cell ids for {len(part)} points; "
            "grid must be a geosynth.lattice.Grid"
        )
    frame = pd.DataFrame({a: part[a] for a in attrs}).reset_index(drop=True)
    frame[_CELL] = cell
    frame[_N] = np.ones(len(part), dtype=np.int64)
    frame[_Z] = z
    keys = [_CELL, *attrs]
    out = frame.groupby(keys, sort=False, observed=True, dropna=False)[[_N, _Z]].sum()
    return out.reset_index()


def _partition_records(part, grid, attrs, levels, combo_keys, radix) -> pd.DataFrame:
    """Cell and combination of each kept record of one partition, indexed by its label."""
    from geosynth._points import point_coordinates

    cell = np.asarray(grid.locate(point_coordinates(part, "gdf")), dtype=np.int64).reshape(-1)
    keep = cell >= 0
    key = np.zeros(int(keep.sum()), dtype=np.int64)
    for a, r in zip(attrs, radix, strict=True):
        codes = pd.Categorical(part[a].to_numpy()[keep], categories=levels[a]).codes
        key = key * r + codes.astype(np.int64)
    return pd.DataFrame({"cell": cell[keep], "combo": np.searchsorted(combo_keys, key)},
                        index=part.index[keep])


def _partition_outside(part, grid) -> pd.Series:
    """Labels of (at most _SHOW + 1) points of one partition that fall in no cell."""
    from geosynth._points import point_coordinates

    cell = np.asarray(grid.locate(point_coordinates(part, "gdf")), dtype=np.int64).reshape(-1)
    labels = part.index[cell < 0][: _SHOW + 1]
    return pd.Series(labels.to_numpy(dtype=object), dtype=object)


def _check_dask_parameters(ddf, grid, outside, max_bytes) -> None:
    if not _is_dask_geodataframe(ddf):
        raise InputError(f"gdf must be a dask_geopandas.GeoDataFrame, got {type(ddf).__name__}")
    if outside not in ("error", "drop"):
        raise InputError(f'outside must be "error" or "drop", got {outside!r}')
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, (int, np.integer)) \
            or max_bytes <= 0:
        raise InputError(f"max_bytes must be a positive int (bytes), got {max_bytes!r}")
    if not all(hasattr(grid, name) for name in ("locate", "n_cells", "crs")):
        raise InputError(
            f"grid must be a geosynth.lattice.Grid, got {type(grid).__name__}; build one with "
            "Grid.regular(bounds, shape=..., crs=...) or Grid.from_points(gdf, ...)"
        )


def _check_known_categories(ddf, attrs) -> None:
    from dask.dataframe.utils import has_known_categories

    for a in attrs:
        if isinstance(ddf._meta[a].dtype, pd.CategoricalDtype) and not has_known_categories(
                ddf[a]):
            raise InputError(
                f"categorical attribute {a!r} has unknown categories, so its levels have no "
                f"order; call ddf = ddf.categorize(columns=[{a!r}]) or set them with "
                f"ddf[{a!r}].cat.set_categories([...])"
            )


def prepare_dask(
    ddf: dask_geopandas.GeoDataFrame,
    grid: Grid,
    attributes: Sequence[str] | str,
    continuous: str | None = None,
    outside: str = "error",
    max_bytes: int = 2**31,
) -> CellCounts:
    """:func:`geosynth.prepare` for a :class:`dask_geopandas.GeoDataFrame` (which it calls).

    Columns, dtypes and CRS are checked on the frame's metadata. Then one pass over the
    partitions validates the points and counts them per (cell, attribute values, plus the sum
    of the continuous column), and the per-partition tables are summed; levels, combinations,
    ``counts`` and ``zbar`` come from that small table. A second pass gathers the per-record
    cell and combination (``record_cell``, ``record_combo``, ``record_index``: about 16 bytes
    per record plus its index label, which :func:`geosynth.synthesize` needs); geometries and
    attributes never leave the workers.

    The result equals ``prepare(ddf.compute(), ...)``, except that ``zbar`` may differ in the
    last bits (sums in another order). Error messages about bad rows name the rows of the first
    failing partition.

    Parameters
    ----------
    ddf : dask_geopandas.GeoDataFrame
        The confidential points. A categorical attribute needs known categories
        (``ddf.categorize(columns=[...])``).
    grid, attributes, continuous, outside, max_bytes
        As for :func:`geosynth.prepare`.

    Returns
    -------
    CellCounts
    """
    from geosynth.data import (
        CellCounts,
        _check_columns,
        _check_crs,
        _check_sizes,
        _combos_frame,
        _continuous_values,
        _levels_and_codes,
        _standardise,
    )

    _check_dask_parameters(ddf, grid, outside, max_bytes)
    meta = ddf._meta
    attrs = _check_columns(meta, attributes, continuous)
    _check_crs(ddf, grid)
    if continuous is not None:
        _continuous_values(meta, continuous)  # dtype check on the empty metadata
    _check_known_categories(ddf, attrs)

    table_meta = _partition_counts(meta, grid, attrs, continuous)
    mapped = ddf.map_partitions(_partition_counts, grid, attrs, continuous, meta=table_meta)
    table = mapped.compute()
    table = (table.groupby([_CELL, *attrs], sort=False, observed=True, dropna=False)[[_N, _Z]]
             .sum().reset_index())
    n_total = int(table[_N].sum())
    if n_total == 0:
        raise InputError("gdf has no rows; prepare needs at least one record")
    out = table[_CELL].to_numpy() < 0
    n_out = int(table.loc[out, _N].sum())
    if n_out:
        _outside(ddf, grid, outside, n_out, n_total)
    table = table.loc[~out].reset_index(drop=True)
    n_kept = n_total - n_out

    levels: dict[str, list] = {}
    codes = np.empty((len(table), len(attrs)), dtype=np.int64)
    for k, a in enumerate(attrs):
        series = table[a]
        if isinstance(meta[a].dtype, pd.CategoricalDtype):
            series = series.astype(meta[a].dtype)
        levels[a], codes[:, k] = _levels_and_codes(series)
        if len(levels[a]) == 1:
            warnings.warn(
                f"attribute {a!r} has a single level {levels[a][0]!r} among the {n_kept} kept "
                "records, so its effect cannot be estimated; consider removing it from "
                "attributes", DataWarning, stacklevel=3)
    combo_codes, first, row_combo = np.unique(codes, axis=0, return_index=True,
                                              return_inverse=True)
    row_combo = row_combo.reshape(-1)
    n_cells, n_combos = int(grid.n_cells), len(combo_codes)
    _check_sizes(levels, n_kept, n_cells, n_combos, continuous, max_bytes)
    weights = table[_N].to_numpy(dtype=np.int64)
    n_per_combo = np.bincount(row_combo, weights=weights, minlength=n_combos).astype(np.int64)
    flat = table[_CELL].to_numpy(dtype=np.int64) * n_combos + row_combo
    counts = np.bincount(flat, weights=weights, minlength=n_cells * n_combos)
    counts = counts.astype(np.int64).reshape(n_cells, n_combos)
    frame = table[list(attrs)].copy()
    for a in attrs:
        frame[a] = frame[a].astype(meta[a].dtype)
    combos = _combos_frame(frame, attrs, combo_codes, first, n_per_combo)
    zbar = mask = mean = sd = None
    if continuous is not None:
        sums = np.bincount(flat, weights=table[_Z].to_numpy(), minlength=n_cells * n_combos)
        zbar, mask, mean, sd = _standardise(sums.reshape(n_cells, n_combos), counts)

    radix = [len(levels[a]) for a in attrs]
    combo_keys = np.zeros(n_combos, dtype=np.int64)
    for k, r in enumerate(radix):
        combo_keys = combo_keys * r + combo_codes[:, k]
    records_meta = pd.DataFrame({"cell": np.zeros(0, np.int64), "combo": np.zeros(0, np.int64)},
                                index=meta.index)
    records = ddf.map_partitions(_partition_records, grid, attrs, levels, combo_keys, radix,
                                 meta=records_meta).compute()
    if len(records) != n_kept:  # pragma: no cover - both passes locate the same points
        raise InputError(f"the partitions changed between passes ({len(records)} kept records "
                         f"against {n_kept}); persist the frame before prepare")
    return CellCounts(
        counts=counts,
        combos=combos,
        record_cell=records["cell"].to_numpy(dtype=np.int64),
        record_combo=records["combo"].to_numpy(dtype=np.int64),
        record_index=records.index,
        attributes=attrs,
        levels=levels,
        continuous=continuous,
        zbar=zbar,
        zbar_mask=mask,
        zbar_mean=mean,
        zbar_sd=sd,
        grid=grid,
    )


def _outside(ddf, grid, outside, n_out, n_total) -> None:
    """Raise or warn about the ``n_out`` points in no cell, naming a few of them."""
    labels = ddf.map_partitions(_partition_outside, grid,
                                meta=pd.Series([], dtype=object)).compute()
    shown = ", ".join(repr(label) for label in labels.iloc[:_SHOW].tolist())
    more = n_out - min(_SHOW, n_out)
    rows = f"rows [{shown}]" + (f" and {more} more" if more > 0 else "")
    where = (f"{n_out} of {n_total} points fall in no grid cell (outside the lattice or region, "
             f"or inside an excluded area): {rows}")
    if outside == "error":
        raise InputError(
            f'{where}; pass outside="drop" to drop them, or build a grid that covers them')
    if n_out == n_total:
        raise InputError(f"{where}; no record is left: check the grid bounds, region and CRS")
    warnings.warn(f"dropped {where}", DataWarning, stacklevel=4)

