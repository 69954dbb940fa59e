"""Helpers shared by the ``geosynth`` subcommands: output checks, seeds, reports, figures."""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import signal
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from geosynth._atomic import (
    STAGING_MARK,
    AtomicOutputs,
    create_new,
    refuse_held_by_another_user,
)
from geosynth.cli.messages import ogr2ogr_command
from geosynth.errors import GridError, InputError

if TYPE_CHECKING:
    import geopandas as gpd
    import pandas as pd
    from matplotlib.figure import Figure

    from geosynth.lattice import Grid
    from geosynth.model import PaivaFit

__all__ = [
    "describe_rhat",
    "INTERRUPTED",
    "WATCHED_SIGNALS",
    "InterruptWatch",
    "RunOutputs",
    "stop_if_interrupted",
    "check_outputs",
    "check_columns",
    "check_complete",
    "check_binary",
    "check_coverage_size",
    "check_file_name",
    "check_projected",
    "show_progress",
    "derive_seeds",
    "check_layer_options",
    "build_grid",
    "LatticeChoice",
    "write_text",
    "save_figure",
    "text_block",
    "summary_block",
    "describe_lattice",
    "fit_diagnostics",
]

#: Exit status of a run stopped by Ctrl-C (128 + SIGINT, as shells report it).
INTERRUPTED = 130


#: Signals a command run ends on as on Ctrl-C (SIGINT): SIGTERM is what ``timeout``, ``kill``,
#: batch schedulers, systemd and Docker send, SIGHUP what a closed terminal sends. Python's
#: default for both ended the process at once, leaving the staged outputs (a review map with
#: the original points, the internal report) in hidden folders until the next run.
WATCHED_SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP")
                        if hasattr(signal, name))


class InterruptWatch:
    """Notice every Ctrl-C of a command run, even one that a library step caught and survived.

    A fit stopped by Ctrl-C may keep its partial draws and return normally; the command must
    still abort. Used as a context manager around a command (by the ``geosynth`` group), the
    watch installs a handler of SIGINT (and of SIGTERM and SIGHUP, :data:`WATCHED_SIGNALS`)
    that records the interrupt and raises :class:`KeyboardInterrupt` as Python's default SIGINT
    handler does, so :attr:`interrupted` stays True whoever catches the exception, and
    :attr:`signum` says which signal it was. :meth:`deferred` holds the signal back while the
    outputs are moved into place, so that a run ends either with all of its files or with none
    of them.

    Outside the main thread (where signal handlers cannot be set) the watch only records what
    it is told through :meth:`note`; a signal that is ignored (SIGINT of a background job, SIGHUP
    under ``nohup``) stays ignored.
    """

    def __init__(self) -> None:
        self.interrupted = False
        #: The signal that interrupted the run (SIGINT when told through :meth:`note`).
        self.signum: int = int(signal.SIGINT)
        self._previous: dict[int, Any] = {}
        self._deferring = False
        self._pending = False

    def __enter__(self) -> InterruptWatch:
        if threading.current_thread() is threading.main_thread():
            for signum in WATCHED_SIGNALS:
                previous = signal.getsignal(signum)
                if previous is not signal.SIG_IGN:
                    self._previous[signum] = previous
                    signal.signal(signum, self._handle)
        return self

    def __exit__(self, kind, value, traceback) -> None:
        if isinstance(value, KeyboardInterrupt):
            self.interrupted = True
        for signum, previous in self._previous.items():
            if previous is None:  # set outside Python: restore the defaults
                previous = (signal.default_int_handler if signum == signal.SIGINT
                            else signal.SIG_DFL)
            signal.signal(signum, previous)
        self._previous = {}

    def _handle(self, signum, frame) -> None:
        self.interrupted = True
        self.signum = int(signum)
        if self._deferring:
            self._pending = True
            return
        raise KeyboardInterrupt

    def note(self) -> None:
        """Record an interrupt that was reported otherwise (e.g. by a fit's ``interrupted``)."""
        self.interrupted = True

    def check(self) -> None:
        """Raise :class:`KeyboardInterrupt` if Ctrl-C was pressed during the run."""
        if self.interrupted:
            raise KeyboardInterrupt

    @contextlib.contextmanager
    def deferred(self) -> Iterator[None]:
        """Hold Ctrl-C back during the block; raise it (if pressed) when the block ends.

        Blocks may nest: only the outermost one raises the interrupt held back.
        """
        if self._deferring:  # within an outer block, which raises it
            yield
            return
        self._deferring, self._pending = True, False
        try:
            yield
        finally:
            self._deferring = False
        if self._pending:
            raise KeyboardInterrupt


def _watch(ctx: click.Context | None = None) -> InterruptWatch | None:
    """Return the :class:`InterruptWatch` of the running command (None outside the group)."""
    ctx = ctx or click.get_current_context(silent=True)
    if ctx is None or not isinstance(ctx.obj, dict):
        return None
    watch = ctx.obj.get("interrupts")
    return watch if isinstance(watch, InterruptWatch) else None


def stop_if_interrupted(fit: Any = None) -> None:
    """Abort the command (:class:`KeyboardInterrupt`) if Ctrl-C was pressed during the run.

    Parameters
    ----------
    fit : geosynth.PaivaFit, optional
        A fit that reports an interrupt through ``fit.interrupted`` (a fit stopped by Ctrl-C
        keeps the draws made so far; the command line writes nothing from them).

    Raises
    ------
    KeyboardInterrupt
        Ctrl-C was pressed, or ``fit.interrupted`` is True.
    """
    watch = _watch()
    if getattr(fit, "interrupted", False) is True:
        if watch is not None:
            watch.note()
        raise KeyboardInterrupt
    if watch is not None:
        watch.check()


