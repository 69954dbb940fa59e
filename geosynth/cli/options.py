"""Options shared by several ``geosynth`` subcommands."""

from __future__ import annotations

import click

__all__ = ["out_dir_option", "seed_option"]

out_dir_option = click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, writable=True),
    default="out",
    show_default=True,
    help="Directory for the files the command writes.",
)

seed_option = click.option(
    "--seed",
    type=int,
    default=None,
    help="Seed for reproducible runs (never written into a release).",
)
