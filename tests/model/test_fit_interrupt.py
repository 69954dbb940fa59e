"""Ctrl-C during a fit: partial draws flagged ``interrupted``, or KeyboardInterrupt again.

Ctrl-C is simulated as it happens: SIGINT, whose default handler raises KeyboardInterrupt in
the main thread (where ``fit`` waits for its chain threads, or runs a chromatic chain itself).
The chain runner's chunk call is wrapped so that SIGINT is sent when the chosen chains reach
the chosen sweep; a chain thread that sent or saw it waits until the fit tells the chains to
stop, as a chain does that is busy with a chunk when the user presses Ctrl-C. Small chunks
(``MAX_CHUNK_SWEEPS``) make the stopping point, so the kept draws, exact.
"""

import signal
import threading
import warnings

import numpy as np
import pytest

from geosynth import PaivaModel
from geosynth.errors import GeosynthWarning
from geosynth.model import runner as runner_module
from geosynth.model import storage as storage_module

pytestmark = pytest.mark.usefixtures("sigint_raises")

CHUNK = 10  # sweeps per kernel call in these tests
RUN = {"n_iter": 200, "burn_in": 100, "thin": 1, "seed": 5, "progress": False}


@pytest.fixture(scope="module")
def counts(make_scenario_counts):
    return make_scenario_counts(n=150, seed=4, shape=(5, 5), attributes=["y", "x1"]).counts


def ctrl_c():
    """Send SIGINT to the main thread, as the terminal does on Ctrl-C."""
    signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)


def interrupt_at(monkeypatch, sweep, chains):
    """Send SIGINT once every chain in ``chains`` starts a chunk at or after ``sweep``."""
    monkeypatch.setattr(storage_module, "MAX_CHUNK_SWEEPS", CHUNK)
    original = runner_module.ChainRunner._run
    done, arrived, lock = {}, set(), threading.Lock()

    def run(self, data, state, n, out, chain, row, keep, scratch, cell_streams=None):
        with lock:
            before = done.get(chain, 0)
            done[chain] = before + n
            fire = before >= sweep and chain in chains and chain not in arrived
            if fire:
                arrived.add(chain)
                last = arrived == set(chains)
        if fire:
            if last:
                ctrl_c()  # raises here when this is the main thread
            if threading.current_thread() is not threading.main_thread():
                assert self.stop.wait(10), "the fit did not stop its chains after Ctrl-C"
        return original(self, data, state, n, out, chain, row, keep, scratch, cell_streams)

    monkeypatch.setattr(runner_module.ChainRunner, "_run", run)


def live_threads():
    """The threads that keep the process alive (chain threads; not tqdm's daemon monitor)."""
    return {thread for thread in threading.enumerate() if not thread.daemon}


# (fit options, chains that reach the sweep, draws per chain kept after Ctrl-C at sweep 150)
PATHS = {
    # One chain in a worker thread: it finishes the chunk it is in (sweeps 150-159).
    "serial": ({"chains": 1}, {0}, 60),
    # Two chains in two threads, both in the chunk at sweep 150.
    "threads": ({"chains": 2, "n_jobs": 2}, {0, 1}, 60),
    # Chromatic chains run one after another in the calling thread: chain 0 completes, and
    # chain 1, told by Ctrl-C to stop, finishes its chunk at sweep 150 as a thread does.
    "chromatic": ({"chains": 2, "parallel": True}, {1}, 60),
}


