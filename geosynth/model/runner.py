"""Running chains: threads or executor tasks, chunks of kernel calls, progress, Ctrl-C, auto-stop.

:class:`ChainRunner` runs every chain of a fixed-length fit in threads (or, through
:func:`run_on_executor`, one chain per task of a :class:`concurrent.futures.Executor`), in chunks
of sweeps so that a progress bar moves and Ctrl-C returns the draws kept so far;
:class:`AutoRunner` runs ``n_iter="auto"`` fits segment by segment until the convergence rule of
:mod:`geosynth.model.stopping` holds. Chain ``c`` draws from the same random stream either way,
so the draws are the same.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import mmap
import os
import signal
import sys
import threading
import time
import warnings
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, ThreadPoolExecutor, as_completed, wait
from pathlib import Path
from typing import NamedTuple

import numpy as np

from geosynth.errors import GeosynthWarning, SamplerError
from geosynth.model.noise_aware import (
    marginal_slot_count,
    run_chunk_noise_aware,
    update_latent_counts,
)
from geosynth.model.state import (
    BLOCK_NAMES,
    CountTables,
    GibbsState,
    ModelData,
    compute_eta,
    model_shape,
    recorded_scalars,
    scalar_columns,
)
from geosynth.model.stopping import (
    LAMBDA_SCREEN,
    WINDOW_SEGMENTS,
    ConvergenceCheck,
    ParameterGroup,
    StoppingInfo,
    assess_convergence,
    complete_check_seconds_per_row,
    diagnostics_pace,
    field_groups,
)
from geosynth.model.storage import StoragePlan, chunk_sweeps, evenly_spaced_draws
from geosynth.model.sweep import run_chunk
from geosynth.samplers.ars import new_workspace
from geosynth.samplers.family import STATUS_MESSAGES

__all__ = [
    "MIN_DRAWS_AT_DEADLINE", "COMPILE_SECONDS", "ChainSettings", "run_on_executor",
    "kernels_need_compiling", "initial_state", "ChainRunner", "AutoRunner",
]


# n_iter="auto": max_seconds stops a chain only once it holds this many draws (arviz's minimum
# for ESS and R-hat), so that even a fit stopped at once reports its diagnostics.
MIN_DRAWS_AT_DEADLINE = 4
#: Bytes from which a fixed-length fit's draw arrays are populated up front (_populated_zeros).
POPULATE_MIN_BYTES = 1 << 20


# Seconds a cold compilation of each sampler's kernels took on the 2-core benchmark machine
# (a fresh NUMBA_CACHE_DIR, the first fit in a new process): what the "compiling" notice quotes.
# Measured by bench/bench_cold.py and `geosynth compile` (bench/RESULTS.md, 2026-11-25):
# exact 80-89 s, noise-aware 88 s, chromatic 96 s, block 82 s.
COMPILE_SECONDS = {"serial": 90, "noise-aware": 90, "chromatic": 100, "block": 80}


class ChainSettings(NamedTuple):
    """What a chain task needs besides the model's arrays and its stream (small, picklable)."""

    names: list[str]
    n_iter: int
    burn_in: int
    thin: int
    plan: StoragePlan
    noise: tuple[float, np.ndarray] | None
    parallel: bool
    block: tuple | None = None


def run_on_executor(executor: Executor, data: ModelData, tables: CountTables,
                     settings: ChainSettings, streams: np.ndarray) -> dict:
    """Run chain ``c`` from ``streams[c]`` as a task of ``executor``; concatenate the draws.

    Every task gets the same ``data``, ``tables`` and ``settings`` objects (an executor may
    send each to a worker once) and returns its chain's draws, as
    :meth:`ChainRunner.run_all` does for one chain; they are concatenated in chain order. The
    results are taken as the chains finish, so a chain that fails is reported at once (the
    chains not started are cancelled) rather than after the chains before it have run. A chain
    interrupted in its worker (Ctrl-C reaches the worker processes of a local pool too) returns
    the draws it kept: every chain then keeps as many as the shortest, flagged interrupted
    with a warning, as :meth:`ChainRunner.run_all` does after Ctrl-C.
    """
    futures = {executor.submit(_run_chain_task, data, tables, settings, streams[c], c): c
               for c in range(streams.shape[0])}
    parts = [None] * len(futures)
    try:
        for future in as_completed(futures):
            parts[futures[future]] = future.result()
    except BaseException:
        for future in futures:  # a failed chain (or Ctrl-C) stops the chains not started
            future.cancel()
        raise
    draws = _join_chains(parts)
    if draws["interrupted"]:
        ChainRunner._warn_interrupted(np.array([part["scalars"].shape[1] for part in parts]))
    return draws


def _join_chains(parts: list[dict]) -> dict:
    """Concatenate the chains' draws in chain order, the first n of each (n: the fewest kept).

    The chains' η draws are the same prefix of the plan's (``eta_draw_index``), so the
    shortest chain's index is that of every chain's first n draws. Flagged interrupted when
    some chain was, or kept fewer draws than another.
    """
    kept = [part["scalars"].shape[1] for part in parts]
    n = min(kept)
    eta_index = parts[kept.index(n)]["eta_draw_index"]
    draws = {}
    for name in ("scalars", "theta", "beta", "eta", "latent_totals", "lambda_chain_means"):
        rows = {"eta": eta_index.size, "lambda_chain_means": None}.get(name, n)
        pieces = [part[name] for part in parts]
        draws[name] = None if pieces[0] is None else np.concatenate(
            [piece if rows is None else piece[:, :rows] for piece in pieces], axis=0)
    draws["eta_draw_index"] = eta_index
    draws["interrupted"] = any(part["interrupted"] for part in parts) or n < max(kept)
    return draws


