import os
import socket
import stat
import subprocess
import sys

import pytest

import geosynth._atomic as atomic
from geosynth._atomic import (
    STAGING_MARK,
    AtomicOutputs,
    atomic_path,
    interrupted_commit,
    remove_stale_staging,
)
from geosynth.errors import InputError, InputTypeError


def _names(folder):
    return sorted(p.name for p in folder.iterdir())


def test_atomic_write_replaces_only_on_success(tmp_path):
    target = tmp_path / "sub" / "file.txt"
    with atomic_path(target) as tmp:
        assert tmp.suffix == ".txt" and tmp.name == "file.txt"
        assert tmp.parent.parent == target.parent
        tmp.write_text("new")
    assert target.read_text() == "new"

    with pytest.raises(RuntimeError, match="fail"), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("fail")
    assert target.read_text() == "new"
    assert _names(target.parent) == ["file.txt"]


def test_atomic_refuses_to_overwrite(tmp_path):
    target = tmp_path / "file.txt"
    target.write_text("old")
    with pytest.raises(FileExistsError, match="overwrite"), atomic_path(target, overwrite=False):
        pass
    assert target.read_text() == "old"
    assert _names(tmp_path) == ["file.txt"]


def test_staging_folder_is_private_and_private_files_are_0600(tmp_path):
    target = tmp_path / "report.md"
    with atomic_path(target, private=True) as tmp:
        assert stat.S_IMODE(os.stat(tmp.parent).st_mode) == 0o700
        tmp.write_text("confidential")
        os.chmod(tmp, 0o644)  # a writer that ignores the umask
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600


def test_outputs_commit_together_or_not_at_all(tmp_path):
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    with pytest.raises(KeyboardInterrupt), AtomicOutputs() as outputs:
        outputs.add(first).write_text("a")
        outputs.add(second).write_text("b")
        raise KeyboardInterrupt
    assert _names(tmp_path) == []
    with AtomicOutputs() as outputs:
        outputs.add(first).write_text("a")
        outputs.add(second).write_text("b")
    assert first.read_text() == "a" and second.read_text() == "b"
    assert _names(tmp_path) == ["a.txt", "b.txt"]


def test_second_writer_without_overwrite_fails_at_commit_and_takes_back_its_files(tmp_path):
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    one, two = AtomicOutputs(), AtomicOutputs()
    for outputs, text in ((one, "one"), (two, "two")):  # both reserve before either commits
        outputs.add(first).write_text(text)
        outputs.add(second).write_text(text)
    second.write_text("someone else")  # appears after two checked it, before it commits
    assert one.targets == [first, second]
    with pytest.raises(FileExistsError, match="another process"):
        one.commit()
    assert not first.exists()  # taken back: the run wrote nothing
    assert second.read_text() == "someone else"
    two_written = None
    with pytest.raises(FileExistsError):
        two_written = two.commit()
    assert two_written is None and _names(tmp_path) == ["b.txt"]


def test_two_commits_of_the_same_outputs_run_one_after_the_other(tmp_path, monkeypatch):
    # Two runs with overwrite committing at once interleaved their moves: one's release beside
    # the other's audit file, both reporting success. The second now waits for the first.
    import threading

    first, second = tmp_path / "r.gpkg", tmp_path / "r.gpkg.audit.json"
    one, two = AtomicOutputs(overwrite=True), AtomicOutputs(overwrite=True)
    for outputs, text in ((one, "one"), (two, "two")):
        outputs.add(first).write_text(text)
        outputs.add(second).write_text(text)
    real_move, started = atomic._move, []

    def move(*args):
        if not started:  # the first move of the first commit: the second commit starts now
            started.append(threading.Thread(target=two.commit))
            started[0].start()
            started[0].join(timeout=0.5)
            assert started[0].is_alive()  # waiting for the folder's lock
        return real_move(*args)

    monkeypatch.setattr(atomic, "_move", move)
    one.commit()
    started[0].join(timeout=30)
    assert not started[0].is_alive()
    assert first.read_text() == second.read_text() == "two"  # a whole set, not a mix


def test_unwritten_staged_path_is_skipped(tmp_path):
    with AtomicOutputs() as outputs:
        outputs.add(tmp_path / "never.txt")
        outputs.add(tmp_path / "written.txt").write_text("x")
    assert _names(tmp_path) == ["written.txt"]


def test_add_refuses_directories_duplicates_and_reuse(tmp_path):
    outputs = AtomicOutputs(overwrite=True)
    with pytest.raises(IsADirectoryError):
        outputs.add(tmp_path)
    outputs.add(tmp_path / "x.txt")
    with pytest.raises(ValueError, match="already added"):
        outputs.add(tmp_path / "." / "x.txt")
    outputs.discard()
    with pytest.raises(ValueError, match="already committed or discarded"):
        outputs.add(tmp_path / "y.txt")


def test_add_sees_the_same_file_through_a_linked_folder(tmp_path):
    # abspath compared them unequal: with overwrite the second silently won, without it the
    # commit blamed "another process"
    (tmp_path / "here").symlink_to(tmp_path, target_is_directory=True)
    outputs = AtomicOutputs(overwrite=True)
    outputs.add(tmp_path / "a.txt")
    with pytest.raises(ValueError, match="already added"):
        outputs.add(tmp_path / "here" / "a.txt")
    outputs.discard()


