"""The ``geosynth`` command line: one module per subcommand, shared options in :mod:`.options`.

Subcommands: ``release`` (fit, synthesize and write a release GeoPackage), ``evaluate`` (risk and
utility of a written release against the confidential file), ``inspect`` (layers and metadata of
a release file) and ``demo`` (the whole pipeline on the simulated scenario of Nunes 2018).

Errors of geosynth (bad input files, columns, CRSs, existing outputs) print one message and exit
with status 2; ``geosynth --verbose`` adds the traceback. geosynth warnings are printed as one
``Warning: ...`` line each on stderr, like the progress bars (``geosynth -q`` hides the bars).
"""

from __future__ import annotations

import sys
import traceback
import warnings

import click

from geosynth import __version__
from geosynth.errors import GeosynthError, GeosynthWarning

__all__ = ["main", "cli"]


class GeosynthGroup(click.Group):
    """Click group that turns geosynth errors into one clear message and exit code 2."""

    def invoke(self, ctx: click.Context):  # noqa: D102
        try:
            with warnings.catch_warnings():
                warnings.showwarning = _warning_printer(warnings.showwarning)
                return super().invoke(ctx)
        except (GeosynthError, OSError) as err:
            if isinstance(err, BrokenPipeError):
                raise  # click exits quietly when the reader of stdout went away (| head)
            if ctx.obj and ctx.obj.get("verbose"):
                traceback.print_exc()
            click.echo(f"Error: {err}", err=True)
            ctx.exit(2)


def _warning_printer(show_other):
    """Return a ``warnings.showwarning`` printing geosynth warnings as ``Warning: ...`` lines."""

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        if issubclass(category, GeosynthWarning):
            click.echo(f"Warning: {message}", err=True)
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
    from geosynth.cli import demo, evaluate, inspect, release

    cli.add_command(release.release)
    cli.add_command(evaluate.evaluate)
    cli.add_command(inspect.inspect)
    cli.add_command(demo.demo)


_register()


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``geosynth`` console script."""
    cli.main(args=argv if argv is not None else sys.argv[1:], prog_name="geosynth")
