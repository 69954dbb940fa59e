"""Review maps without a browser: layers, values, leaks, validation and atomic saving."""

from __future__ import annotations

import json
import os
import re
import stat

import branca.colormap
import folium
import geopandas as gpd
import numpy as np
import pytest
import shapely

import geosynth
from geosynth._atomic import AtomicOutputs
from geosynth.errors import CRSError, InputError
from geosynth.maps import (
    DISPLACEMENT_LAYER,
    GRID_LAYER,
    ORIGINAL_LAYER,
    UNUSED_DEFAULT_CSS,
    intensity_layer_name,
    release_layer_name,
    review_map,
    save_map,
)

LABELS = ["y=0, x1=1", "y=0, x1=2", "y=1, x1=1", "y=1, x1=2"]  # combinations of the scenario
FOLIUM_ASSETS = {
    "https://cdn.jsdelivr.net/npm/leaflet@1.9.3/dist/leaflet.js",
    "https://cdn.jsdelivr.net/npm/leaflet@1.9.3/dist/leaflet.css",
    "https://code.jquery.com/jquery-3.7.1.min.js",
    "https://cdn.jsdelivr.net/npm/bootstrap@5.2.2/dist/js/bootstrap.bundle.min.js",
    "https://cdn.jsdelivr.net/npm/bootstrap@5.2.2/dist/css/bootstrap.min.css",
    "https://cdn.jsdelivr.net/npm/@fortawesome/fontawesome-free@6.2.0/css/all.min.css",
    "https://cdnjs.cloudflare.com/ajax/libs/Leaflet.awesome-markers/2.0.2/leaflet.awesome-markers.js",
    "https://cdnjs.cloudflare.com/ajax/libs/Leaflet.awesome-markers/2.0.2/leaflet.awesome-markers.css",
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


def test_public_map_without_original_and_fit(data):
    _, releases, _, _ = data
    m = review_map(None, releases, public=True)
    assert list(layers(m)) == [release_layer_name(1), release_layer_name(2)]


def test_grid_outlines_without_fit(data):
    original, releases, _, grid = data
    m = review_map(original, releases, grid=grid)
    assert list(layers(m))[0] == GRID_LAYER
    assert len(layers(m)[GRID_LAYER].data["features"]) == grid.n_cells


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


def test_html_loads_only_npm_published_assets(data):
    original, releases, fit, _ = data
    html = review_map(original, releases, fit=fit).get_root().render()
    assert asset_urls(html) == FOLIUM_ASSETS | {LEGEND_ASSET}
    html = review_map(None, releases, public=True).get_root().render()
    assert asset_urls(html) == FOLIUM_ASSETS
    assert not re.search(r"tile\.openstreetmap|L\.tileLayer", html)
    assert {name for name, _ in folium.Map.default_css} >= set(UNUSED_DEFAULT_CSS)  # untouched


def test_tiles_are_opt_in(data):
    _, releases, _, _ = data
    html = review_map(None, releases, public=True, tiles="OpenStreetMap").get_root().render()
    assert "tile.openstreetmap.org" in html


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
        (dict(fit="fit"), InputError, "fit must be a geosynth.PaivaFit"),
        (dict(grid="grid"), InputError, "grid must be a geosynth.Grid"),
        (dict(combination=4), InputError, r"combination must be in \[0, 4\)"),
        (dict(combination=-1), InputError, "combination must be in"),
        (dict(combination=True), InputError, "combination must be an int"),
        (dict(max_points=0), InputError, "max_points must be None or an int >= 1"),
        (dict(max_points=2.5), InputError, "max_points"),
        (dict(public="yes"), InputError, "public must be True or False"),
        (dict(public=True, linked=True), InputError, "linked=True contradicts public=True"),
        (dict(linked=1), InputError, "linked must be True or False"),
    ],
)
def test_bad_inputs_name_the_parameter(data, change, error, match):
    original, releases, fit, _ = data
    kwargs = {"original": original, "releases": releases, "fit": fit}
    for key, value in change.items():
        kwargs[key] = value(releases) if callable(value) else value
    with pytest.raises(error, match=match):
        review_map(**kwargs)


def test_grid_must_match_fit_and_crs(data):
    original, releases, fit, grid = data
    other = geosynth.Grid.regular(grid.bounds, shape=(3, 3), crs=grid.crs)
    with pytest.raises(InputError, match="grid has 9 cells but fit has 30"):
        review_map(original, releases, fit=fit, grid=other)
    wrong_crs = geosynth.Grid.regular((0, 0, 10, 10), shape=(2, 2), crs="EPSG:3857")
    with pytest.raises(CRSError, match="grid is in"):
        review_map(original, releases, grid=wrong_crs)


def test_linked_true_needs_original_labels(data):
    original, releases, _, _ = data
    shuffled = geosynth.to_public(releases[0], seed=1)
    with pytest.raises(InputError, match=r"releases\[0\] holds index labels"):
        review_map(original, shuffled, linked=True)


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
