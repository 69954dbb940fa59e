"""Differential privacy layers on top of the geographic generator.

- :mod:`.mechanisms`: Laplace, geometric (discrete Laplace), analytic Gaussian and exponential
  mechanisms, drawing noise with OpenDP's exact samplers (Machado 2019, lecture slides on DP
  mechanisms).
- :mod:`.accountant`: :class:`Accountant`, sequential and parallel composition with a ledger.
- :mod:`.synthesizers`: Beta-Binomial and Dirichlet-Multinomial ε-DP synthesizers of categorical
  counts (Abowd & Vilhuber 2008; Machanavajjhala et al. 2008; Marcolin 2018, §2.5).
- :mod:`.inference`: Charest's (2011) Bayesian inference on DP synthetic counts (Marcolin 2018,
  §2.6), :func:`charest_posterior`.
- :mod:`.onthemap`: the OnTheMap synthesizer of locations (Machanavajjhala et al. 2008).
- :mod:`.locations`: ε-DP synthetic locations from the Paiva model: :func:`dp_counts`, the
  noise-aware fit and :func:`dp_release`.

Randomness: DP noise and every draw that touches confidential data come from fresh OS entropy;
a ``seed`` is for tests only and triggers a :class:`~geosynth.errors.PrivacyLeakWarning`.

Small ε: every mechanism refuses a noise scale its output type cannot carry, and
:func:`dp_release` refuses, before spending anything, an ε whose releases or noise-aware fit this
table cannot afford, naming the smallest ε that works; an ε that only makes the counts mostly
noise is warned of (:func:`dp_counts`), not refused. A DP release's size is either a public
total (``n_public``) or a DP estimate capped as documented in :mod:`.locations`.
"""

from geosynth.dp.accountant import Accountant
from geosynth.dp.inference import (
    CharestMoments,
    CharestPosterior,
    charest_moments,
    charest_posterior,
)
from geosynth.dp.locations import (
    DPRelease,
    NoisyCounts,
    dp_counts,
    dp_model,
    dp_release,
    dp_synthesize,
)
from geosynth.dp.mechanisms import (
    analytic_gaussian_sigma,
    exponential,
    gaussian,
    geometric,
    laplace,
)
from geosynth.dp.onthemap import OnTheMapSynthesizer
from geosynth.dp.synthesizers import (
    BetaBinomialSynthesizer,
    DirichletMultinomialSynthesizer,
    dirichlet_alpha,
    dirichlet_epsilon,
)

__all__ = [
    "Accountant",
    "BetaBinomialSynthesizer",
    "CharestMoments",
    "CharestPosterior",
    "DPRelease",
    "DirichletMultinomialSynthesizer",
    "NoisyCounts",
    "OnTheMapSynthesizer",
    "analytic_gaussian_sigma",
    "charest_moments",
    "charest_posterior",
    "dirichlet_alpha",
    "dirichlet_epsilon",
    "dp_counts",
    "dp_release",
    "dp_model",
    "dp_synthesize",
    "exponential",
    "gaussian",
    "geometric",
    "laplace",
]
