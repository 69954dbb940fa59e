"""geosynth: synthetic locations for confidential point data.

Data flow one way: GeoDataFrame → :func:`prepare` (validated counts on a :class:`Grid`) →
:class:`PaivaModel` ``.fit`` → :class:`PaivaFit` → releases → evaluation / export.
"""

from geosynth import datasets, dp, errors, metrics, samplers, sdc, synth
from geosynth.data import CellCounts, prepare
from geosynth.evaluation import Evaluation, evaluate
from geosynth.lattice import Grid
from geosynth.model import PaivaFit, PaivaModel, Priors
from geosynth.synth import donut_mask, naive_synthesize, synthesize, to_public

__version__ = "0.1.0"

_LAZY_MODULES = ("io", "maps", "distributed")  # folium, pyogrio, dask only when used


def __getattr__(name: str):
    """Import :mod:`geosynth.io`, :mod:`geosynth.maps` and :mod:`geosynth.distributed` lazily."""
    if name in _LAZY_MODULES:
        import importlib

        return importlib.import_module(f"geosynth.{name}")
    raise AttributeError(f"module 'geosynth' has no attribute {name!r}")

__all__ = [
    "CellCounts",
    "Evaluation",
    "Grid",
    "PaivaFit",
    "PaivaModel",
    "Priors",
    "datasets",
    "dp",
    "errors",
    "distributed",
    "io",
    "maps",
    "evaluate",
    "metrics",
    "prepare",
    "samplers",
    "sdc",
    "synth",
    "synthesize",
    "naive_synthesize",
    "donut_mask",
    "to_public",
    "__version__",
]
