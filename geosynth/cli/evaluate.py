"""``geosynth evaluate``: disclosure risk and utility of a written release."""

from __future__ import annotations

from pathlib import Path

import click

from geosynth.cli.helpers import (
    RunOutputs,
    check_binary,
    check_columns,
    check_complete,
    check_coverage_size,
    check_outputs,
    write_text,
)
from geosynth.cli.options import (
    attributes_option,
    csv_reading,
    outcome_option,
    overwrite_option,
    points_options,
    report_option,
    seed_option,
)
from geosynth.errors import CRSError, InputError

__all__ = ["evaluate"]

_EXISTING_FILE = click.Path(exists=True, dir_okay=False)


@click.command(short_help="Risk and utility of a release against the confidential points.")
@click.argument("original_path", metavar="ORIGINAL", type=_EXISTING_FILE)
@click.argument("release_path", metavar="RELEASE", type=_EXISTING_FILE)
@points_options
@attributes_option(
    required=False,
    help_text="Comma-separated attribute columns that define the combinations (default: the "
    "attributes recorded in the release metadata).",
)
@outcome_option
@seed_option(help_text="Seed of the random rectangles of the coverage table.")
@report_option
@overwrite_option
def evaluate(
    original_path: str,
    release_path: str,
    layer: str | None,
    x_column: str | None,
    y_column: str | None,
    crs: str | None,
    sep: str | None,
    decimal: str | None,
    encoding: str | None,
    na_values: list[str] | None,
    attributes: list[str] | None,
    outcome: str | None,
    seed: int | None,
    report_path: str | None,
    overwrite: bool,
) -> None:
    """Compare the releases in RELEASE (a geosynth GeoPackage) with the ORIGINAL points.

    ORIGINAL is read like the INPUT of 'geosynth release' (--layer, --x, --y, --crs, --sep,
    --decimal, --encoding, --na-values). The published releases are shuffled and carry no record
    index, so only the measures that need no record linkage are computed: distance risk
    (greedy-matched distances per combination, Nunes 2018 Tables 4-6), the Ripley's L pattern
    distance and, with --outcome, the coverage of the outcome's proportion over random rectangles
    (--seed fixes the rectangles).

    RELEASE is checked against the release schema before any measure (like 'geosynth
    inspect'): a file that is not a complete geosynth release, whose audit file belongs to
    another release, or whose layers have no CRS or a geographic one (degrees), is refused. A
    layer with a point exactly at an original point's location is named in a warning: it
    publishes that location.

    The distances of a combination of fewer than three original records, or of fewer than
    three synthetic points on average over the releases (one person's distance to the public
    synthetic points), are shown nowhere, neither printed nor in the --report. For
    a differentially private release (its metadata records an epsilon) the coverage intervals
    take the fully synthetic combining rules, and only the means over the combinations are
    printed, since terminal output gets pasted: the rows per combination (which list the
    combinations of the original records) and the exact counts of the original records (what
    epsilon protects) are only in the internal --report, marked as confidential.
    """
    import geosynth
    from geosynth import io
    from geosynth.evaluation import combining_rules, markdown_code
    from geosynth.io import printable

    if seed is not None and outcome is None:  # was accepted and did nothing
        raise click.UsageError("--seed fixes the random rectangles of the --outcome's coverage; "
                               "add --outcome COLUMN or drop --seed")
    check_outputs({"--report": report_path}, overwrite,
                  inputs={"ORIGINAL": original_path, "RELEASE": release_path})
    for label, path in (("ORIGINAL", original_path), ("RELEASE", release_path)):
        io.existing_file(path, label)  # a pipe or device: named by its argument, not path
    if io.looks_like_release(original_path):  # was read as points: "pass --layer"
        raise click.UsageError(
            f"ORIGINAL {io.printable(original_path)} is a geosynth release, not the points a "
            "release was made from: the order is 'geosynth evaluate ORIGINAL RELEASE', the "
            "confidential points first"
        )
    with RunOutputs(overwrite) as outputs:
        if report_path is not None:
            outputs.check_folder("--report", report_path)
        original = io.read_points(original_path, x=x_column, y=y_column, crs=crs, layer=layer,
                                  **csv_reading(sep, decimal, encoding, na_values))
        release_file = io.read_release(release_path)
        attributes = _attributes(attributes, release_file.metadata, release_path)
        releases = release_file.releases
        _refuse_empty_layers(releases, release_path)
        epsilon = release_file.metadata.get("epsilon")
        private = epsilon is not None
        original = _same_crs(original, releases[0], original_path)
        _check_inputs(original, releases, attributes, outcome, original_path, release_path,
                      show_counts=not private)
        _check_same_data(original, releases, attributes, release_file.metadata,
                         Path(original_path).name)

        # The grid only serves the record-linkage measures, which public releases do not allow.
        # Every value of a DP release is synthetic: the fully synthetic combining rules.
        # The grid layer's box, with the original's, is the pattern table's window: a DP
        # release spread over the region beyond the records lost those points from its L gap.
        lattice_bounds = (None if release_file.grid is None or release_file.grid.empty
                          else tuple(release_file.grid.total_bounds))
        evaluation = geosynth.evaluate(original, releases, None, attributes, outcome=outcome,
                                       seed=seed, linked=False,
                                       rules=combining_rules(epsilon),
                                       lattice_bounds=lattice_bounds)
        _echo_tables(evaluation, releases, private)
        if report_path is not None:
            text = "\n".join([
                "# geosynth evaluation",
                "",
                "Internal document: it describes the confidential data; do not publish it.",
                *(["", DP_COUNTS_NOTE] if private else []),
                "",
                f"- Original: {markdown_code(original_path)}, {len(original)} records",
                f"- Release: {markdown_code(release_path)}, {len(releases)} releases "
                f"(method {markdown_code(release_file.metadata.get('method'))})",
                f"- Attributes: {', '.join(map(markdown_code, attributes))}"
                + ("" if outcome is None else f"; outcome {markdown_code(outcome)}"),
                "",
                evaluation.to_markdown(),
            ])
            write_text(report_path, text, outputs=outputs, option="--report", private=True)
        outputs.commit()
    if report_path is not None:
        click.echo(f"\nWrote {printable(report_path)} (internal report)")