class RunOutputs:
    """Every file of one command run: staged at the start, moved into place together at the end.

    A thin command-line layer over :class:`geosynth._atomic.AtomicOutputs`. Each output is added
    as soon as the command starts (:meth:`stage`), which creates its private staging folder: a
    folder that cannot be written fails at once, before reading or fitting, with a message
    naming the option. Files staged by a library writer later on (the release GeoPackage and its
    audit file, through ``io.write_release(outputs=...)``) get their folder checked at the start
    by :meth:`check_folder`. :meth:`commit` moves everything into place (Ctrl-C held back
    meanwhile); any error or interrupt before it leaves nothing behind, and never replaces an
    existing file.

    Parameters
    ----------
    overwrite : bool
        Whether ``--overwrite`` was given.
    """

    def __init__(self, overwrite: bool) -> None:
        self.outputs = AtomicOutputs(overwrite=overwrite)
        self._options: dict[str, str] = {}
        self._committed = False

    def __enter__(self) -> RunOutputs:
        return self

    def __exit__(self, kind, value, traceback) -> None:
        if not self._committed:  # failed, interrupted, or never committed: nothing is written
            self.discard()
        if (isinstance(value, OSError) and not isinstance(value, BrokenPipeError)
                and (self._culprits(value) or _disk_full(value))):
            # e.g. a full disk while a writer filled its file (a stream's error names none)
            raise self._commit_error(value) from value

    def name(self, option: str, path: str | os.PathLike) -> None:
        """Call ``path`` by ``option`` (e.g. ``"--out"``) in messages.

        Parameters
        ----------
        option : str
            How the user named the file, e.g. ``"--out"``.
        path : str or os.PathLike
            The file.
        """
        self._options[os.path.abspath(path)] = option

    def stage(self, option: str, path: str | os.PathLike, *, private: bool) -> Path:
        """Reserve ``path`` (named by ``option``) and return the staged path to write.

        Parameters
        ----------
        option : str
            How the user named the file, e.g. ``"--report"``.
        path : str or os.PathLike
            The final destination.
        private : bool
            Internal file (original points, confidential summaries, seeds): mode 0600.

        Returns
        -------
        pathlib.Path
            Where to write the file now; it is moved to ``path`` by :meth:`commit`.

        Raises
        ------
        geosynth.errors.InputError
            The folder of ``path`` cannot be created or written, or ``path`` exists without
            ``--overwrite``; the message names ``option`` and the folder.
        """
        self.name(option, path)
        try:
            return self.outputs.add(path, private=private)
        except (OSError, InputError) as err:
            raise _staging_error(option, Path(path), err) from err

    def check_folder(self, option: str, path: str | os.PathLike) -> None:
        """Check now that ``path`` can be staged later (by a writer given :attr:`outputs`).

        Parameters
        ----------
        option : str
            How the user named the file, e.g. ``"--out"``.
        path : str or os.PathLike
            The final destination.

        Raises
        ------
        geosynth.errors.InputError
            As :meth:`stage`.
        """
        self.name(option, path)
        probe = AtomicOutputs(overwrite=self.outputs.overwrite)
        try:
            probe.add(path)
        except (OSError, InputError) as err:
            raise _staging_error(option, Path(path), err) from err
        finally:
            with _held_back(_watch()):  # Ctrl-C meanwhile left the probe's folder behind
                probe.discard()

    def commit(self) -> list[Path]:
        """Move every staged file into place, unless the run was interrupted.

        Ctrl-C pressed while the files are moved takes effect once they all are.

        Returns
        -------
        list of pathlib.Path
            The files written (also recorded for the interrupt message of the group).

        Raises
        ------
        KeyboardInterrupt
            Ctrl-C was pressed during the run: nothing is written.
        geosynth.errors.InputError
            Without ``--overwrite``, another process created one of the files while this run
            worked; nothing of this run is left and the other file is kept. Or a file could
            not be moved into place (a full disk, a folder that forbids it, a directory made
            at its name meanwhile): the message names its option and the fix, and every file
            is left as it was.
        """
        stop_if_interrupted()
        ctx = click.get_current_context(silent=True)
        unwritten = self.outputs.unwritten()
        if unwritten:  # "Wrote m.html" was printed for a map that was never moved into place
            path = unwritten[0]
            option = self._options.get(os.path.abspath(path), "an output")
            raise InputError(f"{option} {path} was not written (its staging folder was changed "
                             "by another process?); nothing was written")
        with _held_back(_watch()):
            try:
                written = self.outputs.commit()
            except FileExistsError as err:
                path = Path(err.filename) if err.filename else None
                if path is not None and path.is_dir():  # --overwrite would not replace it
                    raise self._commit_error(IsADirectoryError(
                        errno.EISDIR, "Is a directory", str(path))) from err
                option = self._options.get(os.path.abspath(path), "an output") if path else \
                    "an output"
                raise InputError(
                    f"{option} {path} was created by another process while this run worked; "
                    "it was kept and nothing was written: choose another file name, or pass "
                    "--overwrite to replace it"
                ) from None
            except OSError as err:  # a raw OSError named no option (e.g. "[Errno 28] ...")
                raise self._commit_error(err) from err
            self._committed = True
            if ctx is not None and isinstance(ctx.obj, dict):
                ctx.obj.setdefault("written", []).extend(written)
        return written

    def discard(self) -> None:
        """Remove every staged file and the folders created for them; nothing is written.

        Ctrl-C pressed meanwhile takes effect once all of them are removed: raised in the
        middle, it left the other staging folders (and the folders made for them) behind.
        """
        with _held_back(_watch()):
            self.outputs.discard()

    def _commit_error(self, err: OSError) -> InputError:
        """Return the message of a file not moved into place: its option and the fix."""
        found = self._culprits(err)
        if len(found) == 1:
            [(path, option)] = found.items()
            named = f"{option} {path}"
        else:  # a folder of several outputs, or an unknown file: name them all
            named = "the outputs " + ", ".join(f"{option} {path}" for path, option in (
                found or {Path(p): o for p, o in self._options.items()}).items())
        reason = os.strerror(err.errno) if err.errno else (err.strerror or str(err))
        undone = "nothing was written and no file was replaced"
        if err.errno in (errno.ENOSPC, errno.EDQUOT):
            return InputError(f"{named} could not be written: the disk is full ({reason}); free "
                              f"some space or write to another disk, then run again ({undone})")
        if err.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
            return InputError(f"{named} could not be moved into place ({reason}); choose a "
                              f"folder you can write to, or fix its permissions ({undone})")
        if err.errno == errno.EISDIR:
            return InputError(f"{named} is a directory (made while this run worked); give a "
                              f"file name, or remove that directory ({undone})")
        detail = err.strerror or reason
        if err.errno == errno.ENOENT:  # e.g. "could not be written: another process removed ..."
            return InputError(f"{named}: {detail}; run again ({undone})")
        return InputError(f"{named} could not be written ({detail}); check the disk and the "
                          f"folder, then run again ({undone})")

    def _culprits(self, err: OSError) -> dict[Path, str]:
        """Return the outputs an error of the commit is about, ``{target: option}`` (or none).

        The error names the target, a file in the target's staging folder beside it (named
        ``.<target name>.geosynth-staging-...``), or a folder holding targets.
        """
        found: dict[Path, str] = {}
        for name in (err.filename, err.filename2):
            if not name:
                continue
            path = Path(os.path.abspath(os.fsdecode(name)))
            for target, option in self._options.items():
                target = Path(target)
                staging = (path.parent.parent == target.parent and STAGING_MARK in
                           path.parent.name and path.parent.name.startswith(f".{target.name}."))
                if path in (target, target.parent) or staging:
                    found[target] = option
            if found:
                break
        return found


