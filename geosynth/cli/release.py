"""``geosynth release``: fit the model to a confidential point file and write a release."""

from __future__ import annotations

import inspect
import json
import warnings
from pathlib import Path
from typing import Any

import click

from geosynth.cli.fitting import check_beta_prior, check_run_options, describe_run, run_settings
from geosynth.cli.helpers import (
    LatticeChoice,
    RunOutputs,
    build_grid,
    check_binary,
    check_columns,
    check_complete,
    check_coverage_size,
    check_layer_options,
    check_outputs,
    check_projected,
    derive_seeds,
    describe_lattice,
    describe_rhat,
    fit_diagnostics,
    length_text,
    naming_weights,
    release_provenance,
    show_progress,
    stop_if_interrupted,
    summary_block,
    write_text,
)
from geosynth.cli.messages import cli_message
from geosynth.cli.options import (
    DEFAULT_MAX_RHAT,
    EXISTING_FILE,
    GEOTIFF_FILE,
    MAP_FILE,
    RELEASE_FILE,
    REPORT_FILE,
    FiniteFloat,
    LimitSpec,
    attributes_option,
    barriers_option,
    beta_prior_option,
    continuous_option,
    csv_reading,
    exclude_option,
    lattice_options,
    m_option,
    outcome_option,
    overwrite_option,
    points_options,
    region_option,
    run_options,
    seed_option,
)
from geosynth.errors import InputError

__all__ = ["release"]

@click.command(short_help="Fit the model to confidential points and write a release.")
@click.argument("input_path", metavar="INPUT", type=EXISTING_FILE)
@points_options
@attributes_option(required=True)
@continuous_option
@lattice_options
@region_option("Required with --epsilon, unless --areas gives the lattice.")
@exclude_option
@barriers_option
@click.option("--drop-outside", is_flag=True,
              help="Drop (with a warning) records outside the lattice/region or inside excluded "
              "areas instead of refusing the input.")
@m_option()
@run_options
@beta_prior_option
@click.option("--weights", "weights_path", type=EXISTING_FILE, default=None, metavar="RASTER",
              help="Raster of public non-negative weights (e.g. population density, in the "
              "lattice CRS) that places each synthetic point within its cell; default: "
              "uniformly over the cell's habitable part. Never a raster made from INPUT (one "
              "whose positive pixels cover a sliver of the cells yet hold the records is "
              "warned about).")
@click.option("--weights-exposure", is_flag=True,
              help="With --weights (a population raster): each cell's total of it is the cell's "
              "exposure, so the model smooths the rate per resident instead of the density per "
              "unit area. A cell below 1% of the mean cell total (one it counts nobody in) is "
              "raised to it.")
@click.option("--limit", "limit_specs", type=LimitSpec(), multiple=True,
              help="The range a --continuous column's values can take, e.g. age=0:120 or "
              "income=0: (an end left empty is open); repeat for several columns. Its synthetic "
              "values are drawn within it. State the variable's public range, never the "
              "data's minimum and maximum (the release would bound them).")
@click.option("--sampler", type=click.Choice(["gibbs", "mh", "block"]), default="gibbs",
              show_default=True,
              help="MCMC updates: gibbs (exact single-site draws), mh (single-site "
              "Newton-proposal Metropolis-Hastings steps: same posterior, cheaper sweeps), "
              "block (adds joint GMRF updates of each field with its precision; not with "
              "--epsilon).")
@click.option("--epsilon", type=FiniteFloat(min=0, min_open=True), default=None,
              help="Make an epsilon-differentially private release (noisy counts, noise-aware "
              "fit) that protects each record at epsilon (a person with k records: k·epsilon; "
              "keep one record per person). Needs --region (or public --areas) and "
              "--levels-file; no --continuous.")
@click.option("--levels-file", type=EXISTING_FILE, default=None,
              help="With --epsilon (required): JSON object {attribute: [levels...]} of the "
              "public domain of each attribute. Records with another level, or outside the "
              "lattice, are dropped (with a warning to you), never refused.")
@click.option("--public-total", "public_total", type=click.IntRange(min=1), default=None,
              metavar="N",
              help="With --epsilon: the number of records, only when it is already published "
              "(e.g. in an official statistic); the release then has exactly N records. Without "
              "it the size of the release is a differentially private estimate.")
@click.option("--allow-identifying", is_flag=True,
              help="Accept --attributes whose levels (nearly) identify records (e.g. a record ID, "
              "or many levels held by a single record). They are refused by default because "
              "the release publishes every level verbatim; use only for public, non-linkable "
              "levels.")
@seed_option()
@click.option("--out", "out_path", type=RELEASE_FILE, required=True,
              help="Release GeoPackage to write, named *.gpkg (public: layers synthetic_1..m, "
              "grid, metadata). Seeds go to <out>.audit.json beside it (private).")
@click.option("--map", "map_path", type=MAP_FILE, default=None,
              help="Write an interactive review map: one self-contained HTML file that opens "
              "without internet and requests nothing (internal: shows the original points; "
              "readable by you only).")
