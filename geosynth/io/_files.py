"""Checks shared by the readers and writers of :mod:`geosynth.io`: input files, output targets."""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import unicodedata
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np

from geosynth._messages import CONTROL_CHARACTERS
from geosynth._validation import check_no_nul, describe_value
from geosynth.errors import DataWarning, InputError, InputTypeError, PrivacyLeakWarning

__all__ = [
    "read_bounded",
    "POINT_TYPE",
    "POLYGON_TYPE",
    "MULTIPOLYGON_TYPE",
    "as_path",
    "existing_file",
    "gdal_path",
    "check_target",
    "check_replaceable_file",
    "output_path_error",
    "printable",
    "geopackage_problem",
    "not_a_geopackage",
    "warn_exact_intensity",
    "warn_without_crs",
    "file_sha256",
]

#: shapely type ids of a Point, a Polygon and a MultiPolygon.
POINT_TYPE = 0
POLYGON_TYPE = 3
MULTIPOLYGON_TYPE = 6

_SQLITE_HEADER = b"SQLite format 3\x00"
# Unicode categories printable() replaces besides the controls: format characters, line and
# paragraph separators, and lone surrogates (the undecodable bytes of a file name, which a
# UTF-8 file or terminal cannot take).
_HIDDEN = frozenset({"Cf", "Zl", "Zp", "Cs"})
# URL schemes GDAL's Python bindings (pyogrio, rasterio) read a path's start as, ``s3:r.gpkg``
# the object ``r.gpkg`` on S3 (pyogrio.util.SCHEMES, rasterio._path.SCHEMES).
_GDAL_SCHEMES = frozenset({"file", "zip", "tar", "gzip", "http", "https", "ftp", "s3", "gs",
                           "az", "adls", "adl", "hdfs", "webhdfs", "oss", "swift"})
