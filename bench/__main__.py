"""Run every benchmark in ``bench/`` and append the tables to ``bench/RESULTS.md``.

Usage::

    make bench                      # all benchmarks, bootstrapping .venv and .venv-pymc first
    python -m bench                 # all benchmarks
    python -m bench lattice         # only bench_lattice.py
    python -m bench --no-record     # print, do not append to RESULTS.md

Each ``bench/bench_*.py`` module exposes ``run() -> str`` returning a Markdown table, and
may expose ``parse_options()``, which reads its options from the environment: every name
and those options are checked before the first benchmark runs. When a benchmark fails,
the tables of those that finished are still appended, with a line saying where it stopped.

The peers of ``bench_pymc`` (PyMC 6 with its default NUTS, and nutpie) are not installed in
geosynth's venv: pymc pins its own pytensor and numba, while geosynth is benchmarked on its own
numba, and PyMC >= 6 needs Python >= 3.12. ``make bench`` creates a separate virtualenv,
``.venv-pymc``, from the first Python >= 3.12 it finds (``PYMC_PYTHON``), installs the newest
``pymc``, ``nutpie`` and ``arviz`` there, and passes its interpreter as ``BENCH_PYMC_PYTHON``;
see :data:`PEER_HELP`.
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
PyMC peer (benchmark `pymc`): PyMC 6 (default NUTS) and nutpie run in their own virtualenv,
because pymc pins its own pytensor and numba while geosynth is benchmarked on its own numba, and
PyMC >= 6 needs Python >= 3.12. `make bench` creates it (.venv-pymc: PYMC_PYTHON -m venv +
pip install --upgrade "pymc>=6.4" "nutpie>=0.16" arviz, redone when the Makefile changes;
PYMC_PYTHON defaults to the first of python3.13, python3.12 that runs) and passes its
interpreter as BENCH_PYMC_PYTHON. By hand:

    make .venv-pymc/.installed-stamp
    BENCH_PYMC_PYTHON=.venv-pymc/bin/python python -m bench pymc

Without BENCH_PYMC_PYTHON the worker runs under this Python if pymc imports here, else under
.venv-pymc/bin/python if it exists; with no peer the pymc table says so and how to get it.
BENCH_PYMC_ARGS passes options to it, e.g. BENCH_PYMC_ARGS="--quick --sizes 400,1600"
(`python -m bench.bench_pymc --help` lists them: --sizes, --auto-sizes, --quick, --samplers,
--peers, --max-seconds, --seeds). `python -m bench cold` measures the cold start (fresh
numba cache).
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


def benchmark_names() -> list[str]:
    """Names of the benchmarks in ``bench/`` (``bench_<name>.py``), sorted."""
    return sorted(p.stem[len("bench_"):] for p in HERE.glob("bench_*.py"))


def chosen_benchmarks(parser: argparse.ArgumentParser, names: list[str]) -> list[str]:
    """The benchmarks ``names`` asks for (all when empty); a parser error for unknown ones.

    ``bench_lattice`` and ``bench_lattice.py`` are accepted for ``lattice``; each name runs
    once. Checked before any benchmark runs, so a typo does not end an hours-long run.
    """
    available = benchmark_names()
    chosen = [n.removesuffix(".py").removeprefix("bench_") for n in names] or available
    unknown = [n for n in chosen if n not in available]
    if unknown:
        parser.error(f"unknown benchmark {', '.join(map(repr, unknown))}; choose among "
                     f"{', '.join(available)} (the files bench/bench_<name>.py)")
    return list(dict.fromkeys(chosen))


def _record(command: str, sections: list[str], stopped: str = "") -> None:
    header = (
        f"## {dt.date.today().isoformat()} — `{command.strip()}`\n\n"
        f"Machine: {machine_description()}\n\n"
    )
    with open(HERE / "RESULTS.md", "a") as results:
        results.write("\n" + header + "\n".join(sections) + stopped)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description="Run the benchmarks in bench/ and append their tables to bench/RESULTS.md.",
        epilog=PEER_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("names", nargs="*", help="benchmark names (bench_<name>.py); default all")
    parser.add_argument("--no-record", action="store_true", help="do not append to RESULTS.md")
    args, extra = parser.parse_known_args(argv)
    if extra:
        parser.error(f"unrecognized arguments: {' '.join(extra)}; a benchmark's own options go "
                     "in its environment variable, e.g. BENCH_PYMC_ARGS=\"--quick\" python -m "
                     "bench pymc (python -m bench.bench_<name> --help lists them)")
    names = chosen_benchmarks(parser, args.names)
    modules = {name: importlib.import_module(f"bench.bench_{name}") for name in names}
    for module in modules.values():  # options read from the environment: refuse them now
        if hasattr(module, "parse_options"):
            module.parse_options()
    command = "python -m bench " + " ".join(sys.argv[1:] if argv is None else argv)
    sections = []
    for name, module in modules.items():
        print(f"## {name}", flush=True)
        try:
            table = module.run()
        except BaseException as error:  # keep the tables of the benchmarks that finished
            if sections and not args.no_record:
                first = (str(error).strip().splitlines() or [""])[0]
                _record(command, sections,
                        f"\n(stopped at `{name}`: {type(error).__name__}: {first})\n")
            raise
        print(table, flush=True)
        sections.append(f"### {name}\n\n{table}\n")
    if not args.no_record:
        _record(command, sections)


if __name__ == "__main__":
    main()
