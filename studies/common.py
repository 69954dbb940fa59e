"""What the studies share: writing a regenerated Markdown file in one step."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = ["write_text"]


def write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` atomically: the old file stays whole until the new one is.

    The text goes to a temporary file next to ``path`` (parent directories are created), which
    then replaces ``path`` in one rename, so an interrupted study never leaves a truncated file
    in ``docs/``.

    Parameters
    ----------
    path : str or os.PathLike
        The file to (over)write.
    text : str
        Its new content, written as UTF-8.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    descriptor, staged = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.chmod(staged, 0o666 & ~_umask())
        os.replace(staged, target)
    except BaseException:
        Path(staged).unlink(missing_ok=True)
        raise
    return target


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
