"""One transaction per run: file modes, all or nothing, Ctrl-C, and two runs to one --out."""

import errno
import os
import select
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

import geosynth
from geosynth import io
from geosynth._atomic import STAGING_MARK, AtomicOutputs
from geosynth.errors import InputError
from tests.cli.helpers import FAST, assert_refused, run

pytestmark = pytest.mark.usefixtures("sigint_raises")

ARGS = ["--attributes", "y,x1", "--grid", "4x4", *FAST]


def release_args(inputs, folder, *extra):
    return ["release", inputs["gpkg"], *ARGS, "--seed", 5, "--out", folder / "release.gpkg",
            "--map", folder / "review.html", "--report", folder / "report.md", *extra]


def files(folder):
    return sorted(str(p.relative_to(folder)) for p in Path(folder).rglob("*"))


def no_staging(folder):
    return not any(STAGING_MARK in p.name for p in Path(folder).rglob("*"))


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


@pytest.fixture
def older_release(inputs, tmp_path):
    """A release, audit, map and report written by an earlier run, and their bytes."""
    result = run(*release_args(inputs, tmp_path))
    assert result.exit_code == 0, result.output
    return {p: p.read_bytes() for p in tmp_path.iterdir()}


# ---------------------------------------------------------------------- item 5: file modes
def test_release_run_creates_internal_files_0600(inputs, tmp_path, umask_022):
    result = run(*release_args(inputs, tmp_path))
    assert result.exit_code == 0, result.output
    assert files(tmp_path) == ["release.gpkg", "release.gpkg.audit.json", "report.md",
                               "review.html"]
    assert mode(tmp_path / "release.gpkg") == 0o644  # public
    for private in ("release.gpkg.audit.json", "review.html", "report.md"):
        assert mode(tmp_path / private) == 0o600, private


def test_internal_files_are_0600_from_their_creation(inputs, tmp_path, monkeypatch, umask_022):
    """A kill at any moment leaves no world-readable copy: the staged files are 0600 too."""
    created = {}
    real_open = os.open

    def spy(path, flags, mode=0o777, *args, **kwargs):
        descriptor = real_open(path, flags, mode, *args, **kwargs)
        if flags & os.O_CREAT and Path(path).name in ("review.html", "report.md"):
            created[Path(path).name] = stat.S_IMODE(os.fstat(descriptor).st_mode)
        return descriptor

    monkeypatch.setattr(os, "open", spy)
    result = run(*release_args(inputs, tmp_path))
    assert result.exit_code == 0, result.output
    assert created == {"review.html": 0o600, "report.md": 0o600}


def test_demo_writes_internal_files_0600(tmp_path, umask_022):
    out, maps = tmp_path / "out", tmp_path / "maps"
    result = run("demo", "--out", out, "--maps", maps, "--n", 150, "--grid", "4x4",
                 "--iterations", 40)
    assert result.exit_code == 0, result.output
    assert mode(out / "release.gpkg") == 0o644
    private = [out / "release.gpkg.audit.json", out / "report.md", maps / "review.html",
               *sorted((out / "figures").iterdir())]
    assert len(private) == 3 + 6
    assert {p.name: mode(p) for p in private} == {p.name: 0o600 for p in private}
    assert no_staging(tmp_path)


# ---------------------------------------------------------------------- item 8: all or nothing
def test_unwritable_report_folder_fails_before_the_fit(inputs, tmp_path, monkeypatch):
    def no_fit(*args, **kwargs):
        raise AssertionError("the output folders must be checked before the fit")

    monkeypatch.setattr(geosynth.PaivaModel, "fit", no_fit)
    (tmp_path / "afile").write_text("a file, not a folder")
    result = run("release", inputs["gpkg"], *ARGS, "--out", tmp_path / "release.gpkg",
                 "--map", tmp_path / "maps" / "review.html",
                 "--report", tmp_path / "afile" / "report.md")
    assert_refused(result, "--report", "afile", "cannot write in the folder",
                   "nothing was written")
    assert files(tmp_path) == ["afile"]  # no release, audit, map, nor the maps/ folder


