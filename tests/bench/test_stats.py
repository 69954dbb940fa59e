"""bench/_stats.py: the ratio of two tools' mean ESS/s over seeds and its standard error."""

from __future__ import annotations

import argparse

import numpy as np
import pytest

from bench._stats import ratio_of_means, seed_list


def test_ratio_of_means_and_its_delta_method_error_by_hand():
    # mean 3 over mean 1; the base has no spread, so se = 3·sqrt(var([2, 4]) / (2·3²)) = 1.
    ratio, se = ratio_of_means([2.0, 4.0], [1.0, 1.0, 1.0])
    assert ratio == 3.0
    assert np.isclose(se, 1.0)


def test_the_delta_method_error_matches_the_ratios_spread_over_replications():
    rng = np.random.default_rng(7)
    ratios, errors = [], []
    for _ in range(4000):
        a = rng.normal(40.0, 4.0, size=5)
        b = rng.normal(5.0, 0.75, size=5)
        ratio, se = ratio_of_means(list(a), list(b))
        ratios.append(ratio)
        errors.append(se)
    # 10 % and 15 % relative sd over 5 seeds: the ratio's relative sd is
    # sqrt(0.1² + 0.15²)/sqrt(5) = 8.1 %, i.e. 0.65 at 8×.
    assert abs(np.std(ratios) / 0.645 - 1.0) < 0.1
    assert abs(np.mean(errors) / np.std(ratios) - 1.0) < 0.15


def test_a_single_run_adds_no_error_term():
    ratio, se = ratio_of_means([30.0], [2.0, 4.0])
    # se = 10 · sqrt(var([2, 4]) / (2 · 3²)) = 10/3.
    assert ratio == 10.0
    assert np.isclose(se, 10.0 / 3.0)


def test_seed_lists_are_distinct_non_negative_integers():
    assert seed_list("1, 2,3") == (1, 2, 3)
    for bad in ("", "1,1", "-1", "x"):
        with pytest.raises(argparse.ArgumentTypeError):
            seed_list(bad)
