"""Files in and out: confidential points, GeoPackage releases and intensity GeoTIFFs.

* :func:`read_points` -- the confidential records from a GeoPackage, GeoParquet, shapefile or
  CSV file, as a point GeoDataFrame.
* :func:`write_release` / :func:`read_release` -- a release as one GeoPackage: layers
  ``synthetic_1`` .. ``synthetic_m`` (the synthetic records), ``grid`` (the lattice cells,
  optionally with the posterior mean intensity) and ``metadata`` (a non-spatial ``key, value``
  table of JSON values). Seeds go to a private audit file ``<path>.audit.json`` beside it.
* :func:`write_intensity_geotiff` -- the posterior mean intensity of a fit as a north-up GeoTIFF,
  one band per attribute combination (also :meth:`geosynth.PaivaFit.to_geotiff`).

What a release file may hold. Everything in the GeoPackage is meant to be published, so it never
holds original coordinates, the cells of the original records, the index of the confidential
input, or a seed: pass releases through :func:`geosynth.to_public` first. :func:`write_release`
also never writes the index, refuses columns named like record or cell identifiers
(:data:`ID_COLUMNS`) and, given ``original_index=``, columns whose values are labels of the
confidential input. Every file is written to a temporary file beside the target and renamed
over it, so a failed write leaves no partial file and keeps an existing one.
"""

from geosynth.io.points import read_points
from geosynth.io.raster import write_intensity_geotiff
from geosynth.io.release import (
    GRID_LAYER,
    ID_COLUMNS,
    METADATA_LAYER,
    RELEASE_LAYER,
    RESERVED_KEYS,
    ReleaseFile,
    audit_path,
    combination_labels,
    read_release,
    write_release,
)

__all__ = [
    "ReleaseFile",
    "read_points",
    "write_release",
    "read_release",
    "write_intensity_geotiff",
    "audit_path",
    "combination_labels",
    "RELEASE_LAYER",
    "GRID_LAYER",
    "METADATA_LAYER",
    "ID_COLUMNS",
    "RESERVED_KEYS",
]