def _run_chain_task(data: ModelData, tables: CountTables, settings: ChainSettings,
                    stream: np.ndarray, chain: int) -> dict:
    """Task of ``fit(executor=...)``: chain ``chain`` from its stream, with no progress bar."""
    runner = ChainRunner(data, tables, settings.names, settings.n_iter, settings.burn_in,
                          settings.thin, settings.plan, False, settings.noise,
                          parallel=settings.parallel, block=settings.block,
                          first_chain=chain)
    return runner.run_all(stream[None, :], 1)


def kernels_need_compiling(kernel) -> bool:
    """Whether the first call of the numba ``kernel`` will compile it rather than load it.

    True when ``kernel`` has no compiled signature in this process and numba's cache holds no
    index for it (``kernel.stats.cache_path``): a fresh clone or install. A cache index left
    by an older version of the kernel also counts as compiled here; the fit then reports the
    compilation only once it is done.

    Parameters
    ----------
    kernel : numba.core.registry.CPUDispatcher
        An ``@njit(cache=True)`` function.

    Returns
    -------
    bool
        False also for a plain Python function (``NUMBA_DISABLE_JIT=1``).
    """
    if getattr(kernel, "signatures", True):
        return False
    cache_path = getattr(kernel.stats, "cache_path", None)
    if not cache_path:
        return True
    function = kernel.py_func
    stem = Path(function.__code__.co_filename).stem
    tag = f"py{sys.version_info.major}{sys.version_info.minor}"
    return not any(Path(cache_path).glob(f"{stem}.{function.__qualname__}-*.{tag}*.nbi"))


def initial_state(data: ModelData, tables: CountTables, stream: np.ndarray) -> GibbsState:
    """Return a chain's over-dispersed starting state (so R-hat can detect non-convergence).

    Parameters
    ----------
    data : ModelData
        The fit's read-only arrays (:func:`~geosynth.model.fit.build_model_data`).
    tables : CountTables
        The fit's counts and their sums; the state holds a copy of each.
    stream : numpy.ndarray of uint64, shape (4,)
        The chain's xoshiro256** stream (:func:`geosynth.samplers.rng.make_streams`); the
        state's generator starts from a copy, and it seeds the starting values.

    Returns
    -------
    GibbsState
    """
    G, B, n_levels = model_shape(data)
    K, fields = len(data.beta_priors), data.zbar.shape[0]
    rng = np.random.default_rng(stream[:2].astype(np.int64) & 0x7FFFFFFFFFFFFFFF)
    mean_count = max(tables.counts.sum(), 1.0) / (G * B)
    return GibbsState(
        **{name: np.array(table) for name, table in tables._asdict().items()},  # copies
        mu=np.array([np.log(mean_count) + rng.normal(0, 0.5)]),
        alpha=rng.normal(0, 0.5, n_levels),
        theta=rng.normal(0, 0.2, G),
        phi=rng.normal(0, 0.2, (G, n_levels)),
        beta=np.zeros((fields, G)) if K == 0 else rng.normal(0, 0.2, (K, G)),
        eps=np.zeros((G, B)),
        tau_theta=np.array([rng.gamma(2.0, 1.0)]),
        tau_phi=rng.gamma(2.0, 1.0, n_levels),
        tau_eps=np.array([rng.gamma(2.0, 5.0)]),
        tau_beta=rng.gamma(2.0, 1.0, fields),
        eta=np.zeros((G, B)),
        expeta=np.ones((G, B)),
        rng=stream.copy(),
        work=new_workspace(),
        wbuf=np.zeros(max(B, 1)),
        zbuf=np.zeros(max(B, 1)),
        scale_log_sd=np.full(5 * n_levels + 7 + 2 * fields, np.log(0.1)),
        marginal_log_sd=np.full(
            marginal_slot_count(n_levels, data.combo_levels.shape[1], B), np.log(0.3)),
        cell_work=np.zeros((4, G)),
        entry_work=np.zeros((4, G, B)),
        entry_flags=np.zeros(G * B, np.int8),
        entry_index=np.zeros(G * B, np.int64),
        mode_hessian=np.zeros(((1 + n_levels) * data.modes.shape[1],) * 2),
        mode_hessian_sweeps=np.zeros(1, dtype=np.int64),
        field_work=np.zeros((3, 1 + n_levels, G)),
    )


@contextlib.contextmanager
def ctrl_c_stops(stop: threading.Event) -> Iterator[Callable[[], bool]]:
    """Within the block, Ctrl-C sets ``stop`` instead of raising; a second Ctrl-C raises.

    For chains run in the calling thread (chromatic fits with one worker): Python raises
    ``KeyboardInterrupt`` at whatever line runs when the signal arrives, which could fall
    between adding a chunk's exp η to the running sum and counting its draws, leaving an
    interrupted fit's posterior mean of λ one chunk off. With ``stop`` set, the chain instead
    stops at its next chunk, as chains in worker threads do. Yields a function telling whether
    Ctrl-C was pressed. Outside the main thread, where Python delivers no SIGINT, when SIGINT
    is ignored, or when its handler was not installed from Python, nothing changes.
    """
    pressed = threading.Event()
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.getsignal(signal.SIGINT)
    if previous is None or previous == signal.SIG_IGN:
        yield pressed.is_set
        return

    def handler(signum, frame):
        if pressed.is_set():
            raise KeyboardInterrupt
        pressed.set()
        stop.set()

    signal.signal(signal.SIGINT, handler)
    try:
        yield pressed.is_set
    finally:
        signal.signal(signal.SIGINT, previous)