def _disk_full(err: OSError) -> bool:
    """Whether ``err`` is a full disk (or quota) that names no file, as a stream's write raises.

    Writing the review map, the report or a figure to a full disk printed the bare
    "[Errno 28] No space left on device", naming no output and not saying nothing was written.
    """
    return err.errno in (errno.ENOSPC, errno.EDQUOT) and not err.filename


def _held_back(watch: InterruptWatch | None) -> contextlib.AbstractContextManager:
    """Hold Ctrl-C back during the block through ``watch`` (nothing held back without one)."""
    return watch.deferred() if watch is not None else contextlib.nullcontext()


def _staging_error(option: str, path: Path, err: OSError | InputError) -> InputError:
    """Name ``option`` in the error of staging ``path`` (:meth:`AtomicOutputs.add`)."""
    if isinstance(err, OSError):
        return _output_error(option, path, err)
    if isinstance(err.__cause__, OSError):  # a folder that cannot be written: say it anew
        return _output_error(option, path, err.__cause__)
    return InputError(f"{option}: {err}")  # control characters, a pipe, SQLite journals


def _output_error(option: str, path: Path, err: OSError) -> InputError:
    """Build the message of an output that cannot be staged: option, folder and fix."""
    from geosynth.io import printable
    from geosynth.io._files import output_path_error

    if isinstance(err, FileExistsError) and err.filename == str(path):
        return InputError(f"{option} {printable(str(path))} already exists; pass --overwrite to "
                          "replace it, or choose another file name (nothing was written)")
    if isinstance(err, IsADirectoryError) and err.filename == str(path):
        return InputError(f"{option} {printable(str(path))} is a directory; give a file name")
    return output_path_error(path, err, option)


def check_outputs(
    outputs: Mapping[str, Any], overwrite: bool, inputs: Mapping[str, Any] | None = None
) -> dict[str, Path]:
    """Refuse, before any work, outputs that exist (without ``--overwrite``) or coincide.

    Parameters
    ----------
    outputs : mapping of str to path or None
        Option name (as the user typed it, e.g. ``"--map"``) to the file it names; None entries
        (options not given) are skipped.
    overwrite : bool
        Whether ``--overwrite`` was given.
    inputs : mapping of str to path or None, optional
        The command's input files by option or argument name; no output may replace one, or a
        file read with one (a shapefile's ``.dbf``, ``.shx``, ...; a release's audit file), even
        with ``--overwrite``.

    Returns
    -------
    dict of str to pathlib.Path
        The given outputs.

    Raises
    ------
    click.BadParameter
        An output name is blank or names a folder (:func:`check_file_name`).
    geosynth.errors.InputError
        An output is a directory, a named pipe, a device or a socket (never replaced, even
        with ``--overwrite``), two options name the same file, an output is an input,
        outputs exist and ``overwrite`` is False (all of them are named), or an output's path
        cannot be used (a name too long for the file system, a loop of symbolic links).
    """
    for name, path in outputs.items():
        check_file_name(path, name)
    given = {name: Path(path) for name, path in outputs.items() if path is not None}
    seen = {companion.resolve(): name for name, path in (inputs or {}).items()
            if path is not None for companion in _input_files(Path(path))}
    keys = {}
    for name, path in given.items():
        key = _output_key(name, path)
        if key in seen:
            raise InputError(f"{seen[key]} and {name} name the same file {str(path)!r}; give "
                             "each output its own file")
        seen[key] = name
        keys[name] = key
    for name, path in given.items():  # first: --overwrite would not replace them either
        _refuse_special_file(name, path)
    from geosynth.io import printable  # a name's escape sequences and line breaks, shown

    existing = [f"{printable(str(path))} ({name})" for name, path in given.items()
                if os.path.lexists(path)]
    if existing and not overwrite:
        raise InputError(
            f"{', '.join(existing)} already exist{'s' if len(existing) == 1 else ''}; pass "
            "--overwrite to replace, or choose other file names (nothing was written)"
        )
    for name, path in given.items():
        if os.path.lexists(path):
            refuse_held_by_another_user(path, f"{printable(str(path))} ({name})")
    return given


def _output_key(option: str, path: Path) -> Path:
    """Return the resolved ``path`` of ``option``; refuse a directory or an unusable path.

    ``is_dir`` fails on a name too long for the file system or a folder that cannot be
    searched, ``resolve`` on a loop of symbolic links: both were tracebacks or an OSError
    without the option.
    """
    try:
        if path.is_dir():
            raise InputError(f"{option} {str(path)!r} is a directory; give a file name")
        return path.resolve()
    except OSError as err:
        raise _output_error(option, path, err) from err
    except RuntimeError as err:  # "Symlink loop from ..." (Python < 3.13)
        from geosynth.io import printable

        raise InputError(f"{option} {printable(str(path))}: a symbolic link in that path points "
                         "back to itself; fix the link or choose another path (nothing was "
                         "written)") from err


def _refuse_special_file(option: str, path: Path) -> None:
    """Refuse an output ``path`` that is a named pipe, a device or a socket, naming ``option``."""
    from geosynth.io._files import check_replaceable_file

    try:
        check_replaceable_file(path, option)
    except OSError as err:
        raise _output_error(option, path, err) from err


# The files that make one shapefile besides its .shp (ESRI, 1998; .cpg and .qix by convention).
_SHAPEFILE_PARTS = (".shx", ".dbf", ".prj", ".cpg", ".qix", ".sbn", ".sbx", ".shp.xml")


