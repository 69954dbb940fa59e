"""``geosynth tune``: risk and utility over candidate lattices, and the one to release with."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import click

from geosynth._messages import exact_number
from geosynth.cli.fitting import check_beta_prior, check_run_options, describe_run, run_settings
from geosynth.cli.helpers import (
    LatticeChoice,
    RunOutputs,
    build_grid,
    check_binary,
    check_cell_side,
    check_columns,
    check_complete,
    check_file_name,
    check_layer_options,
    check_outputs,
    check_projected,
    derive_seeds,
    naming_weights,
    save_figure,
    show_progress,
    write_text,
)
from geosynth.cli.messages import cli_message
from geosynth.cli.options import (
    EXISTING_FILE,
    MAX_EXTENT,
    REPORT_FILE,
    CommaList,
    FiniteFloat,
    GridSpec,
    Metres,
    attributes_option,
    barriers_option,
    beta_prior_option,
    continuous_option,
    csv_reading,
    csv_words,
    exclude_option,
    layer_option,
    m_option,
    overwrite_option,
    points_options,
    region_option,
    run_options,
    seed_option,
)

__all__ = ["tune", "release_command", "LEVELS_PLACEHOLDER"]

#: The ``--levels-file`` of an ε-DP candidate's release command when none is known.
LEVELS_PLACEHOLDER = "LEVELS.json"

_RISKS = ("true_match_rate", "expected_match_risk", "k_anonymity_below_5", "min_distance",
          "mean_distance")
_UTILITIES = ("coverage", "intensity_correlation", "intensity_l1", "ripley_l_gap")
#: Keyword arguments of the fit set by the run options (:func:`.fitting.run_settings`).
_RUN_KEYS = ("n_iter", "burn_in", "thin", "chains", "target_ess", "max_rhat", "max_seconds")


class NumberList(click.ParamType):
    """A comma-separated list of positive numbers such as ``100,250,500``."""

    name = "METRES[,METRES...]"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None):
        """Split ``value`` at commas into floats > 0, refusing anything else and repeats."""
        if isinstance(value, list):
            return value
        try:
            numbers = [float(part) for part in str(value).split(",")]
        except ValueError:
            self.fail(f"expected comma-separated numbers such as 100,250,500, got {value!r}",
                      param, ctx)
        if any(not 0 < x <= MAX_EXTENT for x in numbers):  # 1e300 was refused after "Tuning"
            self.fail(f"cell sizes must be numbers > 0 and at most {MAX_EXTENT:g} metres (wider "
                      f"than any projected CRS), got {value!r}", param, ctx)
        if len(set(numbers)) != len(numbers):
            self.fail(f"a cell size is listed more than once in {value!r}", param, ctx)
        return numbers


class GridList(click.ParamType):
    """A comma-separated list of ``ROWSxCOLS`` lattices such as ``5x5,10x10,20x20``."""

    name = "ROWSxCOLS[,ROWSxCOLS...]"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None):
        """Split ``value`` at commas into ``(rows, cols)`` pairs."""
        if isinstance(value, list):
            return value
        shapes = [GridSpec().convert(part.strip(), param, ctx) for part in str(value).split(",")]
        if len(set(shapes)) != len(shapes):
            self.fail(f"a lattice is listed more than once in {value!r}", param, ctx)
        return shapes


@click.command(short_help="Compare candidate lattices: risk, utility and a recommendation.")
@click.argument("input_path", metavar="INPUT", type=EXISTING_FILE)
@points_options
@attributes_option(required=True)
@click.option("--cell-sizes", type=NumberList(), default=None,
              help="Candidate square cell sizes in metres, comma-separated, e.g. "
              "100,250,500,1000.")
@click.option("--grids", "grid_shapes", type=GridList(), default=None,
              help="Candidate lattices as ROWSxCOLS over the study bounds, comma-separated, "
              "e.g. 5x5,10x10,20x20 (with or instead of --cell-sizes).")
@click.option("--hex-sizes", type=NumberList(), default=None,
              help="Candidate hexagonal lattices: hexagon sides in metres, comma-separated, "
              "e.g. 150,300 (with the other candidates or instead of them).")
@click.option("--areas", "areas_paths", type=EXISTING_FILE, multiple=True,
              help="A candidate lattice of areal units (census tracts, districts): a polygon "
              "file, one cell per polygon; repeat for several. --region does not apply to "
              "them.")
@layer_option("--areas", multiple=True,
              more_help="Repeat it once per --areas, in the same order (the first layer is of "
              "the first file), e.g. for two layers of one GeoPackage: --areas city.gpkg "
              "--areas-layer tracts --areas city.gpkg --areas-layer districts.")
@click.option("--link-islands", is_flag=True,
              help="With --areas: link each area without a neighbour to its nearest area "
              "instead of making it its own component.")
@click.option("--area-gap", type=Metres(), default=None, metavar="METRES",
              help="With --areas: areas whose boundaries come within METRES of each other are "
              "neighbours too (slivers of gap between areas digitised separately).")
@click.option("--area-exposures", "area_exposures", type=CommaList(), default=None,
              metavar="EXPOSURE[,EXPOSURE...]",
              help="With --areas: the exposures to compare, each none (the default of release), "
              "area or a numeric COLUMN of the areas (release --area-exposure), e.g. "
              "none,area,population: each --areas file is a candidate with each exposure.")
@click.option("--weights", "weights_path", type=EXISTING_FILE, default=None, metavar="RASTER",
              help="Raster of public non-negative weights (e.g. population density, in the "
              "lattice CRS) that places every candidate's synthetic points within their cells, "
              "as release --weights does; default: uniformly over the cells' habitable part.")
@click.option("--weights-exposure", is_flag=True,
              help="With --weights (a population raster): compare each candidate also with "
              "its cells' totals of the raster as their exposure (release --weights-exposure), "
              "labelled 'weights exposure'; --areas candidates with an --area-exposures "
              "exposure are not doubled.")
@continuous_option
@beta_prior_option
@region_option("Every --cell-sizes, --grids and --hex-sizes candidate covers its bounds; "
               "--areas candidates ignore it.")
@exclude_option
@barriers_option
@click.option("--drop-outside", is_flag=True,
              help="Drop (with a warning) records outside a candidate's lattice/region or inside "
              "excluded areas instead of refusing the input, as `geosynth release "
              "--drop-outside` does (the release command printed repeats it).")
@m_option("Synthetic releases per candidate (the coverage needs 2 or more).")
@run_options
@click.option("--risk-limit", type=FiniteFloat(min=0), default=None,
              help="Recommend the most useful candidate whose --risk is at most this (for a "
              "distance: at least this). Default: no limit.")
@click.option("--risk", type=click.Choice(_RISKS), default="true_match_rate",
              show_default=True, help="Risk measure of the R-U map and the limit.")
@click.option("--utility", type=click.Choice(_UTILITIES), default="coverage",
              show_default=True, help="Utility measure of the R-U map and the recommendation. "
              "coverage needs a binary --outcome (by default the first attribute, if 0/1); "
              "without one the default falls back to intensity_correlation.")
@click.option("--outcome", default=None, metavar="COLUMN",
              help="Binary column (0/1) of the coverage measure, one of --attributes (the "
              "releases carry no other column). Default: the first attribute if it is 0/1.")
@click.option("--quadrants", "n_quadrants", type=click.IntRange(min=1, max=10**7), default=1000,
              show_default=True, help="Random rectangles of the coverage measure.")
@seed_option("Seed for a reproducible comparison (default: drawn, and written to the report).")
@click.option("--report", "report_path", type=REPORT_FILE, required=True,
              help="Markdown report to write: the table, the recommendation and the release "
              "command; the R-U map goes beside it, its suffix replaced by .png (tune.md: "
              "tune.png; both internal: readable by you only).")
@overwrite_option
@click.pass_context
def tune(
    ctx: click.Context,
    input_path: str,
    layer: str | None,
    x_column: str | None,
    y_column: str | None,
    crs: str | None,
    sep: str | None,
    decimal: str | None,
    encoding: str | None,
    na_values: list[str] | None,
    attributes: list[str],
    cell_sizes: list[float] | None,
    grid_shapes: list[tuple[int, int]] | None,
    hex_sizes: list[float] | None,
    areas_paths: tuple[str, ...],
    areas_layer: tuple[str, ...],
    link_islands: bool,
    area_gap: float | None,
    area_exposures: list[str] | None,
    weights_path: str | None,
    weights_exposure: bool,
    continuous: list[str] | None,
    beta_prior: list[str] | None,
    region_path: str | None,
    region_layer: str | None,
    exclude_path: str | None,
    exclude_layer: str | None,
    barriers_path: str | None,
    barriers_layer: str | None,
    drop_outside: bool,
    m: int,
    iterations: int | str,
    burn_in: int | None,
    thin: int | None,
    target_ess: float,
    max_rhat: float,
    max_seconds: float | None,
    chains: int,
    risk_limit: float | None,
    risk: str,
    utility: str,
    outcome: str | None,
    n_quadrants: int,
    seed: int | None,
    report_path: str,
    overwrite: bool,
) -> None:
    """Fit, release and measure INPUT on each candidate lattice; recommend one.

    For each candidate (--cell-sizes, --grids, --hex-sizes and --areas) the model is fitted,
    --m releases drawn and their disclosure risk and utility measured (see geosynth.tune).
    The report holds the table, the recommendation (the best --utility among the
    candidates within --risk-limit) and the `geosynth release` command line of the
    recommended candidate, which are also printed; the R-U map is written beside the report
    as a PNG. All of it is internal, the printed table too: it describes the confidential
    data. Every candidate's
    coverage is measured on the same random rectangles; the intensity columns on the lattice
    of the finest candidate (crediting the detail each keeps), so they change when a finer
    candidate is added.

    \b
    Example:
      geosynth tune cases.gpkg --attributes sex,age_group --cell-sizes 100,250,500,1000 \\
          --region city.gpkg --risk-limit 0.01 --report tune.md
    """  # noqa: D301 (click's \b keeps the example as written)
    import geosynth
    from geosynth import io
    from geosynth.io import printable
    from geosynth.tuning import check_risk_limit

    if not cell_sizes and not grid_shapes and not hex_sizes and not areas_paths:
        raise click.UsageError("give the candidate lattices: --cell-sizes 100,250,500, "
                               "--grids 10x10,20x20, --hex-sizes 150,300 and/or --areas FILE")
    areas_by_label = _areas_by_label(areas_paths, areas_layer, area_exposures)
    _check_candidate_count({"--cell-sizes": cell_sizes, "--grids": grid_shapes,
                            "--hex-sizes": hex_sizes, "--areas": list(areas_by_label)},
                           twins=_twin_count(weights_exposure, areas_by_label, cell_sizes,
                                             grid_shapes, hex_sizes))
    for option, value in (("--link-islands", link_islands), ("--area-gap", area_gap),
                          ("--area-exposures", area_exposures)):
        if value and not areas_paths:
            raise click.UsageError(f"{option} applies to --areas only; add --areas FILE or "
                                   f"drop {option}")
    check_layer_options({"--region": (region_path, region_layer),
                         "--exclude": (exclude_path, exclude_layer),
                         "--barriers": (barriers_path, barriers_layer)})
    both = sorted(set(attributes) & set(continuous or []))
    if both:
        raise click.UsageError(f"{', '.join(both)} listed in both --attributes and --continuous; "
                               "give each column one role")
    check_beta_prior(continuous, beta_prior)
    if weights_exposure and weights_path is None:
        raise click.UsageError("--weights-exposure takes each cell's total of the --weights "
                               "raster; add --weights RASTER or drop --weights-exposure")
    check_file_name(report_path, "--report")  # before its R-U map's name is derived from it
    check_run_options(iterations, burn_in, thin, chains, m)
    if risk_limit is not None:
        check_risk_limit(risk_limit, risk)  # before the fits; the message names --risk-limit
    _check_outcome_option(outcome, attributes, m)
    run = run_settings(ctx, iterations, burn_in, thin, chains, target_ess, max_rhat,
                       max_seconds)
    prior = _priors(beta_prior, continuous)
    lattices = ([geosynth.Candidate(cell_size=size, beta_prior=prior) for size in cell_sizes or []]
                + [geosynth.Candidate(shape=shape, beta_prior=prior)
                   for shape in grid_shapes or []]
                + [geosynth.Candidate(hex_size=size, beta_prior=prior)
                   for size in hex_sizes or []])
    _check_area_labels(areas_by_label, lattices)
    figure_path = Path(report_path).with_suffix(".png")
    inputs = {"INPUT": input_path, "--region": region_path, "--exclude": exclude_path,
              "--barriers": barriers_path, "--weights": weights_path}
    inputs.update({f"--areas {label}": path  # one per file and layer, not per exposure
                   for label, (path, _, _) in _areas_by_label(areas_paths, areas_layer).items()})
    given = check_outputs({"--report": report_path, "R-U map of --report": figure_path},
                          overwrite, inputs=inputs)
    io.existing_file(input_path, "INPUT")  # a pipe or device: named INPUT, not path
    # Messages name tune's options: --cell-sizes and --grids, not release's --cell-size, --grid.
    ctx.ensure_object(dict).setdefault("names", {}).update(
        {"gdf": Path(input_path).name, "--cell-size": "--cell-sizes", "--grid": "--grids",
         "--area-exposure": "--area-exposures"})
    seed, _ = derive_seeds(seed, [])
    with RunOutputs(overwrite) as outputs:
        for option, path in given.items():
            outputs.check_folder(option, path)
        reading = csv_reading(sep, decimal, encoding, na_values)
        points = io.read_points(input_path, x=x_column, y=y_column, crs=crs, layer=layer,
                                **reading)
        _check_points(points, Path(input_path).name, attributes, continuous, outcome,
                      coordinates=(x_column, y_column), decimal=decimal)
        if weights_path is not None:  # refused once, before "Tuning", naming --weights
            from geosynth.rasters import check_weights_raster

            with naming_weights(weights_path):
                check_weights_raster(weights_path, points.crs)
        utility = _utility_with_outcome(ctx, utility, points, attributes, outcome, m)
        region = (None if region_path is None else
                  io.read_polygons(region_path, region_layer, option="--region"))
        study = (region if region is None or region.crs is None
                 else region.to_crs(points.crs))  # one without a CRS is refused by tune
        for option, sizes, hexagonal in (("--cell-sizes", cell_sizes, False),
                                         ("--hex-sizes", hex_sizes, True)):
            for size in sizes or []:
                check_cell_side(option, size, hexagonal, points, study)
        exclude = (None if exclude_path is None else
                   io.read_polygons(exclude_path, exclude_layer, option="--exclude"))
        barriers = (None if barriers_path is None else
                    io.read_polygons(barriers_path, barriers_layer, option="--barriers",
                                     lines=True))
        candidates = (lattices
                      + [geosynth.Candidate(grid=build_grid(points, LatticeChoice(
                          areas_path=path, areas_layer=layer, link_islands=link_islands,
                          area_gap=area_gap, area_exposure=exposure), exclude=exclude,
                          barriers=barriers),
                          beta_prior=prior, label=name)
                         for name, (path, layer, exposure) in areas_by_label.items()])
        if weights_exposure:
            twins = _weights_exposure_twins(candidates)
            areas_by_label.update({twin.label: areas_by_label[candidate.label]
                                   for candidate, twin in twins if candidate.grid is not None})
            candidates += [twin for _, twin in twins]
        if continuous and prior is None:  # what the table measures is not all of the release
            click.echo(f"Note: without --beta-prior the candidates are fitted and measured "
                       f"without --continuous {printable(','.join(continuous))} (it has no "
                       "effect on the intensity); the release command releases synthetic "
                       "values of it, which this comparison does not measure", err=True)
        click.echo(f"Tuning {len(candidates)} candidate lattice(s) of {len(points)} records: "
                   f"{describe_run(run)} each, {m} releases", err=True)
        result = _tune(ctx, points, attributes, candidates, region=region, exclude=exclude,
                       barriers=barriers, continuous=continuous, m=m, seed=seed,
                       outcome=outcome, n_quadrants=n_quadrants, fit_options=run,
                       progress=show_progress(ctx), weights=weights_path,
                       outside="drop" if drop_outside else "error")
        chosen = result.recommend(risk_limit=risk_limit, risk=risk, utility=utility)
        command = None
        if chosen.candidate is not None:
            areas, chosen_layer, exposure = areas_by_label.get(chosen.label, (None, None, None))
            command = release_command(input_path, attributes, chosen.candidate, layer=layer,
                                      x=x_column, y=y_column, crs=crs, reading=reading,
                                      continuous=continuous,
                                      region=None if areas else region_path,
                                      region_layer=None if areas else region_layer,
                                      exclude=exclude_path, exclude_layer=exclude_layer,
                                      barriers=barriers_path, barriers_layer=barriers_layer,
                                      m=m, areas=areas, areas_layer=chosen_layer,
                                      link_islands=link_islands, area_gap=area_gap,
                                      area_exposure=exposure, drop_outside=drop_outside, run=run,
                                      weights=weights_path)
        report = _report(input_path, result, chosen, command, risk, utility, run, m, seed,
                         figure_path, weights_path)
        save_figure(result.plot(risk=risk, utility=utility, risk_limit=risk_limit),
                    figure_path, outputs=outputs,
                    option="R-U map of --report", private=True)
        write_text(report_path, report, outputs=outputs, option="--report", private=True)
        outputs.commit()
    shown = result.table[[risk, utility, "n_cells"]].copy()
    for column in (risk, utility):  # ± one Monte Carlo standard error (jackknife over --m)
        shown.insert(shown.columns.get_loc(column) + 1, f"{column} se", result.errors[column])
    table = shown.to_string(float_format="{:.4g}".format)
    # The measures describe the confidential records (a rate of 1/n is one matched record).
    click.echo(f"Candidates (internal: measured on the confidential records of "
               f"{printable(Path(input_path).name)}; do not publish):")
    # Candidate labels hold the --areas file names: no control characters.
    click.echo("\n".join(printable(line) for line in table.splitlines()))
    click.echo(f"Recommendation: {printable(cli_message(chosen.reason))}")
    if command is not None:
        click.echo(f"Release it with:\n  {printable(command)}")
    click.echo(f"Wrote {printable(report_path)} and {printable(figure_path)} (internal report "
               "and R-U map)")


def release_command(input_path: str, attributes: list[str], candidate: Any, *,
                    layer: str | None = None, x: str | None = None, y: str | None = None,
                    crs: str | None = None, reading: dict[str, str] | None = None,
                    continuous: list[str] | None = None,
                    region: str | None = None, exclude: str | None = None, m: int = 5,
                    out: str = "release.gpkg", areas: str | None = None,
                    region_layer: str | None = None, exclude_layer: str | None = None,
                    areas_layer: str | None = None, link_islands: bool = False,
                    area_gap: float | None = None, area_exposure: str | None = None,
                    barriers: str | None = None, barriers_layer: str | None = None,
                    drop_outside: bool = False, levels_file: str | None = None,
                    run: dict[str, Any] | None = None, weights: str | None = None) -> str:
    """Return the ``geosynth release`` command line of a candidate, shell-quoted.

    The command repeats the MCMC run of ``run`` with the run options whose value is not the
    one ``geosynth release`` takes by default (without them it fitted with its own defaults,
    e.g. ``--iterations auto``, not the run that was tuned).

    An ε-DP candidate's command has ``--levels-file``, which ``geosynth release --epsilon``
    requires: ``levels_file`` when given, else the placeholder ``LEVELS.json``, to be replaced
    by a JSON file of the public levels of each attribute (levels read from the data would
    disclose which occur).

    Parameters
    ----------
    input_path : str
        The point file.
    attributes : list of str
        The attribute columns.
    candidate : geosynth.Candidate
        Its lattice and settings.
    layer, x, y, crs, continuous, region, exclude, m
        The options of the tuning run, repeated.
    reading : dict of str to str, optional
        The CSV options of the tuning run (:func:`~geosynth.cli.options.csv_reading`),
        repeated.
    out : str, default "release.gpkg"
        The release file.
    areas : str, optional
        The polygon file of an areal candidate (``candidate.grid``).
    region_layer, exclude_layer, areas_layer : str, optional
        The layers read of ``region``, ``exclude`` and ``areas`` (``--region-layer``, ...),
        repeated: without them ``geosynth release`` refuses a file of several polygon layers.
    link_islands : bool, default False
        ``--link-islands`` of the areal candidate.
    area_gap : float, optional
        ``--area-gap`` of the areal candidate.
    area_exposure : str, optional
        ``--area-exposure`` of the areal candidate.
    barriers, barriers_layer : str, optional
        ``--barriers`` and ``--barriers-layer`` of the tuning run, repeated.
    drop_outside : bool, default False
        ``--drop-outside`` of the tuning run, repeated (not for an ε-DP candidate, whose
        release drops such records anyway).
    levels_file : str, optional
        With an ε-DP candidate: the ``--levels-file``; default the placeholder
        ``LEVELS.json``.
    run : dict, optional
        The fit's keyword arguments of the tuning run
        (:func:`geosynth.cli.fitting.run_settings`: ``n_iter``, ``burn_in``, ``thin``,
        ``chains``, ``target_ess``, ``max_rhat``, ``max_seconds``); default: release's own
        run options.
    weights : str, optional
        ``--weights`` of the tuning run, repeated (and ``--weights-exposure`` when the
        candidate has ``weights_exposure``).

    Returns
    -------
    str
    """
    words = ["geosynth", "release", input_path]
    for option, value in (("--layer", layer), ("--x", x), ("--y", y), ("--crs", crs)):
        if value is not None:
            words += [option, value]
    words += csv_words(reading or {})
    words += ["--attributes", ",".join(attributes)]
    if candidate.cell_size is not None:
        words += ["--cell-size", exact_number(candidate.cell_size)]
    elif candidate.hex_size is not None:
        words += ["--hex-size", exact_number(candidate.hex_size)]
    elif candidate.grid is not None:
        if areas is None:
            raise ValueError("an areal candidate's release command needs its areas file")
        words += ["--areas", areas] + (["--areas-layer", areas_layer]
                                        if areas_layer is not None else [])
        words += ["--link-islands"] if link_islands else []
        if area_gap is not None:
            words += ["--area-gap", exact_number(area_gap)]
        if area_exposure is not None:
            words += ["--area-exposure", area_exposure]
    else:
        words += ["--grid", f"{candidate.shape[0]}x{candidate.shape[1]}"]
    if continuous:
        words += ["--continuous", ",".join(continuous)]
    if candidate.beta_prior is not None:
        words += ["--beta-prior", ",".join(candidate.beta_prior)]
    for option, value, chosen in (("--region", region, region_layer),
                                  ("--exclude", exclude, exclude_layer),
                                  ("--barriers", barriers, barriers_layer)):
        if value is not None:
            words += [option, value] + ([f"{option}-layer", chosen] if chosen is not None else [])
    if weights is not None:
        words += ["--weights", weights] + (["--weights-exposure"]
                                           if candidate.weights_exposure else [])
    elif candidate.weights_exposure:
        raise ValueError("a candidate with weights_exposure needs the weights raster")
    if candidate.epsilon is not None:
        words += ["--epsilon", exact_number(candidate.epsilon), "--levels-file",
                  levels_file or LEVELS_PLACEHOLDER]
    elif drop_outside:
        words += ["--drop-outside"]
    words += [*_run_words(run or {}), "--m", str(m), "--out", out]
    return " ".join(shlex.quote(word) for word in words)


def _run_words(run: dict[str, Any]) -> list[str]:
    """Return the ``geosynth release`` options that repeat ``run``, but those at its default.

    The defaults are release's own, as it resolves them: with ``--iterations N`` the burn-in
    of N (a quarter) and the fixed thinning, else the options' declared defaults.
    """
    from geosynth.cli.fitting import fixed_burn_in, fixed_thin
    from geosynth.cli.release import release

    words = []
    n_iter = run.get("n_iter")
    for param in release.params:
        key = "n_iter" if param.name == "iterations" else param.name
        if key not in _RUN_KEYS or run.get(key) is None:
            continue
        default = param.default
        if n_iter != "auto" and key == "burn_in":
            default = fixed_burn_in(n_iter, None)
        elif n_iter != "auto" and key == "thin":
            default = fixed_thin(None)
        if run[key] != default:
            value = run[key]
            words += [param.opts[0], value if isinstance(value, str) else exact_number(value)]
    return words


def _report(input_path, result, chosen, command, risk, utility, run, m, seed,
            figure, weights_path=None) -> str:
    from geosynth.tuning import MEASURES

    lines = [
        "# Choosing the lattice: risk and utility of the candidates",
        "",
        "Internal document: its measures are taken on the confidential records (their rates "
        "reveal how many there are); do not publish it or the R-U map beside it.",
        "",
        f"Input: `{Path(input_path).name}`; {m} releases per candidate; fits: "
        f"{describe_run(run)}; seed {seed} (internal: rerun with --seed {seed})."
        + ("" if weights_path is None else f" Points placed within their cells by the weights "
           f"raster `{Path(weights_path).name}` (--weights)."),
        f"Intensity fidelity is measured on the lattice of {result.reference!r} (the "
        "finest), so that every candidate is compared on the same cells and credited for the "
        "detail it keeps.",
        "",
        "## Recommendation",
        "",
        cli_message(chosen.reason) + ".",
        "",
    ]
    if command is not None:
        lines += ["Release it with:", "", "```", command, "```", ""]
    lines += ["## Candidates", "", result.to_markdown(), "",
              f"The R-U map ({risk} against {utility}) is `{figure.name}`, beside this "
              "report.", "", "## What the columns mean", ""]
    lines += [f"- `{name}` ({measure.kind}; larger is {measure.larger_is}): "
              f"{measure.description}." for name, measure in MEASURES.items()]
    lines += ["- `<measure> (se)`: its Monte Carlo standard error, the delete-one jackknife "
              f"over the {m} releases: how far another seed may move it (rough for few "
              "releases; NaN with one release, and for the coverage with two)."]
    return "\n".join(lines) + "\n"


def _check_points(points, name: str, attributes: list[str], continuous: list[str] | None,
                  outcome: str | None, coordinates: tuple[str | None, ...] = (None, None),
                  decimal: str | None = None) -> None:
    """Check, before any fit, the columns and the CRS of INPUT, in the command's terms."""
    from geosynth.data import identifying_levels
    from geosynth.errors import InputError
    from geosynth.io import printable

    columns = {"--attributes": attributes, "--continuous": continuous, "--outcome": outcome}
    check_columns(points, name, columns, coordinates)
    check_complete(points, name, columns)
    _check_continuous(points, name, attributes, continuous)
    if outcome is not None:
        check_binary(points, outcome, name)
    check_projected(points, name, coordinates, decimal)
    for column in attributes:
        described = identifying_levels(points[column], column)
        if described is not None:  # prepare's advice names --allow-identifying, not in tune
            raise InputError(
                f"--attributes {printable(column)!r} of {printable(name)} has {described}: such "
                "levels (nearly) identify records, and a release would publish them verbatim; "
                "drop it from --attributes, or coarsen it into groups in the file"
            )