class ChainRunner:
    """Runs chains in threads, in fixed-size chunks, with progress bars and clean Ctrl-C.

    Each sampling chunk writes its draws of η into a per-chain float32 scratch buffer (the kernels
    write draw ``r`` of a call into row ``row + r`` of every output; the scalars, θ, β and latent
    totals get views that start at the chain's current row, η the scratch with ``row = 0``). After
    the chunk, exp η of each draw is added to a float64 running sum, and the draws the
    :class:`~geosynth.model.storage.StoragePlan` keeps are copied out. Views of C-contiguous rows
    are C-contiguous, so the kernels see the same numba types as with whole arrays.

    Ctrl-C: the chains stop at their next chunk; the draws every chain kept are returned with
    ``interrupted=True``, or the ``KeyboardInterrupt`` is raised again if some chain kept none.
    """

    def __init__(self, data, tables, names, n_iter, burn_in, thin, plan, progress, noise=None,
                 parallel=False, first_chain=0, block=None, stop=None):
        self.data, self.tables, self.names = data, tables, names
        self.block = block  # block sampler: the extra arguments of run_chunk_block
        self.first_chain = first_chain  # number of chain 0 in messages (a task runs one chain)
        self.colours = None
        if parallel:  # chromatic Gibbs: colour classes of the lattice, shared by the chains
            from geosynth.model.parallel import colour_classes, greedy_colouring

            self.colours = colour_classes(greedy_colouring(data.indptr, data.indices))
        # Noise-aware fits: the released counts c̃ and 1/b (0 switches the latent step off).
        self.noisy = noise[1] if noise else tables.counts
        self.inv_scale = 1.0 / noise[0] if noise else 0.0
        # Python ints: a NumPy int32 would be another numba type (a second compilation).
        self.n_iter, self.burn_in, self.thin = int(n_iter), int(burn_in), int(thin)
        self.plan = plan
        self.progress = progress
        # Set by Ctrl-C or by a failed chain: chains stop at their next chunk. The caller's
        # event (fit(stop=...)) stops them too and counts as Ctrl-C, but is only read: setting
        # it here would cancel the caller's other fits that share it.
        self.caller_stop = stop
        self.stop = threading.Event()

    def stopped_by_caller(self) -> bool:
        """Whether the caller's ``stop`` event ended the run (treated as Ctrl-C)."""
        return self.caller_stop is not None and self.caller_stop.is_set()

    def stopping(self) -> bool:
        """Whether the chains must stop at their next chunk (either event)."""
        return self.stop.is_set() or self.stopped_by_caller()

    def run_all(self, streams: np.ndarray, n_jobs: int | None) -> dict[str, np.ndarray]:
        """Run chain ``c`` from ``streams[c]`` for every c, ``n_jobs`` threads at a time.

        Returns the draws as the keyword arguments of :class:`~geosynth.model.results.PaivaFit`
        that come from sampling (scalars, θ, β, η and their bookkeeping).
        """
        chains = streams.shape[0]
        G, B, _ = model_shape(self.data)
        n_keep, eta_index = self.plan.n_keep, self.plan.eta_index
        has_beta = len(self.data.beta_priors) > 0
        out = _draw_outputs(self.data, chains, n_keep, eta_index.size, self.inv_scale, True)
        out["lambda_sum"] = np.zeros((chains, G, B))
        kept = np.zeros(chains, dtype=np.int64)
        if self.progress:
            self.compile_kernels(streams[0], out)  # before the bars, so their ETA is right
        workers = max(1, min(chains, n_jobs or os.cpu_count() or 1))
        interrupt = None
        if workers == 1 and self.colours is not None:
            # Chromatic chains one after another in the calling thread: numba's OpenMP layer
            # keeps one thread team per calling thread, and a second team's idle workers spin
            # on the cores the running team needs (a fit from a fresh worker thread after
            # parallel work in this one ran ~25× slower on 2 cores).
            with ctrl_c_stops(self.stop) as pressed:
                for c in range(chains):
                    self.run_chain(c, streams[c], out, kept)
            if pressed():
                interrupt = KeyboardInterrupt()
        else:
            with ThreadPoolExecutor(max_workers=workers) as pool:
                futures = [pool.submit(self.run_chain, c, streams[c], out, kept)
                           for c in range(chains)]
                try:
                    for future in futures:
                        future.result()
                except KeyboardInterrupt as error:
                    interrupt = error
                    self.stop.set()
                    wait(futures)  # each chain stops at its next chunk; a 2nd Ctrl-C propagates
                    for future in futures:
                        failure = future.exception()
                        if failure is not None and not isinstance(failure, KeyboardInterrupt):
                            raise failure from error
                except BaseException:
                    self.stop.set()  # a failed chain stops the others at their next chunk
                    raise
        n = int(kept.min())
        if interrupt is None and self.stopped_by_caller() and n < n_keep:
            # A stop set once every chain had made every draw stopped nothing: the fit is whole.
            interrupt = KeyboardInterrupt("stopped by the caller's stop event")
        if interrupt is not None:
            if n == 0:
                raise interrupt  # nothing to return: not an empty fit that fails later
            self._warn_interrupted(kept)
        n_eta = int(np.searchsorted(eta_index, n))  # stored draws among the first n
        means = out.pop("lambda_sum")
        means /= np.maximum(kept, 1)[:, None, None]
        if not has_beta:
            out["beta"] = None
        if not self.inv_scale:
            out["latent_totals"] = None
        # The kernels also record τ_β when nothing updates it; report the named scalars only.
        scalars = out.pop("scalars")
        draws = {k: (None if v is None else v[:, :n]) for k, v in out.items()}
        draws["scalars"] = np.ascontiguousarray(scalars[:, :n][..., scalar_columns(self.data)])
        draws["eta"] = out["eta"][:, :n_eta]
        draws["eta_draw_index"] = eta_index[:n_eta].copy()
        draws["lambda_chain_means"] = means if n > 0 else None
        draws["interrupted"] = interrupt is not None
        return draws

    @staticmethod
    def _warn_interrupted(kept: np.ndarray, stacklevel: int = 4) -> None:
        """Warn that the fit keeps ``kept.min()`` draws per chain; ``stacklevel``: fit's caller."""
        warnings.warn(
            f"interrupted: keeping the {kept.min()} draws per chain made so far (the "
            "posterior mean of λ averages all the draws each chain made); fit.interrupted "
            "is True: inspect these draws, do not publish from them",
            GeosynthWarning, stacklevel=stacklevel,
        )

    def kernel(self):
        """Return the numba kernel that runs this fit's chunks and its kind (for the notice)."""
        if self.inv_scale:
            return run_chunk_noise_aware, "noise-aware"
        if self.colours is not None:
            from geosynth.model.parallel import run_chunk_parallel

            return run_chunk_parallel, "chromatic"
        if self.block is not None:
            from geosynth.model.block import run_chunk_block

            return run_chunk_block, "block"
        return run_chunk, "serial"

    def compile_kernels(self, stream: np.ndarray, out: dict) -> None:
        """Compile (or load from numba's cache) the kernels of this fit, saying so on stderr.

        Nothing happens when they are compiled in this process already. Otherwise a
        zero-sweep chunk on a scratch state (the chains' states and streams are untouched)
        compiles every kernel the chains call, with the argument types they will have. The
        notice comes first when :func:`kernels_need_compiling` (no cache: a fresh clone), and
        the time it took after any compilation; loading from numba's cache is silent.
        """
        kernel, kind = self.kernel()
        pending = kernels_need_compiling(kernel)
        if not pending and getattr(kernel, "signatures", True):
            return  # compiled in this process, or not a numba dispatcher (NUMBA_DISABLE_JIT)
        if pending:
            print(f"compiling the sampler (first run only, ~{COMPILE_SECONDS[kind]} s; "
                  "`geosynth compile` does it ahead of time)",
                  file=sys.stderr, flush=True)
        start = time.perf_counter()
        state, cell_streams = self.start_chain(stream.copy())
        self._run(self.data, state, 0, out, 0, 0, False, self._buffers(out), cell_streams)
        if pending or sum(kernel.stats.cache_misses.values()):
            print(f"compiled the sampler in {time.perf_counter() - start:.0f} s",
                  file=sys.stderr, flush=True)

    def _buffers(self, out: dict) -> _ChunkBuffers:
        """Per-chain scratch of one sampling chunk (see :class:`_ChunkBuffers`)."""
        G, B, _ = model_shape(self.data)
        rows = self.plan.draws_per_chunk
        return _ChunkBuffers(
            eta=np.zeros((rows, G, B), dtype=np.float32),
            beta=None if out["beta"].shape[1] else np.zeros((rows, 1, G), dtype=np.float32),
            term=np.empty((G, B)),
        )

    def start_chain(self, stream: np.ndarray) -> tuple[GibbsState, np.ndarray | None]:
        """Return a chain's initial state and its cell streams (chromatic fits; else None)."""
        data = self.data
        state = initial_state(data, self.tables, stream)
        cell_streams = None
        if self.colours is not None:
            from geosynth.model.parallel import cell_streams_for

            cell_streams = cell_streams_for(stream, model_shape(data)[0])
        if self.inv_scale:
            compute_eta(data, state)
            update_latent_counts(data, state, self.noisy, self.inv_scale)
        return state, cell_streams

    def run_chain(self, chain: int, stream: np.ndarray, out: dict, kept: np.ndarray) -> None:
        """Run chain ``chain`` from ``stream`` into row ``chain`` of ``out``; count in ``kept``."""
        state, cell_streams = self.start_chain(stream)
        bar = _progress_bar(self.n_iter, chain, self.progress)
        # Sampling chunks hold whole thinning periods, so draws land on sweeps burn_in + thin·j.
        G, B, _ = model_shape(self.data)
        chunk, sampling_chunk = chunk_sweeps(G, B, self.thin)
        scratch = self._buffers(out)
        try:
            for n, keep in itertools.chain(
                _chunks(self.burn_in, chunk, False),
                _chunks(self.n_iter - self.burn_in, sampling_chunk, True),
            ):
                if self.stopping():
                    break
                row = int(kept[chain])
                written = self._run(self.data, state, n, out, chain, row, keep, scratch,
                                    cell_streams)
                if written:
                    self._collect(out, chain, row, written, scratch)
                kept[chain] += written
                bar.update(n)
        except BaseException:
            # Stop the other chains now: the caller sees this error only once it has waited
            # for the chains before this one, which would otherwise run to their end.
            self.stop.set()
            raise
        finally:
            bar.close()

    def _run(self, data, state, n, out, chain, row, keep, scratch, cell_streams=None) -> int:
        beta = out["beta"][chain][row:] if scratch.beta is None else scratch.beta
        eta = out["eta"][chain][row:] if scratch.eta is None else scratch.eta
        args = (data, state, n, self.thin, out["scalars"][chain][row:],
                out["theta"][chain][row:], beta, eta, 0, keep)
        if self.inv_scale:
            status, written = run_chunk_noise_aware(
                *args, self.noisy, self.inv_scale, out["latent_totals"][chain][row:])
        elif cell_streams is not None:
            from geosynth.model.parallel import run_chunk_parallel

            status, written = run_chunk_parallel(*args, *self.colours, cell_streams)
        elif self.block is not None:
            from geosynth.model.block import run_chunk_block

            status, written = run_chunk_block(*args, *self.block)
        else:
            status, written = run_chunk(*args)
        if status:
            block, code = divmod(status, 16)
            raise SamplerError(
                f"chain {self.first_chain + chain}: the {BLOCK_NAMES[block]} update failed: "
                f"{STATUS_MESSAGES[code]}"
            )
        return written

    def _collect(self, out, chain, row, written, scratch) -> None:
        """Add exp η of retained draws ``row .. row + written - 1`` and store the planned ones."""
        total, term = out["lambda_sum"][chain], scratch.term
        for r in range(written):
            np.exp(scratch.eta[r], dtype=np.float64, out=term)
            total += term
        index = self.plan.eta_index
        for j in range(np.searchsorted(index, row), np.searchsorted(index, row + written)):
            out["eta"][chain, j] = scratch.eta[index[j] - row]