@click.option("--map-max-points", type=click.IntRange(min=0), default=None,
              help="Draw at most this many points per map layer (a fixed random subset; "
              "default: geosynth.maps.DEFAULT_MAX_POINTS, 10,000, or fewer so that many "
              "releases stay within the 500,000 points and lines a page holds); 0 draws all.")
@click.option("--report", "report_path", type=REPORT_FILE, default=None,
              help="Write a Markdown report: fit diagnostics and risk/utility tables "
              "(internal; readable by you only).")
@outcome_option
@click.option("--include-intensity", is_flag=True,
              help="Add the posterior mean intensity of each combination to the grid layer "
                   "(it follows the exact counts where cells hold few records).")
@click.option("--intensity-tif", "intensity_path", type=GEOTIFF_FILE, default=None,
              metavar="PATH",
              help="Also write the posterior mean intensity as a GeoTIFF, one band per "
              "attribute combination (--grid or --cell-size lattices). Public like the release: "
              "where cells hold few records it follows their counts closely (a warning says "
              "how closely).")
@overwrite_option
@click.pass_context
def release(
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
    continuous: list[str] | None,
    grid_shape: tuple[int, int] | None,
    cell_size: float | None,
    hex_size: float | None,
    areas_path: str | None,
    areas_layer: str | None,
    area_id: str | None,
    public_area_ids: bool,
    link_islands: bool,
    area_gap: float | None,
    area_exposure: str | None,
    region_path: str | None,
    region_layer: str | None,
    exclude_path: str | None,
    exclude_layer: str | None,
    barriers_path: str | None,
    barriers_layer: str | None,
    drop_outside: bool,
    weights_path: str | None,
    weights_exposure: bool,
    limit_specs: tuple[tuple[str, tuple[float | None, float | None]], ...],
    m: int,
    iterations: int | str,
    burn_in: int | None,
    thin: int | None,
    target_ess: float,
    max_rhat: float,
    max_seconds: float | None,
    chains: int,
    beta_prior: list[str] | None,
    sampler: str,
    epsilon: float | None,
    levels_file: str | None,
    public_total: int | None,
    allow_identifying: bool,
    seed: int | None,
    out_path: str,
    map_path: str | None,
    map_max_points: int | None,
    report_path: str | None,
    outcome: str | None,
    include_intensity: bool,
    intensity_path: str | None,
    overwrite: bool,
) -> None:
    """Fit the Paiva et al. (2014) model to INPUT and write m synthetic releases.

    INPUT is a point file: GeoPackage, GeoParquet, shapefile, GeoJSON, FlatGeobuf, a .zip of one of
    those, or CSV (with --x, --y and --crs; --sep, --decimal, --encoding and --na-values for files
    saved by spreadsheets), in a projected CRS (metres). The lattice is --grid ROWSxCOLS,
    --cell-size METRES (square cells) or --hex-size METRES (hexagons) over the study bounds -- the
    bounds of --region if given, else the total bounds of the points -- or --areas FILE, one cell
    per areal unit (census tracts, districts; give exactly one). Bounds taken from the points depend
    on the confidential data (the extreme records), so a differentially private release (--epsilon)
    requires a public --region or public --areas, and --levels-file, the public levels of each
    attribute. Polygon files may be GeoPackages, zipped shapefiles (.zip), GeoJSON or any format
    GDAL reads; of a file of several layers, --region-layer, --exclude-layer and --areas-layer name
    the one to read. --barriers (lines or polygons: rivers, railways, motorways) cuts the links
    between neighbouring cells that they separate.

    Without --region the lattice bounds are derived from the points after snapping them
    outward to a coarse value, so they still reveal the extent of the points to within about a
    cell: pass --region when that extent is confidential.

    Every output is checked before any work starts: files that exist are refused unless
    --overwrite is given, and every output folder must be writable (a folder that does not
    exist is created, and removed again if the run fails). All files are written
    together at the end: a run that fails or is interrupted (Ctrl-C, exit status 130) writes
    nothing and replaces nothing, and a file that another run created meanwhile is never
    replaced without --overwrite. Without --seed a seed is drawn and written, with the derived
    seeds of each step, to the private audit file <out>.audit.json, so the owner of the data
    can reproduce the release; the release itself never holds a seed. The seeds of the steps
    also depend on the records, so a guessed --seed does not undo the public row shuffle. With
    --epsilon every random draw comes from fresh OS entropy: --seed is refused, no seed is
    recorded, and the release cannot be reproduced.

    \b
    Example:
      geosynth release cases.gpkg --attributes sex,age_group --grid 20x20 \\
          --region city.gpkg --out release.gpkg --map review.html --report report.md
    """  # noqa: D301 (click's \b keeps the example as written)
    import geosynth
    from geosynth import io
    from geosynth.evaluation import combining_rules

    check_beta_prior(continuous, beta_prior)
    # One name is the single-covariate form (str) of the Python API; several are a list.
    continuous, beta_prior = _one_or_list(continuous), _one_or_list(beta_prior)
    lattice = LatticeChoice(grid_shape, cell_size, hex_size, areas_path, area_id,
                            public_area_ids, link_islands, area_gap, areas_layer=areas_layer,
                            area_exposure=area_exposure)
    check_layer_options({"--region": (region_path, region_layer),
                         "--exclude": (exclude_path, exclude_layer),
                         "--barriers": (barriers_path, barriers_layer)})
    _check_options(lattice, epsilon, region_path, continuous, beta_prior,
                   levels_file, public_total, m, iterations, burn_in, thin, chains, sampler,
                   seed)
    limits = _limits(limit_specs, continuous)
    if intensity_path is not None and (hex_size is not None or areas_path is not None):
        raise click.UsageError("--intensity-tif needs square cells (--grid or --cell-size): a "
                               "GeoTIFF's pixels cannot be hexagons or areal units; use "
                               "--include-intensity for the release's grid layer instead")
    if outcome is not None and report_path is None:
        raise click.UsageError("--outcome is the coverage column of the --report's evaluation; "
                               "add --report FILE or drop --outcome")
    if map_max_points is not None and map_path is None:  # was accepted and did nothing
        raise click.UsageError("--map-max-points limits the points of the --map; add --map FILE "
                               "or drop --map-max-points")
    if weights_exposure and weights_path is None:
        raise click.UsageError("--weights-exposure takes each cell's total of the --weights "
                               "raster; add --weights RASTER or drop --weights-exposure")
    if weights_exposure and area_exposure is not None:
        raise click.UsageError("give one exposure: --area-exposure or --weights-exposure")
    if outcome is not None and outcome not in attributes:  # found after the whole fit
        raise click.UsageError(
            f"--outcome {io.printable(outcome)!r} is not one of --attributes: the releases carry "
            "the attributes (and --continuous) only, so its coverage cannot be measured; add "
            "it to --attributes or pick one of them")
    if outcome is not None and m < 2:
        raise click.UsageError("--outcome needs at least 2 releases (the coverage intervals "
                               "combine the releases by their between-release variance); "
                               "raise --m to 2 or more, or drop --outcome")
    run = run_settings(ctx, iterations, burn_in, thin, chains, target_ess, max_rhat,
                        max_seconds)
    inputs = {"INPUT": input_path, "--region": region_path, "--exclude": exclude_path,
              "--barriers": barriers_path, "--levels-file": levels_file, "--areas": areas_path,
              "--weights": weights_path}
    given = check_outputs(
        {"--out": out_path, "audit file of --out": io.audit_path(out_path), "--map": map_path,
         "--report": report_path, "--intensity-tif": intensity_path},
        overwrite, inputs=inputs)
    io.existing_file(input_path, "INPUT")  # a pipe or device: named INPUT, not path
    name = Path(input_path).name
    names = ctx.ensure_object(dict).setdefault("names", {})
    names["gdf"] = name
    if hex_size is not None:  # the lattice's cell_size is the hexagons' side
        names["--cell-size"] = "--hex-size"
    with RunOutputs(overwrite) as outputs:
        # Every output folder is checked now, before the data are read and the model fitted.
        for option, path in given.items():
            outputs.check_folder(option, path)
        levels = None if levels_file is None else _read_levels(levels_file, attributes)
        if outcome is not None and levels is not None:  # public facts only, under --epsilon
            _check_declared_outcome(levels, outcome, levels_file)
        if levels is not None:
            _warn_of_unused_levels(levels, [*attributes, outcome], levels_file)
        progress = show_progress(ctx)

        # Under DP nothing that depends on the records' values is refused (prepare drops them).
        points = io.read_points(input_path, x=x_column, y=y_column, crs=crs, layer=layer,
                                check_values=epsilon is None,
                                **csv_reading(sep, decimal, encoding, na_values))
        if len(points) == 0 and epsilon is None:
            raise InputError(f"{name} has no records (only a header or an empty layer); there "
                             "is nothing to release")
        check_columns(points, name, {"--attributes": attributes, "--continuous": continuous,
                                     "--outcome": outcome}, coordinates=(x_column, y_column))
        if epsilon is None:  # prepare's messages give pandas advice ("gdf.dropna(...)")
            check_complete(points, name, {"--attributes": attributes,
                                          "--continuous": continuous})
        check_projected(points, name, (x_column, y_column), decimal)
        region = (None if region_path is None else
                  io.read_polygons(region_path, region_layer, option="--region"))
        exclude = (None if exclude_path is None else
                   io.read_polygons(exclude_path, exclude_layer, option="--exclude"))
        barriers = (None if barriers_path is None else
                    io.read_polygons(barriers_path, barriers_layer, option="--barriers",
                                     lines=True))
        grid = build_grid(points, lattice, region, exclude, barriers)
        # Read once, here: the releases place points with this table (and it may weigh cells).
        weights = None if weights_path is None else _weights_table(weights_path, grid)
        if weights_exposure:  # the table serves the new lattice: the cells are the same
            from geosynth.rasters import with_cell_exposure

            grid = with_cell_exposure(weights, grid)
        counts, dropped = _prepare(points, grid, attributes, continuous, drop_outside,
                                   allow_identifying, levels, report_path is not None)
        original = points.loc[counts.record_index]
        if epsilon is not None:  # a CSV's text as the declared levels read it (prepare's match)
            from geosynth.data import declared_attributes

            original = declared_attributes(original, counts.levels)
        # Checked before the fit, which they cost when refused by synthesize (or the writer)
        # after it: names and values the GeoPackage cannot hold (under DP, names only).
        released = original[[*counts.attributes, *counts.covariates, original.geometry.name]]
        io.check_storable_columns(released if epsilon is None else released.iloc[:0],
                                  f"{name} (--attributes, --continuous)")
        if limits is not None:
            from geosynth.synth.paiva import check_limits

            check_limits(original, limits, counts.covariates, warn=False)  # synthesize warns
        if counts.covariates and epsilon is None:  # a column whose cell means do not vary
            from geosynth.synth.paiva import synthesis_sd

            for column in counts.covariates:
                synthesis_sd(counts, column)
        if outcome is not None and epsilon is None:  # now, on the records, not after the fit
            check_binary(original, outcome, name)
            check_coverage_size(original, name)
        if map_path is not None:  # before the fit: a map too large failed after it
            from geosynth import maps

            maps.check_web_crs(grid.crs)
            shown = _check_map_size(counts.n_records, m, map_max_points, epsilon)
        if epsilon is None:
            click.echo(f"Read {counts.n_records} records from {input_path} "
                       f"({points.crs.to_string()})")
        else:  # the exact count is what the DP size protects; terminal output gets pasted
            click.echo(f"Read {input_path} ({points.crs.to_string()}); the number of records "
                       "is not shown under --epsilon (the internal --report has it)")
        click.echo(f"Lattice: {describe_lattice(grid)}")
        if epsilon is not None and lattice.area_exposure not in (None, "area"):
            click.echo(f"Note: --area-exposure {io.printable(lattice.area_exposure)} must be "
                       "public data (a census population), never counts of the records: every "
                       "release follows it, whatever --epsilon", err=True)
        if map_path is not None and map_max_points is None and shown < maps.DEFAULT_MAX_POINTS:
            click.echo(f"Map: at most {shown:,} points per layer, so that its {m} releases fit "
                       f"a page ({maps.MAX_DRAWN:,} points and lines; --map-max-points sets it)")
        if region is None and not lattice.public_bounds:
            _echo_region_advice(grid)

        if epsilon is None:
            model = geosynth.PaivaModel(beta_prior=beta_prior, sampler=sampler)
            result = _paiva_release(counts, original, model, m, seed, run, progress, limits,
                                    weights)
        else:
            import shapely

            from geosynth.dp import dp_model
            from geosynth.synth.placement import warn_if_weights_follow_records

            # synthesize gives this warning from the records; dp_release has only their counts.
            warn_if_weights_follow_records(weights, grid, shapely.get_coordinates(
                original.geometry.to_numpy()), show_shares=False)  # numbers of the records
            result = _dp_release(counts, epsilon, public_total, m, run, progress,
                                 dp_model(sampler), weights)
        stop_if_interrupted(result["fit"])
        summary, r_hat = fit_diagnostics(result["fit"])
        _echo_convergence(r_hat, result["fit"])

        if map_path is not None:
            _step(progress, f"Drawing the review map {io.printable(map_path)}")
            # The model's columns only: the input's others (ids, incomes, dates) went into the
            # map's tooltips, and a date column made the map fail after the fit.
            columns = [*counts.attributes, *counts.covariates, original.geometry.name]
            # Under --epsilon no record may have been counted: the map of the DP releases
            # alone, as a public one (a map without the records was refused after the noise).
            counted = len(original) > 0
            review = maps.review_map(original[columns] if counted else None, result["internal"],
                                     fit=result["fit"], max_points=shown, offline=True,
                                     public=not counted)
            maps.save_map(review, map_path, outputs=outputs.outputs, private=True)
        if report_path is not None:
            # Under --epsilon the records may not stop a release (that it was made would tell
            # there are MIN_POINTS of them): too few, and the internal report has no coverage.
            from geosynth.metrics.utility import MIN_POINTS

            covered = outcome if epsilon is None or len(original) >= MIN_POINTS else None
            evaluation = None  # under --epsilon no record may have been counted
            # Said whatever was counted: under --epsilon its absence told that none was.
            _step(progress, "Measuring disclosure risk and utility for --report")
            if len(original):
                evaluation = geosynth.evaluate(original, result["internal"], grid, attributes,
                                               outcome=covered, seed=result["evaluate_seed"],
                                               linked=epsilon is None,
                                               rules=combining_rules(epsilon))
            notes = [] if covered == outcome else [
                f"no coverage of --outcome {outcome}: fewer than {MIN_POINTS} records were "
                "counted, too few for its random rectangles"]
            if evaluation is None:
                notes.append("no risk or utility: no record was counted (none held the "
                             "declared levels in a cell of the lattice)")
            report = _report(input_path, counts, grid, result, summary, r_hat, evaluation, run,
                             m, epsilon, dropped, notes)
            write_text(report_path, report, outputs=outputs, option="--report", private=True)
        if intensity_path is not None:
            _step(progress, f"Writing the intensity surface {io.printable(intensity_path)}")
            io.write_intensity_geotiff(result["fit"], given["--intensity-tif"],
                                       outputs=outputs.outputs)
        # Last: the release and its audit file are moved into place after the internal files.
        _step(progress, f"Writing {m} releases to {io.printable(out_path)}")
        io.write_release(given["--out"], result["public"], fit=result["fit"],
                         include_intensity=include_intensity, metadata=result["metadata"],
                         seeds=result["seeds"], original_index=points.index,
                         outputs=outputs.outputs, provenance=release_provenance(ctx, inputs))
        outputs.commit()

    click.echo(f"Wrote {out_path} ({m} releases, grid, metadata)")
    if result["seeds"] is not None:
        click.echo(f"Seeds: {io.audit_path(out_path)} (private, do not publish)")
    else:  # under --epsilon: no seed, but the inputs and options
        click.echo(f"Inputs and options: {io.audit_path(out_path)} (private, no seed; do not "
                   "publish)")
    if map_path is not None:
        click.echo(f"Wrote {map_path} (internal review map: shows the original points)")
    if report_path is not None:
        click.echo(f"Wrote {report_path} (internal report)")
    if intensity_path is not None:
        click.echo(f"Wrote {intensity_path} (posterior mean intensity, GeoTIFF)")


