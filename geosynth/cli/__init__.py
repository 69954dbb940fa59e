"""The ``geosynth`` command line: one module per subcommand, shared options in :mod:`.options`."""

from __future__ import annotations

import sys
import traceback

import click

from geosynth import __version__
from geosynth.errors import GeosynthError

__all__ = ["main", "cli"]


class GeosynthGroup(click.Group):
    """Click group that turns geosynth errors into one clear message and exit code 2."""

    def invoke(self, ctx: click.Context):  # noqa: D102
        try:
            return super().invoke(ctx)
        except GeosynthError as err:
            if ctx.obj and ctx.obj.get("verbose"):
                traceback.print_exc()
            click.echo(f"Error: {err}", err=True)
            ctx.exit(2)


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
    from geosynth.cli import demo

    cli.add_command(demo.demo)


_register()


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``geosynth`` console script."""
    cli.main(args=argv if argv is not None else sys.argv[1:], prog_name="geosynth")
