"""bench/bench_dp_mixing.py: the heavy-noise DP fits' table."""

from __future__ import annotations

import numpy as np
import pytest

from bench import bench_dp_mixing


def test_flat_share_counts_each_chain_on_its_own():
    draws = np.array([[0.2, 6.0, 7.0, 0.3], [0.1, 0.2, 0.15, 8.0]])
    assert bench_dp_mixing.flat_share(draws) == (0.5, 0.25)
    assert bench_dp_mixing.flat_share(draws, threshold=6.5) == (0.25, 0.25)


@pytest.fixture(scope="module")
def small_row():
    counts = bench_dp_mixing.release_counts(8)
    return counts, bench_dp_mixing.measure(counts, 1.0, seed=2, sweeps=400)


def test_a_row_summarises_the_fit_of_the_noisy_release(small_row):
    counts, row = small_row
    assert row.seed == 2 and row.seconds > 0
    assert row.worst.startswith(("mu", "alpha", "tau")) and 0 < row.min_ess < np.inf
    assert 0.99 < row.max_rhat < np.inf
    assert len(row.flat_share) == 2 and all(0.0 <= s <= 1.0 for s in row.flat_share)
    # 5,000 records, 64 counts a combination with noise of sd ≈ √2/ε each: a combination's
    # total carries noise of sd √64·1.4 ≈ 11 and the Poisson spread of its λ (the largest of
    # the 12 holds 846 records: sd ≤ 29), so each fitted total is within 3·√(11² + 29²) ≈ 93
    # of the truth, not off by the records' scale.
    assert counts.counts.sum() == bench_dp_mixing.RECORDS
    assert counts.counts.sum(axis=0).max() == 846
    assert row.total_error < 12 * 93


def test_the_table_has_a_row_per_seed_with_its_shares(small_row):
    _, row = small_row
    table = bench_dp_mixing.format_table([row, row], 8, 1.0, 400)
    rows = [line for line in table.splitlines() if line.startswith("| 2 |")]
    assert len(rows) == 2
    assert " / ".join(f"{s:.2f}" for s in row.flat_share) in rows[0]
    assert f"{row.max_rhat:.3f}" in rows[0]


@pytest.mark.parametrize("name, value", [
    ("BENCH_DP_MIXING_SEEDS", "1,1"), ("BENCH_DP_MIXING_SEEDS", "a"),
    ("BENCH_DP_MIXING_EPSILON", "0"), ("BENCH_DP_MIXING_EPSILON", "nan"),
    ("BENCH_DP_MIXING_SIDE", "1"), ("BENCH_DP_MIXING_SIDE", "4.5"),
    ("BENCH_DP_MIXING_SWEEPS", "50"),
])
def test_bad_settings_in_the_environment_name_their_variable(monkeypatch, name, value):
    monkeypatch.setenv(name, value)
    with pytest.raises(SystemExit, match=name):
        bench_dp_mixing.parse_options()


def test_settings_default_and_parse(monkeypatch):
    assert bench_dp_mixing.parse_options() == ((1, 2, 3), 0.5, 40, 2000)
    monkeypatch.setenv("BENCH_DP_MIXING_SEEDS", "4, 5")
    monkeypatch.setenv("BENCH_DP_MIXING_EPSILON", "2")
    assert bench_dp_mixing.parse_options()[:2] == ((4, 5), 2.0)
