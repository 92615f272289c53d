"""Complex decompositions: ``linalg.svd`` (``svdvals``, ``compute_uv=False``), ``eigh`` and
``eigvalsh`` (Hermitian, either ``UPLO``), ``qr`` (``reduced``, ``complete``, ``r``), ``pinv``,
``lstsq``, ``slogdet`` (a complex sign), ``cond`` and the matrix norms of order 2, -2 and
``'nuc'`` of complex matrices.

Each decomposition is a complex primitive whose value is numpy's own (LAPACK's) on the plain
values, and whose derivative is written once, as its jvp -- the real rules' formulas of
:mod:`.linalg` with transposes made conjugate transposes, as JAX writes them -- with numpy
functions, so that it differentiates again. Its vjp is the jvp's transpose, taken on a small
inner tape of the packed real pairs (:func:`.define.jvp_primitive`): the jvp of a complex
decomposition is real-linear, not complex-linear (``conj`` appears), and the real transpose of
the packed map is exactly the adjoint the complex conventions ask for.

Gauge: singular vectors and eigenvectors of complex matrices are defined up to a phase each
(``u_j e^{iφ}``, ``v_j e^{iφ}`` for svd). As JAX, the tangents chosen put the phase change
``i Im(u_j^H dA v_j) / s_j`` on ``U``'s side (``V^H dV`` has a zero diagonal, ``U^H dU`` that
imaginary one) for svd, and ``v_j^H dv_j = 0`` for eigh; only phase-invariant
functions of the vectors (``|U|``, ``U diag(s) V^H``, projectors ``u_j u_j^H``) have a meaningful
derivative. Degenerate spectra behave as the real rules' (see :mod:`.linalg`): infinite factors
``1/(s_j^2 - s_i^2)`` or ``1/(w_j - w_i)`` at a tie, exact zeros kept zero.
"""

from deltaad._plainnumpy import np

from ..trace import value as strip
from .complex_array import FUNCTIONS, NOTES, ComplexDual, CPrimitive, capply, pair
from .complex_linalg import norm as _complex_norm
from .define import jvp_primitive
from .linalg import _gaps, _inverse, _zmul
from .reductions import amax, amin, sum_


class JvpCPrimitive(CPrimitive):
    """A complex primitive given by its ``impl`` and its ``jvp``: the vjp is the jvp's
    transpose on the packed real pairs."""

    __slots__ = ()

    def __init__(self, name, impl, jvp, real_out=False):
        CPrimitive.__init__(self, name, impl, None, jvp, real_out)
        self.prim = jvp_primitive(name, self._impl, self._jvp)


def _shape(x):
    s = getattr(x, "shape", None)
    return tuple(s) if s is not None else np.shape(x)


def _complex(x):
    return type(x) is ComplexDual or np.iscomplexobj(strip(x))


def _h(x):
    """The conjugate transpose over the last two axes."""
    x = np.swapaxes(x, -1, -2)
    return np.conj(x) if _complex(x) else x


def _mm(a, b):
    return np.matmul(a, b)


def _diag_part(m):
    return np.diagonal(m, 0, -2, -1)


def _diag_matrix(w):
    return w[..., None] * np.eye(_shape(w)[-1])


def _cz(f, x):
    """``f * x`` for a real ``f`` that may be infinite (``1/(w_j - w_i)`` at a tie): a zero of
    ``x`` stays an exact zero, its real and imaginary parts apart."""
    if not _complex(x):
        return _zmul(f, x)
    return pair(_zmul(f, np.real(x)), _zmul(f, np.imag(x)))


def _as_complex(x):
    return x if _complex(x) else pair(x, 0.0)


def _pack(parts, batch):
    return np.concatenate([np.reshape(_as_complex(p), batch + (-1,)) for p in parts], axis=-1)


def _unpack(x, batch, cores):
    out = []
    o = 0
    for c in cores:
        n = int(np.prod(c, dtype=np.int64))
        out.append(np.reshape(x[..., o:o + n], batch + c))
        o += n
    return out


def _complement(q, dq):
    """The tangent of ``q``'s complement ``q_perp``: it moves with ``q`` and does not rotate
    within itself, ``dq_perp = -q (dq^H q_perp)``."""
    return lambda q_perp: -_mm(q, _mm(_h(dq), q_perp))


# svd ------------------------------------------------------------------------------------------


def _svd_cores(shape, full):
    m, n = shape[-2:]
    k = min(m, n)
    return ((m, m if full else k), (k,), (n if full else k, n))


