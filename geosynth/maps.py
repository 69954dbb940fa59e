"""Interactive review maps of synthetic releases (standalone Leaflet HTML via folium).

:func:`review_map` draws, on one :class:`folium.Map` with a layer control,

* ``"Original (internal)"`` -- the confidential points (internal review only);
* ``"Release 1"`` .. ``"Release m"`` -- the synthetic points of each release;
* ``"Posterior mean λ: <combination>"`` -- a choropleth of the fitted intensity of one attribute
  combination over the lattice cells, with a colour legend (when a fit is given);
* ``"Displacement"`` -- a line from each original point to each of its synthetic points,
  coloured by length (internal review of releases that keep the original index);
* ``"Grid"`` -- the lattice cell outlines (when a grid but no fit is given).

Points carry their attribute columns as tooltips (the data's text HTML-escaped, and never read
as a template). Every layer is a :class:`folium.GeoJson` in EPSG:4326, built from the coordinate
and column arrays; its style is set by the page (one style per layer, or a colour per cell or
line from the legend's scale), so a map of ``max_points`` points per layer is written in seconds:
each drawn point adds about 0.2 kB to the page, each displacement line as much.
:func:`save_map` writes the map as one standalone HTML file, atomically, created with mode 0600
(owner only) unless the map is declared public (``private=False``).

A *public* map (``public=True``) is one that may leave the analyst's machine: it has neither the
original points nor the displacement lines, and its releases are drawn in their public form
(:func:`geosynth.to_public` columns, no index, x and y only, rows ordered by coordinates, so the
order of the confidential file is not in the HTML). Given ``original``, a public map refuses a
release with a point at a record's exact location (the confidential frame passed as a release)
or with more points within 0.1 m of records than chance placement explains (a rounded, shifted
or reprojected copy of them; see :func:`review_map`, Notes).
The page's title says which kind a map is (:data:`INTERNAL_TITLE`, :data:`PUBLIC_TITLE`), and an
internal map shows a banner saying it must not be published; :func:`save_map` writes only a
public map readable by others.

Offline use
-----------
Confidential points are often reviewed in a secure data enclave without internet. By default
(``offline=True``; also ``geosynth release --map`` and ``geosynth demo``) the HTML file is
self-contained: Leaflet 1.9.3 (JavaScript, stylesheet and its images as ``data:`` URIs) and, for
the colour legends, d3 3.5.5 are inlined from copies shipped inside geosynth
(``geosynth/_vendor``, with their licences, BSD-2-Clause and BSD-3-Clause, also written into the
page). Opening the file requests nothing from any host or folder, so it also works when copied
elsewhere, and no CDN learns that a review is happening. The page uses no web font or icon
font. The file is about 0.33 MB larger than the CDN page (0.17 MB without a colour legend):
e.g. 0.63 MB instead of 0.31 MB for 200 points in 2 releases with a choropleth of 64 cells and
the displacement lines, 1.66 MB instead of 1.33 MB for the map of ``geosynth demo`` (the CDN
page then downloads the same 0.33 MB whenever it is opened).

``offline=False`` writes folium's smaller page, which loads the same Leaflet and d3 files from
public CDNs (``cdn.jsdelivr.net``, ``cdnjs.cloudflare.com``) when opened, and may add a basemap
(``tiles``; a tile server learns which area is being reviewed, so ``tiles`` requires
``offline=False``). In both modes the page has only the assets its layers use (the names in
:data:`USED_DEFAULT_ASSETS`, plus d3 with a legend): folium's other defaults -- jQuery,
Bootstrap (JavaScript and CSS), Bootstrap 3 glyphicons, Font Awesome, Leaflet.awesome-markers
and folium's rotated-marker CSS -- serve marker icons and HTML popups, which review maps do not
draw. To add such elements to a review map, build it with ``offline=False`` and restore them
with ``m.default_js = folium.Map.default_js`` and ``m.default_css = folium.Map.default_css``;
an offline map that would load an asset geosynth does not ship fails to save with
:class:`~geosynth.errors.InputError` rather than make a request.
"""

from __future__ import annotations

import html
import json
import numbers
import os
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import folium
import geopandas as gpd
import jinja2
import numpy as np
import pandas as pd
import shapely
import shapely.geometry
from branca.element import Figure, MacroElement

from geosynth._atomic import (
    AtomicOutputs,
    create_new,
    drop_staged,
    stage_output,
    transaction_overwrite,
)
from geosynth._messages import NOISY_COUNTS, describe_rows
from geosynth._points import (
    NEAR_ALPHA,
    NEAR_M,
    at_locations,
    log_chance_of_as_many,
    metres_per_unit,
    metric_coordinates,
    near_copies,
    point_coordinates,
)
from geosynth._validation import check_bool, check_int, check_unique_columns, describe_value
from geosynth._vendor import RawText
from geosynth.data import CellCounts, CountTable, warn_if_bounds_touch_records
from geosynth.errors import CRSError, DataWarning, InputError, InputTypeError, PrivacyLeakWarning
from geosynth.synth.release import (
    INTERNAL_PREFIX,
    check_geodataframe,
    is_published,
    keep_recorded_columns,
    refuse_baseline,
    release_info,
)

if TYPE_CHECKING:
    from geosynth.lattice import Grid
    from geosynth.model import PaivaFit

__all__ = [
    "review_map",
    "save_map",
    "ReviewMap",
    "release_layer_name",
    "intensity_layer_name",
    "DEFAULT_MAX_POINTS",
    "MAX_DRAWN",
    "check_drawn",
    "check_web_crs",
    "ORIGINAL_LAYER",
    "DISPLACEMENT_LAYER",
    "GRID_LAYER",
    "CUT_LINKS_LAYER",
    "ISLAND_LINKS_LAYER",
    "USED_DEFAULT_ASSETS",
    "INTERNAL_TITLE",
    "PUBLIC_TITLE",
]

#: Default ``max_points`` of :func:`review_map` and of ``geosynth release --map-max-points``:
#: points drawn per layer (each adds about 0.2 kB to the page, and so does each of its
#: displacement lines: every point of a million records in 5 releases would make 2 GB).
DEFAULT_MAX_POINTS = 10_000
#: The most points and displacement lines a map draws in all: about 100 MB of page. Uncapped,
#: 200,000 records and 5 releases (1.2 million points and a million lines) failed with a
#: MemoryError while the page was built, after the whole fit of ``geosynth release``.
MAX_DRAWN = 500_000
#: Name of the layer of the confidential points (internal maps only).
ORIGINAL_LAYER = "Original (internal)"
#: Name of the layer of lines from original to synthetic points (internal, linked releases).
DISPLACEMENT_LAYER = "Displacement"
#: Name of the layer of cell outlines (a grid without a fit).
GRID_LAYER = "Grid"
#: Name of the layer of the links between neighbouring cells cut across barriers
#: (:meth:`geosynth.Grid.without_links_across`), drawn when the lattice has any.
CUT_LINKS_LAYER = "Links cut by barriers"
#: Name of the layer of the links that join islands to their nearest area
#: (``Grid.from_polygons(..., islands="nearest")``), drawn when the lattice has any.
ISLAND_LINKS_LAYER = "Island links"
#: Names of folium's default scripts and stylesheets that review maps keep (Leaflet); they drop
#: the others, which their layers do not use (see the module docstring).
USED_DEFAULT_ASSETS = ("leaflet", "leaflet_css")
#: Title of the page of an internal map (``public=False``), which shows confidential data.
INTERNAL_TITLE = "INTERNAL geosynth review map: confidential, do not publish"
#: Title of the page of a public map (``public=True``).
PUBLIC_TITLE = "geosynth public map of synthetic releases"
# Banner at the top of an internal map, so a screenshot or an open page says what it is.
_INTERNAL_BANNER = (
    '<div style="position:fixed;top:6px;left:50%;transform:translateX(-50%);z-index:1001;'
    'pointer-events:none;background:#b00020;color:#ffffff;font:bold 13px sans-serif;'
    'padding:3px 10px;border-radius:3px">INTERNAL REVIEW MAP: shows confidential records '
    '(original points, record counts). Do not publish or share.</div>'
)
# Attribute of a folium.Map that review_map drew with public=True (save_map may share it).
_PUBLIC_MARK = "_geosynth_public"