# ---------------------------------------------------------------------- steps
def _step(progress: bool, text: str) -> None:
    """Say on stderr which step a run is in, unless quiet (``geosynth -q``).

    Past the fit's progress bar a run of a million records spent minutes drawing, measuring
    and writing without a word.
    """
    if progress:
        click.echo(f"{text} ...", err=True)


def _one_or_list(names: list[str] | None) -> str | list[str] | None:
    """``["z"]`` -> ``"z"`` (the API's one-covariate form); several names stay a list."""
    return names[0] if names is not None and len(names) == 1 else names


def _check_options(lattice, epsilon, region_path, continuous, beta_prior,
                   levels_file, public_total, m, iterations, burn_in, thin, chains,
                   sampler, seed) -> None:
    lattice.check(region_path)
    check_run_options(iterations, burn_in, thin, chains, m)
    _check_dp_options(epsilon, region_path or lattice.areas_path, continuous, beta_prior,
                      levels_file, public_total, sampler, seed)


def _weights_table(path: str, grid):
    """Read the --weights raster for the lattice now, naming the option in a refusal."""
    from geosynth.rasters import read_weights

    with naming_weights(path):
        return read_weights(path, grid)


def _limits(specs, continuous) -> dict[str, tuple[float | None, float | None]] | None:
    """``--limit`` options as the ``limits`` of :func:`geosynth.synthesize`, checked now.

    A column limited twice, or one that is not a --continuous column, is refused before the
    data are read (after the fit it cost the whole run).
    """
    if not specs:
        return None
    names = [continuous] if isinstance(continuous, str) else list(continuous or [])
    limits = {}
    for column, ends in specs:
        if column in limits:
            raise click.UsageError(f"--limit gives {column!r} twice; give one range per column")
        if column not in names:
            having = (f"the --continuous columns are {','.join(names)}" if names else
                      "there is no --continuous column")
            raise click.UsageError(f"--limit {column}=...: {column!r} is not a --continuous "
                                   f"column ({having}); limit those columns only")
        limits[column] = ends
    return limits