@pytest.mark.parametrize(("first", "second"), [
    ("int.tif", "int.tif.aux.xml"), ("int.tif.OVR", "int.tif"), ("r.gpkg", "r.gpkg-wal"),
])
def test_add_refuses_an_output_named_as_another_s_companion_file(tmp_path, first, second):
    # The commit moved int.tif in after int.tif.aux.xml and set its "stale sidecar" aside,
    # deleting the output just written.
    outputs = AtomicOutputs(overwrite=False)
    outputs.add(tmp_path / first)
    with pytest.raises(InputError, match=r"is the name GDAL or SQLite gives a file beside the "
                                         r"output .*give it another name"):
        outputs.add(tmp_path / second)
    outputs.add(tmp_path / "int.tif.md")  # another name is fine
    outputs.discard()
    assert list(tmp_path.iterdir()) == []


def test_a_file_of_another_user_in_a_sticky_folder_is_refused_when_added(tmp_path,
                                                                         monkeypatch):
    # Only its owner (or root) may replace it there: the run failed at the final move, after
    # the fit. Seen as another user: the file and the folder are this user's.
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    target = shared / "r.gpkg"
    target.write_text("theirs")
    outputs = AtomicOutputs(overwrite=True)
    outputs.add(target)  # ours: replaceable
    outputs.discard()
    monkeypatch.setattr(os, "geteuid", lambda: os.stat(target).st_uid + 4242)
    with pytest.raises(InputError, match=r"r.gpkg belongs to another user, in a folder with the "
                                         r"sticky bit .*choose another file name"):
        AtomicOutputs(overwrite=True).add(target)
    os.chmod(shared, 0o775)  # without the sticky bit, anyone who may write the folder may
    outputs = AtomicOutputs(overwrite=True)
    outputs.add(target)
    outputs.discard()
    assert target.read_text() == "theirs" and os.listdir(shared) == ["r.gpkg"]


def test_a_folder_every_user_may_change_is_refused_when_added(tmp_path):
    # There another user may rename the private staging folder and link their own in its
    # place; a sticky folder lets only an entry's owner rename it.
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    with pytest.raises(InputError, match=r"can be changed by every user \(mode 777, no sticky "
                                         r"bit\).*nothing was written"):
        AtomicOutputs().add(shared / "r.gpkg")
    assert os.listdir(shared) == []
    for mode in (0o1777, 0o775, 0o700):
        os.chmod(shared, mode)
        outputs = AtomicOutputs()
        outputs.add(shared / "r.gpkg")
        outputs.discard()
    # A folder above the output's: another user may rename the output's folder itself.
    os.chmod(shared, 0o777)
    (shared / "out").mkdir(mode=0o755)
    with pytest.raises(InputError, match=r"the folder '.*shared' of an output can be changed "
                                         r"by every user"):
        AtomicOutputs().add(shared / "out" / "r.gpkg")
    os.chmod(shared, 0o755)
    # Folders made for an output are 0755 at most: under umask 0 they were 0777, then refused.
    old = os.umask(0)
    try:
        outputs = AtomicOutputs()
        outputs.add(shared / "new" / "sub" / "r.gpkg")
        assert stat.S_IMODE(os.stat(shared / "new" / "sub").st_mode) == 0o755
        outputs.discard()
    finally:
        os.umask(old)
    outputs = AtomicOutputs()
    outputs.add(tmp_path / "mine.gpkg")
    assert outputs.unwritten() == [tmp_path / "mine.gpkg"]
    outputs.discard()


def test_unwritable_folder_fails_when_added(tmp_path):
    # A raw OSError (FileExistsError, PermissionError) whose file was a folder of the path or
    # the staging folder: a writer without a CLI said nothing about the path it was given.
    if os.geteuid() == 0:
        # root ignores directory modes: use a folder under a regular file instead
        blocker = tmp_path / "file"
        blocker.write_text("")
        with pytest.raises(InputError, match=r"^path '.*file/out.txt': cannot write in the "
                           r"folder .*a part of that path is a file, not a folder") as caught:
            AtomicOutputs().add(blocker / "out.txt")
        assert isinstance(caught.value.__cause__, OSError)
        return
    folder = tmp_path / "ro"
    folder.mkdir(mode=0o500)
    with pytest.raises(InputError, match="cannot write in the folder") as caught:
        AtomicOutputs().add(folder / "out.txt")
    assert isinstance(caught.value.__cause__, PermissionError)


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs Linux's /proc")
def test_a_folder_no_file_can_be_made_in_is_named_not_its_staging_folder():
    # "[Errno 2] No such file or directory: '/proc/.x.html.geosynth-staging-...'"
    with pytest.raises(InputError, match=r"^path '/proc/x.html': cannot write in the folder "
                       r"'/proc' .*choose a folder you can write to") as caught:
        AtomicOutputs().add("/proc/x.html")
    assert STAGING_MARK not in str(caught.value)


@pytest.mark.parametrize("path", [None, 5, b"x.html"], ids=["None", "int", "bytes"])
def test_a_path_that_is_not_a_file_path_is_refused_naming_path(path):
    # Path(None) / Path(b"x"): pathlib's bare TypeError, naming no parameter.
    with pytest.raises(InputTypeError, match=r"^path must be a file path \(str or "
                       r"pathlib.Path\), got"):
        AtomicOutputs().add(path)