def test_unwritable_report_folder_is_refused_by_permissions_too(inputs, tmp_path, monkeypatch):
    """As root directory modes do not stop writes: make staging in report/ fail instead."""
    real_add = AtomicOutputs.add
    locked = tmp_path / "locked"

    def add(self, path, **kwargs):
        if Path(path).parent == locked:
            raise PermissionError(13, "Permission denied", str(locked))
        return real_add(self, path, **kwargs)

    monkeypatch.setattr(AtomicOutputs, "add", add)
    result = run("release", inputs["gpkg"], *ARGS, "--out", tmp_path / "release.gpkg",
                 "--report", locked / "report.md")
    assert_refused(result, "--report", str(locked), "Permission denied")
    assert files(tmp_path) == []


@pytest.mark.parametrize("overwrite", [False, True], ids=["new", "overwrite"])
def test_failure_while_writing_leaves_nothing(inputs, tmp_path, monkeypatch, overwrite,
                                              request):
    """The map and report are staged, then the release fails: none of them is written."""
    before = request.getfixturevalue("older_release") if overwrite else {}
    real_write = io.write_release

    def write_then_fail(*args, **kwargs):
        real_write(*args, **kwargs)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(io, "write_release", write_then_fail)
    result = run(*release_args(inputs, tmp_path, *(["--overwrite"] if overwrite else [])))
    assert_refused(result, "No space left on device")
    assert {p: p.read_bytes() for p in tmp_path.iterdir()} == before
    assert no_staging(tmp_path)


