"""Review maps without a browser: layers, values, leaks, validation and atomic saving."""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import stat
import warnings
from importlib import resources
from pathlib import Path

import branca.colormap
import folium
import geopandas as gpd
import numpy as np
import pandas as pd
import pytest
import scipy.spatial
import shapely

import geosynth
from geosynth._atomic import AtomicOutputs
from geosynth._vendor import ASSETS, InlineAssets
from geosynth.errors import (
    CRSError,
    DataWarning,
    GeosynthWarning,
    InputError,
    PrivacyLeakWarning,
)
from geosynth.maps import (
    CUT_LINKS_LAYER,
    DEFAULT_MAX_POINTS,
    DISPLACEMENT_LAYER,
    GRID_LAYER,
    INTERNAL_TITLE,
    ISLAND_LINKS_LAYER,
    ORIGINAL_LAYER,
    PUBLIC_TITLE,
    USED_DEFAULT_ASSETS,
    intensity_layer_name,
    release_layer_name,
    review_map,
    save_map,
)
from geosynth.synth.release import POINTS_ATTR, record_columns

LABELS = ["y=0, x1=1", "y=0, x1=2", "y=1, x1=1", "y=1, x1=2"]  # combinations of the scenario
LEAFLET_ASSETS = {
    "https://cdn.jsdelivr.net/npm/leaflet@1.9.3/dist/leaflet.js",
    "https://cdn.jsdelivr.net/npm/leaflet@1.9.3/dist/leaflet.css",
}
LEGEND_ASSET = "https://cdnjs.cloudflare.com/ajax/libs/d3/3.5.5/d3.min.js"


@pytest.fixture(scope="module")
def data():
    scenario = geosynth.datasets.paiva_scenario(n=120, seed=5)
    original = scenario.data.set_axis([f"r{i}" for i in range(len(scenario.data))])
    grid = geosynth.Grid.regular(scenario.bounds, shape=(5, 6), crs=scenario.crs)
    counts = geosynth.prepare(original, grid, attributes=["y", "x1"])
    fit = geosynth.PaivaModel().fit(counts, n_iter=60, burn_in=20, thin=2, chains=1, seed=1,
                                    progress=False)
    releases = geosynth.synthesize(fit, original, m=2, seed=2)
    return original, releases, fit, grid


def layers(m: folium.Map) -> dict[str, folium.GeoJson]:
    return {child.layer_name: child for child in m._children.values()
            if isinstance(child, folium.GeoJson)}


def tooltip_fields(layer: folium.GeoJson) -> list[str]:
    (tooltip,) = [c for c in layer._children.values() if isinstance(c, folium.GeoJsonTooltip)]
    return tooltip.fields


def feature_property(layer: folium.GeoJson, name: str) -> list:
    return [feature["properties"][name] for feature in layer.data["features"]]


def lonlat_strings(frame: gpd.GeoDataFrame) -> list[str]:
    """Coordinates in EPSG:4326 as folium writes them (json.dumps of the float, i.e. repr)."""
    xy = shapely.get_coordinates(frame.to_crs(4326).geometry)
    return [repr(float(value)) for value in xy.ravel()]


def asset_urls(html: str) -> set[str]:
    return set(re.findall(r"<(?:script|link)\b[^>]*?\b(?:src|href)=\"([^\"]+)\"", html))


# ---------------------------------------------------------------------- layers
def test_internal_map_layers_in_control_order(data):
    original, releases, fit, _ = data
    m = review_map(original, releases, fit=fit, combination=2)
    assert list(layers(m)) == [intensity_layer_name("y=1, x1=1"), ORIGINAL_LAYER,
                               release_layer_name(1), release_layer_name(2), DISPLACEMENT_LAYER]
    assert intensity_layer_name("y=1, x1=1") == "Posterior mean λ: y=1, x1=1"
    assert release_layer_name(2) == "Release 2"
    assert sum(isinstance(c, folium.LayerControl) for c in m._children.values()) == 1
    assert not layers(m)[DISPLACEMENT_LAYER].show  # switched on by the reviewer


def test_public_map_has_no_original_and_no_displacement(data):
    original, releases, fit, _ = data
    m = review_map(original, releases, fit=fit, public=True)
    assert list(layers(m)) == [intensity_layer_name(LABELS[0]), release_layer_name(1),
                               release_layer_name(2)]
    html = m.get_root().render()
    assert ORIGINAL_LAYER not in html and DISPLACEMENT_LAYER not in html


def test_public_map_of_an_exact_fit_warns_how_closely_its_intensity_follows_the_counts(data):
    # The λ drawn on a public map rounded to the exact count of most cells, with no word said
    # (write_release(include_intensity=True) of the same fit warned).
    original, releases, fit, _ = data
    lam = fit.posterior_mean_lambda()[:, 2]
    share = np.mean(np.rint(lam) == fit.counts.counts[:, 2])
    with pytest.warns(PrivacyLeakWarning, match=rf"^a public map holds the posterior mean "
                      rf"intensity of a fit of the exact counts: rounded, it equals the "
                      rf"confidential count of {share:.0%} of the cells") as caught:
        review_map(original, releases, fit=fit, combination=2, public=True)
    assert caught[0].filename == __file__
    with warnings.catch_warnings():  # an internal map, or one without the fit: no warning
        warnings.simplefilter("error", PrivacyLeakWarning)
        review_map(original, releases, fit=fit, combination=2)
        review_map(original, releases, public=True)


def test_public_map_refuses_a_baseline(data):
    # Naive points stay in each record's own cell, donut points within r_max of it: a public
    # map of either publishes the records' locations, as write_release would.
    original, _, fit, _ = data
    (naive,) = geosynth.synth.naive_synthesize(original, fit.grid, m=1, seed=1)
    (donut,) = geosynth.synth.donut_mask(original, 1.0, 5.0, m=1, seed=1)
    for method, release in (("naive", naive), ("donut", donut)):
        for shown in (release, geosynth.to_public(release, seed=1)):
            with pytest.raises(InputError, match=rf"releases\[0\] was made by the {method} "
                                                 r"baseline.*public map may not show it"):
                review_map(None, [shown], public=True)
        review_map(original, [release], public=False)  # internal review: allowed


def test_public_map_on_a_grid_over_the_records_bounds_warns(data):
    # The grid's outline, drawn on the public map, gave the records' bounding box back to
    # 1e-9 m, with no warning: the grid-only path never ran prepare's check.
    original, releases, _, grid = data
    public = [geosynth.to_public(r, seed=k) for k, r in enumerate(releases)]
    tight = geosynth.Grid.regular(tuple(original.total_bounds), shape=(4, 4), crs=grid.crs)
    with pytest.warns(PrivacyLeakWarning, match=r"the lattice bounds .* equal the extreme "
                                                r"coordinates of the records"):
        review_map(original, public, grid=tight, public=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)  # the scenario's public bounds
        review_map(original, public, grid=grid, public=True)


def test_public_map_without_original_and_fit(data):
    _, releases, _, _ = data
    m = review_map(None, releases, public=True)
    assert list(layers(m)) == [release_layer_name(1), release_layer_name(2)]


def test_grid_outlines_without_fit(data):
    original, releases, _, grid = data
    m = review_map(original, releases, grid=grid)
    assert list(layers(m))[0] == GRID_LAYER
    assert len(layers(m)[GRID_LAYER].data["features"]) == grid.n_cells


