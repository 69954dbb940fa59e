"""geosynth: synthetic locations for confidential point data.

Data flow one way: GeoDataFrame → :func:`prepare` (validated counts on a :class:`Grid`) → model
fit → releases → evaluation / export.
"""

from geosynth import datasets, errors, samplers
from geosynth.data import CellCounts, prepare
from geosynth.lattice import Grid

__version__ = "0.1.0"

__all__ = [
    "CellCounts",
    "Grid",
    "datasets",
    "errors",
    "prepare",
    "samplers",
    "__version__",
]
