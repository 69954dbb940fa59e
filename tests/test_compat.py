"""geosynth._compat: arviz's one-chain shape warning is dropped only where geosynth asks."""

import subprocess
import sys

import pytest

SCRIPT = """
import contextlib, sys
import numpy as np
from geosynth._compat import import_arviz, quiet_arviz_shape_check
az = import_arviz()
one_chain = np.random.default_rng(0).normal(size=(1, 50))
block = quiet_arviz_shape_check() if sys.argv[1] == "quiet" else contextlib.nullcontext()
with block:
    print("r_hat:", az.rhat(one_chain), file=sys.stderr)
az._log.warning("another record")
"""


@pytest.mark.parametrize("quiet", [True, False])
def test_the_one_chain_shape_record_is_dropped_only_inside_the_block(quiet):
    # `geosynth release --chains 1` printed "arviz - WARNING - Shape validation failed: ...":
    # arviz logs through its own Logger("arviz"), outside logging.getLogger's registry (and
    # adds its stderr handler only where logging has none: a fresh process, as here).
    err = subprocess.run([sys.executable, "-c", SCRIPT, "quiet" if quiet else "loud"],
                         capture_output=True, text=True, check=True).stderr
    assert "r_hat: nan" in err and "another record" in err  # other records still pass
    assert ("Shape validation failed: input_shape: (1, 50)" in err) is not quiet