def _input_files(path: Path) -> list[Path]:
    """``path`` and the files read with it: a shapefile's parts, a release's audit file."""
    from geosynth.io import audit_path

    files = [path, audit_path(path)]
    if path.suffix.lower() == ".shp":
        files += [path.with_suffix(suffix) for suffix in _SHAPEFILE_PARTS]
    return files


def release_provenance(ctx: click.Context, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """How a release was made, for its private audit file: the command, options and inputs.

    The seeds alone did not reproduce a release: nothing said which points, region, levels
    or ``--weights`` raster it was made from, nor with which options. The options are as the
    command received them; each input file (with a shapefile's parts) is recorded by its
    absolute path and SHA-256, so a changed input is told from the one used.

    Parameters
    ----------
    ctx : click.Context
        The command's context (``ctx.params``: its options and arguments).
    inputs : mapping of str to path or None
        Input option (or argument) name to the file it named; None entries are skipped.

    Returns
    -------
    dict
        ``{"command": ..., "options": {...}, "inputs": {name: {file: sha256, ...}}}``.
    """
    from geosynth.io import file_sha256

    files: dict[str, dict[str, str]] = {}
    for option, path in inputs.items():
        if path is None:
            continue
        path = Path(path)
        read = [path, *_input_files(path)[2:]]  # with a shapefile's parts, not an audit file
        files[option] = {str(p.absolute()): file_sha256(p) for p in read if p.is_file()}
    options = {name: list(value) if isinstance(value, tuple) else value
               for name, value in ctx.params.items()}
    return {"command": ctx.command_path, "options": options, "inputs": files}


@contextlib.contextmanager
def naming_weights(path: str) -> Iterator[None]:
    """Prefix the refusal of a --weights raster with the option and the file's name."""
    from geosynth.errors import CRSError
    from geosynth.io import printable

    try:
        yield
    except (CRSError, InputError) as err:
        raise type(err)(f"--weights {printable(Path(path).name)}: {err}") from None


def check_columns(frame: gpd.GeoDataFrame, name: str,
                  columns: Mapping[str, Sequence[str] | str | None],
                  coordinates: Sequence[str | None] = ()) -> None:
    """Refuse a file ``name`` that lacks a column named by an option.

    A column read as the points' coordinates (a CSV's ``--x``, ``--y``) is no column of the
    points any more: it is named as such ("has no column 'x'" was all it said).

    Parameters
    ----------
    frame : geopandas.GeoDataFrame
        The file's contents.
    name : str
        How to call the file in the message.
    columns : mapping of str to column names
        Option (e.g. ``"--attributes"``) to the column(s) it names; None entries are skipped.
    coordinates : sequence of str or None, optional
        The columns of the coordinates (``--x``, ``--y``), if the file had them.

    Raises
    ------
    geosynth.errors.InputError
        Names the option, the missing columns and the columns of the file.
    """
    available = [c for c in frame.columns if c != frame.geometry.name]
    for option, wanted in columns.items():
        wanted = [] if wanted is None else [wanted] if isinstance(wanted, str) else list(wanted)
        missing = [c for c in wanted if c not in available]
        taken = [c for c in missing if c in coordinates]
        if taken:
            raise InputError(f"{option}: {taken[0]!r} is a column of {name}'s coordinates "
                             "(--x, --y), which become the points; a column cannot be both: "
                             "copy it under another name to use it as well")
        split = [c for c in available if "," in str(c)
                 and set(map(str.strip, str(c).split(","))) <= set(missing)]
        if split:
            raise InputError(f"{option}: {name} has a column {split[0]!r}, whose comma splits "
                             "it in this comma-separated option; rename the column in the file "
                             "(without a comma)")
        if missing:
            raise InputError(f"{option}: {name} has no column {', '.join(map(repr, missing))}; "
                             f"its columns are {available}")


def check_file_name(path: str | os.PathLike | None, option: str) -> None:
    """Refuse an output name that is blank or names a folder (``out/``, ``..``).

    ``Path("out/")`` is ``Path("out")``: the file was written as ``out``, beside the folder the
    user meant, and a blank name became a file named by spaces (or the current folder).

    Parameters
    ----------
    path : str or path-like, optional
        The output file an option names; None (not given) passes.
    option : str
        The option, e.g. ``"--report"``.

    Raises
    ------
    click.BadParameter
        Naming the option.
    """
    if path is None:
        return
    path = os.fspath(path)
    name = os.path.basename(path).strip()
    if not path.strip() or name in ("", ".", ".."):
        raise click.BadParameter(f"give a file name, not the folder or blank name {path!r}",
                                 param_hint=option)


def check_complete(frame: gpd.GeoDataFrame, name: str,
                   columns: Mapping[str, Sequence[str] | str | None], *,
                   show_counts: bool = True) -> None:
    """Refuse records without a location, or without a value in a column an option names.

    The library's own messages name Python objects (``original``, ``releases[0]``) and give
    pandas advice; these name the option and the file. No value and no row is shown.

    Parameters
    ----------
    frame : geopandas.GeoDataFrame
        A file's contents (its columns checked by :func:`check_columns`).
    name : str
        How to call the file in the message.
    columns : mapping of str to column names
        Option to the column(s) it names; None entries are skipped.
    show_counts : bool, default True
        False under ``--epsilon``: the message shows no number of records (the number of
        records is what a differentially private release protects, and terminal output gets
        pasted).

    Raises
    ------
    geosynth.errors.InputError
        Names the option, the column, the file and how many records lack a value.
    """
    from geosynth.io import printable

    def some(count: int) -> str:
        return f"{count:,} of {len(frame):,}" if show_counts else "some"

    located = int((frame.geometry.isna() | frame.geometry.is_empty).sum())
    if located:
        raise InputError(f"{printable(name)}: {some(located)} records have no "
                         "location (a missing or empty geometry); drop or fix them in the file")
    for option, wanted in columns.items():
        # A number has no level: an empty --continuous value is dropped or imputed.
        fix = ("drop them or impute the values in the file" if option == "--continuous" else
               "drop them or give them an explicit level in the file")
        for column in [] if wanted is None else [wanted] if isinstance(wanted, str) else wanted:
            count = int(frame[column].isna().sum())
            if count:
                csv = Path(str(name)).suffix.lower() == ".csv"  # the readers' only CSV suffix
                raise InputError(
                    f"{option} {printable(column)!r}: {printable(name)} has {some(count)} "
                    f"records without a value in that column; {fix}"
                    + (" (from a CSV file, text such as NA, None or null is read as missing "
                       "unless --na-values '' is given)" if csv else "")
                )
            infinite = _infinite_count(frame[column]) if option == "--continuous" else 0
            if infinite:
                raise InputError(
                    f"{option} {printable(column)!r}: {printable(name)} has "
                    f"{some(infinite)} records with an infinite value in that column; {fix}"
                )


def _infinite_count(values: pd.Series) -> int:
    """Return how many of ``values`` are ±inf (0 for a column that is not numeric)."""
    import numpy as np
    import pandas as pd

    if not pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
        return 0
    return int(np.isinf(values.to_numpy(dtype=np.float64, na_value=np.nan)).sum())


def check_binary(frame: gpd.GeoDataFrame, column: str, name: str) -> None:
    """Refuse an --outcome column that is not 0/1 (or booleans), showing none of its values.

    Parameters
    ----------
    frame : geopandas.GeoDataFrame
        A file's contents, holding ``column``.
    column : str
        The --outcome column.
    name : str
        How to call the file in the message.

    Raises
    ------
    geosynth.errors.InputError
        Names --outcome, the column, the file and why (:func:`geosynth.metrics.non_binary`).
    """
    from geosynth.io import printable
    from geosynth.metrics.utility import non_binary

    found = non_binary(frame[column])
    if found is not None:
        raise InputError(
            f"--outcome: the outcome column {printable(column)!r} of {printable(name)} must be "
            f"binary (0/1 or booleans), but it has {found}; give a 0/1 column (recode it in "
            "the file)"
        )


def check_coverage_size(frame: gpd.GeoDataFrame, name: str, *, show_counts: bool = True) -> None:
    """Refuse an --outcome whose coverage table cannot draw its rectangles from ``frame``.

    Every random rectangle of :func:`geosynth.metrics.quadrant_coverage` holds ``MIN_POINTS``
    original records; its own message names ``min_points`` and quadrants, which the commands
    do not have (and ``geosynth release`` would only meet it after the fit).

    Parameters
    ----------
    frame : geopandas.GeoDataFrame
        The original records that are evaluated.
    name : str
        How to call the file in the message.
    show_counts : bool, default True
        False under ``--epsilon``: the number of records is not shown.

    Raises
    ------
    geosynth.errors.InputError
        Fewer than ``MIN_POINTS`` records; names --outcome and the fix.
    """
    from geosynth.io import printable
    from geosynth.metrics.utility import MIN_POINTS

    if len(frame) < MIN_POINTS:
        has = f"has {len(frame)}" if show_counts else "has fewer"
        raise InputError(
            f"--outcome needs at least {MIN_POINTS} original records (every random rectangle of "
            f"the coverage table holds {MIN_POINTS} of them), but {printable(name)} {has}; omit "
            "--outcome"
        )


def _utm_of(points: gpd.GeoDataFrame) -> str:
    """Return the UTM zone of ``points`` as ``"EPSG:<code>"`` (a placeholder if none)."""
    try:
        return points.estimate_utm_crs().to_string()
    except (RuntimeError, ValueError):  # no valid coordinates to estimate from
        return "EPSG:<UTM zone>"


def check_projected(points: gpd.GeoDataFrame, name: str,
                    coordinates: tuple[str | None, str | None] = (None, None),
                    decimal: str | None = None) -> None:
    """Refuse points without a CRS, in a geographic CRS (degrees) or in one not in metres.

    Parameters
    ----------
    points : geopandas.GeoDataFrame
        The points read from the input file.
    name : str
        The input file's name, for the messages.
    coordinates : tuple of str or None, optional
        ``--x`` and ``--y`` when the input is a CSV file: the reprojection command names them.
    decimal : str, optional
        ``--decimal`` of a CSV file.

    Raises
    ------
    geosynth.errors.CRSError
        With the UTM zone to reproject to, when it can be estimated.
    """
    from geosynth.errors import CRSError
    from geosynth.io import printable

    name = printable(name)
    if points.crs is None:
        raise CRSError(f"{name} has no CRS; pass --crs with the CRS of its coordinates")
    if points.crs.is_geographic:
        utm = _utm_of(points)
        raise CRSError(
            f"{name} is in the geographic CRS {points.crs.to_string()} (degrees); the lattice "
            f"needs a projected CRS in metres: reproject the file first, e.g. to {utm} "
            f"{_reprojection(points, name, utm, coordinates, decimal)}"
        )
    axis = points.crs.axis_info[0] if points.crs.axis_info else None
    if axis is not None and axis.unit_conversion_factor != 1.0:
        # --cell-size, the messages' "m" and the distance tables are metres: a CRS in US survey
        # feet made 500 x 500 "m" cells 152 m wide, closer to the records than asked for.
        utm = _utm_of(points)
        label = (points.crs.to_string() if points.crs.to_authority() is not None
                 else repr(printable(points.crs.name)))  # not a whole WKT or PROJ string
        raise CRSError(
            f"{name} is in {label}, whose unit is the {axis.unit_name} "
            f"({axis.unit_conversion_factor:g} m); --cell-size and every distance geosynth "
            f"reports are metres: reproject the file to a CRS in metres first, e.g. {utm} "
            f"{_reprojection(points, name, utm, coordinates, decimal)}"
        )


def _reprojection(points: gpd.GeoDataFrame, name: str, utm: str,
                  coordinates: tuple[str | None, str | None], decimal: str | None) -> str:
    """Return the parenthesised ogr2ogr command that reprojects INPUT to ``utm``."""
    x, y = coordinates
    command = ogr2ogr_command(name, utm, crs=points.crs.to_string(), x=x, y=y)
    if x is None or y is None:
        return f"({command})"
    after = "then give projected.gpkg without --x, --y and --crs"
    if decimal not in (None, "."):
        after = f"after saving {name} with decimal points, which GDAL needs; {after}"
    return f"({command}; {after})"


def show_progress(ctx: click.Context) -> bool:
    """Whether progress bars are wanted (not ``geosynth -q``)."""
    return not (ctx.obj or {}).get("quiet", False)


def derive_seeds(seed: int | None, names: Sequence[str]) -> tuple[int, dict[str, int]]:
    """Seed of each step of a run, derived from one master seed.

    Parameters
    ----------
    seed : int or None
        The ``--seed`` of the command; None draws a fresh one from :mod:`secrets`, so that the
        owner of the data can still reproduce the release from the audit file.
    names : sequence of str
        The steps, e.g. ``["fit", "synthesize", "public"]``.

    Returns
    -------
    seed : int
        The master seed (given or drawn).
    seeds : dict of str to int
        ``{"seed": seed, name: derived seed, ...}``, each derived seed a 63-bit int from
        :class:`numpy.random.SeedSequence` of the master seed (independent streams).
    """
    import numpy as np

    if seed is None:
        seed = secrets.randbits(63)
    state = np.random.SeedSequence(seed).generate_state(len(names), dtype=np.uint64)
    derived = {name: int(value >> np.uint64(1)) for name, value in zip(names, state, strict=True)}
    return seed, {"seed": seed, **derived}


def check_layer_options(layers: Mapping[str, tuple[Any, str | None]]) -> None:
    """Refuse a layer option given without its file option, naming both (click.UsageError).

    Parameters
    ----------
    layers : mapping of str to (file, layer)
        File option (e.g. ``"--region"``) to its value and the value of its layer option
        (``--region-layer``); None for an option not given.
    """
    for option, (path, layer) in layers.items():
        if layer is not None and not path:
            raise click.UsageError(f"{option}-layer applies to {option} only (the layer of its "
                                   f"file); add {option} FILE or drop {option}-layer")


@dataclass(frozen=True)
class LatticeChoice:
    """The lattice options of a command: exactly one of the four lattice kinds.

    Attributes
    ----------
    grid_shape : tuple of (int, int) or None
        ``--grid ROWSxCOLS``.
    cell_size : float or None
        ``--cell-size METRES``.
    hex_size : float or None
        ``--hex-size METRES`` (hexagon side).
    areas_path : str or None
        ``--areas FILE``.
    area_id : str or None
        ``--area-id COLUMN``.
    public_area_ids : bool
        ``--public-area-ids``.
    link_islands : bool
        ``--link-islands``.
    area_gap : float or None
        ``--area-gap METRES``.
    areas_layer : str or None
        ``--areas-layer LAYER``.
    area_exposure : str or None
        ``--area-exposure area|COLUMN``.
    """

    grid_shape: tuple[int, int] | None = None
    cell_size: float | None = None
    hex_size: float | None = None
    areas_path: str | None = None
    area_id: str | None = None
    public_area_ids: bool = False
    link_islands: bool = False
    area_gap: float | None = None
    areas_layer: str | None = None
    area_exposure: str | None = None

    def check(self, region_path: str | None) -> None:
        """Refuse contradictory lattice options, naming them (click.UsageError)."""
        given = [name for name, value in (
            ("--grid", self.grid_shape), ("--cell-size", self.cell_size),
            ("--hex-size", self.hex_size), ("--areas", self.areas_path)) if value is not None]
        if len(given) != 1:
            got = "none" if not given else " and ".join(given)
            raise click.UsageError(
                "give exactly one of --grid ROWSxCOLS, --cell-size METRES, --hex-size METRES "
                f"and --areas FILE to define the lattice (got {got})"
            )
        if self.areas_path is None:
            for option, value in (("--area-id", self.area_id),
                                  ("--areas-layer", self.areas_layer),
                                  ("--public-area-ids", self.public_area_ids),
                                  ("--link-islands", self.link_islands),
                                  ("--area-gap", self.area_gap),
                                  ("--area-exposure", self.area_exposure)):
                if value is not None and value is not False:  # --areas-layer "" too
                    raise click.UsageError(f"{option} applies to --areas only; add --areas FILE "
                                           f"or drop {option}")
        elif region_path is not None:
            raise click.UsageError("--areas are the study region; drop --region (use --exclude "
                                   "for no-go areas)")
        if self.public_area_ids and self.area_id is None:
            raise click.UsageError("--public-area-ids needs --area-id COLUMN")

    @property
    def option(self) -> tuple[str, str]:
        """The cell option given and its value (e.g. ``("--cell-size", "500")``), not --areas."""
        if self.grid_shape is not None:
            return "--grid", "x".join(map(str, self.grid_shape))
        if self.cell_size is not None:
            return "--cell-size", f"{self.cell_size:g}"
        return "--hex-size", f"{self.hex_size:g}"

    @property
    def public_bounds(self) -> bool:
        """True when the lattice bounds do not come from the points (areas given)."""
        return self.areas_path is not None


def build_grid(
    points: gpd.GeoDataFrame,
    lattice: LatticeChoice,
    region: gpd.GeoDataFrame | None = None,
    exclude: gpd.GeoDataFrame | None = None,
    barriers: gpd.GeoDataFrame | None = None,
) -> Grid:
    """Build the lattice over the region (if given), the areas, or the bounds of the points.

    Parameters
    ----------
    points : geopandas.GeoDataFrame
        The points, in a projected CRS (the lattice's CRS).
    lattice : LatticeChoice
        The lattice options (checked).
    region : geopandas.GeoDataFrame, optional
        Study region: the lattice covers its bounds and is clipped to it (reprojected to the
        points' CRS first if needed).
    exclude : geopandas.GeoDataFrame, optional
        Areas without habitable space (no-go areas), removed from the cells.
    barriers : geopandas.GeoDataFrame, optional
        Lines or polygons that cut the links they cross (:meth:`Grid.without_links_across`).

    Returns
    -------
    geosynth.lattice.Grid
    """
    region = _in_crs_of(region, points, "--region")  # its extent, in the points' units
    # An --exclude without a CRS was taken to be in the points' CRS: a no-go area in degrees
    # removed nothing, with a warning only, and the release was written.
    exclude = _in_crs_of(exclude, points, "--exclude")
    grid = _lattice(points, lattice, region, exclude)
    if lattice.areas_path is None:  # one area is the user's region
        _refuse_cells_beyond_the_study_area(grid, lattice, points, region)
    if barriers is None:
        return grid
    return grid.without_links_across(_in_crs_of(barriers, points, "--barriers"))


def _refuse_cells_beyond_the_study_area(grid: Grid, lattice: LatticeChoice,
                                        points: gpd.GeoDataFrame,
                                        region: gpd.GeoDataFrame | None) -> None:
    """Refuse a lattice of one cell, or cells wider than the study area itself.

    ``--cell-size 1e9`` gave one cell reaching 1e9 m past the records, and ``--hex-size 1e9``
    three: synthetic points spread over them, far outside the area where the CRS is used.
    """
    option, value = lattice.option
    if grid.n_cells < 2:
        raise InputError(
            f"{option} {value} gives a lattice of {grid.n_cells} habitable cell: the model "
            "smooths over neighbouring cells and would place the points anywhere in that cell; "
            f"choose a finer {option} (most analyses use hundreds of cells)"
        )
    if lattice.cell_size is not None or lattice.hex_size is not None:
        check_cell_side(option, lattice.cell_size or lattice.hex_size,
                        lattice.hex_size is not None, points, region)


def check_cell_side(option: str, side: float, hexagonal: bool, points: gpd.GeoDataFrame,
                    region: gpd.GeoDataFrame | None) -> None:
    """Refuse cells (or hexagons, ``2 * side`` across) wider than the study area.

    The study area is the region's box, or the records' (no extent is shown: it is theirs).
    Such cells reach far past it, and synthetic points spread over them.

    Parameters
    ----------
    option : str
        The option that set ``side`` (``--cell-size``, ``--hex-sizes``...).
    side : float
        A square cell's side, or a hexagon's (centre to corner).
    hexagonal : bool
        Whether the cells are hexagons.
    points : geopandas.GeoDataFrame
        The records.
    region : geopandas.GeoDataFrame, optional
        The study region, in the records' CRS.

    Raises
    ------
    geosynth.errors.InputError
        Cells wider than the study area.
    """
    import numpy as np

    box = np.asarray((region if region is not None else points).total_bounds, dtype=float)
    span = float(max(box[2] - box[0], box[3] - box[1]))
    if span > 0 and (2.0 * side if hexagonal else side) > span:
        area = "--region's" if region is not None else "the records'"
        raise InputError(
            f"{option} {side:g} makes {'hexagons' if hexagonal else 'cells'} wider than "
            f"{area} extent: they reach far past it, and the model would place the points "
            f"anywhere in them; choose a smaller {option} (most analyses use hundreds of cells)"
        )


def _lattice(points: gpd.GeoDataFrame, lattice: LatticeChoice,
             region: gpd.GeoDataFrame | None, exclude: gpd.GeoDataFrame | None) -> Grid:
    """Build the lattice of :func:`build_grid`, before any barrier."""
    from geosynth.io import read_polygons
    from geosynth.lattice import Grid

    region = _in_crs_of(region, points, "--region")
    if lattice.areas_path is not None:
        areas = _in_crs_of(read_polygons(lattice.areas_path, lattice.areas_layer,
                                         option="--areas"), points, "--areas")
        if lattice.area_id is not None and lattice.area_id not in areas.columns:
            raise InputError(f"--area-id {lattice.area_id!r} is not a column of --areas "
                             f"{Path(lattice.areas_path).name} (columns: "
                             f"{[c for c in areas.columns if c != areas.geometry.name]})")
        try:
            return Grid.from_polygons(areas, id_column=lattice.area_id, exclude=exclude,
                                      islands="nearest" if lattice.link_islands else "keep",
                                      public_ids=lattice.public_area_ids,
                                      gap=lattice.area_gap or 0.0,
                                      exposure=lattice.area_exposure)
        except GridError as err:  # tune reads several --areas: say which one
            layer = "" if lattice.areas_layer is None else f" (layer {lattice.areas_layer!r})"
            raise GridError(f"--areas {Path(lattice.areas_path).name}{layer}: {err}") from None
    if lattice.hex_size is not None:
        return Grid.from_points(points, cell_size=lattice.hex_size, region=region,
                                exclude=exclude, kind="hexagonal")
    # With a region, the lattice spans its bounds (checked polygons first: an invalid region
    # is refused as such, not as bounds the user never gave); without, snapped point bounds.
    return Grid.from_points(points, shape=lattice.grid_shape, cell_size=lattice.cell_size,
                            region=region, exclude=exclude)


def _in_crs_of(frame: gpd.GeoDataFrame | None, points: gpd.GeoDataFrame, option: str):
    """``frame`` in the points' CRS; refused (before any fit) when it has none to convert."""
    if frame is None or points.crs is None or (frame.crs is not None
                                               and frame.crs.equals(points.crs)):
        return frame
    if frame.crs is None:
        raise InputError(f"{option} has no CRS while the points use {points.crs.to_string()}; "
                         "save it with its CRS (e.g. set it in QGIS), it is not guessed")
    return frame.to_crs(points.crs)


def write_text(
    path: str | os.PathLike,
    text: str,
    overwrite: bool = False,
    *,
    outputs: RunOutputs | None = None,
    option: str = "--report",
    private: bool = True,
) -> Path:
    """Write ``text`` (UTF-8) to ``path``, created with mode 0600 unless ``private`` is False.

    Parameters
    ----------
    path : str or os.PathLike
        Destination.
    text : str
        Contents.
    overwrite : bool, default False
        Replace an existing file (without ``outputs``).
    outputs : RunOutputs, optional
        Stage the file into this run's outputs (moved into place by its commit) instead of
        writing it at once.
    option : str, default "--report"
        How messages name the file.
    private : bool, default True
        Internal file (reports describe confidential data): mode 0600 from its creation.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    with _staged_file(path, overwrite, outputs, option, private) as staged:
        with create_new(staged, private=private) as stream:
            stream.write(text)
    return Path(path)


def save_figure(
    figure: Figure,
    path: str | os.PathLike,
    overwrite: bool = False,
    dpi: int = 100,
    *,
    outputs: RunOutputs | None = None,
    option: str = "figure",
    private: bool = True,
) -> Path:
    """Save a matplotlib figure as PNG (mode 0600 unless ``private`` is False) and close it.

    Parameters are those of :func:`write_text`, plus ``figure`` and its resolution ``dpi``.

    Returns
    -------
    pathlib.Path
        ``path``.
    """
    import matplotlib.pyplot as plt

    try:
        with _staged_file(path, overwrite, outputs, option, private) as staged:
            with create_new(staged, private=private, binary=True) as stream:
                figure.savefig(stream, dpi=dpi, format="png")
    finally:
        plt.close(figure)
    return Path(path)


@contextlib.contextmanager
def _staged_file(path, overwrite, outputs, option, private) -> Iterator[Path]:
    """Yield the staged path of ``path``: in ``outputs``, else in a transaction of its own."""
    if outputs is not None:
        yield outputs.stage(option, path, private=private)
        return
    with RunOutputs(overwrite) as own:
        yield own.stage(option, path, private=private)
        own.commit()  # its errors name the option


def text_block(table: pd.DataFrame | pd.Series, float_format: str = "{:,.3f}") -> str:
    """Format a table as a fenced fixed-width Markdown block.

    Parameters
    ----------
    table : pandas.DataFrame or pandas.Series
        The table to print.
    float_format : str, default "{:,.3f}"
        :meth:`str.format` pattern of the floating-point cells.

    Returns
    -------
    str
        The table as a fenced Markdown code block, ending with a newline.
    """
    from geosynth.evaluation import markdown_code  # a fence no label's backticks close

    text = _printable_labels(table).to_string(float_format=float_format.format)
    return markdown_code(text, block=True) + "\n"


def _printable_labels(table: pd.DataFrame | pd.Series) -> pd.DataFrame | pd.Series:
    """Return ``table`` with its row labels made printable (:func:`geosynth.io.printable`).

    A level holding a line break and an escape sequence (ESC ``[2J``) was written raw into
    the report's fit summary: ``cat report.md`` cleared the screen.
    """
    from geosynth.io import printable

    return table.rename(index=lambda label: printable(str(label)))


def summary_block(summary: pd.DataFrame) -> str:
    """Format a fit summary (arviz columns) as a fenced block: ESS as integers, others 3 decimals.

    Parameters
    ----------
    summary : pandas.DataFrame
        E.g. :meth:`geosynth.PaivaFit.summary` (``mean``, ``sd``, ..., ``ess_bulk``,
        ``ess_tail``, ``r_hat``).

    Returns
    -------
    str
        A fenced fixed-width Markdown block.
    """
    import math

    def count(value: float) -> str:
        return "NaN" if not math.isfinite(value) else f"{round(value):,d}"

    formatters = {column: count for column in summary.columns
                  if str(column).startswith("ess")}
    from geosynth.evaluation import markdown_code  # a fence no label's backticks close

    text = _printable_labels(summary).to_string(formatters=formatters,
                                                float_format="{:,.3f}".format)
    return markdown_code(text, block=True) + "\n"


def describe_lattice(grid: Grid) -> str:
    """One line: shape or kind, cell size, number of cells, contiguity, clipping."""
    clipped = ", clipped to the region/exclusions" if grid.is_clipped else ""
    if grid.n_cut_links:
        clipped = f"{clipped}, {grid.n_cut_links} link(s) cut by --barriers"
    if grid.exposure_given:
        clipped = f"{clipped}, exposure: {grid.exposure_source}"
    tail = f"{grid.contiguity} contiguity, {grid.n_components} component(s){clipped})"
    if grid.kind == "areal":
        linked = grid.n_linked_islands
        links = f", {linked} island(s) linked to the nearest area they reach" if linked else ""
        return f"{grid.n_cells} areas ({tail[:-1]}{links})"
    if grid.kind == "hexagonal":
        return (f"{grid.n_cells} hexagons of side {length_text(grid.cell_size[0], grid.crs)} "
                f"(six-neighbour contiguity, {grid.n_components} component(s){clipped})")
    rows, cols = grid.shape
    dx, dy = grid.cell_size
    return (f"{rows}x{cols} cells of {length_text(dx)} x {length_text(dy, grid.crs)} "
            f"({grid.n_cells} habitable, {tail}")


def length_text(value: float, crs: Any = None) -> str:
    """Return ``value`` as text, with the unit of ``crs`` when given (``"m"`` for metres).

    Whole units from 10 up (``"2,500"``), three significant digits below: a snap unit of
    2.5 mm printed as "0 m", which read as exact.
    """
    number = f"{value:,.0f}" if abs(value) >= 10 else f"{value:.3g}"
    if crs is None:
        return number
    unit = crs.axis_info[0].unit_name if crs.axis_info else "unit"
    return f"{number} {'m' if unit in ('metre', 'meter') else unit}"


#: The fewest chains and draws per chain of which arviz computes R-hat (each chain split in two
#: halves): with fewer every R-hat is NaN, which the output printed as "R-hat max: nan".
MIN_RHAT_CHAINS, MIN_RHAT_DRAWS = 2, 4


def describe_rhat(r_hat: float, fit: PaivaFit) -> str:
    """Return the largest R-hat as text; when it is NaN, say why and what to change.

    Parameters
    ----------
    r_hat : float
        The largest finite R-hat of ``fit``, NaN when there is none (:func:`fit_diagnostics`).
    fit : geosynth.PaivaFit
        The fit (its chains and draws per chain).

    Returns
    -------
    str
        E.g. ``"1.021"``, or ``"not computable: 1 chain, ..."`` instead of ``"nan"``.
    """
    if r_hat == r_hat:  # not NaN
        return f"{r_hat:.3f}"
    if fit.n_chains < MIN_RHAT_CHAINS:
        return (f"not computable: {fit.n_chains} chain, and R-hat compares {MIN_RHAT_CHAINS} or "
                "more (convergence not checked)")
    if fit.n_draws < MIN_RHAT_DRAWS:
        return (f"not computable: {fit.n_draws} draws per chain, and R-hat needs "
                f"{MIN_RHAT_DRAWS} or more; raise --iterations")
    return "not computable: no parameter's draws vary (convergence not checked)"


def fit_diagnostics(fit: PaivaFit) -> tuple[pd.DataFrame, float]:
    """Return the fit's arviz summary and its largest R-hat (NaN when undefined, e.g. one chain)."""
    import numpy as np

    summary = fit.summary()
    r_hat = summary["r_hat"].to_numpy(dtype=float) if "r_hat" in summary else np.array([])
    finite = r_hat[np.isfinite(r_hat)]
    return summary, float(finite.max()) if finite.size else float("nan")
