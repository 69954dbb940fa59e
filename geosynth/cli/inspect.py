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
    """Print the layers of RELEASE (row counts, geometry types, columns) and its metadata.

    A release column named like a record identifier (patient_id, patientId, case_no, uuid)
    that the recorded model does not release is refused as an edit. Another column that the
    model does not release (coordinates added after geosynth wrote the file) is named in a
    warning: check it before publishing.
    A release that records no model (an OnTheMap release) cannot be checked so: a note names
    all its columns. Columns drawn within the analyst's limits (release --limit) are named with
    their range: their values were drawn truncated to it.

    RELEASE is first checked against the release schema: a file that is not a complete
    geosynth release (damaged, interrupted, edited) is refused with what is wrong. Also says
    whether the private audit file (<RELEASE>.audit.json, which holds the seeds) lies beside it
    and whether it belongs to this release (its SHA-256); its contents are never printed. An
    audit file that belongs to another version of the release, or is damaged, is an error
    (exit status 2), reported after the layers and metadata; one that cannot be read is noted.
    """
    import pyogrio

    from geosynth import io
    from geosynth.io import printable

    source = io.existing_file(release_path, "RELEASE")  # a pipe or device: named RELEASE
    release_file = io.read_release(source, check_audit=False)  # validates the file
    kinds = dict(pyogrio.list_layers(source))  # as GDAL reads it (" r.gpkg" absolute)
    rows = _row_counts(release_file)
    click.echo(f"Release file: {printable(release_path)}")
    click.echo("Layers:")
    width = max(len(printable(name)) for name in release_file.layers)
    for name in release_file.layers:
        geometry_type = kinds.get(name)
        kind = printable(geometry_type) if geometry_type is not None else "table"
        click.echo(f"{_INDENT}{printable(name):<{width}}  {kind:<12} {rows[name]:>8} rows")
    for number, release in enumerate(release_file.releases, start=1):
        if len(release) == 0:
            click.echo(f"Note: {io.RELEASE_LAYER.format(number)} has no records")
    _echo_columns(release_file)
    click.echo("Metadata:")
    # Read back through the schema: the record that was written, as the file holds it.
    metadata = io.metadata_from_info(release_file.info)
    for key in ("format", "format_version"):  # the file's, not the version this one writes
        if key in release_file.metadata:
            metadata[key] = release_file.metadata[key]
    for line in _pretty_lines(metadata, 1):
        click.echo(line)
    _echo_limits(metadata.get("limits"))
    audit = io.audit_path(release_path)
    try:
        record = io.verify_audit(release_path)  # InputError: it belongs to another release
    except OSError as err:
        click.echo(f"Audit file: {printable(audit)} exists but cannot be read "
                   f"({printable(err.strerror)}); not checked against the release")
        return
    if record is None:
        click.echo("Audit file: none beside the release")
        return
    seeds = "it holds the seeds" if _holds_seeds(record) else "it records no seeds"
    click.echo(f"Audit file: {printable(audit)} exists and its SHA-256 matches this release "
               f"(private: {seeds}; do not publish it)")


def _echo_limits(limits: dict[str, list[float | None]] | None) -> None:
    """Say which columns were drawn truncated to the analyst's limits, and to what range.

    The limits are the analyst's public statements (``--limit``), not data: a truncated draw
    moves the mean and spread of values near a bound, which users of the file must know.
    """
    from geosynth.io import printable

    for column, (low, high) in (limits or {}).items():
        ends = ("-inf" if low is None else repr(low), "inf" if high is None else repr(high))
        click.echo(printable(f"Limits: the synthetic values of {column!r} were drawn from a "
                             f"normal truncated to [{ends[0]}, {ends[1]}], the analyst's stated "
                             "range; near a bound their mean and spread differ from an "
                             "untruncated draw's"))


def _holds_seeds(record: dict[str, Any]) -> bool:
    """Whether the audit record holds a seed: ``seeds`` has a value that is not None.

    ``"seeds": {}`` (a release written with ``seeds={}``) was reported as holding the seeds.
    """
    seeds = record.get("seeds")
    if isinstance(seeds, dict):
        return any(value is not None for value in seeds.values())
    return seeds is not None


def _row_counts(release_file) -> dict[str, int]:
    """Rows of each layer as :func:`geosynth.io.read_release` read and checked them.

    Not GDAL's feature counts: a GeoPackage caches them in ``gpkg_ogr_contents``, which an
    edit can change without touching a row, and the schema check reads the rows themselves.
    """
    from geosynth import io

    counts = {io.RELEASE_LAYER.format(number): len(frame)
              for number, frame in enumerate(release_file.releases, start=1)}
    if release_file.grid is not None:
        counts[io.GRID_LAYER] = len(release_file.grid)
    counts[io.METADATA_LAYER] = len(release_file.metadata)  # one row per key, none repeated
    return counts


def _echo_columns(release_file) -> None:
    """Print the columns of the release layers, with a note when no model is recorded.

    A synthetic layer holds the model's attributes and continuous columns only: another column
    (a record id, the original coordinates) was added after geosynth wrote the file, and
    :func:`geosynth.io.read_release` refuses it. A release without a recorded model (OnTheMap's,
    or one written by ``write_release`` from Python) has nothing to check its columns against:
    a note names them all, for the one who publishes the file to look at.
    """
    from geosynth.io import printable

    frame = release_file.releases[0]
    columns = [str(c) for c in frame.columns if c != frame.geometry.name]
    click.echo(f"Release columns: {printable(', '.join(columns)) or '(none)'}")
    # With a model recorded, read_release refused any column it does not release.
    if not isinstance(release_file.metadata.get("model"), dict) and columns:
        # OnTheMap and other model-less releases: nothing to check them against
        click.echo(f"Note: the metadata records no model, so inspect cannot tell which of "
                   f"the release columns ({printable(', '.join(columns))}) geosynth "
                   "released and which were added later: check what each holds before "
                   "publishing", err=True)


def _pretty_lines(value: dict[str, Any], depth: int) -> list[str]:
    """``key: value`` lines; short values as compact JSON, nested dicts indented below.

    Keys and values come from the file: control characters are replaced (:func:`printable`).
    """
    from geosynth.io import printable

    lines = []
    for key, item in value.items():
        text = json.dumps(item, ensure_ascii=False)
        if isinstance(item, dict) and item and len(text) > _SHORT:
            lines.append(printable(f"{_INDENT * depth}{key}:"))
            lines.extend(_pretty_lines(item, depth + 1))
        else:
            lines.append(printable(f"{_INDENT * depth}{key}: {text}"))
    return lines
