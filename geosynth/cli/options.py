"""Options and parameter types shared by several ``geosynth`` subcommands.

Each option is defined once here and applied by the command modules as a decorator, so the same
option reads and behaves the same in every command (as in rasterio's ``rio``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable
from typing import Any

import click

__all__ = [
    "EXISTING_FILE",
    "GEOTIFF_FILE",
    "MAP_FILE",
    "OutputFile",
    "RELEASE_FILE",
    "REPORT_FILE",
    "FiniteFloat",
    "GridSpec",
    "CommaList",
    "LimitSpec",
    "PriorList",
    "Iterations",
    "stopping_options",
    "parse_grid_spec",
    "out_dir_option",
    "seed_option",
    "overwrite_option",
    "attributes_option",
    "outcome_option",
    "report_option",
    "points_options",
    "CsvCharacter",
    "NaWords",
    "csv_reading",
    "csv_words",
    "grid_option",
    "cell_size_option",
    "lattice_options",
    "continuous_option",
    "beta_prior_option",
    "region_option",
    "barriers_option",
    "exclude_option",
    "layer_option",
    "m_option",
    "run_options",
]

def _apply(options: list[Callable], f: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate ``f`` with ``options`` so they list in ``--help`` in the order given."""
    for option in reversed(options):
        f = option(f)
    return f


#: An input file that must exist.
EXISTING_FILE = click.Path(exists=True, dir_okay=False)


def parse_grid_spec(spec: str) -> tuple[int, int]:
    """Parse ``"ROWSxCOLS"`` (e.g. ``"20x20"``) into a shape tuple.

    Parameters
    ----------
    spec : str
        Two positive integers separated by ``x`` (case-insensitive), rows first.

    Returns
    -------
    tuple of int
        ``(nrows, ncols)``.

    Raises
    ------
    click.BadParameter
        ``spec`` is not of that form, or has more than :data:`MAX_CELLS` cells (the lattice's
        own message advises Python).
    """
    parts = [part.strip() for part in str(spec).lower().split("x")]
    if len(parts) != 2 or not all(part.isdecimal() for part in parts):
        raise _grid_form_error(spec)
    digits = [part.lstrip("0") or "0" for part in parts]
    if any(len(part) > len(str(MAX_CELLS)) for part in digits):  # int() refuses 4,300+ digits
        raise click.BadParameter(f"that lattice would have more than the limit of "
                                 f"{MAX_CELLS:,} cells; give fewer rows and columns",
                                 param_hint="--grid")
    rows, cols = int(digits[0]), int(digits[1])
    if rows < 1 or cols < 1:
        raise _grid_form_error(spec)
    if rows * cols > MAX_CELLS:
        raise click.BadParameter(f"{rows}x{cols} would have more than the limit of "
                                 f"{MAX_CELLS:,} cells; give fewer rows and columns",
                                 param_hint="--grid")
    return rows, cols


def _grid_form_error(spec: str) -> click.BadParameter:
    """Return the refusal of a ``--grid`` that is not ROWSxCOLS with positive integers."""
    return click.BadParameter(
        f"expected ROWSxCOLS with positive integers such as 20x20, got {spec!r}",
        param_hint="--grid",
    )


#: geosynth._validation.MAX_CHAINS and MAX_RELEASES, geosynth.model.stopping's MAX_TARGET_ESS,
#: MIN_MAX_RHAT, MAX_MAX_RHAT, DEFAULT_TARGET_ESS and DEFAULT_MAX_RHAT, geosynth.lattice.MAX_CELLS
#: and MAX_EXTENT, and geosynth.model.fit.MAX_SWEEPS, spelled out: importing them would load
#: NumPy with the CLI (a test holds them equal). An R-hat above DEFAULT_MAX_RHAT is also what
#: every command reports as not converged (it was 1.05 there, so a fixed-length run at R-hat
#: 1.04 passed without a word that --iterations auto and tune call unconverged).
MAX_CHAINS = 1024
MAX_RELEASES = 10_000
MAX_TARGET_ESS = 1_000_000
MIN_MAX_RHAT = 1.001
MAX_MAX_RHAT = 2.0
DEFAULT_TARGET_ESS = 400
DEFAULT_MAX_RHAT = 1.01
MAX_CELLS = 4_000_000
MAX_EXTENT = 1e12
MAX_SWEEPS = 10**9