_ORIGINAL_COLOR = "#000000"
# matplotlib's tab10 without black-like grey, so releases stay distinct from the original.
_RELEASE_COLORS = (
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#bcbd22", "#17becf",
)
_SUBSAMPLE_SEED = 0  # max_points keeps the same rows on every call
_ORIGINAL_FIX = ("map the synthetic releases of geosynth.synthesize, or draw an internal map "
                 "with public=False")


def release_layer_name(number: int) -> str:
    """Name of the layer of release ``number`` (1-based): ``"Release 1"``, ``"Release 2"``, ...

    Raises
    ------
    geosynth.errors.InputError
        ``number`` is not an int >= 1 (a TypeError too when it is not an int).
    """
    return f"Release {check_int(number, 'number', 1, what='1-based release number')}"


def intensity_layer_name(label: str) -> str:
    """Name of the posterior-mean-λ layer of a combination label such as ``"y=0, x1=1"``.

    Leaflet's layer control shows names as HTML, so the label (attribute names and levels, the
    data's text) is escaped: a level such as ``<img onerror=...>`` stays text.

    Raises
    ------
    geosynth.errors.InputTypeError
        ``label`` is not a str.
    """
    if not isinstance(label, str):
        raise InputTypeError(f"label must be a str such as 'y=0, x1=1' (a label of "
                             f"fit.counts.combination_labels()), got {describe_value(label)}")
    return f"Posterior mean λ: {html.escape(label)}"


def review_map(
    original: gpd.GeoDataFrame | None,
    releases: gpd.GeoDataFrame | Sequence[gpd.GeoDataFrame],
    fit: PaivaFit | None = None,
    grid: Grid | None = None,
    public: bool = False,
    combination: int = 0,
    max_points: int | None = DEFAULT_MAX_POINTS,
    *,
    linked: bool | None = None,
    tiles: Any = None,
    offline: bool = True,
) -> folium.Map:
    """Draw the original points, the releases and the fitted intensity on one Leaflet map.

    Parameters
    ----------
    original : geopandas.GeoDataFrame or None
        The confidential points (any CRS). May be None only when ``public=True``.
    releases : GeoDataFrame or sequence of GeoDataFrame
        The synthetic releases, in the CRS of ``original``; one layer each,
        ``"Release 1"`` .. ``"Release m"``.
    fit : geosynth.PaivaFit, optional
        Fitted model: adds the layer ``"Posterior mean λ: <label>"``, a choropleth of
        ``fit.posterior_mean_lambda()[:, combination]`` over the cells, with a legend. The label
        names the combination's levels, e.g. ``"y=0, x1=1"``.
    grid : geosynth.Grid, optional
        Lattice of the choropleth (default ``fit.grid``; must have as many cells). Without a fit,
        its cell outlines are drawn as the layer ``"Grid"``. Links of the lattice cut across
        barriers, and links joining islands to their nearest area, are drawn as segments
        between the cells (layers ``"Links cut by barriers"`` and ``"Island links"``).
    public : bool, default False
        Draw a map that may be published: no original points, no displacement, releases in
        their public form (no index, internal columns dropped, points in x and y only, rows
        ordered by coordinates) and no per-cell record counts in the choropleth tooltips.
        Columns a release file may not hold either (identifiers, see Raises) are refused, and,
        given ``original``, so is a release with a point at a record's exact location or too
        many near it (see Notes; pass ``original`` to have this checked; without it, see
        Warns). The choropleth of ``fit``
        is still drawn: pass a fit only if the posterior mean intensity may be published.
    combination : int, default 0
        Row of ``fit.counts.combos`` whose intensity is drawn.
    max_points : int or None, default :data:`DEFAULT_MAX_POINTS` (10 000)
        Draw at most this many points per layer (a fixed random subset, the same on every call;
        layer names are unchanged); the displacement layer has a line per drawn point of each
        release. None draws every point (a page of millions of points may not open).
    linked : bool, optional
        Whether each release row is the synthetic version of the original row with the same
        index label, which the ``"Displacement"`` layer needs. Default: True for internal maps
        whose releases come straight from :func:`geosynth.synthesize` or the baselines (their
        ``attrs["geosynth"]`` is set, without an ε) and hold only labels of ``original``; False
        otherwise (e.g. :func:`geosynth.to_public` or differentially private releases).
    tiles : str or xyzservices.TileProvider, optional
        Basemap, e.g. ``"OpenStreetMap"``; only with ``offline=False``. Default: none (a tile
        server would learn the reviewed area).
    offline : bool, default True
        Make a page that opens without internet: Leaflet, its images and d3 (for the legends)
        are inlined from copies shipped with geosynth when the map is rendered or saved, and
        the page requests nothing from any host or folder. False: the page loads them from
        public CDNs when opened (about 0.3 MB smaller). See the module docstring.

    Returns
    -------
    ReviewMap
        A :class:`folium.Map` whose ``save`` writes as :func:`save_map` does (atomically; an
        internal map with mode 0600), with a (expanded) layer control; every layer is a
        :class:`folium.GeoJson` whose ``layer_name`` is one of the names above. Its page loads
        only Leaflet and, with a legend, d3 (inline when ``offline``). The page is titled
        :data:`INTERNAL_TITLE` (with a banner saying not to publish it) or, with
        ``public=True``, :data:`PUBLIC_TITLE`.

    Raises
    ------
    geosynth.errors.InputError
        A frame is not a GeoDataFrame of valid points or has no rows, ``releases`` is empty,
        ``fit`` is not a PaivaFit, ``grid`` does not match the fit, ``combination`` is out of
        range, ``max_points`` is not a positive int, ``linked=True`` with a public map or with
        labels not in ``original``, ``tiles`` with ``offline=True`` or naming no tile provider
        (pass a :class:`folium.TileLayer` for a tile URL), a public map of a
        Naive or donut baseline (their points stay at the records' own locations), or a public
        map of a release with a column that identifies records (named like one,
        :func:`geosynth.synth.release.is_identifier_name`, unless ``fit``'s model releases
        it, or, given ``original``, holding its index labels) or,
        given ``original``, with a point at the exact location of one of its records or with
        more points within 0.1 m of its records than chance placement explains (a rounded,
        shifted or reprojected copy of them; see below), or with numeric columns holding
        records' coordinates.
    geosynth.errors.CRSError
        A frame or the grid has no CRS, or the CRSs differ.

    Warns
    -----
    geosynth.errors.PrivacyLeakWarning
        A public map without ``original`` of a release that may be the confidential points:
        it carries neither the record of the synthesizer that drew it (which
        :func:`geosynth.to_public` keeps; its mark alone is given to any frame) nor the mark
        of :func:`geosynth.io.read_release`.

    Notes
    -----
    A public map refuses a release that holds the records' locations: a point at a record's
    exact location (a continuous placement never lands on one), or ``k`` points within
    ``r = 0.1 m`` of a record (of distinct record locations, in metres: geographic coordinates
    are measured on a sphere) when ``k`` is implausible for points placed independently of the
    records. Synthetic points fall uniformly within lattice cells (or raster pixels), so in
    dense data some land near records by chance: their expected number is at most
    ``μ = 4 (r/R)² P_R``, where ``P_R`` counts the (point, record) pairs closer than
    ``R = 10 m``; the factor 4 bounds the placement density near a record over its average
    within ``R`` (at least a quarter of the disc lies in the record's cell when cells and pixels
    are at least ``R`` wide). ``k`` is a sum of independent Bernoulli variables of mean at most
    ``μ``, and the release is refused when the Chernoff bound of ``P(k' >= k)``,
    ``exp(-μ) (eμ/k)^k``, is below 1e-9. A rounded (to 0.1 m or finer), shifted (by less than
    ``r``) or reprojected copy has ``k = n`` against ``μ ≈ 4·10⁻⁴ n (1 + records within R)``. A
    synthetic release of 20 000 records spread over a hectare has about
    ``n (1 - exp(-2π r²/m²)) ≈ 1 200`` points near records by chance, and ``μ ≈ 4 600``.

    Examples
    --------
    >>> import geosynth
    >>> from geosynth.maps import review_map
    >>> scenario = geosynth.datasets.paiva_scenario(n=50, seed=1)
    >>> grid = geosynth.Grid.regular(scenario.bounds, shape=(4, 4), crs=scenario.crs)
    >>> counts = geosynth.prepare(scenario.data, grid, attributes=["y"])
    >>> fit = geosynth.PaivaModel().fit(counts, n_iter=40, burn_in=20, thin=2, chains=1,
    ...                                 seed=1, progress=False)
    >>> releases = geosynth.synthesize(fit, scenario.data, m=2, seed=2)
    >>> m = review_map(scenario.data, releases, fit=fit)
    >>> [layer.layer_name for layer in m._children.values() if hasattr(layer, "layer_name")
    ...  and layer.control]
    ['Posterior mean λ: y=0', 'Original (internal)', 'Release 1', 'Release 2', 'Displacement']
    """
    public = check_bool(public, "public")
    offline = check_bool(offline, "offline")
    if offline and tiles is not None:
        raise InputError(f"tiles={tiles!r} are loaded from a tile server whenever the map is "
                         "opened, but an offline=True map requests nothing; pass offline=False "
                         "for a basemap")
    _check_tiles(tiles)
    releases = _check_releases(releases)
    if original is None and not public:
        raise InputError("original is None; pass the confidential points, or public=True for a "
                         "map without them")
    if original is not None:
        _check_points(original, "original")
        if len(original) == 0:
            raise InputError("original has no records; pass the confidential points, or "
                             "original=None with public=True for a map without them")
    crs = _common_crs(original, releases)
    check_web_crs(crs)
    for name, frame in [("original", original)] * (original is not None) + [
            (f"releases[{number}]", release) for number, release in enumerate(releases)]:
        _check_on_the_globe(frame, name)
    fit, grid, lam, label = _check_fit(fit, grid, combination, crs)
    if public and lam is not None:  # the intensity a public map shows, as the writers warn
        from geosynth.io._files import warn_exact_intensity

        warn_exact_intensity(fit, lam, "a public map", stacklevel=2,
                             combination=int(combination))
    max_points = _check_max_points(max_points)
    linked = _check_linked(linked, public, original, releases)

    if public:
        for number, release in enumerate(releases):
            refuse_baseline(release, f"releases[{number}]", "a public map may not show it; map "
                            "it with public=False (internal), or map the releases of "
                            "geosynth.synthesize")
        _refuse_original_locations(releases, original)
        if original is not None and grid is not None:  # the grid's outline is drawn
            warn_if_bounds_touch_records(grid, point_coordinates(original, "original"),
                                         stacklevel=3)
        releases = [_public_form(release) for release in releases]
        _check_public_columns(releases, original, fit)
    check_drawn([len(r) for r in releases], None if public else len(original), max_points,
                linked)
    shown = [_subsample(release, max_points) for release in releases]
    extents = [release.total_bounds for release in releases if len(release)]
    if not public and len(original):
        extents.append(original.total_bounds)
    if grid is not None:
        extents.append(np.asarray(grid.bounds, dtype=float))
    _check_something_drawn(releases, extents)

    m = ReviewMap(location=(0.0, 0.0), zoom_start=2, tiles=tiles, control_scale=True)
    setattr(m, _PUBLIC_MARK, public)
    m.get_root().title = PUBLIC_TITLE if public else INTERNAL_TITLE
    if not public:
        m.get_root().html.add_child(folium.Element(_INTERNAL_BANNER),
                                    name="geosynth_internal_banner")
    # Instance attributes: folium's class-level lists stay as they are for other maps.
    m.default_js = [(name, url) for name, url in m.default_js if name in USED_DEFAULT_ASSETS]
    m.default_css = [(name, url) for name, url in m.default_css if name in USED_DEFAULT_ASSETS]
    if lam is not None:
        _add_intensity(m, grid, lam, label, None if public else fit.counts, combination)
    elif grid is not None:
        cells = grid.cells[["cell_id", "geometry"]]
        _Layer(_geojson(cells), GRID_LAYER, {"color": "#555555", "weight": 1, "fill": False},
               tooltip=_tooltip(cells)).add_to(m)
    if grid is not None:
        _add_links(m, grid)
    if not public:
        _add_points(m, _subsample(original, max_points), ORIGINAL_LAYER, _ORIGINAL_COLOR)
    for number, release in enumerate(shown, start=1):
        color = _RELEASE_COLORS[(number - 1) % len(_RELEASE_COLORS)]
        _add_points(m, release, release_layer_name(number), color)
    if linked:
        _add_displacement(m, original, shown, crs)
    _LayerControl(collapsed=False).add_to(m)
    xmin, ymin, xmax, ymax = _bounds_4326(np.vstack(extents), crs)
    m.location = [(ymin + ymax) / 2, (xmin + xmax) / 2]
    m.fit_bounds([[ymin, xmin], [ymax, xmax]])
    if offline:
        from geosynth._vendor import InlineAssets

        # A child of the Figure renders after the map and its legends (which add d3).
        m.get_root().add_child(InlineAssets(), name="geosynth_inline_assets")
    return m


