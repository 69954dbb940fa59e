"""Run every benchmark in ``bench/`` and append the tables to ``bench/RESULTS.md``.

Usage::

    make bench                      # all benchmarks, bootstrapping .venv and .venv-pymc first
    python -m bench                 # all benchmarks
    python -m bench lattice         # only bench_lattice.py
    python -m bench --no-record     # print, do not append to RESULTS.md

Each ``bench/bench_*.py`` module exposes ``run() -> str`` returning a Markdown table.

The PyMC peer of ``bench_pymc`` is not installed in geosynth's venv: pymc pins pytensor, which
pins numba <= 0.65.1, while geosynth is benchmarked on its own numba. ``make bench`` creates a
separate virtualenv, ``.venv-pymc`` (``pip install "pymc>=5.10,<6"``), and passes its
interpreter as ``BENCH_PYMC_PYTHON``; see :data:`PEER_HELP`.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import os
import platform
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
PEER_HELP = """\
PyMC peer (benchmark `pymc`): PyMC runs in its own virtualenv, because pymc pins pytensor, which
pins numba <= 0.65.1, while geosynth is benchmarked on its own numba. `make bench` creates it
(.venv-pymc: python3 -m venv + pip install "pymc>=5.10,<6", reinstalled when the Makefile
changes) and passes its interpreter as BENCH_PYMC_PYTHON. By hand:

    make .venv-pymc/.installed-stamp
    BENCH_PYMC_PYTHON=.venv-pymc/bin/python python -m bench pymc

Without BENCH_PYMC_PYTHON the worker runs under this Python if pymc imports here, else under
.venv-pymc/bin/python if it exists; with no peer the pymc table says so and how to get it.
BENCH_PYMC_SIDES=10,20 limits the lattice sides (default 10,20,40: G = 100, 400, 1,600).
"""


def machine_description() -> str:
    """One line naming the CPU, core count and Python/numpy/numba versions."""
    import numba
    import numpy

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (
        f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}, "
        f"numpy {numpy.__version__}, numba {numba.__version__}"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="Run the benchmarks in bench/ and append their tables to bench/RESULTS.md.",
        epilog=PEER_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("names", nargs="*", help="benchmark names (bench_<name>.py); default all")
    parser.add_argument("--no-record", action="store_true", help="do not append to RESULTS.md")
    args = parser.parse_args(argv)
    names = args.names or sorted(p.stem[len("bench_"):] for p in HERE.glob("bench_*.py"))
    sections = []
    for name in names:
        module = importlib.import_module(f"bench.bench_{name}")
        print(f"## {name}", flush=True)
        table = module.run()
        print(table, flush=True)
        sections.append(f"### {name}\n\n{table}\n")
    if not args.no_record:
        command = "python -m bench " + " ".join(sys.argv[1:] if argv is None else argv)
        header = (
            f"## {dt.date.today().isoformat()} — `{command.strip()}`\n\n"
            f"Machine: {machine_description()}\n\n"
        )
        with open(HERE / "RESULTS.md", "a") as results:
            results.write("\n" + header + "\n".join(sections))


if __name__ == "__main__":
    main()
