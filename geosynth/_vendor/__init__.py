"""Copies of the web assets of review maps, shipped inside geosynth so maps open without internet.

The files in this folder are unmodified copies of npm packages (versions, sources, checksums and
licences in ``README.md``): Leaflet 1.9.3 (``leaflet.js``, ``leaflet.css`` and its images) and
d3 3.5.5 (``d3.min.js``, used by branca's colour legends). They are the versions folium and
branca load from CDNs.

:class:`InlineAssets`, added to the :class:`branca.element.Figure` of a map, replaces the page's
``<script src>``/``<link href>`` tags of those assets with inline copies when the map is
rendered (by ``save``, ``get_root().render()`` or a notebook). The images ``leaflet.css``
references by relative URL become ``data:`` URIs, the default marker icon of Leaflet points at
them too, and source-map comments are dropped, so the page requests nothing from any host or
folder. The licence text of each package is written into the page, before its code.

This module imports branca: import it only where a map is built (geosynth imports lazily).
"""

from __future__ import annotations

import base64
import re
import warnings
from dataclasses import dataclass
from functools import cache
from importlib import resources

from branca.element import CssLink, Element, Figure, JavascriptLink

from geosynth.errors import GeosynthWarning, InputError

__all__ = ["ASSETS", "InlineAssets", "RawText", "VendoredAsset", "inline_html"]


@dataclass(frozen=True)
class VendoredAsset:
    """One vendored script or stylesheet.

    Attributes
    ----------
    name : str
        Key of the asset in the header of a folium page (folium's and branca's names).
    package, version : str
        npm package and version the file was copied from.
    path : str
        File inside ``geosynth/_vendor``.
    licence : str
        SPDX identifier of the package's licence.
    licence_file : str
        File inside ``geosynth/_vendor`` holding the licence text.
    homepage : str
        Project page, named in the page's licence comment.
    cdn_url : str
        URL folium or branca load the asset from when the map is not offline.
    """

    name: str
    package: str
    version: str
    path: str
    licence: str
    licence_file: str
    homepage: str
    cdn_url: str


#: Vendored assets by their header name in a folium page.
ASSETS: dict[str, VendoredAsset] = {
    asset.name: asset for asset in (
        VendoredAsset("leaflet", "leaflet", "1.9.3", "leaflet/leaflet.js", "BSD-2-Clause",
                      "leaflet/LICENSE", "https://leafletjs.com",
                      "https://cdn.jsdelivr.net/npm/leaflet@1.9.3/dist/leaflet.js"),
        VendoredAsset("leaflet_css", "leaflet", "1.9.3", "leaflet/leaflet.css", "BSD-2-Clause",
                      "leaflet/LICENSE", "https://leafletjs.com",
                      "https://cdn.jsdelivr.net/npm/leaflet@1.9.3/dist/leaflet.css"),
        VendoredAsset("d3", "d3", "3.5.5", "d3/d3.min.js", "BSD-3-Clause", "d3/LICENSE",
                      "https://d3js.org",
                      "https://cdnjs.cloudflare.com/ajax/libs/d3/3.5.5/d3.min.js"),
    )
}

# Leaflet's default marker icon: with a string imagePath Leaflet skips guessing the folder of
# marker-icon.png from the stylesheet (it cannot parse a data: URI) and uses the URLs as given.
_MARKER_IMAGES = {"iconUrl": "marker-icon.png", "iconRetinaUrl": "marker-icon-2x.png",
                  "shadowUrl": "marker-shadow.png"}
_CSS_URL = re.compile(r"url\((?P<quote>['\"]?)(?P<url>[^'\")]+)(?P=quote)\)")
_SOURCE_MAP = re.compile(r"^\s*(?://[#@] sourceMappingURL=.*|/\*[#@] sourceMappingURL=.*\*/)$",
                         re.MULTILINE)


def _read_bytes(path: str) -> bytes:
    return resources.files(__name__).joinpath(path).read_bytes()


def _data_uri(path: str) -> str:
    if not path.endswith(".png"):
        raise ValueError(f"no media type known for the vendored file {path}")
    return "data:image/png;base64," + base64.b64encode(_read_bytes(path)).decode("ascii")


