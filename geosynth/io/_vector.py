"""Vector files of several datasets or layers: zip archives, the layer to read, shapefiles.

One home for what :func:`geosynth.io.read_points` and :func:`geosynth.io.read_polygons` (the
command line's ``--region``, ``--exclude`` and ``--areas`` too) share:

* :func:`vector_source` -- what GDAL opens of a file: the file itself, or, in a ``.zip``
  archive (read through GDAL's ``/vsizip/`` without unpacking it), its one dataset or its one
  folder of shapefiles (whose shapefiles are its layers).
* :func:`choose_layer` -- the layer to read of a file of several: the one given, else the only
  layer of the geometry wanted (said in a note), else a refusal naming every layer with its
  geometry type.
* :func:`check_shapefile_complete` -- a shapefile (plain or zipped) without its ``.dbf``, or
  shorter than its ``.shx`` index says, refused.

Zip bombs. GDAL inflates a member until its compressed data end, whatever size the archive
declares, and pyogrio loads the whole dataset into memory: a small archive could fill the
analyst's memory. Before GDAL opens anything, the files it reads of an archive (the dataset,
or every file of the shapefiles' folder: ``.shp``, ``.shx``, ``.dbf``, ``.prj``, ``.cpg``, ...)
are checked, together:

* encrypted ones, or compressed otherwise than stored or Deflate (Deflate64), are refused
  (GDAL read an encrypted member as if it were not, and said "cpl_unzOpenCurrentFile()
  failed" of a bzip2 or LZMA one);
* more than :data:`MAX_ZIP_BYTES` (2 GiB) uncompressed are refused;
* above :data:`MIN_ZIP_RATIO_BYTES` (64 MiB) uncompressed, a compression ratio (uncompressed /
  compressed bytes) above :data:`MAX_ZIP_RATIO` (250) is refused. Measured on files of 10^5
  random points (EPSG:31983) zipped with ``zipfile.ZIP_DEFLATED``: a GeoPackage compresses
  2.4-3.7x, a GeoJSON 5.5-18x, a FlatGeobuf 3-9x, a shapefile's files together 2-6x; 5·10^5
  points at 1000 geocoded sites with constant attributes 5x (GeoPackage) to 44x
  (FlatGeobuf). A single ``.dbf`` reaches Deflate's own limit (about 1030x, what a bomb of
  zeros reaches) when its fields are blank or constant, so the ratio is that of the files
  read together, never of one of them;
* each one is then inflated once (streamed, nothing kept): one that holds more or less data
  than the archive declares (a crafted header, which GDAL would inflate in full), whose
  checksum (CRC-32) does not match (GDAL reads damaged data without a word), or whose local
  header contradicts the archive's directory (GDAL said "cpl_unzOpenCurrentFile() failed") is
  refused. This costs one pass of zlib over the files (0.1 s for a GeoJSON of 85 MB); a
  Deflate64 file (Windows' own zip folders write them) is inflated by ``inflate64`` (Python's
  zlib cannot), in steps that bound each call's output (:func:`_deflate64_data`): Deflate64
  packs zeros 26,000 times, so a bomb of 2 GiB declaring 1 kB fits in 80 kB.

GDAL's own guard, a refusal of a declared ratio far above Deflate's limit, let a 65 MiB GeoJSON
of blanks deflated 1000x through, and trusts the declared sizes.

The archive's directory (its list of files) may take at most :data:`MAX_ZIP_DIRECTORY_BYTES`
(4 MiB), read from its end records before Python's zipfile parses it: zipfile builds an
object of every entry before any check runs (572 bytes each, measured on 200,000 empty files
whose entries take 102 bytes of the archive), so a 100 MB archive of a million empty files
would take some 570 MB. 4 MiB hold some 40,000 files of 100-byte names; 5000 shapefiles in
one folder (25000 files) took GDAL 5 s to open.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any, BinaryIO, NamedTuple

import inflate64

from geosynth._messages import format_bytes
from geosynth.errors import InputError
from geosynth.io._files import printable

__all__ = [
    "ZIPPED_SUFFIXES",
    "MAX_MEMBERS_SHOWN",
    "MAX_LAYERS_SHOWN",
    "MAX_LAYER_NAME",
    "MAX_ZIP_BYTES",
    "MAX_ZIP_RATIO",
    "MIN_ZIP_RATIO_BYTES",
    "MAX_ZIP_DIRECTORY_BYTES",
    "VectorSource",
    "vector_source",
    "LayerOption",
    "choose_layer",
    "describe_layers",
    "check_shapefile_complete",
]

#: The datasets a .zip archive may hold (read through /vsizip/); a shapefile by its .shp.
ZIPPED_SUFFIXES = (".shp", ".gpkg", ".geojson", ".json", ".fgb")
#: Names of the files of an archive shown in a message at most.
MAX_MEMBERS_SHOWN = 10
#: Layers named in a message at most (a GeoPackage of a whole municipality may hold hundreds).
MAX_LAYERS_SHOWN = 12
#: Characters of a layer name shown in a message at most.
MAX_LAYER_NAME = 60
#: Bytes the files GDAL reads of a zip archive may hold uncompressed, together, at most: pyogrio
#: loads the whole dataset into memory (a larger dataset is read unzipped, its size in sight).
MAX_ZIP_BYTES = 2 * 1024**3
#: Compression ratio (uncompressed / compressed bytes) of the files GDAL reads of a zip archive,
#: together, at most: real data compress 2-44x, a bomb of zeros about 1030x (module docstring).
MAX_ZIP_RATIO = 250
#: Uncompressed bytes of those files above which :data:`MAX_ZIP_RATIO` applies.
MIN_ZIP_RATIO_BYTES = 64 * 1024**2
#: Bytes a zip archive's directory may take at most (its end record says, before zipfile reads).
MAX_ZIP_DIRECTORY_BYTES = 4 * 1024**2

# The files of a shapefile GDAL may read beside its .shp (a folder's .dbf alone is a layer).
_SHAPEFILE_PARTS = frozenset({".shp", ".shx", ".dbf", ".prj", ".cpg", ".qix", ".sbn", ".sbx"})
# Compression methods GDAL's /vsizip/ reads: stored, Deflate, Deflate64; and those it does not.
_STORED, _DEFLATED, _DEFLATE64 = 0, 8, 9
_METHODS = {12: "bzip2", 14: "LZMA", 93: "Zstandard", 95: "XZ", 98: "PPMd", 99: "AES encryption"}
_LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")  # a zip's local file header (30 bytes)
_END_RECORD = struct.Struct("<4sHHHHIIH")  # end of central directory record (22 bytes)
_ZIP64_LOCATOR = struct.Struct("<4sIQI")  # Zip64 end of central directory locator (20 bytes)
_ZIP64_END = struct.Struct("<4sQHHIIQQQQ")  # Zip64 end of central directory record (56 bytes)
_CHUNK = 1 << 20
_DEFLATE64_STEP = 128  # compressed bytes inflated a call (_deflate64_data)


class VectorSource(NamedTuple):
    """What GDAL opens of a vector file.

    Attributes
    ----------
    path : str or pathlib.Path
        The file itself, or its ``/vsizip/`` path: the dataset read, or the folder of
        shapefiles read (its shapefiles are its layers).
    suffix : str
        The dataset's extension, lower case (``".shp"`` for a folder of shapefiles).
    zipped : bool
        Whether the dataset is read from a zip archive.
    member : str
        In a zip: the dataset file read, or the folder of shapefiles read (``""`` for the top
        of the archive).
    shapefiles : tuple of str
        In a zip: the ``.shp`` members read (one, or those of the folder).
    """

    path: str | Path
    suffix: str
    zipped: bool = False
    member: str = ""
    shapefiles: tuple[str, ...] = ()

    @property
    def layered(self) -> bool:
        """Whether its format holds layers: a GeoPackage, or a zipped folder of shapefiles."""
        return self.suffix == ".gpkg" or (self.zipped and self.suffix == ".shp")


def vector_source(source: Path, shown: str) -> VectorSource:
    """Return what GDAL opens of ``source``: itself, or the dataset of a ``.zip`` archive.

    In an archive, folders, ``__MACOSX`` and hidden files (``._points.shp``) are ignored;
    shapefiles all in one folder are read as that folder (its shapefiles are its layers; one
    shapefile alone is read as itself), one other dataset (:data:`ZIPPED_SUFFIXES`) as that
    member. Anything else is refused naming the datasets found, as is a ``.zip`` that is no zip
    archive (GDAL said it "does not exist").

    Parameters
    ----------
    source : pathlib.Path
        An existing file (:func:`geosynth.io.existing_file`).
    shown : str
        How messages name it (``"points.zip"``, ``"--region city.zip"``), printable.

    Returns
    -------
    VectorSource

    Raises
    ------
    geosynth.errors.InputError
        ``source`` is a ``.zip`` file that is no zip archive (or a damaged one), or that holds
        no dataset, or several that are not shapefiles of one folder (or only a zip archive),
        or whose files read are encrypted, compressed in a way GDAL cannot read, larger
        uncompressed than :data:`MAX_ZIP_BYTES` or compressed more than :data:`MAX_ZIP_RATIO`
        (a zip bomb), or hold other data than the archive declares (crafted or damaged).
    """
    suffix = source.suffix.lower()
    if suffix != ".zip":
        return VectorSource(source, suffix)
    infos = _zip_infos(source, shown)
    names = [info.filename for info in infos]
    candidates = [name for name in names if PurePosixPath(name).suffix.lower() in ZIPPED_SUFFIXES
                  and not _ignored_member(name)]
    shapefiles = tuple(name for name in candidates if name.lower().endswith(".shp"))
    archive = _vsizip(source)
    folders = {PurePosixPath(name).parent.as_posix() for name in shapefiles}
    if shapefiles and len(shapefiles) == len(candidates) and len(folders) == 1:
        folder = folders.pop()
        member = shapefiles[0] if len(shapefiles) == 1 else "" if folder == "." else folder
        _check_members(source, shown, [
            info for info in infos if PurePosixPath(info.filename).parent.as_posix() == folder
            and PurePosixPath(info.filename).suffix.lower() in _SHAPEFILE_PARTS])
        return VectorSource(f"{archive}/{member}" if member else archive, ".shp", True, member,
                            shapefiles)
    if len(candidates) == 1:
        member = candidates[0]
        _check_members(source, shown, [info for info in infos if info.filename == member])
        return VectorSource(f"{archive}/{member}", PurePosixPath(member).suffix.lower(), True,
                            member)
    raise _refused_archive(shown, names, candidates)


def _vsizip(source: Path) -> str:
    """Return GDAL's ``/vsizip/`` path of the archive ``source``.

    Braces let GDAL take the whole archive path, even one holding ".zip/" in a folder name;
    but GDAL ends the archive at the brace closing the first, so a path whose braces do not
    pair (``x}.zip``, ``{x.zip``) is given without them (GDAL then finds the archive as the
    first ``.zip`` along the path that is a file).
    """
    path = source.as_posix()
    depth = 0
    for char in path:
        depth += (char == "{") - (char == "}")
        if depth < 0:
            break
    return f"/vsizip/{{{path}}}" if depth == 0 else f"/vsizip/{path}"


def _zip_infos(source: Path, shown: str) -> list[zipfile.ZipInfo]:
    """Return the files in the zip archive ``source`` (not its folders).

    An archive whose directory takes more than :data:`MAX_ZIP_DIRECTORY_BYTES` is refused
    before zipfile reads it (module docstring).
    """
    try:
        if _directory_bytes(source) > MAX_ZIP_DIRECTORY_BYTES:
            raise InputError(f"{shown} lists more files than geosynth reads from a zip archive "
                             "(its directory takes more than "
                             f"{format_bytes(MAX_ZIP_DIRECTORY_BYTES, exact=True)}"
                             "; GIS data take a few files): unzip it and pass the dataset "
                             "itself")
        with zipfile.ZipFile(source) as archive:
            return [info for info in archive.infolist() if not info.is_dir()]
    except (zipfile.BadZipFile, OSError, EOFError) as err:
        reason = ("it is not a zip archive, or a damaged one or cut short"
                  if isinstance(err, zipfile.BadZipFile | EOFError)
                  else printable(err.strerror or type(err).__name__))
        raise InputError(f"cannot read {shown}: {reason}; copy or zip the files again") from None


def _directory_bytes(source: Path) -> int:
    """Return the size of the zip archive ``source``'s directory, as its end records give it.

    The end record is found as zipfile finds it: the archive's last 22 bytes if they are one
    without a comment, else the last record signature in the last 64 KiB + 22 bytes. With
    Zip64, zipfile takes the size from the Zip64 end record just before the locator, and other
    readers from the one the locator points to: the larger of all is returned. Returns 0 where
    no record is found (zipfile then refuses the file).
    """
    with open(source, "rb") as handle:
        size = handle.seek(0, 2)
        start = max(size - (1 << 16) - _END_RECORD.size, 0)
        handle.seek(start)
        tail = handle.read()
        at = len(tail) - _END_RECORD.size
        if at < 0 or not (tail.startswith(b"PK\x05\x06", at) and tail.endswith(b"\x00\x00")):
            at = tail.rfind(b"PK\x05\x06")
        if at < 0 or at + _END_RECORD.size > len(tail):
            return 0
        sizes = [_END_RECORD.unpack_from(tail, at)[5]]
        locator = start + at - _ZIP64_LOCATOR.size
        if locator >= 0:
            handle.seek(locator)
            signature, _, offset, _ = _ZIP64_LOCATOR.unpack(handle.read(_ZIP64_LOCATOR.size))
            if signature == b"PK\x06\x07":
                for record_at in (locator - _ZIP64_END.size, offset):
                    handle.seek(max(record_at, 0))
                    record = handle.read(_ZIP64_END.size)
                    if len(record) == _ZIP64_END.size and record.startswith(b"PK\x06\x06"):
                        sizes.append(_ZIP64_END.unpack(record)[8])
        return max(sizes)


def _check_members(source: Path, shown: str, infos: list[zipfile.ZipInfo]) -> None:
    """Refuse the files GDAL reads of the archive ``source`` if they could not be read safely.

    Encrypted files, compressions GDAL lacks, more than :data:`MAX_ZIP_BYTES` uncompressed, a
    compression ratio above :data:`MAX_ZIP_RATIO` (above :data:`MIN_ZIP_RATIO_BYTES`), and
    files whose data are not what the archive declares (:func:`_check_member_data`). No
    message gives a file's size, which tells how many records it holds.
    """
    for info in infos:
        where = f"{printable(info.filename)} in {shown}"
        if info.flag_bits & 0x1 or info.compress_type == 99:
            raise InputError(f"{where} is encrypted (password-protected), which geosynth does "
                             "not read: unzip it with its password and pass the file itself, "
                             "or zip it again without a password")
        if info.compress_type not in (_STORED, _DEFLATED, _DEFLATE64):
            method = _METHODS.get(info.compress_type, "an unusual method")
            raise InputError(f"{where} is compressed with {method} (zip method "
                             f"{info.compress_type}), which GDAL cannot read in a zip archive: "
                             "zip it again with the usual compression (Deflate, any zip tool's "
                             "default), or unzip it and pass the file itself")
    total = sum(info.file_size for info in infos)
    largest = printable(max(infos, key=lambda info: info.file_size).filename) if infos else ""
    what = (f"{largest} in {shown} declares" if len(infos) == 1 else
            f"the {len(infos)} files of shapefiles read in {shown} (the largest {largest}) "
            "declare")
    if total > MAX_ZIP_BYTES:
        raise InputError(f"{what} more than {format_bytes(MAX_ZIP_BYTES, exact=True)} "
                         "uncompressed, more than geosynth reads from a zip archive (a zip "
                         "bomb fills the memory): check the archive; if it is the data you "
                         "meant, unzip it and pass the file itself")
    packed = sum(info.compress_size for info in infos)
    if total > MIN_ZIP_RATIO_BYTES and total > MAX_ZIP_RATIO * packed:
        raise InputError(f"{what} more than {MAX_ZIP_RATIO} times "
                         f"{'its' if len(infos) == 1 else 'their'} compressed size "
                         "uncompressed (and over "
                         f"{format_bytes(MIN_ZIP_RATIO_BYTES, exact=True)}), where GIS data "
                         "compress less than 50 times: it looks like a zip bomb. Check "
                         "the archive; if it is the data you meant, unzip it and pass the "
                         "file itself")
    try:
        with open(source, "rb") as handle:
            for info in infos:
                _check_member_data(handle, info, f"{printable(info.filename)} in {shown}")
    except OSError as err:
        raise InputError(f"cannot read {shown}: {printable(err.strerror or type(err).__name__)}"
                         "; copy or zip the files again") from None


def _check_member_data(handle: BinaryIO, info: zipfile.ZipInfo, where: str) -> None:
    """Refuse a file of an archive whose data are not what the archive's directory declares.

    Its local header must agree with the directory (as GDAL requires), and its compressed data
    (the bytes the directory gives it, which GDAL reads), inflated and counted in chunks
    (nothing kept), must be as long as the directory says and match its CRC-32: GDAL inflates
    them all, so a header declaring less let a bomb pass the size checks (Python's zipfile
    stops at the declared size, and a CRC of those bytes then matches).
    """
    handle.seek(info.header_offset)
    header = handle.read(_LOCAL_HEADER.size)
    if len(header) < _LOCAL_HEADER.size or not header.startswith(b"PK\x03\x04"):
        raise _damaged(where, "its data are not where the archive's directory says")
    _, _, flags, method, _, _, crc, packed, size, name_length, extra_length = (
        _LOCAL_HEADER.unpack(header))
    central = (info.CRC, info.compress_size, info.file_size)
    local = central if flags & 0x8 else (crc, packed, size)  # 0x8: sizes after the data
    if method != info.compress_type or any(
            mine not in (theirs, 0xFFFFFFFF) for mine, theirs in zip(local, central,
                                                                    strict=True)):
        raise _damaged(where, "its own header and the archive's directory disagree on its "
                       "compression or size")
    if method == _STORED and info.compress_size != info.file_size:
        raise _damaged(where, "it is stored uncompressed, yet its compressed and uncompressed "
                       "sizes differ")
    handle.seek(info.header_offset + _LOCAL_HEADER.size + name_length + extra_length)
    length, checksum = 0, 0
    for data in _MEMBER_DATA[method](handle, info.compress_size, where):
        length += len(data)
        checksum = zlib.crc32(data, checksum)
        if length > info.file_size:
            raise _damaged(where, "it holds more data than the archive declares (GDAL would "
                           "inflate them all)")
    if length < info.file_size:
        raise _damaged(where, "it is cut short")
    if checksum != info.CRC:
        raise _damaged(where, "its data do not match their checksum (CRC-32)")


def _stored_data(handle: BinaryIO, left: int, where: str) -> Iterator[bytes]:
    """Yield the ``left`` bytes of a stored file, at most :data:`_CHUNK` at a time."""
    while left:
        data = handle.read(min(_CHUNK, left))
        if not data:
            raise _damaged(where, "it is cut short")
        left -= len(data)
        yield data


def _deflated_data(handle: BinaryIO, left: int, where: str) -> Iterator[bytes]:
    """Yield a Deflate file's data, inflated from its ``left`` compressed bytes in chunks.

    zlib inflates at most :data:`_CHUNK` bytes a call, whatever the compression ratio.
    """
    inflater = zlib.decompressobj(-15)
    while not inflater.eof:
        if inflater.unconsumed_tail:
            packed = inflater.unconsumed_tail
        else:
            packed = handle.read(min(_CHUNK, left))
            left -= len(packed)
        try:
            data = inflater.decompress(packed, _CHUNK)
        except zlib.error:
            raise _damaged(where, "its compressed data are corrupt") from None
        if not packed and not data:
            raise _damaged(where, "it is cut short")
        yield data


def _deflate64_data(handle: BinaryIO, left: int, where: str) -> Iterator[bytes]:
    """Yield a Deflate64 file's data, inflated from its ``left`` compressed bytes in steps.

    Python's zlib cannot inflate Deflate64 (Deflate with a 64 KiB window and matches of up to
    65,538 bytes), so ``inflate64`` does, which takes no output limit: it is fed
    :data:`_DEFLATE64_STEP` compressed bytes a call, which hold at most 57 longest matches
    (18 bits each), so a call returns at most 3.7 MB (3.4 MB measured on zeros, which
    Deflate64 packs 26,000 times: a bomb of 2 GiB fits in 80 kB).
    """
    inflater = inflate64.Inflater()
    while not inflater.eof:
        packed = handle.read(min(_DEFLATE64_STEP, left))
        if not packed:
            raise _damaged(where, "it is cut short")
        left -= len(packed)
        try:
            data = inflater.inflate(packed)
        except ValueError:
            raise _damaged(where, "its compressed data are corrupt") from None
        yield data


_MEMBER_DATA = {_STORED: _stored_data, _DEFLATED: _deflated_data, _DEFLATE64: _deflate64_data}


def _damaged(where: str, reason: str) -> InputError:
    """Return the error of a file ``where`` of an archive whose data are not as declared."""
    return InputError(f"{where} is damaged or crafted: {reason}; copy or zip the files again "
                      "(an archive still refused after a fresh copy may be a zip bomb)")


def _ignored_member(name: str) -> bool:
    """Whether ``name`` is a macOS resource fork (``__MACOSX/``, ``._p.shp``) or hidden."""
    parts = PurePosixPath(name).parts
    return "__MACOSX" in parts or any(part.startswith(".") for part in parts)


def _shown_names(names: list[str]) -> list[str]:
    """``names``, printable, at most :data:`MAX_MEMBERS_SHOWN` of them (then ``"..."``)."""
    return [printable(name) for name in names[:MAX_MEMBERS_SHOWN]] + (
        ["..."] if len(names) > MAX_MEMBERS_SHOWN else [])


def _refused_archive(shown: str, names: list[str], candidates: list[str]) -> InputError:
    """Return the error of an archive holding no dataset, or several not of one folder."""
    archives = [name for name in names if name.lower().endswith(".zip")
                and not _ignored_member(name)]
    if not candidates and archives:
        return InputError(
            f"{shown} holds no dataset geosynth reads but a zip archive "
            f"({_shown_names(archives)}); geosynth does not open a zip inside a zip: unzip "
            f"{shown} and pass the archive inside it")
    if not candidates:
        return InputError(
            f"{shown} holds no dataset geosynth reads (a {', '.join(ZIPPED_SUFFIXES)} file); "
            f"it holds {_shown_names(names) if names else 'nothing'}: zip the data file itself "
            "(a shapefile with its .shx, .dbf and .prj)")
    return InputError(
        f"{shown} holds {len(candidates)} datasets ({_shown_names(candidates)}); geosynth reads "
        "a zip holding one (or shapefiles all in one folder, its layers): unzip it and pass the "
        "file to read, or zip that one alone")


class LayerOption(NamedTuple):
    """How messages name the option choosing a layer.

    Attributes
    ----------
    cli : str or None
        The command-line option, e.g. ``"--layer"`` or ``"--region-layer"``; None for a
        library function that no command reaches with its messages (the command line calls it
        with its own option): its messages name the parameter alone (``layer='x'``).
    parameter : str, optional
        The Python parameter (``"layer"``) for a library function, whose messages name it with
        the option in a note (``layer='x' (CLI: --layer)``); None for a command-line reader.
    """

    cli: str | None
    parameter: str | None = None

    def given(self, value: str) -> str:
        """``"layer='x' (CLI: --layer)"`` or ``"--region-layer 'x'"``, printable, truncated."""
        shown = repr(printable(value)[:MAX_LAYER_NAME])
        return (f"{self.parameter}={shown}{self._note()}" if self.parameter else
                f"{self.cli} {shown}")

    def named(self) -> str:
        """``"layer= (CLI: --layer)"`` or ``"--region-layer LAYER"``."""
        return f"{self.parameter}={self._note()}" if self.parameter else f"{self.cli} LAYER"

    def advice(self) -> str:
        """``"pass layer= (CLI: --layer)"`` or ``"add --region-layer LAYER"``."""
        return f"{'pass' if self.parameter else 'add'} {self.named()}"

    def _note(self) -> str:
        """``" (CLI: --layer)"``, or nothing for a parameter without a command-line option."""
        return f" (CLI: {self.cli})" if self.cli else ""


def choose_layer(layers: Any, shown: str, wanted: str, option: LayerOption,
                 layer: str | None = None) -> tuple[str, str | None]:
    """Return the layer to read of a file and a note saying why, or refuse, naming every layer.

    The layer given is read if the file has it. Without one, the only layer is read, and of a
    file of several the only layer of the geometry ``wanted``, with a note saying so. A layer
    is of that geometry when its declared type names it (``Point``, ``MultiPoint Z``;
    ``Polygon``, ``MultiPolygon``, ``CurvePolygon``); one of type ``Unknown`` (any geometry)
    or ``GeometryCollection`` may hold it too, so it stops the choice.

    Parameters
    ----------
    layers : array-like of (str, str or None)
        The ``(name, geometry type)`` rows of :func:`pyogrio.list_layers`.
    shown : str
        How messages name the file (``"points.gpkg"``, ``"--region city.gpkg"``), printable.
    wanted : {"point", "polygon"}
        The geometry to read.
    option : LayerOption
        How messages name the layer option.
    layer : str, optional
        The layer given.

    Returns
    -------
    layer : str
        The layer to read.
    note : str or None
        Why that layer, when the file has several and none was given; the caller says it
        (a warning, or a note on stderr).

    Raises
    ------
    geosynth.errors.InputError
        The file has no layer (a truncated FlatGeobuf), no layer named ``layer``, or several
        layers and none is the only one of the geometry wanted (none of unknown type).
    """
    rows = [(str(name), "no geometry" if kind is None else str(kind)) for name, kind in layers]
    names, kinds = [name for name, _ in rows], [kind for _, kind in rows]
    if layer is not None:
        if layer not in names:
            raise InputError(f"{option.given(layer)}: {describe_layers(shown, names, kinds)}, "
                             "none of them named so; give one of those names")
        return layer, None
    if not names:  # GDAL opened it and found no layer: pyogrio raised a bare IndexError
        raise InputError(f"{shown} holds no layer GDAL can read: it may be damaged or "
                         "truncated (a partial copy); copy or export it again")
    if len(names) == 1:
        return names[0], None
    matching = [name for name, kind in rows if wanted in kind.lower()]
    unknown = [name for name, kind in rows
               if "unknown" in kind.lower() or "collection" in kind.lower()]
    if len(matching) == 1 and not unknown:
        return matching[0], (f"{shown}: read its only {wanted} layer "
                             f"{printable(matching[0])[:MAX_LAYER_NAME]!r} (of {len(names)} "
                             f"layers; {option.named()} reads another)")
    held = f"{len(matching)} of them of {wanted}s" + (
        f" and {len(unknown)} of any geometry type" if unknown else "")
    raise InputError(f"{describe_layers(shown, names, kinds)}; {held}: "
                     f"{option.advice()} to choose the one to read")


def describe_layers(shown: str, names: list[str], kinds: list[str]) -> str:
    """``"--region city.gpkg has 3 layers: 'a' (Polygon), ..."``, printable and truncated.

    Parameters
    ----------
    shown : str
        How the file is named, printable.
    names, kinds : list of str
        Its layers' names and geometry types.

    Returns
    -------
    str
        At most :data:`MAX_LAYERS_SHOWN` layers, each name cut at :data:`MAX_LAYER_NAME`
        characters.
    """
    if not names:
        return f"{shown} has no layer"
    listed = ", ".join(f"{printable(name)[:MAX_LAYER_NAME]!r} ({printable(kind)})"
                       for name, kind in zip(names[:MAX_LAYERS_SHOWN], kinds, strict=False))
    more = len(names) - MAX_LAYERS_SHOWN
    return (f"{shown} has {len(names)} layer{'s' if len(names) != 1 else ''}: {listed}"
            + (f" and {more} more" if more > 0 else ""))


def check_shapefile_complete(source: Path, vector: VectorSource, shown: str,
                             layer: str | None = None, check_values: bool = True) -> None:
    """Refuse a shapefile without its ``.dbf``, or shorter than its ``.shx`` index says.

    GDAL reads a ``.shp`` cut short (a copy or download interrupted) without error, the
    records past the cut without geometry: they were refused as records to drop, or dropped,
    with no word that the file itself was incomplete. Without its ``.dbf`` GDAL reads the
    geometries alone, and the missing attributes surfaced only as columns that are not in the
    file. Only the index's header and last entry are read. Anything but a shapefile passes.

    Parameters
    ----------
    source : pathlib.Path
        The file given: the ``.shp``, or the zip archive holding it.
    vector : VectorSource
        What is read of it (:func:`vector_source`).
    shown : str
        How messages name ``source`` (``"points.shp"``, ``"--region city.zip"``), printable.
    layer : str, optional
        The layer read of a zipped folder of shapefiles (a shapefile's name without ``.shp``).
    check_values : bool, default True
        False for a differentially private release: the messages then give no number of
        records or bytes, which tell how many records the file holds (protected by the
        release's noisy size).

    Raises
    ------
    geosynth.errors.InputError
        The shapefile has no ``.dbf`` beside it, or it or its index is truncated.
    """
    if vector.suffix != ".shp":
        return
    if vector.zipped:
        member = (vector.shapefiles[0] if len(vector.shapefiles) == 1 else
                  next((name for name in vector.shapefiles
                        if PurePosixPath(name).stem == layer), None))
        if member is not None:
            _check_zipped_shapefile(source, member, shown, check_values)
        return
    if not any(source.with_suffix(s).is_file() for s in (".dbf", ".DBF")):
        raise _without_dbf(shown, f"{printable(source.stem)}.dbf", "beside it")
    index = source.with_suffix(".shx")
    if not index.is_file():
        index = source.with_suffix(".SHX")
    if not index.is_file():
        return  # GDAL rebuilds a missing index (SHAPE_RESTORE_SHX) or says so itself
    with open(index, "rb") as handle:
        _check_index(handle, printable(index.name), shown, source.stat().st_size, check_values)


def _check_zipped_shapefile(source: Path, member: str, shown: str, check_values: bool) -> None:
    """:func:`check_shapefile_complete` of the shapefile ``member`` of the zip ``source``."""
    stem = member[:-4]
    try:
        with zipfile.ZipFile(source) as archive:
            names = {name.lower(): name for name in archive.namelist()}
            if f"{stem}.dbf".lower() not in names:
                raise _without_dbf(f"{printable(member)} in {shown}",
                                   f"{printable(PurePosixPath(stem).name)}.dbf", "beside it in "
                                   "the archive")
            index = names.get(f"{stem}.shx".lower())
            if index is None:
                return
            with archive.open(index) as handle:
                _check_index(handle, f"{printable(index)} in {shown}",
                             f"{printable(member)} in {shown}",
                             archive.getinfo(member).file_size, check_values)
    except NotImplementedError:  # a compression zipfile lacks: GDAL decides
        return
    except (zipfile.BadZipFile, EOFError, OSError):
        raise InputError(f"cannot read {shown}: it is damaged or cut short; copy or zip the "
                         "file again") from None


def _without_dbf(shown: str, dbf: str, where: str) -> InputError:
    """Return the error of a shapefile ``shown`` without its ``dbf``."""
    return InputError(f"{shown} has no {dbf} {where}, which holds the records' attributes; "
                      "copy the shapefile again (all of its files: .shp, .shx, .dbf and .prj)")


def _check_index(handle: BinaryIO, index: str, shown: str, size: int,
                 check_values: bool) -> None:
    """Refuse a .shx ``handle`` cut short, or a .shp (``size`` bytes) shorter than it says."""
    header = handle.read(100)  # the header and the last entry, not the whole index
    if len(header) < 100:
        return
    n_words = struct.unpack(">i", header[24:28])[0]
    n_records = max(0, (2 * n_words - 100) // 8)
    if n_records == 0:
        return
    handle.seek(100 + 8 * (n_records - 1))
    last = handle.read(8)
    if len(last) < 8:
        indexes = f"it indexes {n_records} records" if check_values else "it lists records"
        raise InputError(f"{index} is truncated: {indexes} but ends early; copy "
                         "the shapefile again (all of its files)")
    offset, length = struct.unpack(">ii", last)
    needed = 2 * (offset + length) + 8  # the last record's header (8 bytes) and content
    if size < needed:
        sizes = (f"its index lists {n_records} records, which need {needed:,} bytes, but the "
                 f"file has {size:,}" if check_values else
                 "it is shorter than its index (.shx) says (sizes not shown when values are "
                 "not checked, e.g. under --epsilon: they tell the number of records)")
        raise InputError(f"{shown} is truncated: {sizes}; copy the shapefile "
                         "again (all of its files)")