def _svd_impl(a, full, hermitian):
    u, sv, vh = np.linalg.svd(a, full_matrices=full, hermitian=hermitian)
    return np.concatenate([u.reshape(a.shape[:-2] + (-1,)), sv.astype(u.dtype),
                           vh.reshape(a.shape[:-2] + (-1,))], axis=-1)


def _svd_parts(out, shape, full):
    u, sv, vh = _unpack(out, shape[:-2], _svd_cores(shape, full))
    return u, np.real(sv), vh


def _svd_jvp(out, vals, tans, full, hermitian):
    a, da = vals[0], tans[0]
    shape = _shape(a)
    m, n = shape[-2:]
    k = min(m, n)
    u, s, vh = _svd_parts(out, shape, full)
    u1 = u[..., :, :k]
    vh1 = vh[..., :k, :]
    v1 = _h(vh1)
    ds_mat = _mm(_h(u1), _mm(da, v1))
    ds_diag = _diag_part(ds_mat)
    ds = np.real(ds_diag)
    srow = s[..., None, :]
    f = _gaps(s * s)  # 1 / (s_j^2 - s_i^2)
    dss = ds_mat * srow
    sds = ds_mat * np.swapaxes(srow, -1, -2)
    zero = np.asarray(strip(s)) == 0
    s_inv = np.where(zero, 0.0, 1.0 / np.where(zero, 1.0, s))  # JAX's: 0 at s = 0
    phase = _diag_matrix(1j * (np.imag(ds_diag) * s_inv))  # Im(u_j^H dA v_j) / s_j on U
    du = _mm(u1, _cz(f, dss + _h(dss)) + phase)
    dv = _mm(v1, _cz(f, sds + _h(sds)))
    if m > n:
        dav = _mm(da, v1)
        du = du + _cz(_inverse(srow), dav - _mm(u1, _mm(_h(u1), dav)))
    elif n > m:
        dahu = _mm(_h(da), u1)
        dv = dv + _cz(_inverse(srow), dahu - _mm(v1, _mm(vh1, dahu)))
    if full and m > n:
        du = np.concatenate([du, _complement(u1, du)(u[..., :, k:])], axis=-1)
    if full and n > m:
        dv = np.concatenate([dv, _complement(v1, dv)(_h(vh[..., k:, :]))], axis=-1)
    return _pack([du, ds, _h(dv)], shape[:-2])


SVD = JvpCPrimitive("linalg.svd", _svd_impl, _svd_jvp)
_SVDResult = type(np.linalg.svd(np.eye(1)))


def _svdvals_jvp(out, vals, tans, hermitian, impl):
    u, _, vh = np.linalg.svd(vals[0], full_matrices=False)
    return np.real(np.sum(np.conj(u) * _mm(tans[0], _h(vh)), axis=-2))


def _svd_values(a, hermitian):
    return np.linalg.svd(a, compute_uv=False, hermitian=hermitian)


SVDVALS = JvpCPrimitive("linalg.svd(compute_uv=False)",
                         lambda a, hermitian, impl: impl(a, hermitian), _svdvals_jvp,
                         real_out=True)


def svdvals(x, hermitian=False, impl=_svd_values):
    return capply(SVDVALS, (x,), {"hermitian": bool(hermitian), "impl": impl})


def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    shape = _shape(a)
    if len(shape) < 2:
        raise np.linalg.LinAlgError("%d-dimensional array given. Array must be at least "
                                    "two-dimensional" % len(shape))
    if not compute_uv:
        return svdvals(a, hermitian)
    full = bool(full_matrices)
    p = capply(SVD, (a,), {"full": full, "hermitian": bool(hermitian)})
    return _SVDResult(*_svd_parts(p, shape, full))


# eigh -----------------------------------------------------------------------------------------


def _hermitian(t, uplo):
    """The Hermitian matrix LAPACK's eigh sees in ``t``: the strict ``uplo`` triangle mirrored
    (conjugated), and the real part of the diagonal (the imaginary part is not read)."""
    side = np.tril(t, -1) if uplo == "L" else np.triu(t, 1)
    d = _diag_part(t)
    return side + _h(side) + _diag_matrix(np.real(d) if _complex(d) else d)


def _eigh_impl(a, uplo):
    w, v = np.linalg.eigh(a, UPLO=uplo)
    return np.concatenate([w.astype(v.dtype), v.reshape(a.shape[:-2] + (-1,))], axis=-1)


def _eigh_parts(out, shape):
    n = shape[-1]
    w, v = _unpack(out, shape[:-2], ((n,), (n, n)))
    return np.real(w), v


