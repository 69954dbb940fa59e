"""fit(n_iter="auto"): stops at the target (checked by arviz), at max_seconds with a warning,
reproducibly, with bounded memory, and refuses bad stopping rules with clear messages."""

import warnings

import numpy as np
import pytest

from geosynth import Grid, PaivaModel, prepare
from geosynth._compat import import_arviz
from geosynth.datasets import paiva_scenario
from geosynth.errors import GeosynthWarning, InputError, MemoryLimitError
from geosynth.model import StoppingInfo
from geosynth.model import runner as runner_module
from geosynth.model import stopping as stopping_module
from geosynth.model.diagnostics import convergence_diagnostics
from geosynth.model.fit import DEFAULT_THIN
from geosynth.model.stopping import (
    AUTO_THIN,
    MIN_WINDOW_DRAWS,
    AutoSchedule,
    ParameterGroup,
    assess_convergence,
    complete_check_seconds_per_row,
    diagnostics_pace,
)

# A 4x4 lattice and 2 combinations: an auto fit to ESS 100 takes a second or two (from
# every sweep: the default thin of an auto fit).
AUTO = {"n_iter": "auto", "target_ess": 100, "progress": False}


@pytest.fixture(scope="module")
def counts():
    scenario = paiva_scenario(n=300, seed=1)
    grid = Grid.regular(scenario.bounds, shape=(4, 4), crs=scenario.crs)
    return prepare(scenario.data, grid, attributes=["y"], levels={"y": [0, 1]})


@pytest.fixture(scope="module")
def auto_fit(counts):
    return PaivaModel().fit(counts, seed=7, **AUTO)


def arviz_ess_rhat(fit):
    """Bulk ESS and rank R-hat of every scalar, θ_i and λ_ib, by arviz on the returned draws."""
    az = import_arviz()
    posterior = fit.to_arviz().posterior
    names = [n for n in fit.scalar_names] + ["theta"]
    lam = az.convert_to_dataset({"eta": fit.eta.reshape(*fit.eta.shape[:2], -1)})
    ess = [az.ess(posterior, var_names=names, method="bulk"), az.ess(lam, method="bulk")]
    rhat = [az.rhat(posterior, var_names=names, method="rank"), az.rhat(lam, method="rank")]
    low = min(float(d[v].min()) for d in ess for v in d.data_vars)
    high = max(float(d[v].max()) for d in rhat for v in d.data_vars)
    return low, high