def test_a_name_too_long_for_the_file_system_is_refused_naming_path(tmp_path):
    # is_dir() raised "[Errno 36] File name too long", an OSError naming no parameter.
    with pytest.raises(InputError, match=r"^path '.*': a file or folder name in that path is "
                       r"longer than the file system allows; choose a shorter name"):
        AtomicOutputs().add(tmp_path / ("a" * 300 + ".html"))
    assert _names(tmp_path) == []


def _special_files(folder):
    """A named pipe and a Unix socket in ``folder``, as (label, path); the socket is bound."""
    fifo = folder / "pipe.gpkg"
    os.mkfifo(fifo)
    server = socket.socket(socket.AF_UNIX)
    sock = folder / "s.gpkg"
    server.bind(str(sock))
    return [("named pipe", fifo), ("socket", sock)], server


@pytest.mark.parametrize("overwrite", [True, False], ids=["overwrite", "new"])
def test_a_pipe_or_socket_at_the_target_is_never_replaced(tmp_path, overwrite):
    # With overwrite, os.replace put a regular file in place of the named pipe (as root, of
    # /dev/null); without, the message advised overwrite=True, which would have done so.
    specials, server = _special_files(tmp_path)
    with server:
        for label, path in specials:
            outputs = AtomicOutputs(overwrite=overwrite)
            with pytest.raises(InputError, match=rf"^path '.*{path.name}' is a {label}.*, not a "
                               r"regular file: an output replaces only a regular file"):
                outputs.add(path)
            outputs.discard()
        assert stat.S_ISFIFO(os.lstat(tmp_path / "pipe.gpkg").st_mode)
        assert stat.S_ISSOCK(os.lstat(tmp_path / "s.gpkg").st_mode)
    assert _names(tmp_path) == ["pipe.gpkg", "s.gpkg"]


def test_a_pipe_made_at_the_target_after_it_was_added_is_not_replaced(tmp_path):
    target, other = tmp_path / "release.gpkg", tmp_path / "report.md"
    outputs = AtomicOutputs(overwrite=True)
    outputs.add(other).write_text("report")
    outputs.add(target).write_text("release")
    os.mkfifo(target)  # e.g. by another program while the fit ran
    with pytest.raises(InputError, match="is a named pipe"):
        outputs.commit()
    assert stat.S_ISFIFO(os.lstat(target).st_mode) and not other.exists()
    assert _names(tmp_path) == ["release.gpkg"]  # no staging folder left


def test_overwrite_keeps_a_symbolic_link_to_a_pipe_and_the_pipe(tmp_path):
    # The link was replaced: /dev/stdout (a link to the process's output) for the whole
    # system when run as root.
    fifo, link = tmp_path / "pipe", tmp_path / "link.txt"
    os.mkfifo(fifo)
    link.symlink_to(fifo)
    with pytest.raises(InputError, match="is a symbolic link to a named pipe"):
        with atomic_path(link, overwrite=True) as tmp:
            tmp.write_text("new")
    assert os.readlink(link) == str(fifo) and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert _names(tmp_path) == ["link.txt", "pipe"]


def test_save_map_with_overwrite_keeps_a_named_pipe(tmp_path):
    # A writer outside geosynth.io gets the check from AtomicOutputs.add.
    import folium

    from geosynth.maps import save_map

    fifo = tmp_path / "review.html"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="is a named pipe"):
        save_map(folium.Map(), fifo, overwrite=True)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and _names(tmp_path) == ["review.html"]


def test_stale_staging_of_a_killed_process_is_removed(tmp_path):
    target = tmp_path / "release.gpkg"
    code = (
        "import os, sys\n"
        "from geosynth._atomic import AtomicOutputs\n"
        "out = AtomicOutputs()\n"
        "out.add(sys.argv[1]).write_bytes(b'x' * 1000)\n"
        "os._exit(9)  # killed before the commit\n"
    )
    subprocess.run([sys.executable, "-c", code, str(target)], check=False)
    leftovers = [p for p in tmp_path.iterdir() if STAGING_MARK in p.name]
    assert len(leftovers) == 1 and not target.exists()
    live = AtomicOutputs()
    live.add(target)  # a write of the same output cleans up after the dead process
    assert [p for p in tmp_path.iterdir() if STAGING_MARK in p.name] != leftovers
    assert remove_stale_staging(target) == []  # our own live staging folder stays
    live.discard()
    assert _names(tmp_path) == []


@pytest.mark.parametrize("overwrite", [True, False])
def test_a_failed_move_takes_back_the_targets_moved_before_it(tmp_path, monkeypatch, overwrite):
    # E.g. a sticky folder where a later target belongs to another user: the targets before it
    # were already replaced or created when its move fails (here the third).
    report, release, fresh = tmp_path / "report.md", tmp_path / "release.gpkg", tmp_path / "new"
    report.write_text("old report")
    release.write_text("old release")
    real_move, calls = atomic._move, []

    def failing_third(source, target, overwrite):
        calls.append(target)
        if len(calls) == 3:
            raise PermissionError(1, "Operation not permitted", str(target))
        real_move(source, target, overwrite)

    monkeypatch.setattr(atomic, "_move", failing_third)
    outputs = AtomicOutputs(overwrite=True) if overwrite else AtomicOutputs()
    if overwrite:
        outputs.add(report).write_text("new report")
    outputs.add(fresh).write_text("created")
    outputs.add(release if overwrite else tmp_path / "other").write_text("new release")
    if not overwrite:  # three moves without overwrite too: a third output
        outputs.add(tmp_path / "third").write_text("third")
    with pytest.raises(PermissionError):
        outputs.commit()
    assert report.read_text() == "old report" and release.read_text() == "old release"
    assert not fresh.exists() and not (tmp_path / "other").exists()
    assert _names(tmp_path) == ["release.gpkg", "report.md"]