class ReviewMap(folium.Map):
    """The :class:`folium.Map` of :func:`review_map`: its ``save`` is :func:`save_map`'s.

    folium's own ``m.save("review.html")`` wrote an internal map, with the confidential points
    and the records per cell, readable by everyone (0644) and in place, so a crash left half a
    page; it also replaced an existing file. Given a path, ``save`` writes as :func:`save_map`
    does: atomically, an internal map with mode 0600 (a public one 0666 less the umask), never
    over an existing file without ``overwrite=True``. An internal map is written to an open
    file only if its owner alone may read it (as :func:`save_map`'s own file); a public one to
    any stream, as folium does. Its page (``m.get_root()``) saves and shows through the map: a
    branca ``Figure``'s own ``save`` wrote the internal map 0644 and in place.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _ReviewPage().add_child(self)  # in place of folium's Figure, as folium adds the map

    def save(self, outfile: Any, close_file: bool = True, overwrite: bool = False,
             **kwargs: Any) -> None:
        """Write the map's page to ``outfile``: a path, or a binary stream.

        Parameters
        ----------
        outfile : str, os.PathLike or binary file object
            Destination; a path is written by :func:`save_map`.
        close_file : bool, default True
            Close a stream after writing (folium's parameter).
        overwrite : bool, default False
            Replace an existing file at a path.
        **kwargs
            Passed to the page's rendering (folium's parameter).

        Raises
        ------
        geosynth.errors.InputError
            An internal map given a stream that others may read (or no file: a buffer), or
            :func:`save_map`'s reasons.
        """
        public = getattr(self, _PUBLIC_MARK, None) is True
        if isinstance(outfile, (str, bytes, os.PathLike)):  # bytes: refused by save_map
            save_map(self, outfile, overwrite, private=not public)
            return
        if not public and id(outfile) not in _SAVING and not _owner_only(outfile):
            raise InputError(
                "an internal review map shows the confidential records and is written only to "
                "a file its owner alone may read (mode 0600): pass a file name, "
                "m.save('review.html') or geosynth.maps.save_map(m, 'review.html'), or draw "
                "the map with public=True"
            )
        super().save(outfile, close_file=close_file, **kwargs)

    def _repr_html_(self, **kwargs: Any) -> str:
        """Return the page for a notebook's output, warning if the map is internal.

        A notebook stores the page of a displayed map in its output, in the .ipynb file that
        is saved (0644) and shared: an internal map put every original point there.
        """
        _warn_if_shown_internal(self)
        root = self.get_root()
        if isinstance(root, _ReviewPage):  # its own display warns: shown once, warned once
            return Figure._repr_html_(root, **kwargs)
        return super()._repr_html_(**kwargs)


def _warn_if_shown_internal(m: ReviewMap) -> None:
    """Warn the caller of a ``_repr_html_`` that an internal map goes into a notebook's output."""
    if getattr(m, _PUBLIC_MARK, None) is not True:
        warnings.warn(
            "an internal review map shown in a notebook is stored in the notebook's output, "
            "with every original point and the records per cell: clear that output before "
            "saving or sharing the notebook, or show review_map(..., public=True) and "
            "write the internal map with save_map",
            PrivacyLeakWarning,
            stacklevel=3,
        )