def _priors(beta_prior: list[str] | None,
            continuous: list[str] | None) -> tuple[str, ...] | None:
    """Return the candidates' ``beta_prior``: one per --continuous column, as release reads it.

    ``--beta-prior normal`` with two columns is the prior of both in ``geosynth release``; the
    candidates got a one-prior list, which every fit refused after reading the data.
    """
    if beta_prior is None:
        return None
    return tuple(beta_prior * len(continuous)) if len(beta_prior) == 1 else tuple(beta_prior)


def _check_continuous(points, name: str, attributes: list[str],
                      continuous: list[str] | None) -> None:
    """Refuse, before any fit, --continuous columns that ``geosynth release`` refuses.

    Without --beta-prior the candidates' fits leave these columns out, so a column with an
    infinite value was tuned, and the release command printed for it then failed. The checks
    are :func:`geosynth.prepare`'s own.
    """
    from geosynth.data import check_columns as check_data_columns
    from geosynth.data import continuous_values
    from geosynth.errors import InputError

    if not continuous:
        return
    check_data_columns(points, attributes, continuous)  # numeric dtypes, as release's prepare
    for column in continuous:
        try:
            continuous_values(points, column)
        except InputError as err:
            raise InputError(f"--continuous: {err} (in {name})") from None


def _check_candidate_count(given: dict[str, Any], twins: int = 0) -> None:
    """Refuse more candidates than :data:`geosynth.tuning.MAX_CANDIDATES`, before any reading.

    5,000 --cell-sizes printed "Tuning 5000 candidate lattice(s)" and ran for minutes building
    lattices, before a fit of each. ``twins``: the candidates --weights-exposure adds.
    """
    from geosynth.tuning import MAX_CANDIDATES

    counts = {option: len(values) for option, values in given.items() if values}
    if twins:
        counts["--weights-exposure"] = twins
    total = sum(counts.values())
    if total > MAX_CANDIDATES:
        options = (", ".join(f"{option} ({count:,})" for option, count in counts.items())
                   if len(counts) > 1 else next(iter(counts)))
        raise click.BadParameter(
            f"{total:,} candidates, more than the limit of {MAX_CANDIDATES} (each is a whole "
            "fit, --m releases and an evaluation); compare a few lattices first, e.g. "
            "--cell-sizes 100,250,500,1000, then refine around the best in another run",
            param_hint=options)


