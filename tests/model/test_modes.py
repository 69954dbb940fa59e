"""Smooth modes of the ICAR structure, and the Metropolis–Hastings ratio of the block move on them.

The modes are checked against dense ``numpy.linalg.eigh`` of D_W − W; the joint move's log ratio
against an independent NumPy evaluation of ``log π(new) − log π(old) + log q(−z | new) −
log q(z | old)`` with SciPy's multivariate normal density (any wrong sign, missing term or wrong
reverse proposal changes it), and its likelihood Hessian against the sum of the Poisson terms'
outer products. Calibration of the whole sweep with these moves: ``test_sbc.py``.
"""

import warnings

import geopandas as gpd
import numpy as np
import pytest
import shapely
from scipy import sparse, stats

from geosynth import Grid, PaivaModel, prepare
from geosynth.model.modes import (
    MAX_JOINT_DIMENSION,
    N_MODES,
    apply_joint_step,
    joint_components,
    joint_mode_proposal,
    likelihood_hessian,
    mode_precision,
    modes_per_field,
    smooth_modes,
    with_component_constants,
)
from geosynth.samplers.rng import make_streams
from tests.model.lattices import split_lattice


def _structure(grid):
    adjacency = grid.adjacency.toarray()
    return np.diag(adjacency.sum(axis=1)) - adjacency


def _two_components():
    """A 5 × 6 queen lattice and a 3-cell path, as one graph with two components."""
    grid = Grid.regular((0.0, 0.0, 6.0, 5.0), shape=(5, 6))
    a = grid.adjacency.toarray()
    path = np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]])
    full = np.zeros((33, 33))
    full[:30, :30] = a
    full[30:, 30:] = path
    csr = sparse.csr_matrix(full)
    return csr.indptr.astype(np.int64), csr.indices.astype(np.int64), full


def test_modes_are_the_smoothest_eigenvectors_orthogonal_to_each_component():
    indptr, indices, adjacency = _two_components()
    structure = np.diag(adjacency.sum(axis=1)) - adjacency
    modes, eigenvalues = smooth_modes(indptr, indices, n_modes=8)
    assert modes.shape == (33, 8)
    np.testing.assert_allclose(modes.T @ modes, np.eye(8), atol=1e-10)
    np.testing.assert_allclose(structure @ modes, modes * eigenvalues, atol=1e-10)
    for member in (np.arange(33) < 30, np.arange(33) >= 30):
        np.testing.assert_allclose(member @ modes, 0.0, atol=1e-10)
    exact = np.linalg.eigvalsh(structure)
    np.testing.assert_allclose(eigenvalues, exact[2:10], rtol=1e-10)  # two zero eigenvalues


def test_sparse_modes_match_dense_ones_and_repeat_bit_for_bit():
    grid = Grid.regular((0.0, 0.0, 32.0, 25.0), shape=(25, 32))  # 800 cells: eigsh path
    indptr = np.asarray(grid.indptr, dtype=np.int64)
    indices = np.asarray(grid.indices, dtype=np.int64)
    modes, eigenvalues = smooth_modes(indptr, indices, n_modes=12)
    exact = np.linalg.eigvalsh(_structure(grid))
    np.testing.assert_allclose(eigenvalues, exact[1:13], rtol=1e-8)
    np.testing.assert_allclose(modes.T @ modes, np.eye(12), atol=1e-8)
    again, _ = smooth_modes(indptr, indices, n_modes=12)
    np.testing.assert_array_equal(modes, again)