#: ids of the files :func:`save_map` is writing: created 0600 there, they are written even where
#: the file system reports no such mode (SMB, vfat and WSL's /mnt/c show 0777 for every file,
#: and save_map refused its own file).
_SAVING: set[int] = set()


class _ReviewPage(Figure):
    """The page of a :class:`ReviewMap`: its ``save`` and notebook display are the map's."""

    def _map(self) -> ReviewMap:
        return next(child for child in self._children.values() if isinstance(child, ReviewMap))

    def save(self, outfile: Any, close_file: bool = True, **kwargs: Any) -> None:
        """Write the page as :meth:`ReviewMap.save` does (atomically; internal: mode 0600)."""
        self._map().save(outfile, close_file=close_file, **kwargs)

    def _repr_html_(self, **kwargs: Any) -> str:
        """Return the page for a notebook's output, warning as :meth:`ReviewMap._repr_html_`."""
        _warn_if_shown_internal(self._map())
        return super()._repr_html_(**kwargs)


def _owner_only(stream: Any) -> bool:
    """Tell whether ``stream`` is a file that only its owner may read or write (mode 0600)."""
    try:
        return os.fstat(stream.fileno()).st_mode & 0o077 == 0
    except (AttributeError, OSError, ValueError):  # a buffer, or closed: no file mode
        return False


def save_map(
    m: folium.Map,
    path: str | os.PathLike,
    overwrite: bool = False,
    *,
    private: bool = True,
    outputs: AtomicOutputs | None = None,
) -> Path:
    """Write ``m`` as one standalone HTML file, atomically.

    Parameters
    ----------
    m : folium.Map
        A map, e.g. from :func:`review_map`.
    path : str or os.PathLike
        Destination (``.html``); its directory is created if needed.
    overwrite : bool, default False
        Replace an existing file. With ``outputs``, whether files may be replaced is
        ``outputs.overwrite`` (``overwrite=True`` is then refused unless it agrees).
    private : bool, default True
        Internal map (the default of :func:`review_map` shows the original points): the file is
        created with mode 0600, readable by its owner only, from its first byte. Pass False
        for a map made with ``public=True`` that others may read (0666 less the umask); any
        other map (internal, or not drawn by :func:`review_map`) is refused with False.
    outputs : geosynth._atomic.AtomicOutputs, optional
        A transaction of the caller (e.g. the command line, which also writes a release and a
        report): the map is staged into it and moved into place by the caller's commit, together
        with the other files. Without it, the map is moved into place at once.

    Returns
    -------
    pathlib.Path
        ``path`` (with ``outputs``: where the map will be once committed).

    Raises
    ------
    geosynth.errors.InputError
        ``m`` is not a folium.Map, ``private=False`` for a map not drawn by
        ``review_map(..., public=True)``, ``path`` is a directory, a named pipe, a device or a
        socket, its folder cannot be written or a name in it is too long, ``path`` exists and
        files may not be replaced, or ``overwrite=True`` with ``outputs`` that may not
        overwrite.
    geosynth.errors.InputTypeError
        ``path`` is not a file path (None, a number, bytes).
    """
    from geosynth.io._files import as_path

    if not isinstance(m, folium.Map):
        raise InputError(f"m must be a folium.Map (e.g. from review_map), got "
                         f"{type(m).__module__}.{type(m).__name__}")
    private = check_bool(private, "private")
    if not private and getattr(m, _PUBLIC_MARK, None) is not True:
        raise InputError("private=False but m is not a public map of review_map(..., "
                         "public=True): an internal review map shows the confidential records "
                         "and must stay readable by its owner only; save it with private=True "
                         "(the default), or draw the map with public=True to share it")
    replace = transaction_overwrite(outputs, overwrite)
    target = as_path(path)  # None, a number or bytes: refused by name
    transaction = AtomicOutputs(overwrite=replace) if outputs is None else outputs
    staged: list[Path] = []
    try:
        staged.append(stage_output(transaction, target, private=private,
                                   example="review.html"))
        with create_new(staged[0], private=private, binary=True) as stream:
            _SAVING.add(id(stream))
            try:
                m.save(stream, close_file=False)
            finally:
                _SAVING.discard(id(stream))
        if outputs is None:
            transaction.commit()
    except BaseException:
        drop_staged(transaction, outputs, staged)
        raise
    return target


# ---------------------------------------------------------------------- validation
def _check_points(frame: Any, name: str) -> None:
    check_geodataframe(frame, name)
    # frame[c] of a repeated name is a frame (a bare error); 0 and "0" were one tooltip field
    check_unique_columns(frame, name, as_text=True)
    point_coordinates(frame, name)


def check_web_crs(crs: Any) -> None:
    """Refuse a CRS that has no transformation to longitude and latitude (EPSG:4326).

    A web map places every layer by longitude and latitude. A local engineering CRS (a site
    grid in metres, which :func:`geosynth.prepare`, the fit and the GeoTIFF take) has none:
    the map failed with PROJ's "Error creating Transformer from CRS", and ``geosynth release
    --map`` failed so after the whole fit (it now checks first).

    Parameters
    ----------
    crs : pyproj.CRS
        The CRS of the points and the lattice.

    Raises
    ------
    geosynth.errors.CRSError
        No transformation to EPSG:4326 exists.
    """
    from pyproj import Transformer
    from pyproj.exceptions import CRSError as ProjCRSError
    from pyproj.exceptions import ProjError

    try:
        Transformer.from_crs(crs, "EPSG:4326", always_xy=True)
    except (ProjError, ProjCRSError):
        raise CRSError(
            f"the points' CRS ({crs.name!r}) has no transformation to longitude and "
            "latitude (EPSG:4326), which a web map needs to place them; reproject the points to "
            "a CRS tied to the Earth (e.g. their UTM zone; CLI: --crs), or draw no map (CLI: "
            "leave out --map)"
        ) from None


def _check_on_the_globe(frame: gpd.GeoDataFrame, name: str) -> None:
    """Refuse points that have no longitude and latitude (outside their CRS's area).

    They became Infinity in the page's GeoJSON, which Leaflet refuses: the saved map opened
    blank, without a word.
    """
    lonlat = shapely.get_coordinates(frame.geometry.to_crs(4326).to_numpy())
    lost = ~np.isfinite(lonlat).all(axis=1)
    if lost.any():
        raise InputError(
            f"{name} has {int(lost.sum())} points that its CRS ({frame.crs.to_string()}) cannot "
            f"place on the globe ({describe_rows(frame.index, lost)}), so a web map cannot "
            "show them: check the CRS of the points (and that the coordinates are in it)"
        )


def _check_releases(releases: Any) -> list[gpd.GeoDataFrame]:
    if isinstance(releases, gpd.GeoDataFrame):
        releases = [releases]
    elif isinstance(releases, (str, bytes, pd.DataFrame)) or not isinstance(releases, Sequence):
        raise InputError(f"releases must be a GeoDataFrame or a list of them, got "
                         f"{type(releases).__name__}")
    releases = list(releases)
    if not releases:
        raise InputError("releases is empty; pass the synthetic releases to draw")
    for number, release in enumerate(releases):
        _check_points(release, f"releases[{number}]")
    return releases


def _check_something_drawn(releases: list[gpd.GeoDataFrame], extents: list) -> None:
    """Refuse a map of nothing; warn of an empty release, whose layer is drawn empty.

    A DP release may be empty (its size is a noisy count): refused, it failed the command
    after the budget was spent, on the noise. A release filtered to no rows by mistake is
    still told.
    """
    empty = [number for number, release in enumerate(releases) if len(release) == 0]
    if not extents:
        raise InputError("every release is empty and there is no lattice or original point to "
                         "draw; pass releases with points (or fit= for the intensity)")
    if empty:
        warnings.warn(f"releases {empty} have no points (an empty release, e.g. filtered to no "
                      "rows, or a DP release of a noisy size 0): their layers are empty",
                      DataWarning, stacklevel=4)


