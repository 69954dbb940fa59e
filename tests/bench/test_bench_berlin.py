"""Helpers of bench/bench_berlin.py: the worst precision and the table over seeds."""

from __future__ import annotations

import re

from bench import bench_berlin
from bench._stats import ratio_of_means


def _fit(seed, seconds, taus, scalars=None):
    ess = {**taus, **(scalars or {"mu": 5000.0})}
    return {"seed": seed, "cells": 2402, "combinations": 11, "seconds": seconds, "ess": ess,
            "rhat": {k: 1.001 for k in ess}, "theta_min": 1500.0, "lambda_min": 1400.0}


def test_the_worst_precision_ignores_other_scalars():
    fit = _fit(1, 10.0, {"tau_theta": 900.0, "tau_phi[a=2]": 700.0, "tau_eps": 800.0},
               {"mu": 50.0})
    assert bench_berlin.worst_precision(fit) == ("tau_phi[a=2]", 700.0)


def test_the_table_has_a_row_per_sampler_and_seed_and_the_ratio_of_means():
    results = {
        "old (issue filed)": [_fit(1, 20.0, {"tau_eps": 100.0}), _fit(2, 20.0, {"tau_eps": 140.0})],
        "new (this tree)": [_fit(1, 20.0, {"tau_eps": 800.0}), _fit(2, 20.0, {"tau_eps": 1000.0})],
    }
    table = bench_berlin.format_table(results, 4000, 70.0)
    assert len([line for line in table.splitlines() if line.startswith("| old")]) == 2
    assert len([line for line in table.splitlines() if line.startswith("| new")]) == 2
    ratio = float(re.search(r"ratio ([\d.]+)×", table).group(1))
    assert ratio == round(ratio_of_means([40.0, 50.0], [5.0, 7.0])[0], 1) == 7.5


def test_one_seed_reports_no_standard_error_rather_than_zero():
    results = {"old (issue filed)": [_fit(1, 20.0, {"tau_eps": 100.0})],
               "new (this tree)": [_fit(1, 20.0, {"tau_eps": 800.0})]}
    table = bench_berlin.format_table(results, 4000, 70.0)
    assert "**ratio 8.0×** (one seed: no standard error)." in table
    assert "±" not in table


def test_the_ratios_standard_error_is_printed_over_several_seeds():
    results = {
        "old (issue filed)": [_fit(1, 20.0, {"tau_eps": 100.0}), _fit(2, 20.0, {"tau_eps": 140.0})],
        "new (this tree)": [_fit(1, 20.0, {"tau_eps": 800.0}), _fit(2, 20.0, {"tau_eps": 1000.0})],
    }
    se = ratio_of_means([40.0, 50.0], [5.0, 7.0])[1]
    assert f"± {se:.1f}** (standard error)" in bench_berlin.format_table(results, 4000, 70.0)