def test_modes_of_many_components_are_the_union_of_their_spectra():
    """A 676-cell lattice (eigsh path) with 41 islands: pairs, 3-cell paths, single cells and a
    30-cell path.

    The long path's smoothest eigenvalues (2 − 2cos(kπ/30)) fall among the big component's,
    so the modes mix components; each must still be an eigenvector of the whole Q, and the
    eigenvalues the smallest non-zero ones of the dense spectrum.
    """
    grid = Grid.regular((0.0, 0.0, 26.0, 26.0), shape=(26, 26))
    pair = np.array([[0, 1], [1, 0]])
    path = np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]])
    long_path = sparse.diags([np.ones(29), np.ones(29)], [-1, 1])
    blocks = ([grid.adjacency] + [sparse.csr_matrix(m) for m in [pair, path, [[0]]] * 13 + [pair]]
              + [long_path])
    adjacency = sparse.block_diag(blocks, format="csr")
    indptr, indices = adjacency.indptr.astype(np.int64), adjacency.indices.astype(np.int64)
    n_components, component = sparse.csgraph.connected_components(adjacency, directed=False)
    assert n_components == 42 and adjacency.shape[0] == 676 + 13 * 6 + 2 + 30
    structure = np.diag(np.asarray(adjacency.sum(axis=1)).ravel()) - adjacency.toarray()
    modes, eigenvalues = smooth_modes(indptr, indices, n_modes=12)
    exact = np.linalg.eigvalsh(structure)
    np.testing.assert_allclose(eigenvalues, exact[n_components:n_components + 12], rtol=1e-8)
    np.testing.assert_allclose(modes.T @ modes, np.eye(12), atol=1e-8)
    np.testing.assert_allclose(structure @ modes, modes * eigenvalues, atol=1e-8)
    for c in range(n_components):
        np.testing.assert_allclose((component == c) @ modes, 0.0, atol=1e-8)
    assert (np.abs(modes[-30:]) > 1e-6).any() and (np.abs(modes[:676]) > 1e-6).any()
    again, _ = smooth_modes(indptr, indices, n_modes=12)
    np.testing.assert_array_equal(modes, again)


def test_a_lattice_with_fewer_modes_than_asked_gives_all_it_has():
    grid = Grid.regular((0.0, 0.0, 3.0, 3.0), shape=(3, 3))
    modes, eigenvalues = smooth_modes(np.asarray(grid.indptr, dtype=np.int64),
                                      np.asarray(grid.indices, dtype=np.int64), n_modes=12)
    assert modes.shape == (9, 8) and (eigenvalues > 0).all()


LEVEL_VAR = 2.5


# Attributes y ∈ {0, 1} and x ∈ {1, 2, 3}: levels p = 0 (y = 1), 1 (x = 2), 2 (x = 3); the six
# combinations enter θ and the φ_·p of their levels.
COMBO_LEVELS = np.array([[-1, -1], [-1, 1], [-1, 2], [0, -1], [0, 1], [0, 2]], dtype=np.int64)


def _design(basis):
    """∂η_ib/∂z for the joint coordinates (field f, column k) → index f·K + k: (G, B, F·K)."""
    G, K = basis.shape
    B, P = COMBO_LEVELS.shape[0], 3
    design = np.zeros((G, B, (1 + P) * K))
    for b in range(B):
        for f in [0] + [1 + p for p in COMBO_LEVELS[b] if p >= 0]:
            design[:, b, f * K:(f + 1) * K] = basis
    return design


def _log_target(fields, taus, counts, eta, structure, component):
    """log π up to a constant of the fields (θ, φ_·0, …) given η: Poisson terms, each field's
    ICAR prior with its τ and the N(0, LEVEL_VAR) prior of each component's mean."""
    total = (counts * eta - np.exp(eta)).sum()
    for field, tau in zip(fields, taus, strict=True):
        total -= 0.5 * tau * field @ structure @ field
        for c in np.unique(component):
            total -= field[component == c].mean() ** 2 / (2 * LEVEL_VAR)
    return total


def _log_proposal(fields, precision, hessian, counts, eta, basis, z):
    """log q(z | state): N(H⁻¹g, H⁻¹), H = hessian + diag(p), g = Jᵀ(c − e^η) − diag(p)·coords."""
    design = _design(basis)
    coords = np.concatenate([basis.T @ f for f in fields])
    gradient = np.einsum("ibd,ib->d", design, counts - np.exp(eta)) - precision * coords
    full = hessian + np.diag(precision)
    mean = np.linalg.solve(full, gradient)
    return stats.multivariate_normal(mean, np.linalg.inv(full)).logpdf(z)


#: The components whose constants the basis carries: none, both, the first alone.
CONSTANTS = {"none": [], "all": [0, 1], "first": [0]}