def _licence_comment(asset: VendoredAsset, full: bool) -> str:
    head = f"{asset.package} {asset.version} ({asset.homepage}), licence {asset.licence}"
    if not full:
        return f"/*! {head}: see its full text above in this page */\n"
    text = _read_bytes(asset.licence_file).decode("utf-8").replace("\r\n", "\n").strip()
    if "*/" in text:
        raise ValueError(f"the licence of {asset.package} cannot be put in a comment")
    return f"/*! {head}, inlined by geosynth:\n\n{text}\n*/\n"


@cache
def _code(name: str) -> str:
    """Text of the asset ``name`` ready to inline (images as data: URIs, no source maps)."""
    asset = ASSETS[name]
    folder = asset.path.rpartition("/")[0]
    text = _read_bytes(asset.path).decode("utf-8").replace("\r\n", "\n")  # leaflet.css: CRLF
    text = _SOURCE_MAP.sub("", text)
    if asset.path.endswith(".css"):
        def inline_url(match: re.Match) -> str:
            url = match["url"]
            if url.startswith(("data:", "#")):  # '#default#VML' is an old IE behaviour
                return match[0]
            return f'url("{_data_uri(f"{folder}/{url}")}")'

        text = _CSS_URL.sub(inline_url, text)
        if re.search(r"</style", text, re.IGNORECASE):
            raise ValueError(f"{asset.path} cannot be inlined in a <style> element")
        return text
    text = re.sub(r"</(script)", r"<\\/\1", text, flags=re.IGNORECASE)
    if name == "leaflet":
        options = ",".join(f'{key}:"{_data_uri(f"{folder}/images/{file}")}"'
                           for key, file in _MARKER_IMAGES.items())
        text += f'\nL.Icon.Default.imagePath="";L.Icon.Default.mergeOptions({{{options}}});\n'
    return text


def inline_html(name: str, licence: str = "full") -> str:
    """Return the ``<script>`` or ``<style>`` element holding the vendored asset ``name``.

    Parameters
    ----------
    name : str
        A key of :data:`ASSETS`.
    licence : {"full", "reference"}, default "full"
        Precede the code with the full licence text of its package, or with a one-line
        reference to that text (for a second asset of a package already in the page).

    Returns
    -------
    str
        HTML of one element.
    """
    asset = ASSETS[name]
    comment = _licence_comment(asset, full=licence == "full")
    tag = "style" if asset.path.endswith(".css") else "script"
    return f"<{tag}>{comment}{_code(name)}</{tag}>"


class RawText(Element):
    """Element rendered as the given text (an Element's template would parse it as Jinja).

    Parameters
    ----------
    text : str
        HTML or script, written into the page unchanged.
    """

    def __init__(self, text: str) -> None:
        super().__init__()
        self._name = "RawText"
        self.text = text

    def render(self, **kwargs) -> str:
        """Return the text unchanged."""
        return self.text


class InlineAssets(Element):
    """Child of a map's Figure that inlines the vendored copies of the page's scripts and styles.

    Rendered after the map (and after the colour legends, which add d3 while they render), it
    replaces each ``<script src>``/``<link href>`` of the Figure's header with the vendored
    copy of the same name, in place. A link to an asset geosynth does not ship (e.g. a folium
    plugin added to the map) raises :class:`geosynth.errors.InputError`: an offline page never
    requests anything. If folium asks for another version than the vendored one, the vendored
    one is inlined with a :class:`geosynth.errors.GeosynthWarning`.
    """

    def __init__(self) -> None:
        super().__init__()
        self._name = "InlineAssets"

    def render(self, **kwargs) -> str:
        """Replace the header's links; return an empty string (the element has no markup)."""
        figure = self.get_root()
        if not isinstance(figure, Figure):
            raise TypeError("InlineAssets must be a child of a branca Figure")
        packages: set[str] = set()
        for name, child in list(figure.header._children.items()):
            if not isinstance(child, (JavascriptLink, CssLink)):
                continue
            asset = ASSETS.get(name)
            if asset is None:
                raise InputError(
                    f"the map loads {child.url} ({name!r}), which geosynth does not ship for "
                    "offline maps (Leaflet and d3 only); remove the element that needs it or "
                    "build the map with offline=False")
            if child.url != asset.cdn_url:
                warnings.warn(f"folium asks for {child.url}; the offline map inlines "
                              f"geosynth's copy of {asset.package} {asset.version} instead",
                              GeosynthWarning, stacklevel=2)
            licence = "reference" if asset.package in packages else "full"
            packages.add(asset.package)
            figure.header.add_child(RawText(inline_html(name, licence)), name=name)
        return ""