def _eigh_jvp(out, vals, tans, uplo):
    shape = _shape(vals[0])
    w, v = _eigh_parts(out, shape)
    vav = _mm(_h(v), _mm(_hermitian(tans[0], uplo), v))
    dv = _mm(v, _cz(_gaps(w), vav))
    return _pack([np.real(_diag_part(vav)), dv], shape[:-2])


EIGH = JvpCPrimitive("linalg.eigh", _eigh_impl, _eigh_jvp)
_EighResult = type(np.linalg.eigh(np.eye(1)))


def _uplo(UPLO):
    u = str(UPLO).upper()
    if u not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    return u


def eigh(a, UPLO="L"):
    p = capply(EIGH, (a,), {"uplo": _uplo(UPLO)})
    return _EighResult(*_eigh_parts(p, _shape(a)))


def _eigvalsh_jvp(out, vals, tans, uplo):
    v = np.linalg.eigh(vals[0], UPLO=uplo)[1]
    return np.real(np.sum(np.conj(v) * _mm(_hermitian(tans[0], uplo), v), axis=-2))


EIGVALSH = JvpCPrimitive("linalg.eigvalsh", lambda a, uplo: np.linalg.eigvalsh(a, UPLO=uplo),
                          _eigvalsh_jvp, real_out=True)


def eigvalsh(a, UPLO="L"):
    return capply(EIGVALSH, (a,), {"uplo": _uplo(UPLO)})


# qr -------------------------------------------------------------------------------------------


def _qr_cores(shape, mode):
    m, n = shape[-2:]
    k = min(m, n)
    if mode == "complete":
        return ((m, m), (m, n))
    return ((m, k), (k, n))


def _qr_impl(a, mode):
    if mode == "r":
        return np.linalg.qr(a, mode="r")
    q, r = np.linalg.qr(a, mode=mode)
    return np.concatenate([q.reshape(a.shape[:-2] + (-1,)), r.reshape(a.shape[:-2] + (-1,))],
                          axis=-1)


def _qr_square_or_tall(q, r, dx):
    """dq, dr for the reduced QR of a tall or square matrix (JAX's formula: the skew-Hermitian
    ``do`` takes the imaginary part of the diagonal, which keeps R's diagonal real)."""
    dx_rinv = _h(np.linalg.solve(_h(r), _h(dx)))  # dx r^-1
    qt_dx_rinv = _mm(_h(q), dx_rinv)
    low = np.tril(qt_dx_rinv, -1)
    do = low - _h(low)
    if _complex(qt_dx_rinv):
        do = do + _diag_matrix(1j * np.imag(_diag_part(qt_dx_rinv)))
    dq = _mm(q, do - qt_dx_rinv) + dx_rinv
    dr = _mm(qt_dx_rinv - do, r)
    return dq, dr


def _qr_tangents(a, da, q, r, mode):
    m, n = _shape(a)[-2:]
    k = min(m, n)
    if m >= n:
        q1 = q[..., :, :n]
        dq, dr = _qr_square_or_tall(q1, r[..., :n, :], da)
        if mode == "complete" and m > n:
            dq = np.concatenate([dq, _complement(q1, dq)(q[..., :, n:])], axis=-1)
            zeros = np.zeros(_shape(dr)[:-2] + (m - n, n))
            dr = np.concatenate([_as_complex(dr), _as_complex(zeros)], axis=-2)
        return dq, dr
    # wide: a = q [r1 r2] with r1 square: q, r1 are the QR of a's first k columns
    dq, dr1 = _qr_square_or_tall(q, r[..., :, :k], da[..., :, :k])
    dr2 = _mm(_h(dq), a[..., :, k:]) + _mm(_h(q), da[..., :, k:])
    return dq, np.concatenate([_as_complex(dr1), _as_complex(dr2)], axis=-1)


def _qr_jvp(out, vals, tans, mode):
    a = vals[0]
    shape = _shape(a)
    if mode == "r":
        q, _ = np.linalg.qr(a)
        return _qr_tangents(a, tans[0], q, out, mode)[1]
    q, r = _unpack(out, shape[:-2], _qr_cores(shape, mode))
    return _pack(list(_qr_tangents(a, tans[0], q, r, mode)), shape[:-2])


QR = JvpCPrimitive("linalg.qr", _qr_impl, _qr_jvp)
_QRResult = type(np.linalg.qr(np.eye(1)))


