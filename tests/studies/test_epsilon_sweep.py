"""studies.epsilon_sweep: ε-DP synthetic locations against ε, short chains."""

import pandas as pd
import pytest

from studies import epsilon_sweep as epsilon_sweep_module
from studies.epsilon_sweep import epsilon_markdown, epsilon_sweep


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


def test_main_quick_writes_and_prints_the_section(tmp_path, monkeypatch, capsys):
    calls = []

    def fake_sweep(**kwargs):
        calls.append(kwargs)
        return pd.DataFrame({"method": ["paiva-dp"], "epsilon": [1.0]})

    monkeypatch.setattr(epsilon_sweep_module, "epsilon_sweep", fake_sweep)
    epsilon_sweep_module.main(["--quick"])
    assert calls == [{"n_iter": 400, "burn_in": 200, "thin": 2, "n_quadrants": 100,
                      "epsilons": (1.0, 8.0), "repeats": 1, "m": 2}]
    assert "Produced by `python -m studies.epsilon_sweep --quick`" in capsys.readouterr().out
    out = tmp_path / "eps.md"
    epsilon_sweep_module.main(["--output", str(out)])
    assert calls[-1] == {}
    assert "8,000 sweeps" in out.read_text()
