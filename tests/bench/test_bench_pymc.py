"""Helpers of bench/bench_pymc.py: sampler discovery, options, inputs of the PyMC model, ESS."""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
import pytest

from bench import bench_pymc


class _OneSampler:
    def __init__(self, beta_prior=None):
        self.beta_prior = beta_prior


class _TwoSamplers:
    def __init__(self, beta_prior=None, sampler: Literal["block", "gibbs", "retired"] = "block"):
        if sampler not in ("block", "gibbs"):
            raise ValueError(f"sampler must be 'block' or 'gibbs', got {sampler!r}")
        self.sampler = sampler


def test_a_model_without_sampler_argument_offers_gibbs_only():
    assert bench_pymc.available_samplers(_OneSampler) == ("gibbs",)
    assert isinstance(bench_pymc.make_model("gibbs", _OneSampler), _OneSampler)
    with pytest.raises(ValueError, match="no sampler='block'"):
        bench_pymc.make_model("block", _OneSampler)


def test_samplers_come_from_the_annotation_default_first_and_only_accepted_ones():
    assert bench_pymc.available_samplers(_TwoSamplers) == ("block", "gibbs")
    assert bench_pymc.make_model("gibbs", _TwoSamplers).sampler == "gibbs"


def test_the_installed_geosynth_offers_its_default_sampler():
    from geosynth import PaivaModel

    offered = bench_pymc.available_samplers()
    assert offered and all(bench_pymc.make_model(s) is not None for s in offered)
    assert isinstance(bench_pymc.make_model(offered[0]), PaivaModel)


def test_options_from_arguments_and_environment(monkeypatch):
    default = bench_pymc.parse_options([])
    assert default.sizes == (400, 1600, 6400) and default.auto_sizes == (25_600, 102_400)
    assert default.peers == ("pymc", "nutpie") and default.samplers is None
    assert default.auto_samplers is None  # the default sampler of PaivaModel
    quick = bench_pymc.parse_options(["--quick", "--sizes", "400,1600", "--samplers", "gibbs",
                                      "--auto-samplers", "gibbs,block"])
    assert quick.auto_sizes == () and quick.sizes == (400, 1600) and quick.samplers == ("gibbs",)
    assert quick.auto_samplers == ("gibbs", "block")
    monkeypatch.setenv(bench_pymc.ARGS_ENV, "--peers nutpie --max-seconds 30 --auto-sizes 2500")
    env = bench_pymc.parse_options()
    assert env.peers == ("nutpie",) and env.max_seconds == 30 and env.auto_sizes == (2500,)
    with pytest.raises(SystemExit):
        bench_pymc.parse_options(["--sizes", "500"])  # not a square lattice
    with pytest.raises(SystemExit):
        bench_pymc.parse_options(["--peers", "stan"])


def test_chain_seeds_default_to_the_data_seed_and_must_be_distinct():
    assert bench_pymc.parse_options([]).seeds == (bench_pymc.SEED,)
    assert bench_pymc.parse_options(["--seeds", "2014,1,2"]).seeds == (2014, 1, 2)
    for bad in ("1,1", "-3", "a,b", ""):
        with pytest.raises(SystemExit):
            bench_pymc.parse_options(["--seeds", bad])


def test_the_peers_run_length_defaults_to_geosynths_warm_up_fraction():
    tune, draws = bench_pymc.parse_options([]).peer_run
    assert tune / (tune + draws) == bench_pymc.GIBBS["burn_in"] / bench_pymc.GIBBS["n_iter"]
    assert bench_pymc.parse_options(["--peer-run", "500+500"]).peer_run == (500, 500)
    for bad in ("500", "500+", "a+b", "0+100", "100+1", "1+2+3"):
        with pytest.raises(SystemExit):
            bench_pymc.parse_options(["--peer-run", bad])


def test_an_agreement_failure_at_any_seed_stands():
    fail = "**FAIL**: corr ≤ 0.99"
    assert bench_pymc.verdict_over_seeds(None, "pass") == "pass"
    assert bench_pymc.verdict_over_seeds("pass", fail) == fail
    assert bench_pymc.verdict_over_seeds(fail, "pass") == fail
    assert bench_pymc.verdict_over_seeds("not checked", "pass") == "not checked"


def test_pymc_inputs_are_the_lattice_and_the_level_membership():
    counts = bench_pymc.scenario_counts(100)
    model = bench_pymc.make_model(bench_pymc.available_samplers()[0])
    c, W, membership, names = bench_pymc._pymc_inputs(counts, model)
    assert c.shape == (100, 12) and c.sum() == 500
    assert (W == W.T).all() and not W.diagonal().any()
    assert (W.sum(axis=1) == counts.grid.n_neighbours).all()  # queen: 3, 5 or 8
    # Attribute effects: every combination has one level per non-baseline attribute or none.
    P = membership.shape[1]
    assert P == 4 and names[1:1 + P] == [n for n in names if n.startswith("alpha")]
    assert set(np.unique(membership)) <= {0.0, 1.0} and membership.sum(axis=1).max() == 3
    # y and x1 have 2 levels, x2 has 3 (2·2·3 = 12): a level of y or x1 is in 12/2 = 6
    # combinations, a level of x2 in 12/3 = 4.
    assert names[1:1 + P] == ["alpha[y=1]", "alpha[x1=2]", "alpha[x2=2]", "alpha[x2=3]"]
    assert membership.sum(axis=0).tolist() == [6, 6, 4, 4]


