"""studies.neighbour_reports: neighbour resampling (Matloff & Tendick) of the Berlin listings."""

import numpy as np
import pandas as pd
import pytest

from geosynth.datasets import berlin_listings
from studies import neighbour_reports
from studies.neighbour_reports import berlin_rare_record_table, berlin_regression_table, ols


def test_ols_recovers_exact_linear_relation():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"a": rng.normal(size=50), "b": rng.normal(size=50)})
    df["y"] = 2.0 + 3.0 * df["a"] - 0.5 * df["b"]
    fit = ols(df, "y", ["a", "b"])
    np.testing.assert_allclose(fit[["intercept", "a", "b"]], [2.0, 3.0, -0.5], atol=1e-10)
    assert fit["r2"] == pytest.approx(1.0)


def test_berlin_regression_table_small_eps_keep_is_close_and_counts_add_up():
    table = berlin_regression_table(eps_values=(0.5,), seed=0)
    assert table["no_neighbours"].tolist() == ["original", "keep", "suppress"]
    original, keep, suppress = (table.iloc[k] for k in range(3))
    pd.testing.assert_series_equal(
        original[ols(berlin_listings().points).index].astype(float),
        ols(berlin_listings().points),
        check_names=False,
    )
    assert suppress["n_released"] == 2203 - suppress["n_unchanged"] < 2203
    for c in ("accommodates", "bedrooms", "bathrooms"):
        assert keep[c] == pytest.approx(original[c], rel=0.1)


def test_berlin_rare_listing_exposed_by_keep_hidden_by_suppress():
    listing, table = berlin_rare_record_table(eps_values=(0.5, 6.0), seed=0)
    assert listing.name == 364 and listing["nn_distance"] > 5
    rows = {(r.eps, r.no_neighbours): r for r in table.itertuples()}
    assert rows[(0.5, "keep")].released_unchanged and rows[(0.5, "keep")].query_matches == 1
    assert rows[(0.5, "suppress")].identical_records == 0
    assert rows[(0.5, "suppress")].query_matches == 0
    assert rows[(6.0, "keep")].its_neighbours > 0 and not rows[(6.0, "keep")].released_unchanged


def test_main_writes_markdown(tmp_path, monkeypatch):
    monkeypatch.setattr(neighbour_reports, "neighbours_report",
                        lambda seed: f"report seed {seed}\n")
    out = tmp_path / "sub" / "results.md"
    neighbour_reports.main(["--out", str(out), "--seed", "3"])
    assert out.read_text() == "report seed 3\n"
    assert list(out.parent.iterdir()) == [out]  # no staged file left behind
    with pytest.raises(SystemExit):
        neighbour_reports.main(["--unknown"])