#: The report's word on the exact counts of a differentially private release's original.
DP_COUNTS_NOTE = (
    "Confidential: the release is differentially private, and the number of original records "
    "and the n_original columns below are exact counts of the confidential data, which epsilon "
    "protects; never copy them into anything published (the terminal output leaves them out)."
)


def _echo_tables(evaluation, releases, private: bool) -> None:
    """Print the tables as :func:`geosynth.evaluation.shown_tables` shows them.

    For a differentially private release (``private``) only the mean rows are printed, as
    :func:`geosynth.evaluation.summary_tables` gives them, with a line saying why: the rows
    per combination listed the combinations of the original records and told those of one,
    two and more records apart, and the number of original records is what epsilon protects.
    """
    from geosynth.evaluation import (
        MIN_SHOWN_RECORDS,
        shown_tables,
        summary_tables,
        suppression_note,
    )
    from geosynth.io import printable

    sizes = f"{len(releases)} releases of {', '.join(str(len(r)) for r in releases)} records"
    if private:
        click.echo(f"{sizes}. For a differentially private release only the means over the "
                   f"combinations are shown (combinations of fewer than {MIN_SHOWN_RECORDS} "
                   "original records or synthetic points left out of them): the rows per "
                   "combination and the exact counts of the original records tell what the "
                   "confidential data hold, which epsilon protects (the internal --report has "
                   "them)")
    else:
        click.echo(f"{len(evaluation.original)} original records; {sizes}")
    shown = (summary_tables if private else shown_tables)(evaluation.tables)
    for name, table in shown.items():
        click.echo(f"\n{name.replace('_', ' ')}:")
        # Attribute levels and column names come from the files: no control characters.
        text = table.to_string(float_format="{:,.3f}".format)
        note = "" if private else suppression_note(name, evaluation.tables[name])
        click.echo("\n".join(printable(line) for line in text.splitlines() + [note] if line))


def _refuse_empty_layers(releases, release_path: str) -> None:
    from geosynth import io
    from geosynth.io import printable

    empty = [io.RELEASE_LAYER.format(k) for k, r in enumerate(releases, start=1) if len(r) == 0]
    if empty:
        raise InputError(
            f"{printable(Path(release_path).name)}: {', '.join(empty)} "
            f"{'has' if len(empty) == 1 else 'have'} no records, so there is nothing to "
            "compare with the original points; evaluate a release whose layers all hold "
            "records"
        )


def _check_inputs(original, releases, attributes: list[str], outcome: str | None,
                  original_path: str, release_path: str, show_counts: bool = True) -> None:
    """Check the columns of ORIGINAL and of every release layer, in the command's terms.

    ``show_counts`` is False for a differentially private release: no message shows a number
    of original records.
    """
    needed = {"--attributes": attributes, "--outcome": outcome}
    frames = {Path(original_path).name: original}
    frames.update({f"{Path(release_path).name} (release {number})": frame
                   for number, frame in enumerate(releases, start=1)})
    for name, frame in frames.items():
        check_columns(frame, name, needed)
        check_complete(frame, name, needed, show_counts=show_counts)
    if outcome is not None:
        for name, frame in frames.items():
            check_binary(frame, outcome, name)
        _check_coverage_inputs(original, releases, Path(original_path).name,
                               Path(release_path).name, show_counts)
    _refuse_identifying(original, attributes, Path(original_path).name, show_counts)


def _attributes(attributes: list[str] | None, metadata: dict, release_path: str) -> list[str]:
    if attributes is not None:
        return attributes
    model = metadata.get("model")
    recorded = model.get("attributes") if isinstance(model, dict) else None
    if not recorded:
        from geosynth.io import printable

        raise click.UsageError(
            f"{printable(Path(release_path).name)} does not record its attributes; pass "
            "--attributes"
        )
    return [str(a) for a in recorded]


