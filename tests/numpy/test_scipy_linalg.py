"""scipy.linalg on duals (deltaad.numpy.scipy_linalg).

Every function is checked by hypothesis over sizes and options: the value equals scipy's (bit
for bit in tests/numpy/test_values.py); reverse mode, forward mode and central finite
differences agree along random directions (Lemma 1 too); the four nestings give the Hessian-
vector product of finite differences of the gradient. The draws keep finite differences sound:
well-conditioned matrices (diagonally dominant, or with a spread spectrum), pivots that no
perturbation of the difference step changes, spectra whose values stay apart; decompositions
are checked through what is unique (projectors, Q D and D R with the signs D of R's diagonal).
Where scipy reads one triangle of a matrix, the other holds noise: its gradient must be 0.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import deltaad as d
from numpy_checks import Family, check_first_order, seeds, uniform

sl = pytest.importorskip("scipy.linalg")

family = Family()
op = family.op


def _wellcond(rng, n):
    """Diagonally dominant (|a_ii| >= n + 1 > the rest of its row): condition number small,
    partial pivoting keeps the diagonal, eigenvalues near n + 1 (real logm and sqrtm)."""
    return rng.uniform(-0.5, 0.5, (n, n)) + (n + 1) * np.eye(n)


def _orthogonal(rng, n):
    q, r = np.linalg.qr(rng.standard_normal((n, n)))
    return q * np.sign(np.diagonal(r))[None, :]


def _spread(rng, k):
    """k values at least 0.5 apart from 1 on: a separated, well-conditioned spectrum."""
    return 1.0 + 0.6 * np.arange(k) + rng.uniform(0, 0.1, k)


def _with_spectrum(rng, m, n):
    k = min(m, n)
    u, v = _orthogonal(rng, m)[:, :k], _orthogonal(rng, n)[:, :k]
    return (u * rng.permutation(_spread(rng, k))) @ v.T


def _spd(rng, n):
    v = _orthogonal(rng, n)
    return (v * _spread(rng, n)) @ v.T


def _junk(rng, n, lower):
    """Noise in the triangle scipy does not read (the strict upper one when it reads the
    lower)."""
    j = np.triu(rng.standard_normal((n, n)), 1)
    return j if lower else j.T


def _projectors(u, v):
    return np.einsum("ik,jk->kij", u, v)


def _signs_of_r(r, k):
    return np.sign(np.diagonal(r[:k, :k]))


sizes = st.integers(1, 4)


@op("solve_triangular")
@st.composite
def _solve_triangular(draw):
    rng = np.random.default_rng(draw(seeds))
    n = draw(sizes)
    lower, unit = draw(st.booleans()), draw(st.booleans())
    trans = draw(st.sampled_from([0, 1, 2, "N", "T", "C"]))
    bshape = draw(st.sampled_from([(n,), (n, 2)]))
    a = _wellcond(rng, n) + 3 * _junk(rng, n, lower)

    def f(a, b):
        return sl.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit)

    return f, [a, uniform(rng, bshape)]


_ASSUME = [None, "gen", "general", "sym", "pos", "diagonal", "tridiagonal", "upper triangular",
           "lower triangular"]


def _structured_draw(draw, rng, n, structures=_ASSUME):
    assume = draw(st.sampled_from(structures))
    lower = draw(st.booleans())
    if assume in ("sym", "pos"):
        a = _spd(rng, n) + _junk(rng, n, lower)  # scipy reads one triangle
    else:
        a = _wellcond(rng, n)
    return assume, lower, a


@op("solve")
@st.composite
def _solve(draw):
    rng = np.random.default_rng(draw(seeds))
    n = draw(sizes)
    assume, lower, a = _structured_draw(draw, rng, n)
    transposed = draw(st.booleans()) and assume not in ("sym", "pos")
    bshape = draw(st.sampled_from([(n,), (n, 3)]))

    def f(a, b):
        return sl.solve(a, b, assume_a=assume, lower=lower, transposed=transposed)

    return f, [a, uniform(rng, bshape)]


@op("inv/det")
@st.composite
def _inv(draw):
    rng = np.random.default_rng(draw(seeds))
    n = draw(sizes)
    assume, lower, a = _structured_draw(draw, rng, n, [s for s in _ASSUME if s != "tridiagonal"])
    if draw(st.booleans()):
        return sl.det, [_wellcond(rng, n) * draw(st.sampled_from([1.0, -1.0]))]
    return (lambda a: sl.inv(a, assume_a=assume, lower=lower)), [a]


@op("cholesky")
@st.composite
def _cholesky(draw):
    rng = np.random.default_rng(draw(seeds))
    n = draw(sizes)
    lower = draw(st.booleans())
    return (lambda a: sl.cholesky(a, lower=lower)), [_spd(rng, n) + _junk(rng, n, lower)]


@op("cho_factor/cho_solve")
@st.composite
def _cho(draw):
    rng = np.random.default_rng(draw(seeds))
    n = draw(sizes)
    lower = draw(st.booleans())
    bshape = draw(st.sampled_from([(n,), (n, 2)]))

    def f(a, b):
        c = sl.cho_factor(a, lower=lower)
        return c[0], sl.cho_solve(c, b)

    return f, [_spd(rng, n) + _junk(rng, n, lower), uniform(rng, bshape)]


def _pivoted(rng, n):
    """A diagonally dominant matrix with its rows shuffled: partial pivoting undoes the shuffle,
    with a margin no difference step crosses."""
    return _wellcond(rng, n)[rng.permutation(n)]


@op("lu_factor/lu_solve")
@st.composite
def _lu_factor(draw):
    rng = np.random.default_rng(draw(seeds))
    n = draw(sizes)
    trans = draw(st.sampled_from([0, 1, 2]))
    bshape = draw(st.sampled_from([(n,), (n, 2)]))

    def f(a, b):
        lu, piv = sl.lu_factor(a)
        return lu, sl.lu_solve((lu, piv), b, trans=trans)

    return f, [_pivoted(rng, n), uniform(rng, bshape)]


@op("lu")
@st.composite
def _lu(draw):
    rng = np.random.default_rng(draw(seeds))
    n = draw(sizes)
    how = draw(st.sampled_from(["p", "permute_l", "p_indices"]))

    def f(a):
        if how == "permute_l":
            return sl.lu(a, permute_l=True)
        return sl.lu(a, p_indices=how == "p_indices")[1:]

    return f, [_pivoted(rng, n)]


@op("qr")
@st.composite
def _qr(draw):
    rng = np.random.default_rng(draw(seeds))
    m, n = draw(sizes), draw(sizes)
    mode = draw(st.sampled_from(["full", "economic", "r"]))
    pivoting = draw(st.booleans())
    k = min(m, n)
    a = _with_spectrum(rng, m, n)
    if pivoting:  # column norms well apart: the pivot order stays under a difference step
        a = a / np.linalg.norm(a, axis=0) * (1.0 + 0.7 * rng.permutation(n))

    def f(a):
        out = sl.qr(a, mode=mode, pivoting=pivoting)
        r = out[0] if mode == "r" else out[1]
        # Householder signs jump where a pivot element crosses 0: Q D and D R are smooth
        dg = _signs_of_r(r, k)
        r = np.concatenate([r[:k] * dg[:, None], r[k:]], axis=0)
        if mode == "r":
            return r
        q = out[0]
        qc = q[:, k:]
        return q[:, :k] * dg, r, qc @ qc.T

    return f, [a]


@op("svd")
@st.composite
def _svd(draw):
    rng = np.random.default_rng(draw(seeds))
    m, n = draw(sizes), draw(sizes)
    full = draw(st.booleans())
    driver = draw(st.sampled_from(["gesdd", "gesvd"]))
    k = min(m, n)

    def f(a):
        if draw_uv is False:
            return sl.svd(a, compute_uv=False, lapack_driver=driver)
        u, s, vh = sl.svd(a, full_matrices=full, lapack_driver=driver)
        out = [s, _projectors(u[:, :k], vh[:k].T)]
        if full:
            uc, vc = u[:, k:], vh[k:].T
            out += [uc @ uc.T, vc @ vc.T]
        return tuple(out)

    draw_uv = draw(st.booleans())
    return f, [_with_spectrum(rng, m, n)]


@op("eigh")
@st.composite
def _eigh(draw):
    rng = np.random.default_rng(draw(seeds))
    n = draw(sizes)
    lower = draw(st.booleans())
    only = draw(st.booleans())
    subset = draw(st.sampled_from([None, (0, n - 1), (n - 1, n - 1)]))
    v = _orthogonal(rng, n)
    a = (v * (_spread(rng, n) - 0.3 * n)) @ v.T + _junk(rng, n, lower)

    def f(a):
        if only:
            return sl.eigh(a, lower=lower, eigvals_only=True, subset_by_index=subset)
        w, v = sl.eigh(a, lower=lower, subset_by_index=subset)
        return w, _projectors(v, v)

    return f, [a]


@op("solve_sylvester")
@st.composite
def _sylvester(draw):
    rng = np.random.default_rng(draw(seeds))
    n, m = draw(sizes), draw(sizes)
    # eigenvalues near n + 1 and m + 1: no sum of one of each comes near 0
    return sl.solve_sylvester, [_wellcond(rng, n), _wellcond(rng, m), uniform(rng, (n, m))]


@op("sqrtm")
@st.composite
def _sqrtm(draw):
    rng = np.random.default_rng(draw(seeds))
    n = draw(sizes)
    a = _wellcond(rng, n) if draw(st.booleans()) else _spd(rng, n)
    return sl.sqrtm, [a]


@op("expm")
@st.composite
def _expm(draw):
    rng = np.random.default_rng(draw(seeds))
    n = draw(sizes)
    scale = draw(st.sampled_from([0.3, 1.0, 3.0]))  # the scaling and squaring of expm varies
    return sl.expm, [uniform(rng, (n, n), -scale, scale)]


@op("logm")
@st.composite
def _logm(draw):
    rng = np.random.default_rng(draw(seeds))
    n = draw(sizes)
    a = _wellcond(rng, n) if draw(st.booleans()) else _spd(rng, n)
    return sl.logm, [a]


@op("eigvalsh/svdvals/pinv")
@st.composite
def _values(draw):
    rng = np.random.default_rng(draw(seeds))
    n, m = draw(sizes), draw(sizes)
    kind = draw(st.sampled_from(["eigvalsh", "svdvals", "pinv"]))
    if kind == "eigvalsh":
        lower = draw(st.booleans())
        v = _orthogonal(rng, n)
        a = (v * (_spread(rng, n) - 0.3 * n)) @ v.T + _junk(rng, n, lower)
        return (lambda a: sl.eigvalsh(a, lower=lower)), [a]
    if kind == "svdvals":
        return sl.svdvals, [_with_spectrum(rng, m, n)]
    return sl.pinv, [_with_spectrum(rng, m, n)]  # full rank: the rank no step changes


@op("solve_banded/solveh_banded")
@st.composite
def _banded(draw):
    rng = np.random.default_rng(draw(seeds))
    n = draw(sizes)
    bshape = draw(st.sampled_from([(n,), (n, 2)]))
    b = uniform(rng, bshape)
    if draw(st.booleans()):
        lw, uw = draw(st.integers(0, 2)), draw(st.integers(0, 2))
        ab = rng.uniform(-0.5, 0.5, (lw + uw + 1, n))
        ab[uw] += lw + uw + 2  # the diagonal dominates: well conditioned
        return (lambda ab, b: sl.solve_banded((lw, uw), ab, b)), [ab, b]
    # (scipy's own solveh_banded fails on a 1 x 1 system stored in two rows: its ptsv call
    # gets an empty off-diagonal)
    w, lower = draw(st.integers(0, 2)), draw(st.booleans())
    if n == 1 and w == 1:
        w = 0
    ab = rng.uniform(-0.5, 0.5, (w + 1, n))
    ab[0 if lower else w] += 2 * w + 2
    return (lambda ab, b: sl.solveh_banded(ab, b, lower=lower)), [ab, b]


@op("solve_continuous_lyapunov")
@st.composite
def _lyapunov(draw):
    rng = np.random.default_rng(draw(seeds))
    n = draw(sizes)
    return sl.solve_continuous_lyapunov, [_wellcond(rng, n), uniform(rng, (n, n))]


test_first_order, test_second_order = family.tests()


# --------------------------------------------------------------------------------------------
# Where scipy reads one triangle, the other has gradient 0; exact values; plain calls


@given(seeds, sizes, st.booleans())
@settings(deadline=None)
def test_gradient_lives_in_the_triangle_scipy_reads(seed, n, lower):
    rng = np.random.default_rng(seed)
    a = _spd(rng, n) + _junk(rng, n, lower)
    b = uniform(rng, (n,))
    unread = np.triu(np.ones((n, n)), 1) if lower else np.tril(np.ones((n, n)), -1)
    for f in (lambda a: sl.cholesky(a, lower=lower).sum(),
              lambda a: sl.solve(a, b, assume_a="pos", lower=lower).sum(),
              lambda a: sl.eigh(a, lower=lower, eigvals_only=True) @ b,
              lambda a: sl.cho_solve(sl.cho_factor(a, lower=lower), b).sum()):
        g = d.grad(f)(a)
        assert np.all(g[unread == 1] == 0.0)


def test_plain_calls_are_scipys():
    """Without duals scipy's own function runs (and the replaced ones say what they were)."""
    a = _wellcond(np.random.default_rng(0), 3)
    for name in ("expm", "inv", "solve_triangular", "eigh", "sqrtm"):
        assert getattr(getattr(sl, name), "deltaad_original", None) is not None
    assert np.array_equal(sl.expm(a), sl.expm.deltaad_original(a))
    r = sl.lu_factor(a)
    assert type(r) is tuple and r[1].dtype == sl.lu_factor.deltaad_original(a)[1].dtype