@pytest.mark.parametrize("path", PATHS)
def test_ctrl_c_while_sampling_returns_flagged_partial_draws(counts, monkeypatch, path):
    options, chains, kept = PATHS[path]
    interrupt_at(monkeypatch, 150, chains)
    with pytest.warns(GeosynthWarning, match=rf"interrupted: keeping the {kept} draws per "
                      r"chain .*fit.interrupted is True"):
        fit = PaivaModel().fit(counts, **RUN, **options)
    assert fit.interrupted is True
    assert "interrupted=True" in repr(fit)
    assert fit.n_draws == fit.n_eta_draws == kept
    assert fit.scalars.shape == (options["chains"], kept, len(fit.scalar_names))
    assert np.isfinite(fit.posterior_mean_lambda()).all()
    # The kept draws are the first draws of the uninterrupted fit with the same seed.
    monkeypatch.undo()
    monkeypatch.setattr(storage_module, "MAX_CHUNK_SWEEPS", CHUNK)  # same chunks, same draws
    full = PaivaModel().fit(counts, **RUN, **options)
    assert full.interrupted is False and full.n_draws == 100
    np.testing.assert_array_equal(fit.scalars, full.scalars[:, :kept])
    np.testing.assert_array_equal(fit.eta, full.eta[:, :kept])


@pytest.mark.parametrize("path", PATHS)
def test_ctrl_c_during_burn_in_raises_keyboard_interrupt(counts, monkeypatch, path):
    """No draw kept: KeyboardInterrupt again, not an empty fit that fails later."""
    options, chains, _ = PATHS[path]
    interrupt_at(monkeypatch, 50, chains)
    with pytest.raises(KeyboardInterrupt):
        PaivaModel().fit(counts, **RUN, **options)


def test_ctrl_c_between_a_chunks_sum_and_its_count_leaves_the_mean_exact(counts, monkeypatch):
    """Chromatic chains run in the calling thread, where Ctrl-C used to raise at any line.

    Raised after a chunk's exp η was summed and before its draws were counted, it left the
    posterior mean of λ one chunk off (the sum over more draws than it was divided by).
    """
    monkeypatch.setattr(storage_module, "MAX_CHUNK_SWEEPS", CHUNK)
    original = runner_module.ChainRunner._collect
    calls = []

    def collect(self, out, chain, row, written, scratch):
        original(self, out, chain, row, written, scratch)
        calls.append(chain)
        if len(calls) == 3:
            ctrl_c()  # after the third chunk's sum, before its draws are counted

    monkeypatch.setattr(runner_module.ChainRunner, "_collect", collect)
    with pytest.warns(GeosynthWarning, match="interrupted: keeping the 30 draws"):
        fit = PaivaModel().fit(counts, chains=1, parallel=True, **RUN)
    assert fit.interrupted and fit.n_draws == fit.n_eta_draws == 3 * CHUNK
    np.testing.assert_allclose(fit.lambda_chain_means[0],
                               np.exp(fit.eta[0].astype(np.float64)).mean(axis=0), rtol=1e-12)


def test_chain_stopped_in_burn_in_while_others_sample_raises(counts, monkeypatch):
    """The fit keeps as many draws as the shortest chain: none if one is still in burn-in."""
    monkeypatch.setattr(storage_module, "MAX_CHUNK_SWEEPS", CHUNK)
    original = runner_module.ChainRunner._run
    done = {}

    def run(self, data, state, n, out, chain, row, keep, scratch, cell_streams=None):
        done[chain] = done.get(chain, 0) + n
        if chain == 1 and done[chain] > 50:  # chain 1 still in burn-in
            ctrl_c()
            assert self.stop.wait(10)
        return original(self, data, state, n, out, chain, row, keep, scratch, cell_streams)

    monkeypatch.setattr(runner_module.ChainRunner, "_run", run)
    with pytest.raises(KeyboardInterrupt):
        PaivaModel().fit(counts, chains=2, n_jobs=2, **RUN)


def stop_after(monkeypatch, kept_chunks, stop, chains=2):
    """Set ``stop`` (from a chain's thread) once every chain started ``kept_chunks`` kept chunks."""
    monkeypatch.setattr(storage_module, "MAX_CHUNK_SWEEPS", CHUNK)
    original = runner_module.ChainRunner._run
    done, lock = {}, threading.Lock()

    def run(self, data, state, n, out, chain, row, keep, scratch, cell_streams=None):
        with lock:
            done[chain] = done.get(chain, 0) + bool(keep)
            if len(done) == chains and min(done.values()) >= kept_chunks:
                stop.set()
        return original(self, data, state, n, out, chain, row, keep, scratch, cell_streams)

    monkeypatch.setattr(runner_module.ChainRunner, "_run", run)