def qr(a, mode="reduced"):
    if mode not in ("reduced", "complete", "r"):
        raise NotImplementedError(
            "deltaad: numpy.linalg.qr(..., mode=%r) on dual numbers is not supported: its "
            "Householder reflectors (LAPACK's raw output) have no derivative rule; use "
            "'reduced', 'complete' or 'r'" % (mode,))
    shape = _shape(a)
    p = capply(QR, (a,), {"mode": mode})
    if mode == "r":
        return p
    return _QRResult(*_unpack(p, shape[:-2], _qr_cores(shape, mode)))


# pinv, lstsq ----------------------------------------------------------------------------------


def _eye_rows(m):
    return np.eye(_shape(m)[-2])


def _pinv_tangent(a, p, da):
    """Golub and Pereyra's derivative of the pseudo-inverse at constant rank, with conjugate
    transposes: ``-p da p + p p^H da^H (I - a p) + (I - p a) da^H p^H p``."""
    dah = _h(da)
    t = -_mm(p, _mm(da, p))
    t = t + _mm(_mm(p, _h(p)), _mm(dah, _eye_rows(a) - _mm(a, p)))
    return t + _mm(_eye_rows(p) - _mm(p, a), _mm(dah, _mm(_h(p), p)))


def _pinv_impl(a, kw):
    return np.linalg.pinv(a, **dict(kw))


PINV = JvpCPrimitive("linalg.pinv", _pinv_impl,
                      lambda out, vals, tans, kw: _pinv_tangent(vals[0], out, tans[0]))


def pinv(a, rcond=None, hermitian=False, **kwargs):
    kw = dict(kwargs, hermitian=bool(hermitian))
    if rcond is not None:
        kw["rcond"] = rcond
    return capply(PINV, (a,), {"kw": tuple(sorted(kw.items()))})


def _lstsq_impl(a, b, part, rcond):
    return np.asarray(np.linalg.lstsq(a, b, rcond=rcond)[part])


def _lstsq_pinv(a, rcond):
    m, n = _shape(a)[-2:]
    dt = np.asarray(strip(a)).dtype
    cut = np.finfo(dt).eps * max(m, n) if rcond is None or rcond == -1 else rcond
    return np.linalg.pinv(a, rcond=cut)


def _lstsq_jvp(out, vals, tans, part, rcond):
    a, b = vals
    ta, tb = tans
    if part == 3:  # the singular values of a
        if ta is None:
            return np.zeros(_shape(out))
        return _svdvals_jvp(None, (a,), (ta,), False, None)
    if part == 0:  # x = pinv(a) b
        p = _lstsq_pinv(a, rcond)
        t = None
        if ta is not None:
            t = _mm(_pinv_tangent(a, p, ta), b)
        if tb is not None:
            u = _mm(p, tb)
            t = u if t is None else t + u
        return t
    # residuals: |b - a x|^2 per column, where a^H (b - a x) = 0 (full column rank)
    if _shape(out)[0] == 0:
        return np.zeros(_shape(out))
    x = np.linalg.lstsq(a, b, rcond=rcond)[0]
    vec = len(_shape(b)) == 1
    res = b - _mm(a, x)
    d = None
    if ta is not None:
        d = -_mm(ta, x)
    if tb is not None:
        d = tb if d is None else d + tb
    r = 2.0 * np.sum(np.real(np.conj(res) * d), axis=0)
    return np.reshape(r, (1,)) if vec else r


LSTSQ_X = JvpCPrimitive("linalg.lstsq", _lstsq_impl, _lstsq_jvp)
LSTSQ_REAL = JvpCPrimitive("linalg.lstsq", _lstsq_impl, _lstsq_jvp, real_out=True)


def lstsq(a, b, rcond=None):
    av, bv = np.asarray(strip(a)), np.asarray(strip(b))
    rank = np.linalg.lstsq(av, bv, rcond=rcond)[2]
    x = capply(LSTSQ_X, (a, b), {"part": 0, "rcond": rcond})
    res = capply(LSTSQ_REAL, (a, b), {"part": 1, "rcond": rcond})
    sv = capply(LSTSQ_REAL, (a, b), {"part": 3, "rcond": rcond})
    return x, res, rank, sv


# slogdet --------------------------------------------------------------------------------------


def _trace_solve(a, da):
    return np.trace(np.linalg.solve(a, da), axis1=-2, axis2=-1)


SIGN = JvpCPrimitive(
    "linalg.slogdet (sign)", lambda a: np.linalg.slogdet(a)[0],
    lambda out, vals, tans: out * (1j * np.imag(_trace_solve(vals[0], tans[0]))))
