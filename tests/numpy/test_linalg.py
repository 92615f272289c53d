"""Linear algebra (deltaad.numpy.linalg).

Every function is checked by hypothesis over shapes (0-d, empty and broadcast shapes included),
axes and values in the domain: the value equals plain numpy's; reverse mode, forward mode and
central finite differences agree along random directions, and reverse and forward agree to
rounding (the paper's Lemma 1); the nestings give the same Hessian-vector product as finite
differences of the gradient. Non-smooth functions are sampled away from their kinks and ties.
"""

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import deltaad as d
from numpy_checks import Family, distinct, seeds, uniform

family = Family()
op = family.op


# --------------------------------------------------------------------------------------------
# Linear algebra


def _spd(rng, n, batch=()):
    b = rng.standard_normal(batch + (n, n))
    return b @ np.swapaxes(b, -1, -2) + n * np.eye(n)


def _wellcond(rng, n, batch=()):
    """Diagonally dominant: |a_ii| >= n + 1 > sum of the rest, so the condition number is small."""
    return rng.uniform(-0.5, 0.5, batch + (n, n)) + (n + 1) * np.eye(n)


@op("linalg.solve")
@st.composite
def _solve(draw):
    rng = np.random.default_rng(draw(seeds))
    n = draw(st.integers(1, 3))
    batch = draw(st.sampled_from([(), (2,)]))
    bshape = draw(st.sampled_from([(n,), (n, 2), batch + (n, 1)]))
    return np.linalg.solve, [_wellcond(rng, n, batch), uniform(rng, bshape)]


@op("linalg.inv/det/slogdet")
@st.composite
def _inv(draw):
    rng = np.random.default_rng(draw(seeds))
    n = draw(st.integers(1, 3))
    batch = draw(st.sampled_from([(), (2,)]))
    a = _wellcond(rng, n, batch) * draw(st.sampled_from([1.0, -1.0]))
    f = draw(st.sampled_from([np.linalg.inv, np.linalg.det, np.linalg.slogdet, lambda a: np.linalg.slogdet(a)[1]]))
    return f, [a]


@op("linalg.cholesky")
@st.composite
def _chol(draw):
    rng = np.random.default_rng(draw(seeds))
    n = draw(st.integers(1, 3))
    batch = draw(st.sampled_from([(), (2,)]))
    upper = draw(st.booleans())
    return (lambda a: np.linalg.cholesky(0.5 * (a + np.swapaxes(a, -1, -2)), upper=upper)), [_spd(rng, n, batch)]


@op("linalg.norm")
@st.composite
def _norm(draw):
    rng = np.random.default_rng(draw(seeds))
    case = draw(st.sampled_from([
        ((4,), None, None), ((4,), 2, None), ((4,), 1, None), ((4,), np.inf, None), ((4,), -np.inf, None),
        ((4,), 3, None), ((3, 2), None, None), ((3, 2), "fro", None), ((3, 2), 1, None), ((3, 2), np.inf, None),
        ((3, 2), -1, None), ((2, 3, 2), None, (0, 2)), ((2, 3), 2, 1), ((2, 3), None, -1), ((2, 3, 4), None, None),
    ]))
    s, ord_, axis = case
    kd = draw(st.booleans())
    x = distinct(rng, s) + 0.07
    if len(s) == 2 and axis is None and ord_ in (1, -1, np.inf, -np.inf):
        # away from the kink where two column (row) sums tie: finite differences would cross it
        # (their steps reach 2e-3 along a direction of entries up to ~3, on each of up to 3
        # entries of a sum: a gap of 0.0102 was crossed)
        sums = np.sort(np.sum(np.abs(x), axis=0 if ord_ in (1, -1) else 1))
        assume(np.min(np.diff(sums)) > 5e-2)
    return (lambda x: np.linalg.norm(x, ord=ord_, axis=axis, keepdims=kd)), [x]


@op("linalg.vector_norm/matrix_norm/multi_dot")
@st.composite
def _norm2(draw):
    rng = np.random.default_rng(draw(seeds))
    f = draw(st.sampled_from([
        lambda x: np.linalg.vector_norm(x), lambda x: np.linalg.matrix_norm(x),
        lambda x: np.linalg.vector_norm(x, axis=(0, 1), keepdims=True),
        lambda x: np.linalg.multi_dot([x, x.T, x]),
    ]))
    return f, [distinct(rng, (3, 3)) + 0.07]