def test_stops_at_the_target_as_arviz_measures_it(auto_fit):
    stopping = auto_fit.stopping
    assert isinstance(stopping, StoppingInfo) and stopping.reason == "converged"
    low, high = arviz_ess_rhat(auto_fit)
    assert low >= 100 and high < 1.01
    assert stopping.min_ess == pytest.approx(low, rel=1e-9)
    assert stopping.max_r_hat == pytest.approx(high, rel=1e-9)
    assert stopping.not_converged == () and stopping.n_not_converged == 0
    # The first quarter of the sweeps is burn-in (the 2u warm-up at the first three checks);
    # the draws are the rest at the final thin.
    unit = AutoSchedule(1, 2, AUTO["target_ess"], 1.01, 10**6).unit
    assert stopping.burn_in == max(stopping.sweeps // 4, 2 * unit)
    assert auto_fit.n_draws == stopping.draws == (stopping.sweeps - stopping.burn_in) // \
        stopping.thin
    assert (auto_fit.thin, auto_fit.burn_in) == (stopping.thin, stopping.burn_in)
    assert auto_fit.n_eta_draws == auto_fit.n_draws  # η of every retained draw
    assert stopping.checks >= 1 and 0 < stopping.check_seconds < stopping.seconds
    assert "converged after" in stopping.describe()
    assert f"sweeps={stopping.sweeps} (converged)" in repr(auto_fit)
    assert auto_fit.posterior_mean_lambda().shape == (16, 2)


def test_auto_fits_start_from_every_sweep_fixed_fits_keep_every_sixth(counts, auto_fit):
    assert AUTO_THIN == 1 and DEFAULT_THIN == 6
    explicit = PaivaModel().fit(counts, seed=7, thin=AUTO_THIN, **AUTO)
    assert explicit.stopping.sweeps == auto_fit.stopping.sweeps
    assert explicit.stopping.thin == auto_fit.stopping.thin
    np.testing.assert_array_equal(explicit.theta, auto_fit.theta)
    from_six = PaivaModel().fit(counts, seed=7, thin=6, **AUTO).stopping
    assert from_six.thin % 6 == 0 and auto_fit.stopping.thin % 6 != 0  # 6·2^k against 2^k
    fixed = PaivaModel().fit(counts, n_iter=20, burn_in=8, seed=7, progress=False)
    assert fixed.thin == DEFAULT_THIN and fixed.n_draws == 2


def test_same_seed_same_sweeps_and_draws_whatever_the_threads(counts, auto_fit):
    again = PaivaModel().fit(counts, seed=7, n_jobs=1, **AUTO)
    assert again.stopping.sweeps == auto_fit.stopping.sweeps
    for name in ("scalars", "theta", "eta", "lambda_chain_means"):
        np.testing.assert_array_equal(getattr(again, name), getattr(auto_fit, name))
    other = PaivaModel().fit(counts, seed=8, **AUTO)
    assert not np.array_equal(other.theta[:, :10], auto_fit.theta[:, :10])


def test_max_seconds_stops_with_a_warning_naming_what_has_not_converged(counts):
    with pytest.warns(GeosynthWarning) as record:
        fit = PaivaModel().fit(counts, seed=7, **{**AUTO, "target_ess": 1e6},
                               max_seconds=0.01)
    message = next(str(w.message) for w in record if "max_seconds" in str(w.message))
    assert "stopped at max_seconds=0.01 before converging" in message
    assert "Not converged: " in message and "(ESS " in message and "R-hat " in message
    stopping = fit.stopping
    assert stopping.reason == "max_seconds" and stopping.n_not_converged > 0
    assert stopping.not_converged[0][0] in message
    assert fit.n_draws >= 4 and fit.n_draws == stopping.draws
    assert not fit.interrupted


def test_max_seconds_with_a_window_that_meets_the_rule_counts_as_converged(counts, monkeypatch):
    # The regular checks are made to fail (as a check just short of the target would), so the
    # fit runs until max_seconds; by then its window meets the rule, which the final, complete
    # check finds: the fit converged by its own rule — no warning naming nothing, reason
    # "converged", and arviz agrees on the returned draws.
    def regular_checks_fail(*args, complete=False, **kwargs):
        check = assess_convergence(*args, complete=complete, **kwargs)
        return check if complete else check._replace(converged=False)

    monkeypatch.setattr(runner_module, "assess_convergence", regular_checks_fail)
    with warnings.catch_warnings():
        warnings.simplefilter("error", GeosynthWarning)
        fit = PaivaModel().fit(counts, seed=7, **AUTO, max_seconds=3)
    stopping = fit.stopping
    assert stopping.reason == "converged" and stopping.n_not_converged == 0
    assert stopping.checks >= 2 and stopping.seconds >= 2  # it ran on to max_seconds
    low, high = arviz_ess_rhat(fit)
    assert low >= 100 and high < 1.01
    assert stopping.min_ess == pytest.approx(low, rel=1e-9)


def test_complete_check_time_is_the_pace_times_every_parameter():
    rng = np.random.default_rng(0)
    n = 200
    groups = [ParameterGroup("scalars", rng.normal(size=(2, n, 3)), str),
              ParameterGroup("theta", rng.normal(size=(2, n, 16)), str),
              ParameterGroup("lambda (screen)", rng.normal(size=(2, n, 5)), str, screen=True),
              ParameterGroup("lambda", rng.normal(size=(2, n, 32)), str)]
    partial = assess_convergence(groups, 1e9, 1.01)  # the scalars fail: nothing else checked
    assert partial.checked == ("scalars",) and partial.values == 2 * n * 3
    complete = assess_convergence(groups, 1e9, 1.01, complete=True)
    assert complete.values == 2 * n * (3 + 16 + 32)  # the screen is skipped
    # A check large enough is its own pace; a smaller one times the screening group.
    assert diagnostics_pace(complete, groups, min_values=complete.values) == \
        complete.seconds / complete.values
    timed = diagnostics_pace(partial, groups, min_values=partial.values + 1)
    assert 0 < timed < 1e-2
    assert complete_check_seconds_per_row(timed, groups) == pytest.approx(
        timed * 2 * (3 + 16 + 32))


def test_lambda_is_checked_as_exp_of_its_stored_logarithm():
    # Bulk ESS depends on ranks only, but rank R-hat also takes the folded R-hat of
    # |x − median|, which exp does not keep: the check of λ must see λ, not η = log λ.
    rng = np.random.default_rng(4)
    eta = rng.normal(size=(2, 300, 6))
    eta[1, :, :3] *= 1.4  # chains that differ in spread: the folded R-hat sees it
    eta[1, :, 3:] -= 0.25  # and in location
    ess, r_hat = convergence_diagnostics(np.exp(eta))
    eta_ess, eta_r_hat = convergence_diagnostics(eta)
    np.testing.assert_allclose(ess, eta_ess, rtol=1e-12)  # ranks: the same
    assert not np.allclose(r_hat, eta_r_hat, rtol=1e-6)  # the folded part: not the same
    check = assess_convergence([ParameterGroup("lambda", eta, str, log=True)], 1.0, 10.0,
                               complete=True)
    assert check.max_r_hat == pytest.approx(r_hat.max(), rel=1e-12)


def test_a_partial_check_stops_at_the_first_failing_part(monkeypatch):
    """A group is checked CHECK_PART parameters at a time; a failure ends a partial check."""
    monkeypatch.setattr(stopping_module, "CHECK_PART", 10)
    rng = np.random.default_rng(1)
    n = 400
    draws = rng.normal(size=(2, n, 35))
    draws[1, :, 13] += 3.0  # parameter 13 (in the second part) has chains that disagree
    draws[1, :, 31] += 3.0  # and 31 (in the fourth)
    groups = [ParameterGroup("lambda", draws, lambda k: f"lambda[{k}]")]
    partial = assess_convergence(groups, 10, 1.01)
    assert not partial.converged and partial.values == 2 * n * 20  # two parts of 10
    assert partial.n_not_converged == 1 and partial.not_converged[0][0] == "lambda[13]"
    assert partial.worst_r_hat == "lambda[13]"
    complete = assess_convergence(groups, 10, 1.01, complete=True)
    assert complete.values == draws.size and complete.n_not_converged == 2
    assert {name for name, _, _ in complete.not_converged} == {"lambda[13]", "lambda[31]"}
    monkeypatch.setattr(stopping_module, "CHECK_PART", 100)
    whole = assess_convergence(groups, 10, 1.01)
    assert whole.values == draws.size and whole.n_not_converged == 2
    assert whole.worst_r_hat == complete.worst_r_hat


def test_parameters_with_infinite_draws_have_not_converged():
    # λ = exp η overflowing to inf at every draw is a constant, which passed on its ESS (the
    # number of draws) as one set by the model does; Stan's posterior package gives a
    # parameter with a non-finite draw no ESS or R-hat (Vehtari et al. 2021).
    rng = np.random.default_rng(5)
    n = 400
    eta = rng.normal(size=(2, n, 4)).astype(np.float32)
    eta[:, :, 1] = 1e4  # λ = inf at every draw
    eta[0, ::50, 2] = 1e4  # at a few draws
    group = ParameterGroup("lambda", eta, lambda k: f"lambda[{k},0]", log=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # exp's overflow is no RuntimeWarning for the user
        check = assess_convergence([group], 100, 1.01, complete=True)
    assert not check.converged and check.n_not_converged == 2
    assert {name for name, _, _ in check.not_converged} == {"lambda[1,0]", "lambda[2,0]"}
    assert all(np.isnan(ess) and np.isnan(r_hat) for _, ess, r_hat in check.not_converged)
    assert np.isnan(check.min_ess) and np.isnan(check.max_r_hat)
    # Chains each stuck at their own value, or in two modes, have an R-hat far above any limit.
    theta = rng.normal(size=(2, n, 2))
    theta[:, :, 0] = [[0.0], [1.0]]
    theta[1, :, 1] += 4.0
    check = assess_convergence([ParameterGroup("theta", theta, lambda i: f"theta[{i}]")], 1, 1.5,
                               complete=True)
    assert not check.converged and check.n_not_converged == 2
    assert check.max_r_hat > 1e15 and check.worst_r_hat == "theta[0]"


def test_a_stuck_chain_never_counts_as_converged():
    """Every reported parameter has a continuous posterior, so a chain that holds one value over
    the whole window is stuck. A value shared by every chain passed on its ESS (arviz: the
    number of draws) with an undefined R-hat, and one stuck chain among 32 passed at
    max_rhat=1.1 (rank R-hat 1.09 at the others' median): both fail, with R-hat inf."""
    rng = np.random.default_rng(6)
    n = 400
    draws = rng.normal(size=(32, n, 3))
    draws[0, :, 0] = np.median(draws[1:, :, 0])  # chain 0 stuck among moving ones
    draws[:, :, 1] = 2.5  # every chain stuck at one value
    ess, r_hat = convergence_diagnostics(draws)
    assert ess[0] >= 100 and r_hat[0] < 1.1 and ess[1] >= 100  # what passed before
    names = ["tau_theta", "tau_eps", "mu"]
    check = assess_convergence([ParameterGroup("scalars", draws, names.__getitem__)], 100, 1.1,
                               complete=True)
    assert not check.converged and check.n_not_converged == 2
    assert {name for name, _, _ in check.not_converged} == {"tau_theta", "tau_eps"}
    assert all(r == np.inf for _, _, r in check.not_converged) and check.max_r_hat == np.inf
    assert assess_convergence([ParameterGroup("scalars", draws[:, :, 2:], str)], 100,
                              1.1).converged
    # Also in a partial check, and for λ = exp η (every chain at η = 0.3: λ constant).
    eta = rng.normal(size=(2, n, 4)).astype(np.float32)
    eta[:, :, 3] = 0.3
    partial = assess_convergence([ParameterGroup("lambda", eta, str, log=True)], 100, 1.1)
    assert not partial.converged and partial.not_converged[0][0] == "3"


def test_only_theta_of_a_one_cell_lattice_is_fixed_by_design():
    """θ is reported centred (θ_i − θ̄): on one cell it is 0 at every draw and passes, R-hat 1.
    θ_i of a larger lattice at 0 in every chain, or a one-cell θ away from 0, is stuck."""
    rng = np.random.default_rng(7)
    theta = rng.normal(size=(2, 400, 3))
    theta[:, :, 0] = 0.0
    one_cell = assess_convergence([ParameterGroup("theta", theta[:, :, :1] * 0, str)], 100, 1.01)
    assert one_cell.converged and one_cell.max_r_hat == 1.0
    stuck = assess_convergence([ParameterGroup("theta", theta, lambda i: f"theta[{i}]")], 100,
                               1.1, complete=True)
    assert stuck.n_not_converged == 1 and stuck.not_converged[0][0] == "theta[0]"
    away = assess_convergence([ParameterGroup("theta", theta[:, :, :1] + 0.5, str)], 100, 1.01)
    assert not away.converged and away.max_r_hat == np.inf
    assert not assess_convergence([ParameterGroup("mu", theta[:, :, :1], str)], 100,
                                  1.01).converged


def test_a_fit_with_a_stuck_precision_does_not_converge(counts, monkeypatch):
    """τ_θ held at 1.0 in every chain (a planted stuck sampler): the fit said "converged"; it
    runs on to max_seconds and the warning names tau_theta."""
    original = runner_module.ChainRunner._run

    def run(self, data, state, n, out, chain, row, keep, scratch, cell_streams=None):
        written = original(self, data, state, n, out, chain, row, keep, scratch, cell_streams)
        out["scalars"][chain, row:row + written, self.names.index("tau_theta")] = 1.0
        return written

    monkeypatch.setattr(runner_module.ChainRunner, "_run", run)
    with pytest.warns(GeosynthWarning, match="stopped at max_seconds") as record:
        fit = PaivaModel().fit(counts, seed=7, **AUTO, max_seconds=2)
    assert fit.stopping.reason == "max_seconds"
    assert fit.stopping.not_converged[0][0] == "tau_theta"
    assert (fit.scalar("tau_theta") == 1.0).all()
    message = next(str(w.message) for w in record if "max_seconds" in str(w.message))
    assert "Not converged: tau_theta (ESS" in message and "R-hat inf)" in message


def test_a_fit_whose_lambda_overflows_does_not_converge(counts, monkeypatch):
    """η_00 set past exp's range in every chain: λ_00 = inf at every draw, and the fit reported
    "converged"; it runs on to max_seconds and the warning names λ_00."""
    original = runner_module.ChainRunner._run

    def run(self, data, state, n, out, chain, row, keep, scratch, cell_streams=None):
        written = original(self, data, state, n, out, chain, row, keep, scratch, cell_streams)
        out["eta"][chain, row:row + written, 0, 0] = 1e4
        return written

    monkeypatch.setattr(runner_module.ChainRunner, "_run", run)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "overflow", RuntimeWarning)  # the running λ sums
        with pytest.warns(GeosynthWarning, match="stopped at max_seconds") as record:
            fit = PaivaModel().fit(counts, seed=7, **AUTO, max_seconds=2)
    assert fit.stopping.reason == "max_seconds"
    assert fit.stopping.not_converged[0][0] == "lambda[0,0]"
    message = next(str(w.message) for w in record if "max_seconds" in str(w.message))
    assert "Not converged: lambda[0,0] (ESS nan, R-hat nan)" in message


def test_a_one_cell_lattice_converges_with_its_theta_at_zero():
    """θ of a one-cell lattice is 0 at every draw (set by the model): no R-hat, yet converged;
    refusing constants would run such a fit until max_seconds or Ctrl-C."""
    scenario = paiva_scenario(n=300, seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", GeosynthWarning)  # the cell has no neighbour
        grid = Grid.regular(scenario.bounds, shape=(1, 1), crs=scenario.crs)
    counts = prepare(scenario.data, grid, attributes=["y"], levels={"y": [0, 1]})
    fit = PaivaModel().fit(counts, seed=7, **AUTO, max_seconds=60)
    assert fit.stopping.reason == "converged"
    assert (fit.theta == 0).all()


def test_max_seconds_leaves_time_for_the_final_check(counts, monkeypatch):
    # The final check "expected" to take an hour per stored draw: the chains stop at the
    # first chunk after the first check although max_seconds is far off, and without
    # max_seconds the reserve changes nothing.
    monkeypatch.setattr(runner_module, "complete_check_seconds_per_row", lambda *a: 3600.0)
    rule = {**AUTO, "target_ess": 1e6}
    with pytest.warns(GeosynthWarning, match="stopped at max_seconds=120"):
        fit = PaivaModel().fit(counts, seed=7, **rule, max_seconds=120)
    stopping = fit.stopping
    assert stopping.reason == "max_seconds" and stopping.seconds < 60
    # Stopped before the first chunk after the first check (at the end of segment 1).
    schedule = AutoSchedule(AUTO_THIN, 2, 1e6, 1.01, 10**9)
    assert stopping.sweeps == schedule.boundary(2)
    assert stopping.checks == 2  # that check, then the final complete one
    assert fit.n_draws >= runner_module.MIN_DRAWS_AT_DEADLINE
    assert PaivaModel().fit(counts, seed=7, **{**AUTO, "target_ess": 50}).stopping.reason \
        == "converged"


def test_noise_aware_and_chromatic_fits_stop_too(counts):
    from geosynth.dp import dp_counts

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a seeded DP draw warns
        noisy = dp_counts(counts, 2.0, seed=3)
    fit = PaivaModel(effects="combination").fit(noisy, seed=1, **{**AUTO, "target_ess": 50})
    assert fit.stopping.reason == "converged"
    assert fit.latent_totals.shape == (2, fit.n_draws, 2)
    # A chromatic sweep of 16 cells costs milliseconds of thread synchronisation: a short run.
    chromatic = PaivaModel().fit(counts, seed=1, parallel=True, max_rhat=1.1,
                                 **{**AUTO, "target_ess": 20})
    assert chromatic.stopping.reason == "converged" and chromatic.stopping.min_ess >= 20


def test_schedule_keeps_boundaries_on_multiples_of_thin():
    for thin, target in ((1, 16), (3, 16), (6, 16), (5, 100), (7, 2000)):
        for capacity in (MIN_WINDOW_DRAWS, MIN_WINDOW_DRAWS + 1, 50, 10**6):
            schedule = AutoSchedule(thin, 2, target, 1.01, capacity)
            assert schedule.boundary(0) == 2 * schedule.unit
            assert [schedule.boundary(j) // schedule.unit for j in range(6)] == \
                [2, 3, 4, 6, 8, 12]
            # The window after segment j: its last four segments, [b/4, b) from 8u on.
            assert [schedule.window_start(j) // schedule.unit for j in range(6)] == \
                [2, 2, 2, 2, 3, 4]
            current = thin
            for j in range(40):
                current <<= schedule.doublings(j, current)
                start, end = schedule.window_start(j), schedule.boundary(j + 1)
                assert start % current == 0 and end % current == 0
                if j >= 3:
                    assert end == 4 * start
                span = end - start if j >= 1 else 2 * schedule.unit
                assert span // current <= schedule.max_draws


def test_stored_draws_are_the_window_at_the_final_thin(counts, monkeypatch):
    """Tag each draw with its sweep: after halvings and drops the window is regular."""
    original = runner_module.ChainRunner._run
    swept = {}

    def run(self, data, state, n, out, chain, row, keep, scratch, cell_streams=None):
        written = original(self, data, state, n, out, chain, row, keep, scratch, cell_streams)
        start = swept.get(chain, 0) if n else 0
        if n:
            swept[chain] = start + n
        for r in range(written):  # τ_β's column: recorded, never checked or returned
            out["scalars"][chain, row + r, -1] = start + (r + 1) * self.thin - 1
        return written

    runners = []
    original_result = runner_module.AutoRunner._result

    def result(self, *args):
        runners.append(self)
        return original_result(self, *args)

    monkeypatch.setattr(runner_module.ChainRunner, "_run", run)
    monkeypatch.setattr(runner_module.AutoRunner, "_result", result)
    # The first three checks fail whatever the chains (which differ between CPUs: on a Zen 2
    # the real rule passed at the second), so the window is thinned and dropped several times.
    real_assess, made = runner_module.assess_convergence, []

    def assess(*args, **kwargs):
        made.append(real_assess(*args, **kwargs))
        return made[-1]._replace(converged=made[-1].converged and len(made) > 3)

    monkeypatch.setattr(runner_module, "assess_convergence", assess)
    # Room for 40 draws per chain (of 240 bytes, besides 32 KiB of buffers per chain): the
    # window is thinned again and again.
    with pytest.warns(GeosynthWarning, match=r"holds 40 draws per chain"):
        fit = PaivaModel().fit(counts, seed=2, max_bytes=86_024, max_rhat=1.3,
                               **{**AUTO, "target_ess": 20})
    stopping = fit.stopping
    assert stopping.thin > 1 and fit.n_draws <= runners[0].plan.n_keep
    tags = runners[0].out["scalars"][:, :fit.n_draws, -1]
    expected = stopping.burn_in + stopping.thin * np.arange(1, fit.n_draws + 1) - 1
    np.testing.assert_array_equal(tags, np.broadcast_to(expected, tags.shape))
    assert stopping.sweeps == stopping.burn_in + stopping.thin * fit.n_draws
    assert stopping.burn_in == max(stopping.sweeps // 4, 2 * runners[0].schedule.unit)
    assert stopping.checks >= 4  # windows of four segments, the oldest dropped after checks


def test_ctrl_c_during_a_check_returns_the_window_flagged_interrupted(counts, monkeypatch):
    def ctrl_c(*args, **kwargs):
        raise KeyboardInterrupt  # as SIGINT's handler raises it in the checking main thread

    monkeypatch.setattr(runner_module, "assess_convergence", ctrl_c)
    # ESS 100 over 2 chains: unit 32 sweeps, warm-up 64, first check after 128 sweeps.
    with pytest.warns(GeosynthWarning, match="interrupted: keeping the 64 draws per chain"):
        fit = PaivaModel().fit(counts, seed=3, **AUTO)
    assert fit.interrupted and fit.stopping.reason == "interrupted"
    assert fit.n_draws == 64 and fit.stopping.sweeps == 128 and fit.stopping.burn_in == 64


def test_memory_too_small_for_the_target_is_refused_before_sampling(counts):
    with pytest.raises(MemoryLimitError, match=r"target_ess=400 over 2 chains keeps up to 400 "
                       r"draws per chain.*raise max_bytes, lower target_ess"):
        PaivaModel().fit(counts, n_iter="auto", max_bytes=100_000, progress=False)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"target_ess": 0}, "target_ess must be a number >= 1"),
     ({"target_ess": float("nan")}, "target_ess must be a number >= 1"),
     ({"target_ess": 1e18}, "target_ess must be a number >= 1 and <= 1,000,000"),
     ({"max_rhat": 1.0}, r"max_rhat must be a number > 1 .*never met"),
     ({"max_rhat": 0.99}, r"max_rhat must be a number > 1"),
     ({"max_rhat": float("inf")}, r"max_rhat must be a number > 1"),
     # below R-hat's own noise at any window memory holds: ran until Ctrl-C
     ({"max_rhat": 1 + 1e-10}, r"max_rhat must be at least 1.001, got 1.0000000001: .*Ctrl-C"),
     ({"max_rhat": 1.0009}, r"max_rhat must be at least 1.001"),
     # a limit no chains can miss switched the R-hat check off
     ({"max_rhat": 1e300}, r"max_rhat must be at most 2, got 1e\+300: .*have not met"),
     ({"max_rhat": 2.0001}, r"max_rhat must be at most 2"),
     ({"max_seconds": 0}, r"max_seconds must be a finite number > 0, got 0; leave it out"),
     ({"max_seconds": -5}, r"max_seconds must be a finite number > 0"),
     ({"max_seconds": float("inf")}, r"max_seconds must be a finite number > 0"),
     # ints beyond the float range: ±inf; past 4,300 digits Python's int repr raised ValueError
     ({"target_ess": 10**5000}, r"target_ess must be a number >= 1 .*got inf;"),
     ({"target_ess": -10**400}, r"target_ess must be a number >= 1 .*got -inf;"),
     ({"max_rhat": 10**5000}, r"max_rhat must be a number > 1 .*got inf$"),
     ({"max_seconds": 10**5000}, r"max_seconds must be a finite number > 0, got inf;"),
     ({"max_seconds": -10**5000}, r"max_seconds must be a finite number > 0, got -inf;"),
     ({"n_iter": 500, "max_seconds": 60}, r"max_seconds applies to n_iter='auto'"),
     # ignored without a word before: the fit ran its 500 sweeps
     ({"n_iter": 500, "target_ess": 5000}, r"target_ess and max_rhat are the stopping rule"),
     ({"n_iter": 500, "max_rhat": 1.5}, r"target_ess and max_rhat are the stopping rule"),
     ({"chains": 1}, r"n_iter='auto' needs chains >= 2: .*R-hat"),
     ({"chains": 10**11}, r"chains must be an integer from 1 to 1,024"),
     ({"burn_in": 100}, r"n_iter='auto' discards the first quarter .* takes no burn_in"),
     # the warm-up ignores max_seconds: thin=2000 ran 171 s past max_seconds=1
     ({"thin": 65, "max_seconds": 1}, r"thin=65 with n_iter='auto' is above 64: .* leave thin "
                                      r"out"),
     ({"thin": 10**7}, r"thin=10000000 with n_iter='auto' is above 64"),
     ({"n_iter": "forever"}, r"n_iter must be an integer from 1 to 1,000,000,000 .* or 'auto'"),
     ({"n_iter": 0}, r"n_iter must be an integer from 1 to 1,000,000,000"),
     ({"n_iter": True}, r"n_iter must be an int, got bool True"),  # as target_ess=True is
     ({"thin": 2.0}, r"thin must be an int, got float 2\.0; pass an int")],
)
def test_bad_stopping_rules_refused(counts, kwargs, match):
    with pytest.raises(InputError, match=match):
        PaivaModel().fit(counts, **{"n_iter": "auto", "progress": False, **kwargs})


def test_the_smallest_max_rhat_is_accepted_and_the_next_smaller_refused():
    smallest = stopping_module.MIN_MAX_RHAT
    assert stopping_module.check_auto_arguments(400, smallest, None, auto=True) is None
    with pytest.raises(InputError, match=f"max_rhat must be at least {smallest}"):
        stopping_module.check_auto_arguments(400, np.nextafter(smallest, 0.0), None, auto=True)


def test_the_largest_max_rhat_is_accepted_and_the_next_larger_refused():
    largest = stopping_module.MAX_MAX_RHAT
    assert stopping_module.check_auto_arguments(400, largest, None, auto=True) is None
    with pytest.raises(InputError, match=f"max_rhat must be at most {largest:g}"):
        stopping_module.check_auto_arguments(400, np.nextafter(largest, 3.0), None, auto=True)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"target_ess": "400"}, "target_ess must be a real number"),
     ({"target_ess": True}, "target_ess must be a real number"),
     ({"max_rhat": "1.01"}, "max_rhat must be a real number"),
     ({"max_seconds": "60"}, "max_seconds must be a real number")],
)
def test_stopping_rules_of_the_wrong_type_refused(counts, kwargs, match):
    with pytest.raises(TypeError, match=match):
        PaivaModel().fit(counts, **{"n_iter": "auto", "progress": False, **kwargs})


