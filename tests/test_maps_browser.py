"""Review maps in a real headless Chromium without internet.

Offline maps (the default) are opened with every request but the page itself blocked; CDN maps
(``offline=False``) have their CDN assets served from npm copies.
"""

from __future__ import annotations

import io
import re
import shutil
from pathlib import Path

import branca.colormap
import folium
import pytest

import geosynth
from geosynth.errors import PrivacyLeakWarning
from geosynth.maps import (
    DISPLACEMENT_LAYER,
    ORIGINAL_LAYER,
    intensity_layer_name,
    release_layer_name,
    review_map,
    save_map,
)
from tests.browser.assets import asset_urls, ensure_npm, install_assets, npm_packages
from tests.browser.chromium import (
    CHROMIUM,
    LAUNCH_ARGS,
    BlockedNetwork,
    OfflineRoutes,
    ensure_chromium,
)

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
OPTION = "([name, key]) => window[name].getLayers().map(layer => layer.options[key])"


@pytest.fixture(scope="module")
def review_data(make_scenario_counts):
    scenario, _, counts = make_scenario_counts(n=200, seed=11, shape=(8, 8), attributes=["y", "x1"])
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
    """Open a saved map without internet; return (page, routes, errors).

    An offline map (no ``<script src>``/``<link href>``) gets a :class:`BlockedNetwork`: every
    request but the page itself is refused. A CDN map gets :class:`OfflineRoutes` serving its
    assets from npm copies.
    """
    contexts = []

    def _open(path: Path, map_name: str):
        urls = asset_urls(path.read_text(encoding="utf-8"))
        if urls:
            reason = ensure_npm()
            if reason:
                pytest.skip(reason)
            routes = OfflineRoutes(install_assets(npm_packages(urls)))
        else:
            routes = BlockedNetwork(path.as_uri())
        context = browser.new_context(viewport={"width": 1200, "height": 800})
        contexts.append(context)
        if isinstance(routes, BlockedNetwork):
            routes.install(context)
        else:
            context.route("**/*", routes)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(f"pageerror: {error}"))
        page.on("console", lambda message: errors.append(f"console: {message.text}")
                if message.type == "error" else None)
        page.goto(path.as_uri(), wait_until="load")
        page.wait_for_function("name => window[name] !== undefined", arg=map_name)
        return page, routes, errors

    yield _open
    for context in contexts:
        context.close()


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


def assert_offline_and_clean(routes: BlockedNetwork | OfflineRoutes, errors: list[str]) -> None:
    """No request left the page (offline) or none was unserved (CDN); no JavaScript error."""
    if isinstance(routes, BlockedNetwork):
        assert routes.refused == [] and routes.outside == [], "requests beyond the page"
        assert routes.requests == [routes.page_url]  # the recorder saw the page itself
    else:
        assert routes.unserved == [], "requests no local npm copy could serve"
        served = " ".join(routes.served)
        assert "leaflet.js" in served and "leaflet.css" in served  # the routes were really used
    assert errors == [], "JavaScript errors in the page"


@pytest.mark.parametrize("offline", [True, False], ids=["offline", "cdn"])
def test_internal_review_map(review_data, open_map, tmp_path, offline):
    original, releases, fit = review_data
    m = review_map(original, releases, fit=fit, combination=COMBINATION, offline=offline)
    path = save_map(m, tmp_path / "maps" / "review.html")
    assert (asset_urls(path.read_text(encoding="utf-8")) == []) == offline
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
    # Styles: the legends' colour of each cell and line, the release's colour for its points.
    legends = [c for c in m._children.values() if isinstance(c, branca.colormap.LinearColormap)]
    lam = fit.posterior_mean_lambda()[:, COMBINATION]
    assert page.evaluate(OPTION, [variables[intensity_layer_name(LABEL)], "fillColor"]) == [
        legends[0](value) for value in lam]
    assert set(page.evaluate(OPTION, [variables[release_layer_name(2)], "fillColor"])) == {
        "#ff7f0e"}
    assert set(page.evaluate(OPTION, [variables[ORIGINAL_LAYER], "radius"])) == {3}
    displacement = [feature["properties"]["displacement"] for feature in next(
        c for c in m._children.values() if getattr(c, "layer_name", None) == DISPLACEMENT_LAYER
    ).data["features"]]
    assert page.evaluate(OPTION, [variables[DISPLACEMENT_LAYER], "color"]) == [
        legends[1](value) for value in displacement]
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