# --------------------------------------------------------------------------------------------
# Decompositions. Their outputs are unique only up to signs (and, at repeated values, bases):
# the checks use what is unique -- singular values and eigenvalues, the projectors
# u_i v_i^T and v_i v_i^T, Q and R of Householder QR -- on matrices whose spectra are spread.


def _orthogonal(rng, n, batch=()):
    q, r = np.linalg.qr(rng.standard_normal(batch + (n, n)))
    return q * np.sign(np.diagonal(r, axis1=-2, axis2=-1))[..., None, :]


def _spread(rng, k, batch=()):
    """k values at least 0.5 apart, in [1, ...): a well-separated, well-conditioned spectrum."""
    base = 1.0 + 0.6 * np.arange(k)
    return np.broadcast_to(base, batch + (k,)) + rng.uniform(0, 0.1, batch + (k,))


def _with_spectrum(rng, m, n, batch=()):
    k = min(m, n)
    u = _orthogonal(rng, m, batch)[..., :, :k]
    v = _orthogonal(rng, n, batch)[..., :, :k]
    s = rng.permutation(_spread(rng, k, batch), axis=-1) if k else _spread(rng, k, batch)
    return np.matmul(u * s[..., None, :], np.swapaxes(v, -1, -2))


def _sym_with_spectrum(rng, n, batch=(), junk=True):
    """Symmetric with eigenvalues spread over both signs; the strict upper triangle replaced by
    noise when ``junk`` (eigh reads the lower one only: the noise must not matter)."""
    v = _orthogonal(rng, n, batch)
    w = _spread(rng, n, batch) - n * 0.3
    a = np.matmul(v * w[..., None, :], np.swapaxes(v, -1, -2))
    return a, np.triu(rng.standard_normal(batch + (n, n)), 1) if junk else 0.0


def _projectors(u, v):
    """``u_i v_i^T`` for every column i (sign invariant), stacked on a new axis."""
    return np.einsum("...ik,...jk->...kij", u, v)


@op("linalg.svd")
@st.composite
def _svd(draw):
    rng = np.random.default_rng(draw(seeds))
    m, n = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    batch = draw(st.sampled_from([(), (2,)]))
    full = draw(st.booleans())
    k = min(m, n)

    def f(a):
        u, sv, vh = np.linalg.svd(a, full_matrices=full)
        out = [sv, _projectors(u[..., :, :k], np.swapaxes(vh[..., :k, :], -1, -2))]
        if full:  # the complements, through their projectors (the basis is not unique)
            uc, vc = u[..., :, k:], np.swapaxes(vh[..., k:, :], -1, -2)
            out += [np.matmul(uc, np.swapaxes(uc, -1, -2)), np.matmul(vc, np.swapaxes(vc, -1, -2))]
        return tuple(out)

    return f, [_with_spectrum(rng, m, n, batch)]


@op("linalg.svd(compute_uv=False)/svdvals/norm 2, -2, nuc/cond")
@st.composite
def _svdvals(draw):
    rng = np.random.default_rng(draw(seeds))
    m, n = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    batch = draw(st.sampled_from([(), (2,)]))
    kd = draw(st.booleans())
    f = draw(st.sampled_from([
        lambda a: np.linalg.svd(a, compute_uv=False), np.linalg.svdvals,
        lambda a: np.linalg.norm(a, 2, axis=(-2, -1), keepdims=kd),
        lambda a: np.linalg.norm(a, -2, axis=(-1, -2), keepdims=kd),
        lambda a: np.linalg.norm(a, "nuc", axis=(-2, -1)),
        lambda a: np.linalg.matrix_norm(a, ord="nuc", keepdims=kd),
        np.linalg.cond, lambda a: np.linalg.cond(a, -2),
    ]))
    return f, [_with_spectrum(rng, m, n, batch)]


@op("linalg.cond(p=1, inf, fro...)")
@st.composite
def _cond(draw):
    rng = np.random.default_rng(draw(seeds))
    n = draw(st.integers(1, 4))
    p = draw(st.sampled_from([1, -1, np.inf, -np.inf, "fro"]))
    a = _with_spectrum(rng, n, n) + np.diag(rng.permutation(n) * 0.37)
    # away from the kinks a finite difference would straddle: entries of x and inv(x) near 0
    # (abs), ties among the row or column sums the max (min) picks
    for m in (a, np.linalg.inv(a)):
        assume(np.abs(m).min() > 0.05)
        for ax in (0, 1):
            sums = np.sort(np.abs(m).sum(axis=ax))
            assume(n == 1 or np.diff(sums).min() > 0.05)
    return (lambda x: np.linalg.cond(x, p)), [a]


