"""numpy's library functions (deltaad.numpy.library): polynomials, spaces, cov/corrcoef,
histogram, i0, tensorinv/tensorsolve, matvec/vecmat. Finite differences, forward and reverse,
to second order, both backends; numpy's values to the bit (check's first assertion)."""

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import deltaad as d
from complex_checks import check, crandom
from helpers import scaled

seeds = st.integers(0, 2**31 - 1)


@given(seed=seeds, n=st.integers(1, 5), m=st.integers(1, 4))
@scaled(0.3)
def test_polynomial_arithmetic(seed, n, m):
    rng = np.random.default_rng(seed)
    p, q = rng.uniform(-2, 2, n), rng.uniform(-2, 2, m)
    check(lambda p: np.vander(p), [p], seed)
    check(lambda p: np.vander(p, m, increasing=True), [p], seed)
    check(np.polyder, [p], seed)
    check(lambda p: np.polyder(p, 2), [p], seed)
    check(np.polyint, [p], seed)
    check(lambda p, k: np.polyint(p, 2, k), [p, rng.uniform(-1, 1, 2)], seed)
    check(np.polymul, [p, q], seed)
    check(np.polyadd, [p, q], seed)
    check(np.polysub, [p, q], seed)
    check(lambda z: np.polymul(z, q), [crandom(rng, (n,))], seed, second=False)


@given(seed=seeds, n=st.integers(2, 5))
@scaled(0.3)
def test_roots_and_poly(seed, n):
    rng = np.random.default_rng(seed)
    r = np.sort(rng.uniform(-2, 2, n))
    assume(np.diff(r).min() > 0.3)  # simple roots, well apart
    p = np.poly(r) * rng.uniform(0.5, 2)
    # sorted: numpy's order of the roots (the companion matrix's eigenvalues, as LAPACK finds
    # them) can change within the finite differences' step, which would difference two orders
    check(lambda p: np.sort(np.roots(p)), [p], seed)
    check(np.poly, [r], seed)
    z = crandom(rng, (n,))
    assume(min(abs(a - b) for i, a in enumerate(z) for b in z[i + 1:]) > 0.3)
    check(np.poly, [z], seed, second=False)
    # sorted (by real part: kept apart), as above: LAPACK's order of complex roots changes
    # within the step too
    assume(np.diff(np.sort(z.real)).min() > 0.01)
    check(lambda p: np.sort(np.roots(p)), [np.poly(z)], seed, second=False)
    a = np.diag(r) + 0.1 * rng.standard_normal((n, n))
    assume(np.abs(np.imag(np.linalg.eigvals(a))).max() == 0)
    check(np.poly, [a], seed, second=False)


def test_roots_strips_zeros_as_numpy():
    # numpy strips leading and trailing zero coefficients (a root at infinity, or at 0, is
    # appended or dropped as they become nonzero: no derivative across): they are constants
    p = np.array([0.0, 1.0, -3.0, 2.0, 0.0])
    out, _ = d.vjp(np.roots, p)
    assert out.tobytes() == np.roots(p).tobytes()
    g = d.jacfwd(np.roots)(p)
    g2 = d.jacfwd(np.roots)(p[1:4])
    np.testing.assert_allclose(g[:2, 1:4], g2, rtol=1e-12)
    assert np.all(g[:, [0, 4]] == 0) and np.all(g[2] == 0)


@given(seed=seeds, n=st.integers(3, 8), deg=st.integers(0, 2), weighted=st.booleans(),
       two=st.booleans())
@scaled(0.3)
def test_polyfit(seed, n, deg, weighted, two):
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(-2, 2, n)) + np.arange(n)  # distinct abscissae
    y = rng.standard_normal((n, 2) if two else n)
    w = rng.uniform(0.5, 2, n) if weighted else None
    check(lambda x, y: np.polyfit(x, y, deg, w=w), [x, y], seed, second=seed % 2 == 0)
    if weighted:
        check(lambda w: np.polyfit(x, y, deg, w=w), [w], seed, second=False)
    check(lambda y: np.polyfit(x, y, deg, full=True)[:2], [y], seed, second=False)


@given(seed=seeds, num=st.integers(1, 6), endpoint=st.booleans())
@scaled(0.3)
def test_geomspace_logspace(seed, num, endpoint):
    rng = np.random.default_rng(seed)
    a, b = rng.uniform(0.5, 3, 2)
    check(lambda a, b: np.geomspace(a, b, num, endpoint=endpoint), [a, b], seed)
    check(lambda a, b: np.logspace(a, b, num, endpoint=endpoint, base=2.0), [a, b], seed)
    check(lambda a, b: np.geomspace(-a, -b, num, endpoint=endpoint), [a, b], seed)
    # lists of duals: numpy dispatches on arrays only, so its own code runs on an object array,
    # whose log10 and ** are each dual's (libm's): numpy's value only where its SIMD kernels
    # are libm's (not with AVX-512), to rounding elsewhere
    check(lambda a, b: np.geomspace([a, b], [b, 2 * a], num, endpoint=endpoint, axis=1),
          [a, b], seed, second=False, exact=False)


