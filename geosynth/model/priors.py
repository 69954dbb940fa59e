"""Prior hyperparameters of the Paiva et al. (2014) model (Nunes 2018, eqs. 2.4–2.9, 2.20–2.21)."""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass

import numpy as np

from geosynth.errors import InputError

__all__ = ["Priors", "HYPERPARAMETER_RANGE", "MAX_LEVEL_VARIANCE"]

#: Smallest and largest value of every hyperparameter (Gamma shapes and rates; the variances of
#: levels stop at :data:`MAX_LEVEL_VARIANCE`): a rate of 10⁻⁶ puts the prior mean of a
#: precision at 10⁶ times its shape.
HYPERPARAMETER_RANGE = (1e-6, 1e6)
#: Largest variance of the Normal priors on levels (``mu_var``, ``alpha_var``, ``level_var``,
#: ``beta_var``): a prior standard deviation of 100 on the log scale. The data identify only
#: sums of levels (μ plus θ's mean in each component, α_kj plus φ_kj's mean): their
#: differences move by their priors alone. With ``mu_var`` and ``level_var`` both 10⁶, inside
#: :data:`HYPERPARAMETER_RANGE`, μ and θ's mean wandered apart by ±1,000 and e^η of a part of
#: η overflowed: every fit failed with a SamplerError that named the counts, not the priors.
MAX_LEVEL_VARIANCE = 1e4
_LEVEL_VARIANCES = ("mu_var", "alpha_var", "level_var", "beta_var")


def _finite(value: numbers.Real) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an int beyond float64, e.g. 10**400
        return False


@dataclass(frozen=True)
class Priors:
    """Vague, proper priors of the intensity model.

    Parameters
    ----------
    mu_var : float, default 100
        Variance ``v_μ`` of the Normal prior on the intercept μ (eq. 2.5). This and the other
        variances of levels (``alpha_var``, ``level_var``, ``beta_var``) are at most
        :data:`MAX_LEVEL_VARIANCE` (10⁴); the other hyperparameters lie in
        :data:`HYPERPARAMETER_RANGE`.
    alpha_var : float, default 100
        Variance ``v_α`` of the Normal prior on every attribute effect α_kj (eq. 2.6).
    level_var : float, default 100
        Variance of the Normal prior on the mean of each ICAR field (θ, every φ_kj) within each
        connected component. The ICAR density is flat along per-component constants; this prior
        makes the joint prior proper so that every Gibbs step, including the re-centring move,
        is an exact draw. With one component the identified intercept μ + mean(θ) therefore has
        prior variance ``mu_var + level_var`` (likewise α_kj + mean(φ_kj)).
    beta_var : float, default 100
        Variance ``v_β`` of the Normal prior on β_i (eq. 2.20); with the ICAR prior (eq. 2.21), the
        variance of the Normal prior on β's mean within each component.
    theta_shape, theta_rate : float, default 1, 0.1
        Gamma(shape, rate) prior of the ICAR precision τ_θ (eq. 2.7): prior mean 10, 95% between
        0.25 and 37. The ICAR is not scaled (as in the thesis; Sørbye & Rue 2014 scale it), so
        what τ_θ means depends on the lattice: on a 10 × 10 queen lattice neighbouring log
        intensities differ by 0.54/√τ_θ in root mean square (0.74/√τ_θ with rook), about 0.09
        to 1.1 over that range (this said 0.16 to 2, the conditional spread 1/√τ_θ). The
        thesis recommends "vague" Gamma priors without values; rate 0.01 (BUGS' habit) puts
        mass on precisions of several hundred, where weakly observed fields are flat and the
        chains mix badly, with no gain in fit on the thesis scenario.
    phi_shape, phi_rate : float, default 1, 0.1
        Gamma prior of every τ_φkj (eq. 2.8).
    eps_shape, eps_rate : float, default 1, 0.01
        Gamma prior of τ_ε, the precision of the cell-by-combination error ε_ib (eq. 2.9).
    beta_shape, beta_rate : float, default 1, 0.1
        Gamma prior of τ_β under the ICAR prior for β.
    """

    mu_var: float = 100.0
    alpha_var: float = 100.0
    level_var: float = 100.0
    beta_var: float = 100.0
    theta_shape: float = 1.0
    theta_rate: float = 0.1
    phi_shape: float = 1.0
    phi_rate: float = 0.1
    eps_shape: float = 1.0
    eps_rate: float = 0.01
    beta_shape: float = 1.0
    beta_rate: float = 0.1

    def __post_init__(self) -> None:
        low, high = HYPERPARAMETER_RANGE
        for name, value in asdict(self).items():
            if isinstance(value, bool) or not isinstance(value, numbers.Real) \
                    or not _finite(value) or value <= 0:  # True would mean 1
                raise InputError(
                    f"Priors.{name} must be a finite positive number, got {value!r}; the "
                    "defaults are vague but proper"
                )
            top = MAX_LEVEL_VARIANCE if name in _LEVEL_VARIANCES else high
            if not low <= value <= top:  # 1e300 failed deep in the sampler, naming no prior
                raise InputError(
                    f"Priors.{name} = {value!r} is outside [{low:g}, {top:g}]: the sampler's "
                    "updates overflow or stall at such scales, and no prior on log intensities "
                    f"needs one; the default is {getattr(Priors, name):g}"
                )

    def to_array(self) -> np.ndarray:
        """Return the hyperparameters as the float64 vector the numba kernels take."""
        return np.array(list(asdict(self).values()), dtype=np.float64)

    def to_dict(self) -> dict[str, float]:
        """Plain dictionary (for release metadata)."""
        return {k: float(v) for k, v in asdict(self).items()}