def _check_tiles(tiles: Any) -> None:
    """Refuse a basemap folium cannot draw: the name of a tile provider, a provider or a layer.

    A tile URL needs an attribution, which a :class:`folium.TileLayer` carries.
    """
    import xyzservices

    if tiles is None or isinstance(tiles, xyzservices.TileProvider | folium.TileLayer):
        return
    if isinstance(tiles, str):
        try:
            xyzservices.providers.query_name(
                "OpenStreetMap Mapnik" if tiles.lower() == "openstreetmap" else tiles)
            return
        except ValueError:
            pass
    raise InputError(
        f"tiles must name a tile provider of xyzservices (e.g. 'OpenStreetMap' or "
        f"'CartoDB positron'), or be an xyzservices.TileProvider or a folium.TileLayer (e.g. "
        f"folium.TileLayer(url, attr=...) for a tile URL, which needs its attribution), got "
        f"{describe_value(tiles)}"
    )


def _common_crs(original: gpd.GeoDataFrame | None, releases: list[gpd.GeoDataFrame]):
    frames = ([("original", original)] if original is not None else []) + [
        (f"releases[{number}]", release) for number, release in enumerate(releases)
    ]
    for name, frame in frames:
        if frame.crs is None:
            raise CRSError(f"{name} has no CRS; set it with {name}.set_crs(...) so the points "
                           "can be placed on the map")
    name0, frame0 = frames[0]
    for name, frame in frames[1:]:
        if not frame.crs.equals(frame0.crs):
            raise CRSError(f"{name} is in {frame.crs.to_string()} but {name0} is in "
                           f"{frame0.crs.to_string()}; reproject with {name}.to_crs({name0}.crs)")
    return frame0.crs


def _check_fit(fit: Any, grid: Any, combination: Any, crs: Any):
    """Validate fit, grid and combination; return (fit, grid, λ column or None, label)."""
    from geosynth.lattice import Grid
    from geosynth.model.results import check_fit

    if fit is not None:
        check_fit(fit)
    if grid is not None and not isinstance(grid, Grid):
        raise InputError(f"grid must be a geosynth.Grid, got {type(grid).__name__}")
    if isinstance(combination, bool) or not isinstance(combination, numbers.Integral):
        raise InputError(f"combination must be an int (a row of fit.counts.combos), got "
                         f"{combination!r}")
    if grid is None and fit is not None:
        grid = fit.grid
    if grid is not None and (grid.crs is None or not grid.crs.equals(crs)):
        raise CRSError(f"grid is in {grid.crs} but the points are in {crs.to_string()}; build "
                       "the grid in the CRS of the data")
    if fit is None:
        return None, grid, None, None
    lam = fit.posterior_mean_lambda()
    n_cells, n_combos = lam.shape
    if grid.n_cells != n_cells:
        raise InputError(f"grid has {grid.n_cells} cells but fit has {n_cells}; pass the grid the "
                         "fit was prepared on (or omit grid to use fit.grid)")
    if grid != fit.grid:  # of as many cells, elsewhere or transposed: λ drawn on wrong cells
        raise InputError("grid is not the lattice fit was prepared on (as many cells, but other "
                         "ones); pass fit.grid (or omit grid)")
    if not 0 <= combination < n_combos:
        raise InputError(f"combination must be in [0, {n_combos}) (rows of fit.counts.combos), "
                         f"got {combination}")
    label = fit.counts.combination_labels(sep=", ")[int(combination)]
    return fit, grid, lam[:, int(combination)], label


def check_drawn(releases: Sequence[int], original: int | None, max_points: int | None,
                linked: bool) -> int:
    """Return how many points and lines a review map draws; refuse more than :data:`MAX_DRAWN`.

    Parameters
    ----------
    releases : sequence of int
        The rows of each release.
    original : int or None
        The rows of the original (an internal map), or None (a public one).
    max_points : int or None
        The cap per layer (:func:`review_map`), or None for every point.
    linked : bool
        Whether each drawn release point has its displacement line.

    Returns
    -------
    int

    Raises
    ------
    geosynth.errors.InputError
        More than :data:`MAX_DRAWN`, naming ``max_points`` and the largest that fits.
    """
    def capped(n: int) -> int:
        return n if max_points is None else min(n, max_points)

    points = sum(capped(n) for n in releases)
    drawn = points * (2 if linked else 1) + (0 if original is None else capped(original))
    if drawn > MAX_DRAWN:
        layers = len(releases) * (2 if linked else 1) + (original is not None)
        raise InputError(
            f"the map would draw {drawn:,} points and lines, more than the {MAX_DRAWN:,} a "
            f"browser page holds (and its build, memory); pass max_points={MAX_DRAWN // layers:,} "
            "or fewer (it draws a fixed random subset per layer)"
            + ("" if max_points is None else f", got {max_points:,}")
        )
    return drawn


def _check_max_points(max_points: Any) -> int | None:
    if max_points is None:
        return None
    if isinstance(max_points, bool) or not isinstance(max_points, numbers.Integral) \
            or max_points < 1:
        raise InputError(f"max_points must be None or an int >= 1, got {max_points!r}")
    return int(max_points)


def _check_linked(linked: Any, public: bool, original: Any,
                  releases: list[gpd.GeoDataFrame]) -> bool:
    if linked is not None:
        linked = check_bool(linked, "linked")
    if public:
        if linked:
            raise InputError("linked=True contradicts public=True: a public map never links "
                             "synthetic records to the original ones")
        return False
    if linked is False:
        return False
    if not original.index.is_unique:
        if linked:
            raise InputError("linked=True but original has duplicated index labels, so records "
                             "cannot be paired; pass linked=False or give each record a label")
        return False
    for number, release in enumerate(releases):
        labels_ok = release.index.is_unique and release.index.isin(original.index).all()
        if linked is None:
            meta = release.attrs.get("geosynth")
            if not (labels_ok and isinstance(meta, dict) and "epsilon" not in meta):
                return False
        elif not labels_ok:
            raise InputError(f"linked=True but releases[{number}] holds index labels that are "
                             "duplicated or not in original; pass linked=False")
    return True


# ---------------------------------------------------------------------- layers
def _public_form(release: gpd.GeoDataFrame) -> gpd.GeoDataFrame:
    """Release without index, internal or extra geometry columns or z/m values, rows in order.

    Rows are ordered by content (coordinates, then the other columns); of ``attrs`` only the
    record of the columns the synthesizer made is kept.
    """
    geometry = release.geometry.name
    keep = [c for c in release.columns if c == geometry or not (
        isinstance(release[c].dtype, gpd.array.GeometryDtype)
        or (isinstance(c, str) and c.startswith(INTERNAL_PREFIX)))]
    frame = release[keep]
    xy = point_coordinates(frame, "release")
    attributes = [c for c in keep if c != geometry]
    tie_break = (frame[attributes].astype(str).agg("\x1f".join, axis=1).to_numpy()
                 if attributes and len(frame) else np.zeros(len(frame)))
    order = np.lexsort((tie_break, xy[:, 1], xy[:, 0]))
    public = gpd.GeoDataFrame(frame.iloc[order].reset_index(drop=True), geometry=geometry,
                              crs=release.crs)
    public[geometry] = public.geometry.force_2d()  # a z or m value would be in the GeoJSON
    public.attrs = {}
    keep_recorded_columns(release, public)  # which columns its synthesizer made
    return public