def _check_dp_options(epsilon, region_path, continuous, beta_prior, levels_file,
                      public_total, sampler, seed) -> None:
    if epsilon is None:
        for option, value in (("--levels-file", levels_file), ("--public-total", public_total)):
            if value is not None:
                raise click.UsageError(f"{option} applies to differentially private releases "
                                       f"only; add --epsilon or drop {option}")
        return
    if seed is not None:  # was taken, with warnings: a release stating an epsilon it lacked
        raise click.UsageError(
            "--seed cannot be used with --epsilon: differentially private noise must come from "
            "fresh OS entropy, since whoever knows or guesses the seed can replay the noise and "
            "remove it; drop --seed (a DP release cannot be reproduced, by design)"
        )
    if region_path is None:
        raise click.UsageError(
            "--epsilon needs --region (or public --areas): without it the lattice bounds are "
            "the bounds of the confidential points, which the release would disclose outside "
            "the privacy guarantee; pass a public study region (e.g. the city boundary)"
        )
    if continuous is not None:
        named = continuous if isinstance(continuous, str) else ",".join(continuous)
        raise click.UsageError(
            f"--epsilon cannot release the continuous column(s) {named!r}: a DP release of "
            "continuous values is not supported yet; drop --continuous"
        )
    if beta_prior is not None:
        raise click.UsageError("--beta-prior models a --continuous column, which --epsilon "
                               "does not support; drop --beta-prior")
    if sampler == "block":
        raise click.UsageError("--sampler block has no noise-aware fit, which --epsilon "
                               "needs; use --sampler gibbs or mh")
    if levels_file is None:
        raise click.UsageError(
            "--epsilon needs --levels-file, the public levels of each attribute: levels taken "
            "from the data would disclose which occur, and checking the data against them "
            "would accept or refuse it on the records' values"
        )


