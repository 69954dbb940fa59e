"""geosynth.plots: figures of lattice data refuse what they cannot draw, naming the argument."""

import matplotlib
import numpy as np
import pandas as pd
import pytest

from geosynth import Grid
from geosynth.errors import InputError
from geosynth.plots import combination_panels, counts_figure, lattice_image

matplotlib.use("Agg")


@pytest.fixture
def grid():
    return Grid.regular((0, 0, 3, 2), shape=(2, 3), crs=3857)


def test_lattice_image_puts_cell_values_south_row_first(grid):
    image = lattice_image(grid, np.arange(6.0))
    assert image.shape == (2, 3)
    np.testing.assert_array_equal(image[grid.cell_row, grid.cell_col], np.arange(6.0))


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda g: lattice_image(g, np.arange(5.0)), r"values must have shape \(6,\)"),
        (lambda g: combination_panels(g, np.ones((5, 2)), ["a", "b"]),
         r"values must have shape \(6, B\)"),
        (lambda g: combination_panels(g, np.ones(6), ["a"]), r"shape \(6, B\).*got shape \(6,\)"),
        (lambda g: combination_panels(g, np.ones((6, 2)), ["a"]), "titles must be a list of 2"),
        (lambda g: combination_panels("grid", np.ones((6, 2)), ["a", "b"]),
         "grid must be a geosynth.Grid"),
        (lambda g: counts_figure(g), "cell_counts must be the CellCounts"),
    ],
)
def test_bad_arguments_are_named(grid, call, match):
    # They raised numpy's shape mismatch, IndexError or AttributeError.
    with pytest.raises(InputError, match=match):
        call(grid)


def test_combination_panels_draws_one_panel_per_column(grid):
    figure = combination_panels(grid, np.arange(12.0).reshape(6, 2), ["a", "b"], suptitle="t")
    titled = [ax.get_title() for ax in figure.axes if ax.get_title()]
    assert titled == ["a", "b"]


def test_a_hexagonal_panel_of_no_value_is_drawn_empty():
    # geopandas draws no cell of NaN: with every value NaN the panel read the axes' last
    # collection, an IndexError; with some NaN the colour bar must be the values'.
    hexagons = Grid.hexagonal((0, 0, 30, 30), cell_size=5.0, crs=3857)
    values = np.column_stack([np.full(hexagons.n_cells, np.nan),
                              np.where(np.arange(hexagons.n_cells) % 2, np.nan, 3.0)])
    figure = combination_panels(hexagons, values, ["none", "half"])
    figure.canvas.draw()
    bars = [ax for ax in figure.axes if not ax.get_title()]
    low, high = bars[1].get_ylim()
    assert low < 3.0 < high < 4.0  # the values' colour bar (3 alone), not 0..1 of no value


@pytest.mark.parametrize("label", ["income=$0-$25k", r"a$\frac$b"])
def test_data_text_is_drawn_as_text_not_mathtext(grid, label):
    # Combination labels and candidate names are the data's text: a pair of "$" made them a
    # formula (dollars gone, or a ParseSyntaxException when the figure was drawn).
    import pandas as pd

    from geosynth.plots import ru_map

    figure = combination_panels(grid, np.ones((6, 1)), [label], suptitle=label)
    figure.canvas.draw()
    title = figure.axes[0].title
    assert title._preprocess_math(title.get_text()) == (label, False)
    assert figure._suptitle._preprocess_math(figure._suptitle.get_text()) == (label, False)
    table = pd.DataFrame({"risk": [0.1, 0.2], "utility": [0.5, 0.6]}, index=[label, "b"])
    figure = ru_map(table, "risk", "utility", [label, "b"], chosen=label)
    figure.canvas.draw()
    (annotation, _) = figure.axes[0].texts
    assert annotation._preprocess_math(annotation.get_text()) == (label, False)
    # its measures are the records': the figure says it is internal, as the report does
    assert "internal: measured on the confidential records" in figure.axes[0].get_title()


