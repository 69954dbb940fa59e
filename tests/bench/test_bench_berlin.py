"""Helpers of bench/bench_berlin.py: the worst precision, the ratio over seeds and its error."""

from __future__ import annotations

import re

import numpy as np

from bench import bench_berlin


def _fit(seed, seconds, taus, scalars=None):
    ess = {**taus, **(scalars or {"mu": 5000.0})}
    return {"seed": seed, "cells": 2402, "combinations": 11, "seconds": seconds, "ess": ess,
            "rhat": {k: 1.001 for k in ess}, "theta_min": 1500.0, "lambda_min": 1400.0}


def test_the_worst_precision_ignores_other_scalars():
    fit = _fit(1, 10.0, {"tau_theta": 900.0, "tau_phi[a=2]": 700.0, "tau_eps": 800.0},
               {"mu": 50.0})
    assert bench_berlin.worst_precision(fit) == ("tau_phi[a=2]", 700.0)


def test_ratio_of_means_and_its_delta_method_error_by_hand():
    # mean 3 over mean 1; the base has no spread, so se = 3·sqrt(var([2, 4]) / (2·3²)) = 1.
    ratio, se = bench_berlin.ratio_of_means([2.0, 4.0], [1.0, 1.0, 1.0])
    assert ratio == 3.0
    assert np.isclose(se, 1.0)


def test_the_delta_method_error_matches_the_ratios_spread_over_replications():
    rng = np.random.default_rng(7)
    ratios, errors = [], []
    for _ in range(4000):
        a = rng.normal(40.0, 4.0, size=5)
        b = rng.normal(5.0, 0.75, size=5)
        ratio, se = bench_berlin.ratio_of_means(list(a), list(b))
        ratios.append(ratio)
        errors.append(se)
    # 10 % and 15 % relative sd over 5 seeds: the ratio's relative sd is
    # sqrt(0.1² + 0.15²)/sqrt(5) = 8.1 %, i.e. 0.65 at 8×.
    assert abs(np.std(ratios) / 0.645 - 1.0) < 0.1
    assert abs(np.mean(errors) / np.std(ratios) - 1.0) < 0.15


def test_the_table_has_a_row_per_sampler_and_seed_and_the_ratio_of_means():
    results = {
        "old (issue filed)": [_fit(1, 20.0, {"tau_eps": 100.0}), _fit(2, 20.0, {"tau_eps": 140.0})],
        "new (this tree)": [_fit(1, 20.0, {"tau_eps": 800.0}), _fit(2, 20.0, {"tau_eps": 1000.0})],
    }
    table = bench_berlin.format_table(results, 4000, 70.0)
    assert len([line for line in table.splitlines() if line.startswith("| old")]) == 2
    assert len([line for line in table.splitlines() if line.startswith("| new")]) == 2
    ratio = float(re.search(r"ratio ([\d.]+)×", table).group(1))
    assert ratio == round(bench_berlin.ratio_of_means([40.0, 50.0], [5.0, 7.0])[0], 1) == 7.5
