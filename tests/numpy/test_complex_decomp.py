"""Complex decompositions (deltaad.numpy.complex_decomp): svd, eigh/eigvalsh, qr, pinv, lstsq,
slogdet, cond and the matrix norms 2, -2, 'nuc' of complex matrices. Finite differences in the
real and imaginary directions, forward and reverse, to second order; numpy's values to the bit.

Singular vectors and eigenvectors have a free phase each, so the checks use what is unique:
singular values and eigenvalues, the projectors u_j v_j^H and v_j v_j^H, the moduli |u_ij|^2,
and Q D, D R for the sign D of R's (real) diagonal. Matrices are drawn with their spectra
spread (singular values or eigenvalues at least 0.5 apart, away from 0), so that finite
differences measure a derivative.
"""

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

import deltaad as d
from complex_checks import check
from helpers import scaled

seeds = st.integers(0, 2**31 - 1)
shapes = st.integers(1, 4)
batches = st.sampled_from([(), (2,)])


def _unitary(rng, n, batch=()):
    z = rng.standard_normal(batch + (n, n)) + 1j * rng.standard_normal(batch + (n, n))
    q, r = np.linalg.qr(z)
    dg = np.diagonal(r, axis1=-2, axis2=-1)
    return q * (dg / np.abs(dg))[..., None, :]


def _spread(rng, k, batch=()):
    """k values at least 0.5 apart, in [1, ...)."""
    base = 1.0 + 0.6 * np.arange(k)
    s = np.broadcast_to(base, batch + (k,)) + rng.uniform(0, 0.1, batch + (k,))
    return rng.permutation(s, axis=-1) if k else s


def _h(x):
    return np.conj(np.swapaxes(x, -1, -2))


def _with_spectrum(rng, m, n, batch=()):
    """A complex m x n matrix with singular values spread in [1, 3]."""
    k = min(m, n)
    u = _unitary(rng, m, batch)[..., :, :k]
    v = _unitary(rng, n, batch)[..., :, :k]
    return np.matmul(u * _spread(rng, k, batch)[..., None, :], _h(v))


def _hermitian(rng, n, batch=()):
    """Hermitian with eigenvalues spread over both signs."""
    v = _unitary(rng, n, batch)
    w = _spread(rng, n, batch) - 0.3 * n
    return np.matmul(v * w[..., None, :], _h(v))


def _junk(rng, n, batch, uplo):
    """What eigh does not read: the strict other triangle, and the diagonal's imaginary part."""
    j = np.triu(rng.standard_normal(batch + (n, n)) + 1j * rng.standard_normal(batch + (n, n)), 1)
    j = j if uplo == "L" else np.swapaxes(j, -1, -2)
    return j + 1j * np.eye(n) * rng.standard_normal(batch + (n, 1))


def _projectors(u, vh):
    """``u_j v_j^H`` for every column j (phase invariant), stacked on a new axis."""
    return np.einsum("...ik,...kj->...kij", u, vh)


@given(seed=seeds, m=shapes, n=shapes, batch=batches, full=st.booleans())
@scaled(0.3)
def test_svd(seed, m, n, batch, full):
    rng = np.random.default_rng(seed)
    k = min(m, n)

    def f(a):
        u, s, vh = np.linalg.svd(a, full_matrices=full)
        out = [s, _projectors(u[..., :, :k], vh[..., :k, :]), np.abs(u[..., :, :k]) ** 2,
               np.abs(vh[..., :k, :]) ** 2]
        if full:  # the complements, through their projectors (the basis is not unique)
            uc, vc = u[..., :, k:], _h(vh[..., k:, :])
            out += [np.matmul(uc, _h(uc)), np.matmul(vc, _h(vc))]
        return tuple(out)

    check(f, [_with_spectrum(rng, m, n, batch)], seed, second=seed % 2 == 0)


_SVDVALS = [
    lambda a: np.linalg.svd(a, compute_uv=False), np.linalg.svdvals,
    lambda a: np.linalg.norm(a, 2, axis=(-2, -1)),
    lambda a: np.linalg.norm(a, -2, axis=(-1, -2), keepdims=True),
    lambda a: np.linalg.norm(a, "nuc", axis=(-2, -1)),
    lambda a: np.linalg.matrix_norm(a, ord="nuc", keepdims=True),
    lambda a: np.linalg.matrix_norm(a, ord=2),
    np.linalg.cond, lambda a: np.linalg.cond(a, -2),
]


