"""Synthetic releases: the Paiva et al. (2014) synthesizer, baselines and the public form.

* :func:`synthesize` -- ``m`` partially synthetic releases from a :class:`~geosynth.PaivaFit`
  (Nunes 2018, §2.1.2 and, with a continuous variable, §2.2.2), or from any fit with the
  attributes of :class:`PosteriorDraws`. ε-DP releases are made by :mod:`geosynth.dp`
  (``geosynth.synthesize(counts, epsilon=...)`` dispatches there).
* :func:`naive_synthesize` -- the Naive baseline of Nunes (2018, §3.2): a uniform point in each
  record's own cell.
* :func:`donut_mask` -- donut geomasking, the health-agency standard.
* :func:`place_in_cells` -- points inside the habitable geometry of given cells, uniform or in
  proportion to a weights raster (a :class:`PixelTable`, read by
  :func:`geosynth.rasters.read_weights`).
* :func:`to_public` -- what may be published: shuffled rows, no index, no internal columns.
* :class:`ReleaseInfo` -- how a release was made, kept in its ``attrs["geosynth"]``
  (:func:`release_info`) and written as the metadata of a release file by
  :func:`geosynth.io.write_release`.

Releases keep the confidential input's index so evaluation can pair records in memory; always
export ``to_public(release)``.
"""

from geosynth.synth.baselines import donut_mask, naive_synthesize
from geosynth.synth.paiva import (
    PosteriorDraws,
    release_draws,
    synthesis_correlation,
    synthesis_sd,
    synthesize,
    synthetic_zbar,
)
from geosynth.synth.placement import PixelTable, place_in_cells
from geosynth.synth.release import ReleaseInfo, release_info, to_public

__all__ = [
    "PixelTable",
    "PosteriorDraws",
    "ReleaseInfo",
    "donut_mask",
    "naive_synthesize",
    "place_in_cells",
    "release_draws",
    "release_info",
    "synthesize",
    "synthetic_zbar",
    "synthesis_correlation",
    "synthesis_sd",
    "to_public",
]
