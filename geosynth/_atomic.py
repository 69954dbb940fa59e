"""Atomic file writes: write to a temporary file beside the target, then rename over it."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["atomic_path"]


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike, overwrite: bool = True) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on success rename it to ``path``.

    If the block raises, the temporary file is removed and ``path`` is left untouched, so a
    failed write never leaves a half-written release behind.

    Parameters
    ----------
    path : str or os.PathLike
        Final destination. Its parent directory is created if needed.
    overwrite : bool, default True
        If False and ``path`` exists, raise :class:`FileExistsError` before writing anything.

    Yields
    ------
    pathlib.Path
        Temporary path with the same suffix as ``path`` (drivers such as GDAL pick the format
        from the suffix).
    """
    target = Path(path)
    if target.exists() and not overwrite:
        raise FileExistsError(
            f"{target} exists; pass overwrite=True (CLI: --overwrite) to replace it"
        )
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(
        prefix=f".{target.stem}-", suffix=target.suffix, dir=target.parent
    )
    os.close(fd)
    tmp = Path(tmp_name)
    tmp.unlink()  # let the writer create it (some drivers refuse an existing empty file)
    try:
        yield tmp
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            tmp.unlink()
