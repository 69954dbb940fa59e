"""Seeds of DP computations: checked like every other seed, and always with a warning."""

import warnings

import numpy as np
import pytest

from geosynth.dp._randomness import private_generator, private_seed
from geosynth.errors import InputError, PrivacyLeakWarning


@pytest.mark.parametrize("seed", [1.5, True, "3"])
@pytest.mark.parametrize("draw", [private_seed, private_generator])
def test_bad_seed_types_are_refused_before_any_warning(draw, seed):
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        with pytest.raises(TypeError, match="seed must be None, an int >= 0"):
            draw(seed, where="test")


@pytest.mark.parametrize("draw", [private_seed, private_generator])
def test_negative_seed_is_refused(draw):
    with pytest.raises(InputError, match="negative int -1"):
        draw(-1, where="test")


def test_private_seed_of_each_seed_kind():
    with pytest.warns(PrivacyLeakWarning, match="test: a seed was given"):
        assert private_seed(7, where="test") == 7
    with pytest.warns(PrivacyLeakWarning):
        first = private_seed(np.random.SeedSequence(7), where="test")
    with pytest.warns(PrivacyLeakWarning):
        assert private_seed(np.random.SeedSequence(7), where="test") == first
    assert 0 <= first < 2**63
    with pytest.warns(PrivacyLeakWarning):
        assert 0 <= private_seed(np.random.default_rng(0), where="test") < 2**63
    assert 0 <= private_seed(None) < 2**63  # fresh entropy, no warning


def test_unseeded_generators_are_fresh_and_silent():
    """Without a seed each generator draws fresh OS entropy: no warning, no repeated stream."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        draws = [private_generator(None, where="test").integers(0, 2**63, size=4)
                 for _ in range(3)]
        seeds = {private_seed(None) for _ in range(3)}
    assert len({tuple(d) for d in draws}) == 3 and len(seeds) == 3
