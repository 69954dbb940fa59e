import pytest

from geosynth import errors


@pytest.mark.parametrize(
    ("error", "builtin"),
    [
        (errors.InputError, ValueError),
        (errors.CRSError, ValueError),
        (errors.GridError, ValueError),
        (errors.MemoryLimitError, MemoryError),
        (errors.SamplerError, RuntimeError),
        (errors.BudgetExceededError, RuntimeError),
    ],
)
def test_errors_are_also_builtins(error, builtin):
    with pytest.raises(builtin, match="boom"):
        raise error("boom")
    with pytest.raises(errors.GeosynthError):
        raise error("boom")


def test_warnings_share_a_base():
    for warning in (errors.IsolatedCellWarning, errors.DataWarning, errors.PrivacyLeakWarning,
                    errors.ConvergenceWarning):
        assert issubclass(warning, errors.GeosynthWarning)
        assert issubclass(warning, UserWarning)
