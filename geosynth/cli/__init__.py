"""The ``geosynth`` command line: one module per subcommand, shared options in :mod:`.options`.

Subcommands: ``release`` (fit, synthesize and write a release GeoPackage), ``tune`` (risk and
utility of candidate lattices, and the one to release with), ``evaluate`` (risk and
utility of a written release against the confidential file), ``inspect`` (layers and metadata of
a release file), ``demo`` (the whole pipeline on the simulated scenario of Nunes 2018) and
``compile`` (the samplers' numba kernels, ahead of the first fit; ``make`` runs it).

Errors of geosynth (bad input files, columns, CRSs, existing outputs) print one message and exit
with status 2; ``geosynth --verbose`` adds the traceback. Messages name the command-line options,
not the parameters of the Python API (:mod:`geosynth.cli.messages`). geosynth warnings are printed
as one ``Warning: ...`` line each on stderr, like the progress bars (``geosynth -q`` hides the
bars).

Ctrl-C anywhere in a command (imports, reading, fitting, writing) prints one line,
``Interrupted: nothing was written``, and exits with status 130 (SIGTERM and SIGHUP likewise,
with 143 and 129): the commands stage every output and move them into place only at the very
end (:class:`geosynth.cli.helpers.RunOutputs`), so an interrupted run leaves no file behind and
replaces none, even with ``--overwrite``.
"""

from __future__ import annotations

import signal
import sys
import traceback
import warnings

import click

from geosynth import __version__
from geosynth.cli.helpers import INTERRUPTED, WATCHED_SIGNALS, InterruptWatch
from geosynth.cli.messages import cli_message
from geosynth.errors import GeosynthError, GeosynthWarning

__all__ = ["main", "cli", "GeosynthGroup"]


class GeosynthGroup(click.Group):
    """Click group that turns geosynth errors into one clear message and exit code 2.

    It also turns Ctrl-C into one line and exit code 130 (see :class:`InterruptWatch`).
    """

    def invoke(self, ctx: click.Context):  # noqa: D102
        obj = ctx.ensure_object(dict)
        watch = InterruptWatch()
        obj["interrupts"] = watch
        try:
            with watch, warnings.catch_warnings():
                warnings.showwarning = _warning_printer(warnings.showwarning, watch, obj)
                # arviz's guess that draws came transposed, raw with its file path, when a short
                # run keeps fewer draws than chains: the R-hat line says what to change.
                warnings.filterwarnings("ignore", r"More chains \(\d+\) than draws",
                                        UserWarning)
                return super().invoke(ctx)
        except KeyboardInterrupt:
            _interrupted(ctx)
        except (GeosynthError, OSError) as err:
            if isinstance(err, BrokenPipeError):
                raise  # click exits quietly when the reader of stdout went away (| head)
            if watch.interrupted:  # an error caused by Ctrl-C (e.g. a fit left without draws)
                _interrupted(ctx)
            if obj.get("verbose"):
                traceback.print_exc()
            click.echo(f"Error: {cli_message(str(err), obj.get('names'))}", err=True)
            ctx.exit(2)


def _interrupted(ctx: click.Context) -> None:
    """Print the one line of an interrupted run and exit with status 128 + the signal's number.

    130 for Ctrl-C (SIGINT), 143 for SIGTERM, 129 for SIGHUP, as a shell reports a process
    those signals ended.
    """
    watch = (ctx.obj or {}).get("interrupts")
    signum = watch.signum if isinstance(watch, InterruptWatch) else int(signal.SIGINT)
    by = "" if signum == signal.SIGINT else f" by {signal.Signals(signum).name}"
    written = (ctx.obj or {}).get("written") or []
    if written:
        click.echo(f"Interrupted{by} after the outputs were written: "
                   f"{', '.join(map(str, written))}", err=True)
    else:
        click.echo(f"Interrupted{by}: nothing was written", err=True)
    ctx.exit(INTERRUPTED if signum == signal.SIGINT else 128 + signum)


def _warning_printer(show_other, watch: InterruptWatch, obj: dict):
    """Return a ``warnings.showwarning`` printing geosynth warnings as ``Warning: ...`` lines.

    After Ctrl-C no warning is printed: they would describe the partial work being discarded.
    """

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        if watch.interrupted:
            return
        if issubclass(category, GeosynthWarning):
            click.echo(f"Warning: {cli_message(str(message), obj.get('names'))}", err=True)
        else:
            show_other(message, category, filename, lineno, file, line)

    return show


@click.group(cls=GeosynthGroup)
@click.version_option(__version__, prog_name="geosynth")
@click.option("-v", "--verbose", is_flag=True, help="Show tracebacks for errors.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bars.")
@click.pass_context
def cli(ctx: click.Context, verbose: bool, quiet: bool) -> None:
    """Synthetic locations for confidential point data."""
    ctx.ensure_object(dict)
    ctx.obj["verbose"] = verbose
    ctx.obj["quiet"] = quiet


def _register() -> None:
    from geosynth.cli import compiling, demo, evaluate, inspect, release, tune

    cli.add_command(release.release)
    cli.add_command(tune.tune)
    cli.add_command(evaluate.evaluate)
    cli.add_command(inspect.inspect)
    cli.add_command(demo.demo)
    cli.add_command(compiling.compile_samplers)


_register()


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``geosynth`` console script.

    Parameters
    ----------
    argv : list of str, optional
        The arguments (default: ``sys.argv[1:]``).
    """
    try:
        cli.main(args=argv if argv is not None else sys.argv[1:], prog_name="geosynth")
    except KeyboardInterrupt:  # outside a command, e.g. while click parses the arguments
        click.echo("Interrupted: nothing was written", err=True)
        sys.exit(INTERRUPTED)
    except SystemExit as done:
        if done.code in (0, None):
            _ignore_late_signals()
        raise


def _ignore_late_signals() -> None:
    """Ignore Ctrl-C, SIGTERM and SIGHUP once the command has succeeded, until the exit.

    Its watch had put the default handlers back, and a signal while the interpreter shut down
    ended a run whose outputs were all written with status 143 and no word, so that a script
    took the release for failed.
    """
    for signum in WATCHED_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