class FiniteFloat(click.FloatRange):
    """A finite float within a range (``click.FloatRange`` lets ``nan`` and ``inf`` in).

    Refused at parsing, so that ``--epsilon nan`` or ``--risk-limit nan`` stops the command
    before it reads the data, not after the fits.
    """

    #: What the number is, in the message of a refused value.
    what = "number"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None):
        """Return ``value`` as a float in the range, or fail naming a NaN or infinite value."""
        number = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(number):  # first: "inf is not in the range 0<x<=1e12" said less
            self.fail(f"{value!r} is not a finite {self.what}", param, ctx)
        return super().convert(number, param, ctx)


class OutputFile(click.Path):
    """A file to write whose name ends in one of ``suffixes`` (any case), checked at parsing.

    Any name was taken: ``--map old_release.gpkg --overwrite`` replaced a release with an
    internal map of the original points, beside the audit file of the release that was gone,
    and ``--out r.csv`` was refused only after the whole fit. A blank name or one ending in a
    separator is left to :func:`geosynth.cli.helpers.check_file_name`, which says so.

    Parameters
    ----------
    suffixes : tuple of str
        The accepted suffixes, lower case, the usual one first (``(".html", ".htm")``).
    what : str
        What the file is, in the message (``"the review map is an HTML file"``).
    example : str
        A name to suggest (``"review.html"``).
    """

    def __init__(self, suffixes: tuple[str, ...], what: str, example: str) -> None:
        super().__init__(dir_okay=False)
        self.suffixes, self.what, self.example = suffixes, what, example

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None):
        """Return ``value`` as click.Path does, or fail if its suffix is not accepted."""
        path = super().convert(value, param, ctx)
        text = os.fspath(path)
        name = os.path.basename(text)  # blank for a blank name or one ending in a separator
        if name.strip() and not name.lower().endswith(self.suffixes):
            from geosynth.io import printable

            ends = ", ".join(self.suffixes[:-1]) + f" or {self.suffixes[-1]}" \
                if len(self.suffixes) > 1 else self.suffixes[0]
            self.fail(f"{printable(text)!r} does not end in {ends}: {self.what}; give a file "
                      f"name ending in {self.suffixes[0]}, such as {self.example}", param, ctx)
        return path


#: The outputs of the commands, by kind.
RELEASE_FILE = OutputFile((".gpkg",), "the release is a GeoPackage", "release.gpkg")
MAP_FILE = OutputFile((".html", ".htm"), "the review map is an HTML file", "review.html")
REPORT_FILE = OutputFile((".md", ".markdown", ".txt"), "the report is a Markdown text",
                         "report.md")
GEOTIFF_FILE = OutputFile((".tif", ".tiff"), "the intensity surface is a GeoTIFF",
                          "intensity.tif")


class Metres(FiniteFloat):
    """A finite length in metres above 0 and at most :data:`MAX_EXTENT` (1e12).

    ``--cell-size 1e300`` was refused by the lattice, after the data were read.
    """

    name = "metres"
    what = "number of metres"

    def __init__(self) -> None:
        super().__init__(min=0, min_open=True, max=MAX_EXTENT)


class GridSpec(click.ParamType):
    """A lattice shape written ``ROWSxCOLS`` (e.g. ``20x20``), converted to ``(rows, cols)``."""

    name = "ROWSxCOLS"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None):
        """Return ``value`` as a ``(rows, cols)`` tuple, or fail with the expected form.

        Parameters
        ----------
        value : str or tuple of (int, int)
            ``"ROWSxCOLS"`` from the command line, or an already converted tuple (a default).
        param : click.Parameter or None
            The option being converted, for the error message.
        ctx : click.Context or None
            The command's context, for the error message.

        Returns
        -------
        tuple of (int, int)
            ``(nrows, ncols)``.
        """
        if isinstance(value, tuple):
            return value
        try:
            return parse_grid_spec(value)
        except click.BadParameter as err:
            self.fail(err.message, param, ctx)