def test_auto_refused_on_an_executor(counts):
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool, pytest.raises(InputError, match="not on an executor"):
        PaivaModel().fit(counts, n_iter="auto", executor=pool, progress=False)


def test_progress_bar_shows_ess_and_rhat(counts, capsys):
    PaivaModel().fit(counts, seed=7, **{**AUTO, "progress": True})
    err = capsys.readouterr().err
    assert "ESS " in err and "/100" in err and "R-hat " in err and "/1.01" in err


def test_progress_bar_names_the_parameters_holding_the_fit_back(counts, capsys):
    """The bar showed the worst ESS and R-hat but not whose they were."""
    fit = PaivaModel().fit(counts, seed=7, **{**AUTO, "progress": True})
    err = capsys.readouterr().err
    stopping = fit.stopping
    assert stopping.worst_ess and stopping.worst_r_hat
    # The last check's numbers, each with its parameter, as fit.stopping records them.
    assert (f"ESS {stopping.min_ess:.0f}/100 ({stopping.worst_ess}), "
            f"R-hat {stopping.max_r_hat:.3f}/1.01 ({stopping.worst_r_hat})") in err


def test_progress_bar_cuts_long_names_and_leaves_out_missing_ones():
    check = stopping_module.ConvergenceCheck(
        converged=False, min_ess=12.4, max_r_hat=1.23456, worst_ess="beta[" + "x" * 40 + "][3]",
        worst_r_hat="", not_converged=(), n_not_converged=1, checked=("beta",), seconds=0.0)
    postfix = runner_module._postfix(check, 400, 1.01)
    name = postfix[postfix.index("(") + 1:postfix.index(")")]
    assert len(name) == runner_module.POSTFIX_NAME_CHARS and name.endswith("...")
    assert postfix.startswith("ESS 12/400 (beta[xxx") and postfix.endswith(", R-hat 1.235/1.01")


def test_a_complete_check_exponentiates_lambda_part_by_part(monkeypatch):
    # The final check of a max_seconds fit took exp of every η at once, in float64: twice the
    # stored float32 draws, on top of max_bytes. Same result part by part, a fraction of it.
    import tracemalloc

    monkeypatch.setattr(stopping_module, "CHECK_PART", 1_000)
    rng = np.random.default_rng(4)
    eta = rng.normal(size=(2, 100, 40_000)).astype(np.float32)
    group = [ParameterGroup("lambda", eta, lambda i: f"lambda[{i}]", log=True)]
    assess_convergence([ParameterGroup("lambda", eta[:, :, :10], str, log=True)], 100, 1.05,
                       complete=True)  # compiled and imported before the measurement
    tracemalloc.start()
    check = assess_convergence(group, 100, 1.05, complete=True)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    whole = eta.size * 8  # exp of every draw in float64
    assert peak < whole / 2, (peak, whole)
    ess, r_hat = convergence_diagnostics(np.exp(eta.astype(np.float64)))
    assert check.min_ess == ess.min() and check.max_r_hat == r_hat.max()
    assert check.converged == bool((ess >= 100).all() and (r_hat < 1.05).all())