@given(seed=seeds, m=shapes, n=shapes, batch=batches, which=st.integers(0, len(_SVDVALS) - 1))
@scaled(0.3)
def test_svdvals_norms_and_cond(seed, m, n, batch, which):
    rng = np.random.default_rng(seed)
    check(_SVDVALS[which], [_with_spectrum(rng, m, n, batch)], seed)


@pytest.mark.parametrize("ord", [2, -2, "nuc"])
def test_matrix_norm_of_a_plain_matrix_without_axis(ord):
    rng = np.random.default_rng(4)
    check(lambda a: np.linalg.norm(a, ord), [_with_spectrum(rng, 3, 2)], 4)
    check(lambda a: np.linalg.norm(a, ord, keepdims=True), [_with_spectrum(rng, 2, 3)], 4)
    # a real matrix made complex inside the program
    check(lambda x: np.linalg.norm(x * (1 + 2j), ord), [_with_spectrum(rng, 3, 3).real], 4,
          second=False)


@given(seed=seeds, n=shapes, batch=batches, uplo=st.sampled_from(["L", "U"]))
@scaled(0.3)
def test_eigh(seed, n, batch, uplo):
    rng = np.random.default_rng(seed)
    a = _hermitian(rng, n, batch) + _junk(rng, n, batch, uplo)

    def f(x):
        w, v = np.linalg.eigh(x, UPLO=uplo)
        return w, _projectors(v, _h(v)), np.abs(v) ** 2

    check(f, [a], seed, second=seed % 2 == 0)


@given(seed=seeds, n=shapes, batch=batches, uplo=st.sampled_from(["L", "U"]))
@scaled(0.3)
def test_eigvalsh(seed, n, batch, uplo):
    rng = np.random.default_rng(seed)
    a = _hermitian(rng, n, batch) + _junk(rng, n, batch, uplo)
    check(lambda x: np.linalg.eigvalsh(x, UPLO=uplo), [a], seed)


def test_eigh_reads_one_triangle_and_the_real_diagonal():
    rng = np.random.default_rng(2)
    a = _hermitian(rng, 3)
    for uplo in ("L", "U"):
        g = d.grad(lambda x: np.sum(np.linalg.eigvalsh(x, UPLO=uplo) ** 3))(a)
        other = np.triu(g, 1) if uplo == "L" else np.tril(g, -1)
        assert np.all(other == 0)
        assert np.all(np.imag(np.diagonal(g)) == 0)


@given(seed=seeds, m=shapes, n=shapes, batch=batches,
       mode=st.sampled_from(["reduced", "complete", "r"]))
@scaled(0.3)
def test_qr(seed, m, n, batch, mode):
    rng = np.random.default_rng(seed)
    k = min(m, n)

    def f(a):
        # LAPACK's R has a real diagonal whose signs jump where a pivot crosses zero: Q D and
        # D R (D those signs, piecewise constant) are smooth there and go through every rule
        if mode == "r":
            r = np.linalg.qr(a, mode="r")
        else:
            q, r = np.linalg.qr(a, mode=mode)
        dg = np.sign(np.real(np.diagonal(r[..., :k, :k], axis1=-2, axis2=-1)))
        r = np.concatenate([r[..., :k, :] * dg[..., :, None], r[..., k:, :]], axis=-2)
        if mode == "r":
            return r
        qc = q[..., :, k:]
        return q[..., :, :k] * dg[..., None, :], r, np.matmul(qc, _h(qc))

    a = _with_spectrum(rng, m, n, batch)
    r = np.linalg.qr(a, mode="r")  # a wide matrix's QR is its leading square block's
    assume(np.abs(np.diagonal(r[..., :k, :k], axis1=-2, axis2=-1)).min() > 0.1)
    check(f, [a], seed, second=seed % 2 == 0)


def test_qr_keeps_r_diagonal_real_and_raw_mode_raises():
    rng = np.random.default_rng(1)
    a = _with_spectrum(rng, 3, 3)
    da = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    _, (dq, dr) = d.jvp(np.linalg.qr, (a,), (da,))
    assert np.all(np.imag(np.diagonal(dr)) == 0)
    q = np.linalg.qr(a)[0]
    np.testing.assert_allclose(_h(q) @ dq + _h(dq) @ q, 0, atol=1e-12)  # Q stays unitary
    with pytest.raises(NotImplementedError, match="raw"):
        d.grad(lambda a: np.abs(np.linalg.qr(a, mode="raw")[0]).sum())(a)


