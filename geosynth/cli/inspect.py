"""``geosynth inspect``: the layers and metadata of a release GeoPackage."""

from __future__ import annotations

import json
from typing import Any

import click

__all__ = ["inspect"]

_INDENT = "    "
_SHORT = 60  # characters of JSON printed on the key's line


@click.command(short_help="Show the layers and metadata of a release file.")
@click.argument("release_path", metavar="RELEASE", type=click.Path(exists=True, dir_okay=False))
def inspect(release_path: str) -> None:
    """Print the layers of RELEASE with their row counts and geometry types, and its metadata.

    Also says whether the private audit file (<RELEASE>.audit.json, which holds the seeds) lies
    beside it; its contents are never printed.
    """
    import pyogrio

    from geosynth import io

    release_file = io.read_release(release_path)  # validates the file
    listed = pyogrio.list_layers(release_path)
    click.echo(f"Release file: {release_path}")
    click.echo("Layers:")
    width = max(len(str(name)) for name in listed[:, 0])
    for name, geometry_type in listed:
        rows = pyogrio.read_info(release_path, layer=name)["features"]
        kind = geometry_type if geometry_type is not None else "table"
        click.echo(f"{_INDENT}{name:<{width}}  {kind:<12} {rows:>8} rows")
    click.echo("Metadata:")
    for line in _pretty_lines(release_file.metadata, 1):
        click.echo(line)
    audit = io.audit_path(release_path)
    if audit.exists():
        click.echo(f"Audit file: {audit} exists (private: it holds the seeds; do not publish it)")
    else:
        click.echo("Audit file: none beside the release")


def _pretty_lines(value: dict[str, Any], depth: int) -> list[str]:
    """``key: value`` lines; short values as compact JSON, nested dicts indented below."""
    lines = []
    for key, item in value.items():
        text = json.dumps(item, ensure_ascii=False)
        if isinstance(item, dict) and item and len(text) > _SHORT:
            lines.append(f"{_INDENT * depth}{key}:")
            lines.extend(_pretty_lines(item, depth + 1))
        else:
            lines.append(f"{_INDENT * depth}{key}: {text}")
    return lines