def _refuse_original_locations(releases: list[gpd.GeoDataFrame], original: Any) -> None:
    """Refuse releases of a public map that hold records' locations, exactly or nearly.

    The confidential frame itself (or rows of it) passed as a release was drawn as a public
    layer, with every coordinate and column of the records; so was a near copy of it (rounded
    to the millimetre, shifted by 1 mm, or reprojected there and back), which escaped a test of
    exact equality. A release is refused when one of its points is at a record's exact location
    (a continuous placement never lands there) or when more of its points lie within
    0.1 m (or a finer radius, down to 1 µm) of a record than chance placement explains
    (:func:`geosynth._points.near_copies`; three records moved by 1 cm among 200 synthetic
    points passed a test at 0.1 m alone).
    A release that carries neither the record of the synthesizer that drew it (which
    :func:`geosynth.to_public` keeps) nor the mark of :func:`geosynth.io.read_release` is
    warned about, with ``original`` or without: ``to_public(original)`` is marked public like
    any release, and its map published every record without a word; a copy of the records
    moved by 5 m, or rounded to 10 m, passes the checks against ``original`` (and it went
    unwarned when ``original`` was given). With ``original``, a float column holding records'
    coordinates is refused too (:func:`_coordinate_columns`).
    """
    if original is not None:
        _refuse_records_in(releases, original)
    check = ("pass original= to have its points checked against the records" if original is None
             else "its points are not near the records', but a copy moved or rounded by more "
             f"than {NEAR_M:g} m would not be either")
    for number, release in enumerate(releases):
        if release_info(release) is None and not is_published(release):
            warnings.warn(
                f"releases[{number}] carries no record of the geosynth synthesizer that drew "
                "it (geosynth.to_public keeps it) and was not read from a release file "
                "(read_release): it may be the confidential points themselves, "
                f"to_public(original) or a masked copy included; {check}",
                PrivacyLeakWarning,
                stacklevel=3,
            )


def _refuse_records_in(releases: list[gpd.GeoDataFrame], original: gpd.GeoDataFrame) -> None:
    """Refuse releases holding records' coordinates (columns, exact or near points)."""
    locations = point_coordinates(original, "original")
    for number, release in enumerate(releases):
        columns = _coordinate_columns(release, locations, original.crs)
        if columns:
            raise InputError(
                f"releases[{number}] has numeric columns {columns} holding coordinates of "
                "records of original, exactly or rounded (more values meet them than chance "
                "explains): a public map would publish them; drop them "
                f"(release.drop(columns=...)), or {_ORIGINAL_FIX}"
            )
    for number, release in enumerate(releases):
        copies = at_locations(point_coordinates(release, f"releases[{number}]"), locations)
        if copies.any():
            raise InputError(
                f"releases[{number}] has {int(copies.sum())} of its {len(release)} points at the "
                "exact location of a record of original (is it the confidential frame?): a "
                f"public map would publish them; {_ORIGINAL_FIX}"
            )
    metric = metric_coordinates(np.unique(locations, axis=0), original.crs)
    for number, release in enumerate(releases):
        near, expected, radius = near_copies(
            metric_coordinates(point_coordinates(release, f"releases[{number}]"), original.crs),
            metric)
        if near:
            raise InputError(
                f"releases[{number}] has {near} of its {len(release)} points within "
                f"{radius:g} m of a record of original, where points placed independently of "
                f"the records would put about {expected:.2g} (a chance of less than "
                f"{NEAR_ALPHA:g} of so many): they are records' locations rounded, shifted or "
                "reprojected (a copy of the confidential points, or records edited into a "
                f"release), and a public map would publish them; {_ORIGINAL_FIX}"
            )


def _coordinate_columns(release: gpd.GeoDataFrame, locations: np.ndarray, crs: Any) -> list[str]:
    """Numeric columns of ``release`` holding records' x or y, exactly or rounded.

    The records' eastings and northings added as columns passed the checks of the points:
    a synthetic continuous value lands on a coordinate with probability 0, and one may by
    rounding, so two equal values are asked for (of a column whose values lie on no decimal
    grid: whole numbers meet whole eastings by chance); and, rounded to the metre, the
    decimetre or the centimetre (or shifted that little), as floats or as integers, they
    passed as values (:func:`_near_coordinates`, in the CRS's units: ``crs``).
    """
    axes = [np.unique(locations[:, k]) for k in (0, 1)]
    per_metre = 1.0 / metres_per_unit(crs)
    found = []
    for column in release.columns:
        values = release[column]
        if column == release.geometry.name or values.dtype.kind not in "iuf":
            continue
        values = values.to_numpy(dtype=np.float64)
        values = np.unique(values[np.isfinite(values)])  # tied rows hit or miss together
        tested = values if values.size <= _MAX_TESTED else np.sort(
            np.random.default_rng(0).choice(values, _MAX_TESTED, replace=False))
        grid = _decimal_step(tested)
        if any((grid == 0.0 and np.isin(values, axis).sum() >= 2)
               or _near_coordinates(tested, axis, per_metre, grid) for axis in axes):
            found.append(str(column))
    return found


#: Half the rounding steps of coordinates that :func:`_near_coordinates` looks for (metres),
#: the shifts, in steps, of the values that measure chance hits, and the most distinct values
#: it tests (a fixed random subset beyond: 10^6 values took 4 s a column).
_ROUNDINGS_M = (0.5, 0.05, 0.005)
_CHANCE_SHIFTS = np.array([-11.0, -7.0, -5.0, -3.0, 3.0, 5.0, 7.0, 11.0])
_MAX_TESTED = 200_000


def _near_coordinates(values: np.ndarray, coordinates: np.ndarray, per_metre: float,
                      grid: float) -> bool:
    """Tell whether more distinct ``values`` lie within d of a coordinate than chance explains.

    For each d of :data:`_ROUNDINGS_M` (in CRS units, ``per_metre`` of them a metre: in degrees
    the rounding steps were half a degree, and every column near the records' longitudes was
    refused): the hits of the sorted distinct values against the sorted distinct
    ``coordinates``, against the mean hits of the values shifted by 3 to 11 steps (rounded
    coordinates lose their matches; a measurement independent of the records' locations keeps
    as many, whatever its distribution), at least 1. A step is the rounding step 2d or the
    values' own decimal grid ``grid`` if coarser (:func:`_decimal_step`): whole dollars shifted by
    hundredths never met eastings to the metre, and were judged a copy of them. Distinct
    values, as rows sharing one hit or miss together. Judged by the Chernoff bound at
    :data:`geosynth._points.NEAR_ALPHA` over the three scales.
    """
    if values.size < 3 or coordinates.size < 2:
        return False
    alpha = np.log(NEAR_ALPHA / len(_ROUNDINGS_M))

    def hits(shifted: np.ndarray, d: float) -> int:
        at = np.clip(np.searchsorted(coordinates, shifted), 1, coordinates.size - 1)
        gap = np.minimum(np.abs(shifted - coordinates[at - 1]), np.abs(shifted - coordinates[at]))
        return int((gap <= d).sum())

    for d in (metres * per_metre for metres in _ROUNDINGS_M):
        found = hits(values, d)
        step = max(2 * d, grid)
        chance = float(np.mean([hits(values + step * s, d) for s in _CHANCE_SHIFTS]))
        if log_chance_of_as_many(found, max(chance, 1.0)) < alpha:
            return True
    return False


def _decimal_step(values: np.ndarray) -> float:
    """Return the coarsest power of ten (1e-9 to 1e6) every value is a multiple of, else 0.

    A multiple up to float64 rounding (four spacings of the value): 600123.45 is one of 0.01.
    """
    slack = 4 * np.spacing(np.abs(values))
    for exponent in range(6, -10, -1):
        step = 10.0**exponent
        if np.all(np.abs(values - np.round(values / step) * step) <= slack):
            return step
    return 0.0


def _check_public_columns(releases: list[gpd.GeoDataFrame], original: Any, fit: Any) -> None:
    """Refuse the columns of public releases that a release file may not hold either.

    A column named like a record or cell identifier (an ``index`` column of patient ids left
    by ``reset_index()``, a ``patient_id``) unless ``fit``'s model releases it (an attribute
    ``region_id``), or, with ``original``, whose distinct values are its index labels; and,
    given ``fit``, any column its model does not release (without it, any column the release's
    synthesizer did not record making; and without such a record any column), and values
    changed since the synthesizer drew them, as :func:`geosynth.write_release` refuses (an
    ``orig_x`` column reached the map's HTML).
    """
    from geosynth.io.release import (
        check_edited_columns,
        check_model_columns,
        check_release_columns,
        released_columns,
    )

    labels = None if original is None else original.index
    released = frozenset() if fit is None else released_columns(
        {"attributes": list(fit.counts.attributes), "continuous": fit.counts.continuous})
    for number, release in enumerate(releases):
        name, geometry = f"releases[{number}]", release.geometry.name
        check_release_columns(release, geometry, name, labels,
                              "drop it (release.drop(columns=...)) before drawing a public map",
                              released=released)
        check_model_columns(release, geometry, name, None if fit is None else released)
        check_edited_columns(release, name)


