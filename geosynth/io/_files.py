"""Checks shared by the readers and writers of :mod:`geosynth.io`: input files, output targets."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from geosynth.errors import InputError

__all__ = ["POINT_TYPE", "existing_file", "check_target"]

#: shapely type id of a Point.
POINT_TYPE = 0


def existing_file(path: Any, name: str = "path") -> Path:
    """Return ``path`` as a Path after checking that it names an existing file.

    Raises
    ------
    geosynth.errors.InputError
        ``path`` is not a path, does not exist or is a directory.
    """
    if not isinstance(path, str | os.PathLike):
        raise InputError(f"{name} must be a file path, got {type(path).__name__}")
    source = Path(path)
    if not source.exists():
        raise InputError(f"{name} {str(source)!r} does not exist; check the file name")
    if source.is_dir():
        raise InputError(f"{name} {str(source)!r} is a directory; pass a file")
    return source


def check_target(target: Path, overwrite: bool) -> None:
    """Refuse an output ``target`` that is a directory, or exists while ``overwrite`` is False.

    Raises
    ------
    geosynth.errors.InputError
        Names the path and the fix.
    """
    if target.is_dir():
        raise InputError(
            f"path {str(target)!r} is a directory; pass a file name such as release.gpkg"
        )
    if target.exists() and not overwrite:
        raise InputError(f"{target} exists; pass overwrite=True (CLI: --overwrite) to replace it")