def test_ru_map_refuses_missing_or_textual_measures_naming_them():
    from geosynth.plots import ru_map

    table = pd.DataFrame({"risk": [0.1, 0.2], "utility": [0.9, 0.8], "note": ["a", "b"]},
                         index=["a", "b"])
    with pytest.raises(InputError, match=r"risk='riks' is not a column of table; its columns "
                                         r"are \['risk', 'utility', 'note'\]"):
        ru_map(table, "riks", "utility", ["a"])
    with pytest.raises(InputError, match=r"utility column 'note' of table must be numbers"):
        ru_map(table, "risk", "note", ["a"])
    with pytest.raises(TypeError, match="risk_limit must be a real number"):
        ru_map(table, "risk", "utility", ["a"], risk_limit="0.1")
    with pytest.raises(InputError, match="table must be a pandas DataFrame"):
        ru_map(table.to_dict(), "risk", "utility", ["a"])


def test_figures_of_exact_counts_say_they_are_confidential():
    # counts_figure and intensity_figure draw each cell's original records (ones and twos
    # included) under titles that did not say so.
    import geopandas as gpd

    import geosynth
    from geosynth.plots import CONFIDENTIAL_NOTE, intensity_figure

    grid = Grid.regular((0, 0, 4, 4), shape=(2, 2), crs=3857)
    points = gpd.GeoDataFrame({"y": [0, 1, 1]}, geometry=gpd.points_from_xy([1, 3, 3], [1, 1, 3]),
                              crs=3857)
    counts = geosynth.prepare(points, grid, attributes=["y"])
    figure = counts_figure(counts)
    assert figure._suptitle.get_text() == f"Records per cell and combination ({CONFIDENTIAL_NOTE})"
    fit = geosynth.PaivaModel().fit(counts, n_iter=20, burn_in=10, chains=1, seed=1,
                                    progress=False)
    assert CONFIDENTIAL_NOTE in intensity_figure(fit, 0)._suptitle.get_text()


def test_combination_panels_refuses_an_unknown_colour_map():
    grid = Grid.regular((0, 0, 4, 4), shape=(2, 2))
    with pytest.raises(InputError, match="cmap must be the name of a matplotlib colour map, "
                                         "e.g. 'viridis' or 'magma', got 'nope'"):
        combination_panels(grid, np.ones((4, 2)), ["a", "b"], cmap="nope")
    assert combination_panels(grid, np.ones((4, 2)), ["a", "b"], cmap="magma") is not None


def test_bad_fit_values_and_frontier_are_named(grid):
    # intensity_figure(None, 0) raised AttributeError, text values numpy's ValueError, and a
    # frontier given as one string was read as a list of its characters ("ab" drew a frontier
    # from candidate "a" to candidate "b").
    from geosynth.plots import intensity_figure, ru_map

    with pytest.raises(InputError, match="fit must be the geosynth.PaivaFit"):
        intensity_figure(None, 0)
    with pytest.raises(InputError, match="values must hold numbers") as caught:
        combination_panels(grid, [["secret"]] * 6, ["a"])
    assert "secret" not in str(caught.value)
    with pytest.raises(InputError, match="values must hold numbers"):
        lattice_image(grid, ["x"] * 6)
    table = pd.DataFrame({"risk": [0.1, 0.2], "utility": [0.5, 0.6]}, index=["a", "b"])
    for frontier in ("ab", None):
        with pytest.raises(InputError, match="frontier must be a list of candidate labels"):
            ru_map(table, "risk", "utility", frontier)
    assert ru_map(table, "risk", "utility", ("a", "b")) is not None


def test_ru_map_lists_measures_no_axis_can_hold_and_refuses_a_bad_limit():
    # Values [inf, 1e308] raised matplotlib's "arange: cannot compute length", an infinite
    # measure was dropped from the drawing without a word, and risk_limit=nan was accepted.
    from geosynth.plots import ru_map

    table = pd.DataFrame({"risk": [np.nan, 1e308, 0.1, 0.2], "utility": [0.5, 0.6, -1e200, 0.7]},
                         index=["missing", "huge", "minus", "ok"])
    figure = ru_map(table, "risk", "utility", list(table.index))
    figure.canvas.draw()
    assert figure.axes[0].get_title().endswith(
        "(not drawn, a measure missing or beyond ±1e100: missing, huge, minus)")
    assert [text.get_text() for text in figure.axes[0].texts] == ["ok"]
    for limit in (np.nan, np.inf, -1e308):
        with pytest.raises(InputError, match=r"risk_limit must be a finite number .*pass None "
                                             r"for no limit line"):
            ru_map(table, "risk", "utility", ["ok"], risk_limit=limit)


