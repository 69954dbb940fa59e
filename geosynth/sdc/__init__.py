"""Statistical disclosure control baselines: neighbourhood resampling (Matloff & Tendick), DOCA.

:func:`neighbour_resample` releases every selected record with each variable drawn from a
random original record within ``eps`` of it (Matloff & Tendick, §2); :class:`Doca` publishes a
numeric stream by differentially private online microaggregation (Leal, Vidal & Machado 2018,
Algorithms 1–2).
"""

from geosynth.sdc.doca import Doca
from geosynth.sdc.neighbours import neighbour_resample

__all__ = ["neighbour_resample", "Doca"]
