"""bench/bench_sweep_cost.py: the parts it times make up the sweep, in passes of the floor."""

from __future__ import annotations

import ast
import inspect

import pytest

import geosynth.model.sweep as sweep_module
from bench import bench_sweep_cost


@pytest.fixture(scope="module")
def measured():
    return bench_sweep_cost.measure(400, burn_in=300)


def _calls(function) -> set[str]:
    """Names of the functions ``function`` (a numba kernel or a plain one) calls directly."""
    tree = ast.parse(inspect.getsource(getattr(function, "py_func", function)))
    return {node.func.id if isinstance(node.func, ast.Name) else node.func.attr
            for node in ast.walk(tree) if isinstance(node, ast.Call)}


def test_the_parts_cover_every_step_of_the_sweep(measured):
    # A move added to the sweep but not to PARTS would leave the parts short of the sweep.
    # Checked on the code: timing the parts against the whole failed under load (0.58x).
    ms = measured["ms"]
    assert len(ms) == len(bench_sweep_cost.PARTS) + 1 and min(ms) > 0
    kernels = vars(bench_sweep_cost)
    parts = _calls(bench_sweep_cost._call_part) - {"sweep"}
    parts |= {name for part in parts if hasattr(kernels.get(part), "py_func")
              for name in _calls(kernels[part])}  # update_intercepts: μ's and α's draws

    def covered(step: str) -> bool:  # by a part, or made of parts (scale_moves)
        inner = _calls(vars(sweep_module)[step]) - {"njit", "range"}
        return step in parts or all(name in parts or "beta" in name for name in inner)

    steps = _calls(sweep_module.sweep) - {"njit", "range"}
    missing = [step for step in steps if "beta" not in step and not covered(step)]
    assert not missing  # the bench's scenario has no covariate: no β step is timed


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