def test_a_successful_overwrite_leaves_no_backup(tmp_path):
    target = tmp_path / "release.gpkg"
    target.write_text("old")
    with AtomicOutputs(overwrite=True) as outputs:
        outputs.add(target).write_text("new")
    assert target.read_text() == "new" and _names(tmp_path) == ["release.gpkg"]


KILLED_WHILE_OPEN = """
import os, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
db.execute("PRAGMA journal_mode=WAL")
db.execute("CREATE TABLE t (x)")
db.execute("INSERT INTO t VALUES (1)")
db.commit()
os._exit(0)  # killed with the database open: its -wal and -shm stay
"""


def test_a_target_with_sqlite_journals_beside_it_is_refused(tmp_path):
    # SQLite replays a leftover -wal into whatever file has the name next: a release moved in
    # beside it was damaged on its first read.
    from geosynth.errors import InputError

    target = tmp_path / "release.gpkg"
    subprocess.run([sys.executable, "-c", KILLED_WHILE_OPEN, str(target)], check=True)
    assert (tmp_path / "release.gpkg-wal").exists()
    before = target.read_bytes()
    with pytest.raises(InputError, match="release.gpkg-wal and release.gpkg-shm beside it"):
        AtomicOutputs(overwrite=True).add(target)
    assert target.read_bytes() == before
    (tmp_path / "release.gpkg").unlink()  # deleted by hand, its journal left: still refused
    with pytest.raises(InputError, match="close the program, or delete those files"):
        AtomicOutputs().add(target)
    assert not any(STAGING_MARK in name for name in _names(tmp_path))


def test_a_journal_that_appears_before_the_commit_takes_the_commit_back(tmp_path):
    from geosynth.errors import InputError

    first, second = tmp_path / "a.txt", tmp_path / "b.gpkg"
    outputs = AtomicOutputs()
    outputs.add(first).write_text("a")
    outputs.add(second).write_text("b")
    (tmp_path / "b.gpkg-journal").write_text("")  # a viewer opened the old file meanwhile
    with pytest.raises(InputError, match="b.gpkg-journal beside it"):
        outputs.commit()
    assert _names(tmp_path) == ["b.gpkg-journal"]


@pytest.mark.parametrize("name", ["rel\nease.gpkg", "rel\tease.gpkg", "rel\x1b[2Jease.gpkg"])
def test_output_names_with_control_characters_are_refused_when_added(tmp_path, name):
    # GDAL dropped them from the staged name, so the write failed only after all the work.
    from geosynth.errors import InputError

    with pytest.raises(InputError, match="contains control characters"):
        AtomicOutputs().add(tmp_path / name)
    assert _names(tmp_path) == []


def test_a_staging_folder_whose_writer_holds_its_lock_is_not_stale(tmp_path, monkeypatch):
    # A writer in another PID namespace (a container sharing the volume) has a PID this
    # process sees as dead: its folder was removed, and it then reported files it never wrote.
    target = tmp_path / "release.gpkg"
    writer = AtomicOutputs()
    writer.add(target).write_bytes(b"x")
    monkeypatch.setattr(atomic, "_process_alive", lambda pid: False)  # "another namespace"
    assert remove_stale_staging(target) == []  # its lock is held: not stale
    assert writer.commit() == [target] and target.read_bytes() == b"x"
    dead = AtomicOutputs(overwrite=True)
    dead.add(target).write_bytes(b"y")
    for staged in dead._staged:  # the writer died: its descriptors closed with it
        os.close(staged.lock)
    assert len(remove_stale_staging(target)) == 1


def test_a_commit_whose_staging_folder_vanished_fails_and_writes_nothing(tmp_path):
    import shutil

    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    outputs = AtomicOutputs()
    outputs.add(first).write_text("a")
    staged = outputs.add(second)
    staged.write_text("b")
    shutil.rmtree(staged.parent)  # removed by someone else
    with pytest.raises(FileNotFoundError, match="another process removed its staging folder"):
        outputs.commit()
    assert _names(tmp_path) == []


def test_gdal_virtual_paths_are_refused_as_outputs():
    # /vsimem/x.gpkg was staged in a folder /vsimem/ that does not exist: a raw error naming
    # the internal staging path, after the whole fit.
    from geosynth.errors import InputError

    with pytest.raises(InputError, match="GDAL virtual file system path"):
        AtomicOutputs().add("/vsimem/x.gpkg")


KILLED_AFTER_THE_CLAIM = """
import errno, os, sys
import geosynth._atomic as atomic

def no_links(*args, **kwargs):  # a file system without hard links (vfat, some SMB mounts)
    raise OSError(errno.EPERM, "Operation not permitted")

atomic.os.link = no_links
atomic.os.replace = lambda *args: os._exit(9)  # killed between the claim and the move
outputs = atomic.AtomicOutputs()
outputs.add(sys.argv[1]).write_text("audit")
outputs.commit()
"""