def test_ess_table_finds_the_worst_parameter_and_its_group():
    rng = np.random.default_rng(3)
    iid = rng.normal(size=(2, 1000, 50))
    slow = np.zeros((2, 1000))
    for t in range(1, 1000):  # AR(1), rho 0.9: ESS ≈ 2000 · 0.1/1.9 ≈ 105
        slow[:, t] = 0.9 * slow[:, t - 1] + rng.normal(size=2)
    table = bench_pymc.ess_table({"theta": iid, "tau": np.stack([slow, iid[:, :, 0]], -1)},
                                 {"tau": ["tau_theta", "tau_eps"]})
    assert table["worst"] == "tau_theta" and 50 < table["worst_ess"] < 250
    assert table["min_ess"]["theta"] > 1500 and table["max_rhat"] < 1.05


def test_every_sweep_is_kept_while_the_eta_draws_fit_the_budget():
    from geosynth.model.fit import DEFAULT_THIN as fit_thin

    assert fit_thin == 6  # fit()'s default, of which the bench's thin must be a divisor
    kept = bench_pymc.GIBBS["n_iter"] - bench_pymc.GIBBS["burn_in"]
    for G in (400, 1600, 6400, 25_600):
        thin = bench_pymc.gibbs_thin(G, 12, fit_thin)
        assert fit_thin % thin == 0
        fits = 2 * (kept // thin) * G * 12 * 4 <= bench_pymc.ETA_BUDGET
        assert fits or thin == fit_thin
        smaller = [t for t in range(1, thin) if fit_thin % t == 0]
        assert all(2 * (kept // t) * G * 12 * 4 > bench_pymc.ETA_BUDGET for t in smaller)
    assert bench_pymc.gibbs_thin(1600, 12, fit_thin) == 1
    assert bench_pymc.gibbs_thin(6400, 12, fit_thin) == 2  # 3.7 GB at thin 1, over 2 GiB


def test_agreement_verdicts():
    assert bench_pymc.agreement(0.9998, 0.5) == "pass"
    assert "corr" in bench_pymc.agreement(0.98, 0.5)
    assert "Δμ" in bench_pymc.agreement(0.9998, 3.5)
    assert bench_pymc.agreement(float("nan"), float("nan")).count("≥") + \
        bench_pymc.agreement(float("nan"), 0.1).count("≤") >= 2  # NaN fails both ways
    same = {"mean_lambda": np.arange(1.0, 7.0), "mu_mean": -1.0, "mu_mcse": 0.01,
            "scalar_means": np.array([-1.0, 0.3, 4.0]), "scalar_mcse": np.full(3, 0.01)}
    shifted = {**same, "mu_mean": -1.05}  # 0.05 / sqrt(2)·0.01 = 3.5 se
    assert bench_pymc.compare(same, same)[3] == "pass"
    assert bench_pymc.compare(same, shifted)[3].startswith("**FAIL")
    # a precision off by 0.06 (4.2 se) with λ's means and μ alike: the τ check alone fails
    tau_off = {**same, "scalar_means": np.array([-1.0, 0.3, 4.06])}
    corr, dmu, dscalars, verdict = bench_pymc.compare(same, tau_off)
    assert corr > 0.999 and dmu == 0 and dscalars == pytest.approx(0.06 / math.hypot(0.01, 0.01))
    assert verdict == "**FAIL**: a scalar's \\|Δ\\| ≥ 3.5 se"
    assert bench_pymc.agreement(0.9998, 0.5, float("nan")).startswith("**FAIL")


def test_scalar_summary_orders_mu_alpha_tau_and_gives_arviz_mcse():
    rng = np.random.default_rng(1)
    draws = {"mu": rng.normal(size=(2, 400)), "alpha": rng.normal(5.0, 1.0, (2, 400, 2)),
             "tau": rng.gamma(4.0, 1.0, (2, 400, 1))}
    summary = bench_pymc.scalar_summary(draws)
    np.testing.assert_allclose(summary["scalar_means"],
                               [draws["mu"].mean(), *draws["alpha"].mean(axis=(0, 1)),
                                draws["tau"].mean()])
    assert summary["scalar_mcse"][2] == pytest.approx(bench_pymc.mcse_mean(draws["alpha"][..., 1]))


def test_no_peer_is_reported_with_the_reason(monkeypatch, tmp_path):
    monkeypatch.setenv(bench_pymc.PEER_ENV, str(tmp_path / "python"))
    python, why = bench_pymc.find_peer()
    assert python is None and "does not exist" in why


def test_a_failure_at_a_later_seed_outranks_an_earlier_missing_check():
    fail = "**FAIL**: \\|Δμ\\| ≥ 3 se"
    assert bench_pymc.verdict_over_seeds("not checked", fail) == fail
    # and the summary then reports the failure, not only the missing check
    verdict = None
    for seed_verdict in ("pass", "not checked", fail, "pass"):
        verdict = bench_pymc.verdict_over_seeds(verdict, seed_verdict)
    assert verdict == fail
    options = bench_pymc.Options(sizes=(400,), peers=("pymc",), seeds=(1, 2, 3, 4))
    summary = bench_pymc._summary({(400, "gibbs", "pymc"): verdict}, {}, options, ("gibbs",),
                                  "python", {})
    assert "**FAILED**: gibbs vs pymc at G = 400" in summary


@pytest.mark.parametrize("bad", ["0", "-5", "nan", "inf", "ten"])
def test_max_seconds_that_fit_would_refuse_after_the_comparison_are_refused_first(bad):
    with pytest.raises(SystemExit):
        bench_pymc.parse_options(["--max-seconds", bad])
    assert bench_pymc.parse_options(["--max-seconds", "30"]).max_seconds == 30.0
