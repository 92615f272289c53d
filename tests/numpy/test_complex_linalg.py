"""linalg.eig, linalg.eigvals (real and complex matrices), and linalg.inv / linalg.solve on
complex matrices (deltaad.numpy.complex_linalg): finite differences in the real and imaginary
directions, forward and reverse, to second order; numpy's values to the bit."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import deltaad as d
from complex_checks import check, crandom
from helpers import scaled

seeds = st.integers(0, 2**31 - 1)


def _matrix(rng, n, complex_=True):
    a = rng.standard_normal((n, n))
    if complex_:
        a = a + 1j * rng.standard_normal((n, n))
    return a + n * np.diag(np.arange(1, n + 1))  # well separated eigenvalues


def _phase_free(v):
    """A function of eigenvectors that does not depend on their phases: |v|^2 entrywise."""
    return np.abs(v) ** 2


@given(seed=seeds, n=st.integers(1, 4), cplx=st.booleans())
@scaled(0.3)
def test_eigvals(seed, n, cplx):
    rng = np.random.default_rng(seed)
    a = _matrix(rng, n, cplx)
    check(np.linalg.eigvals, [a], seed, second=seed % 3 == 0)


@given(seed=seeds, n=st.integers(1, 4), cplx=st.booleans())
@scaled(0.3)
def test_eig(seed, n, cplx):
    rng = np.random.default_rng(seed)
    a = _matrix(rng, n, cplx)

    def f(a):
        w, v = np.linalg.eig(a)
        return w, _phase_free(v)

    check(f, [a], seed, second=seed % 3 == 0)


def test_eig_of_a_real_matrix_with_complex_eigenvalues():
    a = np.array([[1.0, 2.0, 0.0], [-3.0, 1.0, 0.5], [0.0, 0.1, 4.0]])
    w, _ = np.linalg.eig(a)
    assert np.iscomplexobj(w)
    (out_w, out_v), _ = d.vjp(np.linalg.eig, a)
    assert out_w.tobytes() == w.tobytes()
    check(lambda a: np.linalg.eig(a)[0], [a], 0)
    check(lambda a: _phase_free(np.linalg.eig(a)[1]), [a], 0)
    # d|w_k|/dA for this real matrix: a real gradient
    g = d.grad(lambda a: np.sum(np.abs(np.linalg.eigvals(a))))(a)
    assert g.dtype == np.float64


def test_real_eigenvalues_stay_real_as_numpy_gives():
    a = np.array([[2.0, 1.0], [0.5, 3.0]])
    w, v = np.linalg.eig(a)
    assert not np.iscomplexobj(w)
    out, pb = d.vjp(lambda a: np.linalg.eig(a), a)
    assert out[0].dtype == np.float64 and out[1].dtype == np.float64
    np.testing.assert_array_equal(out[0], w)
    check(lambda a: np.linalg.eigvals(a), [a], 0)


def test_eigenvalue_derivative_is_the_left_right_eigenvector_formula():
    # dw_k = u_k^H dA v_k / (u_k^H v_k) with u_k the left eigenvector: the rows of V^-1
    rng = np.random.default_rng(5)
    a = _matrix(rng, 3)
    w, v = np.linalg.eig(a)
    vinv = np.linalg.inv(v)
    da = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    _, dw = d.jvp(lambda a: np.linalg.eig(a)[0], (a,), (da,))
    np.testing.assert_allclose(dw, np.einsum("ki,ij,jk->k", vinv, da, v), rtol=1e-10)


def test_eigvals_and_eig_orders_are_matched():
    rng = np.random.default_rng(9)
    a = _matrix(rng, 4)
    g1 = d.grad(lambda a: np.sum(np.real(np.linalg.eigvals(a) * np.arange(4))))(a)
    w = np.linalg.eigvals(a)
    w2, v = np.linalg.eig(a)
    perm = [int(np.argmin(np.abs(w2 - x))) for x in w]
    vinv = np.linalg.inv(v)
    # d sum_k k Re(w_k) = Re(sum_ij N_ij dA_ij), N = sum_k k u_k^* v_k^T (u_k^H the rows of
    # V^-1); the gradient of Re(sum N dA) is d/dx - i d/dy = Re N + i Im N = N
    g2 = sum(k * np.outer(vinv[p, :], v[:, p]) for k, p in enumerate(perm))
    np.testing.assert_allclose(g1, g2, rtol=1e-10, atol=1e-12)


@given(seed=seeds, n=st.integers(1, 3))
@scaled(0.3)
def test_complex_inv_and_solve(seed, n):
    rng = np.random.default_rng(seed)
    a = _matrix(rng, n)
    b = crandom(rng, (n, 2))
    check(np.linalg.inv, [a], seed)
    check(np.linalg.solve, [a, b], seed)
    check(np.linalg.solve, [a, b[:, 0]], seed)
    check(np.linalg.solve, [a.real, b], seed, second=False)
    check(np.linalg.solve, [a, b.real], seed, second=False)


def test_repeated_eigenvalues_give_infinite_eigenvector_derivatives():
    g = d.jacfwd(lambda a: np.linalg.eig(a + 0j)[1], holomorphic=True)(np.eye(2) + 0j)
    assert not np.all(np.isfinite(g))
    gw = d.jacfwd(lambda a: np.linalg.eigvals(a + 0j), holomorphic=True)(np.eye(2) + 0j)
    np.testing.assert_allclose(gw.reshape(2, 4), [[1, 0, 0, 0], [0, 0, 0, 1]])


_NORMS = [{}, {"ord": "fro"}, {"axis": 0}, {"axis": 1, "ord": 1}, {"ord": np.inf},
          {"ord": 1}, {"axis": (0, 1)}, {"axis": 0, "ord": 3}, {"keepdims": True},
          {"axis": 1, "ord": -np.inf}, {"axis": (1, 0), "ord": 1, "keepdims": True}]


@pytest.mark.parametrize("kw", _NORMS, ids=str)
def test_norm_of_complex_values(kw):
    rng = np.random.default_rng(3)
    z = crandom(rng, (3, 4))
    check(lambda z: np.linalg.norm(z, **kw), [z], 3)
    check(lambda x: np.linalg.norm(x * (1 + 2j), **kw), [rng.uniform(0.5, 1, (3, 4))], 3,
          second=False)


@given(seed=seeds, n=st.integers(1, 3))
@scaled(0.3)
def test_complex_det(seed, n):
    rng = np.random.default_rng(seed)
    check(np.linalg.det, [_matrix(rng, n)], seed)
    check(lambda a: np.linalg.det(a * (1 + 1j)), [_matrix(rng, n, False)], seed, second=False)