class LimitSpec(click.ParamType):
    """``COLUMN=LOW:HIGH``, the range of a continuous column; an end left empty is open.

    ``age=0:120`` -> ``("age", (0.0, 120.0))``, ``income=0:`` -> ``("income", (0.0, None))``.
    The ends' order is checked here, by the check of :func:`geosynth.synthesize`'s ``limits``;
    whether the column is a continuous one, by the command.
    """

    name = "COLUMN=LOW:HIGH"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None):
        """Return ``(column, (low, high))``, None for an end left empty."""
        if isinstance(value, tuple):
            return value
        column, equals, ends = str(value).partition("=")
        low, colon, high = ends.partition(":")
        if not (equals and colon and column.strip()):
            self.fail(f"expected COLUMN=LOW:HIGH such as age=0:120 (an end left empty is open: "
                      f"income=0:), got {value!r}", param, ctx)
        ends = (self._end(low, value, param, ctx), self._end(high, value, param, ctx))
        if ends == (None, None):  # age=: no limit at all, which is no --limit
            self.fail(f"{value!r} sets neither end; give at least one, e.g. age=0:120 or "
                      "income=0:, or drop this --limit", param, ctx)
        from geosynth._validation import check_range
        from geosynth.errors import InputError

        try:
            check_range(ends, f"--limit {column.strip()}")
        except InputError:  # the only error left: low >= high
            self.fail(f"{value!r} is an empty range: its low end must be below its high end, "
                      "e.g. age=0:120", param, ctx)
        return column.strip(), ends

    def _end(self, text: str, value: Any, param: click.Parameter | None,
             ctx: click.Context | None) -> float | None:
        if not text.strip():
            return None
        try:
            number = float(text)
        except ValueError:
            number = math.nan
        if not math.isfinite(number):
            self.fail(f"{text!r} in {value!r} is not a finite number; leave an end empty for an "
                      "open end, e.g. income=0:", param, ctx)
        return number


class CommaList(click.ParamType):
    """A comma-separated list of names such as ``y,x1,x2``, converted to a list of str."""

    name = "NAME[,NAME...]"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None):
        """Split ``value`` at commas; refuse empty names and repeated names.

        Parameters
        ----------
        value : str or list of str
            ``"y,x1,x2"`` from the command line, or an already converted list (a default).
        param : click.Parameter or None
            The option being converted, for the error message.
        ctx : click.Context or None
            The command's context, for the error message.

        Returns
        -------
        list of str
            The names, stripped of surrounding spaces, in the order given.
        """
        if isinstance(value, list):
            return value
        names = [part.strip() for part in str(value).split(",")]
        if not names or any(not name for name in names):
            self.fail(f"expected comma-separated column names such as y,x1,x2, got {value!r}",
                      param, ctx)
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            self.fail(f"{repeated} listed more than once in {value!r}", param, ctx)
        return names


class PriorList(click.ParamType):
    """A comma-separated list of choices such as ``normal,icar`` (repeats allowed), as a list."""

    def __init__(self, choices: tuple[str, ...]) -> None:
        self.choices = tuple(choices)
        self.name = "[" + "|".join(self.choices) + "][,...]"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None):
        """Split ``value`` at commas and refuse anything but the choices.

        Parameters
        ----------
        value : str or list of str
            ``"normal,icar"`` from the command line, or an already converted list.
        param : click.Parameter or None
            The option being converted, for the error message.
        ctx : click.Context or None
            The command's context, for the error message.

        Returns
        -------
        list of str
            One choice per comma-separated part, in the order given.
        """
        if isinstance(value, list):
            return value
        parts = [part.strip().lower() for part in str(value).split(",")]
        wrong = [part for part in parts if part not in self.choices]
        if wrong:
            self.fail(f"expected {' or '.join(self.choices)}, or one of them per --continuous "
                      f"column separated by commas (e.g. {','.join(self.choices)}), got "
                      f"{value!r}", param, ctx)
        return parts