@pytest.mark.parametrize("offline", [True, False], ids=["offline", "cdn"])
def test_public_review_map(review_data, open_map, tmp_path, offline):
    original, releases, fit = review_data
    with pytest.warns(PrivacyLeakWarning, match="follows|equals the confidential count"):
        m = review_map(original, releases, fit=fit, public=True, combination=COMBINATION,
                       offline=offline)  # an exact fit's intensity: the warning says how close
    path = save_map(m, tmp_path / "public.html")
    variables = layer_variables(m)
    page, routes, errors = open_map(path, m.get_name())

    assert control_labels(page) == [intensity_layer_name(LABEL), release_layer_name(1),
                                    release_layer_name(2)]
    assert page.evaluate(RENDERED, variables[release_layer_name(2)]) == len(releases[1])
    assert page.locator(".leaflet-tile").count() == 0  # no basemap requested
    assert page.locator(".legend svg rect").count() == 500  # the legend was drawn by d3
    assert_offline_and_clean(routes, errors)


LEVEL_PAYLOAD = '<img src=x onerror="window.__xss=(window.__xss||0)+1">'
COLUMN_PAYLOAD = '<img src=y onerror="window.__xss=(window.__xss||0)+1">'


@pytest.fixture(scope="module")
def hostile_data(make_scenario_counts):
    """Attribute text that is HTML: a level and a column name that run script if not escaped."""
    scenario, grid, _ = make_scenario_counts(n=120, seed=1, shape=(5, 5), attributes=["y"])
    data = scenario.data.assign(grp=["plain", LEVEL_PAYLOAD] * 60)
    data = data.rename(columns={"x1": COLUMN_PAYLOAD})
    counts = geosynth.prepare(data, grid, ["grp", COLUMN_PAYLOAD])
    fit = geosynth.PaivaModel().fit(counts, n_iter=60, burn_in=30, chains=1, seed=1,
                                    progress=False)
    label = next(k for k, text in enumerate(counts.combination_labels(sep=", "))
                 if LEVEL_PAYLOAD in text)
    return data.loc[counts.record_index], geosynth.synthesize(fit, data, m=1, seed=2), fit, label