def test_an_empty_claim_left_by_a_killed_writer_is_removed_by_the_next_write(tmp_path):
    # Without hard links the target is claimed by an empty file, then replaced; a kill in
    # between left the empty file, and every later write was refused: "exists".
    target = tmp_path / "release.gpkg.audit.json"
    subprocess.run([sys.executable, "-c", KILLED_AFTER_THE_CLAIM, str(target)], check=False)
    assert target.exists() and target.stat().st_size == 0
    with AtomicOutputs() as outputs:
        outputs.add(target).write_text("audit")
    assert target.read_text() == "audit"
    assert _names(tmp_path) == ["release.gpkg.audit.json"]


def test_a_users_empty_file_without_a_claim_is_kept(tmp_path):
    target = tmp_path / "notes.txt"
    target.write_text("")
    with pytest.raises(FileExistsError):
        AtomicOutputs().add(target)
    assert target.exists()


def test_a_failed_commit_puts_back_the_gdal_sidecars_it_set_aside(tmp_path):
    # They were removed before the move: a commit that then failed restored the old file
    # without them (a .msk holds a real mask).
    from geosynth.errors import InputError

    first, second = tmp_path / "b.tif", tmp_path / "c.gpkg"
    first.write_bytes(b"old")
    (tmp_path / "b.tif.ovr").write_bytes(b"old overviews")
    outputs = AtomicOutputs(overwrite=True)
    outputs.add(first).write_bytes(b"new")
    outputs.add(second).write_bytes(b"new")
    (tmp_path / "c.gpkg-wal").write_bytes(b"")  # the second target is then refused
    with pytest.raises(InputError):
        outputs.commit()
    assert first.read_bytes() == b"old"
    assert (tmp_path / "b.tif.ovr").read_bytes() == b"old overviews"
    ours = AtomicOutputs()  # and the move of someone's new file keeps theirs
    ours.add(tmp_path / "d.tif").write_bytes(b"ours")
    (tmp_path / "d.tif").write_bytes(b"theirs")
    (tmp_path / "d.tif.aux.xml").write_text("<their stats/>")
    with pytest.raises(FileExistsError):
        ours.commit()
    assert (tmp_path / "d.tif.aux.xml").read_text() == "<their stats/>"


def test_a_long_file_name_is_written_and_its_stale_staging_found(tmp_path, monkeypatch):
    # The staging folder's name adds 35 bytes to the target's: a name of 230 bytes, which the
    # file system accepts, failed with "File name too long" (about a path the user never gave).
    target = tmp_path / ("é" * 110 + "release.gpkg")  # 232 bytes in UTF-8
    other = tmp_path / ("é" * 110 + "release.gpkh")  # the same start, another file
    with atomic_path(target) as tmp:
        tmp.write_bytes(b"x")
    assert target.read_bytes() == b"x" and _names(tmp_path) == [target.name]
    for path in (target, other):
        dead = AtomicOutputs(overwrite=True)
        dead.add(path).write_bytes(b"y")
        for staged in dead._staged:  # the writer died: its descriptors closed with it
            os.close(staged.lock)
    monkeypatch.setattr(atomic, "_process_alive", lambda pid: False)
    assert len(remove_stale_staging(target)) == 1  # its own folder, not the other file's
    assert len(remove_stale_staging(other)) == 1
    assert _names(tmp_path) == [target.name]


def test_staged_files_are_flushed_before_the_first_move_and_their_folders_after(
        tmp_path, monkeypatch):
    # Without fsync a power cut soon after the commit could leave a target of zero length under
    # its new name (the rename reached the disk before the data).
    events = []
    real_fsync, real_move = os.fsync, atomic._move

    def fsync(fd):
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    def move(source, target, overwrite):
        events.append(("move", str(target)))
        real_move(source, target, overwrite)

    monkeypatch.setattr(atomic.os, "fsync", fsync)
    monkeypatch.setattr(atomic, "_move", move)
    first, second = tmp_path / "a.txt", tmp_path / "new" / "deeper" / "b.txt"
    with AtomicOutputs() as outputs:
        outputs.add(first).write_text("a")
        outputs.add(second, private=True).write_text("b")
    kinds = [kind for kind, _ in events]
    assert kinds == ["fsync"] * 6 + ["move", "move"] + ["fsync"] * 3
    assert [os.path.basename(path) for _, path in events[:2]] == ["a.txt", "b.txt"]
    assert all(STAGING_MARK in path for _, path in events[:6])  # the staged files
    # Then the commit's journal in each staging folder, and that folder, the first one last.
    assert [os.path.basename(path) for _, path in events[2:6:2]] == [".commit.json"] * 2
    assert events[5][1] == os.path.dirname(events[4][1]) == os.path.dirname(events[0][1])
    # The folders whose entries changed: the targets' and those of the folders created.
    assert sorted(path for _, path in events[8:]) == sorted(
        [str(tmp_path), str(second.parent), str(second.parent.parent)])