def _joint_case(seed, constants):
    """Fields, η, counts, the basis, precisions and a Hessian on the two-component lattice."""
    grid = _split_lattice()
    component = np.asarray(grid.component, dtype=np.int64)
    modes, eigenvalues = smooth_modes(np.asarray(grid.indptr, dtype=np.int64),
                                      np.asarray(grid.indices, dtype=np.int64), n_modes=6)
    kept = np.array(CONSTANTS[constants], dtype=np.int64)
    basis = with_component_constants(modes, component, 2, kept)
    K = basis.shape[1]
    sizes = np.bincount(component).astype(float)
    rng = np.random.default_rng(seed)
    G, B, P = grid.n_cells, COMBO_LEVELS.shape[0], 3
    taus = np.array([0.3, 4.0, 1.2, 0.7])
    precision = np.empty(4 * K)
    for f, tau in enumerate(taus):
        mode_precision(eigenvalues, tau, sizes[kept], LEVEL_VAR, precision[f * K:(f + 1) * K])
    # Smooth fields (the ICAR priors' kind) with a little roughness.
    theta = 0.3 + modes @ rng.normal(0.0, 0.8, modes.shape[1]) + rng.normal(0.0, 0.1, G)
    phi = modes @ rng.normal(0.0, 0.5, (modes.shape[1], P)) + rng.normal(0.0, 0.1, (G, P))
    eta = theta[:, None] + rng.normal(1.5, 0.3, (G, B))
    for b in range(B):
        for p in COMBO_LEVELS[b]:
            if p >= 0:
                eta[:, b] += phi[:, p]
    counts = rng.poisson(np.exp(eta)).astype(float)
    level_counts = np.stack([counts[:, [b for b in range(B) if p in COMBO_LEVELS[b]]].sum(axis=1)
                             for p in range(P)], axis=1)
    hessian = np.empty((4 * K, 4 * K))  # the Hessian at another state: any fixed one is exact
    likelihood_hessian(np.exp(eta + rng.normal(0.0, 0.3, (G, B))), COMBO_LEVELS, basis, hessian)
    return dict(grid=grid, component=component, basis=basis, taus=taus, precision=precision,
                theta=theta, phi=phi, eta=eta, counts=counts, level_counts=level_counts,
                hessian=hessian)


def _split_lattice():
    """A 5 × 6 lattice cut in two by an excluded column (two components, 25 cells)."""
    return split_lattice((0.0, 0.0, 6.0, 5.0), (5, 6), 2)


def test_the_likelihood_hessian_is_the_sum_of_the_poisson_terms_outer_products():
    case = _joint_case(5, constants="all")
    design = _design(case["basis"])
    expected = np.einsum("ib,ibd,ibe->de", np.exp(case["eta"]), design, design)
    out = np.empty_like(expected)
    likelihood_hessian(np.exp(case["eta"]), COMBO_LEVELS, case["basis"], out)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-10)


@pytest.mark.parametrize("constants", list(CONSTANTS))
def test_the_joint_move_s_log_ratio_is_the_metropolis_hastings_ratio(constants):
    """With the component constants the move also changes each component's mean: the target
    then includes the means' N(0, level_var) priors (as ``mode_precision`` says). With the
    first component's constant alone (:func:`joint_components` past its budget) the second
    component's means stay put and the ratio is still exact."""
    case = _joint_case(7, constants)
    basis, component, eta = case["basis"], case["component"], case["eta"]
    G, K = basis.shape
    structure = _structure(case["grid"])
    fields = [case["theta"]] + list(case["phi"].T)
    design = _design(basis)
    moved_means = np.zeros(2, dtype=bool)
    for draw in range(5):
        work = np.zeros((3, 4, G))
        log_ratio = joint_mode_proposal(case["theta"], case["phi"], case["precision"],
                                        case["hessian"], case["counts"].sum(axis=1),
                                        case["level_counts"], COMBO_LEVELS, np.exp(eta), basis,
                                        make_streams(draw, 1)[0], work)
        steps = work[1].copy()
        np.testing.assert_allclose(work[2], np.exp(steps), rtol=1e-13)
        z = np.concatenate([basis.T @ step for step in steps])
        np.testing.assert_allclose(np.concatenate([basis @ z[f * K:(f + 1) * K]
                                                   for f in range(4)]), steps.ravel(),
                                   atol=1e-12)  # each field's step is V z_f
        moved_means |= [abs(steps[0][component == c].mean()) > 1e-6 for c in (0, 1)]
        moved = [f + step for f, step in zip(fields, steps, strict=True)]
        new_eta = eta + design @ z
        expected = (_log_target(moved, case["taus"], case["counts"], new_eta, structure,
                                component)
                    - _log_target(fields, case["taus"], case["counts"], eta, structure,
                                  component)
                    + _log_proposal(moved, case["precision"], case["hessian"], case["counts"],
                                    new_eta, basis, -z)
                    - _log_proposal(fields, case["precision"], case["hessian"], case["counts"],
                                    eta, basis, z))
        assert log_ratio == pytest.approx(expected, abs=1e-8)
    np.testing.assert_array_equal(moved_means, [c in CONSTANTS[constants] for c in (0, 1)])