@given(seed=seeds, m=shapes, n=shapes, batch=batches)
@scaled(0.3)
def test_pinv(seed, m, n, batch):
    rng = np.random.default_rng(seed)
    a = _with_spectrum(rng, m, n, batch)
    check(np.linalg.pinv, [a], seed, second=seed % 2 == 0)
    check(lambda a: np.linalg.pinv(a, rcond=1e-10), [a], seed, second=False)


@given(seed=seeds, m=shapes, n=shapes, vec=st.booleans(), kinds=st.sampled_from(["cc", "rc", "cr"]))
@scaled(0.3)
def test_lstsq(seed, m, n, vec, kinds):
    rng = np.random.default_rng(seed)
    a = _with_spectrum(rng, m, n)
    b = rng.standard_normal((m, 2)) + 1j * rng.standard_normal((m, 2))
    b = b[:, 0] if vec else b
    a = a if kinds[0] == "c" else a.real + np.eye(m, n) * 3  # real: keep it well conditioned
    b = b if kinds[1] == "c" else b.real
    assume(np.linalg.svd(a, compute_uv=False).min() > 0.3)

    def f(a, b):
        x, res, _, sv = np.linalg.lstsq(a, b)
        return x, res, sv

    check(f, [a, b], seed, second=seed % 2 == 0)


@given(seed=seeds, n=shapes, batch=batches)
@scaled(0.3)
def test_slogdet(seed, n, batch):
    rng = np.random.default_rng(seed)
    a = _with_spectrum(rng, n, n, batch)
    check(lambda a: tuple(np.linalg.slogdet(a)), [a], seed)


def test_slogdet_sign_is_the_phase_of_det():
    rng = np.random.default_rng(3)
    a = _with_spectrum(rng, 3, 3)
    da = rng.standard_normal((3, 3)) + 1j * rng.standard_normal((3, 3))
    _, (ds, dl) = d.jvp(np.linalg.slogdet, (a,), (da,))
    det = np.linalg.det(a)
    _, ddet = d.jvp(np.linalg.det, (a,), (da,))
    # det = sign e^logabsdet: d det = (ds + sign dl) e^logabsdet
    np.testing.assert_allclose(ddet, (ds + det / abs(det) * dl) * abs(det), rtol=1e-10)


def test_values_are_numpys():
    rng = np.random.default_rng(7)
    a = _with_spectrum(rng, 4, 3)
    h = _hermitian(rng, 3)
    b = rng.standard_normal(4) + 1j * rng.standard_normal(4)
    cases = [(np.linalg.svd, [a]), (lambda a: np.linalg.svd(a, full_matrices=False), [a]),
             (lambda a: np.linalg.svd(a, compute_uv=False), [a]), (np.linalg.eigh, [h]),
             (lambda h: np.linalg.eigh(h, UPLO="U"), [h]), (np.linalg.eigvalsh, [h]),
             (np.linalg.qr, [a]), (lambda a: np.linalg.qr(a, "complete"), [a]),
             (lambda a: np.linalg.qr(a, "r"), [a]), (np.linalg.pinv, [a]),
             (np.linalg.lstsq, [a, b]), (np.linalg.slogdet, [h]),
             (lambda a: np.linalg.norm(a, 2), [a]), (np.linalg.cond, [a])]
    for f, args in cases:
        plain = f(*args)
        for out in (d.vjp(f, *args)[0], d.jvp(f, tuple(args), tuple(args))[0]):
            for x, y in zip(np.atleast_1d(*plain) if isinstance(plain, tuple) else [plain],
                            np.atleast_1d(*out) if isinstance(out, tuple) else [out]):
                x, y = np.asarray(x), np.asarray(y)
                assert x.dtype == y.dtype and x.tobytes() == y.tobytes(), f


def test_degenerate_singular_values():
    # at a repeated singular value the singular vectors have no derivative (inf/nan, as in
    # JAX), but the singular values and a tie-preserving perturbation keep finite derivatives
    a = np.diag([2.0, 2.0, 1.0]) * (1 + 1j) / np.sqrt(2)
    g = d.grad(lambda a: np.sum(np.linalg.svd(a, compute_uv=False)))(a)
    assert np.all(np.isfinite(g))
    _, t = d.jvp(lambda a: np.linalg.svd(a)[0], (a,), (np.eye(3, k=1) + 0j,))
    assert not np.all(np.isfinite(t))
    _, t = d.jvp(lambda a: np.linalg.svd(a)[0], (a,), (np.diag([0.0, 0.0, 1j]),))
    assert np.all(np.isfinite(t))
