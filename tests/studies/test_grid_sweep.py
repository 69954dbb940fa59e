"""studies.grid_sweep: the thesis' Chapter 4 study (Nunes 2018), short chains."""

import pandas as pd
import pytest

from studies import grid_sweep as grid_sweep_module
from studies.grid_sweep import THESIS_FIGURES, grid_sweep, sweep_markdown


@pytest.mark.slow
def test_grid_sweep_rows_and_orderings():
    table = grid_sweep(n=300, sides=(5, 10), m=2, n_iter=300, burn_in=100, thin=2,
                       n_quadrants=60)
    assert len(table) == 2 * 4  # naive, paiva x 2 priors, donut per lattice
    assert set(table["method"]) == {"naive", "paiva", "donut"}
    naive = table[table.method == "naive"].set_index("lattice")
    paiva = table[table.method == "paiva"].groupby("lattice").mean(numeric_only=True)
    # The Naive baseline keeps records in their cells: synthetic points stay closer to the
    # originals than model-based releases, and a finer lattice brings them closer still.
    assert (naive["mean_distance_km"].sort_index() < paiva["mean_distance_km"].sort_index()).all()
    assert naive.loc["10x10", "mean_distance_km"] < naive.loc["5x5", "mean_distance_km"]
    assert table["coverage"].between(0, 1).all()
    text = sweep_markdown(table, "cmd", "run")
    assert "thesis_coverage" in text and "0.746" in text
    assert isinstance(THESIS_FIGURES, pd.DataFrame)


def test_main_quick_writes_and_prints_the_section(tmp_path, monkeypatch, capsys):
    calls = []

    def fake_sweep(**kwargs):
        calls.append(kwargs)
        return THESIS_FIGURES[["lattice", "beta_prior"]].assign(method="paiva")

    monkeypatch.setattr(grid_sweep_module, "grid_sweep", fake_sweep)
    out = tmp_path / "grid.md"
    grid_sweep_module.main(["--quick", "--output", str(out)])
    assert calls == [{"n_iter": 400, "burn_in": 200, "thin": 2, "n_quadrants": 100}]
    text = out.read_text()
    assert "Produced by `python -m studies.grid_sweep --quick`" in text
    assert capsys.readouterr().out == text + "\n"