class Iterations(click.ParamType):
    """MCMC sweeps per chain: an integer from 1 to MAX_SWEEPS, or ``auto`` (run until converged).

    More than MAX_SWEEPS (the fit's cap) is refused here, before the data are read, not by the
    fit after reading them.
    """

    name = "N|auto"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None):
        """Return ``"auto"`` or ``value`` as an int in range, or fail naming both forms."""
        if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_SWEEPS:
            return value
        text = str(value).strip().lower()
        if text == "auto":
            return "auto"
        if text.isdecimal():
            digits = text.lstrip("0") or "0"
            # Digits counted first: int() refuses a number of 4,300 digits or more (a traceback).
            number = int(digits) if len(digits) <= 30 else None
            if number is None or number > MAX_SWEEPS:
                shown = "that many" if number is None else f"{number:,}"
                self.fail(f"{shown} sweeps per chain is above the limit of {MAX_SWEEPS:,} "
                          "(weeks of sampling): give fewer sweeps, or 'auto' (run until "
                          "converged)", param, ctx)
            if number >= 1:
                return number
        self.fail(f"expected a number of sweeps >= 1 or 'auto' (run until converged), got "
                  f"{value!r}", param, ctx)


def stopping_options(f: Callable) -> Callable:
    """``--target-ess``, ``--max-rhat``, ``--max-seconds``: when ``--iterations auto`` stops."""
    options = [
        click.option("--target-ess", type=FiniteFloat(min=1, max=MAX_TARGET_ESS),
                     default=DEFAULT_TARGET_ESS,
                     show_default=True,
                     help="With --iterations auto: the bulk effective sample size (all chains "
                     "together) that every parameter must reach."),
        click.option("--max-rhat", type=FiniteFloat(min=MIN_MAX_RHAT, max=MAX_MAX_RHAT),
                     default=DEFAULT_MAX_RHAT,
                     show_default=True,
                     help="With --iterations auto: every parameter's R-hat must be below it "
                     "(1.001 to 2; 1.1 is the most lenient limit in common use)."),
        click.option("--max-seconds", type=FiniteFloat(min=0, min_open=True),
                     default=None, metavar="SECONDS",
                     help="With --iterations auto: stop after this many seconds even if not "
                     "converged (with a warning naming what has not; default: no limit)."),
    ]
    return _apply(options, f)


out_dir_option = click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, writable=True),
    default="out",
    show_default=True,
    help="Directory for the files the command writes.",
)



def seed_option(help_text: str | None = None) -> Callable:
    """``--seed S``: an int seed for reproducible runs (default: fresh entropy)."""
    return click.option(
        "--seed",
        type=click.IntRange(min=0),
        default=None,
        help=help_text or "Seed for reproducible runs. Seeds go to the private audit file "
        "beside a release (<release>.audit.json), never into the release.",
    )


overwrite_option = click.option(
    "--overwrite",
    is_flag=True,
    help="Replace output files that exist. Without it the command refuses them before doing "
    "any work, and never replaces a file that another run creates meanwhile.",
)

outcome_option = click.option(
    "--outcome",
    default=None,
    metavar="COLUMN",
    help="Binary column (0/1) whose proportion over random rectangles gives the coverage "
    "table of the evaluation.",
)

report_option = click.option(
    "--report",
    "report_path",
    type=REPORT_FILE,
    default=None,
    help="Write the evaluation tables to this Markdown file (internal: it describes the "
    "confidential data; readable by you only).",
)


def attributes_option(required: bool = True, help_text: str | None = None) -> Callable:
    """``--attributes a,b,c``: the categorical columns whose combinations are modelled.

    Parameters
    ----------
    required : bool, default True
        Whether the command needs the option.
    help_text : str, optional
        The option's help, when the command describes it differently.

    Returns
    -------
    Callable
        The click decorator of the option.
    """
    return click.option(
        "--attributes",
        type=CommaList(),
        required=required,
        default=None,
        help=help_text or "Comma-separated categorical attribute columns, e.g. y,x1,x2.",
    )