def test_links_cut_across_barriers_and_island_links_are_drawn(data):
    original, releases, _, grid = data
    x0, y0, x1, y1 = grid.bounds
    middle = x0 + 3 * grid.cell_size[0]  # between columns 2 and 3 of six
    split = grid.without_links_across(shapely.LineString([(middle, y0 - 1), (middle, y1 + 1)]))
    assert split.n_cut_links == 5 + 2 * 4  # queen: 5 across, 8 diagonal
    assert CUT_LINKS_LAYER not in layers(review_map(original, releases, grid=grid))
    layer = layers(review_map(original, releases, grid=split))[CUT_LINKS_LAYER]
    assert len(layer.data["features"]) == split.n_cut_links
    assert tooltip_fields(layer) == ["cell", "neighbour"]
    ends = gpd.GeoSeries([shapely.geometry.shape(f["geometry"]) for f in layer.data["features"]],
                         crs=4326).to_crs(grid.crs).get_coordinates()
    sides = np.sign(ends["x"].to_numpy() - middle).reshape(-1, 2)
    assert (sides[:, 0] * sides[:, 1] == -1).all()  # every segment crosses the barrier
    cut_pairs = {tuple(sorted(pair)) for pair in split.cut_links.tolist()}
    drawn = {tuple(sorted((f["properties"]["cell"], f["properties"]["neighbour"])))
             for f in layer.data["features"]}
    assert drawn == cut_pairs
    # A river polygon: the segments drawn are those that were tested, from points beside it
    # (drawn from the cells' own points, some began in the river and some crossed nothing).
    # It covers the centres of the cells of column 2 (x = middle - 0.5 cell).
    river = shapely.box(middle - 0.6 * grid.cell_size[0], y0 - 1, middle + 0.1 * grid.cell_size[0],
                        y1 + 1)
    wide = grid.without_links_across(river)
    layer = layers(review_map(original, releases, grid=wide))[CUT_LINKS_LAYER]
    segments = gpd.GeoSeries([shapely.geometry.shape(f["geometry"])
                              for f in layer.data["features"]], crs=4326).to_crs(grid.crs)
    assert len(segments) == wide.n_cut_links > 0
    lines = np.asarray(segments.array)
    assert shapely.crosses(lines, river).all()
    ends = np.r_[shapely.get_point(lines, 0), shapely.get_point(lines, -1)]
    assert not shapely.within(ends, river).any()
    areas = gpd.GeoDataFrame(geometry=[shapely.box(x0, y0, middle, y1),
                                       shapely.box(middle, y0, x1 - 1000, y1),
                                       shapely.box(x1 + 4000, y0, x1 + 5000, y0 + 1000)],
                             crs=grid.crs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        linked = geosynth.Grid.from_polygons(areas, islands="nearest")
    island = layers(review_map(None, releases, grid=linked, public=True))[ISLAND_LINKS_LAYER]
    assert [(f["properties"]["cell"], f["properties"]["neighbour"])
            for f in island.data["features"]] == [tuple(p) for p in linked.linked_islands.tolist()]
    # A lake over the island's own point: its link is tested, and drawn, from a point beside
    # the lake (drawn from the island's own point, the line crossed the lake it passed).
    lake = shapely.box(x1 + 4400, y0 - 10, x1 + 6000, y0 + 1010)
    with pytest.warns(DataWarning, match="barriers cut no link"):
        lakeside = linked.without_links_across(lake)
    assert lakeside.n_linked_islands == 1 and lakeside.n_cut_links == 0
    island = layers(review_map(None, releases, grid=lakeside, public=True))[ISLAND_LINKS_LAYER]
    (drawn,) = gpd.GeoSeries([shapely.geometry.shape(f["geometry"])
                              for f in island.data["features"]], crs=4326).to_crs(grid.crs)
    assert not drawn.intersects(lake)
    assert shapely.point_on_surface(lakeside.habitable_geometry[2]).within(lake)  # its own


def test_points_are_in_epsg4326_with_attribute_tooltips(data):
    original, releases, _, _ = data
    m = review_map(original, releases)
    layer = layers(m)[release_layer_name(1)]
    coordinates = np.array([f["geometry"]["coordinates"] for f in layer.data["features"]])
    expected = shapely.get_coordinates(releases[0].to_crs(4326).geometry)
    np.testing.assert_allclose(coordinates, expected, rtol=0, atol=1e-9)
    assert tooltip_fields(layer) == ["y", "x1"]
    assert tooltip_fields(layers(m)[ORIGINAL_LAYER]) == ["y", "x1", "x2", "z"]
    assert feature_property(layer, "x1") == releases[0]["x1"].tolist()


def layer_tooltips_localize(m) -> bool:
    """Whether a tooltip of the map's page formats values with toLocaleString()."""
    return "toLocaleString()" in m.get_root().render()


@pytest.mark.parametrize("combination", [0, 3])
def test_choropleth_is_posterior_mean_lambda(data, combination):
    original, releases, fit, grid = data
    m = review_map(original, releases, fit=fit, combination=combination)
    layer = layers(m)[intensity_layer_name(LABELS[combination])]
    assert feature_property(layer, "cell_id") == list(range(grid.n_cells))
    np.testing.assert_array_equal(feature_property(layer, "lambda"),
                                  fit.posterior_mean_lambda()[:, combination])
    assert feature_property(layer, "records") == fit.counts.counts[:, combination].tolist()
    legends = [c for c in m._children.values() if isinstance(c, branca.colormap.LinearColormap)]
    assert legends[0].vmin == fit.posterior_mean_lambda()[:, combination].min()
    # Tooltips show the values as stored: toLocaleString() kept 3 decimals, and a λ of
    # 0.00049 read "0".
    assert not layer_tooltips_localize(m)


def test_public_choropleth_has_no_record_counts(data):
    original, releases, fit, _ = data
    layer = layers(review_map(original, releases, fit=fit, public=True))[
        intensity_layer_name(LABELS[0])]
    assert "records" not in layer.data["features"][0]["properties"]
    np.testing.assert_array_equal(feature_property(layer, "lambda"),
                                  fit.posterior_mean_lambda()[:, 0])


def test_displacement_lines_link_original_and_synthetic_points(data):
    original, releases, _, _ = data
    layer = layers(review_map(original, releases))[DISPLACEMENT_LAYER]
    assert feature_property(layer, "release") == [1] * len(original) + [2] * len(original)
    expected = np.concatenate([geosynth.metrics.displacement(original, r).to_numpy()
                               for r in releases])
    np.testing.assert_allclose(feature_property(layer, "displacement"), expected, rtol=1e-12)
    start, end = layer.data["features"][0]["geometry"]["coordinates"]
    np.testing.assert_allclose(start, shapely.get_coordinates(
        original.iloc[[0]].to_crs(4326).geometry)[0], atol=1e-9)
    np.testing.assert_allclose(end, shapely.get_coordinates(
        releases[0].iloc[[0]].to_crs(4326).geometry)[0], atol=1e-9)


def test_displacement_only_for_linkable_releases(data):
    original, releases, _, _ = data
    public = [geosynth.to_public(r, seed=k) for k, r in enumerate(releases)]
    assert DISPLACEMENT_LAYER not in layers(review_map(original, public))
    assert DISPLACEMENT_LAYER not in layers(review_map(original, releases, linked=False))
    private = [r.copy() for r in releases]
    for release in private:
        release.attrs = {"geosynth": {**release.attrs["geosynth"], "epsilon": 1.0}}
    assert DISPLACEMENT_LAYER not in layers(review_map(original, private))
    forced = layers(review_map(original, releases[0].copy(), linked=True))
    assert len(forced[DISPLACEMENT_LAYER].data["features"]) == len(original)


def test_max_points_draws_a_fixed_subset(data):
    original, releases, _, _ = data
    first = layers(review_map(original, releases, max_points=25))
    again = layers(review_map(original, releases, max_points=25))
    for name in (ORIGINAL_LAYER, release_layer_name(1), DISPLACEMENT_LAYER):
        assert len(first[name].data["features"]) == 25 * (2 if name == DISPLACEMENT_LAYER else 1)
        assert first[name].data == again[name].data
    assert len(layers(review_map(original, releases, max_points=10**6))[ORIGINAL_LAYER]
               .data["features"]) == len(original)


def test_max_points_defaults_to_the_command_lines_cap():
    # review_map drew every point by default (the CLI drew 10 000): a million records made a
    # page of 11 million features that no browser opens.
    from geosynth.cli.release import release

    (option,) = [p for p in release.params if p.name == "map_max_points"]
    assert option.default is None and DEFAULT_MAX_POINTS == 10_000  # None: the map's default
    assert f"DEFAULT_MAX_POINTS, {DEFAULT_MAX_POINTS:,}," in option.help
    xy = np.random.default_rng(0).uniform(0, 1000, (DEFAULT_MAX_POINTS + 50, 2))
    original = gpd.GeoDataFrame(geometry=gpd.points_from_xy(*xy.T), crs=3857)
    synthetic = original.set_geometry(original.translate(3.0, 4.0))
    drawn = layers(review_map(original, synthetic, linked=True))
    for name in (ORIGINAL_LAYER, release_layer_name(1), DISPLACEMENT_LAYER):
        assert len(drawn[name].data["features"]) == DEFAULT_MAX_POINTS
    every = layers(review_map(original, synthetic, max_points=None, linked=False))
    assert len(every[release_layer_name(1)].data["features"]) == len(original)


def test_the_datas_text_is_never_run_as_a_template(data, make_scenario_counts):
    # branca compiled each rendered layer, tooltip and layer control again as a Jinja
    # template: a level "{{ 7*7 }}" was shown as "49" (and any expression ran while the page
    # was written), and a level "{# ..." failed with a TemplateSyntaxError.
    original, releases, _, _ = data
    texts = ["{{ 7*7 }}", "{# open", "<b>{% raw %}</b>"]
    release = releases[0].assign(note=(texts * len(releases[0]))[:len(releases[0])])
    release = release.rename(columns={"x1": "{{ 6*7 }}"})
    scenario, grid, _ = make_scenario_counts(n=60, seed=2, shape=(3, 3), attributes=["y"])
    levels = scenario.data.assign(grp=["{{ 5*5 }}", "b"] * 30)
    counts = geosynth.prepare(levels, grid, ["grp"])
    fit = geosynth.PaivaModel().fit(counts, n_iter=30, burn_in=10, chains=1, seed=1,
                                    progress=False)
    combination = counts.combination_labels(sep=", ").index("grp={{ 5*5 }}")
    m = review_map(original, [release], fit=fit, combination=combination)
    html = m.get_root().render()
    for text in ("{{ 7*7 }}", "{# open", "{% raw %}", '"{{ 6*7 }}"', "grp={{ 5*5 }}"):
        assert text in html
    assert set(feature_property(layers(m)[release_layer_name(1)], "note")) == {
        "{{ 7*7 }}", "{# open", "&lt;b&gt;{% raw %}&lt;/b&gt;"}


def test_colours_are_the_legends(data):
    # Each cell and line takes the colour of its value on the legend's scale, as branca's
    # colormap computes it (the page maps each feature to a colour of a palette).
    original, releases, fit, _ = data
    m = review_map(original, releases, fit=fit, combination=1)
    intensity, lines = (layers(m)[intensity_layer_name(LABELS[1])],
                        layers(m)[DISPLACEMENT_LAYER])
    legends = [c for c in m._children.values() if isinstance(c, branca.colormap.LinearColormap)]
    for layer, legend, name in ((intensity, legends[0], "lambda"),
                                (lines, legends[1], "displacement")):
        values = feature_property(layer, name)
        assert [layer.palette[code] for code in layer.codes] == [legend(v) for v in values]
        assert len(set(layer.palette)) == len(layer.palette) > 1
    edges = np.array(legends[1].index)  # every stop of the scale, between and beyond them
    values = np.concatenate([edges, (edges[1:] + edges[:-1]) / 2, [edges[0] - 1, edges[-1] + 1],
                             np.random.default_rng(0).uniform(edges[0], edges[-1], 500)])
    from geosynth.maps import _colours

    assert _colours(legends[1], values).tolist() == [legends[1](v) for v in values]


# ---------------------------------------------------------------------- leaks and assets
def test_public_html_contains_no_original_coordinate(data):
    original, releases, fit, _ = data
    internal_html = review_map(original, releases, fit=fit).get_root().render()
    public_html = review_map(original, releases, fit=fit, public=True).get_root().render()
    numbers = lonlat_strings(original)
    assert all(number in internal_html for number in numbers)  # the format matches folium's
    assert [number for number in numbers if number in public_html] == []


def test_public_releases_lose_input_order_and_internal_columns(data):
    original, releases, _, _ = data
    release = releases[0].assign(_source_row=np.arange(len(releases[0])))
    layer = layers(review_map(original, [release], public=True))[release_layer_name(1)]
    drawn = np.array([f["geometry"]["coordinates"] for f in layer.data["features"]])
    xy = shapely.get_coordinates(release.geometry)
    by_position = release.iloc[np.lexsort((xy[:, 1], xy[:, 0]))]  # ordered by content
    np.testing.assert_allclose(drawn, shapely.get_coordinates(by_position.to_crs(4326).geometry),
                               rtol=0, atol=1e-9)
    assert tooltip_fields(layer) == ["y", "x1"]
    assert [f["id"] for f in layer.data["features"]] == list(range(len(release)))
    internal = layers(review_map(original, releases))[release_layer_name(1)]
    assert '"r1' not in json.dumps(internal.data)  # index labels are never written


def test_public_map_refuses_identifier_columns(data):
    # An "index" column (reset_index() of the internal release) put the confidential record
    # labels into a public page; write_release refuses such a column.
    original, releases, _, _ = data
    with pytest.raises(InputError, match="releases\\[0\\] has a column 'index'"):
        review_map(None, [releases[0].reset_index()], public=True)
    labelled = releases[0].assign(patient=releases[0].index)  # any name: original's labels
    with pytest.raises(InputError, match="distinct labels of the original index"):
        review_map(original, [labelled], public=True)
    review_map(original, [labelled], public=False)  # an internal map may show them


def test_public_map_with_fit_refuses_columns_its_model_does_not_release(data):
    # orig_x/orig_y added to a release went into a public map's HTML (write_release refused
    # the same frame given fit=).
    original, releases, fit, _ = data
    public = geosynth.to_public(releases[0], seed=1)
    leaked = public.assign(orig_x=np.arange(len(public)) * 1.5)
    with pytest.raises(InputError, match=r"releases\[0\] has columns \['orig_x'\] that the "
                                         "model of fit does not release"):
        review_map(None, [leaked], fit=fit, public=True)
    review_map(None, [public], fit=fit, public=True)  # the model's own columns pass
    review_map(original, [leaked], fit=fit, public=False)  # an internal map may show them


def test_public_map_without_fit_refuses_columns_the_synthesizer_did_not_make(data):
    # Without fit= a public map checked names only: the release's record of the columns its
    # synthesizer made stands in for the model, as in write_release.
    original, releases, _, _ = data
    public = geosynth.to_public(releases[0], seed=1)
    leaked = public.assign(income=np.arange(len(public)) * 1.5)
    with pytest.raises(InputError, match=r"releases\[0\] has columns \['income'\] that the "
                                         "synthesizer that made it did not make"):
        review_map(None, [leaked], public=True)
    review_map(None, [public], public=True)
    review_map(original, [leaked], public=False)  # an internal map may show them


def test_public_map_refuses_the_original_points_as_a_release(data):
    # The confidential frame passed as the "synthetic" one was drawn as a public layer: every
    # original coordinate and column (z, x2) was in the page.
    original, releases, _, _ = data
    mixed = geosynth.to_public(releases[0], seed=1)
    mixed.geometry.array[3] = original.geometry.iloc[7]  # one record's own location
    for shown in (original, geosynth.to_public(original, seed=1),
                  original.reset_index(drop=True), mixed):
        with pytest.raises(InputError, match=r"releases\[0\] has \d+ of its \d+ points at the "
                                             r"exact location of a record of original"):
            review_map(original, [shown], public=True)
    for shown in (original, geosynth.to_public(original, seed=1)):  # the mark of to_public
        # alone (any frame gets it) passed without a word, and the page held every record:
        # now its columns are refused (nothing records what they hold), its points warned of
        with pytest.warns(PrivacyLeakWarning, match=r"releases\[0\] carries no record of the "
                                                    r"geosynth synthesizer that drew it"):
            with pytest.raises(InputError, match=r"releases\[0\] holds no record of the "
                                                 r"columns its synthesizer made"):
                review_map(None, [shown], public=True)
        with pytest.warns(PrivacyLeakWarning, match=r"releases\[0\] carries no record of the "
                                                    r"geosynth synthesizer that drew it"):
            review_map(None, [shown[[shown.geometry.name]]], public=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for given in (None, original):  # synthesized releases carry their record
            review_map(given, releases, public=True)
            review_map(given, [geosynth.to_public(r, seed=1) for r in releases], public=True)
    review_map(original, [original], public=False)  # an internal map may show them


@pytest.mark.parametrize("mask", ["moved", "rounded"])
def test_public_map_warns_of_a_masked_copy_of_the_records_with_original_given(data, mask):
    # A copy of the records moved by 5 m or rounded to 10 m passes the checks against
    # original; without original= it was warned about, and with it, the careful call, drawn
    # with every record's attributes and z without a word.
    original, releases, _, _ = data
    copy = original.copy()
    copy.geometry = (copy.geometry.translate(5.0, -5.0) if mask == "moved"
                     else copy.geometry.set_precision(10.0))
    for given in (None, original):
        with pytest.warns(PrivacyLeakWarning, match=r"releases\[0\] carries no record of the "
                          r"geosynth synthesizer.*a masked copy included"):
            review_map(given, [copy[["geometry"]]], public=True)
            with pytest.raises(InputError, match=r"holds no record of the columns"):
                review_map(given, [copy], public=True)  # with every record's attributes


def test_public_map_refuses_records_coordinates_as_columns(data):
    # The records' eastings and northings added to a synthetic release passed the checks of
    # its points (the ones at no record's location) into the public page.
    original, releases, _, _ = data
    leaked = releases[0].copy()
    leaked["ox"] = original.loc[leaked.index].geometry.x.to_numpy()
    leaked["oy"] = original.loc[leaked.index].geometry.y.to_numpy() + 0.0
    with pytest.raises(InputError, match=r"releases\[0\] has numeric columns \['ox', 'oy'\] "
                                         r"holding coordinates of records of original"):
        review_map(original, [leaked], public=True)
    review_map(original, releases, public=True)  # synthetic z: no coordinate
    review_map(original, [leaked], public=False)  # an internal map may show them


@pytest.mark.parametrize("edit", [
    lambda v: np.sort(v).round(1), lambda v: v.round(0), lambda v: v.round(2) + 0.003,
    lambda v: v.round(0).astype(np.int64)])  # eastings to the metre are whole numbers
def test_public_map_refuses_records_coordinates_rounded_as_columns(data, edit):
    # Only exact values were refused: the records' eastings rounded to the decimetre (and
    # sorted, out of the release's row order) were published in the page.
    original, releases, _, _ = data
    leaked = geosynth.to_public(releases[0], seed=1)
    leaked["ox"] = edit(original.geometry.x.to_numpy())
    with pytest.raises(InputError, match=r"releases\[0\] has numeric columns \['ox'\] holding "
                                         r"coordinates of records of original"):
        review_map(original, [leaked], public=True)


def test_public_map_keeps_measurements_in_the_range_of_the_coordinates(data):
    # Whole numbers beside eastings to the metre, values near the coordinates' own range,
    # the synthetic points' own coordinates: chance meets the records there as often shifted.
    original, releases, _, _ = data
    xy = shapely.get_coordinates(original.geometry)
    rng = np.random.default_rng(4)
    kept = geosynth.to_public(releases[0], seed=1)
    n = len(kept)
    kept["income"] = rng.integers(int(xy[:, 0].min()), int(xy[:, 0].max()), n).astype(float)
    kept["value"] = rng.uniform(xy[:, 1].min(), xy[:, 1].max(), n)
    kept["sx"] = kept.geometry.x.round(1)
    # a few levels near the eastings (prices top-coded at one value): tied rows, one trial
    kept["cap"] = rng.choice(np.round(xy[:3, 0]), n)
    record_columns(kept)  # columns added on purpose, recorded: no record check refuses them
    rounded = original.set_geometry(gpd.points_from_xy(*xy.round(0).T, crs=original.crs))
    review_map(rounded, [kept], public=True)
    review_map(original, [kept], public=True)
    # In degrees: the synthetic points' own longitudes and latitudes, and a measurement
    # spread around the records' longitudes (half a degree was read as half a metre).
    lonlat = original.to_crs(4326)
    kept = geosynth.to_public(releases[0].to_crs(4326), seed=1)
    kept["lon"], kept["lat"] = kept.geometry.x, kept.geometry.y
    kept["score"] = rng.normal(lonlat.geometry.x.mean(), 2.0, n)
    del kept.attrs[POINTS_ATTR]  # reprojected by hand: recorded anew in degrees
    record_columns(kept)
    review_map(lonlat, [kept], public=True)
    kept["olon"] = lonlat.geometry.x.round(5).to_numpy()[:n]  # the records' own, to ~1 m
    with pytest.raises(InputError, match=r"numeric columns \['olon'\] holding coordinates"):
        review_map(lonlat, [kept], public=True)


def test_a_release_read_from_a_file_is_public_already(data, tmp_path):
    original, releases, fit, _ = data
    path = tmp_path / "release.gpkg"
    geosynth.io.write_release(path, [geosynth.to_public(r, seed=1) for r in releases], fit=fit)
    read = geosynth.io.read_release(path).releases
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        m = review_map(None, read, public=True)
    assert [str(w.message) for w in caught if issubclass(w.category, PrivacyLeakWarning)] == []
    assert {release_layer_name(k) for k in (1, 2)} <= set(layers(m))  # both releases drawn
    # Re-marked by to_public, a read release keeps its file's record, as a synthesizer's is
    # kept: where it came from is still known.
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        review_map(None, [geosynth.to_public(r, seed=1) for r in read], public=True)
    bare = [r.copy() for r in read]
    for frame in bare:  # neither record nor mark: of unknown origin
        frame.attrs = {}
    with pytest.warns(PrivacyLeakWarning, match="was not read from a release file"):
        review_map(None, [geosynth.to_public(r[["geometry"]], seed=1) for r in bare],
                   public=True)


NEAR_COPY = (r"releases\[0\] has (\d+) of its \d+ points within 0.1 m of a record of "
             r"original, .*records' locations rounded, shifted or reprojected")


def exactly_elsewhere(frame: gpd.GeoDataFrame, original: gpd.GeoDataFrame) -> gpd.GeoDataFrame:
    """The rows of ``frame`` at no record's exact location (what the exact test let through)."""
    exact = shapely.get_coordinates(frame.geometry)[:, None, :] == \
        shapely.get_coordinates(original.geometry)[None, :, :]
    return frame[~exact.all(axis=2).any(axis=1)]


def test_public_map_refuses_near_copies_of_the_original(data):
    # Only points at a record's exact location were refused: the records rounded to 1 mm,
    # shifted by 1 mm, or reprojected to EPSG:4326 and back (exact for 12 of 150) were drawn.
    original, releases, _, _ = data
    rounded = original.set_geometry(shapely.set_precision(original.geometry.array, 0.001))
    shifted = original.set_geometry(original.translate(0.001, 0.0))
    round_trip = exactly_elsewhere(original.to_crs(4326).to_crs(original.crs), original)
    assert 0 < len(round_trip) and len(exactly_elsewhere(rounded, original)) == len(original)
    mixed = geosynth.to_public(releases[0], seed=1)
    mixed.geometry.array[:5] = original.geometry.iloc[:5].translate(0.01, -0.01).array
    for shown, near in ((rounded, len(original)), (shifted, len(original)),
                        (round_trip, len(round_trip)), (mixed, 5)):
        with pytest.raises(InputError, match=NEAR_COPY) as caught:
            review_map(original, [shown], public=True)
        assert re.search(NEAR_COPY, str(caught.value)).group(1) == str(near)
    # Geographic coordinates: 1e-8 degrees is about 1 mm.
    lonlat = original.to_crs(4326)
    with pytest.raises(InputError, match=NEAR_COPY):
        review_map(lonlat, [lonlat.set_geometry(lonlat.translate(1e-8, 1e-8))], public=True)
    # Reprojected, the releases' points cannot be compared with their record: refused (the
    # map reprojects them for display itself).
    with pytest.raises(InputError, match=r"releases\[0\] has its points in another CRS than "
                                         r"the one its synthesizer drew them in"):
        review_map(lonlat, [release.to_crs(4326) for release in releases], public=True)
    review_map(original, releases, public=True)  # the synthetic releases of the fit pass
    review_map(original, [shifted], public=False)  # an internal map may show them


@pytest.mark.parametrize(("moved", "shift", "radius"), [
    (3, 0.01, "0.05"), (3, 0.045, "0.05"), (1, 1e-6, "1e-05")])
def test_public_map_refuses_a_few_records_moved_a_little_among_synthetic_points(moved, shift,
                                                                                radius):
    # 3 of a release's points moved to records' homes + 1 cm passed: within 0.1 m chance puts
    # a few tenths of a point, so 3 was no surprise there; within 5 cm it is. At 4.5 cm they
    # fell between the radii, and one record moved by a micrometre passed every radius.
    scenario = geosynth.datasets.paiva_scenario(n=200, seed=7)
    original = scenario.data
    rng = np.random.default_rng(2)
    xy = shapely.get_coordinates(original.geometry)
    synthetic = original.set_geometry(gpd.points_from_xy(*rng.uniform(
        xy.min(axis=0), xy.max(axis=0), xy.shape).T, crs=original.crs))
    synthetic.attrs = geosynth.to_public(synthetic, seed=0).attrs
    record_columns(synthetic)  # a stand-in for a synthesizer's release, made by hand
    edited = synthetic.copy()
    edited.geometry.array[:moved] = original.geometry.iloc[:moved].translate(shift, 0.0).array
    with pytest.warns(PrivacyLeakWarning):  # no synthesizer's record: warned as well
        review_map(original, [synthetic], public=True)
        with pytest.raises(InputError, match=rf"has {moved} of its 200 points within {radius} "
                                             r"m of a record of original, where points placed "
                                             r"independently of the records would put about"):
            review_map(original, [edited], public=True)


def test_public_map_allows_chance_coincidences_of_dense_synthetic_points():
    # 20 000 records spread over a hectare (2 per m²): uniform placement within the cells puts
    # a point within r = 0.1 m of a record with p = 1 - (1 - πr²/A)^n, ~1 200 points by chance
    # (a rule refusing any near point would refuse every such release), while a 1 mm shift of
    # the records is still refused.
    grid = geosynth.Grid.regular((0, 0, 100, 100), shape=(2, 2), crs=3857)
    xy = np.random.default_rng(0).uniform(0, 100, (20_000, 2))
    original = gpd.GeoDataFrame(geometry=gpd.points_from_xy(*xy.T), crs=3857)
    cells = grid.locate(original)
    p = 1 - (1 - np.pi * 0.1**2 / 100**2) ** len(xy)
    expected, sd = len(xy) * p, np.sqrt(len(xy) * p * (1 - p))
    tree = scipy.spatial.cKDTree(xy)
    for seed in range(3):
        synthetic = geosynth.synth.place_in_cells(grid, cells, seed=seed)
        near = np.isfinite(tree.query(synthetic, distance_upper_bound=0.1)[0]).sum()
        assert abs(near - expected) < 4 * sd  # the premise: ~1 200 chance coincidences
        release = gpd.GeoDataFrame(geometry=gpd.points_from_xy(*synthetic.T), crs=3857)
        review_map(original, [release], public=True, max_points=10)
    with pytest.raises(InputError, match=NEAR_COPY):
        review_map(original, [original.set_geometry(original.translate(0.001, 0.0))],
                   public=True, max_points=10)


def test_public_map_drops_z_and_m_values(data):
    # A 3-D point's z was written into the public page's GeoJSON.
    original, releases, _, _ = data
    release = releases[0].set_geometry(
        shapely.force_3d(releases[0].geometry.array, 987654.321), crs=releases[0].crs)
    layer = layers(review_map(original, [release], public=True))[release_layer_name(1)]
    assert {len(f["geometry"]["coordinates"]) for f in layer.data["features"]} == {2}
    html = review_map(original, [release], public=True).get_root().render()
    assert "987654.321" not in html


def test_pages_say_whether_they_are_internal_or_public(data):
    # Both pages looked alike: nothing told an analyst that the file showed confidential data.
    original, releases, fit, _ = data
    internal = review_map(original, releases, fit=fit).get_root().render()
    public = review_map(original, releases, fit=fit, public=True).get_root().render()
    assert f"<title>{INTERNAL_TITLE}</title>" in internal and "Do not publish" in internal
    assert f"<title>{PUBLIC_TITLE}</title>" in public and "Do not publish" not in public
    assert "INTERNAL" not in public


def test_list_and_dict_values_stay_text_in_tooltips(data):
    # folium's tooltip writes JSON.stringify(value) of a list or object into innerHTML.
    original, releases, _, _ = data
    payload = "<img src=x onerror=alert(1)>"
    release = releases[0].assign(tags=[[payload]] * len(releases[0]),
                                 info=[{"k": payload}] * len(releases[0]))
    layer = layers(review_map(original, [release]))[release_layer_name(1)]
    assert set(feature_property(layer, "tags")) == {
        "[&quot;&lt;img src=x onerror=alert(1)&gt;&quot;]"}
    assert '<img' not in json.dumps(layer.data["features"][0]["properties"])


def test_a_column_a_web_map_cannot_show_is_named(data):
    # a bytes column raised geopandas' raw "Object of type bytes is not JSON serializable"
    original, releases, _, _ = data
    release = releases[0].assign(blob=[b"\x00"] * len(releases[0]))
    with pytest.raises(InputError, match=r"its column\(s\) \['blob'\] hold values a web map "
                                         r"cannot show .*decode or drop them"):
        review_map(original, [release])


def test_date_times_are_shown_as_iso_text(data):
    # a date/time attribute failed the map (after the whole fit, in the command line) with
    # "Object of type Timestamp is not JSON serializable"
    original, releases, _, _ = data
    n = len(releases[0])
    when = pd.Series(pd.Timestamp("2020-03-01 08:00:00.001"), index=releases[0].index)
    when.iloc[0] = pd.NaT
    release = releases[0].assign(when=when, took=pd.Timedelta("90s"))
    layer = layers(review_map(original, [release]))[release_layer_name(1)]
    assert sorted(feature_property(layer, "when"), key=str) == (
        ["2020-03-01T08:00:00.001000"] * (n - 1) + [None])
    assert set(feature_property(layer, "took")) == {"0 days 00:01:30"}


def test_cdn_html_loads_only_leaflet_and_d3(data):
    original, releases, fit, _ = data
    html = review_map(original, releases, fit=fit, offline=False).get_root().render()
    assert asset_urls(html) == LEAFLET_ASSETS | {LEGEND_ASSET}
    html = review_map(None, releases, public=True, offline=False).get_root().render()
    assert asset_urls(html) == LEAFLET_ASSETS  # d3 only for legends
    assert not re.search(r"tile\.openstreetmap|L\.tileLayer", html)
    assert len(folium.Map.default_js) > 1 and len(folium.Map.default_css) > 1  # untouched
    assert {name for name, _ in folium.Map.default_js + folium.Map.default_css} > set(
        USED_DEFAULT_ASSETS)


def test_tiles_are_opt_in_and_need_cdn_mode(data):
    _, releases, _, _ = data
    html = review_map(None, releases, public=True, tiles="OpenStreetMap",
                      offline=False).get_root().render()
    assert "tile.openstreetmap.org" in html
    with pytest.raises(InputError, match="pass offline=False for a basemap"):
        review_map(None, releases, public=True, tiles="OpenStreetMap")


def vendored(path: str) -> str:
    return (resources.files("geosynth._vendor") / path).read_text(encoding="utf-8")


LEAFLET_LICENCE = "Copyright (c) 2010-2022, Vladimir Agafonkin"
D3_LICENCE = "Copyright (c) 2010-2015, Michael Bostock"
DISCLAIMER = "THIS SOFTWARE IS PROVIDED BY THE COPYRIGHT HOLDERS AND CONTRIBUTORS"


def test_offline_html_is_self_contained(data):
    original, releases, fit, _ = data
    html = review_map(original, releases, fit=fit).get_root().render()  # offline by default
    assert asset_urls(html) == set()
    assert not re.search(r"<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)=", html)
    assert set(re.findall(r"url\(\W?(\w+)", html)) == {"data", "default"}  # '#default#VML'
    assert "sourceMappingURL" not in html  # dev tools would fetch leaflet.js.map beside the page
    assert "\r" not in html  # leaflet.css has CRLF line ends
    for code in (vendored("leaflet/leaflet.js").split("//# sourceMappingURL")[0],
                 vendored("d3/d3.min.js")):
        assert code in html  # unmodified copies
    assert html.count("<script>/*! leaflet 1.9.3") == 1 and html.count("<style>/*! leaflet") == 1
    assert html.index("<script>/*! leaflet") < html.index("<script>/*! d3 3.5.5")
    # The licence texts (notice, conditions, disclaimer) precede the code, once per package.
    assert html.count(LEAFLET_LICENCE) == 1 and html.count(D3_LICENCE) == 1
    assert html.count(DISCLAIMER) == 2 and "Michael Bostock may not be used" in html
    assert html.index(LEAFLET_LICENCE) < html.index("Leaflet 1.9.3, a JS library")

    no_legend = review_map(None, releases, public=True).get_root().render()
    assert D3_LICENCE not in no_legend and "d3.scale" not in no_legend
    assert LEAFLET_LICENCE in no_legend and no_legend.count(DISCLAIMER) == 1
    assert asset_urls(no_legend) == set()


def test_offline_html_is_the_cdn_html_with_inline_assets(data):
    original, releases, fit, _ = data
    offline = review_map(original, releases, fit=fit)
    cdn = review_map(original, releases, fit=fit, offline=False)
    offline_html, cdn_html = offline.get_root().render(), cdn.get_root().render()
    assert asset_urls(offline.get_root().render()) == set()  # rendered again: still inline
    notebook = offline._repr_html_()  # the page as an escaped iframe srcdoc
    assert "Leaflet 1.9.3, a JS library" in notebook and "cdn.jsdelivr" not in notebook
    strip = re.compile(r"<script>/\*! .*?</script>|<style>/\*! .*?</style>|"
                       r"<script src=\S+</script>|<link rel=\"stylesheet\" \S+/>", re.DOTALL)
    ids = re.compile(r"_[0-9a-f]{32}(?![0-9a-f])")
    assert ids.sub("", strip.sub("", offline_html)) == ids.sub("", strip.sub("", cdn_html))
    assert 300_000 < len(offline_html) - len(cdn_html) < 350_000  # Leaflet, d3, licences


def test_vendored_files_match_their_checksums_and_licences():
    """geosynth/_vendor holds exactly the files README.md lists, unchanged."""
    folder = resources.files("geosynth._vendor")
    readme = (folder / "README.md").read_text(encoding="utf-8")
    listed = dict((path, digest) for digest, path in
                  re.findall(r"^([0-9a-f]{64})  (\S+)$", readme, re.MULTILINE))
    files = {str(path.relative_to(Path(str(folder)))) for path in Path(str(folder)).rglob("*")
             if path.is_file() and "__pycache__" not in path.parts
             and path.name not in ("__init__.py", "README.md")}
    assert set(listed) == files
    for path, digest in listed.items():
        assert hashlib.sha256((folder / path).read_bytes()).hexdigest() == digest, path
    for asset in ASSETS.values():
        assert asset.path in files and asset.licence_file in files
        assert f"| {asset.version} | {asset.licence} |" in readme
    assert "BSD 2-Clause License" in vendored("leaflet/LICENSE")
    assert "Neither" not in vendored("leaflet/LICENSE")  # 2-clause: no endorsement clause
    assert "may not be used to endorse" in vendored("d3/LICENSE")  # 3-clause


def test_vendored_versions_are_those_folium_and_branca_load():
    """Fails when folium or branca move to other versions: then update geosynth/_vendor."""
    folium_urls = dict(folium.Map.default_js + folium.Map.default_css)
    assert folium_urls["leaflet"] == ASSETS["leaflet"].cdn_url
    assert folium_urls["leaflet_css"] == ASSETS["leaflet_css"].cdn_url
    figure = branca.element.Figure()
    branca.colormap.linear.YlOrRd_09.scale(0, 1).add_to(figure)
    figure.render()
    assert figure.header._children["d3"].url == ASSETS["d3"].cdn_url
    assert set(ASSETS) == set(USED_DEFAULT_ASSETS) | {"d3"}


def test_offline_map_refuses_assets_geosynth_does_not_ship(data, tmp_path):
    from folium.plugins import MarkerCluster

    _, releases, _, _ = data
    m = review_map(None, releases, public=True)
    MarkerCluster().add_to(m)  # loads leaflet.markercluster from a CDN
    path = tmp_path / "review.html"
    with pytest.raises(InputError, match=r"loads https://\S+markercluster\S+ .*offline=False"):
        save_map(m, path)
    assert list(tmp_path.iterdir()) == []  # nothing written
    m = review_map(None, releases, public=True, offline=False)
    MarkerCluster().add_to(m)
    assert "markercluster" in save_map(m, path).read_text(encoding="utf-8")


def test_offline_map_inlines_its_copy_when_folium_asks_for_another_version(data):
    _, releases, _, _ = data
    m = review_map(None, releases, public=True)
    m.default_js = [("leaflet", "https://cdn.jsdelivr.net/npm/leaflet@1.9.9/dist/leaflet.js")]
    with pytest.warns(GeosynthWarning, match=r"leaflet@1\.9\.9.*leaflet 1\.9\.3 instead"):
        html = m.get_root().render()
    assert asset_urls(html) == set() and "Leaflet 1.9.3, a JS library" in html
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        review_map(None, releases, public=True).get_root().render()  # no warning normally


def test_inline_assets_must_be_in_a_figure():
    with pytest.raises(TypeError, match="child of a branca Figure"):
        InlineAssets().render()


# ---------------------------------------------------------------------- validation
@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        (dict(original=[1, 2]), InputError, "original must be a geopandas.GeoDataFrame"),
        (dict(original=None), InputError, "original is None"),
        (dict(releases=[]), InputError, "releases is empty"),
        (dict(releases="release.gpkg"), InputError, "releases must be a GeoDataFrame"),
        (dict(releases=lambda r: [r[0], r[1].drop(columns="geometry")]), InputError,
         r"releases\[1\]"),
        (dict(releases=lambda r: [r[0], r[1].to_crs(4326)]), CRSError, r"releases\[1\] is in"),
        (dict(releases=lambda r: [r[0].set_crs(None, allow_override=True)]), CRSError,
         r"releases\[0\] has no CRS"),
        (dict(fit="fit"), InputError, "fit must be the geosynth.PaivaFit of PaivaModel"),
        (dict(grid="grid"), InputError, "grid must be a geosynth.Grid"),
        (dict(combination=4), InputError, r"combination must be in \[0, 4\)"),
        (dict(combination=-1), InputError, "combination must be in"),
        (dict(combination=True), InputError, "combination must be an int"),
        (dict(max_points=0), InputError, "max_points must be None or an int >= 1"),
        (dict(max_points=2.5), InputError, "max_points"),
        (dict(public="yes"), InputError, "public must be True or False"),
        (dict(public=True, linked=True), InputError, "linked=True contradicts public=True"),
        (dict(linked=1), InputError, "linked must be True or False"),
        (dict(offline="yes"), InputError, "offline must be True or False"),
    ],
)
def test_bad_inputs_name_the_parameter(data, change, error, match):
    original, releases, fit, _ = data
    kwargs = {"original": original, "releases": releases, "fit": fit}
    for key, value in change.items():
        kwargs[key] = value(releases) if callable(value) else value
    with pytest.raises(error, match=match):
        review_map(**kwargs)


