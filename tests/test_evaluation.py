import matplotlib
import numpy as np
import pytest

import geosynth
from geosynth.errors import InputError
from geosynth.evaluation import evaluate

matplotlib.use("Agg")
ATTRIBUTES = ["y", "x1", "x2"]


@pytest.fixture(scope="module")
def scenario():
    data = geosynth.datasets.paiva_scenario(n=300, seed=1)
    grid = geosynth.Grid.regular(data.bounds, shape=(6, 6), crs=data.crs)
    return data, grid


def test_identical_releases_have_zero_distance_and_full_coverage(scenario):
    data, grid = scenario
    copies = [data.data.copy(), data.data.copy()]
    result = evaluate(data.data, copies, grid, ATTRIBUTES, outcome="y", n_quadrants=100, seed=1)
    assert result.tables["distance_risk"]["mean_distance"].max() == pytest.approx(0.0)
    assert result.tables["coverage"]["mean_overlap"].iloc[0] == pytest.approx(1.0)
    assert result.tables["pattern"]["sup_l_difference"].max() == pytest.approx(0.0, abs=1e-9)
    assert np.all(result.tables["linked_records"]["mean_displacement"] == 0.0)


def test_naive_releases_are_evaluated_with_figures(scenario):
    data, grid = scenario
    releases = geosynth.naive_synthesize(data.data, grid, m=3, seed=2)
    result = evaluate(data.data, releases, grid, ATTRIBUTES, outcome="y", n_quadrants=100,
                      seed=3)
    assert set(result.tables) == {"distance_risk", "identification_risk", "pattern",
                                  "linked_records", "coverage"}
    assert result.tables["distance_risk"]["mean_distance"].iloc[-1] > 0
    assert 0 < result.tables["coverage"]["mean_overlap"].iloc[0] < 1
    figures = result.plots()
    assert len(figures) == 2 and len(figures[0].axes) >= 12
    text = result.to_markdown()
    assert "### distance risk" in text and "### coverage" in text


def test_public_releases_skip_linked_records(scenario):
    data, grid = scenario
    releases = [geosynth.to_public(r, seed=0)
                for r in geosynth.naive_synthesize(data.data, grid, m=2, seed=2)]
    result = evaluate(data.data, releases, grid, ATTRIBUTES, linked=False)
    assert set(result.tables) == {"distance_risk", "pattern"}
    shuffled = [r.iloc[::-1] for r in geosynth.naive_synthesize(data.data, grid, m=1, seed=2)]
    with pytest.raises(InputError, match="linked=False"):
        evaluate(data.data, shuffled, grid, ATTRIBUTES)


def test_empty_releases_refused(scenario):
    data, grid = scenario
    with pytest.raises(InputError, match="releases is empty"):
        evaluate(data.data, [], grid, ATTRIBUTES)