@pytest.mark.parametrize("n_iter", [200, "auto"])
def test_a_callers_stop_event_ends_the_fit_as_ctrl_c_does(counts, monkeypatch, n_iter):
    # Fits in worker threads (geosynth.tune) never see Ctrl-C: the main thread sets the event.
    stop = threading.Event()
    stop_after(monkeypatch, 3, stop)
    run = RUN | ({"n_iter": "auto", "burn_in": None} if n_iter == "auto" else {})
    with pytest.warns(GeosynthWarning, match="interrupted: keeping the"):
        fit = PaivaModel().fit(counts, **run, chains=2, n_jobs=2, stop=stop)
    assert fit.interrupted is True and stop.is_set()
    assert 0 < fit.n_draws < (100 if n_iter == 200 else 10**6)
    if n_iter == "auto":
        assert fit.stopping.reason == "interrupted"


def test_a_stop_set_after_every_draw_leaves_the_fit_whole(counts, monkeypatch):
    """A stop set once the chains had finished flagged a complete fit as interrupted."""
    stop = threading.Event()
    original = runner_module.ChainRunner.run_chain

    def run_then_stop(self, *args):
        original(self, *args)
        stop.set()

    monkeypatch.setattr(runner_module.ChainRunner, "run_chain", run_then_stop)
    with warnings.catch_warnings():
        warnings.simplefilter("error", GeosynthWarning)
        fit = PaivaModel().fit(counts, **RUN, chains=1, stop=stop)
    assert stop.is_set() and fit.interrupted is False and fit.n_draws == 100


def test_a_stop_set_before_any_draw_raises_keyboard_interrupt(counts):
    stop = threading.Event()
    stop.set()
    with pytest.raises(KeyboardInterrupt):
        PaivaModel().fit(counts, **RUN, chains=2, stop=stop)


def test_stop_must_be_an_event_and_not_with_an_executor(counts):
    from concurrent.futures import ThreadPoolExecutor

    from geosynth.errors import InputError

    with pytest.raises(InputError, match="stop must be a threading.Event, got bool"):
        PaivaModel().fit(counts, **RUN, stop=True)
    with ThreadPoolExecutor(1) as pool, pytest.raises(InputError, match="not the tasks of an"):
        PaivaModel().fit(counts, **RUN, stop=threading.Event(), executor=pool)


def test_the_callers_stop_event_is_only_read(counts, monkeypatch):
    # A failed chain set the caller's event itself: every later fit given it (tune's other
    # candidates) was then cancelled at once.
    original = runner_module.ChainRunner._run

    def fail(self, data, state, n, out, chain, row, keep, scratch, cell_streams=None):
        if chain == 1:
            raise RuntimeError("chain 1 failed")
        return original(self, data, state, n, out, chain, row, keep, scratch, cell_streams)

    monkeypatch.setattr(runner_module.ChainRunner, "_run", fail)
    stop = threading.Event()
    with pytest.raises(RuntimeError, match="chain 1 failed"):
        PaivaModel().fit(counts, **RUN, chains=2, n_jobs=2, stop=stop)
    assert not stop.is_set()
    monkeypatch.undo()
    assert PaivaModel().fit(counts, **RUN, chains=2, stop=stop).interrupted is False