def _draw_outputs(data: ModelData, chains: int, rows: int, eta_rows: int, noise: bool,
                  populate: bool) -> dict[str, np.ndarray]:
    """Return the zeroed arrays the kernels record ``rows`` draws a chain in (η: ``eta_rows``).

    With ``populate`` (a fixed-length fit, which fills them), their memory is mapped in one
    call up front (:func:`_populated_zeros`) rather than page by page as the draws are
    written; an ``n_iter="auto"`` fit, which may stop long before its rows are full, maps it
    as it goes (``np.zeros``). Zeroed either way, never ``np.empty``: memory the process freed
    may hold the records' values, and no row may show them.
    """
    G, B, _ = model_shape(data)
    has_beta = len(data.beta_priors) > 0
    zeros = _populated_zeros if populate else np.zeros
    return {
        "scalars": zeros((chains, rows, recorded_scalars(data)), np.float64),
        "theta": zeros((chains, rows, G), np.float32),
        "beta": zeros((chains, rows if has_beta else 0, data.zbar.shape[0], G), np.float32),
        "eta": zeros((chains, eta_rows, G, B), np.float32),
        "latent_totals": zeros((chains, rows if noise else 0, B), np.float64),
    }


def _populated_zeros(shape: tuple[int, ...], dtype: type) -> np.ndarray:
    """Return an array of zeros whose memory the OS maps now, in one call (Linux).

    Anonymous memory (``np.zeros``' too) is otherwise mapped a 4 KiB page at a time on first
    write. On the bench's 2-core VM (Firecracker, whose guest hands freed pages back to the
    host) such a fault costs about 10 µs: storing η's draws at 1,600 cells × 12 took 0.2 ms of
    a 3.9 ms sweep at thin 1, against 0.03 ms with the pages populated first, that included
    (``mmap(MAP_POPULATE)``, which the OS fills with zeros: 44 ms for 192 MB against 430 ms
    page by page; ``bench/RESULTS.md``, 2026-12-04, forty-first session). Elsewhere (no
    ``MAP_POPULATE``) and for small arrays it is ``np.zeros``.
    """
    size = math.prod(shape) * np.dtype(dtype).itemsize
    flags = getattr(mmap, "MAP_POPULATE", 0)
    if size == 0 or size < POPULATE_MIN_BYTES or not flags:  # mmap maps no 0 bytes
        return np.zeros(shape, dtype)
    block = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | flags)
    return np.frombuffer(block, dtype).reshape(shape)  # the array keeps the mapping alive