@given(seed=seeds, k=st.integers(1, 3), n=st.integers(3, 6), rowvar=st.booleans(),
       bias=st.booleans(), weights=st.sampled_from([None, "f", "a", "fa"]))
@scaled(0.3)
def test_cov_corrcoef(seed, k, n, rowvar, bias, weights):
    rng = np.random.default_rng(seed)
    m = rng.standard_normal((k, n) if rowvar else (n, k))
    kw = {"rowvar": rowvar, "bias": bias}
    if weights and "f" in weights:
        kw["fweights"] = rng.integers(1, 4, n)
    if weights and "a" in weights:
        kw["aweights"] = rng.uniform(0.5, 2, n)
    check(lambda m: np.cov(m, **kw), [m], seed)
    if k > 1 or n > 1:
        check(lambda m: np.corrcoef(m, rowvar=rowvar), [m], seed)
    check(lambda m, y: np.cov(m, y, rowvar=rowvar), [m, rng.standard_normal(m.shape)], seed,
          second=False)
    if "aweights" in kw:
        check(lambda a: np.cov(m, rowvar=rowvar, aweights=a), [kw["aweights"]], seed,
              second=False)


def test_cov_of_complex_values():
    rng = np.random.default_rng(1)
    check(np.cov, [crandom(rng, (2, 5))], 1)
    check(np.corrcoef, [crandom(rng, (3, 4))], 1, second=False)


@given(seed=seeds, n=st.integers(2, 8), bins=st.integers(1, 5), density=st.booleans())
@scaled(0.3)
def test_histogram(seed, n, bins, density):
    rng = np.random.default_rng(seed)
    a = rng.uniform(-2, 2, n)
    w = rng.uniform(0.5, 2, n)
    # no point next to an inner edge: finite differences would move it across (seed 815 did)
    inner = np.histogram_bin_edges(a, bins)[1:-1]
    assume(inner.size == 0 or np.min(np.abs(a[:, None] - inner[None, :])) > 1e-2)
    # the weighted sums in each bin: differentiable in the weights
    check(lambda w: np.histogram(a, bins, weights=w, density=density)[0], [w], seed)
    # the edges move with the data (linspace(min, max)); with density the heights move too
    check(lambda a: np.histogram(a, bins, density=density)[1], [a], seed)
    if density:
        check(lambda a: np.histogram(a, bins, density=True)[0], [a], seed)
    # counts are constant in the data
    g = d.jacrev(lambda a: np.histogram(a, bins)[0] * 1.0)(a)
    assert np.all(g == 0)
    # given edges or a range: constant edges
    _, t = d.jvp(lambda a: np.histogram(a, [-3, 0, 3])[1] * 1.0, (a,), (a,))
    assert np.all(t == 0)


@given(seed=seeds, shape=st.sampled_from([(), (3,), (2, 3)]))
@scaled(0.3)
def test_i0(seed, shape):
    rng = np.random.default_rng(seed)
    x = rng.uniform(-4, 4, shape)
    check(np.i0, [x], seed)


def test_i0_at_zero():
    assert d.grad(lambda x: np.i0(x))(0.0) == 0.0
    assert np.isclose(d.grad(d.grad(lambda x: np.i0(x)))(0.0), 0.5)


@given(seed=seeds, split=st.sampled_from([(6,), (2, 3), (3, 2)]))
@scaled(0.3)
def test_tensorinv_tensorsolve(seed, split):
    rng = np.random.default_rng(seed)
    a = (rng.standard_normal((6, 6)) + 6 * np.eye(6)).reshape((6,) + split)
    check(lambda a: np.linalg.tensorinv(a, ind=1), [a], seed, second=seed % 3 == 0)
    check(lambda a: np.linalg.tensorinv(a.reshape(split + (6,)), ind=len(split)), [a], seed,
          second=False)
    b = rng.standard_normal(6)
    check(np.linalg.tensorsolve, [a, b], seed, second=seed % 3 == 0)
    check(lambda a, b: np.linalg.tensorsolve(a, b, axes=(0,)), [np.moveaxis(a, 1, 0), b],
          seed, second=False)
    check(np.linalg.tensorsolve, [a * (1 + 0.5j), b], seed, second=False)


@pytest.mark.skipif(not hasattr(np, "matvec"), reason="numpy 2.2's matvec/vecmat")
@given(seed=seeds, batch=st.sampled_from([(), (2,)]), n=st.integers(1, 3))
@scaled(0.3)
def test_matvec_vecmat(seed, batch, n):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(batch + (n, n + 1))
    check(np.matvec, [a, rng.standard_normal(n + 1)], seed)
    check(np.vecmat, [rng.standard_normal(batch + (n,)), a], seed)