def test_demo_failure_writes_nothing(tmp_path, monkeypatch):
    from geosynth.cli import demo

    def broken(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(demo, "write_text", broken)  # after the map and figures were staged
    result = run("demo", "--out", tmp_path / "out", "--n", 150, "--grid", "4x4",
                 "--iterations", 40)
    assert_refused(result, "No space left on device")
    assert files(tmp_path) == []


# ---------------------------------------------------------------------- item 9: two runs
def test_second_run_to_the_same_out_fails_at_commit(inputs, tmp_path, monkeypatch):
    """Two runs without --overwrite: the one that commits last fails and leaves nothing."""
    out = tmp_path / "release.gpkg"
    real_commit = AtomicOutputs.commit
    other = {}

    def commit_after_another_run(self):
        if not other and any(t == out for t in self.targets):
            other["started"] = True
            other["result"] = run("release", inputs["gpkg"], *ARGS, "--seed", 9, "--out", out)
            other["bytes"] = out.read_bytes()
        return real_commit(self)

    monkeypatch.setattr(AtomicOutputs, "commit", commit_after_another_run)
    result = run(*release_args(inputs, tmp_path))
    assert other["result"].exit_code == 0, other["result"].output
    assert_refused(result, "--out", str(out), "created by another process",
                   "nothing was written", "--overwrite")
    assert out.read_bytes() == other["bytes"]  # the other run's release is intact
    assert io.read_release(out).m == 2
    assert files(tmp_path) == ["release.gpkg", "release.gpkg.audit.json"]  # no map, no report
    assert no_staging(tmp_path)


# ---------------------------------------------------------------------- item 7: Ctrl-C
def interrupted(result):
    assert result.exit_code == 130, result.output
    assert result.output.count("Interrupted: nothing was written") == 1, result.output
    assert "Traceback" not in result.output and "Error" not in result.output
    assert "Warning: interrupted" not in result.output


@pytest.mark.parametrize("overwrite", [False, True], ids=["new", "overwrite"])
def test_ctrl_c_during_the_fit_writes_nothing(inputs, tmp_path, monkeypatch, overwrite,
                                              request):
    before = request.getfixturevalue("older_release") if overwrite else {}

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(geosynth.PaivaModel, "fit", interrupt)
    interrupted(run(*release_args(inputs, tmp_path, *(["--overwrite"] if overwrite else []))))
    assert {p: p.read_bytes() for p in tmp_path.iterdir()} == before
    assert no_staging(tmp_path)


def test_ctrl_c_caught_by_the_fit_still_aborts(inputs, tmp_path, monkeypatch):
    """A fit that keeps its partial draws (and returns) must not become a release."""
    real_fit = geosynth.PaivaModel.fit

    def fit_that_survives_ctrl_c(self, *args, **kwargs):
        try:
            signal.raise_signal(signal.SIGINT)
        except KeyboardInterrupt:
            pass
        return real_fit(self, *args, **kwargs)

    monkeypatch.setattr(geosynth.PaivaModel, "fit", fit_that_survives_ctrl_c)
    interrupted(run(*release_args(inputs, tmp_path)))
    assert files(tmp_path) == []


def test_error_caused_by_ctrl_c_is_reported_as_the_interrupt(inputs, tmp_path, monkeypatch):
    """Ctrl-C in the burn-in left no draw: the error that follows is not the user's problem."""

    def fit_without_draws(self, *args, **kwargs):
        try:
            signal.raise_signal(signal.SIGINT)
        except KeyboardInterrupt:
            pass
        raise InputError("m=2 releases need 2 distinct posterior draws but the fit kept 0")

    monkeypatch.setattr(geosynth.PaivaModel, "fit", fit_without_draws)
    interrupted(run(*release_args(inputs, tmp_path)))
    assert files(tmp_path) == []


def test_main_turns_ctrl_c_outside_a_command_into_exit_130(monkeypatch, capsys):
    from geosynth import cli as package

    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(package.cli, "main", interrupt)
    with pytest.raises(SystemExit) as stopped:
        package.main(["release", "--help"])
    assert stopped.value.code == 130
    assert capsys.readouterr().err == "Interrupted: nothing was written\n"


def test_fit_marked_interrupted_aborts(inputs, tmp_path, monkeypatch):
    real_fit = geosynth.PaivaModel.fit

    def partial_fit(self, *args, **kwargs):
        fit = real_fit(self, *args, **kwargs)
        fit.interrupted = True
        return fit

    monkeypatch.setattr(geosynth.PaivaModel, "fit", partial_fit)
    interrupted(run(*release_args(inputs, tmp_path)))
    assert files(tmp_path) == []


def test_ctrl_c_while_reading_or_importing(inputs, tmp_path, monkeypatch):
    def interrupt(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(io, "read_points", interrupt)
    interrupted(run(*release_args(inputs, tmp_path)))
    assert files(tmp_path) == []


def test_ctrl_c_during_the_commit_is_held_back(inputs, tmp_path, monkeypatch):
    """Ctrl-C while the files are moved: all of them are written, and the run says so."""
    real_commit = AtomicOutputs.commit

    def commit(self):
        signal.raise_signal(signal.SIGINT)
        return real_commit(self)

    monkeypatch.setattr(AtomicOutputs, "commit", commit)
    result = run(*release_args(inputs, tmp_path))
    assert result.exit_code == 130, result.output
    assert "Interrupted after the outputs were written" in result.output
    assert files(tmp_path) == ["release.gpkg", "release.gpkg.audit.json", "report.md",
                               "review.html"]
    assert io.read_release(tmp_path / "release.gpkg").m == 2


@pytest.mark.parametrize(("signum", "status", "line"), [
    (signal.SIGINT, 130, "Interrupted: nothing was written"),
    # timeout, kill, schedulers and Docker send SIGTERM: it ended the process at once, and the
    # staged review map (the original points) and report stayed in hidden folders
    (signal.SIGTERM, 143, "Interrupted by SIGTERM: nothing was written"),
    (signal.SIGHUP, 129, "Interrupted by SIGHUP: nothing was written"),
], ids=["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_signal_to_the_console_script(inputs, tmp_path, signum, status, line):
    """A real Ctrl-C (SIGINT) or SIGTERM during the fit: one line, nothing on disk."""
    script = Path(sys.executable).with_name("geosynth")
    out = tmp_path / "out"
    args = [str(script), "-q", "release", str(inputs["gpkg"]), "--attributes", "y,x1",
            "--grid", "4x4", "--iterations", "2000000", "--burn-in", "10", "--thin", "1000",
            "--out",
            str(out / "release.gpkg"), "--map", str(out / "review.html"), "--report",
            str(out / "report.md")]
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    process = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=env, preexec_fn=lambda: signal.signal(signal.SIGINT,
                                                                         signal.SIG_DFL))
    try:
        deadline, seen = time.monotonic() + 120, b""
        while b"Fitting" not in seen and time.monotonic() < deadline:
            ready, _, _ = select.select([process.stderr], [], [], 1.0)
            if ready:
                seen += os.read(process.stderr.fileno(), 4096)
        assert b"Fitting" in seen, seen
        time.sleep(1.0)  # in the sampler (or still compiling it)
        process.send_signal(signum)
        stdout, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    stderr = (seen + stderr).decode()
    assert process.returncode == status, stderr
    assert stderr.rstrip().endswith(line), stderr
    assert stderr.count("Interrupted") == 1 and "Traceback" not in stderr, stderr
    assert not out.exists() or files(out) == []


# ---------------------------------------------------------------------- RunOutputs
def test_run_outputs_name_the_option_of_a_file_created_meanwhile(tmp_path):
    from geosynth.cli.helpers import RunOutputs

    target = tmp_path / "report.md"
    with pytest.raises(InputError, match=r"--report .*report\.md was created by another"):
        with RunOutputs(overwrite=False) as outputs:
            outputs.stage("--report", target, private=True).write_text("ours")
            target.write_text("theirs")
            outputs.commit()
    assert target.read_text() == "theirs"
    assert files(tmp_path) == ["report.md"]


def test_run_outputs_refuse_to_commit_a_file_never_written(tmp_path):
    # The commit skipped a staged file that was not there, and the command printed "Wrote
    # map.html" for a map that was never moved into place.
    from geosynth.cli.helpers import RunOutputs

    with pytest.raises(InputError, match=r"--map .*map\.html was not written.*nothing was "
                                         r"written"):
        with RunOutputs(overwrite=False) as outputs:
            outputs.stage("--report", tmp_path / "report.md", private=True).write_text("ours")
            outputs.stage("--map", tmp_path / "map.html", private=True)
            outputs.commit()
    assert files(tmp_path) == []


def test_an_output_folder_every_user_may_change_is_refused_before_reading(inputs, tmp_path):
    # In a 0777 folder another user renamed the private staging folder and put a link to a
    # folder of theirs in its place: the commit chmod-ed the file the link named and published
    # their file as the audit file. A sticky folder (/tmp) lets only an entry's owner rename it.
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    result = run("release", inputs["gpkg"], "--attributes", "y", "--grid", "3x3", *FAST,
                 "--out", shared / "r.gpkg")
    assert_refused(result, "can be changed by every user (mode 777, no sticky bit)",
                   "chmod o-w or chmod +t")
    assert "Read " not in result.output and files(shared) == []
    shared.chmod(0o1777)  # sticky: accepted
    result = run("release", inputs["gpkg"], "--attributes", "y", "--grid", "3x3", *FAST,
                 "--seed", 1, "--out", shared / "r.gpkg")
    assert result.exit_code == 0, result.output


# ---------------------------------------------------------------------- errors of the commit
def fail_in_commit(monkeypatch, before_commit):
    """Run ``before_commit(outputs)`` just before the outputs of a run are moved into place."""
    real_commit = AtomicOutputs.commit

    def commit(self):
        before_commit(self)
        return real_commit(self)

    monkeypatch.setattr(AtomicOutputs, "commit", commit)


def test_a_full_disk_at_commit_names_the_option_and_writes_nothing(inputs, tmp_path,
                                                                   monkeypatch):
    # The flush before the moves failed with "Error: [Errno 28] could not be written to disk
    # ...: '/.../release.gpkg'", an OSError naming no option.
    def full(descriptor):
        raise OSError(errno.ENOSPC, "No space left on device")

    fail_in_commit(monkeypatch, lambda outputs: monkeypatch.setattr(os, "fsync", full))
    result = run("release", inputs["gpkg"], *ARGS, "--seed", 5,
                 "--out", tmp_path / "release.gpkg")
    assert_refused(result, "--out", str(tmp_path / "release.gpkg"), "the disk is full",
                   "free some space", "nothing was written")
    assert "Errno" not in result.output
    assert files(tmp_path) == [] and no_staging(tmp_path)


def test_a_full_disk_while_the_release_is_written_names_the_option(inputs, tmp_path,
                                                                    monkeypatch):
    # Before the commit, a writer filling its staged file printed "Error: [Errno 28] No space
    # left on device: '/.../.release.gpkg.geosynth-staging-.../release.gpkg'".
    import geosynth.io.release as release_module

    def full(frame, path, layer, target):
        raise OSError(errno.ENOSPC, "No space left on device", str(path))

    monkeypatch.setattr(release_module, "_write_layer", full)
    result = run("release", inputs["gpkg"], *ARGS, "--seed", 5,
                 "--out", tmp_path / "release.gpkg")
    assert_refused(result, "--out", str(tmp_path / "release.gpkg"), "the disk is full",
                   "nothing was written")
    assert "Errno" not in result.output and "staging" not in result.output
    assert files(tmp_path) == [] and no_staging(tmp_path)


def test_a_full_disk_while_the_map_is_written_names_the_outputs(inputs, tmp_path, monkeypatch):
    # A stream's write names no file: "Error: [Errno 28] No space left on device", no option.
    import geosynth.maps

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(geosynth.maps, "save_map", full)
    result = run("release", inputs["gpkg"], *ARGS, "--seed", 5,
                 "--out", tmp_path / "release.gpkg", "--map", tmp_path / "map.html")
    assert_refused(result, "the outputs --out", "--map", str(tmp_path / "map.html"),
                   "the disk is full", "nothing was written")
    assert "Errno" not in result.output
    assert files(tmp_path) == [] and no_staging(tmp_path)


def test_a_move_refused_by_the_folder_names_the_option(inputs, tmp_path, monkeypatch):
    # "[Errno 13] Permission denied: '<staging folder>/report.md' -> '.../report.md'".
    real_link = os.link

    def link(source, target, *args, **kwargs):
        if Path(target).name == "report.md":
            raise PermissionError(errno.EACCES, "Permission denied", str(source), None,
                                  str(target))
        return real_link(source, target, *args, **kwargs)

    monkeypatch.setattr(os, "link", link)
    result = run(*release_args(inputs, tmp_path))
    assert_refused(result, "--report", str(tmp_path / "report.md"), "Permission denied",
                   "choose a folder you can write to", "nothing was written")
    assert "Errno" not in result.output and "--out" not in result.output
    assert files(tmp_path) == [] and no_staging(tmp_path)


@pytest.mark.parametrize("overwrite", [False, True], ids=["new", "overwrite"])
def test_a_directory_made_at_an_output_meanwhile_names_the_option(inputs, tmp_path,
                                                                  monkeypatch, overwrite):
    # With --overwrite: "[Errno 21] Is a directory: '.../report.md'"; without, "created by
    # another process ... pass --overwrite to replace it", which would not replace a directory.
    report = tmp_path / "report.md"
    fail_in_commit(monkeypatch, lambda outputs: report.mkdir())
    result = run(*release_args(inputs, tmp_path, *(["--overwrite"] if overwrite else [])))
    assert "--overwrite" not in result.output
    assert_refused(result, "--report", str(report), "is a directory", "give a file name")
    assert "Errno" not in result.output
    assert files(tmp_path) == ["report.md"] and report.is_dir() and no_staging(tmp_path)


def _ctrl_c_in_the_first_removal(monkeypatch) -> list:
    """Press Ctrl-C in the first shutil.rmtree from now on; return the list of paths it hit."""
    import shutil

    real_rmtree = shutil.rmtree
    pressed = []

    def rmtree(path, *args, **kwargs):
        if not pressed:
            pressed.append(path)
            signal.raise_signal(signal.SIGINT)
        return real_rmtree(path, *args, **kwargs)

    monkeypatch.setattr(shutil, "rmtree", rmtree)
    return pressed


def test_ctrl_c_during_the_cleanup_still_removes_every_staged_file(inputs, tmp_path,
                                                                   monkeypatch):
    # Ctrl-C while a failed run removed its staging folders stopped the removal: the others
    # (with the staged map and report) and the folder made for the map stayed behind.
    real_write = io.write_release
    removals = []

    def write_then_ctrl_c(*args, **kwargs):
        real_write(*args, **kwargs)
        removals.append(_ctrl_c_in_the_first_removal(monkeypatch))
        raise KeyboardInterrupt

    monkeypatch.setattr(io, "write_release", write_then_ctrl_c)
    result = run("release", inputs["gpkg"], *ARGS, "--seed", 5, "--out",
                 tmp_path / "release.gpkg", "--map", tmp_path / "maps" / "review.html",
                 "--report", tmp_path / "report.md")
    assert removals and removals[0]  # Ctrl-C was pressed in a removal
    interrupted(result)
    assert files(tmp_path) == [] and no_staging(tmp_path)


def test_ctrl_c_held_back_by_nested_blocks_waits_for_the_outer_one():
    # The inner block's end let Ctrl-C through in the middle of the outer one.
    from geosynth.cli.helpers import InterruptWatch

    steps = []
    with pytest.raises(KeyboardInterrupt), InterruptWatch() as watch, watch.deferred():
        with watch.deferred():
            steps.append("inner")
        signal.raise_signal(signal.SIGINT)
        steps.append("after the inner block")
    assert steps == ["inner", "after the inner block"] and watch.interrupted


def test_ctrl_c_while_the_output_folders_are_checked_leaves_no_staging_folder(inputs, tmp_path,
                                                                             monkeypatch):
    # The check of each output folder stages a probe and removes it: Ctrl-C in the removal
    # left the probe's staging folder beside the output.
    pressed = _ctrl_c_in_the_first_removal(monkeypatch)
    interrupted(run(*release_args(inputs, tmp_path)))
    assert pressed and files(tmp_path) == [] and no_staging(tmp_path)


def test_an_output_another_user_owns_in_a_sticky_folder_is_refused_before_reading(
        inputs, tmp_path, monkeypatch):
    # refused at the final move, after the fit; seen as another user (the file is ours)
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o1777)
    (shared / "r.gpkg").write_bytes(b"their release")
    monkeypatch.setattr(os, "geteuid", lambda: os.stat(shared / "r.gpkg").st_uid + 4242)
    result = run("release", inputs["gpkg"], "--attributes", "y", "--grid", "4x4",
                 "--iterations", "40", "--out", shared / "r.gpkg", "--overwrite")
    assert_refused(result, "r.gpkg (--out) belongs to another user, in a folder with the sticky "
                           "bit")
    assert "Read " not in result.output
    assert (shared / "r.gpkg").read_bytes() == b"their release"


@pytest.mark.parametrize("signame", ["SIGTERM", "SIGHUP", "SIGINT"])
def test_a_signal_after_a_successful_command_does_not_end_the_run_as_failed(signame):
    # The watch put the default handlers back when the command returned, and a SIGTERM while
    # the interpreter shut down ended a run whose outputs were all written with status 143
    # and no word. The signal here comes after main() has returned, deterministically.
    script = ("import os, signal\n"
              "from geosynth.cli import main\n"
              "try:\n"
              "    main(['--version'])\n"
              "except SystemExit as done:\n"
              "    assert done.code in (0, None)\n"
              f"os.kill(os.getpid(), signal.{signame})\n"
              "print('still here')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0 and done.stdout.splitlines()[-1] == "still here", done