def points_options(f: Callable) -> Callable:
    """``--layer``, ``--x``, ``--y``, ``--crs``: how to read a point file (see io.read_points)."""
    options = [
        click.option("--layer", default=None,
                     help="Layer of the points, of a file of several (a GeoPackage, or a .zip "
                     "of shapefiles in one folder); default: its only point layer."),
        click.option("--x", "x_column", default=None, metavar="COLUMN",
                     help="CSV only: column of the x coordinates (easting)."),
        click.option("--y", "y_column", default=None, metavar="COLUMN",
                     help="CSV only: column of the y coordinates (northing)."),
        click.option("--crs", default=None, metavar="CRS",
                     help="CRS of the coordinates, e.g. EPSG:31983 (required for CSV; for other "
                     "formats only when the file has none)."),
        click.option("--sep", type=CsvCharacter(), default=None, metavar="CHAR",
                     help="CSV only: the field separator, e.g. ';' or tab (\\t) "
                     "[default: ,]."),
        click.option("--decimal", type=CsvCharacter(), default=None, metavar="CHAR",
                     help="CSV only: the decimal mark of numbers, e.g. ',' (with --sep ';') "
                     "[default: .]."),
        click.option("--encoding", default=None, metavar="CODEC",
                     help="CSV only: the text encoding, e.g. cp1252 or latin-1 for files saved "
                     "by Windows spreadsheets [default: utf-8]."),
        click.option("--na-values", "na_values", type=NaWords(), default=None, metavar="WORDS",
                     help="CSV only: the comma-separated words that mean a missing value "
                     "besides empty fields, e.g. '-99' or '.'; '' for empty fields only, so "
                     "that NA (Namibia), None or null stay text [default: pandas' words: NA, "
                     "N/A, NULL, None, NaN, ...]."),
    ]
    return _apply(options, f)


class CsvCharacter(click.ParamType):
    r"""One character of a CSV layout (``--sep``, ``--decimal``); ``\t`` or ``tab`` is a tab.

    A tab is hard to type on a command line: ``--sep '\t'`` (two characters) and ``--sep tab``
    mean the tab character. Anything else is passed on as typed and checked by
    :func:`geosynth.io.read_points` (one character, not a digit or quote, ``--sep`` and
    ``--decimal`` different).
    """

    name = "CHAR"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> str:
        """Return ``value``, with the spellings of a tab turned into the tab character."""
        text = str(value)
        return "\t" if text.lower() in ("\\t", "tab") else text


class NaWords(click.ParamType):
    """``--na-values``: comma-separated words read as missing, as a list; ``''``: none.

    ``--na-values 'NA, -99'`` is ``["NA", "-99"]`` (spaces around a word dropped: a field is
    matched as written, and ``' -99'`` would match none); ``--na-values ''`` is ``[]``, only
    empty fields are missing values. The words are checked by
    :func:`geosynth.io.read_points`.
    """

    name = "WORDS"

    def convert(self, value: Any, param: click.Parameter | None,
                ctx: click.Context | None) -> list[str]:
        """Split ``value`` at commas into its words, empty ones dropped.

        Parameters
        ----------
        value : str or list of str
            ``"NA,-99"`` from the command line, or an already converted list.
        param : click.Parameter or None
            The option being converted.
        ctx : click.Context or None
            The command's context.

        Returns
        -------
        list of str
            The words in the order given, without repeats; ``[]`` for ``""``.
        """
        if isinstance(value, list):
            return value
        words = [word.strip() for word in str(value).split(",")]
        return list(dict.fromkeys(word for word in words if word))


def csv_reading(sep: str | None, decimal: str | None, encoding: str | None,
                na_values: list[str] | None = None) -> dict[str, str | list[str]]:
    """Return the keyword arguments of :func:`geosynth.io.read_points` for the CSV options given.

    Parameters
    ----------
    sep, decimal, encoding : str or None
        ``--sep``, ``--decimal`` and ``--encoding`` (None: not given, the reader's default).
    na_values : list of str, optional
        ``--na-values`` (:class:`NaWords`; None: not given, pandas' default words).

    Returns
    -------
    dict of str to str or list of str
        The options given, by the reader's parameter names.
    """
    given = {"sep": sep, "decimal": decimal, "encoding": encoding, "na_values": na_values}
    return {name: value for name, value in given.items() if value is not None}


