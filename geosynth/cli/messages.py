"""Command-line wording of geosynth's error messages: the one place that maps API to CLI names.

The library's messages name the parameters of the Python API (``layer=``, ``n_iter``,
``cell_size=``, ``outside="drop"``) and often add the option in a note (``(CLI: --layer)``). On the
command line only the options exist, so :func:`cli_message` rewrites every message the ``geosynth``
group prints (see :class:`geosynth.cli.GeosynthGroup`):

* parameters become their options (:data:`OPTION_OF_PARAMETER`, :data:`FLAG_OF_SETTING`;
  ``pass weights=None`` becomes ``drop --weights``):
  ``layer='x'`` -> ``--layer 'x'``, ``raise n_iter`` -> ``raise --iterations``,
  ``outside="drop"`` -> ``--drop-outside``; a parameter that is also an English word only as
  ``name=`` or after ``raise``, ``lower``, ``omit`` or ``drop`` (``omit layer`` -> ``omit
  --layer``, ``lower n_iter or chains`` -> ``lower --iterations or --chains``);
* ``(CLI: --opt)`` notes are dropped when the option is already named, otherwise they replace
  the Python spelling they annotate (``(Grid.from_points(..., region=...), CLI: --region)`` ->
  ``(--region)``);
* advice that only applies in Python is removed: ``(in Python, ...)`` notes, anything about
  ``pad`` (the command line has no such option), ``or ... Grid.regular(bounds, ...)``
  alternatives;
* ``gdf`` (the API's name for the points) becomes the name of the input file;
* GDAL's and SQLite's raw texts for files that are not (intact) GeoPackages become one sentence
  that says what to give instead;
* ``max_bytes = 2 GiB`` (no option sets it) becomes ``the memory limit of 2 GiB``, and advice
  to raise a module constant (``geosynth.lattice.MAX_CELLS``) is removed;
* ``gdf.to_crs(gdf.estimate_utm_crs())`` becomes the ``ogr2ogr`` command that reprojects a file.

Adding an option to a command? Add its parameter here, so that messages name it.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping

__all__ = ["OPTION_OF_PARAMETER", "FLAG_OF_SETTING", "cli_message"]

#: Parameter of the Python API -> the option of ``geosynth release`` that sets it.
OPTION_OF_PARAMETER: dict[str, str] = {
    "layer": "--layer",
    "x": "--x",
    "y": "--y",
    "crs": "--crs",
    "sep": "--sep",
    "decimal": "--decimal",
    "encoding": "--encoding",
    "na_values": "--na-values",
    "limits": "--limit",
    "weights": "--weights",
    "attributes": "--attributes",
    "continuous": "--continuous",
    "shape": "--grid",
    "cell_size": "--cell-size",
    "id_column": "--area-id",
    "islands": "--link-islands",
    "public_ids": "--public-area-ids",
    "gap": "--area-gap",
    "exposure": "--area-exposure",
    "region": "--region",
    "exclude": "--exclude",
    "barriers": "--barriers",
    "n_iter": "--iterations",
    "burn_in": "--burn-in",
    "thin": "--thin",
    "chains": "--chains",
    "target_ess": "--target-ess",
    "max_rhat": "--max-rhat",
    "max_seconds": "--max-seconds",
    "m": "--m",
    "beta_prior": "--beta-prior",
    "sampler": "--sampler",
    "seed": "--seed",
    "epsilon": "--epsilon",
    "levels": "--levels-file",
    "n_public": "--public-total",
    "allow_identifying": "--allow-identifying",
    "overwrite": "--overwrite",
    "include_intensity": "--include-intensity",
    "max_points": "--map-max-points",
    "outcome": "--outcome",
    "risk_limit": "--risk-limit",
    "n_quadrants": "--quadrants",
}

#: Python settings (``parameter=value``, any quotes) -> the flag that makes them.
FLAG_OF_SETTING: dict[str, str] = {
    'outside="drop"': "--drop-outside",
    "overwrite=True": "--overwrite",
    "allow_identifying=True": "--allow-identifying",
    "include_intensity=True": "--include-intensity",
    'islands="nearest"': "--link-islands",  # a flag: "--link-islands 'nearest'" is no option
    "na_values=[]": "--na-values ''",  # only empty fields: "--na-values []" would read '[]'
}

# Parameters whose bare name (no "=") is never an English word, so it can be rewritten anywhere.
_UNAMBIGUOUS = sorted((p for p in OPTION_OF_PARAMETER if "_" in p), key=len, reverse=True)
# Not inside a file name or path: after "/" or "\", or before ".gpkg" (n_iter.gpkg, x=1.gpkg).
_NAME = r"(?<![\w.\-/\\])({names})"
_SETTING = re.compile(
    "|".join(
        re.escape(setting).replace('\\"', '"').replace('"', "[\"']").replace("=", r"\s?=\s?")
        for setting in FLAG_OF_SETTING
    )
)
_ASSIGNMENT = re.compile(
    _NAME.format(names="|".join(sorted(OPTION_OF_PARAMETER, key=len, reverse=True)))
    + r"\s?=(?!=)\s?(?![\w-]*\.(?:gpkg|csv|parquet|shp|geojson|tif|md|html|png)\b)"
    + r"(?=(['\"\w(\[+-])?)"
)
# "pass weights=None": the command line leaves an option out (not "--weights None").
_PASS_NONE = re.compile(
    r"\bpass\s+" + _NAME.format(names="|".join(sorted(OPTION_OF_PARAMETER, key=len, reverse=True)))
    + r"\s?=\s?None\b")
_BARE = re.compile(_NAME.format(names="|".join(_UNAMBIGUOUS)) + r"(?![\w=]|\.\w)")
# Any parameter, even a word such as "layer" or "chains", as the object of advice: "omit layer",
# "lower n_iter or chains", "omit x and y" (a list of names joined by ",", "or", "and" or "/").
_ADVISED_NAME = (_NAME.format(names="|".join(sorted(OPTION_OF_PARAMETER, key=len, reverse=True)))
                 + r"(?![\w=(]|\.\w)")
_ADVICE = re.compile(r"\b(?:raise|lower|omit|drop)\s+" + _ADVISED_NAME
                     + r"(?:(?:,\s*|\s+or\s+|\s+and\s+|/)" + _ADVISED_NAME + r")*")
_ADVISED = re.compile(_ADVISED_NAME)
_OPTION = re.compile(r"--[a-z][\w-]*")
# "(CLI: --opt)" after the spelling it annotates, and ", CLI: --opt" inside a parenthesis.
_NOTE = re.compile(r"\s*\(CLI:?\s+([^()]*)\)")
_INNER_NOTE = re.compile(r",\s*CLI:?\s+(--[^,()]*?)\s*(,|(?=\)))")
_CALL = re.compile(r"[\w.]\(")
_IN_PYTHON = re.compile(r"\s*\(in Python\b(?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)")
_PAD_NOTE = re.compile(r"\s*\([^()]*\bpad\b[^()]*\)")
_PAD_CLAUSE = re.compile(r",?\s+or\s+[^;,()]*\bpad\b[^;,()]*")
_PYTHON_ALTERNATIVE = re.compile(
    r",?\s+or\s+[^;()]*?\b[A-Z]\w*\.\w+\((?:[^()]|\([^()]*\))*\)"
)
_GDAL_DRIVER_ADVICE = re.compile(
    r"\.?;?\s*It might help to specify the correct driver explicitly by prefixing the file path "
    r"with '<DRIVER>:', e\.g\. 'CSV:path'\.?"
)
# "over max_bytes = 2 GiB": the memory limit, which the command line keeps at its default.
_MEMORY_LIMIT = re.compile(r"\bmax_bytes\s?=\s?(?=\d)")
# "raise max_bytes, lower target_ess, ...": advice no option can follow.
_RAISE_MEMORY_LIMIT = re.compile(r"\braise max_bytes,\s*")
# "(or raise geosynth.lattice.MAX_CELLS)", ", or raise MAX_WEIGHT_PIXELS deliberately": the
# module constants no option sets.
_RAISE_CONSTANT = re.compile(
    r"\s*\(or raise (?:geosynth\.[\w.]+\.)?[A-Z][A-Z_]+\)"
    r"|,?\s+or raise (?:geosynth\.[\w.]+\.)?[A-Z][A-Z_]+(?: deliberately)?")
# Python's reprojection to the area's UTM zone: an ogr2ogr command on the command line.
_TO_UTM = re.compile(r"\b(\w+)\.to_crs\(\1\.estimate_utm_crs\(\)\)")


def shell_word(name: str) -> str:
    """Return ``name`` quoted for the shell, always in quotes.

    A file name with spaces or metacharacters ("cases (2).gpkg") made a pasted command fail or
    run something else. The quotes also keep the command line's rewording of messages off it
    ("x=1.gpkg" is no --x).
    """
    word = shlex.quote(name)
    return word if word.startswith("'") else f"'{name}'"


def ogr2ogr_command(source: str | None, target: str | None = None, *, crs: str | None = None,
                    x: str | None = None, y: str | None = None) -> str:
    """Return the ogr2ogr command that reprojects ``source`` to ``target`` as projected.gpkg.

    Parameters
    ----------
    source : str or None
        The input file's name (None: INPUT), quoted for the shell.
    target : str, optional
        The CRS to reproject to; None gives EPSG:326NN and says what NN is.
    crs, x, y : str, optional
        A CSV file's CRS and coordinate columns. GDAL reads no geometry from a CSV file unless
        told its columns, and no CRS (``-s_srs``): "ogr2ogr -t_srs ... projected.gpkg
        cases.csv" wrote a table without points. With all three the command names them (and
        ``KEEP_GEOM_COLUMNS=NO`` leaves the degrees out of the new file's columns); without
        them a CSV file's command says what to add.

    Returns
    -------
    str
    """
    word = "INPUT" if source is None else shell_word(source)
    options = f"-t_srs {'EPSG:326NN' if target is None else shlex.quote(target)}"
    if crs is not None and x is not None and y is not None:
        options = (f"-s_srs {shlex.quote(crs)} {options} -oo X_POSSIBLE_NAMES={shell_word(x)} "
                   f"-oo Y_POSSIBLE_NAMES={shell_word(y)} -oo KEEP_GEOM_COLUMNS=NO")
    command = f"ogr2ogr {options} projected.gpkg {word}"
    if target is None:
        command += " (NN: the area's UTM zone; 327NN south of the equator)"
    if x is None and source is not None and source.lower().endswith(".csv"):
        command += (", adding -s_srs <its CRS> -oo X_POSSIBLE_NAMES=<x column> "
                    "-oo Y_POSSIBLE_NAMES=<y column> for a CSV file")
    return command


# "or an open rasterio dataset": a raster is a path on the command line.
_OPEN_DATASET = re.compile(r"\s+or an open rasterio dataset\b")
_SQLITE = re.compile(r"sqlite3_\w+\((?:[^()]|\([^()]*\))*\) failed: ([^;]+)(?:;\s*\1)?")


def cli_message(message: str, names: Mapping[str, str] | None = None) -> str:
    """Rewrite a geosynth error message for the command line.

    Parameters
    ----------
    message : str
        The message of a geosynth error (its Python-API wording).
    names : mapping of str to str, optional
        What the API calls a thing -> what the command line calls it, e.g.
        ``{"gdf": "cases.csv"}`` for the points read from INPUT.

    Returns
    -------
    str
        The message with options instead of parameters and without advice the command line
        cannot follow.

    Examples
    --------
    >>> cli_message("n_iter (40) - burn_in (40) leaves no draw at thin = 2; raise n_iter")
    '--iterations (40) - --burn-in (40) leaves no draw at --thin 2; raise --iterations'
    >>> cli_message("layer='roads' (CLI: --layer): cases.gpkg has no such layer")
    "--layer 'roads': cases.gpkg has no such layer"
    """
    names = names or {}
    text = _TO_UTM.sub(lambda match: ogr2ogr_command(names.get(match.group(1))), str(message))
    quoted = _quoted_spans(text)
    text = _ADVICE.sub(lambda match: _unless_quoted(match, quoted, lambda advice: _ADVISED.sub(
        lambda name: OPTION_OF_PARAMETER[name.group(1)], advice.group(0))), text)
    text = _inner_notes(text)
    text = _NOTE.sub(lambda match: _note(match, names), text)
    text = _IN_PYTHON.sub("", text)
    text = _drop_pad_advice(text)
    text = _PYTHON_ALTERNATIVE.sub("", text)
    text = _SETTING.sub(lambda match: _flag(match.group(0)), text)
    text = _PASS_NONE.sub(lambda match: "drop " + OPTION_OF_PARAMETER[match.group(1)], text)
    quoted = _quoted_spans(text)
    text = _ASSIGNMENT.sub(lambda match: _unless_quoted(match, quoted, _assignment), text)
    quoted = _quoted_spans(text)
    text = _BARE.sub(lambda match: _unless_quoted(
        match, quoted, lambda m: OPTION_OF_PARAMETER[m.group(1)]), text)
    text = _GDAL_DRIVER_ADVICE.sub(
        " (give a GeoPackage, GeoParquet, shapefile, GeoJSON, FlatGeobuf, zip or CSV file)", text
    )
    text = _SQLITE.sub(r"the file is damaged or truncated (\1)", text)
    text = _OPEN_DATASET.sub("", text)
    text = _MEMORY_LIMIT.sub("the memory limit of ", text)  # no option sets max_bytes
    text = _RAISE_MEMORY_LIMIT.sub("", text)
    text = _RAISE_CONSTANT.sub("", text)  # no option sets geosynth's limits
    for api_name, cli_name in (names or {}).items():
        # A function, not a template: a backslash in a file name (data\cases.csv, copied
        # from Windows) made re.sub fail with "bad escape" in place of the message. Not in a
        # quoted value: a column or layer named 'gdf' is the data's name.
        quoted = _quoted_spans(text)
        text = re.sub(rf"(?<![\w.]){re.escape(api_name)}(?![\w.(])",
                      lambda match, name=cli_name, spans=quoted: _unless_quoted(
                          match, spans, lambda _: name), text)
    text = re.sub(r"\(\s*\)", "", text)
    text = re.sub(r"[ \t]{2,}", " ", text)
    return re.sub(r"\s+([;,.])(?=\s|$)", r"\1", text).strip()


# A quoted value: a quote not preceded by a letter (an apostrophe, "record's", is) up to the
# same quote not followed by one; or the index of a parameter name (tau_phi[y=1]).
_QUOTED = re.compile(r"(?<!\w)(['\"])[^'\"\n]*?\1(?!\w)|\[[^\[\]\n]*\]")


def _drop_pad_advice(text: str) -> str:
    """Remove the notes, alternatives and clauses about ``pad`` (no option sets it).

    A ``pad`` in a quoted value is the data's name (a layer or column called 'pad') and keeps
    its clause: "its layers are ['pad', 'roads']" was dropped whole.
    """
    for pattern in (_PAD_NOTE, _PAD_CLAUSE):
        quoted = _quoted_spans(text)
        text = pattern.sub(lambda match, spans=quoted: (
            "" if _names_pad(match.group(0), match.start(), spans) else match.group(0)), text)
    parts = text.split("; ")
    return "; ".join(part for k, part in enumerate(parts)
                     if k == 0 or not _names_pad(part, 0, _quoted_spans(part)))


def _names_pad(text: str, offset: int, quoted: list[tuple[int, int]]) -> bool:
    """Whether ``text`` (at ``offset`` of the spans' text) says ``pad`` outside quoted values."""
    return any(not any(start <= offset + word.start() < end for start, end in quoted)
               for word in re.finditer(r"\bpad\b", text))


def _quoted_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of the quoted values of ``text`` ('roads', 'y=0,m=2', "a.gpkg", [y=1])."""
    return [match.span() for match in _QUOTED.finditer(text)]


def _unless_quoted(match: re.Match, quoted: list[tuple[int, int]], rewrite) -> str:
    """``rewrite(match)``, or the match unchanged inside a quoted value.

    Quoted values are the data's names (columns, files, combination labels such as
    ``'y=0,x1=2'``): a column called ``m`` or ``y`` in them is no option.
    """
    inside = any(start <= match.start() < end for start, end in quoted)
    return match.group(0) if inside else rewrite(match)


def _flag(setting: str) -> str:
    return FLAG_OF_SETTING[_flag_key(setting)]


def _assignment(match: re.Match) -> str:
    option = OPTION_OF_PARAMETER[match.group(1)]
    return option + (" " if match.group(2) else "")


def _parameters_in(text: str) -> set[str]:
    """Return the options that ``text`` names in API spelling (``name=``, unambiguous names)."""
    found = {OPTION_OF_PARAMETER[m.group(1)] for m in _ASSIGNMENT.finditer(text)}
    found |= {OPTION_OF_PARAMETER[m.group(1)] for m in _BARE.finditer(text)}
    found |= {FLAG_OF_SETTING[_flag_key(m.group(0))] for m in _SETTING.finditer(text)}
    return found | set(_OPTION.findall(text))


def _flag_key(setting: str) -> str:
    return re.sub(r"\s", "", setting).replace("'", '"')


def _note(match: re.Match, names: Mapping[str, str]) -> str:
    """``TEXT (CLI: --opt)``: drop the note when TEXT names --opt in API terms, else keep it.

    ``names`` renames options too (hexagons' ``--cell-size`` is ``--hex-size``): the note of a
    ``cell_size=`` then names the same option ("--hex-size 400 (--hex-size)" was shown).
    """
    note = match.group(1).strip()
    options = _OPTION.findall(note)
    # Clauses end at "; ": a quoted ';' (sep=';') is a value, and split "pass sep=';' (CLI:
    # --sep)" so that the note stayed beside the option it repeats.
    clause = match.string[: match.start()].rsplit("; ", 1)[-1]
    # The note's values too ("--decimal ','" after "decimal=','") repeat the clause's.
    only_options = not re.sub(r"--[\w-]+|'[^']*'|\"[^\"]*\"|[,/\s]|\band\b|\bor\b", "", note)
    named = {names.get(option, option) for option in _parameters_in(clause)}
    if options and only_options and set(options) <= named:
        return ""
    return f" ({note})"


def _inner_notes(text: str) -> str:
    """Resolve ``(API, CLI: --opt, ...)`` notes inside parentheses.

    The API text stays (rewritten later) when it names --opt; otherwise --opt replaces it:
    ``(Grid.from_points(..., region=...), CLI: --region)`` -> ``(--region)``.
    """
    start = 0
    while match := _INNER_NOTE.search(text, start):
        opening = _opening_parenthesis(text, match.start())
        inside = text[opening + 1: match.start()]
        options = set(_OPTION.findall(match.group(1)))
        tail = " " if match.group(2) == "," else ""
        if options and options <= _parameters_in(inside) and not _CALL.search(inside):
            text = text[: match.start()] + tail + text[match.end():]
            start = match.start()
        else:
            replacement = match.group(1).strip() + ("," + tail if tail else "")
            text = text[: opening + 1] + replacement + text[match.end():]
            start = opening + 1 + len(replacement)
    return text


def _opening_parenthesis(text: str, end: int) -> int:
    """Index of the unmatched ``(`` before ``end`` (-1 when there is none)."""
    depth = 0
    for index in range(end - 1, -1, -1):
        if text[index] == ")":
            depth += 1
        elif text[index] == "(":
            if depth == 0:
                return index
            depth -= 1
    return -1
