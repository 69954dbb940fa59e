"""The Paiva et al. (2014) intensity model: priors, numba Gibbs kernels and the fit API."""

from geosynth.model.fit import PaivaModel
from geosynth.model.priors import Priors
from geosynth.model.results import PaivaFit
from geosynth.model.stopping import StoppingInfo

__all__ = ["PaivaModel", "PaivaFit", "Priors", "StoppingInfo"]