def test_values_are_scipys_and_types_follow():
    rng = np.random.default_rng(1)
    a = _spd(rng, 3)
    v, g = d.value_and_grad(lambda a: sl.det(sl.expm(sl.logm(a))))(a)
    assert v == sl.det(sl.expm(sl.logm(a)))
    np.testing.assert_allclose(g, np.linalg.det(a) * np.linalg.inv(a).T, rtol=1e-8)
    c, low = d.vjp(lambda a: sl.cho_factor(a, lower=True), a)[0]
    assert low is True
    w, v = d.vjp(sl.eigh, a)[0]
    assert np.array_equal(w, sl.eigh(a)[0]) and np.array_equal(v, sl.eigh(a)[1])


@pytest.mark.parametrize("name", ["sqrtm", "expm", "logm", "solve_sylvester"])
def test_third_order(name):
    """The matrix functions' rules are their own primitives again: every order. A third
    derivative (forward over forward over reverse) against finite differences of the second."""
    rng = np.random.default_rng(3)
    n = 2
    a = _wellcond(rng, n) / (3 if name == "expm" else 1)
    c = rng.standard_normal((n, n))
    v = rng.standard_normal((n, n))
    f = {"solve_sylvester": lambda x: np.sum(sl.solve_sylvester(x, x.T, c) * c)}.get(
        name, lambda x: np.sum(getattr(sl, name)(x) * c))

    def second(x):  # H(x) v, forward over reverse
        return d.jvp(d.grad(f), (x,), (v,))[1]

    # the gradient of v^T H(x) v (reverse over forward over reverse), along v: D^3 f[v, v, v]
    third = d.grad(lambda x: np.sum(second(x) * v))
    h = 1e-4
    fd = (np.sum(second(a + h * v) * v) - np.sum(second(a - h * v) * v)) / (2 * h)
    got = np.sum(third(a) * v)
    assert abs(got - fd) <= 1e-5 * max(1.0, abs(fd)), (got, fd)


