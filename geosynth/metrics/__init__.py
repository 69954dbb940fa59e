"""Disclosure risk and analytic utility of synthetic locations.

Risk (:mod:`geosynth.metrics.risk`, :mod:`geosynth.metrics.matching`):

* :func:`greedy_match`, :func:`greedy_match_distances` -- Nunes (2018) Algorithm 1, exact and
  scalable (10⁶ points per side in seconds);
* :func:`distance_risk` -- minimum and mean matched distance per attribute combination
  (Nunes 2018, Tables 4–6);
* :func:`displacement`, :func:`spatial_k_anonymity`, :func:`k_anonymity_summary` -- linked-record
  measures as in geomasking (MaskMyPy);
* :func:`identification_risk` -- Reiter & Mitra (2009) expected match risk, true and false match
  rates.

Utility (:mod:`geosynth.metrics.utility`):

* :func:`combine_partially_synthetic`, :func:`combine_fully_synthetic` -- combining rules;
* :func:`interval_overlap` -- geometric (Nunes 2018) or Karr et al. (2006) interval overlap;
* :func:`quadrant_coverage` -- Nunes (2018) §3.3 random-rectangle coverage;
* :func:`intensity_fidelity` -- original against synthetic counts per cell of a common lattice;
* :func:`ripley_k`, :func:`ripley_distance`, :func:`original_l_functions` -- Ripley's K/L with
  isotropic or translation edge correction (hand-written: PySAL's pointpats 2.5 has none; it
  is the tests' oracle);
* :func:`gp_regression`, :func:`stacked_intervals` -- Bayesian spatial regression (eq. 3.2) on
  the original and the stacked releases (Zhou & Reiter 2010), with interval overlap.
"""

from geosynth.metrics.gp import GPPosterior, gp_regression, stacked_intervals
from geosynth.metrics.matching import GreedyMatch, greedy_match, greedy_match_distances
from geosynth.metrics.risk import (
    IdentificationRisk,
    displacement,
    distance_risk,
    identification_risk,
    k_anonymity_summary,
    spatial_k_anonymity,
)
from geosynth.metrics.utility import (
    CombinedEstimate,
    IntensityFidelity,
    QuadrantCoverage,
    RipleyK,
    combine_fully_synthetic,
    combine_partially_synthetic,
    continuous_utility,
    intensity_fidelity,
    interval_overlap,
    original_l_functions,
    quadrant_coverage,
    ripley_distance,
    ripley_k,
)

__all__ = [
    "CombinedEstimate",
    "GPPosterior",
    "GreedyMatch",
    "IdentificationRisk",
    "IntensityFidelity",
    "QuadrantCoverage",
    "RipleyK",
    "combine_fully_synthetic",
    "combine_partially_synthetic",
    "continuous_utility",
    "displacement",
    "distance_risk",
    "gp_regression",
    "greedy_match",
    "greedy_match_distances",
    "identification_risk",
    "intensity_fidelity",
    "interval_overlap",
    "k_anonymity_summary",
    "quadrant_coverage",
    "ripley_distance",
    "original_l_functions",
    "ripley_k",
    "spatial_k_anonymity",
    "stacked_intervals",
]
