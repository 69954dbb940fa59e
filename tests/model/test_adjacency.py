"""The model's adjacency arrays (geosynth.model.state) and the ICAR quadratics that read them.

The kernels visit each edge once, or only the neighbours a pass has already mapped, through
the slices that ``ModelData.upper`` marks in rows sorted by :func:`sorted_adjacency`; here the
slices are checked against the edges, and the quadratics against fᵀ(D_W − W)f computed densely.
"""

import numpy as np
from scipy import sparse

from geosynth.model.conditionals import icar_quadratic, icar_quadratic_parts
from geosynth.model.state import sorted_adjacency, upper_neighbours
from tests.model.lattices import split_lattice_chain


def _shuffled_rows(indptr, indices, rng):
    """The CSR arrays with each row's indices in a random order."""
    shuffled = indices.copy()
    for i in range(indptr.size - 1):
        rng.shuffle(shuffled[indptr[i]:indptr[i + 1]])
    return shuffled


def test_sorted_adjacency_sorts_each_row_and_keeps_its_neighbours():
    rng = np.random.default_rng(3)
    matrix = sparse.random(60, 60, density=0.1, random_state=4, format="csr")
    matrix = ((matrix + matrix.T) > 0).astype(float).tocsr()
    shuffled = _shuffled_rows(matrix.indptr, matrix.indices, rng)
    assert any(np.any(np.diff(shuffled[a:b]) < 0)
               for a, b in zip(matrix.indptr[:-1], matrix.indptr[1:], strict=True))
    indptr, indices = sorted_adjacency(matrix.indptr, shuffled)
    assert indptr.dtype == indices.dtype == np.int64
    np.testing.assert_array_equal(indptr, matrix.indptr)
    for i in range(60):
        row = indices[indptr[i]:indptr[i + 1]]
        assert np.all(np.diff(row) > 0)
        np.testing.assert_array_equal(row, np.sort(shuffled[indptr[i]:indptr[i + 1]]))


def test_upper_neighbours_split_each_row_at_the_cell():
    rng = np.random.default_rng(5)
    matrix = sparse.random(80, 80, density=0.08, random_state=6, format="csr")
    matrix = ((matrix + matrix.T) > 0).astype(float)
    matrix.setdiag(0)
    matrix = matrix.tocsr()
    matrix.eliminate_zeros()
    indptr, indices = sorted_adjacency(matrix.indptr, _shuffled_rows(matrix.indptr,
                                                                     matrix.indices, rng))
    upper = upper_neighbours(indptr, indices)
    assert upper.dtype == np.int64 and upper.shape == (80,)
    for i in range(80):
        assert np.all(indices[indptr[i]:upper[i]] < i)
        assert np.all(indices[upper[i]:indptr[i + 1]] > i)
    # Each edge is in exactly one upper slice.
    assert sum(indptr[i + 1] - upper[i] for i in range(80)) == matrix.nnz // 2


def test_icar_quadratics_equal_the_dense_forms():
    data, _, grid = split_lattice_chain(7)
    adjacency = sparse.csr_matrix(grid.adjacency).toarray()
    q = np.diag(adjacency.sum(axis=1)) - adjacency
    rng = np.random.default_rng(8)
    a, b = rng.normal(size=(2, q.shape[0]))
    np.testing.assert_allclose(icar_quadratic(a, data), a @ q @ a, rtol=1e-12)
    np.testing.assert_allclose(icar_quadratic_parts(a, b, data),
                               (a @ q @ a, a @ q @ b, b @ q @ b), rtol=1e-12)