@op("linalg.eigh")
@st.composite
def _eigh(draw):
    rng = np.random.default_rng(draw(seeds))
    n = draw(st.integers(1, 4))
    batch = draw(st.sampled_from([(), (2,)]))
    uplo = draw(st.sampled_from(["L", "U"]))
    a, junk = _sym_with_spectrum(rng, n, batch)
    if uplo == "U":
        junk = np.swapaxes(junk, -1, -2)

    def f(x):
        w, v = np.linalg.eigh(x, UPLO=uplo)
        return w, _projectors(v, v)

    return f, [a + junk]


@op("linalg.eigvalsh")
@st.composite
def _eigvalsh(draw):
    rng = np.random.default_rng(draw(seeds))
    n = draw(st.integers(1, 4))
    batch = draw(st.sampled_from([(), (2,)]))
    uplo = draw(st.sampled_from(["L", "U"]))
    a, junk = _sym_with_spectrum(rng, n, batch)
    return (lambda x: np.linalg.eigvalsh(x, UPLO=uplo)), [a + (junk if uplo == "L" else np.swapaxes(junk, -1, -2))]


@op("linalg.qr")
@st.composite
def _qr(draw):
    rng = np.random.default_rng(draw(seeds))
    m, n = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    batch = draw(st.sampled_from([(), (2,)]))
    mode = draw(st.sampled_from(["reduced", "complete", "r"]))
    k = min(m, n)

    def f(a):
        # LAPACK's Householder QR takes each diagonal sign from a pivot element: where a
        # pivot crosses zero, Q's column and R's row flip sign, a jump finite differences
        # would straddle. Q D and D R, with D the (piecewise constant) signs of R's diagonal,
        # are smooth there and still go through every rule of qr.
        if mode == "r":
            r = np.linalg.qr(a, mode="r")
        else:
            q, r = np.linalg.qr(a, mode=mode)
        dg = np.sign(np.diagonal(r[..., :k, :k], axis1=-2, axis2=-1))
        r = np.concatenate([r[..., :k, :] * dg[..., :, None], r[..., k:, :]], axis=-2)
        if mode == "r":
            return r
        qc = q[..., :, k:]  # the complement (complete mode): through its projector
        return q[..., :, :k] * dg[..., None, :], r, np.matmul(qc, np.swapaxes(qc, -1, -2))

    a = _with_spectrum(rng, m, n, batch)
    # a wide matrix's QR is that of its leading square block: keep that block well conditioned
    # (R's diagonal clear of 0), else derivatives blow up and finite differences cross a sign
    r = np.linalg.qr(a, mode="r")
    assume(np.abs(np.diagonal(r[..., :k, :k], axis1=-2, axis2=-1)).min() > 0.1)
    return f, [a]


@op("linalg.pinv")
@st.composite
def _pinv(draw):
    rng = np.random.default_rng(draw(seeds))
    m, n = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    batch = draw(st.sampled_from([(), (2,)]))
    f = draw(st.sampled_from([np.linalg.pinv, lambda a: np.linalg.pinv(a, rcond=1e-10),
                              lambda a: np.linalg.pinv(a, rtol=1e-12)]))
    return f, [_with_spectrum(rng, m, n, batch)]


@op("linalg.lstsq")
@st.composite
def _lstsq(draw):
    rng = np.random.default_rng(draw(seeds))
    m, n = draw(st.integers(1, 4)), draw(st.integers(1, 4))
    bshape = draw(st.sampled_from([(m,), (m, 1), (m, 2)]))
    part = draw(st.sampled_from([0, 1, 3]))
    return (lambda a, b: np.linalg.lstsq(a, b)[part]), [_with_spectrum(rng, m, n),
                                                         uniform(rng, bshape)]


@op("linalg.matrix_power")
@st.composite
def _matrix_power(draw):
    rng = np.random.default_rng(draw(seeds))
    n = draw(st.integers(1, 3))
    batch = draw(st.sampled_from([(), (2,)]))
    k = draw(st.integers(-3, 6))
    a = _with_spectrum(rng, n, n, batch) / 1.5
    return (lambda x: np.linalg.matrix_power(x, k)), [a]