def _subsample(frame: gpd.GeoDataFrame, max_points: int | None) -> gpd.GeoDataFrame:
    if max_points is None or len(frame) <= max_points:
        return frame
    rng = np.random.default_rng(_SUBSAMPLE_SEED)
    return frame.iloc[np.sort(rng.choice(len(frame), size=max_points, replace=False))]


def _geojson(frame: gpd.GeoDataFrame) -> dict:
    """FeatureCollection in EPSG:4326 without the index (feature ids are row positions).

    Built from the coordinate and column arrays (no per-row conversion through a JSON text);
    the properties are those of :meth:`geopandas.GeoDataFrame.to_json` (missing values null),
    with the data's text HTML-escaped (:func:`_property_values`).
    """
    geometry = frame.geometry.name
    columns = [c for c in frame.columns
               if c != geometry and not isinstance(frame[c].dtype, gpd.array.GeometryDtype)]
    values = _property_values(frame, columns)
    keys = [str(c) for c in columns]
    shapes = _geometries(frame.geometry.to_crs(4326))
    rows = zip(*values, strict=True) if values else [()] * len(shapes)
    features = [{"type": "Feature", "id": number,
                 "properties": dict(zip(keys, row, strict=True)), "geometry": shape}
                for number, (shape, row) in enumerate(zip(shapes, rows, strict=False))]
    return {"type": "FeatureCollection", "features": features}


def _property_values(frame: gpd.GeoDataFrame, columns: list) -> list[list]:
    """Each column's values as JSON-ready Python values, the data's text HTML-escaped.

    folium's tooltips fill their table with innerHTML: strings are escaped, and so is the JSON
    text of a list or dict (the tooltip shows ``JSON.stringify(value)``). Missing values are
    None (null).

    Raises
    ------
    geosynth.errors.InputError
        A column holds values JSON cannot write (bytes, sets, ...); date/times are written as
        ISO 8601 text.
    """
    result, refused = [], []
    for column in columns:
        series = frame[column]
        if series.dtype.kind in "Mm":  # a date/time attribute failed the map after the fit
            values = [None if pd.isna(v) else _time_text(v) for v in series.tolist()]
        else:
            values = series.astype(object).to_numpy(copy=True)
            values[series.isna().to_numpy()] = None
            values = values.tolist()
        try:
            json.dumps(values)
        except (TypeError, ValueError) as err:
            refused.append((str(column), err))
            continue
        if not pd.api.types.is_numeric_dtype(series.dtype):  # text, categories, objects
            values = [_escaped(value) for value in values]
        result.append(values)
    if refused:
        raise InputError(
            f"cannot draw a layer: its column(s) {[name for name, _ in refused]} hold values a "
            f"web map cannot show ({refused[0][1]}); decode or drop them before drawing the map"
        )
    return result


def _time_text(value: pd.Timestamp | pd.Timedelta) -> str:
    """Write a date/time as ISO 8601 text (``2020-03-01T08:00:00``), a duration as pandas does."""
    return value.isoformat() if isinstance(value, pd.Timestamp) else str(value)


