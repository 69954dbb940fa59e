"""The checks shared by the readers and writers of geosynth.io (geosynth/io/_files.py)."""

import os
import socket
import stat
import warnings

import pytest

from geosynth._atomic import STAGING_MARK
from geosynth.errors import InputError, PrivacyLeakWarning
from geosynth.io import printable, write_intensity_geotiff, write_release
from geosynth.io._files import check_target


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("a\u2028b", "a?b"),  # LINE SEPARATOR: a line break for str.splitlines and many viewers
        ("a\u2029b", "a?b"),  # PARAGRAPH SEPARATOR
        ("caf\udce9.gpkg", "caf?.gpkg"),  # a file name byte that is not UTF-8 (surrogateescape)
    ],
)
def test_printable_leaves_one_line_a_utf8_output_can_write(text, expected):
    shown = printable(text)
    assert shown == expected
    assert len(shown.splitlines()) == 1
    shown.encode("utf-8")  # a lone surrogate raised UnicodeEncodeError here


def test_printable_keeps_ordinary_text():
    assert printable("São Paulo, 東京 – y=1") == "São Paulo, 東京 – y=1"
    assert printable("a\x1b[31mb\u202ec\n") == "a?[31mb?c?"


# ---------------------------------------------------------------- output paths of the writers
def _writers(fitted):
    """(name, write(path, overwrite)) of each geosynth.io writer, on the session's small fit."""
    fit, _, public = fitted

    def release(path, overwrite):
        return write_release(path, public, fit=fit, seeds={"fit": 1}, overwrite=overwrite)

    def geotiff(path, overwrite):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)  # an exact fit's intensity
            return write_intensity_geotiff(fit, path, overwrite=overwrite)

    return {"write_release": release, "write_intensity_geotiff": geotiff}


WRITERS = ["write_release", "write_intensity_geotiff"]
SUFFIX = {"write_release": ".gpkg", "write_intensity_geotiff": ".tif"}  # each refuses others


@pytest.mark.parametrize("writer", WRITERS)
@pytest.mark.parametrize("overwrite", [True, False], ids=["overwrite", "new"])
def test_writers_never_replace_a_named_pipe(fitted, tmp_path, writer, overwrite):
    # With overwrite=True the pipe became a regular file (as root, /dev/null did); without,
    # the message advised overwrite=True.
    fifo = tmp_path / f"out{SUFFIX[writer]}"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match=r"^path '.*out\.(gpkg|tif)' is a named pipe \(FIFO\), "
                       r"not a regular file: an output replaces only a regular file"):
        _writers(fitted)[writer](fifo, overwrite)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == [fifo.name]


@pytest.mark.parametrize("writer", WRITERS)
def test_writers_never_replace_a_link_to_a_pipe_or_device(fitted, tmp_path, writer):
    # With overwrite=True a link such as /dev/stdout was replaced by the release, for the
    # whole system when run as root.
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    out = tmp_path / f"out{SUFFIX[writer]}"
    for target in (fifo, "/dev/null"):
        link = out
        link.symlink_to(target)
        with pytest.raises(InputError, match=r"is a symbolic link to a (named pipe|character "
                           r"device).*only a regular file \(or a symbolic link to one\)"):
            _writers(fitted)[writer](link, True)
        assert os.readlink(link) == str(target)
        link.unlink()
    regular = tmp_path / f"old{SUFFIX[writer]}"
    regular.write_bytes(b"old")
    out.symlink_to(regular)
    _writers(fitted)[writer](out, True)  # the link itself is replaced
    assert regular.read_bytes() == b"old" and not out.is_symlink()


@pytest.mark.parametrize("writer", WRITERS)
def test_writers_name_a_path_too_long_for_the_file_system(fitted, tmp_path, writer):
    # "[Errno 36] File name too long", a raw OSError.
    with pytest.raises(InputError, match=r"^path '.*': a file or folder name in that path is "
                       "longer than the file system allows; choose a shorter name"):
        _writers(fitted)[writer](tmp_path / ("a" * 300 + SUFFIX[writer]), False)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("writer", WRITERS)
def test_writers_name_a_path_with_a_nul_character(fitted, tmp_path, writer):
    # write_intensity_geotiff raised a bare ValueError ("embedded null byte").
    with pytest.raises(InputError, match=r"^path '.*out\\x00\.(gpkg|tif)' contains a NUL "
                       r"character"):
        _writers(fitted)[writer](str(tmp_path / f"out\x00{SUFFIX[writer]}"), False)
    assert list(tmp_path.iterdir()) == []


def test_a_weights_raster_path_with_a_nul_character_is_refused(fitted, confidential, tmp_path):
    # GDAL opened the name up to the NUL: "w.tif\x00x" read w.tif.
    import geosynth

    with pytest.raises(InputError, match=r"^weights '.*w.tif\\x00x' contains a NUL character"):
        geosynth.synthesize(fitted[0], confidential, m=1, seed=1,
                            weights=str(tmp_path / "w.tif\x00x"))


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
@pytest.mark.parametrize("writer", WRITERS)
def test_writers_name_a_folder_no_file_can_be_made_in(fitted, writer):
    # A raw FileNotFoundError naming the staging folder '/proc/.b.gpkg.geosynth-staging-...'.
    with pytest.raises(InputError, match=r"^path '/proc/b\.(gpkg|tif)(.audit.json)?': cannot "
                       r"write in the folder '/proc' .*choose a folder you can write to") as caught:
        _writers(fitted)[writer](f"/proc/b{SUFFIX[writer]}", False)
    assert STAGING_MARK not in str(caught.value)


def test_check_target_refuses_a_socket_even_with_overwrite(tmp_path):
    path = tmp_path / "s.tif"
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(path))
        with pytest.raises(InputError, match=r"is a socket, not a regular file"):
            check_target(path, overwrite=True)
    check_target(tmp_path / "new.tif", overwrite=False)  # a new file passes
