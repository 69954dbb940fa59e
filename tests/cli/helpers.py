"""Helpers of the CLI tests."""

from click.testing import CliRunner

from geosynth.cli import cli

#: MCMC settings small enough for tests (the outputs are checked, not their quality).
FAST = ["--iterations", "40", "--burn-in", "10", "--thin", "2", "--m", "2"]


def run(*args):
    """Invoke ``geosynth -q ARGS`` in-process; stdout and stderr are both in ``.output``."""
    return CliRunner().invoke(cli, ["-q", *map(str, args)])


def assert_refused(result, *fragments):
    """Exit 2 through click (no uncaught exception), a message with every fragment."""
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    assert "Error:" in result.output
    for fragment in fragments:
        assert fragment in result.output
