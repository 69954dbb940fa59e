"""Run geosynth on a Dask cluster: chains and releases as tasks, point counting by partition.

Needs the ``dask`` extra (``pip install "geosynth[dask]"``: ``dask[distributed]`` and
``dask-geopandas``). Every function takes a :class:`distributed.Client`; ``client=None`` uses the
current one (:func:`distributed.get_client`), so the same code runs on a
:class:`distributed.LocalCluster` or, with ``Client("tcp://scheduler:8786")``, on a real cluster.

The core of geosynth never imports Dask: :meth:`PaivaModel.fit <geosynth.PaivaModel.fit>` and
:func:`geosynth.evaluate` take any :class:`concurrent.futures.Executor` (``executor=``; a Dask
client gives one with ``client.get_executor()``), and :func:`geosynth.prepare`'s steps are
public (:func:`geosynth.data.locate_records`, :func:`~geosynth.data.count_table`,
:func:`~geosynth.data.counts_from_table`). This module adds only what Dask alone needs, through
those public names:

* :func:`fit_dask` -- ``model.fit(..., executor=...)`` with one Dask task per Gibbs chain; the
  draws equal those of the in-process fit with the same ``seed``.
* :func:`synthesize_dask` -- one task per release, each with its own random stream
  (:func:`~geosynth.synth.paiva.release_seeds`, keyed by the records).
* :func:`evaluate_dask` -- ``geosynth.evaluate(..., executor=...)`` with one task per release
  for the per-release measures, combined in the client; the tables equal the in-memory ones.
  :func:`linked_records_dask` likewise for the linked-record table alone.
* :func:`prepare_dask` -- :func:`geosynth.prepare` for a :class:`dask_geopandas.GeoDataFrame`:
  points are located and counted partition by partition (map, then sum), so the point set need
  not fit in memory.
* :func:`warm_up` -- compile (or load from numba's cache) the sampling kernels on each worker,
  one worker at a time: concurrent writes can corrupt numba's on-disk cache. The tasks of the
  functions above also do it, under a cluster-wide :class:`distributed.Lock`, on a worker that
  was not warmed up. (A plain ``client.get_executor()`` does not: call :func:`warm_up` first.)

The tasks of these functions send a large argument to the workers once, not in every task:
the model's arrays of a fit and the original points of an evaluation go to every worker, each
release to one worker (its task then runs there).
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor, Future
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from geosynth._messages import describe_rows
from geosynth._points import point_coordinates, usable_points
from geosynth._random import root_seed_sequence
from geosynth._validation import check_chains, check_keywords, check_m
from geosynth.data import (
    CELL_COLUMN,
    COUNT_COLUMN,
    DROP_REASONS,
    CellCounts,
    beyond_bounds,
    check_columns,
    check_crs,
    check_domain_options,
    check_kept_labels,
    check_not_row_numbers,
    check_outside,
    check_prepare_options,
    coordinate_moments,
    count_table,
    counts_from_table,
    counts_on_domain,
    covariate_names,
    lattice_origin,
    locate_on_domain,
    locate_records,
    merge_evidence,
    no_overlap_message,
    non_numeric_evidence,
    non_numeric_message,
    on_a_grid,
    warn_dropped,
    warn_if_bounds_touch_records,
    warn_of_coordinate_columns,
    widen_halves,
    z_sum_columns,
)
from geosynth.errors import CRSError, InputError
from geosynth.evaluation import (
    Evaluation,
    evaluate,
    linked_records,
    measure_release,
    plan_evaluation,
)
from geosynth.metrics.matching import as_releases
from geosynth.model.fit import DEFAULT_BURN_IN, DEFAULT_THIN, PaivaModel
from geosynth.model.results import PaivaFit, check_fit
from geosynth.model.storage import DEFAULT_MAX_BYTES
from geosynth.rasters import read_weights

if TYPE_CHECKING:
    import dask_geopandas
    import distributed
    import geopandas as gpd

    from geosynth.lattice import Grid
    from geosynth.synth.paiva import ReleaseMaker

__all__ = [
    "chain_seeds",
    "evaluate_dask",
    "fit_dask",
    "linked_records_dask",
    "prepare_dask",
    "synthesize_dask",
    "warm_up",
]

_LOCK_NAME = "geosynth-numba-compile"
_WARM = threading.Event()  # set in a worker process once its kernels are compiled or loaded
_WARM_PARALLEL = threading.Event()  # likewise for the chromatic (parallel=True) kernels
_WARM_LOCK = threading.Lock()
_SHOW = 5
# An argument of a task larger than this is scattered to the workers once, not put in the graph.
_GRAPH_BYTES = 2**20


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

    scenario, counts = _tiny_scenario()
    model = geosynth.PaivaModel()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(counts, n_iter=2, burn_in=0, thin=1, chains=1, seed=0, progress=False,
                  n_jobs=1)
        on_domain = geosynth.prepare(scenario.data, counts.grid, attributes=["y"],
                                     levels=counts.levels)  # what a DP release needs
        noisy = dp_counts(on_domain, 1.0, seed=0)
        model.fit(noisy, n_iter=2, burn_in=0, thin=1, chains=1, seed=0, progress=False,
                  n_jobs=1)
        # The numba kernels of the metrics (greedy matching, linked-record distances).
        [release], plan = plan_evaluation(scenario.data, [scenario.data], ["y"], linked=True)
        measure_release(scenario.data, release, plan)


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


class _TaskExecutor(Executor):
    """``client.get_executor()`` for geosynth's tasks: warm-up first, large arguments sent once.

    Each task first warms its worker up (:func:`_warm_in_task`) and has a key
    ``geosynth-<name>-<number>-<random>``. An argument of more than ``_GRAPH_BYTES`` (by
    :func:`dask.sizeof.sizeof`) is scattered once and passed to every task that gets the same
    object: to every worker (broadcast), or to one worker only when it is one of ``spread`` (a
    per-task argument, such as a release; its task then runs where it lies).
    """

    def __init__(self, client: distributed.Client, name: str, *, parallel: bool = False,
                 spread: Sequence[Any] = ()) -> None:
        self._client = client
        self._executor = client.get_executor(pure=False)
        self._name = name
        self._parallel = parallel
        self._spread = {id(obj) for obj in spread}
        self._sent: dict[int, tuple[Any, Any]] = {}  # id -> (object, its Dask future)
        self._numbers = itertools.count()
        self._keep = list(spread)  # the ids of ``spread`` stay theirs while this lives

    def _send(self, arg: Any) -> Any:
        from dask.sizeof import sizeof

        if id(arg) in self._sent:
            return self._sent[id(arg)][1]
        spread = id(arg) in self._spread
        if not spread and sizeof(arg) <= _GRAPH_BYTES:
            return arg
        [future] = self._client.scatter([arg], broadcast=not spread, hash=False)
        self._sent[id(arg)] = (arg, future)
        return future

    def submit(self, fn: Callable, /, *args: Any, **kwargs: Any) -> Future:
        """Submit ``fn(*args, **kwargs)`` as a task (after the worker's warm-up)."""
        sent = [self._send(arg) for arg in args]
        key = f"geosynth-{self._name}-{next(self._numbers)}-{os.urandom(4).hex()}"
        return self._executor.submit(_call_warm, fn, self._parallel, *sent, key=key, **kwargs)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """Release the scattered arguments (the client stays open)."""
        self._executor.shutdown(wait=wait and not cancel_futures)
        self._sent.clear()


def _call_warm(fn: Callable, parallel: bool, *args: Any, **kwargs: Any) -> Any:
    """Task body of :class:`_TaskExecutor`: warm this worker up, then run ``fn``."""
    _warm_in_task(parallel=parallel)
    return fn(*args, **kwargs)


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

    Raises
    ------
    geosynth.errors.InputError
        ``chains`` is not an int from 1 to 1,024 (as for ``fit``).
    TypeError
        A bad ``seed``.
    """
    check_chains(chains)
    return [_parent_of(child) for child in root_seed_sequence(seed).spawn(chains)]


def _parent_of(child: np.random.SeedSequence) -> np.random.SeedSequence:
    """Return a SeedSequence whose next (first) spawned child is ``child``."""
    return np.random.SeedSequence(child.entropy, spawn_key=child.spawn_key[:-1],
                                  pool_size=child.pool_size,
                                  n_children_spawned=child.spawn_key[-1])


#: Parameters of ``PaivaModel.fit`` that :func:`fit_dask` sets itself (or that no task sees).
_SET_BY_FIT_DASK = frozenset({"self", "counts", "progress", "n_jobs", "executor", "stop"})


def fit_dask(
    model: PaivaModel,
    counts: CellCounts,
    *,
    client: distributed.Client | None = None,
    n_iter: int = 8000,
    burn_in: int = DEFAULT_BURN_IN,
    thin: int = DEFAULT_THIN,
    chains: int = 2,
    seed=None,
    max_bytes: int | None = None,
    noise: float | None = None,
    eta_draws: int | str = "auto",
    **fit_options: Any,
) -> PaivaFit:
    """Fit ``model`` with one Dask task per chain; the draws equal ``model.fit``'s.

    ``model.fit(counts, ..., executor=...)`` on an executor of ``client`` whose tasks warm
    their worker up first and get the model's arrays once per worker (not in every task).

    Parameters
    ----------
    model : geosynth.PaivaModel
        The model to fit.
    counts : CellCounts or geosynth.dp.NoisyCounts
        As for :meth:`PaivaModel.fit <geosynth.PaivaModel.fit>`; its arrays for the model are
        sent to the workers once.
    client : distributed.Client, optional
        Default: the current client.
    n_iter, burn_in, thin, chains, seed, noise
        As for :meth:`PaivaModel.fit <geosynth.PaivaModel.fit>`. Chain ``c`` uses the random
        stream it has in ``model.fit(counts, chains=chains, seed=seed)``, so the result equals
        the in-memory fit draw for draw.
    max_bytes : int, optional
        Bound on the draws of *all* chains, gathered on the client (default: ``fit``'s 4 GiB).
    eta_draws : int, "all" or "auto", default "auto"
        As for :meth:`PaivaModel.fit <geosynth.PaivaModel.fit>`, over all chains: the client
        plans the storage (and warns) as ``model.fit`` does, and every task stores η for the
        same retained draws.
    **fit_options
        Other keyword arguments of ``model.fit`` (``parallel``; not ``progress``, ``n_jobs``
        or ``executor``, which this function sets, nor ``stop``, which no task can see).

    Returns
    -------
    geosynth.PaivaFit
        The chains concatenated in order.

    Raises
    ------
    InputError
        Invalid arguments (``n_iter="auto"``, ``stop``, a keyword argument ``model.fit`` does
        not take), or no Dask client.
    MemoryLimitError
        The draws of all chains would exceed ``max_bytes``.
    SamplerError
        A chain failed (names the chain and the parameter block).

    Warns
    -----
    geosynth.errors.GeosynthWarning
        ``eta_draws="auto"`` keeps η for fewer than all retained draws.
    """
    if not isinstance(model, PaivaModel):
        raise InputError(f"model must be a geosynth.PaivaModel, got {type(model).__name__}")
    reserved = {"progress", "n_jobs", "executor"} & set(fit_options)
    if reserved:
        raise InputError(f"fit_dask sets {sorted(reserved)} itself; leave them out")
    if "stop" in fit_options:
        raise InputError(
            "fit_dask takes no stop: its chains run as Dask tasks, which an Event of this "
            "process cannot reach; stop them with Ctrl-C (nothing is returned) or run "
            "model.fit(counts, stop=...) in threads of one process"
        )

    # Before any Dask work: the fit's own TypeError came after the tasks were set up.
    check_keywords(fit_options, model.fit, f"{type(model).__name__}.fit",
                   "fit_dask(**fit_options)", _SET_BY_FIT_DASK)
    if isinstance(n_iter, str) and n_iter == "auto":
        raise InputError(
            f"fit_dask needs a fixed n_iter, got {n_iter!r}: the chains of an n_iter='auto' fit "
            "meet at every convergence check, so they run in threads of one process; use "
            "model.fit(counts, n_iter='auto') there"
        )
    client = _get_client(client)
    executor = _TaskExecutor(client, "chain", parallel=bool(fit_options.get("parallel")))
    try:
        return model.fit(counts, n_iter=n_iter, burn_in=burn_in, thin=thin, chains=chains,
                         seed=seed, progress=False,
                         max_bytes=DEFAULT_MAX_BYTES if max_bytes is None else max_bytes,
                         noise=noise, eta_draws=eta_draws, executor=executor, **fit_options)
    finally:
        executor.shutdown(wait=False)


# --------------------------------------------------------------------------- releases
def _one_draw_fit(fit: PaivaFit, index: int) -> dict[str, Any]:
    """Return stored η draw ``index``'s arrays, shaped as a 1-chain 1-draw fit."""
    chain, retained = fit.draw_position(index)
    stored = index - chain * fit.n_eta_draws

    def pick(a, draw=retained):
        return None if a is None else a[chain, draw][None, None]

    return {"scalars": pick(fit.scalars), "theta": pick(fit.theta), "beta": pick(fit.beta),
            "eta": pick(fit.eta, stored), "latent_totals": None, "eta_draw_index": None,
            "lambda_chain_means": None}


def _without_confidential_values(maker: ReleaseMaker) -> ReleaseMaker:
    """Return ``maker`` with the records' points, cells and values blanked: what tasks get.

    A release draws new points and new continuous values; of the records it keeps only their
    index labels and attribute values, which it publishes anyway. The original coordinates and
    values need not reach the workers (their memory, and the files they spill to disk), nor
    what the prepared counts hold of them: each record's cell, the exact count of every
    (cell, combination) pair, the cell means of the continuous values (of one record where a
    cell holds one) and each pair's two largest and smallest values. A release reads the
    counts' grid, combinations, ``record_combo`` and each covariate's mean and SD per
    combination only; the filled cell means it draws from and the
    roots of the noise correlation are the maker's (:func:`~geosynth.synth.paiva.
    synthetic_zbar`, :func:`~geosynth.synth.paiva.synthesis_correlation`, computed in the
    client).
    """
    import geopandas as gpd

    rows, counts = maker.rows, maker.fit.counts
    frame = pd.DataFrame(rows[list(counts.attributes)])
    for name in counts.covariates:
        frame[name] = np.nan  # replaced by the synthetic values in every release
    name = rows.geometry.name
    frame[name] = gpd.array.from_shapely(np.full(len(rows), None), crs=rows.crs)
    blank = dataclasses.replace(
        counts, counts=np.zeros_like(counts.counts), record_cell=np.zeros_like(counts.record_cell),
        **{field: None if getattr(counts, field) is None else np.zeros_like(getattr(counts, field))
           for field in ("zbar", "zbar_mask", "z_extremes", "z_fences")})
    return dataclasses.replace(maker, rows=gpd.GeoDataFrame(frame, geometry=name),
                               fit=dataclasses.replace(maker.fit, counts=blank))


def _release_task(shared, arrays, seed, release, draw):
    """Dask task: release ``release`` from posterior draw ``draw``, and its placement note.

    ``shared`` is the client's :class:`~geosynth.synth.paiva.ReleaseMaker` (records checked,
    weights raster read, covariates' tables computed once) over a fit without draws;
    ``arrays`` hold draw ``draw`` only, as draw 0.
    """
    maker = dataclasses.replace(shared, fit=dataclasses.replace(shared.fit, **arrays))
    return maker.release(release, 0, np.random.default_rng(seed), posterior_draw=draw)


def synthesize_dask(
    fit: PaivaFit,
    gdf: gpd.GeoDataFrame,
    m: int = 5,
    seed=None,
    weights: str | os.PathLike | None = None,
    *,
    limits: Mapping[str, tuple[float | None, float | None]] | None = None,
    client: distributed.Client | None = None,
) -> list[gpd.GeoDataFrame]:
    """Make ``m`` releases like :func:`geosynth.synthesize`, one Dask task per release.

    Release ``l`` uses posterior draw ``release_draws(fit, m)[l]`` and its own generator
    ``numpy.random.default_rng(release_seeds(seed, m, records)[l])`` (keyed by the records),
    as in memory, so releases do not
    depend on one another, any subset can be recomputed, and they equal the releases of
    :func:`geosynth.synthesize` for the same seed. Its warnings are given here, in the client,
    as in memory: the :class:`~geosynth.errors.PrivacyLeakWarning` on combinations too rare for
    synthetic continuous values (before any task runs), and one
    :class:`~geosynth.errors.DataWarning` on cells without weight in the raster
    (:func:`geosynth.synth.placement.warn_of_unweighted`); the workers warn nothing.

    Parameters
    ----------
    fit : geosynth.PaivaFit
        An exact fit (noise-aware fits go through :func:`geosynth.synthesize`).
    gdf : geopandas.GeoDataFrame
        The records given to :func:`geosynth.prepare`, in memory, checked in the client. The
        workers get their index labels and attribute values once (what a release publishes),
        never their points or continuous values.
    m : int, default 5
        Number of releases.
    seed : None, int, numpy.random.SeedSequence or numpy.random.Generator
        The same seed gives the same releases.
    weights : str or os.PathLike, optional
        Path of the weights raster, read and checked in the client (as by
        :func:`geosynth.synthesize`) and sent to every worker once.
    limits : dict of str to (float or None, float or None), optional
        The range of continuous columns, ``{column: (low, high)}`` with None for an open end:
        their synthetic values are drawn from the normal truncated to it, as by
        :func:`geosynth.synth.synthesize` (not in Nunes 2018; public knowledge stated by the
        analyst, never derived from the data). Checked in the client, with the original values
        against them.
    client : distributed.Client, optional
        Default: the current client.

    Returns
    -------
    list of geopandas.GeoDataFrame
        As :func:`geosynth.synthesize`, in release order.

    Raises
    ------
    geosynth.errors.InputError
        ``fit`` is not an exact :class:`~geosynth.PaivaFit`, ``weights`` is not a path, no
        Dask client, or any error of :func:`geosynth.synthesize` (about ``gdf``, ``m``, the
        raster, ``limits``).
    geosynth.errors.CRSError
        As :func:`geosynth.synthesize`.
    geosynth.errors.SamplerError
        As :func:`geosynth.synthesize`: a posterior draw of λ is not finite and positive
        (names the draw of the whole fit).
    TypeError
        ``m`` is not an int, or a bad ``seed`` (as for :func:`geosynth.synthesize`).

    Warns
    -----
    geosynth.errors.DataWarning
        A combination with no cell of three or more records gets synthetic continuous values
        from the means of all combinations, and a cell mean beyond the fences of all cell
        means is not published (:func:`geosynth.synth.paiva.warn_withheld_means`);
        with ``weights``: releases placed points in cells without a pixel of positive weight
        (one warning for all of them).
    """
    from geosynth.synth.paiva import ReleaseMaker, release_draws, warn_withheld_means
    from geosynth.synth.placement import warn_of_unweighted

    check_fit(fit)
    if fit.noise_scale is not None:
        raise InputError("synthesize_dask takes exact fits; synthesize a noise-aware fit with "
                         "geosynth.synthesize")
    if weights is not None and not isinstance(weights, (str, os.PathLike)):
        raise InputError("weights must be the path of a raster (str or os.PathLike), got "
                         f"{type(weights).__name__}")
    m = check_m(m)
    template = dataclasses.replace(fit, scalars=None, theta=None, beta=None, eta=None,
                                   latent_totals=None, eta_draw_index=None,
                                   lambda_chain_means=None)
    # gdf, weights and limits checked here, not in m tasks (an error of the raster reached the
    # client as a bare Exception: its rasterio cause does not unpickle)
    table = None if weights is None else read_weights(weights, fit.counts.grid)
    shared = ReleaseMaker.of(template, gdf, table, limits)
    draws = release_draws(fit, m).tolist()
    if fit.counts.covariates:
        warn_withheld_means(fit.counts)
    client = _get_client(client)
    seeds = shared.seeds(seed, m)
    [shared_f] = client.scatter([_without_confidential_values(shared)], broadcast=True,
                                hash=False)
    futures = []
    for release, (draw, s) in enumerate(zip(draws, seeds, strict=True)):
        futures.append(client.submit(
            _release_task, shared_f, _one_draw_fit(fit, draw), s, release, draw, pure=False,
            key=f"geosynth-release-{release}-{os.urandom(4).hex()}"))
    gathered = client.gather(futures)
    warn_of_unweighted([note for _, note in gathered])
    return [out for out, _ in gathered]


def linked_records_dask(
    original: gpd.GeoDataFrame,
    releases: Sequence[gpd.GeoDataFrame],
    *,
    client: distributed.Client | None = None,
) -> pd.DataFrame:
    """Compute the ``linked_records`` table of :func:`geosynth.evaluate`, a task per release.

    :func:`geosynth.evaluation.linked_records` with a task per release: displacement and
    spatial k-anonymity are measured release by release, so this equals
    ``geosynth.evaluate(original, releases, ...).tables["linked_records"]``.
    (:func:`evaluate_dask` computes all the tables of :func:`~geosynth.evaluate`, with a task
    per release.)

    Parameters
    ----------
    original : geopandas.GeoDataFrame
        The confidential points; sent to the workers once.
    releases : sequence of geopandas.GeoDataFrame
        Releases that keep the original index (as :func:`synthesize_dask` returns them); each
        is sent to the worker that measures it.
    client : distributed.Client, optional
        Default: the current client.

    Returns
    -------
    pandas.DataFrame
        One row per release (index ``release``, from 1): median and mean displacement and the
        spatial k-anonymity summary.

    Raises
    ------
    geosynth.errors.InputError
        No Dask client, ``releases`` is empty, or a release does not keep the original index,
        or any other error of :func:`geosynth.evaluation.linked_records` (``original`` or a
        release is not a GeoDataFrame or has invalid points).
    geosynth.errors.CRSError
        As :func:`geosynth.evaluation.linked_records`.
    """
    client = _get_client(client)
    releases = as_releases(releases)
    executor = _TaskExecutor(client, "linked", spread=releases)
    try:
        return linked_records(original, releases, executor=executor)
    finally:
        executor.shutdown(wait=False)


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
    rules: str | None = None,
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

    This is ``geosynth.evaluate(..., executor=...)`` on an executor of ``client`` whose tasks
    warm their worker up first, and which sends the original to every worker once and each
    release to one worker (``client.get_executor()`` would put them in every task's graph).

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
    rules : {"partial", "full"}, optional
        As for :func:`geosynth.evaluate` (None: taken from the releases' records).

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
    client = _get_client(client)
    releases = as_releases(releases)
    executor = _TaskExecutor(client, "evaluate", spread=releases)
    try:
        return evaluate(original, releases, grid, attributes, outcome=outcome,
                        n_quadrants=n_quadrants, seed=seed, linked=linked, executor=executor,
                        rules=rules)
    finally:
        executor.shutdown(wait=False)


# --------------------------------------------------------------------------- prepare
def _is_dask_geodataframe(gdf: Any) -> bool:
    try:
        import dask_geopandas
    except ImportError:
        return False
    return isinstance(gdf, dask_geopandas.GeoDataFrame)


def _check_partition_crs(part, grid) -> None:
    """:func:`check_crs` on one partition: the frame's metadata does not bind its partitions.

    A partition built apart (``dd.from_delayed``, a ``map_partitions`` that reprojects) can
    carry another CRS or none: its coordinates were counted as if in the grid's.
    """
    try:
        check_crs(part, grid)
    except CRSError as err:
        raise CRSError(f"a partition of gdf is not in the CRS of the frame's metadata: {err}; "
                       "give every partition the same CRS") from None


def _check_partition_columns(part, attrs, continuous, dtypes) -> None:
    """:func:`check_columns` on one partition, and its attributes' dtypes against the metadata's.

    A partition built apart (``dd.from_delayed(..., verify_meta=False)``, a
    ``map_partitions`` with a ``meta=``) can hold dtypes its metadata does not: a bool
    continuous column was summed as 0 and 1 (``prepare`` refuses it), a categorical value
    outside the metadata's categories was counted as another level, and a float level 1.5 of
    one partition was cast to the metadata's int 1. Text as object or as str (pandas and Dask
    convert one into the other), and integers of any width, are the same here.
    """
    try:
        check_columns(part, attrs, continuous)
    except InputError as err:
        raise InputError(f"a partition of gdf does not match the frame's metadata: {err}; "
                         "give every partition the metadata's columns and dtypes") from None
    for a, want in dtypes.items():
        have = part[a].dtype
        if isinstance(want, pd.CategoricalDtype):
            if not isinstance(have, pd.CategoricalDtype) or (
                    have.categories.tolist() != want.categories.tolist()):
                raise InputError(
                    f"a partition of gdf holds categorical attribute {a!r} as {have}, not with "
                    f"the categories of the frame's metadata {want.categories.tolist()}; give "
                    f"every partition the same categories, e.g. "
                    f"ddf = ddf.categorize(columns=[{a!r}])"
                )
        elif not _same_kind_of_level(have, want):
            raise InputError(
                f"a partition of gdf holds attribute {a!r} as {have}, the frame's metadata as "
                f"{want}: its values would be cast to the metadata's type (a float 1.5 counted "
                f"as the int 1); give every partition one dtype, e.g. "
                f"ddf[{a!r}] = ddf[{a!r}].astype({str(want)!r})"
            )


def _same_kind_of_level(have: Any, want: Any) -> bool:
    """Whether levels of dtype ``have`` keep their values as ``want``'s (see the caller)."""
    def text(dtype: Any) -> bool:
        return pd.api.types.is_object_dtype(dtype) or isinstance(dtype, pd.StringDtype)

    return bool(have == want or (text(have) and text(want)) or (
        pd.api.types.is_integer_dtype(have) and pd.api.types.is_integer_dtype(want)))


def _partition_table(part, grid, attrs, continuous, dtypes) -> pd.DataFrame:
    """Map step: validate one partition's rows and count its points per (cell, attributes)."""
    _check_partition_crs(part, grid)
    _check_partition_columns(part, attrs, continuous, dtypes)
    located = locate_records(part, grid, attrs, continuous, check_bounds=False)
    # The values are checked here; their cell means come from the second pass's records.
    table = count_table(located[[*attrs, CELL_COLUMN, COUNT_COLUMN]], attrs)
    for a in attrs:  # the groups' keys of an object column of booleans came out as bool, which
        # the concatenation with another partition's integers turned into 1 and 0 unseen
        if part[a].dtype == object:
            table[a] = table[a].astype(object)
    return table


_CORNERS_META = pd.DataFrame({"x": np.zeros(0), "y": np.zeros(0)})


def _partition_extremes(part, grid) -> pd.DataFrame:
    """Return the smallest and largest x and y of a partition's located points (NaN if none).

    Records without a usable point are skipped, not refused: the counting pass refuses
    them, or (with ``levels``) drops them.
    """
    usable, xy = usable_points(part)
    xy = xy[usable]
    return _corners(xy[np.asarray(grid.locate(xy)).reshape(-1) >= 0] if len(xy) else xy)


def _partition_corners(part) -> pd.DataFrame:
    """Return the smallest and largest x and y of a partition's points (NaN if none)."""
    return _corners(point_coordinates(part, "gdf"))


def _corners(xy: np.ndarray) -> pd.DataFrame:
    corners = (np.vstack([xy.min(axis=0), xy.max(axis=0)]) if len(xy)
               else np.full((2, 2), np.nan))
    return pd.DataFrame(corners, columns=["x", "y"])


def _compute_with_extremes(mapped, ddf, grid, *also) -> tuple:
    """Compute ``mapped`` (a map over ``ddf``) and, in the same read of the data, the extremes.

    The extremes are every partition's smallest and largest located x and y
    (:func:`_partition_extremes`), for :func:`_warn_if_bounds_touch`; None when the grid is
    exempt from that check. Computed together, the maps share the tasks that read the
    partitions: the data is read once, not once more for the check. ``also``: more maps over
    ``ddf`` computed with them, their results after the extremes.
    """
    import dask

    # The check's own exemptions: areal and snapped lattices' bounds are not checked, but the
    # habitable extent of a clipped one is (an exclude= of the records' box made it theirs).
    exempt = grid.kind == "areal" or grid.snap_unit is not None
    if exempt and grid.fully_habitable.all():
        tables, *rest = dask.compute(mapped, *also)
        return (tables, None, *rest)
    extremes = ddf.map_partitions(_partition_extremes, grid, meta=_CORNERS_META)
    return dask.compute(mapped, extremes, *also)


def _partition_moments(part, grid, columns: tuple[str, ...], origin) -> pd.DataFrame:
    """:func:`geosynth.data.coordinate_moments` of a partition's records in the lattice."""
    usable, xy = usable_points(part)
    inside = np.zeros(len(part), dtype=bool)
    if usable.any():
        inside[usable] = np.asarray(grid.locate(xy[usable])).reshape(-1) >= 0
    return pd.DataFrame(coordinate_moments(part[inside], columns, origin))


def _warn_if_bounds_touch(grid, corners: pd.DataFrame | None) -> None:
    """:func:`warn_if_bounds_touch_records` once, over every partition's extreme corners.

    Called by :func:`prepare_dask` itself, so that the warning names the caller's line.
    """
    if corners is not None:
        warn_if_bounds_touch_records(grid, corners.dropna().to_numpy())


def _partition_records(part, grid, attrs, continuous, levels, combo_keys, radix
                       ) -> pd.DataFrame:
    """Cell, combination and continuous values of each kept record of one partition.

    Indexed by the records' labels; the values are in the columns of
    :func:`geosynth.data.z_sum_columns` (none without a continuous column).
    """
    located = locate_records(part, grid, attrs, continuous, check_bounds=False)
    cell = located[CELL_COLUMN].to_numpy()
    keep = cell >= 0
    key = np.zeros(int(keep.sum()), dtype=np.int64)
    for a, r in zip(attrs, radix, strict=True):
        codes = pd.Categorical(widen_halves(part[a]).to_numpy()[keep],
                               categories=levels[a]).codes
        key = key * r + codes.astype(np.int64)
    out = pd.DataFrame({"cell": cell[keep], "combo": np.searchsorted(combo_keys, key)},
                       index=part.index[keep])
    for column in z_sum_columns(len(covariate_names(continuous))) if continuous else []:
        out[column] = located[column].to_numpy(dtype=np.float64)[keep]
    return out


_OUTSIDE_META = pd.DataFrame({"label": pd.Series([], dtype=object),
                              "beyond": pd.Series([], dtype=np.int64)})


def _partition_outside(part, grid, attrs) -> pd.DataFrame:
    """Labels of (at most _SHOW + 1) points of one partition that fall in no cell.

    Column ``beyond`` holds, on the first row, how many of all its points in no cell lie
    beyond the lattice's bounds (:func:`geosynth.data.beyond_bounds`; 0 when not told apart),
    so one pass over the partitions gives both.
    """
    out = locate_records(part, grid, attrs, check_bounds=False)[CELL_COLUMN].to_numpy() < 0
    labels = part.index[out][: _SHOW + 1].to_numpy(dtype=object)
    beyond = np.zeros(labels.size, dtype=np.int64)
    if labels.size:
        beyond[0] = beyond_bounds(part[out], grid) or 0
    return pd.DataFrame({"label": pd.Series(labels, dtype=object), "beyond": beyond})


def _partition_on_domain(part, grid, domain) -> pd.DataFrame:
    """Cell, domain combination and drop reasons of every record of one partition."""
    _check_partition_crs(part, grid)
    cell, combo, dropped = locate_on_domain(part, grid, domain, check_bounds=False)
    columns = {"cell": cell, "combo": combo}
    columns.update({f"dropped_{k}": dropped[:, k] for k in range(len(DROP_REASONS))})
    return pd.DataFrame(columns, index=part.index)


def _locate_on_domain_dask(ddf, grid, domain) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """Every record's cell, domain combination and drop reasons, and the partitions' extremes."""
    meta = _partition_on_domain(ddf._meta, grid, domain)
    mapped = ddf.map_partitions(_partition_on_domain, grid, domain, meta=meta)
    return _compute_with_extremes(mapped, ddf, grid)


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
    continuous: Sequence[str] | str | None = None,
    outside: str = "error",
    max_bytes: int = 2**31,
    *,
    allow_identifying: bool = False,
    levels: dict[str, Sequence] | None = None,
) -> CellCounts:
    """:func:`geosynth.prepare` for a :class:`dask_geopandas.GeoDataFrame`, partition by partition.

    Columns, dtypes and CRS are checked on the frame's metadata. Then one pass over the
    partitions validates the points (and continuous values) and counts them per (cell,
    attribute values): :func:`geosynth.data.locate_records` and
    :func:`~geosynth.data.count_table` on each partition, and ``count_table`` again over the
    partitions' tables. :func:`~geosynth.data.counts_from_table` then makes the
    :class:`~geosynth.data.CellCounts` from that small table -- levels, combinations, the
    identifying-attribute check, ``counts`` and ``zbar`` -- as :func:`geosynth.prepare` does
    from its records. A second pass gathers the per-record cell and combination
    (``record_cell``, ``record_combo``, ``record_index``: about 16 bytes per record plus its
    index label, which :func:`geosynth.synthesize` needs) and each continuous value (8 bytes
    more per column: the values are clipped to their combination's fences before the cell
    means, :func:`geosynth.data.value_fences`, and exact quartiles of each combination need
    them all); geometries and attributes never
    leave the workers, but for each partition's smallest and largest located x and y,
    computed in the first pass for the check of ``grid``'s bounds against the records'
    extremes (the :class:`~geosynth.errors.PrivacyLeakWarning` of :func:`geosynth.prepare`).

    The result equals ``prepare(ddf.compute(), ...)``, except that ``zbar`` may differ in the
    last bits (sums in another order). Error messages about bad rows name (and count) the rows of
    one failing partition: with several, which one may change from run to run. The data is
    read twice (once more when points fall in no cell, and once more for the continuous
    columns, whose distinct values are gathered to refuse record numbers as
    :func:`geosynth.prepare` does: judged by partition, ids in small partitions passed):
    ``ddf.persist()`` first if computing it is costly, and the two passes must see the same
    records (else ``InputError``).

    With ``levels`` (the preparation of a differentially private release, see "Preparation on
    a public domain" in :mod:`geosynth.data`) one pass locates every record on the declared
    domain in its partition (:func:`geosynth.data.locate_on_domain`), and the client counts the
    kept ones: nothing is refused on the records' values, and the result equals
    ``prepare(ddf.compute(), ..., levels=levels)``.

    Dask turns object columns into strings when it builds a frame from pandas (its
    ``dataframe.convert-string`` option, on by default), so an object attribute that mixes
    ``1`` and ``"1"`` reaches this function as the one level ``"1"``, where :func:`geosynth.prepare`
    refuses the column; one of ``2`` and ``2.0`` as the two levels ``"2"`` and ``"2.0"`` (one
    level for :func:`geosynth.prepare`), and one of booleans as ``"False"`` and ``"True"``,
    sorted as text. Build the frame under ``dask.config.set({"dataframe.convert-string":
    False})`` to keep the values as they are, or give the column one type first.

    Parameters
    ----------
    ddf : dask_geopandas.GeoDataFrame
        The confidential points. A categorical attribute needs known categories
        (``ddf.categorize(columns=[...])``).
    grid, attributes, continuous, outside, max_bytes, allow_identifying, levels
        As for :func:`geosynth.prepare`.

    Returns
    -------
    CellCounts

    Raises
    ------
    geosynth.errors.InputError
        ``ddf`` is not a dask_geopandas.GeoDataFrame, a categorical attribute has unknown
        categories, a partition's columns, dtypes or categories are not the metadata's, the
        two passes saw other records, or any error of :func:`geosynth.prepare`.
    geosynth.errors.CRSError
        As :func:`geosynth.prepare`, for the frame's metadata and for every partition.
    geosynth.errors.MemoryLimitError
        As :func:`geosynth.prepare`.

    Warns
    -----
    geosynth.errors.DataWarning
        As :func:`geosynth.prepare`.
    """
    if not _is_dask_geodataframe(ddf):
        raise InputError(f"gdf must be a dask_geopandas.GeoDataFrame, got {type(ddf).__name__}")
    if levels is not None:  # as prepare(..., levels=...), by partition
        attrs, domain = check_domain_options(ddf, grid, attributes, continuous, levels,
                                             max_bytes)
        located, extremes = _locate_on_domain_dask(ddf, grid, domain)
        _warn_if_bounds_touch(grid, extremes)
        warn_dropped(located.filter(like="dropped_").to_numpy().sum(axis=0), len(located),
                     stacklevel=3)
        kept = located[(located["cell"].to_numpy() >= 0) & (located["combo"].to_numpy() >= 0)]
        return counts_on_domain(kept["cell"].to_numpy(), kept["combo"].to_numpy(), kept.index,
                                grid, attrs, domain)
    check_prepare_options(grid, outside, max_bytes, allow_identifying)
    meta = ddf._meta
    try:
        attrs = check_columns(meta, attributes, continuous)
    except InputError as err:
        _refuse_text_naming_rows(ddf, continuous, err)
        raise
    check_crs(ddf, grid)
    _check_known_categories(ddf, attrs)

    _check_covariates_of_all_partitions(ddf, covariate_names(continuous))
    dtypes = {a: meta[a].dtype for a in attrs}
    table_meta = _partition_table(meta, grid, attrs, continuous, dtypes)
    mapped = ddf.map_partitions(_partition_table, grid, attrs, continuous, dtypes,
                                meta=table_meta)
    covariates = covariate_names(continuous)
    # Without a continuous column no partition is located again for its moments.
    moments = [ddf.map_partitions(_partition_moments, grid, covariates, lattice_origin(grid),
                                  meta=pd.DataFrame({k: np.zeros(0) for k in range(9)}))
               ] if covariates else []
    tables, extremes, *moments = _compute_with_extremes(mapped, ddf, grid, *moments)
    table = count_table(tables, attrs)
    n_total = int(table[COUNT_COLUMN].sum())
    if n_total == 0:
        raise InputError("gdf has no rows; prepare needs at least one record")
    out = table[CELL_COLUMN].to_numpy() < 0
    n_out = int(table.loc[out, COUNT_COLUMN].sum())
    if n_out:
        found = ddf.map_partitions(_partition_outside, grid, attrs,
                                   meta=_OUTSIDE_META).compute()
        shown = pd.Index(found["label"].to_numpy(dtype=object)[:_SHOW])
        rows = describe_rows(shown, np.ones(len(shown), dtype=bool))
        more = n_out - len(shown)
        if more > 0:
            rows += f" and {more} more"
        none_left = None
        if n_out == n_total:  # with the points' bounds, as prepare: degrees in a metric CRS?
            corners = ddf.map_partitions(_partition_corners, meta=_CORNERS_META).compute()
            none_left = no_overlap_message(n_total, corners.dropna().to_numpy(), grid, ddf.crs)
        if outside == "drop" and none_left is None:  # partitions often number rows from 0
            check_kept_labels(ddf.index.compute(), n_out)
        beyond = int(found["beyond"].sum()) if grid.is_clipped else None  # as prepare's
        check_outside(n_out, n_total, rows, outside, none_left=none_left, stacklevel=2,
                      beyond=beyond)
        table = table.loc[~out].reset_index(drop=True)
    for a in attrs:  # the partitions' dtypes: a categorical keeps its category order
        table[a] = table[a].astype(meta[a].dtype)
    _warn_if_bounds_touch(grid, extremes)
    if moments:
        warn_of_coordinate_columns(covariates, moments[0].to_numpy()
                                   .reshape(-1, len(covariates), 9).sum(axis=0))

    def records(levels: dict[str, list], combo_codes: np.ndarray) -> pd.DataFrame:
        """Second pass: the cell and combination of every kept record, in input order."""
        radix = [len(levels[a]) for a in attrs]
        combo_keys = np.zeros(len(combo_codes), dtype=np.int64)
        for k, r in enumerate(radix):
            combo_keys = combo_keys * r + combo_codes[:, k]
        records_meta = _partition_records(meta, grid, attrs, continuous, levels, combo_keys,
                                          radix)
        return ddf.map_partitions(_partition_records, grid, attrs, continuous, levels,
                                  combo_keys, radix, meta=records_meta).compute()

    counts = counts_from_table(table, grid, attrs, continuous, max_bytes=max_bytes,
                               allow_identifying=allow_identifying, records=records)
    _check_passes_agree(counts)
    return counts


def _refuse_text_naming_rows(ddf: dask_geopandas.GeoDataFrame, continuous: Any,
                             err: InputError) -> None:
    """Refuse a non-numeric continuous column naming its rows, as :func:`geosynth.prepare` does.

    ``err`` is the refusal of the frame's metadata (:func:`geosynth.data.check_columns`); when
    it is that of a non-numeric continuous column, one pass over that column finds the rows
    whose values do not read as numbers (the metadata has none) and what else the message
    says (:func:`geosynth.data.non_numeric_evidence`). Only counts and row labels come back.
    """
    meta = ddf._meta
    for name in covariate_names(continuous):
        dtype = meta[name].dtype
        evidence = non_numeric_evidence(meta[name])
        if str(err) == non_numeric_message(name, dtype, evidence):
            found = ddf[name].map_partitions(non_numeric_evidence, meta=evidence).compute()
            raise InputError(non_numeric_message(name, dtype, merge_evidence(found))) from None


def _check_covariates_of_all_partitions(ddf: dask_geopandas.GeoDataFrame,
                                        columns: Sequence[str]) -> None:
    """Refuse record numbers as a continuous column, judged on all partitions at once.

    Each partition was checked alone (:func:`geosynth.data.locate_records`): record ids split
    into partitions of fewer than 20 rows, or too few for the density rule, passed what
    :func:`geosynth.prepare` refuses (and a partition's refusal gave its own count). A column
    can only be record numbers when its values are distinct and on a grid
    (:func:`geosynth.data.on_a_grid`: whole numbers, or ids scaled or shifted, ``0.1 * id``,
    ``id + 0.5``, which an earlier shortcut, letting through any column with a fraction,
    passed here while :func:`geosynth.prepare` refused them). Only such a column has its
    distinct values gathered, checked when they are as many as its values; a measurement is
    let through on its :data:`_GRID_SAMPLE` smallest values (a reduction that gathers only
    those): a repeat among them, or values on no grid. Before the partitions' checks.
    """
    import dask

    for column in columns:
        values = ddf[column]
        smallest = values.dropna().nsmallest(_GRID_SAMPLE).compute().to_numpy(np.float64)
        if np.unique(smallest).size < smallest.size or not on_a_grid(smallest):
            continue
        distinct, count = dask.compute(values.drop_duplicates(), values.count())
        if len(distinct) == int(count):
            check_not_row_numbers(distinct.to_numpy(dtype=np.float64), column)


#: The smallest values of a continuous column that tell a measurement from record numbers
#: (:func:`_check_covariates_of_all_partitions`).
_GRID_SAMPLE = 2_000


def _check_passes_agree(counts: CellCounts) -> None:
    """Refuse counts whose records (second pass) do not add up to its counts (first pass).

    Data that changes between computations (an unseeded random step, a source being written)
    gave as many records in both passes but other cells or combinations: the fit then saw
    counts that the releases' records do not hold.
    """
    n_combos = counts.counts.shape[1]
    flat = counts.record_cell * n_combos + counts.record_combo
    if not np.array_equal(np.bincount(flat, minlength=counts.counts.size),
                          counts.counts.reshape(-1)):
        raise InputError(
            "gdf gave other records in prepare_dask's second pass than in its first (the "
            "records' cells or attribute combinations differ from the counts): its partitions "
            "are not computed the same way twice; persist it first (ddf = ddf.persist()) or "
            "seed its random steps"
        )