class _ChunkBuffers(NamedTuple):
    """Per-chain scratch: η of one chunk's draws, discarded β (if not fitted), one exp η term.

    ``eta`` is None for an ``n_iter="auto"`` fit, whose kernels write η straight into the
    stored draws (it keeps η for every retained draw).
    """

    eta: np.ndarray | None
    beta: np.ndarray | None
    term: np.ndarray


class _AutoChain:
    """One chain of an ``n_iter="auto"`` fit between segments: its state and its window.

    ``sums[s]`` and ``counts[s]`` hold the running sum of exp η and the number of draws of the
    window's segment in slot ``s`` (segment j uses slot ``j % WINDOW_SEGMENTS``);
    ``segment_rows`` the stored draws of each of the window's segments, oldest first, whose
    sum is ``rows``, the draws the chain holds.
    """

    def __init__(self, state, cell_streams, scratch, shape, bar):
        self.state, self.cell_streams, self.scratch = state, cell_streams, scratch
        self.sums = np.zeros((WINDOW_SEGMENTS, *shape))
        self.counts = np.zeros(WINDOW_SEGMENTS, dtype=np.int64)
        self.segment_rows: list[int] = []
        self.sweeps = 0
        self.bar = bar

    @property
    def rows(self) -> int:
        return sum(self.segment_rows)