def test_an_accepted_joint_move_keeps_eta_and_the_fields_consistent():
    """Moves with the Hessian at the current state are accepted often, and apply_joint_step
    moves η by Δθ_i + Σ_{p ∈ b} Δφ_ip with exp η in step."""
    case = _joint_case(3, constants="all")
    basis, eta = case["basis"], case["eta"].copy()
    theta, phi = case["theta"].copy(), case["phi"].copy()
    G, B = eta.shape
    expeta = np.exp(eta)
    stream = make_streams(11, 1)[0]
    uniforms = np.random.default_rng(12).uniform(size=50)
    hessian = np.empty_like(case["hessian"])
    accepted = 0
    for u in uniforms:
        likelihood_hessian(expeta, COMBO_LEVELS, basis, hessian)
        work = np.zeros((3, 4, G))
        log_ratio = joint_mode_proposal(theta, phi, case["precision"], hessian,
                                        case["counts"].sum(axis=1), case["level_counts"],
                                        COMBO_LEVELS, expeta, basis, stream, work)
        if not np.log(u) < log_ratio:
            continue
        accepted += 1
        before = (theta.copy(), phi.copy(), eta.copy())
        apply_joint_step(theta, phi, eta, expeta, COMBO_LEVELS, work)
        shift = np.repeat((theta - before[0])[:, None], B, axis=1)
        for b in range(B):
            for p in COMBO_LEVELS[b]:
                if p >= 0:
                    shift[:, b] += phi[:, p] - before[1][:, p]
        np.testing.assert_allclose(eta - before[2], shift, atol=1e-12)
        np.testing.assert_allclose(expeta, np.exp(eta), rtol=1e-11)
    assert accepted >= 15


def test_component_constants_are_orthonormal_columns_after_the_modes():
    grid = _split_lattice()
    component = np.asarray(grid.component, dtype=np.int64)
    modes, eigenvalues = smooth_modes(np.asarray(grid.indptr, dtype=np.int64),
                                      np.asarray(grid.indices, dtype=np.int64), n_modes=6)
    basis = with_component_constants(modes, component, 2)
    assert basis.shape == (grid.n_cells, 8)
    np.testing.assert_array_equal(basis[:, :6], modes)
    np.testing.assert_allclose(basis.T @ basis, np.eye(8), atol=1e-12)
    for c in range(2):
        inside = component == c
        np.testing.assert_allclose(basis[inside, 6 + c], 1 / np.sqrt(inside.sum()))
        assert not basis[~inside, 6 + c].any()
    out = np.empty(8)
    sizes = np.bincount(component).astype(float)
    mode_precision(eigenvalues, 3.0, sizes, LEVEL_VAR, out)
    np.testing.assert_allclose(out[:6], 3.0 * eigenvalues)
    # Coordinate sqrt(n_c)·mean_c: variance n_c·level_var under the mean's prior.
    np.testing.assert_allclose(out[6:], 1.0 / (sizes * LEVEL_VAR))


def test_the_joint_move_keeps_its_dimension_bounded_as_levels_grow():
    # 12 modes for each of 200 levels' fields made a joint move of dimension 2,412: its dense
    # Cholesky took seconds a sweep (a fit of one attribute of 200 levels on 25 cells: 87 s for
    # 12 sweeps, uninterruptible); one mode and one constant a field still made it 402 at 200
    # levels and 1,602 at 800 (0.4 s a sweep). Models of up to 19 levels keep every mode; from
    # 120 levels, where not even one mode and one constant a field fit, there is no joint move.
    assert [modes_per_field(p) for p in (0, 4, 19)] == [N_MODES] * 3
    for levels in (20, 47, 118, 119, 120, 199, 10_000):
        k = modes_per_field(levels)
        kept = joint_components(np.ones(3), levels, k)
        if levels >= 120:
            assert k == 0 and kept.shape == (0,)
            continue
        assert k >= 1 and (1 + levels) * k <= MAX_JOINT_DIMENSION
        assert (1 + levels) * (k + 1) > MAX_JOINT_DIMENSION or k == N_MODES  # the most that fit
        assert (1 + levels) * (k + kept.shape[0]) <= MAX_JOINT_DIMENSION + 1 + levels
    grid = Grid.regular((0, 0, 50, 50), shape=(5, 5))
    rng = np.random.default_rng(0)
    xy = rng.uniform(0, 50, (400, 2))
    gdf = gpd.GeoDataFrame({"pid": np.arange(400) % 200}, geometry=gpd.points_from_xy(*xy.T))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        counts = prepare(gdf, grid, attributes=["pid"], allow_identifying=True)
        fit = PaivaModel().fit(counts, n_iter=12, burn_in=6, thin=1, chains=1, seed=1,
                               progress=False)
    assert np.isfinite(fit.posterior_mean_lambda()).all()


