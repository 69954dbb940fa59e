"""Review maps in a real headless Chromium, offline: every CDN asset comes from npm copies."""

from __future__ import annotations

import re
from pathlib import Path

import folium
import pytest

import geosynth
from geosynth.maps import (
    DISPLACEMENT_LAYER,
    ORIGINAL_LAYER,
    intensity_layer_name,
    release_layer_name,
    review_map,
    save_map,
)
from tests.browser.assets import asset_urls, ensure_npm, install_assets, npm_packages
from tests.browser.chromium import CHROMIUM, LAUNCH_ARGS, OfflineRoutes, ensure_chromium

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
COMBINATION = 1
LABEL = "y=0, x1=2"  # combination 1 of paiva_scenario with attributes y, x1

# Leaflet draws circle markers, cells and lines as SVG paths; a sub-layer is on screen when its
# path element is in the document.
RENDERED = """name => window[name].getLayers()
    .filter(layer => layer._path && layer._path.isConnected).length"""
ON_MAP = "([map, layer]) => window[map].hasLayer(window[layer])"
PATHS = "() => document.querySelectorAll('.leaflet-overlay-pane path').length"


@pytest.fixture(scope="module")
def review_data():
    scenario = geosynth.datasets.paiva_scenario(n=200, seed=11)
    grid = geosynth.Grid.regular(scenario.bounds, shape=(8, 8), crs=scenario.crs)
    counts = geosynth.prepare(scenario.data, grid, attributes=["y", "x1"])
    fit = geosynth.PaivaModel().fit(counts, n_iter=200, burn_in=100, thin=2, chains=1, seed=3,
                                    progress=False)
    releases = geosynth.synthesize(fit, scenario.data, m=2, seed=4)
    return scenario.data, releases, fit


@pytest.fixture(scope="module")
def browser():
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright drives Chromium (pip install playwright)")
    reason = ensure_chromium()
    if reason:
        pytest.skip(reason)
    with sync_api.sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=LAUNCH_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def open_map(browser):
    """Open a saved map offline; return (page, routes, errors)."""
    pages = []

    def _open(path: Path, map_name: str):
        urls = asset_urls(path.read_text(encoding="utf-8"))
        reason = ensure_npm()
        if reason:
            pytest.skip(reason)
        routes = OfflineRoutes(install_assets(npm_packages(urls)))
        page = browser.new_page(viewport={"width": 1200, "height": 800})
        pages.append(page)
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(f"pageerror: {error}"))
        page.on("console", lambda message: errors.append(f"console: {message.text}")
                if message.type == "error" else None)
        page.route("**/*", routes)
        page.goto(path.as_uri(), wait_until="load")
        page.wait_for_function("name => window[name] !== undefined", arg=map_name)
        return page, routes, errors

    yield _open
    for page in pages:
        page.close()


def layer_variables(m: folium.Map) -> dict[str, str]:
    """Layer name -> JavaScript variable of each GeoJson layer of ``m``."""
    return {child.layer_name: child.get_name() for child in m._children.values()
            if isinstance(child, folium.GeoJson)}


def control_labels(page) -> list[str]:
    return [text.strip() for text in
            page.locator(".leaflet-control-layers-overlays label").all_inner_texts()]


def checkbox(page, name: str):
    label = page.locator(".leaflet-control-layers-overlays label",
                         has_text=re.compile(rf"^\s*{re.escape(name)}\s*$"))
    return label.locator("input[type=checkbox]")


def assert_offline_and_clean(routes: OfflineRoutes, errors: list[str]) -> None:
    assert routes.unserved == [], "requests no local npm copy could serve"
    assert errors == [], "JavaScript errors in the page"
    served = " ".join(routes.served)
    assert "leaflet.js" in served and "leaflet.css" in served  # the routes were really used


def test_internal_review_map(review_data, open_map, tmp_path):
    original, releases, fit = review_data
    m = review_map(original, releases, fit=fit, combination=COMBINATION)
    path = save_map(m, tmp_path / "maps" / "review.html")
    variables = layer_variables(m)
    page, routes, errors = open_map(path, m.get_name())

    assert control_labels(page) == [intensity_layer_name(LABEL), ORIGINAL_LAYER,
                                    release_layer_name(1), release_layer_name(2),
                                    DISPLACEMENT_LAYER]
    counts = {name: page.evaluate(RENDERED, variables[name]) for name in variables}
    assert counts == {
        intensity_layer_name(LABEL): fit.grid.n_cells,
        ORIGINAL_LAYER: len(original),
        release_layer_name(1): len(releases[0]),
        release_layer_name(2): len(releases[1]),
        DISPLACEMENT_LAYER: 0,  # hidden until switched on
    }
    screenshot = tmp_path / "review.png"
    page.screenshot(path=screenshot)
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert screenshot.stat().st_size > 10_000

    release_1 = variables[release_layer_name(1)]
    before = page.evaluate(PATHS)
    checkbox(page, release_layer_name(1)).click()
    assert not page.evaluate(ON_MAP, [m.get_name(), release_1])
    assert page.evaluate(RENDERED, release_1) == 0
    assert page.evaluate(PATHS) == before - len(releases[0])
    checkbox(page, release_layer_name(1)).click()
    assert page.evaluate(RENDERED, release_1) == len(releases[0])

    checkbox(page, DISPLACEMENT_LAYER).click()
    lines = page.evaluate(RENDERED, variables[DISPLACEMENT_LAYER])
    assert lines == len(releases[0]) + len(releases[1])
    assert_offline_and_clean(routes, errors)


def test_public_review_map(review_data, open_map, tmp_path):
    original, releases, fit = review_data
    m = review_map(original, releases, fit=fit, public=True, combination=COMBINATION)
    path = save_map(m, tmp_path / "public.html")
    variables = layer_variables(m)
    page, routes, errors = open_map(path, m.get_name())

    assert control_labels(page) == [intensity_layer_name(LABEL), release_layer_name(1),
                                    release_layer_name(2)]
    assert page.evaluate(RENDERED, variables[release_layer_name(2)]) == len(releases[1])
    assert page.locator(".leaflet-tile").count() == 0  # no basemap requested
    assert_offline_and_clean(routes, errors)


def test_demo_maps_if_present(open_map):
    """The demo's own map (``make demo``), when one has been written; not required."""
    paths = [REPO / "maps" / "review.html", REPO / "out" / "maps" / "review.html"]
    paths = [path for path in paths if path.exists()]
    if not paths:
        pytest.skip("no demo map written (make demo); the tests above build their own maps")
    for path in paths:
        match = re.search(r"var (map_[0-9a-f]+) = L\.map\(", path.read_text(encoding="utf-8"))
        assert match, f"{path} is not a folium map"
        page, routes, errors = open_map(path, match[1])
        assert control_labels(page), f"{path} has no layer control"
        assert_offline_and_clean(routes, errors)
