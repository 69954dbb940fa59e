"""Reading public polygon layers: a study region, excluded (no-go) areas, areal units.

One reader for Python and the command line (``--region``, ``--exclude``, ``--areas``): the layer
of a file of several chosen as :func:`geosynth.io.read_points` chooses one, a ``.zip`` archive
read as it reads one (:mod:`geosynth.io._vector`), and the polygons checked as the lattice checks
them (:func:`geosynth.lattice.check_polygons`), so that a refusal names the file.
"""

from __future__ import annotations

import os
import warnings

import geopandas as gpd
import numpy as np
import pyogrio

from geosynth._validation import check_bool, check_optional_str
from geosynth.errors import DataWarning, InputError
from geosynth.io._files import existing_file, printable
from geosynth.io._vector import (
    LayerOption,
    check_shapefile_complete,
    choose_layer,
    vector_source,
)
from geosynth.lattice import check_polygons

__all__ = ["read_polygons"]

#: How messages of a Python call name the layer parameter (the command line gives its option).
_LAYER = LayerOption(None, "layer")
#: What the reader of a file fails with, besides the errors geosynth raises.
_UNREADABLE = (pyogrio.errors.DataSourceError, pyogrio.errors.DataLayerError, ValueError)


def read_polygons(
    path: str | os.PathLike,
    layer: str | None = None,
    *,
    name: str | None = "polygons",
    option: str | None = None,
    lines: bool = False,
) -> gpd.GeoDataFrame:
    """Read a polygon layer (study region, excluded areas, areal units), checked for the lattice.

    A file of several layers (a municipal GeoPackage of districts, parks and rivers; a zipped
    folder of shapefiles) is read at ``layer``. Without ``layer``, its only layer is read, or of
    several its only layer of polygons (said in a warning), and a file with several such layers,
    or with layers of unknown geometry type, is refused naming every layer: reading the first
    one, whatever it held, would make a river or the parks the study region. A ``.zip`` archive
    is read as :func:`read_points` reads one (its one dataset, or its shapefiles all in one
    folder, as layers; :func:`vector_source`), the layer chosen as it chooses one
    (:func:`choose_layer`), and a shapefile (plain or zipped) without its ``.dbf`` or cut short
    is refused (:func:`check_shapefile_complete`).

    Parameters
    ----------
    path : str or os.PathLike
        The file (any format GDAL reads: GeoPackage, shapefile, GeoJSON, FlatGeobuf, ...; in a
        ``.zip``, a ``.shp``, ``.gpkg``, ``.geojson``, ``.json`` or ``.fgb`` dataset).
    layer : str, optional
        The layer to read of a file of several (a GeoPackage, or a ``.zip`` of shapefiles in one
        folder, each shapefile a layer named as its file without ``.shp``).
    name : str or None, default "polygons"
        What messages call the polygons, before the file's name, e.g. ``"region"`` or
        ``"exclude"`` for those passed on as ``Grid.from_points(region=..., exclude=...)``
        (``"region city.gpkg has 3 layers: ..."``); None names the file alone.
    option : str, optional
        For the command line: the option that named the file, e.g. ``"--region"``. Messages
        then name it instead of ``name`` and ``path``, and its layer option
        (``option + "-layer"``, ``--region-layer``) instead of ``layer=``.
    lines : bool, default False
        Read lines too (LineString, MultiLineString): the barriers of
        :meth:`geosynth.Grid.without_links_across` (CLI: ``--barriers``). Of a file of several
        layers, its only line layer is then the one read without ``layer``.

    Returns
    -------
    geopandas.GeoDataFrame
        The layer's records, Polygon and MultiPolygon geometries (and lines, with ``lines``),
        in the file's CRS (None if it has none), with a ``RangeIndex``.

    Warns
    -----
    geosynth.errors.DataWarning
        A file of several layers was read at its only polygon layer, no ``layer`` given.

    Raises
    ------
    geosynth.errors.InputError
        The file does not exist or cannot be read (a ``.zip`` that is no zip archive, or holds
        no dataset or several not of one folder of shapefiles; a shapefile without ``.dbf`` or
        truncated), has no layer named ``layer``, has several layers and no ``layer`` picks one
        (the message names every layer with its geometry type), holds no polygon (no record, or
        only missing or empty geometries), or holds geometries other than polygons.
    geosynth.errors.InputTypeError
        ``path`` is not a file path, or ``layer``, ``name`` or ``option`` not a str (or None).
    geosynth.errors.GridError
        Invalid polygons (the lattice's check, :func:`geosynth.lattice.check_polygons`).

    Examples
    --------
    >>> region = read_polygons("municipio.gpkg", layer="limite", name="region")  # doctest: +SKIP
    >>> grid = geosynth.Grid.from_points(points, cell_size=250, region=region)  # doctest: +SKIP
    """
    for parameter, value in (("layer", layer), ("name", name), ("option", option)):
        check_optional_str(value, parameter)
    lines = check_bool(lines, "lines")
    source = existing_file(path, option or "path")  # a pipe would block the reader
    wanted = "line or polygon" if lines else "polygon"
    label = option or (printable(name) if name else "")
    shown = f"{label} {printable(source.name)}" if label else printable(source.name)
    dataset = vector_source(source, shown)
    try:
        layers = pyogrio.list_layers(dataset.path)
    except _UNREADABLE as err:
        raise InputError(f"cannot read {shown}: {printable(err)[:300]}") from err
    layer_option = LayerOption(f"{option}-layer") if option else _LAYER
    chosen, note = choose_layer(layers, shown, "line" if lines else "polygon", layer_option,
                                layer)
    if note is not None:  # as read_points says it (the command line shows it as a warning)
        warnings.warn(note, DataWarning, stacklevel=2)
    check_shapefile_complete(source, dataset, shown, chosen)
    try:
        frame = gpd.read_file(dataset.path, engine="pyogrio", layer=chosen)
    except _UNREADABLE as err:
        raise InputError(f"cannot read {shown}: {printable(err)[:300]}") from err
    if not isinstance(frame, gpd.GeoDataFrame) or (frame.geometry.is_empty
                                                     | frame.geometry.isna()).all():
        raise InputError(f"{shown} has no {wanted}; give a {wanted} layer")
    allowed = {"Polygon", "MultiPolygon"} | ({"LineString", "MultiLineString"} if lines else set())
    kinds = sorted(set(frame.geom_type.dropna()) - allowed)
    if kinds:
        raise InputError(f"{shown} holds {kinds} geometries; give a {wanted} layer "
                         f"(buffer {'points' if lines else 'points or lines'} first)")
    # The lattice's own check of the polygons (validity above all), here so that a refusal
    # names the file (and the option), not only the parameter ("region has invalid polygons").
    check_polygons(np.asarray(frame.geometry.array, dtype=object), shown, None, lines=lines)
    return frame