def test_stopping_numbers_after_ctrl_c_are_those_of_the_returned_draws(counts, monkeypatch):
    """A Ctrl-C mid-segment returned the window as it then was, with the ESS and R-hat of the
    previous check: a window with fewer draws (and, after the oldest segment was dropped,
    other draws) than the fit holds."""
    stop = threading.Event()
    stop_after(monkeypatch, 30, stop)  # mid-segment, after four checks
    checked = []
    original = runner_module.assess_convergence

    def assess(groups, *args, **kwargs):
        check = original(groups, *args, **kwargs)
        checked.append((groups[0].draws.copy(), check))
        return check

    monkeypatch.setattr(runner_module, "assess_convergence", assess)
    run = RUN | {"n_iter": "auto", "burn_in": None}
    with pytest.warns(GeosynthWarning, match="interrupted: keeping the"):
        fit = PaivaModel().fit(counts, **run, chains=2, n_jobs=2, stop=stop,
                               target_ess=100, max_rhat=1.001)
    stopping = fit.stopping
    assert fit.interrupted and stopping.reason == "interrupted" and len(checked) >= 2
    assert stopping.draws == fit.n_draws
    draws, check = checked[-1]
    np.testing.assert_array_equal(draws, fit.scalars)  # the last check saw the returned draws
    assert (stopping.min_ess, stopping.max_r_hat) == (check.min_ess, check.max_r_hat)
    assert stopping.not_converged == check.not_converged
    assert stopping.checks == len(checked)


def test_ctrl_c_during_a_later_check_reports_no_numbers_of_an_earlier_window(counts,
                                                                             monkeypatch):
    """The check Ctrl-C stopped is not run again, and the previous one saw fewer draws."""
    original = runner_module.assess_convergence
    calls = []

    def assess(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt  # as SIGINT's handler raises it in the checking thread
        return original(*args, **kwargs)

    monkeypatch.setattr(runner_module, "assess_convergence", assess)
    run = RUN | {"n_iter": "auto", "burn_in": None}
    with pytest.warns(GeosynthWarning, match="interrupted: keeping the"):
        fit = PaivaModel().fit(counts, **run, chains=2, target_ess=100, max_rhat=1.001)
    stopping = fit.stopping
    assert fit.interrupted and stopping.reason == "interrupted" and len(calls) == 2
    assert np.isnan(stopping.min_ess) and np.isnan(stopping.max_r_hat)
    assert stopping.not_converged == () and stopping.checks == 1


@pytest.mark.parametrize("n_iter", [2000, "auto"])
def test_a_failed_chain_stops_the_others_at_their_next_chunk(counts, monkeypatch, n_iter):
    # The error of chain 1 surfaced only once chain 0 was done: chain 0 ran to its end (or,
    # n_iter="auto", to the end of its segment) before the fit reported the failure.
    monkeypatch.setattr(storage_module, "MAX_CHUNK_SWEEPS", CHUNK)
    original = runner_module.ChainRunner._run
    started = {}

    def run(self, data, state, n, out, chain, row, keep, scratch, cell_streams=None):
        started[chain] = started.get(chain, 0) + 1
        if chain == 1 and keep:
            raise RuntimeError("chain 1 failed")
        if chain == 0 and keep and started[0] > 1:
            assert self.stop.wait(5), "chain 0 was not told to stop after chain 1 failed"
        return original(self, data, state, n, out, chain, row, keep, scratch, cell_streams)

    monkeypatch.setattr(runner_module.ChainRunner, "_run", run)
    run_options = RUN | ({"n_iter": n_iter, "burn_in": None, "target_ess": 10**4}
                         if n_iter == "auto" else {"n_iter": n_iter})
    with pytest.raises(RuntimeError, match="chain 1 failed"):
        PaivaModel().fit(counts, **run_options, chains=2, n_jobs=2)


@pytest.mark.parametrize("sweep", [150, 50])  # a partial fit; KeyboardInterrupt (burn-in)
@pytest.mark.parametrize("path", PATHS)
def test_no_chain_thread_outlives_an_interrupted_fit(counts, monkeypatch, path, sweep):
    """Ctrl-C returns the partial fit, or raises, only once every chain's thread has ended."""
    options, chains, _ = PATHS[path]
    before = live_threads()
    interrupt_at(monkeypatch, sweep, chains)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GeosynthWarning)
        try:
            assert PaivaModel().fit(counts, **RUN, **options).interrupted and sweep == 150
        except KeyboardInterrupt:
            assert sweep == 50
    assert live_threads() <= before


