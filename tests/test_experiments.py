import pandas as pd
import pytest

from geosynth.experiments import (
    THESIS_FIGURES,
    epsilon_markdown,
    epsilon_sweep,
    grid_sweep,
    sweep_markdown,
)


@pytest.mark.slow
def test_grid_sweep_rows_and_orderings(tmp_path, capsys):
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


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::geosynth.errors.PrivacyLeakWarning")
def test_epsilon_sweep_rows_and_privacy_utility_tradeoff():
    table = epsilon_sweep(n=300, side=6, epsilons=(0.25, 16.0), repeats=1, m=2, n_iter=400,
                          burn_in=150, thin=2, n_quadrants=60, dp_seed=1)
    assert list(table["method"]) == ["paiva (no DP)", "naive (no DP)", "paiva-dp", "paiva-dp"]
    refs, dp = table.iloc[:2], table.iloc[2:].set_index("epsilon")
    assert refs["expected_match_risk"].notna().all() and dp["expected_match_risk"].isna().all()
    assert (refs["n_release"] == 300).all()
    # More privacy, less utility: at ε = 0.25 the synthetic cell totals are further from the
    # original ones than at ε = 16, which is close to the non-DP fit.
    assert dp.loc[0.25, "cell_l1_error"] > dp.loc[16.0, "cell_l1_error"]
    assert dp.loc[16.0, "cell_l1_error"] < 2 * refs.iloc[0]["cell_l1_error"]
    text = epsilon_markdown(table, "cmd", "run")
    assert "paiva-dp" in text and "cell_l1_error" in text
