"""Bit-for-bit behaviour of fit, synthesize, evaluate and a DP release, pinned before refactors.

The outputs were recorded by ``python -m tests.golden.scenario`` (see its docstring); a
structural change of the code must reproduce every array exactly. Recording and test both run the
scenario in a child process on the pinned numerical platform of that module, so the recording
does not depend on the kernels OpenBLAS picks for the CPU; on a CPU without AVX2 and FMA, or off
x86-64, the comparison is skipped, saying why.
"""

import numpy as np
import pytest

from tests.golden.scenario import OUTPUTS, compute_pinned, load_outputs, platform_unsupported


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    reason = platform_unsupported()
    if reason:
        pytest.skip(reason)
    path = tmp_path_factory.mktemp("golden") / "outputs.npz"
    compute_pinned(path)
    return load_outputs(path)


@pytest.fixture(scope="module")
def recorded():
    return load_outputs(OUTPUTS)


def test_same_outputs_as_recorded(outputs, recorded):
    assert sorted(outputs) == sorted(recorded)


@pytest.mark.parametrize("group", ["counts", "fit_plain", "fit_beta", "release_plain",
                                   "public_plain", "release_beta", "public_beta",
                                   "evaluate_plain", "evaluate_beta", "dp_release"])
def test_bitwise_identical(outputs, recorded, group):
    names = [n for n in recorded if n.split("/")[0].startswith(group)]
    assert names, f"no recorded output of {group}"
    for name in names:
        np.testing.assert_array_equal(outputs[name], recorded[name], err_msg=name, strict=True)