def test_values_no_colour_scale_can_hold_are_refused_and_infinities_masked(grid):
    # 1e308 raised matplotlib's "arange: cannot compute length" from the colour bar.
    values = np.full((grid.n_cells, 1), 1.0)
    values[0, 0] = 1e308
    with pytest.raises(InputError, match=r"values holds 1 finite values beyond ±1e\+100"):
        combination_panels(grid, values, ["t"])
    values[0, 0] = np.inf
    assert np.ma.is_masked(lattice_image(grid, values[:, 0])[0, 0])
    assert combination_panels(grid, values, ["t"]) is not None


def test_ru_map_keeps_its_title_and_labels_inside_the_figure():
    # The one-line title ran past the 6.4-inch figure (its closing ")" cut off), and the label
    # of the rightmost candidate too.
    from geosynth.plots import ru_map

    table = pd.DataFrame({"risk": [0.1, 0.2, 0.3], "util": [0.5, 0.6, 0.8]},
                         index=["2x2", "3x3", "4x4"])
    figure = ru_map(table, "risk", "util", list(table.index), chosen="4x4")
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    for text in [figure.axes[0].title, *figure.axes[0].texts]:
        box = text.get_window_extent(renderer)
        assert 0 <= box.x0 and box.x1 <= figure.bbox.width, text.get_text()


def test_ru_map_checks_its_table_as_the_tuning_does():
    # ru_map had a check of its own: text ("0.1") was converted, a repeated label and ±inf
    # accepted, where frontier and recommend refuse them.
    from geosynth.plots import ru_map

    good = pd.DataFrame({"risk": [0.1, 0.2], "utility": [0.5, 0.7]}, index=["a", "b"])
    bad = [
        (good.assign(risk=["0.1", "0.2"]), r"pd.to_numeric"),
        (good.set_axis(["a", "a"]), r"several rows labelled \['a'\]"),
        (good.assign(utility=[np.inf, 0.7]), r"utility column 'utility' of table is infinite "
                                              r"for \['a'\]"),
    ]
    for table, message in bad:
        with pytest.raises(InputError, match=message):
            ru_map(table, "risk", "utility", ["a"])
    # A typo in the recommended label drew a map with no recommendation, and no word of it.
    for frontier, chosen in ((["a"], "zz"), (["a", "nope"], None), (["a"], 3)):
        with pytest.raises(InputError, match=r"frontier and chosen must be labels of table's "
                                             r"rows, but \[.*\] are not"):
            ru_map(good, "risk", "utility", frontier, chosen=chosen)


def test_combination_panels_caps_the_panels_naming_the_argument(grid):
    # 5 000 columns made a figure 3 750 inches tall and raised MemoryError.
    import geopandas as gpd

    import geosynth
    from geosynth.plots import MAX_PANELS

    with pytest.raises(InputError, match=rf"values has 5000 columns, one panel each, but a "
                                         rf"figure draws at most {MAX_PANELS} panels"):
        combination_panels(grid, np.ones((6, 5000)), ["t"] * 5000)
    with pytest.raises(InputError, match=rf"values has {MAX_PANELS + 1} columns"):
        combination_panels(grid, np.ones((6, MAX_PANELS + 1)), ["t"] * (MAX_PANELS + 1))
    n = 13 * 5 * 4  # records; levels a: 13, b: 5, i.e. 65 combinations
    points = gpd.GeoDataFrame({"a": np.arange(n) % 13, "b": np.arange(n) // 13 % 5},
                              geometry=gpd.points_from_xy(np.full(n, 0.5), np.full(n, 0.5)),
                              crs=3857)
    counts = geosynth.prepare(points, grid, attributes=["a", "b"])
    assert counts.counts.shape[1] == MAX_PANELS + 1
    with pytest.raises(InputError, match=rf"cell_counts has {MAX_PANELS + 1} combinations.*"
                                         r"combination_panels\(cell_counts.grid"):
        counts_figure(counts)