# What an existing output path may be besides a regular file or a symbolic link (which an
# output replaces) or a directory (refused apart): never replaced, even with overwrite.
_SPECIAL_FILES = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISCHR, "a character device"),
                  (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def as_path(path: Any, name: str = "path") -> Path:
    """Return ``path`` as a Path after checking that it is a file path (str or os.PathLike).

    ``Path(None)`` raised pathlib's bare TypeError, which names no parameter.

    Parameters
    ----------
    path : object
        The value given for the path.
    name : str, default "path"
        How the caller's argument is called, for the error message.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    geosynth.errors.InputTypeError
        ``path`` is neither a str nor an os.PathLike of a str (None, an int, bytes, ...).
    geosynth.errors.InputError
        ``path`` holds a NUL character (:func:`~geosynth._validation.check_no_nul`).
    """
    if not isinstance(path, str | os.PathLike) or not isinstance(os.fspath(path), str):
        raise InputTypeError(f"{name} must be a file path (str or pathlib.Path), got "
                             f"{describe_value(path)}")
    check_no_nul(os.fspath(path), name)
    return Path(path)


def gdal_path(path: Path, name: str = "path") -> Path:
    """Return a form of ``path`` that GDAL's bindings read as this very file; refuse a ``!``.

    pyogrio reads ``a!b.gpkg`` as the member ``b.gpkg`` of an archive ``a``, so a release
    written to ``r!cases.gpkg`` was added to an existing ``cases.gpkg`` (the confidential
    input, say) in place, and reading ``a!x.gpkg`` read ``x.gpkg``. It also reads ``s3:r.gpkg``
    and ``http:r.gpkg`` as URLs and drops a leading space (``" r.gpkg"`` read ``r.gpkg``):
    such a relative path is returned absolute, which it reads as the file.

    Parameters
    ----------
    path : pathlib.Path
        A file to read or write.
    name : str, default "path"
        How the caller's argument is called, for the error message.

    Returns
    -------
    pathlib.Path
        ``path``, or ``path.absolute()`` where GDAL would read the relative path otherwise.

    Raises
    ------
    geosynth.errors.InputError
        ``path`` holds a ``!``; the message names the path and the fix.
    """
    text = str(path)
    if "!" in text:
        raise InputError(f"{name} {printable(text)!r} holds a '!', after which GDAL reads the "
                         "name of a file inside an archive: it would read or write another "
                         "file; rename the file (or its folder) without '!'")
    scheme = urlparse(text.lstrip()).scheme.lower()
    if text != text.lstrip() or (scheme and all(p in _GDAL_SCHEMES for p in scheme.split("+"))):
        return path.absolute()
    return path


def existing_file(path: Any, name: str = "path") -> Path:
    """Return ``path`` as a Path after checking that it names an existing file.

    Parameters
    ----------
    path : str or os.PathLike
        The file to read.
    name : str, default "path"
        How the caller's argument is called, for the error messages.

    Returns
    -------
    pathlib.Path

    Raises
    ------
    geosynth.errors.InputError
        ``path`` is not a path (an InputTypeError), does not exist or is a directory, or holds
        a ``!`` (:func:`gdal_path`; a relative path GDAL would misread is returned absolute).
    """
    source = gdal_path(as_path(path, name), name)
    if not source.exists():
        if os.path.lexists(source):  # a link to nothing, or a loop, was "does not exist"
            raise InputError(f"{name} {str(source)!r} is a symbolic link to a file that does "
                             "not exist (or a loop of links); pass the file itself")
        raise InputError(f"{name} {str(source)!r} does not exist; check the file name")
    if source.is_dir():
        raise InputError(f"{name} {str(source)!r} is a directory; pass a file")
    if not source.is_file():  # reading a pipe would wait for a writer, a device never end
        raise InputError(f"{name} {str(source)!r} is not a regular file (a pipe or a device); "
                         "pass the file itself")
    return source


def read_bounded(path: Path, max_bytes: int, label: str) -> bytes:
    """Read a small regular file whole, refusing special files and anything over ``max_bytes``.

    ``path.stat().st_size`` is 0 for a pipe or ``/dev/zero``, so a size check before an
    unbounded ``read()`` lets such a file (or a symbolic link to one) hang the reader or fill
    its memory; here the open does not block, the opened file must be regular, and at most
    ``max_bytes + 1`` bytes are read.

    Parameters
    ----------
    path : pathlib.Path
        The file (a symbolic link is followed).
    max_bytes : int
        The largest size accepted.
    label : str
        How to name the file in a message.

    Returns
    -------
    bytes

    Raises
    ------
    geosynth.errors.InputError
        Not a regular file, or larger than ``max_bytes``.
    OSError
        The file cannot be opened or read.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise InputError(f"{label} is not a regular file (a pipe or a device); pass the "
                             "file itself")
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise InputError(f"{label} is larger than {max_bytes:,} bytes; it cannot be what "
                         "geosynth expects here")
    return data


def check_target(target: Path, overwrite: bool) -> None:
    """Refuse an output ``target`` that cannot be written or exists while ``overwrite`` is False.

    Parameters
    ----------
    target : pathlib.Path
        The output file.
    overwrite : bool
        Whether an existing file may be replaced.

    Raises
    ------
    geosynth.errors.InputError
        ``target`` holds a ``!`` (:func:`gdal_path`), is a directory, a pipe, a device or a
        socket (:func:`check_replaceable_file`),
        lies under a file, has a name too long for the file system (:func:`output_path_error`),
        or exists while ``overwrite`` is False; the message names the path and the fix.
    """
    gdal_path(target)  # refuses a "!"; the staged path is made GDAL-safe when written
    try:
        if target.is_dir():
            raise InputError(f"path {str(target)!r} is a directory; pass a file name in it "
                             "(e.g. release.gpkg, intensity.tif)")
        check_replaceable_file(target)
        for folder in target.absolute().parents:
            if os.path.lexists(folder):
                if not folder.is_dir():
                    raise InputError(f"cannot write {printable(str(target))}: "
                                     f"{printable(str(folder))} is a file, not a folder; choose "
                                     "another folder")
                break
        exists = os.path.lexists(target)
    except OSError as err:  # is_dir: "[Errno 36] File name too long", a folder not searchable
        raise output_path_error(target, err) from err
    if exists and not overwrite:
        raise InputError(f"{printable(str(target))} exists; pass overwrite=True (CLI: "
                         "--overwrite) to replace it")


def check_replaceable_file(target: Path, name: str = "path") -> None:
    """Refuse an output ``target`` that exists as a named pipe, a device or a socket.

    An output replaces a regular file (or a symbolic link to one, or a dangling one: the link
    itself, never what it points to). ``os.replace`` would as well put a GeoPackage in place
    of a named pipe another program reads, or, run as root, of ``/dev/null``, and replaced the
    link ``/dev/stdout`` for the whole system; so such a path, or a link to one, is refused,
    with or without ``overwrite``. A directory is left to the caller (refused apart).

    Parameters
    ----------
    target : pathlib.Path
        The output path.
    name : str, default "path"
        How the caller's argument (or command-line option) is called, for the message.

    Raises
    ------
    geosynth.errors.InputError
        ``target`` is a named pipe, a character or block device, or a socket, or a symbolic
        link to one (``/dev/stdout``).
    OSError
        ``target`` cannot be examined (a name too long for the file system, a folder that
        cannot be searched).
    """
    try:
        mode = os.lstat(target).st_mode
    except (FileNotFoundError, NotADirectoryError):  # nothing there (yet)
        return
    link = ""
    if stat.S_ISLNK(mode):  # /dev/stdout, a link to a terminal: replaced for the whole system
        try:
            mode, link = os.stat(target).st_mode, "a symbolic link to "
        except OSError:  # dangling, or a loop: the link itself is replaced
            return
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return
    kind = next((label for test, label in _SPECIAL_FILES if test(mode)), "a special file")
    raise InputError(
        f"{name} {printable(str(target))!r} is {link}{kind}, not a regular file: an output "
        "replaces only a regular file (or a symbolic link to one), even with overwrite=True "
        "(CLI: --overwrite); give the name of a file on disk (nothing was written)"
    )


def output_path_error(target: Path, err: OSError, name: str = "path") -> InputError:
    """Return the error of an output path whose folder cannot hold it, naming it and the fix.

    Parameters
    ----------
    target : pathlib.Path
        The output path.
    err : OSError
        What failed: examining ``target`` or creating its folder or a file in it.
    name : str, default "path"
        How the caller's argument (or command-line option) is called, for the message.

    Returns
    -------
    geosynth.errors.InputError
        ``"<name> '<target>': cannot write in the folder '<folder>' (<why>); ..."``, or, for a
        name longer than the file system allows, advice to choose a shorter one.
    """
    shown = printable(str(target))
    if err.errno == errno.ENAMETOOLONG:
        return InputError(f"{name} {shown!r}: a file or folder name in that path is longer than "
                          "the file system allows; choose a shorter name (nothing was written)")
    folder = printable(str(target.parent) if str(target.parent) else ".")
    reason = err.strerror or str(err)
    if err.errno in (errno.EEXIST, errno.ENOTDIR):
        reason = "a part of that path is a file, not a folder"
    return InputError(f"{name} {shown!r}: cannot write in the folder {folder!r} ({reason}); "
                      "choose a folder you can write to (nothing was written)")


def printable(text: Any) -> str:
    r"""Return ``str(text)`` with every control character replaced by ``"?"``.

    Text read from a file (layer names, metadata keys and values, attribute levels) may hold
    terminal escape sequences; printed raw they could rewrite the screen or hide lines. C0
    controls (including newline, tab and ESC), DEL, C1 controls, Unicode format characters
    (such as right-to-left overrides), the Unicode line and paragraph separators (U+2028,
    U+2029, which end a line for many readers of a log) and lone surrogates (Python's stand-ins
    for the bytes of a file name that are not UTF-8, which no UTF-8 output can write) are
    replaced.

    Parameters
    ----------
    text : Any
        A string or anything with ``str()``.

    Returns
    -------
    str
        One line of plain printable text.

    Examples
    --------
    >>> printable("synthetic_1\x1b[2J")
    'synthetic_1?[2J'
    """
    text = CONTROL_CHARACTERS.sub("?", str(text))
    if text.isascii():
        return text
    return "".join("?" if unicodedata.category(char) in _HIDDEN else char for char in text)


def geopackage_problem(source: Path) -> str | None:
    """Say why ``source`` cannot be a GeoPackage from its first bytes, or None if it may be one.

    Parameters
    ----------
    source : pathlib.Path
        An existing file.

    Returns
    -------
    str or None
        ``"it is empty (0 bytes)"``, ``"it is not an SQLite database"``, ... or None.
    """
    try:
        with open(source, "rb") as handle:
            head = handle.read(100)
    except OSError as err:
        return f"it cannot be opened ({err.strerror})"
    if not head:
        return "it is empty (0 bytes)"
    if not head.startswith(_SQLITE_HEADER):
        return "it is not an SQLite database, which every GeoPackage is"
    if len(head) < 100:
        return "it is cut short (its SQLite header is incomplete)"
    return None  # GDAL decides (some writers leave the GeoPackage application id unset)


def not_a_geopackage(source: Path, reason: str | BaseException | None = None) -> InputError:
    """Return the error for a file that is not a readable GeoPackage.

    Parameters
    ----------
    source : pathlib.Path
        The file.
    reason : str or Exception, optional
        What is wrong; an exception of GDAL/SQLite is summarised (its raw SQL is not repeated).

    Returns
    -------
    geosynth.errors.InputError
        ``"<name> is not a GeoPackage (or is damaged): <reason>; ..."``.
    """
    if isinstance(reason, BaseException):
        text = str(reason)
        if "malformed" in text or "disk image" in text or "file is not a database" in text:
            reason = "its database is damaged (truncated or corrupt)"
        elif "not recognized as being in a supported file format" in text:
            reason = "GDAL does not recognise its format"
        else:
            reason = f"GDAL cannot read it ({printable(text.split(';')[0])[:200]})"
    detail = f": {reason}" if reason else ""
    return InputError(
        f"{printable(source.name)} is not a GeoPackage (or is damaged){detail}; check that the "
        "file was copied completely, or export it again as a GeoPackage (e.g. from QGIS)"
    )


def warn_exact_intensity(fit: Any, lam: np.ndarray, what: str, stacklevel: int,
                         combination: int | None = None) -> None:
    """Warn that a published intensity of a fit of exact counts follows those counts.

    The posterior mean λ of a (cell, combination) pair is pulled towards its count where few
    records make it: on the thesis scenario (500 records, 12 combinations, 4x4 cells) the
    rounded λ of 93 % of the pairs equals the count, 98.6 % of the pairs are told empty or not,
    and a combination of one record peaks at its cell. A noise-aware fit of ε-DP counts is
    post-processing of those and gets no warning.

    Parameters
    ----------
    fit : geosynth.PaivaFit
        The fit (``noise_scale`` None: exact counts).
    lam : numpy.ndarray, shape (G, B), or (G,) with ``combination``
        Its posterior mean intensity, as written.
    what : str
        How the message names what is written (``"the grid layer of release.gpkg"``).
    stacklevel : int
        Of the warning: the writer's caller.
    combination : int, optional
        The one combination ``lam`` holds (a map draws one).
    """
    if fit.noise_scale is not None:
        return
    counts = np.asarray(fit.counts.counts)
    pairs = "(cell, combination) pairs"
    if combination is not None:
        counts, pairs = counts[:, combination], "cells"
    share = float(np.mean(np.rint(lam) == counts)) if counts.size else 0.0
    warnings.warn(
        f"{what} holds the posterior mean intensity of a fit of the exact counts: rounded, it "
        f"equals the confidential count of {share:.0%} of the {pairs}, and "
        "a combination held by one record stands out at that record's cell. Publish it only "
        "where the counts per cell may be published; otherwise leave it out (in Python, "
        "include_intensity=True, write_intensity_geotiff, a map's fit=) (CLI: "
        "--include-intensity, --intensity-tif) or use an epsilon-DP release",
        PrivacyLeakWarning,
        stacklevel=stacklevel + 1,
    )


def warn_without_crs(crs: Any, what: str, stacklevel: int) -> None:
    """DataWarning for a published file without a CRS, which GIS software cannot place.

    The library accepts points and a grid without one (the command line asks for a
    projected CRS); their GeoTIFF and release file were written without a word, and a GIS
    then put them at its own origin or refused them.
    """
    if crs is None:
        warnings.warn(
            f"{what} has no CRS, so GIS software cannot place it; give the points and the grid "
            "their CRS (gdf.set_crs(...), Grid.regular(..., crs=...)) before preparing the "
            "counts",
            DataWarning, stacklevel=stacklevel + 1,
        )


def file_sha256(path: str | os.PathLike) -> str:
    """Return the SHA-256 of the file ``path``, as hexadecimal text (read in 1 MiB blocks).

    What an audit file records of its release (:func:`geosynth.io.verify_audit`) and of the
    inputs it was made from (the command line's ``provenance``).
    """
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
