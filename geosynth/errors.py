"""Exceptions and warnings raised by geosynth.

Every error is both a :class:`GeosynthError` and the matching built-in exception, so callers can
catch either ``geosynth.errors.InputError`` or plain ``ValueError``::

    try:
        geosynth.prepare(gdf, grid, attributes=["sex"])
    except ValueError as err:  # also catches InputError
        print(err)

Messages name the offending column, rows or parameter and say how to fix the problem.
"""

from __future__ import annotations

__all__ = [
    "GeosynthError",
    "InputError",
    "InputTypeError",
    "CRSError",
    "GridError",
    "MemoryLimitError",
    "SamplerError",
    "BudgetExceededError",
    "GeosynthWarning",
    "IsolatedCellWarning",
    "DataWarning",
    "PrivacyLeakWarning",
    "ConvergenceWarning",
]


class GeosynthError(Exception):
    """Base class of every error raised by geosynth."""


class InputError(GeosynthError, ValueError):
    """Input data or a parameter is invalid (wrong type, missing column, NaN, ...)."""


class InputTypeError(InputError, TypeError):
    """A parameter of the wrong type (``"no"`` where True or False belongs); also a TypeError."""


class CRSError(InputError):
    """Coordinate reference systems are missing, geographic, or do not match."""


class GridError(GeosynthError, ValueError):
    """A lattice cannot be built from the given bounds, shape, cell size or polygons."""


class MemoryLimitError(GeosynthError, MemoryError):
    """An array would exceed the configured memory limit; nothing was allocated."""


class SamplerError(GeosynthError, RuntimeError):
    """A sampler met a density it cannot draw from (improper, NaN, or non-convergent)."""


class BudgetExceededError(GeosynthError, RuntimeError):
    """A differential-privacy spend would exceed the accountant's budget; no noise was drawn."""


class GeosynthWarning(UserWarning):
    """Base class of every warning issued by geosynth."""


class IsolatedCellWarning(GeosynthWarning):
    """A lattice cell has no neighbour; its ICAR effect is its own component."""


class DataWarning(GeosynthWarning):
    """Input data are usable but suspicious (single-level attribute, dropped points, ...)."""


class PrivacyLeakWarning(GeosynthWarning):
    """A privacy guarantee is weakened (seeded DP noise, levels from the data, exact extremes)."""


class ConvergenceWarning(GeosynthWarning):
    """The chains of a fit have not converged (bulk ESS or R-hat short of the rule)."""