def _prepare(points, grid, attributes, continuous, drop_outside, allow_identifying, levels,
             reported=False):
    """geosynth.prepare and, under --epsilon, what it dropped (None otherwise).

    Its messages reach the user through cli.messages (option names). With ``levels``
    (--epsilon) the preparation on the public domain, which refuses nothing on the records'
    values (--drop-outside and --allow-identifying do not apply). Its warning of the records it
    dropped counts them, and the records given: the number of records is what the DP size
    protects and terminal output gets pasted, so the terminal says only that some were dropped;
    the counts (returned) go to the internal --report (``reported``).
    """
    import geosynth
    from geosynth.errors import DataWarning

    if levels is not None:
        _require_keyword(geosynth.prepare, "levels", "--levels-file")
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            counts = geosynth.prepare(points, grid, attributes=attributes, levels=levels)
        dropped = []
        for warning in caught:
            if issubclass(warning.category, DataWarning):  # counts of records: kept back
                dropped.append(str(warning.message))
            else:
                warnings.warn_explicit(warning.message, warning.category, warning.filename,
                                       warning.lineno)
        if dropped:
            warnings.warn(
                "records outside the --levels-file levels or the lattice (or without a usable "
                "location) were dropped; a dropped record costs no privacy. How many is not "
                "shown under --epsilon (terminal output gets pasted), "
                + ("the internal --report has it" if reported else
                   "add --report FILE (internal) to see it"),
                DataWarning, stacklevel=2,
            )
        return counts, dropped
    options: dict[str, Any] = {}
    if allow_identifying:
        _require_keyword(geosynth.prepare, "allow_identifying", "--allow-identifying")
        options["allow_identifying"] = True
    return geosynth.prepare(points, grid, attributes=attributes, continuous=continuous,
                            outside="drop" if drop_outside else "error", **options), None


