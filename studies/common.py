"""What the studies share: the sweeps' command line and tables, and one-step file writes."""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

import pandas as pd

__all__ = ["QUICK_FIT", "markdown_table", "sweep_main", "write_text"]

#: Short fits for smoke tests (``--quick``), and how each kind of run is described.
QUICK_FIT = {"n_iter": 400, "burn_in": 200, "thin": 2, "n_quadrants": 100}
QUICK_RUN = "400 sweeps, 200 burn-in, thin 2 (quick)"
FULL_RUN = "8,000 sweeps, 2,000 burn-in, thin 6 (the defaults)"


def markdown_table(table: pd.DataFrame) -> list[str]:
    """Lines of a fenced block holding ``table`` (no index, three decimals), then a blank line.

    Parameters
    ----------
    table : pandas.DataFrame
        The study's result table.

    Returns
    -------
    list of str
    """
    return ["```", table.to_string(index=False, float_format=lambda v: f"{v:.3f}"), "```", ""]


def sweep_main(argv: Sequence[str] | None, command: str, description: str,
               report: Callable[[bool, str, str], str]) -> str:
    """Command line ``<command> [--quick] [--output FILE]`` shared by the sweeps.

    Prints the Markdown section; ``--output`` also writes it (atomically).

    Parameters
    ----------
    argv : sequence of str or None
        Arguments (``None``: ``sys.argv[1:]``).
    command : str
        How the study is run (``python -m studies.<name>``), shown in ``--help`` and recorded.
    description : str
        One line for ``--help``.
    report : callable
        ``report(quick, command_line, run)`` returns the Markdown section: ``quick`` says whether
        to run short fits, ``command_line`` is the command as run and ``run`` describes the fits.

    Returns
    -------
    str
        The Markdown section.
    """
    parser = argparse.ArgumentParser(prog=command, description=description)
    parser.add_argument("--output", help="write the Markdown section to this file")
    parser.add_argument("--quick", action="store_true", help="short runs (for smoke tests)")
    args = parser.parse_args(argv)
    text = report(args.quick, command + (" --quick" if args.quick else ""),
                  QUICK_RUN if args.quick else FULL_RUN)
    if args.output:
        write_text(args.output, text)
    print(text)
    return text


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