def test_empty_frames_tiles_and_layer_names_are_refused_by_name(data):
    # An empty release raised NumPy's "zero-size array to reduction operation", tiles=123
    # AttributeError, a tile URL folium's "Custom tiles must have an attribution" ValueError,
    # intensity_layer_name(None) AttributeError; an empty original centred the map on NaN and
    # release_layer_name(-1) returned "Release -1".
    original, releases, _, _ = data
    # An empty release is drawn as an empty layer, said in a warning (a DP release of a noisy
    # size 0 failed the command after its budget was spent); a map of nothing is refused.
    with pytest.warns(DataWarning, match=r"releases \[1\] have no points"):
        drawn = review_map(original, [releases[0], releases[1].iloc[:0]]).get_root().render()
    assert "Release 2" in drawn
    with pytest.raises(InputError, match=r"every release is empty and there is no lattice"):
        review_map(None, [releases[0].iloc[:0]], public=True)
    with pytest.raises(InputError, match=r"original has no records"):
        review_map(original.iloc[:0], releases)
    for tiles in (123, "https://tiles.example/{z}/{x}/{y}.png", "no such provider"):
        with pytest.raises(InputError, match=r"tiles must name a tile provider of xyzservices.*"
                                             r"folium.TileLayer\(url, attr=...\)"):
            review_map(None, releases, public=True, tiles=tiles, offline=False)
    custom = folium.TileLayer("https://tiles.example/{z}/{x}/{y}.png", attr="Example")
    html = review_map(None, releases, public=True, tiles=custom,
                      offline=False).get_root().render()
    assert "tiles.example" in html
    with pytest.raises(TypeError, match="label must be a str"):
        intensity_layer_name(None)
    for number in (-1, 0):
        with pytest.raises(InputError, match=r"number \(1-based release number\) must be an "
                                             r"int >= 1"):
            release_layer_name(number)
    with pytest.raises(TypeError, match="number"):
        release_layer_name(True)


