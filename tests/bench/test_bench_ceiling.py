"""bench/bench_ceiling.py: extra rounds of the precisions' blocks keep the posterior, mix faster."""

from __future__ import annotations

import argparse
import math

import pytest

from bench import bench_ceiling
from bench.bench_pymc import scenario_counts


@pytest.fixture(scope="module")
def default_and_rounds():
    counts = scenario_counts(100)
    return [bench_ceiling.measure(counts, f, e, sweeps=3000, seed=3) for f, e in ((0, 0), (4, 4))]


def test_the_extra_rounds_leave_every_posterior_mean_in_place(default_and_rounds):
    base, rounds = default_and_rounds
    assert set(base.means) == set(rounds.means) >= {"tau_eps", "mu", "tau_theta"}
    for name in base.means:
        z = (base.means[name] - rounds.means[name]) / math.hypot(base.mcse[name], rounds.mcse[name])
        assert abs(z) < 4, (name, z)


def test_the_extra_rounds_shorten_every_precisions_autocorrelation(default_and_rounds):
    base, rounds = default_and_rounds
    for name in base.tau_int:
        if name.startswith("tau"):
            assert rounds.tau_int[name] < 0.75 * base.tau_int[name], name
    assert rounds.ms_per_sweep > base.ms_per_sweep


def test_the_table_compares_each_configuration_with_the_default(default_and_rounds):
    table = bench_ceiling.format_table(default_and_rounds, 100, 3000)
    rows = [line for line in table.splitlines() if line.startswith("| 0 + 0") or
            line.startswith("| 4 + 4")]
    assert len(rows) == 2
    assert rows[0].endswith("| 1.00 | 1.00 |")
    base, rounds = (config.worst()[1] for config in default_and_rounds)
    assert float(rows[1].rsplit("|", 2)[1]) == round(base / rounds, 2)


@pytest.mark.parametrize("text", ["1+1", "0+0,1", "0+0,a+b", "0+0,-1+0", ""])
def test_rounds_that_are_not_pairs_from_the_default_get_a_clear_error(text):
    with pytest.raises(argparse.ArgumentTypeError, match="FIELDS\\+ERRORS"):
        bench_ceiling.rounds_list(text)


def test_rounds_parse_into_pairs():
    assert bench_ceiling.rounds_list("0+0,1+0,8+8") == ((0, 0), (1, 0), (8, 8))


@pytest.mark.parametrize("argv", [["--cells", "500"], ["--cells", "1"], ["--cells", "x"],
                                  ["--sweeps", "0"], ["--sweeps", "-10"]])
def test_bad_cells_or_sweeps_get_a_usage_error_not_a_traceback(argv, capsys):
    with pytest.raises(SystemExit):
        bench_ceiling.main(argv)
    assert argv[0] in capsys.readouterr().err


def test_cells_and_sweeps_parse():
    assert bench_ceiling.square_cells("1600") == 1600
    assert bench_ceiling.sweep_count("10000") == 10_000