def test_an_interrupted_auto_fit_leaves_no_thread_and_warns_at_the_callers_line(counts,
                                                                             monkeypatch):
    before = live_threads()
    stop = threading.Event()
    stop_after(monkeypatch, 3, stop)
    run = RUN | {"n_iter": "auto", "burn_in": None}
    with pytest.warns(GeosynthWarning, match="interrupted: keeping the") as record:
        fit = PaivaModel().fit(counts, **run, chains=2, n_jobs=2, stop=stop)
    assert fit.interrupted and live_threads() <= before
    # The warning names the caller's line (it named fit's own line in geosynth/model/fit.py).
    assert [warning.filename for warning in record] == [__file__]


def test_a_chain_interrupted_in_its_executor_task_gives_a_flagged_partial_fit(counts,
                                                                            monkeypatch):
    """Ctrl-C reaches a local pool's worker processes too: the chain interrupted there returns
    the draws it kept. Chains of different lengths failed in np.concatenate (NumPy's
    ValueError), and equal ones came back as a whole fit (interrupted=False)."""
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setattr(storage_module, "MAX_CHUNK_SWEEPS", CHUNK)
    original = runner_module.ChainRunner._run

    def run(self, data, state, n, out, chain, row, keep, scratch, cell_streams=None):
        if self.first_chain == 1 and keep and row >= 50:  # chain 1's task, at sweep 150
            raise KeyboardInterrupt  # as SIGINT raises it in the worker
        return original(self, data, state, n, out, chain, row, keep, scratch, cell_streams)

    monkeypatch.setattr(runner_module.ChainRunner, "_run", run)
    with ThreadPoolExecutor(2) as pool, pytest.warns(
            GeosynthWarning, match="interrupted: keeping the 50 draws per chain") as record:
        fit = PaivaModel().fit(counts, **RUN, chains=3, executor=pool)
    assert __file__ in [warning.filename for warning in record]  # the caller's warning
    assert fit.interrupted is True and fit.n_draws == 50
    monkeypatch.undo()
    monkeypatch.setattr(storage_module, "MAX_CHUNK_SWEEPS", CHUNK)  # same chunks, same draws
    full = PaivaModel().fit(counts, **RUN, chains=3)
    assert full.n_draws == 100
    for name in ("scalars", "theta"):
        np.testing.assert_array_equal(getattr(fit, name), getattr(full, name)[:, :50])
    np.testing.assert_array_equal(fit.eta_draw_index,
                                  full.eta_draw_index[:fit.eta_draw_index.size])
    np.testing.assert_array_equal(fit.eta, full.eta[:, :fit.eta_draw_index.size])
    # Chains 0 and 2 ran to their end: their mean of λ averages all their draws.
    np.testing.assert_array_equal(fit.lambda_chain_means[[0, 2]],
                                  full.lambda_chain_means[[0, 2]])


def test_an_interrupted_fit_without_eta_draws_says_so(counts, monkeypatch):
    # eta_draws=5 spaces five draws over the planned 100 (the first is draw 10): stopped
    # after the first chunk of 10 draws, none was stored. lambda_draw said "index must be an
    # integer in [-0, 0)", and synthesize "refit with a larger eta_draws", to a user who had
    # asked for 5.
    import geosynth
    from geosynth.errors import InputError

    interrupt_at(monkeypatch, 91, {0})  # in the chunk of sweeps 100-109
    with pytest.warns(GeosynthWarning, match="interrupted"):
        fit = PaivaModel().fit(counts, **RUN, chains=1, eta_draws=5)
    assert fit.interrupted and fit.n_eta_draws == 0
    with pytest.raises(InputError, match="stored no draw of η: it was interrupted"):
        fit.lambda_draw(0)
    with pytest.raises(InputError, match=r"the fit was interrupted with η stored for only 0 "
                                         r".*run the fit to its end"):
        geosynth.synth.release_draws(fit, 1)