def test_repeated_column_names_are_refused_naming_the_frame(data):
    # frame[c] of a repeated name is a frame: a bare AttributeError ('DataFrame' object has
    # no attribute 'dtype') came out of the tooltips.
    original, releases, _, _ = data
    repeated = original.copy()
    repeated.columns = ["y", "y", "x2", "z", "geometry"]
    repeated = repeated.set_geometry("geometry")
    with pytest.raises(InputError, match=r"original has .*'y'"):
        review_map(repeated, releases)
    # 0 and "0" were one field of the page's properties: one column shown twice, one lost
    alike = original.rename(columns={"x2": 0, "z": "0"})
    with pytest.raises(InputError, match=r"original has several columns named \['0'\]"):
        review_map(alike, releases)


def test_grid_must_match_fit_and_crs(data):
    original, releases, fit, grid = data
    other = geosynth.Grid.regular(grid.bounds, shape=(3, 3), crs=grid.crs)
    with pytest.raises(InputError, match="grid has 9 cells but fit has 30"):
        review_map(original, releases, fit=fit, grid=other)
    # As many cells, transposed (6 x 5 for 5 x 6): λ was drawn on the wrong cells.
    transposed = geosynth.Grid.regular(grid.bounds, shape=grid.shape[::-1], crs=grid.crs)
    with pytest.raises(InputError, match="grid is not the lattice fit was prepared on"):
        review_map(original, releases, fit=fit, grid=transposed)
    review_map(original, releases, fit=fit, grid=geosynth.Grid.regular(
        grid.bounds, shape=grid.shape, crs=grid.crs))  # built alike: the same lattice
    wrong_crs = geosynth.Grid.regular((0, 0, 10, 10), shape=(2, 2), crs="EPSG:3857")
    with pytest.raises(CRSError, match="grid is in"):
        review_map(original, releases, grid=wrong_crs)