def test_a_file_that_cannot_be_flushed_to_disk_replaces_nothing(tmp_path, monkeypatch):
    import errno

    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_text("old a")
    real_fsync = os.fsync

    def failing(fd):
        if os.path.basename(os.readlink(f"/proc/self/fd/{fd}")) == "b.txt":
            raise OSError(errno.EIO, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(atomic.os, "fsync", failing)
    outputs = AtomicOutputs(overwrite=True)
    outputs.add(first).write_text("new a")
    outputs.add(second).write_text("new b")
    with pytest.raises(OSError, match=r"could not be written to disk .*nothing was replaced") \
            as error:
        outputs.commit()
    assert error.value.errno == errno.EIO and error.value.filename == str(second)
    assert first.read_text() == "old a" and _names(tmp_path) == ["a.txt"]


def test_a_folder_that_cannot_be_flushed_takes_the_commit_back(tmp_path, monkeypatch):
    # A file system that cannot flush folders at all (EINVAL) is accepted; an I/O error is not.
    import errno
    import stat as stat_module

    real_fsync = os.fsync
    code = {"value": errno.EINVAL}

    def folder_fails(fd):
        if stat_module.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(code["value"], os.strerror(code["value"]))
        real_fsync(fd)

    monkeypatch.setattr(atomic.os, "fsync", folder_fails)
    target = tmp_path / "a.txt"
    with atomic_path(target) as tmp:
        tmp.write_text("old")
    assert target.read_text() == "old"
    code["value"] = errno.EIO
    with pytest.raises(OSError, match="could not be flushed to disk"), atomic_path(target) as tmp:
        tmp.write_text("new")
    assert target.read_text() == "old" and _names(tmp_path) == ["a.txt"]


def test_staging_names_planted_by_someone_else_are_left_alone(tmp_path):
    # In a shared folder another user can create an entry with a staging folder's name: a
    # symbolic link to a folder of theirs, or a folder of their own, holding a claim mark.
    # Either was taken for a dead writer's folder and this user's empty target removed as its
    # claim.
    target = tmp_path / "notes.txt"
    target.write_text("")
    prefix = f".notes.txt.{STAGING_MARK}-999999999-"  # a PID no process has
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / ".claimed").write_text("")
    link = tmp_path / f"{prefix}link"
    link.symlink_to(elsewhere, target_is_directory=True)
    assert remove_stale_staging(target) == []
    assert target.exists() and link.is_symlink() and (elsewhere / ".claimed").exists()
    if os.geteuid() == 0:  # only root can make a folder of another user here
        theirs = tmp_path / f"{prefix}theirs"
        theirs.mkdir()
        (theirs / ".claimed").write_text("")
        os.chown(theirs, 65534, 65534)
        assert remove_stale_staging(target) == []
        assert target.exists() and (theirs / ".claimed").exists()
    with pytest.raises(FileExistsError):  # the user's file still blocks a write without overwrite
        AtomicOutputs().add(target)


KILLED_WHILE_WRITING = """
import os, sys
import geosynth._atomic as atomic
point = sys.argv[2]
if point == "before the move":
    atomic._move = lambda *args: os._exit(9)
outputs = atomic.AtomicOutputs(overwrite=True)
staged = outputs.add(sys.argv[1], private=True)
with open(staged, "w") as stream:
    stream.write("confidential 1,2,3\\n")
    stream.flush()
    if point == "while writing":
        os._exit(9)
    stream.write("confidential 4,5,6\\n")
outputs.commit()
"""


@pytest.mark.parametrize("point", ["while writing", "before the move"])
def test_a_private_file_killed_before_its_move_leaves_the_old_file(tmp_path, point):
    # The half-written (or flushed but unmoved) file stays only in a 0700 staging folder, which
    # the next write of the same output removes.
    target = tmp_path / "report.md"
    target.write_text("old report")
    os.chmod(target, 0o600)
    run = subprocess.run([sys.executable, "-c", KILLED_WHILE_WRITING, str(target), point],
                         check=False)
    assert run.returncode == 9
    assert target.read_text() == "old report"
    leftovers = [p for p in tmp_path.iterdir() if STAGING_MARK in p.name]
    assert len(leftovers) == 1 and stat.S_IMODE(os.lstat(leftovers[0]).st_mode) == 0o700
    assert (leftovers[0] / "report.md").read_text().startswith("confidential 1,2,3")
    with atomic_path(target, private=True) as tmp:
        tmp.write_text("new report")
    assert target.read_text() == "new report" and _names(tmp_path) == ["report.md"]
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o600


KILLED_WHILE_COMMITTING = """
import os, sys
import geosynth._atomic as atomic
folder, point, overwrite = sys.argv[1], sys.argv[2], sys.argv[3] == "overwrite"
move = atomic._move
moves = []
def move_then_maybe_die(*args):
    move(*args)
    moves.append(args)
    if point == "after two moves" and len(moves) == 2:
        os._exit(9)
atomic._move = move_then_maybe_die
flush = atomic._flush_folders
def flush_unless_moved_all(folders):
    if point == "after the last move" and len(moves) == 3:
        os._exit(9)  # while flushing the folders: the journal is not removed yet
    flush(folders)
atomic._flush_folders = flush_unless_moved_all
if point == "after the commit point":
    atomic.AtomicOutputs._cleanup = lambda self: os._exit(9)
outputs = atomic.AtomicOutputs(overwrite=overwrite)
for name in ("a.tif", "b.json", "c.html"):
    outputs.add(os.path.join(folder, name)).write_text("new " + name)
outputs.commit()
"""


