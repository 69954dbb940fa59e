"""bench/bench_components.py: its lattices have the islands it says, and its table's ratios."""

from __future__ import annotations

import numpy as np
import pytest

from bench import bench_components


@pytest.fixture()
def small(monkeypatch):
    monkeypatch.setattr(bench_components, "MAINLAND", 8)
    monkeypatch.setattr(bench_components, "SWEEPS", (4, 8))


@pytest.mark.parametrize("n_islands", [0, 1, 7])
def test_the_lattice_has_one_component_per_island_and_the_mainland(small, n_islands):
    counts = bench_components.island_counts(n_islands)
    grid = counts.grid
    sizes = np.sort(np.bincount(grid.component))
    pairs, singles = (n_islands + 1) // 2, n_islands // 2  # 2 × 2 first, then alternately
    assert grid.n_components == 1 + n_islands
    assert grid.n_cells == 64 + 4 * pairs + singles
    np.testing.assert_array_equal(sizes, sorted([1] * singles + [4] * pairs + [64]))
    assert counts.counts.shape[1] == 12 and counts.counts.sum() > 0


def test_measure_reports_the_joint_move_within_its_cap(small):
    from geosynth.model.modes import MAX_JOINT_DIMENSION

    result = bench_components.measure(40)
    # ms is a difference of two short fits' times here: noise, possibly negative, not checked
    assert result["components"] == 41 and np.isfinite(result["ms"]) and result["setup_s"] > 0
    assert result["dimension"] <= MAX_JOINT_DIMENSION


def test_the_table_divides_each_cost_per_cell_by_the_first_row_s():
    rows = [dict(islands=0, cells=100, components=1, setup_s=0.1, dimension=78, ms=2.0),
            dict(islands=10, cells=150, components=11, setup_s=0.2, dimension=138, ms=6.0)]
    table = bench_components.format_table(rows)
    lines = [line for line in table.splitlines() if line.startswith("| 10 |")]
    assert lines and lines[0].endswith("| 6.00 | 40.00 | 2.00× |")  # (6/150) / (2/100)


@pytest.mark.parametrize("text", ["", "a", "0,-1", "1.5"])
def test_bad_islands_get_a_usage_error_not_a_traceback(text, capsys):
    with pytest.raises(SystemExit):
        bench_components.main(["--islands", text])
    assert "--islands" in capsys.readouterr().err