def test_linked_true_needs_original_labels(data):
    original, releases, _, _ = data
    shuffled = geosynth.to_public(releases[0], seed=1)
    with pytest.raises(InputError, match=r"releases\[0\] holds index labels"):
        review_map(original, shuffled, linked=True)


def test_points_their_crs_cannot_place_on_the_globe_are_refused_by_row(data):
    # They became Infinity in the page's GeoJSON: the saved map opened blank.
    original, releases, _, _ = data
    far = releases[0].copy()
    far.geometry = far.geometry.set_crs(far.crs, allow_override=True)
    far.loc[far.index[[2, 5]], far.geometry.name] = gpd.points_from_xy([1e9, 1e9], [1e9, 1e9])
    with pytest.raises(InputError, match=r"releases\[1\] has 2 points that its CRS .* cannot "
                                         r"place on the globe \(rows \['r2', 'r5'\]\)"):
        review_map(original, [releases[0], far])


#: A site grid in metres: prepare, the fit and the GeoTIFF take it; it has no longitude.
LOCAL_CRS = ('ENGCRS["site grid",EDATUM["site"],CS[Cartesian,2],AXIS["x",east,'
             'LENGTHUNIT["metre",1]],AXIS["y",north,LENGTHUNIT["metre",1]]]')


def test_a_crs_without_longitude_and_latitude_is_refused_with_the_fix(data):
    # PROJ's "Error creating Transformer from CRS" came out of the page's GeoJSON.
    original, releases, _, _ = data
    local = [frame.set_crs(LOCAL_CRS, allow_override=True) for frame in (original, releases[0])]
    with pytest.raises(CRSError, match=r"the points' CRS \('site grid'\) has no transformation "
                                       r"to longitude and latitude .* reproject the points"):
        review_map(*local)
    geosynth.maps.check_web_crs(original.crs)  # the projected CRS of the data passes