def _escaped(value: Any) -> Any:
    """``value`` with its text HTML-escaped: a str, or the JSON text of a list or dict."""
    if isinstance(value, str):
        return html.escape(value)
    if isinstance(value, dict | list | tuple):
        return html.escape(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
    return value


def _geometries(geometry: gpd.GeoSeries) -> list[dict]:
    """GeoJSON geometries of ``geometry`` (EPSG:4326), coordinates as lists of floats.

    Points, and line strings of equally many vertices (the displacement lines), are read from
    :func:`shapely.get_coordinates` at once; other shapes (cells) one by one.
    """
    array = geometry.array
    kinds = set(shapely.get_type_id(array).tolist())
    has_z = shapely.has_z(array)
    counts = shapely.get_num_coordinates(array)
    if kinds == {0} and (has_z.all() or not has_z.any()):  # z as geopandas writes it
        xy = shapely.get_coordinates(array, include_z=bool(has_z.all()))
        return [{"type": "Point", "coordinates": c} for c in xy.tolist()]
    if kinds == {1} and len(set(counts.tolist())) == 1 and not has_z.any():
        lines = shapely.get_coordinates(array).reshape(len(array), int(counts[0]), 2)
        return [{"type": "LineString", "coordinates": c} for c in lines.tolist()]
    return json.loads(json.dumps([shapely.geometry.mapping(shape) for shape in array]))


def _tooltip(frame: gpd.GeoDataFrame, aliases: list[str] | None = None):
    fields = [str(c) for c in frame.columns if c != frame.geometry.name
              and not isinstance(frame[c].dtype, gpd.array.GeometryDtype)]
    if not fields:
        return None
    # Shown as HTML (innerHTML): column names are the data's text too.
    shown = [html.escape(alias) for alias in (fields if aliases is None else aliases)]
    # Not localized: toLocaleString() keeps 3 decimals, and a cell's posterior mean λ of
    # 0.00049 (common on fine lattices) read "0".
    return _GeoJsonTooltip(fields, aliases=shown, localize=False)


def _add_points(m: folium.Map, frame: gpd.GeoDataFrame, name: str, color: str) -> None:
    style = {"color": color, "fillColor": color, "weight": 1, "fillOpacity": 0.7}
    # folium checks a tooltip's fields against the features: an empty layer has none
    _Layer(_geojson(frame), name, style, tooltip=_tooltip(frame) if len(frame) else None,
           marker=folium.CircleMarker(radius=3, fill=True)).add_to(m)


def _linear_colormap(name: str, values: np.ndarray, caption: str):
    import branca.colormap as bcm

    vmin, vmax = float(np.min(values)), float(np.max(values))
    if not vmax > vmin:  # constant values: a degenerate scale would divide by zero
        vmax = vmin + 1.0
    colormap = getattr(bcm.linear, name).scale(vmin, vmax)
    colormap.caption = caption
    colormap.width = 320  # two legends side by side fit a laptop screen
    colormap.tick_labels = [float(f"{tick:.3g}") for tick in np.linspace(vmin, vmax, 5)]
    return colormap


def _colours(colormap: Any, values: np.ndarray) -> np.ndarray:
    """``colormap(value)`` ("#rrggbbaa") of each value, computed as branca does, at once.

    :meth:`branca.colormap.LinearColormap.rgba_floats_tuple`: the colours of the index values
    around ``x`` mixed in proportion, the end colours beyond the ends; each channel then
    becomes ``int(u * 255.9999)``.
    """
    index = np.asarray(colormap.index, dtype=float)
    colors = np.asarray(colormap.colors, dtype=float)
    x = np.asarray(values, dtype=float)
    upper = np.clip(np.searchsorted(index, x, side="left"), 1, len(index) - 1)
    low, high = index[upper - 1], index[upper]
    with np.errstate(divide="ignore", invalid="ignore"):
        p = np.where(low < high, (x - low) * 1.0 / (high - low), 1.0)[:, None]
    rgba = (1.0 - p) * colors[upper - 1] + p * colors[upper]
    rgba = np.where((x <= index[0])[:, None], colors[0], rgba)
    rgba = np.where((x >= index[-1])[:, None], colors[-1], rgba)
    channels, codes = np.unique((rgba * 255.9999).astype(np.int64), axis=0, return_inverse=True)
    palette = np.array(["#" + "".join(f"{u:02x}" for u in row) for row in channels.tolist()])
    return palette[codes.reshape(-1)]


def _add_intensity(m: folium.Map, grid: Grid, lam: np.ndarray, label: str,
                   counts: CountTable | None, combination: int) -> None:
    """Draw the posterior mean λ of each cell; on an internal map, with the counts fitted.

    The counts of a DP fit are noisy (negative ones too): the tooltip read "records
    (original)" over them, and a reviewer took "-3" or "8" for the confidential truth.
    """
    cells = grid.cells[["cell_id", "geometry"]].copy()
    cells["lambda"] = lam
    aliases = ["cell", "posterior mean λ"]
    if counts is not None:
        cells["records"] = np.asarray(counts.counts[:, combination], dtype=np.int64)
        aliases.append("records (original)" if isinstance(counts, CellCounts)
                       else NOISY_COUNTS)
    colormap = _linear_colormap("YlOrRd_09", lam, "Posterior mean λ per cell")
    _Layer(_geojson(cells), intensity_layer_name(label),
           {"color": "#666666", "weight": 0.5, "fillOpacity": 0.6},
           colours=("fillColor", _colours(colormap, lam)),
           tooltip=_tooltip(cells, aliases)).add_to(m)
    colormap.add_to(m)


def _add_links(m: folium.Map, grid: Grid) -> None:
    """Draw the links cut across barriers and the links of islands, where the lattice has any.

    A cut link is the segment that crossed a barrier (:attr:`Grid.cut_segments`, between the
    points that decided it); an island's link joins the two cells' :attr:`Grid.link_points`
    (those its test across barriers used). A reviewer sees which banks a river separates and
    where an island was joined.
    """
    points = grid.link_points
    islands = np.asarray(grid.linked_islands, dtype=np.int64)
    for pairs, segments, name, style in (
        (grid.cut_links, grid.cut_segments, CUT_LINKS_LAYER,
         {"color": "#b00020", "weight": 2, "dashArray": "4 4"}),
        (islands, shapely.shortest_line(points[islands[:, 0]], points[islands[:, 1]]),
         ISLAND_LINKS_LAYER, {"color": "#1f77b4", "weight": 2}),
    ):
        if len(pairs) == 0:
            continue
        lines = gpd.GeoDataFrame({"cell": pairs[:, 0], "neighbour": pairs[:, 1]},
                                 geometry=np.asarray(segments), crs=grid.crs)
        _Layer(_geojson(lines), name, style, tooltip=_tooltip(lines)).add_to(m)


def _add_displacement(m: folium.Map, original: gpd.GeoDataFrame,
                      releases: list[gpd.GeoDataFrame], crs: Any) -> None:
    frames = []
    for number, release in enumerate(releases, start=1):
        start = point_coordinates(original.loc[release.index], "original")
        end = point_coordinates(release, f"releases[{number - 1}]")
        frames.append(pd.DataFrame({
            "release": number,
            "displacement": _distances(start, end, crs),
            "geometry": shapely.linestrings(np.stack([start, end], axis=1)),
        }))
    lines = gpd.GeoDataFrame(pd.concat(frames, ignore_index=True), geometry="geometry", crs=crs)
    unit = "metre" if crs.is_geographic else crs.axis_info[0].unit_name
    unit = {"metre": "m", "foot": "ft", "US survey foot": "US ft"}.get(unit, unit)
    displacement = lines["displacement"].to_numpy()
    colormap = _linear_colormap("plasma", displacement, f"Displacement ({unit})")
    _Layer(_geojson(lines), DISPLACEMENT_LAYER, {"weight": 1.5, "opacity": 0.8},
           colours=("color", _colours(colormap, displacement)), show=False,
           tooltip=_tooltip(lines, ["release", f"displacement ({unit})"])).add_to(m)
    colormap.add_to(m)


def _distances(start: np.ndarray, end: np.ndarray, crs: Any) -> np.ndarray:
    """Euclidean distance in CRS units; geodesic metres for a geographic CRS."""
    if not crs.is_geographic:
        return np.hypot(*(end - start).T)
    from pyproj import Geod

    geod = Geod(ellps="WGS84")
    _, _, dist = geod.inv(start[:, 0], start[:, 1], end[:, 0], end[:, 1])
    return np.asarray(dist, dtype=float)


def _bounds_4326(extents: np.ndarray, crs: Any) -> tuple[float, float, float, float]:
    """(lon min, lat min, lon max, lat max) of stacked (xmin, ymin, xmax, ymax) rows."""
    from pyproj import Transformer

    xmin, ymin = extents[:, 0].min(), extents[:, 1].min()
    xmax, ymax = extents[:, 2].max(), extents[:, 3].max()
    transformer = Transformer.from_crs(crs, "EPSG:4326", always_xy=True)
    return transformer.transform_bounds(xmin, ymin, xmax, ymax, densify_pts=21)


# ---------------------------------------------------------------------- page elements
class _TextMacro(MacroElement):
    """MacroElement whose rendered header, html and script join the page as text.

    branca's :meth:`~branca.element.MacroElement.render` wraps each rendered part in an
    ``Element``, whose template compiles it again as Jinja: the data's text written into it
    (GeoJSON, column names, attribute levels) was evaluated (``{{ 7*7 }}`` became ``49``, and
    any expression ran), and compiling the embedded GeoJSON of a large layer took minutes.
    """

    def render(self, **kwargs) -> None:
        """Add the rendered parts to the page's Figure, then render the children."""
        figure = self.get_root()
        if not isinstance(figure, Figure):
            raise TypeError(f"a {type(self).__name__} must be in a branca Figure to be rendered")
        macros = self._template.module.__dict__
        for part in ("header", "html", "script"):
            if macros.get(part) is not None:
                getattr(figure, part).add_child(RawText(str(macros[part](self, kwargs))),
                                                name=self.get_name())
        for child in self._children.values():
            child.render(**kwargs)


# Layers' JSON without the spaces of ", " and ": " (|tojson still escapes <, >, & and ').
_JSON_ENV = jinja2.Environment()
_JSON_ENV.policies["json.dumps_kwargs"] = {"separators": (",", ":")}


class _Layer(folium.GeoJson, _TextMacro):
    """GeoJSON layer drawn with one style (a constant, or a colour per feature from a palette).

    The style is JavaScript of the page (no per-feature style function in Python, no style
    table per feature id); point features are circle markers of ``marker``'s options.
    """

    _template = _JSON_ENV.from_string("""
{% macro script(this, kwargs) %}
    {%- if this.colour_key %}
    var {{ this.get_name() }}_colours = {{ this.palette|tojson }};
    var {{ this.get_name() }}_codes = {{ this.codes|tojson }};
    {%- endif %}
    function {{ this.get_name() }}_style(feature) {
        var style = {{ this.base_style|tojson }};
        {%- if this.colour_key %}
        style[{{ this.colour_key|tojson }}] =
            {{ this.get_name() }}_colours[{{ this.get_name() }}_codes[feature.id]];
        {%- endif %}
        return style;
    }
    var {{ this.get_name() }} = L.geoJson(null, {
        style: {{ this.get_name() }}_style,
        {%- if this.marker %}
        pointToLayer: function (feature, latlng) {
            return L.circleMarker(latlng, Object.assign(
                {{ this.marker.options|tojson }}, {{ this.get_name() }}_style(feature)));
        },
        {%- endif %}
    });
    {{ this.get_name() }}.addData({{ this.data|tojson }});
{% endmacro %}
""")

    def __init__(self, data: dict, name: str, style: dict, *,
                 colours: tuple[str, np.ndarray] | None = None, **kwargs: Any) -> None:
        super().__init__(data, name=name, **kwargs)
        self.base_style = style
        self.colour_key, self.palette, self.codes = None, [], []
        if colours is not None:
            palette, codes = np.unique(colours[1], return_inverse=True)
            self.colour_key = colours[0]
            self.palette, self.codes = palette.tolist(), codes.reshape(-1).tolist()


class _GeoJsonTooltip(folium.GeoJsonTooltip, _TextMacro):
    """folium's GeoJSON tooltip, its script (column names) never compiled as Jinja."""


class _LayerControl(folium.LayerControl, _TextMacro):
    """folium's layer control, its script (layer names) never compiled as Jinja."""