def _require_keyword(function, keyword: str, option: str) -> None:
    """Refuse ``option`` when the installed geosynth's ``function`` lacks ``keyword``."""
    if keyword not in inspect.signature(function).parameters:
        raise InputError(f"{option} is not supported by this installation of geosynth "
                         f"({function.__module__}.{function.__name__} has no {keyword}); "
                         "update geosynth or drop the option")


_LEVELS_EXAMPLE = '{"sex": ["f", "m"], "age_group": [1, 2, 3]}'
_MAX_LEVELS_BYTES = 16 << 20  # a domain of ~10⁶ levels; more is no attribute


def _map_points(map_max_points: int | None, m: int, epsilon: float | None) -> int | None:
    """Return the points per layer of the --map: --map-max-points (0: all), or the default.

    The default is :data:`maps.DEFAULT_MAX_POINTS`, lowered to what :data:`maps.MAX_DRAWN`
    holds over the map's layers (the records', each release's and, linked, each release's
    displacement lines): with it, 25 releases were refused until --map-max-points was given.
    """
    from geosynth import maps

    if map_max_points is not None:
        return map_max_points or None
    layers = m + 1 if epsilon is not None else 2 * m + 1
    return min(maps.DEFAULT_MAX_POINTS, maps.MAX_DRAWN // layers)


def _check_map_size(n_records: int, m: int, map_max_points: int | None,
                    epsilon: float | None) -> int | None:
    """Return the map's points per layer; refuse, before the fit, a --map too large for a page.

    The refusal is :func:`maps.check_drawn`'s: its releases hold about the records' number
    each, its internal layers the records and, linked, one line per point. Under --epsilon
    only public numbers may decide: the cap times the layers.
    """
    from geosynth import maps

    shown = _map_points(map_max_points, m, epsilon)
    if epsilon is None:
        maps.check_drawn([n_records] * m, n_records, shown, linked=True)
    elif shown is None or shown * (m + 1) > maps.MAX_DRAWN:
        raise InputError(
            f"--map-max-points: under --epsilon the map's size may depend on public numbers "
            f"only; give --map-max-points {maps.MAX_DRAWN // (m + 1):,} or fewer ({m} releases "
            "and the records' layer)"
        )
    return shown


def _check_declared_outcome(levels: dict[str, list], outcome: str, path: str) -> None:
    """Refuse an --outcome whose declared levels are not 0/1 or booleans (under --epsilon).

    The releases of a DP release take the declared levels: the coverage needs them binary.
    Judged on the records, whether the release was made told whether one held another value.
    """
    import pandas as pd

    from geosynth.io import printable
    from geosynth.metrics.utility import is_binary

    declared = levels.get(outcome, [])
    if not is_binary(pd.Series(declared)):
        raise InputError(
            f"--outcome: the levels of {printable(outcome)!r} in --levels-file "
            f"{printable(Path(path).name)} are {declared[:5]}, but the coverage needs a binary "
            "outcome; declare them as [0, 1] (numbers) or [false, true], or drop --outcome"
        )


def _warn_of_unused_levels(levels: dict[str, list], used: list[str | None], path: str) -> None:
    """Warn of columns --levels-file declares that no option uses (a public codebook's others).

    A name mistyped in --attributes, or a column left out of it, went unnoticed: the file's
    levels of it were read and dropped without a word.
    """
    from geosynth.io import printable

    unused = [name for name in levels if name not in used]
    if unused:
        shown = ", ".join(repr(printable(name)) for name in unused[:5])
        more = f" and {len(unused) - 5} more" if len(unused) > 5 else ""
        click.echo(f"Warning: --levels-file {printable(Path(path).name)} declares the levels of "
                   f"{shown}{more}, which neither --attributes nor --outcome names; they are "
                   "not used (add a column to --attributes to model it)", err=True)


def _read_levels(path: str, attributes: list[str]) -> dict[str, list]:
    from geosynth.io import read_bounded

    source = Path(path)
    try:
        text = read_bounded(source, _MAX_LEVELS_BYTES, f"--levels-file {source.name}").decode()
    except UnicodeDecodeError:
        raise InputError(f"--levels-file {source.name} is not a JSON text file (it is not "
                         f"UTF-8 text); give a JSON object such as {_LEVELS_EXAMPLE}") from None
    except OSError as err:
        raise InputError(f"cannot read --levels-file {path}: {err.strerror or err}") from err
    try:
        levels = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as err:
        where = (f" (line {err.lineno}, column {err.colno}: {err.msg})"
                 if isinstance(err, json.JSONDecodeError) else "")
        raise InputError(
            f"--levels-file {source.name} is not valid JSON{where}; give a JSON object mapping "
            f"each attribute to the list of its public levels, e.g. {_LEVELS_EXAMPLE}"
        ) from None
    if not isinstance(levels, dict) or not all(isinstance(v, list) for v in levels.values()):
        raise InputError(
            f"--levels-file {source.name} must hold a JSON object mapping each attribute to the "
            f"list of its public levels, e.g. {_LEVELS_EXAMPLE}"
        )
    empty = [a for a, values in levels.items() if not values]
    if empty:
        raise InputError(f"--levels-file {source.name} lists no level for {empty}; give every "
                         f"attribute its public levels, e.g. {_LEVELS_EXAMPLE}")
    missing = [a for a in attributes if a not in levels]
    if missing:
        raise InputError(f"--levels-file {source.name} has no levels for the --attributes "
                         f"{missing}; give the public levels of every attribute")
    return levels


def _echo_region_advice(grid) -> None:
    """Say what lattice bounds derived from the points reveal, and recommend --region."""
    unit = getattr(grid, "snap_unit", None)
    precision = ("to within about one cell" if unit is None else
                 f"to within {length_text(unit[0], grid.crs)} in x and "
                 f"{length_text(unit[1], grid.crs)} in y")
    click.echo(
        "Warning: no --region: the lattice bounds are derived from the confidential points "
        "(snapped outward), so the release reveals the extent of the points "
        f"{precision}; pass --region with a public study region (e.g. the city boundary) to "
        "reveal nothing about it", err=True,
    )


def _paiva_release(counts, original, model, m, seed, run, progress, limits=None,
                   weights=None) -> dict[str, Any]:
    import geosynth
    from geosynth._random import as_generator

    _, seeds = derive_seeds(seed, ["fit", "synthesize", "public", "evaluate"])
    seeds = _keyed_by_records(seeds, original, counts)
    click.echo(f"Fitting {model!r}: {describe_run(run)}", err=True)
    fit = model.fit(counts, seed=seeds["fit"], progress=progress, **run)
    _step(progress, f"Synthesizing {m} releases")
    internal = geosynth.synthesize(fit, original, m=m, seed=seeds["synthesize"],
                                   weights=weights, limits=limits)
    shuffle = as_generator(seeds["public"])
    public = [geosynth.to_public(r, seed=shuffle) for r in internal]
    return {"fit": fit, "internal": internal, "public": public, "seeds": seeds,
            "metadata": geosynth.ReleaseInfo(method="paiva"), "evaluate_seed": seeds["evaluate"],
            "ledger": None}


def _keyed_by_records(seeds: dict[str, int], original, counts) -> dict[str, int]:
    """Mix a digest of the released records into the seed of every step.

    A --seed is often small (7, 42, a year): from it alone an intruder re-derived the seed of
    each step (:func:`derive_seeds`) and, with it, the random streams of the fit and the
    synthesis (and, before :func:`geosynth.to_public` keyed its shuffle by the rows, the
    public row order). Keyed by the records' coordinates, attributes and continuous values
    (:func:`geosynth.synth.release.row_digest`), the seeds still reproduce a release from
    --seed and the same input, but not without the data. The master seed is kept; the keyed
    seeds go to the private audit file as before.

    Parameters
    ----------
    seeds : dict of str to int
        ``{"seed": master, step: derived seed, ...}`` from :func:`derive_seeds`.
    original : geopandas.GeoDataFrame
        The records released (points).
    counts : geosynth.data.CellCounts
        Their counts (``attributes`` and ``covariates`` name the released columns).

    Returns
    -------
    dict of str to int
        The same keys; every derived seed a 63-bit int of ``SeedSequence([seed, digest])``.
    """
    import numpy as np

    from geosynth.synth.release import row_digest

    columns = [*counts.attributes, *counts.covariates, original.geometry.name]
    words = row_digest(original[columns])
    keyed = {}
    for name, value in seeds.items():
        if name == "seed":
            keyed[name] = value
            continue
        state = np.random.SeedSequence([value, *words]).generate_state(1, dtype=np.uint64)
        keyed[name] = int(state[0] >> np.uint64(1))
    return keyed


def _dp_release(counts, epsilon, public_total, m, run, progress, model,
                weights=None) -> dict[str, Any]:
    from geosynth.dp import dp_release

    click.echo(f"Differentially private release, epsilon = {epsilon:g}: {describe_run(run)}",
               err=True)
    options: dict[str, Any] = {}
    if public_total is not None:
        _require_keyword(dp_release, "n_public", "--public-total")
        options["n_public"] = public_total
    result = dp_release(counts, epsilon, m, model=model, progress=progress, weights=weights,
                        **options, **run)  # no seed: _check_dp_options refused --seed
    info = result.info  # method, epsilon, the ledger, the size rule and n_public
    return {"fit": result.fit, "internal": result.releases, "public": result.releases,
            "seeds": None, "metadata": info, "evaluate_seed": None, "ledger": info.ledger}


def _echo_convergence(r_hat: float, fit) -> None:
    stopping = fit.stopping
    if stopping is not None:
        click.echo(f"Sampler {cli_message(stopping.describe())}")
        return  # a fit stopped at --max-seconds has warned, naming what has not converged
    described = describe_rhat(r_hat, fit)
    if fit.n_chains > 1 and described.startswith("not computable"):  # too few draws: a problem
        click.echo(f"Warning: R-hat max {described}", err=True)
    else:
        click.echo(f"R-hat max: {described}")
    if r_hat > DEFAULT_MAX_RHAT:
        click.echo(f"Warning: R-hat max {r_hat:.3f} > {DEFAULT_MAX_RHAT}: the chains have not "
                   "converged; raise --iterations and --burn-in, or use --iterations auto",
                   err=True)


def _rhat_limit(fit) -> float:
    """Return the R-hat above which the report calls the fit unconverged (``--max-rhat``: auto).

    The report judged an ``--iterations auto --max-rhat 1.1`` fit, converged by its own
    rule, "above 1.01: not converged".
    """
    return DEFAULT_MAX_RHAT if fit.stopping is None else fit.stopping.max_rhat


def _describe_fit(fit, run: dict[str, Any]) -> str:
    """Chains, sweeps, burn-in, thin and draws of the fit, for the report."""
    stopping = fit.stopping
    if stopping is None:
        return (f"{fit.n_chains} chain(s) x {run['n_iter']} sweeps (burn-in {run['burn_in']}, "
                f"thin {run['thin']}), {fit.n_draws} draws per chain")
    return (f"{fit.n_chains} chain(s), --iterations auto: {stopping.describe()}; "
            f"{stopping.checks} convergence checks took {stopping.check_seconds:.1f} s of "
            f"{stopping.seconds:.1f} s")


def _report(input_path, counts, grid, result, summary, r_hat, evaluation, run, m,
            epsilon, dropped=None, notes=()) -> str:
    fit = result["fit"]
    lines = [
        "# geosynth release report",
        "",
        "Internal document: it describes the confidential data; do not publish it.",
        "",
        f"- Input: `{input_path}`, {counts.n_records} records, attributes "
        f"{', '.join(counts.attributes)}"
        + ("" if not counts.covariates else f", continuous `{', '.join(counts.covariates)}`"),
        f"- Lattice: {describe_lattice(grid)}",
        f"- Model: `{fit.model!r}`, {_describe_fit(fit, run)}",
        f"- Releases: {m}",
        f"- R-hat max: {describe_rhat(r_hat, result['fit'])}"
        + ("" if not r_hat > _rhat_limit(fit) else f" (above {_rhat_limit(fit)}: not converged)"),
    ]
    if epsilon is not None:
        lines += [
            f"- Differential privacy: epsilon = {epsilon:g}, noise from fresh OS entropy",
            *(f"- Dropped before counting: {text}" for text in dropped or ()),
            *(f"- Note: {text}" for text in notes),
            "",
            "## Privacy ledger",
            "",
            "```json",
            json.dumps(result["ledger"], indent=2, default=str),
            "```",
        ]
    lines += ["", "## Fit summary", "", summary_block(summary),
              "## Risk and utility", ""]
    if epsilon is not None:
        lines += ["Differentially private records are not linked to the original records, so "
                  "only the unlinked measures apply.", ""]
    lines.append("None: see the notes above." if evaluation is None else evaluation.to_markdown())
    return "\n".join(lines)
