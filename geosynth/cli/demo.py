"""``geosynth demo``: the main job on the thesis scenario (Nunes 2018, §3.1), end to end."""

from __future__ import annotations

from pathlib import Path

import click

from geosynth.cli.helpers import (
    RunOutputs,
    check_outputs,
    derive_seeds,
    describe_lattice,
    describe_rhat,
    fit_diagnostics,
    save_figure,
    show_progress,
    stop_if_interrupted,
    summary_block,
    text_block,
    write_text,
)
from geosynth.cli.options import DEFAULT_MAX_RHAT, GridSpec, out_dir_option, overwrite_option

__all__ = ["demo", "ADVICE", "MAX_RECORDS"]

#: Seed of the demo when --seed is not given: the demo is reproducible.
DEFAULT_SEED = 2014
#: MCMC sweeps per chain (burn-in a quarter of them, thin 4): R-hat below 1.01 on the default
#: scenario (1.000 printed), and the whole demo runs in well under 2 minutes on 2 cores, numba
#: compilation of a fresh install included (the sampling itself takes seconds).
DEFAULT_ITERATIONS = 6000
THIN = 4
CHAINS = 2
M = 5
#: The fewest sweeps whose kept draws (a quarter burnt, thin THIN, CHAINS chains) give the M
#: releases M distinct draws.
MIN_ITERATIONS = next(n for n in range(1, 10_000) if CHAINS * ((n - n // 4) // THIN) >= M)
#: The fewest records of --n: with 2 to 20 the run failed, most often after the fit, with
#: advice the demo cannot follow (fewer attributes, --crs, min_points).
MIN_RECORDS = 100
#: The most records of --n. The evaluation's Ripley's L compares every pair of records of a
#: combination, so its time grows with the square of --n: the whole demo took 2 minutes at
#: 10,000 records (2 cores, 0.75 GB), an evaluation 2.5 minutes at 20,000, and the range's old
#: top, 10,000,000, ended in a MemoryError of the simulation under a 4 GB limit (and would
#: have run for months).
MAX_RECORDS = 10_000
ATTRIBUTES = ["y", "x1", "x2"]
CONTINUOUS = "z"
OUTCOME = "y"
METHODS = {"paiva": "Paiva", "naive": "Naive"}
#: The library's advice (as the message layer has rewritten it for release's options) -> what
#: the demo, whose attributes, continuous column, releases and lattice are fixed, offers instead.
#: The warnings named --cell-size and a region (the lattice's isolated cells, which only
#: --grid 1x1 has here), coarser attributes (combinations with fewer than three cells of 3
#: records at a small --n) and, where no combination has three, another lattice or no
#: continuous column, none of which the demo has.
ADVICE = {
    "a smaller --cell-size (a single cell has nothing to link to)":
        "a --grid of more than one cell (a 1x1 lattice's single cell has no neighbour)",
    "coarsen the lattice or the attributes that make them rare if that association matters":
        "raise --n, so that every combination holds more records",
    "use a lattice whose cells hold 3 or more records of a combination in at least 3 "
    "places, or drop the column": "use a --grid of more cells, or raise --n",
}
#: Files under figures/ (the evaluation figures are "<method>_points" and "<method>_intervals").
FIGURES = ["trace", "intensity"] + [f"{m}_{kind}" for m in METHODS for kind in ("points",
                                                                               "intervals")]


@click.command(short_help="Run the whole pipeline on the simulated thesis scenario.")
@out_dir_option
@click.option("--maps", "maps_dir", type=click.Path(file_okay=False), default=None,
              help="Directory of the review map (default: OUT/maps).")
@click.option("--seed", type=click.IntRange(min=0), default=DEFAULT_SEED, show_default=True,
              help="Seed of the simulated data and of every random step; the same seed (with "
              "the same --n and --grid) gives the same releases, report and figures (the "
              "files' creation times and the map's element ids differ). The derived seeds go "
              "to the private audit file. The demo's data are simulated from this seed and "
              "are not confidential: its release alone finds the seed (2014 among 0 to "
              "2,999), and with it the data.")
@click.option("--n", "n_records", type=click.IntRange(min=MIN_RECORDS, max=MAX_RECORDS),
              default=500, show_default=True,
              help=f"Number of simulated confidential records, from {MIN_RECORDS} (fewer "
              "leave the 12 attribute combinations and the coverage rectangles nearly empty) "
              f"to {MAX_RECORDS:,} (the evaluation's time grows with the square of --n: about "
              "2 minutes at the top).")
@click.option("--grid", "grid_shape", type=GridSpec(), metavar=GridSpec.name, default="10x10",
              show_default=True,
              help="Analysis lattice as ROWSxCOLS.")
@click.option("--iterations", type=click.IntRange(min=MIN_ITERATIONS), default=DEFAULT_ITERATIONS,
              hidden=True, help="MCMC sweeps per chain (burn-in a quarter), e.g. to shorten tests.")
@overwrite_option
@click.pass_context
def demo(
    ctx: click.Context,
    out_dir: str,
    maps_dir: str | None,
    seed: int,
    n_records: int,
    grid_shape: tuple[int, int],
    iterations: int,
    overwrite: bool,
) -> None:
    """Run the main job on the thesis simulation scenario.

    Simulates the confidential data of Nunes (2018, §3.1: attributes y, x1, x2 and continuous
    z), fits the Paiva et al. (2014) model with a normal prior on the effect of z (2 chains),
    draws 5 releases and compares their disclosure risk and utility with the Naive baseline
    (a uniform point in each record's own cell). Writes

    \b
      OUT/release.gpkg      the 5 public releases, lattice and metadata
      OUT/release.gpkg.audit.json
                            the seeds of every step (private)
      OUT/report.md         both methods' tables side by side, with
      OUT/figures/*.png     trace plot, intensity, original vs synthetic points, intervals
      MAPS/review.html      interactive review map (default MAPS = OUT/maps)

    and prints a short summary. The demo is reproducible: the default --seed is 2014. Existing
    files are refused unless --overwrite is given. All files are written together at the end
    (the audit file, report, figures and map readable by their owner only): an interrupted
    (Ctrl-C) or failed run writes nothing.
    """  # noqa: D301 (click's \b keeps the file list as written)
    import geosynth
    from geosynth import io

    for option, value in (("--out", out_dir), ("--maps", maps_dir)):
        if value is not None and not value.strip():  # Path("") is the current folder
            raise click.BadParameter("give a folder name, not an empty text", param_hint=option)
    out = Path(out_dir)
    maps_path = (out / "maps" if maps_dir is None else Path(maps_dir)) / "review.html"
    release_path = out / "release.gpkg"
    figure_paths = {name: out / "figures" / f"{name}.png" for name in FIGURES}
    outputs = {"--out": release_path, "audit file of --out": io.audit_path(release_path),
               "report of --out": out / "report.md", "--maps": maps_path,
               **{f"figure {name} of --out": path for name, path in figure_paths.items()}}
    check_outputs(outputs, overwrite)
    _refuse_nested(outputs)
    # Warnings and errors give the demo's advice, not release's (see ADVICE).
    ctx.ensure_object(dict).setdefault("names", {}).update(ADVICE)

    with RunOutputs(overwrite) as staged:
        for name, path in outputs.items():  # every folder is checked before the fit
            staged.check_folder(name, path)
        result = _run(seed, n_records, grid_shape, iterations, show_progress(ctx))
        review = _review_map(result)
        figures = _figures(result)
        report = out / "report.md"
        text = _report(result, figure_paths, report.parent)

        from geosynth import maps

        maps.save_map(review, maps_path, outputs=staged.outputs, private=True)
        for name, figure in figures.items():
            save_figure(figure, figure_paths[name], outputs=staged,
                        option=f"figure {name} of --out", private=True)
        write_text(report, text, outputs=staged, option="report of --out", private=True)
        # Last: the release and its audit file are moved into place after the internal files.
        info = geosynth.ReleaseInfo(data="simulated: geosynth.datasets.paiva_scenario "
                                    f"(Nunes 2018, section 3.1), n = {n_records}")
        io.write_release(release_path, result["public"], fit=result["fit"], metadata=info,
                         seeds=result["seeds"], original_index=result["data"].index,
                         outputs=staged.outputs)
        staged.commit()
    _echo_summary(result, release_path, report, maps_path)


def _refuse_nested(outputs: dict[str, Path]) -> None:
    """Refuse a --maps folder that is one of the files of --out (or lies inside one).

    ``--maps OUT/release.gpkg`` put the map in a folder named like the release: the run
    failed after the whole fit, naming no option.
    """
    resolved = {name: path.resolve() for name, path in outputs.items()}
    for name, path in resolved.items():
        for other, file in resolved.items():
            if file in path.parents:
                raise click.BadParameter(
                    f"{name} {outputs[name]} would lie inside {file}, which is the {other} "
                    "file of this run; choose another --maps folder", param_hint="--maps")


def _run(seed: int, n_records: int, shape: tuple[int, int], iterations: int,
         progress: bool) -> dict:
    """Simulate, fit, synthesize and evaluate; return everything the outputs need."""
    import geosynth
    from geosynth._random import as_generator
    from geosynth.datasets import paiva_scenario

    _, seeds = derive_seeds(seed, ["fit", "synthesize", "naive", "public", "evaluate"])
    scenario = paiva_scenario(n=n_records, seed=seed)
    data = scenario.data
    grid = geosynth.Grid.regular(scenario.bounds, shape=shape, crs=scenario.crs)
    counts = geosynth.prepare(data, grid, attributes=ATTRIBUTES, continuous=CONTINUOUS)
    model = geosynth.PaivaModel(beta_prior="normal")
    run = {"n_iter": iterations, "burn_in": iterations // 4, "thin": THIN, "chains": CHAINS}
    click.echo(f"Fitting {model!r}: {CHAINS} chains x {iterations} sweeps", err=True)
    fit = model.fit(counts, seed=seeds["fit"], progress=progress, **run)
    stop_if_interrupted(fit)
    releases = {
        "paiva": geosynth.synthesize(fit, data, m=M, seed=seeds["synthesize"]),
        "naive": geosynth.naive_synthesize(data, grid, m=M, seed=seeds["naive"]),
    }
    # The same random rectangles for both methods (one seed), so their coverage is comparable.
    evaluations = {
        method: geosynth.evaluate(data, internal, grid, ATTRIBUTES, outcome=OUTCOME,
                                  seed=seeds["evaluate"])
        for method, internal in releases.items()
    }
    shuffle = as_generator(seeds["public"])
    public = [geosynth.to_public(r, seed=shuffle) for r in releases["paiva"]]
    summary, r_hat = fit_diagnostics(fit)
    return {"seed": seed, "n": n_records, "shape": shape, "seeds": seeds, "data": data,
            "grid": grid, "counts": counts,
            "fit": fit, "run": run, "releases": releases, "evaluations": evaluations,
            "shown": _shown(evaluations), "public": public, "summary": summary, "r_hat": r_hat}


def _review_map(result: dict):
    from geosynth import maps

    return maps.review_map(result["data"], result["releases"]["paiva"], fit=result["fit"],
                           combination=_largest_combination(result["counts"]), offline=True)


def _largest_combination(counts) -> int:
    return int(counts.combos["n_records"].to_numpy().argmax())


def _figures(result: dict) -> dict:
    """Draw the report's figures, by name (see :data:`FIGURES`)."""
    from geosynth.plots import intensity_figure

    fit = result["fit"]
    figures = {"trace": fit.trace_plot(),
               "intensity": intensity_figure(fit, _largest_combination(result["counts"]))}
    for method, evaluation in result["evaluations"].items():
        points, intervals = evaluation.plots()
        figures[f"{method}_points"] = points
        figures[f"{method}_intervals"] = intervals
    return figures


def side_by_side(tables: dict[str, object]) -> object:
    """One table of several methods' tables: shared equal columns once, the others per method.

    Tables whose index differ, or that would get more than 8 columns, are stacked instead, with
    the method as the outer row level.
    """
    import pandas as pd

    frames = list(tables.values())
    first = frames[0]
    aligned = all(frame.index.equals(first.index) for frame in frames)
    shared = [c for c in first.columns
              if aligned and all(c in f.columns and f[c].equals(first[c]) for f in frames[1:])]
    own = {name: [c for c in frame.columns if c not in shared] for name, frame in tables.items()}
    if not aligned or len(shared) + sum(len(c) for c in own.values()) > 8:
        return pd.concat(tables, names=["method"])
    columns = {("", c): first[c] for c in shared}
    for name, frame in tables.items():
        columns.update({(name, c): frame[c] for c in own[name]})
    return pd.DataFrame(columns)


def _report(result: dict, figures: dict[str, Path], base: Path) -> str:
    from geosynth.evaluation import suppression_note

    counts, grid, fit, run = result["counts"], result["grid"], result["fit"], result["run"]

    def image(name: str, caption: str) -> str:
        return f"![{caption}]({figures[name].relative_to(base).as_posix()})"

    r_hat = result["r_hat"]
    lines = [
        "# geosynth demo: the Nunes (2018) scenario",
        "",
        "Internal document: it describes the confidential data (here simulated); do not "
        "publish it.",
        "",
        f"Simulated confidential data (Nunes 2018, §3.1), seed {result['seed']}: run "
        f"`{_command(result)}` again for the same releases, tables and figures. The seeds "
        "of each step are in the private audit file `release.gpkg.audit.json`, never in the "
        "release.",
        "",
        f"- Records: {counts.n_records}; attributes {', '.join(ATTRIBUTES)}; continuous "
        f"`{CONTINUOUS}`; outcome `{OUTCOME}`",
        f"- Lattice: {describe_lattice(grid)}",
        f"- Model: `{fit.model!r}`, {fit.n_chains} chains x {run['n_iter']} sweeps (burn-in "
        f"{run['burn_in']}, thin {run['thin']}), {fit.n_draws} draws per chain",
        f"- R-hat max: {describe_rhat(r_hat, fit)}"
        + (f" (above {DEFAULT_MAX_RHAT}: not converged)" if r_hat > DEFAULT_MAX_RHAT else ""),
        f"- Releases: {M} per method; Paiva releases published in `release.gpkg`; Naive "
        "(a uniform point in each record's own cell) is the baseline",
        "",
        "## Model fit",
        "",
        image("trace", "Trace plot"),
        "",
        image("intensity", "Observed counts and posterior mean intensity"),
        "",
        summary_block(result["summary"]),
        "## Risk and utility: Paiva vs Naive",
        "",
        "Distances in metres. Smaller matched distances mean higher disclosure risk; the "
        "pattern (Ripley's L) distance is lower for releases closer to the original pattern; "
        "coverage is the mean overlap of the outcome's intervals over random rectangles.",
        "",
    ]
    shown = result["shown"]
    for name in shown["paiva"]:
        table = side_by_side({METHODS[m]: shown[m][name] for m in METHODS})
        lines += [f"### {name.replace('_', ' ')}", "", text_block(table)]
        notes = {suppression_note(name, result["evaluations"][m].tables[name]) for m in METHODS}
        lines += [f"{note}\n" for note in sorted(notes) if note]
    lines += ["## Figures", ""]
    for method, label in METHODS.items():
        lines += [f"### {label}", "",
                  image(f"{method}_points", f"{label}: original and release 1 points"), "",
                  image(f"{method}_intervals", f"{label}: intervals"), ""]
    return "\n".join(lines)


def _shown(evaluations: dict) -> dict[str, dict]:
    """Each method's tables as text outputs show them, those both methods have.

    Through :func:`geosynth.evaluation.shown_tables`, as ``geosynth evaluate`` and the release
    report show them: the demo's report and summary printed the distances of combinations of
    one record (one person's distance to the public synthetic points), and a mean row that
    averaged them in.
    """
    from geosynth.evaluation import shown_tables

    names = [n for n in evaluations["paiva"].tables if n in evaluations["naive"].tables]
    return {method: {name: table for name, table in shown_tables(evaluations[method].tables)
                     .items() if name in names} for method in METHODS}


def _command(result: dict) -> str:
    """Return the ``geosynth demo`` command that repeats this run (--out and --maps aside)."""
    rows, cols = result["shape"]
    words = ["geosynth demo", f"--seed {result['seed']}", f"--n {result['n']}",
             f"--grid {rows}x{cols}"]
    if result["run"]["n_iter"] != DEFAULT_ITERATIONS:
        words.append(f"--iterations {result['run']['n_iter']}")
    return " ".join(words)


def _echo_summary(result: dict, release_path: Path, report: Path, maps_path: Path) -> None:
    import pandas as pd

    from geosynth import io

    counts, grid = result["counts"], result["grid"]
    click.echo(f"Scenario: {counts.n_records} records (Nunes 2018), seed {result['seed']}, "
               f"CRS {grid.crs.to_string()}")
    click.echo(f"Lattice: {describe_lattice(grid)}")
    click.echo(f"R-hat max: {describe_rhat(result['r_hat'], result['fit'])}")
    if result["r_hat"] > DEFAULT_MAX_RHAT:
        click.echo(f"Warning: R-hat above {DEFAULT_MAX_RHAT}: the chains have not converged",
                   err=True)
    shown = result["shown"]
    mean_rows = pd.DataFrame({
        label: _mean_row(shown[method]["distance_risk"]) for method, label in METHODS.items()
    }).T
    click.echo("Distance risk, mean over combinations (metres):")
    click.echo(mean_rows.to_string(float_format="{:,.1f}".format))
    click.echo("Wrote:")
    click.echo(f"  {release_path}  ({M} public Paiva releases, grid, metadata)")
    click.echo(f"  {io.audit_path(release_path)}  (seeds; private)")
    click.echo(f"  {report}  (figures in {report.parent / 'figures'})")
    click.echo(f"  {maps_path}  (internal review map)")


def _mean_row(table):
    """Return the "mean" row of a distance-risk table (tuple labels for several attributes)."""
    labels = [label for label in table.index
              if label == "mean" or (isinstance(label, tuple) and label[0] == "mean")]
    return table.loc[labels[-1]]
