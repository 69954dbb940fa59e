"""Imports of third-party packages that need care: version quirks and optional packages."""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterator
from types import ModuleType

__all__ = ["import_arviz", "quiet_arviz_shape_check"]


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


@contextlib.contextmanager
def quiet_arviz_shape_check() -> Iterator[None]:
    """Within the block, drop arviz's log record "Shape validation failed" (one chain).

    R-hat needs two chains; with one, arviz returns NaN (which geosynth reports) and logs a
    WARNING through :mod:`logging` that the command line printed raw ("arviz - WARNING -
    Shape validation failed: input_shape: (1, 5), ..."). Only that record is dropped.
    """
    # arviz 0.2x logs through ``arviz._log = logging.Logger("arviz")``, made outside the
    # logging registry, so logging.getLogger("arviz") is another logger.
    logger = getattr(import_arviz(), "_log", None)
    if not isinstance(logger, logging.Logger):
        logger = logging.getLogger("arviz")
    handlers = [logger, *logger.handlers]

    def keep(record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("Shape validation failed")

    for handler in handlers:
        handler.addFilter(keep)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(keep)