# ---------------------------------------------------------------------- save_map
def test_save_map_writes_standalone_html_and_refuses_overwrite(data, tmp_path):
    _, releases, _, _ = data
    m = review_map(None, releases, public=True)
    path = save_map(m, tmp_path / "maps" / "review.html")
    assert path == tmp_path / "maps" / "review.html"
    html = path.read_text(encoding="utf-8")
    assert html.lstrip().startswith("<!DOCTYPE html>") and m.get_name() in html
    with pytest.raises(InputError, match="overwrite=True"):
        save_map(review_map(None, releases[:1], public=True), path)
    assert path.read_text(encoding="utf-8") == html
    save_map(review_map(None, releases[:1], public=True), path, overwrite=True)
    assert release_layer_name(2) not in path.read_text(encoding="utf-8")
    assert sorted(p.name for p in path.parent.iterdir()) == ["review.html"]


def test_save_map_is_atomic(data, tmp_path, monkeypatch):
    _, releases, _, _ = data
    m = review_map(None, releases, public=True)
    path = tmp_path / "review.html"
    path.write_text("previous")

    def broken_save(stream, **kwargs):
        stream.write(b"<html>half")
        raise OSError("disk full")

    monkeypatch.setattr(m, "save", broken_save)
    with pytest.raises(OSError, match="disk full"):
        save_map(m, path, overwrite=True)
    assert path.read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["review.html"]