test_first_order, test_second_order = family.tests()


# --------------------------------------------------------------------------------------------
# Values are numpy's, bit for bit; choices at degenerate points


@given(seeds)
def test_values_are_numpys(seed):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((4, 3))
    s = a[:3] + a[:3].T
    fs = [
        lambda x: np.linalg.svd(x)[0], lambda x: np.linalg.svd(x, full_matrices=False)[2],
        lambda x: np.linalg.svd(x, compute_uv=False), lambda x: np.linalg.norm(x, 2),
        lambda x: np.linalg.norm(x, "nuc"), lambda x: np.linalg.cond(x),
        lambda x: np.linalg.pinv(x), lambda x: np.linalg.qr(x)[0], lambda x: np.linalg.qr(x, "r"),
        lambda x: np.linalg.lstsq(x, np.arange(4.0))[0],
        lambda x: np.linalg.lstsq(x, np.arange(4.0))[1],
    ]
    for f in fs:
        v, _ = d.vjp(f, a)
        assert np.array_equal(d.value(v), f(a))
    for f in (lambda x: np.linalg.eigh(x)[1], np.linalg.eigvalsh,
              lambda x: np.linalg.matrix_power(x, 7), lambda x: np.linalg.matrix_power(x, -5)):
        v, _ = d.vjp(f, s)
        assert np.array_equal(d.value(v), f(s))


def test_repeated_eigenvalues():
    """At a tie the eigenvalues' gradients are finite (the trace's is exact); eigenvectors
    perturbed so that the tie splits have no derivative: inf/nan, as JAX."""
    a = np.diag([2.0, 2.0, 3.0])
    g = d.grad(lambda x: np.linalg.eigh(x)[0].sum())(a)
    assert np.array_equal(g, np.eye(3))
    g = d.grad(lambda x: np.linalg.eigvalsh(x)[0] + np.linalg.eigvalsh(x)[1])(a)
    assert np.array_equal(g, np.diag([1.0, 1.0, 0.0]))
    # a perturbation that does not split the tie: exact, and forward mode agrees
    t = np.diag([1.0, 1.0, -1.0])
    _, tw = d.jvp(lambda x: np.linalg.eigh(x)[0], (a,), (t,))
    assert np.array_equal(tw, np.array([1.0, 1.0, -1.0]))
    with np.errstate(all="ignore"):
        g = d.grad(lambda x: (lambda w, v: (v * w) @ v.T)(*np.linalg.eigh(x))[1, 0])(a)
    assert not np.isfinite(g).all()
    # singular values only, at a matrix whose singular values all tie
    g = d.grad(lambda x: np.linalg.norm(x, "nuc"))(np.eye(3))
    assert np.array_equal(g, np.eye(3))


def test_tie_preserving_tangent_keeps_finite_vectors_in_forward_mode():
    """Forward mode computes tangents as values: at a tie, a perturbation that does not split
    it gives the eigenvectors' (singular vectors') tangent 0 there, not 0 * inf = nan."""
    a = np.diag([2.0, 2.0, 1.0])
    t = np.diag([0.0, 0.0, 1.0])
    for f in (lambda x: np.linalg.eigh(x)[1], lambda x: np.linalg.svd(x)[0]):
        _, tv = d.jvp(f, (a,), (t,))
        assert np.all(np.isfinite(tv))
        _, tv = d.jvp(f, (a,), (np.eye(3, k=1) + np.eye(3, k=-1),))  # splits the tie
        assert not np.all(np.isfinite(tv))


def test_eigh_reads_one_triangle():
    a = np.array([[2.0, 5.0], [0.5, 1.0]])
    for uplo, zero in (("L", (0, 1)), ("U", (1, 0))):
        g = d.grad(lambda x: np.linalg.eigvalsh(x, UPLO=uplo)[1])(a)
        assert g[zero] == 0.0


def test_matrix_rank_is_a_constant():
    a = np.array([[1.0, 2.0], [2.0, 4.0], [0.0, 1.0]])
    g = d.grad(lambda x: np.linalg.matrix_rank(x) * np.sum(x))(a)
    assert np.array_equal(g, 2.0 * np.ones_like(a))


def test_qr_raw_is_refused():
    with pytest.raises(NotImplementedError, match="mode='raw'"):
        d.grad(lambda x: np.linalg.qr(x, mode="raw")[0].sum())(np.eye(2))
