"""Files in and out: confidential points, public polygons, GeoPackage releases and GeoTIFFs.

* :func:`read_points` -- the confidential records from a GeoPackage, GeoParquet, shapefile or
  CSV file, as a point GeoDataFrame.
* :func:`read_polygons` -- a public polygon layer (a study region, excluded areas, areal units)
  of a GeoPackage, shapefile, GeoJSON, zip... file, checked as the lattice checks polygons: the
  reader of the command line's ``--region``, ``--exclude`` and ``--areas`` too.
* :func:`write_release` / :func:`read_release` -- a release as one GeoPackage: layers
  ``synthetic_1`` .. ``synthetic_m`` (the synthetic records), ``grid`` (the lattice cells,
  optionally with the posterior mean intensity) and ``metadata`` (a non-spatial ``key, value``
  table of JSON values following geosynth's schema, whose last row ``complete`` marks a
  completely written file). Seeds go to a private audit file ``<path>.audit.json`` beside it
  (mode 0600 from its creation), with the SHA-256 of the GeoPackage; :func:`verify_audit`
  checks that an audit file belongs to its release. The metadata is one record,
  :class:`~geosynth.synth.release.ReleaseInfo` (``ReleaseFile.info``); :func:`metadata_from_info`
  and :func:`info_from_metadata` convert it to and from the file's table.
* :func:`write_intensity_geotiff` -- the posterior mean intensity of a fit as a north-up GeoTIFF,
  one band per attribute combination.
* :func:`printable` -- text read from a file, safe to print on a terminal.
* :func:`read_bounded` -- a small regular file read whole (no pipe, device or huge file).
* :func:`existing_file` -- a path checked to name an existing regular file.
* :func:`vector_source` / :func:`choose_layer` / :func:`check_shapefile_complete` -- what
  :func:`read_points` and :func:`read_polygons` share: the one dataset (or one
  folder of shapefiles) of a ``.zip`` archive, the layer to read of a file of several (the one
  given, else the only one of the geometry wanted, else a refusal naming every layer; messages
  name the layer option by a :class:`LayerOption`), and a shapefile checked complete.

What a release file may hold. Everything in the GeoPackage is meant to be published, so it never
holds original coordinates, the cells of the original records, the index of the confidential
input, or a seed: pass releases through :func:`geosynth.to_public` first. :func:`write_release`
refuses the internal output of the synthesizers (row ``k`` is confidential record ``k``), never
writes the index, refuses columns named like record or cell identifiers (:data:`ID_COLUMNS`)
and, given ``original_index=``, columns whose values are labels of the confidential input.
Metadata keys are restricted to :data:`METADATA_KEYS`; free text goes to ``notes=``; both are
scanned for seeds.

All or nothing. Every file is staged in a private folder beside its target and moved into place
only when complete (the release, then its audit file), so a failed, interrupted or killed write
leaves no partial file under the final name, never replaces a file created meanwhile without
``overwrite``, and its leftovers are removed by the next write of the same output.
:func:`read_release` (and ``geosynth inspect`` / ``evaluate``) refuse files that are not
complete geosynth releases, with one message saying what is wrong.
"""

from geosynth.io._files import existing_file, file_sha256, printable, read_bounded
from geosynth.io._vector import (
    LayerOption,
    VectorSource,
    check_shapefile_complete,
    choose_layer,
    vector_source,
)
from geosynth.io.points import read_points
from geosynth.io.polygons import read_polygons
from geosynth.io.raster import write_intensity_geotiff
from geosynth.io.release import (
    COMPLETE_KEY,
    GRID_LAYER,
    ID_COLUMNS,
    METADATA_KEYS,
    METADATA_LAYER,
    RELEASE_LAYER,
    RESERVED_KEYS,
    ReleaseFile,
    audit_path,
    check_storable_columns,
    info_from_metadata,
    looks_like_release,
    metadata_from_info,
    read_release,
    verify_audit,
    write_release,
)

__all__ = [
    "ReleaseFile",
    "read_points",
    "read_polygons",
    "write_release",
    "read_release",
    "verify_audit",
    "check_storable_columns",
    "write_intensity_geotiff",
    "audit_path",
    "looks_like_release",
    "info_from_metadata",
    "metadata_from_info",
    "printable",
    "existing_file",
    "read_bounded",
    "file_sha256",
    "VectorSource",
    "vector_source",
    "LayerOption",
    "choose_layer",
    "check_shapefile_complete",
    "RELEASE_LAYER",
    "GRID_LAYER",
    "METADATA_LAYER",
    "COMPLETE_KEY",
    "ID_COLUMNS",
    "METADATA_KEYS",
    "RESERVED_KEYS",
]