def _areas_by_label(paths: tuple[str, ...], layers: tuple[str, ...],
                    exposures: list[str] | None = None
                    ) -> dict[str, tuple[str, str | None, str | None]]:
    """Return the --areas candidates, ``{label: (file, layer, exposure)}``, checked before reading.

    A candidate is labelled by its file name, and by ``name:layer`` when --areas-layer gives
    its layer (two layers of one GeoPackage are two candidates). With several
    --area-exposures each file is a candidate with each, labelled ``name, exposure area``
    (``none``: the release's default, None here).
    """
    if layers and len(layers) != len(paths):
        raise click.UsageError(
            f"give --areas-layer once per --areas, in the same order (the first layer is of "
            f"the first file), or not at all: got {len(paths)} --areas and {len(layers)} "
            "--areas-layer")
    paired = list(zip(paths, layers or [None] * len(paths), strict=True))
    found = {Path(path).name if layer is None else f"{Path(path).name}:{layer}": (path, layer)
             for path, layer in paired}
    if len(found) != len(paired):
        raise click.UsageError(f"--areas files need distinct names, or distinct --areas-layer "
                               f"(they label the candidates): got "
                               f"{[Path(p).name for p in paths]}")
    exposures = exposures or ["none"]
    return {(label if len(exposures) == 1 else f"{label}, exposure {exposure}"):
            (path, layer, None if exposure == "none" else exposure)
            for label, (path, layer) in found.items() for exposure in exposures}