def _kill_while_committing(tmp_path, point, overwrite):
    run = subprocess.run([sys.executable, "-c", KILLED_WHILE_COMMITTING, str(tmp_path), point,
                          "overwrite" if overwrite else "create"], check=False)
    assert run.returncode == 9


@pytest.mark.parametrize("next_write", ["a.tif", "b.json", "c.html"])
def test_a_commit_killed_between_its_moves_is_taken_back_by_the_next_write(tmp_path,
                                                                             next_write):
    # A kill between two moves left a.tif and b.json new beside the old c.html (a release
    # beside the previous run's audit file); the next write of any of them restores all three.
    for name in ("a.tif", "b.json", "c.html"):
        (tmp_path / name).write_text(f"old {name}")
    (tmp_path / "a.tif.aux.xml").write_text("old band names")  # set aside for the new a.tif
    _kill_while_committing(tmp_path, "after two moves", overwrite=True)
    assert (tmp_path / "a.tif").read_text() == "new a.tif"
    assert (tmp_path / "c.html").read_text() == "old c.html"
    assert not (tmp_path / "a.tif.aux.xml").exists()
    with AtomicOutputs(overwrite=True) as outputs:
        outputs.add(tmp_path / next_write)  # never written: only the clean-up happens
    for name in ("a.tif", "b.json", "c.html"):
        assert (tmp_path / name).read_text() == f"old {name}"
    assert (tmp_path / "a.tif.aux.xml").read_text() == "old band names"
    assert _names(tmp_path) == ["a.tif", "a.tif.aux.xml", "b.json", "c.html"]


def test_files_created_by_a_killed_commit_are_removed_by_the_next_write(tmp_path):
    _kill_while_committing(tmp_path, "after two moves", overwrite=False)
    assert (tmp_path / "b.json").exists() and not (tmp_path / "c.html").exists()
    with AtomicOutputs() as outputs:  # no FileExistsError: the half commit is taken back first
        outputs.add(tmp_path / "c.html").write_text("next run")
    assert _names(tmp_path) == ["c.html"]
    assert (tmp_path / "c.html").read_text() == "next run"


def test_a_commit_killed_after_its_commit_point_is_kept(tmp_path):
    for name in ("a.tif", "b.json"):
        (tmp_path / name).write_text(f"old {name}")
    _kill_while_committing(tmp_path, "after the commit point", overwrite=True)
    assert len([p for p in tmp_path.iterdir() if STAGING_MARK in p.name]) == 3
    removed = remove_stale_staging(tmp_path / "c.html")
    assert len(removed) == 3  # the folders of all three targets, through the journal
    for name in ("a.tif", "b.json", "c.html"):
        assert (tmp_path / name).read_text() == f"new {name}"
    assert _names(tmp_path) == ["a.tif", "b.json", "c.html"]


@pytest.mark.parametrize("next_write", ["a.tif", "b.json", "c.html"])
def test_a_commit_killed_after_its_last_move_is_kept(tmp_path, next_write):
    """Every file was in place, the journal left: the next write took the whole commit back.

    Its new audit file (the seeds of a release that may be published) was deleted by the
    write of any one of the commit's files; ``inspect`` had said the release was consistent.
    """
    for name in ("a.tif", "b.json"):
        (tmp_path / name).write_text(f"old {name}")
    _kill_while_committing(tmp_path, "after the last move", overwrite=True)
    assert len([p for p in tmp_path.iterdir() if STAGING_MARK in p.name]) == 3
    assert not any(interrupted_commit(tmp_path / name) for name in ("a.tif", "b.json", "c.html"))
    with AtomicOutputs(overwrite=True) as outputs:
        outputs.add(tmp_path / next_write)  # never written: only the clean-up happens
    for name in ("a.tif", "b.json", "c.html"):
        assert (tmp_path / name).read_text() == f"new {name}"
    assert _names(tmp_path) == ["a.tif", "b.json", "c.html"]


@pytest.mark.parametrize("change", ["deleted", "saved again"])
def test_a_finished_commit_stands_when_its_user_changed_a_file_since(tmp_path, change):
    # A target deleted, or saved again by an editor (a new inode), made the finished commit
    # look half done: the next write put back the old a.tif and b.json beside the new c.html.
    for name in ("a.tif", "b.json"):
        (tmp_path / name).write_text(f"old {name}")
    _kill_while_committing(tmp_path, "after the last move", overwrite=True)
    if change == "deleted":
        (tmp_path / "c.html").unlink()
    else:  # as editors save: a new file renamed over the old one
        (tmp_path / "b.json.swp").write_text("new b.json edited")
        os.replace(tmp_path / "b.json.swp", tmp_path / "b.json")
    with AtomicOutputs(overwrite=True) as outputs:
        outputs.add(tmp_path / "a.tif")  # never written: only the clean-up happens
    assert (tmp_path / "a.tif").read_text() == "new a.tif"
    expected = {"deleted": "new b.json", "saved again": "new b.json edited"}[change]
    assert (tmp_path / "b.json").read_text() == expected
    assert not [p for p in tmp_path.iterdir() if STAGING_MARK in p.name]


