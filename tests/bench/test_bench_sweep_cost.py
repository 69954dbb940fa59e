"""bench/bench_sweep_cost.py: the parts it times make up the sweep, in passes of the floor."""

from __future__ import annotations

import pytest

from bench import bench_sweep_cost


@pytest.fixture(scope="module")
def measured():
    return bench_sweep_cost.measure(400, burn_in=300)


def test_the_parts_add_up_to_the_whole_sweep(measured):
    # A move added to the sweep but not to PARTS would leave the parts short of the sweep.
    ms = measured["ms"]
    assert len(ms) == len(bench_sweep_cost.PARTS) + 1 and min(ms) > 0
    parts, whole = sum(ms[:-1]), ms[-1]
    assert 0.7 * whole < parts < 1.3 * whole, (parts, whole)


def test_the_table_gives_each_part_in_passes_of_the_floor(measured):
    table = bench_sweep_cost.format_table([measured])
    rows = {line.split(" | ")[0][2:]: line for line in table.splitlines()
            if line.startswith("| ") and not line.startswith("| ---")}
    for name, _ in bench_sweep_cost.PARTS:
        assert name in rows
    cells = rows["**the whole sweep**"].strip("| ").split(" | ")
    whole = measured["ms"][-1]
    assert cells[2:] == [f"{whole:.3f}", f"{whole / measured['floor_ms']:.1f}"]
    assert "G = 400: ms" in table and "≤ 20 passes" in table


@pytest.mark.parametrize("text", ["500", "1600,x", "1", ""])
def test_bad_cells_get_a_usage_error_not_a_traceback(text, capsys):
    with pytest.raises(SystemExit):
        bench_sweep_cost.main(["--cells", text])
    assert "--cells" in capsys.readouterr().err


def test_cells_parse():
    assert bench_sweep_cost.cells_list("1600,6400") == (1600, 6400)