def _twin_count(weights_exposure: bool, areas_by_label: dict, *lattices: list | None) -> int:
    """Return how many candidates --weights-exposure adds (see :func:`_weights_exposure_twins`)."""
    if not weights_exposure:
        return 0
    unexposed = sum(exposure is None for _, _, exposure in areas_by_label.values())
    return unexposed + sum(len(given or []) for given in lattices)


def _weights_exposure_twins(candidates: list) -> list[tuple[Any, Any]]:
    """Return ``(candidate, twin)`` pairs, the twin with the --weights-exposure exposure.

    The twin's exposure is its cells' totals of the weights raster; its label is the
    candidate's with ``, weights exposure``. An --areas candidate with an --area-exposures
    exposure has one already, and no twin.
    """
    import dataclasses

    return [(candidate, dataclasses.replace(candidate, weights_exposure=True,
                                            label=f"{candidate.label}, weights exposure"))
            for candidate in candidates
            if candidate.grid is None or not candidate.grid.exposure_given]


def _check_area_labels(areas_by_label: dict[str, str], lattices: list) -> None:
    """Refuse an --areas file named like another candidate's label, before reading the data.

    An areal candidate is labelled by its file name: ``--grids 3x3 --areas 3x3`` gave two
    candidates '3x3', refused by :func:`geosynth.tune` after the data and areas were read, with
    advice (``label=``) that the command line cannot follow.
    """
    from geosynth.io import printable

    taken = {candidate.label for candidate in lattices}
    clash = sorted(name for name in areas_by_label if name in taken)
    if clash:
        raise click.BadParameter(
            f"the file name {printable(clash[0])!r} is also the label of a --cell-sizes, --grids "
            "or --hex-sizes candidate (an --areas candidate is labelled by its file name); "
            "rename or copy the file, e.g. to tracts.gpkg", param_hint="--areas")