def test_save_map_creates_internal_maps_0600_from_the_first_byte(data, tmp_path, monkeypatch):
    original, releases, _, _ = data
    m = review_map(original, releases)  # internal: shows the original points
    modes = []
    real_save = m.save

    def save(stream, **kwargs):
        modes.append(os.fstat(stream.fileno()).st_mode & 0o777)  # before anything is written
        real_save(stream, **kwargs)

    monkeypatch.setattr(m, "save", save)
    old_umask = os.umask(0o022)
    try:
        path = save_map(m, tmp_path / "review.html")
        public = save_map(review_map(None, releases, public=True), tmp_path / "public.html",
                          private=False)
    finally:
        os.umask(old_umask)
    assert modes == [0o600]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert ORIGINAL_LAYER in path.read_text(encoding="utf-8")
    assert stat.S_IMODE(public.stat().st_mode) == 0o644


def test_folium_s_own_save_of_an_internal_map_writes_it_0600_and_atomically(data, tmp_path,
                                                                            monkeypatch):
    # m.save("review.html"), folium's usual call, wrote the confidential points 0644, in place
    # (a crash left half a page) and over an existing file.
    original, releases, _, _ = data
    m = review_map(original, releases)
    old_umask = os.umask(0o022)
    try:
        m.save(tmp_path / "review.html")
        review_map(None, releases, public=True).save(str(tmp_path / "public.html"))
    finally:
        os.umask(old_umask)
    assert stat.S_IMODE((tmp_path / "review.html").stat().st_mode) == 0o600
    assert ORIGINAL_LAYER in (tmp_path / "review.html").read_text(encoding="utf-8")
    assert stat.S_IMODE((tmp_path / "public.html").stat().st_mode) == 0o644
    with pytest.raises(InputError, match="overwrite=True"):
        m.save(tmp_path / "review.html")
    m.save(tmp_path / "review.html", overwrite=True)
    # An open file others may read, or a buffer, gets no internal map; a public map is written.
    for stream in (open(tmp_path / "shared.html", "wb"), io.BytesIO()):  # noqa: SIM115
        with stream, pytest.raises(InputError, match="written only to a file its owner alone"):
            m.save(stream)
    assert (tmp_path / "shared.html").read_bytes() == b""
    buffer = io.BytesIO()
    review_map(None, releases, public=True).save(buffer, close_file=False)
    assert buffer.getvalue().lstrip().startswith(b"<!DOCTYPE html>")


