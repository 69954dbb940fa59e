"""geosynth: synthetic locations for confidential point data.

Data flow one way: GeoDataFrame → :func:`prepare` (validated counts on a :class:`Grid`) →
:class:`PaivaModel` ``.fit`` → :class:`PaivaFit` → releases → evaluation / export.
:func:`synthesize` is the one-call shortcut: releases of a fit through :mod:`geosynth.synth`,
ε-differentially private releases (``epsilon=``) through :mod:`geosynth.dp`.

Every public name is imported on first use (PEP 562), so ``import geosynth`` is instant: the
``geosynth`` command can then catch a Ctrl-C while numpy, numba and geopandas load, and
:mod:`geosynth.io`, :mod:`geosynth.maps` and :mod:`geosynth.distributed` (pyogrio, folium, dask)
are loaded only when used.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: Public name -> (module, attribute); attribute None: the name is the module itself.
_EXPORTS: dict[str, tuple[str, str | None]] = {
    "CellCounts": ("geosynth.data", "CellCounts"),
    "prepare": ("geosynth.data", "prepare"),
    "Evaluation": ("geosynth.evaluation", "Evaluation"),
    "evaluate": ("geosynth.evaluation", "evaluate"),
    "Grid": ("geosynth.lattice", "Grid"),
    "PaivaFit": ("geosynth.model", "PaivaFit"),
    "PaivaModel": ("geosynth.model", "PaivaModel"),
    "Priors": ("geosynth.model", "Priors"),
    "ReleaseInfo": ("geosynth.synth", "ReleaseInfo"),
    "synthesize": ("geosynth._shortcuts", "synthesize"),
    "naive_synthesize": ("geosynth._shortcuts", "naive_synthesize"),
    "donut_mask": ("geosynth.synth", "donut_mask"),
    "to_public": ("geosynth.synth", "to_public"),
    "Candidate": ("geosynth.tuning", "Candidate"),
    "Tuning": ("geosynth.tuning", "Tuning"),
    "tune": ("geosynth.tuning", "tune"),
    **{name: (f"geosynth.{name}", None) for name in (
        "data", "datasets", "distributed", "dp", "errors", "evaluation", "io", "lattice",
        "maps", "metrics", "model", "plots", "rasters", "samplers", "sdc", "synth", "tuning",
    )},
}

if TYPE_CHECKING:  # what static tools and IDEs see
    from geosynth import (
        data,
        datasets,
        distributed,
        dp,
        errors,
        evaluation,
        io,
        lattice,
        maps,
        metrics,
        model,
        plots,
        rasters,
        samplers,
        sdc,
        synth,
        tuning,
    )
    from geosynth._shortcuts import naive_synthesize, synthesize
    from geosynth.data import CellCounts, prepare
    from geosynth.evaluation import Evaluation, evaluate
    from geosynth.lattice import Grid
    from geosynth.model import PaivaFit, PaivaModel, Priors
    from geosynth.synth import ReleaseInfo, donut_mask, to_public
    from geosynth.tuning import Candidate, Tuning, tune


def __getattr__(name: str) -> Any:
    """Import a public name of geosynth on first use."""
    try:
        module_name, attribute = _EXPORTS[name]
    except KeyError:
        raise AttributeError(f"module 'geosynth' has no attribute {name!r}") from None
    module = importlib.import_module(module_name)
    value = module if attribute is None else getattr(module, attribute)
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


__all__ = [
    "Candidate",
    "CellCounts",
    "Evaluation",
    "Grid",
    "PaivaFit",
    "PaivaModel",
    "Priors",
    "ReleaseInfo",
    "Tuning",
    "data",
    "datasets",
    "distributed",
    "donut_mask",
    "dp",
    "errors",
    "evaluate",
    "evaluation",
    "io",
    "lattice",
    "maps",
    "metrics",
    "model",
    "naive_synthesize",
    "plots",
    "prepare",
    "rasters",
    "samplers",
    "sdc",
    "synth",
    "synthesize",
    "to_public",
    "tune",
    "tuning",
    "__version__",
]