def _check_outcome_option(outcome: str | None, attributes: list[str], m: int) -> None:
    """Refuse, before reading the data, an --outcome whose coverage cannot be measured."""
    if outcome is None:
        return
    if outcome not in attributes:
        raise click.BadParameter(
            f"{outcome!r} is not one of --attributes {','.join(attributes)}: the releases carry "
            "the attributes only, so its coverage cannot be measured; add it to --attributes "
            "or name one of them", param_hint="--outcome")
    if m < 2:
        raise click.UsageError("--outcome needs --m 2 or more: the coverage combines the "
                               "releases (the variance between them), which --m 1 has not; "
                               "raise --m or drop --outcome")


def _utility_with_outcome(ctx: click.Context, utility: str, points, attributes: list[str],
                          outcome: str | None, m: int) -> str:
    """Check, before any fit, that the utility measure can be computed; return the one to use.

    coverage needs a binary outcome column (:func:`geosynth.tuning.coverage_outcome`), two
    releases or more and records enough to fill a rectangle
    (:func:`geosynth.tuning.tuned_outcome`). Without them, the default utility falls back to
    intensity_correlation (said on stderr), and an explicit ``--utility coverage`` is refused:
    the ranking would fail after every fit.
    """
    from geosynth.tuning import coverage_outcome, tuned_outcome

    if m < 2:
        missing, fix = "--m 2 or more (--m 1 has no coverage)", "raise --m"
    elif coverage_outcome(points, attributes, outcome) is None:
        missing = (f"a binary --outcome column (0/1 or booleans), and the first attribute "
                   f"{attributes[0]!r} is not one")
        fix = "pass --outcome COLUMN"
    elif tuned_outcome(points, attributes, outcome, m) is None:  # an --outcome: refused there
        missing = ("records enough to fill a rectangle, spread in x and y (tune leaves the "
                   "coverage out)")
        fix = "use more records"
    else:
        return utility
    if utility != "coverage":
        return utility
    if ctx.get_parameter_source("utility") is not click.core.ParameterSource.DEFAULT:
        raise click.UsageError(f"--utility coverage needs {missing}; {fix} or pick another "
                               "--utility (e.g. intensity_correlation)")
    click.echo(f"Note: the coverage needs {missing}: ranking by --utility "
               "intensity_correlation", err=True)
    return "intensity_correlation"


def _tune(ctx: click.Context, points, attributes: list[str], candidates: list, **options):
    """Run geosynth.tune; a candidate's error names the option of its kind and its label.

    The lattice's messages say ``cell_size``: for a hexagon candidate that is --hex-sizes.
    """
    import geosynth
    from geosynth.errors import GeosynthError

    try:
        return geosynth.tune(points, attributes, candidates, **options)
    except GeosynthError as err:
        notes = "\n".join(getattr(err, "__notes__", []))
        for candidate in candidates:
            if f"candidate {candidate.label!r})" in notes:
                click.echo(f"Candidate {candidate.label!r} failed:", err=True)
                if candidate.hex_size is not None:
                    ctx.obj["names"]["--cell-size"] = "--hex-sizes"
        raise