def csv_words(reading: dict[str, str | list[str]]) -> list[str]:
    """Return the command-line words that repeat ``reading`` (of :func:`csv_reading`).

    Parameters
    ----------
    reading : dict of str to str or list of str
        The CSV options given.

    Returns
    -------
    list of str
        E.g. ``["--sep", ";", "--decimal", ","]``; a tab separator as ``tab``, the words of
        ``na_values`` joined by commas (``""`` for none).
    """
    words = []
    for name, value in reading.items():
        if name == "na_values":
            words += ["--na-values", ",".join(value)]
            continue
        words += [f"--{name}", "tab" if value == "\t" else value]
    return words


grid_option = click.option(
    "--grid",
    "grid_shape",
    type=GridSpec(),
    metavar=GridSpec.name,
    default=None,
    help="Lattice as ROWSxCOLS cells over the study bounds, e.g. 20x20.",
)

cell_size_option = click.option(
    "--cell-size",
    type=Metres(),
    default=None,
    metavar="METRES",
    help="Lattice of square cells of this side, in metres (INPUT must be in a projected CRS "
    "in metres); the lattice extends the study bounds up and right to whole cells.",
)


area_exposure_option = click.option(
    "--area-exposure", default=None, metavar="area|COLUMN",
    help="With --areas: what an area's expected count is proportional to. 'area': its area, so "
    "the density is smoothed as on a grid (areas of very different sizes); COLUMN: a numeric "
    "column of the areas (a population), the rate per unit of it; public data, never counts "
    "of the records. Default: none, the areas' counts are smoothed as counts (areas of similar "
    "populations, such as census tracts).")


def lattice_options(f: Callable[..., Any]) -> Callable[..., Any]:
    """--grid, --cell-size, --hex-size and --areas (exactly one), with --area-id and friends."""
    options = [
        grid_option,
        cell_size_option,
        click.option(
            "--hex-size", type=Metres(), default=None,
            metavar="METRES",
            help="Lattice of regular pointy-top hexagons of this side (centre to corner, in "
            "metres): equal areas, six neighbours each."),
        click.option(
            "--areas", "areas_path", type=EXISTING_FILE, default=None, metavar="FILE",
            help="Lattice of areal units: one cell per polygon of FILE (census tracts, "
            "districts, ...), neighbours sharing a boundary. The areas are the study region "
            "(no --region)."),
        layer_option("--areas"),
        click.option(
            "--area-id", default=None, metavar="COLUMN",
            help="With --areas: column of unique area identifiers (kept internal unless "
            "--public-area-ids)."),
        click.option(
            "--public-area-ids", is_flag=True,
            help="With --area-id: the identifiers are public and are written to the grid layer "
            "of the release."),
        click.option(
            "--link-islands", is_flag=True,
            help="With --areas: link each area without a neighbour to its nearest area (the "
            "usual BYM practice) instead of making it its own component."),
        click.option(
            "--area-gap", type=Metres(), default=None, metavar="METRES",
            help="With --areas: areas whose boundaries come within METRES of each other are "
            "neighbours too (areas digitised separately leave slivers of gap between them); "
            "at most a tenth of a typical area's side."),
        area_exposure_option,
    ]
    return _apply(options, f)


continuous_option = click.option(
    "--continuous", type=CommaList(), default=None, metavar="COLUMN[,COLUMN...]",
    help="Numeric column(s) released with synthetic values (Nunes 2018, §2.2; comma-separated "
    "for several covariates, e.g. z1,z2). A value far out in its attribute combination is "
    "clipped to the combination's far-out fences before the cell means the synthetic values "
    "centre on (a warning says how many); top-code the column in the file to choose the bound.")

beta_prior_option = click.option(
    "--beta-prior", type=PriorList(("normal", "icar")), default=None,
    help="Prior of the per-cell effect of the --continuous column(s) on the intensity: normal or "
    "icar, or one per column, comma-separated (e.g. normal,icar) (default: no such effect).")

