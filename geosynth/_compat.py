"""Imports of third-party packages that need care: version quirks and optional packages."""

from __future__ import annotations

import warnings
from types import ModuleType

__all__ = ["import_arviz"]


def import_arviz() -> ModuleType:
    """Import and return :mod:`arviz` without its once-a-day import-time ``FutureWarning``.

    arviz 0.2x announces its coming refactor with a ``FutureWarning`` when it is imported
    (once a day per user cache, so on every run where the cache is fresh or not writable),
    which the command line would print on every run. Only that warning is silenced; any
    other warning passes.

    Returns
    -------
    module
        The :mod:`arviz` module.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=r"\s*ArviZ is undergoing a major refactor",
                                category=FutureWarning, module="arviz")
        import arviz

    return arviz
