"""Statistical disclosure control baselines: neighbourhood resampling (Matloff & Tendick).

:func:`neighbour_resample` releases every selected record with each variable drawn from a
random original record within ``eps`` of it (Matloff & Tendick, undated manuscript, §2).
"""

from geosynth.sdc.doca import Doca
from geosynth.sdc.neighbours import neighbour_resample

__all__ = ["neighbour_resample", "Doca"]
