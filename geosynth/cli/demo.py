"""``geosynth demo``: the main job on the bundled default data (the Nunes 2018 scenario)."""

from __future__ import annotations

from pathlib import Path

import click

from geosynth.cli.options import out_dir_option, seed_option

__all__ = ["demo"]


@click.command()
@out_dir_option
@seed_option
@click.option("--n", "n_records", type=click.IntRange(min=1), default=500, show_default=True,
              help="Number of simulated confidential records.")
@click.option("--grid", "grid_spec", default="10x10", show_default=True,
              help="Analysis lattice as ROWSxCOLS.")
@click.pass_context
def demo(
    ctx: click.Context, out_dir: str, seed: int | None, n_records: int, grid_spec: str
) -> None:
    """Run the main job on the thesis simulation scenario.

    Simulates the Nunes (2018) §3.1 scenario, builds the lattice and the cell counts per attribute
    combination, prints a summary table and writes a PNG of the counts.
    """
    from geosynth._atomic import atomic_path
    from geosynth.data import prepare
    from geosynth.datasets import paiva_scenario
    from geosynth.lattice import Grid
    from geosynth.plots import counts_figure

    shape = parse_grid_spec(grid_spec)
    seed = 2014 if seed is None else seed
    scenario = paiva_scenario(n=n_records, seed=seed)
    grid = Grid.regular(scenario.bounds, shape=shape, crs=scenario.crs)
    counts = prepare(scenario.data, grid, attributes=["y", "x1", "x2"], continuous="z")

    click.echo(f"Scenario: {counts.n_records} records, CRS {grid.crs.to_string()}")
    click.echo(f"Lattice: {shape[0]}x{shape[1]} cells ({grid.contiguity}), "
               f"{grid.n_components} component(s)")
    click.echo(counts.summary().to_string(index=False))

    out = Path(out_dir)
    png = out / "counts.png"
    figure = counts_figure(counts)
    with atomic_path(png) as tmp:
        figure.savefig(tmp, dpi=110)
    click.echo(f"Wrote {png}")


def parse_grid_spec(spec: str) -> tuple[int, int]:
    """Parse ``"ROWSxCOLS"`` (e.g. ``"20x20"``) into a shape tuple."""
    parts = spec.lower().split("x")
    if len(parts) != 2 or not all(p.strip().isdigit() and int(p) > 0 for p in parts):
        raise click.BadParameter(
            f"expected ROWSxCOLS with positive integers such as 20x20, got {spec!r}",
            param_hint="--grid",
        )
    return int(parts[0]), int(parts[1])
