"""Results of a fit: :class:`PaivaFit`, the posterior draws and their summaries."""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from geosynth._compat import import_arviz, quiet_arviz_shape_check
from geosynth._validation import is_integer
from geosynth.errors import InputError, InputTypeError
from geosynth.model.stopping import StoppingInfo

if TYPE_CHECKING:
    import arviz
    from matplotlib.figure import Figure

    from geosynth.data import CellCounts

__all__ = ["PaivaFit", "check_fit"]

#: The arrays of draws of a fit, each kept as a read-only view.
_DRAWS = ("scalars", "theta", "beta", "eta", "latent_totals", "eta_draw_index",
          "lambda_chain_means")


@dataclass(eq=False)
class PaivaFit:
    """Posterior draws of a fitted :class:`~geosynth.model.fit.PaivaModel`.

    ``draws`` below is :attr:`n_draws`, the retained draws per chain; η may be stored for only
    :attr:`n_eta_draws` of them (``eta_draws`` of :meth:`~geosynth.model.fit.PaivaModel.fit`).

    A fit is internal, like the confidential data: its ``counts`` hold every record's index and
    cell (:func:`geosynth.synth.synthesize` needs them). Never pickle or share it; publish the
    releases of :func:`geosynth.to_public` through :func:`geosynth.io.write_release`.

    Fits compare by identity (``==`` is ``is``): comparing their draws element by element is
    :func:`numpy.array_equal`'s work, not a truth value.

    The arrays of draws below are read-only (views of the arrays given): every summary, map and
    release reads them, so change a copy (``fit.scalar("tau_theta") ** -0.5``, not ``**=``).

    Attributes
    ----------
    model : geosynth.model.fit.PaivaModel
        The model that made the fit.
    counts : geosynth.data.CellCounts
        The counts it was fitted to.
    scalar_names : tuple of str
        Names of the columns of ``scalars`` (a list given is kept as a tuple: a name changed
        in place renamed the draws of every later summary, ``fit.scalar`` and trace plot).
    scalars : numpy.ndarray, shape (chains, draws, S)
        μ, α, τ_θ, τ_φ, τ_ε and (for each covariate under ``beta_prior="icar"`` only, the one
        prior that samples it) τ_β per draw (names in ``scalar_names``). μ and α are reported
        with the means of θ and φ absorbed (the sum-to-zero parametrisation of the thesis).
    theta : numpy.ndarray of float32, shape (chains, draws, G)
        θ centred to mean zero.
    beta : numpy.ndarray of float32, shape (chains, draws, G) or (chains, draws, K, G), or None
        The per-cell effects of the continuous covariate(s): (chains, draws, G) when
        ``continuous`` was one column name (a str), (chains, draws, K, G) when it was a list of
        K columns (``beta[:, :, k]`` is covariate ``counts.covariates[k]``); None without β.
    eta : numpy.ndarray of float32, shape (chains, n_eta_draws, G, B)
        Linear predictor log λ of the stored draws: ``eta[c, j]`` is retained draw
        ``eta_draw_index[j]`` of chain ``c``.
    thin : int
        Sweeps between two retained draws.
    burn_in : int
        Sweeps each chain discarded before its first retained draw.
    noise_scale : float or None
        Scale of the discrete Laplace noise of a noise-aware fit (None: exact counts).
    latent_totals : numpy.ndarray, shape (chains, draws, B), or None
        Noise-aware fits: per draw, the total of the latent true counts of each combination.
    eta_draw_index : numpy.ndarray of int64, shape (n_eta_draws,)
        The retained draws (per chain, 0-based, increasing) whose η is stored; defaults to all
        of them, ``arange(eta.shape[1])``.
    lambda_chain_means : numpy.ndarray of float64, shape (chains, G, B), or None
        Per chain, the mean of λ = exp η over *every* retained draw of that chain, summed during
        the fit (so exact whatever ``eta_draws`` kept; after an interrupted fit, over all the
        draws that chain made; after an ``n_iter="auto"`` fit, over every draw of the final
        window at the thinning in force when it was made, including those a later doubling of
        ``thin`` dropped from the stored draws). None: :meth:`posterior_mean_lambda` averages
        the stored ``eta``.
    interrupted : bool
        True when Ctrl-C (``KeyboardInterrupt``) stopped the sampler early: the draws are those
        every chain had kept by then, fewer than planned and perhaps not converged. Fine to
        inspect; a caller that publishes from a fit (the command line) must stop instead.
    stopping : geosynth.model.stopping.StoppingInfo or None
        How an ``n_iter="auto"`` fit stopped: ``reason`` ("converged", "max_seconds" or
        "interrupted"), sweeps per chain, burn-in, final thin, minimum bulk ESS and maximum
        R-hat with the parameters where they occur, the parameters that missed the rule, and
        the time the convergence checks took. None for a fixed ``n_iter``.
    """

    model: Any  # the PaivaModel that made the fit (not imported: fit imports this module)
    counts: CellCounts
    scalar_names: tuple[str, ...]
    scalars: np.ndarray
    theta: np.ndarray
    beta: np.ndarray | None
    eta: np.ndarray
    thin: int = 1
    burn_in: int = 0
    noise_scale: float | None = None
    latent_totals: np.ndarray | None = None
    eta_draw_index: np.ndarray | None = field(default=None, repr=False)
    lambda_chain_means: np.ndarray | None = field(default=None, repr=False)
    interrupted: bool = False
    stopping: StoppingInfo | None = field(default=None, repr=False)
    _mean_lambda: np.ndarray | None = field(default=None, init=False, repr=False,
                                            compare=False)

    def __post_init__(self) -> None:
        if self.eta_draw_index is None and self.eta is not None:
            self.eta_draw_index = np.arange(self.eta.shape[1], dtype=np.int64)
        names = self.scalar_names
        if not isinstance(names, (list, tuple)) or not all(isinstance(n, str) for n in names):
            raise InputError(f"scalar_names must be a list or tuple of str (the names of the "
                             f"columns of scalars), got {type(names).__name__}")
        self._read_only_draws()
        self._check_shapes()

    def __setstate__(self, state: dict) -> None:  # pickle and copy restore the dict directly
        self.__dict__.update(state)
        self._read_only_draws()
        self._check_shapes()

    def _check_shapes(self) -> None:
        """Refuse draws whose shapes disagree with each other or with the counts.

        The draws of a 5 x 5 fit beside the counts of a 6 x 6 lattice were accepted: the
        posterior mean had 25 cells for a lattice of 36, and the GeoTIFF, ``summary()`` and
        ``to_arviz()`` failed with NumPy's broadcasting and index errors.
        """
        if self.eta is None or self.scalars is None:  # a template without its draws
            return
        G, B = np.shape(self.counts.counts)
        C, D = np.shape(self.scalars)[:2]
        k = np.shape(self.eta)[1] if np.ndim(self.eta) == 4 else 0
        K = len(getattr(self.counts, "covariates", ()) or ())
        expected = {
            "scalars": [(C, D, len(self.scalar_names))],
            "theta": [(C, D, G)],
            "eta": [(C, k, G, B)],
            "beta": [None] if self.beta is None else [(C, D, G), (C, D, K, G)],
            "latent_totals": [None, (C, D, B)],
            "eta_draw_index": [(k,)],
            "lambda_chain_means": [None, (C, G, B)],
        }
        for name, shapes in expected.items():
            value = getattr(self, name)
            shape = None if value is None else np.shape(value)
            if shape not in shapes:
                want = " or ".join(str(s) for s in shapes if s is not None)
                raise InputError(
                    f"PaivaFit: {name} has shape {shape}, not {want} (chains, draws, "
                    f"{G} cells, {B} combinations of the counts, {len(self.scalar_names)} "
                    "scalar names): the draws and counts are of different fits; fit the "
                    "model again (geosynth.PaivaModel().fit(counts))")
        index = np.asarray(self.eta_draw_index)
        if index.size and (index[0] < 0 or index[-1] >= D or np.any(np.diff(index) <= 0)):
            raise InputError(
                f"PaivaFit: eta_draw_index must increase within [0, {D}) (the retained draws "
                "whose eta is stored); fit the model again (geosynth.PaivaModel().fit(counts))")

    def _read_only_draws(self) -> None:
        """Keep each array of draws as a read-only view, and the scalars' names as a tuple.

        An in-place change of a returned array (``fit.scalar("tau_theta") **= -0.5``, a
        variable of :meth:`to_arviz`) changed the draws of every later summary and release,
        while the cached posterior mean kept the old ones; a name changed in the list
        ``fit.scalar_names`` renamed a column of the draws.
        """
        self.scalar_names = tuple(self.scalar_names)
        for name in _DRAWS:
            value = getattr(self, name, None)
            if isinstance(value, np.ndarray) and value.flags.writeable:
                view = value.view()
                view.setflags(write=False)
                setattr(self, name, view)

    @property
    def n_chains(self) -> int:
        """Number of chains."""
        return self.eta.shape[0]

    @property
    def n_draws(self) -> int:
        """Retained draws per chain (of the scalars, θ and β)."""
        return self.scalars.shape[1]

    @property
    def n_eta_draws(self) -> int:
        """Draws per chain whose η (so λ) is stored: what :meth:`lambda_draw` can return."""
        return self.eta.shape[1]

    @property
    def grid(self):
        """The lattice of the fitted counts."""
        return self.counts.grid

    def __repr__(self) -> str:
        if self.eta is None or self.scalars is None:  # a template without its draws
            G, B = self.counts.counts.shape
            return f"PaivaFit({self.model!r}, draws=None, cells={G}, combinations={B})"
        G, B = self.eta.shape[2:]
        stored = "" if self.n_eta_draws == self.n_draws else f", eta_draws={self.n_eta_draws}"
        stopped = ", interrupted=True" if self.interrupted else ""
        if self.stopping is not None and not self.interrupted:
            stopped = f", sweeps={self.stopping.sweeps} ({self.stopping.reason})"
        return (f"PaivaFit({self.model!r}, chains={self.n_chains}, draws={self.n_draws}"
                f"{stored}, cells={G}, combinations={B}{stopped})")

    def posterior_mean_lambda(self) -> np.ndarray:
        """Posterior mean intensity E[λ_ib | data], shape (G, B), float64.

        The mean over every retained draw of every chain, also when η was stored for fewer
        draws (``lambda_chain_means``, summed during the fit; see there for ``n_iter="auto"``:
        there it also counts the draws made before ``thin`` last doubled, so it differs from
        the mean of ``exp(fit.eta)`` by about a Monte Carlo error). Computed once; each call
        returns a copy, so changing it changes no later result.
        """
        if self._mean_lambda is None:
            if self.lambda_chain_means is not None:
                self._mean_lambda = np.asarray(self.lambda_chain_means, np.float64).mean(axis=0)
            else:
                total = np.zeros(self.eta.shape[2:])
                for chain in self.eta:
                    for draw in chain:
                        total += np.exp(draw, dtype=np.float64)
                self._mean_lambda = total / (self.n_chains * self.n_eta_draws)
        return self._mean_lambda.copy()

    def lambda_draw(self, index: int) -> np.ndarray:
        """Intensity λ (G, B) of stored draw ``index`` of η (chains concatenated, 0-based).

        ``index`` runs over the ``n_chains * n_eta_draws`` stored draws; :meth:`draw_position`
        says which chain and retained draw it is.
        """
        chain, draw = self._stored(index)
        return np.exp(self.eta[chain, draw].astype(np.float64))

    def draw_position(self, index: int) -> tuple[int, int]:
        """Chain and retained draw (row of ``scalars``, ``theta``, ...) of stored η draw ``index``.

        Parameters
        ----------
        index : int
            As for :meth:`lambda_draw`.

        Returns
        -------
        tuple of int
            ``(chain, retained_draw)``.
        """
        chain, draw = self._stored(index)
        return chain, int(self.eta_draw_index[draw])

    def _stored(self, index: int) -> tuple[int, int]:
        total = self.n_chains * self.n_eta_draws
        if total == 0:  # "[-0, 0)" told nothing
            raise InputError(
                "this fit stored no draw of η: it was interrupted before the first of its "
                "eta_draws planned draws (spread over the planned run); run the fit to its end"
            )
        # True would be draw 1, and 1.0 an IndexError
        if not is_integer(index) or not -total <= index < total:
            raise InputError(f"index must be an integer in [-{total}, {total}) (negative counts "
                             f"from the end), got {index!r}")
        return divmod(int(index) % total, self.n_eta_draws)

    def scalar(self, name: str) -> np.ndarray:
        """Draws (chains, draws) of the scalar parameter ``name``."""
        if not isinstance(name, str):
            raise InputTypeError(f"name must be the str name of a scalar parameter (one of "
                                 f"{list(self.scalar_names)}), got {type(name).__name__}")
        if name not in self.scalar_names:
            raise InputError(f"unknown parameter {name!r}; available: "
                             f"{list(self.scalar_names)}")
        return self.scalars[:, :, self.scalar_names.index(name)]

    def to_arviz(self) -> arviz.InferenceData:
        """Draws as :class:`arviz.InferenceData` (scalars, θ and, if fitted, β).

        β is one variable ``beta`` (a str ``continuous``), or one ``beta[<column>]`` per
        covariate (a list), each with dimension ``cell``.
        """
        az = import_arviz()
        posterior = {name: self.scalars[:, :, k] for k, name in enumerate(self.scalar_names)}
        posterior["theta"] = self.theta
        dims = {"theta": ["cell"]}
        if self.beta is not None and self.beta.ndim == 3:
            posterior["beta"] = self.beta
            dims["beta"] = ["cell"]
        elif self.beta is not None:
            for k, name in enumerate(self.counts.covariates):
                posterior[f"beta[{name}]"] = self.beta[:, :, k]
                dims[f"beta[{name}]"] = ["cell"]
        return az.from_dict(posterior=posterior, dims=dims,
                            coords={"cell": np.arange(self.theta.shape[2])})

    def summary(self) -> pd.DataFrame:
        """Arviz summary (mean, sd, HDI, ``r_hat``, ``ess_bulk``, ``ess_tail``) of the scalars.

        A statistic that too few draws cannot give (an sd of one draw, an R-hat of one chain)
        is NaN, without NumPy's warnings of degrees of freedom and empty slices.
        """
        az = import_arviz()
        idata = self.to_arviz()
        names = [n for n in self.scalar_names if n in idata.posterior]
        with quiet_arviz_shape_check(), warnings.catch_warnings():
            if self.scalars.shape[1] < 2:  # one draw per chain: no sd, ESS or MCSE
                warnings.simplefilter("ignore", RuntimeWarning)
            return az.summary(idata, var_names=names, filter_vars=None)

    def trace_plot(self) -> Figure:
        """Trace and density of μ, α and the precisions (Nunes 2018, Figure 2)."""
        import matplotlib.pyplot as plt

        az = import_arviz()

        idata = self.to_arviz()
        names = [n for n in self.scalar_names if n in idata.posterior]
        axes = az.plot_trace(idata, var_names=names, compact=False)
        return np.asarray(axes).flat[0].figure if axes is not None else plt.gcf()


def check_fit(fit: Any) -> PaivaFit:
    """Return ``fit`` after checking that it is a :class:`PaivaFit`.

    Parameters
    ----------
    fit : object
        What a writer or a figure was given as the fit.

    Returns
    -------
    PaivaFit

    Raises
    ------
    geosynth.errors.InputError
        ``fit`` is not a PaivaFit (the message names its type).
    """
    if not isinstance(fit, PaivaFit):
        raise InputError(
            f"fit must be the geosynth.PaivaFit of PaivaModel().fit, got {type(fit).__name__}"
        )
    return fit