@pytest.mark.parametrize("public", [False, True], ids=["internal", "public"])
def test_attribute_text_stays_text(hostile_data, open_map, tmp_path, public):
    # Layer names and tooltips are HTML to Leaflet and folium: the data's text is escaped.
    original, releases, fit, combination = hostile_data
    m = review_map(None if public else original, releases, fit=fit, combination=combination,
                   public=public)
    path = save_map(m, tmp_path / "hostile.html")
    page, routes, errors = open_map(path, m.get_name())
    shapes = page.locator(".leaflet-overlay-pane path.leaflet-interactive")
    for k in range(0, shapes.count(), max(1, shapes.count() // 40)):  # open tooltips
        box = shapes.nth(k).bounding_box()
        if box and box["width"] > 0:
            page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_timeout(300)
    assert page.evaluate("() => window.__xss || 0") == 0
    assert any(LEVEL_PAYLOAD in label for label in control_labels(page))  # shown as text
    assert_offline_and_clean(routes, errors)


def test_offline_map_opens_from_a_copied_folder(review_data, open_map, tmp_path):
    """The file needs nothing beside it: a copy elsewhere, under another name, still works."""
    original, releases, fit = review_data
    m = review_map(original, releases, fit=fit, combination=COMBINATION)
    path = save_map(m, tmp_path / "maps" / "review.html")
    copy = tmp_path / "elsewhere" / "deeper" / "copied review.html"
    copy.parent.mkdir(parents=True)
    shutil.copyfile(path, copy)
    shutil.rmtree(path.parent)  # nothing of the original folder is left to fall back on
    variables = layer_variables(m)
    page, routes, errors = open_map(copy, m.get_name())

    assert len(control_labels(page)) == 5
    assert page.evaluate(RENDERED, variables[ORIGINAL_LAYER]) == len(original)
    checkbox(page, DISPLACEMENT_LAYER).click()
    assert page.evaluate(RENDERED, variables[DISPLACEMENT_LAYER]) == 2 * len(original)
    assert routes.page_url == copy.as_uri()
    assert_offline_and_clean(routes, errors)


def test_offline_map_has_leaflet_images_inline(review_data, open_map, tmp_path):
    """The layer-control icon and Leaflet's default marker (added by a user) need no file."""
    _, releases, _ = review_data
    m = review_map(None, releases, public=True)
    folium.Marker(m.location).add_to(m)  # Leaflet's default icon, which review maps do not use
    path = save_map(m, tmp_path / "marker.html", private=False)
    page, routes, errors = open_map(path, m.get_name())

    page.wait_for_function("() => [...document.querySelectorAll('.leaflet-marker-pane img, "
                           ".leaflet-shadow-pane img')].every(img => img.complete)")
    images = page.evaluate("""() => [...document.querySelectorAll(
        '.leaflet-marker-pane img, .leaflet-shadow-pane img')]
        .map(img => [img.src.slice(0, 22), img.naturalWidth, img.naturalHeight])""")
    assert sorted(images) == [["data:image/png;base64,", 25, 41],  # marker-icon.png
                              ["data:image/png;base64,", 41, 41]]  # marker-shadow.png
    toggle = page.evaluate("""async () => {
        const link = document.querySelector('.leaflet-control-layers-toggle');
        const url = getComputedStyle(link).backgroundImage.slice(5, -2);
        const image = new Image();
        image.src = url;
        await image.decode();
        return [url.slice(0, 22), image.naturalWidth, image.naturalHeight];
    }""")
    assert toggle in (["data:image/png;base64,", 26, 26], ["data:image/png;base64,", 52, 52])
    assert_offline_and_clean(routes, errors)


def test_offline_and_cdn_maps_look_the_same(review_data, open_map, tmp_path):
    """Inlining changes no pixel: the offline page renders as the CDN page."""
    np = pytest.importorskip("numpy")
    image = pytest.importorskip("PIL.Image")
    original, releases, fit = review_data
    shots = {}
    for offline in (True, False):
        m = review_map(original, releases, fit=fit, combination=COMBINATION, offline=offline)
        path = save_map(m, tmp_path / f"offline={offline}.html")
        page, routes, errors = open_map(path, m.get_name())
        shots[offline] = np.asarray(image.open(io.BytesIO(page.screenshot())).convert("RGB"))
        assert_offline_and_clean(routes, errors)
    assert shots[True].shape == (800, 1200, 3)
    assert (shots[True] != shots[False]).any(axis=2).sum() == 0


def test_blocked_network_refuses_a_cdn_page(review_data, browser, tmp_path):
    """The offline tests would notice a request: the same blocker fails a CDN page."""
    _, releases, _ = review_data
    m = review_map(None, releases, public=True, offline=False)
    path = save_map(m, tmp_path / "cdn.html", private=False)
    context = browser.new_context()
    try:
        routes = BlockedNetwork(path.as_uri())
        routes.install(context)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(path.as_uri(), wait_until="load")
        assert sorted(routes.refused) == sorted(asset_urls(path.read_text(encoding="utf-8")))
        assert sorted(routes.outside) == sorted(routes.refused)
        assert any("L is not defined" in error for error in errors)
    finally:
        context.close()


def test_demo_maps_if_present(open_map):
    """The demo's own map (``make demo``), when one has been written; not required."""
    paths = [REPO / "maps" / "review.html", REPO / "out" / "maps" / "review.html"]
    paths = [path for path in paths if path.exists()]
    if not paths:
        pytest.skip("no demo map written (make demo); the tests above build their own maps")
    for path in paths:
        match = re.search(r"var (map_[0-9a-f]+) = L\.map\(", path.read_text(encoding="utf-8"))
        assert match, f"{path} is not a folium map"
        page, routes, errors = open_map(path, match[1])  # blocked network if offline
        assert control_labels(page), f"{path} has no layer control"
        assert_offline_and_clean(routes, errors)