LOGABSDET = JvpCPrimitive(
    "linalg.slogdet", lambda a: np.linalg.slogdet(a)[1],
    lambda out, vals, tans: np.real(_trace_solve(vals[0], tans[0])), real_out=True)
_SlogdetResult = type(np.linalg.slogdet(np.eye(1)))


def slogdet(a):
    return _SlogdetResult(capply(SIGN, (a,)), capply(LOGABSDET, (a,)))


# norms of order 2, -2, 'nuc' and cond ----------------------------------------------------------



def norm(x, ord=None, axis=None, keepdims=False):
    """numpy's ``_multi_svd_norm`` for the matrix orders 2, -2 and 'nuc' (the singular values,
    reduced), the other orders as before."""
    if ord not in (2, -2, "nuc") or not _complex(x):
        return _complex_norm(x, ord, axis, keepdims)
    nd = len(_shape(x))
    if axis is None:
        if nd != 2:
            return _complex_norm(x, ord, axis, keepdims)
        axis = (0, 1)
    elif not isinstance(axis, (tuple, list)):
        return _complex_norm(x, ord, axis, keepdims)
    if len(axis) != 2:
        return _complex_norm(x, ord, axis, keepdims)
    row, col = (int(ax) % nd for ax in axis)
    if row == col:
        raise ValueError("Duplicate axes given.")
    sv = svdvals(np.moveaxis(x, (row, col), (-2, -1)))
    r = {2: amax, -2: amin, "nuc": sum_}[ord](sv, axis=-1)
    if keepdims:
        shape = list(_shape(x))
        shape[row] = shape[col] = 1
        r = np.reshape(r, shape)
    return r


def cond(x, p=None):
    """numpy's cond of a complex matrix: the ratio of extreme singular values (p None, 2, -2),
    or ``norm(x, p) norm(inv(x), p)``; nan turns into inf as numpy does (a constant there)."""
    if p is None or p in (2, -2):
        sv = svdvals(x)
        first, last = sv[..., 0], sv[..., -1]
        with np.errstate(all="ignore"):
            r = last / first if p == -2 else first / last
    else:
        with np.errstate(all="ignore"):
            r = norm(x, p, axis=(-2, -1)) * norm(np.linalg.inv(x), p, axis=(-2, -1))
    rv = np.asarray(strip(r))
    nan = np.isnan(rv) & ~np.isnan(np.asarray(strip(x))).any(axis=(-2, -1))
    if nan.any():
        r = np.where(nan, np.inf, r)
    return r


_DEGENERATE = ("complex: as the real rule; singular vectors have LAPACK's phase (U's diagonal "
               "Im(U^H dU) as JAX's)")
for _f, _impl, _note in (
        (np.linalg.svd, svd, _DEGENERATE),
        (np.linalg.eigh, eigh, "complex: eigenvectors have LAPACK's phase (V^H dV zero on the "
                                "diagonal); the gradient lives in the UPLO triangle and the "
                                "real part of the diagonal"),
        (np.linalg.eigvalsh, eigvalsh, "complex: the gradient lives in the UPLO triangle and "
                                        "the real part of the diagonal"),
        (np.linalg.qr, qr, "complex: R's diagonal stays real (LAPACK's); mode='raw' raises"),
        (np.linalg.pinv, pinv, "the constant-rank formula (the rank numpy's cutoff finds)"),
        (np.linalg.lstsq, lstsq, "the constant-rank formula; rank is a constant"),
        (np.linalg.slogdet, slogdet, "complex: the sign e^{i arg det} is differentiable"),
        (np.linalg.norm, norm, "ord=2, -2, 'nuc' of a complex matrix: from its singular values"),
        (np.linalg.cond, cond, "from the singular values (p None, 2, -2) or the norms")):
    FUNCTIONS[_f] = _impl
    NOTES[_f] = _note
if hasattr(np.linalg, "svdvals"):
    FUNCTIONS[np.linalg.svdvals] = lambda x, /: svdvals(x, False, lambda a, hermitian: np.linalg.svdvals(a))
    NOTES[np.linalg.svdvals] = "finite at repeated singular values (the basis numpy returned)"
if hasattr(np.linalg, "matrix_norm"):
    FUNCTIONS[np.linalg.matrix_norm] = lambda x, /, *, keepdims=False, ord="fro": norm(
        x, ord=ord, axis=(-2, -1), keepdims=keepdims)
    NOTES[np.linalg.matrix_norm] = "every order; 2, -2, 'nuc' from the singular values"