def test_a_commit_killed_between_moves_is_taken_back_though_a_staging_folder_is_gone(tmp_path):
    # A staged name gone with its whole folder (removed by hand) counted as moved: the commit
    # killed after two of three moves looked finished, and new a.tif and b.json stayed beside
    # the old c.html.
    import shutil

    for name in ("a.tif", "b.json", "c.html"):
        (tmp_path / name).write_text(f"old {name}")
    _kill_while_committing(tmp_path, "after two moves", overwrite=True)
    [folder] = [p for p in tmp_path.iterdir() if p.name.startswith(f".c.html.{STAGING_MARK}")]
    shutil.rmtree(folder)
    assert interrupted_commit(tmp_path / "a.tif")
    with AtomicOutputs(overwrite=True) as outputs:
        outputs.add(tmp_path / "a.tif")  # never written: only the clean-up happens
    for name in ("a.tif", "b.json", "c.html"):
        assert (tmp_path / name).read_text() == f"old {name}"


def test_a_damaged_journal_only_removes_its_folder(tmp_path):
    (tmp_path / "a.tif").write_text("old a.tif")
    _kill_while_committing(tmp_path, "after two moves", overwrite=True)
    for folder in tmp_path.iterdir():
        if STAGING_MARK in folder.name:
            os.chmod(folder / ".commit.json", 0o600)
            (folder / ".commit.json").write_text('{"first": "/etc", "files": []}')
    remove_stale_staging(tmp_path / "a.tif")
    assert (tmp_path / "a.tif").read_text() == "new a.tif"  # not taken back: nothing to trust
    assert len([p for p in tmp_path.iterdir() if STAGING_MARK in p.name]) == 2


@pytest.mark.parametrize("overwrite", ["no", "False", 0, None])
def test_an_overwrite_that_is_not_a_bool_is_refused(tmp_path, overwrite):
    # A string such as "no" is truthy: taken as it was, it replaced the existing file (a map
    # written by maps.save_map(..., overwrite="no") among others).
    target = tmp_path / "review.html"
    target.write_text("old")
    with pytest.raises(InputError, match=r"^overwrite must be True or False, got "):
        atomic_path(target, overwrite=overwrite).__enter__()
    assert target.read_text() == "old" and _names(tmp_path) == ["review.html"]


def test_discarding_twice_closes_each_lock_once(tmp_path, monkeypatch):
    # The command line discards its outputs after a failed commit, which had discarded them
    # already: each staging folder's lock descriptor was closed twice, and by the second time
    # the number may belong to a file another thread has opened.
    outputs = AtomicOutputs()
    outputs.add(tmp_path / "a.txt").write_text("a")
    outputs.add(tmp_path / "b.txt").write_text("b")
    outputs.discard()
    assert _names(tmp_path) == []
    closed = []
    monkeypatch.setattr(atomic.os, "close", closed.append)  # closes nothing, records the call
    outputs.discard()
    assert closed == []


def test_a_commit_waits_for_another_one_at_most_a_while(tmp_path, monkeypatch):
    # The flock of the target's folder blocked for ever, silently, and Ctrl-C waited with it.
    import fcntl

    monkeypatch.setattr(atomic, "COMMIT_WAIT_SECONDS", 0.3)
    outputs = AtomicOutputs()
    outputs.add(tmp_path / "r.gpkg").write_text("ours")
    other = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(other, fcntl.LOCK_EX)  # another run's commit, holding the folder
        with pytest.raises(InputError, match=r"another run has been moving its outputs into "
                                             r".* for over 0\.3 s; nothing was written"):
            outputs.commit()
    finally:
        os.close(other)
    assert _names(tmp_path) == []


def test_a_failed_write_removes_the_folders_made_for_it_and_nothing_else(tmp_path):
    # A failed write_release("new/sub/r.gpkg") left new/sub behind (the command line removed
    # them, the Python writers did not).
    (tmp_path / "kept").mkdir()
    with pytest.raises(RuntimeError):
        with atomic_path(tmp_path / "new" / "sub" / "r.txt") as staged:
            staged.write_text("half")
            raise RuntimeError("the writer failed")
    with AtomicOutputs(overwrite=False) as outputs:
        outputs.add(tmp_path / "kept" / "deeper" / "r.txt")
        (tmp_path / "kept" / "other.txt").write_text("someone else's")
        outputs.discard()
    assert _names(tmp_path) == ["kept"] and _names(tmp_path / "kept") == ["other.txt"]
    with atomic_path(tmp_path / "made" / "r.txt") as staged:  # a success keeps its folders
        staged.write_text("done")
    assert (tmp_path / "made" / "r.txt").read_text() == "done"


@pytest.mark.parametrize(("umask", "private", "mode"), [
    (0o000, False, 0o664), (0o002, False, 0o664), (0o022, False, 0o644), (0o077, False, 0o600),
    (0o000, True, 0o600)])
def test_outputs_are_never_writable_by_every_user(tmp_path, umask, private, mode):
    # Under umask 0 GDAL created a published GeoTIFF 0666, which anyone could then edit; a
    # group's write is the umask's (a team's 002).
    old = os.umask(umask)
    try:
        with atomic_path(tmp_path / "out.tif", private=private) as staged:
            descriptor = os.open(staged, os.O_WRONLY | os.O_CREAT, 0o666)  # as GDAL does
            os.close(descriptor)
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "out.tif").st_mode) == mode