def test_unsupported_calls_name_the_function():
    a = _spd(np.random.default_rng(2), 3)
    with pytest.raises(NotImplementedError, match=r"scipy\.linalg\.eigh.*generalized"):
        d.grad(lambda x: sl.eigh(x, np.eye(3))[0].sum())(a)
    with pytest.raises(NotImplementedError, match=r"scipy\.linalg\.eigh.*subset_by_value"):
        d.grad(lambda x: sl.eigh(x, subset_by_value=(0, 10))[0].sum())(a)
    with pytest.raises(NotImplementedError, match=r"scipy\.linalg\.qr.*mode='raw'"):
        d.grad(lambda x: sl.qr(x, mode="raw")[1].sum())(a)
    with pytest.raises(NotImplementedError, match=r"scipy\.linalg\.solve.*banded"):
        d.grad(lambda x: sl.solve(x, np.ones(3), assume_a="banded").sum())(a)
    with pytest.raises(NotImplementedError, match=r"scipy\.linalg\.lu.*square"):
        d.grad(lambda x: sl.lu(x)[2].sum())(np.ones((3, 2)))
    with pytest.raises(NotImplementedError, match=r"scipy\.linalg\.sqrtm.*complex"):
        d.grad(lambda x: sl.sqrtm(x).sum())(-a)
    with pytest.raises(NotImplementedError, match=r"scipy\.linalg\.logm.*complex"):
        d.grad(lambda x: sl.logm(x).sum())(-a)
    for name in ("eig", "schur", "lstsq", "funm", "expm_frechet"):  # no rule: an error naming it
        with pytest.raises(NotImplementedError, match=r"scipy\.linalg\.%s on dual" % name):
            d.grad(lambda x: np.sum(np.real(getattr(sl, name)(x, x)[0])))(a)
    # scipy's own errors for bad input, as without deltaad
    with pytest.raises(np.linalg.LinAlgError):
        d.grad(lambda x: sl.cholesky(x).sum())(-a)