def test_save_map_writes_an_internal_map_where_files_report_no_mode(data, tmp_path,
                                                                    monkeypatch):
    # SMB, vfat and WSL's /mnt/c report 0777 for every file: save_map refused the file it had
    # just created 0600, advising the call that had been made.
    original, releases, _, _ = data
    m = review_map(original, releases)
    real_fstat = os.fstat

    def fstat(fd):
        result = real_fstat(fd)
        return os.stat_result((result.st_mode | 0o777, *tuple(result)[1:]))

    monkeypatch.setattr(os, "fstat", fstat)
    save_map(m, tmp_path / "review.html")
    m.save(tmp_path / "again.html")
    assert ORIGINAL_LAYER in (tmp_path / "again.html").read_text(encoding="utf-8")
    with open(tmp_path / "mine.html", "wb") as stream, pytest.raises(InputError,
                                                                     match="owner alone"):
        m.save(stream)  # a file opened by hand still reads as shared there: refused


def test_an_internal_map_shown_in_a_notebook_warns_that_its_output_holds_the_records(data):
    # Jupyter stores the displayed page in the .ipynb: every original point, saved 0644.
    original, releases, _, _ = data
    with pytest.warns(PrivacyLeakWarning, match="stored in the notebook's output"):
        page = review_map(original, releases)._repr_html_()
    assert "iframe" in page
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        review_map(original, releases, public=True)._repr_html_()


def test_the_page_of_an_internal_map_saves_and_shows_as_the_map_does(data, tmp_path):
    # m.get_root(), a branca Figure, saved the internal map 0644 and in place, and showed it in
    # a notebook without the warning.
    original, releases, _, _ = data
    m = review_map(original, releases)
    m.get_root().save(tmp_path / "page.html")
    assert stat.S_IMODE(os.stat(tmp_path / "page.html").st_mode) == 0o600
    with pytest.raises(InputError, match="overwrite=True"):
        m.get_root().save(tmp_path / "page.html")
    with pytest.warns(PrivacyLeakWarning, match="stored in the notebook's output") as caught:
        page = m.get_root()._repr_html_()
    assert "iframe" in page and len(caught) == 1 and caught[0].filename == __file__
    with pytest.warns(PrivacyLeakWarning) as caught:
        assert "iframe" in m._repr_html_()  # the map shows its page, warned once
    assert len(caught) == 1 and caught[0].filename == __file__


def test_save_map_refuses_to_share_an_internal_map(data, tmp_path):
    # private=False wrote the internal map, with every original point, readable by all users.
    original, releases, _, _ = data
    for m in (review_map(original, releases), folium.Map()):
        with pytest.raises(InputError, match=r"private=False but m is not a public map of "
                                             r"review_map\(\.\.\., public=True\)"):
            save_map(m, tmp_path / "review.html", private=False)
    assert list(tmp_path.iterdir()) == []
    path = save_map(review_map(original, releases), tmp_path / "review.html")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_save_map_stages_into_the_callers_outputs(data, tmp_path):
    _, releases, _, _ = data
    path = tmp_path / "maps" / "review.html"
    with AtomicOutputs() as outputs:
        assert save_map(review_map(None, releases, public=True), path, outputs=outputs) == path
        assert not path.exists()  # moved into place by the caller's commit only
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert sorted(p.name for p in path.parent.iterdir()) == ["review.html"]

    discarded = AtomicOutputs()
    save_map(review_map(None, releases, public=True), tmp_path / "gone.html", outputs=discarded)
    discarded.discard()
    assert not (tmp_path / "gone.html").exists()
    with pytest.raises(InputError, match="outputs decide"):
        save_map(review_map(None, releases, public=True), path, overwrite=True,
                 outputs=AtomicOutputs(overwrite=False))
    with pytest.raises(InputError, match="outputs must be"):
        save_map(review_map(None, releases, public=True), path, outputs="transaction")


def test_save_map_checks_its_arguments(data, tmp_path):
    _, releases, _, _ = data
    with pytest.raises(InputError, match="m must be a folium.Map"):
        save_map("<html>", tmp_path / "a.html")
    with pytest.raises(InputError, match="is a directory"):
        save_map(review_map(None, releases, public=True), tmp_path)


@pytest.mark.parametrize("path", [None, 5, b"x.html"])
def test_save_map_refuses_a_path_that_is_no_path_by_name(path, tmp_path):
    # Path(None) raised a raw TypeError before anything was checked.
    import folium

    from geosynth.errors import InputTypeError

    with pytest.raises(InputTypeError, match=r"^path must be a file path"):
        save_map(folium.Map(), path)


def test_save_map_names_a_file_name_too_long(tmp_path):
    import folium

    with pytest.raises(InputError, match=r"longer than the file system allows"):
        save_map(folium.Map(), tmp_path / ("a" * 300 + ".html"))
    assert list(tmp_path.iterdir()) == []


def test_public_map_refuses_an_identifier_unless_the_fit_releases_it(data):
    # The identifier rule of the release files (is_identifier_name): a patient_id added to a
    # release is refused; a model attribute named like one is drawn when fit= says so.
    original, releases, _, grid = data
    public = geosynth.to_public(releases[0], seed=3)
    with pytest.raises(InputError, match=r"column 'patient_id', which identifies records"):
        review_map(None, [public.assign(patient_id=np.arange(len(public)))], public=True)
    renamed = original.rename(columns={"x1": "region_id"})
    counts = geosynth.prepare(renamed, grid, attributes=["y", "region_id"])
    fit = geosynth.PaivaModel().fit(counts, n_iter=60, burn_in=20, thin=2, chains=1, seed=1,
                                    progress=False)
    release = geosynth.to_public(geosynth.synthesize(fit, renamed, m=1, seed=2)[0], seed=3)
    with pytest.raises(InputError, match=r"column 'region_id', which identifies records"):
        review_map(None, [release], public=True)
    with pytest.warns(PrivacyLeakWarning, match="intensity"):
        drawn = review_map(None, [release], fit=fit, public=True)
    assert "region_id" in tooltip_fields(layers(drawn)[release_layer_name(1)])


def test_a_map_beyond_what_a_page_holds_is_refused_naming_max_points():
    # Uncapped, 200,000 records and 5 releases failed with a MemoryError building the page.
    with pytest.raises(InputError, match=r"the map would draw 1,100,000 points and lines, more "
                                         r"than the 500,000 .* pass max_points=45,454 or fewer"):
        geosynth.maps.check_drawn([100_000] * 5, 100_000, None, linked=True)
    assert geosynth.maps.check_drawn([100_000] * 5, 100_000, 10_000, linked=True) == 110_000
    assert geosynth.maps.check_drawn([100_000] * 5, None, None, linked=False) == 500_000  # public