def _same_crs(original, release, original_path: str):
    """``original`` in the CRS of the releases (reprojected if it has another one).

    Coordinates beyond the range of degrees of a geographic CRS were refused by
    :func:`geosynth.io.read_points` (the CRS is wrong, not the data).
    """
    from geosynth.io import printable

    _check_release_crs(release.crs, original.crs)
    if original.crs is None:
        if release.crs is not None:
            raise CRSError(
                f"{printable(Path(original_path).name)} has no CRS while the release is in "
                f"{printable(release.crs.to_string())}; pass --crs with the CRS of the original "
                "coordinates"
            )
        return original
    if original.crs.equals(release.crs):
        return original
    click.echo(printable(f"Reprojecting {Path(original_path).name} from "
                         f"{original.crs.to_string()} to the release CRS "
                         f"{release.crs.to_string()}"), err=True)
    return original.to_crs(release.crs)


def _check_release_crs(crs, original_crs) -> None:
    """Refuse releases without a CRS (beside a located original) or in degrees.

    Without a CRS the release cannot be put beside the original: "pass --crs for the original
    points" was the advice, which --crs (the CRS of ORIGINAL) cannot follow. In degrees, the
    original was reprojected to them and then refused with Python advice (``gdf.to_crs``).
    """
    from geosynth.io import printable

    if crs is None and original_crs is not None:
        raise CRSError(
            "RELEASE has no CRS, so its points cannot be compared with the original points (in "
            f"{printable(original_crs.to_string())}); evaluate a release written with its CRS "
            "(geosynth release records the CRS of its input)"
        )
    if crs is not None and crs.is_geographic:
        raise CRSError(
            f"RELEASE is in the geographic CRS {printable(crs.to_string())} (degrees), so "
            "distances would be in degrees; evaluate a release in a projected CRS in metres "
            "(geosynth release writes the projected CRS of its input)"
        )


def _check_coverage_inputs(original, releases, name: str, release_name: str,
                           show_counts: bool = True) -> None:
    """Refuse an --outcome the coverage table cannot use, in the command's own terms.

    :func:`geosynth.metrics.quadrant_coverage` needs 2 releases and rectangles of at least
    ``MIN_POINTS`` original points (:func:`check_coverage_size`); its own messages give Python
    advice (min_points=, a list of GeoDataFrames) for settings the command does not have.
    """
    from geosynth.io import printable

    if len(releases) < 2:
        raise InputError(
            f"--outcome needs at least 2 releases (the coverage intervals combine the releases "
            f"by their between-release variance), but {printable(release_name)} holds 1 "
            "(synthetic_1); omit --outcome, or evaluate a release written with --m 2 or more"
        )
    check_coverage_size(original, name, show_counts=show_counts)


def _refuse_identifying(original, attributes: list[str], name: str,
                        show_counts: bool = True) -> None:
    """Refuse --attributes that identify records: the tables would print the original values.

    The tables have a row per level combination with its number of original records, so a
    column with nearly one level per record (a continuous value, an ID) prints them one by
    one. The rules are :func:`geosynth.prepare`'s (:func:`geosynth.data.is_identifying`).
    Without ``show_counts`` (a differentially private release) the message counts nothing:
    its "120 levels among 137 records" gave the exact number of original records.
    """
    from geosynth.data import identifying_levels

    for column in attributes:
        described = identifying_levels(original[column])
        if described is not None:
            if not show_counts:
                described = "nearly one level per record"
            raise InputError(
                f"--attributes {column!r} of {name} has {described}: the tables would print "
                "the original values one per row; evaluate by the release's attributes (omit "
                "--attributes to take them from its metadata)"
            )


def _check_same_data(original, releases, attributes: list[str], metadata: dict,
                     name: str) -> None:
    """Refuse an ORIGINAL that shares no combination with a release layer; warn of other sizes.

    Levels compare by value and type (the text "1" is not the number 1), so an original read
    with other column types, or another data set, would give tables of NaN without a word.
    Each layer is compared on its own: a layer sharing nothing was silently averaged in as
    "no synthetic record" when only the union of the layers was checked.
    """
    from geosynth import io

    def combinations(frame) -> set:
        return set(map(tuple, frame[attributes].drop_duplicates().to_numpy().tolist()))

    own = combinations(original)
    for number, frame in enumerate(releases, start=1):
        if not own & combinations(frame):
            layer = "the release" if len(releases) == 1 else (
                f"layer {io.RELEASE_LAYER.format(number)} of the release")
            raise InputError(
                f"{name} and {layer} share no combination of --attributes "
                f"{', '.join(attributes)} (compared by value and type: the text '1' is not the "
                "number 1): is ORIGINAL the data this release was made from?"
            )
    sizes = metadata.get("n_records") or []
    if metadata.get("epsilon") is None and sizes and any(n != len(original) for n in sizes):
        dropped = (" (it may hold points the release dropped outside its lattice)"
                   if len(original) > sizes[0] else "")
        click.echo(f"Warning: {name} has {len(original):,} records but the releases were made "
                   f"from {sizes[0]:,}{dropped}: is ORIGINAL the data this release was made "
                   "from?", err=True)