class AutoRunner(ChainRunner):
    """Runs ``n_iter="auto"`` chains segment by segment until converged (:mod:`.stopping`).

    All chains run a segment (in threads, as :class:`ChainRunner` runs whole chains), then
    the calling thread checks the window's draws, drops the draws before the next window,
    thins them when the schedule says so, and starts the next segment. Draws are stored
    straight into ``out`` (η of every retained draw), and the kernels record every ``thin``
    sweeps from segment starts that are multiples of ``thin``, so the retained draws are the
    sweeps ``s`` with ``(s + 1) % thin == 0`` in the window.
    """

    def __init__(self, data, tables, names, thin, plan, progress, noise, *, parallel, schedule,
                 rule, started, eta_draws, block=None, beta_labels=(), stop=None):
        super().__init__(data, tables, names, 0, 0, thin, plan, progress, noise, parallel=parallel,
                         block=block, stop=stop)
        self.beta_labels = list(beta_labels)  # name of each covariate's β field
        self.schedule = schedule
        self.target_ess, self.max_rhat, self.max_seconds = rule
        self.started = started
        self.deadline = None if rule[2] is None else started + float(rule[2])
        self.timed_out = threading.Event()
        self.eta_draws = eta_draws
        G, B, _ = model_shape(data)
        self.screen = evenly_spaced_draws(G * B, LAMBDA_SCREEN)
        self.checks = 0
        self.check_seconds = 0.0
        self.last_check: ConvergenceCheck | None = None
        # Which draws the last check saw: (moves of the window's rows before it, draws per
        # chain). Rows move only when the window is thinned or its oldest segment dropped.
        self.window_moves = 0
        self.checked_window: tuple[int, int] | None = None
        self.checking = False  # True from the start of a check until it returns
        self.reserve_per_row = 0.0  # seconds of the complete check per stored draw per chain
        self.segment = 0
        self.consistent = True  # False while rows of the window move (see run_all)

    def _buffers(self, out: dict) -> _ChunkBuffers:
        G, B, _ = model_shape(self.data)
        rows = self.plan.draws_per_chunk
        return _ChunkBuffers(
            eta=None,
            beta=None if out["beta"].shape[1] else np.zeros((rows, 1, G), dtype=np.float32),
            term=np.empty((G, B)),
        )

    def run_all(self, streams: np.ndarray, n_jobs: int | None) -> dict:
        """Run every chain segment by segment until converged, out of time or interrupted."""
        n_chains = streams.shape[0]
        G, B, _ = model_shape(self.data)
        rows = self.plan.n_keep
        out = _draw_outputs(self.data, n_chains, rows, rows, self.inv_scale, False)
        self.out = out
        if self.progress:
            self.compile_kernels(streams[0], out)  # before the bars, so their ETA is right
        first_check = self.schedule.boundary(2)
        self.chains = []
        for c in range(n_chains):
            state, cell_streams = self.start_chain(streams[c])
            self.chains.append(_AutoChain(state, cell_streams, self._buffers(out), (G, B),
                                          _progress_bar(first_check, c, self.progress)))
        workers = max(1, min(n_chains, n_jobs or os.cpu_count() or 1))
        pool = None
        if not (workers == 1 and self.colours is not None):  # see ChainRunner.run_all
            pool = ThreadPoolExecutor(max_workers=workers)
        interrupt = None
        try:
            reason = self._run_segments(pool)
        except KeyboardInterrupt as error:
            if not self.consistent:
                raise  # Ctrl-C while the window's rows were being moved: no fit to return
            interrupt, reason = error, "interrupted"
        finally:
            if pool is not None:
                pool.shutdown(wait=True)
            for chain in self.chains:
                chain.bar.close()
        return self._result(reason, interrupt)

    def _each_chain(self, pool, *args) -> None:
        """Run :meth:`_segment` ``(c, *args)`` for every chain, in the pool or in turn.

        Raises ``KeyboardInterrupt`` when the caller's stop event ended the segments.
        """
        self._run_each_chain(pool, *args)
        if self.stopped_by_caller():
            raise KeyboardInterrupt("stopped by the caller's stop event")

    def _run_each_chain(self, pool, *args) -> None:
        if pool is None:
            with ctrl_c_stops(self.stop) as pressed:  # see ChainRunner.run_all
                for c in range(len(self.chains)):
                    self._segment(c, *args)
            if pressed():
                raise KeyboardInterrupt
            return
        futures = [pool.submit(self._segment, c, *args) for c in range(len(self.chains))]
        try:
            for future in futures:
                future.result()
        except KeyboardInterrupt:
            self.stop.set()
            wait(futures)  # each chain stops at its next chunk; a 2nd Ctrl-C propagates
            for future in futures:
                failure = future.exception()
                if failure is not None and not isinstance(failure, KeyboardInterrupt):
                    raise failure from None
            raise
        except BaseException:
            self.stop.set()  # a failed chain stops the others at their next chunk
            raise

    def _run_segments(self, pool) -> str:
        """Warm up, then run segments and check until converged or out of time."""
        schedule = self.schedule
        self._each_chain(pool, schedule.boundary(0), False, 0)
        self.segment = 0
        while True:
            j = self.segment
            self.consistent = False
            for _ in range(schedule.doublings(j, self.thin)):
                self._halve()
            self.consistent = True
            start, end = schedule.boundary(j), schedule.boundary(j + 1)
            first = schedule.window_start(j)
            if first % self.thin or start % self.thin or end % self.thin:  # the invariant
                raise RuntimeError(f"window [{first}, {end}) or segment [{start}, {end}) is "
                                   f"not a multiple of thin {self.thin}")
            self._each_chain(pool, end - start, True, j % WINDOW_SEGMENTS)
            if self.timed_out.is_set():
                return "max_seconds"
            if j >= 1:
                if self._check(complete=False).converged:
                    return "converged"
                if j >= WINDOW_SEGMENTS - 1:
                    self.consistent = False
                    self._drop_oldest(j - WINDOW_SEGMENTS + 1)
                    self.consistent = True
            self.segment += 1

    def _segment(self, c: int, length: int, keep: bool, slot: int) -> None:
        """Run ``length`` sweeps of chain ``c``; store their draws in the window's ``slot``."""
        try:
            self._segment_chunks(c, length, keep, slot)
        except BaseException:
            self.stop.set()  # stop the other chains now, as ChainRunner.run_chain does
            raise

    def _segment_chunks(self, c: int, length: int, keep: bool, slot: int) -> None:
        chain = self.chains[c]
        G, B, _ = model_shape(self.data)
        burn, sampling = chunk_sweeps(G, B, self.thin)
        if keep:
            chain.sums[slot] = 0.0
            chain.counts[slot] = 0
            chain.segment_rows.append(0)
        term = chain.scratch.term
        for n, _ in _chunks(length, sampling if keep else burn, keep):
            if self.stopping():
                return
            if keep and self.deadline is not None and chain.rows >= MIN_DRAWS_AT_DEADLINE \
                    and time.monotonic() >= self.deadline - self.reserve_per_row * chain.rows:
                self.timed_out.set()
                return
            row = chain.rows
            written = self._run(self.data, chain.state, n, self.out, c, row, keep,
                                chain.scratch, chain.cell_streams)
            for r in range(row, row + written):
                np.exp(self.out["eta"][c, r], dtype=np.float64, out=term)
                chain.sums[slot] += term
            chain.counts[slot] += written
            if keep:
                chain.segment_rows[-1] += written
            chain.sweeps += n
            chain.bar.update(n)

    def _move_rows(self, c: int, sources) -> None:
        """Store rows ``sources[r]`` of chain ``c`` in rows ``r`` (each source >= its row)."""
        for r, source in enumerate(sources):
            if r != source:
                for array in self.out.values():
                    if array.shape[1]:
                        array[c, r] = array[c, source]

    def _halve(self) -> None:
        """Keep every other stored draw (those on multiples of twice ``thin``); double thin.

        Every segment of the window starts on a multiple of twice ``thin`` (the schedule's
        invariant, checked after the doublings before each segment runs), so each keeps half
        its draws.
        """
        for c, chain in enumerate(self.chains):
            self._move_rows(c, range(1, chain.rows, 2))
            chain.segment_rows = [rows // 2 for rows in chain.segment_rows]
        self.thin *= 2
        self.window_moves += 1

    def _drop_oldest(self, j: int) -> None:
        """Drop the draws (and the exp η sum) of segment ``j``, the window's oldest segment."""
        for c, chain in enumerate(self.chains):
            oldest = chain.segment_rows.pop(0)
            self._move_rows(c, range(oldest, oldest + chain.rows))
            chain.sums[j % WINDOW_SEGMENTS] = 0.0
            chain.counts[j % WINDOW_SEGMENTS] = 0
        self.window_moves += 1

    def _groups(self, n: int) -> list[ParameterGroup]:
        """Group the window's first ``n`` draws of every chain in the order of the check."""
        out = self.out
        G, B, _ = model_shape(self.data)
        names = self.names
        eta = out["eta"].reshape(out["eta"].shape[0], out["eta"].shape[1], G * B)[:, :n]
        screen = self.screen

        def cell_combination(k: int) -> str:
            return "lambda[{},{}]".format(*divmod(int(k), B))

        scalars = out["scalars"][:, :n][..., scalar_columns(self.data)]
        groups = field_groups(scalars, names, out["theta"][:, :n],
                              out["beta"][:, :n] if out["beta"].shape[1] else None,
                              self.beta_labels)
        if screen.size < G * B:
            groups.append(ParameterGroup("lambda (screen)", eta[:, :, screen],
                                         lambda k: cell_combination(screen[k]), screen=True,
                                         log=True))
        groups.append(ParameterGroup("lambda", eta, cell_combination, log=True))
        return groups

    def _check(self, complete: bool) -> ConvergenceCheck:
        n = min(chain.rows for chain in self.chains)
        groups = self._groups(n)
        self.checking = True
        check = assess_convergence(groups, self.target_ess, self.max_rhat,
                                   complete=complete, workers=os.cpu_count() or 1)
        self.checking = False
        seconds = check.seconds
        if self.deadline is not None and not complete:
            started = time.perf_counter()
            pace = diagnostics_pace(check, groups, workers=os.cpu_count() or 1)
            self.reserve_per_row = complete_check_seconds_per_row(pace, groups)
            seconds += time.perf_counter() - started  # a timing of the screen is a check too
        self.checks += 1
        self.check_seconds += seconds
        self.last_check = check
        self.checked_window = (self.window_moves, n)
        postfix = _postfix(check, self.target_ess, self.max_rhat)
        following = self.schedule.boundary(self.segment + 2)  # the end of the next window
        for chain in self.chains:
            chain.bar.total = following
            chain.bar.set_postfix_str(postfix, refresh=True)
        return check

    def _check_after_interrupt(self, n: int) -> ConvergenceCheck | None:
        """Return a check of the ``n`` draws per chain an interrupted fit returns, or None.

        The last check, when it saw exactly these draws; otherwise (the chains went on
        sampling after it, or the window moved) a new check of them, so that the ESS and R-hat
        reported describe the draws returned. None, so NaN in :class:`StoppingInfo`, with
        fewer than :data:`MIN_DRAWS_AT_DEADLINE` draws, when the Ctrl-C came during a check
        (not run a second time), or when a second Ctrl-C stops the new check.
        """
        if self.last_check is not None and self.checked_window == (self.window_moves, n):
            return self.last_check
        if n < MIN_DRAWS_AT_DEADLINE or self.checking:
            return None
        try:
            return self._check(complete=False)
        except KeyboardInterrupt:
            return None

    def _result(self, reason: str, interrupt: KeyboardInterrupt | None) -> dict:
        chains = self.chains
        n = min(chain.rows for chain in chains)
        if interrupt is not None and n == 0:
            raise interrupt  # nothing to return: not an empty fit that fails later
        check = self.last_check
        if reason == "max_seconds":
            check = self._check(complete=True)
            if check.converged:  # the returned window meets the rule: nothing to warn about
                reason = "converged"
        elif interrupt is not None:
            # fit's caller: _warn_interrupted < _result < run_all < fit < caller
            self._warn_interrupted(np.array([chain.rows for chain in chains]), stacklevel=5)
            check = self._check_after_interrupt(n)
        sweeps = min(chain.sweeps for chain in chains)
        # Every chain's window starts at the same sweep: sweeps made minus the stored draws'.
        burn_in = chains[0].sweeps - self.thin * chains[0].rows
        stopping = StoppingInfo(
            reason=reason, sweeps=sweeps, burn_in=burn_in, thin=self.thin, draws=n,
            min_ess=math.nan if check is None else check.min_ess,
            max_r_hat=math.nan if check is None else check.max_r_hat,
            worst_ess="" if check is None else check.worst_ess,
            worst_r_hat="" if check is None else check.worst_r_hat,
            target_ess=self.target_ess, max_rhat=self.max_rhat, max_seconds=self.max_seconds,
            not_converged=() if check is None else check.not_converged,
            n_not_converged=0 if check is None else check.n_not_converged,
            checks=self.checks, check_seconds=self.check_seconds,
            seconds=time.monotonic() - self.started,
        )
        if reason == "max_seconds":
            warnings.warn(
                f"n_iter='auto' {stopping.describe()}. Not converged: "
                f"{stopping.not_converged_text()}. The draws of the last window are returned "
                "(in Python, fit.stopping records how the fit stopped); raise max_seconds, "
                "lower target_ess or raise max_rhat before publishing from them",
                GeosynthWarning, stacklevel=4,
            )
        out = self.out
        counts = np.array([chain.counts.sum() for chain in chains])
        means = np.stack([chain.sums.sum(axis=0) for chain in chains])
        means /= np.maximum(counts, 1)[:, None, None]
        eta_index = np.arange(n, dtype=np.int64)
        if isinstance(self.eta_draws, (int, np.integer)) and self.eta_draws < n:
            eta_index = evenly_spaced_draws(n, int(self.eta_draws))
        draws = {
            "scalars": np.ascontiguousarray(out["scalars"][:, :n][..., scalar_columns(self.data)]),
            "theta": out["theta"][:, :n],
            "beta": out["beta"][:, :n] if out["beta"].shape[1] else None,
            "eta": out["eta"][:, :n] if eta_index.size == n else out["eta"][:, eta_index],
            "latent_totals": out["latent_totals"][:, :n] if self.inv_scale else None,
            "eta_draw_index": eta_index,
            "lambda_chain_means": means if n > 0 else None,
            "interrupted": interrupt is not None,
            "thin": self.thin,
            "burn_in": burn_in,
            "stopping": stopping,
        }
        return draws


#: Characters of a parameter's name shown after a progress bar (a covariate may have a long name).
POSTFIX_NAME_CHARS = 30


def _postfix(check: ConvergenceCheck, target_ess: float, max_rhat: float) -> str:
    """Progress bar text of a check: the lowest ESS and highest R-hat, each with its parameter.

    For example ``ESS 85/400 (tau_phi[age]), R-hat 1.034/1.01 (lambda[3,1])``: which
    parameter holds the fit back, among the groups the check evaluated (a partial check stops
    at the first group that fails). A name is cut to :data:`POSTFIX_NAME_CHARS` characters.
    """
    def named(name: str) -> str:
        if len(name) > POSTFIX_NAME_CHARS:
            name = name[:POSTFIX_NAME_CHARS - 3] + "..."
        return f" ({name})" if name else ""

    return (f"ESS {check.min_ess:.0f}/{target_ess:g}{named(check.worst_ess)}, "
            f"R-hat {check.max_r_hat:.3f}/{max_rhat:g}{named(check.worst_r_hat)}")


def _chunks(total: int, size: int, keep: bool) -> Iterator[tuple[int, bool]]:
    """Yield ``(sweeps, keep)`` of each chunk, one at a time (a long run is no long list)."""
    for start in range(0, total, size):
        yield min(size, total - start), keep


def _progress_bar(total: int, chain: int, enabled: bool):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=f"chain {chain}", position=chain, leave=False,
                disable=not enabled, unit="sweep")