def layer_option(option: str, multiple: bool = False, more_help: str = "",
                 kind: str = "polygon") -> Callable:
    """``--region-layer LAYER`` and its kind: the layer of a polygon file of several layers.

    Parameters
    ----------
    option : str
        The file option, e.g. ``"--region"``; the layer option is ``option + "-layer"``.
    multiple : bool, default False
        Whether the option repeats (as ``tune --areas``).
    more_help : str, optional
        A sentence the command adds to the option's help.
    kind : str, default "polygon"
        The geometry of the layer read without the option (``"line"`` for ``--barriers``).

    Returns
    -------
    Callable
        The click decorator of the option.
    """
    return click.option(
        f"{option}-layer", f"{option.lstrip('-')}_layer", default=None, metavar="LAYER",
        multiple=multiple,
        help=f"With {option}: the layer to read of a file of several (a GeoPackage, a zipped "
        f"folder of shapefiles). Without it the file's only {kind} layer is read; a file of "
        f"several is refused, naming them.{' ' + more_help if more_help else ''}")


def exclude_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--exclude FILE`` and ``--exclude-layer LAYER``: no-go areas removed from the cells."""
    options = [
        click.option("--exclude", "exclude_path", type=EXISTING_FILE, default=None,
                     metavar="FILE",
                     help="Polygon layer of no-go areas (lakes, parks) removed from the "
                     "cells."),
        layer_option("--exclude"),
    ]
    return _apply(options, f)


def barriers_option(f: Callable[..., Any]) -> Callable[..., Any]:
    """``--barriers FILE`` and ``--barriers-layer LAYER``: no links across rivers, motorways."""
    options = [
        click.option("--barriers", "barriers_path", type=EXISTING_FILE, default=None,
                     metavar="FILE",
                     help="Line or polygon layer of barriers (rivers, railways, motorways): "
                     "neighbouring cells whose representative points a barrier separates are "
                     "not linked, so the model does not pool their intensities."),
        layer_option("--barriers", kind="line"),
    ]
    return _apply(options, f)


def region_option(more_help: str = "") -> Callable:
    """``--region FILE`` (the study region: the lattice covers it) and ``--region-layer``.

    Parameters
    ----------
    more_help : str, optional
        A sentence the command adds to the option's help.

    Returns
    -------
    Callable
        The click decorator of ``--region`` and ``--region-layer``.
    """
    options = [
        click.option(
            "--region", "region_path", type=EXISTING_FILE, default=None,
            help="Polygon layer of the study region: cells are clipped to its union and the "
            f"lattice covers its bounds.{' ' + more_help if more_help else ''}"),
        layer_option("--region"),
    ]
    return lambda f: _apply(options, f)


def m_option(help_text: str = "Number of synthetic releases.") -> Callable:
    """``--m M``: releases to draw (default 5)."""
    return click.option("--m", "m", type=click.IntRange(min=1, max=MAX_RELEASES), default=5,
                        show_default=True,
                        help=help_text)


def run_options(f: Callable) -> Callable:
    """Apply ``--iterations``, ``--burn-in``, ``--thin``, the stopping options, ``--chains``."""
    options = [
        click.option("--iterations", type=Iterations(), default="auto", show_default=True,
                     help="MCMC sweeps per chain, burn-in included; 'auto' runs until every "
                     "parameter has a bulk ESS >= --target-ess and an R-hat < --max-rhat (or "
                     "--max-seconds pass), discarding the first quarter of the sweeps as burn-in."),
        click.option("--burn-in", type=click.IntRange(min=0), default=None,
                     help="With --iterations N: sweeps discarded at the start of each chain "
                     "[default: N/4]. Not with --iterations auto."),
        click.option("--thin", type=click.IntRange(min=1), default=None,
                     help="Keep every THIN-th sweep after burn-in [default: 6]; with "
                     "--iterations auto the thinning at first [default: 1, every sweep], "
                     "doubled as a long run grows."),
        stopping_options,
        click.option("--chains", type=click.IntRange(min=1, max=MAX_CHAINS), default=2,
                     show_default=True,
                     help="Independent MCMC chains (R-hat needs at least 2)."),
    ]
    return _apply(options, f)
