"""Simulation-based calibration of the block sampler, and a planted error that it catches.

Same design and thresholds as ``test_sbc.py`` (Talts et al. 2018): parameters from the prior,
counts from the likelihood, ranks of the truth among thinned posterior draws must be uniform.
Run with the block moves alone (no single-site updates of the fields: ``HYBRID = False``) and
as shipped; the planted error flips the sign of the reverse proposal density in the
Metropolis–Hastings ratio, which the same check must reject.
"""

import pytest

from geosynth import PaivaModel
from geosynth.model import block
from tests.model.test_sbc import PRIORS, sbc_p_values

BLOCK = PaivaModel(priors=PRIORS, sampler="block")


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::geosynth.errors.DataWarning")
@pytest.mark.parametrize("hybrid", [False, True], ids=["blocks-only", "as-shipped"])
def test_block_sampler_is_calibrated(monkeypatch, hybrid):
    monkeypatch.setattr(block, "HYBRID", hybrid)
    for name, (p_value, histogram) in sbc_p_values(BLOCK).items():
        assert p_value > 0.001, f"SBC ranks of {name} not uniform: {histogram}, p = {p_value:.1e}"


@pytest.mark.slow
@pytest.mark.filterwarnings("ignore::geosynth.errors.DataWarning")
def test_sbc_catches_a_wrong_sign_in_the_mh_ratio(monkeypatch):
    monkeypatch.setattr(block, "HYBRID", False)
    monkeypatch.setattr(block, "PROPOSAL_SIGN", -1.0)
    p_values = {name: p for name, (p, _) in sbc_p_values(BLOCK).items()}
    assert min(p_values.values()) < 1e-6, p_values