def test_the_joint_move_carries_the_largest_components_constants_within_its_budget():
    sizes = np.array([5.0, 1.0, 9.0, 1.0, 5.0, 2.0])
    # P = 0, K = 12: a budget of 228 constants takes every component, in order.
    np.testing.assert_array_equal(joint_components(sizes, 0, 12), np.arange(6))
    # MAX_JOINT_DIMENSION // 60 = 4 a field, 4 of them modes: one constant, the largest.
    np.testing.assert_array_equal(joint_components(sizes, 59, 4), [2])
    # 240 // 40 − 3 = 3 constants: the three largest components (9, 5 and 5 cells).
    np.testing.assert_array_equal(joint_components(sizes, 39, 3), [0, 2, 4])
    # 240 // 2 − 118 = 2 constants: 9 and the first 5 (ties go to the lower index).
    np.testing.assert_array_equal(joint_components(sizes, 1, 118), [0, 2])
    # With a subset the constants stay orthonormal columns of the kept components only.
    grid = _split_lattice()
    component = np.asarray(grid.component, dtype=np.int64)
    modes, _ = smooth_modes(np.asarray(grid.indptr, dtype=np.int64),
                            np.asarray(grid.indices, dtype=np.int64), n_modes=6)
    basis = with_component_constants(modes, component, 2, np.array([1]))
    assert basis.shape == (grid.n_cells, 7)
    np.testing.assert_allclose(basis.T @ basis, np.eye(7), atol=1e-12)
    np.testing.assert_allclose(basis[component == 1, 6], 1 / np.sqrt((component == 1).sum()))
    assert not basis[component == 0, 6].any()


def test_many_islands_keep_the_joint_move_within_its_dimension():
    """144 islands of 2 × 2 cells and five levels' fields: the constants of all 144 components
    made the joint move 6 × 156 = 936-dimensional (54 ms a sweep on 576 cells). It carries the
    twelve largest; every island is a multigrid aggregate, whose shift moves its mean."""
    from geosynth.model.fit import build_model_data

    side = 12
    region = shapely.union_all([shapely.box(300 * i, 300 * j, 300 * i + 200, 300 * j + 200)
                                for i in range(side) for j in range(side)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        grid = Grid.regular((0, 0, 300 * side, 300 * side), shape=(3 * side, 3 * side),
                            region=region)
    assert grid.n_components == side * side
    rng = np.random.default_rng(2)
    xy = rng.uniform(0, 300 * side, (3000, 2))
    gdf = gpd.GeoDataFrame({"y": rng.integers(0, 3, 3000).astype(str),
                            "x": rng.integers(0, 4, 3000).astype(str)},
                           geometry=gpd.points_from_xy(*xy.T))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        counts = prepare(gdf, grid, attributes=["y", "x"], outside="drop")
        data, _, _ = build_model_data(counts, PaivaModel())
        P = data.level_combos_ptr.shape[0] - 1
        K = data.mode_eigenvalues.shape[0]
        assert (P, K) == (5, N_MODES)
        assert data.modes.shape[1] == K + N_MODES  # 12 of the 144 constants (all of 4 cells)
        np.testing.assert_array_equal(data.mode_constant_size, np.full(N_MODES, 4.0))
        np.testing.assert_array_equal(data.modes[:, K:].sum(axis=0) > 0, True)
        aggregates = [np.sort(data.coarse_cells[a:b]) for a, b in
                      zip(data.coarse_ptr[:-1], data.coarse_ptr[1:], strict=True)]
        islands = {tuple(np.flatnonzero(grid.component == c)) for c in range(grid.n_components)}
        assert islands <= {tuple(cells) for cells in aggregates}
        fit = PaivaModel().fit(counts, n_iter=40, burn_in=20, thin=1, chains=1, seed=1,
                               progress=False)
    assert np.isfinite(fit.posterior_mean_lambda()).all()
