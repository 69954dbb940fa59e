"""All-or-nothing writes of one or several files.

Every output is first written into a private staging folder beside its target (mode 0700, so a
file inside it is unreadable by other users whatever mode its writer gave it), and only moved into
place when every output of the run has been written. A run that fails, is interrupted
(Ctrl-C) or is killed therefore never leaves a partial output and never replaces an existing
one; a staging folder left behind by a killed process is removed by the next write of the same
output.

* :func:`atomic_path` -- one file, as a context manager.
* :class:`AtomicOutputs` -- several files committed together (the release, its audit file,
  the review map and the report of one ``geosynth release`` run).

Replacing versus creating. Without ``overwrite`` the final step is :func:`os.link` (which fails
if the target appeared meanwhile, e.g. a second run writing the same file) followed by removing
the staged name, so two concurrent runs cannot both create the same output: the second one
fails at its last step and leaves nothing. With ``overwrite`` the final step is
:func:`os.replace`, after a hard link to the file it replaces is kept in the staging folder: a
later move of the same commit that fails puts every replaced file back. Only a regular file
or a symbolic link (the link itself) is ever replaced: a named pipe, a device or a socket at a
target is refused when it is added and again at commit, with or without ``overwrite``.
Private outputs (``private=True``) are ``chmod``-ed to 0600 while still inside the 0700
staging folder, so they are never readable by others at any moment; published ones are never
writable by every user (0664 at most under umask 0).

Killed while committing. The moves of several files are not one step: a process killed between
two of them (``kill -9``, an out-of-memory kill) would leave some targets new and others old,
e.g. a release whose audit file is the previous run's. So before the first move a commit of
more than one file writes a journal into every staging folder (the targets, the identity of each
staged file, the file each one replaces), and removes the first folder's journal once every file
is in place: that removal is the commit point. The next write of any of those targets finds the
dead writer's folders (see :func:`remove_stale_staging`) and, if the first journal is still
there and some target is not yet the file moved there, takes the commit back -- each target
that is still the file moved in gets back the file it replaced (or is removed if it replaced
nothing) -- so a commit killed between two moves, like a failed one, leaves every target as it
was. A writer killed after its last move (while flushing the folders) left every target new:
that commit stands, and only its staging folders are removed.

Durability. Before the first move every staged file is flushed to disk (:func:`os.fsync`), and
after the last one the folders whose entries changed are: without it a power cut soon after a
commit could leave a target of zero length or with old blocks under its new name (the rename
reached the disk before the data), an output presented as complete that is not.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import shutil
import stat
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from geosynth._messages import CONTROL_CHARACTERS
from geosynth.errors import InputError

__all__ = [
    "AtomicOutputs",
    "atomic_path",
    "companion_of",
    "create_new",
    "interrupted_commit",
    "private_file_mode",
    "refuse_held_by_another_user",
    "refuse_shared_folder",
    "remove_stale_staging",
    "sqlite_journals",
    "STAGING_MARK",
]

#: Part of the name of every staging folder: ``.<target name>.<STAGING_MARK>-<pid>-<random>``
#: (a target name too long to fit is shortened, see :func:`_staging_prefix`).
STAGING_MARK = "geosynth-staging"
# The most bytes of a target name kept whole in its staging folder's name: the folder adds 35
# bytes (mark, PID, random part) and a name may have 255 bytes (NAME_MAX) in all.
_NAME_BYTES = 200
_PRIVATE_MODE = 0o600
_LOCK_NAME = ".lock"  # in each staging folder, flock-ed by its writer while it runs
_CLAIM_MARK = ".claimed"  # in a staging folder while its writer's empty claim holds the target
_JOURNAL_NAME = ".commit.json"  # in each staging folder of a commit of several files while it runs
# The files SQLite keeps beside a database while it is open (write-ahead log, its index, the
# rollback journal).
_SQLITE_JOURNALS = ("-wal", "-shm", "-journal")
# GDAL's files about a raster or vector file, read as part of it: auxiliary metadata and
# statistics, overviews, masks.
_GDAL_SIDECARS = (".aux.xml", ".ovr", ".msk")


def companion_of(path: Path, others: Iterable[Path]) -> Path | None:
    """Return the one of ``others`` beside which GDAL or SQLite keeps a file named ``path``.

    GDAL reads ``<file>.aux.xml``, ``.ovr`` and ``.msk`` as part of ``<file>`` (and a commit
    sets them aside with the file it replaces, :func:`_set_aside_gdal_sidecars`); SQLite keeps
    ``<file>-wal``, ``-shm`` and ``-journal`` beside an open GeoPackage. An output so named was
    deleted by the commit that moved ``<file>`` in, after the run had said it was written. The
    suffix is compared without case (it is on case-insensitive file systems).

    Parameters
    ----------
    path : pathlib.Path
        An output.
    others : iterable of pathlib.Path
        The other outputs, compared with ``path`` as given (resolve them alike).

    Returns
    -------
    pathlib.Path or None
        The output ``path`` is a companion file of, or None.
    """
    for other in others:
        if path.parent == other.parent and path.name.lower() in {
                (other.name + suffix).lower() for suffix in _GDAL_SIDECARS + _SQLITE_JOURNALS}:
            return other
    return None


def private_file_mode() -> int:
    """Return the mode of internal files (seeds, review maps, reports): 0600."""
    return _PRIVATE_MODE


@dataclass
class _Staged:
    target: Path
    folder: Path
    path: Path
    private: bool
    lock: int  # descriptor of the folder's lock file, flock-ed while the folder is in use


class AtomicOutputs:
    """Stage several output files and move them into place together.

    Use as a context manager: files are staged with :meth:`add` (which returns the path to
    write), and moved into place when the block ends without an exception (or by an explicit
    :meth:`commit`). If the block raises -- including :class:`KeyboardInterrupt` -- every staged
    file is removed and no target is touched.

    Parameters
    ----------
    overwrite : bool, default False
        Whether existing targets may be replaced. Without it an existing target is refused when
        it is added (before any work) and again at commit (a file created meanwhile by another
        process is never replaced).

    Examples
    --------
    >>> with AtomicOutputs() as outputs:                              # doctest: +SKIP
    ...     outputs.add("report.md", private=True).write_text("...")
    ...     outputs.add("release.gpkg")  # ... written by a driver
    """

    def __init__(self, overwrite: bool = False) -> None:
        from geosynth._validation import check_bool  # NumPy: not at the CLI's first import

        self.overwrite = check_bool(overwrite, "overwrite")
        self._staged: list[_Staged] = []
        self._new_folders: list[Path] = []  # created by add: their entries are flushed at commit
        self._done = False
        self._cleaned = False  # staging folders removed and their locks closed

    # ------------------------------------------------------------------ staging
    def add(self, path: str | os.PathLike, *, private: bool = False) -> Path:
        """Reserve a staged path for ``path`` and return it (the file does not exist yet).

        The staging folder is created at once, so an output folder that cannot be written
        fails here, before any expensive work. Stale staging folders of the same target left
        by dead processes are removed.

        Parameters
        ----------
        path : str or os.PathLike
            The final destination. Its parent folder is created if needed.
        private : bool, default False
            Internal file (seeds, original points, confidential summaries): mode 0600.

        Returns
        -------
        pathlib.Path
            Where to write the file: same name and suffix as ``path`` (drivers such as GDAL pick
            the format from the suffix), inside a private staging folder.

        Raises
        ------
        FileExistsError
            ``path`` exists and ``overwrite`` is False.
        geosynth.errors.InputError
            ``path`` is not a file path (an InputTypeError: None, bytes, a number); it is a
            named pipe, a device or a socket (never replaced, even with ``overwrite``); its
            folder cannot be created or written, or a name in it is too long for the file
            system (the error's ``__cause__`` is the OSError); or SQLite's journal files
            (``<path>-wal``, ``-shm``, ``-journal``) are beside it. The message names ``path``
            and the fix.
        IsADirectoryError
            ``path`` is a directory.
        ValueError
            ``path`` was already added, or the outputs were committed or discarded.
        """
        from geosynth.io._files import as_path  # geopandas: not at the CLI's first import

        if self._done:
            raise ValueError("these outputs were already committed or discarded")
        target = as_path(path)
        if CONTROL_CHARACTERS.search(str(target)):
            # GDAL drops them from the staged name: the write failed only after all the work,
            # with a message about free space.
            raise InputError(f"the output path {str(target)!r} contains control characters (a "
                             "newline, tab or escape); choose a plain file name")
        if str(target).startswith("/vsi"):
            raise InputError(f"the output path {str(target)!r} is a GDAL virtual file system "
                             "path; outputs are staged and moved as real files, so give a file "
                             "on disk")
        if any(_same_path(target, staged.target) for staged in self._staged):
            raise ValueError(f"{target} was already added to these outputs")
        self._refuse_companions(target)
        _check_replaceable(target, self.overwrite)
        folder, lock = self._make_staging_folder(target)
        staged = _Staged(target=target, folder=folder, path=folder / target.name,
                         private=private, lock=lock)
        self._staged.append(staged)
        return staged.path

    def _refuse_companions(self, target: Path) -> None:
        """Refuse ``target`` if it is a GDAL or SQLite companion of an output, or has one."""
        key = _path_key(target)
        for staged in self._staged:
            other = _path_key(staged.target)
            owner, companion = ((staged.target, target) if companion_of(key, [other])
                                else (target, staged.target) if companion_of(other, [key])
                                else (None, None))
            if owner is not None:
                raise InputError(
                    f"the output {str(companion)!r} is the name GDAL or SQLite gives a file "
                    f"beside the output {str(owner)!r}, read as part of it and removed when it "
                    "is replaced; give it another name (nothing was written)"
                )

    def _make_staging_folder(self, target: Path) -> tuple[Path, int]:
        """Create the folders of ``target`` and its staging folder, locked; return both.

        A folder that cannot be created or written (a read-only or virtual file system such as
        ``/proc``, a part of the path that is a file) raised the OSError of the staging
        folder, a name the user never gave.
        """
        from geosynth.io._files import output_path_error

        try:
            for folder in reversed(_missing_folders(target.parent)):  # 0755 at most: under
                with contextlib.suppress(FileExistsError):  # umask 0 mkdir gave 0777
                    os.mkdir(folder, 0o755)
                    self._new_folders.append(folder)  # ours: another process's is kept
            target.parent.mkdir(parents=True, exist_ok=True)  # the errors of a path's file
            refuse_shared_folder(target.parent)
            folder = Path(tempfile.mkdtemp(prefix=f"{_staging_prefix(target)}{os.getpid()}-",
                                           dir=target.parent))
        except OSError as err:
            raise output_path_error(target, err) from err
        try:
            return folder, _hold_lock(folder)
        except OSError as err:
            shutil.rmtree(folder, ignore_errors=True)
            raise output_path_error(target, err) from err

    @property
    def targets(self) -> list[Path]:
        """The final destinations, in the order they were added (and will be committed)."""
        return [staged.target for staged in self._staged]

    # ------------------------------------------------------------------ ending
    def unwritten(self) -> list[Path]:
        """Return the targets whose staged file was never written (:meth:`commit` skips them)."""
        return [staged.target for staged in self._staged if not staged.path.exists()]

    def commit(self) -> list[Path]:
        """Move every staged file into place, in the order they were added.

        A staged path that was never written is skipped (its target is left as it was). Every
        staged file is flushed to disk before the first move, and the folders of the targets
        after the last one (see the module's notes on durability). If a move fails (a target in
        a folder that forbids replacing another user's file, a full disk), the targets moved
        before it are taken back: with ``overwrite`` each replaced file is restored from a hard
        link (or copy) kept in its staging folder, and each created one removed, so a failed
        commit leaves every target as it was.

        Returns
        -------
        list of pathlib.Path
            The targets written.

        Raises
        ------
        FileExistsError
            Without ``overwrite``, a target was created by someone else after it was added;
            targets already moved by this commit are removed again and nothing else is written.
        geosynth.errors.InputError
            SQLite's journal files appeared beside a target since it was added (a viewer opened
            the old file); targets already moved are taken back likewise. Or, with
            ``overwrite``, a named pipe, device or socket was made at a target since it was
            added: nothing is replaced.
        OSError
            A staged file could not be flushed to disk (a full disk, an I/O error): nothing is
            replaced; or a target's folder could not be: the targets are taken back likewise.
        """
        if self._done:
            raise ValueError("these outputs were already committed or discarded")
        # (target, backup of what it replaced, GDAL sidecars set aside: (original, kept))
        written: list[tuple[Path, Path | None, list[tuple[Path, Path]]]] = []
        try:
            with _folders_locked(staged.target.parent for staged in self._staged):
                self._commit_locked(written)
        except BaseException:
            self.discard()  # also when the folders' locks were not had: nothing written
            raise
        self._cleanup()
        return [target for target, _, _ in written]

    def _commit_locked(self, written: list) -> None:
        """Make the moves of :meth:`commit` (its targets' folders locked by the caller)."""
        from geosynth.io._files import check_replaceable_file

        try:
            present = []
            for staged in self._staged:
                if not staged.folder.is_dir():
                    raise FileNotFoundError(
                        errno.ENOENT, "could not be written: another process removed its "
                        "staging folder (nothing was replaced)", str(staged.target),
                    )
                if not staged.path.exists():  # never written by the caller
                    continue
                if self.overwrite:  # a pipe or device made at the target since it was added
                    check_replaceable_file(staged.target)
                if staged.private:
                    os.chmod(staged.path, _PRIVATE_MODE)
                else:
                    _drop_write_by_others(staged.path)
                _flush_file(staged)  # all of them before the first move
                present.append(staged)
            backups = [_backup(staged) if self.overwrite else None for staged in present]
            journal = _write_journal(present, backups) if len(present) > 1 else None
            for staged, backup in zip(present, backups, strict=True):
                _check_no_sqlite_journal(staged.target)  # a viewer may have opened it since
                aside = _set_aside_gdal_sidecars(staged)
                try:
                    _move(staged.path, staged.target, self.overwrite)
                except BaseException:
                    _put_back(aside)
                    raise
                written.append((staged.target, backup, aside))
            _flush_folders([target.parent for target, _, _ in written]
                           + [folder.parent for folder in self._new_folders])
            if journal is not None:
                journal.unlink()  # the commit point (see the module's notes)
        except BaseException:
            _take_back(written)
            self.discard()
            raise

    def discard(self) -> None:
        """Remove every staged file, and the folders made for them; no target is touched.

        A folder is removed only if empty (never a file of someone else): a failed write to
        ``new/sub/r.gpkg`` left ``new/sub`` behind.
        """
        self._cleanup()
        for folder in sorted(set(self._new_folders), key=lambda p: len(p.parts), reverse=True):
            with contextlib.suppress(OSError):
                folder.rmdir()

    def _cleanup(self) -> None:
        if self._cleaned:  # a lock descriptor closed twice may by then be another file's
            return
        self._done = self._cleaned = True
        for staged in self._staged:
            shutil.rmtree(staged.folder, ignore_errors=True)
            with contextlib.suppress(OSError):
                os.close(staged.lock)

    def __enter__(self) -> AtomicOutputs:
        return self

    def __exit__(self, kind, value, traceback) -> None:
        if self._done:
            return
        if kind is None:
            self.commit()
        else:
            self.discard()


@contextlib.contextmanager
def atomic_path(
    path: str | os.PathLike, overwrite: bool = True, *, private: bool = False
) -> Iterator[Path]:
    """Yield a staged path for ``path``; on success move it to ``path``.

    If the block raises, the staged file is removed and ``path`` is left untouched, so a
    failed write never leaves a half-written file behind.

    Parameters
    ----------
    path : str or os.PathLike
        Final destination. Its parent directory is created if needed.
    overwrite : bool, default True
        If False and ``path`` exists, raise :class:`FileExistsError` before writing anything
        (and again if it appears before the move: the move never replaces it).
    private : bool, default False
        Internal file: mode 0600 (readable by no one else at any moment).

    Yields
    ------
    pathlib.Path
        Staged path with the same name and suffix as ``path`` (drivers such as GDAL pick the
        format from the suffix).
    """
    with AtomicOutputs(overwrite=overwrite) as outputs:
        yield outputs.add(path, private=private)


def create_new(path: str | os.PathLike, *, private: bool, binary: bool = False) -> IO:
    """Open a new file for writing, mode 0600 (``private``) or 0666 & ~umask from its creation.

    Unlike a ``chmod`` after writing, an internal file is never readable by others, even for an
    instant or after a kill.

    Parameters
    ----------
    path : str or os.PathLike
        The file to create; it must not exist (usually a staged path of :class:`AtomicOutputs`).
    private : bool
        Internal file (seeds, original points, confidential summaries): mode 0600.
    binary : bool, default False
        Open in binary mode; else text, UTF-8.

    Returns
    -------
    file object
        Open for writing; close it (``with create_new(...) as stream``).

    Raises
    ------
    FileExistsError
        ``path`` exists.
    """
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600 if private else 0o666)
    if binary:
        return os.fdopen(descriptor, "wb")
    return os.fdopen(descriptor, "w", encoding="utf-8")


def remove_stale_staging(target: str | os.PathLike) -> list[Path]:
    """Remove staging folders of ``target`` left behind by processes that no longer run.

    Parameters
    ----------
    target : str or os.PathLike
        An output path.

    Returns
    -------
    list of pathlib.Path
        The folders removed.
    """
    target = Path(target)
    removed = []
    if not target.parent.is_dir():
        return removed
    for entry in target.parent.iterdir():
        if not _abandoned(entry, target):  # a staging folder of target whose writer is gone
            continue
        removed.extend(_finish_dead_commit(entry))
        _drop_claim(entry, target)
        shutil.rmtree(entry, ignore_errors=True)
        removed.append(entry)
    return removed


def interrupted_commit(target: str | os.PathLike) -> bool:
    """Whether a writer of ``target`` died while moving its files into place.

    Then ``target`` and the files committed with it (a release and its audit file) may be half
    new and half old, and the files they replaced wait in the dead writer's staging folders:
    the next write of any of them (:func:`remove_stale_staging`) puts them back. Deleting or
    moving the mismatched files instead loses them (the seeds of the earlier release).

    Parameters
    ----------
    target : str or os.PathLike
        An output path.

    Returns
    -------
    bool
    """
    target = Path(os.path.abspath(target))
    if not target.parent.is_dir():
        return False
    for entry in target.parent.iterdir():
        journal = _read_journal(entry) if _abandoned(entry, target) else None
        if journal is not None and _half_done(journal):
            return True
    return False


def _abandoned(folder: Path, target: Path) -> bool:
    """Whether ``folder`` is a staging folder of ``target`` whose writer no longer runs."""
    prefix = _staging_prefix(target)
    if folder.parent != target.parent or not folder.name.startswith(prefix):
        return False
    if not _own_folder(folder):
        return False
    pid_text = folder.name[len(prefix):].split("-", 1)[0]
    if pid_text.isdecimal() and _process_alive(int(pid_text)):
        return False
    return not _locked(folder)  # a lock: a live writer whose PID is not visible (a container)


@dataclass(frozen=True)
class _JournalEntry:
    target: Path
    folder: Path
    device: int
    inode: int  # of the staged file: the target is this file once it has been moved
    backup: Path | None


def _write_journal(present: list[_Staged], backups: list[Path | None]) -> Path:
    """Write the journal of a commit of several files into each staging folder, the first last.

    Returns the first folder's journal, whose removal is the commit point: a journal found in
    a dead writer's folder means a commit was under way only while the first one is there
    (:func:`_finish_dead_commit`).
    """
    entries = []
    for staged, backup in zip(present, backups, strict=True):
        info = os.stat(staged.path)
        entries.append({"target": os.path.abspath(staged.target),
                        "folder": os.path.abspath(staged.folder),
                        "device": info.st_dev, "inode": info.st_ino,
                        "backup": None if backup is None else os.path.abspath(backup)})
    text = json.dumps({"first": entries[0]["folder"], "files": entries})
    for staged in reversed(present):  # the first folder's last: then every folder holds one
        with create_new(staged.folder / _JOURNAL_NAME, private=True) as stream:
            stream.write(text)
            stream.flush()
            os.fsync(stream.fileno())
        _flush_folders([staged.folder])
    return present[0].folder / _JOURNAL_NAME


def _read_journal(folder: Path) -> tuple[Path, list[_JournalEntry]] | None:
    """Return ``(first folder, entries)`` of ``folder``'s journal; None if none or unreadable."""
    try:
        with open(folder / _JOURNAL_NAME, encoding="utf-8") as stream:
            record = json.load(stream)
        entries = [
            _JournalEntry(Path(item["target"]), Path(item["folder"]), int(item["device"]),
                          int(item["inode"]),
                          None if item["backup"] is None else Path(item["backup"]))
            for item in record["files"]
        ]
        first = Path(record["first"])
    except (OSError, ValueError, TypeError, KeyError):
        return None
    paths = [first] + [p for e in entries for p in (e.target, e.folder, e.backup) if p]
    if not entries or first != entries[0].folder or not all(p.is_absolute() for p in paths):
        return None
    # Only the staging folders of the journal's own targets, and backups inside them.
    if not all(e.folder.name.startswith(_staging_prefix(e.target))
               and e.folder.parent == e.target.parent
               and (e.backup is None or e.backup.parent == e.folder) for e in entries):
        return None
    return first, entries


def _half_done(journal: tuple[Path, list[_JournalEntry]]) -> bool:
    """Whether a journalled commit's dead writer stopped between its first move and its last.

    Its first folder still holds the journal (the writer removes it there last, at the commit
    point), and some target is not yet the file the commit moves there. A writer killed after
    its last move (while flushing the folders, before removing the journal; or a power cut
    that lost the removal) left every target new and consistent: that commit is finished, not
    taken back. Taking it back deleted the new audit file, the seeds of a release that may
    already be published, at the next write of any one of its files.
    """
    first, entries = journal
    if not (_abandoned(first, entries[0].target) and _read_journal(first) is not None):
        return False
    return not _was_moved(entries[-1])  # the moves are made in the journal's order


def _was_moved(entry: _JournalEntry) -> bool:
    """Whether the dead writer moved ``entry``'s file: the target is it, or it left its folder.

    Not whether the target still is that file: a target deleted or saved again by its user
    after a finished commit made the commit look half done, and the next write put the
    previous release back beside the new audit file. A staged name gone with its whole
    staging folder (removed by hand) tells nothing.
    """
    staged = entry.folder / entry.target.name
    left = os.path.isdir(entry.folder) and not os.path.lexists(staged)
    return left or _moved_in(entry)


def _moved_in(entry: _JournalEntry) -> bool:
    """Whether ``entry.target`` is the file its commit moved there."""
    try:
        info = os.lstat(entry.target)
    except OSError:
        return False
    return (info.st_dev, info.st_ino) == (entry.device, entry.inode)


def _finish_dead_commit(folder: Path) -> list[Path]:
    """Take back the commit a dead writer left half done, if ``folder`` journals one.

    While the first folder of the commit still holds its journal and some target is not yet
    the file moved there, the writer died between two moves: each target that is still the
    file moved in gets back the file it replaced (or is removed if it replaced none), with GDAL
    sidecars set aside for it. Otherwise the commit either finished (every file in place, the
    journal's removal lost) or moved nothing. Either way the commit's other
    staging folders are removed, the first one last.

    Returns
    -------
    list of pathlib.Path
        The other staging folders removed (``folder`` itself is left to the caller).
    """
    folder = Path(os.path.abspath(folder))
    journal = _read_journal(folder)
    if journal is None or folder not in [entry.folder for entry in journal[1]]:
        return []
    first, entries = journal
    if _half_done(journal):
        for entry in reversed(entries):
            _undo_move(entry)
    removed = []
    others = [e for e in entries if e.folder not in (folder, first)]
    others += [e for e in entries if e.folder == first != folder]
    for entry in others:
        if os.path.lexists(entry.folder) and _abandoned(entry.folder, entry.target):
            shutil.rmtree(entry.folder, ignore_errors=True)
            removed.append(entry.folder)
    return removed


def _undo_move(entry: _JournalEntry) -> None:
    """Restore what ``entry.target`` was before a dead writer's commit moved a file there."""
    with contextlib.suppress(OSError):
        if _moved_in(entry):
            if entry.backup is not None and os.path.lexists(entry.backup):
                os.replace(entry.backup, entry.target)
            else:
                os.unlink(entry.target)
    _put_back([(Path(f"{entry.target}{suffix}"), entry.folder / f".replaced{suffix}")
               for suffix in _GDAL_SIDECARS
               if os.path.lexists(entry.folder / f".replaced{suffix}")])


def _own_folder(entry: Path) -> bool:
    """Whether ``entry`` is a folder (not a symbolic link to one) of this process's user.

    Only such a folder can be a staging folder of ours. In a shared folder another user can
    create an entry with a staging folder's name (a symbolic link to a folder of theirs, or a
    folder of their own) holding a claim mark: taken for a dead writer's folder, it made this
    user's empty file at the target be removed as a dead claim.
    """
    try:
        info = os.lstat(entry)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid()


def _drop_write_by_others(path: Path) -> None:
    """Make a published output not writable by every user (0664 at most).

    Under umask 0 GDAL created a GeoTIFF 0666, which anyone could then edit. A group's write
    is left as the umask says (a team's umask 002 shares its files).
    """
    mode = stat.S_IMODE(os.stat(path).st_mode)
    if mode & 0o002:
        os.chmod(path, mode & ~0o002)


def _missing_folders(folder: Path) -> list[Path]:
    """Return the folders of the path ``folder`` that do not exist yet, innermost first."""
    missing = []
    folder = Path(os.path.abspath(folder))
    while not os.path.lexists(folder) and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    return missing


def _flush_file(staged: _Staged) -> None:
    """Flush the staged file of ``staged`` to disk; an error names its target."""
    try:
        fd = os.open(staged.path, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as err:
        raise OSError(
            err.errno, f"could not be written to disk ({err.strerror or err}); nothing was "
            "replaced: free some space or check the disk, then run again", str(staged.target),
        ) from err


def _flush_folders(folders: list[Path]) -> None:
    """Flush the entries of each folder (the names moved or created in it) to disk.

    A file system that cannot flush a folder (EINVAL, ENOTSUP: some network and FUSE mounts)
    is left as it is; another error (EIO) is raised, naming the folder.
    """
    for folder in dict.fromkeys(os.path.abspath(f) for f in folders):
        try:
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        except OSError as err:
            raise OSError(err.errno, f"could not be opened to flush it to disk "
                          f"({err.strerror or err})", folder) from err
        try:
            os.fsync(fd)
        except OSError as err:
            if err.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
                raise OSError(err.errno, f"could not be flushed to disk ({err.strerror or err})"
                              "; the outputs were taken back: check the disk, then run again",
                              folder) from err
        finally:
            os.close(fd)


def _staging_prefix(target: Path) -> str:
    """Return ``.<target name>.<STAGING_MARK>-``, the start of the names of its staging folders.

    A target name longer than ``_NAME_BYTES`` bytes is cut there and followed by ``~`` and 12
    hex digits of its SHA-256 (so two long names sharing their start keep apart folders): its
    whole name with the mark, PID and random part exceeded NAME_MAX, and the write of a file
    whose name the file system accepts failed with "File name too long".
    """
    name = target.name
    encoded = os.fsencode(name)
    if len(encoded) > _NAME_BYTES:
        digest = hashlib.sha256(encoded).hexdigest()[:12]
        name = f"{os.fsdecode(encoded[:_NAME_BYTES - 13])}~{digest}"
    return f".{name}.{STAGING_MARK}-"


@contextlib.contextmanager
def _folders_locked(folders: Iterable[Path]) -> Iterator[None]:
    """Hold an exclusive flock on each folder (in sorted order) while the block runs.

    Two runs with ``overwrite`` committing the same outputs at once interleaved their moves:
    the release of one beside the audit file, map and report of the other, each run reporting
    success (its seeds lost). Commits to the same folders now run one after the other, each
    leaving a whole set. A folder that cannot be opened or locked (a file system without
    flock) is left unlocked, as before.
    """
    held = []
    try:
        for folder in sorted({Path(f).resolve() for f in folders}):
            try:
                fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
            except OSError:
                continue
            held.append(fd)
            _wait_for_lock(fd, folder)
        yield
    finally:
        for fd in held:
            os.close(fd)  # closing releases the flock


#: Seconds a commit waits for another one into the same folder (commits take seconds).
COMMIT_WAIT_SECONDS = 60.0


def _wait_for_lock(fd: int, folder: Path) -> None:
    """Take the flock of ``folder`` (open as ``fd``), waiting at most COMMIT_WAIT_SECONDS.

    A blocking flock waited for ever, silently, with Ctrl-C held back until the commit ended.
    A file system without flock leaves the folder unlocked, as before.
    """
    deadline = time.monotonic() + COMMIT_WAIT_SECONDS
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise InputError(
                    f"another run has been moving its outputs into {str(folder)!r} for over "
                    f"{COMMIT_WAIT_SECONDS:g} s; nothing was written: run again once it has "
                    "finished"
                ) from None
            time.sleep(0.05)
        except OSError:
            return


def _hold_lock(folder: Path) -> int:
    """Create ``folder``'s lock file and hold an exclusive flock on it; return its descriptor.

    A PID alone does not tell whether a staging folder's writer still runs: a process in
    another PID namespace (containers sharing a volume) saw the writer's PID as dead, removed
    its folder, and the writer then reported files it never wrote.
    """
    fd = os.open(folder / _LOCK_NAME, os.O_RDWR | os.O_CREAT, _PRIVATE_MODE)
    with contextlib.suppress(OSError):  # a file system without flock: the PID check decides
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def _locked(folder: Path) -> bool:
    """Whether a live process holds ``folder``'s lock (False: no lock file, or a free one)."""
    try:
        fd = os.open(folder / _LOCK_NAME, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:  # a file system without flock: the PID check decided
        return False
    finally:
        os.close(fd)
    return False


def _backup(staged: _Staged) -> Path | None:
    """Keep the file ``staged.target`` is about to replace, in its staging folder; None if none.

    A hard link (same folder, so same file system) costs nothing; where links are refused the
    file is copied. If neither works the commit fails here, before this target is replaced.
    """
    target = staged.target
    if not os.path.lexists(target):
        return None
    backup = staged.folder / f".replaced-{target.name}"
    try:
        os.link(target, backup, follow_symlinks=False)
    except OSError:
        shutil.copy2(target, backup, follow_symlinks=False)
    return backup


def _take_back(written: list[tuple[Path, Path | None, list[tuple[Path, Path]]]]) -> None:
    """Undo a failed commit: restore each replaced file, remove each created one (last first).

    The GDAL sidecars set aside for a target come back with it.
    """
    for target, backup, aside in reversed(written):
        with contextlib.suppress(OSError):
            if backup is None:
                target.unlink()
            else:
                os.replace(backup, target)
        _put_back(aside)


def _process_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def _check_replaceable(target: Path, overwrite: bool) -> None:
    """Refuse a target that is a directory, a pipe, a device or a socket, or exists already.

    Stale staging folders of ``target`` are removed first (one may hold a dead writer's empty
    claim of it). Without ``overwrite`` an existing target raises :class:`FileExistsError`;
    with it only a regular file or a symbolic link may be replaced
    (:func:`geosynth.io.check_replaceable_file`). A path that cannot be examined (a name
    too long for the file system) raises :class:`geosynth.errors.InputError`.
    """
    from geosynth.io._files import check_replaceable_file, output_path_error

    try:
        remove_stale_staging(target)
        is_dir = target.is_dir()
        check_replaceable_file(target)
        exists = os.path.lexists(target)  # a dangling symbolic link exists too
    except OSError as err:  # e.g. "[Errno 36] File name too long"
        raise output_path_error(target, err) from err
    if is_dir:
        raise IsADirectoryError(errno.EISDIR, "is a directory; give a file name", str(target))
    if exists and not overwrite:
        raise FileExistsError(
            errno.EEXIST, "exists; pass overwrite=True (CLI: --overwrite) to replace it",
            str(target),
        )
    if exists:
        refuse_held_by_another_user(target)
    _check_no_sqlite_journal(target)


def refuse_shared_folder(folder: str | os.PathLike) -> None:
    """Refuse an output folder that every user may change: it or a folder above it.

    In a folder writable by others without the sticky bit another user may rename any entry,
    the private staging folder included (or, one level up, the output's folder itself), and
    put a link to a folder of theirs in its place (probed as ``nobody`` in a 0777 folder): the
    commit then followed it, ``chmod``-ing a file of root's that the link named and publishing
    the intruder's file as the audit file. A sticky folder (``/tmp``) lets only an entry's
    owner rename it. The folders' owners and groups can still change them: they are trusted.

    Parameters
    ----------
    folder : str or os.PathLike
        The folder of an output (its real path and every folder above it are checked).

    Raises
    ------
    geosynth.errors.InputError
        ``folder`` or a folder above it is writable by others and has no sticky bit.
    """
    path = Path(os.path.realpath(folder))
    for checked in (path, *path.parents):
        mode = os.stat(checked).st_mode
        if mode & stat.S_IWOTH and not mode & stat.S_ISVTX:
            raise InputError(
                f"the folder {str(checked)!r} of an output can be changed by every user (mode "
                f"{stat.S_IMODE(mode):o}, no sticky bit), who could swap the files being "
                "written for others; write into a folder only you (and your group) can "
                "change, or make it sticky as /tmp is (chmod o-w or chmod +t "
                f"{str(checked)!r}); nothing was written"
            )


def refuse_held_by_another_user(target: str | os.PathLike, name: str | None = None) -> None:
    """Refuse a ``target`` that the sticky bit of its folder keeps this process from replacing.

    In such a folder (``/tmp``, shared project folders) a file another user owns can be
    replaced only by that user or root: the run was refused at the final move, after the fit,
    although every output is meant to be checked before any work.

    Parameters
    ----------
    target : str or os.PathLike
        An output that exists.
    name : str, optional
        How the message names it (e.g. ``"r.gpkg (--out)"``); default the path.

    Raises
    ------
    geosynth.errors.InputError
        ``target`` belongs to another user and its folder has the sticky bit.
    """
    target = Path(target)
    try:
        owner = os.lstat(target).st_uid
        folder = os.stat(target.parent)
    except OSError:
        return
    me = os.geteuid()
    if folder.st_mode & stat.S_ISVTX and me != 0 and me not in (owner, folder.st_uid):
        raise InputError(
            f"{name or target} belongs to another user, in a folder with the sticky bit (such "
            "as /tmp), where only its owner may replace it; choose another file name (nothing "
            "was written)"
        )


def _set_aside_gdal_sidecars(staged: _Staged) -> list[tuple[Path, Path]]:
    """Move GDAL's files about the old target (``.aux.xml``, ``.ovr``, ``.msk``) aside.

    GDAL (and QGIS through it) reads them as part of the file with that name: a stale
    ``intensity.tif.aux.xml`` gave a new GeoTIFF the old one's band descriptions and tags,
    that is another fit's combinations. They belong to the file being replaced (or to one
    deleted), so they leave just before the new file moves in: into the staging folder, from
    which a failed commit puts them back (:func:`_put_back`) and a successful one removes them.

    Returns
    -------
    list of (pathlib.Path, pathlib.Path)
        ``(where it was, where it is kept)`` for each sidecar moved.
    """
    aside: list[tuple[Path, Path]] = []
    try:
        for suffix in _GDAL_SIDECARS:
            sidecar = Path(f"{staged.target}{suffix}")
            if os.path.lexists(sidecar):
                kept = staged.folder / f".replaced{suffix}"
                os.replace(sidecar, kept)
                aside.append((sidecar, kept))
    except BaseException:
        _put_back(aside)  # all or none
        raise
    return aside


def _put_back(aside: list[tuple[Path, Path]]) -> None:
    """Return sidecars set aside by :func:`_set_aside_gdal_sidecars` to where they were."""
    for sidecar, kept in aside:
        with contextlib.suppress(OSError):
            os.replace(kept, sidecar)


def sqlite_journals(path: Path) -> list[str]:
    """Return the names of SQLite's journal files beside ``path`` (-wal, -shm, -journal).

    Parameters
    ----------
    path : pathlib.Path
        An SQLite file (a GeoPackage).

    Returns
    -------
    list of str
        ``["r.gpkg-wal", "r.gpkg-shm"]``, or ``[]``.
    """
    return [f"{path.name}{s}" for s in _SQLITE_JOURNALS if os.path.lexists(f"{path}{s}")]


def _check_no_sqlite_journal(target: Path) -> None:
    """Refuse a target with SQLite's journal files beside it (GeoPackages are SQLite).

    ``<target>-wal`` and ``-shm`` (or ``-journal``) exist while a program such as QGIS has the
    old file open, and stay when it was killed. SQLite replays a leftover journal into whatever
    file then has the target's name: a new release moved in beside it was damaged for good on
    its first read, and its audit file's SHA-256 no longer matched it.
    """
    present = sqlite_journals(target)
    if present:
        raise InputError(
            f"{target} has SQLite's {' and '.join(present)} beside it: a program (such as QGIS) "
            "has the old file open, or was killed while it had, and SQLite would replay that "
            "journal into the new file and damage it; close the program, or delete those files "
            "if nothing has the old file open (nothing was written)"
        )


def _move(staged: Path, target: Path, overwrite: bool) -> None:
    if overwrite:
        os.replace(staged, target)
        return
    try:
        os.link(staged, target)  # fails if the target exists: never replaces
    except FileExistsError:
        raise FileExistsError(
            errno.EEXIST, "was created by another process while this one ran; nothing was "
            "replaced (pass overwrite=True, CLI: --overwrite, to replace it)", str(target),
        ) from None
    except OSError as err:  # file systems without hard links: an exclusive reservation
        if err.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
        _reserve_then_replace(staged, target)
        return
    staged.unlink()


def _reserve_then_replace(staged: Path, target: Path) -> None:
    """Claim ``target`` with an empty file (``O_EXCL``), then replace it by ``staged``.

    For file systems without hard links (vfat, some SMB and FUSE mounts). A kill between the
    two steps left an empty file at the target, which made the next write refuse the name; the
    mark in the staging folder lets the next write's cleanup of dead staging folders remove it.
    """
    mark = staged.parent / _CLAIM_MARK
    mark.touch(mode=_PRIVATE_MODE)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL
    fd = os.open(target, flags, stat.S_IMODE(os.stat(staged).st_mode))
    os.close(fd)
    os.replace(staged, target)
    mark.unlink()


def _drop_claim(folder: Path, target: Path) -> None:
    """Remove the empty file a dead writer's folder claimed ``target`` with, if it is still so."""
    if not (folder / _CLAIM_MARK).exists():
        return
    with contextlib.suppress(OSError):
        info = os.lstat(target)
        if stat.S_ISREG(info.st_mode) and info.st_size == 0:
            os.unlink(target)


def _path_key(path: Path) -> Path:
    """``path`` with its folder resolved (links followed), its own name kept.

    A link named as the output is replaced, not followed; links in its folders name the same
    places: ``a.txt`` and ``link/a.txt`` with ``link -> .`` compared unequal by ``abspath``, and
    the second silently won (or the commit blamed "another process").
    """
    absolute = Path(os.path.abspath(path))
    return Path(os.path.realpath(absolute.parent)) / absolute.name


def _same_path(a: Path, b: Path) -> bool:
    return _path_key(a) == _path_key(b)


# ---------------------------------------------------------------------- writers' side
def transaction_overwrite(outputs: AtomicOutputs | None, overwrite: object) -> bool:
    """Check a writer's ``outputs`` and ``overwrite``; return whether files may be replaced.

    A writer that takes ``outputs`` (a caller's transaction, e.g. the command line's) stages
    its file into it; ``overwrite`` must then agree with the transaction's.

    Parameters
    ----------
    outputs : AtomicOutputs or None
        The caller's transaction, or None (the writer commits its own).
    overwrite : bool
        The writer's ``overwrite`` argument.

    Returns
    -------
    bool

    Raises
    ------
    geosynth.errors.InputError
        ``outputs`` is not an AtomicOutputs, or ``overwrite=True`` with outputs that may not
        overwrite (an InputTypeError: ``overwrite`` not a bool).
    """
    from geosynth._validation import check_bool  # NumPy: not at the CLI's first import

    check_bool(overwrite, "overwrite")
    if outputs is None:
        return bool(overwrite)
    if not isinstance(outputs, AtomicOutputs):
        raise InputError(
            f"outputs must be a geosynth._atomic.AtomicOutputs, got {type(outputs).__name__}"
        )
    if overwrite and not outputs.overwrite:
        raise InputError(
            "overwrite=True but outputs=AtomicOutputs(overwrite=False): the outputs decide "
            "whether files are replaced; create them with overwrite=True"
        )
    return outputs.overwrite


def stage_output(transaction: AtomicOutputs, target: Path, *, private: bool,
                 example: str) -> Path:
    """``transaction.add(target)``, its errors as InputError naming the path and the fix.

    Parameters
    ----------
    transaction : AtomicOutputs
        Where to stage.
    target : pathlib.Path
        The file to write.
    private : bool
        Mode 0600.
    example : str
        A file name to suggest when ``target`` is a directory (``"release.gpkg"``).

    Returns
    -------
    pathlib.Path
        The staged path to write.
    """
    try:
        return transaction.add(target, private=private)
    except InputError:  # already names the path and the fix
        raise
    except FileExistsError:
        raise InputError(
            f"{target} exists; pass overwrite=True (CLI: --overwrite) to replace it"
        ) from None
    except IsADirectoryError:
        raise InputError(
            f"path {str(target)!r} is a directory; pass a file name such as {example}"
        ) from None
    except ValueError as err:
        raise InputError(f"{target}: {err}") from None


def drop_staged(transaction: AtomicOutputs, outputs: AtomicOutputs | None,
                staged: list[Path]) -> None:
    """Undo a writer's failed write: discard its own transaction, or remove its staged files.

    In the caller's transaction (``outputs``) a staged path that does not exist is skipped by
    its commit; SQLite's journal files beside a staged GeoPackage go too.

    Parameters
    ----------
    transaction : AtomicOutputs
        The transaction written into (``outputs``, or the writer's own).
    outputs : AtomicOutputs or None
        The caller's transaction, None if the writer made its own.
    staged : list of pathlib.Path
        The paths the writer staged.
    """
    if outputs is None:
        transaction.discard()
        return
    for path in staged:
        for leftover in (path, *(Path(f"{path}{end}") for end in ("-journal", "-wal", "-shm"))):
            if os.path.lexists(leftover):
                leftover.unlink()