def test_check_first_order_on_a_program():
    """A program mixing them: a Gaussian process's log marginal likelihood, by Cholesky."""
    rng = np.random.default_rng(5)
    x = np.sort(rng.uniform(-2, 2, 6))
    y = np.sin(x)

    def nll(params):
        ell, s = params[0], params[1]
        k = s * np.exp(-0.5 * (x[:, None] - x[None, :]) ** 2 / ell ** 2) + 0.1 * np.eye(6)
        c = sl.cho_factor(k, lower=True)
        alpha = sl.cho_solve(c, y)
        return 0.5 * y @ alpha + np.sum(np.log(np.diag(c[0])))

    check_first_order(lambda p: nll(p), [np.array([0.8, 1.3])])


@pytest.mark.parametrize("name", ["expm", "logm"])
def test_a_zero_cotangent_that_is_a_dual_keeps_its_derivative(name):
    """Forward over reverse at a point where the cotangent's value is 0 but its tangent is not
    (``t[1] = 0`` below): the Fréchet block must still be formed, not replaced by zeros."""
    rng = np.random.default_rng(4)
    a = _wellcond(rng, 3) / 4
    c = rng.standard_normal((3, 3))
    f = getattr(sl, name)
    h = d.hessian(lambda t: np.sum(f(a + t[0] * c) * c) * t[1])(np.zeros(2))
    eps = 1e-5
    fd = (np.sum(f(a + eps * c) * c) - np.sum(f(a - eps * c) * c)) / (2 * eps)
    assert abs(h[0, 1] - fd) <= 1e-6 * max(1.0, abs(fd))
    assert abs(h[1, 0] - fd) <= 1e-6 * max(1.0, abs(fd))
